//! `distsync cluster up|down|status|start|stop|restart|add|remove|snapshot`: a cluster of node
//! processes on this machine, or operated from an admin directory wherever its nodes run.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::local;
use distsync_net::{Cluster, Timeouts};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `distsync cluster`.
#[derive(clap::Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write DIR/cluster.toml (random node and client keys) and DIR/client.toml (the client key
    /// only, for lock users), start N node processes on 127.0.0.1 with pid files and logs in
    /// DIR, and wait until every node answers. In a directory that already has a cluster file,
    /// start its nodes again in place (same keys, addresses and algorithms).
    Up(UpArgs),
    /// Write DIR/cluster.toml and DIR/client.toml for nodes on several machines (one --addr
    /// per node, ids 0.. in that order); then run `distsync node --cluster cluster.toml --id N`
    /// on each machine with a copy of cluster.toml, and give client.toml to lock users.
    Init(InitArgs),
    /// Stop every node: those started in DIR by their pid files (SIGTERM, then SIGKILL after a
    /// grace period); from a directory where `cluster up` started none (DIR holding a copy of
    /// the cluster file: the admin file), every node wherever it runs, by an authenticated
    /// admin request.
    Down(DirArgs),
    /// Which nodes of DIR run, and what each believes (leader, view); with the cluster file
    /// and no pid files, each node's pid and host as it tells an admin request.
    Status(StatusArgs),
    /// Start node N of DIR (not running) and wait until it answers.
    Start(IdArgs),
    /// Stop node N (every node without --id), as `down` does.
    Stop(SomeIdArgs),
    /// Restart node N (every node, one after the other, without --id) and wait until it
    /// answers: a node started in DIR is stopped and started again; any other is asked by an
    /// admin request to execute itself again in place (same pid).
    Restart(SomeIdArgs),
    /// Add a node to the running cluster: the leader commits the new roster with a view change
    /// that a majority of the current nodes accepts (an admin request); then DIR/cluster.toml
    /// and DIR/client.toml list it, and the new node is started (in a directory where `cluster
    /// up` started the nodes) or the command that starts it on its machine is printed.
    Add(AddArgs),
    /// Remove node ID from the running cluster: stop it, then the leader commits the roster
    /// without it (a majority of the current nodes must accept it); DIR's files follow.
    Remove(RemoveArgs),
    /// Replace the node key and the client key of the running cluster, without a restart: every
    /// node is given the new keys (an admin request) and accepts the old ones for --window
    /// more, then only the new; DIR/cluster.toml and DIR/client.toml are rewritten with them.
    Rekey(RekeyArgs),
    /// Take a Chandy-Lamport snapshot of the running cluster: every node's account and store
    /// replica, and the money in transit on every link; print it, check the money is conserved.
    Snapshot(crate::snapshot_cmd::SnapshotArgs),
}

#[derive(clap::Args)]
struct UpArgs {
    /// How many nodes (ids 0..N-1); needed for a new cluster.
    #[arg(long, value_name = "N")]
    nodes: Option<u32>,
    /// The mutual-exclusion algorithm (see `distsync list`); needed for a new cluster.
    #[arg(long, value_name = "ALGO")]
    mutex: Option<String>,
    /// The leader-election algorithm (see `distsync list`; default bully).
    #[arg(long, value_name = "ALGO")]
    election: Option<String>,
    /// Where the cluster file, pid files and logs go (default: the directory of
    /// $DISTSYNC_CLUSTER, else distsync-cluster).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The first node's port; node i listens on P+i (default, or 0: free ports).
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
    /// Keep virtual clocks synchronized among the nodes over UDP with this algorithm
    /// (berkeley, cristian, ntp); see `distsync time status`.
    #[arg(long, value_name = "ALGO")]
    clock: Option<String>,
    /// With --clock: start the nodes' clocks up to this far off (spread from -D to +D).
    #[arg(long, value_name = "DURATION", requires = "clock", value_parser = parse_duration_arg)]
    skew: Option<Duration>,
    /// With --clock: make the nodes' clocks drift up to this many ppm (spread from +X to -X).
    #[arg(long, value_name = "X", requires = "clock", allow_hyphen_values = true)]
    drift_ppm: Option<f64>,
    /// With --clock: how often the clock algorithm synchronizes.
    #[arg(long, value_name = "DURATION", requires = "clock", default_value = "1s", value_parser = parse_duration_arg)]
    sync_interval: Duration,
    /// How long to wait for every node to answer.
    #[arg(long, default_value = "20s", value_parser = parse_duration_arg)]
    wait: Duration,
    /// Let a node hand a released lock straight to its next waiting client, at most N times in
    /// a row, without the algorithm (`[locks] handoff`; 0: every grant goes through it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    handoff: u32,
    /// The multicast algorithm of the replicated store (`[store] multicast`:
    /// total-order-multicast, causal-broadcast or fifo-broadcast; see `distsync store`).
    #[arg(long, value_name = "ALGO", default_value = distsync_net::config::DEFAULT_MULTICAST)]
    multicast: String,
    /// The opening balance of every node's own account, which `cluster snapshot` records
    /// (`[store] balance`).
    #[arg(long, value_name = "AMOUNT", default_value_t = distsync_net::config::DEFAULT_BALANCE)]
    balance: u64,
}

