//! `distsync compare --family election`, and `distsync run` on the election scenarios.

use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn election_comparison_measures_every_algorithm_beside_oracles() {
    let o = distsync(&[
        "compare",
        "--family",
        "election",
        "--nodes",
        "3,6",
        "--orders",
        "ascending,descending",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    for algorithm in [
        "bully",
        "ring",
        "chang-roberts",
        "ring-active-list",
        "peterson",
    ] {
        assert!(
            rows.iter().any(|r| r["algorithm"] == algorithm),
            "{algorithm} is missing"
        );
    }
    assert!(rows.iter().all(|r| r["order"] != "random"));
    let worst = rows
        .iter()
        .find(|r| {
            r["algorithm"] == "chang-roberts"
                && r["nodes"] == 6
                && r["order"] == "descending"
                && r["starters"] == "all"
                && r["metric"] == "Election"
        })
        .unwrap();
    assert_eq!(worst["measured"], 21.0);
    assert_eq!(worst["agrees"], true);
    assert!(
        rows.iter().all(|r| r["agrees"] != false),
        "a figure disagrees"
    );
}

#[test]
fn election_comparison_refuses_what_it_cannot_do() {
    let o = distsync(&["compare", "--family", "election", "--orders", "sideways"]);
    assert_eq!(o.status.code(), Some(2));
    let o = distsync(&[
        "compare",
        "--family",
        "election",
        "--algo",
        "ricart-agrawala",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mutex algorithm, not election"));
}

#[test]
fn an_election_run_prints_the_leader() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/bully-eight-processes.toml");
    let o = distsync(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("leader:     7 (agreed by the 8 live nodes)"),
        "{out}"
    );
    assert!(out.contains("Coordinator 13, Election 6, Ok 3"), "{out}");
}
