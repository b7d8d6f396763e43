//! The ring algorithm with active lists (Silberschatz's ring algorithm).
//!
//! Source: seed 000 "Ring Algorithm" and "Ring Algorithm (Cont.)" with "Ring Algorithm:
//! Example1" (four processes P1..P4, P4 the coordinator, P1 and P4 crash, P2 detects, P3 is
//! elected). Links are unidirectional: messages go to the right neighbour (the successor in
//! ring order). Rules:
//! 1. A process P_i that detects a coordinator failure creates a new, empty active list, sends
//!    elect(i) to its right neighbour and adds i to its active list.
//! 2. On elect(j) from the left, if this is the first elect message P_i has seen or sent: it
//!    creates a new active list with i and j, sends elect(i), then elect(j).
//! 3. On elect(j) with i != j otherwise: P_i adds j to its active list and forwards elect(j).
//! 4. On elect(i), its own message back: the active list holds every active process; the
//!    largest number in it is the new coordinator, and P_i sends Elected(coordinator).
//!
//! Every live process's elect message goes round the whole ring: k live processes cost k^2
//! elect messages, plus k Elected. The notes' example has each deciding process send
//! "Elected(P3)" without saying what the receiver does; here a process that has not decided yet
//! when an Elected arrives (its own elect was lost with a crashed process) takes the
//! coordinator from it, and the message goes no further. Correctness needs FIFO channels: a
//! process must see every other elect(j) before its own comes back.
//!
//! Additions for crashes: messages carry an epoch, the number of the election, so that the
//! messages of an election abandoned by a crash cannot start elections without end. A process
//! that detects a failure, or whose T' (`coordinator_timeout`, default 4n T) expires before it
//! decided, starts the next epoch; a message of a newer epoch makes a process leave the current
//! one and apply rule 2; a message of an older epoch is dropped, and when it reaches a process
//! that has decided, that process starts a new epoch (its sender, e.g. a recovered process,
//! missed the last election). An elect(j) whose j is already in the active list has gone round
//! without its owner (crashed) and is dropped; an Elected naming a lower id than the receiver's
//! own was decided without it (it was down) and makes it start an election.
//!
//! A recovered process has lost its epoch, and the election under way may have lost messages
//! with its crash: joining it, its own elect could come back before an elect lost with the crash
//! was sent again, and it would decide on an incomplete list. So it takes part in no election
//! it did not start after learning the epoch from another process: it sends an elect of epoch 0
//! (a probe: a process that has decided, or never took part, starts a new epoch on it; one
//! taking part drops it, and the election's own messages reach the recovered process), repeated
//! every T' until it hears from another process. The first elect of an epoch e it then receives
//! is dropped, and it starts epoch e + 1 itself (rule 1), which every process it reaches joins;
//! an Elected is taken as any process takes it. Not proved: if another process has already
//! started e + 1 while the recovered one hears only e, it joins that e + 1 like any process, and
//! elects lost with its crash could still leave it an incomplete list (stress has not found it;
//! the checker stops at the one-leader break first, docs/election.md).

use super::id_list::IndexedIds;
use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// elect(j): process j is active.
    Elect { epoch: u32, j: NodeId },
    /// Elected(c): the sender decided c is the coordinator.
    Elected { epoch: u32, coordinator: NodeId },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Elect { .. } => "Elect",
            Msg::Elected { .. } => "Elected",
        }
    }
}

/// T': an undecided election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// T'.
    TPrime,
}

/// One process of the ring algorithm with active lists.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct RingActiveList {
    i: NodeId,
    /// The election this process takes part in, or last took part in.
    epoch: u32,
    /// Has seen or sent an elect message in the current election and not decided yet.
    participant: bool,
    /// Recovered and not yet told an epoch by another process: sends probes and decides nothing.
    rejoining: bool,
    /// The active processes known in the current election, in the order they were learned.
    active_list: IndexedIds,
    coordinator: Option<NodeId>,
    #[serde(skip)]
    t_prime: Duration,
}

impl Algorithm for RingActiveList {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        election::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        RingActiveList {
            i: id,
            epoch: 0,
            participant: false,
            rejoining: false,
            active_list: IndexedIds::default(),
            coordinator: Some(election::initial_coordinator(peers, params)),
            t_prime: election::coordinator_timeout(params, 4 * peers.len() as u32),
        }
    }
}

impl Election for RingActiveList {
    fn leader(&self) -> Option<NodeId> {
        self.coordinator
    }
    fn electing(&self) -> bool {
        self.participant
    }
    fn uses_ring() -> bool {
        true
    }
}

impl Process for RingActiveList {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if ctx.recovered() {
            self.coordinator = None;
            self.rejoining = true;
            self.probe(ctx);
        }
    }

    fn on_input(&mut self, Input::Start: Input, ctx: &mut Ctx<'_, Self>) {
        if !self.participant && !self.rejoining {
            self.detect(ctx);
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Elect { epoch, j } => self.on_elect(epoch, j, ctx),
            Msg::Elected { epoch, coordinator } => self.on_elected(epoch, coordinator, ctx),
        }
    }

    fn on_timer(&mut self, Timer::TPrime: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.participant {
            self.participant = false;
            self.detect(ctx);
        } else if self.rejoining {
            self.probe(ctx);
        }
    }
}

