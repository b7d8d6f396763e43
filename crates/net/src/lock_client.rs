//! A lock client for programs: connect once, take and release many locks over that one
//! authenticated connection.
//!
//! [`LockClient::connect`] opens the connection (with the client file `cluster up` writes, which
//! holds only the client key); [`LockClient::lock`] waits for a lock and returns a [`Guard`]
//! carrying the fencing token; [`LockClient::lock_timeout`] and [`LockClient::try_lock`] give up
//! after a while. A guard releases its lock when dropped (a `Release`, which the node does not
//! answer, written by whoever writes on the connection next: the task's next request if it comes
//! before the task yields, else the keep-alive task, woken by the drop) or explicitly with
//! [`Guard::release`], which waits for the node's answer.
//!
//! The node processes a connection's requests in order, so a `Release` written before the next
//! `Lock` always takes effect first; a dropped guard costs no round trip, and a drop followed by
//! the next `lock` goes out in one write (which lets a node configured with `[locks] handoff`
//! hand the lock from one request to the next without the algorithm).
//!
//! While the program holds locks and does other work, a keep-alive task renews with the node
//! every heartbeat (a node releases the locks of a client silent for three heartbeat timeouts)
//! and notes what the node announced: a lock revoked by a failover shows in [`Guard::lost`], and
//! so does a lapse of the client's own lease clock ([`crate::lease`]), counted from the send time
//! of the last renewal the node answered, which ends before anyone else can be granted the lock. If the
//! connection drops, every guard of it is lost (the node released them) and the next request
//! connects again (when no guard of the old connection is still alive).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use distsync_net::lock_client::LockClient;
//! use std::time::Duration;
//! let cluster = distsync_net::Cluster::load("/tmp/c/client.toml".as_ref())?;
//! let mut locks = LockClient::connect(&cluster).await?;
//! for i in 0..1000 {
//!     let guard = locks.lock("ledger").await?;
//!     // ... write to the resource, giving it guard.token() so it refuses stale holders ...
//!     println!("entry {i}: token {}", guard.token());
//! } // each guard is released when dropped
//! match locks.try_lock("report").await? {
//!     Some(g) => g.release().await?,
//!     None => println!("someone else holds it"),
//! }
//! let g = locks.lock_timeout("deploy", Duration::from_secs(10)).await?;
//! assert!(g.lost().is_none());
//! # Ok(()) }
//! ```
//!
//! `crates/cli/tests/lock_client.rs` runs this against real node processes.

use crate::auth::Role;
use crate::config::Cluster;
use crate::connection::{self, Reader, Writer};
use crate::lease::LeaseClock;
use crate::wire::{ClientReply, ClientRequest, MAX_NAME};
use distsync_core::NodeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex as StdMutex, Weak};
use std::time::Duration;
use tokio::sync::{Mutex, Notify};

/// How long the client waits to connect to one node.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How many redirects one request follows.
pub const MAX_REDIRECTS: usize = 8;

