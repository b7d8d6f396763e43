//! Scenario-level tests of the mutual-exclusion algorithms of issue 3: token-ring,
//! ricart-agrawala-token, suzuki-kasami, raymond, maekawa, maekawa-basic, singhal and
//! majority-vote. Safety and liveness over many seeds with random delays and no FIFO (none of
//! them needs it), light-load message counts entry by entry against ORACLES.md, heavy-load
//! figures and synchronization delays, and the scripted deadlock of maekawa-basic.

mod common;
use common::*;
use distsync_algorithms::mutex::{quorum, raymond};
use distsync_core::{NodeId, Params, Peers, QuorumKind};
use distsync_sim::{run, Report, RunOptions, Scenario};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::io::{self, Write};
use std::path::PathBuf;
use std::rc::Rc;

/// The deadlock-free algorithms of this file. `maekawa-basic` is tested apart.
const LIVE: [&str; 7] = [
    "token-ring",
    "ricart-agrawala-token",
    "suzuki-kasami",
    "raymond",
    "maekawa",
    "singhal",
    "majority-vote",
];

/// Seeds per algorithm and workload.
const SEEDS: u64 = 320;

/// Random delays, no FIFO, N = 2..9 from the seed, three requests per node.
fn random_scenario(algorithm: &str, seed: u64, workload: &str) -> String {
    let n = 2 + seed % 8;
    let workload = match workload {
        "poisson" => "kind = \"poisson\"\nrate = 50.0".to_string(),
        // The token ring never falls quiet; a short gap keeps its idle laps few.
        "light" => "kind = \"light\"\ngap = \"6ms\"".to_string(),
        other => format!("kind = \"{other}\""),
    };
    format!(
        r#"
        algorithm = "{algorithm}"
        nodes = {n}
        until = "1h"
        [network]
        delay = {{ uniform = ["100us", "3ms"] }}
        fifo = false
        [workload]
        {workload}
        cs = "1ms"
        requests = 3
        "#
    )
}

fn assert_safe_and_live(algorithm: &str, workload: &str) {
    for seed in 0..SEEDS {
        let r = run_toml(&random_scenario(algorithm, seed, workload), seed);
        let m = r.sections.mutex.as_ref().unwrap();
        assert!(
            r.violations.is_empty() && m.unserved_requests == 0,
            "{algorithm} {workload}: reproduce with seed={seed}: violations {:?}, unserved {}",
            r.violations,
            m.unserved_requests
        );
        assert_eq!(r.ended_by, "done", "{algorithm} {workload}: seed={seed}");
        assert_eq!(
            m.entries,
            3 * (2 + seed % 8),
            "{algorithm} {workload}: seed={seed}"
        );
    }
}

#[test]
fn every_algorithm_is_safe_and_live_under_light_load_without_fifo() {
    for algorithm in LIVE {
        assert_safe_and_live(algorithm, "light");
    }
}

#[test]
fn every_algorithm_is_safe_and_live_under_poisson_load_without_fifo() {
    for algorithm in LIVE {
        assert_safe_and_live(algorithm, "poisson");
    }
}

#[test]
fn every_algorithm_is_safe_and_live_under_saturated_load_without_fifo() {
    for algorithm in LIVE {
        assert_safe_and_live(algorithm, "saturated");
    }
}

#[test]
fn maekawa_basic_is_safe_always_and_live_without_contention() {
    // Light load has no contention: every request is served.
    assert_safe_and_live("maekawa-basic", "light");
    // Under contention it may deadlock (and does, often), but never lets two in.
    let mut deadlocks = 0;
    for workload in ["poisson", "saturated"] {
        for seed in 0..SEEDS {
            let r = run_toml(&random_scenario("maekawa-basic", seed, workload), seed);
            for v in &r.violations {
                assert!(
                    v.property == "deadlock" || v.property == "starvation",
                    "maekawa-basic {workload}: reproduce with seed={seed}: {v:?}"
                );
            }
            deadlocks += r.violations.iter().any(|v| v.property == "deadlock") as u32;
        }
    }
    assert!(deadlocks > 0, "contention never deadlocked maekawa-basic");
}

// ----- light load, entry by entry -----

