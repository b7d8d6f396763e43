//! The locks a node serves: per lock name, one instance of the mutual-exclusion algorithm over
//! the members of the current view, the queue of the node's local clients waiting for it, and
//! who holds it.
//!
//! Local clients: the algorithm gives the node the critical section one request at a time, so a
//! node queues its clients FIFO, gives the algorithm `Request` when the queue is not empty, hands
//! `Enter` to the first client still connected, and gives `Release` when that client unlocks or
//! its connection drops. With `[locks] handoff`, a lock its client released goes to the next
//! local client waiting for it at the end of the turn, up to that many times in a row, without
//! leaving the algorithm's critical section.
//!
//! Fencing tokens: `token = max(highest token seen, epoch << 32) + 1` at each grant, and every
//! mutual-exclusion message carries its sender's highest token. In a correct mutual-exclusion
//! algorithm each entry causally follows the previous exit (otherwise some timing would let the
//! two overlap), so the tokens of successive grants strictly increase, like Lamport clocks along
//! that causal chain; a new view has a larger epoch, so its grants are larger than any before.

use super::views::view_params;
use super::{Node, Todo};
use crate::machine::{Env, Event as MEvent, MutexMachine, Out};
use crate::timers::TimerKey;
use crate::wire::{ClientReply, Epoch, PeerMsg};
use distsync_core::mutex as mx;
use distsync_core::NodeId;
use std::collections::{BTreeMap, VecDeque};
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// A node that keeps this many lock names asks the leader for a view change, at which every
/// node forgets the locks nobody holds or waits for (their instances are rebuilt, the same at
/// every node, when next used; tokens are per node, not per name, so they stay monotonic).
pub const MAX_LOCKS: usize = 1024;
/// Past this many names a node takes no new ones until the view change has freed idle ones: a
/// client's request for a new name waits (parked) until then.
pub const HARD_MAX_LOCKS: usize = 2 * MAX_LOCKS;
/// One client connection may hold or wait for this many locks at once, so that one client
/// cannot take the whole name table.
pub const MAX_LOCKS_PER_CLIENT: usize = MAX_LOCKS / 4;

/// The fencing token of the next grant after `highest` in view `epoch`; `None` if the view's
/// 32 bits of tokens are used up.
pub fn next_token(highest: u64, epoch: Epoch) -> Option<u64> {
    let base = (epoch as u64) << 32;
    let t = highest.max(base).checked_add(1)?;
    (t >> 32 == epoch as u64).then_some(t)
}

/// Who holds a lock at this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    /// A connected client.
    Client(u64),
    /// Nobody any more (the client left while the lock was being re-acquired).
    Gone,
}

/// One lock at this node.
#[derive(Default)]
pub(super) struct Lock {
    instance: Option<Box<dyn MutexMachine>>,
    /// The local clients waiting for it, first come first served.
    pub waiting: VecDeque<u64>,
    /// `Request` given, `Enter` not yet.
    requested: bool,
    /// `Release` given, `Exit` not yet.
    releasing: bool,
    /// Re-acquiring in a new view for the holder it already has.
    pub reacquiring: bool,
    /// The holder and its fencing token.
    pub holder: Option<(Holder, u64)>,
    /// In the critical section for a waiting client, but not handed to it yet: this node's
    /// lease has lapsed, so it cannot confirm its view is current.
    pending: bool,
    /// In the critical section, released by its client in this turn: at the end of the turn it
    /// is handed to the next local client or given back to the algorithm (`settle`).
    unheld: bool,
    /// Grants handed from client to client in a row since the algorithm last gave the critical
    /// section (`[locks] handoff` bounds it).
    streak: u32,
}

/// Whether a node has room for one more lock name.
pub(super) enum Room {
    /// It knows the name already, or has room.
    Yes,
    /// Room, but past [`MAX_LOCKS`]: time to ask for the idle names to be freed.
    Crowded,
    /// No room: [`HARD_MAX_LOCKS`] names already.
    Full,
}

