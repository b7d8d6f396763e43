//! The ring algorithm with id lists.
//!
//! Source: seed 002 "The Ring Algorithm" (steps 1-3, "Detecting the New Coordinator",
//! "Informing All Processes", "Simultaneous Elections" with processes 2 and 5, Fig. 3-13),
//! seed 001 "Token-Ring Election Algorithm" and seed 000's last example (six processes in ring
//! order 3, 5, 0, 1, 4, 6; 6 crashed; 3 starts; the list grows 3, 5, 0, 1, 4; 5 is announced).
//! Rules:
//! 1. A process that notices the coordinator is down sends ELECTION carrying the list of its own
//!    id to its successor (skipping crashed successors: see ring_link.rs).
//! 2. A process receiving an ELECTION without its own id appends its id and passes it on.
//! 3. A process receiving an ELECTION with its own id knows the message has gone around the
//!    ring: it turns it into a COORDINATOR message carrying the members (the list, from itself
//!    on), whose highest id is the new coordinator, and sends it around.
//! 4. A process receiving a COORDINATOR records the coordinator (and the members) and passes it
//!    on; the process that started it removes it when it comes back.
//! 5. Simultaneous elections each complete: every process forwards every ELECTION; the
//!    COORDINATOR messages carry the same members in the same (cyclic) order and agree.
//! 6. A process that receives a COORDINATOR whose members it outranks was down when the
//!    ELECTION went round (the message carries "the current members of the ring", seed 002):
//!    it passes it on and starts an election, so that the highest live process leads.
//!
//! Rules for crashes, which the notes leave open:
//! 7. T': a process that has taken part in an election and hears no COORDINATOR within T'
//!    (`coordinator_timeout`, default 4n T: two laps even with skips) starts a new one. A
//!    recovered process starts an election.
//! 8. Orphans: a COORDINATOR whose starter crashed before it came back is removed by the first
//!    process that sees it a second time; and it counts its hops (1 from its starter, one more at
//!    each process that passes it on), so one that has made n hops without meeting its starter
//!    is removed too (two orphans used to alternate for ever, each process remembering only the
//!    last one it passed).
//! 9. Epochs: every message carries an epoch; a process starting an election uses one more than
//!    the highest it has seen, and a process passing an ELECTION on raises it to the highest it
//!    has seen, so the COORDINATOR it becomes is no older than anything its members recorded. A
//!    COORDINATOR of an epoch older than the one a process recorded is stale and removed (on a
//!    non-FIFO network an overtaken COORDINATOR used to override a newer election); one of the
//!    same epoch naming another coordinator (concurrent elections that met different members,
//!    as when a process crashes between their laps) is removed and its receiver starts a new
//!    election, which every live process joins.
//!
//! Without crashes concurrent elections meet the same members and name the same coordinator,
//! so none of rules 7-9 sends a message: 2n messages per initiator on a ring of n (one lap each
//! way; a skipped crashed process still costs the message that found it down).

pub use super::id_list::IdList;
pub use super::members::Members;
use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The ids of the live processes met so far, starting with the initiator; its epoch.
    Election { list: IdList, epoch: u64 },
    /// The result: every live member, starting with the process that turned the ELECTION into
    /// this message; the highest is the coordinator.
    Coordinator {
        members: Members,
        hops: u32,
        epoch: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Election { .. } => "Election",
            Msg::Coordinator { .. } => "Coordinator",
        }
    }
}

/// T': waiting for the COORDINATOR message after taking part in an election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// T'.
    TPrime,
}

/// One process of the ring algorithm with id lists.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Ring {
    id: NodeId,
    coordinator: Option<NodeId>,
    /// The members the last COORDINATOR named.
    members: Members,
    /// Between taking part in an election and the COORDINATOR message.
    electing: bool,
    /// A digest of the last COORDINATOR passed on, to remove it should it come round again.
    last_passed: Option<u64>,
    /// The highest epoch seen, and the epoch of the COORDINATOR recorded (the epoch rule).
    epoch: u64,
    recorded_epoch: u64,
    #[serde(skip)]
    t_prime: Duration,
}

