//! `-O`/`--Format` field lists (`squeue`, `sinfo`): `type[:[.][size][suffix]]`, comma
//! separated.
//!
//! As Slurm 22.05 reads them: without `:`, a field is 20 characters wide and
//! left-justified; after `:`, a `.` right-justifies, the number that follows is the
//! width (none, or `0`, prints the value as it is, a negative one the value and a
//! space), and whatever follows the number is printed after the field as written:
//! `JobID:|` is the id and a `|`, `Name:.8,` eight characters on the right and a
//! comma. Empty items (`a,,b`) are skipped.

/// One `-O` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongField {
    /// The field's name as written (`NodeList`).
    pub name: String,
    /// `.`: right-justified.
    pub right: bool,
    /// The width; `None` prints the value as it is.
    pub width: Option<usize>,
    /// Text printed after the field.
    pub suffix: String,
}

/// The items of an `-O` list.
pub fn parse(spec: &str) -> Vec<LongField> {
    spec.split(',')
        .filter(|t| !t.is_empty())
        .map(|token| {
            let Some((name, rest)) = token.split_once(':') else {
                return LongField {
                    name: token.to_string(),
                    right: false,
                    width: Some(20),
                    suffix: String::new(),
                };
            };
            let right = rest.starts_with('.');
            let rest = if right { &rest[1..] } else { rest };
            // As strtol: an optional sign, then digits.
            let sign = usize::from(rest.starts_with(['-', '+']));
            let digits = rest[sign..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len() - sign);
            let number = if digits == 0 {
                0
            } else {
                rest[..sign + digits].parse::<i64>().unwrap_or(0)
            };
            let used = if digits == 0 { 0 } else { sign + digits };
            let mut suffix = rest[used..].to_string();
            let width = match number {
                n if n > 0 => Some(n as usize),
                0 => None,
                _ => {
                    suffix.insert(0, ' ');
                    None
                }
            };
            LongField {
                name: name.to_string(),
                right,
                width,
                suffix,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, right: bool, width: Option<usize>, suffix: &str) -> LongField {
        LongField {
            name: name.into(),
            right,
            width,
            suffix: suffix.into(),
        }
    }

    #[test]
    fn items_take_a_width_a_side_and_a_suffix() {
        assert_eq!(
            parse("JobID,Name:.8,State:12|,NumCPUs:|,,TimeLimit:"),
            [
                f("JobID", false, Some(20), ""),
                f("Name", true, Some(8), ""),
                f("State", false, Some(12), "|"),
                f("NumCPUs", false, None, "|"),
                f("TimeLimit", false, None, ""),
            ]
        );
    }

    #[test]
    fn open_ondemand_and_exporter_specs() {
        // A unit separator after every field, no width: values as they are.
        assert_eq!(
            parse("JobID:\u{1f},UserName:\u{1f}"),
            [
                f("JobID", false, None, "\u{1f}"),
                f("UserName", false, None, "\u{1f}"),
            ]
        );
        assert_eq!(
            parse("JobArrayID:.19 ,ReasonList:.10"),
            [
                f("JobArrayID", true, Some(19), " "),
                f("ReasonList", true, Some(10), ""),
            ]
        );
        // A negative width: the value and a space.
        assert_eq!(parse("Name:-5x"), [f("Name", false, None, " x")]);
        assert_eq!(parse("Name:x5"), [f("Name", false, None, "x5")]);
    }
}
