//! What `/proc` says of one process, read as Slurm's `jobacct_gather/linux` reads it:
//! `/proc/PID/stat` (parent, CPU time, major faults, virtual and resident size),
//! `/proc/PID/status` (`VmHWM`, `VmPeak`) and `/proc/PID/io` (`rchar`, `wchar`: the
//! bytes the process read and wrote through any file, which Slurm reports as disk
//! I/O). Pure parsers, and the walk of a task's process tree by parent id.

use std::collections::BTreeMap;
use std::path::Path;

/// One process's `/proc/PID/stat`, in plain units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Its id.
    pub pid: i32,
    /// Its parent's.
    pub ppid: i32,
    /// User CPU time, clock ticks, its own and its waited-for children's.
    pub user_ticks: u64,
    /// System CPU time, clock ticks, likewise.
    pub system_ticks: u64,
    /// Major page faults, its own and its waited-for children's.
    pub major_faults: u64,
    /// Virtual size, bytes.
    pub vsize: u64,
    /// Resident set, pages.
    pub rss_pages: u64,
}

/// `/proc/PID/stat`'s line. The command (field 2) is in parentheses and may hold spaces
/// and parentheses itself: the fields after it are counted from its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state): field N is rest[N - 3].
    let field = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    let ppid = rest.get(1)?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        user_ticks: field(14)? + field(16)?,
        system_ticks: field(15)? + field(17)?,
        major_faults: field(12)? + field(13)?,
        vsize: field(23)?,
        rss_pages: field(24)?,
    })
}

/// `VmHWM` (peak resident) and `VmPeak` (peak virtual size) of `/proc/PID/status`,
/// bytes; 0 where absent (a process that has exited keeps no memory lines).
pub fn parse_status(text: &str) -> (u64, u64) {
    let kib = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |k| k * 1024)
    };
    (kib("VmHWM:"), kib("VmPeak:"))
}

/// `rchar` and `wchar` of `/proc/PID/io`, bytes (0 where absent).
pub fn parse_io(text: &str) -> (u64, u64) {
    let value = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (value("rchar:"), value("wchar:"))
}

/// One process as sampled: its stat, and its status and io figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Process {
    /// `/proc/PID/stat`.
    pub stat: ProcStat,
    /// `VmHWM`, bytes.
    pub hwm: u64,
    /// `VmPeak`, bytes.
    pub vm_peak: u64,
    /// `rchar`, bytes.
    pub read: u64,
    /// `wchar`, bytes.
    pub write: u64,
}

/// Every process's stat under `proc_root` (`/proc`), by pid. Processes that go while
/// it is read are left out.
pub fn all_stats(proc_root: &Path) -> BTreeMap<i32, ProcStat> {
    let mut all = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return all;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Some(s) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            all.insert(pid, s);
        }
    }
    all
}

/// Process `pid`'s stat under `proc_root` alone; `None` when it is gone.
pub fn one_stat(proc_root: &Path, pid: i32) -> Option<ProcStat> {
    std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat"))
        .ok()
        .and_then(|t| parse_stat(&t))
}

/// `root` and its descendants in `stats` (by parent id), `root` first; empty when
/// `root` is not there.
pub fn tree(stats: &BTreeMap<i32, ProcStat>, root: i32) -> Vec<i32> {
    if !stats.contains_key(&root) {
        return Vec::new();
    }
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for s in stats.values() {
        children.entry(s.ppid).or_default().push(s.pid);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(c) = children.get(&out[i]) {
            out.extend(c.iter().copied().filter(|p| *p != root));
        }
        i += 1;
    }
    out
}

/// Process `pid`'s figures under `proc_root`, its stat given.
pub fn process(proc_root: &Path, stat: ProcStat) -> Process {
    let dir = proc_root.join(stat.pid.to_string());
    let (hwm, vm_peak) = std::fs::read_to_string(dir.join("status"))
        .map(|t| parse_status(&t))
        .unwrap_or_default();
    let (read, write) = std::fs::read_to_string(dir.join("io"))
        .map(|t| parse_io(&t))
        .unwrap_or_default();
    Process {
        stat,
        hwm,
        vm_peak,
        read,
        write,
    }
}

/// One task's process tree summed at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeSample {
    /// User CPU, milliseconds.
    pub user_ms: u64,
    /// System CPU, milliseconds.
    pub system_ms: u64,
    /// Resident memory now (the sum over the tree), or the largest peak one process
    /// of it reached, whichever is larger: bytes.
    pub rss: u64,
    /// Virtual size now (the sum over the tree), or the largest peak of one process.
    pub vmem: u64,
    /// Major faults.
    pub pages: u64,
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub write: u64,
}

