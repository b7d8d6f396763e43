//! A deterministic, seeded, discrete-event simulator for distsync's algorithms.
//!
//! A [`Scenario`] names an algorithm, a membership, a network model, a workload and scripted
//! faults; [`run`] plays it and returns a [`Report`]. One seed drives every random choice, so the
//! same scenario, seed and binary give the same report and trace, byte for byte.
//!
//! ```
//! use distsync_sim::{run, RunOptions, Scenario};
//! let scenario = Scenario::from_toml(r#"
//!     algorithm = "ricart-agrawala"
//!     nodes = 5
//!     [network]
//!     delay = "1ms"
//!     [workload]
//!     kind = "light"
//!     cs = "10ms"
//!     requests = 4
//! "#, "example.toml").unwrap();
//! let report = run(&scenario, RunOptions::default()).unwrap();
//! let mutex = report.sections.mutex.unwrap();
//! assert_eq!(mutex.entries, 20);
//! assert_eq!(mutex.messages_per_entry, 8.0);               // 2(N-1)
//! assert_eq!(mutex.response_time_ns.max, 12_000_000);      // 2T + E
//! assert!(report.violations.is_empty());
//! ```

pub mod app;
mod assumptions;
pub mod bench;
pub mod causality;
pub mod clocks;
mod defaults;
mod engine;
mod family;
mod fields;
pub mod guard;
mod huge_pages;
mod network;
mod prefetch;
pub mod queue;
mod report;
pub mod scenario;
pub mod session;
mod stats;
pub mod stress;
pub mod sweep;
pub mod template;
mod timer_lists;
mod trace;
mod value_json;

pub use defaults::default_scenario;
pub use engine::{Control, Engine, Harness};
pub use family::clock_sync::harness::{ClockHarness, ClockReport, DEFAULT_SYNC_INTERVAL};
pub use family::election::compare as compare_election;
pub use family::election::harness::{ElectionHarness, OVERHEAD_KINDS};
pub use family::multicast::harness::{MulticastHarness, MulticastReport, MulticastSpec};
pub use family::mutex::compare;
pub use family::mutex::harness::MutexHarness;
pub use family::snapshot::harness::{
    RecordedChannel, RecordedSnapshot, SnapshotHarness, SnapshotReport,
};
pub use fields::{example_file, reads, takes};
pub use report::{
    ElectionMessages, ElectionReport, FamilySections, LinkReport, MessageStats, MutexReport,
    Report, Stats, Violation,
};
pub use scenario::{
    Action, Checked, ClockSyncSpec, DelaySpec, Detect, ElectionSpec, MutexSpec, NetworkSpec,
    Scenario, ScenarioError, WorkloadKind, WorkloadSpec,
};
pub use session::{Choice, Session, SessionError, View};

use distsync_algorithms::link;
use distsync_algorithms::registry::{self, Entry};
use serde::Serialize;
use std::fmt;
use std::io::Write;

/// The largest membership a trace is written for (vector timestamps grow with N on every event).
pub const MAX_TRACED_NODES: usize = 2_000;

/// How to run a scenario.
#[derive(Default)]
pub struct RunOptions {
    /// Replaces the scenario's seed.
    pub seed: Option<u64>,
    /// Where to write the trace (JSON lines), if anywhere.
    pub trace: Option<Box<dyn Write>>,
    /// The scenario's file name, for error messages (`"<scenario>"` when empty).
    pub origin: String,
    /// Called now and then with the simulated time and the horizon, in nanoseconds, so that a
    /// terminal can show progress.
    pub progress: Option<Box<dyn FnMut(u64, u64)>>,
}

/// Why a run could not be made.
#[derive(Debug)]
pub enum SimError {
    /// The scenario is not valid for this algorithm.
    Scenario(ScenarioError),
    /// The trace could not be written.
    Trace(std::io::Error),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "{e}"),
            SimError::Trace(e) => write!(f, "cannot write the trace: {e}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> Self {
        SimError::Scenario(e)
    }
}

/// Checks and runs a scenario.
pub fn run(scenario: &Scenario, options: RunOptions) -> Result<Report, SimError> {
    let origin = if options.origin.is_empty() {
        "<scenario>".to_string()
    } else {
        options.origin.clone()
    };
    let seed = options.seed.unwrap_or(scenario.seed);
    let mode = Mode::Batch {
        trace: options.trace,
        progress: options.progress,
    };
    match build(scenario, &origin, seed, mode)? {
        Built::Report(report) => Ok(*report),
        Built::Stepper(_) => unreachable!("a batch run gives a report"),
    }
}

/// What to make of a checked scenario: a batch run, or an engine to step by hand.
enum Mode {
    Batch {
        trace: Option<Box<dyn Write>>,
        progress: Option<Box<dyn FnMut(u64, u64)>>,
    },
    Step,
}

/// What [`build`] made.
enum Built {
    Report(Box<Report>),
    Stepper(Box<dyn session::Stepper>),
}

