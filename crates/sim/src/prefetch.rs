//! Prefetch hints: asking the memory ahead of time for a line the simulator is about to read or
//! write (the event taken out next, its process's slot, a link's latest arrival, a bucket's next
//! line). A hint changes nothing but speed; on other architectures than x86-64 it does nothing.

/// Asks for the cache line holding `p` into the first-level cache.
#[inline(always)]
pub(crate) fn to_first_level<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the cache line holding `p` into the second-level cache only: for a line needed a
/// while later, so that more requests are in flight than the first-level cache keeps track of.
#[inline(always)]
pub(crate) fn to_second_level<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T2 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
