//! A controller that finds it is no longer the active one steps down: its store's
//! write was refused for a newer fencing epoch, an agent refused its order for one, or
//! it lost its lease (see `sluice_store::lease`). What stepping down is — the daemon
//! starting again as a standby — is the daemon's, set once with [`on_step_down`];
//! without it (one controller, `sluice up`) the event is only logged.

use std::sync::{Arc, OnceLock};

/// What the daemon does to step down, given why.
pub type StepDown = Arc<dyn Fn(&str) + Send + Sync>;

static STEP_DOWN: OnceLock<StepDown> = OnceLock::new();

/// Sets what stepping down does (once per process; later calls change nothing).
pub fn on_step_down(f: StepDown) {
    let _ = STEP_DOWN.set(f);
}

/// This controller is no longer the active one, for `why`.
pub fn step_down(why: &str) {
    match STEP_DOWN.get() {
        Some(f) => f(why),
        None => tracing::error!("another controller is active ({why})"),
    }
}
