//! Fuzz target `sbatch_directives`: job scripts: #SBATCH lines into words, then the words as options.
//! The properties are checked by `sluice_conf::fuzzing::check_sbatch_directives`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_sbatch_directives(data));
