//! Views (failover). The node its election algorithm names leader runs a view change when it
//! becomes leader, when a member falls silent for `heartbeat_timeout`, or when a live node is not
//! a member yet:
//! 1. `Prepare(e)` to every live node; each drops its instances, stops granting and answers
//!    `State(e, held)`: the locks its clients hold and their tokens.
//! 2. After all answered (or `heartbeat_timeout`), `Commit(e, members, holders)`: the members are
//!    the nodes that answered; for each held lock the holder with the highest token keeps it,
//!    among the competitors of the algorithm that were in the latest view (a node that missed a
//!    view was cut off while the lock was handed on); every other holder's client is `Revoked`.
//! 3. Every member rebuilds its instances with the new membership (the central coordinator is the
//!    leader, a token starts at the lock's holder or else at the first member), and each holder
//!    re-acquires its lock in the new instance (nobody else competes yet, so it gets it at once)
//!    and says `Reacquired`.
//! 4. Then `Open(e)`: waiting clients are served again; their nodes re-issue their requests.
//!
//! A view change opens only after every lease of the previous view has run out (`leases`), and
//! its epoch is on disk before anyone acts on it (`epochs`).
//!
//! A node that has seen a higher epoch answers a Prepare with `Stale`, and the leader starts
//! again above it. A `Stale`, `Prepare` or `Commit` whose epoch is far above what a majority has
//! seen is dropped (`epochs`: one forged message must not use up the epochs). A node without a view (restarted within the timeout, or left out) asks the
//! leader to `Join` when a message of an unknown view reaches it or after `heartbeat_timeout`.

use super::Node;
use crate::wire::{Epoch, PeerMsg};
use distsync_core::{NodeId, Params, Peers};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// At most this many messages of a future view are kept until the view is committed.
pub(super) const MAX_FUTURE: usize = 16384;

/// The epoch a leader starts after `seen`; `None` when the 22 bits of rounds are used up (a
/// forged or corrupt epoch near the top must not wrap the numbering around).
pub fn next_epoch(seen: Epoch, leader: NodeId) -> Option<Epoch> {
    let round = (seen >> 10).checked_add(1)?;
    (round < 1 << 22).then_some((round << 10) | (leader.0 & 1023))
}

/// Why an epoch from another node is not believed (see `epochs`).
fn implausible(what: &str, epoch: Epoch, mark: &super::epochs::EpochMark) -> String {
    format!(
        "{what} at epoch {epoch} (round {}) is more than {} rounds above what a majority has seen ({})",
        epoch >> 10,
        super::epochs::LEAP_ROUNDS,
        mark.quorum().unwrap_or(mark.seen),
    )
}

impl Node {
    /// Judges this node's own mark against what a majority has seen (lowering a forged or
    /// corrupt one), and tells every peer when the mark has changed.
    pub(super) fn check_mark(&mut self) {
        if let Some((was, now)) = self.epochs.lower_if_implausible() {
            tracing::error!(
                node = %self.id,
                was,
                now,
                "the epoch mark was more than {} rounds above what a majority has seen: forged or corrupt; lowered",
                super::epochs::LEAP_ROUNDS
            );
        }
        let seen = self.epochs.seen;
        if seen != self.marked {
            self.marked = seen;
            for p in self.cluster.peers.ids().to_vec() {
                self.send(p, PeerMsg::Mark { seen });
            }
        }
    }
}

/// The view this node is in.
pub(super) struct View {
    pub epoch: Epoch,
    pub leader: NodeId,
    pub members: Peers,
    pub open: bool,
    /// The held locks and the member keeping each (the token algorithms' initial holder).
    pub holders: HashMap<String, NodeId>,
    /// `Err` when the mutual-exclusion algorithm cannot run with these members.
    pub usable: Result<(), String>,
    /// When this node committed it.
    pub committed_at: Instant,
}

