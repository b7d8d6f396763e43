//! Exhaustive exploration of small configurations of every family: every interleaving of
//! message deliveries, application inputs, timer expiries and (within bounds) faults, breadth
//! first, so that the first violation found is one of the shortest.
//!
//! The model (see `docs/check.md`):
//! - a **state** is every process's state (or "crashed"), the messages in flight on each
//!   directed link (a FIFO queue when the configuration says FIFO, a multiset otherwise), each
//!   process's pending timers with their deadlines, the abstract time, the fault budget left,
//!   and the family's application model (what the application still has to ask, what it saw);
//! - a **transition** delivers one deliverable message, gives one enabled input, fires one
//!   timer (by default only when no message is in flight, earliest deadline first; with
//!   `untimed` any timer at any moment), or takes one fault within its budget (crash, recover,
//!   lose or duplicate a message, partition, heal).
//!
//! Processes are driven through [`distsync_core::Ctx::new`] exactly as the simulator does; the
//! algorithms are unchanged. States are deduplicated by a 128-bit fingerprint of their derived
//! `Hash` (XXH3-128).
//!
//! ```
//! use distsync_check::{check, Bounds, Config, Verdict};
//! use distsync_algorithms::mutex::RicartAgrawala;
//!
//! let config = Config { nodes: 2, requests: 1, fifo: false, ..Config::default() };
//! let outcome = check::<RicartAgrawala>(&config, &mut |_| {}).unwrap();
//! assert!(matches!(outcome.verdict, Verdict::Proved));
//! assert!(outcome.stats.states > 10);
//! ```

mod explore;
mod families;
mod fingerprint;
mod model;
mod named;
mod state;
mod symmetry;
mod trace;
mod visited;

pub use named::{
    check_named, family_checks, family_of, refusal, supported, FamilyChecks, NamedOutcome,
    NamedViolation, Workload,
};
pub use state::Checkable;
pub use trace::write_trace;

use distsync_core::election::Election;
use distsync_core::multicast::{Multicast, Order};
use distsync_core::mutex::{Input, MutualExclusion};
use distsync_core::snapshot::GlobalSnapshot;
use distsync_core::{NodeId, Params, Peers};
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// The most processes the checker accepts: beyond, no exploration finishes on any machine.
pub const MAX_NODES: usize = 8;

/// Limits of one exploration. When one is reached the result is "no violation within the
/// bound", never a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The most distinct states to visit.
    pub max_states: usize,
    /// The longest transition sequence to explore; states at this depth are not expanded.
    pub max_depth: usize,
    /// Stop when the process's resident memory exceeds this many bytes (checked every few
    /// thousand states); `None`: [`default_max_memory`].
    pub max_memory: Option<u64>,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_states: 20_000_000,
            max_depth: 10_000,
            max_memory: None,
        }
    }
}

/// Half the machine's memory (4 GiB where it cannot be read).
pub fn default_max_memory() -> u64 {
    explore::machine_bytes().map_or(4 << 30, |m| m / 2)
}

/// The faults the checker may choose, each a budget for the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultBounds {
    /// Up to this many crashes, at any moment, of any process.
    pub crash: u8,
    /// Up to this many recoveries of crashed processes.
    pub recover: u8,
    /// Up to this many messages lost.
    pub loss: u8,
    /// Up to this many messages duplicated.
    pub duplicate: u8,
    /// One partition into two sides (any split), at any moment, and its heal.
    pub partition: bool,
}

