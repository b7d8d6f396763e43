//! The ports `cluster up` chooses for a new cluster stay bound from the moment they are chosen
//! until each node has its own (inherited sockets), so no other process can take one in
//! between: with ports chosen and let go, a second cluster starting at the same moment (or any
//! outgoing connection drawing the same ephemeral port) could bind one first, and that node
//! failed with "Address already in use".

use distsync_core::NodeId;
use distsync_net::{local, Timeouts};
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

/// A fresh directory, removed when the returned guard drops (also when the test fails).
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::TempDir::with_prefix(format!("ds-held-{tag}-")).unwrap()
}

/// Whether another process could take `port` now (for TCP or for UDP).
fn takeable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok() || UdpSocket::bind(("127.0.0.1", port)).is_ok()
}

#[test]
fn ports_chosen_and_let_go_can_be_taken_before_the_nodes_bind_them() {
    // The window the held ports close: `free_ports` (and `cluster_file`) let their ports go.
    let ports = local::free_ports(3).unwrap();
    assert!(
        ports.iter().any(|&p| takeable(p)),
        "ports let go are free for anyone: {ports:?}"
    );
}

#[test]
fn held_ports_cannot_be_taken_until_each_node_has_its_own_sockets() {
    let tmp = temp_dir("nodes");
    let dir = tmp.path().to_path_buf();
    let (file, held) =
        local::cluster_file_holding(3, "central", "bully", None, Timeouts::default()).unwrap();
    let held = held.expect("free ports are held");
    let ports = held.ports();
    let from_file: Vec<u16> = file
        .nodes
        .iter()
        .map(|n| n.addr.rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ports, from_file, "node i's port is held at index i");
    for &p in &ports {
        assert!(
            !takeable(p),
            "port {p} could be taken while cluster up holds it"
        );
    }
    local::write_cluster(&dir, &file).unwrap();
    // A stand-in for the binary (`node --cluster FILE --id N`; bash, as dash cannot write to a
    // descriptor above 9): reports which descriptors it was
    // handed and whether each is an open socket bound to its own port, then keeps them 3 s.
    let exe = dir.join("fake-node");
    std::fs::write(
        &exe,
        "#!/bin/bash\nout=\"$(dirname \"$0\")/node-$5.fds\"\n: > \"$out.tmp\"\n\
         for fd in $(echo \"$DISTSYNC_LISTEN_FDS\" | tr , ' '); do readlink /proc/$$/fd/$fd >> \"$out.tmp\"; done\n\
         mv \"$out.tmp\" \"$out\"\necho \"$5\" >&\"$DISTSYNC_READY_FD\"\nsleep 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o700)).unwrap();
    let ids = [NodeId(0), NodeId(1), NodeId(2)];
    let (started, mut pipe) =
        local::start_nodes_holding(&dir, &exe, &ids, "warn", Some(held)).unwrap();
    assert_eq!(started.len(), 3);
    let seen = pipe.wait(&ids, std::time::Instant::now() + Duration::from_secs(60));
    assert_eq!(seen.len(), 3, "every stand-in reported: {seen:?}");
    for id in ids {
        let fds = std::fs::read_to_string(dir.join(format!("node-{id}.fds"))).unwrap();
        let lines: Vec<&str> = fds.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "node {id} got a TCP and a UDP socket: {fds}"
        );
        assert!(
            lines.iter().all(|l| l.starts_with("socket:")),
            "node {id}'s descriptors are open sockets: {fds}"
        );
    }
    // `cluster up` closed its copies; the nodes' keep every port taken.
    for &p in &ports {
        assert!(!takeable(p), "port {p} came free while its node runs");
    }
    for (_, pid) in started {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}
