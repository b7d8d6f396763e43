//! The discrete-event engine, generic over the algorithm and over a family harness.
//!
//! Events are ordered by (time, sequence number); one seeded generator drives every random
//! choice (delays, loss, duplication, workload arrivals, the algorithms' own randomness), so a
//! scenario and a seed determine the run. The engine owns the network, timers, crashes and the
//! trace; the family harness (`Harness`) owns workloads, monitors and the family's report.
//!
//! The engine advances one event at a time (`Engine::turn`); the batch run is "always apply the
//! earliest pending event" until the run ends. A stepped session (crate::session) uses the same
//! turns and can also apply a chosen pending event, drop or duplicate a message in flight, or
//! inject faults and requests at the current time (engine/manual.rs).

mod manual;
pub use manual::PendingEvent;
pub use manual::{is_link_plumbing, label_of};

use crate::clocks::Clocks;
use crate::guard::{Guard, Sample};
use crate::network::{Fate, Network};
use crate::queue::{Keyed, Queue};
use crate::report::{Frame, LinkReport, MessageStats, Report, Violation};
use crate::scenario::{Action, Checked, Ties, DEFAULT_UNTIL};
use crate::timer_lists::{listed, TimerLists};
use crate::trace::{Line, MsgStamp, Tracer};
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, Params, Peers, Process, Rules, Time,
};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::io::Write;

