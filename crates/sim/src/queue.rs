//! The simulator's pending events: a radix heap keyed by time whose buckets hold the events
//! themselves, so that taking events out in time order reads memory in order, and the cost per
//! event hardly grows with the number pending.
//!
//! Events come out in (time, seq) order, exactly as from a binary heap ordered by that pair. A
//! radix heap relies on what a discrete-event simulator guarantees: nothing is scheduled before
//! the time of the last event taken out. It keeps the front, the earliest pending events in
//! (time, seq) order, which hold every pending time of a block of times around `last`, and
//! buckets for the later ones: an event whose time first differs from `last` in byte `l`
//! (counting from the low end) goes to bucket (l, d), where d is that byte of its time. Every
//! event of a lower level is earlier than every event of a higher level, and within a level a
//! lower digit is earlier. When the front is used up, the lowest non-empty bucket becomes the
//! front as it is when it holds one time (level 0) or only a few events (sorted by time: its
//! range of times becomes the front's block, and an event scheduled into that range is put in
//! the front in order), and is split otherwise: its earliest time (kept up to date as events
//! are added) becomes `last` and its events move to lower levels (those at the new `last` to the
//! front). An event moves at most 8 times, and two to three times for delays of milliseconds
//! in nanoseconds.
//!
//! The buckets hold the events, not references to them: every bucket is a vector that is only
//! appended to and then read in order, and the front is taken from its start, so an event is
//! written where the events due about when it is due are, and all the work is sequential memory
//! traffic that the hardware streams ahead, instead of a binary heap's log2(n) scattered
//! accesses per event, or one cache miss per event into a slab of events stored where they were
//! scheduled (which a queue of millions spreads at random over a gigabyte). A queue of ten
//! million costs about twice per event what a queue of a few dozen costs.
//!
//! The queue keeps no sequence numbers of its own: the engine schedules in seq order, and
//! appending keeps every bucket's events of one time in seq order, which a split preserves. An
//! item scheduled out of that order (an event put back, which the engine does at the horizon)
//! is placed in the front by seq, or marks its bucket as to be sorted by seq when it becomes
//! the front. An event scheduled before the front's block (which the engine never does) is
//! still placed correctly: the queue is rebuilt around it.

use std::collections::VecDeque;

/// What the queue orders by: a time and a tie-breaking sequence number, unique per item.
pub trait Keyed {
    /// The time, in ns.
    fn time(&self) -> u64;
    /// The tie-break among equal times: lower first.
    fn seq(&self) -> u64;
}

/// Bits of a digit (a byte: wider digits spread a split over more buckets than the first-level
/// cache keeps lines for, and measured slower); buckets per level (one per digit value) and
/// levels (enough for a u64).
const BITS: usize = 8;
const DIGITS: usize = 1 << BITS;
const LEVELS: usize = 64_usize.div_ceil(BITS);
const BUCKETS: usize = LEVELS * DIGITS;
const WORDS: usize = BUCKETS / 64;
/// Words of the summary of `occupied`: bit w of the summary is set when word w is not zero.
const SUMMARY: usize = WORDS.div_ceil(64);
/// How many drained buckets' vectors the queue keeps per level for the next buckets of that
/// level to fill, the last drained first: its memory is still in the cache, and the buckets in
/// use at once (a few dozen) reuse a few vectors instead of each of the 256 digits of a level
/// keeping its own (which, at a hundred thousand events pending, cycles through more memory
/// than the cache holds).
const SPARES: usize = 16;
/// Vectors with room for more than this many bytes are given back when the queue empties, so
/// that a burst of millions of events does not hold memory for the whole run.
const HOLD_BYTES: usize = 4 << 10;
/// A bucket this small or smaller becomes the front as it is, sorted by time, instead of being
/// split (a queue of a few dozen events spread over milliseconds rarely has two in a bucket).
const SMALL: usize = 32;

/// A set of buckets, one bit each.
#[derive(Clone)]
struct Bits([u64; WORDS]);

