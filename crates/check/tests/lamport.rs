//! Lamport's algorithm needs FIFO links: proved with them, and without them the checker finds a
//! shortest trace with two processes in the critical section, which a replay confirms.

mod common;

use common::{assert_proved, config, run};
use distsync_algorithms::mutex::LamportMutex;
use distsync_check::{check, replay, Property, Transition, Verdict};
use distsync_core::mutex::Input;
use distsync_core::NodeId;

#[test]
fn safe_with_fifo_links() {
    for (n, r) in [(2, 1), (2, 2)] {
        assert_proved::<LamportMutex>("lamport-mutex", &config(n, r, true));
    }
}

/// 986,619 states: the checker, algorithms and core crates are optimized even in test
/// builds (see the workspace Cargo.toml), which keeps this under a minute.
#[test]
fn safe_with_fifo_links_three_nodes() {
    assert_proved::<LamportMutex>("lamport-mutex", &config(3, 1, true));
}

fn shortest_violation(
    n: usize,
) -> Vec<Transition<<LamportMutex as distsync_core::Process>::Msg, distsync_core::NoTimer>> {
    let c = config(n, 1, false);
    let o = run::<LamportMutex>("lamport-mutex", &c);
    let Verdict::Violated(cex) = o.verdict else {
        panic!("no violation found without FIFO links");
    };
    assert_eq!(cex.property, Property::MutualExclusion);
    assert_eq!(
        cex.detail, "nodes 0 and 1 are in the critical section at once",
        "the detail names who is inside"
    );
    assert_eq!(cex.steps.len(), cex.trace.len());
    for (i, s) in cex.steps.iter().enumerate() {
        assert_eq!(s.number, i + 1);
        eprintln!("{s}");
    }

    // The replay takes the same transitions from the initial state and breaks mutual exclusion
    // at the last one, not before: two processes end in the critical section.
    let r = replay::<LamportMutex>(&c, &cex.trace).unwrap();
    let (property, _, at) = r.violation.expect("the replay breaks a property");
    assert_eq!(property, Property::MutualExclusion);
    assert_eq!(at, cex.trace.len());
    assert_eq!(r.in_critical_section.len(), 2);
    let enters = r
        .steps
        .iter()
        .flat_map(|s| &s.outputs)
        .filter(|o| o.starts_with("Enter"))
        .count();
    assert_eq!(enters, 2);

    // Shortest: every interleaving of one transition fewer is explored without a violation.
    let mut shorter = c.clone();
    shorter.bounds.max_depth = cex.trace.len() - 1;
    let o = check::<LamportMutex>(&shorter, &mut |_| {}).unwrap();
    assert!(
        matches!(o.verdict, Verdict::HoldsWithinBound),
        "a violation within {} transitions",
        cex.trace.len() - 1
    );
    assert!(o.stats.bound_hit);
    cex.trace
}

#[test]
fn without_fifo_two_nodes_a_shortest_counterexample_of_four_steps() {
    let trace = shortest_violation(2);
    assert_eq!(trace.len(), 4);
    // Both request; the REPLY of the first to enter overtakes its own REQUEST.
    let requests = trace
        .iter()
        .filter(|t| {
            matches!(
                t,
                Transition::Input {
                    input: Input::Request,
                    ..
                }
            )
        })
        .count();
    assert_eq!(requests, 2);
    assert!(trace.iter().any(|t| matches!(
        t,
        Transition::Deliver {
            msg: distsync_algorithms::mutex::lamport::Msg::Reply { .. },
            ..
        }
    )));
}

#[test]
fn without_fifo_three_nodes_a_shortest_counterexample() {
    let trace = shortest_violation(3);
    assert_eq!(trace.len(), 7);
}

#[test]
fn a_trace_that_is_not_enabled_is_refused_by_replay() {
    let c = config(2, 1, false);
    let bogus = vec![Transition::Input {
        node: NodeId(0),
        input: Input::Release,
    }];
    let e = replay::<LamportMutex>(&c, &bogus).unwrap_err();
    assert_eq!(e.field, "trace");
}
