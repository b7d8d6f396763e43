//! The runaway guard: a storm monitor and hard caps that end a run which would otherwise grow
//! without bound.
//!
//! - **storm**: the algorithm's own messages in flight (acknowledgements and heartbeats aside)
//!   have grown to at least [`STORM_FLOOR_PER_NODE2`] x N² (and at least [`STORM_FLOOR`]) and to
//!   [`STORM_GROWTH`] times what was in flight at the last progress (the last output of any
//!   process: an entry, a leader, a delivery, an adjustment). Correct algorithms keep O(N²)
//!   messages in flight at most; a storm is traffic that feeds itself (false suspicions that
//!   start elections that cause more false suspicions, orphaned messages that multiply). The run
//!   stops with a `storm` violation.
//! - **max_pending**: more events pending in the simulator's queue than this ends the run with
//!   a `runaway` violation instead of exhausting memory. The default is sized from the scenario
//!   ([`default_max_pending`]): at least [`DEFAULT_MAX_PENDING`] (a few hundred megabytes), and
//!   [`PENDING_PER_PROCESS`] per process plus the scripted events, so that a large membership
//!   runs without a hand-set limit; and room for every process to send to every process at
//!   once, up to [`BROADCAST_PENDING_CAP`], whatever started them: one start can set every
//!   process broadcasting (the bully's election started by the lowest process makes every
//!   higher one start its own: N²/2 elections in flight at once).
//! - **max_events**: more events processed than this ends the run with a `runaway` violation
//!   (no cap by default; `distsync stress` sets one so that every run ends quickly).
//!
//! A run stopped by the guard ends with `ended_by = "limit"`. The scenario's `[limits]` table
//! sets them:
//!
//! ```toml
//! [limits]
//! max_events = 2000000     # stop after this many events (default: no cap)
//! max_pending = 4000000    # stop when this many events are pending (default: sized from the scenario)
//! storm = true             # the storm monitor (default on)
//! ```

use serde::{Deserialize, Serialize};

/// The property of a run stopped by `max_pending` or `max_events` (a `storm` is a finding
/// about the run's traffic; a cap only says the run had not ended within it).
pub const CAP_STOP: &str = "runaway";
/// The end-of-run checks a run stopped by a cap fails by being stopped (an election still
/// running, multicasts not yet delivered, requests not yet served, snapshots not yet complete):
/// beside a [`CAP_STOP`] they say nothing about the algorithm.
pub const CUT_SHORT: [&str; 4] = [
    "termination",
    "undelivered",
    "starvation",
    "snapshot-incomplete",
];
/// The default cap on pending events, at the least (a small scenario's).
pub const DEFAULT_MAX_PENDING: u64 = 4_000_000;
/// Pending events allowed per process by default: a message in flight and a few timers each,
/// cancelled ones included (a cancelled timer stays listed until its time). Chang-Roberts and
/// Peterson on a ring of 20,000 where every process starts run within half of it
/// (`tests/runaway.rs`), and at a million within the 10 per process their scenario files set.
pub const PENDING_PER_PROCESS: u64 = 12;
/// The default also allows 2 N pending events per process (a broadcast of N - 1 messages and
/// its answers, as the bully algorithm's election or Ricart-Agrawala's request sends, from
/// every process at once), up to this many in all (about 2.3 GB of events).
pub const BROADCAST_PENDING_CAP: u64 = 32_000_000;

/// The default `max_pending` of a scenario with `nodes` processes and `scripted` scripted
/// events: the largest of [`DEFAULT_MAX_PENDING`], [`PENDING_PER_PROCESS`] per process plus the
/// scripted events, and 2 N² (every process broadcasting at once, however few started: one
/// bully election started by the lowest process sets every higher one broadcasting) up to
/// [`BROADCAST_PENDING_CAP`].
pub fn default_max_pending(nodes: usize, scripted: usize) -> u64 {
    let n = nodes as u64;
    let per_process = n
        .saturating_mul(PENDING_PER_PROCESS)
        .saturating_add(scripted as u64);
    let broadcasts = n
        .saturating_mul(n)
        .saturating_mul(2)
        .min(BROADCAST_PENDING_CAP);
    DEFAULT_MAX_PENDING.max(per_process).max(broadcasts)
}
/// A storm needs at least this many of the algorithm's messages in flight, times N².
pub const STORM_FLOOR_PER_NODE2: u64 = 64;
/// A storm needs at least this many of the algorithm's messages in flight.
pub const STORM_FLOOR: u64 = 4096;
/// A storm needs this many times the messages in flight at the last progress.
pub const STORM_GROWTH: u64 = 8;
/// The guard looks every this many events (a power of two).
const EVERY: u64 = 1024;

