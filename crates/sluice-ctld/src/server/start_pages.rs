//! Letting go of the code pages that only starting the controller used.
//!
//! Starting reads slurm.conf, opens and checks the store, reads every saved job, builds
//! the REST, metrics and dashboard routes: code that runs once. The kernel maps a
//! program's code into the process in windows around each page that runs (fault-around),
//! so once started the controller had some 14 MiB of the `sluice` file mapped that its
//! loop never runs again, counted in its resident memory as `ps` shows it.
//!
//! Once started, the controller asks the kernel to drop the pages of its read-only
//! file mappings from its page tables (`madvise(MADV_DONTNEED)`; the mappings stay):
//! its code, its read-only data, the shared libraries'. Those pages are clean copies
//! of the file and stay in the page cache; what the loop runs afterwards is mapped
//! again on its first use, from memory. Like the kernel freeing its own start-up
//! code, it is done once at start ([`Scope::All`]), and once more for the code of the
//! binary alone ([`Scope::Executable`]) when the agents it awaited have registered:
//! their registrations run code the idle loop does not either. Release builds lay the
//! idle loop's code out together (`sluice-cli/build.rs`), so that what is mapped again
//! is a few hundred kilobytes rather than windows all over the binary.
//!
//! Only mappings that hold no page of the process's own are touched (not writable,
//! `Anonymous: 0` and `Swap: 0` in `/proc/self/smaps`, neither locked nor of huge
//! pages): for a private mapping, dropping a page the process wrote (relocated data)
//! would lose the write, so such mappings are left. The file is read and the advice
//! given at once. At start, no other thread of the controller maps or unmaps files;
//! later, a library could be unloaded and its addresses reused between the reading and
//! the advice, so the second time only the executable's own mappings (matched by device
//! and inode), which stay as long as the process, are touched.

/// Which read-only file mappings [`let_go`] drops the pages of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// All of them: the binary's and the shared libraries' (at start only).
    All,
    /// The executable's own (the file this code is mapped from), which are never
    /// unmapped.
    Executable,
}