/// One configuration to explore.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of processes; their ids are 0..nodes.
    pub nodes: usize,
    /// The workload: mutual exclusion, requests per competitor (one at a time); multicast,
    /// multicasts per process; snapshot, transfers per process. Elections ignore it.
    pub requests: u32,
    /// Whether every directed link delivers in FIFO order.
    pub fifo: bool,
    /// The algorithm's parameters (coordinator, holder, quorums, timeouts...).
    pub params: Params,
    /// Where to stop.
    pub bounds: Bounds,
    /// The faults the checker may choose.
    pub faults: FaultBounds,
    /// `true`: any pending timer may fire at any moment (an over-approximation); `false` (the
    /// default): a timer fires only when no message is in flight, earliest deadline first.
    pub untimed: bool,
    /// Elections: the processes given the Start input (all in one election); empty: the
    /// lowest id.
    pub elect: Vec<NodeId>,
    /// Multicast: the orders to check; `None`: those the algorithm promises.
    pub orders: Option<Vec<Order>>,
    /// Worker threads; 0: every core.
    pub threads: usize,
    /// Also check liveness under weak fairness (fair cycles where a process waits for ever).
    pub liveness: bool,
    /// Symmetry reduction: remember a state only once up to a renaming of interchangeable
    /// processes (for algorithms whose rules never compare ids; refused for the others).
    pub symmetry: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            nodes: 3,
            requests: 1,
            fifo: true,
            params: Params::default(),
            bounds: Bounds::default(),
            faults: FaultBounds::default(),
            untimed: false,
            elect: Vec::new(),
            orders: None,
            threads: 1,
            liveness: false,
            symmetry: false,
        }
    }
}

/// A property the checker verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// Never two processes in the critical section at once (by `in_critical_section()` and by
    /// the Enter/Exit outputs).
    MutualExclusion,
    /// No reachable state where nothing can happen while a request waits.
    Deadlock,
    /// On every path that terminates, the workload completed: every competitor entered and
    /// left as often as it asked; every multicast delivered everywhere; every snapshot part
    /// reported.
    Completion,
    /// From every reachable state some continuation reaches the goal (checked once the whole
    /// space is explored, never under a bound). A possibility, not a guarantee under fairness.
    Progress,
    /// The outputs follow the application contract (Enter only while a request waits, a
    /// Leader output agrees with `leader()`, no delivery twice...); sends go to members.
    OutputContract,
    /// Elections: within one election (not disturbed by a crash or recovery while unsettled),
    /// every `Leader` output names the same process.
    OneLeader,
    /// Elections: when nothing more can happen, every live process names the same leader.
    Agreement,
    /// Elections: that leader is alive and is the highest live id (for algorithms that promise
    /// it, once some election announced a result).
    Validity,
    /// Elections: when nothing more can happen, no live process is electing or without leader.
    Termination,
    /// Multicast: two multicasts of one process are delivered in the order it made them.
    FifoOrder,
    /// Multicast: no multicast is delivered before one that happened before it.
    CausalOrder,
    /// Multicast: every two processes deliver their common multicasts in the same order.
    TotalOrder,
    /// Snapshot: the recorded balances and money in transit add up to the bank's total.
    Conservation,
    /// Snapshot: no transfer recorded both as received and in transit, or as received but not
    /// sent (the recorded cut is consistent).
    SnapshotConsistency,
    /// Under weak fairness (every message, timer and input continuously possible is eventually
    /// taken), every obligation is eventually met: every request served, every election over,
    /// every multicast delivered, the snapshot complete. Found as a fair cycle (a lasso).
    Liveness,
}

