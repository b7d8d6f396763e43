//! Links between nodes, and the listener that accepts nodes and clients.
//!
//! Each node dials every other node once and uses that connection to send to it; what it
//! receives comes over the connections the others dialed. A dialer ([`spawn_link`]) connects
//! (over the peer's Unix socket when it runs on this machine, else TCP: `transport::dial`),
//! authenticates, then forwards the node's messages for that peer and a `Ping` every heartbeat;
//! when the connection fails (the peer crashed or restarted) it logs it and dials again, with a
//! short pause between attempts, until the node stops. A peer that connects to this node is up,
//! so the listener wakes the dialer of the link to it ([`Pokes`]) instead of leaving it to the
//! end of its pause: at a cluster's start a node's links to the nodes started after it come up
//! as soon as those nodes do. Messages for a peer that is down wait in a
//! bounded queue; when it is full they are dropped, as a crashed process loses its messages.
//!
//! The listener ([`serve`]) accepts on the node's TCP address and, when it has one, its Unix
//! socket, and runs the handshake on every connection: one that cannot prove the
//! secret is refused and logged. A node's messages become [`Event::Peer`]; a client gets a
//! session whose requests become [`Event::Client`]. A malformed, truncated, oversized or
//! unauthentic frame ends that one connection, with a log line, and nothing else.

use crate::auth::Role;
use crate::config::Cluster;
use crate::connection::{self, ConnError};
use crate::transport::{self, Stream};
use crate::wire::{ClientReply, ClientRequest, PeerMsg};
use distsync_core::NodeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, Notify};
use tracing::{debug, info, warn};

/// Messages waiting for one peer.
pub const LINK_QUEUE: usize = 4096;
/// Replies waiting for one client.
pub const CLIENT_QUEUE: usize = 256;

/// What the connection tasks tell the node.
#[derive(Debug)]
pub enum Event {
    /// Node `from` sent a message.
    Peer(NodeId, PeerMsg),
    /// A client connected; replies go to this sender.
    ClientOpen(u64, mpsc::Sender<ClientReply>),
    /// A client's request.
    Client(u64, ClientRequest),
    /// A client's connection ended.
    ClientGone(u64),
}

/// For each peer, what wakes the dialer of the link to it when that peer connects to this node.
pub type Pokes = Arc<HashMap<NodeId, Arc<Notify>>>;

/// The nodes of the roster this node is at (its own id included): the only ids whose links
/// [`serve`] accepts. The node replaces it when it adopts a new roster (a membership change).
pub type Admitted = Arc<std::sync::RwLock<Vec<NodeId>>>;

/// Who [`serve`] lets in, as the node changes it: the roster's ids and the keys accepted.
pub struct Access {
    /// The nodes whose links are accepted.
    pub admitted: Admitted,
    /// The keys a connection may prove (`crate::keys`).
    pub keys: crate::keys::KeyRing,
}

/// Starts the dialer of the link to `peer`, sending what arrives on `rx`; `poke` cuts a pause
/// between attempts short. While `silent` is set it sends no `Ping` (the node sits out: its
/// epoch mark cannot be stored).
pub fn spawn_link(
    me: NodeId,
    peer: NodeId,
    cluster: Arc<Cluster>,
    keys: crate::keys::KeyRing,
    poke: Arc<Notify>,
    silent: Arc<std::sync::atomic::AtomicBool>,
    mut rx: mpsc::Receiver<PeerMsg>,
) {
    let addr = cluster.addr_of(peer).expect("a peer of the cluster");
    let heartbeat = cluster.file.timeouts.heartbeat;
    // Waits `d`, or less if the peer connects to this node meanwhile (it is up).
    let pause = move |d: Duration| {
        let poke = poke.clone();
        async move {
            tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = poke.notified() => {}
            }
        }
    };
    tokio::spawn(async move {
        let retry = heartbeat.min(Duration::from_millis(200));
        let mut failures = 0u32;
        loop {
            let stream = match transport::dial(&cluster, peer, addr, Duration::from_secs(2)).await {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    failures += 1;
                    continue;
                }
                Err(e) => {
                    if failures == 0 {
                        debug!(peer = %peer, %addr, "cannot connect: {e}; retrying");
                    }
                    pause(retry.min(backoff(failures))).await;
                    failures += 1;
                    continue;
                }
            };
            let via = stream.via();
            // The key of this attempt (a rotation may have replaced it since the last).
            let secret = keys
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .dial(tokio::time::Instant::now());
            let (_reader, mut writer) =
                match connection::initiate(stream, &secret, Role::Peer(me)).await {
                    Ok(halves) => halves,
                    Err(e) => {
                        // Once per outage, not once per attempt.
                        if failures == 0 {
                            warn!(peer = %peer, %addr, "link handshake failed: {e}; retrying");
                        } else {
                            debug!(peer = %peer, %addr, "link handshake failed: {e}");
                        }
                        failures += 1;
                        pause(retry).await;
                        continue;
                    }
                };
            info!(peer = %peer, %addr, ?via, "link up");
            failures = 0;
            let mut beat = tokio::time::interval(heartbeat);
            let end: Result<(), ConnError> = loop {
                tokio::select! {
                    msg = rx.recv() => match msg {
                        // What else is queued goes in the same write (one system call).
                        Some(m) => if let Err(e) = writer.send_many(&drain(m, &mut rx)).await { break Err(e) },
                        None => return, // the node stopped
                    },
                    // A node that sits out (no epoch mark on disk) is silent.
                    _ = beat.tick(), if !silent.load(std::sync::atomic::Ordering::Relaxed) => {
                        if let Err(e) = writer.send(&PeerMsg::Ping).await {
                            break Err(e)
                        }
                    },
                }
            };
            if let Err(e) = end {
                info!(peer = %peer, "link down: {e}; reconnecting");
            }
            pause(retry).await;
        }
    });
}