#[derive(clap::Args)]
struct InitArgs {
    /// Node i's address, HOST:PORT (repeat, in id order): an IPv4 address, an IPv6 address in
    /// brackets ([::1]:17200) or a host name (node1.example:17200), which every node and client
    /// resolves when it starts.
    #[arg(long = "addr", value_name = "HOST:PORT", required = true)]
    addrs: Vec<String>,
    /// The mutual-exclusion algorithm (see `distsync list`).
    #[arg(long, value_name = "ALGO")]
    mutex: String,
    /// The leader-election algorithm (see `distsync list`).
    #[arg(long, value_name = "ALGO", default_value = "bully")]
    election: String,
    /// Where the files go (default: the directory of $DISTSYNC_CLUSTER, else distsync-cluster).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Heartbeat period of the nodes.
    #[arg(long, default_value = "200ms", value_parser = parse_duration_arg)]
    heartbeat: Duration,
    /// Silence after which a node is taken for crashed.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg)]
    heartbeat_timeout: Duration,
    /// Let a node hand a released lock straight to its next waiting client, at most N times in
    /// a row, without the algorithm (`[locks] handoff`; 0: every grant goes through it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    handoff: u32,
    /// The multicast algorithm of the replicated store (`[store] multicast`:
    /// total-order-multicast, causal-broadcast or fifo-broadcast; see `distsync store`).
    #[arg(long, value_name = "ALGO", default_value = distsync_net::config::DEFAULT_MULTICAST)]
    multicast: String,
    /// The opening balance of every node's own account, which `cluster snapshot` records
    /// (`[store] balance`).
    #[arg(long, value_name = "AMOUNT", default_value_t = distsync_net::config::DEFAULT_BALANCE)]
    balance: u64,
    /// Keep virtual clocks synchronized among the nodes over UDP with this algorithm
    /// (berkeley, cristian, ntp), on the UDP ports of the nodes' TCP port numbers.
    #[arg(long, value_name = "ALGO")]
    clock: Option<String>,
    /// With --clock: start the nodes' clocks up to this far off (spread from -D to +D).
    #[arg(long, value_name = "DURATION", requires = "clock", value_parser = parse_duration_arg)]
    skew: Option<Duration>,
    /// With --clock: make the nodes' clocks drift up to this many ppm (spread from +X to -X).
    #[arg(long, value_name = "X", requires = "clock", allow_hyphen_values = true)]
    drift_ppm: Option<f64>,
    /// With --clock: how often the clock algorithm synchronizes.
    #[arg(long, value_name = "DURATION", requires = "clock", default_value = "1s", value_parser = parse_duration_arg)]
    sync_interval: Duration,
}

#[derive(clap::Args)]
struct DirArgs {
    /// The directory `cluster up` used (default: the directory of $DISTSYNC_CLUSTER, else
    /// distsync-cluster).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct IdArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The node's id.
    #[arg(long, value_name = "N")]
    id: u32,
    /// The nodes' RUST_LOG (start, restart).
    #[arg(long, default_value = "info")]
    log: String,
}

#[derive(clap::Args)]
struct AddArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The new node's address, HOST:PORT (an IPv4 address, [IPv6] or a host name).
    #[arg(long, value_name = "HOST:PORT")]
    addr: String,
    /// The new node's id (default: one above the highest id of the cluster file).
    #[arg(long, value_name = "N")]
    id: Option<u32>,
    /// The new node's RUST_LOG (a node started here).
    #[arg(long, default_value = "info")]
    log: String,
}

#[derive(clap::Args)]
struct RekeyArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// How long the nodes still accept the old keys (hand out the new files meanwhile).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration_arg)]
    window: Duration,
}

#[derive(clap::Args)]
struct RemoveArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The node to remove.
    #[arg(value_name = "ID")]
    id: u32,
}

#[derive(clap::Args)]
struct SomeIdArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The node's id (default: every node).
    #[arg(long, value_name = "N")]
    id: Option<u32>,
    /// The nodes' RUST_LOG (restart of a node started in DIR).
    #[arg(long, default_value = "info")]
    log: String,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// The cluster directory: the flag, else the directory of $DISTSYNC_CLUSTER, else
/// `distsync-cluster`.
fn dir_of(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| {
        std::env::var_os("DISTSYNC_CLUSTER")
            .map(PathBuf::from)
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .filter(|p| !p.as_os_str().is_empty())
    })
    .unwrap_or_else(|| PathBuf::from("distsync-cluster"))
}

/// Runs one `cluster` action.
pub fn cluster(args: ClusterArgs) -> Result<Outcome, InputError> {
    match args.action {
        Action::Up(a) => up(a),
        Action::Init(a) => init(a),
        Action::Down(a) => down(a),
        Action::Status(a) => status(a),
        Action::Start(a) => start(a),
        Action::Stop(a) => stop(a),
        Action::Restart(a) => restart(a),
        Action::Add(a) => add(a),
        Action::Remove(a) => remove(a),
        Action::Rekey(a) => rekey(a),
        Action::Snapshot(a) => {
            let dir = dir_of(a.dir.clone());
            crate::snapshot_cmd::snapshot(a, dir)
        }
    }
}

