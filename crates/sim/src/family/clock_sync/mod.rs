//! Physical clock synchronization: drifting clocks, synchronized every `sync_interval`.

pub(crate) mod harness;
pub(crate) mod report;
pub(crate) mod spec;

use crate::family::claims::Claims;
use crate::family::clock_sync::harness::ClockHarness;
use crate::family::common::{
    answer_timeout_warning, blank, delay_floor, duration, field, line, ms, optional,
    reliable_loss_warning,
};
use crate::family::plugin::{DefaultParts, Draw, Plugin};
use crate::scenario::ScenarioError;
use crate::scenario::{ClocksSpec, EventSpec, NumberSpec, Scenario, SignedSpec};
use crate::{Built, FamilyRun, SimError};
use distsync_algorithms::link::Reliable;
use distsync_algorithms::registry::ClockSyncVisitor;
use distsync_algorithms::registry::{self, Entry, Family};
use distsync_core::clock_sync::ClockSync;
use distsync_core::clock_sync::{DEFAULT_MAX_DRIFT_PPM, DEFAULT_SAMPLES, DEFAULT_THRESHOLD};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::time::Duration;

/// The clock-synchronization family's plug-in.
pub(crate) struct ClockSyncFamily;

impl Plugin for ClockSyncFamily {
    fn family(&self) -> Family {
        Family::ClockSync
    }

