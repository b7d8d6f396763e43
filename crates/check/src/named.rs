//! Choosing the algorithm by its registry name, for the command line.
//!
//! The registry's visitor hands out `A: MutualExclusion`, which does not promise `Clone + Debug`;
//! the checker needs both, so it keeps its own table of the registry's mutual-exclusion names. A
//! test checks that table against the registry, so an algorithm added there and not here fails.

use crate::{check, CheckError, Config, Progress, Property, Stats, Step, Verdict};
use distsync_algorithms::mutex;
use distsync_algorithms::registry;

/// The outcome of [`check_named`], with the counterexample rendered.
#[derive(Clone, Debug)]
pub struct NamedOutcome {
    /// The registry name.
    pub algorithm: &'static str,
    /// Whether the registry says the algorithm needs FIFO links.
    pub needs_fifo: bool,
    /// The figures.
    pub stats: Stats,
    /// `true` when every reachable state was explored without a violation.
    pub proved: bool,
    /// The broken property, what is wrong, the numbered steps, and the processes' final states.
    pub violation: Option<(Property, String, Vec<Step>, Vec<String>)>,
}

macro_rules! checkable {
    ($($name:literal => $ty:ty,)*) => {
        /// The registry names the checker can explore (the mutual-exclusion family).
        pub fn supported() -> &'static [&'static str] {
            &[$($name),*]
        }

        fn dispatch(
            name: &str,
            config: &Config,
            progress: &mut dyn FnMut(&Progress),
        ) -> Option<Result<(Stats, bool, Option<(Property, String, Vec<Step>, Vec<String>)>), CheckError>> {
            match name {
                $($name => Some(check::<$ty>(config, progress).map(|o| {
                    let proved = matches!(o.verdict, Verdict::Proved);
                    let violation = match o.verdict {
                        Verdict::Violated(c) => {
                            Some((c.property, c.detail, c.steps, c.final_states))
                        }
                        _ => None,
                    };
                    (o.stats, proved, violation)
                })),)*
                _ => None,
            }
        }
    };
}

checkable! {
    "central" => mutex::Central,
    "lamport-mutex" => mutex::LamportMutex,
    "ricart-agrawala" => mutex::RicartAgrawala,
    "token-ring" => mutex::TokenRing,
    "ricart-agrawala-token" => mutex::RicartAgrawalaToken,
    "suzuki-kasami" => mutex::SuzukiKasami,
    "raymond" => mutex::Raymond,
    "maekawa" => mutex::Maekawa,
    "maekawa-basic" => mutex::MaekawaBasic,
    "singhal" => mutex::Singhal,
    "majority-vote" => mutex::MajorityVote,
}

/// Explores `config` for the algorithm registered as `name`. An unknown name, or one the
/// checker does not support (another family), is an input error naming `algo`.
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
                "`{name}` is in the {} family; the checker explores mutual exclusion only: {}",
                entry.family.name(),
                supported().join(", ")
            ),
        )
    })??;
    Ok(NamedOutcome {
        algorithm: entry.name,
        needs_fifo: entry.needs_fifo,
        stats,
        proved,
        violation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_algorithms::registry::Family;

    #[test]
    fn every_registered_mutex_algorithm_is_checkable() {
        let mut registered: Vec<&str> = registry::entries()
            .into_iter()
            .filter(|e| e.family == Family::Mutex)
            .map(|e| e.name)
            .collect();
        let mut ours = supported().to_vec();
        registered.sort_unstable();
        ours.sort_unstable();
        assert_eq!(ours, registered);
    }

    #[test]
    fn unknown_and_other_family_names_are_input_errors() {
        let c = Config::default();
        let e = check_named("ricart-agrawal", &c, &mut |_| {}).unwrap_err();
        assert_eq!(e.field, "algo");
        assert!(e.message.contains("ricart-agrawala"), "{e}");
        let e = check_named("bully", &c, &mut |_| {}).unwrap_err();
        assert!(e.message.contains("election"), "{e}");
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
