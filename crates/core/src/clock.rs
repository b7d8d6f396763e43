//! Logical clocks as plain types: Lamport scalar clocks and vector clocks.
//!
//! Lamport (seed 003, ORACLES.md): increment before every event; on receive
//! `C := max(C, C_msg) + 1`. `a -> b` implies `C(a) < C(b)`, not the converse; the pair
//! `(C, id)` orders all events totally. Vector clocks: on receive take the componentwise maximum,
//! then increment the own entry; `a -> b` iff `V(a) < V(b)`.

use crate::NodeId;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A Lamport logical clock.
///
/// ```
/// use distsync_core::LamportClock;
/// let mut p = LamportClock::default();
/// let mut q = LamportClock::default();
/// let sent = p.tick();            // p sends at 1
/// q.tick(); q.tick(); q.tick();   // q is at 3
/// assert_eq!(q.observe(sent), 4); // max(3, 1) + 1
/// assert_eq!(p.observe(q.value()), 5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LamportClock(u64);

impl LamportClock {
    /// A clock starting at `value`.
    pub fn starting_at(value: u64) -> LamportClock {
        LamportClock(value)
    }

    /// The current value.
    pub fn value(&self) -> u64 {
        self.0
    }

    /// A local or send event: increment, and return the event's timestamp.
    pub fn tick(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }

    /// A receive event of a message stamped `remote`: `C := max(C, remote) + 1`.
    #[inline]
    pub fn observe(&mut self, remote: u64) -> u64 {
        self.0 = self.0.max(remote) + 1;
        self.0
    }

    /// The total-order stamp `(C, id)` of the current value.
    pub fn stamp(&self, id: NodeId) -> Stamp {
        Stamp {
            time: self.0,
            node: id,
        }
    }
}

/// A Lamport timestamp with the process id that breaks ties: ordered by `(time, node)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Stamp {
    /// The Lamport clock value.
    pub time: u64,
    /// The process that took it.
    pub node: NodeId,
}

/// How two events relate causally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Causality {
    /// The first happened before the second.
    Before,
    /// The second happened before the first.
    After,
    /// They are the same event (equal vectors).
    Equal,
    /// Neither happened before the other.
    Concurrent,
}

/// A vector clock over `n` processes, indexed by membership position.
///
/// ```
/// use distsync_core::{Causality, VectorClock};
/// let mut a = VectorClock::new(2);
/// let mut b = VectorClock::new(2);
/// a.tick(0);                       // a sends m: [1, 0]
/// let m = a.clone();
/// b.tick(1);                       // b does something: [0, 1]
/// assert_eq!(m.compare(&b), Causality::Concurrent);
/// b.observe(1, &m);                // b receives m: [1, 2]
/// assert_eq!(m.compare(&b), Causality::Before);
/// assert!(m.happened_before(&b));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VectorClock(Vec<u64>);

impl VectorClock {
    /// All zeros for `n` processes.
    pub fn new(n: usize) -> VectorClock {
        VectorClock(vec![0; n])
    }

    /// A clock with the given entries.
    pub fn from_entries(entries: Vec<u64>) -> VectorClock {
        VectorClock(entries)
    }

    /// The entries, by membership position.
    pub fn entries(&self) -> &[u64] {
        &self.0
    }

    /// The entry of position `i`.
    pub fn get(&self, i: usize) -> u64 {
        self.0.get(i).copied().unwrap_or(0)
    }

    /// A local or send event at position `i`.
    pub fn tick(&mut self, i: usize) {
        self.grow(i + 1);
        self.0[i] += 1;
    }

    /// Componentwise maximum with `other`.
    pub fn merge(&mut self, other: &VectorClock) {
        self.grow(other.0.len());
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine = (*mine).max(*theirs);
        }
    }

    /// A receive event at position `i` of a message stamped `other`: merge, then tick.
    pub fn observe(&mut self, i: usize, other: &VectorClock) {
        self.merge(other);
        self.tick(i);
    }

    /// How the event stamped `self` relates to the event stamped `other`.
    pub fn compare(&self, other: &VectorClock) -> Causality {
        let n = self.0.len().max(other.0.len());
        let (mut less, mut greater) = (false, false);
        for i in 0..n {
            match self.get(i).cmp(&other.get(i)) {
                Ordering::Less => less = true,
                Ordering::Greater => greater = true,
                Ordering::Equal => {}
            }
        }
        match (less, greater) {
            (false, false) => Causality::Equal,
            (true, false) => Causality::Before,
            (false, true) => Causality::After,
            (true, true) => Causality::Concurrent,
        }
    }

    /// `self -> other`: every entry at most, and one strictly less.
    pub fn happened_before(&self, other: &VectorClock) -> bool {
        self.compare(other) == Causality::Before
    }

    /// Neither happened before the other.
    pub fn concurrent(&self, other: &VectorClock) -> bool {
        self.compare(other) == Causality::Concurrent
    }

    fn grow(&mut self, n: usize) {
        if self.0.len() < n {
            self.0.resize(n, 0);
        }
    }
}

impl PartialOrd for VectorClock {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.compare(other) {
            Causality::Before => Some(Ordering::Less),
            Causality::After => Some(Ordering::Greater),
            Causality::Equal => Some(Ordering::Equal),
            Causality::Concurrent => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lamport_rule_corrects_clocks_ticking_at_6_8_10() {
        // Tanenbaum's figure (seed 003, "Lamport's algorithm corrects the clocks"): P1, P2 and
        // P3 tick by 6, 8 and 10. m1 leaves P1 at 6 and reaches P2 at 16; m2 leaves P2 at 24 and
        // reaches P3 at 40; m3 leaves P3 at 60 but reaches P2 at 56, and m4 leaves P2 one tick
        // later and reaches P1 at 54. The rule C := max(C, C_msg + 1) lifts both late receivers.
        let receive = |local: u64, sent: u64| local.max(sent + 1);
        assert_eq!(receive(16, 6), 16, "m1 needs no correction");
        assert_eq!(receive(40, 24), 40, "m2 needs no correction");
        let p2 = receive(56, 60);
        assert_eq!(p2, 61, "m3 lifts P2 from 56 to 61");
        let m4_sent = p2 + 8;
        assert_eq!(receive(54, m4_sent), 70, "m4 lifts P1 from 54 to 70");
        // LamportClock implements the same rule (it counts events, so it adds one on receipt).
        let mut p2_clock = LamportClock::starting_at(56);
        assert_eq!(p2_clock.observe(60), 61);
    }

    #[test]
    fn happened_before_is_a_strict_partial_order() {
        let a = VectorClock::from_entries(vec![1, 0, 0]);
        let b = VectorClock::from_entries(vec![2, 1, 0]);
        let c = VectorClock::from_entries(vec![0, 0, 1]);
        assert!(a < b);
        assert_eq!(b.partial_cmp(&a), Some(std::cmp::Ordering::Greater));
        assert_eq!(a.partial_cmp(&c), None);
        assert_eq!(a.compare(&a.clone()), Causality::Equal);
        assert_eq!(b.compare(&a), Causality::After);
        assert!(a.concurrent(&c) && c.concurrent(&b));
    }

    #[test]
    fn stamps_order_by_time_then_id() {
        let s = |t, n| Stamp {
            time: t,
            node: NodeId(n),
        };
        assert!(s(3, 9) < s(4, 0));
        assert!(s(4, 1) < s(4, 2));
    }
}
