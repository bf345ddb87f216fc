//! GPU detection: the devices `AutoDetect=nvml` and `AutoDetect=rsmi` find on this
//! machine, named and described as Slurm's `gpu/nvml` and `gpu/rsmi` plugins describe
//! them (type, device file, `Cores=`, `Links=`, MIG slices as devices of their own).
//!
//! - [`GpuProvider`]: one source of devices. [`NvmlProvider`] asks NVIDIA's NVML
//!   (loaded at run time), [`ProcProvider`] reads the NVIDIA driver's `/proc` files,
//!   [`AmdSysfsProvider`] reads amdgpu's KFD topology in sysfs, [`FakeProvider`] hands
//!   out fixed devices for tests. [`FirstFound`] tries several in turn; [`local`] is
//!   this machine's order (NVML, then `/proc`, then AMD).
//! - [`gres_devices`] turns what was found into the [`GresDevice`]s that
//!   [`sluice_conf::gres_conf::resolve_detected`] merges with gres.conf and slurm.conf.
//!
//! Architecture invariant: only `gpu_detect/nvml.rs` calls the NVIDIA library. What it
//! learns goes as plain data through the pure rules of `gpu_detect/nvidia.rs` (names,
//! CPU masks, the NVLink matrix, MIG slices), which are tested without a GPU. No
//! provider treats a missing driver as an error: it finds nothing.

mod amd;
mod nvidia;
mod nvml;
mod proc;

use std::path::Path;

use sluice_conf::gres_conf::{AutoDetect, DeviceSource, GresDevice, GresFlags};

pub use amd::AmdSysfsProvider;
pub use nvml::{NvmlProvider, NvmlSample, NvmlUsage};
pub use proc::ProcProvider;

/// Who made a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuVendor {
    /// NVIDIA (found by `AutoDetect=nvml`).
    Nvidia,
    /// AMD (found by `AutoDetect=rsmi`).
    Amd,
}

impl GpuVendor {
    /// The AutoDetect value that finds this vendor's GPUs.
    pub fn autodetect(self) -> AutoDetect {
        match self {
            GpuVendor::Nvidia => AutoDetect::Nvml,
            GpuVendor::Amd => AutoDetect::Rsmi,
        }
    }
}

/// One GPU found on this machine: a whole device, or one MIG slice of an NVIDIA GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectedGpu {
    /// Who made it.
    pub vendor: GpuVendor,
    /// The GRES type, as Slurm's autodetection names it: the model in lower case,
    /// without the vendor's prefix, spaces as underscores (`NVIDIA H200` → `h200`); a
    /// MIG slice adds its profile (`h200_1g.18gb`).
    pub type_name: String,
    /// Position of the physical GPU in the vendor's enumeration, from 0: NVML's index
    /// (PCI bus order), or the order of the KFD topology nodes for AMD. A MIG slice
    /// carries the index of the GPU it is part of.
    pub index: u32,
    /// Minor number of the device file: N in `/dev/nvidiaN` or `/dev/dri/renderDN`.
    pub minor: u32,
    /// The device file (`/dev/nvidia0`, `/dev/dri/renderD128`); for a MIG slice, its
    /// GPU's. See [`DetectedGpu::files`] for every file a job needs.
    pub file: String,
    /// Logical CPU ids (as the kernel numbers them) close to the device, ascending:
    /// its CPU affinity. Empty when unknown (any CPU may use it).
    pub cores: Vec<u32>,
    /// Slurm's `Links=`: per physical GPU of the same vendor, in index order, the number
    /// of direct links (NVLink, xGMI) from this device to it; -1 at this device's own
    /// position, 0 for no link. Empty when unknown, and for MIG slices.
    pub links: Vec<i32>,
    /// The MIG slice this device is, if it is one.
    pub mig: Option<MigSlice>,
    /// Device memory, MiB; `None` when unknown.
    pub memory_mib: Option<u64>,
}

/// A MIG slice: a GPU instance (and one compute instance in it) of an NVIDIA GPU with
/// MIG mode on, handed out as a GPU of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigSlice {
    /// Position among its GPU's MIG devices (NVML's MIG index), from 0.
    pub slice: u32,
    /// The profile as Slurm names it: GPU-instance slices and memory in GiB, rounded
    /// (`1g.18gb`).
    pub profile: String,
    /// The GPU instance id.
    pub gpu_instance: u32,
    /// The compute instance id within the GPU instance.
    pub compute_instance: u32,
    /// The capability files that grant access to the GPU instance and the compute
    /// instance (`/dev/nvidia-caps/nvidia-cap21`, `/dev/nvidia-caps/nvidia-cap22`).
    pub cap_files: Vec<String>,
}

