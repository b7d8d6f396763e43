//! Faults as bounded choices, timers by deadline or at any moment, and the explorer's own
//! safety: bounds that stop cleanly, sizes refused, the same result on any number of threads.

use distsync_check::{check_named, Action, Bound, Bounds, Config, FaultBounds, Property};

fn cfg(nodes: usize, requests: u32, fifo: bool) -> Config {
    Config {
        nodes,
        requests,
        fifo,
        ..Config::default()
    }
}

/// Issue 10 item 1, proved: a REPLY echoes the timestamp of the REQUEST it answers and counts
/// once per site, so no interleaving with a duplicated message breaks Ricart-Agrawala (it did
/// before the fix: a late copy of the REPLY to request k counted for request k+1).
#[test]
fn ricart_agrawala_survives_any_one_duplicate() {
    let c = Config {
        faults: FaultBounds {
            duplicate: 1,
            ..FaultBounds::default()
        },
        ..cfg(2, 2, false)
    };
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    assert!(o.proved, "{:?}", o.violation.map(|v| v.steps));
}

/// The token ring assumes exactly-once channels: one duplicated TOKEN makes two holders.
#[test]
fn token_ring_with_one_duplicate_has_a_shortest_violation() {
    let c = Config {
        faults: FaultBounds {
            duplicate: 1,
            ..FaultBounds::default()
        },
        ..cfg(2, 2, false)
    };
    let o = check_named("token-ring", &c, &mut |_| {}).unwrap();
    let v = o.violation.expect("a duplicated token breaks it");
    for s in &v.steps {
        eprintln!("{s}");
    }
    assert_eq!(v.property, Property::MutualExclusion);
    let dup = v
        .steps
        .iter()
        .position(|s| matches!(s.action, Action::Duplicate { .. }))
        .expect("a duplication in the trace");
    assert!(
        v.steps[dup].transition.contains("Token"),
        "{}",
        v.steps[dup]
    );
    // Shortest: one transition fewer, no violation anywhere (step 0 is what the processes did
    // at start, the holder passing the token on, and is no transition).
    let transitions = v.steps.iter().filter(|s| s.number > 0).count();
    let mut shorter = c.clone();
    shorter.bounds.max_depth = transitions - 1;
    let o = check_named("token-ring", &shorter, &mut |_| {}).unwrap();
    assert!(o.violation.is_none() && !o.proved);
    // Without the duplication the same configuration is proved.
    let o = check_named("token-ring", &cfg(2, 2, false), &mut |_| {}).unwrap();
    assert!(o.proved);
}

#[test]
fn a_lost_message_starves_a_request() {
    let c = Config {
        faults: FaultBounds {
            loss: 1,
            ..FaultBounds::default()
        },
        ..cfg(2, 1, false)
    };
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    let v = o
        .violation
        .expect("a lost REQUEST or REPLY leaves a process waiting");
    assert_eq!(v.property, Property::Deadlock);
    assert!(v
        .steps
        .iter()
        .any(|s| matches!(s.action, Action::Lose { .. })));
}

#[test]
fn a_crashed_token_holder_and_a_recovery() {
    // Mutual exclusion does not survive crashes: the crashed process's permission is missing.
    let c = Config {
        faults: FaultBounds {
            crash: 1,
            ..FaultBounds::default()
        },
        ..cfg(2, 1, false)
    };
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    let v = o.violation.expect("a crash breaks ricart-agrawala");
    assert!(v
        .steps
        .iter()
        .any(|s| matches!(s.action, Action::Crash { .. })));
    // The bully algorithm with a crash and a recovery: the recovered process bullies back, and
    // a COORDINATOR sent by 1 just before 2 recovered can arrive at 0 after 2's own. 0 used to
    // end naming 1 while 1 and 2 named 2 (9 steps); a process that hears a lower COORDINATOR
    // after a higher one now holds an election, which 2 wins again: proved.
    let c = Config {
        faults: FaultBounds {
            crash: 1,
            recover: 1,
            ..FaultBounds::default()
        },
        ..cfg(3, 1, true)
    };
    let o = check_named("bully", &c, &mut |_| {}).unwrap();
    assert!(
        o.proved,
        "bully with a crash and a recovery: {:?}",
        o.violation.map(|v| (v.property, v.steps.len()))
    );
}

