//! What a job listing asks for: `GET /v1/jobs?jobs=…&users=…&states=…`, the filters
//! `squeue` and `scontrol show job` apply, applied by the controller where the jobs are.
//!
//! Every filter is a comma-separated list, absent when it does not filter; a job is
//! listed when it passes every filter given:
//! - `jobs`: `123` (the job, or every task of array 123) or `123_4` (one task);
//! - `users`: owners' names; `partitions`; `names` (job names);
//! - `states`: Slurm's state names (`PENDING,RUNNING`: what `squeue` lists without
//!   `-t`); an empty list matches nothing; absent or `all`: every state;
//! - `brief`: only what `squeue`'s columns show (no output paths, TRES, GPU lists).
//!
//! Finished jobs past `MinJobAge` are never listed (the controller forgot them).

use serde::{Deserialize, Serialize};

use crate::types::JobState;

/// A job listing's filters, as query parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQuery {
    /// Job ids: `123`, `123_4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<String>,
    /// Owners' names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<String>,
    /// State names, or `all`; absent: every state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<String>,
    /// Partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<String>,
    /// Job names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
    /// Only the fields `squeue`'s columns show.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub brief: bool,
}

/// Which states a listing takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateFilter {
    /// Every state.
    All,
    /// These states (none: nothing).
    Only(Vec<JobState>),
}

impl JobQuery {
    /// The path of this listing: `/v1/jobs` with its filters.
    pub fn path(&self) -> String {
        let mut out = String::from("/v1/jobs");
        let mut sep = '?';
        let mut add = |key: &str, value: &str| {
            out.push(sep);
            sep = '&';
            out.push_str(key);
            out.push('=');
            encode(value, &mut out);
        };
        for (key, value) in [
            ("jobs", &self.jobs),
            ("users", &self.users),
            ("states", &self.states),
            ("partitions", &self.partitions),
            ("names", &self.names),
        ] {
            if let Some(v) = value {
                add(key, v);
            }
        }
        if self.brief {
            add("brief", "true");
        }
        out
    }

    /// The job ids asked for: (job, task); `None` when not filtered. An id that does
    /// not parse matches nothing.
    pub fn job_ids(&self) -> Option<Vec<(u64, Option<u32>)>> {
        let list = self.jobs.as_deref()?;
        Some(
            items(list)
                .filter_map(|id| match id.split_once('_') {
                    Some((j, t)) => Some((j.parse().ok()?, Some(t.parse().ok()?))),
                    None => Some((id.parse().ok()?, None)),
                })
                .collect(),
        )
    }

    /// The states asked for.
    pub fn state_filter(&self) -> StateFilter {
        match self.states.as_deref() {
            None => StateFilter::All,
            Some(s) if s.eq_ignore_ascii_case("all") => StateFilter::All,
            Some(s) => StateFilter::Only(items(s).filter_map(JobState::parse).collect()),
        }
    }
}

/// The items of a comma-separated list (empty ones left out).
pub fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').filter(|s| !s.is_empty())
}

/// `value` percent-encoded for a query string, onto `out`.
fn encode(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b',') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_becomes_a_path_and_its_filters_read_back() {
        let q = JobQuery {
            jobs: Some("12,13_4".into()),
            users: Some("alice".into()),
            states: Some("PENDING,RUNNING".into()),
            names: Some("a b&c=d".into()),
            brief: true,
            ..Default::default()
        };
        assert_eq!(
            q.path(),
            "/v1/jobs?jobs=12,13_4&users=alice&states=PENDING,RUNNING&names=a%20b%26c%3Dd\
             &brief=true"
        );
        assert_eq!(q.job_ids(), Some(vec![(12, None), (13, Some(4))]));
        assert_eq!(
            q.state_filter(),
            StateFilter::Only(vec![JobState::Pending, JobState::Running])
        );
        assert_eq!(JobQuery::default().path(), "/v1/jobs");
        assert_eq!(JobQuery::default().state_filter(), StateFilter::All);
        let all = JobQuery {
            states: Some("all".into()),
            ..Default::default()
        };
        assert_eq!(all.state_filter(), StateFilter::All);
        let none = JobQuery {
            states: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(none.state_filter(), StateFilter::Only(vec![]));
        assert_eq!(none.path(), "/v1/jobs?states=");
    }
}
