//! The node's unit tests, and nodes in one process, with the links replaced by queues the test
//! drains by hand and the clock paused: the view changes and fencing tokens, deterministically.

use super::*;
use crate::config::Cluster;
use crate::wire::ClientRequest;

#[test]
fn epochs_and_tokens_increase() {
    let e1 = next_epoch(0, NodeId(4)).unwrap();
    let e2 = next_epoch(e1, NodeId(3)).unwrap();
    assert!(e2 > e1);
    assert_eq!(e1 & 1023, 4);
    assert_eq!(e2 & 1023, 3);
    // Two leaders in the same round number their views differently.
    assert_ne!(next_epoch(e1, NodeId(1)), next_epoch(e1, NodeId(2)));
    let t1 = next_token(0, e1).unwrap();
    let t2 = next_token(t1, e1).unwrap();
    assert!(t2 > t1);
    // The first grant of a later view beats every grant of an earlier one.
    let t3 = next_token(t2 + 1000, e2).unwrap();
    assert!(t3 > t2 + 1000 && t3 >> 32 == e2 as u64);
}

struct Harness {
    nodes: Vec<Node>,
    rx: Vec<Vec<Option<mpsc::Receiver<PeerMsg>>>>,
    up: Vec<bool>,
    /// Paused nodes (SIGSTOP): they run nothing, and what is sent to them waits.
    paused: Vec<bool>,
    /// Pairs of nodes that cannot reach each other (a partition), both directions.
    cut: Vec<(usize, usize)>,
    clients: HashMap<u64, mpsc::Receiver<ClientReply>>,
    /// Every view-change message delivered: (from, to, message).
    log: Vec<(usize, usize, PeerMsg)>,
    /// Nodes that crashed (`crash`) and are not restarted yet. What a crashed node had
    /// queued on its links may have been written before it crashed: the worst case is
    /// assumed, it is delivered.
    crashed: Vec<bool>,
}

/// The panic a node's `stop` raises in these tests: the node crashes where it stands.
const CRASHED: &str = "crashed: cannot store the epoch mark";

fn crash() -> ! {
    std::panic::panic_any(CRASHED)
}

const FILE: &str = r#"
mutex = "central"
election = "bully"
secret = "0123456789abcdef0123"
[timeouts]
heartbeat = "50ms"
heartbeat_timeout = "300ms"
answer_timeout = "50ms"
coordinator_timeout = "500ms"
[[node]]
id = 0
addr = "127.0.0.1:1"
[[node]]
id = 1
addr = "127.0.0.1:2"
[[node]]
id = 2
addr = "127.0.0.1:3"
"#;

fn five_nodes(mutex: &str) -> String {
    let mut text = FILE.replace("\"central\"", &format!("{mutex:?}"));
    text += "[[node]]\nid = 3\naddr = \"127.0.0.1:4\"\n[[node]]\nid = 4\naddr = \"127.0.0.1:5\"\n";
    text
}

impl Harness {
    fn new() -> Harness {
        Harness::with(FILE)
    }

    fn with(file: &str) -> Harness {
        let cluster = Arc::new(Cluster::from_toml(file, "test").unwrap());
        let n = cluster.peers.len();
        let mut nodes = Vec::new();
        let mut rx: Vec<Vec<Option<mpsc::Receiver<PeerMsg>>>> = Vec::new();
        for i in 0..n {
            let mut node = Node::new(cluster.clone(), NodeId(i as u32));
            let mut row = Vec::new();
            for j in 0..n {
                if i == j {
                    row.push(None);
                } else {
                    let (tx, r) = mpsc::channel(LINK_QUEUE);
                    node.links.insert(NodeId(j as u32), tx);
                    row.push(Some(r));
                }
            }
            nodes.push(node);
            rx.push(row);
        }
        for node in &mut nodes {
            node.start();
        }
        Harness {
            nodes,
            rx,
            up: vec![true; n],
            paused: vec![false; n],
            cut: Vec::new(),
            clients: HashMap::new(),
            log: Vec::new(),
            crashed: vec![false; n],
        }
    }

