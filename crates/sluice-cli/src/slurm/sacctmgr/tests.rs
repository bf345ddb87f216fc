//! `sacctmgr` against the controller's accounts in memory, replaying what real Slurm
//! 22.05 printed (`tests/samples/sacctmgr/`, captured in that order on one cluster):
//! every sacctmgr command of the samples, in order, must print exactly the same
//! standard output and error and end with the same status.

use std::cell::RefCell;
use std::path::PathBuf;

use sluice_ctld::accounts::{Accounts, Requester};
use sluice_proto::accounts::{
    AccountsError, AccountsSnapshot, ActiveJob, ChangeOutcome, ChangeRequest, ClusterRecord,
};

use super::{run, Answers, Backend, Output};

/// The controller's accounts in memory, as one caller sees them.
struct Memory {
    accounts: RefCell<Accounts>,
    who: RefCell<Requester>,
    active: RefCell<Vec<ActiveJob>>,
    cluster: ClusterRecord,
}

impl Backend for Memory {
    fn snapshot(&self) -> Result<AccountsSnapshot, String> {
        Ok(self.accounts.borrow().snapshot(self.cluster.clone()))
    }

    fn change(&self, req: &ChangeRequest) -> Result<Result<ChangeOutcome, AccountsError>, String> {
        let who = self.who.borrow().clone();
        let active = self.active.borrow().clone();
        Ok(self
            .accounts
            .borrow_mut()
            .change(&who, &req.request, &active, req.commit)
            .map(|(o, _)| o))
    }
}

/// Typed answers; `None` once they run out.
struct Typed(Vec<u8>);

impl Answers for Typed {
    fn next_char(&mut self) -> Option<u8> {
        if self.0.is_empty() {
            None
        } else {
            Some(self.0.remove(0))
        }
    }

    fn next_line(&mut self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let end = self
            .0
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(self.0.len());
        let line: Vec<u8> = self.0.drain(..end).collect();
        if !self.0.is_empty() {
            self.0.remove(0);
        }
        Some(String::from_utf8_lossy(&line).into_owned())
    }
}

/// The real cluster's setup: `ClusterName=refslurm`, `AccountingStorageTRES=gres/gpu`.
fn memory() -> Memory {
    let tracked: Vec<String> = sluice_conf::slurm_conf::DEFAULT_TRES
        .iter()
        .map(|s| s.to_string())
        .chain(["gres/gpu".to_string()])
        .collect();
    Memory {
        accounts: RefCell::new(Accounts::new("refslurm", &tracked)),
        who: RefCell::new(root()),
        active: RefCell::new(Vec::new()),
        cluster: ClusterRecord {
            name: "refslurm".into(),
            control_host: "127.0.0.1".into(),
            control_port: 6917,
            rpc: 9728,
        },
    }
}

fn root() -> Requester {
    Requester {
        name: "root".into(),
        superuser: true,
    }
}

/// One sample: the command line, and what real Slurm printed.
struct Sample {
    name: String,
    command: String,
    expected: Output,
    /// Only the output up to the first question was kept (real Slurm spun on there).
    truncated: bool,
}

fn samples() -> Vec<Sample> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/samples/sacctmgr");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let (first, body) = text.split_once('\n').unwrap();
            let command = first.strip_prefix("$ ").unwrap().to_string();
            let at = body.rfind("--- exit ").unwrap();
            let code: i32 = body[at + 9..].trim().parse().unwrap();
            let mut body = body[..at].to_string();
            let truncated = body.contains("--- truncated\n");
            body = body.replace("--- truncated\n", "");
            let (stdout, stderr) = match body.find("--- stderr\n") {
                Some(i) => (body[..i].to_string(), body[i + 11..].to_string()),
                None => (body, String::new()),
            };
            Sample {
                name: f.file_name().unwrap().to_string_lossy().into_owned(),
                command,
                expected: Output {
                    stdout,
                    stderr,
                    code,
                },
                truncated,
            }
        })
        .collect()
}

/// A sample's command as sacctmgr arguments, the caller and the typed answers; `None`
/// for another command.
fn sacctmgr_command(command: &str) -> Option<(Vec<String>, Requester, Vec<u8>)> {
    let mut cmd = command.to_string();
    let mut typed = Vec::new();
    if let Some(rest) = cmd.strip_prefix("echo ") {
        let (answer, rest) = rest.split_once(" | ").unwrap();
        typed = format!("{answer}\n").into_bytes();
        cmd = rest.to_string();
    }
    let cmd = cmd.replace(" </dev/null", "");
    let mut who = root();
    let cmd = match cmd.strip_prefix("setpriv --reuid=65534 --regid=65534 --clear-groups ") {
        Some(rest) => {
            who = Requester {
                name: "nobody".into(),
                superuser: false,
            };
            rest.to_string()
        }
        None => cmd,
    };
    let words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    (words.first()? == "sacctmgr").then(|| (words[1..].to_vec(), who, typed))
}

