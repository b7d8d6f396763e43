//! `distsync time serve`: the NTP server over UDP (the thin tokio layer over [`crate::server`]).
//!
//! It serves either the system clock, or with upstream servers a [`VirtualClock`] disciplined
//! by the simulator's NTP algorithm file (`distsync_algorithms::clocks::Ntp`, unchanged: clock
//! filter, intersection, strata) run through a [`Host`]: the algorithm's requests become mode-3
//! packets to the upstream servers, their replies (checked as [`crate::client::evaluate`] does)
//! become its `Reply` messages, and its `Adjust` outputs correct the virtual clock: a step
//! before the first synchronization (while replies still say leap 3), a slew afterwards, so the
//! served time never runs backwards. The system clock is never touched.
//!
//! The receive timestamp is the kernel's (`SO_TIMESTAMPNS`, see [`crate::rxstamp`]) carried
//! over to the served clock, or where the kernel gives none the clock read as soon as the
//! datagram is out of the socket; the transmit timestamp is read right before sending.

use crate::auth::{Keys, Verdict};
use crate::client::{self, Rejection, PHI};
use crate::host::{Action, Host};
use crate::packet::{Leap, Packet, Timestamp};
pub use crate::rxstamp::system_now_ns;
use crate::server::{ClockInfo, Decision, RateLimit, Server, Stats};
use crate::vclock::VirtualClock;
use distsync_algorithms::clocks::ntp::{Msg, Ntp};
use distsync_core::clock_sync::{ClockSync, Input, Output};
use distsync_core::{Algorithm, NodeId, Params, Peers, Process, Time};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// The longest the upstream poll interval grows to after RATE kisses: 1024 s (RFC 5905's
/// default maximum poll exponent, 10).
pub const MAX_POLL: Duration = Duration::from_secs(1024);

/// The stratum served from the system clock when none is given (chrony's `local` default).
pub const DEFAULT_LOCAL_STRATUM: u8 = 10;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The stratum when serving the system clock (default [`DEFAULT_LOCAL_STRATUM`]).
    pub stratum: u8,
    /// The reference id when serving the system clock (default "LOCL").
    pub refid: [u8; 4],
    /// Upstream servers: serve a virtual clock disciplined from them instead.
    pub upstream: Vec<SocketAddr>,
    /// How often to poll the upstream servers.
    pub poll: Duration,
    /// Declare the clock unsynchronized (leap 3, stratum 0) whatever it is.
    pub unsynchronized: bool,
    /// Serve the clock shifted by this many ns (an artificial error, for experiments).
    pub skew_ns: i64,
    /// Rate limiting.
    pub rate: RateLimit,
    /// Symmetric keys: a request carrying a MAC under one of them is answered with a MAC under
    /// the same key; a MAC that does not check gets no reply. Requests without a MAC are
    /// answered as ever.
    pub keys: Keys,
}

impl ServeOptions {
    /// Serving the system clock on `listen` with the defaults.
    pub fn local(listen: SocketAddr) -> ServeOptions {
        ServeOptions {
            listen,
            stratum: DEFAULT_LOCAL_STRATUM,
            refid: *b"LOCL",
            upstream: Vec::new(),
            poll: Duration::from_secs(8),
            unsynchronized: false,
            skew_ns: 0,
            rate: RateLimit::default(),
            keys: Keys::new(),
        }
    }
}

/// The precision exponent of the system clock: log2 of the smallest step seen between
/// consecutive readings, in seconds (RFC 5905's precision, measured as ntpd and chrony do).
pub fn measure_precision() -> i8 {
    let mut smallest = i128::MAX;
    let mut last = system_now_ns();
    for _ in 0..1000 {
        let now = system_now_ns();
        if now > last {
            smallest = smallest.min(now - last);
        }
        last = now;
    }
    if smallest == i128::MAX {
        return -10;
    }
    ((smallest as f64) / 1e9).log2().ceil().clamp(-30.0, 0.0) as i8
}

/// A reference id for an upstream server: its IPv4 address (RFC 5905), or the first four bytes
/// of an IPv6 address (a simplification of RFC 5905's MD5 hash).
pub fn refid_of(addr: SocketAddr) -> [u8; 4] {
    match addr.ip() {
        IpAddr::V4(ip) => ip.octets(),
        IpAddr::V6(ip) => {
            let o = ip.octets();
            [o[0], o[1], o[2], o[3]]
        }
    }
}

