//! What travels inside frames: node-to-node messages, client requests and replies, and their
//! encoding: postcard (serde; variable-length integers, a variant's index before its fields),
//! bounded by the frame size, trailing bytes refused. The encoding is part of the protocol
//! version the handshake negotiates ([`crate::auth::VERSION`]): version 3 is the first in
//! postcard (version 2 spoke bincode 1, which is unmaintained), version 4 the first whose
//! frames are Noise transport messages.

use crate::frame::MAX_FRAME;
use crate::store::Update;
use distsync_core::snapshot::{LocalSnapshot, SnapshotId};
use distsync_core::NodeId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A lock name may be this long at most (bytes).
pub const MAX_NAME: usize = 128;

/// A view of the cluster: who is in it, led by whom, numbered by `epoch`.
///
/// An epoch is `round << 10 | leader` (node ids are below 1024), so two leaders that start a
/// view in the same round still number it differently, and a later round always compares higher.
pub type Epoch = u32;

/// A message from one node to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeerMsg {
    /// "I am alive", sent every `heartbeat` on every link.
    Ping,
    /// A message of the election algorithm (encoded by the algorithm's own type).
    Election(Vec<u8>),
    /// A message of the mutual-exclusion instance for lock `name` in view `epoch`; `token` is the
    /// sender's highest fencing token so far (it orders grants, see `node`).
    Mutex {
        /// The view the message belongs to; messages of other views are dropped.
        epoch: Epoch,
        /// The lock.
        name: String,
        /// The sender's highest fencing token.
        token: u64,
        /// The algorithm's message.
        msg: Vec<u8>,
    },
    /// Leader to all: a view change to `epoch` begins; stop granting and report your holders.
    Prepare {
        /// The new view.
        epoch: Epoch,
    },
    /// Answer to Prepare: the locks this node's clients hold, with their tokens.
    State {
        /// The view being prepared.
        epoch: Epoch,
        /// The last view this node was a member of (0: none). Holds reported by a node that
        /// missed a later view are stale (the lock was handed on without it) and are revoked.
        view: Epoch,
        /// (lock, fencing token) for every lock a local client holds.
        held: Vec<(String, u64)>,
        /// How long (ms) a lease this node confirmed to its last leader may still run: the new
        /// view must not open before it has.
        wait_ms: u64,
    },
    /// Leader to the members: the new view. Holders re-acquire first.
    Commit {
        /// The view.
        epoch: Epoch,
        /// Its members, in the cluster file's order.
        members: Vec<NodeId>,
        /// For each held lock, the member that keeps it.
        holders: Vec<(String, NodeId)>,
    },
    /// Member to leader: it holds `name` again in the new view.
    Reacquired {
        /// The view.
        epoch: Epoch,
        /// The lock.
        name: String,
    },
    /// Answer to a Prepare whose epoch is not above the highest this node has seen: the would-be
    /// leader (e.g. restarted, so it forgot the epochs) must start again above `seen`.
    Stale {
        /// The highest epoch this node has seen.
        seen: Epoch,
    },
    /// A node without a view (it restarted faster than the timeout, or missed a commit) asks
    /// the leader for a view change that lets it in.
    Join,
    /// Leader to the members: every holder is settled; serve waiting clients.
    Open {
        /// The view.
        epoch: Epoch,
    },
    /// Member to leader, every tick: may I go on granting in view `epoch`? The member counts
    /// its lease from when it sent this (a reply that waited in a paused process's buffers
    /// extends nothing).
    Renew {
        /// The member's view.
        epoch: Epoch,
        /// Matches the answer to the request.
        seq: u64,
    },
    /// Leader to member: yes, for `ms` more milliseconds at most (the leader's own lease).
    Renewed {
        /// The view.
        epoch: Epoch,
        /// The request answered.
        seq: u64,
        /// How long the leader's own lease still runs.
        ms: u64,
    },
    /// Leader to members, every tick: is `epoch` still your view? The leader's own lease runs
    /// from when it sent this once every member has said yes.
    Confirm {
        /// The leader's view.
        epoch: Epoch,
        /// Matches the answers to the round.
        seq: u64,
    },
    /// Member to leader: `epoch` is still my view.
    Confirmed {
        /// The view.
        epoch: Epoch,
        /// The round answered.
        seq: u64,
    },
    /// To every peer when the link comes up and whenever it rises: the sender's epoch mark.
    /// Epochs from others are believed only within a bound of what a majority has seen.
    Mark {
        /// The highest epoch the sender has seen.
        seen: Epoch,
    },
    /// A message of the Chandy-Lamport instance: money between the nodes' own accounts, or a
    /// marker (encoded by the algorithm's own type).
    Snapshot(Vec<u8>),
    /// A node's complete part of a snapshot, for the snapshot's initiator.
    Part(Part),
    /// The body of a store update the sender is about to multicast: it travels ahead of the
    /// algorithm's messages on the same (FIFO) link, so that it is here before its delivery.
    Update {
        /// The multicast payload that stands for it.
        payload: u64,
        /// The update.
        update: Update,
    },
    /// A message of the store's multicast instance (encoded by the algorithm's own type).
    Multicast(Vec<u8>),
    /// To a snapshot's initiator: this node's part has waited a heartbeat for the markers of
    /// these nodes (so that a snapshot that times out names the silent node).
    Waiting {
        /// The snapshot.
        snapshot: SnapshotId,
        /// The nodes whose marker has not arrived.
        on: Vec<NodeId>,
    },
    /// The cluster's roster (its nodes and their addresses) as committed in view `epoch` (0:
    /// the cluster file's). A leader sends it before each `Commit` (a membership change is
    /// committed with the view that carries it), and every node to a peer whose link comes up;
    /// a node adopts a roster of a higher epoch than its own (see `node::roster`).
    Roster {
        /// The view that committed it.
        epoch: Epoch,
        /// Every node of the cluster, in roster order: (id, "HOST:PORT").
        nodes: Vec<(NodeId, String)>,
    },
}

