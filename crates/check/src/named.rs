//! Choosing the algorithm by its registry name, for the command line and the web page.
//!
//! The registry's visitors hand out the mutual-exclusion, election, multicast and snapshot
//! algorithms as [`Explorable`] types, which is what the checker needs: an algorithm registered
//! there is explored here with nothing more to write. The clock-synchronization algorithms are
//! refused, with the reason ([`refusal`]).

use crate::{
    check, check_election, check_multicast, check_snapshot, CheckError, Config, Outcome, Progress,
    Property, Stats, Step, Verdict,
};
use distsync_algorithms::registry::{
    self, ElectionVisitor, Entry, Explorable, Family, MulticastVisitor, MutexVisitor,
    SnapshotVisitor,
};
use distsync_core::election::Election;
use distsync_core::multicast::{Multicast, Order};
use distsync_core::mutex::MutualExclusion;
use distsync_core::snapshot::GlobalSnapshot;
use distsync_core::NodeId;
use serde::Serialize;

/// A counterexample of [`check_named`], rendered and typed.
#[derive(Clone, Debug, Serialize)]
pub struct NamedViolation {
    /// The broken property.
    pub property: Property,
    /// What is wrong.
    pub detail: String,
    /// The steps from the initial state (a step 0 "start" first when processes acted in
    /// `on_start`); each has a typed `action` and typed `effects`.
    pub steps: Vec<Step>,
    /// Every process's state at the end (`Debug` rendering, or "crashed").
    pub final_states: Vec<String>,
    /// For a lasso (liveness): the index in `steps` of the first step of the loop.
    pub loop_start: Option<usize>,
}

/// The outcome of [`check_named`].
#[derive(Clone, Debug)]
pub struct NamedOutcome {
    /// The registry name.
    pub algorithm: &'static str,
    /// Its family.
    pub family: Family,
    /// The membership, in order.
    pub ids: Vec<NodeId>,
    /// Whether the registry says the algorithm needs FIFO links.
    pub needs_fifo: bool,
    /// The figures.
    pub stats: Stats,
    /// `true` when every reachable state was explored without a violation.
    pub proved: bool,
    /// The broken property, what is wrong, the steps, and the processes' final states.
    pub violation: Option<NamedViolation>,
}

type Named = (Stats, bool, Option<NamedViolation>);

fn named<M, T, I>(o: Outcome<M, T, I>) -> Named {
    let proved = matches!(o.verdict, Verdict::Proved);
    let violation = match o.verdict {
        Verdict::Violated(c) => {
            let offset = usize::from(c.steps.first().is_some_and(|s| s.number == 0));
            Some(NamedViolation {
                property: c.property,
                detail: c.detail,
                loop_start: c.loop_start.map(|l| l + offset),
                steps: c.steps,
                final_states: c.final_states,
            })
        }
        _ => None,
    };
    (o.stats, proved, violation)
}

/// The registry names the checker can explore, in the registry's order (those plugged in at
/// run time included).
pub fn supported() -> Vec<&'static str> {
    registry::registered()
        .filter(|e| registry::explorable(e.family))
        .map(|e| e.name)
        .collect()
}

/// Explores `config` for the type the registry's visitor hands out.
struct Explore<'a> {
    config: &'a Config,
    progress: &'a mut dyn FnMut(&Progress),
}

type Explored = Result<Named, CheckError>;

impl MutexVisitor for Explore<'_> {
    type Output = Explored;
    fn visit<A: MutualExclusion + Serialize + Explorable>(self, _: &'static Entry) -> Explored {
        check::<A>(self.config, self.progress).map(named)
    }
}

impl ElectionVisitor for Explore<'_> {
    type Output = Explored;
    fn visit<A: Election + Serialize + Explorable>(self, _: &'static Entry) -> Explored {
        check_election::<A>(self.config, self.progress).map(named)
    }
}

