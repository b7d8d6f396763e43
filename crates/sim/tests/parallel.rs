//! `compare` and `sweep` run on every core (rayon): their results are the same, row for row and
//! bit for bit, as on one thread, and progress counts every run once.

use distsync_sim::compare::{compare_mutex, CompareOptions, Load};
use distsync_sim::compare_election::{compare_election, ElectionCompareOptions, Order};
use distsync_sim::sweep::{sweep, ParamSpec};
use distsync_sim::Scenario;
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
