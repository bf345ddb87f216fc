//! Every command's option table against real Slurm 22.05.8's, as its binary hands it
//! to getopt_long (`tests/samples/options/`, dumped under gdb): the same long names in
//! the same order (the order of an ambiguous abbreviation's candidates), the same value
//! kinds, the same aliases (entries with one `val` are one option), and the same
//! letters with the same value kinds, each the letter of the same option.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice_conf::getopt::{HasArg, Opt};
use sluice_conf::options::{option_table, Command};

/// One command's real table: its letters (with their value kinds) and its long
/// options (name, value kind, `val`), in order.
struct Real {
    letters: BTreeMap<char, HasArg>,
    longs: Vec<(String, HasArg, i64)>,
}

fn kind(n: u8) -> HasArg {
    match n {
        0 => HasArg::No,
        1 => HasArg::Required,
        2 => HasArg::Optional,
        other => panic!("has_arg {other}"),
    }
}

fn real(command: &str) -> Real {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples/options")
        .join(format!("{command}.txt"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let optstring = lines
        .next()
        .and_then(|l| l.strip_prefix("OPTSTRING '"))
        .and_then(|l| l.strip_suffix('\''))
        .expect("the short options first");
    let chars: Vec<char> = optstring.trim_start_matches('+').chars().collect();
    let mut letters = BTreeMap::new();
    let mut i = 0;
    while i < chars.len() {
        let colons = chars[i + 1..]
            .iter()
            .take(2)
            .take_while(|&&c| c == ':')
            .count();
        letters.insert(chars[i], kind(colons as u8));
        i += 1 + colons;
    }
    let longs = lines
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!((f[0], f.len(), f[3]), ("OPT", 5, "0"), "{l}");
            (
                f[1].to_string(),
                kind(f[2].parse().unwrap()),
                f[4].parse().unwrap(),
            )
        })
        .collect();
    Real { letters, longs }
}

/// Checks `table` against real `command`'s.
fn check<T>(command: &str, table: &[Opt<T>]) {
    let real = real(command);
    let named: Vec<&Opt<T>> = table
        .iter()
        .filter(|o| !o.long.is_empty() && !o.exact_only)
        .collect();
    let ours: Vec<(&str, HasArg)> = named.iter().map(|o| (o.long, o.has_arg)).collect();
    let theirs: Vec<(&str, HasArg)> = real.longs.iter().map(|l| (l.0.as_str(), l.1)).collect();
    assert_eq!(ours, theirs, "{command}: long options, in order");
    // One option under several names exactly where Slurm has one `val` for them.
    for (i, a) in named.iter().enumerate() {
        for (j, b) in named.iter().enumerate() {
            let same_ours = a.name == b.name && a.has_arg == b.has_arg;
            let same_theirs = real.longs[i].2 == real.longs[j].2 && a.has_arg == b.has_arg;
            assert_eq!(
                same_ours, same_theirs,
                "{command}: --{} and --{}",
                a.long, b.long
            );
        }
    }
    // The same letters, each with its value kind and, where Slurm's has a long name,
    // the letter of that option.
    let ours: BTreeMap<char, HasArg> = table
        .iter()
        .filter_map(|o| o.short.map(|c| (c, o.has_arg)))
        .collect();
    assert_eq!(ours, real.letters, "{command}: letters");
    for o in table {
        let Some(c) = o.short else { continue };
        let theirs = real
            .longs
            .iter()
            .position(|l| l.2 == c as i64 && l.1 == o.has_arg);
        match theirs {
            Some(i) => assert_eq!(o.name, named[i].name, "{command}: -{c}"),
            None => assert!(
                o.long.is_empty(),
                "{command}: -{c} has no long name in Slurm's table"
            ),
        }
    }
}

#[test]
fn every_commands_table_is_real_slurms() {
    check("sbatch", option_table(Command::Sbatch));
    check("srun", option_table(Command::Srun));
    check("salloc", option_table(Command::Salloc));
    check("squeue", super::squeue::OPTIONS);
    check("sinfo", super::sinfo::OPTIONS);
    check("scancel", super::scancel::OPTIONS);
    check("sacct", super::sacct::OPTIONS);
    check("scontrol", super::scontrol::OPTIONS);
    check("sprio", super::sprio::OPTIONS);
    check("sshare", super::sshare::OPTIONS);
    check("sacctmgr", super::sacctmgr::parse::OPTIONS);
    check("sdiag", super::sdiag::OPTIONS);
}
