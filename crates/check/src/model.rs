//! The model every family shares: processes, links, timers, faults; the transitions between its
//! states; and the family's application model and properties as a [`Spec`].

use crate::{Config, Property, Transition};
use distsync_core::{Ctx, Effect, EffectOf, NodeId, Peers, Process, Time};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// What the checker needs of an algorithm: `Clone` to copy states, `Hash` to fingerprint them,
/// `Debug` to show them, and `Send + Sync` to explore on every core. Implemented for every
/// such process type (all registered algorithms are).
pub trait Checkable:
    Process<Msg: Send + Sync, Timer: Send + Sync, Input: Send + Sync + PartialEq>
    + distsync_core::Algorithm
    + Clone
    + Debug
    + Hash
    + Send
    + Sync
    + 'static
{
}
impl<A> Checkable for A where
    A: Process<Msg: Send + Sync, Timer: Send + Sync, Input: Send + Sync + PartialEq>
        + distsync_core::Algorithm
        + Clone
        + Debug
        + Hash
        + Send
        + Sync
        + 'static
{
}

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
}

/// A message in flight: its link (`from * n + to`), a hash of it (for a canonical order of
/// non-FIFO links), and the message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Flight<M> {
    pub link: u16,
    pub hash: u64,
    pub msg: M,
}

/// A pending timer of process `pos` and its deadline (in nanoseconds of abstract time).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PendingTimer<T> {
    pub pos: u16,
    pub hash: u64,
    pub deadline: u64,
    pub timer: T,
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

/// Everything but the application: processes (`None` while crashed), messages in flight (in a
/// canonical order: by link, then FIFO order or hash order), pending timers and the time.
#[derive(Clone, Debug)]
pub(crate) struct World<A: Process> {
    pub procs: Vec<Option<Arc<A>>>,
    pub msgs: Vec<Flight<A::Msg>>,
    pub timers: Vec<PendingTimer<A::Timer>>,
    pub now: u64,
    pub faults: Faults,
}

impl<A: Process + Hash> Hash for World<A> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for p in &self.procs {
            match p {
                Some(p) => {
                    h.write_u8(1);
                    p.hash(h);
                }
                None => h.write_u8(0),
            }
        }
        self.msgs.hash(h);
        self.timers.hash(h);
        self.now.hash(h);
        self.faults.hash(h);
    }
}

impl<A: Process> World<A> {
    pub fn alive(&self, pos: usize) -> bool {
        self.procs[pos].is_some()
    }
    pub fn proc(&self, pos: usize) -> Option<&A> {
        self.procs[pos].as_deref()
    }
}

/// One state of the model.
#[derive(Clone, Debug)]
pub(crate) struct State<A: Process, App> {
    pub world: World<A>,
    pub app: App,
}

impl<A: Process + Hash, App: Hash> Hash for State<A, App> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.world.hash(h);
        self.app.hash(h);
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

/// The fixed part of a model: membership, configuration and the family's spec.
pub(crate) struct Model<'c, S> {
    pub config: &'c Config,
    pub peers: Peers,
    pub n: usize,
    pub spec: S,
}

fn hash64<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    value.hash(&mut h);
    h.finish()
}

impl<'c, S> Model<'c, S> {
    pub fn ids(&self) -> &[NodeId] {
        self.peers.ids()
    }

    fn cut_between(faults: &Faults, a: usize, b: usize) -> bool {
        faults.partition == 1 && ((faults.cut >> a) & 1) != ((faults.cut >> b) & 1)
    }

    /// The initial state: every process built and started, in membership order.
    pub fn initial<A>(&self, effects: &mut Effects<A>) -> (State<A, S::App>, Option<Violation>)
    where
        A: Checkable + distsync_core::Algorithm,
        S: Spec<A>,
    {
        let ids = self.ids();
        let f = &self.config.faults;
        let world = World::<A> {
            procs: ids
                .iter()
                .map(|&id| Some(Arc::new(A::new(id, &self.peers, &self.config.params))))
                .collect(),
            msgs: Vec::new(),
            timers: Vec::new(),
            now: 0,
            faults: Faults {
                crashes: f.crash,
                recoveries: f.recover,
                losses: f.loss,
                duplicates: f.duplicate,
                partition: if f.partition { 0 } else { 2 },
                cut: 0,
            },
        };
        let app = self.spec.init(&world);
        let mut state = State { world, app };
        let mut violation = None;
        for pos in 0..self.n {
            let v = self.call(&mut state, pos, false, effects, |p, ctx| p.on_start(ctx));
            violation = violation.or(v);
        }
        (state, violation)
    }