    /// Runs `f` on node `i`; if the node crashes in it (`crash`), it is down from then on:
    /// what it sent before is on its links, the rest of its handler never ran.
    fn on(&mut self, i: usize, f: impl FnOnce(&mut Node)) {
        let node = &mut self.nodes[i];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(node)));
        if let Err(p) = r {
            if p.downcast_ref::<&str>() != Some(&CRASHED) {
                std::panic::resume_unwind(p);
            }
            self.up[i] = false;
            self.crashed[i] = true;
        }
    }

    /// Gives every node an epoch mark in `dir`, as `run` does with a cluster's state
    /// directory (before `start`, which is why the harness's nodes start again here).
    fn with_marks(file: &str, dir: &std::path::Path) -> Harness {
        let mut h = Harness::with(file);
        for node in &mut h.nodes {
            let store = crate::persist::EpochStore::open(dir, node.id).unwrap();
            node.epochs.attach(store);
            // Every raise waits for the disk: these tests follow each store.
            node.epochs.ahead = 0;
        }
        h
    }

    /// Node `i` starts again, with its mark read back from `dir`: new links, and what was
    /// sent to it while it was down is lost.
    fn restart(&mut self, i: usize, dir: &std::path::Path) {
        let cluster = self.nodes[i].cluster.clone();
        let id = NodeId(i as u32);
        let mut node = Node::new(cluster, id);
        let store = crate::persist::EpochStore::open(dir, id).unwrap();
        node.epochs.attach(store);
        node.epochs.ahead = 0;
        for j in 0..self.nodes.len() {
            if j == i {
                continue;
            }
            let (tx, r) = mpsc::channel(LINK_QUEUE);
            node.links.insert(NodeId(j as u32), tx);
            self.rx[i][j] = Some(r);
            if let Some(r) = self.rx[j][i].as_mut() {
                while r.try_recv().is_ok() {}
            }
        }
        node.start();
        self.nodes[i] = node;
        self.up[i] = true;
        self.crashed[i] = false;
    }

    fn linked(&self, i: usize, j: usize) -> bool {
        self.up[i] && self.up[j] && !self.cut.contains(&(i, j)) && !self.cut.contains(&(j, i))
    }

    /// Cuts every link between `a` and `b`.
    fn partition(&mut self, a: &[usize], b: &[usize]) {
        for &i in a {
            for &j in b {
                self.cut.push((i, j));
            }
        }
    }

    /// Delivers every queued message between live nodes until none is left.
    fn deliver(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.nodes.len() {
                for j in 0..self.nodes.len() {
                    let linked = self.linked(i, j)
                        || (self.crashed[i]
                            && self.up[j]
                            && !self.cut.contains(&(i, j))
                            && !self.cut.contains(&(j, i)));
                    if self.paused[i] || self.paused[j] {
                        continue;
                    }
                    let Some(r) = self.rx[i][j].as_mut() else {
                        continue;
                    };
                    let mut msgs = Vec::new();
                    while let Ok(msg) = r.try_recv() {
                        msgs.push(msg);
                    }
                    for msg in msgs {
                        moved = true;
                        if linked && self.up[j] {
                            if !matches!(
                                msg,
                                PeerMsg::Ping
                                    | PeerMsg::Election(_)
                                    | PeerMsg::Mutex { .. }
                                    | PeerMsg::Renew { .. }
                                    | PeerMsg::Renewed { .. }
                                    | PeerMsg::Confirm { .. }
                                    | PeerMsg::Confirmed { .. }
                                    | PeerMsg::Mark { .. }
                            ) {
                                self.log.push((i, j, msg.clone()));
                            }
                            self.on(j, |n| n.on_event(Event::Peer(NodeId(i as u32), msg)));
                        }
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Lets `ms` milliseconds pass in 10ms steps: link pings between live nodes, ticks,
    /// timers, deliveries.
    async fn run(&mut self, ms: u64) {
        for _ in 0..ms / 10 {
            tokio::time::advance(Duration::from_millis(10)).await;
            for i in 0..self.nodes.len() {
                // A node that sits out (its mark cannot be stored) sends no ping: its links
                // see `epochs.silent`.
                let silent = self.nodes[i]
                    .epochs
                    .silent
                    .load(std::sync::atomic::Ordering::Relaxed);
                for j in 0..self.nodes.len() {
                    if i != j && self.linked(i, j) && !self.paused[i] && !self.paused[j] && !silent
                    {
                        self.on(j, |n| {
                            n.on_event(Event::Peer(NodeId(i as u32), PeerMsg::Ping))
                        });
                    }
                }
            }
            for i in 0..self.nodes.len() {
                if self.up[i] && !self.paused[i] {
                    self.on(i, |n| {
                        n.on_timers();
                        n.on_tick();
                    });
                }
            }
            self.deliver();
        }
    }

    fn client(&mut self, node: usize, c: u64, req: ClientRequest) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.clients.entry(c) {
            let (tx, rx) = mpsc::channel(64);
            e.insert(rx);
            self.nodes[node].on_event(Event::ClientOpen(c, tx));
        }
        self.nodes[node].on_event(Event::Client(c, req));
        self.deliver();
    }

    fn replies(&mut self, c: u64) -> Vec<ClientReply> {
        let mut out = Vec::new();
        while let Ok(r) = self.clients.get_mut(&c).unwrap().try_recv() {
            out.push(r);
        }
        out
    }

    fn open_everywhere(&self, leader: u32, members: usize) -> bool {
        self.nodes
            .iter()
            .zip(&self.up)
            .filter(|(_, &u)| u)
            .all(|(n, _)| {
                let s = n.status();
                s.leader == Some(NodeId(leader)) && s.open && s.members.len() == members
            })
    }
}

fn lock() -> ClientRequest {
    ClientRequest::Lock { name: "x".into() }
}

fn granted(replies: &[ClientReply]) -> Option<u64> {
    replies.iter().find_map(|r| match r {
        ClientReply::Granted { token, .. } => Some(*token),
        _ => None,
    })
}

#[tokio::test(start_paused = true)]
async fn a_holder_keeps_its_lock_across_a_coordinator_crash_and_tokens_grow() {
    let mut h = Harness::new();
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    // Node 0's client gets the lock; the coordinator's own client (through its local
    // competitor, `colocated`) and node 1's client wait.
    h.client(0, 1, lock());
    let t1 = granted(&h.replies(1)).expect("granted");
    h.client(2, 9, lock());
    assert_eq!(
        granted(&h.replies(9)),
        None,
        "the coordinator's client waits"
    );
    h.client(1, 3, lock());
    assert_eq!(granted(&h.replies(3)), None, "node 1's client waits");
    // The coordinator crashes.
    h.up[2] = false;
    h.run(2000).await;
    assert!(
        h.open_everywhere(1, 2),
        "node 1 leads a view of the two live nodes"
    );
    assert!(h.replies(1).is_empty(), "the holder was not revoked");
    // Node 1 now coordinates, and its waiting client stays (no redirect).
    assert!(h.replies(3).is_empty(), "node 1's client still waits");
    // The holder releases: node 1's client is served with a token of the new view.
    h.client(0, 1, ClientRequest::Unlock { name: "x".into() });
    h.run(100).await;
    let t2 = granted(&h.replies(3)).expect("the waiting client is served");
    assert!(t2 > t1, "{t2} > {t1}");
    let epoch = h.nodes[1].status().epoch.unwrap();
    assert_eq!(
        t2 >> 32,
        epoch as u64,
        "the token carries the new view's epoch"
    );
}

#[tokio::test(start_paused = true)]
async fn a_holder_that_missed_a_view_is_revoked_when_it_comes_back() {
    let mut h = Harness::new();
    h.run(1000).await;
    h.client(0, 1, lock());
    let t1 = granted(&h.replies(1)).expect("granted");
    // Node 0 is cut off: the others take it for crashed and form a view without it.
    h.up[0] = false;
    h.run(1500).await;
    assert!(h.nodes[2].status().members == vec![NodeId(1), NodeId(2)]);
    h.client(1, 2, lock());
    let t2 = granted(&h.replies(2)).expect("the lock is handed on");
    assert!(t2 > t1);
    // Node 0 comes back: its hold is stale and revoked, the current holder keeps the lock.
    h.up[0] = true;
    h.run(1500).await;
    assert!(h.open_everywhere(2, 3));
    assert!(
        h.replies(1)
            .iter()
            .any(|r| matches!(r, ClientReply::Revoked { .. })),
        "the stale holder is told"
    );
    assert!(h.replies(2).is_empty(), "the current holder keeps the lock");
    assert_eq!(h.nodes[1].status().holding, vec!["x".to_string()]);
    assert!(h.nodes[0].status().holding.is_empty());
}

/// A partition: each side elects its own highest id and forms its own view, but only the
/// majority's view grants (its leader alone gets a lease). The minority's client waits — also
/// after the partition heals, until the two views have merged — and in the end one leader,
/// one view and one holder remain. (Before the majority rule both sides granted, and a client
/// reaching the minority's node after the heal was granted there while the majority's holder
/// still held: two `elect` leaders at once in the Jepsen-style suite.)
#[tokio::test(start_paused = true)]
async fn a_partition_gives_bully_two_leaders_but_only_the_majority_side_grants() {
    let mut h = Harness::with(&five_nodes("ricart-agrawala"));
    h.run(1000).await;
    assert!(h.open_everywhere(4, 5));
    h.partition(&[0, 1, 2], &[3, 4]);
    h.run(2000).await;
    let leaders: Vec<Option<NodeId>> = h.nodes.iter().map(|n| n.status().leader).collect();
    assert_eq!(
        leaders,
        [2, 2, 2, 4, 4].map(|l| Some(NodeId(l))).to_vec(),
        "two leaders"
    );
    h.client(0, 1, lock());
    h.client(3, 2, lock());
    h.run(100).await;
    let t1 = granted(&h.replies(1)).expect("the majority side grants");
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "the minority side grants nothing"
    );
    h.run(2000).await;
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "not while the partition lasts"
    );
    // Heal: one leader, one view, one holder; the majority's holder keeps the lock.
    h.cut.clear();
    h.run(3000).await;
    assert!(h.open_everywhere(4, 5), "one leader and one view again");
    // The merged view may keep client 1's hold, or revoke it (the minority's view, which
    // held nothing, was the later one) and grant client 2 a later token; never both hold.
    let revoked = |r: &Vec<ClientReply>| r.iter().any(|r| matches!(r, ClientReply::Revoked { .. }));
    let (r1, r2) = (h.replies(1), h.replies(2));
    let t2 = granted(&r2);
    assert!(
        revoked(&r1) || t2.is_none(),
        "client 2 was granted while client 1 held: {r1:?} {r2:?}"
    );
    assert!(t2.is_none_or(|t2| t2 > t1), "{t2:?} > {t1}");
    let holding: usize = h.nodes.iter().map(|n| n.status().holding.len()).sum();
    assert_eq!(holding, 1);
}