/// What a family adds to a run: inputs to the processes, monitors of their outputs, and the
/// family's part of the report.
pub trait Harness<P: Process> {
    /// Called once at time zero, after every process started.
    fn start(&mut self, ctl: &mut Control<'_, P>);
    /// A process reported `output`.
    fn on_output(&mut self, node: NodeId, output: &P::Output, ctl: &mut Control<'_, P>);
    /// A wake-up this harness asked for with [`Control::wake`].
    fn on_wake(&mut self, node: NodeId, tag: u64, ctl: &mut Control<'_, P>) {
        let _ = (node, tag, ctl);
    }
    /// A scripted action the engine does not handle itself (e.g. `request`).
    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, P>) {
        let _ = (action, ctl);
    }
    /// A message (`msg_id`, shared by a duplicate's copies) from `from` is about to be delivered
    /// to the live process of `to`.
    fn on_deliver(&mut self, from: NodeId, to: NodeId, msg_id: u64, ctl: &mut Control<'_, P>) {
        let _ = (from, to, msg_id, ctl);
    }
    /// An input is about to be given to the live process of `node` (it was pending until now).
    fn on_input(&mut self, node: NodeId, input: &P::Input, ctl: &mut Control<'_, P>) {
        let _ = (node, input, ctl);
    }
    /// A node is about to crash: its process is still there, for a last look at its state
    /// (what it did that the harness has not recorded yet). [`Harness::on_crash`] follows.
    fn before_crash(&mut self, node: NodeId, ctl: &mut Control<'_, P>) {
        let _ = (node, ctl);
    }
    /// A node crashed (its state is gone).
    fn on_crash(&mut self, node: NodeId, ctl: &mut Control<'_, P>) {
        let _ = (node, ctl);
    }
    /// A node recovered with fresh state; called before its process's `on_start`.
    fn on_recover(&mut self, node: NodeId, ctl: &mut Control<'_, P>) {
        let _ = (node, ctl);
    }
    /// Nothing is left to happen: no message, timer, input or scripted event is pending.
    fn on_idle(&mut self, ctl: &mut Control<'_, P>) {
        let _ = ctl;
    }
    /// True when the harness's work is complete and the run may stop early.
    fn done(&self) -> bool {
        false
    }
    /// At the end: add final checks and the family's section to the report.
    fn finish(&mut self, ctl: &mut Control<'_, P>, report: &mut Report);
    /// Whether a scripted or manual action that the engine does not handle itself (`request`,
    /// `elect`, `sync`...) applies to this family; `Err` says why not.
    fn accepts(&self, action: &Action, ctl: &Control<'_, P>) -> Result<(), String> {
        let _ = ctl;
        Err(format!(
            "{action:?} does not apply to this algorithm's family"
        ))
    }
    /// A few words on what `node`, whose process is `process` (`None` while crashed), is doing,
    /// for people watching the run ("in CS", "leader 6").
    fn describe(&self, node: NodeId, process: Option<&P>) -> Option<String> {
        let _ = (node, process);
        None
    }
}

#[derive(Clone)]
// A million-process run keeps millions of these pending: positions are `u32` (ids are) and
// the chain length a message carries is a `u32` (saturating: a causal chain of 4 billion
// messages is beyond any run), which keeps a delivery of a small message within 80 bytes.
enum Kind<P: Process> {
    Deliver {
        /// Positions of the sender and the receiver.
        from: u32,
        to: u32,
        msg: P::Msg,
        msg_id: u64,
        duplicate: bool,
        chain: u32,
        stamp: Option<MsgStamp>,
    },
    /// A lost copy, noted (in the trace) at the time it would have arrived. Its message kind is
    /// an entry of `Core::kinds`, and it was lost to a partition or else to the link's loss:
    /// two names kept as 32 bytes of pointers and lengths made every event of a run 8 bytes
    /// longer (72 instead of 64 for ricart-agrawala, whose millions of pending events at
    /// N = 3,000 are a GB of memory written and read once each).
    Lost {
        from: u32,
        to: u32,
        msg_id: u64,
        kind: u32,
        partitioned: bool,
    },
    Timer {
        pos: usize,
        timer: P::Timer,
        generation: u64,
    },
    Input {
        pos: usize,
        input: P::Input,
    },
    Wake {
        pos: usize,
        tag: u64,
    },
    Action(usize),
}

impl<P: Process> Kind<P> {
    /// The position of the process whose slot this event reads, if it reads one.
    #[inline]
    fn process(&self) -> Option<usize> {
        match *self {
            Kind::Deliver { to, .. } => Some(to as usize),
            Kind::Timer { pos, .. } | Kind::Input { pos, .. } => Some(pos),
            _ => None,
        }
    }
}

#[derive(Clone)]
struct Event<P: Process> {
    time: Time,
    seq: u64,
    kind: Kind<P>,
}

// The pending events come out earliest time first, and in the order they were scheduled among
// equal times.
impl<P: Process> Keyed for Event<P> {
    #[inline]
    fn time(&self) -> u64 {
        self.time.as_nanos()
    }
    #[inline]
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// What the engine knows of one message kind, found on the hot path by the address of the
/// kind's name (`Message::kind` returns one of a few `&'static str`) instead of its text.
#[derive(Clone, Debug)]
struct KindInfo {
    name: &'static str,
    /// One of `chain_excludes`.
    excluded: bool,
    /// The reliable link's frame of this kind.
    frame: Frame,
    /// Its entry in `by_kind`, once a message of this kind was counted.
    counted: Option<usize>,
}

/// A process, its timers and its causal chain: what each event for it reads. A slot starts at
/// a cache line (64 bytes) and fills whole lines, so that an event for a process reads the
/// fewest lines (a ring election's 312-byte slot, unaligned, spanned six lines for three slots
/// in four; aligned, five).
#[derive(Clone)]
#[repr(align(64))]
struct Slot<P: Process> {
    process: Option<P>,
    timers: Timers<P::Timer>,
    /// Longest causal chain of messages ending at this node.
    chain: u64,
}

/// `n` empty slots, in memory backed by huge pages where Linux allows: a million-process run
/// reads its slots (hundreds of megabytes) in no order a 4 KiB page table entry cache follows,
/// and with 4 KiB pages nearly every event was a page-table walk as well as a cache miss.
fn new_slots<P: Process>(n: usize) -> Vec<Slot<P>> {
    let mut slots = Vec::with_capacity(n);
    crate::huge_pages::advise(&slots);
    slots.extend((0..n).map(|_| Slot {
        process: None,
        timers: Timers::Few(SmallVec::new()),
        chain: 0,
    }));
    slots
}

/// The generation of each pending timer of one process: a timer event applies only if its
/// generation is still the one here (setting a timer again, cancelling it or a crash makes the
/// event already queued a dead one). A process has few timers at once (a ring link's one per
/// unacknowledged message, a T'): up to [`FEW_TIMERS`] they are a short list, scanned, which
/// costs no hashing, and whose first [`INLINE_TIMERS`] are kept in the slot itself (a list
/// elsewhere in memory was a cache miss for every timer set or cancelled on a large ring);
/// beyond, a hash map.
#[derive(Clone)]
pub(crate) enum Timers<T> {
    Few(SmallVec<[(T, u64); INLINE_TIMERS]>),
    Many(FxHashMap<T, u64>),
}

/// The most timers [`Timers`] keeps in a list.
const FEW_TIMERS: usize = 16;
/// The timers of a process kept in its slot (a ring election's T' and two acknowledgements).
const INLINE_TIMERS: usize = 3;

impl<T: Eq + std::hash::Hash> Timers<T> {
    /// The generation of `timer`, if it is pending.
    #[inline]
    pub(crate) fn get(&self, timer: &T) -> Option<&u64> {
        match self {
            Timers::Few(list) => list.iter().find(|(t, _)| t == timer).map(|(_, g)| g),
            Timers::Many(map) => map.get(timer),
        }
    }

    /// Sets `timer` to `generation`, replacing the pending one, whose generation it returns.
    #[inline]
    fn insert(&mut self, timer: T, generation: u64) -> Option<u64> {
        match self {
            Timers::Few(list) => match list.iter().position(|(t, _)| *t == timer) {
                Some(i) => Some(std::mem::replace(&mut list[i].1, generation)),
                None if list.len() < FEW_TIMERS => {
                    list.push((timer, generation));
                    None
                }
                None => {
                    let mut map: FxHashMap<T, u64> = list.drain(..).collect();
                    map.insert(timer, generation);
                    *self = Timers::Many(map);
                    None
                }
            },
            Timers::Many(map) => map.insert(timer, generation),
        }
    }

    /// Forgets `timer`; returns its generation if it was pending.
    #[inline]
    fn remove(&mut self, timer: &T) -> Option<u64> {
        match self {
            Timers::Few(list) => {
                let i = list.iter().position(|(t, _)| t == timer)?;
                let (_, generation) = list.swap_remove(i);
                Self::unspill(list);
                Some(generation)
            }
            Timers::Many(map) => map.remove(timer),
        }
    }

    /// Takes out the pending timer of `generation`, if there is one.
    #[inline]
    fn take_generation(&mut self, generation: u64) -> Option<T>
    where
        T: Clone,
    {
        match self {
            Timers::Few(list) => {
                let i = list.iter().position(|(_, g)| *g == generation)?;
                let (timer, _) = list.swap_remove(i);
                Self::unspill(list);
                Some(timer)
            }
            Timers::Many(map) => {
                let timer = map.iter().find(|(_, g)| **g == generation)?.0.clone();
                map.remove(&timer);
                Some(timer)
            }
        }
    }

    /// Moves a list that went beyond [`INLINE_TIMERS`] back into the slot once it fits again: a
    /// list left elsewhere in memory is a cache miss for every later timer of the process
    /// (a ring link's T' and three acknowledgements at once, for a moment, are four).
    #[inline]
    fn unspill(list: &mut SmallVec<[(T, u64); INLINE_TIMERS]>) {
        if list.spilled() && list.len() <= INLINE_TIMERS {
            list.shrink_to_fit();
        }
    }

    /// Forgets every timer (a crash); returns their generations.
    fn clear(&mut self) -> Vec<u64> {
        let generations = match self {
            Timers::Few(list) => list.iter().map(|(_, g)| *g).collect(),
            Timers::Many(map) => map.values().copied().collect(),
        };
        *self = Timers::Few(SmallVec::new());
        generations
    }
}

/// The engine's state, which harnesses reach through [`Control`].
#[derive(Clone)]
pub struct Core<P: Process> {
    peers: Peers,
    params: Params,
    now: Time,
    seq: u64,
    queue: Queue<Event<P>>,
    /// The earliest (time, seq) in `queue`, when known (see [`Core::queue_min`]).
    queue_min: Option<Option<(u64, u64)>>,
    /// Timers kept out of `queue` (batch runs: see [`Engine::run`]), when `listing`.
    timer_lists: TimerLists,
    /// Whether a delivery asks the memory for the latest arrival of the link back to its sender
    /// (see [`Network::prefetch_link`]): batch runs whose table of links is larger than the
    /// caches.
    prefetch_links: bool,
    listing: bool,
    /// With `ties = "seeded"`: the generator that orders timers due at the same time (see
    /// [`Core::push`]).
    ties: Option<Xoshiro256PlusPlus>,
    slots: Vec<Slot<P>>,
    network: Network,
    clocks: Clocks,
    rng: Xoshiro256PlusPlus,
    effects: Vec<EffectOf<P>>,
    /// The rules of the algorithm's file that the latest handler naming any applied, and the
    /// position of its process ([`Ctx::rule`]; read by the stepping session, see
    /// [`Engine::take_rules`]).
    rules: Option<(usize, Rules)>,
    /// Whether handlers' rules are kept in `rules`: not in a batch run, which never reads them.
    keep_rules: bool,
    actions: Vec<Action>,
    pending_actions: usize,
    next_msg_id: u64,
    next_timer_generation: u64,
    in_flight: u64,
    /// Of `in_flight`, the copies of kinds in `chain_excludes`.
    in_flight_excluded: u64,
    by_kind: Vec<(&'static str, u64)>,
    /// Message kinds that do not lengthen causal chains (acknowledgements, heartbeats).
    chain_excludes: Vec<&'static str>,
    /// Every kind sent so far (a name spelled at two addresses has two entries).
    kinds: Vec<KindInfo>,
    /// The entry in `kinds` of the kinds last sent, by the address of their names (see
    /// [`Core::kind_info`]): (address, length, entry), the address 0 where none is kept.
    kind_cache: [(usize, usize, usize); KIND_CACHE],
    violations: Vec<Violation>,
    suppressed_violations: u64,
    tracer: Option<Tracer<P::Msg>>,
    messages: MessageStats,
    report: Report,
    /// Outputs of every process so far (progress, for the storm monitor).
    outputs: u64,
    /// The reliable link layer's traffic, when the scenario asks for reliable links.
    link: Option<LinkReport>,
}

/// Places in `Core::kind_cache` (a power of two).
const KIND_CACHE: usize = 32;

/// The most violations a report lists; further ones are counted in a final entry.
const MAX_VIOLATIONS: usize = 100;

/// From how many processes a batch run reads the next event's key after each event, to have
/// that event's process fetched from memory meanwhile (see [`Core::prefetch_slot`]).
const PREFETCH_SLOTS_FROM: usize = 4096;

/// How many events after the next one a batch run of [`PREFETCH_SLOTS_FROM`] processes or more
/// asks for the slot of the process that event is for (see [`Core::prefetch_ahead`]): on
/// Peterson's election on a ring of a million, 2, 3, 4, 5 and 6 were tried, and 4 was the
/// fastest (docs/performance.md, "Elections of a million processes"). The queue asks for the
/// event itself 8 ahead.
const SLOTS_AHEAD: usize = 4;

/// How many deliveries' links a run with a large table of links asks for at once, every
/// `LINKS_BATCH` events, and how many events ahead the first of them is. A request at random in
/// a table of n² links (72 MB at 3,000 nodes) waits for the address of its page, and such waits
/// overlap only when the requests are close together, as the queue's do (`queue::BATCH`):
/// ricart-agrawala with 3,000 nodes requesting once took about 15% less user time than with one
/// request per event, for that event's own link, in five alternated pairs (docs/performance.md,
/// "Row b").
const LINKS_BATCH: usize = 16;
const LINKS_AHEAD: usize = 8;

/// What a harness may do: read the time and the processes, schedule inputs and wake-ups, and
/// record violations.
pub struct Control<'c, P: Process> {
    core: &'c mut Core<P>,
}

impl<'c, P: Process> Control<'c, P> {
    /// The current (true) time.
    pub fn now(&self) -> Time {
        self.core.now
    }

    /// The membership.
    pub fn peers(&self) -> &Peers {
        &self.core.peers
    }

    /// The algorithm parameters.
    pub fn params(&self) -> &Params {
        &self.core.params
    }

    /// The seeded generator of the run.
    pub fn rng(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.core.rng
    }

    /// The state of a live node's process; `None` while it is crashed.
    pub fn process(&self, node: NodeId) -> Option<&P> {
        let pos = self.core.peers.position(node)?;
        self.core.slots[pos].process.as_ref()
    }

    /// Whether `node` is up.
    pub fn alive(&self, node: NodeId) -> bool {
        self.process(node).is_some()
    }

    /// The state of the live process at position `pos` of the ring order (`peers().ids()`);
    /// `None` while it is crashed. Going through every process, this is [`Control::process`]
    /// without finding each id's position.
    pub fn process_at(&self, pos: usize) -> Option<&P> {
        self.core.slots[pos].process.as_ref()
    }

    /// Message copies scheduled to arrive and not yet arrived.
    pub fn in_flight(&self) -> u64 {
        self.core.in_flight
    }

    /// Message copies in flight, leaving out the kinds excluded from causal chains
    /// (acknowledgements, heartbeats): the algorithm's own messages still travelling.
    pub fn in_flight_own(&self) -> u64 {
        self.core.in_flight - self.core.in_flight_excluded
    }

    /// Messages sent so far.
    pub fn messages_sent(&self) -> u64 {
        self.core.messages.total
    }

    /// The longest causal chain of messages so far (see [`Engine::with_chain_excluding`]).
    pub fn longest_chain(&self) -> u64 {
        self.core.slots.iter().map(|s| s.chain).max().unwrap_or(0)
    }

    /// Messages sent so far, by kind, in the order the kinds first appeared.
    pub fn messages_by_kind(&self) -> &[(&'static str, u64)] {
        &self.core.by_kind
    }

    /// Gives `node` the input `input` at time `at` (not before now).
    pub fn input_at(&mut self, at: Time, node: NodeId, input: P::Input) {
        let pos = self.core.peers.index_of(node);
        self.core
            .push(at.max(self.core.now), Kind::Input { pos, input });
    }

    /// Gives the process at position `pos` (of `peers().ids()`) the input `input` at time `at`
    /// (not before now): [`Control::input_at`] without finding the id's position.
    pub fn input_at_position(&mut self, at: Time, pos: usize, input: P::Input) {
        self.core
            .push(at.max(self.core.now), Kind::Input { pos, input });
    }

    /// Calls the harness's `on_wake(node, tag)` at time `at`.
    pub fn wake(&mut self, at: Time, node: NodeId, tag: u64) {
        let pos = self.core.peers.index_of(node);
        self.core
            .push(at.max(self.core.now), Kind::Wake { pos, tag });
    }

    /// What `node`'s own clock reads now (what the process sees as `ctx.now()`).
    pub fn local_time(&self, node: NodeId) -> Time {
        let pos = self.core.peers.index_of(node);
        self.core.clocks.read(pos, self.core.now)
    }

    /// True time now on the clocks' scale: comparable with `local_time` (the epoch plus now).
    pub fn reference_time(&self) -> Time {
        Time(self.core.clocks.epoch + self.core.now.as_nanos())
    }

    /// How far `node`'s clock is from true time now (reading minus true time), in ns.
    pub fn clock_error_ns(&self, node: NodeId) -> f64 {
        let pos = self.core.peers.index_of(node);
        self.core.clocks.error(pos, self.core.now)
    }

    /// Corrects `node`'s clock by `delta_ns`, by a step or a slew as the scenario says.
    pub fn adjust_clock(&mut self, node: NodeId, delta_ns: i64) {
        let core = &mut *self.core;
        let pos = core.peers.index_of(node);
        let now = core.now;
        core.clocks.adjust(pos, now.as_nanos(), delta_ns);
        if let Some(t) = core.tracer.as_mut() {
            t.plain_event(
                now,
                "adjust",
                Some(node),
                Line {
                    delta_ns: Some(delta_ns),
                    ..Line::default()
                },
            );
        }
    }

    /// Records that `property` failed now.
    pub fn violation(&mut self, property: &str, detail: String) {
        self.violation_of(property, detail, Vec::new(), Vec::new());
    }

    /// Records that `property` failed now, naming the nodes and the trace events (`seq` of
    /// their lines, see [`Control::last_trace_seq`]) involved.
    pub fn violation_of(
        &mut self,
        property: &str,
        detail: String,
        nodes: Vec<NodeId>,
        events: Vec<u64>,
    ) {
        let now = self.core.now;
        let listed = self.core.violations.len();
        self.core.violation(now, property, detail);
        if let Some(v) = self.core.violations.get_mut(listed) {
            v.nodes = nodes.iter().map(|n| n.0).collect();
            v.events = events;
        }
    }

    /// The `seq` of the last trace line written, if a trace is kept and has a line (during
    /// `on_output` this is the output's own line).
    pub fn last_trace_seq(&self) -> Option<u64> {
        self.core
            .tracer
            .as_ref()
            .and_then(|t| t.lines().checked_sub(1))
    }
}

impl<P: Process> Core<P> {
    fn push(&mut self, time: Time, kind: Kind<P>) {
        self.seq += 1;
        let seq = match self.ties.as_mut() {
            None => self.seq,
            // Seeded ties: a timer's seq starts with a drawn half, every other event's with
            // the middle value, so that among events due at one time the timers come in a
            // drawn order, before or after the rest, while the rest (deliveries on a FIFO
            // link among them) keep the order they were scheduled in. The low half keeps
            // seqs unique; the queue takes items out of seq order (see `queue`).
            Some(rng) => {
                let high = match kind {
                    Kind::Timer { .. } => rng.next_u32() as u64,
                    _ => 1 << 31,
                };
                (high << 32) | (self.seq & 0xFFFF_FFFF)
            }
        };
        self.enqueue(Event { time, seq, kind });
    }

    /// Puts `event` in the queue, keeping `queue_min` up to date.
    #[inline]
    fn enqueue(&mut self, event: Event<P>) {
        if let Some(min) = self.queue_min.as_mut() {
            let key = (event.time.as_nanos(), event.seq);
            *min = Some(min.map_or(key, |m| m.min(key)));
        }
        self.queue.push(event);
    }

    /// The earliest (time, seq) in the queue, read once after each event taken out of it. The
    /// process that event is for is asked of the memory meanwhile (see [`Core::prefetch_slot`]).
    #[inline]
    fn queue_min(&mut self) -> Option<(u64, u64)> {
        match self.queue_min {
            Some(min) => min,
            None => {
                let (min, pos) = match self.queue.peek() {
                    Some(e) => (Some((e.time.as_nanos(), e.seq)), e.kind.process()),
                    None => (None, None),
                };
                if let Some(pos) = pos {
                    self.prefetch_slot(pos);
                }
                self.queue_min = Some(min);
                min
            }
        }
    }

    /// Asks the memory for the slot of the process that the event `k` places after the next one
    /// is for, when the queue's front holds that event: a slot is five cache lines on a ring
    /// election, and the one-event-ahead prefetch of [`Core::queue_min`] leaves too little
    /// time for them to arrive. A hint: an event scheduled meanwhile into the front (or a
    /// listed timer taken out first) only makes it ask for a slot read a little later.
    #[inline]
    fn prefetch_ahead(&self, k: usize) {
        if let Some(pos) = self.queue.peek_nth(k).and_then(|e| e.kind.process()) {
            self.prefetch_slot(pos);
        }
    }

    /// Asks the memory for the slot (and the id) of the process at `pos`, which the next event
    /// is for: on a ring of a million, each event's process is a cache miss otherwise, and the
    /// event being handled meanwhile hides the wait.
    #[inline(always)]
    fn prefetch_slot(&self, pos: usize) {
        if let (Some(slot), Some(id)) = (self.slots.get(pos), self.peers.ids().get(pos)) {
            let p = (slot as *const Slot<P>).cast::<u8>();
            let size = std::mem::size_of::<Slot<P>>();
            // A slot is whole cache lines (see `Slot`): one request per line.
            for offset in (0..size.min(512)).step_by(64) {
                crate::prefetch::to_first_level(p.wrapping_add(offset));
            }
            crate::prefetch::to_first_level(id);
        }
    }

    /// Events pending: the queue's and the listed timers (cancelled ones included).
    pub(crate) fn pending_len(&self) -> usize {
        self.queue.len() + self.timer_lists.len() as usize
    }

    /// Sets `timer` of the process at `pos` to go off after `after` on its own clock.
    fn set_timer(&mut self, pos: usize, timer: P::Timer, after: std::time::Duration) {
        // Timers run on the node's own (possibly drifting) clock.
        let span = self
            .clocks
            .true_span(pos, self.now.as_nanos(), after.as_nanos() as u64);
        let at = self.now + std::time::Duration::from_nanos(span);
        let listed_generation = if self.listing {
            self.seq += 1;
            let g = self
                .timer_lists
                .push(span, at.as_nanos(), self.seq, pos as u32);
            if g.is_none() {
                self.seq -= 1;
            }
            g
        } else {
            None
        };
        let generation = listed_generation.unwrap_or_else(|| {
            self.next_timer_generation += 1;
            self.next_timer_generation
        });
        if let Some(old) = self.slots[pos].timers.insert(timer.clone(), generation) {
            self.kill_listed(old);
        }
        if listed_generation.is_none() {
            self.push(
                at,
                Kind::Timer {
                    pos,
                    timer,
                    generation,
                },
            );
        }
    }

    /// A pending timer of generation `g` will not go off: marked so if it is in a list (one in
    /// the queue is found dead by its generation when it comes out).
    #[inline]
    fn kill_listed(&mut self, g: u64) {
        if listed(g) {
            self.timer_lists.kill(g);
        }
    }

    fn violation(&mut self, time: Time, property: &str, detail: String) {
        // Every violation goes into the trace, listed in the report or not, so drawings show it.
        if let Some(t) = self.tracer.as_mut() {
            let fill = Line {
                property: Some(property),
                detail: Some(&detail),
                ..Default::default()
            };
            t.plain_event(time, "violation", None, fill);
        }
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(Violation {
                property: property.to_string(),
                time_ns: time.as_nanos(),
                detail,
                nodes: Vec::new(),
                events: Vec::new(),
            });
        } else {
            self.suppressed_violations += 1;
        }
    }

    /// Writes the `drop` line of a copy from `from` to `to` (positions) that did not arrive.
    fn trace_drop(&mut self, from: usize, to: usize, msg_id: u64, kind: &str, reason: &str) {
        if let Some(t) = self.tracer.as_mut() {
            let ids = self.peers.ids();
            t.plain_event(
                self.now,
                "drop",
                Some(ids[to]),
                Line {
                    from: Some(ids[from]),
                    msg_id: Some(msg_id),
                    kind: Some(kind),
                    reason: Some(reason),
                    ..Line::default()
                },
            );
        }
    }

    /// The entry of `kind` in `kinds`, found by the address of its name in `kind_cache`: one
    /// comparison, where a scan of every kind was about 30 instructions per message (and a
    /// scan that stopped at the match was a mispredicted branch for every other message of
    /// ricart-agrawala, whose Requests and Replies come in no order a predictor follows).
    #[inline]
    fn kind_info(&mut self, kind: &'static str) -> usize {
        let (addr, len) = (kind.as_ptr() as usize, kind.len());
        let at = Self::kind_cache_slot(addr);
        let (a, l, info) = self.kind_cache[at];
        if a == addr && l == len {
            info
        } else {
            self.kind_info_scan(kind, at)
        }
    }

    /// Where `kind_cache` keeps the kind named at `addr`: names are laid out side by side in
    /// memory, so the bits above the lowest four are mixed in.
    #[inline]
    fn kind_cache_slot(addr: usize) -> usize {
        (addr ^ (addr >> 4)) & (KIND_CACHE - 1)
    }

    /// `kind_info` when `kind` is not at its place in `kind_cache` (its first message, or
    /// another kind's name hashed to the same place): a scan of `kinds`, whose result replaces
    /// that place.
    #[cold]
    #[inline(never)]
    fn kind_info_scan(&mut self, kind: &'static str, at: usize) -> usize {
        let info = match self.kinds.iter().position(|k| std::ptr::eq(k.name, kind)) {
            Some(info) => info,
            None => self.new_kind(kind),
        };
        self.kind_cache[at] = (kind.as_ptr() as usize, kind.len(), info);
        info
    }

    #[cold]
    fn new_kind(&mut self, kind: &'static str) -> usize {
        self.kinds.push(KindInfo {
            name: kind,
            excluded: self.chain_excludes.contains(&kind),
            frame: Frame::of(kind),
            counted: None,
        });
        self.kinds.len() - 1
    }

    /// Counts a message of the kind at `info`, whose entry in `by_kind` is `counted` (once
    /// known), in `by_kind` (kinds in order of first appearance).
    #[inline]
    fn count_kind(&mut self, info: usize, counted: Option<usize>) {
        let entry = match counted {
            Some(entry) => entry,
            None => {
                let kind = self.kinds[info].name;
                let entry = match self.by_kind.iter().position(|(k, _)| *k == kind) {
                    Some(entry) => entry,
                    None => {
                        self.by_kind.push((kind, 0));
                        self.by_kind.len() - 1
                    }
                };
                self.kinds[info].counted = Some(entry);
                entry
            }
        };
        self.by_kind[entry].1 += 1;
    }

    /// The position of `to`, a process that the process at `from` sends to. Ring algorithms
    /// send to the next process in ring order and acknowledge to the previous one: those two are
    /// read beside `from`'s own id, where looking `to` up in the index of ids would be a cache
    /// miss for every message on a large ring in a random order.
    #[inline]
    fn position_from(&self, from: usize, to: NodeId) -> Option<usize> {
        let ids = self.peers.ids();
        if ids.len() < PREFETCH_SLOTS_FROM {
            // A small membership's index stays in the cache: one look-up.
            return self.peers.position(to);
        }
        let next = if from + 1 == ids.len() { 0 } else { from + 1 };
        if ids[next] == to {
            return Some(next);
        }
        let previous = if from == 0 { ids.len() - 1 } else { from - 1 };
        if ids[previous] == to {
            return Some(previous);
        }
        self.peers.position(to)
    }

    fn send(&mut self, from: usize, to: NodeId, msg: P::Msg) {
        let Some(to_pos) = self.position_from(from, to) else {
            let now = self.now;
            let from_id = self.peers.ids()[from];
            self.violation(
                now,
                "contract",
                format!("node {from_id} sent {msg:?} to {to}, which is not a member"),
            );
            return;
        };
        let kind = msg.kind();
        let info = self.kind_info(kind);
        let KindInfo {
            frame,
            excluded,
            counted,
            ..
        } = self.kinds[info];
        // Reliable links' own frames are counted apart (report.link), not as the algorithm's.
        if !self.link.as_mut().is_some_and(|l| l.count(frame)) {
            self.messages.total += 1;
            self.count_kind(info, counted);
        }
        self.next_msg_id += 1;
        let msg_id = self.next_msg_id;
        let stamp = match self.tracer.is_some() {
            true => Some(self.trace_send(from, to_pos, &msg, msg_id)),
            false => None,
        };
        let chain = if excluded {
            0
        } else {
            u32::try_from(self.slots[from].chain + 1).unwrap_or(u32::MAX)
        };
        if self.network.copies(&mut self.rng) == 2 {
            self.send_duplicated(from, to_pos, msg, msg_id, chain, stamp, info);
            return;
        }
        self.send_copy(from, to_pos, msg, msg_id, false, chain, stamp, info);
    }

    /// The `send` line of a message from the process at `from` to the one at `to_pos`, and
    /// the stamp the message carries to its `deliver` line. Out of `send`'s own code: an
    /// untraced run's sends keep a small frame.
    #[inline(never)]
    fn trace_send(&mut self, from: usize, to_pos: usize, msg: &P::Msg, msg_id: u64) -> MsgStamp {
        let now = self.now;
        let t = self.tracer.as_mut().expect("a trace is kept");
        t.send_event(now, from, to_pos, msg, msg_id)
    }

    /// Both copies of a duplicated message: the first, then the second, marked as the
    /// duplicate, which takes the message itself. Out of `send`'s own code, as few runs
    /// duplicate.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn send_duplicated(
        &mut self,
        from: usize,
        to_pos: usize,
        msg: P::Msg,
        msg_id: u64,
        chain: u32,
        stamp: Option<MsgStamp>,
        info: usize,
    ) {
        self.messages.duplicated += 1;
        let (m, s) = (msg.clone(), stamp.clone());
        self.send_copy(from, to_pos, m, msg_id, false, chain, s, info);
        self.send_copy(from, to_pos, msg, msg_id, true, chain, stamp, info);
    }

    /// Decides the fate of one copy of a message and schedules its delivery (or its loss, when
    /// a trace is kept).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn send_copy(
        &mut self,
        from: usize,
        to_pos: usize,
        msg: P::Msg,
        msg_id: u64,
        duplicate: bool,
        chain: u32,
        stamp: Option<MsgStamp>,
        info: usize,
    ) {
        match self.network.fate(self.now, from, to_pos, &mut self.rng) {
            Fate::Arrive(at) => {
                self.in_flight += 1;
                if chain == 0 {
                    self.in_flight_excluded += 1;
                }
                self.push(
                    at,
                    Kind::Deliver {
                        from: from as u32,
                        to: to_pos as u32,
                        msg,
                        msg_id,
                        duplicate,
                        chain,
                        stamp,
                    },
                );
            }
            Fate::Lost(at) => {
                self.messages.dropped += 1;
                if self.tracer.is_some() {
                    let partitioned = !self.network.connected(from, to_pos);
                    self.push(
                        at,
                        Kind::Lost {
                            from: from as u32,
                            to: to_pos as u32,
                            msg_id,
                            kind: info as u32,
                            partitioned,
                        },
                    );
                }
            }
        }
    }
}

/// Why a copy was lost, as the trace's `drop` line says: cut off by a partition, or else lost
/// by the link.
fn lost_reason(partitioned: bool) -> &'static str {
    if partitioned {
        "partition"
    } else {
        "loss"
    }
}

