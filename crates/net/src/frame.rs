//! Length-prefixed frames: a 4-byte big-endian length, then that many bytes of payload.
//!
//! The decoder works on a buffer that may hold a partial frame, like mini-redis's `frame.rs`: it
//! answers "a whole frame, this long" ([`parse`] returns `Ok(Some(..))`), "not enough bytes yet"
//! (`Ok(None)`, read more) or "this can never become a valid frame" (`Err`, close the
//! connection). A length above the connection's bound is refused as soon as the 4 length bytes
//! have arrived, before any payload is buffered, so a peer cannot make a node allocate more than
//! the bound. An empty frame is invalid: every message has at least a tag byte.
//!
//! After the handshake each frame is one Noise transport message, so at most
//! [`crate::auth::MAX_NOISE_MESSAGE`] (65535) bytes; a message longer than one Noise message
//! holds is carried by several frames ([`crate::auth::Sealer::seal`]), and [`MAX_FRAME`] bounds
//! the message they make up.

use std::fmt;

/// The largest message a connection carries once authenticated (1 MiB), in as many frames as it
/// takes.
pub const MAX_FRAME: usize = 1 << 20;
/// The largest payload accepted before authentication: handshake messages are small.
pub const MAX_HANDSHAKE_FRAME: usize = 512;
/// Bytes of the length prefix.
pub const HEADER: usize = 4;

/// Why bytes can never become a valid frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix announces more than the bound.
    TooLarge {
        /// The announced payload length.
        len: usize,
        /// The bound in force.
        max: usize,
    },
    /// A zero-length frame.
    Empty,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the limit of {max} bytes")
            }
            FrameError::Empty => write!(f, "empty frame"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Looks for one frame at the start of `buf`. `Ok(Some(n))`: the payload is
/// `buf[HEADER..HEADER + n]` and the frame takes `HEADER + n` bytes; `Ok(None)`: incomplete.
pub fn parse(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    let Some(header) = buf.get(..HEADER) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if buf.len() - HEADER < len {
        return Ok(None);
    }
    Ok(Some(len))
}

/// Appends one frame carrying `payload` to `out`. `payload` must not be empty nor longer than
/// [`MAX_FRAME`]; callers build payloads that satisfy both (after the handshake, at most one
/// Noise message).
pub fn encode(payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(!payload.is_empty() && payload.len() <= MAX_FRAME);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn incomplete_complete_and_invalid() {
        let mut buf = Vec::new();
        encode(b"hello", &mut buf);
        for cut in 0..buf.len() {
            assert_eq!(parse(&buf[..cut], MAX_FRAME), Ok(None), "cut at {cut}");
        }
        assert_eq!(parse(&buf, MAX_FRAME), Ok(Some(5)));
        assert_eq!(&buf[HEADER..HEADER + 5], b"hello");
        assert_eq!(parse(&[0, 0, 0, 0], MAX_FRAME), Err(FrameError::Empty));
        assert_eq!(
            parse(&[0, 0, 2, 1], 512),
            Err(FrameError::TooLarge { len: 513, max: 512 })
        );
        // An oversized length is refused before its payload arrives.
        assert!(parse(&[0xff, 0xff, 0xff, 0xff], MAX_FRAME).is_err());
    }

    #[test]
    fn two_frames_back_to_back() {
        let mut buf = Vec::new();
        encode(b"a", &mut buf);
        encode(b"bc", &mut buf);
        let n = parse(&buf, MAX_FRAME).unwrap().unwrap();
        assert_eq!(n, 1);
        let rest = &buf[HEADER + n..];
        assert_eq!(parse(rest, MAX_FRAME), Ok(Some(2)));
    }

    proptest! {
        /// Arbitrary bytes never panic the decoder, and whatever it accepts is within bounds.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048),
                                       max in 1usize..4096) {
            match parse(&bytes, max) {
                Ok(Some(n)) => prop_assert!(n >= 1 && n <= max && HEADER + n <= bytes.len()),
                Ok(None) => {
                    let short = bytes.len() < HEADER || {
                        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
                        len <= max && bytes.len() < HEADER + len
                    };
                    prop_assert!(short);
                }
                Err(_) => prop_assert!(bytes.len() >= HEADER),
            }
        }

        /// Whatever is encoded decodes to itself.
        #[test]
        fn round_trip(payload in proptest::collection::vec(any::<u8>(), 1..1024)) {
            let mut buf = Vec::new();
            encode(&payload, &mut buf);
            prop_assert_eq!(parse(&buf, MAX_FRAME), Ok(Some(payload.len())));
            prop_assert_eq!(&buf[HEADER..], &payload[..]);
        }
    }
}
