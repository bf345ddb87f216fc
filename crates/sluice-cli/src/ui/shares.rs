//! The fair-share page: the account tree (`sshare -a`), each association's share of the
//! cluster against its usage, drawn as two bars, and its fair-share factor.

use sluice_proto::priority::SharesReport;

use super::page::esc;

/// A bar `fraction` (0..1) of the cell wide.
fn bar(class: &str, fraction: f64) -> String {
    let pct = (fraction.clamp(0.0, 1.0) * 100.0 * 10.0).round() / 10.0;
    format!("<div class=\"bar {class}\" style=\"width:{pct}%\" title=\"{pct}%\"></div>")
}

/// The page's body.
pub fn render(report: &SharesReport) -> String {
    let mut out = String::from(
        "<style>.bars{width:18em}.bar{height:.55em;margin:.1em 0}.bar.share{background:#2f5fb3}.bar.usage{background:#e0a100}</style>\
<p class=\"legend\"><span><span class=\"gpu\" style=\"background:#2f5fb3\"></span> share of the cluster</span><span><span class=\"gpu\" style=\"background:#e0a100\"></span> share of its usage</span></p>\n\
<table id=\"shares\"><thead><tr><th>Account / user</th><th>Shares</th><th>Norm. shares</th><th>Raw usage</th><th>Effective usage</th><th>Fair share</th><th></th></tr></thead><tbody>\n",
    );
    for r in &report.rows {
        let name = match &r.user {
            Some(u) => format!(
                "{} <span class=\"muted\">({})</span>",
                esc(u),
                esc(&r.account)
            ),
            None => format!("<strong>{}</strong>", esc(&r.account)),
        };
        let indent = f64::from(r.depth) * 1.2;
        out.push_str(&format!(
            "<tr data-account=\"{}\" data-user=\"{}\"><td style=\"padding-left:{indent}em\">{name}</td><td class=\"num\">{}</td><td class=\"num\">{:.6}</td><td class=\"num\">{:.0}</td><td class=\"num\">{:.6}</td><td class=\"num fairshare\">{}</td><td class=\"bars\">{}{}</td></tr>\n",
            esc(&r.account),
            esc(r.user.as_deref().unwrap_or("")),
            esc(r.raw_shares.as_deref().unwrap_or("")),
            r.norm_shares,
            r.raw_usage,
            r.effective_usage,
            r.fairshare.map_or(String::new(), |f| format!("{f:.6}")),
            bar("share", r.norm_shares),
            bar("usage", r.effective_usage),
        ));
    }
    out.push_str("</tbody></table>\n");
    out
}
