//! Helpers the families share: writing a commented template, drawing stress times, and the
//! warnings of the families that detect crashes by timeouts.

use crate::engine::Control;
use crate::scenario::{Action, DelaySpec, EventSpec, Scenario};
use distsync_core::{format_duration, NodeId, Process};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt::Write;
use std::time::Duration;

/// The `Harness::accepts` of a family whose one request names a node (a `sync`, a
/// `multicast`, a `snapshot`): `node` is that node if `action` is the family's request, `None`
/// if not, refused as not applying to `family` (what the family does, in words); a node that
/// is down or not a member is refused too.
pub(crate) fn accept_at<P: Process>(
    action: &Action,
    node: Option<NodeId>,
    family: &str,
    ctl: &Control<'_, P>,
) -> Result<(), String> {
    let Some(node) = node else {
        return Err(format!("{action:?} does not apply to {family}"));
    };
    if !ctl.alive(node) {
        return Err(format!("node {node} is down or not a member"));
    }
    Ok(())
}

/// A line of text.
pub(crate) fn line(w: &mut String, text: &str) {
    w.push_str(text);
    w.push('\n');
}

/// An empty line.
pub(crate) fn blank(w: &mut String) {
    w.push('\n');
}

/// `key = value` with its comment aligned.
pub(crate) fn field(w: &mut String, key: &str, value: &str, comment: &str) {
    let _ = writeln!(w, "{:<30} # {comment}", format!("{key} = {value}"));
}

/// An optional field, commented out.
pub(crate) fn optional(w: &mut String, key: &str, value: &str, comment: &str) {
    let _ = writeln!(w, "{:<30} # {comment}", format!("# {key} = {value}"));
}

/// A duration as a TOML string, in whole seconds or milliseconds.
pub(crate) fn duration(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_nanos() == 0 {
        format!("\"{}s\"", d.as_secs())
    } else {
        format!("\"{}ms\"", d.as_millis())
    }
}

/// A duration drawn uniformly between `lo_us` and `hi_us` microseconds.
pub(crate) fn ms(rng: &mut Xoshiro256PlusPlus, lo_us: u64, hi_us: u64) -> Duration {
    Duration::from_micros(rng.gen_range(lo_us..=hi_us))
}

/// An event at `t` that does nothing yet.
pub(crate) fn at(t: Duration) -> EventSpec {
    EventSpec {
        at: t,
        ..EventSpec::default()
    }
}

/// The smallest one-way delay a spec can produce.
pub(crate) fn delay_floor(d: &DelaySpec) -> Duration {
    match *d {
        DelaySpec::Constant(d) => d,
        DelaySpec::Uniform(lo, _) => lo,
        DelaySpec::Exponential(_) => Duration::ZERO,
    }
}

/// How the delay bound is written in a warning.
pub(crate) fn bound_text(delay: &DelaySpec) -> String {
    match delay {
        DelaySpec::Exponential(mean) => format!(
            "{} (an exponential delay has no bound; 20 x its mean {} is taken)",
            format_duration(delay.bound()),
            format_duration(*mean)
        ),
        _ => format_duration(delay.bound()),
    }
}

/// What a warning of a timeout says happens.
pub(crate) const OUTSIDE: &str =
    "the algorithm then runs outside its assumptions (a live process may be taken for crashed)";

/// A given `answer_timeout` shorter than the worst round trip.
pub(crate) fn answer_timeout_warning(scenario: &Scenario) -> Option<String> {
    let delay = &scenario.network.delay;
    let round_trip = delay.bound() * 2;
    let t = scenario.election.answer_timeout?;
    (t < round_trip).then(|| {
        format!(
            "answer_timeout = {} is shorter than the worst round trip {} (twice the delay bound {}): {OUTSIDE}",
            format_duration(t),
            format_duration(round_trip),
            bound_text(delay)
        )
    })
}

/// Reliable links over a lossy network, for an algorithm that detects crashes by timeouts.
pub(crate) fn reliable_loss_warning(scenario: &Scenario) -> Option<String> {
    (scenario.network.reliable && scenario.network.loss > 0.0).then(|| {
        format!(
            "over reliable links a lost message arrives only when it is sent again, later than any timeout can allow for (loss = {}): {OUTSIDE}",
            scenario.network.loss
        )
    })
}
