//! Each allocated GPU's utilisation, memory used and power draw at one moment, and
//! their sum over a step's life ([`GpuUsage`]).
//!
//! Where the figures come from:
//! - [`FakeGpus`]: a JSON file named by the agent's environment variable
//!   [`FAKE_ENV`], read at every sample (so a test can change it over time):
//!   `{"0": {"util": 80, "mem_mib": 1000, "power_w": 250}, ...}` by GPU index;
//! - [`AmdSysfs`]: AMD GPUs' `gpu_busy_percent`, `mem_info_vram_used` and hwmon
//!   `power1_average` under `/sys/class/drm/card*/device`, the GPU index being the
//!   card's rank among them;
//! - NVIDIA GPUs through NVML, whose sampler the program passes in ([`nvidia_with`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sluice_proto::usage::GpuUsage;

/// The agent's environment variable naming the fake provider's file.
pub const FAKE_ENV: &str = "SLUICE_FAKE_GPU_USAGE";

/// One GPU at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuSample {
    /// Utilisation, percent.
    pub util: u32,
    /// Memory used, bytes.
    pub mem: u64,
    /// Power draw, milliwatts, where the GPU says.
    pub power_mw: Option<u64>,
}

/// Where GPU samples come from.
pub trait GpuSource: Send {
    /// GPU `index`'s figures now; `None` where it cannot be read.
    fn sample(&mut self, index: u32) -> Option<GpuSample>;
}

/// Makes the NVIDIA source; `None` where NVML does not load.
pub type NvidiaSource = fn() -> Option<Box<dyn GpuSource>>;

static NVIDIA: std::sync::OnceLock<NvidiaSource> = std::sync::OnceLock::new();

/// Sets how supervisors reach NVIDIA GPUs: the program that runs them passes NVML's
/// sampler (`sluice_ctld::gpu_detect::NvmlProvider::usage_sampler`, where the one file
/// that calls NVML is), so that this crate never loads the library itself.
pub fn nvidia_with(source: NvidiaSource) {
    let _ = NVIDIA.set(source);
}

/// The node's source: the fake one when [`FAKE_ENV`] is set, NVIDIA's through NVML
/// where it loads ([`nvidia_with`]), AMD's sysfs files where there are AMD GPUs, else
/// none.
pub fn detect() -> Option<Box<dyn GpuSource>> {
    if let Some(path) = std::env::var_os(FAKE_ENV).filter(|p| !p.is_empty()) {
        return Some(Box::new(FakeGpus {
            path: PathBuf::from(path),
        }));
    }
    if let Some(nvidia) = NVIDIA.get().and_then(|make| make()) {
        return Some(nvidia);
    }
    let amd = AmdSysfs::new(Path::new("/sys/class/drm"));
    (!amd.cards.is_empty()).then(|| Box::new(amd) as Box<dyn GpuSource>)
}

/// Adds `sample` to `usage`.
pub fn add(usage: &mut GpuUsage, sample: GpuSample) {
    usage.samples += 1;
    usage.util_sum += u64::from(sample.util);
    usage.util_max = usage.util_max.max(sample.util);
    usage.util_now = sample.util;
    usage.mem_max = usage.mem_max.max(sample.mem);
    usage.mem_now = sample.mem;
    if let Some(p) = sample.power_mw {
        usage.power_sum_mw = Some(usage.power_sum_mw.unwrap_or(0) + p);
    }
}

/// The fake provider's file, per GPU.
#[derive(Debug, Deserialize)]
struct FakeEntry {
    #[serde(default)]
    util: u32,
    #[serde(default)]
    mem_mib: u64,
    #[serde(default)]
    power_w: Option<u64>,
}

/// Parses the fake provider's file.
pub fn parse_fake(text: &str) -> Result<BTreeMap<u32, GpuSample>, String> {
    let raw: BTreeMap<String, FakeEntry> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    raw.into_iter()
        .map(|(k, v)| {
            let index = k
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("'{k}' is not a GPU index"))?;
            Ok((
                index,
                GpuSample {
                    util: v.util.min(100),
                    mem: v.mem_mib << 20,
                    power_mw: v.power_w.map(|w| w * 1000),
                },
            ))
        })
        .collect()
}

/// The fake provider (tests): see the module's documentation.
pub struct FakeGpus {
    path: PathBuf,
}

impl FakeGpus {
    /// The fake provider reading `path`.
    pub fn at(path: &Path) -> FakeGpus {
        FakeGpus {
            path: path.to_path_buf(),
        }
    }
}

