//! The report's `election` section.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
