//! The client protocol at a node: a client's `Lock` joins the lock's queue (`locks`), `Unlock`
//! and `Release` give it up, `Status` tells what the node knows; a client whose connection
//! drops leaves every queue and lets go of every lock it held.
//!
//! A `Renew` is answered with the node's lease (`Lease { ms }`) at once, except from a client
//! whose `Lock` waits for the algorithm (not granted in the turn it came, as with every
//! permission or token algorithm whose grant needs messages): its answer goes out right after
//! the next reply to that client, its grant usually, in the same write, and at the latest at
//! the node's next tick. The lock client writes a `Renew` behind every `Lock`; answered at
//! once, it was a write of its own that woke the waiting client for nothing, on a machine whose
//! cores the peers' answers wait for. The answer says what is left of the lease when it is
//! sent, and the client counts it from when it sent the `Renew` (`crate::lease`), earlier
//! still: an answer held back promises nothing more than one sent at once.

use super::locks::{Holder, Room, HARD_MAX_LOCKS, MAX_LOCKS_PER_CLIENT};
use super::Node;
use crate::wire::{ClientReply, ClientRequest, NodeStatus, MAX_NAME};
use tracing::info;

impl Node {
    /// Sends `reply` to `client`, followed by the answers to its renewals held back while it
    /// waited for a lock (see the module's text).
    pub(super) fn reply(&mut self, client: u64, reply: ClientReply) {
        self.send_reply(client, reply);
        self.answer_held_renewals(client);
    }

    fn send_reply(&self, client: u64, reply: ClientReply) {
        if let Some(tx) = self.clients.get(&client) {
            let _ = tx.try_send(reply);
        }
    }

    /// What is left of this node's lease, in milliseconds (0: it holds none).
    fn lease_ms(&self) -> u64 {
        let now = tokio::time::Instant::now();
        self.leases
            .until
            .filter(|&u| now < u)
            .map_or(0, |u| u.duration_since(now).as_millis() as u64)
    }

    /// Answers the renewals of `client` held back while it waited for a lock, in order, and
    /// answers its next ones at once.
    fn answer_held_renewals(&mut self, client: u64) {
        if let Some(n) = self.held_renewals.remove(&client) {
            let ms = self.lease_ms();
            for _ in 0..n {
                self.send_reply(client, ClientReply::Lease { ms });
            }
        }
    }

    /// The node's tick: every renewal held back is answered now (a client may wait for a lock
    /// for long), and renewals that come later are answered at once until the client's next
    /// `Lock` that waits.
    pub(super) fn answer_all_held_renewals(&mut self) {
        let held: Vec<u64> = self.held_renewals.keys().copied().collect();
        for c in held {
            self.answer_held_renewals(c);
        }
    }

