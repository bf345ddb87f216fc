//! Fuzz target `array`: --array specifications: parse_array, format_indices and back.
//! The properties are checked by `sluice_conf::fuzzing::check_array`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_array(data));
