//! Bad input on the wire: every request body a controller or agent route decodes, and
//! the credential gate in front of their TCP listeners, fed random and mutated bytes.
//! Each answer is a clean refusal or a value — never a panic — and the gate admits
//! nothing it did not see signed with the key. (The routes decode with axum's `Json`,
//! which is serde_json's `from_slice`: a refusal there is answered 400/422.)

use proptest::prelude::*;
use sluice_proto::auth::{sign, Credential, Gate};
use sluice_proto::types::*;

/// Decodes `bytes` as every body type the routes take; returns how many accepted it.
fn decode_all(bytes: &[u8]) -> usize {
    fn one<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> usize {
        usize::from(serde_json::from_slice::<T>(bytes).is_ok())
    }
    // Controller routes.
    one::<JobDescription>(bytes)
        + one::<CancelRequest>(bytes)
        + one::<NodeUpdate>(bytes)
        + one::<JobUpdate>(bytes)
        + one::<Register>(bytes)
        + one::<JobEnded>(bytes)
        + one::<StepRequest>(bytes)
        + one::<ExitReport>(bytes)
        + one::<sluice_proto::accounts::ChangeRequest>(bytes)
        + one::<sluice_proto::reservations::ReservationChange>(bytes)
        + one::<sluice_proto::auth::VouchRequest>(bytes)
        // Agent routes.
        + one::<LaunchBatch>(bytes)
        + one::<SignalOrder>(bytes)
        + one::<TerminateOrder>(bytes)
        + one::<TimeLimitOrder>(bytes)
        + one::<StdinChunk>(bytes)
        + one::<LaunchTasks>(bytes)
        + one::<TasksAttach>(bytes)
        + one::<TasksDone>(bytes)
        + one::<TaskSelection>(bytes)
}

/// Valid bodies to mutate: a registration, an end report, a launch's start.
const SEEDS: &[&str] = &[
    r#"{"node":"n1","running":[[42,0]],"hardware":{"cpus":4,"boards":1,"sockets":1,"cores":4,"threads":1,"real_memory":1000,"gres":[["gpu",2]]},"conf_hash":"ab"}"#,
    r#"{"job_id":42,"state":"COMPLETED","exit_code":0,"signal":0}"#,
    r#"{"job_ids":[1,2],"signal":9}"#,
    r#"{"nodes":"n[1-2]","state":"DRAIN","reason":"disks"}"#,
];

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_decode_to_a_clean_error(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_all(&bytes);
    }

    #[test]
    fn mutated_valid_bodies_decode_or_refuse_cleanly(
        seed in 0..SEEDS.len(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut bytes = SEEDS[seed].as_bytes().to_vec();
        for (at, b, op) in edits {
            let i = if bytes.is_empty() { 0 } else { at % bytes.len() };
            match op {
                0 if !bytes.is_empty() => bytes[i] = b,
                1 => bytes.insert(i.min(bytes.len()), b),
                _ if !bytes.is_empty() => { bytes.remove(i); }
                _ => {}
            }
        }
        decode_all(&bytes);
    }

    #[test]
    fn the_gate_admits_no_forged_or_mangled_credential(
        header in proptest::option::of("[ -~]{0,120}"),
        body in proptest::collection::vec(any::<u8>(), 0..256),
        flip in any::<usize>(),
    ) {
        let gate = Gate::new(KEY.to_vec(), 1_000);
        // Random text as the header: refused, before and after the body is read.
        let random = gate.precheck(header.as_deref(), 2_000).and_then(|_| {
            gate.admit(header.as_deref(), "POST", "/v1/agent/register", &body, 2_000)
        });
        prop_assert!(random.is_err());
        // A real credential with one character changed: refused.
        let c = Credential { uid: 0, gid: 0, time: 2_000, nonce: 7 };
        let good = sign(KEY, &c, "POST", "/v1/agent/register", &body);
        let mut mangled: Vec<char> = good.chars().collect();
        let i = flip % mangled.len();
        mangled[i] = if mangled[i] == '0' { '1' } else { '0' };
        let mangled: String = mangled.into_iter().collect();
        prop_assert!(gate
            .admit(Some(&mangled), "POST", "/v1/agent/register", &body, 2_000)
            .is_err());
        // The same credential for another body: refused.
        let mut other = body.clone();
        other.push(b'x');
        prop_assert!(gate
            .admit(Some(&good), "POST", "/v1/agent/register", &other, 2_000)
            .is_err());
    }
}

#[test]
fn refusals_are_logged_once_a_minute_per_peer() {
    let gate = Gate::new(KEY.to_vec(), 1_000);
    let logged: Vec<bool> = [100, 130, 159, 160]
        .iter()
        .map(|&t| gate.should_log("10.0.0.9", t))
        .collect();
    assert_eq!(logged, [true, false, false, true]);
}