/// Five ricart-agrawala nodes in one view (leader 4), split {0,1,2} | {3,4}, and client 1
/// granted lock `x` through node 0 on the majority side: the harness and client 1's token.
async fn split_with_a_majority_grant() -> (Harness, u64) {
    let mut h = Harness::with(&five_nodes("ricart-agrawala"));
    h.run(1000).await;
    assert!(h.open_everywhere(4, 5));
    h.partition(&[0, 1, 2], &[3, 4]);
    h.run(2000).await;
    h.client(0, 1, lock());
    h.run(100).await;
    let t1 = granted(&h.replies(1)).expect("the majority side grants client 1");
    (h, t1)
}

/// A view change that drops a hold of its own leader's view waits for that leader's former
/// lease. Five nodes split {0,1,2} / {3,4}; client 1 holds through node 0 in the majority's
/// view (leader 2), client 2 waits through node 1. The split heals and leader 2 changes view
/// with everyone: nodes 3 and 4 were last in the minority's view, whose epoch is the later one,
/// so client 1's hold is dropped (revoked) and the lock is granted to client 2 in the new view.
/// Node 0's lease came from leader 2 and outlasts 2's freeze: client 2 must not be granted
/// before it has run out (client 1's own lease clock, shorter still, stops its command first).
/// (Without the wait the new view opens at once, while node 0's lease still runs.)
#[tokio::test(start_paused = true)]
async fn a_change_that_drops_its_own_views_hold_waits_for_its_former_lease() {
    let (mut h, t1) = split_with_a_majority_grant().await;
    h.client(1, 2, lock());
    h.run(50).await;
    assert_eq!(granted(&h.replies(2)), None, "client 2 waits");
    let mut lease0 = h.nodes[0].leases.until.expect("node 0 holds a lease");
    let old_view = h.nodes[0].status().epoch;
    h.cut.clear();
    h.nodes[2].begin_change((0..5).map(NodeId).collect());
    let mut revoked = false;
    for _ in 0..500 {
        // Node 0's lease on the view client 1 was granted in (not on the views after it).
        if let Some(u) = h.nodes[0].leases.until {
            if h.nodes[0].status().epoch == old_view {
                lease0 = lease0.max(u);
            }
        }
        h.run(10).await;
        revoked |= h
            .replies(1)
            .iter()
            .any(|r| matches!(r, ClientReply::Revoked { .. }));
        if let Some(t2) = granted(&h.replies(2)) {
            let now = tokio::time::Instant::now();
            assert!(
                now >= lease0,
                "client 2 was granted {:?} before node 0's lease (client 1's) ran out: {:?}",
                lease0 - now,
                h.nodes.iter().map(|n| n.status()).collect::<Vec<_>>()
            );
            assert!(revoked, "client 1 was told first");
            assert!(t2 > t1);
            return;
        }
    }
    let st: Vec<_> = h.nodes.iter().map(|n| n.status()).collect();
    panic!("client 2 was never granted (client 1 revoked: {revoked}): {st:?}");
}

/// A view led by a new leader waits for the leases its members gave as leaders of their
/// earlier views. Five nodes split {0,1,2} / {3,4}; client 1 holds through node 0 in the
/// majority's view (leader 2), client 2 waits through node 3 in the minority's (leader 4, which
/// grants nothing). The split heals between node 2 and nodes 3 and 4 first: node 4 leads a view
/// of {2,3,4}, a majority, so it grants, and node 0 is not in it, while its lease from leader 2
/// still runs. Client 2 must not be granted before that lease has run out. (Node 2 answered
/// node 4's Prepare with no wait: it counted the leases it had confirmed to other leaders, none,
/// and not those it had given as the leader. The Jepsen-style suite saw an `elect` leader's
/// command run 20 and 214 ms into its successor's, raymond and lamport-mutex, a split healing.)
#[tokio::test(start_paused = true)]
async fn a_new_leaders_view_waits_for_the_leases_a_former_leader_among_its_members_gave() {
    let (mut h, t1) = split_with_a_majority_grant().await;
    h.client(3, 2, lock());
    h.run(50).await;
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "client 2 waits on the minority side"
    );
    let old_view = h.nodes[0].status().epoch;
    let mut lease0 = h.nodes[0].leases.until.expect("node 0 holds a lease");
    h.cut
        .retain(|&(a, b)| !matches!((a, b), (2, 3) | (2, 4) | (3, 2) | (4, 2)));
    for _ in 0..500 {
        // Node 0's lease on the view client 1 was granted in.
        if let Some(u) = h.nodes[0].leases.until {
            if h.nodes[0].status().epoch == old_view {
                lease0 = lease0.max(u);
            }
        }
        h.run(10).await;
        if let Some(t2) = granted(&h.replies(2)) {
            let now = tokio::time::Instant::now();
            assert!(
                now >= lease0,
                "client 2 was granted {:?} before node 0's lease (client 1's) ran out: {:?}",
                lease0 - now,
                h.nodes.iter().map(|n| n.status()).collect::<Vec<_>>()
            );
            assert!(t2 > t1);
            assert_eq!(
                h.nodes[3].status().members,
                [2, 3, 4].map(NodeId).to_vec(),
                "granted in the view of {{2,3,4}}"
            );
            return;
        }
    }
    let st: Vec<_> = h.nodes.iter().map(|n| n.status()).collect();
    panic!("client 2 was never granted: {st:?}");
}

