//! The Chandy-Lamport snapshot algorithm (1985), over the bank application.
//!
//! Source: seed 000 table of contents "3.1.3.3 Global State and State Recording" (the notes name
//! the topic; the rules are Chandy and Lamport's), ORACLES.md "Chandy-Lamport: exactly one
//! marker per directed channel (N(N-1) on a complete graph); needs FIFO; the recorded state
//! conserves every invariant of the application (for a bank: total money)". Every pair of
//! processes is joined by a channel each way. Rules:
//! 1. The initiator (`started`) records its own state (`bank`, `recording`), then sends a marker
//!    on each outgoing channel before it sends anything else on it, and starts recording each
//!    incoming channel.
//! 2. On a marker along channel c, a process that has not recorded its state (`recording`)
//!    records it (`bank`), records c as empty, sends a marker on each outgoing channel (before
//!    anything else), and starts recording its other incoming channels.
//! 3. On a marker along channel c, a process that has recorded its state (`recording`) stops
//!    recording c: c's state is the messages that arrived on it since recording started.
//! 4. A process's part is complete when a marker has arrived on every incoming channel
//!    (`recording`); it reports its recorded state and its channels' states.
//!
//! Snapshots are told apart by their initiator and number, so several may run at once. The
//! recording is only consistent on FIFO channels: a transfer that overtakes a marker is counted
//! twice or not at all.

use super::bank::Bank;
use distsync_core::snapshot::{
    ChannelState, GlobalSnapshot, Input, LocalSnapshot, Output, SnapshotId,
};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Messages: the application's transfers and the algorithm's markers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Money for the receiver.
    Transfer { amount: u64 },
    /// The marker of snapshot `snapshot`.
    Marker { snapshot: SnapshotId },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Transfer { .. } => "Transfer",
            Msg::Marker { .. } => "Marker",
        }
    }
}

/// The recording of one incoming channel.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
enum Channel {
    /// Transfers arriving are recorded (its marker has not arrived).
    Recording(Vec<u64>),
    /// Its marker arrived: this is its state.
    Closed(Vec<u64>),
}

/// This process's part of one snapshot under way.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
struct Recording {
    /// The recorded state.
    balance: u64,
    /// By membership position (this process's own position is unused).
    channels: Vec<Channel>,
    /// Whose markers arrived, in order.
    markers_from: Vec<NodeId>,
    markers_to: Vec<NodeId>,
}

/// One process: a bank account and the snapshot algorithm.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct ChandyLamport {
    id: NodeId,
    bank: Bank,
    /// Snapshots this process started.
    started: u64,
    /// Its parts of snapshots not yet complete.
    #[serde(serialize_with = "crate::state::pairs")]
    recording: BTreeMap<SnapshotId, Recording>,
}

impl Algorithm for ChandyLamport {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        Bank::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        ChandyLamport {
            id,
            bank: Bank::open(id, peers, params),
            started: 0,
            recording: BTreeMap::new(),
        }
    }
}

impl GlobalSnapshot for ChandyLamport {
    fn balance(&self) -> u64 {
        self.bank.balance
    }
}

impl Process for ChandyLamport {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 1.
            Input::Snapshot => {
                ctx.rule("1");
                self.started += 1;
                let id = SnapshotId {
                    initiator: self.id,
                    number: self.started,
                };
                self.record(id, None, ctx);
            }
            // The application.
            Input::Transfer { to, amount } => {
                if to != self.id && ctx.peers().contains(to) && self.bank.withdraw(amount) {
                    ctx.send(to, Msg::Transfer { amount });
                }
            }
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        let Some(c) = ctx.peers().position(from) else {
            return;
        };
        match msg {
            Msg::Transfer { amount } => {
                self.bank.deposit(amount);
                for r in self.recording.values_mut() {
                    if let Channel::Recording(transfers) = &mut r.channels[c] {
                        transfers.push(amount);
                    }
                }
            }
            Msg::Marker { snapshot } => match self.recording.get_mut(&snapshot) {
                // Rule 3.
                Some(r) => {
                    ctx.rule("3");
                    r.markers_from.push(from);
                    if let Channel::Recording(transfers) = &mut r.channels[c] {
                        r.channels[c] = Channel::Closed(std::mem::take(transfers));
                    }
                    self.complete_if_done(snapshot, ctx);
                }
                // Rule 2.
                None => {
                    ctx.rule("2");
                    self.record(snapshot, Some((c, from)), ctx)
                }
            },
        }
    }
}

impl ChandyLamport {
    /// Rules 1 and 2: record the state, markers out, record the incoming channels (but the one
    /// the first marker came on, which is empty).
    fn record(
        &mut self,
        snapshot: SnapshotId,
        marker: Option<(usize, NodeId)>,
        ctx: &mut Ctx<'_, Self>,
    ) {
        let n = ctx.peers().len();
        let mut channels = vec![Channel::Recording(Vec::new()); n];
        let mut markers_from = Vec::new();
        if let Some((c, from)) = marker {
            channels[c] = Channel::Closed(Vec::new());
            markers_from.push(from);
        }
        let me = ctx.peers().index_of(self.id);
        channels[me] = Channel::Closed(Vec::new());
        ctx.broadcast(Msg::Marker { snapshot });
        let markers_to = ctx
            .peers()
            .ids()
            .iter()
            .copied()
            .filter(|&j| j != self.id)
            .collect();
        self.recording.insert(
            snapshot,
            Recording {
                balance: self.bank.balance,
                channels,
                markers_from,
                markers_to,
            },
        );
        self.complete_if_done(snapshot, ctx);
    }

