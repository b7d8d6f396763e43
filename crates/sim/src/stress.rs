//! Stress: many randomized runs of each algorithm, looking for a violation, a hang or a storm.
//!
//! [`stress`] draws scenarios (sizes, delays, workloads, fault scripts) from its own seed, runs
//! them in parallel (rayon) and gathers, per algorithm, the runs, the events, the runs that broke
//! each monitored property and every failing scenario, smallest first, ready to be written to disk
//! ([`write_failures`]) and reproduced with `distsync run FILE`. Each run's scenario depends only
//! on the stress seed, the algorithm's name and the run's index, so the result is the same
//! whatever the number of threads.
//!
//! By default each algorithm is stressed within the assumptions it states ([`claims`]): FIFO
//! links where it needs them, no loss or duplication unless it claims to survive them, crashes
//! only for algorithms that claim to survive crashes. Asking for faults explicitly
//! ([`StressOptions::faults`]) applies exactly those, assumptions or not: that is how one sees
//! an algorithm break.
//!
//! With [`StressOptions::draw_assumptions`] each run also draws the options the documented
//! assumptions depend on: an election's failure detector on or off, links that are not FIFO for
//! an algorithm that needs them, reliable links (with recoveries kept). Every failure is then
//! told apart ([`Failure::outside`]): outside the assumptions, when the run broke one and only
//! properties the docs name at risk without it, or inside them, a bug ([`AlgorithmResult::inside`]).
//!
//! ```
//! use distsync_sim::stress::{stress, StressOptions};
//! let options = StressOptions::new(vec!["ricart-agrawala".into()], 4);
//! let result = stress(&options, &|_, _| {}).unwrap();
//! assert_eq!(result.algorithms[0].runs, 4);
//! assert!(!result.found());
//! ```

use crate::family::{self, at, ms, Draw};
use crate::guard::LimitsSpec;
use crate::report::Violation;
use crate::scenario::{DelaySpec, NetworkSpec, Scenario};
use crate::{run, RunOptions, SimError};
use distsync_algorithms::registry::{self, Entry, Family};
use distsync_core::multicast::Order;
use distsync_core::NodeId;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

pub use crate::family::claims_of as claims;
pub use crate::family::{Claims, Fault, Outside};

/// What to stress and how.
#[derive(Clone, Debug)]
pub struct StressOptions {
    /// Registry names of the algorithms.
    pub algorithms: Vec<String>,
    /// Runs per algorithm.
    pub seeds: u64,
    /// The faults to apply to every algorithm; `None`: each algorithm's claims.
    pub faults: Option<Vec<Fault>>,
    /// The range of membership sizes; `None`: a range suited to each family.
    pub nodes: Option<(u32, u32)>,
    /// The seed every scenario is drawn from.
    pub seed: u64,
    /// Threads; `None`: one per core.
    pub jobs: Option<usize>,
    /// Multicast orders to monitor beyond those the algorithm promises.
    pub check: Vec<Order>,
    /// The most events one run may take before it is stopped as a runaway.
    pub max_events: u64,
    /// Run every scenario over reliable links (`[network] reliable = true`).
    pub reliable: bool,
    /// Draw, per run, the options the documented assumptions depend on (an election's failure
    /// detector, FIFO links where the algorithm needs them, reliable links), keeping
    /// recoveries whatever the links; see the module's documentation.
    pub draw_assumptions: bool,
}

/// The default cap on one stress run's events.
pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000;

impl StressOptions {
    /// `seeds` runs of each of `algorithms` under their claims, from seed 1.
    pub fn new(algorithms: Vec<String>, seeds: u64) -> StressOptions {
        StressOptions {
            algorithms,
            seeds,
            faults: None,
            nodes: None,
            seed: 1,
            jobs: None,
            check: Vec::new(),
            max_events: DEFAULT_MAX_EVENTS,
            reliable: false,
            draw_assumptions: false,
        }
    }
}

