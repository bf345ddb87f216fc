//! The figures a supervisor keeps per step and task while they run, and the sampler's
//! round over them.
//!
//! Each task's figures are the largest seen of its process tree (walked from its
//! process by parent id in `/proc`): CPU time (user and system, its processes' own and
//! their waited-for children's), resident and virtual size (the tree's sum, or one
//! process's peak), major faults, bytes read and written (`rchar`, `wchar`). At the
//! task's end its tree is read once more before it is reaped, and its `rusage` from
//! `wait4` (CPU and peak resident size of the whole tree, as slurmstepd takes them)
//! raises the figures where it is larger: a task shorter than the sampling interval
//! is measured right.
//!
//! With a cgroup source and a step cgroup here, a step with one task here takes the
//! cgroup's CPU time where it is larger (processes that left the task's tree are
//! counted); memory stays the tree's (the cgroup's peak counts the page cache).
//!
//! Each step's GPUs (those it was given here) are sampled at every round.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sluice_proto::types::StepId;
use sluice_proto::usage::{GpuUsage, Stat, StepUsage};

use super::gpu::{self, GpuSource};
use super::procfs::{self, TreeSample};
use super::{cgroupfs, Rusage, Settings, Source};
use crate::cgroup::Version;

/// One task's figures so far.
#[derive(Clone, Copy, Debug, Default)]
struct Task {
    pid: i32,
    best: TreeSample,
    done: bool,
}

/// One step's figures so far.
#[derive(Default)]
struct Step {
    tasks: BTreeMap<u32, Task>,
    gpus: Vec<GpuUsage>,
    cgroup: Option<(PathBuf, Version)>,
    cgroup_cpu: Option<(u64, u64)>,
}

impl Step {
    fn running(&self) -> bool {
        self.tasks.values().any(|t| !t.done)
    }
}

/// The figures of one supervisor's steps.
pub struct Tracker {
    node: String,
    settings: Settings,
    proc_root: PathBuf,
    ticks: u64,
    page: u64,
    steps: BTreeMap<StepId, Step>,
    gpus: Option<Box<dyn GpuSource>>,
    /// The node's GPU source is found ([`gpu::detect`]) when a step first has GPUs.
    detect_gpus: bool,
    /// What could not be read, said once in the log.
    said: BTreeSet<String>,
}

fn raise(best: &mut TreeSample, s: &TreeSample) {
    best.user_ms = best.user_ms.max(s.user_ms);
    best.system_ms = best.system_ms.max(s.system_ms);
    best.rss = best.rss.max(s.rss);
    best.vmem = best.vmem.max(s.vmem);
    best.pages = best.pages.max(s.pages);
    best.read = best.read.max(s.read);
    best.write = best.write.max(s.write);
}

impl Tracker {
    /// A tracker for node `node`'s steps, as `settings` say, reading `proc_root`
    /// (`/proc`), with `gpus` as the GPU source.
    pub fn new(
        node: &str,
        settings: Settings,
        proc_root: &Path,
        gpus: Option<Box<dyn GpuSource>>,
    ) -> Tracker {
        Tracker {
            node: node.to_string(),
            settings,
            proc_root: proc_root.to_path_buf(),
            ticks: super::ticks_per_s(),
            page: super::page_size(),
            steps: BTreeMap::new(),
            gpus,
            detect_gpus: false,
            said: BTreeSet::new(),
        }
    }

    /// Finds the node's GPU source ([`gpu::detect`]: NVML is loaded) when a step first
    /// has GPUs, not before.
    pub fn detecting_gpus(mut self) -> Tracker {
        self.detect_gpus = true;
        self
    }

    /// Nothing is gathered (`jobacct_gather/none`).
    pub fn off(&self) -> bool {
        self.settings.source == Source::Off
    }

    /// The job's own `--acctg-freq` (as given, checked by the command), whose task
    /// frequency, where it says one, replaces the node's.
    pub fn job_frequency(&mut self, acctg_freq: Option<&str>) {
        if let Some(task) = acctg_freq
            .and_then(|f| sluice_conf::acct_gather_conf::Frequency::parse(f, "--acctg-freq").ok())
            .and_then(|f| f.task)
        {
            self.settings.task_secs = task;
        }
    }

