//! The core's layers, checked from its own sources (see ARCHITECTURE.md, "Layers").
//!
//! Every module of `src/` belongs to one layer, and a module may use only modules of
//! its own layer or of layers below it:
//!
//! 1. **types** — data the whole core shares (time, ids, resources, the cluster, jobs,
//!    decisions, preemption settings, a job's accounting ids, the policy's settings);
//! 2. **rules** — pure functions of that data: node and GPU choice, the availability
//!    profile, the free-node index, limits, priority and fair-share;
//! 3. **scheduler** — the `Scheduler` and the passes it runs (`policy/*`, preemption,
//!    reservations, borrowing, the unavailable-nodes reason, what a main pass keeps), which take
//!    `&mut Scheduler` and are called by it: one unit split over files, the only place
//!    where modules use each other both ways;
//! 4. **explain** — read-only questions asked of a scheduler.
//!
//! Inside every layer but the scheduler's, modules form no cycle. A new module has to
//! be listed here, which is the moment to decide where it belongs.
//!
//! The check reads `use` items and `crate::`/`super::` paths (and a parent's paths into
//! its child modules), leaving out comments and `#[cfg(test)]` modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[(&str, &[&str])] = &[
    (
        "types",
        &[
            "time",
            "ids",
            "tres",
            "partition_policy",
            "placement",
            "preempt::config",
            "limits::acct",
            "policy",
            "cluster",
            "job",
            "decision",
            "observe",
        ],
    ),
    (
        "rules",
        &[
            "select",
            "gpu_pick",
            "gpus",
            "profile",
            "free_now",
            "limits",
            "limits::reason",
            "limits::usage",
            "limits::check",
            "multifactor",
            "fairshare",
            "fairshare::assoc",
            "fairshare::figures",
            "fairshare::fair_tree",
            "fairshare::classic",
            "fairshare::usage",
        ],
    ),
    (
        "scheduler",
        &[
            "scheduler",
            "policy::fcfs",
            "policy::easy",
            "policy::conservative",
            "policy::backfill",
            "preempt",
            "gang",
            "timeslice",
            "reservation",
            "reservation::usage",
            "borrow",
            "unavailable",
            "kept",
            "side_claims",
            "het",
            "partitions",
            "node_changes",
        ],
    ),
    (
        "explain",
        &[
            "explain",
            "explain::options",
            "explain::never_fits",
            "explain::node_fit",
            "explain::limit_hold",
            "explain::queue",
            "explain::forward",
            "explain::forecast",
            "explain::counterfactual",
        ],
    ),
];

/// The one layer whose modules may use each other both ways.
const SCHEDULER: usize = 2;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            // `tests/` folders hold test modules only.
            if p.file_name().is_some_and(|n| n != "tests") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `src/limits/check.rs` → `limits::check`, `src/fairshare/mod.rs` → `fairshare`;
/// `None` for `lib.rs`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    (!parts.is_empty()).then(|| parts.join("::"))
}

/// The source without line comments and without `#[cfg(test)] mod NAME { ... }`.
fn code_of(text: &str) -> String {
    let no_comments: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = no_comments.as_str();
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_inline_mod = trimmed.starts_with("mod ")
            && trimmed
                .find(['{', ';'])
                .is_some_and(|k| trimmed.as_bytes()[k] == b'{');
        if !is_inline_mod {
            rest = after;
            continue;
        }
        let open = after.find('{').expect("mod body");
        let mut depth = 0usize;
        let mut in_str = false;
        let mut escaped = false;
        let mut end = after.len();
        for (k, c) in after[open..].char_indices() {
            if in_str {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_str = true,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len() - 1];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&format!("{prefix}{p}")))
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The path segments starting at `at` (`a::b::C`), stopping at anything else.
fn path_at(code: &str, at: usize) -> Vec<&str> {
    let mut segs = Vec::new();
    let mut rest = &code[at..];
    loop {
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segs.push(&rest[..len]);
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(is_ident) => rest = r,
            _ => break,
        }
    }
    segs
}

struct Graph {
    modules: BTreeSet<String>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn resolve(&self, path: &[&str]) -> Option<String> {
        (1..=path.len())
            .rev()
            .map(|i| path[..i].join("::"))
            .find(|p| self.modules.contains(p))
    }