/// A view change this node leads.
pub(super) struct Change {
    pub epoch: Epoch,
    pub asked: BTreeSet<NodeId>,
    /// Each answering node's last view and holds.
    states: BTreeMap<NodeId, (Epoch, Vec<(String, u64)>)>,
    /// The view opens no earlier than this: every lease of an earlier view has run out.
    open_after: Instant,
    /// Until when this leader's own lease on its previous view ran when it began the change
    /// (the leases it gave its members end no later): waited for if the commit drops holds.
    own_lease: Option<Instant>,
    /// `None` while preparing; the locks still to be re-acquired once committed.
    pub awaiting: Option<BTreeSet<String>>,
    members: Vec<NodeId>,
    deadline: Instant,
    /// The roster this view change carries (a membership change an admin asked for), if any.
    roster: Option<Vec<crate::config::NodeEntry>>,
}

/// The mutual-exclusion parameters of a view: the cluster's, with the view's leader as the
/// central coordinator and the lock's holder (if any) as the token's starting place.
pub(super) fn view_params(base: &Params, leader: NodeId, holder: Option<NodeId>) -> Params {
    Params {
        coordinator: Some(leader),
        holder,
        ..base.clone()
    }
}

impl Node {
    /// Asks `leader` for a view change that lets this node in, at most once per timeout.
    pub(super) fn ask_to_join(&mut self, leader: NodeId) {
        let now = Instant::now();
        let recently = self
            .last_join
            .is_some_and(|t| now.duration_since(t) < self.timeouts().heartbeat_timeout);
        if leader != self.id && !recently {
            info!(node = %self.id, leader = %leader, "no view: asking the leader to let this node in");
            self.last_join = Some(now);
            self.send(leader, PeerMsg::Join);
        }
    }

    pub(super) fn on_join(&mut self, from: NodeId) {
        if self.election.leader() == Some(self.id) && self.change.is_none() {
            info!(node = %self.id, from = %from, "node asks to join: changing view");
            self.force_change = true;
            self.lead();
        }
    }

    /// Leader duties, checked at every tick and after every election event.
    pub(super) fn lead(&mut self) {
        let me = self.id;
        if self.epochs.disk.is_some() {
            // It could not store an epoch: it leads no view change while it sits out (epochs).
            self.change = None;
            return;
        }
        if self.election.leader() != Some(me) || self.election.electing() {
            if let Some(c) = self.change.take() {
                info!(node = %me, epoch = c.epoch, "no longer leader; view change abandoned");
            }
            self.abandon_proposal(&format!("node {me} is no longer the leader"));
            return;
        }
        if self.removed.is_some() {
            return;
        }
        let now = Instant::now();
        if let Some(change) = &self.change {
            if now < change.deadline {
                return;
            }
            if change.awaiting.is_none() {
                self.commit();
            } else {
                warn!(node = %me, epoch = change.epoch, "holders did not re-acquire in time; changing view again");
                self.change = None;
                self.force_change = true;
            }
            return;
        }
        let live = self.live();
        let all_up = live.len() == self.cluster.peers.len();
        let grace = now.duration_since(self.start) < self.timeouts().heartbeat_timeout;
        let need = match &self.view {
            None => all_up || !grace,
            Some(v) => v.leader != me || v.members.ids() != live.as_slice(),
        };
        if need || self.force_change {
            self.force_change = false;
            self.begin_change(live);
        }
    }

    pub(super) fn begin_change(&mut self, live: Vec<NodeId>) {
        let Some(epoch) = next_epoch(self.epochs.seen, self.id) else {
            if self.wedged.is_none() {
                let why = format!(
                    "no epoch left above the highest seen ({}, the last round): no view can be formed; see docs/net.md, \"Epochs cannot be exhausted\", to recover",
                    self.epochs.seen
                );
                tracing::error!(node = %self.id, "{why}");
                self.wedged = Some(why);
            }
            return;
        };
        info!(node = %self.id, epoch, live = ?live, "view change: prepare");
        let asked: BTreeSet<NodeId> = live.iter().copied().filter(|&p| p != self.id).collect();
        for &p in &asked {
            self.send(p, PeerMsg::Prepare { epoch });
        }
        let wait = self.lease_wait(self.id);
        // Its lease on the view it leaves: the current one, or, when a change follows a change
        // (a Stale, a timeout), the one the first of them lapsed.
        let own_lease = self.leases.until.max(self.leases.held_until);
        // The leader stores its mark after its Prepares are out (the run loop lets the links
        // write them first), so that its sync and the members' run at once; it commits only
        // once stored (`commit`). A leader that crashes before has committed nothing in this
        // view, and the members that answered stored it: a later view is numbered above it.
        let held = self.freeze(epoch);
        let mut states = BTreeMap::new();
        states.insert(self.id, (self.last_view, held));
        self.change = Some(Change {
            epoch,
            asked,
            states,
            open_after: Instant::now() + wait,
            own_lease,
            awaiting: None,
            members: Vec::new(),
            deadline: Instant::now() + self.timeouts().heartbeat_timeout,
            roster: self.proposal.as_ref().map(|p| p.nodes.clone()),
        });
        self.maybe_commit();
    }

