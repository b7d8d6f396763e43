//! Scenario templates: for one algorithm, a commented scenario with every field that algorithm
//! reads and its default, ready to edit and run (`distsync init ALGORITHM`).
//!
//! Active lines hold the default value (or a small, runnable choice where a field has none);
//! a line commented as `# field = value` is an optional field whose default depends on the
//! others (the comment says what it is), shown with a value that works when uncommented.

use distsync_algorithms::registry::{self, Family};
use distsync_core::clock_sync::{DEFAULT_MAX_DRIFT_PPM, DEFAULT_SAMPLES, DEFAULT_THRESHOLD};
use distsync_core::election::{DEFAULT_ANSWER_TIMEOUT, DEFAULT_HEARTBEAT};
use std::fmt::Write;
use std::time::Duration;

/// The template of `algorithm` (a registry name), or an error naming the unknown name and the
/// closest known one.
///
/// ```
/// let text = distsync_sim::template::template("ricart-agrawala").unwrap();
/// let scenario = distsync_sim::Scenario::from_toml(&text, "init").unwrap();
/// assert_eq!(scenario.algorithm, "ricart-agrawala");
/// assert!(distsync_sim::template::template("ricart").is_err());
/// ```
pub fn template(algorithm: &str) -> Result<String, String> {
    let Some(entry) = registry::lookup(algorithm) else {
        let hint = registry::suggest(algorithm)
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(format!(
            "unknown algorithm `{algorithm}`{hint} (`distsync list` shows every algorithm)"
        ));
    };
    let name = entry.name;
    let nodes: u32 = match name {
        "maekawa" | "maekawa-basic" | "raymond" => 7,
        _ => 5,
    };
    let last = nodes - 1;
    let mut t = String::new();
    let w = &mut t;
    line(w, &format!("# {}", entry.description));
    line(
        w,
        &format!("# Written by `distsync init {name}`: every field this algorithm reads, with its"),
    );
    line(
        w,
        "# default. A commented `# field = value` line is optional; its comment gives the default.",
    );
    line(
        w,
        "# Check with `distsync validate FILE`, run with `distsync run FILE`; the format is",
    );
    line(w, "# docs/scenario-format.md.");
    field(
        w,
        "name",
        &format!("\"{name}-example\""),
        "a name for the report",
    );
    field(
        w,
        "algorithm",
        &format!("\"{name}\""),
        "see `distsync list`",
    );
    field(
        w,
        "nodes",
        &nodes.to_string(),
        &format!("ids 0..{last}; or ids = [...] instead, in ring order"),
    );
    field(
        w,
        "seed",
        "1",
        "the seed of every random choice (default 1)",
    );
    field(
        w,
        "until",
        "\"10s\"",
        "simulated-time horizon (default 60s)",
    );

    match entry.family {
        Family::Mutex => mutex_fields(w, name, last),
        Family::Election => election_fields(w, name),
        Family::ClockSync => clock_fields(w, name),
        Family::Multicast | Family::Snapshot => {}
    }

    blank(w);
    line(w, "[network]");
    field(
        w,
        "delay",
        "\"1ms\"",
        "or { uniform = [\"1ms\", \"5ms\"] } or { exponential = \"2ms\" } (default 1ms)",
    );
    let fifo_note = if entry.needs_fifo {
        "per-link FIFO delivery (default true); this algorithm needs it"
    } else {
        "per-link FIFO delivery (default true)"
    };
    field(w, "fifo", "true", fifo_note);
    let lossless = match entry.family {
        Family::Snapshot => " (refused for snapshots: it would destroy or create money)",
        _ => "",
    };
    field(
        w,
        "loss",
        "0.0",
        &format!("probability a message is dropped (default 0){lossless}"),
    );
    field(
        w,
        "duplicate",
        "0.0",
        &format!("probability a message is delivered twice (default 0){lossless}"),
    );

    match entry.family {
        Family::Mutex => workload(w),
        Family::Election => election_events(w, name, last),
        Family::ClockSync => clocks(w),
        Family::Multicast => multicast(w, name),
        Family::Snapshot => bank(w),
    }
    Ok(t)
}

fn line(w: &mut String, text: &str) {
    w.push_str(text);
    w.push('\n');
}

fn blank(w: &mut String) {
    w.push('\n');
}

