//! The NTP client's decisions (RFC 4330 section 5, RFC 5905 sections 8 and 9), without sockets
//! or clocks: check a reply as a strict client does, compute offset, delay and dispersion from
//! the four timestamps, keep each server's best sample, and combine the servers with the same
//! intersection and weighting the simulator's NTP runs (`distsync_algorithms::clocks::ntp`).
//!
//! A reply is rejected, with the reason, when:
//! - it does not decode as a 48-byte version 3/4 server-mode (4) packet;
//! - its origin timestamp is not the transmit timestamp of our request (bogus, or a replay);
//! - it is a Kiss-o'-Death (stratum 0 with a kiss code such as RATE, DENY, RSTR);
//! - the server is unsynchronized (leap indicator 3, or stratum 0 or above 15);
//! - its transmit or receive timestamp is zero;
//! - its root distance (root delay / 2 + root dispersion) exceeds [`MAX_ROOT_DISTANCE_NS`]
//!   (RFC 5905's MAXDIST, 1.5s).
//!
//! ```
//! use distsync_time::client::{evaluate, Rejection};
//! use distsync_time::packet::{Leap, Mode, Packet, Short, Timestamp};
//!
//! const S: u64 = 1 << 32; // one second in NTP's 32.32 format
//! let t1 = Timestamp(1000 * S);
//! // The server is 2s ahead; the request takes 0.25s out, the reply 0.25s back.
//! let reply = Packet {
//!     leap: Leap::NoWarning, version: 4, mode: Mode::Server, stratum: 2, poll: 0,
//!     precision: -20, root_delay: Short(0), root_dispersion: Short(0),
//!     reference_id: *b"GPS\0", reference_ts: Timestamp(1001 * S),
//!     origin_ts: t1, receive_ts: Timestamp(1002 * S + S / 4),
//!     transmit_ts: Timestamp(1002 * S + S / 4),
//! };
//! let t4 = Timestamp(1000 * S + S / 2);
//! let sample = evaluate(&reply.encode(), t1, t4, -20).unwrap();
//! assert_eq!(sample.offset_ns, 2_000_000_000);
//! assert_eq!(sample.delay_ns, 500_000_000);
//! // The same reply to another request is bogus.
//! let other = Timestamp(999 * S);
//! assert_eq!(evaluate(&reply.encode(), other, t4, -20), Err(Rejection::OriginMismatch));
//! ```

use crate::packet::{refid_text, DecodeError, Leap, Packet, Timestamp};
use distsync_algorithms::clocks::ntp::{combine, intersection, largest_agreement, Candidate};
use distsync_core::NodeId;
use serde::Serialize;
use std::fmt;

/// RFC 5905's MAXDIST: a server further than this from its reference is not used.
pub const MAX_ROOT_DISTANCE_NS: u64 = 1_500_000_000;
/// RFC 5905's PHI: the frequency tolerance dispersion grows with, 15 ppm.
pub const PHI: f64 = 15e-6;

/// One good sample from one server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// θ = ((T2 - T1) + (T3 - T4)) / 2: how far the server's clock is ahead of ours, in ns.
    pub offset_ns: i64,
    /// δ = (T4 - T1) - (T3 - T2): the round trip minus the server's processing, in ns.
    pub delay_ns: i64,
    /// ε: the sample's own error from the precisions and the frequency tolerance, in ns.
    pub dispersion_ns: u64,
    /// The server's stratum.
    pub stratum: u8,
    /// The server's reference id, as text.
    pub refid: String,
    /// The server's root delay, in ns.
    pub root_delay_ns: u64,
    /// The server's root dispersion, in ns.
    pub root_dispersion_ns: u64,
}

impl Sample {
    /// λ: the bound on this sample's error relative to the server's reference (RFC 5905's root
    /// distance seen through this sample): δ/2 + ε + the server's root delay / 2 + root
    /// dispersion.
    pub fn root_distance_ns(&self) -> u64 {
        self.delay_ns.max(0) as u64 / 2
            + self.dispersion_ns
            + self.root_delay_ns / 2
            + self.root_dispersion_ns
    }
}

