//! The seeds' job script on hosts of their own: submitted on `node01` by an
//! unprivileged user, its 16 ranks (8 per node on two nodes) really meet over the lab's
//! network at the rendezvous endpoint the script names,
//! `$(scontrol show hostnames | head -1):29500`.
//!
//! The script is the seeds' verbatim but for one thing: `python -m
//! torch.distributed.run` (torchrun, not installed here) is replaced by
//! `python3 /home/lab/torchrun.py`, a stand-in taking the same arguments. As torchrun's
//! c10d rendezvous, rank 0 listens on the endpoint; every other rank connects to it
//! and sends its rank and host, and rank 0 answers each with the world once all have
//! come. Each srun task is one rank (`SLURM_PROCID` of `SLURM_NTASKS`): the seeds'
//! `--nproc-per-node=8` under 8 tasks per node would start 8 workers per task.

use std::time::Duration;

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, job_ended, lay_out, read, seed, start_cluster, submit, Daemons, WORK,
};

/// The stand-in for `python -m torch.distributed.run ... train.py`: a rendezvous of
/// every rank at `--rdzv-endpoint`.
const TORCHRUN: &str = r#"
import os, socket, sys, time
endpoint = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--rdzv-endpoint="))
host, port = endpoint.rsplit(":", 1)
port = int(port)
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
me = socket.gethostname()
if rank == 0:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, port))
    server.listen(world)
    met, peers = {0: (me, "-")}, []
    while len(met) < world:
        conn, (addr, _) = server.accept()
        r, h = conn.makefile().readline().split()
        met[int(r)] = (h, addr)
        peers.append(conn)
    for conn in peers:
        conn.sendall(("%d\n" % world).encode())
        conn.close()
    print("rank 0 on %s: listening on %s, all %d ranks met: %s" % (
        me, endpoint, world,
        " ".join("%d@%s/%s" % (r, met[r][0], met[r][1]) for r in sorted(met))), flush=True)
else:
    deadline = time.time() + 60
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    conn.sendall(("%d %s\n" % (rank, me)).encode())
    world_seen = int(conn.makefile().readline())
    print("rank %d on %s: met rank 0 at %s, world %d" % (rank, me, endpoint, world_seen), flush=True)
"#;

#[test]
fn the_seeds_job_script_meets_its_sixteen_ranks_over_the_network() {
    let Some(h) = Hosts::up_or_skip(
        "the_seeds_job_script_meets_its_sixteen_ranks_over_the_network",
        &["head01", "node01", "node02"],
    ) else {
        return;
    };
    // node03 (in the seeds' train partition) has no host here: the job gets
    // node[01-02], and node01, its first, is the rendezvous host.
    lay_out(&h, "");
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node02"]);

    let script = seed("seed-job.sh");
    assert!(script.contains("srun python -m torch.distributed.run \\\n"));
    let script = script.replace(
        "python -m torch.distributed.run",
        "python3 /home/lab/torchrun.py",
    );
    let work = here(&h, WORK);
    std::fs::write(work.join("job.sh"), script).unwrap();
    std::fs::write(work.join("torchrun.py"), TORCHRUN).unwrap();
    // The output directory the script names, as its user would have it.
    std::fs::create_dir_all(work.join("logs")).unwrap();
    nix::unistd::chown(
        &work.join("logs"),
        Some(nix::unistd::Uid::from_raw(65534)),
        Some(nix::unistd::Gid::from_raw(65534)),
    )
    .unwrap();

    let job = submit(&h, "node01", "job.sh");
    let state = job_ended(&h, job, Duration::from_secs(90));
    let out = read(&work.join(format!("logs/{job}.out")));
    assert_eq!(state, "COMPLETED|0:0", "{out}");

    // Every rank met rank 0 on node01's address; rank 0 heard each from its own host's
    // address (the ones on node01 from node01's own).
    let (a1, a2) = (h.address("node01"), h.address("node02"));
    let host = |rank: u32| if rank < 8 { "node01" } else { "node02" };
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_by_key(|l| l.split(' ').nth(1).and_then(|r| r.parse::<u32>().ok()));
    let met: Vec<String> = (0..16)
        .map(|r| match r {
            0 => "0@node01/-".to_string(),
            r => format!("{r}@{}/{}", host(r), if r < 8 { a1 } else { a2 }),
        })
        .collect();
    let mut expected = vec![format!(
        "rank 0 on node01: listening on node01:29500, all 16 ranks met: {}",
        met.join(" ")
    )];
    expected.extend((1..16).map(|r| {
        format!(
            "rank {r} on {}: met rank 0 at node01:29500, world 16",
            host(r)
        )
    }));
    assert_eq!(lines, expected, "{out}");

    let o = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-P",
            "-o",
            "JobID,JobName,User,Partition,AllocCPUS,NodeList,State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "JobID|JobName|User|Partition|AllocCPUS|NodeList|State|ExitCode\n\
             {job}|qwen-finetune|nobody|train|16|node[01-02]|COMPLETED|0:0\n\
             {job}.batch|batch|||8|node01|COMPLETED|0:0\n\
             {job}.0|python3|||16|node[01-02]|COMPLETED|0:0\n"
        ),
        "{}",
        o.stderr
    );
    drop(daemons);
    h.down().unwrap();
}
