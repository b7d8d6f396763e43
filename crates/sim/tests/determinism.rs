//! Same scenario, same seed: the same bytes. Another seed: another run.

use distsync_sim::{run, RunOptions, Scenario};
use std::path::PathBuf;

fn traced(text: &str, seed: u64, name: &str) -> (String, Vec<u8>) {
    // Removed (with the trace in it) when this returns, or if it panics.
    let dir = tempfile::TempDir::with_prefix("distsync-determinism-").unwrap();
    let path: PathBuf = dir.path().join(name);
    let scenario = Scenario::from_toml(text, "t.toml").unwrap();
    let report = run(
        &scenario,
        RunOptions {
            seed: Some(seed),
            trace: Some(Box::new(std::fs::File::create(&path).unwrap())),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let json = serde_json::to_string(&report).unwrap();
    (json, std::fs::read(&path).unwrap())
}

const SCENARIO: &str = r#"
algorithm = "lamport-mutex"
nodes = 5
[network]
delay = { exponential = "2ms" }
loss = 0.0
duplicate = 0.0
[workload]
kind = "poisson"
rate = 30.0
cs = "3ms"
requests = 10
"#;

#[test]
fn same_seed_same_report_and_trace_bytes() {
    let (report_a, trace_a) = traced(SCENARIO, 42, "a.jsonl");
    let (report_b, trace_b) = traced(SCENARIO, 42, "b.jsonl");
    assert_eq!(report_a, report_b);
    assert!(trace_a.len() > 1000);
    assert!(trace_a == trace_b, "traces differ for seed 42");
}

#[test]
fn another_seed_gives_another_trace() {
    let (_, trace_a) = traced(SCENARIO, 42, "c.jsonl");
    let (_, trace_b) = traced(SCENARIO, 43, "d.jsonl");
    assert!(trace_a != trace_b);
}

#[test]
fn the_trace_follows_the_documented_format() {
    let (_, trace) = traced(SCENARIO, 7, "e.jsonl");
    let text = String::from_utf8(trace).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["event"], "header");
    assert_eq!(lines[0]["ids"], serde_json::json!([0, 1, 2, 3, 4]));
    let mut sends = std::collections::HashMap::new();
    let mut last_lamport = [0u64; 5];
    for (i, line) in lines[1..].iter().enumerate() {
        assert_eq!(line["seq"], i as u64, "seq numbers run 0, 1, 2, ...");
        let event = line["event"].as_str().unwrap();
        if let Some(lamport) = line["lamport"].as_u64() {
            let node = line["node"].as_u64().unwrap() as usize;
            assert!(
                lamport > last_lamport[node],
                "lamport stamps rise at each node"
            );
            last_lamport[node] = lamport;
            assert_eq!(line["vector"].as_array().unwrap().len(), 5);
        }
        match event {
            "send" => {
                sends.insert(
                    line["msg_id"].as_u64().unwrap(),
                    (line["lamport"].as_u64().unwrap(), line["vector"].clone()),
                );
            }
            "deliver" => {
                let (l, v) = &sends[&line["msg_id"].as_u64().unwrap()];
                // Clock condition: the send happened before the delivery.
                assert!(line["lamport"].as_u64().unwrap() > *l);
                let (v, w): (Vec<u64>, Vec<u64>) = (
                    serde_json::from_value(v.clone()).unwrap(),
                    serde_json::from_value(line["vector"].clone()).unwrap(),
                );
                assert!(v.iter().zip(&w).all(|(a, b)| a <= b) && v != w);
            }
            _ => {}
        }
    }
    assert!(text.contains("\"output\":\"Enter\""));
}
