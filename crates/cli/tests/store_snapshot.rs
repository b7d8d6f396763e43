//! The replicated store and Chandy-Lamport snapshots on real node processes (issue 36):
//! snapshots of a quiet cluster and of one under a stream of transfers conserve the money and
//! are numbered; a paused node is named by a snapshot within its timeout; total-order replicas
//! agree once the cluster is quiet, also under concurrent updates; causal and FIFO replicas
//! show the notes' anomaly (an "add $100" and an "add 1% interest" applied in different orders)
//! and `store status` reports the divergence.

mod lock_common;

use distsync_core::NodeId;
use distsync_net::client::Client;
use distsync_net::store::Update;
use distsync_net::wire::{ClientReply, ClientRequest};
use distsync_net::Cluster;
use lock_common::*;
use serde_json::Value;
use std::process::Output;
use std::thread;
use std::time::{Duration, Instant};

fn start(name: &str, n: usize, multicast: &str) -> TestCluster {
    let c = TestCluster::start_full(
        name,
        n,
        "ricart-agrawala",
        "bully",
        TIMEOUTS,
        &format!("[store]\nmulticast = \"{multicast}\"\nbalance = 1000\n"),
    );
    c.settled(Duration::from_secs(20));
    c
}

fn run(c: &TestCluster, args: &[&str]) -> Output {
    let mut cmd = c.client_bin();
    cmd.args(args).arg("--cluster").arg(&c.cluster);
    cmd.output().unwrap()
}

fn ok(c: &TestCluster, args: &[&str]) -> String {
    let out = run(c, args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        c.logs()
    );
    String::from_utf8(out.stdout).unwrap()
}

fn snapshot(c: &TestCluster, via: usize) -> Value {
    let text = ok(
        c,
        &["cluster", "snapshot", "--json", "--via", &via.to_string()],
    );
    serde_json::from_str(&text).unwrap()
}

fn assert_conserved(s: &Value, n: usize) {
    let nodes = s["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), n, "{s}");
    let accounts: u64 = nodes.iter().map(|n| n["balance"].as_u64().unwrap()).sum();
    let transit: u64 = s["channels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["amounts"].as_array().unwrap())
        .map(|a| a.as_u64().unwrap())
        .sum();
    assert_eq!(s["channels"].as_array().unwrap().len(), n * (n - 1), "{s}");
    assert_eq!(accounts + transit, 1000 * n as u64, "{s}");
    assert_eq!(s["total"], accounts + transit);
    assert_eq!(s["expected"], 1000 * n as u64);
    assert_eq!(s["conserved"], true, "{s}");
}

#[test]
fn snapshots_of_a_quiet_cluster_record_the_accounts_and_are_numbered() {
    let _g = lock_guard();
    let c = start("snap-quiet", 3, "total-order-multicast");
    let sent = ok(&c, &["store", "send", "--from", "0", "--to", "2", "300"]);
    assert!(sent.contains("node 0's balance: 700"), "{sent}");
    // More than the balance is refused, naming it.
    let out = run(&c, &["store", "send", "--from", "0", "--to", "1", "701"]);
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("balance (700) does not cover 701"), "{err}");
    ok(&c, &["store", "put", "alice", "5", "--node", "1"]);
    // The transfer has long arrived: the snapshot finds it in node 2's account.
    thread::sleep(Duration::from_millis(100));
    let out_file = c.dir.join("snap.json");
    let text = ok(
        &c,
        &[
            "cluster",
            "snapshot",
            "--json",
            "--out",
            out_file.to_str().unwrap(),
        ],
    );
    let s: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        s,
        serde_json::from_str::<Value>(&std::fs::read_to_string(&out_file).unwrap()).unwrap()
    );
    assert_conserved(&s, 3);
    assert_eq!(s["snapshot"]["initiator"], 0);
    assert_eq!(s["snapshot"]["number"], 1);
    let balances: Vec<u64> = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["balance"].as_u64().unwrap())
        .collect();
    assert_eq!(balances, vec![700, 1000, 1300]);
    // Every node recorded its store replica at the cut: one update applied everywhere.
    for n in s["nodes"].as_array().unwrap() {
        assert_eq!(n["store"]["applied"], 1, "{s}");
        assert_eq!(n["store"]["total"], 5, "{s}");
    }
    // Numbered per initiator.
    assert_eq!(snapshot(&c, 0)["snapshot"]["number"], 2);
    let s = snapshot(&c, 2);
    assert_eq!(s["snapshot"]["initiator"], 2);
    assert_eq!(s["snapshot"]["number"], 1);
    // The text form says the same.
    let text = ok(&c, &["cluster", "snapshot", "--via", "1"]);
    assert!(text.contains("snapshot 1#1"), "{text}");
    assert!(
        text.contains(
            "total 3000 = 3000 in accounts + 0 in transit; money that exists: 3000: conserved"
        ),
        "{text}"
    );
}

