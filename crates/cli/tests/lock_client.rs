//! The persistent lock client (`distsync_net::lock_client`, issue 15 target 5) against real
//! node processes on 127.0.0.1: many locks over one connection with growing fencing tokens,
//! mutual exclusion among clients, `try_lock` and `lock_timeout` that give up and withdraw,
//! guards released on drop and explicitly, central's coordinator serving its own clients, a
//! lost lock reported, and `distsync lock --stdin`.

mod lock_common;

use distsync_net::lock_client::{LockClient, LockError};
use distsync_net::tokio;
use distsync_net::Cluster;
use lock_common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn rt() -> tokio::runtime::Runtime {
    distsync_net::runtime().unwrap()
}

/// Four clients, each with one connection to a different node, take the same lock 50 times
/// each: never two inside at once, every entry gets a token above all earlier ones, and the
/// guards (dropped or released) let everybody through.
#[test]
fn many_locks_over_one_connection_exclude_each_other_and_tokens_grow() {
    let _g = lock_guard();
    let c = TestCluster::start("client-many", 3, "raymond", "bully");
    c.settled(Duration::from_secs(20));
    let cluster = Cluster::load(&c.cluster).unwrap();
    let inside = Arc::new(AtomicBool::new(false));
    let last = Arc::new(AtomicU64::new(0));
    let entries = Arc::new(AtomicU64::new(0));
    rt().block_on(async {
        let mut tasks = Vec::new();
        for i in 0..4u32 {
            let (cluster, inside, last, entries) = (
                cluster.clone(),
                inside.clone(),
                last.clone(),
                entries.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let node = distsync_core::NodeId(i % 3);
                let mut locks = LockClient::connect_to(&cluster, node).await.unwrap();
                for k in 0..50 {
                    let g = locks.lock("shared").await.unwrap();
                    assert!(
                        !inside.swap(true, Ordering::SeqCst),
                        "client {i} entry {k}: two holders at once"
                    );
                    let prev = last.swap(g.token(), Ordering::SeqCst);
                    assert!(
                        g.token() > prev,
                        "client {i} entry {k}: token {:#x} after {prev:#x}",
                        g.token()
                    );
                    assert_eq!(g.name(), "shared");
                    assert!(g.lost().is_none());
                    tokio::task::yield_now().await;
                    inside.store(false, Ordering::SeqCst);
                    entries.fetch_add(1, Ordering::SeqCst);
                    if k % 2 == 0 {
                        g.release().await.unwrap();
                    } else {
                        drop(g);
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(entries.load(Ordering::SeqCst), 200);
}

/// A held lock: another client's `try_lock` answers `None` and `lock_timeout` a `Timeout`
/// naming the lock; both withdraw their requests, so when the holder releases, a third request
/// is granted at once and the holder can take the lock again. Two different locks can be held
/// through one connection together; taking one twice is refused with a clear error.
#[test]
fn try_lock_and_timeouts_give_up_and_withdraw() {
    let _g = lock_guard();
    let c = TestCluster::start("client-try", 3, "raymond", "bully");
    c.settled(Duration::from_secs(20));
    let cluster = Cluster::load(&c.cluster).unwrap();
    rt().block_on(async {
        let mut a = LockClient::connect_to(&cluster, distsync_core::NodeId(0))
            .await
            .unwrap();
        let mut b = LockClient::connect_to(&cluster, distsync_core::NodeId(1))
            .await
            .unwrap();
        let held = a.lock("x").await.unwrap();
        let other = a.lock("y").await.unwrap();
        match a.lock("x").await {
            Err(LockError::Invalid(why)) => assert!(why.contains("already held"), "{why}"),
            r => panic!("taking a held lock twice: {:?}", r.map(|g| g.token())),
        }
        assert!(b.try_lock("x").await.unwrap().is_none());
        match b.lock_timeout("x", Duration::from_millis(300)).await {
            Err(e @ LockError::Timeout { .. }) => {
                assert!(e.to_string().contains("\"x\""), "{e}")
            }
            r => panic!("expected a timeout: {:?}", r.map(|g| g.token())),
        }
        let t = held.token();
        drop(held);
        let g = b.lock("x").await.unwrap();
        assert!(g.token() > t);
        assert_eq!(g.holder(), distsync_core::NodeId(1));
        g.release().await.unwrap();
        other.release().await.unwrap();
        let again = a.lock("x").await.unwrap();
        assert!(again.token() > t);
        match a.lock("").await {
            Err(LockError::Invalid(why)) => assert!(why.contains("1 to 128 bytes"), "{why}"),
            r => panic!("empty name: {:?}", r.map(|g| g.token())),
        }
    });
}

/// Central's coordinator node serves its own clients (through a local competitor, see
/// crates/net/src/colocated.rs), and `LockClient::connect` goes there. A guard whose holding
/// node (here the coordinator) is killed -9 reports the lock lost, and the client connects
/// again for the next lock once that guard is dropped.
#[test]
fn central_coordinator_serves_its_clients_and_a_dead_holder_is_reported() {
    let _g = lock_guard();
    let c = TestCluster::start("client-central", 3, "central", "bully");
    let leader = c.settled(Duration::from_secs(20)) as u32;
    let cluster = Cluster::load(&c.cluster).unwrap();
    rt().block_on(async {
        let mut locks = LockClient::connect(&cluster).await.unwrap();
        let g = locks.lock("c").await.unwrap();
        let holder = g.holder();
        assert_eq!(
            holder.0, leader,
            "connected to the coordinator, which granted"
        );
        assert_eq!(locks.node().await, Some(holder));
        c.kill9(holder.0 as usize);
        let mut waited = 0;
        while g.lost().is_none() {
            assert!(waited < 200, "the guard never reported the lost lock");
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += 1;
        }
        let why = g.lost().unwrap();
        assert!(why.contains("connection"), "{why}");
        drop(g);
        // The next request connects to a live node (retrying while the view changes).
        let mut tries = 0;
        let g = loop {
            match locks.lock_timeout("c", Duration::from_secs(5)).await {
                Ok(g) => break g,
                Err(e) => {
                    tries += 1;
                    assert!(tries < 20, "no grant after the holder died: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        assert_ne!(g.holder(), holder);
    });
}

/// `distsync lock --stdin` takes and releases locks by lines, one answer line each.
#[test]
fn lock_stdin_serves_lines() {
    let _g = lock_guard();
    let c = TestCluster::start("client-stdin", 3, "raymond", "bully");
    c.settled(Duration::from_secs(20));
    let mut child = c
        .client_bin()
        .args(["lock", "--stdin", "--cluster"])
        .arg(&c.cluster)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> String {
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
        let mut answer = String::new();
        output.read_line(&mut answer).unwrap();
        answer.trim_end().to_string()
    };
    let mut last = 0u64;
    for _ in 0..20 {
        let a = ask("lock ledger");
        let w: Vec<&str> = a.split(' ').collect();
        assert_eq!(w[..2], ["granted", "ledger"], "{a}");
        let token: u64 = w[2].parse().unwrap();
        assert!(token > last, "{a} after {last}");
        last = token;
        assert_eq!(ask("unlock ledger"), "released ledger");
    }
    assert!(ask("lock a").starts_with("granted a "));
    // Another client cannot have it meanwhile.
    let other = c
        .client_bin()
        .args(["lock", "-n", "--cluster"])
        .arg(&c.cluster)
        .args(["a", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(124), "{other:?}");
    assert_eq!(
        ask("trylock a"),
        "error a: already held through this connection"
    );
    assert_eq!(ask("unlock a"), "released a");
    assert!(ask("trylock a").starts_with("granted a "));
    assert_eq!(ask("unlock nothing"), "error nothing: not held");
    let bad = ask("frobnicate x");
    assert!(
        bad.starts_with("error: line 46: unknown command \"frobnicate\""),
        "{bad}"
    );
    drop(input);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
