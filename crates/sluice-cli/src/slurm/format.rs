//! Slurm's `%[.][width]code` output formats (`squeue -o`, `sinfo -o`).
//!
//! Literal text is copied into the header and every row. A `.` right-justifies; a width
//! pads to that many characters and truncates longer values. Without a width a field
//! takes exactly its value's length.

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

fn pieces(format: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        let right = chars.peek() == Some(&'.');
        if right {
            chars.next();
        }
        let mut w = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            w.push(*d);
            chars.next();
        }
        match chars.next() {
            Some('%') => text.push('%'),
            Some(code) => {
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Code {
                    right,
                    width: w.parse().ok(),
                    code,
                });
            }
            None => text.push('%'),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// The codes of a format, in order.
pub fn codes(format: &str) -> impl Iterator<Item = char> {
    pieces(format)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Code { code, .. } => Some(code),
            Piece::Text(_) => None,
        })
        .collect::<Vec<_>>()
        .into_iter()
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
    let ps = pieces(format);
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

    #[test]
    fn widths_justification_literals() {
        let f = |h: &'static str, v: &str| Field {
            header: h,
            value: v.into(),
        };
        let rows = vec![vec![
            f("JOBID", "6066"),
            f("ST", "PD"),
            f("NODELIST(REASON)", "(Resources)"),
        ]];
        let header = vec![f("JOBID", ""), f("ST", ""), f("NODELIST(REASON)", "")];
        assert_eq!(
            render("%.18i %.2t %R", Some(&header), &rows, &|_| true),
            "             JOBID ST NODELIST(REASON)\n              6066 PD (Resources)\n"
        );
        assert_eq!(render("'%i' %t", None, &rows, &|_| true), "'6066' PD\n");
        assert_eq!(render("%3i|%%", None, &rows, &|_| true), "606|%\n");
    }
}