/// What went wrong, naming the node, the lock or the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// No node could be connected to (each node's reason, in the order tried).
    Unreachable(Vec<(NodeId, String)>),
    /// The connection to this node failed or closed; the node released what this client held.
    Connection {
        /// The node.
        node: NodeId,
        /// What happened.
        why: String,
    },
    /// The node refused the request (bad name, the algorithm cannot run in its view, ...).
    Refused {
        /// The node.
        node: NodeId,
        /// The lock.
        name: String,
        /// The node's reason.
        reason: String,
    },
    /// The lock was not acquired within the time given (the request was withdrawn).
    Timeout {
        /// The lock.
        name: String,
        /// The wait.
        after: Duration,
    },
    /// The node sends this client elsewhere, but guards of this connection are still alive, so
    /// it cannot move. (Nodes of this version serve every client where it connected: central's
    /// coordinator, which used to redirect, serves its own through `colocated`.)
    Redirected {
        /// The node connected to.
        from: NodeId,
        /// Where the node says to go.
        to: NodeId,
        /// The node's reason.
        reason: String,
    },
    /// A bad argument (a lock name of 0 or more than 128 bytes, an unknown node).
    Invalid(String),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Unreachable(tried) => {
                write!(f, "no node could be reached:")?;
                for (n, why) in tried {
                    write!(f, " node {n}: {why};")?;
                }
                Ok(())
            }
            LockError::Connection { node, why } => write!(f, "node {node}: {why}"),
            LockError::Refused { node, name, reason } => {
                write!(f, "node {node} refused lock {name:?}: {reason}")
            }
            LockError::Timeout { name, after } => {
                write!(f, "lock {name:?} not acquired within {after:?}")
            }
            LockError::Redirected { from, to, reason } => write!(
                f,
                "node {from} redirects to node {to} ({reason}), but guards of this connection are still held"
            ),
            LockError::Invalid(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for LockError {}

struct Conn {
    node: NodeId,
    reader: Reader,
    writer: Writer,
}

/// What the guards, the keep-alive task and the client share.
struct Shared {
    heartbeat: Duration,
    /// The connection, `None` once it failed.
    conn: Mutex<Option<Conn>>,
    /// Locks whose guards were dropped while the connection was busy: unlocked by whoever
    /// takes the connection next.
    unlock: StdMutex<Vec<String>>,
    wake: Notify,
    /// Per lock name: the token held through this connection and, once lost, why.
    held: StdMutex<HashMap<String, (u64, Option<String>)>>,
    /// This client's own lease clock ([`crate::lease`]): every keep-alive is a `Renew`.
    lease: StdMutex<LeaseClock>,
}

impl Shared {
    fn forget(&self, name: &str) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
    }

    /// A `Renew` goes out now.
    fn renewing(&self) {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sent(tokio::time::Instant::now());
    }

    /// Why lock `name` is lost, if it is: the node said so, the connection failed, or this
    /// client's lease clock has lapsed.
    fn lost(&self, name: &str) -> Option<String> {
        let said = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|h| h.1.clone())?;
        said.or_else(|| {
            let now = tokio::time::Instant::now();
            let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner());
            lease.lapsed(now).then(|| lease.why(now))
        })
    }

    /// Notes a node's notice or a reply nobody waits for.
    fn note(&self, reply: &ClientReply) {
        if let ClientReply::Lease { ms } = reply {
            self.lease
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .answered(*ms);
        }
        if let ClientReply::Revoked { name, reason } = reply {
            if let Some(h) = self
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_mut(name)
            {
                h.1 = Some(format!("revoked: {reason}"));
            }
        }
    }

    /// The connection failed: every lock held through it is lost.
    fn broken(&self, why: &str) {
        for h in self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values_mut()
        {
            h.1.get_or_insert_with(|| format!("the connection failed: {why}"));
        }
    }

    /// After a request let go of the connection: releases of guards dropped too late for it to
    /// write are for the keep-alive task (which does not wait while a request is in progress).
    fn after_use(&self) {
        if !self
            .unlock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            self.wake.notify_one();
        }
    }

    fn take_unlocks(&self) -> Vec<ClientRequest> {
        std::mem::take(&mut *self.unlock.lock().unwrap_or_else(|e| e.into_inner()))
            .into_iter()
            .map(|name| ClientRequest::Release { name })
            .collect()
    }
}

/// A persistent, authenticated connection to one node of a cluster, for taking many locks.
///
/// Requests go one at a time (`&mut self`); guards may outlive the borrow and be held together
/// (take `a` then `b`, in a fixed order to avoid deadlocks, as with any locks).
pub struct LockClient {
    cluster: Cluster,
    shared: Arc<Shared>,
}

