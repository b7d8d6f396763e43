//! One bit per site: a fixed-length set of membership positions, 64 to a word.
//!
//! It stands in for a `Vec<bool>` in a state where that vector is large (N sites x N flags) and
//! must stay byte-for-byte the same to every observer: it prints with `Debug` (plain and `{:#?}`),
//! serializes and hashes exactly as the `Vec<bool>` with the same flags does. The checker
//! fingerprints states by their `Hash`, so a different hash could change what it explores; the
//! tests below compare all three against a `Vec<bool>` for many lengths and patterns.

use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};

const WORD: usize = u64::BITS as usize;

/// `len` flags, all false at first; flag `k` is bit `k % 64` of word `k / 64`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SiteBits {
    len: usize,
    words: Vec<u64>,
}

impl SiteBits {
    /// `len` flags, all false (as `vec![false; len]`).
    pub(crate) fn new(len: usize) -> Self {
        SiteBits {
            len,
            words: vec![0; len.div_ceil(WORD)],
        }
    }

    /// The number of flags (as `Vec::len`).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Flag `k` (as `v[k]`); panics past the end, as indexing would.
    pub(crate) fn get(&self, k: usize) -> bool {
        assert!(k < self.len, "site position {k} past {} sites", self.len);
        self.bit(k)
    }

    /// Flag `k`, which is below `len`.
    fn bit(&self, k: usize) -> bool {
        self.words[k / WORD] >> (k % WORD) & 1 == 1
    }

    /// Sets flag `k` (as `v[k] = true`); panics past the end, as indexing would.
    pub(crate) fn set(&mut self, k: usize) {
        assert!(k < self.len, "site position {k} past {} sites", self.len);
        self.words[k / WORD] |= 1 << (k % WORD);
    }

    /// Clears every flag (as `v.iter_mut().for_each(|b| *b = false)`).
    pub(crate) fn clear_all(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// The flags in order, as `v.iter().copied()`.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = bool> + '_ {
        (0..self.len).map(|k| self.bit(k))
    }
}

/// As `Vec<bool>`'s `Debug`: `[false, true]`, and the same `{:#?}` form.
impl fmt::Debug for SiteBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// As `Vec<bool>`'s `Serialize`: a sequence of `len` bools, its length given up front.
impl Serialize for SiteBits {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len))?;
        for flag in self.iter() {
            seq.serialize_element(&flag)?;
        }
        seq.end()
    }
}

