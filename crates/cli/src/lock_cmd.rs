//! `distsync lock`: take a distributed lock, run a command while holding it, release it; the
//! flags follow flock(1) where they can.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client::{self, ClientError, RunOptions};
use distsync_net::Cluster;
use std::path::PathBuf;
use std::time::Duration;

/// Exit status when the lock was lost while the command ran (see docs/net.md).
pub const EXIT_LOST: u8 = 123;
/// Default exit status when the lock was not acquired in time (`-w`, `-n`); `-E` changes it.
pub const EXIT_CONFLICT: u8 = 124;
/// Exit status when the lock service failed (no node reachable, request refused).
pub const EXIT_SERVICE: u8 = 125;
/// Exit status when the command was found but could not be run.
pub const EXIT_CANNOT_RUN: u8 = 126;
/// Exit status when the command was not found.
pub const EXIT_NOT_FOUND: u8 = 127;

/// The cluster file: the flag, else `$DISTSYNC_CLUSTER`, else the file `cluster up` writes by
/// default (`distsync-cluster/cluster.toml`).
pub fn cluster_path(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("DISTSYNC_CLUSTER").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("distsync-cluster").join("cluster.toml"))
}

/// Arguments of `distsync lock`.
#[derive(clap::Args)]
#[command(after_help = "\
The command sees DISTSYNC_FENCING_TOKEN (a number larger than every token granted before, also
across failovers and restarts of every node: give it to the resource you protect so it can
refuse a stale holder), DISTSYNC_HOLDER (the node holding the lock for you) and DISTSYNC_LOCK.

The lock is released only after the command has exited, whatever its status. SIGTERM, SIGINT
and SIGHUP sent to `lock` are passed on to the command's process group; `lock` then waits for it
and releases. If `lock` is killed with -9, the command is killed too (and, through a watchdog,
its whole process group); the lock is released when the node sees the connection drop.

While the command runs, `lock` keeps the lock alive with a ping every heartbeat; a node that
hears nothing for 3 x heartbeat_timeout (a paused or cut-off client) releases it. If the lock is
lost that way or revoked by a failover, `lock` says so at once and at the end, naming the lock
and the token reached since, and exits 123 whatever the command's status.

Exit status: the command's (128+N if signal N ended it); 123 lock lost while the command ran;
124 not acquired within -w / -n (change with -E); 125 the lock service failed (no node
reachable, request refused); 126 command not executable; 127 command not found; 2 bad input
(nothing was run).

Examples: distsync lock backup -- ./backup.sh
          DISTSYNC_CLUSTER=/etc/distsync/cluster.toml distsync lock -w 10 deploy -c 'make deploy'")]
pub struct LockArgs {
    /// The cluster file (default: $DISTSYNC_CLUSTER, else distsync-cluster/cluster.toml).
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: Option<PathBuf>,
    /// The node to ask first (default: a random one; others are tried if it is down).
    #[arg(long, value_name = "N")]
    node: Option<u32>,
    /// The lock's name (or give it as --name).
    #[arg(value_name = "NAME")]
    lock_name: Option<String>,
    /// The lock's name (default: "default").
    #[arg(long, value_name = "RESOURCE")]
    name: Option<String>,
    /// Give up if the lock is not acquired within this long ("10s", or seconds as in flock: "10").
    #[arg(short = 'w', long, value_name = "TIME", value_parser = parse_wait)]
    timeout: Option<Duration>,
    /// Do not wait for a lock another client holds: give up after one heartbeat timeout (an
    /// uncontended lock is granted in milliseconds; a distributed lock cannot tell "held"
    /// without asking the others).
    #[arg(short = 'n', long, conflicts_with = "timeout")]
    nonblock: bool,
    /// Exit status when the lock is not acquired in time (-w, -n).
    #[arg(short = 'E', long, value_name = "CODE", default_value_t = EXIT_CONFLICT)]
    conflict_exit_code: u8,
    /// Run this shell command (`sh -c CMD`) instead of the command after `--`.
    #[arg(short = 'c', long = "command", value_name = "CMD")]
    shell: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn parse_wait(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    parse_duration(s).map_err(|e| e.to_string())
}

/// `distsync lock-watchdog` (hidden; started by `lock`).
#[derive(clap::Args)]
pub struct WatchdogArgs {
    /// The command's process group.
    #[arg(long)]
    pgid: i32,
}

/// Runs the watchdog.
pub fn watchdog(args: WatchdogArgs) -> Result<Outcome, InputError> {
    Ok(Outcome::Code(client::watchdog_main(args.pgid) as u8))
}

/// Acquires, runs, releases; the exit code is the command's.
pub fn lock(args: LockArgs) -> Result<Outcome, InputError> {
    let name = match (args.lock_name, args.name) {
        (Some(_), Some(_)) => {
            return Err(InputError(
                "give the lock's name once: as NAME or as --name, not both".into(),
            ))
        }
        (Some(n), None) | (None, Some(n)) => n,
        (None, None) => "default".to_string(),
    };
    let (program, cmd_args) =
        match (args.shell, args.command.as_slice()) {
            (Some(c), []) => ("sh".to_string(), vec!["-c".to_string(), c]),
            (Some(_), _) => {
                return Err(InputError(
                    "give the command once: with -c 'CMD' or after --, not both".into(),
                ))
            }
            (None, [first, rest @ ..]) => (first.clone(), rest.to_vec()),
            (None, []) => return Err(InputError(
                "no command: give it after -- (distsync lock NAME -- CMD ARGS) or with -c 'CMD'"
                    .into(),
            )),
        };
    let path = cluster_path(args.cluster);
    let cluster = Cluster::load(&path)?;
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
    if name.is_empty() || name.len() > distsync_net::wire::MAX_NAME {
        return Err(InputError(format!(
            "NAME: a lock name has 1 to {} bytes",
            distsync_net::wire::MAX_NAME
        )));
    }
    let wait = if args.nonblock {
        Some(cluster.file.timeouts.heartbeat_timeout)
    } else {
        args.timeout
    };
    let rt = distsync_net::runtime()?;
    let opts = RunOptions {
        heartbeat: cluster.file.timeouts.heartbeat,
        watchdog: std::env::current_exe().ok(),
        stop_on_loss: None,
    };
    let result = rt.block_on(async {
        let held = match client::acquire(&cluster, node, &name, wait).await {
            Ok(h) => h,
            Err(e) => return Err(e),
        };
        client::run_locked(held, &program, &cmd_args, opts).await
    });
    match result {
        Ok(outcome) => {
            use std::os::unix::process::ExitStatusExt;
            let code = match (outcome.status.code(), outcome.status.signal()) {
                (Some(c), _) => c,
                (None, Some(sig)) => 128 + sig,
                (None, None) => 1,
            };
            if let Some(lost) = &outcome.lost {
                let since = match lost.since {
                    None => "no node answered to say which token it reached since".to_string(),
                    Some(t) if t > lost.token => format!("the cluster has reached token {t} since"),
                    Some(t) => format!(
                        "no later grant is known to the nodes that answered (highest token: {t})"
                    ),
                };
                eprintln!(
                    "distsync: lock {name:?} was lost while the command ran ({}): its token {} is stale, {since}; the command exited with status {code}; exiting {EXIT_LOST}",
                    lost.why, lost.token
                );
                return Ok(Outcome::Code(EXIT_LOST));
            }
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
            eprintln!("distsync: {e}");
            Ok(Outcome::Code(args.conflict_exit_code))
        }
        Err(e) => {
            eprintln!("distsync: {e}");
            Ok(Outcome::Code(EXIT_SERVICE))
        }
    }
}