/// The issue's reproduction, deterministically: client 1 holds the lock through node 0 and
/// client 2 waits there; node 0 is paused (it runs nothing, what is sent to it waits); the
/// others form a view without it and client 3 is granted through node 1; node 0 resumes
/// and the first thing it handles is client 1's unlock. Its view is stale: it must not
/// hand the lock to client 2 while client 3 holds it. (Without leases it does, at once,
/// with a token of the old view.)
#[tokio::test(start_paused = true)]
async fn a_paused_node_does_not_grant_in_its_stale_view_when_it_resumes() {
    let mut h = Harness::with(&five_nodes("suzuki-kasami"));
    h.run(1000).await;
    assert!(h.open_everywhere(4, 5));
    h.client(0, 1, lock());
    let t1 = granted(&h.replies(1)).expect("client 1 holds through node 0");
    h.client(0, 2, lock());
    assert_eq!(granted(&h.replies(2)), None, "client 2 waits at node 0");
    h.paused[0] = true;
    h.run(1500).await;
    assert_eq!(
        h.nodes[4].status().members,
        [1, 2, 3, 4].map(NodeId).to_vec(),
        "the others left node 0 out"
    );
    h.client(1, 3, lock());
    let t3 = granted(&h.replies(3)).expect("client 3 is granted in the new view");
    assert!(t3 > t1);
    // Node 0 resumes; its first event is client 1's unlock.
    h.paused[0] = false;
    h.nodes[0].on_event(Event::Client(1, ClientRequest::Unlock { name: "x".into() }));
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "node 0 granted client 2 in its stale view while client 3 holds the lock"
    );
    h.run(1500).await;
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "client 3 still holds the lock"
    );
    assert!(h.open_everywhere(4, 5), "node 0 rejoined");
    h.client(1, 3, ClientRequest::Unlock { name: "x".into() });
    h.run(200).await;
    let t2 = granted(&h.replies(2)).expect("client 2 is served after client 3");
    assert!(t2 > t3, "{t2} > {t3}");
}

/// A forged or corrupt epoch at the top of the range must not wrap the numbering: the
/// node refuses to go above it instead of starting again from round 0.
#[test]
fn epochs_and_tokens_do_not_wrap() {
    assert_eq!(next_epoch(u32::MAX, NodeId(3)), None);
    assert_eq!(next_epoch(((1 << 22) - 1) << 10, NodeId(3)), None);
    assert!(next_epoch(((1 << 22) - 2) << 10, NodeId(3)).is_some());
    assert_eq!(next_token(u64::MAX, 5), None);
    assert_eq!(next_token((5 << 32) | 0xffff_ffff, 5), None);
}

/// The same with the *leader* paused: its own lease lapses too (it needs every member's
/// confirmation), so when it resumes it grants nothing in its old view while the new
/// leader's view serves someone else.
#[tokio::test(start_paused = true)]
async fn a_paused_leader_does_not_grant_in_its_stale_view_when_it_resumes() {
    let mut h = Harness::with(&five_nodes("suzuki-kasami"));
    h.run(1000).await;
    assert!(h.open_everywhere(4, 5));
    h.client(4, 1, lock());
    let t1 = granted(&h.replies(1)).expect("client 1 holds through the leader");
    h.client(4, 2, lock());
    assert_eq!(granted(&h.replies(2)), None);
    h.paused[4] = true;
    h.run(3000).await;
    assert_eq!(
        h.nodes[0].status().leader,
        Some(NodeId(3)),
        "the others elected node 3"
    );
    h.client(1, 3, lock());
    let t3 = granted(&h.replies(3)).expect("client 3 is granted in the new view");
    assert!(t3 > t1);
    h.paused[4] = false;
    h.nodes[4].on_event(Event::Client(1, ClientRequest::Unlock { name: "x".into() }));
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "the old leader granted client 2 in its stale view while client 3 holds the lock"
    );
    h.run(3000).await;
    assert_eq!(
        granted(&h.replies(2)),
        None,
        "client 3 still holds the lock"
    );
}

/// A view change completes its leases in the same exchange of messages, with no tick in
/// between: the members ask for their lease when they commit, the leader holds those
/// requests until its own Confirm round (sent right after its Commit) is answered, then
/// answers them. So the view serves clients at once, without waiting half a heartbeat.
#[tokio::test(start_paused = true)]
async fn a_new_view_has_its_leases_without_waiting_for_a_tick() {
    let mut h = Harness::new();
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let before = h.nodes[2].status().epoch;
    h.nodes[2].force_change = true;
    h.nodes[2].lead();
    h.deliver();
    // No time has passed: no tick, no timer.
    assert!(h.open_everywhere(2, 3), "the new view is open");
    assert_ne!(h.nodes[2].status().epoch, before, "a new view");
    for n in &h.nodes {
        assert!(n.status().lease, "node {} has its lease", n.id);
    }
    h.client(0, 1, lock());
    assert!(granted(&h.replies(1)).is_some(), "granted at once");
}

/// The leader's epoch ordering: its Prepares go out, the members store the new epoch and
/// answer, and the leader stores it at the latest when it commits, before anyone is told
/// to commit. The harness has no run loop, so the leader's store is as late as it can be:
/// stalled from its Prepares to its commit. There its disk is full and it crashes, and
/// whatever it had queued before is delivered (its links may have written it). Nothing
/// commits in the view it started, its mark on disk is still the old epoch and the
/// members' marks hold the new one; restarted, it proposes the same epoch again, which the
/// members refuse as stale, and it starts again above it. (With the commit's store after
/// its Commits, the members commit the view the leader never stored: this test fails.)
#[tokio::test(start_paused = true)]
async fn a_leader_that_crashes_storing_its_epoch_commits_nothing_in_that_view() {
    let dir = marks_dir("epoch-order");
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e0 = h.nodes[2].status().epoch.unwrap();
    assert_eq!((mark(&dir, 0), mark(&dir, 1), mark(&dir, 2)), (e0, e0, e0));
    // The leader starts a view change with its disk full.
    let e1 = next_epoch(e0, NodeId(2)).unwrap();
    let leader = &mut h.nodes[2];
    leader.epochs.store.as_mut().unwrap().fail_writes();
    leader.epochs.stop = Some(crash);
    leader.force_change = true;
    leader.lead();
    assert_eq!(leader.epochs.seen, e1);
    assert_eq!(
        mark(&dir, 2),
        e0,
        "the leader has not stored its new epoch yet"
    );
    h.deliver();
    assert!(
        !h.up[2],
        "the leader crashed at its store, once the members had answered"
    );
    let prepared = |h: &Harness, to: usize| {
        h.log
            .iter()
            .filter(|(f, t, m)| (*f, *t, m) == (2, to, &PeerMsg::Prepare { epoch: e1 }))
            .count()
    };
    assert_eq!(
        (prepared(&h, 0), prepared(&h, 1)),
        (1, 1),
        "its Prepares went out before its store"
    );
    assert_eq!(
        (mark(&dir, 0), mark(&dir, 1), mark(&dir, 2)),
        (e1, e1, e0),
        "the members stored the new epoch before they answered; the leader did not"
    );
    let committed = |h: &Harness, e: Epoch| {
        h.log
            .iter()
            .filter(|(_, _, m)| matches!(m, PeerMsg::Commit { epoch, .. } if *epoch == e))
            .count()
    };
    assert_eq!(
        committed(&h, e1),
        0,
        "a Commit of epoch {e1} went out: {:?}",
        h.log
    );
    for i in 0..2 {
        assert_eq!(h.nodes[i].status().epoch, None, "node {i} is in no view");
        assert_ne!(h.nodes[i].last_view, e1, "node {i} committed epoch {e1}");
    }
    // Restarted from its mark, the leader numbers its next view e1 again: refused as stale.
    h.restart(2, &dir);
    assert_eq!(next_epoch(h.nodes[2].epochs.seen, NodeId(2)), Some(e1));
    h.run(1000).await;
    assert_eq!(
        (prepared(&h, 0), prepared(&h, 1)),
        (2, 2),
        "the restarted leader proposes epoch {e1} again"
    );
    let stale: Vec<usize> = h
        .log
        .iter()
        .filter(|(_, t, m)| *t == 2 && *m == PeerMsg::Stale { seen: e1 })
        .map(|(f, _, _)| *f)
        .collect();
    assert_eq!(
        stale,
        vec![0, 1],
        "both members refuse epoch {e1} again: {:?}",
        h.log
    );
    assert_eq!(committed(&h, e1), 0, "epoch {e1} was committed after all");
    let e2 = next_epoch(e1, NodeId(2)).unwrap();
    assert!(
        h.open_everywhere(2, 3),
        "node 2 leads a view of all three again"
    );
    assert_eq!(
        h.nodes[2].status().epoch,
        Some(e2),
        "the view above the stale one"
    );
    assert_eq!((mark(&dir, 0), mark(&dir, 1), mark(&dir, 2)), (e2, e2, e2));
}

