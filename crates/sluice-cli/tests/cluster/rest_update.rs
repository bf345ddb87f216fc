//! Slurm's REST API changing things, as the commands do and with their permissions: a
//! user's token updates and holds its own job (not another's, not beyond the limits);
//! `DELETE jobs` cancels exactly the jobs its filter matches; operators drain and
//! resume nodes; reservations and shares read as `scontrol show res` and `sshare` read
//! them; `update_time` answers nothing when nothing changed; `PrivateData=jobs` hides
//! another user's job from `scontrol show job` and the API alike.

use serde_json::{json, Value};

use crate::harness::Cluster;
use crate::rest::{as_user, conf, error_numbers, http, write_key, NOBODY};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A token for `uid` (its own, made by the controller).
fn token(c: &Cluster, uid: u32) -> String {
    let o = c.run_as(uid, "scontrol", &["token"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("SLURM_JWT=...")
        .to_string()
}

/// `scontrol show job`'s value of `key` for `job`.
fn shown(c: &Cluster, job: u64, key: &str) -> String {
    let o = c.run("scontrol", &["show", "job", &job.to_string()]);
    o.stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {}", o.stdout))
        .to_string()
}

fn warnings(v: &Value) -> String {
    v["warnings"].to_string()
}

#[test]
fn rest_updates_and_cancels_jobs_and_drains_nodes_as_the_commands_do() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run commands as a second user");
        return;
    }
    let key = write_key("update", 0o600);
    let addr = format!("127.0.0.1:{}", free_port());
    let c = Cluster::start_args("restupdate", &conf(&key), &["--listen", &addr]);
    let nobody_token = token(&c, NOBODY);
    let users = as_user("nobody", &nobody_token);
    let root_token = token(&c, 0);
    let root = as_user("root", &root_token);

    // Both nodes busy: what is submitted next waits.
    let fill = c.occupy("fill");
    let roots = c.sbatch(&["-J", "roots", "-t", "10", "--wrap", "true"]);
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "--parsable",
            "-J",
            "mine",
            "-t",
            "10",
            "-D",
            "/tmp",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(o.code, 0, "{o:?}");
    let mine: u64 = o.stdout.trim().parse().unwrap();
    let path = format!("/slurm/v0.0.44/job/{mine}");

    // The owner shortens its job's limit and renames it.
    let (status, v) = http(
        &addr,
        "POST",
        &path,
        &users,
        &json!({"time_limit": {"set": true, "infinite": false, "number": 5}, "name": "renamed"})
            .to_string(),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["errors"], json!([]));
    assert_eq!(v["results"], json!([]));
    assert_eq!(shown(&c, mine, "TimeLimit"), "00:05:00");
    assert_eq!(shown(&c, mine, "JobName"), "renamed");
    // Its node counts (`scontrol update NumNodes=1-2`); more nodes than there are:
    // refused with Slurm's error, and nothing changes.
    let (status, v) = http(
        &addr,
        "POST",
        &path,
        &users,
        r#"{"minimum_nodes": 1, "maximum_nodes": 2}"#,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(shown(&c, mine, "NumNodes"), "1-2");
    let (status, v) = http(&addr, "POST", &path, &users, r#"{"minimum_nodes": 3}"#);
    assert_eq!((status, error_numbers(&v)), (422, vec![2006]), "{v}");
    assert_eq!(v["errors"][0]["error"], "Node count specification invalid");
    assert_eq!(shown(&c, mine, "NumNodes"), "1-2");

    // Not longer again (only operators raise a limit), and nothing else with it.
    let (status, v) = http(
        &addr,
        "POST",
        &path,
        &users,
        r#"{"time_limit": 30, "comment": "more"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2002]), "{v}");
    assert_eq!(v["errors"][0]["error"], "Access/permission denied");
    assert_eq!(shown(&c, mine, "TimeLimit"), "00:05:00");
    assert!(!c
        .run("scontrol", &["show", "job", &mine.to_string()])
        .stdout
        .contains("Comment=more"));
    // An operator may.
    let (status, v) = http(&addr, "POST", &path, &root, r#"{"time_limit": 30}"#);
    assert_eq!(status, 200, "{v}");
    assert_eq!(shown(&c, mine, "TimeLimit"), "00:30:00");

    // Another user's job: refused, unchanged.
    let (status, v) = http(
        &addr,
        "POST",
        &format!("/slurm/v0.0.44/job/{roots}"),
        &users,
        r#"{"name": "stolen"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2002]), "{v}");
    assert_eq!(shown(&c, roots, "JobName"), "roots");

    // A wrong type or a field Sluice cannot update: Slurm's parse errors, nothing done.
    let (status, v) = http(
        &addr,
        "POST",
        &path,
        &users,
        r#"{"time_limit": "soon", "name": "other"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![9216, 9000]), "{v}");
    assert_eq!(v["errors"][0]["source"], "#/time_limit");
    let (status, v) = http(&addr, "POST", &path, &users, r#"{"frobnicate": 1}"#);
    assert_eq!((status, error_numbers(&v)), (422, vec![9216, 9000]), "{v}");
    assert_eq!(shown(&c, mine, "JobName"), "renamed");
    // An unknown job; an array task.
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/job/999999",
        &root,
        r#"{"name": "x"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (404, vec![2017]), "{v}");
    let (status, v) = http(
        &addr,
        "POST",
        &format!("{path}_1"),
        &users,
        r#"{"name": "x"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![9000]), "{v}");

    // Hold and release, as Slurm maps `hold` and `priority`.
    let (status, v) = http(&addr, "POST", &path, &users, r#"{"hold": true}"#);
    assert_eq!(status, 200, "{v}");
    assert_eq!(shown(&c, mine, "Reason"), "JobHeldUser");
    let (status, v) = http(
        &addr,
        "POST",
        &path,
        &users,
        r#"{"priority": {"set": true, "infinite": true, "number": 0}}"#,
    );
    assert_eq!(status, 200, "{v}");
    assert_ne!(shown(&c, mine, "Reason"), "JobHeldUser");

    // DELETE jobs: another user's jobs are refused one by one, and run on.
    let (status, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &users,
        r#"{"user_name": "root"}"#,
    );
    assert_eq!(status, 200, "{v}");
    let refused: Vec<(u64, i64)> = v["status"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job_id"]["number"].as_u64().unwrap(),
                s["error"]["code"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(refused, [(fill, 2002), (roots, 2002)]);
    assert_eq!(c.state(fill), "RUNNING");
    assert_eq!(c.state(roots), "PENDING");
    let (_, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &users,
        &json!({"jobs": [roots.to_string()]}).to_string(),
    );
    assert_eq!(v["status"][0]["error"]["code"], 2002, "{v}");
    assert_eq!(c.state(roots), "PENDING");
    // A filter cancels exactly what it matches.
    let victims = [
        c.sbatch(&["-J", "victim", "--wrap", "true"]),
        c.sbatch(&["-J", "victim", "--wrap", "true"]),
    ];
    let (status, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &root,
        r#"{"job_name": "victim", "job_state": "PENDING", "flags": ["VERBOSE"]}"#,
    );
    assert_eq!(status, 200, "{v}");
    let done: Vec<(u64, i64)> = v["status"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["job_id"]["number"].as_u64().unwrap(),
                s["error"]["code"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(done, [(victims[0], 0), (victims[1], 0)]);
    for v in victims {
        assert_eq!(c.wait_ended(v), "CANCELLED by 0");
    }
    assert_eq!(c.state(roots), "PENDING");
    assert_eq!(c.state(mine), "PENDING");
    assert_eq!(c.state(fill), "RUNNING");
    // A bad filter: refused, nothing cancelled.
    let (status, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &root,
        r#"{"job_name": "roots", "colour": "red"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![9216, 9000]), "{v}");
    assert_eq!(c.state(roots), "PENDING");
    let (status, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &root,
        r#"{"user_name": "no-such-user-here"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (500, vec![-1]), "{v}");
    assert_eq!(
        v["errors"][0]["description"],
        "Unable to resolve no-such-user-here to numeric user id"
    );

    // update_time: nothing changed since, nothing listed; a change lists them again.
    let settled = |what: &str| -> i64 {
        let mut since = 0;
        c.wait_for(&format!("{what} to settle"), || {
            let (_, v) = http(&addr, "GET", &format!("/slurm/v0.0.44/{what}"), &root, "");
            since = v["last_update"]["number"].as_i64().unwrap();
            let (_, v) = http(
                &addr,
                "GET",
                &format!("/slurm/v0.0.44/{what}?update_time={since}"),
                &root,
                "",
            );
            // Slurm's warning says so.
            let singular = what.trim_end_matches('s');
            v[what] == json!([])
                && warnings(&v)
                    .contains(&format!("No {singular} changes since update_time[{since}]"))
        });
        // Times are seconds, as Slurm's: a change in the same second is not newer.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        since
    };
    let since = settled("jobs");
    let (status, _) = http(&addr, "POST", &path, &users, r#"{"comment": "touched"}"#);
    assert_eq!(status, 200);
    let (_, v) = http(
        &addr,
        "GET",
        &format!("/slurm/v0.0.44/jobs?update_time={since}"),
        &root,
        "",
    );
    assert!(v["jobs"].as_array().unwrap().len() >= 3, "{v}");
    let (status, v) = http(
        &addr,
        "GET",
        "/slurm/v0.0.44/jobs?update_time=soon",
        &root,
        "",
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![9000]), "{v}");
    let node_since = settled("nodes");
    let part_since = settled("partitions");

    // Nodes: super users only (Slurm's validate_super_user: ESLURM_USER_ID_MISSING).
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/node/n1",
        &users,
        r#"{"state": ["DRAIN"], "reason": "mine now"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2010]), "{v}");
    assert!(!c
        .run("scontrol", &["show", "node", "n1"])
        .stdout
        .contains("DRAIN"));
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/node/n1",
        &root,
        r#"{"state": ["DRAIN"]}"#,
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(
        v["errors"][0]["description"],
        "You must specify a reason when DOWNING or DRAINING a node. Request denied"
    );
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/node/n1",
        &root,
        r#"{"state": ["DRAIN"], "reason": "rest disks", "name": "n2"}"#,
    );
    assert_eq!(status, 200, "{v}");
    assert!(
        warnings(&v).contains("node_names field n2 ignored for singular node update"),
        "{v}"
    );
    let reasons = c.run("sinfo", &["-R"]).stdout;
    let lines: Vec<&str> = reasons.lines().collect();
    assert_eq!(lines.len(), 2, "{reasons}");
    assert!(
        lines[1].starts_with("rest disks           root      20") && lines[1].ends_with(" n1"),
        "{reasons}"
    );
    let show = c.run("scontrol", &["show", "node", "n1"]).stdout;
    assert!(show.contains("   Reason=rest disks [root@20"), "{show}");
    assert!(show.contains("+DRAIN"), "{show}");
    // The nodes changed since; the partitions did not.
    let (_, v) = http(
        &addr,
        "GET",
        &format!("/slurm/v0.0.44/nodes?update_time={node_since}"),
        &root,
        "",
    );
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2, "{v}");
    let (_, v) = http(
        &addr,
        "GET",
        &format!("/slurm/v0.0.44/partitions?update_time={part_since}"),
        &root,
        "",
    );
    assert_eq!(v["partitions"], json!([]), "{v}");
    assert!(
        warnings(&v).contains(&format!(
            "No partition changes since update_time[{part_since}]"
        )),
        "{v}"
    );
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/node/n1",
        &root,
        r#"{"state": "RESUME"}"#,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(c.run("sinfo", &["-R"]).stdout.lines().count(), 1);
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/node/n1",
        &root,
        r#"{"state": ["DRAIN"], "reason": "x", "weight": 3}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![9216, 9000]), "{v}");
    assert_eq!(c.run("sinfo", &["-R"]).stdout.lines().count(), 1);
    // No dynamic nodes in Sluice: no DELETE node.
    let (status, v) = http(&addr, "DELETE", "/slurm/v0.0.44/node/n1", &root, "");
    assert_eq!((status, error_numbers(&v)), (405, vec![9007]), "{v}");

    for j in [fill, roots, mine] {
        let _ = c.run("scancel", &[&j.to_string()]);
    }
    let _ = std::fs::remove_file(&key);
}

/// `key=value` pairs of `scontrol show reservation NAME`.
fn reservation_pairs(c: &Cluster, name: &str) -> std::collections::BTreeMap<String, String> {
    let o = c.run("scontrol", &["show", "reservation", name]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn reservations_and_shares_read_as_scontrol_and_sshare_read_them() {
    let key = write_key("resv", 0o600);
    let addr = format!("127.0.0.1:{}", free_port());
    let c = Cluster::start_args("restresv", &conf(&key), &["--listen", &addr]);
    // Whoever runs the test: the cluster's operator.
    let me = crate::commands::user();
    let o = c.run("scontrol", &["token"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let my_token = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap()
        .to_string();
    let root = as_user(&me, &my_token);
    let users_me = format!("users={me}");
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "starttime=now+1hour",
            "duration=30",
            "nodes=n2",
            &users_me,
            "flags=maint",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let pairs = reservation_pairs(&c, "maint");

    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/reservations", &root, "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["reservations"].as_array().unwrap().len(), 1, "{v}");
    let since = v["last_update"]["number"].as_i64().unwrap();
    let r = &v["reservations"][0];
    assert_eq!(r["name"], "maint");
    assert_eq!(r["node_list"].as_str(), Some(pairs["Nodes"].as_str()));
    assert_eq!(r["node_count"].to_string(), pairs["NodeCnt"]);
    assert_eq!(r["core_count"].to_string(), pairs["CoreCnt"]);
    assert_eq!(r["tres"].as_str(), Some(pairs["TRES"].as_str()));
    assert_eq!(r["users"].as_str(), Some(pairs["Users"].as_str()));
    let flags: Vec<&str> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(flags.join(","), pairs["Flags"]);
    assert_eq!(
        r["end_time"]["number"].as_i64().unwrap() - r["start_time"]["number"].as_i64().unwrap(),
        1800
    );
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/reservation/maint", &root, "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["reservations"][0], *r);
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/reservation/nosuch", &root, "");
    assert_eq!((status, error_numbers(&v)), (422, vec![9000]), "{v}");
    assert_eq!(
        v["errors"][0]["description"],
        "Unable to find reservation nosuch"
    );
    // Unchanged since its own last_update: none listed.
    let (_, v) = http(
        &addr,
        "GET",
        &format!("/slurm/v0.0.44/reservations?update_time={since}"),
        &root,
        "",
    );
    assert_eq!(v["reservations"], json!([]), "{v}");

    // Shares: an account with root in it, as sshare lists them.
    for args in [
        vec!["-i", "add", "account", "physics"],
        vec!["-i", "add", "user", &me, "account=physics"],
    ] {
        let o = c.run("sacctmgr", &args);
        assert_eq!(o.code, 0, "sacctmgr {args:?}: {}", o.stderr);
    }
    let sshare: Vec<String> = c
        .run("sshare", &["-a", "-P", "-n"])
        .stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            format!("{}|{}|{}|{}", f[0].trim(), f[1], f[2], f[3])
        })
        .collect();
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/shares", &root, "");
    assert_eq!(status, 200, "{v}");
    let rest: Vec<String> = v["shares"]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let user = s["type"][0] == "USER";
            let raw = match (s["shares"]["set"].as_bool(), s["shares"]["number"].as_i64()) {
                (Some(true), Some(0x7fff_ffff)) => "parent".to_string(),
                (Some(true), Some(n)) => n.to_string(),
                _ => String::new(),
            };
            let norm = s["shares_normalized"]["number"].as_f64().unwrap();
            format!(
                "{}|{}|{raw}|{norm:.6}",
                if user { &s["parent"] } else { &s["name"] }
                    .as_str()
                    .unwrap(),
                if user {
                    s["name"].as_str().unwrap()
                } else {
                    ""
                },
            )
        })
        .collect();
    assert_eq!(rest, sshare, "{v}");
    assert!(
        rest.iter()
            .any(|r| r.starts_with(&format!("physics|{me}|"))),
        "{rest:?}"
    );
    let (_, v) = http(
        &addr,
        "GET",
        "/slurm/v0.0.44/shares?accounts=physics",
        &root,
        "",
    );
    let names: Vec<&str> = v["shares"]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["physics", me.as_str()], "{v}");
    let _ = std::fs::remove_file(&key);
}

#[test]
fn private_data_hides_another_users_job_from_show_and_the_api() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run commands as a second user");
        return;
    }
    let key = write_key("private", 0o600);
    let addr = format!("127.0.0.1:{}", free_port());
    let conf = format!("{}PrivateData=jobs\n", conf(&key));
    let c = Cluster::start_args("restprivate", &conf, &["--listen", &addr]);
    let theirs = token(&c, NOBODY);
    let users = as_user("nobody", &theirs);
    let roots = c.sbatch(&["-H", "-J", "roots", "--wrap", "true"]);
    let absent = roots + 1000;

    // scontrol show job: root's job is, to nobody, no job at all.
    let hidden = c.run_as(NOBODY, "scontrol", &["show", "job", &roots.to_string()]);
    let none = c.run_as(NOBODY, "scontrol", &["show", "job", &absent.to_string()]);
    assert_ne!(hidden.code, 0);
    assert_eq!(
        (hidden.stdout.as_str(), hidden.stderr.as_str(), hidden.code),
        (none.stdout.as_str(), none.stderr.as_str(), none.code)
    );
    assert!(
        hidden.stderr.contains("Invalid job id specified"),
        "{hidden:?}"
    );
    // Root sees it.
    assert_eq!(
        c.run("scontrol", &["show", "job", &roots.to_string()]).code,
        0
    );
    // And the API answers as for an unknown job.
    let (status, v) = http(
        &addr,
        "GET",
        &format!("/slurm/v0.0.44/job/{roots}"),
        &users,
        "",
    );
    assert_eq!((status, error_numbers(&v)), (404, vec![2017]), "{v}");
    assert_eq!(v["jobs"], json!([]));
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/jobs", &users, "");
    assert_eq!(status, 200);
    assert_eq!(v["jobs"], json!([]), "{v}");
    // Changing it is refused as without PrivateData (Slurm's kill and update refuse,
    // they do not hide); a filter does not reach it at all.
    let (status, v) = http(
        &addr,
        "DELETE",
        &format!("/slurm/v0.0.44/job/{roots}"),
        &users,
        "",
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2002]), "{v}");
    let (status, v) = http(
        &addr,
        "POST",
        &format!("/slurm/v0.0.44/job/{roots}"),
        &users,
        r#"{"name": "seen"}"#,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2002]), "{v}");
    let (status, v) = http(
        &addr,
        "DELETE",
        "/slurm/v0.0.44/jobs",
        &users,
        r#"{"user_name": "root"}"#,
    );
    assert_eq!((status, &v["status"]), (200, &json!([])), "{v}");
    assert_eq!(c.state(roots), "PENDING");
    let _ = c.run("scancel", &[&roots.to_string()]);
    let _ = std::fs::remove_file(&key);
}
