//! Usage gathering settings of slurm.conf: `JobAcctGatherType` and
//! `JobAcctGatherFrequency` (`slurm.conf(5)`), and the same frequency syntax for
//! `srun`/`sbatch --acctg-freq`.
//!
//! `JobAcctGatherType` is `jobacct_gather/linux` (each task's process tree read from
//! `/proc`), `jobacct_gather/cgroup` (the step's cgroup where the agent has one) or
//! `jobacct_gather/none` (nothing is gathered). Unlike Slurm, whose default is `none`,
//! Sluice gathers when the file does not say ([`GatherType::Auto`]: the cgroup where the
//! step has one, `/proc` otherwise); see COMPATIBILITY.md.
//!
//! `JobAcctGatherFrequency` is a list of `TYPE=SECONDS` (`task`, `energy`, `network`,
//! `filesystem`), or a bare number for `task`; Sluice samples tasks only (the other
//! types are read and kept for `scontrol show config`). The default is `task=30`; 0
//! samples only at each task's end.

use crate::SlurmConf;

/// `JobAcctGatherType`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GatherType {
    /// Not set: Sluice gathers from the step's cgroup where it has one, else `/proc`.
    #[default]
    Auto,
    /// `jobacct_gather/linux`: every task's process tree from `/proc`.
    Linux,
    /// `jobacct_gather/cgroup`: the step's cgroup (with `/proc` for per-task figures).
    Cgroup,
    /// `jobacct_gather/none`: nothing is gathered.
    None,
}

impl GatherType {
    /// A `JobAcctGatherType` value.
    ///
    /// Errors: an unknown plugin, with slurmd's words for it.
    pub fn parse(value: &str) -> Result<GatherType, String> {
        let v = value.trim();
        match v.to_ascii_lowercase().as_str() {
            "jobacct_gather/linux" => Ok(GatherType::Linux),
            "jobacct_gather/cgroup" => Ok(GatherType::Cgroup),
            "jobacct_gather/none" => Ok(GatherType::None),
            "" => Ok(GatherType::Auto),
            _ => Err(format!(
                "cannot create jobacct_gather context for {v}: Unable to initialize \
                 jobacct_gather (JobAcctGatherType: jobacct_gather/linux, \
                 jobacct_gather/cgroup or jobacct_gather/none)"
            )),
        }
    }

    /// The plugin's name as `scontrol show config` prints it.
    pub fn name(self) -> &'static str {
        match self {
            GatherType::Auto => "(null)",
            GatherType::Linux => "jobacct_gather/linux",
            GatherType::Cgroup => "jobacct_gather/cgroup",
            GatherType::None => "jobacct_gather/none",
        }
    }
}

/// The default task sampling interval, seconds (Slurm's `DEFAULT_JOB_ACCT_GATHER_FREQ`).
pub const DEFAULT_TASK_FREQ: u32 = 30;

/// A parsed frequency list: seconds per type; `None` where the list does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frequency {
    /// `task=` (or a bare number).
    pub task: Option<u32>,
    /// `energy=`.
    pub energy: Option<u32>,
    /// `network=`.
    pub network: Option<u32>,
    /// `filesystem=`.
    pub filesystem: Option<u32>,
}

impl Frequency {
    /// A `JobAcctGatherFrequency` (or `--acctg-freq`) value: comma-separated
    /// `TYPE=SECONDS` or a bare number (the task frequency).
    ///
    /// Errors: an item that is neither, naming it as Slurm's `validate_acctg_freq`
    /// does (`what` is `JobAcctGatherFrequency` or `--acctg-freq`).
    pub fn parse(value: &str, what: &str) -> Result<Frequency, String> {
        let mut f = Frequency::default();
        for item in value.split(',') {
            let item = item.trim();
            let bad = || format!("Invalid {what} specification: {item}");
            if item.is_empty() {
                return Err(bad());
            }
            let (key, secs) = match item.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), v.trim()),
                None => ("task".to_string(), item),
            };
            let secs: u32 = secs.parse().map_err(|_| bad())?;
            let slot = match key.as_str() {
                "task" => &mut f.task,
                "energy" => &mut f.energy,
                "network" => &mut f.network,
                "filesystem" => &mut f.filesystem,
                _ => return Err(bad()),
            };
            *slot = Some(secs);
        }
        Ok(f)
    }

    /// The task sampling interval, seconds (0: only at the end).
    pub fn task_secs(&self) -> u32 {
        self.task.unwrap_or(DEFAULT_TASK_FREQ)
    }
}

