//! Fuzz target `slurm_conf`: slurm.conf text: nodes, partitions, settings.
//! The properties are checked by `sluice_conf::fuzzing::check_slurm_conf`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_slurm_conf(data));