/// One node's part of a snapshot: what the Chandy-Lamport file recorded (its account's balance
/// and its incoming channels), and its replica of the store at the same instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// The node.
    pub node: NodeId,
    /// The algorithm's record.
    pub local: LocalSnapshot,
    /// The store replica when the node recorded its state.
    pub replica: ReplicaCut,
}

/// A store replica as a snapshot records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaCut {
    /// How many updates it had applied.
    pub applied: u64,
    /// Its digest then.
    pub digest: u64,
    /// The money in its accounts then.
    pub total: i64,
}

/// A complete global snapshot, as its initiator assembled it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalState {
    /// Which snapshot.
    pub id: SnapshotId,
    /// Every node's part, in cluster-file order.
    pub parts: Vec<Part>,
    /// From the initiator's recording to the last part's arrival, in microseconds.
    pub micros: u64,
}

/// A replica of the store, as `store status` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaStatus {
    /// The node.
    pub node: NodeId,
    /// The multicast algorithm.
    pub multicast: String,
    /// The accounts.
    pub accounts: Vec<(String, i64)>,
    /// How many updates it has applied.
    pub applied: u64,
    /// The payload ids of the updates applied, in order (when asked for).
    pub log: Vec<u64>,
    /// The digest of the accounts.
    pub digest: u64,
    /// The money in the accounts.
    pub total: i64,
    /// Updates multicast here and not yet applied here.
    pub pending: u64,
    /// Updates delivered whose body never arrived (lost with a link that failed).
    pub missing: u64,
    /// Whether the node restarted after its replica had applied updates (lost with the
    /// restart): this replica is not comparable with the others and takes no updates.
    pub lost: bool,
    /// The node's own account (the snapshot bank).
    pub balance: u64,
}