/// One failing run.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The algorithm.
    pub algorithm: String,
    /// Its index among the algorithm's runs.
    pub run: u64,
    /// The membership size.
    pub nodes: usize,
    /// The scenario's seed.
    pub seed: u64,
    /// Events the run processed.
    pub events: u64,
    /// The properties that failed, each once, in the order first seen.
    pub properties: Vec<String>,
    /// The first violation.
    pub first: Violation,
    /// The documented assumptions the run did not meet ([`outside`]); empty: it ran inside
    /// them.
    pub outside: Vec<Outside>,
    /// Whether every property the run broke is one the docs name at risk without one of
    /// [`Failure::outside`]'s assumptions: a failure outside the assumptions. `false`: a bug
    /// (inside the assumptions, or a property the docs do not name).
    pub explained: bool,
    /// Where the scenario was written ([`write_failures`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The command that reproduces the failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
    /// The scenario that failed.
    #[serde(skip)]
    pub scenario: Scenario,
}

/// One algorithm's results.
#[derive(Clone, Debug, Serialize)]
pub struct AlgorithmResult {
    /// The algorithm.
    pub algorithm: String,
    /// Its family.
    pub family: String,
    /// The faults its scenarios were drawn with.
    pub faults: Vec<Fault>,
    /// Runs made.
    pub runs: u64,
    /// Events processed over all runs.
    pub events: u64,
    /// Runs that broke each property (a run breaking two counts under both).
    pub violations: BTreeMap<String, u64>,
    /// Runs that hung: deadlock, starvation, no termination, an incomplete snapshot, an
    /// undelivered multicast.
    pub hangs: u64,
    /// Runs stopped by the runaway guard (a storm, or a cap reached).
    pub storms: u64,
    /// Runs with any violation of a promised property.
    pub failed: u64,
    /// Of [`AlgorithmResult::failed`], the runs that broke only properties the docs name at
    /// risk under an assumption the run did not meet, by assumption (a run outside two counts
    /// under both).
    pub outside: BTreeMap<String, u64>,
    /// Of [`AlgorithmResult::failed`], the runs that are bugs: inside the assumptions, or
    /// breaking a property no broken assumption names.
    pub inside: u64,
    /// With [`StressOptions::draw_assumptions`]: the runs drawn with each option ("detector
    /// on", "detector off", "not FIFO", "reliable links"), and how many of them failed (a run
    /// that broke only properties the algorithm does not promise counts as failed here).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub drawn: BTreeMap<String, Drawn>,
    /// Runs that broke only properties the algorithm does not promise ([`Claims::not_promised`]),
    /// by property.
    pub known: BTreeMap<String, u64>,
    /// Every failing run: the bugs first, then the smallest membership first (then the fewest
    /// events).
    pub failures: Vec<Failure>,
}

/// Runs drawn with one option, and how many failed ([`AlgorithmResult::drawn`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Drawn {
    /// Runs drawn with it.
    pub runs: u64,
    /// Of those, the runs with any violation.
    pub failed: u64,
}

/// The result of a stress.
#[derive(Clone, Debug, Serialize)]
pub struct StressResult {
    /// The stress seed.
    pub seed: u64,
    /// Runs per algorithm.
    pub seeds: u64,
    /// Per algorithm, in the order asked.
    pub algorithms: Vec<AlgorithmResult>,
}

impl StressResult {
    /// Whether any run of any algorithm failed.
    pub fn found(&self) -> bool {
        self.algorithms.iter().any(|a| a.failed > 0)
    }

    /// Whether any run failed inside the documented assumptions (or broke a property the
    /// docs do not name at risk): a bug.
    pub fn bugs(&self) -> bool {
        self.algorithms.iter().any(|a| a.inside > 0)
    }
}

/// Where a run of `scenario` that broke `properties` stands: the documented assumptions the
/// scenario does not meet ([`outside`]), and whether they explain the failure, that is, the
/// run broke one and every property it broke is one the docs name at risk without one of them
/// (or one the algorithm does not promise). `false`: a bug.
pub fn classify(scenario: &Scenario, properties: &[String]) -> (Vec<Outside>, bool) {
    let broken = outside(scenario);
    let not_promised =
        registry::lookup(&scenario.algorithm).map_or(&[][..], |e| claims(e).not_promised);
    let explained = !broken.is_empty()
        && properties.iter().all(|p| {
            not_promised.contains(&p.as_str())
                || broken
                    .iter()
                    .any(|o| o.at_risk.is_empty() || o.at_risk.contains(&p.as_str()))
        });
    (broken, explained)
}

