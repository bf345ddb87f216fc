//! `squeue -v`: the options as squeue read them, printed before the listing in Slurm
//! 22.05's layout (`-vv` adds the lists they were split into), and the number of
//! records the controller answered.

/// The options as given (or as the environment gave them), for the dump: what
/// Slurm's squeue keeps of each before it uses them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Given {
    pub all: bool,
    pub array: bool,
    pub federation: bool,
    pub local: bool,
    pub sibling: bool,
    pub priority: bool,
    /// `-o` (or `SQUEUE_FORMAT`, or `--start`'s columns); `-l`, `-O` and the default
    /// leave it unset.
    pub format: Option<String>,
    pub iterate: u64,
    pub job_flag: bool,
    pub jobs: Option<String>,
    /// The jobs `-j` named, as read (`-vv`'s `job_list`).
    pub job_ids: Vec<(u64, Option<u32>)>,
    pub licenses: Option<String>,
    pub names: Option<String>,
    /// `-w`, as squeue's hostset prints it back (`n[1-2]`).
    pub nodes: Option<String>,
    pub partitions: Option<String>,
    pub reservation: Option<String>,
    pub sort: Option<String>,
    pub start: bool,
    pub states: Option<String>,
    pub step_flag: bool,
    pub steps: Option<String>,
    pub users: Option<String>,
    pub verbose: u32,
}

/// `%s` of a C string that may be NULL.
fn or_null(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("(null)")
}

/// A list option split as squeue splits it (on commas, empty pieces dropped).
fn pieces(v: &Option<String>) -> Vec<&str> {
    v.as_deref()
        .map(|s| s.split(',').filter(|p| !p.is_empty()).collect())
        .unwrap_or_default()
}

/// The dump `-v` prints first, on standard output.
pub(crate) fn dump(g: &Given) -> String {
    let flag = |b: bool| if b { "true" } else { "false" };
    let mut out = String::from("-----------------------------\n");
    let mut line = |k: &str, v: &str| {
        out.push_str(k);
        out.push_str(" = ");
        out.push_str(v);
        out.push('\n');
    };
    line("all        ", flag(g.all));
    line("array      ", flag(g.array));
    line("federation ", flag(g.federation));
    line("format     ", or_null(&g.format));
    line("iterate    ", &g.iterate.to_string());
    line("job_flag   ", if g.job_flag { "1" } else { "0" });
    line("jobs       ", or_null(&g.jobs));
    line("licenses   ", or_null(&g.licenses));
    line("local      ", flag(g.local));
    line("names      ", or_null(&g.names));
    line("nodes      ", g.nodes.as_deref().unwrap_or(""));
    line("partitions ", or_null(&g.partitions));
    line("priority   ", flag(g.priority));
    line("reservation", or_null(&g.reservation));
    // Slurm's own misalignment, kept.
    line("sibling     ", flag(g.sibling));
    line("sort       ", or_null(&g.sort));
    line("start_flag ", if g.start { "1" } else { "0" });
    line("states     ", or_null(&g.states));
    line("step_flag  ", if g.step_flag { "1" } else { "0" });
    line("steps      ", or_null(&g.steps));
    line("users      ", or_null(&g.users));
    line("verbose    ", &g.verbose.to_string());
    if g.verbose > 1 {
        lists(g, &mut out);
    }
    out.push_str("-----------------------------\n\n\n");
    out
}

/// `-vv`: the lists each option was split into, as Slurm's squeue prints them.
fn lists(g: &Given, out: &mut String) {
    use std::fmt::Write;
    for (i, (job, task)) in g.job_ids.iter().enumerate() {
        let _ = match task {
            Some(t) => writeln!(out, "job_list[{i}] = {job}_{t}"),
            None => writeln!(out, "job_list[{i}] = {job}"),
        };
    }
    // Slurm prints each name's first byte as a number (its `%u` of a signed `char`
    // through a `char *`).
    for (i, n) in pieces(&g.names).iter().enumerate() {
        let _ = writeln!(
            out,
            "name_list[{i}] = {}",
            n.as_bytes()[0] as i8 as i32 as u32
        );
    }
    for (i, l) in pieces(&g.licenses).iter().enumerate() {
        let _ = writeln!(out, "licenses_list[{i}] = {l}");
    }
    for (i, p) in pieces(&g.partitions).iter().enumerate() {
        let _ = writeln!(out, "part_list[{i}] = {p}");
    }
    let states = pieces(&g.states);
    if states.iter().any(|s| s.eq_ignore_ascii_case("all")) {
        out.push_str("state_list = all\n");
    } else {
        for (i, s) in states.iter().enumerate() {
            let name = match sluice_proto::types::JobState::parse(s) {
                Some(st) => st.name(),
                None if s.eq_ignore_ascii_case("CG") || s.eq_ignore_ascii_case("COMPLETING") => {
                    "COMPLETING"
                }
                None => super::squeue::other_slurm_state(s).unwrap_or_default(),
            };
            let _ = writeln!(out, "state_list[{i}] = {name}");
        }
    }
    for (i, s) in pieces(&g.steps).iter().enumerate() {
        let _ = writeln!(out, "step_list[{i}] = {s}");
    }
    for (i, u) in pieces(&g.users).iter().enumerate() {
        let uid = super::common::user_named(u).map_or(u.to_string(), |u| u.uid.to_string());
        let _ = writeln!(out, "user_list[{i}] = {uid}");
    }
}

/// The line `-v` prints before each listing: when the controller's answer was made
/// (seconds since the epoch) and how many records it held.
pub(crate) fn records_line(at: i64, records: usize) -> String {
    format!("last_update_time={at} records={records}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dump_has_slurms_lines_in_its_order_with_null_for_what_was_not_given() {
        let g = Given {
            format: Some("%i".into()),
            verbose: 1,
            ..Default::default()
        };
        let d = dump(&g);
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "-----------------------------");
        assert_eq!(lines[1], "all         = false");
        assert_eq!(lines[4], "format      = %i");
        assert_eq!(lines[7], "jobs        = (null)");
        assert_eq!(lines[11], "nodes       = ");
        assert_eq!(lines[15], "sibling      = false");
        assert_eq!(lines[22], "verbose     = 1");
        assert_eq!(lines[23], "-----------------------------");
        assert!(d.ends_with("-----------------------------\n\n\n"));
        assert_eq!(lines.len(), 26);
    }

    #[test]
    fn twice_verbose_adds_the_lists_the_options_were_split_into() {
        let g = Given {
            jobs: Some("012,13_2".into()),
            job_ids: vec![(12, None), (13, Some(2))],
            names: Some("abc".into()),
            states: Some("pd,r,cg,cf".into()),
            partitions: Some("debug".into()),
            verbose: 2,
            ..Default::default()
        };
        let d = dump(&g);
        assert!(d.contains("job_list[0] = 12\njob_list[1] = 13_2\n"), "{d}");
        assert!(d.contains("name_list[0] = 97\n"), "{d}");
        assert!(d.contains("part_list[0] = debug\n"), "{d}");
        assert!(
            d.contains(
                "state_list[0] = PENDING\nstate_list[1] = RUNNING\n\
                 state_list[2] = COMPLETING\nstate_list[3] = CONFIGURING\n"
            ),
            "{d}"
        );
        assert!(d.contains("jobs        = 012,13_2\n"), "{d}");
        let all = Given {
            states: Some("all".into()),
            verbose: 2,
            ..Default::default()
        };
        assert!(dump(&all).contains("state_list = all\n"));
    }
}