/// A client's request to the node it is connected to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientRequest {
    /// Acquire lock `name`; answered by `Granted` (maybe much later), `Redirect` or `Refused`.
    Lock {
        /// The lock.
        name: String,
    },
    /// Release lock `name`; answered by `Released`.
    Unlock {
        /// The lock.
        name: String,
    },
    /// What this node knows about the cluster; answered by `Status`.
    Status,
    /// Keeps the connection alive; answered by `Pong`.
    Ping,
    /// Release lock `name` without an answer (a dropped guard: nobody waits for one). The node
    /// handles a connection's requests in order, so it takes effect before the next request.
    Release {
        /// The lock.
        name: String,
    },
    /// Keeps the connection alive like `Ping`, and asks how long the node's lease on its view
    /// still runs; answered by `Lease`. A client counts its own lease on what it holds from
    /// when it *sent* this (see docs/net.md, "Client-side leases").
    Renew,
    /// Send `amount` from this node's own account to node `to`'s; answered by `Sent` or
    /// `Refused`.
    Send {
        /// The receiving node.
        to: NodeId,
        /// How much.
        amount: u64,
    },
    /// Start a Chandy-Lamport snapshot here; answered by `Snapshot` once every node's part has
    /// arrived, or `Refused` naming the silent nodes after `timeout_ms`.
    Snapshot {
        /// How long to wait for the parts.
        timeout_ms: u64,
    },
    /// Multicast this store update; answered by `Applied` once this node's replica applied it.
    Update(Update),
    /// This node's replica; answered by `Replica`.
    Replica {
        /// Include the payload ids of every update applied.
        log: bool,
    },
    /// Admin only (a connection of role `Admin`, which proves the node key; refused to a
    /// client): stop this node, or with `restart` make it execute itself again in place (same
    /// pid, same arguments). Answered by `ShuttingDown`, after which the node closes every
    /// connection and stops.
    Shutdown {
        /// Execute itself again instead of exiting.
        restart: bool,
    },
    /// Admin only: which process serves as this node; answered by `Process`.
    Process,
    /// Admin only, to the leader: change the cluster's roster (add or remove a node). The leader
    /// commits it with a view change that a majority of the current roster accepts, and answers
    /// `Roster` once committed; any other node, or a change it cannot make, is `Refused`.
    Membership(MemberChange),
    /// Admin only: replace this node's keys (`distsync cluster rekey`). The node stores them,
    /// accepts the new keys at once and the current ones for `window_ms` more, then only the
    /// new ones (`crate::keys`); answered by `Rekeyed`.
    Rekey {
        /// The new node key.
        secret: String,
        /// The new client key.
        client_secret: String,
        /// How long the current keys are still accepted, in milliseconds.
        window_ms: u64,
    },
}

/// A membership change an admin asks the leader for (`distsync cluster add|remove`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberChange {
    /// Add node `id`, listening at `addr` ("HOST:PORT").
    Add {
        /// The new node's id (not in the roster).
        id: NodeId,
        /// Its address.
        addr: String,
    },
    /// Remove node `id` from the roster.
    Remove {
        /// The node.
        id: NodeId,
    },
}

impl ClientRequest {
    /// Whether only an admin connection may send it.
    pub fn admin_only(&self) -> bool {
        matches!(
            self,
            ClientRequest::Shutdown { .. }
                | ClientRequest::Process
                | ClientRequest::Membership(_)
                | ClientRequest::Rekey { .. }
        )
    }
}

/// A node's reply or notice to a client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientReply {
    /// The lock is yours.
    Granted {
        /// The lock.
        name: String,
        /// The fencing token: larger than every token granted before, for this lock or across
        /// a failover.
        token: u64,
        /// The node that holds it on the client's behalf.
        holder: NodeId,
    },
    /// The lock is released.
    Released {
        /// The lock.
        name: String,
    },
    /// The lock was taken from you (the view changed and another holder was kept); your token is
    /// stale and resources will refuse it.
    Revoked {
        /// The lock.
        name: String,
        /// Why.
        reason: String,
    },
    /// Ask node `node` instead. Nodes of this version do not send it (central's coordinator,
    /// which did, serves its own clients through `colocated`); clients still follow it.
    Redirect {
        /// Where to go.
        node: NodeId,
        /// Why.
        reason: String,
    },
    /// The request cannot be served.
    Refused {
        /// Why.
        reason: String,
    },
    /// Answer to Status.
    Status(NodeStatus),
    /// Answer to Ping.
    Pong,
    /// Answer to Renew: the node's lease on its view runs `ms` milliseconds more at most (0: it
    /// holds none). Until its lease has run out no other node can be granted a lock this node
    /// holds (a view that leaves this node out opens only after it).
    Lease {
        /// What is left of the node's lease.
        ms: u64,
    },
    /// The money left: the balance of the node's own account after the send.
    Sent {
        /// The balance.
        balance: u64,
    },
    /// The snapshot asked for.
    Snapshot(Box<GlobalState>),
    /// The update was applied at this node's replica.
    Applied {
        /// Its multicast payload id.
        payload: u64,
        /// Its position among the updates this replica applied (from 1).
        index: u64,
    },
    /// This node's replica.
    Replica(Box<ReplicaStatus>),
    /// Answer to `Shutdown`: the node is stopping (or restarting).
    ShuttingDown {
        /// Its process id.
        pid: u32,
        /// Whether it executes itself again.
        restart: bool,
    },
    /// Answer to `Process`.
    Process {
        /// The node's process id.
        pid: u32,
        /// The name of its machine.
        host: String,
        /// How long the process has served (since its last start or restart), in milliseconds.
        uptime_ms: u64,
    },
    /// Answer to `Rekey`: the new keys are stored and accepted; the old ones for `window_ms`
    /// more.
    Rekeyed {
        /// How long the old keys are still accepted, in milliseconds.
        window_ms: u64,
    },
    /// Answer to `Membership`: the roster the change committed, in view `epoch`.
    Roster {
        /// The view that committed it.
        epoch: Epoch,
        /// Every node of the cluster: (id, "HOST:PORT").
        nodes: Vec<(NodeId, String)>,
    },
}

