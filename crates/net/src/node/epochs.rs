//! The epoch high-water mark, the node's glue to [`crate::persist`]. Each node keeps its highest
//! epoch seen on disk, written before it answers a Prepare or commits a view, so the views (and
//! the tokens) of a cluster restarted from scratch are numbered above every earlier one.
//!
//! A leader that starts a view change raises its mark in memory only; the run loop lets its
//! Prepares go out first and stores the mark at the end of the turn, so that its sync and the
//! members' run at once, and it commits only once stored. A leader that crashes before has
//! committed nothing in that view, and the members that answered stored it: a later view is
//! numbered above it.
//!
//! A node that cannot store its mark (a full or failing disk) never acts on the epoch it could
//! not store: it does not answer the Prepare, commit the view or lead a change, and from then on
//! it *sits out*: it sends nothing to its peers (no `Ping` either, so they take it for down and
//! form their views without it), refuses every lock request with the error, which names the file
//! (`cluster status` shows it too), and says so in its log once. It tries the store again once
//! per `heartbeat_timeout`; the first that succeeds ends the sitting out (logged too), and the
//! leader takes it into the next view. It stays up meanwhile, so the operator sees why.
//!
//! A sync can be slow (a busy or failing disk: seconds), and the node's loop waits for it: a
//! node that synced at every view change would fall silent for that long at each, be taken for
//! crashed, and start the next change, which syncs again (with syncs at or above
//! `heartbeat_timeout`, view changes opened forever and no lock was granted). So a store
//! reserves epochs: it writes the mark [`RESERVE_ROUNDS`] rounds above the epoch it stores, and
//! a later epoch within that reservation is on disk already (a mark above every epoch acted on
//! is all the numbering needs). Only one view change in [`RESERVE_ROUNDS`] waits for the disk;
//! a node restarted from a reserved mark numbers its views above the reservation.
//!
//! An epoch from another node is believed only within [`LEAP_ROUNDS`] rounds of what a majority
//! of the cluster has seen: every node tells every peer its mark (`Mark`, when a link comes up
//! and whenever the mark rises), and a node takes the majority-th highest of the marks it knows
//! (its own included) as what a majority vouches for. A `Stale`, `Prepare` or `Commit` above
//! that bound is dropped, so that one forged message cannot raise the mark to the last round
//! and leave no epoch for the next view. A node whose own mark is above the bound (a mark forged
//! before the bound existed, or corrupt) lowers it, on disk too, to the highest mark within the
//! bound, once it knows the marks of a majority.

use crate::persist::EpochStore;
use crate::wire::Epoch;
use distsync_core::NodeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How many rounds above what a majority has seen an epoch from another node may be. Honest
/// epochs rise one round per view change attempt, and every committed view's epoch is stored by
/// its members, so a leader gets this far ahead of a majority only after a thousand failed view
/// changes in a row; a forger needs 4,096 such steps, each one stored by a majority, to use up
/// the 2^22 rounds.
pub const LEAP_ROUNDS: u32 = 1024;

/// How many rounds above the epoch it stores a node's mark is written (see the module's text):
/// well within [`LEAP_ROUNDS`], so that a node restarted from a reserved mark is believed; 2^22
/// rounds last 65,536 restarts at this rate.
pub const RESERVE_ROUNDS: u32 = 64;

// A node restarted from a reserved mark must be believed.
const _: () = assert!(RESERVE_ROUNDS < LEAP_ROUNDS);

/// The mark stored for `epoch` with `ahead` rounds reserved: the last epoch of round
/// `round + ahead` (no higher than the last round), at least `epoch` itself.
pub fn reserved(epoch: Epoch, ahead: u32) -> Epoch {
    if ahead == 0 {
        return epoch;
    }
    let round = (epoch >> 10).saturating_add(ahead).min((1 << 22) - 1);
    ((round << 10) | 1023).max(epoch)
}

/// A node's highest epoch seen, and its mark on disk.
pub(super) struct EpochMark {
    node: NodeId,
    /// The highest epoch this node has seen.
    pub seen: Epoch,
    /// The epoch high-water mark on disk (none in the in-process tests).
    pub store: Option<EpochStore>,
    /// `seen` is above the mark on disk (`raise_later`): stored by `store`.
    pub unstored: bool,
    /// `None` (a running node): a node that cannot store its mark sits out (see the module's
    /// text). The in-process tests of the order of stores and messages set a crash there (a
    /// panic they catch), to see what the node had sent before the store and what it had not.
    pub stop: Option<fn() -> !>,
    /// Why the last store failed (the file and the error), while the node sits out.
    pub disk: Option<String>,
    /// Set while `disk` is: shared with the node's links, which send no `Ping` meanwhile.
    pub silent: Arc<AtomicBool>,
    /// When the store was last tried while the node sits out.
    last_try: Option<Instant>,
    /// Rounds reserved past each epoch stored ([`RESERVE_ROUNDS`]; the in-process tests of
    /// the order of stores and messages set 0, so that every raise waits for the disk).
    pub ahead: u32,
    /// The cluster's size.
    nodes: usize,
    /// The latest mark each other node said it has (`Mark`, `Stale`).
    claims: HashMap<NodeId, Epoch>,
}

