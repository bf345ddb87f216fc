//! `sacctmgr`'s command line: options, the command and entity words, and the
//! `key=value` specifications (names, `where` conditions, `set` values) into requests.
//! Pure: the tracked TRES come from the controller's listing.

use std::collections::BTreeSet;

use sluice_conf::duration::parse_minutes;
use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_ctld::accounts::parse_shares;
use sluice_proto::accounts::{
    parse_tres, AdminLevel, AssocChange, Change, FlagsChange, LimitsChange, ListChange,
    PreemptMode, QosChange, QosFlag, TresChange,
};

use crate::slurm::common::Refusal;

const ME: &str = "sacctmgr";

/// Options before (or among) the words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opts {
    /// `-i`/`--immediate`: commit without asking.
    pub immediate: bool,
    /// `-n`/`--noheader`.
    pub noheader: bool,
    /// `-p`/`--parsable` (`Some(true)`: each field followed by `|`) or
    /// `-P`/`--parsable2` (`Some(false)`: fields separated by `|`).
    pub parsable: Option<bool>,
    /// `-Q`/`--quiet`.
    pub quiet: bool,
    /// `-s`/`--associations`: as `withassoc`.
    pub withassoc: bool,
    /// `-V`/`--version`.
    pub version: bool,
    /// `-h`/`--help`.
    pub help: bool,
}

/// The command word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `add`, `create`.
    Add,
    /// `modify`, `update`.
    Modify,
    /// `delete`, `remove`.
    Delete,
    /// `show`, `list`.
    Show,
}

/// The entity word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    /// `account`.
    Account,
    /// `association`.
    Association,
    /// `cluster`.
    Cluster,
    /// `qos`.
    Qos,
    /// `user`.
    User,
}

/// sacctmgr's options: Slurm 22.05's table, in its order (which orders the candidates
/// of an ambiguous prefix).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("help", Some('h')),
    Opt::flag("usage", None).alias_of("help"),
    Opt::flag("immediate", Some('i')),
    Opt::flag("noheader", Some('n')),
    Opt::flag("oneliner", Some('o')),
    Opt::flag("parsable", Some('p')),
    Opt::flag("parsable2", Some('P')),
    Opt::flag("quiet", Some('Q')),
    Opt::flag("readonly", Some('r')),
    Opt::flag("associations", Some('s')),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
];

/// Splits the arguments into options and words (options may come anywhere, as
/// getopt permutes them).
///
/// Errors: a refused option: the message lines, as sacctmgr prints them (getopt's
/// words after the program name and sacctmgr's hint, or an option Sluice does not
/// support).
pub fn options(args: &[String]) -> Result<(Opts, Vec<String>), Vec<String>> {
    let mut o = Opts::default();
    let mut words = Vec::new();
    for item in Getopt::new(OPTIONS, args.iter().cloned(), Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(w)) => {
                words.push(w);
                continue;
            }
            Err(e) => return Err(lines(Refusal::getopt(ME, &e))),
        };
        match f.name() {
            "immediate" => o.immediate = true,
            "noheader" => o.noheader = true,
            "parsable" => o.parsable = Some(true),
            "parsable2" => o.parsable = Some(false),
            "quiet" => o.quiet = true,
            "associations" => o.withassoc = true,
            // sacctmgr prints these and exits: what follows is not read.
            "version" => {
                o.version = true;
                break;
            }
            "help" => {
                o.help = true;
                break;
            }
            // Accepted, no effect.
            "readonly" | "verbose" => {}
            _ => return Err(lines(Refusal::unsupported(ME, f.opt))),
        }
    }
    Ok((o, words))
}

/// A refusal's lines on standard error.
fn lines(r: Refusal) -> Vec<String> {
    r.stderr.lines().map(str::to_string).collect()
}

/// `word` names `full` (case-insensitive prefix of at least `min` letters).
pub fn is(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    w.len() >= min && full.to_ascii_lowercase().starts_with(&w)
}

/// The command word.
pub fn verb(word: &str) -> Option<Verb> {
    if is(word, "add", 3) || is(word, "create", 3) {
        Some(Verb::Add)
    } else if is(word, "modify", 3) || is(word, "update", 3) {
        Some(Verb::Modify)
    } else if is(word, "delete", 3) || is(word, "remove", 3) {
        Some(Verb::Delete)
    } else if is(word, "show", 3) || is(word, "list", 3) {
        Some(Verb::Show)
    } else {
        None
    }
}

