//! Every counterexample the checker finds replays: for every algorithm the checker covers, with
//! each fault option that refutes it (links that are not FIFO, a duplicate, a loss, a
//! partition and its heal, a crash, a crash and a recovery), the page's "prove or refute"
//! (`POST /api/check`) loads the counterexample into a stepped session, which shows the same
//! violation (a property judged at
//! the end, such as deadlock, once the session is run on to its end; a property the simulator's
//! monitors name otherwise by that name, see `monitor_names`). Before the session read crash,
//! recover, lose and duplicate steps and messages by their exact text, 53 of the 57
//! counterexamples did not load; before it gave a multicast or a transfer with the checker's
//! own payload, receiver and amount, the broadcasts' lost messages and the bank's transfers did
//! not either.
//!
//! The same counterexample replays through the command line too: `distsync check FILE --trace
//! T` writes it, `distsync run FILE --replay T` makes its steps and exits 1 naming the property
//! and the checker's step (or the run's end) at which it broke.

use distsync_algorithms::registry::{self, Family};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

/// `distsync check FILE --trace T`, then `distsync run FILE --replay T`: `Err` says what went
/// wrong, `Ok` gives the properties the replay says broke.
fn replay_on_the_command_line(dir: &Path, name: &str, toml: &str) -> Result<Vec<String>, String> {
    let scenario = dir.join(format!("{name}.toml"));
    let trace = dir.join(format!("{name}.jsonl"));
    std::fs::write(&scenario, toml).unwrap();
    let bin = env!("CARGO_BIN_EXE_distsync");
    let check = Command::new(bin)
        .arg("check")
        .arg(&scenario)
        .args(["--threads", "1", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    if check.status.code() != Some(1) {
        return Err(format!(
            "distsync check exited with {:?}: {}",
            check.status.code(),
            String::from_utf8_lossy(&check.stderr)
        ));
    }
    let run = Command::new(bin)
        .arg("run")
        .arg(&scenario)
        .arg("--replay")
        .arg(&trace)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stderr).into_owned();
    if run.status.code() != Some(1) {
        return Err(format!(
            "distsync run --replay exited with {:?}: {said}",
            run.status.code()
        ));
    }
    // "replay: deadlock broke at the checker's step 7 (...)" / "replay: deadlock found when
    // the run ended, ...": the property, and where.
    Ok(said
        .lines()
        .filter_map(|l| l.strip_prefix("replay: "))
        .filter(|l| {
            l.contains(" broke at the checker's step ") || l.contains(" found when the run ended")
        })
        .filter_map(|l| l.split(' ').next().map(String::from))
        .collect())
}

fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).expect("the page's server answers");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {}: check-replay\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        distsync_web::CLIENT_HEADER,
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(rest).expect("a JSON answer"))
}

/// The names the simulator's monitors give the checker's property: the same property where
/// the two name it differently (a multicast never delivered everywhere, the snapshot's total
/// against the bank's, a snapshot never complete, the contract between a process's outputs
/// and its `in_critical_section()`).
fn monitor_names(family: Family, property: &str) -> Vec<String> {
    let other = match (family, property) {
        (Family::Multicast, "completion") => Some("undelivered"),
        (Family::Snapshot, "conservation") => Some("snapshot-total"),
        (Family::Snapshot, "completion") => Some("snapshot-incomplete"),
        (Family::Mutex, "output-contract") => Some("contract"),
        _ => None,
    };
    std::iter::once(property)
        .chain(other)
        .map(String::from)
        .collect()
}

/// The fault options tried for each algorithm: (name, network lines, check-table lines).
/// Partitions and (for mutual exclusion and elections) crashes are the checker's `[check]`
/// bounds; a family that refuses one is skipped for it.
fn options(family: Family, needs_fifo: bool) -> Vec<(&'static str, String, String)> {
    let mut out = vec![
        ("non-FIFO", "fifo = false\n".to_string(), String::new()),
        (
            "duplicate",
            format!("fifo = {needs_fifo}\nduplicate = 0.1\n"),
            String::new(),
        ),
        (
            "loss",
            format!("fifo = {needs_fifo}\nloss = 0.1\n"),
            String::new(),
        ),
    ];
    out.push((
        "partition",
        format!("fifo = {needs_fifo}\n"),
        "partition = true\n".to_string(),
    ));
    if matches!(family, Family::Mutex | Family::Election) {
        out.push((
            "crash",
            format!("fifo = {needs_fifo}\n"),
            "crash = 1\n".to_string(),
        ));
        out.push((
            "crash-recover",
            format!("fifo = {needs_fifo}\n"),
            "crash = 1\nrecover = 1\n".to_string(),
        ));
    }
    out
}

