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

/// The replicated request queue: the stamps in (timestamp, id) order, each once, in a vector
/// kept sorted whose first `head` places are spent. It was a `BTreeSet`, which allocated and
/// freed nodes as requests came and went; here a new request (usually the latest stamp) goes in
/// near the back, and a released one (usually the earliest, the site that was in its critical
/// section) leaves from the front by moving `head` on, without moving the others (as a
/// `VecDeque` did, which was about 3% of a saturated run's instructions at N = 32). The spent
/// places are given back when the queue empties or they are more than half of it. It hashes,
/// prints (`{..}`) and serializes as the `BTreeSet` did.
#[derive(Clone, Default)]
struct RequestQueue {
    stamps: Vec<Stamp>,
    head: usize,
}

impl RequestQueue {
    /// The requests in order.
    fn live(&self) -> &[Stamp] {
        &self.stamps[self.head..]
    }

    /// Puts `stamp` in its place, found from the back (a new request is usually the latest);
    /// false if it was there already.
    fn insert(&mut self, stamp: Stamp) -> bool {
        let mut at = self.stamps.len();
        while at > self.head && self.stamps[at - 1] > stamp {
            at -= 1;
        }
        if at > self.head && self.stamps[at - 1] == stamp {
            return false;
        }
        if at == self.head && self.head > 0 {
            // Before every pending one: in the place of the last spent.
            self.head -= 1;
            self.stamps[self.head] = stamp;
        } else {
            self.stamps.insert(at, stamp);
        }
        true
    }

    /// Takes `stamp` out, if it is there, found from the front (the request released is
    /// usually the earliest). A binary search of the queue was a sixth of a saturated run's
    /// time at N = 32.
    fn remove(&mut self, stamp: &Stamp) {
        let Some(k) = self.live().iter().position(|s| s >= stamp) else {
            return;
        };
        if self.live()[k] != *stamp {
            return;
        }
        if k == 0 {
            self.head += 1;
            if self.head == self.stamps.len() {
                self.stamps.clear();
                self.head = 0;
            } else if 2 * self.head > self.stamps.len() {
                self.stamps.drain(..self.head);
                self.head = 0;
            }
        } else {
            self.stamps.remove(self.head + k);
        }
    }

    /// The earliest request.
    fn first(&self) -> Option<&Stamp> {
        self.live().first()
    }

    /// Keeps the requests for which `keep` holds.
    fn retain(&mut self, keep: impl FnMut(&Stamp) -> bool) {
        self.stamps.drain(..self.head);
        self.head = 0;
        self.stamps.retain(keep);
    }

    /// The requests in order.
    fn iter(&self) -> impl Iterator<Item = &Stamp> {
        self.live().iter()
    }
}

// As `BTreeSet<Stamp>` hashes: the length, then each stamp in order.
impl std::hash::Hash for RequestQueue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.live().hash(state);
    }
}

impl Serialize for RequestQueue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.live())
    }
}

impl std::fmt::Debug for RequestQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.live()).finish()
    }
}

/// One site's state.
#[derive(Clone, Hash, Serialize)]
pub struct LamportMutex {
    id: NodeId,
    clock: LamportClock,
    /// Every known outstanding request, ordered by (timestamp, id).
    request_queue: RequestQueue,
    /// Our outstanding request, from the Request input to the Exit.
    request: Option<Stamp>,
    in_cs: bool,
    /// `latest[k]`: the largest timestamp received from the site at membership position k (L1).
    latest: Vec<u64>,
    /// `queued[k]`: the timestamps of the requests of the site at position k in
    /// `request_queue`, in order, so that rule 4 finds them without scanning the queue
    /// (bookkeeping only: a function of `request_queue`, left out of `Debug` and the JSON).
    #[serde(skip)]
    queued: Vec<Vec<u64>>,
}

impl std::fmt::Debug for LamportMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LamportMutex")
            .field("id", &self.id)
            .field("clock", &self.clock)
            .field("request_queue", &self.request_queue)
            .field("request", &self.request)
            .field("in_cs", &self.in_cs)
            .field("latest", &self.latest)
            .finish()
    }
}