impl LockClient {
    /// Connects to the node of `cluster` that grants locks in the fewest hops: with an algorithm
    /// that has a coordinator (central), the coordinator's node, which is the leader and serves
    /// its own clients without a message on the wire (`colocated`); with the others, any node
    /// (they are tried in a random order). A client that holds nothing follows the leader anyway
    /// only here, at connection: if the leader changes later it stays where it is (every node
    /// serves locks; the coordinator's node only saves hops).
    pub async fn connect(cluster: &Cluster) -> Result<LockClient, LockError> {
        let mut client = Self::connect_first(cluster, None).await?;
        if has_coordinator(cluster) {
            client.move_to_leader().await;
        }
        Ok(client)
    }

    /// Asks the node connected to who leads and, if another node does and answers, moves there
    /// (keeping the connection it has otherwise).
    async fn move_to_leader(&mut self) {
        let mut slot = self.shared.conn.lock().await;
        let Some(conn) = slot.as_mut() else { return };
        let at = conn.node;
        let leader = match tokio::time::timeout(CONNECT_TIMEOUT, ask_leader(conn)).await {
            Ok(Ok(Some(l))) if l != at && self.cluster.peers.contains(l) => l,
            _ => return,
        };
        if let Ok(c) = open(&self.cluster, leader).await {
            *slot = Some(c);
        }
    }

    /// Connects to node `first` if it answers, else to another.
    pub async fn connect_to(cluster: &Cluster, first: NodeId) -> Result<LockClient, LockError> {
        Self::connect_first(cluster, Some(first)).await
    }

    async fn connect_first(
        cluster: &Cluster,
        first: Option<NodeId>,
    ) -> Result<LockClient, LockError> {
        let conn = open_any(cluster, first).await?;
        let shared = Arc::new(Shared {
            heartbeat: cluster.file.timeouts.heartbeat,
            conn: Mutex::new(Some(conn)),
            unlock: StdMutex::new(Vec::new()),
            wake: Notify::new(),
            held: StdMutex::new(HashMap::new()),
            lease: StdMutex::new(LeaseClock::default()),
        });
        tokio::spawn(keep_alive(Arc::downgrade(&shared)));
        Ok(LockClient {
            cluster: cluster.clone(),
            shared,
        })
    }

    /// A watch on the locks held through this client, to learn of a loss without polling
    /// every guard: the node revoked one, the connection failed, or the lease clock lapsed.
    pub fn loss_watch(&self) -> LossWatch {
        LossWatch {
            shared: Arc::downgrade(&self.shared),
            told: HashMap::new(),
        }
    }

    /// The node this client is connected to (`None` after the connection failed).
    pub async fn node(&self) -> Option<NodeId> {
        self.shared.conn.lock().await.as_ref().map(|c| c.node)
    }

    /// Waits for lock `name` as long as it takes.
    pub async fn lock(&mut self, name: &str) -> Result<Guard, LockError> {
        self.acquire(name, None)
            .await
            .map(|g| g.expect("no deadline"))
    }

    /// Waits for lock `name` at most `wait`; [`LockError::Timeout`] after that.
    pub async fn lock_timeout(&mut self, name: &str, wait: Duration) -> Result<Guard, LockError> {
        self.acquire(name, Some(wait))
            .await?
            .ok_or_else(|| LockError::Timeout {
                name: name.to_string(),
                after: wait,
            })
    }

    /// Takes lock `name` if it can be had within one heartbeat timeout (an uncontended lock is
    /// granted in well under a millisecond; a distributed lock cannot tell "held elsewhere"
    /// without asking the others, so this is flock's `-n` as nearly as it can be); `None` if not.
    pub async fn try_lock(&mut self, name: &str) -> Result<Option<Guard>, LockError> {
        let wait = self.cluster.file.timeouts.heartbeat_timeout;
        self.acquire(name, Some(wait)).await
    }

    async fn acquire(
        &mut self,
        name: &str,
        wait: Option<Duration>,
    ) -> Result<Option<Guard>, LockError> {
        let r = self.acquire_on_connection(name, wait).await;
        self.shared.after_use();
        r
    }

