//! Jobs run as their owners: a hundred jobs launched at once by one agent, each with an
//! srun step, all run with their owner's uid, primary group and supplementary groups —
//! the identity the agent resolves before it forks and sets in the child between fork
//! and exec, while it is busy with many threads (launches, output readers, waiters).
//! Needs root, to make a user with a supplementary group and to run jobs as it.
//!
//! And the paths a job names are used with its owner's rights, not the supervisor's
//! (root's): its output, input and working directory.

use std::process::Command;

use crate::harness::Cluster;

const CONF: &str = "ClusterName=owners
SlurmctldHost=localhost
NodeName=n1 CPUs=100 RealMemory=100000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

/// A user made for the test, with a primary group and one supplementary group of its
/// own; removed (with its groups) on drop.
struct TestUser {
    name: String,
    groups: [String; 2],
    uid: u32,
    gid: u32,
    supplementary: u32,
}

impl TestUser {
    /// Makes the user `slt<pid>u` with groups `slt<pid>p` (primary) and `slt<pid>s`
    /// (supplementary); Err says why it could not.
    fn make() -> Result<TestUser, String> {
        let base = format!("slt{}", std::process::id());
        let (name, primary, extra) = (format!("{base}u"), format!("{base}p"), format!("{base}s"));
        let run = |cmd: &str, args: &[&str]| -> Result<(), String> {
            let o = Command::new(cmd)
                .args(args)
                .output()
                .map_err(|e| format!("{cmd}: {e}"))?;
            if o.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{cmd} {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
        };
        // Made step by step; what was made is removed by drop if a later step fails.
        let mut user = TestUser {
            name: name.clone(),
            groups: [primary.clone(), extra.clone()],
            uid: 0,
            gid: 0,
            supplementary: 0,
        };
        run("groupadd", &[&primary])?;
        run("groupadd", &[&extra])?;
        run(
            "useradd",
            &[
                "-M", "-N", "-g", &primary, "-G", &extra, "-s", "/bin/sh", &name,
            ],
        )?;
        let gid_of = |g: &str| {
            nix::unistd::Group::from_name(g)
                .ok()
                .flatten()
                .map(|g| g.gid.as_raw())
                .ok_or_else(|| format!("group {g} was not made"))
        };
        let u = nix::unistd::User::from_name(&name)
            .ok()
            .flatten()
            .ok_or_else(|| format!("user {name} was not made"))?;
        user.uid = u.uid.as_raw();
        user.gid = gid_of(&primary)?;
        user.supplementary = gid_of(&extra)?;
        Ok(user)
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
        for g in &self.groups {
            let _ = Command::new("groupdel").arg(g).output();
        }
    }
}

/// `uid gid sorted-groups` from a line `WHAT uid gid group...`.
fn ids(line: &str) -> (String, u32, u32, Vec<u32>) {
    let mut words = line.split_whitespace();
    let what = words.next().unwrap_or_default().to_string();
    let mut nums = words.map(|w| w.parse::<u32>().unwrap());
    let (uid, gid) = (nums.next().unwrap(), nums.next().unwrap());
    let mut groups: Vec<u32> = nums.collect();
    groups.sort_unstable();
    groups.dedup();
    (what, uid, gid, groups)
}

#[test]
fn a_hundred_jobs_launched_at_once_run_with_their_owners_uid_gid_and_groups() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "skipped: needs root (to make a user with a supplementary group and run jobs \
             as it)"
        );
        return;
    }
    let user = match TestUser::make() {
        Ok(u) => u,
        Err(why) => {
            eprintln!("skipped: cannot make a test user: {why}");
            return;
        }
    };
    let c = Cluster::start("owners", CONF);
    // Its output files land in the work directory (open to every user), opened by the
    // supervisor as their owner.
    std::fs::write(
        c.work().join("whoami.sh"),
        "#!/bin/sh\n\
         echo batch $(id -u) $(id -g) $(id -G)\n\
         srun sh -c 'echo step $(id -u) $(id -g) $(id -G)'\n",
    )
    .unwrap();
    // One array of 100 tasks: 100 jobs that one pass starts at once on n1.
    let o = c.run_as_ids(
        user.uid,
        user.gid,
        "sbatch",
        &["--array=0-99", "-o", "who-%a.out", "whoami.sh"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let array = o
        .stdout
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap()
        .to_string();
    let ended = || {
        let out = c
            .run(
                "sacct",
                &["-n", "-X", "-P", "-o", "JobID,State", "-j", &array],
            )
            .stdout;
        let states: Vec<&str> = out.lines().filter_map(|l| l.split('|').nth(1)).collect();
        states.len() == 100
            && states
                .iter()
                .all(|s| !matches!(*s, "PENDING" | "RUNNING" | "COMPLETING"))
    };
    c.wait_for("the 100 jobs to end", ended);
    let acct = c
        .run(
            "sacct",
            &["-n", "-X", "-P", "-o", "JobID,State,ExitCode", "-j", &array],
        )
        .stdout;
    assert_eq!(
        acct.lines()
            .filter(|l| l.ends_with("|COMPLETED|0:0"))
            .count(),
        100,
        "{acct}"
    );
    let mut groups = vec![user.gid, user.supplementary];
    groups.sort_unstable();
    for task in 0..100 {
        let path = c.work().join(format!("who-{task}.out"));
        let out =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let seen: Vec<_> = out.lines().map(ids).collect();
        assert_eq!(
            seen,
            vec![
                ("batch".to_string(), user.uid, user.gid, groups.clone()),
                ("step".to_string(), user.uid, user.gid, groups.clone()),
            ],
            "task {task} (user {} {}, groups {groups:?}):\n{out}",
            user.name,
            user.uid
        );
    }
}

const NOBODY: u32 = 65534;

#[test]
fn a_jobs_paths_are_used_with_its_owners_rights_not_roots() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root (to run jobs as a second user, nobody)");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let c = Cluster::start("owner-paths", CONF);
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    // root's closed directory with a file nobody may read through it.
    let closed = c.work().join("closed");
    std::fs::create_dir(&closed).unwrap();
    mode(&closed, 0o700);
    let secret = closed.join("secret");
    std::fs::write(&secret, "root's\n").unwrap();
    mode(&secret, 0o644);
    let submit = |args: &[&str]| -> u64 {
        let o = c.run_as(NOBODY, "sbatch", args);
        assert_eq!(o.code, 0, "sbatch {args:?}: {}", o.stderr);
        o.stdout.trim().rsplit(' ').next().unwrap().parse().unwrap()
    };
    // Its output over root's file, and in a directory it would make under root's.
    let over = submit(&["-o", "closed/secret", "--wrap", "echo overwritten"]);
    let under = submit(&["-o", "closed/made/out", "--wrap", "echo made"]);
    // Root's file as its input, and root's directory as its working directory.
    let input = submit(&["-i", "closed/secret", "-o", "in.out", "--wrap", "cat"]);
    let cwd = submit(&[
        "-D",
        "closed",
        "-o",
        &c.work().join("cwd.out").display().to_string(),
        "--wrap",
        "pwd; cat secret",
    ]);
    // And what it may do: its own new directory, made as it.
    let own = submit(&["-o", "mine/dir/out", "--wrap", "echo mine"]);
    for job in [over, under, input, cwd, own] {
        c.wait_ended(job);
    }
    let meta = std::fs::metadata(&secret).unwrap();
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's\n");
    assert_eq!((meta.uid(), meta.gid()), (0, 0));
    assert!(!closed.join("made").exists());
    assert_eq!(c.state(over), "FAILED");
    assert_eq!(c.state(under), "FAILED");
    let read = std::fs::read_to_string(c.work().join("in.out")).unwrap();
    assert!(!read.contains("root's"), "{read}");
    let refused = format!(
        "Could not open stdin file {}: Permission denied",
        secret.display()
    );
    assert!(read.contains(&refused), "{read}");
    let went = std::fs::read_to_string(c.work().join("cwd.out")).unwrap();
    let notice = format!(
        "slurmstepd-n1: error: couldn't chdir to `{}': Permission denied: going to /tmp instead\n",
        closed.display()
    );
    assert!(
        went.starts_with(&format!("{notice}{notice}/tmp\n")),
        "{went}"
    );
    assert!(!went.contains("root's"), "{went}");
    assert_eq!(c.state(own), "COMPLETED");
    let out = c.work().join("mine/dir/out");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine\n");
    for made in [out.as_path(), out.parent().unwrap(), &c.work().join("mine")] {
        let m = std::fs::metadata(made).unwrap();
        assert_eq!((m.uid(), m.gid()), (NOBODY, NOBODY), "{}", made.display());
    }
}
