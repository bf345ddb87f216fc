//! Device confinement, as Slurm's `task/cgroup` plugin does it with cgroup.conf's
//! `ConstrainDevices=yes`: a job may open only the GRES device files (gres.conf's
//! `File=`, `/dev/nvidia0`...) of the devices it was allocated on a node; opening any
//! other device file of the node's GRES fails with `EPERM` ("Operation not permitted"),
//! even for root. Device files outside GRES (`/dev/null`, terminals) are left alone.
//!
//! The launch order lists the node's GRES device files and marks those the job may use
//! ([`sluice_proto::types::LaunchBatch::devices`]). The agent resolves each to its device
//! numbers with stat (`st_rdev`) once per job ([`JobDevices::resolve`]); a file that is
//! not there, or is not a device file, is left out (a CI machine's gres.conf may name
//! `/dev/nvidia[0-7]` without any GPU), said in one line of the agent's log. A step is
//! held to the GPUs it was given: the batch step to all of the job's, an srun step to its
//! tasks' GPUs on the node.
//!
//! Both interfaces are handled:
//!
//! - cgroup v1: the `devices` controller's hierarchy, with the same layout as the memory
//!   cgroups (`<agent's cgroup>/sluice/<node>.<cluster>/job_<id>_<run>/<step>`). A new
//!   cgroup allows every device (`a *:* rwm`, inherited from the agent's); each device
//!   to be denied is written to the job's and the step's `devices.deny` (`c 195:1 rwm`)
//!   before any process joins.
//! - cgroup v2, which has no devices controller: an eBPF program of type
//!   `BPF_PROG_TYPE_CGROUP_DEVICE`, built here instruction by instruction ([`program`]),
//!   loaded with the bpf(2) system call and attached (`BPF_CGROUP_DEVICE`, with
//!   `BPF_F_ALLOW_MULTI` so that programs above it, such as systemd's, still apply) to
//!   the step's cgroup. It denies the listed devices and allows everything else. The
//!   step's cgroup is the memory cgroup's when memory limits are on v2 too (a process
//!   is in one v2 cgroup only); the program goes when the cgroup is removed.
//!
//! A process joins its step's cgroup between fork and exec, like the memory cgroup
//! ([`crate::cgroup::join_self`]). When the step's processes here have ended, what they
//! left in its cgroup is killed and the cgroup removed, the job's with its last step; an
//! agent starting after one that was killed sweeps the leftovers.
//!
//! Architecture invariant: nothing here fails a job. A host where devices cannot be
//! confined (no devices hierarchy and no usable bpf(2)) runs jobs unconfined, and the
//! agent says so for each job that asked.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use sluice_proto::types::DeviceFile;

use crate::cgroup::{self, Memory, Version};

/// A block or character device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// A block device (`b` in cgroup v1 rules).
    Block,
    /// A character device (`c`); GPUs are these.
    Char,
}

/// A device by its numbers, as the kernel checks access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Device {
    /// Block or character.
    pub(crate) kind: Kind,
    /// Major number (12 bits on Linux).
    pub(crate) major: u32,
    /// Minor number (20 bits on Linux).
    pub(crate) minor: u32,
}

impl Device {
    /// The device that file `path` is (following symbolic links).
    ///
    /// Errors: the file cannot be read (missing: the OS's message), or it is not a
    /// block or character device.
    pub(crate) fn of(path: &Path) -> Result<Device, String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = std::fs::metadata(path).map_err(|e| sluice_proto::oserror::describe(&e))?;
        let kind = if meta.file_type().is_char_device() {
            Kind::Char
        } else if meta.file_type().is_block_device() {
            Kind::Block
        } else {
            return Err("not a device file".into());
        };
        let rdev = meta.rdev();
        Ok(Device {
            kind,
            major: nix::sys::stat::major(rdev) as u32,
            minor: nix::sys::stat::minor(rdev) as u32,
        })
    }

    /// The cgroup v1 rule for all access to it: `c 195:0 rwm`.
    pub(crate) fn rule(&self) -> String {
        let kind = match self.kind {
            Kind::Block => 'b',
            Kind::Char => 'c',
        };
        format!("{kind} {}:{} rwm", self.major, self.minor)
    }
}

