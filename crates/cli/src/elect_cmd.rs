//! `distsync elect NAME -- CMD`: campaign to lead NAME, run the command while leading, stop it
//! when leadership is lost (like `etcdctl elect` with a command).
//!
//! Leadership of NAME is the lock `elect/NAME` of the cluster: candidates queue for it in the
//! order of the mutual-exclusion algorithm, the one holding it leads, and its fencing token
//! numbers the term (larger for every later leader, across failovers and restarts). Unlike
//! `lock`, which lets its command run on when the lock is lost, `elect` stops it: SIGTERM to the
//! command's process group, then SIGKILL after the grace period, and exits 123.

use crate::lock_cmd::{
    cluster_path, parse_wait, EXIT_CANNOT_RUN, EXIT_CONFLICT, EXIT_LOST, EXIT_NOT_FOUND,
    EXIT_SERVICE,
};
use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client::{self, ClientError, RunOptions};
use distsync_net::Cluster;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync elect`.
#[derive(clap::Args)]
#[command(after_help = "\
Leadership of NAME is the cluster lock `elect/NAME`: the candidate holding it leads, and its
fencing token (DISTSYNC_FENCING_TOKEN in the command's environment) numbers the term. When
leadership is lost (the node revoked the lock after a failover, or this candidate was silent for
3 x heartbeat_timeout), the command gets SIGTERM, then SIGKILL after --grace, and `elect` exits
123. Exit status otherwise as for `distsync lock`: the command's; 124 not elected within -w;
125 service failure; 127 command not found; 2 bad input.

Example: distsync elect scheduler -- ./run-scheduler")]
pub struct ElectArgs {
    /// The election's name.
    #[arg(value_name = "NAME")]
    name: String,
    /// The cluster file (default: $DISTSYNC_CLUSTER, else distsync-cluster/cluster.toml).
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: Option<PathBuf>,
    /// The node to campaign through first.
    #[arg(long, value_name = "N")]
    node: Option<u32>,
    /// Give up if not elected within this long ("10s", or seconds as `lock -w` takes them: "10").
    #[arg(short = 'w', long, value_name = "TIME", value_parser = parse_wait)]
    timeout: Option<Duration>,
    /// After SIGTERM on loss of leadership, SIGKILL after this long.
    #[arg(long, default_value = "2s", value_parser = parse_duration_arg)]
    grace: Duration,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// Campaigns, runs the command while leading, stops it on loss.
pub fn elect(args: ElectArgs) -> Result<Outcome, InputError> {
    let lock = format!("elect/{}", args.name);
    if args.name.is_empty() || lock.len() > distsync_net::wire::MAX_NAME {
        return Err(InputError(format!(
            "NAME: an election name has 1 to {} bytes",
            distsync_net::wire::MAX_NAME - "elect/".len()
        )));
    }
    let cluster = Cluster::load(&cluster_path(args.cluster))?;
    let node = args.node.map(NodeId);
    if let Some(n) = node {
        if !cluster.peers.contains(n) {
            return Err(InputError(format!(
                "--node {n}: {} has no node with that id",
                cluster.origin
            )));
        }
    }
    let rt = distsync_net::runtime()?;
    let opts = RunOptions {
        heartbeat: cluster.file.timeouts.heartbeat,
        watchdog: true,
        stop_on_loss: Some(args.grace),
        lapse_grace: args.grace,
    };
    let result = rt.block_on(async {
        let held = client::acquire(&cluster, node, &lock, args.timeout).await?;
        eprintln!(
            "distsync: elected: {} leads {:?} (term token {}, through node {})",
            std::process::id(),
            args.name,
            held.token,
            held.holder
        );
        client::run_locked(held, &args.command[0], &args.command[1..], opts).await
    });
    match result {
        Ok(outcome) => {
            if let Some(lost) = &outcome.lost {
                eprintln!(
                    "distsync: leadership of {:?} lost ({}); the command was stopped; term token {} is stale{}",
                    args.name,
                    lost.why,
                    lost.token,
                    lost.since
                        .filter(|&t| t > lost.token)
                        .map(|t| format!(", the cluster has reached token {t} since"))
                        .unwrap_or_default()
                );
                return Ok(Outcome::Code(EXIT_LOST));
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
            let not_found = e.contains("No such file") || e.contains("not found");
            Ok(Outcome::Code(if not_found {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_RUN
            }))
        }
        Err(ClientError::Unavailable(e)) if e.contains("not acquired within") => {
            eprintln!("distsync: not elected: {e}");
            Ok(Outcome::Code(EXIT_CONFLICT))
        }
        Err(e) => {
            eprintln!("distsync: {e}");
            Ok(Outcome::Code(EXIT_SERVICE))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ElectArgs,
    }

    /// `-w` reads as `lock -w` does: plain seconds as in flock, or a duration.
    #[test]
    fn wait_takes_plain_seconds_as_lock_does() {
        let parse = |w: &str| {
            Cli::try_parse_from(["elect", "-w", w, "job", "--", "true"])
                .map(|c| c.args.timeout)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("30"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(parse("1.5"), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(parse("250ms"), Ok(Some(Duration::from_millis(250))));
        assert!(parse("soon").unwrap_err().contains("soon"));
    }
}
