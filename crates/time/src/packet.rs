//! The NTP packet (RFC 5905 section 7.3, RFC 4330 for SNTP): the 48-byte header, its
//! timestamp formats, and a strict decoder.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |LI | VN  |Mode |    Stratum    |     Poll      |   Precision   |
//! |                         Root Delay  (16.16)                   |
//! |                       Root Dispersion (16.16)                 |
//! |                          Reference ID                         |
//! |                     Reference Timestamp (64)                  |
//! |                      Origin Timestamp (64)                    |
//! |                      Receive Timestamp (64)                   |
//! |                      Transmit Timestamp (64)                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Timestamps are NTP's 64-bit format: seconds since 1900-01-01 in the high 32 bits (era 0 ends
//! in 2036), a binary fraction of a second in the low 32. Differences between timestamps are
//! taken modulo 2^64 as signed numbers (RFC 5905 section 6), so they stay right across an era
//! boundary as long as the two clocks are within 68 years of each other.
//!
//! The decoder is strict: exactly 48 bytes (a MAC is checked and taken off first by
//! [`crate::auth`]; extension fields are not supported and a packet carrying them is refused),
//! version 3 or 4,
//! and, through [`Packet::decode_request`] and [`Packet::decode_reply`], the expected mode.
//! Decoding never panics, whatever the bytes (a property test feeds it arbitrary input).
//!
//! ```
//! use distsync_time::packet::{DecodeError, Mode, Packet, Timestamp};
//!
//! let t1 = Timestamp::from_unix_nanos(1_700_000_000_000_000_000);
//! let bytes = Packet::request(t1).encode();
//! assert_eq!(bytes.len(), 48);
//! let request = Packet::decode_request(&bytes).unwrap();
//! assert_eq!((request.version, request.mode, request.transmit_ts), (4, Mode::Client, t1));
//! // A client does not take a request for a reply, nor 47 bytes for a packet.
//! assert_eq!(Packet::decode_reply(&bytes), Err(DecodeError::Mode(3)));
//! assert_eq!(Packet::decode(&bytes[..47]), Err(DecodeError::Truncated(47)));
//! ```

use std::fmt;

/// The size of an NTP header without extension fields or MAC.
pub const LEN: usize = 48;

/// Seconds from 1900-01-01 (NTP's prime epoch) to 1970-01-01 (the Unix epoch).
pub const UNIX_OFFSET_SECS: u64 = 2_208_988_800;

/// The leap indicator (2 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leap {
    /// 0: no warning.
    NoWarning,
    /// 1: the last minute of the day has 61 seconds.
    AddSecond,
    /// 2: the last minute of the day has 59 seconds.
    DelSecond,
    /// 3: unknown (the clock is unsynchronized).
    Unsynchronized,
}

impl Leap {
    fn from_bits(b: u8) -> Leap {
        match b & 3 {
            0 => Leap::NoWarning,
            1 => Leap::AddSecond,
            2 => Leap::DelSecond,
            _ => Leap::Unsynchronized,
        }
    }

    /// The indicator's number on the wire.
    pub fn bits(self) -> u8 {
        match self {
            Leap::NoWarning => 0,
            Leap::AddSecond => 1,
            Leap::DelSecond => 2,
            Leap::Unsynchronized => 3,
        }
    }
}

/// The association mode (3 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// 0: reserved.
    Reserved,
    /// 1: symmetric active.
    SymmetricActive,
    /// 2: symmetric passive.
    SymmetricPassive,
    /// 3: client.
    Client,
    /// 4: server.
    Server,
    /// 5: broadcast.
    Broadcast,
    /// 6: NTP control message.
    Control,
    /// 7: reserved for private use.
    Private,
}

impl Mode {
    fn from_bits(b: u8) -> Mode {
        match b & 7 {
            0 => Mode::Reserved,
            1 => Mode::SymmetricActive,
            2 => Mode::SymmetricPassive,
            3 => Mode::Client,
            4 => Mode::Server,
            5 => Mode::Broadcast,
            6 => Mode::Control,
            _ => Mode::Private,
        }
    }

    /// The mode's number on the wire.
    pub fn bits(self) -> u8 {
        match self {
            Mode::Reserved => 0,
            Mode::SymmetricActive => 1,
            Mode::SymmetricPassive => 2,
            Mode::Client => 3,
            Mode::Server => 4,
            Mode::Broadcast => 5,
            Mode::Control => 6,
            Mode::Private => 7,
        }
    }
}

