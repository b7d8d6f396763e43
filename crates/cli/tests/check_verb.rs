//! `distsync check`: exit codes, the JSON report, the counterexample, errors on bad input.

use std::process::{Command, Output};

mod scratch;

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
fn a_bound_is_no_proof_and_exits_3_or_4_under_require_proof() {
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
    assert_eq!(o.status.code(), Some(3));
    let v = json(&o);
    assert_eq!(v["result"], "no-violation-within-bound");
    assert_eq!(v["bound_hit"], true);
    assert_eq!(v["bound"], "states");
    assert_eq!(v["states"], 50);
    let o = distsync(&[
        "check",
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "3",
        "--max-depth",
        "3",
        "--require-proof",
    ]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--require-proof") && err.contains("--max-depth"),
        "{err}"
    );
    // A memory bound stops cleanly too.
    let o = distsync(&[
        "check",
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "3",
        "--no-fifo",
        "--max-memory",
        "1KB",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(json(&o)["bound"], "memory");
}

#[test]
fn fifty_nodes_are_refused_instead_of_exhausting_memory() {
    let o = distsync(&["check", "--algo", "ricart-agrawala", "--nodes", "50"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--nodes") && err.contains("1 to 8"), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, expected) in [
        (vec!["--algo", "cristian", "--nodes", "3"], "clock readings"),
        (
            vec!["--algo", "bully", "--nodes", "3", "--order", "causal"],
            "--order",
        ),
        (
            vec!["--algo", "causal-broadcast", "--nodes", "2", "--crash", "1"],
            "--crash",
        ),
        (
            vec!["--algo", "central", "--nodes", "2", "--max-memory", "lots"],
            "--max-memory",
        ),
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

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn temp(name: &str) -> scratch::Scratch {
    scratch::path("distsync-check-verb-", name)
}

#[test]
fn a_counterexample_trace_is_drawn_and_read_by_clocks() {
    let trace = temp("lamport.jsonl");
    let svg = temp("lamport.svg");
    let t = trace.to_str().unwrap();
    let o = distsync(&[
        "check",
        "--algo",
        "lamport-mutex",
        "--nodes",
        "2",
        "--no-fifo",
        "--trace",
        t,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["event"], "header");
    assert_eq!(lines[0]["family"], "mutex");
    // Two starts, then per step: the event and its sends/outputs.
    let delivers = lines.iter().filter(|l| l["event"] == "deliver").count();
    assert_eq!(delivers, 2);
    let enters = lines
        .iter()
        .filter(|l| l["event"] == "output" && l["output"] == "Enter")
        .count();
    assert_eq!(enters, 2);
    // Every deliver names the msg_id of an earlier send.
    for l in lines.iter().filter(|l| l["event"] == "deliver") {
        let id = &l["msg_id"];
        assert!(lines.iter().any(|s| s["event"] == "send"
            && s["msg_id"] == *id
            && s["seq"].as_u64() < l["seq"].as_u64()));
    }
    let o = distsync(&["trace", "render", t, "--svg", svg.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    // The two Request sends are concurrent; clocks reads the trace and says so.
    let sends: Vec<u64> = lines
        .iter()
        .filter(|l| l["event"] == "send")
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    let (a, b) = (sends[0].to_string(), sends[1].to_string());
    let o = distsync(&["clocks", t, "--a", &a, "--b", &b, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert!(v.to_string().contains("concurrent"), "{v}");
}

#[test]
fn a_scenario_file_with_a_check_table() {
    let path = temp("bully-partition.toml");
    std::fs::write(
        &path,
        "algorithm = \"bully\"\nnodes = 3\n[network]\nfifo = true\n\
         [[event]]\nat = \"1ms\"\nelect = 0\n\
         [check]\npartition = true\nmax_states = 100000\n",
    )
    .unwrap();
    let o = distsync(&["check", path.to_str().unwrap(), "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    assert_eq!(v["algorithm"], "bully");
    assert_eq!(v["faults"]["partition"], true);
    assert_eq!(v["violation"]["property"], "agreement");
    // An unknown field of the [check] table is named.
    std::fs::write(
        &path,
        "algorithm = \"bully\"\nnodes = 3\n[check]\ncrashes = 1\n",
    )
    .unwrap();
    let o = distsync(&["check", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("check") && err.contains("crashes"), "{err}");
}
