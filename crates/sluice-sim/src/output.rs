//! Per-job results as a TSV file: `id submit start finish run est procs`, header first,
//! rows sorted by id — the format of the reference results, so the two compare line by
//! line.

use std::io::Write;

use crate::replay::JobRecord;

/// The header line of a per-job file.
pub const JOBS_HEADER: &str = "id\tsubmit\tstart\tfinish\trun\test\tprocs";

/// Writes per-job rows, sorted by id, after the header.
pub fn write_jobs(mut w: impl Write, records: &[JobRecord]) -> std::io::Result<()> {
    let mut sorted: Vec<&JobRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.id);
    writeln!(w, "{JOBS_HEADER}")?;
    for r in sorted {
        writeln!(
            w,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.id, r.submit, r.start, r.finish, r.run, r.est, r.procs
        )?;
    }
    w.flush()
}
