//! Algorithm parameters that come from a scenario or cluster file.

use crate::NodeId;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// Parameters an algorithm may read when it is built. Each is optional; an algorithm documents
/// which it reads and what it assumes when one is absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The lock manager of the central algorithm (default: the highest id).
    pub coordinator: Option<NodeId>,
    /// The process holding the token at start, for token algorithms (default: the first id).
    pub holder: Option<NodeId>,
    /// Tree edges for tree algorithms such as Raymond's.
    pub tree: Option<Vec<[NodeId; 2]>>,
    /// How quorum algorithms build their quorums.
    pub quorums: Option<QuorumKind>,
    /// Elections: T, how long to wait for an answer (OK, acknowledgement) before taking the
    /// silent process for crashed (default 10ms).
    #[serde(default, with = "crate::serde_duration::option")]
    pub answer_timeout: Option<Duration>,
    /// Elections: T', how long to wait for the announcement of an election's result before
    /// starting it again (default: a multiple of T chosen by each algorithm).
    #[serde(default, with = "crate::serde_duration::option")]
    pub coordinator_timeout: Option<Duration>,
    /// Elections with `detect = "timeout"`: how often the coordinator sends a heartbeat.
    #[serde(default, with = "crate::serde_duration::option")]
    pub heartbeat: Option<Duration>,
    /// Elections with `detect = "timeout"`: how long the coordinator may stay silent before a
    /// process suspects it and starts an election.
    #[serde(default, with = "crate::serde_duration::option")]
    pub heartbeat_timeout: Option<Duration>,
    /// Clock synchronization: Cristian's time server (default: the lowest id).
    #[serde(default)]
    pub server: Option<NodeId>,
    /// Clock synchronization: request/reply exchanges per Cristian synchronization (default 4).
    #[serde(default)]
    pub samples: Option<u32>,
    /// Clock synchronization: the smallest one-way delay the algorithm may assume (default 0).
    #[serde(default, with = "crate::serde_duration::option")]
    pub min_delay: Option<Duration>,
    /// Clock synchronization: the bound on clock drift that error bounds allow for, in ppm
    /// (default 100).
    #[serde(default)]
    pub max_drift_ppm: Option<f64>,
    /// Clock synchronization: how far off a client's clock may run while it slews a correction,
    /// in ppm, on top of its drift (the simulator's `[clocks] slew_ppm` when `adjust = "slew"`;
    /// absent: corrections are steps).
    #[serde(default)]
    pub slew_ppm: Option<f64>,
    /// Berkeley: how far from the median a clock may be and still count (default 1s).
    #[serde(default, with = "crate::serde_duration::option")]
    pub threshold: Option<Duration>,
    /// Berkeley: the election algorithm that chooses the master (default "bully").
    #[serde(default)]
    pub master_election: Option<String>,
    /// NTP: server ids by stratum, `[[stratum 1], [stratum 2], ...]`; the other nodes are
    /// clients of the last level (default: the lowest id alone at stratum 1).
    #[serde(default)]
    pub strata: Option<Vec<Vec<NodeId>>>,
    /// Snapshots: every bank account's opening balance (default 1000).
    #[serde(default)]
    pub balance: Option<u64>,
    /// Snapshots: each bank account's opening balance, in membership order (instead of
    /// `balance`).
    #[serde(default)]
    pub balances: Option<Vec<u64>>,
    /// Reliable links (`[network] reliable = true`): the first retransmission timeout (the
    /// simulator derives it from the network's delay bound).
    #[serde(default, with = "crate::serde_duration::option")]
    pub link_timeout: Option<Duration>,
}

/// Quorum constructions for Maekawa-style algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuorumKind {
    /// Rows and columns of a square grid: about 2 sqrt(N) - 1 members.
    Grid,
    /// Lines of a finite projective plane: K members when N = K(K-1)+1.
    Plane,
}

/// A parameter that does not fit the membership or the algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The scenario field at fault, e.g. "coordinator".
    pub field: &'static str,
    /// What was expected.
    pub message: String,
}

impl ParamError {
    /// An error for `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> ParamError {
        ParamError {
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ParamError {}