impl EpochMark {
    /// Node `node`'s mark, at 0 and kept in memory only until [`EpochMark::attach`].
    pub fn new(node: NodeId, nodes: usize) -> EpochMark {
        EpochMark {
            node,
            seen: 0,
            store: None,
            unstored: false,
            stop: None,
            disk: None,
            silent: Arc::new(AtomicBool::new(false)),
            last_try: None,
            ahead: RESERVE_ROUNDS,
            nodes,
            claims: HashMap::new(),
        }
    }

    /// Node `from` says its mark is `epoch` (its latest word replaces the earlier one: an
    /// honest mark only rises).
    pub fn claim(&mut self, from: NodeId, epoch: Epoch) {
        if from != self.node {
            self.claims.insert(from, epoch);
        }
    }

    /// The highest epoch a majority of the cluster has seen, as far as this node knows: the
    /// majority-th highest of its own mark and the marks it was told. `None` until it knows the
    /// marks of a majority.
    pub fn quorum(&self) -> Option<Epoch> {
        let majority = self.nodes / 2 + 1;
        let mut marks: Vec<Epoch> = self.claims.values().copied().collect();
        marks.push(self.seen);
        if marks.len() < majority {
            return None;
        }
        marks.sort_unstable_by(|a, b| b.cmp(a));
        Some(marks[majority - 1])
    }

    /// Whether an epoch from another node is within [`LEAP_ROUNDS`] rounds of what a majority
    /// has seen (or of this node's own mark, while it does not know a majority's).
    pub fn plausible(&self, epoch: Epoch) -> bool {
        let base = self.seen.max(self.quorum().unwrap_or(0));
        epoch >> 10 <= (base >> 10) + LEAP_ROUNDS
    }

    /// Lowers this node's own mark when it is more than [`LEAP_ROUNDS`] rounds above what a
    /// majority has seen (forged or corrupt: an honest mark is stored by a view's members
    /// before the view is used), to the highest mark it knows within the bound; on disk too.
    /// Returns the mark it had and the one it has now.
    pub fn lower_if_implausible(&mut self) -> Option<(Epoch, Epoch)> {
        let quorum = self.quorum()?;
        let bound = (quorum >> 10) + LEAP_ROUNDS;
        if self.seen >> 10 <= bound {
            return None;
        }
        let to = self
            .claims
            .values()
            .copied()
            .filter(|&e| e >> 10 <= bound)
            .max()
            .unwrap_or(quorum)
            .max(quorum);
        let was = self.seen;
        if let Some(store) = &mut self.store {
            if let Err(e) = store.lower(to) {
                // Tried again at the next check, and the mark kept meanwhile.
                self.failed(to, e);
                return None;
            }
        }
        self.stored_again();
        self.seen = to;
        self.unstored = false;
        Some((was, to))
    }

    /// The cluster's roster now has `nodes` nodes (a membership change): majorities of marks
    /// are counted over it.
    pub fn resize(&mut self, nodes: usize) {
        self.nodes = nodes;
    }

    /// Node `node` left the roster: its mark no longer counts.
    pub fn forget(&mut self, node: NodeId) {
        self.claims.remove(&node);
    }

    /// Keeps the mark in `store` from now on, starting from the epoch stored there.
    pub fn attach(&mut self, store: EpochStore) {
        self.seen = store.stored();
        self.store = Some(store);
    }

    /// Raises the highest epoch seen, and its mark on disk before anything can use it; false
    /// if the store failed (the node sits out: nothing may act on the epoch).
    #[must_use]
    pub fn raise(&mut self, epoch: Epoch) -> bool {
        self.raise_later(epoch);
        self.store()
    }

    /// Raises the highest epoch seen now, and its mark on disk at the next [`EpochMark::store`]
    /// (at the latest at the end of this turn, after the messages of the turn were written).
    pub fn raise_later(&mut self, epoch: Epoch) {
        if epoch > self.seen {
            self.seen = epoch;
            self.unstored = true;
        }
    }

