#!/usr/bin/env python3
"""The differential suite: every scenario in compat/scenarios/ against real Slurm and Sluice.

Both sides start from the same slurm.conf (compat/configs/, filled in below): real Slurm
through ../shared/tools/real-slurm (slurmctld, one slurmd per virtual node, slurmdbd),
Sluice through `sluice up --config`. Each scenario runs on both at once, in its own
working directory per side; the transcripts (stdout, stderr, exit status of each step)
are normalised for what legitimately differs and compared exactly.

Normalised (and nothing else):
  - job ids (100001 and up, FirstJobId): <J1>, <J2>, ... in order of first appearance;
  - timestamps (ISO, ctime-style, epoch seconds): <TIME>, <DATE>, <EPOCH>;
  - durations under ten minutes (run times, elapsed): <DUR>;
  - the side's working directory, state directory and this host's name;
  - `slurm X.Y.Z` versions.

Scenario format: see compat/README.md.

Usage: compat/run.py [--sluice BIN] [--work DIR] [SCENARIO-NAME-OR-PREFIX ...]
Prints one line per scenario (identical / deliberate / FAILING) and `N passed, M failed`
(a scenario that differs is run once more on both sides, and fails only if it differs
again: real Slurm's own accounting can race on a loaded machine);
exits 1 when a scenario fails, 2 when a side cannot start.
"""

import argparse
import difflib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_REAL_SLURM = os.path.join(os.path.dirname(ROOT), "shared", "tools", "real-slurm")
COMMAND_TIMEOUT = 120
WAIT_TIMEOUT = 90


