//! A backup controller taking over: on a lab of `head01` (the primary controller),
//! `node01` (the backup controller, and an agent), `node02`–`node03` (agents, where
//! users submit) and `db01` (PostgreSQL, the state of both controllers), with the
//! seeds' slurm.conf and a second `SlurmctldHost`:
//!
//! - `scontrol takeover`: the backup takes over, the primary stands by; then the
//!   active controller SIGKILLed: the standby takes over, a job submitted before runs
//!   on to its end, a new submission works, `scontrol ping` tells which is up; the
//!   killed one comes back as a standby;
//! - the storm: clients submit from two hosts while jobs run on three agents and the
//!   active controller is SIGKILLed again and again (`SLUICE_HA_KILLS`, default 5; CI
//!   sets 100), each killed one starting again as a standby: every acknowledged job is
//!   there exactly once, none ran twice, every one completed, `sacct` agrees with the
//!   jobs' own records; the takeover time (kill to the first accepted submission) is
//!   printed;
//! - the primary cut off from the network: the backup takes over, and the former
//!   primary steps down by itself (standing by once its link is back);
//! - the primary cut off, then back on the network but not reaching the database:
//!   the backup takes over, and until the former primary notices, the orders it still
//!   gives (a signal to a running job) reach the agent and are refused there, while
//!   the new controller's are carried out.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::harness::{Hosts, Output};
use crate::seeds_lab::{here, lay_out, read, user_sh, wait_for, BIN, ETC, WORK};

/// PostgreSQL's binaries (Debian's newest).
fn pg_bin() -> Option<String> {
    let mut v: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("postgres").is_file())
        .collect();
    v.sort();
    v.pop().map(|p| p.display().to_string())
}

/// The lab, or `None` (said why) where it cannot be made or PostgreSQL is missing.
fn lab(test: &str) -> Option<(Hosts, String)> {
    let Some(bin) = pg_bin() else {
        assert!(
            std::env::var("SLUICE_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "{test}: no PostgreSQL and SLUICE_REQUIRE_POSTGRES=1"
        );
        eprintln!("skipped: {test}: no PostgreSQL installed");
        return None;
    };
    let h = Hosts::up_or_skip(test, &["head01", "node[01-03]", "db01"])?;
    Some((h, bin))
}

/// Starts PostgreSQL on `db01` (its own `/tmp`), open to the lab's hosts, with the
/// database `sluice`.
fn start_postgres(h: &Hosts, bin: &str) {
    let script = format!(
        "set -e; mkdir -p /tmp/pg; chown postgres: /tmp/pg; \
         runuser -u postgres -- {bin}/initdb -D /tmp/pg/data -U sluice --auth=trust \
           -E UTF8 >/tmp/pg/initdb.log 2>&1; \
         echo 'host all all 0.0.0.0/0 trust' >> /tmp/pg/data/pg_hba.conf; \
         setsid runuser -u postgres -- {bin}/postgres -D /tmp/pg/data \
           -c listen_addresses='*' -c port=5432 -c unix_socket_directories=/tmp/pg \
           -c fsync=off >/tmp/pg/log 2>&1 </dev/null & \
         for i in $(seq 100); do \
           runuser -u postgres -- {bin}/createdb -h /tmp/pg -U sluice sluice 2>/dev/null \
             && exit 0; sleep 0.2; done; cat /tmp/pg/log; exit 1"
    );
    let o = h.sh("db01", &script);
    assert_eq!(o.code, 0, "PostgreSQL on db01: {}{}", o.stdout, o.stderr);
}

/// Lays out the lab: the seeds' slurm.conf with node01 as the backup controller, and a
/// sluice.conf keeping the state on db01.
fn lay_out_ha(h: &Hosts) {
    lay_out(h, "SlurmctldHost=node01\n");
    std::fs::write(
        here(h, ETC).join("sluice.conf"),
        "StorageType=postgresql\nStorageHost=db01\nStorageUser=sluice\nStorageLoc=sluice\n",
    )
    .unwrap();
}

const CONF: &str = "/home/etc-slurm/slurm.conf";

/// Starts `slurmctld` on `host` (it detaches).
fn start_ctld(h: &Hosts, host: &str) {
    let o = h.run(host, &[&format!("{BIN}/slurmctld"), "-f", CONF]);
    assert_eq!(o.code, 0, "slurmctld on {host}: {}{}", o.stdout, o.stderr);
}

/// SIGKILLs `slurmctld` on `host`.
fn kill_ctld(h: &Hosts, host: &str) {
    let o = h.sh(host, "kill -KILL $(cat /var/run/slurmctld.pid)");
    assert_eq!(o.code, 0, "kill on {host}: {}", o.stderr);
}

/// A command of the lab as root on `host` (node02 and node03 have agents, which vouch
/// for it).
fn root(h: &Hosts, host: &str, cmd: &str, args: &[&str]) -> Output {
    crate::seeds_lab::as_root(h, host, cmd, args)
}

/// Starts both controllers and the agents of node01–node03, and waits for the nodes.
fn start_all(h: &Hosts) {
    start_ctld(h, "head01");
    let key = here(h, ETC).join("cluster.key");
    wait_for(Duration::from_secs(60), "the controller's key", || {
        key.exists().then_some(())
    });
    start_ctld(h, "node01");
    for node in ["node01", "node02", "node03"] {
        let o = h.run(node, &[&format!("{BIN}/slurmd"), "-f", CONF, "-N", node]);
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    }
    wait_for(Duration::from_secs(90), "three idle nodes", || {
        let o = root(h, "node02", "sinfo", &["-h", "-N", "-o", "%N %t"]);
        let idle = o
            .stdout
            .lines()
            .filter(|l| l.ends_with(" idle"))
            .collect::<BTreeSet<_>>()
            .len();
        (idle == 3).then_some(())
    });
}

/// Stops every daemon (SIGTERM), after a panic too.
struct Stop<'a>(&'a Hosts);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        for host in ["node01", "node02", "node03"] {
            crate::seeds_lab::stop_daemon(self.0, host, "/var/run/slurmd.pid");
        }
        for host in ["head01", "node01"] {
            crate::seeds_lab::stop_daemon(self.0, host, "/var/run/slurmctld.pid");
        }
    }
}

