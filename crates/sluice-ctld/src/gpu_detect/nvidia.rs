//! The rules that turn what NVML says about NVIDIA GPUs into [`DetectedGpu`]s, as
//! Slurm's `gpu/nvml` does: type names, CPU affinity masks, the NVLink matrix, MIG
//! slices and their capability files. Plain data in, plain data out: no library call
//! here (that is `nvml.rs`), so all of it is tested without a GPU.

use super::{type_from_model, DetectedGpu, GpuVendor, MigSlice};

/// What NVML says about one physical GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NvidiaGpu {
    /// NVML's index (PCI bus order), from 0.
    pub index: u32,
    /// The model as NVML names it (`NVIDIA H200`).
    pub name: String,
    /// Minor number of `/dev/nvidiaN`.
    pub minor: u32,
    /// PCI bus id (`00000000:17:00.0`).
    pub bus_id: String,
    /// CPU ids of its affinity mask (see [`cpus_from_mask`]); empty when unknown.
    pub cpus: Vec<u32>,
    /// Total device memory, bytes; `None` when unknown.
    pub memory_bytes: Option<u64>,
    /// Per active NVLink of the device: the PCI bus id at its other end (a GPU, or an
    /// NVSwitch, which counts for no GPU).
    pub nvlink_remotes: Vec<String>,
    /// `Some` when MIG mode is on: its MIG devices, in NVML's MIG index order.
    pub mig: Option<Vec<NvidiaMig>>,
}

/// What NVML says about one MIG device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NvidiaMig {
    /// NVML's MIG index on its GPU, from 0.
    pub slice: u32,
    /// GPU instance id.
    pub gpu_instance: u32,
    /// Compute instance id.
    pub compute_instance: u32,
    /// GPU-instance slices (`gpuInstanceSliceCount` of its attributes).
    pub gpu_instance_slices: u32,
    /// Its memory, MiB (`memorySizeMB` of its attributes, which NVML counts in MiB).
    pub memory_mib: u64,
}

/// A whole GPU's type: `NVIDIA H200` → `h200`,
/// `NVIDIA RTX PRO 6000 Blackwell Server Edition` → `rtx_pro_6000_blackwell_server_edition`.
pub(crate) fn type_name(model: &str) -> String {
    type_from_model(model, "NVIDIA ")
}

/// A MIG slice's type as Slurm builds it: the model up to its first `-` (Slurm drops
/// the form factor and memory there, `NVIDIA A100-SXM4-40GB` → `a100`), `_`, then the
/// profile ([`mig_profile`]): `h200_1g.18gb`.
pub(crate) fn mig_type(model: &str, gpu_instance_slices: u32, memory_mib: u64) -> String {
    let base = model.split('-').next().unwrap_or(model);
    format!(
        "{}_{}",
        type_name(base),
        mig_profile(gpu_instance_slices, memory_mib)
    )
}

/// A MIG profile as Slurm writes it: GPU-instance slices, `g.`, memory in GiB rounded
/// to the nearest (`1g.18gb`). NVIDIA's own profile names can differ by a gigabyte;
/// Slurm's are the ones gres.conf and job requests use.
pub(crate) fn mig_profile(gpu_instance_slices: u32, memory_mib: u64) -> String {
    format!("{gpu_instance_slices}g.{}gb", (memory_mib + 512) / 1024)
}

/// CPU ids of an affinity mask as NVML returns it: an array of unsigned longs, bit `b`
/// of word `w` standing for CPU `w * BITS + b` (`BITS` the width of a word: 64, or 32
/// on 32-bit machines). Ascending.
pub(crate) fn cpus_from_mask<W: Copy + Into<u64>>(words: &[W]) -> Vec<u32> {
    let bits = 8 * std::mem::size_of::<W>() as u32;
    let mut cpus = Vec::new();
    for (w, word) in words.iter().enumerate() {
        let word: u64 = (*word).into();
        for b in 0..bits {
            if (word >> b) & 1 == 1 {
                cpus.push(w as u32 * bits + b);
            }
        }
    }
    cpus
}

