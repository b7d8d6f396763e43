//! `distsync lock`: take a distributed lock, run a command while holding it, release it.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client::{self, ClientError};
use distsync_net::Cluster;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync lock`.
#[derive(clap::Args)]
#[command(after_help = "\
The command sees DISTSYNC_FENCING_TOKEN (a number larger than every token granted before, also
across failovers: give it to the resource you protect so it can refuse a stale holder),
DISTSYNC_HOLDER (the node holding the lock for you) and DISTSYNC_LOCK (the lock's name).
The lock is released when the command exits, whatever its status; if this process dies, the node
releases it when the connection drops. Exit status: the command's (128+N if a signal N ended it);
1 if the lock could not be taken; 2 for bad input. If the lock is lost while the command runs
(revoked after a failover, or the node crashed) a warning is printed and the command runs on:
its fencing token is then stale.

Example: distsync lock --cluster c.toml --name backup -- ./backup.sh")]
pub struct LockArgs {
    /// The cluster file (TOML).
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: PathBuf,
    /// The node to ask first (default: a random one; others are tried if it is down).
    #[arg(long, value_name = "N")]
    node: Option<u32>,
    /// The lock's name.
    #[arg(long, value_name = "RESOURCE", default_value = "default")]
    name: String,
    /// Give up if the lock is not acquired within this long (e.g. "10s"; default: wait).
    #[arg(long, value_parser = parse_duration_arg)]
    timeout: Option<Duration>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// Acquires, runs, releases; the exit code is the command's.
pub fn lock(args: LockArgs) -> Result<Outcome, InputError> {
    let cluster = Cluster::load(&args.cluster)?;
    let node = args.node.map(NodeId);
    if let Some(n) = node {
        if !cluster.peers.contains(n) {
            return Err(InputError(format!(
                "--node {n}: {} has no node with that id (ids: {:?})",
                cluster.origin,
                cluster.peers.ids()
            )));
        }
    }
    if args.name.is_empty() || args.name.len() > distsync_net::wire::MAX_NAME {
        return Err(InputError(format!(
            "--name: a lock name has 1 to {} bytes",
            distsync_net::wire::MAX_NAME
        )));
    }
    let rt = distsync_net::runtime()?;
    let heartbeat = cluster.file.timeouts.heartbeat;
    let result = rt.block_on(async {
        let held = client::acquire(&cluster, node, &args.name, args.timeout).await?;
        client::run_locked(held, &args.command[0], &args.command[1..], heartbeat).await
    });
    match result {
        Ok(outcome) => {
            if let Some(why) = &outcome.lost {
                eprintln!(
                    "distsync: warning: lock {:?} was lost while the command ran ({why}); its fencing token is stale",
                    args.name
                );
            }
            use std::os::unix::process::ExitStatusExt;
            let code = match (outcome.status.code(), outcome.status.signal()) {
                (Some(c), _) => c,
                (None, Some(sig)) => 128 + sig,
                (None, None) => 1,
            };
            Ok(Outcome::Code(u8::try_from(code).unwrap_or(1)))
        }
        Err(ClientError::Spawn(e)) => {
            eprintln!("distsync: {e}");
            Ok(Outcome::Code(127))
        }
        Err(e) => {
            eprintln!("distsync: {e}");
            Ok(Outcome::Code(1))
        }
    }
}