    async fn acquire_on_connection(
        &mut self,
        name: &str,
        wait: Option<Duration>,
    ) -> Result<Option<Guard>, LockError> {
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(LockError::Invalid(format!(
                "lock name {name:?}: a lock name has 1 to {MAX_NAME} bytes"
            )));
        }
        if let Some((_, None)) = self
            .shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return Err(LockError::Invalid(format!(
                "lock {name:?} is already held through this connection (drop its guard first)"
            )));
        }
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        let shared = self.shared.clone();
        let mut slot = shared.conn.lock().await;
        let mut redirects = 0;
        let mut first = None;
        loop {
            if slot.is_none() {
                if self.holds_any() {
                    return Err(LockError::Connection {
                        node: first.unwrap_or(NodeId(0)),
                        why: "the connection failed and guards of it are still alive; drop them to reconnect".into(),
                    });
                }
                shared.take_unlocks();
                *slot = Some(open_any(&self.cluster, first).await?);
                // Renewals in flight on the dead connection will never be answered.
                *shared.lease.lock().unwrap_or_else(|e| e.into_inner()) = LeaseClock::default();
            }
            let conn = slot.as_mut().expect("connected");
            let node = conn.node;
            let mut msgs = shared.take_unlocks();
            msgs.push(ClientRequest::Lock {
                name: name.to_string(),
            });
            // Answered right after a grant that comes at once: the guard's lease.
            msgs.push(ClientRequest::Renew);
            shared.renewing();
            if let Err(e) = conn.writer.send_many(&msgs).await {
                let why = e.to_string();
                *slot = None;
                shared.broken(&why);
                return Err(LockError::Connection { node, why });
            }
            let outcome = wait_grant(conn, &shared, name, deadline).await;
            match outcome {
                Ok(Some(ClientReply::Granted { token, holder, .. })) => {
                    // The node grants only while its own lease runs: the answer to a renewal
                    // in flight gives this client's lease.
                    let limit = self.cluster.file.timeouts.heartbeat_timeout;
                    let conn = slot.as_mut().expect("connected");
                    if let Err(why) = settle_lease(conn, &shared, limit).await {
                        *slot = None;
                        shared.broken(&why);
                        return Err(LockError::Connection { node, why });
                    }
                    shared
                        .held
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(name.to_string(), (token, None));
                    return Ok(Some(Guard {
                        shared: shared.clone(),
                        name: name.to_string(),
                        token,
                        holder,
                        done: false,
                    }));
                }
                Ok(Some(ClientReply::Redirect { node: to, reason })) => {
                    if self.holds_any() {
                        return Err(LockError::Redirected {
                            from: node,
                            to,
                            reason,
                        });
                    }
                    if redirects >= MAX_REDIRECTS {
                        return Err(LockError::Connection {
                            node,
                            why: format!("more than {MAX_REDIRECTS} redirects (last: {reason})"),
                        });
                    }
                    redirects += 1;
                    *slot = None;
                    first = Some(to);
                }
                Ok(Some(ClientReply::Refused { reason })) => {
                    return Err(LockError::Refused {
                        node,
                        name: name.to_string(),
                        reason,
                    })
                }
                Ok(Some(other)) => {
                    return Err(LockError::Connection {
                        node,
                        why: format!("unexpected reply {other:?}"),
                    })
                }
                Ok(None) => {
                    // Timed out: withdraw the request. The node answers `Released` (after a
                    // `Granted` if the grant crossed the withdrawal).
                    let conn = slot.as_mut().expect("connected");
                    let r = withdraw(conn, &shared, name).await;
                    if let Err(why) = r {
                        *slot = None;
                        shared.broken(&why);
                        return Err(LockError::Connection { node, why });
                    }
                    return Ok(None);
                }
                Err(why) => {
                    *slot = None;
                    shared.broken(&why);
                    return Err(LockError::Connection { node, why });
                }
            }
        }
    }

    fn holds_any(&self) -> bool {
        !self
            .shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }
}

