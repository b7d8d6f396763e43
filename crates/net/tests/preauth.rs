//! Connections that never authenticate are bounded per address: an outsider opening sockets to a
//! node holds at most `MAX_PREAUTH_PER_ADDR` of them at once; the node closes the others at
//! once, and still serves a client that authenticates once the outsider's are gone.

mod support;

use distsync_core::NodeId;
use distsync_net::client::Client;
use distsync_net::{local, Cluster, Timeouts};
use std::time::Duration;
use support::start_node;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// How many of an outsider's silent connections this node is still holding after `wait`: a
/// connection the node closed reads end-of-file (or an error) at once.
async fn still_open(conns: &mut [TcpStream], wait: Duration) -> usize {
    let mut open = 0;
    for c in conns.iter_mut() {
        let mut b = [0u8; 64];
        match tokio::time::timeout(wait, c.read(&mut b)).await {
            Err(_) => open += 1,             // nothing to read: still held
            Ok(Ok(n)) if n > 0 => open += 1, // the node's first handshake bytes
            Ok(_) => {}                      // closed
        }
    }
    open
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outsider_holds_at_most_the_bound_of_unauthenticated_connections() {
    let tmp = tempfile::TempDir::with_prefix("ds-preauth-").unwrap();
    let dir = tmp.path().join("c");
    let file =
        local::cluster_file(1, "ricart-agrawala", "bully", None, Timeouts::default()).unwrap();
    let path = local::write_cluster(&dir, &file).unwrap();
    let cluster = Cluster::load(&path).unwrap();
    let (stop, node) = start_node(cluster.clone()).await;
    let addr = cluster.addr_of(NodeId(0)).unwrap();
    let bound = distsync_net::MAX_PREAUTH_PER_ADDR;
    let mut conns = Vec::new();
    for _ in 0..bound + 16 {
        conns.push(TcpStream::connect(addr).await.unwrap());
    }
    // Let the node accept them all.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (held, extra) = conns.split_at_mut(bound);
    assert_eq!(
        still_open(extra, Duration::from_millis(200)).await,
        0,
        "the connections past the bound are closed at once"
    );
    assert_eq!(still_open(held, Duration::from_millis(20)).await, bound);
    drop(conns);
    // The outsider gone, a client with the key is served.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = Client::connect(&cluster, NodeId(0)).await.unwrap();
    assert_eq!(c.status().await.unwrap().id, NodeId(0));
    stop.send(()).unwrap();
    node.join().await;
}
