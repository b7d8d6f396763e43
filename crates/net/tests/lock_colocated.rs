//! Central's coordinator node serves its own clients (`distsync_net::colocated`: beside the
//! coordinator it runs one more central client, whose messages to the coordinator stay inside
//! the node), against real nodes on 127.0.0.1, each node on its own thread and runtime in this
//! process (stopping one drops its runtime and every socket, as a kill does):
//! - the clients of the coordinator's node and of the other nodes exclude each other, and every
//!   grant's fencing token is above all earlier ones (no hand-offs: every grant is the
//!   coordinator's);
//! - `LockClient::connect` goes to the coordinator's node, which grants itself;
//! - the coordinator killed while its own client holds: another node's client gets the lock
//!   with a larger token;
//! - a new leader while the old coordinator's client holds: the old coordinator, now an
//!   ordinary competitor, keeps the hold through the view change (its client is not revoked),
//!   and the next grant, at another node, has a larger token of the new view;
//! - a view change the coordinator leads (another node died) keeps its own client's hold.

use distsync_core::NodeId;
use distsync_net::client::{self, Client};
use distsync_net::lock_client::LockClient;
use distsync_net::tokio;
use distsync_net::wire::{ClientReply, ClientRequest, NodeStatus};
use distsync_net::Cluster;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Stop = (
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
);

/// A cluster of in-process nodes, any of which may be down.
struct Nodes {
    cluster: Cluster,
    stops: Vec<Option<Stop>>,
}

impl Nodes {
    /// A central cluster of `n` nodes (bully election, no hand-offs), of which `up` run.
    fn start(n: usize, up: &[u32], heartbeat_ms: u64, timeout_ms: u64) -> Nodes {
        let ports = distsync_net::local::free_ports(n).unwrap();
        let mut text = format!(
            "mutex = \"central\"\nelection = \"bully\"\nsecret = \"0123456789abcdef0123\"\n\
             [timeouts]\nheartbeat = \"{heartbeat_ms}ms\"\nheartbeat_timeout = \"{timeout_ms}ms\"\n\
             answer_timeout = \"{heartbeat_ms}ms\"\ncoordinator_timeout = \"{timeout_ms}ms\"\n"
        );
        for (i, p) in ports.iter().enumerate() {
            text += &format!("[[node]]\nid = {i}\naddr = \"127.0.0.1:{p}\"\n");
        }
        let cluster = Cluster::from_toml(&text, "lock_colocated test").unwrap();
        let mut nodes = Nodes {
            cluster,
            stops: (0..n).map(|_| None).collect(),
        };
        for &i in up {
            nodes.up(i);
        }
        nodes.settled(up);
        nodes
    }

