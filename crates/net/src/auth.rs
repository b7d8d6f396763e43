//! Authentication and encryption of every connection: the Noise protocol framework
//! (<https://noiseprotocol.org>) with a pre-shared key, through the `snow` crate.
//!
//! Every connection runs `Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s` ([`NOISE_PARAMS`]): two fresh
//! X25519 ephemeral keys, mixed with the pre-shared key of the connecting side's role, give each
//! connection its own ChaCha20-Poly1305 keys, one per direction. Only a holder of the role's key
//! completes the handshake, every byte after it is encrypted and authenticated, and frames are
//! numbered by Noise's nonces, so none can be forged, altered, replayed, reordered or dropped
//! unnoticed. Why NNpsk0 and not a pattern with static keys (XX, IK): the cluster file's keys are
//! the whole of a cluster's identity ("a pre-shared key, no certificates"), so there is no
//! static key to distribute or pin; psk0 mixes the key in from the first message, so the
//! listening node checks the dialer's key before it answers anything (docs/net.md, "Links").
//!
//! The handshake, initiator I (a dialing node, a client or an admin) and responder R (the
//! listening node):
//! 1. I -> R, in clear: [`Hello`] `{ version, min_version, role }`, and in the same write the
//!    first Noise message (`psk, e`; empty payload, encrypted under the key). Both sides begin
//!    their Noise state with the prologue [`prologue`]`(hello)`: the Hello's bytes as sent or
//!    received, so the offered version range and the role are bound into the handshake, and a
//!    Hello altered on the way (a downgrade) makes the Noise message fail to decrypt.
//! 2. R picks the key of the role (the node key for a node or an admin, the client key for a
//!    client) and answers with an [`Answer`]: `Refused` (no protocol version in common, naming
//!    its range), `Denied` (the Noise message does not decrypt under that key), or `Accepted`
//!    with the second Noise message (`e, ee`), whose encrypted payload is [`Agreed`]: the
//!    version R chose and the range it speaks, which I checks is the highest both speak.
//! 3. I sends [`CONFIRM`] as its first transport message; R accepts the connection only once it
//!    has decrypted it, as WireGuard's responder waits for the initiator's first data packet: a
//!    recorded handshake replayed to R cannot produce it (its ephemeral key is not the
//!    recorder's), so a replay fails at the handshake instead of opening an idle connection.
//!
//! After the handshake every frame on the wire is one Noise transport message of at most
//! [`MAX_NOISE_MESSAGE`] (65535) bytes. A message longer than one Noise message holds
//! is split: each piece's first plaintext byte says whether more follow ([`Sealer::seal`]), and
//! the reassembled message is bounded by [`crate::frame::MAX_FRAME`].

use crate::frame::MAX_FRAME;
use distsync_core::NodeId;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use snow::StatelessTransportState;
use std::fmt;
use std::sync::Arc;

type HmacSha256 = Hmac<Sha256>;

/// The Noise protocol every connection runs.
pub const NOISE_PARAMS: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// Bytes of the authentication tag of a Noise message (ChaCha20-Poly1305).
pub const TAG: usize = 16;
/// The largest Noise message (the specification's 65535 bytes), and so the largest frame on
/// the wire after the handshake.
pub const MAX_NOISE_MESSAGE: usize = 65535;
/// Bytes of a message one Noise message carries: the rest of it is the tag and the byte that
/// says whether more pieces follow.
pub const CHUNK: usize = MAX_NOISE_MESSAGE - TAG - 1;
/// The initiator's first transport message, which completes the handshake for the responder.
pub const CONFIRM: &[u8] = b"distsync link confirmed";

/// The protocol version this build speaks: the highest a Hello offers. Version 4: links on
/// Noise (this module); version 3 had the wire in postcard and the version negotiated (a Hello
/// carries the range its sender speaks, the answer the version agreed or a refusal naming both
/// ranges) over an HMAC challenge-response in clear; version 2 (bincode) had leases,
/// `State.wait_ms`, node and client keys.
pub const VERSION: u16 = 4;

