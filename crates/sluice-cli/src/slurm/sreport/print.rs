//! sreport's output: its time formats (`-t`), columns and their widths, and the
//! table, `-p` and `-P` layouts (Slurm's `print_fields`).

/// How usage is shown (`-t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeFormat {
    /// `Seconds`.
    Secs,
    /// `Minutes` (the default).
    #[default]
    Mins,
    /// `Hours`.
    Hours,
    /// `Percent`: of the total.
    Percent,
    /// `SecPer`: seconds and percent.
    SecsPer,
    /// `MinPer`.
    MinsPer,
    /// `HourPer`.
    HoursPer,
}

/// C's `strncasecmp(a, b, n)` as Slurm's `xstrncasecmp` uses it: the first `n`
/// characters equal ignoring case, a string's end counting as a character.
pub fn ncase_eq(a: &str, b: &str, n: usize) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0).to_ascii_lowercase();
        let y = b.get(i).copied().unwrap_or(0).to_ascii_lowercase();
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
    }
    true
}

impl TimeFormat {
    /// Parses `-t`'s value as sreport matches it (`SecPer`, `MinPer`, `HourPer` by at
    /// least six letters; `Seconds`, `Minutes`, `Hours`, `Percent` by any prefix).
    pub fn parse(s: &str) -> Option<TimeFormat> {
        let n = s.len();
        let table = [
            ("SecPer", 6, TimeFormat::SecsPer),
            ("MinPer", 6, TimeFormat::MinsPer),
            ("HourPer", 6, TimeFormat::HoursPer),
            ("Seconds", 1, TimeFormat::Secs),
            ("Minutes", 1, TimeFormat::Mins),
            ("Hours", 1, TimeFormat::Hours),
            ("Percent", 1, TimeFormat::Percent),
        ];
        table
            .iter()
            .find(|(name, min, _)| ncase_eq(s, name, n.max(*min)))
            .map(|t| t.2)
    }

    /// The words of the `Usage reported in ...` line.
    pub fn words(self) -> &'static str {
        match self {
            TimeFormat::Secs => "Seconds",
            TimeFormat::Mins => "Minutes",
            TimeFormat::Hours => "Hours",
            TimeFormat::Percent => "Percentage of Total",
            TimeFormat::SecsPer => "Seconds/Percentage of Total",
            TimeFormat::MinsPer => "Minutes/Percentage of Total",
            TimeFormat::HoursPer => "Hours/Percentage of Total",
        }
    }

    /// With a percentage beside the figure.
    pub fn with_percent(self) -> bool {
        matches!(
            self,
            TimeFormat::SecsPer | TimeFormat::MinsPer | TimeFormat::HoursPer
        )
    }

    /// `value` count-seconds of `total`, as sreport prints it.
    pub fn show(self, value: u64, total: u64) -> String {
        let total = total.max(1) as f64;
        let pct = value as f64 / total * 100.0;
        let v = value as f64;
        match self {
            TimeFormat::Secs => value.to_string(),
            TimeFormat::Mins => format!("{:.0}", v / 60.0),
            TimeFormat::Hours => format!("{:.0}", v / 3600.0),
            TimeFormat::Percent => format!("{pct:.2}%"),
            TimeFormat::SecsPer => format!("{value}({pct:.2}%)"),
            TimeFormat::MinsPer => format!("{:.0}({pct:.2}%)", v / 60.0),
            TimeFormat::HoursPer => format!("{:.0}({pct:.2}%)", v / 3600.0),
        }
    }
}

/// `-p` (a `|` after every field) or `-P` (between fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsable {
    /// `-p`.
    Ending,
    /// `-P`.
    NoEnding,
}

/// A column: its header and width (negative: left-justified).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column<K> {
    /// What it shows.
    pub kind: K,
    /// Header.
    pub name: &'static str,
    /// Width; negative left-justifies.
    pub len: i32,
}

/// One cell's value.
pub enum Value {
    /// A string (`None`: empty).
    Str(Option<String>),
    /// Usage, already formatted by [`TimeFormat::show`].
    Time(String),
    /// A number.
    Uint(u64),
}

/// Output settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout {
    /// `-p`/`-P`.
    pub parsable: Option<Parsable>,
    /// Not `-n`.
    pub header: bool,
}

fn cell(out: &mut String, text: &str, len: i32, layout: &Layout, last: bool) {
    match layout.parsable {
        Some(Parsable::NoEnding) if last => out.push_str(text),
        Some(_) => {
            out.push_str(text);
            out.push('|');
        }
        None => {
            let w = len.unsigned_abs() as usize;
            let t: String = text.chars().take(w).collect();
            if len < 0 {
                out.push_str(&format!("{t:<w$} "));
            } else {
                out.push_str(&format!("{t:>w$} "));
            }
        }
    }
}

/// The column headers (and the dashes under them in a table).
pub fn header<K>(cols: &[Column<K>], layout: &Layout) -> String {
    if !layout.header {
        return String::new();
    }
    let mut out = String::new();
    for (i, c) in cols.iter().enumerate() {
        cell(&mut out, c.name, c.len, layout, i + 1 == cols.len());
    }
    out.push('\n');
    if layout.parsable.is_none() {
        for c in cols {
            out.push_str(&"-".repeat(c.len.unsigned_abs() as usize));
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

/// One row.
pub fn row<K>(cols: &[Column<K>], values: Vec<Value>, layout: &Layout) -> String {
    let mut out = String::new();
    let n = cols.len();
    for (i, (c, v)) in cols.iter().zip(values).enumerate() {
        let last = i + 1 == n;
        match v {
            Value::Str(s) => {
                let text = match (&s, layout.parsable) {
                    (None, Some(_)) => String::new(),
                    (None, None) => " ".to_string(),
                    (Some(s), Some(_)) => s.clone(),
                    (Some(s), None) => {
                        let w = c.len.unsigned_abs() as usize;
                        if s.chars().count() > w && w > 0 {
                            let mut t: String = s.chars().take(w - 1).collect();
                            t.push('+');
                            t
                        } else {
                            s.clone()
                        }
                    }
                };
                cell(&mut out, &text, c.len, layout, last);
            }
            Value::Time(t) => cell(&mut out, &t, c.len, layout, last),
            Value::Uint(u) => cell(&mut out, &u.to_string(), c.len, layout, last),
        }
    }
    out.push('\n');
    out
}

/// Slurm's `sreport_set_usage_col_width`: 8 characters for figures below 10^8
/// seconds, one more per power of ten, 9 more with a percentage.
pub fn usage_width(max_secs: u64, format: TimeFormat) -> i32 {
    let mut len = 8;
    let mut order: u128 = 100_000_000;
    let max_order: u128 = order * 100_000_000_000_000_000;
    while order < max_order {
        if u128::from(max_secs) < order {
            break;
        }
        len += 1;
        order *= 10;
    }
    if format.with_percent() {
        len += 9;
    }
    len
}

/// The banner above a report: dashes, the title line, the units line, dashes.
pub fn banner(title: &str, format: TimeFormat, tres_words: &str) -> String {
    let dashes = "-".repeat(80);
    let units = match format {
        TimeFormat::Percent => format!("Usage reported in {}", format.words()),
        f => format!("Usage reported in {tres_words} {}", f.words()),
    };
    format!("{dashes}\n{title}\n{units}\n{dashes}\n")
}
