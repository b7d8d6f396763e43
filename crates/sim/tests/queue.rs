//! The pending-event queue through its public methods, on what the engine relies on:
//! - `peek_nth`, the look-ahead the engine uses to ask the memory for the processes of the next
//!   few events: when it names an item, it is the item that many places after the earliest, the
//!   one that `pop` then gives out that many pops later;
//! - past its first 2^20 slots, where its slab grows by segments that never move, a burst of
//!   more events than that comes out in exactly (time, seq) order, the same as sorting them, and
//!   a clone taken at the peak goes on exactly as the original.

use distsync_sim::queue::{Keyed, Queue};

#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    time: u64,
    seq: u64,
}

impl Keyed for Item {
    fn time(&self) -> u64 {
        self.time
    }
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// Many items at a few times (as a ring election's deliveries, a millisecond apart): whenever
/// `peek_nth(k)` answers, the k-th pop after it gives that item, and `peek_nth(0)` is `peek`.
#[test]
fn peek_nth_names_the_item_popped_that_many_places_later() {
    let mut q = Queue::new();
    let mut seq = 0;
    let mut x: u64 = 7;
    for _ in 0..5000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seq += 1;
        q.push(Item {
            time: (x >> 33) % 4 * 1_000_000,
            seq,
        });
    }
    let mut answered = 0;
    let mut now = 0;
    while !q.is_empty() {
        assert_eq!(q.peek_nth(0), q.peek());
        let ahead: Vec<Option<Item>> = (0..6).map(|k| q.peek_nth(k).cloned()).collect();
        let popped: Vec<Item> = (0..6).map_while(|_| q.pop()).collect();
        for (k, item) in ahead.iter().enumerate() {
            if let Some(item) = item {
                assert_eq!(Some(item), popped.get(k), "peek_nth({k})");
                answered += 1;
            }
        }
        // Schedule a few more after the last taken out (never before it), as the engine does.
        if let Some(last) = popped.last() {
            now = now.max(last.time);
            for d in [1_000_000, 1_000_000, 2_000_000] {
                if seq < 8000 {
                    seq += 1;
                    q.push(Item { time: now + d, seq });
                }
            }
        }
    }
    // 8,000 items in all, nearly every one in the front when looked for.
    assert!(answered > 7_000, "peek_nth answered only {answered} times");
}

#[test]
fn peek_nth_past_the_pending_items_is_none() {
    let mut q = Queue::new();
    assert!(q.peek_nth(0).is_none());
    q.push(Item { time: 5, seq: 1 });
    q.push(Item { time: 5, seq: 2 });
    q.pop();
    assert_eq!(q.peek_nth(0), Some(&Item { time: 5, seq: 2 }));
    assert!(q.peek_nth(1).is_none());
}

#[test]
fn a_burst_past_the_first_segment_comes_out_in_time_then_seq_order() {
    for seed in [1u64, 2] {
        let mut state = 0x2545_f491_4f6c_dd1du64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // 1,200,000 events (past 2^20 = 1,048,576 slots), due 0.5 to 1.5 ms ahead, many at
        // one time (ties by seq).
        let n = 1_200_000u64;
        let mut q = Queue::new();
        let mut keys = Vec::with_capacity(n as usize);
        for seq in 0..n {
            let time = 500_000 + next() % 1_000_000;
            q.push(Item { time, seq });
            keys.push((time, seq));
        }
        keys.sort_unstable();
        let mut copy = q.clone();
        for (i, &(time, seq)) in keys.iter().enumerate() {
            assert_eq!(q.pop(), Some(Item { time, seq }), "seed {seed}, event {i}");
        }
        assert!(q.pop().is_none() && q.is_empty(), "seed {seed}");
        for (i, &(time, seq)) in keys.iter().enumerate() {
            assert_eq!(
                copy.pop(),
                Some(Item { time, seq }),
                "seed {seed}, clone, event {i}"
            );
        }
        assert!(copy.is_empty(), "seed {seed}");
    }
}