/// A 64-bit NTP timestamp: seconds since 1900 (modulo the era) and a 32-bit fraction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The zero timestamp, which RFC 5905 reserves for "unknown".
    pub const ZERO: Timestamp = Timestamp(0);

    /// The timestamp of an instant given as nanoseconds since the Unix epoch (eras wrap).
    pub fn from_unix_nanos(ns: i128) -> Timestamp {
        let ntp_ns = ns + UNIX_OFFSET_SECS as i128 * 1_000_000_000;
        let secs = ntp_ns.div_euclid(1_000_000_000);
        let sub = ntp_ns.rem_euclid(1_000_000_000) as u64;
        let frac = (((sub as u128) << 32) / 1_000_000_000) as u64;
        Timestamp(((secs as u64 & 0xffff_ffff) << 32) | frac)
    }

    /// Nanoseconds since the Unix epoch, choosing the era that puts the result within 68 years
    /// of `pivot_unix_ns` (a reading of the local clock).
    pub fn to_unix_nanos(self, pivot_unix_ns: i128) -> i128 {
        let pivot = Timestamp::from_unix_nanos(pivot_unix_ns);
        pivot_unix_ns + self.diff_nanos(pivot) as i128
    }

    /// `self - earlier` in nanoseconds, as a signed 64-bit fixed-point difference (RFC 5905
    /// section 6: right across era boundaries for clocks within 68 years of each other).
    pub fn diff_nanos(self, earlier: Timestamp) -> i64 {
        let d = self.0.wrapping_sub(earlier.0) as i64;
        fixed_to_nanos(d)
    }

    /// The seconds field.
    pub fn seconds(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The fraction field.
    pub fn fraction(self) -> u32 {
        self.0 as u32
    }
}

/// A signed 32.32 fixed-point number of seconds in nanoseconds (rounded toward minus infinity).
fn fixed_to_nanos(d: i64) -> i64 {
    ((d as i128 * 1_000_000_000) >> 32) as i64
}

/// A 32-bit NTP short format: 16 bits of seconds, 16 of fraction (root delay and dispersion).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Short(pub u32);

impl Short {
    /// The nearest short-format value to `ns` nanoseconds, saturating at about 65536 s.
    pub fn from_nanos(ns: u64) -> Short {
        let v = ((ns as u128) << 16).div_ceil(1_000_000_000);
        Short(v.min(u32::MAX as u128) as u32)
    }

    /// In nanoseconds.
    pub fn nanos(self) -> u64 {
        ((self.0 as u128 * 1_000_000_000) >> 16) as u64
    }
}

/// One NTP header, with every field as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Leap indicator.
    pub leap: Leap,
    /// Version number (3 or 4 are accepted).
    pub version: u8,
    /// Association mode.
    pub mode: Mode,
    /// Stratum: 0 unspecified or Kiss-o'-Death, 1 primary, 2-15 secondary, 16 unsynchronized.
    pub stratum: u8,
    /// Poll exponent: log2 of the poll interval in seconds.
    pub poll: i8,
    /// Precision exponent: log2 of the clock's precision in seconds.
    pub precision: i8,
    /// Round-trip delay to the reference clock.
    pub root_delay: Short,
    /// Dispersion (error bound) relative to the reference clock.
    pub root_dispersion: Short,
    /// Reference id: a stratum-1 source's ASCII code, an upstream server's IPv4 address, or at
    /// stratum 0 a kiss code ("RATE", "DENY", ...).
    pub reference_id: [u8; 4],
    /// When the clock was last set or corrected.
    pub reference_ts: Timestamp,
    /// Server mode: the client's transmit timestamp, echoed (T1).
    pub origin_ts: Timestamp,
    /// Server mode: when the request arrived (T2).
    pub receive_ts: Timestamp,
    /// When this packet left (T1 in a request, T3 in a reply).
    pub transmit_ts: Timestamp,
}

