//! Every process a job started on this node, whatever it did to leave: its own process
//! group (`setpgid`, a shell's job control) or session (`setsid`, daemons that double
//! fork, `ray start`).
//!
//! A job's supervisor makes itself the *child subreaper* of what it starts
//! (`PR_SET_CHILD_SUBREAPER`): a process whose parent exits is given to the supervisor
//! instead of to init, so that the job's processes are exactly the supervisor's
//! descendants, found by their parent ids in `/proc`. Ending a job signals each of them,
//! besides the process groups of its batch script and tasks, and the supervisor leaves
//! only once none is left — as Slurm's `proctrack` plugins end everything a job
//! started, with or without cgroups. The processes given to it that end are reaped
//! here ([`Orphans`]); its own children are reaped by their waiters, which register
//! them ([`own_child`]) so that they are never taken from them.
//!
//! Reading every process of the machine costs a `/proc/PID/stat` read each, and a
//! supervisor asks at every child's end and before it leaves: on a busy node that was
//! most of what starting and ending a short job cost. The questions asked often are
//! answered from the kernel's own lists of each process's children
//! (`/proc/PID/task/TID/children`), which cost what the job has, not what the machine
//! runs. A process whose parent ends while the lists are read can be missed by that
//! reading, but it is then the supervisor's own child (the subreaper's): "is nothing
//! left?" is answered *yes* only when a second reading agrees. The kernel's lists may
//! also leave a process out while others end (proc(5)): the processes to signal are
//! read from the lists only when two readings in a row agree, else from every process
//! of the machine, as where the kernel keeps no such lists.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Makes this process the child subreaper of its descendants (Linux 3.4 and later; a
/// failure leaves orphans to init, and the job's process groups are still ended).
pub(crate) fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    // Only a job's supervisor treats its descendants as its job's (never the agent,
    // nor a test process running a job's code in-process).
    SUPERVISING.store(true, std::sync::atomic::Ordering::Relaxed);
    if r != 0 {
        tracing::warn!(
            "cannot become the child subreaper of the job's processes: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Set in a job's supervisor: its descendants are its job's processes.
static SUPERVISING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One process as `/proc/PID/stat` has it: its parent and whether it is a zombie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Proc {
    ppid: i32,
    zombie: bool,
}

/// The parent id and state of `/proc/PID/stat`'s text (the command name may hold
/// spaces and parentheses: the fields are read after the last `)`).
fn parse_stat(text: &str) -> Option<Proc> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Proc {
        ppid,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process of the machine (as this process sees `/proc`), by id.
fn table() -> BTreeMap<i32, Proc> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(p) = one(pid) {
            out.insert(pid, p);
        }
    }
    out
}

/// Whether the kernel lists each process's children (`CONFIG_PROC_CHILDREN`), as
/// this process's own list shows.
fn children_listed() -> bool {
    static LISTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LISTED.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The children of process `pid`, from the lists of all its threads (a child belongs
/// to the thread that started it); none for a process that is gone. Only where
/// [`children_listed`].
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Process `pid` as its `/proc/PID/stat` has it; `None` once it is gone.
fn one(pid: i32) -> Option<Proc> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .as_deref()
        .and_then(parse_stat)
}

/// The descendants of `root` found through the children lists: (pid, is a zombie),
/// parents before children. Only where [`children_listed`]; a process whose parent
/// ends while the lists are read may be missing.
fn descendants_listed(root: i32) -> Vec<(i32, bool)> {
    let mut out: Vec<(i32, bool)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for c in children_of(p) {
            if !seen.insert(c) {
                continue;
            }
            if let Some(proc) = one(c) {
                out.push((c, proc.zombie));
                todo.push(c);
            }
        }
    }
    out
}

/// Whether nothing this process started is left running (see the module's
/// documentation: *yes* from the children lists only when two readings say so).
pub(crate) fn none_left() -> bool {
    if !SUPERVISING.load(std::sync::atomic::Ordering::Relaxed) {
        return true;
    }
    if children_listed() {
        let me = std::process::id() as i32;
        return (0..2).all(|_| descendants_listed(me).iter().all(|&(_, zombie)| zombie));
    }
    live_descendants().is_empty()
}

/// The descendants of `root` in `procs`: (pid, is a zombie), parents before children.
fn descendants_in(procs: &BTreeMap<i32, Proc>, root: i32) -> Vec<(i32, bool)> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (&pid, p) in procs {
        children.entry(p.ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            out.push((c, procs[&c].zombie));
            todo.push(c);
        }
    }
    out
}