    pub(super) fn on_client(&mut self, c: u64, req: ClientRequest) {
        match req {
            ClientRequest::Ping => self.reply(c, ClientReply::Pong),
            ClientRequest::Renew => {
                if let Some(held) = self.held_renewals.get_mut(&c) {
                    *held += 1;
                } else {
                    let ms = self.lease_ms();
                    self.reply(c, ClientReply::Lease { ms });
                }
            }
            ClientRequest::Status => {
                let s = self.status();
                self.reply(c, ClientReply::Status(s));
            }
            ClientRequest::Lock { name } => {
                if let Some(reason) = self.removed.clone() {
                    self.reply(c, ClientReply::Refused { reason });
                    return;
                }
                if let Some(reason) = self.sitting_out() {
                    self.reply(c, ClientReply::Refused { reason });
                    return;
                }
                if name.is_empty() || name.len() > MAX_NAME {
                    self.reply(
                        c,
                        ClientReply::Refused {
                            reason: format!("a lock name has 1 to {MAX_NAME} bytes"),
                        },
                    );
                    return;
                }
                let known = self.locks.by_name.contains_key(&name);
                if self.locks.by_name.len() >= MAX_LOCKS_PER_CLIENT
                    && self.locks.held_or_wanted_by(c) >= MAX_LOCKS_PER_CLIENT
                {
                    self.reply(
                        c,
                        ClientReply::Refused {
                            reason: format!(
                                "this connection already holds or waits for {MAX_LOCKS_PER_CLIENT} locks (the per-client quota)"
                            ),
                        },
                    );
                    return;
                }
                match self.locks.room(&name) {
                    Room::Full if !known && self.locks.parked.len() < HARD_MAX_LOCKS => {
                        // The names of released locks are freed by the view change asked for
                        // here; the request waits for it instead of failing.
                        self.ask_to_free_names();
                        self.locks.parked.push((c, name));
                        return;
                    }
                    Room::Full => {
                        self.reply(
                            c,
                            ClientReply::Refused {
                                reason: format!(
                                    "this node already serves {HARD_MAX_LOCKS} locks and as many requests wait for room; idle ones are freed at the next view change"
                                ),
                            },
                        );
                        return;
                    }
                    Room::Crowded => self.ask_to_free_names(),
                    Room::Yes => {}
                }
                let lock = self.locks.by_name.entry(name.clone()).or_default();
                let mine = lock.waiting.contains(&c)
                    || matches!(lock.holder, Some((Holder::Client(h), _)) if h == c);
                if mine {
                    self.reply(
                        c,
                        ClientReply::Refused {
                            reason: format!("this connection already holds or waits for {name:?}"),
                        },
                    );
                    return;
                }
                lock.waiting.push_back(c);
                self.pump(&name);
                // Not granted in this turn: its renewals wait for the grant (module text).
                if self
                    .locks
                    .by_name
                    .get(&name)
                    .is_some_and(|l| l.waiting.contains(&c))
                {
                    self.held_renewals.entry(c).or_insert(0);
                }
            }
            ClientRequest::Unlock { name } => {
                self.unlock(c, &name);
                self.reply(c, ClientReply::Released { name });
            }
            ClientRequest::Release { name } => self.unlock(c, &name),
            // Admin requests (the connection proved the node key: `peer` refuses them from
            // clients before they get here).
            ClientRequest::Shutdown { restart } => {
                info!(node = %self.id, client = c, restart, "an admin asked this node to stop");
                self.reply(
                    c,
                    ClientReply::ShuttingDown {
                        pid: std::process::id(),
                        restart,
                    },
                );
                self.shutdown = Some(restart);
            }
            ClientRequest::Membership(change) => self.on_member_request(c, change),
            ClientRequest::Rekey {
                secret,
                client_secret,
                window_ms,
            } => self.on_rekey(c, secret, client_secret, window_ms),
            ClientRequest::Process => self.reply(
                c,
                ClientReply::Process {
                    pid: std::process::id(),
                    host: host_name(),
                    uptime_ms: self.start.elapsed().as_millis() as u64,
                },
            ),
            req @ (ClientRequest::Send { .. }
            | ClientRequest::Snapshot { .. }
            | ClientRequest::Update(_)
            | ClientRequest::Replica { .. }) => self.on_app_client(c, req),
        }
    }

    /// An admin gives this node new keys: stored first (a restart comes back with them), then
    /// accepted, the current ones for `window_ms` more (`crate::keys`).
    fn on_rekey(&mut self, c: u64, secret: String, client_secret: String, window_ms: u64) {
        if let Err(reason) = crate::keys::check(&secret, &client_secret) {
            self.reply(c, ClientReply::Refused { reason });
            return;
        }
        let window = std::time::Duration::from_millis(window_ms);
        if let Some(dir) = &self.cluster.state_dir {
            let previous = self
                .keys
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .replaced(window);
            if let Err(e) = crate::keys::store(dir, self.id, &secret, &client_secret, previous) {
                let reason = format!("node {}: cannot store the new keys: {e}", self.id);
                tracing::warn!("{reason}");
                self.reply(c, ClientReply::Refused { reason });
                return;
            }
        }
        self.keys.write().unwrap_or_else(|e| e.into_inner()).rotate(
            secret.as_bytes(),
            client_secret.as_bytes(),
            window,
        );
        info!(node = %self.id, client = c, window_ms, "keys replaced; the old ones are accepted for the window");
        self.reply(c, ClientReply::Rekeyed { window_ms });
    }

