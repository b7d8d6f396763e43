//! The simulator's pending events: a radix heap keyed by time, whose cost per event hardly
//! grows with the number of events pending.
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
//! binary heap's log2(n) scattered accesses per event (a heap of millions of large events
//! misses the cache on most of them).
//!
//! An event scheduled before `last` (which the engine never does) is still placed correctly:
//! the queue is rebuilt around it.

use std::collections::VecDeque;

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
/// A drained bucket keeps its allocation for next time up to this many items; a larger one is
/// given back, so that a burst of millions of events does not hold memory for the whole run.
const KEEP: usize = 4096;

/// A priority queue of `T`, earliest (time, seq) first.
#[derive(Clone)]
pub struct Queue<T> {
    /// The time of the last item taken out (or the smallest time the queue was rebuilt around).
    last: u64,
    /// The items at time `last`, in seq order.
    front: VecDeque<T>,
    /// Bucket (level, digit) at index level * 256 + digit.
    buckets: Vec<Vec<T>>,
    /// Bit i of word i / 64 set when bucket i is not empty.
    occupied: [u64; LEVELS * DIGITS / 64],
    len: usize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            last: 0,
            front: VecDeque::new(),
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS * DIGITS / 64],
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

    #[inline]
    fn mark(&mut self, b: usize) {
        self.occupied[b / 64] |= 1 << (b % 64);
    }

    /// The lowest non-empty bucket.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        self.occupied
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Adds `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        let time = item.time();
        if time < self.last {
            self.rebuild(Some(item));
            return;
        }
        self.len += 1;
        if time == self.last {
            let seq = item.seq();
            match self.front.back() {
                Some(b) if b.seq() > seq => {
                    let at = self.front.partition_point(|e| e.seq() < seq);
                    self.front.insert(at, item);
                }
                _ => self.front.push_back(item),
            }
        } else {
            let b = Self::bucket(self.last, time);
            self.buckets[b].push(item);
            self.mark(b);
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
        self.buckets[b].iter().min_by_key(|e| (e.time(), e.seq()))
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
                if self.buckets[b].is_empty() {
                    self.occupied[b / 64] &= !(1 << (b % 64));
                }
                return Some(item);
            }
        }
        None
    }

    /// The front is empty: splits the lowest non-empty bucket. False when nothing is pending.
    fn refill(&mut self) -> bool {
        let Some(b) = self.lowest() else {
            return false;
        };
        self.occupied[b / 64] &= !(1 << (b % 64));
        let mut items = std::mem::take(&mut self.buckets[b]);
        if b < DIGITS {
            // Level 0: one time, the front as it is.
            self.last = (self.last & !0xff) | b as u64;
            let old = std::mem::replace(&mut self.front, VecDeque::from(items));
            if old.capacity() <= KEEP {
                self.buckets[b] = Vec::from(old);
            }
        } else {
            let last = items
                .iter()
                .map(|e| e.time())
                .min()
                .expect("a non-empty bucket");
            self.last = last;
            for item in items.drain(..) {
                let time = item.time();
                if time == last {
                    self.front.push_back(item);
                } else {
                    // Every other item agrees with `last` on this bucket's byte and above: it
                    // goes to a lower level.
                    let c = Self::bucket(last, time);
                    self.buckets[c].push(item);
                    self.mark(c);
                }
            }
            if items.capacity() <= KEEP {
                self.buckets[b] = items;
            }
        }
        // Items of one time arrive in seq order when they were scheduled in seq order (the
        // engine's case); sort them otherwise.
        let front = self.front.make_contiguous();
        if !front.is_sorted_by_key(|e| e.seq()) {
            front.sort_unstable_by_key(|e| e.seq());
        }
        true
    }

    /// Rebuilds the queue with `extra`, which is earlier than `last`.
    #[cold]
    fn rebuild(&mut self, extra: Option<T>) {
        let mut all: Vec<T> = self.front.drain(..).collect();
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        all.extend(extra);
        all.sort_unstable_by_key(|e| (e.time(), e.seq()));
        self.occupied = [0; LEVELS * DIGITS / 64];
        self.len = 0;
        self.last = all.first().map_or(0, |e| e.time());
        for item in all {
            self.push(item);
        }
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