impl RingActiveList {
    /// Rule 1, in a new epoch.
    fn detect(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.epoch += 1;
        self.begin(ctx);
        self.active_list = IndexedIds::default();
        self.send(self.i, ctx);
        self.active_list.push(self.i);
    }

    /// A recovered process's probe: elect(i) of epoch 0, which no election uses.
    fn probe(&mut self, ctx: &mut Ctx<'_, Self>) {
        let i = self.i;
        ctx.send(ctx.successor(), Msg::Elect { epoch: 0, j: i });
        ctx.set_timer(Timer::TPrime, self.t_prime);
    }

    fn send(&self, j: NodeId, ctx: &mut Ctx<'_, Self>) {
        let epoch = self.epoch;
        ctx.send(ctx.successor(), Msg::Elect { epoch, j });
    }

    fn on_elect(&mut self, epoch: u32, j: NodeId, ctx: &mut Ctx<'_, Self>) {
        if self.rejoining {
            if epoch > 0 {
                self.epoch = epoch; // told the epoch: start the next one
                self.detect(ctx);
            } else if j == self.i {
                self.detect(ctx); // its probe came back: no other process knows an epoch
            } else {
                ctx.send(ctx.successor(), Msg::Elect { epoch, j }); // another's probe
            }
            return;
        }
        if epoch == 0 {
            if !self.participant {
                self.detect(ctx); // a recovered process's probe
            }
            return;
        }
        if epoch < self.epoch {
            if !self.participant {
                self.detect(ctx); // its sender missed the last election: hold a new one
            }
            return;
        }
        if epoch > self.epoch {
            self.epoch = epoch; // a newer election: the current one is abandoned
            self.participant = false;
        } else if !self.participant {
            return; // decided already: sent before its sender learned the result
        }
        if !self.participant {
            // Rule 2.
            ctx.rule("2");
            self.begin(ctx);
            self.active_list = vec![self.i, j].into();
            self.send(self.i, ctx);
            self.send(j, ctx);
        } else if j == self.i {
            // Rule 4.
            ctx.rule("4");
            let coordinator = *self.active_list.as_slice().iter().max().unwrap_or(&self.i);
            self.decide(coordinator, ctx);
            ctx.send(ctx.successor(), Msg::Elected { epoch, coordinator });
        } else if !self.active_list.contains(j) {
            // Rule 3. (A j already listed has gone round twice: j crashed; it is dropped.)
            ctx.rule("3");
            self.active_list.push(j);
            self.send(j, ctx);
        }
    }

    fn on_elected(&mut self, epoch: u32, coordinator: NodeId, ctx: &mut Ctx<'_, Self>) {
        if epoch < self.epoch {
            return;
        }
        if coordinator < self.i {
            if !self.participant || epoch > self.epoch {
                self.epoch = self.epoch.max(epoch);
                self.detect(ctx); // decided without us: we were down
            }
            return;
        }
        if self.participant || epoch > self.epoch {
            self.epoch = epoch;
            self.decide(coordinator, ctx);
        }
    }

    fn begin(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.participant = true;
        self.rejoining = false;
        self.coordinator = None;
        ctx.set_timer(Timer::TPrime, self.t_prime);
    }

    fn decide(&mut self, coordinator: NodeId, ctx: &mut Ctx<'_, Self>) {
        self.participant = false;
        self.rejoining = false;
        self.coordinator = Some(coordinator);
        ctx.cancel_timer(Timer::TPrime);
        ctx.output(Output::Leader(coordinator));
    }

