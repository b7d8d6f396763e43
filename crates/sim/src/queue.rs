//! The simulator's pending events: a radix heap keyed by time, of small entries pointing into a
//! slab of the events themselves, whose cost per event hardly grows with the number pending.
//!
//! Events come out in (time, seq) order, exactly as from a binary heap ordered by that pair. A
//! radix heap relies on what a discrete-event simulator guarantees: nothing is scheduled before
//! the time of the last event taken out. It keeps the front, the earliest pending events in
//! (time, seq) order, which hold every pending time of a block of times around `last`, and
//! buckets for the later ones: an event whose time first differs from `last` in byte `l`
//! (counting from the low end) goes to bucket (l, d), where d is that byte of its time. Every
//! event of a lower level is earlier than every event of a higher level, and within a level a
//! lower digit is earlier. When the front is used up, the lowest non-empty bucket becomes the
//! front whole when it holds one time (level 0) or is of level 1 or 2 (256 ns or 65.5 us of
//! times: radix-sorted by the one or two bytes below its digit, a counting sort per byte that
//! reads the entries in order and writes each once, or, for at most 32 entries, sorted by keys
//! of time and place); its range of times becomes the front's block, and an event scheduled
//! into that range is put in the front in order (or, when more than 64 pending entries of the
//! front are later than it, the front is first narrowed to its earliest time, the rest going
//! back to buckets of the levels below). A bucket of a higher level is split, however few
//! events it holds: its earliest time becomes `last` and its events move to lower levels (those
//! at the new `last` to the front). An event moves at most 8 times, and for delays of
//! milliseconds in nanoseconds once or twice into buckets and once or twice through the sort;
//! every bucket is a vector that is only appended to and then read in order, so the work is
//! sequential memory traffic instead of a binary heap's log2(n) scattered accesses per event.
//!
//! What moves is a 12-byte entry (the time and the index of the event's slot); the events stay
//! where they were put, in a slab whose free slots are reused last-freed first (so an event
//! scheduled while handling another lands where that one was, still in the cache). The one
//! scattered access left, reading an event when it is taken out, is asked of the memory ahead
//! of time (a prefetch of the next events of the front and the next times, the farther ones in
//! batches), so a queue of millions costs little more per event than a queue of a few dozen.
//! The slab's memory starts at a cache line, so that an event of 64 bytes is one line. Past its
//! first 2^20 slots the slab grows by segments of 2^20 slots that never move, so a queue that
//! grows to millions in a burst (every node of a large run sending at once) neither copies its
//! events at each doubling nor has the kernel zero twice the memory it ends up using.
//!
//! An entry carries no sequence number: the engine schedules in seq order, and appending keeps
//! every bucket's entries of one time in seq order, which a split preserves. An item scheduled
//! out of that order (an event put back, which the engine does at the horizon) is placed in the
//! front by the seqs of the items themselves, or marks its bucket as to be sorted by them when
//! it becomes the front. An event scheduled before the front's block (which the engine never
//! does) is still placed correctly: the queue is rebuilt around it.

use crate::prefetch;
use aligned_vec::{AVec, RuntimeAlign};

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
/// A drained bucket keeps its allocation for next time up to this many entries; a larger one is
/// given back, so that a burst of millions of events does not hold memory for the whole run.
const KEEP: usize = 4096;
/// How many entries ahead of the one taken out the queue asks the memory for their events.
const AHEAD: usize = 8;
/// How many entries further ahead (in the front) the queue asks for items into the second-level
/// cache only (more misses in flight than the first-level cache keeps track of): 7 to 18% less
/// per event at 1,000,000 and 10,000,000 pending than without, in A/B runs of the two queues
/// (docs/performance.md, "Large queues"; 16, 64 and 128 were no better than 32).
const FURTHER: usize = 32;
/// Those second-level requests go out `BATCH` at a time, every `BATCH` entries taken out (for
/// the items `FURTHER` to `FURTHER + BATCH` entries on), instead of one per entry taken out. A
/// request for a line whose page the address translation cache does not hold seems to hold up
/// the instructions behind it until the page is found (on this project's virtual machine a
/// two-stage walk), and such walks only overlap when the requests are close together: at ten
/// million pending, the one request per entry took most of the samples of the whole hold loop,
/// and batches cut the cost per event by a sixth to a third in A/B runs within one process,
/// with no clear difference between 8, 16, 24 and 32 (docs/performance.md, "Large queues").
const BATCH: usize = 16;
/// How far past the end of a bucket (in bytes) an append asks for the line it will write
/// later (`push_to`), when the bucket is `LONG` and has room that far: 512, about 40 entries.
/// In A/B runs at 10,000,000 pending, 256, 512 and 1,024 all cut the cost per event against no
/// such request, by more than the noise between them (docs/performance.md, "Large queues").
const TAIL: usize = 512;
/// From how many entries on a bucket is taking a run of appends long enough for `TAIL`'s
/// request to be met before it is needed.
const LONG: usize = 256;
/// From how many slots on the queue asks for items ahead (a smaller slab stays in the cache).
const PREFETCH_FROM: usize = 1 << 14;
/// How many drained large buckets the queue keeps for the next buckets to fill, instead of
/// growing them again from nothing (in a queue of millions, a bucket of the upper levels holds
/// hundreds of thousands of entries, filled anew every few hundred microseconds of time).
const SPARES: usize = 4;

/// What the buckets hold: an item's time and where the item is. Packed to 12 bytes: at ten
/// million pending events, the entries are most of what moves through the memory besides the
/// events themselves.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct Entry {
    time: u64,
    slot: u32,
}

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

/// Slots of a segment of the slab: 2^20, about 100 MB of 96-byte items, nearly all of it in
/// huge pages (a smaller segment, 2^17, leaves more of each segment outside its huge pages and
/// measured slower). The tests use small segments, so that their queues cross many.
#[cfg(not(test))]
const SEG_BITS: u32 = 20;
#[cfg(test)]
const SEG_BITS: u32 = 8;
const SEG: usize = 1 << SEG_BITS;

