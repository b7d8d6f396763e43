//! The visited table: every state's index by its 128-bit fingerprint, split into
//! [`SHARDS`] tables by the fingerprint's top bits, each one flat array of 24-byte slots (open
//! addressing, linear probing). A lookup reads one slot, usually in one cache line, where a
//! general hash map reads a control byte and then its bucket (two cache misses on a table of
//! millions of states); and the merge asks for the slot of the successor a few places ahead
//! ([`Visited::prefetch`]) so that its line is on its way while the ones before it are looked
//! up. The shards share nothing, so that each thread looks up and inserts into its own (see
//! the explorer's merge).

/// A slot: the fingerprint's low and high words, and its value plus one (0: empty).
type Slot = [u64; 3];

/// The number of shards (a power of two); a fingerprint's shard is its top bits.
pub(crate) const SHARDS: usize = 16;

/// The shard of fingerprint `fp`.
#[inline]
pub(crate) fn shard_of(fp: u128) -> usize {
    (fp >> (128 - SHARDS.trailing_zeros())) as usize
}

/// One shard: fingerprints to values (below `u64::MAX`), never removed.
pub(crate) struct Visited {
    /// A power of two of slots, zeroed (empty) at allocation.
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the home slot is the top bits of the mixed fingerprint.
    shift: u32,
    len: usize,
}

/// Where a fingerprint is (its value), or where it would go.
pub(crate) enum Probe {
    Known(u64),
    Vacant(usize),
}

impl Default for Visited {
    fn default() -> Self {
        Visited::with_slots(1 << 8)
    }
}

impl Visited {
    fn with_slots(n: usize) -> Self {
        debug_assert!(n.is_power_of_two());
        Visited {
            // All zeros: the allocator hands out zeroed pages without writing them.
            slots: vec![[0; 3]; n],
            shift: 64 - n.trailing_zeros(),
            len: 0,
        }
    }

    /// The home slot of `fp`.
    fn home(&self, fp: u128) -> usize {
        let mixed = ((fp as u64) ^ ((fp >> 64) as u64)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> self.shift) as usize
    }

    /// Asks for the cache line of `fp`'s home slot, so that a lookup soon after finds it there.
    #[inline]
    pub fn prefetch(&self, fp: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            let slot: *const Slot = &self.slots[self.home(fp)];
            // SAFETY: a prefetch is only a hint; it reads nothing and the address is valid.
            #[allow(unused_unsafe)]
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    slot.cast::<i8>(),
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fp;
    }

    /// Makes room for `extra` more fingerprints: at most 5/8 full after them (a miss then
    /// reads 3 slots on average, a hit 1.8). Slots given by [`Visited::probe`] before this are
    /// no longer valid.
    pub fn reserve(&mut self, extra: usize) {
        while (self.len + extra) * 8 > self.slots.len() * 5 {
            self.grow();
        }
    }

    /// The value of `fp` if it is known, or the slot where [`Visited::insert`] puts it. The
    /// slot stays valid until the table grows ([`Visited::reserve`]); the inserts since the
    /// last reserve must stay within it.
    pub fn probe(&self, fp: u128) -> Probe {
        let (lo, hi) = (fp as u64, (fp >> 64) as u64);
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        loop {
            let s = &self.slots[i];
            if s[2] == 0 {
                return Probe::Vacant(i);
            }
            if s[0] == lo && s[1] == hi {
                return Probe::Known(s[2] - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts `fp` with `value` in the slot [`Visited::probe`] gave for it.
    pub fn insert(&mut self, slot: usize, fp: u128, value: u64) {
        debug_assert_eq!(self.slots[slot][2], 0);
        debug_assert!((self.len + 1) * 8 <= self.slots.len() * 5, "reserved");
        self.slots[slot] = [fp as u64, (fp >> 64) as u64, value + 1];
        self.len += 1;
    }

    /// Changes the value of the fingerprint in `slot` (one inserted since the last reserve).
    pub fn set(&mut self, slot: usize, value: u64) {
        debug_assert_ne!(self.slots[slot][2], 0);
        self.slots[slot][2] = value + 1;
    }

    /// Twice the slots, every entry moved to its place in them.
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        *self = Visited::with_slots(old.len() * 2);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s[2] != 0) {
            let fp = u128::from(s[0]) | u128::from(s[1]) << 64;
            let mut i = self.home(fp);
            while self.slots[i][2] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
            self.len += 1;
        }
    }

    /// The number of fingerprints in the table.
    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_across_growth_and_nothing_else() {
        let mut v = Visited::default();
        let fp = |i: u64| u128::from(i.wrapping_mul(0x2545_f491_4f6c_dd1d)) << 64 | u128::from(i);
        for i in 0..10_000u64 {
            v.reserve(1);
            match v.probe(fp(i)) {
                Probe::Vacant(slot) => v.insert(slot, fp(i), i),
                Probe::Known(_) => panic!("{i} was not inserted yet"),
            }
        }
        assert_eq!(v.len(), 10_000);
        for i in 0..10_000u64 {
            assert!(matches!(v.probe(fp(i)), Probe::Known(k) if k == i));
        }
        // Same low word, different high word: a different fingerprint.
        assert!(matches!(v.probe(fp(7) ^ 1 << 100), Probe::Vacant(_)));
        assert!(matches!(v.probe(fp(10_000)), Probe::Vacant(_)));
    }

    #[test]
    fn a_value_set_after_insert_is_found_and_reserve_keeps_every_entry() {
        let mut v = Visited::default();
        let fps: Vec<u128> = (1..=300u128)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
            .collect();
        v.reserve(fps.len());
        let mut slots = Vec::new();
        for (i, &fp) in fps.iter().enumerate() {
            let Probe::Vacant(slot) = v.probe(fp) else {
                panic!("{i} is new")
            };
            v.insert(slot, fp, 1 << 63 | i as u64);
            slots.push(slot);
        }
        for (i, &slot) in slots.iter().enumerate() {
            v.set(slot, i as u64 * 2);
        }
        v.reserve(10_000);
        for (i, &fp) in fps.iter().enumerate() {
            assert!(matches!(v.probe(fp), Probe::Known(k) if k == i as u64 * 2));
        }
    }

    #[test]
    fn every_shard_is_used() {
        let mut seen = [false; SHARDS];
        for i in 0..1000u128 {
            seen[shard_of(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(shard_of(u128::MAX), SHARDS - 1);
        assert_eq!(shard_of(0), 0);
    }
}
