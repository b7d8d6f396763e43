//! The runaway guard (storms, caps on events and pending events) and timeouts derived from the
//! network's delay bound, with a warning when a given one is too short.

use distsync_sim::{run, Report, RunOptions, Scenario};

fn go(text: &str) -> Report {
    let s = Scenario::from_toml(text, "test.toml").unwrap();
    run(&s, RunOptions::default()).unwrap()
}

/// Duplicated tokens multiply and circulate with nobody entering: a storm, stopped early.
const TOKEN_STORM: &str = r#"
    algorithm = "token-ring"
    nodes = 2
    seed = 128488575661
    until = "300s"
    holder = 1
    [network]
    delay = { uniform = ["2.908ms", "3.82ms"] }
    duplicate = 0.14797686113255984
    [workload]
    kind = "light"
    cs = "9.791ms"
    requests = 1
"#;

#[test]
fn a_storm_of_duplicated_tokens_is_stopped_with_a_violation() {
    let r = go(TOKEN_STORM);
    assert_eq!(r.ended_by, "limit");
    let v = r.violations.last().unwrap();
    assert_eq!(v.property, "storm", "{v:?}");
    assert!(v.detail.contains("in flight"), "{}", v.detail);
    // Stopped well before the horizon and before the traffic became large.
    assert!(r.end_time_ns < 10_000_000_000, "{}", r.end_time_ns);
    assert!(r.events_processed < 200_000, "{}", r.events_processed);
    // The monitor can be turned off: the same run then goes on (here capped by max_events).
    let off = go(&format!(
        "{TOKEN_STORM}\n[limits]\nstorm = false\nmax_events = 400000\n"
    ));
    assert!(off.violations.iter().all(|v| v.property != "storm"));
    let last = off.violations.last().unwrap();
    assert_eq!(last.property, "runaway");
    assert!(last.detail.contains("max_events"), "{}", last.detail);
    assert_eq!(off.events_processed, 400_000);
}