/// The scenario's `[limits]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Stop the run after this many events (no cap when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u64>,
    /// Stop the run when this many events are pending (default [`default_max_pending`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending: Option<u64>,
    /// The storm monitor (default on).
    #[serde(default = "yes")]
    pub storm: bool,
}

fn yes() -> bool {
    true
}

impl Default for LimitsSpec {
    fn default() -> Self {
        LimitsSpec {
            max_events: None,
            max_pending: None,
            storm: true,
        }
    }
}

/// What the guard watches, read from the engine every few events.
pub(crate) struct Sample {
    pub events: u64,
    pub pending: u64,
    pub in_flight_own: u64,
    pub outputs: u64,
    pub messages: u64,
}

/// The guard's state during one run.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    max_events: Option<u64>,
    max_pending: u64,
    /// Whether `max_pending` is the default (sized from the scenario) or the scenario's own.
    default_pending: bool,
    storm: bool,
    storm_floor: u64,
    /// Outputs seen at the last look, and the algorithm's messages in flight then.
    outputs: u64,
    in_flight_at_progress: u64,
    messages_at_progress: u64,
}

impl Guard {
    /// The guard of a run of `nodes` processes with `scripted` scripted events (which size the
    /// default `max_pending`), with the scenario's `[limits]`.
    pub(crate) fn new(spec: Option<&LimitsSpec>, nodes: usize, scripted: usize) -> Guard {
        let spec = spec.cloned().unwrap_or_default();
        let n2 = (nodes as u64).saturating_mul(nodes as u64);
        Guard {
            max_events: spec.max_events,
            max_pending: spec
                .max_pending
                .unwrap_or_else(|| default_max_pending(nodes, scripted)),
            default_pending: spec.max_pending.is_none(),
            storm: spec.storm,
            storm_floor: n2.saturating_mul(STORM_FLOOR_PER_NODE2).max(STORM_FLOOR),
            outputs: 0,
            in_flight_at_progress: 0,
            messages_at_progress: 0,
        }
    }

    /// Whether the engine should take a [`Sample`] after `events` events.
    #[inline]
    pub(crate) fn due(&self, events: u64) -> bool {
        events & (EVERY - 1) == 0 || self.max_events.is_some_and(|m| events >= m)
    }

