//! A run advanced one choice at a time, that can go back: what the web page drives.
//!
//! A [`Session`] is the simulator's own engine, stepped: [`Choice::Next`] applies the earliest
//! pending event, exactly as the batch run does (a session driven by `Next` alone gives the
//! batch run's report and trace, byte for byte), and the other choices apply a chosen pending
//! event, lose or duplicate a message in flight, or inject a fault or a request at the current
//! time. Going back replays the recorded choices, from the start or from a copy of the engine
//! kept every 256 choices: the run is seeded, so the replay gives the same state.
//!
//! ```
//! use distsync_sim::session::{Choice, Session};
//! use distsync_sim::Scenario;
//! let scenario = Scenario::from_toml(r#"
//!     algorithm = "ricart-agrawala"
//!     nodes = 3
//!     [network]
//!     delay = "1ms"
//! "#, "example.toml").unwrap();
//! let mut session = Session::new(&scenario, "example.toml").unwrap();
//! session.apply(Choice::Request { node: distsync_core::NodeId(0) }).unwrap();
//! session.apply(Choice::Next).unwrap(); // node 0 gets the Request input and asks the others
//! let view = session.view();
//! assert_eq!(view.pending.len(), 2); // two Request messages in flight
//! let first = view.pending[1].id; // deliver the later one first
//! session.apply(Choice::Event { id: first }).unwrap();
//! session.back().unwrap();
//! assert_eq!(session.view().pending.len(), 2);
//! ```

pub use crate::engine::PendingEvent;
pub use crate::engine::{is_link_plumbing, label_of};
use crate::engine::{Engine, Harness, Turn};
use crate::report::{Report, Violation};
use crate::scenario::{Action, Scenario};
use crate::{build, Built, Mode, SimError};
use distsync_algorithms::registry::{self, Family};
use distsync_core::{Algorithm, NodeId, Rules, Time};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::Mutex;

/// One thing to do next.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Choice {
    /// The earliest pending event (what the batch run does).
    Next,
    /// This pending event (a delivery, a timer, an input, a scripted event) now.
    Event {
        /// Its id, as [`View::pending`] lists it.
        id: u64,
    },
    /// Lose this message in flight.
    Drop {
        /// The pending delivery's id.
        id: u64,
    },
    /// Deliver this message twice: a second copy, due at the same time.
    Duplicate {
        /// The pending delivery's id.
        id: u64,
    },
    /// The node crashes and loses its state.
    Crash {
        /// Which node.
        node: NodeId,
    },
    /// The node restarts with fresh state.
    Recover {
        /// Which node.
        node: NodeId,
    },
    /// Links between these groups stop delivering; unlisted nodes form one more group.
    Partition {
        /// The groups.
        groups: Vec<Vec<NodeId>>,
    },
    /// Every link delivers again.
    Heal,
    /// Mutual exclusion: the node asks for the critical section (and leaves it after the
    /// workload's `cs` time).
    Request {
        /// Which node.
        node: NodeId,
    },
    /// Leader election: the node starts an election.
    Elect {
        /// Which node.
        node: NodeId,
    },
    /// Clock synchronization: the node synchronizes now.
    Sync {
        /// Which node.
        node: NodeId,
    },
    /// Multicast: the node multicasts an update.
    Multicast {
        /// Which node.
        node: NodeId,
    },
    /// Snapshots: the node starts a snapshot.
    Snapshot {
        /// Which node.
        node: NodeId,
    },
    /// The node's process is given this input now, as the trace writes inputs (e.g.
    /// `"Request"`). The family's workload does not hear of it: for a mutual-exclusion request
    /// that the monitors follow, use [`Choice::Request`].
    Input {
        /// Which node.
        node: NodeId,
        /// The input.
        input: Value,
    },
}

/// One process, as the page shows it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProcessView {
    /// Its id.
    pub id: u32,
    /// Whether it is up.
    pub alive: bool,
    /// The process struct itself, serialized (null while crashed); for an algorithm behind the
    /// reliable ring link, the algorithm's own state (the link's is `link_state`).
    pub state: Value,
    /// The reliable ring link's state around the algorithm (its sequence numbers and the
    /// messages not yet acknowledged), for the algorithms that run behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_state: Option<Value>,
    /// Token algorithms: whether the process holds the token now, as its state says (its
    /// `token` field, or for Raymond its `holder` pointing at itself); absent for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds_token: Option<bool>,
    /// Raymond: the neighbour its `holder` pointer names (towards the token), when not itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<u32>,
    /// A few words: "in CS", "requesting", "leader 6", "electing".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub badge: Option<String>,
    /// The observer's Lamport clock of the node (as the trace stamps its events).
    pub lamport: u64,
    /// The observer's vector clock of the node.
    pub vector: Vec<u64>,
}

/// One trace line, with the step that wrote it and a label.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// The choice that wrote it (1 for the first choice; 0 for the start).
    pub step: usize,
    /// A short text: "0 sends Request(ts=1) to 1".
    pub label: String,
    /// The reliable ring link's own traffic (an acknowledgement, a retransmission timer).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub link: bool,
    /// The trace line itself: `seq`, `time_ns`, `event`, `node`, `lamport`, `vector`...
    #[serde(flatten)]
    pub line: Value,
}

