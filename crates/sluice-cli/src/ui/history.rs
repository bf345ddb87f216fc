//! The history page: over the last day, the share of CPUs and of GPUs held by jobs and
//! the number of jobs waiting, drawn as charts. Everything comes from the accounting
//! records of the jobs that ran or waited in that time (when each was submitted,
//! started and ended, and what it held), so no sampling is needed and a restarted
//! controller loses nothing.

use sluice_proto::types::{JobRecord, JobState};

use super::page::esc;

/// How far back the page looks, and into how many bins.
pub const SPAN: i64 = 86_400;
/// Bins of ten minutes.
pub const BINS: usize = 144;

/// What the charts draw, per bin: averages over the bin.
#[derive(Debug, Default, PartialEq)]
pub struct History {
    /// CPUs held.
    pub cpus: Vec<f64>,
    /// GPUs held.
    pub gpus: Vec<f64>,
    /// Jobs waiting.
    pub pending: Vec<f64>,
}

/// GPUs and CPUs `r` holds while it runs.
fn held(r: &JobRecord) -> (f64, f64) {
    let cpus: u32 = r.cpus_per_node.iter().sum();
    let gpus: usize = r.gpus_per_node.iter().map(Vec::len).sum();
    (f64::from(cpus), gpus as f64)
}

/// Adds `amount` over `[a, b)` to `bins` covering `[from, from + bins·width)`, each
/// bin's share in proportion to the time it overlaps.
fn spread(bins: &mut [f64], from: i64, width: i64, a: i64, b: i64, amount: f64) {
    if b <= a || amount == 0.0 {
        return;
    }
    let first = ((a - from).max(0) / width) as usize;
    for (i, bin) in bins.iter_mut().enumerate().skip(first) {
        let (lo, hi) = (from + i as i64 * width, from + (i as i64 + 1) * width);
        if lo >= b {
            break;
        }
        let overlap = hi.min(b) - lo.max(a);
        if overlap > 0 {
            *bin += amount * overlap as f64 / width as f64;
        }
    }
}

/// The history of `jobs` over `[now - SPAN, now)`.
pub fn history(jobs: &[JobRecord], now: i64) -> History {
    let from = now - SPAN;
    let width = SPAN / BINS as i64;
    let mut h = History {
        cpus: vec![0.0; BINS],
        gpus: vec![0.0; BINS],
        pending: vec![0.0; BINS],
    };
    for r in jobs {
        // Waiting: from submission until it started (or ended without starting).
        let waited_until = r.start_time.or(r.end_time).unwrap_or(now);
        spread(
            &mut h.pending,
            from,
            width,
            r.submit_time,
            waited_until,
            1.0,
        );
        if let Some(start) = r.start_time {
            let end = r.end_time.unwrap_or(now);
            let (cpus, gpus) = held(r);
            spread(&mut h.cpus, from, width, start, end, cpus);
            spread(&mut h.gpus, from, width, start, end, gpus);
        }
    }
    h
}

