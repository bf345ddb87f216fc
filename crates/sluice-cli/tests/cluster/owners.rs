//! Jobs run as their owners: a hundred jobs launched at once by one agent, each with an
//! srun step, all run with their owner's uid, primary group and supplementary groups —
//! the identity the agent resolves before it forks and sets in the child between fork
//! and exec, while it is busy with many threads (launches, output readers, waiters).
//! Needs root, to make a user with a supplementary group and to run jobs as it.

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
    // Its output files land in the work directory, opened by the agent as root.
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
