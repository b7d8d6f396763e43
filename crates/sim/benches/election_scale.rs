//! Elections at scale: Chang-Roberts and Peterson on a ring of 100,000 processes in a random
//! order, every process starting at time 0, 1ms per message. Prints, for each, the simulated
//! result, the wall-clock time and the peak resident memory of the process (Linux: VmHWM, reset
//! between the runs through /proc/self/clear_refs). Checks that the election completed, agreed
//! on the highest id and kept Peterson's message and round bounds.
//!
//! Run with `cargo bench -p distsync-sim --bench election_scale` (add `-- 20000` for another
//! ring size).

use distsync_sim::{run, RunOptions, Scenario};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::{Duration, Instant};

fn scenario(algorithm: &str, order: &[u32]) -> Scenario {
    let events: Vec<serde_json::Value> = order
        .iter()
        .map(|id| serde_json::json!({"at": "0ms", "elect": id}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "algorithm": algorithm,
        "ids": order,
        "until": "10h",
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

/// CPU time of this process so far, in seconds (Linux: /proc/self/stat, in USER_HZ = 100 ticks
/// per second), which a busy machine disturbs less than wall-clock time.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let n: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut order: Vec<u32> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    println!(
        "ring of {n} processes in a random order, every process starting at 0, 1ms per message"
    );
    for algorithm in ["chang-roberts", "peterson"] {
        let s = scenario(algorithm, &order);
        reset_peak();
        let cpu = cpu_seconds();
        let started = Instant::now();
        let r = run(&s, RunOptions::default()).expect("runs");
        let wall = started.elapsed();
        let cpu = cpu.zip(cpu_seconds()).map(|(a, b)| b - a);
        let e = r.election.as_ref().expect("an election report");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(e.agreed && e.leader == Some(n - 1));
        let by = |k: &str| e.messages.by_kind.get(k).copied().unwrap_or(0);
        let log2 = u64::from(31 - n.leading_zeros());
        if algorithm == "peterson" {
            assert!(by("Election") <= 2 * u64::from(n) * log2 + u64::from(n));
            assert!(u64::from(e.rounds.unwrap()) <= log2 + 1);
        }
        println!(
            "{algorithm:>14}: leader {} agreed by all; {} Election + {} Elected messages \
             ({} with acknowledgements); {} events; completed at {:.1}s simulated; \
             longest chain {}{}; wall {:.2}s, CPU {}; peak memory {}",
            e.leader.unwrap(),
            by("Election"),
            by("Elected"),
            r.messages.total,
            r.events_processed,
            Duration::from_nanos(e.completion_time_ns.unwrap()).as_secs_f64(),
            e.longest_chain,
            e.rounds.map_or(String::new(), |k| format!("; {k} rounds")),
            wall.as_secs_f64(),
            cpu.map_or("n/a".to_string(), |c| format!("{c:.2}s")),
            peak_mib().map_or("n/a".to_string(), |m| format!("{m:.0} MiB")),
        );
    }
}
