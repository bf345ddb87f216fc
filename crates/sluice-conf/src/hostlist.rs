//! Slurm hostlist expressions: `node[01-04,7]`, `gpu[1-2]-ib[0-1]`, `a,b[1-3]`.
//!
//! [`expand`] turns an expression into host names in order; [`compress`] turns names
//! back into the shortest expression Slurm would print (runs of consecutive numbers with
//! the same zero-padding become ranges; names are grouped by their prefix and suffix).

use std::fmt;
use std::fmt::Write as _;

use rustc_hash::{FxHashMap, FxHashSet};

/// A malformed hostlist expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostlistError {
    /// The expression.
    pub expr: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for HostlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid hostlist '{}': {}", self.expr, self.message)
    }
}

impl std::error::Error for HostlistError {}

/// Most names one expression may expand to (Slurm's own limit is of the same order).
pub const MAX_HOSTS: usize = 1 << 20;

/// Expands a hostlist expression into host names, in the order written.
///
/// Commas outside brackets separate entries; each bracket group holds comma-separated
/// numbers and `lo-hi` ranges, zero-padded to the width of `lo` as written; several
/// bracket groups in one entry multiply (`a[1-2]b[1-2]` is `a1b1,a1b2,a2b1,a2b2`).
///
/// Errors: unbalanced brackets, a range running backwards, a non-numeric bound, an
/// empty entry, more than [`MAX_HOSTS`] names.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let err = |m: &str| HostlistError {
        expr: expr.to_string(),
        message: m.to_string(),
    };
    let mut out = Vec::new();
    for entry in split_top_level(expr).map_err(|m| err(&m))? {
        if entry.is_empty() {
            return Err(err("empty host name"));
        }
        let mut names = vec![String::new()];
        let mut rest = entry;
        while !rest.is_empty() {
            match rest.find('[') {
                None => {
                    if rest.contains(']') {
                        return Err(err("']' without '['"));
                    }
                    for n in &mut names {
                        n.push_str(rest);
                    }
                    rest = "";
                }
                Some(open) => {
                    let prefix = &rest[..open];
                    if prefix.contains(']') {
                        return Err(err("']' without '['"));
                    }
                    let close = rest[open..]
                        .find(']')
                        .ok_or_else(|| err("'[' without ']'"))?
                        + open;
                    let (ranges, count) =
                        parse_group(&rest[open + 1..close]).map_err(|m| err(&m))?;
                    // Count before building: two groups of a million numbers each would
                    // otherwise ask for a trillion names at once.
                    let total = names
                        .len()
                        .checked_mul(count)
                        .and_then(|n| n.checked_add(out.len()));
                    if total.is_none_or(|n| n > MAX_HOSTS) {
                        return Err(err("too many hosts"));
                    }
                    let mut next = Vec::with_capacity(names.len() * count);
                    for n in &names {
                        for &Range { lo, hi, width } in &ranges {
                            for v in lo..=hi {
                                let mut name = String::with_capacity(n.len() + prefix.len() + 24);
                                name.push_str(n);
                                name.push_str(prefix);
                                let _ = write!(name, "{v:0width$}");
                                next.push(name);
                            }
                        }
                    }
                    names = next;
                    rest = &rest[close + 1..];
                }
            }
        }
        out.extend(names);
        if out.len() > MAX_HOSTS {
            return Err(err("too many hosts"));
        }
    }
    Ok(out)
}

fn split_top_level(expr: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in expr.char_indices() {
        match c {
            '[' => {
                depth += 1;
                if depth > 1 {
                    return Err("nested '['".into());
                }
            }
            ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err("']' without '['".into());
                }
            }
            ',' if depth == 0 => {
                parts.push(expr[start..i].trim());
                start = i + 1;
            }
            c if c.is_whitespace() && depth == 0 => return Err("whitespace in hostlist".into()),
            _ => {}
        }
    }
    if depth != 0 {
        return Err("'[' without ']'".into());
    }
    parts.push(expr[start..].trim());
    Ok(parts)
}

/// One range of a bracket group: `lo` to `hi`, zero-padded to `width` digits.
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

/// One bracket group's ranges and how many numbers they hold in all (at most
/// [`MAX_HOSTS`]: `[0-999999,0-999999,...]` adds up).
fn parse_group(group: &str) -> Result<(Vec<Range>, usize), String> {
    let mut ranges = Vec::new();
    let mut count = 0usize;
    for item in group.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (a, b),
            None => (item, item),
        };
        let num = |s: &str| -> Result<u64, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("'{item}' is not a number or range"));
            }
            s.parse::<u64>().map_err(|_| format!("'{s}' is too large"))
        };
        let (a, b) = (num(lo)?, num(hi)?);
        if b < a {
            return Err(format!("range '{item}' runs backwards"));
        }
        if b - a >= (MAX_HOSTS - count) as u64 {
            return Err("too many hosts".into());
        }
        count += (b - a) as usize + 1;
        ranges.push(Range {
            lo: a,
            hi: b,
            width: lo.len(),
        });
    }
    Ok((ranges, count))
}

