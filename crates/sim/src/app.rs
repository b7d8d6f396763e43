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
