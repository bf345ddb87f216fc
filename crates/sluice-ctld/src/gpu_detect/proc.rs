//! [`ProcProvider`]: NVIDIA GPUs from the driver's `/proc` files, for machines whose
//! NVML cannot be loaded: type and device file only.

use std::path::{Path, PathBuf};

use super::nvidia::type_name;
use super::{DetectedGpu, GpuProvider, GpuVendor};

/// NVIDIA GPUs from `proc/driver/nvidia/gpus/<PCI bus id>/information` under a root
/// directory: one per directory, in PCI bus order (NVML's order), its type from the
/// `Model:` line, its file `/dev/nvidia<N>` from the `Device Minor:` line (its position
/// when the line is missing). No CPU affinity, links or memory: the file does not say.
#[derive(Clone, Debug)]
pub struct ProcProvider {
    /// `/` on a real machine.
    root: PathBuf,
}

impl ProcProvider {
    /// Reads under `root`.
    pub fn new(root: &Path) -> Self {
        ProcProvider {
            root: root.to_path_buf(),
        }
    }
}

impl GpuProvider for ProcProvider {
    /// Never fails: no driver, or an unreadable file, means no GPU there.
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        let Ok(dir) = std::fs::read_dir(self.root.join("proc/driver/nvidia/gpus")) else {
            return Ok(Vec::new());
        };
        let mut buses: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        buses.sort();
        let infos = buses
            .iter()
            .filter_map(|bus| std::fs::read_to_string(bus.join("information")).ok());
        let mut out = Vec::new();
        for text in infos {
            let Some(model) = field(&text, "Model").filter(|m| !m.is_empty()) else {
                continue;
            };
            let index = out.len() as u32;
            let minor = field(&text, "Device Minor")
                .and_then(|m| m.parse().ok())
                .unwrap_or(index);
            out.push(DetectedGpu {
                vendor: GpuVendor::Nvidia,
                type_name: type_name(model),
                index,
                minor,
                file: format!("/dev/nvidia{minor}"),
                cores: Vec::new(),
                links: Vec::new(),
                mig: None,
                memory_mib: None,
            });
        }
        Ok(out)
    }
}

/// The value of a `Key: value` line of an information file.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::TempTree;
    use super::super::type_counts;
    use super::*;

    #[test]
    fn nvidia_gpus_are_found_from_the_drivers_proc_files() {
        let tree = TempTree::new("proc");
        let p = ProcProvider::new(tree.path());
        assert_eq!(p.devices(), Ok(vec![]));
        for (bus, model, minor) in [
            ("0000:2a:00.0", "NVIDIA H200", 3),
            ("0000:17:00.0", "NVIDIA H200", 1),
            (
                "0000:3d:00.0",
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                0,
            ),
        ] {
            tree.write(
                &format!("proc/driver/nvidia/gpus/{bus}/information"),
                &format!(
                    "Model: \t\t {model}\nIRQ:   \t\t 220\nGPU UUID: \t GPU-1\nDevice Minor: \t {minor}\n"
                ),
            );
        }
        // A directory without its file is no GPU.
        tree.write("proc/driver/nvidia/gpus/0000:50:00.0/other", "");
        let got = p.devices().unwrap();
        assert_eq!(
            got.iter()
                .map(|g| (g.index, g.type_name.as_str(), g.minor, g.file.as_str()))
                .collect::<Vec<_>>(),
            [
                (0, "h200", 1, "/dev/nvidia1"),
                (1, "h200", 3, "/dev/nvidia3"),
                (
                    2,
                    "rtx_pro_6000_blackwell_server_edition",
                    0,
                    "/dev/nvidia0"
                ),
            ]
        );
        assert!(got
            .iter()
            .all(|g| g.cores.is_empty() && g.links.is_empty() && g.memory_mib.is_none()));
        assert_eq!(
            type_counts(&got),
            vec![
                ("h200".to_string(), 2),
                ("rtx_pro_6000_blackwell_server_edition".to_string(), 1)
            ]
        );
    }

    #[test]
    fn a_missing_minor_line_falls_back_to_the_position() {
        let tree = TempTree::new("proc-nominor");
        tree.write(
            "proc/driver/nvidia/gpus/0000:17:00.0/information",
            "Model: \t\t Tesla V100-PCIE-16GB\n",
        );
        let got = ProcProvider::new(tree.path()).devices().unwrap();
        assert_eq!(
            (got[0].type_name.as_str(), got[0].file.as_str()),
            ("tesla_v100-pcie-16gb", "/dev/nvidia0")
        );
    }
}
