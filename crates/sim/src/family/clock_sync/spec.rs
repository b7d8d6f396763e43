//! The scenario's fields of clock synchronization.

use crate::family::section::{section, Dur, Refusal};
use distsync_core::NodeId;
use std::time::Duration;

section! {
    /// The clock-synchronization fields of a scenario (top-level keys of the file;
    /// `Scenario::clock_sync`).
    pub struct ClockSyncSpec {
        /// How often every process is told to synchronize (default 1s).
        pub sync_interval: Option<Duration> as Dur => Refusal::Then("this field"),
        /// Cristian's time server (default: the lowest id).
        pub server: Option<NodeId> => Refusal::Then("this field"),
        /// Exchanges per Cristian synchronization (default 4).
        pub samples: Option<u32> => Refusal::Then("this field"),
        /// The smallest one-way delay the algorithm may assume (default 0).
        pub min_delay: Option<Duration> as Dur => Refusal::Then("this field"),
        /// The drift bound error bounds allow for, in ppm (default 100).
        pub max_drift_ppm: Option<f64> => Refusal::Then("this field"),
        /// Berkeley: how far from the median a clock may be and still count (default 1s).
        pub threshold: Option<Duration> as Dur => Refusal::Then("this field"),
        /// Berkeley: the election algorithm that chooses the master (default "bully").
        pub master_election: Option<String> => Refusal::Then("this field"),
        /// NTP: server ids by stratum, `[[stratum 1], [stratum 2], ...]`.
        pub strata: Option<Vec<Vec<NodeId>>> => Refusal::Then("this field"),
    }
}

impl ClockSyncSpec {
    /// Sets the algorithms' parameters of this section in `params`.
    pub(crate) fn params(&self, params: &mut distsync_core::Params) {
        params.server = self.server;
        params.samples = self.samples;
        params.min_delay = self.min_delay;
        params.max_drift_ppm = self.max_drift_ppm;
        params.threshold = self.threshold;
        params.master_election = self.master_election.clone();
        params.strata = self.strata.clone();
    }
}
