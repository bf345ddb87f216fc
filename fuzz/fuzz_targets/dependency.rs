//! Fuzz target `dependency`: --dependency specifications: parse and print back.
//! The properties are checked by `sluice_conf::fuzzing::check_dependency`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_dependency(data));