/// Drops the clean pages of the process's read-only file mappings in `scope` from its
/// page tables; returns how many bytes of mappings were advised. Linux only; elsewhere
/// nothing.
pub fn let_go(scope: Scope) -> u64 {
    #[cfg(target_os = "linux")]
    {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return 0;
        };
        // The executable is the file mapped where this very function's code lies: its
        // device and inode as `smaps` gives them (a `stat` of `/proc/self/exe` may give
        // others, on btrfs subvolumes or overlayfs).
        let only = match scope {
            Scope::All => None,
            Scope::Executable => {
                match file_at(&smaps, let_go as fn(Scope) -> u64 as usize as u64) {
                    Some(file) => Some(file),
                    None => return 0,
                }
            }
        };
        let mut advised = 0;
        for m in clean_read_only(&smaps, only) {
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

/// A file as a mapping's line names it: its device's numbers and its inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    major: u32,
    minor: u32,
    inode: u64,
}

/// The mappings of `smaps` whose pages may be dropped: private, not writable, of a
/// file (of file `only`, where given), with no anonymous (copied-on-write) page
/// resident or swapped out, neither locked nor of huge pages.
fn clean_read_only(smaps: &str, only: Option<FileId>) -> Vec<Mapping> {
    /// The mapping being read: its range, whether its first line qualifies it, and
    /// what its other lines proved so far (no line, no proof: left).
    struct Reading {
        mapping: Mapping,
        eligible: bool,
        no_anonymous: bool,
        no_swap: bool,
        plain_flags: bool,
    }
    let mut out = Vec::new();
    let mut current: Option<Reading> = None;
    let finish = |current: Option<Reading>, out: &mut Vec<Mapping>| {
        if let Some(r) = current {
            if r.eligible && r.no_anonymous && r.no_swap && r.plain_flags {
                out.push(r.mapping);
            }
        }
    };
    let zero = |rest: &str| rest.split_whitespace().next() == Some("0");
    for line in smaps.lines() {
        if let Some((mapping, eligible, file)) = header(line) {
            let eligible = eligible && only.is_none_or(|f| f == file);
            finish(current.take(), &mut out);
            current = Some(Reading {
                mapping,
                eligible,
                no_anonymous: false,
                no_swap: false,
                plain_flags: false,
            });
            continue;
        }
        let Some(r) = current.as_mut() else { continue };
        if let Some(rest) = line.strip_prefix("Anonymous:") {
            r.no_anonymous = zero(rest);
        } else if let Some(rest) = line.strip_prefix("Swap:") {
            // A copied page swapped out is counted here, not as anonymous.
            r.no_swap = zero(rest);
        } else if let Some(rest) = line.strip_prefix("VmFlags:") {
            // Locked (`lo`) or of huge pages (`ht`): left alone.
            r.plain_flags = !rest.split_whitespace().any(|f| f == "lo" || f == "ht");
        }
    }
    finish(current, &mut out);
    out
}

/// The file mapped at `address`, as `smaps` names it.
fn file_at(smaps: &str, address: u64) -> Option<FileId> {
    smaps
        .lines()
        .filter_map(header)
        .find(|(m, _, f)| m.start <= address && address < m.end && f.inode != 0)
        .map(|(_, _, file)| file)
}

/// A mapping's first line (`START-END PERMS OFFSET DEV INODE [PATH]`): its range,
/// whether it is a private read-only mapping of a file, and which file.
fn header(line: &str) -> Option<(Mapping, bool, FileId)> {
    let mut words = line.split_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let perms = words.next()?;
    if perms.len() != 4 {
        return None;
    }
    let _offset = words.next()?;
    let (major, minor) = words.next()?.split_once(':')?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    let inode: u64 = words.next()?.parse().ok()?;
    let path = words.next().unwrap_or("");
    let private_read_only = perms.starts_with('r')
        && perms.as_bytes()[1] == b'-'
        && perms.ends_with('p')
        && inode != 0
        && path.starts_with('/')
        && end > start;
    let file = FileId {
        major,
        minor,
        inode,
    };
    Some((Mapping { start, end }, private_read_only, file))
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
Swap:                  0 kB
VmFlags: rd mr mw me
5556000-5600000 r-xp 00001000 fd:01 42 /usr/bin/sluice
Size:                680 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
5600000-5601000 r--p 000ab000 fd:01 42 /usr/bin/sluice
Anonymous:             4 kB
Swap:                  0 kB
VmFlags: rd mr mw me ac
5601000-5602000 rw-p 000ac000 fd:01 42 /usr/bin/sluice
Anonymous:             4 kB
Swap:                  0 kB
VmFlags: rd wr mr mw me ac
5602000-5603000 r--p 000ad000 fd:01 42 /usr/bin/sluice
Anonymous:             0 kB
Swap:                  4 kB
VmFlags: rd mr mw me ac
5700000-5800000 rw-p 00000000 00:00 0 [heap]
Anonymous:           512 kB
Swap:                  0 kB
VmFlags: rd wr mr mw me ac
7f00000-7f01000 rw-s 00000000 fd:01 77 /var/lib/sluice/db-shm
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd wr sh mr mw me ms
7f10000-7f20000 r-xp 00000000 fd:01 90 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
7f30000-7f40000 r-xp 00000000 fd:01 91 /usr/lib/x86_64-linux-gnu/libm.so.6
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me lo
7ffd000-7ffe000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me de sd
";
        assert_eq!(
            clean_read_only(smaps, None),
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
            "the relocated read-only data (written once: anonymous pages, resident or \
             swapped out), the data, the heap, the shared database file, a locked \
             library and the vdso are left"
        );
    }

    #[test]
    fn a_mapping_is_let_go_only_when_it_says_it_holds_no_page_of_its_own() {
        let code = "1000-2000 r-xp 0 fd:01 5 /bin/x\n";
        let flags = "VmFlags: rd ex mr mw me\n";
        assert_eq!(
            clean_read_only_all(&format!("{code}Anonymous: 8 kB\nSwap: 0 kB\n{flags}")),
            vec![]
        );
        assert_eq!(clean_read_only_all(code), vec![], "no Anonymous line");
        assert_eq!(
            clean_read_only_all(&format!("{code}Anonymous: 0 kB\n{flags}")),
            vec![],
            "no Swap line"
        );
        assert_eq!(
            clean_read_only_all(&format!("{code}Anonymous: 0 kB\nSwap: 0 kB\n")),
            vec![],
            "no VmFlags line"
        );
        assert_eq!(
            clean_read_only_all(&format!("{code}Anonymous: 0 kB\nSwap: 0 kB\n{flags}")),
            vec![Mapping {
                start: 0x1000,
                end: 0x2000
            }]
        );
        assert_eq!(clean_read_only_all("not a mapping\n"), vec![]);
    }

    fn clean_read_only_all(smaps: &str) -> Vec<Mapping> {
        clean_read_only(smaps, None)
    }

    #[test]
    fn the_executable_alone_is_let_go_when_asked() {
        let smaps = "\
5556000-5600000 r-xp 00001000 fd:01 42 /usr/bin/sluice
Anonymous: 0 kB
Swap: 0 kB
VmFlags: rd ex mr mw me
5600000-5700000 r-xp 00001000 fd:02 42 /mnt/other
Anonymous: 0 kB
Swap: 0 kB
VmFlags: rd ex mr mw me
7f10000-7f20000 r-xp 00000000 fd:01 90 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous: 0 kB
Swap: 0 kB
VmFlags: rd ex mr mw me
";
        let sluice = FileId {
            major: 0xfd,
            minor: 1,
            inode: 42,
        };
        assert_eq!(
            clean_read_only(smaps, Some(sluice)),
            vec![Mapping {
                start: 0x5556000,
                end: 0x5600000
            }],
            "a file of the same inode on another device, and the library, are left"
        );
        assert_eq!(clean_read_only(smaps, None).len(), 3);
        assert_eq!(file_at(smaps, 0x5560000), Some(sluice));
        assert_eq!(file_at(smaps, 0x7f10000).map(|f| f.inode), Some(90));
        assert_eq!(file_at(smaps, 0x9000000), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn letting_go_keeps_the_code_running() {
        // The test binary's own code is dropped and mapped again as it runs on.
        assert!(
            let_go(Scope::Executable) > 0,
            "this binary's code, at least, qualifies"
        );
        assert!(let_go(Scope::All) > 0);
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(v.iter().sum::<u64>(), 5050);
    }
}
