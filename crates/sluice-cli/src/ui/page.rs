//! What every dashboard page shares: HTML escaping, the page frame with its navigation,
//! and the few styles. Pages are rendered on the server from the controller's answers;
//! the only script is the one that submits a filter form when a choice changes.

/// `text` with HTML's special characters escaped, for element content and quoted
/// attribute values alike.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The pages, in the navigation's order: (path, title).
pub const PAGES: [(&str, &str); 5] = [
    ("/ui", "Queue"),
    ("/ui/nodes", "Nodes and GPUs"),
    ("/ui/shares", "Fair share"),
    ("/ui/reservations", "Reservations"),
    ("/ui/history", "Last day"),
];

pub const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}\
header{background:#1d2430;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:baseline}\
header a{color:#cfe0ff;text-decoration:none}header a.here{color:#fff;font-weight:600}\
header .who{margin-left:auto;color:#9aa7b8;font-size:.9em}\
main{padding:1em 1.2em}h1{font-size:1.3em;margin:.2em 0 .6em}h2{font-size:1.05em;margin:1.2em 0 .4em}\
table{border-collapse:collapse;background:#fff;font-size:.92em}\
th,td{border-bottom:1px solid #e2e5ea;padding:.35em .7em;text-align:left;vertical-align:top}\
th{background:#eef1f5}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.state-RUNNING{color:#0a7a33;font-weight:600}.state-PENDING{color:#8a5a00;font-weight:600}\
.muted{color:#6b7685}pre{background:#fff;border:1px solid #e2e5ea;padding:.8em;overflow:auto}\
form.filters{margin:.2em 0 1em;display:flex;gap:1em}\
.gpus{display:flex;gap:3px;flex-wrap:wrap}\
.gpu{width:2.2em;height:2.2em;border-radius:3px;display:flex;align-items:center;justify-content:center;font-size:.75em;color:#fff}\
.gpu-idle{background:#2e9e5b}.gpu-held{background:#2f5fb3}.gpu-shared{background:#7a55c7}\
.gpu-unavailable{background:#9aa3ad}.gpu-fragment{background:#e0a100}\
.legend span{display:inline-block;margin-right:1em}.legend .gpu{display:inline-flex;width:1.2em;height:1.2em;vertical-align:middle}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em;background:#fff;padding:.8em;border:1px solid #e2e5ea}\
dt{color:#6b7685}dd{margin:0}";

/// The submit-on-change of the filter forms: the page's only script.
const SCRIPT: &str = "document.querySelectorAll('form.filters select').forEach(function(s){s.addEventListener('change',function(){s.form.submit()})});";

/// A whole page: `title`, the navigation with `path` marked, who is looking, `body`.
pub fn frame(title: &str, path: &str, who: &str, body: &str) -> String {
    let mut nav = String::new();
    for (p, t) in PAGES {
        let here = if p == path { " class=\"here\"" } else { "" };
        nav.push_str(&format!("<a href=\"{p}\"{here}>{}</a>", esc(t)));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\">\
<title>{} · Sluice</title><style>{STYLE}</style></head>\
<body><header><strong>Sluice</strong>{nav}<span class=\"who\">as {}</span></header>\
<main><h1>{}</h1>\n{body}\n</main><script>{SCRIPT}</script></body></html>\n",
        esc(title),
        esc(who),
        esc(title)
    )
}

/// A filter `<select>` named `name` offering `choices` (and "all"), `current` chosen.
pub fn select(name: &str, label: &str, choices: &[String], current: Option<&str>) -> String {
    let mut out = format!(
        "<label>{} <select name=\"{}\"><option value=\"\">all</option>",
        esc(label),
        esc(name)
    );
    for c in choices {
        let chosen = if Some(c.as_str()) == current {
            " selected"
        } else {
            ""
        };
        out.push_str(&format!(
            "<option value=\"{0}\"{chosen}>{0}</option>",
            esc(c)
        ));
    }
    out.push_str("</select></label>");
    out
}

/// A duration in Slurm's `[D-]HH:MM:SS` form (negative: zero).
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A point in time as the commands print it (`2026-12-02T10:00:00`, local time).
pub fn time(t: i64) -> String {
    sluice_proto::time::timestamp(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_users_cannot_become_markup() {
        assert_eq!(
            esc("<script>alert(\"x\")</script> & 'y'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        let page = frame("Queue", "/ui", "<alice>", "<p>ok</p>");
        assert!(page.contains("as &lt;alice&gt;"));
        assert!(page.contains("<a href=\"/ui\" class=\"here\">Queue</a>"));
        assert!(page.contains("<a href=\"/ui/nodes\">Nodes and GPUs</a>"));
    }

    #[test]
    fn a_select_marks_the_current_choice() {
        let s = select("user", "User", &["alice".into(), "bob".into()], Some("bob"));
        assert!(s.contains("<option value=\"bob\" selected>bob</option>"));
        assert!(s.contains("<option value=\"alice\">alice</option>"));
        assert_eq!(duration(3_725), "01:02:05");
        assert_eq!(duration(90_061), "1-01:01:01");
        assert_eq!(duration(-5), "00:00:00");
    }
}
