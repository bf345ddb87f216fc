//! Command-line options as Slurm's commands read them: glibc's `getopt_long`.
//!
//! Every Slurm command Sluice provides (and `#SBATCH` lines, which sbatch reads with
//! the same table as its command line) walks its arguments with one [`Getopt`] over a
//! table of [`Opt`]s. The rules are glibc's, which Slurm 22.05's commands link:
//!
//! - `--name=value` and `--name value` for an option that needs a value; an optional
//!   value only after `=`.
//! - A long name may be cut to any prefix that names one option (`--part` for
//!   `--partition`). A prefix of several options is ambiguous unless they are one
//!   option under several names (same [`Opt::name`] and [`HasArg`]); an exact name
//!   always wins (`--parsable` over `--parsable2`).
//! - `-xVALUE` and `-x VALUE`; flags cluster (`-vv`, `-hl`), and the first letter in a
//!   cluster that takes a value takes the rest of the word (`-nualice` is `-n -u
//!   alice`). An optional value only when attached.
//! - `--` ends the options; `-` alone is an operand.
//! - Operands either end the options ([`Order::RequireOrder`], sbatch, srun and salloc:
//!   what follows belongs to the script or command) or come anywhere among them
//!   ([`Order::Permute`], getopt's default: `scancel 5 -s USR1`).
//!
//! Architecture invariant: the walker only finds options and their values; what a
//! value means, and how an error is worded on the terminal, is the command's.

use std::fmt;

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HasArg {
    /// A flag (`--hold`, `-H`).
    No,
    /// A value always follows, attached or as the next word (`--time=5`, `-t 5`).
    Required,
    /// A value only when attached (`--exclusive=user`, `-k1`).
    Optional,
}

/// One option of a command: its long name, short letter and value. `T` is whatever
/// the command wants to keep with it (sbatch: whether Sluice acts on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt<T = ()> {
    /// The long name, without `--` (`partition`); empty for a letter that has no
    /// long name (squeue's `-U`).
    pub long: &'static str,
    /// The short letter, if any (`p`).
    pub short: Option<char>,
    /// Whether a value follows.
    pub has_arg: HasArg,
    /// The option this entry is: its own long name, or for an alias the long name of
    /// the option it stands for (`state` for `--states`). Entries with the same name
    /// and value kind are one option to abbreviation, as in glibc (same `val`).
    pub name: &'static str,
    /// The command's own data.
    pub tag: T,
    /// Only the whole name selects this entry, never an abbreviation, and it is never
    /// a candidate of an ambiguous one: an option Sluice adds to a command's real
    /// table (`--segment`, from later Slurm), so that every abbreviation still means
    /// what it means to Slurm 22.05.
    pub exact_only: bool,
}

impl Opt {
    /// A flag: `--long`, `-s`.
    pub const fn flag(long: &'static str, short: Option<char>) -> Opt {
        Opt::new(long, short, HasArg::No)
    }

    /// An option that needs a value: `--long=V`, `--long V`, `-sV`, `-s V`.
    pub const fn required(long: &'static str, short: Option<char>) -> Opt {
        Opt::new(long, short, HasArg::Required)
    }

    /// An option whose value, if any, is attached: `--long[=V]`, `-s[V]`.
    pub const fn optional(long: &'static str, short: Option<char>) -> Opt {
        Opt::new(long, short, HasArg::Optional)
    }

    /// An option with `has_arg`.
    pub const fn new(long: &'static str, short: Option<char>, has_arg: HasArg) -> Opt {
        Opt {
            long,
            short,
            has_arg,
            name: long,
            tag: (),
            exact_only: false,
        }
    }

    /// This entry as another name of the option `name` (`Opt::required("state",
    /// None).alias_of("states")`).
    pub const fn alias_of(self, name: &'static str) -> Opt {
        Opt {
            long: self.long,
            short: self.short,
            has_arg: self.has_arg,
            name,
            tag: (),
            exact_only: self.exact_only,
        }
    }

