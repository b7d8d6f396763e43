//! The applications the time-and-order families run on top of their algorithms (the scenario's
//! `[app]` section):
//!
//! - `kind = "replicated-database"` (multicast): seed 003's replicated database, one account
//!   held by every process. Each multicast is an update: odd payload ids deposit 100, even ones
//!   add 1% interest (rounded down). The two do not commute, so replicas that apply the same
//!   updates in different orders end with different balances. `balance` is the opening balance
//!   (default 1000).
//! - `kind = "bank"` (snapshots): every process holds an account (`balance` each, default 1000,
//!   or `balances` in membership order) and sends money to random others: `rate` transfers per
//!   second per process (Poisson), of 1..=`max_amount` (default 100) each, `transfers` per
//!   process (default: until the horizon). A transfer the balance cannot cover is not made.

use serde::{Deserialize, Serialize};

/// Which application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppKind {
    /// Money moving between accounts (snapshots).
    Bank,
    /// One account replicated at every process, updated by multicast (multicast).
    ReplicatedDatabase,
}

/// The `[app]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Which application.
    pub kind: AppKind,
    /// The opening balance of every account (default 1000).
    #[serde(default)]
    pub balance: Option<u64>,
    /// Bank: each process's opening balance, in membership order (instead of `balance`).
    #[serde(default)]
    pub balances: Option<Vec<u64>>,
    /// Bank: transfers per second per process.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Bank: transfers per process (default: until the horizon).
    #[serde(default)]
    pub transfers: Option<u64>,
    /// Bank: the largest transfer (default 100).
    #[serde(default)]
    pub max_amount: Option<u64>,
}

/// The opening balance when `balance` is not given.
pub const DEFAULT_BALANCE: u64 = 1000;
/// The largest transfer when `max_amount` is not given.
pub const DEFAULT_MAX_AMOUNT: u64 = 100;

/// The replicated database's update number `payload` applied to `balance`: odd ids deposit
/// 100, even ids add 1% interest (rounded down).
pub fn apply_update(balance: u64, payload: u64) -> u64 {
    if payload % 2 == 1 {
        balance + 100
    } else {
        balance + balance / 100
    }
}

/// A scenario field or event that belongs to a family of time and order other than `family`:
/// the field, what it is, and the family it belongs to.
pub(crate) fn misplaced(
    checked: &crate::scenario::Checked,
    family: distsync_algorithms::registry::Family,
) -> Option<(String, &'static str, &'static str)> {
    use crate::scenario::Action;
    use distsync_algorithms::registry::Family;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003_s_updates_do_not_commute() {
        // $1000: deposit $100 then 1% interest gives $1111; the other order gives $1110.
        assert_eq!(apply_update(apply_update(1000, 1), 2), 1111);
        assert_eq!(apply_update(apply_update(1000, 2), 1), 1110);
    }
}