    /// Runs one handler of process `pos` and carries out its effects.
    fn call<A>(
        &self,
        state: &mut State<A, S::App>,
        pos: usize,
        recovered: bool,
        record: &mut Effects<A>,
        handler: impl FnOnce(&mut A, &mut Ctx<'_, A>),
    ) -> Option<Violation>
    where
        A: Checkable,
        S: Spec<A>,
    {
        let id = self.ids()[pos];
        let mut effects: Vec<EffectOf<A>> = Vec::new();
        // Each call gets the same fresh generator: a call depends on the process state alone.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        {
            let process = Arc::make_mut(state.world.procs[pos].as_mut().expect("alive"));
            let now = Time::from_nanos(state.world.now);
            let mut ctx = Ctx::new(id, &self.peers, now, recovered, &mut rng, &mut effects);
            handler(process, &mut ctx);
        }
        let mut violation = None;
        for effect in effects {
            match effect {
                Effect::Send { to, msg } => match self.peers.position(to) {
                    Some(t) if t != pos => {
                        if !state.world.alive(t) {
                            if record.record {
                                record.dropped.push((id, to, msg, "crashed"));
                            }
                        } else if Self::cut_between(&state.world.faults, pos, t) {
                            if record.record {
                                record.dropped.push((id, to, msg, "partition"));
                            }
                        } else {
                            if record.record {
                                record.items.push(Eff::Send(id, to, msg.clone()));
                            }
                            self.push_msg(&mut state.world, (pos * self.n + t) as u16, msg);
                        }
                    }
                    _ => {
                        violation = violation.or(Some(Violation::new(
                            Property::OutputContract,
                            format!("node {id} sent {msg:?} to {to}, not another member"),
                        )));
                    }
                },
                Effect::SetTimer { timer, after } => {
                    let timers = &mut state.world.timers;
                    timers.retain(|t| !(t.pos as usize == pos && t.timer == timer));
                    let deadline = if self.config.untimed {
                        0
                    } else {
                        state
                            .world
                            .now
                            .saturating_add(after.as_nanos().min(u64::MAX as u128) as u64)
                    };
                    let t = PendingTimer {
                        pos: pos as u16,
                        hash: hash64(&timer),
                        deadline,
                        timer,
                    };
                    let at = timers
                        .iter()
                        .position(|x| (x.pos, x.hash) > (t.pos, t.hash))
                        .unwrap_or(timers.len());
                    timers.insert(at, t);
                }
                Effect::CancelTimer { timer } => state
                    .world
                    .timers
                    .retain(|t| !(t.pos as usize == pos && t.timer == timer)),
                Effect::Output(output) => {
                    let v = self.spec.output(&mut state.app, &state.world, pos, &output);
                    violation = violation.or(v);
                    if record.record {
                        record.items.push(Eff::Output(id, output));
                    }
                }
            }
        }
        violation
    }

