//! Slow and full disks (issue 35, item 6), with the faults injected in the nodes' epoch mark
//! (`DISTSYNC_TEST_FSYNC_DELAY_MS`, `DISTSYNC_TEST_FULL_DISK_NODE`):
//! - every sync of a mark slower than `heartbeat_timeout`: view changes still finish and locks
//!   are granted (they livelocked when every view change waited for the disk at every node);
//! - one node's disk full: it says so once, naming the file and `ENOSPC`, and stops (it never
//!   serves without its mark on disk); `cluster status` shows it (and exits non-zero), while the
//!   others serve; once space returns, `cluster start` brings it back and it serves again.

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

#[test]
fn a_full_disk_is_logged_once_naming_the_file_and_shown_by_cluster_status() {
    let _g = lock_guard();
    let tmp = scratch("full-disk");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    // The cluster starts on good disks (a node that stopped before every node answered would
    // make `up` fail and stop them all); then node 1 comes back on a full disk: its store of the
    // epoch of the view that takes it in fails.
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
        ("DISTSYNC_TEST_FULL_DISK_NODE", "none"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stop = cluster(&dir, &["stop", "--id", "1"]);
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    // Node 1 exits once the view takes it in: `start` may see it answer first, or not.
    let _ = Command::new(BIN)
        .args(["cluster", "start", "--id", "1", "--dir"])
        .arg(&dir)
        .env("DISTSYNC_TEST_FULL_DISK_NODE", "1")
        .output()
        .unwrap();
    wait_for_status_code(&dir, 1);
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
    let status = cluster(&dir, &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("node 1:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("node-1.epoch") && line.contains("No space left on device"),
        "status shows why node 1 is down: {text}"
    );
    let j = cluster(&dir, &["status", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert!(
        j["nodes"][1]["last_log"]
            .as_str()
            .is_some_and(|l| l.contains("No space left on device")),
        "{j}"
    );
    // The other two serve.
    let out = lock_once(&dir, "full");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Space returns: `cluster start` brings node 1 back (the node does not come back by
    // itself), it rejoins the view, its mark moves on, and a lock through it is granted.
    let before = mark_of(&dir, 1);
    let start = cluster(&dir, &["start", "--id", "1"]);
    assert!(
        start.status.success(),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    wait_for(
        "the cluster is whole again",
        Duration::from_secs(20),
        || cluster(&dir, &["status"]).status.success(),
    );
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "20s", "--node", "1", "--cluster"])
        .arg(dir.join("client.toml"))
        .args(["full", "--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a lock through node 1: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster_logs(&dir)
    );
    assert!(mark_of(&dir, 1) > before, "node 1 stores its mark again");
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

/// Waits (bounded) until node `id` has exited, as `cluster status` sees it.
fn wait_for_status_code(dir: &Path, id: u32) {
    wait_for(
        &format!("node {id} exits"),
        std::time::Duration::from_secs(20),
        || !alive(pid_of(dir, id)),
    );
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