    /// Seconds between rounds (0: none).
    pub fn interval(&self) -> u32 {
        if self.off() {
            0
        } else {
            self.settings.task_secs
        }
    }

    /// Task `task` of `step` runs as process `pid`.
    pub fn task_started(&mut self, step: StepId, task: u32, pid: i32) {
        if self.off() {
            return;
        }
        self.steps.entry(step).or_default().tasks.insert(
            task,
            Task {
                pid,
                ..Task::default()
            },
        );
    }

    /// `step` was given GPUs `indices` here.
    pub fn gpus(&mut self, step: StepId, indices: &[u32]) {
        if self.off() || indices.is_empty() {
            return;
        }
        if self.gpus.is_none() && std::mem::take(&mut self.detect_gpus) {
            self.gpus = gpu::detect();
            if self.gpus.is_none() {
                self.say_once("no GPU can be sampled here (no NVML, no AMD sysfs)".into());
            }
        }
        let node = self.node.clone();
        let s = self.steps.entry(step).or_default();
        s.gpus = indices
            .iter()
            .map(|&index| GpuUsage {
                node: node.clone(),
                index,
                ..GpuUsage::default()
            })
            .collect();
    }

    /// `step` has a cgroup here (read with a cgroup source).
    pub fn cgroup(&mut self, step: StepId, place: Option<(PathBuf, Version)>) {
        if !matches!(self.settings.source, Source::Auto | Source::Cgroup) {
            return;
        }
        if let Some(place) = place {
            self.steps.entry(step).or_default().cgroup = Some(place);
        }
    }

    fn say_once(&mut self, what: String) {
        if self.said.insert(what.clone()) {
            tracing::warn!("{}: usage gathering: {what}", self.node);
        }
    }

    /// Samples the running tasks of every step (or of `only`, one task that has exited
    /// and is not reaped yet): their trees, their steps' cgroups and GPUs.
    fn round(&mut self, only: Option<(StepId, u32)>) {
        if self.off() {
            return;
        }
        let stats = match only {
            // An exited task's children have gone to another parent: its tree is its
            // own process, read alone rather than with every process on the host.
            Some((step, task)) => self
                .steps
                .get(&step)
                .and_then(|s| s.tasks.get(&task))
                .and_then(|t| procfs::one_stat(&self.proc_root, t.pid))
                .map(|s| (s.pid, s))
                .into_iter()
                .collect(),
            None => procfs::all_stats(&self.proc_root),
        };
        if stats.is_empty() && only.is_none() {
            let p = self.proc_root.display().to_string();
            self.say_once(format!(
                "{p} cannot be read: only the tasks' ends are measured"
            ));
        }
        let (ticks, page, root) = (self.ticks, self.page, self.proc_root.clone());
        let mut cgroup_failures = Vec::new();
        for (id, step) in self.steps.iter_mut() {
            if only.is_some_and(|(s, _)| s != *id) {
                continue;
            }
            for (n, task) in step.tasks.iter_mut() {
                if task.done || only.is_some_and(|(_, t)| t != *n) {
                    continue;
                }
                let procs: Vec<procfs::Process> = procfs::tree(&stats, task.pid)
                    .into_iter()
                    .filter_map(|p| stats.get(&p).map(|s| procfs::process(&root, *s)))
                    .collect();
                if !procs.is_empty() {
                    raise(&mut task.best, &procfs::sum_tree(&procs, ticks, page));
                }
            }
            if let Some((dir, version)) = &step.cgroup {
                let cg = cgroupfs::read(dir, *version, ticks);
                match (cg.user_ms, cg.system_ms) {
                    (Some(u), Some(s)) => step.cgroup_cpu = Some((u, s)),
                    // A v1 memory cgroup has no CPU figures: nothing is missing.
                    _ if *version == Version::V1 => {}
                    _ => cgroup_failures.push(dir.display().to_string()),
                }
            }
            if only.is_none() {
                if let Some(source) = self.gpus.as_mut() {
                    for g in step.gpus.iter_mut() {
                        if let Some(s) = source.sample(g.index) {
                            gpu::add(g, s);
                        }
                    }
                }
            }
        }
        for dir in cgroup_failures {
            self.say_once(format!(
                "the CPU time of cgroup {dir} cannot be read: tasks' own figures are used"
            ));
        }
    }