/// The live (not zombie) descendants of this process.
pub(crate) fn live_descendants() -> Vec<i32> {
    if !SUPERVISING.load(std::sync::atomic::Ordering::Relaxed) {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    if children_listed() {
        // What the job has, not what the machine runs, when two readings of the
        // children lists in a row agree. While processes end the lists may leave out
        // others (proc(5)): readings that keep disagreeing fall back on the table.
        let live = || -> BTreeSet<i32> {
            descendants_listed(me)
                .into_iter()
                .filter(|(_, zombie)| !zombie)
                .map(|(p, _)| p)
                .collect()
        };
        let mut last = live();
        for _ in 0..3 {
            let now = live();
            if now == last {
                return now.into_iter().collect();
            }
            last = now;
        }
    }
    descendants_in(&table(), me)
        .into_iter()
        .filter(|(_, zombie)| !zombie)
        .map(|(p, _)| p)
        .collect()
}

/// Sends `signal` to every live descendant of this process in session `sid` (a batch
/// script's: it leads its session), reading again while a reading finds one not sent
/// it yet (forked meanwhile); how many were sent it. A session left (`setsid`) is
/// another's.
pub(crate) fn signal_session(signal: Signal, sid: i32) -> usize {
    let mut sent: BTreeSet<i32> = BTreeSet::new();
    for _ in 0..3 {
        let mut new = false;
        for p in live_descendants() {
            let pid = Pid::from_raw(p);
            if !sent.contains(&p) && nix::unistd::getsid(Some(pid)).is_ok_and(|s| s.as_raw() == sid)
            {
                let _ = kill(pid, signal);
                sent.insert(p);
                new = true;
            }
        }
        if !new {
            break;
        }
    }
    sent.len()
}

/// Sends `signal` to every live descendant of this process but those in the process
/// groups `signalled` (already sent it with `killpg`: a second SIGTERM would run a
/// batch script's trap again); how many descendants there were.
pub(crate) fn signal_descendants(signal: Signal, signalled: &[i32]) -> usize {
    let pids = live_descendants();
    for &p in &pids {
        let pid = Pid::from_raw(p);
        let in_group =
            nix::unistd::getpgid(Some(pid)).is_ok_and(|g| signalled.contains(&g.as_raw()));
        if !in_group {
            let _ = kill(pid, signal);
        }
    }
    pids.len()
}

/// The children this process started itself (batch scripts, tasks, health probes),
/// which their own waiters reap.
fn own() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    static OWN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
    OWN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Child `pid` was started here and is reaped by its waiter.
pub(crate) fn own_child(pid: i32) {
    own().insert(pid);
}

/// Child `pid` has been reaped by its waiter.
pub(crate) fn own_child_reaped(pid: i32) {
    own().remove(&pid);
}

/// How long a zombie child that is not one of [`own_child`]'s stays unreaped: a child
/// that ended in the instant between its start and its registration is its waiter's.
const ADOPTED_GRACE: Duration = Duration::from_secs(1);

/// The processes given to this subreaper that have ended, reaped.
#[derive(Debug, Default)]
pub(crate) struct Orphans {
    /// Zombie children not started here, and since when they were seen.
    seen: BTreeMap<i32, Instant>,
}

impl Orphans {
    /// Reaps the zombie children of this process that it did not start itself (seen
    /// as such for [`ADOPTED_GRACE`]).
    pub(crate) fn reap(&mut self) {
        if !SUPERVISING.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let me = std::process::id() as i32;
        // Its own children's list, or where the kernel keeps none, every process.
        let zombies: Vec<i32> = if children_listed() {
            children_of(me)
                .into_iter()
                .filter(|&c| one(c).is_some_and(|p| p.zombie && p.ppid == me))
                .collect()
        } else {
            table()
                .into_iter()
                .filter(|(_, p)| p.ppid == me && p.zombie)
                .map(|(pid, _)| pid)
                .collect()
        };
        let own = own().clone();
        self.seen.retain(|pid, _| zombies.contains(pid));
        for pid in zombies {
            if own.contains(&pid) {
                continue;
            }
            let since = *self.seen.entry(pid).or_insert_with(Instant::now);
            if since.elapsed() >= ADOPTED_GRACE {
                let _ = nix::sys::wait::waitpid(
                    Pid::from_raw(pid),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
                self.seen.remove(&pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_the_parent_and_the_state_whatever_the_name() {
        let p = parse_stat("42 (a (b) c) S 7 42 42 0 -1").unwrap();
        assert_eq!(
            p,
            Proc {
                ppid: 7,
                zombie: false
            }
        );
        let z = parse_stat("43 (sleep) Z 9 43 43 0 -1").unwrap();
        assert_eq!(
            z,
            Proc {
                ppid: 9,
                zombie: true
            }
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_children_lists_find_what_the_whole_table_finds() {
        if !children_listed() {
            eprintln!("skipped: this kernel keeps no children lists (CONFIG_PROC_CHILDREN)");
            return;
        }
        let me = std::process::id() as i32;
        // A shell started by this test's thread (one of several: each thread has its
        // own list), and its sleep, a grandchild.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let shell = sh.id() as i32;
        let waited = |what: &str, done: &dyn Fn() -> bool| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !done() {
                assert!(Instant::now() < deadline, "{what}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        waited("the shell's sleep never started", &|| {
            !descendants_in(&table(), shell).is_empty()
        });
        let sleep = descendants_in(&table(), shell)[0].0;
        let listed = descendants_listed(me);
        let whole = descendants_in(&table(), me);
        for p in [shell, sleep] {
            assert!(listed.contains(&(p, false)), "{p} listed: {listed:?}");
            assert!(whole.contains(&(p, false)), "{p} in the table: {whole:?}");
        }
        assert!(
            listed.iter().position(|&(p, _)| p == shell)
                < listed.iter().position(|&(p, _)| p == sleep),
            "parents before children: {listed:?}"
        );
        // The sleep killed, the shell ends: a zombie until waited for, in both.
        kill(Pid::from_raw(sleep), Signal::SIGKILL).unwrap();
        waited("the shell never ended", &|| {
            one(shell).is_some_and(|p| p.zombie)
        });
        assert!(descendants_listed(me).contains(&(shell, true)));
        assert!(descendants_in(&table(), me).contains(&(shell, true)));
        assert!(!descendants_listed(me).iter().any(|&(p, _)| p == sleep));
        sh.wait().unwrap();
        assert!(!descendants_listed(me).iter().any(|&(p, _)| p == shell));
    }

    #[test]
    fn descendants_are_found_through_every_generation() {
        let procs: BTreeMap<i32, Proc> = [
            (
                10,
                Proc {
                    ppid: 1,
                    zombie: false,
                },
            ),
            (
                11,
                Proc {
                    ppid: 10,
                    zombie: false,
                },
            ),
            (
                12,
                Proc {
                    ppid: 11,
                    zombie: true,
                },
            ),
            (
                13,
                Proc {
                    ppid: 11,
                    zombie: false,
                },
            ),
            (
                20,
                Proc {
                    ppid: 1,
                    zombie: false,
                },
            ),
        ]
        .into_iter()
        .collect();
        let mut d = descendants_in(&procs, 10);
        d.sort();
        assert_eq!(d, vec![(11, false), (12, true), (13, false)]);
        assert!(descendants_in(&procs, 20).is_empty());
    }
}