/// One GRES device file of the node, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Resolved {
    device: Device,
    /// The GPU index it belongs to, if a GPU's.
    gpu: Option<u32>,
    /// The job may open it.
    allowed: bool,
}

/// A job's GRES device files on this node, resolved to device numbers at its launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct JobDevices {
    files: Vec<Resolved>,
}

impl JobDevices {
    /// Resolves the launch order's `files`. Returns them with the files left out, each
    /// as `PATH (why)`.
    pub(crate) fn resolve(files: &[DeviceFile]) -> (JobDevices, Vec<String>) {
        let mut skipped = Vec::new();
        let mut resolved = Vec::new();
        for f in files {
            match Device::of(Path::new(&f.path)) {
                Ok(device) => resolved.push(Resolved {
                    device,
                    gpu: f.gpu,
                    allowed: f.allowed,
                }),
                Err(why) => skipped.push(format!("{} ({why})", f.path)),
            }
        }
        (JobDevices { files: resolved }, skipped)
    }

    /// The devices to deny a step whose tasks here hold GPUs `step_gpus` (empty: the
    /// job's, as for the batch step): those the job may not open, and the job's GPUs
    /// outside `step_gpus`. A device that some file allowed to the step names stays
    /// allowed. Sorted, without repeats.
    pub(crate) fn denied(&self, step_gpus: &[u32]) -> Vec<Device> {
        let for_step = |r: &Resolved| {
            r.allowed && (step_gpus.is_empty() || r.gpu.is_none_or(|g| step_gpus.contains(&g)))
        };
        let allowed: Vec<Device> = self
            .files
            .iter()
            .filter(|r| for_step(r))
            .map(|r| r.device)
            .collect();
        let mut denied: Vec<Device> = self
            .files
            .iter()
            .filter(|r| !for_step(r) && !allowed.contains(&r.device))
            .map(|r| r.device)
            .collect();
        denied.sort();
        denied.dedup();
        denied
    }
}

// The eBPF instruction set (include/uapi/linux/bpf.h, bpf_common.h).
const BPF_ALU: u8 = 0x04;
const BPF_ALU64: u8 = 0x07;
const BPF_JMP: u8 = 0x05;
const BPF_LDX: u8 = 0x01;
const BPF_MEM: u8 = 0x60;
const BPF_W: u8 = 0x00;
const BPF_K: u8 = 0x00;
const BPF_AND: u8 = 0x50;
const BPF_MOV: u8 = 0xb0;
const BPF_JNE: u8 = 0x50;
const BPF_EXIT: u8 = 0x90;

/// `struct bpf_cgroup_dev_ctx` offsets: `access_type` (`ACCESS << 16 | TYPE`), `major`,
/// `minor`, each a u32.
const CTX_ACCESS_TYPE: i16 = 0;
const CTX_MAJOR: i16 = 4;
const CTX_MINOR: i16 = 8;
/// `BPF_DEVCG_DEV_BLOCK`, `BPF_DEVCG_DEV_CHAR`: the low 16 bits of `access_type`.
const DEVCG_DEV_BLOCK: i32 = 1;
const DEVCG_DEV_CHAR: i32 = 2;

/// One eBPF instruction (`struct bpf_insn`) as the 64-bit word the kernel reads: the
/// opcode, the destination and source registers (4 bits each), a signed 16-bit offset,
/// a signed 32-bit immediate, in the host's byte order.
pub(crate) fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    // The register nibbles are C bit-fields: dst_reg first, which is the low nibble on
    // little-endian hosts and the high one on big-endian hosts.
    let regs = if cfg!(target_endian = "little") {
        (src << 4) | (dst & 0x0f)
    } else {
        (dst << 4) | (src & 0x0f)
    };
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = regs;
    b[2..4].copy_from_slice(&off.to_ne_bytes());
    b[4..8].copy_from_slice(&imm.to_ne_bytes());
    u64::from_ne_bytes(b)
}

