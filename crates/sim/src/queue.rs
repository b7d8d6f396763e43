//! The simulator's pending events: a radix heap keyed by time, of small entries pointing into a
//! slab of the events themselves, whose cost per event hardly grows with the number pending.
//!
//! Events come out in (time, seq) order, exactly as from a binary heap ordered by that pair. A
//! radix heap relies on what a discrete-event simulator guarantees: nothing is scheduled before
//! the time of the last event taken out. It keeps `last`, the time of that event, the events
//! at time `last` in seq order (the front), and buckets for the later ones: an event whose time
//! first differs from `last` in byte `l` (counting from the low end) goes to bucket (l, d),
//! where d is that byte of its time. Every event of a lower level is earlier than every event
//! of a higher level, and within a level a lower digit is earlier. When the front is empty, the
//! lowest non-empty bucket is split: its earliest time becomes `last` and its events move to
//! lower levels (those at the new `last` to the front, sorted by seq); a bucket of level 0 holds
//! a single time and becomes the front as it is. An event moves at most 8 times, and twice or
//! three times for delays of milliseconds in nanoseconds; every bucket is a vector that is only
//! appended to and then read in order, so the work is sequential memory traffic instead of a
//! binary heap's log2(n) scattered accesses per event.
//!
//! What moves is a 24-byte entry (time, seq, and the index of the event's slot); the events
//! stay where they were put, in a slab whose free slots are reused last-freed first (so an
//! event scheduled while handling another lands where that one was, still in the cache). The
//! one scattered access left, reading an event when it is taken out, is asked of the memory
//! ahead of time (a prefetch of the next events of the front and the next times), so a queue of
//! millions costs little more per event than a queue of a few dozen.
//!
//! An event scheduled before `last` (which the engine never does) is still placed correctly:
//! the queue is rebuilt around it.

/// What the queue orders by: a time and a tie-breaking sequence number, unique per item.
pub trait Keyed {
    /// The time, in ns.
    fn time(&self) -> u64;
    /// The tie-break among equal times: lower first.
    fn seq(&self) -> u64;
}

/// Buckets per level (one per byte value) and levels (one per byte of a u64).
const DIGITS: usize = 256;
const LEVELS: usize = 8;
const WORDS: usize = LEVELS * DIGITS / 64;
/// A drained bucket keeps its allocation for next time up to this many entries; a larger one is
/// given back, so that a burst of millions of events does not hold memory for the whole run.
const KEEP: usize = 4096;
/// How many entries ahead of the one taken out the queue asks the memory for their events.
const AHEAD: usize = 8;
/// From how many slots on the queue asks for items ahead (a smaller slab stays in the cache).
const PREFETCH_FROM: usize = 1 << 14;
/// How many drained large buckets the queue keeps for the next buckets to fill, instead of
/// growing them again from nothing (in a queue of millions, a bucket of the upper levels holds
/// hundreds of thousands of entries, filled anew every few hundred microseconds of time).
const SPARES: usize = 4;

/// What the buckets hold: an item's key and where the item is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    slot: u32,
}

/// A priority queue of `T`, earliest (time, seq) first.
#[derive(Clone)]
pub struct Queue<T> {
    /// The time of the last item taken out (or the smallest time the queue was rebuilt around).
    last: u64,
    /// Bucket (level, digit) at index level * 256 + digit. The bucket of level 0 whose digit is
    /// `last`'s lowest byte is the front: the entries at time `last`, in seq order, from `head`
    /// on (those before were taken out). No other entry can go there (an entry of level 0
    /// differs from `last` in that byte), and it is never marked in `occupied`.
    buckets: Vec<Vec<Entry>>,
    head: usize,
    /// Bit i of word i / 64 set when bucket i is not empty.
    occupied: [u64; WORDS],
    /// Bit w set when word w of `occupied` is not zero.
    words: u32,
    /// The items, each in the slot its entry names; `None` in a free slot.
    slab: Vec<Option<T>>,
    /// The free slots of `slab`, the last freed last.
    free: Vec<u32>,
    /// Empty vectors with room for more than `KEEP` entries, at most `SPARES`.
    spare: Vec<Vec<Entry>>,
    /// The entry whose item was last asked of the memory ahead of time: (bucket of level 0,
    /// index). A hint only: entries come out of the front and then the next buckets of level 0
    /// in order, so the queue keeps asking for the item about `AHEAD` entries ahead of the one
    /// taken out.
    ahead: (usize, usize),
    len: usize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            last: 0,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            head: 0,
            occupied: [0; WORDS],
            words: 0,
            slab: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
            ahead: (0, 0),
            len: 0,
        }
    }
}

