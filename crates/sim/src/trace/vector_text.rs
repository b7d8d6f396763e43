//! A vector timestamp kept together with its JSON text.
//!
//! Every process event's trace line carries the observer's vector timestamp of that process: at
//! N = 32 that is most of the line's bytes. Between two events of a process only a few entries
//! change (its own on every event, the merged ones on a delivery), so the text is kept with the
//! vector and only the changed entries' digits are rewritten: in place when the number of digits
//! stays the same, spliced in when it grows. A line then copies the whole text at once. The text
//! is always what `serde_json` writes for the vector (`[a,b,...]`, no spaces); the tests compare
//! the two on random vectors and random sequences of updates.

use super::digits;

/// A vector of counters and its JSON array text, kept equal.
#[derive(Clone, Debug)]
pub(crate) struct VectorText {
    values: Vec<u64>,
    /// `[a,b,...]`: the values' decimal digits, separated by commas, in brackets.
    text: Vec<u8>,
    /// Where entry `i`'s digits end in `text` (exclusive: its comma, or the `]`); they begin
    /// as many bytes before as the value has digits.
    ends: Vec<usize>,
}

impl VectorText {
    /// A vector of `n` zeros.
    pub(crate) fn zeros(n: usize) -> VectorText {
        let mut text = Vec::with_capacity(2 * n + 2);
        let mut ends = Vec::with_capacity(n);
        text.push(b'[');
        for i in 0..n {
            if i > 0 {
                text.push(b',');
            }
            text.push(b'0');
            ends.push(text.len());
        }
        text.push(b']');
        VectorText {
            values: vec![0; n],
            text,
            ends,
        }
    }

    /// The counters.
    #[inline]
    pub(crate) fn values(&self) -> &[u64] {
        &self.values
    }

    /// The counters as a JSON array, exactly as `serde_json` writes `values()`.
    #[inline]
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// Sets entry `i` to `value`, rewriting its digits.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, value: u64) {
        let old = std::mem::replace(&mut self.values[i], value);
        let end = self.ends[i];
        let n = digits::len_u64(value);
        if n == digits::len_u64(old) && value < 100_000_000 && end >= 8 {
            // The same number of digits (most merges), at most eight: the eight bytes ending
            // with the entry read, its digits put in, stored back, without formatting them
            // elsewhere and copying them in (a call to `memcpy` for a few bytes).
            let word = digits::ascii8(value);
            let mask = u64::MAX << (8 * (8 - n));
            let bytes: &mut [u8; 8] = (&mut self.text[end - 8..end])
                .try_into()
                .expect("eight bytes");
            let old = u64::from_le_bytes(*bytes);
            *bytes = ((old & !mask) | (word & mask)).to_le_bytes();
        } else {
            self.resize_entry(i, value, end - digits::len_u64(old), end);
        }
    }

    /// Sets entry `i`, whose digits lie in `text[start..end]`, to `value` (already in
    /// `values`), of another number of digits or more than eight: the text after it moves.
    #[cold]
    fn resize_entry(&mut self, i: usize, value: u64, start: usize, end: usize) {
        let mut buf = itoa::Buffer::new();
        let digits = buf.format(value).as_bytes();
        // This entry's end and the later ones move by the difference in length.
        let (old, new) = (end - start, digits.len());
        self.text.splice(start..end, digits.iter().copied());
        for e in &mut self.ends[i..] {
            if new > old {
                *e += new - old;
            } else {
                *e -= old - new;
            }
        }
    }

    /// Adds one to entry `i`: its last digit counted up in place, unless it is a nine (then
    /// the digits are written again: 19 + 1 = 20, 99 + 1 = 100).
    #[inline]
    pub(crate) fn increment(&mut self, i: usize) {
        let value = self.values[i] + 1;
        let last = &mut self.text[self.ends[i] - 1];
        if *last != b'9' {
            *last += 1;
            self.values[i] = value;
        } else {
            self.set(i, value);
        }
    }

    /// Raises every entry to the other vector's where that is larger (a vector clock's merge);
    /// the other vector has the same length.
    #[inline]
    pub(crate) fn merge(&mut self, other: &[u64]) {
        debug_assert_eq!(self.values.len(), other.len());
        let n = other.len().min(self.values.len());
        let mut base = 0;
        while base < n {
            let end = (base + 64).min(n);
            // Which entries are raised, found without a branch per entry: about six of the 32
            // at N = 32, in no order a branch predictor learns.
            let mut raised = raised(&self.values[base..end], &other[base..end]);
            while raised != 0 {
                let i = base + raised.trailing_zeros() as usize;
                self.set(i, other[i]);
                raised &= raised - 1;
            }
            base = end;
        }
    }
}

/// A bit per entry of `mine` (at most 64), set where `theirs` (as long) is larger, two
/// entries at a time.
#[inline]
fn raised(mine: &[u64], theirs: &[u64]) -> u64 {
    debug_assert!(mine.len() <= 64 && mine.len() == theirs.len());
    let theirs = &theirs[..mine.len()];
    let mut raised = 0u64;
    let (mine2, theirs2) = (mine.chunks_exact(2), theirs.chunks_exact(2));
    let done = 2 * mine2.len();
    for (k, (m, t)) in mine2.zip(theirs2).enumerate() {
        raised |= raised2([m[0], m[1]], [t[0], t[1]]) << (2 * k);
    }
    if let (Some(m), Some(t)) = (mine.get(done), theirs.get(done)) {
        raised |= u64::from(t > m) << done;
    }
    raised
}