    /// This entry carrying `tag`.
    pub const fn tag<T>(self, tag: T) -> Opt<T> {
        Opt {
            long: self.long,
            short: self.short,
            has_arg: self.has_arg,
            name: self.name,
            tag,
            exact_only: self.exact_only,
        }
    }
}

impl<T: Copy> Opt<T> {
    /// This entry, selected by its whole name only (see [`Opt::exact_only`]).
    pub const fn exact_only(self) -> Opt<T> {
        Opt {
            long: self.long,
            short: self.short,
            has_arg: self.has_arg,
            name: self.name,
            tag: self.tag,
            exact_only: true,
        }
    }
}

/// How operands (words that are not options) are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The first operand ends the options: it and every word after it are operands
    /// (getopt's `+` mode, which sbatch, srun and salloc use).
    RequireOrder,
    /// Operands may come anywhere; options after them are still options (getopt's
    /// default permutation).
    Permute,
}

/// An option found, with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found<'a, T = ()> {
    /// The table's entry.
    pub opt: &'a Opt<T>,
    /// The value (always there for [`HasArg::Required`], never for [`HasArg::No`]).
    pub value: Option<String>,
}

impl<T> Found<'_, T> {
    /// The option's name ([`Opt::name`]: aliases give the name they stand for).
    pub fn name(&self) -> &'static str {
        self.opt.name
    }

    /// The value, or `""` when there is none.
    pub fn value(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }

    /// The value as a comma-separated list, empty items dropped.
    pub fn list(&self) -> Vec<String> {
        self.value()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// What the walk gives, word by word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed<'a, T = ()> {
    /// An option and its value.
    Opt(Found<'a, T>),
    /// A word that is not an option (or any word after `--`, or, under
    /// [`Order::RequireOrder`], after the first operand).
    Operand(String),
}

/// A word getopt refuses. [`fmt::Display`] gives glibc's words, which every Slurm
/// command prints after its program name (`unrecognized option '--foo=1'`); each
/// variant keeps the word as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetoptError {
    /// `--NAME` (or `--NAME=VALUE`) names no option.
    UnrecognizedLong {
        /// What follows `--`, up to any `=`.
        name: String,
        /// The whole word.
        word: String,
    },
    /// `-L` (alone or in a cluster) is no option's letter.
    InvalidShort {
        /// The letter.
        letter: char,
        /// The word from that letter on, without the `-` (`zfoo` in `-vzfoo`).
        rest: String,
        /// The whole word.
        word: String,
    },
    /// `--NAME` is the prefix of several options.
    Ambiguous {
        /// What follows `--`, up to any `=`.
        name: String,
        /// The options it could be, in the table's order.
        candidates: Vec<&'static str>,
        /// The whole word.
        word: String,
    },
    /// A long option that needs a value ends the line.
    LongRequiresArgument {
        /// The option's long name (in full, however it was typed).
        long: &'static str,
        /// The whole word.
        word: String,
    },
    /// A short option that needs a value ends the line.
    ShortRequiresArgument {
        /// The letter.
        letter: char,
        /// The option's long name.
        long: &'static str,
        /// The whole word.
        word: String,
    },
    /// `--NAME=VALUE` for a flag.
    NoArgumentAllowed {
        /// The option's long name (in full).
        long: &'static str,
        /// The whole word.
        word: String,
    },
}

impl GetoptError {
    /// The word the error is about, as typed.
    pub fn word(&self) -> &str {
        match self {
            GetoptError::UnrecognizedLong { word, .. }
            | GetoptError::InvalidShort { word, .. }
            | GetoptError::Ambiguous { word, .. }
            | GetoptError::LongRequiresArgument { word, .. }
            | GetoptError::ShortRequiresArgument { word, .. }
            | GetoptError::NoArgumentAllowed { word, .. } => word,
        }
    }
}

