//! `distsync compare --family election`: every election algorithm on rings of each size, with ids
//! in ascending, descending and random orders, every process starting or one starting; the
//! measured messages and completion time beside the figures of ORACLES.md.
//!
//! The network is constant-delay (T = 1ms) and FIFO. Ids are 0..n-1 laid out on the ring in the
//! chosen order; messages travel to the next id in that order, so "ascending" means the ids
//! increase along the direction of travel. "One starting" is the first process of the order.
//! The bully algorithm, which has no ring, is measured as ORACLES.md states it: the coordinator
//! (n-1) has crashed and the highest live process (best case) or the lowest (worst case)
//! detects it; every live process detecting at once is shown for information.

use crate::family::mutex::compare::Relation;
use crate::report::Report;
use crate::scenario::{DelaySpec, EventSpec, NetworkSpec, Scenario};
use crate::{run, RunOptions};
use distsync_algorithms::registry::{self, Family};
use distsync_core::NodeId;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const T_NS: f64 = 1_000_000.0;

/// How ids are laid out along the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Ids increase along the direction of travel.
    Ascending,
    /// Ids decrease along the direction of travel.
    Descending,
    /// A random permutation (from the seed).
    Random,
}

impl Order {
    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Order::Ascending => "ascending",
            Order::Descending => "descending",
            Order::Random => "random",
        }
    }
}

/// Who starts the election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Starters {
    /// Every (live) process at once.
    All,
    /// One process: the first of the order (bully: the lowest live id, its worst case).
    One,
    /// Bully only: the highest live process, its best case.
    Highest,
}

impl Starters {
    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Starters::All => "all",
            Starters::One => "one",
            Starters::Highest => "highest",
        }
    }
}

/// What to compare.
#[derive(Clone, Debug)]
pub struct ElectionCompareOptions {
    /// Algorithms to run (every election algorithm when empty).
    pub algorithms: Vec<String>,
    /// Ring sizes.
    pub nodes: Vec<u32>,
    /// Id orders (the bully algorithm ignores them and runs once per size).
    pub orders: Vec<Order>,
    /// The seed of the random orders and of every run.
    pub seed: u64,
}

impl Default for ElectionCompareOptions {
    fn default() -> Self {
        ElectionCompareOptions {
            algorithms: Vec::new(),
            nodes: vec![4, 8, 16],
            orders: vec![Order::Ascending, Order::Descending, Order::Random],
            seed: 1,
        }
    }
}

/// One measured figure beside its formula.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElectionRow {
    /// The registry name.
    pub algorithm: String,
    /// Ring size.
    pub nodes: u32,
    /// "ascending", "descending", "random" ("-" for the bully algorithm).
    pub order: &'static str,
    /// "all", "one" or "highest".
    pub starters: &'static str,
    /// What is measured: a message kind ("Election", "Coordinator", ...), "messages" (all of the
    /// algorithm's own), "completion_T", "rounds" or "longest_chain".
    pub metric: String,
    /// The measured figure; none if the run could not be made.
    pub measured: Option<f64>,
    /// The theory figure, where there is one.
    pub theory: Option<f64>,
    /// The formula, as ORACLES.md (or the algorithm's file) writes it.
    pub formula: String,
    /// How measured and theory should relate.
    pub relation: Relation,
    /// Whether they do; none where there is nothing to check.
    pub agrees: Option<bool>,
    /// Violations or errors of the run, if any.
    pub note: String,
}

fn agrees(measured: f64, theory: Option<f64>, relation: Relation) -> Option<bool> {
    let t = theory?;
    let eps = 1e-9 * t.abs().max(1.0);
    match relation {
        Relation::Exact => Some((measured - t).abs() <= eps),
        Relation::Approximate(tol) => Some((measured - t).abs() <= tol * t.abs().max(eps)),
        Relation::AtMost => Some(measured <= t + eps),
        Relation::Between(low) => Some(measured >= low - eps && measured <= t + eps),
        Relation::None => None,
    }
}

fn ring(n: u32, order: Order, seed: u64) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..n).collect();
    match order {
        Order::Ascending => {}
        Order::Descending => ids.reverse(),
        Order::Random => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ u64::from(n));
            for i in (1..ids.len()).rev() {
                ids.swap(i, rng.gen_range(0..=i));
            }
        }
    }
    ids
}

fn event(at_ms: u64, crash: Option<u32>, elect: Option<u32>) -> EventSpec {
    let spec = serde_json::json!({
        "at": format!("{at_ms}ms"),
        "crash": crash,
        "elect": elect,
    });
    serde_json::from_value(spec).expect("a valid event")
}

