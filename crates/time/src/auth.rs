//! RFC 5905 symmetric-key authentication (section 7.3, "Key Identifier" and "Message Digest"):
//! after the 48-byte header, a 4-byte key id and a digest of the key followed by the header.
//!
//! Keys are read from a chrony key file (`ID [TYPE] KEY` per line, KEY as `HEX:...` or
//! `[ASCII:]text`). Supported types: SHA256 and SHA512, with their whole digests (32 and 64
//! bytes) after the key id, as chronyd 4 sends them; MD5 and SHA1 are refused by name (not
//! provided). The digest is the legacy construction both ntpd and chrony use:
//! H(key || header), not HMAC. A MAC longer than 20 bytes would read as an extension field in an
//! NTPv4 packet (RFC 7822), so signed requests go out as NTPv3, as chronyd sends them, and a
//! server answers in the request's version.
//!
//! Pure: [`seal`] appends a MAC, [`open`] checks one.

use sha2::{Digest, Sha256, Sha512};
use std::collections::HashMap;
use std::fmt;

/// A hash function of the key file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    /// SHA-256: 32-byte digests.
    Sha256,
    /// SHA-512: 64-byte digests.
    Sha512,
}

impl Hash {
    /// The digest's length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha512 => 64,
        }
    }
}

/// One symmetric key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    /// The hash function.
    pub hash: Hash,
    /// The secret.
    pub secret: Vec<u8>,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?}, {} bytes)", self.hash, self.secret.len())
    }
}

/// Keys by id.
pub type Keys = HashMap<u32, Key>;

/// Reads a chrony key file's text; errors name the line.
pub fn parse_keys(text: &str) -> Result<Keys, String> {
    let mut keys = Keys::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |m: String| format!("line {}: {m}", i + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (id, kind, key) = match fields[..] {
            [id, key] => (id, "MD5", key),
            [id, kind, key] => (id, kind, key),
            _ => return Err(at("expected `ID [TYPE] KEY`".into())),
        };
        let id: u32 = id
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| at(format!("key id {id:?} is not an integer from 1 to 2^32-1")))?;
        let hash = match kind.to_ascii_uppercase().as_str() {
            "SHA256" => Hash::Sha256,
            "SHA512" => Hash::Sha512,
            other => {
                return Err(at(format!(
                    "key type {other} is not supported (SHA256 or SHA512)"
                )))
            }
        };
        let secret = if let Some(hex) = key.strip_prefix("HEX:") {
            decode_hex(hex).ok_or_else(|| at(format!("{hex:?} is not hexadecimal")))?
        } else {
            key.strip_prefix("ASCII:")
                .unwrap_or(key)
                .as_bytes()
                .to_vec()
        };
        if secret.is_empty() {
            return Err(at("the key is empty".into()));
        }
        if keys.insert(id, Key { hash, secret }).is_some() {
            return Err(at(format!("key id {id} appears twice")));
        }
    }
    Ok(keys)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The digest of `header` under `key`: H(key || header).
pub fn digest(key: &Key, header: &[u8]) -> Vec<u8> {
    match key.hash {
        Hash::Sha256 => Sha256::new()
            .chain_update(&key.secret)
            .chain_update(header)
            .finalize()
            .to_vec(),
        Hash::Sha512 => Sha512::new()
            .chain_update(&key.secret)
            .chain_update(header)
            .finalize()
            .to_vec(),
    }
}

/// `header` followed by key id `id` and its digest under `key`.
pub fn seal(header: &[u8; crate::packet::LEN], id: u32, key: &Key) -> Vec<u8> {
    let mut out = header.to_vec();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&digest(key, header));
    out
}

/// What a datagram's authentication says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// No MAC (or not a length a MAC gives): the bytes, for the unauthenticated path.
    Plain(&'a [u8]),
    /// A MAC under a known key, and right: the 48-byte header and the key id.
    Authentic(&'a [u8], u32),
    /// A crypto-NAK: a key id of 0 and no digest (RFC 5905 section 7.4's "authentication
    /// failed" answer).
    CryptoNak,
    /// A MAC that does not check: an unknown key id, or a wrong digest.
    Bad(u32),
}

/// Checks `bytes`' MAC against `keys`.
pub fn open<'a>(bytes: &'a [u8], keys: &Keys) -> Verdict<'a> {
    let len = crate::packet::LEN;
    if bytes.len() == len + 4 && bytes[len..] == [0; 4] {
        return Verdict::CryptoNak;
    }
    if bytes.len() <= len + 4 {
        return Verdict::Plain(bytes);
    }
    let (header, mac) = bytes.split_at(len);
    let id = u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]);
    match keys.get(&id) {
        Some(key)
            if mac.len() == 4 + key.hash.digest_len()
                && constant_time_eq(&digest(key, header), &mac[4..]) =>
        {
            Verdict::Authentic(header, id)
        }
        _ => Verdict::Bad(id),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, Timestamp};

    const FILE: &str = "\
# a comment
1 SHA256 HEX:00112233445566778899aabbccddeeff
2 SHA512 ASCII:tulip   # trailing comment
3 sha256 hyacinth
";

    #[test]
    fn a_chrony_key_file_is_read() {
        let keys = parse_keys(FILE).unwrap();
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[&1].secret[..2], [0x00, 0x11]);
        assert_eq!(keys[&2].hash, Hash::Sha512);
        assert_eq!(keys[&2].secret, b"tulip");
        assert_eq!(keys[&3].secret, b"hyacinth");
        assert!(parse_keys("1 MD5 crocus").unwrap_err().contains("line 1"));
        assert!(parse_keys("7 tulip").unwrap_err().contains("MD5"));
        assert!(parse_keys("0 SHA256 x").unwrap_err().contains("key id"));
        assert!(parse_keys("1 SHA256 HEX:abc")
            .unwrap_err()
            .contains("hexadecimal"));
        assert!(parse_keys("1 SHA256 a\n1 SHA256 b")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn a_sealed_packet_opens_with_the_key_and_not_without() {
        let keys = parse_keys(FILE).unwrap();
        let header = Packet::request(Timestamp(42)).encode();
        let sealed = seal(&header, 1, &keys[&1]);
        assert_eq!(sealed.len(), 48 + 4 + 32);
        assert_eq!(seal(&header, 2, &keys[&2]).len(), 48 + 4 + 64);
        assert_eq!(open(&sealed, &keys), Verdict::Authentic(&header[..], 1));
        // One bit changed in the header, the digest, or the key id: refused.
        for i in [0, 40, 50, 60] {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(matches!(open(&bad, &keys), Verdict::Bad(_)), "byte {i}");
        }
        // A key the server does not have.
        assert_eq!(open(&seal(&header, 9, &keys[&1]), &keys), Verdict::Bad(9));
        // No MAC at all, or a crypto-NAK.
        assert_eq!(open(&header, &keys), Verdict::Plain(&header[..]));
        let mut nak = header.to_vec();
        nak.extend_from_slice(&[0; 4]);
        assert_eq!(open(&nak, &keys), Verdict::CryptoNak);
    }

    #[test]
    fn the_digest_is_the_hash_of_key_then_header() {
        let key = Key {
            hash: Hash::Sha256,
            secret: b"k".to_vec(),
        };
        assert_eq!(digest(&key, b"header")[..], Sha256::digest(b"kheader")[..]);
    }
}