/// The `BPF_PROG_TYPE_CGROUP_DEVICE` program that denies (returns 0 for) every access
/// to the devices `denied` and allows (returns 1 for) all else:
///
/// ```text
///     r2 = *(u32 *)(r1 + 0)      access_type
///     w2 &= 0xffff               the device type
///     r3 = *(u32 *)(r1 + 4)      major
///     r4 = *(u32 *)(r1 + 8)      minor
///   per denied device:
///     if r2 != TYPE goto +4
///     if r3 != MAJOR goto +3
///     if r4 != MINOR goto +2
///     r0 = 0
///     exit
///   then:
///     r0 = 1
///     exit
/// ```
pub(crate) fn program(denied: &[Device]) -> Vec<u64> {
    let mut p = vec![
        insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, CTX_ACCESS_TYPE, 0),
        insn(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xffff),
        insn(BPF_LDX | BPF_MEM | BPF_W, 3, 1, CTX_MAJOR, 0),
        insn(BPF_LDX | BPF_MEM | BPF_W, 4, 1, CTX_MINOR, 0),
    ];
    for d in denied {
        let kind = match d.kind {
            Kind::Block => DEVCG_DEV_BLOCK,
            Kind::Char => DEVCG_DEV_CHAR,
        };
        // Linux device numbers fit: majors have 12 bits, minors 20.
        let (major, minor) = (d.major as i32, d.minor as i32);
        p.extend([
            insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 4, kind),
            insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 3, major),
            insn(BPF_JMP | BPF_JNE | BPF_K, 4, 0, 2, minor),
            insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
            insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        ]);
    }
    p.extend([
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
        insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    ]);
    p
}

// bpf(2) commands, program and attach types, flags (include/uapi/linux/bpf.h).
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_PROG_ATTACH: libc::c_int = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
const BPF_F_ALLOW_MULTI: u32 = 1 << 1;

/// The leading fields of `union bpf_attr` that `BPF_PROG_LOAD` reads (the kernel takes
/// the fields after them as zero).
#[repr(C, align(8))]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
}

/// The leading fields of `union bpf_attr` that `BPF_PROG_ATTACH` reads.
#[repr(C, align(8))]
#[derive(Default)]
struct ProgAttach {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
}

/// bpf(2) with command `cmd` and attribute block `attr`; the returned value (a file
/// descriptor for `BPF_PROG_LOAD`).
///
/// # Safety
///
/// `T` must be a `#[repr(C)]` prefix of `union bpf_attr` for `cmd`, whose pointers
/// point to memory that outlives the call.
unsafe fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> Result<libc::c_long, Errno> {
    let size = std::mem::size_of::<T>() as libc::c_uint;
    // SAFETY: as the caller promises; the kernel reads `size` bytes of `attr`.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, size) };
    Errno::result(r)
}