/// A host name split into its prefix and trailing number: `gpu-ib12` → (`gpu-ib`, 12,
/// width 2). As in Slurm, only a number at the very end takes part in ranges.
fn split_name(name: &str) -> Option<(&str, u64, usize, &str)> {
    let bytes = name.as_bytes();
    let start = bytes
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |i| i + 1);
    if start == bytes.len() {
        return None;
    }
    let digits = &name[start..];
    let value = digits.parse::<u64>().ok()?;
    Some((&name[..start], value, digits.len(), ""))
}

/// A node list as Slurm keeps a job's (`ReqNodeList`, `required_nodes`): ranged,
/// without repeats (`n2,n1,n2` is `n[1-2]`); an expression that cannot be read is kept
/// as given.
pub fn ranged(expr: &str) -> String {
    expand(expr)
        .map(|names| compress(&names))
        .unwrap_or_else(|_| expr.to_string())
}

/// Compresses host names into a hostlist expression, as Slurm prints them
/// (`node[01-03,07],login1`).
///
/// Names are grouped by prefix and digit width, keeping the order in which each
/// group first appears; numbers within a group are sorted and deduplicated, and runs of
/// consecutive numbers become ranges. Zero-padded numbers group by their width; a number
/// without padding joins the padded group of its own width if the list has one (`n100`
/// with `n098`), else the unpadded group of its prefix. A group of one name is printed
/// bare. Names without a trailing number are printed as they are, repeats included.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    struct Group<'a> {
        prefix: &'a str,
        suffix: &'a str,
        width: usize,
        values: Vec<u64>,
    }
    let split: Vec<_> = names
        .iter()
        .map(|n| (n.as_ref(), split_name(n.as_ref())))
        .collect();
    let is_padded =
        |value: u64, width: usize| value.checked_ilog10().unwrap_or(0) as usize + 1 != width;
    // Zero-padded numbers ("007") group by their written width. A number without padding
    // joins a padded group of its own width ("100" with "098") when the list has one,
    // wherever it appears, else the unpadded group of its prefix and suffix; deciding
    // this before grouping keeps every name in exactly one group.
    // (Fx hashing, and the last key remembered: most names follow one of their group.)
    let mut padded_widths: FxHashSet<(&str, &str, usize)> = FxHashSet::default();
    let mut last_padded = None;
    for &(prefix, value, width, suffix) in split.iter().filter_map(|(_, s)| s.as_ref()) {
        let key = (prefix, suffix, width);
        if is_padded(value, width) && last_padded != Some(key) {
            padded_widths.insert(key);
            last_padded = Some(key);
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: FxHashMap<(&str, &str, usize), usize> = FxHashMap::default();
    let mut last_group: Option<((&str, &str, usize), usize)> = None;
    // First appearance order of groups (Ok) and plain names (Err).
    let mut order: Vec<Result<usize, &str>> = Vec::new();
    for (name, parts) in split {
        match parts {
            Some((prefix, value, width, suffix)) => {
                let width = if is_padded(value, width)
                    || padded_widths.contains(&(prefix, suffix, width))
                {
                    width
                } else {
                    0
                };
                let key = (prefix, suffix, width);
                let known = match last_group {
                    Some((k, i)) if k == key => Some(i),
                    _ => group_of.get(&key).copied(),
                };
                match known {
                    Some(i) => {
                        groups[i].values.push(value);
                        last_group = Some((key, i));
                    }
                    None => {
                        group_of.insert(key, groups.len());
                        last_group = Some((key, groups.len()));
                        order.push(Ok(groups.len()));
                        groups.push(Group {
                            prefix,
                            suffix,
                            width,
                            values: vec![value],
                        });
                    }
                }
            }
            None => order.push(Err(name)),
        }
    }
    let mut rendered: Vec<String> = Vec::with_capacity(groups.len());
    for g in &mut groups {
        g.values.sort_unstable();
        g.values.dedup();
        let fmt = |v: u64| format!("{v:0w$}", w = g.width);
        if g.values.len() == 1 {
            rendered.push(format!("{}{}{}", g.prefix, fmt(g.values[0]), g.suffix));
            continue;
        }
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < g.values.len() {
            let mut j = i;
            while j + 1 < g.values.len() && g.values[j + 1] == g.values[j] + 1 {
                j += 1;
            }
            ranges.push(if i == j {
                fmt(g.values[i])
            } else {
                format!("{}-{}", fmt(g.values[i]), fmt(g.values[j]))
            });
            i = j + 1;
        }
        rendered.push(format!("{}[{}]{}", g.prefix, ranges.join(","), g.suffix));
    }
    order
        .into_iter()
        .map(|e| match e {
            Ok(gi) => rendered[gi].clone(),
            Err(name) => name.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_jobs_node_list_is_kept_ranged_without_repeats() {
        assert_eq!(ranged("n2,n1,n2"), "n[1-2]");
        assert_eq!(ranged("n[1-3],n2"), "n[1-3]");
        assert_eq!(ranged("n[1-"), "n[1-");
    }

    #[test]
    fn expands_ranges_lists_and_padding() {
        assert_eq!(
            expand("node[01-04,7]").unwrap(),
            ["node01", "node02", "node03", "node04", "node7"]
        );
        assert_eq!(expand("a,b[1-2]").unwrap(), ["a", "b1", "b2"]);
        assert_eq!(
            expand("gpu[1-2]-ib[0-1]").unwrap(),
            ["gpu1-ib0", "gpu1-ib1", "gpu2-ib0", "gpu2-ib1"]
        );
        assert_eq!(
            expand("n[098-101]").unwrap(),
            ["n098", "n099", "n100", "n101"]
        );
        assert_eq!(expand("node04").unwrap(), ["node04"]);
    }

    #[test]
    fn rejects_malformed_expressions() {
        for bad in [
            "node[1-",
            "node1]",
            "node[3-1]",
            "node[a-b]",
            "n[[1]]",
            "a,,b",
            "",
            "n[1-2000000]",
        ] {
            assert!(expand(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(
            expand("node[3-1]").unwrap_err().to_string(),
            "invalid hostlist 'node[3-1]': range '3-1' runs backwards"
        );
    }

    #[test]
    fn counts_hosts_before_building_them() {
        // Regression (fuzz corpus): a million times a million names aborted on
        // allocation.
        assert_eq!(
            expand("a[0-999999]b[0-999999]").unwrap_err().to_string(),
            "invalid hostlist 'a[0-999999]b[0-999999]': too many hosts"
        );
        // Regression (fuzz corpus): each range was bounded, not their sum
        // (gigabytes of names).
        assert_eq!(
            expand("a[0-999999,0-999999]").unwrap_err().message,
            "too many hosts"
        );
        assert_eq!(
            expand("a[1-524288],b[1-524289]").unwrap_err().message,
            "too many hosts"
        );
        assert_eq!(expand("a[1-524288],b[1-524288]").unwrap().len(), MAX_HOSTS);
    }

    #[test]
    fn compress_names_each_host_once() {
        // Regression (fuzz corpus): `n100` went to an unpadded group before `n098`
        // opened the padded one, and again into that one: `n100,n[098,100]`.
        assert_eq!(compress(&["n100", "n098", "n100"]), "n[098,100]");
        assert_eq!(compress(&["n100", "n098", "n101"]), "n[098,100-101]");
        assert_eq!(compress(&["n100", "n101", "n9"]), "n[9,100-101]");
        assert_eq!(compress(&["a", "n1", "a"]), "a,n1,a");
    }

    #[test]
    fn compresses_like_slurm() {
        assert_eq!(
            compress(&["node01", "node02", "node03", "node07"]),
            "node[01-03,07]"
        );
        assert_eq!(compress(&["node1"]), "node1");
        assert_eq!(compress(&["login", "n1", "n2"]), "login,n[1-2]");
        assert_eq!(compress(&["n3", "n1", "n2", "n2"]), "n[1-3]");
        assert_eq!(
            compress(&["gpu1-ib0", "gpu2-ib0"]),
            "gpu1-ib0,gpu2-ib0",
            "only trailing numbers form ranges"
        );
        assert_eq!(compress(&["gpu0-ib1", "gpu0-ib2"]), "gpu0-ib[1-2]");
        assert_eq!(compress(&["n9", "n10", "n11"]), "n[9-11]");
        assert_eq!(compress(&["n098", "n099", "n100"]), "n[098-100]");
    }

    proptest! {
        #[test]
        fn compress_then_expand_gives_back_the_sorted_names(
            values in proptest::collection::btree_set(0u64..300, 1..40),
            width in 1usize..4,
            prefix in "[a-z]{1,5}",
        ) {
            let names: Vec<String> = values.iter().map(|v| format!("{prefix}{v:0width$}")).collect();
            let expr = compress(&names);
            let back = expand(&expr).unwrap();
            let mut want = names.clone();
            want.sort_by_key(|n| n[prefix.len()..].parse::<u64>().unwrap());
            // Zero-padded names of different natural widths may form separate groups;
            // compare as sets and check no duplicates appeared.
            let mut a = back.clone(); a.sort();
            let mut b = want.clone(); b.sort();
            prop_assert_eq!(a, b);
            prop_assert_eq!(back.len(), names.len());
        }

        #[test]
        fn expand_then_compress_is_stable(lo in 0u64..50, len in 0u64..30, gap in 2u64..5) {
            let expr = format!("x[{lo}-{}],x{}", lo + len, lo + len + gap);
            let names = expand(&expr).unwrap();
            let once = compress(&names);
            prop_assert_eq!(expand(&once).unwrap(), names);
            prop_assert_eq!(compress(&expand(&once).unwrap()), once);
        }
    }
}