    /// Rule 4.
    fn complete_if_done(&mut self, snapshot: SnapshotId, ctx: &mut Ctx<'_, Self>) {
        let done = self
            .recording
            .get(&snapshot)
            .is_some_and(|r| r.channels.iter().all(|ch| matches!(ch, Channel::Closed(_))));
        if !done {
            return;
        }
        ctx.rule("4");
        let r = self.recording.remove(&snapshot).expect("present");
        let me = ctx.peers().index_of(self.id);
        let channels = r
            .channels
            .into_iter()
            .enumerate()
            .filter(|&(k, _)| k != me)
            .map(|(k, ch)| ChannelState {
                from: ctx.peers().ids()[k],
                amounts: match ch {
                    Channel::Closed(a) | Channel::Recording(a) => a,
                },
            })
            .collect();
        ctx.output(Output::Recorded(LocalSnapshot {
            id: snapshot,
            balance: r.balance,
            channels,
            markers_from: r.markers_from,
            markers_to: r.markers_to,
        }));
    }

    /// Snapshots this process has recorded its state for and not yet completed.
    pub fn under_way(&self) -> Vec<SnapshotId> {
        self.recording.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn id(initiator: u32, number: u64) -> SnapshotId {
        SnapshotId {
            initiator: NodeId(initiator),
            number,
        }
    }

    fn process(i: u32, peers: &Peers) -> Driver<'_, ChandyLamport> {
        let params = Params {
            balances: Some(vec![100, 200, 300]),
            ..Params::default()
        };
        Driver::new(
            ChandyLamport::new(NodeId(i), peers, &params),
            NodeId(i),
            peers,
        )
    }

    fn recorded(d: &Driver<'_, ChandyLamport>) -> Vec<LocalSnapshot> {
        d.outputs()
            .into_iter()
            .map(|Output::Recorded(l)| l)
            .collect()
    }

    #[test]
    fn transfers_move_money_and_are_refused_beyond_the_balance() {
        let peers = Peers::range(3);
        let mut p = process(0, &peers);
        p.input(Input::Transfer {
            to: NodeId(1),
            amount: 60,
        });
        assert_eq!(p.sent(), vec![(NodeId(1), Msg::Transfer { amount: 60 })]);
        p.input(Input::Transfer {
            to: NodeId(2),
            amount: 41,
        });
        assert!(p.sent().is_empty(), "only 40 left");
        p.receive(2, Msg::Transfer { amount: 5 });
        assert_eq!(p.process.balance(), 45);
    }

    #[test]
    fn the_initiator_records_then_sends_markers_on_every_channel() {
        let peers = Peers::range(3);
        let mut p = process(0, &peers);
        p.input(Input::Snapshot);
        let marker = Msg::Marker { snapshot: id(0, 1) };
        assert_eq!(
            p.sent(),
            vec![(NodeId(1), marker.clone()), (NodeId(2), marker.clone())]
        );
        // A transfer from 1 before 1's marker is in transit on channel 1 -> 0.
        p.receive(1, Msg::Transfer { amount: 7 });
        p.receive(1, marker.clone());
        assert!(p.outputs().is_empty(), "channel 2 -> 0 is still open");
        p.receive(2, marker);
        let parts = recorded(&p);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].balance, 100);
        assert_eq!(
            parts[0].channels,
            vec![
                ChannelState {
                    from: NodeId(1),
                    amounts: vec![7]
                },
                ChannelState {
                    from: NodeId(2),
                    amounts: vec![]
                },
            ]
        );
        assert_eq!(parts[0].markers_from, vec![NodeId(1), NodeId(2)]);
        assert!(p.process.under_way().is_empty());
    }

    #[test]
    fn the_first_marker_makes_a_process_record_with_that_channel_empty() {
        let peers = Peers::range(3);
        let mut p = process(1, &peers);
        p.receive(2, Msg::Transfer { amount: 9 }); // before any snapshot: just money
        p.receive(0, Msg::Marker { snapshot: id(0, 1) });
        assert_eq!(p.sent().len(), 2, "markers to 0 and 2");
        p.receive(0, Msg::Transfer { amount: 3 }); // after 0's marker: not in the snapshot
        p.receive(2, Msg::Transfer { amount: 4 }); // before 2's marker: in transit
        p.receive(2, Msg::Marker { snapshot: id(0, 1) });
        let parts = recorded(&p);
        assert_eq!(parts[0].balance, 209);
        let amounts: Vec<_> = parts[0]
            .channels
            .iter()
            .map(|c| c.amounts.clone())
            .collect();
        assert_eq!(amounts, vec![vec![], vec![4]]);
        assert_eq!(p.process.balance(), 216);
    }

    #[test]
    fn two_snapshots_at_once_are_kept_apart() {
        let peers = Peers::range(2);
        let params = Params::default();
        let mut p = Driver::new(
            ChandyLamport::new(NodeId(0), &peers, &params),
            NodeId(0),
            &peers,
        );
        p.input(Input::Snapshot);
        p.receive(1, Msg::Marker { snapshot: id(1, 1) });
        // Snapshot (1, 1): recorded on its marker; its only channel is closed: complete.
        assert_eq!(recorded(&p)[0].id, id(1, 1));
        p.receive(1, Msg::Marker { snapshot: id(0, 1) });
        assert_eq!(recorded(&p)[0].id, id(0, 1));
    }
}
