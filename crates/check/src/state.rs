//! The checker's states: what the checker needs of an algorithm ([`Checkable`]) and one state,
//! decoded ([`St`]), with its byte encoding.
//!
//! States are kept compact: every process state, message, timer, input and application state
//! is interned once in a table of the model (a dense id per distinct value), so a state is a
//! short string of bytes: the ids of its processes and application, the time, the fault
//! budget, and its messages and timers as ids ([`St::encode`]; the model decodes it). The
//! explorer and the symmetry reduction both work on these states.

use crate::MAX_NODES;
use std::fmt::Debug;
use std::hash::Hash;

/// What the checker needs of an algorithm (`Clone` to copy states, `Hash` to fingerprint them,
/// `Debug` to show them, `Send + Sync` to explore on every core): the registry's
/// [`Explorable`](distsync_algorithms::registry::Explorable), which every algorithm its visitors
/// hand out already is, under the checker's own name.
pub use distsync_algorithms::registry::Explorable as Checkable;

// ---------------------------------------------------------------- states

/// A message in flight: its link (`from * n + to`), the FxHash of the message (the canonical
/// order of non-FIFO links), and the message's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flight {
    pub link: u16,
    pub hash: u64,
    pub msg: u32,
}

/// A pending timer of process `pos`, its deadline (in nanoseconds of abstract time), and the
/// timer's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingTimer {
    pub pos: u16,
    pub hash: u64,
    pub deadline: u64,
    pub timer: u32,
}

/// The fault budget left, and the partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Faults {
    pub crashes: u8,
    pub recoveries: u8,
    pub losses: u8,
    pub duplicates: u8,
    /// 0: no partition yet (one may start if allowed); 1: partitioned by `cut`; 2: healed.
    pub partition: u8,
    /// The positions on the side of the cut that does not hold position 0.
    pub cut: u64,
}

/// No process (crashed), in [`St::procs`].
pub(crate) const CRASHED: u32 = u32::MAX;

/// One state, decoded: processes (ids, [`CRASHED`] while crashed), the application's id, the
/// time, the faults, the messages in flight (in a canonical order: by link, then FIFO order or
/// hash order) and the pending timers (by position, then hash).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct St {
    pub procs: [u32; MAX_NODES],
    pub app: u32,
    pub now: u64,
    pub faults: Faults,
    pub msgs: Vec<Flight>,
    pub timers: Vec<PendingTimer>,
}

// By hand for `clone_from`, which the explorer calls for every move: the derived one makes new
// vectors and frees the old ones (an allocation and a free per transition, 11.6% of the
// instructions); this one copies into the vectors already there. It destructures every field
// (and `clone` goes through it), so that a field added to `St` does not compile until it is
// copied here too.
impl Clone for St {
    fn clone(&self) -> Self {
        let mut st = St::default();
        st.clone_from(self);
        st
    }

    fn clone_from(&mut self, source: &Self) {
        let St {
            procs,
            app,
            now,
            faults,
            msgs,
            timers,
        } = source;
        self.procs = *procs;
        self.app = *app;
        self.now = *now;
        self.faults = *faults;
        self.msgs.clone_from(msgs);
        self.timers.clone_from(timers);
    }
}

impl St {
    pub fn alive(&self, pos: usize) -> bool {
        self.procs[pos] != CRASHED
    }

    /// Appends the state's bytes to `out` (the positions `0..n`).
    pub fn encode(&self, n: usize, out: &mut Vec<u8>) {
        // Room made once, then written word by word into it through a pointer (a capacity
        // check per word, or a bounds check and a copy through a closure per word, was most of
        // the cost).
        let words = n + 7 + 2 * self.msgs.len() + 4 * self.timers.len();
        out.reserve(4 * words);
        let start = out.len();
        let mut w = Words {
            at: out.spare_capacity_mut().as_mut_ptr().cast::<u8>(),
            left: 4 * words,
        };
        for &p in &self.procs[..n] {
            w.put(p);
        }
        w.put(self.app);
        w.put(self.now as u32);
        w.put((self.now >> 32) as u32);
        let f = &self.faults;
        w.put(u32::from_le_bytes([
            f.crashes,
            f.recoveries,
            f.losses,
            f.duplicates,
        ]));
        w.put(u32::from(f.partition) | (f.cut as u32) << 8);
        w.put(self.msgs.len() as u32);
        for m in &self.msgs {
            w.put(u32::from(m.link));
            w.put(m.msg);
        }
        w.put(self.timers.len() as u32);
        for t in &self.timers {
            w.put(u32::from(t.pos));
            w.put(t.timer);
            w.put(t.deadline as u32);
            w.put((t.deadline >> 32) as u32);
        }
        assert_eq!(w.left, 0, "every word of the state written");
        // SAFETY: the `4 * words` bytes after `start` are within the capacity reserved above
        // and every one of them was written (the assertion: exactly `words` words were).
        unsafe { out.set_len(start + 4 * words) };
    }
}

/// A writer of little-endian words into reserved, not yet initialized room.
struct Words {
    at: *mut u8,
    /// The bytes of room left after `at`.
    left: usize,
}

impl Words {
    #[inline(always)]
    fn put(&mut self, x: u32) {
        // `St::encode` counts the words from the lengths of the state it borrows, and then
        // writes exactly that many: checked here in tests, and by its final assertion.
        debug_assert!(self.left >= 4, "within the room reserved");
        // SAFETY: `at` points into reserved room with at least 4 bytes left (the room holds
        // every word `St::encode` writes); an unaligned write of 4 bytes there stays inside it.
        unsafe {
            self.at.cast::<[u8; 4]>().write_unaligned(x.to_le_bytes());
            self.at = self.at.add(4);
        }
        self.left = self.left.wrapping_sub(4);
    }
}