/// A vector of slots whose memory starts at a cache line, or at a huge page when it spans
/// several. The allocator puts a large block 16 bytes past the start of a page, so that in a
/// `Vec` every slot of 64 bytes (an event of ricart-agrawala) straddled two cache lines, both read
/// from the memory to take it out, and a slot of 96 bytes one in two straddled three.
type Slots<T> = AVec<Option<T>, RuntimeAlign>;

/// An empty vector of `room` slots, aligned as `Slots` says, whose pages the kernel gives as
/// they are first written (in huge pages where Linux allows).
fn slots<T>(room: usize) -> Slots<T> {
    let align = if room * std::mem::size_of::<Option<T>>() >= 2 * crate::huge_pages::HUGE {
        crate::huge_pages::HUGE
    } else {
        LINE
    };
    let slots = Slots::with_capacity(align, room);
    crate::huge_pages::advise_room(slots.as_ptr(), slots.capacity());
    slots
}

/// A cache line's bytes.
const LINE: usize = 64;

/// The items, each in the slot its entry names; `None` in a free slot. The first `SEG` slots are
/// one vector, grown by doubling; the later ones are segments of `SEG` slots, each allocated
/// once and never moved: a queue that grows to millions does not copy its items to a vector of
/// twice the size at each doubling, nor have the kernel zero the pages of each of those
/// vectors (on this project's virtual machine, zeroing fresh pages was a quarter of a run with
/// nine million events pending).
struct Slab<T> {
    first: Slots<T>,
    rest: Vec<Slots<T>>,
    len: usize,
}

impl<T: Clone> Clone for Slab<T> {
    fn clone(&self) -> Self {
        Slab {
            first: self.first.clone(),
            rest: self
                .rest
                .iter()
                .map(|s| {
                    let mut segment = Self::segment();
                    segment.extend_from_slice(s);
                    segment
                })
                .collect(),
            len: self.len,
        }
    }
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            first: Slots::new(LINE),
            rest: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<&Option<T>> {
        // The slots past the first vector's are in the segments (it is full when there are).
        match self.first.get(i) {
            Some(x) => Some(x),
            None => self
                .rest
                .get((i >> SEG_BITS).checked_sub(1)?)
                .map(|s| &s[i & (SEG - 1)]),
        }
    }

    /// Adds a slot at the end.
    #[inline(always)]
    fn push(&mut self, item: Option<T>) {
        if self.first.len() < self.first.capacity() {
            self.first.push(item);
        } else {
            self.push_past(item);
        }
        self.len += 1;
    }

    /// Adds a slot at the end when the first vector has no room left.
    #[cold]
    fn push_past(&mut self, item: Option<T>) {
        if self.len < SEG {
            self.grow();
            self.first.push(item);
        } else {
            if self.len & (SEG - 1) == 0 {
                self.add_segment();
            }
            self.rest.last_mut().expect("a segment").push(item);
        }
    }

    /// Doubles the room of the first vector. A large slab is read at random (an item where it
    /// was put, when it is taken out), so it asks the kernel for huge pages first: with 4 KiB
    /// pages nearly every such read of a slab of millions also misses the address translation
    /// cache.
    #[cold]
    fn grow(&mut self) {
        let room = (self.first.capacity() * 2).clamp(64, SEG);
        let mut first = slots(room);
        first.append(&mut self.first);
        self.first = first;
    }

    #[cold]
    fn add_segment(&mut self) {
        self.rest.push(Self::segment());
    }

    /// An empty segment with room for `SEG` slots.
    fn segment() -> Slots<T> {
        slots(SEG)
    }

    /// Slots of room.
    fn capacity(&self) -> usize {
        self.first.capacity() + self.rest.iter().map(Slots::capacity).sum::<usize>()
    }
}

impl<T> std::ops::Index<usize> for Slab<T> {
    type Output = Option<T>;
    #[inline(always)]
    fn index(&self, i: usize) -> &Option<T> {
        match self.first.get(i) {
            Some(x) => x,
            None => &self.rest[(i >> SEG_BITS) - 1][i & (SEG - 1)],
        }
    }
}

impl<T> std::ops::IndexMut<usize> for Slab<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Option<T> {
        match self.first.get_mut(i) {
            Some(x) => x,
            None => &mut self.rest[(i >> SEG_BITS) - 1][i & (SEG - 1)],
        }
    }
}

/// A bucket of level 1 or 2 this small or smaller is sorted by keys (`sort_small`) as it becomes
/// the front, instead of by the radix passes of `sort_into_front`.
const SMALL: usize = 32;
/// `ahead`'s bucket when it is the front.
const FRONT: usize = BUCKETS;
/// A bucket of this level or below becomes the front whole, radix-sorted by time (one pass per
/// level), however many entries it holds; a bucket of a higher level is split, however few it
/// holds. Level 2 spans 65.5 us of times, level 3 16.8 ms: a front made of a level-3 bucket
/// would take every event scheduled in the next milliseconds, each put in place by a scan of
/// the front, where a split sends it to a bucket by one append (with ricart-agrawala's 32
/// nodes, about 36 events pending 0.5 to 1.5 ms apart, that scan was 11% of a run's
/// instructions: docs/performance.md, "The simulator's hot path").
const SORTED: usize = 2;
/// How many pending entries of the front an entry scheduled into the front's block may pass
/// (moving them up one place each) before the front is narrowed to one time instead.
const FAR: usize = 64;