/// A PCI bus id compared by its numbers, so that NVML's 8-digit domains
/// (`00000000:17:00.0`) and 4-digit ones (`0000:17:00.0`) agree.
fn bus_key(bus_id: &str) -> Option<(u32, u32, u32, u32)> {
    let (rest, function) = bus_id.trim().rsplit_once('.')?;
    let mut parts = rest.split(':');
    let hex = |s: Option<&str>| s.and_then(|s| u32::from_str_radix(s, 16).ok());
    let (domain, bus, device) = (hex(parts.next())?, hex(parts.next())?, hex(parts.next())?);
    Some((domain, bus, device, hex(Some(function))?))
}

/// Slurm's `Links=` for every GPU: row `i` has -1 at `i`, and at `k` the number of
/// GPU `i`'s active NVLinks whose other end is GPU `k` (links to anything else, such
/// as an NVSwitch, count for no GPU).
pub(crate) fn nvlink_matrix(gpus: &[NvidiaGpu]) -> Vec<Vec<i32>> {
    let keys: Vec<Option<_>> = gpus.iter().map(|g| bus_key(&g.bus_id)).collect();
    gpus.iter()
        .enumerate()
        .map(|(i, g)| {
            let mut row = vec![0; gpus.len()];
            row[i] = -1;
            for remote in &g.nvlink_remotes {
                let Some(key) = bus_key(remote) else { continue };
                if let Some(k) = keys.iter().position(|x| *x == Some(key)) {
                    if k != i {
                        row[k] += 1;
                    }
                }
            }
            row
        })
        .collect()
}

/// The minors of a MIG slice's capability files, from the driver's
/// `/proc/driver/nvidia-caps/mig-minors` (lines such as `gpu0/gi1/access 21` and
/// `gpu0/gi1/ci0/access 22`, `gpu` followed by the GPU's minor number): (GPU-instance
/// minor, compute-instance minor), or `None` when either is missing.
pub(crate) fn mig_cap_minors(
    mig_minors: &str,
    gpu_minor: u32,
    gpu_instance: u32,
    compute_instance: u32,
) -> Option<(u32, u32)> {
    let gi_key = format!("gpu{gpu_minor}/gi{gpu_instance}/access");
    let ci_key = format!("gpu{gpu_minor}/gi{gpu_instance}/ci{compute_instance}/access");
    let find = |key: &str| {
        mig_minors.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(key)).then(|| words.next()?.parse().ok())?
        })
    };
    Some((find(&gi_key)?, find(&ci_key)?))
}

