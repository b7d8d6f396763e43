//! The scale scenarios of benches/scenarios (a million processes, `elect = "all"`,
//! `order = "random"`) are valid as written, and the same files run through `distsync run` with
//! a short summary (not a line per process). Their full-size figures are benchmarks
//! (docs/performance.md), not tests.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn distsync(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .current_dir(repo())
        .args(args)
        .output()
        .unwrap()
}

fn scale_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("benches/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            format!(
                "benches/scenarios/{}",
                p.file_name().unwrap().to_string_lossy()
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_scale_scenario_is_valid() {
    let files = scale_files();
    assert!(
        files.iter().any(|f| f.ends_with("chang-roberts-1m.toml")),
        "{files:?}"
    );
    for file in files {
        // A debug build takes a minute to lay out a million processes: the million-process
        // files are run at a smaller size below instead (the ten-million one is the same file as
        // the million one but for its size, horizon and pending cap).
        if file.contains("-1m") || file.contains("-10m") {
            continue;
        }
        let o = distsync(&["validate", &file]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{file}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_scale_scenario_runs_with_a_short_summary() {
    // The million-process file itself, on a smaller ring (a debug build would take minutes).
    for algorithm in ["chang-roberts", "peterson"] {
        let file = format!("benches/scenarios/{algorithm}-1m.toml");
        let o = distsync(&["run", &file, "--set", "nodes=2000"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{file}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.lines().count() < 40, "{file}: {out}");
        assert!(
            out.contains("1999"),
            "{file}: the leader is the highest id: {out}"
        );
        let json = distsync(&["run", &file, "--set", "nodes=2000", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let election = &report["election"];
        assert_eq!(election["agreed"], true, "{report}");
        assert_eq!(election["messages"]["by_kind"]["Elected"], 2000, "{report}");
        // Every process started: more election messages than the 2n-1 of an ascending ring's
        // best case, as a random order gives (about n H_n).
        assert!(
            election["messages"]["by_kind"]["Election"]
                .as_u64()
                .unwrap()
                > 2 * 2000,
            "{report}"
        );
    }
}
