//! Symmetry reduction (`Config::symmetry`): the same verdicts, proofs and violations (same
//! property, same shortest length), with fewer states, where processes are interchangeable;
//! refused with the reason where they are not.

use distsync_check::{check_named, Config, FaultBounds, NamedOutcome};

fn run(algo: &str, config: &Config) -> NamedOutcome {
    check_named(algo, config, &mut |_| {}).unwrap_or_else(|e| panic!("{algo}: {e}"))
}

/// Explores `config` with and without symmetry; both agree, and the reduced one has fewer
/// states. Returns (states without, states with).
fn same_verdict(algo: &str, config: Config) -> (usize, usize) {
    let full = run(algo, &config);
    let reduced = run(
        algo,
        &Config {
            symmetry: true,
            ..config.clone()
        },
    );
    assert_eq!(full.proved, reduced.proved, "{algo} {config:?}");
    assert!(!full.stats.bound_hit && !reduced.stats.bound_hit);
    match (&full.violation, &reduced.violation) {
        (None, None) => {}
        (Some(a), Some(b)) => {
            assert_eq!(a.property, b.property, "{algo} {config:?}");
            // Breadth first on both: the shortest counterexample has the same length.
            assert_eq!(a.steps.len(), b.steps.len(), "{algo} {config:?}");
        }
        (a, b) => panic!("{algo} {config:?}: {a:?} vs {b:?}"),
    }
    assert!(
        reduced.stats.states < full.stats.states,
        "{algo} {config:?}: {} states reduced, {} not",
        reduced.stats.states,
        full.stats.states
    );
    (full.stats.states, reduced.stats.states)
}

#[test]
fn central_is_proved_with_fewer_states_up_to_renaming_clients() {
    for (nodes, requests) in [(3, 1), (3, 2), (4, 1)] {
        let config = Config {
            nodes,
            requests,
            fifo: false,
            ..Config::default()
        };
        let (full, reduced) = same_verdict("central", config);
        assert!(
            run(
                "central",
                &Config {
                    nodes,
                    requests,
                    fifo: false,
                    ..Config::default()
                }
            )
            .proved
        );
        if nodes == 4 {
            // Three interchangeable clients: close to a sixth of the states.
            assert!(reduced * 4 < full, "{reduced} of {full}");
        }
    }
}

#[test]
fn centrals_violations_under_faults_are_found_with_symmetry_too() {
    for faults in [
        FaultBounds {
            crash: 1,
            ..FaultBounds::default()
        },
        FaultBounds {
            loss: 1,
            ..FaultBounds::default()
        },
        FaultBounds {
            partition: true,
            ..FaultBounds::default()
        },
    ] {
        let config = Config {
            nodes: 3,
            fifo: false,
            faults,
            ..Config::default()
        };
        same_verdict("central", config.clone());
        let reduced = run(
            "central",
            &Config {
                symmetry: true,
                ..config
            },
        );
        assert_eq!(reduced.violation.unwrap().property.name(), "deadlock");
    }
}

#[test]
fn causal_broadcast_is_proved_and_broken_the_same_way_with_symmetry() {
    let config = Config {
        nodes: 3,
        requests: 1,
        fifo: false,
        ..Config::default()
    };
    let (full, reduced) = same_verdict("causal-broadcast", config.clone());
    assert!(reduced * 3 < full, "{reduced} of {full}");
    same_verdict(
        "causal-broadcast",
        Config {
            nodes: 2,
            requests: 2,
            ..config.clone()
        },
    );
    // A lost multicast: some process never delivers it.
    let lossy = Config {
        faults: FaultBounds {
            loss: 1,
            ..FaultBounds::default()
        },
        ..config
    };
    same_verdict("causal-broadcast", lossy.clone());
    let v = run(
        "causal-broadcast",
        &Config {
            symmetry: true,
            ..lossy
        },
    )
    .violation
    .unwrap();
    assert_eq!(v.property.name(), "completion");
}

#[test]
fn symmetry_is_refused_where_processes_are_told_apart_by_id() {
    for algo in [
        "ricart-agrawala",
        "lamport-mutex",
        "bully",
        "token-ring",
        "fifo-broadcast",
    ] {
        let e = check_named(
            algo,
            &Config {
                nodes: 2,
                symmetry: true,
                ..Config::default()
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e.field, "symmetry", "{algo}");
        assert!(
            e.message.contains("interchangeable"),
            "{algo}: {}",
            e.message
        );
    }
    let e = check_named(
        "central",
        &Config {
            nodes: 3,
            symmetry: true,
            liveness: true,
            ..Config::default()
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(e.field, "symmetry");
    assert!(e.message.contains("--liveness"), "{}", e.message);
}
