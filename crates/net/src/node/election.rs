//! The node's election instance: the cluster's election algorithm inside the heartbeat
//! `Detector`, over every node of the cluster file (not only the view's members). The node it
//! names leader runs the view changes (`views`).

use super::Node;
use crate::machine::{Env, Event as MEvent, Out};
use crate::timers::TimerKey;
use crate::wire::PeerMsg;
use distsync_core::election as el;
use tokio::time::Instant;
use tracing::info;

impl Node {
    /// A node process cannot tell its first start from a restart after a crash, so its election
    /// instance starts as a recovered process does: it holds an election.
    pub(super) fn start(&mut self) {
        self.call_election(MEvent::Start, true);
    }

    pub(super) fn call_election(&mut self, ev: MEvent<'_, el::Input>, recovered: bool) {
        let now = self.now();
        let mut out = Vec::new();
        let env = Env {
            id: self.id,
            peers: &self.election_peers,
            now,
            recovered,
            rng: &mut self.rng,
        };
        let from = match ev {
            MEvent::Message(from, _) => Some(from),
            _ => None,
        };
        if let Err(e) = self.election.handle(env, ev, &mut out) {
            // Only a message can fail (a peer's, decoded and checked field by field).
            if let Some(from) = from {
                self.drop_peer_msg(from, format_args!("election: {e}"));
            }
            return;
        }
        for o in out {
            match o {
                Out::Send(to, bytes) => self.send(to, PeerMsg::Election(bytes)),
                Out::SetTimer(key, after) => self
                    .timers
                    .set(TimerKey::Election(key), Instant::now() + after),
                Out::CancelTimer(key) => self.timers.cancel(&TimerKey::Election(key)),
                Out::Output(el::Output::Leader(l)) => {
                    if self.last_leader != Some(l) {
                        info!(node = %self.id, leader = %l, "leader elected");
                        self.last_leader = Some(l);
                    }
                }
            }
        }
        self.lead();
    }
}