/// Two bits: bit `j` set where `t[j] > m[j]`. On x86-64 with SSE2 (always there), both at
/// once: the borrow out of `m - t`, `(t & !m) | (!(m ^ t) & (m - t))` (Hacker's Delight 2-13),
/// in each 64-bit lane's top bit, gathered by `movmskpd` (SSE2 has no 64-bit compare).
#[inline(always)]
fn raised2(m: [u64; 2], t: [u64; 2]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: the loads read the two words of the arrays, `[u64; 2]` being 16 bytes;
        // SSE2 is part of x86-64.
        unsafe {
            let m = _mm_loadu_si128(m.as_ptr().cast());
            let t = _mm_loadu_si128(t.as_ptr().cast());
            let d = _mm_sub_epi64(m, t);
            let borrow = _mm_or_si128(
                _mm_andnot_si128(m, t),
                _mm_andnot_si128(_mm_xor_si128(m, t), d),
            );
            _mm_movemask_pd(_mm_castsi128_pd(borrow)) as u64
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        u64::from(t[0] > m[0]) | (u64::from(t[1] > m[1]) << 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(values: &[u64]) -> Vec<u8> {
        serde_json::to_vec(values).unwrap()
    }

    #[test]
    fn zeros_and_the_empty_vector_are_written_as_serde_json_writes_them() {
        for n in [0, 1, 2, 32] {
            let v = VectorText::zeros(n);
            assert_eq!(v.values(), vec![0; n].as_slice());
            assert_eq!(v.text(), json(&vec![0; n]).as_slice(), "n = {n}");
        }
    }

    #[test]
    fn increments_carry_and_grow_a_digit() {
        let mut v = VectorText::zeros(3);
        for _ in 0..1001 {
            v.increment(1);
        }
        assert_eq!(v.text(), b"[0,1001,0]");
        v.set(0, 9);
        v.increment(0);
        v.set(2, 99_999);
        v.increment(2);
        assert_eq!(v.text(), b"[10,1001,100000]");
        assert_eq!(v.values(), &[10, 1001, 100_000]);
    }

    #[test]
    fn an_entry_can_be_set_to_fewer_digits_and_to_the_largest_value() {
        let mut v = VectorText::zeros(2);
        v.set(0, 12_345);
        v.set(0, 7);
        v.set(1, u64::MAX);
        assert_eq!(v.text(), json(&[7, u64::MAX]).as_slice());
    }

    /// One update of a random sequence.
    #[derive(Debug, Clone)]
    enum Update {
        Increment(usize),
        Set(usize, u64),
        Merge(Vec<u64>),
    }

    fn value() -> impl Strategy<Value = u64> {
        // Mostly small numbers, so that digit counts change often, and a few large ones.
        prop_oneof![
            4 => 0u64..20,
            4 => 0u64..2_000,
            1 => any::<u64>().prop_map(|v| v / 2),
        ]
    }

    fn updates(n: usize) -> impl Strategy<Value = Vec<Update>> {
        let update = prop_oneof![
            3 => (0..n).prop_map(Update::Increment),
            2 => (0..n, value()).prop_map(|(i, v)| Update::Set(i, v)),
            2 => proptest::collection::vec(value(), n).prop_map(Update::Merge),
        ];
        proptest::collection::vec(update, 0..60)
    }

    /// The raised entries' bits are the comparisons', at the extremes of `u64` too (the
    /// borrow of a subtraction, not its sign).
    #[test]
    fn raised_bits_are_the_comparisons() {
        let edge = [
            0,
            1,
            9,
            10,
            1 << 62,
            (1 << 63) - 1,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut mine = Vec::new();
        let mut theirs = Vec::new();
        for &a in &edge {
            for &b in &edge {
                mine.push(a);
                theirs.push(b);
            }
        }
        for (m, t) in mine.chunks(63).zip(theirs.chunks(63)) {
            let expected = m
                .iter()
                .zip(t)
                .enumerate()
                .fold(0u64, |bits, (j, (m, t))| bits | (u64::from(t > m) << j));
            assert_eq!(raised(m, t), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// After any sequence of updates from any starting vector, the text is serde_json's
        /// text of the values, and the values are those of a plain vector updated alike.
        #[test]
        fn text_is_serde_json_after_random_updates(
            (start, updates) in (1usize..12).prop_flat_map(|n| {
                (proptest::collection::vec(value(), n), updates(n))
            })
        ) {
            let mut v = VectorText::zeros(start.len());
            for (i, &x) in start.iter().enumerate() {
                v.set(i, x);
            }
            prop_assert_eq!(v.text().to_vec(), json(&start));
            let mut plain = start.clone();
            for update in updates {
                match update {
                    Update::Increment(i) => {
                        // The plain vector's own overflow is not what is tested.
                        if plain[i] == u64::MAX {
                            continue;
                        }
                        plain[i] += 1;
                        v.increment(i);
                    }
                    Update::Set(i, x) => {
                        plain[i] = x;
                        v.set(i, x);
                    }
                    Update::Merge(other) => {
                        for (mine, theirs) in plain.iter_mut().zip(&other) {
                            *mine = (*mine).max(*theirs);
                        }
                        v.merge(&other);
                    }
                }
                prop_assert_eq!(v.values(), plain.as_slice());
                prop_assert_eq!(v.text().to_vec(), json(&plain));
            }
        }
    }
}
