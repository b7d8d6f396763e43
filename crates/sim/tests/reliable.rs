//! `[network] reliable = true`: the link layer masks loss, duplication and reordering, and
//! costs nothing in the algorithm's own counts (its frames are counted apart, in `link`).

use distsync_sim::stress::{self, Fault, StressOptions};
use distsync_sim::{run, Report, RunOptions, Scenario};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text, "test.toml").unwrap()
}

fn go(s: &Scenario) -> Report {
    run(s, RunOptions::default()).unwrap()
}

/// The algorithms the issue found broken by duplication or loss.
const BROKEN_BY_FAULTS: [&str; 6] = [
    "ricart-agrawala",
    "central",
    "token-ring",
    "suzuki-kasami",
    "ricart-agrawala-token",
    "raymond",
];

#[test]
fn loss_and_duplication_break_them_and_reliable_links_mask_it() {
    let mut options = StressOptions::new(BROKEN_BY_FAULTS.map(String::from).to_vec(), 40);
    options.faults = Some(vec![
        Fault::Delay,
        Fault::Reorder,
        Fault::Loss,
        Fault::Duplicate,
    ]);
    options.max_events = 300_000;
    let raw = stress::stress(&options, &|_, _| {}).unwrap();
    for a in &raw.algorithms {
        assert!(
            a.failed > 0,
            "{} survived loss and duplication without reliable links: {:?}",
            a.algorithm,
            a.violations
        );
    }
    options.reliable = true;
    let masked = stress::stress(&options, &|_, _| {}).unwrap();
    for a in &masked.algorithms {
        let first = a.failures.first().map(|f| {
            format!(
                "run {} (seed {}): {} {}",
                f.run, f.seed, f.first.property, f.first.detail
            )
        });
        assert_eq!(
            a.failed, 0,
            "{} over reliable links: {first:?}",
            a.algorithm
        );
        assert_eq!(a.runs, 40);
    }
}

#[test]
fn the_issues_ricart_agrawala_duplicate_case_holds_over_reliable_links() {
    // Issue 10, item 1: 2 nodes, saturated, 4 requests, duplicate = 0.1, non-FIFO, delays
    // uniform 1..7ms, seed 64.
    let text = |reliable: bool| {
        format!(
            r#"
            algorithm = "ricart-agrawala"
            nodes = 2
            seed = 64
            [network]
            delay = {{ uniform = ["1ms", "7ms"] }}
            fifo = false
            duplicate = 0.1
            loss = 0.1
            reliable = {reliable}
            [workload]
            kind = "saturated"
            cs = "10ms"
            requests = 4
            "#
        )
    };
    let r = go(&scenario(&text(true)));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let m = r.sections.mutex.unwrap();
    assert_eq!(m.entries, 8);
    // 2(N-1) messages per entry, exactly: the link's retransmissions and acks are apart.
    assert_eq!(m.messages_per_entry, 2.0);
    let link = r.link.unwrap();
    assert_eq!(link.data_frames, r.messages.total + link.retransmissions);
    assert!(go(&scenario(&text(false))).link.is_none());
    // Longer, the same network: the link's work shows in its section.
    let r = go(&scenario(
        &text(true).replace("requests = 4", "requests = 40"),
    ));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.sections.mutex.unwrap().messages_per_entry, 2.0);
    let link = r.link.unwrap();
    assert!(link.retransmissions > 0, "10% loss makes some");
    assert!(link.duplicates_discarded > 0, "10% duplication makes some");
    assert!(r.messages.duplicated > 0 && r.messages.dropped > 0);
}

/// Scenarios whose figures ORACLES.md states, on a lossless network.
fn oracle_scenarios() -> Vec<String> {
    let mutex = |algo: &str, kind: &str, fifo: bool| {
        format!(
            r#"
            algorithm = "{algo}"
            nodes = 5
            [network]
            delay = "1ms"
            fifo = {fifo}
            [workload]
            kind = "{kind}"
            cs = "10ms"
            requests = 6
            "#
        )
    };
    let mut v = Vec::new();
    for algo in [
        "central",
        "lamport-mutex",
        "ricart-agrawala",
        "ricart-agrawala-token",
        "suzuki-kasami",
        "raymond",
        "maekawa",
        "singhal",
        "token-ring",
    ] {
        for kind in ["light", "saturated"] {
            v.push(mutex(algo, kind, true));
        }
    }
    v.push(
        r#"
        algorithm = "chang-roberts"
        ids = [7, 6, 5, 4, 3, 2, 1, 0]
        [network]
        delay = "1ms"
        [[event]]
        at = "0ms"
        elect = 0
        [[event]]
        at = "0ms"
        elect = 5
        "#
        .into(),
    );
    v.push(
        r#"
        algorithm = "bully"
        nodes = 8
        [network]
        delay = "1ms"
        [[event]]
        at = "0ms"
        crash = 7
        [[event]]
        at = "1ms"
        elect = 4
        "#
        .into(),
    );
    v.push(
        r#"
        algorithm = "chandy-lamport"
        nodes = 4
        [network]
        delay = { uniform = ["100us", "3ms"] }
        [app]
        kind = "bank"
        rate = 100.0
        transfers = 10
        [[event]]
        at = "20ms"
        snapshot = 0
        "#
        .into(),
    );
    v.push(
        r#"
        algorithm = "total-order-multicast"
        nodes = 4
        [network]
        delay = "1ms"
        [multicast]
        rate = 20.0
        count = 3
        "#
        .into(),
    );
    v
}

