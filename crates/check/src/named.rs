//! Choosing the algorithm by its registry name, for the command line and the web page.
//!
//! The registry's visitors hand out types that do not promise `Clone + Hash`; the checker needs
//! both, so it keeps its own table of the registry's names. A test checks that table against
//! the registry, so an algorithm added there and not here fails.

use crate::{
    check, check_election, check_multicast, check_snapshot, CheckError, Config, Outcome, Progress,
    Property, Stats, Step, Verdict,
};
use distsync_algorithms::registry::{self, Family};
use distsync_algorithms::{election, multicast, mutex, snapshot};
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

macro_rules! checkable {
    ($($name:literal => $f:ident :: <$ty:ty>,)*) => {
        /// The registry names the checker can explore.
        pub fn supported() -> &'static [&'static str] {
            &[$($name),*]
        }

        fn dispatch(
            name: &str,
            config: &Config,
            progress: &mut dyn FnMut(&Progress),
        ) -> Option<Result<Named, CheckError>> {
            match name {
                $($name => Some($f::<$ty>(config, progress).map(named)),)*
                _ => None,
            }
        }
    };
}

checkable! {
    "central" => check::<mutex::Central>,
    "lamport-mutex" => check::<mutex::LamportMutex>,
    "ricart-agrawala" => check::<mutex::RicartAgrawala>,
    "token-ring" => check::<mutex::TokenRing>,
    "ricart-agrawala-token" => check::<mutex::RicartAgrawalaToken>,
    "suzuki-kasami" => check::<mutex::SuzukiKasami>,
    "raymond" => check::<mutex::Raymond>,
    "maekawa" => check::<mutex::Maekawa>,
    "maekawa-basic" => check::<mutex::MaekawaBasic>,
    "singhal" => check::<mutex::Singhal>,
    "singhal-token" => check::<mutex::SinghalToken>,
    "majority-vote" => check::<mutex::MajorityVote>,
    "bully" => check_election::<election::Bully>,
    "ring" => check_election::<election::RingLink<election::Ring>>,
    "chang-roberts" => check_election::<election::RingLink<election::ChangRoberts>>,
    "ring-active-list" => check_election::<election::RingLink<election::RingActiveList>>,
    "peterson" => check_election::<election::RingLink<election::Peterson>>,
    "fifo-broadcast" => check_multicast::<multicast::FifoBroadcast>,
    "causal-broadcast" => check_multicast::<multicast::CausalBroadcast>,
    "total-order-multicast" => check_multicast::<multicast::TotalOrder>,
    "chandy-lamport" => check_snapshot::<snapshot::ChandyLamport>,
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
