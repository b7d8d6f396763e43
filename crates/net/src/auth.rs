//! Authentication: every connection proves it knows the cluster secret, and every frame after
//! that carries a MAC.
//!
//! Why an HMAC handshake and not TLS: the nodes of a cluster already share a secret (the cluster
//! file), so a pre-shared-key scheme needs no certificates, no CA, and no key files beside the
//! cluster file; it is about a hundred lines over two small, well-kept crates (hmac, sha2), and
//! it gives what the lock service needs: only holders of the secret can connect, and no frame can
//! be forged, altered, replayed or reordered on an established connection. It does NOT encrypt:
//! lock names, node ids and fencing tokens travel in clear. Where that matters, run the cluster
//! over a private network or a VPN (WireGuard), or replace this module with rustls (the handshake
//! and the sealed frames are the only places that would change).
//!
//! The handshake, initiator I (a dialing node or a client) and responder R (the listening node):
//! 1. I -> R `Hello { version, role, nonce_i }` (32 random bytes; role: peer N, or client);
//! 2. R -> I `Challenge { nonce_r }`;
//! 3. I -> R `Proof { HMAC(secret, "distsync initiator" | nonce_i | nonce_r | role) }`; R checks it
//!    in constant time and closes the connection (with a log line) if it is wrong;
//! 4. R -> I `Proof { HMAC(secret, "distsync responder" | nonce_i | nonce_r | role) }`; I checks it,
//!    so a client also knows it reached a real node.
//!
//! R proves itself only after I has, so an outsider learns nothing it could attack offline. Each
//! direction then has its own key, `HMAC(secret, "distsync I->R" | nonce_i | nonce_r)` and the
//! reverse, and each frame is `payload | HMAC(key, seq | payload)` with `seq` counting the frames
//! sent in that direction from 0. Fresh nonces on both sides make every connection's keys new, so
//! frames recorded from one connection are worthless on another.

use distsync_core::NodeId;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of a MAC tag.
pub const TAG: usize = 32;
/// The protocol version this build speaks: the highest a Hello offers. Version 3: the wire in
/// postcard, and the version negotiated (a Hello carries the range its sender speaks, the
/// answer the version agreed or a refusal naming both ranges). Version 2 (bincode, the
/// previous release) had leases, `State.wait_ms`, node and client keys.
pub const VERSION: u16 = 3;

/// The lowest protocol version this build speaks. A release that changes a message bumps
/// [`VERSION`] and keeps speaking the one before it, so that a node of either release accepts
/// the other during a rolling upgrade (docs/net.md, "Rolling upgrades"); version 2 spoke
/// another encoding, so from it the upgrade is a restart of every node.
pub const MIN_VERSION: u16 = 3;

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

impl Role {
    fn bytes(self) -> [u8; 5] {
        match self {
            Role::Peer(id) => {
                let b = id.0.to_be_bytes();
                [1, b[0], b[1], b[2], b[3]]
            }
            Role::Client => [2, 0, 0, 0, 0],
            Role::Admin => [3, 0, 0, 0, 0],
        }
    }
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

/// A fresh random nonce.
pub type Nonce = [u8; 32];

/// Step 1. `version` comes first and is the highest version the sender speaks: its encoding
/// (one variable-length integer) is the same in every version, bincode's of version 2
/// included, so a node reads it before anything else and can refuse any release by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The highest protocol version the sender speaks ([`VERSION`]).
    pub version: u16,
    /// The lowest ([`MIN_VERSION`]).
    pub min_version: u16,
    /// Who connects.
    pub role: Role,
    /// The initiator's nonce.
    pub nonce: Nonce,
}

/// Step 2: the responder's answer to a Hello.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Challenge {
    /// The handshake goes on, in protocol version `version`.
    Go {
        /// The version agreed: the highest both sides speak.
        version: u16,
        /// The responder's nonce.
        nonce: Nonce,
    },
    /// No version in common: the responder speaks `min_version` to `version`; it closes the
    /// connection.
    Refused {
        /// The highest version the responder speaks.
        version: u16,
        /// The lowest.
        min_version: u16,
    },
}

/// Steps 3 and 4.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// The HMAC proving knowledge of the secret.
    pub mac: [u8; 32],
}

/// Which side computes or checks a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The dialing side.
    Initiator,
    /// The listening side.
    Responder,
}

impl Side {
    fn label(self) -> &'static [u8] {
        match self {
            Side::Initiator => b"distsync initiator",
            Side::Responder => b"distsync responder",
        }
    }
}

fn mac_of(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        mac.update(p);
    }
    mac
}

/// The proof `side` sends in the handshake of `role` with these nonces.
pub fn proof(secret: &[u8], side: Side, nonce_i: &Nonce, nonce_r: &Nonce, role: Role) -> Proof {
    let mac = mac_of(secret, &[side.label(), nonce_i, nonce_r, &role.bytes()]);
    Proof {
        mac: mac.finalize().into_bytes().into(),
    }
}

/// Whether `proof` is the one `side` should have sent; compared in constant time.
pub fn check(
    secret: &[u8],
    side: Side,
    nonce_i: &Nonce,
    nonce_r: &Nonce,
    role: Role,
    proof: &Proof,
) -> bool {
    mac_of(secret, &[side.label(), nonce_i, nonce_r, &role.bytes()])
        .verify_slice(&proof.mac)
        .is_ok()
}