/// The lowest protocol version this build speaks. A release that changes a message bumps
/// [`VERSION`] and keeps speaking the one before it, so that a node of either release accepts
/// the other during a rolling upgrade (docs/net.md, "Rolling upgrades"); version 3 ran another
/// handshake (HMAC, in clear) and version 2 another encoding, so from them the upgrade is a
/// restart of every node.
pub const MIN_VERSION: u16 = 4;

/// For tests of mixed versions: `MIN-MAX` (or one number) to make this process offer that range
/// instead of [`MIN_VERSION`] to [`VERSION`] (unset in production).
pub const VERSION_ENV: &str = "DISTSYNC_TEST_PROTOCOL";

/// The range of protocol versions this process speaks: ([`MIN_VERSION`], [`VERSION`]), or what
/// [`VERSION_ENV`] says.
pub fn versions() -> (u16, u16) {
    static RANGE: std::sync::OnceLock<(u16, u16)> = std::sync::OnceLock::new();
    *RANGE.get_or_init(|| {
        let parsed = std::env::var(VERSION_ENV).ok().and_then(|v| {
            let (lo, hi) = v.split_once('-').unwrap_or((&v, &v));
            let (lo, hi) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
            (lo <= hi).then_some((lo, hi))
        });
        parsed.unwrap_or((MIN_VERSION, VERSION))
    })
}

/// The version two sides speak on a connection: the highest both speak, if any.
pub fn agree(mine: (u16, u16), theirs: (u16, u16)) -> Option<u16> {
    let v = mine.1.min(theirs.1);
    (v >= mine.0.max(theirs.0)).then_some(v)
}

/// "version 3" or "versions 3 to 4".
pub fn range_text((lo, hi): (u16, u16)) -> String {
    if lo == hi {
        format!("protocol version {hi}")
    } else {
        format!("protocol versions {lo} to {hi}")
    }
}

/// Who is connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Node `id` of the cluster, opening its link for messages to the listening node.
    Peer(NodeId),
    /// A client (`distsync lock`, `distsync leader`).
    Client,
    /// An operator (`distsync cluster stop|restart|status` with the cluster file): a client
    /// that may also stop and restart the node. It proves the node key, which only the cluster
    /// file (the admin file) holds: a client key cannot take this role.
    Admin,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Peer(id) => write!(f, "node {id}"),
            Role::Client => write!(f, "client"),
            Role::Admin => write!(f, "admin"),
        }
    }
}

/// Step 1, in clear. `version` comes first and is the highest version the sender speaks: its
/// encoding (one variable-length integer) is the same in every version, bincode's of version 2
/// included, so a node reads it before anything else and can refuse any release by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The highest protocol version the sender speaks ([`VERSION`]).
    pub version: u16,
    /// The lowest ([`MIN_VERSION`]).
    pub min_version: u16,
    /// Who connects.
    pub role: Role,
}

/// Step 2: the responder's answer to a Hello and the first Noise message, in clear. `Refused`
/// is the second variant as version 3's was, so a node of version 3 reads this release's
/// refusal and this release reads version 3's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// The handshake goes on: the second Noise message, whose payload is [`Agreed`].
    Accepted {
        /// The Noise message.
        noise: Vec<u8>,
    },
    /// No version in common: the responder speaks `min_version` to `version`; it closes the
    /// connection.
    Refused {
        /// The highest version the responder speaks.
        version: u16,
        /// The lowest.
        min_version: u16,
    },
    /// The first Noise message does not decrypt under the key of the Hello's role: the
    /// initiator does not hold that key (or the Hello was altered); the responder closes.
    Denied,
}

/// The payload of the responder's Noise message: encrypted, and bound to the Hello by the
/// prologue, so no one on the path can change the version chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agreed {
    /// The version of this connection: the highest both sides speak.
    pub version: u16,
    /// The lowest version the responder speaks.
    pub min_version: u16,
    /// The highest.
    pub max_version: u16,
}

/// Which side of a handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The dialing side.
    Initiator,
    /// The listening side.
    Responder,
}

/// The Noise prologue of a connection whose Hello is `hello` (its bytes on the wire): a label
/// naming this protocol, then the Hello, so both the offered versions and the role are bound
/// into the handshake.
pub fn prologue(hello: &[u8]) -> Vec<u8> {
    let mut p = b"distsync link prologue\0".to_vec();
    p.extend_from_slice(hello);
    p
}

