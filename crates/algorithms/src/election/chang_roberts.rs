//! Chang and Roberts (1979): ring election with participant and non-participant processes.
//!
//! Source: seed 000 "Chang and Roberts algorithm", "The Ring-Based Algorithm" and its
//! "Algorithm" steps 1 to 5; seed 003 "Ring Algorithm" (election and elected messages,
//! participant and non-participant states, the three cases received >, <, = own). Rules:
//! 1. Initially every process is non-participant.
//! 2. A process that notices a lack of leader starts an election: it sends an election message
//!    with its UID clockwise to its neighbour (the successor in ring order).
//! 3. Every time a process sends or forwards an election message it marks itself participant.
//! 4. On an election message, compare its UID with the own:
//!    a) larger: forward it unconditionally;
//!    b) smaller, and not yet participant: replace the UID with the own and send it;
//!    c) smaller, and already participant: discard it;
//!    d) the same: this process is the leader.
//! 5. a) The leader marks itself non-participant and sends an elected message with its UID.
//!    b) On an elected message a process marks itself non-participant, records the UID and
//!    forwards the message unchanged.
//!    c) When the elected message is back at the leader, the leader discards it: the election
//!    is over.
//!
//! With every process starting: election messages n(n+1)/2 when the UIDs decrease along the
//! direction of travel, 2n-1 when they increase, n*H_n on average over random orders; plus n
//! elected messages.
//!
//! Additions for crashes, which the notes leave to "faulty systems are skipped" (ring_link.rs):
//! a participant that hears no elected message within T' (`coordinator_timeout`, default 4n T)
//! marks itself non-participant and starts again; a non-participant passes on an elected
//! message it has already recorded without recording it twice; a recovered process starts an
//! election; and a process that receives an elected message with a UID smaller than its own
//! (it was down during that election) passes it on and starts an election, so that the largest
//! live UID leads. Without crashes no process ever sees such a message.
//!
//! Epochs, for a crash and a recovery (a late elected message of an older election used to
//! override the newer result: a recovered process won its own election while the elected
//! message of the election it missed still waited at a crashed process's link): every message
//! carries an epoch. A process starting an election uses one more than the epoch of the result
//! it recorded (fresh: 0), and a process passing an election message on raises it to at least
//! that, so an election that passes a recorded result is newer than it; the leader's elected
//! message carries its election's epoch. An elected message older than the result a process
//! recorded, by epoch and then by UID (two elections of one epoch that met different members:
//! the higher leader wins), is stale and discarded. Without crashes every message is of epoch
//! 1 and none is stale: the message counts are the notes'.
//!
//! A crash rule for orphans: every message counts its hops (1 when its owner sends it, one more
//! at each forward). An election message reaches its owner, and an elected message its leader,
//! within one lap of at most n hops; a message that has made n hops without reaching its end
//! has lost its owner to a crash and is discarded, however often other messages reset the
//! processes it meets (an orphaned Elected{2} and Election{3} used to chase each other round
//! the live processes for ever). Without crashes no message is ever discarded this way, and the
//! message counts are the notes'. The hop count is the only orphan rule: the same UID can be
//! sent round again by its live owner (a late, smaller election message reaches the leader, a
//! non-participant again, which replaces it with its own UID by rule 4b), so "I have already
//! forwarded this UID" does not mean its owner crashed (taking it for that left the second
//! round's processes participants with no leader for ever: found by `distsync stress`).

use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The election message, with the UID of the best candidate so far, its hops and its
    /// epoch.
    Election { uid: NodeId, hops: u32, epoch: u32 },
    /// The elected message, announcing the leader's UID, its hops and its election's epoch.
    Elected { uid: NodeId, hops: u32, epoch: u32 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Election { .. } => "Election",
            Msg::Elected { .. } => "Elected",
        }
    }
}

/// T': a participant waiting for the elected message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// T'.
    TPrime,
}

/// One process of Chang and Roberts' algorithm.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct ChangRoberts {
    uid: NodeId,
    participant: bool,
    /// The elected UID this process recorded.
    elected: Option<NodeId>,
    /// The epoch of the result recorded (the epoch rule; 0 for the initial coordinator).
    epoch: u32,
    #[serde(skip)]
    t_prime: Duration,
}

impl Algorithm for ChangRoberts {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        election::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        ChangRoberts {
            uid: id,
            participant: false,
            elected: Some(election::initial_coordinator(peers, params)),
            epoch: 0,
            t_prime: election::coordinator_timeout(params, 4 * peers.len() as u32),
        }
    }
}

impl Election for ChangRoberts {
    fn leader(&self) -> Option<NodeId> {
        self.elected
    }
    fn electing(&self) -> bool {
        self.participant
    }
    fn uses_ring() -> bool {
        true
    }
}

