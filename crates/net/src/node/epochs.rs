//! The epoch high-water mark, the node's glue to [`crate::persist`]. Each node keeps its highest
//! epoch seen on disk, written before it answers a Prepare or commits a view, so the views (and
//! the tokens) of a cluster restarted from scratch are numbered above every earlier one.
//!
//! A leader that starts a view change raises its mark in memory only; the run loop lets its
//! Prepares go out first and stores the mark at the end of the turn, so that its sync and the
//! members' run at once, and it commits only once stored. A leader that crashes before has
//! committed nothing in that view, and the members that answered stored it: a later view is
//! numbered above it. A node that cannot store its mark stops: going on could reuse tokens
//! after a restart.

use crate::persist::EpochStore;
use crate::wire::Epoch;
use distsync_core::NodeId;

/// A node's highest epoch seen, and its mark on disk.
pub(super) struct EpochMark {
    node: NodeId,
    /// The highest epoch this node has seen.
    pub seen: Epoch,
    /// The epoch high-water mark on disk (none in the in-process tests).
    pub store: Option<EpochStore>,
    /// `seen` is above the mark on disk (`raise_later`): stored by `store`.
    pub unstored: bool,
    /// What the node does when it cannot store its mark: it stops (`stop_now`), since going on
    /// could reuse tokens after a restart. The in-process tests crash the node there instead
    /// (a panic they catch), to see what it had sent before the store and what it had not.
    pub stop: fn() -> !,
}

/// A node that cannot store its epoch mark stops at once (see [`EpochMark::stop`]).
fn stop_now() -> ! {
    std::process::exit(1)
}

impl EpochMark {
    /// Node `node`'s mark, at 0 and kept in memory only until [`EpochMark::attach`].
    pub fn new(node: NodeId) -> EpochMark {
        EpochMark {
            node,
            seen: 0,
            store: None,
            unstored: false,
            stop: stop_now,
        }
    }

    /// Keeps the mark in `store` from now on, starting from the epoch stored there.
    pub fn attach(&mut self, store: EpochStore) {
        self.seen = store.stored();
        self.store = Some(store);
    }

    /// Raises the highest epoch seen, and its mark on disk before anything can use it. A node
    /// that cannot store its mark stops: going on could reuse tokens after a restart.
    pub fn raise(&mut self, epoch: Epoch) {
        self.raise_later(epoch);
        self.store();
    }

    /// Raises the highest epoch seen now, and its mark on disk at the next [`EpochMark::store`]
    /// (at the latest at the end of this turn, after the messages of the turn were written).
    pub fn raise_later(&mut self, epoch: Epoch) {
        if epoch > self.seen {
            self.seen = epoch;
            self.unstored = true;
        }
    }

    /// Stores the highest epoch seen, if a raise has not stored it yet.
    pub fn store(&mut self) {
        if !std::mem::take(&mut self.unstored) {
            return;
        }
        let epoch = self.seen;
        if let Some(store) = &mut self.store {
            if let Err(e) = store.raise(epoch) {
                tracing::error!(node = %self.node, epoch, "cannot store the epoch mark: {e}; stopping");
                (self.stop)();
            }
        }
    }
}