    /// Stores the highest epoch seen, if a raise has not stored it yet. False if that failed:
    /// the epoch must not be acted on (answered, committed, granted in), and the node sits out
    /// until a store succeeds ([`EpochMark::retry`]).
    #[must_use]
    pub fn store(&mut self) -> bool {
        if !self.unstored {
            return true;
        }
        let epoch = self.seen;
        if let Some(store) = &mut self.store {
            // (Within the reservation of an earlier store it is on disk already.)
            if store.stored() < epoch {
                if let Err(e) = store.raise(reserved(epoch, self.ahead)) {
                    self.failed(epoch, e);
                    return false;
                }
            }
        }
        self.unstored = false;
        self.stored_again();
        true
    }

    /// While the node sits out: tries the store again, at most once per `every`.
    pub fn retry(&mut self, now: Instant, every: Duration) {
        if self.disk.is_none() || self.last_try.is_some_and(|t| now < t + every) {
            return;
        }
        self.last_try = Some(now);
        if self.unstored {
            let _ = self.store();
        }
    }

    /// A store of `epoch` failed with `e`: the node sits out (said once), or, in the in-process
    /// tests that ask for it, crashes.
    fn failed(&mut self, epoch: Epoch, e: std::io::Error) {
        self.sit_out(epoch, "epoch mark", e);
    }

    /// A store of `what` (the epoch mark, or the roster of a membership change) failed with
    /// `e`: the node sits out (said once) until its mark is stored again, or, in the in-process
    /// tests that ask for it, crashes.
    pub fn sit_out(&mut self, epoch: Epoch, what: &str, e: std::io::Error) {
        if let Some(stop) = self.stop {
            tracing::error!(node = %self.node, epoch, "cannot store the {what} ({e}); crashing");
            stop();
        }
        if self.disk.is_none() {
            tracing::error!(node = %self.node, epoch, "cannot store the {what} ({e}): this node takes part in no view and refuses every lock until the disk takes the write (tried again every heartbeat_timeout); free space there");
        }
        self.disk = Some(format!("cannot store its {what}: {e}"));
        // The retry stores the mark again: its success is the disk taking writes again.
        self.unstored = true;
        self.silent.store(true, Ordering::Relaxed);
    }

    /// A store succeeded: if the node sat out, it takes part again.
    fn stored_again(&mut self) {
        if let Some(was) = self.disk.take() {
            tracing::info!(node = %self.node, epoch = self.seen, "the epoch mark is stored again (it could not be: {was}); taking part in views again");
            self.silent.store(false, Ordering::Relaxed);
            self.last_try = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store reserves the rest of the epoch's round and [`RESERVE_ROUNDS`] more: every epoch
    /// up to there is on disk already; never past the last round, never below the epoch.
    #[test]
    fn a_store_reserves_rounds_ahead_within_the_numbering() {
        let e = 5 << 10 | 3;
        assert_eq!(reserved(e, 0), e);
        assert_eq!(
            reserved(e, RESERVE_ROUNDS),
            (5 + RESERVE_ROUNDS) << 10 | 1023
        );
        let top = ((1 << 22) - 1) << 10 | 1023;
        assert_eq!(reserved(((1 << 22) - 2) << 10, RESERVE_ROUNDS), top);
        assert_eq!(reserved(u32::MAX, RESERVE_ROUNDS), u32::MAX);
    }

    /// With a store attached, a raise within the reservation of the last store writes nothing:
    /// one view change in [`RESERVE_ROUNDS`] waits for the disk.
    #[test]
    fn raises_within_the_reservation_do_not_touch_the_disk() {
        let tmp = tempfile::TempDir::with_prefix("distsync-reserve-").unwrap();
        let mut m = EpochMark::new(NodeId(1), 3);
        m.attach(EpochStore::open(tmp.path(), NodeId(1)).unwrap());
        assert!(m.raise(2 << 10 | 1));
        let on_disk = || EpochStore::open(tmp.path(), NodeId(1)).unwrap().stored();
        assert_eq!(on_disk(), (2 + RESERVE_ROUNDS) << 10 | 1023);
        let path = crate::persist::epoch_path(tmp.path(), NodeId(1));
        let before = std::fs::read(&path).unwrap();
        for round in 3..2 + RESERVE_ROUNDS {
            assert!(m.raise(round << 10 | 2));
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
        assert!(m.raise((3 + RESERVE_ROUNDS) << 10));
        assert_eq!(on_disk(), (3 + 2 * RESERVE_ROUNDS) << 10 | 1023);
        tmp.close().unwrap();
    }
}