/// Why bytes are not an acceptable NTP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer than 48 bytes.
    Truncated(usize),
    /// More than 48 bytes (extension fields, or a MAC not taken off by [`crate::auth`]).
    Oversized(usize),
    /// A version other than 3 or 4.
    Version(u8),
    /// Not the mode expected here.
    Mode(u8),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated(n) => write!(f, "truncated: {n} bytes, an NTP header has {LEN}"),
            DecodeError::Oversized(n) => write!(
                f,
                "oversized: {n} bytes (extension fields, or a MAC under no key of ours), expected {LEN}"
            ),
            DecodeError::Version(v) => write!(f, "NTP version {v}, expected 3 or 4"),
            DecodeError::Mode(m) => write!(f, "mode {m} is not the mode expected here"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl Packet {
    /// A client-mode (3) request, version 4, carrying `transmit` (T1) and nothing else, as
    /// RFC 4330 section 5 recommends for a client.
    pub fn request(transmit: Timestamp) -> Packet {
        Packet {
            leap: Leap::NoWarning,
            version: 4,
            mode: Mode::Client,
            stratum: 0,
            poll: 0,
            precision: 0,
            root_delay: Short(0),
            root_dispersion: Short(0),
            reference_id: [0; 4],
            reference_ts: Timestamp::ZERO,
            origin_ts: Timestamp::ZERO,
            receive_ts: Timestamp::ZERO,
            transmit_ts: transmit,
        }
    }

    /// The 48 bytes on the wire.
    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0] = (self.leap.bits() << 6) | ((self.version & 7) << 3) | self.mode.bits();
        b[1] = self.stratum;
        b[2] = self.poll as u8;
        b[3] = self.precision as u8;
        b[4..8].copy_from_slice(&self.root_delay.0.to_be_bytes());
        b[8..12].copy_from_slice(&self.root_dispersion.0.to_be_bytes());
        b[12..16].copy_from_slice(&self.reference_id);
        b[16..24].copy_from_slice(&self.reference_ts.0.to_be_bytes());
        b[24..32].copy_from_slice(&self.origin_ts.0.to_be_bytes());
        b[32..40].copy_from_slice(&self.receive_ts.0.to_be_bytes());
        b[40..48].copy_from_slice(&self.transmit_ts.0.to_be_bytes());
        b
    }

    /// Decodes a packet of any mode: exactly 48 bytes, version 3 or 4.
    pub fn decode(bytes: &[u8]) -> Result<Packet, DecodeError> {
        if bytes.len() < LEN {
            return Err(DecodeError::Truncated(bytes.len()));
        }
        if bytes.len() > LEN {
            return Err(DecodeError::Oversized(bytes.len()));
        }
        let version = (bytes[0] >> 3) & 7;
        if !(3..=4).contains(&version) {
            return Err(DecodeError::Version(version));
        }
        let u32_at =
            |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let u64_at = |i: usize| (u32_at(i) as u64) << 32 | u32_at(i + 4) as u64;
        Ok(Packet {
            leap: Leap::from_bits(bytes[0] >> 6),
            version,
            mode: Mode::from_bits(bytes[0]),
            stratum: bytes[1],
            poll: bytes[2] as i8,
            precision: bytes[3] as i8,
            root_delay: Short(u32_at(4)),
            root_dispersion: Short(u32_at(8)),
            reference_id: [bytes[12], bytes[13], bytes[14], bytes[15]],
            reference_ts: Timestamp(u64_at(16)),
            origin_ts: Timestamp(u64_at(24)),
            receive_ts: Timestamp(u64_at(32)),
            transmit_ts: Timestamp(u64_at(40)),
        })
    }

    /// Decodes a client-mode (3) request, as a server accepts it.
    pub fn decode_request(bytes: &[u8]) -> Result<Packet, DecodeError> {
        Packet::decode(bytes).and_then(|p| p.expect_mode(Mode::Client))
    }

    /// Decodes a server-mode (4) reply, as a client accepts it.
    pub fn decode_reply(bytes: &[u8]) -> Result<Packet, DecodeError> {
        Packet::decode(bytes).and_then(|p| p.expect_mode(Mode::Server))
    }

    fn expect_mode(self, mode: Mode) -> Result<Packet, DecodeError> {
        if self.mode == mode {
            Ok(self)
        } else {
            Err(DecodeError::Mode(self.mode.bits()))
        }
    }

    /// The kiss code of a Kiss-o'-Death packet (stratum 0: "RATE", "DENY", "RSTR", ...), if
    /// this is one and the code is printable ASCII.
    pub fn kiss_code(&self) -> Option<String> {
        let code: Vec<u8> = self
            .reference_id
            .iter()
            .copied()
            .take_while(|&c| c != 0)
            .collect();
        (self.stratum == 0 && !code.is_empty() && code.iter().all(|c| c.is_ascii_graphic()))
            .then(|| String::from_utf8_lossy(&code).into_owned())
    }
}

