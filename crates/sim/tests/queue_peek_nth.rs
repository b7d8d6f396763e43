//! `Queue::peek_nth`, the look-ahead the engine uses to ask the memory for the processes of
//! the next few events: when it names an item, it is the item that many places after the
//! earliest, the one that `pop` then gives out that many pops later.

use distsync_sim::queue::{Keyed, Queue};

#[derive(Clone, Debug, PartialEq)]
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
