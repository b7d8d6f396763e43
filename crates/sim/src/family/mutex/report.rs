//! The report's `mutex` section.

use crate::stats::Stats;
use serde::{Deserialize, Serialize};

/// Figures for mutual exclusion (ORACLES.md's conventions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MutexReport {
    /// Critical-section entries.
    pub entries: u64,
    /// All messages of the run divided by the entries.
    pub messages_per_entry: f64,
    /// From an Exit to the next Enter, when some request was waiting at that Exit.
    pub sync_delay_ns: Stats,
    /// From the Request input to the Exit.
    pub response_time_ns: Stats,
    /// Entries per second, from the first request to the last exit.
    pub throughput_per_s: f64,
    /// Requests made and not yet served when the run ended.
    pub unserved_requests: u64,
    /// The most times one request was overtaken by a request made after it.
    pub max_bypass: u64,
    /// Requests lost because their node crashed.
    pub abandoned_requests: u64,
}
