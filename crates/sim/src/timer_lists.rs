//! Timers kept out of the pending-event queue: one first-in first-out list per duration.
//!
//! A timer set for a span `d` at time `now` is due at `now + d`; the engine's time never goes
//! back and sequence numbers only grow, so the timers of one span are set in the order they
//! fall due, by (time, seq). A list per span is therefore already sorted, and the earliest
//! pending timer is the head of one of a few lists: merged with the queue by (time, seq) when
//! taken out, the timers come out exactly where the queue would have put them, ties included.
//!
//! What a list keeps of a timer is 24 bytes (due time, seq, the process's position, and whether
//! it was cancelled), against an 80-byte event in the queue's slab and a 24-byte entry moved
//! between its buckets. A cancelled timer (the ring link's acknowledgement timers, cancelled by
//! the Ack a few hops later: half the events of a million-process ring election) is marked
//! where it lies, found by its index, and is still taken out when it falls due, counted and
//! moving the time as before, without reading the event or the process's state.
//!
//! The lists are chunked: a list holds only the chunks its pending timers are in, and a drained
//! chunk is kept for the next ones (a few at most), so a burst of timers does not hold its
//! memory for the rest of the run.

use std::collections::VecDeque;

/// Timers per chunk.
const CHUNK: usize = 4096;
/// Drained chunks kept for reuse, per list.
const SPARE_CHUNKS: usize = 4;
/// The most spans with a list of their own; the timers of further spans go to the queue.
pub(crate) const MAX_LISTS: usize = 8;

/// One timer as a list keeps it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Entry {
    /// Due time, in ns.
    pub(crate) time: u64,
    pub(crate) seq: u64,
    /// Position of the process that set it.
    pub(crate) pos: u32,
    /// Cancelled, replaced, or lost in a crash.
    pub(crate) dead: bool,
}

/// The timers of one span, in the order they fall due.
#[derive(Clone, Debug)]
pub(crate) struct List {
    span: u64,
    chunks: VecDeque<Box<[Entry]>>,
    /// Index (counting every timer ever added) of the first entry of the first chunk.
    base: u64,
    /// Entries of the first chunk already taken out.
    head: usize,
    /// Timers ever added: the index of the next one.
    end: u64,
    spare: Vec<Box<[Entry]>>,
}

impl List {
    fn new(span: u64) -> Self {
        List {
            span,
            chunks: VecDeque::new(),
            base: 0,
            head: 0,
            end: 0,
            spare: Vec::new(),
        }
    }

    /// Pending timers (cancelled ones included).
    fn len(&self) -> u64 {
        self.end - self.base - self.head as u64
    }

    /// Adds a timer; returns its index.
    #[inline]
    fn push(&mut self, e: Entry) -> u64 {
        let index = self.end;
        let at = (index - self.base) as usize;
        if at == self.chunks.len() * CHUNK {
            let chunk = self
                .spare
                .pop()
                .unwrap_or_else(|| vec![Entry::default(); CHUNK].into_boxed_slice());
            self.chunks.push_back(chunk);
        }
        self.chunks[at / CHUNK][at % CHUNK] = e;
        self.end += 1;
        index
    }

    /// The earliest pending timer.
    #[inline]
    fn head(&self) -> Option<&Entry> {
        if self.len() == 0 {
            return None;
        }
        Some(&self.chunks[0][self.head])
    }

    /// Takes out the earliest pending timer.
    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        if self.len() == 0 {
            return None;
        }
        let e = self.chunks[0][self.head];
        self.head += 1;
        if self.head == CHUNK || self.len() == 0 {
            // The first chunk is used up (or the list is empty: start it afresh).
            let used = if self.head == CHUNK { CHUNK } else { self.head };
            if self.head == CHUNK || self.chunks.len() == 1 {
                let chunk = self.chunks.pop_front().expect("a first chunk");
                if self.spare.len() < SPARE_CHUNKS {
                    self.spare.push(chunk);
                }
                self.base += used as u64;
                self.head = 0;
            }
        }
        Some(e)
    }

    /// Marks timer `index` cancelled, if it is still pending.
    #[inline]
    fn kill(&mut self, index: u64) {
        let first = self.base + self.head as u64;
        if index < first || index >= self.end {
            return;
        }
        let at = (index - self.base) as usize;
        self.chunks[at / CHUNK][at % CHUNK].dead = true;
    }
}

/// Every list, and which span each is for.
#[derive(Clone, Debug, Default)]
pub(crate) struct TimerLists {
    lists: Vec<List>,
    /// Pending timers in all lists (cancelled ones included).
    len: u64,
}

