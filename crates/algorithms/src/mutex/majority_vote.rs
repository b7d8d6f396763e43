//! The distributed lock manager of seed 001: a process enters the CS with the votes of a
//! majority of the processes.
//!
//! Source: seed 001 "Distributed Lock Manager" (timestamped REQUEST to all, GRANTED votes,
//! optional QUEUED replies, entry with a majority of votes, GRANTED to the queued requests on
//! leaving). Every process is both a requester and a voter; its own vote counts (locally, not
//! as a message), so it enters with floor(N/2)+1 votes. Rules:
//! 1. To enter, send REQUEST(ts) to every other process (ts from the Lamport clock; requests
//!    are ordered by (ts, id), the earlier first).
//! 2. A voter whose vote is free GRANTs it to the request. Otherwise it queues the request in
//!    (ts, id) order and answers QUEUED.
//! 3. Enter with votes from floor(N/2)+1 processes.
//! 4. On leaving, send RELEASE to every other process: it frees the vote where the process
//!    holds it and withdraws the request where it is still queued. A voter then GRANTs its vote
//!    to the earliest queued request.
//!
//! Safety: as the notes state it ("grant if not in the CS and no earlier request is queued")
//! a voter could vote for a later request and then, an earlier one arriving, for that one too,
//! and two majorities could form. Here a voter holds **one vote** and gives it to one request
//! at a time, until that request releases or yields it; any two majorities share a voter, so
//! two processes are never inside together.
//!
//! Deadlock: votes can split so that no request reaches a majority (N = 4: two votes each).
//! Maekawa's remedy resolves it:
//! 5. When a queued request is earlier than the one holding the vote (and earlier than every
//!    other queued one), the voter sends INQUIRE to the holder, once per vote.
//! 6. A requester asked by INQUIRE and not inside the CS gives the vote back with YIELD (a
//!    majority-voter has not entered because it lacks votes, so yielding never delays an entry
//!    that was possible); an INQUIRE that overtook its GRANTED waits for it.
//! 7. On YIELD the voter queues the request again and GRANTs the earliest queued one.
//!
//! The earliest request in the system thus collects every vote in the end: no deadlock, and
//! entries in timestamp order (no starvation). A vote only moves toward an earlier request,
//! so there is no livelock. Every message names its request's timestamp, so late messages
//! (channels need not be FIFO) are recognised: a GRANTED for a finished request is dropped,
//! since its RELEASE frees that vote at the voter, and a REQUEST arriving after its own RELEASE
//! is ignored.
//!
//! Uncontended: N-1 REQUEST, N-1 GRANTED, N-1 RELEASE = 3(N-1) messages per entry, i.e.
//! "about 2(N-1) + release"; contention adds QUEUED, INQUIRE, YIELD and repeated GRANTs.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, Params, Peers, Process, Stamp,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// Messages, named as in the notes; `ts` is the timestamp of the request concerned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST(ts).
    Request { ts: u64 },
    /// GRANTED: the voter's vote for request `ts`.
    Granted { ts: u64 },
    /// QUEUED: the vote is taken; request `ts` waits in the voter's queue.
    Queued { ts: u64 },
    /// RELEASE: the requester is done with request `ts`.
    Release { ts: u64 },
    /// INQUIRE: an earlier request waits for the vote request `ts` holds.
    Inquire { ts: u64 },
    /// YIELD: request `ts` gives the vote back.
    Yield { ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Granted { .. } => "Granted",
            Msg::Queued { .. } => "Queued",
            Msg::Release { .. } => "Release",
            Msg::Inquire { .. } => "Inquire",
            Msg::Yield { .. } => "Yield",
        }
    }
}

/// One process: requester and voter.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct MajorityVote {
    id: NodeId,
    clock: LamportClock,
    /// floor(N/2) + 1.
    majority: usize,

    /// Requester: the outstanding request.
    request: Option<Stamp>,
    in_cs: bool,
    /// Requester: the voters whose vote it holds.
    votes: BTreeSet<NodeId>,
    /// Requester: the voters that answered QUEUED (alive, vote taken).
    queued_at: BTreeSet<NodeId>,
    /// Requester: INQUIREs whose GRANTED has not arrived yet.
    inquiries: BTreeSet<NodeId>,

    /// Voter: the request holding this process's vote.
    vote: Option<Stamp>,
    /// Voter: an INQUIRE was sent for the current vote.
    inquired: bool,
    /// Voter: waiting requests, earliest first.
    queue: BTreeSet<Stamp>,
    /// Voter: per membership position, the timestamp of the last request released.
    released: Vec<u64>,

    /// Messages from this process to itself, handled before the handler returns.
    local: VecDeque<Msg>,
}

