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
    /// The cluster file (TOML).
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: PathBuf,
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
    let cluster = Cluster::load(&args.cluster)?;
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(client::statuses(&cluster, args.timeout));
    let report = report(answers);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("node  leader  epoch    members          view");
        for n in &report.nodes {
            match &n.error {
                Some(e) => println!("{:<5} unreachable: {e}", n.id.to_string()),
                None => println!(
                    "{:<5} {:<7} {:<8} {:<16} {}",
                    n.id.to_string(),
                    n.leader.map_or("-".to_string(), |l| l.to_string()),
                    n.epoch.map_or("-".to_string(), epoch_text),
                    format!("{:?}", n.members),
                    if n.electing {
                        "electing"
                    } else if n.open {
                        "open"
                    } else {
                        "changing"
                    }
                ),
            }
        }
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

/// An epoch as "round.leader".
pub fn epoch_text(e: u32) -> String {
    format!("{}.{}", e >> 10, e & 1023)
}

fn report(answers: Vec<(NodeId, Result<distsync_net::wire::NodeStatus, String>)>) -> Report {
    let nodes: Vec<NodeView> = answers
        .into_iter()
        .map(|(id, r)| match r {
            Ok(s) => NodeView {
                id,
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