/// A reference id as text: printable ASCII (a kiss code or a stratum-1 source like "GPS"), or
/// else the dotted quad of an IPv4 address.
pub fn refid_text(id: [u8; 4]) -> String {
    let trimmed: Vec<u8> = id.iter().copied().take_while(|&c| c != 0).collect();
    if !trimmed.is_empty() && trimmed.iter().all(|c| c.is_ascii_graphic()) {
        String::from_utf8_lossy(&trimmed).into_owned()
    } else {
        format!("{}.{}.{}.{}", id[0], id[1], id[2], id[3])
    }
}

/// A reference id from text: up to 4 ASCII characters (padded with zeros), or a dotted quad.
pub fn parse_refid(text: &str) -> Result<[u8; 4], String> {
    if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
        return Ok(ip.octets());
    }
    if text.is_empty() || text.len() > 4 || !text.bytes().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "{text:?}: expected 1 to 4 printable ASCII characters (like \"LOCL\" or \"GPS\") or an IPv4 address"
        ));
    }
    let mut id = [0u8; 4];
    id[..text.len()].copy_from_slice(text.as_bytes());
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unix_epoch_is_2208988800_ntp_seconds() {
        let t = Timestamp::from_unix_nanos(0);
        assert_eq!(t.seconds() as u64, UNIX_OFFSET_SECS);
        assert_eq!(t.fraction(), 0);
        let half = Timestamp::from_unix_nanos(500_000_000);
        assert_eq!(half.fraction(), 1 << 31);
        assert_eq!(half.to_unix_nanos(0), 500_000_000);
    }

    #[test]
    fn era_1_wraps_and_still_subtracts() {
        // 2036-02-07T06:28:16Z is the end of era 0: NTP seconds wrap to 0.
        let end = (1u64 << 32) - UNIX_OFFSET_SECS;
        let before = Timestamp::from_unix_nanos(end as i128 * 1_000_000_000 - 1_000_000_000);
        let after = Timestamp::from_unix_nanos(end as i128 * 1_000_000_000 + 1_000_000_000);
        assert_eq!(after.seconds(), 1);
        assert_eq!(after.diff_nanos(before), 2_000_000_000);
        let pivot = end as i128 * 1_000_000_000;
        assert_eq!(after.to_unix_nanos(pivot), pivot + 1_000_000_000);
    }

    #[test]
    fn short_format_round_trips_to_the_resolution() {
        let s = Short::from_nanos(1_500_000_000);
        assert_eq!(s.0, 0x0001_8000);
        assert_eq!(s.nanos(), 1_500_000_000);
        assert!(Short::from_nanos(1).nanos() <= 15_259); // 2^-16 s
    }

    #[test]
    fn a_request_is_version_4_mode_3() {
        let b = Packet::request(Timestamp(0x1234_5678_9abc_def0)).encode();
        assert_eq!(b[0], 0b00_100_011);
        assert_eq!(&b[40..48], &0x1234_5678_9abc_def0u64.to_be_bytes());
        assert!(Packet::decode_request(&b).is_ok());
        assert_eq!(Packet::decode_reply(&b), Err(DecodeError::Mode(3)));
    }

    #[test]
    fn strictness() {
        let b = Packet::request(Timestamp(1)).encode();
        assert_eq!(Packet::decode(&b[..47]), Err(DecodeError::Truncated(47)));
        let mut long = b.to_vec();
        long.extend_from_slice(&[0; 20]);
        assert_eq!(Packet::decode(&long), Err(DecodeError::Oversized(68)));
        let mut v2 = b;
        v2[0] = 0b00_010_011;
        assert_eq!(Packet::decode(&v2), Err(DecodeError::Version(2)));
        let mut v3 = b;
        v3[0] = 0b00_011_011;
        assert_eq!(Packet::decode_request(&v3).unwrap().version, 3);
    }

    #[test]
    fn refids() {
        assert_eq!(parse_refid("LOCL").unwrap(), *b"LOCL");
        assert_eq!(parse_refid("GPS").unwrap(), *b"GPS\0");
        assert_eq!(parse_refid("10.0.0.1").unwrap(), [10, 0, 0, 1]);
        assert!(parse_refid("TOOLONG").is_err());
        assert_eq!(refid_text(*b"GPS\0"), "GPS");
        assert_eq!(refid_text([127, 0, 0, 1]), "127.0.0.1");
    }
}