    /// Starts node `i`.
    fn up(&mut self, i: u32) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let c = self.cluster.clone();
        let h = std::thread::spawn(move || {
            let rt = distsync_net::node_runtime().unwrap();
            rt.block_on(distsync_net::run(c, NodeId(i), async move {
                let _ = rx.await;
            }))
            .unwrap();
        });
        self.stops[i as usize] = Some((tx, h));
    }

    /// Stops node `i` at once: its runtime, links and client connections go.
    fn kill(&mut self, i: usize) {
        if let Some((tx, h)) = self.stops[i].take() {
            drop(tx);
            h.join().unwrap();
        }
    }

    /// Waits (up to a minute: a bound for a broken build, not a measurement) until the nodes
    /// `ids` all answer, agree on one open view of exactly them and hold a lease on it; returns
    /// that view's status at the first of them.
    fn settled(&self, ids: &[u32]) -> NodeStatus {
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
                return s[0].clone().expect("answered");
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
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for i in 0..self.stops.len() {
            self.kill(i);
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn lock(name: &str) -> ClientRequest {
    ClientRequest::Lock { name: name.into() }
}

/// The next grant's (token, holder); panics on anything but a grant (a revocation included).
async fn granted(c: &mut Client) -> (u64, NodeId) {
    loop {
        match c.recv().await.unwrap() {
            ClientReply::Granted { token, holder, .. } => return (token, holder),
            ClientReply::Released { .. } | ClientReply::Pong => {}
            other => panic!("expected a grant, got {other:?}"),
        }
    }
}

/// Sends `req`, then a `Ping`, and reads up to the `Pong`: the node has handled `req` (it
/// handles a connection's requests in order). Anything else on the way (a grant, a
/// revocation) fails the test.
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

/// Six clients, two per node (node 2 leads and coordinates), 30 entries each, every grant through
/// the coordinator: never two inside at once, every token above all earlier ones, everybody
/// through, and the coordinator's clients are granted by the coordinator's node itself.
#[test]
fn the_coordinators_clients_and_the_others_exclude_each_other_and_tokens_grow() {
    let nodes = Nodes::start(3, &[0, 1, 2], 50, 1000);
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
                let node = NodeId(i % 3);
                let mut locks = LockClient::connect_to(&cluster, node).await.unwrap();
                for _ in 0..30 {
                    let g = locks.lock("shared").await.unwrap();
                    assert_eq!(g.holder(), node, "granted where it asked, no redirect");
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
    assert_eq!(entries.load(Ordering::SeqCst), 180);
    let s = nodes.statuses(&[0, 1, 2]);
    assert!(
        s.iter().all(|s| s.as_ref().unwrap().handoffs == 0),
        "every grant went through the algorithm: {s:?}"
    );
}

/// `LockClient::connect` on a central cluster goes to the leader, the coordinator, which grants
/// its own client.
#[test]
fn connect_goes_to_the_coordinator_which_grants_itself() {
    let nodes = Nodes::start(3, &[0, 1, 2], 50, 1000);
    rt().block_on(async {
        for _ in 0..3 {
            let mut locks = LockClient::connect(&nodes.cluster).await.unwrap();
            assert_eq!(locks.node().await, Some(NodeId(2)));
            let g = locks.lock("x").await.unwrap();
            assert_eq!(g.holder(), NodeId(2));
        }
    });
}

/// The coordinator's own client holds the lock and a client of node 0 waits; the coordinator
/// is killed. The survivors' view (node 1 leads and coordinates) gives the lock to node 0's
/// client with a token above the dead holder's.
#[test]
fn the_coordinator_killed_while_its_client_holds_lets_another_node_take_the_lock() {
    let mut nodes = Nodes::start(3, &[0, 1, 2], 50, 300);
    let r = rt();
    let c = nodes.cluster.clone();
    let (holder_token, mut waiter, _holder) = r.block_on(async {
        let mut h = Client::connect(&c, NodeId(2)).await.unwrap();
        h.send(&lock("job")).await.unwrap();
        let (t, at) = granted(&mut h).await;
        assert_eq!(at, NodeId(2));
        let mut w = Client::connect(&c, NodeId(0)).await.unwrap();
        handled(&mut w, lock("job")).await;
        (t, w, h)
    });
    nodes.kill(2);
    let (t, at) = r.block_on(granted(&mut waiter));
    assert_eq!(at, NodeId(0));
    assert!(
        t > holder_token,
        "token {t} after the dead holder's {holder_token}"
    );
    nodes.settled(&[0, 1]);
}

/// Nodes 0 and 1 run (node 1 leads and coordinates); node 1's own client takes the lock and node
/// 0's waits. Node 2 comes up and the bully makes it leader: in the new view node 1 is an
/// ordinary competitor and keeps its client's hold (re-acquired from coordinator 2; the client
/// hears no revocation). When it releases, node 0's client is granted with a token of the new
/// view, above the first.
#[test]
fn a_hold_at_the_old_coordinator_survives_a_new_leader() {
    let mut nodes = Nodes::start(3, &[0, 1], 50, 600);
    let r = rt();
    let c = nodes.cluster.clone();
    let (t1, mut holder, mut waiter) = r.block_on(async {
        let mut h = Client::connect(&c, NodeId(1)).await.unwrap();
        h.send(&lock("job")).await.unwrap();
        let (t, at) = granted(&mut h).await;
        assert_eq!(
            at,
            NodeId(1),
            "the coordinator's node granted its own client"
        );
        let mut w = Client::connect(&c, NodeId(0)).await.unwrap();
        handled(&mut w, lock("job")).await;
        (t, h, w)
    });
    nodes.up(2);
    let view = nodes.settled(&[0, 1, 2]);
    assert_eq!(view.leader, Some(NodeId(2)));
    r.block_on(async {
        // No revocation reached the holder (it was sent, if at all, at the commit, before the
        // view opened; `handled` fails on one).
        handled(&mut holder, ClientRequest::Release { name: "job".into() }).await;
        let (t2, at) = granted(&mut waiter).await;
        assert_eq!(at, NodeId(0));
        assert!(t2 > t1, "token {t2} after {t1}");
        assert_eq!(
            t2 >> 32,
            view.epoch.unwrap() as u64,
            "a token of the new view"
        );
    });
}

/// The coordinator's own client holds the lock and a client of node 1 waits; node 0 dies. The
/// view changes with the same leader: the coordinator keeps its client's hold (re-acquired by
/// its local competitor; no revocation), and node 1's client is granted after it, with a token
/// of the new view.
#[test]
fn a_hold_at_the_coordinator_survives_a_view_change_it_leads() {
    let mut nodes = Nodes::start(3, &[0, 1, 2], 50, 300);
    let r = rt();
    let c = nodes.cluster.clone();
    let (t1, mut holder, mut waiter) = r.block_on(async {
        let mut h = Client::connect(&c, NodeId(2)).await.unwrap();
        h.send(&lock("job")).await.unwrap();
        let (t, at) = granted(&mut h).await;
        assert_eq!(at, NodeId(2));
        let mut w = Client::connect(&c, NodeId(1)).await.unwrap();
        handled(&mut w, lock("job")).await;
        (t, h, w)
    });
    nodes.kill(0);
    let view = nodes.settled(&[1, 2]);
    assert_eq!(view.leader, Some(NodeId(2)));
    r.block_on(async {
        handled(&mut holder, ClientRequest::Release { name: "job".into() }).await;
        let (t2, at) = granted(&mut waiter).await;
        assert_eq!(at, NodeId(1));
        assert!(t2 > t1, "token {t2} after {t1}");
        assert_eq!(t2 >> 32, view.epoch.unwrap() as u64);
    });
}