/// The entity word (Slurm's shortest forms: `ac`, `as`, `cl`, `q`, `u`).
pub fn entity(word: &str) -> Option<Entity> {
    if is(word, "accounts", 2) || is(word, "acct", 4) {
        Some(Entity::Account)
    } else if is(word, "associations", 2) {
        Some(Entity::Association)
    } else if is(word, "clusters", 2) {
        Some(Entity::Cluster)
    } else if is(word, "qos", 1) {
        Some(Entity::Qos)
    } else if is(word, "users", 1) {
        Some(Entity::User)
    } else {
        None
    }
}

/// An operator of a `key=value` pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`.
    Set,
    /// `+=`.
    Add,
    /// `-=`.
    Remove,
}

/// One `key=value` word (the key lower-cased).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The key, lower-cased.
    pub key: String,
    /// The operator.
    pub op: Op,
    /// The value, quotes removed.
    pub value: String,
    /// The word as typed (for messages).
    pub word: String,
}

/// The words after the entity: names and pairs before `where`/`set`, in `where`, in
/// `set`, and bare keywords (`withassoc`, `tree`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// Bare names before `where`/`set` (comma lists split).
    pub names: Vec<String>,
    /// Pairs before `where`/`set`.
    pub head: Vec<Pair>,
    /// Pairs after `where`.
    pub conditions: Vec<Pair>,
    /// Pairs after `set`.
    pub set: Vec<Pair>,
    /// Bare words after `where` or among names that are keywords (lower-cased).
    pub keywords: Vec<String>,
}

const KEYWORDS: &[&str] = &[
    "withassoc",
    "withcoord",
    "withdeleted",
    "withsubaccounts",
    "wopl",
    "wolimits",
    "wopinfo",
    "tree",
    "onlydefaults",
];

/// Splits the words after the entity.
pub fn spec(words: &[String]) -> Spec {
    #[derive(PartialEq)]
    enum Mode {
        Head,
        Where,
        Set,
    }
    let mut s = Spec::default();
    let mut mode = Mode::Head;
    for w in words {
        let lw = w.to_ascii_lowercase();
        if lw == "where" {
            mode = Mode::Where;
            continue;
        }
        if lw == "set" {
            mode = Mode::Set;
            continue;
        }
        match pair(w) {
            Some(p) => match mode {
                Mode::Head => s.head.push(p),
                Mode::Where => s.conditions.push(p),
                Mode::Set => s.set.push(p),
            },
            None if KEYWORDS.iter().any(|k| is(&lw, k, lw.len().max(4))) => s.keywords.push(lw),
            None => s.names.extend(
                w.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string),
            ),
        }
    }
    s
}

fn pair(word: &str) -> Option<Pair> {
    let (k, v) = word.split_once('=')?;
    let (k, op) = if let Some(k) = k.strip_suffix('+') {
        (k, Op::Add)
    } else if let Some(k) = k.strip_suffix('-') {
        (k, Op::Remove)
    } else {
        (k, Op::Set)
    };
    Some(Pair {
        key: k.trim().to_ascii_lowercase(),
        op,
        value: v.trim().trim_matches(|c| c == '"' || c == '\'').to_string(),
        word: word.to_string(),
    })
}

/// Comma-separated names.
pub fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// What the controller already has that values are checked against (as Slurm's client
/// checks them).
#[derive(Clone, Copy, Debug)]
pub struct Known<'a> {
    /// The TRES accounting tracks.
    pub tracked: &'a [String],
    /// The QOS names, in id order.
    pub qos: &'a [String],
}

/// What a bad `set` value prints: error lines before sacctmgr's "Unknown option" pair
/// (when `unknown_option`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue {
    /// `sacctmgr: error: ...` lines.
    pub errors: Vec<String>,
    /// Followed by ` Unknown option: WORD` and ` Use keyword 'where' ...`.
    pub unknown_option: bool,
    /// A QOS that does not exist (`add user` prints it twice, as Slurm does).
    pub bad_qos: bool,
}

