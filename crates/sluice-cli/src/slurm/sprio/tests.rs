//! `sprio` prints exactly what real Slurm 22.05 printed for the same factors
//! (`tests/samples/sprio/`, whose README gives the set-up): every sample's command
//! is parsed and rendered from the factors `sprio -n` showed there.

use sluice_proto::priority::{Factor, JobPriority, PriorityReport, PriorityWeights, TresFactor};

use super::{parse, render};
use crate::slurm::sample_file::read_dir;

/// A factor from its normalized value and weight.
fn factor(normalized: f64, weight: u32) -> Factor {
    Factor {
        normalized,
        weighted: normalized * f64::from(weight),
    }
}

/// Memory of the sampled node, MiB: what makes sprio's unrounded priorities (`%y`)
/// come out as sampled, with 1024 MiB per CPU by default.
const NODE_MEM: f64 = 24_105.0;

/// The four pending jobs of the samples, with sprio -n's factors (the age is the same
/// 49 s of `PriorityMaxAge` one day for all of them).
fn sampled() -> PriorityReport {
    let weights = PriorityWeights {
        age: 1000,
        assoc: 500,
        fairshare: 10_000,
        job_size: 1000,
        partition: 1000,
        qos: 2000,
        tres: "CPU=100,Mem=10".into(),
    };
    let job = |id: u64, user: &str, priority, assoc, fs, size, qos, nice, cpu, mem| JobPriority {
        job_id: id,
        partition: "debug".into(),
        user: user.into(),
        uid: 0,
        account: String::new(),
        priority,
        site: 0,
        age: factor(49.0 / 86_400.0, 1000),
        assoc: factor(assoc, 500),
        fairshare: factor(fs, 10_000),
        job_size: factor(size, 1000),
        partition_factor: factor(1.0, 1000),
        qos: factor(qos, 2000),
        nice,
        tres: vec![
            TresFactor {
                name: "cpu".into(),
                factor: factor(cpu, 100),
            },
            TresFactor {
                name: "mem".into(),
                factor: factor(mem, 10),
            },
        ],
    };
    PriorityReport {
        multifactor: true,
        weights,
        jobs: vec![
            job(
                98,
                "alice",
                6425,
                0.25,
                0.25,
                0.75,
                1.0,
                0,
                0.5,
                1024.0 / NODE_MEM,
            ),
            job(
                99,
                "bob",
                12801,
                1.0,
                1.0,
                1.0,
                0.1,
                0,
                1.0,
                2048.0 / NODE_MEM,
            ),
            job(
                100,
                "bob",
                12200,
                1.0,
                1.0,
                0.75,
                0.0,
                100,
                0.5,
                100.0 / NODE_MEM,
            ),
            job(
                101,
                "alice",
                6800,
                0.0,
                0.5,
                0.75,
                0.0,
                0,
                0.5,
                1024.0 / NODE_MEM,
            ),
        ],
    }
}

/// A sample's command line as arguments (the capture lost the quotes around `-o`'s
/// format).
fn arguments(command: &str) -> Vec<String> {
    let rest = command.strip_prefix("sprio").unwrap().trim();
    if let Some(format) = rest.strip_prefix("-o ") {
        return vec!["-o".into(), format.into()];
    }
    rest.split_whitespace().map(str::to_string).collect()
}

#[test]
fn every_sample_is_printed_exactly() {
    let samples = read_dir("sprio", "sprio");
    assert!(samples.len() >= 14, "{} samples", samples.len());
    let report = sampled();
    for s in samples {
        let o = parse(arguments(&s.command)).unwrap();
        let (out, errors) = render(&o, &report);
        let stderr: String = errors
            .iter()
            .map(|e| format!("sprio: error: {e}\n"))
            .collect();
        assert_eq!(out, s.stdout, "stdout of {} ({})", s.name, s.command);
        assert_eq!(stderr, s.stderr, "stderr of {}", s.name);
        assert_eq!(s.code, 0);
    }
}

#[test]
fn an_empty_queue_prints_the_header_and_an_unknown_job_says_so() {
    let mut report = sampled();
    report.jobs.clear();
    let o = parse(vec!["-l".into()]).unwrap();
    assert_eq!(
        render(&o, &report).0,
        "          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  \
         FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE                 TRES\n"
    );
    let o = parse(vec!["-j".into(), "5".into()]).unwrap();
    assert_eq!(
        render(&o, &report).0,
        "Unable to find jobs matching user/id(s) specified\n"
    );
    assert_eq!(
        parse(vec!["-j".into(), "x".into()]).unwrap_err().stderr,
        "sprio: error: Invalid job id: x\n"
    );
    assert_eq!(
        parse(vec!["--bogus".into()]).unwrap_err().stderr,
        "sprio: unrecognized option '--bogus'\nTry \"sprio --help\" for more information\n"
    );
}

#[test]
fn columns_of_unweighted_factors_are_left_out_unless_long() {
    // The first real-Slurm sample (no QOS, association or TRES weights): sprio shows
    // SITE, AGE, FAIRSHARE, JOBSIZE and PARTITION only.
    let mut report = sampled();
    report.weights.assoc = 0;
    report.weights.qos = 0;
    report.weights.tres.clear();
    report.jobs.truncate(1);
    report.jobs[0].tres.clear();
    let o = parse(Vec::new()).unwrap();
    assert_eq!(
        render(&o, &report).0,
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION\n\
         \x20            98 debug           6425          0          1       2500        750       1000\n"
    );
}

#[test]
fn options_as_getopt_long_reads_them() {
    let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let o = parse(args("-lnh --use=alice,bob -j5,6 --part gpu -M c1")).unwrap();
    assert!(o.long && o.normalized && o.no_header && !o.help);
    assert_eq!(o.users, ["alice", "bob"]);
    assert_eq!(o.jobs, [5, 6]);
    assert_eq!(o.partitions, ["gpu"]);
    // --help ends the line, as sprio exits there; what came before is still checked.
    assert!(parse(args("--he --bogus")).unwrap().help);
    let hint = "Try \"sprio --help\" for more information\n";
    assert_eq!(
        parse(args("--bogus --help")).unwrap_err().stderr,
        format!("sprio: unrecognized option '--bogus'\n{hint}")
    );
    assert_eq!(
        parse(args("--u x")).unwrap_err().stderr,
        format!("sprio: option '--u' is ambiguous; possibilities: '--user' '--usage'\n{hint}")
    );
    // -j takes a value only when attached; without one, the first operand is its
    // list, and another operand is refused with sprio's usage on standard output.
    assert_eq!(parse(args("-j 7,8")).unwrap().jobs, [7, 8]);
    assert!(parse(args("-j")).unwrap().jobs.is_empty());
    let r = parse(args("-j 7 8")).unwrap_err();
    assert_eq!(r.stderr, "sprio: error: Unrecognized option: 8\n");
    assert!(r.stdout.starts_with("Usage: sprio [-j jid[s]]"));
    assert_eq!(r.code, 1);
}
