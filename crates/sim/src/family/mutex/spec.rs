//! The scenario's fields of mutual exclusion: the parameters some of its algorithms read.

use crate::family::section::{section, Refusal};
use distsync_core::{NodeId, QuorumKind};

section! {
    /// The mutual-exclusion fields of a scenario (top-level keys of the file;
    /// `Scenario::mutex`), each read by some algorithms of the family.
    pub struct MutexSpec {
        /// The central algorithm's lock manager.
        pub coordinator: Option<NodeId> => Refusal::Param,
        /// The initial token holder of token algorithms.
        pub holder: Option<NodeId> => Refusal::Param,
        /// Tree edges for tree algorithms.
        pub tree: Option<Vec<[NodeId; 2]>> => Refusal::Param,
        /// Quorum construction for quorum algorithms.
        pub quorums: Option<QuorumKind> => Refusal::Param,
    }
}

impl MutexSpec {
    /// Sets the algorithms' parameters of this section in `params`.
    pub(crate) fn params(&self, params: &mut distsync_core::Params) {
        params.coordinator = self.coordinator;
        params.holder = self.holder;
        params.tree = self.tree.clone();
        params.quorums = self.quorums;
    }

    /// Checks that every node the section names is a member (`member` refuses one that is
    /// not, naming the field).
    pub(crate) fn check<E>(&self, member: impl Fn(&str, NodeId) -> Result<(), E>) -> Result<(), E> {
        if let Some(c) = self.coordinator {
            member("coordinator", c)?;
        }
        if let Some(h) = self.holder {
            member("holder", h)?;
        }
        if let Some(tree) = &self.tree {
            for (i, [a, b]) in tree.iter().enumerate() {
                member(&format!("tree[{i}]"), *a)?;
                member(&format!("tree[{i}]"), *b)?;
            }
        }
        Ok(())
    }
}
