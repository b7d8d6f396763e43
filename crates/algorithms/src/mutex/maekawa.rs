//! Maekawa 1985 with deadlock handling: quorum permission, requests ordered by Lamport
//! timestamp, and FAILED / INQUIRE / YIELD so that a lower-priority request gives back a
//! permission a higher-priority one waits for.
//!
//! Source: seed 003 "Maekawa's algorithm" (request sets, REQUEST / REPLY / RELEASE); the
//! FAILED / INQUIRE / YIELD handling is Maekawa's own (ACM TOCS 3(2), 1985), in the form of
//! Singhal and Shivaratri, "Advanced Concepts in Operating Systems" §6.7, where YIELD is called
//! RELINQUISH and REPLY is called LOCKED. Priority: the smaller (timestamp, id) first. Rules:
//! 1. To enter, S_i sends REQUEST(ts, i) to every site of R_i (itself included, locally).
//! 2. Arbiter S_j on REQUEST(ts, i): if it has no outstanding REPLY, it REPLYs to S_i. Otherwise
//!    it queues the request; if that request has lower priority than the one holding the REPLY
//!    or than a queued one, it sends FAILED to S_i; else it sends INQUIRE to the holder of the
//!    REPLY (once per REPLY).
//! 3. Correction (Sanders 1987 and later textbooks): a queued request that a newer one outranks
//!    is sent FAILED too, if it never had one. So every waiting request either has a FAILED or
//!    is the best waiting at that arbiter and has an INQUIRE working for it; without this the
//!    classic three-site cycle can still deadlock.
//! 4. S_k on INQUIRE from S_j: if it is in the CS it ignores it (its RELEASE will follow);
//!    if it has received a FAILED, or has yielded to some arbiter, and not had a REPLY from it
//!    since, it sends YIELD to S_j and no longer counts S_j's REPLY; otherwise it defers the
//!    INQUIRE until one of those happens (or it enters, then it drops it).
//! 5. Arbiter S_j on YIELD from S_k: it queues S_k's request again and REPLYs to the best
//!    queued request.
//! 6. S_i enters with a REPLY from every site of R_i; on leaving it sends RELEASE to all of
//!    them.
//! 7. Arbiter S_j on RELEASE: it REPLYs to the best queued request, if any.
//!
//! Messages carry the request's timestamp so that one that arrives out of date (channels need
//! not be FIFO) is recognised and ignored. 3(K-1) messages per entry uncontended; up to about
//! 6(K-1) under contention (each of the K-1 other arbiters may add a FAILED, an INQUIRE, a YIELD
//! and a second REPLY); synchronization delay 2T.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, ParamError, Params, Peers, Process,
    Stamp,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Messages, named as in the notes; `ts` is the timestamp of the request concerned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST(ts, i).
    Request { ts: u64 },
    /// REPLY (LOCKED): the arbiter's permission for request `ts`.
    Reply { ts: u64 },
    /// RELEASE: the requester left the CS.
    Release { ts: u64 },
    /// FAILED: a request of higher priority holds or waits for this arbiter.
    Failed { ts: u64 },
    /// INQUIRE: the arbiter asks whether request `ts` can give its permission back.
    Inquire { ts: u64 },
    /// YIELD (RELINQUISH): the requester gives the arbiter's permission back.
    Yield { ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
            Msg::Release { .. } => "Release",
            Msg::Failed { .. } => "Failed",
            Msg::Inquire { .. } => "Inquire",
            Msg::Yield { .. } => "Yield",
        }
    }
}

