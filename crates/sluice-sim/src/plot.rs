//! Plots of a replay: queue length and utilisation over time, as SVG.
//!
//! One SVG image, two panels stacked vertically over the same time axis: the queue
//! length (jobs pending) on top, the utilisation (busy processors / total processors,
//! 0..1) below. Time runs from the first sample, in days when the replay spans more
//! than two days, else in hours.
//!
//! Samples are step functions: a sample's value holds until the next sample. Long
//! replays are downsampled (see [`downsample`]) so that each curve has at most
//! [`MAX_VERTICES`] vertices whatever the length of the trace, without losing peaks.

use std::error::Error;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use sluice_core::Time;

use crate::error::SimError;
use crate::fairshare::FairnessReport;
use crate::replay::Replay;

/// Most vertices drawn per curve (each step of a step function draws as two vertices).
pub const MAX_VERTICES: usize = 2000;

/// Most steps kept per curve after downsampling.
const MAX_STEPS: usize = MAX_VERTICES / 2;

/// Size of the image, pixels.
const SIZE: (u32, u32) = (1200, 800);

const DAY: f64 = 86_400.0;
const HOUR: f64 = 3_600.0;

/// Draws queue length and utilisation over time into an SVG file at `path`, titled
/// with the trace name `title` and the policy's name.
///
/// Errors: a replay without samples is an error ([`SimError::Machine`], "nothing to
/// plot") rather than an empty picture, and no file is written; failing to write the
/// file is [`SimError::Io`]; a drawing error of the plotting library is
/// [`SimError::Machine`] naming the file. With `total_cpus == 0` the utilisation is
/// drawn as 0.
pub fn draw(path: &Path, replay: &Replay, title: &str, policy: &str) -> Result<(), SimError> {
    if replay.samples.is_empty() {
        return Err(SimError::Machine(format!(
            "{}: nothing to plot (the replay recorded no samples)",
            path.display()
        )));
    }
    let svg = render(replay, title, policy)
        .map_err(|e| SimError::Machine(format!("{}: cannot draw the plot: {e}", path.display())))?;
    std::fs::write(path, svg).map_err(|e| SimError::io(path, e))
}

/// Renders the plot as SVG text. `replay.samples` must not be empty.
fn render(replay: &Replay, title: &str, policy: &str) -> Result<String, Box<dyn Error>> {
    let samples = &replay.samples;
    let t0 = samples[0].t;
    let span = samples[samples.len() - 1].t - t0;
    let (unit, unit_name) = if span as f64 > 2.0 * DAY {
        (DAY, "days")
    } else {
        (HOUR, "hours")
    };
    let x_max = if span > 0 { span as f64 / unit } else { 1.0 };
    let x_desc = format!("time since first event ({unit_name})");

    let pending: Vec<(Time, f64)> = samples.iter().map(|s| (s.t, s.pending as f64)).collect();
    let util: Vec<(Time, f64)> = samples
        .iter()
        .map(|s| {
            let u = if replay.total_cpus == 0 {
                0.0
            } else {
                s.busy_cpus as f64 / replay.total_cpus as f64
            };
            (s.t, u)
        })
        .collect();
    let pending: Vec<(f64, u64)> = step_vertices(&downsample(&pending, MAX_STEPS), t0, unit, x_max)
        .into_iter()
        .map(|(x, q)| (x, q as u64))
        .collect();
    let util = step_vertices(&downsample(&util, MAX_STEPS), t0, unit, x_max);
    let q_max = samples.iter().map(|s| s.pending).max().unwrap_or(0) as u64;
    let q_top = q_max + q_max / 20 + 1;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            &format!("{title} (policy: {policy})"),
            ("sans-serif", 26).into_font(),
        )?;
        let panels = root.split_evenly((2, 1));

        let mut chart = ChartBuilder::on(&panels[0])
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(0f64..x_max, 0u64..q_top)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .x_desc(x_desc.as_str())
            .y_desc("pending jobs")
            .draw()?;
        chart.draw_series(LineSeries::new(pending, BLUE.stroke_width(1)))?;

        let mut chart = value_panel(
            &panels[1],
            x_max,
            1.0,
            &x_desc,
            "utilisation (busy / total CPUs)",
        )?;
        chart.draw_series(LineSeries::new(util, RED.stroke_width(1)))?;

        root.present()?;
    }
    Ok(svg)
}