impl Property {
    /// The kebab-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual-exclusion",
            Property::Deadlock => "deadlock",
            Property::Completion => "completion",
            Property::Progress => "progress",
            Property::OutputContract => "output-contract",
            Property::OneLeader => "one-leader",
            Property::Agreement => "agreement",
            Property::Validity => "validity",
            Property::Termination => "termination",
            Property::FifoOrder => "fifo-order",
            Property::CausalOrder => "causal-order",
            Property::TotalOrder => "total-order",
            Property::Conservation => "conservation",
            Property::SnapshotConsistency => "snapshot-consistency",
            Property::Liveness => "liveness",
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of the model, typed by the algorithm's message, timer and input types.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transition<M, T, I = Input> {
    /// Deliver `msg`, in flight from `from` to `to`.
    Deliver {
        /// The sender.
        from: NodeId,
        /// The receiver.
        to: NodeId,
        /// The message delivered.
        msg: M,
    },
    /// The application at `node` asks `input`.
    Input {
        /// Where.
        node: NodeId,
        /// What.
        input: I,
    },
    /// The pending `timer` of `node` expires.
    Timer {
        /// Whose timer.
        node: NodeId,
        /// Which one.
        timer: T,
    },
    /// `node` crashes: its state, its timers and the messages in flight to it are lost.
    Crash {
        /// Who.
        node: NodeId,
    },
    /// `node` restarts with a fresh state (`on_start` with `recovered()`).
    Recover {
        /// Who.
        node: NodeId,
    },
    /// The network loses `msg`, in flight from `from` to `to`.
    Lose {
        /// The sender.
        from: NodeId,
        /// The receiver.
        to: NodeId,
        /// The message lost.
        msg: M,
    },
    /// The network duplicates `msg`: a second copy is in flight.
    Duplicate {
        /// The sender.
        from: NodeId,
        /// The receiver.
        to: NodeId,
        /// The message duplicated.
        msg: M,
    },
    /// The network splits in two groups; messages between them are lost until the heal.
    Partition {
        /// The two sides.
        groups: [Vec<NodeId>; 2],
    },
    /// Every link delivers again.
    Heal,
}

fn ids_text(ids: &[NodeId]) -> String {
    let v: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl<M: fmt::Debug, T: fmt::Debug, I: fmt::Debug> fmt::Display for Transition<M, T, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transition::Deliver { from, to, msg } => {
                write!(f, "deliver {msg:?} {}->{}", from.0, to.0)
            }
            Transition::Input { node, input } => write!(f, "input {input:?} at {}", node.0),
            Transition::Timer { node, timer } => write!(f, "timer {timer:?} fires at {}", node.0),
            Transition::Crash { node } => write!(f, "crash {}", node.0),
            Transition::Recover { node } => write!(f, "recover {}", node.0),
            Transition::Lose { from, to, msg } => write!(f, "lose {msg:?} {}->{}", from.0, to.0),
            Transition::Duplicate { from, to, msg } => {
                write!(f, "duplicate {msg:?} {}->{}", from.0, to.0)
            }
            Transition::Partition { groups } => write!(
                f,
                "partition {} | {}",
                ids_text(&groups[0]),
                ids_text(&groups[1])
            ),
            Transition::Heal => write!(f, "heal"),
        }
    }
}

/// What a step does, typed for programs (the web page's stepper): messages, inputs, outputs
/// and timers are the algorithm's own serde JSON, as in the trace format.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Every process's `on_start` (step 0).
    Start,
    /// A message is delivered.
    Deliver {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// The message's kind ("Request").
        kind: String,
        /// The message.
        msg: serde_json::Value,
    },
    /// The application gives an input.
    Input {
        /// Where.
        node: NodeId,
        /// What.
        input: serde_json::Value,
    },
    /// A timer fires.
    Timer {
        /// Where.
        node: NodeId,
        /// Which.
        timer: serde_json::Value,
    },
    /// A process crashes.
    Crash {
        /// Who.
        node: NodeId,
    },
    /// A process recovers.
    Recover {
        /// Who.
        node: NodeId,
    },
    /// A message in flight is lost.
    Lose {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Its kind.
        kind: String,
        /// The message.
        msg: serde_json::Value,
    },
    /// A message in flight is duplicated.
    Duplicate {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Its kind.
        kind: String,
        /// The message.
        msg: serde_json::Value,
    },
    /// The network splits in two groups.
    Partition {
        /// The two sides.
        groups: Vec<Vec<NodeId>>,
    },
    /// The partition heals.
    Heal,
}

/// What the acting process did in a step, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum StepEffect {
    /// A message sent (now in flight).
    Send {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Its kind.
        kind: String,
        /// The message.
        msg: serde_json::Value,
    },
    /// An output to the application.
    Output {
        /// Where.
        node: NodeId,
        /// What.
        output: serde_json::Value,
    },
    /// A message dropped by this step: sent to a crashed process or across a partition, or in
    /// flight to a process that crashed or across a partition that began.
    Dropped {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Its kind.
        kind: String,
        /// The message.
        msg: serde_json::Value,
        /// "crashed" or "partition".
        reason: String,
    },
}

