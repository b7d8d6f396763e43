//! Clock synchronization among a cluster's nodes over UDP: each node keeps a [`VirtualClock`]
//! (an offset and a rate over its monotonic clock; the system clock is never touched) and runs
//! the cluster file's clock-synchronization algorithm (`[clock] algorithm`: the Berkeley,
//! Cristian or NTP file of `distsync_algorithms::clocks`, unchanged) through a [`Host`], as the
//! simulator runs it. Berkeley's master is elected by the cluster's election algorithm
//! (`election`), inside the Berkeley process, and re-elected when it falls silent (its rule 7).
//!
//! Each node listens on UDP at the same IP and port number as its TCP address. A datagram is
//! JSON (an [`Envelope`]) followed by a 32-byte HMAC-SHA256 tag under a key derived from the
//! cluster's secret; a datagram with a bad tag, from an unknown node, or not newer than the
//! last one from the same sender (a replay) is dropped. Anyone holding the cluster file may ask
//! a node for its clock ([`Body::StatusRequest`]); the answer carries the node's virtual
//! readings on receipt and on sending, so the asker computes the node's offset from its own
//! system clock with NTP's on-wire formula ([`status`]).

use crate::host::{Action, Host};
use crate::serve::system_now_ns;
use crate::vclock::VirtualClock;
use distsync_algorithms::registry::{self, ClockSyncVisitor, Entry};
use distsync_core::clock_sync::{ClockSync, Input, Output};
use distsync_core::{NodeId, Params, Peers, Time};
use distsync_net::{ClockSettings, Cluster};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// The size of the MAC after each datagram.
pub const TAG: usize = 32;
/// The largest datagram read.
pub const MAX_DATAGRAM: usize = 8192;

/// What travels in a datagram, before its MAC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending node, or `None` for a status query from outside the cluster.
    pub from: Option<NodeId>,
    /// The sender's incarnation: its system time in ns when it started.
    pub boot: i64,
    /// The sender's datagram counter in this incarnation.
    pub seq: u64,
    /// The content.
    pub body: Body,
}

/// The content of a datagram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// A message of the clock-synchronization algorithm.
    Algorithm(serde_json::Value),
    /// "What does your clock read?", with the asker's system time (ns since the Unix epoch).
    StatusRequest {
        /// The asker's reading when it sent.
        t1: i64,
    },
    /// The answer.
    Status(NodeClock),
}

/// A node's clock, as it reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeClock {
    /// The node.
    pub id: NodeId,
    /// The algorithm it runs.
    pub algorithm: String,
    /// The asker's `t1`, echoed.
    pub t1: i64,
    /// The node's virtual clock when the request arrived.
    pub t2: i64,
    /// The node's virtual clock when the answer left.
    pub t3: i64,
    /// The master it follows (Berkeley), if any.
    pub master: Option<NodeId>,
    /// Its stratum (NTP), if strata apply.
    pub stratum: Option<u8>,
    /// Corrections applied so far.
    pub adjustments: u64,
    /// The last correction, in ns.
    pub last_adjust_ns: Option<i64>,
    /// How long ago it was applied, in ns of the node's monotonic clock.
    pub last_adjust_age_ns: Option<u64>,
    /// The algorithm's bound on the remaining error after the last correction, in ns.
    pub bound_ns: Option<u64>,
    /// The clock the last correction aimed at (Cristian's server), if any.
    pub reference: Option<NodeId>,
    /// Rounds this node led (Berkeley master, NTP selections).
    pub rounds: u64,
    /// The artificial offset it started with, in ns.
    pub initial_offset_ns: i64,
    /// The artificial drift it runs with, in ppm.
    pub drift_ppm: f64,
    /// A slew still being applied, in ns.
    pub slew_remaining_ns: i64,
}

/// The MAC key: HMAC-SHA256(secret, "distsync clock over udp v1").
fn key(secret: &[u8]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    m.update(b"distsync clock over udp v1");
    m.finalize().into_bytes().into()
}

/// The datagram for `env`: JSON, then its tag.
pub fn seal(key: &[u8; 32], env: &Envelope) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(env).expect("envelopes serialize");
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    m.update(&bytes);
    bytes.extend_from_slice(&m.finalize().into_bytes());
    bytes
}

