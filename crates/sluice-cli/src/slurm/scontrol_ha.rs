//! `scontrol ping` and `scontrol takeover`: each controller of the cluster as Slurm
//! 22.05 names it (`primary`, `backup`, `backupN` when there are more than two), and
//! the hand-over to a backup on purpose.

use sluice_proto::error::ErrorCode;
use sluice_proto::{Client, ClientError};

use super::common::{describe, each_controller, hostname};

/// Whether the controller behind `client` answers: the active one, or a standby
/// (which answers that it stands by, as Slurm's backup answers a ping).
fn answers(client: &Client) -> bool {
    match client.get::<serde_json::Value>("/v1/ping") {
        Ok(_) => true,
        Err(ClientError::Status { code, .. }) => code == ErrorCode::InStandby,
        Err(_) => false,
    }
}

/// The name of controller `index` of `count` in `scontrol ping`'s lines.
fn mode(index: usize, count: usize) -> String {
    match index {
        0 => "primary".into(),
        1 if count == 2 => "backup".into(),
        i => format!("backup{i}"),
    }
}

/// `scontrol ping`: one line per controller; exit status 0 when any is up. Slurm tells
/// root, under the lines, to restore a controller that is down.
pub fn ping(client: &Client) -> i32 {
    let Some(all) = each_controller() else {
        let up = answers(client);
        println!(
            "Slurmctld(primary) at {} is {}",
            hostname(),
            if up { "UP" } else { "DOWN" }
        );
        return if up { 0 } else { 1 };
    };
    let mut any = false;
    let mut down = false;
    for (i, (name, c)) in all.iter().enumerate() {
        let up = answers(c);
        any |= up;
        down |= !up;
        println!(
            "Slurmctld({}) at {name} is {}",
            mode(i, all.len()),
            if up { "UP" } else { "DOWN" }
        );
    }
    if down && nix::unistd::getuid().is_root() {
        println!("*****************************************");
        println!("** RESTORE SLURMCTLD DAEMON TO SERVICE **");
        println!("*****************************************");
    }
    if any {
        0
    } else {
        1
    }
}

/// `scontrol takeover [INDEX]`: backup `INDEX` (default 1) asks the active controller
/// to hand over, and takes over once it has.
pub fn takeover(words: &[String]) -> i32 {
    let all = each_controller().unwrap_or_default();
    let count = all.len().max(1);
    let index = match words.len() {
        1 => 1,
        2 => {
            let i = atoi(&words[1]);
            if i < 1 || i >= count as i64 {
                eprintln!("takeover: invalid backup controller index ({i})");
                return 1;
            }
            i as usize
        }
        _ => {
            eprintln!("takeover: too many arguments");
            return 1;
        }
    };
    let Some((_, client)) = all.get(index) else {
        eprintln!("slurm_takeover error: Unable to contact slurm controller (connect failure)");
        return 1;
    };
    match client.post::<_, serde_json::Value>("/v1/takeover", &serde_json::json!({})) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("slurm_takeover error: {}", describe(&e));
            1
        }
    }
}

/// C's `atoi`: the leading integer, 0 if none.
fn atoi(s: &str) -> i64 {
    super::common::strtol(s).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_are_named_as_slurm_names_them() {
        assert_eq!(mode(0, 2), "primary");
        assert_eq!(mode(1, 2), "backup");
        assert_eq!(mode(1, 3), "backup1");
        assert_eq!(mode(2, 3), "backup2");
        assert_eq!(atoi(" 2x"), 2);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("-1"), -1);
    }
}
