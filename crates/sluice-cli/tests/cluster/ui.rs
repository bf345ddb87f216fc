//! The web dashboard (`sluice ui`) in a real headless Chromium: what each page shows,
//! after the browser has run its script, against what the commands say; screenshots of
//! each page are kept in the target directory (`target/ui-screenshots/`).
//!
//! Needs `chromium` (Debian's package). Without it the test says it is skipped; with
//! `SLUICE_REQUIRE_CHROMIUM=1` (CI) it fails instead.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::harness::Cluster;

const GPUS: &str = "ClusterName=dash
SlurmctldHost=localhost
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=g[1-2] CPUs=8 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
NodeName=c1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=gpu Nodes=g[1-2] Default=YES MaxTime=1:00:00 State=UP
PartitionName=cpu Nodes=c1 MaxTime=1:00:00 State=UP
";

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// `sluice ui` for the cluster's user, stopped on drop; its printed address.
struct Dashboard {
    child: Child,
    url: String,
}

impl Dashboard {
    fn start(c: &Cluster) -> Dashboard {
        let bin = c.dir.join("state").join("bin");
        let mut child = Command::new(bin.join("sluice"))
            .args(["ui", "--listen", "127.0.0.1:0"])
            .env("SLUICE_STATE_DIR", c.dir.join("state"))
            .env_remove("SLURM_CONF")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sluice ui starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .last()
            .expect("an address")
            .to_string();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.contains("/ui?key="),
            "{line}"
        );
        Dashboard { child, url }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A headless Chromium with its own profile: the DOM of `url` once its script has run,
/// and a screenshot of it saved as `shot`.
struct Browser {
    bin: PathBuf,
    profile: PathBuf,
}

impl Browser {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--window-size=1280,800",
        ])
        .arg(format!("--user-data-dir={}", self.profile.display()))
        .stdin(Stdio::null());
        cmd
    }

    fn dom(&self, url: &str) -> String {
        let o = self
            .command()
            .arg("--dump-dom")
            .arg(url)
            .output()
            .expect("chromium runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn screenshot(&self, url: &str, shot: &Path) {
        let _ = std::fs::remove_file(shot);
        let o = self
            .command()
            .arg(format!("--screenshot={}", shot.display()))
            .arg(url)
            .output()
            .expect("chromium runs");
        assert!(
            shot.is_file(),
            "no screenshot {}: {}",
            shot.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The text between `<span id="ID">` and its `</span>`.
fn span(dom: &str, id: &str) -> String {
    let open = format!("<span id=\"{id}\">");
    let at = dom
        .find(&open)
        .unwrap_or_else(|| panic!("no #{id} in:\n{dom}"))
        + open.len();
    dom[at..].split("</span>").next().unwrap().to_string()
}

/// GPU indices as scontrol prints them: `0-2`, `0,3`.
fn indices(list: &str) -> Vec<u32> {
    list.split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().unwrap()..=b.parse().unwrap()).collect::<Vec<_>>(),
            None => vec![part.parse().unwrap()],
        })
        .collect()
}

