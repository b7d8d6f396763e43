//! Physical clock synchronization (Cristian, Berkeley, NTP) against ORACLES.md, and logical
//! clocks (Lamport, vector) on simulated traces.

mod common;
use common::*;

const MS: f64 = 1_000_000.0;

/// Cristian on `2 + seed % 6` nodes: random delays in [1ms, 5ms], random offsets and drifts,
/// a perfect time server 0.
fn cristian(seed: u64, min_delay: &str) -> String {
    let n = 2 + seed % 6;
    format!(
        r#"
        algorithm = "cristian"
        nodes = {n}
        server = 0
        until = "4500ms"
        sync_interval = "1s"
        min_delay = "{min_delay}"
        max_drift_ppm = 100
        [network]
        delay = {{ uniform = ["1ms", "5ms"] }}
        [clocks]
        offset = {{ uniform = ["-50ms", "50ms"] }}
        drift_ppm = {{ uniform = [-100, 100] }}
        [[clocks.node]]
        id = 0
        offset = "0s"
        drift_ppm = 0
        "#
    )
}

#[test]
fn cristian_clients_are_within_their_reported_bound_over_300_seeds() {
    let mut worst_ratio: f64 = 0.0;
    let mut checks = 0;
    for seed in 0..300 {
        let r = run_toml(&cristian(seed, "1ms"), seed);
        let c = r.sections.clock.as_ref().unwrap();
        assert!(
            r.violations.is_empty(),
            "reproduce with seed={seed}: {:?}",
            r.violations
        );
        // Every client synchronized at 0s, 1s, 2s, 3s and 4s.
        let clients = r.nodes as u64 - 1;
        assert_eq!(c.bound_checks, 5 * clients, "seed={seed}");
        assert_eq!(c.rounds, 5 * clients, "seed={seed}");
        assert!(c.worst_bound_ratio <= 1.0);
        // Right after a synchronization a client is within RTT/2 - min <= 4ms of the server
        // (plus drift): the clients are never further apart than two such errors plus the drift
        // of up to 200ppm over a 1s interval.
        let worst_skew = c.worst_skew_ns.unwrap() as f64;
        assert!(
            worst_skew <= 2.0 * 4.0 * MS + 2.0 * 100e-6 * 1.1e9,
            "seed={seed}: {c:?}"
        );
        worst_ratio = worst_ratio.max(c.worst_bound_ratio);
        checks += c.bound_checks;
    }
    eprintln!("cristian: {checks} bounds checked, largest error/bound {worst_ratio:.3}");
    // The bound is tight enough to matter: some error uses a good part of it.
    assert!(worst_ratio > 0.3, "{worst_ratio}");
}

#[test]
fn the_bound_monitor_catches_a_wrong_minimum_delay() {
    // Claiming a 3ms minimum when delays go down to 1ms makes the bound too small for some
    // exchange: the monitor must notice.
    let caught = (0..300).find(|&seed| {
        let r = run_toml(&cristian(seed, "3ms"), seed);
        r.violations.iter().any(|v| v.property == "sync-bound")
    });
    assert!(caught.is_some(), "no seed broke the too-small bound");
}

