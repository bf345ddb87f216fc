//! Fuzz target `hostlist`: hostlist expressions: expand, then compress and expand again.
//! The properties are checked by `sluice_conf::fuzzing::check_hostlist`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_conf::fuzzing::check_hostlist(data));
