//! Field checks for messages that come from another process over a real network, in one place.
//!
//! The algorithms trust their messages: the simulator and the checker only ever deliver what a
//! process of the same algorithm sent. A real cluster cannot assume that: a peer that holds the
//! node key but runs broken or hostile code can send any value of the message type (a token
//! vector one entry short, a queue naming a node that does not exist, a counter at `u64::MAX`
//! whose `+ 1` overflows). [`Validate::validate`] says whether a message's fields are in range
//! for a membership; the network runtime (`distsync-net`'s machine layer) calls it on every
//! message after decoding and before the handler, and drops what it refuses. The handlers' rules
//! are unchanged.
//!
//! What is checked, for every message type of the mutual-exclusion, election, multicast and
//! snapshot algorithms of the registry:
//! - every node id a message names is a member;
//! - every per-site vector has one entry per member, and queues and id lists at most one entry
//!   per member, without repeats;
//! - counters (timestamps, sequence numbers, epochs, hop counts) stay far below their type's
//!   maximum ([`MAX_COUNTER`], [`MAX_COUNTER32`]), so that the `+ 1` of a rule never overflows;
//!   hop counts are at most the membership's size (the ring algorithms drop such messages
//!   anyway).
//!
//! A counter near the bound can still be forged: it wastes counter space (a process's clock
//! jumps), not safety. The network runtime builds a fresh instance per view, so such a clock does
//! not outlive the view it was forged in.

use crate::election::detector::DetectMsg;
use crate::election::ring_link::LinkMsg;
use crate::election::{bully, chang_roberts, peterson, ring, ring_active_list};
use crate::multicast::{causal_broadcast, fifo_broadcast, total_order};
use crate::mutex::{
    central, lamport, maekawa, maekawa_basic, majority_vote, raymond, ricart_agrawala,
    ricart_agrawala_token, singhal, singhal_token, suzuki_kasami, token_ring,
};
use crate::snapshot::chandy_lamport;
use distsync_core::{NodeId, Peers};
use std::fmt;

/// The largest 64-bit counter a message may carry: a quarter of the range, so that no rule's
/// arithmetic on it overflows. A counter that rises by one per event takes longer than any
/// cluster lives to get there.
pub const MAX_COUNTER: u64 = 1 << 62;

/// The largest 32-bit counter (epochs and rounds of the ring algorithms) a message may carry.
pub const MAX_COUNTER32: u32 = 1 << 30;

/// Why a message was refused: the field and what was wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// A message type whose fields can be checked against a membership.
pub trait Validate {
    /// `Ok` if every field is in range for `peers` (see the module documentation).
    fn validate(&self, peers: &Peers) -> Result<(), Invalid>;

    /// `Ok` if the message is in range for `peers` ([`Validate::validate`]) and may be
    /// delivered to `receiver`: what a message says of the process it is sent to (a token's
    /// queue never names it) is checked here. The network runtime calls this one.
    fn validate_for(&self, peers: &Peers, receiver: NodeId) -> Result<(), Invalid> {
        let _ = receiver;
        self.validate(peers)
    }
}

/// `id` (field `field`) is a member.
pub fn member(peers: &Peers, id: NodeId, field: &str) -> Result<(), Invalid> {
    if peers.contains(id) {
        Ok(())
    } else {
        Err(Invalid(format!("{field} names node {id}, not a member")))
    }
}

/// `v` (field `field`) is at most [`MAX_COUNTER`].
pub fn counter(v: u64, field: &str) -> Result<(), Invalid> {
    if v <= MAX_COUNTER {
        Ok(())
    } else {
        Err(Invalid(format!("{field} is {v}, above {MAX_COUNTER}")))
    }
}

/// `v` (field `field`) is at most [`MAX_COUNTER32`].
pub fn counter32(v: u32, field: &str) -> Result<(), Invalid> {
    if v <= MAX_COUNTER32 {
        Ok(())
    } else {
        Err(Invalid(format!("{field} is {v}, above {MAX_COUNTER32}")))
    }
}