fn scenario(algorithm: &str, ids: &[u32], events: Vec<EventSpec>, seed: u64) -> Scenario {
    Scenario {
        name: Some(format!("compare {algorithm} n={}", ids.len())),
        algorithm: algorithm.to_string(),
        ids: Some(ids.iter().map(|&i| NodeId(i)).collect()),
        seed,
        until: Some(Duration::from_secs(36_000)),
        network: NetworkSpec {
            delay: DelaySpec::Constant(Duration::from_nanos(T_NS as u64)),
            fifo: true,
            ..NetworkSpec::default()
        },
        events,
        ..Scenario::default()
    }
}

fn log2_floor(n: u32) -> u32 {
    31 - n.leading_zeros()
}

fn log2_ceil(n: u32) -> u32 {
    log2_floor(n) + u32::from(!n.is_power_of_two())
}

/// The runs for one algorithm and size: (order, starters, scenario).
fn runs(
    algorithm: &str,
    n: u32,
    options: &ElectionCompareOptions,
) -> Vec<(&'static str, Starters, Scenario)> {
    let seed = options.seed;
    if algorithm == "bully" {
        let ids: Vec<u32> = (0..n).collect();
        let crash = event(0, Some(n - 1), None);
        let mut out = Vec::new();
        if n >= 2 {
            for (starters, who) in [
                (Starters::Highest, vec![n.saturating_sub(2)]),
                (Starters::One, vec![0]),
            ] {
                let mut events = vec![crash.clone()];
                events.extend(who.into_iter().map(|w| event(1, None, Some(w))));
                out.push(("-", starters, scenario(algorithm, &ids, events, seed)));
            }
            let mut events = vec![crash];
            events.extend((0..n - 1).map(|w| event(1, None, Some(w))));
            out.push(("-", Starters::All, scenario(algorithm, &ids, events, seed)));
        }
        return out;
    }
    let mut out = Vec::new();
    for &order in &options.orders {
        let ids = ring(n, order, seed);
        let all = ids.iter().map(|&i| event(0, None, Some(i))).collect();
        out.push((
            order.name(),
            Starters::All,
            scenario(algorithm, &ids, all, seed),
        ));
        let one = vec![event(0, None, Some(ids[0]))];
        out.push((
            order.name(),
            Starters::One,
            scenario(algorithm, &ids, one, seed),
        ));
    }
    out
}

/// The figures theory gives for one run: (metric, theory, formula, relation).
fn theory(
    algorithm: &str,
    n: u32,
    order: &str,
    starters: Starters,
) -> Vec<(&'static str, Option<f64>, String, Relation)> {
    let n_f = f64::from(n);
    let h_n: f64 = (1..=n).map(|k| 1.0 / f64::from(k)).sum();
    let info = |metric| (metric, None, "-".to_string(), Relation::None);
    let exact = |metric, v: f64, f: &str| (metric, Some(v), f.to_string(), Relation::Exact);
    let mut figures = match (algorithm, starters) {
        ("bully", Starters::Highest) => vec![
            exact("Coordinator", n_f - 2.0, "n-2 (the highest live detects)"),
            exact("messages", n_f - 1.0, "1 Election + n-2 Coordinator"),
        ],
        ("bully", Starters::One) => vec![
            exact("Election", n_f * (n_f - 1.0) / 2.0, "n(n-1)/2"),
            exact("Ok", (n_f - 1.0) * (n_f - 2.0) / 2.0, "(n-1)(n-2)/2"),
            exact("Coordinator", n_f - 2.0, "n-2"),
            exact(
                "messages",
                n_f * n_f - n_f - 1.0,
                "n^2-n-1: O(n^2) when the lowest detects",
            ),
        ],
        ("bully", Starters::All) => vec![info("messages")],
        ("chang-roberts", Starters::All) => {
            let election = match order {
                "descending" => exact("Election", n_f * (n_f + 1.0) / 2.0, "n(n+1)/2 (worst)"),
                "ascending" => exact("Election", 2.0 * n_f - 1.0, "2n-1 (best)"),
                // One random order is not an average: it is held to the range, beside n*H_n.
                _ => (
                    "Election",
                    Some(n_f * (n_f + 1.0) / 2.0),
                    format!("2n-1..n(n+1)/2; n*H_n = {:.1} on average", n_f * h_n),
                    Relation::Between(2.0 * n_f - 1.0),
                ),
            };
            vec![election, exact("Elected", n_f, "n")]
        }
        ("chang-roberts", _) => vec![
            (
                "Election",
                Some(2.0 * n_f - 1.0),
                "n..2n-1 (one starter)".to_string(),
                Relation::Between(n_f),
            ),
            exact("Elected", n_f, "n"),
        ],
        ("ring", Starters::All) => vec![exact(
            "messages",
            2.0 * n_f * n_f,
            "2n per initiator, n initiators",
        )],
        ("ring", _) => vec![exact("messages", 2.0 * n_f, "2n per initiator")],
        ("ring-active-list", _) => vec![
            exact("Elect", n_f * n_f, "n^2 (every elect goes round)"),
            exact("Elected", n_f, "n"),
        ],
        ("peterson", _) => vec![
            (
                "Election",
                Some(2.0 * n_f * f64::from(log2_floor(n)) + n_f),
                "at most 2n*floor(log2 n) + n".to_string(),
                Relation::AtMost,
            ),
            exact("Elected", n_f, "n"),
            (
                "rounds",
                Some(f64::from(log2_ceil(n))),
                "at most ceil(log2 n)".to_string(),
                Relation::AtMost,
            ),
            (
                "longest_chain",
                None,
                format!("seed: delay <= 2n-1 = {} (+ n Elected here)", 2 * n - 1),
                Relation::None,
            ),
        ],
        _ => vec![info("messages")],
    };
    if !figures.iter().any(|f| f.0 == "messages") {
        figures.push(info("messages"));
    }
    figures.push(info("completion_T"));
    figures
}