impl Algorithm for LamportMutex {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        LamportMutex {
            id,
            clock: LamportClock::default(),
            request_queue: RequestQueue::default(),
            request: None,
            in_cs: false,
            latest: vec![0; peers.len()],
            queued: vec![Vec::new(); peers.len()],
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
                ctx.rule("1");
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
                ctx.rule("3");
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
        let k = ctx.peers().position(from);
        if let Some(k) = k {
            self.latest[k] = self.latest[k].max(ts);
        }
        match msg {
            // Rule 2.
            Msg::Request { ts } => {
                ctx.rule("2");
                let new = self.request_queue.insert(Stamp {
                    time: ts,
                    node: from,
                });
                if let (true, Some(k)) = (new, k) {
                    let at = self.queued[k].partition_point(|&t| t < ts);
                    self.queued[k].insert(at, ts);
                }
                let reply = self.clock.tick();
                ctx.send(from, Msg::Reply { ts: reply });
            }
            Msg::Reply { .. } => {}
            // Rule 4: a site has one request at a time, so "j's request" is any entry of j.
            Msg::Release { .. } => match k {
                Some(k) => {
                    ctx.rule("4");
                    // Drained, not taken: the list keeps its memory for the site's next request.
                    for time in self.queued[k].drain(..) {
                        self.request_queue.remove(&Stamp { time, node: from });
                    }
                }
                None => {
                    ctx.rule("4");
                    self.request_queue.retain(|s| s.node != from);
                }
            },
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
        // L2 first: it fails at every site but the next to enter, and costs one comparison.
        let l2 = self.request_queue.first() == Some(&ours);
        if !l2 {
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
        if l1 {
            ctx.rule("L1");
            ctx.rule("L2");
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

    #[test]
    fn a_release_removes_every_request_of_its_sender_and_only_those() {
        // Without FIFO links, a site's next REQUEST can overtake its RELEASE: rule 4 then
        // removes both of its entries, as the queue holds no other "request of j".
        let peers = Peers::range(3);
        let mut s = site(2, &peers);
        s.receive(0, Msg::Request { ts: 7 });
        s.receive(1, Msg::Request { ts: 2 });
        s.receive(0, Msg::Request { ts: 3 });
        s.receive(0, Msg::Request { ts: 3 }); // a duplicate: queued once
        assert_eq!(stamps(&s), vec![(2, 1), (3, 0), (7, 0)]);
        s.receive(0, Msg::Release { ts: 8 });
        assert_eq!(stamps(&s), vec![(2, 1)]);
        s.receive(0, Msg::Request { ts: 9 });
        s.receive(1, Msg::Release { ts: 10 });
        assert_eq!(stamps(&s), vec![(9, 0)]);
        s.receive(0, Msg::Release { ts: 11 });
        assert!(stamps(&s).is_empty());
    }

    #[test]
    fn the_request_queue_holds_hashes_prints_and_serializes_as_a_btree_set() {
        use rand_core::{RngCore, SeedableRng};
        use std::collections::BTreeSet;
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = |v: &dyn Fn(&mut DefaultHasher)| {
            let mut h = BuildHasherDefault::<DefaultHasher>::default().build_hasher();
            v(&mut h);
            std::hash::Hasher::finish(&h)
        };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(38);
        for _ in 0..200 {
            let (mut ours, mut set) = (RequestQueue::default(), BTreeSet::new());
            for _ in 0..rng.next_u32() % 200 {
                let stamp = Stamp {
                    time: u64::from(rng.next_u32() % 40),
                    node: NodeId(rng.next_u32() % 6),
                };
                match rng.next_u32() % 4 {
                    0 | 1 => assert_eq!(ours.insert(stamp), set.insert(stamp)),
                    2 => {
                        ours.remove(&stamp);
                        set.remove(&stamp);
                    }
                    _ => {
                        ours.retain(|s| s.node != stamp.node);
                        set.retain(|s| s.node != stamp.node);
                    }
                }
                assert!(ours.iter().eq(set.iter()));
                assert_eq!(ours.first(), set.first());
            }
            assert_eq!(format!("{ours:?}"), format!("{set:?}"));
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&set).unwrap()
            );
            assert_eq!(
                hash(&|h| std::hash::Hash::hash(&ours, h)),
                hash(&|h| std::hash::Hash::hash(&set, h))
            );
        }
    }

    #[test]
    fn the_state_prints_as_the_rules_name_it() {
        let peers = Peers::range(2);
        let mut s = site(0, &peers);
        s.receive(1, Msg::Request { ts: 1 });
        let text = format!("{:?}", s.process);
        assert_eq!(
            text,
            "LamportMutex { id: 0, clock: LamportClock(3), request_queue: {Stamp { time: 1, node: 1 }}, \
             request: None, in_cs: false, latest: [0, 1] }"
        );
    }
}
