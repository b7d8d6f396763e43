//! Exhaustive exploration of small configurations: every interleaving of message deliveries,
//! application inputs and timer expiries, breadth first, so that the first violation found is
//! one of the shortest.
//!
//! The model (see `docs/check.md`):
//! - a **state** is every process's state, the messages in flight on each directed link (a FIFO
//!   queue when the configuration says FIFO, a multiset otherwise), each process's pending
//!   timers, and what the application still has to ask (each competitor requests the critical
//!   section `requests` times, one request at a time, and releases it after entering);
//! - a **transition** delivers one deliverable message (the head of a FIFO link, any message of
//!   a non-FIFO link), gives one enabled input (`Request` at an idle competitor with requests
//!   left, `Release` at a process in the critical section), or fires one pending timer. Time is
//!   abstracted away: any pending timer may fire at any moment, so for algorithms that rely on
//!   timeouts the explored behaviours over-approximate the real ones (a timeout may fire before
//!   the answer it waits for, however fast the network).
//!
//! Processes are driven through [`distsync_core::Ctx::new`] exactly as the simulator does; the
//! algorithms are unchanged. States are deduplicated by a 128-bit fingerprint of a canonical
//! rendering (the processes' `Debug` output, the messages' `Hash`, non-FIFO links sorted).
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
mod fingerprint;
mod named;

pub use explore::{check, replay, Checkable, Replayed};
pub use named::{check_named, supported, NamedOutcome};

use distsync_core::mutex::Input;
use distsync_core::{NodeId, Params};
use std::fmt;
use std::time::Duration;

/// Limits of one exploration. When one is reached the result is "no violation within the
/// bound", never a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The most distinct states to visit.
    pub max_states: usize,
    /// The longest transition sequence to explore; states at this depth are not expanded.
    pub max_depth: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_states: 2_000_000,
            max_depth: 10_000,
        }
    }
}

/// One configuration to explore.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of processes; their ids are 0..nodes.
    pub nodes: usize,
    /// How many times each competitor requests the critical section (one at a time).
    pub requests: u32,
    /// Whether every directed link delivers in FIFO order.
    pub fifo: bool,
    /// The algorithm's parameters (coordinator, holder, quorums...).
    pub params: Params,
    /// Where to stop.
    pub bounds: Bounds,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            nodes: 3,
            requests: 1,
            fifo: true,
            params: Params::default(),
            bounds: Bounds::default(),
        }
    }
}

/// A property of the mutual-exclusion family that the checker verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Property {
    /// Never two processes in the critical section at once (by `in_critical_section()` and by
    /// the Enter/Exit outputs).
    MutualExclusion,
    /// No reachable state where nothing can happen while a request waits.
    Deadlock,
    /// On every path that terminates, every competitor entered (and left) the critical section
    /// as many times as it asked.
    Completion,
    /// From every reachable state some continuation serves every request (checked once the whole
    /// space is explored, never under a bound). This is a possibility, not a guarantee under
    /// fairness: it finds lost tokens and livelocks where every path starves someone, not
    /// schedules that merely could starve a process.
    Progress,
    /// The outputs follow the application contract: Enter only while a request waits, Exit only
    /// after a Release, and `in_critical_section()` agrees with them; sends go to members.
    OutputContract,
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
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transition<M, T> {
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
        /// Request or Release.
        input: Input,
    },
    /// The pending `timer` of `node` expires.
    Timer {
        /// Whose timer.
        node: NodeId,
        /// Which one.
        timer: T,
    },
}

impl<M: fmt::Debug, T: fmt::Debug> fmt::Display for Transition<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transition::Deliver { from, to, msg } => {
                write!(f, "deliver {msg:?} {}->{}", from.0, to.0)
            }
            Transition::Input { node, input } => write!(f, "input {input:?} at {}", node.0),
            Transition::Timer { node, timer } => write!(f, "timer {timer:?} fires at {}", node.0),
        }
    }
}

/// One numbered step of a counterexample, rendered for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// 1-based position in the trace (0 for what the processes did at start).
    pub number: usize,
    /// The transition, e.g. "deliver Request 0->1".
    pub transition: String,
    /// What the acting process reported, e.g. "Enter at 2".
    pub outputs: Vec<String>,
    /// What it sent, e.g. "Reply 1->0".
    pub sent: Vec<String>,
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
pub struct Counterexample<M, T> {
    /// The property broken.
    pub property: Property,
    /// What exactly is wrong in the last state.
    pub detail: String,
    /// The transitions from the initial state, in order.
    pub trace: Vec<Transition<M, T>>,
    /// The same, rendered with outputs and sends; preceded by a step 0 ("start") when processes
    /// sent messages or output something in `on_start`.
    pub steps: Vec<Step>,
    /// Every process's state at the end (its `Debug` rendering), by membership position.
    pub final_states: Vec<String>,
}

/// What an exploration concluded.
#[derive(Clone, Debug)]
pub enum Verdict<M, T> {
    /// Every reachable state was explored and every property held.
    Proved,
    /// A bound stopped the exploration before a violation was found: no conclusion beyond it.
    HoldsWithinBound,
    /// A shortest trace that breaks a property.
    Violated(Box<Counterexample<M, T>>),
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
    /// States where nothing is enabled (every request served, or a deadlock).
    pub terminal_states: usize,
    /// Whether `max_states` or `max_depth` cut the exploration short.
    pub bound_hit: bool,
    /// Wall-clock time spent.
    pub elapsed: Duration,
}

/// The result of [`check`].
#[derive(Clone, Debug)]
pub struct Outcome<M, T> {
    /// The conclusion.
    pub verdict: Verdict<M, T>,
    /// The figures.
    pub stats: Stats,
}

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