/// One site: requester with request set R_i, and arbiter for the sites whose sets contain it.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Maekawa {
    id: NodeId,
    clock: LamportClock,
    /// R_i, this site included.
    request_set: Vec<NodeId>,

    /// Requester: the outstanding request, from the Request input to the Exit.
    request: Option<Stamp>,
    in_cs: bool,
    /// Requester: the arbiters whose REPLY it holds.
    replies: BTreeSet<NodeId>,
    /// Requester: arbiters that sent FAILED and have not REPLYed since.
    failed: BTreeSet<NodeId>,
    /// Requester: arbiters it YIELDed to and that have not REPLYed again.
    yielded: BTreeSet<NodeId>,
    /// Requester: deferred INQUIREs (rule 4).
    inquiries: BTreeSet<NodeId>,

    /// Arbiter: the request holding this site's REPLY.
    replied_to: Option<Stamp>,
    /// Arbiter: an INQUIRE was sent for the current REPLY.
    inquired: bool,
    /// Arbiter: waiting requests by priority, each with whether it was sent FAILED.
    #[serde(serialize_with = "crate::state::pairs")]
    queue: BTreeMap<Stamp, bool>,

    /// Messages from this site to itself, handled before the handler returns.
    local: VecDeque<Msg>,
}

impl Algorithm for Maekawa {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        super::quorum::for_params(peers, params).map(|_| ())
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let request_set = super::quorum::for_params(peers, params)
            .map(|q| q[peers.index_of(id)].clone())
            // `validate` refuses this; without it, asking everyone is still safe.
            .unwrap_or_else(|_| peers.ids().to_vec());
        Maekawa {
            id,
            clock: LamportClock::default(),
            request_set,
            request: None,
            in_cs: false,
            replies: BTreeSet::new(),
            failed: BTreeSet::new(),
            yielded: BTreeSet::new(),
            inquiries: BTreeSet::new(),
            replied_to: None,
            inquired: false,
            queue: BTreeMap::new(),
            local: VecDeque::new(),
        }
    }
}

impl MutualExclusion for Maekawa {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for Maekawa {
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
                self.request = Some(Stamp {
                    time: ts,
                    node: self.id,
                });
                self.replies.clear();
                self.failed.clear();
                self.yielded.clear();
                self.inquiries.clear();
                for m in self.request_set.clone() {
                    self.post(m, Msg::Request { ts }, ctx);
                }
            }
            // Rule 6, second half.
            Input::Release if self.in_cs => {
                ctx.rule("6");
                let ts = self.request.take().map_or(0, |r| r.time);
                self.in_cs = false;
                self.replies.clear();
                ctx.output(Output::Exit);
                for m in self.request_set.clone() {
                    self.post(m, Msg::Release { ts }, ctx);
                }
            }
            _ => {}
        }
        self.drain(ctx);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        self.handle(from, msg, ctx);
        self.drain(ctx);
    }
}

impl Maekawa {
    fn handle(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let stamp = |ts| Stamp {
            time: ts,
            node: from,
        };
        match msg {
            Msg::Request { ts } => {
                self.clock.observe(ts);
                self.on_request(stamp(ts), ctx);
            }
            Msg::Yield { ts } => self.on_yield(stamp(ts), ctx),
            Msg::Release { ts } => self.on_release(stamp(ts), ctx),
            Msg::Reply { ts } if self.is_current(ts) => self.on_reply(from, ctx),
            Msg::Failed { ts } if self.is_current(ts) => {
                // A FAILED overtaken by the REPLY that followed it says nothing any more.
                if !self.replies.contains(&from) {
                    self.failed.insert(from);
                    self.answer_inquiries(ctx);
                }
            }
            Msg::Inquire { ts } if self.is_current(ts) && !self.in_cs => {
                self.inquiries.insert(from);
                self.answer_inquiries(ctx);
            }
            // Out of date, or an INQUIRE inside the CS (rule 4: the RELEASE answers it).
            Msg::Reply { .. } | Msg::Failed { .. } | Msg::Inquire { .. } => {}
        }
    }

    fn is_current(&self, ts: u64) -> bool {
        self.request.is_some_and(|r| r.time == ts)
    }

    // ----- requester -----

    /// Rule 6, first half.
    fn on_reply(&mut self, from: NodeId, ctx: &mut Ctx<'_, Self>) {
        if self.in_cs {
            return;
        }
        self.replies.insert(from);
        self.failed.remove(&from);
        self.yielded.remove(&from);
        if self.request_set.iter().all(|m| self.replies.contains(m)) {
            ctx.rule("6");
            self.in_cs = true;
            self.inquiries.clear();
            ctx.output(Output::Enter);
        } else {
            self.answer_inquiries(ctx);
        }
    }

