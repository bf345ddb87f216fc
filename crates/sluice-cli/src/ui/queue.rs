//! The queue page: running jobs, then pending ones in the order they would start, each
//! pending job with its reason and the controller's forecast of when and where it
//! starts; filters by user, partition and account.

use sluice_proto::types::{JobRecord, JobState};

use super::page::{duration, esc, select, time};

/// The queue page's filters (its query string).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Filters {
    /// Owner's name.
    #[serde(default)]
    pub user: Option<String>,
    /// Partition.
    #[serde(default)]
    pub partition: Option<String>,
    /// Account.
    #[serde(default)]
    pub account: Option<String>,
}

impl Filters {
    fn keep(&self, r: &JobRecord) -> bool {
        let ok = |f: &Option<String>, v: &str| f.as_deref().is_none_or(|f| f.is_empty() || f == v);
        ok(&self.user, &r.user)
            && ok(&self.partition, &r.partition)
            && ok(&self.account, &r.account)
    }
}

/// The distinct values of `field` among `jobs`, sorted.
fn choices(jobs: &[JobRecord], field: fn(&JobRecord) -> &str) -> Vec<String> {
    let mut v: Vec<String> = jobs.iter().map(|r| field(r).to_string()).collect();
    v.sort();
    v.dedup();
    v.retain(|s| !s.is_empty());
    v
}

/// The job's id as the commands show it (`123`, `123_4`).
pub fn display_id(r: &JobRecord) -> String {
    match r.array {
        Some((a, t)) => format!("{a}_{t}"),
        None => r.id.to_string(),
    }
}

/// What the forecast says of a pending job: when and where it would start.
fn forecast(r: &JobRecord, now: i64) -> String {
    match (r.planned_start, &r.sched_nodes) {
        (Some(t), nodes) => {
            let when = if t <= now {
                "now".to_string()
            } else {
                format!("{} (in {})", time(t), duration(t - now))
            };
            match nodes {
                Some(n) if !n.is_empty() => format!("{when} on {}", esc(n)),
                _ => when,
            }
        }
        (None, _) => "<span class=\"muted\">not forecast</span>".into(),
    }
}