/// A `Write` into a shared buffer, to read the trace back.
#[derive(Clone, Default)]
struct Buf(Rc<RefCell<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs with a trace and returns the report and the trace's lines.
fn run_traced(text: &str, seed: u64) -> (Report, Vec<Value>) {
    let scenario = Scenario::from_toml(text, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    let buf = Buf::default();
    let report = run(
        &scenario,
        RunOptions {
            seed: Some(seed),
            trace: Some(Box::new(buf.clone())),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let text = String::from_utf8(buf.0.borrow().clone()).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (report, lines)
}

/// Light load: for every request in order, the requester and the messages sent from its
/// Request input until the next request's (every message of one request is sent before the
/// next request is made).
fn per_request(trace: &[Value]) -> Vec<(NodeId, u64)> {
    let mut out: Vec<(NodeId, u64)> = Vec::new();
    for line in trace {
        match line["event"].as_str() {
            Some("input") if line["input"] == "Request" => {
                out.push((NodeId(line["node"].as_u64().unwrap() as u32), 0));
            }
            Some("send") => {
                if let Some(last) = out.last_mut() {
                    last.1 += 1;
                }
            }
            _ => {}
        }
    }
    out
}

/// A light-load scenario with random delays and no FIFO, plus extra top-level fields.
fn light(algorithm: &str, n: u32, extra: &str) -> String {
    format!(
        r#"
        algorithm = "{algorithm}"
        nodes = {n}
        until = "1h"
        {extra}
        [network]
        delay = {{ uniform = ["100us", "3ms"] }}
        fifo = false
        [workload]
        kind = "light"
        cs = "1ms"
        requests = 5
        "#
    )
}

/// Runs a light-load scenario over a few seeds and checks every request's message count
/// against `expected(requester, state)`, which also updates the state. Returns the average.
fn check_light<S: Clone>(
    text: &str,
    state: S,
    mut expected: impl FnMut(NodeId, &mut S) -> u64,
) -> f64 {
    let (mut total, mut count) = (0u64, 0u64);
    for seed in 1..=4 {
        let (r, trace) = run_traced(text, seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let requests = per_request(&trace);
        assert_eq!(
            requests.len() as u64,
            r.sections.mutex.as_ref().unwrap().entries
        );
        let mut s = state.clone();
        for (k, &(node, sent)) in requests.iter().enumerate() {
            let want = expected(node, &mut s);
            assert_eq!(sent, want, "seed={seed}: request {k}, by node {node}");
            total += sent;
            count += 1;
        }
    }
    total as f64 / count as f64
}

#[test]
fn light_load_token_algorithms_cost_n_without_the_token_and_0_with_it() {
    for algorithm in ["ricart-agrawala-token", "suzuki-kasami"] {
        for n in [1u32, 2, 3, 5, 8, 9] {
            for holder in [None, Some(n - 1)] {
                let extra = holder.map_or(String::new(), |h| format!("holder = {h}"));
                let start = NodeId(holder.unwrap_or(0));
                check_light(&light(algorithm, n, &extra), start, |r, at| {
                    let cost = if r == *at { 0 } else { u64::from(n) };
                    *at = r;
                    cost
                });
            }
        }
    }
}

/// Hops between two nodes of a tree.
fn hops(edges: &[[NodeId; 2]], a: NodeId, b: NodeId) -> u64 {
    let mut seen = BTreeSet::from([a]);
    let mut frontier = VecDeque::from([(a, 0)]);
    while let Some((u, d)) = frontier.pop_front() {
        if u == b {
            return d;
        }
        for &[x, y] in edges {
            for (p, q) in [(x, y), (y, x)] {
                if p == u && seen.insert(q) {
                    frontier.push_back((q, d + 1));
                }
            }
        }
    }
    panic!("{b} is not reachable from {a}");
}

#[test]
fn light_load_raymond_costs_twice_the_distance_to_the_holder() {
    for n in [1u32, 2, 5, 7, 9] {
        let chain: Vec<String> = (1..n).map(|k| format!("[{}, {k}]", k - 1)).collect();
        for extra in [
            String::new(),
            format!("holder = {}", n / 2),
            format!("tree = [{}]", chain.join(", ")),
        ] {
            let text = light("raymond", n, &extra);
            let scenario = Scenario::from_toml(&text, "t").unwrap();
            let params = scenario.params();
            let edges = raymond::tree_edges(&Peers::range(n), &params).unwrap();
            let start = params.holder.unwrap_or(NodeId(0));
            check_light(&text, start, |r, at| {
                let cost = 2 * hops(&edges, *at, r);
                *at = r;
                cost
            });
        }
    }
}

#[test]
fn light_load_maekawa_costs_3_k_minus_1_for_the_quorum_in_use() {
    for algorithm in ["maekawa", "maekawa-basic"] {
        for (n, kind) in [
            (7, QuorumKind::Plane),
            (13, QuorumKind::Plane),
            (7, QuorumKind::Grid),
            (9, QuorumKind::Grid),
            (2, QuorumKind::Grid),
            (5, QuorumKind::Grid),
        ] {
            let name = if kind == QuorumKind::Plane {
                "plane"
            } else {
                "grid"
            };
            let params = Params {
                quorums: Some(kind),
                ..Params::default()
            };
            let qs = quorum::for_params(&Peers::range(n), &params).unwrap();
            let text = light(algorithm, n, &format!("quorums = \"{name}\""));
            check_light(&text, (), |r, _| 3 * (qs[r.0 as usize].len() as u64 - 1));
        }
    }
}

#[test]
fn light_load_majority_vote_costs_3_n_minus_1() {
    // N-1 REQUEST, N-1 GRANTED, N-1 RELEASE. The process enters with a majority, so it may
    // leave before its REQUEST reaches the last voters: on FIFO links each of them still
    // grants (then gets the RELEASE), which makes the count exact.
    for n in [1u32, 2, 3, 4, 7, 9] {
        let text = light("majority-vote", n, "").replace("fifo = false", "fifo = true");
        check_light(&text, (), |_, _| 3 * u64::from(n - 1));
    }
    // Without FIFO a RELEASE can overtake its own REQUEST: that voter ignores the REQUEST and
    // never grants. Every request still costs at least N-1 + floor(N/2) + N-1 (the votes it
    // entered with) and at most 3(N-1).
    for n in [2u32, 3, 4, 7, 9] {
        for seed in 1..=4 {
            let (r, trace) = run_traced(&light("majority-vote", n, ""), seed);
            assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
            let n = u64::from(n);
            for (node, sent) in per_request(&trace) {
                assert!(
                    (2 * (n - 1) + n / 2..=3 * (n - 1)).contains(&sent),
                    "n={n} seed={seed}: node {node} sent {sent}"
                );
            }
        }
    }
}

#[test]
fn light_load_singhal_follows_its_request_sets_and_averages_n_minus_1_from_the_start() {
    // The model: site i asks R_i and gets as many replies; every site it asked now needs i's
    // permission back (adds i to its own set); i holds every permission.
    for n in [2u32, 3, 5, 8, 9] {
        let staircase: Vec<BTreeSet<u32>> = (0..n).map(|i| (0..i).collect()).collect();
        check_light(&light("singhal", n, ""), staircase, |r, sets| {
            let asked = std::mem::take(&mut sets[r.0 as usize]);
            for &j in &asked {
                sets[j as usize].insert(r.0);
            }
            2 * asked.len() as u64
        });
        // Each site once in membership order from the start: the staircase, N-1 on average.
        let mut text = light("singhal", n, "").replace("kind = \"light\"", "kind = \"none\"");
        for i in 0..n {
            text.push_str(&format!(
                "[[event]]\nat = \"{}ms\"\nrequest = {i}\n",
                100 * i
            ));
        }
        let r = run_toml(&text, 1);
        let m = r.sections.mutex.unwrap();
        assert_eq!(m.entries, u64::from(n));
        assert_eq!(m.messages_per_entry, f64::from(n - 1), "n={n}");
    }
}

// ----- heavy load -----

/// Saturated load on a constant-delay network (T = 1ms, E = 10ms).
fn heavy(algorithm: &str, n: u32, requests: u64) -> String {
    mutex_scenario(algorithm, n, "saturated", requests)
}

#[test]
fn heavy_load_raymond_averages_4_n_minus_1_over_n_on_balanced_trees() {
    for n in [7u32, 31] {
        let r = run_toml(&heavy("raymond", n, 30), 1);
        assert!(r.violations.is_empty(), "n={n}: {:?}", r.violations);
        let m = r.sections.mutex.unwrap();
        let theory = 4.0 * f64::from(n - 1) / f64::from(n);
        assert!(
            (m.messages_per_entry - theory).abs() / theory < 0.05,
            "n={n}: {} against {theory}",
            m.messages_per_entry
        );
    }
}

#[test]
fn heavy_load_synchronization_delay_is_t_for_the_broadcast_token_algorithms() {
    for algorithm in ["suzuki-kasami", "ricart-agrawala-token"] {
        for n in [3u32, 5, 8] {
            let r = run_toml(&heavy(algorithm, n, 20), 2);
            assert!(r.violations.is_empty(), "{algorithm} n={n}");
            let m = r.sections.mutex.unwrap();
            assert_eq!(m.entries, 20 * u64::from(n));
            assert!(m.sync_delay_ns.count > 0);
            assert_eq!(m.sync_delay_ns.p50 as f64, T, "{algorithm} n={n}");
            assert_eq!(m.sync_delay_ns.max as f64, T, "{algorithm} n={n}");
            // N per entry: every entry but the holder's first costs N-1 REQUESTs and a token.
            let expected = f64::from(n) * (m.entries - 1) as f64 / m.entries as f64;
            assert!(
                (m.messages_per_entry - expected).abs() < 1e-9,
                "{algorithm} n={n}"
            );
        }
    }
}

#[test]
fn heavy_load_synchronization_delay_is_2t_for_maekawa() {
    // RELEASE to the arbiters, REPLY to the next: 2T. (When the exiting site is itself an
    // arbiter of the next one, that permission moves locally, so some delays are only T.)
    for n in [5u32, 7, 9, 13] {
        let r = run_toml(&heavy("maekawa", n, 20), 2);
        assert!(r.violations.is_empty(), "n={n}: {:?}", r.violations);
        let m = r.sections.mutex.unwrap();
        assert_eq!(m.entries, 20 * u64::from(n));
        assert_eq!(m.sync_delay_ns.p50 as f64, 2.0 * T, "n={n}");
        assert_eq!(m.sync_delay_ns.max as f64, 2.0 * T, "n={n}");
    }
}

// ----- the scripted deadlock -----

fn deadlock_scenario() -> Scenario {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/maekawa-deadlock.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn maekawa_basic_deadlocks_on_the_scripted_scenario_and_maekawa_completes_it() {
    let scenario = deadlock_scenario();
    // The scenario relies on these quorums: 0 needs 3, 3 needs 1, 1 needs 0, and each of the
    // three locks its own arbiter at its request.
    let qs = quorum::for_params(&Peers::range(7), &scenario.params()).unwrap();
    assert!(qs[0].contains(&NodeId(3)), "{qs:?}");
    assert!(qs[3].contains(&NodeId(1)), "{qs:?}");
    assert!(qs[1].contains(&NodeId(0)), "{qs:?}");

    let r = run(&scenario, RunOptions::default()).unwrap();
    let properties: Vec<&str> = r.violations.iter().map(|v| v.property.as_str()).collect();
    assert_eq!(
        properties,
        vec!["deadlock", "starvation"],
        "{:?}",
        r.violations
    );
    assert_eq!(r.ended_by, "idle");
    let m = r.sections.mutex.unwrap();
    assert_eq!(m.entries, 0);
    assert_eq!(m.unserved_requests, 3);
    assert!(
        r.violations[0].detail.contains("[0, 1, 3]"),
        "{}",
        r.violations[0].detail
    );

    let mut fixed = scenario.clone();
    fixed.algorithm = "maekawa".into();
    let r = run(&fixed, RunOptions::default()).unwrap();
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.ended_by, "done");
    let m = r.sections.mutex.unwrap();
    assert_eq!(m.entries, 3);
    assert_eq!(m.unserved_requests, 0);
    // 3's request loses at arbiter 1 (FAILED), so when arbiter 3 inquires for 0's earlier
    // request, 3 yields: both happen inside site 3 (its own arbiter) and are not messages.
    assert_eq!(r.messages.by_kind["Failed"], 2, "{:?}", r.messages.by_kind);
}
