//! The lock service's fast paths (issue 15, target 5), against real nodes on 127.0.0.1, each
//! node on its own thread and runtime in this process (stopping one drops its runtime and with
//! it every socket, as a kill does):
//! - a dropped guard's `Release` and the next `lock` go out in one write, and a node with
//!   `[locks] handoff = K` hands the lock from the one to the other at most K times in a row,
//!   then gives it back to the algorithm (an exact count);
//! - with hand-offs, the clients of several nodes still exclude each other and every grant's
//!   fencing token is above all earlier ones;
//! - a client killed while holding (its connection dropped) hands the lock to the next client
//!   waiting at its node; a client killed while waiting is skipped;
//! - a node killed while its clients hand the lock around: the lock reaches a client of
//!   another node, with a token above every earlier one.

use distsync_core::NodeId;
use distsync_net::client::{self, Client};
use distsync_net::lock_client::LockClient;
use distsync_net::tokio;
use distsync_net::wire::{ClientReply, ClientRequest, NodeStatus};
use distsync_net::Cluster;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A cluster of in-process nodes.
struct Nodes {
    cluster: Cluster,
    stops: Vec<
        Option<(
            tokio::sync::oneshot::Sender<()>,
            std::thread::JoinHandle<()>,
        )>,
    >,
}

impl Nodes {
    /// `n` nodes running `mutex` (bully election) with `[locks] handoff = handoff`.
    fn start(n: usize, mutex: &str, handoff: u32, heartbeat_ms: u64, timeout_ms: u64) -> Nodes {
        let ports = distsync_net::local::free_ports(n).unwrap();
        let mut text = format!(
            "mutex = \"{mutex}\"\nelection = \"bully\"\nsecret = \"0123456789abcdef0123\"\n\
             [timeouts]\nheartbeat = \"{heartbeat_ms}ms\"\nheartbeat_timeout = \"{timeout_ms}ms\"\n\
             answer_timeout = \"{heartbeat_ms}ms\"\ncoordinator_timeout = \"{timeout_ms}ms\"\n\
             [locks]\nhandoff = {handoff}\n"
        );
        for (i, p) in ports.iter().enumerate() {
            text += &format!("[[node]]\nid = {i}\naddr = \"127.0.0.1:{p}\"\n");
        }
        let cluster = Cluster::from_toml(&text, "lock_handoff test").unwrap();
        let mut stops = Vec::new();
        for i in 0..n {
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let c = cluster.clone();
            let h = std::thread::spawn(move || {
                let rt = distsync_net::node_runtime().unwrap();
                rt.block_on(distsync_net::run(c, NodeId(i as u32), async move {
                    let _ = rx.await;
                }))
                .unwrap();
            });
            stops.push(Some((tx, h)));
        }
        let nodes = Nodes { cluster, stops };
        nodes.settled(&(0..n as u32).collect::<Vec<_>>());
        nodes
    }

    /// Stops node `i` at once: its runtime, links and client connections go.
    fn kill(&mut self, i: usize) {
        if let Some((tx, h)) = self.stops[i].take() {
            drop(tx);
            h.join().unwrap();
        }
    }

    /// Waits (up to a minute: a bound for a broken build, not a measurement) until the nodes
    /// `ids` all answer, agree on one open view of exactly them and hold a lease on it.
    fn settled(&self, ids: &[u32]) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = String::new();
        while Instant::now() < deadline {
            let s = self.statuses(ids);
            let ok = s.iter().all(|st| {
                st.as_ref().is_some_and(|st| {
                    st.open
                        && st.lease
                        && st.members.iter().map(|m| m.0).collect::<Vec<_>>() == ids
                        && st.epoch == s[0].as_ref().and_then(|f| f.epoch)
                })
            });
            if ok {
                return;
            }
            last = format!("{s:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the nodes {ids:?} did not settle on one open view; last statuses: {last}");
    }

    fn statuses(&self, ids: &[u32]) -> Vec<Option<NodeStatus>> {
        let all = rt().block_on(client::statuses(&self.cluster, Duration::from_secs(2)));
        ids.iter()
            .map(|&i| {
                all.iter()
                    .find(|(n, _)| n.0 == i)
                    .and_then(|(_, s)| s.clone().ok())
            })
            .collect()
    }

    fn handoffs(&self, i: u32) -> u64 {
        self.statuses(&[i])[0]
            .as_ref()
            .expect("the node answers")
            .handoffs
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for i in 0..self.stops.len() {
            self.kill(i);
        }
    }
}

/// One thread: a dropped guard and the next `lock` of the same task are one write.
fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn granted(c: &mut Client) -> u64 {
    loop {
        match c.recv().await.unwrap() {
            ClientReply::Granted { token, .. } => return token,
            ClientReply::Released { .. } | ClientReply::Pong => {}
            other => panic!("expected a grant, got {other:?}"),
        }
    }
}

/// Sends `req`, then a `Ping`, and reads up to the `Pong`: the node has handled `req` (it
/// handles a connection's requests in order).
async fn handled(c: &mut Client, req: ClientRequest) {
    c.send(&req).await.unwrap();
    c.send(&ClientRequest::Ping).await.unwrap();
    loop {
        match c.recv().await.unwrap() {
            ClientReply::Pong => return,
            ClientReply::Released { .. } => {}
            other => panic!("expected Pong, got {other:?}"),
        }
    }
}

fn lock(name: &str) -> ClientRequest {
    ClientRequest::Lock { name: name.into() }
}

