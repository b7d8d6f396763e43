//! Timeouts and the network: defaults derived from the delay bound, and warnings when a run is
//! set up outside the algorithm's assumptions.
//!
//! Failure detection by timeout assumes the timeout exceeds the worst round trip (seed 001: "the
//! time-out interval a little larger than the round-trip message delay"). The worst round trip
//! is twice the network's delay bound ([`DelaySpec::bound`]: the constant delay, the top of a
//! uniform range, or 20 times an exponential's mean, which has no bound).
//!
//! - **Defaults**: when a scenario names no `answer_timeout` (T), an election algorithm gets
//!   `max(10ms, 3 x bound)` and a clock-synchronization algorithm (whose reply timeout it is)
//!   `max(100ms, 3 x bound)`: the usual defaults, lengthened when the network is slower. The
//!   heartbeat timeout and T' follow from T as before.
//! - **Warnings** (on stderr and in the report's `warnings`): a given `answer_timeout` shorter
//!   than the worst round trip; a `heartbeat_timeout` shorter than a heartbeat period plus the
//!   delay bound; reliable links over a lossy network for an algorithm that detects crashes by
//!   timeouts (a retransmitted message can be late by any amount). The run still runs, outside
//!   the algorithm's assumptions: what it shows is what happens then (false suspicions,
//!   elections that never settle, storms).

use crate::scenario::{DelaySpec, Scenario};
use distsync_algorithms::registry::Family;
use distsync_core::format_duration;

/// Fills in the timeouts the scenario leaves out, from the network's delay bound.
pub(crate) fn derive_defaults(scenario: &mut Scenario, family: Family) {
    let floor = match family {
        Family::Election => distsync_core::election::DEFAULT_ANSWER_TIMEOUT,
        Family::ClockSync => distsync_core::clock_sync::DEFAULT_REPLY_TIMEOUT,
        _ => return,
    };
    let derived = scenario.network.delay.bound() * 3;
    if scenario.answer_timeout.is_none() && derived > floor {
        scenario.answer_timeout = Some(derived);
    }
}

fn bound_text(delay: &DelaySpec) -> String {
    match delay {
        DelaySpec::Exponential(mean) => format!(
            "{} (an exponential delay has no bound; 20 x its mean {} is taken)",
            format_duration(delay.bound()),
            format_duration(*mean)
        ),
        _ => format_duration(delay.bound()),
    }
}

/// Warnings about a scenario (with its defaults derived) that runs outside its algorithm's
/// assumptions.
pub(crate) fn warnings(scenario: &Scenario, family: Family) -> Vec<String> {
    let mut out = Vec::new();
    if !matches!(family, Family::Election | Family::ClockSync) {
        return out;
    }
    let delay = &scenario.network.delay;
    let round_trip = delay.bound() * 2;
    let outside =
        "the algorithm then runs outside its assumptions (a live process may be taken for crashed)";
    if let Some(t) = scenario.answer_timeout {
        if t < round_trip {
            out.push(format!(
                "answer_timeout = {} is shorter than the worst round trip {} (twice the delay bound {}): {outside}",
                format_duration(t),
                format_duration(round_trip),
                bound_text(delay)
            ));
        }
    }
    if family == Family::Election {
        let params = scenario.params();
        let heartbeat = distsync_core::election::heartbeat(&params);
        if let Some(h) = scenario.heartbeat_timeout {
            let need = heartbeat + delay.bound();
            if h < need {
                out.push(format!(
                    "heartbeat_timeout = {} is shorter than a heartbeat period plus the delay bound ({} + {} = {}): {outside}",
                    format_duration(h),
                    format_duration(heartbeat),
                    bound_text(delay),
                    format_duration(need)
                ));
            }
        }
    }
    if scenario.network.reliable && scenario.network.loss > 0.0 {
        out.push(format!(
            "over reliable links a lost message arrives only when it is sent again, later than any timeout can allow for (loss = {}): {outside}",
            scenario.network.loss
        ));
    }
    out
}
