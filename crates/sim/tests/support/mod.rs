//! What several test files share: a batch run with its trace captured.

// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use distsync_sim::{run, Report, RunOptions, Scenario, SimError};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A trace buffer the run writes into while the test keeps a handle to it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The batch run of `scenario` with its trace (panics naming the seed on an error).
pub fn batch(scenario: &Scenario) -> (Report, String) {
    batch_from(scenario, "test.toml").unwrap_or_else(|e| panic!("seed {}: {e}", scenario.seed))
}

/// The batch run of `scenario`, read from `origin` (which errors name; empty: the default),
/// with its trace.
pub fn batch_from(scenario: &Scenario, origin: &str) -> Result<(Report, String), SimError> {
    let buffer = Shared::default();
    let report = run(
        scenario,
        RunOptions {
            trace: Some(Box::new(buffer.clone())),
            origin: origin.into(),
            ..RunOptions::default()
        },
    )?;
    let trace = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    Ok((report, trace))
}