#[test]
fn cristian_steps_and_slews_to_the_same_place() {
    // A clock that is still slewing runs up to slew_ppm (500) off, on top of its drift (50):
    // the bound's drift allowance must cover both, hence max_drift_ppm = 700.
    for adjust in ["step", "slew"] {
        let text = format!(
            r#"
            algorithm = "cristian"
            nodes = 4
            until = "30s"
            sync_interval = "5s"
            min_delay = "1ms"
            max_drift_ppm = 700
            [network]
            delay = "1ms"
            [clocks]
            offset = {{ uniform = ["-2ms", "2ms"] }}
            drift_ppm = {{ uniform = [-50, 50] }}
            adjust = "{adjust}"
            slew_ppm = 500
            [[clocks.node]]
            id = 0
            offset = "0s"
            drift_ppm = 0
            "#
        );
        let r = run_toml(&text, 3);
        assert!(r.violations.is_empty(), "{adjust}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        // Constant 1ms delays: every sample is exact up to drift, so after the last correction
        // (at 25s) a client is off by at most its drift over the 5s since: 50ppm of 5s = 250us.
        assert!(c.max_error_ns < 300_000, "{adjust}: {c:?}");
    }
}

/// NTP: five stratum-1 servers 0..4 with perfect clocks except those in `wrong` (id, offset),
/// three clients 5..7 with random offsets and drifts up to 20ppm, delays in [1ms, 5ms].
fn ntp(wrong: &[(u32, &str)]) -> String {
    let mut text = r#"
        algorithm = "ntp"
        nodes = 8
        strata = [[0, 1, 2, 3, 4]]
        until = "12500ms"
        sync_interval = "1s"
        max_drift_ppm = 20
        [network]
        delay = { uniform = ["1ms", "5ms"] }
        [clocks]
        offset = { uniform = ["-50ms", "50ms"] }
        drift_ppm = { uniform = [-20, 20] }
        "#
    .to_string();
    for id in 0..5 {
        let offset = wrong.iter().find(|w| w.0 == id).map_or("0s", |w| w.1);
        text += &format!("[[clocks.node]]\nid = {id}\noffset = \"{offset}\"\ndrift_ppm = 0\n");
    }
    text
}

#[test]
fn ntp_rejects_one_falseticker_of_five_and_stays_within_the_delay_asymmetry() {
    let mut tightest: f64 = 0.0;
    for seed in 0..40 {
        let r = run_toml(&ntp(&[(3, "1s")]), seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        // Three clients, 13 polls each (0s..12s), every one rejecting server 3 and only it.
        assert_eq!(c.rounds, 39, "seed={seed}");
        assert_eq!(c.no_majority, 0);
        assert_eq!(c.ignored.len(), 1, "seed={seed}: {:?}", c.ignored);
        assert_eq!(c.ignored["3"], 39);
        // Each offset is off by half the asymmetry of its exchange, at most (5ms - 1ms) / 2.
        // A filtered sample may be up to 7 polls old, and the clock runs on for a poll after
        // the correction: 20ppm over 9s adds 180us.
        let asymmetry = (5.0 - 1.0) / 2.0 * MS;
        let drift = 20e-6 * 9e9;
        let worst = c.worst_error_ns.unwrap() as f64;
        assert!(worst <= asymmetry + drift, "seed={seed}: {worst}");
        tightest = tightest.max(worst / (asymmetry + drift));
        assert_eq!(c.strata["5"], 2);
        assert_eq!(c.strata["0"], 1);
    }
    eprintln!("ntp: worst error after first sync up to {tightest:.3} of the asymmetry bound");
}

#[test]
fn ntp_reports_no_majority_rather_than_following_three_wrong_servers() {
    // Three of five servers a second off (two ahead, one behind): no three intervals share a
    // point, so no majority agrees on the time.
    for seed in 0..20 {
        let r = run_toml(&ntp(&[(2, "1s"), (3, "1s"), (4, "-1s")]), seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        assert_eq!(c.no_majority, 39, "seed={seed}");
        assert_eq!(c.adjustments, 0, "the clocks are left alone");
        assert_eq!(c.rounds, 0);
        // The clients kept their own clocks (50ms off at most, plus drift), not a second off.
        assert!(c.max_error_ns < 51 * MS as u64, "seed={seed}: {c:?}");
    }
}

#[test]
fn a_wrong_majority_that_agrees_is_followed() {
    // The limit of any selection by majority: three servers wrong by the same second look
    // like the truth, and the two right ones are rejected as falsetickers.
    let r = run_toml(&ntp(&[(2, "1s"), (3, "1s"), (4, "1s")]), 1);
    let c = r.sections.clock.unwrap();
    assert_eq!(c.ignored["0"], 39);
    assert_eq!(c.ignored["1"], 39);
    assert!((c.max_error_ns as f64 - 1e9).abs() < 3.0 * MS, "{c:?}");
}

#[test]
fn ntp_strata_build_up_from_the_reference_servers() {
    let r = run_toml(
        r#"
        algorithm = "ntp"
        nodes = 5
        strata = [[0], [1, 2]]
        until = "3500ms"
        [network]
        delay = { uniform = ["1ms", "2ms"] }
        [clocks]
        offset = { uniform = ["-50ms", "50ms"] }
        drift_ppm = { uniform = [-20, 20] }
        [[clocks.node]]
        id = 0
        offset = "0s"
        drift_ppm = 0
        "#,
        1,
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let c = r.sections.clock.unwrap();
    let strata: Vec<u8> = (0..5).map(|i| c.strata[&i.to_string()]).collect();
    assert_eq!(strata, vec![1, 2, 2, 3, 3]);
    // Two hops of at most 0.5ms asymmetry each, plus drift.
    assert!(c.max_error_ns < 1_200_000, "{c:?}");
}

/// Berkeley on `n` nodes, delays in [1ms, 5ms], offsets within 50ms and drifts within 100ppm
/// (or as `extra` says), until `until`.
fn berkeley(n: u64, until: &str, extra: &str) -> String {
    format!(
        r#"
        algorithm = "berkeley"
        nodes = {n}
        until = "{until}"
        sync_interval = "1s"
        answer_timeout = "50ms"
        [network]
        delay = {{ uniform = ["1ms", "5ms"] }}
        [clocks]
        offset = {{ uniform = ["-50ms", "50ms"] }}
        drift_ppm = {{ uniform = [-100, 100] }}
        {extra}
        "#
    )
}

#[test]
fn berkeley_skew_after_a_round_is_below_the_spread_of_round_trip_asymmetry() {
    // Rounds at 0s..4s; by 4.1s the last round's adjustments have all arrived.
    let mut widest: f64 = 0.0;
    for seed in 0..200 {
        let n = 3 + seed % 6;
        let r = run_toml(&berkeley(n, "4100ms", ""), seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        assert_eq!(c.rounds, 5, "seed={seed}");
        assert_eq!(c.masters, vec![distsync_core::NodeId(n as u32 - 1)]);
        // Each offset estimate is off by half its round trip's asymmetry, at most (5-1)/2 ms,
        // so two clocks are at most 4ms apart, plus 200ppm of relative drift over the 100ms
        // since the round.
        let spread = (5.0 - 1.0) * MS;
        let skew = c.max_skew_ns as f64;
        assert!(skew <= spread + 200e-6 * 1e8, "seed={seed}: skew {skew}");
        widest = widest.max(skew / spread);
    }
    eprintln!("berkeley: skew after a round up to {widest:.3} of the asymmetry spread");
}

#[test]
fn berkeley_leaves_a_clock_10s_off_out_of_the_average_and_still_corrects_it() {
    let extra = "[[clocks.node]]\nid = 2\noffset = \"10s\"";
    for seed in 0..20 {
        let r = run_toml(&berkeley(5, "4100ms", extra), seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        // Left out of the first round only: after it, its clock is with the others.
        assert_eq!(c.ignored.get("2"), Some(&1), "seed={seed}: {:?}", c.ignored);
        assert_eq!(c.ignored.len(), 1);
        // Had it counted, the average would have moved every clock by about 2s.
        assert!(c.max_error_ns < 60 * MS as u64, "seed={seed}: {c:?}");
        assert!(c.max_skew_ns < 5 * MS as u64, "seed={seed}: {c:?}");
        let node2 = c.clocks.iter().find(|k| k.node.0 == 2).unwrap();
        assert!(node2.error_ns.abs() < 60 * MS as i64, "{node2:?}");
    }
}

#[test]
fn berkeley_elects_a_new_master_when_the_master_crashes_and_rounds_continue() {
    let extra = "[[event]]\nat = \"3500ms\"\ncrash = 4";
    for seed in 0..20 {
        let r = run_toml(&berkeley(5, "10100ms", extra), seed);
        assert!(r.violations.is_empty(), "seed={seed}: {:?}", r.violations);
        let c = r.sections.clock.unwrap();
        assert_eq!(
            c.masters,
            vec![distsync_core::NodeId(4), distsync_core::NodeId(3)],
            "seed={seed}"
        );
        // Master 4 polls at 0s..3s. The others miss its polls at 4s and 5s, elect 3 at 5s
        // (bully: 3 waits T = 50ms for 4), and 3 polls at 6s..10s.
        assert_eq!(c.rounds, 4 + 5, "seed={seed}");
        assert!(c.max_skew_ns < 5 * MS as u64, "seed={seed}: {c:?}");
    }
}

/// Runs `text` with a trace and reads the trace back with the library API.
fn trace_of(text: &str, name: &str) -> distsync_sim::causality::Trace {
    let file = tempfile::Builder::new()
        .prefix(&format!("distsync-clocks-{name}-"))
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let path = file.path();
    let scenario = distsync_sim::Scenario::from_toml(text, "test.toml").unwrap();
    distsync_sim::run(
        &scenario,
        distsync_sim::RunOptions {
            trace: Some(Box::new(std::fs::File::create(path).unwrap())),
            ..Default::default()
        },
    )
    .unwrap();
    let trace = distsync_sim::causality::Trace::load(path).unwrap();
    file.close().unwrap();
    trace
}

/// Happens-before by its definition (seed 003, "Logical clocks"): the order of events at one
/// process, a send before its delivery, and transitivity.
fn reachable(trace: &distsync_sim::causality::Trace) -> Vec<Vec<bool>> {
    let events = &trace.events;
    let n = events.len();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut last_at = std::collections::HashMap::new();
    let mut sent = std::collections::HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.vector.is_none() {
            continue;
        }
        if let Some(prev) = last_at.insert(e.node, i) {
            next[prev].push(i);
        }
        match e.event.as_str() {
            "send" => {
                sent.insert(e.msg_id, i);
            }
            "deliver" => next[sent[&e.msg_id]].push(i),
            _ => {}
        }
    }
    (0..n)
        .map(|a| {
            let mut seen = vec![false; n];
            let mut stack = next[a].clone();
            while let Some(b) = stack.pop() {
                if !seen[b] {
                    seen[b] = true;
                    stack.extend(&next[b]);
                }
            }
            seen
        })
        .collect()
}

#[test]
fn trace_timestamps_follow_the_rules_of_oracles_md() {
    use distsync_core::Causality;
    let texts = [
        (
            "ra",
            r#"
            algorithm = "ricart-agrawala"
            nodes = 4
            [network]
            delay = { uniform = ["1ms", "5ms"] }
            fifo = false
            [workload]
            kind = "poisson"
            rate = 50.0
            cs = "2ms"
            requests = 3
            "#,
        ),
        (
            "cb",
            r#"
            algorithm = "causal-broadcast"
            nodes = 4
            [network]
            delay = { uniform = ["100us", "20ms"] }
            fifo = false
            [multicast]
            rate = 50.0
            count = 4
            "#,
        ),
    ];
    for (name, text) in texts {
        let trace = trace_of(text, name);
        let hb = reachable(&trace);
        let stamped: Vec<u64> = trace
            .events
            .iter()
            .filter(|e| e.vector.is_some())
            .map(|e| e.seq)
            .collect();
        let (mut before, mut concurrent_lamport_less) = (0, 0);
        for &a in &stamped {
            for &b in &stamped {
                if a == b {
                    continue;
                }
                let r = trace.relation(a, b).unwrap();
                let truth = hb[a as usize][b as usize];
                // Vector: a -> b iff V(a) < V(b).
                assert_eq!(r.causality == Causality::Before, truth, "{name}: {a} {b}");
                assert_ne!(r.causality, Causality::Equal);
                // Lamport: a -> b implies L(a) < L(b) ...
                if truth {
                    assert!(r.lamport_less, "{name}: {a} -> {b}");
                    before += 1;
                }
                // ... not the converse.
                if r.causality == Causality::Concurrent && r.lamport_less {
                    concurrent_lamport_less += 1;
                }
            }
        }
        assert!(
            before > 100 && concurrent_lamport_less > 0,
            "{name}: {before} {concurrent_lamport_less}"
        );
        // Lamport's total order (C, id) is a strict order consistent with happens-before.
        let mut order: Vec<(u64, u32, u64)> = stamped
            .iter()
            .map(|&s| {
                let e = &trace.events[s as usize];
                (e.lamport.unwrap(), e.node.unwrap().0, s)
            })
            .collect();
        order.sort();
        for w in order.windows(2) {
            // No two events share (C, id): the order is total ...
            assert_ne!((w[0].0, w[0].1), (w[1].0, w[1].1), "{name}");
            // ... and never puts an event before one that happened before it.
            assert!(
                !hb[w[1].2 as usize][w[0].2 as usize],
                "{name}: total order against ->"
            );
        }
    }
}

#[test]
fn fields_of_another_family_are_refused() {
    let refused = |text: &str, field: &str| {
        let s = distsync_sim::Scenario::from_toml(text, "t.toml").unwrap();
        let e = distsync_sim::run(&s, Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("`{field}`")), "{e}");
    };
    refused(
        "algorithm = \"ricart-agrawala\"\nnodes = 3\nsync_interval = \"1s\"",
        "sync_interval",
    );
    refused(
        "algorithm = \"cristian\"\nnodes = 3\n[multicast]\nrate = 1.0",
        "multicast",
    );
    refused(
        "algorithm = \"cristian\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nsnapshot = 1",
        "event[0].snapshot",
    );
    refused(
        "algorithm = \"bully\"\nnodes = 3\n[app]\nkind = \"bank\"",
        "app",
    );
    refused(
        "algorithm = \"berkeley\"\nnodes = 3\nmaster_election = \"ricart-agrawala\"",
        "master_election",
    );
    refused(
        "algorithm = \"ntp\"\nnodes = 3\nstrata = [[0], [0]]",
        "strata",
    );
}
