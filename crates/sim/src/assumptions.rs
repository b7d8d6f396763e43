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
//! - **Nothing to do**: a batch run in which nothing would ever happen is refused ([`idle`]):
//!   a mutex run where no process ever asks for the critical section, an election run with no
//!   scripted event and no failure detector, a multicast run with nothing to multicast. Where
//!   something runs but not the algorithm's subject, a warning says so: an election watched by
//!   heartbeats that no event disturbs, a bank whose snapshot is never taken. Clock
//!   synchronization needs no event (it synchronizes every `sync_interval`).

use crate::scenario::{Action, Checked, DelaySpec, Detect, Scenario, WorkloadKind};
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
    let scripted =
        |what: &dyn Fn(&crate::scenario::EventSpec) -> bool| scenario.events.iter().any(what);
    if family == Family::Snapshot && !scripted(&|e| e.snapshot.is_some()) {
        out.push(
            "no `snapshot` event: the bank's transfers run, but no snapshot is ever taken (add `[[event]]` with `snapshot = ID`)"
                .to_string(),
        );
    }
    if family == Family::Election
        && scenario.detect == Some(Detect::Timeout)
        && scenario.events.is_empty()
    {
        out.push(
            "no election starts: no `elect`, `crash`, `recover` or `partition` event, so the run shows only the coordinator's heartbeats"
                .to_string(),
        );
    }
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

/// Why a batch run of `checked` would do nothing at all: the field to add and what to add, or
/// `None` when something happens.
pub(crate) fn idle(checked: &Checked, family: Family) -> Option<(&'static str, String)> {
    let scenario = &checked.scenario;
    let any = |what: fn(&Action) -> bool| checked.actions.iter().any(|(_, _, a)| what(a));
    match family {
        Family::Mutex => {
            let workload = scenario.workload.as_ref().is_some_and(|w| {
                w.kind != WorkloadKind::None && w.requests != Some(0)
            });
            (!workload && !any(|a| matches!(a, Action::Request(_)))).then(|| {
                let why = match &scenario.workload {
                    None => "there is no `[workload]`",
                    Some(w) if w.kind == WorkloadKind::None => "the workload is `none`",
                    Some(_) => "the workload makes 0 requests",
                };
                (
                    "workload",
                    format!(
                        "nothing to do: {why} and no `request` event, so no process ever asks for the critical section; add a `[workload]` with `kind = \"saturated\"`, \"light\" or \"poisson\", or `request = ID` events"
                    ),
                )
            })
        }
        Family::Election => (checked.actions.is_empty() && scenario.detect != Some(Detect::Timeout))
            .then(|| {
                (
                    "event",
                    "nothing to do: no event and no failure detector, so no election ever starts; add an event like `[[event]] at = \"0ms\" elect = ID`, or `detect = \"timeout\"` with a `crash` of the coordinator".to_string(),
                )
            }),
        Family::Multicast => {
            let workload = scenario
                .multicast
                .as_ref()
                .is_some_and(|m| m.rate.is_some() && m.count != Some(0));
            (!workload && !any(|a| matches!(a, Action::Multicast(_)))).then(|| {
                (
                    "multicast",
                    "nothing to do: no `[multicast]` workload with a `rate` and no `multicast` event, so nothing is ever multicast; add `[multicast]` with `rate` (per second per process), or `multicast = ID` events".to_string(),
                )
            })
        }
        // Clock synchronization runs every `sync_interval`; a bank runs its transfers (a missing
        // snapshot is a warning).
        Family::ClockSync | Family::Snapshot => None,
    }
}
