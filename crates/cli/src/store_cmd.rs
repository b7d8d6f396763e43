//! `distsync store`: the replicated bank of a running cluster, every update delivered through
//! the multicast algorithm its cluster file names (`[store] multicast`), and the nodes' own
//! accounts that `distsync cluster snapshot` records.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, NodeId};
use distsync_net::client::{self, ClientError};
use distsync_net::store::Update;
use distsync_net::wire::{ClientReply, ClientRequest, ReplicaStatus};
use distsync_net::Cluster;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// The exit status when the cluster could not serve a request (no answer, refused, timeout).
pub const EXIT_SERVICE: u8 = 125;

/// Arguments of `distsync store`.
#[derive(clap::Args)]
#[command(after_help = "\
Every update goes to one node (--node, default the file's first), which multicasts it to every
replica with the cluster file's [store] multicast algorithm (total-order-multicast,
causal-broadcast or fifo-broadcast); the command returns once that node's own replica has
applied it. With total
order every replica applies the same updates in the same order, so their digests agree
whenever the cluster is quiet; with causal or FIFO order, concurrent `add` and `interest`
updates can be applied in different orders and the replicas diverge (the notes' replicated
database), which `store status` shows.

Exit status: 0 done (status: every replica compared has the same digest; a replica that lost
its updates in a restart is shown, not compared); 1 status: the replicas' digests differ, or
get: the replica has no such account; 125 the cluster could not serve the request (no answer
within --timeout, refused); 2 bad input.

Examples: distsync store put alice 1000
          distsync store add alice 100 --node 0 & distsync store interest 1% --node 1
          distsync store status --json
          distsync store send --from 0 --to 2 30")]
pub struct StoreArgs {
    #[command(subcommand)]
    action: Action,
    /// The cluster file (default: $DISTSYNC_CLUSTER, else distsync-cluster/cluster.toml).
    #[arg(long, value_name = "CLUSTER.toml", global = true)]
    cluster: Option<PathBuf>,
    /// The node that takes the request.
    #[arg(long, value_name = "N", global = true)]
    node: Option<u32>,
    /// How long to wait for the answer (an update: until the node's replica applied it).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration_arg, global = true)]
    timeout: Duration,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Open ACCOUNT with AMOUNT, or set it to AMOUNT, at every replica.
    Put {
        /// The account (1 to 64 bytes).
        account: String,
        /// Its balance.
        #[arg(allow_hyphen_values = true)]
        amount: i64,
    },
    /// Add AMOUNT to ACCOUNT (negative: take it out) at every replica.
    Add {
        /// The account.
        account: String,
        /// How much.
        #[arg(allow_hyphen_values = true)]
        amount: i64,
    },
    /// Add RATE of interest to every account at every replica ("1%", "0.5%", or basis points
    /// "100bp"; rounded toward zero).
    Interest {
        /// The rate.
        rate: String,
    },
    /// Move AMOUNT from one account to another at every replica (nothing where FROM cannot
    /// cover it).
    Transfer {
        /// The paying account.
        from: String,
        /// The receiving account.
        to: String,
        /// How much (more than zero).
        amount: i64,
    },
    /// Print ACCOUNT's balance at one replica (--node).
    Get {
        /// The account.
        account: String,
    },
    /// Every replica's accounts, applied count and digest, and whether the digests agree.
    Status {
        /// Include each replica's applied updates (payload ids, in order) in the JSON.
        #[arg(long)]
        log: bool,
    },
    /// Send AMOUNT from node --from's own account to node --to's (the bank `cluster snapshot`
    /// records: the money travels as a message on the link between them).
    Send {
        /// The paying node.
        #[arg(long, value_name = "N")]
        from: u32,
        /// The receiving node.
        #[arg(long, value_name = "N")]
        to: u32,
        /// How much (more than zero, at most the paying node's balance).
        amount: u64,
    },
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// "1%" or "1.5%" or "150bp" as basis points.
pub fn parse_rate(s: &str) -> Result<u32, String> {
    let bad = || {
        format!("interest rate {s:?}: expected a percentage like \"1%\" or \"0.25%\", or basis points like \"100bp\"")
    };
    let t = s.trim();
    if let Some(bp) = t.strip_suffix("bp") {
        return bp.trim().parse::<u32>().map_err(|_| bad());
    }
    let p = t.strip_suffix('%').ok_or_else(bad)?.trim();
    let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
    if whole.is_empty() || frac.len() > 2 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let whole: u32 = whole.parse().map_err(|_| bad())?;
    let frac: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<2}").parse().map_err(|_| bad())?
    };
    whole
        .checked_mul(100)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(bad)
}

