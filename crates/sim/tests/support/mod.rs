//! What several test files share: a batch run with its trace captured.

use distsync_sim::{run, Report, RunOptions, Scenario};
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
    let buffer = Shared::default();
    let report = run(
        scenario,
        RunOptions {
            trace: Some(Box::new(buffer.clone())),
            origin: "test.toml".into(),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("seed {}: {e}", scenario.seed));
    let trace = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (report, trace)
}
