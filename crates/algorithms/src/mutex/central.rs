//! The central coordinator (centralized lock manager), with the explicit DENIED reply.
//!
//! Source: seed 000 "Central Coordinator Based Algorithm" and its pseudo code (the "modified
//! algo"), seed 001 "Centralized Lock Manager" and its three-process example. Rules:
//! - Client: send REQUEST to the coordinator; wait for GRANT (a DENIED only says the request is
//!   queued and the coordinator alive); enter; on exit send RELEASE.
//! - Coordinator on REQUEST: if nobody is in the CS, reply GRANT; else append the request to
//!   `request_queue` (first come, first served) and reply DENIED.
//! - Coordinator on RELEASE: if `request_queue` is not empty, remove the first and GRANT it.
//!
//! The coordinator is a lock manager that does not compete for the CS itself (`coordinator = ID`
//! in the scenario, by default the highest id). 3 messages per entry uncontended, 4 when the
//! request finds the CS busy; synchronization delay 2T (RELEASE, then GRANT).

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Client to coordinator: I want the CS.
    Request,
    /// Coordinator to client: you may enter.
    Grant,
    /// Coordinator to client: the CS is busy; your request is queued.
    Denied,
    /// Client to coordinator: I left the CS.
    Release,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request => "Request",
            Msg::Grant => "Grant",
            Msg::Denied => "Denied",
            Msg::Release => "Release",
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
    },
    /// A competing process.
    Client {
        /// The coordinator's id.
        coordinator: NodeId,
        /// Where its request stands.
        state: ClientState,
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
            }
        } else {
            Central::Client {
                coordinator,
                state: ClientState::Idle,
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
        let Central::Client { coordinator, state } = self else {
            return;
        };
        match (input, *state) {
            (Input::Request, ClientState::Idle) => {
                *state = ClientState::Waiting;
                ctx.send(*coordinator, Msg::Request);
            }
            (Input::Release, ClientState::Held) => {
                *state = ClientState::Idle;
                ctx.send(*coordinator, Msg::Release);
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
            } => match msg {
                Msg::Request if holder.is_none() => {
                    *holder = Some(from);
                    ctx.send(from, Msg::Grant);
                }
                Msg::Request => {
                    request_queue.push_back(from);
                    ctx.send(from, Msg::Denied);
                }
                Msg::Release if *holder == Some(from) => {
                    *holder = request_queue.pop_front();
                    if let Some(next) = *holder {
                        ctx.send(next, Msg::Grant);
                    }
                }
                // A RELEASE from a non-holder, or a client-bound message: nothing to do.
                _ => {}
            },
            Central::Client { state, .. } => match (msg, *state) {
                (Msg::Grant, ClientState::Waiting | ClientState::Queued) => {
                    *state = ClientState::Held;
                    ctx.output(Output::Enter);
                }
                (Msg::Denied, ClientState::Waiting) => *state = ClientState::Queued,
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
        lm.receive(3, Msg::Request);
        assert_eq!(lm.sent(), vec![(NodeId(3), Msg::Grant)]);
        lm.receive(1, Msg::Request);
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Denied)]);
        lm.receive(2, Msg::Request);
        assert_eq!(lm.sent(), vec![(NodeId(2), Msg::Denied)]);
        lm.receive(3, Msg::Release);
        assert_eq!(lm.sent(), vec![(NodeId(1), Msg::Grant)]);
        lm.receive(1, Msg::Release);
        assert_eq!(lm.sent(), vec![(NodeId(2), Msg::Grant)]);
        lm.receive(2, Msg::Release);
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
            vec![(NodeId(2), Msg::Request)],
            "the highest id coordinates by default"
        );
        c.receive(2, Msg::Denied);
        assert!(c.outputs().is_empty());
        c.receive(2, Msg::Grant);
        assert_eq!(c.outputs(), vec![Output::Enter]);
        c.input(Input::Release);
        assert_eq!(c.sent(), vec![(NodeId(2), Msg::Release)]);
        assert_eq!(c.outputs(), vec![Output::Exit]);
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
