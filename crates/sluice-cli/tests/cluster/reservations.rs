//! Advance reservations on a live cluster: created, shown, used and refused with real
//! Slurm 22.05's words (samples in `tests/samples/reservations/`), sinfo's `maint`,
//! squeue's reasons, and the reservations kept across a controller crash.

use crate::harness::{Cluster, Output};

fn me() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name
}

fn said(o: &Output) -> (&str, &str, i32) {
    (o.stdout.as_str(), o.stderr.as_str(), o.code)
}

/// `scontrol show reservation NAME` with the times (which depend on the clock) cut
/// out of its first line.
fn shown(c: &Cluster, name: &str) -> String {
    let o = c.run("scontrol", &["show", "reservation", name]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut lines: Vec<String> = o.stdout.lines().map(str::to_string).collect();
    let first = &lines[0];
    let d = first.find(" Duration=").unwrap();
    let s = first.find(" StartTime=").unwrap();
    lines[0] = format!("{}{}", &first[..s], &first[d..]);
    lines.join("\n")
}

#[test]
fn reservations_hold_nodes_admit_their_jobs_and_survive_a_controller_crash() {
    let mut c = Cluster::start("resv", crate::SMALL);
    let me = me();
    let o = c.run("scontrol", &["show", "reservation"]);
    assert_eq!(said(&o), ("No reservations in the system\n", "", 0));

    // Created without a name, it is named after its user and its id.
    let users = format!("users={me}");
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "starttime=now",
            "duration=60",
            "nodes=n1",
            &users,
        ],
    );
    let first = format!("{me}_1");
    assert_eq!(
        said(&o),
        (format!("Reservation created: {first}\n").as_str(), "", 0)
    );
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=later",
            "starttime=now+1hour",
            "duration=30",
            "nodecnt=1",
            &users,
            "flags=daily,purge_comp",
        ],
    );
    assert_eq!(said(&o), ("Reservation created: later\n", "", 0));
    // The same node over the same time: refused, as Slurm refuses it.
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "starttime=now",
            "duration=60",
            "nodes=n1",
            &users,
        ],
    );
    assert_eq!(
        said(&o),
        (
            "",
            "Error creating the reservation: Requested reservation overlaps with another reservation\n",
            1
        )
    );
    // Client-side checks, with Slurm's words and exit status.
    let o = c.run(
        "scontrol",
        &["create", "reservation", "starttime=now", "nodes=n2", &users],
    );
    assert_eq!(
        said(&o),
        (
            "",
            "scontrol: error: An end time or duration must be given.  No reservation created.\n",
            1
        )
    );
    let show = shown(&c, &first);
    assert_eq!(
        show,
        format!(
            "ReservationName={first} Duration=01:00:00\n   \
             Nodes=n1 NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=SPEC_NODES\n   \
             TRES=cpu=2\n   \
             Users={me} Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a\n   \
             MaxStartDelay=(null)\n"
        )
    );
    let o = c.run("scontrol", &["show", "reservation", "nosuch"]);
    assert_eq!(said(&o), ("Reservation nosuch not found\n", "", 1));

    // Submissions: to a reservation that does not exist, refused; to ours, inside it.
    let o = c.run("sbatch", &["--reservation=nosuch", "--wrap", "true"]);
    assert_eq!(
        said(&o),
        (
            "",
            "sbatch: error: Batch job submission failed: Requested reservation is invalid\n",
            1
        )
    );
    let inside = c.sbatch(&[
        &format!("--reservation={first}"),
        "-t",
        "5",
        "--wrap",
        "sleep 300",
    ]);
    let squeue = || c.run("squeue", &["-h", "-o", "%i %t %R %v"]).stdout;
    let expected = format!("{inside} R n1 {first}\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    let job = c
        .run("scontrol", &["show", "job", &inside.to_string()])
        .stdout;
    assert!(
        job.contains(&format!("\n   Reservation={first}\n")),
        "{job}"
    );

    // A MAINT reservation on the idle n2 shows it as `maint`; a two-node job without a
    // reservation waits with Slurm's reason.
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=fix",
            "starttime=now",
            "duration=10",
            "nodes=n2",
            &users,
            "flags=maint",
        ],
    );
    assert_eq!(said(&o), ("Reservation created: fix\n", "", 0));
    let sinfo = || c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout;
    assert_eq!(c.settle("n1 mix\nn2 maint\n", sinfo), "n1 mix\nn2 maint\n");
    let wide = c.sbatch(&["-N", "2", "-t", "5", "--wrap", "true"]);
    let expected = format!(
        "{wide} PD (ReqNodeNotAvail, May be reserved for other job) (null)\n{inside} R n1 {first}\n"
    );
    assert_eq!(c.settle(&expected, squeue), expected);
    let o = c.run("scontrol", &["delete", "reservation", "fix"]);
    assert_eq!(said(&o), ("", "", 0));
    // n2 is free again: an ordinary job runs there (the wide one still cannot).
    let plain = c.sbatch(&["-t", "5", "--wrap", "sleep 300"]);
    c.wait_for("the plain job to run on n2", || {
        squeue().contains(&format!("{plain} R n2 (null)"))
    });

    let o = c.run(
        "scontrol",
        &[
            "update",
            "reservation",
            "ReservationName=later",
            "duration=45",
        ],
    );
    assert_eq!(said(&o), ("Reservation updated.\n", "", 0));
    let o = c.run(
        "scontrol",
        &[
            "update",
            "reservation",
            "ReservationName=nosuch",
            "duration=45",
        ],
    );
    assert_eq!(
        said(&o),
        (
            "",
            "Error updating the reservation: Requested reservation is invalid\n\
             slurm_update error: Requested reservation is invalid\n",
            1
        )
    );
    let later = shown(&c, "later");
    assert!(
        later.contains(" Flags=DAILY,PURGE_COMP=00:05:00\n") && later.contains("Duration=00:45:00"),
        "{later}"
    );

    // Killed and restarted, the controller has the same reservations, and the job
    // inside keeps its place.
    let before = c.run("scontrol", &["show", "reservation"]).stdout;
    c.crash_and_restart_controller();
    c.wait_for("the controller to answer again", || {
        c.run("scontrol", &["show", "reservation"]).code == 0
    });
    assert_eq!(c.run("scontrol", &["show", "reservation"]).stdout, before);
    let after = c.run("squeue", &["-h", "-o", "%i %t %R %v"]).stdout;
    assert!(
        after.contains(&format!("{inside} R n1 {first}\n")),
        "{after}"
    );

    // A reservation with a job running is kept; one that does not exist is invalid.
    let o = c.run("scontrol", &["delete", "reservation", &first]);
    assert_eq!(
        said(&o),
        (
            "",
            "delete_reservation reservation: Requested reservation is in use\n",
            1
        )
    );
    let o = c.run("scontrol", &["delete", "ReservationName=nosuch"]);
    assert_eq!(
        said(&o),
        (
            "",
            "delete_reservation reservation: Requested reservation is invalid\n",
            1
        )
    );

    // The idle report lists every reservation with its reserved and used hours.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["reservations"])
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("NAME "), "{out}");
    assert!(out.contains(&format!("\n{first} ")), "{out}");
}
