//! [`NvmlProvider`]: NVIDIA GPUs as NVML reports them. The only code that calls the
//! library; it gathers plain facts ([`NvidiaGpu`]) and leaves every rule to
//! `nvidia.rs`.
//!
//! NVML is loaded at run time (`nvml-wrapper` opens `libnvidia-ml.so.1` with
//! `dlopen`), so Sluice builds and runs on machines without it: a library that cannot
//! be loaded or initialised means no NVIDIA GPUs.

use std::ffi::OsString;
use std::os::raw::c_ulong;
use std::path::{Path, PathBuf};

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use super::nvidia::{self, NvidiaGpu, NvidiaMig};
use super::{DetectedGpu, GpuProvider};

/// The libraries tried in turn: the driver's own (installed with every driver), then
/// the development link name.
const LIBRARIES: &[&str] = &["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// Most CPUs an affinity mask is asked about (Slurm's `MAX_CPUS`).
const MAX_CPUS: u32 = 0x8000;

/// Most NVLinks a GPU has (NVML's `NVML_NVLINK_MAX_LINKS`).
const MAX_NVLINKS: u32 = 18;

/// NVML's `NVML_DEVICE_MIG_ENABLE`: MIG mode on.
const MIG_ENABLE: u32 = 1;

/// NVIDIA GPUs through NVML: type, device file, CPU affinity, NVLinks, memory, and MIG
/// slices as devices of their own (see `nvidia::assemble`).
#[derive(Clone, Debug)]
pub struct NvmlProvider {
    /// Where `proc/driver/nvidia-caps/mig-minors` is read (`/` on a real machine).
    root: PathBuf,
    /// Library paths or names, tried in turn.
    libraries: Vec<OsString>,
}

impl NvmlProvider {
    /// NVML from the usual library names; MIG capability minors read under `root`.
    pub fn new(root: &Path) -> Self {
        NvmlProvider {
            root: root.to_path_buf(),
            libraries: LIBRARIES.iter().map(OsString::from).collect(),
        }
    }

    /// NVML from `library` only (a path or a name for the dynamic loader).
    pub fn with_library(root: &Path, library: &Path) -> Self {
        NvmlProvider {
            root: root.to_path_buf(),
            libraries: vec![library.as_os_str().to_owned()],
        }
    }

    /// The first library that loads and initialises.
    fn load(&self) -> Option<Nvml> {
        self.libraries
            .iter()
            .find_map(|lib| Nvml::builder().lib_path(lib).init().ok())
    }
}

impl NvmlProvider {
    /// NVML loaded for sampling GPUs' usage (the node agents' job accounting), or
    /// `None` where the library does not load.
    pub fn usage_sampler(&self) -> Option<NvmlUsage> {
        let nvml = self.load()?;
        let count = nvml.device_count().ok()?;
        let mut by_minor: Vec<(u32, u32)> = (0..count)
            .map(|i| {
                let minor = nvml
                    .device_by_index(i)
                    .and_then(|d| d.minor_number())
                    .unwrap_or(i);
                (minor, i)
            })
            .collect();
        by_minor.sort_unstable();
        Some(NvmlUsage {
            nvml,
            order: by_minor.into_iter().map(|(_, i)| i).collect(),
        })
    }
}

/// NVML held open for sampling the GPUs' utilisation, memory and power.
pub struct NvmlUsage {
    nvml: Nvml,
    /// NVML's index of each GPU in device-file order (`/dev/nvidiaN` by minor number):
    /// gres.conf's order, which `CUDA_VISIBLE_DEVICES` and the jobs' GPU indices use.
    order: Vec<u32>,
}

/// One GPU's usage at one moment, as NVML gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmlSample {
    /// Utilisation over NVML's last sample period, percent.
    pub util: u32,
    /// Memory used, bytes.
    pub mem_used: u64,
    /// Power draw, milliwatts, where the GPU says.
    pub power_mw: Option<u64>,
}

impl NvmlUsage {
    /// The usage now of the GPU of index `index` on the node (the index jobs are given,
    /// in device-file order); `None` where NVML cannot say.
    pub fn sample(&self, index: u32) -> Option<NvmlSample> {
        let nvml_index = *self.order.get(index as usize)?;
        let d = self.nvml.device_by_index(nvml_index).ok()?;
        let util = d.utilization_rates().ok()?.gpu;
        let mem_used = d.memory_info().map(|m| m.used).unwrap_or(0);
        Some(NvmlSample {
            util: util.min(100),
            mem_used,
            power_mw: d.power_usage().ok().map(u64::from),
        })
    }
}