/// Loads `words` ([`program`]) into the kernel as a cgroup device program.
///
/// Errors: bpf(2) refused it (no privilege, no BPF in the kernel, the verifier's
/// message).
fn load(words: &[u64]) -> Result<OwnedFd, String> {
    let license = c"GPL";
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"sluice_dev");
    let try_load = |log: &mut [u8]| {
        let mut attr = ProgLoad {
            prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
            insn_cnt: words.len() as u32,
            insns: words.as_ptr() as u64,
            license: license.as_ptr() as u64,
            prog_name: name,
            ..ProgLoad::default()
        };
        if !log.is_empty() {
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
        }
        // SAFETY: ProgLoad is BPF_PROG_LOAD's prefix of bpf_attr; `words`, `license`
        // and `log` outlive the call.
        unsafe { bpf(BPF_PROG_LOAD, &mut attr) }
    };
    let fd = match try_load(&mut []) {
        Ok(fd) => fd,
        Err(e) => {
            // Again with the verifier's log, for the message.
            let mut log = vec![0u8; 1 << 16];
            let _ = try_load(&mut log);
            let end = log.iter().position(|&b| b == 0).unwrap_or(0);
            let text = String::from_utf8_lossy(&log[..end]);
            let last = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(if last.is_empty() {
                format!("cannot load the device program: {}", e.desc())
            } else {
                format!("cannot load the device program: {}: {last}", e.desc())
            });
        }
    };
    // SAFETY: a successful BPF_PROG_LOAD returns a new file descriptor owned by us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Attaches the loaded program `prog` to cgroup v2 directory `dir`, beside the programs
/// already there and above it.
///
/// Errors: the cgroup cannot be opened, or bpf(2) refused the attachment.
fn attach(prog: &OwnedFd, dir: &Path) -> Result<(), String> {
    let cg = std::fs::File::open(dir).map_err(|e| cgroup::io_error(dir, e))?;
    let mut attr = ProgAttach {
        target_fd: cg.as_raw_fd() as u32,
        attach_bpf_fd: prog.as_raw_fd() as u32,
        attach_type: BPF_CGROUP_DEVICE,
        attach_flags: BPF_F_ALLOW_MULTI,
    };
    // SAFETY: ProgAttach is BPF_PROG_ATTACH's prefix of bpf_attr; it holds no pointers.
    unsafe { bpf(BPF_PROG_ATTACH, &mut attr) }
        .map(drop)
        .map_err(|e| {
            cgroup::io_error(
                dir,
                format!("cannot attach the device program: {}", e.desc()),
            )
        })
}

/// Denies `denied` to the processes of cgroup `dir` of interface `version`.
fn deny(version: Version, dir: &Path, denied: &[Device]) -> Result<(), String> {
    match version {
        Version::V1 => {
            // One rule per write, as the kernel parses them.
            for d in denied {
                cgroup::write(&dir.join("devices.deny"), &d.rule())?;
            }
            Ok(())
        }
        Version::V2 => attach(&load(&program(denied))?, dir),
    }
}

/// The device cgroups of one node agent: where they live and which interface confines.
/// (A job's supervisor gets them from the agent, in its launch record.)
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Devices {
    version: Version,
    /// `<agent's cgroup>/sluice/<node>`, in the devices hierarchy (v1) or the unified
    /// one (v2).
    node_dir: PathBuf,
}

impl std::fmt::Display for Devices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.version {
            Version::V1 => write!(f, "cgroup v1 devices at {}", self.node_dir.display()),
            Version::V2 => write!(
                f,
                "cgroup v2 device programs at {}",
                self.node_dir.display()
            ),
        }
    }
}

impl Devices {
    /// Finds how devices can be confined here and makes (or takes over) the directory
    /// for the job cgroups of node `node` of the cluster with state directory
    /// `state_dir`, checking that confinement works there: the v1 devices hierarchy if
    /// mounted, else cgroup v2 with a device program (in `memory`'s directory when
    /// memory limits are on v2). Err says why devices cannot be confined.
    pub fn detect(
        state_dir: &Path,
        node: &str,
        memory: Option<&Memory>,
    ) -> Result<Devices, String> {
        Self::detect_named(&cgroup::node_dir_name(state_dir, node), memory)
    }