impl Process for ChangRoberts {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if ctx.recovered() {
            self.elected = None;
            self.epoch = 0;
            self.start(ctx);
        }
    }

    // Rule 2; a participant is already in an election that will report.
    fn on_input(&mut self, Input::Start: Input, ctx: &mut Ctx<'_, Self>) {
        if !self.participant {
            self.start(ctx);
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let n = ctx.peers().len() as u32;
        // The epoch rule: an election passing a recorded result is newer than it.
        let newer = self.epoch + 1;
        match msg {
            Msg::Election { uid, hops, epoch } if uid > self.uid => {
                if hops >= n {
                    return; // a lap without its owner: an orphan (the crash rule)
                }
                ctx.rule("4");
                self.send_election(uid, hops + 1, epoch.max(newer), ctx); // 4a
            }
            Msg::Election { uid, epoch, .. } if uid < self.uid => {
                ctx.rule("4");
                if !self.participant {
                    self.send_election(self.uid, 1, epoch.max(newer), ctx); // 4b
                } // 4c: discard
            }
            Msg::Election { epoch, .. } => {
                // 4d, 5a.
                ctx.rule("4");
                ctx.rule("5");
                self.participant = false;
                ctx.cancel_timer(Timer::TPrime);
                let epoch = epoch.max(newer);
                self.record(self.uid, epoch, ctx);
                pass_elected(self.uid, 0, epoch, ctx);
            }
            // 5c.
            Msg::Elected { uid, .. } if uid == self.uid => ctx.rule("5"),
            Msg::Elected { hops, .. } if hops >= n => {} // an orphan (the crash rule)
            // The epoch rule: older than the result recorded, stale.
            Msg::Elected { uid, epoch, .. }
                if self.elected.is_some_and(|e| (epoch, uid) < (self.epoch, e)) => {}
            Msg::Elected { uid, hops, epoch } if uid < self.uid => {
                // Elected without us (we were down): pass it on, then stand ourselves.
                pass_elected(uid, hops, epoch, ctx);
                if !self.participant {
                    self.start(ctx);
                }
            }
            Msg::Elected { uid, hops, epoch } if !self.participant && self.elected == Some(uid) => {
                // Recorded already (a second round of the same leader): pass it on for those
                // behind, without recording it twice.
                ctx.rule("5");
                self.epoch = self.epoch.max(epoch);
                pass_elected(uid, hops, epoch, ctx);
            }
            Msg::Elected { uid, hops, epoch } => {
                // 5b.
                ctx.rule("5");
                self.participant = false;
                ctx.cancel_timer(Timer::TPrime);
                self.record(uid, epoch, ctx);
                pass_elected(uid, hops, epoch, ctx);
            }
        }
    }

    fn on_timer(&mut self, Timer::TPrime: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.participant {
            self.participant = false;
            self.start(ctx);
        }
    }
}

/// Sends an elected message on, one hop further (from the leader itself: `hops` 0).
fn pass_elected(uid: NodeId, hops: u32, epoch: u32, ctx: &mut Ctx<'_, ChangRoberts>) {
    ctx.send(
        ctx.successor(),
        Msg::Elected {
            uid,
            hops: hops + 1,
            epoch,
        },
    );
}

impl ChangRoberts {
    /// Rule 2.
    fn start(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("2");
        self.send_election(self.uid, 1, self.epoch + 1, ctx);
    }

    /// Rule 3: sending makes a participant, with no leader until the elected message.
    fn send_election(&mut self, uid: NodeId, hops: u32, epoch: u32, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("3");
        if !self.participant {
            ctx.set_timer(Timer::TPrime, self.t_prime);
        }
        self.participant = true;
        self.elected = None;
        ctx.send(ctx.successor(), Msg::Election { uid, hops, epoch });
    }

    fn record(&mut self, uid: NodeId, epoch: u32, ctx: &mut Ctx<'_, Self>) {
        self.elected = Some(uid);
        self.epoch = epoch;
        ctx.output(Output::Leader(uid));
    }

