//! The model every family shares: processes, links, timers, faults; the transitions between its
//! states; and the family's application model and properties as a [`Spec`].
//!
//! States are kept compact. Every process state, message, timer, input and application state
//! is **interned** once in a [`Table`] (a dense id per distinct value, by a 128-bit structural
//! fingerprint), so a state is a short string of bytes: the ids of its processes and
//! application, the time, the fault budget, and its messages and timers as ids. Successors are
//! decoded into one reusable [`St`], changed, and encoded again: no allocation per state.
//!
//! A handler's result depends only on the process state and the event (each call gets the same
//! freshly seeded generator), so each worker **memoizes** it: (position, process id, event,
//! time) gives the next process id and the effects, and a handler runs once per distinct
//! process state and event instead of once per transition.

use crate::fingerprint::{fingerprint, FpMap};
pub(crate) use crate::state::{Checkable, Faults, Flight, PendingTimer, St, CRASHED};
use crate::{Config, Property, Transition, MAX_NODES};
use distsync_core::{Ctx, Effect, EffectOf, NodeId, Peers, Process, Time};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// A property broken by a transition or a state.
#[derive(Clone, Debug)]
pub(crate) struct Violation {
    pub property: Property,
    pub detail: String,
}

impl Violation {
    pub fn new(property: Property, detail: impl Into<String>) -> Violation {
        Violation {
            property,
            detail: detail.into(),
        }
    }
}

/// The family's view: its application model, which inputs the application may give, and what
/// is checked.
pub(crate) trait Spec<A: Process>: Sync {
    /// The application's state (what it still has to ask, what it has seen).
    type App: Clone + Eq + Hash + Debug + Send + Sync;
    /// Whether [`Spec::inputs`], [`Spec::take_input`] and [`Spec::output`] depend on the
    /// application, the position and the input or output alone, never on the world: then each
    /// worker remembers their results by the application's id, instead of copying, changing
    /// and interning the application on every input and output.
    const LOCAL_APP: bool = false;
    /// Why the family's algorithms cannot be checked with crashes (`--crash K`), for the
    /// error that refuses them; `None` when crashes are part of its model.
    const CRASH_REFUSAL: Option<&'static str> = None;
    /// The application at start.
    fn init(&self, w: &World<A>) -> Self::App;
    /// The inputs the application may give process `pos` now (it is alive).
    fn inputs(&self, app: &Self::App, w: &World<A>, pos: usize, out: &mut Vec<A::Input>);
    /// The application gives `input` to `pos` (before the handler runs).
    fn take_input(&self, app: &mut Self::App, pos: usize, input: &A::Input);
    /// Process `pos` output `output` (after its handler ran).
    fn output(
        &self,
        app: &mut Self::App,
        w: &World<A>,
        pos: usize,
        output: &A::Output,
    ) -> Option<Violation>;
    /// Process `pos` is about to crash (its state is still there).
    fn crash(&self, app: &mut Self::App, w: &World<A>, pos: usize) {
        let _ = (app, w, pos);
    }
    /// Process `pos` is about to recover (before its `on_start`).
    fn recover(&self, app: &mut Self::App, w: &World<A>, pos: usize) {
        let _ = (app, w, pos);
    }
    /// The properties of every state.
    fn check_state(&self, app: &Self::App, w: &World<A>) -> Option<Violation>;
    /// The properties of a state where nothing can happen.
    fn check_terminal(&self, app: &Self::App, w: &World<A>) -> Option<Violation>;
    /// Whether the application's goal is reached (every request served, the election over...).
    fn goal(&self, app: &Self::App, w: &World<A>) -> bool;
    /// Whether a process of this family is waiting for something the goal needs (a request
    /// not yet served, an election not over): the liveness obligation of `pos`.
    fn waiting(&self, app: &Self::App, w: &World<A>, pos: usize) -> bool;
    /// What fails when the goal cannot be reached ("some request is never granted").
    fn unreached(&self) -> &'static str;
    /// The application renamed by `perm` (old position -> new position), for symmetry
    /// reduction; `None` if this family's application cannot be renamed.
    fn rename_app(&self, app: &Self::App, perm: &[usize]) -> Option<Self::App> {
        let _ = (app, perm);
        None
    }
}

// ---------------------------------------------------------------- interning

/// `mutex` locked, even if a thread panicked holding it: the data behind the checker's locks
/// (intern tables, scratch space, spare buffers) stays usable, and the panic is reported anyway.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Index shards of a [`Table`]: threads interning at once rarely wait for each other.
const SHARDS: usize = 16;

/// Distinct values, each with a dense id that stays valid (as does a reference to the value)
/// for the whole exploration. Values are told apart by a 128-bit structural fingerprint.
pub(crate) struct Table<T> {
    /// The value and a 64-bit FxHash of it (the canonical order of messages and timers).
    items: boxcar::Vec<(T, u64)>,
    index: Vec<Mutex<FpMap<u32>>>,
}

