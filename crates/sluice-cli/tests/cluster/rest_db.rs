//! slurmdbd's REST API (`/slurmdb/v0.0.44/`) against the commands that read the same
//! database: jobs (completed, failed, cancelled, another user's) compared field by
//! field with `sacct -P`, whole and filtered; accounts, associations, QOS, users and
//! the cluster with `sacctmgr -nP show`; `PrivateData` hiding other users' jobs and
//! records from a user's token; bad filters refused with Slurm's errors.

use serde_json::Value;

use crate::harness::Cluster;
use crate::rest::{as_user, conf, error_numbers, free_port, http, write_key, NOBODY};

/// A token for `user` (run as `uid`).
fn token(c: &Cluster, uid: u32) -> String {
    let o = c.run_as(uid, "scontrol", &["token"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    o.stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("SLURM_JWT=...")
        .to_string()
}

/// `GET path` with `user`'s token: the status and the body.
fn get(addr: &str, path: &str, user: &str, token: &str) -> (u16, Value) {
    http(addr, "GET", path, &as_user(user, token), "")
}

/// A `PROCESS_EXIT_CODE` as sacct prints exit codes: `code:signal`.
fn exit_code(v: &Value) -> String {
    let code = v["return_code"]["number"].as_i64().unwrap();
    let signal = v["signal"]["id"]["number"].as_i64().unwrap();
    format!("{code}:{signal}")
}

/// The CPUs of a `TRES` list.
fn cpus(tres: &Value) -> String {
    tres.as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "cpu")
        .map_or("0".into(), |t| t["count"].to_string())
}

/// The sacct format the jobs are compared in.
const FORMAT: &str =
    "JobIDRaw,JobName,State,ExitCode,DerivedExitCode,ElapsedRaw,User,Account,Partition,NNodes,AllocCPUS,TimelimitRaw";

/// The REST answer's jobs as `sacct -P -n -o FORMAT` prints them: each job's line,
/// then its steps'.
fn as_sacct(v: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for j in v["jobs"].as_array().unwrap() {
        let mut state = j["state"]["current"][0].as_str().unwrap().to_string();
        if j["kill_request_user"] == "root" {
            state.push_str(" by 0");
        }
        let limit = &j["time"]["limit"];
        let limit = if limit["infinite"] == true {
            "UNLIMITED".to_string()
        } else {
            limit["number"].to_string()
        };
        lines.push(
            [
                j["job_id"].to_string(),
                j["name"].as_str().unwrap().to_string(),
                state,
                exit_code(&j["exit_code"]),
                exit_code(&j["derived_exit_code"]),
                j["time"]["elapsed"].to_string(),
                j["user"].as_str().unwrap().to_string(),
                j["account"].as_str().unwrap().to_string(),
                j["partition"].as_str().unwrap().to_string(),
                j["allocation_nodes"].to_string(),
                cpus(&j["tres"]["allocated"]),
                limit,
            ]
            .join("|"),
        );
        for s in j["steps"].as_array().unwrap() {
            lines.push(
                [
                    s["step"]["id"].as_str().unwrap().to_string(),
                    s["step"]["name"].as_str().unwrap().to_string(),
                    s["state"][0].as_str().unwrap().to_string(),
                    exit_code(&s["exit_code"]),
                    String::new(),
                    s["time"]["elapsed"].to_string(),
                    String::new(),
                    j["account"].as_str().unwrap().to_string(),
                    String::new(),
                    s["nodes"]["count"].to_string(),
                    cpus(&s["tres"]["allocated"]),
                    String::new(),
                ]
                .join("|"),
            );
        }
    }
    lines
}

/// `sacct -P -n -o FORMAT ARGS`'s lines.
fn sacct(c: &Cluster, args: &[&str]) -> Vec<String> {
    let mut all = vec!["-P", "-n", "-o", FORMAT];
    all.extend_from_slice(args);
    let o = c.run("sacct", &all);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout.lines().map(str::to_string).collect()
}

/// The job ids of an answer.
fn ids(v: &Value) -> Vec<u64> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].as_u64().unwrap())
        .collect()
}

/// `sacctmgr -nP show ARGS`'s lines.
fn sacctmgr(c: &Cluster, args: &[&str]) -> Vec<String> {
    let mut all = vec!["-nP", "show"];
    all.extend_from_slice(args);
    let o = c.run("sacctmgr", &all);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout.lines().map(str::to_string).collect()
}

