//! The open sessions: a map behind a mutex, capped in number overall and per client.
//!
//! A session's id is 128 random bits (32 hex digits) from ChaCha20, so it cannot be guessed, and
//! it belongs to the client that made it: the page sends a secret of its own with every request
//! (`x-distsync-client`), and a request naming another client's session is refused. A client
//! opening more than [`MAX_CLIENT_SESSIONS`] sessions closes its own least recently used one;
//! when [`MAX_SESSIONS`] are open in all, the least recently used session is closed if nobody
//! has used it for [`IDLE_CLOSE`] (a page closed without saying so), and otherwise a new one is
//! refused ("the server is full"): no client's run in use is ever closed by another client.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The clock of idle sessions (none in the browser, where `std::time::Instant` panics, and where
/// one page's engine never fills up).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
type Instant = std::time::Instant;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn now() -> Option<Instant> {
    Some(Instant::now())
}
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[derive(Clone, Copy)]
struct Instant;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl Instant {
    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }
}
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn now() -> Option<Instant> {
    None
}

/// How long a session must have gone unused before a full store may close it for a new one.
pub const IDLE_CLOSE: Duration = Duration::from_secs(30 * 60);

/// The most sessions kept open at once, over all clients.
pub const MAX_SESSIONS: usize = 256;

/// The most sessions one client (one page) keeps open; its least recently used one is closed
/// when it opens another.
pub const MAX_CLIENT_SESSIONS: usize = 2;

/// One open session and what it was made from.
pub struct Open<S> {
    /// The stepping engine.
    pub session: S,
    /// The scenario TOML it was made from.
    pub toml: String,
    /// Branching history: the futures left behind by going back and choosing differently,
    /// each as the whole list of choices it recorded.
    pub branches: Vec<Vec<distsync_sim::session::Choice>>,
    /// The causes of the first violations, with the session version they were read at.
    pub causes: Option<(u64, Vec<Option<crate::cause::Cause>>)>,
    /// The run's log so far, kept while it has violations to explain: a step forward only
    /// appends to it (its new lines are read, not the whole trace again); a step back empties
    /// it.
    pub log: Vec<distsync_sim::session::LogEntry>,
}

impl<S> Open<S> {
    /// A session just opened, without branches.
    pub fn new(session: S, toml: String) -> Open<S> {
        Open {
            session,
            toml,
            branches: Vec::new(),
            causes: None,
            log: Vec::new(),
        }
    }
}

struct Slot<S> {
    open: Arc<Mutex<Open<S>>>,
    owner: String,
    last_used: u64,
    used_at: Option<Instant>,
}

/// Why a session could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No session has this id (closed, or never made).
    Missing,
    /// The session belongs to another client.
    Foreign,
    /// [`MAX_SESSIONS`] are open: no room for another.
    Full,
}

/// The sessions, by id.
pub struct Sessions<S> {
    rng: ChaCha20Rng,
    clock: u64,
    map: HashMap<String, Slot<S>>,
    cap: usize,
    per_client: usize,
    idle: Duration,
}

impl<S> Sessions<S> {
    /// An empty store holding at most `cap` sessions, `per_client` of them for one client, with
    /// ids drawn from ChaCha20 seeded with `seed`.
    pub fn new(cap: usize, per_client: usize, seed: [u8; 32]) -> Self {
        Sessions {
            rng: ChaCha20Rng::from_seed(seed),
            clock: 0,
            map: HashMap::new(),
            cap: cap.max(1),
            per_client: per_client.max(1),
            idle: IDLE_CLOSE,
        }
    }