fn up(a: UpArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.clone());
    let file_path = dir.join(local::CLUSTER_FILE);
    local::no_symlink(&file_path)?;
    if !file_path.exists() && (a.nodes.is_none() || a.mutex.is_none()) {
        return Err(InputError(format!(
            "{}: no cluster file there yet; a new cluster needs --nodes N and --mutex ALGO",
            dir.display()
        )));
    }
    local::check_dir(&dir)?;
    // Held until `up` ends: a second `up` here refuses, naming this one.
    let _lock =
        local::lock_dir(&dir, "cluster up", false).map_err(|e| InputError(e.to_string()))?;
    if let Ok(running) = local::recorded(&dir) {
        if running.iter().any(|&(_, _, alive)| alive) {
            return Err(InputError(format!(
                "{}: a cluster is already running there; `distsync cluster down --dir {}` first",
                dir.display(),
                dir.display()
            )));
        }
    }
    let existing = file_path.exists();
    // A new cluster's free ports stay bound here until its nodes have them.
    let mut held = None;
    let cluster = if existing {
        // Restart in place: the same keys, addresses and algorithms.
        let cluster = Cluster::load(&file_path)?;
        let differs = a.nodes.is_some_and(|n| n as usize != cluster.peers.len())
            || a.mutex.as_ref().is_some_and(|m| *m != cluster.file.mutex)
            || a.election
                .as_ref()
                .is_some_and(|e| *e != cluster.file.election)
            || a.clock
                .as_ref()
                .is_some_and(|c| cluster.file.clock.as_ref().map(|k| &k.algorithm) != Some(c));
        if differs {
            return Err(InputError(format!(
                "{} already describes a cluster of {} nodes, mutex {}, election {}: `cluster up` \
                 starts it again in place; remove the file to make a different one",
                file_path.display(),
                cluster.peers.len(),
                cluster.file.mutex,
                cluster.file.election
            )));
        }
        // A directory made before per-role keys: its client file held the node key, so a
        // client could open a node's link. Upgraded here: a client key of its own.
        let cluster = if cluster
            .file
            .client_secret
            .as_ref()
            .is_none_or(|c| *c == cluster.file.secret)
        {
            let mut file = cluster.file.clone();
            file.client_secret = Some(local::random_secret());
            local::write_cluster(&dir, &file)?;
            println!(
                "upgraded {} to per-role keys: the clients have a key of their own now; hand the \
                 new {} to the lock users (the old one held the node key and no longer connects)",
                file_path.display(),
                local::CLIENT_FILE
            );
            Cluster::load(&file_path)?
        } else {
            cluster
        };
        // Every node starts at once: every store replica begins empty together, a new store
        // (the nodes' own accounts are kept).
        for &id in cluster.peers.ids() {
            let _ = std::fs::remove_file(distsync_net::node::store_path(&dir, id));
        }
        println!(
            "restarting the cluster of {} in place (same keys and addresses)",
            file_path.display()
        );
        cluster
    } else {
        let (Some(nodes), Some(mutex)) = (a.nodes, a.mutex.clone()) else {
            return Err(InputError(format!(
                "{}: no cluster file there yet; a new cluster needs --nodes N and --mutex ALGO",
                dir.display()
            )));
        };
        if nodes == 0 || nodes > 1024 {
            return Err(InputError("--nodes: between 1 and 1024".into()));
        }
        let timeouts = Timeouts {
            heartbeat: a.heartbeat,
            heartbeat_timeout: a.heartbeat_timeout,
            ..Timeouts::default()
        };
        let election = a.election.clone().unwrap_or_else(|| "bully".into());
        let base_port = a.base_port.filter(|&p| p != 0);
        let (mut file, ports) =
            local::cluster_file_holding(nodes, &mutex, &election, base_port, timeouts)?;
        held = ports;
        file.locks.handoff = a.handoff;
        file.store.multicast = a.multicast.clone();
        file.store.balance = a.balance;
        file.clock = a
            .clock
            .as_ref()
            .map(|algorithm| distsync_net::ClockSettings {
                algorithm: algorithm.clone(),
                skew: a.skew.unwrap_or_default(),
                drift_ppm: a.drift_ppm.unwrap_or(0.0),
                sync_interval: a.sync_interval,
                adjust: "step".into(),
            });
        // Check everything (algorithm names, timeouts) before writing or starting anything.
        let cluster = Cluster::check(file.clone(), "cluster up").map_err(|e| {
            let flag = match e.field.as_str() {
                "clock.algorithm" => "clock".to_string(),
                f => f
                    .trim_start_matches("timeouts.")
                    .trim_start_matches("clock.")
                    .replace('_', "-"),
            };
            InputError(format!("--{flag}: {}", e.message))
        })?;
        local::check_layout(&dir, cluster.peers.ids())?;
        local::write_cluster_unsynced(&dir, &file)?;
        cluster
    };
    local::check_layout(&dir, cluster.peers.ids())?;
    let client_path = local::write_client_file_unsynced(&dir, &cluster.file)?;
    // The files reach the disk while the nodes start (they read them from memory), and `up`
    // returns only after they have: a sync takes 2-70 ms on a busy disk.
    let to_sync = if existing {
        vec![client_path]
    } else {
        vec![file_path.clone(), client_path]
    };
    let syncing = std::thread::spawn(move || local::sync_files(&to_sync));
    let exe = std::env::current_exe()?;
    let (started, mut pipe) =
        local::start_nodes_holding(&dir, &exe, cluster.peers.ids(), &a.log, held)?;
    println!("cluster file: {}", file_path.display());
    println!(
        "client file: {} (give this one to lock users)",
        dir.join(local::CLIENT_FILE).display()
    );
    for ((id, pid), addr) in started.iter().zip(&cluster.addrs) {
        println!(
            "node {id}: pid {pid}, {addr}, log {}",
            local::log_path(&dir, *id).display()
        );
    }
    let ready = wait_ready(
        &dir,
        &file_path,
        cluster.peers.ids(),
        a.wait,
        Some(&mut pipe),
    );
    let synced = syncing
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the sync thread panicked")));
    match ready
        .and_then(|()| synced.map_err(|e| format!("the cluster files did not reach the disk: {e}")))
    {
        Ok(()) => {
            println!("every node answers");
            Ok(Outcome::Ok)
        }
        Err(e) => {
            eprintln!("distsync: cluster up failed: {e}");
            let _ = local::stop(&dir, Duration::from_secs(5));
            Ok(Outcome::Code(1))
        }
    }
}

