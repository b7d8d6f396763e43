//! `distsync cluster up|down|status`: a cluster of node processes on this machine.

use crate::{InputError, Outcome};
use distsync_core::parse_duration;
use distsync_net::local;
use distsync_net::{Cluster, Timeouts};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync cluster`.
#[derive(clap::Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write DIR/cluster.toml (with a random secret) and start N node processes on 127.0.0.1,
    /// with pid files and logs in DIR.
    Up(UpArgs),
    /// Stop the nodes started in DIR (SIGTERM, then SIGKILL after a grace period).
    Down(DirArgs),
    /// Which nodes of DIR run, and what each believes (leader, view).
    Status(DirArgs),
}

#[derive(clap::Args)]
struct UpArgs {
    /// How many nodes (ids 0..N-1).
    #[arg(long, value_name = "N")]
    nodes: u32,
    /// The mutual-exclusion algorithm (see `distsync list`).
    #[arg(long, value_name = "ALGO")]
    mutex: String,
    /// The leader-election algorithm (see `distsync list`).
    #[arg(long, value_name = "ALGO", default_value = "bully")]
    election: String,
    /// Where the cluster file, pid files and logs go.
    #[arg(long, value_name = "DIR", default_value = "distsync-cluster")]
    dir: PathBuf,
    /// The first node's port; node i listens on P+i (default: free ports).
    #[arg(long, value_name = "P")]
    base_port: Option<u16>,
    /// Heartbeat period of the nodes.
    #[arg(long, default_value = "200ms", value_parser = parse_duration_arg)]
    heartbeat: Duration,
    /// Silence after which a node is taken for crashed.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg)]
    heartbeat_timeout: Duration,
    /// The nodes' RUST_LOG.
    #[arg(long, default_value = "info")]
    log: String,
}

#[derive(clap::Args)]
struct DirArgs {
    /// The directory `cluster up` used.
    #[arg(long, value_name = "DIR", default_value = "distsync-cluster")]
    dir: PathBuf,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// Runs one `cluster` action.
pub fn cluster(args: ClusterArgs) -> Result<Outcome, InputError> {
    match args.action {
        Action::Up(a) => up(a),
        Action::Down(a) => down(a),
        Action::Status(a) => status(a),
    }
}

fn up(a: UpArgs) -> Result<Outcome, InputError> {
    if a.nodes == 0 || a.nodes > 1024 {
        return Err(InputError("--nodes: between 1 and 1024".into()));
    }
    if let Ok(running) = local::recorded(&a.dir) {
        if running.iter().any(|&(_, _, alive)| alive) {
            return Err(InputError(format!(
                "{}: a cluster is already running there; `distsync cluster down --dir {}` first",
                a.dir.display(),
                a.dir.display()
            )));
        }
    }
    let timeouts = Timeouts {
        heartbeat: a.heartbeat,
        heartbeat_timeout: a.heartbeat_timeout,
        ..Timeouts::default()
    };
    let file = local::cluster_file(a.nodes, &a.mutex, &a.election, a.base_port, timeouts)?;
    // Check everything (algorithm names, timeouts) before writing or starting anything.
    let cluster = Cluster::check(file.clone(), "cluster up").map_err(|e| {
        let flag = e.field.trim_start_matches("timeouts.").replace('_', "-");
        InputError(format!("--{flag}: {}", e.message))
    })?;
    local::check_layout(&a.dir, cluster.peers.ids())?;
    let path = local::write_cluster(&a.dir, &file)?;
    let exe = std::env::current_exe()?;
    let started = local::start_nodes(&a.dir, &exe, cluster.peers.ids(), &a.log)?;
    println!("cluster file: {}", path.display());
    for ((id, pid), addr) in started.iter().zip(&cluster.addrs) {
        println!(
            "node {id}: pid {pid}, {addr}, log {}",
            local::log_path(&a.dir, *id).display()
        );
    }
    Ok(Outcome::Ok)
}

fn down(a: DirArgs) -> Result<Outcome, InputError> {
    let stopped = local::stop(&a.dir, Duration::from_secs(5))
        .map_err(|e| InputError(format!("{}: {e}", a.dir.display())))?;
    if stopped.is_empty() {
        println!("no node pid files in {}", a.dir.display());
    }
    for (id, pid, how) in stopped {
        println!("node {id} (pid {pid}): {how}");
    }
    Ok(Outcome::Ok)
}

fn status(a: DirArgs) -> Result<Outcome, InputError> {
    let cluster = Cluster::load(&a.dir.join(local::CLUSTER_FILE))?;
    let recorded = local::recorded(&a.dir)?;
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(distsync_net::client::statuses(
        &cluster,
        Duration::from_secs(2),
    ));
    println!(
        "{} nodes, mutex {}, election {}",
        cluster.peers.len(),
        cluster.file.mutex,
        cluster.file.election
    );
    let mut all_up = true;
    for (id, answer) in answers {
        let pid = recorded
            .iter()
            .find(|r| r.0 == id)
            .map(|&(_, pid, alive)| format!("pid {pid}{}", if alive { "" } else { " (exited)" }))
            .unwrap_or_else(|| "no pid file".into());
        match answer {
            Ok(s) => println!(
                "node {id}: {pid}, up; leader {}, view {} {:?}{}, holding {:?}",
                s.leader.map_or("-".into(), |l| l.to_string()),
                s.epoch.map_or("-".into(), crate::leader_cmd::epoch_text),
                s.members,
                if s.open { "" } else { " (changing)" },
                s.holding
            ),
            Err(e) => {
                all_up = false;
                println!("node {id}: {pid}, down: {e}")
            }
        }
    }
    Ok(if all_up {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}