/// A priority queue of `T`, earliest (time, seq) first.
#[derive(Clone)]
pub struct Queue<T> {
    /// A time of the front's block, below every time in the buckets; the buckets are kept
    /// relative to it.
    last: u64,
    /// The front's block: the times that agree with `last` on every bit from `span` on (just
    /// `last` when `span` is 0; a whole bucket's range when that bucket became the front).
    span: u32,
    /// Every pending entry whose time is in the front's block, from `head` on (those before
    /// were taken out), in (time, seq) order.
    front: Vec<Entry>,
    head: usize,
    /// Bucket (level, digit) at index level * DIGITS + digit, for the times after the front's
    /// block: an entry goes to the level of the first digit in which its time differs from
    /// `last`.
    buckets: Vec<Vec<Entry>>,
    /// The buckets that are not empty.
    occupied: Bits,
    /// Bit w of word w / 64 set when word w of `occupied` is not zero.
    summary: [u64; SUMMARY],
    /// The buckets whose entries of one time may be out of seq order (an item was scheduled
    /// out of order): sorted by their items' seqs when they become the front.
    unsorted: Bits,
    /// Every item scheduled with a seq of at least this one is in order (later than every item
    /// scheduled so far).
    fresh_from: u64,
    /// The items, each in the slot its entry names; `None` in a free slot.
    slab: Slab<T>,
    /// The free slots of `slab`, the last freed last.
    free: Vec<u32>,
    /// Empty vectors with room for more than `KEEP` entries, at most `SPARES`.
    spare: Vec<Vec<Entry>>,
    /// The entry whose item was last asked of the memory ahead of time: (the front, `FRONT`,
    /// or a bucket of level 0; index). A hint only: entries come out of the front and then the
    /// next buckets of level 0 in order, so the queue keeps asking for the item about `AHEAD`
    /// entries ahead of the one taken out.
    ahead: (usize, usize),
    len: usize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            last: 0,
            span: 0,
            front: Vec::new(),
            head: 0,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: Bits([0; WORDS]),
            summary: [0; SUMMARY],
            unsorted: Bits([0; WORDS]),
            fresh_from: 0,
            slab: Slab::default(),
            free: Vec::new(),
            spare: Vec::new(),
            ahead: (FRONT, 0),
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
    fn mark(&mut self, b: usize) {
        self.occupied.set(b);
        self.summary[b / 4096] |= 1 << (b / 64 % 64);
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

    /// The seq of the item of `e`.
    #[inline]
    fn seq_of(slab: &Slab<T>, e: &Entry) -> u64 {
        slab[e.slot as usize]
            .as_ref()
            .expect("an entry's slot holds its item")
            .seq()
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
                self.slab.push(Some(item));
                slot
            }
        }
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

    /// Asks the memory for the item in `slot`, which will be taken out soon: into the
    /// first-level cache, or the second-level one only when it is needed a while later. Both
    /// lines of an item larger than a line (slots start at a line, so one of at most a line's
    /// bytes whose size divides it is one line).
    #[inline(always)]
    fn prefetch(&self, slot: u32, soon: bool) {
        if let Some(item) = self.slab.get(slot as usize) {
            let first: *const Option<T> = item;
            let size = std::mem::size_of::<Option<T>>();
            let last = first.cast::<u8>().wrapping_add(size - 1);
            if soon {
                prefetch::to_first_level(first);
                if size > LINE {
                    prefetch::to_first_level(last);
                }
            } else {
                prefetch::to_second_level(first);
                if size > LINE {
                    prefetch::to_second_level(last);
                }
            }
        }
    }

    /// Moves `ahead` to the next entry to come out, if there is one, and asks for its item.
    #[inline]
    fn look_ahead(&mut self) {
        let (b, i) = self.ahead;
        let list = if b == FRONT {
            &self.front
        } else {
            &self.buckets[b]
        };
        if let Some(e) = list.get(i + 1) {
            self.ahead = (b, i + 1);
            self.prefetch(e.slot, true);
            // And, from a long front, the items `FURTHER` entries later into the second-level
            // cache, a batch of them every `BATCH` entries, so that the requests above are met
            // there instead of by the memory.
            if b == FRONT && (i + 1).is_multiple_of(BATCH) {
                let from = i + 1 + FURTHER;
                self.prefetch_further(from, from + BATCH);
            }
            return;
        }
        // The next occupied bucket of level 0 after this one (after the front's time, when the
        // front holds one time; with a wider front, the buckets of level 0 are empty).
        let from = match b {
            FRONT if self.span == 0 => (self.last as usize & (DIGITS - 1)) + 1,
            FRONT => return,
            _ => b + 1,
        };
        if from >= DIGITS {
            return;
        }
        let mut w = from / 64;
        let mut word = self.occupied.0[w] & (!0u64 << (from % 64));
        while word == 0 {
            w += 1;
            if w == DIGITS / 64 {
                return;
            }
            word = self.occupied.0[w];
        }
        let c = w * 64 + word.trailing_zeros() as usize;
        if let Some(e) = self.buckets[c].first() {
            self.ahead = (c, 0);
            self.prefetch(e.slot, true);
        }
    }

    /// Asks for the items of the front's entries `from..to` (those it has) into the
    /// second-level cache.
    #[inline]
    fn prefetch_further(&self, from: usize, to: usize) {
        let to = to.min(self.front.len());
        for e in self.front.get(from..to).unwrap_or_default() {
            self.prefetch(e.slot, false);
        }
    }

    /// Starts `ahead` over at the front and asks for the first `AHEAD` items, and for the items
    /// after them, up to where `look_ahead`'s first batch will start, into the second-level
    /// cache.
    fn restart_ahead(&mut self) {
        let head = self.head;
        self.ahead = (FRONT, head);
        if let Some(e) = self.front.get(head) {
            self.prefetch(e.slot, true);
        }
        for _ in 1..AHEAD {
            self.look_ahead();
        }
        let first_batch = (head + 1).next_multiple_of(BATCH) + FURTHER;
        self.prefetch_further(head + AHEAD, first_batch);
    }