/// A member whose disk fills (issue 35, item 6) stays up and sits out: it does not answer the
/// Prepare of an epoch it could not store, says nothing to its peers (so the other two form
/// their view without it and serve), refuses every lock with the error naming its mark's file,
/// and its status says so; once its disk takes the write again it is taken back into a view and
/// grants, with a token above every earlier one.
#[tokio::test(start_paused = true)]
async fn a_member_on_a_full_disk_sits_out_refusing_locks_and_comes_back_when_space_returns() {
    let dir = marks_dir("full-disk");
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e0 = h.nodes[2].status().epoch.unwrap();
    let unlock = || ClientRequest::Unlock { name: "x".into() };
    h.client(0, 1, lock());
    let t1 = granted(&h.replies(1)).expect("client 1 is granted through node 0");
    h.client(0, 1, unlock());
    // Node 1's disk is full; the leader changes view.
    h.nodes[1].epochs.store.as_mut().unwrap().fail_writes();
    h.nodes[2].force_change = true;
    h.nodes[2].lead();
    h.run(2000).await;
    assert!(h.up[1], "node 1 is up");
    let s1 = h.nodes[1].status();
    let problem = s1
        .problem
        .clone()
        .expect("node 1's status says why it serves nothing");
    assert!(
        problem.contains("node-1.epoch") && problem.contains("No space left on device"),
        "{problem}"
    );
    assert_eq!(s1.epoch, None, "node 1 is in no view");
    assert_eq!(mark(&dir, 1), e0, "node 1 stored nothing");
    let s2 = h.nodes[2].status();
    assert!(s2.open, "the others serve: {s2:?}");
    assert_eq!(s2.members, vec![NodeId(0), NodeId(2)]);
    h.client(0, 2, lock());
    let t2 = granted(&h.replies(2)).expect("client 2 is granted through node 0");
    assert!(t2 > t1);
    h.client(0, 2, unlock());
    // A lock asked of node 1 is refused, naming the file and the error.
    h.client(1, 3, lock());
    let refused = h.replies(3).into_iter().find_map(|r| match r {
        ClientReply::Refused { reason } => Some(reason),
        _ => None,
    });
    let refused = refused.expect("node 1 refuses the lock");
    assert!(
        refused.contains("node-1.epoch") && refused.contains("No space left on device"),
        "{refused}"
    );
    // Nothing leaves node 1 while it sits out, and the view stays without it.
    let said = |h: &Harness| h.log.iter().filter(|(f, _, _)| *f == 1).count();
    let before = said(&h);
    h.run(2000).await;
    assert_eq!(said(&h), before, "node 1 said nothing to its peers");
    assert_eq!(h.nodes[2].status().members, vec![NodeId(0), NodeId(2)]);
    // Space returns: node 1 stores its mark at its next try and is taken back in.
    h.nodes[1].epochs.store.as_mut().unwrap().heal_writes();
    h.run(3000).await;
    assert!(h.open_everywhere(2, 3), "a view of all three again");
    assert_eq!(h.nodes[1].status().problem, None);
    assert!(mark(&dir, 1) > e0, "node 1 stores its mark again");
    h.client(1, 4, lock());
    let t4 = granted(&h.replies(4)).expect("client 4 is granted through node 1");
    assert!(t4 > t2, "{t4} > {t2}");
}

/// A client waiting at a node for a lock another holds, when that node starts to sit out (its
/// disk full), is refused at the node's next tick, naming the file, instead of waiting there for a
/// view the node takes no part in.
#[tokio::test(start_paused = true)]
async fn a_client_waiting_at_a_node_that_starts_to_sit_out_is_refused() {
    let dir = marks_dir("full-disk-waiting");
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    h.client(0, 1, lock());
    granted(&h.replies(1)).expect("client 1 holds x through node 0");
    h.client(1, 2, lock());
    h.run(500).await;
    assert_eq!(granted(&h.replies(2)), None, "client 2 waits at node 1");
    h.nodes[1].epochs.store.as_mut().unwrap().fail_writes();
    h.nodes[2].force_change = true;
    h.nodes[2].lead();
    h.run(2000).await;
    assert!(h.nodes[1].status().problem.is_some(), "node 1 sits out");
    let replies = h.replies(2);
    let refused = replies.iter().find_map(|r| match r {
        ClientReply::Refused { reason } => Some(reason),
        _ => None,
    });
    let refused = refused.expect("client 2 is refused");
    assert!(
        refused.contains("node-1.epoch") && refused.contains("No space left on device"),
        "{refused}"
    );
    assert_eq!(granted(&replies), None, "and never granted");
}

/// A new, empty directory for one test's epoch marks (named after the test, with a random
/// suffix, so that tests running at once do not share marks), removed when dropped, also
/// when the test fails.
struct MarksDir(tempfile::TempDir);

impl std::ops::Deref for MarksDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

fn marks_dir(test: &str) -> MarksDir {
    MarksDir(tempfile::TempDir::with_prefix(format!("ds-{test}-")).unwrap())
}

/// Node `i`'s epoch mark, as read back from its file in `dir`.
fn mark(dir: &std::path::Path, i: u32) -> Epoch {
    crate::persist::EpochStore::open(dir, NodeId(i))
        .unwrap()
        .stored()
}

