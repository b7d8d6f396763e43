//! The `distsync` binary: exit codes, errors on bad input, reports, traces, scenario files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod scratch;

use scratch::Scratch;

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scenario(name: &str) -> String {
    repo().join("scenarios").join(name).display().to_string()
}

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-cli-", name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Bad input: exit code 2, one clear line naming the field, never a panic.
fn refused(text: &str, expected: &[&str]) {
    let path = tmp("bad.toml");
    std::fs::write(&path, text).unwrap();
    let o = distsync(&["run", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("bad.toml"), "the file is named: {err}");
    for e in expected {
        assert!(err.contains(e), "expected `{e}` in: {err}");
    }
}

#[test]
fn bad_scenarios_are_refused_with_the_field_named() {
    let base = "nodes = 3\n[network]\ndelay = \"1ms\"\n";
    refused(
        &format!("algorithm = \"ricart-agrawal\"\n{base}"),
        &["`algorithm`", "did you mean `ricart-agrawala`"],
    );
    refused(
        &format!("algorithm = \"central\"\n{base}fifoo = true\n"),
        &["unknown field `fifoo`", "fifo"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\n[network]\ndelay = \"-2ms\"\n",
        &["delay", "negative"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\n[network]\ndelay = 2\n",
        &["delay", "add a unit"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\nuntil = \"10\"\n",
        &["until", "no unit"],
    );
    refused(
        &format!("algorithm = \"central\"\n{base}loss = 1.5\n"),
        &["`network.loss`", "between 0 and 1"],
    );
    refused(
        &format!("algorithm = \"central\"\n{base}duplicate = -0.1\n"),
        &["`network.duplicate`"],
    );
    refused(
        &format!("algorithm = \"central\"\n{base}[[event]]\nat = \"1ms\"\ncrash = 9\n"),
        &["`event[0].crash`", "node 9", "0..2"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\ncoordinator = 5\n",
        &["`coordinator`", "node 5"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\ncoordinator = 0\n[[event]]\nat = \"0ms\"\nrequest = 0\n",
        &["`event[0].request`", "does not compete"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"poisson\"\n",
        &["`workload.rate`"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"busy\"\n",
        &["unknown variant `busy`"],
    );
    refused(
        "algorithm = \"central\"\nids = [1, 2, 1]\n",
        &["`ids`", "more than once"],
    );
    refused(
        "algorithm = \"central\"\nnodes = 3\nnot toml at all",
        &["bad.toml"],
    );
}

#[test]
fn a_missing_file_and_bad_flags_exit_2() {
    let o = distsync(&["run", "/nonexistent/scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/scenario.toml"));
    for args in [
        &["simulate", "--algo", "central", "--loss", "2"][..],
        &["simulate", "--algo", "central", "--delay", "5"][..],
        &["simulate", "--algo", "central", "--delay", "5ms..1ms"][..],
        &["simulate", "--algo", "central", "--load", "medium"][..],
        &["simulate", "--algo", "nope"][..],
        &["simulate", "--algo", "central", "--nodes", "0"][..],
        &["simulate", "--algo", "central", "--nodes", "4000000000"][..],
        &[
            "simulate",
            "--algo",
            "ricart-agrawala",
            "--nodes",
            "3000",
            "--trace",
            "/tmp/distsync-never-written.jsonl",
        ][..],
    ] {
        let o = distsync(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn a_failed_run_does_not_clobber_an_existing_trace() {
    let trace = tmp("keep.jsonl");
    std::fs::write(&trace, "precious").unwrap();
    let o = distsync(&[
        "simulate",
        "--algo",
        "central",
        "--coordinator",
        "9",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "precious");
}

#[test]
fn the_seed_001_example_grants_in_the_order_3_1_2() {
    let trace = tmp("central.jsonl");
    let o = distsync(&[
        "run",
        &scenario("central-lock-manager.toml"),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let grants: Vec<u64> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "output" && e["output"] == "Enter")
        .map(|e| e["node"].as_u64().unwrap())
        .collect();
    assert_eq!(grants, vec![3, 1, 2]);
}

#[test]
fn json_reports_have_the_documented_fields_and_are_deterministic() {
    let file = scenario("ricart-agrawala-heavy.toml");
    let a = distsync(&["run", &file, "--json"]);
    let b = distsync(&["run", &file, "--json"]);
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(a.stdout, b.stdout, "same seed, same bytes");
    let r: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    for field in [
        "algorithm",
        "nodes",
        "seed",
        "end_time_ns",
        "events_processed",
        "messages",
        "violations",
        "mutex",
    ] {
        assert!(r.get(field).is_some(), "missing {field}");
    }
    for field in [
        "entries",
        "messages_per_entry",
        "sync_delay_ns",
        "response_time_ns",
        "throughput_per_s",
        "unserved_requests",
        "max_bypass",
    ] {
        assert!(r["mutex"].get(field).is_some(), "missing mutex.{field}");
    }
    for field in ["mean", "p50", "p99", "max"] {
        assert!(r["mutex"]["sync_delay_ns"].get(field).is_some());
    }
    assert_eq!(r["mutex"]["messages_per_entry"], 8.0);
    assert_eq!(r["mutex"]["sync_delay_ns"]["max"], 1_000_000);
    let c = distsync(&["run", &file, "--json", "--seed", "2"]);
    let rc: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
    assert_eq!(rc["seed"], 2);
}

#[test]
fn a_violation_exits_1_and_says_how_to_reproduce_it() {
    let file = scenario("lamport-non-fifo.toml");
    let o = distsync(&["run", &file]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("mutual-exclusion"), "{out}");
    assert!(stderr(&o).contains("--seed 30"), "{}", stderr(&o));
    // It runs, outside its algorithm's assumptions, and says so naming the property at risk.
    assert!(
        stderr(&o).contains("warning: `lamport-mutex` assumes FIFO links")
            && stderr(&o).contains("mutual-exclusion is at risk"),
        "{}",
        stderr(&o)
    );
    let o = distsync(&["run", &file.replace("lamport-non-fifo", "lamport-light")]);
    assert!(!stderr(&o).contains("FIFO"), "{}", stderr(&o));
    let o = distsync(&["run", &scenario("ricart-agrawala-partition.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["violations"][0]["property"], "deadlock");
}

#[test]
fn every_shipped_scenario_runs() {
    for entry in std::fs::read_dir(repo().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let o = distsync(&["run", path.to_str().unwrap(), "--json"]);
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{}: {}",
                path.display(),
                stderr(&o)
            );
            let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            // A scenario that shows a failure says so in its name; the others must hold.
            let shows_failure = ["non-fifo", "partition", "deadlock"]
                .iter()
                .any(|w| path.to_str().unwrap().contains(w));
            assert_eq!(
                r["violations"].as_array().unwrap().is_empty(),
                !shows_failure,
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn list_shows_the_registry() {
    let o = distsync(&["list", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for n in ["central", "lamport-mutex", "ricart-agrawala"] {
        assert!(names.contains(&n));
    }
    assert!(entries
        .iter()
        .all(|e| e["family"].is_string() && e["description"].is_string()));
}

#[test]
fn simulate_reproduces_the_light_load_figures() {
    let o = distsync(&[
        "simulate",
        "--algo",
        "lamport-mutex",
        "--nodes",
        "5",
        "--load",
        "light",
        "--requests",
        "3",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["mutex"]["messages_per_entry"], 12.0);
    assert_eq!(r["mutex"]["response_time_ns"]["max"], 12_000_000);
}

#[test]
fn compare_reproduces_every_exact_formula() {
    let plot = tmp("compare.svg");
    let o = distsync(&[
        "compare",
        "--nodes",
        "3,5,8",
        "--json",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let algorithms: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert!(algorithms.len() >= 3, "{algorithms:?}");
    let mut exact = 0;
    for r in &rows {
        for field in ["algorithm", "nodes", "load", "measured", "theory", "agrees"] {
            assert!(r.get(field).is_some(), "missing {field} in {r}");
        }
        if r["relation"] == "exact" && !r["theory"].is_null() {
            exact += 1;
            assert_eq!(r["agrees"], true, "{r}");
        }
    }
    assert!(exact >= 40, "only {exact} exact rows");
    // The three algorithms of the foundation, by name.
    let find = |a: &str, n: u64, load: &str, metric: &str| {
        rows.iter()
            .find(|r| {
                r["algorithm"] == a && r["nodes"] == n && r["load"] == load && r["metric"] == metric
            })
            .unwrap_or_else(|| panic!("no row {a} {n} {load} {metric}"))["measured"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        find("ricart-agrawala", 8, "light", "messages_per_entry"),
        14.0
    );
    assert_eq!(find("lamport-mutex", 5, "heavy", "sync_delay_T"), 1.0);
    assert_eq!(find("central", 3, "heavy", "sync_delay_T"), 2.0);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..svg.len().min(80)]
    );
    assert!(svg.contains("ricart-agrawala"));
}

#[test]
fn compare_refuses_bad_flags() {
    for args in [
        &["compare", "--nodes", "0"][..],
        &["compare", "--algo", "nope"][..],
        &["compare", "--load", "medium"][..],
        &["compare", "--family", "astrology"][..],
    ] {
        let o = distsync(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn sweep_plots_a_metric_against_a_parameter() {
    let plot = tmp("sweep.svg");
    let o = distsync(&[
        "sweep",
        "--algo",
        "ricart-agrawala,lamport-mutex",
        "--param",
        "nodes=2..6",
        "--metric",
        "messages_per_entry",
        "--json",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let points: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let of = |a: &str| -> Vec<f64> {
        points
            .iter()
            .filter(|p| p["algorithm"] == a)
            .map(|p| p["metric"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(of("ricart-agrawala"), vec![2.0, 4.0, 6.0, 8.0, 10.0]);
    assert_eq!(of("lamport-mutex"), vec![3.0, 6.0, 9.0, 12.0, 15.0]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("lamport-mutex") && svg.contains("nodes"));
    // A duration parameter and a nested metric.
    let o = distsync(&[
        "sweep",
        "--algo",
        "central",
        "--param",
        "workload.cs=5ms,20ms",
        "--metric",
        "mutex.throughput_per_s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let points: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(points[0]["metric"].as_f64().unwrap() > points[1]["metric"].as_f64().unwrap());
}

#[test]
fn sweep_refuses_bad_parameters_and_metrics() {
    for (args, expected) in [
        (
            &["sweep", "--algo", "central", "--param", "nodes"][..],
            "--param",
        ),
        (
            &["sweep", "--algo", "central", "--param", "network.fifoo=1,2"][..],
            "fifoo",
        ),
        (
            &[
                "sweep",
                "--algo",
                "central",
                "--param",
                "nodes=2..3",
                "--metric",
                "nope",
            ][..],
            "no `nope`",
        ),
        (
            &["sweep", "--algo", "nope", "--param", "nodes=2..3"][..],
            "unknown algorithm",
        ),
        (
            &["sweep", "--algo", "central", "--param", "nodes=5..2"][..],
            "low to high",
        ),
    ] {
        let o = distsync(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    // `distsync compare | head -1`: the reader goes away while the table is being written.
    let mut child = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(["compare", "--nodes", "3,5,8"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn simulate_runs_an_election_after_the_coordinator_crashes() {
    let o = distsync(&["simulate", "--algo", "bully", "--nodes", "8", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The coordinator 7 crashed; the timeout detector set everyone electing; 6 won, agreed.
    assert_eq!(r["election"]["leader"], 6);
    assert_eq!(r["election"]["agreed"], true);
    assert!(r["violations"].as_array().unwrap().is_empty());
    // Every live process detects at once, so the bully pays its worst case, n^2 - n - 1.
    assert_eq!(r["election"]["messages"]["total"], 55);
    for (args, expected) in [
        (
            &["simulate", "--algo", "ring", "--nodes", "1"][..],
            "--nodes",
        ),
        (
            &["simulate", "--algo", "cristian"][..],
            "scenarios/cristian-time-server.toml",
        ),
    ] {
        let o = distsync(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
    }
}
