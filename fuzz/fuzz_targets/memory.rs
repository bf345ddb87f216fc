//! Fuzz target `memory`: memory sizes: parse_mem_mib against its units, and back.
//! The properties are checked by `sluice_conf::fuzzing::check_memory`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_memory(data));
