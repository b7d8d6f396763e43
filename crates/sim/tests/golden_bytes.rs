//! Speed work must not change a single byte: every scenario of scenarios/, every algorithm's
//! default scenario and a few runs chosen to reach the engine's rarer paths (drifting and
//! slewed clocks, reliable links over loss and duplication, partitions, timers) give the same
//! report and trace bytes as when the digests below were recorded.
//!
//! The digests in tests/golden/run-digests.txt were recorded before the simulator's hot path
//! was optimized (issue 15) and must stay as they are through any change meant only to make the
//! simulator faster. A change that is meant to alter what runs produce (a new report field, an
//! algorithm fixed) re-records them, saying so in its commit:
//! `DISTSYNC_RECORD_DIGESTS=1 cargo test -p distsync-sim --test golden_bytes`.

mod support;

use distsync_sim::Scenario;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::batch_from;

/// FNV-1a, 64 bits: a digest that no Rust release changes.
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Extra runs that reach paths the scenarios of scenarios/ may not.
const EXTRA: [(&str, &str); 5] = [
    (
        "extra-drift-slew",
        r#"
algorithm = "berkeley"
nodes = 4
until = "20s"
[network]
delay = { exponential = "2ms" }
[clocks]
offset = { uniform = ["-40ms", "40ms"] }
drift_ppm = { uniform = [-80, 80] }
adjust = "slew"
"#,
    ),
    (
        "extra-reliable-loss-dup",
        r#"
algorithm = "ricart-agrawala"
nodes = 4
until = "30s"
[network]
delay = { uniform = ["1ms", "3ms"] }
loss = 0.1
duplicate = 0.1
reliable = true
[workload]
kind = "poisson"
rate = 20.0
cs = "2ms"
requests = 4
"#,
    ),
    (
        "extra-loss-dup-unreliable",
        r#"
algorithm = "suzuki-kasami"
nodes = 5
until = "5s"
[network]
delay = { exponential = "1ms" }
fifo = false
loss = 0.05
duplicate = 0.1
[workload]
kind = "saturated"
cs = "1ms"
requests = 3
"#,
    ),
    (
        "extra-partition-crash",
        r#"
algorithm = "bully"
nodes = 6
until = "10s"
detect = "timeout"
[network]
delay = { uniform = ["1ms", "4ms"] }
[[event]]
at = "0ms"
elect = 0
[[event]]
at = "200ms"
crash = 5
[[event]]
at = "400ms"
partition = [[0, 1, 2], [3, 4]]
[[event]]
at = "900ms"
heal = true
[[event]]
at = "1500ms"
recover = 5
"#,
    ),
    (
        "extra-ricart-agrawala-heavy-32",
        r#"
algorithm = "ricart-agrawala"
nodes = 32
until = "1h"
[network]
delay = { uniform = ["500us", "1500us"] }
fifo = true
[workload]
kind = "saturated"
cs = "1ms"
requests = 3
"#,
    ),
];

fn digest(name: &str, text: &str) -> u64 {
    let scenario = Scenario::from_toml(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (report, trace) = batch_from(&scenario, "").unwrap_or_else(|e| panic!("{name}: {e}"));
    let json = serde_json::to_string(&report).unwrap();
    assert!(!trace.is_empty(), "{name}: no trace");
    fnv(trace.as_bytes(), fnv(json.as_bytes(), FNV_START))
}

fn all_runs() -> Vec<(String, String)> {
    let mut runs = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let name = format!("scenarios/{}", f.file_name().unwrap().to_string_lossy());
        runs.push((name, std::fs::read_to_string(&f).unwrap()));
    }
    for entry in distsync_algorithms::registry::entries() {
        let text = distsync_sim::default_scenario(entry.name).expect("every algorithm has one");
        runs.push((format!("default/{}", entry.name), text));
    }
    for (name, text) in EXTRA {
        runs.push((name.to_string(), text.to_string()));
    }
    runs
}

#[test]
fn reports_and_traces_are_byte_identical_to_the_recorded_digests() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/run-digests.txt");
    let measured: BTreeMap<String, u64> = all_runs()
        .into_iter()
        .map(|(name, text)| {
            let d = digest(&name, &text);
            (name, d)
        })
        .collect();
    if std::env::var_os("DISTSYNC_RECORD_DIGESTS").is_some() {
        let mut out = String::from(
            "# FNV-1a 64 of each run's report JSON then trace (crates/sim/tests/golden_bytes.rs)\n",
        );
        for (name, d) in &measured {
            out.push_str(&format!("{name} {d:016x}\n"));
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, out).unwrap();
        return;
    }
    let recorded: BTreeMap<String, u64> = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, d) = l.rsplit_once(' ').expect("name digest");
            (name.to_string(), u64::from_str_radix(d, 16).expect("hex"))
        })
        .collect();
    let mut changed = Vec::new();
    for (name, d) in &measured {
        match recorded.get(name) {
            Some(r) if r == d => {}
            Some(r) => changed.push(format!("{name}: recorded {r:016x}, now {d:016x}")),
            // A scenario or algorithm added since: nothing to compare with yet.
            None => eprintln!("{name}: not recorded yet ({d:016x})"),
        }
    }
    for name in recorded.keys() {
        if !measured.contains_key(name) {
            changed.push(format!("{name}: recorded, no longer run"));
        }
    }
    assert!(
        changed.is_empty(),
        "runs whose report or trace bytes changed (seeds are the scenarios' own):\n{}",
        changed.join("\n")
    );
}
