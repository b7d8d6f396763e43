//! `distsync check`: exit codes, the JSON report, the counterexample, errors on bad input.

use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

#[test]
fn a_proof_exits_0_with_the_figures() {
    let o = distsync(&[
        "check",
        "--algo",
        "central",
        "--nodes",
        "2",
        "--no-fifo",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["result"], "proved");
    assert_eq!(v["algorithm"], "central");
    assert_eq!(v["fifo"], false);
    // Hand-counted: idle, REQUEST in flight, GRANT in flight, inside, RELEASE in flight, done.
    assert_eq!(v["states"], 6);
    assert_eq!(v["bound_hit"], false);
    assert!(v["violation"].is_null());
    assert!(o.stderr.is_empty(), "quiet when piped");
}

#[test]
fn a_counterexample_exits_1_with_numbered_steps() {
    let o = distsync(&[
        "check",
        "--algo",
        "lamport-mutex",
        "--nodes",
        "2",
        "--no-fifo",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["result"], "violation");
    assert_eq!(v["violation"]["property"], "mutual-exclusion");
    let steps = v["violation"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["step"], i + 1);
    }
    assert_eq!(steps[0]["transition"], "input Request at 0");
    let enters: Vec<_> = steps
        .iter()
        .flat_map(|s| s["outputs"].as_array().unwrap())
        .filter(|o| o.as_str().unwrap().starts_with("Enter"))
        .collect();
    assert_eq!(enters.len(), 2);

    let text = distsync(&[
        "check",
        "--algo",
        "lamport-mutex",
        "--nodes",
        "2",
        "--no-fifo",
    ]);
    assert_eq!(text.status.code(), Some(1));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("VIOLATION of mutual-exclusion"), "{out}");
    assert!(out.contains("  4. deliver Reply"), "{out}");
    assert!(out.contains("assumes FIFO links"), "{out}");
}

#[test]
fn a_bound_is_no_proof() {
    let o = distsync(&[
        "check",
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "3",
        "--max-states",
        "50",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["result"], "no-violation-within-bound");
    assert_eq!(v["bound_hit"], true);
    assert_eq!(v["states"], 50);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, expected) in [
        (vec!["--algo", "bully", "--nodes", "3"], "--algo"),
        (vec!["--algo", "ricart", "--nodes", "3"], "ricart-agrawala"),
        (vec!["--algo", "central", "--nodes", "0"], "--nodes"),
        (
            vec!["--algo", "central", "--nodes", "2", "--requests", "0"],
            "--requests",
        ),
        (
            vec!["--algo", "central", "--nodes", "2", "--coordinator", "9"],
            "--coordinator",
        ),
        (
            vec!["--algo", "maekawa", "--nodes", "3", "--quorums", "plane"],
            "--quorums",
        ),
    ] {
        let mut full = vec!["check"];
        full.extend(args);
        let o = distsync(&full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {err}");
        assert!(err.contains(expected), "{full:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