/// What a node knows, for `distsync leader` and `distsync cluster status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node's id.
    pub id: NodeId,
    /// The leader its election algorithm believes in.
    pub leader: Option<NodeId>,
    /// Whether an election is under way at this node.
    pub electing: bool,
    /// The view it is in, if any.
    pub epoch: Option<Epoch>,
    /// The view's members.
    pub members: Vec<NodeId>,
    /// Whether the view is open (serving locks).
    pub open: bool,
    /// The locks a local client holds.
    pub holding: Vec<String>,
    /// The mutual-exclusion algorithm.
    pub mutex: String,
    /// The election algorithm.
    pub election: String,
    /// The highest fencing token this node has granted or seen.
    pub max_token: u64,
    /// Whether the node's lease on its view runs (it may grant).
    pub lease: bool,
    /// Grants this node handed straight from a releasing client to another of its clients,
    /// without the algorithm (`[locks] handoff`), since it started.
    pub handoffs: u64,
    /// What keeps this node from serving, if anything the operator must act on (no epoch left
    /// for a new view: its mark is at the last round; or its mark cannot be stored: a full
    /// disk, the file and the error named).
    pub problem: Option<String>,
}

/// A frame whose payload does not decode.
#[derive(Debug)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Encodes a message.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("messages are plain data within the size bound")
}

/// Decodes a message, refusing trailing bytes and anything longer than a frame. A length
/// inside the message that promises more than the bytes there fails when the bytes run out,
/// never allocating past what the bytes can fill (serde preallocates cautiously).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    if bytes.len() > MAX_FRAME {
        return Err(DecodeError(format!(
            "{} bytes, above the frame bound of {MAX_FRAME}",
            bytes.len()
        )));
    }
    let (value, rest) = postcard::take_from_bytes(bytes).map_err(|e| DecodeError(e.to_string()))?;
    if !rest.is_empty() {
        return Err(DecodeError(format!(
            "{} trailing bytes after the message",
            rest.len()
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips() {
        let m = PeerMsg::Mutex {
            epoch: 5 << 10 | 3,
            name: "db".into(),
            token: 1 << 40,
            msg: vec![1, 2, 3],
        };
        assert_eq!(decode::<PeerMsg>(&encode(&m)).unwrap(), m);
        let r = ClientReply::Granted {
            name: "x".into(),
            token: 7,
            holder: NodeId(2),
        };
        assert_eq!(decode::<ClientReply>(&encode(&r)).unwrap(), r);
    }

    #[test]
    fn trailing_and_truncated_bytes_are_refused() {
        let mut b = encode(&ClientRequest::Lock { name: "x".into() });
        assert!(decode::<ClientRequest>(&b[..b.len() - 1]).is_err());
        b.push(0);
        assert!(decode::<ClientRequest>(&b).is_err());
        // A length that promises more than the bytes (a name of 2^32 - 1 bytes) does not
        // allocate it.
        let huge = [0u8, 0xff, 0xff, 0xff, 0xff, 0x0f, b'x'];
        assert!(decode::<ClientRequest>(&huge).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode::<PeerMsg>(&bytes);
            let _ = decode::<ClientRequest>(&bytes);
        }
    }
}
