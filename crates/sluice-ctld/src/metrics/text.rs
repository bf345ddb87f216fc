//! The text the metrics endpoints answer: Prometheus's text exposition format (what
//! Slurm's `metrics/openmetrics` plugin writes, served as `text/plain`), one family
//! after another in the order each was first added, each with its `# HELP` and
//! `# TYPE` lines and then its samples.
//!
//! As Slurm's plugin: a label whose value is empty is left out, a sample whose name
//! and labels repeat an earlier one's is dropped (the first is kept), labels are
//! written in key order, and a family keeps the help text it was first added with.
//! Unlike it, label values and help texts are escaped (`\` `"` and newlines), so that a
//! partition, user or account name holding one of them cannot break the text.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// A metric's type, as its `# TYPE` line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down (every one of Slurm's).
    Gauge,
    /// A count that only goes up (its name ends in `_total`).
    Counter,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// A sample's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A count or a size.
    Unsigned(u64),
    /// A time or a difference.
    Signed(i64),
    /// A ratio.
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Unsigned(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Unsigned(u64::from(v))
    }
}

impl From<u16> for Value {
    fn from(v: u16) -> Self {
        Value::Unsigned(u64::from(v))
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Unsigned(v as u64)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Signed(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Unsigned(u64::from(v))
    }
}

struct Family {
    name: String,
    help: String,
    kind: Kind,
    /// Each sample's labels and value, the labels already written out (`{k="v"}`, or
    /// empty).
    samples: Vec<(String, Value)>,
}

/// Metrics being gathered for one answer.
#[derive(Default)]
pub struct MetricSet {
    families: Vec<Family>,
    by_name: HashMap<String, usize>,
    /// Names with labels, as written, of the samples so far.
    seen: HashSet<String>,
}

impl MetricSet {
    /// An empty set.
    pub fn new() -> Self {
        MetricSet::default()
    }

    /// Adds gauge `name` without labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl Into<Value>) {
        self.add(name, help, Kind::Gauge, &[], value.into());
    }

    /// Adds gauge `name` with `labels`.
    pub fn gauge_with(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: impl Into<Value>,
    ) {
        self.add(name, help, Kind::Gauge, labels, value.into());
    }

    /// Adds counter `name` with `labels`.
    pub fn counter_with(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: impl Into<Value>,
    ) {
        self.add(name, help, Kind::Counter, labels, value.into());
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.families.is_empty()
    }

    /// The names of the families added, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.families.iter().map(|f| f.name.as_str())
    }

    fn add(&mut self, name: &str, help: &str, kind: Kind, labels: &[(&str, &str)], value: Value) {
        let mut kept: Vec<&(&str, &str)> = labels.iter().filter(|(_, v)| !v.is_empty()).collect();
        kept.sort_by_key(|(k, _)| *k);
        let mut written = String::new();
        if !kept.is_empty() {
            written.push('{');
            for (i, (k, v)) in kept.iter().enumerate() {
                if i > 0 {
                    written.push(',');
                }
                written.push_str(k);
                written.push_str("=\"");
                escape_label_value(&mut written, v);
                written.push('"');
            }
            written.push('}');
        }
        if !self.seen.insert(format!("{name}{written}")) {
            tracing::debug!("metrics: duplicate sample {name}{written} left out");
            return;
        }
        let i = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    help: help.to_string(),
                    kind,
                    samples: Vec::new(),
                });
                self.by_name
                    .insert(name.to_string(), self.families.len() - 1);
                self.families.len() - 1
            }
        };
        self.families[i].samples.push((written, value));
    }

    /// The text, every family in the order it was first added.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(
            self.families
                .iter()
                .map(|f| 40 + f.help.len() + 2 * f.name.len() + f.samples.len() * 48)
                .sum(),
        );
        for f in &self.families {
            out.push_str("# HELP ");
            out.push_str(&f.name);
            out.push(' ');
            escape_help(&mut out, &f.help);
            out.push_str("\n# TYPE ");
            out.push_str(&f.name);
            out.push(' ');
            out.push_str(f.kind.name());
            out.push('\n');
            for (labels, value) in &f.samples {
                out.push_str(&f.name);
                out.push_str(labels);
                out.push(' ');
                write_value(&mut out, *value);
                out.push('\n');
            }
        }
        out
    }
}

