//! A job's page: what it asked for, what it was given, the explanation of where it
//! stands (from `sluice explain`) and its story from the audit trail.

use sluice_proto::types::JobRecord;

use super::page::{duration, esc, time};

/// One `<dt>`/`<dd>` pair; nothing for an empty value.
fn item(out: &mut String, key: &str, value: &str) {
    if !value.is_empty() {
        out.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(key), esc(value)));
    }
}

/// The page's body for `r`, with the explanation's text and the audit story's (empty:
/// none).
pub fn render(r: &JobRecord, explanation: &str, story: &str) -> String {
    let d = &r.desc;
    let mut out = String::from("<h2>Request</h2><dl id=\"request\">");
    item(&mut out, "Name", &d.name);
    item(&mut out, "User", &r.user);
    item(&mut out, "Account", &r.account);
    item(&mut out, "Partition", &r.partition);
    item(&mut out, "QOS", &r.qos);
    if let Some((min, max)) = d.nodes {
        item(
            &mut out,
            "Nodes",
            &if min == max {
                min.to_string()
            } else {
                format!("{min}-{max}")
            },
        );
    }
    item(&mut out, "Tasks", &r.ntasks.to_string());
    item(&mut out, "CPUs per task", &r.cpus_per_task.to_string());
    let gres: Vec<String> = d
        .gres
        .iter()
        .map(|g| match &g.gres_type {
            Some(t) => format!("{}:{t}:{}", g.name, g.count),
            None => format!("{}:{}", g.name, g.count),
        })
        .collect();
    item(&mut out, "GRES per node", &gres.join(","));
    if let Some((t, n)) = &d.gpus {
        item(
            &mut out,
            "GPUs",
            &t.as_ref().map_or(n.to_string(), |t| format!("{t}:{n}")),
        );
    }
    item(
        &mut out,
        "Time limit",
        &r.time_limit.map_or("UNLIMITED".into(), duration),
    );
    item(&mut out, "Submitted", &time(r.submit_time));
    item(&mut out, "Working directory", &d.work_dir);
    item(&mut out, "Output", &r.stdout);
    item(&mut out, "Error", &r.stderr);
    out.push_str("</dl>\n<h2>Allocation</h2>");
    if r.nodes.is_empty() {
        out.push_str("<p class=\"muted\" id=\"allocation\">None yet.</p>\n");
    } else {
        out.push_str("<table id=\"allocation\"><thead><tr><th>Node</th><th>CPUs</th><th>GPUs</th></tr></thead><tbody>");
        for (i, n) in r.nodes.iter().enumerate() {
            let gpus = r
                .gpus_per_node
                .get(i)
                .map(|g| g.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
                .unwrap_or_default();
            out.push_str(&format!(
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(n),
                r.cpus_per_node.get(i).copied().unwrap_or(0),
                esc(&gpus)
            ));
        }
        out.push_str("</tbody></table>\n");
        if let Some(s) = r.start_time {
            out.push_str(&format!("<p>Started {}.</p>\n", esc(&time(s))));
        }
    }
    out.push_str("<h2>Where it stands</h2>");
    if explanation.trim().is_empty() {
        out.push_str("<p class=\"muted\">No explanation.</p>\n");
    } else {
        out.push_str(&format!("<pre id=\"explain\">{}</pre>\n", esc(explanation)));
    }
    out.push_str("<h2>Its story</h2>");
    if story.trim().is_empty() {
        out.push_str("<p class=\"muted\">No audit events yet.</p>\n");
    } else {
        out.push_str(&format!("<pre id=\"story\">{}</pre>\n", esc(story)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::JobState;

    #[test]
    fn the_page_shows_the_request_the_allocation_and_the_explanation() {
        let mut r = JobRecord {
            id: 5,
            user: "alice".into(),
            partition: "gpu".into(),
            state: JobState::Running,
            ntasks: 2,
            cpus_per_task: 4,
            time_limit: Some(3_600),
            nodes: vec!["g1".into()],
            cpus_per_node: vec![8],
            gpus_per_node: vec![vec![1, 3]],
            start_time: Some(100),
            stdout: "/home/alice/slurm-5.out".into(),
            ..Default::default()
        };
        r.desc.name = "train".into();
        let html = render(&r, "Job 5 runs on g1 & will end by <noon>.", "");
        assert!(html.contains("<dt>Time limit</dt><dd>01:00:00</dd>"));
        assert!(html.contains("<dt>Output</dt><dd>/home/alice/slurm-5.out</dd>"));
        assert!(html.contains("<tr><td>g1</td><td class=\"num\">8</td><td>1,3</td></tr>"));
        assert!(html.contains(
            "<pre id=\"explain\">Job 5 runs on g1 &amp; will end by &lt;noon&gt;.</pre>"
        ));
        assert!(html.contains("No audit events yet."));
    }
}
