//! Peterson's election algorithm in a unidirectional ring (1982).
//!
//! Source: seed 004, Algorithm 4.20 (active and relay processes; tid, ntid, nntid; rounds) and
//! Example 4.21. Messages travel to the successor in ring order. Rules:
//! 1. An active process starts with tid = id. Each round it sends tid and receives ntid (the
//!    tid of the active process before it); then sends max(tid, ntid) and receives nntid.
//! 2. If ntid >= tid and ntid >= nntid (the first value received is at least as large as the
//!    other two), it stays active with tid = ntid for the next round; otherwise it becomes a
//!    relay process.
//! 3. A relay process passes every value on unchanged.
//! 4. A process that receives its own id (as ntid or nntid while active, as a value to pass on
//!    while a relay) is elected.
//!
//! The notes stop at "elected <- true"; here the elected process then announces itself with an
//! Elected message that goes once round the ring (each process records the leader and passes
//! it on; the leader removes it), and stops passing election values. A round (one execution of
//! the loop of code fragment I) at least halves the active processes, so at most floor(log2 n)
//! rounds are completed (`rounds()`; the last active process's final round, in which its value
//! reaches the leader, is never completed); each sends two messages per link (2n), and the
//! values still travelling when the leader recognises its id add at most n: at most
//! 2n*floor(log2 n) + n election messages, then n Elected. The leader recognises its id in round
//! ceil(log2 n) at the latest (`elected_in()`) on FIFO links.
//!
//! Messages carry their round, so that a process that receives a later round's value before the
//! current one (non-FIFO links, or relays between) keeps it until it is due. For crashes (the
//! notes assume none) messages also carry an epoch: a process that started or joined an
//! election and hears no Elected within T' (`coordinator_timeout`, default 4n T) starts a new
//! epoch, every process joins the highest epoch it hears of as a fresh active process, older
//! epochs' messages are dropped, an older epoch's value reaching a process outside any
//! election (a recovered process that missed the last one) starts a new epoch, and so does an
//! Elected naming a lower id than the receiver's own (it was down during that election). Crashed
//! successors are skipped by the ring link (ring_link.rs).

use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::time::Duration;

/// Messages. Both election messages are counted under the kind "Election".
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// `send(tid)`: the first message of a round, received as ntid.
    Tid { epoch: u32, round: u32, tid: NodeId },
    /// `send(max(tid, ntid))`: the second message of a round, received as nntid.
    Max { epoch: u32, round: u32, max: NodeId },
    /// The elected process announces itself.
    Elected { epoch: u32, leader: NodeId },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Tid { .. } | Msg::Max { .. } => "Election",
            Msg::Elected { .. } => "Elected",
        }
    }
}

/// T': no Elected in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// T'.
    TPrime,
}

/// What a process does in the current epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Role {
    /// Outside any election (before the first, or after the Elected message).
    Idle,
    /// Code fragment I of Algorithm 4.20.
    Active,
    /// Code fragment II: passes values on.
    Relay,
}

/// A value received before it was due: (round, second message of the round, value).
type Early = (u32, bool, NodeId);

/// One process of Peterson's algorithm.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Peterson {
    id: NodeId,
    role: Role,
    epoch: u32,
    round: u32,
    tid: NodeId,
    ntid: Option<NodeId>,
    nntid: Option<NodeId>,
    /// Values received before they were due (a few at most: kept in the process's own state).
    early: SmallVec<[Early; 2]>,
    leader: Option<NodeId>,
    /// Rounds completed as an active process (both values received and compared).
    completed: u32,
    /// The round in which this process received its own id.
    elected_in: Option<u32>,
    #[serde(skip)]
    t_prime: Duration,
}

impl Algorithm for Peterson {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        election::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Peterson {
            id,
            role: Role::Idle,
            epoch: 0,
            round: 0,
            tid: id,
            ntid: None,
            nntid: None,
            early: SmallVec::new(),
            leader: Some(election::initial_coordinator(peers, params)),
            completed: 0,
            elected_in: None,
            t_prime: election::coordinator_timeout(params, 4 * peers.len() as u32),
        }
    }
}

impl Election for Peterson {
    fn leader(&self) -> Option<NodeId> {
        self.leader
    }
    fn electing(&self) -> bool {
        self.role != Role::Idle
    }
    fn uses_ring() -> bool {
        true
    }
    fn rounds(&self) -> Option<u32> {
        Some(self.completed)
    }
}