/// Waits until every node of `ids` answers a status request; fails naming the first node that
/// exited (with its last log line), or the nodes that did not answer within `within`. With the
/// pipe the nodes were started with, first waits for each to say it listens (or for the pipe to
/// end, when one exited), so the status requests need not be repeated while they start.
fn wait_ready(
    dir: &Path,
    file: &Path,
    ids: &[NodeId],
    within: Duration,
    pipe: Option<&mut local::ReadyPipe>,
) -> Result<(), String> {
    let until = Instant::now() + within;
    if let Some(pipe) = pipe {
        pipe.wait(ids, until);
    }
    let cluster = Cluster::load(file).map_err(|e| e.to_string())?;
    let canon = std::fs::canonicalize(file).map_err(|e| e.to_string())?;
    let rt = distsync_net::runtime().map_err(|e| e.to_string())?;
    loop {
        let recorded = local::recorded(dir).map_err(|e| e.to_string())?;
        for &id in ids {
            // The pid files were just written by `start_nodes`, so a pid of ours that has not
            // exited is the node, even in the instant after exec when its command line still
            // reads empty (`is_node_of` alone took such a node for dead).
            let alive = recorded.iter().any(|&(r, pid, _)| {
                r == id && (local::is_node_of(pid, &canon) || !local::has_exited(pid))
            });
            if !alive {
                return Err(format!(
                    "node {id} exited; its log ({}) ends with: {}",
                    local::log_path(dir, id).display(),
                    local::last_log_line(dir, id)
                ));
            }
        }
        let answers = rt.block_on(distsync_net::client::statuses(
            &cluster,
            Duration::from_secs(1),
        ));
        let silent: Vec<NodeId> = answers
            .iter()
            .filter(|(id, r)| ids.contains(id) && r.is_err())
            .map(|(id, _)| *id)
            .collect();
        if silent.is_empty() {
            return Ok(());
        }
        if Instant::now() >= until {
            let first = silent[0];
            return Err(format!(
                "{} {silent:?} did not answer within {within:?}; node {first}'s log ends with: {}",
                if silent.len() == 1 { "node" } else { "nodes" },
                local::last_log_line(dir, first)
            ));
        }
        // Nodes start in milliseconds: ask again soon (a status request costs a connection).
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn init(a: InitArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir);
    let path = dir.join(local::CLUSTER_FILE);
    local::no_symlink(&path)?;
    if path.exists() {
        return Err(InputError(format!(
            "{} exists already; remove it to make a new cluster (its keys would change)",
            path.display()
        )));
    }
    let timeouts = Timeouts {
        heartbeat: a.heartbeat,
        heartbeat_timeout: a.heartbeat_timeout,
        ..Timeouts::default()
    };
    let mut file = local::cluster_file_for(&a.addrs, &a.mutex, &a.election, timeouts);
    file.locks.handoff = a.handoff;
    file.store.multicast = a.multicast.clone();
    file.store.balance = a.balance;
    file.clock = a
        .clock
        .as_ref()
        .map(|algorithm| distsync_net::ClockSettings {
            algorithm: algorithm.clone(),
            skew: a.skew.unwrap_or_default(),
            drift_ppm: a.drift_ppm.unwrap_or(0.0),
            sync_interval: a.sync_interval,
            adjust: "step".into(),
        });
    // The nodes' names need not resolve on the machine that writes the file: every node and
    // client resolves them when it reads it.
    let peers = Cluster::check_offline(&file, "cluster init").map_err(|e| {
        let flag = match e.field.as_str() {
            f if f.starts_with("node") => "addr".to_string(),
            "clock.algorithm" => "clock".to_string(),
            f => f
                .trim_start_matches("timeouts.")
                .trim_start_matches("store.")
                .trim_start_matches("clock.")
                .replace('_', "-"),
        };
        InputError(format!("--{flag}: {}", e.message))
    })?;
    let mut resolved = Vec::with_capacity(file.nodes.len());
    for n in &file.nodes {
        let at = distsync_net::config::resolve(&n.addr);
        if let Err(e) = &at {
            eprintln!(
                "warning: --addr {}: {e} here; every node's machine and every client must resolve it",
                n.addr
            );
        }
        resolved.push(at.ok());
    }
    local::check_layout(&dir, peers.ids())?;
    let path = local::write_cluster(&dir, &file)?;
    let client = local::write_client_file(&dir, &file)?;
    println!(
        "cluster file: {} (node and client keys: copy it to every node's machine)",
        path.display()
    );
    println!(
        "client file: {} (client key only: give it to lock users)",
        client.display()
    );
    for ((id, n), at) in peers.ids().iter().zip(&file.nodes).zip(&resolved) {
        let seen = match at {
            Some(a) if a.to_string() != n.addr => format!(" ({a} here)"),
            _ => String::new(),
        };
        println!(
            "node {id} at {}{seen}: distsync node --cluster cluster.toml --id {id}",
            n.addr
        );
    }
    Ok(Outcome::Ok)
}

fn down(a: DirArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir);
    if !started_here(&dir) {
        return remote_stop(&dir, None);
    }
    // Waits for a `cluster up` at work here, so as to stop every node it starts.
    let _lock = if dir.join(local::CLUSTER_FILE).is_file() {
        Some(local::lock_dir(&dir, "cluster down", true).map_err(|e| InputError(e.to_string()))?)
    } else {
        None
    };
    let stopped = local::stop(&dir, Duration::from_secs(5))
        .map_err(|e| InputError(format!("{}: {e}", dir.display())))?;
    if stopped.is_empty() {
        println!("no node pid files in {}", dir.display());
    }
    for (id, pid, how) in stopped {
        println!("node {id} (pid {pid}): {how}");
    }
    Ok(Outcome::Ok)
}

fn load_dir(dir: &Path) -> Result<Cluster, InputError> {
    Ok(Cluster::load(&dir.join(local::CLUSTER_FILE))?)
}

fn checked_id(cluster: &Cluster, id: u32) -> Result<NodeId, InputError> {
    let id = NodeId(id);
    if !cluster.peers.contains(id) {
        return Err(InputError(format!(
            "--id {id}: {} has no node with that id (ids: {:?})",
            cluster.origin,
            cluster.peers.ids()
        )));
    }
    Ok(id)
}

fn stop_one(dir: &Path, id: u32) -> Result<(), InputError> {
    let cluster = load_dir(dir)?;
    let id = checked_id(&cluster, id)?;
    let stopped = local::stop_ids(dir, Some(&[id]), Duration::from_secs(5))
        .map_err(|e| InputError(format!("{}: {e}", dir.display())))?;
    match stopped.first() {
        Some((_, pid, how)) => println!("node {id} (pid {pid}): {how}"),
        None => println!("node {id}: no pid file"),
    }
    Ok(())
}

