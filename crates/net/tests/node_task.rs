//! A node's loop runs as a task of its runtime (`node::serve`, spawned by `run_notify`), beside
//! the server task that accepts its connections. A node future dropped before it returns (the
//! CLI drops it when the node's clock stops, say) takes both tasks down with it, as when the
//! node's process exits: its address stops accepting, and a client connected before no longer
//! gets answers (its connection closes).

use distsync_core::NodeId;
use distsync_net::auth::Role;
use distsync_net::wire::{ClientReply, ClientRequest};
use distsync_net::{connection, local, transport, Cluster, Timeouts};
use std::time::Duration;

#[tokio::test]
async fn a_dropped_node_future_stops_its_loop_and_server() {
    let file = local::cluster_file(2, "central", "bully", None, Timeouts::default()).unwrap();
    let cluster = Cluster::check(file, "test").unwrap();
    let addr = cluster.addrs[0];
    let (up_tx, up) = tokio::sync::oneshot::channel::<()>();
    let mut node = Box::pin(distsync_net::node::run_notify(
        cluster.clone(),
        NodeId(0),
        std::future::pending::<()>(),
        move || {
            let _ = up_tx.send(());
        },
    ));
    tokio::select! {
        r = &mut node => panic!("the node stopped by itself: {r:?}"),
        _ = up => {}
    }
    // A client connects and is answered (by the loop, a task of its own: the node's future is
    // not polled here).
    let stream = transport::dial(&cluster, NodeId(0), addr, Duration::from_secs(10))
        .await
        .unwrap();
    let (mut r, mut w) = connection::initiate(stream, cluster.client_secret(), Role::Client)
        .await
        .unwrap();
    w.send(&ClientRequest::Ping).await.unwrap();
    assert_eq!(
        r.recv::<ClientReply>().await.unwrap(),
        Some(ClientReply::Pong)
    );

    drop(node);
    // The loop is gone: the client's next request is not answered, its connection closes.
    let _ = w.send(&ClientRequest::Ping).await;
    match r.recv::<ClientReply>().await {
        Ok(None) | Err(_) => {}
        Ok(Some(reply)) => panic!("the dropped node's loop still answers: {reply:?}"),
    }
    // The server is gone: the address stops accepting once the runtime has run the aborted
    // task (a bounded number of turns).
    let mut refused = false;
    for _ in 0..1000 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        refused,
        "{addr} still accepts after the node's future was dropped: its server runs on"
    );
}
