//! The bully algorithm (Garcia-Molina 1982).
//!
//! Source: seed 000 "Bully Algorithm: Basic Steps" and "Detailed Algorithm" (timeouts T and T'),
//! seed 001 "Bully Election Algorithm", seed 002 "The Bully Algorithm" (eight processes, 7
//! crashed, 4 notices, 6 wins, 7 recovers and takes over), seed 003 "The Bully Algorithm". Rules:
//! 1. A process that notices the coordinator is gone sends ELECTION to every process with a
//!    higher id and waits T for an answer; with no higher id at all it wins at once.
//! 2. On ELECTION from a lower id: answer OK ("I am alive and will take over") and hold an
//!    election of its own, unless it has already initiated one.
//! 3. On OK: its part is done; wait T' for a higher process to announce itself as coordinator.
//! 4. No OK within T: every higher process has failed; it is the coordinator and sends
//!    COORDINATOR to every process with a lower id.
//! 5. No COORDINATOR within T': the higher process failed too; restart the election.
//! 6. On COORDINATOR from a higher id: record the new coordinator. From a lower id: bully it,
//!    i.e. hold an election at once (the higher process takes the role back).
//! 7. A recovered process holds an election at once; the highest live one therefore wins and
//!    forces every lower process to take it as coordinator, even over a live lower coordinator.
//!
//! Rule 6 read for the processes in between: a COORDINATOR from `q` that reaches a process
//! which has heard a COORDINATOR from a higher `c > q` since it last started an election (and
//! has not started one since) contradicts what it knows, so it does not take `q`: it holds an
//! election (rule 1), which `c` wins again if it is alive and `q` (or a higher live process)
//! wins if not. Without this, two announcements that cross after a recovery (a process
//! announces itself after T while a higher one recovers and announces too) leave a process
//! naming the lower, stale leader for ever, since nothing else ever tells it otherwise (the
//! failure detector's heartbeats did; `distsync check --algo bully --nodes 3 --crash 1 --recover
//! 1` found it in 9 steps). A leader only assumed at the start (the initial coordinator, never
//! heard from) does not count, so the seed examples, where the lower processes first hear of a
//! winner below a coordinator that crashed before the run, are unchanged, as are all their
//! message counts.
//!
//! Messages (constant delay d, T larger than a round trip): when the highest live process
//! detects, 1 ELECTION per crashed higher process and n-2 COORDINATOR messages (one crashed
//! coordinator of n). When the lowest, process 0, detects the crash of coordinator n-1,
//! processes 0..n-2 each send ELECTION to every higher process, n(n-1)/2 in all; each live
//! process k >= 1 answers OK to each of the k lower ones, (n-1)(n-2)/2 in all; and n-2 wins and
//! sends n-2 COORDINATOR messages: n^2 - n - 1 messages altogether.
//!
//! T is `answer_timeout` (default 10ms); T' is `coordinator_timeout` (default 3T, enough for the
//! highest live process to wait out its own T and announce).

use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Sent to every higher process: an election is on.
    Election,
    /// The answer to ELECTION: "I am alive and will take over".
    Ok,
    /// Sent by the winner to every lower process: I am the coordinator.
    Coordinator,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Election => "Election",
            Msg::Ok => "Ok",
            Msg::Coordinator => "Coordinator",
        }
    }
}

/// The two timeouts of the notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// T: waiting for an OK after sending ELECTION.
    T,
    /// T': waiting for COORDINATOR after an OK.
    TPrime,
}

/// Where a process stands in an election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum State {
    /// Not electing; `coordinator` says who leads.
    Normal,
    /// ELECTION sent to the higher processes; waiting T for an OK.
    Electing,
    /// An OK came; waiting T' for the COORDINATOR message.
    AwaitingCoordinator,
}

/// One process of the bully algorithm.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Bully {
    id: NodeId,
    /// The coordinator this process believes in.
    coordinator: Option<NodeId>,
    /// Whether `coordinator` announced itself to this process (its COORDINATOR came, or this
    /// process won) rather than being the leader assumed at the start.
    heard: bool,
    state: State,
    #[serde(skip)]
    t: Duration,
    #[serde(skip)]
    t_prime: Duration,
}

impl Algorithm for Bully {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        election::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Bully {
            id,
            coordinator: Some(election::initial_coordinator(peers, params)),
            heard: false,
            state: State::Normal,
            t: election::answer_timeout(params),
            t_prime: election::coordinator_timeout(params, 3),
        }
    }
}

