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
    let checks: [(&'static str, bool, bool, &str); 7] = [
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
