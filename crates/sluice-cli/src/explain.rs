//! `sluice explain JOBID [--json]`: the whole answer to "why does my job wait?" — every
//! cause with its numbers, how each node stands, its priority and place in the queue,
//! when and where it is expected to start and which running jobs it waits for, and the
//! changes that would start it sooner. For a job that ran: its story.

use clap::Args;
use sluice_proto::explain::{Explanation, SuggestionSearch};
use sluice_proto::time::timestamp;

use crate::slurm::common::{controller, describe, parse_job_arg};

/// Options of `sluice explain`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The job (`123`, or an array task `123_4`).
    pub job: String,
    /// The explanation as one JSON document, for tools.
    #[arg(long)]
    pub json: bool,
}

/// `1 job`, `2 jobs`.
fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A time as Slurm prints one (`2026-11-30T14:00:00`), with "now" when it is now.
fn when(t: i64, now: i64) -> String {
    if t <= now {
        format!("now ({})", timestamp(t))
    } else {
        timestamp(t)
    }
}

/// Appends `s` and a newline to `out`.
fn push_line(out: &mut String, s: String) {
    out.push_str(&s);
    out.push('\n');
}

/// The explanation as text, one fact per line, but for the suggestions and the story
/// of its runs: state, causes, resources, priority and queue, expected start.
pub fn render_head(e: &Explanation) -> String {
    let mut out = String::new();
    let mut line = |s: String| push_line(&mut out, s);
    let head = if e.state == "PENDING" {
        format!("Job {}: PENDING ({})", e.display_id, e.reason)
    } else {
        format!("Job {}: {}", e.display_id, e.state)
    };
    line(head);
    if !e.causes.is_empty() {
        line("Why it waits:".into());
        for c in &e.causes {
            line(format!("  {}: {}", c.reason, c.text));
        }
    }
    if let Some(r) = &e.resources {
        line("Resources:".into());
        if let Some(never) = &r.never {
            line(format!("  it can never start in its partition: {never}"));
        }
        let width = r.nodes.iter().map(|n| n.nodes.len()).max().unwrap_or(0);
        for n in &r.nodes {
            line(format!("  {:<width$}  {}", n.nodes, n.text));
        }
    }
    if let Some(p) = &e.priority {
        let mut return_queue = true;
        let factors = if p.factors.is_empty() || p.value == 0 {
            String::new()
        } else {
            let f: Vec<String> = p
                .factors
                .iter()
                .map(|(name, v)| format!("{name} {}", v.round() as i64))
                .collect();
            format!(" ({})", f.join(", "))
        };
        line(format!("Priority: {}{factors}", p.value));
        if p.rank == 0 {
            // Not in the scheduler's queue yet (held, or waiting on a dependency).
            return_queue = false;
        }
        let ahead = if p.ahead == 0 {
            "no job ahead of it".to_string()
        } else {
            format!(
                "{} ahead of it asking {}, {}, {} together",
                plural(u64::from(p.ahead), "job"),
                plural(p.ahead_cpus, "CPU"),
                plural(p.ahead_gpus, "GPU"),
                plural(p.ahead_nodes, "node")
            )
        };
        let waiting = match p.waiting_ahead {
            0 => String::new(),
            n => format!(
                "; {} ahead of it {} on a limit or time of {} own",
                plural(u64::from(n), "more job"),
                if n == 1 { "waits" } else { "wait" },
                if n == 1 { "its" } else { "their" }
            ),
        };
        if return_queue {
            line(format!(
                "Queue: {} of {} queued in its partition (held and dependent jobs are not queued); {ahead}{waiting}",
                p.rank, p.of
            ));
        }
    }
    if let Some(x) = &e.expected {
        line(format!(
            "Expected start: {} on {} ({} pass)",
            when(x.start, e.now),
            x.nodes,
            x.pass
        ));
        match x.planned.filter(|_| x.plan_differs) {
            Some(t) => line(format!(
                "  squeue --start shows {}: the controller's last forecast (made before the latest change) or the backfill plan",
                timestamp(t)
            )),
            None if x.plan_differs => line(
                "  squeue --start shows N/A: neither the controller's last forecast nor the backfill plan starts it yet"
                    .into(),
            ),
            None => {}
        }
        if !x.waits_for.is_empty() {
            line("  when these running jobs reach their time limits:".into());
            for w in &x.waits_for {
                let who = match (w.job_id, &w.user) {
                    (Some(id), Some(u)) => format!("job {id} ({u})"),
                    (Some(id), None) => format!("job {id}"),
                    _ => "a job of another user".to_string(),
                };
                line(format!("    {who} at {}", timestamp(w.end)));
            }
        }
    }
    match (&e.no_start, e.not_before) {
        (Some(_), Some(t)) => line(format!(
            "Expected start: not before {}: the simulation ran out of passes there (a lower bound)",
            timestamp(t)
        )),
        (Some(why), None) => line(format!("Expected start: none: {why}")),
        _ => {}
    }
    out
}