impl Election for Bully {
    fn leader(&self) -> Option<NodeId> {
        self.coordinator
    }

    fn electing(&self) -> bool {
        self.state != State::Normal
    }
}

impl Process for Bully {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    // Rule 7.
    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if ctx.recovered() {
            ctx.rule("7");
            self.coordinator = None;
            self.hold_election(ctx);
        }
    }

    // Rule 1; a process already electing carries on with that election.
    fn on_input(&mut self, Input::Start: Input, ctx: &mut Ctx<'_, Self>) {
        if self.state == State::Normal {
            self.hold_election(ctx);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2.
            Msg::Election if from < self.id => {
                ctx.rule("2");
                ctx.send(from, Msg::Ok);
                if self.state == State::Normal {
                    self.hold_election(ctx);
                }
            }
            // Rule 3.
            Msg::Ok if self.state == State::Electing => {
                ctx.rule("3");
                self.state = State::AwaitingCoordinator;
                ctx.cancel_timer(Timer::T);
                ctx.set_timer(Timer::TPrime, self.t_prime);
            }
            // Rule 6, for a process between two announcements: a higher coordinator it has
            // heard from outranks this one; an election tells which is alive.
            Msg::Coordinator
                if from > self.id && self.heard && self.coordinator.is_some_and(|c| c > from) =>
            {
                ctx.rule("6");
                self.hold_election(ctx);
            }
            // Rule 6.
            Msg::Coordinator if from > self.id => {
                ctx.rule("6");
                self.state = State::Normal;
                self.heard = true;
                ctx.cancel_timer(Timer::T);
                ctx.cancel_timer(Timer::TPrime);
                self.coordinator = Some(from);
                ctx.output(Output::Leader(from));
            }
            Msg::Coordinator if self.state == State::Normal => {
                ctx.rule("6");
                self.hold_election(ctx);
            }
            // An ELECTION from above, an OK when not waiting for one, a lower COORDINATOR
            // during an election of our own (which will bully it anyway): nothing to do.
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Timer, ctx: &mut Ctx<'_, Self>) {
        match (timer, self.state) {
            // Rule 4.
            (Timer::T, State::Electing) => self.win(ctx),
            // Rule 5.
            (Timer::TPrime, State::AwaitingCoordinator) => {
                ctx.rule("5");
                self.hold_election(ctx);
            }
            _ => {}
        }
    }
}

impl Bully {
    /// Rule 1: ELECTION to every higher process, or victory when there is none.
    fn hold_election(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.coordinator = None;
        self.heard = false;
        ctx.cancel_timer(Timer::TPrime);
        let me = self.id;
        let higher = ctx.peers().ids().iter().filter(|&&j| j > me);
        let mut any = false;
        for &j in higher {
            ctx.send(j, Msg::Election);
            any = true;
        }
        if any {
            self.state = State::Electing;
            ctx.set_timer(Timer::T, self.t);
        } else {
            self.win(ctx);
        }
    }

    /// Rule 4: COORDINATOR to every lower process.
    fn win(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("4");
        self.state = State::Normal;
        self.coordinator = Some(self.id);
        self.heard = true;
        let me = self.id;
        for &j in ctx.peers().ids().iter().filter(|&&j| j < me) {
            ctx.send(j, Msg::Coordinator);
        }
        ctx.output(Output::Leader(me));
    }