/// A panel with time (0..`x_max`) across and a real value (0..`y_max`) up, its mesh and
/// axis descriptions drawn.
fn value_panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    x_max: f64,
    y_max: f64,
    x_desc: &str,
    y_desc: &str,
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn Error>,
> {
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()?;
    Ok(chart)
}

/// How many of the largest accounts the fairness plot draws.
const ACCOUNTS_DRAWN: usize = 5;

/// Draws fairness over time into an SVG file at `path`: Jain's index of decayed usage
/// share / normalized share over accounts on top; below, the share of decayed usage of
/// the [`ACCOUNTS_DRAWN`] largest accounts, each with its normalized share as a dashed
/// line of the same colour.
///
/// Errors: no samples ([`SimError::Machine`], "nothing to plot"; no file written), an
/// unwritable file ([`SimError::Io`]), a drawing error ([`SimError::Machine`]).
pub fn draw_fairness(path: &Path, report: &FairnessReport, title: &str) -> Result<(), SimError> {
    if report.samples.is_empty() {
        return Err(SimError::Machine(format!(
            "{}: nothing to plot (the replay recorded no fairness samples)",
            path.display()
        )));
    }
    let svg = render_fairness(report, title)
        .map_err(|e| SimError::Machine(format!("{}: cannot draw the plot: {e}", path.display())))?;
    std::fs::write(path, svg).map_err(|e| SimError::io(path, e))
}