    /// The same store, closing sessions idle for `idle` (instead of [`IDLE_CLOSE`]) when full.
    pub fn with_idle(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// The least recently used session, if it has been idle for `self.idle`.
    fn idle_one(&self) -> Option<String> {
        let (id, slot) = self.map.iter().min_by_key(|(_, s)| s.last_used)?;
        let idle = slot.used_at?.elapsed() >= self.idle;
        idle.then(|| id.clone())
    }

    /// A fresh id: 128 random bits as 32 hex digits.
    fn fresh_id(&mut self) -> String {
        loop {
            let mut bytes = [0u8; 16];
            self.rng.fill_bytes(&mut bytes);
            let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            if !self.map.contains_key(&id) {
                return id;
            }
        }
    }

    /// Adds a session owned by `owner`, first closing that owner's least recently used one if
    /// it has [`MAX_CLIENT_SESSIONS`] open; its id, or [`Refusal::Full`].
    pub fn insert(&mut self, owner: &str, open: Open<S>) -> Result<String, Refusal> {
        let mine: Vec<(&String, u64)> = self
            .map
            .iter()
            .filter(|(_, s)| s.owner == owner)
            .map(|(id, s)| (id, s.last_used))
            .collect();
        if mine.len() >= self.per_client {
            let oldest = mine
                .iter()
                .min_by_key(|(_, used)| *used)
                .map(|(id, _)| (*id).clone());
            if let Some(oldest) = oldest {
                self.map.remove(&oldest);
            }
        } else if self.map.len() >= self.cap {
            let idle = self.idle_one().ok_or(Refusal::Full)?;
            self.map.remove(&idle);
        }
        let id = self.fresh_id();
        self.clock += 1;
        self.map.insert(
            id.clone(),
            Slot {
                open: Arc::new(Mutex::new(open)),
                owner: owner.to_string(),
                last_used: self.clock,
                used_at: now(),
            },
        );
        Ok(id)
    }

    /// The session `id` if `owner` owns it, marked as used now.
    pub fn get(&mut self, id: &str, owner: &str) -> Result<Arc<Mutex<Open<S>>>, Refusal> {
        self.clock += 1;
        let clock = self.clock;
        let slot = self.map.get_mut(id).ok_or(Refusal::Missing)?;
        if slot.owner != owner {
            return Err(Refusal::Foreign);
        }
        slot.last_used = clock;
        slot.used_at = now();
        Ok(slot.open.clone())
    }

    /// Closes session `id` if `owner` owns it.
    pub fn remove(&mut self, id: &str, owner: &str) -> Result<(), Refusal> {
        match self.map.get(id) {
            None => Err(Refusal::Missing),
            Some(slot) if slot.owner != owner => Err(Refusal::Foreign),
            Some(_) => {
                self.map.remove(id);
                Ok(())
            }
        }
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
        Open::new(n, String::new())
    }

    #[test]
    fn a_client_over_its_limit_closes_its_own_least_recently_used_session() {
        let mut s = Sessions::new(10, 2, [7; 32]);
        let a = s.insert("alice", open(1)).unwrap();
        let b = s.insert("alice", open(2)).unwrap();
        let other = s.insert("bob", open(9)).unwrap();
        assert!(s.get(&a, "alice").is_ok()); // a is now more recent than b
        let c = s.insert("alice", open(3)).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(&b, "alice").err(), Some(Refusal::Missing));
        assert!(s.get(&a, "alice").is_ok());
        assert_eq!(s.get(&c, "alice").unwrap().lock().unwrap().session, 3);
        assert_eq!(s.get(&other, "bob").unwrap().lock().unwrap().session, 9);
    }

    #[test]
    fn a_full_store_refuses_instead_of_closing_another_clients_session() {
        let mut s = Sessions::new(2, 2, [7; 32]);
        let a = s.insert("alice", open(1)).unwrap();
        let b = s.insert("bob", open(2)).unwrap();
        assert_eq!(s.insert("carol", open(3)), Err(Refusal::Full));
        assert!(s.get(&a, "alice").is_ok() && s.get(&b, "bob").is_ok());
    }

    #[test]
    fn a_full_store_closes_the_least_recently_used_session_once_it_is_idle() {
        let mut s = Sessions::new(2, 2, [7; 32]).with_idle(Duration::ZERO);
        let a = s.insert("alice", open(1)).unwrap();
        let b = s.insert("bob", open(2)).unwrap();
        assert!(s.get(&a, "alice").is_ok()); // b is now the least recently used
        let c = s.insert("carol", open(3)).expect("b was idle long enough");
        assert_eq!(s.get(&b, "bob").err(), Some(Refusal::Missing));
        assert!(s.get(&a, "alice").is_ok() && s.get(&c, "carol").is_ok());
    }

    #[test]
    fn ids_are_128_random_bits_and_owned() {
        let mut s = Sessions::new(10, 10, [1; 32]);
        let a = s.insert("alice", open(1)).unwrap();
        let b = s.insert("alice", open(2)).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(s.get(&a, "mallory").err(), Some(Refusal::Foreign));
        assert_eq!(s.remove(&a, "mallory"), Err(Refusal::Foreign));
        assert_eq!(s.remove(&a, "alice"), Ok(()));
        assert_eq!(s.get(&a, "alice").err(), Some(Refusal::Missing));
    }
}