/// As `Vec<bool>`'s `Hash` (std's `Hash for [T]` with `T = bool`): the length prefix, which
/// `Hasher::write_length_prefix` writes as `write_usize` on every stable hasher, then each flag
/// as `bool` hashes itself (one `write_u8`).
impl Hash for SiteBits {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len);
        for flag in self.iter() {
            flag.hash(state);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::hash::DefaultHasher;

    /// A `Hasher` that records every call, so two values hash alike only if they make the same
    /// calls with the same arguments in the same order (what any hasher may tell apart).
    #[derive(Default)]
    pub(crate) struct Recorder(pub(crate) Vec<String>);

    impl Hasher for Recorder {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.push(format!("write {bytes:?}"));
        }
        fn write_u8(&mut self, i: u8) {
            self.0.push(format!("u8 {i}"));
        }
        fn write_u16(&mut self, i: u16) {
            self.0.push(format!("u16 {i}"));
        }
        fn write_u32(&mut self, i: u32) {
            self.0.push(format!("u32 {i}"));
        }
        fn write_u64(&mut self, i: u64) {
            self.0.push(format!("u64 {i}"));
        }
        fn write_u128(&mut self, i: u128) {
            self.0.push(format!("u128 {i}"));
        }
        fn write_usize(&mut self, i: usize) {
            self.0.push(format!("usize {i}"));
        }
    }

    /// The calls `value`'s `Hash` makes.
    pub(crate) fn recorded<T: Hash + ?Sized>(value: &T) -> Vec<String> {
        let mut r = Recorder::default();
        value.hash(&mut r);
        r.0
    }

    /// `value`'s hash by std's `DefaultHasher::new()` (fixed keys).
    pub(crate) fn std_hash<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut h = DefaultHasher::new();
        value.hash(&mut h);
        h.finish()
    }

    /// Flag patterns over `len` sites: none, all, every other, every third from 1, the ends,
    /// and a fixed pseudo-random one.
    fn patterns(len: usize) -> Vec<Vec<bool>> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ len as u64;
        let mut random = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x & 1 == 1
        };
        vec![
            vec![false; len],
            vec![true; len],
            (0..len).map(|k| k % 2 == 0).collect(),
            (0..len).map(|k| k % 3 == 1).collect(),
            (0..len).map(|k| k == 0 || k + 1 == len).collect(),
            (0..len).map(|_| random()).collect(),
        ]
    }

    fn from_flags(flags: &[bool]) -> SiteBits {
        let mut bits = SiteBits::new(flags.len());
        for (k, &f) in flags.iter().enumerate() {
            if f {
                bits.set(k);
            }
        }
        bits
    }

    const LENGTHS: [usize; 12] = [0, 1, 2, 3, 7, 63, 64, 65, 127, 128, 130, 3000];

    #[test]
    fn new_is_all_false_and_set_get_agree_with_a_vec_of_bool() {
        for len in LENGTHS {
            for flags in patterns(len) {
                let bits = from_flags(&flags);
                assert_eq!(bits.len(), len);
                assert_eq!(bits.iter().len(), len);
                assert_eq!(bits.iter().collect::<Vec<_>>(), flags, "len {len}");
                for (k, &f) in flags.iter().enumerate() {
                    assert_eq!(bits.get(k), f, "len {len}, position {k}");
                }
            }
            assert!(SiteBits::new(len).iter().all(|f| !f));
        }
    }

    #[test]
    fn clear_all_is_new_again() {
        for len in LENGTHS {
            for flags in patterns(len) {
                let mut bits = from_flags(&flags);
                bits.clear_all();
                assert!(bits == SiteBits::new(len), "len {len}");
                assert_eq!(format!("{bits:?}"), format!("{:?}", vec![false; len]));
            }
        }
    }

    #[test]
    fn debug_and_pretty_debug_print_as_a_vec_of_bool() {
        for len in LENGTHS {
            for flags in patterns(len) {
                let bits = from_flags(&flags);
                assert_eq!(format!("{bits:?}"), format!("{flags:?}"), "len {len}");
                assert_eq!(format!("{bits:#?}"), format!("{flags:#?}"), "len {len}");
            }
        }
        let mut bits = SiteBits::new(3);
        bits.set(1);
        assert_eq!(format!("{bits:?}"), "[false, true, false]");
        assert_eq!(
            format!("{bits:#?}"),
            "[\n    false,\n    true,\n    false,\n]"
        );
    }

    #[test]
    fn serializes_as_a_vec_of_bool() {
        for len in LENGTHS {
            for flags in patterns(len) {
                let bits = from_flags(&flags);
                assert_eq!(
                    serde_json::to_string(&bits).unwrap(),
                    serde_json::to_string(&flags).unwrap(),
                    "len {len}"
                );
                assert_eq!(
                    serde_json::to_string_pretty(&bits).unwrap(),
                    serde_json::to_string_pretty(&flags).unwrap(),
                    "len {len}"
                );
            }
        }
    }

    #[test]
    fn hashes_as_a_vec_of_bool_call_for_call() {
        for len in LENGTHS {
            for flags in patterns(len) {
                let bits = from_flags(&flags);
                assert_eq!(recorded(&bits), recorded(&flags), "len {len}");
                assert_eq!(std_hash(&bits), std_hash(&flags), "len {len}");
            }
        }
        // What the calls are, so the comparison above cannot pass by both being empty.
        let mut bits = SiteBits::new(2);
        bits.set(1);
        assert_eq!(recorded(&bits), ["usize 2", "u8 0", "u8 1"]);
    }

    /// Inside a derived `Hash`, next to other fields, as in a site's state.
    #[test]
    fn hashes_as_a_vec_of_bool_inside_a_derived_state() {
        #[derive(Hash)]
        struct State<R> {
            before: u64,
            replied: R,
            after: Vec<(u32, u64)>,
        }
        for len in LENGTHS {
            for flags in patterns(len) {
                let old = State {
                    before: 7,
                    replied: flags.clone(),
                    after: vec![(1, 2)],
                };
                let new = State {
                    before: 7,
                    replied: from_flags(&flags),
                    after: vec![(1, 2)],
                };
                assert_eq!(recorded(&new), recorded(&old), "len {len}");
                assert_eq!(std_hash(&new), std_hash(&old), "len {len}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "site position 3 past 3 sites")]
    fn get_past_the_end_panics_as_indexing_would() {
        SiteBits::new(3).get(3);
    }

    #[test]
    #[should_panic(expected = "site position 5 past 3 sites")]
    fn set_past_the_end_within_the_word_panics() {
        SiteBits::new(3).set(5);
    }
}
