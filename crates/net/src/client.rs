//! The client side of the client protocol: connect to a node, take a lock (following redirects),
//! run a command while holding it, ask nodes who leads.
//!
//! A client keeps its connection alive with a `Renew` every heartbeat; a node closes a client
//! connection that stays silent for three heartbeat timeouts and releases what it held, so a
//! client that dies (or whose machine does) loses its lock instead of blocking everyone. The
//! answers (`Lease`) run the client's own lease clock ([`crate::lease`]): when it lapses the
//! command is stopped.

use crate::auth::Role;
use crate::config::Cluster;
use crate::connection::{self, ConnError, Reader, Writer};
use crate::lease::LeaseClock;
use crate::wire::{ClientReply, ClientRequest, NodeStatus};
use distsync_core::NodeId;
use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

/// How long a client waits to connect to one node.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Ends the message of a connection refused by the node's machine: no process listens at the
/// node's address (the node is not running), as opposed to a node that does not answer.
pub const NOT_LISTENING: &str = "nothing listens there";
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
        Client::connect_as(cluster, node, Role::Client).await
    }

    /// Connects to node `node` as an admin, proving the node key: the cluster file's, never a
    /// client file's (which has no node key; refused here, naming the file).
    pub async fn connect_admin(cluster: &Cluster, node: NodeId) -> Result<Client, ClientError> {
        cluster
            .node_key("an admin request")
            .map_err(|e| ClientError::Unavailable(e.to_string()))?;
        Client::connect_as(cluster, node, Role::Admin).await
    }

    async fn connect_as(
        cluster: &Cluster,
        node: NodeId,
        role: Role,
    ) -> Result<Client, ClientError> {
        let addr = cluster
            .addr_of(node)
            .ok_or_else(|| ClientError::Unavailable(format!("no node has id {node}")))?;
        let fail = |e: String| ClientError::Connection(node, e);
        // Over the node's Unix socket when it runs on this machine (`transport`), else TCP.
        let stream = crate::transport::dial(cluster, node, addr, CONNECT_TIMEOUT)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => fail(format!("no answer from {addr}")),
                std::io::ErrorKind::ConnectionRefused => {
                    fail(format!("cannot connect to {addr}: {e}: {NOT_LISTENING}"))
                }
                _ => fail(format!("cannot connect to {addr}: {e}")),
            })?;
        let secret = match role {
            Role::Client => cluster.client_secret(),
            Role::Peer(_) | Role::Admin => cluster.secret(),
        };
        let (reader, writer) = connection::initiate(stream, secret, role)
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

/// Sends `req` to node `node` and waits for its answer (any reply but `Pong`) within
/// `timeout`, pinging the node every heartbeat meanwhile so that it keeps the connection. A
/// `Refused` answer is [`ClientError::Refused`].
pub async fn ask(
    cluster: &Cluster,
    node: NodeId,
    req: ClientRequest,
    timeout: Duration,
) -> Result<ClientReply, ClientError> {
    let heartbeat = cluster.file.timeouts.heartbeat;
    let work = async {
        let mut c = Client::connect(cluster, node).await?;
        c.send(&req).await?;
        let mut beat = tokio::time::interval(heartbeat);
        beat.tick().await;
        loop {
            tokio::select! {
                r = c.recv() => match r? {
                    ClientReply::Pong => {}
                    ClientReply::Refused { reason } => return Err(ClientError::Refused(node, reason)),
                    reply => return Ok(reply),
                },
                _ = beat.tick() => c.send(&ClientRequest::Ping).await?,
            }
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| {
            Err(ClientError::Unavailable(format!(
                "node {node}: no answer within {timeout:?}"
            )))
        })
}

fn describe(e: ConnError) -> String {
    e.to_string()
}

/// Sends the admin request `req` to the nodes `ids` of `cluster` at once (see
/// [`Client::connect_admin`]) and collects each node's answer within `timeout`, in the order of
/// `ids`.
pub async fn admin(
    cluster: &Cluster,
    ids: &[NodeId],
    req: ClientRequest,
    timeout: Duration,
) -> Vec<(NodeId, Result<ClientReply, String>)> {
    let mut tasks = Vec::new();
    for &id in ids {
        let (cluster, req) = (cluster.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            let r = tokio::time::timeout(timeout, async {
                let mut c = Client::connect_admin(&cluster, id).await?;
                c.send(&req).await?;
                match c.recv().await? {
                    ClientReply::Refused { reason } => Err(ClientError::Refused(id, reason)),
                    reply => Ok(reply),
                }
            })
            .await;
            match r {
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {timeout:?}")),
            }
        }));
    }
    let mut out = Vec::new();
    for (&id, t) in ids.iter().zip(tasks) {
        out.push((id, t.await.unwrap_or_else(|e| Err(e.to_string()))));
    }
    out
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
    /// The cluster (to ask what happened if the lock is lost).
    pub cluster: Cluster,
    /// Whether the loss of the lock was already reported.
    announced: bool,
    /// The lock.
    pub name: String,
    /// The fencing token of this grant.
    pub token: u64,
    /// The node holding it for us.
    pub holder: NodeId,
    /// This client's own lease clock on the lock ([`crate::lease`]).
    pub lease: LeaseClock,
}