    fn detect_named(name: &str, memory: Option<&Memory>) -> Result<Devices, String> {
        let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        let mountinfo = read("/proc/self/mountinfo")?;
        let own = read("/proc/self/cgroup")?;
        let mounts: Vec<cgroup::Mount> = mountinfo
            .lines()
            .filter_map(cgroup::parse_mountinfo_line)
            .collect();
        let mut why = Vec::new();
        let v1 = mounts
            .iter()
            .filter(|m| m.fs_type == "cgroup" && m.super_options.iter().any(|o| o == "devices"));
        for mount in v1 {
            let Some(path) = cgroup::own_cgroup_of(&own, Version::V1, "devices") else {
                continue;
            };
            let base = cgroup::cgroup_dir(mount, &path);
            match Self::prepare(Version::V1, &base.join("sluice").join(name)) {
                Ok(d) => return Ok(d),
                Err(e) => why.push(e),
            }
        }
        let shared = memory
            .filter(|m| m.version() == Version::V2)
            .map(|m| m.node_dir().to_path_buf());
        let v2 = mounts.iter().filter(|m| m.fs_type == "cgroup2");
        for mount in v2 {
            let node_dir = match &shared {
                Some(dir) if dir.starts_with(&mount.mount_point) => dir.clone(),
                Some(_) => continue,
                None => {
                    let Some(path) = cgroup::own_cgroup(&own, Version::V2) else {
                        continue;
                    };
                    cgroup::cgroup_dir(mount, &path).join("sluice").join(name)
                }
            };
            match Self::prepare(Version::V2, &node_dir) {
                Ok(d) => return Ok(d),
                Err(e) => why.push(e),
            }
        }
        why.dedup();
        if why.is_empty() {
            Err("no cgroup v1 devices hierarchy or cgroup v2 is mounted".into())
        } else {
            Err(why.join("; "))
        }
    }

    fn prepare(version: Version, node_dir: &Path) -> Result<Devices, String> {
        let top = node_dir.parent().unwrap_or(node_dir);
        let base = top.parent().unwrap_or(top);
        if !base.is_dir() {
            return Err(cgroup::io_error(base, "no such cgroup"));
        }
        // Only what was made here is removed on failure: on v2 the directories may be
        // the memory cgroups'.
        let (made_top, made_node) = (!top.exists(), !node_dir.exists());
        let made = (|| {
            // Another agent's start-up check may remove `top` between the two (when it
            // has emptied it): once more then.
            let mut tries = 0;
            while let Err(e) = cgroup::make_dir(top).and_then(|_| cgroup::make_dir(node_dir)) {
                tries += 1;
                if tries == 3 || top.exists() {
                    return Err(e);
                }
            }
            // A cgroup like a step's, to be sure that devices can be denied.
            let probe = node_dir.join(format!("probe_{}", std::process::id()));
            cgroup::make_dir(&probe)?;
            let probe_device = Device {
                kind: Kind::Char,
                major: 1,
                minor: 7,
            };
            let denied = deny(version, &probe, &[probe_device]);
            let _ = std::fs::remove_dir(&probe);
            denied
        })();
        match made {
            Ok(()) => Ok(Devices {
                version,
                node_dir: node_dir.to_path_buf(),
            }),
            Err(e) => {
                if made_node {
                    let _ = std::fs::remove_dir(node_dir);
                }
                if made_top {
                    let _ = std::fs::remove_dir(top);
                }
                Err(e)
            }
        }
    }