/// A hop count: at most one round of the ring.
pub fn hops(peers: &Peers, v: u32, field: &str) -> Result<(), Invalid> {
    if v as usize <= peers.len() {
        Ok(())
    } else {
        Err(Invalid(format!(
            "{field} is {v}, more than the {} members",
            peers.len()
        )))
    }
}

/// A vector with one entry per member, in membership order.
pub fn per_site(peers: &Peers, len: usize, field: &str) -> Result<(), Invalid> {
    if len == peers.len() {
        Ok(())
    } else {
        Err(Invalid(format!(
            "{field} has {len} entries for {} members",
            peers.len()
        )))
    }
}

/// A list of distinct members (a queue, the ids an election met).
pub fn distinct_members<'a>(
    peers: &Peers,
    ids: impl ExactSizeIterator<Item = &'a NodeId>,
    field: &str,
) -> Result<(), Invalid> {
    if ids.len() > peers.len() {
        return Err(Invalid(format!(
            "{field} has {} entries for {} members",
            ids.len(),
            peers.len()
        )));
    }
    let mut seen = Vec::with_capacity(ids.len());
    for &id in ids {
        member(peers, id, field)?;
        if seen.contains(&id) {
            return Err(Invalid(format!("{field} names node {id} twice")));
        }
        seen.push(id);
    }
    Ok(())
}

fn counters(vs: &[u64], field: &str) -> Result<(), Invalid> {
    vs.iter().try_for_each(|&v| counter(v, field))
}

impl Validate for central::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use central::Msg::*;
        match *self {
            Request { n } | Grant { n } | Denied { n } | Release { n } => counter(n, "n"),
        }
    }
}

impl Validate for lamport::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use lamport::Msg::*;
        match *self {
            Request { ts } | Reply { ts } | Release { ts } => counter(ts, "ts"),
        }
    }
}

impl Validate for maekawa::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use maekawa::Msg::*;
        match *self {
            Request { ts }
            | Reply { ts }
            | Release { ts }
            | Failed { ts }
            | Inquire { ts }
            | Yield { ts } => counter(ts, "ts"),
        }
    }
}

impl Validate for maekawa_basic::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use maekawa_basic::Msg::*;
        match self {
            Request | Reply | Release => Ok(()),
        }
    }
}

impl Validate for majority_vote::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use majority_vote::Msg::*;
        match *self {
            Request { ts }
            | Granted { ts }
            | Queued { ts }
            | Release { ts }
            | Inquire { ts }
            | Yield { ts } => counter(ts, "ts"),
        }
    }
}

impl Validate for raymond::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match *self {
            raymond::Msg::Request { origin } => member(peers, origin, "origin"),
            raymond::Msg::Token => Ok(()),
        }
    }
}

impl Validate for ricart_agrawala::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use ricart_agrawala::Msg::*;
        match *self {
            Request { ts } | Reply { ts } => counter(ts, "ts"),
        }
    }
}

impl Validate for ricart_agrawala_token::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            ricart_agrawala_token::Msg::Request { ts } => counter(*ts, "ts"),
            ricart_agrawala_token::Msg::Token { token } => {
                per_site(peers, token.len(), "token")?;
                counters(token, "token")
            }
        }
    }
}

impl Validate for singhal::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        use singhal::Msg::*;
        match *self {
            Request { ts } | Reply { ts } => counter(ts, "ts"),
        }
    }
}

impl Validate for singhal_token::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            singhal_token::Msg::Request { sn } => counter(*sn, "sn"),
            singhal_token::Msg::Token(t) => {
                per_site(peers, t.tsv.len(), "token TSV")?;
                per_site(peers, t.tsn.len(), "token TSN")?;
                counters(&t.tsn, "token TSN")
            }
        }
    }
}