fn hash64<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    value.hash(&mut h);
    h.finish()
}

impl<T: Hash> Table<T> {
    fn new() -> Self {
        Table {
            items: boxcar::Vec::new(),
            index: (0..SHARDS).map(|_| Mutex::new(FpMap::default())).collect(),
        }
    }

    /// The id of `value`, adding it if new.
    pub fn intern(&self, value: T) -> u32 {
        let fp = fingerprint(&value);
        let shard = &self.index[(fp >> 120) as usize % SHARDS];
        let mut map = lock(shard);
        if let Some(&id) = map.get(&fp) {
            return id;
        }
        let aux = hash64(&value);
        let id = self.items.push((value, aux));
        let id = u32::try_from(id).expect("fewer than 2^32 distinct values");
        map.insert(fp, id);
        id
    }
}

impl<T> Table<T> {
    /// The value of `id`.
    pub fn get(&self, id: u32) -> &T {
        &self.items[id as usize].0
    }

    /// The FxHash of value `id`.
    pub fn hash_of(&self, id: u32) -> u64 {
        self.items[id as usize].1
    }
}

// ---------------------------------------------------------------- states

// The states themselves are in `crate::state`; the model decodes them (their messages and
// timers carry the hashes of the values its tables hold).
impl St {
    /// Reads a state written by [`St::encode`] into `self` (reusing its vectors). Without
    /// `hashes`, the messages' and timers' hashes are left 0: enough to judge the state (their
    /// order is in the bytes), not to take moves from it.
    pub fn decode<A: Checkable, S: Spec<A>>(
        &mut self,
        model: &Model<'_, A, S>,
        bytes: &[u8],
        hashes: bool,
    ) {
        let mut words = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let mut get = || words.next().expect("a whole state");
        let n = model.n;
        for p in 0..n {
            self.procs[p] = get();
        }
        self.app = get();
        self.now = u64::from(get()) | u64::from(get()) << 32;
        let [crashes, recoveries, losses, duplicates] = get().to_le_bytes();
        let p = get();
        self.faults = Faults {
            crashes,
            recoveries,
            losses,
            duplicates,
            partition: p as u8,
            cut: u64::from(p >> 8),
        };
        self.msgs.clear();
        for _ in 0..get() {
            let link = get() as u16;
            let msg = get();
            self.msgs.push(Flight {
                link,
                hash: if hashes { model.msgs.hash_of(msg) } else { 0 },
                msg,
            });
        }
        self.timers.clear();
        for _ in 0..get() {
            let pos = get() as u16;
            let timer = get();
            let deadline = u64::from(get()) | u64::from(get()) << 32;
            self.timers.push(PendingTimer {
                pos,
                hash: if hashes {
                    model.timers.hash_of(timer)
                } else {
                    0
                },
                deadline,
                timer,
            });
        }
    }
}

/// What the family's spec sees of a state: the processes (`None` while crashed) and the
/// messages in flight. Each is looked up in the model's tables when asked for: making a view
/// costs nothing, and most callers look at little of it.
pub(crate) struct World<'a, A: Process> {
    st: &'a St,
    n: usize,
    procs: &'a Table<A>,
    table: &'a Table<A::Msg>,
}

impl<'a, A: Process> World<'a, A> {
    pub fn alive(&self, pos: usize) -> bool {
        self.st.alive(pos)
    }
    pub fn proc(&self, pos: usize) -> Option<&'a A> {
        let (st, procs) = (self.st, self.procs);
        st.alive(pos).then(|| procs.get(st.procs[pos]))
    }
    /// Every process by position, `None` while crashed.
    pub fn procs(&self) -> impl Iterator<Item = Option<&'a A>> + '_ {
        (0..self.n).map(|pos| self.proc(pos))
    }
    /// The messages in flight.
    pub fn msgs(&self) -> impl Iterator<Item = &'a A::Msg> + '_ {
        self.st.msgs.iter().map(|f| self.table.get(f.msg))
    }
    /// Whether some message is in flight.
    pub fn in_flight(&self) -> bool {
        !self.st.msgs.is_empty()
    }
}

/// One transition, by position: cheap to enumerate and to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Move {
    /// Deliver message `msgs[i]`.
    Deliver(u32),
    /// Give input number `k` of the application's list to `pos`.
    Input(u16, u16),
    /// Fire timer `timers[i]`.
    Timer(u32),
    Crash(u16),
    Recover(u16),
    /// Lose `msgs[i]`.
    Lose(u32),
    /// Duplicate `msgs[i]`.
    Duplicate(u32),
    /// Cut the positions in the mask from the others.
    Partition(u64),
    Heal,
}

