//! `sweep_observed` tells its observer every run once, with the point it belongs to and the
//! events it processed (what `sweep`'s progress bar weighs its work by); the points are those of
//! `sweep`, on one thread or four.

use distsync_sim::sweep::{sweep, sweep_observed, with_param, ParamSpec, RunDone};
use distsync_sim::{run, RunOptions, Scenario};
use std::collections::BTreeMap;

fn on(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn every_run_is_told_once_with_its_point_and_its_events() {
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