/// The envelope in `datagram`, if its tag is right and it parses.
pub fn open(key: &[u8; 32], datagram: &[u8]) -> Option<Envelope> {
    if datagram.len() < TAG {
        return None;
    }
    let (body, tag) = datagram.split_at(datagram.len() - TAG);
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    m.update(body);
    m.verify_slice(tag).ok()?;
    serde_json::from_slice(body).ok()
}

/// The UDP sockets of a node or of an asker: `main`, and one of the other address family when
/// the cluster's addresses mix IPv4 and IPv6 (a socket sends to its own family only: an IPv4
/// socket cannot reach `[::1]`, nor an IPv6 one bound to an IPv6 address `127.0.0.1`).
struct Sockets {
    main: UdpSocket,
    other: Option<UdpSocket>,
}

impl Sockets {
    /// `main`, and a socket on an ephemeral port of the other family if one of `addrs` is of
    /// it. A machine without that family is warned about: the peers of that family stay
    /// unreachable, the others are not.
    async fn new(main: UdpSocket, addrs: &[SocketAddr]) -> io::Result<Sockets> {
        let v4 = main.local_addr()?.is_ipv4();
        let other = match addrs.iter().find(|a| a.is_ipv4() != v4) {
            None => None,
            Some(peer) => {
                let any: SocketAddr = if v4 {
                    (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
                } else {
                    (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
                };
                match UdpSocket::bind(any).await {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::warn!(
                            "clock: no UDP socket at {any} to reach {peer} and the other addresses of its family: {e}"
                        );
                        None
                    }
                }
            }
        };
        Ok(Sockets { main, other })
    }

    /// The socket that sends to `to`.
    fn to(&self, to: SocketAddr) -> &UdpSocket {
        match &self.other {
            Some(other)
                if self
                    .main
                    .local_addr()
                    .is_ok_and(|a| a.is_ipv4() != to.is_ipv4()) =>
            {
                other
            }
            _ => &self.main,
        }
    }

    async fn send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.to(to).send_to(datagram, to).await
    }

    /// Asks the kernel to stamp what every socket receives (see [`crate::rxstamp`]).
    fn enable_stamps(&self) -> io::Result<()> {
        crate::rxstamp::enable(&self.main)?;
        match &self.other {
            Some(s) => crate::rxstamp::enable(s),
            None => Ok(()),
        }
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<i128>)> {
        match &self.other {
            Some(other) => crate::rxstamp::recv_from_either(&self.main, other, buf).await,
            None => crate::rxstamp::recv_from(&self.main, buf).await,
        }
    }
}

/// The algorithm parameters of a cluster's clocks: the cluster's timeouts, and Berkeley's
/// master elected by the cluster's election algorithm.
pub fn params(cluster: &Cluster) -> Params {
    Params {
        master_election: Some(cluster.file.election.clone()),
        ..cluster.params()
    }
}

/// Runs node `id`'s clock until an I/O error (the caller stops it with its shutdown).
pub async fn run_node(cluster: Cluster, id: NodeId) -> io::Result<()> {
    let settings = cluster
        .file
        .clock
        .clone()
        .ok_or_else(|| io::Error::other(format!("{}: no [clock] table", cluster.origin)))?;
    let params = params(&cluster);
    let runner = Runner {
        cluster,
        id,
        settings: settings.clone(),
        params: params.clone(),
    };
    match registry::visit_clock_sync(&settings.algorithm, &params, runner) {
        Some(fut) => fut.await,
        None => Err(io::Error::other(format!(
            "clock.algorithm: {:?} is not a clock-synchronization algorithm",
            settings.algorithm
        ))),
    }
}

struct Runner {
    cluster: Cluster,
    id: NodeId,
    settings: ClockSettings,
    params: Params,
}

type NodeFuture = Pin<Box<dyn Future<Output = io::Result<()>>>>;

impl ClockSyncVisitor for Runner {
    type Output = NodeFuture;
    fn visit<A: ClockSync + 'static>(self, _entry: &'static Entry) -> NodeFuture {
        Box::pin(node_loop::<A>(self))
    }
}

/// What a node remembers of its corrections, for status answers.
#[derive(Default)]
struct Record {
    master: Option<NodeId>,
    adjustments: u64,
    last: Option<(i64, u64, Option<u64>, Option<NodeId>)>,
    rounds: u64,
}