/// Reads until the answer to a `Lock` for `name` (granted, redirected, refused), pinging every
/// heartbeat while it waits; `Ok(None)` at the deadline.
async fn wait_grant(
    conn: &mut Conn,
    shared: &Shared,
    name: &str,
    deadline: Option<tokio::time::Instant>,
) -> Result<Option<ClientReply>, String> {
    let mut next_ping = tokio::time::Instant::now() + shared.heartbeat;
    loop {
        let until = match deadline {
            Some(d) if d < next_ping => d,
            _ => next_ping,
        };
        tokio::select! {
            r = conn.reader.recv::<ClientReply>() => match r {
                Ok(Some(reply)) => match reply {
                    ClientReply::Granted { name: ref n, .. } if n == name => return Ok(Some(reply)),
                    ClientReply::Redirect { .. } | ClientReply::Refused { .. } => return Ok(Some(reply)),
                    other => shared.note(&other),
                },
                Ok(None) => return Err("the node closed the connection".into()),
                Err(e) => return Err(e.to_string()),
            },
            _ = shared.wake.notified() => send_unlocks(conn, shared).await?,
            _ = tokio::time::sleep_until(until) => {
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    return Ok(None);
                }
                shared.renewing();
                conn.writer.send(&ClientRequest::Renew).await.map_err(|e| e.to_string())?;
                next_ping = tokio::time::Instant::now() + shared.heartbeat;
            }
        }
    }
}