/// An SVG line chart of `values` against `max` (the axis top), labelled `title`, with
/// the hours of `[now - SPAN, now)` along the bottom.
pub fn chart(id: &str, title: &str, values: &[f64], max: f64, unit: &str, now: i64) -> String {
    const W: f64 = 720.0;
    const H: f64 = 150.0;
    const LEFT: f64 = 48.0;
    const BOTTOM: f64 = 22.0;
    let max = if max > 0.0 { max } else { 1.0 };
    let step = (W - LEFT) / (values.len().max(2) - 1) as f64;
    let y = |v: f64| (H - BOTTOM) * (1.0 - (v / max).clamp(0.0, 1.0));
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", LEFT + i as f64 * step, y(*v)))
        .collect();
    let mut svg = format!(
        "<figure><figcaption>{}</figcaption><svg id=\"{id}\" data-points=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{0}\">",
        esc(title),
        values.len()
    );
    svg.push_str(&format!(
        "<rect x=\"{LEFT}\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#fff\" stroke=\"#e2e5ea\"/>",
        W - LEFT,
        H - BOTTOM
    ));
    // The hours: every six, local time.
    let from = now - SPAN;
    for k in 0..=4 {
        let t = from + k * SPAN / 4;
        let x = LEFT + (W - LEFT) * k as f64 / 4.0;
        let tm = sluice_proto::time::local(t);
        svg.push_str(&format!(
            "<text x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"{}\" fill=\"#6b7685\">{:02}:{:02}</text>",
            H - 6.0,
            match k {
                0 => "start",
                4 => "end",
                _ => "middle",
            },
            tm.tm_hour,
            tm.tm_min
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{}\" y=\"10\" font-size=\"10\" text-anchor=\"end\" fill=\"#6b7685\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" fill=\"#6b7685\">0</text>",
        LEFT - 4.0,
        esc(&format!("{} {unit}", trim(max))),
        LEFT - 4.0,
        H - BOTTOM
    ));
    if !points.is_empty() {
        let line = points.join(" ");
        let base = H - BOTTOM;
        let right = LEFT + (values.len() - 1) as f64 * step;
        svg.push_str(&format!(
            "<polygon points=\"{LEFT},{base} {line} {right:.1},{base}\" fill=\"#2f5fb3\" fill-opacity=\"0.18\"/><polyline points=\"{line}\" fill=\"none\" stroke=\"#2f5fb3\" stroke-width=\"1.5\"/>"
        ));
    }
    svg.push_str("</svg></figure>\n");
    svg
}

/// A number without a needless fraction.
fn trim(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The page's body: `jobs` of the last day, the cluster's `cpus` and `gpus`, at `now`.
pub fn render(jobs: &[JobRecord], cpus: u32, gpus: u32, now: i64) -> String {
    let h = history(jobs, now);
    let running: Vec<&JobRecord> = jobs
        .iter()
        .filter(|r| r.state == JobState::Running)
        .collect();
    let cpus_now: u32 = running
        .iter()
        .map(|r| r.cpus_per_node.iter().sum::<u32>())
        .sum();
    let gpus_now: usize = running
        .iter()
        .map(|r| r.gpus_per_node.iter().map(Vec::len).sum::<usize>())
        .sum();
    let pending_now = jobs.iter().filter(|r| r.state == JobState::Pending).count();
    let peak = h.pending.iter().copied().fold(1.0_f64, f64::max).ceil();
    let mut out = format!(
        "<p id=\"now\">Now: <span id=\"cpus-now\">{cpus_now}</span> of {cpus} CPUs and <span id=\"gpus-now\">{gpus_now}</span> of {gpus} GPUs held, <span id=\"pending-now\">{pending_now}</span> jobs waiting. The charts average each ten minutes of the last 24 hours.</p>\n"
    );
    out.push_str(&chart(
        "cpu-chart",
        "CPUs held",
        &h.cpus,
        f64::from(cpus),
        "CPUs",
        now,
    ));
    if gpus > 0 {
        out.push_str(&chart(
            "gpu-chart",
            "GPUs held",
            &h.gpus,
            f64::from(gpus),
            "GPUs",
            now,
        ));
    }
    out.push_str(&chart(
        "queue-chart",
        "Jobs waiting",
        &h.pending,
        peak,
        "jobs",
        now,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    fn ran(submit: i64, start: Option<i64>, end: Option<i64>, cpus: u32, gpus: usize) -> JobRecord {
        JobRecord {
            submit_time: submit,
            start_time: start,
            end_time: end,
            state: match (start, end) {
                (_, Some(_)) => JobState::Completed,
                (Some(_), None) => JobState::Running,
                _ => JobState::Pending,
            },
            cpus_per_node: if start.is_some() { vec![cpus] } else { vec![] },
            gpus_per_node: if start.is_some() {
                vec![(0..gpus as u32).collect()]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn each_bin_averages_what_was_held_and_waiting_during_it() {
        let bin = SPAN / BINS as i64;
        let last = NOW - bin;
        // 4 CPUs and 2 GPUs for the whole last bin; 8 CPUs for half of the one before;
        // a job waiting since half-way through the last bin.
        let jobs = [
            ran(last - 100, Some(last), None, 4, 2),
            ran(last - 2 * bin, Some(last - bin / 2), Some(last), 8, 0),
            ran(NOW - bin / 2, None, None, 0, 0),
        ];
        let h = history(&jobs, NOW);
        assert_eq!(h.cpus[BINS - 1], 4.0);
        assert_eq!(h.gpus[BINS - 1], 2.0);
        assert_eq!(h.cpus[BINS - 2], 4.0, "8 CPUs for half of it");
        assert_eq!(h.cpus[BINS - 3], 0.0);
        assert_eq!(h.pending[BINS - 1], 0.5, "waiting for half of it");
        // The first job waited 100 s of the bin before; the second a whole bin earlier.
        assert!(
            (h.pending[BINS - 2] - (100.0 / bin as f64 + 0.5)).abs() < 1e-9,
            "{:?}",
            &h.pending[BINS - 3..]
        );
    }

    #[test]
    fn a_job_from_before_the_day_counts_only_within_it() {
        let jobs = [ran(NOW - 3 * SPAN, Some(NOW - 2 * SPAN), None, 2, 0)];
        let h = history(&jobs, NOW);
        assert!(h.cpus.iter().all(|v| *v == 2.0));
        assert!(h.pending.iter().all(|v| *v == 0.0));
    }

    #[test]
    fn the_page_says_what_is_held_now_and_draws_every_bin() {
        let jobs = [
            ran(NOW - 50, Some(NOW - 40), None, 3, 1),
            ran(NOW - 10, None, None, 0, 0),
        ];
        let html = render(&jobs, 16, 4, NOW);
        assert!(html.contains("<span id=\"cpus-now\">3</span> of 16 CPUs and <span id=\"gpus-now\">1</span> of 4 GPUs held, <span id=\"pending-now\">1</span> jobs waiting"));
        assert!(html.contains(&format!("id=\"cpu-chart\" data-points=\"{BINS}\"")));
        assert!(html.contains("id=\"gpu-chart\""));
        assert!(
            !render(&jobs, 16, 0, NOW).contains("id=\"gpu-chart\""),
            "no GPUs, no GPU chart"
        );
    }
}