/// `sbatch --parsable ARGS` as the user on `host`: the id, or the error.
fn try_submit(h: &Hosts, host: &str, args: &str) -> Result<u64, String> {
    let o = user_sh(h, host, &format!("sbatch --parsable {args}"));
    if o.code == 0 {
        o.stdout
            .trim()
            .parse()
            .map_err(|_| format!("not an id: {}", o.stdout))
    } else {
        Err(o.stderr)
    }
}

/// The job's `State|ExitCode`, as `sacct` on node02 says.
fn state(h: &Hosts, job: u64) -> String {
    let j = job.to_string();
    root(
        h,
        "node02",
        "sacct",
        &["-n", "-X", "-P", "-o", "State,ExitCode", "-j", &j],
    )
    .stdout
    .trim()
    .to_string()
}

fn ended(h: &Hosts, job: u64, limit: Duration) -> String {
    wait_for(limit, &format!("job {job}'s end"), || {
        let s = state(h, job);
        (!s.is_empty() && !s.starts_with("PENDING") && !s.starts_with("RUNNING")).then_some(s)
    })
}

/// Submits from `host` until one is accepted: the id, and how long it took.
fn first_accepted(h: &Hosts, host: &str, args: &str, limit: Duration) -> (u64, Duration) {
    let start = Instant::now();
    loop {
        if let Ok(id) = try_submit(h, host, args) {
            return (id, start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "no submission accepted in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_active_controller_killed_or_handing_over_a_standby_takes_over_and_nothing_is_lost() {
    let test = "the_active_controller_killed_or_handing_over_a_standby_takes_over";
    let Some((h, bin)) = lab(test) else {
        return;
    };
    start_postgres(&h, &bin);
    lay_out_ha(&h);
    let _stop = Stop(&h);
    start_all(&h);
    let o = root(&h, "node02", "scontrol", &["ping"]);
    assert_eq!(
        (o.stdout.as_str(), o.code),
        (
            "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is UP\n",
            0
        ),
        "{}",
        o.stderr
    );
    let gates = here(&h, WORK).join("gates");
    std::fs::create_dir_all(&gates).unwrap();
    let before = try_submit(
        &h,
        "node02",
        &format!(
            "-w node03 -o {WORK}/job-%j.out --wrap 'echo on $(hostname); \
             while [ ! -e {WORK}/gates/go ]; do sleep 0.2; done; echo done'"
        ),
    )
    .unwrap();
    let out = |job: u64| read(&here(&h, WORK).join(format!("job-{job}.out")));
    wait_for(Duration::from_secs(60), "the job to start", || {
        (out(before) == "on node03\n").then_some(())
    });

    // Handed over on purpose: the backup takes over, the primary stands by.
    let o = root(&h, "node02", "scontrol", &["takeover"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    let log_of = |host: &str| read(&h.spool(host).join("slurmctld/slurmctld.log"));
    wait_for(Duration::from_secs(30), "the backup taking over", || {
        log_of("node01")
            .contains("taking over as the active controller")
            .then_some(())
    });
    assert!(
        log_of("head01").contains("handed over: standing by"),
        "{}",
        log_of("head01")
    );
    let handed = first_accepted(&h, "node03", "--wrap true", Duration::from_secs(60)).0;
    assert_eq!(ended(&h, handed, Duration::from_secs(60)), "COMPLETED|0:0");
    assert_eq!(state(&h, before), "RUNNING|0:0");
    wait_for(Duration::from_secs(30), "the primary standing by", || {
        let o = root(&h, "node02", "scontrol", &["ping"]);
        (o.stdout == "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is UP\n")
            .then_some(())
    });

    // The active one (now the backup) dies outright; the next submission is the
    // primary's, which took over again.
    kill_ctld(&h, "node01");
    let (after, took) = first_accepted(
        &h,
        "node03",
        &format!("-o {WORK}/job-%j.out --wrap 'echo after on $(hostname)'"),
        Duration::from_secs(60),
    );
    eprintln!(
        "takeover: {:.2} s from the kill to the first accepted submission",
        took.as_secs_f64()
    );
    assert!(after > before);
    assert_eq!(state(&h, before), "RUNNING|0:0");
    std::fs::write(gates.join("go"), "").unwrap();
    assert_eq!(ended(&h, before, Duration::from_secs(60)), "COMPLETED|0:0");
    assert_eq!(ended(&h, after, Duration::from_secs(60)), "COMPLETED|0:0");
    assert_eq!(out(before), "on node03\ndone\n");
    assert!(out(after).starts_with("after on node0"), "{}", out(after));
    let o = root(&h, "node02", "scontrol", &["ping"]);
    assert_eq!(
        (o.stdout.as_str(), o.code),
        (
            "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is DOWN\n\
             *****************************************\n\
             ** RESTORE SLURMCTLD DAEMON TO SERVICE **\n\
             *****************************************\n",
            0
        )
    );

    // The backup comes back: it stands by (the primary stays active).
    start_ctld(&h, "node01");
    wait_for(Duration::from_secs(30), "the backup standing by", || {
        let o = root(&h, "node02", "scontrol", &["ping"]);
        (o.stdout == "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is UP\n")
            .then_some(())
    });
    let next = try_submit(&h, "node02", "--wrap true").unwrap();
    assert_eq!(ended(&h, next, Duration::from_secs(60)), "COMPLETED|0:0");
    let o = root(&h, "node02", "scontrol", &["takeover", "2"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("takeover: invalid backup controller index (2)\n", 1)
    );
}

/// One client's record: each submission's name, and the id if acknowledged.
type Submitted = Vec<(String, Option<u64>)>;

#[test]
fn the_storm_kills_the_active_controller_again_and_again_and_no_job_is_lost_or_doubled() {
    let test =
        "the_storm_kills_the_active_controller_again_and_again_and_no_job_is_lost_or_doubled";
    let Some((h, bin)) = lab(test) else {
        return;
    };
    let kills: usize = std::env::var("SLUICE_HA_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    start_postgres(&h, &bin);
    lay_out_ha(&h);
    let _stop = Stop(&h);
    start_all(&h);
    let runs = here(&h, WORK).join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    nix::unistd::chown(&runs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();

    // Four clients, two on each of node02 and node03, until told to stop. Each job
    // records its own run: one line per start, with its host.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let host = if c % 2 == 0 { "node02" } else { "node03" };
            let stop = stop.clone();
            (host, c, stop)
        })
        .collect();
    let submitted: Vec<Submitted> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|(host, c, stop)| {
                let h = &h;
                s.spawn(move || {
                    let mut mine = Submitted::new();
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        n += 1;
                        let name = format!("c{c}-{n}");
                        let args = format!(
                            "-J {name} -o /dev/null --wrap 'echo $(hostname) $SLURM_JOB_ID \
                             >> {WORK}/runs/$SLURM_JOB_ID; sleep 1'"
                        );
                        let id = try_submit(h, host, &args).ok();
                        mine.push((name, id));
                    }
                    mine
                })
            })
            .collect();
        // The killer: the active controller, at random moments; each killed one
        // starts again as a standby.
        let mut takeovers = Vec::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64 ^ u64::from(std::process::id());
        let mut active = "head01";
        for k in 0..kills {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            std::thread::sleep(Duration::from_millis(500 + rng % 2500));
            kill_ctld(&h, active);
            let killed = Instant::now();
            let standby = if active == "head01" {
                "node01"
            } else {
                "head01"
            };
            let (_, took) = first_accepted(
                &h,
                "node02",
                "-J probe --wrap true",
                Duration::from_secs(60),
            );
            let _ = killed;
            takeovers.push(took);
            eprintln!(
                "kill {}: {:.2} s to the first accepted submission",
                k + 1,
                took.as_secs_f64()
            );
            start_ctld(&h, active);
            active = standby;
        }
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let all = handles.into_iter().map(|t| t.join().unwrap()).collect();
        takeovers.sort();
        let median = takeovers[takeovers.len() / 2];
        let max = takeovers[takeovers.len() - 1];
        println!(
            "takeover over {kills} kills: median {:.2} s, max {:.2} s (kill to the first accepted submission)",
            median.as_secs_f64(),
            max.as_secs_f64()
        );
        all
    });

    // Every job the accounting knows, by name.
    let acked: BTreeMap<u64, String> = submitted
        .iter()
        .flatten()
        .filter_map(|(name, id)| id.map(|i| (i, name.clone())))
        .collect();
    assert!(acked.len() > kills, "too few acknowledged: {}", acked.len());
    let listed = wait_for(Duration::from_secs(180), "every job's end", || {
        let o = root(
            &h,
            "node02",
            "sacct",
            &[
                "-n",
                "-X",
                "-P",
                "-S",
                "2000-01-01",
                "-o",
                "JobID,JobName,State",
            ],
        );
        let rows: Vec<(u64, String, String)> = o
            .stdout
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                Some((
                    f.first()?.parse().ok()?,
                    f.get(1)?.to_string(),
                    f.get(2)?.to_string(),
                ))
            })
            .filter(|(_, name, _)| name.starts_with('c'))
            .collect();
        rows.iter()
            .all(|(_, _, s)| s == "COMPLETED")
            .then_some(rows)
    });
    // Each acknowledged job exactly once, with its name.
    for (id, name) in &acked {
        let found: Vec<_> = listed.iter().filter(|(i, _, _)| i == id).collect();
        assert_eq!(found.len(), 1, "job {id} ({name}): {found:?}");
        assert_eq!(&found[0].1, name);
    }
    // No submission made twice (an unacknowledged one may be there, once).
    let mut names = BTreeMap::new();
    for (id, name, _) in &listed {
        if let Some(other) = names.insert(name.clone(), *id) {
            panic!("{name} submitted once is jobs {other} and {id}");
        }
    }
    // Each job ran once: one line in its own record, and as many records as jobs.
    for (id, _, _) in &listed {
        let lines = read(&runs.join(id.to_string()));
        assert_eq!(lines.lines().count(), 1, "job {id} ran: {lines:?}");
    }
    let records = std::fs::read_dir(&runs).unwrap().count();
    assert_eq!(records, listed.len(), "records of jobs sacct does not know");
    let tried: usize = submitted.iter().map(Vec::len).sum();
    println!(
        "{tried} submissions, {} acknowledged, {} in sacct (each once, each run once)",
        acked.len(),
        listed.len()
    );
}

