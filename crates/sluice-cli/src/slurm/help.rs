//! `--help` and `--usage` of the Slurm commands: Slurm's layout (a `Usage:` line,
//! options in groups, `-x, --long=VALUE` then the text in a column), Sluice's own words.
//!
//! A command's help is a list of [`Group`]s of [`Entry`]s next to its parser; an entry
//! names an option by its long name and gives only the word that stands for its value
//! and one line of text. Everything else is read from the command's option table: the
//! letter, and whether the value is required (`=VALUE`) or optional (`[=VALUE]`), so
//! help cannot drift from what getopt parses. The options a command takes without
//! effect and those it refuses are named, by their table, on two lines at the end.

use sluice_conf::getopt::{HasArg, Opt};

/// One option in the help: its long name in the command's table, the word for its
/// value (unused for a flag), and its description (`\n` starts a continuation line).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The long name (`partition`), as in the table.
    pub long: &'static str,
    /// The value's word (`name`); empty: shown as a flag, even if a value may follow.
    pub value: &'static str,
    /// What the option does, in Sluice.
    pub text: &'static str,
}

/// An [`Entry`].
pub const fn e(long: &'static str, value: &'static str, text: &'static str) -> Entry {
    Entry { long, value, text }
}

/// A titled group of options (`Constraint options:`).
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// The title line; empty for none.
    pub title: &'static str,
    /// Its options, in the order shown.
    pub entries: &'static [Entry],
}

/// The table entry of `long`.
pub fn find<'a, T>(table: &'a [Opt<T>], long: &str) -> Option<&'a Opt<T>> {
    table.iter().find(|o| o.long == long)
}

/// `-x, --long=VALUE` (or `    --long[=VALUE]`) for `entry`, by `table`.
pub fn option_column<T>(table: &[Opt<T>], entry: &Entry) -> String {
    let (short, has_arg) = match find(table, entry.long) {
        Some(o) => (
            o.short.or_else(|| {
                // The letter may sit on another entry of the same option.
                table
                    .iter()
                    .find(|x| x.name == o.name && x.has_arg == o.has_arg && x.short.is_some())
                    .and_then(|x| x.short)
            }),
            o.has_arg,
        ),
        None => (None, HasArg::No),
    };
    let value = match has_arg {
        _ if entry.value.is_empty() => String::new(),
        HasArg::No => String::new(),
        HasArg::Required => format!("={}", entry.value),
        HasArg::Optional => format!("[={}]", entry.value),
    };
    match short {
        Some(c) => format!("  -{c}, --{}{value}", entry.long),
        None => format!("      --{}{value}", entry.long),
    }
}