    /// The module `path` (as written in module `m`) names, if it is one of the core's.
    fn target(&self, m: &str, path: &[&str]) -> Option<String> {
        let own: Vec<&str> = m.split("::").collect();
        let mut base: Vec<&str> = match path.first() {
            Some(&"crate") => Vec::new(),
            Some(&"self") => own.clone(),
            Some(&"super") => own[..own.len() - 1].to_vec(),
            Some(first) if self.modules.contains(&format!("{m}::{first}")) => {
                let mut b = own.clone();
                b.push(first);
                b.extend_from_slice(&path[1..]);
                return self.resolve(&b);
            }
            _ => return None,
        };
        let mut rest = &path[1..];
        while rest.first() == Some(&"super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend_from_slice(rest);
        self.resolve(&base)
    }
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let sources: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| {
            let m = module_of(&src, f)?;
            Some((
                m,
                code_of(&std::fs::read_to_string(f).expect("read source")),
            ))
        })
        .collect();
    let mut g = Graph {
        modules: sources.iter().map(|(m, _)| m.clone()).collect(),
        edges: BTreeMap::new(),
    };
    for (m, code) in &sources {
        let mut targets = BTreeSet::new();
        // `use` items, with their trees.
        let mut from = 0;
        while let Some(i) = code[from..].find("use ") {
            let at = from + i;
            from = at + 4;
            if code[..at].ends_with(is_ident) {
                continue;
            }
            let end = code[at..].find(';').map_or(code.len(), |k| at + k);
            for p in expand(&code[at + 4..end]) {
                let segs: Vec<&str> = p.split("::").collect();
                targets.extend(g.target(m, &segs));
            }
        }
        // Paths in code: `crate::`, `super::`, and a parent's into its children.
        let children: Vec<String> = g
            .modules
            .iter()
            .filter_map(|c| c.strip_prefix(&format!("{m}::")))
            .filter(|c| !c.contains("::"))
            .map(String::from)
            .collect();
        let mut starts: Vec<String> = vec!["crate::".into(), "super::".into()];
        starts.extend(children.iter().map(|c| format!("{c}::")));
        for s in &starts {
            let mut from = 0;
            while let Some(i) = code[from..].find(s.as_str()) {
                let at = from + i;
                from = at + s.len();
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| is_ident(c) || c == ':') {
                    continue;
                }
                targets.extend(g.target(m, &path_at(code, at)));
            }
        }
        targets.remove(m);
        g.edges.insert(m.clone(), targets);
    }
    g
}

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for (i, (_, mods)) in LAYERS.iter().enumerate() {
        for m in *mods {
            assert!(out.insert(*m, i).is_none(), "{m} is listed twice");
        }
    }
    out
}

#[test]
fn every_module_has_a_layer() {
    let g = graph();
    let layers = layer_of();
    let unlisted: Vec<_> = g
        .modules
        .iter()
        .filter(|m| !layers.contains_key(m.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules without a layer in tests/layers.rs: {unlisted:?}"
    );
    let gone: Vec<_> = layers.keys().filter(|m| !g.modules.contains(**m)).collect();
    assert!(
        gone.is_empty(),
        "listed modules that do not exist: {gone:?}"
    );
}

#[test]
fn no_module_uses_a_higher_layer() {
    let g = graph();
    let layers = layer_of();
    let mut upward = Vec::new();
    for (m, targets) in &g.edges {
        let Some(&from) = layers.get(m.as_str()) else {
            continue;
        };
        for t in targets {
            if let Some(&to) = layers.get(t.as_str()) {
                if to > from {
                    upward.push(format!(
                        "{m} ({}) uses {t} ({})",
                        LAYERS[from].0, LAYERS[to].0
                    ));
                }
            }
        }
    }
    assert!(upward.is_empty(), "upward uses:\n{}", upward.join("\n"));
}

#[test]
fn no_cycles_outside_the_scheduler() {
    let g = graph();
    let layers = layer_of();
    // Depth-first search over edges inside one layer (other than the scheduler's).
    fn visit<'a>(
        m: &'a str,
        g: &'a Graph,
        same: &dyn Fn(&str, &str) -> bool,
        state: &mut BTreeMap<&'a str, bool>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(true) => return None,
            Some(false) => {
                let k = stack.iter().position(|s| *s == m).expect("on stack");
                let mut cycle: Vec<String> = stack[k..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(m, false);
        stack.push(m);
        for t in g.edges.get(m).into_iter().flatten() {
            if same(m, t) {
                if let Some(c) = visit(t, g, same, state, stack) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        state.insert(m, true);
        None
    }
    let same = |a: &str, b: &str| match (layers.get(a), layers.get(b)) {
        (Some(x), Some(y)) => x == y && *x != SCHEDULER,
        _ => false,
    };
    let mut state = BTreeMap::new();
    for m in &g.modules {
        let mut stack = Vec::new();
        if let Some(cycle) = visit(m, &g, &same, &mut state, &mut stack) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_check_sees_edges() {
    // Guards the parser: a few edges every version of the core has.
    let g = graph();
    for (from, to) in [
        ("scheduler", "profile"),
        ("profile", "select"),
        ("select", "cluster"),
        ("explain", "scheduler"),
        ("fairshare", "fairshare::fair_tree"),
    ] {
        assert!(
            g.edges[from].contains(to),
            "{from} should use {to}: {:?}",
            g.edges[from]
        );
    }
}