/// The locks a node serves, by name, and what its grants have reached.
pub(super) struct LockTable {
    pub by_name: BTreeMap<String, Lock>,
    /// The highest fencing token this node has granted or seen in a message.
    pub max_token: u64,
    /// `[locks] handoff`: consecutive hand-offs between local clients allowed (0: none).
    handoff: u32,
    /// Locks released by their clients in this turn, settled at its end.
    released: Vec<String>,
    /// Grants handed from client to client since the node started.
    pub handoffs: u64,
    /// When this node last asked the leader to free idle lock names.
    last_compact: Option<Instant>,
    /// Requests for new names that found the table full, served again when a view opens (the
    /// view change frees the idle names). At most [`HARD_MAX_LOCKS`].
    pub parked: Vec<(u64, String)>,
}

impl LockTable {
    /// No lock yet; `handoff` is `[locks] handoff`.
    pub fn new(handoff: u32) -> LockTable {
        LockTable {
            by_name: BTreeMap::new(),
            max_token: 0,
            handoff,
            released: Vec::new(),
            handoffs: 0,
            last_compact: None,
            parked: Vec::new(),
        }
    }

    /// How many locks client `c` holds or waits for here (parked requests included).
    pub fn held_or_wanted_by(&self, c: u64) -> usize {
        let here = self
            .by_name
            .values()
            .filter(|l| {
                matches!(l.holder, Some((Holder::Client(h), _)) if h == c) || l.waiting.contains(&c)
            })
            .count();
        here + self.parked.iter().filter(|(p, _)| *p == c).count()
    }

    /// Whether lock `name` can be served here.
    pub fn room(&self, name: &str) -> Room {
        let len = self.by_name.len();
        if self.by_name.contains_key(name) || len < MAX_LOCKS {
            Room::Yes
        } else if len < HARD_MAX_LOCKS {
            Room::Crowded
        } else {
            Room::Full
        }
    }

    /// The names of the locks, in order.
    pub fn names(&self) -> Vec<String> {
        self.by_name.keys().cloned().collect()
    }

