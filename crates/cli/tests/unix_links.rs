//! Every link between the nodes of a cluster started by `cluster up` runs over the nodes' Unix
//! sockets (docs/net.md, "Transports"), not only the links dialed after the node they lead to
//! had created its socket. `cluster up` holds a new cluster's TCP ports listening from the
//! moment it chooses them, so a node that dialed a peer not started yet used to find the peer's
//! TCP port accepting and its socket file missing, and kept that link on loopback TCP (a third
//! of the links of a 10-node cluster): `cluster up` now binds the nodes' Unix sockets too
//! before it starts the first node, and hands each node its own.

mod lock_common;

use lock_common::*;
use std::time::{Duration, Instant};

/// The `link up` lines of every node's log: (via Unix, via TCP).
fn links(dir: &std::path::Path, n: usize) -> (usize, usize) {
    let (mut unix, mut tcp) = (0, 0);
    for id in 0..n {
        let log = std::fs::read_to_string(dir.join(format!("node-{id}.log"))).unwrap_or_default();
        for line in log.lines().filter(|l| l.contains("link up")) {
            if line.contains("via=Unix") {
                unix += 1;
            } else if line.contains("via=Tcp") {
                tcp += 1;
            }
        }
    }
    (unix, tcp)
}

#[test]
fn every_link_of_a_new_cluster_runs_over_the_unix_sockets() {
    let _g = lock_guard();
    let tmp = scratch("unix-links");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    let n = 6;
    let out = cluster_up_fast(
        &dir,
        &[
            "--nodes",
            &n.to_string(),
            "--mutex",
            "ricart-agrawala",
            "--log",
            "info",
        ],
    );
    assert!(
        out.status.success(),
        "cluster up: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each node dials each other node once: n * (n - 1) links.
    let want = n * (n - 1);
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = links(&dir, n);
    while seen.0 + seen.1 < want && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        seen = links(&dir, n);
    }
    assert_eq!(
        seen,
        (want, 0),
        "(links over Unix sockets, over TCP) of the {want} links"
    );
    // The sockets are the nodes' own: they are gone once the cluster is down.
    let down = cluster(&dir, &["down"]);
    assert!(down.status.success());
    for id in 0..n {
        assert!(
            !dir.join(format!("node-{id}.sock")).exists(),
            "node {id}'s socket file is removed when it stops"
        );
    }
}
