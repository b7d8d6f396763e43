//! The members a COORDINATOR message of the ring algorithm (ring.rs) names, as one shared list.
//! Nothing here is a rule of the algorithm, only how the list is kept, so it lives apart.

use distsync_core::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// The members a COORDINATOR message names: a list of ids, shared rather than copied by the
/// processes that pass it on and record it (a ring of n keeps n lists of n ids otherwise: 40 GB
/// at 100,000). Its highest id and its digest (to know it again, rule 8) are found once. It
/// reads, writes, compares and hashes as the plain list.
#[derive(Clone)]
pub struct Members {
    ids: Arc<[NodeId]>,
    highest: Option<NodeId>,
    digest: Arc<OnceLock<u64>>,
}

impl Members {
    pub(super) fn new(ids: Arc<[NodeId]>, highest: Option<NodeId>) -> Members {
        Members {
            ids,
            highest,
            digest: Arc::default(),
        }
    }

    /// The highest id: the coordinator.
    pub fn highest(&self) -> Option<NodeId> {
        self.highest
    }

    /// A digest of the list, to know the same COORDINATOR when it comes round again.
    pub(super) fn digest(&self) -> u64 {
        *self.digest.get_or_init(|| {
            let mut h = DefaultHasher::new();
            self.ids.hash(&mut h);
            h.finish()
        })
    }
}

impl From<Vec<NodeId>> for Members {
    fn from(ids: Vec<NodeId>) -> Members {
        let highest = ids.iter().max().copied();
        Members::new(ids.into(), highest)
    }
}

impl Deref for Members {
    type Target = [NodeId];
    fn deref(&self) -> &[NodeId] {
        &self.ids
    }
}

impl PartialEq for Members {
    fn eq(&self, other: &Members) -> bool {
        self.ids == other.ids
    }
}

impl Eq for Members {}

impl Hash for Members {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ids.hash(state);
    }
}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ids.fmt(f)
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.ids.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        Vec::<NodeId>::deserialize(d).map(Members::from)
    }
}
