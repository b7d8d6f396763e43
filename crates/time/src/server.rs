//! The NTP server's decisions (RFC 5905 section 9's `fast_xmit`, RFC 4330 section 6), without
//! sockets or clocks: given the bytes that arrived, who sent them, when (the receive timestamp,
//! taken by the caller as early as it can) and what the served clock says about itself, answer
//! with a server-mode reply, a Kiss-o'-Death, or nothing.
//!
//! Rules:
//! 1. Only a well-formed client-mode (3) request of version 3 or 4 (48 bytes exactly) is
//!    answered; anything else gets no reply and changes nothing (not even the rate limiter).
//! 2. A request with a zero transmit timestamp is not answered (its origin would be useless and
//!    it is how a reflector would probe us).
//! 3. Rate limiting: each client address has a bucket of `burst` requests, refilled by one every
//!    `interval`. A request that finds the bucket empty gets a Kiss-o'-Death RATE (leap 3,
//!    stratum 0, reference id "RATE"), at most one per `interval` per client; the others are
//!    dropped. The table of clients is bounded ([`MAX_CLIENTS`]).
//! 4. The reply is mode 4 in the request's version, with the request's poll, the client's
//!    transmit timestamp as origin, the receive timestamp, and the served clock's leap
//!    indicator, stratum, precision, root delay and dispersion, reference id and timestamp. The
//!    transmit timestamp is written by the caller just before sending ([`Reply::stamp`]).
//! 5. An unsynchronized clock is served as leap 3, stratum 0 (RFC 5905 maps stratum 16 to 0 on
//!    the wire), so strict clients reject it.

use crate::packet::{Leap, Mode, Packet, Short, Timestamp};
use std::collections::HashMap;
use std::net::IpAddr;

/// The most client addresses the rate limiter remembers.
pub const MAX_CLIENTS: usize = 4096;

/// What the served clock says about itself when a request is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockInfo {
    /// Whether the clock is synchronized (else leap 3, stratum 0).
    pub synchronized: bool,
    /// The leap warning when synchronized.
    pub leap: Leap,
    /// 1 for a primary server, else one more than its source's.
    pub stratum: u8,
    /// The clock's precision exponent (log2 seconds).
    pub precision: i8,
    /// Round-trip delay to the reference, in ns.
    pub root_delay_ns: u64,
    /// Error bound relative to the reference, in ns.
    pub root_dispersion_ns: u64,
    /// The reference id.
    pub reference_id: [u8; 4],
    /// When the clock was last set or corrected.
    pub reference_ts: Timestamp,
}

/// Rate-limiting settings (rule 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests a client may send at once.
    pub burst: u32,
    /// One request more is allowed per this many nanoseconds.
    pub interval_ns: u64,
    /// As chrony's `ratelimit ... leak L`: of the requests past the limit, one in 2^L at random
    /// is answered anyway (0: none), so that a flood bearing a client's (spoofed) address
    /// cannot starve that client: its own requests still get through, one in 2^L of them.
    pub leak: u32,
}

impl Default for RateLimit {
    /// 16 at once, then one every 250ms: enough for `time query --samples 8` and for chronyd's
    /// iburst, while a flood is answered with RATE; one in four requests past the limit leaks
    /// through (chrony's default `leak 2`).
    fn default() -> Self {
        RateLimit {
            burst: 16,
            interval_ns: 250_000_000,
            leak: 2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: u64,
    last_kiss: Option<u64>,
}

/// What to do with a datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send this reply (after [`Reply::stamp`]).
    Reply(Reply),
    /// Send nothing; why, for the log.
    Drop(&'static str),
}

/// A reply waiting for its transmit timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The packet, transmit timestamp still zero.
    pub packet: Packet,
    /// Whether it is a Kiss-o'-Death.
    pub kiss: bool,
}

impl Reply {
    /// The bytes to send, with `transmit` (taken as late as possible) as the transmit timestamp.
    pub fn stamp(&self, transmit: Timestamp) -> [u8; crate::packet::LEN] {
        Packet {
            transmit_ts: transmit,
            ..self.packet
        }
        .encode()
    }
}

/// Counters, for the log and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Replies sent.
    pub answered: u64,
    /// Kiss-o'-Death RATE replies sent.
    pub kissed: u64,
    /// Datagrams dropped: malformed, wrong mode, zero transmit, or rate-limited past the kiss.
    pub dropped: u64,
    /// Requests past the rate limit answered anyway ([`RateLimit::leak`]; counted in
    /// `answered` too).
    pub leaked: u64,
}

