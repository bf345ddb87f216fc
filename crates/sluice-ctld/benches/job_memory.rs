//! What the controller keeps per queued job, counted by the allocator: `cargo bench -p
//! sluice-ctld --bench job_memory` prints a table (the README's Performance section).
//!
//! A controller over four 64-CPU nodes takes `N` submissions (default 10,000; the first
//! argument sets it) through the same steps as the live one — checked, ids allocated,
//! the store's records built (and dropped, as once written), accepted — each with a
//! login shell's environment (50 variables, about 3 KB) and a two-line script, all
//! with the same options (a loop of `sbatch`), then each with a name of its own. Held
//! jobs stay outside the core; pending ones enter it, behind a job that holds every
//! node, and the forecast is made as the loop makes it. Each row is the heap the
//! controller holds per job, exact: the bytes live, not what the process's resident
//! set adds (allocator overhead and fragmentation come on top; the cluster benchmark
//! measures those).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use sluice_core::JobId;
use sluice_ctld::config::ClusterConfig;
use sluice_ctld::state::{Caller, Controller};
use sluice_proto::types::JobDescription;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        grew(new as isize - layout.size() as isize);
        System.realloc(ptr, layout, new)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn live() -> isize {
    LIVE.load(Relaxed)
}

const CONF: &str = "ClusterName=bench
SlurmctldHost=localhost
NodeName=b[1-4] CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=batch Nodes=b[1-4] Default=YES State=UP
MinJobAge=3600
MaxJobCount=10000000
";

/// A login shell's environment: 50 variables, about 3 KB.
pub fn login_environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/site/bin:/home/alice/.local/bin".into()),
        ("HOME".into(), "/home/alice".into()),
        ("USER".into(), "alice".into()),
        ("LOGNAME".into(), "alice".into()),
        ("SHELL".into(), "/bin/bash".into()),
        ("LANG".into(), "en_US.UTF-8".into()),
        ("TERM".into(), "xterm-256color".into()),
        ("PWD".into(), "/home/alice/project".into()),
        ("MODULEPATH".into(), "/etc/modulefiles:/usr/share/modulefiles:/opt/site/modulefiles/Core:/opt/site/modulefiles/Compiler".into()),
        ("LS_COLORS".into(), "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=30;41:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.arc=01;31:*.arj=01;31:*.taz=01;31:*.lha=01;31:*.lz4=01;31:*.lzh=01;31:*.lzma=01;31:*.tlz=01;31:*.txz=01;31:*.tzo=01;31:*.t7z=01;31:*.zip=01;31:*.z=01;31:*.dz=01;31:*.gz=01;31:*.lrz=01;31:*.lz=01;31:*.lzo=01;31:*.xz=01;31:*.zst=01;31:*.tzst=01;31:*.bz2=01;31:*.bz=01;31:*.tbz=01;31:*.tbz2=01;31:*.tz=01;31:*.deb=01;31:*.rpm=01;31:*.jar=01;31:*.war=01;31:*.ear=01;31:*.sar=01;31:*.rar=01;31:*.alz=01;31:*.ace=01;31:*.zoo=01;31:*.cpio=01;31:*.7z=01;31:*.rz=01;31:*.cab=01;31".into()),
    ];
    let mut i = 0;
    while env.len() < 50 {
        env.push((
            format!("SITE_SETTING_{i:02}"),
            format!("/opt/site/software/package-{i:02}/version-1.{i}.0/share/config"),
        ));
        i += 1;
    }
    env
}

fn job(hold: bool) -> JobDescription {
    JobDescription {
        name: "wrap".into(),
        work_dir: "/home/alice/project".into(),
        script: "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n".into(),
        environment: login_environment(),
        output: Some("/dev/null".into()),
        hold,
        submit_host: "login01".into(),
        command: "(null)".into(),
        ..JobDescription::default()
    }
}

fn controller() -> Controller {
    let dir = std::env::temp_dir().join(format!("sluice-job-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("slurm.conf"), CONF).unwrap();
    let (conf, _) = ClusterConfig::read(&dir.join("slurm.conf")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Controller::new(conf, Path::new("/state"), vec![], vec![], 0)
}

/// Submits `n` jobs as the loop does (`named`: each with a name of its own, so that
/// none shares its owner's last description); the controller's heap growth in bytes
/// per job.
fn submit(c: &mut Controller, n: usize, hold: bool, named: bool, now: i64) -> f64 {
    let alice = Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    };
    let before = live();
    for i in 0..n {
        let mut desc = job(hold);
        if named {
            desc.name = format!("sweep-{i}");
        }
        let mut p = c
            .prepare(desc, &alice, "alice", "alice", now)
            .expect("accepted");
        let jobs = c.allocate(&p);
        drop(c.inserted(&jobs, p.take_script(), now));
        drop(c.accept(jobs, now));
        // The loop hands the audit trail to the store after every input.
        drop(c.take_audit());
    }
    (live() - before) as f64 / n as f64
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let mut rows: Vec<(String, String)> = Vec::new();
    let env_bytes: usize = login_environment()
        .iter()
        .map(|(k, v)| k.len() + v.len() + 2)
        .sum();

    let mut c = controller();
    let held = submit(&mut c, n, true, false, 1);
    rows.push((
        format!("held job ({n} jobs; environment {env_bytes} bytes)"),
        format!("{held:.0} B"),
    ));
    drop(c);
    let mut c = controller();
    let named = submit(&mut c, n, true, true, 1);
    rows.push((
        "held job, each named differently (no description shared)".into(),
        format!("{named:.0} B"),
    ));
    drop(c);

    let mut c = controller();
    let blocker = JobDescription {
        exclusive: true,
        nodes: Some((4, 4)),
        ..job(false)
    };
    let alice = Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    };
    let p = c.prepare(blocker, &alice, "alice", "alice", 1).unwrap();
    let jobs = c.allocate(&p);
    c.accept(jobs, 1);
    c.schedule(1);
    let before = live();
    let pending = submit(&mut c, n, false, false, 2);
    c.schedule(2);
    drop(c.take_audit());

    let passed = (live() - before) as f64 / n as f64;
    rows.push((
        format!("pending job, queued in the core ({n} jobs)"),
        format!("{pending:.0} B"),
    ));
    rows.push((
        "pending job, after a scheduling pass".into(),
        format!("{passed:.0} B"),
    ));
    let per_job = |from: isize, to: isize| format!("{:.0} B", (to - from) as f64 / n as f64);
    let start = live();
    PEAK.store(start, Relaxed);
    if let Some(work) = c.forecast_wanted(3) {
        let f = work.make();
        c.forecast_made(f, 3);
        rows.push((
            "the forecast being made (peak, on top)".into(),
            per_job(start, PEAK.load(Relaxed)),
        ));
        rows.push(("the forecast kept (on top)".into(), per_job(start, live())));
    }
    let _ = c.job(JobId(1));
    drop(c);

    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["controller heap per job", "bytes"]);
    for (m, r) in rows {
        table.add_row([m, r]);
    }
    println!("{table}");
}
