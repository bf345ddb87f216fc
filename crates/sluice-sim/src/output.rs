//! Per-job results as a TSV file: `id submit start finish run est procs`, header first,
//! rows sorted by id — the format of the reference results, so the two compare line by
//! line.

use std::io::Write;

use crate::fairshare::FairnessReport;
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

/// The header line of a per-user fairness file.
pub const FAIRNESS_HEADER: &str =
    "user\taccount\tjobs\tcpu_hours\tusage_share\tnorm_shares\tmean_wait_s\tfairshare";

/// Writes per-user fair-share figures (largest usage first) after the header.
pub fn write_fairness(mut w: impl Write, report: &FairnessReport) -> std::io::Result<()> {
    writeln!(w, "{FAIRNESS_HEADER}")?;
    for u in &report.users {
        writeln!(
            w,
            "{}\t{}\t{}\t{:.3}\t{:.6}\t{:.6}\t{:.1}\t{:.6}",
            u.user,
            u.account,
            u.jobs,
            u.cpu_hours,
            u.usage_share,
            u.norm_shares,
            u.mean_wait,
            u.fairshare
        )?;
    }
    w.flush()
}