/// Takes lock `name`, trying `first` (or a random node) then the others, following redirects.
/// Pings the node every `heartbeat` while waiting. `timeout` bounds the whole wait.
///
/// A node's refusal ([`ClientError::Refused`]) ends the wait when the caller named that node
/// (`first`); otherwise the other nodes are asked, since a node refuses for reasons of its own
/// too (it sits out on a full disk, or was removed from the cluster), and the first refusal is
/// returned only when every node refused.
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
    let order: Vec<NodeId> = (0..ids.len())
        .map(|i| ids[(start + i) % ids.len()])
        .collect();
    acquire_in_order(cluster, order, first.is_some(), name).await
}

/// [`acquire`]'s wait, asking the nodes of `order` in turn; `named`: the caller named the first.
async fn acquire_in_order(
    cluster: &Cluster,
    mut order: Vec<NodeId>,
    named: bool,
    name: &str,
) -> Result<Held, ClientError> {
    let ids = cluster.peers.ids();
    let heartbeat = cluster.file.timeouts.heartbeat;
    // Only the node the caller named has the last word: a refusal from another node asked
    // after it (the named node granted without a lease, or went away) is passed over.
    let named = named.then(|| order.first().copied()).flatten();
    let mut redirects = 0;
    let mut errors = Vec::new();
    let mut refused: Option<(NodeId, String)> = None;
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
        // Every keep-alive asks for the node's lease (the first interval tick is at once, so
        // a lock granted at once has its lease in the next reply).
        let mut lease = LeaseClock::default();
        let mut beat = tokio::time::interval(heartbeat);
        let outcome = loop {
            tokio::select! {
                r = client.recv() => match r {
                    Ok(ClientReply::Pong) => {}
                    Ok(ClientReply::Lease { ms }) => lease.answered(ms),
                    r => break r,
                },
                _ = beat.tick() => {
                    lease.sent(tokio::time::Instant::now());
                    if let Err(e) = client.send(&ClientRequest::Renew).await {
                        break Err(e);
                    }
                }
            }
        };
        match outcome {
            Ok(ClientReply::Granted { token, holder, .. }) => {
                // The grant came with a lease or its answer is on the way (the node grants only
                // while its own lease runs).
                // The renewals answered before the grant may all predate it (a grant after a
                // view change, when the node had no lease): renew until one answer gives a lease.
                // A revocation in this window takes the grant back before the caller has it:
                // it must not be returned as held (the successor may already run).
                let limit = cluster.file.timeouts.heartbeat_timeout;
                let mut revoked = None;
                let _ = tokio::time::timeout(limit, async {
                    while lease.lapsed(tokio::time::Instant::now()) {
                        tokio::select! {
                            r = client.recv() => match r {
                                Ok(ClientReply::Lease { ms }) => lease.answered(ms),
                                Ok(ClientReply::Revoked { reason, .. }) => {
                                    revoked = Some(reason);
                                    return;
                                }
                                Ok(_) => {}
                                Err(_) => return,
                            },
                            _ = beat.tick() => {
                                lease.sent(tokio::time::Instant::now());
                                if client.send(&ClientRequest::Renew).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                })
                .await;
                if let Some(reason) = revoked {
                    // Ask again, from the same node first: the lock is someone else's for now.
                    errors.push(format!(
                        "node {node}: token {token} revoked before its first lease: {reason}"
                    ));
                    if errors.len() > 3 * ids.len() {
                        break;
                    }
                    order.insert(0, node);
                    continue;
                }
                if lease.lapsed(tokio::time::Instant::now()) {
                    // No renewal was answered with a lease within the timeout (the node was
                    // paused or cut off right after it granted, or its connection dropped):
                    // its lease may run out, and the lock go to another, at any moment, so the
                    // grant is not handed out as held (its command would start beside the
                    // successor's). The lock is given back and asked for again.
                    let _ = client
                        .send(&ClientRequest::Release {
                            name: name.to_string(),
                        })
                        .await;
                    errors.push(format!(
                        "node {node}: token {token} granted, but no lease followed within {limit:?}"
                    ));
                    if errors.len() > 3 * ids.len() {
                        break;
                    }
                    order.push(node);
                    tokio::time::sleep(heartbeat).await;
                    continue;
                }
                return Ok(Held {
                    client,
                    cluster: cluster.clone(),
                    announced: false,
                    name: name.to_string(),
                    token,
                    holder,
                    lease,
                });
            }
            Ok(ClientReply::Redirect { node: to, reason }) if redirects < MAX_REDIRECTS => {
                redirects += 1;
                tracing::debug!("redirected to node {to}: {reason}");
                order.retain(|&n| n != to);
                order.insert(0, to);
            }
            Ok(ClientReply::Refused { reason }) if named == Some(node) => {
                return Err(ClientError::Refused(node, reason))
            }
            Ok(ClientReply::Refused { reason }) => {
                errors.push(format!("node {node} refused: {reason}"));
                refused.get_or_insert((node, reason));
            }
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
    match refused {
        // Every node asked refused, or refused and the others were unreachable: the refusal is
        // the answer (a bad name, a quota), not the service's absence.
        Some((node, reason)) if order.is_empty() => Err(ClientError::Refused(node, reason)),
        _ => Err(ClientError::Unavailable(format!(
            "could not acquire lock {name:?}: {}",
            errors.join("; ")
        ))),
    }
}

/// How a locked command ended.
pub struct RunOutcome {
    /// The command's exit status.
    pub status: ExitStatus,
    /// Set when the lock was lost while the command ran (revoked, or the node went away).
    pub lost: Option<Lost>,
}

/// A lock lost while its command ran.
pub struct Lost {
    /// Why (revoked after a view change, the connection dropped, ...).
    pub why: String,
    /// The token the command was given, now stale.
    pub token: u64,
    /// The highest token the nodes that answered have granted or seen since (at the end of the
    /// command): what a fenced resource now expects to be above.
    pub since: Option<u64>,
}

/// How `run_locked` runs the command.
pub struct RunOptions {
    /// The keep-alive period (the cluster's heartbeat).
    pub heartbeat: Duration,
    /// Fork a watchdog process that kills the command's process group if this process dies
    /// without being able to (kill -9). `false`: no watchdog (the command itself still dies
    /// with this process, through `PR_SET_PDEATHSIG`).
    pub watchdog: bool,
    /// Stop the command when the lock is lost (`distsync elect`): SIGTERM to its process group,
    /// then SIGKILL after this grace period. `None`: let it run on (`distsync lock`, like
    /// flock(1); the fencing token protects the resource).
    pub stop_on_loss: Option<Duration>,
    /// When this client's own lease clock lapses ([`crate::lease`]) the command is stopped
    /// even without `stop_on_loss`: SIGTERM, then SIGKILL after this long.
    pub lapse_grace: Duration,
}

fn is_terminal_stdin() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdin())
}

/// Runs `command` while holding `held`: the command sees `DISTSYNC_FENCING_TOKEN`,
/// `DISTSYNC_HOLDER` (the node id) and `DISTSYNC_LOCK` in its environment. The lock is released
/// only when the command has exited, whatever its status.
///
/// Signals: SIGTERM, SIGINT and SIGHUP sent to this process are passed on to the command (to
/// its process group: the command runs in a group of its own unless stdin is a terminal, where
/// it stays in the terminal's foreground group, which receives ctrl-C by itself, so SIGINT is
/// not passed on twice), then this process waits for the command and releases the lock.
/// A `kill -9` of this process cannot be passed on: the command gets SIGKILL from the kernel
/// (`PR_SET_PDEATHSIG`) and, with a watchdog, so does the rest of its process group.
///
/// Must be called on the thread that will outlive the command (the thread blocked in
/// `Runtime::block_on`): the kernel sends the parent-death signal when the spawning *thread*
/// exits.
pub async fn run_locked(
    mut held: Held,
    program: &str,
    args: &[String],
    opts: RunOptions,
) -> Result<RunOutcome, ClientError> {
    use std::os::unix::process::CommandExt;
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = |kind: SignalKind| {
        signal(kind).map_err(|e| ClientError::Spawn(format!("cannot handle signals: {e}")))
    };
    let (mut term, mut int, mut hup) = (
        handlers(SignalKind::terminate())?,
        handlers(SignalKind::interrupt())?,
        handlers(SignalKind::hangup())?,
    );
    let own_group = !is_terminal_stdin();
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env("DISTSYNC_FENCING_TOKEN", held.token.to_string())
        .env("DISTSYNC_HOLDER", held.holder.to_string())
        .env("DISTSYNC_LOCK", &held.name);
    if own_group {
        cmd.process_group(0);
    }
    // SAFETY: getpid is async-signal-safe.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the line above: the signal will never come.
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            Ok(())
        });
    }
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| ClientError::Spawn(format!("cannot run {program:?}: {e}")))?;
    let pid = child.id().unwrap_or(0) as i32;
    let mut watchdog = if opts.watchdog && own_group && pid > 1 {
        match Watchdog::fork(pid) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("distsync: warning: no watchdog for the command ({e}): a kill -9 of this process would leave the command's children running");
                None
            }
        }
    } else {
        None
    };
    // Where forwarded signals go: the command's process group, or the command alone.
    let target = if own_group { -pid } else { pid };
    let forward = |sig: i32| {
        if pid > 0 {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(target, sig);
            }
        }
    };
    let mut lost: Option<String> = None;
    let mut lapsed = false;
    let mut beat = tokio::time::interval(opts.heartbeat);
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let mut kill_at = far;
    let status = loop {
        let lease_end = held.lease.until().unwrap_or_else(tokio::time::Instant::now);
        tokio::select! {
            s = child.wait() => break s.map_err(|e| ClientError::Spawn(e.to_string()))?,
            _ = tokio::time::sleep_until(kill_at), if kill_at != far => {
                forward(libc::SIGKILL);
                kill_at = far;
            }
            _ = term.recv() => forward(libc::SIGTERM),
            _ = hup.recv() => forward(libc::SIGHUP),
            _ = int.recv() => if own_group { forward(libc::SIGINT) },
            r = held.client.recv(), if lost.is_none() => match r {
                Ok(ClientReply::Revoked { reason, .. }) => lost = Some(format!("revoked: {reason}")),
                Ok(ClientReply::Lease { ms }) => held.lease.answered(ms),
                Ok(_) => {}
                Err(e) => lost = Some(e.to_string()),
            },
            // This client's own lease clock: nobody else can be granted the lock before it
            // runs out, and nothing says it was not once it has.
            _ = tokio::time::sleep_until(lease_end), if lost.is_none() => {
                let now = tokio::time::Instant::now();
                if held.lease.lapsed(now) {
                    lost = Some(held.lease.why(now));
                    lapsed = true;
                }
            }
            _ = beat.tick(), if lost.is_none() => {
                held.lease.sent(tokio::time::Instant::now());
                if let Err(e) = held.client.send(&ClientRequest::Renew).await {
                    lost = Some(e.to_string());
                }
            }
        }
        if let Some(why) = &lost {
            if !std::mem::replace(&mut held.announced, true) {
                eprintln!(
                    "distsync: warning: lock {:?} lost while the command runs ({why}); its fencing token {} is stale",
                    held.name, held.token
                );
                // A lapsed lease stops the command whatever the options: the lock may be
                // granted to someone else as soon as the node's lease has run out too.
                let grace = match opts.stop_on_loss {
                    Some(g) => Some(g),
                    None if lapsed => Some(opts.lapse_grace),
                    None => None,
                };
                if let Some(grace) = grace {
                    eprintln!("distsync: stopping the command (SIGTERM, SIGKILL after {grace:?})");
                    forward(libc::SIGTERM);
                    kill_at = tokio::time::Instant::now() + grace;
                }
            }
        }
    };
    // The command is gone: the watchdog has nothing left to guard.
    if let Some(w) = watchdog.take() {
        w.done();
    }
    if let Some(why) = lost {
        let cluster_max = max_token_seen(&held.cluster).await;
        return Ok(RunOutcome {
            status,
            lost: Some(Lost {
                why,
                token: held.token,
                since: cluster_max,
            }),
        });
    }
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
    Ok(RunOutcome { status, lost: None })
}

