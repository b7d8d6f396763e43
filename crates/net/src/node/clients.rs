//! The client protocol at a node: a client's `Lock` joins the lock's queue (`locks`), `Unlock`
//! and `Release` give it up, `Status` tells what the node knows; a client whose connection
//! drops leaves every queue and lets go of every lock it held.

use super::locks::{Holder, Room, HARD_MAX_LOCKS};
use super::Node;
use crate::wire::{ClientReply, ClientRequest, NodeStatus, MAX_NAME};
use tracing::info;

impl Node {
    pub(super) fn reply(&mut self, client: u64, reply: ClientReply) {
        if let Some(tx) = self.clients.get(&client) {
            let _ = tx.try_send(reply);
        }
    }

    pub(super) fn on_client(&mut self, c: u64, req: ClientRequest) {
        match req {
            ClientRequest::Ping => self.reply(c, ClientReply::Pong),
            ClientRequest::Status => {
                let s = self.status();
                self.reply(c, ClientReply::Status(s));
            }
            ClientRequest::Lock { name } => {
                if name.is_empty() || name.len() > MAX_NAME {
                    self.reply(
                        c,
                        ClientReply::Refused {
                            reason: format!("a lock name has 1 to {MAX_NAME} bytes"),
                        },
                    );
                    return;
                }
                match self.locks.room(&name) {
                    Room::Full => {
                        self.reply(
                            c,
                            ClientReply::Refused {
                                reason: format!(
                                    "this node already serves {HARD_MAX_LOCKS} locks; idle ones are freed at the next view change"
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
            }
            ClientRequest::Unlock { name } => {
                self.unlock(c, &name);
                self.reply(c, ClientReply::Released { name });
            }
            ClientRequest::Release { name } => self.unlock(c, &name),
            req @ (ClientRequest::Send { .. }
            | ClientRequest::Snapshot { .. }
            | ClientRequest::Update(_)
            | ClientRequest::Replica { .. }) => self.on_app_client(c, req),
        }
    }

    /// Client `c` gives up lock `name`: withdraws its request, or releases the lock it holds.
    pub(super) fn unlock(&mut self, c: u64, name: &str) {
        let Some(lock) = self.locks.by_name.get_mut(name) else {
            return;
        };
        lock.waiting.retain(|&w| w != c);
        if matches!(lock.holder, Some((Holder::Client(h), _)) if h == c) {
            self.let_go(name);
        }
    }

    pub(super) fn on_client_gone(&mut self, c: u64) {
        self.clients.remove(&c);
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
        }
    }
}