fn measure(report: &Report, metric: &str) -> Option<f64> {
    let e = report.sections.election.as_ref()?;
    match metric {
        "messages" => Some(e.messages.total as f64),
        "completion_T" => e.completion_time_ns.map(|ns| ns as f64 / T_NS),
        "rounds" => e.rounds.map(f64::from),
        "longest_chain" => Some(e.longest_chain as f64),
        kind => Some(e.messages.by_kind.get(kind).copied().unwrap_or(0) as f64),
    }
}

/// The election algorithms of the registry.
pub fn election_algorithms() -> Vec<&'static str> {
    registry::entries()
        .into_iter()
        .filter(|e| e.family == Family::Election)
        .map(|e| e.name)
        .collect()
}

/// Runs the comparison; `progress(done, total)` is called after each run.
pub fn compare_election(
    options: &ElectionCompareOptions,
    mut progress: impl FnMut(usize, usize) + Send,
) -> Vec<ElectionRow> {
    let algorithms: Vec<String> = if options.algorithms.is_empty() {
        election_algorithms()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        options.algorithms.clone()
    };
    let plan: Vec<(String, u32, &'static str, Starters, Scenario)> = algorithms
        .iter()
        .flat_map(|a| {
            options.nodes.iter().flat_map(move |&n| {
                runs(a, n, options)
                    .into_iter()
                    .map(move |(o, s, sc)| (a.clone(), n, o, s, sc))
            })
        })
        .collect();
    // The runs are independent: on every core (rayon), rows in the plan's order.
    let total = plan.len();
    let done = AtomicUsize::new(0);
    let progress = Mutex::new(&mut progress);
    let one = |(algorithm, n, order, starters, scenario): &(
        String,
        u32,
        &'static str,
        Starters,
        Scenario,
    )|
     -> Vec<ElectionRow> {
        let (n, order, starters) = (*n, *order, *starters);
        let mut rows = Vec::new();
        let result = run(
            scenario,
            RunOptions {
                origin: "compare".into(),
                ..RunOptions::default()
            },
        );
        for (metric, theory, formula, relation) in theory(algorithm, n, order, starters) {
            let (measured, note) = match &result {
                Ok(report) => (
                    measure(report, metric),
                    report
                        .violations
                        .iter()
                        .map(|v| v.property.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                Err(e) => (None, e.to_string()),
            };
            let ok = measured
                .and_then(|v| agrees(v, theory, relation))
                .map(|a| a && note.is_empty());
            rows.push(ElectionRow {
                algorithm: algorithm.clone(),
                nodes: n,
                order,
                starters: starters.name(),
                metric: metric.to_string(),
                measured,
                theory,
                formula,
                relation,
                agrees: ok,
                note,
            });
        }
        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Ok(mut progress) = progress.lock() {
            (*progress)(finished, total);
        }
        rows
    };
    plan.par_iter().map(one).collect::<Vec<_>>().concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_with_a_formula_agrees_on_small_rings() {
        let rows = compare_election(
            &ElectionCompareOptions {
                nodes: vec![3, 8],
                ..ElectionCompareOptions::default()
            },
            |_, _| {},
        );
        let checked: Vec<&ElectionRow> = rows.iter().filter(|r| r.theory.is_some()).collect();
        assert!(checked.len() > 40, "{}", checked.len());
        for r in &checked {
            assert_eq!(r.agrees, Some(true), "{r:?}");
        }
        // Chang-Roberts' worst and best cases, exactly.
        let cr = |order: &str| {
            rows.iter()
                .find(|r| {
                    r.algorithm == "chang-roberts"
                        && r.nodes == 8
                        && r.order == order
                        && r.starters == "all"
                        && r.metric == "Election"
                })
                .unwrap()
                .measured
        };
        assert_eq!(cr("descending"), Some(36.0));
        assert_eq!(cr("ascending"), Some(15.0));
        assert!(rows
            .iter()
            .any(|r| r.metric == "completion_T" && r.measured.is_some()));
    }
}