/// One numbered step of a counterexample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// 1-based position in the trace (0 for what the processes did at start).
    #[serde(rename = "step")]
    pub number: usize,
    /// What happened, typed.
    #[serde(flatten)]
    pub action: Action,
    /// The same for people, e.g. "deliver Request 0->1".
    pub transition: String,
    /// What was output, for people, e.g. "Enter at 2".
    pub outputs: Vec<String>,
    /// What was sent (or dropped), for people, e.g. "Reply 1->0".
    pub sent: Vec<String>,
    /// Sends, outputs and drops, typed, in order.
    pub effects: Vec<StepEffect>,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>3}. {}", self.number, self.transition)?;
        if !self.sent.is_empty() {
            write!(f, "  sends [{}]", self.sent.join(", "))?;
        }
        if !self.outputs.is_empty() {
            write!(f, "  => {}", self.outputs.join(", "))?;
        }
        Ok(())
    }
}

/// A trace that breaks a property.
#[derive(Clone, Debug)]
pub struct Counterexample<M, T, I = Input> {
    /// The property broken.
    pub property: Property,
    /// What exactly is wrong in the last state.
    pub detail: String,
    /// The transitions from the initial state, in order.
    pub trace: Vec<Transition<M, T, I>>,
    /// The same, rendered with outputs and sends; preceded by a step 0 ("start") when processes
    /// sent messages or output something in `on_start`.
    pub steps: Vec<Step>,
    /// Every process's state at the end (its `Debug` rendering, or "crashed").
    pub final_states: Vec<String>,
    /// For a liveness violation (a lasso): the index in `trace` where the loop begins; the
    /// trace's end leads back to the state before that transition.
    pub loop_start: Option<usize>,
}

/// What an exploration concluded.
#[derive(Clone, Debug)]
pub enum Verdict<M, T, I = Input> {
    /// Every reachable state was explored and every property held.
    Proved,
    /// A bound stopped the exploration before a violation was found: no conclusion beyond it.
    HoldsWithinBound,
    /// A shortest trace that breaks a property.
    Violated(Box<Counterexample<M, T, I>>),
}

/// Which bound stopped an exploration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// `max_states`.
    States,
    /// `max_depth`.
    Depth,
    /// `max_memory`.
    Memory,
    /// [`interrupt`] (Ctrl-C in `distsync check`).
    Interrupted,
}

/// Set by [`interrupt`]: explorations under way stop at their next progress report.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks every exploration of this process to stop as if a bound were hit
/// ([`Bound::Interrupted`]): the outcome so far, no proof. Cannot be undone.
pub fn interrupt() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`interrupt`] was called.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

impl Bound {
    /// The flag that sets it ("an interrupt" for [`Bound::Interrupted`]).
    pub fn flag(self) -> &'static str {
        match self {
            Bound::States => "--max-states",
            Bound::Depth => "--max-depth",
            Bound::Memory => "--max-memory",
            Bound::Interrupted => "an interrupt",
        }
    }
}

/// Figures of one exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Distinct states visited (the initial one included).
    pub states: usize,
    /// Transitions taken (including those leading back to a known state).
    pub transitions: u64,
    /// The deepest state reached, in transitions from the initial state.
    pub depth: usize,
    /// States where nothing but a fault can happen (every request served, or a deadlock).
    pub terminal_states: usize,
    /// Whether a bound cut the exploration short.
    pub bound_hit: bool,
    /// Which one.
    pub bound: Option<Bound>,
    /// Wall-clock time spent.
    pub elapsed: Duration,
    /// The largest resident memory seen, in bytes (0 where it cannot be read).
    pub peak_memory: u64,
    /// Worker threads used.
    pub threads: usize,
}

/// The result of an exploration.
#[derive(Clone, Debug)]
pub struct Outcome<M, T, I = Input> {
    /// The conclusion.
    pub verdict: Verdict<M, T, I>,
    /// The figures.
    pub stats: Stats,
}

