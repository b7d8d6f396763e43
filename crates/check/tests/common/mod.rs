//! Helpers shared by the checker's integration tests.

#![allow(dead_code)]

use distsync_check::{check, Bounds, Checkable, Config, Outcome, Verdict};
use distsync_core::mutex::MutualExclusion;
use distsync_core::Process;

/// A configuration of `nodes` processes, each requesting `requests` times.
pub fn config(nodes: usize, requests: u32, fifo: bool) -> Config {
    Config {
        nodes,
        requests,
        fifo,
        bounds: Bounds {
            max_states: 3_000_000,
            max_depth: 10_000,
            max_memory: None,
        },
        ..Config::default()
    }
}

/// Explores and prints the figures (visible with `--nocapture`).
pub fn run<A: Checkable + MutualExclusion>(
    name: &str,
    c: &Config,
) -> Outcome<A::Msg, <A as Process>::Timer> {
    let o = check::<A>(c, &mut |_| {}).expect("a valid configuration");
    eprintln!(
        "{name} N={} R={} fifo={}: {} states, {} transitions, depth {}, {} terminal, bound hit {}, {:?}",
        c.nodes,
        c.requests,
        c.fifo,
        o.stats.states,
        o.stats.transitions,
        o.stats.depth,
        o.stats.terminal_states,
        o.stats.bound_hit,
        o.stats.elapsed
    );
    o
}

/// Asserts the configuration is proved: every reachable state explored, no violation.
pub fn assert_proved<A: Checkable + MutualExclusion>(
    name: &str,
    c: &Config,
) -> Outcome<A::Msg, <A as Process>::Timer> {
    let o = run::<A>(name, c);
    match &o.verdict {
        Verdict::Proved => {}
        Verdict::HoldsWithinBound => panic!("{name}: the bound was hit, nothing proved"),
        Verdict::Violated(c) => panic!(
            "{name}: {} violated: {}\n{}",
            c.property,
            c.detail,
            c.steps
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
    assert!(!o.stats.bound_hit);
    assert!(o.stats.states > 1 && o.stats.transitions >= (o.stats.states - 1) as u64);
    o
}
