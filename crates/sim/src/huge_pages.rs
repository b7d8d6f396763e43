//! Huge pages for the simulator's largest arrays.

/// The size of a huge page (on x86-64 Linux).
pub(crate) const HUGE: usize = 2 << 20;

/// Asks Linux to back the memory of `v` (its whole capacity) with huge pages (transparent huge
/// pages in `madvise` mode), when it spans at least one; a hint, whose failure changes nothing
/// but speed. Call it before the memory is first written, so its pages are huge from the start.
pub(crate) fn advise<E>(v: &Vec<E>) {
    advise_room(v.as_ptr(), v.capacity());
}

/// `advise` for the room of `capacity` elements from `start`, which this process allocated.
pub(crate) fn advise_room<E>(start: *const E, capacity: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = start as usize;
        let end = start + capacity * std::mem::size_of::<E>();
        let from = start.next_multiple_of(HUGE);
        let to = end / HUGE * HUGE;
        if to > from {
            // SAFETY: [from, to) lies inside the allocation, which this process owns;
            // MADV_HUGEPAGE changes how its pages are backed, not their contents.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, capacity);
}