impl Process for Peterson {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if ctx.recovered() {
            self.leader = None;
            self.join(self.epoch + 1, ctx);
        }
    }

    fn on_input(&mut self, Input::Start: Input, ctx: &mut Ctx<'_, Self>) {
        if self.role == Role::Idle {
            self.join(self.epoch + 1, ctx);
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let (epoch, round, second, value) = match msg {
            Msg::Elected { epoch, leader } => return self.on_elected(epoch, leader, ctx),
            Msg::Tid { epoch, round, tid } => (epoch, round, false, tid),
            Msg::Max { epoch, round, max } => (epoch, round, true, max),
        };
        if epoch < self.epoch {
            if self.role == Role::Idle {
                self.join(self.epoch + 1, ctx); // its sender missed the last election
            }
            return;
        }
        if epoch > self.epoch {
            self.join(epoch, ctx);
        }
        self.on_value((round, second, value), ctx);
    }

    fn on_timer(&mut self, Timer::TPrime: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.role != Role::Idle {
            self.join(self.epoch + 1, ctx);
        }
    }
}

impl Peterson {
    /// Enters `epoch` as an active process (rule 1) and sends tid.
    fn join(&mut self, epoch: u32, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.epoch = epoch;
        self.role = Role::Active;
        self.round = 1;
        self.tid = self.id;
        self.ntid = None;
        self.nntid = None;
        self.early.clear();
        self.leader = None;
        self.completed = 0;
        self.elected_in = None;
        ctx.set_timer(Timer::TPrime, self.t_prime);
        if ctx.peers().len() == 1 {
            return self.elected(1, ctx);
        }
        self.send_value(false, self.tid, ctx);
    }

    fn send_value(&self, second: bool, value: NodeId, ctx: &mut Ctx<'_, Self>) {
        let (epoch, round) = (self.epoch, self.round);
        let msg = if second {
            Msg::Max {
                epoch,
                round,
                max: value,
            }
        } else {
            Msg::Tid {
                epoch,
                round,
                tid: value,
            }
        };
        ctx.send(ctx.successor(), msg);
    }

    /// A value of the current epoch.
    fn on_value(&mut self, value: Early, ctx: &mut Ctx<'_, Self>) {
        match self.role {
            Role::Idle => {} // sent before its sender learned the result
            Role::Relay => self.relay(value, ctx),
            Role::Active => {
                self.early.push(value);
                // Take the values as they fall due: ntid, then nntid, round after round.
                while self.role == Role::Active {
                    let due = (self.round, self.ntid.is_some());
                    let Some(k) = self.early.iter().position(|e| (e.0, e.1) == due) else {
                        break;
                    };
                    let (_, second, v) = self.early.swap_remove(k);
                    self.active(second, v, ctx);
                }
                // Values of rounds already done are duplicates.
                let current = (self.round, self.ntid.is_some());
                self.early.retain(|e| (e.0, e.1) > current);
                if self.role == Role::Relay {
                    let mut early = std::mem::take(&mut self.early);
                    early.sort_by_key(|e| (e.0, e.1));
                    for e in early {
                        self.relay(e, ctx);
                    }
                }
            }
        }
    }

    /// Code fragment I, one receive.
    fn active(&mut self, second: bool, v: NodeId, ctx: &mut Ctx<'_, Self>) {
        if v == self.id {
            ctx.rule("4");
            return self.elected(self.round, ctx);
        }
        ctx.rule("1");
        if !second {
            self.ntid = Some(v);
            self.nntid = None;
            self.send_value(true, self.tid.max(v), ctx);
            return;
        }
        self.nntid = Some(v);
        self.completed = self.round;
        let ntid = self.ntid.expect("ntid is received before nntid");
        if ntid >= self.tid && ntid >= v {
            // Rule 2: stay active with the first value received.
            ctx.rule("2");
            self.tid = ntid;
            self.ntid = None;
            self.round += 1;
            self.send_value(false, self.tid, ctx);
        } else {
            ctx.rule("2");
            self.role = Role::Relay;
        }
    }

    /// Code fragment II, rule 3.
    fn relay(&mut self, (round, second, v): Early, ctx: &mut Ctx<'_, Self>) {
        if self.role != Role::Relay {
            return;
        }
        if v == self.id {
            ctx.rule("4");
            return self.elected(round, ctx);
        }
        ctx.rule("3");
        let epoch = self.epoch;
        let msg = if second {
            Msg::Max {
                epoch,
                round,
                max: v,
            }
        } else {
            Msg::Tid {
                epoch,
                round,
                tid: v,
            }
        };
        ctx.send(ctx.successor(), msg);
    }