impl MulticastVisitor for Explore<'_> {
    type Output = Explored;
    fn visit<A: Multicast + Serialize + Explorable>(self, _: &'static Entry) -> Explored {
        check_multicast::<A>(self.config, self.progress).map(named)
    }
}

impl SnapshotVisitor for Explore<'_> {
    type Output = Explored;
    fn visit<A: GlobalSnapshot + Serialize + Explorable>(self, _: &'static Entry) -> Explored {
        check_snapshot::<A>(self.config, self.progress).map(named)
    }
}

fn dispatch(
    name: &str,
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Option<Result<Named, CheckError>> {
    registry::visit_explorable(name, Explore { config, progress })
}

/// What the checker makes of an algorithm's family: the properties it holds the algorithm to
/// and the workload it explores. For those who present a check (the page, the command line)
/// without knowing the families.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyChecks {
    /// The properties, in the order the checker reports them (`progress` among them, though
    /// it is checked only when the whole space is explored; `liveness` not, as only
    /// [`Config::liveness`] asks for it).
    pub properties: Vec<Property>,
    /// What [`Config::requests`] counts.
    pub workload: Workload,
}

/// What the checker's workload is for a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// So many of something per process ([`Config::requests`]): its name for one and for
    /// many ("request", "requests").
    PerProcess(&'static str, &'static str),
    /// One election, started by [`Config::elect`] (the lowest id if empty).
    Election,
}

/// The [`FamilyChecks`] of the algorithm's family, for the visitor of its type.
struct Checks<'a>(&'a Config);

impl MutexVisitor for Checks<'_> {
    type Output = FamilyChecks;
    fn visit<A: MutualExclusion + Serialize + Explorable>(self, _: &'static Entry) -> FamilyChecks {
        FamilyChecks {
            properties: vec![
                Property::MutualExclusion,
                Property::Deadlock,
                Property::Completion,
                Property::Progress,
                Property::OutputContract,
            ],
            workload: Workload::PerProcess("request", "requests"),
        }
    }
}

impl ElectionVisitor for Checks<'_> {
    type Output = FamilyChecks;
    fn visit<A: Election + Serialize + Explorable>(self, _: &'static Entry) -> FamilyChecks {
        FamilyChecks {
            properties: vec![
                Property::OneLeader,
                Property::Agreement,
                Property::Validity,
                Property::Termination,
            ],
            workload: Workload::Election,
        }
    }
}

impl MulticastVisitor for Checks<'_> {
    type Output = FamilyChecks;
    /// The orders asked for ([`Config::orders`]), or those the algorithm promises.
    fn visit<A: Multicast + Serialize + Explorable>(self, _: &'static Entry) -> FamilyChecks {
        let orders = self.0.orders.as_deref().unwrap_or(A::guarantees());
        let mut properties: Vec<Property> = orders
            .iter()
            .map(|o| match o {
                Order::Fifo => Property::FifoOrder,
                Order::Causal => Property::CausalOrder,
                Order::Total => Property::TotalOrder,
            })
            .collect();
        properties.push(Property::Completion);
        FamilyChecks {
            properties,
            workload: Workload::PerProcess("multicast", "multicasts"),
        }
    }
}

impl SnapshotVisitor for Checks<'_> {
    type Output = FamilyChecks;
    fn visit<A: GlobalSnapshot + Serialize + Explorable>(self, _: &'static Entry) -> FamilyChecks {
        FamilyChecks {
            properties: vec![Property::Conservation, Property::SnapshotConsistency],
            workload: Workload::PerProcess("transfer", "transfers"),
        }
    }
}

/// What the checker makes of the algorithm registered as `name` under `config`: its
/// properties and its workload; `None` if no algorithm the checker explores has that name.
///
/// ```
/// use distsync_check::{family_checks, Config, Property, Workload};
/// let c = family_checks("bully", &Config::default()).unwrap();
/// assert_eq!(c.properties[0], Property::OneLeader);
/// assert_eq!(c.workload, Workload::Election);
/// assert_eq!(family_checks("cristian", &Config::default()), None);
/// ```
pub fn family_checks(name: &str, config: &Config) -> Option<FamilyChecks> {
    registry::visit_explorable(name, Checks(config))
}

