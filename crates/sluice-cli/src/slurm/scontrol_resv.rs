//! `scontrol create|update|delete reservation` and `scontrol show reservation`, with
//! real Slurm 22.05's words, messages and exit codes (samples in
//! `tests/samples/reservations/`).
//!
//! One deviation: `TRES=gres/gpu:N` is taken as well as Slurm's `TRES=gres/gpu=N`.

use sluice_proto::reservations::{
    ListChange, ListOp, ReservationChange, ReservationOp, ReservationRecord,
};
use sluice_proto::time::{parse_timestamp, shown};
use sluice_proto::{Client, ClientError};

use super::common::{describe, now};

/// What parsing the words found wrong: Slurm's client-side message (before
/// `.  No reservation created.`).
type ParseError = String;

/// Parses `KEY=VALUE` words (`Users+=a` and `Users-=a` for lists) into a request.
fn parse(words: &[String], t: i64) -> Result<ReservationChange, ParseError> {
    let mut req = ReservationChange::default();
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Err(format!("Unknown parameter {w}"));
        };
        let (key, op) = if let Some(k) = k.strip_suffix('+') {
            (k, ListOp::Add)
        } else if let Some(k) = k.strip_suffix('-') {
            (k, ListOp::Remove)
        } else {
            (k, ListOp::Set)
        };
        let list = |v: &str| ListChange {
            op,
            items: v
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        };
        let unknown = || format!("Unknown parameter {w}");
        match key.to_ascii_lowercase().as_str() {
            "reservationname" | "reservation" | "resv" => req.name = Some(v.to_string()),
            "starttime" => {
                req.start = Some(parse_timestamp(v, t).ok_or_else(|| {
                    eprintln!("Invalid time specification (pos=0): {v}");
                    format!("Invalid start time {w}")
                })?)
            }
            "endtime" => {
                req.end = Some(parse_timestamp(v, t).ok_or_else(|| {
                    eprintln!("Invalid time specification (pos=0): {v}");
                    format!("Invalid end time {w}")
                })?)
            }
            "duration" => {
                let d = sluice_conf::duration::parse_time(v)
                    .ok()
                    .flatten()
                    .ok_or_else(|| format!("Invalid duration {v}"))?;
                req.duration = Some(d);
            }
            "nodes" | "nodelist" => req.nodes = Some(v.to_string()),
            "nodecnt" | "nodecount" => {
                req.node_count = Some(v.parse().map_err(|_| format!("Invalid node count {v}"))?)
            }
            "tres" => {
                // gres/gpu=N (Slurm's) or gres/gpu:N.
                let n = v
                    .strip_prefix("gres/gpu=")
                    .or_else(|| v.strip_prefix("gres/gpu:"))
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| format!("invalid TRES '{v}'"))?;
                req.gpus = Some(n);
            }
            "partitionname" | "partition" => req.partition = Some(v.to_string()),
            "users" | "user" => req.users = Some(list(v)),
            "accounts" | "account" => req.accounts = Some(list(v)),
            "flags" | "flag" => {
                const KNOWN: &[&str] = &[
                    "MAINT",
                    "FLEX",
                    "IGNORE_JOBS",
                    "DAILY",
                    "WEEKLY",
                    "PURGE_COMP",
                    "SPEC_NODES",
                ];
                let l = list(v);
                for f in &l.items {
                    let name = f.split('=').next().unwrap_or("").to_ascii_uppercase();
                    if !KNOWN.contains(&name.as_str()) {
                        return Err(format!("Error parsing flags {v}"));
                    }
                }
                req.flags = Some(l);
            }
            _ => return Err(unknown()),
        }
    }
    Ok(req)
}