fn stop(a: SomeIdArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir);
    match a.id {
        _ if !started_here(&dir) => remote_stop(&dir, a.id),
        Some(id) => {
            stop_one(&dir, id)?;
            Ok(Outcome::Ok)
        }
        None => down(DirArgs { dir: Some(dir) }),
    }
}

fn restart(a: SomeIdArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir.clone());
    if !started_here(&dir) {
        return remote_restart(&dir, a.id);
    }
    let ids: Vec<u32> = match a.id {
        Some(id) => vec![id],
        None => load_dir(&dir)?.peers.ids().iter().map(|i| i.0).collect(),
    };
    // Held until every node named is back, as `up` holds it: a `start`, `restart`, `up` or
    // `down` at the same time in this directory waits (or, `up`, refuses).
    let _lock =
        local::lock_dir(&dir, "cluster restart", true).map_err(|e| InputError(e.to_string()))?;
    for id in ids {
        stop_one(&dir, id)?;
        let one = IdArgs {
            dir: DirArgs {
                dir: Some(dir.clone()),
            },
            id,
            log: a.log.clone(),
        };
        match start_locked(one)? {
            Outcome::Ok => {}
            failed => return Ok(failed),
        }
    }
    Ok(Outcome::Ok)
}

/// Whether `dir` is where `cluster up` started nodes (it holds their pid files, or their logs
/// once they were stopped): there `down`, `stop` and `restart` act on the processes; anywhere
/// else, through admin requests.
fn started_here(dir: &Path) -> bool {
    if local::recorded(dir).is_ok_and(|r| !r.is_empty()) {
        return true;
    }
    let Ok(cluster) = load_dir(dir) else {
        return false;
    };
    cluster
        .peers
        .ids()
        .iter()
        .any(|&id| local::log_path(dir, id).exists())
}

/// The cluster file of `dir` for admin requests: refused, saying why, when `dir` has only the
/// client file (its key cannot stop a node, nor change the membership or the keys).
fn load_admin(dir: &Path) -> Result<Cluster, InputError> {
    let file = dir.join(local::CLUSTER_FILE);
    let client = dir.join(local::CLIENT_FILE);
    if !file.exists() && client.exists() {
        return Err(InputError(format!(
            "{}: only the client file is here, whose key cannot stop, restart, add, remove or rekey a node; run              this where the cluster file ({}) is (the admin file)",
            dir.display(),
            local::CLUSTER_FILE
        )));
    }
    let cluster = load_dir(dir)?;
    cluster.node_key("an admin request (stop, restart, add, remove, rekey)")?;
    Ok(cluster)
}

/// The ids `--id` names (checked), or every node.
fn targets(cluster: &Cluster, id: Option<u32>) -> Result<Vec<NodeId>, InputError> {
    Ok(match id {
        Some(id) => vec![checked_id(cluster, id)?],
        None => cluster.peers.ids().to_vec(),
    })
}

/// How long an admin waits for a node to answer its request, and then to stop answering
/// (stop) or to answer again (restart).
const ADMIN_ANSWER: Duration = Duration::from_secs(5);
const ADMIN_SETTLE: Duration = Duration::from_secs(20);

