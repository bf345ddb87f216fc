//! The tables `sacct` and `sstat` print (Slurm's `print_fields`): fixed-width columns
//! with a header and a line of dashes, or `-p`/`-P` parsable lines.

/// How the rows are laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Columns of their widths, each followed by a space.
    Fixed,
    /// Values joined by the delimiter; `trailing`: one after the last value too
    /// (`-p`), else not (`-P`).
    Parsable {
        /// Between values.
        delimiter: String,
        /// After the last value too.
        trailing: bool,
    },
}

/// A value in a column `width` wide: right-justified, or left-justified for a
/// negative width; a longer value cut to fit, ending in `+`.
pub fn fixed(v: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    let v = if v.chars().count() > w {
        let mut t: String = v.chars().take(w.saturating_sub(1)).collect();
        t.push('+');
        t
    } else {
        v.to_string()
    };
    justify(&v, width)
}

/// A column's header in a column `width` wide: justified as its values, a longer name
/// cut to fit without a mark.
pub fn header_cell(name: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    justify(&name.chars().take(w).collect::<String>(), width)
}

fn justify(v: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    if width < 0 {
        format!("{v:<w$}")
    } else {
        format!("{v:>w$}")
    }
}

/// A `--format` item's width: `%N` right-justified, `%-N` left-justified, as Slurm's
/// sacct and sstat read them; `None` (the field's default) when absent, zero or not a
/// number.
pub fn format_width(spec: Option<&str>) -> Option<i32> {
    spec.and_then(|w| w.parse::<i32>().ok()).filter(|&w| w != 0)
}

/// The header lines for `columns` (name, width): the names, then dashes.
pub fn header(columns: &[(&str, i32)], layout: &Layout) -> String {
    match layout {
        Layout::Parsable { .. } => row(
            &columns.iter().map(|c| c.0.to_string()).collect::<Vec<_>>(),
            columns,
            layout,
        ),
        Layout::Fixed => {
            let mut out = String::new();
            for (name, w) in columns {
                out.push_str(&header_cell(name, *w));
                out.push(' ');
            }
            out.push('\n');
            for (_, w) in columns {
                out.push_str(&"-".repeat(w.unsigned_abs() as usize));
                out.push(' ');
            }
            out.push('\n');
            out
        }
    }
}

/// One row of `values` (one per column), with its newline.
pub fn row(values: &[String], columns: &[(&str, i32)], layout: &Layout) -> String {
    let mut out = match layout {
        Layout::Fixed => values
            .iter()
            .zip(columns)
            .map(|(v, (_, w))| fixed(v, *w) + " ")
            .collect::<String>(),
        Layout::Parsable {
            delimiter,
            trailing,
        } => {
            let mut l = values.join(delimiter);
            if *trailing {
                l.push_str(delimiter);
            }
            l
        }
    };
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_justify_and_cut_as_slurms_print_fields() {
        // `JobID%20`: right; `State%-12`: left; defaults keep their side.
        assert_eq!(format_width(Some("20")), Some(20));
        assert_eq!(format_width(Some("-12")), Some(-12));
        assert_eq!(format_width(Some("0")), None);
        assert_eq!(format_width(Some("x")), None);
        assert_eq!(header_cell("JobID", 20), "               JobID");
        assert_eq!(header_cell("State", -12), "State       ");
        assert_eq!(fixed("100025", 20), "              100025");
        assert_eq!(fixed("COMPLETED", -12), "COMPLETED   ");
        assert_eq!(fixed("0:0", 8), "     0:0");
        // Too long: values end in `+`, headers are cut plainly.
        assert_eq!(fixed("100025", 5), "1000+");
        assert_eq!(fixed("COMPLETED", -4), "COM+");
        assert_eq!(header_cell("State", -4), "Stat");
        assert_eq!(header_cell("JobName", 2), "Jo");
    }

    #[test]
    fn parsable_rows_end_with_the_delimiter_only_for_dash_p() {
        let cols = [("JobID", -12), ("MaxRSS", 10)];
        let v = ["1.0".to_string(), "5060K".to_string()];
        let p = |trailing| Layout::Parsable {
            delimiter: "|".into(),
            trailing,
        };
        assert_eq!(row(&v, &cols, &p(false)), "1.0|5060K\n");
        assert_eq!(row(&v, &cols, &p(true)), "1.0|5060K|\n");
        assert_eq!(header(&cols, &p(false)), "JobID|MaxRSS\n");
        assert_eq!(
            header(&cols, &Layout::Fixed),
            "JobID            MaxRSS \n------------ ---------- \n"
        );
        assert_eq!(row(&v, &cols, &Layout::Fixed), "1.0               5060K \n");
    }
}