    /// The active list of the current (or last) election.
    pub fn active_list(&self) -> &[NodeId] {
        self.active_list.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::ring_link::LinkMsg;
    use crate::election::testkit::Net;
    use crate::election::RingLink;
    use distsync_core::testing::Driver;

    fn elect(j: u32) -> Msg {
        Msg::Elect {
            epoch: 1,
            j: NodeId(j),
        }
    }

    #[test]
    fn first_elect_seen_sends_own_then_forwards() {
        let peers = Peers::range(5);
        let mut p = Driver::new(
            RingActiveList::new(NodeId(3), &peers, &Params::default()),
            NodeId(3),
            &peers,
        );
        p.receive(2, elect(2));
        assert_eq!(p.sent(), vec![(NodeId(4), elect(3)), (NodeId(4), elect(2))]);
        assert_eq!(p.process.active_list(), &[NodeId(3), NodeId(2)]);
        p.receive(2, elect(1));
        assert_eq!(p.sent(), vec![(NodeId(4), elect(1))]);
        p.receive(2, elect(1)); // round twice: 1 crashed
        assert!(p.sent().is_empty());
        p.receive(2, elect(3));
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(4),
                Msg::Elected {
                    epoch: 1,
                    coordinator: NodeId(3)
                }
            )]
        );
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(3))]);
        assert!(!p.process.electing());
        // A late elect of the decided election is dropped; one of an older epoch (its sender
        // missed this election) starts epoch 2.
        p.receive(2, elect(0));
        assert!(p.sent().is_empty());
        p.receive(
            2,
            Msg::Elect {
                epoch: 0,
                j: NodeId(0),
            },
        );
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(4),
                Msg::Elect {
                    epoch: 2,
                    j: NodeId(3)
                }
            )]
        );
    }

    /// A recovered process decides nothing in an election it did not start after hearing an
    /// epoch: it probes with epoch 0, drops the first elect of epoch e it hears and starts e + 1.
    #[test]
    fn a_recovered_process_probes_then_starts_the_epoch_after_the_one_it_hears() {
        let peers = Peers::range(5);
        let mut p = Driver::new(
            RingActiveList::new(NodeId(3), &peers, &Params::default()),
            NodeId(3),
            &peers,
        );
        p.process.coordinator = None;
        p.process.rejoining = true;
        p.input(Input::Start); // it is electing already: nothing new
        assert!(p.sent().is_empty());
        p.fire(Timer::TPrime); // nothing heard: probe again
        let probe = |j: u32| Msg::Elect {
            epoch: 0,
            j: NodeId(j),
        };
        assert_eq!(p.sent(), vec![(NodeId(4), probe(3))]);
        p.receive(2, probe(1)); // another recovered process's probe: passed on
        assert_eq!(p.sent(), vec![(NodeId(4), probe(1))]);
        assert_eq!(p.process.leader(), None);
        // elect(2) of epoch 1, an election that may have lost messages with the crash: not
        // joined (rule 2 would add 3 and 2 and send elect(3), elect(2)); epoch 2 instead.
        p.receive(2, elect(2));
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(4),
                Msg::Elect {
                    epoch: 2,
                    j: NodeId(3)
                }
            )]
        );
        assert_eq!(p.process.active_list(), &[NodeId(3)]);
        assert!(p.process.electing());
        // A process that has decided, or never took part, starts an epoch on a probe; one
        // taking part drops it.
        let mut q = Driver::new(
            RingActiveList::new(NodeId(1), &peers, &Params::default()),
            NodeId(1),
            &peers,
        );
        q.receive(0, probe(3));
        assert_eq!(q.sent(), vec![(NodeId(2), elect(1))]);
        q.receive(0, probe(3));
        assert!(q.sent().is_empty());
    }

    /// Seed 000, "Ring Algorithm: Example1": P1..P4 in a ring, P4 the coordinator, P1 and P4
    /// crash, P2 detects. P3 sends elect(3) then elect(2) towards P4; they pass P4 and P1 (both
    /// skipped) and reach P2, which adds 3 and forwards elect(3), then gets elect(2) back and
    /// chooses P3; P3 gets elect(3) back and chooses P3.
    #[test]
    fn seed_000_four_processes_p1_and_p4_crashed_p2_detects() {
        let mut net: Net<RingLink<RingActiveList>> = Net::new(&[1, 2, 3, 4], Params::default());
        assert_eq!(net.process(2).leader(), Some(NodeId(4)));
        net.crash(1);
        net.crash(4);
        net.start(2);
        assert_eq!(net.process(2).inner().active_list(), &[NodeId(2)]);
        net.run(10_000);
        let delivered: Vec<(u32, u32, Msg)> = net
            .sent
            .iter()
            .filter(|s| s.delivered)
            .filter_map(|s| match &s.msg {
                LinkMsg::Data { msg, .. } => Some((s.from.0, s.to.0, msg.clone())),
                LinkMsg::Ack { .. } => None,
            })
            .collect();
        let elected = |c: u32| Msg::Elected {
            epoch: 1,
            coordinator: NodeId(c),
        };
        assert_eq!(
            delivered,
            vec![
                (2, 3, elect(2)),
                (3, 2, elect(3)), // past P4 and P1
                (3, 2, elect(2)),
                (2, 3, elect(3)),
                (2, 3, elected(3)),
                (3, 2, elected(3)),
            ]
        );
        assert_eq!(
            net.process(2).inner().active_list(),
            &[NodeId(2), NodeId(3)]
        );
        assert_eq!(
            net.process(3).inner().active_list(),
            &[NodeId(3), NodeId(2)]
        );
        net.assert_all_agree_on(3);
    }

    /// Without crashes every process's elect goes round: n^2 elect and n Elected messages.
    #[test]
    fn k_live_processes_cost_k_squared_elect_messages() {
        for n in 2..=10u32 {
            let order: Vec<u32> = (0..n).map(|k| (k + n / 2) % n).collect();
            let mut net: Net<RingActiveList> = Net::new(&order, Params::default());
            net.start(order[0]);
            net.run(100_000);
            assert_eq!(net.count("Elect"), (n * n) as usize, "n = {n}");
            assert_eq!(net.count("Elected"), n as usize);
            net.assert_all_agree_on(n - 1);
        }
    }
}
