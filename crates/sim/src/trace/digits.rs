//! Decimal digits written straight into the trace's buffer, as `itoa` (and so serde_json)
//! writes them, without formatting them elsewhere first and copying them in: a trace line has
//! six or seven numbers, and the copy of a few bytes was a call to `memcpy` each.

/// The two digits of 0 to 99.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `POW10[t]` is 10^t, except `POW10[0]`, 0 (so that 0 has one digit).
const POW10: [u64; 20] = {
    let mut p = [0u64; 20];
    let mut t = 1;
    let mut v = 10u64;
    while t < 20 {
        p[t] = v;
        v = v.wrapping_mul(10);
        t += 1;
    }
    p
};

/// How many decimal digits `v` has (1 for 0).
#[inline]
pub(crate) fn len_u64(v: u64) -> usize {
    // log10 from the bit length (1233 / 4096 is just above log10(2)), then one comparison.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let t = (bits * 1233) >> 12;
    t + 1 - usize::from(v < POW10[t])
}

/// Writes `v`'s `n` digits (`n` = [`len_u64`]`(v)`) into `out[..n]`, last digit first.
#[inline]
pub(crate) fn write_u64_len(out: &mut [u8], v: u64, n: usize) {
    let out = &mut out[..n];
    let mut i = n;
    let mut v = v;
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        out[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        out[i - 2..i].copy_from_slice(&PAIRS[r..r + 2]);
    } else {
        out[i - 1] = b'0' + v as u8;
    }
}

/// The eight digits of `v` (below 10^8), zeros first, as ASCII in a word whose lowest byte is
/// the first digit: the digits of the two halves, of their halves, then of theirs, worked out
/// side by side in lanes of one word, without a loop or a table.
#[inline]
pub(crate) fn ascii8(v: u64) -> u64 {
    debug_assert!(v < 100_000_000);
    // Two lanes of 32 bits: the first four digits and the last four.
    let x = (v / 10_000) | ((v % 10_000) << 32);
    // Four lanes of 16 bits, two digits each (5243 / 2^19 divides by 100 below 43,699).
    let h = ((x * 5243) >> 19) & 0x0000_007F_0000_007F;
    let x = h | ((x - h * 100) << 16);
    // Eight lanes of 8 bits, one digit each (103 / 2^10 divides by 10 below 179).
    let h = ((x * 103) >> 10) & 0x000F_000F_000F_000F;
    let x = h | ((x - h * 10) << 8);
    x | 0x3030_3030_3030_3030
}

/// Writes `v` in decimal at the start of `out` and returns how many bytes it took; `out` has
/// room for 24 bytes, of which the ones past the digits may be written too (a line writes
/// them over with what follows). A number below 10^8 (a line's `seq`, Lamport timestamp, ids)
/// is written inline; a longer one by a call.
#[inline(always)]
pub(crate) fn write_u64(out: &mut [u8], v: u64) -> usize {
    if v < 100_000_000 {
        // The `n` digits of eight moved to the word's start, all eight bytes stored.
        let n = len_u64(v);
        let word = ascii8(v) >> (8 * (8 - n));
        out[..8].copy_from_slice(&word.to_le_bytes());
        n
    } else {
        write_u64_long(out, v)
    }
}

/// [`write_u64`] of a number of nine digits or more.
#[inline(never)]
fn write_u64_long(out: &mut [u8], v: u64) -> usize {
    let n = len_u64(v);
    if v < 10_000_000_000_000_000 {
        let (high, low) = (v / 100_000_000, v % 100_000_000);
        let m = n - 8;
        let word = ascii8(high) >> (8 * (8 - m));
        out[..8].copy_from_slice(&word.to_le_bytes());
        out[m..m + 8].copy_from_slice(&ascii8(low).to_le_bytes());
    } else {
        write_u64_len(out, v, n);
    }
    n
}

/// Writes `v` in decimal (a `-` first when negative) at the start of `out` (room for 25
/// bytes, written past the digits as by [`write_u64`]) and returns how many bytes it took.
#[inline]
pub(crate) fn write_i64(out: &mut [u8], v: i64) -> usize {
    if v < 0 {
        out[0] = b'-';
        1 + write_u64(&mut out[1..], v.unsigned_abs())
    } else {
        write_u64(out, v as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The most bytes a `u64` takes in decimal.
    const MAX_U64: usize = 20;

    fn check_u64(v: u64) {
        let mut out = [b'x'; 24];
        let n = write_u64(&mut out, v);
        assert_eq!(&out[..n], itoa::Buffer::new().format(v).as_bytes(), "{v}");
        assert_eq!(len_u64(v), n);
        let mut exact = [b'x'; MAX_U64 + 2];
        write_u64_len(&mut exact, v, n);
        assert_eq!(&exact[..n], &out[..n], "{v}");
        assert!(
            exact[n..].iter().all(|&b| b == b'x'),
            "{v}: wrote past its digits"
        );
        if v < 100_000_000 {
            let eight = format!("{v:08}");
            assert_eq!(&ascii8(v).to_le_bytes(), eight.as_bytes());
        }
    }

    #[test]
    fn every_power_of_ten_and_its_neighbours_as_itoa_writes_them() {
        check_u64(0);
        check_u64(u64::MAX);
        let mut p = 1u64;
        loop {
            for v in [p - 1, p, p + 1] {
                check_u64(v);
            }
            match p.checked_mul(10) {
                Some(next) => p = next,
                None => break,
            }
        }
        for v in 0..100_000 {
            check_u64(v);
        }
    }

    #[test]
    fn negative_numbers_and_the_extremes_of_i64() {
        for v in [0, -1, 1, -9, -10, 99, -100, i64::MIN, i64::MAX, -1_234_567] {
            let mut out = [0u8; 25];
            let n = write_i64(&mut out, v);
            assert_eq!(&out[..n], itoa::Buffer::new().format(v).as_bytes());
        }
    }

    proptest! {
        #[test]
        fn any_u64_as_itoa_writes_it(v in any::<u64>(), shift in 0u32..64) {
            check_u64(v);
            check_u64(v >> shift);
        }

        #[test]
        fn any_i64_as_itoa_writes_it(v in any::<i64>()) {
            let mut out = [0u8; 25];
            let n = write_i64(&mut out, v);
            let mut expected = itoa::Buffer::new();
            prop_assert_eq!(&out[..n], expected.format(v).as_bytes());
        }
    }
}
