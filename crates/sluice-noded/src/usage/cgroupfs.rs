//! What a step's cgroup says of all its processes together (`jobacct_gather/cgroup`):
//! its memory peak and current use, its CPU time and its I/O bytes, from cgroup v2's
//! `memory.peak`, `memory.current`, `cpu.stat`, `io.stat`, or v1's
//! `memory.max_usage_in_bytes`, `memory.usage_in_bytes`, `cpuacct.stat`,
//! `blkio.throttle.io_service_bytes`. Pure parsers, and one read of a directory.

use std::path::Path;

use crate::cgroup::Version;

/// A step's cgroup at one moment; `None` where a file is missing or unreadable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CgroupSample {
    /// Peak memory use, bytes.
    pub peak: Option<u64>,
    /// Memory used now, bytes.
    pub current: Option<u64>,
    /// User CPU, milliseconds.
    pub user_ms: Option<u64>,
    /// System CPU, milliseconds.
    pub system_ms: Option<u64>,
    /// Bytes read from block devices.
    pub read: Option<u64>,
    /// Bytes written to block devices.
    pub write: Option<u64>,
}

/// A file holding one number (`memory.peak`, `memory.current`, v1's
/// `memory.max_usage_in_bytes`).
pub fn parse_number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// `key value` lines (`cpu.stat`, `cpuacct.stat`): the value of `key`.
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(char::is_whitespace)?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// v2 `cpu.stat`: (user, system) milliseconds.
pub fn parse_cpu_stat(text: &str) -> Option<(u64, u64)> {
    Some((
        keyed(text, "user_usec")? / 1000,
        keyed(text, "system_usec")? / 1000,
    ))
}

/// v1 `cpuacct.stat` (`user`, `system` in clock ticks): (user, system) milliseconds.
pub fn parse_cpuacct_stat(text: &str, ticks_per_s: u64) -> Option<(u64, u64)> {
    let ms = |t: u64| t * 1000 / ticks_per_s.max(1);
    Some((ms(keyed(text, "user")?), ms(keyed(text, "system")?)))
}

/// v2 `io.stat` (`MAJ:MIN rbytes=N wbytes=N rios=N ...` per device): bytes read and
/// written over all devices.
pub fn parse_io_stat(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0u64, 0u64);
    for word in text.split_whitespace() {
        if let Some(v) = word.strip_prefix("rbytes=") {
            r += v.parse::<u64>().unwrap_or(0);
        } else if let Some(v) = word.strip_prefix("wbytes=") {
            w += v.parse::<u64>().unwrap_or(0);
        }
    }
    (r, w)
}

/// v1 `blkio.throttle.io_service_bytes` (`MAJ:MIN Read N`, `MAJ:MIN Write N`, ...):
/// bytes read and written over all devices.
pub fn parse_blkio_bytes(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0u64, 0u64);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [_, op, n] = f[..] {
            let n = n.parse::<u64>().unwrap_or(0);
            match op {
                "Read" => r += n,
                "Write" => w += n,
                _ => {}
            }
        }
    }
    (r, w)
}

/// Reads the cgroup in `dir`; `ticks_per_s` for v1's CPU figures.
pub fn read(dir: &Path, version: Version, ticks_per_s: u64) -> CgroupSample {
    let text = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    match version {
        Version::V2 => {
            let cpu = text("cpu.stat").and_then(|t| parse_cpu_stat(&t));
            let io = text("io.stat").map(|t| parse_io_stat(&t));
            CgroupSample {
                peak: text("memory.peak").and_then(|t| parse_number(&t)),
                current: text("memory.current").and_then(|t| parse_number(&t)),
                user_ms: cpu.map(|c| c.0),
                system_ms: cpu.map(|c| c.1),
                read: io.map(|i| i.0),
                write: io.map(|i| i.1),
            }
        }
        Version::V1 => {
            // The step's cgroup is a memory one; CPU and I/O figures are in other
            // hierarchies, read where the same directory holds them.
            let cpu = text("cpuacct.stat").and_then(|t| parse_cpuacct_stat(&t, ticks_per_s));
            let io = text("blkio.throttle.io_service_bytes").map(|t| parse_blkio_bytes(&t));
            CgroupSample {
                peak: text("memory.max_usage_in_bytes").and_then(|t| parse_number(&t)),
                current: text("memory.usage_in_bytes").and_then(|t| parse_number(&t)),
                user_ms: cpu.map(|c| c.0),
                system_ms: cpu.map(|c| c.1),
                read: io.map(|i| i.0),
                write: io.map(|i| i.1),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_files_are_read() {
        assert_eq!(parse_number("209715200\n"), Some(209_715_200));
        assert_eq!(parse_number("max\n"), None);
        let cpu = "usage_usec 2105123\nuser_usec 2000456\nsystem_usec 104667\n\
                   nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n";
        assert_eq!(parse_cpu_stat(cpu), Some((2000, 104)));
        assert_eq!(parse_cpu_stat("usage_usec 5\n"), None);
        let io = "8:0 rbytes=1048576 wbytes=4096 rios=3 wios=1 dbytes=0 dios=0\n\
                  259:0 rbytes=10 wbytes=20 rios=1 wios=1 dbytes=0 dios=0\n";
        assert_eq!(parse_io_stat(io), (1_048_586, 4116));
    }

    #[test]
    fn v1_files_are_read() {
        assert_eq!(
            parse_cpuacct_stat("user 250\nsystem 12\n", 100),
            Some((2500, 120))
        );
        let blkio = "8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:0 Async 0\n8:0 Total 12288\n\
                     8:16 Read 1\n8:16 Write 2\nTotal 12291\n";
        assert_eq!(parse_blkio_bytes(blkio), (4097, 8194));
    }

    #[test]
    fn a_directory_is_read_and_missing_files_are_none() {
        let dir = std::env::temp_dir().join(format!("sluice-cgfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("memory.peak"), "300\n").unwrap();
        std::fs::write(dir.join("cpu.stat"), "user_usec 5000\nsystem_usec 1000\n").unwrap();
        let s = read(&dir, Version::V2, 100);
        assert_eq!(
            s,
            CgroupSample {
                peak: Some(300),
                current: None,
                user_ms: Some(5),
                system_ms: Some(1),
                read: None,
                write: None,
            }
        );
        std::fs::write(dir.join("memory.max_usage_in_bytes"), "700\n").unwrap();
        assert_eq!(read(&dir, Version::V1, 100).peak, Some(700));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