/// Connections from one address that have not finished their handshake yet: past this many,
/// more from that address are closed at once (each handshake must end within
/// [`connection::HANDSHAKE_TIMEOUT`] anyway), so one outsider cannot hold every descriptor.
pub const MAX_PREAUTH_PER_ADDR: usize = 64;
/// The same, over all addresses.
pub const MAX_PREAUTH: usize = 512;

/// The connections still in their handshake, by source address.
#[derive(Default)]
struct Preauth {
    by_addr: HashMap<String, usize>,
    total: usize,
}

/// One connection counted in [`Preauth`] until dropped (its handshake ended, either way).
struct Counted {
    table: Arc<std::sync::Mutex<Preauth>>,
    addr: String,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        t.total = t.total.saturating_sub(1);
        if let Some(n) = t.by_addr.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                t.by_addr.remove(&self.addr);
            }
        }
    }
}

/// Counts a new connection from `addr` (`ip:port`; the port is left out) in its handshake, or
/// says why it is refused.
fn admit(table: &Arc<std::sync::Mutex<Preauth>>, addr: &str) -> Result<Counted, String> {
    let ip = addr.rsplit_once(':').map_or(addr, |(ip, _)| ip).to_string();
    let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
    let n = t.by_addr.get(&ip).copied().unwrap_or(0);
    if n >= MAX_PREAUTH_PER_ADDR {
        return Err(format!(
            "{MAX_PREAUTH_PER_ADDR} connections from this address are still in their handshake"
        ));
    }
    if t.total >= MAX_PREAUTH {
        return Err(format!(
            "{MAX_PREAUTH} connections are still in their handshake"
        ));
    }
    t.total += 1;
    *t.by_addr.entry(ip.clone()).or_default() += 1;
    Ok(Counted {
        table: table.clone(),
        addr: ip,
    })
}

/// Connections refused before they authenticated are logged one line each up to this many per
/// window; the rest are counted and reported in one summary line at the end of the window, so
/// that nobody can fill the disk by connecting.
pub const REFUSED_LINES_PER_WINDOW: u32 = 5;
/// The window of [`REFUSED_LINES_PER_WINDOW`].
pub const REFUSED_WINDOW: Duration = Duration::from_secs(5);

/// Rate-limited logging of connections refused (before they authenticated) or closed (a client
/// that sent a malformed frame, or fell silent: with the client key, one could otherwise log a
/// line per connection at will).
struct Refusals {
    /// What a line says happened: "refused connection", "closing client connection".
    what: &'static str,
    logged: u32,
    suppressed: u64,
    latest: String,
}

impl Refusals {
    fn new(what: &'static str) -> Refusals {
        Refusals {
            what,
            logged: 0,
            suppressed: 0,
            latest: String::new(),
        }
    }

    /// Logs this refusal, or counts it if the window's lines are used up.
    fn note(&mut self, addr: &str, why: &str) {
        if self.logged < REFUSED_LINES_PER_WINDOW {
            self.logged += 1;
            warn!(%addr, "{}: {why}", self.what);
        } else {
            self.suppressed += 1;
            self.latest = format!("{addr}: {why}");
        }
    }