#[test]
fn the_primary_cut_off_is_fenced_and_steps_down() {
    let test = "the_primary_cut_off_is_fenced_and_steps_down";
    let Some((h, bin)) = lab(test) else {
        return;
    };
    start_postgres(&h, &bin);
    lay_out_ha(&h);
    let _stop = Stop(&h);
    start_all(&h);
    let job = try_submit(&h, "node02", "-w node02 -o /dev/null --wrap 'sleep 20'").unwrap();
    wait_for(Duration::from_secs(60), "the job to start", || {
        (state(&h, job) == "RUNNING|0:0").then_some(())
    });
    h.cut("head01");
    let (after, took) = first_accepted(&h, "node03", "--wrap true", Duration::from_secs(60));
    eprintln!(
        "takeover from a primary cut off: {:.2} s",
        took.as_secs_f64()
    );
    let log_of = |host: &str| read(&h.spool(host).join("slurmctld/slurmctld.log"));
    // It notices when its lease's connection gives up, then tries to take the lease
    // again for SlurmctldTimeout before stepping down.
    wait_for(Duration::from_secs(60), "the primary stepping down", || {
        log_of("head01").contains("stepping down").then_some(())
    });
    h.restore("head01");
    assert_eq!(ended(&h, after, Duration::from_secs(60)), "COMPLETED|0:0");
    assert_eq!(ended(&h, job, Duration::from_secs(60)), "COMPLETED|0:0");
    wait_for(
        Duration::from_secs(30),
        "the former primary standing by",
        || {
            let o = root(&h, "node02", "scontrol", &["ping"]);
            (o.stdout == "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is UP\n")
                .then_some(())
        },
    );
    assert!(
        log_of("node01").contains("taking over"),
        "{}",
        log_of("node01")
    );
}