    /// Whether this process is a participant.
    pub fn participant(&self) -> bool {
        self.participant
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::testkit::Net;
    use crate::election::RingLink;
    use distsync_core::testing::Driver;
    use rand_core::{RngCore, SeedableRng};

    fn process(id: u32, peers: &Peers) -> Driver<'_, ChangRoberts> {
        Driver::new(
            ChangRoberts::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    fn election(uid: u32, hops: u32) -> Msg {
        Msg::Election {
            uid: NodeId(uid),
            hops,
            epoch: 1,
        }
    }

    fn elected(uid: u32, hops: u32) -> Msg {
        Msg::Elected {
            uid: NodeId(uid),
            hops,
            epoch: 1,
        }
    }

    #[test]
    fn step_4_larger_forwarded_smaller_replaced_then_discarded_same_leads() {
        let peers = Peers::range(8);
        let mut p = process(4, &peers);
        p.receive(3, election(2, 2)); // 4b: non-participant replaces
        assert_eq!(p.sent(), vec![(NodeId(5), election(4, 1))]);
        assert!(p.process.participant());
        p.receive(3, election(1, 3)); // 4c: participant discards
        assert!(p.sent().is_empty());
        p.receive(3, election(6, 6)); // 4a: larger forwarded, one hop more
        assert_eq!(p.sent(), vec![(NodeId(5), election(6, 7))]);
        // Seen again: it may be a second round of a live 6, so it goes on...
        p.receive(3, election(6, 6));
        assert_eq!(p.sent(), vec![(NodeId(5), election(6, 7))]);
        // ...unless it has made a lap (8 hops) without reaching 6: 6 crashed, it is dropped.
        p.receive(3, election(6, 8));
        assert!(p.sent().is_empty());
        p.receive(3, election(4, 8)); // 4d
        assert_eq!(p.sent(), vec![(NodeId(5), elected(4, 1))]);
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(4))]);
        assert!(!p.process.participant());
        p.receive(3, elected(4, 8)); // 5c
        assert!(p.sent().is_empty());
    }

    #[test]
    fn step_5b_elected_is_recorded_once_and_forwarded() {
        let peers = Peers::range(8);
        let mut p = process(4, &peers);
        p.input(Input::Start);
        assert_eq!(p.sent(), vec![(NodeId(5), election(4, 1))]);
        assert_eq!(p.process.leader(), None);
        p.receive(3, elected(6, 6));
        assert_eq!(p.sent(), vec![(NodeId(5), elected(6, 7))]);
        assert_eq!(p.process.leader(), Some(NodeId(6)));
        assert!(!p.process.participant());
        // A second round of the same leader: passed on for those behind, not recorded twice.
        p.receive(3, elected(6, 6));
        assert_eq!(p.sent(), vec![(NodeId(5), elected(6, 7))]);
        assert!(p.outputs().is_empty());
        assert!(!p.process.participant());
    }

    /// The crash rule: a message that has made n hops without reaching its end is an orphan.
    #[test]
    fn a_message_that_made_a_lap_without_its_owner_is_discarded() {
        let peers = Peers::range(4);
        let mut p = process(1, &peers);
        p.receive(0, election(3, 3));
        assert_eq!(p.sent(), vec![(NodeId(2), election(3, 4))]);
        let mut p = process(1, &peers);
        p.receive(0, election(3, 4));
        assert!(p.sent().is_empty());
        assert!(!p.process.participant());
        p.receive(0, elected(2, 4));
        assert!(p.sent().is_empty());
        assert!(p.outputs().is_empty());
        p.receive(0, elected(2, 3));
        assert_eq!(p.sent(), vec![(NodeId(2), elected(2, 4))]);
    }

    fn all_start(order: &[u32]) -> Net<ChangRoberts> {
        let mut net: Net<ChangRoberts> = Net::new(order, Params::default());
        for &id in order {
            net.start(id);
        }
        net.run(1_000_000);
        let max = *order.iter().max().unwrap();
        net.assert_all_agree_on(max);
        assert_eq!(net.count("Elected"), order.len());
        net
    }

    #[test]
    fn every_process_starting_costs_n_n_plus_1_over_2_decreasing_and_2n_minus_1_increasing() {
        for n in 2..=64usize {
            let decreasing: Vec<u32> = (0..n as u32).rev().collect();
            assert_eq!(
                all_start(&decreasing).count("Election"),
                n * (n + 1) / 2,
                "n = {n}"
            );
            let increasing: Vec<u32> = (0..n as u32).collect();
            assert_eq!(
                all_start(&increasing).count("Election"),
                2 * n - 1,
                "n = {n}"
            );
        }
    }

    #[test]
    fn one_starter_costs_n_to_2n_minus_1_election_messages() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for n in 2..=20u32 {
            let mut order: Vec<u32> = (0..n).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let starter = order[(rng.next_u64() % n as u64) as usize];
            let mut net: Net<ChangRoberts> = Net::new(&order, Params::default());
            net.start(starter);
            net.run(100_000);
            net.assert_all_agree_on(n - 1);
            let e = net.count("Election");
            assert!((n as usize..2 * n as usize).contains(&e), "{order:?}: {e}");
            assert_eq!(net.count("Elected"), n as usize);
        }
    }

    /// The leader-to-be crashes while its election message is on its way round: 2 finds it
    /// down and skips to 0, where the message has made a lap (4 hops) without its owner and is
    /// dropped; T' restarts the election and 2 wins.
    #[test]
    fn a_crashed_candidate_is_dropped_and_t_prime_restarts() {
        let mut net: Net<RingLink<ChangRoberts>> = Net::new(&[3, 0, 1, 2], Params::default());
        net.start(0);
        // 0, 1, 2 and 3 each replace the UID; 3's goes round to 0, 1, 2 (at 6ms).
        net.run_until(distsync_core::Time::from_nanos(6_500_000));
        assert!(net.process(2).inner().participant());
        net.crash(3);
        net.run(100_000);
        net.assert_all_agree_on(2);
        // 3's message was sent by 2 to 3 (lost), then to 0 (dropped there).
        let threes = net
            .sent
            .iter()
            .filter(|s| matches!(&s.msg, crate::election::ring_link::LinkMsg::Data { msg: Msg::Election { uid, .. }, .. } if uid.0 == 3))
            .count();
        assert_eq!(threes, 5);
    }
}