/// The page's body for `jobs` (every job the controller lists for this user), at `now`.
pub fn render(jobs: &[JobRecord], f: &Filters, now: i64) -> String {
    let mut out = String::from("<form class=\"filters\" method=\"get\" action=\"/ui\">");
    out.push_str(&select(
        "user",
        "User",
        &choices(jobs, |r| &r.user),
        f.user.as_deref(),
    ));
    out.push_str(&select(
        "partition",
        "Partition",
        &choices(jobs, |r| &r.partition),
        f.partition.as_deref(),
    ));
    out.push_str(&select(
        "account",
        "Account",
        &choices(jobs, |r| &r.account),
        f.account.as_deref(),
    ));
    out.push_str("<noscript><button>Filter</button></noscript></form>\n");
    let mut running: Vec<&JobRecord> = jobs
        .iter()
        .filter(|r| r.state == JobState::Running && f.keep(r))
        .collect();
    running.sort_by_key(|r| (r.start_time, r.id));
    let mut pending: Vec<&JobRecord> = jobs
        .iter()
        .filter(|r| r.state == JobState::Pending && f.keep(r))
        .collect();
    // In the order they would start: forecast start, then priority, then id.
    pending.sort_by_key(|r| {
        (
            r.planned_start.unwrap_or(i64::MAX),
            std::cmp::Reverse(r.priority),
            r.id,
        )
    });
    out.push_str(&format!(
        "<p id=\"counts\"><span id=\"running-count\">{}</span> running, <span id=\"pending-count\">{}</span> pending</p>\n",
        running.len(),
        pending.len()
    ));
    out.push_str("<table id=\"queue\"><thead><tr><th>Job</th><th>User</th><th>Account</th><th>Partition</th><th>Name</th><th>State</th><th>Time</th><th>Nodes, or why it waits</th><th>Starts</th></tr></thead><tbody>\n");
    for r in running.iter().chain(pending.iter()) {
        let id = display_id(r);
        let (time_cell, where_cell, start_cell) = if r.state == JobState::Running {
            (
                duration(now - r.start_time.unwrap_or(now)),
                esc(&sluice_conf::hostlist::compress(&r.nodes)),
                r.start_time.map(time).unwrap_or_default(),
            )
        } else {
            (
                duration(now - r.submit_time),
                esc(if r.reason.is_empty() {
                    "None"
                } else {
                    &r.reason
                }),
                forecast(r, now),
            )
        };
        out.push_str(&format!(
            "<tr data-job=\"{id}\"><td><a href=\"/ui/job/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"state-{state}\">{state}</td><td class=\"num\">{time_cell}</td><td>{where_cell}</td><td>{start_cell}</td></tr>\n",
            esc(&r.user),
            esc(&r.account),
            esc(&r.partition),
            esc(&r.desc.name),
            state = r.state.name(),
        ));
    }
    out.push_str("</tbody></table>\n");
    if running.is_empty() && pending.is_empty() {
        out.push_str("<p class=\"muted\">No job is running or waiting.</p>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, user: &str, state: JobState) -> JobRecord {
        let mut r = JobRecord {
            id,
            user: user.into(),
            account: format!("{user}-lab"),
            partition: "gpu".into(),
            state,
            submit_time: 1_000,
            ..Default::default()
        };
        r.desc.name = format!("train-{id}");
        r
    }

    #[test]
    fn running_jobs_come_first_then_pending_ones_in_the_order_they_would_start() {
        let mut a = job(10, "alice", JobState::Running);
        a.start_time = Some(1_100);
        a.nodes = vec!["gpu01".into(), "gpu02".into()];
        let mut b = job(11, "bob", JobState::Pending);
        b.reason = "Resources".into();
        b.planned_start = Some(5_000);
        b.sched_nodes = Some("gpu01".into());
        let mut c = job(12, "carol", JobState::Pending);
        c.reason = "Priority".into();
        c.planned_start = Some(2_000);
        let done = job(9, "dave", JobState::Completed);
        let html = render(&[b, done, c, a], &Filters::default(), 1_400);
        let order: Vec<&str> = html
            .match_indices("<tr data-job=\"")
            .map(|(i, _)| &html[i + 14..i + 16])
            .collect();
        assert_eq!(order, ["10", "12", "11"], "the completed job is not listed");
        assert!(html.contains("<span id=\"running-count\">1</span> running, <span id=\"pending-count\">2</span> pending"));
        assert!(html.contains("<td>gpu[01-02]</td>"));
        assert!(html.contains("<td>Resources</td>"));
        assert!(html.contains(&format!("{} (in 01:00:00) on gpu01", time(5_000))));
        assert!(html.contains("<td class=\"state-PENDING\">PENDING</td>"));
        assert!(
            html.contains("<td class=\"num\">00:05:00</td>"),
            "alice has run 300 s"
        );
    }

    #[test]
    fn filters_keep_only_the_chosen_user_and_offer_every_user() {
        let jobs = [
            job(1, "alice", JobState::Pending),
            job(2, "bob", JobState::Pending),
        ];
        let f = Filters {
            user: Some("bob".into()),
            ..Default::default()
        };
        let html = render(&jobs, &f, 2_000);
        assert!(html.contains("data-job=\"2\""));
        assert!(!html.contains("data-job=\"1\""));
        assert!(html.contains("<option value=\"alice\">alice</option>"));
        assert!(html.contains("<option value=\"bob\" selected>bob</option>"));
    }

    #[test]
    fn a_job_name_is_shown_as_text() {
        let mut j = job(1, "alice", JobState::Pending);
        j.desc.name = "<img src=x onerror=alert(1)>".into();
        let html = render(&[j], &Filters::default(), 2_000);
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(!html.contains("<img"));
    }
}
