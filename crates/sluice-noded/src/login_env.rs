//! The user's login environment, for a batch job submitted with `--export=NONE`
//! (sbatch marks it `SLURM_GET_USER_ENV=1`), as Slurm 22.05's slurmd gets it: the
//! environment a login shell of the job's owner ends up with (`su - USER -c env`:
//! `HOME`, `USER`, `LOGNAME`, `SHELL`, `MAIL`, the login `PATH`, and whatever
//! `/etc/profile` and the user's profile export). The job's own variables go on top.
//!
//! The login shell is started the way `su -` starts it (a clean environment of those
//! few variables, `-l`, in the home directory), as the owner, in a session of its own,
//! and given [`TIMEOUT`] to answer, as slurmd gives `--get-user-env` 8 seconds.

use std::io::Read;
use std::process::Child;
#[cfg(test)]
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The variable sbatch sets with `--export=NONE`.
pub(crate) const ASK: &str = "SLURM_GET_USER_ENV";

/// How long the login shell may take (Slurm's default `--get-user-env` timeout).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(8);

/// Printed (NUL-terminated) before the environment: whatever a profile prints before
/// it is not taken for variables.
const MARK: &str = "SLUICE_LOGIN_ENVIRONMENT_FOLLOWS";

/// Whether a job's environment `env` asks for the login environment.
pub(crate) fn asked(env: &[(String, String)]) -> bool {
    env.iter().any(|(k, v)| k == ASK && v == "1")
}

/// The login shell to start for user `name` (home `home`, shell `shell`, `uid`):
/// (program, arguments, environment, working directory).
pub(crate) fn command(
    name: &str,
    uid: u32,
    home: &str,
    shell: &str,
) -> (String, Vec<String>, Vec<(String, String)>, String) {
    let shell = if shell.is_empty() { "/bin/sh" } else { shell };
    // login.defs' ENV_SUPATH and ENV_PATH, as su sets them before the profile runs.
    let path = if uid == 0 {
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    } else {
        "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
    };
    let env = [
        ("HOME", home.to_string()),
        ("SHELL", shell.to_string()),
        ("USER", name.to_string()),
        ("LOGNAME", name.to_string()),
        ("MAIL", format!("/var/mail/{name}")),
        ("PATH", path.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let script = format!("printf '%s\\0' {MARK}; exec /usr/bin/env -0");
    (
        shell.to_string(),
        vec!["-l".into(), "-c".into(), script],
        env,
        home.to_string(),
    )
}

/// Reads the login shell's answer (its standard output a pipe), waiting at most
/// `timeout`; ends its session's processes should it take longer.
///
/// Errors: it took too long, failed, or printed no environment.
pub(crate) fn collect(
    mut child: Child,
    timeout: Duration,
) -> Result<Vec<(String, String)>, String> {
    let mut out = child.stdout.take().ok_or("no output")?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                // Its own session: the profile's children go too.
                let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the login shell did not answer within {} s",
                    timeout.as_secs()
                ));
            }
        }
    };
    let bytes = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("the login shell failed ({status})"));
    }
    parse(&bytes).ok_or_else(|| "the login shell printed no environment".into())
}

/// The variables in `env -0`'s output after [`MARK`]; None without the mark.
fn parse(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    let text = String::from_utf8_lossy(bytes);
    let mut items = text.split('\0');
    items.find(|i| i.ends_with(MARK))?;
    Some(
        items
            .filter_map(|i| i.split_once('='))
            .filter(|(k, _)| !k.is_empty() && *k != "SLURM_TASK_PID")
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// Runs `program args` (`sh -c` text) and collects it: for the tests below.
#[cfg(test)]
fn run(
    program: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    collect(
        cmd.spawn().map_err(|e| e.to_string())?,
        Duration::from_secs(5),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_what_follows_the_mark_whatever_the_profile_printed() {
        let out = format!("Welcome!\nmotd{MARK}\0HOME=/home/a\0PS1=a=b\nc\0SLURM_TASK_PID=9\0");
        assert_eq!(
            parse(out.as_bytes()).unwrap(),
            vec![
                ("HOME".to_string(), "/home/a".to_string()),
                ("PS1".to_string(), "a=b\nc".to_string()),
            ]
        );
        assert_eq!(parse(b"HOME=/x\0"), None);
    }

    #[test]
    fn a_login_shell_gives_the_users_variables_and_its_profiles() {
        let dir = std::env::temp_dir().join(format!("sluice-login-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A profile that prints (as some do) and exports a variable of its own.
        std::fs::write(
            dir.join(".profile"),
            "echo hello from the profile\nexport FROM_PROFILE=yes\n",
        )
        .unwrap();
        let home = dir.display().to_string();
        let (program, args, env, cwd) = command("alice", 1000, &home, "/bin/sh");
        assert_eq!(cwd, home);
        let env = run(&program, &args, &env).unwrap();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HOME"), Some(home.as_str()));
        assert_eq!(get("USER"), Some("alice"));
        assert_eq!(get("LOGNAME"), Some("alice"));
        assert_eq!(get("SHELL"), Some("/bin/sh"));
        assert_eq!(get("MAIL"), Some("/var/mail/alice"));
        assert_eq!(get("FROM_PROFILE"), Some("yes"));
        assert!(get("PATH").is_some_and(|p| p.contains("/usr/bin")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_login_shell_that_hangs_is_given_up() {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", "sleep 30"])
            .stdout(Stdio::piped())
            .process_group(0);
        let e = collect(cmd.spawn().unwrap(), Duration::from_millis(200)).unwrap_err();
        assert_eq!(e, "the login shell did not answer within 0 s");
    }
}
