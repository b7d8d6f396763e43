//! Leases: a node hands the critical section to a client only while its lease on the view runs.
//! A member asks its leader every tick (`Renew`) and counts the lease from when it *sent* the
//! request; the leader answers only for its current view and while its own lease runs, which it
//! gets by a round (`Confirm`) answered by every member. A view change opens only after every
//! lease of the previous view has run out. So a node paused or cut off long enough to be left
//! out resumes with a lapsed lease: it holds its grants back and asks to rejoin. Only the
//! leader of a view that holds a majority of the cluster's nodes gets a lease
//! ([`Node::quorate`]), so of two disjoint views (a partition) at most one grants.

use super::Node;
use crate::wire::{Epoch, PeerMsg};
use distsync_core::NodeId;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;
use tracing::debug;

/// How many recent lease requests, confirmation rounds and early requests are kept.
const KEPT: usize = 64;

/// A node's lease on its view, and what it has asked and been asked to extend leases.
#[derive(Default)]
pub(super) struct Leases {
    /// Until when this node may grant in its view (see "Leases" in docs/net.md).
    pub until: Option<Instant>,
    /// The end of the latest lease this node held, kept when a view change lapses it: the
    /// leases a leader gave its members end no later ([`Node::begin_change`] waits for it when
    /// its commit drops a hold).
    pub held_until: Option<Instant>,
    /// The sequence number of the last request or round.
    seq: u64,
    /// A member's recent lease requests to its leader: (sequence number, when sent).
    asks: VecDeque<(u64, Instant)>,
    /// The leader's recent confirmation rounds: (sequence number, when sent, who answered).
    rounds: VecDeque<(u64, Instant, BTreeSet<NodeId>)>,
    /// The leader: when it last extended each node's lease.
    pub leased_to: HashMap<NodeId, Instant>,
    /// A member: when it last confirmed each leader's round (that leader's lease can last
    /// until then + the lease time).
    confirmed: HashMap<NodeId, Instant>,
    /// The leader: lease requests of its view that came before its own lease ran, answered
    /// when it does.
    early_renews: Vec<(NodeId, Epoch, u64)>,
}

impl Leases {
    /// Whether the lease runs now.
    pub fn valid(&self) -> bool {
        self.until.is_some_and(|t| Instant::now() < t)
    }

    /// Extends the lease to `until` (never shortens it); whether it runs now and did not before.
    fn extend(&mut self, until: Instant) -> bool {
        let was = self.valid();
        self.until = Some(self.until.map_or(until, |t| t.max(until)));
        !was && self.valid()
    }

    /// The view is being replaced: its lease ends, and with it the requests and rounds for it.
    pub fn lapse(&mut self) {
        self.held_until = self.held_until.max(self.until);
        self.until = None;
        self.asks.clear();
        self.rounds.clear();
        self.early_renews.clear();
    }

    /// A new sequence number for a request or a round.
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn remember<T>(list: &mut VecDeque<T>, item: T) {
        list.push_back(item);
        if list.len() > KEPT {
            list.pop_front();
        }
    }

    /// Answers `from` for round `seq`; the time the round was sent once every one of `need`
    /// members has answered it.
    fn answered(&mut self, seq: u64, from: NodeId, need: usize) -> Option<Instant> {
        let round = self.rounds.iter_mut().find(|r| r.0 == seq)?;
        round.2.insert(from);
        (round.2.len() >= need).then_some(round.1)
    }

    /// How long a lease confirmed to a leader other than `new_leader`, lasting `lease` from its
    /// confirmation, may still run.
    fn wait(&self, new_leader: NodeId, lease: Duration) -> Duration {
        let now = Instant::now();
        self.confirmed
            .iter()
            .filter(|(&l, _)| l != new_leader)
            .map(|(_, &t)| (t + lease).saturating_duration_since(now))
            .max()
            .unwrap_or_default()
    }
}

impl Node {
    /// How long a lease runs: the failure timeout. The leader takes a member for crashed only
    /// after that much silence, so a lease it gave has run out by then anyway; the view change
    /// also waits for it explicitly (`open_after`).
    pub(super) fn lease_time(&self) -> Duration {
        self.timeouts().heartbeat_timeout
    }

    /// Whether a view of `members` nodes is a majority of the cluster's: only such a view's
    /// leader gets a lease, so only such a view grants. Two disjoint views cannot both be
    /// majorities: the minority side of a partition elects a leader and commits a view of its
    /// own, but grants nothing in it (before, both sides granted while the partition lasted,
    /// and after it healed until their views merged, to clients that reached both).
    pub(super) fn quorate(&self, members: usize) -> bool {
        members >= self.quorum
    }

