//! The scenario's `[multicast]` section.

use distsync_core::multicast::Order;
use serde::{Deserialize, Serialize};

/// The `[multicast]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MulticastSpec {
    /// Multicasts per second per process (Poisson arrivals); none but scripted ones if absent.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Multicasts per process (default 10).
    #[serde(default)]
    pub count: Option<u64>,
    /// The orders whose breach is a violation (default: what the algorithm promises).
    #[serde(default)]
    pub check: Option<Vec<Order>>,
}

/// Multicasts per process when `count` is not given.
pub const DEFAULT_COUNT: u64 = 10;
