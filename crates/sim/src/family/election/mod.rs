//! Leader election: scripted elections and crashes, or a failure detector that elects when the
//! coordinator's heartbeats stop.

pub mod compare;
pub(crate) mod harness;
pub(crate) mod report;
pub(crate) mod spec;

use crate::family::claims::{Claims, Outside};
use crate::family::common::{
    answer_timeout_warning, at, blank, bound_text, duration, field, line, ms, optional,
    reliable_loss_warning, OUTSIDE,
};
use crate::family::election::harness::{ElectionHarness, OVERHEAD_KINDS};
use crate::family::plugin::{DefaultParts, Draw, Plugin};
use crate::scenario::{Checked, Detect, EventSpec, Scenario};
use crate::{Built, FamilyRun, SimError, Steppable};
use distsync_algorithms::election::Detector;
use distsync_algorithms::link::Reliable;
use distsync_algorithms::registry::ElectionVisitor;
use distsync_algorithms::registry::{self, Entry, Family};
use distsync_core::election::Election;
use distsync_core::election::{DEFAULT_ANSWER_TIMEOUT, DEFAULT_HEARTBEAT};
use distsync_core::{format_duration, NodeId};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::time::Duration;

/// The leader-election family's plug-in.
pub(crate) struct ElectionFamily;

impl Plugin for ElectionFamily {
    fn family(&self) -> Family {
        Family::Election
    }

