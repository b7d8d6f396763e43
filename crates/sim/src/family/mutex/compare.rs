//! `distsync compare`: every mutual-exclusion algorithm on the same workloads, the measured
//! figures beside the formulas of ORACLES.md (seed 003's comparison table, reproduced by
//! measurement and extended to every algorithm).
//!
//! The network is constant-delay (T = 1ms) and FIFO, the critical section lasts E = 10 T. Light
//! load is one request in the system at a time; heavy load keeps every node requesting. Where a
//! formula depends on who held the token or how far away it was (Suzuki-Kasami, the
//! Ricart-Agrawala token algorithm, Raymond, Maekawa's quorum sizes), the theory figure is
//! computed from the run's actual sequence of entries, so that it can be exact. Where the
//! literature's figure is a limit or an average and the rules give an exact count (central's 4,
//! the token algorithms' N under heavy load, the token ring's 1, Singhal's N-1 under light load),
//! the theory figure is the exact count, and docs/oracles.md gives both.

use crate::report::Report;
use crate::scenario::{DelaySpec, NetworkSpec, Scenario, WorkloadKind, WorkloadSpec};
use crate::{run, RunOptions};
use distsync_algorithms::mutex::{quorum, raymond, singhal_token};
use distsync_algorithms::registry::{self, Family};
use distsync_core::{NodeId, Params, Peers};
use rayon::prelude::*;
use serde::Serialize;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const T_NS: f64 = 1_000_000.0;
const E_OVER_T: f64 = 10.0;

/// Which loads to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Load {
    /// One request in the system at a time.
    Light,
    /// Every node always has a request pending.
    Heavy,
}

impl Load {
    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Load::Light => "light",
            Load::Heavy => "heavy",
        }
    }
}

/// What to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Algorithms to run (all of the family when empty).
    pub algorithms: Vec<String>,
    /// Membership sizes.
    pub nodes: Vec<u32>,
    /// Loads.
    pub loads: Vec<Load>,
    /// The seed of every run.
    pub seed: u64,
    /// Requests per node under light load.
    pub light_requests: u64,
    /// Requests per node under heavy load.
    pub heavy_requests: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            algorithms: Vec::new(),
            nodes: vec![3, 5, 8],
            loads: vec![Load::Light, Load::Heavy],
            seed: 1,
            light_requests: 4,
            heavy_requests: 10,
        }
    }
}

/// How a measured figure should relate to theory.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relation {
    /// Equal (up to rounding).
    Exact,
    /// Within the given relative tolerance.
    Approximate(f64),
    /// At most the theory figure.
    AtMost,
    /// Between `theory_low` and `theory`.
    Between(f64),
    /// No closed form: shown for information.
    None,
}

/// One measured figure beside its formula.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The registry name.
    pub algorithm: String,
    /// Membership size.
    pub nodes: u32,
    /// "light" or "heavy".
    pub load: &'static str,
    /// "messages_per_entry", "sync_delay_T" or "response_time_T".
    pub metric: &'static str,
    /// The measured figure (in units of T for times); none if the run could not be made.
    pub measured: Option<f64>,
    /// The theory figure, where there is one.
    pub theory: Option<f64>,
    /// The formula as ORACLES.md writes it.
    pub formula: String,
    /// How measured and theory should relate.
    pub relation: Relation,
    /// Whether they do; none where there is nothing to check.
    pub agrees: Option<bool>,
    /// Violations or errors of the run, if any.
    pub note: String,
}

/// A `Write` into a shared buffer, to read a trace back after a run.
#[derive(Clone, Default)]
struct SharedBuf(Rc<RefCell<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn scenario(algorithm: &str, n: u32, load: Load, options: &CompareOptions) -> Scenario {
    Scenario {
        name: Some(format!("compare {algorithm} n={n} {}", load.name())),
        algorithm: algorithm.to_string(),
        nodes: Some(n),
        seed: options.seed,
        until: Some(Duration::from_secs(3600)),
        network: NetworkSpec {
            delay: DelaySpec::Constant(Duration::from_nanos(T_NS as u64)),
            fifo: true,
            ..NetworkSpec::default()
        },
        workload: Some(WorkloadSpec {
            kind: if load == Load::Light {
                WorkloadKind::Light
            } else {
                WorkloadKind::Saturated
            },
            rate: None,
            cs: Duration::from_nanos((E_OVER_T * T_NS) as u64),
            requests: Some(if load == Load::Light {
                options.light_requests
            } else {
                options.heavy_requests
            }),
            gap: None,
        }),
        ..Scenario::default()
    }
}

/// The order in which nodes entered the critical section, read back from the trace.
fn entry_order(trace: &[u8]) -> Vec<NodeId> {
    String::from_utf8_lossy(trace)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "output" && e["output"] == "Enter")
        .filter_map(|e| e["node"].as_u64().map(|n| NodeId(n as u32)))
        .collect()
}