/// What one transition did, for counterexamples and traces.
pub(crate) struct Effects<A: Process> {
    /// Whether to record anything (only for counterexamples and traces).
    pub record: bool,
    /// In order: a send (from, to, message) or an output (at, output).
    pub items: Vec<Eff<A>>,
    /// Messages dropped by the transition (crash, partition), or a send dropped at once.
    pub dropped: Vec<(NodeId, NodeId, A::Msg, &'static str)>,
}

pub(crate) enum Eff<A: Process> {
    Send(NodeId, NodeId, A::Msg),
    Output(NodeId, A::Output),
}

impl<A: Process> Effects<A> {
    /// Records every effect.
    pub fn new() -> Self {
        Effects {
            record: true,
            items: Vec::new(),
            dropped: Vec::new(),
        }
    }

    /// Records nothing (exploration).
    pub fn sink() -> Self {
        Effects {
            record: false,
            items: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------- handler memo

/// The event a handler is called with, by interned id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Event {
    Start { recovered: bool },
    Message { from: u16, msg: u32 },
    Input(u32),
    Timer(u32),
}

/// A handler call: who, in which state, what, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CallKey {
    pos: u16,
    proc: u32,
    event: Event,
    now: u64,
}

/// One effect of a handler, with interned messages and timers.
enum Fx<A: Process> {
    /// A send to `to` (at membership position `pos`, `None` if not a member).
    Send {
        to: NodeId,
        pos: Option<usize>,
        msg: u32,
    },
    SetTimer {
        timer: u32,
        after: u64,
    },
    CancelTimer {
        timer: u32,
    },
    Output(A::Output),
}

impl CallKey {
    /// The key's hash: its fields packed into three words, mixed by multiplication (the top
    /// bits are the home slot in [`Memo`]).
    #[inline]
    fn hash(&self) -> u64 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let (tag, id, from) = match self.event {
            Event::Start { recovered } => (0u64, u64::from(recovered), 0u64),
            Event::Message { from, msg } => (1, u64::from(msg), u64::from(from)),
            Event::Input(i) => (2, u64::from(i), 0),
            Event::Timer(t) => (3, u64::from(t), 0),
        };
        let a = u64::from(self.proc) | u64::from(self.pos) << 32 | from << 48;
        let b = id | tag << 32;
        let h = (a.wrapping_mul(K).rotate_left(26) ^ b).wrapping_mul(K);
        (h.rotate_left(26) ^ self.now).wrapping_mul(K)
    }
}

/// One remembered handler call: its key, the process state after it, and where its effects are
/// in [`Memo::fx`] (`len == u32::MAX`: an empty slot).
#[derive(Clone, Copy)]
struct MemoSlot {
    key: CallKey,
    proc: u32,
    start: u32,
    len: u32,
}

const EMPTY_SLOT: MemoSlot = MemoSlot {
    key: CallKey {
        pos: 0,
        proc: 0,
        event: Event::Input(0),
        now: 0,
    },
    proc: 0,
    start: 0,
    len: u32::MAX,
};

/// The handler memo: one flat array of slots (open addressing, linear probing, at most half
/// full), each holding the key and the result, and every call's effects one after another in
/// one vector. A lookup reads one slot and then the effects, where a general hash map read a
/// control byte, then its entry, then the entry's own vector of effects: three cache misses on
/// a memo of a few megabytes, a fifth of one thread's time.
struct Memo<A: Process> {
    slots: Vec<MemoSlot>,
    /// `64 - log2(slots.len())`.
    shift: u32,
    len: usize,
    fx: Vec<Fx<A>>,
}

impl<A: Process> Default for Memo<A> {
    fn default() -> Self {
        Memo {
            slots: vec![EMPTY_SLOT; 1 << 8],
            shift: 64 - 8,
            len: 0,
            fx: Vec::new(),
        }
    }
}

impl<A: Process> Memo<A> {
    /// The slot of `key`, or the empty slot where it goes.
    #[inline]
    fn find(&self, key: &CallKey) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (key.hash() >> self.shift) as usize;
        loop {
            let s = &self.slots[i];
            if s.len == u32::MAX || s.key == *key {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks for the cache line of `key`'s home slot.
    #[inline]
    fn prefetch(&self, key: &CallKey) {
        #[cfg(target_arch = "x86_64")]
        {
            let slot: *const MemoSlot = &self.slots[(key.hash() >> self.shift) as usize];
            // SAFETY: a prefetch is only a hint; it reads nothing and the address is valid.
            #[allow(unused_unsafe)]
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    slot.cast::<i8>(),
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The result of `key`: the process state after the call and where its effects are in
    /// `fx`; `run` pushes the effects of a call not yet remembered and gives the state after it.
    #[inline]
    fn get_or_run(
        &mut self,
        key: CallKey,
        run: impl FnOnce(&mut Vec<Fx<A>>) -> u32,
    ) -> (u32, std::ops::Range<usize>) {
        let i = self.find(&key);
        let s = self.slots[i];
        if s.len != u32::MAX {
            return (s.proc, s.start as usize..(s.start + s.len) as usize);
        }
        let start = self.fx.len();
        let proc = run(&mut self.fx);
        let len = self.fx.len() - start;
        let slot = MemoSlot {
            key,
            proc,
            start: u32::try_from(start).expect("fewer than 2^32 remembered effects"),
            len: u32::try_from(len).expect("fewer than 2^32 effects of one call"),
        };
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            self.grow();
            let i = self.find(&key);
            self.slots[i] = slot;
        } else {
            self.slots[i] = slot;
        }
        (proc, start..start + len)
    }

    /// Twice the slots, every entry moved to its place in them.
    fn grow(&mut self) {
        let twice = vec![EMPTY_SLOT; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, twice);
        self.shift -= 1;
        for s in old.into_iter().filter(|s| s.len != u32::MAX) {
            let i = self.find(&s.key);
            self.slots[i] = s;
        }
    }
}

/// One worker's scratch space and memo of handler calls. Each thread has its own, so that
/// looking up a call takes no lock.
pub(crate) struct Worker<A: Process> {
    memo: Memo<A>,
    /// Under [`Spec::LOCAL_APP`]: (application, position, input number) -> (the application
    /// after it, the input's id).
    app_inputs: FxHashMap<(u32, u16, u16), (u32, u32)>,
    /// Under [`Spec::LOCAL_APP`]: (application, handler call, the output's place among the
    /// call's effects) -> (the application after it, what it broke).
    app_outputs: FxHashMap<(u32, CallKey, u16), (u32, Option<Violation>)>,
    raw: Vec<EffectOf<A>>,
    pub inputs: Vec<A::Input>,
    pub moves: Vec<Move>,
    pub st: St,
    pub next: St,
    /// Renamed fingerprints, for symmetry reduction.
    pub sym: crate::symmetry::SymCache,
}

impl<A: Process> Default for Worker<A> {
    fn default() -> Self {
        Worker {
            memo: Memo::default(),
            app_inputs: FxHashMap::default(),
            app_outputs: FxHashMap::default(),
            raw: Vec::new(),
            inputs: Vec::new(),
            moves: Vec::new(),
            st: St::default(),
            next: St::default(),
            sym: Default::default(),
        }
    }
}

// ---------------------------------------------------------------- the model

/// The fixed part of a model: membership, configuration, the family's spec and the tables
/// of interned values.
pub(crate) struct Model<'c, A: Process, S: Spec<A>> {
    pub config: &'c Config,
    pub peers: Peers,
    pub n: usize,
    pub spec: S,
    pub procs: Table<A>,
    pub msgs: Table<A::Msg>,
    pub timers: Table<A::Timer>,
    pub inputs: Table<A::Input>,
    pub apps: Table<S::App>,
    /// The id of a fresh process (`Algorithm::new`), by position.
    fresh: Vec<u32>,
    /// Symmetry reduction: the renaming and the permutations of the interchangeable positions.
    pub sym: Option<(crate::symmetry::Renaming<A>, Vec<Vec<usize>>)>,
}

impl<'c, A: Checkable, S: Spec<A>> Model<'c, A, S> {
    pub fn new(config: &'c Config, peers: Peers, spec: S) -> Self {
        let procs = Table::new();
        let fresh = peers
            .ids()
            .iter()
            .map(|&id| procs.intern(A::new(id, &peers, &config.params)))
            .collect();
        Model {
            config,
            n: config.nodes,
            peers,
            spec,
            procs,
            msgs: Table::new(),
            timers: Table::new(),
            inputs: Table::new(),
            apps: Table::new(),
            fresh,
            sym: None,
        }
    }

    /// The key under which `st` is remembered: its fingerprint (`bytes` is its encoding), or
    /// under symmetry reduction the smallest fingerprint of its renamings.
    pub fn key(&self, st: &St, bytes: &[u8], cache: &mut crate::symmetry::SymCache) -> u128 {
        match &self.sym {
            None => xxhash_rust::xxh3::xxh3_128(bytes),
            Some((_, perms)) => {
                crate::symmetry::canonical(st, self.n, self.config.fifo, perms, self, cache)
            }
        }
    }

    pub fn ids(&self) -> &[NodeId] {
        self.peers.ids()
    }

    /// What the spec sees of `st`.
    pub fn world<'a>(&'a self, st: &'a St) -> World<'a, A> {
        World {
            st,
            n: self.n,
            procs: &self.procs,
            table: &self.msgs,
        }
    }

    pub fn app<'a>(&'a self, st: &St) -> &'a S::App {
        self.apps.get(st.app)
    }

