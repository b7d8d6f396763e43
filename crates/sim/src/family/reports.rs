//! The families' sections of the report ([`crate::Report::sections`]): one line per family,
//! each family's figures defined in its own `report.rs`. The report writes them flattened,
//! under the family's key (`"mutex": {...}`), where a run of that family has its figures; so a
//! family adds its section here, and not in `crates/sim/src/report.rs`.
//!
//! A leaf module (it names only the families' `report.rs`), so that `report.rs` uses it without
//! an import circle.

use crate::family::clock_sync::report::ClockReport;
use crate::family::election::report::ElectionReport;
use crate::family::multicast::report::MulticastReport;
use crate::family::mutex::report::MutexReport;
use crate::family::snapshot::report::SnapshotReport;
use serde::{Deserialize, Serialize};

/// The figures of a run's family: the one of its family is set, the others are absent (and
/// left out of the JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FamilySections {
    /// Mutual-exclusion figures, for mutex algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutex: Option<MutexReport>,
    /// Election figures, for election algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election: Option<ElectionReport>,
    /// Clock-synchronization figures, for clock-synchronization algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockReport>,
    /// Multicast figures, for multicast algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<MulticastReport>,
    /// Snapshot figures, for snapshot algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotReport>,
}
