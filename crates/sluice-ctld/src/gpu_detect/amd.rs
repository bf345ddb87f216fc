//! [`AmdSysfsProvider`]: AMD GPUs from the amdgpu driver's KFD topology in sysfs, the
//! facts Slurm's `gpu/rsmi` gets from the ROCm SMI library, without that library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_conf::gres_conf::parse_cores;

use super::{type_from_model, DetectedGpu, GpuProvider, GpuVendor};

/// AMD's PCI vendor id (0x1002), as KFD's `vendor_id` gives it.
const AMD_VENDOR_ID: u64 = 4098;

/// KFD's io-link type for xGMI (`CRAT_IOLINK_TYPE_XGMI`).
const XGMI: u64 = 11;

/// AMD GPUs from `sys/class/kfd/kfd/topology/nodes/<N>/` under a root directory
/// (`/` on a real machine). A node is a GPU when its `properties` have `simd_count`
/// above 0 (and `vendor_id` 4098 where given, and a non-zero `gpu_id`); GPUs are
/// indexed in node order. Per GPU:
/// - file `/dev/dri/renderD<drm_render_minor>`;
/// - type from `sys/class/drm/renderD<minor>/device/product_name`, as Slurm names
///   types (`AMD Instinct MI300X` → `instinct_mi300x`), else the `device_id` in hex
///   (`0x74a1`);
/// - cores from `sys/class/drm/renderD<minor>/device/local_cpulist` (empty without it);
/// - links: its `io_links` of type 11 (xGMI) counted per peer GPU, or, when it has
///   none there, its `p2p_links` of type 11 (newer kernels list GPU peers there);
/// - memory: the `size_in_bytes` of its `mem_banks`, in MiB.
#[derive(Clone, Debug)]
pub struct AmdSysfsProvider {
    /// `/` on a real machine.
    root: PathBuf,
}

impl AmdSysfsProvider {
    /// Reads under `root`.
    pub fn new(root: &Path) -> Self {
        AmdSysfsProvider {
            root: root.to_path_buf(),
        }
    }
}

/// A KFD topology node that is a GPU.
struct KfdGpu {
    /// The node's number.
    node: u32,
    /// Its directory.
    dir: PathBuf,
    /// Its `properties`.
    props: BTreeMap<String, u64>,
}

impl GpuProvider for AmdSysfsProvider {
    /// Never fails: no driver means no GPU, and a GPU node without a render minor
    /// is left out.
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        let gpus = self.kfd_gpus();
        let nodes: Vec<u32> = gpus.iter().map(|g| g.node).collect();
        let mut out = Vec::new();
        for (index, g) in gpus.iter().enumerate() {
            let Some(&minor) = g.props.get("drm_render_minor") else {
                continue;
            };
            let device = self
                .root
                .join(format!("sys/class/drm/renderD{minor}/device"));
            let read = |name: &str| std::fs::read_to_string(device.join(name)).ok();
            let type_name = match read("product_name").filter(|p| !p.trim().is_empty()) {
                Some(product) => type_from_model(&product, "AMD "),
                None => match g.props.get("device_id") {
                    Some(id) => format!("{id:#06x}"),
                    None => "unknown".into(),
                },
            };
            let memory: u64 = links_or_banks(&g.dir, "mem_banks")
                .iter()
                .filter_map(|b| b.get("size_in_bytes"))
                .sum();
            out.push(DetectedGpu {
                vendor: GpuVendor::Amd,
                type_name,
                index: index as u32,
                minor: minor as u32,
                file: format!("/dev/dri/renderD{minor}"),
                cores: read("local_cpulist")
                    .and_then(|l| parse_cores(l.trim()).ok())
                    .unwrap_or_default(),
                links: xgmi_links(&g.dir, g.node, &nodes),
                mig: None,
                memory_mib: (memory > 0).then_some(memory / (1024 * 1024)),
            });
        }
        Ok(out)
    }
}