/// The served clock.
struct Clock {
    started: Instant,
    skew_ns: i64,
    upstream: Option<Upstream>,
    stratum: u8,
    refid: [u8; 4],
    precision: i8,
    unsynchronized: bool,
}

/// The virtual clock disciplined from upstream servers.
struct Upstream {
    clock: VirtualClock,
    host: Host<Ntp>,
    socket: UdpSocket,
    addrs: Vec<SocketAddr>,
    /// Per upstream: the transmit timestamp and algorithm reading of the request in flight.
    sent: Vec<Option<(Timestamp, Time)>>,
    /// Per upstream: it sent DENY or RSTR, and is not asked again.
    refused: Vec<bool>,
    synchronized: bool,
    root_dispersion_ns: u64,
    reference_unix_ns: i128,
    refid: [u8; 4],
    poll: Duration,
    next_poll: u64,
}

impl Clock {
    fn mono(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    /// The served time, ns since the Unix epoch.
    fn now_ns(&mut self) -> i128 {
        let mono = self.mono();
        let t = match &mut self.upstream {
            Some(u) => u.clock.read(mono as i128),
            None => system_now_ns(),
        };
        t + self.skew_ns as i128
    }

    fn now_ts(&mut self) -> Timestamp {
        Timestamp::from_unix_nanos(self.now_ns())
    }

    fn info(&mut self) -> ClockInfo {
        let now = self.now_ns();
        let precision = self.precision;
        match &self.upstream {
            None => ClockInfo {
                synchronized: !self.unsynchronized,
                leap: Leap::NoWarning,
                stratum: self.stratum,
                precision,
                root_delay_ns: 0,
                root_dispersion_ns: client::precision_ns(precision),
                reference_id: self.refid,
                reference_ts: Timestamp::from_unix_nanos(now),
            },
            Some(u) => {
                let stratum = u.host.process.stratum().unwrap_or(16);
                // The reference time on the served clock (which adds the skew).
                let reference = u.reference_unix_ns + self.skew_ns as i128;
                let age = (now - reference).max(0) as f64;
                ClockInfo {
                    synchronized: u.synchronized && !self.unsynchronized && stratum < 16,
                    leap: Leap::NoWarning,
                    stratum,
                    precision,
                    root_delay_ns: 0,
                    root_dispersion_ns: u.root_dispersion_ns + (PHI * age) as u64,
                    reference_id: u.refid,
                    reference_ts: Timestamp::from_unix_nanos(reference),
                }
            }
        }
    }
}

/// Runs the server until `shutdown` completes; `ready` is called with the bound address once
/// the socket listens. Returns the server's counters.
pub async fn serve(
    opts: ServeOptions,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()>,
) -> io::Result<Stats> {
    let socket = UdpSocket::bind(opts.listen).await?;
    if let Err(e) = crate::rxstamp::enable(&socket) {
        tracing::warn!("no kernel receive timestamps ({e}): reading the clock on wake-up instead");
    }
    let precision = measure_precision();
    let started = Instant::now();
    let upstream = if opts.upstream.is_empty() {
        None
    } else {
        Some(Upstream::new(&opts, system_now_ns()).await?)
    };
    let mut clock = Clock {
        started,
        skew_ns: opts.skew_ns,
        upstream,
        stratum: opts.stratum,
        refid: opts.refid,
        precision,
        unsynchronized: opts.unsynchronized,
    };
    let mut server = Server::new(opts.rate);
    ready(socket.local_addr()?);
    tokio::pin!(shutdown);
    let mut buf = [0u8; 1024];
    let mut ubuf = [0u8; 1024];
    loop {
        let wake = clock
            .upstream
            .as_ref()
            .map(|u| u.next_wake())
            .unwrap_or(u64::MAX);
        let sleep = Duration::from_nanos(wake.saturating_sub(clock.mono()));
        tokio::select! {
            _ = &mut shutdown => break,
            r = crate::rxstamp::recv_from(&socket, &mut buf) => {
                let (n, from, stamp) = match r {
                    Ok(x) => x,
                    // An ICMP error from an earlier send; nothing to do with this datagram.
                    Err(_) => continue,
                };
                // The kernel's stamp, carried over to the served clock: its reading now, less
                // the time since the datagram arrived (both sides on the system clock).
                let late = stamp.map_or(0, |k| (system_now_ns() - k).clamp(0, 1_000_000_000));
                let received = Timestamp::from_unix_nanos(clock.now_ns() - late);
                // A MAC must check under one of our keys; the reply is then signed with it.
                let (request, key) = match crate::auth::open(&buf[..n], &opts.keys) {
                    Verdict::Plain(b) => (b, None),
                    Verdict::Authentic(header, id) => (header, opts.keys.get(&id).map(|k| (id, k))),
                    Verdict::CryptoNak | Verdict::Bad(_) => {
                        server.stats.dropped += 1;
                        tracing::debug!("{from}: no reply: a MAC that does not check");
                        continue;
                    }
                };
                let info = clock.info();
                let mono = clock.mono();
                match server.handle(request, from.ip(), received, mono, &info) {
                    Decision::Reply(reply) => {
                        let header = reply.stamp(clock.now_ts());
                        let bytes = match key {
                            Some((id, key)) => crate::auth::seal(&header, id, key),
                            None => header.to_vec(),
                        };
                        let _ = socket.send_to(&bytes, from).await;
                    }
                    Decision::Drop(why) => tracing::debug!("{from}: no reply: {why}"),
                }
            }
            r = recv_upstream(&clock.upstream, &mut ubuf) => {
                if let Ok((n, from)) = r {
                    let skew = clock.skew_ns;
                    let mono = clock.mono();
                    if let Some(u) = clock.upstream.as_mut() {
                        u.on_reply(&ubuf[..n], from, mono, precision, skew).await;
                    }
                }
            }
            _ = tokio::time::sleep(sleep), if wake != u64::MAX => {
                let mono = clock.mono();
                let skew = clock.skew_ns;
                if let Some(u) = clock.upstream.as_mut() {
                    u.on_wake(mono, skew).await;
                }
            }
        }
    }
    Ok(server.stats)
}

async fn recv_upstream(
    upstream: &Option<Upstream>,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr)> {
    match upstream {
        Some(u) => u.socket.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

impl Upstream {
    async fn new(opts: &ServeOptions, now_unix_ns: i128) -> io::Result<Upstream> {
        let n = opts.upstream.len() as u32;
        let me = NodeId(n);
        let peers = Peers::range(n + 1);
        let params = Params {
            strata: Some(vec![(0..n).map(NodeId).collect()]),
            answer_timeout: Some(Duration::from_secs(1)),
            max_drift_ppm: Some(PHI * 1e6),
            ..Params::default()
        };
        Ntp::validate(&params, &peers).map_err(|e| io::Error::other(e.to_string()))?;
        let bind: SocketAddr = if opts.upstream[0].is_ipv4() {
            "0.0.0.0:0".parse().expect("literal")
        } else {
            "[::]:0".parse().expect("literal")
        };
        Ok(Upstream {
            clock: VirtualClock::new(0, now_unix_ns, 0.0),
            host: Host::new(Ntp::new(me, &peers, &params), me, peers, 0),
            socket: UdpSocket::bind(bind).await?,
            addrs: opts.upstream.clone(),
            sent: vec![None; n as usize],
            refused: vec![false; n as usize],
            synchronized: false,
            root_dispersion_ns: 0,
            reference_unix_ns: now_unix_ns,
            refid: [0; 4],
            poll: opts.poll,
            next_poll: 0,
        })
    }

    fn next_wake(&self) -> u64 {
        let timer = self.host.next_timer().map_or(u64::MAX, |(_, at)| at);
        timer.min(self.next_poll)
    }

    /// The algorithm's reading of the clock: the virtual clock (with the served skew) as ns
    /// since the Unix epoch.
    fn reading(&mut self, mono: u64, skew: i64) -> Time {
        Time::from_nanos((self.clock.read(mono as i128) + skew as i128).max(0) as u64)
    }

    async fn on_wake(&mut self, mono: u64, skew: i64) {
        let now = self.reading(mono, skew);
        let mut actions = Vec::new();
        if let Some((timer, at)) = self.host.next_timer() {
            if at <= mono {
                self.host.take_timer(&timer);
                actions.extend(self.host.call(now, mono, |p, c| p.on_timer(timer, c)));
            }
        }
        if self.next_poll <= mono {
            self.next_poll = mono + self.poll.as_nanos() as u64;
            actions.extend(self.host.call(now, mono, |p, c| p.on_input(Input::Sync, c)));
        }
        self.carry_out(actions, mono).await;
    }

    async fn on_reply(
        &mut self,
        bytes: &[u8],
        from: SocketAddr,
        mono: u64,
        precision: i8,
        skew: i64,
    ) {
        let now = self.reading(mono, skew);
        let Some(i) = self.addrs.iter().position(|a| *a == from) else {
            return; // not one of ours
        };
        let Some((ts, t1)) = self.sent[i] else {
            return; // nothing in flight: a duplicate or a stray
        };
        let t4 = Timestamp::from_unix_nanos(now.as_nanos() as i128);
        let msg = match client::evaluate(bytes, ts, t4, precision) {
            Ok(_) => {
                let p = Packet::decode(bytes).expect("evaluate decoded it");
                let pivot = now.as_nanos() as i128;
                let time = |t: Timestamp| Time::from_nanos(t.to_unix_nanos(pivot).max(0) as u64);
                Msg::Reply {
                    t1,
                    t2: time(p.receive_ts),
                    t3: time(p.transmit_ts),
                    stratum: p.stratum,
                    root_distance_ns: p.root_delay.nanos() / 2 + p.root_dispersion.nanos(),
                }
            }
            // An unsynchronized server answered: the algorithm takes no sample from it.
            Err(Rejection::Unsynchronized { .. }) => Msg::Reply {
                t1,
                t2: t1,
                t3: t1,
                stratum: distsync_algorithms::clocks::ntp::UNSYNCHRONIZED,
                root_distance_ns: 0,
            },
            Err(Rejection::Kiss(code)) => {
                match client::kiss_action(&code) {
                    client::KissAction::Slower => {
                        self.poll = (self.poll * 2).min(MAX_POLL);
                        tracing::warn!(
                            "upstream {from}: kiss-o'-death {code}: polling every {:?} now",
                            self.poll
                        );
                    }
                    client::KissAction::Stop => {
                        self.refused[i] = true;
                        tracing::warn!("upstream {from}: kiss-o'-death {code}: not asked again");
                    }
                    client::KissAction::Ignore => {
                        tracing::warn!("upstream {from}: kiss-o'-death {code}")
                    }
                }
                return;
            }
            Err(e) => {
                tracing::warn!("upstream {from}: {e}");
                return;
            }
        };
        self.sent[i] = None;
        let actions = self
            .host
            .call(now, mono, |p, c| p.on_message(NodeId(i as u32), msg, c));
        self.carry_out(actions, mono).await;
    }

    async fn carry_out(&mut self, actions: Vec<Action<Ntp>>, mono: u64) {
        for a in actions {
            match a {
                Action::Send(to, Msg::Request { t1 }) => {
                    let i = to.0 as usize;
                    if self.refused[i] {
                        continue;
                    }
                    let ts = Timestamp::from_unix_nanos(t1.as_nanos() as i128);
                    self.sent[i] = Some((ts, t1));
                    let bytes = Packet::request(ts).encode();
                    if let Err(e) = self.socket.send_to(&bytes, self.addrs[i]).await {
                        tracing::warn!("upstream {}: {e}", self.addrs[i]);
                    }
                }
                Action::Send(..) => {}
                Action::Output(Output::Adjust {
                    delta_ns, bound_ns, ..
                }) => {
                    if self.synchronized {
                        self.clock.set_slew(mono as i128, delta_ns as i128);
                    } else {
                        // Before the first synchronization nothing synchronized was served:
                        // a step is allowed.
                        self.clock.step(mono as i128, delta_ns as i128);
                        self.synchronized = true;
                    }
                    self.root_dispersion_ns = bound_ns.unwrap_or(0);
                    self.reference_unix_ns = self.clock.read(mono as i128);
                    tracing::info!(
                        "adjusted by {:+.3}ms (bound {:.3}ms), stratum {:?}",
                        delta_ns as f64 / 1e6,
                        self.root_dispersion_ns as f64 / 1e6,
                        self.host.process.stratum()
                    );
                }
                Action::Output(Output::Round { used, ignored }) => {
                    if let Some(first) = used.first() {
                        self.refid = refid_of(self.addrs[first.0 as usize]);
                    }
                    if !ignored.is_empty() {
                        tracing::info!(
                            "falsetickers: {:?}",
                            ignored
                                .iter()
                                .map(|i| self.addrs[i.0 as usize])
                                .collect::<Vec<_>>()
                        );
                    }
                }
                Action::Output(Output::NoMajority {
                    largest_agreement, ..
                }) => tracing::warn!(
                    "no majority of the upstream servers agrees (largest agreement {largest_agreement}): clock left alone"
                ),
                Action::Output(Output::Master(_)) => {}
            }
        }
    }
}