impl Validate for suzuki_kasami::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            suzuki_kasami::Msg::Request { sn } => counter(*sn, "sn"),
            suzuki_kasami::Msg::Token(t) => {
                per_site(peers, t.ln.len(), "token LN")?;
                counters(&t.ln, "token LN")?;
                distinct_members(peers, t.q.iter(), "token queue")
            }
        }
    }

    /// A token's queue never names the site it is sent to: its sender took that site off the
    /// queue's front (rule 6) or sent it on a request (rule 2). A queue naming its receiver
    /// would make the receiver send the token to itself at its next release.
    fn validate_for(&self, peers: &Peers, receiver: NodeId) -> Result<(), Invalid> {
        self.validate(peers)?;
        match self {
            suzuki_kasami::Msg::Token(t) if t.q.contains(&receiver) => Err(Invalid(format!(
                "token queue names node {receiver}, the site it is sent to"
            ))),
            _ => Ok(()),
        }
    }
}

impl Validate for token_ring::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        match self {
            token_ring::Msg::Token => Ok(()),
        }
    }
}

impl Validate for bully::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        match self {
            bully::Msg::Election | bully::Msg::Ok | bully::Msg::Coordinator => Ok(()),
        }
    }
}

impl Validate for chang_roberts::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        use chang_roberts::Msg::*;
        match *self {
            Election {
                uid,
                hops: h,
                epoch,
            }
            | Elected {
                uid,
                hops: h,
                epoch,
            } => {
                member(peers, uid, "uid")?;
                counter32(epoch, "epoch")?;
                hops(peers, h, "hops")
            }
        }
    }
}

impl Validate for peterson::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        use peterson::Msg::*;
        match *self {
            Tid { epoch, round, tid } => {
                counter32(epoch, "epoch")?;
                counter32(round, "round")?;
                member(peers, tid, "tid")
            }
            Max { epoch, round, max } => {
                counter32(epoch, "epoch")?;
                counter32(round, "round")?;
                member(peers, max, "max")
            }
            Elected { epoch, leader } => {
                counter32(epoch, "epoch")?;
                member(peers, leader, "leader")
            }
        }
    }
}

impl Validate for ring::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            ring::Msg::Election { list, epoch } => {
                counter(*epoch, "epoch")?;
                distinct_members(peers, list.to_vec().iter(), "list")
            }
            ring::Msg::Coordinator {
                members,
                hops: h,
                epoch,
            } => {
                counter(*epoch, "epoch")?;
                hops(peers, *h, "hops")?;
                distinct_members(peers, members.iter(), "members")
            }
        }
    }
}

impl Validate for ring_active_list::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        use ring_active_list::Msg::*;
        match *self {
            Elect { epoch, j } => {
                counter32(epoch, "epoch")?;
                member(peers, j, "j")
            }
            Elected { epoch, coordinator } => {
                counter32(epoch, "epoch")?;
                member(peers, coordinator, "coordinator")
            }
        }
    }
}

impl<M: Validate> Validate for LinkMsg<M> {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            LinkMsg::Data { inc, seq, msg } => {
                counter(*inc, "inc")?;
                counter(*seq, "seq")?;
                msg.validate(peers)
            }
            LinkMsg::Ack { inc, seq } => {
                counter(*inc, "inc")?;
                counter(*seq, "seq")
            }
        }
    }
}

impl<M: Validate> Validate for DetectMsg<M> {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match self {
            DetectMsg::Inner(m) => m.validate(peers),
            DetectMsg::Heartbeat => Ok(()),
        }
    }
}

impl Validate for total_order::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match *self {
            total_order::Msg::Update { ts, payload } => {
                counter(ts, "ts")?;
                counter(payload, "payload")
            }
            total_order::Msg::Ack { update, ts } => {
                member(peers, update.node, "update.node")?;
                counter(update.time, "update.time")?;
                counter(ts, "ts")
            }
        }
    }
}

impl Validate for causal_broadcast::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        let causal_broadcast::Msg::Message { ts, payload } = self;
        per_site(peers, ts.entries().len(), "ts")?;
        counters(ts.entries(), "ts")?;
        counter(*payload, "payload")
    }
}

impl Validate for fifo_broadcast::Msg {
    fn validate(&self, _: &Peers) -> Result<(), Invalid> {
        let fifo_broadcast::Msg::Message { seq, payload } = *self;
        counter(seq, "seq")?;
        counter(payload, "payload")
    }
}

