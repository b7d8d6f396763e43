//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use distsync_sim::{run, Report, RunOptions, Scenario};

/// A scenario from TOML text, run with `seed`; panics (with the seed) on input errors.
pub fn run_toml(text: &str, seed: u64) -> Report {
    let scenario = Scenario::from_toml(text, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    run(
        &scenario,
        RunOptions {
            seed: Some(seed),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

/// A mutex scenario on `n` nodes with constant delay 1ms and CS time 10ms.
pub fn mutex_scenario(algorithm: &str, n: u32, workload: &str, requests: u64) -> String {
    format!(
        r#"
        algorithm = "{algorithm}"
        nodes = {n}
        until = "1h"
        [network]
        delay = "1ms"
        fifo = true
        [workload]
        kind = "{workload}"
        cs = "10ms"
        requests = {requests}
        "#
    )
}

pub const T: f64 = 1_000_000.0;
pub const E: f64 = 10_000_000.0;
