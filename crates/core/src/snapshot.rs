//! The snapshot family: global state recording over an application that moves money between
//! processes (a bank), and what monitors may observe.
//!
//! The application asks a process to transfer money or to start a snapshot; every process
//! reports its part of a snapshot (its recorded state and the recorded states of its incoming
//! channels) once that part is complete. Monitors add the parts up.

use crate::{Algorithm, NodeId, Process};
use serde::{Deserialize, Serialize};

/// What the application asks of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// Start a snapshot here (this process is its initiator).
    Snapshot,
    /// Send `amount` to `to`; not made if the balance cannot cover it.
    Transfer {
        /// The receiving process.
        to: NodeId,
        /// How much.
        amount: u64,
    },
}

/// Names a snapshot: its initiator, and which of that initiator's snapshots it is (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SnapshotId {
    /// The process that started it.
    pub initiator: NodeId,
    /// Its number among the initiator's snapshots.
    pub number: u64,
}

/// The recorded state of one incoming channel.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChannelState {
    /// The channel's sending end.
    pub from: NodeId,
    /// The amounts of the transfers recorded in transit on it, in arrival order.
    pub amounts: Vec<u64>,
}

/// One process's part of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalSnapshot {
    /// Which snapshot.
    pub id: SnapshotId,
    /// The recorded state: the process's balance when it recorded.
    pub balance: u64,
    /// Every incoming channel's recorded state.
    pub channels: Vec<ChannelState>,
    /// The processes a marker of this snapshot came from, in arrival order.
    pub markers_from: Vec<NodeId>,
    /// The processes it sent a marker of this snapshot to.
    pub markers_to: Vec<NodeId>,
}

/// What a process reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Output {
    /// Its part of a snapshot is complete.
    Recorded(LocalSnapshot),
}

/// A snapshot algorithm with its bank, as monitors and workloads see it.
pub trait GlobalSnapshot: Algorithm + Process<Input = Input, Output = Output> {
    /// The account's balance now.
    fn balance(&self) -> u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_serialize_as_traces_show_them() {
        assert_eq!(
            serde_json::to_string(&Input::Snapshot).unwrap(),
            "\"Snapshot\""
        );
        assert_eq!(
            serde_json::to_string(&Input::Transfer {
                to: NodeId(1),
                amount: 5
            })
            .unwrap(),
            "{\"Transfer\":{\"to\":1,\"amount\":5}}"
        );
        let a = SnapshotId {
            initiator: NodeId(0),
            number: 2,
        };
        let b = SnapshotId {
            initiator: NodeId(1),
            number: 1,
        };
        assert!(a < b);
    }
}
