//! 128-bit fingerprints of states: two SipHash streams with different salts, fed the same
//! canonical bytes. Two distinct states collide with probability about n^2 / 2^129 for n states.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A hasher producing a 128-bit digest.
pub(crate) struct Fp {
    a: DefaultHasher,
    b: DefaultHasher,
}

impl Fp {
    pub(crate) fn new() -> Fp {
        let a = DefaultHasher::new();
        let mut b = DefaultHasher::new();
        b.write_u64(0x9e37_79b9_7f4a_7c15);
        Fp { a, b }
    }

    /// The digest of everything written so far.
    pub(crate) fn finish128(&self) -> u128 {
        (u128::from(self.a.finish()) << 64) | u128::from(self.b.finish())
    }
}

impl Hasher for Fp {
    fn write(&mut self, bytes: &[u8]) {
        self.a.write(bytes);
        self.b.write(bytes);
    }

    fn finish(&self) -> u64 {
        self.a.finish()
    }
}

thread_local! {
    /// A reusable buffer for renderings: hashing one long string is much faster than hashing
    /// the many small pieces `Debug` writes.
    static BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The fingerprint of a value's `Debug` rendering.
pub(crate) fn of_debug<T: fmt::Debug + ?Sized>(value: &T) -> u128 {
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        // Writing into a String cannot fail.
        let _ = fmt::write(&mut *buffer, format_args!("{value:?}"));
        let mut fp = Fp::new();
        fp.write(buffer.as_bytes());
        fp.finish128()
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

/// A set of fingerprints.
pub(crate) type FpMap<V> =
    std::collections::HashMap<u128, V, std::hash::BuildHasherDefault<PassThrough>>;

/// A 64-bit hash of a value, used to order the messages of a non-FIFO link canonically.
pub(crate) fn of_hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_renderings_have_equal_fingerprints_and_different_ones_differ() {
        assert_eq!(of_debug(&vec![1, 2, 3]), of_debug(&vec![1, 2, 3]));
        assert_ne!(of_debug(&vec![1, 2, 3]), of_debug(&vec![1, 3, 2]));
        assert_ne!(of_debug("ab"), of_debug("ba"));
        let fp = of_debug(&(1u8, "x"));
        assert_ne!(
            fp >> 64,
            fp & u128::from(u64::MAX),
            "the two halves are distinct streams"
        );
    }
}