    pub(super) fn on_state(
        &mut self,
        from: NodeId,
        epoch: Epoch,
        view: Epoch,
        held: Vec<(String, u64)>,
        wait_ms: u64,
    ) {
        if let Some(c) = &mut self.change {
            if c.epoch == epoch && c.awaiting.is_none() {
                c.states.insert(from, (view, held));
                // An honest wait is at most one lease time.
                let wait = Duration::from_millis(wait_ms)
                    .min(self.cluster.file.timeouts.heartbeat_timeout);
                c.open_after = c.open_after.max(Instant::now() + wait);
            }
        }
        self.maybe_commit();
    }

    pub(super) fn on_stale(&mut self, from: NodeId, seen: Epoch) {
        if !self.epochs.plausible(seen) {
            self.drop_peer_msg(
                from,
                format_args!("{}", implausible("Stale", seen, &self.epochs)),
            );
            return;
        }
        self.epochs.claim(from, seen);
        if seen <= self.epochs.seen {
            return;
        }
        if !self.epochs.raise(seen) {
            // It sits out (epochs): no view change above an epoch it could not store.
            self.change = None;
            return;
        }
        if let Some(c) = self.change.take() {
            info!(node = %self.id, epoch = c.epoch, seen, "view change refused as stale; starting above the epoch seen");
            self.force_change = true;
            self.lead();
        }
    }

    pub(super) fn maybe_commit(&mut self) {
        let ready = self.change.as_ref().is_some_and(|c| {
            c.awaiting.is_none() && c.asked.iter().all(|p| c.states.contains_key(p))
        });
        if ready {
            self.commit();
        }
    }

    pub(super) fn commit(&mut self) {
        if self.change.is_none() {
            return;
        }
        // The view's epoch is on disk here before anyone is told to commit it; a leader that
        // cannot store it commits nothing (it sits out: epochs).
        if !self.epochs.store() {
            self.change = None;
            return;
        }
        // A membership change commits with this view if a majority of the current roster
        // answered: the members below are then counted over the new roster (`roster`).
        let carried = self.change.as_mut().and_then(|c| {
            c.roster
                .take()
                .map(|nodes| (c.epoch, nodes, c.states.keys().copied().collect()))
        });
        if let Some((epoch, nodes, answered)) = carried {
            self.commit_roster(epoch, nodes, answered);
        }
        let Some(change) = self.change.as_mut() else {
            return;
        };
        let epoch = change.epoch;
        let members: Vec<NodeId> = self
            .cluster
            .peers
            .ids()
            .iter()
            .copied()
            .filter(|p| change.states.contains_key(p))
            .collect();
        let peers = Peers::new(members.clone()).expect("a subset of the cluster's ids");
        let params = view_params(&self.params, self.id, None);
        let usable = (self.mutex.validate)(&params, &peers);
        // The holder with the highest token keeps each lock, among the nodes that were in the
        // latest view: a node that missed a view (paused, cut off) was left out of it while the
        // lock was handed on, so its holds are stale. Every member competes (central's
        // coordinator through its local client, `colocated`), so any member may keep a lock.
        let latest = change.states.values().map(|(v, _)| *v).max().unwrap_or(0);
        let mut best: BTreeMap<String, (u64, NodeId)> = BTreeMap::new();
        for (&node, (view, held)) in &change.states {
            if usable.is_err() || *view != latest {
                continue;
            }
            for (name, token) in held {
                let e = best.entry(name.clone()).or_insert((*token, node));
                if *token > e.0 {
                    *e = (*token, node);
                }
            }
        }
        // A hold this commit drops (its node was in an earlier view than the latest, or the
        // view is unusable) is revoked, and its lock may be granted anew in this view. Its
        // holder's lease may have come from this very leader, whose members' leases outlast
        // its freeze (they were counted from answers it gave before): then the view opens only
        // once this leader's own former lease, which bounds them, has run out. Before, a change
        // under the same leader waited for nothing, and the Jepsen-style suite saw an `elect`
        // leader's command run 256 ms into its successor's (central, a split healing).
        let drops = change.states.iter().any(|(node, (view, held))| {
            !held.is_empty()
                && (usable.is_err()
                    || *view != latest
                    || held
                        .iter()
                        .any(|(name, _)| best.get(name).is_some_and(|&(_, n)| n != *node)))
        });
        if drops {
            if let Some(own) = change.own_lease {
                change.open_after = change.open_after.max(own);
            }
        }
        let holders: Vec<(String, NodeId)> =
            best.into_iter().map(|(name, (_, n))| (name, n)).collect();
        // A node left out may still hold a lease this leader gave it: open after it ran out.
        let lease = self.cluster.file.timeouts.heartbeat_timeout;
        for (node, &at) in &self.leases.leased_to {
            if !members.contains(node) {
                change.open_after = change.open_after.max(at + lease);
            }
        }
        change.awaiting = Some(holders.iter().map(|(n, _)| n.clone()).collect());
        change.members = members.clone();
        change.deadline = Instant::now() + self.cluster.file.timeouts.heartbeat_timeout * 2;
        info!(node = %self.id, epoch, members = ?members, holders = ?holders, "view change: commit");
        let msg = PeerMsg::Commit {
            epoch,
            members: members.clone(),
            holders: holders.clone(),
        };
        // The roster travels ahead of the commit on each (FIFO) link: a member adopts a new
        // one before it commits the view counted over it.
        let roster = self.roster_msg();
        for &p in &members {
            self.send(p, roster.clone());
            self.send(p, msg.clone());
        }
        self.on_commit(self.id, epoch, members, holders);
        self.maybe_open();
    }