    /// Ends a window: one summary line for what was counted.
    fn flush(&mut self) {
        if self.suppressed > 0 {
            let what = match self.what {
                "refused connection" => "refused connections",
                _ => "closed client connections",
            };
            warn!(
                "{} more {what} in the last {:?} (latest from {})",
                self.suppressed, REFUSED_WINDOW, self.latest
            );
        }
        *self = Refusals::new(self.what);
    }
}

/// Accepts connections on `listener` (and `unix`, when there is one) until the node stops,
/// sending what they carry to `events`; a peer that connects pokes the dialer of the link to
/// it.
pub async fn serve(
    listener: TcpListener,
    unix: Option<UnixListener>,
    cluster: Arc<Cluster>,
    me: NodeId,
    events: mpsc::Sender<Event>,
    pokes: Pokes,
    Access { admitted, keys }: Access,
) {
    let next_client = Arc::new(AtomicU64::new(1));
    let client_timeout = cluster.file.timeouts.heartbeat_timeout * 3;
    let refusals = Arc::new(std::sync::Mutex::new(Refusals::new("refused connection")));
    let closes = Arc::new(std::sync::Mutex::new(Refusals::new(
        "closing client connection",
    )));
    let flusher = {
        let (refusals, closes) = (refusals.clone(), closes.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REFUSED_WINDOW);
            loop {
                every.tick().await;
                refusals.lock().unwrap_or_else(|e| e.into_inner()).flush();
                closes.lock().unwrap_or_else(|e| e.into_inner()).flush();
            }
        })
    };
    let _stop_flusher = AbortOnDrop(flusher);
    let preauth = Arc::new(std::sync::Mutex::new(Preauth::default()));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r.map(|(s, a)| (Stream::Tcp(s), a.to_string())),
            r = accept_unix(unix.as_ref()) => r.map(|s| (Stream::Unix(s), "unix socket".to_string())),
        };
        let (stream, addr) = match accepted {
            Ok(c) => c,
            Err(e) => {
                warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Over TCP, a bounded number of handshakes per address (the Unix socket is reachable
        // only through the cluster's private directory).
        let counted = match &stream {
            Stream::Tcp(_) => match admit(&preauth, &addr) {
                Ok(c) => Some(c),
                Err(why) => {
                    refusals
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .note(&addr, &why);
                    drop(stream);
                    continue;
                }
            },
            _ => None,
        };
        let pokes = pokes.clone();
        // The keys accepted now: the current ones, and the previous ones while a rotation's
        // window runs.
        let (secret, client_secret) = keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .accepted(tokio::time::Instant::now());
        let (events, admitted, next_client, refusals, closes) = (
            events.clone(),
            admitted.clone(),
            next_client.clone(),
            refusals.clone(),
            closes.clone(),
        );
        tokio::spawn(async move {
            let node_keys: Vec<&[u8]> = secret.iter().map(Vec::as_slice).collect();
            let client_keys: Vec<&[u8]> = client_secret.iter().map(Vec::as_slice).collect();
            let handshake = connection::respond_any(stream, &node_keys, &client_keys).await;
            drop(counted);
            let (role, mut reader, writer) = match handshake {
                Ok(c) => c,
                Err(e) => {
                    refusals
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .note(&addr, &e.to_string());
                    return;
                }
            };
            match role {
                Role::Peer(id)
                    if id == me
                        || !admitted
                            .read()
                            .unwrap_or_else(|e| e.into_inner())
                            .contains(&id) =>
                {
                    warn!(%addr, "refused connection: node {id} is not a peer of node {me} (not in its roster)");
                }
                Role::Peer(id) => {
                    debug!(%addr, peer = %id, "peer connected");
                    // It is up: the link to it need not wait out its pause.
                    if let Some(p) = pokes.get(&id) {
                        p.notify_one();
                    }
                    loop {
                        match reader.recv::<PeerMsg>().await {
                            Ok(Some(msg)) => {
                                if events.send(Event::Peer(id, msg)).await.is_err() {
                                    return;
                                }
                            }
                            Ok(None) => {
                                debug!(peer = %id, "peer closed its link");
                                return;
                            }
                            Err(e) => {
                                warn!(%addr, peer = %id, "closing link from peer: {e}");
                                return;
                            }
                        }
                    }
                }
                Role::Client | Role::Admin => {
                    let id = next_client.fetch_add(1, Ordering::Relaxed);
                    if role == Role::Admin {
                        info!(%addr, client = id, "admin connected");
                    }
                    let admin = role == Role::Admin;
                    client_session(
                        (id, addr),
                        reader,
                        writer,
                        events,
                        client_timeout,
                        admin,
                        &closes,
                    )
                    .await;
                }
            }
        });
    }
}

/// The next connection on `unix`; never, without one.
async fn accept_unix(unix: Option<&UnixListener>) -> std::io::Result<tokio::net::UnixStream> {
    match unix {
        Some(l) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

/// The pause before the dialer's next attempt after `failures` failed ones: quick retries first
/// (at a cluster's start its nodes come up within milliseconds of each other), then longer.
fn backoff(failures: u32) -> Duration {
    Duration::from_millis(5) * (1 << failures.min(6))
}

/// One client's (or admin's) connection: `(id, addr)` name it in the node and its logs.
async fn client_session(
    (id, addr): (u64, String),
    mut reader: connection::Reader,
    mut writer: connection::Writer,
    events: mpsc::Sender<Event>,
    timeout: Duration,
    admin: bool,
    closes: &std::sync::Mutex<Refusals>,
) {
    let (tx, mut rx) = mpsc::channel::<ClientReply>(CLIENT_QUEUE);
    // Admin requests from a client connection are refused here, before the node sees them.
    let refuse = tx.clone();
    if events.send(Event::ClientOpen(id, tx)).await.is_err() {
        return;
    }
    debug!(client = id, %addr, "client connected");
    let write = tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            if writer.send_many(&drain(reply, &mut rx)).await.is_err() {
                return;
            }
        }
    });
    loop {
        match tokio::time::timeout(timeout, reader.recv::<ClientRequest>()).await {
            Ok(Ok(Some(req))) => {
                if req.admin_only() && !admin {
                    warn!(client = id, %addr, "refused an admin request from a client connection");
                    let reason = "only an admin connection (the cluster file's node key) may \
                                  stop, restart or inspect a node, or change the membership; \
                                  the client key cannot"
                        .to_string();
                    if refuse.send(ClientReply::Refused { reason }).await.is_err() {
                        break;
                    }
                    continue;
                }
                if events.send(Event::Client(id, req)).await.is_err() {
                    break;
                }
            }
            Ok(Ok(None)) => {
                debug!(client = id, "client closed the connection");
                break;
            }
            Ok(Err(e)) => {
                closes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .note(&addr, &format!("{e} (client {id})"));
                break;
            }
            Err(_) => {
                closes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .note(&addr, &format!("silent for {timeout:?} (client {id})"));
                break;
            }
        }
    }
    let _ = events.send(Event::ClientGone(id)).await;
    write.abort();
}

