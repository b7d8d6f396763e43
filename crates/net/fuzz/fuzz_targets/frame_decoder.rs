//! Fuzzes what a node does with bytes from the network before and after authentication: frame
//! parsing with both bounds, MAC checking, and decoding of every message type. Nothing may
//! panic, and an accepted frame must lie within the buffer and the bound.
//!
//! Run with `cargo +nightly fuzz run frame_decoder` from crates/net.
#![no_main]

use distsync_net::{auth, frame, wire};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for max in [frame::MAX_HANDSHAKE_FRAME, frame::MAX_FRAME] {
        let mut rest = data;
        while let Ok(Some(n)) = frame::parse(rest, max) {
            assert!(n >= 1 && n <= max && frame::HEADER + n <= rest.len());
            let payload = &rest[frame::HEADER..frame::HEADER + n];
            let _ = wire::decode::<auth::Hello>(payload);
            let _ = wire::decode::<auth::Proof>(payload);
            let _ = wire::decode::<wire::PeerMsg>(payload);
            let _ = wire::decode::<wire::ClientRequest>(payload);
            let _ = wire::decode::<wire::ClientReply>(payload);
            let (_, mut opener) = auth::session_keys(
                b"fuzz-secret-0123456789",
                auth::Side::Responder,
                &[1; 32],
                &[2; 32],
            );
            let _ = opener.open(payload);
            rest = &rest[frame::HEADER + n..];
        }
    }
});
