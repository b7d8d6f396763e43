//! The pending-event queue past its first 2^20 slots, where its slab grows by segments that
//! never move: a burst of more events than that comes out in exactly (time, seq) order, the
//! same as sorting them, and a clone taken at the peak goes on exactly as the original.

use distsync_sim::queue::{Keyed, Queue};

#[derive(Clone, Debug, PartialEq, Eq)]
struct Ev {
    time: u64,
    seq: u64,
}

impl Keyed for Ev {
    fn time(&self) -> u64 {
        self.time
    }
    fn seq(&self) -> u64 {
        self.seq
    }
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
            q.push(Ev { time, seq });
            keys.push((time, seq));
        }
        keys.sort_unstable();
        let mut copy = q.clone();
        for (i, &(time, seq)) in keys.iter().enumerate() {
            assert_eq!(q.pop(), Some(Ev { time, seq }), "seed {seed}, event {i}");
        }
        assert!(q.pop().is_none() && q.is_empty(), "seed {seed}");
        for (i, &(time, seq)) in keys.iter().enumerate() {
            assert_eq!(
                copy.pop(),
                Some(Ev { time, seq }),
                "seed {seed}, clone, event {i}"
            );
        }
        assert!(copy.is_empty(), "seed {seed}");
    }
}