/// Hops between every pair of a tree's nodes (breadth-first from each).
fn tree_distance(peers: &Peers, edges: &[[NodeId; 2]]) -> HashMap<(NodeId, NodeId), u32> {
    let mut adjacent: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for [a, b] in edges {
        adjacent.entry(*a).or_default().push(*b);
        adjacent.entry(*b).or_default().push(*a);
    }
    let mut distance = HashMap::new();
    for &from in peers.ids() {
        let mut queue = VecDeque::from([(from, 0u32)]);
        let mut seen = vec![from];
        while let Some((node, d)) = queue.pop_front() {
            distance.insert((from, node), d);
            for &next in adjacent.get(&node).into_iter().flatten() {
                if !seen.contains(&next) {
                    seen.push(next);
                    queue.push_back((next, d + 1));
                }
            }
        }
    }
    distance
}

/// The theory for one figure: (value, formula, relation).
fn theory(
    algorithm: &str,
    n: u32,
    load: Load,
    metric: &str,
    report: &Report,
    entries: &[NodeId],
) -> (Option<f64>, String, Relation) {
    let nf = f64::from(n);
    let peers = Peers::range(n);
    let params = Params::default();
    let holder = peers.ids()[0];
    // For token algorithms under light load: who held the token before each entry (the
    // previous user; the initial holder before the first).
    let previous: Vec<NodeId> = std::iter::once(holder)
        .chain(entries.iter().copied())
        .collect();
    let mean = |f: &dyn Fn(NodeId, NodeId) -> f64| -> Option<f64> {
        (!entries.is_empty()).then(|| {
            entries
                .iter()
                .zip(&previous)
                .map(|(&e, &p)| f(e, p))
                .sum::<f64>()
                / entries.len() as f64
        })
    };
    let exact = |v: f64, f: &str| (Some(v), f.to_string(), Relation::Exact);
    let entries_done = report.sections.mutex.as_ref().map_or(0, |m| m.entries) as f64;
    match (metric, load, algorithm) {
        ("messages_per_entry", Load::Light, "central") => exact(3.0, "3"),
        // One client (N = 2: the coordinator does not compete) never finds the CS busy.
        ("messages_per_entry", Load::Heavy, "central") if n == 2 => {
            exact(3.0, "3 (one client: the CS is never busy)")
        }
        ("messages_per_entry", Load::Heavy, "central") => exact(
            4.0 - 1.0 / entries_done.max(1.0),
            "4 (3 + DENIED; the first request finds the CS free)",
        ),
        ("messages_per_entry", _, "lamport-mutex") => exact(3.0 * (nf - 1.0), "3(N-1)"),
        ("messages_per_entry", _, "ricart-agrawala") => exact(2.0 * (nf - 1.0), "2(N-1)"),
        ("messages_per_entry", Load::Light, "token-ring") => (
            None,
            "unbounded (the token circulates)".into(),
            Relation::None,
        ),
        // A pass per entry (on leaving), and one more at the start: the initial holder, not yet
        // requesting, passes the token on at once. Over E entries that is 1 + 1/E; the
        // literature's 1 is the limit.
        ("messages_per_entry", Load::Heavy, "token-ring") => exact(
            1.0 + 1.0 / entries_done.max(1.0),
            "1 + 1/E (the initial holder's pass at the start)",
        ),
        ("messages_per_entry", Load::Light, "ricart-agrawala-token" | "suzuki-kasami") => (
            mean(&|e, p| if e == p { 0.0 } else { nf }),
            "N, or 0 at the holder".into(),
            Relation::Exact,
        ),
        // Singhal 1992: each entry asks its request set, replayed from the rules; the
        // literature's N-1 is the average of this.
        ("messages_per_entry", Load::Light, "singhal") => {
            let order: Vec<usize> = entries.iter().map(|&e| peers.index_of(e)).collect();
            let costs = singhal_light_load_messages(n as usize, &order);
            let total: usize = costs.iter().sum();
            (
                (!costs.is_empty()).then(|| total as f64 / costs.len() as f64),
                "2 x the request set (N-1 on average)".into(),
                Relation::Exact,
            )
        }
        // Singhal 1989: each entry's sites asked (R marks and the sites below) plus the token,
        // replayed from the rules.
        ("messages_per_entry", Load::Light, "singhal-token") => {
            let order: Vec<usize> = entries.iter().map(|&e| peers.index_of(e)).collect();
            let costs = singhal_token::light_load_messages(n as usize, &order);
            let total: usize = costs.iter().sum();
            (
                (!costs.is_empty()).then(|| total as f64 / costs.len() as f64),
                "R marks + sites below + token, 0 at the holder".into(),
                Relation::Exact,
            )
        }
        // Every site always wants the CS, so the token never stays where it is: each entry costs
        // N-1 REQUESTs and the token, except the first, the initial holder's own. Over the NR
        // entries that is N - 1/R per entry; the literature's N is the limit.
        (
            "messages_per_entry",
            Load::Heavy,
            "ricart-agrawala-token" | "suzuki-kasami" | "singhal-token",
        ) => {
            let r = entries_done / nf;
            (
                (r > 0.0).then(|| nf - 1.0 / r),
                "N - 1/R (R requests per site; N in the limit)".into(),
                Relation::Exact,
            )
        }
        ("messages_per_entry", Load::Light, "raymond") => {
            match raymond::tree_edges(&peers, &params) {
                Ok(edges) => {
                    let d = tree_distance(&peers, &edges);
                    (
                        mean(&|e, p| 2.0 * f64::from(d[&(e, p)])),
                        "2 x distance to the holder".into(),
                        Relation::Exact,
                    )
                }
                Err(e) => (None, e.to_string(), Relation::None),
            }
        }
        ("messages_per_entry", Load::Heavy, "raymond") => (
            Some(4.0 * (nf - 1.0) / nf),
            "4(N-1)/N".into(),
            Relation::Approximate(0.10),
        ),
        // The basic algorithm has no FAILED/INQUIRE/YIELD: under contention it can deadlock.
        (_, Load::Heavy, "maekawa-basic") => (
            None,
            "can deadlock (no FAILED/INQUIRE/YIELD)".into(),
            Relation::None,
        ),
        ("messages_per_entry", load, "maekawa" | "maekawa-basic") => {
            match quorum::for_params(&peers, &params) {
                Ok(quorums) => {
                    let k = |id: NodeId| quorums[peers.index_of(id)].len() as f64;
                    match load {
                        Load::Light => (
                            mean(&|e, _| 3.0 * (k(e) - 1.0)),
                            "3(K-1)".into(),
                            Relation::Exact,
                        ),
                        Load::Heavy => {
                            let kmax = peers.ids().iter().map(|&i| k(i)).fold(0.0, f64::max);
                            (
                                Some(5.0 * (kmax - 1.0)),
                                "up to 5(K-1)".into(),
                                Relation::AtMost,
                            )
                        }
                    }
                }
                Err(e) => (None, e.to_string(), Relation::None),
            }
        }
        // Not the textbooks' 3(N-1)/2: under the 1992 rules, when every site keeps requesting,
        // the 2R entries of a pair of sites alternate, and each of their 2R-1 hand-overs costs
        // one REQUEST and one REPLY between them. Over the N(N-1)/2 pairs and NR entries that
        // is (N-1)(2R-1)/R per entry, 2(N-1) in the limit (ORACLES.md).
        ("messages_per_entry", Load::Heavy, "singhal") => {
            let r = entries_done / nf;
            (
                (r > 0.0).then(|| (nf - 1.0) * (2.0 * r - 1.0) / r),
                "(N-1)(2R-1)/R (R requests per site)".into(),
                Relation::Exact,
            )
        }
        ("messages_per_entry", Load::Light, "majority-vote") => {
            exact(3.0 * (nf - 1.0), "2(N-1) + release = 3(N-1)")
        }
        // Every request waits, so every voter also answers QUEUED: N-1 more; INQUIRE and YIELD
        // are rare when all requests are made at once.
        ("messages_per_entry", Load::Heavy, "majority-vote") => (
            Some(4.0 * (nf - 1.0)),
            "3(N-1) + N-1 QUEUED = 4(N-1)".into(),
            Relation::Approximate(0.05),
        ),
        ("sync_delay_T", _, "central") => exact(2.0, "2T"),
        // RELEASE to the arbiters, then their REPLY: 2T, or T when the leaver is itself one of
        // the next requester's arbiters (its vote needs no message).
        ("sync_delay_T", _, "maekawa") => (
            Some(2.0),
            "2T (T where the leaver is an arbiter of the next)".into(),
            Relation::Between(1.0),
        ),
        (
            "sync_delay_T",
            _,
            "lamport-mutex"
            | "ricart-agrawala"
            | "ricart-agrawala-token"
            | "suzuki-kasami"
            | "singhal"
            | "singhal-token",
        ) => exact(1.0, "T"),
        ("sync_delay_T", _, "token-ring") => {
            (Some(nf - 1.0), "T..(N-1)T".into(), Relation::Between(1.0))
        }
        // The notes' T log N / 2 is a light-load figure, and the synchronization delay is only
        // measured under heavy load: no formula for this row.
        (
            "response_time_T",
            _,
            "central" | "lamport-mutex" | "ricart-agrawala" | "maekawa" | "maekawa-basic"
            | "majority-vote",
        ) => exact(2.0 + E_OVER_T, "2T+E"),
        ("response_time_T", _, "ricart-agrawala-token" | "suzuki-kasami" | "singhal-token") => (
            mean(&|e, p| E_OVER_T + if e == p { 0.0 } else { 2.0 }),
            "2T+E, or E at the holder".into(),
            Relation::Exact,
        ),
        ("response_time_T", _, "raymond") => match raymond::tree_edges(&peers, &params) {
            Ok(edges) => {
                let d = tree_distance(&peers, &edges);
                (
                    mean(&|e, p| E_OVER_T + 2.0 * f64::from(d[&(e, p)])),
                    "2dT+E (T log N + E on average)".into(),
                    Relation::Exact,
                )
            }
            Err(e) => (None, e.to_string(), Relation::None),
        },
        _ => (None, "-".into(), Relation::None),
    }
}