/// The highest fencing token any node that answers (within 2 s) has granted or seen.
pub async fn max_token_seen(cluster: &Cluster) -> Option<u64> {
    statuses(cluster, Duration::from_secs(2))
        .await
        .into_iter()
        .filter_map(|(_, s)| s.ok().map(|s| s.max_token))
        .max()
}

/// The process that kills the command's process group when `lock` dies without being able to
/// (kill -9): a fork of this process, without exec (an exec of `distsync` was a second process
/// start per lock, as long as the rest of a short `lock -- true`). It waits on a pipe from
/// `lock`: "done" means the command ended normally; end of file without it means `lock` died
/// without passing anything on, and the lock is being released, so the command's whole process
/// group is killed (SIGKILL) before it can run beside the next holder. It ignores SIGTERM, SIGINT
/// and SIGHUP: only the pipe tells it what to do.
struct Watchdog {
    pid: libc::pid_t,
    /// The pipe's write end; closed with this value.
    pipe: std::fs::File,
}

impl Watchdog {
    /// Forks the watchdog of process group `pgid`.
    fn fork(pgid: i32) -> std::io::Result<Watchdog> {
        use std::os::fd::FromRawFd;
        // Everything the child needs is made before the fork: between fork and its end the
        // child may only make async-signal-safe calls (another thread of this process may have
        // held the allocator's lock at the fork).
        let killed = format!(
            "distsync: the lock wrapper died (kill -9?); its lock is released, so the command's process group {pgid} was killed\n"
        );
        let null = c"/dev/null";
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two file descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let [read_end, write_end] = fds;
        // SAFETY: the child runs only `watchdog_child`, which makes async-signal-safe calls
        // and ends in _exit.
        match unsafe { libc::fork() } {
            -1 => {
                let e = std::io::Error::last_os_error();
                // SAFETY: both descriptors were just made and are owned here.
                unsafe {
                    libc::close(read_end);
                    libc::close(write_end);
                }
                Err(e)
            }
            // SAFETY: see above; the arguments were prepared before the fork.
            0 => unsafe { watchdog_child(read_end, write_end, pgid, killed.as_bytes(), null) },
            pid => {
                // SAFETY: read_end is ours and no longer needed; write_end is ours and now
                // owned by the File.
                unsafe { libc::close(read_end) };
                let pipe = unsafe { std::fs::File::from_raw_fd(write_end) };
                Ok(Watchdog { pid, pipe })
            }
        }
    }

