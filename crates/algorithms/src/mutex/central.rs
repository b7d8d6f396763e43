//! The central coordinator (centralized lock manager), with the explicit DENIED reply.
//!
//! Source: seed 000 "Central Coordinator Based Algorithm" and its pseudo code (the "modified
//! algo"), seed 001 "Centralized Lock Manager" and its three-process example. Rules:
//! 1. Client: send REQUEST to the coordinator (`coordinator`); wait for GRANT (a DENIED only
//!    says the request is queued and the coordinator alive) (`state`); enter; on exit send
//!    RELEASE.
//! 2. Coordinator on REQUEST: if nobody is in the CS (`holder`), reply GRANT; else append the
//!    request to `request_queue` (first come, first served) and reply DENIED.
//! 3. Coordinator on RELEASE: if `request_queue` is not empty, remove the first and GRANT it
//!    (`holder`).
//!
//!
//! A rule for duplicated messages, which the notes leave out (they assume exactly-once
//! channels): each client numbers its requests 1, 2, 3, ... and every message carries the
//! number of the request it belongs to. The coordinator remembers each client's latest number:
//! a REQUEST it has already seen is a copy and is ignored, and a RELEASE counts only from the
//! holder and for the request it holds the CS by (on a network that reorders, the client's next
//! REQUEST may arrive before that RELEASE, and is queued). A client acts on a GRANT or DENIED only for the
//! request it is waiting on. So a copy of a REQUEST is not queued behind its own grant (which
//! used to hand the CS to a client no longer waiting: a deadlock), and a late copy of a GRANT or
//! a RELEASE does not admit or free a later request (mutual exclusion).
//!
//! The coordinator is a lock manager that does not compete for the CS itself (`coordinator = ID`
//! in the scenario, by default the highest id). 3 messages per entry uncontended, 4 when the
//! request finds the CS busy; synchronization delay 2T (RELEASE, then GRANT).

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Client to coordinator: I want the CS (my request number `n`).
    Request { n: u64 },
    /// Coordinator to client: you may enter (for your request `n`).
    Grant { n: u64 },
    /// Coordinator to client: the CS is busy; your request `n` is queued.
    Denied { n: u64 },
    /// Client to coordinator: I left the CS I entered for request `n`.
    Release { n: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Grant { .. } => "Grant",
            Msg::Denied { .. } => "Denied",
            Msg::Release { .. } => "Release",
        }
    }
}

/// A client's view of its own request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ClientState {
    /// Not interested.
    Idle,
    /// REQUEST sent, no GRANT yet.
    Waiting,
    /// Queued behind another holder: the coordinator said DENIED.
    Queued,
    /// Inside the CS.
    Held,
}

/// A process of the central algorithm: the coordinator, or a client.
#[derive(Clone, Debug, Hash, Serialize)]
pub enum Central {
    /// The lock manager.
    Coordinator {
        /// The client in the CS, if any.
        holder: Option<NodeId>,
        /// Requests waiting for the CS, first come first served.
        request_queue: VecDeque<NodeId>,
        /// The number of the request the holder holds the CS by.
        held: u64,
        /// Each client's latest request number (the duplicates rule).
        latest: BTreeMap<NodeId, u64>,
    },
    /// A competing process.
    Client {
        /// The coordinator's id.
        coordinator: NodeId,
        /// Where its request stands.
        state: ClientState,
        /// The number of its current (or last) request.
        request: u64,
    },
}

/// The coordinator named by the parameters, or the highest id.
pub fn coordinator(peers: &Peers, params: &Params) -> NodeId {
    params.coordinator.unwrap_or_else(|| peers.highest())
}

impl Algorithm for Central {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        if peers.len() < 2 {
            return Err(ParamError::new(
                "nodes",
                "the central algorithm needs at least 2 nodes: a coordinator and a client",
            ));
        }
        match params.coordinator {
            Some(c) if !peers.contains(c) => Err(ParamError::new(
                "coordinator",
                format!("node {c} is not one of the scenario's node ids"),
            )),
            _ => Ok(()),
        }
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let coordinator = coordinator(peers, params);
        if id == coordinator {
            Central::Coordinator {
                holder: None,
                request_queue: VecDeque::new(),
                held: 0,
                latest: BTreeMap::new(),
            }
        } else {
            Central::Client {
                coordinator,
                state: ClientState::Idle,
                request: 0,
            }
        }
    }
}

