//! Ordered multicast: processes multicast at random times, monitored for the orders promised.

pub(crate) mod harness;
pub(crate) mod report;
pub(crate) mod spec;

use crate::family::claims::Claims;
use crate::family::common::{blank, field, line, optional};
use crate::family::multicast::harness::MulticastHarness;
use crate::family::multicast::harness::MulticastSpec;
use crate::family::plugin::{DefaultParts, Draw, Plugin};
use crate::scenario::{Action, Checked, EventSpec, Scenario};
use crate::{Built, FamilyRun, SimError};
use distsync_algorithms::link::Reliable;
use distsync_algorithms::registry::{self, Entry, Family};
use distsync_core::multicast::Order;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use std::time::Duration;

/// The multicast family's plug-in.
pub(crate) struct MulticastFamily;

impl Plugin for MulticastFamily {
    fn family(&self) -> Family {
        Family::Multicast
    }

    fn example(&self) -> &'static str {
        "scenarios/causal-broadcast.toml"
    }

    fn title(&self) -> &'static str {
        "multicast"
    }

    fn takes(&self, part: &str) -> bool {
        matches!(part, "multicast" | "app" | "event.multicast")
    }

    fn default_scenario(&self, parts: &DefaultParts) -> String {
        format!(
            "{}\n{}\n# Each node multicasts three updates, at random times.\n\
             [multicast]\nrate = 20.0\ncount = 3\n",
            parts.head(4, "10s"),
            parts.network("{ uniform = [\"100us\", \"20ms\"] }"),
        )
    }

    fn template_sections(&self, w: &mut String, name: &str, _last: u32) {
        blank(w);
        line(w, "[multicast]");
        field(
            w,
            "rate",
            "20.0",
            "multicasts per second per process (default: only scripted ones)",
        );
        field(w, "count", "5", "multicasts per process (default 10)");
        let promised = match name {
            "causal-broadcast" => "[\"fifo\", \"causal\"]",
            "total-order-multicast" => "[\"total\"]",
            _ => "[\"fifo\"]",
        };
        optional(
            w,
            "check",
            promised,
            "orders whose breach is a violation: fifo, causal, total (default: what it promises)",
        );
        if name == "total-order-multicast" {
            blank(w);
            line(
                w,
                "[app]                          # seed 003's replicated account (optional)",
            );
            field(w, "kind", "\"replicated-database\"", "");
            field(w, "balance", "1000", "the opening balance (default 1000)");
        }
    }

    fn idle(&self, checked: &Checked) -> Option<(&'static str, String)> {
        let workload = checked
            .scenario
            .multicast
            .as_ref()
            .is_some_and(|m| m.rate.is_some() && m.count != Some(0));
        let scripted = checked
            .actions
            .iter()
            .any(|(_, _, a)| matches!(a, Action::Multicast(_)));
        (!workload && !scripted).then(|| {
            (
                "multicast",
                "nothing to do: no `[multicast]` workload with a `rate` and no `multicast` event, so nothing is ever multicast; add `[multicast]` with `rate` (per second per process), or `multicast = ID` events".to_string(),
            )
        })
    }

    fn stress_nodes(&self) -> (u32, u32) {
        (2, 6)
    }

    fn claims(&self, _entry: &Entry, base: Claims) -> Claims {
        // The broadcasts deliver each message once: a duplicate is recognized and dropped.
        Claims {
            duplicate: true,
            ..base
        }
    }

    fn checks_orders(&self) -> bool {
        true
    }

    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        _events: &mut Vec<EventSpec>,
    ) {
        scenario.multicast = Some(MulticastSpec {
            rate: Some(rng.gen_range(5.0..50.0)),
            count: Some(rng.gen_range(2..=6)),
            check: if draw.check.is_empty() {
                None
            } else {
                let mut orders: Vec<Order> =
                    registry::visit_multicast(draw.entry.name, Promised).unwrap_or_default();
                for o in draw.check {
                    if !orders.contains(o) {
                        orders.push(*o);
                    }
                }
                Some(orders)
            },
        });
        scenario.until = Some(Duration::from_secs(3600));
    }

    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError> {
        registry::visit_multicast(entry.name, run).expect("the registry lists it as multicast")
    }
}

/// The orders a multicast algorithm promises.
struct Promised;
impl registry::MulticastVisitor for Promised {
    type Output = Vec<Order>;
    fn visit<A: distsync_core::multicast::Multicast + 'static>(
        self,
        _entry: &'static Entry,
    ) -> Vec<Order> {
        A::guarantees().to_vec()
    }
}

impl registry::MulticastVisitor for FamilyRun<'_> {
    type Output = Result<Built, SimError>;
    fn visit<A: distsync_core::multicast::Multicast + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output {
        if self.reliable() {
            let harness = MulticastHarness::new::<Reliable<A>>(self.checked, self.origin)?;
            return self.run::<Reliable<A>, _>(entry, harness);
        }
        let harness = MulticastHarness::new::<A>(self.checked, self.origin)?;
        self.run::<A, _>(entry, harness)
    }
}
