//! Singhal 1992: the dynamic information-structure algorithm. Each site asks only the sites
//! whose permission it does not already hold (its request set), and the sets change as
//! permissions move, so that a site that uses the CS often ends up asking few others.
//!
//! Source: the notes only name it (seed 000 "Token Based Algorithm ... Singhal Algorithm etc.").
//! Implemented from M. Singhal, "A Dynamic Information-Structure Mutual Exclusion Algorithm for
//! Distributed Systems", IEEE TPDS 3(1):121-125, 1992, as restated in Singhal and Shivaratri,
//! "Advanced Concepts in Operating Systems" (1994) §6.9. Positions 1 .. N are the membership
//! order; R_i and I_i are kept without S_i itself (the paper keeps S_i in both and waits for
//! R_i = {S_i}). Rules:
//! 1. Init: R_i := {S_1 .. S_{i-1}} (`request_set`), I_i := {} (`inform_set`), C_i := 0
//!    (`clock`), not requesting, not executing. For every pair of sites one is in the other's
//!    request set, which is what keeps the CS safe.
//! 2. Request: requesting := true (`requesting`); C_i := C_i + 1; send REQUEST(C_i, i) to every
//!    site of R_i (`request_set`); wait until R_i is empty; then requesting := false,
//!    executing := true (`executing`), enter.
//! 3. On REQUEST(c_j, j), after C_i := max(C_i, c_j) (`clock`):
//!    - requesting (`requesting`), and the own request (ts_i, i) (`request`) precedes (c_j, j):
//!      I_i := I_i ∪ {S_j} (`inform_set`);
//!    - requesting, and (c_j, j) precedes: send REPLY to S_j; if S_j ∉ R_i (`request_set`) then
//!      R_i := R_i ∪ {S_j} and send REQUEST(ts_i, i) to S_j;
//!    - executing (`executing`): I_i := I_i ∪ {S_j};
//!    - neither: R_i := R_i ∪ {S_j} and send REPLY to S_j.
//! 4. On REPLY(c_j) from S_j: C_i := max(C_i, c_j); R_i := R_i − {S_j} (`request_set`).
//! 5. Release: executing := false (`executing`); for every S_j in I_i (`inform_set`) send REPLY
//!    to S_j and R_i := R_i ∪ {S_j} (`request_set`); then I_i := {}.
//!
//! A REPLY hands over the pair's permission: the sender adds the receiver to its request set.
//! Under light load a site asks about (N-1)/2 others on average, N-1 messages per entry. Under
//! heavy load every pair of sites exchanges one REQUEST and one REPLY per hand-over of the CS
//! between them: (N-1)(2R-1)/R per entry with R requests per site, 2(N-1) in the limit (3.80,
//! 7.60, 13.30 for N = 3, 5, 8 at R = 10), not the 3(N-1)/2 textbooks quote. Synchronization
//! delay T.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, Params, Peers, Process, Stamp,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Messages, named as in the paper; both carry the sender's logical clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST(C_i, i): the timestamp of the sender's request.
    Request { ts: u64 },
    /// REPLY(C_i): the pair's permission, with the sender's clock.
    Reply { ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
        }
    }
}

/// One site S_i.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Singhal {
    id: NodeId,
    /// C_i.
    clock: LamportClock,
    /// R_i: the sites whose permission S_i lacks (S_i itself left out).
    request_set: BTreeSet<NodeId>,
    /// I_i: the sites S_i must send its permission to when it leaves the CS.
    inform_set: BTreeSet<NodeId>,
    /// The timestamp of the outstanding request while requesting.
    request: Option<Stamp>,
    requesting: bool,
    executing: bool,
}

impl Algorithm for Singhal {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        let i = peers.index_of(id);
        Singhal {
            id,
            clock: LamportClock::default(),
            request_set: peers.ids()[..i].iter().copied().collect(),
            inform_set: BTreeSet::new(),
            request: None,
            requesting: false,
            executing: false,
        }
    }
}