/// Everything the page draws, as plain data.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct View {
    /// The registry name.
    pub algorithm: String,
    /// The family ("mutex", "election"...).
    pub family: &'static str,
    /// The seed.
    pub seed: u64,
    /// Choices applied.
    pub step: usize,
    /// Choices recorded (more than `step` after going back: `goto` can go forward again).
    pub steps_recorded: usize,
    /// The current (true) time.
    pub time_ns: u64,
    /// The horizon.
    pub until_ns: u64,
    /// Events applied (the report's `events_processed`).
    pub events: u64,
    /// Nothing that would do anything is pending.
    pub quiet: bool,
    /// Why `Next` stopped, if it did: "done", "idle" or "horizon".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<&'static str>,
    /// Whether links are FIFO (a delivery then waits for earlier ones on its link).
    pub fifo: bool,
    /// "ring", "tree" or "circle".
    pub layout: &'static str,
    /// The ids in membership (ring) order.
    pub ids: Vec<u32>,
    /// The edges to draw: the ring's links in ring order, or the tree's edges.
    pub edges: Vec<[u32; 2]>,
    /// Every process.
    pub processes: Vec<ProcessView>,
    /// The pending events that would do something, earliest first.
    pub pending: Vec<PendingEvent>,
    /// The trace lines `log_from..log_from + log.len()` (of `log_total`).
    pub log: Vec<LogEntry>,
    /// The index (= `seq`) of the first line in `log`.
    pub log_from: usize,
    /// How many trace lines (events) there are.
    pub log_total: usize,
    /// The steps in the log's window that wrote no trace line (a scripted event or a request
    /// turned into a pending input, a duplicated message...), so that every step is logged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub silent_steps: Vec<SilentStep>,
    /// The violations the monitors saw so far; once the run is over or quiet, with the
    /// family's final checks (deadlock, starvation, termination, completion) as `distsync run`
    /// makes them at the end (see `final_checks`).
    pub violations: Vec<Violation>,
    /// Set when the run is over, or quiet so that the next [`Choice::Next`] would end it: how
    /// it ends ("idle", "done" or "horizon"). The final checks then ran on a copy of the run,
    /// and `violations` holds what they found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_checks: Option<&'static str>,
    /// How the scenario is set up outside its algorithm's assumptions (the report's
    /// `warnings`, as `distsync run` prints them); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The rules of the algorithm's file that the latest choice applied, as its handler named
    /// them ([`distsync_core::Ctx::rule`]); absent when it named none (a crash, a message
    /// ignored, an algorithm whose handlers name no rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleView>,
}

/// Which process applied which rules of its algorithm's file at the latest step.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RuleView {
    /// The process.
    pub node: u32,
    /// The rules, as the file's header comment numbers them ("2"), in the order applied.
    pub rules: Vec<&'static str>,
}

/// A step that wrote no trace line, as the log shows it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SilentStep {
    /// The step (1 for the first choice).
    pub step: usize,
    /// The log position it comes before (`log_total` when it is the latest).
    pub before: usize,
    /// What the choice did, in words.
    pub label: String,
}

/// A choice that wrote no trace line, in words.
fn silent_label(choice: &Choice) -> String {
    match choice {
        Choice::Next => "a scripted event or a workload arrival is now pending".into(),
        Choice::Event { id } => format!("event {id} is now pending as an input"),
        Choice::Request { node } => {
            format!("{node} asks for the critical section: its input is pending")
        }
        Choice::Elect { node } => format!("{node} is to start an election: its input is pending"),
        Choice::Sync { node } => format!("{node} is to synchronize: its input is pending"),
        Choice::Multicast { node } => format!("{node} is to multicast: its input is pending"),
        Choice::Snapshot { node } => format!("{node} is to start a snapshot: its input is pending"),
        Choice::Duplicate { id } => format!("a second copy of message {id} is on its way"),
        Choice::Drop { id } => format!("message {id} is dropped"),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// What one choice did.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Applied {
    /// The choices applied now.
    pub step: usize,
    /// The trace lines it wrote.
    pub log: Vec<LogEntry>,
    /// The violations it found.
    pub violations: Vec<Violation>,
    /// Set when `Next` found the run over: "done", "idle" or "horizon".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<&'static str>,
}

/// Why [`Session::run`] stopped.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStop {
    /// It applied `limit` events.
    Limit,
    /// The next event is due after the time asked for.
    Time,
    /// The run is over ("done", "idle" or "horizon").
    Ended(&'static str),
    /// A monitor found a violation.
    Violation,
}

/// A session that cannot be made, or a choice that cannot be applied.
#[derive(Debug)]
pub enum SessionError {
    /// The scenario is not valid.
    Scenario(SimError),
    /// Choice number `step` (0-based) cannot be applied.
    Choice {
        /// Its index among the choices.
        step: usize,
        /// Why.
        message: String,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Scenario(e) => write!(f, "{e}"),
            SessionError::Choice { step, message } => write!(f, "choice {step}: {message}"),
        }
    }
}

impl std::error::Error for SessionError {}

impl From<SimError> for SessionError {
    fn from(e: SimError) -> Self {
        SessionError::Scenario(e)
    }
}

