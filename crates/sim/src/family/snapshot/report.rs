//! The report's `snapshot` section.

use distsync_core::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One channel's recorded state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedChannel {
    /// Its sending end.
    pub from: NodeId,
    /// Its receiving end.
    pub to: NodeId,
    /// The transfers recorded in transit on it.
    pub amounts: Vec<u64>,
}

/// One snapshot as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSnapshot {
    /// The process that started it.
    pub initiator: NodeId,
    /// Its number among the initiator's snapshots.
    pub number: u64,
    /// When it started.
    pub started_ns: u64,
    /// When the last process completed its part (null while incomplete).
    pub completed_ns: Option<u64>,
    /// Each process's recorded balance, by id.
    pub states: BTreeMap<String, u64>,
    /// Each directed channel's recorded transfers.
    pub channels: Vec<RecordedChannel>,
    /// The recorded states plus the recorded channels.
    pub recorded_total: u64,
    /// Whether the recorded total is the money in the system (null while incomplete).
    pub consistent: Option<bool>,
}

/// Figures for snapshots (the report's `snapshot` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotReport {
    /// The money in the system: the opening balances' sum.
    pub money: u64,
    /// Transfers made.
    pub transfers: u64,
    /// Markers sent.
    pub markers: u64,
    /// Snapshots complete, and of those consistent.
    pub completed: u64,
    /// Complete snapshots whose recorded total is the money in the system.
    pub consistent: u64,
    /// Every snapshot, in the order they started.
    pub snapshots: Vec<RecordedSnapshot>,
    /// Each live process's balance at the end, by id.
    pub balances: BTreeMap<String, u64>,
}
