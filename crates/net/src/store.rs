//! The replicated bank (`distsync store`): the notes' replicated database, whose updates every
//! replica applies in the order its multicast algorithm delivers them.
//!
//! Accounts are named; an update opens or sets an account (`Put`), adds to one (`Add`, the notes'
//! "add $100"), adds interest to every account (`Interest`, the notes' "add 1% interest"), or
//! moves money between two (`Transfer`). Applying an update is deterministic, so two replicas
//! that applied the same updates in the same order hold the same accounts; updates that do not
//! commute (`Add` and `Interest`) applied in different orders leave them different, which the
//! [`Replica::digest`] shows. A transfer that the source account cannot cover, or between
//! accounts that do not exist, changes nothing (at that replica: under causal or FIFO order,
//! replicas can disagree about it too).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An account name may be this long at most (bytes).
pub const MAX_ACCOUNT: usize = 64;
/// A replica holds at most this many accounts; a `Put` of a new one beyond it changes nothing.
pub const MAX_ACCOUNTS: usize = 4096;
/// Interest is given in basis points (1% = 100), at most this many.
pub const MAX_INTEREST_BP: u32 = 100_000;

/// One update of the replicated bank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Update {
    /// Open `account` with `amount`, or set it to `amount`.
    Put {
        /// The account.
        account: String,
        /// Its new balance.
        amount: i64,
    },
    /// Add `amount` (negative: take it out) to `account`; nothing if it does not exist.
    Add {
        /// The account.
        account: String,
        /// How much.
        amount: i64,
    },
    /// Add `bp` basis points of interest to every account (rounded toward zero).
    Interest {
        /// Basis points: 100 is 1%.
        bp: u32,
    },
    /// Move `amount` from `from` to `to`, if `from` covers it and both exist.
    Transfer {
        /// The paying account.
        from: String,
        /// The receiving account.
        to: String,
        /// How much (more than zero).
        amount: i64,
    },
}

impl Update {
    /// Checks what a client sent: names of 1 to [`MAX_ACCOUNT`] bytes, amounts and rates in
    /// range. The error says what was expected.
    pub fn check(&self) -> Result<(), String> {
        let name = |n: &str| {
            if n.is_empty() || n.len() > MAX_ACCOUNT {
                Err(format!("an account name has 1 to {MAX_ACCOUNT} bytes"))
            } else {
                Ok(())
            }
        };
        match self {
            Update::Put { account, .. } | Update::Add { account, .. } => name(account),
            Update::Interest { bp } => {
                if *bp > MAX_INTEREST_BP {
                    Err(format!(
                        "interest is at most {MAX_INTEREST_BP} basis points ({}%)",
                        MAX_INTEREST_BP / 100
                    ))
                } else {
                    Ok(())
                }
            }
            Update::Transfer { from, to, amount } => {
                name(from)?;
                name(to)?;
                if *amount <= 0 {
                    return Err("a transfer moves more than zero".into());
                }
                if from == to {
                    return Err("a transfer needs two different accounts".into());
                }
                Ok(())
            }
        }
    }
}

impl std::fmt::Display for Update {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Update::Put { account, amount } => write!(f, "put {account} {amount}"),
            Update::Add { account, amount } => write!(f, "add {account} {amount}"),
            Update::Interest { bp } => write!(f, "interest {}.{:02}%", bp / 100, bp % 100),
            Update::Transfer { from, to, amount } => write!(f, "transfer {from} {to} {amount}"),
        }
    }
}

/// One replica: the accounts, and the updates applied, in order (by payload id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replica {
    /// The accounts.
    pub accounts: BTreeMap<String, i64>,
    /// The payload ids of the updates applied, in the order they were.
    pub applied: Vec<u64>,
}

impl Replica {
    /// Applies `update` (carried by multicast `payload`).
    pub fn apply(&mut self, payload: u64, update: &Update) {
        self.applied.push(payload);
        match update {
            Update::Put { account, amount } => {
                if self.accounts.len() < MAX_ACCOUNTS || self.accounts.contains_key(account) {
                    self.accounts.insert(account.clone(), *amount);
                }
            }
            Update::Add { account, amount } => {
                if let Some(b) = self.accounts.get_mut(account) {
                    *b = b.saturating_add(*amount);
                }
            }
            Update::Interest { bp } => {
                for b in self.accounts.values_mut() {
                    let interest = (*b as i128 * *bp as i128 / 10_000) as i64;
                    *b = b.saturating_add(interest);
                }
            }
            Update::Transfer { from, to, amount } => {
                let covered = self.accounts.get(from).is_some_and(|&b| b >= *amount);
                if covered && self.accounts.contains_key(to) {
                    *self.accounts.get_mut(from).expect("present") -= amount;
                    let t = self.accounts.get_mut(to).expect("present");
                    *t = t.saturating_add(*amount);
                }
            }
        }
    }