/// `scancel ARGS` as root on node02, sent to the controller at `controller` alone
/// (signed with the cluster key): whichever it is, active or not.
fn scancel_at(h: &Hosts, controller: &str, args: &[&str]) -> Output {
    let addr = format!("SLUICE_CONTROLLER={controller}:6817");
    let key = format!("SLUICE_KEY_FILE={ETC}/cluster.key");
    let conf = format!("SLURM_CONF={ETC}/slurm.conf");
    let exe = format!("{BIN}/scancel");
    let mut all = vec![
        "env",
        "XDG_STATE_HOME=/nonexistent",
        conf.as_str(),
        addr.as_str(),
        key.as_str(),
        exe.as_str(),
    ];
    all.extend(args);
    h.run("node02", &all)
}

#[test]
fn a_primary_cut_off_from_the_database_gives_orders_that_agents_refuse() {
    let test = "a_primary_cut_off_from_the_database_gives_orders_that_agents_refuse";
    let Some((h, bin)) = lab(test) else {
        return;
    };
    start_postgres(&h, &bin);
    // A longer SlurmctldTimeout: the former primary keeps serving (it tries to take its
    // lease again for that long) while the orders below are given.
    lay_out(&h, "SlurmctldHost=node01\nSlurmctldTimeout=30\n");
    std::fs::write(
        here(&h, ETC).join("sluice.conf"),
        "StorageType=postgresql\nStorageHost=db01\nStorageUser=sluice\nStorageLoc=sluice\n",
    )
    .unwrap();
    let _stop = Stop(&h);
    start_all(&h);
    let gates = here(&h, WORK).join("gates");
    std::fs::create_dir_all(&gates).unwrap();
    let job = try_submit(
        &h,
        "node03",
        &format!(
            "-w node02 -o {WORK}/fenced-%j.out --wrap 'trap \"echo got USR1\" USR1; \
             echo started; while [ ! -e {WORK}/gates/fenced-go ]; do sleep 0.2; done; \
             echo done'"
        ),
    )
    .unwrap();
    let out = || read(&here(&h, WORK).join(format!("fenced-{job}.out")));
    wait_for(Duration::from_secs(60), "the job to start", || {
        (out() == "started\n").then_some(())
    });

    // head01 is cut off; the backup takes over once the database gives head01's
    // session up, and the agents, no longer reaching head01, register with it.
    // head01's link comes back, but not its way to the database (its packets to db01
    // go nowhere): users and agents reach it again before it notices.
    let start = Instant::now();
    let db = h.address("db01");
    h.sh_ok("head01", &format!("ip route add blackhole {db}/32"));
    h.cut("head01");
    let log_of = |host: &str| read(&h.spool(host).join("slurmctld/slurmctld.log"));
    wait_for(Duration::from_secs(60), "the backup taking over", || {
        log_of("node01")
            .contains("taking over as the active controller")
            .then_some(())
    });
    eprintln!(
        "{:.1} s: the backup took over",
        start.elapsed().as_secs_f64()
    );
    // The new controller's first order on node02 (a job it starts there) tells the
    // agent its epoch. (Asked of node01 alone: head01 still answers whoever asks it
    // first, and cannot read the database.)
    let key = format!("SLUICE_KEY_FILE={ETC}/cluster.key");
    let conf = format!("SLURM_CONF={ETC}/slurm.conf");
    let sbatch = format!("{BIN}/sbatch");
    let launched_out = format!("{WORK}/fenced-launched.out");
    let o = h.run(
        "node02",
        &[
            "env",
            "XDG_STATE_HOME=/nonexistent",
            &conf,
            "SLUICE_CONTROLLER=node01:6817",
            &key,
            &sbatch,
            "--parsable",
            "-w",
            "node02",
            "-o",
            &launched_out,
            "--wrap",
            "echo ran",
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    wait_for(Duration::from_secs(60), "the new controller's job", || {
        (read(&here(&h, WORK).join("fenced-launched.out")) == "ran\n").then_some(())
    });
    let agent_log = || read(&h.spool("node02").join("slurmd/slurmd.log"));
    eprintln!(
        "{:.1} s: the new controller's job ran on node02",
        start.elapsed().as_secs_f64()
    );
    h.restore("head01");

    // The former primary, not knowing yet, signals the running job: the agent refuses
    // the order, and the job never sees the signal.
    assert!(
        !log_of("head01").contains("stepping down"),
        "the former primary noticed too soon: {}\nthe backup's log: {}",
        log_of("head01"),
        log_of("node01")
    );
    let j = job.to_string();
    let o = scancel_at(&h, "head01", &["-b", "-s", "USR1", &j]);
    eprintln!("scancel at the former primary: {o:?}");
    eprintln!(
        "{:.1} s: signalled at head01",
        start.elapsed().as_secs_f64()
    );
    wait_for(Duration::from_secs(30), "the agent's refusal", || {
        agent_log()
            .contains("refused an order of a former controller (epoch 1; 2 is active)")
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        out(),
        "started\n",
        "the former primary's signal was carried out"
    );
    // The active controller's signal is carried out.
    let o = scancel_at(&h, "node01", &["-b", "-s", "USR1", &j]);
    assert_eq!(o.code, 0, "{o:?}");
    wait_for(Duration::from_secs(30), "the job to get the signal", || {
        out().contains("got USR1").then_some(())
    });
    std::fs::write(gates.join("fenced-go"), "").unwrap();
    wait_for(Duration::from_secs(30), "the job's end", || {
        (out() == "started\ngot USR1\ndone\n").then_some(())
    });

    // The former primary steps down by itself, and stands by once it reaches the
    // database again; the job's end is the new controller's.
    wait_for(
        Duration::from_secs(90),
        "the former primary stepping down",
        || log_of("head01").contains("stepping down").then_some(()),
    );
    h.sh_ok("head01", &format!("ip route del blackhole {db}/32"));
    wait_for(
        Duration::from_secs(60),
        "the former primary standing by",
        || {
            let o = root(&h, "node02", "scontrol", &["ping"]);
            (o.stdout == "Slurmctld(primary) at head01 is UP\nSlurmctld(backup) at node01 is UP\n")
                .then_some(())
        },
    );
    assert_eq!(ended(&h, job, Duration::from_secs(60)), "COMPLETED|0:0");
}
