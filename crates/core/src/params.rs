//! Algorithm parameters that come from a scenario or cluster file.

use crate::NodeId;
use serde::{Deserialize, Serialize};
use std::fmt;

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