/// The engine of one algorithm and harness, behind a type-erased interface.
pub(crate) trait Stepper: Send {
    fn fork(&self) -> Box<dyn Stepper>;
    /// A copy of the engine without its trace (a checkpoint: the trace so far is shared with the
    /// session's live engine, which only ever appends to it).
    fn fork_untraced(&mut self) -> Box<dyn Stepper>;
    fn take_trace(&mut self) -> Vec<u8>;
    fn set_trace(&mut self, trace: Vec<u8>);
    fn apply(&mut self, choice: &Choice) -> Result<(), String>;
    fn ended(&self) -> Option<&'static str>;
    fn now(&self) -> Time;
    fn until(&self) -> Time;
    fn events(&self) -> u64;
    fn next_time(&self) -> Option<Time>;
    fn quiet(&self) -> bool;
    fn processes(&self) -> Vec<ProcessView>;
    fn pending(&self) -> Vec<PendingEvent>;
    fn violations(&self) -> &[Violation];
    fn trace(&self) -> &[u8];
    fn finish(&mut self, ended_by: &str) -> Report;
    fn find_delivery(&self, from: NodeId, to: NodeId, msg: &Value) -> Option<u64>;
    fn find_timer(&self, node: NodeId, timer: &Value) -> Option<u64>;
    fn find_checker_step(&self, text: &str) -> Option<u64>;
    fn take_rules(&mut self) -> Option<(NodeId, Rules)>;
}

/// A live engine.
#[derive(Clone)]
struct Live<A: Algorithm, H: Harness<A>> {
    engine: Engine<A, H>,
    ended: Option<&'static str>,
}

/// Starts `engine` and wraps it for a session.
pub(crate) fn stepper<A, H>(mut engine: Engine<A, H>) -> Box<dyn Stepper>
where
    A: Algorithm + Serialize + Send + Clone + 'static,
    H: Harness<A> + Send + Clone + 'static,
{
    engine.start();
    Box::new(Live {
        engine,
        ended: None,
    })
}

impl<A, H> Stepper for Live<A, H>
where
    A: Algorithm + Serialize + Send + Clone + 'static,
    H: Harness<A> + Send + Clone + 'static,
{
    fn fork(&self) -> Box<dyn Stepper> {
        Box::new(self.clone())
    }

    fn fork_untraced(&mut self) -> Box<dyn Stepper> {
        let trace = self.engine.take_trace();
        let copy = Box::new(self.clone());
        self.engine.set_trace(trace);
        copy
    }

    fn take_trace(&mut self) -> Vec<u8> {
        self.engine.take_trace()
    }

    fn set_trace(&mut self, trace: Vec<u8>) {
        self.engine.set_trace(trace)
    }

    fn apply(&mut self, choice: &Choice) -> Result<(), String> {
        let e = &mut self.engine;
        match choice {
            Choice::Next => {
                if let Some(why) = self.ended {
                    return Err(format!(
                        "the run is over ({why}); inject a fault or a request, or go back"
                    ));
                }
                if let Turn::End(why) = e.step_next() {
                    self.ended = Some(why);
                }
                return Ok(());
            }
            Choice::Event { id } => e.apply_event(*id)?,
            Choice::Drop { id } => e.drop_message(*id)?,
            Choice::Duplicate { id } => e.duplicate_message(*id)?,
            Choice::Crash { node } => e.inject(Action::Crash(*node))?,
            Choice::Recover { node } => e.inject(Action::Recover(*node))?,
            Choice::Partition { groups } => e.inject(Action::Partition(groups.clone()))?,
            Choice::Heal => e.inject(Action::Heal)?,
            Choice::Request { node } => e.inject(Action::Request(*node))?,
            Choice::Elect { node } => e.inject(Action::Elect(*node))?,
            Choice::Sync { node } => e.inject(Action::Sync(*node))?,
            Choice::Multicast { node } => e.inject(Action::Multicast(*node))?,
            Choice::Snapshot { node } => e.inject(Action::Snapshot(*node))?,
            Choice::Input { node, input } => e.give_input(*node, input)?,
        }
        self.ended = None;
        Ok(())
    }

    fn ended(&self) -> Option<&'static str> {
        self.ended
    }

    fn now(&self) -> Time {
        self.engine.now()
    }

    fn until(&self) -> Time {
        self.engine.until()
    }

    fn events(&self) -> u64 {
        self.engine.events()
    }

    fn next_time(&self) -> Option<Time> {
        self.engine.next_time()
    }

    fn quiet(&self) -> bool {
        self.engine.quiet()
    }

    fn processes(&self) -> Vec<ProcessView> {
        let ids = self.engine.peers().ids();
        (0..ids.len())
            .map(|pos| {
                let process = self.engine.process(pos);
                let (lamport, vector) = self.engine.stamps(pos).unwrap_or((0, &[]));
                let (state, link_state) = split_link(
                    process
                        .map(|p| serde_json::to_value(p).unwrap_or_default())
                        .unwrap_or_default(),
                );
                let (holds_token, holder) = token_of(&state, ids[pos].0);
                ProcessView {
                    id: ids[pos].0,
                    alive: process.is_some(),
                    holds_token,
                    holder,
                    state,
                    link_state,
                    badge: self.engine.describe(pos),
                    lamport,
                    vector: vector.to_vec(),
                }
            })
            .collect()
    }

    fn pending(&self) -> Vec<PendingEvent> {
        self.engine.pending()
    }

    fn violations(&self) -> &[Violation] {
        self.engine.violations()
    }

    fn trace(&self) -> &[u8] {
        self.engine.trace_bytes()
    }

    fn finish(&mut self, ended_by: &str) -> Report {
        self.engine.finish(ended_by)
    }

    fn find_delivery(&self, from: NodeId, to: NodeId, msg: &Value) -> Option<u64> {
        self.engine.find_delivery(from, to, msg)
    }

    fn find_timer(&self, node: NodeId, timer: &Value) -> Option<u64> {
        self.engine.find_timer(node, timer)
    }

    fn find_checker_step(&self, text: &str) -> Option<u64> {
        self.engine.find_checker_step(text)
    }

    fn take_rules(&mut self) -> Option<(NodeId, Rules)> {
        self.engine.take_rules()
    }
}

