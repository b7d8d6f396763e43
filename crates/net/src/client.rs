//! The client side of the client protocol: connect to a node, take a lock (following redirects),
//! run a command while holding it, ask nodes who leads.
//!
//! A client keeps its connection alive with a `Ping` every heartbeat; a node closes a client
//! connection that stays silent for three heartbeat timeouts and releases what it held, so a
//! client that dies (or whose machine does) loses its lock instead of blocking everyone.

use crate::auth::Role;
use crate::config::Cluster;
use crate::connection::{self, ConnError, Reader, Writer};
use crate::wire::{ClientReply, ClientRequest, NodeStatus};
use distsync_core::NodeId;
use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::net::TcpStream;

/// How long a client waits to connect to one node.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How many redirects a lock request follows.
pub const MAX_REDIRECTS: usize = 8;

/// Why a client request failed.
#[derive(Debug)]
pub enum ClientError {
    /// The node could not be reached or the connection failed.
    Connection(NodeId, String),
    /// The node refused the request.
    Refused(NodeId, String),
    /// No node could serve the request.
    Unavailable(String),
    /// The command could not be started.
    Spawn(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connection(n, e) => write!(f, "node {n}: {e}"),
            ClientError::Refused(n, e) => write!(f, "node {n} refused: {e}"),
            ClientError::Unavailable(e) => write!(f, "{e}"),
            ClientError::Spawn(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// An authenticated connection to one node.
pub struct Client {
    /// The node.
    pub node: NodeId,
    reader: Reader,
    writer: Writer,
}

impl Client {
    /// Connects to node `node` of `cluster` and proves the secret.
    pub async fn connect(cluster: &Cluster, node: NodeId) -> Result<Client, ClientError> {
        let addr = cluster
            .addr_of(node)
            .ok_or_else(|| ClientError::Unavailable(format!("no node has id {node}")))?;
        let fail = |e: String| ClientError::Connection(node, e);
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| fail(format!("no answer from {addr}")))?
            .map_err(|e| fail(format!("cannot connect to {addr}: {e}")))?;
        let (reader, writer) = connection::initiate(stream, cluster.secret(), Role::Client)
            .await
            .map_err(|e| fail(e.to_string()))?;
        Ok(Client {
            node,
            reader,
            writer,
        })
    }

    /// Sends a request.
    pub async fn send(&mut self, req: &ClientRequest) -> Result<(), ClientError> {
        let node = self.node;
        self.writer
            .send(req)
            .await
            .map_err(|e| ClientError::Connection(node, e.to_string()))
    }

    /// The node's next reply; an error when the connection ended.
    pub async fn recv(&mut self) -> Result<ClientReply, ClientError> {
        let node = self.node;
        match self.reader.recv::<ClientReply>().await {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(ClientError::Connection(
                node,
                "the node closed the connection".into(),
            )),
            Err(e) => Err(ClientError::Connection(node, describe(e))),
        }
    }

    /// The node's status.
    pub async fn status(&mut self) -> Result<NodeStatus, ClientError> {
        self.send(&ClientRequest::Status).await?;
        loop {
            if let ClientReply::Status(s) = self.recv().await? {
                return Ok(s);
            }
        }
    }
}

fn describe(e: ConnError) -> String {
    e.to_string()
}
/// What every node answered (or why it did not), in cluster-file order. The nodes are asked
/// concurrently, each within `timeout`.
pub async fn statuses(
    cluster: &Cluster,
    timeout: Duration,
) -> Vec<(NodeId, Result<NodeStatus, String>)> {
    let mut tasks = Vec::new();
    for &id in cluster.peers.ids() {
        let cluster = cluster.clone();
        tasks.push(tokio::spawn(async move {
            let r = tokio::time::timeout(timeout, async {
                let mut c = Client::connect(&cluster, id).await?;
                c.status().await
            })
            .await;
            match r {
                Ok(Ok(s)) => Ok(s),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {timeout:?}")),
            }
        }));
    }
    let mut out = Vec::new();
    for (&id, t) in cluster.peers.ids().iter().zip(tasks) {
        out.push((id, t.await.unwrap_or_else(|e| Err(e.to_string()))));
    }
    out
}

/// A lock held through a connection.
pub struct Held {
    /// The connection; dropping it releases the lock.
    pub client: Client,
    /// The lock.
    pub name: String,
    /// The fencing token of this grant.
    pub token: u64,
    /// The node holding it for us.
    pub holder: NodeId,
}

/// Takes lock `name`, trying `first` (or a random node) then the others, following redirects.
/// Pings the node every `heartbeat` while waiting. `timeout` bounds the whole wait.
pub async fn acquire(
    cluster: &Cluster,
    first: Option<NodeId>,
    name: &str,
    timeout: Option<Duration>,
) -> Result<Held, ClientError> {
    let work = acquire_inner(cluster, first, name);
    match timeout {
        Some(t) => tokio::time::timeout(t, work).await.map_err(|_| {
            ClientError::Unavailable(format!("lock {name:?} not acquired within {t:?}"))
        })?,
        None => work.await,
    }
}

async fn acquire_inner(
    cluster: &Cluster,
    first: Option<NodeId>,
    name: &str,
) -> Result<Held, ClientError> {
    let ids = cluster.peers.ids();
    let start = match first {
        Some(n) => cluster
            .peers
            .position(n)
            .ok_or_else(|| ClientError::Unavailable(format!("no node has id {n}")))?,
        None => {
            let mut b = [0u8; 4];
            getrandom::getrandom(&mut b).map_err(|e| ClientError::Unavailable(e.to_string()))?;
            u32::from_le_bytes(b) as usize % ids.len()
        }
    };
    let mut order: Vec<NodeId> = (0..ids.len())
        .map(|i| ids[(start + i) % ids.len()])
        .collect();
    let heartbeat = cluster.file.timeouts.heartbeat;
    let mut redirects = 0;
    let mut errors = Vec::new();
    while let Some(node) = (!order.is_empty()).then(|| order.remove(0)) {
        let mut client = match Client::connect(cluster, node).await {
            Ok(c) => c,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        if let Err(e) = client
            .send(&ClientRequest::Lock {
                name: name.to_string(),
            })
            .await
        {
            errors.push(e.to_string());
            continue;
        }
        let mut beat = tokio::time::interval(heartbeat);
        let outcome = loop {
            tokio::select! {
                r = client.recv() => match r {
                    Ok(ClientReply::Pong) => {}
                    r => break r,
                },
                _ = beat.tick() => if let Err(e) = client.send(&ClientRequest::Ping).await {
                    break Err(e);
                },
            }
        };
        match outcome {
            Ok(ClientReply::Granted { token, holder, .. }) => {
                return Ok(Held {
                    client,
                    name: name.to_string(),
                    token,
                    holder,
                })
            }
            Ok(ClientReply::Redirect { node: to, reason }) if redirects < MAX_REDIRECTS => {
                redirects += 1;
                tracing::debug!("redirected to node {to}: {reason}");
                order.retain(|&n| n != to);
                order.insert(0, to);
            }
            Ok(ClientReply::Refused { reason }) => return Err(ClientError::Refused(node, reason)),
            Ok(other) => errors.push(format!("node {node}: unexpected reply {other:?}")),
            Err(e) => {
                // The node went away while we waited: try another one.
                errors.push(e.to_string());
                order.push(node);
                if errors.len() > 3 * ids.len() {
                    break;
                }
                tokio::time::sleep(heartbeat).await;
            }
        }
    }
    Err(ClientError::Unavailable(format!(
        "could not acquire lock {name:?}: {}",
        errors.join("; ")
    )))
}

/// How a locked command ended.
pub struct RunOutcome {
    /// The command's exit status.
    pub status: ExitStatus,
    /// Set when the lock was lost while the command ran (revoked, or the node went away).
    pub lost: Option<String>,
}

/// Runs `command` while holding `held`: the command sees `DISTSYNC_FENCING_TOKEN`,
/// `DISTSYNC_HOLDER` (the node id) and `DISTSYNC_LOCK` in its environment. The lock is released
/// when the command exits, whatever its status.
pub async fn run_locked(
    mut held: Held,
    program: &str,
    args: &[String],
    heartbeat: Duration,
) -> Result<RunOutcome, ClientError> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env("DISTSYNC_FENCING_TOKEN", held.token.to_string())
        .env("DISTSYNC_HOLDER", held.holder.to_string())
        .env("DISTSYNC_LOCK", &held.name)
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| ClientError::Spawn(format!("cannot run {program:?}: {e}")))?;
    let mut lost = None;
    let mut beat = tokio::time::interval(heartbeat);
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.map_err(|e| ClientError::Spawn(e.to_string()))?,
            r = held.client.recv(), if lost.is_none() => match r {
                Ok(ClientReply::Revoked { reason, .. }) => lost = Some(format!("revoked: {reason}")),
                Ok(_) => {}
                Err(e) => lost = Some(e.to_string()),
            },
            _ = beat.tick(), if lost.is_none() => {
                if let Err(e) = held.client.send(&ClientRequest::Ping).await {
                    lost = Some(e.to_string());
                }
            }
        }
    };
    if lost.is_none() {
        let name = held.name.clone();
        let _ = held.client.send(&ClientRequest::Unlock { name }).await;
        // Wait briefly for the acknowledgement; dropping the connection releases anyway.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Ok(r) = held.client.recv().await {
                if matches!(r, ClientReply::Released { .. }) {
                    break;
                }
            }
        })
        .await;
    }
    Ok(RunOutcome { status, lost })
}
