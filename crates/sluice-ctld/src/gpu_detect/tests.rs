//! Tests of the providers together, and the fake file trees the providers' own tests
//! build.

use std::path::{Path, PathBuf};

use super::*;

/// A directory under the system's temporary directory, removed when dropped, in which
/// tests lay out fake `/proc` and `/sys` files.
pub(crate) struct TempTree(PathBuf);

impl TempTree {
    /// A fresh, empty tree; `name` tells tests apart.
    pub(crate) fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("sluice-gpu-detect-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempTree(dir)
    }

    /// The tree's root.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `relative` (a path under the root), making its directories.
    pub(crate) fn write(&self, relative: &str, text: &str) {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An NVIDIA GPU as a test wants it.
pub(crate) fn nvidia(type_name: &str, index: u32, cores: &[u32], links: &[i32]) -> DetectedGpu {
    DetectedGpu {
        vendor: GpuVendor::Nvidia,
        type_name: type_name.into(),
        index,
        minor: index,
        file: format!("/dev/nvidia{index}"),
        cores: cores.to_vec(),
        links: links.to_vec(),
        mig: None,
        memory_mib: Some(143_771),
    }
}

/// A provider that always fails.
struct Broken;

impl GpuProvider for Broken {
    fn devices(&self) -> Result<Vec<DetectedGpu>, String> {
        Err("NVML: GPU 0: GPU is lost".into())
    }
}

#[test]
fn no_driver_anywhere_finds_nothing_without_error() {
    let tree = TempTree::new("none");
    let chain = FirstFound(vec![
        Box::new(NvmlProvider::with_library(
            tree.path(),
            &tree.path().join("libnvidia-ml.so.1"),
        )),
        Box::new(ProcProvider::new(tree.path())),
        Box::new(AmdSysfsProvider::new(tree.path())),
    ]);
    assert_eq!(chain.devices(), Ok(Vec::new()));
}

#[test]
fn the_first_provider_that_finds_gpus_wins() {
    let h200 = FakeProvider(vec![nvidia("h200", 0, &[], &[])]);
    let a100 = FakeProvider(vec![nvidia("a100", 0, &[], &[])]);
    let chain = FirstFound(vec![
        Box::new(FakeProvider::default()),
        Box::new(h200.clone()),
        Box::new(a100),
    ]);
    assert_eq!(chain.devices(), h200.devices());
    // A failing provider is passed over; its error counts only when nothing is found.
    let chain = FirstFound(vec![Box::new(Broken), Box::new(h200.clone())]);
    assert_eq!(chain.devices(), h200.devices());
    let chain = FirstFound(vec![Box::new(Broken), Box::new(FakeProvider::default())]);
    assert_eq!(chain.devices(), Err("NVML: GPU 0: GPU is lost".to_string()));
}

#[test]
fn detected_gpus_become_gres_devices() {
    let mut mig = nvidia("h200_1g.18gb", 1, &[8, 9], &[]);
    mig.mig = Some(MigSlice {
        slice: 0,
        profile: "1g.18gb".into(),
        gpu_instance: 9,
        compute_instance: 0,
        cap_files: vec![
            "/dev/nvidia-caps/nvidia-cap84".into(),
            "/dev/nvidia-caps/nvidia-cap85".into(),
        ],
    });
    let amd = DetectedGpu {
        vendor: GpuVendor::Amd,
        type_name: "instinct_mi300x".into(),
        index: 0,
        minor: 128,
        file: "/dev/dri/renderD128".into(),
        cores: vec![],
        links: vec![-1],
        mig: None,
        memory_mib: None,
    };
    let gpus = vec![nvidia("h200", 0, &[0, 1], &[-1, 0]), mig, amd];
    let nvml = gres_devices(&gpus, AutoDetect::Nvml);
    let nvidia_env = GresFlags {
        nvidia_gpu_env: true,
        ..GresFlags::default()
    };
    assert_eq!(
        nvml,
        [
            GresDevice {
                name: "gpu".into(),
                gres_type: Some("h200".into()),
                count: 1,
                files: vec!["/dev/nvidia0".into()],
                cores: Some(vec![0, 1]),
                links: Some(vec![-1, 0]),
                flags: nvidia_env,
                source: DeviceSource::AutoDetect(AutoDetect::Nvml),
            },
            GresDevice {
                name: "gpu".into(),
                gres_type: Some("h200_1g.18gb".into()),
                count: 1,
                files: vec![
                    "/dev/nvidia1".into(),
                    "/dev/nvidia-caps/nvidia-cap84".into(),
                    "/dev/nvidia-caps/nvidia-cap85".into()
                ],
                cores: Some(vec![8, 9]),
                links: None,
                flags: nvidia_env,
                source: DeviceSource::AutoDetect(AutoDetect::Nvml),
            },
        ]
    );
    let rsmi = gres_devices(&gpus, AutoDetect::Rsmi);
    assert_eq!(
        rsmi.iter()
            .map(|d| (d.files.clone(), d.cores.clone(), d.links.clone(), d.flags))
            .collect::<Vec<_>>(),
        [(
            vec!["/dev/dri/renderD128".to_string()],
            None,
            Some(vec![-1]),
            GresFlags {
                amd_gpu_env: true,
                ..GresFlags::default()
            }
        )]
    );
    assert_eq!(gres_devices(&gpus, AutoDetect::Oneapi), []);
    assert_eq!(
        type_counts(&gpus),
        [
            ("h200".to_string(), 1),
            ("h200_1g.18gb".to_string(), 1),
            ("instinct_mi300x".to_string(), 1)
        ]
    );
}
