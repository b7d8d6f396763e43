//! Scenario fields that belong to other algorithms: refused rather than ignored (a `holder` for
//! ricart-agrawala, an `answer_timeout` in a mutual-exclusion scenario, a `tree` for an
//! election), so that a run never seems to mean what it does not.

use crate::scenario::Scenario;
use distsync_algorithms::registry::{Entry, Family};

/// The mutual-exclusion algorithms that start with a token at `holder`.
const TOKEN: [&str; 4] = [
    "token-ring",
    "ricart-agrawala-token",
    "suzuki-kasami",
    "raymond",
];

/// The first field of `scenario` that `entry` does not read: the field and who reads it.
pub(crate) fn foreign_field(scenario: &Scenario, entry: &Entry) -> Option<(&'static str, String)> {
    let timed = entry.family == Family::Election || entry.family == Family::ClockSync;
    let checks: [(&'static str, bool, bool, &str); 8] = [
        (
            "coordinator",
            scenario.coordinator.is_some(),
            entry.name == "central" || entry.family == Family::Election,
            "central (its lock manager) and leader election (the coordinator every process knows at the start)",
        ),
        (
            "holder",
            scenario.holder.is_some(),
            TOKEN.contains(&entry.name),
            "the token algorithms (token-ring, ricart-agrawala-token, suzuki-kasami, raymond)",
        ),
        (
            "tree",
            scenario.tree.is_some(),
            entry.name == "raymond",
            "raymond",
        ),
        (
            "quorums",
            scenario.quorums.is_some(),
            entry.name.starts_with("maekawa"),
            "maekawa and maekawa-basic",
        ),
        (
            "answer_timeout",
            scenario.answer_timeout.is_some(),
            timed,
            "leader election and clock synchronization",
        ),
        (
            "coordinator_timeout",
            scenario.coordinator_timeout.is_some(),
            entry.family == Family::Election,
            "leader election",
        ),
        (
            "heartbeat",
            scenario.heartbeat.is_some(),
            entry.family == Family::Election,
            "leader election with `detect = \"timeout\"`",
        ),
        (
            "heartbeat_timeout",
            scenario.heartbeat_timeout.is_some(),
            entry.family == Family::Election,
            "leader election with `detect = \"timeout\"`",
        ),
    ];
    checks
        .into_iter()
        .find(|(_, set, allowed, _)| *set && !*allowed)
        .map(|(field, _, _, owner)| {
            (
                field,
                format!(
                    "this field applies to {owner}, and `{}` does not read it; remove it",
                    entry.name
                ),
            )
        })
}

/// A scenario field or event that belongs to a family of time and order other than `family`:
/// the field, what it is, and the family it belongs to.
pub(crate) fn misplaced(
    checked: &crate::scenario::Checked,
    family: Family,
) -> Option<(String, &'static str, &'static str)> {
    use crate::scenario::Action;
    let s = &checked.scenario;
    if family != Family::ClockSync {
        let fields = [
            ("sync_interval", s.sync_interval.is_some()),
            ("server", s.server.is_some()),
            ("samples", s.samples.is_some()),
            ("min_delay", s.min_delay.is_some()),
            ("max_drift_ppm", s.max_drift_ppm.is_some()),
            ("threshold", s.threshold.is_some()),
            ("master_election", s.master_election.is_some()),
            ("strata", s.strata.is_some()),
        ];
        if let Some((field, _)) = fields.iter().find(|f| f.1) {
            return Some((field.to_string(), "this field", "clock synchronization"));
        }
    }
    if family != Family::Multicast && s.multicast.is_some() {
        return Some(("multicast".into(), "`[multicast]`", "multicast"));
    }
    if !matches!(family, Family::Multicast | Family::Snapshot) && s.app.is_some() {
        return Some(("app".into(), "`[app]`", "multicast and snapshots"));
    }
    for (_, i, action) in &checked.actions {
        let (what, owner, name) = match action {
            Action::Sync(_) => (Family::ClockSync, "clock synchronization", "sync"),
            Action::Multicast(_) => (Family::Multicast, "multicast", "multicast"),
            Action::Snapshot(_) => (Family::Snapshot, "snapshots", "snapshot"),
            _ => continue,
        };
        if what != family {
            return Some((format!("event[{i}].{name}"), "this event", owner));
        }
    }
    None
}
