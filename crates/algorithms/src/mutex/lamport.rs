//! Lamport 1978: mutual exclusion with replicated request queues.
//!
//! Source: seed 000 "Lamport's Algorithm", seed 001 "Lamport's Mutual Exclusion Algorithm",
//! seed 003 "Lamport's Algorithm Steps" 1-4 with entry conditions L1 and L2. Rules:
//! 1. To request: send REQUEST (ts_i, i) to every other site and put it in `request_queue`.
//! 2. On REQUEST (ts_j, j): put it in `request_queue` and return a timestamped REPLY.
//! - L1: enter when a message stamped later than (ts_i, i) has arrived from every other site,
//!   and
//! - L2: our own request is at the top of `request_queue` (ordered by (timestamp, id)).
//! 3. On exit: remove our request and send a timestamped RELEASE to every other site.
//! 4. On RELEASE from j: remove j's request from `request_queue`.
//!
//! 3(N-1) messages per entry; synchronization delay T. Requires FIFO channels: without them a
//! REPLY can overtake the sender's own earlier REQUEST, and two sites enter together (the
//! simulator's tests show it).

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, Params, Peers, Process, Stamp,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Messages, named as in the notes; every one carries the sender's Lamport timestamp.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST (ts, j).
    Request { ts: u64 },
    /// REPLY, stamped after the request was queued.
    Reply { ts: u64 },
    /// RELEASE: the sender left the CS.
    Release { ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
            Msg::Release { .. } => "Release",
        }
    }
}

impl Msg {
    fn ts(&self) -> u64 {
        match *self {
            Msg::Request { ts } | Msg::Reply { ts } | Msg::Release { ts } => ts,
        }
    }
}

/// One site's state.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct LamportMutex {
    id: NodeId,
    clock: LamportClock,
    /// Every known outstanding request, ordered by (timestamp, id).
    request_queue: BTreeSet<Stamp>,
    /// Our outstanding request, from the Request input to the Exit.
    request: Option<Stamp>,
    in_cs: bool,
    /// `latest[k]`: the largest timestamp received from the site at membership position k (L1).
    latest: Vec<u64>,
}

impl Algorithm for LamportMutex {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        LamportMutex {
            id,
            clock: LamportClock::default(),
            request_queue: BTreeSet::new(),
            request: None,
            in_cs: false,
            latest: vec![0; peers.len()],
        }
    }
}

impl MutualExclusion for LamportMutex {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for LamportMutex {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 1.
            Input::Request if self.request.is_none() => {
                let ts = self.clock.tick();
                let stamp = Stamp {
                    time: ts,
                    node: self.id,
                };
                self.request = Some(stamp);
                self.request_queue.insert(stamp);
                ctx.broadcast(Msg::Request { ts });
                self.enter_if_permitted(ctx);
            }
            // Rule 3.
            Input::Release if self.in_cs => {
                if let Some(ours) = self.request.take() {
                    self.request_queue.remove(&ours);
                }
                self.in_cs = false;
                let ts = self.clock.tick();
                ctx.broadcast(Msg::Release { ts });
                ctx.output(Output::Exit);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let ts = msg.ts();
        self.clock.observe(ts);
        if let Some(k) = ctx.peers().position(from) {
            self.latest[k] = self.latest[k].max(ts);
        }
        match msg {
            // Rule 2.
            Msg::Request { ts } => {
                self.request_queue.insert(Stamp {
                    time: ts,
                    node: from,
                });
                let reply = self.clock.tick();
                ctx.send(from, Msg::Reply { ts: reply });
            }
            Msg::Reply { .. } => {}
            // Rule 4: a site has one request at a time, so "j's request" is any entry of j.
            Msg::Release { .. } => self.request_queue.retain(|s| s.node != from),
        }
        self.enter_if_permitted(ctx);
    }
}

impl LamportMutex {
    fn enter_if_permitted(&mut self, ctx: &mut Ctx<'_, Self>) {
        let Some(ours) = self.request else { return };
        if self.in_cs {
            return;
        }
        let l1 = ctx
            .peers()
            .ids()
            .iter()
            .zip(&self.latest)
            .all(|(&site, &latest)| {
                site == self.id
                    || Stamp {
                        time: latest,
                        node: site,
                    } > ours
            });
        let l2 = self.request_queue.first() == Some(&ours);
        if l1 && l2 {
            self.in_cs = true;
            ctx.output(Output::Enter);
        }
    }

    /// The replicated request queue, in (timestamp, id) order.
    pub fn request_queue(&self) -> impl Iterator<Item = &Stamp> {
        self.request_queue.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn site(id: u32, peers: &Peers) -> Driver<'_, LamportMutex> {
        Driver::new(
            LamportMutex::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    fn stamps(d: &Driver<'_, LamportMutex>) -> Vec<(u64, u32)> {
        d.process
            .request_queue()
            .map(|s| (s.time, s.node.0))
            .collect()
    }

    #[test]
    fn a_request_is_queued_and_replied_to() {
        let peers = Peers::range(3);
        let mut s = site(1, &peers);
        s.receive(0, Msg::Request { ts: 4 });
        // The reply is stamped after the receive: max(0, 4) + 1, then a tick for the send.
        assert_eq!(s.sent(), vec![(NodeId(0), Msg::Reply { ts: 6 })]);
        assert_eq!(stamps(&s), vec![(4, 0)]);
    }

    #[test]
    fn entry_needs_l1_from_every_site_and_l2_the_top_of_the_queue() {
        let peers = Peers::range(3);
        let mut s = site(0, &peers);
        s.input(Input::Request); // (1, 0)
        s.receive(1, Msg::Reply { ts: 3 });
        assert!(s.outputs().is_empty(), "L1 is missing site 2");
        s.receive(2, Msg::Request { ts: 1 }); // (1, 2) is later than (1, 0): L1 holds for 2
        assert_eq!(s.outputs(), vec![Output::Enter]);
        assert_eq!(stamps(&s), vec![(1, 0), (1, 2)]);
    }

    #[test]
    fn an_earlier_request_in_the_queue_blocks_entry_until_its_release() {
        let peers = Peers::range(2);
        let mut s = site(1, &peers);
        s.receive(0, Msg::Request { ts: 1 }); // (1, 0) queued; clock now 3
        s.input(Input::Request); // (4, 1)
        s.receive(0, Msg::Reply { ts: 5 });
        assert!(s.outputs().is_empty(), "L2: (1, 0) is at the top");
        s.receive(0, Msg::Release { ts: 6 });
        assert_eq!(s.outputs(), vec![Output::Enter]);
        s.input(Input::Release);
        assert_eq!(s.sent(), vec![(NodeId(0), Msg::Release { ts: 8 })]);
        assert_eq!(s.outputs(), vec![Output::Exit]);
        assert!(stamps(&s).is_empty());
    }
}
