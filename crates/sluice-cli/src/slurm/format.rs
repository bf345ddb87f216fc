//! Slurm's `%[.][width]code` output formats (`squeue -o`, `sinfo -o`).
//!
//! The format is cut at every `%`: text before the first is copied into the header and
//! every row; each later piece is `[.][width]code` followed by literal text. A `.`
//! right-justifies; a width pads to that many characters and truncates longer values
//! (no width, or `0`, takes exactly the value's length). Empty pieces are dropped, so
//! `%%` prints nothing and `x%%j` is `x%j`, as in Slurm. A code that is not a letter
//! (`%-12j`: the code is `-`) is not a field: the piece is printed as written, `%`
//! included, and the command reports it (see [`invalid_codes`]). Neither is a letter
//! the command has no field for (`sinfo -o %Q`): [`Layout::among`] and
//! [`invalid_codes_among`] take the command's letters.

/// Which letters are fields: `|_| true` for a command that has one for every letter
/// (squeue), else the command's own list.
pub type Letters = fn(char) -> bool;

/// Every letter is a field.
fn any_letter(_: char) -> bool {
    true
}

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
fn parse(format: &str, letters: Letters) -> (Vec<Piece>, Vec<Option<char>>) {
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
            Some(code) if code.is_ascii_alphabetic() && letters(code) => {
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

/// Slurm's `-o %all` (any case): every letter from `a` to `z` then `A` to `Z` that is
/// one of the command's fields (`letters`), each followed by `|`, an upper-case one's
/// by `upper` first (sinfo's `" "`), the last letter, `Z`, by `upper` alone; a letter
/// that is no field is left out with what follows it.
pub fn all_fields(letters: Letters, upper: &str) -> String {
    let mut out = String::new();
    for c in ('a'..='z').chain('A'..='Z').filter(|c| letters(*c)) {
        out.push('%');
        out.push(c);
        if c.is_ascii_uppercase() {
            out.push_str(upper);
        }
        if c != 'Z' {
            out.push('|');
        }
    }
    out
}

/// Whether `format` is Slurm's `%all`.
pub fn is_all(format: &str) -> bool {
    format.eq_ignore_ascii_case("%all")
}

/// The field codes of a format, in order.
pub fn codes(format: &str) -> impl Iterator<Item = char> {
    codes_among(format, any_letter)
}

/// The field codes of a format whose fields are `letters`, in order.
pub fn codes_among(format: &str, letters: Letters) -> impl Iterator<Item = char> {
    parse(format, letters)
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
    invalid_codes_among(format, any_letter)
}

/// [`invalid_codes`] for a command whose fields are `letters`.
pub fn invalid_codes_among(format: &str, letters: Letters) -> Vec<String> {
    parse(format, letters)
        .1
        .into_iter()
        .map(|c| c.map(String::from).unwrap_or_default())
        .collect()
}

/// Appends `s` as a cell: truncated to `width` characters and padded to it (on the
/// left when `right`), or as it is without a width.
fn cell(out: &mut String, s: &str, right: bool, width: Option<usize>) {
    let Some(w) = width else {
        out.push_str(s);
        return;
    };
    let (shown, len) = match s.char_indices().nth(w) {
        Some((end, _)) => (&s[..end], w),
        None => (s, s.chars().count()),
    };
    let pad = w - len;
    if right {
        out.extend(std::iter::repeat_n(' ', pad));
    }
    out.push_str(shown);
    if !right {
        out.extend(std::iter::repeat_n(' ', pad));
    }
}

/// A format parsed once, that renders any number of lines into one buffer.
pub struct Layout {
    pieces: Vec<Piece>,
}

impl Layout {
    /// `format`'s layout.
    pub fn new(format: &str) -> Self {
        Self::among(format, any_letter)
    }

    /// `format`'s layout for a command whose fields are `letters`: another letter's
    /// piece prints as written.
    pub fn among(format: &str, letters: Letters) -> Self {
        Layout {
            pieces: parse(format, letters).0,
        }
    }

    /// The layout of an `-O` list, each field's code given by `code` (`None`: a
    /// field the command does not know, which prints nothing but its suffix).
    pub fn long(
        fields: &[super::long_format::LongField],
        code: impl Fn(&str) -> Option<char>,
    ) -> Self {
        let mut pieces = Vec::new();
        for f in fields {
            pieces.push(Piece::Code {
                right: f.right,
                width: f.width,
                // Not a letter: no `value` function knows it.
                code: code(&f.name).unwrap_or('\0'),
            });
            if !f.suffix.is_empty() {
                pieces.push(Piece::Text(f.suffix.clone()));
            }
        }
        Layout { pieces }
    }

    /// The field codes of the layout, in order.
    pub fn codes(&self) -> Vec<char> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Code { code, .. } => Some(*code),
                Piece::Text(_) => None,
            })
            .collect()
    }

    /// Appends one line, newline included: each field whose code `value` knows is the
    /// value it writes (into `scratch`, cleared first), as a cell; a code it does not
    /// know (it returns `false`) prints nothing.
    pub fn line(
        &self,
        out: &mut String,
        scratch: &mut String,
        value: impl FnMut(char, &mut String) -> bool,
    ) {
        self.line_fitted(out, scratch, value, |_, _| Fit::Cut);
    }

    /// [`Layout::line`], each field fitted to its width as `fit` says (given its code
    /// and value): Slurm's squeue prints times and node lists whole when right-justified
    /// (`_print_str` without cutting; a left-justified field is cut all the same, by its
    /// `printf` precision), and some headers left-justified whatever the format says.
    pub fn line_fitted(
        &self,
        out: &mut String,
        scratch: &mut String,
        mut value: impl FnMut(char, &mut String) -> bool,
        fit: impl Fn(char, &str) -> Fit,
    ) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Code { right, width, code } => {
                    scratch.clear();
                    if value(*code, scratch) {
                        match fit(*code, scratch) {
                            Fit::Whole if *right => {
                                let short =
                                    width.map_or(0, |w| w.saturating_sub(scratch.chars().count()));
                                out.extend(std::iter::repeat_n(' ', short));
                                out.push_str(scratch);
                            }
                            Fit::Left => cell(out, scratch, false, *width),
                            _ => cell(out, scratch, *right, *width),
                        }
                    }
                }
            }
        }
        out.push('\n');
    }
}

