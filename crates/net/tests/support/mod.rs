//! What the transport tests share: node 0 of a cluster on its own thread.

use distsync_core::NodeId;
use distsync_net::Cluster;
use tokio::sync::oneshot;

/// Node 0 of `cluster` running on its own thread (its own runtime, as in a node process) until
/// the returned sender fires; the handle joins that thread.
pub async fn start_node(cluster: Cluster) -> (oneshot::Sender<()>, NodeThread) {
    let (stop, stopped) = oneshot::channel::<()>();
    let (up_tx, up) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = distsync_net::node_runtime().unwrap();
        rt.block_on(distsync_net::node::run_notify(
            cluster,
            NodeId(0),
            async {
                let _ = stopped.await;
            },
            move || {
                let _ = up_tx.send(());
            },
        ))
        .unwrap();
    });
    up.await.expect("the node says it listens");
    (stop, NodeThread(thread))
}

pub struct NodeThread(std::thread::JoinHandle<()>);

impl NodeThread {
    pub async fn join(self) {
        tokio::task::spawn_blocking(move || self.0.join().unwrap())
            .await
            .unwrap();
    }
}