async fn node_loop<A: ClockSync + 'static>(r: Runner) -> io::Result<()> {
    let Runner {
        cluster,
        id,
        settings,
        params,
    } = r;
    let peers: Peers = cluster.peers.clone();
    A::validate(&params, &peers).map_err(|e| io::Error::other(e.to_string()))?;
    let pos = peers
        .position(id)
        .ok_or_else(|| io::Error::other(format!("node {id} is not in the cluster file")))?;
    let addr = cluster.addrs[pos];
    // Started by `cluster up`: the socket held for this node since its port was chosen.
    let socket = match distsync_net::local::take_inherited_udp(addr) {
        Some(s) => {
            s.set_nonblocking(true)?;
            UdpSocket::from_std(s)?
        }
        None => UdpSocket::bind(addr).await?,
    };
    let socket = Sockets::new(socket, &cluster.addrs).await?;
    if let Err(e) = socket.enable_stamps() {
        tracing::warn!("clock: no kernel receive timestamps ({e}): reading the clock on wake-up");
    }
    let key = key(cluster.secret());
    let started = Instant::now();
    let mono = || started.elapsed().as_nanos() as u64;
    let boot = system_now_ns() as i64;
    let (offset, drift) = settings.artificial(pos, peers.len());
    let mut clock = VirtualClock::new(0, system_now_ns() + offset as i128, drift);
    let mut host = Host::new(A::new(id, &peers, &params), id, peers.clone(), boot as u64);
    let mut seq = 0u64;
    let mut seen: HashMap<NodeId, (i64, u64)> = HashMap::new();
    let mut record = Record::default();
    let interval = settings.sync_interval.as_nanos() as u64;
    let slew = settings.adjust == "slew";
    tracing::info!(
        "clock: {} over UDP {addr}, starting {:+.3}ms off, drift {:+.1}ppm",
        settings.algorithm,
        offset as f64 / 1e6,
        drift * 1e6
    );
    let reading = |clock: &mut VirtualClock, m: u64| -> Time {
        Time::from_nanos(clock.read(m as i128).max(0) as u64)
    };
    // The last reading a handler saw: no handler sees the clock go back (a datagram's arrival
    // time can be earlier than a timer that fired while it waited), except through a
    // correction.
    let mut last_now = Time::ZERO;
    // Start-up: the algorithm starts one sync interval after the socket is bound, so that the
    // nodes `cluster up` starts together are all listening before the first election message;
    // meanwhile its messages are kept for it. A node whose peers already follow a master (they
    // answer the status question sent now with one) joins a running cluster: it starts as a
    // recovered process (`ctx.recovered()`), which the election algorithm answers with an
    // election of its own.
    let mut actions: Vec<Action<A>> = Vec::new();
    let mut started = false;
    let mut joining = false;
    let mut early: Vec<(NodeId, A::Msg)> = Vec::new();
    let mut next_sync = mono() + interval;
    for (&peer, &peer_addr) in peers.ids().iter().zip(&cluster.addrs) {
        if peer != id {
            seq += 1;
            let t1 = clock.read(mono() as i128) as i64;
            let env = Envelope {
                from: Some(id),
                boot,
                seq,
                body: Body::StatusRequest { t1 },
            };
            let _ = socket.send_to(&seal(&key, &env), peer_addr).await;
        }
    }
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        if !started && (joining || next_sync <= mono()) {
            started = true;
            let m = mono();
            let now = reading(&mut clock, m);
            tracing::info!(
                "clock: {} starts{}",
                settings.algorithm,
                if joining {
                    ", joining a running cluster"
                } else {
                    ""
                }
            );
            last_now = now;
            actions.extend(host.start(now, m, joining));
            for (from, msg) in early.drain(..) {
                actions.extend(host.call(now, m, |p, c| p.on_message(from, msg, c)));
            }
            next_sync = m + interval;
        }
        // Carry out what the last handler asked.
        for a in actions.drain(..) {
            match a {
                Action::Send(to, msg) => {
                    let Some(dest) = cluster.addr_of(to) else {
                        continue;
                    };
                    tracing::trace!("clock: to node {to}: {msg:?}");
                    seq += 1;
                    let env = Envelope {
                        from: Some(id),
                        boot,
                        seq,
                        body: Body::Algorithm(
                            serde_json::to_value(&msg).expect("messages serialize"),
                        ),
                    };
                    // A dead peer's port refuses: nothing to do, the algorithm copes.
                    let _ = socket.send_to(&seal(&key, &env), dest).await;
                }
                Action::Output(Output::Adjust {
                    delta_ns,
                    bound_ns,
                    reference,
                }) => {
                    let m = mono();
                    if slew {
                        clock.slew(m as i128, delta_ns as i128);
                    } else {
                        clock.step(m as i128, delta_ns as i128);
                    }
                    // A correction may set the clock back: readings before it no longer bound.
                    last_now = Time::ZERO;
                    record.adjustments += 1;
                    record.last = Some((delta_ns, m, bound_ns, reference));
                    tracing::debug!("clock adjusted by {:+.3}ms", delta_ns as f64 / 1e6);
                }
                Action::Output(Output::Round { .. }) => record.rounds += 1,
                Action::Output(Output::NoMajority { .. }) => record.rounds += 1,
                Action::Output(Output::Master(m)) => {
                    tracing::info!("clock: master is node {m}");
                    record.master = Some(m);
                }
            }
        }
        let timer = host.next_timer();
        let wake = timer
            .as_ref()
            .map_or(next_sync, |(_, at)| (*at).min(next_sync));
        let sleep = Duration::from_nanos(wake.saturating_sub(mono()));
        tokio::select! {
            r = socket.recv_from(&mut buf) => {
                let Ok((n, from_addr, stamp)) = r else { continue };
                let m = mono();
                // The arrival time: the kernel's stamp carried over to the virtual clock (the
                // time since it, on the system clock, taken off the clock's reading now).
                let late = stamp.map_or(0, |k| (system_now_ns() - k).clamp(0, 1_000_000_000));
                let arrived = clock.read(m as i128) - late;
                let t2 = arrived as i64;
                let Some(env) = open(&key, &buf[..n]) else {
                    tracing::debug!("clock: dropped a datagram from {from_addr}: bad MAC or format");
                    continue;
                };
                match env.body {
                    Body::Algorithm(v) => {
                        let Some(from) = env.from.filter(|f| *f != id && peers.contains(*f)) else {
                            continue;
                        };
                        let last = seen.get(&from).copied().unwrap_or((i64::MIN, 0));
                        if (env.boot, env.seq) <= last {
                            continue; // a replay, or a previous incarnation's
                        }
                        seen.insert(from, (env.boot, env.seq));
                        let Ok(msg) = serde_json::from_value::<A::Msg>(v) else {
                            tracing::debug!("clock: undecodable message from node {from}");
                            continue;
                        };
                        tracing::trace!("clock: from node {from}: {msg:?}");
                        if !started {
                            early.push((from, msg));
                            continue;
                        }
                        // Never earlier than a reading a handler already saw.
                        let now = Time::from_nanos(arrived.max(0) as u64).max(last_now);
                        last_now = now;
                        actions = host.call(now, m, |p, c| p.on_message(from, msg, c));
                    }
                    Body::StatusRequest { t1 } => {
                        let age = record.last.map(|(_, at, _, _)| m.saturating_sub(at));
                        let mut status = NodeClock {
                            id,
                            algorithm: settings.algorithm.clone(),
                            t1,
                            t2,
                            t3: 0,
                            master: record.master,
                            stratum: host.process.stratum(),
                            adjustments: record.adjustments,
                            last_adjust_ns: record.last.map(|l| l.0),
                            last_adjust_age_ns: age,
                            bound_ns: record.last.and_then(|l| l.2),
                            reference: record.last.and_then(|l| l.3),
                            rounds: record.rounds,
                            initial_offset_ns: offset,
                            drift_ppm: drift * 1e6,
                            slew_remaining_ns: clock.slew_remaining() as i64,
                        };
                        seq += 1;
                        status.t3 = clock.read(mono() as i128) as i64;
                        let env = Envelope { from: Some(id), boot, seq, body: Body::Status(status) };
                        let _ = socket.send_to(&seal(&key, &env), from_addr).await;
                    }
                    Body::Status(s) => {
                        if !started && s.master.is_some() && env.from.is_some_and(|f| f != id && peers.contains(f)) {
                            joining = true;
                        }
                    }
                }
            }
            _ = tokio::time::sleep(sleep) => {
                if !started {
                    continue;
                }
                let m = mono();
                let now = reading(&mut clock, m);
                if let Some((t, at)) = host.next_timer() {
                    if at <= m {
                        host.take_timer(&t);
                        last_now = now;
                        actions = host.call(now, m, |p, c| p.on_timer(t, c));
                        continue;
                    }
                }
                if next_sync <= m {
                    next_sync = m + interval;
                    last_now = now;
                    actions = host.call(now, m, |p, c| p.on_input(Input::Sync, c));
                }
            }
        }
    }
}