impl Validate for chandy_lamport::Msg {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        match *self {
            // An amount far below u64::MAX: a forged transfer can make money, never overflow
            // a balance.
            chandy_lamport::Msg::Transfer { amount } => counter(amount, "amount"),
            chandy_lamport::Msg::Marker { snapshot } => {
                member(peers, snapshot.initiator, "snapshot.initiator")?;
                counter(snapshot.number, "snapshot.number")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn short_vectors_strangers_repeats_and_huge_counters_are_refused() {
        let peers = Peers::range(3);
        let token = |ln: Vec<u64>, q: &[u32]| {
            suzuki_kasami::Msg::Token(suzuki_kasami::Token {
                ln,
                q: q.iter().map(|&i| NodeId(i)).collect::<VecDeque<_>>(),
            })
        };
        assert!(token(vec![0; 3], &[1, 2]).validate(&peers).is_ok());
        let e = token(vec![0; 2], &[]).validate(&peers).unwrap_err();
        assert_eq!(e.to_string(), "token LN has 2 entries for 3 members");
        let e = token(vec![0; 3], &[7]).validate(&peers).unwrap_err();
        assert_eq!(e.to_string(), "token queue names node 7, not a member");
        let e = token(vec![0; 3], &[1, 1]).validate(&peers).unwrap_err();
        assert_eq!(e.to_string(), "token queue names node 1 twice");
        assert!(token(vec![0, u64::MAX, 0], &[]).validate(&peers).is_err());
        assert!(ricart_agrawala_token::Msg::Token { token: vec![1] }
            .validate(&peers)
            .is_err());
        assert!(lamport::Msg::Request { ts: MAX_COUNTER }
            .validate(&peers)
            .is_ok());
        assert!(lamport::Msg::Request {
            ts: MAX_COUNTER + 1
        }
        .validate(&peers)
        .is_err());
        let wrapped = DetectMsg::Inner(LinkMsg::Data {
            inc: 1,
            seq: 2,
            msg: chang_roberts::Msg::Election {
                uid: NodeId(3),
                hops: 0,
                epoch: 1,
            },
        });
        assert_eq!(
            wrapped.validate(&peers).unwrap_err().to_string(),
            "uid names node 3, not a member"
        );
    }

    #[test]
    fn multicast_and_snapshot_messages_are_checked_too() {
        use distsync_core::snapshot::SnapshotId;
        use distsync_core::{Stamp, VectorClock};
        let peers = Peers::range(3);
        let causal = |v: Vec<u64>| causal_broadcast::Msg::Message {
            ts: VectorClock::from_entries(v),
            payload: 1,
        };
        assert!(causal(vec![1, 0, 0]).validate(&peers).is_ok());
        // A vector one entry short would index past the receiver's own clock.
        assert_eq!(
            causal(vec![1, 0]).validate(&peers).unwrap_err().to_string(),
            "ts has 2 entries for 3 members"
        );
        assert!(causal(vec![0, u64::MAX, 0]).validate(&peers).is_err());
        let ack = |node: u32| total_order::Msg::Ack {
            update: Stamp {
                time: 1,
                node: NodeId(node),
            },
            ts: 2,
        };
        assert!(ack(2).validate(&peers).is_ok());
        assert_eq!(
            ack(9).validate(&peers).unwrap_err().to_string(),
            "update.node names node 9, not a member"
        );
        assert!(fifo_broadcast::Msg::Message {
            seq: u64::MAX,
            payload: 0
        }
        .validate(&peers)
        .is_err());
        let marker = |initiator: u32| chandy_lamport::Msg::Marker {
            snapshot: SnapshotId {
                initiator: NodeId(initiator),
                number: 1,
            },
        };
        assert!(marker(0).validate(&peers).is_ok());
        assert!(marker(3).validate(&peers).is_err());
        assert!(chandy_lamport::Msg::Transfer { amount: u64::MAX }
            .validate(&peers)
            .is_err());
    }
}