/// `scontrol create reservation WORDS`.
pub fn create(client: &Client, words: &[String]) -> i32 {
    let refuse = |m: &str| {
        eprintln!("scontrol: error: {m}.  No reservation created.");
        1
    };
    let mut req = match parse(words, now()) {
        Ok(r) => r,
        Err(m) => return refuse(&m),
    };
    if req.start.is_none() {
        return refuse("A start time must be given");
    }
    if req.end.is_none() && req.duration.is_none() {
        return refuse("An end time or duration must be given");
    }
    if req.nodes.is_none() && req.node_count.is_none() && req.gpus.is_none() {
        return refuse("CoreCnt, Nodes, NodeCnt, BurstBuffer, Licenses or Watts must be specified");
    }
    if req.users.is_none() && req.accounts.is_none() {
        return refuse("Either Users/Groups and/or Accounts must be specified");
    }
    req.op = Some(ReservationOp::Create);
    match send(client, &req) {
        Ok(name) => {
            println!("Reservation created: {name}");
            0
        }
        Err(m) => {
            if m == "Requested nodes are busy" {
                // Slurm's note, on standard output.
                println!("Note, unless nodes are directly requested a reservation must exist in a single partition.");
                println!("If no partition is requested the default partition is assumed.");
            }
            eprintln!("Error creating the reservation: {m}");
            1
        }
    }
}

/// `scontrol update reservation WORDS` (also `scontrol update ReservationName=...`).
pub fn update(client: &Client, words: &[String]) -> i32 {
    let refuse = |m: &str| {
        eprintln!("scontrol: error: {m}.  No reservation update.");
        if m != "Reservation must be given" {
            // Slurm 22.05 adds this odd line after a bad word.
            eprintln!("slurm_update error: No error");
        }
        1
    };
    let mut req = match parse(words, now()) {
        Ok(r) => r,
        Err(m) => return refuse(&m),
    };
    if req.name.is_none() {
        return refuse("Reservation must be given");
    }
    req.op = Some(ReservationOp::Update);
    match send(client, &req) {
        Ok(_) => {
            println!("Reservation updated.");
            0
        }
        Err(m) => {
            eprintln!("Error updating the reservation: {m}");
            eprintln!("slurm_update error: {m}");
            1
        }
    }
}

/// `scontrol delete reservation NAME` or `scontrol delete ReservationName=NAME`.
pub fn delete(client: &Client, name: &str) -> i32 {
    let req = ReservationChange {
        op: Some(ReservationOp::Delete),
        name: Some(name.to_string()),
        ..Default::default()
    };
    match send(client, &req) {
        Ok(_) => 0,
        Err(m) => {
            eprintln!("delete_reservation reservation: {m}");
            1
        }
    }
}

fn send(client: &Client, req: &ReservationChange) -> Result<String, String> {
    let r: Result<serde_json::Value, ClientError> = client.post("/v1/reservations", req);
    match r {
        Ok(v) => Ok(v["name"].as_str().unwrap_or_default().to_string()),
        Err(e) => Err(describe(&e)),
    }
}

fn or_null(v: &[String]) -> String {
    if v.is_empty() {
        "(null)".into()
    } else {
        v.join(",")
    }
}

/// A reservation as `scontrol show reservation` prints it: `(key, value)` pairs, with
/// the keys that start a new line in [`RESV_BREAKS`].
pub fn show_pairs(r: &ReservationRecord) -> Vec<(String, String)> {
    let p = |k: &str, v: String| (k.to_string(), v);
    let tres = match r.gpus {
        Some(_) => format!("gres/gpu={}", r.gpus_per_node.iter().sum::<u32>()),
        None => format!("cpu={}", r.cores),
    };
    vec![
        p("ReservationName", r.name.clone()),
        p("StartTime", shown(r.start)),
        p("EndTime", shown(r.end)),
        p(
            "Duration",
            sluice_conf::duration::format_time(Some(r.end - r.start)),
        ),
        p(
            "Nodes",
            if r.nodes.is_empty() {
                "(null)".into()
            } else {
                sluice_conf::hostlist::compress(&r.nodes)
            },
        ),
        p("NodeCnt", r.nodes.len().to_string()),
        p("CoreCnt", r.cores.to_string()),
        p("Features", "(null)".into()),
        p(
            "PartitionName",
            r.partition.clone().unwrap_or_else(|| "(null)".into()),
        ),
        p("Flags", sluice_ctld::state::reservations::flags_string(r)),
        p("TRES", tres),
        p("Users", or_null(&r.users)),
        p("Groups", "(null)".into()),
        p("Accounts", or_null(&r.accounts)),
        p("Licenses", "(null)".into()),
        p("State", r.state.clone()),
        p("BurstBuffer", "(null)".into()),
        p("Watts", "n/a".into()),
        p("MaxStartDelay", "(null)".into()),
    ]
}

