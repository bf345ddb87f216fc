//! `sluice reservations [--idle]`: advance reservations with what they set aside and
//! what their jobs used so far — reserved capacity left idle is a cost an operator
//! should see. `scontrol show reservation` keeps Slurm's exact shape; this is the
//! extra view.

use clap::Args;
use sluice_proto::reservations::ReservationRecord;

use crate::slurm::common::{controller, describe, now};

/// Options of `sluice reservations`.
#[derive(Args, Debug)]
pub struct ReservationsArgs {
    /// Only reservations with reserved capacity left unused so far.
    #[arg(long)]
    pub idle: bool,
}

fn hours(secs: u64) -> String {
    format!("{:.2}", secs as f64 / 3600.0)
}

/// One table line per reservation: reserved, used and idle node-hours and GPU-hours,
/// and since when it has sat idle.
pub fn table(records: &[ReservationRecord], idle_only: bool, now: i64) -> String {
    let mut out = format!(
        "{:<16} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
        "NAME",
        "STATE",
        "NODE_H",
        "USED_N_H",
        "IDLE_N_H",
        "GPU_H",
        "USED_G_H",
        "IDLE_G_H",
        "IDLE_FOR"
    );
    for r in records {
        let u = &r.usage;
        let idle_n = u.reserved_node_s.saturating_sub(u.used_node_s);
        let idle_g = u.reserved_gpu_s.saturating_sub(u.used_gpu_s);
        if idle_only && idle_n == 0 && idle_g == 0 {
            continue;
        }
        let idle_for = u
            .idle_since
            .map(|t| sluice_conf::duration::format_time(Some((now - t).max(0))))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<16} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
            r.name,
            r.state,
            hours(u.reserved_node_s),
            hours(u.used_node_s),
            hours(idle_n),
            hours(u.reserved_gpu_s),
            hours(u.used_gpu_s),
            hours(idle_g),
            idle_for
        ));
    }
    out
}

/// Runs `sluice reservations`.
pub fn run(args: ReservationsArgs) -> i32 {
    let records: Vec<ReservationRecord> = match controller().get("/v1/reservations") {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sluice reservations: error: {}", describe(&e));
            return 1;
        }
    };
    print!("{}", table(&records, args.idle, now()));
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::reservations::ReservationUsage;

    #[test]
    fn the_table_shows_idle_hours_and_skips_busy_ones_with_idle() {
        let r = |name: &str, used: u64| ReservationRecord {
            name: name.into(),
            state: "ACTIVE".into(),
            usage: ReservationUsage {
                reserved_node_s: 7200,
                used_node_s: used,
                reserved_gpu_s: 28_800,
                used_gpu_s: used * 4,
                idle_since: (used == 0).then_some(0),
            },
            ..Default::default()
        };
        let t = table(&[r("idle", 0), r("busy", 7200)], true, 5400);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            vec!["idle", "ACTIVE", "2.00", "0.00", "2.00", "8.00", "0.00", "8.00", "01:30:00"]
        );
    }
}
