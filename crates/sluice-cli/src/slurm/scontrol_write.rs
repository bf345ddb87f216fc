//! `scontrol write batch_script JOBID [FILE]`: a batch job's script as submitted,
//! written to `slurm-JOBID.sh` (or `FILE`; `-` for standard output), as long as the
//! controller has the job. Slurm's words; where Slurm exits 0 although nothing was
//! written (an unknown job, no script, no job id), Sluice exits 1
//! (COMPATIBILITY.md, `write-batch-script-status`). `write config` is refused clearly.

use std::io::Write;

use sluice_proto::client::Client;
use sluice_proto::types::JobScript;

use super::common::describe;

/// Runs `scontrol write ARGS...` (`args`: the words after `write`); `quiet`: `-Q`,
/// which leaves out the line saying where the script went.
pub fn run(client: &Client, args: &[String], quiet: bool) -> i32 {
    let Some(what) = args.first() else {
        eprintln!("too few arguments for keyword:write");
        return 1;
    };
    let lower = what.to_ascii_lowercase();
    // As Slurm's prefix rule: `batch` at least, `config` whole.
    if lower.len() >= 5 && "batch_script".starts_with(&lower) {
        if args.len() > 3 {
            eprintln!("too many arguments for keyword:write");
            return 1;
        }
        let Some(job) = args.get(1) else {
            eprintln!("too few arguments for keyword:write");
            return 1;
        };
        return batch_script(client, job, args.get(2).map(String::as_str), quiet);
    }
    if lower == "config" {
        eprintln!("scontrol: error: write config is not supported by Sluice");
        return 1;
    }
    eprintln!("invalid write argument:{what}");
    1
}

/// The job a `JOBID[_TASK][.STEP]` word names, read as Slurm 22.05's scontrol reads it
/// (`atoll`): its leading number (an array task's script is its array's), 0 (no job)
/// for a word that does not start with one.
fn job_of(word: &str) -> u64 {
    let digits = word.len() - word.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    word[..digits].parse().unwrap_or(0)
}

/// Writes job `word`'s script to `file` (default `slurm-JOBID.sh`, `-` standard
/// output). The file is written only once the script is here: a refusal leaves what
/// was there.
fn batch_script(client: &Client, word: &str, file: Option<&str>, quiet: bool) -> i32 {
    let job = job_of(word);
    let script = match client.get::<JobScript>(&format!("/v1/jobs/{job}/script")) {
        Ok(s) => s.script,
        Err(e) => {
            eprintln!("job script retrieval failed: {}", describe(&e));
            return 1;
        }
    };
    let file = file.map_or_else(|| format!("slurm-{job}.sh"), str::to_string);
    if file == "-" {
        let mut out = std::io::stdout().lock();
        return match out.write_all(script.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if let Err(e) = std::fs::write(&file, script.as_bytes()) {
        eprintln!(
            "failed to open file `{file}`: {}",
            sluice_proto::oserror::describe(&e)
        );
        return 1;
    }
    if !quiet {
        println!("batch script for job {job} written to {file}");
    }
    0
}

#[cfg(test)]
mod tests {
    use super::job_of;

    #[test]
    fn a_job_word_is_read_as_slurm_reads_it() {
        assert_eq!(job_of("123"), 123);
        assert_eq!(job_of("123_4"), 123);
        assert_eq!(job_of("123.batch"), 123);
        assert_eq!(job_of("notanumber"), 0);
        assert_eq!(job_of(""), 0);
    }
}
