//! Maekawa as seed 003 states it deadlocks, and the checker finds the smallest case; Maekawa with
//! FAILED, INQUIRE and YIELD has no deadlock in the same configurations.

mod common;

use common::{assert_proved, config, run};
use distsync_algorithms::mutex::{Maekawa, MaekawaBasic};
use distsync_check::{check, replay, Property, Verdict};

fn deadlock(n: usize) -> usize {
    let c = config(n, 1, false);
    let o = run::<MaekawaBasic>("maekawa-basic", &c);
    let Verdict::Violated(cex) = o.verdict else {
        panic!("maekawa-basic N={n}: no deadlock found");
    };
    assert_eq!(cex.property, Property::Deadlock, "{}", cex.detail);
    for s in &cex.steps {
        eprintln!("{s}");
    }
    // The replay ends in a state where nothing is enabled while every node waits.
    let r = replay::<MaekawaBasic>(&c, &cex.trace).unwrap();
    let (property, _, at) = r.violation.unwrap();
    assert_eq!((property, at), (Property::Deadlock, cex.trace.len()));
    assert!(r.in_critical_section.is_empty());
    assert!(
        r.steps.iter().all(|s| s.outputs.is_empty()),
        "nobody ever entered"
    );
    // Shortest.
    let mut shorter = c.clone();
    shorter.bounds.max_depth = cex.trace.len() - 1;
    let o = check::<MaekawaBasic>(&shorter, &mut |_| {}).unwrap();
    assert!(matches!(o.verdict, Verdict::HoldsWithinBound));
    cex.trace.len()
}

#[test]
fn maekawa_basic_deadlocks_already_with_two_nodes() {
    // N = 1 cannot deadlock: the only process is its own quorum.
    assert_proved::<MaekawaBasic>("maekawa-basic", &config(1, 2, false));
    // N = 2: both quorums are {0, 1}; each site votes for itself, then queues the other's
    // request. Two requests and two deliveries.
    assert_eq!(deadlock(2), 4);
}

#[test]
fn maekawa_basic_deadlocks_with_three_nodes() {
    assert_eq!(deadlock(3), 7);
}

#[test]
fn maekawa_has_no_deadlock_in_the_same_configurations() {
    for (n, r) in [(1, 2), (2, 1), (2, 2), (3, 1)] {
        let o = assert_proved::<Maekawa>("maekawa", &config(n, r, false));
        assert!(o.stats.terminal_states >= 1);
    }
}