/// `first` and whatever else is already queued behind it (at most 64), in order.
fn drain<T>(first: T, rx: &mut mpsc::Receiver<T>) -> Vec<T> {
    let mut batch = vec![first];
    while batch.len() < 64 {
        match rx.try_recv() {
            Ok(m) => batch.push(m),
            Err(_) => break,
        }
    }
    batch
}

/// Aborts a task when dropped (the refusal-log flusher ends with the listener).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outsider opening connections and never finishing the handshake holds at most
    /// `MAX_PREAUTH_PER_ADDR` of them; other addresses still get in, and a slot comes back
    /// when a handshake ends.
    #[test]
    fn handshakes_in_progress_are_bounded_per_address() {
        let table = Arc::new(std::sync::Mutex::new(Preauth::default()));
        let mut held: Vec<Counted> = (0..MAX_PREAUTH_PER_ADDR)
            .map(|p| admit(&table, &format!("10.0.0.9:{}", 4000 + p)).unwrap())
            .collect();
        let e = admit(&table, "10.0.0.9:5000").err().unwrap();
        assert!(e.contains("still in their handshake"), "{e}");
        let other = admit(&table, "10.0.0.7:4000").unwrap();
        held.pop();
        held.push(admit(&table, "10.0.0.9:5001").unwrap());
        assert!(admit(&table, "10.0.0.9:5002").is_err());
        drop(other);
        drop(held);
        assert_eq!(table.lock().unwrap().total, 0);
        // IPv6 addresses keep their colons; only the port is cut off.
        assert!(admit(&table, "[::1]:80").is_ok());
    }
}