    /// `Some((property, detail))` when the run must stop now.
    pub(crate) fn check(&mut self, s: &Sample) -> Option<(&'static str, String)> {
        if let Some(max) = self.max_events {
            if s.events >= max {
                return Some((
                    "runaway",
                    format!(
                        "the run was stopped after {} events (`[limits] max_events`): it had \
                         not ended by itself; {} events were pending",
                        s.events, s.pending
                    ),
                ));
            }
        }
        if s.pending > self.max_pending {
            return Some((
                "runaway",
                format!(
                    "{} events were pending, more than `[limits] max_pending` = {}{}: the run \
                     was stopped before it exhausted memory ({} messages sent so far); the \
                     runaway guard stopped it, not a failure of the algorithm (raise \
                     `[limits] max_pending` if the run is meant to hold that many)",
                    s.pending,
                    self.max_pending,
                    if self.default_pending {
                        " (the default for this scenario's size)"
                    } else {
                        ""
                    },
                    s.messages
                ),
            ));
        }
        if s.outputs != self.outputs {
            self.outputs = s.outputs;
            self.in_flight_at_progress = s.in_flight_own;
            self.messages_at_progress = s.messages;
            return None;
        }
        if self.storm
            && s.in_flight_own >= self.storm_floor
            && s.in_flight_own >= self.in_flight_at_progress.saturating_mul(STORM_GROWTH)
        {
            return Some((
                "storm",
                format!(
                    "a message storm: {} of the algorithm's messages in flight, up from {} at \
                     the last progress (the last output of any process), with {} messages sent \
                     since and no output; traffic grows without anything being achieved",
                    s.in_flight_own,
                    self.in_flight_at_progress,
                    s.messages - self.messages_at_progress
                ),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(events: u64, pending: u64, in_flight_own: u64, outputs: u64) -> Sample {
        Sample {
            events,
            pending,
            in_flight_own,
            outputs,
            messages: events,
        }
    }

    #[test]
    fn growth_without_output_is_a_storm_and_output_resets_it() {
        let mut g = Guard::new(None, 4, 0);
        assert_eq!(g.storm_floor, 4096);
        assert!(g.check(&sample(1024, 10, 10, 1)).is_none());
        assert!(g.check(&sample(2048, 5000, 4095, 1)).is_none());
        let (p, d) = g.check(&sample(3072, 5000, 4096, 1)).unwrap();
        assert_eq!(p, "storm");
        assert!(d.contains("4096"), "{d}");
        // An output (progress) takes the level in flight as the new base.
        let mut g = Guard::new(None, 4, 0);
        assert!(g.check(&sample(1024, 5000, 5000, 3)).is_none());
        assert!(g.check(&sample(2048, 5000, 39_999, 3)).is_none());
        assert!(g.check(&sample(3072, 50_000, 40_000, 3)).is_some());
    }

    #[test]
    fn caps_stop_the_run_and_storm_can_be_off() {
        let spec = LimitsSpec {
            max_events: Some(5000),
            max_pending: Some(100),
            storm: false,
        };
        let mut g = Guard::new(Some(&spec), 2, 0);
        assert!(g.due(5000) && !g.due(4999));
        assert_eq!(g.check(&sample(1024, 101, 0, 0)).unwrap().0, "runaway");
        assert!(g.check(&sample(2048, 100, 1_000_000, 0)).is_none());
        let (p, d) = g.check(&sample(5000, 0, 0, 0)).unwrap();
        assert_eq!(p, "runaway");
        assert!(d.contains("max_events"), "{d}");
    }

    #[test]
    fn the_default_max_pending_grows_with_the_scenario() {
        // A small scenario keeps the floor.
        assert_eq!(default_max_pending(5, 3), DEFAULT_MAX_PENDING);
        assert_eq!(default_max_pending(1414, 1), DEFAULT_MAX_PENDING);
        // Room for every process broadcasting at once (2 N per process), whatever started
        // them, up to the cap: the bully's worst case at 4,096 holds 8.4 million elections.
        assert_eq!(default_max_pending(3000, 0), 18_000_000);
        assert_eq!(default_max_pending(3000, 3000), 18_000_000);
        assert!(default_max_pending(4096, 2) > 4096 * 4095);
        assert_eq!(default_max_pending(100_000, 0), BROADCAST_PENDING_CAP);
        // A million processes, each with a scripted election: the cap, and beyond it per
        // process, plus the script.
        assert_eq!(
            default_max_pending(1_000_000, 1_000_000),
            BROADCAST_PENDING_CAP
        );
        assert_eq!(
            default_max_pending(10_000_000, 10_000_000),
            10_000_000 * PENDING_PER_PROCESS + 10_000_000
        );
        assert_eq!(
            default_max_pending(10_000_000, 0),
            10_000_000 * PENDING_PER_PROCESS
        );
        // The scenario's own limit wins, and the message says which it was.
        let spec = LimitsSpec {
            max_pending: Some(10),
            ..LimitsSpec::default()
        };
        let mut g = Guard::new(Some(&spec), 1_000_000, 0);
        let (_, d) = g.check(&sample(1024, 11, 0, 0)).unwrap();
        assert!(d.contains("`[limits] max_pending` = 10:"), "{d}");
        let mut g = Guard::new(None, 100_000, 0);
        assert!(g.check(&sample(1024, 32_000_000, 0, 0)).is_none());
        let (p, d) = g.check(&sample(2048, 32_000_001, 0, 0)).unwrap();
        assert_eq!(p, CAP_STOP);
        assert!(
            d.contains("`[limits] max_pending` = 32000000 (the default for this scenario's size)"),
            "{d}"
        );
        assert!(d.contains("not a failure of the algorithm"), "{d}");
    }
}