/// A process's state as the page shows it: an algorithm behind the reliable ring link
/// (`{inner, id, incarnation, next_seq, unacked}`) is shown as the algorithm's own state, the
/// link's fields apart.
fn split_link(state: Value) -> (Value, Option<Value>) {
    match state {
        Value::Object(mut map)
            if map.contains_key("inner")
                && map.contains_key("unacked")
                && map.contains_key("next_seq") =>
        {
            let inner = map.remove("inner").unwrap_or_default();
            (inner, Some(Value::Object(map)))
        }
        other => (other, None),
    }
}

/// Where the token is, as a process's state says: a `token` field (a flag, or the token itself
/// while held: token-ring, Suzuki-Kasami, Ricart-Agrawala's token algorithm), or Raymond's
/// `holder` pointer (the token is here when it points at the process itself).
fn token_of(state: &Value, id: u32) -> (Option<bool>, Option<u32>) {
    let Value::Object(map) = state else {
        return (None, None);
    };
    if let Some(token) = map.get("token") {
        return (
            Some(!matches!(token, Value::Null | Value::Bool(false))),
            None,
        );
    }
    if let (Some(holder), Some(_)) = (
        map.get("holder").and_then(Value::as_u64),
        map.get("request_q"),
    ) {
        let holder = holder as u32;
        return (Some(holder == id), (holder != id).then_some(holder));
    }
    (None, None)
}

/// The `ended_by` of a report made before the run ended.
pub const PAUSED: &str = "paused";

/// The most trace lines [`Session::view`] puts in `log` (the latest ones); ask
/// [`Session::view_window`] for others.
pub const VIEW_LOG_LINES: usize = 500;

/// Every this many choices a session keeps a copy of its engine, so that going back replays
/// at most this many choices.
const CHECKPOINT_EVERY: usize = 256;

/// The most checkpoints a session keeps: past this, every other one is dropped and they are
/// taken half as often. An engine's state can grow with the run (a report's latency samples),
/// so this keeps what checkpoints hold linear in the steps; going back then replays at most the
/// steps since the latest one (1/32 of the run).
const MAX_CHECKPOINTS: usize = 32;

/// A copy of a session's engine after `step` choices, with what the session knew of its trace.
/// The copy holds no trace: its trace is the first `trace_len` bytes of the live engine's (the
/// same choices made them), so checkpoints cost the engine's state, not the run so far, and a
/// session's memory grows linearly with its steps.
struct Checkpoint {
    step: usize,
    live: Box<dyn Stepper>,
    trace_len: usize,
    lines: usize,
    scanned: usize,
    rules: Option<(NodeId, Rules)>,
}

/// A run that is advanced one choice at a time, and can go back.
pub struct Session {
    scenario: Scenario,
    origin: String,
    family: Family,
    layout: &'static str,
    ids: Vec<u32>,
    edges: Vec<[u32; 2]>,
    /// The scenario's warnings (see [`View::warnings`]).
    warnings: Vec<String>,
    live: Box<dyn Stepper>,
    /// The choices recorded; the first `step` of them are applied.
    choices: Vec<Choice>,
    step: usize,
    /// Byte offsets of the trace's event lines (the header excluded), and how far the trace
    /// has been scanned for them.
    lines: Vec<usize>,
    scanned: usize,
    /// For each applied choice, the number of trace lines before it.
    first_line: Vec<usize>,
    /// Choices between checkpoints: [`CHECKPOINT_EVERY`], doubled each time more than
    /// [`MAX_CHECKPOINTS`] would be kept.
    spacing: usize,
    /// Copies of the engine every `spacing` choices, earliest first.
    checkpoints: Vec<Checkpoint>,
    /// The rules of the algorithm's file that the latest choice applied (see [`View::rule`]).
    rules: Option<(NodeId, Rules)>,
    /// Counts the changes of the run (see [`Session::version`]).
    version: u64,
    /// The finished copy of the run at this step, once asked for (see [`Session::finished`]);
    /// forgotten by every change of step.
    finished: Mutex<Option<Option<Finished>>>,
}

/// A copy of the run taken to its end with the family's final checks: how it ended, its
/// violations (the live ones and the final checks') and its trace.
#[derive(Clone)]
struct Finished {
    ended_by: &'static str,
    violations: Vec<Violation>,
    trace: String,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("algorithm", &self.scenario.algorithm)
            .field("step", &self.step)
            .finish()
    }
}

/// Ring algorithms, drawn as a ring.
const RINGS: [&str; 5] = [
    "token-ring",
    "ring",
    "chang-roberts",
    "ring-active-list",
    "peterson",
];

