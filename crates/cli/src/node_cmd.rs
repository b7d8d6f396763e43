//! `distsync node`: run one node of a cluster until SIGTERM or ctrl-c.

use crate::{InputError, Outcome};
use distsync_core::NodeId;
use distsync_net::Cluster;
use std::path::PathBuf;

/// Arguments of `distsync node`.
#[derive(clap::Args)]
pub struct NodeArgs {
    /// The cluster file (TOML): nodes, algorithms, timeouts, secret.
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: PathBuf,
    /// This node's id in the cluster file.
    #[arg(long, value_name = "N")]
    id: u32,
}

/// Runs the node; logs go to stderr (`RUST_LOG` filters them, default `info`).
pub fn node(args: NodeArgs) -> Result<Outcome, InputError> {
    let cluster = Cluster::load(&args.cluster)?;
    cluster.node_key("a node")?;
    let id = NodeId(args.id);
    if !cluster.peers.contains(id) {
        return Err(InputError(format!(
            "{}: no [[node]] has id {id} (ids: {:?})",
            cluster.origin,
            cluster.peers.ids()
        )));
    }
    distsync_net::init_logging();
    // Started by `cluster up`: say on its pipe when the node listens.
    let ready = distsync_net::local::ready_notifier();
    let rt = distsync_net::node_runtime()?;
    // With a [clock] table, the node's virtual clock runs beside it (distsync_time::cluster).
    let clock = cluster
        .file
        .clock
        .is_some()
        .then(|| distsync_time::cluster::run_node(cluster.clone(), id));
    let result = rt.block_on(async move {
        let at = cluster.file.nodes[cluster.peers.position(id).unwrap_or(0)]
            .addr
            .clone();
        let listening = move || {
            if let Some(mut pipe) = ready {
                use std::io::Write;
                let _ = writeln!(pipe, "{id}");
            }
            // Under systemd (Type=notify): the node is up.
            distsync_net::systemd::notify_ready(&format!("node {id} serving at {at}"));
        };
        let shutdown = async move {
            distsync_net::shutdown::signalled().await;
            distsync_net::systemd::notify_stopping(&format!("node {id} shutting down"));
        };
        let node = distsync_net::node::run_notify(cluster, id, shutdown, listening);
        match clock {
            None => node.await.map_err(|e| e.to_string()),
            Some(clock) => distsync_net::tokio::select! {
                r = node => r.map_err(|e| e.to_string()),
                r = clock => Err(format!("clock: {}", r.err().map_or("stopped".into(), |e| e.to_string()))),
            },
        }
    });
    match result {
        Ok(()) => Ok(Outcome::Ok),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Outcome::Code(1))
        }
    }
}
