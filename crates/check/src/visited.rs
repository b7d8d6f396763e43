//! The visited table: every state's index by its 128-bit fingerprint, in one flat array of
//! 24-byte slots (open addressing, linear probing). A lookup reads one slot, usually in one
//! cache line, where a general hash map reads a control byte and then its bucket (two cache
//! misses on a table of millions of states); and the merge asks for the slot of the successor
//! a few places ahead ([`Visited::prefetch`]) so that its line is on its way while the ones
//! before it are looked up.

/// A slot: the fingerprint's low and high words, and the state's index plus one (0: empty).
type Slot = [u64; 3];

/// Fingerprints to state indices, never removed.
pub(crate) struct Visited {
    /// A power of two of slots, zeroed (empty) at allocation.
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the home slot is the top bits of the mixed fingerprint.
    shift: u32,
    len: usize,
}

/// Where a fingerprint is, or where it would go.
pub(crate) enum Probe {
    Known(u32),
    Vacant(usize),
}

impl Default for Visited {
    fn default() -> Self {
        Visited::with_slots(1 << 10)
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

    /// The index of `fp` if it is known, or the slot where [`Visited::insert`] puts it. The
    /// slot stays valid until that insert (the table grows here, before the probe).
    pub fn probe(&mut self, fp: u128) -> Probe {
        // At most 5/8 full: a miss reads 3 slots on average, a hit 1.8.
        if (self.len + 1) * 8 > self.slots.len() * 5 {
            self.grow();
        }
        let (lo, hi) = (fp as u64, (fp >> 64) as u64);
        let mask = self.slots.len() - 1;
        let mut i = self.home(fp);
        loop {
            let s = &self.slots[i];
            if s[2] == 0 {
                return Probe::Vacant(i);
            }
            if s[0] == lo && s[1] == hi {
                return Probe::Known((s[2] - 1) as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts `fp` with index `idx` in the slot [`Visited::probe`] gave for it.
    pub fn insert(&mut self, slot: usize, fp: u128, idx: u32) {
        debug_assert_eq!(self.slots[slot][2], 0);
        self.slots[slot] = [fp as u64, (fp >> 64) as u64, u64::from(idx) + 1];
        self.len += 1;
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
            match v.probe(fp(i)) {
                Probe::Vacant(slot) => v.insert(slot, fp(i), i as u32),
                Probe::Known(_) => panic!("{i} was not inserted yet"),
            }
        }
        assert_eq!(v.len(), 10_000);
        for i in 0..10_000u64 {
            assert!(matches!(v.probe(fp(i)), Probe::Known(k) if k == i as u32));
        }
        // Same low word, different high word: a different fingerprint.
        assert!(matches!(v.probe(fp(7) ^ 1 << 100), Probe::Vacant(_)));
        assert!(matches!(v.probe(fp(10_000)), Probe::Vacant(_)));
    }
}