    /// One sampling round; the running steps' figures so far.
    pub fn sample(&mut self) -> Vec<(StepId, StepUsage)> {
        self.round(None);
        self.steps
            .iter()
            .filter(|(_, s)| s.running())
            .map(|(id, _)| *id)
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|id| self.usage(id).map(|u| (id, u)))
            .collect()
    }

    /// Task `task` of `step` has exited and is not reaped yet: its tree is read once
    /// more (the exited process's CPU time and I/O are still there).
    pub fn task_exiting(&mut self, step: StepId, task: u32) {
        self.round(Some((step, task)));
    }

    /// Task `task` of `step` was reaped with `rusage`.
    pub fn task_ended(&mut self, step: StepId, task: u32, rusage: Option<Rusage>) {
        let Some(t) = self
            .steps
            .get_mut(&step)
            .and_then(|s| s.tasks.get_mut(&task))
        else {
            return;
        };
        if let Some(ru) = rusage {
            let end = TreeSample {
                user_ms: ru.user_ms,
                system_ms: ru.system_ms,
                rss: ru.max_rss,
                vmem: 0,
                pages: ru.major_faults,
                read: ru.block_read,
                write: ru.block_write,
            };
            raise(&mut t.best, &end);
        }
        t.done = true;
    }

    /// `step`'s cgroup is about to go: its CPU time is read a last time.
    pub fn cgroup_ending(&mut self, step: StepId) {
        let ticks = self.ticks;
        if let Some(s) = self.steps.get_mut(&step) {
            if let Some((dir, version)) = &s.cgroup {
                let cg = cgroupfs::read(dir, *version, ticks);
                if let (Some(u), Some(sys)) = (cg.user_ms, cg.system_ms) {
                    s.cgroup_cpu = Some((u, sys));
                }
            }
            s.cgroup = None;
        }
    }

    /// `step`'s figures on this node so far; `None` when nothing is gathered or the
    /// step is unknown here.
    pub fn usage(&self, step: StepId) -> Option<StepUsage> {
        let s = self.steps.get(&step)?;
        let mut all = StepUsage::default();
        let one_task = s.tasks.len() == 1;
        for (&n, t) in &s.tasks {
            let mut b = t.best;
            if let Some((u, sys)) = s.cgroup_cpu.filter(|_| one_task) {
                b.user_ms = b.user_ms.max(u);
                b.system_ms = b.system_ms.max(sys);
            }
            let stat = |v: u64| Stat::one(v, &self.node, n);
            all.merge(&StepUsage {
                tasks: 1,
                cpu_ms: stat(b.user_ms + b.system_ms),
                user_cpu_ms: b.user_ms,
                system_cpu_ms: b.system_ms,
                rss: stat(b.rss),
                // A task gone before any sample read its virtual size (its rusage has
                // none) used at least its resident memory.
                vmem: stat(b.vmem.max(b.rss)),
                pages: stat(b.pages),
                disk_read: stat(b.read),
                disk_write: stat(b.write),
                ..StepUsage::default()
            });
        }
        all.gpus = s.gpus.clone();
        all.sampled_at = crate::now();
        Some(all)
    }

    /// Forgets the steps `keep` refuses (ended ones whose figures were taken).
    pub fn retain(&mut self, keep: impl Fn(StepId) -> bool) {
        self.steps.retain(|id, s| s.running() || keep(*id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::gpu::GpuSample;

    struct Fixed(u32);
    impl GpuSource for Fixed {
        fn sample(&mut self, index: u32) -> Option<GpuSample> {
            Some(GpuSample {
                util: self.0 + index,
                mem: 1 << 30,
                power_mw: None,
            })
        }
    }

    fn settings(source: Source) -> Settings {
        Settings {
            source,
            task_secs: 1,
        }
    }

    #[test]
    fn a_steps_tasks_are_summed_with_their_node_and_ids() {
        let mut t = Tracker::new(
            "n1",
            settings(Source::Proc),
            Path::new("/nonexistent"),
            None,
        );
        let step = StepId::Number(3);
        t.task_started(step, 4, 1);
        t.task_started(step, 5, 2);
        let ru = |user_ms, max_rss| Rusage {
            user_ms,
            system_ms: 10,
            max_rss,
            ..Rusage::default()
        };
        t.task_ended(step, 4, Some(ru(2000, 200 << 20)));
        assert_eq!(t.sample().len(), 1, "task 5 runs on");
        t.task_ended(step, 5, Some(ru(500, 10 << 20)));
        assert!(t.sample().is_empty());
        let u = t.usage(step).unwrap();
        assert_eq!(u.tasks, 2);
        assert_eq!((u.cpu_ms.max, u.cpu_ms.max_task), (2010, 4));
        assert_eq!((u.cpu_ms.min, u.cpu_ms.min_task), (510, 5));
        assert_eq!(u.cpu_ms.tot, 2520);
        assert_eq!((u.user_cpu_ms, u.system_cpu_ms), (2500, 20));
        assert_eq!((u.rss.max, u.rss.max_node.as_str()), (200 << 20, "n1"));
        assert_eq!(t.usage(StepId::Batch), None);
        // Forgotten once ended and not kept.
        t.retain(|_| false);
        assert_eq!(t.usage(step), None);
    }

    #[test]
    fn gpus_are_sampled_every_round_and_nothing_when_off() {
        let mut t = Tracker::new(
            "n1",
            settings(Source::Auto),
            Path::new("/nonexistent"),
            Some(Box::new(Fixed(40))),
        );
        t.task_started(StepId::Batch, 0, 1);
        t.gpus(StepId::Batch, &[0, 2]);
        t.sample();
        let u = t.sample().remove(0).1;
        assert_eq!(u.gpus.len(), 2);
        assert_eq!(
            (u.gpus[1].index, u.gpus[1].samples, u.gpus[1].util_sum),
            (2, 2, 84)
        );
        // A job's --acctg-freq replaces the node's task frequency.
        t.job_frequency(Some("energy=5"));
        assert_eq!(t.interval(), 1);
        t.job_frequency(Some("task=7,energy=0"));
        assert_eq!(t.interval(), 7);
        let mut off = Tracker::new("n1", settings(Source::Off), Path::new("/proc"), None);
        off.task_started(StepId::Batch, 0, 1);
        assert!(off.sample().is_empty());
        assert_eq!(off.usage(StepId::Batch), None);
        assert_eq!(off.interval(), 0);
    }

    #[test]
    fn a_one_task_steps_cgroup_raises_its_cpu_time_with_a_cgroup_source_only() {
        let dir = std::env::temp_dir().join(format!("sluice-trk-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cpu.stat"),
            "usage_usec 3500000\nuser_usec 3000000\nsystem_usec 500000\n",
        )
        .unwrap();
        let measured = |source| {
            let mut t = Tracker::new("n1", settings(source), Path::new("/nonexistent"), None);
            t.task_started(StepId::Batch, 0, 1);
            t.cgroup(StepId::Batch, Some((dir.clone(), Version::V2)));
            t.sample();
            t.task_ended(
                StepId::Batch,
                0,
                Some(Rusage {
                    user_ms: 2000,
                    system_ms: 100,
                    ..Rusage::default()
                }),
            );
            t.cgroup_ending(StepId::Batch);
            let u = t.usage(StepId::Batch).unwrap();
            (u.user_cpu_ms, u.system_cpu_ms, u.cpu_ms.tot)
        };
        // Processes that left the task's tree still count in its cgroup.
        assert_eq!(measured(Source::Cgroup), (3000, 500, 3500));
        assert_eq!(measured(Source::Auto), (3000, 500, 3500));
        // jobacct_gather/linux: the tree and the rusage only.
        assert_eq!(measured(Source::Proc), (2000, 100, 2100));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unreadable_cgroup_is_said_once_and_the_tasks_figures_stay() {
        let mut t = Tracker::new("n1", settings(Source::Cgroup), Path::new("/proc"), None);
        let me = std::process::id() as i32;
        t.task_started(StepId::Batch, 0, me);
        t.cgroup(
            StepId::Batch,
            Some((PathBuf::from("/nonexistent/cgroup"), Version::V2)),
        );
        t.sample();
        t.sample();
        assert_eq!(t.said.len(), 1, "{:?}", t.said);
        // This test process's own figures, from /proc.
        let u = t.sample().remove(0).1;
        assert!(u.rss.max > 0 && u.vmem.max > 0, "{u:?}");
    }
}