impl Session {
    /// From a scenario (the TOML `distsync run` reads); `origin` names it in errors. Same errors
    /// as [`crate::run`].
    pub fn new(scenario: &Scenario, origin: &str) -> Result<Session, SimError> {
        let origin = if origin.is_empty() {
            "<scenario>"
        } else {
            origin
        };
        let live = Self::fresh(scenario, origin)?;
        let entry = registry::lookup(&scenario.algorithm).expect("checked by build");
        let mut checked = scenario.check(origin)?;
        // What `run` warns about (a timeout shorter than the worst round trip...), so the page
        // and the session's report say it too.
        crate::assumptions::derive_defaults(&mut checked.scenario, entry.family);
        let warnings = crate::assumptions::warnings(&checked.scenario, entry.family);
        let ids: Vec<u32> = checked.peers.ids().iter().map(|n| n.0).collect();
        let (layout, edges) = if entry.name == "raymond" {
            let edges =
                distsync_algorithms::mutex::raymond::tree_edges(&checked.peers, &scenario.params())
                    .map(|edges| edges.iter().map(|[a, b]| [a.0, b.0]).collect())
                    .unwrap_or_default();
            ("tree", edges)
        } else if RINGS.contains(&entry.name) {
            let n = ids.len();
            let edges = (0..n).map(|i| [ids[i], ids[(i + 1) % n]]).collect();
            ("ring", edges)
        } else {
            ("circle", Vec::new())
        };
        let mut session = Session {
            scenario: scenario.clone(),
            origin: origin.to_string(),
            family: entry.family,
            layout,
            ids,
            edges,
            warnings,
            live,
            choices: Vec::new(),
            step: 0,
            lines: Vec::new(),
            scanned: 0,
            first_line: Vec::new(),
            spacing: CHECKPOINT_EVERY,
            checkpoints: Vec::new(),
            rules: None,
            version: 0,
            finished: Mutex::new(None),
        };
        session.scan();
        Ok(session)
    }

    fn fresh(scenario: &Scenario, origin: &str) -> Result<Box<dyn Stepper>, SimError> {
        match build(scenario, origin, scenario.seed, Mode::Step)? {
            Built::Stepper(s) => Ok(s),
            Built::Report(_) => unreachable!("a session gives a stepper"),
        }
    }

    /// Replays `choices` from the start (a shared link is scenario + seed + choices).
    pub fn replay(
        scenario: &Scenario,
        origin: &str,
        choices: &[Choice],
    ) -> Result<Session, SessionError> {
        let mut session = Session::new(scenario, origin)?;
        for choice in choices {
            session.apply(choice.clone())?;
        }
        Ok(session)
    }

    /// Finds the new event lines in the trace.
    fn scan(&mut self) {
        let bytes = self.live.trace();
        let mut at = self.scanned;
        while let Some(nl) = bytes[at..].iter().position(|&b| b == b'\n') {
            let end = at + nl + 1;
            if at > 0 {
                self.lines.push(at);
            }
            at = end;
        }
        self.scanned = at;
    }

    fn apply_recorded(&mut self, choice: &Choice) -> Result<(), SessionError> {
        self.forget_finished();
        let before = self.lines.len();
        // Forget what an earlier choice applied, so that only this choice's rules are kept.
        self.live.take_rules();
        self.live
            .apply(choice)
            .map_err(|message| SessionError::Choice {
                step: self.step,
                message,
            })?;
        self.rules = self.live.take_rules();
        self.first_line.truncate(self.step);
        self.first_line.push(before);
        self.step += 1;
        self.scan();
        let kept = self.checkpoints.last().map_or(0, |c| c.step);
        if self.step.is_multiple_of(self.spacing) && kept < self.step {
            self.checkpoints.push(Checkpoint {
                step: self.step,
                trace_len: self.live.trace().len(),
                live: self.live.fork_untraced(),
                lines: self.lines.len(),
                scanned: self.scanned,
                rules: self.rules,
            });
            if self.checkpoints.len() > MAX_CHECKPOINTS {
                let spacing = self.spacing * 2;
                self.checkpoints.retain(|c| c.step.is_multiple_of(spacing));
                self.spacing = spacing;
            }
        }
        Ok(())
    }

    /// Applies one choice; returns what happened. A choice that cannot be applied changes
    /// nothing. Applying after going back forgets the choices that were ahead.
    pub fn apply(&mut self, choice: Choice) -> Result<Applied, SessionError> {
        let lines = self.lines.len();
        let violations = self.live.violations().len();
        // Checkpoints past this point belong to the choices this one replaces.
        let step = self.step;
        self.checkpoints.retain(|c| c.step <= step);
        self.apply_recorded(&choice)?;
        self.choices.truncate(self.step - 1);
        self.choices.push(choice);
        Ok(Applied {
            step: self.step,
            log: self.entries(lines, self.lines.len()),
            violations: self.live.violations()[violations..].to_vec(),
            ended_by: self.live.ended(),
        })
    }

    /// Undoes the last choice (a deterministic replay, from the nearest earlier checkpoint).
    pub fn back(&mut self) -> Result<(), SessionError> {
        if self.step == 0 {
            return Err(SessionError::Choice {
                step: 0,
                message: "already at the start".into(),
            });
        }
        self.goto(self.step - 1)
    }