    /// The locks a connected client holds.
    pub fn holding(&self) -> Vec<String> {
        self.by_name
            .iter()
            .filter(|(_, l)| matches!(l.holder, Some((Holder::Client(_), _))))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The locks whose grant was held back while the lease had lapsed.
    fn pending(&self) -> Vec<String> {
        self.by_name
            .iter()
            .filter(|(_, l)| l.pending)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The view is being replaced: forgets the locks nobody holds or waits for (every instance
    /// is rebuilt in the new view anyway, the same way at every node, when next used), drops
    /// every instance, and returns how many names it freed and the locks local clients hold
    /// with their tokens.
    pub fn reset(&mut self) -> (usize, Vec<(String, u64)>) {
        let before = self.by_name.len();
        self.by_name
            .retain(|_, l| l.holder.is_some() || !l.waiting.is_empty());
        let freed = before - self.by_name.len();
        let mut held = Vec::new();
        for (name, lock) in &mut self.by_name {
            lock.instance = None;
            lock.requested = false;
            lock.releasing = false;
            lock.reacquiring = false;
            lock.pending = false;
            lock.unheld = false;
            lock.streak = 0;
            if let Some((_, token)) = lock.holder {
                held.push((name.clone(), token));
            }
        }
        (freed, held)
    }
}

impl Node {
    /// A mutual-exclusion message of this node's view: its token raises the highest one seen
    /// (one above the view's epoch is forged or corrupt, and dropped), and its lock's instance
    /// handles it (created first if this is the lock's first message here).
    pub(super) fn on_mutex_msg(&mut self, from: NodeId, msg: PeerMsg) {
        let PeerMsg::Mutex {
            name, token, msg, ..
        } = msg
        else {
            return;
        };
        let epoch = self.view.as_ref().map_or(0, |v| v.epoch);
        if token >> 32 > epoch as u64 {
            self.drop_peer_msg(
                from,
                format_args!("lock {name:?}: token {token} above its view's epoch {epoch}"),
            );
            return;
        }
        // Only the view's members run its instances: the algorithm would take a stranger for
        // one of its sites (or index past its vectors).
        if !self.view.as_ref().is_some_and(|v| v.members.contains(from)) {
            self.drop_peer_msg(
                from,
                format_args!("lock {name:?}: the sender is not a member of view {epoch}"),
            );
            return;
        }
        self.locks.max_token = self.locks.max_token.max(token);
        if !self.ensure_instance(&name, false) {
            return;
        }
        if !msg.is_empty() {
            self.call_mutex(&name, MEvent::Message(from, &msg));
        }
    }

    /// Makes sure lock `name` has an instance in the committed view; tells the other members
    /// when this node creates it first (`announce`), so that every member runs it (a token ring
    /// needs its holder to run before anybody sends it anything).
    pub(super) fn ensure_instance(&mut self, name: &str, announce: bool) -> bool {
        let Some(view) = &self.view else {
            return false;
        };
        if view.usable.is_err() {
            return false;
        }
        match self.locks.room(name) {
            Room::Full => {
                warn!(node = %self.id, "too many locks; {name:?} refused");
                self.ask_to_free_names();
                return false;
            }
            Room::Crowded => self.ask_to_free_names(),
            Room::Yes => {}
        }
        let Some(view) = &self.view else {
            return false;
        };
        let lock = self.locks.by_name.entry(name.to_string()).or_default();
        if lock.instance.is_some() {
            return true;
        }
        let params = view_params(&self.params, view.leader, view.holders.get(name).copied());
        lock.instance = Some(crate::colocated::instance(
            &self.mutex,
            self.id,
            &view.members,
            &params,
        ));
        let (epoch, members) = (view.epoch, view.members.ids().to_vec());
        if announce {
            for p in members {
                self.send(
                    p,
                    PeerMsg::Mutex {
                        epoch,
                        name: name.to_string(),
                        token: self.locks.max_token,
                        msg: Vec::new(),
                    },
                );
            }
        }
        self.call_mutex(name, MEvent::Start);
        true
    }

    /// Re-acquires lock `name` in a new view for the holder it already has (the view's
    /// commit kept this node's holder).
    pub(super) fn reacquire(&mut self, name: &str) {
        if self.ensure_instance(name, true) {
            let lock = self.locks.by_name.get_mut(name).expect("exists");
            lock.reacquiring = true;
            lock.requested = true;
            self.call_mutex(name, MEvent::Input(mx::Input::Request));
        }
    }

    pub(super) fn call_mutex(&mut self, name: &str, ev: MEvent<'_, mx::Input>) {
        let now = self.now();
        let Some(view) = &self.view else { return };
        let epoch = view.epoch;
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        let Some(instance) = lock.instance.as_mut() else {
            return;
        };
        let mut out = Vec::new();
        let env = Env {
            id: self.id,
            peers: &view.members,
            now,
            recovered: false,
            rng: &mut self.rng,
        };
        let from = match ev {
            MEvent::Message(from, _) => Some(from),
            _ => None,
        };
        if let Err(e) = instance.handle(env, ev, &mut out) {
            // Only a message can fail (a peer's, decoded and checked field by field).
            if let Some(from) = from {
                self.drop_peer_msg(from, format_args!("lock {name:?}: {e}"));
            }
            return;
        }
        for o in out {
            match o {
                Out::Send(to, msg) => {
                    let token = self.locks.max_token;
                    self.send(
                        to,
                        PeerMsg::Mutex {
                            epoch,
                            name: name.to_string(),
                            token,
                            msg,
                        },
                    )
                }
                Out::SetTimer(key, after) => self.timers.set(
                    TimerKey::Mutex {
                        epoch,
                        name: name.to_string(),
                        key,
                    },
                    Instant::now() + after,
                ),
                Out::CancelTimer(key) => self.timers.cancel(&TimerKey::Mutex {
                    epoch,
                    name: name.to_string(),
                    key,
                }),
                Out::Output(mx::Output::Enter) => self.on_enter(name, epoch),
                Out::Output(mx::Output::Exit) => {
                    if let Some(lock) = self.locks.by_name.get_mut(name) {
                        lock.releasing = false;
                    }
                    self.todo.push(Todo::Pump(name.to_string()));
                }
            }
        }
    }

    pub(super) fn on_enter(&mut self, name: &str, epoch: Epoch) {
        let me = self.id;
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        lock.requested = false;
        if lock.reacquiring {
            lock.reacquiring = false;
            let leader = self.view.as_ref().map(|v| v.leader).unwrap_or(me);
            debug!(node = %me, lock = name, epoch, "re-acquired in the new view");
            if !matches!(lock.holder, Some((Holder::Client(_), _))) {
                lock.holder = None;
                self.todo.push(Todo::Release(name.to_string()));
            }
            if leader == me {
                self.on_reacquired(epoch, name.to_string());
            } else {
                self.send(
                    leader,
                    PeerMsg::Reacquired {
                        epoch,
                        name: name.to_string(),
                    },
                );
            }
            return;
        }
        if !self.leases.valid() {
            // No grant in a view this node cannot confirm is current: hold the critical
            // section until the lease runs again, or a view change takes it away.
            debug!(node = %me, lock = name, "lease lapsed: grant held back");
            if let Some(lock) = self.locks.by_name.get_mut(name) {
                lock.pending = true;
            }
            return;
        }
        self.grant(name, epoch);
    }

    /// Grants held back while the lease had lapsed, now that it runs again.
    pub(super) fn grant_pending(&mut self) {
        if !self.leases.valid() {
            return;
        }
        let Some(epoch) = self.view.as_ref().map(|v| v.epoch) else {
            return;
        };
        for name in self.locks.pending() {
            self.grant(&name, epoch);
        }
    }

    /// Asks the leader (at most once per timeout) for a view change, which frees the names of
    /// idle locks at every node.
    pub(super) fn ask_to_free_names(&mut self) {
        let now = Instant::now();
        if self
            .locks
            .last_compact
            .is_some_and(|t| now.duration_since(t) < self.timeouts().heartbeat_timeout)
        {
            return;
        }
        self.locks.last_compact = Some(now);
        info!(node = %self.id, locks = self.locks.by_name.len(), "many lock names: asking for a view change to free the idle ones");
        match self.election.leader() {
            Some(l) if l == self.id => self.force_change = true,
            Some(l) => self.send(l, PeerMsg::Join),
            None => {}
        }
    }

    /// Hands the critical section the instance gave this node to the first waiting client.
    pub(super) fn grant(&mut self, name: &str, epoch: Epoch) {
        let me = self.id;
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        lock.pending = false;
        while let Some(c) = lock.waiting.pop_front() {
            if self.clients.contains_key(&c) {
                let Some(token) = next_token(self.locks.max_token, epoch) else {
                    warn!(node = %me, lock = name, "fencing tokens of this view used up; refused");
                    self.reply(
                        c,
                        ClientReply::Refused {
                            reason: "fencing tokens of this view are used up; retry after the next view change".into(),
                        },
                    );
                    self.todo.push(Todo::Release(name.to_string()));
                    return;
                };
                self.locks.max_token = token;
                lock.holder = Some((Holder::Client(c), token));
                debug!(node = %me, lock = name, client = c, token, "granted");
                self.reply(
                    c,
                    ClientReply::Granted {
                        name: name.to_string(),
                        token,
                        holder: me,
                    },
                );
                return;
            }
        }
        // Every waiting client left: give the critical section back at once.
        self.todo.push(Todo::Release(name.to_string()));
    }

    /// Gives `Release` to lock `name`'s instance, if it is in the critical section.
    pub(super) fn release(&mut self, name: &str) {
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        lock.holder = None;
        lock.unheld = false;
        lock.streak = 0;
        let in_cs = lock
            .instance
            .as_ref()
            .is_some_and(|i| i.in_critical_section());
        if in_cs && !lock.reacquiring {
            lock.releasing = true;
            self.call_mutex(name, MEvent::Input(mx::Input::Release));
        }
        self.todo.push(Todo::Pump(name.to_string()));
    }

    /// Asks the instance for the critical section when a local client waits and the view is
    /// open. Every node competes: central's coordinator through its local client (`colocated`).
    pub(super) fn pump(&mut self, name: &str) {
        let Some(view) = &self.view else { return };
        if !view.open {
            return;
        }
        if let Err(e) = view.usable.clone() {
            let waiting: Vec<u64> = self
                .locks
                .by_name
                .get_mut(name)
                .map(|l| l.waiting.drain(..).collect())
                .unwrap_or_default();
            for c in waiting {
                self.reply(
                    c,
                    ClientReply::Refused {
                        reason: format!("the mutex algorithm cannot run in this view: {e}"),
                    },
                );
            }
            return;
        }
        let Some(lock) = self.locks.by_name.get(name) else {
            return;
        };
        if lock.waiting.is_empty()
            || lock.holder.is_some()
            || lock.requested
            || lock.releasing
            || lock.pending
            || lock.unheld
        {
            return;
        }
        if !self.ensure_instance(name, true) {
            return;
        }
        let lock = self.locks.by_name.get_mut(name).expect("exists");
        lock.requested = true;
        self.call_mutex(name, MEvent::Input(mx::Input::Request));
    }

    /// The end of a turn: each lock released in it goes to the next local client waiting for
    /// it (a hand-off: the node stays in the algorithm's critical section; a new, larger
    /// token), unless `handoff` grants were handed on in a row already, the lease has lapsed or
    /// nobody waits here; then it goes back to the algorithm.
    pub(super) fn settle(&mut self) {
        for name in std::mem::take(&mut self.locks.released) {
            let lease = self.leases.valid();
            let open = self.view.as_ref().filter(|v| v.open).map(|v| v.epoch);
            let Some(lock) = self.locks.by_name.get_mut(&name) else {
                continue;
            };
            if !lock.unheld {
                continue;
            }
            lock.unheld = false;
            let in_cs = lock
                .instance
                .as_ref()
                .is_some_and(|i| i.in_critical_section());
            let next = lock.waiting.iter().any(|c| self.clients.contains_key(c));
            match open {
                Some(epoch) if in_cs && next && lease && lock.streak < self.locks.handoff => {
                    lock.streak += 1;
                    self.locks.handoffs += 1;
                    self.grant(&name, epoch);
                }
                _ => self.release(&name),
            }
        }
        self.drain();
    }

    /// The holder of lock `name` let it go (unlocked, or its connection dropped).
    pub(super) fn let_go(&mut self, name: &str) {
        let handoff = self.locks.handoff;
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        if lock.reacquiring {
            lock.holder = Some((Holder::Gone, 0));
        } else if handoff > 0 {
            // Settled at the end of the turn, when the requests that came with this release
            // (often the same client's next `Lock`) have been queued.
            lock.holder = None;
            lock.unheld = true;
            self.locks.released.push(name.to_string());
        } else {
            self.release(name);
        }
    }

    /// Takes lock `name` from its client, telling it why (a view change kept another holder,
    /// or left this node out).
    pub(super) fn revoke(&mut self, name: &str, reason: &str) {
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        if let Some((Holder::Client(c), token)) = lock.holder.take() {
            warn!(node = %self.id, lock = name, token, client = c, "lock revoked: {reason}");
            self.reply(
                c,
                ClientReply::Revoked {
                    name: name.to_string(),
                    reason: reason.to_string(),
                },
            );
        }
    }

    /// Takes every lock from its client.
    pub(super) fn revoke_all(&mut self, reason: &str) {
        for n in self.locks.names() {
            self.revoke(&n, reason);
        }
    }
}
