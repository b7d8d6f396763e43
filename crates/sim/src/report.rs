//! The JSON report of a run (DESIGN.md's field names are a public contract).

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
    /// Mutual-exclusion figures, for mutex algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutex: Option<MutexReport>,
    /// Election figures, for election algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election: Option<ElectionReport>,
    /// Clock-synchronization figures, for clock-synchronization algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::family::clock_sync::report::ClockReport>,
    /// Multicast figures, for multicast algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<crate::family::multicast::report::MulticastReport>,
    /// Snapshot figures, for snapshot algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<crate::family::snapshot::report::SnapshotReport>,
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

/// Figures for leader election (see crates/sim/src/family/election/harness.rs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElectionReport {
    /// The leader the live processes believe in at the end: the one all of them name when they
    /// agree, else the one most of them name (null when none names any).
    pub leader: Option<u32>,
    /// Whether every live process names the same leader at the end.
    pub agreed: bool,
    /// The leader each live process names at the end, by process id (null: it knows none).
    pub known_by: BTreeMap<String, Option<u32>>,
    /// The election algorithm's own messages: acknowledgements of the ring link ("Ack") and the
    /// failure detector's heartbeats ("Heartbeat") are left out (they are in the top-level
    /// `messages`).
    pub messages: ElectionMessages,
    /// The first election that announced a leader, from its trigger (`elect`, `crash` or
    /// `recover` event) to its last `Leader` output; null when none did.
    pub completion_time_ns: Option<u64>,
    /// The longest causal chain of the algorithm's messages (acknowledgements and heartbeats
    /// neither count nor carry causality).
    pub longest_chain: u64,
    /// For algorithms that work in rounds (Peterson's): the most rounds any live process
    /// completed as an active process in the last election, i.e. the rounds it needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// How many elections the harness saw (each begins with a trigger while every live process
    /// agreed on a leader), and how many of those were disturbed by a further trigger.
    pub elections: u64,
    /// Elections disturbed by a crash, recovery or `elect` event before they settled; the
    /// one-leader monitor does not judge them.
    pub disturbed: u64,
}

/// Message counts of an election.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElectionMessages {
    /// All of them.
    pub total: u64,
    /// By kind, named as in the notes (Election, Ok, Coordinator, Elected, Elect).
    pub by_kind: BTreeMap<String, u64>,
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
