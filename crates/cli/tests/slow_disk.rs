//! Slow and full disks (issue 35, item 6), with the faults injected in the nodes' epoch mark
//! (`DISTSYNC_TEST_FSYNC_DELAY_MS`, `DISTSYNC_TEST_FULL_DISK_NODE`):
//! - every sync of a mark slower than `heartbeat_timeout`: view changes still finish and locks
//!   are granted (they livelocked when every view change waited for the disk at every node);
//! - one node's disk full: it stays up and sits out (it never serves without its mark on disk):
//!   it says so once in its log, naming the file and `ENOSPC`; a lock asked of it is refused
//!   with that error; `cluster status` shows it (and exits non-zero), while the others serve;
//!   once space returns it stores its mark at its next try and serves again, tokens rising.

mod lock_common;

use lock_common::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// `distsync cluster up` with the tests' heartbeats (failure timeout 500ms) and `env` set for
/// the nodes it starts.
fn up_with(dir: &Path, args: &[&str], env: (&str, &str)) -> Output {
    Command::new(BIN)
        .args(["cluster", "up"])
        .args(args)
        .args([
            "--heartbeat",
            "50ms",
            "--heartbeat-timeout",
            "500ms",
            "--dir",
        ])
        .arg(dir)
        .env(env.0, env.1)
        .output()
        .unwrap()
}

/// `distsync lock` on the cluster's client file, running `true`.
fn lock_once(dir: &Path, name: &str) -> Output {
    Command::new(BIN)
        .args(["lock", "--timeout", "20s", "--cluster"])
        .arg(dir.join("client.toml"))
        .args([name, "--", "true"])
        .output()
        .unwrap()
}

#[test]
fn view_changes_finish_and_locks_are_granted_when_every_sync_outlasts_the_failure_timeout() {
    let _g = lock_guard();
    let tmp = scratch("slow-fsync");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    // 600 ms per sync against a failure timeout of 500 ms.
    let out = up_with(
        &dir,
        &[
            "--nodes",
            "3",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
        ("DISTSYNC_TEST_FSYNC_DELAY_MS", "600"),
    );
    assert!(
        out.status.success(),
        "cluster up: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..20 {
        let out = lock_once(&dir, "slow");
        assert!(
            out.status.success(),
            "lock {i} of 20 with slow syncs: exit {:?}: {}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr),
            cluster_logs(&dir)
        );
    }
}

/// `distsync lock --node NODE` on the cluster's client file, its command printing its token.
fn lock_via(dir: &Path, node: u32) -> Output {
    Command::new(BIN)
        .args([
            "lock",
            "--timeout",
            "20s",
            "--node",
            &node.to_string(),
            "--cluster",
        ])
        .arg(dir.join("client.toml"))
        .args(["full", "--", "sh", "-c", "echo $DISTSYNC_FENCING_TOKEN"])
        .output()
        .unwrap()
}

/// The token a successful `lock_via` printed.
fn token_of(out: &Output, what: &str) -> u64 {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn a_node_on_a_full_disk_stays_up_refusing_locks_naming_the_file_and_serves_again_when_space_returns(
) {
    let _g = lock_guard();
    let tmp = scratch("full-disk");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    // Node 1's disk is full while the file `disk-full` exists (the injection's `ID:PATH`).
    let full = dir.join("disk-full");
    let injected = format!("1:{}", full.display());
    let out = up_with(
        &dir,
        &[
            "--nodes",
            "3",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
        ("DISTSYNC_TEST_FULL_DISK_NODE", &injected),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t1 = token_of(&lock_via(&dir, 1), "a lock through node 1");
    // The disk fills, and node 1 restarts (with the injection: `restart` starts a new
    // process): the view that takes it back in is numbered above its mark, which it must
    // store first.
    std::fs::write(&full, "").unwrap();
    let restart = Command::new(BIN)
        .args(["cluster", "restart", "--id", "1", "--dir"])
        .arg(&dir)
        .env("DISTSYNC_TEST_FULL_DISK_NODE", &injected)
        .output()
        .unwrap();
    assert!(
        restart.status.success(),
        "{}",
        String::from_utf8_lossy(&restart.stderr)
    );
    let pid = pid_of(&dir, 1);
    let not_serving = || {
        let status = cluster(&dir, &["status"]);
        let text = String::from_utf8_lossy(&status.stdout).into_owned();
        let said = text
            .lines()
            .any(|l| l.starts_with("node 1: NOT SERVING") && l.contains("node-1.epoch"));
        (said, status.status.code(), text)
    };
    wait_for(
        "cluster status shows node 1's disk",
        Duration::from_secs(20),
        || not_serving().0,
    );
    // It stays up, and status says why, naming the file and the error, and exits non-zero.
    assert!(alive(pid), "node 1 is up");
    let (_, code, text) = not_serving();
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    let j = cluster(&dir, &["status", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert!(
        j["nodes"][1]["problem"]
            .as_str()
            .is_some_and(|l| l.contains("node-1.epoch") && l.contains("No space left on device")),
        "{j}"
    );
    // A lock asked of node 1 is refused with the error.
    let out = lock_via(&dir, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("node-1.epoch") && err.contains("No space left on device"),
        "the client is told why, naming the file: {err}"
    );
    // The other two serve.
    let t2 = token_of(&lock_via(&dir, 0), "a lock through node 0");
    assert!(t2 > t1, "{t2} > {t1}");
    // Its log says it once, though it has tried again every heartbeat_timeout since.
    std::thread::sleep(Duration::from_secs(2));
    let log = std::fs::read_to_string(dir.join("node-1.log")).unwrap();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("cannot store the epoch mark"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {log}");
    assert!(
        said[0].contains("node-1.epoch") && said[0].contains("No space left on device"),
        "the file and ENOSPC are named: {}",
        said[0]
    );
    // Space returns: node 1 stores its mark at its next try, by itself, is taken back into
    // the view, and grants, the token still rising.
    let before = mark_of(&dir, 1);
    std::fs::remove_file(&full).unwrap();
    wait_for(
        "the cluster is whole again",
        Duration::from_secs(20),
        || cluster(&dir, &["status"]).status.success(),
    );
    let t3 = token_of(
        &lock_via(&dir, 1),
        "a lock through node 1 once space returned",
    );
    assert!(t3 > t2, "{t3} > {t2}");
    assert!(mark_of(&dir, 1) > before, "node 1 stores its mark again");
    let log = std::fs::read_to_string(dir.join("node-1.log")).unwrap();
    assert!(
        log.contains("the epoch mark is stored again"),
        "its log says it takes part again: {log}"
    );
}

/// Node `id`'s epoch mark on disk: the higher of the slots (`epoch N CHECKSUM` lines) of
/// `DIR/node-ID.epoch`.
fn mark_of(dir: &Path, id: u32) -> u32 {
    let text = std::fs::read_to_string(dir.join(format!("node-{id}.epoch"))).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("epoch ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// Every node's log, for a failure's message.
fn cluster_logs(dir: &Path) -> String {
    (0..3)
        .map(|i| {
            let log =
                std::fs::read_to_string(dir.join(format!("node-{i}.log"))).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            format!(
                "node {i}, last lines:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
