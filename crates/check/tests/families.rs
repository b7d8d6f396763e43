//! Every family explored: elections, multicast and snapshots proved at small sizes, and each
//! intended break found (and nothing else).

use distsync_check::{check_named, Action, Config, FaultBounds, NamedOutcome, Property};
use distsync_core::multicast::Order;
use distsync_core::NodeId;

fn cfg(nodes: usize, requests: u32, fifo: bool) -> Config {
    Config {
        nodes,
        requests,
        fifo,
        ..Config::default()
    }
}

fn run(name: &str, c: &Config) -> NamedOutcome {
    let o = check_named(name, c, &mut |_| {}).expect("a valid configuration");
    eprintln!(
        "{name} N={} R={} fifo={} faults={:?} untimed={}: {} states, depth {}, {:?}, proved {}",
        c.nodes,
        c.requests,
        c.fifo,
        c.faults,
        c.untimed,
        o.stats.states,
        o.stats.depth,
        o.stats.elapsed,
        o.proved
    );
    o
}

fn proved(name: &str, c: &Config) -> NamedOutcome {
    let o = run(name, c);
    if let Some(v) = &o.violation {
        let steps: Vec<String> = v.steps.iter().map(|s| s.to_string()).collect();
        panic!(
            "{name}: {} violated: {}\n{}",
            v.property,
            v.detail,
            steps.join("\n")
        );
    }
    assert!(o.proved, "{name}: a bound was hit");
    o
}

fn broken(name: &str, c: &Config) -> (Property, NamedOutcome) {
    let o = run(name, c);
    let v = o
        .violation
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no violation"));
    for s in &v.steps {
        eprintln!("{s}");
    }
    (v.property, o)
}

#[test]
fn every_election_algorithm_is_proved_with_three_nodes() {
    for name in [
        "bully",
        "ring",
        "chang-roberts",
        "ring-active-list",
        "peterson",
    ] {
        proved(name, &cfg(3, 1, true));
    }
    // Non-FIFO links (ring-active-list needs FIFO), and for the bully two starters at once.
    for name in ["chang-roberts", "peterson"] {
        proved(name, &cfg(3, 1, false));
    }
    let c = Config {
        elect: vec![NodeId(0), NodeId(1)],
        ..cfg(3, 1, false)
    };
    proved("bully", &c);
}

#[test]
fn bully_survives_one_crash_at_any_moment() {
    for n in [3, 4] {
        let c = Config {
            faults: FaultBounds {
                crash: 1,
                ..FaultBounds::default()
            },
            ..cfg(n, 1, false)
        };
        proved("bully", &c);
    }
}

#[test]
fn bully_elects_two_leaders_across_a_partition() {
    let c = Config {
        faults: FaultBounds {
            partition: true,
            ..FaultBounds::default()
        },
        ..cfg(3, 1, true)
    };
    let (p, o) = broken("bully", &c);
    // The shortest: 0 is cut off before its ELECTION arrives, times out and leads, while 2
    // still leads the other side; nothing more can happen, and they disagree.
    assert_eq!(p, Property::Agreement);
    let detail = &o.violation.as_ref().unwrap().detail;
    assert!(
        detail.contains("names 0") && detail.contains("names 2"),
        "{detail}"
    );
    let steps = &o.violation.as_ref().unwrap().steps;
    assert!(steps
        .iter()
        .any(|s| matches!(s.action, Action::Partition { .. })));
}

#[test]
fn the_multicast_algorithms_keep_their_orders() {
    for (name, fifo) in [("fifo-broadcast", false), ("causal-broadcast", false)] {
        proved(name, &cfg(3, 1, fifo));
        proved(name, &cfg(2, 2, fifo));
    }
    proved("total-order-multicast", &cfg(2, 2, true));
}

#[test]
fn fifo_broadcast_breaks_causal_order() {
    let c = Config {
        orders: Some(vec![Order::Causal]),
        ..cfg(3, 1, false)
    };
    let (p, o) = broken("fifo-broadcast", &c);
    assert_eq!(p, Property::CausalOrder);
    assert!(o.violation.unwrap().detail.contains("happened before"));
}

#[test]
fn the_snapshot_is_consistent_with_fifo_links_and_not_without() {
    proved("chandy-lamport", &cfg(2, 1, true));
    proved("chandy-lamport", &cfg(3, 1, true));
    let (p, _) = broken("chandy-lamport", &cfg(2, 1, false));
    assert!(
        matches!(p, Property::SnapshotConsistency | Property::Conservation),
        "{p}"
    );
}

#[test]
fn clock_synchronization_is_refused_with_a_reason() {
    for name in ["cristian", "ntp", "berkeley"] {
        let e = check_named(name, &cfg(2, 1, true), &mut |_| {}).unwrap_err();
        assert_eq!(e.field, "algo");
        assert!(e.message.contains("clock"), "{name}: {e}");
    }
}

/// Chang-Roberts with one crash and one recovery: the checker used to find agreement broken in
/// 26 steps (a late Elected of an older election overriding the newer result); its messages
/// now carry an epoch, and every interleaving at 3 processes holds.
#[test]
fn chang_roberts_survives_a_crash_and_a_recovery() {
    let c = Config {
        faults: FaultBounds {
            crash: 1,
            recover: 1,
            ..FaultBounds::default()
        },
        ..cfg(3, 1, true)
    };
    proved("chang-roberts", &c);
}