    /// Rule 4, and the announcement.
    fn elected(&mut self, round: u32, ctx: &mut Ctx<'_, Self>) {
        self.role = Role::Idle;
        self.early.clear();
        self.elected_in = Some(round);
        self.leader = Some(self.id);
        ctx.cancel_timer(Timer::TPrime);
        ctx.output(Output::Leader(self.id));
        if ctx.peers().len() > 1 {
            ctx.send(
                ctx.successor(),
                Msg::Elected {
                    epoch: self.epoch,
                    leader: self.id,
                },
            );
        }
    }

    fn on_elected(&mut self, epoch: u32, leader: NodeId, ctx: &mut Ctx<'_, Self>) {
        if epoch < self.epoch || (epoch == self.epoch && leader == self.id) {
            return; // stale, or back at the leader: the election is over
        }
        if epoch == self.epoch && self.role == Role::Idle && self.leader == Some(leader) {
            return; // seen already: its leader crashed before removing it
        }
        if leader < self.id {
            // Elected without us (we were down): pass it on and start a newer epoch.
            ctx.send(ctx.successor(), Msg::Elected { epoch, leader });
            return self.join(self.epoch.max(epoch) + 1, ctx);
        }
        self.epoch = epoch;
        self.role = Role::Idle;
        self.early.clear();
        self.leader = Some(leader);
        ctx.cancel_timer(Timer::TPrime);
        ctx.output(Output::Leader(leader));
        ctx.send(ctx.successor(), Msg::Elected { epoch, leader });
    }

    /// Active, relay, or outside an election.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The round this process is in (as an active process) or was in when it became a relay.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The round in which this process received its own id, if it did.
    pub fn elected_in(&self) -> Option<u32> {
        self.elected_in
    }

