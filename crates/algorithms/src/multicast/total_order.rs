//! Totally ordered multicast with Lamport clocks and acknowledgements (Lamport 1978, as
//! Tanenbaum tells it for a replicated database).
//!
//! Source: seed 003 "Lamport's Logical Clock - Example: Totally Ordered Multicasting" and
//! "Updating a replicated database and leaving it in an inconsistent state"; ORACLES.md
//! "Totally ordered multicast with Lamport clocks: every replica applies updates in the same
//! order; N^2-1 point-to-point messages per update when self-delivery is local". Rules:
//! 1. Every message, updates and acknowledgements alike, carries the sender's Lamport clock
//!    (`clock`): tick before sending; on receipt C := max(C, C_msg) + 1.
//! 2. To multicast: stamp the update (C, i), put it in the local queue (`queue`), send it to
//!    every other process, and acknowledge it to every other process like any receiver does.
//! 3. On an update: put it in the local queue (`queue`), ordered by (timestamp, sender id), and
//!    send an acknowledgement to every other process.
//! 4. Deliver the update at the head of the queue (`queue`) once every process has acknowledged
//!    it (this process's own acknowledgement is local) (`last_delivered`).
//!
//! Messages per update: N-1 updates and N(N-1) acknowledgements, N^2-1. Needs FIFO channels:
//! an acknowledgement must not overtake an update its sender made earlier.

use distsync_core::multicast::{Input, Multicast, Order, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, Params, Peers, Process, Stamp,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Messages, named as in the notes' replicated-database example.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// An update stamped with the sender's clock `ts` (its id is the sender's).
    Update { ts: u64, payload: u64 },
    /// The acknowledgement of `update`, stamped with the acknowledging process's clock `ts`.
    Ack { update: Stamp, ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Update { .. } => "Update",
            Msg::Ack { .. } => "Ack",
        }
    }
}

/// A queued update, or the acknowledgements of one not received yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
struct Queued {
    payload: Option<u64>,
    /// By membership position.
    acks: Vec<bool>,
}

/// One process (a replica).
#[derive(Clone, Debug, Hash, Serialize)]
pub struct TotalOrder {
    id: NodeId,
    clock: LamportClock,
    /// The local queue, ordered by (timestamp, sender id).
    #[serde(serialize_with = "crate::state::pairs")]
    queue: BTreeMap<Stamp, Queued>,
    /// The last update delivered: anything at or below it is a duplicate.
    last_delivered: Option<Stamp>,
    own: u64,
}

impl Algorithm for TotalOrder {
    fn new(id: NodeId, _peers: &Peers, _params: &Params) -> Self {
        TotalOrder {
            id,
            clock: LamportClock::default(),
            queue: BTreeMap::new(),
            last_delivered: None,
            own: 0,
        }
    }
}

impl Multicast for TotalOrder {
    fn multicasts(&self) -> u64 {
        self.own
    }
    fn guarantees() -> &'static [Order] {
        &[Order::Fifo, Order::Causal, Order::Total]
    }
}

impl Process for TotalOrder {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    // Rules 1 and 2.
    fn on_input(&mut self, Input::Multicast(payload): Input, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        ctx.rule("2");
        self.own += 1;
        let ts = self.clock.tick();
        let stamp = Stamp {
            time: ts,
            node: self.id,
        };
        self.entry(stamp, ctx).payload = Some(payload);
        ctx.broadcast(Msg::Update { ts, payload });
        self.acknowledge(stamp, ctx);
        self.deliver(ctx);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rules 1 and 3.
            Msg::Update { ts, payload } => {
                ctx.rule("1");
                self.clock.observe(ts);
                let stamp = Stamp {
                    time: ts,
                    node: from,
                };
                if self.delivered(stamp)
                    || self.queue.get(&stamp).is_some_and(|q| q.payload.is_some())
                {
                    return; // a duplicate
                }
                ctx.rule("3");
                self.entry(stamp, ctx).payload = Some(payload);
                self.acknowledge(stamp, ctx);
            }
            // Rule 1.
            Msg::Ack { update, ts } => {
                ctx.rule("1");
                self.clock.observe(ts);
                if self.delivered(update) {
                    return;
                }
                let k = ctx.peers().index_of(from);
                self.entry(update, ctx).acks[k] = true;
            }
        }
        // Rule 4.
        self.deliver(ctx);
    }
}

impl TotalOrder {
    fn delivered(&self, stamp: Stamp) -> bool {
        self.last_delivered.is_some_and(|last| stamp <= last)
    }

    fn entry(&mut self, stamp: Stamp, ctx: &Ctx<'_, Self>) -> &mut Queued {
        let n = ctx.peers().len();
        self.queue.entry(stamp).or_insert_with(|| Queued {
            payload: None,
            acks: vec![false; n],
        })
    }

