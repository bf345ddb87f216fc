//! `sacctmgr`: accounts, users, associations and QOS, as Slurm 22.05's prints and asks.
//!
//! `add|create`, `modify|update`, `delete|remove`, `show|list` for `account`, `user`,
//! `qos`, `association` (show only) and `cluster` (show and modify). A change is first
//! checked by the controller (`commit: false`), shown, and then — with `-i`, or once the
//! user answers `y` to Slurm's question — carried out. The question is read from
//! standard input whether or not it is a terminal, as Slurm does; where Slurm would
//! spin on an input that has ended, this one takes the end as the 30 seconds running
//! out (`timeout`, changes discarded).

use std::io::Write;

use sluice_conf::duration::format_minutes;
use sluice_proto::accounts::{
    format_tres, AccountsError, AccountsRequest, AccountsSnapshot, AssocChange, AssocFilter,
    AssocRef, Change, ChangeOutcome, ChangeRequest, FlagsChange, ListChange, QosChange, Tres,
    TresChange,
};

pub mod parse;
pub mod show;

use parse::{Entity, Opts, Pair, Spec, Verb};

/// Where `sacctmgr` gets its data and sends its changes: the controller, or (in tests)
/// an in-memory copy.
pub trait Backend {
    /// Everything listed.
    ///
    /// Errors: the controller cannot be reached (the message).
    fn snapshot(&self) -> Result<AccountsSnapshot, String>;
    /// A change, checked or carried out.
    ///
    /// Errors: the controller cannot be reached (the message).
    fn change(&self, req: &ChangeRequest) -> Result<Result<ChangeOutcome, AccountsError>, String>;
}

/// The controller over its socket.
struct Controller(sluice_proto::Client);

impl Backend for Controller {
    fn snapshot(&self) -> Result<AccountsSnapshot, String> {
        self.0.get("/v1/accounts").map_err(|e| unreachable(&e))
    }

    fn change(&self, req: &ChangeRequest) -> Result<Result<ChangeOutcome, AccountsError>, String> {
        self.0
            .post("/v1/accounts", req)
            .map_err(|e| unreachable(&e))
    }
}

fn unreachable(e: &sluice_proto::ClientError) -> String {
    match e {
        sluice_proto::ClientError::Connect { .. } => {
            "sacctmgr: error: Problem talking to the database: Connection refused".to_string()
        }
        other => format!("sacctmgr: error: {other}"),
    }
}

/// What the user types: answers to "Would you like to commit changes?", one character
/// at a time, and commands when sacctmgr is run without one.
pub trait Answers {
    /// The next character typed; `None` when none comes (end of input, or 30 seconds
    /// without one).
    fn next_char(&mut self) -> Option<u8>;
    /// The next command line; `None` at the end of the input.
    fn next_line(&mut self) -> Option<String>;
}

/// Standard input, waiting at most 30 seconds for each character.
struct Stdin;

impl Answers for Stdin {
    fn next_char(&mut self) -> Option<u8> {
        let mut fds = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut fds, 1, 30_000) };
        if ready <= 0 {
            return None;
        }
        let mut b = [0u8; 1];
        // SAFETY: reading one byte into a buffer we own.
        let n = unsafe { libc::read(0, b.as_mut_ptr().cast(), 1) };
        (n == 1).then_some(b[0])
    }

    fn next_line(&mut self) -> Option<String> {
        // Byte by byte, as the answers are read: nothing is buffered past the line.
        let mut line = Vec::new();
        loop {
            let mut b = [0u8; 1];
            // SAFETY: reading one byte into a buffer we own.
            let n = unsafe { libc::read(0, b.as_mut_ptr().cast(), 1) };
            if n != 1 {
                return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
            }
            if b[0] == b'\n' {
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            line.push(b[0]);
        }
    }
}

/// What a run printed and its exit status.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Output {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status.
    pub code: i32,
}

/// A run of one command: its output so far.
struct Run<'a> {
    out: Output,
    backend: &'a dyn Backend,
    answers: &'a mut dyn Answers,
    opts: Opts,
}