/// Why a reply is not used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Rejection {
    /// It does not decode.
    Malformed(String),
    /// Its origin timestamp is not our transmit timestamp.
    OriginMismatch,
    /// A Kiss-o'-Death with this code.
    Kiss(String),
    /// The server says it is not synchronized.
    Unsynchronized {
        /// Its leap indicator (3 means unknown).
        leap: u8,
        /// Its stratum (0 or 16 mean unsynchronized).
        stratum: u8,
    },
    /// A zero receive or transmit timestamp.
    ZeroTimestamp,
    /// Root distance beyond [`MAX_ROOT_DISTANCE_NS`].
    TooFar(u64),
    /// No reply within the timeout.
    Timeout,
    /// The server could not be reached (an ICMP error, a resolution failure...).
    Unreachable(String),
    /// Asked with a key: the reply is not signed with it (why).
    Unauthenticated(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Malformed(e) => write!(f, "malformed reply: {e}"),
            Rejection::OriginMismatch => {
                write!(
                    f,
                    "origin timestamp is not our transmit timestamp (bogus reply)"
                )
            }
            Rejection::Kiss(code) => write!(f, "kiss-o'-death {code}"),
            Rejection::Unsynchronized { leap, stratum } => write!(
                f,
                "server is unsynchronized (leap indicator {leap}, stratum {stratum})"
            ),
            Rejection::ZeroTimestamp => write!(f, "zero receive or transmit timestamp"),
            Rejection::TooFar(d) => write!(
                f,
                "root distance {:.3}ms exceeds {}ms",
                *d as f64 / 1e6,
                MAX_ROOT_DISTANCE_NS / 1_000_000
            ),
            Rejection::Timeout => write!(f, "no reply"),
            Rejection::Unreachable(e) => write!(f, "unreachable: {e}"),
            Rejection::Unauthenticated(e) => write!(f, "unauthenticated: {e}"),
        }
    }
}

impl Rejection {
    /// A short machine-readable name: `malformed`, `origin_mismatch`, `kiss`,
    /// `unsynchronized`, `zero_timestamp`, `too_far`, `timeout`, `unreachable`,
    /// `unauthenticated`.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Malformed(_) => "malformed",
            Rejection::OriginMismatch => "origin_mismatch",
            Rejection::Kiss(_) => "kiss",
            Rejection::Unsynchronized { .. } => "unsynchronized",
            Rejection::ZeroTimestamp => "zero_timestamp",
            Rejection::TooFar(_) => "too_far",
            Rejection::Timeout => "timeout",
            Rejection::Unreachable(_) => "unreachable",
            Rejection::Unauthenticated(_) => "unauthenticated",
        }
    }
}

impl From<DecodeError> for Rejection {
    fn from(e: DecodeError) -> Self {
        Rejection::Malformed(e.to_string())
    }
}

/// 2^exponent seconds in ns, for precision fields.
pub fn precision_ns(exponent: i8) -> u64 {
    (2f64.powi(exponent as i32) * 1e9).ceil() as u64
}

/// Checks `bytes`, the reply to a request sent with transmit timestamp `t1`, arriving at `t4`;
/// `local_precision` is our clock's precision exponent.
pub fn evaluate(
    bytes: &[u8],
    t1: Timestamp,
    t4: Timestamp,
    local_precision: i8,
) -> Result<Sample, Rejection> {
    let p = Packet::decode_reply(bytes)?;
    if p.origin_ts != t1 {
        return Err(Rejection::OriginMismatch);
    }
    if p.stratum == 0 {
        if let Some(code) = p.kiss_code() {
            return Err(Rejection::Kiss(code));
        }
    }
    if p.leap == Leap::Unsynchronized || p.stratum == 0 || p.stratum > 15 {
        return Err(Rejection::Unsynchronized {
            leap: p.leap.bits(),
            stratum: p.stratum,
        });
    }
    if p.transmit_ts == Timestamp::ZERO || p.receive_ts == Timestamp::ZERO {
        return Err(Rejection::ZeroTimestamp);
    }
    let (t2, t3) = (p.receive_ts, p.transmit_ts);
    // Differences first (RFC 5905 section 8: era-safe), then the sums.
    let a = t2.diff_nanos(t1) as i128;
    let b = t3.diff_nanos(t4) as i128;
    let offset = (a + b) / 2;
    let delay = (a - b).max(0);
    let dispersion = precision_ns(p.precision)
        + precision_ns(local_precision)
        + (PHI * t4.diff_nanos(t1).max(0) as f64) as u64;
    let sample = Sample {
        offset_ns: offset as i64,
        delay_ns: delay as i64,
        dispersion_ns: dispersion,
        stratum: p.stratum,
        refid: refid_text(p.reference_id),
        root_delay_ns: p.root_delay.nanos(),
        root_dispersion_ns: p.root_dispersion.nanos(),
    };
    let distance = sample.root_distance_ns();
    if distance > MAX_ROOT_DISTANCE_NS {
        return Err(Rejection::TooFar(distance));
    }
    Ok(sample)
}

