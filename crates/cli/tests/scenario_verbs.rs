//! `distsync examples`, `init`, `validate`, and `run --set/--until`; and an example scenario for
//! every algorithm, each running clean, with the figures its opening comment promises.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod scratch;

use scratch::Scratch;

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the binary runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-verbs-", name)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The scenarios of scenarios/: file stem and text, sorted.
fn scenarios() -> BTreeMap<String, String> {
    std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect()
}

fn report(scenario: &str) -> Value {
    let o = distsync(&["run", &format!("scenarios/{scenario}.toml"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{scenario}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_binary_carries_every_scenario_file_byte_for_byte() {
    let files = scenarios();
    let o = distsync(&["examples"]);
    assert_eq!(o.status.code(), Some(0));
    let mut listed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        files.keys().cloned().collect::<Vec<_>>(),
        "add the new scenario to EXAMPLES in crates/cli/src/scenario_cmd.rs"
    );
    for (name, text) in &files {
        let o = distsync(&["examples", name]);
        assert_eq!(String::from_utf8_lossy(&o.stdout), *text, "{name}");
    }
    let o = distsync(&["examples", "ricart-agrawala-hevy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("did you mean `ricart-agrawala-heavy`"),
        "{}",
        text(&o)
    );
}

#[test]
fn every_algorithm_has_an_example_that_runs_clean() {
    let o = distsync(&["list", "--json"]);
    let entries: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let files = scenarios();
    for entry in entries {
        let name = entry["name"].as_str().unwrap();
        let line = format!("algorithm = \"{name}\"");
        let mine: Vec<&String> = files
            .iter()
            .filter(|(_, t)| t.lines().any(|l| l.starts_with(&line)))
            .map(|(n, _)| n)
            .collect();
        assert!(!mine.is_empty(), "no scenario runs {name}");
        let clean = mine.iter().any(|s| {
            distsync(&["run", &format!("scenarios/{s}.toml")])
                .status
                .code()
                == Some(0)
        });
        assert!(clean, "no scenario of {name} runs clean: {mine:?}");
    }
}

#[test]
fn the_new_examples_show_what_their_comments_say() {
    let by_kind = |r: &Value, kind: &str| r["messages"]["by_kind"][kind].as_u64().unwrap_or(0);
    let mutex = |r: &Value, field: &str| r["mutex"][field].clone();

    // Token ring, heavy: about one token pass per entry, SD = T = 1ms.
    let r = report("token-ring-heavy");
    assert!(
        mutex(&r, "messages_per_entry").as_f64().unwrap() < 1.1,
        "{r}"
    );
    assert_eq!(mutex(&r, "sync_delay_ns")["max"], 1_000_000);
    assert_eq!(mutex(&r, "entries"), 25);

    // Suzuki-Kasami and Ricart-Agrawala's token algorithm: N-1 REQUESTs for every token sent
    // (N messages per entry), none for an entry at the holder of the idle token.
    for name in ["suzuki-kasami-light", "ricart-agrawala-token-heavy"] {
        let r = report(name);
        assert_eq!(
            by_kind(&r, "Request"),
            4 * by_kind(&r, "Token"),
            "{name}: {r}"
        );
        assert_eq!(mutex(&r, "entries"), 25, "{name}");
    }
    assert_eq!(
        mutex(&report("ricart-agrawala-token-heavy"), "sync_delay_ns")["max"],
        1_000_000
    );

    // Raymond: a REQUEST up and the TOKEN down each edge between requester and holder.
    let r = report("raymond-tree");
    assert_eq!(by_kind(&r, "Request"), by_kind(&r, "Token"), "{r}");
    assert_eq!(mutex(&r, "entries"), 21);

    // Singhal, light: at most N-1 = 4 messages per entry.
    let r = report("singhal-light");
    assert!(
        mutex(&r, "messages_per_entry").as_f64().unwrap() <= 4.0,
        "{r}"
    );

    // Maekawa on the Fano plane, light: 3(K-1) = 6 messages per entry.
    for name in ["maekawa-plane", "maekawa-basic-light"] {
        let r = report(name);
        assert_eq!(mutex(&r, "messages_per_entry"), 6.0, "{name}: {r}");
    }

    // FIFO broadcast on reordering channels: N-1 = 4 messages per multicast, in FIFO order.
    let r = report("fifo-broadcast");
    assert_eq!(r["multicast"]["messages_per_multicast"], 4.0, "{r}");
    assert_eq!(r["multicast"]["fifo_inversions"], 0, "{r}");

    // Majority vote: a majority (3 of 5) of votes per entry; some requests are QUEUED.
    let r = report("majority-vote-lock-manager");
    let entries = mutex(&r, "entries").as_u64().unwrap();
    assert_eq!(entries, 20);
    assert!(by_kind(&r, "Granted") >= 3 * entries, "{r}");
    assert!(by_kind(&r, "Queued") > 0, "{r}");
}

#[test]
fn init_writes_a_scenario_that_validates_and_runs() {
    for algorithm in ["ricart-agrawala", "bully", "cristian", "chandy-lamport"] {
        let path = tmp(&format!("{algorithm}.toml"));
        let p = path.to_str().unwrap();
        let o = distsync(&["init", algorithm, "--out", p]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = distsync(&["validate", p]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(text(&o).contains("valid"), "{}", text(&o));
        let o = distsync(&["run", p]);
        assert_eq!(o.status.code(), Some(0), "{algorithm}: {}", text(&o));
        // An existing file is never overwritten.
        let o = distsync(&["init", algorithm, "--out", p]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(p), "{}", text(&o));
    }
    let o = distsync(&["init", "ricart-agrawla"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("did you mean `ricart-agrawala`"),
        "{}",
        text(&o)
    );
    // Printed without --out, the template is the library's.
    let o = distsync(&["init", "raymond"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        distsync_sim_template("raymond")
    );
}

fn distsync_sim_template(name: &str) -> String {
    distsync_sim::template::template(name).unwrap()
}

#[test]
fn validate_refuses_what_run_refuses_without_running() {
    let path = tmp("bad-family.toml");
    // An election event in a mutual-exclusion scenario: refused by the family check.
    std::fs::write(
        &path,
        "algorithm = \"central\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = 1\n",
    )
    .unwrap();
    let o = distsync(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("event[0].elect"), "{}", text(&o));
    assert!(text(&o).contains("bad-family.toml"), "{}", text(&o));
    // Raymond's tree is the algorithm's own parameter check.
    std::fs::write(
        &path,
        "algorithm = \"raymond\"\nnodes = 3\ntree = [[0, 1]]\n[workload]\nkind = \"light\"\n",
    )
    .unwrap();
    let o = distsync(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("tree"), "{}", text(&o));
    // A scenario whose run violates a property is still valid: validate does not run it.
    let o = distsync(&["validate", "scenarios/lamport-non-fifo.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("valid: lamport-mutex, 4 nodes, seed 30"),
        "{}",
        text(&o)
    );
}

#[test]
fn run_set_and_until_change_the_scenario() {
    let o = distsync(&[
        "run",
        "scenarios/ricart-agrawala-heavy.toml",
        "--json",
        "--set",
        "nodes=3",
        "--set",
        "workload.cs=5ms",
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["nodes"], 3);
    // Reply and Request only: 2(N-1) = 4 messages per entry with N = 3.
    assert_eq!(r["mutex"]["messages_per_entry"], 4.0);
    // E = 5ms, and under heavy load the response includes waiting for the others.
    assert!(r["mutex"]["response_time_ns"]["p50"].as_u64().unwrap() >= 5_000_000);
    let o = distsync(&[
        "run",
        "scenarios/ricart-agrawala-heavy.toml",
        "--json",
        "--until",
        "100ms",
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["end_time_ns"], 100_000_000);
    assert_eq!(r["ended_by"], "horizon");
    // A table value in JSON.
    let o = distsync(&[
        "run",
        "scenarios/ricart-agrawala-heavy.toml",
        "--json",
        "--set",
        r#"network.delay={"uniform":["1ms","5ms"]}"#,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for (bad, says) in [
        ("network.bogus=1", "unknown field `bogus`"),
        ("nodes=x", "`nodes`"),
        ("nodes", "PATH=VALUE"),
        ("network..loss=1", "field names joined by dots"),
    ] {
        let o = distsync(&["run", "scenarios/ricart-agrawala-heavy.toml", "--set", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--set"), "{bad}: {}", text(&o));
        assert!(text(&o).contains(says), "{bad}: {}", text(&o));
    }
    // The reproduce line carries the changes.
    let o = distsync(&[
        "run",
        "scenarios/lamport-non-fifo.toml",
        "--set",
        "seed=30",
        "--until",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains(
            "reproduce with: distsync run scenarios/lamport-non-fifo.toml --set 'seed=30' --until 1s --seed 30"
        ),
        "{}",
        text(&o)
    );
}