impl Bits {
    #[inline]
    fn get(&self, b: usize) -> bool {
        self.0[b / 64] & (1 << (b % 64)) != 0
    }
    #[inline]
    fn set(&mut self, b: usize) {
        self.0[b / 64] |= 1 << (b % 64);
    }
    #[inline]
    fn clear(&mut self, b: usize) {
        self.0[b / 64] &= !(1 << (b % 64));
    }
}

/// The earliest time of a bucket's items and the index of the first of them with that time
/// (the earliest by (time, seq) unless the bucket is marked unsorted).
#[derive(Clone, Copy, Debug, Default)]
struct Min {
    time: u64,
    at: usize,
}

/// A priority queue of `T`, earliest (time, seq) first.
#[derive(Clone)]
pub struct Queue<T> {
    /// A time of the front's block, below every time in the buckets; the buckets are kept
    /// relative to it.
    last: u64,
    /// The front's block: the times that agree with `last` on every bit from `span` on (just
    /// `last` when `span` is 0; a whole bucket's range when that bucket became the front).
    span: u32,
    /// Every pending item whose time is in the front's block, in (time, seq) order.
    front: VecDeque<T>,
    /// Bucket (level, digit) at index level * DIGITS + digit, for the times after the front's
    /// block: an item goes to the level of the first digit in which its time differs from
    /// `last`.
    buckets: Vec<Vec<T>>,
    /// Of each non-empty bucket, its earliest item.
    mins: Vec<Min>,
    /// The buckets that are not empty.
    occupied: Bits,
    /// Bit w of word w / 64 set when word w of `occupied` is not zero.
    summary: [u64; SUMMARY],
    /// The buckets whose items of one time may be out of seq order (an item was scheduled
    /// out of order): sorted by their items' seqs when they become the front.
    unsorted: Bits,
    /// Every item scheduled with a seq of at least this one is in order (later than every item
    /// scheduled so far).
    fresh_from: u64,
    /// Per level, empty vectors of drained buckets (at most `SPARES`), the last drained last.
    spare: Vec<Vec<Vec<T>>>,
    len: usize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            last: 0,
            span: 0,
            front: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            mins: vec![Min::default(); BUCKETS],
            occupied: Bits([0; WORDS]),
            summary: [0; SUMMARY],
            unsorted: Bits([0; WORDS]),
            fresh_from: 0,
            spare: (0..LEVELS).map(|_| Vec::new()).collect(),
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

    /// The bucket of a time after the front's block.
    #[inline]
    fn bucket(last: u64, time: u64) -> usize {
        let level = (63 - (time ^ last).leading_zeros() as usize) / BITS;
        level * DIGITS + ((time >> (BITS * level)) as usize & (DIGITS - 1))
    }

    /// Whether `time` is in the front's block.
    #[inline]
    fn in_front(&self, time: u64) -> bool {
        (time ^ self.last) >> self.span == 0
    }

    #[inline]
    fn unmark(&mut self, b: usize) {
        self.occupied.clear(b);
        if self.occupied.0[b / 64] == 0 {
            self.summary[b / 4096] &= !(1 << (b / 64 % 64));
        }
    }

