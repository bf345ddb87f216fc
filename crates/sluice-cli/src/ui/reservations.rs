//! The reservations page: each advance reservation's window, nodes and who may use it,
//! with the node-hours and GPU-hours it set aside, used and left idle so far (as
//! `sluice reservations` counts them), the idle part drawn as a bar.

use sluice_proto::reservations::ReservationRecord;

use super::page::{duration, esc, time};

fn hours(secs: u64) -> String {
    format!("{:.2}", secs as f64 / 3600.0)
}

/// The page's body at `now`.
pub fn render(records: &[ReservationRecord], now: i64) -> String {
    if records.is_empty() {
        return "<p class=\"muted\">No reservations.</p>\n".into();
    }
    let mut out = String::from(
        "<style>.idlebar{width:10em;height:.7em;background:#2e9e5b}.idlebar div{height:100%;background:#e0a100}</style>\
<table id=\"reservations\"><thead><tr><th>Name</th><th>State</th><th>From</th><th>To</th><th>Nodes</th><th>Users / accounts</th><th>Node-hours reserved</th><th>used</th><th>idle</th><th>GPU-hours idle</th><th>Idle for</th><th>Idle share</th></tr></thead><tbody>\n",
    );
    for r in records {
        let u = &r.usage;
        let idle_n = u.reserved_node_s.saturating_sub(u.used_node_s);
        let idle_g = u.reserved_gpu_s.saturating_sub(u.used_gpu_s);
        let share = if u.reserved_node_s > 0 {
            idle_n as f64 / u.reserved_node_s as f64
        } else {
            0.0
        };
        let who: Vec<&str> = r
            .users
            .iter()
            .chain(r.accounts.iter())
            .map(String::as_str)
            .collect();
        out.push_str(&format!(
            "<tr data-reservation=\"{}\"><td>{0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num idle-node-hours\">{}</td><td class=\"num\">{}</td><td>{}</td><td><div class=\"idlebar\" title=\"{:.0}% idle\"><div style=\"width:{:.1}%\"></div></div></td></tr>\n",
            esc(&r.name),
            esc(&r.state),
            esc(&time(r.start)),
            esc(&time(r.end)),
            esc(&sluice_conf::hostlist::compress(&r.nodes)),
            esc(&who.join(", ")),
            hours(u.reserved_node_s),
            hours(u.used_node_s),
            hours(idle_n),
            hours(idle_g),
            u.idle_since.map_or("-".into(), |t| duration(now - t)),
            share * 100.0,
            share * 100.0,
        ));
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::reservations::ReservationUsage;

    #[test]
    fn a_reservation_shows_its_idle_hours_and_share() {
        let r = ReservationRecord {
            name: "demo<1>".into(),
            state: "ACTIVE".into(),
            nodes: vec!["g1".into(), "g2".into()],
            users: vec!["alice".into()],
            usage: ReservationUsage {
                reserved_node_s: 4 * 3600,
                used_node_s: 3600,
                reserved_gpu_s: 8 * 3600,
                used_gpu_s: 0,
                idle_since: Some(100),
            },
            ..Default::default()
        };
        let html = render(&[r], 100 + 90);
        assert!(html.contains("<td>demo&lt;1&gt;</td>"));
        assert!(html.contains("<td>g[1-2]</td><td>alice</td><td class=\"num\">4.00</td><td class=\"num\">1.00</td><td class=\"num idle-node-hours\">3.00</td><td class=\"num\">8.00</td><td>00:01:30</td>"));
        assert!(html.contains("title=\"75% idle\""));
    }
}
