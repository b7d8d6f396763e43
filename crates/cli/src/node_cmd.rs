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
    if result.is_ok() && distsync_net::node::restart_requested() {
        // `cluster restart`: the node has stopped and closed its sockets; the process executes
        // itself again in place (same pid, same arguments, the binary now at its path).
        distsync_net::systemd::notify_reloading(&format!("node {id} restarting"));
        rt.shutdown_timeout(std::time::Duration::from_secs(2));
        return reexec();
    }
    match result {
        Ok(()) => {
            distsync_net::systemd::notify_stopping(&format!("node {id} stopped"));
            Ok(Outcome::Ok)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Outcome::Code(1))
        }
    }
}

/// Replaces this process with a new run of the same command line; returns only on failure.
fn reexec() -> Result<Outcome, InputError> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    // A binary replaced on disk (an upgrade) reads as "PATH (deleted)": run the one now there.
    let exe = exe
        .to_str()
        .and_then(|s| s.strip_suffix(" (deleted)"))
        .map(PathBuf::from)
        .unwrap_or(exe);
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(std::env::args_os().skip(1))
        // What `cluster up` handed the first run (its ready pipe, its held sockets) is gone.
        .env_remove(distsync_net::local::READY_FD_ENV)
        .env_remove(distsync_net::local::LISTEN_FDS_ENV)
        .env_remove(distsync_net::local::LISTEN_UNIX_FD_ENV);
    distsync_net::systemd::prepare_reexec(&mut cmd)?;
    let e = cmd.exec();
    eprintln!("error: cannot restart {}: {e}", exe.display());
    Ok(Outcome::Code(1))
}