#[test]
fn sacctmgr_prints_what_real_slurm_printed() {
    let m = memory();
    let mut checked = 0;
    for s in samples() {
        // Between the captures, real Slurm had a job of root's running in p2.
        if s.name.starts_with("102_") {
            run(
                &[
                    "-i".into(),
                    "add".into(),
                    "user".into(),
                    "root".into(),
                    "account=p2".into(),
                ],
                &m,
                &mut Typed(Vec::new()),
            );
            m.active.borrow_mut().push(ActiveJob {
                id: 1,
                cluster: "refslurm".into(),
                account: "p2".into(),
                user: "root".into(),
            });
        }
        if s.name.starts_with("104_") {
            m.active.borrow_mut().clear();
        }
        let Some((args, who, typed)) = sacctmgr_command(&s.command) else {
            continue;
        };
        if s.name.starts_with("159_") {
            // `-V`: Debian's build says `slurm-wlm 22.05.8`; Sluice's commands all say
            // `slurm 22.05.8`.
            let got = run(&args, &m, &mut Typed(typed));
            assert_eq!(got.stdout, "slurm 22.05.8\n");
            continue;
        }
        if s.name.starts_with("162_") {
            // Slurm adds zed4 to phys and then fails on nosuch3; Sluice changes
            // nothing on bad input and says why as Slurm does for a lone bad account.
            let got = run(&args, &m, &mut Typed(typed));
            assert_eq!(
                (got.stdout.as_str(), got.stderr.as_str(), got.code),
                (
                    "",
                    " This account 'nosuch3' doesn't exist.\n        Contact your admin to add this account.\n No associations or wckeys created.\n",
                    1
                )
            );
            // What Slurm did, for the samples after this one.
            run(
                &[
                    "-i".into(),
                    "add".into(),
                    "user".into(),
                    "zed4".into(),
                    "account=phys".into(),
                ],
                &m,
                &mut Typed(Vec::new()),
            );
            continue;
        }
        *m.who.borrow_mut() = who;
        let got = run(&args, &m, &mut Typed(typed));
        if s.truncated {
            // Real Slurm asked forever on an input that had ended; Sluice gives up
            // (see the module's notes). What came before the first question is Slurm's.
            let first = s.expected.stdout.find("(N/y): ").unwrap() + 7;
            assert_eq!(
                got.stdout[..first],
                s.expected.stdout[..first],
                "{}",
                s.name
            );
            assert!(got.stdout.ends_with("(N/y): timeout\n Changes Discarded\n"));
        } else {
            assert_eq!(got, s.expected, "{}: {}", s.name, s.command);
        }
        checked += 1;
    }
    assert_eq!(checked, 147, "every sacctmgr sample is replayed");
}

#[test]
fn an_ended_input_discards_the_change() {
    let m = memory();
    let out = run(
        &["add".into(), "account".into(), "y".into()],
        &m,
        &mut Typed(Vec::new()),
    );
    assert!(
        out.stdout.ends_with("(N/y): timeout\n Changes Discarded\n"),
        "{}",
        out.stdout
    );
    assert_eq!(out.code, 0);
    let show = run(
        &[
            "-nP".into(),
            "show".into(),
            "account".into(),
            "format=account".into(),
        ],
        &m,
        &mut Typed(Vec::new()),
    );
    assert_eq!(show.stdout, "root\n", "nothing was added");
    // Other characters are asked about again; the newline that ends the line says no.
    let out = run(
        &["add".into(), "account".into(), "y".into()],
        &m,
        &mut Typed(b"x\n".to_vec()),
    );
    assert!(
        out.stdout
            .ends_with("(N/y): \nY or N please\n(N/y): \n Changes Discarded\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn without_a_command_commands_are_read_one_per_line() {
    // The answer is read as one character: the rest of its line is an empty command.
    let m = memory();
    let out = run(
        &[],
        &m,
        &mut Typed(
            b"show qos format=name\nadd account x\ny\nlist account x format=account\nquit\n"
                .to_vec(),
        ),
    );
    assert_eq!(
        out.stdout,
        "sacctmgr:       Name \n---------- \n    normal \n\
         sacctmgr:  Adding Account(s)\n  x\n Settings\n  Description     = Account Name\n  \
         Organization    = Parent/Account Name\n Associations\n  A = x          C = refslurm  \n\
         Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): \n\
         sacctmgr: sacctmgr:    Account \n---------- \n         x \n\
         sacctmgr: "
    );
}

#[test]
fn the_readmes_example_runs() {
    let m = memory();
    let readme = include_str!("../../../../../README.md");
    let commands: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("sacctmgr ") && !l.contains('`'))
        .map(|l| l.split("  #").next().unwrap().trim())
        .collect();
    assert_eq!(commands.len(), 10);
    for c in commands {
        let args: Vec<String> = c
            .split_whitespace()
            .skip(1)
            .map(|w| w.replace('"', ""))
            .collect();
        let out = run(&args, &m, &mut Typed(Vec::new()));
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{c}");
        if c.contains("show assoc tree") {
            let expected = [
                "Account                    User     Share                  QOS ",
                "-------------------- ---------- --------- -------------------- ",
                "root                                    1               normal ",
                " root                      root         1               normal ",
                " physics                                1               normal ",
                "  physics                 alice        10          high,normal ",
                "  theory                                5               normal ",
                "   theory                 alice        10          high,normal ",
            ];
            assert_eq!(out.stdout, expected.map(|l| format!("{l}\n")).concat());
        }
    }
    let tree = run(
        &[
            "-nP".into(),
            "show".into(),
            "assoc".into(),
            "format=account,user".into(),
        ],
        &m,
        &mut Typed(Vec::new()),
    );
    assert_eq!(tree.stdout, "root|\nroot|root\nphysics|\nphysics|alice\n");
}
