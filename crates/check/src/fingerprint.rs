//! 128-bit fingerprints of states: the state's derived `Hash` writes its bytes into a reusable
//! buffer, digested once by XXH3-128. Two distinct states collide with probability about
//! n^2 / 2^129 for n states.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};

/// A `Hasher` that only collects the bytes it is fed.
struct Bytes<'a>(&'a mut Vec<u8>);

impl Hasher for Bytes<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn write_u8(&mut self, i: u8) {
        self.0.push(i);
    }
    fn write_u16(&mut self, i: u16) {
        self.0.extend_from_slice(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.0.extend_from_slice(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.0.extend_from_slice(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.0.extend_from_slice(&(i as u64).to_le_bytes());
    }
    fn finish(&self) -> u64 {
        0
    }
}

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The fingerprint of a value's structural hash.
pub(crate) fn fingerprint<T: Hash + ?Sized>(value: &T) -> u128 {
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        value.hash(&mut Bytes(&mut buffer));
        xxhash_rust::xxh3::xxh3_128(&buffer)
    })
}

/// A hasher for keys that are already fingerprints: it keeps their low 64 bits.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, i: u128) {
        self.0 = i as u64;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by fingerprints.
pub(crate) type FpMap<V> =
    std::collections::HashMap<u128, V, std::hash::BuildHasherDefault<PassThrough>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_have_equal_fingerprints_and_different_ones_differ() {
        assert_eq!(fingerprint(&vec![1, 2, 3]), fingerprint(&vec![1, 2, 3]));
        assert_ne!(fingerprint(&vec![1, 2, 3]), fingerprint(&vec![1, 3, 2]));
        assert_ne!(fingerprint("ab"), fingerprint("ba"));
        // Lengths are part of the structure: ([1], [2, 3]) is not ([1, 2], [3]).
        assert_ne!(
            fingerprint(&(vec![1u8], vec![2u8, 3])),
            fingerprint(&(vec![1u8, 2], vec![3u8]))
        );
    }
}