    /// Why this node grants nothing while it sits out (epochs: its disk takes no write), as its
    /// clients are told; `None` while it takes part.
    fn sitting_out(&self) -> Option<String> {
        let why = self.epochs.disk.as_ref()?;
        Some(format!(
            "node {} {why}; it serves no lock until that disk takes the write (free space there)",
            self.id
        ))
    }

    /// While the node sits out: the clients waiting here for a lock are refused (their requests
    /// withdrawn, as by `Unlock`) instead of waiting for a view this node takes no part in; a
    /// client that named no node then asks another.
    pub(super) fn refuse_waiting(&mut self) {
        let Some(reason) = self.sitting_out() else {
            return;
        };
        let mut waiting = self.locks.parked.clone();
        for (name, lock) in &self.locks.by_name {
            waiting.extend(lock.waiting.iter().map(|&c| (c, name.clone())));
        }
        for (c, name) in waiting {
            self.unlock(c, &name);
            let reason = reason.clone();
            self.reply(c, ClientReply::Refused { reason });
        }
    }

    /// Client `c` gives up lock `name`: withdraws its request, or releases the lock it holds.
    pub(super) fn unlock(&mut self, c: u64, name: &str) {
        self.locks.parked.retain(|(p, n)| !(*p == c && n == name));
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        lock.waiting.retain(|&w| w != c);
        if matches!(lock.holder, Some((Holder::Client(h), _)) if h == c) {
            self.let_go(name);
        }
    }

    /// Serves again the requests that found the name table full (a view just opened: the
    /// view change freed the idle names).
    pub(super) fn unpark(&mut self) {
        for (c, name) in std::mem::take(&mut self.locks.parked) {
            if self.clients.contains_key(&c) {
                self.on_client(c, ClientRequest::Lock { name });
            }
        }
    }

    pub(super) fn on_client_gone(&mut self, c: u64) {
        self.clients.remove(&c);
        self.held_renewals.remove(&c);
        self.locks.parked.retain(|(p, _)| *p != c);
        self.forget_app_client(c);
        for name in self.locks.names() {
            let lock = self.locks.by_name.get_mut(&name).expect("listed");
            lock.waiting.retain(|&w| w != c);
            if matches!(lock.holder, Some((Holder::Client(h), _)) if h == c) {
                info!(node = %self.id, lock = %name, client = c, "holder's connection dropped; releasing");
                self.let_go(&name);
            }
        }
    }

    pub(super) fn status(&self) -> NodeStatus {
        NodeStatus {
            id: self.id,
            leader: self.election.leader(),
            electing: self.election.electing(),
            epoch: self.view.as_ref().map(|v| v.epoch),
            members: self
                .view
                .as_ref()
                .map(|v| v.members.ids().to_vec())
                .unwrap_or_default(),
            open: self.view.as_ref().is_some_and(|v| v.open),
            holding: self.locks.holding(),
            mutex: self.cluster.file.mutex.clone(),
            election: self.cluster.file.election.clone(),
            max_token: self.locks.max_token,
            lease: self.leases.valid(),
            handoffs: self.locks.handoffs,
            problem: self
                .wedged
                .clone()
                .or_else(|| self.removed.clone())
                .or_else(|| {
                    self.epochs.disk.as_ref().map(|why| {
                        format!("{why}; it takes part in no view until that disk takes the write")
                    })
                }),
        }
    }
}

/// This machine's name (gethostname(2)), or "?" when it has none.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer we own.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "?".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
