//! `run --svg`: the drawing's path is checked before the run (a missing directory is reported
//! at once, not after all the work), and a trace past the stated size (`MAX_CAPTURED_EVENTS`
//! events) is not kept for a drawing: the run's report is printed, then the drawing is refused
//! with the reason and the way to draw a window of it.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod scratch;

fn run(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .unwrap();
    (o, started.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_drawing_into_a_missing_directory_is_refused_before_the_run() {
    let dir = scratch::path("distsync-svg-guard-", "d");
    std::fs::create_dir(&*dir).unwrap();
    // A run long enough to notice (minutes of simulation) if it were made first.
    let scenario = dir.join("long.toml");
    std::fs::write(
        &scenario,
        "algorithm = \"ricart-agrawala\"\nnodes = 30\nuntil = \"100000s\"\n\
         [workload]\nkind = \"saturated\"\ncs = \"1ms\"\n",
    )
    .unwrap();
    let missing = dir.join("no/such/dir/out.svg");
    let (o, took) = run(&[
        "run",
        scenario.to_str().unwrap(),
        "--svg",
        missing.to_str().unwrap(),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--svg") && err.contains("no/such/dir"),
        "{err}"
    );
    assert!(err.contains("does not exist"), "{err}");
    assert!(o.stdout.is_empty(), "nothing was run: {}", text(&o.stdout));
    assert!(took < Duration::from_secs(20), "refused after {took:?}");
    // A directory where the drawing should go.
    let (o, _) = run(&[
        "run",
        scenario.to_str().unwrap(),
        "--svg",
        dir.to_str().unwrap(),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");
}

#[test]
fn a_trace_past_the_stated_size_is_not_drawn_and_says_how_to_draw_a_window() {
    let dir = scratch::path("distsync-svg-guard-", "d");
    std::fs::create_dir(&*dir).unwrap();
    // 40 processes, every one always requesting, 4 requests each: 40 x 4 entries of 2 x 39
    // messages, two events each, about 25,000 events; the cap is lowered to 10,000 for the test.
    let scenario = dir.join("big.toml");
    std::fs::write(
        &scenario,
        "algorithm = \"ricart-agrawala\"\nnodes = 40\n[workload]\nkind = \"saturated\"\nrequests = 4\n",
    )
    .unwrap();
    let out = dir.join("big.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .env("DISTSYNC_MAX_CAPTURED_EVENTS", "10000")
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--svg",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        stdout.contains("violations: none"),
        "the report first: {stdout}"
    );
    assert!(err.contains("more than 10000 events"), "{err}");
    assert!(err.contains("--trace") && err.contains("--from"), "{err}");
    assert!(!out.exists());
    // Under the cap, the same run is drawn.
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .env("DISTSYNC_MAX_CAPTURED_EVENTS", "100000")
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--svg",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(out.exists());
}
