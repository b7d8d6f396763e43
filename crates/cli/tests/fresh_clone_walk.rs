//! What walking issue 16 on a fresh clone found, each fixed after its test failed: negative
//! times for `trace render --from/--to` got clap's "unexpected argument" (with a tip that does
//! not work); a windowed long run said "the run has N events" with N the trace's lines, twice
//! the report's `events_processed`; a swept value the scenario refuses did not name `--param`.
//! And a guard: the links test checks links only, while docs/viz.md once named, in passing, a
//! scenario that did not exist; every path the docs mention is checked here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn distsync_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("distsync-walk-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scenario(name: &str) -> String {
    repo().join("scenarios").join(name).display().to_string()
}

#[test]
fn negative_times_of_a_window_are_refused_naming_the_flag() {
    let dir = workdir("negative");
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("lamport-non-fifo.toml"),
            "--trace",
            "run.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for (flag, value) in [("--from", "-1ms"), ("--to", "-5ms")] {
        let o = distsync_in(
            &dir,
            &[
                "trace",
                "render",
                "run.jsonl",
                "--svg",
                "x.svg",
                flag,
                value,
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(flag) && err.contains(&format!("negative time {value}")),
            "{flag} {value}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_windowed_long_run_counts_the_traces_events_as_the_trace_does() {
    let dir = workdir("long");
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("ricart-agrawala-heavy.toml"),
            "--set",
            "workload.requests=60",
            "--until",
            "1h",
            "--trace",
            "long.jsonl",
            "--svg",
            "long.svg",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processed = report["events_processed"].as_u64().unwrap();
    let lines = std::fs::read_to_string(dir.join("long.jsonl"))
        .unwrap()
        .lines()
        .count() as u64
        - 1; // the header
    assert_ne!(
        lines, processed,
        "the two counts differ, so the words must say which"
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!("the trace has {lines} events")),
        "{err}"
    );
    assert!(!err.contains("the run has"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_swept_value_the_scenario_refuses_names_the_param_flag() {
    let dir = workdir("sweep");
    let o = distsync_in(
        &dir,
        &["sweep", "--algo", "raymond", "--param", "nodes=-2..3"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: --param nodes=-2"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every path of the repository the README or docs/ mention in passing (`scenarios/...`,
/// `docs/...`, `crates/...`, `scripts/...`, `benches/...`), not only in links, exists; a `*`
/// matches any run of characters.
#[test]
fn every_path_the_docs_mention_exists() {
    let root = repo();
    let mention = regex::Regex::new(
        r"(?:^|[\s`(\[])((?:scenarios|docs|crates|scripts|benches)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*/])",
    )
    .unwrap();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for m in mention.captures_iter(&text) {
            let path = m[1].trim_end_matches('.');
            checked += 1;
            if !exists(&root, path) {
                missing.push(format!("{}: {path}", file.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} paths mentioned");
    assert!(
        missing.is_empty(),
        "paths the docs mention that do not exist:\n{missing:#?}"
    );
}

/// Whether `path` (which may hold `*`) names something under `root`.
fn exists(root: &Path, path: &str) -> bool {
    if !path.contains('*') {
        return root.join(path).exists();
    }
    let (dir, pattern) = path.rsplit_once('/').unwrap();
    let parts: Vec<&str> = pattern.split('*').collect();
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        name.starts_with(first) && name.ends_with(last) && name.len() >= first.len() + last.len()
    })
}