impl Run<'_> {
    fn out(&mut self, line: impl AsRef<str>) {
        self.out.stdout.push_str(line.as_ref());
        self.out.stdout.push('\n');
    }

    fn err(&mut self, line: impl AsRef<str>) {
        self.out.stderr.push_str(line.as_ref());
        self.out.stderr.push('\n');
    }

    fn fail(&mut self, lines: Vec<String>) -> i32 {
        for l in lines {
            self.err(l);
        }
        1
    }

    fn snapshot(&mut self) -> Option<AccountsSnapshot> {
        match self.backend.snapshot() {
            Ok(s) => Some(s),
            Err(e) => {
                self.err(e);
                None
            }
        }
    }

    /// Sends a change; `None` (after printing why) when the controller is unreachable.
    fn send(
        &mut self,
        request: &AccountsRequest,
        commit: bool,
    ) -> Option<Result<ChangeOutcome, AccountsError>> {
        let req = ChangeRequest {
            request: request.clone(),
            commit,
        };
        match self.backend.change(&req) {
            Ok(r) => Some(r),
            Err(e) => {
                self.err(e);
                None
            }
        }
    }

    /// Slurm's question; true to commit. Prints " Changes Discarded" otherwise.
    fn confirm(&mut self) -> bool {
        if self.opts.immediate {
            return true;
        }
        self.out
            .stdout
            .push_str("Would you like to commit changes? (You have 30 seconds to decide)\n");
        let mut first = true;
        let answer = loop {
            if !first {
                self.out.stdout.push_str("Y or N please\n");
            }
            first = false;
            self.out.stdout.push_str("(N/y): ");
            self.flush_live();
            match self.answers.next_char() {
                None => {
                    self.out.stdout.push_str("timeout\n");
                    break false;
                }
                Some(c) => {
                    self.out.stdout.push('\n');
                    match c {
                        b'y' | b'Y' => break true,
                        b'n' | b'N' | b'\n' => break false,
                        _ => {}
                    }
                }
            }
        };
        if !answer {
            self.out(" Changes Discarded");
        }
        answer
    }

    /// Writes what has been printed so far (before waiting on the terminal).
    fn flush_live(&mut self) {
        if LIVE.with(|l| l.get()) {
            let mut o = std::io::stdout();
            let _ = o.write_all(self.out.stdout.as_bytes());
            let _ = o.flush();
            let _ = std::io::stderr().write_all(self.out.stderr.as_bytes());
            self.out.stdout.clear();
            self.out.stderr.clear();
        }
    }

    /// Commits a change already checked and shown; 0, or 1 with its error printed.
    fn commit(&mut self, request: &AccountsRequest, problem: &str) -> i32 {
        if !self.confirm() {
            return 0;
        }
        match self.send(request, true) {
            None => 1,
            Some(Ok(_)) => 0,
            Some(Err(AccountsError::PermissionDenied)) if !problem.is_empty() => {
                self.err(format!(" {problem}: Access/permission denied"));
                1
            }
            Some(Err(e)) => self.refused(e),
        }
    }

    /// Prints a refusal as Slurm does; the exit status.
    fn refused(&mut self, e: AccountsError) -> i32 {
        match e {
            AccountsError::PermissionDenied => {
                self.err(
                    "sacctmgr: error: Your user doesn't have privilege to perform this action",
                );
                self.err(" Error with request: Access/permission denied");
                1
            }
            AccountsError::NothingNew => {
                self.out(" Nothing new added.");
                1
            }
            AccountsError::NothingModified => {
                self.out(" Nothing modified");
                1
            }
            AccountsError::NothingDeleted => {
                self.out(" Nothing deleted");
                1
            }
            AccountsError::NoSuchParent { parent, cluster } => {
                self.err(format!(
                    " Parent account '{parent}' doesn't exist on cluster {cluster}"
                ));
                self.err("        Contact your admin to add this account.");
                self.err(" No associations created.");
                1
            }
            AccountsError::NoSuchAccount(a) => {
                self.err(format!(" This account '{a}' doesn't exist."));
                self.err("        Contact your admin to add this account.");
                self.err(" No associations or wckeys created.");
                1
            }
            AccountsError::NeedAccount => {
                self.err(" Need name of account to add user to.");
                1
            }
            AccountsError::NotAssociated {
                account,
                users,
                cluster,
            } => {
                self.out(format!(
                    " Can't modify because these users aren't associated with new default account '{account}'..."
                ));
                for u in users {
                    self.out(format!("  U = {u} C = {cluster}"));
                }
                1
            }
            AccountsError::DefaultQosNotAllowed { qos, associations } => {
                self.err(" These associations don't have access to their default qos.");
                self.err(" Please give them access before they the default can be set to this.");
                for a in associations {
                    self.err(format!(
                        "  DefQOS = {:<10.10} C = {:<10.10} A = {:<20.20} U = {:<9.9}",
                        qos,
                        a.cluster,
                        a.account,
                        a.user.unwrap_or_default()
                    ));
                }
                // Slurm 22.05 reports this with exit status 0.
                0
            }
            AccountsError::JobsActive(jobs) => {
                self.err(" Error with request: Job(s) active, cancel job(s) before remove");
                for j in jobs {
                    self.err(format!(
                        "  JobID = {:<10} C = {:<10.10} A = {:<10.10} U = {:<9.9}",
                        j.id, j.cluster, j.account, j.user
                    ));
                }
                1
            }
            AccountsError::UnknownTres(t) => {
                self.err(format!(
                    "sacctmgr: error: slurmdb_format_tres_str: no TRES known by type {t}"
                ));
                1
            }
            AccountsError::UnknownQos(q) => {
                self.err(format!(" Unknown QOS name: {q}"));
                1
            }
            AccountsError::Loop(a) => {
                self.err(format!(
                    " Error with request: Can't set parent of account '{a}' to itself or one of its children"
                ));
                1
            }
            AccountsError::Other(m) => {
                self.err(format!(" {m}"));
                1
            }
        }
    }
}