    /// Rule 4: yield every inquired permission we hold, once we know we cannot win now.
    fn answer_inquiries(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.in_cs || (self.failed.is_empty() && self.yielded.is_empty()) {
            return;
        }
        let Some(ts) = self.request.map(|r| r.time) else {
            return;
        };
        let give_back: Vec<NodeId> = self
            .inquiries
            .iter()
            .copied()
            .filter(|a| self.replies.contains(a))
            .collect();
        for a in give_back {
            ctx.rule("4");
            self.inquiries.remove(&a);
            self.replies.remove(&a);
            self.yielded.insert(a);
            self.post(a, Msg::Yield { ts }, ctx);
        }
    }

    // ----- arbiter -----

    /// Rules 2 and 3.
    fn on_request(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("2");
        if self.replied_to.is_none() {
            self.grant(s, ctx);
        } else {
            self.queue.insert(s, false);
            self.arbitrate(ctx);
        }
    }

    /// Rule 5.
    fn on_yield(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        if self.replied_to == Some(s) {
            ctx.rule("5");
            self.replied_to = None;
            // The yielder knows it waits: no FAILED for it.
            self.queue.insert(s, true);
            self.grant_next(ctx);
        }
    }

    /// Rule 7.
    fn on_release(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        if self.replied_to == Some(s) {
            ctx.rule("7");
            self.replied_to = None;
            self.grant_next(ctx);
        }
    }

    fn grant(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        self.replied_to = Some(s);
        self.inquired = false;
        self.post(s.node, Msg::Reply { ts: s.time }, ctx);
    }

    fn grant_next(&mut self, ctx: &mut Ctx<'_, Self>) {
        if let Some((s, _)) = self.queue.pop_first() {
            self.grant(s, ctx);
            self.arbitrate(ctx);
        }
    }

    /// Rules 2 and 3 for the whole queue: FAILED to every waiting request that is outranked
    /// and has not had one; INQUIRE for the best waiting request if it outranks the holder.
    fn arbitrate(&mut self, ctx: &mut Ctx<'_, Self>) {
        let Some(holder) = self.replied_to else {
            return;
        };
        let best = self.queue.keys().next().copied();
        let mut fail = Vec::new();
        for (&s, failed) in self.queue.iter_mut() {
            let outranked = Some(s) != best || holder < s;
            if outranked && !*failed {
                *failed = true;
                fail.push(s);
            }
        }
        for s in fail {
            self.post(s.node, Msg::Failed { ts: s.time }, ctx);
        }
        if best.is_some_and(|b| b < holder) && !self.inquired {
            self.inquired = true;
            self.post(holder.node, Msg::Inquire { ts: holder.time }, ctx);
        }
    }

    /// Sends, or handles locally what is addressed to this site itself.
    fn post(&mut self, to: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        if to == self.id {
            self.local.push_back(msg);
        } else {
            ctx.send(to, msg);
        }
    }

    fn drain(&mut self, ctx: &mut Ctx<'_, Self>) {
        while let Some(msg) = self.local.pop_front() {
            let me = self.id;
            self.handle(me, msg, ctx);
        }
    }

    /// R_i, this site included.
    pub fn request_set(&self) -> &[NodeId] {
        &self.request_set
    }

    /// As arbiter: the request holding this site's REPLY.
    pub fn replied_to(&self) -> Option<Stamp> {
        self.replied_to
    }