class Scenario:
    """One scenario file: its header and its steps."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[: -len(".scn")]
        self.config = "base"
        self.steps = []  # (kind, text, capture, deliberate)
        with open(path) as f:
            lines = f.read().splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.strip() or line.startswith("#"):
                continue
            m = re.match(r"^config:\s*(\S+)\s*$", line)
            if m:
                self.config = m.group(1)
                continue
            deliberate = None
            m = re.search(r"\s+#\s*deliberate:\s*(\S+)\s*$", line)
            if m:
                deliberate = m.group(1)
                line = line[: m.start()]
            capture = None
            m = re.search(r"\s+=>\s*(\w+)\s*$", line)
            if m:
                capture = m.group(1)
                line = line[: m.start()]
            if line.startswith("$ "):
                text = line[2:]
                while i < len(lines) and (lines[i].startswith("> ") or lines[i] == ">"):
                    text += "\n" + lines[i][2:]
                    i += 1
                self.steps.append(("run", text, capture, deliberate))
            elif re.match(r"^(wait|wait-acct|sleep)\s", line) or line.strip() == "wait-idle":
                self.steps.append(("ctl", line.strip(), None, deliberate))
            else:
                raise SystemExit(f"{path}: cannot read line: {line}")


class Side:
    """One side of the comparison: how to start it and the environment of its commands."""

    def __init__(self, name, work):
        self.name = name
        self.work = work
        self.env = None

    def run(self, cmd, cwd, extra_env, timeout=COMMAND_TIMEOUT, stdin=None):
        env = dict(self.env)
        env.update(extra_env)
        try:
            p = subprocess.run(
                ["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, timeout=timeout,
                stdin=subprocess.DEVNULL if stdin is None else stdin,
            )
            return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), p.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace")
            return out, f"(timed out after {timeout} s)\n", 124


def without_sluice_commands(path):
    """PATH without the folders where Slurm's command names are links to a `sluice`
    binary (a cluster's `bin/`): real Slurm's side must run real Slurm's commands."""
    keep = []
    for d in path.split(os.pathsep):
        probe = os.path.join(d, "squeue")
        if os.path.islink(probe) and os.path.basename(os.path.realpath(probe)) == "sluice":
            continue
        keep.append(d)
    return os.pathsep.join(keep)


def base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SLUICE_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SACCT_"))}
    env["PATH"] = without_sluice_commands(env.get("PATH", "/usr/bin:/bin"))
    env["LC_ALL"] = "C"
    env["TZ"] = "UTC"
    return env


class Real(Side):
    def __init__(self, work, tool):
        super().__init__("real", work)
        self.tool = tool
        self.rs = os.path.join(work, "rs")

    def start(self, conf_dir):
        env = base_env()
        env["RS_ROOT"] = self.rs
        p = subprocess.run([self.tool, "start", conf_dir], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stdout.write(p.stdout + p.stderr)
            return False
        self.env = base_env()
        self.env["SLURM_CONF"] = os.path.join(conf_dir, "slurm.conf")
        return True

    def stop(self):
        env = base_env()
        env["RS_ROOT"] = self.rs
        subprocess.run([self.tool, "stop"], env=env, capture_output=True)


class Sluice(Side):
    def __init__(self, work, binary):
        super().__init__("sluice", work)
        self.binary = binary
        self.proc = None
        self.state = None

    def start(self, conf_dir, config):
        self.state = os.path.join(self.work, "sluice-state", config)
        shutil.rmtree(self.state, ignore_errors=True)
        os.makedirs(self.state)
        log = open(os.path.join(self.work, f"sluice-up-{config}.log"), "w")
        conf_dir = own_logs(conf_dir, os.path.join(self.state, "conf"), os.path.join(self.state, "logs"))
        self.proc = subprocess.Popen(
            [self.binary, "up", "--config", os.path.join(conf_dir, "slurm.conf"), "--state-dir", self.state],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=base_env(),
        )
        self.env = base_env()
        self.env["SLURM_CONF"] = os.path.join(conf_dir, "slurm.conf")
        self.env["SLUICE_STATE_DIR"] = self.state
        self.env["PATH"] = os.path.join(self.state, "bin") + ":" + self.env["PATH"]
        for _ in range(240):
            if self.proc.poll() is not None:
                return False
            out, _, rc = self.run("sinfo -h -N -o %t", "/", {}, timeout=10)
            states = out.split()
            if rc == 0 and states and all(s == "idle" for s in states):
                time.sleep(2)
                return True
            time.sleep(0.5)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def fill(template, host, rs, extra="", gres=""):
    return (template.replace("{HOST}", host).replace("{RS}", rs)
            .replace("{EXTRA}", extra).replace("{GRES}", gres))


def write_config(work, config, host, rs):
    """Writes config `config` (compat/configs/<config>.conf over base.conf) to a directory
    both sides read; returns the directory."""
    conf_dir = os.path.join(work, "conf", config)
    os.makedirs(conf_dir, exist_ok=True)
    extra, gres, gres_conf, parts = "", "", None, ""
    if config != "base":
        # A config is base.conf plus `EXTRA:`, `GRES:`, `NODE:`, `PART:` and `gres.conf:`
        # lines (`GRES:` and `NODE:` both go on the node line; `PART:` lines, more
        # partitions, after base.conf's).
        with open(os.path.join(HERE, "configs", config + ".conf")) as f:
            for line in f.read().splitlines():
                if line.startswith("EXTRA: "):
                    extra += line[len("EXTRA: "):] + "\n"
                elif line.startswith(("GRES: ", "NODE: ")):
                    gres = (gres + " " + line[len("GRES: "):]).strip()
                elif line.startswith("PART: "):
                    parts += line[len("PART: "):] + "\n"
                elif line.startswith("gres.conf: "):
                    gres_conf = (gres_conf or "") + line[len("gres.conf: "):] + "\n"
    with open(os.path.join(HERE, "configs", "base.conf")) as f:
        conf = fill(f.read(), host, rs, extra.rstrip("\n"), gres) + parts
    with open(os.path.join(conf_dir, "slurm.conf"), "w") as f:
        f.write(conf)
    gres_path = os.path.join(conf_dir, "gres.conf")
    if gres_conf is not None:
        os.makedirs(os.path.join(rs, "dev"), exist_ok=True)
        for i in range(8):
            dev = os.path.join(rs, "dev", f"nvidia{i}")
            if not os.path.lexists(dev):
                os.symlink("/dev/null", dev)
        with open(gres_path, "w") as f:
            f.write(fill(gres_conf, host, rs))
    elif os.path.exists(gres_path):
        os.remove(gres_path)
    with open(os.path.join(HERE, "configs", "slurmdbd.conf")) as f:
        dbd = fill(f.read(), host, rs)
    dbd_path = os.path.join(conf_dir, "slurmdbd.conf")
    with open(dbd_path, "w") as f:
        f.write(dbd)
    os.chmod(dbd_path, 0o600)
    return conf_dir


def own_logs(conf_dir, into, logs):
    """A copy of `conf_dir` (slurm.conf, gres.conf) in `into` whose daemons' log files are
    under `logs`: both sides read one slurm.conf, and Sluice's daemons honour its
    `SlurmctldLogFile`/`SlurmdLogFile`, which must stay real Slurm's own. Returns `into`."""
    os.makedirs(into, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    for name in ("slurm.conf", "gres.conf"):
        path = os.path.join(conf_dir, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        if name == "slurm.conf":
            text = re.sub(r"(?im)^SlurmctldLogFile=.*$", "SlurmctldLogFile=" + os.path.join(logs, "slurmctld.log"), text)
            text = re.sub(r"(?im)^SlurmdLogFile=.*$", "SlurmdLogFile=" + os.path.join(logs, "slurmd-%n.log"), text)
        with open(os.path.join(into, name), "w") as f:
            f.write(text)
    return into


def job_argument(var, env):
    """The job a wait names: a variable (`J1`), or text using variables (`${J1}_2`)."""
    if re.fullmatch(r"\w+", var):
        return env.get(var, var)
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), var)


def control_step(side, text, cwd, env):
    """`wait JOB STATES`, `wait-acct JOB STATES`, `wait-idle`, `sleep SECONDS`: returns a
    transcript line.

    `wait-acct` waits for the job's settled accounting record: every line `sacct -X`
    shows in one of STATES, none under the name `allocation`, which slurmdbd shows
    for a few seconds after a job ends, until the job's own record reaches it."""
    words = text.split()
    if words[0] == "sleep":
        time.sleep(float(words[1]))
        return ""
    if words[0] == "wait-idle":
        return "" if wait_idle(side, cwd, env) else "(wait timed out: the nodes are not idle)\n"
    var, states = words[1], set(words[2].split(","))
    job = job_argument(var, env)
    if words[0] == "wait":
        cmd = f"squeue -h -t all -j {job} -o %T"
    else:
        cmd = f"sacct -n -X -P -o State,JobName -j {job}"
    seen = ""
    deadline = time.time() + WAIT_TIMEOUT
    while time.time() < deadline:
        out, _, _ = side.run(cmd, cwd, env, timeout=20)
        lines = [s.split("|") for s in out.split("\n") if s.strip()]
        seen = " ".join(s[0].split(" ")[0] for s in lines)
        settled = all(len(s) < 2 or s[1] != "allocation" for s in lines)
        if seen and settled and all(s in states for s in seen.split()):
            return ""
        time.sleep(0.3)
    return f"(wait timed out: {var} is '{seen}', not {words[2]})\n"


def wait_idle(side, cwd, env):
    """Waits until no job is left in the queue and every node is idle (a job that
    ended may still be completing on its node); True once they are."""
    for _ in range(120):
        out, _, _ = side.run("squeue -h -t PD,R,CG,S,CF -o %i; sinfo -h -N -o %t | grep -vx idle", cwd, env, timeout=20)
        if not out.strip():
            return True
        time.sleep(0.5)
    return False


def cleanup(side):
    """Cancels every job left and waits for the nodes to be idle again."""
    side.run("scancel -u \"$(id -un)\"", "/", {}, timeout=30)
    wait_idle(side, "/", {})


def run_scenario(side, scn, results):
    cwd = os.path.join(side.work, "run", side.name, scn.name)
    shutil.rmtree(cwd, ignore_errors=True)
    os.makedirs(cwd)
    env = {}
    transcript = []
    for kind, text, capture, _ in scn.steps:
        if kind == "ctl":
            transcript.append((text, control_step(side, text, cwd, env)))
            continue
        out, err, rc = side.run(text, cwd, env)
        if capture:
            m = re.search(r"\d+", out)
            env[capture] = m.group(0) if m else "NONE"
        record = out
        if err:
            record += "--- stderr\n" + err
        record += f"--- exit {rc}\n"
        transcript.append(("$ " + text, record))
    cleanup(side)
    results[side.name] = (transcript, cwd)


def run_both(scn, sides):
    """Runs scenario `scn` on both sides at once: each side's transcript and directory."""
    results = {}
    threads = [threading.Thread(target=run_scenario, args=(side, scn, results)) for side in sides]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class Normaliser:
    def __init__(self, side, cwd):
        self.ids = {}
        self.subs = [(cwd, "<WORK>"), (side.work, "<STATE>")]
        self.host = socket.gethostname().split(".")[0]

    def __call__(self, text):
        for a, b in self.subs:
            text = text.replace(a, b)
        text = re.sub(r"\b1\d{9}\b", "<EPOCH>", text)

        def job(m):
            return self.ids.setdefault(m.group(0), f"<J{len(self.ids) + 1}>")

        text = re.sub(r"(?<![\d.])1\d{5}(?!\d)", job, text)
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "<TIME>", text)
        text = re.sub(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\b", "<DATE>", text)
        text = re.sub(r"(?<![\d:])00:0\d:\d\d(?![\d:])", "<DUR>", text)
        text = re.sub(r"(?<![\d:])\d:\d\d(?![\d:])", "<DUR>", text)
        text = re.sub(r"\bslurm(-wlm)? \d+\.\d+\.\d+\S*", "slurm <VERSION>", text)
        text = re.sub(r"AllocNode:Sid=\S+", "AllocNode:Sid=<HOST>:<SID>", text)
        text = re.sub(rf"\b{re.escape(self.host)}\b", "<HOST>", text)
        return text


def known_differences():
    try:
        with open(os.path.join(ROOT, "COMPATIBILITY.md")) as f:
            return set(re.findall(r"^### `([\w-]+)`", f.read(), re.M))
    except OSError:
        return set()


def compare(scn, results, sides, known):
    """Returns (verdict, detail lines)."""
    norm = {s.name: Normaliser(s, results[s.name][1]) for s in sides}
    verdict, detail, tags = "identical", [], []
    real_t, sluice_t = results["real"][0], results["sluice"][0]
    for step, (r, s) in enumerate(zip(real_t, sluice_t)):
        a = norm["real"](r[0] + "\n" + r[1])
        b = norm["sluice"](s[0] + "\n" + s[1])
        if a == b:
            continue
        tag = scn.steps[step][3]
        if tag and tag in known:
            tags.append(tag)
            if verdict == "identical":
                verdict = "deliberate"
            continue
        verdict = "FAILING"
        if tag:
            detail.append(f"    deliberate difference `{tag}` is not in COMPATIBILITY.md")
        detail.append(f"    step {step + 1}: {r[0].splitlines()[0]}")
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), "real Slurm", "Sluice", lineterm="", n=2):
            detail.append("      " + line)
    return verdict, detail, sorted(set(tags))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sluice", default=os.path.join(ROOT, "target", "release", "sluice"))
    ap.add_argument("--real-slurm", default=DEFAULT_REAL_SLURM)
    ap.add_argument("--work", default="/tmp/sluice-compat")
    ap.add_argument("--lock", default="/tmp/real-slurm.lock", help="held while real Slurm runs")
    ap.add_argument("only", nargs="*", help="scenario names or prefixes (default: all)")
    args = ap.parse_args()
    binary = os.path.abspath(args.sluice)
    if not os.access(binary, os.X_OK):
        print(f"compat: no sluice binary at {binary}", file=sys.stderr)
        return 2
    scen_dir = os.path.join(HERE, "scenarios")
    scenarios = [Scenario(os.path.join(scen_dir, f)) for f in sorted(os.listdir(scen_dir)) if f.endswith(".scn")]
    if args.only:
        scenarios = [s for s in scenarios if any(s.name.startswith(o) for o in args.only)]
    # Runs sharing a work directory take turns for all of it: clearing it under another
    # run deletes that run's real Slurm state and configs while its daemons still run.
    work_lock = open(args.work.rstrip("/") + ".lock", "a")
    fcntl.flock(work_lock, fcntl.LOCK_EX)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "results"))
    host = socket.gethostname().split(".")[0]
    real, sluice = Real(args.work, args.real_slurm), Sluice(args.work, binary)
    known = known_differences()
    counts = {"identical": 0, "deliberate": 0, "FAILING": 0}
    started = time.time()
    configs = []
    for s in scenarios:
        if s.config not in configs:
            configs.append(s.config)
    for config in configs:
        lock = open(args.lock, "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            conf_dir = write_config(args.work, config, host, real.rs)
            t0 = time.time()
            # One more try: on a loaded machine slurmctld can miss real-slurm's start
            # deadline. A second failure is an error, never a skip.
            started_real = real.start(conf_dir)
            if not started_real:
                print(f"compat: real Slurm did not start with config {config}; trying once more", flush=True)
                real.stop()
                time.sleep(5)
                started_real = real.start(conf_dir)
            if not started_real:
                print(f"compat: ERROR: real Slurm did not start with config {config}", flush=True)
                real.stop()
                return 2
            if not sluice.start(conf_dir, config):
                print(f"compat: ERROR: sluice up did not start with config {config}; see {args.work}/sluice-up-{config}.log", flush=True)
                sluice.stop()
                real.stop()
                return 2
            print(f"== config {config}: both sides up in {time.time() - t0:.0f} s", flush=True)
            for scn in [s for s in scenarios if s.config == config]:
                results = run_both(scn, (real, sluice))
                verdict, detail, tags = compare(scn, results, (real, sluice), known)
                if verdict == "FAILING":
                    # Real Slurm's own accounting can race on a loaded machine (a step's
                    # usage not yet gathered): a difference must show twice to fail. The
                    # first run's difference is printed either way.
                    print(f"differed    {scn.name}: running it once more on both sides", flush=True)
                    for line in detail:
                        print(line, flush=True)
                    results = run_both(scn, (real, sluice))
                    verdict, detail, tags = compare(scn, results, (real, sluice), known)
                counts[verdict] += 1
                note = f" ({', '.join(tags)})" if tags else ""
                print(f"{verdict:<11} {scn.name}{note}", flush=True)
                for line in detail:
                    print(line, flush=True)
                for side in (real, sluice):
                    with open(os.path.join(args.work, "results", f"{scn.name}.{side.name}.txt"), "w") as f:
                        for cmd, rec in results[side.name][0]:
                            f.write(cmd + "\n" + rec)
        finally:
            sluice.stop()
            real.stop()
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
    passed = counts["identical"] + counts["deliberate"]
    print(f"\n{counts['identical']} identical, {counts['deliberate']} deliberately different, "
          f"{counts['FAILING']} failing ({time.time() - started:.0f} s)")
    print(f"{passed} passed, {counts['FAILING']} failed")
    return 1 if counts["FAILING"] else 0


if __name__ == "__main__":
    sys.exit(main())
