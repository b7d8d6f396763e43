//! Distributed mutual exclusion: a workload of requests for the critical section.

pub mod compare;
pub(crate) mod harness;
pub(crate) mod report;
pub(crate) mod spec;

use crate::family::claims::Claims;
use crate::family::common::{blank, field, line, ms, optional};
use crate::family::mutex::harness::MutexHarness;
use crate::family::plugin::{DefaultParts, Draw, Plugin};
use crate::scenario::{Action, Checked, EventSpec, Scenario, WorkloadKind, WorkloadSpec};
use crate::{Built, FamilyRun, SimError};
use distsync_algorithms::link::Reliable;
use distsync_algorithms::registry::MutexVisitor;
use distsync_algorithms::registry::{self, Entry, Family};
use distsync_core::mutex::MutualExclusion;
use distsync_core::NodeId;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::time::Duration;

/// The mutual-exclusion family's plug-in.
pub(crate) struct MutexFamily;

/// The mutual-exclusion algorithms that start with a token at `holder`.
const TOKEN: [&str; 4] = [
    "token-ring",
    "ricart-agrawala-token",
    "suzuki-kasami",
    "raymond",
];

impl Plugin for MutexFamily {
    fn family(&self) -> Family {
        Family::Mutex
    }

    fn example(&self) -> &'static str {
        "scenarios/central-lock-manager.toml"
    }

    fn title(&self) -> &'static str {
        "mutual exclusion"
    }

    fn takes(&self, part: &str) -> bool {
        part == "workload"
    }

    fn readers(&self, field: &str) -> Option<&'static str> {
        match field {
            "coordinator" => Some("central (its lock manager)"),
            "holder" => Some(
                "the token algorithms (token-ring, ricart-agrawala-token, suzuki-kasami, raymond)",
            ),
            "tree" => Some("raymond"),
            "quorums" => Some("maekawa and maekawa-basic"),
            _ => None,
        }
    }

    fn reads(&self, entry: &Entry, field: &str) -> bool {
        match field {
            "coordinator" => entry.name == "central",
            "holder" => TOKEN.contains(&entry.name),
            "tree" => entry.name == "raymond",
            "quorums" => entry.name.starts_with("maekawa"),
            _ => false,
        }
    }

    fn default_scenario(&self, parts: &DefaultParts) -> String {
        format!(
            "{}{}\n{}\n[workload]\nkind = \"saturated\"\ncs = \"10ms\"\nrequests = 2\n",
            parts.head(4, "10s"),
            "# Every node asks for the critical section twice, as soon as it can.",
            parts.network("{ uniform = [\"1ms\", \"5ms\"] }"),
        )
    }

    fn template_nodes(&self, name: &str) -> u32 {
        match name {
            "maekawa" | "maekawa-basic" | "raymond" => 7,
            _ => 5,
        }
    }

    fn template_fields(&self, w: &mut String, name: &str, last: u32) {
        match name {
            "central" => optional(
                w,
                "coordinator",
                &last.to_string(),
                "the lock manager, which does not compete (default: the highest id)",
            ),
            "token-ring" | "ricart-agrawala-token" | "suzuki-kasami" => optional(
                w,
                "holder",
                "0",
                "who holds the token first (default: the first id)",
            ),
            "raymond" => {
                optional(
                    w,
                    "holder",
                    "0",
                    "who holds the token first (default: the first id)",
                );
                optional(
                    w,
                    "tree",
                    "[[0, 1], [0, 2], [1, 3], [1, 4], [2, 5], [2, 6]]",
                    "the tree's edges (default: a balanced binary tree rooted at the holder)",
                );
            }
            "maekawa" | "maekawa-basic" => optional(
                w,
                "quorums",
                "\"plane\"",
                "\"plane\" (N = q^2+q+1, like 7) or \"grid\" (default: plane when N allows it)",
            ),
            _ => {}
        }
    }

    fn template_sections(&self, w: &mut String, _name: &str, _last: u32) {
        blank(w);
        line(w, "[workload]");
        field(
            w,
            "kind",
            "\"poisson\"",
            "\"poisson\" (with rate), \"saturated\" (heavy), \"light\" (one at a time), \"none\"",
        );
        field(
            w,
            "rate",
            "5.0",
            "poisson only: requests per second per node (no default)",
        );
        field(
            w,
            "cs",
            "\"10ms\"",
            "time inside the critical section, E (default 10ms)",
        );
        field(
            w,
            "requests",
            "10",
            "per node, then the node stops (default: unlimited)",
        );
        optional(
            w,
            "gap",
            "\"20ms\"",
            "light only: quiet time between requests (default 20 x the largest delay)",
        );
        blank(w);
        line(
            w,
            "# Scripted events, sorted by time: request, crash, recover, partition, heal.",
        );
        line(w, "[[event]]");
        field(w, "at", "\"5ms\"", "when");
        field(
            w,
            "request",
            "1",
            "node 1 asks for the critical section, stays `cs`, leaves",
        );
    }

    fn idle(&self, checked: &Checked) -> Option<(&'static str, String)> {
        let scenario = &checked.scenario;
        let workload = scenario
            .workload
            .as_ref()
            .is_some_and(|w| w.kind != WorkloadKind::None && w.requests != Some(0));
        let requested = checked
            .actions
            .iter()
            .any(|(_, _, a)| matches!(a, Action::Request(_)));
        (!workload && !requested).then(|| {
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

    fn stress_nodes(&self) -> (u32, u32) {
        (2, 6)
    }

    fn claims(&self, entry: &Entry, base: Claims) -> Claims {
        match entry.name {
            // Seed 003 states the basic algorithm and its deadlock; `maekawa` is the repaired
            // one.
            "maekawa-basic" => Claims {
                not_promised: &["deadlock", "starvation"],
                ..base
            },
            // A REPLY echoes the timestamp of the REQUEST it answers, and central's messages
            // name their request: a duplicate counts once.
            "ricart-agrawala" | "central" => Claims {
                duplicate: true,
                ..base
            },
            _ => base,
        }
    }

    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        _events: &mut Vec<EventSpec>,
    ) {
        let n = draw.n;
        let kind = match rng.gen_range(0..3) {
            0 => WorkloadKind::Saturated,
            1 => WorkloadKind::Poisson,
            _ => WorkloadKind::Light,
        };
        let rate = (kind == WorkloadKind::Poisson).then(|| rng.gen_range(2.0..50.0));
        let cs = ms(rng, 500, 10_000);
        let requests: u64 = rng.gen_range(1..=5);
        scenario.workload = Some(WorkloadSpec {
            kind,
            rate,
            cs,
            requests: Some(requests),
            gap: None,
        });
        match draw.entry.name {
            "central" => scenario.mutex.coordinator = Some(NodeId(rng.gen_range(0..n))),
            "token-ring" | "ricart-agrawala-token" | "suzuki-kasami" | "raymond" => {
                scenario.mutex.holder = Some(NodeId(rng.gen_range(0..n)))
            }
            _ => {}
        }
        // The light workload runs its entries one after another, each after up to 11 gaps
        // (the one after the previous exit, and up to 10 more while that request's messages
        // are in flight): with hundreds of nodes and long delays, more than 300 s.
        let mut until = Duration::from_secs(300);
        if kind == WorkloadKind::Light {
            let per_entry = crate::family::mutex::harness::default_gap(&scenario.network.delay)
                * 11
                + cs
                + draw.bound * (2 * n + 8);
            until = until.max(per_entry * n * requests as u32);
        }
        scenario.until = Some(until);
    }

    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError> {
        registry::visit_mutex(entry.name, run).expect("the registry lists it as mutex")
    }
}

impl MutexVisitor for FamilyRun<'_> {
    type Output = Result<Built, SimError>;
    fn visit<A: MutualExclusion + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output {
        if self.reliable() {
            let harness = MutexHarness::new::<Reliable<A>>(self.checked, self.origin)?;
            return self.run::<Reliable<A>, _>(entry, harness);
        }
        let harness = MutexHarness::new::<A>(self.checked, self.origin)?;
        self.run::<A, _>(entry, harness)
    }
}