    /// Adds `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        let (time, seq) = (item.time(), item.seq());
        let slot = self.store(item);
        let e = Entry { time, slot };
        let in_order = seq >= self.fresh_from;
        if in_order {
            // Later than everything scheduled so far: appended to a bucket, it keeps the
            // bucket's entries of one time in seq order.
            self.fresh_from = seq + 1;
        }
        if self.in_front(time) {
            self.len += 1;
            if in_order {
                self.put_in_front(e);
            } else {
                self.put_in_front_out_of_order(e, seq);
            }
        } else if time > self.last {
            self.len += 1;
            let b = Self::bucket(self.last, time);
            self.push_to(b, e);
            if !in_order {
                self.unsorted.set(b);
            }
        } else {
            self.rebuild(e);
        }
    }

    /// Puts an entry of the front's block, later than every item scheduled before, in the
    /// front: after the pending entries of its time or earlier.
    #[inline]
    fn put_in_front(&mut self, e: Entry) {
        // Its place is found from the back (a new event is due later than most pending ones),
        // and the later pending entries move up one place in one copy; unless more than `FAR`
        // of them are later.
        let pending = &self.front[self.head..];
        if pending.len() > FAR {
            self.put_in_long_front(e);
            return;
        }
        let mut at = pending.len();
        while at > 0 && pending[at - 1].time > e.time {
            at -= 1;
        }
        let at = self.head + at;
        self.front.push(e);
        if at + 1 < self.front.len() {
            let last = self.front.len() - 1;
            self.front.copy_within(at..last, at + 1);
            self.front[at] = e;
        }
    }

    /// `put_in_front` when more than `FAR` entries of the front are pending.
    fn put_in_long_front(&mut self, e: Entry) {
        let pending = &self.front[self.head..];
        let nearest = pending.len() - FAR;
        let mut at = pending.len();
        while at > nearest && pending[at - 1].time > e.time {
            at -= 1;
        }
        if at == nearest && pending[at - 1].time > e.time {
            self.put_far_in_front(e);
            return;
        }
        let at = self.head + at;
        self.front.insert(at, e);
    }

    /// Puts an entry of the front's block, later than every item scheduled before, in the front
    /// when more than `FAR` pending entries of the front are later than it: before them all
    /// when it is earlier than every pending one, or else the front is first reduced to its
    /// earliest time (see `narrow_front`), which leaves it only later entries of that time.
    #[cold]
    fn put_far_in_front(&mut self, e: Entry) {
        let head = self.head;
        if e.time < self.front[head].time {
            if head > 0 {
                // Where the last taken out was.
                self.head -= 1;
                self.front[head - 1] = e;
            } else {
                self.front.insert(0, e);
            }
            return;
        }
        self.narrow_front();
        self.place_past_one_time_front(e);
    }

    /// With the front holding one time (`last`, `span` 0), puts `e` (no earlier than `last`,
    /// and later in (time, seq) than every entry placed so far) at the end of the front when it
    /// is of that time, or else in its bucket.
    #[inline]
    fn place_past_one_time_front(&mut self, e: Entry) {
        if e.time == self.last {
            self.front.push(e);
        } else {
            let b = Self::bucket(self.last, e.time);
            self.push_to(b, e);
        }
    }

    /// Makes the front hold only the pending entries of its earliest time (`span` 0), its later
    /// pending entries going to buckets of the levels below the front's block (empty until now:
    /// the front held every time of its block), in (time, seq) order, so that each bucket's
    /// entries of one time stay in seq order. A front sorted whole from a large bucket would
    /// otherwise move hundreds of entries for each event scheduled into its block.
    #[cold]
    fn narrow_front(&mut self) {
        let was = std::mem::take(&mut self.front);
        let head = std::mem::replace(&mut self.head, 0);
        self.last = was[head].time;
        self.span = 0;
        for &e in &was[head..] {
            self.place_past_one_time_front(e);
        }
        if self.slab.len() > PREFETCH_FROM {
            self.restart_ahead();
        }
    }

    /// Puts an entry of the front's block in the front by (time, seq), its item having a seq
    /// lower than some item's scheduled before it.
    #[cold]
    fn put_in_front_out_of_order(&mut self, e: Entry, seq: u64) {
        let head = self.head;
        let slab = &self.slab;
        let key = |x: &Entry| (x.time, Self::seq_of(slab, x));
        let front = &mut self.front;
        if head > 0 && front.get(head).is_none_or(|x| (e.time, seq) < key(x)) {
            // Before every pending one (an item put back): where the last taken out was.
            self.head -= 1;
            front[head - 1] = e;
        } else {
            let at = head + front[head..].partition_point(|x| key(x) < (e.time, seq));
            front.insert(at, e);
        }
    }

    /// Appends `e` to bucket `b`; a bucket without room of its own takes a spare one.
    #[inline]
    fn push_to(&mut self, b: usize, e: Entry) {
        let bucket = &mut self.buckets[b];
        if bucket.capacity() == 0 {
            // No room (so no entry): a spare's, if there is one.
            if let Some(spare) = self.spare.pop() {
                *bucket = spare;
            }
        }
        bucket.push(e);
        let long = bucket.len() >= LONG;
        // Marked occupied at every append, not only the first: whether a bucket was empty is a
        // branch that a small queue (ricart-agrawala with N = 32) mispredicted at one append
        // in five, and marking a marked bucket again changes nothing.
        self.mark(b);
        if long {
            let bucket = &self.buckets[b];
            // In a queue of millions a dozen large buckets take appends in turn, and an append
            // that starts a new line would wait for that line from the memory (read before it is
            // written), holding up every store behind it: the line `TAIL` bytes on is asked for
            // now, a few dozen appends before it is needed. Only for a bucket already long (a
            // short one rarely grows that far before it is emptied, and keeps the room of its
            // longest fill) and inside its room (past it lies other memory): else the line would
            // be pulled into the cache for nothing.
            let ahead = bucket.len() + TAIL / std::mem::size_of::<Entry>();
            if ahead < bucket.capacity() {
                prefetch::to_first_level(bucket.as_ptr().wrapping_add(ahead));
            }
        }
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
        if self.head == self.front.len() && !self.refill() {
            return None;
        }
        let e = self.front[self.head];
        self.head += 1;
        if self.slab.len() > PREFETCH_FROM {
            self.look_ahead();
        }
        self.len -= 1;
        Some(self.take(e.slot))
    }

    /// The earliest item, without taking it out.
    pub fn peek(&self) -> Option<&T> {
        if let Some(first) = self.front.get(self.head) {
            return Some(self.get(first.slot));
        }
        let b = self.lowest()?;
        let e = self.buckets[b]
            .iter()
            .min_by_key(|e| (e.time, Self::seq_of(&self.slab, e)))?;
        Some(self.get(e.slot))
    }

    /// The item `k` places after the earliest, when the front holds it (`None` further on): a
    /// hint for asking the memory ahead of time for what the next events will read.
    #[inline]
    pub fn peek_nth(&self, k: usize) -> Option<&T> {
        let e = self.front.get(self.head + k)?;
        self.slab.get(e.slot as usize)?.as_ref()
    }

    /// The entries in the order `iter` gives them: the front, then the buckets in order.
    fn entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.front[self.head..]
            .iter()
            .chain(self.buckets.iter().flatten())
    }

    /// Every pending item, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.entries().map(|e| self.get(e.slot))
    }

    /// Takes out the first item (in no particular order) for which `pick` holds.
    pub fn remove_where(&mut self, mut pick: impl FnMut(&T) -> bool) -> Option<T> {
        if let Some(i) = self.front[self.head..]
            .iter()
            .position(|e| pick(self.get(e.slot)))
        {
            self.len -= 1;
            let e = self.front.remove(self.head + i);
            return Some(self.take(e.slot));
        }
        for b in 0..self.buckets.len() {
            if let Some(i) = self.buckets[b].iter().position(|e| pick(self.get(e.slot))) {
                self.len -= 1;
                let e = self.buckets[b].remove(i);
                if self.buckets[b].is_empty() {
                    self.unmark(b);
                    self.unsorted.clear(b);
                }
                return Some(self.take(e.slot));
            }
        }
        None
    }

    /// The front is used up: the lowest non-empty bucket becomes the front, or is split.
    /// False when nothing is pending.
    fn refill(&mut self) -> bool {
        self.front.clear();
        self.head = 0;
        let Some(b) = self.lowest() else {
            // Nothing pending: the slab is all free; a burst's memory is given back.
            if self.slab.capacity() > KEEP {
                self.slab = Slab::default();
                self.free = Vec::new();
            }
            self.spare.clear();
            return false;
        };
        self.unmark(b);
        let unsorted = self.unsorted.get(b);
        self.unsorted.clear(b);
        let level = b / DIGITS;
        if level <= SORTED {
            // The whole bucket becomes the front: one time (level 0), or the entries of the
            // bucket's range, which becomes the front's block, sorted by time.
            if level == 0 {
                std::mem::swap(&mut self.front, &mut self.buckets[b]);
                self.recycle(b);
                self.last = (self.last & !(DIGITS as u64 - 1)) | (b & (DIGITS - 1)) as u64;
                self.span = 0;
                if unsorted {
                    self.sort_front();
                }
            } else {
                if self.buckets[b].len() <= SMALL || unsorted {
                    std::mem::swap(&mut self.front, &mut self.buckets[b]);
                    self.recycle(b);
                    if unsorted {
                        self.sort_front();
                    } else {
                        self.sort_small(level);
                    }
                } else {
                    self.sort_into_front(b, level);
                }
                self.last = self.front[0].time;
                self.span = (BITS * level) as u32;
            }
            if self.slab.len() > PREFETCH_FROM {
                match self.ahead.0 {
                    // `ahead` had walked into this bucket, which is the front now.
                    a if a == b => self.ahead.0 = FRONT,
                    a if a < b || a >= DIGITS => self.restart_ahead(),
                    _ => {}
                }
            }
            return true;
        }
        let mut entries = std::mem::take(&mut self.buckets[b]);
        let mut last = u64::MAX;
        for e in &entries {
            last = last.min(e.time);
        }
        self.last = last;
        self.span = 0;
        for &e in &entries {
            if e.time == last {
                self.front.push(e);
            } else {
                // Every other entry agrees with `last` on this bucket's digit and above: it
                // goes to a lower level.
                let c = Self::bucket(last, e.time);
                self.push_to(c, e);
                if unsorted {
                    self.unsorted.set(c);
                }
            }
        }
        entries.clear();
        self.buckets[b] = entries;
        self.recycle(b);
        if unsorted {
            self.sort_front();
        }
        if self.slab.len() > PREFETCH_FROM {
            self.restart_ahead();
        }
        true
    }

    /// Sorts the front, the entries of one bucket of `level` (1 or 2; at most `SMALL` of
    /// them, each time's in seq order), by time and stably, without a branch per comparison:
    /// each entry's key is the bits of its time below the bucket's digit (the entries agree on
    /// every other bit) above its place in the bucket, and the keys are sorted as numbers.
    fn sort_small(&mut self, level: usize) {
        const _: () = assert!(SMALL <= 256 && BITS * SORTED + 8 <= 64);
        let n = self.front.len();
        if n < 8 {
            // An insertion sort, for a few entries (mostly one to three).
            let front = &mut self.front;
            for k in 1..n {
                let e = front[k];
                let mut i = k;
                while i > 0 && front[i - 1].time > e.time {
                    front[i] = front[i - 1];
                    i -= 1;
                }
                front[i] = e;
            }
            return;
        }
        let below = (1u64 << (BITS * level)) - 1;
        let mut keys = [0u64; SMALL];
        for (i, (k, e)) in keys.iter_mut().zip(&self.front).enumerate() {
            *k = (e.time & below) << 8 | i as u64;
        }
        let keys = &mut keys[..n];
        keys.sort_unstable();
        let mut was = [Entry { time: 0, slot: 0 }; SMALL];
        was[..n].copy_from_slice(&self.front);
        for (e, k) in self.front.iter_mut().zip(keys.iter()) {
            *e = was[(k & 255) as usize];
        }
    }

    /// Makes bucket `b` of `level` 1 or 2 (at most `SORTED`), of more than `SMALL` entries in
    /// seq order within each time, the front, sorted by time and stably: a radix sort by the
    /// time's bytes below the bucket's digit (the entries agree on every other byte), lowest
    /// first, each pass a counting sort that reads the entries in order and writes each once.
    /// Where splitting the bucket would move each entry to a bucket of the level below (and, for
    /// level 2, again to one of level 1, or to level 0 to be taken out as a front of its own),
    /// this reads the bucket once for the counts and once per byte.
    fn sort_into_front(&mut self, b: usize, level: usize) {
        let mut from = std::mem::take(&mut self.buckets[b]);
        let n = from.len();
        let mut at = [[0u32; DIGITS]; SORTED];
        let [low, high] = &mut at;
        if level == 1 {
            for e in &from {
                low[e.time as usize & (DIGITS - 1)] += 1;
            }
        } else {
            for e in &from {
                low[e.time as usize & (DIGITS - 1)] += 1;
                high[(e.time >> BITS) as usize & (DIGITS - 1)] += 1;
            }
        }
        let mut to = std::mem::take(&mut self.front);
        for (byte, at) in at.iter_mut().enumerate().take(level) {
            let mut sum = 0;
            for a in at.iter_mut() {
                (*a, sum) = (sum, sum + *a);
            }
            to.clear();
            to.reserve(n);
            let room = to.spare_capacity_mut();
            for e in &from {
                let d = (e.time >> (BITS * byte)) as usize & (DIGITS - 1);
                room[at[d] as usize].write(*e);
                at[d] += 1;
            }
            // SAFETY: the counts give the `n` entries distinct places below `n` (the number of
            // entries of a lower digit, then one more for each entry of the same digit before
            // it), and each place was written above.
            unsafe { to.set_len(n) };
            std::mem::swap(&mut from, &mut to);
        }
        // `from` holds the sorted entries, `to` the room of the other pass (or of the front).
        self.front = from;
        to.clear();
        self.buckets[b] = to;
        self.recycle(b);
    }

    /// Sorts the front by time and its items' seqs (some were scheduled out of order).
    #[cold]
    fn sort_front(&mut self) {
        let head = self.head;
        let slab = &self.slab;
        self.front[head..].sort_by_key(|e| (e.time, Self::seq_of(slab, e)));
    }

    /// Rebuilds the queue with `extra`, which is earlier than the front's block.
    #[cold]
    fn rebuild(&mut self, extra: Entry) {
        let mut all: Vec<Entry> = self.front.drain(self.head..).collect();
        self.front.clear();
        self.head = 0;
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        all.push(extra);
        let slab = &self.slab;
        all.sort_unstable_by_key(|e| (e.time, Self::seq_of(slab, e)));
        self.occupied = Bits([0; WORDS]);
        self.summary = [0; SUMMARY];
        self.unsorted = Bits([0; WORDS]);
        self.len = all.len();
        self.last = all.first().map_or(0, |e| e.time);
        self.span = 0;
        self.ahead = (FRONT, 0);
        // In (time, seq) order, appending keeps each bucket's entries of one time in seq order.
        for e in all {
            self.place_past_one_time_front(e);
        }
    }

    /// Bytes of room the queue holds (for items pending or not), for the tests of memory given
    /// back.
    #[cfg(test)]
    fn room(&self) -> usize {
        let entries = self.front.capacity()
            + self.buckets.iter().map(Vec::capacity).sum::<usize>()
            + self.spare.iter().map(Vec::capacity).sum::<usize>();
        entries * std::mem::size_of::<Entry>()
            + self.slab.capacity() * std::mem::size_of::<Option<T>>()
            + self.free.capacity() * std::mem::size_of::<u32>()
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

    /// A slot of 64 bytes is one cache line, not two, and a large vector of slots is whole huge
    /// pages: the first vector and every segment start at a cache line, and a vector spanning
    /// several huge pages at one (a `Vec` of that size starts 16 bytes past a page).
    #[test]
    fn the_slabs_vectors_start_at_a_cache_line_and_large_ones_at_a_huge_page() {
        type Line = [u64; 7];
        assert_eq!(std::mem::size_of::<Option<Line>>(), LINE);
        let mut q: Queue<(u64, Line)> = Queue::new();
        impl Keyed for (u64, Line) {
            fn time(&self) -> u64 {
                self.0
            }
            fn seq(&self) -> u64 {
                self.0
            }
        }
        for t in 0..(4 * SEG as u64) {
            q.push((t, [t; 7]));
            assert_eq!(q.slab.first.as_ptr() as usize % LINE, 0, "after {t} items");
        }
        assert_eq!(q.slab.rest.len(), 3);
        for segment in &q.slab.rest {
            assert_eq!(segment.as_ptr() as usize % LINE, 0);
        }
        let large = slots::<Line>(1 << 20);
        assert_eq!(large.as_ptr() as usize % crate::huge_pages::HUGE, 0);
        assert_eq!(large.capacity(), 1 << 20);
        for t in 0..(4 * SEG as u64) {
            assert_eq!(q.pop().map(|(time, line)| (time, line[6])), Some((t, t)));
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
    fn a_few_dozen_events_milliseconds_apart_never_make_a_front_wider_than_level_2() {
        // Like a saturated mutual-exclusion run: a few dozen events pending (24 here, so that
        // the lowest bucket holds at most 32), each taken out followed by one scheduled 0.5 to
        // 1.5 ms later. Every 16.8 ms of time, all pending events lie in one bucket of level 3;
        // made the front whole, it would take in every later event by a scan. Split, the front
        // spans at most one bucket of level 2 (65.5 us), the new events go to buckets, and the
        // order is still a binary heap's, for every seed.
        for seed in 0..20u64 {
            let mut q = Queue::new();
            let mut heap = BinaryHeap::new();
            let mut next = xorshift(0x9e37_79b9_7f4a_7c15 ^ seed);
            let mut seq = 0u64;
            for _ in 0..24 {
                seq += 1;
                let t = 500_000 + next() % 1_000_001;
                q.push(item(t, seq));
                heap.push(Reverse((t, seq)));
            }
            for i in 0..20_000u64 {
                let e = q.pop().expect("pending");
                let Reverse((t, s)) = heap.pop().expect("pending");
                assert_eq!((e.time, e.seq), (t, s), "seed {seed}, event {i}");
                assert!(
                    q.span <= 16,
                    "seed {seed}, event {i}: a front of span {}",
                    q.span
                );
                seq += 1;
                let at = t + 500_000 + next() % 1_000_001;
                q.push(item(at, seq));
                heap.push(Reverse((at, seq)));
            }
        }
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

    /// A xorshift generator of the tests' times, from `state` (not zero).
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn a_queue_of_tens_of_thousands_orders_exactly_as_a_binary_heap() {
        // Past PREFETCH_FROM slots (the queue asks for items ahead), with ties, put-backs and
        // bursts that grow and shrink the queue.
        let mut q = Queue::new();
        let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
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
        // A burst of 200,000 events over ~17 s of times (levels up to 4) is split bucket by
        // bucket, the entries moving down the levels; then the queue runs dry and gives the
        // room of its slab back.
        let mut q = Queue::new();
        let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
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
        // The slab, which grows with the burst, is given back; the buckets keep at most `KEEP`
        // entries of room each.
        let left = q.room();
        assert_eq!(q.slab.capacity(), 0);
        assert!(left < peak / 5, "{left} bytes of room left of {peak}");
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
        assert_eq!(
            out,
            vec![(4_000, 0), (4_000, 2), (4_000, 3), (4_000, 1_000)]
        );
    }

    #[test]
    fn queues_across_many_slab_segments_order_exactly_as_a_binary_heap_over_many_seeds() {
        // The tests' segments hold 256 slots: these queues grow through dozens of them, shrink,
        // run dry (giving the slab back) and grow again; a clone taken midway goes on exactly as
        // the original.
        for seed in 0..24u64 {
            let mut q = Queue::new();
            let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let mut next =
                xorshift(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let (mut seq, mut now) = (0u64, 0u64);
            let mut copy = None;
            for phase in 0..3u64 {
                let burst = 2_000 + next() % 8_000;
                for _ in 0..burst {
                    seq += 1;
                    let t = now + 500_000 + next() % 1_000_000;
                    q.push(item(t, seq));
                    heap.push(Reverse((t, seq)));
                }
                let mut i = 0u64;
                while let Some(Reverse((t, s))) = heap.pop() {
                    let e = q.pop().expect("pending");
                    assert_eq!(
                        (e.time, e.seq, e.payload),
                        (t, s, t ^ s),
                        "seed {seed}, event {i}"
                    );
                    now = t;
                    i += 1;
                    if i.is_multiple_of(97) {
                        q.push(e);
                        heap.push(Reverse((t, s)));
                        continue;
                    }
                    // Each of the first events of the burst schedules a reply, as a large run does.
                    if i < burst {
                        seq += 1;
                        let at = t + 500_000 + next() % 1_000_000;
                        q.push(item(at, seq));
                        heap.push(Reverse((at, seq)));
                    }
                    if phase == 1 && i == burst / 2 {
                        copy = Some((q.clone(), heap.clone()));
                    }
                    assert_eq!(q.len(), heap.len(), "seed {seed}");
                }
                assert!(q.pop().is_none(), "seed {seed}");
            }
            let (mut q, mut heap) = copy.expect("a clone was taken");
            while let Some(Reverse((t, s))) = heap.pop() {
                let e = q.pop().expect("pending");
                assert_eq!((e.time, e.seq), (t, s), "seed {seed}, the clone");
            }
            assert!(q.pop().is_none() && q.is_empty(), "seed {seed}");
        }
    }

    #[test]
    fn buckets_of_levels_1_and_2_become_the_front_whole_and_a_small_one_of_level_3_is_split() {
        // Past `last` = 0: 200 entries of level 1 (times 256..512), 5,000 of level 2 (times
        // 65,536..131,072) and 20 of level 3 (times 2^24..2^25, at least 2^18 apart), each with
        // ties, scheduled in seq order but not in time order. The buckets of levels 1 and 2
        // become the front whole, radix-sorted; the 20 of level 3, few as they are, are split:
        // those of their earliest time become the front (one time), the others go to buckets of
        // level 2, each of which becomes a front of its own in turn. Every item comes out in
        // (time, seq) order.
        let mut q = Queue::new();
        let mut next = xorshift(0x853c_49e6_748f_ea9b);
        let mut all = vec![(0u64, 0u64)];
        q.push(item(0, 0));
        let mut seq = 0;
        for (count, from, apart) in [
            (200u64, 256u64, 16u64),
            (5_000, 1 << 16, 16),
            (20, 1 << 24, 1 << 22),
        ] {
            for _ in 0..count {
                seq += 1;
                // Few distinct times: many ties.
                let t = from + next() % 4 * apart + next() % 3 * (apart / 16);
                q.push(item(t, seq));
                all.push((t, seq));
            }
        }
        all.sort_unstable();
        let mut out = Vec::new();
        let mut fronts = Vec::new();
        while let Some(e) = q.pop() {
            if q.head == 1 {
                // This pop refilled the front.
                fronts.push((q.span, q.front.len()));
            }
            assert_eq!(e.payload, e.time ^ e.seq);
            out.push((e.time, e.seq));
        }
        assert_eq!(out, all);
        assert_eq!(fronts[..3], [(0, 1), (8, 200), (16, 5_000)]);
        let (first, rest) = fronts[3..]
            .split_first()
            .expect("the level-3 bucket's fronts");
        assert_eq!(
            first.0, 0,
            "the split's front holds its earliest time: {fronts:?}"
        );
        assert!(rest.iter().all(|f| f.0 == 16), "{fronts:?}");
        let mut times: Vec<u64> = all.iter().map(|a| a.0).filter(|&t| t >= 1 << 24).collect();
        times.dedup();
        assert_eq!(
            rest.len(),
            times.len() - 1,
            "one per later time: {fronts:?}"
        );
        assert_eq!(fronts[3..].iter().map(|f| f.1).sum::<usize>(), 20);
    }

    /// A queue whose front is a level-2 bucket of 1,000 entries, 10 ns apart from 65,536 ns,
    /// of which the first five were taken out; and the items it holds, in (time, seq) order.
    fn a_long_front() -> (Queue<Item>, Vec<(u64, u64)>) {
        let mut q = Queue::new();
        q.push(item(0, 0));
        let mut pending = Vec::new();
        for i in 0..1_000u64 {
            q.push(item(65_536 + 10 * (999 - i), i + 1));
            pending.push((65_536 + 10 * (999 - i), i + 1));
        }
        assert_eq!(q.pop().map(|e| e.time), Some(0));
        pending.sort_unstable();
        for &p in &pending[..5] {
            assert_eq!(q.pop().map(|e| (e.time, e.seq)), Some(p));
        }
        assert_eq!((q.span, q.front.len() - q.head), (16, 995));
        (q, pending.split_off(5))
    }

    fn drain(mut q: Queue<Item>) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.seq))
            .collect()
    }

    #[test]
    fn events_scheduled_into_a_long_front_come_out_in_order_and_one_far_in_narrows_it() {
        // Near the end of the front (fewer than `FAR` later pending entries): moved into place.
        let (mut q, mut pending) = a_long_front();
        for (t, s) in [
            (65_536 + 9_995, 2_000),
            (65_536 + 9_500, 2_001),
            (65_536 + 9_500, 2_002),
        ] {
            q.push(item(t, s));
            pending.push((t, s));
        }
        assert_eq!(q.span, 16);
        pending.sort_unstable();
        assert_eq!(drain(q), pending);

        // Before every pending entry (the time just taken out): where the last taken out was.
        let (mut q, mut pending) = a_long_front();
        let head = q.head;
        q.push(item(65_536 + 45, 2_000));
        pending.insert(0, (65_536 + 45, 2_000));
        assert_eq!((q.span, q.head), (16, head - 1));
        assert_eq!(drain(q), pending);

        // In the middle, with hundreds of later pending entries: the front is narrowed to its
        // earliest time, the others going to buckets of levels 0 and 1, and nothing is lost.
        let (mut q, mut pending) = a_long_front();
        q.push(item(65_536 + 5_000, 2_000));
        pending.push((65_536 + 5_000, 2_000));
        assert_eq!((q.span, q.front.len() - q.head), (0, 1));
        assert_eq!(q.last, 65_536 + 50);
        // And the narrowed queue goes on taking events into its block.
        for (t, s) in [
            (65_536 + 50, 2_001),
            (65_536 + 51, 2_002),
            (65_536 + 5_000, 2_003),
        ] {
            q.push(item(t, s));
            pending.push((t, s));
        }
        pending.sort_unstable();
        assert_eq!(drain(q), pending);
    }

    #[test]
    fn dense_queues_with_events_scheduled_into_the_front_order_exactly_as_a_binary_heap() {
        // Thousands pending, a third of the new events due within 300 ns (into the front's block),
        // a third within 70 us, a third 0.5 to 1.5 ms later, and put-backs: the fronts sorted
        // whole from large buckets, and narrowed, in every order the engine can produce.
        let (mut sorted, mut narrowed) = (0, 0);
        for seed in 0..12u64 {
            let mut q = Queue::new();
            let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let mut next =
                xorshift(0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut seq = 0u64;
            let delay = |next: &mut dyn FnMut() -> u64| match next() % 3 {
                0 => next() % 300,
                1 => next() % 70_000,
                _ => 500_000 + next() % 1_000_000,
            };
            for _ in 0..5_000 {
                seq += 1;
                let t = delay(&mut next);
                q.push(item(t, seq));
                heap.push(Reverse((t, seq)));
            }
            for i in 0..40_000u64 {
                let e = q.pop().expect("pending");
                let Reverse((t, s)) = heap.pop().expect("pending");
                assert_eq!((e.time, e.seq), (t, s), "seed {seed}, event {i}");
                if q.head == 1 && q.span > 0 && q.front.len() > SMALL {
                    sorted += 1;
                }
                if i % 53 == 0 {
                    q.push(e);
                    heap.push(Reverse((t, s)));
                    continue;
                }
                let wide = q.span > 0;
                seq += 1;
                let at = t + delay(&mut next);
                q.push(item(at, seq));
                heap.push(Reverse((at, seq)));
                if wide && q.span == 0 {
                    narrowed += 1;
                }
            }
            while let Some(Reverse((t, s))) = heap.pop() {
                let e = q.pop().expect("pending");
                assert_eq!((e.time, e.seq), (t, s), "seed {seed}");
            }
            assert!(q.pop().is_none(), "seed {seed}");
        }
        assert!(
            sorted > 100 && narrowed > 100,
            "sorted {sorted}, narrowed {narrowed}"
        );
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
