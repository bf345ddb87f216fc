//! Job array specifications: `--array=0-9`, `1,3,5`, `1-9:2`, `0-99%8`.

/// A parsed `--array` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    /// Task indices, ascending, without duplicates.
    pub indices: Vec<u32>,
    /// `%N`: at most this many tasks run at once.
    pub throttle: Option<u32>,
}

/// Most tasks one specification may name (Slurm's `MaxArraySize` is checked later, by
/// the controller; this only bounds memory).
pub const MAX_ARRAY_TASKS: usize = 4_000_001;

/// The longest `--array` index string Slurm's controller takes (`array_inx`), however
/// few tasks it names.
pub const MAX_INDEX_STRING: usize = 4 * 1024;

/// Parses an array specification (Slurm's `--array`): comma-separated indices and
/// ranges `lo-hi`, each range with an optional step `:s`, then an optional throttle
/// `%N`.
///
/// Errors (Slurm's text): `Invalid job array specification` for anything else — a range
/// running backwards, a step of 0, a throttle of 0, non-numeric parts.
pub fn parse_array(s: &str) -> Result<ArraySpec, String> {
    let bad = || "Invalid job array specification".to_string();
    let (list, throttle) = match s.split_once('%') {
        Some((l, t)) => (
            l,
            Some(t.parse::<u32>().ok().filter(|t| *t > 0).ok_or_else(bad)?),
        ),
        None => (s, None),
    };
    let num = |x: &str| -> Result<u32, String> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse::<u32>().map_err(|_| bad())
    };
    let mut indices = Vec::new();
    for part in list.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((r, st)) => (r, num(st)?),
            None => (part, 1),
        };
        if step == 0 {
            return Err(bad());
        }
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let v = num(range)?;
                (v, v)
            }
        };
        if hi < lo {
            return Err(bad());
        }
        let mut i = lo as u64;
        while i <= hi as u64 {
            indices.push(i as u32);
            if indices.len() > MAX_ARRAY_TASKS {
                return Err(bad());
            }
            i += step as u64;
        }
    }
    indices.sort_unstable();
    indices.dedup();
    Ok(ArraySpec { indices, throttle })
}

/// Prints indices compactly as Slurm shows array tasks (`0-3,7,9-11`): the wire
/// crate's rule, which squeue's array lines use too.
pub use sluice_proto::types::compact_indices as format_indices;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse_array("0-3").unwrap().indices, [0, 1, 2, 3]);
        assert_eq!(parse_array("1,3,5").unwrap().indices, [1, 3, 5]);
        assert_eq!(parse_array("1-9:2").unwrap().indices, [1, 3, 5, 7, 9]);
        let t = parse_array("0-99%8").unwrap();
        assert_eq!((t.indices.len(), t.throttle), (100, Some(8)));
        assert_eq!(parse_array("5,1-2,2").unwrap().indices, [1, 2, 5]);
        assert_eq!(format_indices(&[0, 1, 2, 3, 7, 9, 10, 11]), "0-3,7,9-11");
    }

    #[test]
    fn errors_use_slurms_text() {
        for bad in ["1-x", "5-1", "", "1-9:0", "0-9%0", "a", "1,,2", "-1", "1-"] {
            assert_eq!(
                parse_array(bad),
                Err("Invalid job array specification".into()),
                "{bad}"
            );
        }
    }
}