#[test]
fn timers_by_deadline_prove_what_untimed_timers_break() {
    // By deadline, T fires only once every answer has arrived: bully is proved.
    let c = cfg(3, 1, false);
    let o = check_named("bully", &c, &mut |_| {}).unwrap();
    assert!(o.proved);
    // With any timer at any moment, T can fire before the OK of a live process: two leaders.
    let c = Config {
        untimed: true,
        ..cfg(3, 1, false)
    };
    let o = check_named("bully", &c, &mut |_| {}).unwrap();
    let v = o
        .violation
        .expect("an early timeout breaks the bully algorithm");
    assert!(v
        .steps
        .iter()
        .any(|s| matches!(s.action, Action::Timer { .. })));
}

#[test]
fn bounds_stop_cleanly_and_are_no_proof() {
    let mut c = cfg(3, 1, false);
    c.bounds.max_states = 5;
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    assert!(!o.proved && o.violation.is_none());
    assert_eq!((o.stats.states, o.stats.bound), (5, Some(Bound::States)));
    let mut c = cfg(3, 1, false);
    c.bounds.max_depth = 2;
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    assert_eq!((o.stats.depth, o.stats.bound), (2, Some(Bound::Depth)));
    assert!(!o.proved);
    // A memory bound below what the process already uses stops at the first reading.
    let mut c = cfg(3, 1, false);
    c.bounds = Bounds {
        max_memory: Some(1),
        ..Bounds::default()
    };
    let o = check_named("ricart-agrawala", &c, &mut |_| {}).unwrap();
    assert_eq!(o.stats.bound, Some(Bound::Memory));
    assert!(!o.proved && o.violation.is_none());
    assert!(o.stats.states < 6571, "stopped before the end");
}

#[test]
fn sizes_beyond_reach_and_bad_fields_are_refused() {
    let err = |c: Config| check_named("ricart-agrawala", &c, &mut |_| {}).unwrap_err();
    let e = err(cfg(50, 1, false));
    assert_eq!(e.field, "nodes");
    assert!(e.message.contains("1 to 8"), "{e}");
    assert_eq!(err(cfg(0, 1, false)).field, "nodes");
    assert_eq!(err(cfg(2, 0, false)).field, "requests");
    let mut c = cfg(2, 1, false);
    c.bounds.max_states = 0;
    assert_eq!(err(c).field, "max-states");
    let mut c = cfg(2, 1, false);
    c.params.coordinator = Some(distsync_core::NodeId(7));
    assert_eq!(
        check_named("central", &c, &mut |_| {}).unwrap_err().field,
        "coordinator"
    );
    let mut c = cfg(2, 1, false);
    c.faults.recover = 1;
    assert_eq!(err(c).field, "recover");
    let mut c = cfg(2, 1, false);
    c.faults.crash = 1;
    let e = check_named("causal-broadcast", &c, &mut |_| {}).unwrap_err();
    assert_eq!(e.field, "crash");
}

#[test]
fn any_number_of_threads_gives_the_same_result() {
    for (name, c) in [
        ("ricart-agrawala", cfg(3, 1, false)),
        ("lamport-mutex", cfg(3, 1, false)),
        ("maekawa-basic", cfg(3, 1, false)),
    ] {
        let one = check_named(
            name,
            &Config {
                threads: 1,
                ..c.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        let two = check_named(
            name,
            &Config {
                threads: 3,
                ..c.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(one.stats.states, two.stats.states, "{name}");
        assert_eq!(one.stats.transitions, two.stats.transitions, "{name}");
        assert_eq!(one.proved, two.proved, "{name}");
        let len = |o: &distsync_check::NamedOutcome| o.violation.as_ref().map(|v| v.steps.len());
        assert_eq!(len(&one), len(&two), "{name}");
        assert_eq!(
            one.violation.map(|v| v.steps),
            two.violation.map(|v| v.steps),
            "{name}: the same counterexample"
        );
    }
}
