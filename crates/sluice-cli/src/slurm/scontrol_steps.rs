//! `scontrol show step [JOB[_TASK][.STEP]]`: running steps in Slurm 22.05's layout.
//!
//! Two of Slurm's readings are bettered (COMPATIBILITY.md, `show-steps`): with no id,
//! every job's steps are shown (Slurm's shows only the steps of jobs outside arrays),
//! and `JOB_TASK.STEP` names that task's step (Slurm's shows all the task's steps);
//! `JOB.batch` and `JOB.extern` name those steps (Slurm's reads them as step 0).

use sluice_proto::client::Client;
use sluice_proto::steps::ListedStep;
use sluice_proto::time::shown;

use super::common::strtol;
use sluice_proto::types::{JobRecord, JobState, StepId};

/// What an id names: a job (its own id or its array's), maybe one task, maybe one step
/// (by [`ListedStep::order`]), and the step as written back in `not found`.
#[derive(Debug, PartialEq, Eq)]
struct Asked {
    job: u64,
    task: Option<u32>,
    step: Option<(u32, String)>,
    /// `JOB.STEP+PART`: one part of a heterogeneous step in one allocation.
    part: Option<u32>,
}

/// Reads `JOB[_TASK][.STEP]` as scontrol does (leading digits; what does not parse
/// is 0, and job 0 names the jobs outside arrays).
fn asked(id: &str) -> Asked {
    let lead = |s| {
        let (n, rest) = strtol(s);
        (u64::try_from(n).unwrap_or(0), rest)
    };
    let (job, rest) = lead(id);
    let (task, rest) = match rest.strip_prefix('_') {
        Some(t) => {
            let (t, rest) = lead(t);
            (Some(u32::try_from(t).unwrap_or(u32::MAX)), rest)
        }
        None => (None, rest),
    };
    let mut part = None;
    let step = rest.strip_prefix('.').map(|s| match s {
        "batch" => (StepId::SLURM_BATCH, "batch".to_string()),
        "extern" => (StepId::SLURM_EXTERN, "extern".to_string()),
        s => {
            // As scontrol's `(uint32_t) strtol`: `-1` is 4294967295.
            let (n, rest) = strtol(s);
            let n = n as u32;
            match rest.strip_prefix('+') {
                Some(p) => {
                    let p = u32::try_from(lead(p).0).unwrap_or(u32::MAX);
                    part = Some(p);
                    (n, format!("{n}+{p}"))
                }
                None => (n, n.to_string()),
            }
        }
    });
    Asked {
        job,
        task,
        step,
        part,
    }
}

/// Whether `s` is a step `a` names. As Slurm's: an array's id names every task's
/// steps, but with a step number only the task whose own id it is (the controller
/// looks the step up by its job's own id).
fn names(a: &Asked, s: &ListedStep) -> bool {
    let job = match (a.task, &a.step) {
        // An id that reads as job 0 (`abc`) names, as Slurm's controller reads it,
        // every job outside an array (their array job id is 0); with a step or a task,
        // nothing (it looks the step up by job 0).
        _ if a.job == 0 => a.task.is_none() && a.step.is_none() && s.array.is_none(),
        (Some(t), _) => s.array == Some((a.job, t)),
        (None, Some(_)) => s.job_id == a.job,
        (None, None) => s.job_id == a.job || s.array.is_some_and(|x| x.0 == a.job),
    };
    // A step's number names its first part only (Slurm's controller finds the first
    // step of that number), `+PART` that part.
    let part = match s.step {
        StepId::Part(_, p) => p,
        _ => 0,
    };
    job && a.step.as_ref().is_none_or(|(n, _)| *n == s.order())
        && (a.step.is_none() || a.part.unwrap_or(0) == part)
}

/// Slurm's task distribution name for a step (none for the batch step): cyclic when
/// it has no more tasks than nodes, as srun's default lays them out, block otherwise.
fn distribution(s: &ListedStep) -> Option<&'static str> {
    match s.step {
        StepId::Batch | StepId::Extern => None,
        _ if s.ntasks as usize <= s.nodes.len() => Some("Cyclic"),
        _ => Some("Block"),
    }
}