    /// Puts `msg` in flight on `link`, keeping the canonical order.
    fn push_msg<A: Process>(&self, world: &mut World<A>, link: u16, msg: A::Msg) {
        let hash = hash64(&msg);
        let msgs = &mut world.msgs;
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

    /// Every move enabled in `state`, in a fixed order.
    pub fn enabled<A>(
        &self,
        state: &State<A, S::App>,
        out: &mut Vec<Move>,
        inputs: &mut Vec<A::Input>,
    ) where
        A: Checkable,
        S: Spec<A>,
    {
        out.clear();
        let w = &state.world;
        let f = &w.faults;
        for (i, m) in w.msgs.iter().enumerate() {
            let first_of_link = i == 0 || w.msgs[i - 1].link != m.link;
            let deliverable = if self.config.fifo {
                first_of_link
            } else {
                // Equal messages on one link lead to the same state: deliver one of them.
                first_of_link || w.msgs[i - 1] != *m
            };
            if deliverable {
                out.push(Move::Deliver(i as u32));
            }
        }
        for pos in 0..self.n {
            if w.alive(pos) {
                inputs.clear();
                self.spec.inputs(&state.app, w, pos, inputs);
                for k in 0..inputs.len() {
                    out.push(Move::Input(pos as u16, k as u16));
                }
            }
        }
        if self.config.untimed {
            for i in 0..w.timers.len() {
                out.push(Move::Timer(i as u32));
            }
        } else if w.msgs.is_empty() {
            // A timer fires only when no message is in flight, and the earliest first.
            if let Some(min) = w.timers.iter().map(|t| t.deadline).min() {
                for (i, t) in w.timers.iter().enumerate() {
                    if t.deadline == min {
                        out.push(Move::Timer(i as u32));
                    }
                }
            }
        }
        if f.crashes > 0 {
            for pos in 0..self.n {
                if w.alive(pos) {
                    out.push(Move::Crash(pos as u16));
                }
            }
        }
        if f.recoveries > 0 {
            for pos in 0..self.n {
                if !w.alive(pos) {
                    out.push(Move::Recover(pos as u16));
                }
            }
        }
        for (i, m) in w.msgs.iter().enumerate() {
            let first_equal = i == 0 || w.msgs[i - 1] != *m;
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

    /// Whether some transition other than a fault is enabled.
    pub fn progress_possible<A>(&self, state: &State<A, S::App>, inputs: &mut Vec<A::Input>) -> bool
    where
        A: Checkable,
        S: Spec<A>,
    {
        let w = &state.world;
        if !w.msgs.is_empty() || !w.timers.is_empty() {
            return true;
        }
        (0..self.n).any(|pos| {
            w.alive(pos) && {
                inputs.clear();
                self.spec.inputs(&state.app, w, pos, inputs);
                !inputs.is_empty()
            }
        })
    }

    /// Takes move `m` from `state`.
    pub fn apply<A>(
        &self,
        state: &State<A, S::App>,
        m: Move,
        inputs: &mut Vec<A::Input>,
        effects: &mut Effects<A>,
    ) -> (State<A, S::App>, Option<Violation>)
    where
        A: Checkable + distsync_core::Algorithm,
        S: Spec<A>,
    {
        let mut next = state.clone();
        let n = self.n;
        let violation = match m {
            Move::Deliver(i) => {
                let flight = next.world.msgs.remove(i as usize);
                let (f, r) = (flight.link as usize / n, flight.link as usize % n);
                let from = self.ids()[f];
                self.call(&mut next, r, false, effects, |p, ctx| {
                    p.on_message(from, flight.msg, ctx)
                })
            }
            Move::Input(pos, k) => {
                let pos = pos as usize;
                inputs.clear();
                self.spec.inputs(&next.app, &next.world, pos, inputs);
                let input = inputs.swap_remove(k as usize);
                self.spec.take_input(&mut next.app, pos, &input);
                self.call(&mut next, pos, false, effects, |p, ctx| {
                    p.on_input(input, ctx)
                })
            }
            Move::Timer(i) => {
                let t = next.world.timers.remove(i as usize);
                if !self.config.untimed {
                    next.world.now = next.world.now.max(t.deadline);
                }
                self.call(&mut next, t.pos as usize, false, effects, |p, ctx| {
                    p.on_timer(t.timer, ctx)
                })
            }
            Move::Crash(pos) => {
                let pos = pos as usize;
                next.world.faults.crashes -= 1;
                self.spec.crash(&mut next.app, &next.world, pos);
                next.world.procs[pos] = None;
                next.world.timers.retain(|t| t.pos as usize != pos);
                let ids = self.peers.ids();
                let msgs = std::mem::take(&mut next.world.msgs);
                for fl in msgs {
                    if fl.link as usize % n == pos {
                        if effects.record {
                            let (a, b) = (fl.link as usize / n, fl.link as usize % n);
                            effects.dropped.push((ids[a], ids[b], fl.msg, "crashed"));
                        }
                    } else {
                        next.world.msgs.push(fl);
                    }
                }
                None
            }
            Move::Recover(pos) => {
                let pos = pos as usize;
                next.world.faults.recoveries -= 1;
                self.spec.recover(&mut next.app, &next.world, pos);
                let id = self.ids()[pos];
                next.world.procs[pos] =
                    Some(Arc::new(A::new(id, &self.peers, &self.config.params)));
                self.call(&mut next, pos, true, effects, |p, ctx| p.on_start(ctx))
            }
            Move::Lose(i) => {
                next.world.faults.losses -= 1;
                next.world.msgs.remove(i as usize);
                None
            }
            Move::Duplicate(i) => {
                next.world.faults.duplicates -= 1;
                let f = next.world.msgs[i as usize].clone();
                self.push_msg(&mut next.world, f.link, f.msg);
                None
            }
            Move::Partition(mask) => {
                next.world.faults.partition = 1;
                next.world.faults.cut = mask;
                let faults = next.world.faults;
                let ids = self.peers.ids();
                let msgs = std::mem::take(&mut next.world.msgs);
                for fl in msgs {
                    let (a, b) = (fl.link as usize / n, fl.link as usize % n);
                    if Self::cut_between(&faults, a, b) {
                        if effects.record {
                            effects.dropped.push((ids[a], ids[b], fl.msg, "partition"));
                        }
                    } else {
                        next.world.msgs.push(fl);
                    }
                }
                None
            }
            Move::Heal => {
                next.world.faults.partition = 2;
                next.world.faults.cut = 0;
                None
            }
        };
        (next, violation)
    }

    /// The identity of move `m` for weak fairness: the same message on the same link, the same
    /// timer of the same process, the same input; 0 for faults (never required).
    pub fn fair_id<A>(&self, state: &State<A, S::App>, m: Move) -> u64
    where
        A: Checkable,
        S: Spec<A>,
    {
        let w = &state.world;
        let id = match m {
            Move::Deliver(i) => {
                let f = &w.msgs[i as usize];
                hash64(&(0u8, f.link, f.hash))
            }
            Move::Input(pos, k) => hash64(&(1u8, pos, k)),
            Move::Timer(i) => {
                let t = &w.timers[i as usize];
                hash64(&(2u8, t.pos, t.hash))
            }
            _ => return 0,
        };
        id.max(1)
    }

    /// The positions with a liveness obligation in `state` (a request waiting, an election
    /// not over), as bits.
    pub fn waiting_mask<A>(&self, state: &State<A, S::App>) -> u64
    where
        A: Checkable,
        S: Spec<A>,
    {
        (0..self.n)
            .filter(|&p| self.spec.waiting(&state.app, &state.world, p))
            .fold(0, |m, p| m | 1 << p)
    }

    /// The typed transition of move `m` in `state`.
    pub fn transition<A>(
        &self,
        state: &State<A, S::App>,
        m: Move,
        inputs: &mut Vec<A::Input>,
    ) -> Transition<A::Msg, A::Timer, A::Input>
    where
        A: Checkable,
        S: Spec<A>,
    {
        let ids = self.ids();
        let w = &state.world;
        let link = |i: u32| {
            let f = &w.msgs[i as usize];
            (
                ids[f.link as usize / self.n],
                ids[f.link as usize % self.n],
                f.msg.clone(),
            )
        };
        match m {
            Move::Deliver(i) => {
                let (from, to, msg) = link(i);
                Transition::Deliver { from, to, msg }
            }
            Move::Input(pos, k) => {
                inputs.clear();
                self.spec.inputs(&state.app, w, pos as usize, inputs);
                Transition::Input {
                    node: ids[pos as usize],
                    input: inputs[k as usize].clone(),
                }
            }
            Move::Timer(i) => {
                let t = &w.timers[i as usize];
                Transition::Timer {
                    node: ids[t.pos as usize],
                    timer: t.timer.clone(),
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