/// The 32-byte pre-shared key Noise mixes in, from a cluster file's key (any length):
/// HMAC-SHA256 of a fixed label under the key.
pub fn psk(secret: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(b"distsync noise psk");
    mac.finalize().into_bytes().into()
}

/// A Noise handshake state for `side`, with the pre-shared key from `secret` and the prologue
/// of `hello`.
pub fn handshake(
    secret: &[u8],
    hello: &[u8],
    side: Side,
) -> Result<snow::HandshakeState, snow::Error> {
    let params = NOISE_PARAMS.parse()?;
    let psk = psk(secret);
    let prologue = prologue(hello);
    let builder = snow::Builder::new(params)
        .psk(0, &psk)?
        .prologue(&prologue)?;
    match side {
        Side::Initiator => builder.build_initiator(),
        Side::Responder => builder.build_responder(),
    }
}

/// The two directions of a connection after its handshake: (sending, receiving).
pub fn split(hs: snow::HandshakeState) -> Result<(Sealer, Opener), snow::Error> {
    let link = Arc::new(hs.into_stateless_transport_mode()?);
    Ok((
        Sealer {
            link: link.clone(),
            nonce: 0,
            plain: Vec::new(),
        },
        Opener {
            link,
            nonce: 0,
            partial: Vec::new(),
            plain: Vec::new(),
        },
    ))
}

/// Both ends of a connection's keys, from a handshake run in memory with `secret`: for tests
/// and fuzzing of [`Opener`] (a connection runs the handshake over its socket).
pub fn loopback(secret: &[u8]) -> ((Sealer, Opener), (Sealer, Opener)) {
    let hello = b"loopback";
    let mut i = handshake(secret, hello, Side::Initiator).expect("valid parameters");
    let mut r = handshake(secret, hello, Side::Responder).expect("valid parameters");
    let (mut m, mut p) = ([0u8; 256], [0u8; 256]);
    let n = i.write_message(&[], &mut m).expect("room");
    r.read_message(&m[..n], &mut p).expect("same key");
    let n = r.write_message(&[], &mut m).expect("room");
    i.read_message(&m[..n], &mut p).expect("same key");
    (
        split(i).expect("handshake done"),
        split(r).expect("handshake done"),
    )
}

/// Encrypts outgoing messages: each is one or more Noise transport messages, framed.
pub struct Sealer {
    link: Arc<StatelessTransportState>,
    nonce: u64,
    /// Scratch: one piece's plaintext.
    plain: Vec<u8>,
}

impl Sealer {
    /// Appends to `out` the frames carrying `payload` (at most [`MAX_FRAME`] bytes): pieces of
    /// at most [`CHUNK`] bytes, each prefixed by 1 when more follow and 0 for the last, each
    /// encrypted as one Noise message under the next nonce, each framed with its length.
    pub fn seal(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), LinkError> {
        if payload.len() > MAX_FRAME {
            return Err(LinkError::TooLong(payload.len()));
        }
        let mut pieces = payload.chunks(CHUNK).peekable();
        if payload.is_empty() {
            return Err(LinkError::TooLong(0));
        }
        while let Some(piece) = pieces.next() {
            self.plain.clear();
            self.plain.push(u8::from(pieces.peek().is_some()));
            self.plain.extend_from_slice(piece);
            let len = self.plain.len() + TAG;
            out.extend_from_slice(&(len as u32).to_be_bytes());
            let at = out.len();
            out.resize(at + len, 0);
            let n = self
                .link
                .write_message(self.nonce, &self.plain, &mut out[at..])
                .map_err(|_| LinkError::Exhausted)?;
            debug_assert_eq!(n, len);
            self.nonce += 1;
        }
        Ok(())
    }
}

/// Decrypts incoming Noise messages and reassembles the messages split across several.
pub struct Opener {
    link: Arc<StatelessTransportState>,
    nonce: u64,
    /// The pieces of a message received so far.
    partial: Vec<u8>,
    /// Scratch: one piece's plaintext.
    plain: Vec<u8>,
}

