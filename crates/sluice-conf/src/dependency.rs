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

/// One condition: a kind and the jobs it names (`123` or an array task `123_4`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// What to wait for.
    pub kind: DependencyKind,
    /// Job ids, each with an optional array task index.
    pub jobs: Vec<(u64, Option<u32>)>,
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
            // A `+minutes` delay is accepted on `after` only in newer Slurm; keep the id.
            let id = id.split('+').next().unwrap_or("");
            let (job, task) = match id.split_once('_') {
                Some((j, t)) => (j, Some(t.parse::<u32>().map_err(|_| bad())?)),
                None => (id, None),
            };
            let job = job.parse::<u64>().ok().filter(|j| *j > 0).ok_or_else(bad)?;
            jobs.push((job, task));
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

    #[test]
    fn forms() {
        assert_eq!(
            parse_dependency("afterok:12:13,afterany:14_2").unwrap(),
            Dependency::All(vec![
                Condition {
                    kind: DependencyKind::AfterOk,
                    jobs: vec![(12, None), (13, None)]
                },
                Condition {
                    kind: DependencyKind::AfterAny,
                    jobs: vec![(14, Some(2))]
                },
            ])
        );
        assert_eq!(
            parse_dependency("afternotok:5?after:6").unwrap(),
            Dependency::Any(vec![
                Condition {
                    kind: DependencyKind::AfterNotOk,
                    jobs: vec![(5, None)]
                },
                Condition {
                    kind: DependencyKind::After,
                    jobs: vec![(6, None)]
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
        ] {
            assert_eq!(
                parse_dependency(bad),
                Err("Job dependency problem".into()),
                "{bad}"
            );
        }
    }
}
