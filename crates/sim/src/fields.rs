//! Scenario fields that belong to other algorithms or families: refused rather than ignored (a
//! `holder` for ricart-agrawala, an `answer_timeout` in a mutual-exclusion scenario, a `tree`
//! for an election, `[multicast]` for a snapshot), so that a run never seems to mean what it
//! does not. Who reads which field is each family's plug-in's to say
//! ([`Plugin::reads`](crate::family::Plugin::reads), [`Plugin::takes`](crate::family::Plugin::takes));
//! this module only lists the fields and asks.

use crate::family::section::Refusal;
use crate::family::{plugins, Plugin};
use crate::scenario::{section_parts, Action, Checked, Scenario};
use distsync_algorithms::registry::Entry;

/// Whether the scenarios of `entry`'s family take `part`: a field or section that belongs to
/// one family or a few (`workload`, `detect`, `sync_interval`, `multicast`, `app`, ...) or an
/// event of theirs (`event.elect`, `event.sync`, `event.multicast`, `event.snapshot`).
///
/// ```
/// use distsync_algorithms::registry::lookup;
/// assert!(distsync_sim::takes(lookup("bully").unwrap(), "event.elect"));
/// assert!(!distsync_sim::takes(lookup("central").unwrap(), "event.elect"));
/// ```
pub fn takes(entry: &Entry, part: &str) -> bool {
    crate::family::plugin(entry.family).takes(part)
}

/// Whether the algorithm `entry` reads the scenario field `field` (`coordinator`, `holder`,
/// `tree`, `quorums`, `answer_timeout`, ...).
///
/// ```
/// use distsync_algorithms::registry::lookup;
/// assert!(distsync_sim::reads(lookup("raymond").unwrap(), "holder"));
/// assert!(!distsync_sim::reads(lookup("ricart-agrawala").unwrap(), "holder"));
/// ```
pub fn reads(entry: &Entry, field: &str) -> bool {
    crate::family::plugin(entry.family).reads(entry, field)
}

/// A scenario file of `scenarios/` that shows `entry`'s family, for messages that point to
/// one (`scenarios/causal-broadcast.toml` for a multicast algorithm).
pub fn example_file(entry: &Entry) -> &'static str {
    crate::family::plugin(entry.family).example()
}

/// What every plug-in that `owns` says, joined with " and " in the order of registration.
fn owners(says: impl Fn(&dyn Plugin) -> Option<&'static str>) -> String {
    let all: Vec<&str> = plugins().filter_map(says).collect();
    all.join(" and ")
}

/// The first parameter of the sections of `scenario` ([`Refusal::Param`]) that `entry` does not
/// read: the field and who reads it.
pub(crate) fn foreign_field(scenario: &Scenario, entry: &Entry) -> Option<(&'static str, String)> {
    let plugin = crate::family::plugin(entry.family);
    section_parts(scenario)
        .into_iter()
        .find(|&(field, refusal, set)| {
            set && refusal == Refusal::Param && !plugin.reads(entry, field)
        })
        .map(|(field, _, _)| {
            (
                field,
                format!(
                    "this field applies to {}, and `{}` does not read it; remove it",
                    owners(|p| p.readers(field)),
                    entry.name
                ),
            )
        })
}

/// The first part of `checked` among `parts` (a field or an event, as [`Plugin::takes`] names
/// it) that `plugin`'s family does not take: the field as the error names it, what it is, and
/// the families that take it.
fn first_foreign(
    checked: &Checked,
    plugin: &dyn Plugin,
    fields: &[(&'static str, bool, &'static str)],
    events: &[&'static str],
) -> Option<(String, &'static str, String)> {
    let owner = |part: &str| owners(|p| p.takes(part).then(|| p.title()));
    if let Some(&(field, _, what)) = fields
        .iter()
        .find(|&&(field, set, _)| set && !plugin.takes(field))
    {
        return Some((field.to_string(), what, owner(field)));
    }
    for (_, i, action) in &checked.actions {
        let Some(name) = event_name(action) else {
            continue;
        };
        let part = format!("event.{name}");
        if events.contains(&name) && !plugin.takes(&part) {
            let what = if name == "elect" {
                "`elect`"
            } else {
                "this event"
            };
            return Some((format!("event[{i}].{name}"), what, owner(&part)));
        }
    }
    None
}

/// The name of an event of a family's own, as a scenario spells it.
fn event_name(action: &Action) -> Option<&'static str> {
    match action {
        Action::Elect(_) | Action::ElectAll => Some("elect"),
        Action::Sync(_) => Some("sync"),
        Action::Multicast(_) => Some("multicast"),
        Action::Snapshot(_) => Some("snapshot"),
        _ => None,
    }
}

/// A scenario field or event of a family's own that `plugin`'s family does not take, checked
/// before the algorithms' fields ([`foreign_field`]): the sections' fields refused first
/// ([`Refusal::First`]: `detect`) and `elect` events. The field, what it is, and the families
/// that take it.
pub(crate) fn misplaced_first(
    checked: &Checked,
    plugin: &dyn Plugin,
) -> Option<(String, &'static str, String)> {
    let fields: Vec<_> = section_parts(&checked.scenario)
        .into_iter()
        .filter_map(|(field, refusal, set)| match refusal {
            Refusal::First(what) => Some((field, set, what)),
            _ => None,
        })
        .collect();
    first_foreign(checked, plugin, &fields, &["elect"])
}

/// A scenario field or event of a family's own that `plugin`'s family does not take, checked
/// after the algorithms' fields: the sections' fields refused then ([`Refusal::Then`]: the
/// clock fields), `[multicast]`, `[app]`, and the `sync`, `multicast` and `snapshot` events. The field, what it is, and the families that take it.
pub(crate) fn misplaced(
    checked: &Checked,
    plugin: &dyn Plugin,
) -> Option<(String, &'static str, String)> {
    let s = &checked.scenario;
    let mut fields: Vec<_> = section_parts(s)
        .into_iter()
        .filter_map(|(field, refusal, set)| match refusal {
            Refusal::Then(what) => Some((field, set, what)),
            _ => None,
        })
        .collect();
    fields.push(("multicast", s.multicast.is_some(), "`[multicast]`"));
    fields.push(("app", s.app.is_some(), "`[app]`"));
    first_foreign(checked, plugin, &fields, &["sync", "multicast", "snapshot"])
}
