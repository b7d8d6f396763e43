//! Fuzzes what a node does with bytes from the network before and after authentication: frame
//! parsing with both bounds, decoding of the handshake's messages and of every message type,
//! and decryption of Noise transport messages. Nothing may panic, and an accepted frame must lie
//! within the buffer and the bound.
//!
//! Run with `cargo +nightly fuzz run frame_decoder` from crates/net.
#![no_main]

use distsync_net::{auth, frame, wire};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for max in [frame::MAX_HANDSHAKE_FRAME, auth::MAX_NOISE_MESSAGE] {
        let mut rest = data;
        let ((_, _), (_, mut opener)) = auth::loopback(b"fuzz-secret-0123456789");
        while let Ok(Some(n)) = frame::parse(rest, max) {
            assert!(n >= 1 && n <= max && frame::HEADER + n <= rest.len());
            let payload = &rest[frame::HEADER..frame::HEADER + n];
            let _ = wire::decode::<auth::Hello>(payload);
            let _ = wire::decode::<auth::Answer>(payload);
            let _ = wire::decode::<auth::Agreed>(payload);
            let _ = wire::decode::<wire::PeerMsg>(payload);
            let _ = wire::decode::<wire::ClientRequest>(payload);
            let _ = wire::decode::<wire::ClientReply>(payload);
            let _ = opener.open(payload);
            rest = &rest[frame::HEADER + n..];
        }
    }
});