/// The gathering settings of a slurm.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatherConf {
    /// `JobAcctGatherType`.
    pub kind: GatherType,
    /// `JobAcctGatherFrequency`.
    pub frequency: Frequency,
}

impl GatherConf {
    /// The settings from their values as written (`None`: not set).
    ///
    /// Errors: an unknown type or a malformed frequency, in Slurm's words.
    pub fn parse(kind: Option<&str>, frequency: Option<&str>) -> Result<GatherConf, String> {
        Ok(GatherConf {
            kind: kind.map(GatherType::parse).transpose()?.unwrap_or_default(),
            frequency: frequency
                .map(|f| Frequency::parse(f, "JobAcctGatherFrequency"))
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// The settings of a parsed slurm.conf.
    ///
    /// Errors: as [`GatherConf::parse`].
    pub fn from_conf(conf: &SlurmConf) -> Result<GatherConf, String> {
        GatherConf::parse(
            conf.get("JobAcctGatherType"),
            conf.get("JobAcctGatherFrequency"),
        )
    }

    /// The task sampling interval, seconds (0: only at each task's end).
    pub fn task_secs(&self) -> u32 {
        self.frequency.task_secs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_is_one_of_slurms_plugins_and_gathers_by_default() {
        assert_eq!(
            GatherConf::parse(None, None).unwrap().kind,
            GatherType::Auto
        );
        for (v, k) in [
            ("jobacct_gather/linux", GatherType::Linux),
            ("JobAcct_Gather/Cgroup", GatherType::Cgroup),
            ("jobacct_gather/none", GatherType::None),
        ] {
            assert_eq!(GatherType::parse(v).unwrap(), k);
        }
        let e = GatherType::parse("jobacct_gather/bogus").unwrap_err();
        assert!(
            e.starts_with("cannot create jobacct_gather context for jobacct_gather/bogus"),
            "{e}"
        );
    }

    #[test]
    fn frequencies_are_a_number_or_typed_items_and_default_to_thirty_seconds() {
        assert_eq!(GatherConf::default().task_secs(), 30);
        let f = Frequency::parse("45", "JobAcctGatherFrequency").unwrap();
        assert_eq!(f.task_secs(), 45);
        let f = Frequency::parse("task=10,energy=0,network=0,filesystem=5", "x").unwrap();
        assert_eq!(
            f,
            Frequency {
                task: Some(10),
                energy: Some(0),
                network: Some(0),
                filesystem: Some(5)
            }
        );
        // Only other types: the task default stays.
        assert_eq!(Frequency::parse("energy=5", "x").unwrap().task_secs(), 30);
        assert_eq!(Frequency::parse("task=0", "x").unwrap().task_secs(), 0);
    }

    #[test]
    fn a_malformed_frequency_is_refused_naming_the_bad_item() {
        for (v, item) in [
            ("task=abc", "task=abc"),
            ("task=10,energy=x", "energy=x"),
            ("cpu=5", "cpu=5"),
            ("-3", "-3"),
            ("10,", ""),
        ] {
            assert_eq!(
                GatherConf::parse(None, Some(v)).unwrap_err(),
                format!("Invalid JobAcctGatherFrequency specification: {item}"),
                "{v}"
            );
        }
        assert_eq!(
            Frequency::parse("task=abc", "--acctg-freq").unwrap_err(),
            "Invalid --acctg-freq specification: task=abc"
        );
    }
}
