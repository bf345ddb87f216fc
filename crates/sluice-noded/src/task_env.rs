//! A task's environment, made before the fork, that names the task's own process:
//! `SLURM_TASK_PID`, as slurmstepd sets it for a batch script and for each task of a
//! step.
//!
//! The pid is known only in the child, between fork and exec, where nothing may allocate
//! or take a lock. So the whole environment is laid out beforehand (each `NAME=VALUE` a
//! NUL-terminated buffer, and the NULL-terminated array of pointers to them), with room
//! for the pid's digits in the last entry; the child writes its pid there and points
//! `environ` at the array, and `execvp` hands that array to the program (and searches the
//! job's `PATH` in it, as a shell would). The command itself is left with the inherited
//! environment, so that the standard library passes `environ` on unchanged.

use std::ffi::c_char;

/// The variable the child fills in.
const PID_NAME: &[u8] = b"SLURM_TASK_PID=";
/// Room for a pid's digits: `pid_max` is at most 2^22 on Linux, but an `i32` has ten.
const PID_DIGITS: usize = 10;

extern "C" {
    /// The C library's process environment, read by `execvp` and `getenv`.
    static mut environ: *const *const c_char;
}

/// The environment of one task, ready to be installed in its child process.
pub(crate) struct TaskEnv {
    /// `NAME=VALUE\0`, each in a buffer that stays where it is while `pointers` points
    /// into it; the last one is `SLURM_TASK_PID=` with room for the digits.
    entries: Vec<Box<[u8]>>,
    /// One pointer per entry, then NULL.
    pointers: Vec<*const c_char>,
}

// SAFETY: the pointers point into `entries`' own heap buffers, which move with the value
// and are never shared: the value is only read (parent) or written (the forked child's
// own copy of memory).
unsafe impl Send for TaskEnv {}
// SAFETY: as above; `&TaskEnv` gives no way to write.
unsafe impl Sync for TaskEnv {}

impl TaskEnv {
    /// `env` (later entries win over earlier ones of the same name), with
    /// `SLURM_TASK_PID` added for the child to fill in. An entry that cannot be passed to
    /// a program (a name with `=` or a NUL, a value with a NUL, an empty name) is left
    /// out.
    pub(crate) fn new(env: &[(String, String)]) -> Self {
        let mut last: std::collections::BTreeMap<&str, &str> = Default::default();
        for (k, v) in env {
            last.insert(k.as_str(), v.as_str());
        }
        let mut entries: Vec<Box<[u8]>> = last
            .into_iter()
            .filter(|(k, v)| {
                !k.is_empty()
                    && !k.contains(['=', '\0'])
                    && !v.contains('\0')
                    && *k != "SLURM_TASK_PID"
            })
            .map(|(k, v)| {
                let mut b = Vec::with_capacity(k.len() + v.len() + 2);
                b.extend_from_slice(k.as_bytes());
                b.push(b'=');
                b.extend_from_slice(v.as_bytes());
                b.push(0);
                b.into_boxed_slice()
            })
            .collect();
        let mut slot = PID_NAME.to_vec();
        slot.extend_from_slice(&[0u8; PID_DIGITS + 1]);
        entries.push(slot.into_boxed_slice());
        let pointers = entries
            .iter()
            .map(|e| e.as_ptr().cast::<c_char>())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        TaskEnv { entries, pointers }
    }

    /// Writes `pid` into the last entry; allocates nothing.
    fn write_pid(&mut self, pid: i32) {
        let Some(slot) = self.entries.last_mut() else {
            return;
        };
        let digits = &mut slot[PID_NAME.len()..];
        let mut n = pid.unsigned_abs();
        let mut buf = [0u8; PID_DIGITS];
        let mut len = 0;
        loop {
            buf[len] = b'0' + (n % 10) as u8;
            n /= 10;
            len += 1;
            if n == 0 || len == PID_DIGITS {
                break;
            }
        }
        for i in 0..len {
            digits[i] = buf[len - 1 - i];
        }
        digits[len] = 0;
    }

    /// In the child, between fork and exec: fills in the child's pid and makes this the
    /// process's environment. Only async-signal-safe work: `getpid`, writes into memory
    /// allocated before the fork, and one pointer store.
    ///
    /// # Safety
    /// Only in a child process of a fork, before it execs: it replaces the environment
    /// every thread of the process reads.
    pub(crate) unsafe fn install(&mut self) {
        self.write_pid(nix::unistd::getpid().as_raw());
        // SAFETY: the forked child has one thread; `pointers` outlives the exec that
        // reads it (the closure owning `self` lives until then).
        unsafe {
            environ = self.pointers.as_ptr();
        }
    }

    /// The entries as text, for tests.
    #[cfg(test)]
    fn lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| {
                let end = e.iter().position(|&b| b == 0).unwrap_or(e.len());
                String::from_utf8_lossy(&e[..end]).into_owned()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_last_value_of_a_name_wins_and_what_cannot_be_passed_is_left_out() {
        let mut env = TaskEnv::new(&pairs(&[
            ("A", "1"),
            ("B", "x"),
            ("A", "2"),
            ("BAD=NAME", "v"),
            ("", "v"),
            ("NUL", "a\0b"),
            ("SLURM_TASK_PID", "999"),
        ]));
        env.write_pid(4_194_304);
        assert_eq!(
            env.lines(),
            ["A=2", "B=x", "SLURM_TASK_PID=4194304"],
            "sorted by name, the pid last"
        );
        env.write_pid(7);
        assert_eq!(env.lines().last().unwrap(), "SLURM_TASK_PID=7");
        assert_eq!(env.pointers.len(), 4, "NULL-terminated");
        assert!(env.pointers[3].is_null());
    }

    #[test]
    fn the_child_sees_exactly_the_environment_with_its_own_pid() {
        let mut task = TaskEnv::new(&pairs(&[
            ("PATH", "/usr/bin:/bin"),
            ("GREETING", "hello world"),
        ]));
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "echo $$; env | sort"]);
        // SAFETY: `install` is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                task.install();
                Ok(())
            });
        }
        let out = cmd.output().expect("sh runs");
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let pid = lines.next().unwrap().to_string();
        // What the shell adds of its own is not the task's environment.
        let vars: Vec<&str> = lines
            .filter(|l| {
                !["PWD=", "SHLVL=", "OLDPWD=", "_="]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        let expected_pid = format!("SLURM_TASK_PID={pid}");
        assert_eq!(
            vars,
            [
                "GREETING=hello world",
                "PATH=/usr/bin:/bin",
                expected_pid.as_str()
            ]
        );
        assert!(
            std::env::var("GREETING").is_err(),
            "the parent's environment is untouched"
        );
    }
}