    /// (tid, ntid, nntid): the values this process holds.
    pub fn values(&self) -> (NodeId, Option<NodeId>, Option<NodeId>) {
        (self.tid, self.ntid, self.nntid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::testkit::Net;
    use distsync_core::testing::Driver;
    use rand_core::{RngCore, SeedableRng};

    fn tid(round: u32, v: u32) -> Msg {
        Msg::Tid {
            epoch: 1,
            round,
            tid: NodeId(v),
        }
    }
    fn max(round: u32, v: u32) -> Msg {
        Msg::Max {
            epoch: 1,
            round,
            max: NodeId(v),
        }
    }

    /// Example 4.21: P3 (id 3) sends 3 to P2 (id 7), P2 sends 7 to P1 (id 4), then max(7, 3) =
    /// 7. P1 holds 4, 7, 7 and, the first received being at least as large as the other two,
    /// stays active with 7.
    #[test]
    fn example_4_21_p1_holds_4_7_7_and_stays_active_with_7() {
        let peers = Peers::new(vec![NodeId(3), NodeId(7), NodeId(4)]).unwrap();
        let mut p1 = Driver::new(
            Peterson::new(NodeId(4), &peers, &Params::default()),
            NodeId(4),
            &peers,
        );
        p1.input(Input::Start);
        assert_eq!(p1.sent(), vec![(NodeId(3), tid(1, 4))]);
        p1.receive(7, tid(1, 7));
        assert_eq!(p1.sent(), vec![(NodeId(3), max(1, 7))]);
        p1.receive(7, max(1, 7));
        assert_eq!(p1.process.role(), Role::Active);
        assert_eq!(p1.process.round(), 2);
        assert_eq!(p1.sent(), vec![(NodeId(3), tid(2, 7))]);
        let (tid_, _, nntid) = p1.process.values();
        assert_eq!((tid_, nntid), (NodeId(7), Some(NodeId(7))));

        // The same three processes on their own ring: P2 (7) sees 3 < 7 and P3 (3) sees
        // 4 < 7, both relay; P1's 7 comes round to P2 in round 2, and 7 is elected.
        let mut net: Net<Peterson> = Net::new(&[3, 7, 4], Params::default());
        for id in [3, 7, 4] {
            net.start(id);
        }
        net.run_until(distsync_core::Time::from_nanos(2_000_000));
        assert_eq!(net.process(4).values(), (NodeId(7), None, Some(NodeId(7))));
        assert_eq!(net.process(7).role(), Role::Relay);
        assert_eq!(net.process(3).role(), Role::Relay);
        net.run(1000);
        net.assert_all_agree_on(7);
        assert_eq!(net.process(7).elected_in(), Some(2));
        assert_eq!(net.process(4).rounds(), Some(1)); // round 2 never completes
        assert_eq!(net.count("Election"), 8);
        assert_eq!(net.count("Elected"), 3);
    }

    #[test]
    fn a_relay_passes_values_on_and_is_elected_by_its_own() {
        let peers = Peers::range(4);
        let mut p = Driver::new(
            Peterson::new(NodeId(1), &peers, &Params::default()),
            NodeId(1),
            &peers,
        );
        p.receive(0, tid(1, 0)); // joins epoch 1: sends its tid, then max(1, 0)
        assert_eq!(
            p.sent(),
            vec![(NodeId(2), tid(1, 1)), (NodeId(2), max(1, 1))]
        );
        p.receive(0, max(1, 3)); // 0 < 3: relay
        assert_eq!(p.process.role(), Role::Relay);
        p.receive(0, tid(2, 3));
        assert_eq!(p.sent(), vec![(NodeId(2), tid(2, 3))]);
        p.receive(0, max(2, 1));
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(1))]);
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(2),
                Msg::Elected {
                    epoch: 1,
                    leader: NodeId(1)
                }
            )]
        );
        assert_eq!(p.process.elected_in(), Some(2));
        assert_eq!(p.process.rounds(), Some(1));
    }

    #[test]
    fn values_arriving_early_wait_for_their_round() {
        let peers = Peers::range(4);
        let mut p = Driver::new(
            Peterson::new(NodeId(2), &peers, &Params::default()),
            NodeId(2),
            &peers,
        );
        p.input(Input::Start);
        p.receive(1, max(1, 3)); // nntid before ntid: kept
        assert!(p.sent().is_empty());
        p.receive(1, tid(1, 3)); // now both, in order: 3 >= 2 and 3 >= 3: active with 3
        assert_eq!(
            p.sent(),
            vec![(NodeId(3), max(1, 3)), (NodeId(3), tid(2, 3))]
        );
        assert_eq!(p.process.values().0, NodeId(3));
    }

    fn log2_floor(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }
    fn log2_ceil(n: usize) -> usize {
        log2_floor(n) + usize::from(!n.is_power_of_two())
    }

    /// Runs every process starting at once on ring `order` and checks the bounds.
    fn check(order: &[u32], net: &mut Net<Peterson>, fifo: bool) {
        let n = order.len();
        for &id in order {
            net.start(id);
        }
        net.run(1_000_000);
        let max = *order.iter().max().unwrap();
        net.assert_all_agree_on(max);
        let election = net.count("Election");
        assert!(
            election <= 2 * n * log2_floor(n) + n,
            "{order:?}: {election} election messages"
        );
        assert_eq!(net.count("Elected"), n, "{order:?}");
        let rounds = order
            .iter()
            .map(|&i| net.process(i).rounds().unwrap() as usize)
            .max()
            .unwrap();
        assert!(rounds <= log2_floor(n), "{order:?}: {rounds} rounds");
        let elected_in = net.process(max).elected_in().unwrap() as usize;
        if fifo {
            assert!(
                elected_in <= log2_ceil(n),
                "{order:?}: elected in {elected_in}"
            );
        }
    }

    fn permutations(n: u32) -> Vec<Vec<u32>> {
        // Heap's algorithm, iteratively.
        let mut a: Vec<u32> = (0..n).collect();
        let mut c = vec![0usize; n as usize];
        let mut out = vec![a.clone()];
        let mut i = 0;
        while i < n as usize {
            if c[i] < i {
                a.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
                out.push(a.clone());
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        out
    }

    #[test]
    fn bounds_hold_for_every_order_up_to_8() {
        for n in 2..=8 {
            let all = permutations(n);
            assert_eq!(all.len(), (1..=n as usize).product::<usize>());
            for order in all {
                let mut net: Net<Peterson> = Net::new(&order, Params::default());
                check(&order, &mut net, true);
            }
        }
    }

    #[test]
    fn bounds_hold_with_random_delays_and_reordering() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        for seed in 0..300u64 {
            let n = 2 + (rng.next_u64() % 30) as u32;
            let mut order: Vec<u32> = (0..n).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let mut net: Net<Peterson> = Net::new(&order, Params::default())
                .with_delay(seed, |_, _, rng| {
                    Duration::from_micros(100 + rng.next_u64() % 5000)
                });
            check(&order, &mut net, false);
        }
    }

    #[test]
    fn one_starter_wakes_the_others() {
        let order = [5, 2, 9, 1, 7, 3];
        let mut net: Net<Peterson> = Net::new(&order, Params::default());
        net.start(1);
        net.run(10_000);
        net.assert_all_agree_on(9);
    }
}