/// What would start it sooner, and whether the search for that was complete.
pub fn render_sooner(e: &Explanation) -> String {
    let mut out = String::new();
    let mut line = |s: String| push_line(&mut out, s);
    let cut = e.suggestion_search == SuggestionSearch::Cut;
    if !e.suggestions.is_empty() {
        line("What would start it sooner:".into());
        let width = e
            .suggestions
            .iter()
            .map(|s| s.option.len())
            .max()
            .unwrap_or(0);
        for s in &e.suggestions {
            line(format!(
                "  {:<width$}  starts {} on {}: {}",
                s.option,
                when(s.start, e.now),
                s.nodes,
                s.text
            ));
        }
        if cut {
            line("  (the search ran out of simulated passes before trying every change: others may help too)".into());
        }
    } else if cut {
        line("What would start it sooner: nothing found before the search ran out of simulated passes (a change may still help)".into());
    } else if e.suggestion_search == SuggestionSearch::Complete {
        line(match e.not_before {
            None => "What would start it sooner: no change to its request would.".into(),
            Some(t) => format!(
                "What would start it sooner: no change to its request starts it by {}, as far as the simulation looked",
                timestamp(t)
            ),
        });
    }
    out
}

/// For a job that started: its runs.
pub fn render_history(e: &Explanation) -> String {
    let mut out = String::new();
    let mut line = |s: String| push_line(&mut out, s);
    if !e.history.is_empty() {
        line(if e.history.iter().any(|h| h.starts_with("started ")) {
            "Its run:".into()
        } else {
            "What happened:".into()
        });
        for h in &e.history {
            line(format!("  {h}"));
        }
    }
    out
}

/// Runs `sluice explain`.
pub fn run(args: ExplainArgs) -> i32 {
    let me = "sluice explain";
    // A job or one array task (`123_4`); not a step, not a range of tasks.
    let Some(ids) =
        parse_job_arg(&args.job).filter(|ids| ids.len() == 1 && !args.job.contains('.'))
    else {
        eprintln!("{me}: error: Invalid job id specified: {}", args.job);
        return 1;
    };
    let (job, task) = ids[0];
    let path = match task {
        Some(t) => format!("/v1/jobs/{job}/explain?task={t}"),
        None => format!("/v1/jobs/{job}/explain"),
    };
    // As text, everything but the suggestions comes first, from the controller's
    // forecast (milliseconds); the suggestions, each a simulation of its own, follow.
    let quick = format!(
        "{path}{}suggest=false",
        if path.contains('?') { '&' } else { '?' }
    );
    // Written with errors ignored: a reader that stops early (`| head`) is no failure.
    let out = |text: &str| {
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    };
    let first = if args.json { &path } else { &quick };
    match controller().get::<Explanation>(first) {
        Ok(e) if args.json => {
            out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&e).expect("serializable")
            ));
            0
        }
        Ok(e) => {
            if !args.job.contains('_') && e.display_id.contains('_') {
                // An array's own id names one of its records, as in Slurm.
                let array = e.display_id.split('_').next().unwrap_or_default();
                out(&format!(
                    "(job {} is array task {} as Slurm numbers them; `sluice explain {array}_N` for another task)\n",
                    args.job, e.display_id
                ));
            }
            out(&render_head(&e));
            if e.suggestion_search == SuggestionSearch::Skipped {
                out(&sooner(&path, &e));
            } else {
                out(&render_sooner(&e));
            }
            out(&render_history(&e));
            if e.state != "PENDING" {
                // Its whole story, from the audit trail.
                let query = sluice_proto::audit::AuditQuery {
                    job: Some(e.job_id),
                    ..Default::default()
                };
                let path = format!("/v1/audit?{}", query.to_query_string());
                if let Ok(reply) = controller().get::<sluice_proto::audit::AuditReply>(&path) {
                    if !reply.events.is_empty() {
                        let story = crate::audit::story(&reply, false, &crate::audit::user_name);
                        let mut text = format!("Its story (sluice audit {}):\n", e.job_id);
                        for l in story.lines() {
                            text.push_str(&format!("  {l}\n"));
                        }
                        out(&text);
                    }
                }
            }
            0
        }
        Err(e) => {
            let why = describe(&e);
            // The same words as for an id that does not parse.
            match why.as_str() {
                "Invalid job id specified" => eprintln!("{me}: error: {why}: {}", args.job),
                _ => eprintln!("{me}: error: {why}"),
            }
            1
        }
    }
}