    /// Goes to exactly `step` choices applied: back by replay from the nearest checkpoint (or the
    /// start), or forward along
    /// the recorded choices.
    pub fn goto(&mut self, step: usize) -> Result<(), SessionError> {
        if step > self.choices.len() {
            return Err(SessionError::Choice {
                step,
                message: format!("only {} choices are recorded", self.choices.len()),
            });
        }
        if step < self.step {
            self.forget_finished();
            match self.checkpoints.iter().rev().find(|c| c.step <= step) {
                Some(c) => {
                    // The live trace goes on from the checkpoint's: cut it back to there.
                    let mut trace = self.live.take_trace();
                    trace.truncate(c.trace_len);
                    self.live = c.live.fork();
                    self.live.set_trace(trace);
                    self.step = c.step;
                    self.lines.truncate(c.lines);
                    self.scanned = c.scanned;
                    self.rules = c.rules;
                    self.first_line.truncate(c.step);
                }
                None => {
                    self.live = Self::fresh(&self.scenario, &self.origin)?;
                    self.step = 0;
                    self.lines.clear();
                    self.scanned = 0;
                    self.rules = None;
                    self.first_line.clear();
                    self.scan();
                }
            }
        }
        let recorded = std::mem::take(&mut self.choices);
        let result = recorded[self.step..step]
            .iter()
            .try_for_each(|c| self.apply_recorded(c));
        self.choices = recorded;
        result
    }

    /// Applies [`Choice::Next`] until `limit` events, the simulated time `until` (the next event
    /// is due later), the end of the run, or a new violation.
    pub fn run(&mut self, limit: u64, until: Option<Time>) -> Result<RunStop, SessionError> {
        let mut applied = 0;
        loop {
            if let Some(why) = self.live.ended() {
                return Ok(RunStop::Ended(why));
            }
            if applied >= limit {
                return Ok(RunStop::Limit);
            }
            if let (Some(until), Some(next)) = (until, self.live.next_time()) {
                if next > until {
                    return Ok(RunStop::Time);
                }
            }
            let done = self.apply(Choice::Next)?;
            applied += 1;
            if !done.violations.is_empty() {
                return Ok(RunStop::Violation);
            }
        }
    }

    /// The choices applied so far.
    pub fn choices(&self) -> &[Choice] {
        &self.choices[..self.step]
    }

