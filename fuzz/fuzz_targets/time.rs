//! Fuzz target `time`: time limits: parse_time, format_time and back.
//! The properties are checked by `sluice_conf::fuzzing::check_time`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_time(data));
