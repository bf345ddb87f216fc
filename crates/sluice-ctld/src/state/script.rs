//! A batch job's script and environment: most of a submission's size (a login shell's
//! environment is a few KB), needed only to launch it. They are taken out of the
//! submission when it is checked ([`super::Controller::prepare`]), written to the store
//! with the job, in the same transaction (`job_scripts`: one row per submission, under
//! its first id, which an array's tasks share), and never kept in the controller's
//! memory. A launch order leaves the loop without them; the node's order queue reads
//! them back just before sending it (`server/agents.rs`), the submitted environment
//! under Slurm's variables ([`launch_environment`]), as the launch would have had them.

use std::collections::BTreeMap;

use sluice_core::JobId;
use sluice_proto::types::{JobDescription, LaunchBatch};

/// A submission's script and environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchScript {
    /// The batch script (empty for `srun`/`salloc` allocations).
    pub script: String,
    /// The submitted environment (after `--export`).
    pub environment: Vec<(String, String)>,
}

impl BatchScript {
    /// Takes the script and environment out of `desc`, leaving them empty; `None` when
    /// it has neither.
    pub fn take(desc: &mut JobDescription) -> Option<BatchScript> {
        let s = BatchScript {
            script: std::mem::take(&mut desc.script),
            environment: std::mem::take(&mut desc.environment),
        };
        (!s.script.is_empty() || !s.environment.is_empty()).then_some(s)
    }

    /// As the store keeps it (the environment as JSON).
    pub fn to_store(&self) -> sluice_store::Script {
        sluice_store::Script {
            script: self.script.clone(),
            environment: serde_json::to_string(&self.environment).expect("strings serialise"),
        }
    }

    /// Read back from the store.
    ///
    /// Errors: the environment is not what [`BatchScript::to_store`] writes.
    pub fn from_store(s: sluice_store::Script) -> Result<BatchScript, String> {
        Ok(BatchScript {
            environment: serde_json::from_str(&s.environment).map_err(|e| e.to_string())?,
            script: s.script,
        })
    }

    /// Completes launch order `order`, which left the controller without them: its
    /// script, and its environment on top of the submitted one.
    pub fn complete(self, order: &mut LaunchBatch) {
        order.job.desc.script = self.script;
        let slurm = std::mem::take(&mut order.environment);
        order.environment = launch_environment(self.environment, slurm);
    }
}

/// Where the store keeps the script of job `id` (`array`: its array's id and its
/// index): under its array's id for an array's task, else its own.
pub fn script_key(id: JobId, array: Option<(JobId, u32)>) -> u64 {
    array.map_or(id, |(a, _)| a).0
}

/// A batch script's environment: the `submitted` one without the variables of an
/// earlier allocation (`SLURM_*`, `CUDA_VISIBLE_DEVICES`; but those sbatch sets for
/// this job: `SLURM_PRIO_PROCESS`, `SLURM_UMASK`, and with `--export=NONE` `SLURM_GET_USER_ENV` and
/// `SLURM_EXPORT_ENV`; and the user's options for the job's sruns, such as
/// `SLURM_KILL_BAD_EXIT`), then Slurm's variables of this one (`slurm`, which win), by
/// name.
pub fn launch_environment(
    submitted: Vec<(String, String)>,
    slurm: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = submitted.into_iter().collect();
    env.retain(|k, _| {
        (!k.starts_with("SLURM_")
            || matches!(
                k.as_str(),
                "SLURM_PRIO_PROCESS" | "SLURM_UMASK" | "SLURM_GET_USER_ENV" | "SLURM_EXPORT_ENV"
            )
            || srun_option(k))
            && k != "CUDA_VISIBLE_DEVICES"
    });
    env.extend(slurm);
    env.into_iter().collect()
}

/// Whether `name` is one of srun's input variables (`SLURM_KILL_BAD_EXIT`), which the
/// user set for the job's steps.
fn srun_option(name: &str) -> bool {
    sluice_conf::input_env::variables(sluice_conf::options::Command::Srun)
        .iter()
        .any(|(v, _)| *v == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_submitted_environment_goes_under_slurms_without_an_earlier_allocations() {
        let submitted = pairs(&[
            ("PATH", "/bin"),
            ("SLURM_JOB_ID", "7"),
            ("SLURM_OLD", "x"),
            ("CUDA_VISIBLE_DEVICES", "3"),
            ("HOME", "/home/alice"),
            ("SLURM_JOB_NAME", "old"),
            ("SLURM_PRIO_PROCESS", "5"),
            ("SLURM_KILL_BAD_EXIT", "1"),
        ]);
        let slurm = pairs(&[("SLURM_JOB_ID", "12"), ("SLURM_JOB_NAME", "wrap")]);
        assert_eq!(
            launch_environment(submitted, slurm),
            pairs(&[
                ("HOME", "/home/alice"),
                ("PATH", "/bin"),
                ("SLURM_JOB_ID", "12"),
                ("SLURM_JOB_NAME", "wrap"),
                // The user's option for the job's sruns.
                ("SLURM_KILL_BAD_EXIT", "1"),
                // sbatch's, for this job: the submitter's nice value.
                ("SLURM_PRIO_PROCESS", "5"),
            ])
        );
    }

    #[test]
    fn a_script_is_taken_out_of_its_submission_and_read_back_from_the_store() {
        let mut desc = JobDescription {
            name: "wrap".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            environment: pairs(&[("A", "1"), ("B", "x=\"y\"\n")]),
            ..JobDescription::default()
        };
        let s = BatchScript::take(&mut desc).expect("it has both");
        assert!(desc.script.is_empty() && desc.environment.is_empty());
        assert_eq!(desc.name, "wrap");
        assert_eq!(BatchScript::from_store(s.to_store()), Ok(s));
        assert_eq!(BatchScript::take(&mut desc), None);
        assert_eq!(script_key(JobId(5), None), 5);
        assert_eq!(script_key(JobId(7), Some((JobId(5), 2))), 5);
    }
}
