//! The NTP packet decoder over arbitrary bytes: it never panics, accepts exactly the 48-byte
//! version 3/4 headers, and what it accepts encodes back to the same bytes.

use distsync_time::packet::{DecodeError, Mode, Packet, Timestamp, LEN};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        proptest::collection::vec(any::<u8>(), LEN..=LEN),
    ]) {
        let r = Packet::decode(&bytes);
        let version = bytes.first().map(|b| (b >> 3) & 7);
        match r {
            Ok(p) => {
                prop_assert_eq!(bytes.len(), LEN);
                prop_assert!(p.version == 3 || p.version == 4);
                prop_assert_eq!(&p.encode()[..], &bytes[..]);
            }
            Err(DecodeError::Truncated(n)) => prop_assert!(n < LEN && n == bytes.len()),
            Err(DecodeError::Oversized(n)) => prop_assert!(n > LEN && n == bytes.len()),
            Err(DecodeError::Version(v)) => {
                prop_assert_eq!(bytes.len(), LEN);
                prop_assert_eq!(Some(v), version);
                prop_assert!(v != 3 && v != 4);
            }
            Err(DecodeError::Mode(_)) => prop_assert!(false, "decode() takes any mode"),
        }
        // The mode-checking decoders agree with decode() and the mode bits.
        if let Ok(p) = Packet::decode(&bytes) {
            prop_assert_eq!(Packet::decode_request(&bytes).is_ok(), p.mode == Mode::Client);
            prop_assert_eq!(Packet::decode_reply(&bytes).is_ok(), p.mode == Mode::Server);
        }
    }

    #[test]
    fn checking_a_mac_on_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let keys = distsync_time::auth::parse_keys("1 SHA256 ASCII:tulip\n2 SHA512 ASCII:crocus").unwrap();
        match distsync_time::auth::open(&bytes, &keys) {
            // Random bytes never carry a right digest.
            distsync_time::auth::Verdict::Authentic(..) => prop_assert!(false, "forged: {:?}", bytes),
            distsync_time::auth::Verdict::Plain(b) => prop_assert!(b.len() <= LEN + 4),
            _ => {}
        }
    }

    #[test]
    fn a_valid_header_round_trips(mut header in proptest::array::uniform32(any::<u8>()), tail in proptest::array::uniform16(any::<u8>()), version in 3u8..=4) {
        header[0] = (header[0] & 0b1100_0111) | (version << 3);
        let mut bytes = header.to_vec();
        bytes.extend_from_slice(&tail);
        let p = Packet::decode(&bytes).unwrap();
        prop_assert_eq!(Packet::decode(&p.encode()).unwrap(), p);
        prop_assert_eq!(&p.encode()[..], &bytes[..]);
    }

    #[test]
    fn unix_time_round_trips_through_ntp_timestamps(
        ns in -2_000_000_000_000_000_000i128..4_000_000_000_000_000_000i128,
        shift in -2_000_000_000_000_000_000i128..2_000_000_000_000_000_000i128,
    ) {
        // Within 68 years (2^31 s) of the pivot the era is found again; the fraction loses
        // under 1ns. `shift` spans +-63 years.
        let t = Timestamp::from_unix_nanos(ns);
        let back = t.to_unix_nanos(ns + shift);
        prop_assert!((back - ns).abs() <= 1, "{} -> {:?} -> {}", ns, t, back);
    }
}