    /// The process at `pos` in `st`, if alive.
    pub fn proc_of<'a>(&'a self, st: &St, pos: usize) -> Option<&'a A> {
        st.alive(pos).then(|| self.procs.get(st.procs[pos]))
    }

    fn cut_between(faults: &Faults, a: usize, b: usize) -> bool {
        faults.partition == 1 && ((faults.cut >> a) & 1) != ((faults.cut >> b) & 1)
    }

    /// The initial state: every process built and started, in membership order.
    pub fn initial(&self, w: &mut Worker<A>, effects: &mut Effects<A>) -> (St, Option<Violation>) {
        let f = &self.config.faults;
        let mut st = St {
            procs: [CRASHED; MAX_NODES],
            app: 0,
            now: 0,
            faults: Faults {
                crashes: f.crash,
                recoveries: f.recover,
                losses: f.loss,
                duplicates: f.duplicate,
                partition: if f.partition { 0 } else { 2 },
                cut: 0,
            },
            msgs: Vec::new(),
            timers: Vec::new(),
        };
        st.procs[..self.n].copy_from_slice(&self.fresh);
        st.app = self.apps.intern(self.spec.init(&self.world(&st)));
        let mut violation = None;
        for pos in 0..self.n {
            let event = Event::Start { recovered: false };
            let v = self.call(w, &mut st, pos, event, effects);
            violation = violation.or(v);
        }
        (st, violation)
    }

    /// Runs one handler of process `pos` (memoized) and carries out its effects.
    fn call(
        &self,
        w: &mut Worker<A>,
        st: &mut St,
        pos: usize,
        event: Event,
        record: &mut Effects<A>,
    ) -> Option<Violation> {
        let key = CallKey {
            pos: pos as u16,
            proc: st.procs[pos],
            event,
            now: st.now,
        };
        // One hash and probe: nearly every call is found.
        let raw = &mut w.raw;
        let (proc, effects) = w.memo.get_or_run(key, |fx| self.run_handler(raw, key, fx));
        st.procs[pos] = proc;
        let id = self.ids()[pos];
        let mut app: Option<S::App> = None;
        let mut violation = None;
        for (i, fx) in w.memo.fx[effects].iter().enumerate() {
            match *fx {
                Fx::Send { to, pos: t, msg } => match t {
                    Some(t) if t != pos => {
                        if !st.alive(t) {
                            if record.record {
                                let m = self.msgs.get(msg).clone();
                                record.dropped.push((id, to, m, "crashed"));
                            }
                        } else if Self::cut_between(&st.faults, pos, t) {
                            if record.record {
                                let m = self.msgs.get(msg).clone();
                                record.dropped.push((id, to, m, "partition"));
                            }
                        } else {
                            if record.record {
                                record
                                    .items
                                    .push(Eff::Send(id, to, self.msgs.get(msg).clone()));
                            }
                            self.push_msg(st, (pos * self.n + t) as u16, msg);
                        }
                    }
                    _ => {
                        let m = self.msgs.get(msg);
                        violation = violation.or(Some(Violation::new(
                            Property::OutputContract,
                            format!("node {id} sent {m:?} to {to}, not another member"),
                        )));
                    }
                },
                Fx::SetTimer { timer, after } => {
                    st.timers
                        .retain(|t| !(t.pos as usize == pos && t.timer == timer));
                    let deadline = if self.config.untimed {
                        0
                    } else {
                        st.now.saturating_add(after)
                    };
                    let t = PendingTimer {
                        pos: pos as u16,
                        hash: self.timers.hash_of(timer),
                        deadline,
                        timer,
                    };
                    let at = st
                        .timers
                        .iter()
                        .position(|x| (x.pos, x.hash) > (t.pos, t.hash))
                        .unwrap_or(st.timers.len());
                    st.timers.insert(at, t);
                }
                Fx::CancelTimer { timer } => st
                    .timers
                    .retain(|t| !(t.pos as usize == pos && t.timer == timer)),
                Fx::Output(ref output) if S::LOCAL_APP => {
                    let (after, v) =
                        w.app_outputs
                            .entry((st.app, key, i as u16))
                            .or_insert_with(|| {
                                let mut a = self.apps.get(st.app).clone();
                                let v = self.spec.output(&mut a, &self.world(st), pos, output);
                                (self.apps.intern(a), v)
                            });
                    st.app = *after;
                    if violation.is_none() {
                        violation.clone_from(v);
                    }
                    if record.record {
                        record.items.push(Eff::Output(id, output.clone()));
                    }
                }
                Fx::Output(ref output) => {
                    let a = app.get_or_insert_with(|| self.apps.get(st.app).clone());
                    let v = self.spec.output(a, &self.world(st), pos, output);
                    violation = violation.or(v);
                    if record.record {
                        record.items.push(Eff::Output(id, output.clone()));
                    }
                }
            }
        }
        if let Some(a) = app {
            st.app = self.apps.intern(a);
        }
        violation
    }

    /// Runs the handler of `key` on a copy of its process state: pushes its effects to `fx`
    /// and gives the id of the process state after it.
    fn run_handler(&self, raw: &mut Vec<EffectOf<A>>, key: CallKey, fx: &mut Vec<Fx<A>>) -> u32 {
        let pos = key.pos as usize;
        let id = self.ids()[pos];
        let mut process = self.procs.get(key.proc).clone();
        // Each call gets the same fresh generator: a call depends on the process state alone.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        raw.clear();
        {
            let now = Time::from_nanos(key.now);
            let recovered = matches!(key.event, Event::Start { recovered: true });
            let mut ctx = Ctx::new(id, &self.peers, now, recovered, &mut rng, raw);
            match key.event {
                Event::Start { .. } => process.on_start(&mut ctx),
                Event::Message { from, msg } => {
                    let from = self.ids()[from as usize];
                    process.on_message(from, self.msgs.get(msg).clone(), &mut ctx)
                }
                Event::Input(i) => process.on_input(self.inputs.get(i).clone(), &mut ctx),
                Event::Timer(t) => process.on_timer(self.timers.get(t).clone(), &mut ctx),
            }
        }
        fx.extend(raw.drain(..).map(|e| match e {
            Effect::Send { to, msg } => Fx::Send {
                to,
                pos: self.peers.position(to),
                msg: self.msgs.intern(msg),
            },
            Effect::SetTimer { timer, after } => Fx::SetTimer {
                timer: self.timers.intern(timer),
                after: after.as_nanos().min(u64::MAX as u128) as u64,
            },
            Effect::CancelTimer { timer } => Fx::CancelTimer {
                timer: self.timers.intern(timer),
            },
            Effect::Output(o) => Fx::Output(o),
        }));
        self.procs.intern(process)
    }

    /// Puts message `msg` in flight on `link`, keeping the canonical order.
    fn push_msg(&self, st: &mut St, link: u16, msg: u32) {
        let hash = self.msgs.hash_of(msg);
        let msgs = &mut st.msgs;
        let at = if self.config.fifo {
            msgs.iter()
                .position(|f| f.link > link)
                .unwrap_or(msgs.len())
        } else {
            msgs.iter()
                .position(|f| (f.link, f.hash) > (link, hash))
                .unwrap_or(msgs.len())
        };
        msgs.insert(at, Flight { link, hash, msg });
    }

    /// Every move enabled in `st`, in a fixed order.
    pub fn enabled(&self, st: &St, out: &mut Vec<Move>, inputs: &mut Vec<A::Input>) {
        out.clear();
        let f = &st.faults;
        for (i, m) in st.msgs.iter().enumerate() {
            let first_of_link = i == 0 || st.msgs[i - 1].link != m.link;
            let deliverable = if self.config.fifo {
                first_of_link
            } else {
                // Equal messages on one link lead to the same state: deliver one of them.
                first_of_link || st.msgs[i - 1] != *m
            };
            if deliverable {
                out.push(Move::Deliver(i as u32));
            }
        }
        let app = self.app(st);
        let world = self.world(st);
        for pos in 0..self.n {
            if st.alive(pos) {
                inputs.clear();
                self.spec.inputs(app, &world, pos, inputs);
                for k in 0..inputs.len() {
                    out.push(Move::Input(pos as u16, k as u16));
                }
            }
        }
        if self.config.untimed {
            for i in 0..st.timers.len() {
                out.push(Move::Timer(i as u32));
            }
        } else if st.msgs.is_empty() {
            // A timer fires only when no message is in flight, and the earliest first.
            if let Some(min) = st.timers.iter().map(|t| t.deadline).min() {
                for (i, t) in st.timers.iter().enumerate() {
                    if t.deadline == min {
                        out.push(Move::Timer(i as u32));
                    }
                }
            }
        }
        if f.crashes > 0 {
            for pos in 0..self.n {
                if st.alive(pos) {
                    out.push(Move::Crash(pos as u16));
                }
            }
        }
        if f.recoveries > 0 {
            for pos in 0..self.n {
                if !st.alive(pos) {
                    out.push(Move::Recover(pos as u16));
                }
            }
        }
        for (i, m) in st.msgs.iter().enumerate() {
            let first_equal = i == 0 || st.msgs[i - 1] != *m;
            if first_equal {
                if f.losses > 0 {
                    out.push(Move::Lose(i as u32));
                }
                if f.duplicates > 0 {
                    out.push(Move::Duplicate(i as u32));
                }
            }
        }
        match f.partition {
            0 if self.n >= 2 => {
                // Every split in two non-empty sides; the side without position 0 is the cut.
                for mask in 1..(1u64 << (self.n - 1)) {
                    out.push(Move::Partition(mask << 1));
                }
            }
            1 => out.push(Move::Heal),
            _ => {}
        }
    }

    /// Whether some fault is enabled in `st`: with [`Model::progress_possible`], whether
    /// [`Model::enabled`] has any move at all.
    pub fn fault_possible(&self, st: &St) -> bool {
        let f = &st.faults;
        (f.crashes > 0 && (0..self.n).any(|p| st.alive(p)))
            || (f.recoveries > 0 && (0..self.n).any(|p| !st.alive(p)))
            || ((f.losses > 0 || f.duplicates > 0) && !st.msgs.is_empty())
            || (f.partition == 0 && self.n >= 2)
            || f.partition == 1
    }

    /// Whether some transition other than a fault is enabled.
    pub fn progress_possible(&self, st: &St, inputs: &mut Vec<A::Input>) -> bool {
        if !st.msgs.is_empty() || !st.timers.is_empty() {
            return true;
        }
        let app = self.app(st);
        let world = self.world(st);
        (0..self.n).any(|pos| {
            st.alive(pos) && {
                inputs.clear();
                self.spec.inputs(app, &world, pos, inputs);
                !inputs.is_empty()
            }
        })
    }

    /// Asks for the memo slot of the handler call that delivering move `m` makes from `st`
    /// (nothing for other moves), so that the lookup when it is taken finds it in the cache.
    #[inline]
    pub fn prefetch_call(&self, w: &Worker<A>, st: &St, m: Move) {
        if let Move::Deliver(i) = m {
            let flight = st.msgs[i as usize];
            let (f, r) = (flight.link as usize / self.n, flight.link as usize % self.n);
            w.memo.prefetch(&CallKey {
                pos: r as u16,
                proc: st.procs[r],
                event: Event::Message {
                    from: f as u16,
                    msg: flight.msg,
                },
                now: st.now,
            });
        }
    }

    /// Takes move `m` from the state in `next` (changed in place).
    pub fn apply(
        &self,
        w: &mut Worker<A>,
        next: &mut St,
        m: Move,
        effects: &mut Effects<A>,
    ) -> Option<Violation> {
        let n = self.n;
        match m {
            Move::Deliver(i) => {
                let flight = next.msgs.remove(i as usize);
                let (f, r) = (flight.link as usize / n, flight.link as usize % n);
                let event = Event::Message {
                    from: f as u16,
                    msg: flight.msg,
                };
                self.call(w, next, r, event, effects)
            }
            Move::Input(pos, k) => {
                let key = (next.app, pos, k);
                let pos = pos as usize;
                let known = if S::LOCAL_APP {
                    w.app_inputs.get(&key).copied()
                } else {
                    None
                };
                let (app, input) = known.unwrap_or_else(|| {
                    let mut app = self.app(next).clone();
                    w.inputs.clear();
                    self.spec
                        .inputs(&app, &self.world(next), pos, &mut w.inputs);
                    let input = w.inputs.swap_remove(k as usize);
                    self.spec.take_input(&mut app, pos, &input);
                    let ids = (self.apps.intern(app), self.inputs.intern(input));
                    if S::LOCAL_APP {
                        w.app_inputs.insert(key, ids);
                    }
                    ids
                });
                next.app = app;
                self.call(w, next, pos, Event::Input(input), effects)
            }
            Move::Timer(i) => {
                let t = next.timers.remove(i as usize);
                if !self.config.untimed {
                    next.now = next.now.max(t.deadline);
                }
                self.call(w, next, t.pos as usize, Event::Timer(t.timer), effects)
            }
            Move::Crash(pos) => {
                let pos = pos as usize;
                next.faults.crashes -= 1;
                let mut app = self.app(next).clone();
                self.spec.crash(&mut app, &self.world(next), pos);
                next.app = self.apps.intern(app);
                next.procs[pos] = CRASHED;
                next.timers.retain(|t| t.pos as usize != pos);
                let ids = self.peers.ids();
                let (mut i, msgs) = (0, &mut next.msgs);
                while i < msgs.len() {
                    let fl = msgs[i];
                    if fl.link as usize % n == pos {
                        if effects.record {
                            let (a, b) = (fl.link as usize / n, fl.link as usize % n);
                            let m = self.msgs.get(fl.msg).clone();
                            effects.dropped.push((ids[a], ids[b], m, "crashed"));
                        }
                        msgs.remove(i);
                    } else {
                        i += 1;
                    }
                }
                None
            }
            Move::Recover(pos) => {
                let pos = pos as usize;
                next.faults.recoveries -= 1;
                let mut app = self.app(next).clone();
                self.spec.recover(&mut app, &self.world(next), pos);
                next.app = self.apps.intern(app);
                next.procs[pos] = self.fresh[pos];
                let event = Event::Start { recovered: true };
                self.call(w, next, pos, event, effects)
            }
            Move::Lose(i) => {
                next.faults.losses -= 1;
                next.msgs.remove(i as usize);
                None
            }
            Move::Duplicate(i) => {
                next.faults.duplicates -= 1;
                let f = next.msgs[i as usize];
                self.push_msg(next, f.link, f.msg);
                None
            }
            Move::Partition(mask) => {
                next.faults.partition = 1;
                next.faults.cut = mask;
                let faults = next.faults;
                let ids = self.peers.ids();
                let (mut i, msgs) = (0, &mut next.msgs);
                while i < msgs.len() {
                    let fl = msgs[i];
                    let (a, b) = (fl.link as usize / n, fl.link as usize % n);
                    if Self::cut_between(&faults, a, b) {
                        if effects.record {
                            let m = self.msgs.get(fl.msg).clone();
                            effects.dropped.push((ids[a], ids[b], m, "partition"));
                        }
                        msgs.remove(i);
                    } else {
                        i += 1;
                    }
                }
                None
            }
            Move::Heal => {
                next.faults.partition = 2;
                next.faults.cut = 0;
                None
            }
        }
    }

    /// The identity of move `m` for weak fairness: the same message on the same link, the same
    /// timer of the same process, the same input; 0 for faults (never required).
    pub fn fair_id(&self, st: &St, m: Move) -> u64 {
        let id = match m {
            Move::Deliver(i) => {
                let f = &st.msgs[i as usize];
                hash64(&(0u8, f.link, f.hash))
            }
            Move::Input(pos, k) => hash64(&(1u8, pos, k)),
            Move::Timer(i) => {
                let t = &st.timers[i as usize];
                hash64(&(2u8, t.pos, t.hash))
            }
            _ => return 0,
        };
        id.max(1)
    }

    /// The positions with a liveness obligation in `st` (a request waiting, an election not
    /// over), as bits.
    pub fn waiting_mask(&self, st: &St) -> u64 {
        let app = self.app(st);
        let world = self.world(st);
        (0..self.n)
            .filter(|&p| self.spec.waiting(app, &world, p))
            .fold(0, |m, p| m | 1 << p)
    }

    /// The typed transition of move `m` in `st`.
    pub fn transition(
        &self,
        st: &St,
        m: Move,
        inputs: &mut Vec<A::Input>,
    ) -> Transition<A::Msg, A::Timer, A::Input> {
        let ids = self.ids();
        let link = |i: u32| {
            let f = &st.msgs[i as usize];
            (
                ids[f.link as usize / self.n],
                ids[f.link as usize % self.n],
                self.msgs.get(f.msg).clone(),
            )
        };
        match m {
            Move::Deliver(i) => {
                let (from, to, msg) = link(i);
                Transition::Deliver { from, to, msg }
            }
            Move::Input(pos, k) => {
                inputs.clear();
                self.spec
                    .inputs(self.app(st), &self.world(st), pos as usize, inputs);
                Transition::Input {
                    node: ids[pos as usize],
                    input: inputs[k as usize].clone(),
                }
            }
            Move::Timer(i) => {
                let t = &st.timers[i as usize];
                Transition::Timer {
                    node: ids[t.pos as usize],
                    timer: self.timers.get(t.timer).clone(),
                }
            }
            Move::Crash(p) => Transition::Crash {
                node: ids[p as usize],
            },
            Move::Recover(p) => Transition::Recover {
                node: ids[p as usize],
            },
            Move::Lose(i) => {
                let (from, to, msg) = link(i);
                Transition::Lose { from, to, msg }
            }
            Move::Duplicate(i) => {
                let (from, to, msg) = link(i);
                Transition::Duplicate { from, to, msg }
            }
            Move::Partition(mask) => {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (p, &id) in ids.iter().enumerate() {
                    if (mask >> p) & 1 == 1 {
                        b.push(id)
                    } else {
                        a.push(id)
                    }
                }
                Transition::Partition { groups: [a, b] }
            }
            Move::Heal => Transition::Heal,
        }
    }
}

impl<A: Checkable, S: Spec<A>> crate::symmetry::Renamer for Model<'_, A, S> {
    fn proc(&self, id: u32, perm: &[usize]) -> u128 {
        let (r, _) = self.sym.as_ref().expect("symmetry on");
        (r.proc)(self.procs.get(id), perm)
    }
    fn msg(&self, id: u32, perm: &[usize]) -> u128 {
        let (r, _) = self.sym.as_ref().expect("symmetry on");
        (r.msg)(self.msgs.get(id), perm)
    }
    fn timer(&self, id: u32, perm: &[usize]) -> u128 {
        let (r, _) = self.sym.as_ref().expect("symmetry on");
        (r.timer)(self.timers.get(id), perm)
    }
    fn app(&self, id: u32, perm: &[usize]) -> u128 {
        let app = self.apps.get(id);
        fingerprint(
            &self
                .spec
                .rename_app(app, perm)
                .expect("checked when the model was built"),
        )
    }
}
