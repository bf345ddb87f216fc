//! Job dependencies: `--dependency=afterok:12:13,afterany:14` or with `?` for OR,
//! `singleton`.

/// What a dependency waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DependencyKind {
    /// `after`: the other job started (or was cancelled).
    After,
    /// `afterany`: the other job ended, however.
    AfterAny,
    /// `afterok`: the other job completed successfully.
    AfterOk,
    /// `afternotok`: the other job failed (non-zero exit, timeout, node failure...).
    AfterNotOk,
    /// `aftercorr`: the array task with the same index completed successfully.
    AfterCorr,
}

/// One job a condition names: `123`, an array task `123_4`, with `after` an optional
/// delay `123+5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Job id.
    pub job: u64,
    /// Array task index, for `123_4`.
    pub task: Option<u32>,
    /// `after:123+5`: minutes to wait after the job started or was cancelled (0: none).
    pub delay_mins: u32,
}

/// One condition: a kind and the jobs it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// What to wait for.
    pub kind: DependencyKind,
    /// The jobs, in the order given.
    pub jobs: Vec<Target>,
}

/// A parsed `--dependency` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dependency {
    /// All conditions must hold (`,`-separated).
    All(Vec<Condition>),
    /// Any one condition suffices (`?`-separated).
    Any(Vec<Condition>),
    /// `singleton`: no other job of the same name and user may run at the same time.
    Singleton,
}

/// Parses a dependency specification.
///
/// Errors (Slurm's text): `Job dependency problem` for an unknown kind, a missing or
/// non-numeric job id, or `,` and `?` mixed.
pub fn parse_dependency(s: &str) -> Result<Dependency, String> {
    let bad = || "Job dependency problem".to_string();
    let s = s.trim();
    if s.eq_ignore_ascii_case("singleton") {
        return Ok(Dependency::Singleton);
    }
    let any = s.contains('?');
    if any && s.contains(',') {
        return Err(bad());
    }
    let mut conds = Vec::new();
    for part in s.split(if any { '?' } else { ',' }) {
        let mut pieces = part.split(':');
        let kind = match pieces.next().unwrap_or("") {
            "after" => DependencyKind::After,
            "afterany" => DependencyKind::AfterAny,
            "afterok" => DependencyKind::AfterOk,
            "afternotok" => DependencyKind::AfterNotOk,
            "aftercorr" => DependencyKind::AfterCorr,
            _ => return Err(bad()),
        };
        let mut jobs = Vec::new();
        for id in pieces {
            // `+minutes`: a delay, which only `after` honours.
            let (id, delay_mins) = match id.split_once('+') {
                Some((id, m)) => (id, m.parse::<u32>().map_err(|_| bad())?),
                None => (id, 0),
            };
            let (job, task) = match id.split_once('_') {
                Some((j, t)) => (j, Some(t.parse::<u32>().map_err(|_| bad())?)),
                None => (id, None),
            };
            let job = job.parse::<u64>().ok().filter(|j| *j > 0).ok_or_else(bad)?;
            jobs.push(Target {
                job,
                task,
                delay_mins,
            });
        }
        if jobs.is_empty() {
            return Err(bad());
        }
        conds.push(Condition { kind, jobs });
    }
    Ok(if any {
        Dependency::Any(conds)
    } else {
        Dependency::All(conds)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(job: u64, task: Option<u32>, delay_mins: u32) -> Target {
        Target {
            job,
            task,
            delay_mins,
        }
    }

    #[test]
    fn forms() {
        assert_eq!(
            parse_dependency("afterok:12:13,afterany:14_2").unwrap(),
            Dependency::All(vec![
                Condition {
                    kind: DependencyKind::AfterOk,
                    jobs: vec![t(12, None, 0), t(13, None, 0)]
                },
                Condition {
                    kind: DependencyKind::AfterAny,
                    jobs: vec![t(14, Some(2), 0)]
                },
            ])
        );
        assert_eq!(
            parse_dependency("afternotok:5?after:6+10").unwrap(),
            Dependency::Any(vec![
                Condition {
                    kind: DependencyKind::AfterNotOk,
                    jobs: vec![t(5, None, 0)]
                },
                Condition {
                    kind: DependencyKind::After,
                    jobs: vec![t(6, None, 10)]
                },
            ])
        );
        assert_eq!(
            parse_dependency("singleton").unwrap(),
            Dependency::Singleton
        );
    }

    #[test]
    fn errors_use_slurms_text() {
        for bad in [
            "foo:1",
            "afterok",
            "afterok:",
            "afterok:x",
            "afterok:1,after:2?after:3",
            "",
            "afterok:0",
            "after:5+x",
        ] {
            assert_eq!(
                parse_dependency(bad),
                Err("Job dependency problem".into()),
                "{bad}"
            );
        }
    }
}