/// One node's clock as seen from the asker: its report and its offset from the asker's system
/// clock.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The node's report.
    pub clock: NodeClock,
    /// θ: the node's virtual clock minus the asker's system clock, in ns.
    pub offset_ns: i64,
    /// δ: the round trip, in ns.
    pub delay_ns: i64,
}

/// Asks every node of `cluster` for its clock `samples` times (each round waits at most
/// `timeout` for the answers) and keeps, per node, the answer with the smallest round trip (NTP's
/// clock filter: its offset has the smallest error bound, half that round trip).
pub async fn status(
    cluster: &Cluster,
    timeout: Duration,
    samples: u32,
) -> io::Result<Vec<(NodeId, Result<Observed, String>)>> {
    let key = key(cluster.secret());
    // A socket of the family of the first address, and one of the other if the cluster has both.
    let first: SocketAddr = match cluster.addrs.first() {
        Some(a) if a.is_ipv6() => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        _ => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
    };
    let socket = Sockets::new(UdpSocket::bind(first).await?, &cluster.addrs).await?;
    let kernel_stamps = socket.enable_stamps().is_ok();
    let boot = system_now_ns() as i64;
    let mut best: HashMap<NodeId, Observed> = HashMap::new();
    let mut seq = 0;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut unsent: HashMap<NodeId, String> = HashMap::new();
    for _ in 0..samples.max(1) {
        let mut sent: HashMap<SocketAddr, (NodeId, i64)> = HashMap::new();
        for (&id, &addr) in cluster.peers.ids().iter().zip(&cluster.addrs) {
            let t1 = system_now_ns() as i64;
            seq += 1;
            let env = Envelope {
                from: None,
                boot,
                seq,
                body: Body::StatusRequest { t1 },
            };
            // A node this machine cannot send to (no route, no socket of its family) is
            // reported as such; the others are still asked.
            if let Err(e) = socket.send_to(&seal(&key, &env), addr).await {
                unsent.insert(id, format!("cannot send to {addr}: {e}"));
                continue;
            }
            sent.insert(addr, (id, t1));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut answered = 0;
        while answered < sent.len() {
            let r = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await;
            let Ok(Ok((n, from, stamp))) = r else {
                if r.is_err() {
                    break;
                }
                continue;
            };
            let now = system_now_ns();
            let t4 = match stamp {
                Some(k) if kernel_stamps && k <= now => k,
                _ => now,
            } as i64;
            let Some(env) = open(&key, &buf[..n]) else {
                continue;
            };
            let (Some(&(id, t1)), Body::Status(clock)) = (sent.get(&from), env.body) else {
                continue;
            };
            if clock.t1 != t1 || clock.id != id {
                continue; // not the answer to this round's question
            }
            answered += 1;
            let (a, b) = (clock.t2 - t1, clock.t3 - t4);
            let seen = Observed {
                offset_ns: (a + b) / 2,
                delay_ns: (a - b).max(0),
                clock,
            };
            let better = best.get(&id).is_none_or(|o| seen.delay_ns < o.delay_ns);
            if better {
                best.insert(id, seen);
            }
        }
    }
    Ok(cluster
        .peers
        .ids()
        .iter()
        .map(|id| {
            (
                *id,
                best.remove(id).ok_or_else(|| {
                    unsent.remove(id).unwrap_or_else(|| {
                        "no answer (down, or not started with [clock])".to_string()
                    })
                }),
            )
        })
        .collect())
}

/// The largest difference between two of these offsets (0 for fewer than two).
pub fn max_skew(offsets: &[i64]) -> i64 {
    match (offsets.iter().max(), offsets.iter().min()) {
        (Some(hi), Some(lo)) => hi - lo,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_with_a_bad_tag_is_refused() {
        let k = key(b"0123456789abcdef0123");
        let env = Envelope {
            from: Some(NodeId(2)),
            boot: 7,
            seq: 1,
            body: Body::StatusRequest { t1: 5 },
        };
        let mut d = seal(&k, &env);
        assert_eq!(open(&k, &d), Some(env));
        let other = key(b"another secret, 20ch");
        assert_eq!(open(&other, &d), None);
        d[3] ^= 1;
        assert_eq!(open(&k, &d), None);
        assert_eq!(open(&k, &d[..10]), None);
    }

    #[test]
    fn skew_is_the_spread() {
        assert_eq!(max_skew(&[3, -2, 7]), 9);
        assert_eq!(max_skew(&[3]), 0);
    }
}