/// What a client does about a Kiss-o'-Death (RFC 5905 section 7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KissAction {
    /// RATE: poll less often (the server sets the pace).
    Slower,
    /// DENY or RSTR: the server refuses us; stop asking it.
    Stop,
    /// Any other code: the reply is just not a sample.
    Ignore,
}

/// RFC 5905 section 7.4: "DENY" and "RSTR" demobilize the association, "RATE" reduces the poll
/// rate; other kiss codes are left alone.
pub fn kiss_action(code: &str) -> KissAction {
    match code {
        "RATE" => KissAction::Slower,
        "DENY" | "RSTR" => KissAction::Stop,
        _ => KissAction::Ignore,
    }
}

/// The clock filter: the sample with the lowest delay (RFC 5905 section 10, as the simulator's
/// NTP keeps it).
pub fn best(samples: &[Sample]) -> Option<&Sample> {
    samples.iter().min_by_key(|s| s.delay_ns)
}

/// The combined estimate over several servers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Combined {
    /// The weighted offset of the truechimers, in ns.
    pub offset_ns: i64,
    /// Its error bound, in ns.
    pub bound_ns: u64,
    /// The servers (indices into the list given) whose intervals agree.
    pub truechimers: Vec<usize>,
    /// The servers left out as falsetickers.
    pub falsetickers: Vec<usize>,
}

