//! A small runnable scenario for every algorithm of the registry: what the web page starts from
//! when a learner picks an algorithm. Each is a few nodes over a network with varied delays, with
//! something to watch: contending requests, an election after the coordinator crashes,
//! synchronization rounds, a few multicasts, a snapshot of a bank. Each family's plug-in
//! ([`crate::family`]) writes its own.

use crate::family;
use distsync_algorithms::registry;

/// The default scenario (TOML) of the algorithm `name`; `None` if no algorithm has that name.
///
/// ```
/// let toml = distsync_sim::default_scenario("suzuki-kasami").unwrap();
/// let scenario = distsync_sim::Scenario::from_toml(&toml, "default").unwrap();
/// let report = distsync_sim::run(&scenario, Default::default()).unwrap();
/// assert!(report.violations.is_empty());
/// assert_eq!(report.sections.mutex.unwrap().entries, 8);
/// ```
pub fn default_scenario(name: &str) -> Option<String> {
    let entry = registry::lookup(name)?;
    Some(family::plugin(entry.family).default_scenario(&family::DefaultParts { entry }))
}