/// One run: the engine, the algorithm `A` and the family harness `H`.
#[derive(Clone)]
pub struct Engine<A: Algorithm, H: Harness<A>> {
    core: Core<A>,
    harness: H,
    until: Time,
    /// Events applied so far (`events_processed`).
    events: u64,
    /// The runaway guard: stops a run whose traffic grows without progress.
    guard: Guard,
}

/// What one turn of the engine did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// It applied the earliest pending event.
    Applied,
    /// Nothing was pending; the harness, told so, scheduled more.
    Idle,
    /// The run is over: "done", "idle", "horizon" or "limit" (the report's `ended_by`).
    End(&'static str),
}

impl<A: Algorithm, H: Harness<A>> Engine<A, H> {
    /// Prepares a run of a checked scenario with `seed`, keeping a trace if `trace`.
    pub fn new(checked: &Checked, family: &str, seed: u64, harness: H, trace: bool) -> Self {
        let scenario = &checked.scenario;
        let peers = checked.peers.clone();
        let n = peers.len();
        let tracer = trace.then(|| Tracer::new(&scenario.algorithm, family, peers.ids(), seed));
        let actions: Vec<Action> = checked.actions.iter().map(|(_, _, a)| a.clone()).collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // Clocks are drawn first, so that adding a clock section never shifts other draws' order
        // relative to each other within a run.
        let clocks = match &scenario.clocks {
            Some(spec) => Clocks::from_spec(spec, &peers, &mut rng),
            None => Clocks::perfect(n),
        };
        let mut core = Core {
            params: scenario.params(),
            now: Time::ZERO,
            seq: 0,
            queue: Queue::new(),
            queue_min: None,
            timer_lists: TimerLists::default(),
            prefetch_links: false,
            listing: false,
            ties: (scenario.ties == Some(Ties::Seeded))
                .then(|| Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x243f_6a88_85a3_08d3)),
            slots: new_slots(n),
            network: Network::new(&scenario.network, n),
            clocks,
            rng,
            effects: Vec::new(),
            rules: None,
            keep_rules: true,
            pending_actions: actions.len(),
            actions,
            next_msg_id: 0,
            next_timer_generation: 0,
            in_flight: 0,
            in_flight_excluded: 0,
            by_kind: Vec::new(),
            chain_excludes: Vec::new(),
            kinds: Vec::new(),
            kind_cache: [(0, 0, 0); KIND_CACHE],
            violations: Vec::new(),
            suppressed_violations: 0,
            tracer,
            messages: MessageStats::default(),
            outputs: 0,
            link: scenario.network.reliable.then(LinkReport::default),
            report: Report {
                name: scenario.name.clone(),
                algorithm: scenario.algorithm.clone(),
                family: family.to_string(),
                nodes: n,
                seed,
                ..Report::default()
            },
            peers,
        };
        for (i, (at, _, _)) in checked.actions.iter().enumerate() {
            core.push(Time::ZERO + *at, Kind::Action(i));
        }
        Engine {
            guard: Guard::new(scenario.limits.as_ref(), n, core.actions.len()),
            core,
            harness,
            until: Time::ZERO + scenario.until.unwrap_or(DEFAULT_UNTIL),
            events: 0,
        }
    }

    /// Messages of these kinds neither lengthen nor carry causal chains: `longest_chain` counts
    /// the algorithm's own messages, not the acknowledgements or heartbeats wrapped around them.
    pub fn with_chain_excluding(mut self, kinds: &[&'static str]) -> Self {
        self.core.chain_excludes = kinds.to_vec();
        self.core.kinds.clear();
        self.core.kind_cache = [(0, 0, 0); KIND_CACHE];
        self
    }

    /// Runs to the end and returns the report. The trace, if kept, goes to `trace`; `progress`
    /// is called with the simulated time and the horizon (in ns) every 65,536 events.
    pub fn run(
        mut self,
        mut trace: Option<Box<dyn Write>>,
        mut progress: Option<Box<dyn FnMut(u64, u64)>>,
    ) -> std::io::Result<Report> {
        // A batch run keeps timers in lists by duration, outside the queue (a stepped session,
        // which lists and picks pending events, keeps them in the queue).
        // Listed timers are ordered by when they were set: not with seeded ties.
        self.core.listing = self.core.ties.is_none();
        // Nothing reads the rules a handler names in a batch run (a stepped session shows them).
        self.core.keep_rules = false;
        self.core.network.batch_run();
        self.core.prefetch_links = self.core.network.large_table();
        self.start();
        let mut failed = None;
        let ended_by = loop {
            match self.turn() {
                Turn::Applied => {}
                Turn::Idle => continue,
                Turn::End(why) => break why,
            }
            if self.events & 0xFFFF == 0 {
                if let Some(progress) = progress.as_mut() {
                    progress(self.core.now.as_nanos(), self.until.as_nanos());
                }
            }
            if let Some(out) = trace.as_mut() {
                if let Some(t) = self.core.tracer.as_mut() {
                    if t.buffered().len() >= 1 << 16 && failed.is_none() {
                        failed = t.drain_into(out.as_mut()).err();
                    }
                }
            }
        };
        let report = self.finish(ended_by);
        if let Some(e) = failed {
            return Err(e);
        }
        if let (Some(t), Some(out)) = (self.core.tracer.take(), trace.as_mut()) {
            t.finish(out.as_mut())?;
        }
        Ok(report)
    }

    /// Builds every process and calls its `on_start`, then the harness's `start`.
    pub(crate) fn start(&mut self) {
        let n = self.core.peers.len();
        for pos in 0..n {
            let id = self.core.peers.ids()[pos];
            self.core.slots[pos].process = Some(A::new(id, &self.core.peers, &self.core.params));
            if let Some(t) = self.core.tracer.as_mut() {
                t.plain_event(Time::ZERO, "start", Some(id), Line::default());
            }
            self.call(pos, false, |p, ctx| p.on_start(ctx));
        }
        self.harness.start(&mut Control {
            core: &mut self.core,
        });
    }

    /// One turn: applies the earliest pending event, unless the run is over. An event past the
    /// horizon stays pending (a stepped session may still go on by hand).
    #[inline]
    pub(crate) fn turn(&mut self) -> Turn {
        if self.harness.done() && self.core.pending_actions == 0 {
            return Turn::End("done");
        }
        if let Some((l, time, seq)) = self.core.timer_lists.earliest() {
            if self
                .core
                .queue_min()
                .is_none_or(|first| (time, seq) < first)
            {
                return self.turn_listed(l, Time::from_nanos(time));
            }
        }
        self.core.queue_min = None;
        let Some(event) = self.core.queue.pop() else {
            self.harness.on_idle(&mut Control {
                core: &mut self.core,
            });
            if self.core.queue.is_empty() {
                return Turn::End("idle");
            }
            return Turn::Idle;
        };
        if event.time > self.until {
            self.core.now = self.until;
            self.core.enqueue(event);
            return Turn::End("horizon");
        }
        // Time never goes back, even after a later event was chosen by hand.
        self.core.now = self.core.now.max(event.time);
        self.events += 1;
        if self.core.listing && self.core.slots.len() >= PREFETCH_SLOTS_FROM {
            // The next event's key, needed next turn to merge with the timer lists: read now,
            // so that its process is fetched while this event is handled. With fewer processes
            // their slots stay in the cache, and the key is read only when a listed timer is
            // pending (next turn, by `queue_min`): reading it after every event was 5-8% of the
            // CPU of ricart-agrawala with N = 32.
            self.core.queue_min();
            // That prefetch, one event ahead, arrives late: the slot of the event `SLOTS_AHEAD`
            // further on is asked for too (the queue asked for that event itself earlier).
            self.core.prefetch_ahead(SLOTS_AHEAD);
        }
        if self.core.prefetch_links && self.events.is_multiple_of(LINKS_BATCH as u64) {
            // A process that receives a message often answers its sender (a REPLY to a
            // REQUEST): that send reads the link's latest arrival, at random in a table of n²
            // entries. Asked for a batch at a time, for the deliveries `LINKS_AHEAD` to
            // `LINKS_AHEAD + LINKS_BATCH` events on (see `LINKS_BATCH`).
            for k in LINKS_AHEAD..LINKS_AHEAD + LINKS_BATCH {
                if let Some(Event {
                    kind: Kind::Deliver { from, to, .. },
                    ..
                }) = self.core.queue.peek_nth(k)
                {
                    self.core
                        .network
                        .prefetch_link(*to as usize, *from as usize);
                }
            }
        }
        self.dispatch(event.kind);
        self.check_guard()
    }

    /// The turn of the listed timer at the head of list `l`, due at `time`: the earliest pending
    /// event. A cancelled one is taken out and counted as the queue's dead timer events were.
    fn turn_listed(&mut self, l: usize, time: Time) -> Turn {
        if time > self.until {
            self.core.now = self.until;
            return Turn::End("horizon");
        }
        let (entry, g) = self.core.timer_lists.pop(l);
        self.core.now = self.core.now.max(time);
        self.events += 1;
        if !entry.dead {
            self.fire_listed(entry.pos as usize, g);
        }
        self.check_guard()
    }

    /// After an event: the runaway guard, when due.
    #[inline]
    fn check_guard(&mut self) -> Turn {
        if self.guard.due(self.events) {
            let core = &self.core;
            let sample = Sample {
                events: self.events,
                pending: core.pending_len() as u64,
                in_flight_own: core.in_flight - core.in_flight_excluded,
                outputs: core.outputs,
                messages: core.messages.total,
            };
            if let Some((property, detail)) = self.guard.check(&sample) {
                self.core.violation(self.core.now, property, detail);
                return Turn::End("limit");
            }
        }
        Turn::Applied
    }

    /// The report of the run so far, ended by `ended_by`, with the harness's final checks
    /// (which may change its state: call once, at the end).
    pub(crate) fn finish(&mut self, ended_by: &str) -> Report {
        self.core.report.events_processed = self.events;
        self.core.report.end_time_ns = self.core.now.as_nanos();
        self.core.report.ended_by = ended_by.to_string();
        let mut report = std::mem::take(&mut self.core.report);
        self.harness.finish(
            &mut Control {
                core: &mut self.core,
            },
            &mut report,
        );
        let core = &mut self.core;
        report.longest_chain = core.slots.iter().map(|s| s.chain).max().unwrap_or(0);
        let mut by_kind: Vec<_> = core
            .by_kind
            .iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect();
        by_kind.sort();
        report.messages = std::mem::take(&mut core.messages);
        report.link = core.link.take();
        report.messages.by_kind = by_kind.into_iter().collect();
        report.violations.append(&mut core.violations);
        if core.suppressed_violations > 0 {
            report.violations.push(Violation {
                property: "more".to_string(),
                time_ns: report.end_time_ns,
                detail: format!(
                    "{} further violations were not listed",
                    core.suppressed_violations
                ),
                nodes: Vec::new(),
                events: Vec::new(),
            });
        }
        report
    }

    fn dispatch(&mut self, kind: Kind<A>) {
        match kind {
            Kind::Deliver {
                from,
                to,
                msg,
                msg_id,
                duplicate,
                chain,
                stamp,
            } => {
                let (from, to) = (from as usize, to as usize);
                self.core.in_flight -= 1;
                if chain == 0 {
                    self.core.in_flight_excluded -= 1;
                }
                let from_id = self.core.peers.ids()[from];
                let reason = if self.core.slots[to].process.is_none() {
                    Some("crashed")
                } else if !self.core.network.connected(from, to) {
                    Some("partition")
                } else {
                    None
                };
                if let Some(reason) = reason {
                    self.core.messages.dropped += 1;
                    self.core.trace_drop(from, to, msg_id, msg.kind(), reason);
                    return;
                }
                self.core.messages.delivered += 1;
                if let Some(t) = self.core.tracer.as_mut() {
                    t.deliver_event(self.core.now, to, from, stamp, &msg, msg_id, duplicate);
                }
                self.harness.on_deliver(
                    from_id,
                    self.core.peers.ids()[to],
                    msg_id,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
                let slot = &mut self.core.slots[to];
                slot.chain = slot.chain.max(u64::from(chain));
                self.call(to, false, |p, ctx| p.on_message(from_id, msg, ctx));
            }
            Kind::Lost {
                from,
                to,
                msg_id,
                kind,
                partitioned,
            } => {
                let kind = self.core.kinds[kind as usize].name;
                let reason = lost_reason(partitioned);
                self.core
                    .trace_drop(from as usize, to as usize, msg_id, kind, reason)
            }
            Kind::Timer {
                pos,
                timer,
                generation,
            } => {
                let slot = &mut self.core.slots[pos];
                if slot.process.is_none() || slot.timers.get(&timer) != Some(&generation) {
                    return; // cancelled, replaced, or lost in a crash
                }
                slot.timers.remove(&timer);
                self.fire(pos, timer);
            }
            Kind::Input { pos, input } => {
                if self.core.slots[pos].process.is_none() {
                    return; // the application on a crashed node asks nothing
                }
                let id = self.core.peers.ids()[pos];
                self.harness.on_input(
                    id,
                    &input,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
                if let Some(t) = self.core.tracer.as_mut() {
                    t.process_event(
                        self.core.now,
                        "input",
                        id,
                        pos,
                        Line {
                            input: Some(&input),
                            ..Line::default()
                        },
                    );
                }
                self.call(pos, false, |p, ctx| p.on_input(input, ctx));
            }
            Kind::Wake { pos, tag } => {
                let id = self.core.peers.ids()[pos];
                self.harness.on_wake(
                    id,
                    tag,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
            }
            Kind::Action(i) => {
                self.core.pending_actions -= 1;
                let action = self.core.actions[i].clone();
                self.act(&action);
            }
        }
    }

    /// The timer `timer` of the process at `pos` goes off (it was pending, and is no longer).
    fn fire(&mut self, pos: usize, timer: A::Timer) {
        let id = self.core.peers.ids()[pos];
        if let Some(t) = self.core.tracer.as_mut() {
            t.process_event(
                self.core.now,
                "timer",
                id,
                pos,
                Line {
                    timer: Some(&timer),
                    ..Line::default()
                },
            );
        }
        self.call(pos, false, |p, ctx| p.on_timer(timer, ctx));
    }

    /// The listed timer of generation `g` of the process at `pos` is due and was not cancelled.
    fn fire_listed(&mut self, pos: usize, g: u64) {
        let slot = &mut self.core.slots[pos];
        if slot.process.is_none() {
            return;
        }
        if let Some(timer) = slot.timers.take_generation(g) {
            self.fire(pos, timer);
        }
    }

    fn act(&mut self, action: &Action) {
        let now = self.core.now;
        match action {
            Action::Crash(id) => {
                let pos = self.core.peers.index_of(*id);
                if self.core.slots[pos].process.is_none() {
                    return; // already down
                }
                self.harness.before_crash(
                    *id,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
                self.core.slots[pos].process = None;
                for g in self.core.slots[pos].timers.clear() {
                    self.core.kill_listed(g);
                }
                if let Some(t) = self.core.tracer.as_mut() {
                    t.plain_event(now, "crash", Some(*id), Line::default());
                }
                self.harness.on_crash(
                    *id,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
            }
            Action::Recover(id) => {
                let pos = self.core.peers.index_of(*id);
                if self.core.slots[pos].process.is_some() {
                    return; // it never went down
                }
                self.core.slots[pos].process =
                    Some(A::new(*id, &self.core.peers, &self.core.params));
                if let Some(t) = self.core.tracer.as_mut() {
                    t.plain_event(now, "recover", Some(*id), Line::default());
                }
                // The harness hears of the recovery first, so that it sees the system as it was
                // before the recovered process's start sends or outputs anything.
                self.harness.on_recover(
                    *id,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
                self.call(pos, true, |p, ctx| p.on_start(ctx));
            }
            Action::Partition(groups) => {
                let positions: Vec<Vec<usize>> = groups
                    .iter()
                    .map(|g| g.iter().map(|id| self.core.peers.index_of(*id)).collect())
                    .collect();
                self.core.network.partition(&positions);
                if let Some(t) = self.core.tracer.as_mut() {
                    t.plain_event(
                        now,
                        "partition",
                        None,
                        Line {
                            groups: Some(groups),
                            ..Line::default()
                        },
                    );
                }
            }
            Action::Heal => {
                self.core.network.heal();
                if let Some(t) = self.core.tracer.as_mut() {
                    t.plain_event(now, "heal", None, Line::default());
                }
            }
            other => self.harness.on_action(
                other,
                &mut Control {
                    core: &mut self.core,
                },
            ),
        }
    }

    /// Runs one handler of the process at `pos` and carries out its effects in order.
    fn call(&mut self, pos: usize, recovered: bool, handler: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let core = &mut self.core;
        let id = core.peers.ids()[pos];
        let Some(process) = core.slots[pos].process.as_mut() else {
            return;
        };
        // The process reads its own (possibly drifting) clock, never true time.
        let local = core.clocks.read(pos, core.now);
        {
            let ctx = Ctx::new(
                id,
                &core.peers,
                local,
                recovered,
                &mut core.rng,
                &mut core.effects,
            )
            .at_position(pos);
            let mut ctx = if core.keep_rules {
                ctx
            } else {
                ctx.without_rules()
            };
            handler(process, &mut ctx);
            if core.keep_rules {
                let rules = ctx.rules();
                if !rules.is_empty() {
                    core.rules = Some((pos, rules));
                }
            }
        }
        // Most handlers record no effect or one (a delivery answered by one message): those
        // are carried out without draining the list.
        match self.core.effects.len() {
            0 => {}
            1 => {
                let effect = self.core.effects.pop().expect("one effect");
                self.effect(pos, id, effect);
            }
            _ => {
                let mut effects = std::mem::take(&mut self.core.effects);
                for effect in effects.drain(..) {
                    self.effect(pos, id, effect);
                }
                self.core.effects = effects;
            }
        }
    }

    /// Carries out one effect of a handler of the process `id` at `pos`.
    #[inline(always)]
    fn effect(&mut self, pos: usize, id: NodeId, effect: EffectOf<A>) {
        // Sends first, by a branch: most effects are sends (a broadcast is N-1 of them), which
        // a jump table over the four kinds predicted less well.
        let effect = match effect {
            Effect::Send { to, msg } => {
                self.core.send(pos, to, msg);
                return;
            }
            other => other,
        };
        match effect {
            Effect::Send { .. } => unreachable!("handled above"),
            Effect::SetTimer { timer, after } => self.core.set_timer(pos, timer, after),
            Effect::CancelTimer { timer } => {
                if let Some(g) = self.core.slots[pos].timers.remove(&timer) {
                    self.core.kill_listed(g);
                }
            }
            Effect::Output(output) => {
                self.core.outputs += 1;
                if let Some(t) = self.core.tracer.as_mut() {
                    t.process_event(
                        self.core.now,
                        "output",
                        id,
                        pos,
                        Line {
                            output: Some(&output),
                            ..Line::default()
                        },
                    );
                }
                self.harness.on_output(
                    id,
                    &output,
                    &mut Control {
                        core: &mut self.core,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_algorithms::election::{ChangRoberts, RingLink};

    /// A slot starts at a cache line and fills whole lines, in the vector the engine makes.
    #[test]
    fn a_slot_is_whole_cache_lines() {
        type Ring = RingLink<ChangRoberts>;
        assert_eq!(std::mem::align_of::<Slot<Ring>>(), 64);
        assert_eq!(std::mem::size_of::<Slot<Ring>>() % 64, 0);
        let slots = new_slots::<Ring>(1000);
        assert_eq!(slots.len(), 1000);
        assert_eq!(slots.as_ptr() as usize % 64, 0);
        assert!(slots.iter().all(|s| s.process.is_none() && s.chain == 0));
    }

    /// Four timers at once go beyond the three kept in the slot; once one is gone (cancelled,
    /// or gone off), the other three are back in the slot, still pending.
    #[test]
    fn a_timer_list_comes_back_into_the_slot_once_it_fits() {
        let mut timers: Timers<u32> = Timers::Few(SmallVec::new());
        for t in 0..4 {
            timers.insert(t, 10 + u64::from(t));
        }
        let spilled = |timers: &Timers<u32>| matches!(timers, Timers::Few(l) if l.spilled());
        assert!(spilled(&timers));
        assert_eq!(timers.remove(&1), Some(11));
        assert!(!spilled(&timers));
        timers.insert(7, 17);
        assert!(spilled(&timers));
        assert_eq!(timers.take_generation(10), Some(0));
        assert!(!spilled(&timers));
        for (t, g) in [(2, 12), (3, 13), (7, 17)] {
            assert_eq!(timers.get(&t), Some(&g));
        }
    }

    /// A million-process election keeps millions of events pending: a delivery of a ring
    /// election's message stays within 80 bytes (it was 96).
    #[test]
    fn a_ring_election_event_fits_in_80_bytes() {
        let size = std::mem::size_of::<Event<RingLink<ChangRoberts>>>();
        assert!(size <= 80, "{size} bytes");
    }

    /// Ricart-agrawala with every one of 3,000 nodes requesting keeps 9,000,000 events pending:
    /// each is 64 bytes (it was 72, when a lost copy kept its kind and reason as two names).
    #[test]
    fn a_ricart_agrawala_event_fits_in_64_bytes() {
        use distsync_algorithms::mutex::RicartAgrawala;
        let size = std::mem::size_of::<Event<RicartAgrawala>>();
        assert!(size <= 64, "{size} bytes");
    }
}