impl MutualExclusion for Central {
    fn in_critical_section(&self) -> bool {
        matches!(
            self,
            Central::Client {
                state: ClientState::Held,
                ..
            }
        )
    }

    fn competitors(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let c = coordinator(peers, params);
        peers.ids().iter().copied().filter(|&id| id != c).collect()
    }
}

impl Process for Central {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        // The coordinator does not compete; inputs to it are ignored.
        let Central::Client {
            coordinator,
            state,
            request,
        } = self
        else {
            return;
        };
        match (input, *state) {
            (Input::Request, ClientState::Idle) => {
                *state = ClientState::Waiting;
                *request += 1;
                ctx.rule("1");
                ctx.send(*coordinator, Msg::Request { n: *request });
            }
            (Input::Release, ClientState::Held) => {
                *state = ClientState::Idle;
                ctx.rule("1");
                ctx.send(*coordinator, Msg::Release { n: *request });
                ctx.output(Output::Exit);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match self {
            Central::Coordinator {
                holder,
                request_queue,
                held,
                latest,
            } => match msg {
                // A copy of a request already seen: it was answered.
                Msg::Request { n } if latest.get(&from).is_some_and(|&l| n <= l) => {}
                Msg::Request { n } if holder.is_none() => {
                    latest.insert(from, n);
                    *holder = Some(from);
                    *held = n;
                    ctx.rule("2");
                    ctx.send(from, Msg::Grant { n });
                }
                Msg::Request { n } => {
                    latest.insert(from, n);
                    request_queue.push_back(from);
                    ctx.rule("2");
                    ctx.send(from, Msg::Denied { n });
                }
                Msg::Release { n } if *holder == Some(from) && n == *held => {
                    ctx.rule("3");
                    *holder = request_queue.pop_front();
                    if let Some(next) = *holder {
                        // A client has one request outstanding: the queued one is its latest.
                        *held = latest[&next];
                        ctx.send(next, Msg::Grant { n: *held });
                    }
                }
                // A RELEASE from a non-holder or of an earlier request (a late copy), or a
                // client-bound message: nothing to do.
                _ => {}
            },
            Central::Client { state, request, .. } => match (msg, *state) {
                (Msg::Grant { n }, ClientState::Waiting | ClientState::Queued) if n == *request => {
                    *state = ClientState::Held;
                    ctx.rule("1");
                    ctx.output(Output::Enter);
                }
                (Msg::Denied { n }, ClientState::Waiting) if n == *request => {
                    ctx.rule("1");
                    *state = ClientState::Queued
                }
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    #[test]
    fn seed_001_example_grants_in_order_3_1_2() {
        // Three processes and a lock manager (node 0 here): 3 requests and is granted, 1 then 2
        // request and are queued, then each release grants the next in arrival order.
        let peers = Peers::range(4);
        let params = Params {
            coordinator: Some(NodeId(0)),
            ..Params::default()
        };
        let mut lm = Driver::new(Central::new(NodeId(0), &peers, &params), NodeId(0), &peers);
        lm.receive(3, Msg::Request { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(3), Msg::Grant { n: 1 })]);
        lm.receive(1, Msg::Request { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Denied { n: 1 })]);
        lm.receive(2, Msg::Request { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(2), Msg::Denied { n: 1 })]);
        lm.receive(3, Msg::Release { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Grant { n: 1 })]);
        lm.receive(1, Msg::Release { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(2), Msg::Grant { n: 1 })]);
        lm.receive(2, Msg::Release { n: 1 });
        assert!(lm.sent().is_empty());
    }

    #[test]
    fn a_client_enters_on_grant_only() {
        let peers = Peers::range(3);
        let mut c = Driver::new(
            Central::new(NodeId(0), &peers, &Params::default()),
            NodeId(0),
            &peers,
        );
        c.input(Input::Request);
        assert_eq!(
            c.sent(),
            vec![(NodeId(2), Msg::Request { n: 1 })],
            "the highest id coordinates by default"
        );
        c.receive(2, Msg::Denied { n: 1 });
        assert!(c.outputs().is_empty());
        c.receive(2, Msg::Grant { n: 1 });
        assert_eq!(c.outputs(), vec![Output::Enter]);
        c.input(Input::Release);
        assert_eq!(c.sent(), vec![(NodeId(2), Msg::Release { n: 1 })]);
        assert_eq!(c.outputs(), vec![Output::Exit]);
    }

    #[test]
    fn duplicated_requests_grants_and_releases_count_once() {
        // Coordinator 2, clients 0 and 1.
        let peers = Peers::range(3);
        let mut lm = Driver::new(
            Central::new(NodeId(2), &peers, &Params::default()),
            NodeId(2),
            &peers,
        );
        lm.receive(0, Msg::Request { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(0), Msg::Grant { n: 1 })]);
        // A copy of the same REQUEST is not queued behind its own grant.
        lm.receive(0, Msg::Request { n: 1 });
        assert!(lm.sent().is_empty());
        lm.receive(1, Msg::Request { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Denied { n: 1 })]);
        lm.receive(0, Msg::Release { n: 1 });
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Grant { n: 1 })]);
        lm.receive(1, Msg::Release { n: 1 });
        lm.receive(0, Msg::Request { n: 2 });
        assert_eq!(lm.sent(), vec![(NodeId(0), Msg::Grant { n: 2 })]);
        // A late copy of 0's first RELEASE does not free its second hold; its REQUEST 3
        // overtaking its RELEASE 2 is queued, and granted by that release.
        lm.receive(0, Msg::Release { n: 1 });
        assert!(lm.sent().is_empty());
        lm.receive(0, Msg::Request { n: 3 });
        assert_eq!(lm.sent(), vec![(NodeId(0), Msg::Denied { n: 3 })]);
        lm.receive(0, Msg::Release { n: 2 });
        assert_eq!(lm.sent(), vec![(NodeId(0), Msg::Grant { n: 3 })]);
        lm.receive(0, Msg::Release { n: 3 });
        lm.receive(0, Msg::Request { n: 4 });
        assert_eq!(lm.sent(), vec![(NodeId(0), Msg::Grant { n: 4 })]);
        lm.receive(0, Msg::Release { n: 1 });
        lm.receive(1, Msg::Request { n: 2 });
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Denied { n: 2 })]);

        // A client: a late copy of the GRANT of its first request does not admit its second.
        let mut c = Driver::new(
            Central::new(NodeId(0), &peers, &Params::default()),
            NodeId(0),
            &peers,
        );
        c.input(Input::Request);
        assert_eq!(c.sent(), vec![(NodeId(2), Msg::Request { n: 1 })]);
        c.receive(2, Msg::Grant { n: 1 });
        assert_eq!(c.outputs(), vec![Output::Enter]);
        c.input(Input::Release);
        assert_eq!(c.sent(), vec![(NodeId(2), Msg::Release { n: 1 })]);
        c.input(Input::Request);
        assert_eq!(c.sent(), vec![(NodeId(2), Msg::Request { n: 2 })]);
        c.receive(2, Msg::Grant { n: 1 });
        assert!(c.outputs().is_empty());
        assert!(!c.process.in_critical_section());
        c.receive(2, Msg::Denied { n: 1 });
        c.receive(2, Msg::Grant { n: 2 });
        assert_eq!(c.outputs(), vec![Output::Enter]);
    }

    #[test]
    fn parameters_are_checked() {
        let peers = Peers::range(3);
        let bad = Params {
            coordinator: Some(NodeId(7)),
            ..Params::default()
        };
        assert_eq!(
            Central::validate(&bad, &peers).unwrap_err().field,
            "coordinator"
        );
        assert!(Central::validate(&Params::default(), &Peers::range(1)).is_err());
        assert_eq!(
            Central::competitors(&peers, &Params::default()),
            vec![NodeId(0), NodeId(1)]
        );
    }
}
