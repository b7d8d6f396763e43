//! `compare` and `sweep` run on every core (rayon): their results are the same, row for row and
//! bit for bit, as on one thread, and progress counts every run once. `sweep_observed` tells its
//! observer every run once, with the point it belongs to and the events it processed (what
//! `sweep`'s progress bar weighs its work by).

use distsync_sim::compare::{compare_mutex, CompareOptions, Load};
use distsync_sim::compare_election::{compare_election, ElectionCompareOptions, Order};
use distsync_sim::sweep::{sweep, sweep_observed, with_param, ParamSpec, RunDone};
use distsync_sim::{run, RunOptions, Scenario};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

fn on(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn compare_mutex_is_the_same_on_one_thread_and_on_four() {
    let options = CompareOptions {
        nodes: vec![3, 5],
        loads: vec![Load::Light, Load::Heavy],
        ..CompareOptions::default()
    };
    let calls = AtomicUsize::new(0);
    let one = on(1).install(|| compare_mutex(&options, |_, _| {}));
    let four = on(4).install(|| {
        compare_mutex(&options, |done, total| {
            calls.fetch_add(1, Ordering::Relaxed);
            assert!(done <= total);
        })
    });
    assert_eq!(one, four);
    assert!(one.len() > 40);
    // One progress call per run: algorithms x sizes x loads.
    let algorithms = one
        .iter()
        .map(|r| r.algorithm.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(calls.into_inner(), algorithms * 2 * 2);
}

#[test]
fn compare_election_is_the_same_on_one_thread_and_on_four() {
    let options = ElectionCompareOptions {
        algorithms: Vec::new(),
        nodes: vec![4, 8],
        orders: vec![Order::Ascending, Order::Random],
        seed: 3,
    };
    let one = on(1).install(|| compare_election(&options, |_, _| {}));
    let four = on(4).install(|| compare_election(&options, |_, _| {}));
    assert_eq!(one, four);
    assert!(!one.is_empty());
}

#[test]
fn sweep_is_the_same_on_one_thread_and_on_four_and_reports_the_first_error() {
    let base = Scenario::from_toml(
        "algorithm = \"x\"\nnodes = 3\n[network]\ndelay = { uniform = [\"1ms\", \"3ms\"] }\nfifo = false\n[workload]\nkind = \"saturated\"\nrequests = 5",
        "t",
    )
    .unwrap();
    let algorithms = vec!["ricart-agrawala".to_string(), "suzuki-kasami".to_string()];
    let param = ParamSpec::parse("nodes=2..7").unwrap();
    let run = |threads| {
        on(threads).install(|| {
            sweep(
                &base,
                &algorithms,
                &param,
                "messages_per_entry",
                3,
                |_, _| {},
            )
        })
    };
    let one = run(1).unwrap();
    let four = run(4).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.len(), 12);
    // An error is the first in the plan's order, whichever thread meets it first.
    let bad = ParamSpec::parse("nodes=2,0,0").unwrap();
    let errors: Vec<String> = [1, 4]
        .into_iter()
        .map(|t| {
            on(t)
                .install(|| sweep(&base, &algorithms, &bad, "messages_per_entry", 1, |_, _| {}))
                .unwrap_err()
                .0
        })
        .collect();
    assert_eq!(errors[0], errors[1]);
    assert!(
        errors[0].contains("sweep ricart-agrawala nodes=0"),
        "{}",
        errors[0]
    );
}

#[test]
fn sweep_observed_tells_every_run_once_with_its_point_and_its_events() {
    let base = Scenario::from_toml(
        "algorithm = \"x\"\nnodes = 3\n[network]\ndelay = { uniform = [\"1ms\", \"3ms\"] }\n[workload]\nkind = \"saturated\"\nrequests = 4",
        "t",
    )
    .unwrap();
    let algorithms = vec!["ricart-agrawala".to_string(), "raymond".to_string()];
    let param = ParamSpec::parse("nodes=2..5").unwrap();
    let seeds = 2;
    // The events each point's runs should report, run one by one here.
    let mut expected: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (a, algorithm) in algorithms.iter().enumerate() {
        for (v, value) in param.values.iter().enumerate() {
            let mut scenario = with_param(&base, &param.path, value).unwrap();
            scenario.algorithm = algorithm.clone();
            for s in 0..seeds {
                let report = run(
                    &scenario,
                    RunOptions {
                        seed: Some(scenario.seed + s),
                        ..RunOptions::default()
                    },
                )
                .unwrap();
                expected
                    .entry(a * param.values.len() + v)
                    .or_default()
                    .push(report.events_processed);
            }
        }
    }
    let plain = sweep(
        &base,
        &algorithms,
        &param,
        "messages_per_entry",
        seeds,
        |_, _| {},
    )
    .unwrap();
    for threads in [1, 4] {
        let mut told: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        let points = on(threads)
            .install(|| {
                sweep_observed(
                    &base,
                    &algorithms,
                    &param,
                    "messages_per_entry",
                    seeds,
                    |done: RunDone| told.entry(done.point).or_default().push(done.events),
                )
            })
            .unwrap();
        assert_eq!(points, plain, "{threads} threads");
        // A point's seeds run in order on one thread, so its runs are told in seed order.
        assert_eq!(told, expected, "{threads} threads");
    }
    // More nodes, more events: what the weighting relies on.
    assert!(expected[&3][0] > expected[&0][0], "{expected:?}");
}
