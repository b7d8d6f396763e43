//! Elections at scale: Chang-Roberts and Peterson on a ring of 1,000,000 processes in a random
//! order, every process starting at time 0 (`elect = "all"`), 1ms per message. Prints, for
//! each, the simulated result, the CPU time and the peak resident memory of the run (Linux:
//! /proc/self/stat and VmHWM, reset between the runs through /proc/self/clear_refs), with the
//! load average. Checks that the election completed, agreed on the highest id and kept the
//! bounds of ORACLES.md (Chang-Roberts between 2n-1 and n(n+1)/2 election messages, Peterson at
//! most 2n*floor(log2 n) + n messages and ceil(log2 n) rounds; n elected messages).
//!
//! Run with `cargo bench -p distsync-sim --bench election_scale`. Options: a ring size
//! (`-- 10000000`), `--algorithms bully,ring` (any election algorithms), and `--start ID` to
//! have only the process ID start an election after the highest process crashed (the bully and
//! ring-with-lists cases, whose all-start runs send Θ(n²) messages or carry Θ(n) ids per
//! message).

use distsync_sim::{run, RunOptions, Scenario};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::{Duration, Instant};

fn scenario(algorithm: &str, order: &[u32], start: Option<u32>) -> Scenario {
    let events = match start {
        None => serde_json::json!([{"at": "0ms", "elect": "all"}]),
        Some(id) => {
            let highest = order.iter().max().copied().unwrap_or(0);
            serde_json::json!([{"at": "0ms", "crash": highest}, {"at": "1ms", "elect": id}])
        }
    };
    serde_json::from_value(serde_json::json!({
        "algorithm": algorithm,
        "ids": order,
        "until": "100h",
        // A ring where everyone starts has n messages in flight at once.
        "limits": {"max_pending": 4 * order.len() + 4_000_000},
        "event": events,
    }))
    .expect("a valid scenario")
}

/// Peak resident memory since the last reset, in MiB (Linux only).
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let n: u32 = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let algorithms = value("--algorithms").unwrap_or_else(|| "chang-roberts,peterson".into());
    let start: Option<u32> = value("--start").and_then(|s| s.parse().ok());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut order: Vec<u32> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "ring of {n} processes in a random order, {}, 1ms per message (load average {})",
        match start {
            None => "every process starting at 0 (elect = \"all\")".to_string(),
            Some(id) => format!("the highest crashed at 0 and {id} electing at 1ms"),
        },
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for algorithm in algorithms.split(',') {
        let s = scenario(algorithm, &order, start);
        reset_peak();
        let started = Instant::now();
        let (r, cpu) = distsync_sim::bench::timed(|| run(&s, RunOptions::default()));
        let r = r.expect("runs");
        let wall = started.elapsed();
        let e = r.sections.election.as_ref().expect("an election report");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let highest = if start.is_some() { n - 2 } else { n - 1 };
        assert!(e.agreed && e.leader == Some(highest), "{:?}", e.leader);
        let by = |k: &str| e.messages.by_kind.get(k).copied().unwrap_or(0);
        let n64 = u64::from(n);
        let log2 = u64::from(31 - n.leading_zeros());
        if start.is_none() {
            match algorithm {
                "chang-roberts" => {
                    assert!((2 * n64 - 1..=n64 * (n64 + 1) / 2).contains(&by("Election")));
                    assert_eq!(by("Elected"), n64);
                }
                "peterson" => {
                    assert!(by("Election") <= 2 * n64 * log2 + n64);
                    assert!(u64::from(e.rounds.unwrap()) <= log2 + 1);
                    assert_eq!(by("Elected"), n64);
                }
                _ => {}
            }
        }
        let kinds: Vec<String> = e
            .messages
            .by_kind
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        println!(
            "{algorithm:>16}: leader {} agreed by all; {} ({} messages in all); {} events; \
             completed at {:.1}s simulated; longest chain {}{}; CPU {cpu:.2}s, wall {:.2}s; peak memory {}",
            e.leader.unwrap(),
            kinds.join(" + "),
            r.messages.total,
            r.events_processed,
            Duration::from_nanos(e.completion_time_ns.unwrap_or(0)).as_secs_f64(),
            e.longest_chain,
            e.rounds.map_or(String::new(), |k| format!("; {k} rounds")),
            wall.as_secs_f64(),
            peak_mib().map_or("n/a".to_string(), |m| format!("{m:.0} MiB")),
        );
    }
}
