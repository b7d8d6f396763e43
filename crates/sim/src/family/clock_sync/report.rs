//! The report's `clock` section.

use crate::clocks::ClockReading;
use distsync_core::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures for clock synchronization (the report's `clock` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockReport {
    /// The largest difference between two live clients' clocks at the end, in ns.
    pub max_skew_ns: u64,
    /// The largest distance of a live client's clock from true time at the end, in ns.
    pub max_error_ns: u64,
    /// The worst skew from the first synchronization on (null if it never happened).
    pub worst_skew_ns: Option<u64>,
    /// The worst error from the first synchronization on (null if it never happened).
    pub worst_error_ns: Option<u64>,
    /// When every live client had made its first correction (null if never).
    pub first_sync_ns: Option<u64>,
    /// Synchronization rounds completed.
    pub rounds: u64,
    /// Corrections applied.
    pub adjustments: u64,
    /// The period of the `Sync` input.
    pub sync_interval_ns: u64,
    /// Corrections whose reported error bound was checked (`sync-bound`).
    pub bound_checks: u64,
    /// The largest error found divided by its bound (at most 1 when every bound held).
    pub worst_bound_ratio: f64,
    /// How often each process's clock was left out of a round (Berkeley's threshold, NTP's
    /// falsetickers), by id.
    pub ignored: BTreeMap<String, u64>,
    /// How often an NTP client found no majority of its servers agreeing, and left its clock
    /// alone.
    pub no_majority: u64,
    /// The masters in the order they were elected (Berkeley).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masters: Vec<NodeId>,
    /// Each live process's stratum at the end (NTP).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub strata: BTreeMap<String, u8>,
    /// Every process's clock at the end.
    pub clocks: Vec<ClockReading>,
}
