//! The JSON report of a run (DESIGN.md's field names are a public contract).

pub use crate::family::election::report::{ElectionMessages, ElectionReport};
pub use crate::family::mutex::report::MutexReport;
pub use crate::family::reports::FamilySections;
pub use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything a run measured and checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The scenario's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The registry name of the algorithm.
    pub algorithm: String,
    /// Its family ("mutex", ...).
    pub family: String,
    /// How many processes.
    pub nodes: usize,
    /// The seed that reproduces this run.
    pub seed: u64,
    /// Simulated time when the run ended.
    pub end_time_ns: u64,
    /// Why it ended: "done" (the workload was served), "idle" (nothing left to happen) or
    /// "horizon" (`until` was reached), "limit" (the runaway guard stopped it: see the `storm`
    /// or `runaway` violation), or "paused" in the report of a stepped session that has not
    /// reached its end (`Session::report`).
    pub ended_by: String,
    /// How many events the simulator processed.
    pub events_processed: u64,
    /// Message counts.
    pub messages: MessageStats,
    /// The longest causal chain of messages (each message one link).
    pub longest_chain: u64,
    /// Every monitored property that failed; empty when all held.
    pub violations: Vec<Violation>,
    /// The figures of the algorithm's family, each under the family's key (`mutex`,
    /// `election`, `clock`, `multicast`, `snapshot`; each family's section is in its own
    /// directory, `crates/sim/src/family/<family>/report.rs`).
    #[serde(flatten)]
    pub sections: FamilySections,
    /// The reliable links' own traffic, when `[network] reliable = true`. The algorithm's
    /// messages (first transmissions) are in `messages` as always; retransmissions and
    /// acknowledgements are only here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkReport>,
    /// Warnings about the run: it runs outside the algorithm's assumptions (a timeout shorter
    /// than the worst round trip, ...). Printed on stderr too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The traffic of the reliable link layer (`distsync_algorithms::link`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// Data frames sent: the algorithm's messages and their retransmissions.
    pub data_frames: u64,
    /// Acknowledgements sent (of new frames and of discarded ones).
    pub acks: u64,
    /// Data frames sent again because no acknowledgement came in time.
    pub retransmissions: u64,
    /// Frames received that had already been received (duplicates, retransmissions whose first
    /// copy had arrived, frames of a previous incarnation), discarded.
    pub duplicates_discarded: u64,
}

/// What a frame of the reliable link layer is, by its message kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A first transmission: the algorithm's own message.
    Data,
    /// A data frame sent again.
    Retransmit,
    /// An acknowledgement of a new frame.
    Ack,
    /// An acknowledgement of a discarded frame (a duplicate).
    ReAck,
}

impl Frame {
    /// The frame a message of kind `kind` travels in.
    pub(crate) fn of(kind: &str) -> Frame {
        use distsync_algorithms::link::{ACK, REACK, RETRANSMIT};
        match kind {
            RETRANSMIT => Frame::Retransmit,
            ACK => Frame::Ack,
            REACK => Frame::ReAck,
            _ => Frame::Data,
        }
    }
}

impl LinkReport {
    /// Counts a frame being sent; false when it is the algorithm's own message (a first
    /// transmission), which the caller counts as such.
    pub(crate) fn count(&mut self, frame: Frame) -> bool {
        match frame {
            Frame::Retransmit => {
                self.data_frames += 1;
                self.retransmissions += 1;
            }
            Frame::Ack => self.acks += 1,
            Frame::ReAck => {
                self.acks += 1;
                self.duplicates_discarded += 1;
            }
            Frame::Data => {
                self.data_frames += 1;
                return false;
            }
        }
        true
    }
}

/// Message counts. A broadcast counts N-1; nothing is sent to oneself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageStats {
    /// Messages sent.
    pub total: u64,
    /// Messages sent, by kind (the notes' names).
    pub by_kind: BTreeMap<String, u64>,
    /// Copies delivered (duplicates included).
    pub delivered: u64,
    /// Copies lost to loss, partitions or a crashed receiver.
    pub dropped: u64,
    /// Extra copies made by duplication.
    pub duplicated: u64,
}

/// One failed property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Which property: "mutual-exclusion", "deadlock", "starvation", ...
    pub property: String,
    /// When it was seen.
    pub time_ns: u64,
    /// What was seen.
    pub detail: String,
    /// The nodes involved (e.g. the two in the critical section), when the monitor knows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<u32>,
    /// The trace events involved, by their `seq`, when a trace is kept (e.g. the two `Enter`
    /// outputs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = Stats::of(&mut v);
        assert_eq!((s.count, s.p50, s.p99, s.max), (100, 50, 99, 100));
        assert_eq!(s.mean, 50.5);
        assert_eq!(Stats::of(&mut []), Stats::default());
        assert_eq!(Stats::of(&mut [7]).p99, 7);
    }
}