/// A number object's value, empty when unset or infinite (as sacctmgr prints it).
fn num(v: &Value) -> String {
    if v["set"] == true && v["infinite"] == false {
        v["number"].to_string()
    } else {
        String::new()
    }
}

/// A string field.
fn s(v: &Value) -> String {
    v.as_str().unwrap().to_string()
}

#[test]
fn slurmdb_answers_what_sacct_and_sacctmgr_print() {
    let key = write_key("restdb", 0o600);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args(
        "restdb",
        &format!("{}PrivateData=jobs,users\n", conf(&key)),
        &["--listen", &addr],
    );
    for args in [
        &[
            "-i",
            "add",
            "account",
            "physics",
            "Description=phys dept",
            "Organization=sci",
        ][..],
        &[
            "-i",
            "add",
            "user",
            "nobody",
            "account=physics",
            "MaxJobs=7",
        ],
        &[
            "-i",
            "add",
            "qos",
            "fast",
            "Priority=10",
            "MaxJobsPerUser=3",
        ],
    ] {
        let o = c.run("sacctmgr", args);
        assert_eq!(o.code, 0, "sacctmgr {args:?}: {}", o.stderr);
    }
    let root = token(&c, 0);
    let nobody = token(&c, NOBODY);

    // A completed job with a step, then (after `since`) a failed one, a cancelled one
    // and another user's.
    let done = c.sbatch(&["-J", "done", "-t", "5", "--wrap", "srun true"]);
    assert_eq!(c.wait_ended(done), "COMPLETED");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let since = crate::rest::now();
    let since_text = sluice_proto::time::timestamp(since);
    let failed = c.sbatch(&["-J", "failed", "--wrap", "srun sh -c 'exit 3'; exit 5"]);
    let cancelled = c.sbatch(&["-J", "cancelled", "--wrap", "sleep 300"]);
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "-J",
            "theirs",
            "-D",
            "/tmp",
            "-o",
            "/dev/null",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let theirs: u64 = o.stdout.trim().rsplit(' ').next().unwrap().parse().unwrap();
    c.wait_for("the job to run", || c.state(cancelled) == "RUNNING");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(c.run("scancel", &[&cancelled.to_string()]).code, 0);
    assert_eq!(c.wait_ended(failed), "FAILED");
    assert_eq!(c.wait_ended(cancelled), "CANCELLED by 0");
    assert_eq!(c.wait_ended(theirs), "COMPLETED");
    let list = [done, failed, cancelled, theirs]
        .map(|j| j.to_string())
        .join(",");

    // Every job, field by field, steps included.
    let (status, v) = get(&addr, "/slurmdb/v0.0.44/jobs", "root", &root);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["errors"], Value::Array(vec![]));
    assert_eq!(v["meta"]["plugin"]["type"], "openapi/slurmdbd");
    assert_eq!(ids(&v), [done, failed, cancelled, theirs]);
    let expected = sacct(&c, &["-j", &list]);
    assert_eq!(as_sacct(&v), expected);
    // What the comparison covers, as Slurm writes it.
    let j = &v["jobs"][1];
    assert_eq!(j["exit_code"]["status"][0], "ERROR");
    assert_eq!(j["exit_code"]["return_code"]["number"], 5);
    assert_eq!(j["derived_exit_code"]["return_code"]["number"], 3);
    assert!(expected
        .iter()
        .any(|l| l.starts_with(&format!("{failed}|failed|FAILED|5:0|3:0|"))));
    assert!(expected
        .iter()
        .any(|l| l.starts_with(&format!("{failed}.0|"))));
    assert!(expected
        .iter()
        .any(|l| l.starts_with(&format!("{cancelled}|cancelled|CANCELLED by 0|"))));
    assert!(
        v["jobs"][2]["time"]["elapsed"].as_i64().unwrap() >= 1,
        "{v}"
    );

    // Filters: users, state, a start_time window, job ids; as sacct selects.
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/jobs?users=nobody", "root", &root);
    assert_eq!(ids(&v), [theirs]);
    assert_eq!(as_sacct(&v), sacct(&c, &["-u", "nobody"]));
    assert_eq!(v["jobs"][0]["account"], "physics");
    let (_, v) = get(
        &addr,
        "/slurmdb/v0.0.44/jobs?state=FAILED,CA",
        "root",
        &root,
    );
    assert_eq!(ids(&v), [failed, cancelled]);
    assert_eq!(as_sacct(&v), sacct(&c, &["-a", "-s", "FAILED,CA"]));
    let window = format!("/slurmdb/v0.0.44/jobs?start_time={since}");
    let (_, v) = get(&addr, &window, "root", &root);
    assert_eq!(ids(&v), [failed, cancelled, theirs]);
    assert_eq!(as_sacct(&v), sacct(&c, &["-a", "-S", &since_text]));
    let (_, v) = get(
        &addr,
        &format!("/slurmdb/v0.0.44/jobs?step={done},{cancelled}&flags=skip_steps"),
        "root",
        &root,
    );
    assert_eq!(ids(&v), [done, cancelled]);
    assert_eq!(
        as_sacct(&v),
        sacct(&c, &["-X", "-j", &format!("{done},{cancelled}")])
    );
    let (status, v) = get(
        &addr,
        &format!("/slurmdb/v0.0.44/job/{failed}"),
        "root",
        &root,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(as_sacct(&v), sacct(&c, &["-j", &failed.to_string()]));
    let (_, v) = get(
        &addr,
        &format!("/slurmdb/v0.0.44/job/{failed}.0"),
        "root",
        &root,
    );
    assert_eq!(v["jobs"][0]["steps"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["jobs"][0]["steps"][0]["step"]["id"],
        format!("{failed}.0")
    );

    // PrivateData=jobs: nobody's token sees nobody's job alone.
    let (status, v) = get(&addr, "/slurmdb/v0.0.44/jobs", "nobody", &nobody);
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v), [theirs]);
    assert_eq!(v["meta"]["client"]["user"], "nobody");
    let (status, v) = get(
        &addr,
        &format!("/slurmdb/v0.0.44/job/{done}"),
        "nobody",
        &nobody,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v), Vec::<u64>::new());
    assert_eq!(
        v["warnings"][0]["description"],
        "slurmdb_jobs_get() found nothing"
    );
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/jobs?users=root", "nobody", &nobody);
    assert_eq!(ids(&v), Vec::<u64>::new());
    // PrivateData=users: nobody's own user record and associations alone.
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/users", "nobody", &nobody);
    let names: Vec<String> = v["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| s(&u["name"]))
        .collect();
    assert_eq!(names, ["nobody"]);
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/associations", "nobody", &nobody);
    let users: Vec<String> = v["associations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| s(&a["user"]))
        .collect();
    assert_eq!(users, ["nobody"]);

    // Bad filters: refused, with the parser's error and the handler's.
    for bad in [
        "state=SLEEPING",
        "start_time=whenever",
        "users=no-such-user-anywhere",
        "step=abc",
        "cpus_min=-3",
        "reservation=r1",
    ] {
        let (status, v) = get(
            &addr,
            &format!("/slurmdb/v0.0.44/jobs?{bad}"),
            "root",
            &root,
        );
        assert_eq!(
            (status, error_numbers(&v)),
            (422, vec![9216, 9000]),
            "{bad}: {v}"
        );
        assert_eq!(v["jobs"], Value::Array(vec![]));
    }
    let (status, v) = get(&addr, "/slurmdb/v0.0.44/job/12abc", "root", &root);
    assert_eq!((status, error_numbers(&v)), (422, vec![9216, 9000]), "{v}");
    // A key Slurm's parser does not know: ignored, with its warning.
    let (status, v) = get(
        &addr,
        "/slurmdb/v0.0.44/jobs?colour=blue&users=nobody",
        "root",
        &root,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v), [theirs]);
    assert_eq!(
        v["warnings"][0]["description"],
        "Ignoring unknown field \"colour\" of type string in JOB_CONDITION"
    );
    // Unknown paths: Slurm's 404.
    for path in ["/slurmdb/v0.0.44/nothing", "/slurmdb/v0.0.40/jobs"] {
        let (status, v) = get(&addr, path, "root", &root);
        assert_eq!(
            (status, error_numbers(&v)),
            (404, vec![11008]),
            "{path}: {v}"
        );
    }

    // Accounts, associations, QOS, users and the cluster, as sacctmgr shows them.
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/accounts", "root", &root);
    let rest: Vec<String> = v["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| [s(&a["name"]), s(&a["description"]), s(&a["organization"])].join("|"))
        .collect();
    assert_eq!(
        rest,
        sacctmgr(&c, &["accounts", "format=account,descr,org"])
    );
    assert!(
        rest.contains(&"physics|phys dept|sci".to_string()),
        "{rest:?}"
    );
    let (status, v) = get(
        &addr,
        "/slurmdb/v0.0.44/account/physics?with_assocs",
        "root",
        &root,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["accounts"][0]["associations"].as_array().unwrap().len(),
        2,
        "{v}"
    );
    let (_, v) = get(&addr, "/slurmdb/v0.0.44/account/nope", "root", &root);
    assert_eq!(v["accounts"], Value::Array(vec![]));
    assert_eq!(
        v["warnings"][0]["description"],
        "slurmdb_accounts_get() found nothing"
    );

    let (_, v) = get(&addr, "/slurmdb/v0.0.44/associations", "root", &root);
    let rest: Vec<String> = v["associations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let qos: Vec<String> = a["qos"].as_array().unwrap().iter().map(s).collect();
            [
                s(&a["cluster"]),
                s(&a["account"]),
                s(&a["user"]),
                s(&a["partition"]),
                a["shares_raw"].to_string(),
                num(&a["priority"]),
                qos.join(","),
                s(&a["default"]["qos"]),
                num(&a["max"]["jobs"]["active"]),
                num(&a["max"]["jobs"]["total"]),
                a["id"].to_string(),
                s(&a["parent_account"]),
            ]
            .join("|")
        })
        .collect();
    let shown = sacctmgr(
        &c,
        &["assoc", "format=cluster,account,user,partition,share,priority,qos,defaultqos,maxjobs,maxsubmit,id,parentname"],
    );
    assert_eq!(rest, shown);
    assert!(
        shown
            .iter()
            .any(|l| l.starts_with("small|physics|nobody||1||normal||7|")),
        "{shown:?}"
    );

    let (_, v) = get(&addr, "/slurmdb/v0.0.44/qos", "root", &root);
    let rest: Vec<String> = v["qos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            [
                s(&q["name"]),
                q["id"].to_string(),
                num(&q["priority"]),
                num(&q["limits"]["max"]["jobs"]["active_jobs"]["per"]["user"]),
            ]
            .join("|")
        })
        .collect();
    assert_eq!(
        rest,
        sacctmgr(&c, &["qos", "format=name,id,priority,maxjobspu"])
    );
    assert!(rest.contains(&"fast|2|10|3".to_string()), "{rest:?}");

    let (_, v) = get(&addr, "/slurmdb/v0.0.44/users", "root", &root);
    let rest: Vec<String> = v["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            [
                s(&u["name"]),
                s(&u["default"]["account"]),
                s(&u["administrator_level"][0]),
            ]
            .join("|")
        })
        .collect();
    let mut shown = sacctmgr(&c, &["users", "format=user,defaultaccount,admin"]);
    shown.sort();
    assert_eq!(rest, shown);
    assert!(
        rest.contains(&"nobody|physics|None".to_string()),
        "{rest:?}"
    );

    let (_, v) = get(&addr, "/slurmdb/v0.0.44/clusters", "root", &root);
    let rest: Vec<String> = v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            [
                s(&c["name"]),
                s(&c["controller"]["host"]),
                c["controller"]["port"].to_string(),
                c["rpc_version"].to_string(),
            ]
            .join("|")
        })
        .collect();
    assert_eq!(
        rest,
        sacctmgr(
            &c,
            &["clusters", "format=cluster,controlhost,controlport,rpc"]
        )
    );

    let (_, v) = get(&addr, "/slurmdb/v0.0.44/tres", "root", &root);
    let tres: Vec<(String, u64)> = v["TRES"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = match t["name"].as_str().unwrap() {
                "" => s(&t["type"]),
                n => format!("{}/{n}", s(&t["type"])),
            };
            (name, t["id"].as_u64().unwrap())
        })
        .collect();
    for (name, id) in [("cpu", 1), ("mem", 2), ("node", 4), ("billing", 5)] {
        assert!(tres.contains(&(name.to_string(), id)), "{tres:?}");
    }
    let _ = std::fs::remove_file(&key);
}
