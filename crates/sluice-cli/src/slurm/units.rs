//! Sizes in Slurm's units (`K M G T P`, powers of 1024), converted as its commands
//! convert them: `squeue -o %m`, `sacct --units`, `--noconvert`.

/// The unit letters, from none (bytes) up: a unit's index is its power of 1024.
const UNITS: &[u8] = b"\0KMGTP";

/// Index of `M` in [`UNITS`].
pub const MEGA: usize = 2;

/// How a size is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convert {
    /// Into a larger unit only while no precision is lost (halves count as exact:
    /// `1536M` is `1.50G`, `2000M` stays): what the commands do by default.
    Exact,
    /// `--noconvert`: in the unit it was counted in.
    No,
    /// `--units=X`: in this unit (an index into `KMGTP` counting from 1), with two
    /// decimals where it does not divide.
    To(usize),
}

/// The unit `--units=` names, as Slurm reads it: its first letter, any case, one of
/// `KMGTP`; `None` otherwise.
pub fn parse_unit(s: &str) -> Option<usize> {
    let c = s.bytes().next()?.to_ascii_uppercase();
    UNITS[1..].iter().position(|&u| u == c).map(|i| i + 1)
}

/// `num`, counted in unit `unit` (an index into `\0KMGTP`), as Slurm prints it.
pub fn convert(num: f64, mut unit: usize, how: Convert) -> String {
    if num as i64 == 0 {
        return "0".into();
    }
    let mut num = num;
    match how {
        Convert::To(to) => {
            while to < unit {
                num *= 1024.0;
                unit -= 1;
            }
            while to > unit {
                num /= 1024.0;
                unit += 1;
            }
        }
        Convert::No => {}
        Convert::Exact => {
            while num >= 1024.0 && (num as u64).is_multiple_of(512) && unit + 1 < UNITS.len() {
                num /= 1024.0;
                unit += 1;
            }
        }
    }
    let letter = match UNITS.get(unit) {
        Some(0) => String::new(),
        Some(&u) => (u as char).to_string(),
        None => "?".into(),
    };
    if num.fract() == 0.0 {
        format!("{}{letter}", num as u64)
    } else {
        format!("{num:.2}{letter}")
    }
}

/// A size as the commands print it (`1500M`, `1.50G`, `400K`) read back: the number
/// and its unit's index; `None` for anything else.
pub fn read(s: &str) -> Option<(f64, usize)> {
    let (num, letter) = s.split_at(s.len().checked_sub(1)?);
    let unit = UNITS[1..].iter().position(|&u| letter.as_bytes() == [u])? + 1;
    Some((num.parse().ok()?, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_conversion_keeps_precision_and_halves() {
        assert_eq!(convert(1024.0, MEGA, Convert::Exact), "1G");
        assert_eq!(convert(1536.0, MEGA, Convert::Exact), "1.50G");
        assert_eq!(convert(2000.0, MEGA, Convert::Exact), "2000M");
        assert_eq!(convert(1000.0, MEGA, Convert::Exact), "1000M");
        assert_eq!(convert(1048576.0, MEGA, Convert::Exact), "1T");
        assert_eq!(convert(0.0, MEGA, Convert::Exact), "0");
    }

    #[test]
    fn units_asked_for_are_used_whatever_the_size() {
        // Real sacct 22.05 for a 1500 MiB request: `1.46G`, `1536000K`, `1500M`.
        assert_eq!(convert(1500.0, MEGA, Convert::To(3)), "1.46G");
        assert_eq!(convert(1500.0, MEGA, Convert::To(1)), "1536000K");
        assert_eq!(convert(1500.0, MEGA, Convert::To(2)), "1500M");
        assert_eq!(convert(1024.0, MEGA, Convert::No), "1024M");
    }

    #[test]
    fn unit_names_and_sizes_read_back() {
        assert_eq!(parse_unit("G"), Some(3));
        assert_eq!(parse_unit("m"), Some(2));
        assert_eq!(parse_unit("KB"), Some(1));
        assert_eq!(parse_unit("X"), None);
        assert_eq!(parse_unit(""), None);
        assert_eq!(read("1500M"), Some((1500.0, MEGA)));
        assert_eq!(read("1.50G"), Some((1.5, 3)));
        assert_eq!(read("400K"), Some((400.0, 1)));
        assert_eq!(read("12"), None);
        assert_eq!(read(""), None);
    }
}
