//! A batch run keeps timers out of the pending-event queue, in one list per duration, while a
//! stepped session keeps them in the queue as events: both must be the same run, event for
//! event and byte for byte. These runs stress what the lists must reproduce: cancelled timers
//! still counted at their (time, seq) place (the ring link cancels one per message), timers
//! replaced and lost in crashes, timers that go off (crashed successors skipped), drifting
//! clocks (a span per node: more spans than lists, the rest in the queue), and runs cut short
//! by `until`, by `max_events` and by `max_pending` (which counts cancelled timers too).

use distsync_sim::session::{RunStop, Session};
use distsync_sim::{Report, Scenario};

mod support;
use support::batch;

/// The batch run (timers in lists) and the session stepped to the end (timers in the queue)
/// give the same report and trace; returns the report.
fn same_run(name: &str, toml: &str) -> Report {
    let scenario =
        Scenario::from_toml(toml, "test.toml").unwrap_or_else(|e| panic!("{name}: {e}\n{toml}"));
    let (report, trace) = batch(&scenario);
    let mut session = Session::new(&scenario, "test.toml").unwrap();
    loop {
        match session.run(u64::MAX, None).unwrap() {
            RunStop::Ended(_) => break,
            _ => continue,
        }
    }
    let seed = scenario.seed;
    let batch_json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        serde_json::to_value(session.report()).unwrap(),
        batch_json,
        "{name} (seed {seed}): reports differ"
    );
    assert!(
        session.trace_jsonl() == trace,
        "{name} (seed {seed}): traces differ"
    );
    report
}

fn ring(algorithm: &str, seed: u64, extra: &str) -> String {
    format!(
        r#"
        algorithm = "{algorithm}"
        nodes = 12
        order = "random"
        seed = {seed}
        until = "20s"
        {extra}
        [network]
        delay = {{ uniform = ["500us", "2ms"] }}
        [[event]]
        at = "0ms"
        elect = "all"
        [[event]]
        at = "3ms"
        crash = {a}
        [[event]]
        at = "9ms"
        crash = {b}
        [[event]]
        at = "40ms"
        recover = {a}
        [[event]]
        at = "45ms"
        elect = {c}
        "#,
        a = seed % 12,
        b = (seed * 7 + 3) % 12,
        c = (seed * 5 + 1) % 12,
    )
}

#[test]
fn ring_elections_with_crashes_are_the_same_run_with_timers_in_lists() {
    let mut fired = 0;
    for algorithm in ["chang-roberts", "peterson", "ring", "ring-active-list"] {
        for seed in 0..12 {
            let report = same_run(algorithm, &ring(algorithm, seed, ""));
            // The ring link's acknowledgement timers: cancelled ones are counted as events.
            assert!(
                report.events_processed > report.messages.total,
                "{algorithm}"
            );
            fired += u64::from(report.end_time_ns > 45_000_000);
        }
    }
    assert!(fired > 0);
}

#[test]
fn timers_due_at_the_same_time_as_deliveries_keep_their_order() {
    // A constant 1ms hop and T = 1ms: a message and its acknowledgement timer fall due at the
    // very same nanosecond (the message was sent first: it is delivered first, then T goes off
    // and the message is passed on to the next process too); and T = 3ms: cancelled timers fall
    // due among deliveries. Only the order among equal times (seq) decides.
    for (t, until) in [("1ms", "6ms"), ("3ms", "20s")] {
        for algorithm in ["chang-roberts", "peterson", "ring"] {
            for seed in 0..6 {
                let toml = ring(algorithm, seed, &format!("answer_timeout = \"{t}\""))
                    .replace(
                        "delay = { uniform = [\"500us\", \"2ms\"] }",
                        "delay = \"1ms\"",
                    )
                    .replace("until = \"20s\"", &format!("until = \"{until}\""));
                let toml = match until {
                    // Every message also times out and is passed on: traffic doubles each
                    // hop, so this run stays short.
                    "6ms" => &toml[..toml.find("[[event]]\n        at = \"9ms\"").unwrap()],
                    _ => &toml[..],
                };
                same_run(algorithm, toml);
            }
        }
    }
}

#[test]
fn drifting_clocks_and_lossy_links_are_the_same_run() {
    let clocks = r#"
        [clocks]
        drift_ppm = { uniform = [-200, 200] }
    "#;
    for seed in 0..6 {
        same_run("peterson, drift", &ring("peterson", seed, clocks));
        let lossy = format!("{clocks}\n[network]\ndelay = \"1ms\"\nloss = 0.05\nreliable = true");
        let toml = ring("chang-roberts", seed, "").replace(
            "[network]\n        delay = { uniform = [\"500us\", \"2ms\"] }",
            &lossy,
        );
        same_run("chang-roberts, reliable over loss, drift", &toml);
    }
}

#[test]
fn runs_cut_short_by_until_and_by_the_guards_are_the_same_run() {
    for seed in 0..4 {
        // `until` falls where cancelled timers are still pending.
        let cut = ring("peterson", seed, "").replace("until = \"20s\"", "until = \"14ms\"");
        let cut = &cut[..cut.find("[[event]]\n        at = \"40ms\"").unwrap()];
        let report = same_run("peterson until 14ms", cut);
        assert_eq!(report.ended_by, "horizon");
        assert_eq!(report.end_time_ns, 14_000_000);
        for events in [37, 120] {
            let capped = ring("chang-roberts", seed, "").replace(
                "[network]",
                &format!("[limits]\nmax_events = {events}\n[network]"),
            );
            let report = same_run("chang-roberts max_events", &capped);
            assert_eq!(report.ended_by, "limit");
        }
    }
    // The pending events the guard counts include the cancelled timers still in the lists:
    // checked every 1,024 events, with 300 processes all sending at once.
    for seed in 0..2 {
        let capped = ring("peterson", seed, "")
            .replace("nodes = 12", "nodes = 300")
            .replace("[network]", "[limits]\nmax_pending = 800\n[network]");
        let report = same_run("peterson max_pending", &capped);
        assert_eq!(report.ended_by, "limit", "{:?}", report.violations);
        assert!(report.violations[0]
            .detail
            .contains("more than `[limits] max_pending` = 800"));
    }
}