    /// Makes the cgroup of step `step` (`batch`, `step_0`, ...) of run `run` of job
    /// `job`, inside the job's (made if needed), denying the job's cgroup what the job
    /// may not open and the step's what the step may not ([`JobDevices::denied`] with
    /// `step_gpus`). None when nothing is to be denied.
    ///
    /// Errors: a cgroup cannot be made or written, or (v2) the program cannot be loaded
    /// or attached.
    pub(crate) fn step(
        &self,
        job: u64,
        run: u32,
        step: &str,
        devices: &JobDevices,
        step_gpus: &[u32],
    ) -> Result<Option<Step>, String> {
        let denied = devices.denied(step_gpus);
        if denied.is_empty() {
            return Ok(None);
        }
        let job_dir = self.node_dir.join(cgroup::job_dir_name(job, run));
        let dir = job_dir.join(step);
        let _held = cgroup::lock(&self.node_dir);
        let made = (|| {
            // On v2 only the step's cgroup gets a program: processes live in leaves.
            if cgroup::make_dir(&job_dir)? && self.version == Version::V1 {
                deny(self.version, &job_dir, &devices.denied(&[]))?;
            }
            cgroup::make_dir(&dir)?;
            deny(self.version, &dir, &denied)?;
            CString::new(
                dir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(|e| e.to_string())
        })();
        match made {
            Ok(procs) => Ok(Some(Step {
                job_dir,
                dir,
                procs,
            })),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                let _ = std::fs::remove_dir(&job_dir);
                Err(e)
            }
        }
    }

    /// Ends whatever runs in this node's job cgroups but those of the runs `keep`
    /// (adopted jobs), and removes them. Returns how many job cgroups were removed.
    pub(crate) fn sweep_except(&self, keep: &[(u64, u32)]) -> usize {
        cgroup::sweep_node(&self.node_dir, keep)
    }

    /// Every job cgroup of the node ends, then the node's directory, and `sluice` above
    /// it when no other agent uses it.
    pub(crate) fn close(&self) {
        cgroup::close_node(&self.node_dir);
    }

    /// Removes the node's directory, and `sluice` above it, if no job cgroup is left.
    pub(crate) fn close_if_empty(&self) {
        cgroup::close_if_empty(&self.node_dir);
    }
}

/// One step's device cgroup on this node, made by [`Devices::step`].
#[derive(Debug)]
pub(crate) struct Step {
    job_dir: PathBuf,
    dir: PathBuf,
    procs: CString,
}

impl Step {
    /// Its `cgroup.procs`, for [`cgroup::join_self`] in a child about to exec.
    pub(crate) fn procs(&self) -> &CStr {
        &self.procs
    }

    /// Once the step's own processes have ended: kills what they left in the cgroup
    /// and removes it, and the job's when no other step of the job is left here. Blocks
    /// up to a few seconds.
    pub(crate) fn finish(self) {
        cgroup::kill_all(&self.dir);
        if let Err(e) = cgroup::remove(&self.dir) {
            tracing::warn!("cannot remove cgroup {}: {e}", self.dir.display());
        }
        let _held = cgroup::lock(self.job_dir.parent().unwrap_or(&self.job_dir));
        // Busy while another step of the job still runs here: the last one removes it.
        let _ = std::fs::remove_dir(&self.job_dir);
    }
}