/// Asks the nodes `id` (every node without it) to stop, by an admin request to each at once,
/// and waits until none of them answers any more. A node whose machine refuses the connection
/// runs no more (stopped already); exit status 1 when a node could not be asked otherwise (no
/// answer: down, or unreachable from here) or went on answering.
fn remote_stop(dir: &Path, id: Option<u32>) -> Result<Outcome, InputError> {
    let cluster = load_admin(dir)?;
    let ids = targets(&cluster, id)?;
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(distsync_net::client::admin(
        &cluster,
        &ids,
        distsync_net::wire::ClientRequest::Shutdown { restart: false },
        ADMIN_ANSWER,
    ));
    let mut ok = true;
    let mut asked = Vec::new();
    for (id, answer) in answers {
        // The error names the node already.
        let answer = answer.map_err(|e| {
            e.strip_prefix(&format!("node {id}: "))
                .map_or(e.clone(), str::to_string)
        });
        match answer {
            Ok(distsync_net::wire::ClientReply::ShuttingDown { pid, .. }) => {
                println!(
                    "node {id} ({}, pid {pid}): stopping (admin request)",
                    cluster.file.nodes[cluster.peers.position(id).unwrap_or(0)].addr
                );
                asked.push(id);
            }
            Ok(other) => {
                ok = false;
                println!("node {id}: unexpected answer {other:?}");
            }
            // Refused by its machine: no node runs there (stopped already).
            Err(e) if e.ends_with(distsync_net::client::NOT_LISTENING) => {
                println!("node {id}: not running ({e})");
            }
            Err(e) => {
                ok = false;
                println!("node {id}: not asked: {e} (down already, or unreachable from here)");
            }
        }
    }
    // Stopped: the node no longer answers.
    let until = Instant::now() + ADMIN_SETTLE;
    loop {
        let answers = rt.block_on(distsync_net::client::statuses(
            &cluster,
            Duration::from_millis(500),
        ));
        let still: Vec<NodeId> = answers
            .iter()
            .filter(|(id, r)| asked.contains(id) && r.is_ok())
            .map(|(id, _)| *id)
            .collect();
        if still.is_empty() {
            break;
        }
        if Instant::now() >= until {
            eprintln!(
                "distsync: nodes {still:?} still answer {ADMIN_SETTLE:?} after being asked to stop"
            );
            return Ok(Outcome::Code(1));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !asked.is_empty() {
        println!("stopped: nodes {asked:?} no longer answer");
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Code(1) })
}

/// Restarts the nodes `id` (every node without it) one after the other: an admin request makes
/// each execute itself again in place, and the next is asked only once this one answers again
/// with a new process start (a rolling restart: the others keep serving meanwhile).
fn remote_restart(dir: &Path, id: Option<u32>) -> Result<Outcome, InputError> {
    use distsync_net::wire::{ClientReply, ClientRequest};
    let cluster = load_admin(dir)?;
    let ids = targets(&cluster, id)?;
    let rt = distsync_net::runtime()?;
    for id in ids {
        let asked = rt
            .block_on(distsync_net::client::admin(
                &cluster,
                &[id],
                ClientRequest::Shutdown { restart: true },
                ADMIN_ANSWER,
            ))
            .remove(0)
            .1;
        let pid = match asked {
            Ok(ClientReply::ShuttingDown { pid, .. }) => pid,
            Ok(other) => {
                eprintln!("distsync: node {id}: unexpected answer {other:?}");
                return Ok(Outcome::Code(1));
            }
            Err(e) => {
                eprintln!("distsync: node {id}: cannot ask it to restart: {e}");
                return Ok(Outcome::Code(1));
            }
        };
        println!("node {id} (pid {pid}): restarting in place (admin request)");
        // Back: it answers an admin request from a process that started after the request.
        let until = Instant::now() + ADMIN_SETTLE;
        let asked_at = Instant::now();
        loop {
            let answer = rt
                .block_on(distsync_net::client::admin(
                    &cluster,
                    &[id],
                    ClientRequest::Process,
                    Duration::from_millis(1000),
                ))
                .remove(0)
                .1;
            if let Ok(ClientReply::Process {
                pid: now,
                host,
                uptime_ms,
            }) = answer
            {
                if Duration::from_millis(uptime_ms) < asked_at.elapsed() {
                    println!("node {id} (pid {now} on {host}): answers again");
                    break;
                }
            }
            if Instant::now() >= until {
                eprintln!(
                    "distsync: node {id} did not answer within {ADMIN_SETTLE:?} of its restart"
                );
                return Ok(Outcome::Code(1));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(Outcome::Ok)
}

/// How long `add` and `remove` keep asking for a leader that takes the change (an election
/// after the removed node stopped, a view change under way).
const MEMBERSHIP_WAIT: Duration = Duration::from_secs(30);

/// Asks the leader among `ids` for `change`, by an admin request to each of them at once (only
/// the leader takes it; the others say they are not), again while none is the leader, for up
/// to [`MEMBERSHIP_WAIT`]. Returns the roster committed and its view, or why not.
fn ask_leader(
    cluster: &Cluster,
    ids: &[NodeId],
    change: distsync_net::wire::MemberChange,
) -> Result<(u32, Vec<distsync_net::config::NodeEntry>), String> {
    use distsync_net::wire::{ClientReply, ClientRequest};
    let rt = distsync_net::runtime().map_err(|e| e.to_string())?;
    let until = Instant::now() + MEMBERSHIP_WAIT;
    loop {
        let answers = rt.block_on(distsync_net::client::admin(
            cluster,
            ids,
            ClientRequest::Membership(change.clone()),
            // The leader answers once the view change that carries the roster commits.
            cluster.file.timeouts.heartbeat_timeout * 4 + ADMIN_ANSWER,
        ));
        let mut why = Vec::new();
        for (id, answer) in answers {
            match answer {
                Ok(ClientReply::Roster { epoch, nodes }) => {
                    let nodes = nodes
                        .into_iter()
                        .map(|(id, addr)| distsync_net::config::NodeEntry { id, addr })
                        .collect();
                    return Ok((epoch, nodes));
                }
                Ok(other) => why.push(format!("node {id}: unexpected answer {other:?}")),
                // Not the leader, no leader yet, or a leader that lost its place: ask again.
                Err(e) if e.contains("not the leader") || e.contains("no longer the leader") => {
                    why.push(e)
                }
                // The leader's own refusal (the change is wrong, or no majority answered).
                Err(e) if e.starts_with(&format!("node {id} refused: ")) => return Err(e),
                Err(e) => why.push(e),
            }
        }
        if Instant::now() >= until {
            return Err(format!(
                "no leader took the change within {MEMBERSHIP_WAIT:?}: {}",
                why.join("; ")
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Rewrites DIR's cluster file and client file with the roster `nodes` (same keys).
fn write_roster(
    dir: &Path,
    cluster: &Cluster,
    nodes: Vec<distsync_net::config::NodeEntry>,
) -> Result<(), InputError> {
    let file = distsync_net::ClusterFile {
        nodes,
        ..cluster.file.clone()
    };
    local::write_cluster(dir, &file)?;
    local::write_client_file(dir, &file)?;
    Ok(())
}

fn add(a: AddArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir.clone());
    let here = started_here(&dir);
    // In a directory of `cluster up`, held until the new node answers, as `start` holds it.
    let _lock = if here {
        Some(local::lock_dir(&dir, "cluster add", true).map_err(|e| InputError(e.to_string()))?)
    } else {
        None
    };
    let cluster = load_admin(&dir)?;
    let ids = cluster.peers.ids().to_vec();
    let id = NodeId(match a.id {
        Some(id) => id,
        None => ids.iter().map(|i| i.0).max().unwrap_or(0) + 1,
    });
    if ids.contains(&id) {
        return Err(InputError(format!(
            "--id {id}: {} has a node with that id already (ids: {ids:?})",
            cluster.origin
        )));
    }
    // The new roster checked as `cluster init` checks its file, before anything is asked.
    let mut nodes = cluster.file.nodes.clone();
    nodes.push(distsync_net::config::NodeEntry {
        id,
        addr: a.addr.clone(),
    });
    let file = distsync_net::ClusterFile {
        nodes,
        ..cluster.file.clone()
    };
    Cluster::check_offline(&file, "cluster add").map_err(|e| {
        let flag = if e.field.ends_with(".id") {
            "id"
        } else {
            "addr"
        };
        InputError(format!("--{flag}: {}", e.message))
    })?;
    let change = distsync_net::wire::MemberChange::Add {
        id,
        addr: a.addr.clone(),
    };
    let (epoch, nodes) = match ask_leader(&cluster, &ids, change) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("distsync: node {id} not added: {e}");
            return Ok(Outcome::Code(1));
        }
    };
    println!(
        "node {id} at {}: added to the roster (view {epoch}: nodes {:?})",
        a.addr,
        nodes.iter().map(|n| n.id.0).collect::<Vec<_>>()
    );
    write_roster(&dir, &cluster, nodes)?;
    println!(
        "wrote {} and {} with node {id}",
        dir.join(local::CLUSTER_FILE).display(),
        dir.join(local::CLIENT_FILE).display()
    );
    if !here {
        println!(
            "start it on its machine with a copy of {}: distsync node --cluster cluster.toml --id {id}",
            dir.join(local::CLUSTER_FILE).display()
        );
        return Ok(Outcome::Ok);
    }
    // A node of this id removed before stored the roster that removed it: it would not start.
    let stale = distsync_net::node::roster_path(&dir, id);
    if stale.exists() {
        std::fs::remove_file(&stale)
            .map_err(|e| InputError(format!("{}: {e}", stale.display())))?;
    }
    start_locked(IdArgs {
        dir: DirArgs {
            dir: Some(dir.clone()),
        },
        id: id.0,
        log: a.log,
    })
}

fn remove(a: RemoveArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir.clone());
    let here = started_here(&dir);
    let cluster = load_admin(&dir)?;
    let id = NodeId(a.id);
    if !cluster.peers.contains(id) {
        return Err(InputError(format!(
            "ID {id}: {} has no node with that id (ids: {:?})",
            cluster.origin,
            cluster.peers.ids()
        )));
    }
    if cluster.peers.len() == 1 {
        return Err(InputError(format!(
            "ID {id}: the only node of {}; a cluster keeps at least one (stop it with `cluster down`)",
            cluster.origin
        )));
    }
    // Stopped first: a node does not remove itself, and the leader may be the one to go.
    if here {
        let _lock =
            local::lock_dir(&dir, "cluster remove", true).map_err(|e| InputError(e.to_string()))?;
        stop_one(&dir, id.0)?;
    } else {
        // A node that cannot be asked (down, unreachable) is removed all the same: the
        // change needs a majority of the roster, not every node.
        let _ = remote_stop(&dir, Some(id.0))?;
    }
    let rest: Vec<NodeId> = cluster
        .peers
        .ids()
        .iter()
        .copied()
        .filter(|&p| p != id)
        .collect();
    let change = distsync_net::wire::MemberChange::Remove { id };
    let (epoch, nodes) = match ask_leader(&cluster, &rest, change) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("distsync: node {id} not removed: {e}");
            return Ok(Outcome::Code(1));
        }
    };
    println!(
        "node {id}: removed from the roster (view {epoch}: nodes {:?})",
        nodes.iter().map(|n| n.id.0).collect::<Vec<_>>()
    );
    write_roster(&dir, &cluster, nodes)?;
    println!(
        "wrote {} and {} without node {id}",
        dir.join(local::CLUSTER_FILE).display(),
        dir.join(local::CLIENT_FILE).display()
    );
    Ok(Outcome::Ok)
}

fn rekey(a: RekeyArgs) -> Result<Outcome, InputError> {
    use distsync_net::wire::{ClientReply, ClientRequest};
    let dir = dir_of(a.dir.dir.clone());
    let cluster = load_admin(&dir)?;
    let (secret, client_secret) = (local::random_secret(), local::random_secret());
    let window_ms = u64::try_from(a.window.as_millis()).unwrap_or(u64::MAX);
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(distsync_net::client::admin(
        &cluster,
        cluster.peers.ids(),
        ClientRequest::Rekey {
            secret: secret.clone(),
            client_secret: client_secret.clone(),
            window_ms,
        },
        ADMIN_ANSWER,
    ));
    let mut missed = Vec::new();
    for (id, answer) in answers {
        match answer {
            Ok(ClientReply::Rekeyed { .. }) => {
                println!(
                    "node {id}: new keys stored and accepted; the old ones for {:?} more",
                    a.window
                )
            }
            Ok(other) => {
                println!("node {id}: unexpected answer {other:?}");
                missed.push(id);
            }
            Err(e) => {
                println!("node {id}: not rekeyed: {e}");
                missed.push(id);
            }
        }
    }
    if missed.len() == cluster.peers.len() {
        eprintln!("distsync: no node took the new keys; the files keep the old ones");
        return Ok(Outcome::Code(1));
    }
    let file = distsync_net::ClusterFile {
        secret,
        client_secret: Some(client_secret),
        ..cluster.file.clone()
    };
    local::write_cluster(&dir, &file)?;
    local::write_client_file(&dir, &file)?;
    println!(
        "wrote {} and {} with the new keys: copy the cluster file to every node's machine and hand          the client file to the lock users within {:?}",
        dir.join(local::CLUSTER_FILE).display(),
        dir.join(local::CLIENT_FILE).display(),
        a.window
    );
    if !missed.is_empty() {
        eprintln!(
            "distsync: nodes {missed:?} did not take the new keys: after {:?} the others refuse              them; give them the new cluster file and restart them",
            a.window
        );
        return Ok(Outcome::Code(1));
    }
    Ok(Outcome::Ok)
}

fn start(a: IdArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir.clone());
    load_dir(&dir)?;
    // Held until the node answers: two `start` at once here would both find it stopped and
    // each start one, and `down` would then know only the pid file's.
    let _lock =
        local::lock_dir(&dir, "cluster start", true).map_err(|e| InputError(e.to_string()))?;
    start_locked(a)
}

/// `cluster start` once the directory's lock is held.
fn start_locked(a: IdArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir);
    let cluster = load_dir(&dir)?;
    let id = checked_id(&cluster, a.id)?;
    let running = local::recorded(&dir)?
        .iter()
        .any(|&(r, _, alive)| r == id && alive);
    if running {
        return Err(InputError(format!(
            "node {id} of {} is already running",
            dir.display()
        )));
    }
    local::check_layout(&dir, &[id])?;
    let exe = std::env::current_exe()?;
    let (started, mut pipe) = local::start_nodes_ready(&dir, &exe, &[id], &a.log)?;
    for (id, pid) in &started {
        println!("node {id}: pid {pid}");
    }
    let file = dir.join(local::CLUSTER_FILE);
    match wait_ready(&dir, &file, &[id], Duration::from_secs(20), Some(&mut pipe)) {
        Ok(()) => Ok(Outcome::Ok),
        Err(e) => {
            eprintln!("distsync: node {id} did not start: {e}");
            Ok(Outcome::Code(1))
        }
    }
}

#[derive(Serialize)]
struct NodeReport {
    id: NodeId,
    pid: Option<u32>,
    /// The node's machine, as the node told an admin request (no pid files here).
    host: Option<String>,
    running: bool,
    reachable: bool,
    leader: Option<NodeId>,
    epoch: Option<u32>,
    members: Vec<NodeId>,
    open: bool,
    holding: Vec<String>,
    max_token: Option<u64>,
    error: Option<String>,
    /// For a node whose process has exited: the last line of its log (why it stopped).
    last_log: Option<String>,
    /// What keeps an answering node from serving (no epoch left for a view; its epoch mark
    /// cannot be stored: a full disk).
    problem: Option<String>,
}

fn status(a: StatusArgs) -> Result<Outcome, InputError> {
    let dir = dir_of(a.dir.dir);
    // A lock user's directory has only the client file: what the nodes believe, without pids.
    let cluster =
        if !dir.join(local::CLUSTER_FILE).exists() && dir.join(local::CLIENT_FILE).exists() {
            Cluster::load(&dir.join(local::CLIENT_FILE))?
        } else {
            load_dir(&dir)?
        };
    let recorded = if cluster.file.client_only {
        Vec::new()
    } else {
        local::recorded(&dir)?
    };
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(distsync_net::client::statuses(
        &cluster,
        Duration::from_secs(2),
    ));
    // Without pid files here, an admin (the cluster file) asks each node which process it is.
    let processes = if recorded.is_empty() && !cluster.file.client_only {
        rt.block_on(distsync_net::client::admin(
            &cluster,
            cluster.peers.ids(),
            distsync_net::wire::ClientRequest::Process,
            Duration::from_secs(2),
        ))
    } else {
        Vec::new()
    };
    let mut all_up = true;
    let mut nodes = Vec::new();
    for (id, answer) in answers {
        let rec = recorded.iter().find(|r| r.0 == id);
        let told = processes.iter().find_map(|(p, r)| match r {
            Ok(distsync_net::wire::ClientReply::Process { pid, host, .. }) if *p == id => {
                Some((*pid, host.clone()))
            }
            _ => None,
        });
        let host = told.as_ref().map(|t| t.1.clone());
        let (pid, running) = match (rec, &told) {
            (Some(r), _) => (Some(r.1), r.2),
            (None, Some((pid, _))) => (Some(*pid), true),
            (None, None) => (None, false),
        };
        all_up &= answer.is_ok();
        nodes.push(match answer {
            Ok(s) => NodeReport {
                id,
                pid,
                host,
                running,
                reachable: true,
                leader: s.leader,
                epoch: s.epoch,
                members: s.members,
                open: s.open,
                holding: s.holding,
                max_token: Some(s.max_token),
                error: None,
                last_log: None,
                problem: s.problem,
            },
            Err(e) => NodeReport {
                id,
                pid,
                host,
                running,
                reachable: false,
                leader: None,
                epoch: None,
                members: Vec::new(),
                open: false,
                holding: Vec::new(),
                max_token: None,
                error: Some(e),
                last_log: (rec.is_some() && !running).then(|| local::last_log_line(&dir, id)),
                problem: None,
            },
        });
    }
    let troubled = nodes.iter().any(|n| n.problem.is_some());
    if a.json {
        let j = serde_json::json!({
            "dir": dir.display().to_string(),
            "mutex": cluster.file.mutex,
            "election": cluster.file.election,
            "up": all_up,
            "nodes": nodes,
        });
        println!("{j}");
    } else {
        println!(
            "{} nodes, mutex {}, election {}",
            cluster.peers.len(),
            cluster.file.mutex,
            cluster.file.election
        );
        for n in &nodes {
            let pid = match (n.pid, &n.host) {
                (Some(p), Some(h)) => format!("pid {p} on {h}"),
                (Some(p), None) => format!("pid {p}{}", if n.running { "" } else { " (exited)" }),
                (None, _) if cluster.file.client_only => "client file: no pid".into(),
                (None, _) => "no pid file".into(),
            };
            match &n.error {
                None => println!(
                    "node {}: {pid}, up; leader {}, view {} {:?}{}, holding {:?}",
                    n.id,
                    n.leader.map_or("-".into(), |l| l.to_string()),
                    n.epoch.map_or("-".into(), crate::leader_cmd::epoch_text),
                    n.members,
                    if n.open { "" } else { " (changing)" },
                    n.holding
                ),
                Some(e) => match &n.last_log {
                    Some(line) => println!("node {}: {pid}, down: {e}; its log ends: {line}", n.id),
                    None => println!("node {}: {pid}, down: {e}", n.id),
                },
            }
            if let Some(p) = &n.problem {
                println!("node {}: NOT SERVING: {p}", n.id);
            }
        }
    }
    Ok(if all_up && !troubled {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}
