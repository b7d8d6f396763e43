//! Replicated-store updates and snapshots on loopback, for scripts/bench-store.sh.
//!
//! `storebench updates CLUSTER.toml CLIENTS SECONDS` runs CLIENTS clients, client i connected
//! to node i mod N, each sending `add` updates to one account and waiting until its node's
//! replica has applied each (the update delivered by the cluster's multicast algorithm), for
//! SECONDS. Prints one JSON line: ops, seconds, throughput_per_s, p50_us, p99_us, max_us.
//!
//! `storebench snapshots CLUSTER.toml COUNT` takes COUNT snapshots one after another through
//! node 0 while one client per node sends money between the nodes' accounts, and prints the
//! time from the request to the assembled snapshot as the client sees it (p50, p99) and the
//! initiator's own figure (from recording its state to the last part's arrival), and how many
//! conserved the money.

use distsync_core::NodeId;
use distsync_net::client::Client;
use distsync_net::store::Update;
use distsync_net::wire::{ClientReply, ClientRequest};
use distsync_net::Cluster;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || {
        eprintln!("usage: storebench updates CLUSTER.toml CLIENTS SECONDS | storebench snapshots CLUSTER.toml COUNT");
        std::process::exit(2);
    };
    if args.len() < 4 {
        usage();
    }
    let cluster = Cluster::load(Path::new(&args[2])).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let rt = distsync_net::runtime().unwrap();
    match args[1].as_str() {
        "updates" if args.len() == 5 => {
            let clients: usize = args[3].parse().expect("CLIENTS is a number");
            let secs: f64 = args[4].parse().expect("SECONDS is a number");
            let (mut lat, elapsed) = rt.block_on(updates(&cluster, clients, secs));
            lat.sort_unstable();
            let ops = lat.len();
            println!(
                "{{\"ops\":{ops},\"seconds\":{:.3},\"throughput_per_s\":{:.0},\"p50_us\":{},\"p99_us\":{},\"max_us\":{}}}",
                elapsed.as_secs_f64(),
                ops as f64 / elapsed.as_secs_f64(),
                pct(&lat, 50),
                pct(&lat, 99),
                lat.last().copied().unwrap_or(0)
            );
        }
        "snapshots" if args.len() == 4 => {
            let count: usize = args[3].parse().expect("COUNT is a number");
            let (mut client, mut node, conserved) = rt.block_on(snapshots(&cluster, count));
            client.sort_unstable();
            node.sort_unstable();
            println!(
                "{{\"snapshots\":{},\"conserved\":{conserved},\"p50_us\":{},\"p99_us\":{},\"node_p50_us\":{},\"node_p99_us\":{}}}",
                client.len(),
                pct(&client, 50),
                pct(&client, 99),
                pct(&node, 50),
                pct(&node, 99)
            );
        }
        _ => usage(),
    }
}

fn pct(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) * p) / 100]
}

async fn updates(cluster: &Cluster, clients: usize, secs: f64) -> (Vec<u64>, Duration) {
    let ids = cluster.peers.ids().to_vec();
    // The account every update adds to.
    let mut c = Client::connect(cluster, ids[0]).await.unwrap();
    c.send(&ClientRequest::Update(Update::Put {
        account: "bench".into(),
        amount: 0,
    }))
    .await
    .unwrap();
    assert!(matches!(
        c.recv().await.unwrap(),
        ClientReply::Applied { .. }
    ));
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..clients {
        let cluster = cluster.clone();
        let node = ids[i % ids.len()];
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&cluster, node).await.unwrap();
            let mut lat = Vec::new();
            while Instant::now() < until {
                let t = Instant::now();
                c.send(&ClientRequest::Update(Update::Add {
                    account: "bench".into(),
                    amount: 1,
                }))
                .await
                .unwrap();
                match c.recv().await.unwrap() {
                    ClientReply::Applied { .. } => lat.push(t.elapsed().as_micros() as u64),
                    other => panic!("{other:?}"),
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    (lat, start.elapsed())
}

async fn snapshots(cluster: &Cluster, count: usize) -> (Vec<u64>, Vec<u64>, usize) {
    let ids = cluster.peers.ids().to_vec();
    let n = ids.len();
    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::new();
    for (i, &me) in ids.iter().enumerate() {
        let (cluster, stop, to) = (cluster.clone(), stop.clone(), ids[(i + 1) % n]);
        senders.push(tokio::spawn(async move {
            let mut c = Client::connect(&cluster, me).await.unwrap();
            while !stop.load(Ordering::Relaxed) {
                c.send(&ClientRequest::Send { to, amount: 1 })
                    .await
                    .unwrap();
                let _ = c.recv().await.unwrap();
            }
        }));
    }
    let expected = cluster.file.store.balance * n as u64;
    let mut c = Client::connect(cluster, NodeId(ids[0].0)).await.unwrap();
    let (mut client, mut node, mut conserved) = (Vec::new(), Vec::new(), 0);
    for _ in 0..count {
        let t = Instant::now();
        c.send(&ClientRequest::Snapshot { timeout_ms: 5000 })
            .await
            .unwrap();
        match c.recv().await.unwrap() {
            ClientReply::Snapshot(s) => {
                client.push(t.elapsed().as_micros() as u64);
                node.push(s.micros);
                let total: u64 = s
                    .parts
                    .iter()
                    .map(|p| {
                        p.local.balance
                            + p.local
                                .channels
                                .iter()
                                .flat_map(|c| &c.amounts)
                                .sum::<u64>()
                    })
                    .sum();
                if total == expected {
                    conserved += 1;
                }
            }
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        let _ = s.await;
    }
    (client, node, conserved)
}