/// Selection and combining (the simulator NTP's rules 6 to 9): each server's correctness
/// interval [θ - λ, θ + λ]; the intersection a majority shares; the truechimers' offsets
/// averaged with weights 1/λ. `Err` with the largest agreement when there is no majority.
pub fn select(best: &[(usize, &Sample)]) -> Result<Combined, u32> {
    let candidates: Vec<Candidate> = best
        .iter()
        .map(|(i, s)| Candidate {
            id: NodeId(*i as u32),
            offset: s.offset_ns as f64,
            distance: s.root_distance_ns().max(1) as f64,
        })
        .collect();
    if candidates.is_empty() {
        return Err(0);
    }
    let Some((low, high)) = intersection(&candidates) else {
        return Err(largest_agreement(&candidates));
    };
    let (truechimers, falsetickers): (Vec<Candidate>, Vec<Candidate>) = candidates
        .iter()
        .partition(|c| c.offset - c.distance <= low && c.offset + c.distance >= high);
    let (offset, bound) = combine(&truechimers);
    Ok(Combined {
        offset_ns: offset.round() as i64,
        bound_ns: bound.ceil() as u64,
        truechimers: truechimers.iter().map(|c| c.id.0 as usize).collect(),
        falsetickers: falsetickers.iter().map(|c| c.id.0 as usize).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Mode, Short};

    const S: u64 = 1 << 32;

    fn reply(origin: u64, t2: u64, t3: u64) -> Packet {
        Packet {
            leap: Leap::NoWarning,
            version: 4,
            mode: Mode::Server,
            stratum: 2,
            poll: 0,
            precision: -20,
            root_delay: Short(0),
            root_dispersion: Short(0),
            reference_id: *b"LOCL",
            reference_ts: Timestamp(t2),
            origin_ts: Timestamp(origin),
            receive_ts: Timestamp(t2),
            transmit_ts: Timestamp(t3),
        }
    }

    #[test]
    fn offset_and_delay_from_the_four_timestamps() {
        // Server 100s ahead; 0.25s out, 0.5s back, 0.25s inside the server.
        let t1 = 1000 * S;
        let t2 = 1100 * S + S / 4;
        let p = reply(t1, t2, t2 + S / 4);
        let s = evaluate(&p.encode(), Timestamp(t1), Timestamp(1001 * S), -20).unwrap();
        assert_eq!(s.offset_ns, 99_875_000_000);
        assert_eq!(s.delay_ns, 750_000_000);
        // 2^-20 s twice (954ns each, rounded up) plus 15 ppm of the 1s the exchange took.
        assert_eq!(s.dispersion_ns, 2 * 954 + 15_000);
    }

    #[test]
    fn rejections_name_their_reason() {
        let t1 = 1000 * S;
        let ok = reply(t1, 1000 * S, 1000 * S);
        let eval = |p: Packet| evaluate(&p.encode(), Timestamp(t1), Timestamp(t1 + 1), -20);
        assert!(eval(ok).is_ok());
        assert_eq!(
            eval(Packet {
                origin_ts: Timestamp(t1 + 1),
                ..ok
            }),
            Err(Rejection::OriginMismatch)
        );
        assert_eq!(
            eval(Packet {
                stratum: 0,
                reference_id: *b"RATE",
                ..ok
            }),
            Err(Rejection::Kiss("RATE".into()))
        );
        assert_eq!(
            eval(Packet {
                leap: Leap::Unsynchronized,
                ..ok
            }),
            Err(Rejection::Unsynchronized {
                leap: 3,
                stratum: 2
            })
        );
        assert_eq!(
            eval(Packet { stratum: 16, ..ok }).unwrap_err().code(),
            "unsynchronized"
        );
        assert_eq!(
            eval(Packet {
                transmit_ts: Timestamp::ZERO,
                ..ok
            }),
            Err(Rejection::ZeroTimestamp)
        );
        assert_eq!(
            eval(Packet {
                root_dispersion: Short::from_nanos(2_000_000_000),
                ..ok
            })
            .unwrap_err()
            .code(),
            "too_far"
        );
        assert_eq!(
            eval(Packet {
                mode: Mode::Client,
                ..ok
            })
            .unwrap_err()
            .code(),
            "malformed"
        );
    }

    fn sample(offset_ms: i64, delay_ms: i64) -> Sample {
        Sample {
            offset_ns: offset_ms * 1_000_000,
            delay_ns: delay_ms * 1_000_000,
            dispersion_ns: 0,
            stratum: 1,
            refid: "X".into(),
            root_delay_ns: 0,
            root_dispersion_ns: 0,
        }
    }

    #[test]
    fn kisses_say_slow_down_or_go_away() {
        assert_eq!(kiss_action("RATE"), KissAction::Slower);
        assert_eq!(kiss_action("DENY"), KissAction::Stop);
        assert_eq!(kiss_action("RSTR"), KissAction::Stop);
        assert_eq!(kiss_action("INIT"), KissAction::Ignore);
    }

    #[test]
    fn the_filter_keeps_the_lowest_delay() {
        let ss = [sample(5, 9), sample(1, 2), sample(7, 4)];
        assert_eq!(best(&ss).unwrap().offset_ns, 1_000_000);
    }

    #[test]
    fn a_falseticker_among_three_is_left_out() {
        let (a, b, c) = (sample(1, 4), sample(2, 4), sample(500, 4));
        let combined = select(&[(0, &a), (1, &b), (2, &c)]).unwrap();
        assert_eq!(combined.truechimers, vec![0, 1]);
        assert_eq!(combined.falsetickers, vec![2]);
        assert_eq!(combined.offset_ns, 1_500_000);
        // Two servers that disagree have no majority.
        assert_eq!(select(&[(0, &a), (2, &c)]), Err(1));
    }
}