    fn example(&self) -> &'static str {
        "scenarios/cristian-time-server.toml"
    }

    fn title(&self) -> &'static str {
        "clock synchronization"
    }

    fn takes(&self, part: &str) -> bool {
        matches!(
            part,
            "sync_interval"
                | "server"
                | "samples"
                | "min_delay"
                | "max_drift_ppm"
                | "threshold"
                | "master_election"
                | "strata"
                | "event.sync"
        )
    }

    fn readers(&self, field: &str) -> Option<&'static str> {
        (field == "answer_timeout").then_some("clock synchronization")
    }

    fn default_scenario(&self, parts: &DefaultParts) -> String {
        let own = match parts.entry.name {
            "cristian" => "server = 0\nsamples = 4\n",
            // One stratum-1 server: node 0, the clock that keeps true time. (Two servers whose
            // clocks disagree would never form NTP's majority, so nobody would be corrected.)
            "ntp" => "strata = [[0]]\n",
            _ => "threshold = \"1s\"\n",
        };
        format!(
            "{}sync_interval = \"1s\"\n{own}\n{}\n\
             # Clocks start up to 50ms apart and drift up to 100 ppm; node 0 keeps true time.\n\
             [clocks]\noffset = {{ uniform = [\"-50ms\", \"50ms\"] }}\n\
             drift_ppm = {{ uniform = [-100, 100] }}\n\n\
             [[clocks.node]]\nid = 0\noffset = \"0s\"\ndrift_ppm = 0\n",
            parts.head(4, "3500ms"),
            parts.network("{ uniform = [\"1ms\", \"5ms\"] }"),
        )
    }

    fn template_fields(&self, w: &mut String, name: &str, _last: u32) {
        field(
            w,
            "sync_interval",
            "\"1s\"",
            "every process is told to synchronize this often (default 1s)",
        );
        field(
            w,
            "max_drift_ppm",
            &format!("{DEFAULT_MAX_DRIFT_PPM:?}"),
            "the drift bound error bounds allow for (default 100)",
        );
        match name {
            "cristian" => {
                field(w, "server", "0", "the time server (default: the lowest id)");
                field(
                    w,
                    "samples",
                    &DEFAULT_SAMPLES.to_string(),
                    "exchanges per synchronization (default 4)",
                );
                field(
                    w,
                    "min_delay",
                    "\"0ms\"",
                    "the smallest one-way delay it may assume (default 0)",
                );
            }
            "berkeley" => {
                field(
                    w,
                    "threshold",
                    &duration(DEFAULT_THRESHOLD),
                    "how far from the median a clock may be and still count (default 1s)",
                );
                field(
                    w,
                    "master_election",
                    "\"bully\"",
                    "the election algorithm that chooses the master (default \"bully\")",
                );
                field(
                    w,
                    "answer_timeout",
                    "\"100ms\"",
                    "wait for a reply (default 100ms)",
                );
            }
            "ntp" => {
                field(
                    w,
                    "strata",
                    "[[0]]",
                    "server ids by stratum, stratum 1 first (default: the lowest id alone)",
                );
                optional(
                    w,
                    "answer_timeout",
                    "\"100ms\"",
                    "wait for a reply (default 100ms)",
                );
            }
            _ => {}
        }
    }

    fn template_sections(&self, w: &mut String, _name: &str, _last: u32) {
        blank(w);
        line(
            w,
            "[clocks]                       # physical clocks; perfect clocks when absent",
        );
        field(
            w,
            "offset",
            "{ uniform = [\"-50ms\", \"50ms\"] }",
            "each clock's offset at the start (default 0s)",
        );
        field(
            w,
            "drift_ppm",
            "{ uniform = [-100, 100] }",
            "each clock's drift (default 0)",
        );
        field(
            w,
            "adjust",
            "\"step\"",
            "\"step\" jumps, \"slew\" runs faster or slower, never backwards (default \"step\")",
        );
        field(
            w,
            "slew_ppm",
            "500.0",
            "the fastest a slew corrects (default 500, as adjtime)",
        );
        line(
            w,
            "[[clocks.node]]                # one node's own values, overriding the ranges",
        );
        field(w, "id", "0", "");
        field(w, "offset", "\"0s\"", "");
        field(w, "drift_ppm", "0", "");
    }

    fn answer_timeout_floor(&self) -> Option<Duration> {
        // The reply timeout of the clients of a time server.
        Some(distsync_core::clock_sync::DEFAULT_REPLY_TIMEOUT)
    }

    fn warnings(&self, scenario: &Scenario) -> Vec<String> {
        // Clock synchronization needs no event: it synchronizes every `sync_interval`.
        answer_timeout_warning(scenario)
            .into_iter()
            .chain(reliable_loss_warning(scenario))
            .collect()
    }

    fn stress_nodes(&self) -> (u32, u32) {
        (3, 6)
    }

    fn claims(&self, entry: &Entry, base: Claims) -> Claims {
        match entry.name {
            // Berkeley elects a new master when its master crashes, and applies an Adjust
            // once.
            "berkeley" => Claims {
                crash: true,
                duplicate: true,
                ..base
            },
            _ => base,
        }
    }

    fn times_out(&self, entry: &Entry) -> bool {
        // Berkeley's election of its master.
        entry.name == "berkeley"
    }

    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        _events: &mut Vec<EventSpec>,
    ) {
        let drift = rng.gen_range(0.0..100.0);
        let offset = ms(rng, 1_000, 100_000).as_nanos() as i64;
        scenario.clocks = Some(ClocksSpec {
            offset: SignedSpec::Uniform(-offset, offset),
            drift_ppm: NumberSpec::Uniform(-drift, drift),
            adjust: if rng.gen_bool(0.5) {
                crate::clocks::Adjust::Step
            } else {
                crate::clocks::Adjust::Slew
            },
            slew_ppm: 500.0,
            node: Vec::new(),
        });
        scenario.clock_sync.sync_interval = Some(Duration::from_secs(1));
        scenario.until = Some(Duration::from_millis(4_500));
        match draw.entry.name {
            "cristian" => {
                scenario.clock_sync.min_delay = Some(delay_floor(draw.delay));
                scenario.clock_sync.max_drift_ppm = Some(drift.max(1.0));
            }
            "ntp" => scenario.clock_sync.max_drift_ppm = Some(drift.max(1.0)),
            "berkeley" => scenario.election.answer_timeout = Some(draw.timeout),
            _ => {}
        }
    }

    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError> {
        let scenario = &run.checked.scenario;
        let origin = run.origin.to_string();
        let master = scenario
            .clock_sync
            .master_election
            .clone()
            .unwrap_or_default();
        registry::visit_clock_sync(entry.name, &scenario.params(), run).unwrap_or_else(|| {
            // Only Berkeley's `master_election` can fail to name a type.
            Err(SimError::Scenario(ScenarioError {
                origin,
                field: "master_election".into(),
                message: format!(
                    "`{master}` is not an election algorithm (`distsync list` shows them)"
                ),
            }))
        })
    }
}

impl ClockSyncVisitor for FamilyRun<'_> {
    type Output = Result<Built, SimError>;
    fn visit<A: ClockSync + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output {
        if self.reliable() {
            let harness = ClockHarness::new::<Reliable<A>>(self.checked, self.origin)?;
            return self.run::<Reliable<A>, _>(entry, harness);
        }
        let harness = ClockHarness::new::<A>(self.checked, self.origin)?;
        self.run::<A, _>(entry, harness)
    }
}
