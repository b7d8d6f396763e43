//! Ctrl-C (SIGINT) and SIGTERM: a campaign (`stress`, `sweep`, `compare`, `check`) stops
//! starting work, prints the summary of what it has done and writes what it has found, then
//! exits 128 + the signal (130 for Ctrl-C); a second signal ends it at once. A verb writing a
//! staged file (`run --trace`) has the file removed before the process ends.
//!
//! Without [`catch`] or [`remove_on_signal`], a signal keeps its default action (the process
//! ends at once), as for any Unix tool.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

/// Set by the first signal in a campaign: start nothing more.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`].
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether a campaign is under way (the first signal asks it to stop instead of ending the
/// process).
static CAMPAIGN: AtomicBool = AtomicBool::new(false);
/// Files to remove if a signal ends the process.
static FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Called on the first signal of a campaign (to tell a library that has its own stop).
static ON_STOP: OnceLock<fn()> = OnceLock::new();
/// The thread that receives the signals, started once.
static WATCHER: OnceLock<()> = OnceLock::new();

fn watch() {
    WATCHER.get_or_init(|| {
        let mut signals = match Signals::new([SIGINT, SIGTERM]) {
            Ok(s) => s,
            // Without the watcher the signals keep their default action: the process ends.
            Err(e) => {
                eprintln!("warning: cannot watch for Ctrl-C ({e}); it will end the process");
                return;
            }
        };
        std::thread::spawn(move || {
            for signal in signals.forever() {
                if CAMPAIGN.load(Ordering::SeqCst) && !STOP.load(Ordering::SeqCst) {
                    SIGNAL.store(signal, Ordering::SeqCst);
                    STOP.store(true, Ordering::SeqCst);
                    if let Some(f) = ON_STOP.get() {
                        f();
                    }
                    eprintln!(
                        "\ninterrupted: finishing the work under way, then the summary so far \
                         (interrupt again to quit at once)"
                    );
                    continue;
                }
                if let Ok(files) = FILES.lock() {
                    for f in files.iter() {
                        let _ = std::fs::remove_file(f);
                    }
                }
                std::process::exit(128 + signal);
            }
        });
    });
}

/// A campaign begins: from now on the first SIGINT or SIGTERM sets the returned flag, which the
/// campaign reads between runs.
pub fn catch() -> &'static AtomicBool {
    CAMPAIGN.store(true, Ordering::SeqCst);
    watch();
    &STOP
}

/// [`catch`], and `then` is called when the first signal comes.
pub fn catch_then(then: fn()) -> &'static AtomicBool {
    let _ = ON_STOP.set(then);
    catch()
}

/// The signal that interrupted the campaign, if one did.
pub fn interrupted() -> Option<i32> {
    STOP.load(Ordering::SeqCst)
        .then(|| SIGNAL.load(Ordering::SeqCst))
}

/// The exit code of a campaign interrupted by `signal`: 128 + its number, as a shell reports a
/// process the signal ended (130 for Ctrl-C).
pub fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// The name of a signal, for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "Ctrl-C (SIGINT)",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// `path` is removed if a signal ends the process before [`keep`] is called for it.
pub fn remove_on_signal(path: &Path) {
    watch();
    if let Ok(mut files) = FILES.lock() {
        files.push(path.to_path_buf());
    }
}

/// `path` is no longer removed on a signal.
pub fn keep(path: &Path) {
    if let Ok(mut files) = FILES.lock() {
        files.retain(|f| f != path);
    }
}