thread_local! {
    /// Output goes to the terminal as it is made (a real run), not only at the end.
    static LIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `sacctmgr ARGS` against `backend`, with `answers` for its question; what it
/// printed and its exit status.
pub fn run(args: &[String], backend: &dyn Backend, answers: &mut dyn Answers) -> Output {
    let (opts, words) = match parse::options(args) {
        Ok(x) => x,
        Err(lines) => {
            return Output {
                stderr: lines.iter().map(|l| format!("{l}\n")).collect(),
                code: 1,
                ..Output::default()
            }
        }
    };
    let mut r = Run {
        out: Output::default(),
        backend,
        answers,
        opts: opts.clone(),
    };
    r.out.code = if opts.version {
        r.out("slurm 22.05.8");
        0
    } else if opts.help {
        r.out(USAGE);
        0
    } else if words.is_empty() {
        interactive(&mut r)
    } else {
        command(&mut r, &words)
    };
    r.out
}

const USAGE: &str = "sacctmgr [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to \"help\" command
     -i or --immediate: commit changes immediately
     -n or --noheader: no header will be added to the beginning of output
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -Q or --quiet: equivalent to \"quiet\" command
     -s or --associations: with show user or account, list their associations
     -V or --version: equivalent to \"version\" command

  <COMMAND> may be omitted to read commands from standard input.
    Valid <COMMAND> values are:
     add|create <ENTITY> <SPECS>     account, user, qos
     modify|update <ENTITY> [where <SPECS>] set <SPECS>   account, user, qos, cluster
     delete|remove <ENTITY> [where] <SPECS>   account, user, qos
     show|list <ENTITY> [<SPECS>]    account, association, cluster, qos, user";

/// Commands from standard input, one per line, after a `sacctmgr: ` prompt.
fn interactive(r: &mut Run) -> i32 {
    let mut code = 0;
    loop {
        r.out.stdout.push_str("sacctmgr: ");
        r.flush_live();
        let Some(line) = r.answers.next_line() else {
            r.out.stdout.push('\n');
            return code;
        };
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        match words.first().map(|w| w.to_ascii_lowercase()) {
            None => continue,
            Some(w) if w == "quit" || w == "exit" => return code,
            _ => code = command(r, &words),
        }
    }
}

fn command(r: &mut Run, words: &[String]) -> i32 {
    let Some(verb) = parse::verb(&words[0]) else {
        return r.fail(vec![format!("invalid keyword: {}", words[0])]);
    };
    let entity = words.get(1).and_then(|w| parse::entity(w));
    let entity = match (verb, entity) {
        (_, None) | (Verb::Add | Verb::Delete, Some(Entity::Association)) => {
            return r.fail(no_entity(verb));
        }
        (Verb::Add | Verb::Delete, Some(Entity::Cluster)) => {
            return one_cluster(r, verb, &parse::spec(&words[2..]));
        }
        (Verb::Modify, Some(Entity::Association)) => return r.fail(no_entity(verb)),
        (_, Some(e)) => e,
    };
    let spec = parse::spec(&words[2..]);
    match verb {
        Verb::Show => {
            let Some(snap) = r.snapshot() else { return 1 };
            match show::show(entity, &spec, &r.opts, &snap) {
                Ok(lines) => {
                    for l in lines {
                        r.out(l);
                    }
                    0
                }
                Err(lines) => r.fail(lines),
            }
        }
        Verb::Add => add(r, entity, &spec),
        Verb::Modify => modify(r, entity, &spec),
        Verb::Delete => delete(r, entity, &spec),
    }
}

/// `add cluster`, `delete cluster`: Sluice runs one cluster, the controller's own.
fn one_cluster(r: &mut Run, verb: Verb, spec: &Spec) -> i32 {
    let Some(snap) = r.snapshot() else { return 1 };
    let mut names = spec.names.clone();
    for p in spec.head.iter().chain(spec.conditions.iter()) {
        if matches!(p.key.as_str(), "name" | "names" | "cluster" | "clusters") {
            names.extend(parse::list(&p.value));
        }
    }
    let known = |n: &String| {
        std::iter::once(&snap.cluster)
            .chain(&snap.other_clusters)
            .any(|c| n.eq_ignore_ascii_case(&c.name))
    };
    match verb {
        Verb::Add if names.iter().any(known) => {
            let name = names.iter().find(|n| known(n)).cloned().unwrap_or_default();
            r.out(format!(" This cluster {name} already exists.  Not adding."));
            1
        }
        Verb::Delete if !names.iter().any(known) => {
            r.out(" Nothing deleted");
            1
        }
        _ => r.fail(vec![format!(
            " Sluice registers a cluster when its controller first starts on the accounting database ({} here): clusters are not added or removed with sacctmgr",
            snap.cluster.name
        )]),
    }
}

fn no_entity(verb: Verb) -> Vec<String> {
    match verb {
        Verb::Show => vec![
            "No valid entity in list command".into(),
            "Input line must include \"Account\", \"Association\", \"Cluster\", \"Configuration\","
                .into(),
            "\"Event\", \"Federation\", \"Problem\", \"QOS\", \"Resource\", \"Reservation\","
                .into(),
            "\"RunAwayJobs\", \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\"".into(),
        ],
        Verb::Add => vec![
            "No valid entity in add command".into(),
            "Input line must include \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", \"QOS\", \"Resource\", or \"User\"".into(),
        ],
        Verb::Modify => vec![
            "No valid entity in modify command".into(),
            "Input line must include \"Account\", \"Cluster\", \"Federation\", \"Job\", \"QOS\", \"Resource\" or \"User\"".into(),
        ],
        Verb::Delete => vec![
            "No valid entity in delete command".into(),
            "Input line must include \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", \"QOS\", \"Resource\", or \"User\"".into(),
        ],
    }
}

/// ` Unknown option: WORD` and its hint.
fn unknown(p: &Pair) -> Vec<String> {
    vec![
        format!(" Unknown option: {}", p.word),
        " Use keyword 'where' to modify condition".to_string(),
    ]
}

/// The association settings lines Slurm prints (`sacctmgr_print_assoc_limits`):
/// `  Name          = value`.
fn assoc_lines(c: &AssocChange, parent: Option<&str>) -> Vec<String> {
    let mut l = Vec::new();
    let mut line = |name: &str, v: String| l.push(format!("  {name:<14}= {v}"));
    if let Some(s) = c.shares {
        line("Fairshare", s.to_string());
    }
    let lc = &c.limits;
    let count = |c: &Option<Change<u32>>| match c {
        Some(Change::Set(v)) => Some(v.to_string()),
        Some(Change::Clear) => Some("NONE".to_string()),
        None => None,
    };
    let wall = |c: &Option<Change<u32>>| match c {
        Some(Change::Set(v)) => Some(format_minutes(*v)),
        Some(Change::Clear) => Some("NONE".to_string()),
        None => None,
    };
    let tres = |t: &Option<TresChange>| {
        t.as_ref().map(|t| {
            let set: Tres = t
                .iter()
                .filter_map(|(k, v)| v.map(|v| (k.clone(), v)))
                .collect();
            format_tres(&set)
        })
    };
    for (name, v) in [
        ("GrpJobs", count(&lc.grp_jobs)),
        ("GrpSubmitJobs", count(&lc.grp_submit_jobs)),
        ("GrpTRES", tres(&lc.grp_tres)),
        ("GrpTRESMins", tres(&lc.grp_tres_mins)),
        ("GrpTRESRunMins", tres(&lc.grp_tres_run_mins)),
        ("GrpWall", wall(&lc.grp_wall)),
        ("MaxJobs", count(&lc.max_jobs)),
        ("MaxSubmitJobs", count(&lc.max_submit_jobs)),
        ("MaxTRES", tres(&lc.max_tres_per_job)),
        ("MaxTRESPerNode", tres(&lc.max_tres_per_node)),
        ("MaxTRESMins", tres(&lc.max_tres_mins_per_job)),
        ("MaxWall", wall(&lc.max_wall)),
        ("Parent", parent.map(str::to_string)),
        ("Priority", count(&c.priority)),
        (
            "QOS",
            c.qos.as_ref().map(|q| match q {
                ListChange::Set(s) | ListChange::Add(s) | ListChange::Remove(s) => {
                    s.iter().cloned().collect::<Vec<_>>().join(",")
                }
            }),
        ),
        (
            "DefQOS",
            c.default_qos.as_ref().map(|d| match d {
                Change::Set(q) => q.clone(),
                Change::Clear => "NONE".into(),
            }),
        ),
    ] {
        if let Some(v) = v {
            line(name, v);
        }
    }
    l
}

/// The QOS settings lines Slurm prints (`sacctmgr_print_qos_limits`), in its order
/// and with its quirks (`GraceTime` in plain seconds, `PreemptMode` in capitals, an
/// unpadded `MaxJobsPerUser`).
fn qos_lines(c: &QosChange) -> Vec<String> {
    let count = |c: &Option<Change<u32>>| match c {
        Some(Change::Set(v)) => Some(v.to_string()),
        Some(Change::Clear) => Some("NONE".to_string()),
        None => None,
    };
    let wall = |c: &Option<Change<u32>>| match c {
        Some(Change::Set(m)) => Some(format_minutes(*m)),
        Some(Change::Clear) => Some("NONE".to_string()),
        None => None,
    };
    let tres = |t: &Option<TresChange>| {
        t.as_ref().map(|t| {
            let set: Tres = t
                .iter()
                .filter_map(|(k, v)| v.map(|v| (k.clone(), v)))
                .collect();
            format_tres(&set)
        })
    };
    let names = |l: &ListChange| match l {
        ListChange::Set(s) | ListChange::Add(s) | ListChange::Remove(s) => {
            s.iter().cloned().collect::<Vec<_>>().join(",")
        }
    };
    let lc = &c.limits;
    let mut l = Vec::new();
    for (name, v) in [
        (
            "Flags",
            c.flags.as_ref().map(|f| match f {
                FlagsChange::Set(f) | FlagsChange::Add(f) | FlagsChange::Remove(f) => {
                    f.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")
                }
            }),
        ),
        ("GraceTime", count(&c.grace_time)),
        ("GrpJobs", count(&lc.grp_jobs)),
        ("GrpSubmitJobs", count(&lc.grp_submit_jobs)),
        ("GrpTRES", tres(&lc.grp_tres)),
        ("GrpTRESMins", tres(&lc.grp_tres_mins)),
        ("GrpTRESRunMins", tres(&lc.grp_tres_run_mins)),
        ("GrpWall", wall(&lc.grp_wall)),
        ("MaxJobsPerUser", count(&lc.max_jobs_per_user)),
        ("MaxSubmitJobsPerUser", count(&lc.max_submit_jobs_per_user)),
        ("MaxTRESMinsPerJob", tres(&lc.max_tres_mins_per_job)),
        ("MaxTRESPerJob", tres(&lc.max_tres_per_job)),
        ("MaxTRESPerNode", tres(&lc.max_tres_per_node)),
        ("MaxTRESPerUser", tres(&lc.max_tres_per_user)),
        ("MaxWall", wall(&lc.max_wall)),
        ("MinTRESPerJob", tres(&lc.min_tres_per_job)),
        ("Preempt", c.preempt.as_ref().map(names)),
        (
            "PreemptMode",
            c.preempt_mode.map(|m| m.name().to_ascii_uppercase()),
        ),
        ("Priority", count(&c.priority)),
        (
            "UsageFactor",
            c.usage_factor.as_ref().map(|u| match u {
                Change::Set(f) => format!("{f:.4}"),
                Change::Clear => "NONE".into(),
            }),
        ),
    ] {
        if let Some(v) = v {
            if name == "MaxJobsPerUser" {
                l.push(format!("  {name} = {v}"));
            } else {
                l.push(format!("  {name:<24} = {v}"));
            }
        }
    }
    l
}

/// The cluster a `Cluster=` names must be this one.
fn check_cluster(r: &mut Run, p: &Pair, snap: &AccountsSnapshot) -> bool {
    let ok = parse::list(&p.value)
        .iter()
        .all(|c| c.eq_ignore_ascii_case(&snap.cluster.name));
    if !ok {
        r.err(format!(
            " This cluster '{}' doesn't exist.\n        Contact your admin to add it to accounting.",
            p.value
        ));
    }
    ok
}

fn add(r: &mut Run, entity: Entity, spec: &Spec) -> i32 {
    let Some(snap) = r.snapshot() else { return 1 };
    let tracked = snap.tracked_tres.clone();
    let qos_names: Vec<String> = snap.qos.iter().map(|q| q.name.clone()).collect();
    let known = parse::Known {
        tracked: &tracked,
        qos: &qos_names,
    };
    let mut names: Vec<String> = spec.names.clone();
    let mut settings = AssocChange::default();
    let mut qos = QosChange::default();
    let (mut description, mut organization, mut parent) = (None, None, None);
    let (mut accounts, mut partitions) = (Vec::new(), Vec::new());
    let (mut default_account, mut admin_level) = (None, None);
    // Slurm prints the association settings when any option was given.
    let mut options = false;
    for p in spec
        .head
        .iter()
        .chain(spec.conditions.iter())
        .chain(spec.set.iter())
    {
        let v = p.value.clone();
        let handled = match (entity, p.key.as_str()) {
            (_, "name" | "names") => {
                names.extend(parse::list(&v));
                true
            }
            (_, "cluster" | "clusters") => {
                if !check_cluster(r, p, &snap) {
                    return 1;
                }
                true
            }
            (Entity::Account, "account" | "accounts" | "acct") => {
                names.extend(parse::list(&v));
                true
            }
            (Entity::Account, "description" | "descr") => {
                description = Some(v);
                options = true;
                true
            }
            (Entity::Account, "organization" | "org") => {
                organization = Some(v);
                options = true;
                true
            }
            (Entity::Account, "parent") => {
                parent = Some(v.to_ascii_lowercase());
                options = true;
                true
            }
            (Entity::User, "user" | "users") => {
                names.extend(parse::list(&v));
                true
            }
            (Entity::User, "account" | "accounts" | "acct") => {
                accounts.extend(parse::list(&v));
                options = true;
                true
            }
            (Entity::User, "partition" | "partitions") => {
                partitions.extend(parse::list(&v));
                options = true;
                true
            }
            (Entity::User, "defaultaccount" | "defaultacct" | "defacct") => {
                default_account = Some(v.to_ascii_lowercase());
                true
            }
            (Entity::User, "adminlevel" | "admin") => match parse::admin_level(&v) {
                Ok(l) => {
                    admin_level = Some(l);
                    true
                }
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
            (Entity::Qos, _) => match parse::qos_setting(p, &known, &mut qos) {
                Ok(h) => h,
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
            _ => match parse::assoc_setting(p, &known, &mut settings, false) {
                Ok(h) => {
                    options |= h;
                    h
                }
                // Slurm's add says a bad QOS twice, and no more than that it is unknown.
                Err(bad) if bad.bad_qos => {
                    let mut lines = bad.errors.clone();
                    lines.extend(bad.errors);
                    lines.push(format!(" Unknown option: {}", p.word));
                    return r.fail(lines);
                }
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
        };
        if !handled {
            return r.fail(unknown(p));
        }
    }
    let what = match entity {
        Entity::Account => "account",
        Entity::User => "user",
        _ => "qos",
    };
    if names.is_empty() {
        return r.fail(vec![format!(" Need name of {what} to add.")]);
    }
    let request = match entity {
        Entity::Account => AccountsRequest::AddAccounts {
            names,
            description: description.clone(),
            organization: organization.clone(),
            parent: parent.clone(),
            settings: settings.clone(),
        },
        Entity::User => AccountsRequest::AddUsers {
            names,
            accounts,
            default_account: default_account.clone(),
            partitions,
            admin_level,
            settings: settings.clone(),
        },
        _ => AccountsRequest::AddQos {
            names,
            settings: qos.clone(),
        },
    };
    let plan = match r.send(&request, false) {
        None => return 1,
        Some(Err(e)) => return r.refused(e),
        Some(Ok(plan)) => plan,
    };
    let cluster = snap.cluster.name.clone();
    let problem = match entity {
        Entity::Account => {
            if !plan.accounts.is_empty() {
                r.out(" Adding Account(s)");
                for a in &plan.accounts {
                    r.out(format!("  {a}"));
                }
                r.out(" Settings");
                r.out(format!(
                    "  Description     = {}",
                    description
                        .map(|d| d.to_ascii_lowercase())
                        .unwrap_or_else(|| "Account Name".into())
                ));
                r.out(format!(
                    "  Organization    = {}",
                    organization
                        .map(|o| o.to_ascii_lowercase())
                        .unwrap_or_else(|| "Parent/Account Name".into())
                ));
            }
            if !plan.associations.is_empty() {
                r.out(" Associations");
                for a in &plan.associations {
                    r.out(format!("  A = {:<10.10} C = {:<10.10}", a.account, cluster));
                }
            }
            if options {
                r.out(" Settings");
                let parent = parent.unwrap_or_else(|| "root".into());
                for l in assoc_lines(&settings, Some(&parent)) {
                    r.out(l);
                }
            }
            "Problem adding accounts"
        }
        Entity::User => {
            if !plan.users.is_empty() {
                r.out(" Adding User(s)");
                for u in &plan.users {
                    r.out(format!("  {u}"));
                }
                if default_account.is_some() || admin_level.is_some() {
                    r.out(" Settings =");
                    if let Some(d) = &default_account {
                        r.out(format!("  Default Account = {d}"));
                    }
                    if let Some(l) = admin_level {
                        r.out(format!("  Admin Level     = {}", l.name()));
                    }
                }
            }
            if !plan.associations.is_empty() {
                r.out(" Associations =");
                for a in &plan.associations {
                    let mut line = format!(
                        "  U = {:<9.9} A = {:<10.10} C = {:<10.10}",
                        a.user.clone().unwrap_or_default(),
                        a.account,
                        cluster
                    );
                    if let Some(p) = &a.partition {
                        line.push_str(&format!(" P = {p:<10.10}"));
                    }
                    r.out(line);
                }
            }
            if options {
                r.out(" Non Default Settings");
                for l in assoc_lines(&settings, None) {
                    r.out(l);
                }
            }
            "Problem adding users"
        }
        _ => {
            r.out(" Adding QOS(s)");
            for q in &plan.qos {
                r.out(format!("  {q}"));
            }
            r.out(" Settings");
            let description = match (&qos.description, plan.qos.as_slice()) {
                (Some(d), _) => d.to_ascii_lowercase(),
                (None, [one]) => one.clone(),
                (None, _) => "QOS Name".into(),
            };
            r.out(format!("  Description    = {description}"));
            for l in qos_lines(&QosChange {
                description: None,
                ..qos
            }) {
                r.out(l);
            }
            "Problem adding QOS"
        }
    };
    if !plan.permitted {
        r.err(format!(" {problem}: Access/permission denied"));
        return 1;
    }
    r.commit(&request, problem)
}

/// Conditions of a `modify`/`delete`: names and `where` pairs.
fn filter(
    r: &mut Run,
    entity: Entity,
    spec: &Spec,
    pairs: &[&Pair],
    snap: &AccountsSnapshot,
) -> Option<AssocFilter> {
    let mut f = AssocFilter::default();
    let names = match entity {
        Entity::User => &mut f.users,
        Entity::Account => &mut f.accounts,
        _ => &mut f.users,
    };
    names.extend(spec.names.iter().cloned());
    for p in pairs {
        let v = parse::list(&p.value);
        match (entity, p.key.as_str()) {
            (_, "name" | "names") => match entity {
                Entity::Account => f.accounts.extend(v),
                _ => f.users.extend(v),
            },
            (Entity::User, "user" | "users") => f.users.extend(v),
            (Entity::User, "account" | "accounts" | "acct") => f.accounts.extend(v),
            (Entity::Account, "account" | "accounts" | "acct") => f.accounts.extend(v),
            (Entity::User, "partition" | "partitions") => f.partitions.extend(v),
            (_, "cluster" | "clusters") => {
                if !check_cluster(r, p, snap) {
                    return None;
                }
            }
            _ => {
                r.err(format!(" Unknown condition: {}", p.word));
                r.err(" Use keyword 'set' to modify value");
                return None;
            }
        }
    }
    Some(f)
}

fn modify(r: &mut Run, entity: Entity, spec: &Spec) -> i32 {
    let Some(snap) = r.snapshot() else { return 1 };
    let tracked = snap.tracked_tres.clone();
    let qos_names: Vec<String> = snap.qos.iter().map(|q| q.name.clone()).collect();
    let known = parse::Known {
        tracked: &tracked,
        qos: &qos_names,
    };
    let mut settings = AssocChange::default();
    let mut qos = QosChange::default();
    let (mut description, mut organization) = (None, None);
    let (mut default_account, mut admin_level) = (None, None);
    for p in &spec.set {
        let v = p.value.clone();
        let handled = match (entity, p.key.as_str()) {
            (Entity::Account, "description" | "descr") => {
                description = Some(v);
                true
            }
            (Entity::Account, "organization" | "org") => {
                organization = Some(v);
                true
            }
            (Entity::User, "defaultaccount" | "defaultacct" | "defacct") => {
                default_account = Some(v.to_ascii_lowercase());
                true
            }
            (Entity::User, "adminlevel" | "admin") => match parse::admin_level(&v) {
                Ok(l) => {
                    admin_level = Some(l);
                    true
                }
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
            (Entity::Qos, _) => match parse::qos_setting(p, &known, &mut qos) {
                Ok(h) => h,
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
            _ => match parse::assoc_setting(p, &known, &mut settings, entity == Entity::Account) {
                Ok(h) => h,
                Err(bad) => return r.fail(bad.lines(&p.word)),
            },
        };
        if !handled {
            if entity == Entity::Qos {
                // Slurm prints this one on standard output.
                for l in unknown(p) {
                    r.out(l);
                }
                return 1;
            }
            return r.fail(unknown(p));
        }
    }
    if spec.set.is_empty() {
        return r.fail(vec![" You didn't give me anything to set".into()]);
    }
    let conditions: Vec<&Pair> = spec.head.iter().chain(spec.conditions.iter()).collect();
    let request = match entity {
        Entity::Cluster => AccountsRequest::ModifyCluster {
            settings: settings.clone(),
        },
        Entity::Qos => {
            let mut names = spec.names.clone();
            for p in &conditions {
                match p.key.as_str() {
                    "name" | "names" => names.extend(parse::list(&p.value)),
                    _ => {
                        return r.fail(vec![
                            format!(" Unknown condition: {}", p.word),
                            " Use keyword 'set' to modify value".into(),
                        ])
                    }
                }
            }
            AccountsRequest::ModifyQos {
                names,
                settings: qos,
            }
        }
        _ => {
            let Some(f) = filter(r, entity, spec, &conditions, &snap) else {
                return 1;
            };
            if entity == Entity::User {
                AccountsRequest::ModifyUsers {
                    filter: f,
                    default_account,
                    admin_level,
                    settings,
                }
            } else {
                AccountsRequest::ModifyAccounts {
                    filter: f,
                    description,
                    organization,
                    settings,
                }
            }
        }
    };
    let plan = match r.send(&request, false) {
        None => return 1,
        Some(Err(e)) => return r.refused(e),
        Some(Ok(plan)) => plan,
    };
    let assoc_line = |a: &AssocRef| -> String {
        match &a.user {
            // The root account has no parent to name: Slurm prints it alone.
            None => match &a.parent {
                Some(parent) if !parent.is_empty() => {
                    format!("  C = {:<10.10} A = {} of {parent}", a.cluster, a.account)
                }
                _ => format!("  C = {:<10.10} A = {}", a.cluster, a.account),
            },
            Some(u) => {
                let mut l = format!(
                    "  C = {:<10.10} A = {:<20.20} U = {:<9.9}",
                    a.cluster, a.account, u
                );
                if let Some(p) = &a.partition {
                    l.push_str(&format!(" P = {p}"));
                }
                l
            }
        }
    };
    match entity {
        Entity::User => {
            if !plan.users.is_empty() {
                r.out(" Modified users...");
                for u in &plan.users {
                    r.out(format!("  {u}"));
                }
            }
            if !plan.associations.is_empty() {
                r.out(" Modified user associations...");
                for a in &plan.associations {
                    r.out(assoc_line(a));
                }
            }
        }
        Entity::Account => {
            if !plan.accounts.is_empty() {
                r.out(" Modified accounts...");
                for a in &plan.accounts {
                    r.out(format!("  {a}"));
                }
            }
            if !plan.associations.is_empty() {
                r.out(" Modified account associations...");
                for a in &plan.associations {
                    r.out(assoc_line(a));
                }
            }
        }
        Entity::Cluster => {
            r.out(" Setting");
            r.out("  Default Limits:");
            if let AccountsRequest::ModifyCluster { settings } = &request {
                for l in assoc_lines(settings, None) {
                    r.out(l);
                }
            }
            r.out(" Modified cluster defaults for associations...");
            r.out(format!("  C = {:<10.10} A = root", snap.cluster.name));
        }
        _ => {
            r.out(" Modified qos...");
            for q in &plan.qos {
                r.out(format!("  {q}"));
            }
        }
    }
    r.commit(&request, "")
}

fn delete(r: &mut Run, entity: Entity, spec: &Spec) -> i32 {
    let Some(snap) = r.snapshot() else { return 1 };
    if let Some(p) = spec.set.first() {
        return r.fail(unknown(p));
    }
    let conditions: Vec<&Pair> = spec.head.iter().chain(spec.conditions.iter()).collect();
    let request = match entity {
        Entity::Qos => {
            let mut names = spec.names.clone();
            for p in &conditions {
                match p.key.as_str() {
                    "name" | "names" => names.extend(parse::list(&p.value)),
                    _ => return r.fail(vec![format!(" Unknown condition: {}", p.word)]),
                }
            }
            if names.is_empty() {
                return r.fail(vec![" No conditions given to remove, not executing.".into()]);
            }
            AccountsRequest::DeleteQos { names }
        }
        _ => {
            let Some(f) = filter(r, entity, spec, &conditions, &snap) else {
                return 1;
            };
            let named = match entity {
                Entity::User => !f.users.is_empty(),
                _ => !f.accounts.is_empty(),
            };
            if !named {
                return r.fail(vec![" No conditions given to remove, not executing.".into()]);
            }
            if entity == Entity::User {
                AccountsRequest::DeleteUsers { filter: f }
            } else {
                AccountsRequest::DeleteAccounts { names: f.accounts }
            }
        }
    };
    let plan = match r.send(&request, false) {
        None => return 1,
        Some(Err(e)) => return r.refused(e),
        Some(Ok(plan)) => plan,
    };
    match entity {
        Entity::Qos => {
            r.out(" Deleting QOS(s)...");
            for q in &plan.qos {
                r.out(format!("  {q}"));
            }
        }
        Entity::Account => {
            r.out(" Deleting accounts...");
            for a in &plan.accounts {
                r.out(format!("  {a}"));
            }
        }
        _ => {
            if !plan.users.is_empty() {
                r.out(" Deleting users...");
                for u in &plan.users {
                    r.out(format!("  {u}"));
                }
            }
            if !plan.associations.is_empty() {
                r.out(" Deleting user associations...");
                for a in &plan.associations {
                    let mut l = format!(
                        "  C = {:<10.10} A = {:<10.10} U = {:<9.9}",
                        a.cluster,
                        a.account,
                        a.user.clone().unwrap_or_default()
                    );
                    if let Some(p) = &a.partition {
                        l.push_str(&format!(" P = {p}"));
                    }
                    r.out(l);
                }
            }
            if !plan.users_without_associations.is_empty() {
                r.out(" Deleting users (No Associations)...");
                for u in &plan.users_without_associations {
                    r.out(format!("  {u}"));
                }
            }
        }
    }
    r.commit(&request, "")
}

/// Runs `sacctmgr` with `args` (without the program name) against the controller;
/// returns the exit status.
pub fn main(args: Vec<String>) -> i32 {
    LIVE.with(|l| l.set(true));
    let backend = Controller(super::common::controller());
    let out = run(&args, &backend, &mut Stdin);
    let _ = std::io::stdout().write_all(out.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(out.stderr.as_bytes());
    out.code
}

#[cfg(test)]
mod tests;
