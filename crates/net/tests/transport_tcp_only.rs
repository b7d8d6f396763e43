//! `DISTSYNC_TRANSPORT=tcp` turns the Unix sockets off for the process that reads it: a node
//! does not listen on one, a dialer does not use one. (Its own test binary: the variable is
//! process-wide, so no other test may run beside it.)

mod support;

use distsync_core::NodeId;
use distsync_net::transport::{self, Via};
use distsync_net::{local, Cluster, Timeouts};
use std::time::Duration;
use support::start_node;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_distsync_transport_tcp_nodes_and_dialers_use_tcp_only() {
    // Process-wide: this binary holds no other test.
    std::env::set_var("DISTSYNC_TRANSPORT", "tcp");
    // A directory not made yet (write_cluster makes it), inside one removed when the test ends.
    let tmp = tempfile::TempDir::with_prefix("ds-tr-tcp-").unwrap();
    let dir = tmp.path().join("c");
    let file =
        local::cluster_file(3, "ricart-agrawala", "bully", None, Timeouts::default()).unwrap();
    let path = local::write_cluster(&dir, &file).unwrap();
    let cluster = Cluster::load(&path).unwrap();
    assert_eq!(transport::local_socket(&cluster, NodeId(0)), None);

    let (stop, node) = start_node(cluster.clone()).await;
    assert!(!transport::socket_path(&dir, NodeId(0)).exists());
    let addr = cluster.addr_of(NodeId(0)).unwrap();
    let s = transport::dial(&cluster, NodeId(0), addr, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(s.via(), Via::Tcp);
    stop.send(()).unwrap();
    node.join().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