/// The documented assumptions `scenario` does not meet, each with the properties the docs name
/// at risk (what `distsync run` warns about): an election without its failure detector, links
/// that are not FIFO for an algorithm that needs them, a fault it does not [claim](claims) to
/// survive, recoveries over reliable links for an algorithm that does not survive them there.
/// Empty for an unknown algorithm.
pub fn outside(scenario: &Scenario) -> Vec<Outside> {
    match registry::lookup(&scenario.algorithm) {
        Some(entry) => crate::assumptions::outside(scenario, entry.family),
        None => Vec::new(),
    }
}

/// Properties whose breach means the run hung rather than did something wrong.
pub const HANG_PROPERTIES: [&str; 5] = [
    "deadlock",
    "starvation",
    "termination",
    "snapshot-incomplete",
    "undelivered",
];
/// Properties of the runaway guard.
pub const STORM_PROPERTIES: [&str; 2] = ["storm", "runaway"];

/// A stress that cannot be made.
#[derive(Debug)]
pub struct StressError(pub String);

impl std::fmt::Display for StressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StressError {}

/// The seed of run `index` of `algorithm`: a mix of the stress seed, the name and the index.
pub fn run_seed(stress_seed: u64, algorithm: &str, index: u64) -> u64 {
    // FNV-1a of the name, then SplitMix64 finalization of the combination.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in algorithm.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = stress_seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(h)
        .wrapping_add(index.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % 1_000_000_000_000
}

/// The membership sizes a family is stressed with by default.
pub fn default_nodes(family: Family) -> (u32, u32) {
    family::plugin(family).stress_nodes()
}

/// Draws the scenario of one run.
pub fn generate(
    entry: &Entry,
    faults: &[Fault],
    nodes: (u32, u32),
    seed: u64,
    options: &StressOptions,
) -> Scenario {
    let has = |f: Fault| faults.contains(&f);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = rng.gen_range(nodes.0..=nodes.1.max(nodes.0));
    let delay = if has(Fault::Delay) {
        match rng.gen_range(0..3) {
            0 => DelaySpec::Constant(ms(&mut rng, 100, 5_000)),
            1 => {
                let lo = ms(&mut rng, 100, 3_000);
                DelaySpec::Uniform(lo, lo + ms(&mut rng, 0, 7_000))
            }
            _ => DelaySpec::Exponential(ms(&mut rng, 200, 3_000)),
        }
    } else if has(Fault::Reorder) {
        // Non-FIFO links reorder only messages whose delays differ: reordering asked for
        // without `delay` gets delays that vary (uniform or exponential), not a constant.
        if rng.gen_bool(0.5) {
            let lo = ms(&mut rng, 100, 3_000);
            DelaySpec::Uniform(lo, lo + ms(&mut rng, 1_000, 7_000))
        } else {
            DelaySpec::Exponential(ms(&mut rng, 200, 3_000))
        }
    } else {
        DelaySpec::Constant(Duration::from_millis(1))
    };
    let network = NetworkSpec {
        delay,
        fifo: !has(Fault::Reorder),
        loss: if has(Fault::Loss) {
            rng.gen_range(0.01..0.15)
        } else {
            0.0
        },
        duplicate: if has(Fault::Duplicate) {
            rng.gen_range(0.01..0.15)
        } else {
            0.0
        },
        reliable: options.reliable,
    };
    let bound = delay.bound();
    // A timeout comfortably above the worst round trip, so that the algorithm runs within its
    // assumptions (a shorter one is a fault of its own, not one this stress asked for).
    let timeout = (bound * 3).max(Duration::from_millis(10));
    let mut scenario = Scenario {
        name: Some(format!("stress {} #{}", entry.name, seed)),
        algorithm: entry.name.to_string(),
        nodes: Some(n),
        seed,
        network,
        limits: Some(LimitsSpec {
            max_events: Some(options.max_events),
            ..LimitsSpec::default()
        }),
        ..Scenario::default()
    };
    // The window in which faults are scripted.
    let window = Duration::from_millis(300);
    let mut events = Vec::new();
    let plugin = family::plugin(entry.family);
    let draw = Draw {
        entry,
        n,
        delay: &delay,
        bound,
        timeout,
        check: &options.check,
    };
    plugin.stress_draw(&draw, &mut rng, &mut scenario, &mut events);
    let ids: Vec<NodeId> = match &scenario.ids {
        Some(ids) => ids.clone(),
        None => (0..n).map(NodeId).collect(),
    };
    // Within the claims, over reliable links, no recoveries for what does not survive them
    // there ([`Claims::recoveries_over_reliable_links`]); asked-for faults apply as they are.
    let recoveries = options.draw_assumptions
        || !(options.reliable
            && options.faults.is_none()
            && !claims(entry).recoveries_over_reliable_links);
    if has(Fault::Crash) && n >= 2 {
        for _ in 0..rng.gen_range(1..=(n / 2).max(1)) {
            let victim = *ids.choose(&mut rng).expect("members");
            let down = ms(&mut rng, 0, window.as_micros() as u64);
            let mut e = at(down);
            e.crash = Some(victim);
            events.push(e);
            if rng.gen_bool(0.5) {
                let mut e = at(down + ms(&mut rng, 1_000, 200_000));
                e.recover = Some(victim);
                // Drawn either way, so that the rest of the scenario is the same.
                if recoveries {
                    events.push(e);
                }
            }
        }
    }
    if has(Fault::Partition) && n >= 2 {
        let mut shuffled = ids.clone();
        shuffled.shuffle(&mut rng);
        let cut = rng.gen_range(1..n as usize);
        let start = ms(&mut rng, 0, window.as_micros() as u64);
        let mut e = at(start);
        e.partition = Some(vec![shuffled[..cut].to_vec(), shuffled[cut..].to_vec()]);
        events.push(e);
        let mut e = at(start + ms(&mut rng, 1_000, 200_000));
        e.heal = Some(true);
        events.push(e);
    }
    plugin.stress_settle(&draw, &mut scenario, &events);
    events.sort_by_key(|e| e.at);
    scenario.events = events;
    if options.draw_assumptions {
        // From a generator of their own, so that the rest of the scenario is the one drawn
        // without them.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6a09_e667_f3bc_c908);
        plugin.stress_assumptions(&mut rng, &mut scenario);
        if entry.needs_fifo && rng.gen_bool(0.5) {
            scenario.network.fifo = false;
        }
        if rng.gen_bool(0.25) {
            scenario.network.reliable = true;
        }
    }
    scenario
}

/// One run's outcome, as [`stress_runs`] returns it and a sharded campaign's results file keeps
/// it: [`merge_runs`] turns the records of every run, from any number of shards, into the
/// [`StressResult`] the unsharded campaign gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The algorithm.
    pub algorithm: String,
    /// The run's index among the algorithm's runs.
    pub run: u64,
    /// Events the run processed.
    pub events: u64,
    /// The properties that failed, each once, in the order first seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<String>,
    /// The first violation, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<Violation>,
    /// Why the simulator refused the run's scenario, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What `--draw-assumptions` drew for this run outside the assumptions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<String>,
}