    /// The lowest non-empty bucket.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        let (s, &bits) = self.summary.iter().enumerate().find(|(_, &s)| s != 0)?;
        let w = s * 64 + bits.trailing_zeros() as usize;
        Some(w * 64 + self.occupied.0[w].trailing_zeros() as usize)
    }

    /// Adds `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        let (time, seq) = (item.time(), item.seq());
        let in_order = seq >= self.fresh_from;
        if in_order {
            // Later than everything scheduled so far: appended to a bucket, it keeps the
            // bucket's items of one time in seq order.
            self.fresh_from = seq + 1;
        }
        if self.in_front(time) {
            self.len += 1;
            if in_order {
                self.put_in_front(item, time);
            } else {
                self.put_in_front_out_of_order(item, time, seq);
            }
        } else if time > self.last {
            self.len += 1;
            let b = Self::bucket(self.last, time);
            self.push_to(b, item, time);
            if !in_order {
                self.unsorted.set(b);
            }
        } else {
            self.rebuild(item);
        }
    }

    /// Puts an item of the front's block, later than every item scheduled before, in the
    /// front: after the pending items of its time or earlier.
    #[inline]
    fn put_in_front(&mut self, item: T, time: u64) {
        let front = &mut self.front;
        let mut i = front.len();
        while i > 0 && front[i - 1].time() > time {
            i -= 1;
        }
        if i == front.len() {
            front.push_back(item);
        } else {
            front.insert(i, item);
        }
    }

    /// Puts an item of the front's block in the front by (time, seq), its seq being lower than
    /// some item's scheduled before it (an item put back goes first, without moving the rest).
    #[cold]
    fn put_in_front_out_of_order(&mut self, item: T, time: u64, seq: u64) {
        let at = self
            .front
            .partition_point(|x| (x.time(), x.seq()) < (time, seq));
        self.front.insert(at, item);
    }

    /// Appends `item`, due at `time`, to bucket `b`; an empty bucket takes a spare vector of
    /// its level.
    #[inline]
    fn push_to(&mut self, b: usize, item: T, time: u64) {
        let bucket = &mut self.buckets[b];
        if bucket.is_empty() {
            if bucket.capacity() == 0 {
                if let Some(spare) = self.spare[b / DIGITS].pop() {
                    *bucket = spare;
                }
            }
            self.mins[b] = Min { time, at: 0 };
            self.occupied.set(b);
            self.summary[b / 4096] |= 1 << (b / 64 % 64);
        } else if time < self.mins[b].time {
            self.mins[b] = Min {
                time,
                at: bucket.len(),
            };
        }
        bucket.push(item);
    }

    /// Empties bucket `b`, its vector becoming a spare of its level.
    #[inline]
    fn recycle(&mut self, b: usize) {
        let mut v = std::mem::take(&mut self.buckets[b]);
        v.clear();
        let spare = &mut self.spare[b / DIGITS];
        if v.capacity() > 0 && spare.len() < SPARES {
            spare.push(v);
        }
    }

    /// Takes out the earliest item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.front.is_empty() && !self.refill() {
            return None;
        }
        self.len -= 1;
        self.front.pop_front()
    }

    /// The earliest item, without taking it out.
    pub fn peek(&self) -> Option<&T> {
        if let Some(first) = self.front.front() {
            return Some(first);
        }
        let b = self.lowest()?;
        if self.unsorted.get(b) {
            self.buckets[b].iter().min_by_key(|e| (e.time(), e.seq()))
        } else {
            self.buckets[b].get(self.mins[b].at)
        }
    }

    /// Every pending item, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.front.iter().chain(self.buckets.iter().flatten())
    }

    /// Takes out the first item (in no particular order) for which `pick` holds.
    pub fn remove_where(&mut self, mut pick: impl FnMut(&T) -> bool) -> Option<T> {
        if let Some(i) = self.front.iter().position(&mut pick) {
            self.len -= 1;
            return self.front.remove(i);
        }
        for b in 0..self.buckets.len() {
            if let Some(i) = self.buckets[b].iter().position(&mut pick) {
                self.len -= 1;
                let item = self.buckets[b].remove(i);
                match self.buckets[b].iter().enumerate().min_by_key(|(_, e)| e.time()) {
                    Some((at, e)) => {
                        self.mins[b] = Min {
                            time: e.time(),
                            at,
                        }
                    }
                    None => {
                        self.unmark(b);
                        self.unsorted.clear(b);
                        self.recycle(b);
                    }
                }
                return Some(item);
            }
        }
        None
    }

    /// The front is used up: the lowest non-empty bucket becomes the front, or is split.
    /// False when nothing is pending.
    fn refill(&mut self) -> bool {
        let Some(b) = self.lowest() else {
            self.give_back();
            return false;
        };
        self.unmark(b);
        let unsorted = self.unsorted.get(b);
        self.unsorted.clear(b);
        let level = b / DIGITS;
        if level == 0 || self.buckets[b].len() <= SMALL {
            // The whole bucket becomes the front: one time (level 0), or a few items of the
            // bucket's range, which becomes the front's block. The front's empty room goes to
            // the bucket.
            let items = std::mem::take(&mut self.buckets[b]);
            let room = std::mem::replace(&mut self.front, VecDeque::from(items));
            self.buckets[b] = Vec::from(room);
            self.recycle(b);
            if level == 0 {
                self.last = (self.last & !(DIGITS as u64 - 1)) | (b & (DIGITS - 1)) as u64;
                self.span = 0;
                if unsorted {
                    self.sort_front();
                }
            } else {
                if unsorted {
                    self.sort_front();
                } else {
                    // By time, stable (items of one time stay in seq order): an insertion sort
                    // of at most `SMALL` items, mostly two or three.
                    let front = self.front.make_contiguous();
                    for k in 1..front.len() {
                        let mut i = k;
                        while i > 0 && front[i - 1].time() > front[i].time() {
                            front.swap(i - 1, i);
                            i -= 1;
                        }
                    }
                }
                self.last = self.mins[b].time;
                self.span = (BITS * level) as u32;
            }
            return true;
        }
        // Split: every item agrees with the earliest on this bucket's digit and above, and goes
        // to a lower level, or to the front when it is due at the earliest time.
        let mut items = std::mem::take(&mut self.buckets[b]);
        let last = self.mins[b].time;
        self.last = last;
        self.span = 0;
        for item in items.drain(..) {
            let time = item.time();
            if time == last {
                self.front.push_back(item);
            } else {
                let c = Self::bucket(last, time);
                self.push_to(c, item, time);
                if unsorted {
                    self.unsorted.set(c);
                }
            }
        }
        self.buckets[b] = items;
        self.recycle(b);
        if unsorted {
            self.sort_front();
        }
        true
    }

    /// Nothing is pending: vectors with room for more than `HOLD_BYTES` are given back.
    #[cold]
    fn give_back(&mut self) {
        let large = |room: usize| room * std::mem::size_of::<T>() > HOLD_BYTES;
        if large(self.front.capacity()) {
            self.front = VecDeque::new();
        }
        for spare in &mut self.spare {
            spare.retain(|v| !large(v.capacity()));
        }
    }

    /// Sorts the front by time and seq (some items were scheduled out of order).
    #[cold]
    fn sort_front(&mut self) {
        self.front
            .make_contiguous()
            .sort_unstable_by_key(|e| (e.time(), e.seq()));
    }

    /// Rebuilds the queue with `extra`, which is earlier than the front's block.
    #[cold]
    fn rebuild(&mut self, extra: T) {
        let mut all: Vec<T> = self.front.drain(..).collect();
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        all.push(extra);
        all.sort_unstable_by_key(|e| (e.time(), e.seq()));
        self.occupied = Bits([0; WORDS]);
        self.summary = [0; SUMMARY];
        self.unsorted = Bits([0; WORDS]);
        self.len = all.len();
        self.last = all.first().map_or(0, |e| e.time());
        self.span = 0;
        // In (time, seq) order, appending keeps each bucket's items of one time in seq order.
        for item in all {
            let time = item.time();
            if time == self.last {
                self.front.push_back(item);
            } else {
                let b = Self::bucket(self.last, time);
                self.push_to(b, item, time);
            }
        }
    }

    /// Bytes of room the queue holds for items (pending or not), for the tests of memory given
    /// back.
    #[cfg(test)]
    fn room(&self) -> usize {
        let items = self.front.capacity()
            + self.buckets.iter().map(Vec::capacity).sum::<usize>()
            + self.spare.iter().flatten().map(Vec::capacity).sum::<usize>();
        items * std::mem::size_of::<T>()
    }
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
    fn an_item_scheduled_into_the_range_of_a_small_front_comes_out_in_order() {
        // Three events of 0x100..0x200 ns share a bucket of level 1, which becomes the front
        // whole; events scheduled into its range while it is taken out come out among them.
        let mut q = Queue::new();
        q.push(item(500, 1));
        q.push(item(300, 2));
        q.push(item(400, 3));
        q.push(item(900_000, 4));
        assert_eq!(q.pop().map(|e| (e.time, e.seq)), Some((300, 2)));
        q.push(item(350, 5));
        q.push(item(400, 6));
        q.push(item(300, 7));
        let out: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.seq))
            .collect();
        assert_eq!(
            out,
            vec![
                (300, 7),
                (350, 5),
                (400, 3),
                (400, 6),
                (500, 1),
                (900_000, 4)
            ]
        );
    }

    #[test]
    fn items_scheduled_out_of_seq_order_still_come_out_in_seq_order() {
        // Entries carry no seq: a bucket that received an item out of order is sorted by the
        // items' seqs when it becomes the front.
        let mut q = Queue::new();
        for (t, s) in [
            (10u64, 5u64),
            (10, 3),
            (700, 9),
            (700, 1),
            (700, 4),
            (5_000_000, 8),
            (5_000_000, 2),
        ] {
            q.push(item(t, s));
        }
        let out: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.seq))
            .collect();
        assert_eq!(
            out,
            vec![
                (10, 3),
                (10, 5),
                (700, 1),
                (700, 4),
                (700, 9),
                (5_000_000, 2),
                (5_000_000, 8)
            ]
        );
    }

    #[test]
    fn a_queue_of_tens_of_thousands_orders_exactly_as_a_binary_heap() {
        // With ties, put-backs and bursts that grow and shrink the queue (buckets split again and
        // again, their events moving down the levels).
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

    #[test]
    fn a_burst_split_many_times_comes_out_in_order_and_its_memory_is_given_back() {
        // A burst of 200,000 events over ~17 s of times (levels up to 3) is split bucket by
        // bucket, the events moving down the levels; then the queue runs dry and gives the room
        // of its large buckets back.
        let mut q = Queue::new();
        let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for seq in 0..200_000u64 {
            // A few distinct times share many events (ties), the rest spread out.
            let t = if seq % 7 == 0 {
                next() % 16 * 1_000_000
            } else {
                next() % (1 << 34)
            };
            q.push(item(t, seq));
            heap.push(Reverse((t, seq)));
        }
        let peak = q.room();
        assert!(peak >= 200_000 * std::mem::size_of::<Item>());
        let mut n = 0;
        while let Some(Reverse((t, s))) = heap.pop() {
            assert_eq!(q.peek().map(|e| (e.time, e.seq)), Some((t, s)), "event {n}");
            let e = q.pop().expect("pending");
            assert_eq!((e.time, e.seq, e.payload), (t, s, t ^ s), "event {n}");
            n += 1;
        }
        assert!(q.pop().is_none() && q.is_empty());
        let left = q.room();
        assert!(
            left < peak / 10,
            "{left} bytes of room left of {peak}"
        );
        // And the queue works on after running dry.
        q.push(item(1 << 40, 200_000));
        q.push(item(1 << 40, 200_001));
        assert_eq!(q.pop().map(|e| e.seq), Some(200_000));
        assert_eq!(q.pop().map(|e| e.seq), Some(200_001));
    }

    #[test]
    fn the_earliest_of_a_bucket_is_known_without_splitting_it() {
        // With the front used up, peek names the earliest item of the lowest bucket (by time,
        // then seq, also when the bucket received an item out of order), which the next pop
        // then takes out.
        let mut q = Queue::new();
        for (t, s) in [(1u64, 0u64), (5_000, 1), (4_000, 2), (4_000, 3), (4_500, 4)] {
            q.push(item(t, s));
        }
        for s in 10..50u64 {
            q.push(item(6_000 + s, s));
        }
        assert_eq!(q.pop().map(|e| e.seq), Some(0));
        assert_eq!(q.peek().map(|e| (e.time, e.seq)), Some((4_000, 2)));
        q.push(item(4_000, 1_000));
        assert_eq!(q.peek().map(|e| (e.time, e.seq)), Some((4_000, 2)));
        // Out of order: seq 0 was taken, so seq 0 is free to be put back.
        q.push(item(4_000, 0));
        assert_eq!(q.peek().map(|e| (e.time, e.seq)), Some((4_000, 0)));
        let out: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop())
            .take(4)
            .map(|e| (e.time, e.seq))
            .collect();
        assert_eq!(out, vec![(4_000, 0), (4_000, 2), (4_000, 3), (4_000, 1_000)]);
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