    fn extend_lease(&mut self, until: Instant) {
        if self.leases.extend(until) {
            debug!(node = %self.id, "lease on the view runs");
        }
    }

    /// Every tick: a member asks its leader to renew its lease; the leader asks every member
    /// to confirm the view (its own lease).
    pub(super) fn renew_leases(&mut self, now: Instant) {
        let Some(view) = &self.view else { return };
        let (epoch, leader) = (view.epoch, view.leader);
        let others: Vec<NodeId> = view
            .members
            .ids()
            .iter()
            .copied()
            .filter(|&m| m != self.id)
            .collect();
        if leader == self.id && !self.quorate(others.len() + 1) {
            // A minority's view: no lease for its leader, and so none for its members.
            return;
        }
        let seq = self.leases.next_seq();
        if leader == self.id {
            if others.is_empty() {
                let l = self.lease_time();
                self.extend_lease(now + l);
                return;
            }
            for m in others {
                self.send(m, PeerMsg::Confirm { epoch, seq });
            }
            Leases::remember(&mut self.leases.rounds, (seq, now, BTreeSet::new()));
        } else {
            self.send(leader, PeerMsg::Renew { epoch, seq });
            Leases::remember(&mut self.leases.asks, (seq, now));
        }
    }

    pub(super) fn on_renew(&mut self, from: NodeId, epoch: Epoch, seq: u64) {
        let Some(view) = &self.view else { return };
        if view.epoch != epoch || view.leader != self.id || !view.members.contains(from) {
            return;
        }
        let now = Instant::now();
        let Some(until) = self.leases.until.filter(|&u| now < u) else {
            // No lease of its own yet (a view just committed): answer once it has one, as if
            // the request had been delayed on the way. The member counts its lease from when
            // it sent the request, so a late answer only shortens it.
            if self.leases.early_renews.len() < KEPT {
                self.leases.early_renews.push((from, epoch, seq));
            }
            return;
        };
        self.leases.leased_to.insert(from, now);
        let ms = until.duration_since(now).as_millis() as u64;
        self.send(from, PeerMsg::Renewed { epoch, seq, ms });
    }

    pub(super) fn on_renewed(&mut self, from: NodeId, epoch: Epoch, seq: u64, ms: u64) {
        let Some(view) = &self.view else { return };
        if view.epoch != epoch || view.leader != from {
            return;
        }
        let Some(&(_, sent)) = self.leases.asks.iter().find(|(s, _)| *s == seq) else {
            return;
        };
        let d = Duration::from_millis(ms).min(self.lease_time());
        self.extend_lease(sent + d);
        self.grant_pending();
    }

    pub(super) fn on_confirm(&mut self, from: NodeId, epoch: Epoch, seq: u64) {
        let Some(view) = &self.view else { return };
        if view.epoch != epoch || view.leader != from {
            return;
        }
        self.leases.confirmed.insert(from, Instant::now());
        self.send(from, PeerMsg::Confirmed { epoch, seq });
    }

    pub(super) fn on_confirmed(&mut self, from: NodeId, epoch: Epoch, seq: u64) {
        let Some(view) = &self.view else { return };
        if view.epoch != epoch || view.leader != self.id {
            return;
        }
        let need = view.members.len() - 1;
        if !self.quorate(view.members.len()) {
            return;
        }
        if let Some(sent) = self.leases.answered(seq, from, need) {
            let until = sent + self.lease_time();
            self.extend_lease(until);
            for (from, epoch, seq) in std::mem::take(&mut self.leases.early_renews) {
                self.on_renew(from, epoch, seq);
            }
            self.grant_pending();
        }
    }

    /// How long a lease this node confirmed to a leader other than `new_leader` may still run,
    /// and, asked by another leader, a lease it gave as the leader of an earlier view to a node
    /// other than `new_leader` (that node may be left out of the new view and still grant
    /// until its lease runs out: before, nobody counted those, and a new leader's view of a
    /// majority without that node opened at once). (The new leader's own earlier lease ended
    /// when it froze its view, and the leases it gave to nodes it leaves out are in its
    /// `leased_to`: its own change waits for those at its commit.)
    pub(super) fn lease_wait(&self, new_leader: NodeId) -> Duration {
        let lease = self.lease_time();
        let confirmed = self.leases.wait(new_leader, lease);
        if new_leader == self.id {
            return confirmed;
        }
        let now = Instant::now();
        let given = self
            .leases
            .leased_to
            .iter()
            .filter(|(&n, _)| n != new_leader)
            .map(|(_, &at)| (at + lease).saturating_duration_since(now))
            .max()
            .unwrap_or_default();
        confirmed.max(given)
    }
}
