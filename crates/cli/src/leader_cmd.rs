//! `distsync leader`: who each live node believes leads, and whether they agree.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client;
use distsync_net::Cluster;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync leader`.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 when every node that answered names the same leader, \
1 when they disagree or none answered, 2 for bad input."
)]
pub struct LeaderArgs {
    /// The cluster file (default: $DISTSYNC_CLUSTER, else distsync-cluster/cluster.toml).
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: Option<PathBuf>,
    /// Keep asking (every heartbeat) and print one line each time the leader, the view or the
    /// agreement changes, until interrupted.
    #[arg(long)]
    watch: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// How long to wait for each node's answer.
    #[arg(long, default_value = "2s", value_parser = parse_duration_arg)]
    timeout: Duration,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

#[derive(Serialize)]
struct NodeView {
    id: NodeId,
    /// The node's address as the cluster file writes it.
    addr: String,
    reachable: bool,
    leader: Option<NodeId>,
    electing: bool,
    epoch: Option<u32>,
    members: Vec<NodeId>,
    open: bool,
    holding: Vec<String>,
    error: Option<String>,
}

#[derive(Serialize)]
struct Report {
    leader: Option<NodeId>,
    agreed: bool,
    answered: usize,
    nodes: Vec<NodeView>,
}

/// Asks every node and prints their answers.
pub fn leader(args: LeaderArgs) -> Result<Outcome, InputError> {
    let cluster = Cluster::load(&crate::lock_cmd::cluster_path(args.cluster.clone()))?;
    let rt = distsync_net::runtime()?;
    if args.watch {
        return watch(&cluster, &rt, args.timeout);
    }
    let answers = rt.block_on(client::statuses(&cluster, args.timeout));
    let report = report(&cluster, answers);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", table(&report));
        match (report.agreed, report.leader) {
            (true, Some(l)) => println!(
                "agreed: node {l} leads ({} of {} nodes answered)",
                report.answered,
                report.nodes.len()
            ),
            _ => println!(
                "no agreement ({} of {} nodes answered)",
                report.answered,
                report.nodes.len()
            ),
        }
    }
    Ok(if report.agreed {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}

/// `leader --watch`: one line per change of the leader, its view or the agreement.
fn watch(
    cluster: &Cluster,
    rt: &distsync_net::tokio::runtime::Runtime,
    timeout: Duration,
) -> Result<Outcome, InputError> {
    use std::io::Write;
    let start = std::time::Instant::now();
    let every = cluster
        .file
        .timeouts
        .heartbeat
        .max(Duration::from_millis(100));
    let mut last = String::new();
    loop {
        let report = report(cluster, rt.block_on(client::statuses(cluster, timeout)));
        let epoch = report
            .leader
            .and_then(|l| report.nodes.iter().find(|n| n.id == l))
            .and_then(|n| n.epoch)
            .map_or("-".to_string(), epoch_text);
        let line = match report.leader {
            Some(l) => format!(
                "node {l} leads (view {epoch}, {} of {} nodes answered)",
                report.answered,
                report.nodes.len()
            ),
            None => format!(
                "no agreement ({} of {} nodes answered)",
                report.answered,
                report.nodes.len()
            ),
        };
        if line != last {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "[{:8.3}s] {line}", start.elapsed().as_secs_f64());
            let _ = out.flush();
            last = line;
        }
        std::thread::sleep(every);
    }
}

/// The text table: one line per node (its id, its address, the leader it believes in, its
/// view's epoch and state), then one line per view the nodes are in with that view's members
/// (members belong to a view, not to a row: with every node in one view, they are printed once).
fn table(report: &Report) -> String {
    use std::fmt::Write;
    let width = report
        .nodes
        .iter()
        .map(|n| n.addr.len())
        .max()
        .unwrap_or(0)
        .max("address".len());
    let mut out = String::new();
    let _ = writeln!(out, "node  {:<width$}  leader  view     state", "address");
    let mut views: Vec<(u32, &[NodeId])> = Vec::new();
    for n in &report.nodes {
        match &n.error {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "{:<5} {:<width$}  unreachable: {e}",
                    n.id.to_string(),
                    n.addr
                );
            }
            None => {
                let state = if n.electing {
                    "electing"
                } else if n.open {
                    "open"
                } else {
                    "changing"
                };
                let _ = writeln!(
                    out,
                    "{:<5} {:<width$}  {:<7} {:<8} {state}",
                    n.id.to_string(),
                    n.addr,
                    n.leader.map_or("-".to_string(), |l| l.to_string()),
                    n.epoch.map_or("-".to_string(), epoch_text),
                );
                if let Some(e) = n.epoch {
                    if !views
                        .iter()
                        .any(|&(v, m)| v == e && m == n.members.as_slice())
                    {
                        views.push((e, &n.members));
                    }
                }
            }
        }
    }
    for (e, members) in views {
        let ids: Vec<String> = members.iter().map(|m| m.to_string()).collect();
        let _ = writeln!(out, "view {}: members {}", epoch_text(e), ids.join(" "));
    }
    out
}

/// An epoch as "round.leader".
pub fn epoch_text(e: u32) -> String {
    format!("{}.{}", e >> 10, e & 1023)
}

fn report(
    cluster: &Cluster,
    answers: Vec<(NodeId, Result<distsync_net::wire::NodeStatus, String>)>,
) -> Report {
    let addr_of = |id: NodeId| {
        cluster
            .peers
            .position(id)
            .map_or(String::new(), |i| cluster.file.nodes[i].addr.clone())
    };
    let nodes: Vec<NodeView> = answers
        .into_iter()
        .map(|(id, r)| match r {
            Ok(s) => NodeView {
                id,
                addr: addr_of(id),
                reachable: true,
                leader: s.leader,
                electing: s.electing,
                epoch: s.epoch,
                members: s.members,
                open: s.open,
                holding: s.holding,
                error: None,
            },
            Err(e) => NodeView {
                id,
                addr: addr_of(id),
                reachable: false,
                leader: None,
                electing: false,
                epoch: None,
                members: Vec::new(),
                open: false,
                holding: Vec::new(),
                error: Some(e),
            },
        })
        .collect();
    let live: Vec<&NodeView> = nodes.iter().filter(|n| n.reachable).collect();
    let first = live.first().and_then(|n| n.leader);
    // Agreement: every node that answered names the same leader, and that leader answered too.
    let agreed = first.is_some_and(|l| live.iter().any(|n| n.id == l))
        && live.iter().all(|n| n.leader == first && !n.electing);
    Report {
        leader: if agreed { first } else { None },
        agreed,
        answered: live.len(),
        nodes,
    }
}