fn node_of(cluster: &Cluster, n: Option<u32>) -> Result<NodeId, InputError> {
    let id = match n {
        Some(n) => NodeId(n),
        None => cluster.peers.ids()[0],
    };
    if !cluster.peers.contains(id) {
        return Err(InputError(format!(
            "--node {id}: no node has that id (ids: {:?})",
            cluster.peers.ids()
        )));
    }
    Ok(id)
}

fn service_error(e: ClientError) -> Outcome {
    eprintln!("error: {e}");
    Outcome::Code(EXIT_SERVICE)
}

/// Runs `distsync store`.
pub fn store(args: StoreArgs) -> Result<Outcome, InputError> {
    let cluster = Cluster::load(&crate::lock_cmd::cluster_path(args.cluster.clone()))?;
    let rt = distsync_net::runtime()?;
    let update = match &args.action {
        Action::Put { account, amount } => Some(Update::Put {
            account: account.clone(),
            amount: *amount,
        }),
        Action::Add { account, amount } => Some(Update::Add {
            account: account.clone(),
            amount: *amount,
        }),
        Action::Interest { rate } => Some(Update::Interest {
            bp: parse_rate(rate).map_err(InputError)?,
        }),
        Action::Transfer { from, to, amount } => Some(Update::Transfer {
            from: from.clone(),
            to: to.clone(),
            amount: *amount,
        }),
        _ => None,
    };
    if let Some(update) = update {
        update.check().map_err(InputError)?;
        let node = node_of(&cluster, args.node)?;
        let r = rt.block_on(client::ask(
            &cluster,
            node,
            ClientRequest::Update(update.clone()),
            args.timeout,
        ));
        return Ok(match r {
            Ok(ClientReply::Applied { payload, index }) => {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"node": node, "update": update.to_string(), "payload": payload, "index": index})
                    );
                } else {
                    println!("{update}: applied at node {node} as its update #{index} (payload {payload:#x})");
                }
                Outcome::Ok
            }
            Ok(other) => service_error(ClientError::Unavailable(format!(
                "node {node}: unexpected answer {other:?}"
            ))),
            Err(e) => service_error(e),
        });
    }
    match args.action {
        Action::Get { account } => {
            let node = node_of(&cluster, args.node)?;
            match rt.block_on(replica(&cluster, node, false, args.timeout)) {
                Ok(r) => {
                    let balance = r.accounts.iter().find(|(a, _)| *a == account).map(|x| x.1);
                    if args.json {
                        println!(
                            "{}",
                            serde_json::json!({"node": node, "account": account, "balance": balance})
                        );
                    }
                    match balance {
                        Some(b) => {
                            if !args.json {
                                println!("{b}");
                            }
                            Ok(Outcome::Ok)
                        }
                        None => {
                            eprintln!("error: node {node}'s replica has no account {account:?}");
                            Ok(Outcome::Code(1))
                        }
                    }
                }
                Err(e) => Ok(service_error(e)),
            }
        }
        Action::Status { log } => status(&cluster, &rt, log, args.json, args.timeout),
        Action::Send { from, to, amount } => {
            let from = node_of(&cluster, Some(from))?;
            let to = node_of(&cluster, Some(to))?;
            let r = rt.block_on(client::ask(
                &cluster,
                from,
                ClientRequest::Send { to, amount },
                args.timeout,
            ));
            Ok(match r {
                Ok(ClientReply::Sent { balance }) => {
                    if args.json {
                        println!(
                            "{}",
                            serde_json::json!({"from": from, "to": to, "amount": amount, "balance": balance})
                        );
                    } else {
                        println!("node {from} sent {amount} to node {to}; node {from}'s balance: {balance}");
                    }
                    Outcome::Ok
                }
                Ok(other) => service_error(ClientError::Unavailable(format!(
                    "node {from}: unexpected answer {other:?}"
                ))),
                Err(e) => service_error(e),
            })
        }
        _ => unreachable!("updates are handled above"),
    }
}

async fn replica(
    cluster: &Cluster,
    node: NodeId,
    log: bool,
    timeout: Duration,
) -> Result<ReplicaStatus, ClientError> {
    match client::ask(cluster, node, ClientRequest::Replica { log }, timeout).await? {
        ClientReply::Replica(r) => Ok(*r),
        other => Err(ClientError::Unavailable(format!(
            "node {node}: unexpected answer {other:?}"
        ))),
    }
}

/// One replica in `store status --json`.
#[derive(Serialize)]
struct ReplicaView {
    node: NodeId,
    reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    accounts: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    applied: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    balance: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<Vec<u64>>,
}