/// The `data-job` ids of the queue table's rows, in order.
fn rows(dom: &str) -> Vec<String> {
    dom.match_indices("data-job=\"")
        .map(|(i, m)| dom[i + m.len()..].split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_dashboard_shows_the_queue_the_gpu_map_and_a_jobs_story_as_the_commands_do() {
    let Some(bin) = chromium() else {
        let why = "chromium is not installed (Debian: apt-get install chromium)";
        if std::env::var("SLUICE_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!("SLUICE_REQUIRE_CHROMIUM=1 but {why}");
        }
        eprintln!("skipped: {why}");
        return;
    };
    let c = Cluster::start("ui", GPUS);
    // g1: 3 of 4 GPUs held; g2: 2 of 4; a job waiting for 4 GPUs on one node, so the
    // three idle GPUs left are stranded; a CPU job runs, another waits behind it.
    let a = c.sbatch(&[
        "-J",
        "big",
        "-w",
        "g1",
        "--gres=gpu:3",
        "-t",
        "30",
        "--wrap",
        "sleep 300",
    ]);
    let b = c.sbatch(&[
        "-J",
        "pair",
        "-w",
        "g2",
        "--gres=gpu:2",
        "-t",
        "30",
        "--wrap",
        "sleep 300",
    ]);
    let cpu = c.sbatch(&[
        "-J",
        "cpu<b>",
        "-p",
        "cpu",
        "-c",
        "4",
        "-t",
        "30",
        "--wrap",
        "sleep 300",
    ]);
    for j in [a, b, cpu] {
        c.wait_for("it runs", || c.state(j) == "RUNNING");
    }
    let waits = c.sbatch(&["-J", "four", "--gres=gpu:4", "-t", "30", "--wrap", "true"]);
    let behind = c.sbatch(&[
        "-J", "next", "-p", "cpu", "-c", "4", "-t", "10", "--wrap", "true",
    ]);
    c.wait_for("the forecast", || {
        c.run("squeue", &["-h", "-j", &waits.to_string(), "-o", "%S"])
            .stdout
            .trim()
            != "N/A"
    });

    let ui = Dashboard::start(&c);
    let base = ui.url.split("/ui?").next().unwrap().to_string();
    let key = ui.url.split("key=").nth(1).unwrap().to_string();
    let browser = Browser {
        bin,
        profile: c.dir.join("chromium"),
    };
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let page = |path: &str| {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{base}{path}{sep}key={key}")
    };

    // Without the key: refused.
    let refused = browser.dom(&format!("{base}/ui"));
    assert!(refused.contains("Open the address that"), "{refused}");
    assert!(!refused.contains("data-job"));

    // The queue: what squeue lists, running first, then pending in forecast order.
    let dom = browser.dom(&page("/ui"));
    let squeue = |state: &str| {
        c.run("squeue", &["-h", "-t", state, "-o", "%i", "-S", "S"])
            .stdout
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(span(&dom, "running-count"), squeue("R").len().to_string());
    assert_eq!(span(&dom, "pending-count"), squeue("PD").len().to_string());
    let listed = rows(&dom);
    let mut running = squeue("R");
    running.sort();
    let mut shown_running = listed[..3].to_vec();
    shown_running.sort();
    assert_eq!(shown_running, running);
    assert_eq!(
        listed[3..],
        [waits.to_string(), behind.to_string()],
        "{dom}"
    );
    // Each pending job's reason as squeue says it, and its forecast start.
    let reason = c
        .run("squeue", &["-h", "-j", &waits.to_string(), "-o", "%r"])
        .stdout;
    assert!(
        dom.contains(&format!("<td>{}</td>", reason.trim())),
        "{dom}"
    );
    let start = c
        .run("squeue", &["-h", "-j", &waits.to_string(), "-o", "%S"])
        .stdout;
    assert!(
        dom.contains(start.trim()),
        "forecast {start} missing:\n{dom}"
    );
    // A name is text, never markup.
    assert!(dom.contains("cpu&lt;b&gt;"));
    browser.screenshot(&page("/ui"), &shots.join("queue.png"));

    // Filtered by partition: only the CPU jobs.
    let dom = browser.dom(&page("/ui?partition=cpu"));
    assert_eq!(rows(&dom), [cpu.to_string(), behind.to_string()]);

    // The GPU map: 8 GPUs, 5 held, 3 idle and all of them stranded (the waiting job
    // needs 4 on one node); which job holds which GPU, as scontrol says.
    let dom = browser.dom(&page("/ui/nodes"));
    assert_eq!(span(&dom, "gpus-total"), "8");
    assert_eq!(span(&dom, "gpus-held"), "5");
    assert_eq!(span(&dom, "gpus-idle"), "3");
    assert_eq!(span(&dom, "gpus-stranded"), "3");
    // squeue --json's `gres_detail`: `gpu:3(IDX:0-2)`.
    let json = c.run("squeue", &["--json", "-j", &a.to_string()]).stdout;
    let idx = json
        .split("(IDX:")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no GPU indices in:\n{json}"))
        .to_string();
    assert_eq!(indices(&idx).len(), 3, "{idx}");
    for i in indices(&idx) {
        assert!(
            dom.contains(&format!(
                "data-gpu=\"{i}\" data-state=\"held\" title=\"GPU {i}: job {a} of"
            )),
            "GPU {i} of g1 not shown as held by {a}:\n{dom}"
        );
    }
    browser.screenshot(&page("/ui/nodes"), &shots.join("nodes.png"));

    // A waiting job's page: its request and the explanation `sluice explain` gives.
    let dom = browser.dom(&page(&format!("/ui/job/{waits}")));
    assert!(
        dom.contains("<dt>GRES per node</dt><dd>gpu:4</dd>"),
        "{dom}"
    );
    let explain = c.run("sluice", &["explain", &waits.to_string()]).stdout;
    let first = explain.lines().next().unwrap();
    assert!(
        dom.contains(&first.replace('<', "&lt;").replace('>', "&gt;")),
        "{first}\n{dom}"
    );
    browser.screenshot(&page(&format!("/ui/job/{a}")), &shots.join("job.png"));

    // The fair-share tree, as sshare's.
    let dom = browser.dom(&page("/ui/shares"));
    let sshare = c.run("sshare", &["-a", "-P", "-n"]).stdout;
    let accounts = sshare
        .lines()
        .filter_map(|l| l.split('|').next())
        .map(str::trim);
    for account in accounts.filter(|a| !a.is_empty()) {
        assert!(
            dom.contains(&format!("data-account=\"{account}\"")),
            "{account}:\n{dom}"
        );
    }
    browser.screenshot(&page("/ui/shares"), &shots.join("shares.png"));

    // The last day: what is held and waiting now, as sinfo and squeue count it, and
    // a chart of 144 ten-minute bins for each.
    let dom = browser.dom(&page("/ui/history"));
    let alloc: u32 = c
        .run("sinfo", &["-h", "-N", "-o", "%C"])
        .stdout
        .lines()
        .map(|l| l.split('/').next().unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(span(&dom, "cpus-now"), alloc.to_string(), "{dom}");
    assert_eq!(span(&dom, "gpus-now"), "5");
    assert_eq!(span(&dom, "pending-now"), squeue("PD").len().to_string());
    for chart in ["cpu-chart", "gpu-chart", "queue-chart"] {
        assert!(
            dom.contains(&format!("id=\"{chart}\" data-points=\"144\"")),
            "{chart}:\n{dom}"
        );
    }
    browser.screenshot(&page("/ui/history"), &shots.join("history.png"));

    // Reservations, with the idle node-hours `sluice reservations` counts.
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now",
            "Duration=60",
            "Nodes=g2",
            "Users=root",
            "Flags=IGNORE_JOBS",
        ],
    );
    assert_eq!(o.code, 0, "{o:?}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let dom = browser.dom(&page("/ui/reservations"));
    let table = c.run("sluice", &["reservations"]).stdout;
    let line = table
        .lines()
        .find(|l| l.starts_with("maint"))
        .expect("maint listed");
    let reserved = line.split_whitespace().nth(2).unwrap();
    assert!(dom.contains("data-reservation=\"maint\""), "{dom}");
    assert!(
        dom.contains(&format!("<td class=\"num\">{reserved}</td>")),
        "{reserved}: {dom}"
    );
    browser.screenshot(&page("/ui/reservations"), &shots.join("reservations.png"));
}