/// Whether this host lets node agents started by this process confine jobs' devices,
/// found as an agent finds it at start (with a throw-away node name and no memory
/// cgroups). Ok is the directory that holds the agents' device cgroups (with one
/// directory per node); Err says why devices would not be confined.
pub fn probe() -> Result<PathBuf, String> {
    let d = Devices::detect_named(&format!("probe-{}", std::process::id()), None)?;
    d.close();
    Ok(d.node_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn char_dev(major: u32, minor: u32) -> Device {
        Device {
            kind: Kind::Char,
            major,
            minor,
        }
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn instructions_are_encoded_as_the_kernel_reads_them() {
        // r2 = *(u32 *)(r1 + 0): opcode 0x61, dst 2 in the low nibble, src 1 above.
        assert_eq!(insn(0x61, 2, 1, 0, 0), 0x0000_0000_0000_1261);
        // if r3 != 195 goto +3
        assert_eq!(insn(0x55, 3, 0, 3, 195), 0x0000_00c3_0003_0355);
        // A negative offset and immediate, two's complement.
        assert_eq!(insn(0x55, 0, 0, -1, -2), 0xffff_fffe_ffff_0055);
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn the_program_for_two_denied_gpus_is_exactly_this() {
        let words = program(&[char_dev(195, 1), char_dev(195, 2)]);
        assert_eq!(
            words,
            [
                0x0000_0000_0000_1261, // r2 = *(u32 *)(r1 + 0)
                0x0000_ffff_0000_0254, // w2 &= 0xffff
                0x0000_0000_0004_1361, // r3 = *(u32 *)(r1 + 4)
                0x0000_0000_0008_1461, // r4 = *(u32 *)(r1 + 8)
                0x0000_0002_0004_0255, // if r2 != 2 (char) goto +4
                0x0000_00c3_0003_0355, // if r3 != 195 goto +3
                0x0000_0001_0002_0455, // if r4 != 1 goto +2
                0x0000_0000_0000_00b7, // r0 = 0
                0x0000_0000_0000_0095, // exit
                0x0000_0002_0004_0255, // if r2 != 2 goto +4
                0x0000_00c3_0003_0355, // if r3 != 195 goto +3
                0x0000_0002_0002_0455, // if r4 != 2 goto +2
                0x0000_0000_0000_00b7, // r0 = 0
                0x0000_0000_0000_0095, // exit
                0x0000_0001_0000_00b7, // r0 = 1
                0x0000_0000_0000_0095, // exit
            ]
        );
        // Nothing denied: allow everything.
        assert_eq!(program(&[]).len(), 6);
        // A block device compares against type 1.
        let b = program(&[Device {
            kind: Kind::Block,
            major: 8,
            minor: 0,
        }]);
        assert_eq!(b[4], 0x0000_0001_0004_0255);
    }

    #[test]
    fn v1_rules_name_the_type_and_numbers() {
        assert_eq!(char_dev(195, 0).rule(), "c 195:0 rwm");
        assert_eq!(
            Device {
                kind: Kind::Block,
                major: 8,
                minor: 16
            }
            .rule(),
            "b 8:16 rwm"
        );
    }

    fn file(path: &str, gpu: Option<u32>, allowed: bool) -> DeviceFile {
        DeviceFile {
            path: path.into(),
            gpu,
            allowed,
        }
    }

    #[test]
    fn files_resolve_to_device_numbers_and_missing_ones_are_left_out() {
        let (devices, skipped) = JobDevices::resolve(&[
            file("/dev/null", Some(0), true),
            file("/dev/zero", Some(1), false),
            file("/nonexistent/nvidia7", Some(7), false),
            file("/proc/self/status", None, false),
        ]);
        assert_eq!(
            skipped,
            [
                "/nonexistent/nvidia7 (No such file or directory)",
                "/proc/self/status (not a device file)"
            ]
        );
        // /dev/null is 1:3, /dev/zero 1:5 on every Linux.
        assert_eq!(devices.denied(&[]), [char_dev(1, 5)]);
        assert_eq!(devices.files.len(), 2);
    }

    #[test]
    fn a_step_is_held_to_its_own_gpus() {
        let devices = JobDevices {
            files: vec![
                Resolved {
                    device: char_dev(195, 0),
                    gpu: Some(0),
                    allowed: true,
                },
                Resolved {
                    device: char_dev(195, 1),
                    gpu: Some(1),
                    allowed: true,
                },
                Resolved {
                    device: char_dev(195, 2),
                    gpu: Some(2),
                    allowed: false,
                },
                // A file of another GRES the job holds, and a second name of GPU 0.
                Resolved {
                    device: char_dev(231, 0),
                    gpu: None,
                    allowed: true,
                },
                Resolved {
                    device: char_dev(195, 0),
                    gpu: Some(0),
                    allowed: true,
                },
            ],
        };
        // The batch step: the job's GPUs.
        assert_eq!(devices.denied(&[]), [char_dev(195, 2)]);
        // A step given GPU 1 only.
        assert_eq!(devices.denied(&[1]), [char_dev(195, 0), char_dev(195, 2)]);
        // A step never gains what the job may not open.
        assert_eq!(
            devices.denied(&[2]),
            [char_dev(195, 0), char_dev(195, 1), char_dev(195, 2)]
        );
    }

    /// Runs `sh -c script` in the cgroup whose `cgroup.procs` is `procs`; its stdout
    /// and stderr.
    fn run_in(procs: &CStr, script: &str) -> String {
        use std::os::unix::process::CommandExt;
        let procs = procs.to_owned();
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(script);
        // SAFETY: join_self is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || cgroup::join_self(&procs).map_err(std::io::Error::from));
        }
        let o = cmd.output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    }

    const READ_BOTH: &str = "head -c1 /dev/zero >/dev/null && echo zero ok; \
                             head -c1 /dev/full >/dev/null && echo full ok; true";

    /// On a host where agents can confine devices (whichever interface): a process in
    /// a step's cgroup cannot open the denied device, and can open the others.
    #[test]
    fn a_denied_device_cannot_be_opened_in_the_step_cgroup() {
        let node = format!("unit-{}", std::process::id());
        let devices = match Devices::detect_named(&node, None) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("skipped: devices cannot be confined here: {why}");
                return;
            }
        };
        // /dev/zero (1:5) is the job's GPU 0, /dev/full (1:7) someone else's GPU 1.
        let (job, skipped) = JobDevices::resolve(&[
            file("/dev/zero", Some(0), true),
            file("/dev/full", Some(1), false),
        ]);
        assert!(skipped.is_empty());
        let step = devices.step(7, 0, "batch", &job, &[]).unwrap().unwrap();
        let out = run_in(step.procs(), READ_BOTH);
        assert!(out.contains("zero ok"), "{out}");
        assert!(!out.contains("full ok"), "{out}");
        assert!(out.contains("Operation not permitted"), "{out}");
        let job_dir = step.job_dir.clone();
        step.finish();
        assert!(!job_dir.exists(), "{} is removed", job_dir.display());
        // A step holding nothing to deny gets no cgroup.
        let (all, _) = JobDevices::resolve(&[file("/dev/full", Some(0), true)]);
        assert!(devices.step(8, 0, "batch", &all, &[]).unwrap().is_none());
        devices.close();
        assert!(!devices.node_dir.exists());
    }

    /// Where the host has cgroup v2 and allows bpf(2) (also beside a v1 devices
    /// hierarchy): the device program loads, attaches to a step's cgroup, and denies
    /// exactly its devices; the cgroups go at the end.
    #[test]
    fn the_device_program_denies_its_devices_on_cgroup_v2() {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let Some(mount) = mountinfo
            .lines()
            .filter_map(cgroup::parse_mountinfo_line)
            .find(|m| m.fs_type == "cgroup2")
        else {
            eprintln!("skipped: no cgroup v2 mounted");
            return;
        };
        let Some(path) = cgroup::own_cgroup(&own, Version::V2) else {
            eprintln!("skipped: this process is in no cgroup v2");
            return;
        };
        let node_dir = cgroup::cgroup_dir(&mount, &path)
            .join("sluice")
            .join(format!("unit-bpf-{}", std::process::id()));
        let devices = match Devices::prepare(Version::V2, &node_dir) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("skipped: no device programs here: {why}");
                return;
            }
        };
        let (job, _) = JobDevices::resolve(&[
            file("/dev/zero", Some(0), true),
            file("/dev/full", Some(1), false),
        ]);
        let step = devices.step(9, 0, "step_0", &job, &[0]).unwrap().unwrap();
        let out = run_in(step.procs(), READ_BOTH);
        let job_dir = step.job_dir.clone();
        step.finish();
        devices.close();
        assert!(out.contains("zero ok"), "{out}");
        assert!(!out.contains("full ok"), "{out}");
        assert!(out.contains("Operation not permitted"), "{out}");
        assert!(!job_dir.exists() && !node_dir.exists());
    }
}