    /// Every recorded choice (after going back, more than are applied).
    pub fn recorded(&self) -> &[Choice] {
        &self.choices
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The run so far in the project's trace format (JSON lines, header first): `distsync
    /// trace render` and `distsync clocks` read it.
    pub fn trace_jsonl(&self) -> String {
        match self.finished() {
            // An ended (or quiet) run's final checks (deadlock, starvation, termination...)
            // write their violations into the trace, as the batch run's do: take the trace of a
            // finished copy.
            Some(finished) => finished.trace,
            None => String::from_utf8_lossy(self.live.trace()).into_owned(),
        }
    }

    fn forget_finished(&mut self) {
        self.version += 1;
        *self.finished.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// A number that changes whenever the run shown changes (a choice applied, a step back or
    /// forward), so that what is read off the run (the causes of its violations) can be kept
    /// until then.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The run taken to its end on a copy, with the family's final checks, when it is over or
    /// quiet so that one more [`Choice::Next`] ends it (a deadlock reached by hand is then
    /// announced as the batch run announces it); `None` while something is still to happen.
    /// Made once per step.
    fn finished(&self) -> Option<Finished> {
        let mut cache = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = cache.as_ref() {
            return known.clone();
        }
        let made = self.finish_copy();
        *cache = Some(made.clone());
        made
    }

    fn finish_copy(&self) -> Option<Finished> {
        if self.live.ended().is_none() && !self.live.quiet() {
            return None;
        }
        let mut copy = self.live.fork();
        let ended_by = match self.live.ended() {
            Some(why) => why,
            None => {
                // Only cancelled timers are left: `Next` skips them and ends the run, unless
                // the harness finds something new to do when the queue runs dry.
                copy.apply(&Choice::Next).ok()?;
                copy.ended()?
            }
        };
        let report = copy.finish(ended_by);
        Some(Finished {
            ended_by,
            violations: report.violations,
            trace: String::from_utf8_lossy(copy.trace()).into_owned(),
        })
    }

    /// The report `distsync run --json` gives for the run so far: a copy of the run, finished
    /// with the family's final checks. `ended_by` is "paused" while `Next` has not found the
    /// run over.
    pub fn report(&self) -> Report {
        let mut report = self.live.fork().finish(self.live.ended().unwrap_or(PAUSED));
        report.warnings = self.warnings.clone();
        report
    }

    /// The id of the earliest pending delivery from `from` to `to` of `msg` (as the trace
    /// writes messages), e.g. to follow a checker's counterexample.
    pub fn find_pending_delivery(&self, from: NodeId, to: NodeId, msg: &Value) -> Option<u64> {
        self.live.find_delivery(from, to, msg)
    }

    /// The id of `node`'s pending timer `timer` (as the trace writes timers).
    pub fn find_pending_timer(&self, node: NodeId, timer: &Value) -> Option<u64> {
        self.live.find_timer(node, timer)
    }

    /// Follows one step of a checker counterexample, as `distsync check` writes it
    /// (`deliver Reply { ts: 3 } 1->0`, `input Request at 2`, `timer T fires at 1`, `crash 2`,
    /// `recover 2`, `lose Token 0->1`, `duplicate Token 0->1`, `partition [0] | [1, 2]`,
    /// `heal`): applies the pending
    /// event it names, after the input's choice ([`Choice::Request`], [`Choice::Elect`],
    /// [`Choice::Snapshot`]) when no workload or script made it, or the fault's choice. An
    /// input that carries the checker's own choice (`Multicast(2)`, `Transfer { to: 0, amount:
    /// 4 }`) and is not pending is given as written ([`Choice::Input`]). Returns the choices
    /// applied (recorded like any others).
    pub fn follow_checker_step(&mut self, text: &str) -> Result<Vec<Choice>, SessionError> {
        let text = text.trim();
        let mut applied = Vec::new();
        let node = |rest: &str| rest.trim().parse::<u32>().ok().map(NodeId);
        let fault = if let Some(n) = text.strip_prefix("crash ").and_then(node) {
            Some(Choice::Crash { node: n })
        } else if let Some(n) = text.strip_prefix("recover ").and_then(node) {
            Some(Choice::Recover { node: n })
        } else if text == "heal" {
            Some(Choice::Heal)
        } else if let Some(groups) = text.strip_prefix("partition ") {
            // "[0] | [1, 2]": the two sides, as lists of ids.
            let groups: Option<Vec<Vec<NodeId>>> = groups
                .split('|')
                .map(|g| {
                    let list = g.trim().strip_prefix('[')?.strip_suffix(']')?;
                    list.split(',')
                        .filter(|x| !x.trim().is_empty())
                        .map(&node)
                        .collect()
                })
                .collect();
            groups.map(|groups| Choice::Partition { groups })
        } else if let Some(msg) = text.strip_prefix("lose ") {
            let id = self.live.find_checker_step(&format!("deliver {msg}"));
            id.map(|id| Choice::Drop { id })
        } else if let Some(msg) = text.strip_prefix("duplicate ") {
            let id = self.live.find_checker_step(&format!("deliver {msg}"));
            id.map(|id| Choice::Duplicate { id })
        } else {
            None
        };
        if let Some(choice) = fault {
            self.apply(choice.clone())?;
            applied.push(choice);
            return Ok(applied);
        }
        if self.live.find_checker_step(text).is_none() {
            let input = text.strip_prefix("input ").and_then(|rest| {
                let (what, n) = rest.rsplit_once(" at ")?;
                Some((what, node(n)?))
            });
            let choice = match input {
                Some((what, node)) if what.starts_with("Request") => Some(Choice::Request { node }),
                Some((what, node)) if what.starts_with("Start") => Some(Choice::Elect { node }),
                Some((what, node)) if what.starts_with("Snapshot") => {
                    Some(Choice::Snapshot { node })
                }
                // An input that carries the checker's own choice (a multicast's payload, a
                // transfer's receiver and amount) is given as it is, the harness hearing of it.
                Some((what, node))
                    if what.starts_with("Multicast") || what.starts_with("Transfer") =>
                {
                    debug_to_json(what).map(|input| Choice::Input { node, input })
                }
                _ => None,
            };
            if let Some(choice @ Choice::Input { .. }) = choice {
                self.apply(choice.clone())?;
                applied.push(choice);
                return Ok(applied);
            }
            if let Some(choice) = choice {
                self.apply(choice.clone())?;
                applied.push(choice);
            }
        }
        let Some(id) = self.live.find_checker_step(text) else {
            return Err(SessionError::Choice {
                step: self.step,
                message: format!("nothing pending matches the checker's step `{text}`"),
            });
        };
        let choice = Choice::Event { id };
        self.apply(choice.clone())?;
        applied.push(choice);
        Ok(applied)
    }

    /// Everything the page draws, with the latest [`VIEW_LOG_LINES`] trace lines.
    pub fn view(&self) -> View {
        let total = self.lines.len();
        self.view_window(total.saturating_sub(VIEW_LOG_LINES), total)
    }

    /// Everything the page draws, with the trace lines `log_from..log_to` (clamped).
    pub fn view_window(&self, log_from: usize, log_to: usize) -> View {
        let total = self.lines.len();
        let to = log_to.min(total);
        let from = log_from.min(to);
        let finished = self.finished();
        View {
            algorithm: self.scenario.algorithm.clone(),
            family: self.family.name(),
            seed: self.scenario.seed,
            step: self.step,
            steps_recorded: self.choices.len(),
            time_ns: self.live.now().as_nanos(),
            until_ns: self.live.until().as_nanos(),
            events: self.live.events(),
            quiet: self.live.quiet(),
            ended_by: self.live.ended(),
            fifo: self.scenario.network.fifo,
            layout: self.layout,
            ids: self.ids.clone(),
            edges: self.edges.clone(),
            processes: self.live.processes(),
            pending: self.live.pending(),
            log: self.entries(from, to),
            log_from: from,
            log_total: total,
            silent_steps: (1..=self.step)
                .filter_map(|s| {
                    let start = self.first_line[s - 1];
                    let end = self.first_line.get(s).copied().unwrap_or(total);
                    (start == end && (from..=to).contains(&start)).then(|| SilentStep {
                        step: s,
                        before: start,
                        label: match (self.live.ended(), &self.choices[s - 1]) {
                            (Some(why), Choice::Next) if s == self.step => {
                                format!("the run ends ({why})")
                            }
                            (_, choice) => silent_label(choice),
                        },
                    })
                })
                .collect(),
            violations: finished
                .as_ref()
                .map_or_else(|| self.live.violations().to_vec(), |f| f.violations.clone()),
            final_checks: finished.map(|f| f.ended_by),
            warnings: self.warnings.clone(),
            rule: self.rules.map(|(node, rules)| RuleView {
                node: node.0,
                rules: rules.as_slice().to_vec(),
            }),
        }
    }

    /// Trace lines `from..to` as log entries.
    fn entries(&self, from: usize, to: usize) -> Vec<LogEntry> {
        let bytes = self.live.trace();
        (from..to)
            .map(|i| {
                let start = self.lines[i];
                let end = self.lines.get(i + 1).copied().unwrap_or(self.scanned);
                let line: Value = serde_json::from_slice(&bytes[start..end]).unwrap_or_default();
                LogEntry {
                    step: self.first_line.partition_point(|&f| f <= i),
                    label: label(&line),
                    link: ["msg", "timer"]
                        .iter()
                        .any(|k| line.get(*k).is_some_and(crate::engine::is_link_plumbing)),
                    line,
                }
            })
            .collect()
    }
}

/// A value as `{:?}` writes it (`Transfer { to: 0, amount: 4 }`, `Multicast(2)`, `[1, 2]`),
/// as serde writes it in JSON (enums externally tagged: `{"Transfer":{"to":0,"amount":4}}`,
/// `{"Multicast":2}`; `Some(x)` as `x`, `None` as `null`); `None` if it is not one.
pub(crate) fn debug_to_json(text: &str) -> Option<Value> {
    let mut p = DebugText {
        s: text.as_bytes(),
        at: 0,
    };
    let v = p.value()?;
    p.blank();
    (p.at == p.s.len()).then_some(v)
}

struct DebugText<'a> {
    s: &'a [u8],
    at: usize,
}

impl DebugText<'_> {
    fn blank(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.blank();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> Option<String> {
        self.blank();
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.s[start..self.at]).into_owned())
    }

    /// Values separated by commas up to `close` (a trailing comma allowed).
    fn list(&mut self, close: u8) -> Option<Vec<Value>> {
        let mut out = Vec::new();
        while !self.eat(close) {
            out.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(out);
            }
        }
        Some(out)
    }

    fn value(&mut self) -> Option<Value> {
        self.blank();
        match *self.s.get(self.at)? {
            b'[' => {
                self.at += 1;
                Some(Value::Array(self.list(b']')?))
            }
            b'"' => {
                let start = self.at;
                self.at += 1;
                while *self.s.get(self.at)? != b'"' {
                    self.at += if self.s[self.at] == b'\\' { 2 } else { 1 };
                }
                self.at += 1;
                serde_json::from_slice(&self.s[start..self.at]).ok()
            }
            c if c == b'-' || c.is_ascii_digit() => {
                let start = self.at;
                self.at += 1;
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'-'))
                {
                    self.at += 1;
                }
                serde_json::from_slice(&self.s[start..self.at]).ok()
            }
            _ => {
                let name = self.word()?;
                if self.eat(b'(') {
                    let mut inner = self.list(b')')?;
                    let inner = match inner.len() {
                        1 => inner.pop()?,
                        _ => Value::Array(inner),
                    };
                    return Some(if name == "Some" {
                        inner
                    } else {
                        serde_json::json!({ name: inner })
                    });
                }
                if self.eat(b'{') {
                    let mut fields = serde_json::Map::new();
                    loop {
                        if self.eat(b'}') {
                            break;
                        }
                        let key = self.word()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        fields.insert(key, self.value()?);
                        if self.eat(b',') {
                            continue;
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        return None;
                    }
                    return Some(serde_json::json!({ name: fields }));
                }
                Some(match name.as_str() {
                    "None" => Value::Null,
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::String(name),
                })
            }
        }
    }
}