/// The outcome of exploring algorithm `A`.
pub type OutcomeOf<A> = Outcome<
    <A as distsync_core::Process>::Msg,
    <A as distsync_core::Process>::Timer,
    <A as distsync_core::Process>::Input,
>;

/// A report of progress, given to the caller's callback now and then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Distinct states so far.
    pub states: usize,
    /// The BFS level being expanded.
    pub depth: usize,
    /// States waiting to be expanded.
    pub frontier: usize,
    /// The `max_states` bound.
    pub max_states: usize,
    /// Time since the start.
    pub elapsed: Duration,
    /// Resident memory now, in bytes.
    pub memory: u64,
}

/// A configuration the checker cannot explore: input error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// The field or flag at fault ("nodes", "requests", "algo", or an algorithm parameter).
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl CheckError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> CheckError {
        CheckError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for CheckError {}

/// The membership of `config`, after the checks every family shares; `crash_refusal` is why
/// the family cannot be checked with crashes, if it cannot ([`model::Spec::CRASH_REFUSAL`]).
fn peers_of(config: &Config, crash_refusal: Option<&str>) -> Result<Peers, CheckError> {
    if config.nodes == 0 {
        return Err(CheckError::new("nodes", "at least one node is needed"));
    }
    if config.nodes > MAX_NODES {
        return Err(CheckError::new(
            "nodes",
            format!(
                "{} nodes is beyond exhaustive exploration: the states grow exponentially with                  the nodes (already millions at 3 or 4), so the checker accepts 1 to {MAX_NODES};                  for larger systems use `distsync stress` or `distsync run`",
                config.nodes
            ),
        ));
    }
    if config.bounds.max_states == 0 || config.bounds.max_states >= u32::MAX as usize {
        return Err(CheckError::new(
            "max-states",
            format!("the state bound must be between 1 and {}", u32::MAX - 1),
        ));
    }
    if config.bounds.max_memory == Some(0) {
        return Err(CheckError::new("max-memory", "must be more than zero"));
    }
    if config.faults.crash > 0 {
        if let Some(why) = crash_refusal {
            return Err(CheckError::new("crash", why));
        }
    }
    if config.faults.recover > config.faults.crash {
        return Err(CheckError::new(
            "recover",
            "there cannot be more recoveries than crashes (--crash K)",
        ));
    }
    if config.faults.partition && config.nodes < 2 {
        return Err(CheckError::new(
            "partition",
            "a partition needs 2 nodes or more",
        ));
    }
    let ids = (0..config.nodes as u32).map(NodeId).collect();
    Peers::new(ids).map_err(|e| CheckError::new("nodes", e.to_string()))
}

fn model_of<'c, A, S>(
    config: &'c Config,
    family: &str,
    spec: impl FnOnce(&Peers) -> Result<S, CheckError>,
) -> Result<model::Model<'c, A, S>, CheckError>
where
    A: Checkable,
    S: model::Spec<A>,
{
    let peers = peers_of(config, S::CRASH_REFUSAL)?;
    A::validate(&config.params, &peers).map_err(|e| CheckError::new(e.field, e.message))?;
    let spec = spec(&peers)?;
    if !config.symmetry {
        return Ok(model::Model::new(config, peers, spec));
    }
    if config.liveness {
        return Err(CheckError::new(
            "symmetry",
            "symmetry reduction cannot be combined with --liveness (fair cycles are judged on \
             actual states, and the reduced graph merges renamed ones)",
        ));
    }
    let renaming = symmetry::renaming::<A>(&peers, &config.params, config.requests)
        .map_err(|why| CheckError::new("symmetry", why))?;
    let perms = symmetry::permutations(config.nodes, &renaming.movable);
    let mut model = model::Model::<A, S>::new(config, peers, spec);
    let mut st = model::St::default();
    st.procs[..config.nodes].fill(0);
    let app = model.spec.init(&model.world(&st));
    if model.spec.rename_app(&app, &perms[0]).is_none() {
        return Err(CheckError::new(
            "symmetry",
            format!("the {family} family's application model has no renaming"),
        ));
    }
    model.sym = Some((renaming, perms));
    Ok(model)
}

