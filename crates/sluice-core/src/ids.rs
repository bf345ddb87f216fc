//! Typed identifiers, so a node index is never mistaken for a job id.

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl $name {
            /// The identifier as a plain index (for dense per-id vectors).
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

define_id!(
    /// A job's id, as users see it (`Submitted batch job 42`). Chosen by the caller:
    /// the controller allocates ids durably, the simulator takes them from the trace.
    JobId(u64)
);
define_id!(
    /// A node's index in [`crate::cluster::Cluster::nodes`], in configuration order.
    NodeId(u32)
);
define_id!(
    /// A partition's index in [`crate::cluster::Cluster::partitions`], in configuration order.
    PartitionId(u16)
);