    /// The money in the accounts.
    pub fn total(&self) -> i128 {
        self.accounts.values().map(|&b| b as i128).sum()
    }

    /// A digest of the accounts (FNV-1a, 64 bits, over the names and balances in name order):
    /// equal accounts give equal digests on every machine.
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        for (name, balance) in &self.accounts {
            eat(&(name.len() as u64).to_le_bytes());
            eat(name.as_bytes());
            eat(&balance.to_le_bytes());
        }
        h
    }
}

/// A multicast payload id for a store update: the origin node in the top 10 bits, its
/// incarnation (random per start) in the next 22, its update number in the low 32. Unique in a
/// cluster's life unless one node makes 2^32 updates or two of its starts draw one incarnation.
pub fn payload_id(node: u32, incarnation: u32, seq: u32) -> u64 {
    ((node as u64 & 0x3ff) << 54) | ((incarnation as u64 & 0x3f_ffff) << 32) | seq as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(a: &str, n: i64) -> Update {
        Update::Put {
            account: a.into(),
            amount: n,
        }
    }

    #[test]
    fn the_notes_anomaly_add_and_interest_do_not_commute() {
        // Seed 003: a deposit of $100 and 1% interest applied in different orders at two
        // replicas of an account holding $1000 leave $1111 at one and $1110 at the other.
        let add = Update::Add {
            account: "acct".into(),
            amount: 100,
        };
        let interest = Update::Interest { bp: 100 };
        let mut a = Replica::default();
        let mut b = Replica::default();
        a.apply(1, &put("acct", 1000));
        b.apply(1, &put("acct", 1000));
        a.apply(2, &add);
        a.apply(3, &interest);
        b.apply(3, &interest);
        b.apply(2, &add);
        assert_eq!(a.accounts["acct"], 1111);
        assert_eq!(b.accounts["acct"], 1110);
        assert_ne!(a.digest(), b.digest());
        // In the same order, the same accounts and digest.
        let mut c = Replica::default();
        c.apply(1, &put("acct", 1000));
        c.apply(2, &add);
        c.apply(3, &interest);
        assert_eq!(a.digest(), c.digest());
    }

    #[test]
    fn transfers_conserve_money_and_refuse_what_they_cannot_cover() {
        let mut r = Replica::default();
        r.apply(1, &put("a", 50));
        r.apply(2, &put("b", 0));
        let t = |amount| Update::Transfer {
            from: "a".into(),
            to: "b".into(),
            amount,
        };
        r.apply(3, &t(30));
        r.apply(4, &t(30));
        assert_eq!((r.accounts["a"], r.accounts["b"]), (20, 30));
        assert_eq!(r.total(), 50);
        r.apply(
            5,
            &Update::Transfer {
                from: "a".into(),
                to: "nobody".into(),
                amount: 1,
            },
        );
        assert_eq!(r.total(), 50);
        assert_eq!(r.applied, vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn bad_updates_are_refused_with_what_was_expected() {
        assert!(put("", 1).check().unwrap_err().contains("1 to 64"));
        assert!(put(&"x".repeat(65), 1).check().is_err());
        assert!(Update::Interest { bp: 100_001 }.check().is_err());
        let t = |from: &str, to: &str, amount| Update::Transfer {
            from: from.into(),
            to: to.into(),
            amount,
        };
        assert!(t("a", "b", 0)
            .check()
            .unwrap_err()
            .contains("more than zero"));
        assert!(t("a", "a", 1)
            .check()
            .unwrap_err()
            .contains("two different"));
        assert!(t("a", "b", 1).check().is_ok());
        assert_eq!(Update::Interest { bp: 150 }.to_string(), "interest 1.50%");
    }

    #[test]
    fn payload_ids_keep_node_incarnation_and_number_apart() {
        let a = payload_id(3, 7, 1);
        assert_eq!(a >> 54, 3);
        assert_ne!(a, payload_id(3, 8, 1));
        assert_ne!(a, payload_id(2, 7, 1));
        assert_eq!(payload_id(1023, 0x3f_ffff, u32::MAX), u64::MAX);
    }
}
