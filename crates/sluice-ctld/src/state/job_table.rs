//! The controller's jobs, by id, each behind an `Arc` shared with the read snapshot
//! (`state/listing.rs`), and the ids of those changed since last asked.
//!
//! Every way to change a job goes through here ([`JobTable::get_mut`],
//! [`JobTable::insert`], [`JobTable::remove`]) and notes its id, so that the snapshot
//! republishes exactly the jobs that changed: a job the snapshot shares is copied on
//! its first change after it was published (`Arc::make_mut`), never in place.
//!
//! It also knows which jobs hold processors on their nodes (running, suspended or
//! completing, [`holds_processors`]) without looking at every job: the set is brought
//! up to date, when asked, from the jobs changed since it was last asked.

use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::ops::{Index, RangeBounds};
use std::sync::Arc;

use sluice_core::JobId;
use sluice_proto::types::JobState;

use super::job::Job;

/// Jobs by id, with the ids changed since [`JobTable::take_changed`].
#[derive(Default)]
pub(crate) struct JobTable {
    jobs: BTreeMap<JobId, Arc<Job>>,
    changed: BTreeSet<JobId>,
    /// The jobs that held processors when [`JobTable::holding`] was last asked.
    holding: BTreeSet<JobId>,
    /// The jobs changed since then (and still here), whose place in `holding` is to be
    /// looked at again: at most every job in memory.
    unsorted: BTreeSet<JobId>,
}

/// Whether job `j` holds processors on its nodes: it runs, is suspended, or its run
/// is still ending (completing).
fn holds_processors(j: &Job) -> bool {
    matches!(j.state, JobState::Running | JobState::Suspended) || j.ending_run.is_some()
}

impl JobTable {
    pub(crate) fn get(&self, id: &JobId) -> Option<&Job> {
        self.jobs.get(id).map(|j| &**j)
    }

    /// Job `id` to change: noted as changed.
    pub(crate) fn get_mut(&mut self, id: &JobId) -> Option<&mut Job> {
        let j = self.jobs.get_mut(id)?;
        self.changed.insert(*id);
        self.unsorted.insert(*id);
        Some(Arc::make_mut(j))
    }

    /// The job as shared with the snapshot.
    pub(crate) fn shared(&self, id: &JobId) -> Option<&Arc<Job>> {
        self.jobs.get(id)
    }

    pub(crate) fn insert(&mut self, id: JobId, job: Job) -> Option<Job> {
        self.changed.insert(id);
        self.unsorted.insert(id);
        self.jobs.insert(id, Arc::new(job)).map(unshare)
    }

    pub(crate) fn remove(&mut self, id: &JobId) -> Option<Job> {
        let j = self.jobs.remove(id)?;
        self.changed.insert(*id);
        // Gone: nothing left to sort.
        self.holding.remove(id);
        self.unsorted.remove(id);
        Some(unshare(j))
    }

    pub(crate) fn contains_key(&self, id: &JobId) -> bool {
        self.jobs.contains_key(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    pub(crate) fn values(&self) -> impl DoubleEndedIterator<Item = &Job> + Clone {
        self.jobs.values().map(|j| &**j)
    }

    pub(crate) fn keys(&self) -> btree_map::Keys<'_, JobId, Arc<Job>> {
        self.jobs.keys()
    }

    pub(crate) fn range<R: RangeBounds<JobId>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (&JobId, &Job)> + Clone {
        self.jobs.range(range).map(|(id, j)| (id, &**j))
    }

    /// The jobs that hold processors on their nodes ([`holds_processors`]), in id
    /// order. Costs the jobs changed since last asked, not a look at every job.
    pub(crate) fn holding(&mut self) -> impl Iterator<Item = &Job> {
        for id in std::mem::take(&mut self.unsorted) {
            if self.jobs.get(&id).is_some_and(|j| holds_processors(j)) {
                self.holding.insert(id);
            } else {
                self.holding.remove(&id);
            }
        }
        self.holding.iter().map(|id| &*self.jobs[id])
    }

    /// The ids inserted, changed or removed since last asked.
    pub(crate) fn take_changed(&mut self) -> BTreeSet<JobId> {
        std::mem::take(&mut self.changed)
    }
}

/// The job itself: moved out when no snapshot shares it, else copied.
fn unshare(j: Arc<Job>) -> Job {
    Arc::try_unwrap(j).unwrap_or_else(|j| (*j).clone())
}

impl Index<&JobId> for JobTable {
    type Output = Job;
    fn index(&self, id: &JobId) -> &Job {
        &self.jobs[id]
    }
}