impl BadValue {
    /// The lines to print for `word`.
    pub fn lines(&self, word: &str) -> Vec<String> {
        let mut l = self.errors.clone();
        if self.unknown_option {
            l.push(format!(" Unknown option: {word}"));
            l.push(" Use keyword 'where' to modify condition".to_string());
        }
        l
    }
}

fn invalid(title: &str, value: &str) -> BadValue {
    BadValue {
        errors: vec![format!(
            "sacctmgr: error: Invalid value for {title} ({value})"
        )],
        unknown_option: true,
        bad_qos: false,
    }
}

fn count(title: &str, v: &str) -> Result<Change<u32>, BadValue> {
    if v == "-1" || v.is_empty() {
        return Ok(Change::Clear);
    }
    v.parse::<u32>()
        .map(Change::Set)
        .map_err(|_| invalid(title, v))
}

fn minutes(title: &str, p: &Pair) -> Result<Change<u32>, BadValue> {
    match parse_minutes(&p.value) {
        Ok(Some(m)) => Ok(Change::Set(m)),
        Ok(None) => Ok(Change::Clear),
        Err(_) => Err(BadValue {
            errors: vec![format!(" Bad {title} time format: {}", p.word)],
            unknown_option: true,
            bad_qos: false,
        }),
    }
}

/// A TRES list, checked against the tracked TRES (Slurm's client check).
fn tres(v: &str, tracked: &[String], unknown_option: bool) -> Result<TresChange, BadValue> {
    let t = parse_tres(v).map_err(|e| BadValue {
        errors: vec![format!("sacctmgr: error: {e}")],
        unknown_option,
        bad_qos: false,
    })?;
    if let Some(name) = t.keys().find(|n| !tracked.contains(n)) {
        return Err(BadValue {
            errors: vec![format!(
                "sacctmgr: error: slurmdb_format_tres_str: no TRES known by type {name}"
            )],
            unknown_option,
            bad_qos: false,
        });
    }
    Ok(t)
}

/// One TRES of a list given by an old single-TRES key (`GrpCPUs=`, `MaxNodes=`...).
fn one_tres(name: &str, title: &str, v: &str) -> Result<TresChange, BadValue> {
    let value = if v == "-1" {
        None
    } else if name == "mem" {
        Some(
            parse_tres(&format!("mem={v}"))
                .ok()
                .and_then(|m| m.get("mem").copied().flatten())
                .ok_or_else(|| invalid(title, v))?,
        )
    } else {
        Some(v.parse::<u64>().map_err(|_| invalid(title, v))?)
    };
    Ok(TresChange::from([(name.to_string(), value)]))
}

fn names_set(v: &str) -> BTreeSet<String> {
    if v == "-1" {
        return BTreeSet::new();
    }
    list(v)
        .into_iter()
        .map(|q| q.to_ascii_lowercase())
        .collect()
}

/// A list of QOS names, each of which must exist.
fn qos_list(op: Op, v: &str, known: &Known) -> Result<ListChange, BadValue> {
    let set = names_set(v);
    if let Some(bad) = set.iter().find(|q| !known.qos.contains(q)) {
        return Err(bad_qos(bad, known));
    }
    Ok(match op {
        Op::Set => ListChange::Set(set),
        Op::Add => ListChange::Add(set),
        Op::Remove => ListChange::Remove(set),
    })
}

fn bad_qos(name: &str, known: &Known) -> BadValue {
    BadValue {
        errors: vec![format!(
            "sacctmgr: error: You gave a bad qos '{name}'. Valid QOS's are {}",
            known.qos.join(",")
        )],
        unknown_option: true,
        bad_qos: true,
    }
}