/// A trace line in a few words.
fn label(line: &Value) -> String {
    use crate::engine::label_of as short;
    let get = |k: &str| line.get(k).map(|v| v.to_string()).unwrap_or_default();
    let node = get("node");
    let event = line.get("event").and_then(Value::as_str).unwrap_or("");
    match event {
        "send" => format!(
            "{node} sends {} to {}",
            line.get("msg").map(short).unwrap_or_default(),
            get("to")
        ),
        "deliver" => format!(
            "{node} receives {} from {}{}",
            line.get("msg").map(short).unwrap_or_default(),
            get("from"),
            if line.get("duplicate") == Some(&Value::Bool(true)) {
                " (second copy)"
            } else {
                ""
            }
        ),
        "drop" => format!(
            "{} from {} to {node} lost ({})",
            line.get("kind")
                .and_then(Value::as_str)
                .unwrap_or("message"),
            get("from"),
            line.get("reason").and_then(Value::as_str).unwrap_or("")
        ),
        "timer" => format!(
            "{node}: timer {}",
            line.get("timer").map(short).unwrap_or_default()
        ),
        "input" => format!(
            "{node}: input {}",
            line.get("input").map(short).unwrap_or_default()
        ),
        "output" => format!(
            "{node}: output {}",
            line.get("output").map(short).unwrap_or_default()
        ),
        "start" => format!("{node} starts"),
        "crash" => format!("{node} crashes"),
        "recover" => format!("{node} recovers"),
        "partition" => format!("partition {}", get("groups")),
        "heal" => "the partition heals".into(),
        "adjust" => format!("{node} adjusts its clock by {} ns", get("delta_ns")),
        other => format!("{other} {node}"),
    }
}