impl GpuProvider for NvmlProvider {
    /// Errors: a GPU whose index, name, minor number or PCI bus id NVML cannot give.
    /// (Affinity, memory, NVLinks and MIG details that cannot be read are left empty.)
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        let Some(nvml) = self.load() else {
            return Ok(Vec::new());
        };
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML: device count: {e}"))?;
        let gpus = (0..count)
            .map(|i| read_gpu(&nvml, i).map_err(|e| format!("NVML: GPU {i}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mig_minors = if gpus.iter().any(|g| g.mig.is_some()) {
            std::fs::read_to_string(self.root.join("proc/driver/nvidia-caps/mig-minors"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok(nvidia::assemble(&gpus, &mig_minors))
    }
}

/// What NVML says about GPU `index`.
fn read_gpu(nvml: &Nvml, index: u32) -> Result<NvidiaGpu, NvmlError> {
    let d = nvml.device_by_index(index)?;
    Ok(NvidiaGpu {
        index,
        name: d.name()?,
        minor: d.minor_number()?,
        bus_id: d.pci_info()?.bus_id,
        cpus: affinity(&d),
        memory_bytes: d.memory_info().ok().map(|m| m.total),
        nvlink_remotes: nvlink_remotes(&d),
        mig: mig_devices(nvml, &d),
    })
}

/// CPU ids of the device's affinity; empty when NVML cannot say.
fn affinity(d: &Device) -> Vec<u32> {
    let words = (MAX_CPUS / c_ulong::BITS) as usize;
    let Ok(mask) = d.cpu_affinity(words) else {
        return Vec::new();
    };
    nvidia::cpus_from_mask(&mask)
}

/// The PCI bus id at the other end of each active NVLink (Slurm's loop over
/// `nvmlDeviceGetNvLinkState`: an invalid link is skipped, "not supported" ends it).
fn nvlink_remotes(d: &Device) -> Vec<String> {
    let mut remotes = Vec::new();
    for link in 0..MAX_NVLINKS {
        let l = d.link_wrapper_for(link);
        match l.is_active() {
            Ok(true) => {
                if let Ok(pci) = l.remote_pci_info() {
                    remotes.push(pci.bus_id);
                }
            }
            Err(NvmlError::NotSupported) => break,
            Ok(false) | Err(_) => {}
        }
    }
    remotes
}

/// The MIG devices of a GPU in MIG mode, `None` when MIG is off or not supported.
/// NVML numbers them from 0 without gaps, so the first missing index ends the list.
fn mig_devices(nvml: &Nvml, d: &Device) -> Option<Vec<NvidiaMig>> {
    if d.mig_mode().ok()?.current != MIG_ENABLE {
        return None;
    }
    let mut out = Vec::new();
    for slice in 0..d.mig_device_count().unwrap_or(0) {
        let Ok(m) = d.mig_device_by_index(slice) else {
            break;
        };
        let (Some((gpu_instance, compute_instance)), Ok(a)) =
            (instance_ids(nvml, &m), m.attributes())
        else {
            continue;
        };
        out.push(NvidiaMig {
            slice,
            gpu_instance,
            compute_instance,
            gpu_instance_slices: a.gpu_instance_slice_count,
            memory_mib: a.memory_size_mb,
        });
    }
    Some(out)
}

/// The GPU-instance and compute-instance ids of a MIG device. `nvml-wrapper` has no
/// safe call for them, so the library's two functions are called directly.
fn instance_ids(nvml: &Nvml, mig: &Device) -> Option<(u32, u32)> {
    let lib = nvml.lib();
    let gpu_instance_of = *lib.nvmlDeviceGetGpuInstanceId.as_ref().ok()?;
    let compute_instance_of = *lib.nvmlDeviceGetComputeInstanceId.as_ref().ok()?;
    let (mut gi, mut ci) = (0, 0);
    // SAFETY: `mig` is a device handle of this initialised library (its lifetime is
    // tied to `nvml`), and each function only writes one unsigned int through the
    // pointer it is given, which points at a live local.
    let ok = unsafe {
        gpu_instance_of(mig.handle(), &mut gi) == 0
            && compute_instance_of(mig.handle(), &mut ci) == 0
    };
    ok.then_some((gi, ci))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_library_means_no_gpus_and_no_error() {
        let p = NvmlProvider::with_library(
            Path::new("/nonexistent"),
            Path::new("/nonexistent/libnvidia-ml.so.1"),
        );
        assert_eq!(p.devices(), Ok(Vec::new()));
        // Nor any GPU to sample.
        assert!(p.usage_sampler().is_none());
    }
}