/// Checks a scenario against the registry and its algorithm's family, and makes of it what
/// `mode` asks.
fn build(scenario: &Scenario, origin: &str, seed: u64, mode: Mode) -> Result<Built, SimError> {
    let origin = origin.to_string();
    let traced = match &mode {
        Mode::Batch { trace, .. } => trace.is_some(),
        Mode::Step => true,
    };
    let mut checked = scenario.check(&origin)?;
    let Some(entry) = registry::lookup(&scenario.algorithm) else {
        let hint = match registry::suggest(&scenario.algorithm) {
            Some(s) => format!("; did you mean `{s}`?"),
            None => String::new(),
        };
        return Err(SimError::Scenario(ScenarioError {
            origin,
            field: "algorithm".into(),
            message: format!(
                "unknown algorithm `{}`{hint} (`distsync list` shows every algorithm)",
                scenario.algorithm
            ),
        }));
    };
    if traced && checked.peers.len() > MAX_TRACED_NODES {
        return Err(SimError::Scenario(ScenarioError {
            origin,
            field: "nodes".into(),
            message: format!(
                "a trace carries a vector timestamp of every node on every event, so traces are limited to {MAX_TRACED_NODES} nodes; this scenario has {}",
                checked.peers.len()
            ),
        }));
    }
    // Timeouts the scenario leaves out follow the network's delay bound; given ones that are
    // too short for it are warned about (assumptions.rs).
    assumptions::derive_defaults(&mut checked.scenario, entry.family);
    let warnings = assumptions::warnings(&checked.scenario, entry.family);
    let plugin = family::plugin(entry.family);
    let refuse = |(field, what, owner): (String, &str, String)| {
        let family = entry.family.name();
        let article = if family.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        Err(SimError::Scenario(ScenarioError {
            origin: origin.clone(),
            field,
            message: format!(
                "{what} applies to {owner}, and `{}` is {article} {family} algorithm",
                scenario.algorithm
            ),
        }))
    };
    if let Some(misplaced) = fields::misplaced_first(&checked, plugin) {
        return refuse(misplaced);
    }
    if let Some((field, message)) = fields::foreign_field(scenario, entry) {
        return Err(SimError::Scenario(ScenarioError {
            origin: origin.clone(),
            field: field.into(),
            message,
        }));
    }
    if let Some(misplaced) = fields::misplaced(&checked, plugin) {
        return refuse(misplaced);
    }
    let run = FamilyRun {
        checked: &checked,
        origin: &origin,
        seed,
        mode,
    };
    let report = plugin.run(entry, run);
    report.map(|built| match built {
        Built::Report(mut r) => {
            r.warnings = warnings;
            Built::Report(r)
        }
        stepper => stepper,
    })
}

/// One run of any family: the checked scenario and the run's options, carried to the algorithm
/// type that the registry's visitor finds for the name. The family's plug-in
/// ([`family::Plugin::run`]) makes its harness and calls [`FamilyRun::run`].
struct FamilyRun<'a> {
    checked: &'a Checked,
    origin: &'a str,
    seed: u64,
    mode: Mode,
}

/// What a session needs of an algorithm: its state can be shown and it can move between threads.
trait Steppable: distsync_core::Algorithm + Serialize + Send + Clone + 'static {}
impl<A: distsync_core::Algorithm + Serialize + Send + Clone + 'static> Steppable for A {}

impl FamilyRun<'_> {
    fn run<A: Steppable, H: Harness<A> + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
        harness: H,
    ) -> Result<Built, SimError> {
        self.run_excluding::<A, H>(entry, harness, &[])
    }

    /// The run, with messages of `excluded` kinds left out of causal chains (and the reliable
    /// link's acknowledgements, which carry no causality of the algorithm).
    fn run_excluding<A: Steppable, H: Harness<A> + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
        harness: H,
        excluded: &[&'static str],
    ) -> Result<Built, SimError> {
        let traced = match &self.mode {
            Mode::Batch { trace, .. } => trace.is_some(),
            Mode::Step => true,
        };
        if matches!(self.mode, Mode::Batch { .. }) {
            // A batch run with nothing to do is refused (a stepped session may be driven by
            // hand), once the harness has refused whatever the family does not take.
            if let Some((field, message)) = assumptions::idle(self.checked, entry.family) {
                return Err(SimError::Scenario(ScenarioError {
                    origin: self.origin.to_string(),
                    field: field.into(),
                    message,
                }));
            }
        }
        let mut excluded = excluded.to_vec();
        if self.reliable() {
            excluded.extend([link::ACK, link::REACK]);
        }
        let engine = Engine::<A, _>::new(
            self.checked,
            entry.family.name(),
            self.seed,
            harness,
            traced,
        )
        .with_chain_excluding(&excluded);
        match self.mode {
            Mode::Batch { trace, progress } => engine
                .run(trace, progress)
                .map(|r| Built::Report(Box::new(r)))
                .map_err(SimError::Trace),
            Mode::Step => Ok(Built::Stepper(session::stepper(engine))),
        }
    }

    fn reliable(&self) -> bool {
        self.checked.scenario.network.reliable
    }
}
