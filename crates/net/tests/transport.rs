//! Unix domain sockets between the nodes and clients of one machine (`distsync_net::transport`),
//! and TCP everywhere else; the pipe on which `cluster up`'s nodes say they listen
//! (`local::start_nodes_ready`).
//!
//! A node whose cluster file was read from a directory and whose address is a loopback address
//! listens on `DIR/node-N.sock` as well as on its TCP address; a dialer uses the socket for such
//! a node and TCP otherwise, or when the socket is not there or does not answer. Both carry the
//! same authenticated protocol.

mod support;

use distsync_core::NodeId;
use distsync_net::auth::Role;
use distsync_net::connection;
use distsync_net::local;
use distsync_net::transport::{self, Via};
use distsync_net::wire::{ClientReply, ClientRequest};
use distsync_net::{Cluster, Timeouts};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::start_node;

/// A fresh private directory, not made yet (short: a Unix socket path has at most 107 bytes),
/// inside a temporary one that is removed when the guard drops (also when the test fails).
struct Scratch {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

fn temp_dir(tag: &str) -> Scratch {
    let tmp = tempfile::TempDir::with_prefix(format!("ds-tr-{tag}-")).unwrap();
    let dir = tmp.path().join("d");
    Scratch { _tmp: tmp, dir }
}

/// A 3-node ricart-agrawala cluster file on free loopback ports, written in `dir` and read
/// back from there (so it has a directory, as `cluster up`'s nodes do).
fn cluster_in(dir: &Path) -> Cluster {
    let file =
        local::cluster_file(3, "ricart-agrawala", "bully", None, Timeouts::default()).unwrap();
    let path = local::write_cluster(dir, &file).unwrap();
    Cluster::load(&path).unwrap()
}

/// Asks node 0 for its status over `stream` as a client; the node's id in the answer.
async fn status_over(cluster: &Cluster, stream: transport::Stream) -> (Via, NodeId) {
    let via = stream.via();
    let (mut r, mut w) = connection::initiate(stream, cluster.client_secret(), Role::Client)
        .await
        .unwrap();
    assert_eq!(w.via(), via);
    w.send(&ClientRequest::Status).await.unwrap();
    match r.recv::<ClientReply>().await.unwrap() {
        Some(ClientReply::Status(s)) => (via, s.id),
        other => panic!("expected a status, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_node_is_reached_over_its_unix_socket_and_still_over_tcp() {
    let dir = temp_dir("both");
    let cluster = cluster_in(&dir);
    let sock = transport::socket_path(&dir, NodeId(0));
    assert_eq!(
        transport::local_socket(&cluster, NodeId(0)).as_deref(),
        Some(sock.as_path())
    );
    let (stop, task) = start_node(cluster.clone()).await;
    assert!(
        sock.exists(),
        "{} is made when the node listens",
        sock.display()
    );

    let addr = cluster.addr_of(NodeId(0)).unwrap();
    let s = transport::dial(&cluster, NodeId(0), addr, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status_over(&cluster, s).await, (Via::Unix, NodeId(0)));

    // TCP keeps working beside it (clients on other machines, or with another copy of the file).
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert_eq!(status_over(&cluster, s.into()).await, (Via::Tcp, NodeId(0)));

    // The lock client and the status client pick the socket too.
    let mut c = distsync_net::client::Client::connect(&cluster, NodeId(0))
        .await
        .unwrap();
    c.send(&ClientRequest::Ping).await.unwrap();
    assert_eq!(c.recv().await.unwrap(), ClientReply::Pong);

    stop.send(()).unwrap();
    task.join().await;
    assert!(!sock.exists(), "the node removes its socket when it stops");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_cluster_not_read_from_a_directory_or_on_other_machines_uses_tcp() {
    // Text only (no directory for sockets): TCP.
    let file = local::cluster_file(3, "central", "bully", None, Timeouts::default()).unwrap();
    let text = toml::to_string(&file).unwrap();
    let cluster = Cluster::from_toml(&text, "<text>").unwrap();
    assert_eq!(transport::local_socket(&cluster, NodeId(0)), None);

    // Read from a directory, but the nodes' addresses are not loopback addresses: they may run
    // on other machines, so TCP.
    let dir = temp_dir("remote");
    let addrs: Vec<String> = (1..=3).map(|i| format!("10.9.8.{i}:7000")).collect();
    let file = local::cluster_file_for(&addrs, "central", "bully", Timeouts::default());
    let path = local::write_cluster(&dir, &file).unwrap();
    let cluster = Cluster::load(&path).unwrap();
    for id in 0..3 {
        assert_eq!(transport::local_socket(&cluster, NodeId(id)), None);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_node_without_its_socket_is_reached_over_tcp() {
    let dir = temp_dir("nosock");
    let cluster = cluster_in(&dir);
    // Something that is not a socket sits where node 0's socket goes: the node says so and
    // serves over TCP only, and leaves the file alone.
    let sock = transport::socket_path(&dir, NodeId(0));
    std::fs::write(&sock, b"not a socket").unwrap();
    let (stop, task) = start_node(cluster.clone()).await;
    let addr = cluster.addr_of(NodeId(0)).unwrap();
    let s = transport::dial(&cluster, NodeId(0), addr, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status_over(&cluster, s).await, (Via::Tcp, NodeId(0)));
    stop.send(()).unwrap();
    task.join().await;
    assert_eq!(std::fs::read(&sock).unwrap(), b"not a socket");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unusable_socket_path_is_refused_naming_it() {
    let dir = temp_dir("refuse");
    std::fs::create_dir_all(&dir).unwrap();
    // Too long for a Unix socket.
    let long = dir.join("x".repeat(120));
    let e = transport::listen_unix(&long).unwrap_err();
    assert!(
        e.contains(&long.display().to_string()) && e.contains("longer than a Unix socket path"),
        "{e}"
    );
    // A file that is not a socket: refused, and not removed.
    let file = dir.join("node-0.sock");
    std::fs::write(&file, b"data").unwrap();
    let e = transport::listen_unix(&file).unwrap_err();
    assert!(
        e.contains(&file.display().to_string()) && e.contains("is not a socket"),
        "{e}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_stale_socket_left_by_a_crashed_node_is_replaced() {
    let dir = temp_dir("stale");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("node-0.sock");
    // A listener that goes away without removing its file, as a killed node's does.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    assert!(tokio::net::UnixStream::connect(&path).await.is_err());
    let l = transport::listen_unix(&path).unwrap();
    let (a, b) = tokio::join!(l.accept(), tokio::net::UnixStream::connect(&path));
    a.unwrap();
    b.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pipe `cluster up` waits on: each node started says once that it listens; one that exits
/// without saying so ends the wait as soon as every other has (the pipe closes) instead of
/// leaving it to the deadline.
#[test]
fn started_nodes_report_on_the_ready_pipe_and_one_that_dies_is_not_waited_for() {
    let dir = temp_dir("ready");
    let cluster = cluster_in(&dir);
    drop(cluster);
    // A stand-in for the binary: `node --cluster FILE --id N`; node 1 exits without a word.
    let exe = dir.join("fake-node");
    std::fs::write(
        &exe,
        // bash: dash cannot write to a descriptor above 9, and the pipe's number depends on what
        // the other tests of this binary hold open at that moment.
        "#!/bin/bash\nif [ \"$5\" != 1 ]; then echo \"$5\" >&\"$DISTSYNC_READY_FD\"; fi\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o700)).unwrap();
    let ids = [NodeId(0), NodeId(1), NodeId(2)];
    let (started, mut pipe) = local::start_nodes_ready(&dir, &exe, &ids, "warn").unwrap();
    assert_eq!(started.len(), 3);
    // A deadline far away: the wait ends because the pipe closes, not because time runs out.
    let until = std::time::Instant::now() + Duration::from_secs(600);
    let mut seen = pipe.wait(&ids, until);
    seen.sort();
    assert_eq!(seen, vec![NodeId(0), NodeId(2)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