/// The groups as lines: the option column, then the text from column `width` (on the
/// next line when the option is wider). `keep` chooses the table entries shown.
pub fn render<T>(
    groups: &[Group],
    table: &[Opt<T>],
    width: usize,
    keep: impl Fn(&Opt<T>) -> bool,
) -> String {
    let mut out = String::new();
    for group in groups {
        let shown: Vec<&Entry> = group
            .entries
            .iter()
            .filter(|e| find(table, e.long).is_some_and(&keep))
            .collect();
        if shown.is_empty() {
            continue;
        }
        if !group.title.is_empty() {
            out.push('\n');
            out.push_str(group.title);
            out.push('\n');
        }
        for entry in shown {
            let column = option_column(table, entry);
            out.push_str(&column);
            let mut lines = entry.text.lines();
            if column.len() + 1 > width {
                out.push('\n');
                out.push_str(&" ".repeat(width));
            } else {
                out.push_str(&" ".repeat(width - column.len()));
            }
            out.push_str(lines.next().unwrap_or(""));
            out.push('\n');
            for line in lines {
                out.push_str(&" ".repeat(width));
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The groups in sacct's layout: `     -a, --allusers:` then the text on lines of its
/// own, indented 19.
pub fn render_described<T>(groups: &[Group], table: &[Opt<T>]) -> String {
    let mut out = String::new();
    for entry in groups.iter().flat_map(|g| g.entries) {
        let Some(o) = find(table, entry.long) else {
            continue;
        };
        let short = table
            .iter()
            .find(|x| x.name == o.name && x.has_arg == o.has_arg && x.short.is_some())
            .and_then(|x| x.short);
        match short {
            Some(c) => out.push_str(&format!("     -{c}, --{}:\n", entry.long)),
            None => out.push_str(&format!("     --{}:\n", entry.long)),
        }
        for line in entry.text.lines() {
            out.push_str(&" ".repeat(19));
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Names four to a line, each padded to 19 columns and one space between (Slurm's
/// `--helpformat` of sacct).
pub fn four_to_a_line(names: &[&str]) -> String {
    let mut out = String::new();
    for (i, n) in names.iter().enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{n:<19}"));
    }
    out.push('\n');
    out
}

/// `title` then `items`, comma separated, wrapped before column 79 with continuation
/// lines indented two spaces; empty when there are no items.
pub fn list_line(title: &str, items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from(title);
    let mut col = out.len();
    for (i, item) in items.iter().enumerate() {
        let word = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if col + 1 + word.len() > 78 {
            out.push_str("\n  ");
            col = 2;
        } else {
            out.push(' ');
            col += 1;
        }
        out.push_str(&word);
        col += word.len();
    }
    out.push('\n');
    out
}

/// The options of `table` that `pick` chooses, each once, in table order: `--name` (an
/// alias under its option's name), or `-x` for a letter of no long option.
pub fn names<T>(table: &[Opt<T>], pick: impl Fn(&Opt<T>) -> bool) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for o in table.iter().filter(|o| pick(o)) {
        if seen.contains(&o.name) {
            continue;
        }
        seen.push(o.name);
        let has_long = table.iter().any(|x| x.name == o.name && !x.long.is_empty());
        out.push(match o.short {
            Some(c) if !has_long => format!("-{c}"),
            _ => format!("--{}", o.name),
        });
    }
    out
}

/// A command's whole `--help`: `first` (its usage line), the groups (every entry
/// shown, text from column `width`), then the options it accepts without effect
/// (`ignored`, by name) and those it refuses (every other option the groups do not
/// list).
pub fn command_help<T>(
    first: &str,
    groups: &[Group],
    table: &[Opt<T>],
    width: usize,
    ignored: &[&str],
) -> String {
    let mut out = String::from(first);
    out.push_str(&render(groups, table, width, |_| true));
    out.push('\n');
    out.push_str(&trailer(groups, table, ignored));
    out
}

/// The last lines of a command's help: the options it accepts without effect
/// (`ignored`, by name), then those it refuses (every other option `groups` do not
/// list).
pub fn trailer<T>(groups: &[Group], table: &[Opt<T>], ignored: &[&str]) -> String {
    let listed: Vec<&str> = groups
        .iter()
        .flat_map(|g| g.entries)
        .filter_map(|e| find(table, e.long).map(|o| o.name))
        .collect();
    let mut out = list_line(
        "Accepted without effect in Sluice:",
        &names(table, |o| ignored.contains(&o.name)),
    );
    out.push_str(&list_line(
        "Not supported by Sluice:",
        &names(table, |o| {
            !ignored.contains(&o.name) && !listed.contains(&o.name) && !o.exact_only
        }),
    ));
    out
}

/// A synopsis: `Usage: CMD [-N nodes] [--mem=MB] ... TAIL`, an item per shown option
/// of `groups`, wrapped before column 79 under the first item.
pub fn synopsis<T>(
    cmd: &str,
    groups: &[Group],
    table: &[Opt<T>],
    keep: impl Fn(&Opt<T>) -> bool,
    tail: &str,
) -> String {
    let mut items = Vec::new();
    for entry in groups.iter().flat_map(|g| g.entries) {
        let Some(o) = find(table, entry.long).filter(|o| keep(o)) else {
            continue;
        };
        if matches!(o.name, "help" | "usage" | "version") {
            continue;
        }
        let has_arg = if entry.value.is_empty() {
            HasArg::No
        } else {
            o.has_arg
        };
        items.push(match (o.short, has_arg) {
            (Some(c), HasArg::No) => format!("[-{c}]"),
            (Some(c), HasArg::Required) => format!("[-{c} {}]", entry.value),
            (_, HasArg::No) => format!("[--{}]", entry.long),
            (_, HasArg::Required) => format!("[--{}={}]", entry.long, entry.value),
            (_, HasArg::Optional) => format!("[--{}[={}]]", entry.long, entry.value),
        });
    }
    if !tail.is_empty() {
        items.push(tail.to_string());
    }
    let head = format!("Usage: {cmd} ");
    let mut out = head.clone();
    let mut col = head.len();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            if col + 1 + item.len() > 78 {
                out.push('\n');
                out.push_str(&" ".repeat(head.len()));
                col = head.len();
            } else {
                out.push(' ');
                col += 1;
            }
        }
        out.push_str(item);
        col += item.len();
    }
    out.push('\n');
    out
}

/// The long names an entry list names that `table` lacks (for the tests).
#[cfg(test)]
pub fn unknown<T>(groups: &[Group], table: &[Opt<T>]) -> Vec<&'static str> {
    groups
        .iter()
        .flat_map(|g| g.entries)
        .filter(|e| find(table, e.long).is_none())
        .map(|e| e.long)
        .collect()
}

/// The option names `groups` list (an alias counts for its option).
#[cfg(test)]
pub fn listed<T>(groups: &[Group], table: &[Opt<T>]) -> Vec<&'static str> {
    groups
        .iter()
        .flat_map(|g| g.entries)
        .filter_map(|e| find(table, e.long).map(|o| o.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Opt] = &[
        Opt::required("nodes", Some('N')),
        Opt::optional("nice", None),
        Opt::flag("hold", Some('H')),
        Opt::required("tasks-per-node", None).alias_of("ntasks-per-node"),
        Opt::required("ntasks-per-node", None),
        Opt::required("", Some('U')).alias_of("accounts"),
        Opt::required("accounts", None),
    ];

    #[test]
    fn columns_come_from_the_table() {
        const ENTRIES: &[Entry] = &[
            e("nodes", "N", "node count\n(min[-max])"),
            e("nice", "value", "lower the priority"),
            e("hold", "", "held"),
            e("accounts", "list", "these accounts"),
            e("ntasks-per-node", "n", "tasks on each node, a long column"),
        ];
        let groups = [Group {
            title: "Some options:",
            entries: ENTRIES,
        }];
        let text = render(&groups, TABLE, 24, |_| true);
        assert_eq!(
            text,
            "\nSome options:\n\
             \x20 -N, --nodes=N         node count\n\
             \x20                       (min[-max])\n\
             \x20     --nice[=value]    lower the priority\n\
             \x20 -H, --hold            held\n\
             \x20 -U, --accounts=list   these accounts\n\
             \x20     --ntasks-per-node=n\n\
             \x20                       tasks on each node, a long column\n"
        );
        assert_eq!(
            render(&groups, TABLE, 24, |o| o.long == "hold")
                .lines()
                .count(),
            3
        );
        assert_eq!(
            synopsis("x", &groups, TABLE, |_| true, "script"),
            "Usage: x [-N N] [--nice[=value]] [-H] [--accounts=list] \
             [--ntasks-per-node=n]\n         script\n"
        );
    }

    #[test]
    fn lists_wrap_and_name_each_option_once() {
        let n = names(TABLE, |o| o.name != "nodes");
        assert_eq!(n, ["--nice", "--hold", "--ntasks-per-node", "--accounts"]);
        assert_eq!(
            list_line("Not here:", &n),
            "Not here: --nice, --hold, --ntasks-per-node, --accounts\n"
        );
        const LETTER: &[Opt] = &[Opt::flag("", Some('t')), Opt::flag("all", None)];
        assert_eq!(names(LETTER, |_| true), ["-t", "--all"]);
        let many: Vec<String> = (0..20).map(|i| format!("--option-{i}")).collect();
        let text = list_line("Title:", &many);
        assert!(text.lines().all(|l| l.len() <= 78), "{text}");
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("  --")),
            "{text}"
        );
        assert_eq!(list_line("Title:", &[]), "");
    }

    #[test]
    fn each_commands_help_names_only_its_own_options() {
        use crate::slurm::{sacct, scancel, sinfo, squeue, sstat};
        type Case = (
            &'static str,
            &'static [Group],
            &'static [Opt],
            &'static [&'static str],
        );
        let cases: [Case; 5] = [
            ("squeue", squeue::HELP, squeue::OPTIONS, squeue::IGNORED),
            ("sinfo", sinfo::HELP, sinfo::OPTIONS, sinfo::IGNORED),
            ("scancel", scancel::HELP, scancel::OPTIONS, scancel::IGNORED),
            ("sacct", sacct::HELP, sacct::OPTIONS, sacct::IGNORED),
            ("sstat", sstat::HELP, sstat::OPTIONS, sstat::IGNORED),
        ];
        for (cmd, groups, table, ignored) in cases {
            assert_eq!(unknown(groups, table), Vec::<&str>::new(), "{cmd}");
            let listed = listed(groups, table);
            for must in ["help", "usage", "version"] {
                assert!(listed.contains(&must), "{cmd}: --{must}");
            }
            for i in ignored {
                assert!(table.iter().any(|o| o.name == *i), "{cmd}: {i}");
                assert!(!listed.contains(i), "{cmd}: --{i} is listed and ignored");
            }
            // Every option is described, or named at the end.
            let text = command_help("", groups, table, 30, ignored);
            for o in table {
                let name = names(table, |x| x.name == o.name).remove(0);
                assert!(text.contains(&name), "{cmd}: {name}");
            }
        }
    }
}