#[test]
fn snapshots_under_a_stream_of_transfers_conserve_the_money() {
    let _g = lock_guard();
    let n = 4;
    let c = start("snap-stream", n, "fifo-broadcast");
    let cluster = Cluster::load(&c.cluster).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // One client per node sends small amounts round the ring as fast as the node answers.
    let senders: Vec<_> = (0..n)
        .map(|i| {
            let cluster = cluster.clone();
            let stop = stop.clone();
            thread::spawn(move || {
                let rt = distsync_net::runtime().unwrap();
                rt.block_on(async {
                    let mut cl = Client::connect(&cluster, NodeId(i as u32)).await.unwrap();
                    let mut sent = 0u64;
                    let mut k = 0u32;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        k += 1;
                        let to = NodeId(((i as u32) + 1 + k % (n as u32 - 1)) % n as u32);
                        cl.send(&ClientRequest::Send {
                            to,
                            amount: 1 + (k as u64 % 7),
                        })
                        .await
                        .unwrap();
                        match cl.recv().await.unwrap() {
                            ClientReply::Sent { .. } => sent += 1,
                            ClientReply::Refused { .. } => {}
                            other => panic!("{other:?}"),
                        }
                    }
                    sent
                })
            })
        })
        .collect();
    let mut in_transit_seen = 0;
    for k in 0..12 {
        let s = snapshot(&c, k % n);
        assert_conserved(&s, n);
        if s["in_transit"].as_u64().unwrap() > 0 {
            in_transit_seen += 1;
        }
        thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent: u64 = senders.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(sent > 100, "only {sent} transfers were made");
    eprintln!("{sent} transfers; {in_transit_seen} of 12 snapshots caught money in transit");
    // Quiet again: a last snapshot conserves too.
    assert_conserved(&snapshot(&c, 0), n);
}