/// Keys that start a new (indented) line in the multi-line form.
const RESV_BREAKS: &[&str] = &["Nodes", "TRES", "Users", "MaxStartDelay"];

/// Formats pairs as Slurm does: one line with `-o`, else lines broken before
/// [`RESV_BREAKS`], each reservation followed by an empty line.
pub fn format_record(pairs: &[(String, String)], one_line: bool) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            if !one_line && RESV_BREAKS.contains(&k.as_str()) {
                out.push_str("\n   ");
            } else {
                out.push(' ');
            }
        }
        out.push_str(&format!("{k}={v}"));
    }
    out.push('\n');
    if !one_line {
        out.push('\n');
    }
    out
}

/// `scontrol show reservation [NAME]`.
pub fn show(client: &Client, name: Option<&str>, one_line: bool) -> i32 {
    let all: Vec<ReservationRecord> = match client.get("/v1/reservations") {
        Ok(v) => v,
        Err(e) => {
            eprintln!("slurm_load_reservations error: {}", describe(&e));
            return 1;
        }
    };
    let shown: Vec<&ReservationRecord> = all
        .iter()
        .filter(|r| name.is_none_or(|n| n == r.name))
        .collect();
    if shown.is_empty() {
        match name {
            Some(n) => {
                println!("Reservation {n} not found");
                return 1;
            }
            None => {
                println!("No reservations in the system");
                return 0;
            }
        }
    }
    for r in shown {
        print!("{}", format_record(&show_pairs(r), one_line));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_into_a_request() {
        let w: Vec<String> = [
            "ReservationName=m",
            "starttime=now+1hour",
            "duration=30",
            "nodecnt=2",
            "users=root,-bob",
            "flags=maint,purge_comp=10:00",
            "tres=gres/gpu:4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let r = parse(&w, 1000).unwrap();
        assert_eq!(r.name.as_deref(), Some("m"));
        assert_eq!(r.start, Some(4600));
        assert_eq!(r.duration, Some(1800));
        assert_eq!(r.node_count, Some(2));
        assert_eq!(r.gpus, Some(4));
        assert_eq!(r.users.unwrap().items, vec!["root", "-bob"]);
        let w = vec!["users+=daemon".to_string()];
        assert_eq!(parse(&w, 0).unwrap().users.unwrap().op, ListOp::Add);
        let w = vec!["bogus=1".to_string()];
        assert_eq!(parse(&w, 0).unwrap_err(), "Unknown parameter bogus=1");
        let w = vec!["flags=bogus".to_string()];
        assert_eq!(parse(&w, 0).unwrap_err(), "Error parsing flags bogus");
    }
}

#[cfg(test)]
mod sample_tests {
    use super::*;

    /// Real Slurm's `scontrol show res allf` and `-o` (the times cut: they depend on
    /// the time zone) against the same reservation formatted here.
    #[test]
    fn show_reservation_has_slurms_exact_shape() {
        let r = ReservationRecord {
            name: "allf".into(),
            start: 0,
            end: 3600,
            nodes: vec!["n3".into()],
            partition: Some("debug".into()),
            users: vec!["root".into(), "daemon".into()],
            flags: [
                "MAINT",
                "FLEX",
                "IGNORE_JOBS",
                "WEEKLY",
                "PURGE_COMP",
                "SPEC_NODES",
                "DAILY",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            cores: 2,
            state: "INACTIVE".into(),
            ..Default::default()
        };
        let cut = |text: &str| -> String {
            let s = text.find(" StartTime=").unwrap();
            let d = text.find(" Duration=").unwrap();
            format!("{}{}", &text[..s], &text[d..])
        };
        for (file, one_line) in [("2_show_res_short", false), ("2_show_oneliner", true)] {
            let path = format!(
                "{}/tests/samples/reservations/{file}.txt",
                env!("CARGO_MANIFEST_DIR")
            );
            let sample = std::fs::read_to_string(path).unwrap();
            let body = sample.split_once('\n').unwrap().1;
            let body = &body[..body.rfind("--- exit").unwrap()];
            assert_eq!(
                cut(&format_record(&show_pairs(&r), one_line)),
                cut(body),
                "{file}"
            );
        }
    }
}
