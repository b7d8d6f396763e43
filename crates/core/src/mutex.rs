//! The mutual-exclusion family: what the application asks, what the algorithm reports, and
//! what monitors may observe.

use crate::{Algorithm, NodeId, Params, Peers, Process};
use serde::{Deserialize, Serialize};

/// What the application asks of a mutual-exclusion process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// The application wants the critical section. It asks again only after its Exit.
    Request,
    /// The application leaves the critical section it was granted.
    Release,
}

/// What a mutual-exclusion process reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Output {
    /// The process is now in the critical section.
    Enter,
    /// The process has left the critical section (after a Release).
    Exit,
}

/// A mutual-exclusion algorithm, as monitors and workloads see it.
pub trait MutualExclusion: Algorithm + Process<Input = Input, Output = Output> {
    /// True between the Enter and the Exit outputs.
    fn in_critical_section(&self) -> bool;

    /// The processes that compete for the critical section. All of them, except where the
    /// algorithm reserves a role (the central algorithm's lock manager does not compete).
    fn competitors(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let _ = params;
        peers.ids().to_vec()
    }
}
