//! `distsync clocks TRACE --a SEQ --b SEQ`: happens-before from a trace, and clear errors.

use std::path::Path;
use std::process::{Command, Output};

mod scratch;

use scratch::Scratch;

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-clocks-cli-", name)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A two-process trace: 0 sends to 1 at once; 1 has a local input before the message arrives.
fn trace(name: &str) -> Scratch {
    let scenario = tmp(&format!("{name}.toml"));
    std::fs::write(
        &scenario,
        r#"
        algorithm = "causal-broadcast"
        nodes = 2
        [network]
        delay = "5ms"
        [[event]]
        at = "0ms"
        multicast = 0
        [[event]]
        at = "1ms"
        multicast = 1
        "#,
    )
    .unwrap();
    let trace = tmp(&format!("{name}.jsonl"));
    let o = distsync(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    trace
}

/// The `seq` of the first event of `kind` at `node`.
fn find(trace: &Path, kind: &str, node: u64) -> String {
    let text = std::fs::read_to_string(trace).unwrap();
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == kind && e["node"] == node)
        .map(|e| e["seq"].to_string())
        .unwrap()
}

#[test]
fn answers_before_after_and_concurrent() {
    let t = trace("answers");
    let t = t.to_str().unwrap();
    let send0 = find(Path::new(t), "send", 0);
    let deliver1 = find(Path::new(t), "deliver", 1);
    let send1 = find(Path::new(t), "send", 1);
    let o = distsync(&["clocks", t, "--a", &send0, "--b", &deliver1]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("event {send0} happened before event {deliver1}")),
        "{}",
        stdout(&o)
    );
    let o = distsync(&["clocks", t, "--a", &deliver1, "--b", &send0]);
    assert!(stdout(&o).contains(&format!("event {send0} happened before event {deliver1}")));
    // 1 sends at 1ms, before 0's message arrives at 5ms: concurrent with 0's send.
    let o = distsync(&["clocks", t, "--a", &send0, "--b", &send1, "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["causality"], "concurrent");
    assert_eq!(r["a"]["event"], "send");
    assert!(r["a"]["vector"].is_array() && r["b"]["lamport"].is_u64());
}

#[test]
fn bad_files_and_ids_exit_2_with_one_clear_line() {
    let t = trace("errors");
    let t = t.to_str().unwrap();
    let send0 = find(Path::new(t), "send", 0);
    let refused = |args: &[&str], expected: &str| {
        let o = distsync(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(expected), "expected `{expected}` in: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    refused(
        &["clocks", t, "--a", &send0, "--b", "999999"],
        "there is no event 999999",
    );
    refused(
        &["clocks", t, "--a", "0", "--b", "1"],
        "carries no timestamps",
    );
    refused(
        &["clocks", "/no/such/trace", "--a", "0", "--b", "1"],
        "cannot read the trace",
    );
    let bad = tmp("bad.jsonl");
    std::fs::write(&bad, "algorithm = \"x\"\n").unwrap();
    refused(
        &["clocks", bad.to_str().unwrap(), "--a", "0", "--b", "1"],
        "not a trace header",
    );
    refused(&["clocks", t, "--a", "-3", "--b", "1"], "--a");
}

/// Left over from walking issue 16: `--a -1` got clap's "unexpected argument" (it took `-1` for
/// a flag). A negative or non-numeric id is refused in words, naming the flag.
#[test]
fn a_negative_event_id_is_refused_naming_the_flag() {
    let t = trace("negative");
    let t = t.to_str().unwrap();
    for args in [["--a", "-1", "--b", "0"], ["--a", "0", "--b", "two"]] {
        let mut all = vec!["clocks", t];
        all.extend(args);
        let o = distsync(&all);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let (flag, value) = if args[1] == "-1" {
            ("--a", "-1")
        } else {
            ("--b", "two")
        };
        assert!(
            err.contains(flag) && err.contains("an event id") && err.contains(value),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
}