/// glibc's messages (2.36, Debian bookworm's, which Slurm 22.05's commands link),
/// without the program name. An unknown or ambiguous long option is quoted as typed,
/// `=VALUE` included; a missing or unwanted value names the option in full, however
/// it was abbreviated.
impl fmt::Display for GetoptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GetoptError::UnrecognizedLong { word, .. } => {
                write!(f, "unrecognized option '{word}'")
            }
            GetoptError::InvalidShort { letter, .. } => write!(f, "invalid option -- '{letter}'"),
            GetoptError::Ambiguous {
                candidates, word, ..
            } => {
                write!(f, "option '{word}' is ambiguous; possibilities:")?;
                for c in candidates {
                    write!(f, " '--{c}'")?;
                }
                Ok(())
            }
            GetoptError::LongRequiresArgument { long, .. } => {
                write!(f, "option '--{long}' requires an argument")
            }
            GetoptError::ShortRequiresArgument { letter, .. } => {
                write!(f, "option requires an argument -- '{letter}'")
            }
            GetoptError::NoArgumentAllowed { long, .. } => {
                write!(f, "option '--{long}' doesn't allow an argument")
            }
        }
    }
}

impl std::error::Error for GetoptError {}

/// A command line walked option by option (an iterator of [`Parsed`] or
/// [`GetoptError`]). After an error the walk goes on at the next word, so a command
/// that takes some refused words as operands (scontrol) can keep going.
pub struct Getopt<'a, T = ()> {
    table: &'a [Opt<T>],
    args: Vec<String>,
    /// The next word to read.
    next: usize,
    /// Inside a cluster of short options: the word and the byte where the next
    /// letter starts.
    cluster: Option<(usize, usize)>,
    order: Order,
    /// `--` was seen, or an operand under [`Order::RequireOrder`]: the rest are
    /// operands.
    ended: bool,
}

impl<'a, T> Getopt<'a, T> {
    /// Walks `args` (without the program name) against `table`.
    pub fn new(table: &'a [Opt<T>], args: impl IntoIterator<Item = String>, order: Order) -> Self {
        Getopt {
            table,
            args: args.into_iter().collect(),
            next: 0,
            cluster: None,
            order,
            ended: false,
        }
    }

    /// The words not read yet (after the option or operand just given).
    pub fn remaining(&self) -> &[String] {
        &self.args[self.next.min(self.args.len())..]
    }

    /// The word the walk reads next, when it is at the start of one (none inside a
    /// cluster of short options, whose word glibc's `argv[optind]` still is): scontrol
    /// looks at it to stop before `setdebugflags -Flag`.
    pub fn upcoming(&self) -> Option<&str> {
        if self.cluster.is_some() {
            return None;
        }
        self.args.get(self.next).map(String::as_str)
    }

    /// The value of an option that needs one and has none attached: the next word.
    fn next_word(&mut self) -> Option<String> {
        let w = self.args.get(self.next).cloned()?;
        self.next += 1;
        Some(w)
    }

    fn long(&mut self, word: String) -> Result<Parsed<'a, T>, GetoptError> {
        let body = &word[2..];
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let opt = find_long(self.table, name, &word)?;
        let value = match (opt.has_arg, inline) {
            (HasArg::No, Some(_)) => {
                return Err(GetoptError::NoArgumentAllowed {
                    long: opt.long,
                    word,
                })
            }
            (HasArg::No | HasArg::Optional, None) => None,
            (_, Some(v)) => Some(v),
            (HasArg::Required, None) => match self.next_word() {
                Some(v) => Some(v),
                None => {
                    return Err(GetoptError::LongRequiresArgument {
                        long: opt.long,
                        word,
                    })
                }
            },
        };
        Ok(Parsed::Opt(Found { opt, value }))
    }

    /// The short option starting at byte `at` of word `w`.
    fn short(&mut self, w: usize, at: usize) -> Result<Parsed<'a, T>, GetoptError> {
        let word = &self.args[w];
        let letter = word[at..].chars().next().expect("a letter after the dash");
        let after = at + letter.len_utf8();
        let rest = word[after..].to_string();
        let Some(opt) = self.table.iter().find(|o| o.short == Some(letter)) else {
            return Err(GetoptError::InvalidShort {
                letter,
                rest: word[at..].to_string(),
                word: word.clone(),
            });
        };
        let value = match opt.has_arg {
            HasArg::No => {
                if !rest.is_empty() {
                    self.cluster = Some((w, after));
                }
                None
            }
            HasArg::Optional => (!rest.is_empty()).then_some(rest),
            HasArg::Required if !rest.is_empty() => Some(rest),
            HasArg::Required => {
                let word = word.clone();
                match self.next_word() {
                    Some(v) => Some(v),
                    None => {
                        return Err(GetoptError::ShortRequiresArgument {
                            letter,
                            long: opt.long,
                            word,
                        })
                    }
                }
            }
        };
        Ok(Parsed::Opt(Found { opt, value }))
    }
}