    pub(super) fn on_reacquired(&mut self, epoch: Epoch, name: String) {
        if let Some(c) = &mut self.change {
            if c.epoch == epoch {
                if let Some(a) = &mut c.awaiting {
                    a.remove(&name);
                }
            }
        }
        self.maybe_open();
    }

    pub(super) fn maybe_open(&mut self) {
        let now = Instant::now();
        let done = self.change.as_ref().is_some_and(|c| {
            c.awaiting.as_ref().is_some_and(|a| a.is_empty()) && now >= c.open_after
        });
        if !done {
            return;
        }
        let c = self.change.take().expect("checked");
        info!(node = %self.id, epoch = c.epoch, "view change: open");
        for &p in &c.members {
            self.send(p, PeerMsg::Open { epoch: c.epoch });
        }
        self.on_open(c.epoch);
    }

    /// Stops granting for the view being replaced and returns the locks local clients hold.
    /// The epoch is raised in memory; the caller stores it (`EpochMark::store`) before it acts
    /// on it.
    pub(super) fn freeze(&mut self, epoch: Epoch) -> Vec<(String, u64)> {
        self.epochs.raise_later(epoch);
        self.view = None;
        self.leases.lapse();
        let (freed, held) = self.locks.reset();
        if freed > 0 {
            debug!(node = %self.id, freed, "idle lock names freed");
        }
        self.timers.cancel_mutex();
        self.future
            .retain(|(_, m)| matches!(m, PeerMsg::Mutex { epoch: e, .. } if *e >= epoch));
        held
    }

    pub(super) fn on_prepare(&mut self, from: NodeId, epoch: Epoch) {
        if epoch & 1023 != from.0 & 1023 {
            warn!(node = %self.id, from = %from, epoch, "a prepare whose epoch names another leader; ignored");
            return;
        }
        if !self.epochs.plausible(epoch) {
            self.drop_peer_msg(
                from,
                format_args!("{}", implausible("Prepare", epoch, &self.epochs)),
            );
            return;
        }
        if epoch <= self.epochs.seen {
            debug!(node = %self.id, epoch, "stale prepare refused");
            self.send(
                from,
                PeerMsg::Stale {
                    seen: self.epochs.seen,
                },
            );
            return;
        }
        if self.change.is_some() {
            info!(node = %self.id, epoch, "a newer view change supersedes ours");
            self.change = None;
        }
        let wait_ms = self.lease_wait(from).as_millis() as u64;
        let held = self.freeze(epoch);
        if !self.epochs.store() {
            // Not answered: it sits out (epochs), and the leader goes on without it.
            return;
        }
        debug!(node = %self.id, epoch, leader = %from, "view change prepared");
        let view = self.last_view;
        // This node's roster ahead of its answer (the same FIFO link): a leader that missed a
        // membership change another leader committed learns it before it commits its view.
        let roster = self.roster_msg();
        self.send(from, roster);
        self.send(
            from,
            PeerMsg::State {
                epoch,
                view,
                held,
                wait_ms,
            },
        );
    }

