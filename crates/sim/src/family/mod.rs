//! The families of algorithms as plug-ins: each family (mutual exclusion, leader election,
//! clock synchronization, ordered multicast, global snapshots) brings, through one
//! [`Plugin`], what the rest of the simulator must know of it: the runnable default scenario
//! and the commented template of `distsync init`, the timeouts derived from the network and
//! the warnings and refusals of its assumptions, its stress generator and its claims.
//!
//! The modules that use these ([`crate::defaults`], [`crate::template`],
//! [`crate::assumptions`], [`crate::stress`]) hold no family's name: they ask
//! [`plugin()`] for the algorithm's family and call it. Adding a family is a new module here
//! with a type that implements [`Plugin`], plus its line in [`PLUGINS`].

pub(crate) mod claims;
pub(crate) mod clock_sync;
pub(crate) mod common;
pub(crate) mod election;
pub(crate) mod multicast;
pub(crate) mod mutex;
pub(crate) mod plugin;
pub(crate) mod reports;
pub(crate) mod section;
pub(crate) mod snapshot;

pub use claims::{Claims, Fault, Outside};
pub(crate) use common::{at, blank, field, line, ms};
pub(crate) use plugin::{DefaultParts, Draw, Plugin};

use distsync_algorithms::registry::{Entry, Family};

/// Every family's plug-in, one line each.
static PLUGINS: &[&dyn Plugin] = &[
    &mutex::MutexFamily,
    &election::ElectionFamily,
    &clock_sync::ClockSyncFamily,
    &multicast::MulticastFamily,
    &snapshot::SnapshotFamily,
];

/// Every family's plug-in, in the order of registration.
pub(crate) fn plugins() -> impl Iterator<Item = &'static dyn Plugin> {
    PLUGINS.iter().copied()
}

/// The plug-in of `family`.
pub(crate) fn plugin(family: Family) -> &'static dyn Plugin {
    PLUGINS
        .iter()
        .copied()
        .find(|p| p.family() == family)
        .expect("every family of the registry registers a plug-in in PLUGINS")
}

/// What each algorithm claims, from its file's header and the docs' "assumes / survives" tables.
/// Every claim here is tested: a short stress of every algorithm under its claims runs in the
/// test suite, and `distsync stress` over many seeds must find nothing.
pub fn claims_of(entry: &Entry) -> Claims {
    let base = Claims {
        needs_fifo: entry.needs_fifo,
        loss: false,
        duplicate: false,
        crash: false,
        partition: false,
        not_promised: &[],
        recoveries_over_reliable_links: true,
    };
    plugin(entry.family).claims(entry, base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_algorithms::registry;

    #[test]
    fn every_family_of_the_registry_has_one_plug_in() {
        for entry in registry::entries() {
            assert_eq!(plugin(entry.family).family(), entry.family);
        }
        for (i, p) in PLUGINS.iter().enumerate() {
            assert!(
                PLUGINS[..i].iter().all(|q| q.family() != p.family()),
                "{} is registered twice",
                p.family().name()
            );
        }
    }
}
