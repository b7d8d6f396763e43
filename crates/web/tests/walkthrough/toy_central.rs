//! The walk-through's toy algorithm (docs/architecture.md, "How to add an algorithm"): the
//! central coordinator at its plainest. The highest id is the coordinator and does not
//! compete; a client sends REQUEST and enters on GRANT; on exit it sends RELEASE, and the
//! coordinator grants the next request in its queue, first come first served. No DENIED, no
//! request numbers: it assumes exactly-once channels (a duplicated REQUEST would be queued
//! twice).
//!
//! `ToyCentral<true>` is the same algorithm with one rule broken on purpose: the coordinator
//! grants every REQUEST at once, whoever holds the critical section, so that the checker has a
//! violation of mutual exclusion to find.

use distsync_algorithms::validate::{self, Invalid, Validate};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Client to coordinator: I want the critical section.
    Request,
    /// Coordinator to client: enter.
    Grant,
    /// Client to coordinator: I left.
    Release,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request => "Request",
            Msg::Grant => "Grant",
            Msg::Release => "Release",
        }
    }
}

impl Validate for Msg {
    /// No field to check: every message is a bare kind.
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        Ok(())
    }
}

/// A process: the coordinator's queue and holder, or a client's state. `BROKEN` grants
/// without waiting for the holder's RELEASE.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct ToyCentral<const BROKEN: bool> {
    /// Who grants.
    coordinator: NodeId,
    /// The coordinator's: who holds the critical section.
    holder: Option<NodeId>,
    /// The coordinator's: who waits, first come first served.
    queue: VecDeque<NodeId>,
    /// A client's: inside the critical section.
    inside: bool,
}

/// The coordinator: `coordinator = ID` in the scenario, else the highest id.
fn coordinator(peers: &Peers, params: &Params) -> NodeId {
    params
        .coordinator
        .unwrap_or_else(|| *peers.ids().iter().max().expect("a membership has members"))
}

impl<const BROKEN: bool> Process for ToyCentral<BROKEN> {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request => ctx.send(self.coordinator, Msg::Request),
            Input::Release if self.inside => {
                self.inside = false;
                ctx.output(Output::Exit);
                ctx.send(self.coordinator, Msg::Release);
            }
            Input::Release => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Request if BROKEN || self.holder.is_none() => {
                self.holder = Some(from);
                ctx.send(from, Msg::Grant);
            }
            Msg::Request => self.queue.push_back(from),
            Msg::Release if self.holder == Some(from) => {
                self.holder = self.queue.pop_front();
                if let Some(next) = self.holder {
                    ctx.send(next, Msg::Grant);
                }
            }
            Msg::Release => {}
            Msg::Grant => {
                self.inside = true;
                ctx.output(Output::Enter);
            }
        }
    }
}

impl<const BROKEN: bool> Algorithm for ToyCentral<BROKEN> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), distsync_core::ParamError> {
        match params.coordinator {
            Some(c) => validate::member(peers, c, "coordinator")
                .map_err(|e| distsync_core::ParamError::new("coordinator", e.0)),
            None => Ok(()),
        }
    }

    fn new(_id: NodeId, peers: &Peers, params: &Params) -> Self {
        ToyCentral {
            coordinator: coordinator(peers, params),
            holder: None,
            queue: VecDeque::new(),
            inside: false,
        }
    }
}

impl<const BROKEN: bool> MutualExclusion for ToyCentral<BROKEN> {
    fn in_critical_section(&self) -> bool {
        self.inside
    }

    /// Every process but the coordinator.
    fn competitors(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let c = coordinator(peers, params);
        peers.ids().iter().copied().filter(|&id| id != c).collect()
    }
}