impl MutualExclusion for Singhal {
    fn in_critical_section(&self) -> bool {
        self.executing
    }
}

impl Process for Singhal {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request if !self.requesting && !self.executing => {
                self.requesting = true;
                ctx.rule("2");
                let ts = self.clock.tick();
                self.request = Some(Stamp {
                    time: ts,
                    node: self.id,
                });
                for &j in &self.request_set {
                    ctx.send(j, Msg::Request { ts });
                }
                self.enter_if_permitted(ctx);
            }
            Input::Release if self.executing => {
                self.executing = false;
                ctx.rule("5");
                self.request = None;
                ctx.output(Output::Exit);
                let ts = self.clock.tick();
                for j in std::mem::take(&mut self.inform_set) {
                    ctx.send(j, Msg::Reply { ts });
                    self.request_set.insert(j);
                }
            }
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Request { ts } => {
                ctx.rule("3");
                self.clock.observe(ts);
                let theirs = Stamp {
                    time: ts,
                    node: from,
                };
                match self.request {
                    Some(ours) if self.requesting && ours < theirs => {
                        self.inform_set.insert(from);
                    }
                    Some(ours) if self.requesting => {
                        let reply = self.clock.tick();
                        ctx.send(from, Msg::Reply { ts: reply });
                        if self.request_set.insert(from) {
                            ctx.send(from, Msg::Request { ts: ours.time });
                        }
                    }
                    _ if self.executing => {
                        self.inform_set.insert(from);
                    }
                    _ => {
                        self.request_set.insert(from);
                        let reply = self.clock.tick();
                        ctx.send(from, Msg::Reply { ts: reply });
                    }
                }
            }
            Msg::Reply { ts } => {
                ctx.rule("4");
                self.clock.observe(ts);
                self.request_set.remove(&from);
                self.enter_if_permitted(ctx);
            }
        }
    }
}

impl Singhal {
    fn enter_if_permitted(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.requesting && self.request_set.is_empty() {
            self.requesting = false;
            self.executing = true;
            ctx.rule("2");
            ctx.output(Output::Enter);
        }
    }

    /// R_i, without S_i.
    pub fn request_set(&self) -> &BTreeSet<NodeId> {
        &self.request_set
    }

