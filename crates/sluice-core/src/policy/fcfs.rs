//! First come, first served: start jobs from the head of the queue while the head fits;
//! stop at the first that does not.

use crate::decision::{Decision, Pass};
use crate::ids::JobId;
use crate::scheduler::{QueueKey, Scheduler};
use crate::time::Time;

/// Runs one FCFS pass. Returns the job left at the head (it did not fit), if any.
pub(crate) fn pass(
    s: &mut Scheduler,
    now: Time,
    out: &mut Vec<Decision>,
) -> Option<(QueueKey, JobId)> {
    let mut cursor = None;
    while let Some((key, id)) = s.next_in_queue(cursor) {
        let open = crate::partitions::open(s, id, now);
        if !s.eligible(id, now) {
            cursor = Some(key);
            continue;
        }
        if open.is_some() {
            // Of several partitions: started in one of them, or left at the head.
            let before = out.len();
            crate::partitions::start_now(s, id, now, &mut Default::default(), out);
            if out.len() == before {
                return Some((key, id));
            }
            continue;
        }
        match s.fit_now(id, now) {
            Some(nodes) => s.start(id, now, nodes, Pass::Main, false, out),
            None => {
                let reason = crate::unavailable::reason(s, id, &mut Default::default());
                s.set_reason(id, reason);
                return Some((key, id));
            }
        }
    }
    None
}