impl<T: Keyed> Queue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many items are pending.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bucket of a time later than `last`.
    #[inline]
    fn bucket(last: u64, time: u64) -> usize {
        let level = (63 - (time ^ last).leading_zeros() as usize) / 8;
        level * DIGITS + ((time >> (8 * level)) & 0xff) as usize
    }

    /// The front's bucket.
    #[inline]
    fn f(&self) -> usize {
        (self.last & 0xff) as usize
    }

    #[inline]
    fn mark(&mut self, b: usize) {
        self.occupied[b / 64] |= 1 << (b % 64);
        self.words |= 1 << (b / 64);
    }

    #[inline]
    fn unmark(&mut self, b: usize) {
        let w = &mut self.occupied[b / 64];
        *w &= !(1 << (b % 64));
        if *w == 0 {
            self.words &= !(1 << (b / 64));
        }
    }

    /// The lowest non-empty bucket, the front aside.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        if self.words == 0 {
            return None;
        }
        let w = self.words.trailing_zeros() as usize;
        Some(w * 64 + self.occupied[w].trailing_zeros() as usize)
    }

    /// Puts `item` in a free slot.
    #[inline]
    fn store(&mut self, item: T) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = Some(item);
                slot
            }
            None => {
                let slot = u32::try_from(self.slab.len())
                    .expect("the queue holds fewer than 2^32 pending events");
                if self.slab.len() == self.slab.capacity() {
                    self.grow();
                }
                self.slab.push(Some(item));
                slot
            }
        }
    }

    /// Doubles the slab's room. A large slab is read at random (an item where it was put, when
    /// it is taken out), so it asks the kernel for huge pages first: with 4 KiB pages nearly
    /// every such read of a slab of millions also misses the address translation cache.
    #[cold]
    fn grow(&mut self) {
        let room = (self.slab.capacity() * 2).max(64);
        let mut slab = Vec::with_capacity(room);
        advise_huge_pages(&slab);
        slab.append(&mut self.slab);
        self.slab = slab;
    }

    /// Takes the item out of `slot` and frees the slot.
    #[inline]
    fn take(&mut self, slot: u32) -> T {
        self.free.push(slot);
        self.slab[slot as usize]
            .take()
            .expect("an entry's slot holds its item")
    }

    #[inline]
    fn get(&self, slot: u32) -> &T {
        self.slab[slot as usize]
            .as_ref()
            .expect("an entry's slot holds its item")
    }

    /// Asks the memory for the item in `slot`, which will be taken out soon.
    #[inline(always)]
    fn prefetch(&self, slot: u32) {
        #[cfg(target_arch = "x86_64")]
        if let Some(item) = self.slab.get(slot as usize) {
            let p = (item as *const Option<T>).cast::<i8>();
            // SAFETY: a prefetch is a hint that reads nothing into the program and cannot fault;
            // `p` points into the slab anyway. The second line covers an item that straddles
            // two cache lines.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch(p, _MM_HINT_T0);
                if std::mem::size_of::<Option<T>>() > 64 {
                    _mm_prefetch(
                        p.wrapping_add(std::mem::size_of::<Option<T>>() - 1),
                        _MM_HINT_T0,
                    );
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Moves `ahead` to the next entry to come out, if there is one, and asks for its item.
    #[inline]
    fn look_ahead(&mut self) {
        let (b, i) = self.ahead;
        if let Some(e) = self.buckets[b].get(i + 1) {
            self.ahead = (b, i + 1);
            self.prefetch(e.slot);
            return;
        }
        // The next occupied bucket of level 0 after this one.
        let from = b + 1;
        if from >= DIGITS {
            return;
        }
        let mut w = from / 64;
        let mut word = self.occupied[w] & (!0u64 << (from % 64));
        while word == 0 {
            w += 1;
            if w == DIGITS / 64 {
                return;
            }
            word = self.occupied[w];
        }
        let c = w * 64 + word.trailing_zeros() as usize;
        if let Some(e) = self.buckets[c].first() {
            self.ahead = (c, 0);
            self.prefetch(e.slot);
        }
    }

    /// Starts `ahead` over at the front and asks for the first `AHEAD` items.
    fn restart_ahead(&mut self) {
        let f = self.f();
        self.ahead = (f, self.head);
        if let Some(e) = self.buckets[f].get(self.head) {
            self.prefetch(e.slot);
        }
        for _ in 1..AHEAD {
            self.look_ahead();
        }
    }

    /// Adds `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        let (time, seq) = (item.time(), item.seq());
        let slot = self.store(item);
        self.place(Entry { time, seq, slot });
    }

    /// Files an entry whose item is in the slab.
    #[inline]
    fn place(&mut self, e: Entry) {
        if e.time < self.last {
            self.rebuild(e);
            return;
        }
        self.len += 1;
        if e.time == self.last {
            let head = self.head;
            let f = self.f();
            let front = &mut self.buckets[f];
            match front.last() {
                Some(b) if front.len() > head && b.seq > e.seq => {
                    if head > 0 && front[head].seq > e.seq {
                        // Before every pending one (an item put back): where the last taken
                        // out was.
                        self.head -= 1;
                        front[head - 1] = e;
                    } else {
                        let at = head + front[head..].partition_point(|x| x.seq < e.seq);
                        front.insert(at, e);
                    }
                }
                _ => front.push(e),
            }
        } else {
            let b = Self::bucket(self.last, e.time);
            self.push_to(b, e);
        }
    }

    /// Appends `e` to bucket `b`; a bucket without room of its own takes a spare one.
    #[inline]
    fn push_to(&mut self, b: usize, e: Entry) {
        let bucket = &mut self.buckets[b];
        if bucket.capacity() == 0 {
            if let Some(spare) = self.spare.pop() {
                *bucket = spare;
            }
        }
        bucket.push(e);
        self.mark(b);
    }

    /// Empties bucket `b`, keeping its room when it is small, or as a spare when it is large.
    #[inline]
    fn recycle(&mut self, b: usize) {
        self.buckets[b].clear();
        if self.buckets[b].capacity() > KEEP {
            let v = std::mem::take(&mut self.buckets[b]);
            if self.spare.len() < SPARES {
                self.spare.push(v);
            }
        }
    }

    /// Takes out the earliest item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.buckets[self.f()].len() && !self.refill() {
            return None;
        }
        let e = self.buckets[self.f()][self.head];
        self.head += 1;
        if self.slab.len() > PREFETCH_FROM {
            self.look_ahead();
        }
        self.len -= 1;
        Some(self.take(e.slot))
    }

    /// The earliest item, without taking it out.
    pub fn peek(&self) -> Option<&T> {
        if let Some(first) = self.buckets[self.f()].get(self.head) {
            return Some(self.get(first.slot));
        }
        let b = self.lowest()?;
        let e = self.buckets[b].iter().min_by_key(|e| (e.time, e.seq))?;
        Some(self.get(e.slot))
    }

    /// The entries in the order `iter` gives them: the front, then the buckets in order.
    fn entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        let f = self.f();
        self.buckets[f][self.head..].iter().chain(
            self.buckets
                .iter()
                .enumerate()
                .filter(move |(b, _)| *b != f)
                .flat_map(|(_, bucket)| bucket),
        )
    }

    /// Every pending item, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.entries().map(|e| self.get(e.slot))
    }

    /// Takes out the first item (in no particular order) for which `pick` holds.
    pub fn remove_where(&mut self, mut pick: impl FnMut(&T) -> bool) -> Option<T> {
        let f = self.f();
        if let Some(i) = self.buckets[f][self.head..]
            .iter()
            .position(|e| pick(self.get(e.slot)))
        {
            self.len -= 1;
            let e = self.buckets[f].remove(self.head + i);
            return Some(self.take(e.slot));
        }
        for b in (0..self.buckets.len()).filter(|&b| b != f) {
            if let Some(i) = self.buckets[b].iter().position(|e| pick(self.get(e.slot))) {
                self.len -= 1;
                let e = self.buckets[b].remove(i);
                if self.buckets[b].is_empty() {
                    self.unmark(b);
                }
                return Some(self.take(e.slot));
            }
        }
        None
    }

    /// The front is used up: the lowest non-empty bucket becomes the front, or is split.
    /// False when nothing is pending.
    fn refill(&mut self) -> bool {
        self.recycle(self.f());
        self.head = 0;
        let Some(b) = self.lowest() else {
            // Nothing pending: the slab is all free; a burst's memory is given back.
            if self.slab.capacity() > KEEP {
                self.slab = Vec::new();
                self.free = Vec::new();
            }
            self.spare.clear();
            return false;
        };
        self.unmark(b);
        if b < DIGITS {
            // Level 0: one time, the front as it is.
            self.last = (self.last & !0xff) | b as u64;
            self.sort_front();
            if self.slab.len() > PREFETCH_FROM {
                let a = self.ahead.0;
                if a != b && (a < b || a >= DIGITS) {
                    self.restart_ahead();
                }
            }
            return true;
        }
        if self.buckets[b].len() == 1 {
            // One entry (the common case of a short queue): the front as it is.
            let e = self.buckets[b][0];
            self.recycle(b);
            self.last = e.time;
            let f = self.f();
            self.buckets[f].push(e);
            if self.slab.len() > PREFETCH_FROM {
                self.restart_ahead();
            }
            return true;
        }
        let mut entries = std::mem::take(&mut self.buckets[b]);
        let mut last = u64::MAX;
        for e in &entries {
            last = last.min(e.time);
        }
        self.last = last;
        let f = self.f();
        for &e in &entries {
            if e.time == last {
                self.buckets[f].push(e);
            } else {
                // Every other entry agrees with `last` on this bucket's byte and above: it goes
                // to a lower level.
                let c = Self::bucket(last, e.time);
                self.push_to(c, e);
            }
        }
        entries.clear();
        self.buckets[b] = entries;
        self.recycle(b);
        self.sort_front();
        if self.slab.len() > PREFETCH_FROM {
            self.restart_ahead();
        }
        true
    }

    /// Items of one time arrive in seq order when they were scheduled in seq order (the
    /// engine's case); sorts them otherwise.
    #[inline]
    fn sort_front(&mut self) {
        let head = self.head;
        let f = self.f();
        let front = &mut self.buckets[f][head..];
        if !front.is_sorted_by_key(|e| e.seq) {
            front.sort_unstable_by_key(|e| e.seq);
        }
    }

    /// Rebuilds the queue with `extra`, which is earlier than `last`.
    #[cold]
    fn rebuild(&mut self, extra: Entry) {
        let f = self.f();
        let mut all: Vec<Entry> = self.buckets[f].drain(self.head..).collect();
        self.buckets[f].clear();
        self.head = 0;
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        all.push(extra);
        all.sort_unstable_by_key(|e| (e.time, e.seq));
        self.occupied = [0; WORDS];
        self.words = 0;
        self.len = 0;
        self.last = all.first().map_or(0, |e| e.time);
        self.ahead = (self.f(), 0);
        for e in all {
            self.place(e);
        }
    }
}

