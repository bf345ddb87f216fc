//! Times as Slurm prints them, shared by the commands and the node agents.

/// Unix time `t` (seconds) broken down in the local time zone.
pub fn local(t: i64) -> libc::tm {
    // SAFETY: localtime_r writes into the struct we own and reads `t`; tm is plain data.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let tt: libc::time_t = t as libc::time_t;
        libc::localtime_r(&tt, &mut tm);
        tm
    }
}

/// Unix time `t` (seconds) as Slurm prints times: `2026-11-29T20:04:18`, local time.
pub fn timestamp(t: i64) -> String {
    let tm = local(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