/// `store status --json`.
#[derive(Serialize)]
struct StatusView {
    multicast: String,
    answered: usize,
    compared: usize,
    agreed: bool,
    digests: usize,
    replicas: Vec<ReplicaView>,
}

fn status(
    cluster: &Cluster,
    rt: &distsync_net::tokio::runtime::Runtime,
    log: bool,
    json: bool,
    timeout: Duration,
) -> Result<Outcome, InputError> {
    let answers: Vec<(NodeId, Result<ReplicaStatus, ClientError>)> = rt.block_on(async {
        let mut tasks = Vec::new();
        for &id in cluster.peers.ids() {
            let cluster = cluster.clone();
            tasks.push(distsync_net::tokio::spawn(async move {
                (id, replica(&cluster, id, log, timeout).await)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("a status task does not panic"));
        }
        out
    });
    // A replica that lost its updates in a restart is shown, not compared.
    let compared: Vec<&ReplicaStatus> = answers
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .filter(|r| !r.lost)
        .collect();
    let mut digests: Vec<u64> = compared.iter().map(|r| r.digest).collect();
    digests.sort_unstable();
    digests.dedup();
    let answered = answers.iter().filter(|(_, r)| r.is_ok()).count();
    let agreed = !compared.is_empty() && digests.len() == 1;
    let view = StatusView {
        multicast: cluster.file.store.multicast.clone(),
        answered,
        compared: compared.len(),
        agreed,
        digests: digests.len(),
        replicas: answers
            .iter()
            .map(|(id, r)| match r {
                Ok(r) => ReplicaView {
                    node: *id,
                    reachable: true,
                    error: None,
                    accounts: Some(
                        r.accounts
                            .iter()
                            .map(|(a, b)| (a.clone(), serde_json::Value::from(*b)))
                            .collect(),
                    ),
                    applied: Some(r.applied),
                    digest: Some(format!("{:016x}", r.digest)),
                    total: Some(r.total),
                    pending: Some(r.pending),
                    missing: Some(r.missing),
                    balance: Some(r.balance),
                    restarted: Some(r.lost),
                    log: log.then(|| r.log.clone()),
                },
                Err(e) => ReplicaView {
                    node: *id,
                    reachable: false,
                    error: Some(e.to_string()),
                    accounts: None,
                    applied: None,
                    digest: None,
                    total: None,
                    pending: None,
                    missing: None,
                    balance: None,
                    restarted: None,
                    log: None,
                },
            })
            .collect(),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&view).expect("plain data")
        );
    } else {
        println!(
            "store: {} replicas, {}",
            view.replicas.len(),
            view.multicast
        );
        println!(
            "{:<5} {:>8} {:>8} {:<16} {:>12}  accounts",
            "node", "applied", "pending", "digest", "total"
        );
        for r in &view.replicas {
            match &r.error {
                Some(e) => println!("{:<5} unreachable: {e}", r.node.to_string()),
                None => {
                    let accounts: Vec<String> = r
                        .accounts
                        .iter()
                        .flatten()
                        .map(|(a, b)| format!("{a}={b}"))
                        .collect();
                    println!(
                        "{:<5} {:>8} {:>8} {:<16} {:>12}  {}{}",
                        r.node.to_string(),
                        r.applied.unwrap_or(0),
                        r.pending.unwrap_or(0),
                        r.digest.as_deref().unwrap_or(""),
                        r.total.unwrap_or(0),
                        accounts.join(" "),
                        if r.restarted == Some(true) {
                            "  (restarted: lost its updates, not compared)"
                        } else {
                            ""
                        }
                    );
                }
            }
        }
        if agreed {
            println!(
                "agreed: every replica compared ({}) has digest {:016x}",
                compared.len(),
                digests[0]
            );
        } else if compared.is_empty() {
            println!("no replica to compare answered");
        } else {
            println!(
                "DIVERGED: the {} replicas compared hold {} different states",
                compared.len(),
                digests.len()
            );
        }
    }
    Ok(if compared.is_empty() {
        Outcome::Code(EXIT_SERVICE)
    } else if agreed {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_as_basis_points() {
        assert_eq!(parse_rate("1%"), Ok(100));
        assert_eq!(parse_rate("0.5%"), Ok(50));
        assert_eq!(parse_rate("1.25%"), Ok(125));
        assert_eq!(parse_rate("150bp"), Ok(150));
        for bad in ["1", "%", "1.234%", "x%", "-1%", ".5%"] {
            assert!(
                parse_rate(bad)
                    .unwrap_err()
                    .contains("expected a percentage"),
                "{bad}"
            );
        }
    }
}
