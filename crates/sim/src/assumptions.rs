//! Timeouts and the network: defaults derived from the delay bound, and warnings when a run is
//! set up outside the algorithm's assumptions.
//!
//! Failure detection by timeout assumes the timeout exceeds the worst round trip (seed 001: "the
//! time-out interval a little larger than the round-trip message delay"). The worst round trip
//! is twice the network's delay bound
//! ([`DelaySpec::bound`](crate::scenario::DelaySpec::bound): the constant delay, the top of a
//! uniform range, or 20 times an exponential's mean, which has no bound).
//!
//! - **Defaults**: when a scenario names no `answer_timeout` (T), an election algorithm gets
//!   `max(10ms, 3 x bound)` and a clock-synchronization algorithm (whose reply timeout it is)
//!   `max(100ms, 3 x bound)`: the usual defaults, lengthened when the network is slower. The
//!   heartbeat timeout and T' follow from T as before.
//! - **Warnings** (on stderr and in the report's `warnings`): a given `answer_timeout` shorter
//!   than the worst round trip; a `heartbeat_timeout` shorter than a heartbeat period plus the
//!   delay bound; reliable links over a lossy network for an algorithm that detects crashes by
//!   timeouts (a retransmitted message can be late by any amount); links that are not FIFO
//!   for an algorithm that needs them (the registry's `needs_fifo`), naming the property at
//!   risk. The run still runs, outside
//!   the algorithm's assumptions: what it shows is what happens then (false suspicions,
//!   elections that never settle, storms).
//! - **Nothing to do**: a batch run in which nothing would ever happen is refused ([`idle`]):
//!   a mutex run where no process ever asks for the critical section, an election run with no
//!   scripted event and no failure detector, a multicast run with nothing to multicast. Where
//!   something runs but not the algorithm's subject, a warning says so: an election watched by
//!   heartbeats that no event disturbs, a bank whose snapshot is never taken. Clock
//!   synchronization needs no event (it synchronizes every `sync_interval`).
//!
//! What each family assumes is its plug-in's ([`crate::family`]); this module asks it.

use crate::family::{self, Outside};
use crate::scenario::{Checked, Scenario};
use distsync_algorithms::registry::{self, Family};

/// Fills in the timeouts the scenario leaves out, from the network's delay bound: for a family
/// that detects crashes by timeouts, three delay bounds when that is longer than the family's
/// floor.
pub(crate) fn derive_defaults(scenario: &mut Scenario, family: Family) {
    let Some(floor) = family::plugin(family).answer_timeout_floor() else {
        return;
    };
    let derived = scenario.network.delay.bound() * 3;
    if scenario.election.answer_timeout.is_none() && derived > floor {
        scenario.election.answer_timeout = Some(derived);
    }
}

/// Warnings about a scenario (with its defaults derived) that runs outside its algorithm's
/// assumptions: the family's, then links that are not FIFO for an algorithm that needs them.
pub(crate) fn warnings(scenario: &Scenario, family: Family) -> Vec<String> {
    let mut out = family::plugin(family).warnings(scenario);
    out.extend(fifo_warning(scenario));
    out
}

/// The documented assumptions a scenario (with its defaults derived) does not meet, each with
/// the properties the docs name at risk: the family's (an election without its failure
/// detector); links that are not FIFO for an algorithm that needs them, and faults the
/// algorithm does not claim to survive (its [`Claims`](crate::family::Claims)), where
/// anything may break; recoveries over reliable links for an algorithm that does not survive
/// them there. What the warnings say, stated so that a stress can tell a failure outside the
/// assumptions from a bug.
pub(crate) fn outside(scenario: &Scenario, family: Family) -> Vec<Outside> {
    let mut out = family::plugin(family).outside(scenario);
    let Some(entry) = registry::lookup(&scenario.algorithm) else {
        return out;
    };
    let claims = family::claims_of(entry);
    let raw = !scenario.network.reliable;
    let crash = scenario.events.iter().any(|e| e.crash.is_some());
    let recover = scenario.events.iter().any(|e| e.recover.is_some());
    let partition = scenario.events.iter().any(|e| e.partition.is_some());
    // What the algorithm does not claim at all: nothing it promises is promised there.
    for (unclaimed, assumption, doc) in [
        (
            entry.needs_fifo && !scenario.network.fifo && raw,
            "links that are not FIFO",
            "docs/faults.md",
        ),
        (
            raw && scenario.network.loss > 0.0 && !claims.loss,
            "lost messages",
            "docs/stress.md",
        ),
        (
            raw && scenario.network.duplicate > 0.0 && !claims.duplicate,
            "duplicated messages",
            "docs/stress.md",
        ),
        (crash && !claims.crash, "crashes", "docs/stress.md"),
        (
            partition && !claims.partition,
            "partitions",
            "docs/stress.md",
        ),
    ] {
        if unclaimed {
            out.push(Outside {
                assumption: assumption.to_string(),
                doc,
                at_risk: Vec::new(),
            });
        }
    }
    if scenario.network.reliable && recover && !claims.recoveries_over_reliable_links {
        out.push(Outside {
            assumption: "recoveries over reliable links".to_string(),
            doc: "docs/election.md",
            // A lower leader announced first; with the failure detector its heartbeats meet
            // the right one's and settle them, without it they can stay.
            at_risk: if scenario.election.detect == Some(crate::scenario::Detect::Timeout) {
                vec!["one-leader"]
            } else {
                vec!["one-leader", "agreement"]
            },
        });
    }
    out
}

/// An algorithm that needs FIFO links (the registry's `needs_fifo`) run over links that may
/// reorder (`fifo = false`, and not `reliable = true`, whose links are FIFO): the property at
/// risk, named. A warning, not a refusal: the lessons show these runs break.
fn fifo_warning(scenario: &Scenario) -> Option<String> {
    let entry = registry::lookup(&scenario.algorithm)?;
    if !entry.needs_fifo || scenario.network.fifo || scenario.network.reliable {
        return None;
    }
    Some(format!(
        "`{}` assumes FIFO links and `[network] fifo = false` lets messages overtake each other: {} is at risk ({})",
        entry.name,
        fifo_property(entry.name).0,
        fifo_property(entry.name).1
    ))
}

/// What an algorithm that needs FIFO links loses without them: the property (as its monitor
/// names it) and why.
pub(crate) fn fifo_property(name: &str) -> (&'static str, &'static str) {
    match name {
        "lamport-mutex" => (
            "mutual-exclusion",
            "a process enters when its request heads its queue and it has heard a later message from everyone; a REQUEST overtaken by a later REPLY is queued too late",
        ),
        "ring-active-list" => (
            "one-leader",
            "each process decides when its own elect message comes back, which needs the others' to have arrived before it",
        ),
        "total-order-multicast" => (
            "total order",
            "a message is delivered when every process has acknowledged a later timestamp; an overtaken message arrives after that",
        ),
        "chandy-lamport" => (
            "a consistent snapshot",
            "a message that overtakes the marker is recorded in neither the receiver's state nor the channel, or in both",
        ),
        _ => ("what the algorithm promises", "it relies on the order of its messages"),
    }
}

/// Why a batch run of `checked` would do nothing at all: the field to add and what to add, or
/// `None` when something happens.
pub(crate) fn idle(checked: &Checked, family: Family) -> Option<(&'static str, String)> {
    family::plugin(family).idle(checked)
}
