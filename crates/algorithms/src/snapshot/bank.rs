//! The bank application snapshots are taken of: every process holds an account and sends
//! money to others. Its invariant is that the money in the system (the balances plus the
//! transfers in transit) never changes.

use distsync_core::{NodeId, ParamError, Params, Peers};
use serde::Serialize;

/// The opening balance when neither `balance` nor `balances` is given.
pub const DEFAULT_BALANCE: u64 = 1000;

/// One account.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Bank {
    /// The balance now.
    pub balance: u64,
}

impl Bank {
    /// The account of `id`: `balances[position]`, else `balance`, else 1000.
    pub fn open(id: NodeId, peers: &Peers, params: &Params) -> Bank {
        let balance = match &params.balances {
            Some(b) => peers
                .position(id)
                .and_then(|p| b.get(p).copied())
                .unwrap_or(0),
            None => params.balance.unwrap_or(DEFAULT_BALANCE),
        };
        Bank { balance }
    }

    /// `balances` must give one balance per process.
    pub fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        match &params.balances {
            Some(b) if b.len() != peers.len() => Err(ParamError::new(
                "balances",
                format!(
                    "expected one opening balance per process ({}), got {}",
                    peers.len(),
                    b.len()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Takes `amount` out for a transfer, if the balance covers it.
    pub fn withdraw(&mut self, amount: u64) -> bool {
        if amount == 0 || amount > self.balance {
            return false;
        }
        self.balance -= amount;
        true
    }

    /// A transfer arrived.
    pub fn deposit(&mut self, amount: u64) {
        self.balance += amount;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_balances_and_withdrawals() {
        let peers = Peers::range(3);
        let params = Params {
            balances: Some(vec![5, 6, 7]),
            ..Params::default()
        };
        assert_eq!(Bank::open(NodeId(2), &peers, &params).balance, 7);
        assert_eq!(
            Bank::open(NodeId(2), &peers, &Params::default()).balance,
            DEFAULT_BALANCE
        );
        let mut b = Bank { balance: 10 };
        assert!(!b.withdraw(11));
        assert!(!b.withdraw(0));
        assert!(b.withdraw(10));
        assert_eq!(b.balance, 0);
        let bad = Params {
            balances: Some(vec![1]),
            ..Params::default()
        };
        assert_eq!(Bank::validate(&bad, &peers).unwrap_err().field, "balances");
    }
}