/// A limit key shared by associations and QOS. `Ok(false)`: not a limit key.
fn limit(p: &Pair, tracked: &[String], l: &mut LimitsChange, qos: bool) -> Result<bool, BadValue> {
    let v = p.value.as_str();
    let uo = !qos;
    match p.key.as_str() {
        "grpjobs" => l.grp_jobs = Some(count("GrpJobs", v)?),
        "grpsubmitjobs" | "grpsubmit" => l.grp_submit_jobs = Some(count("GrpSubmitJobs", v)?),
        "grpwall" => l.grp_wall = Some(minutes("GrpWall", p)?),
        "grptres" => l.grp_tres = Some(tres(v, tracked, uo)?),
        "grptresmins" => l.grp_tres_mins = Some(tres(v, tracked, uo)?),
        "grptresrunmins" => l.grp_tres_run_mins = Some(tres(v, tracked, uo)?),
        "grpcpus" => l.grp_tres = Some(one_tres("cpu", "GrpCPUs", v)?),
        "grpmem" => l.grp_tres = Some(one_tres("mem", "GrpMem", v)?),
        "grpnodes" => l.grp_tres = Some(one_tres("node", "GrpNodes", v)?),
        "grpcpumins" => l.grp_tres_mins = Some(one_tres("cpu", "GrpCPUMins", v)?),
        "maxjobs" => l.max_jobs = Some(count("MaxJobs", v)?),
        "maxsubmitjobs" | "maxsubmit" => l.max_submit_jobs = Some(count("MaxSubmitJobs", v)?),
        "maxwall" | "maxwalldurationperjob" => l.max_wall = Some(minutes("MaxWall", p)?),
        "maxtres" | "maxtresperjob" | "maxtrespj" => {
            l.max_tres_per_job = Some(tres(v, tracked, uo)?)
        }
        "maxtrespernode" | "maxtrespn" => l.max_tres_per_node = Some(tres(v, tracked, uo)?),
        "maxtresmins" | "maxtresminsperjob" | "maxtresminspj" => {
            l.max_tres_mins_per_job = Some(tres(v, tracked, uo)?)
        }
        "maxcpus" | "maxcpusperjob" => l.max_tres_per_job = Some(one_tres("cpu", "MaxCPUs", v)?),
        "maxnodes" | "maxnodesperjob" => {
            l.max_tres_per_job = Some(one_tres("node", "MaxNodes", v)?)
        }
        "maxcpumins" | "maxcpuminsperjob" => {
            l.max_tres_mins_per_job = Some(one_tres("cpu", "MaxCPUMins", v)?)
        }
        "maxtresperuser" | "maxtrespu" if qos => l.max_tres_per_user = Some(tres(v, tracked, uo)?),
        "maxjobsperuser" | "maxjobspu" if qos => {
            l.max_jobs_per_user = Some(count("MaxJobsPerUser", v)?)
        }
        "maxsubmitjobsperuser" | "maxsubmitpu" | "maxsubmitjobspu" if qos => {
            l.max_submit_jobs_per_user = Some(count("MaxSubmitJobsPerUser", v)?)
        }
        "mintresperjob" | "mintres" | "mintrespj" if qos => {
            l.min_tres_per_job = Some(tres(v, tracked, uo)?)
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// An association setting (`Fairshare=`, `GrpTRES=`, `QOS+=`, `Parent=` when
/// `parent_ok`...). `Ok(false)`: not one.
pub fn assoc_setting(
    p: &Pair,
    known: &Known,
    c: &mut AssocChange,
    parent_ok: bool,
) -> Result<bool, BadValue> {
    let v = p.value.as_str();
    match p.key.as_str() {
        "fairshare" | "shares" | "share" => {
            c.shares = Some(parse_shares(v).map_err(|_| invalid("FairShare", v))?)
        }
        "priority" => c.priority = Some(count("Priority", v)?),
        "defaultqos" | "defqos" => {
            c.default_qos = Some(if v.is_empty() || v == "-1" {
                Change::Clear
            } else {
                let q = v.to_ascii_lowercase();
                if !known.qos.contains(&q) {
                    return Err(bad_qos(&q, known));
                }
                Change::Set(q)
            })
        }
        "qos" | "qoslevel" => c.qos = Some(qos_list(p.op, v, known)?),
        "parent" if parent_ok => c.parent = Some(v.to_ascii_lowercase()),
        _ => return limit(p, known.tracked, &mut c.limits, false),
    }
    Ok(true)
}

/// A QOS setting. `Ok(false)`: not one.
pub fn qos_setting(p: &Pair, known: &Known, c: &mut QosChange) -> Result<bool, BadValue> {
    let v = p.value.as_str();
    match p.key.as_str() {
        "description" => c.description = Some(v.to_string()),
        "priority" => c.priority = Some(count("Priority", v)?),
        "usagefactor" => {
            c.usage_factor = Some(if v == "-1" {
                Change::Clear
            } else {
                Change::Set(
                    v.parse::<f64>()
                        .ok()
                        .filter(|f| *f >= 0.0)
                        .ok_or_else(|| invalid("UsageFactor", v))?,
                )
            })
        }
        "preempt" => c.preempt = Some(qos_list(p.op, v, known)?),
        "preemptmode" => {
            c.preempt_mode = Some(
                PreemptMode::parse(v.split(',').next().unwrap_or(""))
                    .ok_or_else(|| invalid("PreemptMode", v))?,
            )
        }
        // Seconds (Slurm reads it as a number).
        "gracetime" => c.grace_time = Some(count("GraceTime", v)?),
        "flags" => {
            let mut flags = BTreeSet::new();
            if v != "-1" {
                for f in list(v) {
                    flags.insert(QosFlag::parse(&f).ok_or_else(|| BadValue {
                        errors: vec![format!("sacctmgr: error: Unknown QOS flag used in '{f}'")],
                        unknown_option: false,
                        bad_qos: false,
                    })?);
                }
            }
            c.flags = Some(match p.op {
                Op::Set => FlagsChange::Set(flags),
                Op::Add => FlagsChange::Add(flags),
                Op::Remove => FlagsChange::Remove(flags),
            })
        }
        _ => return limit(p, known.tracked, &mut c.limits, true),
    }
    Ok(true)
}

/// An `AdminLevel=` value.
pub fn admin_level(v: &str) -> Result<AdminLevel, BadValue> {
    AdminLevel::parse(v).ok_or_else(|| invalid("AdminLevel", v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn tracked() -> Vec<String> {
        ["cpu", "mem", "node", "gres/gpu"]
            .map(String::from)
            .to_vec()
    }

    fn qos() -> Vec<String> {
        ["normal", "high"].map(String::from).to_vec()
    }

    #[test]
    fn options_may_come_anywhere_and_bundle() {
        let (o, w) = options(&words("-nP show assoc format=account -i")).unwrap();
        assert!(o.noheader && o.immediate);
        assert_eq!(o.parsable, Some(false));
        assert_eq!(w, words("show assoc format=account"));
        let (o, w) = options(&words("modify user alice set maxjobs=-1 -p")).unwrap();
        assert_eq!(o.parsable, Some(true));
        assert_eq!(w.last().unwrap(), "maxjobs=-1");
        assert_eq!(
            options(&words("-x show")).unwrap_err(),
            [
                "sacctmgr: invalid option -- 'x'",
                "Try \"sacctmgr --help\" for more information"
            ]
        );
        // Abbreviated, clustered; `--` ends the options.
        let (o, w) = options(&words("--imm -nP show -- -1 --x=y -Q")).unwrap();
        assert!(o.immediate && o.noheader && !o.quiet);
        assert_eq!(w, words("show -1 --x=y -Q"));
        // Before it, they are options, refused as real sacctmgr refuses them.
        for (line, first) in [
            ("show user -1", "sacctmgr: invalid option -- '1'"),
            (
                "modify user alice set --x=y",
                "sacctmgr: unrecognized option '--x=y'",
            ),
        ] {
            assert_eq!(
                options(&words(line)).unwrap_err(),
                [first, "Try \"sacctmgr --help\" for more information"],
                "{line}"
            );
        }
        // -V and -h end the line, as sacctmgr exits there.
        assert!(options(&words("-V --bogus")).unwrap().0.version);
        assert_eq!(
            options(&words("-o show")).unwrap_err(),
            ["sacctmgr: error: option --oneliner is not supported by Sluice"]
        );
        assert_eq!(
            options(&words("--pars")).unwrap_err()[0],
            "sacctmgr: option '--pars' is ambiguous; possibilities: '--parsable' '--parsable2'"
        );
    }

    #[test]
    fn words_are_recognised_by_slurms_shortest_prefixes() {
        assert_eq!(verb("list"), Some(Verb::Show));
        assert_eq!(verb("CREATE"), Some(Verb::Add));
        assert_eq!(verb("rem"), Some(Verb::Delete));
        assert_eq!(verb("up"), None);
        assert_eq!(entity("assoc"), Some(Entity::Association));
        assert_eq!(entity("associations"), Some(Entity::Association));
        assert_eq!(entity("acc"), Some(Entity::Account));
        assert_eq!(entity("a"), None);
        assert_eq!(entity("users"), Some(Entity::User));
        assert_eq!(entity("q"), Some(Entity::Qos));
        assert_eq!(entity("bogus"), None);
    }

    #[test]
    fn specs_split_names_conditions_and_settings() {
        let s = spec(&words(
            "alice,bob where account=theory partition=debug set fairshare=5 qos+=high",
        ));
        assert_eq!(s.names, ["alice", "bob"]);
        assert_eq!(s.conditions.len(), 2);
        assert_eq!(s.set[1].key, "qos");
        assert_eq!(s.set[1].op, Op::Add);
        let s = spec(&words("tree format=account,user withassoc"));
        assert_eq!(s.keywords, ["tree", "withassoc"]);
        assert_eq!(s.head[0].value, "account,user");
    }

    #[test]
    fn settings_parse_values_as_sacctmgr_does() {
        let mut c = AssocChange::default();
        let p = |w: &str| pair(w).unwrap();
        assert!(assoc_setting(
            &p("GrpTRES=cpu=8,mem=16G"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut c,
            false
        )
        .unwrap());
        assert!(assoc_setting(
            &p("maxjobs=-1"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut c,
            false
        )
        .unwrap());
        assert!(assoc_setting(
            &p("MaxWall=2:00:00"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut c,
            false
        )
        .unwrap());
        assert!(!assoc_setting(
            &p("parent=x"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut c,
            false
        )
        .unwrap());
        assert!(!assoc_setting(
            &p("bogus=1"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut c,
            false
        )
        .unwrap());
        assert_eq!(c.limits.max_jobs, Some(Change::Clear));
        assert_eq!(c.limits.max_wall, Some(Change::Set(120)));
        assert_eq!(c.limits.grp_tres.as_ref().unwrap()["mem"], Some(16384));
        let bad = assoc_setting(
            &p("fairshare=abc"),
            &Known {
                tracked: &tracked(),
                qos: &qos(),
            },
            &mut c,
            false,
        )
        .unwrap_err();
        assert_eq!(
            bad.lines("fairshare=abc"),
            [
                "sacctmgr: error: Invalid value for FairShare (abc)",
                " Unknown option: fairshare=abc",
                " Use keyword 'where' to modify condition"
            ]
        );
        let bad = assoc_setting(
            &p("grptres=gres/gpu:a100=2"),
            &Known {
                tracked: &tracked(),
                qos: &qos(),
            },
            &mut c,
            false,
        )
        .unwrap_err();
        assert_eq!(
            bad.errors,
            ["sacctmgr: error: slurmdb_format_tres_str: no TRES known by type gres/gpu:a100"]
        );
        let mut q = QosChange::default();
        assert!(qos_setting(
            &p("flags=NoDecay,overpartqos"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut q
        )
        .unwrap());
        assert!(qos_setting(
            &p("gracetime=60"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut q
        )
        .unwrap());
        assert!(qos_setting(
            &p("maxtrespu=cpu=4"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut q
        )
        .unwrap());
        assert_eq!(q.grace_time, Some(Change::Set(60)), "seconds");
        assert_eq!(
            q.flags,
            Some(FlagsChange::Set(BTreeSet::from([
                QosFlag::OverPartQOS,
                QosFlag::NoDecay
            ])))
        );
        assert!(qos_setting(
            &p("flags=Bogus"),
            &Known {
                tracked: &tracked(),
                qos: &qos()
            },
            &mut q
        )
        .is_err());
        let known = Known {
            tracked: &tracked(),
            qos: &qos(),
        };
        let bad = assoc_setting(&p("qos+=bogus"), &known, &mut c, false).unwrap_err();
        assert_eq!(
            bad.lines("qos+=bogus")[0],
            "sacctmgr: error: You gave a bad qos 'bogus'. Valid QOS's are normal,high"
        );
        let bad = assoc_setting(&p("maxwall=abc"), &known, &mut c, false).unwrap_err();
        assert_eq!(
            bad.lines("maxwall=abc")[0],
            " Bad MaxWall time format: maxwall=abc"
        );
    }
}
