//! Singhal's 1989 heuristically-aided token algorithm (`singhal-token`) in the simulator:
//! safety and service over many seeds under saturated and poisson loads, light-load messages
//! entry by entry against the rules' replay, and the measured messages per entry at light and
//! heavy load for N = 3, 5, 8 beside the literature (about N/2 and N).

use distsync_algorithms::mutex::singhal_token::light_load_messages;
use distsync_sim::{run, Report, RunOptions, Scenario};

fn scenario(n: u64, workload: &str, requests: u64, delay: &str, fifo: bool) -> String {
    let cs = if fifo { "10ms" } else { "1ms" };
    let workload = match workload {
        "poisson" => "kind = \"poisson\"\nrate = 50.0".to_string(),
        other => format!("kind = \"{other}\""),
    };
    format!(
        r#"
        algorithm = "singhal-token"
        nodes = {n}
        until = "1h"
        [network]
        delay = {delay}
        fifo = {fifo}
        [workload]
        {workload}
        cs = "{cs}"
        requests = {requests}
        "#
    )
}

fn run_text(text: &str, seed: u64, trace: Option<&std::path::Path>) -> Report {
    let scenario = Scenario::from_toml(text, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    let trace =
        trace.map(|p| Box::new(std::fs::File::create(p).unwrap()) as Box<dyn std::io::Write>);
    run(
        &scenario,
        RunOptions {
            seed: Some(seed),
            trace,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("seed {seed}: {e}"))
}

const RANDOM: &str = r#"{ uniform = ["100us", "3ms"] }"#;

/// Random delays, no FIFO, N = 2..9 from the seed, three requests per node: never two in the
/// CS, every request served, nothing left waiting. (The checker proves the rules at 3 sites x
/// 2 requests; the restated rules' deadlock there is rarer than these seeds.)
fn safe_and_served(workload: &str) {
    for seed in 0..320 {
        let n = 2 + seed % 8;
        let r = run_text(&scenario(n, workload, 3, RANDOM, false), seed, None);
        let m = r.sections.mutex.as_ref().unwrap();
        assert!(
            r.violations.is_empty() && m.unserved_requests == 0,
            "{workload}: seed={seed}: {:?}",
            r.violations
        );
        assert_eq!(r.ended_by, "done", "{workload}: seed={seed}");
        assert_eq!(m.entries, 3 * n, "{workload}: seed={seed}");
    }
}

#[test]
fn saturated_load_is_safe_and_serves_every_request() {
    safe_and_served("saturated");
}

#[test]
fn poisson_load_is_safe_and_serves_every_request() {
    safe_and_served("poisson");
}

/// The entries, in order, as (position, messages sent from its request to the next request).
fn light_entries(trace: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for line in trace.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["event"].as_str() {
            Some("input") if v["input"] == "Request" => {
                out.push((v["node"].as_u64().unwrap() as usize, 0))
            }
            Some("send") => out.last_mut().unwrap().1 += 1,
            _ => {}
        }
    }
    out
}

#[test]
fn light_load_costs_each_entry_its_sv_marks_plus_the_token() {
    let dir = tempfile::tempdir().unwrap();
    for n in [2u64, 3, 5, 8] {
        for seed in 1..=4 {
            let path = dir.path().join(format!("{n}-{seed}.jsonl"));
            let r = run_text(&scenario(n, "light", 6, RANDOM, false), seed, Some(&path));
            assert!(r.violations.is_empty(), "n={n} seed={seed}");
            let entries = light_entries(&std::fs::read_to_string(&path).unwrap());
            let order: Vec<usize> = entries.iter().map(|e| e.0).collect();
            let sent: Vec<usize> = entries.iter().map(|e| e.1).collect();
            assert_eq!(sent.len() as u64, 6 * n);
            assert_eq!(
                sent,
                light_load_messages(n as usize, &order),
                "n={n} seed={seed}"
            );
        }
    }
}

/// `distsync compare`'s runs (constant delay T, FIFO, E = 10T, seed 1; 4 requests per node light, 10
/// heavy). Light: 1.67, 3.15, 5.53, every figure the replay's exactly, so the tolerance is
/// rounding only. The paper's figure is about N/2; the restated rules measured 1.58, 2.60,
/// 4.34 here, and keeping the staircase (a REQUEST also to every site below, without which
/// those rules deadlock) costs the difference: more than N/2, still below the N of heavy load.
/// Heavy: N - 1/R (every site is R, so a REQUEST goes to the other N-1 and the token follows;
/// only the holder's first entry is free): 2.90, 4.90, 7.90.
#[test]
fn measured_messages_per_entry_beside_the_literature() {
    for (n, light, heavy) in [(3u64, 1.67, 2.90), (5, 3.15, 4.90), (8, 5.53, 7.90)] {
        let l = run_text(&scenario(n, "light", 4, "\"1ms\"", true), 1, None);
        let h = run_text(&scenario(n, "saturated", 10, "\"1ms\"", true), 1, None);
        let (l, h) = (
            l.sections.mutex.unwrap().messages_per_entry,
            h.sections.mutex.unwrap().messages_per_entry,
        );
        assert!((l - light).abs() < 0.005, "n={n}: light {l}");
        assert!((h - heavy).abs() < 0.005, "n={n}: heavy {h}");
        let nf = n as f64;
        assert!(
            l > nf / 2.0 && l < nf,
            "n={n}: light {l} is not between N/2 and N"
        );
        assert!(
            (h - (nf - 1.0 / 10.0)).abs() < 1e-9,
            "n={n}: heavy {h} is not N - 1/R"
        );
    }
}