#[test]
fn every_figure_is_the_same_over_reliable_links_on_a_lossless_network() {
    for text in oracle_scenarios() {
        let plain = scenario(&text);
        let mut reliable = plain.clone();
        reliable.network.reliable = true;
        let (a, mut b) = (go(&plain), go(&reliable));
        let name = &a.algorithm;
        assert!(a.violations.is_empty(), "{name}: {:?}", a.violations);
        assert!(b.violations.is_empty(), "{name}: {:?}", b.violations);
        let link = b.link.take().expect("a link section");
        // The algorithm's messages, by kind, and every family figure are unchanged (the election
        // section includes its longest causal chain).
        assert_eq!(a.messages.total, b.messages.total, "{name}");
        assert_eq!(a.messages.by_kind, b.messages.by_kind, "{name}");
        assert_eq!(a.sections.mutex, b.sections.mutex, "{name}");
        assert_eq!(a.sections.election, b.sections.election, "{name}");
        assert_eq!(a.sections.multicast, b.sections.multicast, "{name}");
        if let (Some(x), Some(y)) = (&a.sections.snapshot, &b.sections.snapshot) {
            assert_eq!(
                (x.completed, x.consistent, x.markers),
                (y.completed, y.consistent, y.markers),
                "{name}"
            );
        }
        if text.contains("crash") {
            // The bully's three ELECTIONs to the crashed 7 (from 4, 5 and 6) are each sent
            // MAX_TRIES times before the link gives them up, and never acknowledged.
            let lost = 3;
            let resent = lost * (distsync_algorithms::link::MAX_TRIES as u64 - 1);
            assert_eq!(link.retransmissions, resent, "{name}");
            assert_eq!(link.data_frames, a.messages.total + resent, "{name}");
            assert_eq!(link.acks, a.messages.total - lost, "{name}");
            continue;
        }
        // The link sent each message once and acknowledged it once.
        assert_eq!(link.data_frames, a.messages.total, "{name}");
        // Every frame is acknowledged, but a run that stops when its work is done may stop
        // before the last acknowledgements are sent.
        if b.ended_by == "idle" {
            assert_eq!(link.acks, a.messages.total, "{name}");
        } else {
            assert!(link.acks <= a.messages.total, "{name}");
            assert!(link.acks + 10 >= a.messages.total, "{name}");
        }
        assert_eq!(link.retransmissions, 0, "{name}");
        assert_eq!(link.duplicates_discarded, 0, "{name}");
    }
}

#[test]
fn snapshots_run_over_lossy_links_once_they_are_reliable() {
    let text = |reliable: bool| {
        format!(
            r#"
            algorithm = "chandy-lamport"
            nodes = 4
            seed = 5
            [network]
            delay = {{ uniform = ["100us", "3ms"] }}
            fifo = false
            loss = 0.1
            duplicate = 0.1
            reliable = {reliable}
            [app]
            kind = "bank"
            rate = 100.0
            transfers = 15
            [[event]]
            at = "20ms"
            snapshot = 0
            [[event]]
            at = "60ms"
            snapshot = 2
            "#
        )
    };
    let e = run(&scenario(&text(false)), RunOptions::default()).unwrap_err();
    assert!(e.to_string().contains("reliable = true"), "{e}");
    let r = go(&scenario(&text(true)));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let s = r.sections.snapshot.unwrap();
    assert_eq!((s.completed, s.consistent), (2, 2));
    // Chandy-Lamport's N(N-1) markers per snapshot, exactly, whatever the link resent.
    assert_eq!(s.markers, 2 * 4 * 3);
}