fn render_fairness(report: &FairnessReport, title: &str) -> Result<String, Box<dyn Error>> {
    let samples = &report.samples;
    let t0 = samples[0].t;
    let span = samples[samples.len() - 1].t - t0;
    let x_max = if span > 0 { span as f64 / DAY } else { 1.0 };
    let x = |t: Time| (t - t0) as f64 / DAY;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            &format!(
                "{title}: fair-share over time (Jain's index {:.3} overall)",
                report.jain
            ),
            ("sans-serif", 24).into_font(),
        )?;
        let panels = root.split_evenly((2, 1));
        let x_desc = "time since first event (days)";
        let mut chart = value_panel(
            &panels[0],
            x_max,
            1.05,
            x_desc,
            "Jain's index (usage / share)",
        )?;
        let jain: Vec<(Time, f64)> = samples.iter().map(|s| (s.t, s.jain)).collect();
        chart.draw_series(LineSeries::new(
            step_vertices(&downsample(&jain, MAX_STEPS), t0, DAY, x_max),
            BLUE.stroke_width(1),
        ))?;

        let drawn: Vec<(usize, &crate::fairshare::AccountFigures)> = report
            .account_columns()
            .into_iter()
            .take(ACCOUNTS_DRAWN)
            .collect();
        let top = drawn
            .iter()
            .flat_map(|(col, a)| {
                samples
                    .iter()
                    .map(move |s| s.usage_share[*col])
                    .chain(std::iter::once(a.norm_shares))
            })
            .fold(0.0f64, f64::max)
            .max(0.01);
        let mut chart = value_panel(
            &panels[1],
            x_max,
            top * 1.05,
            x_desc,
            "share of decayed usage",
        )?;
        for (k, (col, a)) in drawn.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            let pts: Vec<(Time, f64)> =
                samples.iter().map(|s| (s.t, s.usage_share[*col])).collect();
            chart
                .draw_series(LineSeries::new(
                    step_vertices(&downsample(&pts, MAX_STEPS), t0, DAY, x_max),
                    colour.stroke_width(1),
                ))?
                .label(format!("{} (share {:.3})", a.account, a.norm_shares))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
            let share = a.norm_shares;
            chart.draw_series(DashedLineSeries::new(
                vec![(x(t0), share), (x_max, share)],
                6,
                4,
                colour.stroke_width(1),
            ))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Downsamples a step function (`points` in time order, each value holding until the
/// next point) to at most `max_steps` steps, keeping every peak and every trough.
///
/// With at most `max_steps` points, the function is returned exactly. Otherwise the
/// time span is cut into `(max_steps - 1) / 3` equal buckets, and of the points in each
/// bucket only these are kept, at their own times: the first point reaching the
/// bucket's minimum, the first reaching its maximum, and the bucket's last point (its
/// value holds past the bucket, until the next bucket with points); the series' first
/// point is kept too. So the highest queue and the busiest (and idlest) moments all
/// survive, whereas a per-bucket mean would flatten a short burst; what is lost are
/// intermediate values, replaced by a neighbouring value of the same bucket, which
/// moves nothing by more than a bucket (a few pixels at the image's width).
///
/// In both cases a point whose value equals the previous kept value is dropped, as it
/// changes nothing in a step function.
pub fn downsample(points: &[(Time, f64)], max_steps: usize) -> Vec<(Time, f64)> {
    fn push(out: &mut Vec<(Time, f64)>, p: (Time, f64)) {
        if out.last().map(|last| last.1) != Some(p.1) {
            out.push(p);
        }
    }
    let mut out = Vec::new();
    let (Some(&(t0, _)), Some(&(t_last, _))) = (points.first(), points.last()) else {
        return out;
    };
    debug_assert!(
        points.windows(2).all(|w| w[0].0 <= w[1].0),
        "points in time order"
    );
    if points.len() <= max_steps {
        for &p in points {
            push(&mut out, p);
        }
        return out;
    }
    let buckets = (max_steps.saturating_sub(1) / 3).max(1) as i128;
    let width = (t_last - t0) as i128 + 1;
    let bucket_of = |t: Time| (t - t0) as i128 * buckets / width;
    push(&mut out, points[0]);
    let mut i = 0;
    while i < points.len() {
        let b = bucket_of(points[i].0);
        let len = points[i..]
            .iter()
            .position(|p| bucket_of(p.0) != b)
            .unwrap_or(points.len() - i);
        let chunk = &points[i..i + len];
        let (mut lo, mut hi) = (0, 0);
        for (k, p) in chunk.iter().enumerate() {
            if p.1 < chunk[lo].1 {
                lo = k;
            }
            if p.1 > chunk[hi].1 {
                hi = k;
            }
        }
        let mut keep = [lo, hi, len - 1];
        keep.sort_unstable();
        for (n, &k) in keep.iter().enumerate() {
            if n == 0 || keep[n - 1] != k {
                push(&mut out, chunk[k]);
            }
        }
        i += len;
    }
    out
}

/// The polyline of a step function: each step holds its value until the next step's
/// time, the last one until `x_max` (if that is later). Times become `(t - t0) / unit`.
fn step_vertices(steps: &[(Time, f64)], t0: Time, unit: f64, x_max: f64) -> Vec<(f64, f64)> {
    let x = |t: Time| (t - t0) as f64 / unit;
    let mut out = Vec::with_capacity(2 * steps.len());
    for (n, &(t, v)) in steps.iter().enumerate() {
        if n > 0 {
            out.push((x(t), steps[n - 1].1));
        }
        out.push((x(t), v));
    }
    if let Some(&(t, v)) = steps.last() {
        if x_max > x(t) {
            out.push((x_max, v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::Sample;

    fn temp_svg(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("sluice-plot-{}-{name}.svg", std::process::id()))
    }

    fn replay(samples: Vec<Sample>, total_cpus: u64) -> Replay {
        Replay {
            samples,
            total_cpus,
            ..Default::default()
        }
    }

    /// The SVG's polylines as (stroke colour, number of vertices), leaving out the
    /// black ones (axes and ticks) and the faint grid lines.
    fn curves(svg: &str) -> Vec<(String, usize)> {
        let attr = |el: &str, name: &str| {
            let start = el.find(&format!(" {name}=\"")).expect("attribute") + name.len() + 3;
            let end = start + el[start..].find('"').expect("closing quote");
            el[start..end].to_string()
        };
        svg.split("<polyline")
            .skip(1)
            .map(|el| &el[..el.find("/>").expect("closed")])
            .filter(|el| attr(el, "stroke") != "#000000" && attr(el, "opacity") == "1")
            .map(|el| {
                (
                    attr(el, "stroke"),
                    attr(el, "points").split_whitespace().count(),
                )
            })
            .collect()
    }

    #[test]
    fn downsample_keeps_small_inputs_exactly() {
        let pts = [(0, 1.0), (5, 1.0), (6, 2.0), (9, 0.0)];
        assert_eq!(downsample(&pts, 4), vec![(0, 1.0), (6, 2.0), (9, 0.0)]);
        assert_eq!(downsample(&[], 4), vec![]);
    }

    #[test]
    fn downsample_keeps_min_max_and_last_per_bucket() {
        // 7 steps at most: (7 - 1) / 3 = 2 buckets over t = 0..=7, i.e. 0..=3 and 4..=7.
        let pts = [
            (0, 1.0),
            (1, 5.0),
            (2, 2.0),
            (3, 0.0),
            (4, 3.0),
            (5, 3.0),
            (6, 4.0),
            (7, 4.0),
        ];
        // Bucket 0: first (1 at 0), max (5 at 1), min and last (0 at 3).
        // Bucket 1: min (3 at 4), max (4 at 6); its last (4 at 7) repeats the value.
        assert_eq!(
            downsample(&pts, 7),
            vec![(0, 1.0), (1, 5.0), (3, 0.0), (4, 3.0), (6, 4.0)]
        );
    }

    #[test]
    fn step_vertices_hold_values_until_the_next_step() {
        let v = step_vertices(&[(100, 1.0), (3700, 2.0)], 100, HOUR, 2.0);
        assert_eq!(v, vec![(0.0, 1.0), (1.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
        let v = step_vertices(&[(100, 1.0), (3700, 2.0)], 100, HOUR, 1.0);
        assert_eq!(v, vec![(0.0, 1.0), (1.0, 1.0), (1.0, 2.0)]);
    }

    #[test]
    fn draws_two_panels_with_title() {
        let samples = vec![
            Sample {
                t: 0,
                pending: 3,
                busy_cpus: 8,
            },
            Sample {
                t: 600,
                pending: 7,
                busy_cpus: 16,
            },
            Sample {
                t: 3600,
                pending: 0,
                busy_cpus: 4,
            },
            Sample {
                t: 7200,
                pending: 2,
                busy_cpus: 0,
            },
        ];
        let path = temp_svg("small");
        draw(
            &path,
            &replay(samples, 16),
            "anl-intrepid.swf",
            "fifo-backfill",
        )
        .unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.contains("anl-intrepid.swf (policy: fifo-backfill)"));
        assert!(svg.contains("pending jobs"));
        assert!(svg.contains("utilisation (busy / total CPUs)"));
        assert!(svg.contains("time since first event (hours)"));
        // Each step draws two vertices, less one as the last step ends the plot: 4 steps,
        // 7 vertices per curve; queue length in blue, utilisation in red.
        assert_eq!(
            curves(&svg),
            vec![("#0000FF".to_string(), 7), ("#FF0000".to_string(), 7)]
        );
    }

    #[test]
    fn long_replays_are_bounded_and_keep_peaks() {
        // 100 000 samples a minute apart (about 69 days) with one short burst.
        let samples: Vec<Sample> = (0..100_000u32)
            .map(|i| Sample {
                t: i as Time * 60,
                pending: if i == 54_321 { 5_000 } else { (i * 7919) % 100 },
                busy_cpus: ((i as u64 * 104_729) % 97) + 1,
            })
            .collect();
        let pending: Vec<(Time, f64)> = samples.iter().map(|s| (s.t, s.pending as f64)).collect();
        let kept = downsample(&pending, MAX_STEPS);
        assert!(kept.len() <= MAX_STEPS);
        assert!(kept.contains(&(54_321 * 60, 5_000.0)));
        assert_eq!(kept.iter().map(|p| p.1).fold(f64::MAX, f64::min), 0.0);

        let path = temp_svg("long");
        draw(&path, &replay(samples, 100), "long trace", "sjf").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("long trace (policy: sjf)"));
        assert!(svg.contains("time since first event (days)"));
        let curves = curves(&svg);
        assert_eq!(curves.len(), 2, "{curves:?}");
        assert!(
            curves.iter().all(|c| c.1 > 100 && c.1 <= MAX_VERTICES),
            "{curves:?}"
        );
    }

    #[test]
    fn empty_replay_is_an_error_and_writes_nothing() {
        let path = temp_svg("empty");
        let err = draw(&path, &replay(Vec::new(), 16), "t", "p").unwrap_err();
        assert!(
            matches!(&err, SimError::Machine(m) if m.contains("nothing to plot")),
            "{err}"
        );
        assert!(!path.exists());
    }

    #[test]
    fn unwritable_path_is_an_io_error() {
        let dir = temp_svg("missing-dir");
        let path = dir.join("plot.svg");
        let samples = vec![Sample {
            t: 0,
            pending: 1,
            busy_cpus: 1,
        }];
        let err = draw(&path, &replay(samples, 1), "t", "p").unwrap_err();
        assert!(
            matches!(&err, SimError::Io { path: p, .. } if *p == path),
            "{err}"
        );
    }
}
