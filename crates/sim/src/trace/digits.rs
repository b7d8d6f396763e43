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

/// Writes `v` in decimal at the start of `out` (which has room for 20 bytes, the most a `u64`
/// takes) and returns how many bytes it took.
#[inline]
pub(crate) fn write_u64(out: &mut [u8], v: u64) -> usize {
    let n = len_u64(v);
    write_u64_len(out, v, n);
    n
}

/// Writes `v` in decimal (a `-` first when negative) at the start of `out` (room for 21
/// bytes) and returns how many bytes it took.
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
        let mut out = [b'x'; MAX_U64 + 2];
        let n = write_u64(&mut out, v);
        assert_eq!(&out[..n], itoa::Buffer::new().format(v).as_bytes(), "{v}");
        assert!(out[n..].iter().all(|&b| b == b'x'), "{v}: wrote past its digits");
        assert_eq!(len_u64(v), n);
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
            let mut out = [0u8; 21];
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
            let mut out = [0u8; 21];
            let n = write_i64(&mut out, v);
            prop_assert_eq!(&out[..n], itoa::Buffer::new().format(v).as_bytes());
        }
    }
}