#[test]
fn pending_events_are_capped_with_a_clear_message() {
    let r = go(r#"
        algorithm = "ricart-agrawala"
        nodes = 40
        [network]
        delay = "1ms"
        [workload]
        kind = "saturated"
        requests = 3
        [limits]
        max_pending = 500
        storm = false
        "#);
    assert_eq!(r.ended_by, "limit");
    let v = r
        .violations
        .iter()
        .find(|v| v.property == "runaway")
        .expect("a runaway violation");
    assert!(v.detail.contains("max_pending` = 500"), "{}", v.detail);
    assert!(v.detail.contains("memory"), "{}", v.detail);
    // Without the cap, the same run completes.
    let r = go(r#"
        algorithm = "ricart-agrawala"
        nodes = 40
        [network]
        delay = "1ms"
        [workload]
        kind = "saturated"
        requests = 3
        "#);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.ended_by, "done");
}

#[test]
fn limits_are_checked_fields() {
    let e = Scenario::from_toml(
        "algorithm = \"central\"\nnodes = 3\n[limits]\nmax_event = 5\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("max_event"), "{e}");
}

/// The issue's case: delays uniform 1..7ms (worst round trip 14ms) and elections.
fn ring(extra: &str) -> String {
    format!(
        r#"
        algorithm = "ring"
        nodes = 6
        until = "2s"
        detect = "timeout"
        {extra}
        [network]
        delay = {{ uniform = ["1ms", "7ms"] }}
        [[event]]
        at = "0ms"
        elect = 0
        [[event]]
        at = "0ms"
        elect = 3
        "#
    )
}

#[test]
fn default_timeouts_follow_the_delay_bound() {
    let r = go(&ring(""));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.sections.election.as_ref().unwrap().agreed);
    // The derived T is 3 x 7ms: the same run with it written out is the same run.
    let explicit = go(&ring("answer_timeout = \"21ms\""));
    assert_eq!(
        serde_json::to_string(&explicit).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
    // On the default 1ms network, the default T stays 10ms.
    let fast = ring("").replace(r#"{ uniform = ["1ms", "7ms"] }"#, r#""1ms""#);
    let t10 =
        ring("answer_timeout = \"10ms\"").replace(r#"{ uniform = ["1ms", "7ms"] }"#, r#""1ms""#);
    assert_eq!(
        serde_json::to_string(&go(&fast)).unwrap(),
        serde_json::to_string(&go(&t10)).unwrap()
    );
}

#[test]
fn a_timeout_shorter_than_the_worst_round_trip_is_warned_about() {
    // (Short runs: the warnings are about the setup, not about what happens.)
    let short = |extra: &str| ring(extra).replace("until = \"2s\"", "until = \"20ms\"");
    let r = go(&short("answer_timeout = \"10ms\""));
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    let w = &r.warnings[0];
    assert!(w.contains("answer_timeout = 10ms"), "{w}");
    assert!(w.contains("14ms"), "{w}");
    assert!(w.contains("outside its assumptions"), "{w}");
    let r = go(&short("heartbeat = \"10ms\"\nheartbeat_timeout = \"12ms\""));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("heartbeat_timeout = 12ms")),
        "{:?}",
        r.warnings
    );
    // Mutual exclusion has no timeouts to warn about.
    let r = go(r#"
        algorithm = "central"
        nodes = 3
        [network]
        delay = { uniform = ["1ms", "70ms"] }
        [workload]
        kind = "saturated"
        requests = 2
        "#);
    assert!(r.warnings.is_empty());
}

/// A learner stepping through the run in the browser (a session) is told what `distsync run`
/// warns about: the view and the session's report carry the same warnings as the batch report.
#[test]
fn a_stepped_session_carries_the_same_warnings_as_the_batch_run() {
    use distsync_sim::session::{RunStop, Session};
    let text = ring("answer_timeout = \"10ms\"").replace("until = \"2s\"", "until = \"20ms\"");
    let batch = go(&text);
    assert_eq!(batch.warnings.len(), 1, "{:?}", batch.warnings);
    let scenario = Scenario::from_toml(&text, "test.toml").unwrap();
    let mut session = Session::new(&scenario, "test.toml").unwrap();
    assert_eq!(session.view().warnings, batch.warnings, "at step 0");
    while !matches!(session.run(u64::MAX, None).unwrap(), RunStop::Ended(_)) {}
    assert_eq!(session.view().warnings, batch.warnings, "at the end");
    assert_eq!(
        serde_json::to_string(&session.report()).unwrap(),
        serde_json::to_string(&batch).unwrap(),
        "the stepped run's report is the batch report, warnings included"
    );
    // Without anything to warn about, the view has no `warnings` field at all.
    let fine = Session::new(&Scenario::from_toml(&ring(""), "t.toml").unwrap(), "t.toml").unwrap();
    let view = serde_json::to_value(fine.view()).unwrap();
    assert!(view.get("warnings").is_none(), "{view}");
}

/// A ring written as `distsync_sim::bench::ring_election` writes it (`nodes = n` in a random
/// order and one `elect = "all"` event, no `[limits]` table), every process starting.
fn ring_of(algorithm: &str, n: u32, limits: &str) -> Report {
    let mut s = distsync_sim::bench::ring_election(algorithm, n, 7);
    if !limits.is_empty() {
        let table = format!("algorithm = \"{algorithm}\"\nids = [0]\n[limits]\n{limits}\n");
        s.limits = Scenario::from_toml(&table, "limits.toml").unwrap().limits;
    }
    run(&s, RunOptions::default()).unwrap()
}

/// The default `max_pending` is sized from the scenario: a ring of N processes needs a few
/// pending events per process (a message in flight, its timers, cancelled ones included), which
/// the default allows with room to spare. Checked with only half the default's per-process
/// allowance as the limit (a million processes with the 4,000,000 of before was stopped 1-8 ms
/// in; a test that large is a benchmark, `distsync bench --rows c`).
#[test]
fn a_ring_of_every_process_starting_fits_half_the_default_allowance() {
    use distsync_sim::guard::{default_max_pending, PENDING_PER_PROCESS};
    let n = 20_000;
    for algorithm in ["chang-roberts", "peterson"] {
        let half = format!("max_pending = {}", u64::from(n) * PENDING_PER_PROCESS / 2);
        let r = ring_of(algorithm, n, &half);
        assert!(r.violations.is_empty(), "{algorithm}: {:?}", r.violations);
        assert_ne!(r.ended_by, "limit", "{algorithm}");
        let e = r.sections.election.as_ref().unwrap();
        assert!(e.agreed && e.leader == Some(n - 1), "{algorithm}: {e:?}");
    }
    // The default for such a ring is at least that allowance, and grows with N.
    for n in [20_000usize, 1_000_000, 10_000_000] {
        assert!(default_max_pending(n, n) >= n as u64 * PENDING_PER_PROCESS);
    }
}

/// A guard stop says so: which limit, that it was the default for the scenario's size, and
/// that it is not a failure of the algorithm.
#[test]
fn a_stop_by_the_guard_names_its_limit_and_is_not_the_algorithm_s_failure() {
    use distsync_sim::guard::{CAP_STOP, CUT_SHORT};
    let r = ring_of("chang-roberts", 2_000, "max_pending = 1000");
    assert_eq!(r.ended_by, "limit");
    let v = r
        .violations
        .iter()
        .find(|v| v.property == CAP_STOP)
        .expect("a stop by max_pending");
    // Besides the stop, only what a run cut short fails (the election had not ended).
    assert!(
        r.violations
            .iter()
            .all(|v| v.property == CAP_STOP || CUT_SHORT.contains(&v.property.as_str())),
        "{:?}",
        r.violations.iter().map(|v| &v.property).collect::<Vec<_>>()
    );
    assert!(
        v.detail
            .contains("more than `[limits] max_pending` = 1000:"),
        "{}",
        v.detail
    );
    assert!(
        v.detail.contains("not a failure of the algorithm"),
        "{}",
        v.detail
    );
}

/// The million-process files of `benches/scenarios/` (`nodes`, `order = "random"`, `elect =
/// "all"`) without their `[limits]` table, at a size a test affords: the default guard, sized
/// from the scenario, lets every such run reach its leader (the million-process runs by hand:
/// docs/performance.md, "No hand-set limits").
#[test]
fn a_ring_file_without_limits_runs_to_its_leader() {
    let n = 20_000;
    for algorithm in ["chang-roberts", "peterson"] {
        let r = go(&format!(
            r#"
            algorithm = "{algorithm}"
            nodes = {n}
            order = "random"
            seed = 1
            until = "100h"
            [[event]]
            at = "0ms"
            elect = "all"
            "#
        ));
        assert!(r.violations.is_empty(), "{algorithm}: {:?}", r.violations);
        assert_eq!(r.ended_by, "idle", "{algorithm}");
        let e = r.sections.election.as_ref().unwrap();
        assert!(e.agreed && e.leader == Some(n - 1), "{algorithm}: {e:?}");
    }
}

/// A run that would grow without end, with the storm monitor off and no `max_pending` of its
/// own, is still stopped, by the default cap sized from the scenario, and the stop says so:
/// the runaway guard, the default limit, and how to raise it.
#[test]
fn a_runaway_without_a_limit_of_its_own_is_stopped_by_the_default_cap() {
    use distsync_sim::guard::{CAP_STOP, DEFAULT_MAX_PENDING};
    let r = go(&format!("{TOKEN_STORM}\n[limits]\nstorm = false\n"));
    assert_eq!(r.ended_by, "limit");
    let v = r
        .violations
        .iter()
        .find(|v| v.property == CAP_STOP)
        .expect("a stop by the default max_pending");
    assert!(
        v.detail.contains(&format!(
            "`[limits] max_pending` = {DEFAULT_MAX_PENDING} (the default for this scenario's size)"
        )),
        "{}",
        v.detail
    );
    assert!(v.detail.contains("runaway guard"), "{}", v.detail);
    assert!(
        v.detail.contains("raise `[limits] max_pending`"),
        "{}",
        v.detail
    );
}