    /// Where this process stands.
    pub fn state(&self) -> State {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::testkit::Net;
    use distsync_core::testing::Driver;
    use distsync_core::Time;

    fn process(id: u32, peers: &Peers) -> Driver<'_, Bully> {
        Driver::new(
            Bully::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    fn to(ids: &[u32], msg: Msg) -> Vec<(NodeId, Msg)> {
        ids.iter().map(|&i| (NodeId(i), msg.clone())).collect()
    }

    #[test]
    fn election_goes_to_higher_ids_only_and_silence_means_victory() {
        let peers = Peers::range(5);
        let mut p = process(2, &peers);
        assert_eq!(p.process.leader(), Some(NodeId(4)));
        p.input(Input::Start);
        assert_eq!(p.sent(), to(&[3, 4], Msg::Election));
        assert_eq!(p.process.state(), State::Electing);
        assert_eq!(p.process.leader(), None);
        p.fire(Timer::T);
        assert_eq!(p.sent(), to(&[0, 1], Msg::Coordinator));
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(2))]);
    }

    #[test]
    fn an_ok_hands_over_and_t_prime_restarts() {
        let peers = Peers::range(5);
        let mut p = process(2, &peers);
        p.input(Input::Start);
        p.receive(3, Msg::Ok);
        assert_eq!(p.process.state(), State::AwaitingCoordinator);
        assert!(p.sent().is_empty());
        p.fire(Timer::T); // cancelled in a real runtime; stale here: nothing happens
        assert!(p.outputs().is_empty());
        p.fire(Timer::TPrime);
        assert_eq!(p.sent(), to(&[3, 4], Msg::Election));
        assert_eq!(p.process.state(), State::Electing);
    }

    #[test]
    fn election_from_below_is_answered_and_taken_over_once() {
        let peers = Peers::range(5);
        let mut p = process(3, &peers);
        p.receive(1, Msg::Election);
        assert_eq!(
            p.sent(),
            vec![(NodeId(1), Msg::Ok), (NodeId(4), Msg::Election)]
        );
        p.receive(2, Msg::Election); // already electing: answer only
        assert_eq!(p.sent(), vec![(NodeId(2), Msg::Ok)]);
    }

    #[test]
    fn the_highest_process_wins_without_waiting_and_bullies_a_lower_coordinator() {
        let peers = Peers::range(4);
        let mut p = process(3, &peers);
        p.input(Input::Start);
        assert_eq!(p.sent(), to(&[0, 1, 2], Msg::Coordinator));
        p.receive(2, Msg::Coordinator);
        assert_eq!(p.sent(), to(&[0, 1, 2], Msg::Coordinator));
        let mut low = process(1, &peers);
        low.receive(3, Msg::Coordinator);
        assert_eq!(low.outputs(), vec![Output::Leader(NodeId(3))]);
        assert!(!low.process.electing());
    }

    /// Seed 002: eight processes, 7 (the coordinator) has crashed, 4 notices. 5 and 6 answer
    /// OK and hold their own elections; 6 answers 5; 6 hears nothing from 7 within T and tells
    /// everyone. Then 7 comes back and bullies them all.
    #[test]
    fn seed_002_eight_processes() {
        let mut net: Net<Bully> = Net::new(&[0, 1, 2, 3, 4, 5, 6, 7], Params::default());
        net.crash(7);
        net.start(4);
        let first: Vec<_> = net.sent.iter().map(|s| (s.from.0, s.to.0)).collect();
        assert_eq!(first, vec![(4, 5), (4, 6), (4, 7)]);
        net.run_until(Time::from_nanos(1_000_000));
        // Both answer OK and hold their own elections.
        let step: Vec<_> = net.sent[3..]
            .iter()
            .map(|s| (s.from.0, s.to.0, s.msg.clone()))
            .collect();
        assert_eq!(
            step,
            vec![
                (5, 4, Msg::Ok),
                (5, 6, Msg::Election),
                (5, 7, Msg::Election),
                (6, 4, Msg::Ok),
                (6, 7, Msg::Election),
            ]
        );
        net.run(1000);
        assert_eq!(net.count("Election"), 6);
        assert_eq!(net.count("Ok"), 3); // 5 to 4, 6 to 4, 6 to 5
        let coordinator: Vec<_> = net
            .sent
            .iter()
            .filter(|s| s.msg == Msg::Coordinator)
            .map(|s| (s.from.0, s.to.0))
            .collect();
        assert_eq!(coordinator, (0..6).map(|k| (6, k)).collect::<Vec<_>>());
        net.assert_all_agree_on(6);
        // 6 waited T for an answer from 7: it announces 1ms + T after 4 noticed.
        let won = net.outputs.iter().find(|o| o.1 == NodeId(6)).unwrap();
        assert_eq!(won.0, Time::from_nanos(11_000_000));

        // 7 recovers, holds an election, has no higher process: COORDINATOR to all.
        let before = net.sent.len();
        net.recover(7);
        net.run(1000);
        let bully: Vec<_> = net.sent[before..]
            .iter()
            .map(|s| (s.from.0, s.to.0, s.msg.clone()))
            .collect();
        assert_eq!(
            bully,
            (0..7).map(|k| (7, k, Msg::Coordinator)).collect::<Vec<_>>()
        );
        net.assert_all_agree_on(7);
    }

    /// Best case: the highest live process detects. One ELECTION (to the crashed coordinator)
    /// and n-2 COORDINATOR messages.
    #[test]
    fn best_case_is_n_minus_2_coordinator_messages() {
        for n in 3..=12u32 {
            let ids: Vec<u32> = (0..n).collect();
            let mut net: Net<Bully> = Net::new(&ids, Params::default());
            net.crash(n - 1);
            net.start(n - 2);
            net.run(100_000);
            assert_eq!(net.count("Coordinator"), n as usize - 2, "n = {n}");
            assert_eq!(net.count("Election"), 1);
            assert_eq!(net.count("Ok"), 0);
            net.assert_all_agree_on(n - 2);
        }
    }

    /// Worst case: the lowest process detects: n(n-1)/2 ELECTION, (n-1)(n-2)/2 OK and n-2
    /// COORDINATOR messages, n^2 - n - 1 in all (see the header).
    #[test]
    fn worst_case_when_the_lowest_detects() {
        for n in 3..=12usize {
            let ids: Vec<u32> = (0..n as u32).collect();
            let mut net: Net<Bully> = Net::new(&ids, Params::default());
            net.crash(n as u32 - 1);
            net.start(0);
            net.run(100_000);
            assert_eq!(net.count("Election"), n * (n - 1) / 2, "n = {n}");
            assert_eq!(net.count("Ok"), (n - 1) * (n - 2) / 2, "n = {n}");
            assert_eq!(net.count("Coordinator"), n - 2, "n = {n}");
            assert_eq!(net.sent.len(), n * n - n - 1);
            net.assert_all_agree_on(n as u32 - 2);
        }
    }

    /// Two COORDINATOR broadcasts cross after a recovery: 0 hears 2's, then a late one of 1
    /// (sent before 2 came back). 0 does not take the lower leader: it holds an election, which
    /// 2 answers and wins again.
    #[test]
    fn a_lower_coordinator_after_a_higher_one_starts_an_election() {
        let peers = Peers::range(3);
        let mut p = process(0, &peers);
        p.receive(2, Msg::Coordinator);
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(2))]);
        p.receive(1, Msg::Coordinator);
        assert!(p.outputs().is_empty());
        assert_eq!(p.sent(), to(&[1, 2], Msg::Election));
        assert_eq!(p.process.state(), State::Electing);
        // The election's result is taken, whoever wins it (here 2 has crashed again and 1
        // wins).
        p.receive(1, Msg::Ok);
        p.receive(1, Msg::Coordinator);
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(1))]);
        // A lower COORDINATOR after a leader only assumed at the start (never heard from) is
        // taken at once, as in seed 002.
        let mut q = process(0, &peers);
        q.receive(1, Msg::Coordinator);
        assert_eq!(q.outputs(), vec![Output::Leader(NodeId(1))]);
        assert!(q.sent().is_empty());
    }

    /// In a 4-process crossing (2 and 3 recovered), the same from the network: 1 and 0 get
    /// 3's COORDINATOR before 2's, and all end naming 3.
    #[test]
    fn crossing_coordinators_end_on_the_highest() {
        // 2's messages take 5ms, the others 1ms.
        let mut net: Net<Bully> = Net::new(&[0, 1, 2, 3], Params::default())
            .with_delay(1, |from, _, _| {
                Duration::from_millis(if from == NodeId(2) { 5 } else { 1 })
            });
        // 3 is down; 2 elects and wins after T (10ms), its COORDINATOR due at 0 and 1 at 15ms;
        // 3 recovers at 12ms and wins at once, its COORDINATOR due at 13ms.
        net.crash(3);
        net.start(2);
        net.run_until(Time::from_nanos(12_000_000));
        net.recover(3);
        net.run(10_000);
        net.assert_all_agree_on(3);
    }

    /// The winner crashes after answering OK and before announcing: the waiting processes
    /// restart when T' expires, and the next highest wins.
    #[test]
    fn t_prime_expiry_restarts_the_election() {
        let mut net: Net<Bully> = Net::new(&[0, 1, 2, 3], Params::default());
        net.crash(3);
        net.start(0);
        // 2 answers OK at 1ms; crash it before its own T expires.
        net.run_until(Time::from_nanos(2_000_000));
        net.crash(2);
        net.run(10_000);
        net.assert_all_agree_on(1);
    }
}