#[test]
fn a_paused_node_is_named_by_the_snapshot_within_its_timeout() {
    let _g = lock_guard();
    let c = start("snap-paused", 3, "total-order-multicast");
    c.pause(2);
    let t0 = Instant::now();
    let out = run(&c, &["cluster", "snapshot", "--timeout", "1s"]);
    let waited = t0.elapsed();
    c.resume(2);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("snapshot 0#1 not complete") && err.contains("node(s) 2 did not answer"),
        "{err}"
    );
    assert!(waited < Duration::from_secs(3), "took {waited:?}");
    // Node 2 is back: the next snapshot completes and conserves the money.
    let s = snapshot(&c, 0);
    assert_eq!(s["snapshot"]["number"], 2);
    assert_conserved(&s, 3);
    // An unknown initiator is bad input.
    let out = run(&c, &["cluster", "snapshot", "--via", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--via 7"));
}

/// Sends `updates[i]` to node `nodes[i]` over connections opened beforehand, all at once, and
/// waits until each node's replica applied its own.
fn concurrently(cluster: &Cluster, jobs: Vec<(u32, Update)>) {
    let rt = distsync_net::runtime().unwrap();
    rt.block_on(async {
        let mut clients = Vec::new();
        for (node, _) in &jobs {
            clients.push(Client::connect(cluster, NodeId(*node)).await.unwrap());
        }
        for (cl, (_, u)) in clients.iter_mut().zip(&jobs) {
            cl.send(&ClientRequest::Update(u.clone())).await.unwrap();
        }
        for cl in clients.iter_mut() {
            match cl.recv().await.unwrap() {
                ClientReply::Applied { .. } => {}
                other => panic!("{other:?}"),
            }
        }
    });
}

fn status(c: &TestCluster) -> (Output, Value) {
    let out = run(c, &["store", "status", "--json", "--log"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status --json: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

/// Waits until every replica applied `count` updates; the status then.
fn quiet(c: &TestCluster, count: u64) -> (Output, Value) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (out, v) = status(c);
        let done = v["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["applied"].as_u64() == Some(count));
        if done {
            return (out, v);
        }
        assert!(Instant::now() < until, "not quiet: {v}\n{}", c.logs());
        thread::sleep(Duration::from_millis(20));
    }
}

fn add(n: i64) -> Update {
    Update::Add {
        account: "acct".into(),
        amount: n,
    }
}

#[test]
fn total_order_replicas_agree_once_quiet_under_concurrent_updates() {
    let _g = lock_guard();
    let c = start("store-total", 3, "total-order-multicast");
    let cluster = Cluster::load(&c.cluster).unwrap();
    ok(&c, &["store", "put", "acct", "1000"]);
    let mut applied = 1;
    for _ in 0..20 {
        concurrently(
            &cluster,
            vec![
                (0, add(100)),
                (1, Update::Interest { bp: 100 }),
                (2, add(-7)),
            ],
        );
        applied += 3;
    }
    let (out, v) = quiet(&c, applied);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["agreed"], true, "{v}");
    assert_eq!(v["multicast"], "total-order-multicast");
    let logs: Vec<&Value> = v["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["log"])
        .collect();
    assert!(logs.iter().all(|l| *l == logs[0]), "{v}");
    let text = ok(&c, &["store", "status"]);
    assert!(
        text.contains("agreed: every replica compared (3)"),
        "{text}"
    );
    assert_eq!(
        ok(&c, &["store", "get", "acct", "--node", "2"]).trim(),
        v["replicas"][0]["accounts"]["acct"].to_string()
    );
}

/// Runs the notes' anomaly until the replicas diverge (at most `tries` times); whether they did.
fn anomaly(c: &TestCluster, tries: usize) -> Option<Value> {
    let cluster = Cluster::load(&c.cluster).unwrap();
    let mut applied = 0;
    for _ in 0..tries {
        ok(c, &["store", "put", "acct", "1000"]);
        applied += 1;
        quiet(c, applied);
        concurrently(
            &cluster,
            vec![(0, add(100)), (1, Update::Interest { bp: 100 })],
        );
        applied += 2;
        let (out, v) = quiet(c, applied);
        if v["agreed"] == false {
            assert_eq!(out.status.code(), Some(1), "{v}");
            return Some(v);
        }
        assert!(out.status.success());
    }
    None
}

#[test]
fn causal_and_fifo_replicas_show_the_notes_anomaly() {
    let _g = lock_guard();
    for multicast in ["causal-broadcast", "fifo-broadcast"] {
        let c = start(&format!("store-{multicast}"), 3, multicast);
        let v = anomaly(&c, 40).unwrap_or_else(|| {
            panic!("{multicast}: 40 concurrent add/interest pairs never diverged")
        });
        // $1000 + $100 then 1%: 1111; 1% then + $100: 1110.
        let balances: Vec<i64> = v["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["accounts"]["acct"].as_i64().unwrap())
            .collect();
        assert!(
            balances.contains(&1111) && balances.contains(&1110),
            "{multicast}: {v}"
        );
        let out = run(&c, &["store", "status"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("DIVERGED"), "{text}");
        drop(c);
    }
    // Total order never diverges on the same workload.
    let c = start("store-total-anomaly", 3, "total-order-multicast");
    assert!(anomaly(&c, 10).is_none());
}