impl Algorithm for Ring {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        election::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Ring {
            id,
            coordinator: Some(election::initial_coordinator(peers, params)),
            members: Members::new(peers.shared_ids(), Some(peers.highest())),
            electing: false,
            last_passed: None,
            epoch: 0,
            recorded_epoch: 0,
            t_prime: election::coordinator_timeout(params, 4 * peers.len() as u32),
        }
    }
}

impl Election for Ring {
    fn leader(&self) -> Option<NodeId> {
        self.coordinator
    }
    fn electing(&self) -> bool {
        self.electing
    }
    fn uses_ring() -> bool {
        true
    }
}

impl Process for Ring {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if ctx.recovered() {
            self.coordinator = None;
            self.members = Vec::new().into();
            self.start(ctx);
        }
    }

    fn on_input(&mut self, Input::Start: Input, ctx: &mut Ctx<'_, Self>) {
        if !self.electing {
            self.start(ctx);
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 3.
            Msg::Election { list, epoch } if list.contains(self.id) => {
                ctx.rule("3");
                let mut list = list.to_vec();
                let at = list.iter().position(|&j| j == self.id).unwrap_or(0);
                list.rotate_left(at);
                let members = Members::from(list);
                self.epoch = self.epoch.max(epoch);
                let epoch = self.epoch;
                self.record(&members, epoch, ctx);
                let coordinator = Msg::Coordinator {
                    members,
                    hops: 1,
                    epoch,
                };
                ctx.send(ctx.successor(), coordinator);
            }
            // Rule 2.
            Msg::Election { mut list, epoch } => {
                ctx.rule("2");
                list.push(self.id);
                self.epoch = self.epoch.max(epoch);
                self.join(ctx);
                let epoch = self.epoch;
                ctx.send(ctx.successor(), Msg::Election { list, epoch });
            }
            // Rule 4: back at its starter.
            Msg::Coordinator { members, .. } if members.first() == Some(&self.id) => ctx.rule("4"),
            // The crash rule: a lap without meeting its starter.
            Msg::Coordinator { hops, .. } if hops >= ctx.peers().len() as u32 => ctx.rule("8"),
            // The epoch rule: stale, older than the result recorded or the election joined.
            Msg::Coordinator { epoch, .. }
                if epoch < self.recorded_epoch || (self.electing && epoch < self.epoch) =>
            {
                ctx.rule("9");
            }
            Msg::Coordinator {
                members,
                hops,
                epoch,
            } => {
                let hops = hops + 1;
                let digest = members.digest();
                if self.last_passed == Some(digest) {
                    ctx.rule("8");
                    return; // its starter crashed: it has been all the way round already
                }
                let named = members.highest();
                if epoch == self.recorded_epoch && !self.electing && self.coordinator != named {
                    // The epoch rule: two elections of this epoch met different members.
                    ctx.rule("9");
                    self.epoch = self.epoch.max(epoch);
                    self.start(ctx);
                    return;
                }
                self.last_passed = Some(digest);
                self.epoch = self.epoch.max(epoch);
                if members.highest().is_some_and(|h| h < self.id) {
                    // Rule 6: counted without us, we outrank its coordinator.
                    ctx.rule("6");
                    ctx.send(
                        ctx.successor(),
                        Msg::Coordinator {
                            members,
                            hops,
                            epoch,
                        },
                    );
                    if !self.electing {
                        self.start(ctx);
                    }
                    return;
                }
                ctx.rule("4");
                self.record(&members, epoch, ctx);
                ctx.send(
                    ctx.successor(),
                    Msg::Coordinator {
                        members,
                        hops,
                        epoch,
                    },
                );
            }
        }
    }

    fn on_timer(&mut self, Timer::TPrime: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.electing {
            ctx.rule("7");
            self.start(ctx);
        }
    }
}

impl Ring {
    /// Rule 1.
    fn start(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.join(ctx);
        self.epoch += 1;
        ctx.send(
            ctx.successor(),
            Msg::Election {
                list: IdList::of(self.id),
                epoch: self.epoch,
            },
        );
    }

    fn join(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.last_passed = None; // a new election: its COORDINATOR may name the same members
        self.electing = true;
        self.coordinator = None;
        ctx.set_timer(Timer::TPrime, self.t_prime);
    }