/// `key = value` with its comment aligned.
fn field(w: &mut String, key: &str, value: &str, comment: &str) {
    let _ = writeln!(w, "{:<30} # {comment}", format!("{key} = {value}"));
}

/// An optional field, commented out.
fn optional(w: &mut String, key: &str, value: &str, comment: &str) {
    let _ = writeln!(w, "{:<30} # {comment}", format!("# {key} = {value}"));
}

fn duration(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_nanos() == 0 {
        format!("\"{}s\"", d.as_secs())
    } else {
        format!("\"{}ms\"", d.as_millis())
    }
}

fn mutex_fields(w: &mut String, name: &str, last: u32) {
    match name {
        "central" => optional(
            w,
            "coordinator",
            &last.to_string(),
            "the lock manager, which does not compete (default: the highest id)",
        ),
        "token-ring" | "ricart-agrawala-token" | "suzuki-kasami" => optional(
            w,
            "holder",
            "0",
            "who holds the token first (default: the first id)",
        ),
        "raymond" => {
            optional(
                w,
                "holder",
                "0",
                "who holds the token first (default: the first id)",
            );
            optional(
                w,
                "tree",
                "[[0, 1], [0, 2], [1, 3], [1, 4], [2, 5], [2, 6]]",
                "the tree's edges (default: a balanced binary tree rooted at the holder)",
            );
        }
        "maekawa" | "maekawa-basic" => optional(
            w,
            "quorums",
            "\"plane\"",
            "\"plane\" (N = q^2+q+1, like 7) or \"grid\" (default: plane when N allows it)",
        ),
        _ => {}
    }
}

fn workload(w: &mut String) {
    blank(w);
    line(w, "[workload]");
    field(
        w,
        "kind",
        "\"poisson\"",
        "\"poisson\" (with rate), \"saturated\" (heavy), \"light\" (one at a time), \"none\"",
    );
    field(
        w,
        "rate",
        "5.0",
        "poisson only: requests per second per node (no default)",
    );
    field(
        w,
        "cs",
        "\"10ms\"",
        "time inside the critical section, E (default 10ms)",
    );
    field(
        w,
        "requests",
        "10",
        "per node, then the node stops (default: unlimited)",
    );
    optional(
        w,
        "gap",
        "\"20ms\"",
        "light only: quiet time between requests (default 20 x the largest delay)",
    );
    blank(w);
    line(
        w,
        "# Scripted events, sorted by time: request, crash, recover, partition, heal.",
    );
    line(w, "[[event]]");
    field(w, "at", "\"5ms\"", "when");
    field(
        w,
        "request",
        "1",
        "node 1 asks for the critical section, stays `cs`, leaves",
    );
}

fn election_fields(w: &mut String, name: &str) {
    let t = DEFAULT_ANSWER_TIMEOUT;
    optional(
        w,
        "coordinator",
        "4",
        "the coordinator every process knows at the start (default: the highest id)",
    );
    field(
        w,
        "detect",
        "\"none\"",
        "\"timeout\": heartbeats from the coordinator, an election when they stop (default \"none\")",
    );
    field(
        w,
        "heartbeat",
        &duration(DEFAULT_HEARTBEAT),
        "with detect = \"timeout\": the heartbeat period (default 10ms)",
    );
    optional(
        w,
        "heartbeat_timeout",
        "\"40ms\"",
        "silence before suspecting the coordinator (default 3 heartbeats + T)",
    );
    field(
        w,
        "answer_timeout",
        &duration(t),
        "T: wait for an answer before taking the silent process for crashed (default 10ms)",
    );
    let t_prime = if name == "bully" {
        "3T"
    } else {
        "4nT on a ring"
    };
    optional(
        w,
        "coordinator_timeout",
        "\"200ms\"",
        &format!("T': wait for the election's result before starting again (default {t_prime})"),
    );
}

fn election_events(w: &mut String, name: &str, last: u32) {
    blank(w);
    line(
        w,
        "# Scripted events, sorted by time: elect, crash, recover, partition, heal.",
    );
    // Crash-tolerant algorithms lose their coordinator first; the others elect on a whole ring.
    if matches!(name, "bully" | "ring") {
        line(w, "[[event]]");
        field(w, "at", "\"0ms\"", "when");
        field(w, "crash", &last.to_string(), "the coordinator crashes");
    }
    line(w, "[[event]]");
    field(w, "at", "\"1ms\"", "when");
    field(
        w,
        "elect",
        "0",
        "process 0 starts an election (\"all\": every process does)",
    );
}