/// Builds the model of one family's check and explores it: what every `check_*` entry does.
fn explore_family<A, S>(
    config: &Config,
    family: &str,
    progress: &mut dyn FnMut(&Progress),
    spec: impl FnOnce(&Peers) -> Result<S, CheckError>,
) -> Result<OutcomeOf<A>, CheckError>
where
    A: Checkable + distsync_core::Algorithm,
    S: model::Spec<A>,
{
    let model = model_of::<A, _>(config, family, spec)?;
    let found = explore::explore::<A, _>(&model, progress)?;
    Ok(explore::outcome::<A, _>(&model, found))
}

/// Explores every interleaving of `config` for mutual-exclusion algorithm `A`, breadth first,
/// until a property breaks, every reachable state is visited, or a bound is reached.
/// `progress` is called now and then.
pub fn check<A: MutualExclusion + Checkable>(
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome<A::Msg, A::Timer>, CheckError> {
    explore_family::<A, _>(config, "mutex", progress, |p| {
        families::MutexSpec::<A>::new(config, p)
    })
}

/// [`check`] for a leader-election algorithm: one-leader, agreement, validity, termination.
pub fn check_election<A: Election + Checkable>(
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<OutcomeOf<A>, CheckError> {
    explore_family::<A, _>(config, "election", progress, |p| {
        families::ElectionSpec::<A>::new(config, p)
    })
}

/// [`check`] for a multicast algorithm: the delivery orders, no duplicate, completion.
pub fn check_multicast<A: Multicast + Checkable>(
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<OutcomeOf<A>, CheckError> {
    explore_family::<A, _>(config, "multicast", progress, |p| {
        families::MulticastSpec::<A>::new(config, p)
    })
}

/// [`check`] for a snapshot algorithm: conservation and consistency of the recorded state.
pub fn check_snapshot<A: GlobalSnapshot + Checkable>(
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<OutcomeOf<A>, CheckError> {
    explore_family::<A, _>(config, "snapshot", progress, |p| {
        families::SnapshotSpec::<A>::new(config, p)
    })
}

/// The result of replaying a trace.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The trace, rendered with outputs and sends.
    pub steps: Vec<Step>,
    /// The first property broken on the way (`None` if every state kept them), with its detail
    /// and the step number after which it broke (0: the initial state).
    pub violation: Option<(Property, String, usize)>,
    /// Every process's state at the end, by membership position.
    pub final_states: Vec<String>,
    /// Which processes are in the critical section at the end, by `in_critical_section()`.
    pub in_critical_section: Vec<NodeId>,
}

/// Runs `trace` from the initial state of `config` for mutual-exclusion algorithm `A`,
/// checking every transition is enabled where it is taken and every property after each step:
/// an independent confirmation of a counterexample.
pub fn replay<A: MutualExclusion + Checkable>(
    config: &Config,
    trace: &[Transition<A::Msg, A::Timer>],
) -> Result<Replayed, CheckError> {
    let model = model_of::<A, _>(config, "mutex", |p| {
        families::MutexSpec::<A>::new(config, p)
    })?;
    let moves = explore::moves_of::<A, _>(&model, trace)?;
    let (_, steps, violation, state) = explore::replay_moves::<A, _>(&model, &moves)?;
    let ids = model.peers.ids();
    Ok(Replayed {
        steps,
        violation: violation.map(|(v, at)| (v.property, v.detail, at)),
        final_states: (0..model.n)
            .map(|p| {
                model
                    .proc_of(&state, p)
                    .map_or("crashed".to_string(), |p| format!("{p:?}"))
            })
            .collect(),
        in_critical_section: (0..model.n)
            .filter(|&p| {
                model
                    .proc_of(&state, p)
                    .is_some_and(|p| p.in_critical_section())
            })
            .map(|p| ids[p])
            .collect(),
    })
}