/// The lead-up to a view of one member: three nodes running ricart-agrawala (central
/// cannot run with one member: its view would refuse every lock) with real marks in
/// `dir`; node 2 leads a view of all three at epoch e0; client 1 holds the lock through
/// node 0, client 2 waits for it at node 2; then nodes 0 and 1 go down. Node 2, alone,
/// will change view to e1 = `next_epoch(e0, 2)` with nobody to ask, so it commits at once:
/// its commit's store is the only thing between its new epoch and a grant to client 2.
/// Returns the harness, e0 and client 1's token.
async fn a_leader_about_to_be_alone(dir: &std::path::Path) -> (Harness, Epoch, u64) {
    let file = FILE.replace("\"central\"", "\"ricart-agrawala\"");
    let mut h = Harness::with_marks(&file, dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e0 = h.nodes[2].status().epoch.unwrap();
    assert_eq!((mark(dir, 0), mark(dir, 1), mark(dir, 2)), (e0, e0, e0));
    h.client(0, 1, lock());
    let t1 = granted(&h.replies(1)).expect("client 1 is granted through node 0");
    assert_eq!(t1 >> 32, e0 as u64);
    h.client(2, 2, lock());
    assert_eq!(granted(&h.replies(2)), None, "client 2 waits at node 2");
    h.up[0] = false;
    h.up[1] = false;
    // A view of one member grants only where one member is a majority (a one-node
    // cluster): node 2 is given that quorum, to show the order of its store and its grants.
    h.nodes[2].quorum = 1;
    (h, e0, t1)
}

/// A view of one member: the leader alone asks nobody, so `commit` runs in the same call
/// as `begin_change`, and its store is the only guard. With its disk full, the leader
/// crashes at that store: it never enters the view of the new epoch e1 nor grants in it
/// (client 2, waiting at it, gets nothing), and its mark stays e0. Restarted from its mark
/// (the others still down), it numbers its view e1 again (nobody acted on e1), stores it,
/// and the first grant of that view is e1's first token: the crashed attempt handed out
/// no token, so none is handed out twice. (With the commit's store moved after the view
/// opened, client 2 is granted e1's first token before the crash, the token the restarted
/// leader would grant again; with it skipped when nobody was asked, the leader does not
/// crash at all: either way this test fails.)
#[tokio::test(start_paused = true)]
async fn a_leader_alone_that_crashes_storing_its_epoch_opens_no_view_and_grants_nothing() {
    let dir = marks_dir("alone-crash");
    let (mut h, e0, t1) = a_leader_about_to_be_alone(&dir).await;
    let e1 = next_epoch(e0, NodeId(2)).unwrap();
    let leader = &mut h.nodes[2];
    leader.epochs.store.as_mut().unwrap().fail_writes();
    leader.epochs.stop = Some(crash);
    h.run(1000).await;
    assert!(h.crashed[2], "node 2 crashed at its store");
    let replies = h.replies(2);
    assert_eq!(
        granted(&replies),
        None,
        "client 2 was granted in the view the leader never stored: {replies:?}"
    );
    assert_eq!(mark(&dir, 2), e0, "its mark stays at the old epoch");
    // What the crashed node had done before it crashed.
    let leader = &h.nodes[2];
    assert_eq!(leader.epochs.seen, e1, "it had started a change to e1");
    let change = leader.change.as_ref().expect("its view change");
    assert_eq!(change.epoch, e1);
    assert!(
        change.asked.is_empty(),
        "a change of one member asks nobody"
    );
    assert!(change.awaiting.is_none(), "it crashed before it committed");
    assert_eq!(leader.status().epoch, None, "it entered no view");
    assert_eq!(leader.last_view, e0, "it never committed e1");
    // Restarted from its mark, with the others still down.
    h.restart(2, &dir);
    h.nodes[2].quorum = 1;
    assert_eq!(h.nodes[2].epochs.seen, e0);
    h.run(1000).await;
    let s = h.nodes[2].status();
    assert_eq!(
        (s.leader, s.epoch, s.members.clone(), s.open),
        (Some(NodeId(2)), Some(e1), vec![NodeId(2)], true),
        "node 2 leads a view of itself, numbered e1"
    );
    assert_eq!(mark(&dir, 2), e1, "its view's epoch is on disk");
    h.client(2, 3, lock());
    let replies = h.replies(3);
    let t3 = granted(&replies).unwrap_or_else(|| {
        panic!(
            "client 3 is granted in e1: {replies:?} {:?}",
            h.nodes[2].status()
        )
    });
    assert_eq!(t3, next_token(0, e1).unwrap(), "e1's first token");
    assert!(t3 > t1, "{t3} > {t1}");
    assert_eq!(granted(&h.replies(2)), None, "client 2 was never granted");
}

/// The same view of one member with a working disk: the leader stores e1 when it commits,
/// so its mark is e1 by the time its view is seen at e1, and client 2, waiting at it, is
/// granted e1's first token, with nothing granted before. (With the commit's store skipped
/// when nobody was asked, leaving it to the run loop's end-of-turn store, which the harness
/// does not run, client 2 is granted in e1 while the mark is still e0: this test fails.)
#[tokio::test(start_paused = true)]
async fn a_leader_alone_stores_its_epoch_before_its_view_grants() {
    let dir = marks_dir("alone-store");
    let (mut h, e0, t1) = a_leader_about_to_be_alone(&dir).await;
    let e1 = next_epoch(e0, NodeId(2)).unwrap();
    let mut t2 = None;
    for _ in 0..100 {
        h.run(10).await;
        t2 = t2.or(granted(&h.replies(2)));
        let s = h.nodes[2].status();
        if s.epoch.is_some_and(|e| e != e0) {
            assert_eq!(s.epoch, Some(e1), "node 2's view after e0");
            assert_eq!(s.members, vec![NodeId(2)], "a view of one member");
            break;
        }
        assert_eq!(
            t2, None,
            "client 2 was granted before node 2 was in view e1"
        );
    }
    assert_eq!(h.nodes[2].status().epoch, Some(e1), "node 2 is in view e1");
    assert_eq!(
        mark(&dir, 2),
        e1,
        "node 2 is in view e1 (client 2's grant: {t2:?}) with its mark at {}",
        mark(&dir, 2)
    );
    h.run(100).await;
    let t2 = t2
        .or(granted(&h.replies(2)))
        .expect("client 2 is granted in e1");
    assert_eq!(t2, next_token(0, e1).unwrap(), "e1's first token");
    assert!(t2 > t1, "{t2} > {t1}");
    assert!(h.nodes[2].status().open);
}

/// The run loop's own store: in the turn in which the leader starts a view change (here a
/// node asks to join), its Prepares go out and its new epoch is raised in memory only;
/// `serve` lets the links write (it yields), then stores the mark, at the end of that turn.
/// Driven through the real loop (`serve`), with two tasks standing in for its link tasks
/// (each takes the messages to one member, as a link writes them): when a link takes its
/// Prepare, the leader's mark is still the old epoch (its sync overlaps the members'
/// instead of preceding their Prepares); once the loop has finished the turn, before any
/// member has answered (nothing is delivered to them), the mark holds the new epoch and no
/// Commit has gone out (so `commit`'s store did not do it). (Without the end-of-turn store
/// the mark stays at the old epoch until the members answer; without the yield the links
/// take their Prepares only after the store: either way this test fails.)
#[tokio::test(start_paused = true)]
async fn the_run_loop_stores_a_leaders_new_epoch_at_the_end_of_the_turn_it_sent_prepares() {
    let dir = marks_dir("end-of-turn");
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e0 = h.nodes[2].status().epoch.unwrap();
    let e1 = next_epoch(e0, NodeId(2)).unwrap();
    assert_eq!((mark(&dir, 0), mark(&dir, 1), mark(&dir, 2)), (e0, e0, e0));
    // Node 2 leaves the harness for the real loop; the harness keeps its links' far ends.
    let cluster = h.nodes[2].cluster.clone();
    let mut leader = std::mem::replace(&mut h.nodes[2], Node::new(cluster, NodeId(2)));
    h.up[2] = false;
    leader.epochs.stop = Some(crash);
    let (events_tx, events) = mpsc::channel(16);
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let links: Vec<_> = [0, 1]
        .map(|to| {
            let mut rx = h.rx[2][to].take().unwrap();
            let dir = dir.to_path_buf();
            tokio::spawn(async move {
                let mut sent = Vec::new();
                let mut at_prepare = None;
                while let Some(m) = rx.recv().await {
                    if m == (PeerMsg::Prepare { epoch: e1 }) {
                        at_prepare = Some(mark(&dir, 2));
                    }
                    sent.push(m);
                    if at_prepare.is_some() {
                        break;
                    }
                }
                (sent, at_prepare, rx)
            })
        })
        .into();
    let looping = tokio::spawn(serve(leader, events, stopped));
    events_tx
        .send(Event::Peer(NodeId(0), PeerMsg::Join))
        .await
        .unwrap();
    // The paused clock moves only once no task can run: when this sleep ends, the loop has
    // handled the Join and finished its turn (and waits for its next event or tick).
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!looping.is_finished(), "the loop is still running");
    for (to, link) in links.into_iter().enumerate() {
        assert!(link.is_finished(), "node {to}'s link took a Prepare");
        let (mut sent, at_prepare, mut rx) = link.await.unwrap();
        assert_eq!(
            at_prepare,
            Some(e0),
            "the leader's mark when node {to}'s link took the Prepare of {e1}: {sent:?}"
        );
        while let Ok(m) = rx.try_recv() {
            sent.push(m);
        }
        assert!(
            !sent.iter().any(|m| matches!(m, PeerMsg::Commit { .. })),
            "node 2 committed: {sent:?}"
        );
    }
    assert_eq!(
        (mark(&dir, 0), mark(&dir, 1)),
        (e0, e0),
        "no member has seen the Prepare"
    );
    assert_eq!(
        mark(&dir, 2),
        e1,
        "the leader's new epoch is on disk once its turn has ended"
    );
    stop.send(()).unwrap();
    looping.await.unwrap();
}