#[test]
fn every_checker_counterexample_loads_in_the_page_with_the_same_violation() {
    let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let addr = server.addr();
    let dir = tempfile::tempdir().unwrap();
    let mut refuted = 0;
    let mut failures = Vec::new();
    let mut cli_failures = Vec::new();
    for e in registry::entries() {
        if e.family == Family::ClockSync {
            continue; // the checker refuses clock synchronization
        }
        for (what, network, check) in options(e.family, e.needs_fifo) {
            let elect = if e.family == Family::Election {
                "[[event]]\nat = \"1ms\"\nelect = 0\n"
            } else {
                ""
            };
            let app = if e.family == Family::Snapshot {
                "[app]\nkind = \"bank\"\n"
            } else {
                ""
            };
            let toml = format!(
                "algorithm = \"{}\"\nnodes = 3\n[network]\n{network}{app}{elect}[check]\n{check}max_states = 200000\n",
                e.name
            );
            let (status, page) = post(addr, "/api/check", &json!({ "toml": toml }));
            if status != 200 {
                continue; // an option the family refuses (a crash in a multicast)
            }
            let Some(v) = page["violation"].as_object() else {
                continue;
            };
            refuted += 1;
            let property = v["property"].as_str().unwrap().to_string();
            let names = monitor_names(e.family, &property);
            match replay_on_the_command_line(dir.path(), &format!("{}-{what}", e.name), &toml) {
                Ok(said) if said.iter().any(|p| names.contains(p)) => {}
                Ok(said) => cli_failures.push(format!(
                    "{} {what}: the checker found {property}, `distsync run --replay` shows {said:?}",
                    e.name
                )),
                Err(why) => cli_failures.push(format!("{} {what}: {property}: {why}", e.name)),
            }
            if let Some(err) = page["load_error"].as_str() {
                failures.push(format!("{} {what}: {property}: {err}", e.name));
                continue;
            }
            let shown = |view: &Value| -> Vec<String> {
                view["violations"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x["property"].as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut shown = shown(&page["view"]);
            if !shown.iter().any(|p| names.contains(p)) {
                // A property of the end (deadlock, agreement) is judged when the run ends: run
                // the loaded session on, as the page's "run" button does.
                let id = page["session"].as_str().expect("a session id");
                let (status, view) = post(addr, &format!("/api/session/{id}/run"), &json!({}));
                assert_eq!(status, 200, "{view}");
                let view = if view["view"].is_object() {
                    view["view"].clone()
                } else {
                    view
                };
                shown = view["violations"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x["property"].as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            if !shown.iter().any(|p| names.contains(p)) {
                failures.push(format!(
                    "{} {what}: the checker found {property}, the stepped replay shows {shown:?}",
                    e.name
                ));
            }
        }
    }
    assert!(refuted >= 50, "only {refuted} counterexamples");
    eprintln!("{refuted} counterexamples replayed in the page and by `distsync run --replay`");
    assert!(
        cli_failures.is_empty(),
        "{refuted} counterexamples, {} not replayed by `distsync run --replay`:\n{}",
        cli_failures.len(),
        cli_failures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{refuted} counterexamples, {} not replayed in the page:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What `distsync run --replay` refuses, each with the flag or file and what was expected: a
/// missing trace, a trace of another algorithm, a file that is no trace, and `--seed` or
/// `--svg` beside it (a replay makes no random choice).
#[test]
fn a_replay_of_the_wrong_file_or_with_a_seed_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_distsync");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let lamport = write(
        "lamport.toml",
        "algorithm = \"lamport-mutex\"\nnodes = 2\n[network]\nfifo = false\n",
    );
    let central = write("central.toml", "algorithm = \"central\"\nnodes = 2\n");
    let trace = dir.path().join("cex.jsonl").display().to_string();
    let check = Command::new(bin)
        .args(["check", &lamport, "--trace", &trace])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1));
    let not_a_trace = write("notes.txt", "hello\n");
    let missing = dir.path().join("missing.jsonl").display().to_string();
    for (args, says) in [
        (
            vec![central.as_str(), "--replay", &trace],
            "the counterexample is of `lamport-mutex`, the scenario runs `central`",
        ),
        (
            vec![lamport.as_str(), "--replay", &missing],
            "--replay: cannot read",
        ),
        (
            vec![lamport.as_str(), "--replay", &not_a_trace],
            "line 1: not JSON",
        ),
        (
            vec![lamport.as_str(), "--replay", &trace, "--seed", "3"],
            "--seed: not with --replay",
        ),
    ] {
        let o = Command::new(bin).arg("run").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // The right one replays: the violation, the step, exit 1.
    let o = Command::new(bin)
        .args(["run", &lamport, "--replay", &trace])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("replay: mutual-exclusion broke at the checker's step "),
        "{err}"
    );
}