    fn example(&self) -> &'static str {
        "scenarios/bully-eight-processes.toml"
    }

    fn title(&self) -> &'static str {
        "leader election"
    }

    fn takes(&self, part: &str) -> bool {
        matches!(part, "detect" | "event.elect")
    }

    fn readers(&self, field: &str) -> Option<&'static str> {
        match field {
            "coordinator" => {
                Some("leader election (the coordinator every process knows at the start)")
            }
            "answer_timeout" | "coordinator_timeout" => Some("leader election"),
            "heartbeat" | "heartbeat_timeout" => {
                Some("leader election with `detect = \"timeout\"`")
            }
            _ => None,
        }
    }

    fn default_scenario(&self, parts: &DefaultParts) -> String {
        format!(
            "{}answer_timeout = \"20ms\"\ncoordinator_timeout = \"200ms\"\n\n{}\n\
             # The coordinator (the highest id) crashes; node 1 notices and starts an election.\n\
             [[event]]\nat = \"10ms\"\ncrash = 4\n\n[[event]]\nat = \"20ms\"\nelect = 1\n",
            parts.head(5, "10s"),
            parts.network("{ uniform = [\"1ms\", \"5ms\"] }"),
        )
    }

    fn template_fields(&self, w: &mut String, name: &str, _last: u32) {
        let t = DEFAULT_ANSWER_TIMEOUT;
        optional(
            w,
            "coordinator",
            "4",
            "the coordinator every process knows at the start (default: the highest id)",
        );
        field(
            w,
            "detect",
            "\"none\"",
            "\"timeout\": heartbeats from the coordinator, an election when they stop (default \"none\")",
        );
        field(
            w,
            "heartbeat",
            &duration(DEFAULT_HEARTBEAT),
            "with detect = \"timeout\": the heartbeat period (default 10ms)",
        );
        optional(
            w,
            "heartbeat_timeout",
            "\"40ms\"",
            "silence before suspecting the coordinator (default 3 heartbeats + T)",
        );
        field(
            w,
            "answer_timeout",
            &duration(t),
            "T: wait for an answer before taking the silent process for crashed (default 10ms)",
        );
        let t_prime = if name == "bully" {
            "3T"
        } else {
            "4nT on a ring"
        };
        optional(
            w,
            "coordinator_timeout",
            "\"200ms\"",
            &format!(
                "T': wait for the election's result before starting again (default {t_prime})"
            ),
        );
    }

    fn template_sections(&self, w: &mut String, name: &str, last: u32) {
        blank(w);
        line(
            w,
            "# Scripted events, sorted by time: elect, crash, recover, partition, heal.",
        );
        // Crash-tolerant algorithms lose their coordinator first; the others elect on a whole
        // ring.
        if matches!(name, "bully" | "ring") {
            line(w, "[[event]]");
            field(w, "at", "\"0ms\"", "when");
            field(w, "crash", &last.to_string(), "the coordinator crashes");
        }
        line(w, "[[event]]");
        field(w, "at", "\"1ms\"", "when");
        field(
            w,
            "elect",
            "0",
            "process 0 starts an election (\"all\": every process does)",
        );
    }

    fn answer_timeout_floor(&self) -> Option<Duration> {
        Some(DEFAULT_ANSWER_TIMEOUT)
    }

    fn warnings(&self, scenario: &Scenario) -> Vec<String> {
        let mut out = Vec::new();
        if scenario.election.detect == Some(Detect::Timeout) && scenario.events.is_empty() {
            out.push(
                "no election starts: no `elect`, `crash`, `recover` or `partition` event, so the run shows only the coordinator's heartbeats"
                    .to_string(),
            );
        }
        out.extend(answer_timeout_warning(scenario));
        let delay = &scenario.network.delay;
        let heartbeat = distsync_core::election::heartbeat(&scenario.params());
        if let Some(h) = scenario.election.heartbeat_timeout {
            let need = heartbeat + delay.bound();
            if h < need {
                out.push(format!(
                    "heartbeat_timeout = {} is shorter than a heartbeat period plus the delay bound ({} + {} = {}): {OUTSIDE}",
                    format_duration(h),
                    format_duration(heartbeat),
                    bound_text(delay),
                    format_duration(need)
                ));
            }
        }
        out.extend(reliable_loss_warning(scenario));
        out.extend(no_detector_warning(scenario));
        out
    }

    fn outside(&self, scenario: &Scenario) -> Vec<Outside> {
        no_detector_outside(scenario).into_iter().collect()
    }

    fn stress_assumptions(&self, rng: &mut Xoshiro256PlusPlus, scenario: &mut Scenario) {
        if rng.gen_bool(0.5) {
            scenario.election.detect = Some(Detect::None);
            scenario.election.heartbeat = None;
        }
    }

    fn drawn(&self, scenario: &Scenario) -> Option<&'static str> {
        Some(if scenario.election.detect == Some(Detect::Timeout) {
            "detector on"
        } else {
            "detector off"
        })
    }

    fn idle(&self, checked: &Checked) -> Option<(&'static str, String)> {
        (checked.actions.is_empty() && checked.scenario.election.detect != Some(Detect::Timeout)).then(|| {
            (
                "event",
                "nothing to do: no event and no failure detector, so no election ever starts; add an event like `[[event]] at = \"0ms\" elect = ID`, or `detect = \"timeout\"` with a `crash` of the coordinator".to_string(),
            )
        })
    }

    fn stress_nodes(&self) -> (u32, u32) {
        (3, 7)
    }

    fn claims(&self, _entry: &Entry, base: Claims) -> Claims {
        // The election algorithms skip crashed processes (the ring link, the bully's timeouts)
        // and, with the failure detector, elect again when the coordinator crashes.
        Claims {
            crash: true,
            recoveries_over_reliable_links: false,
            ..base
        }
    }

    fn times_out(&self, _entry: &Entry) -> bool {
        true
    }

    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        events: &mut Vec<EventSpec>,
    ) {
        let mut ids: Vec<u32> = (0..draw.n).collect();
        ids.shuffle(rng);
        scenario.nodes = None;
        scenario.ids = Some(ids.iter().map(|&i| NodeId(i)).collect());
        scenario.election.detect = Some(Detect::Timeout);
        scenario.election.answer_timeout = Some(draw.timeout);
        scenario.election.heartbeat = Some(draw.timeout);
        let starters = rng.gen_range(1..=draw.n);
        for &id in ids.choose_multiple(rng, starters as usize) {
            let mut e = at(ms(rng, 0, 2_000));
            e.elect = Some(NodeId(id).into());
            events.push(e);
        }
    }

    fn stress_settle(&self, draw: &Draw, scenario: &mut Scenario, events: &[EventSpec]) {
        // Long enough after the last scripted event for every election to settle, even one
        // that waits out T' (4n T by default in the ring algorithms) twice.
        let last = events.iter().map(|e| e.at).max().unwrap_or_default();
        scenario.until = Some(last + Duration::from_secs(2) + draw.timeout * (8 * draw.n + 40));
    }

    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError> {
        registry::visit_election(entry.name, run).expect("the registry lists it as election")
    }
}