/// A fresh nonce from the operating system's randomness.
pub fn nonce() -> Nonce {
    let mut n = [0u8; 32];
    getrandom::getrandom(&mut n).expect("the operating system has no randomness source");
    n
}

/// The two directions' frame keys of one connection, as seen from `side`: (sending, receiving).
pub fn session_keys(
    secret: &[u8],
    side: Side,
    nonce_i: &Nonce,
    nonce_r: &Nonce,
) -> (Sealer, Opener) {
    let key = |label: &[u8]| -> [u8; 32] {
        mac_of(secret, &[label, nonce_i, nonce_r])
            .finalize()
            .into_bytes()
            .into()
    };
    let (i_to_r, r_to_i) = (key(b"distsync I->R"), key(b"distsync R->I"));
    let (send, recv) = match side {
        Side::Initiator => (i_to_r, r_to_i),
        Side::Responder => (r_to_i, i_to_r),
    };
    let keyed =
        |k: [u8; 32]| HmacSha256::new_from_slice(&k).expect("HMAC takes keys of any length");
    (
        Sealer {
            keyed: keyed(send),
            seq: 0,
        },
        Opener {
            keyed: keyed(recv),
            seq: 0,
        },
    )
}

/// Adds the MAC to outgoing frames.
#[derive(Clone)]
pub struct Sealer {
    /// The HMAC keyed once (its inner and outer pads hashed), cloned for each frame.
    keyed: HmacSha256,
    seq: u64,
}

impl Sealer {
    /// `payload | tag`, the tag covering the frame's sequence number.
    pub fn seal(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut mac = self.keyed.clone();
        mac.update(&self.seq.to_be_bytes());
        mac.update(payload);
        let tag = mac.finalize().into_bytes();
        self.seq += 1;
        let mut out = Vec::with_capacity(payload.len() + TAG);
        out.extend_from_slice(payload);
        out.extend_from_slice(&tag);
        out
    }
}

/// Checks the MAC of incoming frames.
#[derive(Clone)]
pub struct Opener {
    /// As in [`Sealer`].
    keyed: HmacSha256,
    seq: u64,
}

/// A frame whose MAC does not verify: forged, altered, replayed, reordered or truncated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadMac;

impl fmt::Display for BadMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame failed authentication (bad MAC)")
    }
}

impl std::error::Error for BadMac {}

impl Opener {
    /// The payload of a sealed frame, if its MAC verifies for the next sequence number.
    pub fn open<'a>(&mut self, frame: &'a [u8]) -> Result<&'a [u8], BadMac> {
        if frame.len() < TAG {
            return Err(BadMac);
        }
        let (payload, tag) = frame.split_at(frame.len() - TAG);
        let mut mac = self.keyed.clone();
        mac.update(&self.seq.to_be_bytes());
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| BadMac)?;
        self.seq += 1;
        Ok(payload)
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

    #[test]
    fn proofs_check_only_with_the_same_secret_nonces_side_and_role() {
        let (ni, nr) = (nonce(), nonce());
        assert_ne!(ni, nr);
        let role = Role::Peer(NodeId(3));
        let p = proof(S, Side::Initiator, &ni, &nr, role);
        assert!(check(S, Side::Initiator, &ni, &nr, role, &p));
        assert!(!check(
            b"another secret!!",
            Side::Initiator,
            &ni,
            &nr,
            role,
            &p
        ));
        assert!(
            !check(S, Side::Responder, &ni, &nr, role, &p),
            "a proof is not reflectable"
        );
        assert!(!check(S, Side::Initiator, &nr, &ni, role, &p));
        assert!(!check(
            S,
            Side::Initiator,
            &ni,
            &nr,
            Role::Peer(NodeId(4)),
            &p
        ));
        assert!(!check(S, Side::Initiator, &ni, &nr, Role::Client, &p));
        let admin = proof(S, Side::Initiator, &ni, &nr, Role::Admin);
        assert!(!check(S, Side::Initiator, &ni, &nr, Role::Client, &admin));
        assert!(check(S, Side::Initiator, &ni, &nr, Role::Admin, &admin));
    }

    #[test]
    fn sealed_frames_open_once_in_order() {
        let (ni, nr) = (nonce(), nonce());
        let (mut seal_i, mut open_i) = session_keys(S, Side::Initiator, &ni, &nr);
        let (mut seal_r, mut open_r) = session_keys(S, Side::Responder, &ni, &nr);
        let a = seal_i.seal(b"first");
        let b = seal_i.seal(b"second");
        // Reordered: the second frame does not verify as the first.
        assert_eq!(open_r.clone().open(&b), Err(BadMac));
        assert_eq!(open_r.open(&a), Ok(&b"first"[..]));
        // Replayed: the first frame does not verify as the second.
        assert_eq!(open_r.clone().open(&a), Err(BadMac));
        assert_eq!(open_r.open(&b), Ok(&b"second"[..]));
        // Altered or truncated.
        let mut c = seal_r.seal(b"reply");
        let mut forged = c.clone();
        forged[0] ^= 1;
        assert_eq!(open_i.clone().open(&forged), Err(BadMac));
        assert_eq!(open_i.clone().open(&c[..10]), Err(BadMac));
        assert_eq!(open_i.clone().open(&[]), Err(BadMac));
        // The other direction's key does not open it.
        assert_eq!(open_r.clone().open(&c), Err(BadMac));
        assert_eq!(open_i.open(&c), Ok(&b"reply"[..]));
        c.clear();
    }
}