/// Why a frame after the handshake was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// It does not decrypt under the next nonce: forged, altered, replayed, reordered or
    /// truncated.
    Decrypt,
    /// A message above [`MAX_FRAME`] bytes (sent or reassembled), or an empty one.
    TooLong(usize),
    /// 2^64 messages on one connection: Noise's nonces are used up.
    Exhausted,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Decrypt => write!(
                f,
                "frame failed authentication (it does not decrypt: forged, altered, replayed or reordered)"
            ),
            LinkError::TooLong(0) => write!(f, "empty message"),
            LinkError::TooLong(n) => {
                write!(f, "message of {n} bytes exceeds the limit of {MAX_FRAME} bytes")
            }
            LinkError::Exhausted => write!(f, "the connection's nonces are used up"),
        }
    }
}

impl std::error::Error for LinkError {}

impl Opener {
    /// Decrypts one frame: `Ok(Some(message))` when it completes a message, `Ok(None)` when
    /// more pieces must follow.
    pub fn open(&mut self, frame: &[u8]) -> Result<Option<Vec<u8>>, LinkError> {
        if frame.len() > MAX_NOISE_MESSAGE || frame.len() <= TAG {
            return Err(LinkError::Decrypt);
        }
        self.plain.resize(frame.len(), 0);
        let n = self
            .link
            .read_message(self.nonce, frame, &mut self.plain)
            .map_err(|_| LinkError::Decrypt)?;
        self.nonce += 1;
        let (more, piece) = match self.plain[..n].split_first() {
            Some((0, piece)) => (false, piece),
            Some((1, piece)) => (true, piece),
            _ => return Err(LinkError::Decrypt),
        };
        let len = self.partial.len() + piece.len();
        if len > MAX_FRAME {
            return Err(LinkError::TooLong(len));
        }
        if more {
            self.partial.extend_from_slice(piece);
            return Ok(None);
        }
        if self.partial.is_empty() {
            if piece.is_empty() {
                return Err(LinkError::TooLong(0));
            }
            return Ok(Some(piece.to_vec()));
        }
        let mut message = std::mem::take(&mut self.partial);
        message.extend_from_slice(piece);
        Ok(Some(message))
    }

    /// Whether part of a message has arrived and the rest not yet.
    pub fn in_message(&self) -> bool {
        !self.partial.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &[u8] = b"0123456789abcdef";

    #[test]
    fn two_ranges_agree_on_the_highest_version_both_speak() {
        assert_eq!(agree((3, 3), (3, 3)), Some(3));
        assert_eq!(agree((3, 4), (3, 3)), Some(3));
        assert_eq!(agree((3, 5), (4, 6)), Some(5));
        assert_eq!(agree((4, 4), (3, 3)), None);
        assert_eq!(agree((3, 3), (2, 2)), None);
        assert_eq!(range_text((3, 3)), "protocol version 3");
        assert_eq!(range_text((3, 4)), "protocol versions 3 to 4");
    }

    /// Runs the two Noise messages of a handshake: whether the responder reads the first and
    /// the initiator the second.
    fn handshake_between(
        (secret_i, hello_i): (&[u8], &[u8]),
        (secret_r, hello_r): (&[u8], &[u8]),
    ) -> (bool, bool) {
        let mut i = handshake(secret_i, hello_i, Side::Initiator).unwrap();
        let mut r = handshake(secret_r, hello_r, Side::Responder).unwrap();
        let (mut m, mut p) = ([0u8; 256], [0u8; 256]);
        let n = i.write_message(&[], &mut m).unwrap();
        if r.read_message(&m[..n], &mut p).is_err() {
            return (false, false);
        }
        let n = r.write_message(b"agreed", &mut m).unwrap();
        (true, i.read_message(&m[..n], &mut p).is_ok())
    }

    proptest::proptest! {
        /// A Hello travels in clear, before any key is proved: any bytes decode or fail, never panic.
        #[test]
        fn arbitrary_bytes_never_panic_as_a_hello(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)
        ) {
            let _ = crate::wire::decode::<Hello>(&bytes);
        }
    }

