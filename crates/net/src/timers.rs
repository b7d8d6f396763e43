//! The algorithms' timers as deadlines on the OS monotonic clock, keyed by name.
//!
//! Setting a timer that is pending moves its deadline; cancelling forgets it. Each set takes a
//! new generation, and a queued expiry whose generation is no longer the key's current one is
//! stale and skipped, so the node needs one `sleep_until` for the earliest deadline and no task
//! per timer.

use crate::wire::Epoch;
use std::collections::{BTreeMap, HashMap};
use tokio::time::Instant;

/// Whose timer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TimerKey {
    /// The election instance's timer with this encoding.
    Election(Vec<u8>),
    /// Lock `name`'s instance in view `epoch`, timer with this encoding.
    Mutex {
        /// The view.
        epoch: Epoch,
        /// The lock.
        name: String,
        /// The timer's encoding.
        key: Vec<u8>,
    },
}

/// Pending timers.
#[derive(Default)]
pub struct Timers {
    current: HashMap<TimerKey, u64>,
    queue: BTreeMap<(Instant, u64), TimerKey>,
    generation: u64,
}

impl Timers {
    /// Fires `key` at `at`, replacing a pending one.
    pub fn set(&mut self, key: TimerKey, at: Instant) {
        self.generation += 1;
        self.current.insert(key.clone(), self.generation);
        self.queue.insert((at, self.generation), key);
    }

    /// Forgets `key`.
    pub fn cancel(&mut self, key: &TimerKey) {
        self.current.remove(key);
    }

    /// Forgets every timer of the mutual-exclusion instances (at a view change).
    pub fn cancel_mutex(&mut self) {
        self.current
            .retain(|k, _| matches!(k, TimerKey::Election(_)));
    }

    /// Forgets every timer of the election instance (rebuilt over a new roster).
    pub fn cancel_election(&mut self) {
        self.current
            .retain(|k, _| !matches!(k, TimerKey::Election(_)));
    }

    /// The earliest queued deadline (possibly stale: popping it then yields nothing).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.keys().next().map(|(at, _)| *at)
    }

    /// Removes and returns the timers due at `now`, earliest first.
    pub fn pop_due(&mut self, now: Instant) -> Vec<TimerKey> {
        let mut due = Vec::new();
        while let Some(entry) = self.queue.first_entry() {
            let (at, generation) = *entry.key();
            if at > now {
                break;
            }
            let key = entry.remove();
            if self.current.get(&key) == Some(&generation) {
                self.current.remove(&key);
                due.push(key);
            }
        }
        due
    }

    /// How many timers are pending.
    pub fn len(&self) -> usize {
        self.current.len()
    }

    /// Whether none is pending.
    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn set_moves_cancel_forgets_due_in_order() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let a = TimerKey::Election(vec![1]);
        let b = TimerKey::Election(vec![2]);
        let c = TimerKey::Mutex {
            epoch: 1,
            name: "x".into(),
            key: vec![3],
        };
        let mut t = Timers::default();
        t.set(a.clone(), ms(10));
        t.set(b.clone(), ms(5));
        t.set(c.clone(), ms(7));
        t.set(a.clone(), ms(20)); // moved
        t.cancel(&b);
        assert_eq!(t.len(), 2);
        assert_eq!(t.pop_due(ms(15)), vec![c.clone()]);
        assert_eq!(t.pop_due(ms(15)), vec![]);
        assert_eq!(t.pop_due(ms(25)), vec![a.clone()]);
        assert!(t.is_empty());
        t.set(c.clone(), ms(30));
        t.set(a.clone(), ms(30));
        t.cancel_mutex();
        assert_eq!(t.pop_due(ms(40)), vec![a]);
    }
}