/// The server's state: the rate limiter's buckets and counters.
#[derive(Clone, Debug, Default)]
pub struct Server {
    limit: RateLimit,
    buckets: HashMap<IpAddr, Bucket>,
    /// Counters.
    pub stats: Stats,
    /// The leak's random draws (splitmix64).
    draws: u64,
}

impl Server {
    /// A server with these rate limits.
    pub fn new(limit: RateLimit) -> Server {
        Server {
            limit,
            buckets: HashMap::new(),
            stats: Stats::default(),
            draws: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// Rules 1 to 5 for one datagram from `from`, received at `received` (NTP time) and
    /// `mono_ns` (a monotonic reading, for the rate limiter).
    pub fn handle(
        &mut self,
        bytes: &[u8],
        from: IpAddr,
        received: Timestamp,
        mono_ns: u64,
        clock: &ClockInfo,
    ) -> Decision {
        let request = match Packet::decode_request(bytes) {
            Ok(p) => p,
            Err(_) => return self.drop("malformed or not a client request"),
        };
        if request.transmit_ts == Timestamp::ZERO {
            return self.drop("zero transmit timestamp");
        }
        let mut reply = Packet {
            leap: clock.leap,
            version: request.version,
            mode: Mode::Server,
            stratum: clock.stratum,
            poll: request.poll,
            precision: clock.precision,
            root_delay: Short::from_nanos(clock.root_delay_ns),
            root_dispersion: Short::from_nanos(clock.root_dispersion_ns),
            reference_id: clock.reference_id,
            reference_ts: clock.reference_ts,
            origin_ts: request.transmit_ts,
            receive_ts: received,
            transmit_ts: Timestamp::ZERO,
        };
        if !clock.synchronized {
            reply.leap = Leap::Unsynchronized;
            reply.stratum = 0;
            reply.reference_id = [0; 4];
            reply.reference_ts = Timestamp::ZERO;
        }
        match self.admit(from, mono_ns) {
            Admit::Leak => {
                self.stats.leaked += 1;
                self.stats.answered += 1;
                Decision::Reply(Reply {
                    packet: reply,
                    kiss: false,
                })
            }
            Admit::Yes => {
                self.stats.answered += 1;
                Decision::Reply(Reply {
                    packet: reply,
                    kiss: false,
                })
            }
            Admit::Kiss => {
                self.stats.kissed += 1;
                reply.leap = Leap::Unsynchronized;
                reply.stratum = 0;
                reply.reference_id = *b"RATE";
                Decision::Reply(Reply {
                    packet: reply,
                    kiss: true,
                })
            }
            Admit::No => self.drop("rate-limited (a RATE kiss was sent recently)"),
        }
    }

    fn drop(&mut self, why: &'static str) -> Decision {
        self.stats.dropped += 1;
        Decision::Drop(why)
    }

    /// Rule 3.
    fn admit(&mut self, from: IpAddr, now: u64) -> Admit {
        let RateLimit {
            burst,
            interval_ns,
            leak,
        } = self.limit;
        if !self.buckets.contains_key(&from) && self.buckets.len() >= MAX_CLIENTS {
            // Forget the clients idle longest.
            let mut ats: Vec<u64> = self.buckets.values().map(|b| b.at).collect();
            ats.sort_unstable();
            let cut = ats[ats.len() / 2];
            self.buckets.retain(|_, b| b.at > cut);
        }
        // Drawn for every request (cheap), so that the draws do not depend on the buckets.
        let leaks = leak > 0 && leak < 64 && self.draw() & ((1u64 << leak.min(63)) - 1) == 0;
        let b = self.buckets.entry(from).or_insert(Bucket {
            tokens: burst as f64,
            at: now,
            last_kiss: None,
        });
        let refill = now.saturating_sub(b.at) as f64 / interval_ns.max(1) as f64;
        b.tokens = (b.tokens + refill).min(burst as f64);
        b.at = b.at.max(now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Admit::Yes
        } else if leaks {
            Admit::Leak
        } else if b
            .last_kiss
            .is_none_or(|k| now.saturating_sub(k) >= interval_ns)
        {
            b.last_kiss = Some(now);
            Admit::Kiss
        } else {
            Admit::No
        }
    }
}

enum Admit {
    Yes,
    /// Past the limit, answered anyway (the leak).
    Leak,
    Kiss,
    No,
}

impl Server {
    /// The next random draw (splitmix64: the leak needs no more than an even spread).
    fn draw(&mut self) -> u64 {
        self.draws = self.draws.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.draws;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::DecodeError;

    fn clock() -> ClockInfo {
        ClockInfo {
            synchronized: true,
            leap: Leap::NoWarning,
            stratum: 2,
            precision: -20,
            root_delay_ns: 1_000_000,
            root_dispersion_ns: 2_000_000,
            reference_id: *b"LOCL",
            reference_ts: Timestamp(77 << 32),
        }
    }

    const ME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn reply(d: Decision) -> Reply {
        match d {
            Decision::Reply(r) => r,
            Decision::Drop(why) => panic!("dropped: {why}"),
        }
    }

    #[test]
    fn a_request_is_answered_in_mode_4_echoing_its_transmit_timestamp() {
        let mut s = Server::new(RateLimit::default());
        let mut req = Packet::request(Timestamp(0xdead_beef_0000_0001));
        req.version = 3;
        req.poll = 6;
        let r = reply(s.handle(&req.encode(), ME, Timestamp(100 << 32), 0, &clock()));
        let p = Packet::decode_reply(&r.stamp(Timestamp(101 << 32))).unwrap();
        assert_eq!(p.mode, Mode::Server);
        assert_eq!(p.version, 3);
        assert_eq!(p.poll, 6);
        assert_eq!(p.origin_ts, req.transmit_ts);
        assert_eq!(p.receive_ts, Timestamp(100 << 32));
        assert_eq!(p.transmit_ts, Timestamp(101 << 32));
        assert_eq!(p.stratum, 2);
        assert_eq!(p.leap, Leap::NoWarning);
        assert_eq!(p.reference_id, *b"LOCL");
        assert_eq!(p.root_delay, Short::from_nanos(1_000_000));
        assert_eq!(p.root_dispersion, Short::from_nanos(2_000_000));
        assert_eq!(p.precision, -20);
        assert!(!r.kiss);
    }

    #[test]
    fn bad_packets_get_nothing_and_change_nothing() {
        let mut s = Server::new(RateLimit {
            burst: 1,
            interval_ns: 1_000,
            leak: 0,
        });
        let good = Packet::request(Timestamp(1)).encode();
        let mut server_mode = good;
        server_mode[0] = 0b00_100_100;
        let mut v2 = good;
        v2[0] = 0b00_010_011;
        let bad: [&[u8]; 5] = [&good[..47], &[0; 49], &server_mode, &v2, &[]];
        for b in bad {
            assert!(matches!(
                s.handle(b, ME, Timestamp(5), 0, &clock()),
                Decision::Drop(_)
            ));
        }
        let zero = Packet::request(Timestamp::ZERO).encode();
        assert!(matches!(
            s.handle(&zero, ME, Timestamp(5), 0, &clock()),
            Decision::Drop(_)
        ));
        assert_eq!(s.stats.dropped, 6);
        // The one-request bucket is still full: none of those counted.
        assert!(!reply(s.handle(&good, ME, Timestamp(5), 0, &clock())).kiss);
        assert_eq!(Packet::decode(&[0; 49]), Err(DecodeError::Oversized(49)));
    }

    #[test]
    fn unsynchronized_is_leap_3_stratum_0() {
        let mut s = Server::new(RateLimit::default());
        let c = ClockInfo {
            synchronized: false,
            ..clock()
        };
        let r = reply(s.handle(
            &Packet::request(Timestamp(9)).encode(),
            ME,
            Timestamp(5),
            0,
            &c,
        ));
        assert_eq!(r.packet.leap, Leap::Unsynchronized);
        assert_eq!(r.packet.stratum, 0);
        assert_eq!(r.packet.kiss_code(), None);
    }

    #[test]
    fn the_client_table_is_bounded() {
        let mut s = Server::new(RateLimit::default());
        let req = Packet::request(Timestamp(9)).encode();
        for i in 0..=MAX_CLIENTS as u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            assert!(!reply(s.handle(&req, ip, Timestamp(5), i as u64, &clock())).kiss);
        }
        // Full at 4096: the idlest half was forgotten to make room for the last one.
        assert!(
            s.buckets.len() <= MAX_CLIENTS / 2 + 1,
            "{}",
            s.buckets.len()
        );
        assert!(s.buckets.contains_key(&IpAddr::V4(std::net::Ipv4Addr::from(
            0x0a00_0000 + MAX_CLIENTS as u32
        ))));
    }

    #[test]
    fn a_flood_gets_one_rate_kiss_per_interval() {
        let mut s = Server::new(RateLimit {
            burst: 3,
            interval_ns: 1_000,
            leak: 0,
        });
        let req = Packet::request(Timestamp(9)).encode();
        let mut kinds = Vec::new();
        for t in 0..6 {
            kinds.push(match s.handle(&req, ME, Timestamp(5), t, &clock()) {
                Decision::Reply(r) if r.kiss => {
                    assert_eq!(r.packet.kiss_code().as_deref(), Some("RATE"));
                    assert_eq!(r.packet.origin_ts, Timestamp(9));
                    'K'
                }
                Decision::Reply(_) => 'R',
                Decision::Drop(_) => '-',
            });
        }
        assert_eq!(kinds.iter().collect::<String>(), "RRRK--");
        // One interval later there is one token again.
        assert!(!reply(s.handle(&req, ME, Timestamp(5), 1_006, &clock())).kiss);
        // Another client is not limited.
        let other = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
        assert!(!reply(s.handle(&req, other, Timestamp(5), 6, &clock())).kiss);
        assert_eq!(
            s.stats,
            Stats {
                answered: 5,
                kissed: 1,
                dropped: 2,
                leaked: 0
            }
        );
    }

    /// Reported: 200 spoofed requests a second bearing a client's address starved that client
    /// completely. With chrony's `leak 2`, about one in four requests past the limit is
    /// answered anyway: the client's own requests, mixed into the flood, still get answers.
    #[test]
    fn a_flood_under_a_clients_address_does_not_starve_it() {
        let limit = RateLimit::default();
        assert_eq!(limit.leak, 2);
        let mut s = Server::new(limit);
        let flood = Packet::request(Timestamp(5)).encode();
        let mine = Packet::request(Timestamp(7)).encode();
        let mut answered_mine = 0;
        // 60 s: 200 spoofed requests a second, and the client's own one every 2 s.
        for ms in 0..60_000u64 {
            let now = ms * 1_000_000;
            if ms % 5 == 0 {
                let _ = s.handle(&flood, ME, Timestamp(1 << 32), now, &clock());
            }
            if ms % 2000 == 1 && ms > 1000 {
                if let Decision::Reply(r) = s.handle(&mine, ME, Timestamp(1 << 32), now, &clock()) {
                    if !r.kiss {
                        answered_mine += 1;
                    }
                }
            }
        }
        // 29 requests of the client's own once the burst is used up, each answered with
        // probability about 1/4.
        assert!(answered_mine >= 3, "{answered_mine} of 29 answered");
        let leaked = s.stats.leaked as f64;
        let over = (12_000 + 29 - s.stats.answered + s.stats.leaked) as f64;
        assert!(
            (leaked / over - 0.25).abs() < 0.03,
            "{leaked} of {over} past the limit leaked"
        );
        // Without the leak, the same flood answers none of the client's requests.
        let mut s = Server::new(RateLimit { leak: 0, ..limit });
        let mut none = 0;
        for ms in 0..60_000u64 {
            let now = ms * 1_000_000;
            if ms % 5 == 0 {
                let _ = s.handle(&flood, ME, Timestamp(1 << 32), now, &clock());
            }
            if ms % 2000 == 1 && ms > 1000 {
                if let Decision::Reply(r) = s.handle(&mine, ME, Timestamp(1 << 32), now, &clock()) {
                    if !r.kiss {
                        none += 1;
                    }
                }
            }
        }
        assert_eq!(none, 0);
    }
}
