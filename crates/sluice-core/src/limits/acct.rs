//! A job's place in the accounting database, as data: the ids of associations and
//! QOS, and what every [`crate::JobSpec`] carries ([`JobAcct`]). A leaf module: jobs
//! carry it, and the limits that read it ([`crate::limits`]) sit above jobs.

/// An association's id (the accounting database's own number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AssocId(pub u32);

/// A QOS's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QosId(pub u32);

/// A job's place in the accounting database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobAcct {
    /// Its association (a user's, in the job's account); `None`: no association limits.
    pub assoc: Option<AssocId>,
    /// Its QOS; `None`: no QOS limits (apart from its partition's).
    pub qos: Option<QosId>,
    /// Its partition does not allow its account or QOS (see
    /// [`crate::partition_policy`]): it waits with that reason.
    pub not_allowed: Option<crate::partition_policy::NotAllowed>,
}
