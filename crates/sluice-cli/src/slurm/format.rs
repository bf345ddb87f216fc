//! Slurm's `%[.][width]code` output formats (`squeue -o`, `sinfo -o`).
//!
//! The format is cut at every `%`: text before the first is copied into the header and
//! every row; each later piece is `[.][width]code` followed by literal text. A `.`
//! right-justifies; a width pads to that many characters and truncates longer values
//! (no width, or `0`, takes exactly the value's length). Empty pieces are dropped, so
//! `%%` prints nothing and `x%%j` is `x%j`, as in Slurm. A code that is not a letter
//! (`%-12j`: the code is `-`) is not a field: the piece is printed as written, `%`
//! included, and the command reports it (see [`invalid_codes`]).

/// A formatted value and its column header.
#[derive(Clone, Debug)]
pub struct Field {
    /// Header (`JOBID`).
    pub header: &'static str,
    /// Value.
    pub value: String,
}

enum Piece {
    Text(String),
    Code {
        right: bool,
        width: Option<usize>,
        code: char,
    },
}

/// The format's pieces, and the code of each piece that is not a field (`None` where
/// the piece ends before its code, as in `%20`).
fn parse(format: &str) -> (Vec<Piece>, Vec<Option<char>>) {
    let mut out = Vec::new();
    let mut invalid = Vec::new();
    let mut parts = format.split('%');
    if let Some(prefix) = parts.next().filter(|p| !p.is_empty()) {
        out.push(Piece::Text(prefix.to_string()));
    }
    for token in parts.filter(|t| !t.is_empty()) {
        let right = token.starts_with('.');
        let rest = if right { &token[1..] } else { token };
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let width = rest[..digits].parse::<usize>().ok().filter(|w| *w > 0);
        let mut tail = rest[digits..].chars();
        match tail.next() {
            Some(code) if code.is_ascii_alphabetic() => {
                out.push(Piece::Code { right, width, code });
                let suffix = tail.as_str();
                if !suffix.is_empty() {
                    out.push(Piece::Text(suffix.to_string()));
                }
            }
            code => {
                out.push(Piece::Text(format!("%{token}")));
                invalid.push(code);
            }
        }
    }
    (out, invalid)
}

/// The field codes of a format, in order.
pub fn codes(format: &str) -> impl Iterator<Item = char> {
    parse(format)
        .0
        .into_iter()
        .filter_map(|p| match p {
            Piece::Code { code, .. } => Some(code),
            Piece::Text(_) => None,
        })
        .collect::<Vec<_>>()
        .into_iter()
}

/// The codes of the format's pieces that are not fields, as Slurm names them in
/// `Invalid job format specification: -` (empty for a piece without a code).
pub fn invalid_codes(format: &str) -> Vec<String> {
    parse(format)
        .1
        .into_iter()
        .map(|c| c.map(String::from).unwrap_or_default())
        .collect()
}

fn cell(s: &str, right: bool, width: Option<usize>) -> String {
    match width {
        None => s.to_string(),
        Some(w) => {
            let t: String = s.chars().take(w).collect();
            if right {
                format!("{t:>w$}")
            } else {
                format!("{t:<w$}")
            }
        }
    }
}

/// Renders rows (one [`Field`] per known code, in order) under an optional header.
/// `known` says whether a code is one the command knows (unknown codes print nothing).
pub fn render(
    format: &str,
    header: Option<&Vec<Field>>,
    rows: &[Vec<Field>],
    known: &dyn Fn(char) -> bool,
) -> String {
    let (ps, _) = parse(format);
    let line = |fields: &[String]| -> String {
        let mut s = String::new();
        let mut k = 0;
        for p in &ps {
            match p {
                Piece::Text(t) => s.push_str(t),
                Piece::Code { right, width, code } => {
                    if known(*code) {
                        s.push_str(&cell(
                            fields.get(k).map(String::as_str).unwrap_or(""),
                            *right,
                            *width,
                        ));
                        k += 1;
                    }
                }
            }
        }
        s
    };
    let mut out = String::new();
    if let Some(h) = header {
        let names: Vec<String> = h.iter().map(|f| f.header.to_string()).collect();
        out.push_str(&line(&names));
        out.push('\n');
    }
    for r in rows {
        let vals: Vec<String> = r.iter().map(|f| f.value.clone()).collect();
        out.push_str(&line(&vals));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(h: &'static str, v: &str) -> Field {
        Field {
            header: h,
            value: v.into(),
        }
    }

    fn rows() -> Vec<Vec<Field>> {
        vec![vec![
            f("JOBID", "6066"),
            f("ST", "PD"),
            f("NODELIST(REASON)", "(Resources)"),
        ]]
    }

    #[test]
    fn widths_justification_literals() {
        let header = vec![f("JOBID", ""), f("ST", ""), f("NODELIST(REASON)", "")];
        assert_eq!(
            render("%.18i %.2t %R", Some(&header), &rows(), &|_| true),
            "             JOBID ST NODELIST(REASON)\n              6066 PD (Resources)\n"
        );
        assert_eq!(render("'%i' %t", None, &rows(), &|_| true), "'6066' PD\n");
    }

    #[test]
    fn percent_signs_cut_the_format_and_empty_pieces_vanish() {
        // Slurm 22.05: `squeue -o '%i|%%'` prints `JOBID|`, `-o 'x%%jy'` `xNAMEy`,
        // `-o '%'` an empty line.
        assert_eq!(render("%3i|%%", None, &rows(), &|_| true), "606|\n");
        assert_eq!(render("x%%iy", None, &rows(), &|_| true), "x6066y\n");
        assert_eq!(render("%", None, &rows(), &|_| true), "\n");
        assert_eq!(render("abc", None, &rows(), &|_| true), "abc\n");
        assert_eq!(render("%0i|", None, &rows(), &|_| true), "6066|\n");
    }

    #[test]
    fn a_piece_whose_code_is_not_a_letter_prints_as_written() {
        // Slurm 22.05: `squeue -o '"%i" name=[%-12j]|%10l|'` prints
        // `"JOBID" name=[%-12j]|TIME_LIMIT|`, reporting the `-`.
        let header = vec![f("JOBID", ""), f("ST", "")];
        let fmt = "\"%i\" name=[%-12j]|%.5-j|%05-t|%3!|%20|%.";
        assert_eq!(
            render(fmt, Some(&header), &rows(), &|_| true),
            "\"JOBID\" name=[%-12j]|%.5-j|%05-t|%3!|%20|%.\n\
             \"6066\" name=[%-12j]|%.5-j|%05-t|%3!|%20|%.\n"
        );
        assert_eq!(invalid_codes(fmt), ["-", "-", "-", "!", "|", ""]);
        assert_eq!(codes(fmt).collect::<String>(), "i");
        // Later fields still line up with their values.
        assert_eq!(render("%-|%i %t", None, &rows(), &|_| true), "%-|6066 PD\n");
    }
}
