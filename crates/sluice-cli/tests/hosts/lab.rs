//! The harness's own tests: what a lab of hosts is, and that it goes away completely.

use std::io::{BufRead, BufReader};
use std::panic::AssertUnwindSafe;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::harness::{can_make_hosts, script, Footprint, Hosts};

/// A TCP server on a host: answers every connection's first line with
/// `HOSTNAME heard LINE from ADDRESS`.
const SERVER: &str = r#"
import socket, sys
s = socket.create_server(("0.0.0.0", int(sys.argv[1])))
print("listening", flush=True)
while True:
    c, (addr, _) = s.accept()
    with c:
        line = c.makefile().readline().strip()
        c.sendall(f"{socket.gethostname()} heard {line} from {addr}\n".encode())
"#;

/// A TCP client: sends its hostname to HOST:PORT, prints the answer; fails (exit 1,
/// the error on stderr) if it cannot connect within TIMEOUT seconds.
const CLIENT: &str = r#"
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])) as c:
    c.sendall((socket.gethostname() + "\n").encode())
    print(c.makefile().readline().strip())
"#;

const PORT: &str = "7000";

/// A server running on a host; killed on drop.
struct Server(Child);

impl Server {
    fn start(h: &Hosts, host: &str) -> Server {
        let mut child = h
            .command(host, &["python3", "-c", SERVER, PORT])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "listening\n", "the server on {host} did not start");
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Connects from host `from` to host `to` (by name) within `timeout` seconds: the
/// server's answer, or the client's error.
fn talk(h: &Hosts, from: &str, to: &str, timeout: &str) -> Result<String, String> {
    let o = h.run(from, &["python3", "-c", CLIENT, to, PORT, timeout]);
    if o.code == 0 {
        Ok(o.stdout.trim().to_string())
    } else {
        Err(o.stderr.lines().last().unwrap_or_default().to_string())
    }
}

/// Tries [`talk`] again for up to 20 s until it succeeds.
fn talk_soon(h: &Hosts, from: &str, to: &str) -> Result<String, String> {
    let start = Instant::now();
    loop {
        let r = talk(h, from, to, "2");
        if r.is_ok() || start.elapsed() > Duration::from_secs(20) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Tears the lab down and checks that nothing of it is left on this machine.
fn torn_down(h: Hosts) {
    let footprint = h.footprint();
    h.down().expect("the lab tears down");
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
}

/// Pids of processes on this machine whose command line contains `word`.
fn pids_with(word: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if cmdline.split(|b| *b == 0).any(|a| a == word.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn hosts_know_each_other_by_name_and_reach_nothing_else() {
    let Some(h) = Hosts::up_or_skip("hosts_know_each_other_by_name", &["head01", "node[01-02]"])
    else {
        return;
    };
    assert_eq!(h.names(), ["head01", "node01", "node02"]);
    let id = h.id();
    for (n, host) in h.names().into_iter().enumerate() {
        let addr = h.address(host);
        assert_eq!(addr.to_string(), format!("10.213.{id}.{}", n + 1));
        assert_eq!(
            h.sh_ok(host, "hostname; uname -n"),
            format!("{host}\n{host}\n")
        );
        // Every host by name, from every host.
        for other in h.names() {
            assert_eq!(
                h.run(host, &["getent", "hosts", other]).stdout,
                format!("{:<15} {other}\n", h.address(other).to_string()),
                "{other} seen from {host}"
            );
        }
        // lo and eth0 with the host's one address; one route, to the lab's subnet.
        assert_eq!(
            h.sh_ok(
                host,
                "ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1"
            ),
            "lo\neth0\n"
        );
        assert_eq!(
            h.sh_ok(host, "ip -o -4 addr show dev eth0 | awk '{print $4}'"),
            format!("{addr}/24\n")
        );
        assert_eq!(
            h.sh_ok(host, "ip -4 route show"),
            format!("10.213.{id}.0/24 dev eth0 proto kernel scope link src {addr} \n")
        );
    }
    // Nothing outside the lab is reachable: there is no route, so nothing is even sent
    // (a documentation address, TEST-NET-2, stands for any).
    let out = talk(&h, "node01", "198.51.100.1", "2");
    assert!(
        out.as_ref().is_err_and(|e| e.contains("unreachable")),
        "{out:?}"
    );
    // The generated /etc/hosts cannot be changed from a host.
    let o = h.sh("node01", "echo 10.0.0.1 evil >> /etc/hosts");
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("Read-only"), "{}", o.stderr);
    torn_down(h);
}

#[test]
fn tcp_between_two_hosts() {
    let Some(h) = Hosts::up_or_skip("tcp_between_two_hosts", &["node01", "node02"]) else {
        return;
    };
    let server = Server::start(&h, "node02");
    // The server sees the client's own address: the traffic went over the lab's link.
    assert_eq!(
        talk(&h, "node01", "node02", "5"),
        Ok(format!("node02 heard node01 from {}", h.address("node01")))
    );
    assert_eq!(
        talk(&h, "node02", "node02", "5"),
        Ok(format!("node02 heard node02 from {}", h.address("node02")))
    );
    drop(server);
    torn_down(h);
}

#[test]
fn each_host_has_its_own_tmp_run_and_spool_and_all_share_home_and_binds() {
    if !can_make_hosts("each_host_has_its_own_tmp_run_and_spool") {
        return;
    }
    // A directory of this machine's, bound on every host (as a shared /etc/slurm would be).
    let shared = std::env::temp_dir().join(format!("sluice-hosts-bind-{}", std::process::id()));
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("slurm.conf"), "ClusterName=lab\n").unwrap();
    let bind = format!("{}:/mnt", shared.display());
    let h = Hosts::up(&["node01", "node02"], &["--bind", &bind]);
    let mark = format!("mark-{}", std::process::id());
    h.sh_ok(
        "node01",
        &format!(
            "for d in /tmp /var/tmp /run /dev/shm /var/spool /var/log; do echo node01 > $d/{mark}; done"
        ),
    );
    for d in [
        "/tmp",
        "/var/tmp",
        "/run",
        "/dev/shm",
        "/var/spool",
        "/var/log",
    ] {
        let path = format!("{d}/{mark}");
        assert_eq!(h.sh_ok("node01", &format!("cat {path}")), "node01\n");
        assert_ne!(
            h.run("node02", &["test", "-e", &path]).code,
            0,
            "{path} on node02"
        );
        assert!(
            !std::path::Path::new(&path).exists(),
            "{path} on this machine"
        );
    }
    // The spool is kept on this machine, in the host's own directory.
    assert_eq!(
        std::fs::read_to_string(h.spool("node01").join(&mark)).unwrap(),
        "node01\n"
    );
    assert!(!h.spool("node02").join(&mark).exists());
    // Home is one directory for all.
    h.sh_ok(
        "node01",
        &format!("mkdir -p /home/u && echo from-node01 > /home/u/{mark}"),
    );
    assert_eq!(
        h.sh_ok("node02", &format!("cat /home/u/{mark}")),
        "from-node01\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.home().join("u").join(&mark)).unwrap(),
        "from-node01\n"
    );
    // The bound directory too, both ways.
    assert_eq!(
        h.sh_ok("node02", "cat /mnt/slurm.conf"),
        "ClusterName=lab\n"
    );
    h.sh_ok("node02", "echo written-on-node02 > /mnt/out");
    assert_eq!(
        std::fs::read_to_string(shared.join("out")).unwrap(),
        "written-on-node02\n"
    );
    torn_down(h);
    std::fs::remove_dir_all(&shared).unwrap();
}

#[test]
fn commands_run_as_root_or_as_a_user_and_are_the_processes_they_start() {
    let Some(h) = Hosts::up_or_skip("commands_run_as_root_or_as_a_user", &["node01"]) else {
        return;
    };
    assert_eq!(h.sh_ok("node01", "id -u; pwd"), "0\n/\n");
    // A uid without a passwd entry: that uid and gid, no other group.
    let o = h.run_as(
        "node01",
        "54321:54322",
        &[
            "bash",
            "-c",
            "id -u; id -g; id -G; touch /tmp/f; stat -c %u:%g /tmp/f",
        ],
    );
    assert_eq!(
        (o.stdout.as_str(), o.code),
        ("54321\n54322\n54322\n54321:54322\n", 0),
        "{}",
        o.stderr
    );
    // A user by name: its ids, groups and environment.
    let o = h.run_as(
        "node01",
        "nobody",
        &["bash", "-c", "id -un; echo $USER $HOME"],
    );
    assert_eq!(o.stdout, "nobody\nnobody /nonexistent\n", "{}", o.stderr);
    // The command's exit status, output streams and input are its own.
    let o = h.sh("node01", "echo out; echo err >&2; exit 7");
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("out\n", "err\n", 7)
    );
    let mut cat = h
        .command("node01", &["cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        cat.stdin
            .take()
            .unwrap()
            .write_all(b"through stdin\n")
            .unwrap();
    }
    assert_eq!(
        String::from_utf8(cat.wait_with_output().unwrap().stdout).unwrap(),
        "through stdin\n"
    );
    // The spawned process is the program itself, on the host: killing it kills it.
    let word = format!("600.{}", std::process::id());
    let mut sleep = h
        .command_as("node01", "nobody", &["sleep", &word])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = sleep.id() as i32;
    let start = Instant::now();
    while !h.processes("node01").contains(&pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "pid {pid} on node01"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(pids_with(&word), [pid]);
    sleep.kill().unwrap();
    sleep.wait().unwrap();
    assert!(!h.processes("node01").contains(&pid));
    torn_down(h);
}

#[test]
fn a_cut_link_isolates_a_host_until_it_is_restored() {
    let Some(h) = Hosts::up_or_skip("a_cut_link_isolates_a_host", &["node[01-03]"]) else {
        return;
    };
    let _on2 = Server::start(&h, "node02");
    let _on3 = Server::start(&h, "node03");
    let heard = |by: &str, from: &str| Ok(format!("{by} heard {from} from {}", h.address(from)));
    assert_eq!(talk(&h, "node01", "node02", "5"), heard("node02", "node01"));

    h.cut("node02");
    // Nothing gets through, either way; the others still talk.
    assert!(talk(&h, "node01", "node02", "2").is_err());
    assert!(talk(&h, "node02", "node03", "2").is_err());
    assert_eq!(talk(&h, "node01", "node03", "5"), heard("node03", "node01"));
    // The host itself lives on: its server still runs there.
    assert_eq!(talk(&h, "node02", "node02", "5"), heard("node02", "node02"));

    h.restore("node02");
    assert_eq!(talk_soon(&h, "node01", "node02"), heard("node02", "node01"));
    assert_eq!(talk_soon(&h, "node02", "node03"), heard("node03", "node02"));
    torn_down(h);
}

#[test]
fn a_killed_host_loses_its_processes_and_link_and_starts_again_clean() {
    let Some(mut h) = Hosts::up_or_skip("a_killed_host", &["node01", "node02"]) else {
        return;
    };
    let word = format!("601.{}", std::process::id());
    // A daemon (its own session, no terminal, parent gone) and a server on node01.
    h.sh_ok(
        "node01",
        &format!("setsid sleep {word} </dev/null >/dev/null 2>&1 & echo kept > /var/spool/disk; echo lost > /tmp/ram"),
    );
    let mut server = Server::start(&h, "node01");
    assert!(talk(&h, "node02", "node01", "5").is_ok());
    assert_eq!(pids_with(&word).len(), 1);

    h.kill("node01");
    assert_eq!(pids_with(&word), Vec::<i32>::new());
    assert!(
        server.0.wait().unwrap().code().is_none(),
        "killed by a signal"
    );
    let o = h.run("node01", &["true"]);
    assert_eq!(o.code, 125, "{}", o.stderr);
    assert!(o.stderr.contains("not running"), "{}", o.stderr);
    assert!(talk(&h, "node02", "node01", "2").is_err());
    let status = script(&["-i", &h.id().to_string(), "status"]).stdout;
    assert!(
        status.contains(&format!("node01 {} killed", h.address("node01"))),
        "{status}"
    );

    h.start("node01");
    assert_eq!(
        h.sh_ok("node01", "hostname; cat /var/spool/disk"),
        "node01\nkept\n"
    );
    assert_ne!(h.run("node01", &["test", "-e", "/tmp/ram"]).code, 0);
    assert_eq!(h.processes("node01"), Vec::<i32>::new());
    let _server = Server::start(&h, "node01");
    assert_eq!(
        talk_soon(&h, "node02", "node01"),
        Ok(format!("node01 heard node02 from {}", h.address("node02")))
    );
    torn_down(h);
}

#[test]
fn a_panicking_test_leaves_nothing_behind() {
    if !can_make_hosts("a_panicking_test_leaves_nothing_behind") {
        return;
    }
    let seen = Mutex::new(None);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let h = Hosts::up(&["node01", "node02"], &[]);
        h.sh_ok(
            "node01",
            "setsid sleep 602 </dev/null >/dev/null 2>&1 & sleep 603 </dev/null >/dev/null 2>&1 &",
        );
        h.cut("node02");
        *seen.lock().unwrap() = Some(h.footprint());
        panic!("on purpose: the lab must go all the same");
    }));
    assert!(result.is_err());
    let footprint = seen.into_inner().unwrap().expect("the lab came up");
    assert!(!footprint.namespaces.is_empty());
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
}

#[test]
fn a_lab_whose_test_died_is_torn_down_and_a_second_up_refuses() {
    if !can_make_hosts("a_lab_whose_test_died_is_torn_down") {
        return;
    }
    // A stand-in for a test process that will die without tearing down.
    let mut owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid = owner.id().to_string();
    let o = script(&["-i", "auto", "up", "--owner", &pid, "node01", "node02"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let id: u32 = o.stdout.lines().next().unwrap()["instance ".len()..]
        .parse()
        .unwrap();
    let o = script(&[
        "-i",
        &id.to_string(),
        "exec",
        "node01",
        "bash",
        "-c",
        "setsid sleep 604 </dev/null >/dev/null 2>&1 &",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The instance is taken: a second up there refuses, and changes nothing.
    let o = script(&["-i", &id.to_string(), "up", "other"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("instance {id} is in use")),
        "{}",
        o.stderr
    );
    let o = script(&["-i", &id.to_string(), "exec", "node02", "hostname"]);
    assert_eq!(o.stdout, "node02\n", "{}", o.stderr);

    let footprint = Footprint::of(id);
    assert_eq!(footprint.namespaces.len(), 1 + 2 * 4, "{footprint:?}");
    assert!(!footprint.leftovers().is_empty());
    owner.kill().unwrap();
    owner.wait().unwrap();
    assert_eq!(
        footprint.wait_gone(Duration::from_secs(30)),
        Vec::<String>::new()
    );
}

#[test]
fn down_cleans_a_crashed_lab_and_a_failed_up_cleans_itself() {
    if !can_make_hosts("down_cleans_a_crashed_lab") {
        return;
    }
    // A lab brought up by hand (no owner), then "crashed": one holder killed outright,
    // a daemon left on the other host.
    let o = script(&["-i", "auto", "up", "node01", "node02"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let id = o.stdout.lines().next().unwrap()["instance ".len()..].to_string();
    let o = script(&[
        "-i",
        &id,
        "exec",
        "node02",
        "bash",
        "-c",
        "setsid sleep 605 </dev/null >/dev/null 2>&1 &",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let footprint = Footprint::of(id.parse().unwrap());
    let holder =
        std::fs::read_to_string(format!("/run/sluice-hosts/{id}/node/node01/pid")).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder.trim().parse().unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let o = script(&["-i", &id, "down"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
    // Down again: nothing to do, and fine.
    assert_eq!(script(&["-i", &id, "down"]).code, 0);

    // An up that fails half-way (the second mount point is missing on the hosts) tears
    // down what it had made.
    let missing = format!("/nonexistent-{}", std::process::id());
    let o = script(&[
        "-i",
        "auto",
        "up",
        "--bind",
        &format!("/:{missing}"),
        "node01",
        "node02",
    ]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("up failed; tearing down"), "{}", o.stderr);
    let id: u32 = o.stdout.lines().next().unwrap()["instance ".len()..]
        .parse()
        .unwrap();
    assert_eq!(Footprint::of(id).leftovers(), Vec::<String>::new());
    assert!(!std::path::Path::new(&missing).exists());
}
