//! Global snapshots: a bank whose transfers run while a process takes a snapshot.

pub(crate) mod harness;
pub(crate) mod report;

use crate::app::{AppKind, AppSpec};
use crate::family::common::{at, blank, field, line, ms};
use crate::family::plugin::{DefaultParts, Draw, Plugin};
use crate::family::snapshot::harness::SnapshotHarness;
use crate::scenario::{EventSpec, Scenario};
use crate::{Built, FamilyRun, SimError};
use distsync_algorithms::link::Reliable;
use distsync_algorithms::registry::Family;
use distsync_algorithms::registry::{self, Entry};
use distsync_core::snapshot::GlobalSnapshot;
use distsync_core::NodeId;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::time::Duration;

/// The snapshot family's plug-in.
pub(crate) struct SnapshotFamily;

impl Plugin for SnapshotFamily {
    fn family(&self) -> Family {
        Family::Snapshot
    }

    fn example(&self) -> &'static str {
        "scenarios/chandy-lamport-bank.toml"
    }

    fn title(&self) -> &'static str {
        "snapshots"
    }

    fn takes(&self, part: &str) -> bool {
        matches!(part, "app" | "event.snapshot")
    }

    fn default_scenario(&self, parts: &DefaultParts) -> String {
        format!(
            "{}\n{}\n# A bank: accounts of 1000, random transfers; node 0 takes a snapshot.\n\
             [app]\nkind = \"bank\"\nbalance = 1000\nrate = 100.0\ntransfers = 5\n\n\
             [[event]]\nat = \"20ms\"\nsnapshot = 0\n",
            parts.head(3, "10s"),
            parts.network_fifo("{ uniform = [\"1ms\", \"10ms\"] }", true),
        )
    }

    fn template_lossless_note(&self) -> &'static str {
        " (refused for snapshots: it would destroy or create money)"
    }

    fn template_sections(&self, w: &mut String, _name: &str, _last: u32) {
        blank(w);
        line(w, "[app]");
        field(
            w,
            "kind",
            "\"bank\"",
            "the application the snapshot records",
        );
        field(
            w,
            "balance",
            "1000",
            "every account's opening balance (default 1000); or balances = [...], one per node",
        );
        field(w, "rate", "200.0", "transfers per second per process");
        field(
            w,
            "transfers",
            "40",
            "transfers per process (default: until the horizon)",
        );
        field(w, "max_amount", "100", "the largest transfer (default 100)");
        blank(w);
        line(w, "[[event]]");
        field(w, "at", "\"20ms\"", "when");
        field(w, "snapshot", "0", "process 0 starts a global snapshot");
    }

    fn warnings(&self, scenario: &Scenario) -> Vec<String> {
        // A bank runs its transfers whether or not a snapshot is taken.
        if scenario.events.iter().any(|e| e.snapshot.is_some()) {
            return Vec::new();
        }
        vec![
            "no `snapshot` event: the bank's transfers run, but no snapshot is ever taken (add `[[event]]` with `snapshot = ID`)"
                .to_string(),
        ]
    }

    fn stress_nodes(&self) -> (u32, u32) {
        (2, 5)
    }

    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        events: &mut Vec<EventSpec>,
    ) {
        scenario.app = Some(AppSpec {
            kind: AppKind::Bank,
            balance: Some(1000),
            balances: None,
            rate: Some(rng.gen_range(50.0..200.0)),
            transfers: Some(rng.gen_range(5..=30)),
            max_amount: Some(300),
        });
        for _ in 0..rng.gen_range(1..=3) {
            let mut e = at(ms(rng, 0, 200_000));
            e.snapshot = Some(NodeId(rng.gen_range(0..draw.n)));
            events.push(e);
        }
        scenario.until = Some(Duration::from_secs(3600));
    }

    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError> {
        registry::visit_snapshot(entry.name, run).expect("the registry lists it as snapshot")
    }
}

impl registry::SnapshotVisitor for FamilyRun<'_> {
    type Output = Result<Built, SimError>;
    fn visit<A: GlobalSnapshot + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output {
        if self.reliable() {
            let harness = SnapshotHarness::new::<Reliable<A>>(self.checked, self.origin)?;
            return self.run::<Reliable<A>, _>(entry, harness);
        }
        let harness = SnapshotHarness::new::<A>(self.checked, self.origin)?;
        self.run::<A, _>(entry, harness)
    }
}