/// How a field is fitted to its width ([`Layout::line_fitted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Padded, and cut to the width.
    Cut,
    /// Right-justified: padded, never cut (left-justified: cut all the same).
    Whole,
    /// Left-justified whatever the format says, and cut.
    Left,
}

impl Fit {
    /// [`Fit::Whole`] when `whole`, else [`Fit::Cut`].
    pub fn whole_if(whole: bool) -> Fit {
        if whole {
            Fit::Whole
        } else {
            Fit::Cut
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
    let layout = Layout::new(format);
    let mut out = String::new();
    let mut scratch = String::new();
    let mut line = |texts: &mut dyn Iterator<Item = &str>| {
        layout.line(&mut out, &mut scratch, |code, buf| {
            if !known(code) {
                return false;
            }
            buf.push_str(texts.next().unwrap_or(""));
            true
        });
    };
    if let Some(h) = header {
        line(&mut h.iter().map(|f| f.header));
    }
    for r in rows {
        line(&mut r.iter().map(|f| f.value.as_str()));
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
    fn all_is_every_letter_that_is_a_field_in_slurms_order() {
        assert!(all_fields(any_letter, "").starts_with("%a|%b|%c|"));
        assert!(all_fields(any_letter, "").ends_with("|%Y|%Z"));
        assert_eq!(all_fields(|c| "bZiA".contains(c), ""), "%b|%i|%A|%Z");
        assert_eq!(all_fields(|c| "aAU".contains(c), " "), "%a|%A |%U |");
        assert!(is_all("%ALL") && !is_all("%all|"));
    }

    #[test]
    fn a_right_justified_field_slurm_does_not_cut_is_printed_whole() {
        let layout = Layout::new("%.9l|%9l|%.4j");
        let mut out = String::new();
        let mut scratch = String::new();
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |c, buf| {
                buf.push_str(if c == 'l' { "1-00:00:00" } else { "wrapped" });
                true
            },
            |c, _| Fit::whole_if(c == 'l'),
        );
        // Right: whole; left: cut by its precision, as printf's `%.9s`; others cut.
        assert_eq!(out, "1-00:00:00|1-00:00:0|wrap\n");
        let layout = Layout::new("%.12S|");
        out.clear();
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |_, buf| {
                buf.push_str("START_TIME");
                true
            },
            |_, _| Fit::Left,
        );
        assert_eq!(out, "START_TIME  |\n");
    }

    #[test]
    fn cells_are_cut_and_padded_to_their_width_in_characters() {
        let cut = |s: &str, right, width| {
            let mut out = String::new();
            cell(&mut out, s, right, width);
            out
        };
        assert_eq!(cut("abcdef", false, Some(3)), "abc");
        assert_eq!(cut("ab", false, Some(4)), "ab  ");
        assert_eq!(cut("ab", true, Some(4)), "  ab");
        assert_eq!(cut("été", true, Some(4)), " été");
        assert_eq!(cut("étété", true, Some(2)), "ét");
        assert_eq!(cut("abc", true, None), "abc");
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
    fn a_field_list_pads_cuts_and_appends_each_suffix() {
        // Real squeue 22.05 (compat 130): `-O 'JobID:10,Name:.8,StateCompact:4,
        // Partition:.12|'`, and an unknown field printing its suffix only.
        let fields = super::super::long_format::parse(
            "JobID:10,Name:.8,StateCompact:4,Partition:.12|,Bogus:x,ReasonList:.4",
        );
        let layout = Layout::long(&fields, |name| match name {
            "JobID" => Some('A'),
            "Name" => Some('j'),
            "StateCompact" => Some('t'),
            "Partition" => Some('P'),
            "ReasonList" => Some('R'),
            _ => None,
        });
        assert_eq!(layout.codes(), ['A', 'j', 't', 'P', '\0', 'R']);
        let (mut out, mut scratch) = (String::new(), String::new());
        layout.line(&mut out, &mut scratch, |code, buf| {
            buf.push_str(match code {
                'A' => "100006",
                'j' => "run",
                't' => "R",
                'P' => "debug",
                'R' => "(JobHeldUser)",
                _ => return false,
            });
            true
        });
        assert_eq!(out, "100006         runR          debug|x(Job\n");
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

    #[test]
    fn a_letter_the_command_has_no_field_for_prints_as_written() {
        // Slurm 22.05: `sinfo -o '%P %Q|%5Q %.3x%a'` prints `%Q|%5Q %.3x` on every line
        // and reports Q, Q and x.
        fn sinfo_like(c: char) -> bool {
            "Pa".contains(c)
        }
        let fmt = "%P %Q|%5Q %.3x%a";
        let layout = Layout::among(fmt, sinfo_like);
        let mut out = String::new();
        layout.line(&mut out, &mut String::new(), |c, buf| {
            buf.push_str(if c == 'P' { "debug" } else { "up" });
            true
        });
        assert_eq!(out, "debug %Q|%5Q %.3xup\n");
        assert_eq!(invalid_codes_among(fmt, sinfo_like), ["Q", "Q", "x"]);
        assert_eq!(codes_among(fmt, sinfo_like).collect::<String>(), "Pa");
        // Where every letter is a field (squeue), the same format has four fields.
        assert_eq!(codes(fmt).collect::<String>(), "PQQxa");
        assert!(invalid_codes(fmt).is_empty());
    }
}
