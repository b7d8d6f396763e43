//! The open sessions: a map behind a mutex, capped in number. When the cap is reached the session
//! used least recently is closed to make room (a learner's old tab then gets "no such session"
//! and the page starts a new one from its URL).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most sessions kept open at once.
pub const MAX_SESSIONS: usize = 64;

/// One open session and what it was made from.
pub struct Open<S> {
    /// The stepping engine.
    pub session: S,
    /// The scenario TOML it was made from.
    pub toml: String,
}

struct Slot<S> {
    open: Arc<Mutex<Open<S>>>,
    last_used: u64,
}

/// The sessions, by id.
pub struct Sessions<S> {
    next_id: u64,
    clock: u64,
    map: HashMap<u64, Slot<S>>,
    cap: usize,
}

impl<S> Sessions<S> {
    /// An empty store holding at most `cap` sessions.
    pub fn new(cap: usize) -> Self {
        Sessions {
            next_id: 1,
            clock: 0,
            map: HashMap::new(),
            cap: cap.max(1),
        }
    }

    /// Adds a session, closing the least recently used one if the store is full; returns its id.
    pub fn insert(&mut self, open: Open<S>) -> u64 {
        if self.map.len() >= self.cap {
            if let Some((&oldest, _)) = self.map.iter().min_by_key(|(_, s)| s.last_used) {
                self.map.remove(&oldest);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.clock += 1;
        self.map.insert(
            id,
            Slot {
                open: Arc::new(Mutex::new(open)),
                last_used: self.clock,
            },
        );
        id
    }

    /// The session `id`, marked as used now.
    pub fn get(&mut self, id: u64) -> Option<Arc<Mutex<Open<S>>>> {
        self.clock += 1;
        let clock = self.clock;
        self.map.get_mut(&id).map(|slot| {
            slot.last_used = clock;
            slot.open.clone()
        })
    }

    /// Closes session `id`; whether it was open.
    pub fn remove(&mut self, id: u64) -> bool {
        self.map.remove(&id).is_some()
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(n: u32) -> Open<u32> {
        Open {
            session: n,
            toml: String::new(),
        }
    }

    #[test]
    fn the_least_recently_used_session_is_closed_at_the_cap() {
        let mut s = Sessions::new(2);
        let a = s.insert(open(1));
        let b = s.insert(open(2));
        assert!(s.get(a).is_some()); // a is now more recent than b
        let c = s.insert(open(3));
        assert_eq!(s.len(), 2);
        assert!(s.get(b).is_none(), "b was the least recently used");
        assert!(s.get(a).is_some());
        assert_eq!(s.get(c).unwrap().lock().unwrap().session, 3);
    }
}