impl AmdSysfsProvider {
    /// The KFD nodes that are AMD GPUs, in node order.
    fn kfd_gpus(&self) -> Vec<KfdGpu> {
        let Ok(dir) = std::fs::read_dir(self.root.join("sys/class/kfd/kfd/topology/nodes")) else {
            return Vec::new();
        };
        let mut nodes: Vec<(u32, PathBuf)> = dir
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
            .collect();
        nodes.sort();
        nodes
            .into_iter()
            .filter_map(|(node, dir)| {
                let mut props = properties(&dir.join("properties"))?;
                if let Some(id) = std::fs::read_to_string(dir.join("gpu_id"))
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                {
                    props.insert("gpu_id".into(), id);
                }
                let is_gpu = props.get("simd_count").is_some_and(|n| *n > 0)
                    && props.get("vendor_id").is_none_or(|v| *v == AMD_VENDOR_ID)
                    && props.get("gpu_id").is_none_or(|id| *id != 0);
                is_gpu.then_some(KfdGpu { node, dir, props })
            })
            .collect()
    }
}

/// Slurm's `Links=` of the GPU at KFD node `node`: per GPU node of `gpus` (in
/// order), its xGMI links to it; -1 at its own position.
fn xgmi_links(dir: &Path, node: u32, gpus: &[u32]) -> Vec<i32> {
    let mut row = vec![0; gpus.len()];
    if let Some(me) = gpus.iter().position(|n| *n == node) {
        row[me] = -1;
    }
    let xgmi = |kind: &str| -> Vec<u64> {
        links_or_banks(dir, kind)
            .iter()
            .filter(|l| l.get("type") == Some(&XGMI))
            .filter_map(|l| l.get("node_to").copied())
            .collect()
    };
    let mut peers = xgmi("io_links");
    if peers.is_empty() {
        peers = xgmi("p2p_links");
    }
    for to in peers {
        if let Some(k) = gpus.iter().position(|n| u64::from(*n) == to) {
            if row[k] >= 0 {
                row[k] += 1;
            }
        }
    }
    row
}

/// The `properties` of every numbered entry of a node's `kind` directory
/// (`io_links`, `p2p_links`, `mem_banks`), in number order.
fn links_or_banks(dir: &Path, kind: &str) -> Vec<BTreeMap<String, u64>> {
    let Ok(entries) = std::fs::read_dir(dir.join(kind)) else {
        return Vec::new();
    };
    let mut numbered: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    numbered.sort();
    numbered
        .iter()
        .filter_map(|(_, p)| properties(&p.join("properties")))
        .collect()
}