/// `v` as a label value is written between its quotes: `\`, `"` and line feeds
/// escaped.
fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// `h` as a `# HELP` line holds it: `\` and line feeds escaped.
fn escape_help(out: &mut String, h: &str) {
    for c in h.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn write_value(out: &mut String, v: Value) {
    let _ = match v {
        Value::Unsigned(u) => write!(out, "{u}"),
        Value::Signed(i) => write!(out, "{i}"),
        Value::Float(f) if f.is_nan() => write!(out, "NaN"),
        Value::Float(f) if f.is_infinite() => {
            write!(out, "{}", if f > 0.0 { "+Inf" } else { "-Inf" })
        }
        Value::Float(f) => write!(out, "{f}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_in_order_with_help_type_and_samples() {
        let mut m = MetricSet::new();
        m.gauge_with(
            "slurm_node_cpus",
            "Total number of cpus in the node",
            &[("node", "n1")],
            4u32,
        );
        m.gauge_with(
            "slurm_node_cpus_alloc",
            "Allocated cpus in the node",
            &[("node", "n1")],
            1u32,
        );
        m.gauge_with(
            "slurm_node_cpus",
            "ignored: the first help stays",
            &[("node", "n2")],
            8u32,
        );
        m.gauge("slurm_nodes", "Total number of nodes", 2u16);
        m.counter_with(
            "sluice_audit_events_total",
            "Audit events",
            &[("kind", "started")],
            3u64,
        );
        assert_eq!(
            m.render(),
            "# HELP slurm_node_cpus Total number of cpus in the node\n\
             # TYPE slurm_node_cpus gauge\n\
             slurm_node_cpus{node=\"n1\"} 4\n\
             slurm_node_cpus{node=\"n2\"} 8\n\
             # HELP slurm_node_cpus_alloc Allocated cpus in the node\n\
             # TYPE slurm_node_cpus_alloc gauge\n\
             slurm_node_cpus_alloc{node=\"n1\"} 1\n\
             # HELP slurm_nodes Total number of nodes\n\
             # TYPE slurm_nodes gauge\n\
             slurm_nodes 2\n\
             # HELP sluice_audit_events_total Audit events\n\
             # TYPE sluice_audit_events_total counter\n\
             sluice_audit_events_total{kind=\"started\"} 3\n"
        );
        assert_eq!(
            m.names().collect::<Vec<_>>(),
            [
                "slurm_node_cpus",
                "slurm_node_cpus_alloc",
                "slurm_nodes",
                "sluice_audit_events_total"
            ]
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut m = MetricSet::new();
        m.gauge_with(
            "slurm_partition_jobs",
            "Jobs \\ in \"this\"\npartition",
            &[("partition", "a\"b\\c\nd")],
            1u32,
        );
        assert_eq!(
            m.render(),
            "# HELP slurm_partition_jobs Jobs \\\\ in \"this\"\\npartition\n\
             # TYPE slurm_partition_jobs gauge\n\
             slurm_partition_jobs{partition=\"a\\\"b\\\\c\\nd\"} 1\n"
        );
        // Anything else, UTF-8 included, is written as it is.
        let mut m = MetricSet::new();
        m.gauge_with("x", "h", &[("user", "jürgen {x}=,")], 1u32);
        assert!(m.render().contains("x{user=\"jürgen {x}=,\"} 1\n"));
    }

    #[test]
    fn labels_sorted_empty_ones_left_out_duplicates_dropped() {
        let mut m = MetricSet::new();
        m.gauge_with("g", "h", &[("user", "u"), ("node", "n"), ("job", "")], 1u32);
        // The same sample again: the first stays.
        m.gauge_with("g", "h", &[("node", "n"), ("user", "u")], 2u32);
        // An empty value: as if no label (Slurm leaves it out), so this one is kept...
        m.gauge_with("g", "h", &[("node", "")], 3u32);
        // ...and this one is a duplicate of it.
        m.gauge_with("g", "h", &[], 4u32);
        assert_eq!(
            m.render(),
            "# HELP g h\n# TYPE g gauge\ng{node=\"n\",user=\"u\"} 1\ng 3\n"
        );
    }

    #[test]
    fn values_as_numbers() {
        let mut m = MetricSet::new();
        m.gauge_with("v", "h", &[("k", "u64max")], u64::MAX);
        m.gauge_with("v", "h", &[("k", "neg")], -5i64);
        m.gauge_with("v", "h", &[("k", "half")], 0.5f64);
        m.gauge_with("v", "h", &[("k", "whole")], 2.0f64);
        m.gauge_with("v", "h", &[("k", "nan")], f64::NAN);
        m.gauge_with("v", "h", &[("k", "inf")], f64::INFINITY);
        m.gauge_with("v", "h", &[("k", "minf")], f64::NEG_INFINITY);
        m.gauge_with("v", "h", &[("k", "yes")], true);
        let text = m.render();
        let values: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(
            values,
            [
                "18446744073709551615",
                "-5",
                "0.5",
                "2",
                "NaN",
                "+Inf",
                "-Inf",
                "1"
            ]
        );
    }

    #[test]
    fn nothing_added_is_an_empty_answer() {
        let m = MetricSet::new();
        assert!(m.is_empty());
        assert_eq!(m.render(), "");
    }
}