    /// As arbiter: the waiting requests, best first.
    pub fn queue(&self) -> impl Iterator<Item = &Stamp> {
        self.queue.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::{deadlock_triple, Pump};
    use super::*;
    use distsync_core::testing::Driver;
    use distsync_core::QuorumKind;

    fn site(id: u32, peers: &Peers) -> Driver<'_, Maekawa> {
        Driver::new(
            Maekawa::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    fn st(time: u64, node: u32) -> Stamp {
        Stamp {
            time,
            node: NodeId(node),
        }
    }

    /// An arbiter (node 6 of 7) outside every requester's own quorum role in these tests.
    fn arbiter(peers: &Peers) -> Driver<'_, Maekawa> {
        site(6, peers)
    }

    #[test]
    fn rule_2_free_arbiter_replies_busy_one_fails_the_lower_and_inquires_for_the_higher() {
        let peers = Peers::range(7);
        let mut j = arbiter(&peers);
        j.receive(2, Msg::Request { ts: 5 });
        assert_eq!(j.sent(), vec![(NodeId(2), Msg::Reply { ts: 5 })]);
        j.receive(3, Msg::Request { ts: 7 }); // (7, 3) after (5, 2): FAILED
        assert_eq!(j.sent(), vec![(NodeId(3), Msg::Failed { ts: 7 })]);
        j.receive(1, Msg::Request { ts: 4 }); // (4, 1) before (5, 2): INQUIRE the holder
        assert_eq!(j.sent(), vec![(NodeId(2), Msg::Inquire { ts: 5 })]);
        j.receive(0, Msg::Request { ts: 3 }); // better still: rule 3 fails (4, 1); one INQUIRE
        assert_eq!(j.sent(), vec![(NodeId(1), Msg::Failed { ts: 4 })]);
        assert_eq!(
            j.process.queue().copied().collect::<Vec<_>>(),
            vec![st(3, 0), st(4, 1), st(7, 3)]
        );
    }

    #[test]
    fn rules_5_and_7_yield_and_release_pass_the_reply_to_the_best_waiting() {
        let peers = Peers::range(7);
        let mut j = arbiter(&peers);
        j.receive(2, Msg::Request { ts: 5 });
        j.receive(1, Msg::Request { ts: 4 });
        j.receive(2, Msg::Yield { ts: 5 });
        assert_eq!(j.sent(), vec![(NodeId(1), Msg::Reply { ts: 4 })]);
        assert_eq!(j.process.replied_to(), Some(st(4, 1)));
        assert_eq!(
            j.process.queue().copied().collect::<Vec<_>>(),
            vec![st(5, 2)]
        );
        j.receive(2, Msg::Yield { ts: 5 }); // not the holder: ignored
        assert!(j.sent().is_empty());
        j.receive(1, Msg::Release { ts: 4 });
        assert_eq!(j.sent(), vec![(NodeId(2), Msg::Reply { ts: 5 })]);
        j.receive(2, Msg::Release { ts: 5 });
        assert!(j.sent().is_empty());
        assert_eq!(j.process.replied_to(), None);
    }

    /// Site 0 of 7 and the two other members of its plane quorum.
    fn requester(peers: &Peers) -> (Driver<'_, Maekawa>, Vec<u32>) {
        let mut s = site(0, peers);
        let others: Vec<u32> = s
            .process
            .request_set()
            .iter()
            .map(|m| m.0)
            .filter(|&m| m != 0)
            .collect();
        s.input(Input::Request);
        assert_eq!(
            s.sent(),
            others
                .iter()
                .map(|&m| (NodeId(m), Msg::Request { ts: 1 }))
                .collect::<Vec<_>>()
        );
        (s, others)
    }

    #[test]
    fn rule_4_inquire_is_deferred_until_a_failed_then_yielded() {
        let peers = Peers::range(7);
        let (mut s, o) = requester(&peers);
        s.receive(o[0], Msg::Reply { ts: 1 });
        s.receive(o[0], Msg::Inquire { ts: 1 });
        assert!(s.sent().is_empty(), "no FAILED yet: may still win, defer");
        s.receive(o[1], Msg::Failed { ts: 1 });
        assert_eq!(s.sent(), vec![(NodeId(o[0]), Msg::Yield { ts: 1 })]);
        // Having yielded, the next INQUIRE for a held permission is answered at once.
        s.receive(o[0], Msg::Reply { ts: 1 });
        s.receive(o[0], Msg::Inquire { ts: 1 });
        assert_eq!(s.sent(), vec![(NodeId(o[0]), Msg::Yield { ts: 1 })]);
    }

    #[test]
    fn rule_4_an_inquire_ahead_of_its_reply_waits_for_it_and_one_inside_is_dropped() {
        let peers = Peers::range(7);
        let (mut s, o) = requester(&peers);
        s.receive(o[1], Msg::Failed { ts: 1 });
        s.receive(o[0], Msg::Inquire { ts: 1 }); // overtook the REPLY
        assert!(
            s.sent().is_empty(),
            "cannot give back what it does not hold"
        );
        s.receive(o[0], Msg::Reply { ts: 1 });
        assert_eq!(s.sent(), vec![(NodeId(o[0]), Msg::Yield { ts: 1 })]);

        let (mut s, o) = requester(&peers);
        s.receive(o[0], Msg::Reply { ts: 1 });
        s.receive(o[1], Msg::Reply { ts: 1 });
        assert_eq!(s.outputs(), vec![Output::Enter]);
        s.receive(o[0], Msg::Inquire { ts: 1 });
        assert!(s.sent().is_empty());
        s.input(Input::Release);
        assert_eq!(
            s.sent(),
            vec![
                (NodeId(o[0]), Msg::Release { ts: 1 }),
                (NodeId(o[1]), Msg::Release { ts: 1 })
            ]
        );
    }

    #[test]
    fn out_of_date_messages_are_ignored() {
        let peers = Peers::range(7);
        let (mut s, o) = requester(&peers);
        s.receive(o[0], Msg::Reply { ts: 1 });
        s.receive(o[0], Msg::Failed { ts: 1 }); // overtaken by the REPLY after it
        s.receive(o[1], Msg::Inquire { ts: 9 }); // not our request
        s.receive(o[0], Msg::Inquire { ts: 1 });
        assert!(s.sent().is_empty(), "no FAILED counts: defer");
    }

    #[test]
    fn light_load_costs_3_k_minus_1_for_both_constructions() {
        for (n, kind) in [
            (7, QuorumKind::Plane),
            (13, QuorumKind::Plane),
            (7, QuorumKind::Grid),
            (10, QuorumKind::Grid),
            (2, QuorumKind::Grid),
        ] {
            let params = Params {
                quorums: Some(kind),
                ..Params::default()
            };
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<Maekawa> = Pump::new(&ids, &params);
            for id in 0..n {
                let k = p.node(id).request_set().len();
                assert_eq!(p.serve_alone(id), 3 * (k - 1), "N={n} {kind:?} node {id}");
            }
        }
    }

    #[test]
    fn the_script_that_deadlocks_maekawa_basic_completes() {
        let qs = super::super::quorum::quorums(7, QuorumKind::Plane).unwrap();
        let t = deadlock_triple(&qs).unwrap();
        let mut p: Pump<Maekawa> = Pump::deadlock_script(7, t);
        let mut served = BTreeSet::new();
        for _ in 0..3 {
            p.drain(1000);
            let inside = p.in_cs();
            assert_eq!(inside.len(), 1, "{t:?}: one of the three enters");
            served.insert(inside[0]);
            p.input(inside[0].0, Input::Release);
        }
        p.drain(1000);
        assert_eq!(served.len(), 3);
        assert!(p.by_kind.contains_key("Inquire"), "{:?}", p.by_kind);
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_deadlock_free() {
        for (ids, kind) in [
            (vec![0, 1, 2, 3, 4, 5, 6], QuorumKind::Plane),
            (vec![0, 1, 2, 3, 4, 5], QuorumKind::Grid),
            (vec![0, 1, 2, 3], QuorumKind::Grid),
        ] {
            let params = Params {
                quorums: Some(kind),
                ..Params::default()
            };
            for seed in 0..150 {
                let mut p: Pump<Maekawa> = Pump::new(&ids, &params);
                assert_eq!(p.shake(seed, 4, false), 4 * ids.len());
            }
        }
    }
}