/// A KFD `properties` file: `name value` lines with integer values (others skipped).
fn properties(path: &Path) -> Option<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.trim().split_once(char::is_whitespace)?;
                Some((k.to_string(), v.trim().parse().ok()?))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::TempTree;
    use super::*;

    /// An MI300X-like machine: two CPU nodes (0, 1) and four GPU nodes (2-5), render
    /// minors 128, 136, 144, 152. xGMI: two links between 2 and 3, one between 2 and
    /// 4, one between 4 and 5 (node 5 lists it under `p2p_links`, as newer kernels
    /// do); every GPU has a PCIe link (type 2) to a CPU node, which is no GPU link.
    fn mi300_tree(name: &str) -> TempTree {
        let t = TempTree::new(name);
        let nodes = "sys/class/kfd/kfd/topology/nodes";
        for cpu in 0..2 {
            t.write(
                &format!("{nodes}/{cpu}/properties"),
                "cpu_cores_count 24\nsimd_count 0\nvendor_id 0\ndevice_id 0\n",
            );
            t.write(&format!("{nodes}/{cpu}/gpu_id"), "0\n");
        }
        let xgmi: [(u32, &str, &[u32]); 4] = [
            (2, "io_links", &[3, 3, 4]),
            (3, "io_links", &[2, 2]),
            (4, "io_links", &[2, 5]),
            (5, "p2p_links", &[4]),
        ];
        for (i, (node, kind, peers)) in xgmi.iter().enumerate() {
            let minor = 128 + 8 * i;
            t.write(
                &format!("{nodes}/{node}/properties"),
                &format!(
                    "cpu_cores_count 0\nsimd_count 1216\nmem_banks_count 1\n\
                     hive_id 12345678901234\nvendor_id 4098\ndevice_id 29857\n\
                     location_id {}\ndrm_render_minor {minor}\n",
                    3328 + i
                ),
            );
            t.write(
                &format!("{nodes}/{node}/gpu_id"),
                &format!("{}\n", 5000 + i),
            );
            t.write(
                &format!("{nodes}/{node}/mem_banks/0/properties"),
                "heap_type 1\nsize_in_bytes 205822885888\nflags 0\n",
            );
            t.write(
                &format!("{nodes}/{node}/io_links/0/properties"),
                &format!("type 2\nnode_from {node}\nnode_to {}\nweight 20\n", i / 2),
            );
            for (k, peer) in peers.iter().enumerate() {
                let k = if *kind == "io_links" { k + 1 } else { k };
                t.write(
                    &format!("{nodes}/{node}/{kind}/{k}/properties"),
                    &format!("type 11\nnode_from {node}\nnode_to {peer}\nweight 15\n"),
                );
            }
            let device = format!("sys/class/drm/renderD{minor}/device");
            if i < 3 {
                t.write(&format!("{device}/product_name"), "AMD Instinct MI300X\n");
            }
            let cpus = ["0-23", "0-23", "24-47"];
            if let Some(c) = cpus.get(i) {
                t.write(&format!("{device}/local_cpulist"), &format!("{c}\n"));
            }
        }
        t
    }

    #[test]
    fn amd_gpus_come_from_the_kfd_topology() {
        let tree = mi300_tree("amd");
        let got = AmdSysfsProvider::new(tree.path()).devices().unwrap();
        let summary: Vec<(u32, &str, u32, &str)> = got
            .iter()
            .map(|g| (g.index, g.type_name.as_str(), g.minor, g.file.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (0, "instinct_mi300x", 128, "/dev/dri/renderD128"),
                (1, "instinct_mi300x", 136, "/dev/dri/renderD136"),
                (2, "instinct_mi300x", 144, "/dev/dri/renderD144"),
                (3, "0x74a1", 152, "/dev/dri/renderD152"),
            ]
        );
        let first: Vec<u32> = (0..24).collect();
        let second: Vec<u32> = (24..48).collect();
        assert_eq!(
            got.iter().map(|g| g.cores.clone()).collect::<Vec<_>>(),
            [first.clone(), first, second, vec![]]
        );
        assert_eq!(
            got.iter().map(|g| g.memory_mib).collect::<Vec<_>>(),
            [Some(196_288); 4]
        );
        assert!(got
            .iter()
            .all(|g| g.vendor == GpuVendor::Amd && g.mig.is_none()));
    }

    #[test]
    fn xgmi_links_are_counted_per_peer() {
        let tree = mi300_tree("amd-xgmi");
        let got = AmdSysfsProvider::new(tree.path()).devices().unwrap();
        assert_eq!(
            got.iter().map(|g| g.links.clone()).collect::<Vec<_>>(),
            [
                vec![-1, 2, 1, 0],
                vec![2, -1, 0, 0],
                vec![1, 0, -1, 1],
                vec![0, 0, 1, -1]
            ]
        );
    }

    #[test]
    fn no_kfd_means_no_gpus_and_no_error() {
        let tree = TempTree::new("amd-none");
        assert_eq!(AmdSysfsProvider::new(tree.path()).devices(), Ok(Vec::new()));
        // Only CPU nodes: still none.
        tree.write(
            "sys/class/kfd/kfd/topology/nodes/0/properties",
            "cpu_cores_count 64\nsimd_count 0\n",
        );
        assert_eq!(AmdSysfsProvider::new(tree.path()).devices(), Ok(Vec::new()));
    }
}
