//! The report's `multicast` section.

use crate::stats::Stats;
use distsync_core::multicast::Order;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures for multicast (the report's `multicast` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MulticastReport {
    /// Multicasts made.
    pub multicasts: u64,
    /// Deliveries, at every process, the sender's own included.
    pub deliveries: u64,
    /// (multicast, live process) pairs never delivered.
    pub undelivered: u64,
    /// All messages of the run divided by the multicasts.
    pub messages_per_multicast: f64,
    /// From a multicast to its delivery at each other process.
    pub delivery_delay_ns: Stats,
    /// The orders monitored as violations.
    pub checked: Vec<Order>,
    /// Deliveries of a sender's multicast before an earlier one of the same sender.
    pub fifo_inversions: u64,
    /// Deliveries of a multicast before one in its causal past.
    pub causal_inversions: u64,
    /// Deliveries in another position than the same delivery at the first process to make it.
    pub order_disagreements: u64,
    /// The replicated database: each live replica's balance at the end, by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub balances: BTreeMap<String, u64>,
}