/// One step in `scontrol show step`'s layout (`one_line`: `-o`), newline included.
fn record(s: &ListedStep, one_line: bool) -> String {
    let sep = if one_line { " " } else { "\n   " };
    // As Slurm's: a suspended job's steps stay RUNNING.
    let state = JobState::Running.name();
    let mut out = format!(
        "StepId={} UserId={} StartTime={} TimeLimit={}{sep}\
         State={state} Partition={} NodeList={}{sep}\
         Nodes={} CPUs={} Tasks={} Name={} Network=(null){sep}\
         TRES={}{sep}\
         ResvPorts=(null){sep}\
         CPUFreqReq=Default",
        s.id(),
        s.uid,
        shown(s.start),
        sluice_conf::duration::format_time(s.time_limit),
        s.partition,
        sluice_conf::hostlist::compress(&s.nodes),
        s.nodes.len(),
        s.cpus,
        s.ntasks,
        s.name,
        s.tres().unwrap_or_else(|| "(null)".into()),
    );
    if let Some(d) = distribution(s) {
        out.push_str(" Dist=");
        out.push_str(d);
    }
    // The host and pid of the srun that started the step (none: the batch step, or
    // a step recorded before srun said).
    out.push_str(sep);
    match &s.srun {
        Some((host, pid)) => out.push_str(&format!("SrunHost:Pid={host}:{pid}")),
        None => out.push_str("SrunHost:Pid=(null):0"),
    }
    out.push_str(if one_line { "\n" } else { "\n\n" });
    out
}

