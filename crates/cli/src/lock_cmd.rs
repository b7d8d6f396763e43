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
and releases. If `lock` is killed with -9, the command is killed too (and, through a forked
watchdog, its whole process group); the lock is released when the node sees the connection drop.

While the command runs, `lock` keeps the lock alive with a renewal every heartbeat; a node that
hears nothing for 3 x heartbeat_timeout (a paused or cut-off client) releases it. If the lock is
lost that way or revoked by a failover, `lock` says so at once and at the end, naming the lock
and the token reached since, and exits 123 whatever the command's status. `lock` also keeps its
own lease clock, counted from when it sent its last renewal the node answered: when that lapses
(the node is paused or cut off) it stops the command (SIGTERM, SIGKILL after one heartbeat)
before anyone else can be granted the lock, and exits 123.

Exit status: the command's (128+N if signal N ended it); 123 lock lost while the command ran;
124 not acquired within -w / -n (change with -E); 125 the lock service failed (no node
reachable, request refused); 126 command not executable; 127 command not found; 2 bad input
(nothing was run).

With --stdin, `lock` keeps one connection and reads requests from stdin, answering each with
one line on stdout: `lock NAME [TIME]` -> `granted NAME TOKEN HOLDER` or `timeout NAME`;
`trylock NAME` -> `granted ...` or `busy NAME`; `unlock NAME` -> `released NAME` or `lost NAME:
WHY` (the lock was lost while held); a failed request -> `error NAME: WHY`, a bad line -> `error:
line N: WHY`. A held lock that is lost (revoked, the connection failed, the lease clock lapsed)
is reported at once, unasked: `lost NAME: WHY`. At end of input every lock still held is released and `lock` exits 0.

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
    /// Keep one connection and serve lock requests read from stdin, one per line, answering
    /// each on stdout (for scripts taking many locks; see docs/net.md "lock --stdin"):
    /// `lock NAME [TIME]`, `trylock NAME`, `unlock NAME`.
    #[arg(long, conflicts_with_all = ["lock_name", "name", "timeout", "nonblock", "shell", "command"])]
    stdin: bool,
}

/// A wait as `lock -w` and `elect -w` take it: a duration ("10s") or seconds as in flock ("10").
pub(crate) fn parse_wait(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    parse_duration(s).map_err(|e| e.to_string())
}

/// Acquires, runs, releases; the exit code is the command's.
pub fn lock(args: LockArgs) -> Result<Outcome, InputError> {
    if args.stdin {
        return serve_stdin(cluster_path(args.cluster), args.node.map(NodeId));
    }
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
        watchdog: true,
        stop_on_loss: None,
        // The client's own lease lapsed: the lock may go to someone else any moment now.
        lapse_grace: cluster.file.timeouts.heartbeat,
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

/// One request line of `lock --stdin`.
#[derive(Debug, PartialEq)]
enum Line {
    Lock(String, Option<Duration>),
    TryLock(String),
    Unlock(String),
}

fn parse_line(line: &str) -> Result<Option<Line>, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let name = |w: Option<&&str>| -> Result<String, String> {
        match w {
            Some(n) if n.len() <= distsync_net::wire::MAX_NAME => Ok(n.to_string()),
            Some(_) => Err(format!(
                "a lock name has 1 to {} bytes",
                distsync_net::wire::MAX_NAME
            )),
            None => Err("expected a lock name".into()),
        }
    };
    match words.as_slice() {
        [] => Ok(None),
        ["lock", rest @ ..] if rest.len() <= 2 => {
            let wait = match rest.get(1) {
                Some(t) => Some(parse_wait(t).map_err(|e| format!("TIME {t:?}: {e}"))?),
                None => None,
            };
            Ok(Some(Line::Lock(name(rest.first())?, wait)))
        }
        ["trylock", rest @ ..] if rest.len() <= 1 => Ok(Some(Line::TryLock(name(rest.first())?))),
        ["unlock", rest @ ..] if rest.len() <= 1 => Ok(Some(Line::Unlock(name(rest.first())?))),
        [w @ ("lock" | "trylock" | "unlock"), ..] => Err(format!("too many words after {w:?}")),
        [w, ..] => Err(format!(
            "unknown command {w:?} (expected lock NAME [TIME], trylock NAME or unlock NAME)"
        )),
    }
}