/// After a grant: reads until this client's lease runs, at most `limit`, renewing every
/// heartbeat meanwhile (the renewals answered before the grant may all predate it: a grant
/// after a view change, when the node had no lease).
async fn settle_lease(conn: &mut Conn, shared: &Shared, limit: Duration) -> Result<(), String> {
    let lapsed = || {
        shared
            .lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lapsed(tokio::time::Instant::now())
    };
    if !lapsed() {
        return Ok(());
    }
    let r = tokio::time::timeout(limit, async {
        let mut beat = tokio::time::interval(shared.heartbeat);
        beat.tick().await;
        while lapsed() {
            tokio::select! {
                r = conn.reader.recv::<ClientReply>() => match r {
                    Ok(Some(reply)) => shared.note(&reply),
                    Ok(None) => return Err("the node closed the connection".to_string()),
                    Err(e) => return Err(e.to_string()),
                },
                _ = beat.tick() => {
                    shared.renewing();
                    conn.writer
                        .send(&ClientRequest::Renew)
                        .await
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    })
    .await;
    r.unwrap_or(Ok(()))
}

/// Withdraws a `Lock` request for `name` that timed out and reads until the node confirms.
async fn withdraw(conn: &mut Conn, shared: &Shared, name: &str) -> Result<(), String> {
    conn.writer
        .send(&ClientRequest::Unlock {
            name: name.to_string(),
        })
        .await
        .map_err(|e| e.to_string())?;
    wait_released(conn, shared, name).await
}

/// Sends the unlocks that guards dropped while this connection was busy.
async fn send_unlocks(conn: &mut Conn, shared: &Shared) -> Result<(), String> {
    let msgs = shared.take_unlocks();
    if !msgs.is_empty() {
        conn.writer
            .send_many(&msgs)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

async fn wait_released(conn: &mut Conn, shared: &Shared, name: &str) -> Result<(), String> {
    loop {
        tokio::select! {
            r = conn.reader.recv::<ClientReply>() => match r {
                Ok(Some(ClientReply::Released { name: n })) if n == name => return Ok(()),
                Ok(Some(other)) => shared.note(&other),
                Ok(None) => return Err("the node closed the connection".into()),
                Err(e) => return Err(e.to_string()),
            },
            _ = shared.wake.notified() => send_unlocks(conn, shared).await?,
        }
    }
}

/// Whether the cluster's lock algorithm has a node that coordinates (one that does not compete
/// when the algorithm runs alone: central's coordinator, the view's leader).
fn has_coordinator(cluster: &Cluster) -> bool {
    crate::machine::mutex_kind(&cluster.file.mutex).is_some_and(|kind| {
        let params = cluster.params();
        (kind.competitors)(&cluster.peers, &params).len() < cluster.peers.len()
    })
}

/// The leader the node connected to knows of (a fresh connection: nothing else is in flight).
async fn ask_leader(conn: &mut Conn) -> Result<Option<NodeId>, String> {
    conn.writer
        .send(&ClientRequest::Status)
        .await
        .map_err(|e| e.to_string())?;
    loop {
        match conn.reader.recv::<ClientReply>().await {
            Ok(Some(ClientReply::Status(s))) => return Ok(s.leader),
            Ok(Some(_)) => {}
            Ok(None) => return Err("the node closed the connection".into()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Connects to `first` (if given) then the other nodes, from a random one on.
async fn open_any(cluster: &Cluster, first: Option<NodeId>) -> Result<Conn, LockError> {
    let ids = cluster.peers.ids();
    if let Some(n) = first {
        if !cluster.peers.contains(n) {
            return Err(LockError::Invalid(format!(
                "{} has no node with id {n} (ids: {ids:?})",
                cluster.origin
            )));
        }
    }
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| LockError::Invalid(e.to_string()))?;
    let start = u32::from_le_bytes(b) as usize % ids.len().max(1);
    let mut order: Vec<NodeId> = first.into_iter().collect();
    order.extend(
        (0..ids.len())
            .map(|i| ids[(start + i) % ids.len()])
            .filter(|&n| Some(n) != first),
    );
    let mut tried = Vec::new();
    for node in order {
        match open(cluster, node).await {
            Ok(c) => return Ok(c),
            Err(why) => tried.push((node, why)),
        }
    }
    Err(LockError::Unreachable(tried))
}

async fn open(cluster: &Cluster, node: NodeId) -> Result<Conn, String> {
    let addr = cluster.addr_of(node).expect("a node of the cluster");
    // Over the node's Unix socket when it runs on this machine (`transport`), else TCP.
    let stream = crate::transport::dial(cluster, node, addr, CONNECT_TIMEOUT)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => {
                format!("no answer from {addr} within {CONNECT_TIMEOUT:?}")
            }
            _ => format!("cannot connect to {addr}: {e}"),
        })?;
    let (reader, writer) = connection::initiate(stream, cluster.client_secret(), Role::Client)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Conn {
        node,
        reader,
        writer,
    })
}

/// Pings every heartbeat while the client or a guard lives, writes the unlocks of guards
/// dropped while the connection was busy, and notes what the node announces.
async fn keep_alive(shared: Weak<Shared>) {
    loop {
        let (heartbeat, wake) = {
            let Some(s) = shared.upgrade() else { return };
            (s.heartbeat, Arc::clone(&s))
        };
        let woken = tokio::select! {
            _ = wake.wake.notified() => true,
            _ = tokio::time::sleep(heartbeat) => false,
        };
        drop(wake);
        let Some(s) = shared.upgrade() else { return };
        // A request in progress has the connection: it writes the releases itself (it listens
        // for the same wake-up) and pings while it waits. Not queueing for the connection
        // behind it also leaves it to the task's next request, which then writes a dropped
        // guard's release and its own request in one write.
        let Ok(mut slot) = s.conn.try_lock() else {
            continue;
        };
        let Some(conn) = slot.as_mut() else { continue };
        let mut msgs = s.take_unlocks();
        if !woken {
            s.renewing();
            msgs.push(ClientRequest::Renew);
        }
        let mut failed = conn
            .writer
            .send_many(&msgs)
            .await
            .err()
            .map(|e| e.to_string());
        // Read what has already arrived (Pong, Released, Revoked), without waiting.
        while failed.is_none() {
            match conn.reader.try_recv::<ClientReply>() {
                Ok(None) => break,
                Ok(Some(r)) => s.note(&r),
                Err(e) => failed = Some(e.to_string()),
            }
        }
        if let Some(why) = failed {
            *slot = None;
            s.broken(&why);
        }
    }
}

/// Which locks of a [`LockClient`] were lost ([`LockClient::loss_watch`]).
pub struct LossWatch {
    shared: Weak<Shared>,
    /// Locks already reported, with the token of the grant reported (a lock taken again is
    /// reported again when that grant is lost).
    told: HashMap<String, u64>,
}

impl LossWatch {
    /// The locks held through the client that were lost since the last call (each grant
    /// reported once), with why; empty once the client is gone.
    pub fn newly_lost(&mut self) -> Vec<(String, String)> {
        let Some(shared) = self.shared.upgrade() else {
            return Vec::new();
        };
        let held: Vec<(String, u64)> = shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(n, h)| (n.clone(), h.0))
            .collect();
        self.told
            .retain(|n, t| held.iter().any(|(h, token)| h == n && token == t));
        let mut out = Vec::new();
        for (name, token) in held {
            if self.told.contains_key(&name) {
                continue;
            }
            if let Some(why) = shared.lost(&name) {
                self.told.insert(name.clone(), token);
                out.push((name, why));
            }
        }
        out.sort();
        out
    }
}

/// A lock held through a [`LockClient`]'s connection; released when dropped.
pub struct Guard {
    shared: Arc<Shared>,
    name: String,
    token: u64,
    holder: NodeId,
    done: bool,
}

impl Guard {
    /// The fencing token of this grant: larger than every token granted before it, across
    /// failovers and restarts. Give it to the resource so it can refuse stale holders.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node holding the lock for this client.
    pub fn holder(&self) -> NodeId {
        self.holder
    }

    /// Why the lock was lost (revoked by a failover, the connection failed), if it was, as far
    /// as this client has heard: the keep-alive task reads the node's notices every heartbeat.
    ///
    /// It also says so as soon as this client's own lease clock lapses ([`crate::lease`]):
    /// every keep-alive asks the node how long its lease on its view still runs, counted from
    /// when the request was sent, and until that time nobody else can be granted the lock. A
    /// guard whose lease has lapsed may still be held (the node may just be slow to answer),
    /// but nothing says so any more: act as if it were lost.
    pub fn lost(&self) -> Option<String> {
        self.shared.lost(&self.name)
    }

    /// Releases the lock and waits for the node to confirm.
    pub async fn release(mut self) -> Result<(), LockError> {
        let shared = self.shared.clone();
        let r = self.release_on_connection().await;
        shared.after_use();
        r
    }

    async fn release_on_connection(&mut self) -> Result<(), LockError> {
        self.done = true;
        self.shared.forget(&self.name);
        let mut slot = self.shared.conn.lock().await;
        let Some(conn) = slot.as_mut() else {
            // The connection failed: the node released the lock when it saw it drop.
            return Ok(());
        };
        let node = conn.node;
        let mut msgs = self.shared.take_unlocks();
        msgs.push(ClientRequest::Unlock {
            name: self.name.clone(),
        });
        let r = match conn.writer.send_many(&msgs).await {
            Ok(()) => wait_released(conn, &self.shared, &self.name).await,
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = r {
            *slot = None;
            self.shared.broken(&why);
            return Err(LockError::Connection { node, why });
        }
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.shared.forget(&self.name);
        // Whoever writes on the connection next writes the `Release` (no answer) ahead of its
        // own request: the next `lock` of this task if it comes before the task yields (then
        // both go in one write, and the node can hand the lock from one request to the next),
        // else the keep-alive task, woken now, or a request in progress.
        self.shared
            .unlock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(std::mem::take(&mut self.name));
        // Every waiter (a request waiting for its answer writes it at once), and a permit for
        // the keep-alive task if it is not waiting yet.
        self.shared.wake.notify_waiters();
        self.shared.wake.notify_one();
    }
}