fn clock_fields(w: &mut String, name: &str) {
    field(
        w,
        "sync_interval",
        "\"1s\"",
        "every process is told to synchronize this often (default 1s)",
    );
    field(
        w,
        "max_drift_ppm",
        &format!("{DEFAULT_MAX_DRIFT_PPM:?}"),
        "the drift bound error bounds allow for (default 100)",
    );
    match name {
        "cristian" => {
            field(w, "server", "0", "the time server (default: the lowest id)");
            field(
                w,
                "samples",
                &DEFAULT_SAMPLES.to_string(),
                "exchanges per synchronization (default 4)",
            );
            field(
                w,
                "min_delay",
                "\"0ms\"",
                "the smallest one-way delay it may assume (default 0)",
            );
        }
        "berkeley" => {
            field(
                w,
                "threshold",
                &duration(DEFAULT_THRESHOLD),
                "how far from the median a clock may be and still count (default 1s)",
            );
            field(
                w,
                "master_election",
                "\"bully\"",
                "the election algorithm that chooses the master (default \"bully\")",
            );
            field(
                w,
                "answer_timeout",
                "\"100ms\"",
                "wait for a reply (default 100ms)",
            );
        }
        "ntp" => {
            field(
                w,
                "strata",
                "[[0]]",
                "server ids by stratum, stratum 1 first (default: the lowest id alone)",
            );
            optional(
                w,
                "answer_timeout",
                "\"100ms\"",
                "wait for a reply (default 100ms)",
            );
        }
        _ => {}
    }
}

fn clocks(w: &mut String) {
    blank(w);
    line(
        w,
        "[clocks]                       # physical clocks; perfect clocks when absent",
    );
    field(
        w,
        "offset",
        "{ uniform = [\"-50ms\", \"50ms\"] }",
        "each clock's offset at the start (default 0s)",
    );
    field(
        w,
        "drift_ppm",
        "{ uniform = [-100, 100] }",
        "each clock's drift (default 0)",
    );
    field(
        w,
        "adjust",
        "\"step\"",
        "\"step\" jumps, \"slew\" runs faster or slower, never backwards (default \"step\")",
    );
    field(
        w,
        "slew_ppm",
        "500.0",
        "the fastest a slew corrects (default 500, as adjtime)",
    );
    line(
        w,
        "[[clocks.node]]                # one node's own values, overriding the ranges",
    );
    field(w, "id", "0", "");
    field(w, "offset", "\"0s\"", "");
    field(w, "drift_ppm", "0", "");
}

fn multicast(w: &mut String, name: &str) {
    blank(w);
    line(w, "[multicast]");
    field(
        w,
        "rate",
        "20.0",
        "multicasts per second per process (default: only scripted ones)",
    );
    field(w, "count", "5", "multicasts per process (default 10)");
    let promised = match name {
        "causal-broadcast" => "[\"fifo\", \"causal\"]",
        "total-order-multicast" => "[\"total\"]",
        _ => "[\"fifo\"]",
    };
    optional(
        w,
        "check",
        promised,
        "orders whose breach is a violation: fifo, causal, total (default: what it promises)",
    );
    if name == "total-order-multicast" {
        blank(w);
        line(
            w,
            "[app]                          # seed 003's replicated account (optional)",
        );
        field(w, "kind", "\"replicated-database\"", "");
        field(w, "balance", "1000", "the opening balance (default 1000)");
    }
}

fn bank(w: &mut String) {
    blank(w);
    line(w, "[app]");
    field(
        w,
        "kind",
        "\"bank\"",
        "the application the snapshot records",
    );
    field(
        w,
        "balance",
        "1000",
        "every account's opening balance (default 1000); or balances = [...], one per node",
    );
    field(w, "rate", "200.0", "transfers per second per process");
    field(
        w,
        "transfers",
        "40",
        "transfers per process (default: until the horizon)",
    );
    field(w, "max_amount", "100", "the largest transfer (default 100)");
    blank(w);
    line(w, "[[event]]");
    field(w, "at", "\"20ms\"", "when");
    field(w, "snapshot", "0", "process 0 starts a global snapshot");
}
