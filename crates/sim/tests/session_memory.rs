//! A stepping session's memory grows linearly with its steps: the bytes it holds (counted by a
//! counting allocator, not timed) per step stay the same from 3,000 to 48,000 steps. Before
//! checkpoints shared the trace, every checkpoint (every 256 choices) copied the whole trace so
//! far and the bytes per step grew with the steps (the square in all).
//!
//! One test in this binary: the allocator counts every thread's allocations.

use distsync_sim::session::Session;
use distsync_sim::Scenario;

#[path = "support/counting.rs"]
mod counting;

/// A 5-process Ricart-Agrawala run that never runs out of work (the issue's example).
fn scenario() -> Scenario {
    Scenario::from_toml(
        r#"
        algorithm = "ricart-agrawala"
        nodes = 5
        until = "1000h"
        [network]
        delay = { uniform = ["500us", "1500us"] }
        [workload]
        kind = "saturated"
        cs = "1ms"
        requests = 1000000
        "#,
        "memory",
    )
    .expect("a valid scenario")
}

#[test]
fn a_sessions_bytes_per_step_stay_bounded_as_it_grows() {
    let scenario = scenario();
    let base = counting::live();
    let mut session = Session::new(&scenario, "memory").expect("a session");
    let held = |s: &Session| {
        // The session is alive (borrowed) while its bytes are read.
        assert!(!s.choices().is_empty());
        (counting::live() - base) as f64
    };
    session.run(3_000, None).expect("runs");
    let small = held(&session) / 3_000.0;
    session.run(45_000, None).expect("runs");
    assert_eq!(session.choices().len(), 48_000);
    let large = held(&session) / 48_000.0;
    // Going back and forth over checkpoints keeps the trace whole and the bytes the same.
    let trace_before = session.trace_jsonl();
    session.goto(5_000).expect("back");
    session.goto(48_000).expect("forward");
    assert!(
        session.trace_jsonl() == trace_before,
        "the trace is unchanged"
    );
    drop(trace_before);
    let again = held(&session) / 48_000.0;
    println!("bytes per step: {small:.0} at 3,000 steps, {large:.0} at 48,000, {again:.0} after going back and forth");
    // Linear: the same bytes per step (vectors that double leave some slack). Quadratic (a
    // copy of the trace, or of an engine state that grows with the run, per checkpoint) holds
    // several times as many per step at 48,000.
    assert!(
        large < small * 1.6,
        "bytes per step grew from {small:.0} at 3,000 steps to {large:.0} at 48,000"
    );
    assert!(
        again < small * 1.6,
        "{again:.0} bytes per step after going back and forth"
    );
}