impl Algorithm for MajorityVote {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        MajorityVote {
            id,
            clock: LamportClock::default(),
            majority: peers.len() / 2 + 1,
            request: None,
            in_cs: false,
            votes: BTreeSet::new(),
            queued_at: BTreeSet::new(),
            inquiries: BTreeSet::new(),
            vote: None,
            inquired: false,
            queue: BTreeSet::new(),
            released: vec![0; peers.len()],
            local: VecDeque::new(),
        }
    }
}

impl MutualExclusion for MajorityVote {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for MajorityVote {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 1 (the own vote is asked locally).
            Input::Request if self.request.is_none() => {
                ctx.rule("1");
                let ts = self.clock.tick();
                self.request = Some(Stamp {
                    time: ts,
                    node: self.id,
                });
                self.votes.clear();
                self.queued_at.clear();
                self.inquiries.clear();
                ctx.broadcast(Msg::Request { ts });
                self.local.push_back(Msg::Request { ts });
            }
            // Rule 4.
            Input::Release if self.in_cs => {
                ctx.rule("4");
                let ts = self.request.take().map_or(0, |r| r.time);
                self.in_cs = false;
                self.votes.clear();
                ctx.output(Output::Exit);
                ctx.broadcast(Msg::Release { ts });
                self.local.push_back(Msg::Release { ts });
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

impl MajorityVote {
    fn handle(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let stamp = Stamp {
            time: msg_ts(&msg),
            node: from,
        };
        match msg {
            Msg::Request { ts } => {
                self.clock.observe(ts);
                self.on_request(stamp, ctx);
            }
            Msg::Release { .. } => self.on_release(stamp, ctx),
            Msg::Yield { .. } => self.on_yield(stamp, ctx),
            Msg::Granted { ts } if self.is_current(ts) => self.on_granted(from, ctx),
            Msg::Queued { ts } if self.is_current(ts) => {
                self.queued_at.insert(from);
            }
            Msg::Inquire { ts } if self.is_current(ts) && !self.in_cs => {
                if self.votes.contains(&from) {
                    self.give_back(from, ctx);
                } else {
                    self.inquiries.insert(from);
                }
            }
            // Out of date (its RELEASE frees the vote), or an INQUIRE inside the CS.
            Msg::Granted { .. } | Msg::Queued { .. } | Msg::Inquire { .. } => {}
        }
    }

    fn is_current(&self, ts: u64) -> bool {
        self.request.is_some_and(|r| r.time == ts)
    }

    // ----- requester -----

    /// Rule 3.
    fn on_granted(&mut self, from: NodeId, ctx: &mut Ctx<'_, Self>) {
        if self.in_cs {
            // A late vote for the request inside: held until the RELEASE, like the others.
            self.votes.insert(from);
            return;
        }
        self.votes.insert(from);
        self.queued_at.remove(&from);
        if self.votes.len() >= self.majority {
            ctx.rule("3");
            self.in_cs = true;
            self.inquiries.clear();
            ctx.output(Output::Enter);
        } else if self.inquiries.remove(&from) {
            // Rule 6 for an INQUIRE that came before this vote.
            self.give_back(from, ctx);
        }
    }

    /// Rule 6.
    fn give_back(&mut self, voter: NodeId, ctx: &mut Ctx<'_, Self>) {
        let Some(ts) = self.request.map(|r| r.time) else {
            return;
        };
        ctx.rule("6");
        self.votes.remove(&voter);
        self.post(voter, Msg::Yield { ts }, ctx);
    }

    // ----- voter -----

    /// Rules 2 and 5.
    fn on_request(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("2");
        let pos = ctx.peers().position(s.node);
        if pos.is_some_and(|p| s.time <= self.released[p]) {
            return; // it arrived after its own RELEASE
        }
        if self.vote.is_none() {
            self.grant(s, ctx);
        } else {
            self.queue.insert(s);
            self.post(s.node, Msg::Queued { ts: s.time }, ctx);
            self.inquire(ctx);
        }
    }

    /// Rule 4 at the voter.
    fn on_release(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        if let Some(p) = ctx.peers().position(s.node) {
            self.released[p] = self.released[p].max(s.time);
        }
        if self.vote == Some(s) {
            self.vote = None;
            self.grant_next(ctx);
        } else {
            self.queue.remove(&s);
        }
    }

    /// Rule 7.
    fn on_yield(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        if self.vote == Some(s) {
            ctx.rule("7");
            self.vote = None;
            self.queue.insert(s);
            self.grant_next(ctx);
        }
    }

    fn grant(&mut self, s: Stamp, ctx: &mut Ctx<'_, Self>) {
        self.vote = Some(s);
        self.inquired = false;
        self.post(s.node, Msg::Granted { ts: s.time }, ctx);
    }

    fn grant_next(&mut self, ctx: &mut Ctx<'_, Self>) {
        if let Some(s) = self.queue.pop_first() {
            self.grant(s, ctx);
        }
    }

    /// Rule 5.
    fn inquire(&mut self, ctx: &mut Ctx<'_, Self>) {
        let (Some(holder), Some(&best)) = (self.vote, self.queue.first()) else {
            return;
        };
        if best < holder && !self.inquired {
            ctx.rule("5");
            self.inquired = true;
            self.post(holder.node, Msg::Inquire { ts: holder.time }, ctx);
        }
    }

    /// Sends, or handles locally what is addressed to this process itself.
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

    /// floor(N/2) + 1.
    pub fn majority(&self) -> usize {
        self.majority
    }

    /// Requester: the voters whose vote it holds.
    pub fn votes(&self) -> &BTreeSet<NodeId> {
        &self.votes
    }

    /// Requester: the voters that said QUEUED for the current request.
    pub fn queued_at(&self) -> &BTreeSet<NodeId> {
        &self.queued_at
    }

    /// Voter: the request holding the vote.
    pub fn vote(&self) -> Option<Stamp> {
        self.vote
    }

    /// Voter: the waiting requests, earliest first.
    pub fn queue(&self) -> impl Iterator<Item = &Stamp> {
        self.queue.iter()
    }
}

fn msg_ts(msg: &Msg) -> u64 {
    match *msg {
        Msg::Request { ts }
        | Msg::Granted { ts }
        | Msg::Queued { ts }
        | Msg::Release { ts }
        | Msg::Inquire { ts }
        | Msg::Yield { ts } => ts,
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn process(id: u32, peers: &Peers) -> Driver<'_, MajorityVote> {
        Driver::new(
            MajorityVote::new(NodeId(id), peers, &Params::default()),
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

    #[test]
    fn rule_1_request_to_all_others_with_the_own_vote_taken_locally() {
        let peers = Peers::range(5);
        let mut p = process(0, &peers);
        p.input(Input::Request);
        assert_eq!(
            p.sent(),
            (1..5)
                .map(|j| (NodeId(j), Msg::Request { ts: 1 }))
                .collect::<Vec<_>>()
        );
        assert_eq!(p.process.vote(), Some(st(1, 0)));
        assert_eq!(p.process.votes(), &BTreeSet::from([NodeId(0)]));
        assert_eq!(p.process.majority(), 3);
    }

    #[test]
    fn rule_2_one_vote_at_a_time_the_rest_queued_in_timestamp_order() {
        let peers = Peers::range(5);
        let mut v = process(4, &peers);
        v.receive(2, Msg::Request { ts: 6 });
        assert_eq!(v.sent(), vec![(NodeId(2), Msg::Granted { ts: 6 })]);
        v.receive(3, Msg::Request { ts: 9 });
        assert_eq!(v.sent(), vec![(NodeId(3), Msg::Queued { ts: 9 })]);
        // An earlier request: queued too (the vote is taken), and rule 5 inquires.
        v.receive(1, Msg::Request { ts: 5 });
        assert_eq!(
            v.sent(),
            vec![
                (NodeId(1), Msg::Queued { ts: 5 }),
                (NodeId(2), Msg::Inquire { ts: 6 })
            ]
        );
        assert_eq!(
            v.process.vote(),
            Some(st(6, 2)),
            "still one vote, still 2's"
        );
        assert_eq!(
            v.process.queue().copied().collect::<Vec<_>>(),
            vec![st(5, 1), st(9, 3)]
        );
        // An even earlier one: queued, no second INQUIRE for the same vote.
        v.receive(0, Msg::Request { ts: 2 });
        assert_eq!(v.sent(), vec![(NodeId(0), Msg::Queued { ts: 2 })]);
    }

    #[test]
    fn rule_3_enter_with_a_majority_counting_the_own_vote() {
        let peers = Peers::range(5);
        let mut p = process(0, &peers);
        p.input(Input::Request);
        p.receive(3, Msg::Granted { ts: 1 });
        assert!(p.outputs().is_empty(), "2 of 5");
        p.receive(1, Msg::Queued { ts: 1 });
        assert_eq!(p.process.queued_at(), &BTreeSet::from([NodeId(1)]));
        p.receive(2, Msg::Granted { ts: 1 });
        assert_eq!(p.outputs(), vec![Output::Enter], "3 of 5");
    }

    #[test]
    fn rule_4_release_goes_to_all_and_frees_or_withdraws() {
        let peers = Peers::range(3);
        let mut p = process(0, &peers);
        p.input(Input::Request);
        p.receive(1, Msg::Granted { ts: 1 });
        assert_eq!(p.outputs(), vec![Output::Enter], "2 of 3");
        p.input(Input::Release);
        assert_eq!(
            p.sent(),
            vec![
                (NodeId(1), Msg::Release { ts: 1 }),
                (NodeId(2), Msg::Release { ts: 1 })
            ]
        );
        assert_eq!(p.process.vote(), None, "own vote freed");
        // 2's vote arrives after the exit: out of date, dropped; 2's vote is freed by the
        // RELEASE it gets.
        p.receive(2, Msg::Granted { ts: 1 });
        assert!(p.sent().is_empty());

        let mut v = process(2, &peers);
        v.receive(0, Msg::Request { ts: 1 });
        v.receive(1, Msg::Request { ts: 3 });
        v.receive(0, Msg::Release { ts: 1 });
        assert_eq!(v.sent(), vec![(NodeId(1), Msg::Granted { ts: 3 })]);
        // A withdrawn request leaves the queue without a GRANT.
        v.receive(0, Msg::Request { ts: 5 });
        v.receive(0, Msg::Release { ts: 5 });
        assert!(v.sent().is_empty());
        assert_eq!(v.process.queue().count(), 0);
        // A REQUEST that arrives after its own RELEASE is ignored.
        v.receive(1, Msg::Release { ts: 3 });
        v.receive(0, Msg::Release { ts: 7 });
        v.receive(0, Msg::Request { ts: 7 });
        assert!(v.sent().is_empty());
        assert_eq!(v.process.vote(), None);
    }

    #[test]
    fn rules_6_and_7_yield_to_an_earlier_request_and_the_vote_moves() {
        let peers = Peers::range(5);
        let mut p = process(3, &peers);
        p.input(Input::Request); // (1, 3)
        p.receive(4, Msg::Granted { ts: 1 });
        p.receive(4, Msg::Inquire { ts: 1 });
        assert_eq!(p.sent(), vec![(NodeId(4), Msg::Yield { ts: 1 })]);
        assert_eq!(p.process.votes(), &BTreeSet::from([NodeId(3)]));
        // An INQUIRE ahead of its GRANTED waits for it, then yields.
        p.receive(1, Msg::Inquire { ts: 1 });
        assert!(p.sent().is_empty());
        p.receive(1, Msg::Granted { ts: 1 });
        assert_eq!(p.sent(), vec![(NodeId(1), Msg::Yield { ts: 1 })]);
        // Inside the CS an INQUIRE is ignored.
        p.receive(0, Msg::Granted { ts: 1 });
        p.receive(2, Msg::Granted { ts: 1 });
        assert_eq!(p.outputs(), vec![Output::Enter]);
        p.receive(0, Msg::Inquire { ts: 1 });
        assert!(p.sent().is_empty());

        let mut v = process(4, &peers);
        v.receive(2, Msg::Request { ts: 6 });
        v.receive(1, Msg::Request { ts: 5 });
        v.receive(2, Msg::Yield { ts: 6 });
        assert_eq!(v.sent(), vec![(NodeId(1), Msg::Granted { ts: 5 })]);
        assert_eq!(
            v.process.queue().copied().collect::<Vec<_>>(),
            vec![st(6, 2)]
        );
    }

    #[test]
    fn split_votes_resolve_toward_the_earliest_request() {
        // N = 4, majority 3. 0 and 3 request at once; 1 votes for 0 first and 2 for 3 first:
        // two votes each, a deadlock without rules 5-7.
        let mut p: Pump<MajorityVote> = Pump::new(&[0, 1, 2, 3], &Params::default());
        p.input(0, Input::Request).input(3, Input::Request);
        p.deliver(0, 1);
        p.deliver(3, 2);
        p.deliver(3, 1);
        p.deliver(0, 2);
        p.drain(1000);
        // (1, 0) precedes (1, 3): 0 gets in first.
        assert_eq!(p.in_cs(), vec![NodeId(0)]);
        p.input(0, Input::Release).drain(1000);
        assert_eq!(p.in_cs(), vec![NodeId(3)]);
        p.input(3, Input::Release).drain(1000);
        assert!(p.in_cs().is_empty());
        assert!(p.by_kind["Yield"] >= 1, "{:?}", p.by_kind);
    }

    #[test]
    fn light_load_costs_3_n_minus_1() {
        for n in 1..=7u32 {
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<MajorityVote> = Pump::new(&ids, &Params::default());
            for id in (0..n).chain(0..n) {
                assert_eq!(p.serve_alone(id), 3 * (n as usize - 1), "N={n} node {id}");
            }
        }
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_serve_everyone() {
        for n in [2u32, 3, 4, 5, 6] {
            let ids: Vec<u32> = (0..n).collect();
            for seed in 0..150 {
                let mut p: Pump<MajorityVote> = Pump::new(&ids, &Params::default());
                assert_eq!(p.shake(seed, 4, false), 4 * n as usize);
            }
        }
    }
}
