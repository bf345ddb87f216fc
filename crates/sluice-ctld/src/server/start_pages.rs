//! Letting go of the code pages that only starting the controller used.
//!
//! Starting reads slurm.conf, opens and checks the store, reads every saved job, builds
//! the REST, metrics and dashboard routes: code that runs once. The kernel maps a
//! program's code into the process in windows around each page that runs (fault-around),
//! so once started the controller had some 14 MiB of the `sluice` file mapped that its
//! loop never runs again, counted in its resident memory as `ps` shows it.
//!
//! Once started, the controller asks the kernel to unmap the pages of its read-only
//! file mappings (`madvise(MADV_DONTNEED)`): its code, its read-only data, the shared
//! libraries'. Those pages are clean copies of the file and stay in the page cache;
//! what the loop runs afterwards is mapped again on its first use, from memory. Like
//! the kernel freeing its own start-up code, it is done once.
//!
//! Only mappings that hold no page of the process's own are touched (`Anonymous: 0` in
//! `/proc/self/smaps`, not writable): for a private mapping, dropping a page the
//! process wrote (relocated data) would lose the write, so such mappings are left.

/// Unmaps the clean pages of the process's read-only file mappings; returns how many
/// bytes of mappings were advised. Linux only; elsewhere nothing.
pub fn let_go() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return 0;
        };
        let mut advised = 0;
        for m in clean_read_only(&smaps) {
            // SAFETY: the range is a whole mapping of this process, read-only and
            // file-backed, holding no page that differs from the file: dropping its
            // pages loses nothing; the next access maps them again from the file.
            let r = unsafe {
                libc::madvise(
                    m.start as *mut libc::c_void,
                    (m.end - m.start) as usize,
                    libc::MADV_DONTNEED,
                )
            };
            if r == 0 {
                advised += m.end - m.start;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// One mapping of `/proc/PID/smaps`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
}

/// The mappings of `smaps` whose pages may be dropped: private, not writable, of a
/// file, with no anonymous (copied-on-write) page.
fn clean_read_only(smaps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    // The mapping being read: its range, whether its first line qualifies it, and
    // whether its `Anonymous:` line said 0 (no line, no proof: left).
    let mut current: Option<(Mapping, bool, bool)> = None;
    let finish = |current: Option<(Mapping, bool, bool)>, out: &mut Vec<Mapping>| {
        if let Some((m, true, true)) = current {
            out.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some((m, eligible)) = header(line) {
            finish(current.take(), &mut out);
            current = Some((m, eligible, false));
            continue;
        }
        if let (Some(rest), Some((_, _, clean))) =
            (line.strip_prefix("Anonymous:"), current.as_mut())
        {
            *clean = rest.split_whitespace().next() == Some("0");
        }
    }
    finish(current, &mut out);
    out
}

/// A mapping's first line (`START-END PERMS OFFSET DEV INODE [PATH]`): its range, and
/// whether it is a private read-only mapping of a file.
fn header(line: &str) -> Option<(Mapping, bool)> {
    let mut words = line.split_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let perms = words.next()?;
    if perms.len() != 4 {
        return None;
    }
    let _offset = words.next()?;
    let _dev = words.next()?;
    let inode: u64 = words.next()?.parse().ok()?;
    let path = words.next().unwrap_or("");
    let private_read_only = perms.starts_with('r')
        && perms.as_bytes()[1] == b'-'
        && perms.ends_with('p')
        && inode != 0
        && path.starts_with('/')
        && end > start;
    Some((Mapping { start, end }, private_read_only))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clean_private_read_only_file_mappings_are_let_go() {
        let smaps = "\
5555000-5556000 r--p 00000000 fd:01 42 /usr/bin/sluice
Size:                  4 kB
Anonymous:             0 kB
5556000-5600000 r-xp 00001000 fd:01 42 /usr/bin/sluice
Size:                680 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
5600000-5601000 r--p 000ab000 fd:01 42 /usr/bin/sluice
Anonymous:             4 kB
5601000-5602000 rw-p 000ac000 fd:01 42 /usr/bin/sluice
Anonymous:             4 kB
5700000-5800000 rw-p 00000000 00:00 0 [heap]
Anonymous:           512 kB
7f00000-7f01000 rw-s 00000000 fd:01 77 /var/lib/sluice/db-shm
Anonymous:             0 kB
7f10000-7f20000 r-xp 00000000 fd:01 90 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7ffd000-7ffe000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
";
        assert_eq!(
            clean_read_only(smaps),
            vec![
                Mapping {
                    start: 0x5555000,
                    end: 0x5556000
                },
                Mapping {
                    start: 0x5556000,
                    end: 0x5600000
                },
                Mapping {
                    start: 0x7f10000,
                    end: 0x7f20000
                },
            ],
            "the relocated read-only data (written once: anonymous pages), the data, the \
             heap, the shared database file and the vdso are left"
        );
    }

    #[test]
    fn a_mapping_is_let_go_only_when_it_says_it_holds_no_page_of_its_own() {
        let code = "1000-2000 r-xp 0 fd:01 5 /bin/x\n";
        assert_eq!(clean_read_only(&format!("{code}Anonymous: 8 kB\n")), vec![]);
        assert_eq!(clean_read_only(code), vec![], "no Anonymous line");
        assert_eq!(
            clean_read_only(&format!("{code}Anonymous: 0 kB\n")),
            vec![Mapping {
                start: 0x1000,
                end: 0x2000
            }]
        );
        assert_eq!(clean_read_only("not a mapping\n"), vec![]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn letting_go_keeps_the_code_running() {
        // The test binary's own code is dropped and mapped again as it runs on.
        assert!(let_go() > 0);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(v.iter().sum::<u64>(), 5050);
        assert!(
            clean_read_only(&std::fs::read_to_string("/proc/self/smaps").unwrap())
                .iter()
                .any(|m| m.end > m.start)
        );
    }
}