/// The suggestions for the job `quick` explained, asked for at `path`. The queue may
/// have changed between the two answers: then the start the suggestions beat is said.
fn sooner(path: &str, quick: &Explanation) -> String {
    match controller().get::<Explanation>(path) {
        Ok(e) if e.state == "PENDING" => {
            let start = |x: &Explanation| x.expected.as_ref().map(|x| x.start);
            let mut text = String::new();
            if start(&e) != start(quick) && e.suggestion_search != SuggestionSearch::None {
                text = match start(&e) {
                    Some(t) => format!(
                        "(the queue changed meanwhile: it is now expected to start {})\n",
                        when(t, e.now)
                    ),
                    None => "(the queue changed meanwhile: no start is expected now)\n".into(),
                };
            }
            text + &render_sooner(&e)
        }
        Ok(e) => format!("(job {} is {} now)\n", e.display_id, e.state),
        Err(err) => format!(
            "What would start it sooner: not known ({})\n",
            describe(&err)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::explain::{Expected, Suggestion};

    /// A pending job explained at `now` 1000, expected at 4600 unless `until` is set.
    fn pending(search: SuggestionSearch, until: Option<i64>, suggest: bool) -> Explanation {
        Explanation {
            state: "PENDING".into(),
            now: 1000,
            expected: until.is_none().then(|| Expected {
                start: 4600,
                ..Default::default()
            }),
            suggestions: if suggest {
                vec![Suggestion {
                    option: "--time=10".into(),
                    text: "a time limit of 00:10:00 or less (it asks 00:15:00)".into(),
                    start: 1600,
                    nodes: "n1".into(),
                }]
            } else {
                Vec::new()
            },
            suggestion_search: search,
            not_before: until,
            ..Default::default()
        }
    }

    #[test]
    fn the_suggestions_say_how_far_their_search_went() {
        let t = |x: i64| timestamp(x);
        let cases = [
            (SuggestionSearch::Skipped, None, false, String::new()),
            (SuggestionSearch::None, None, false, String::new()),
            (
                SuggestionSearch::Complete,
                None,
                false,
                "What would start it sooner: no change to its request would.\n".into(),
            ),
            (
                SuggestionSearch::Complete,
                Some(9000),
                false,
                format!("What would start it sooner: no change to its request starts it by {}, as far as the simulation looked\n", t(9000)),
            ),
            (
                SuggestionSearch::Cut,
                Some(9000),
                false,
                "What would start it sooner: nothing found before the search ran out of simulated passes (a change may still help)\n".into(),
            ),
            (
                SuggestionSearch::Cut,
                None,
                true,
                format!(
                    "What would start it sooner:\n  --time=10  starts {} on n1: a time limit of 00:10:00 or less (it asks 00:15:00)\n  (the search ran out of simulated passes before trying every change: others may help too)\n",
                    t(1600)
                ),
            ),
        ];
        for (search, until, suggest, want) in cases {
            assert_eq!(
                render_sooner(&pending(search, until, suggest)),
                want,
                "{search:?}"
            );
        }
    }

    #[test]
    fn a_job_the_simulation_did_not_start_says_not_before_when_it_ran_out_of_passes() {
        let mut e = pending(SuggestionSearch::Complete, Some(9000), false);
        e.no_start = Some(
            "it does not start before the simulation's pass budget runs out (a lower bound)".into(),
        );
        assert_eq!(
            render_head(&e),
            format!(
                "Job : PENDING ()\nExpected start: not before {}: the simulation ran out of passes there (a lower bound)\n",
                timestamp(9000)
            )
        );
        e.not_before = None;
        e.no_start = Some("it can never start: no node has 16 GPUs; the largest has 8".into());
        assert_eq!(
            render_head(&e),
            "Job : PENDING ()\nExpected start: none: it can never start: no node has 16 GPUs; the largest has 8\n"
        );
    }
}
