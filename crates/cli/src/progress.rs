//! Progress bars for long work: drawn on a terminal, never when stderr is piped or the output is
//! `--json`; cleared when dropped, so a verb's early return leaves no half-drawn bar.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar that may not be drawn at all.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `len` steps drawn with `template`, unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool, len: u64, template: &str) -> Progress {
        Progress((!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(len);
            bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
            bar
        }))
    }

    /// A bar counting runs: "{doing} [====] 12/40 runs, 3s elapsed, ETA 7s".
    pub fn runs(quiet: bool, doing: &str) -> Progress {
        Progress::new(
            quiet,
            0,
            &format!(
                "{{spinner}} {doing} {{bar:40}} {{pos}}/{{len}} runs, {{elapsed}} elapsed, ETA {{eta}}"
            ),
        )
    }

    /// `done` of `total` steps.
    pub fn update(&self, done: u64, total: u64) {
        if let Some(bar) = &self.0 {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    /// The bar itself, where one is drawn (for messages, or to move into a callback).
    pub fn bar(&self) -> Option<&ProgressBar> {
        self.0.as_ref()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