impl DetectedGpu {
    /// Every device file a job using this GPU needs: the device file, then a MIG
    /// slice's capability files (Slurm's `MultipleFiles=`).
    pub fn files(&self) -> Vec<String> {
        let mut files = vec![self.file.clone()];
        if let Some(m) = &self.mig {
            files.extend(m.cap_files.iter().cloned());
        }
        files
    }
}

/// A source of GPUs.
pub trait GpuProvider {
    /// The GPUs this source sees, in its enumeration order. A machine without the
    /// vendor's driver or library has none: `Ok` and empty.
    ///
    /// Errors: the driver is there but could not be queried (a message saying what
    /// failed).
    fn devices(&self) -> Result<Vec<DetectedGpu>, String>;
}

/// Fixed devices, for tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeProvider(pub Vec<DetectedGpu>);

impl GpuProvider for FakeProvider {
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        Ok(self.0.clone())
    }
}

/// Several providers tried in turn: the devices of the first that finds any. Errors
/// only when none finds a device and one failed (the first failure).
pub struct FirstFound(pub Vec<Box<dyn GpuProvider>>);

impl GpuProvider for FirstFound {
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        let mut failure = None;
        for p in &self.0 {
            match p.devices() {
                Ok(found) if !found.is_empty() => return Ok(found),
                Ok(_) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        failure.map_or(Ok(Vec::new()), Err)
    }
}

/// This machine's providers, files read under `root` (`/` on a real machine): NVML
/// first (everything Slurm's `gpu/nvml` reports), then the NVIDIA driver's `/proc` files
/// (type and device file only) when NVML cannot be loaded, then AMD's sysfs.
pub fn local(root: &Path) -> FirstFound {
    FirstFound(vec![
        Box::new(NvmlProvider::new(root)),
        Box::new(ProcProvider::new(root)),
        Box::new(AmdSysfsProvider::new(root)),
    ])
}

/// A GRES type from a model name as Slurm names it: without the vendor's `prefix`
/// (`NVIDIA `, `AMD `), lower case, spaces as underscores.
pub(crate) fn type_from_model(model: &str, prefix: &str) -> String {
    let model = model.trim();
    let model = model.strip_prefix(prefix).unwrap_or(model).trim();
    model.to_lowercase().replace(' ', "_")
}

/// `(type, count)` per GPU type, sorted by type: what slurm.conf's `Gres=` says of
/// them.
pub fn type_counts(gpus: &[DetectedGpu]) -> Vec<(String, u32)> {
    let mut types: Vec<&str> = gpus.iter().map(|g| g.type_name.as_str()).collect();
    types.sort_unstable();
    let mut out: Vec<(String, u32)> = Vec::new();
    for t in types {
        match out.last_mut() {
            Some((last, n)) if last == t => *n += 1,
            _ => out.push((t.to_string(), 1)),
        }
    }
    out
}

/// The devices `autodetect` reports among `gpus` (NVIDIA ones for `nvml`, AMD ones
/// for `rsmi`, none for the others), as gres.conf resolution takes them: `gpu`, the
/// detected type, one unit each, every device file, `Cores` and `Links` when known,
/// the vendor's environment flag (`nvidia_gpu_env`, `amd_gpu_env`), as Slurm's
/// autodetection sets it.
pub fn gres_devices(gpus: &[DetectedGpu], autodetect: AutoDetect) -> Vec<GresDevice> {
    gpus.iter()
        .filter(|g| g.vendor.autodetect() == autodetect)
        .map(|g| GresDevice {
            name: "gpu".into(),
            gres_type: Some(g.type_name.clone()),
            count: 1,
            files: g.files(),
            cores: (!g.cores.is_empty()).then(|| g.cores.clone()),
            links: (!g.links.is_empty()).then(|| g.links.clone()),
            flags: GresFlags {
                nvidia_gpu_env: g.vendor == GpuVendor::Nvidia,
                amd_gpu_env: g.vendor == GpuVendor::Amd,
                ..GresFlags::default()
            },
            source: DeviceSource::AutoDetect(autodetect),
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