impl<'a, T> Iterator for Getopt<'a, T> {
    type Item = Result<Parsed<'a, T>, GetoptError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((w, at)) = self.cluster.take() {
            return Some(self.short(w, at));
        }
        let w = self.next;
        let word = self.next_word()?;
        if self.ended {
            return Some(Ok(Parsed::Operand(word)));
        }
        if word == "--" {
            self.ended = true;
            return self.next();
        }
        if word.starts_with("--") {
            return Some(self.long(word));
        }
        if word.len() > 1 && word.starts_with('-') {
            return Some(self.short(w, 1));
        }
        if self.order == Order::RequireOrder {
            self.ended = true;
        }
        Some(Ok(Parsed::Operand(word)))
    }
}

/// The entry `--name` names: the one of that name, else the one option it is a
/// prefix of (glibc's rules: the empty name of `--=x` is a prefix of every option).
///
/// Errors: no such option, or a prefix of several.
fn find_long<'a, T>(
    table: &'a [Opt<T>],
    name: &str,
    word: &str,
) -> Result<&'a Opt<T>, GetoptError> {
    let named = table.iter().filter(|o| !o.long.is_empty());
    if let Some(o) = named.clone().find(|o| o.long == name) {
        return Ok(o);
    }
    let mut matches = named.filter(|o| !o.exact_only && o.long.starts_with(name));
    let Some(first) = matches.next() else {
        return Err(GetoptError::UnrecognizedLong {
            name: name.to_string(),
            word: word.to_string(),
        });
    };
    // As glibc: every later match that is not the first one under another name.
    let others: Vec<&'static str> = matches
        .filter(|o| o.name != first.name || o.has_arg != first.has_arg)
        .map(|o| o.long)
        .collect();
    if others.is_empty() {
        return Ok(first);
    }
    Err(GetoptError::Ambiguous {
        name: name.to_string(),
        candidates: std::iter::once(first.long).chain(others).collect(),
        word: word.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Opt] = &[
        Opt::flag("hold", Some('H')),
        Opt::flag("verbose", Some('v')),
        Opt::required("nodes", Some('N')),
        Opt::required("nodelist", Some('w')),
        Opt::required("partition", Some('p')),
        Opt::required("user", Some('u')),
        Opt::required("users", None).alias_of("user"),
        Opt::optional("exclusive", None),
        Opt::optional("kill", Some('k')),
        Opt::flag("parsable", None),
        Opt::flag("parsable2", Some('P')),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// Each item as `name=value`, `name`, `[operand]` or `!message`.
    fn walk(order: Order, s: &str) -> Vec<String> {
        walk_in(TABLE, order, s)
    }

    fn walk_table(table: &[Opt], s: &str) -> Vec<String> {
        walk_in(table, Order::Permute, s)
    }

    fn walk_in(table: &[Opt], order: Order, s: &str) -> Vec<String> {
        Getopt::new(table, words(s), order)
            .map(|item| match item {
                Ok(Parsed::Opt(f)) => match &f.value {
                    Some(v) => format!("{}={v}", f.name()),
                    None => f.name().to_string(),
                },
                Ok(Parsed::Operand(w)) => format!("[{w}]"),
                Err(e) => format!("!{e}"),
            })
            .collect()
    }

    fn permute(s: &str) -> Vec<String> {
        walk(Order::Permute, s)
    }

    #[test]
    fn long_options_take_values_after_equals_or_as_the_next_word() {
        assert_eq!(
            permute("--partition=debug --partition gpu --nodes= --hold"),
            ["partition=debug", "partition=gpu", "nodes=", "hold"]
        );
        // A value may look like an option.
        assert_eq!(permute("--user -v"), ["user=-v"]);
    }

    #[test]
    fn short_options_take_values_attached_or_as_the_next_word() {
        assert_eq!(
            permute("-pdebug -p gpu -N2"),
            ["partition=debug", "partition=gpu", "nodes=2"]
        );
    }

    #[test]
    fn short_flags_cluster_and_the_first_value_taker_ends_the_cluster() {
        assert_eq!(permute("-vv"), ["verbose", "verbose"]);
        assert_eq!(
            permute("-Hvp debug"),
            ["hold", "verbose", "partition=debug"]
        );
        assert_eq!(permute("-vualice"), ["verbose", "user=alice"]);
        assert_eq!(permute("-vNv"), ["verbose", "nodes=v"]);
    }

    #[test]
    fn long_names_may_be_cut_to_a_unique_prefix() {
        assert_eq!(
            permute("--part=debug --ho --verb"),
            ["partition=debug", "hold", "verbose"]
        );
        // An exact name wins over the longer names it is a prefix of.
        assert_eq!(permute("--parsable"), ["parsable"]);
        assert_eq!(permute("--nodes 2"), ["nodes=2"]);
        // Two names of one option are not ambiguous.
        assert_eq!(permute("--use bob"), ["user=bob"]);
    }

    #[test]
    fn a_prefix_of_several_options_is_ambiguous() {
        assert_eq!(
            permute("--nod 2"),
            [
                "!option '--nod' is ambiguous; possibilities: '--nodes' '--nodelist'",
                "[2]"
            ]
        );
        assert_eq!(
            permute("--pars"),
            ["!option '--pars' is ambiguous; possibilities: '--parsable' '--parsable2'"]
        );
        let e = Getopt::new(TABLE, words("--nod=2"), Order::Permute)
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e,
            GetoptError::Ambiguous {
                name: "nod".into(),
                candidates: vec!["nodes", "nodelist"],
                word: "--nod=2".into()
            }
        );
    }

    #[test]
    fn optional_values_only_when_attached() {
        assert_eq!(
            permute("--exclusive --exclusive=user -k -k1 x"),
            ["exclusive", "exclusive=user", "kill", "kill=1", "[x]"]
        );
    }

    #[test]
    fn missing_values_and_unwanted_ones_are_refused() {
        assert_eq!(
            permute("--partition"),
            ["!option '--partition' requires an argument"]
        );
        assert_eq!(
            permute("--part"),
            ["!option '--partition' requires an argument"]
        );
        assert_eq!(
            permute("-vp"),
            ["verbose", "!option requires an argument -- 'p'"]
        );
        assert_eq!(
            permute("--hold=yes"),
            ["!option '--hold' doesn't allow an argument"]
        );
        let e = Getopt::new(TABLE, words("-p"), Order::Permute)
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e,
            GetoptError::ShortRequiresArgument {
                letter: 'p',
                long: "partition",
                word: "-p".into()
            }
        );
    }

    #[test]
    fn unknown_options_are_refused_and_the_walk_goes_on_at_the_next_word() {
        assert_eq!(
            permute("--frobnicate=1 -vzq -H"),
            [
                "!unrecognized option '--frobnicate=1'",
                "verbose",
                "!invalid option -- 'z'",
                "hold"
            ]
        );
        let errors: Vec<GetoptError> = Getopt::new(TABLE, words("--foo=bar -vzq"), Order::Permute)
            .filter_map(Result::err)
            .collect();
        assert_eq!(
            errors,
            [
                GetoptError::UnrecognizedLong {
                    name: "foo".into(),
                    word: "--foo=bar".into()
                },
                GetoptError::InvalidShort {
                    letter: 'z',
                    rest: "zq".into(),
                    word: "-vzq".into()
                }
            ]
        );
    }

    #[test]
    fn an_empty_name_is_a_prefix_of_every_option() {
        // glibc: `--=x` is ambiguous among all (an exact name aside), quoted as typed.
        let all: Vec<&str> = TABLE.iter().map(|o| o.long).collect();
        assert_eq!(
            permute("--=x"),
            [format!(
                "!option '--=x' is ambiguous; possibilities: '--{}'",
                all.join("' '--")
            )]
        );
    }

    #[test]
    fn unknown_and_ambiguous_words_are_quoted_whole() {
        assert_eq!(permute("--bogus=1"), ["!unrecognized option '--bogus=1'"]);
        assert_eq!(
            permute("--nod=2"),
            ["!option '--nod=2' is ambiguous; possibilities: '--nodes' '--nodelist'"]
        );
    }

    #[test]
    fn letters_without_long_names_and_whole_name_only_entries() {
        const T: &[Opt] = &[
            Opt::required("accounts", Some('A')),
            Opt::required("", Some('U')).alias_of("accounts"),
            Opt::flag("signal", None),
            Opt::required("segment", None).exact_only(),
        ];
        let w = |s: &str| walk_table(T, s);
        assert_eq!(w("-Ux"), ["accounts=x"]);
        // The letter-only entry has no name to match, even the empty one.
        assert_eq!(
            w("--=1"),
            ["!option '--=1' is ambiguous; possibilities: '--accounts' '--signal'"]
        );
        // Sluice's additions answer to their whole name only.
        assert_eq!(
            w("--segment=2 --s --sig"),
            ["segment=2", "signal", "signal"]
        );
        assert_eq!(w("--seg"), ["!unrecognized option '--seg'"]);
    }

    #[test]
    fn double_dash_ends_the_options() {
        assert_eq!(permute("-v -- -H --hold"), ["verbose", "[-H]", "[--hold]"]);
        assert_eq!(permute("-v --"), ["verbose"]);
    }

    #[test]
    fn operands_end_the_options_or_come_among_them() {
        assert_eq!(
            walk(Order::RequireOrder, "-v job.sh -H - x"),
            ["verbose", "[job.sh]", "[-H]", "[-]", "[x]"]
        );
        assert_eq!(permute("5 -H - 6"), ["[5]", "hold", "[-]", "[6]"]);
        let mut g = Getopt::new(TABLE, words("-v job.sh -H x"), Order::RequireOrder);
        assert!(matches!(g.next(), Some(Ok(Parsed::Opt(_)))));
        assert_eq!(g.next(), Some(Ok(Parsed::Operand("job.sh".into()))));
        assert_eq!(g.remaining(), ["-H", "x"]);
    }

    #[test]
    fn the_upcoming_word_is_known_between_words_only() {
        let mut g = Getopt::new(TABLE, words("-vH setdebugflags -x"), Order::Permute);
        assert_eq!(g.upcoming(), Some("-vH"));
        g.next();
        assert_eq!(g.upcoming(), None);
        g.next();
        assert_eq!(g.upcoming(), Some("setdebugflags"));
        assert_eq!(g.remaining(), ["setdebugflags", "-x"]);
    }

    #[test]
    fn tags_travel_with_their_options() {
        const TAGGED: &[Opt<u8>] = &[
            Opt::flag("one", Some('1')).tag(1),
            Opt::flag("two", None).tag(2),
        ];
        let tags: Vec<u8> = Getopt::new(TAGGED, words("-1 --tw"), Order::Permute)
            .map(|p| match p {
                Ok(Parsed::Opt(f)) => f.opt.tag,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(tags, [1, 2]);
    }

    #[test]
    fn comma_lists() {
        let f = Found {
            opt: &TABLE[5],
            value: Some("a,,b".into()),
        };
        assert_eq!(f.list(), ["a", "b"]);
        assert_eq!(f.name(), "user");
    }
}
