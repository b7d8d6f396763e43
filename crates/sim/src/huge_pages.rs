//! Huge pages for the simulator's largest arrays.

/// Asks Linux to back the memory of `v` (its whole capacity) with huge pages (transparent huge
/// pages in `madvise` mode), when it spans at least one; a hint, whose failure changes nothing
/// but speed. Call it before the memory is first written, so its pages are huge from the start.
pub(crate) fn advise<E>(v: &Vec<E>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<E>();
        let from = start.next_multiple_of(HUGE);
        let to = end / HUGE * HUGE;
        if to > from {
            // SAFETY: [from, to) lies inside the allocation of `v`, which this process owns;
            // MADV_HUGEPAGE changes how its pages are backed, not their contents.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