impl ElectionVisitor for FamilyRun<'_> {
    type Output = Result<Built, SimError>;
    fn visit<A: Election + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output {
        match self.checked.scenario.election.detect {
            Some(Detect::Timeout) => elect::<Detector<A>>(self, entry),
            Some(Detect::None) | None => elect::<A>(self, entry),
        }
    }
}

/// The run of `P`, over reliable links when the scenario asks; the election's overhead
/// messages (heartbeats) are left out of causal chains.
fn elect<P: Election + Steppable>(
    run: FamilyRun,
    entry: &'static Entry,
) -> Result<Built, SimError> {
    if run.reliable() {
        let harness = ElectionHarness::new::<Reliable<P>>(run.checked, run.origin)?;
        return run.run_excluding::<Reliable<P>, _>(entry, harness, &OVERHEAD_KINDS);
    }
    let harness = ElectionHarness::new::<P>(run.checked, run.origin)?;
    run.run_excluding::<P, _>(entry, harness, &OVERHEAD_KINDS)
}

/// Crashes (and recoveries) without the failure detector, for an algorithm whose row of
/// docs/election.md's table says it does not survive them that way: the properties at risk,
/// as the table states them (each backed by a test in `crates/sim/tests/election_assumptions.rs`).
pub(crate) fn no_detector_warning(scenario: &Scenario) -> Option<String> {
    let risks = no_detector_risks(scenario);
    if risks.is_empty() {
        return None;
    }
    let recover = scenario.events.iter().any(|e| e.recover.is_some());
    Some(format!(
        "`{}` with {} and no failure detector (`detect = \"none\"`) is outside its assumptions (docs/election.md): {} at risk",
        scenario.algorithm,
        if recover { "crashes and recoveries" } else { "crashes" },
        risks
            .iter()
            .map(|(property, why)| format!("{property} ({why})"))
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// What [`no_detector_warning`] warns about, as the assumption broken and the monitors' names
/// of the properties at risk.
fn no_detector_outside(scenario: &Scenario) -> Option<Outside> {
    let risks = no_detector_risks(scenario);
    if risks.is_empty() {
        return None;
    }
    let recover = scenario.events.iter().any(|e| e.recover.is_some());
    Some(Outside {
        assumption: if recover {
            "no failure detector with a recovery".to_string()
        } else {
            "no failure detector with a crash after the first election".to_string()
        },
        doc: "docs/election.md",
        at_risk: risks.iter().map(|(property, _)| *property).collect(),
    })
}

/// The properties (as the monitors name them) that docs/election.md's table says the
/// scenario's algorithm does not keep under its crashes without the detector, each with why.
fn no_detector_risks(scenario: &Scenario) -> Vec<(&'static str, &'static str)> {
    if scenario.election.detect == Some(Detect::Timeout) {
        return Vec::new();
    }
    let crashes = scenario.events.iter().filter(|e| e.crash.is_some()).count();
    let crash = crashes > 0;
    let recover = scenario.events.iter().any(|e| e.recover.is_some());
    if !crash {
        return Vec::new();
    }
    // A crash after the first election starts (an `elect` or a recovery) can hit a process
    // that has just won or is taking part; crashes before it are what every election skips.
    let first_election = scenario
        .events
        .iter()
        .filter(|e| e.elect.is_some() || e.recover.is_some())
        .map(|e| e.at)
        .min();
    let late_crash = first_election.is_some_and(|first| {
        scenario
            .events
            .iter()
            .any(|e| e.crash.is_some() && e.at > first)
    });
    const VALIDITY: (&str, &str) = (
        "validity",
        "a leader that crashes after its announcement stays everyone's leader: only the detector's heartbeats tell",
    );
    match scenario.algorithm.as_str() {
        // One crash and one recovery hold (the epochs; checker: proved at 3 processes); with
        // several, stress still finds a disagreement (seed 64, run 1403 of 2,000).
        "chang-roberts" if recover && crashes >= 2 => {
            let mut risks = vec![(
                "agreement",
                "with several crashes and recoveries two results can survive, as `distsync stress` finds",
            )];
            risks.extend(late_crash.then_some(VALIDITY));
            risks
        }
        "ring-active-list" if late_crash => vec![
            (
                "one-leader",
                "a second announcement after one crash, in an order of equal-deadline timers the checker finds",
            ),
            VALIDITY,
        ],
        _ if late_crash => vec![VALIDITY],
        _ => vec![],
    }
}