/// Runs `scontrol show step [ID]`; scontrol's exit status.
pub fn show(client: &Client, id: Option<&str>, one_line: bool) -> i32 {
    let mut steps: Vec<ListedStep> = match client.get("/v1/steps") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slurm_get_job_steps error: {}", super::common::describe(&e));
            return 1;
        }
    };
    let a = id.map(asked);
    if let Some(a) = &a {
        steps.retain(|s| names(a, s));
    }
    // Job by job, each job's steps as they were made: the batch step first.
    steps.sort_by_key(|s| (s.job_id, s.step != StepId::Batch, s.order()));
    if steps.is_empty() {
        let Some(a) = a else {
            println!("No job steps in the system");
            return 0;
        };
        // As Slurm's: no job id at all is an invalid step.
        if a.job == 0 {
            match a.task {
                Some(t) => println!("Job step 0_{t}.Invalid not found"),
                None => println!("Job step 0.Invalid not found"),
            }
            return 1;
        }
        if client
            .get::<JobRecord>(&format!("/v1/jobs/{}", a.job))
            .is_err()
        {
            eprintln!("slurm_get_job_steps error: Invalid job id specified");
            return 1;
        }
        let step = a.step.map(|(_, w)| w).unwrap_or_default();
        match a.task {
            Some(t) => println!("Job step {}_{t}.{step} not found", a.job),
            None => println!("Job step {}.{step} not found", a.job),
        }
        return 1;
    }
    let out: String = steps.iter().map(|s| record(s, one_line)).collect();
    print!("{out}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: StepId, ntasks: u32) -> ListedStep {
        ListedStep {
            time_limit: None,
            gpus: 0,
            srun: None,
            job_id: 17,
            array: None,
            step,
            name: if step == StepId::Batch {
                "batch"
            } else {
                "inner"
            }
            .into(),
            partition: "debug".into(),
            uid: 0,
            user: "root".into(),
            start: 0,
            run_secs: 5,
            nodes: if step == StepId::Batch {
                vec!["n1".into()]
            } else {
                vec!["n1".into(), "n2".into()]
            },
            ntasks,
            cpus: if step == StepId::Batch { 0 } else { 4 },
            mem_mb: if step == StepId::Batch { 0 } else { 2000 },
        }
    }

    #[test]
    fn ids_are_read_as_scontrol_reads_them() {
        let a = |job, task, step: Option<(u32, &str)>| Asked {
            job,
            task,
            step: step.map(|(n, w)| (n, w.to_string())),
            part: None,
        };
        assert_eq!(asked("12"), a(12, None, None));
        assert_eq!(asked("12.3"), a(12, None, Some((3, "3"))));
        assert_eq!(asked("12_4.1"), a(12, Some(4), Some((1, "1"))));
        assert_eq!(
            asked("12.batch"),
            a(12, None, Some((StepId::SLURM_BATCH, "batch")))
        );
        assert_eq!(asked(".0"), a(0, None, Some((0, "0"))));
        assert_eq!(
            asked("12.-1"),
            a(12, None, Some((4294967295, "4294967295")))
        );
        assert_eq!(asked("12.3+1").part, Some(1));
        assert_eq!(asked("12.3+1").step, Some((3, "3+1".to_string())));
    }

    #[test]
    fn a_step_is_shown_in_slurms_layout_with_its_trackable_resources() {
        let mut s = step(StepId::Number(0), 2);
        s.srun = Some(("login1".into(), 4242));
        assert_eq!(
            record(&s, false),
            format!(
                "StepId=17.0 UserId=0 StartTime={} TimeLimit=UNLIMITED\n   \
                 State=RUNNING Partition=debug NodeList=n[1-2]\n   \
                 Nodes=2 CPUs=4 Tasks=2 Name=inner Network=(null)\n   \
                 TRES=cpu=4,mem=2000M,node=2\n   \
                 ResvPorts=(null)\n   \
                 CPUFreqReq=Default Dist=Cyclic\n   \
                 SrunHost:Pid=login1:4242\n\n",
                shown(0)
            )
        );
        let b = record(&step(StepId::Batch, 1), true);
        assert!(b.starts_with("StepId=17.batch UserId=0 "), "{b}");
        assert!(
            b.ends_with(" TRES=(null) ResvPorts=(null) CPUFreqReq=Default SrunHost:Pid=(null):0\n"),
            "{b}"
        );
    }

    #[test]
    fn a_heterogeneous_steps_number_names_its_first_part_and_plus_a_part_that_one() {
        let parts = [step(StepId::Part(0, 0), 1), step(StepId::Part(0, 1), 1)];
        let named =
            |id: &str| -> Vec<bool> { parts.iter().map(|s| names(&asked(id), s)).collect() };
        assert_eq!(named("17"), [true, true]);
        assert_eq!(named("17.0"), [true, false]);
        assert_eq!(named("17.0+1"), [false, true]);
        assert_eq!(named("17.0+5"), [false, false]);
    }

    #[test]
    fn more_tasks_than_nodes_are_laid_out_in_blocks() {
        assert_eq!(distribution(&step(StepId::Number(1), 2)), Some("Cyclic"));
        assert_eq!(distribution(&step(StepId::Number(1), 5)), Some("Block"));
        assert_eq!(distribution(&step(StepId::Batch, 1)), None);
    }

    #[test]
    fn an_array_id_names_every_tasks_steps_and_a_task_only_its_own() {
        let mut s = step(StepId::Number(0), 2);
        s.job_id = 20;
        s.array = Some((18, 1));
        assert!(names(&asked("18"), &s));
        // With a step, only the task holding the array's own id, as Slurm's.
        assert!(!names(&asked("18.0"), &s));
        assert!(names(&asked("20.0"), &s));
        assert!(names(&asked("18_1"), &s));
        assert!(!names(&asked("18_2.0"), &s));
        assert!(!names(&asked("18.1"), &s));
        assert!(names(&asked("20"), &s));
    }

    #[test]
    fn an_id_read_as_job_zero_names_the_steps_of_jobs_outside_arrays() {
        let plain = step(StepId::Number(0), 2);
        let mut task = step(StepId::Number(0), 2);
        task.job_id = 20;
        task.array = Some((18, 1));
        for id in ["abc", "0", "x.y"] {
            assert!(names(&asked(id), &plain), "{id}");
            assert!(!names(&asked(id), &task), "{id}");
        }
        assert!(!names(&asked("0.0"), &plain));
        assert!(!names(&asked("0_1"), &task));
    }
}