/// The devices Slurm's `gpu/nvml` reports for `gpus` (in index order): each GPU, or,
/// with MIG mode on, each of its MIG slices, with the GPU's CPU affinity. A slice
/// whose capability files `mig_minors` (the text of
/// `/proc/driver/nvidia-caps/mig-minors`) does not list is left out, as Slurm leaves
/// it out.
pub(crate) fn assemble(gpus: &[NvidiaGpu], mig_minors: &str) -> Vec<DetectedGpu> {
    let links = nvlink_matrix(gpus);
    let mut out = Vec::new();
    for (g, links) in gpus.iter().zip(links) {
        let file = format!("/dev/nvidia{}", g.minor);
        let Some(migs) = &g.mig else {
            out.push(DetectedGpu {
                vendor: GpuVendor::Nvidia,
                type_name: type_name(&g.name),
                index: g.index,
                minor: g.minor,
                file,
                cores: g.cpus.clone(),
                links,
                mig: None,
                memory_mib: g.memory_bytes.map(|b| b / (1024 * 1024)),
            });
            continue;
        };
        for m in migs {
            let Some((gi_minor, ci_minor)) =
                mig_cap_minors(mig_minors, g.minor, m.gpu_instance, m.compute_instance)
            else {
                continue;
            };
            out.push(DetectedGpu {
                vendor: GpuVendor::Nvidia,
                type_name: mig_type(&g.name, m.gpu_instance_slices, m.memory_mib),
                index: g.index,
                minor: g.minor,
                file: file.clone(),
                cores: g.cpus.clone(),
                links: Vec::new(),
                mig: Some(MigSlice {
                    slice: m.slice,
                    profile: mig_profile(m.gpu_instance_slices, m.memory_mib),
                    gpu_instance: m.gpu_instance,
                    compute_instance: m.compute_instance,
                    cap_files: vec![
                        format!("/dev/nvidia-caps/nvidia-cap{gi_minor}"),
                        format!("/dev/nvidia-caps/nvidia-cap{ci_minor}"),
                    ],
                }),
                memory_mib: Some(m.memory_mib),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four H200s on PCI buses 0x17, 0x2a, 0x3d, 0x50, NVLinked in pairs (0,1) and
    /// (2,3) with two links each; each also has a link to an NVSwitch. CPUs 0-7 and
    /// 64-71 near the first pair, 8-15 and 72-79 near the second.
    fn four_h200() -> Vec<NvidiaGpu> {
        let bus = [
            "00000000:17:00.0",
            "00000000:2A:00.0",
            "00000000:3D:00.0",
            "00000000:50:00.0",
        ];
        let switch = "00000000:A0:00.0".to_string();
        let peer = [1, 0, 3, 2];
        (0..4)
            .map(|i| NvidiaGpu {
                index: i as u32,
                name: "NVIDIA H200".into(),
                minor: i as u32,
                bus_id: bus[i].into(),
                cpus: if i < 2 {
                    cpus_from_mask(&[0xff_u64, 0xff])
                } else {
                    cpus_from_mask(&[0xff00_u64, 0xff00])
                },
                memory_bytes: Some(143_771 * 1024 * 1024),
                // The remote end as NVLink reports it: 4-digit domain, lower case.
                nvlink_remotes: vec![
                    bus[peer[i]].to_lowercase()[4..].to_string(),
                    switch.clone(),
                    bus[peer[i]].into(),
                ],
                mig: None,
            })
            .collect()
    }

    #[test]
    fn models_become_slurm_types() {
        assert_eq!(type_name("NVIDIA H200"), "h200");
        assert_eq!(type_name("NVIDIA A100-SXM4-40GB"), "a100-sxm4-40gb");
        assert_eq!(type_name("Tesla V100-PCIE-16GB"), "tesla_v100-pcie-16gb");
        assert_eq!(
            type_name("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
            "rtx_pro_6000_blackwell_server_edition"
        );
        assert_eq!(mig_type("NVIDIA H200", 1, 18_176), "h200_1g.18gb");
        assert_eq!(mig_type("NVIDIA A100-SXM4-40GB", 3, 19_968), "a100_3g.20gb");
        assert_eq!(mig_type("NVIDIA A100-SXM4-40GB", 1, 4_864), "a100_1g.5gb");
        assert_eq!(
            mig_type("NVIDIA H100 80GB HBM3", 1, 9_856),
            "h100_80gb_hbm3_1g.10gb"
        );
    }

    #[test]
    fn affinity_masks_become_cpu_ids() {
        assert_eq!(cpus_from_mask::<u64>(&[]), Vec::<u32>::new());
        assert_eq!(cpus_from_mask(&[0b1011_u64]), [0, 1, 3]);
        // NVML's example: CPUs 0, 1, 32 and 33 with 32-bit words.
        assert_eq!(cpus_from_mask(&[0x3_u32, 0x3]), [0, 1, 32, 33]);
        assert_eq!(cpus_from_mask(&[0, (1_u64 << 63) | 1]), [64, 127]);
        let all: Vec<u32> = (0..128).collect();
        assert_eq!(cpus_from_mask(&[u64::MAX, u64::MAX, 0]), all);
    }

    #[test]
    fn nvlinks_are_counted_per_peer() {
        assert_eq!(
            nvlink_matrix(&four_h200()),
            [[-1, 2, 0, 0], [2, -1, 0, 0], [0, 0, -1, 2], [0, 0, 2, -1]]
        );
        // No NVLink at all (PCIe cards): only the -1s.
        let mut gpus = four_h200();
        gpus.truncate(2);
        for g in &mut gpus {
            g.nvlink_remotes.clear();
        }
        assert_eq!(nvlink_matrix(&gpus), [[-1, 0], [0, -1]]);
    }

    #[test]
    fn whole_gpus_with_cores_links_and_memory() {
        let got = assemble(&four_h200(), "");
        assert_eq!(got.len(), 4);
        let low: Vec<u32> = (0..8).chain(64..72).collect();
        let high: Vec<u32> = (8..16).chain(72..80).collect();
        assert_eq!(
            got[2],
            DetectedGpu {
                vendor: GpuVendor::Nvidia,
                type_name: "h200".into(),
                index: 2,
                minor: 2,
                file: "/dev/nvidia2".into(),
                cores: high,
                links: vec![0, 0, -1, 2],
                mig: None,
                memory_mib: Some(143_771),
            }
        );
        assert_eq!(got[0].cores, low);
        assert_eq!(got[0].files(), ["/dev/nvidia0"]);
        assert_eq!(
            got.iter().map(|g| g.links.clone()).collect::<Vec<_>>(),
            nvlink_matrix(&four_h200())
        );
    }

    #[test]
    fn mig_slices_are_devices_of_their_own() {
        let minors = "config 1\nmonitor 2\n\
                      gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n\
                      gpu1/gi2/access 30\ngpu1/gi2/ci0/access 31\n\
                      gpu1/gi9/access 84\ngpu1/gi9/ci0/access 85\n\
                      gpu1/gi10/access 93\n";
        let mut gpus = four_h200();
        gpus.truncate(2);
        gpus[1].mig = Some(vec![
            NvidiaMig {
                slice: 0,
                gpu_instance: 2,
                compute_instance: 0,
                gpu_instance_slices: 3,
                memory_mib: 71_424,
            },
            NvidiaMig {
                slice: 1,
                gpu_instance: 9,
                compute_instance: 0,
                gpu_instance_slices: 1,
                memory_mib: 17_920,
            },
            // Its compute instance is not in mig-minors: left out.
            NvidiaMig {
                slice: 2,
                gpu_instance: 10,
                compute_instance: 0,
                gpu_instance_slices: 1,
                memory_mib: 17_920,
            },
        ]);
        let got = assemble(&gpus, minors);
        let summary: Vec<(String, u32, Vec<String>, usize)> = got
            .iter()
            .map(|g| (g.type_name.clone(), g.index, g.files(), g.links.len()))
            .collect();
        assert_eq!(
            summary,
            [
                ("h200".to_string(), 0, vec!["/dev/nvidia0".to_string()], 2),
                (
                    "h200_3g.70gb".to_string(),
                    1,
                    vec![
                        "/dev/nvidia1".to_string(),
                        "/dev/nvidia-caps/nvidia-cap30".to_string(),
                        "/dev/nvidia-caps/nvidia-cap31".to_string()
                    ],
                    0
                ),
                (
                    "h200_1g.18gb".to_string(),
                    1,
                    vec![
                        "/dev/nvidia1".to_string(),
                        "/dev/nvidia-caps/nvidia-cap84".to_string(),
                        "/dev/nvidia-caps/nvidia-cap85".to_string()
                    ],
                    0
                ),
            ]
        );
        assert_eq!(
            got[2].mig,
            Some(MigSlice {
                slice: 1,
                profile: "1g.18gb".into(),
                gpu_instance: 9,
                compute_instance: 0,
                cap_files: vec![
                    "/dev/nvidia-caps/nvidia-cap84".into(),
                    "/dev/nvidia-caps/nvidia-cap85".into()
                ],
            })
        );
        assert_eq!((got[2].memory_mib, got[2].cores.len()), (Some(17_920), 16));
        assert_eq!(mig_cap_minors(minors, 0, 1, 0), Some((12, 13)));
        assert_eq!(mig_cap_minors(minors, 0, 1, 1), None);
        assert_eq!(mig_cap_minors("", 0, 1, 0), None);
    }
}