    /// I_i, without S_i.
    pub fn inform_set(&self) -> &BTreeSet<NodeId> {
        &self.inform_set
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn site(id: u32, peers: &Peers) -> Driver<'_, Singhal> {
        Driver::new(
            Singhal::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    fn set(ids: &[u32]) -> BTreeSet<NodeId> {
        ids.iter().map(|&i| NodeId(i)).collect()
    }

    #[test]
    fn init_gives_the_staircase_of_request_sets() {
        let peers = Peers::new([5, 2, 9, 1].map(NodeId).to_vec()).unwrap();
        let sets: Vec<BTreeSet<NodeId>> = [5, 2, 9, 1]
            .iter()
            .map(|&i| {
                Singhal::new(NodeId(i), &peers, &Params::default())
                    .request_set()
                    .clone()
            })
            .collect();
        assert_eq!(
            sets,
            vec![set(&[]), set(&[5]), set(&[5, 2]), set(&[5, 2, 9])]
        );
    }

    #[test]
    fn request_goes_to_the_request_set_only_and_an_empty_set_enters_at_once() {
        let peers = Peers::range(4);
        let mut s0 = site(0, &peers);
        s0.input(Input::Request);
        assert!(s0.sent().is_empty());
        assert_eq!(s0.outputs(), vec![Output::Enter]);
        let mut s2 = site(2, &peers);
        s2.input(Input::Request);
        assert_eq!(
            s2.sent(),
            vec![
                (NodeId(0), Msg::Request { ts: 1 }),
                (NodeId(1), Msg::Request { ts: 1 })
            ]
        );
        s2.receive(1, Msg::Reply { ts: 3 });
        assert_eq!(s2.process.request_set(), &set(&[0]));
        assert!(s2.outputs().is_empty());
        s2.receive(0, Msg::Reply { ts: 3 });
        assert_eq!(s2.outputs(), vec![Output::Enter]);
    }

    #[test]
    fn an_idle_site_replies_and_adds_the_requester_to_its_request_set() {
        let peers = Peers::range(4);
        let mut s0 = site(0, &peers);
        s0.receive(3, Msg::Request { ts: 1 });
        assert_eq!(s0.sent(), vec![(NodeId(3), Msg::Reply { ts: 3 })]);
        assert_eq!(s0.process.request_set(), &set(&[3]));
        // Next time 0 must ask 3.
        s0.input(Input::Request);
        assert_eq!(s0.sent(), vec![(NodeId(3), Msg::Request { ts: 4 })]);
    }

    #[test]
    fn an_executing_site_or_one_with_priority_informs_later() {
        let peers = Peers::range(4);
        let mut s0 = site(0, &peers);
        s0.input(Input::Request); // enters: R_0 empty
        s0.receive(2, Msg::Request { ts: 1 });
        assert!(s0.sent().is_empty());
        assert_eq!(s0.process.inform_set(), &set(&[2]));
        s0.input(Input::Release);
        assert_eq!(s0.sent(), vec![(NodeId(2), Msg::Reply { ts: 3 })]);
        assert_eq!(s0.process.request_set(), &set(&[2]));
        assert!(s0.process.inform_set().is_empty());

        let mut s1 = site(1, &peers); // R_1 = {0}
        s1.input(Input::Request); // (1, 1)
        s1.receive(3, Msg::Request { ts: 5 }); // (5, 3) is later: inform later
        assert!(s1.sent().is_empty());
        assert_eq!(s1.process.inform_set(), &set(&[3]));
    }

    #[test]
    fn a_requester_that_loses_the_comparison_replies_and_asks_back() {
        let peers = Peers::range(4);
        let mut s1 = site(1, &peers); // R_1 = {0}
        s1.receive(3, Msg::Request { ts: 1 }); // idle: reply, R_1 = {0, 3}
        s1.receive(0, Msg::Reply { ts: 1 });
        assert_eq!(s1.process.request_set(), &set(&[3]));
        s1.input(Input::Request); // (5, 1) to 3
        assert_eq!(s1.sent(), vec![(NodeId(3), Msg::Request { ts: 5 })]);
        // 2's request (2, 2) precedes (5, 1): reply, and since 2 is not in R_1, ask it too.
        s1.receive(2, Msg::Request { ts: 2 });
        assert_eq!(
            s1.sent(),
            vec![
                (NodeId(2), Msg::Reply { ts: 7 }),
                (NodeId(2), Msg::Request { ts: 5 })
            ]
        );
        assert_eq!(s1.process.request_set(), &set(&[2, 3]));
        // 3 is already in R_1: only the reply.
        s1.receive(3, Msg::Request { ts: 3 });
        assert_eq!(s1.sent(), vec![(NodeId(3), Msg::Reply { ts: 9 })]);
    }

    #[test]
    fn light_load_average_is_n_minus_1_from_the_initial_staircase() {
        // Each site once, in membership order, from the initial state: site i asks the i sites
        // before it and gets i replies; the average over the N sites is N-1.
        for n in 1..=8u32 {
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<Singhal> = Pump::new(&ids, &Params::default());
            let total: usize = (0..n).map(|i| p.serve_alone(i)).sum();
            assert_eq!(total, (n * (n - 1)) as usize, "N={n}");
        }
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_serve_everyone() {
        for n in [2u32, 3, 5] {
            let ids: Vec<u32> = (0..n).collect();
            for seed in 0..200 {
                let mut p: Pump<Singhal> = Pump::new(&ids, &Params::default());
                assert_eq!(p.shake(seed, 4, false), 4 * n as usize);
            }
        }
    }
}