/// Singhal 1992 under light load, replayed from its rules: the messages of each entry of
/// `order` (positions in the membership). A site sends a REQUEST to every site of its request
/// set R_i and gets a REPLY from each; each of them, idle, adds the site to its own request set.
/// So after an entry the site holds every pair's permission. Initially R_i = {S_0 .. S_{i-1}}.
fn singhal_light_load_messages(n: usize, order: &[usize]) -> Vec<usize> {
    // lacks[i][j]: S_j is in R_i.
    let mut lacks: Vec<Vec<bool>> = (0..n).map(|i| (0..n).map(|j| j < i).collect()).collect();
    order
        .iter()
        .filter(|&&e| e < n)
        .map(|&e| {
            let asked: Vec<usize> = (0..n).filter(|&j| lacks[e][j]).collect();
            for &j in &asked {
                lacks[e][j] = false;
                lacks[j][e] = true;
            }
            2 * asked.len()
        })
        .collect()
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

/// The algorithms `compare` runs for a family.
pub fn family_algorithms(family: Family) -> Vec<&'static str> {
    registry::entries()
        .into_iter()
        .filter(|e| e.family == family)
        .map(|e| e.name)
        .collect()
}

/// Runs the comparison; `progress(done, total)` is called after each run.
pub fn compare_mutex(
    options: &CompareOptions,
    mut progress: impl FnMut(usize, usize) + Send,
) -> Vec<Row> {
    let algorithms: Vec<String> = if options.algorithms.is_empty() {
        family_algorithms(Family::Mutex)
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        options.algorithms.clone()
    };
    // Every run is independent: they run on all cores (rayon), and the rows come back in the
    // plan's order, so the result is the same as on one thread.
    let plan: Vec<(&String, u32, Load)> = algorithms
        .iter()
        .flat_map(|a| {
            options
                .nodes
                .iter()
                .flat_map(move |&n| options.loads.iter().map(move |&l| (a, n, l)))
        })
        .collect();
    let total = plan.len();
    let done = AtomicUsize::new(0);
    let progress = Mutex::new(&mut progress);
    let one = |&(algorithm, n, load): &(&String, u32, Load)| -> Vec<Row> {
        let mut rows = Vec::new();
        let buffer = SharedBuf::default();
        let result = run(
            &scenario(algorithm, n, load, options),
            RunOptions {
                trace: (load == Load::Light).then(|| Box::new(buffer.clone()) as Box<dyn Write>),
                origin: "compare".into(),
                ..RunOptions::default()
            },
        );
        let metrics: &[&'static str] = match load {
            Load::Light => &["messages_per_entry", "response_time_T"],
            Load::Heavy => &["messages_per_entry", "sync_delay_T"],
        };
        match result {
            Ok(report) => {
                let entries = entry_order(&buffer.0.borrow());
                let note = report
                    .violations
                    .iter()
                    .map(|v| v.property.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let m = report.sections.mutex.clone().unwrap_or_default();
                for &metric in metrics {
                    let measured = match metric {
                        "messages_per_entry" => (m.entries > 0).then_some(m.messages_per_entry),
                        "sync_delay_T" => {
                            (m.sync_delay_ns.count > 0).then(|| m.sync_delay_ns.mean / T_NS)
                        }
                        _ => (m.response_time_ns.count > 0).then(|| m.response_time_ns.mean / T_NS),
                    };
                    let (theory, formula, relation) =
                        theory(algorithm, n, load, metric, &report, &entries);
                    let ok = measured
                        .and_then(|v| agrees(v, theory, relation))
                        .map(|a| a && note.is_empty());
                    rows.push(Row {
                        algorithm: algorithm.clone(),
                        nodes: n,
                        load: load.name(),
                        metric,
                        measured,
                        theory,
                        formula,
                        relation,
                        agrees: ok,
                        note: note.clone(),
                    });
                }
            }
            Err(e) => {
                for &metric in metrics {
                    rows.push(Row {
                        algorithm: algorithm.clone(),
                        nodes: n,
                        load: load.name(),
                        metric,
                        measured: None,
                        theory: None,
                        formula: "-".into(),
                        relation: Relation::None,
                        agrees: None,
                        note: e.to_string(),
                    });
                }
            }
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
    fn agreement_rules() {
        assert_eq!(agrees(3.0, Some(3.0), Relation::Exact), Some(true));
        assert_eq!(agrees(3.01, Some(3.0), Relation::Exact), Some(false));
        assert_eq!(
            agrees(1.04, Some(1.0), Relation::Approximate(0.05)),
            Some(true)
        );
        assert_eq!(
            agrees(1.06, Some(1.0), Relation::Approximate(0.05)),
            Some(false)
        );
        assert_eq!(agrees(9.0, Some(10.0), Relation::AtMost), Some(true));
        assert_eq!(agrees(0.5, Some(4.0), Relation::Between(1.0)), Some(false));
        assert_eq!(agrees(1.0, None, Relation::None), None);
    }

    #[test]
    fn singhal_light_load_replays_the_staircase() {
        // S_0 starts with every permission; S_1 asks S_0; then each asks the other.
        assert_eq!(singhal_light_load_messages(2, &[0, 1, 0, 1]), [0, 2, 2, 2]);
        assert_eq!(singhal_light_load_messages(2, &[0, 0, 1, 1]), [0, 0, 2, 0]);
        // S_2 asks S_0 and S_1; S_1 still lacks S_0's permission and now S_2's too; S_0 then
        // lacks both others', and S_2 both again. A site that enters twice asks nobody.
        assert_eq!(singhal_light_load_messages(3, &[2, 1, 0, 2]), [4, 4, 4, 4]);
        assert_eq!(singhal_light_load_messages(3, &[1, 1, 2]), [2, 0, 4]);
    }

    #[test]
    fn tree_distances_on_a_path() {
        let peers = Peers::range(4);
        let edges = [
            [NodeId(0), NodeId(1)],
            [NodeId(1), NodeId(2)],
            [NodeId(2), NodeId(3)],
        ];
        let d = tree_distance(&peers, &edges);
        assert_eq!(d[&(NodeId(0), NodeId(3))], 3);
        assert_eq!(d[&(NodeId(2), NodeId(2))], 0);
    }
}