impl GpuSource for FakeGpus {
    fn sample(&mut self, index: u32) -> Option<GpuSample> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        parse_fake(&text).ok()?.get(&index).copied()
    }
}

/// AMD GPUs through the amdgpu driver's sysfs files.
pub struct AmdSysfs {
    /// Each GPU's `device` directory, in card order (the GPU index is the rank).
    cards: Vec<PathBuf>,
}

impl AmdSysfs {
    /// The AMD GPUs under `drm` (`/sys/class/drm`): cards whose device has a
    /// `gpu_busy_percent`.
    pub fn new(drm: &Path) -> AmdSysfs {
        let mut cards: Vec<(u32, PathBuf)> = std::fs::read_dir(drm)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n: u32 = name.strip_prefix("card")?.parse().ok()?;
                let dev = e.path().join("device");
                dev.join("gpu_busy_percent").exists().then_some((n, dev))
            })
            .collect();
        cards.sort();
        AmdSysfs {
            cards: cards.into_iter().map(|c| c.1).collect(),
        }
    }
}

/// One AMD device directory's figures.
pub fn read_amd(dev: &Path) -> Option<GpuSample> {
    let num = |p: PathBuf| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let util = num(dev.join("gpu_busy_percent"))? as u32;
    let mem = num(dev.join("mem_info_vram_used")).unwrap_or(0);
    // hwmon reports microwatts.
    let power_mw = std::fs::read_dir(dev.join("hwmon"))
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|h| {
            num(h.path().join("power1_average")).or_else(|| num(h.path().join("power1_input")))
        })
        .map(|uw| uw / 1000);
    Some(GpuSample {
        util: util.min(100),
        mem,
        power_mw,
    })
}

impl GpuSource for AmdSysfs {
    fn sample(&mut self, index: u32) -> Option<GpuSample> {
        read_amd(self.cards.get(index as usize)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_file_gives_each_gpus_figures() {
        let got = parse_fake(
            r#"{"0": {"util": 80, "mem_mib": 1000, "power_w": 250}, "3": {"util": 140}}"#,
        )
        .unwrap();
        assert_eq!(
            got[&0],
            GpuSample {
                util: 80,
                mem: 1000 << 20,
                power_mw: Some(250_000)
            }
        );
        // Utilisation is a percentage; what is not said is zero or unknown.
        assert_eq!(
            got[&3],
            GpuSample {
                util: 100,
                mem: 0,
                power_mw: None
            }
        );
        assert!(parse_fake(r#"{"x": {}}"#).is_err());
        assert!(parse_fake("not json").is_err());
    }

    #[test]
    fn samples_add_up_to_the_mean_the_peaks_and_the_last() {
        let mut u = GpuUsage::default();
        for (util, mem) in [(80, 100), (20, 300), (50, 200)] {
            add(
                &mut u,
                GpuSample {
                    util,
                    mem,
                    power_mw: Some(1000),
                },
            );
        }
        assert_eq!(
            (u.samples, u.util_sum, u.util_max, u.util_now),
            (3, 150, 80, 50)
        );
        assert_eq!((u.mem_max, u.mem_now), (300, 200));
        assert_eq!(u.power_sum_mw, Some(3000));
        assert_eq!(u.util_mean(), 50.0);
    }

    #[test]
    fn amd_cards_are_read_from_sysfs() {
        let drm = std::env::temp_dir().join(format!("sluice-amd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&drm);
        for (card, busy) in [("card1", "7"), ("card0", "93")] {
            let dev = drm.join(card).join("device");
            std::fs::create_dir_all(dev.join("hwmon/hwmon4")).unwrap();
            std::fs::write(dev.join("gpu_busy_percent"), format!("{busy}\n")).unwrap();
            std::fs::write(dev.join("mem_info_vram_used"), "1048576\n").unwrap();
            std::fs::write(dev.join("hwmon/hwmon4/power1_average"), "150000000\n").unwrap();
        }
        // Not a GPU (a connector).
        std::fs::create_dir_all(drm.join("card0-DP-1")).unwrap();
        let mut amd = AmdSysfs::new(&drm);
        assert_eq!(
            amd.sample(0),
            Some(GpuSample {
                util: 93,
                mem: 1 << 20,
                power_mw: Some(150_000)
            })
        );
        assert_eq!(amd.sample(1).map(|s| s.util), Some(7));
        assert_eq!(amd.sample(2), None);
        std::fs::remove_dir_all(&drm).unwrap();
    }
}
