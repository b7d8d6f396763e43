//! `distsync cluster snapshot`: a Chandy-Lamport snapshot of a running cluster, started at one
//! node; the global state its initiator assembles, printed and written as JSON, with the bank's
//! total checked against the money that exists.

use crate::store_cmd::EXIT_SERVICE;
use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client;
use distsync_net::wire::{ClientReply, ClientRequest, GlobalState};
use distsync_net::Cluster;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync cluster snapshot`.
#[derive(clap::Args)]
#[command(after_help = "\
The initiator (--via) records its own account and sends a marker on every link; every node
records its account when the first marker reaches it, sends its markers, and records each
incoming link until that link's marker arrives (the Chandy-Lamport rules, the registry's own
file, over the nodes' TCP links, which keep each link's order: the FIFO channels the algorithm
needs). Each node also records its store replica (applied updates, digest) at the same instant.
The parts go to the initiator, which assembles the global state: each node's balance, the
money recorded in transit on each link, and the total, checked against the money that exists
(every node's opening balance, [store] balance in the cluster file).

Snapshots are numbered per initiator (0#1, 0#2, ...) and may overlap each other and any
transfers (`distsync store send`).

Exit status: 0 the snapshot conserves the money; 1 it does not; 125 it did not complete within
--timeout (the message names the nodes that did not answer) or the initiator was unreachable;
2 bad input.")]
pub struct SnapshotArgs {
    /// The directory `cluster up` used (default: the directory of $DISTSYNC_CLUSTER, else
    /// distsync-cluster).
    #[arg(long, value_name = "DIR", conflicts_with = "cluster")]
    pub dir: Option<PathBuf>,
    /// The cluster file, instead of --dir.
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: Option<PathBuf>,
    /// The node that starts the snapshot (default: the cluster file's first).
    #[arg(long, value_name = "N")]
    via: Option<u32>,
    /// How long every node's part may take.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration_arg)]
    timeout: Duration,
    /// Print the snapshot as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// A link's recorded state in the JSON.
#[derive(Serialize)]
struct ChannelView {
    from: NodeId,
    to: NodeId,
    amounts: Vec<u64>,
}

/// A node's part in the JSON.
#[derive(Serialize)]
struct NodeView {
    id: NodeId,
    balance: u64,
    markers_from: Vec<NodeId>,
    store: StoreView,
}

#[derive(Serialize)]
struct StoreView {
    applied: u64,
    digest: String,
    total: i64,
}

#[derive(Serialize)]
struct SnapshotId {
    initiator: NodeId,
    number: u64,
}

/// The JSON `cluster snapshot` prints and writes.
#[derive(Serialize)]
struct SnapshotView {
    snapshot: SnapshotId,
    algorithm: &'static str,
    micros: u64,
    nodes: Vec<NodeView>,
    channels: Vec<ChannelView>,
    in_accounts: u64,
    in_transit: u64,
    total: u64,
    expected: u64,
    conserved: bool,
}

/// The view of a global state; `expected` is the money that exists.
fn view(state: &GlobalState, expected: u64) -> SnapshotView {
    let mut channels = Vec::new();
    let mut nodes = Vec::new();
    for p in &state.parts {
        for c in &p.local.channels {
            channels.push(ChannelView {
                from: c.from,
                to: p.node,
                amounts: c.amounts.clone(),
            });
        }
        nodes.push(NodeView {
            id: p.node,
            balance: p.local.balance,
            markers_from: p.local.markers_from.clone(),
            store: StoreView {
                applied: p.replica.applied,
                digest: format!("{:016x}", p.replica.digest),
                total: p.replica.total,
            },
        });
    }
    let in_accounts: u64 = nodes.iter().map(|n| n.balance).sum();
    let in_transit: u64 = channels.iter().flat_map(|c| &c.amounts).sum();
    SnapshotView {
        snapshot: SnapshotId {
            initiator: state.id.initiator,
            number: state.id.number,
        },
        algorithm: "chandy-lamport",
        micros: state.micros,
        nodes,
        channels,
        in_accounts,
        in_transit,
        total: in_accounts + in_transit,
        expected,
        conserved: in_accounts + in_transit == expected,
    }
}

/// Runs `distsync cluster snapshot`.
pub fn snapshot(args: SnapshotArgs, dir: PathBuf) -> Result<Outcome, InputError> {
    let path = args
        .cluster
        .clone()
        .unwrap_or_else(|| dir.join("cluster.toml"));
    let cluster = Cluster::load(&path)?;
    let via = args.via.map_or(cluster.peers.ids()[0], NodeId);
    if !cluster.peers.contains(via) {
        return Err(InputError(format!(
            "--via {via}: no node has that id (ids: {:?})",
            cluster.peers.ids()
        )));
    }
    let expected = cluster.file.store.balance * cluster.peers.len() as u64;
    let rt = distsync_net::runtime()?;
    // The node gives up at the timeout and names the silent nodes; the client waits a little
    // longer for that answer.
    let req = ClientRequest::Snapshot {
        timeout_ms: args.timeout.as_millis().min(u64::MAX as u128) as u64,
    };
    let r = rt.block_on(client::ask(
        &cluster,
        via,
        req,
        args.timeout + Duration::from_secs(2),
    ));
    let state = match r {
        Ok(ClientReply::Snapshot(s)) => s,
        Ok(other) => {
            eprintln!("error: node {via}: unexpected answer {other:?}");
            return Ok(Outcome::Code(EXIT_SERVICE));
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Code(EXIT_SERVICE));
        }
    };
    let v = view(&state, expected);
    let json = serde_json::to_string_pretty(&v).expect("plain data");
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{json}\n"))
            .map_err(|e| InputError(format!("--out {}: cannot write: {e}", out.display())))?;
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", text(&v));
    }
    Ok(if v.conserved {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}

fn text(v: &SnapshotView) -> String {
    let mut s = format!(
        "snapshot {}#{} (chandy-lamport over {} nodes' links, {:.1} ms)\n",
        v.snapshot.initiator,
        v.snapshot.number,
        v.nodes.len(),
        v.micros as f64 / 1000.0
    );
    s += &format!(
        "{:<5} {:>10}  {:<24} {:>8} {}\n",
        "node", "balance", "in transit to it", "applied", "store digest"
    );
    for n in &v.nodes {
        let transit: Vec<String> = v
            .channels
            .iter()
            .filter(|c| c.to == n.id && !c.amounts.is_empty())
            .map(|c| {
                let a: Vec<String> = c.amounts.iter().map(u64::to_string).collect();
                format!("{}:[{}]", c.from, a.join(","))
            })
            .collect();
        s += &format!(
            "{:<5} {:>10}  {:<24} {:>8} {}\n",
            n.id.to_string(),
            n.balance,
            if transit.is_empty() {
                "-".to_string()
            } else {
                transit.join(" ")
            },
            n.store.applied,
            n.store.digest
        );
    }
    s += &format!(
        "total {} = {} in accounts + {} in transit; money that exists: {}: {}\n",
        v.total,
        v.in_accounts,
        v.in_transit,
        v.expected,
        if v.conserved {
            "conserved"
        } else {
            "NOT CONSERVED"
        }
    );
    s
}