/// Asks Linux to back the memory of `v` with huge pages (transparent huge pages in `madvise`
/// mode), when it spans at least one; a hint, whose failure changes nothing but speed.
fn advise_huge_pages<E>(v: &Vec<E>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Item {
        time: u64,
        seq: u64,
        payload: u64,
    }

    impl Keyed for Item {
        fn time(&self) -> u64 {
            self.time
        }
        fn seq(&self) -> u64 {
            self.seq
        }
    }

    fn item(time: u64, seq: u64) -> Item {
        Item {
            time,
            seq,
            payload: time ^ seq,
        }
    }

    #[test]
    fn equal_times_come_out_in_seq_order() {
        let mut q = Queue::new();
        for (i, t) in [5u64, 3, 5, 3, 9, 3, 5].into_iter().enumerate() {
            q.push(item(t, i as u64));
        }
        let out: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.seq))
            .collect();
        assert_eq!(
            out,
            vec![(3, 1), (3, 3), (3, 5), (5, 0), (5, 2), (5, 6), (9, 4)]
        );
    }

    #[test]
    fn an_item_put_back_comes_out_first_again() {
        // The engine puts back an event past the horizon.
        let mut q = Queue::new();
        for s in 0..4 {
            q.push(item(7, s));
        }
        let first = q.pop().unwrap();
        assert_eq!(first.seq, 0);
        q.push(first);
        assert_eq!(q.peek().map(|e| e.seq), Some(0));
        assert_eq!(q.pop().map(|e| e.seq), Some(0));
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn an_item_earlier_than_the_last_taken_out_is_still_ordered() {
        let mut q = Queue::new();
        q.push(item(10, 0));
        q.push(item(20, 1));
        assert_eq!(q.pop().unwrap().time, 10);
        q.push(item(4, 2));
        q.push(item(15, 3));
        let out: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|e| e.time).collect();
        assert_eq!(out, vec![4, 15, 20]);
    }

    #[test]
    fn a_queue_of_tens_of_thousands_orders_exactly_as_a_binary_heap() {
        // Past PREFETCH_FROM slots (the queue asks for items ahead), with ties, put-backs and
        // bursts that grow and shrink the queue.
        let mut q = Queue::new();
        let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut seq = 0;
        for spread in [3u64, 2_000, 1_000_000] {
            for _ in 0..20_000 {
                seq += 1;
                let t = next() % spread;
                q.push(item(t, seq));
                heap.push(Reverse((t, seq)));
            }
            for i in 0..60_000u64 {
                let e = q.pop().expect("pending");
                let Reverse((t, s)) = heap.pop().expect("pending");
                assert_eq!((e.time, e.seq), (t, s), "event {i}, spread {spread}");
                if i % 101 == 0 {
                    q.push(e);
                    heap.push(Reverse((t, s)));
                    continue;
                }
                let follow_ups = if i < 30_000 {
                    next() % 2 + 1
                } else {
                    next() % 2
                };
                for _ in 0..follow_ups {
                    seq += 1;
                    let at = t + next() % spread;
                    q.push(item(at, seq));
                    heap.push(Reverse((at, seq)));
                }
                assert_eq!(q.len(), heap.len());
            }
        }
        while let Some(Reverse((t, s))) = heap.pop() {
            let e = q.pop().expect("pending");
            assert_eq!((e.time, e.seq), (t, s));
        }
        assert!(q.pop().is_none() && q.is_empty());
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Push at the last popped time plus this much (the engine's case), with the next seq.
        Push(u64),
        /// Push at any time, with any (unused) seq.
        PushAnywhere(u64, u64),
        Pop,
        /// Pop, then put the same item back (the engine at the horizon).
        PopAndPutBack,
        /// Remove the pending item with the k-th smallest seq (a stepped session's choice).
        Remove(usize),
        Peek,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => prop_oneof![
                0..4u64,
                0..1_000u64,
                0..5_000_000u64,
                any::<u64>().prop_map(|d| d >> 2)
            ]
            .prop_map(Op::Push),
            1 => (any::<u64>(), 0..1_000_000u64).prop_map(|(t, s)| Op::PushAnywhere(t >> 1, s)),
            5 => Just(Op::Pop),
            1 => Just(Op::PopAndPutBack),
            1 => (0..64usize).prop_map(Op::Remove),
            1 => Just(Op::Peek),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Against a binary heap ordered by (time, seq): the same items out in the same order.
        #[test]
        fn it_orders_exactly_as_a_binary_heap(ops in proptest::collection::vec(op(), 1..400)) {
            let mut q = Queue::new();
            let mut heap: BinaryHeap<Reverse<Item>> = BinaryHeap::new();
            let mut used = std::collections::HashSet::new();
            let mut seq = 10_000_000u64;
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Push(d) => {
                        seq += 1;
                        let t = now.saturating_add(d);
                        q.push(item(t, seq));
                        heap.push(Reverse(item(t, seq)));
                    }
                    Op::PushAnywhere(t, s) => {
                        if used.insert(s) {
                            q.push(item(t, s));
                            heap.push(Reverse(item(t, s)));
                        }
                    }
                    Op::Pop => {
                        let a = q.pop();
                        let b = heap.pop().map(|r| r.0);
                        prop_assert_eq!(&a, &b);
                        if let Some(e) = a {
                            now = now.max(e.time);
                        }
                    }
                    Op::PopAndPutBack => {
                        let a = q.pop();
                        let b = heap.pop().map(|r| r.0);
                        prop_assert_eq!(&a, &b);
                        if let Some(e) = a {
                            q.push(e.clone());
                            heap.push(Reverse(e));
                        }
                    }
                    Op::Remove(k) => {
                        let mut seqs: Vec<u64> = q.iter().map(|e| e.seq).collect();
                        seqs.sort_unstable();
                        if let Some(&s) = seqs.get(k) {
                            let a = q.remove_where(|e| e.seq == s).unwrap();
                            let mut rest: Vec<Item> =
                                heap.drain().map(|r| r.0).filter(|e| e.seq != s).collect();
                            prop_assert_eq!(a.seq, s);
                            heap.extend(rest.drain(..).map(Reverse));
                        }
                    }
                    Op::Peek => {
                        prop_assert_eq!(q.peek(), heap.peek().map(|r| &r.0));
                    }
                }
                prop_assert_eq!(q.len(), heap.len());
                prop_assert_eq!(q.is_empty(), heap.is_empty());
                let mut mine: Vec<&Item> = q.iter().collect();
                mine.sort();
                let mut theirs: Vec<&Item> = heap.iter().map(|r| &r.0).collect();
                theirs.sort();
                prop_assert_eq!(mine, theirs);
            }
            while let Some(b) = heap.pop() {
                prop_assert_eq!(q.pop(), Some(b.0));
            }
            prop_assert_eq!(q.pop(), None);
        }
    }
}