    /// Acknowledges `stamp` to every other process, and here.
    fn acknowledge(&mut self, stamp: Stamp, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.peers().index_of(self.id);
        self.entry(stamp, ctx).acks[me] = true;
        let ts = self.clock.tick();
        ctx.broadcast(Msg::Ack { update: stamp, ts });
    }

    /// Rule 4.
    fn deliver(&mut self, ctx: &mut Ctx<'_, Self>) {
        while let Some(head) = self.queue.first_entry() {
            let q = head.get();
            let Some(payload) = q.payload.filter(|_| q.acks.iter().all(|&a| a)) else {
                break;
            };
            let stamp = *head.key();
            head.remove();
            ctx.rule("4");
            self.last_delivered = Some(stamp);
            ctx.output(Output::Deliver {
                origin: stamp.node,
                payload,
            });
        }
    }

    /// The stamps in the local queue, in order.
    pub fn queued(&self) -> Vec<Stamp> {
        self.queue.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn stamp(time: u64, node: u32) -> Stamp {
        Stamp {
            time,
            node: NodeId(node),
        }
    }

    fn replica(id: u32, peers: &Peers) -> Driver<'_, TotalOrder> {
        Driver::new(
            TotalOrder::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    #[test]
    fn a_multicast_sends_the_update_and_an_acknowledgement_to_every_other() {
        let peers = Peers::range(3);
        let mut p = replica(0, &peers);
        p.input(Input::Multicast(5));
        assert_eq!(
            p.sent(),
            vec![
                (NodeId(1), Msg::Update { ts: 1, payload: 5 }),
                (NodeId(2), Msg::Update { ts: 1, payload: 5 }),
                (
                    NodeId(1),
                    Msg::Ack {
                        update: stamp(1, 0),
                        ts: 2
                    }
                ),
                (
                    NodeId(2),
                    Msg::Ack {
                        update: stamp(1, 0),
                        ts: 2
                    }
                ),
            ]
        );
        assert!(p.outputs().is_empty(), "not acknowledged by the others yet");
        p.receive(
            1,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 3,
            },
        );
        assert!(p.outputs().is_empty());
        p.receive(
            2,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 3,
            },
        );
        assert_eq!(
            p.outputs(),
            vec![Output::Deliver {
                origin: NodeId(0),
                payload: 5
            }]
        );
    }

    /// The replicated database: two updates stamped (1, 0) and (1, 1) are applied in that
    /// order everywhere, whatever order they arrive in.
    #[test]
    fn the_head_of_the_queue_goes_first_once_everyone_acknowledged_it() {
        let peers = Peers::range(3);
        let mut p = replica(2, &peers);
        p.receive(1, Msg::Update { ts: 1, payload: 11 }); // (1, 1) arrives first
        assert_eq!(p.sent().len(), 2, "acknowledged to 0 and 1");
        p.receive(
            1,
            Msg::Ack {
                update: stamp(1, 1),
                ts: 2,
            },
        );
        p.receive(
            0,
            Msg::Ack {
                update: stamp(1, 1),
                ts: 3,
            },
        );
        // Fully acknowledged, but node 0 acknowledged only after its own update (1, 0),
        // which FIFO delivers first: here it comes late only because this test says so.
        assert_eq!(p.outputs().len(), 1);
        let mut q = replica(2, &peers);
        q.receive(0, Msg::Update { ts: 1, payload: 10 });
        q.receive(1, Msg::Update { ts: 1, payload: 11 });
        q.receive(
            0,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 2,
            },
        );
        q.receive(
            1,
            Msg::Ack {
                update: stamp(1, 1),
                ts: 2,
            },
        );
        q.receive(
            0,
            Msg::Ack {
                update: stamp(1, 1),
                ts: 4,
            },
        );
        assert!(
            q.outputs().is_empty(),
            "(1, 0) heads the queue and 1 has not acknowledged it"
        );
        assert_eq!(q.process.queued(), vec![stamp(1, 0), stamp(1, 1)]);
        q.receive(
            1,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 4,
            },
        );
        let d = |o, payload| Output::Deliver {
            origin: NodeId(o),
            payload,
        };
        assert_eq!(q.outputs(), vec![d(0, 10), d(1, 11)]);
        // A late duplicate of a delivered update is ignored.
        q.receive(0, Msg::Update { ts: 1, payload: 10 });
        assert!(q.sent().is_empty() && q.outputs().is_empty());
    }

    #[test]
    fn an_acknowledgement_may_come_before_its_update() {
        let peers = Peers::range(3);
        let mut p = replica(2, &peers);
        p.receive(
            1,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 2,
            },
        );
        p.receive(0, Msg::Update { ts: 1, payload: 10 });
        p.receive(
            0,
            Msg::Ack {
                update: stamp(1, 0),
                ts: 2,
            },
        );
        assert_eq!(p.outputs().len(), 1);
    }
}