/// Peer input is hostile input: a suzuki-kasami token one entry short (which indexed past its
/// vector and killed the node) and a mutex message from a node outside the view are dropped and
/// counted; the node goes on serving.
#[tokio::test(start_paused = true)]
async fn a_malformed_mutex_message_from_a_peer_is_dropped_not_a_panic() {
    use distsync_algorithms::mutex::suzuki_kasami::{Msg, Token};
    let mut h = Harness::with(&FILE.replace("\"central\"", "\"suzuki-kasami\""));
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3));
    let epoch = h.nodes[1].status().epoch.unwrap();
    // Node 1's client asks: it waits for the token (held at node 0, the first member).
    h.client(1, 1, lock());
    let short = crate::wire::encode(&Msg::Token(Token {
        ln: vec![0],
        q: Default::default(),
    }));
    let forged = PeerMsg::Mutex {
        epoch,
        name: "x".into(),
        token: 0,
        msg: short,
    };
    h.on(1, |n| n.on_event(Event::Peer(NodeId(0), forged.clone())));
    assert_eq!(h.nodes[1].dropped.total, 1);
    // The client got the lock through the real token, not the forged one.
    h.run(100).await;
    let t = granted(&h.replies(1)).expect("granted");
    h.client(1, 1, ClientRequest::Unlock { name: "x".into() });
    h.run(100).await;
    // Leaving the critical section (rule 5 reads every LN entry) is where the short token
    // crashed the node.
    assert!(h.nodes[1].status().holding.is_empty());
    assert!(t >> 32 == epoch as u64);
    // A member of the cluster that is not in the view (here: a view of nodes 1 and 2 only).
    let mut h2 = Harness::with(&FILE.replace("\"central\"", "\"suzuki-kasami\""));
    h2.up[0] = false;
    h2.run(1500).await;
    assert!(h2.open_everywhere(2, 2));
    let epoch = h2.nodes[1].status().epoch.unwrap();
    let from_outside = PeerMsg::Mutex {
        epoch,
        name: "x".into(),
        token: 0,
        msg: crate::wire::encode(&Msg::Request { sn: 1 }),
    };
    h2.on(1, |n| n.on_event(Event::Peer(NodeId(0), from_outside)));
    assert_eq!(h2.nodes[1].dropped.total, 1);
}

/// Reported: one forged `Stale { seen: u32::MAX }` with the node key raised the leader's mark to
/// the top, and no view change could be numbered above it any more: the cluster was wedged for
/// good. A Stale (and a Prepare, and a Commit) whose epoch is more than `LEAP_ROUNDS` rounds
/// above what a majority has seen is dropped instead.
#[tokio::test(start_paused = true)]
async fn a_forged_stale_or_prepare_at_the_top_epoch_does_not_wedge_the_views() {
    let dir = marks_dir("forged-stale");
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e0 = h.nodes[2].status().epoch.unwrap();
    // As node 0, to the leader: the largest epoch there is.
    h.on(2, |n| {
        n.on_event(Event::Peer(NodeId(0), PeerMsg::Stale { seen: u32::MAX }))
    });
    // As node 0, to node 1: a Prepare at the last round, naming node 0 as its leader.
    let top = ((1u32 << 22) - 1) << 10;
    h.on(1, |n| {
        n.on_event(Event::Peer(NodeId(0), PeerMsg::Prepare { epoch: top }))
    });
    h.on(1, |n| {
        n.on_event(Event::Peer(
            NodeId(0),
            PeerMsg::Commit {
                epoch: top,
                members: vec![NodeId(0), NodeId(1)],
                holders: vec![],
            },
        ))
    });
    assert_eq!(h.nodes[2].dropped.total + h.nodes[1].dropped.total, 3);
    assert!(mark(&dir, 1) < 1 << 20 && mark(&dir, 2) < 1 << 20);
    // Node 0 crashes: the leader must number a new view, and can.
    h.up[0] = false;
    h.run(2000).await;
    assert!(
        h.open_everywhere(2, 2),
        "node 2 leads a view of nodes 1 and 2"
    );
    let e1 = h.nodes[2].status().epoch.unwrap();
    assert!(e1 > e0 && e1 >> 10 == (e0 >> 10) + 1, "{e0} then {e1}");
    h.client(1, 1, lock());
    assert!(granted(&h.replies(1)).is_some_and(|t| t >> 32 == e1 as u64));
}