/// `distsync lock --stdin`: one connection, many locks, one answer line per request line.
fn serve_stdin(path: PathBuf, node: Option<NodeId>) -> Result<Outcome, InputError> {
    use distsync_net::lock_client::{Guard, LockClient, LockError};
    use std::collections::HashMap;
    use std::io::{BufRead, Write};
    let cluster = Cluster::load(&path)?;
    if let Some(n) = node {
        if !cluster.peers.contains(n) {
            return Err(InputError(format!(
                "--node {n}: {} has no node with that id (ids: {:?})",
                cluster.origin,
                cluster.peers.ids()
            )));
        }
    }
    let rt = distsync_net::runtime()?;
    let r: Result<(), String> = rt.block_on(async {
        let mut client = match node {
            Some(n) => LockClient::connect_to(&cluster, n).await,
            None => LockClient::connect(&cluster).await,
        }
        .map_err(|e| e.to_string())?;
        let mut held: HashMap<String, Guard> = HashMap::new();
        // A lock lost while held (revoked, the connection failed, or this client's own lease
        // clock lapsed) is reported at once, on a line of its own: `lost NAME: WHY`.
        let mut watch = client.loss_watch();
        let every = (cluster.file.timeouts.heartbeat / 4).max(Duration::from_millis(10));
        let watcher = distsync_net::tokio::spawn(async move {
            let mut tick = distsync_net::tokio::time::interval(every);
            loop {
                tick.tick().await;
                for (name, why) in watch.newly_lost() {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "lost {name}: {why}").and_then(|()| out.flush());
                }
            }
        });
        let _stop_watcher = AbortOnDrop(watcher);
        // Reading stdin blocks this thread only: it runs nothing but this loop (the connection's
        // keep-alive task runs on the runtime's workers).
        let stdin = std::io::stdin();
        let mut number = 0u64;
        for line in stdin.lock().lines() {
            let line = line.map_err(|e| format!("stdin: {e}"))?;
            number += 1;
            let granted = |g: &Guard| format!("granted {} {} {}", g.name(), g.token(), g.holder());
            let answer = match parse_line(&line) {
                Ok(None) => continue,
                Err(e) => format!("error: line {number}: {e}"),
                Ok(Some(Line::Unlock(n))) => match held.remove(&n) {
                    None => format!("error {n}: not held"),
                    Some(g) => match g.lost() {
                        Some(why) => format!("lost {n}: {why}"),
                        None => match g.release().await {
                            Ok(()) => format!("released {n}"),
                            Err(e) => format!("lost {n}: {e}"),
                        },
                    },
                },
                Ok(Some(Line::Lock(n, _) | Line::TryLock(n))) if held.contains_key(&n) => {
                    format!("error {n}: already held through this connection")
                }
                Ok(Some(Line::Lock(n, wait))) => {
                    let r = match wait {
                        Some(w) => client.lock_timeout(&n, w).await,
                        None => client.lock(&n).await,
                    };
                    match r {
                        Ok(g) => {
                            let a = granted(&g);
                            held.insert(n, g);
                            a
                        }
                        Err(LockError::Timeout { .. }) => format!("timeout {n}"),
                        Err(e) => format!("error {n}: {e}"),
                    }
                }
                Ok(Some(Line::TryLock(n))) => match client.try_lock(&n).await {
                    Ok(Some(g)) => {
                        let a = granted(&g);
                        held.insert(n, g);
                        a
                    }
                    Ok(None) => format!("busy {n}"),
                    Err(e) => format!("error {n}: {e}"),
                },
            };
            let mut out = std::io::stdout().lock();
            writeln!(out, "{answer}")
                .and_then(|()| out.flush())
                .map_err(|e| format!("stdout: {e}"))?;
        }
        for (_, g) in held.drain() {
            let _ = g.release().await;
        }
        Ok(())
    });
    match r {
        Ok(()) => Ok(Outcome::Code(0)),
        Err(e) => {
            eprintln!("distsync: lock --stdin: {e}");
            Ok(Outcome::Code(EXIT_SERVICE))
        }
    }
}

/// A task aborted when dropped.
struct AbortOnDrop(distsync_net::tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_lines_parse_or_say_why_not() {
        assert_eq!(parse_line("lock a"), Ok(Some(Line::Lock("a".into(), None))));
        assert_eq!(
            parse_line("  lock a 1.5 "),
            Ok(Some(Line::Lock(
                "a".into(),
                Some(Duration::from_millis(1500))
            )))
        );
        assert_eq!(parse_line("trylock b"), Ok(Some(Line::TryLock("b".into()))));
        assert_eq!(parse_line("unlock b"), Ok(Some(Line::Unlock("b".into()))));
        assert_eq!(parse_line(""), Ok(None));
        assert!(parse_line("lock")
            .unwrap_err()
            .contains("expected a lock name"));
        assert!(parse_line("unlock a b")
            .unwrap_err()
            .contains("too many words"));
        assert!(parse_line("lock a soon")
            .unwrap_err()
            .contains("TIME \"soon\""));
        assert!(parse_line("grab a")
            .unwrap_err()
            .contains("unknown command \"grab\""));
        assert!(parse_line(&format!("lock {}", "x".repeat(129)))
            .unwrap_err()
            .contains("1 to 128 bytes"));
    }
}
