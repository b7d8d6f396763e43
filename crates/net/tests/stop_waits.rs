//! `local::stop_ids` (what `cluster stop` and `cluster down` run) returns only once each node
//! it stopped has exited. A process's command line reads empty, or cut short, while it is
//! letting go of its memory; a large process spends milliseconds there. `stop` once took the
//! empty command line for "gone", so a node could still be a running process right after
//! `cluster stop` said it stopped (seen as a flaky `cluster_ops` check).

use distsync_core::NodeId;
use distsync_net::local::{has_exited, pid_path, stop_ids};
use std::process::{Child, Command};
use std::time::Duration;

/// A stand-in node: a process whose command line names `node` and the cluster file (what
/// `stop` checks), holding `mb` MiB of touched memory, so that its exit takes a while.
fn big_node(cluster: &std::path::Path, mb: usize) -> Child {
    Command::new("perl")
        .args([
            "-e",
            &format!("my $x = 'a' x ({mb} * 1048576); $| = 1; print \"ready\\n\"; sleep 60;"),
            "node",
        ])
        .arg(cluster)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("perl runs")
}

fn wait_ready(child: &mut Child) {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
}

#[test]
fn stop_returns_only_after_each_node_has_exited() {
    let tmp = tempfile::TempDir::with_prefix("distsync-stop-waits-").unwrap();
    let dir = tmp.path().to_path_buf();
    let cluster = dir.join("cluster.toml");
    std::fs::write(&cluster, "# stand-in\n").unwrap();
    let cluster = std::fs::canonicalize(&cluster).unwrap();
    for round in 0..3 {
        let mut node = big_node(&cluster, 512);
        wait_ready(&mut node);
        let pid = node.id();
        std::fs::write(pid_path(&dir, NodeId(1)), format!("{pid}\n")).unwrap();
        let out = stop_ids(&dir, None, Duration::from_secs(10)).unwrap();
        assert_eq!(out, vec![(NodeId(1), pid, "stopped")], "round {round}");
        assert!(
            has_exited(pid),
            "round {round}: stop returned while pid {pid} was still exiting"
        );
        node.wait().unwrap();
    }
    // A node that ignores TERM is killed, and stop waits for the kill to end it too.
    let mut node = Command::new("perl")
        .args([
            "-e",
            "$SIG{TERM} = 'IGNORE'; my $x = 'a' x (512 * 1048576); $| = 1; print \"ready\\n\"; sleep 60;",
            "node",
        ])
        .arg(&cluster)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_ready(&mut node);
    let pid = node.id();
    std::fs::write(pid_path(&dir, NodeId(2)), format!("{pid}\n")).unwrap();
    let out = stop_ids(&dir, None, Duration::from_millis(200)).unwrap();
    assert_eq!(out, vec![(NodeId(2), pid, "killed")]);
    assert!(
        has_exited(pid),
        "stop returned while the killed pid {pid} was still exiting"
    );
    node.wait().unwrap();
}