/// Why the checker refuses a registered algorithm, or `None` if it explores it.
pub fn refusal(name: &str) -> Option<&'static str> {
    match name {
        "cristian" | "ntp" => Some(
            "its messages carry clock readings and its properties are bounds on real clock \
             offsets: continuous quantities the checker's abstract time does not model (every \
             reading would be a new state); the simulator checks it (`distsync run`, \
             `distsync clocks`)",
        ),
        "berkeley" => Some(
            "its rounds exchange clock readings and compute averages, so its states are as \
             many as the clock values: not finite without abstracting the arithmetic away, \
             which would no longer be the algorithm as written; the simulator checks it, and \
             its master election is the bully algorithm, which the checker does explore",
        ),
        _ => None,
    }
}

/// The family of a registered name.
pub fn family_of(name: &str) -> Option<Family> {
    registry::lookup(name).map(|e| e.family)
}

/// Explores `config` for the algorithm registered as `name`. An unknown name, or one the
/// checker refuses (see [`refusal`]), is an input error naming `algo`.
///
/// ```
/// use distsync_check::{check_named, Config};
/// let config = Config { nodes: 2, ..Config::default() };
/// let o = check_named("lamport-mutex", &Config { fifo: false, ..config }, &mut |_| {}).unwrap();
/// let v = o.violation.unwrap();
/// assert_eq!(v.property.name(), "mutual-exclusion");
/// // Typed steps, for a stepper: each has an action ("deliver", "input", ...) and effects.
/// assert!(v.steps.iter().any(|s| matches!(s.action, distsync_check::Action::Deliver { .. })));
/// ```
pub fn check_named(
    name: &str,
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<NamedOutcome, CheckError> {
    let Some(entry) = registry::lookup(name) else {
        let hint = registry::suggest(name)
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(CheckError::new(
            "algo",
            format!("no algorithm is named `{name}`{hint}; see `distsync list`"),
        ));
    };
    let (stats, proved, violation) = dispatch(name, config, progress).ok_or_else(|| {
        CheckError::new(
            "algo",
            format!(
                "the checker does not explore `{name}` ({} family): {}",
                entry.family.name(),
                refusal(name).unwrap_or("not in the checker's table")
            ),
        )
    })??;
    Ok(NamedOutcome {
        algorithm: entry.name,
        family: entry.family,
        ids: (0..config.nodes as u32).map(NodeId).collect(),
        needs_fifo: entry.needs_fifo,
        stats,
        proved,
        violation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_algorithm_is_checkable_or_refused_with_a_reason() {
        for e in registry::entries() {
            let ours = supported().contains(&e.name);
            let refused = refusal(e.name).is_some();
            assert!(
                ours != refused,
                "{}: checked {ours}, refused {refused}",
                e.name
            );
        }
        assert_eq!(supported().len() + 3, registry::entries().len());
    }

    #[test]
    fn unknown_and_refused_names_are_input_errors() {
        let c = Config::default();
        let e = check_named("ricart-agrawal", &c, &mut |_| {}).unwrap_err();
        assert_eq!(e.field, "algo");
        assert!(e.message.contains("ricart-agrawala"), "{e}");
        let e = check_named("cristian", &c, &mut |_| {}).unwrap_err();
        assert!(e.message.contains("clock readings"), "{e}");
    }

    #[test]
    fn a_named_check_runs_the_algorithm() {
        let c = Config {
            nodes: 2,
            requests: 1,
            fifo: false,
            ..Config::default()
        };
        let o = check_named("central", &c, &mut |_| {}).unwrap();
        assert!(o.proved && o.violation.is_none());
        assert_eq!(o.algorithm, "central");
    }
}