    #[test]
    fn a_handshake_completes_only_with_the_same_key_and_the_same_hello() {
        let hello = |role, lo, hi| {
            crate::wire::encode(&Hello {
                version: hi,
                min_version: lo,
                role,
            })
        };
        let client = hello(Role::Client, 4, 4);
        assert_eq!(handshake_between((S, &client), (S, &client)), (true, true));
        assert_eq!(
            handshake_between((b"another key 0123", &client), (S, &client)),
            (false, false),
            "a wrong key fails at the responder, before it answers"
        );
        // The role and the version range are in the prologue: a Hello altered on the way (a
        // client posing as an admin, a range cut down to force an older version) fails.
        for altered in [
            hello(Role::Admin, 4, 4),
            hello(Role::Peer(NodeId(1)), 4, 4),
            hello(Role::Client, 4, 5),
            hello(Role::Client, 3, 4),
        ] {
            assert_eq!(
                handshake_between((S, &client), (S, &altered)),
                (false, false),
                "{altered:?}"
            );
        }
    }

    /// The frames `payloads` are sealed into, without their length prefixes.
    fn sealed(seal: &mut Sealer, payloads: &[&[u8]]) -> Vec<Vec<u8>> {
        payloads
            .iter()
            .map(|p| {
                let mut out = Vec::new();
                seal.seal(p, &mut out).unwrap();
                out[crate::frame::HEADER..].to_vec()
            })
            .collect()
    }

    #[test]
    fn sealed_messages_open_once_in_order() {
        let ((mut seal_i, _), (_, mut open_r)) = loopback(S);
        let f = sealed(&mut seal_i, &[b"first", b"second"]);
        // No plaintext on the wire.
        assert!(!f[0].windows(5).any(|w| w == b"first"));
        // Reordered: the second does not open as the first.
        assert_eq!(open_r.open(&f[1]), Err(LinkError::Decrypt));
        let ((mut seal_i, _), (mut seal_r, mut open_r)) = loopback(S);
        let f = sealed(&mut seal_i, &[b"first", b"second"]);
        assert_eq!(open_r.open(&f[0]), Ok(Some(b"first".to_vec())));
        // Replayed: the first does not open as the second.
        assert_eq!(open_r.open(&f[0]), Err(LinkError::Decrypt));
        // This direction's own frames do not open either (one key per direction).
        let mine = sealed(&mut seal_r, &[b"reply"]);
        assert_eq!(open_r.open(&mine[0]), Err(LinkError::Decrypt));
        // Altered, truncated or empty.
        let ((_, mut open_i), (mut seal_r, _)) = loopback(S);
        let c = sealed(&mut seal_r, &[b"reply"]).remove(0);
        let mut forged = c.clone();
        forged[3] ^= 1;
        assert_eq!(open_i.open(&forged), Err(LinkError::Decrypt));
        assert_eq!(open_i.open(&c[..10]), Err(LinkError::Decrypt));
        assert_eq!(open_i.open(&[]), Err(LinkError::Decrypt));
        assert_eq!(open_i.open(&c), Ok(Some(b"reply".to_vec())));
        // Another connection's keys (same secret) do not open it.
        let ((_, mut other), _) = loopback(S);
        assert_eq!(other.open(&c), Err(LinkError::Decrypt));
    }

    #[test]
    fn a_message_longer_than_a_noise_message_is_split_and_reassembled() {
        let ((mut seal, _), (_, mut open)) = loopback(S);
        let big: Vec<u8> = (0..3 * CHUNK + 7).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        seal.seal(&big, &mut out).unwrap();
        seal.seal(b"next", &mut out).unwrap();
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while let Ok(Some(n)) = crate::frame::parse(rest, MAX_NOISE_MESSAGE) {
            frames.push(&rest[4..4 + n]);
            rest = &rest[4 + n..];
        }
        assert!(rest.is_empty());
        assert_eq!(frames.len(), 5, "four pieces, then the next message");
        assert!(frames.iter().all(|f| f.len() <= MAX_NOISE_MESSAGE));
        for f in &frames[..3] {
            assert_eq!(open.open(f), Ok(None));
            assert!(open.in_message());
        }
        assert_eq!(open.open(frames[3]), Ok(Some(big)));
        assert_eq!(open.open(frames[4]), Ok(Some(b"next".to_vec())));
        // Above the bound: refused when sealed.
        let huge = vec![0u8; MAX_FRAME + 1];
        assert_eq!(
            seal.seal(&huge, &mut Vec::new()),
            Err(LinkError::TooLong(MAX_FRAME + 1))
        );
    }
}
