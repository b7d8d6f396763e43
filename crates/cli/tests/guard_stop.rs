//! `distsync run` on a run stopped by the runaway guard's caps: the summary says it was
//! stopped (not a violation), stderr names the limit, and the exit code is 3, neither a pass
//! nor a violation.

use std::process::Command;

fn run_text(name: &str, text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(["run", path.to_str().unwrap()])
        .output()
        .unwrap()
}

const RING: &str = r#"
algorithm = "chang-roberts"
nodes = 300
order = "random"
[[event]]
at = "0ms"
elect = "all"
"#;

#[test]
fn a_run_stopped_by_max_pending_is_a_stop_not_a_violation() {
    let o = run_text(
        "capped.toml",
        &format!("{RING}[limits]\nmax_pending = 100\n"),
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(out.contains("stopped:    by the runaway guard"), "{out}");
    assert!(out.contains("violations: none"), "{out}");
    assert!(err.contains("`[limits] max_pending` = 100"), "{err}");
    assert!(err.contains("not by a failure of the algorithm"), "{err}");
    // The same ring without the table runs to its leader.
    let o = run_text("free.toml", RING);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_violation_beside_a_stop_is_still_a_violation() {
    // max_events stops the token storm's run; with the storm monitor on, the storm is found
    // first: a violation (exit 1), not a stop.
    let storm = r#"
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
    let o = run_text("storm.toml", storm);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("violations: 1"), "{out}");
}