/// Recovery from a bad mark on disk (forged before the bound existed, or corrupt): node 2, the
/// bully leader, starts with its mark at the top. Once it has heard the marks of a majority it
/// takes its own for what it is, lowers it to the highest epoch a majority vouches for (logged),
/// and numbers its views above that again; the lowered mark is what a restart reads back.
#[tokio::test(start_paused = true)]
async fn a_mark_far_above_a_majoritys_is_lowered_and_the_views_go_on() {
    let dir = marks_dir("bad-mark");
    {
        let mut s = crate::persist::EpochStore::open(&dir, NodeId(2)).unwrap();
        s.raise(u32::MAX).unwrap();
        let mut s = crate::persist::EpochStore::open(&dir, NodeId(1)).unwrap();
        s.raise(7 << 10 | 1).unwrap();
    }
    let mut h = Harness::with_marks(FILE, &dir);
    h.run(1500).await;
    assert!(h.open_everywhere(2, 3), "node 2 leads a view of all three");
    let e = h.nodes[2].status().epoch.unwrap();
    assert_eq!(
        e >> 10,
        8,
        "numbered above the highest mark a majority vouches for: {e}"
    );
    assert_eq!(mark(&dir, 2), e);
    h.client(0, 1, lock());
    assert!(granted(&h.replies(1)).is_some());
    // Down and up in place: the mark read back is the lowered one, and views go on above it.
    h.restart(2, &dir);
    h.run(2000).await;
    assert!(h.open_everywhere(2, 3));
    assert!(h.nodes[2].status().epoch.unwrap() > e);
}

/// Reported: a client key could exhaust the lock-name table: 2,048 names taken and released,
/// and every node refused new names for good (a full table never asked for the view change that
/// frees idle names). Now a request for a new name that finds the table full waits for that
/// view change and is granted after it.
#[tokio::test(start_paused = true)]
async fn names_taken_and_released_do_not_block_new_names() {
    use super::locks::{HARD_MAX_LOCKS, MAX_LOCKS};
    let mut h = Harness::with(&FILE.replace("\"central\"", "\"ricart-agrawala\""));
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3));
    let mut granted = 0;
    // Faster than the view changes that free names (at most one per heartbeat timeout): the
    // first one, asked for at 1,024 names, has not opened when the table fills up.
    for i in 0..HARD_MAX_LOCKS + MAX_LOCKS {
        let name = format!("n{i}");
        h.client(0, 1, ClientRequest::Lock { name: name.clone() });
        h.client(0, 1, ClientRequest::Unlock { name });
        granted += h
            .replies(1)
            .iter()
            .filter(|r| matches!(r, ClientReply::Granted { .. }))
            .count();
    }
    assert!(granted >= MAX_LOCKS, "{granted} granted at once");
    h.client(0, 1, ClientRequest::Lock { name: "new".into() });
    assert_eq!(
        (
            h.nodes[0].locks.by_name.len(),
            h.nodes[0].locks.parked.len()
        ),
        (HARD_MAX_LOCKS, 1),
        "the table is full and the request waits for room"
    );
    h.run(2000).await;
    let replies = h.replies(1);
    assert!(
        replies
            .iter()
            .any(|r| matches!(r, ClientReply::Granted { name, .. } if name == "new")),
        "the new name is granted once the idle ones are freed: {:?}",
        &replies[replies.len().saturating_sub(3)..]
    );
}

/// One client connection holds or waits for at most `MAX_LOCKS_PER_CLIENT` locks; another
/// client is not affected.
#[tokio::test(start_paused = true)]
async fn one_client_cannot_take_more_than_its_quota_of_names() {
    use super::locks::MAX_LOCKS_PER_CLIENT;
    let mut h = Harness::with(&FILE.replace("\"central\"", "\"ricart-agrawala\""));
    h.run(1000).await;
    let mut n = 0;
    for i in 0..MAX_LOCKS_PER_CLIENT {
        h.client(
            0,
            1,
            ClientRequest::Lock {
                name: format!("q{i}"),
            },
        );
        n += h
            .replies(1)
            .iter()
            .filter(|r| matches!(r, ClientReply::Granted { .. }))
            .count();
    }
    assert_eq!(n, MAX_LOCKS_PER_CLIENT);
    h.client(
        0,
        1,
        ClientRequest::Lock {
            name: "one-more".into(),
        },
    );
    let r = h.replies(1);
    assert!(
        matches!(&r[..], [ClientReply::Refused { reason }] if reason.contains("per-client quota")),
        "{r:?}"
    );
    h.client(
        0,
        2,
        ClientRequest::Lock {
            name: "one-more".into(),
        },
    );
    assert!(granted(&h.replies(2)).is_some(), "another client is served");
}

fn leases(replies: &[ClientReply]) -> usize {
    replies
        .iter()
        .filter(|r| matches!(r, ClientReply::Lease { ms } if *ms > 0))
        .count()
}

/// The lock client writes a `Renew` behind every `Lock`. When the grant needs the algorithm's
/// messages (ricart-agrawala: a REQUEST to and a REPLY from every other member), the renewal's
/// answer waits for the grant and follows it, so that the client is woken once, not once for
/// the lease and once for the grant; with nothing waiting, a renewal is answered at once.
#[tokio::test(start_paused = true)]
async fn a_renewal_behind_a_waiting_lock_is_answered_right_after_its_grant() {
    let mut h = Harness::with(&FILE.replace("\"central\"", "\"ricart-agrawala\""));
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3));
    let (tx, rx) = mpsc::channel(64);
    h.clients.insert(1, rx);
    h.nodes[0].on_event(Event::ClientOpen(1, tx));
    h.nodes[0].on_event(Event::Client(1, lock()));
    h.nodes[0].on_event(Event::Client(1, ClientRequest::Renew));
    assert_eq!(
        h.replies(1),
        vec![],
        "nothing goes to the client while its REQUESTs are out"
    );
    h.deliver();
    let replies = h.replies(1);
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(
        granted(&replies[..1]).is_some(),
        "the grant first: {replies:?}"
    );
    assert_eq!(leases(&replies[1..]), 1, "then the lease: {replies:?}");
    // Holding the lock, nothing waits: a renewal is answered at once.
    h.nodes[0].on_event(Event::Client(1, ClientRequest::Renew));
    assert_eq!(leases(&h.replies(1)), 1);
}

/// A client waiting behind another holder gets its renewals answered at the node's next tick
/// at the latest, in the order it sent them.
#[tokio::test(start_paused = true)]
async fn renewals_of_a_client_waiting_behind_a_holder_are_answered_at_the_next_tick() {
    let mut h = Harness::with(&FILE.replace("\"central\"", "\"ricart-agrawala\""));
    h.run(1000).await;
    assert!(h.open_everywhere(2, 3));
    h.client(0, 1, lock());
    assert!(granted(&h.replies(1)).is_some());
    h.client(1, 2, lock());
    h.client(1, 2, ClientRequest::Renew);
    h.client(1, 2, ClientRequest::Renew);
    assert_eq!(
        h.replies(2),
        vec![],
        "held back while the lock is held elsewhere"
    );
    h.run(10).await;
    let replies = h.replies(2);
    assert_eq!(
        leases(&replies),
        2,
        "both answered at the tick: {replies:?}"
    );
    assert!(granted(&replies).is_none());
    // Later renewals are answered at once again; the grant still comes when the lock is free.
    h.client(1, 2, ClientRequest::Renew);
    assert_eq!(leases(&h.replies(2)), 1);
    h.client(0, 1, ClientRequest::Unlock { name: "x".into() });
    assert!(granted(&h.replies(2)).is_some());
}