/// Sums `procs` (one task's tree) with `ticks_per_s` clock ticks a second and pages of
/// `page` bytes.
pub fn sum_tree(procs: &[Process], ticks_per_s: u64, page: u64) -> TreeSample {
    let mut t = TreeSample::default();
    let (mut rss_now, mut vm_now) = (0u64, 0u64);
    let ms = |ticks: u64| ticks * 1000 / ticks_per_s.max(1);
    for p in procs {
        t.user_ms += ms(p.stat.user_ticks);
        t.system_ms += ms(p.stat.system_ticks);
        t.pages += p.stat.major_faults;
        t.read += p.read;
        t.write += p.write;
        rss_now += p.stat.rss_pages * page;
        vm_now += p.stat.vsize;
        t.rss = t.rss.max(p.hwm);
        t.vmem = t.vmem.max(p.vm_peak);
    }
    t.rss = t.rss.max(rss_now);
    t.vmem = t.vmem.max(vm_now);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real line: `python3 -c ...` (a command with a space and a parenthesis).
    const STAT: &str = "4242 (my (odd) cmd) S 4200 4242 4200 0 -1 4194560 2599 310 7 3 \
                        150 25 40 10 20 0 1 0 5705188 216358912 51234 18446744073709551615 \
                        1 1 0 0 0 0 0 16781312 2 0 0 0 17 3 0 0 0 0 0";

    #[test]
    fn stat_fields_are_counted_after_the_commands_last_parenthesis() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(
            s,
            ProcStat {
                pid: 4242,
                ppid: 4200,
                // utime + cutime, stime + cstime.
                user_ticks: 150 + 40,
                system_ticks: 25 + 10,
                // majflt + cmajflt.
                major_faults: 7 + 3,
                vsize: 216_358_912,
                rss_pages: 51_234,
            }
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("12 (x) S"), None);
    }

    #[test]
    fn status_gives_the_peaks_and_io_the_characters_read_and_written() {
        let status = "Name:\tpython3\nVmPeak:\t  215000 kB\nVmSize:\t  211288 kB\n\
                      VmHWM:\t  204812 kB\nVmRSS:\t  204800 kB\n";
        assert_eq!(parse_status(status), (204_812 * 1024, 215_000 * 1024));
        // An exited process keeps no memory lines.
        assert_eq!(parse_status("Name:\tx\nState:\tZ (zombie)\n"), (0, 0));
        let io = "rchar: 6976\nwchar: 1048576\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\n\
                  write_bytes: 0\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), (6976, 1_048_576));
    }

    fn stat(pid: i32, ppid: i32) -> ProcStat {
        ProcStat {
            pid,
            ppid,
            ..ProcStat::default()
        }
    }

    #[test]
    fn a_tasks_tree_is_its_process_and_every_descendant() {
        let stats: BTreeMap<i32, ProcStat> = [
            stat(1, 0),
            stat(10, 1),
            stat(11, 10),
            stat(12, 11),
            stat(13, 10),
            stat(20, 1),
        ]
        .into_iter()
        .map(|s| (s.pid, s))
        .collect();
        let mut t = tree(&stats, 10);
        t.sort_unstable();
        assert_eq!(t, vec![10, 11, 12, 13]);
        assert_eq!(tree(&stats, 99), Vec::<i32>::new());
    }

    #[test]
    fn a_trees_figures_are_summed_and_its_peaks_kept() {
        let p = |user, rss_pages, hwm, read| Process {
            stat: ProcStat {
                user_ticks: user,
                system_ticks: 10,
                rss_pages,
                vsize: 1000,
                major_faults: 1,
                ..ProcStat::default()
            },
            hwm,
            vm_peak: 0,
            read,
            write: 5,
        };
        // Two processes resident 4 and 2 pages now; one peaked at 30000 bytes.
        let t = sum_tree(&[p(100, 4, 30_000, 7), p(50, 2, 0, 3)], 100, 4096);
        assert_eq!(
            t,
            TreeSample {
                user_ms: 1500,
                system_ms: 200,
                rss: 30_000,
                vmem: 2000,
                pages: 2,
                read: 10,
                write: 10,
            }
        );
        // Resident now beyond any one peak: the sum.
        assert_eq!(sum_tree(&[p(0, 10, 0, 0)], 100, 4096).rss, 40_960);
    }

    #[test]
    fn this_process_is_read_from_proc() {
        let me = std::process::id() as i32;
        let stats = all_stats(Path::new("/proc"));
        let s = *stats.get(&me).expect("this process is in /proc");
        let p = process(Path::new("/proc"), s);
        assert!(p.hwm > 0 && p.stat.rss_pages > 0, "{p:?}");
        assert!(tree(&stats, me).contains(&me));
    }
}