    pub(super) fn on_commit(
        &mut self,
        from: NodeId,
        epoch: Epoch,
        members: Vec<NodeId>,
        holders: Vec<(String, NodeId)>,
    ) {
        if epoch < self.epochs.seen
            || self.view.as_ref().is_some_and(|v| v.epoch >= epoch)
            || epoch & 1023 != from.0 & 1023
        {
            return;
        }
        if !self.epochs.plausible(epoch) {
            self.drop_peer_msg(
                from,
                format_args!("{}", implausible("Commit", epoch, &self.epochs)),
            );
            return;
        }
        if epoch > self.epochs.seen {
            // The Prepare never arrived here: freeze now.
            let _ = self.freeze(epoch);
            if !self.epochs.store() {
                return;
            }
        }
        let me = self.id;
        let Ok(peers) = Peers::new(members.clone()) else {
            warn!(node = %me, "commit with a bad member list ignored");
            return;
        };
        if !peers.contains(me) {
            info!(node = %me, epoch, "not a member of the new view; waiting to be let in");
            self.revoke_all("this node is not a member of the new view");
            return;
        }
        let params = view_params(&self.params, from, None);
        let usable = (self.mutex.validate)(&params, &peers).map_err(|e| e.to_string());
        let holders: HashMap<String, NodeId> = holders.into_iter().collect();
        info!(node = %me, epoch, leader = %from, members = ?members, "view committed");
        self.wedged = None;
        self.last_view = epoch;
        self.view = Some(View {
            epoch,
            leader: from,
            members: peers,
            open: false,
            holders: holders.clone(),
            usable: usable.clone(),
            committed_at: Instant::now(),
        });
        if let Err(e) = &usable {
            warn!(node = %me, epoch, "the mutex algorithm cannot run in this view: {e}");
        }
        for name in self.locks.names() {
            let has_holder = self.locks.by_name[&name].holder.is_some();
            if !has_holder {
                continue;
            }
            if usable.is_ok() && holders.get(&name) == Some(&me) {
                self.reacquire(&name);
            } else {
                self.revoke(&name, "another holder was kept in the new view");
            }
        }
        // Holds this node reported but no longer has (the client unlocked or left during the
        // change): nothing to re-acquire, so say so at once.
        for (name, &node) in &holders {
            let held = self
                .locks
                .by_name
                .get(name)
                .is_some_and(|l| l.holder.is_some());
            if node == me && !held {
                if from == me {
                    self.on_reacquired(epoch, name.clone());
                } else {
                    self.send(
                        from,
                        PeerMsg::Reacquired {
                            epoch,
                            name: name.clone(),
                        },
                    );
                }
            }
        }
        // Messages of this view that arrived before its commit.
        let future = std::mem::take(&mut self.future);
        for (from, msg) in future {
            match &msg {
                PeerMsg::Mutex { epoch: e, .. } if *e == epoch => self.on_mutex_msg(from, msg),
                PeerMsg::Mutex { epoch: e, .. } if *e > epoch => self.future.push((from, msg)),
                _ => {}
            }
        }
        // Ask for the new view's lease now rather than at the next tick: the view opens
        // sooner for clients (a leader's Confirm follows its Commit on every link).
        self.renew_leases(Instant::now());
    }

    pub(super) fn on_open(&mut self, epoch: Epoch) {
        let Some(view) = &mut self.view else { return };
        if view.epoch != epoch || view.open {
            return;
        }
        view.open = true;
        info!(node = %self.id, epoch, "view open");
        for name in self.locks.names() {
            self.pump(&name);
        }
        self.unpark();
    }
}