/// One client of node 0 (central; node 2 leads and coordinates) drops its guard and locks again
/// eight times. With `handoff = 3` the node hands the lock from each release to the next
/// request three times in a row, then gives it back to the coordinator and asks again: grants
/// 2-4 and 6-8 are hand-offs, exactly 6. With `handoff = 0`, none. Tokens grow either way.
#[test]
fn a_dropped_guard_and_the_next_lock_are_handed_on_at_most_handoff_times_in_a_row() {
    for (k, want) in [(3, 6), (0, 0)] {
        // A long heartbeat timeout: the lease must not lapse on a loaded machine.
        let nodes = Nodes::start(3, "central", k, 100, 3000);
        let tokens = rt().block_on(async {
            let mut locks = LockClient::connect_to(&nodes.cluster, NodeId(0))
                .await
                .unwrap();
            let mut tokens = Vec::new();
            for _ in 0..8 {
                let g = locks.lock("ledger").await.unwrap();
                assert_eq!(g.holder(), NodeId(0));
                tokens.push(g.token());
            }
            tokens
        });
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "handoff {k}: tokens {tokens:?}"
        );
        assert_eq!(nodes.handoffs(0), want, "handoff {k}: tokens {tokens:?}");
    }
}

/// Six clients, two per node (node 2's are served by the coordinator's node itself), 25
/// entries each, with `handoff = 4`: never two inside at once, every token above all earlier
/// ones, everybody through, and the nodes did hand the lock on (each client's release and next
/// request go in one write, so a node in the critical section always has the next request at
/// hand).
#[test]
fn with_handoffs_the_clients_of_several_nodes_still_exclude_each_other_and_tokens_grow() {
    let nodes = Nodes::start(3, "central", 4, 50, 1000);
    let inside = Arc::new(AtomicBool::new(false));
    let last = Arc::new(AtomicU64::new(0));
    let entries = Arc::new(AtomicU64::new(0));
    rt().block_on(async {
        let mut tasks = Vec::new();
        for i in 0..6u32 {
            let (cluster, inside, last, entries) = (
                nodes.cluster.clone(),
                inside.clone(),
                last.clone(),
                entries.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut locks = LockClient::connect_to(&cluster, NodeId(i % 3))
                    .await
                    .unwrap();
                for _ in 0..25 {
                    let g = locks.lock("shared").await.unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two clients inside");
                    let before = last.swap(g.token(), Ordering::SeqCst);
                    assert!(g.token() > before, "token {} after {before}", g.token());
                    entries.fetch_add(1, Ordering::SeqCst);
                    // Let the other clients' requests in while this one holds the lock.
                    tokio::task::yield_now().await;
                    inside.store(false, Ordering::SeqCst);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(entries.load(Ordering::SeqCst), 150);
    let total: u64 = (0..3).map(|i| nodes.handoffs(i)).sum();
    assert!(total > 0, "no grant was handed on");
}

/// Client A holds the lock at node 0, B waits there, C waits there too and is killed; A is
/// killed (its connection drops without an unlock): the node hands the lock to B (one hand-off,
/// a larger token), skipping nobody alive. B unlocks; C is gone and nobody waits at node 0, so
/// the lock goes back to the algorithm, and a client of node 1 gets it with a larger token.
#[test]
fn a_client_killed_while_holding_hands_the_lock_to_the_next_client_of_its_node() {
    let nodes = Nodes::start(3, "central", 4, 50, 1000);
    rt().block_on(async {
        let c = &nodes.cluster;
        let mut a = Client::connect(c, NodeId(0)).await.unwrap();
        a.send(&lock("job")).await.unwrap();
        let ta = granted(&mut a).await;
        let mut b = Client::connect(c, NodeId(0)).await.unwrap();
        handled(&mut b, lock("job")).await;
        let mut cc = Client::connect(c, NodeId(0)).await.unwrap();
        handled(&mut cc, lock("job")).await;
        drop(cc); // killed while waiting
        drop(a); // killed while holding
        let tb = granted(&mut b).await;
        assert!(tb > ta, "B's token {tb} after A's {ta}");
        let mut d = Client::connect(c, NodeId(1)).await.unwrap();
        handled(&mut d, lock("job")).await;
        handled(&mut b, ClientRequest::Release { name: "job".into() }).await;
        let td = granted(&mut d).await;
        assert!(td > tb, "D's token {td} after B's {tb}");
    });
    assert_eq!(nodes.handoffs(0), 1);
    assert_eq!(nodes.handoffs(1), 0);
}

/// Node 0's client hands the lock from release to request (raymond: the token stays at node
/// 0); node 0 is killed while the client holds it. The survivors form a new view, the token is
/// regenerated, and a client of node 1 gets the lock with a token above every token node 0
/// granted.
#[test]
fn a_node_killed_while_its_clients_hand_the_lock_around_lets_another_node_take_it() {
    let mut nodes = Nodes::start(3, "raymond", 8, 50, 300);
    let cluster = nodes.cluster.clone();
    let r = rt();
    let (mut a, top) = r.block_on(async {
        let mut a = LockClient::connect_to(&cluster, NodeId(0)).await.unwrap();
        let mut top = 0;
        for _ in 0..5 {
            let g = a.lock("job").await.unwrap();
            assert!(g.token() > top);
            top = g.token();
        }
        (a, top)
    });
    assert!(nodes.handoffs(0) >= 1);
    let held = r.block_on(a.lock("job")).unwrap();
    assert!(held.token() > top);
    let top = held.token();
    nodes.kill(0);
    let tb = r.block_on(async {
        // A bound for a broken build, not a measurement.
        let mut b = LockClient::connect_to(&cluster, NodeId(1)).await.unwrap();
        let g = b
            .lock_timeout("job", Duration::from_secs(60))
            .await
            .expect("node 1's client gets the lock after node 0 died");
        assert_eq!(g.holder(), NodeId(1));
        g.token()
    });
    assert!(tb > top, "token {tb} after node 0's {top}");
    nodes.settled(&[1, 2]);
    drop(held);
}