    /// The command ended normally: tells the watchdog so (it exits), and reaps it on a thread
    /// (nothing here waits for it).
    fn done(self) {
        use std::io::Write;
        let Watchdog { pid, mut pipe } = self;
        let _ = pipe.write_all(b"done");
        drop(pipe);
        std::thread::spawn(move || {
            let mut status = 0;
            // SAFETY: waitpid on our own child, with a valid pointer for its status.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        });
    }
}

/// The watchdog's whole life, in the forked child. Only async-signal-safe calls.
///
/// # Safety
/// Called only in the child of a fork, with the pipe's two ends.
unsafe fn watchdog_child(
    read_end: i32,
    write_end: i32,
    pgid: i32,
    killed: &[u8],
    null: &std::ffi::CStr,
) -> ! {
    // A group of its own: a signal to `lock`'s group (a terminal's ctrl-C) is not for it.
    libc::setpgid(0, 0);
    libc::signal(libc::SIGTERM, libc::SIG_IGN);
    libc::signal(libc::SIGINT, libc::SIG_IGN);
    libc::signal(libc::SIGHUP, libc::SIG_IGN);
    // Its own copy of the write end would keep the pipe open after `lock` died.
    libc::close(write_end);
    // Keep only the pipe (as stdin) and stderr: a copy of `lock`'s stdout would keep a reader
    // of it waiting, and the other descriptors (the connection to the cluster) are `lock`'s.
    if read_end != 0 {
        libc::dup2(read_end, 0);
    }
    let devnull = libc::open(null.as_ptr(), libc::O_WRONLY);
    if devnull >= 0 {
        libc::dup2(devnull, 1);
    }
    if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
        for fd in 3..4096 {
            libc::close(fd);
        }
    }
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < buf.len() {
        let r = libc::read(0, buf.as_mut_ptr().add(got).cast(), buf.len() - got);
        if r > 0 {
            got += r as usize;
        } else if r == 0 || *libc::__errno_location() != libc::EINTR {
            break;
        }
    }
    if &buf[..got] != b"done" && libc::kill(-pgid, libc::SIGKILL) == 0 {
        libc::write(2, killed.as_ptr().cast(), killed.len());
    }
    libc::_exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use tokio::net::TcpListener;

    /// A cluster of fake nodes at `addrs` (ids 0, 1, ...), with the tests' fast heartbeats.
    fn cluster_at(addrs: &[String]) -> Cluster {
        let mut text = "mutex = \"central\"\nelection = \"bully\"\n\
                        secret = \"0123456789abcdef0123\"\n[timeouts]\nheartbeat = \"20ms\"\n\
                        heartbeat_timeout = \"300ms\"\n"
            .to_string();
        for (id, addr) in addrs.iter().enumerate() {
            text += &format!("[[node]]\nid = {id}\naddr = \"{addr}\"\n");
        }
        Cluster::from_toml(&text, "test").unwrap()
    }

    /// A fake node on `listener`: every client connection's requests are answered by `answer`
    /// (the replies to send, in order), given the request and the token the connection was last
    /// granted, which `answer` sets when it grants one.
    fn fake_node<F>(listener: TcpListener, cluster: &Cluster, answer: F)
    where
        F: Fn(ClientRequest, &mut u64) -> Vec<ClientReply> + Clone + Send + Sync + 'static,
    {
        let (node_key, client_key) = (cluster.secret().to_vec(), cluster.client_secret().to_vec());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (node_key, client_key) = (node_key.clone(), client_key.clone());
                let answer = answer.clone();
                tokio::spawn(async move {
                    let Ok((_, mut r, mut w)) =
                        connection::respond(stream, &node_key, &client_key).await
                    else {
                        return;
                    };
                    let mut mine = 0;
                    while let Ok(Some(req)) = r.recv::<ClientRequest>().await {
                        for reply in answer(req, &mut mine) {
                            if w.send(&reply).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
    }

    /// The next token of `tokens`, granted as `mine`.
    /// A fake node's answers when it grants with a lease and renews every lease asked for.
    fn grants_with_leases(
        tokens: Arc<AtomicU64>,
    ) -> impl Fn(ClientRequest, &mut u64) -> Vec<ClientReply> + Clone + Send + Sync + 'static {
        move |req, mine| match req {
            ClientRequest::Lock { name } => {
                vec![grant(&tokens, name, mine), ClientReply::Lease { ms: 1000 }]
            }
            ClientRequest::Renew => vec![ClientReply::Lease { ms: 1000 }],
            _ => vec![],
        }
    }

    fn grant(tokens: &AtomicU64, name: String, mine: &mut u64) -> ClientReply {
        *mine = tokens.fetch_add(1, Ordering::SeqCst) + 1;
        ClientReply::Granted {
            name,
            token: *mine,
            holder: NodeId(0),
        }
    }

    /// A node that grants and then revokes before the grant's first lease (a view change right
    /// after the grant): `acquire` must not hand that grant to its caller, whose command would
    /// then run beside the successor's. It asks again and holds the next grant.
    #[tokio::test]
    async fn a_grant_revoked_before_its_first_lease_is_not_returned_as_held() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cluster = cluster_at(&[
            listener.local_addr().unwrap().to_string(),
            "127.0.0.1:1".into(),
        ]);
        let tokens = Arc::new(AtomicU64::new(0));
        fake_node(listener, &cluster, move |req, mine| match req {
            ClientRequest::Lock { name } => {
                let granted = grant(&tokens, name.clone(), mine);
                if *mine == 1 {
                    let reason = "another holder was kept in the new view".into();
                    vec![granted, ClientReply::Revoked { name, reason }]
                } else {
                    vec![granted, ClientReply::Lease { ms: 1000 }]
                }
            }
            // No lease for the revoked grant; the next one has its lease.
            ClientRequest::Renew if *mine >= 2 => vec![ClientReply::Lease { ms: 1000 }],
            _ => vec![],
        });
        let held = acquire(
            &cluster,
            Some(NodeId(0)),
            "x",
            Some(Duration::from_secs(10)),
        )
        .await
        .expect("the second grant is held");
        assert_eq!(held.token, 2, "the revoked token 1 was handed out as held");
        assert!(!held.lease.lapsed(tokio::time::Instant::now()));
    }

    /// A node that grants and then answers no renewal with a lease (paused or cut off right
    /// after the grant; here it answers `Lease { ms: 0 }`): `acquire` must not hand that grant
    /// to its caller with a lapsed lease, whose command would start while the lock may already
    /// be another's. It gives the lock back and holds the next grant, which has its lease.
    #[tokio::test]
    async fn a_grant_without_a_lease_within_the_timeout_is_not_returned_as_held() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cluster = cluster_at(&[
            listener.local_addr().unwrap().to_string(),
            "127.0.0.1:1".into(),
        ]);
        let tokens = Arc::new(AtomicU64::new(0));
        let released = Arc::new(AtomicU64::new(0));
        let gave_back = released.clone();
        fake_node(listener, &cluster, move |req, mine| match req {
            ClientRequest::Lock { name } => vec![grant(&tokens, name, mine)],
            // No lease with the first grant; the next one has its lease.
            ClientRequest::Renew => vec![ClientReply::Lease {
                ms: if *mine >= 2 { 1000 } else { 0 },
            }],
            ClientRequest::Release { .. } => {
                gave_back.fetch_add(1, Ordering::SeqCst);
                vec![]
            }
            _ => vec![],
        });
        let held = acquire(
            &cluster,
            Some(NodeId(0)),
            "x",
            Some(Duration::from_secs(10)),
        )
        .await
        .expect("the second grant is held");
        assert_eq!(
            held.token, 2,
            "token 1, without a lease, was handed out as held"
        );
        assert!(!held.lease.lapsed(tokio::time::Instant::now()));
        assert_eq!(released.load(Ordering::SeqCst), 1, "token 1 was given back");
    }

    /// Node 0 refuses every lock (it sits out on a full disk), node 1 grants: a client that
    /// named no node and met node 0 first holds node 1's grant; one that named node 0 gets its
    /// refusal; when both refuse, the first refusal is the answer.
    #[tokio::test]
    async fn a_refusing_node_is_passed_over_unless_it_was_named() {
        let sits_out = "node 0 cannot store its epoch mark: No space left on device";
        let (l0, l1) = (
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
        );
        let cluster = cluster_at(&[
            l0.local_addr().unwrap().to_string(),
            l1.local_addr().unwrap().to_string(),
        ]);
        let refuse = move |req, _: &mut u64| match req {
            ClientRequest::Lock { .. } => vec![ClientReply::Refused {
                reason: sits_out.into(),
            }],
            _ => vec![],
        };
        fake_node(l0, &cluster, refuse);
        let tokens = Arc::new(AtomicU64::new(0));
        fake_node(l1, &cluster, grants_with_leases(tokens));
        let held = acquire_in_order(&cluster, vec![NodeId(0), NodeId(1)], false, "x")
            .await
            .expect("node 1 grants");
        assert_eq!((held.token, held.holder), (1, NodeId(0)));
        match acquire(&cluster, Some(NodeId(0)), "y", None).await {
            Err(ClientError::Refused(n, reason)) => {
                assert_eq!((n, reason.as_str()), (NodeId(0), sits_out))
            }
            other => panic!("node 0, named, refuses: {:?}", other.map(|h| h.token)),
        }

        let l2 = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let l3 = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let both = cluster_at(&[
            l2.local_addr().unwrap().to_string(),
            l3.local_addr().unwrap().to_string(),
        ]);
        fake_node(l2, &both, refuse);
        fake_node(l3, &both, move |req, _| match req {
            ClientRequest::Lock { .. } => vec![ClientReply::Refused {
                reason: "no such name".into(),
            }],
            _ => vec![],
        });
        match acquire_in_order(&both, vec![NodeId(1), NodeId(0)], false, "z").await {
            Err(ClientError::Refused(n, reason)) => {
                assert_eq!((n, reason.as_str()), (NodeId(1), "no such name"))
            }
            other => panic!("every node refused: {:?}", other.map(|h| h.token)),
        }
    }

    /// The named node grants but no lease follows (it was cut off right after granting); the
    /// next node asked refuses (it sits out): that refusal is not the named node's answer, and
    /// the third node grants. (The refusal ended the wait: slow_disk.rs's full-disk test met it
    /// when node 0's first grant after node 1 sat out came before its lease.)
    #[tokio::test]
    async fn a_refusal_from_a_node_asked_after_the_named_one_is_passed_over() {
        let listeners = [
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
        ];
        let addrs: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().unwrap().to_string())
            .collect();
        let cluster = cluster_at(&addrs);
        let [l0, l1, l2] = listeners;
        let tokens = Arc::new(AtomicU64::new(0));
        let no_lease = Arc::clone(&tokens);
        fake_node(l0, &cluster, move |req, mine| match req {
            ClientRequest::Lock { name } => vec![grant(&no_lease, name, mine)],
            _ => vec![],
        });
        fake_node(l1, &cluster, |req, _| match req {
            ClientRequest::Lock { .. } => vec![ClientReply::Refused {
                reason: "node 1 cannot store its epoch mark: No space left on device".into(),
            }],
            _ => vec![],
        });
        fake_node(l2, &cluster, grants_with_leases(tokens));
        let held = acquire(
            &cluster,
            Some(NodeId(0)),
            "x",
            Some(Duration::from_secs(10)),
        )
        .await
        .unwrap_or_else(|e| panic!("node 2 grants: {e}"));
        assert_eq!(
            held.token, 2,
            "node 0's grant without a lease was given back"
        );
    }
}
