//! Mutual-exclusion algorithms, one file each.

pub mod central;
pub mod lamport;
pub mod maekawa;
pub mod maekawa_basic;
pub mod majority_vote;
#[cfg(test)]
mod pump;
pub mod quorum;
pub mod raymond;
pub mod ricart_agrawala;
pub mod ricart_agrawala_token;
pub mod singhal;
pub mod singhal_token;
pub mod suzuki_kasami;
pub mod token_ring;

pub use central::Central;
pub use lamport::LamportMutex;
pub use maekawa::Maekawa;
pub use maekawa_basic::MaekawaBasic;
pub use majority_vote::MajorityVote;
pub use raymond::Raymond;
pub use ricart_agrawala::RicartAgrawala;
pub use ricart_agrawala_token::RicartAgrawalaToken;
pub use singhal::Singhal;
pub use singhal_token::{SinghalToken, SinghalTokenAsRestated};
pub use suzuki_kasami::SuzukiKasami;
pub use token_ring::TokenRing;

use distsync_core::{NodeId, ParamError, Params, Peers};

/// The process holding the token at start, for token algorithms: `holder` from the scenario, by
/// default the first id in membership order.
pub fn initial_holder(peers: &Peers, params: &Params) -> NodeId {
    params.holder.unwrap_or(peers.ids()[0])
}

/// Checks that the scenario's `holder` is a member.
pub fn validate_holder(params: &Params, peers: &Peers) -> Result<(), ParamError> {
    match params.holder {
        Some(h) if !peers.contains(h) => Err(ParamError::new(
            "holder",
            format!("node {h} is not one of the scenario's node ids"),
        )),
        _ => Ok(()),
    }
}