    fn record(&mut self, members: &Members, epoch: u64, ctx: &mut Ctx<'_, Self>) {
        let Some(highest) = members.highest() else {
            return;
        };
        self.recorded_epoch = epoch;
        let was = (self.electing, self.coordinator);
        self.electing = false;
        ctx.cancel_timer(Timer::TPrime);
        self.members = members.clone();
        self.coordinator = Some(highest);
        if was != (false, Some(highest)) {
            ctx.output(Output::Leader(highest));
        }
    }

    /// The members the last COORDINATOR message named, from the process that started it.
    pub fn members(&self) -> &[NodeId] {
        &self.members
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::testkit::Net;
    use crate::election::RingLink;
    use distsync_core::testing::Driver;

    fn ids(v: &[u32]) -> Vec<NodeId> {
        v.iter().map(|&i| NodeId(i)).collect()
    }

    #[test]
    fn election_appends_and_returns_as_coordinator() {
        let peers = Peers::new(ids(&[3, 5, 0])).unwrap();
        let mut p = Driver::new(
            Ring::new(NodeId(5), &peers, &Params::default()),
            NodeId(5),
            &peers,
        );
        p.receive(
            3,
            Msg::Election {
                list: ids(&[3]).into(),
                epoch: 1,
            },
        );
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(0),
                Msg::Election {
                    list: ids(&[3, 5]).into(),
                    epoch: 1
                }
            )]
        );
        assert!(p.process.electing());
        // Its own id in the list: the list is complete; 5 is the highest.
        p.receive(
            3,
            Msg::Election {
                list: ids(&[0, 3, 5]).into(),
                epoch: 1,
            },
        );
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(0),
                Msg::Coordinator {
                    members: ids(&[5, 0, 3]).into(),
                    hops: 1,
                    epoch: 1
                }
            )]
        );
        assert_eq!(p.outputs(), vec![Output::Leader(NodeId(5))]);
        // Its own COORDINATOR back: removed.
        p.receive(
            3,
            Msg::Coordinator {
                members: ids(&[5, 0, 3]).into(),
                hops: 3,
                epoch: 1,
            },
        );
        assert!(p.sent().is_empty());
        // Someone else's: recorded and passed on once; a second sighting is removed.
        let theirs = |hops| Msg::Coordinator {
            members: ids(&[0, 3, 5]).into(),
            hops,
            epoch: 1,
        };
        p.receive(3, theirs(2));
        assert_eq!(p.sent(), vec![(NodeId(0), theirs(3))]);
        assert!(p.outputs().is_empty(), "same coordinator: nothing new");
        p.receive(3, theirs(2));
        assert!(p.sent().is_empty());
        // The crash rule: a COORDINATOR that made a lap (3 hops) without its starter is removed.
        let mut q = Driver::new(
            Ring::new(NodeId(5), &peers, &Params::default()),
            NodeId(5),
            &peers,
        );
        q.receive(3, theirs(3));
        assert!(q.sent().is_empty());
        assert!(q.outputs().is_empty());
        // The epoch rule: after recording epoch 2, a COORDINATOR of epoch 1 is stale; one of
        // epoch 2 naming another coordinator starts a new election (epoch 3).
        let newer = Msg::Coordinator {
            members: ids(&[0, 3, 5]).into(),
            hops: 1,
            epoch: 2,
        };
        q.receive(3, newer);
        assert_eq!(q.sent().len(), 1, "recorded and passed on");
        q.receive(3, theirs(1));
        assert!(q.sent().is_empty(), "stale");
        let conflicting = Msg::Coordinator {
            members: ids(&[0, 3]).into(),
            hops: 1,
            epoch: 2,
        };
        q.receive(3, conflicting);
        assert_eq!(
            q.sent(),
            vec![(
                NodeId(0),
                Msg::Election {
                    list: ids(&[5]).into(),
                    epoch: 3
                }
            )]
        );
    }

    /// Seed 000 (and 001): ring 3, 5, 0, 1, 4, 6; 6 has crashed; 3 starts. The list grows
    /// 3, 5, 0, 1, 4; 4 finds 6 down and skips to 3; 3 announces 5, and the COORDINATOR message
    /// goes round once.
    #[test]
    fn seed_000_six_process_ring() {
        let mut net: Net<RingLink<Ring>> = Net::new(&[3, 5, 0, 1, 4, 6], Params::default());
        net.crash(6);
        net.start(3);
        net.run(10_000);
        let elections: Vec<(u32, u32, Vec<u32>)> = net
            .sent
            .iter()
            .filter_map(|s| match &s.msg {
                crate::election::ring_link::LinkMsg::Data {
                    msg: Msg::Election { list, .. },
                    ..
                } => Some((
                    s.from.0,
                    s.to.0,
                    list.to_vec().iter().map(|i| i.0).collect(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            elections,
            vec![
                (3, 5, vec![3]),
                (5, 0, vec![3, 5]),
                (0, 1, vec![3, 5, 0]),
                (1, 4, vec![3, 5, 0, 1]),
                (4, 6, vec![3, 5, 0, 1, 4]),
                (4, 3, vec![3, 5, 0, 1, 4]),
            ]
        );
        let coordinators: Vec<(u32, u32)> = net
            .sent
            .iter()
            .filter(|s| s.msg.kind() == "Coordinator")
            .map(|s| (s.from.0, s.to.0))
            .collect();
        assert_eq!(
            coordinators,
            vec![(3, 5), (5, 0), (0, 1), (1, 4), (4, 6), (4, 3)]
        );
        net.assert_all_agree_on(5);
        assert_eq!(net.process(0).inner().members(), ids(&[3, 5, 0, 1, 4]));
        // 4 sent to 6 at 4ms and, with no acknowledgement within T (10ms), to 3 at 14ms.
        let skip: Vec<u64> = net
            .sent
            .iter()
            .filter(|s| s.from.0 == 4 && s.msg.kind() == "Election")
            .map(|s| s.time.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(skip, vec![4, 14]);
        // 2n messages for the one initiator (the two sends to 6 found it down).
        assert_eq!(net.count("Election") + net.count("Coordinator"), 12);
    }

    /// Seed 002, Fig. 3-13: 2 and 5 notice at the same time that 7 has crashed. Both ELECTION
    /// messages go all the way round; both become COORDINATOR messages with the same members in
    /// the same cyclic order; both go round again and are removed by 2 and 5.
    #[test]
    fn seed_002_simultaneous_elections_by_2_and_5() {
        let mut net: Net<RingLink<Ring>> = Net::new(&[0, 1, 2, 3, 4, 5, 6, 7], Params::default());
        net.crash(7);
        net.start(2);
        net.start(5);
        net.run(10_000);
        let coordinators: Vec<(u32, Vec<u32>)> = net
            .sent
            .iter()
            .filter_map(|s| match &s.msg {
                crate::election::ring_link::LinkMsg::Data {
                    msg: Msg::Coordinator { members, .. },
                    ..
                } => Some((s.from.0, members.iter().map(|i| i.0).collect::<Vec<u32>>())),
                _ => None,
            })
            .filter(|(from, m)| *from == m[0])
            .collect();
        assert_eq!(
            coordinators,
            vec![
                (2, vec![2, 3, 4, 5, 6, 0, 1]),
                (5, vec![5, 6, 0, 1, 2, 3, 4])
            ]
        );
        net.assert_all_agree_on(6);
        // Each initiator: one lap of ELECTION and one of COORDINATOR, 8 sends each.
        assert_eq!(net.count("Election"), 16);
        assert_eq!(net.count("Coordinator"), 16);
        // Every live process reported 6 exactly once.
        let mut reported: Vec<u32> = net.outputs.iter().map(|o| o.1 .0).collect();
        reported.sort();
        assert_eq!(reported, vec![0, 1, 2, 3, 4, 5, 6]);
    }

    /// The initiator crashes while its ELECTION is on its way: the process before it finds it
    /// down, the next one sees its own id in the list and announces instead.
    #[test]
    fn a_crashed_initiator_is_replaced_by_the_first_process_that_sees_itself() {
        let mut net: Net<RingLink<Ring>> = Net::new(&[0, 1, 2, 3], Params::default());
        net.crash(3);
        net.start(1);
        net.run_until(distsync_core::Time::from_nanos(1_500_000));
        net.crash(1);
        net.run(10_000);
        net.assert_all_agree_on(2);
    }
}
