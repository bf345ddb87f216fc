//! Countable resources of a node or an allocation: CPUs, memory and GRES.
//!
//! These are the trackable resources (TRES) that node selection and the availability
//! profile reason about. GRES are kept as counts in a small fixed array of *slots*;
//! [`GresTable`] names the slots (`gpu`, `gpu:a100`, `shard`, ...). A typed slot
//! (`gpu:a100`) has the untyped slot of the same name (`gpu`) as its parent: a node's
//! untyped count is the total over its types, and every allocation takes from both.

/// How many distinct GRES slots (names and name:type pairs) a cluster may define.
pub const MAX_GRES: usize = 8;

/// Per-slot GRES counts (devices, or shards for `shard`), indexed by [`GresSlot`].
pub type GresCounts = [u32; MAX_GRES];

/// Index of a GRES slot in a [`GresTable`].
pub type GresSlot = usize;

/// A bundle of countable resources: on a node (capacity or free), or used by a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Resources {
    /// Processors (Slurm's CPUs: cores or hardware threads, as configured).
    pub cpus: u32,
    /// Memory in MiB.
    pub mem_mib: u64,
    /// GRES counts per slot of the cluster's [`GresTable`].
    pub gres: GresCounts,
}

impl Resources {
    /// Resources with only CPUs (as in a trace that knows nothing else).
    pub fn cpus(cpus: u32) -> Self {
        Resources {
            cpus,
            ..Default::default()
        }
    }

    /// True when every component of `self` is at most the same component of `other`.
    pub fn fits_in(&self, other: &Resources) -> bool {
        self.cpus <= other.cpus
            && self.mem_mib <= other.mem_mib
            && self.gres.iter().zip(&other.gres).all(|(a, b)| a <= b)
    }

    /// Component-wise sum.
    pub fn plus(&self, other: &Resources) -> Resources {
        let mut gres = self.gres;
        for (g, o) in gres.iter_mut().zip(&other.gres) {
            *g += o;
        }
        Resources {
            cpus: self.cpus + other.cpus,
            mem_mib: self.mem_mib + other.mem_mib,
            gres,
        }
    }

    /// Component-wise difference. Panics in debug builds if `other` does not fit in `self`:
    /// over-allocation is a bug, never a state.
    pub fn minus(&self, other: &Resources) -> Resources {
        debug_assert!(other.fits_in(self), "{other:?} does not fit in {self:?}");
        let mut gres = self.gres;
        for (g, o) in gres.iter_mut().zip(&other.gres) {
            *g -= o;
        }
        Resources {
            cpus: self.cpus - other.cpus,
            mem_mib: self.mem_mib - other.mem_mib,
            gres,
        }
    }

    /// Component-wise minimum.
    pub fn min(&self, other: &Resources) -> Resources {
        let mut gres = self.gres;
        for (g, o) in gres.iter_mut().zip(&other.gres) {
            *g = (*g).min(*o);
        }
        Resources {
            cpus: self.cpus.min(other.cpus),
            mem_mib: self.mem_mib.min(other.mem_mib),
            gres,
        }
    }

    /// True when nothing is counted.
    pub fn is_empty(&self) -> bool {
        *self == Resources::default()
    }
}

/// Error from [`GresTable::slot_for`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GresError {
    /// More than [`MAX_GRES`] distinct names and name:type pairs.
    TooManySlots(String),
    /// An empty name or type.
    Empty,
}

impl std::fmt::Display for GresError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GresError::TooManySlots(name) => write!(
                f,
                "too many distinct GRES names and types (at most {MAX_GRES}); cannot add {name}"
            ),
            GresError::Empty => write!(f, "empty GRES name or type"),
        }
    }
}

impl std::error::Error for GresError {}

/// Names of the GRES slots a cluster uses, in the order they were first seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GresTable {
    /// `(name, type)` per slot; `type` is `None` for the untyped total.
    slots: Vec<(String, Option<String>)>,
}

impl GresTable {
    /// The slot for `name` (and `type`, if given), created if new. Creating a typed
    /// slot also creates its untyped parent.
    ///
    /// Errors: [`GresError::TooManySlots`] past [`MAX_GRES`], [`GresError::Empty`].
    pub fn slot_for(&mut self, name: &str, gres_type: Option<&str>) -> Result<GresSlot, GresError> {
        if name.is_empty() || gres_type == Some("") {
            return Err(GresError::Empty);
        }
        if gres_type.is_some() {
            self.slot_for(name, None)?;
        }
        if let Some(s) = self.find(name, gres_type) {
            return Ok(s);
        }
        if self.slots.len() == MAX_GRES {
            let full = match gres_type {
                Some(t) => format!("{name}:{t}"),
                None => name.to_string(),
            };
            return Err(GresError::TooManySlots(full));
        }
        self.slots
            .push((name.to_string(), gres_type.map(str::to_string)));
        Ok(self.slots.len() - 1)
    }

    /// The slot for `name`/`type` if it exists.
    pub fn find(&self, name: &str, gres_type: Option<&str>) -> Option<GresSlot> {
        self.slots
            .iter()
            .position(|(n, t)| n == name && t.as_deref() == gres_type)
    }

    /// The untyped parent of a typed slot; `None` for an untyped slot.
    pub fn parent(&self, slot: GresSlot) -> Option<GresSlot> {
        let (name, t) = &self.slots[slot];
        t.as_ref().and_then(|_| self.find(name, None))
    }

    /// The typed slots under an untyped slot, in slot order.
    pub fn children(&self, slot: GresSlot) -> impl Iterator<Item = GresSlot> + '_ {
        let name = self.slots[slot].0.clone();
        let untyped = self.slots[slot].1.is_none();
        self.slots
            .iter()
            .enumerate()
            .filter(move |(_, (n, t))| untyped && *n == name && t.is_some())
            .map(|(i, _)| i)
    }

    /// The slot's display name: `gpu` or `gpu:a100`.
    pub fn name(&self, slot: GresSlot) -> String {
        match &self.slots[slot] {
            (n, Some(t)) => format!("{n}:{t}"),
            (n, None) => n.clone(),
        }
    }

    /// Number of slots in use.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no GRES are defined.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_slots_have_an_untyped_parent() {
        let mut t = GresTable::default();
        let a100 = t.slot_for("gpu", Some("a100")).unwrap();
        let gpu = t.find("gpu", None).unwrap();
        let v100 = t.slot_for("gpu", Some("v100")).unwrap();
        assert_eq!((gpu, a100, v100), (0, 1, 2));
        assert_eq!(t.parent(a100), Some(gpu));
        assert_eq!(t.parent(gpu), None);
        assert_eq!(t.children(gpu).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(t.name(v100), "gpu:v100");
    }

    #[test]
    fn the_table_refuses_a_ninth_slot() {
        let mut t = GresTable::default();
        for i in 0..MAX_GRES {
            t.slot_for(&format!("g{i}"), None).unwrap();
        }
        assert_eq!(
            t.slot_for("one_more", None),
            Err(GresError::TooManySlots("one_more".into()))
        );
    }

    #[test]
    fn arithmetic_is_component_wise() {
        let mut a = Resources::cpus(8);
        a.mem_mib = 1024;
        a.gres[0] = 2;
        let mut b = Resources::cpus(3);
        b.gres[0] = 2;
        assert!(b.fits_in(&a));
        let d = a.minus(&b);
        assert_eq!((d.cpus, d.mem_mib, d.gres[0]), (5, 1024, 0));
        assert_eq!(d.plus(&b), a);
        assert_eq!(a.min(&b), b);
    }
}