/// Where a timer of a list is: bit 63 set, the list's number in bits 56-62, the timer's index
/// in the list below. A generation without bit 63 is a timer in the queue.
const LISTED: u64 = 1 << 63;
const INDEX_BITS: u32 = 56;

/// Whether the generation `g` names a timer in a list.
#[inline]
pub(crate) fn listed(g: u64) -> bool {
    g & LISTED != 0
}

impl TimerLists {
    /// Pending timers (cancelled ones included).
    #[inline]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Adds a timer of `span` due at `time`; returns its generation, or `None` when no list
    /// can take this span (the timer then goes to the queue).
    #[inline]
    pub(crate) fn push(&mut self, span: u64, time: u64, seq: u64, pos: u32) -> Option<u64> {
        let l = match self.lists.iter().position(|l| l.span == span) {
            Some(l) => l,
            None if self.lists.len() < MAX_LISTS => {
                self.lists.push(List::new(span));
                self.lists.len() - 1
            }
            None => return None,
        };
        let list = &mut self.lists[l];
        let index = list.push(Entry {
            time,
            seq,
            pos,
            dead: false,
        });
        self.len += 1;
        Some(LISTED | ((l as u64) << INDEX_BITS) | index)
    }

    /// Marks the timer of generation `g` (of a list) cancelled.
    #[inline]
    pub(crate) fn kill(&mut self, g: u64) {
        let l = ((g & !LISTED) >> INDEX_BITS) as usize;
        self.lists[l].kill(g & ((1 << INDEX_BITS) - 1));
    }

    /// The list whose head is the earliest pending timer by (time, seq), and that head's key.
    #[inline]
    pub(crate) fn earliest(&self) -> Option<(usize, u64, u64)> {
        let mut best: Option<(usize, u64, u64)> = None;
        for (l, list) in self.lists.iter().enumerate() {
            if let Some(e) = list.head() {
                if best.is_none_or(|(_, t, s)| (e.time, e.seq) < (t, s)) {
                    best = Some((l, e.time, e.seq));
                }
            }
        }
        best
    }

    /// Takes out the head of list `l`, with its generation.
    #[inline]
    pub(crate) fn pop(&mut self, l: usize) -> (Entry, u64) {
        let list = &mut self.lists[l];
        let index = list.base + list.head as u64;
        let e = list.pop().expect("a pending timer");
        self.len -= 1;
        (e, LISTED | ((l as u64) << INDEX_BITS) | index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_of_several_spans_come_out_by_time_then_seq_and_cancelled_ones_are_marked() {
        let mut lists = TimerLists::default();
        let mut seq = 0;
        let mut expected = Vec::new();
        let mut gens = Vec::new();
        // Three spans, set at increasing times, more than a chunk of each.
        for now in 0..(3 * CHUNK as u64) {
            for span in [10, 3, 7] {
                seq += 1;
                let g = lists.push(span, now + span, seq, 0).expect("a list");
                expected.push((now + span, seq));
                gens.push(g);
            }
        }
        // Cancel every third timer.
        let mut dead = std::collections::HashSet::new();
        for (i, g) in gens.iter().enumerate().filter(|(i, _)| i % 3 == 1) {
            lists.kill(*g);
            dead.insert(expected[i]);
        }
        expected.sort();
        assert_eq!(lists.len(), expected.len() as u64);
        let mut out = Vec::new();
        while let Some((l, t, s)) = lists.earliest() {
            let (e, _) = lists.pop(l);
            assert_eq!((e.time, e.seq), (t, s));
            assert_eq!(e.dead, dead.contains(&(t, s)));
            out.push((t, s));
        }
        assert_eq!(out, expected);
        assert_eq!(lists.len(), 0);
    }

    #[test]
    fn a_cancelled_timer_already_taken_out_is_left_alone_and_a_ninth_span_is_refused() {
        let mut lists = TimerLists::default();
        let g = lists.push(5, 5, 1, 0).expect("a list");
        let (e, popped) = lists.pop(0);
        assert_eq!((popped, e.dead), (g, false));
        lists.kill(g); // already out: nothing to mark
        let g2 = lists.push(5, 6, 2, 0).expect("a list");
        assert_ne!(g, g2);
        assert!(listed(g2));
        for span in 6..(5 + MAX_LISTS as u64) {
            assert!(lists.push(span, span, span, 0).is_some());
        }
        assert_eq!(lists.push(100, 100, 100, 0), None);
    }
}
