//! FIFO broadcast: each process's multicasts are delivered in the order it made them, and
//! nothing more is promised. The baseline the causal and total orders improve on.
//!
//! Source: seed 003 "Enforcing Causal Communication" and seed 000 "3.1.3.2 Partial, causal and
//! total ordering" name the orders; FIFO order is the weakest of them (the rules are the
//! textbook's). Rules:
//! 1. To multicast: number the message with the next sequence number of this process (`sent`),
//!    send it to every other process, and deliver it here at once (`delivered`).
//! 2. On receipt: hold the message (`held`) until every earlier message of the same sender has
//!    been delivered (`delivered`), then deliver it (and any held message it unblocks).
//!
//! A message that depends on another sender's message may be delivered before it: FIFO order is
//! not causal order.

use distsync_core::multicast::{Input, Multicast, Order, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The one message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The sender's `seq`-th multicast.
    Message { seq: u64, payload: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        "Message"
    }
}

/// One process.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct FifoBroadcast {
    id: NodeId,
    /// This process's multicasts so far.
    sent: u64,
    /// `delivered[k]`: how many messages of the process at position k have been delivered.
    delivered: Vec<u64>,
    /// Messages held back: (sender position, seq) to payload.
    #[serde(serialize_with = "crate::state::pairs")]
    held: BTreeMap<(usize, u64), u64>,
}

impl Algorithm for FifoBroadcast {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        FifoBroadcast {
            id,
            sent: 0,
            delivered: vec![0; peers.len()],
            held: BTreeMap::new(),
        }
    }
}

impl Multicast for FifoBroadcast {
    fn multicasts(&self) -> u64 {
        self.sent
    }
    fn guarantees() -> &'static [Order] {
        &[Order::Fifo]
    }
}

impl Process for FifoBroadcast {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    // Rule 1.
    fn on_input(&mut self, Input::Multicast(payload): Input, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.sent += 1;
        let me = ctx.peers().index_of(self.id);
        self.delivered[me] = self.sent;
        ctx.broadcast(Msg::Message {
            seq: self.sent,
            payload,
        });
        ctx.output(Output::Deliver {
            origin: self.id,
            payload,
        });
    }

    // Rule 2.
    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let Msg::Message { seq, payload } = msg;
        let Some(k) = ctx.peers().position(from) else {
            return;
        };
        if seq <= self.delivered[k] {
            return; // a duplicate
        }
        ctx.rule("2");
        self.held.insert((k, seq), payload);
        while let Some(payload) = self.held.remove(&(k, self.delivered[k] + 1)) {
            self.delivered[k] += 1;
            ctx.output(Output::Deliver {
                origin: from,
                payload,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn deliver(origin: u32, payload: u64) -> Output {
        Output::Deliver {
            origin: NodeId(origin),
            payload,
        }
    }

    #[test]
    fn a_multicast_goes_to_all_others_and_is_delivered_here_at_once() {
        let peers = Peers::range(3);
        let mut p = Driver::new(
            FifoBroadcast::new(NodeId(1), &peers, &Params::default()),
            NodeId(1),
            &peers,
        );
        p.input(Input::Multicast(9));
        let m = Msg::Message { seq: 1, payload: 9 };
        assert_eq!(p.sent(), vec![(NodeId(0), m.clone()), (NodeId(2), m)]);
        assert_eq!(p.outputs(), vec![deliver(1, 9)]);
        assert_eq!(p.process.multicasts(), 1);
    }

    #[test]
    fn a_sender_s_messages_are_delivered_in_its_order() {
        let peers = Peers::range(3);
        let mut p = Driver::new(
            FifoBroadcast::new(NodeId(0), &peers, &Params::default()),
            NodeId(0),
            &peers,
        );
        p.receive(
            2,
            Msg::Message {
                seq: 2,
                payload: 22,
            },
        );
        assert!(p.outputs().is_empty(), "held until the first arrives");
        p.receive(
            1,
            Msg::Message {
                seq: 1,
                payload: 11,
            },
        );
        assert_eq!(
            p.outputs(),
            vec![deliver(1, 11)],
            "other senders are not held"
        );
        p.receive(
            2,
            Msg::Message {
                seq: 1,
                payload: 21,
            },
        );
        assert_eq!(p.outputs(), vec![deliver(2, 21), deliver(2, 22)]);
        p.receive(
            2,
            Msg::Message {
                seq: 1,
                payload: 21,
            },
        );
        assert!(p.outputs().is_empty(), "a duplicate is dropped");
    }
}
