//! Scale: the progress reports a long exploration gives (states, frontier, memory), and the same
//! verdict and figures on one thread as on several, with and without symmetry reduction.

use distsync_check::{check_named, Config, FaultBounds, Progress};

#[test]
fn progress_reports_grow_with_the_exploration_and_show_the_frontier() {
    let mut config = Config {
        nodes: 3,
        requests: 1,
        fifo: true,
        ..Config::default()
    };
    config.bounds.max_states = 100_000;
    let mut reports: Vec<Progress> = Vec::new();
    let o = check_named("lamport-mutex", &config, &mut |p| reports.push(*p)).unwrap();
    assert_eq!(o.stats.bound, Some(distsync_check::Bound::States));
    assert!(!o.proved && o.violation.is_none());
    // Reported every 4,096 new states or so (a chunk's states at once), or every 200 ms.
    assert!(reports.len() >= 15, "{} reports", reports.len());
    assert!(reports.windows(2).all(|w| w[0].states <= w[1].states));
    assert!(reports.iter().all(|p| p.states <= o.stats.states));
    assert!(reports.iter().any(|p| p.frontier > 1000));
    assert!(reports
        .iter()
        .all(|p| p.memory > 0 && p.max_states == config.bounds.max_states));
    assert!(reports.windows(2).all(|w| w[0].depth <= w[1].depth));
}

#[test]
fn threads_change_nothing_in_verdicts_figures_or_traces() {
    let cases: Vec<(&str, Config)> = vec![
        (
            "ricart-agrawala",
            Config {
                nodes: 3,
                requests: 1,
                fifo: false,
                ..Config::default()
            },
        ),
        (
            "ricart-agrawala",
            Config {
                nodes: 3,
                requests: 1,
                fifo: false,
                faults: FaultBounds {
                    loss: 1,
                    ..FaultBounds::default()
                },
                ..Config::default()
            },
        ),
        (
            "lamport-mutex",
            Config {
                nodes: 3,
                requests: 1,
                fifo: false,
                ..Config::default()
            },
        ),
        (
            "bully",
            Config {
                nodes: 3,
                faults: FaultBounds {
                    partition: true,
                    ..FaultBounds::default()
                },
                ..Config::default()
            },
        ),
        (
            "central",
            Config {
                nodes: 4,
                requests: 1,
                fifo: false,
                symmetry: true,
                ..Config::default()
            },
        ),
        (
            "causal-broadcast",
            Config {
                nodes: 3,
                requests: 1,
                fifo: false,
                symmetry: true,
                faults: FaultBounds {
                    loss: 1,
                    ..FaultBounds::default()
                },
                ..Config::default()
            },
        ),
    ];
    for (algo, config) in cases {
        let one = check_named(
            algo,
            &Config {
                threads: 1,
                ..config.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        let three = check_named(
            algo,
            &Config {
                threads: 3,
                ..config.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(one.proved, three.proved, "{algo}");
        let (a, b) = (one.stats, three.stats);
        assert_eq!(
            (a.states, a.transitions, a.depth, a.terminal_states),
            (b.states, b.transitions, b.depth, b.terminal_states),
            "{algo} {config:?}"
        );
        let steps = |o: &distsync_check::NamedOutcome| {
            o.violation.as_ref().map(|v| {
                (
                    v.property,
                    v.steps
                        .iter()
                        .map(|s| s.transition.clone())
                        .collect::<Vec<_>>(),
                )
            })
        };
        assert_eq!(steps(&one), steps(&three), "{algo} {config:?}");
    }
}

/// A violation found by judging a state in the middle of a level of several batches (while the
/// next batch was already merged, on more than one thread) reports the figures at its chunk:
/// those of the explorer before it overlapped merging and judging (states, transitions and
/// depth of maekawa-basic's deadlock at 4 x 1, FIFO), on one thread and on three.
#[test]
fn a_violation_inside_a_level_of_several_batches_reports_the_figures_at_its_chunk() {
    let config = Config {
        nodes: 4,
        requests: 1,
        ..Config::default()
    };
    // The deadlock is among the successors of depth 11, a level of 17,340 - 12,844 = 4,496
    // states: three batches of 32 chunks of 64.
    let before = |depth| {
        let mut c = config.clone();
        c.bounds.max_depth = depth;
        let o = check_named("maekawa-basic", &c, &mut |_| {}).unwrap();
        assert!(o.violation.is_none());
        o.stats.states
    };
    assert_eq!((before(10), before(11)), (12_844, 17_340));
    for threads in [1, 3] {
        let o = check_named(
            "maekawa-basic",
            &Config {
                threads,
                ..config.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        let v = o.violation.expect("maekawa-basic deadlocks");
        assert_eq!(v.property, distsync_check::Property::Deadlock);
        let s = o.stats;
        assert_eq!(
            (s.states, s.transitions, s.depth, s.terminal_states),
            (18_608, 53_860, 12, 0),
            "{threads} threads"
        );
        assert_eq!(v.steps.len(), 12);
    }
}
