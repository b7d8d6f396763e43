//! Causal broadcast with vector clocks (Birman, Schiper and Stephenson 1991).
//!
//! Source: seed 003 "Vector Clocks" and "Enforcing Causal Communication", seed 000 "3.1.3.2
//! Partial, causal and total ordering" and "3.1.3.5 Vector clock"; ORACLES.md "Causal broadcast
//! (Birman-Schiper-Stephenson): deliver m from i at j when VT_j[i] = VT_m[i] - 1 and
//! VT_j[k] >= VT_m[k] for all k != i". The vector counts multicasts only. Rules:
//! 1. To multicast: VT_i[i] := VT_i[i] + 1 (`vt`); send the message with ts(m) = VT_i to every
//!    other process; deliver it here at once.
//! 2. On receipt of m from i at j: buffer it (`buffer`) until VT_j[i] = ts(m)[i] - 1 (it is the
//!    next message from i) and VT_j[k] >= ts(m)[k] for every k != i (j has delivered
//!    everything i had delivered when it sent m) (`vt`).
//! 3. On delivery: VT_j[k] := max(VT_j[k], ts(m)[k]) for every k (`vt`); then look at the
//!    buffer again (`buffer`).
//!
//! FIFO channels are not needed: the first condition orders each sender's messages.
// The rules above write vectors as the notes do (V[i]), not as links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use distsync_core::multicast::{Input, Multicast, Order, Output};
use distsync_core::{
    Algorithm, Ctx, Message, NoTimer, NodeId, Params, Peers, Process, VectorClock,
};
use serde::{Deserialize, Serialize};

/// The one message, with its vector timestamp.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// m with ts(m).
    Message { ts: VectorClock, payload: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        "Message"
    }
}

/// One process.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct CausalBroadcast {
    id: NodeId,
    /// VT: by membership position, how many multicasts of each process have been delivered here
    /// (this process's own entry counts its multicasts).
    vt: VectorClock,
    /// This process's multicasts so far.
    own: u64,
    /// Messages received and not yet deliverable: sender position, ts(m), payload.
    buffer: Vec<(usize, VectorClock, u64)>,
}

impl Algorithm for CausalBroadcast {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        CausalBroadcast {
            id,
            vt: VectorClock::new(peers.len()),
            own: 0,
            buffer: Vec::new(),
        }
    }
}

impl Multicast for CausalBroadcast {
    fn multicasts(&self) -> u64 {
        self.own
    }
    fn guarantees() -> &'static [Order] {
        &[Order::Fifo, Order::Causal]
    }
}

impl Process for CausalBroadcast {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    // Rule 1.
    fn on_input(&mut self, Input::Multicast(payload): Input, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        let i = ctx.peers().index_of(self.id);
        self.vt.tick(i);
        self.own += 1;
        ctx.broadcast(Msg::Message {
            ts: self.vt.clone(),
            payload,
        });
        ctx.output(Output::Deliver {
            origin: self.id,
            payload,
        });
    }

    // Rules 2 and 3.
    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let Msg::Message { ts, payload } = msg;
        let Some(i) = ctx.peers().position(from) else {
            return;
        };
        if ts.get(i) <= self.vt.get(i) {
            return; // already delivered: a duplicate
        }
        ctx.rule("2");
        self.buffer.push((i, ts, payload));
        while let Some(at) = self
            .buffer
            .iter()
            .position(|(i, ts, _)| deliverable(&self.vt, *i, ts))
        {
            let (i, ts, payload) = self.buffer.remove(at);
            ctx.rule("3");
            self.vt.merge(&ts);
            ctx.output(Output::Deliver {
                origin: ctx.peers().ids()[i],
                payload,
            });
        }
    }
}

/// Rule 2: m from the process at position `i`, stamped `ts`, may be delivered at a process
/// whose vector is `vt`.
pub fn deliverable(vt: &VectorClock, i: usize, ts: &VectorClock) -> bool {
    let n = vt.entries().len().max(ts.entries().len());
    vt.get(i) + 1 == ts.get(i) && (0..n).all(|k| k == i || vt.get(k) >= ts.get(k))
}

impl CausalBroadcast {
    /// VT of this process.
    pub fn vector(&self) -> &VectorClock {
        &self.vt
    }

    /// How many received messages wait for earlier ones.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn v(entries: &[u64]) -> VectorClock {
        VectorClock::from_entries(entries.to_vec())
    }

    #[test]
    fn the_delivery_condition_of_oracles_md() {
        // The next message from 0, and nothing from 1 that j has not seen.
        assert!(deliverable(&v(&[0, 1, 0]), 0, &v(&[1, 1, 0])));
        // Not the next from 0: one is missing.
        assert!(!deliverable(&v(&[0, 1, 0]), 0, &v(&[2, 1, 0])));
        // 0 had delivered a message of 1 that j has not.
        assert!(!deliverable(&v(&[0, 0, 0]), 0, &v(&[1, 1, 0])));
        // j is ahead elsewhere: fine.
        assert!(deliverable(&v(&[0, 3, 2]), 0, &v(&[1, 1, 0])));
    }

    /// Seed 003's picture: P0 multicasts m; P1 delivers it and multicasts m*; P2 receives m*
    /// first and must hold it until m arrives.
    #[test]
    fn a_reply_is_held_until_the_message_it_answers() {
        let peers = Peers::range(3);
        let p = |id| {
            Driver::new(
                CausalBroadcast::new(NodeId(id), &peers, &Params::default()),
                NodeId(id),
                &peers,
            )
        };
        let (mut p0, mut p1, mut p2) = (p(0), p(1), p(2));
        p0.input(Input::Multicast(1));
        let m = p0.sent()[0].1.clone();
        assert_eq!(
            m,
            Msg::Message {
                ts: v(&[1, 0, 0]),
                payload: 1
            }
        );
        p1.receive(0, m.clone());
        p1.input(Input::Multicast(2));
        let reply = p1.sent()[0].1.clone();
        assert_eq!(
            reply,
            Msg::Message {
                ts: v(&[1, 1, 0]),
                payload: 2
            }
        );
        p2.receive(1, reply);
        assert!(p2.outputs().is_empty());
        assert_eq!(p2.process.buffered(), 1);
        p2.receive(0, m);
        let d = |o, payload| Output::Deliver {
            origin: NodeId(o),
            payload,
        };
        assert_eq!(p2.outputs(), vec![d(0, 1), d(1, 2)]);
        assert_eq!(p2.process.vector(), &v(&[1, 1, 0]));
        assert_eq!(p2.process.buffered(), 0);
    }
}
