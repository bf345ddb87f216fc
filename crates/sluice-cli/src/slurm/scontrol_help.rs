//! `scontrol help` (and `-h`, `--help`, `--usage`): Slurm's layout (its options, then
//! its commands, each with its text in a column), listing what Sluice's scontrol does.

/// The whole text, as `scontrol help` prints it on standard output.
pub const HELP: &str = "\
scontrol [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a, --all      accepted, without effect in Sluice
     -d, --details  show job: derived exit code, processors and memory per node
     -F, --future   show node: FUTURE nodes too
     -h, --help     this help (also --usage and the help command)
     -o, --oneliner one record per line
     -Q, --quiet    write batch_script: no line saying where it went
     -V, --version  print the Slurm version and exit

    Valid <COMMAND> values are:
     create reservation <SPECIFICATIONS>
                              make a reservation (ReservationName=, Nodes=,
                              StartTime=, Duration=, Users=, Flags=...)
     delete reservation <name>
                              remove a reservation
     help                     this help
     hold <job_list>          keep pending jobs from starting (operator hold)
     ping                     say whether each controller answers
     reconfigure              read slurm.conf's nodes and partitions again
     release <job_list>       let held jobs start
     requeue <job_list>       put batch jobs back in the queue
     requeuehold <job_list>   requeue, and hold
     show <ENTITY> [<ID>]     print records, all of them without <ID>
     takeover [<INDEX>]       have a backup controller take over (the first
                              without <INDEX>)
     token [lifespan=] [username=]
                              a token for the REST API (slurmrestd)
     uhold <job_list>         hold jobs, as their owner may release
     update <SPECIFICATIONS>  change a job (JobId=), nodes (NodeName=), a
                              partition (PartitionName=) or a reservation
                              (ReservationName=)
     version                  print the Slurm version
     write batch_script <job_id> [<file>]
                              a batch job's script, to slurm-<job_id>.sh,
                              <file>, or standard output for \"-\"

  <ENTITY> may be \"config\", \"hostlist\", \"hostlistsorted\", \"hostnames\",
       \"job\", \"node\", \"partition\" or \"reservation\".

  <SPECIFICATIONS> are KEY=VALUE words, as \"show\" prints them.

  Not supported by Sluice: the options --clusters, --federation,
  --hide, --local, --sibling, --uid and --verbose; the other commands of Slurm's
  scontrol.
";

#[cfg(test)]
mod tests {
    use super::HELP;
    use crate::slurm::scontrol::OPTIONS;

    #[test]
    fn every_option_named_is_scontrols() {
        let named: Vec<&str> = HELP
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter_map(|w| w.strip_prefix("--"))
            .collect();
        assert!(named.len() > 10, "{named:?}");
        for long in named {
            assert!(
                OPTIONS.iter().any(|o| o.long == long),
                "--{long} is no option of scontrol"
            );
        }
        // Every option of the table is named.
        for o in OPTIONS {
            assert!(
                HELP.contains(&format!("--{}", o.name)),
                "--{} is not named",
                o.name
            );
        }
        assert!(HELP.lines().all(|l| l.len() <= 80));
    }
}
