//! The scenario's fields of leader election: its timeouts and its failure detector.

use crate::family::section::{section, Dur, Refusal};
use serde::{Deserialize, Serialize};
use std::time::Duration;

section! {
    /// The election fields of a scenario (top-level keys of the file): the timeouts the
    /// algorithms read and the failure detector (`Scenario::election`).
    pub struct ElectionSpec {
        /// T, the wait for an answer before taking the silent process for crashed.
        pub answer_timeout: Option<Duration> as Dur => Refusal::Param,
        /// T', the wait for the result of an election before starting it again.
        pub coordinator_timeout: Option<Duration> as Dur => Refusal::Param,
        /// With timeout detection: the coordinator's heartbeat period.
        pub heartbeat: Option<Duration> as Dur => Refusal::Param,
        /// With timeout detection: the silence after which the coordinator is suspected.
        pub heartbeat_timeout: Option<Duration> as Dur => Refusal::Param,
        /// How processes notice a crashed coordinator. `"timeout"`: the coordinator sends
        /// heartbeats and a process that misses them for `heartbeat_timeout` starts an
        /// election; `"none"` (the default): only scripted `elect` events and recoveries start
        /// elections.
        pub detect: Option<Detect> => Refusal::First("`detect`"),
    }
}

/// How election processes notice a crashed coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detect {
    /// Heartbeats from the coordinator and a timeout at every other process.
    Timeout,
    /// No failure detector: elections start by `elect` events and recoveries only.
    None,
}

impl ElectionSpec {
    /// Sets the algorithms' parameters of this section in `params`.
    pub(crate) fn params(&self, params: &mut distsync_core::Params) {
        params.answer_timeout = self.answer_timeout;
        params.coordinator_timeout = self.coordinator_timeout;
        params.heartbeat = self.heartbeat;
        params.heartbeat_timeout = self.heartbeat_timeout;
    }
}