/// What `draw_assumptions` drew for `scenario` outside the assumptions (and not asked for by
/// the options), as [`AlgorithmResult::drawn`] counts it.
fn drawn(entry: &Entry, scenario: &Scenario, options: &StressOptions) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !options.draw_assumptions {
        return out;
    }
    out.extend(family::plugin(entry.family).drawn(scenario));
    if entry.needs_fifo && !scenario.network.fifo {
        out.push("not FIFO");
    }
    if scenario.network.reliable && !options.reliable {
        out.push("reliable links");
    }
    out
}

/// The algorithms of a stress, each with the faults and sizes its scenarios are drawn with.
type Plan = Vec<(&'static Entry, Vec<Fault>, (u32, u32))>;

/// Resolves the names and checks the options.
fn plan(options: &StressOptions) -> Result<Plan, StressError> {
    if options.seeds == 0 {
        return Err(StressError("--seeds: expected at least 1 run".into()));
    }
    if options.algorithms.is_empty() {
        return Err(StressError("no algorithm to stress".into()));
    }
    let mut entries = Vec::new();
    for name in &options.algorithms {
        let Some(entry) = registry::lookup(name) else {
            let hint = registry::suggest(name)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Err(StressError(format!(
                "--algo: unknown algorithm `{name}`{hint} (`distsync list` shows every algorithm)"
            )));
        };
        if !entries.iter().any(|e: &&Entry| e.name == entry.name) {
            entries.push(entry);
        }
    }
    if !options.check.is_empty() {
        if let Some(e) = entries
            .iter()
            .find(|e| !family::plugin(e.family).checks_orders())
        {
            return Err(StressError(format!(
                "--check: multicast orders apply to multicast algorithms, and `{}` is a {} algorithm",
                e.name,
                e.family.name()
            )));
        }
    }
    if let Some((lo, hi)) = options.nodes {
        if lo == 0 || lo > hi {
            return Err(StressError(format!(
                "--nodes: expected a range A..B with 1 <= A <= B, got {lo}..{hi}"
            )));
        }
    }
    Ok(entries
        .iter()
        .map(|e| {
            let faults = options.faults.clone().unwrap_or_else(|| {
                let mut f = claims(e).faults();
                if options.reliable {
                    // Reliable FIFO links mask reordering, loss and duplication. Not loss for
                    // algorithms that detect crashes by timeouts (elections, and Berkeley's
                    // election of its master): a retransmission delays a message past any
                    // timeout, so over lossy links they run outside their assumptions.
                    let timed = family::plugin(e.family).times_out(e);
                    for masked in [Fault::Reorder, Fault::Loss, Fault::Duplicate] {
                        if timed && masked == Fault::Loss {
                            continue;
                        }
                        if !f.contains(&masked) {
                            f.push(masked);
                        }
                    }
                    f.sort();
                }
                f
            });
            let nodes = options.nodes.unwrap_or_else(|| default_nodes(e.family));
            (*e, faults, nodes)
        })
        .collect())
}

/// Resolves the names, checks the options, draws and runs every scenario; `progress(done, total)`
/// is called as runs finish (from any thread).
pub fn stress(
    options: &StressOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<StressResult, StressError> {
    let records = stress_runs(options, &|_| true, &AtomicBool::new(false), progress)?;
    merge_runs(options, records)
}

/// Runs the runs whose index `select` takes (of every algorithm), in parallel, and returns their
/// records in order (algorithm by algorithm, each by run index). That is one shard of a campaign
/// split by run index: each run depends only on the stress seed, the algorithm and the index.
/// Once `stop` is set, no further run starts (the runs under way finish): the records are those
/// of the runs made. `progress(done, total)` counts the selected runs.
pub fn stress_runs(
    options: &StressOptions,
    select: &(dyn Fn(u64) -> bool + Sync),
    stop: &AtomicBool,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<RunRecord>, StressError> {
    let plans = plan(options)?;
    let jobs: Vec<(usize, u64)> = (0..plans.len())
        .flat_map(|a| {
            (0..options.seeds)
                .filter(|&i| select(i))
                .map(move |i| (a, i))
        })
        .collect();
    let total = jobs.len() as u64;
    let done = AtomicU64::new(0);
    let work = || -> Vec<Option<RunRecord>> {
        jobs.par_iter()
            .map(|&(a, i)| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let (entry, faults, nodes) = &plans[a];
                let seed = run_seed(options.seed, entry.name, i);
                let scenario = generate(entry, faults, *nodes, seed, options);
                let result = run(
                    &scenario,
                    RunOptions {
                        origin: format!("stress run {i} of {}", entry.name),
                        ..RunOptions::default()
                    },
                );
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(n, total);
                let mut record = RunRecord {
                    algorithm: entry.name.to_string(),
                    run: i,
                    events: 0,
                    properties: Vec::new(),
                    first: None,
                    error: None,
                    drawn: Vec::new(),
                };
                match result {
                    Ok(report) => {
                        record.events = report.events_processed;
                        for v in &report.violations {
                            if !record.properties.contains(&v.property) {
                                record.properties.push(v.property.clone());
                            }
                        }
                        record.first = report.violations.into_iter().next();
                        record.drawn = drawn(entry, &scenario, options)
                            .into_iter()
                            .map(String::from)
                            .collect();
                    }
                    Err(SimError::Scenario(e)) => record.error = Some(e.to_string()),
                    Err(e) => record.error = Some(e.to_string()),
                }
                Some(record)
            })
            .collect()
    };
    let records = match options.jobs {
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(j.max(1))
            .build()
            .map_err(|e| StressError(format!("--jobs: cannot start {j} threads: {e}")))?
            .install(work),
        None => work(),
    };
    Ok(records.into_iter().flatten().collect())
}

/// The result of a campaign from the records of every one of its runs, in any order (the
/// records of all the shards of a split campaign): the same as [`stress`] gives. Refuses records
/// that are not exactly the campaign's runs, each once.
pub fn merge_runs(
    options: &StressOptions,
    records: Vec<RunRecord>,
) -> Result<StressResult, StressError> {
    let plans = plan(options)?;
    let mut slots: Vec<Vec<Option<RunRecord>>> = plans
        .iter()
        .map(|_| vec![None; options.seeds as usize])
        .collect();
    for record in records {
        let Some(a) = plans.iter().position(|p| p.0.name == record.algorithm) else {
            return Err(StressError(format!(
                "a run of `{}`, which the campaign does not stress",
                record.algorithm
            )));
        };
        let Some(slot) = slots[a].get_mut(record.run as usize) else {
            return Err(StressError(format!(
                "run {} of {}, past the campaign's {} runs",
                record.run, record.algorithm, options.seeds
            )));
        };
        if slot.is_some() {
            return Err(StressError(format!(
                "run {} of {} twice",
                record.run, record.algorithm
            )));
        }
        *slot = Some(record);
    }
    for (a, runs) in slots.iter().enumerate() {
        if let Some(i) = runs.iter().position(Option::is_none) {
            let missing = runs.iter().filter(|r| r.is_none()).count();
            return Err(StressError(format!(
                "{missing} run{} of {} missing (the first: run {i})",
                if missing == 1 { "" } else { "s" },
                plans[a].0.name
            )));
        }
    }
    aggregate(options, &plans, slots.into_iter().flatten().flatten())
}

/// The result of the runs made so far of a campaign cut short (their records as
/// [`stress_runs`] returns them): each algorithm's `runs` counts only those.
pub fn partial_result(
    options: &StressOptions,
    records: Vec<RunRecord>,
) -> Result<StressResult, StressError> {
    let plans = plan(options)?;
    aggregate(options, &plans, records)
}

/// Gathers the records, algorithm by algorithm in the plan's order and each by run index.
fn aggregate(
    options: &StressOptions,
    plans: &Plan,
    records: impl IntoIterator<Item = RunRecord>,
) -> Result<StressResult, StressError> {
    let mut algorithms: Vec<AlgorithmResult> = plans
        .iter()
        .map(|(e, faults, _)| AlgorithmResult {
            algorithm: e.name.to_string(),
            family: e.family.name().to_string(),
            faults: faults.clone(),
            runs: 0,
            events: 0,
            violations: BTreeMap::new(),
            hangs: 0,
            storms: 0,
            failed: 0,
            outside: BTreeMap::new(),
            inside: 0,
            drawn: BTreeMap::new(),
            known: BTreeMap::new(),
            failures: Vec::new(),
        })
        .collect();
    for record in records {
        let Some(a) = plans.iter().position(|p| p.0.name == record.algorithm) else {
            continue;
        };
        let i = record.run;
        let r = &mut algorithms[a];
        if let Some(message) = record.error {
            // The generator drew a scenario the simulator refuses: for explicit faults the
            // algorithm's family does not take (a crash in a snapshot), or sizes it does not
            // run with; either way the user's options, not a finding.
            return Err(StressError(format!(
                "{} cannot be stressed so: {message}",
                r.algorithm
            )));
        }
        r.runs += 1;
        r.events += record.events;
        for d in &record.drawn {
            let count = r.drawn.entry(d.clone()).or_default();
            count.runs += 1;
            count.failed += u64::from(record.first.is_some());
        }
        let Some(first) = record.first else {
            continue;
        };
        let properties = record.properties;
        let not_promised = claims(plans[a].0).not_promised;
        if properties
            .iter()
            .all(|p| not_promised.contains(&p.as_str()))
        {
            for p in properties {
                *r.known.entry(p).or_default() += 1;
            }
            continue;
        }
        r.failed += 1;
        for p in &properties {
            *r.violations.entry(p.clone()).or_default() += 1;
        }
        if properties
            .iter()
            .any(|p| HANG_PROPERTIES.contains(&p.as_str()))
        {
            r.hangs += 1;
        }
        if properties
            .iter()
            .any(|p| STORM_PROPERTIES.contains(&p.as_str()))
        {
            r.storms += 1;
        }
        let (entry, faults, nodes) = &plans[a];
        let seed = run_seed(options.seed, entry.name, i);
        let scenario = generate(entry, faults, *nodes, seed, options);
        let (broken, explained) = classify(&scenario, &properties);
        if explained {
            for o in &broken {
                *r.outside.entry(o.assumption.clone()).or_default() += 1;
            }
        } else {
            r.inside += 1;
        }
        r.failures.push(Failure {
            algorithm: r.algorithm.clone(),
            run: i,
            nodes: scenario
                .ids
                .as_ref()
                .map_or(scenario.nodes.unwrap_or(0) as usize, |ids| ids.len()),
            seed,
            events: record.events,
            properties,
            first,
            outside: broken,
            explained,
            file: None,
            reproduce: None,
            scenario,
        });
    }
    for r in &mut algorithms {
        // Bugs first, so that the ones written to disk include them.
        r.failures
            .sort_by_key(|f| (f.explained, f.nodes, f.events, f.run));
    }
    Ok(StressResult {
        seed: options.seed,
        seeds: options.seeds,
        algorithms,
    })
}

/// The scenario as a TOML file's text, with a comment saying where it came from.
pub fn scenario_text(failure: &Failure) -> Result<String, StressError> {
    let body = toml::to_string(&failure.scenario)
        .map_err(|e| StressError(format!("cannot write a scenario as TOML: {e}")))?;
    let outside: String = failure
        .outside
        .iter()
        .map(|o| format!("# Outside the assumptions: {} ({}).\n", o.assumption, o.doc))
        .collect();
    Ok(format!(
        "# Found by `distsync stress`: run {} of {} broke {}.\n# {}\n{outside}{body}",
        failure.run,
        failure.algorithm,
        failure.properties.join(", "),
        failure.first.detail.replace('\n', " ")
    ))
}

/// Writes the first `per_algorithm` failures of each algorithm (the smallest) to `dir` as
/// scenario files, and fills in their `file` and `reproduce` fields.
pub fn write_failures(
    result: &mut StressResult,
    dir: &Path,
    per_algorithm: usize,
) -> Result<(), StressError> {
    if !result.found() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| StressError(format!("cannot create {}: {e}", dir.display())))?;
    for a in &mut result.algorithms {
        for f in a.failures.iter_mut().take(per_algorithm) {
            let path: PathBuf = dir.join(format!("{}-n{}-run{}.toml", f.algorithm, f.nodes, f.run));
            std::fs::write(&path, scenario_text(f)?)
                .map_err(|e| StressError(format!("cannot write {}: {e}", path.display())))?;
            f.reproduce = Some(format!("distsync run {}", path.display()));
            f.file = Some(path.display().to_string());
        }
    }
    Ok(())
}
