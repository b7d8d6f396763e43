//! The replicated store and the snapshot bank at a node: two more algorithm instances of the
//! registry, unchanged, driven like the election instance.
//!
//! - The **store**: one instance of the cluster file's multicast algorithm (`[store]
//!   multicast`) over every node of the roster the node started with (`roster`). A client's update gets a payload id
//!   ([`crate::store::payload_id`]); its body goes to every other node ahead of the algorithm's
//!   messages on the same links (TCP keeps a link's order, so the body is there before any
//!   message that can make the update deliverable), then the algorithm multicasts the id.
//!   Each delivery applies the update to this node's [`Replica`]; the client that sent it is
//!   answered when its own node's replica has applied it.
//! - The **snapshot bank**: one instance of Chandy-Lamport, whose bank is this node's own
//!   account; `Send` moves money to another node's account over the link (a transfer in
//!   transit), and `Snapshot` starts a snapshot here. The node whose part of a snapshot is
//!   complete sends it to the initiator, which answers its client once every part is in, or
//!   names the nodes it heard nothing from when the client's timeout runs out. When a node
//!   records its state (the handler call that sends its markers), it also records its store
//!   replica, so the cut covers the store's messages too (they ride the same FIFO links).
//!
//! What faults do to both is in docs/store.md.

use super::Node;
use crate::machine::{Env, Event as MEvent, MulticastMachine, Out, SnapshotMachine};
use crate::store::{payload_id, Replica, Update};
use crate::wire::{self, ClientReply, GlobalState, Part, PeerMsg, ReplicaCut, ReplicaStatus};
use distsync_algorithms::snapshot::chandy_lamport::Msg as ClMsg;
use distsync_core::multicast as mc;
use distsync_core::snapshot::{self as sn, SnapshotId};
use distsync_core::{NodeId, Params};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// A snapshot's client waits this long at most.
pub const MAX_SNAPSHOT_WAIT: Duration = Duration::from_secs(600);
/// Bodies of updates not yet delivered kept at most (a peer's bodies beyond it are dropped, and
/// their deliveries counted as missing).
pub const MAX_BODIES: usize = 1 << 20;

/// A snapshot this node started, waiting for its parts.
struct Gathering {
    client: u64,
    parts: BTreeMap<NodeId, Part>,
    /// The nodes whose marker of this snapshot reached this node.
    markers: BTreeSet<NodeId>,
    /// What nodes reported waiting for: the markers that had not reached them.
    waiting: BTreeMap<NodeId, Vec<NodeId>>,
    began: Instant,
    deadline: Instant,
}

/// A snapshot this node recorded its state for, until its part is complete.
struct Recording {
    since: Instant,
    markers: BTreeSet<NodeId>,
    reported: bool,
}

/// At most this many incomplete recordings are watched (a snapshot whose initiator or some
/// node crashed never completes); beyond it, the oldest are forgotten.
const MAX_WATCHED: usize = 1024;

/// The two instances and what the node keeps around them.
pub(super) struct Apps {
    /// The nodes both instances run over: the roster the node started with (a membership
    /// change reaches them at the node's next restart, `roster`).
    peers: distsync_core::Peers,
    bank: Box<dyn SnapshotMachine>,
    /// Snapshots started here (the algorithm numbers its snapshots the same way: 1, 2, ...).
    started: u64,
    gathering: BTreeMap<SnapshotId, Gathering>,
    /// The store replica as it was when this node recorded its state, per snapshot under way.
    cuts: HashMap<SnapshotId, ReplicaCut>,
    /// Snapshots of other initiators this node has recorded and not completed: since when, the
    /// nodes whose marker reached it, and whether it told the initiator what it waits for.
    recording: HashMap<SnapshotId, Recording>,
    multicast: String,
    store: Box<dyn MulticastMachine>,
    replica: Replica,
    bodies: HashMap<u64, Update>,
    /// Updates multicast here, not applied here yet, with the client waiting for each.
    waiting: HashMap<u64, u64>,
    incarnation: u32,
    seq: u32,
    missing: u64,
    /// Where this node keeps its own account's balance (`DIR/node-N.bank`), if on disk.
    bank_file: Option<PathBuf>,
    /// Where it notes that its replica has applied updates (`DIR/node-N.store`), if on disk.
    store_file: Option<PathBuf>,
    /// Whether the note is written.
    noted: bool,
    /// The updates its replica had applied before this node restarted (lost with it; 0: it
    /// did not restart, or nothing was lost).
    lost: u64,
}

/// The file holding node `id`'s own account in `dir`.
pub fn bank_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.bank"))
}

/// The file noting that node `id`'s store replica has applied updates, in `dir`.
pub fn store_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.store"))
}

/// The number after `key ` in `text`.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

impl Apps {
    pub(super) fn new(id: NodeId, cluster: &crate::config::Cluster, params: &Params) -> Apps {
        let settings = &cluster.file.store;
        let mk =
            crate::machine::multicast_kind(&settings.multicast).expect("checked with the file");
        let sk = crate::machine::snapshot_kind("chandy-lamport").expect("registered");
        let bank_file = cluster.state_dir.as_deref().map(|d| bank_path(d, id));
        let store_file = cluster.state_dir.as_deref().map(|d| store_path(d, id));
        // A restarted node keeps its account: the balance it had, not the opening one.
        let kept = bank_file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| field(&t, "balance"));
        if let Some(b) = kept {
            info!(node = %id, balance = b, "own account kept from before the restart");
        }
        let lost = store_file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| field(&t, "applied"))
            .unwrap_or(0);
        if lost > 0 {
            warn!(node = %id, "this node restarted and its store replica lost what it had applied; it takes no updates (docs/store.md)");
        }
        let bank_params = Params {
            balance: Some(kept.unwrap_or(settings.balance)),
            ..params.clone()
        };
        let mut r = [0u8; 4];
        getrandom::getrandom(&mut r).expect("the operating system has no randomness source");
        Apps {
            peers: cluster.peers.clone(),
            bank: (sk.new)(id, &cluster.peers, &bank_params),
            started: 0,
            gathering: BTreeMap::new(),
            cuts: HashMap::new(),
            recording: HashMap::new(),
            multicast: settings.multicast.clone(),
            store: (mk.new)(id, &cluster.peers, params),
            replica: Replica::default(),
            bodies: HashMap::new(),
            waiting: HashMap::new(),
            incarnation: u32::from_le_bytes(r),
            seq: 0,
            missing: 0,
            bank_file,
            store_file,
            noted: lost > 0,
            lost,
        }
    }

    /// Writes the own account's balance (before anything the change sent leaves the node).
    fn keep_balance(&self) {
        if let Some(f) = &self.bank_file {
            let text = format!("balance {}\n", self.bank.balance());
            if let Err(e) = crate::files::write_private_unsynced(f, text.as_bytes()) {
                warn!("cannot keep the account in {}: {e}", f.display());
            }
        }
    }

    /// Notes, once, that the replica has applied updates: a restart would lose them.
    fn note_applied(&mut self) {
        if self.noted {
            return;
        }
        self.noted = true;
        if let Some(f) = &self.store_file {
            if let Err(e) = crate::files::write_private_unsynced(f, b"applied 1\n") {
                warn!("cannot note the store in {}: {e}", f.display());
            }
        }
    }

    fn cut(&self) -> ReplicaCut {
        ReplicaCut {
            applied: self.replica.applied.len() as u64,
            digest: self.replica.digest(),
            total: self
                .replica
                .total()
                .clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        }
    }
}

impl Node {
    /// Calls the snapshot instance and carries out its effects.
    fn call_bank(&mut self, ev: MEvent<'_, sn::Input>) {
        let before = self.apps.bank.balance();
        let mut out = Vec::new();
        let env = Env {
            id: self.id,
            peers: &self.apps.peers,
            now: self.now(),
            recovered: false,
            rng: &mut self.rng,
        };
        if let Err(e) = self.apps.bank.handle(env, ev, &mut out) {
            warn!("dropped a snapshot message that does not decode: {e}");
            return;
        }
        if self.apps.bank.balance() != before {
            self.apps.keep_balance();
        }
        for o in out {
            match o {
                Out::Send(to, bytes) => {
                    // The handler call that sends a snapshot's markers is the one that
                    // recorded this node's state: record the store replica with it.
                    if let Ok(ClMsg::Marker { snapshot }) = wire::decode::<ClMsg>(&bytes) {
                        if !self.apps.cuts.contains_key(&snapshot) {
                            let cut = self.apps.cut();
                            self.apps.cuts.insert(snapshot, cut);
                            self.watch(snapshot);
                        }
                    }
                    self.send(to, PeerMsg::Snapshot(bytes));
                }
                Out::SetTimer(..) | Out::CancelTimer(..) => {
                    warn!("the snapshot algorithm set a timer; the node runs none for it")
                }
                Out::Output(sn::Output::Recorded(local)) => {
                    let replica = self
                        .apps
                        .cuts
                        .remove(&local.id)
                        .unwrap_or_else(|| self.apps.cut());
                    let part = Part {
                        node: self.id,
                        local,
                        replica,
                    };
                    let initiator = part.local.id.initiator;
                    self.apps.recording.remove(&part.local.id);
                    if initiator == self.id {
                        self.on_part(part);
                    } else {
                        self.send(initiator, PeerMsg::Part(part));
                    }
                }
            }
        }
    }

    /// Calls the store's multicast instance and carries out its effects.
    fn call_store(&mut self, ev: MEvent<'_, mc::Input>) {
        let mut out = Vec::new();
        let env = Env {
            id: self.id,
            peers: &self.apps.peers,
            now: self.now(),
            recovered: false,
            rng: &mut self.rng,
        };
        if let Err(e) = self.apps.store.handle(env, ev, &mut out) {
            warn!("dropped a multicast message that does not decode: {e}");
            return;
        }
        for o in out {
            match o {
                Out::Send(to, bytes) => self.send(to, PeerMsg::Multicast(bytes)),
                Out::SetTimer(..) | Out::CancelTimer(..) => {
                    warn!("the multicast algorithm set a timer; the node runs none for it")
                }
                Out::Output(mc::Output::Deliver { origin, payload }) => {
                    self.deliver(origin, payload)
                }
            }
        }
    }

    fn deliver(&mut self, origin: NodeId, payload: u64) {
        let Some(update) = self.apps.bodies.remove(&payload) else {
            self.apps.missing += 1;
            warn!(node = %self.id, %origin, payload, "delivered an update whose body never arrived; not applied");
            return;
        };
        self.apps.replica.apply(payload, &update);
        self.apps.note_applied();
        debug!(node = %self.id, %origin, payload, %update, "applied");
        if let Some(c) = self.apps.waiting.remove(&payload) {
            let index = self.apps.replica.applied.len() as u64;
            self.reply(c, ClientReply::Applied { payload, index });
        }
    }

    /// A peer message for the store or the snapshot bank.
    pub(super) fn on_app_peer(&mut self, from: NodeId, msg: PeerMsg) {
        match msg {
            PeerMsg::Snapshot(bytes) => {
                if let Ok(ClMsg::Marker { snapshot }) = wire::decode::<ClMsg>(&bytes) {
                    if let Some(g) = self.apps.gathering.get_mut(&snapshot) {
                        g.markers.insert(from);
                    }
                    // Before the call: the marker may be the one that records the state.
                    self.watch(snapshot);
                    let again = self.apps.recording.get_mut(&snapshot).and_then(|r| {
                        r.markers.insert(from);
                        r.reported.then(|| r.markers.clone())
                    });
                    // The initiator was told what this node waits for: tell it again.
                    if let Some(markers) = again {
                        let on = self.missing_markers(&markers);
                        self.send(snapshot.initiator, PeerMsg::Waiting { snapshot, on });
                    }
                }
                self.call_bank(MEvent::Message(from, &bytes));
            }
            PeerMsg::Part(part) => {
                if part.node == from && part.local.id.initiator == self.id {
                    self.on_part(part);
                } else {
                    warn!(node = %self.id, %from, "dropped a snapshot part that is not its sender's or not for a snapshot of this node");
                }
            }
            PeerMsg::Update { payload, update } => {
                if payload >> 54 != from.0 as u64 || update.check().is_err() {
                    warn!(node = %self.id, %from, payload, "dropped an update body not made by its sender or malformed");
                } else if self.apps.bodies.len() < MAX_BODIES {
                    self.apps.bodies.entry(payload).or_insert(update);
                }
            }
            PeerMsg::Multicast(bytes) => self.call_store(MEvent::Message(from, &bytes)),
            PeerMsg::Waiting { snapshot, on } => {
                if let Some(g) = self.apps.gathering.get_mut(&snapshot) {
                    // The latest report counts (a link keeps the order of a node's reports).
                    g.waiting.insert(from, on);
                }
            }
            _ => {}
        }
    }

    /// The other nodes whose marker is not among `markers`.
    fn missing_markers(&self, markers: &BTreeSet<NodeId>) -> Vec<NodeId> {
        self.apps
            .peers
            .ids()
            .iter()
            .copied()
            .filter(|&p| p != self.id && !markers.contains(&p))
            .collect()
    }

    /// Starts watching snapshot `id` (of another initiator), if not yet.
    fn watch(&mut self, id: SnapshotId) {
        if id.initiator == self.id || self.apps.recording.contains_key(&id) {
            return;
        }
        if self.apps.recording.len() >= MAX_WATCHED {
            if let Some(oldest) = self
                .apps
                .recording
                .iter()
                .min_by_key(|(_, r)| r.since)
                .map(|(&k, _)| k)
            {
                self.apps.recording.remove(&oldest);
            }
        }
        self.apps.recording.insert(
            id,
            Recording {
                since: Instant::now(),
                markers: BTreeSet::new(),
                reported: false,
            },
        );
    }

    fn on_part(&mut self, part: Part) {
        let id = part.local.id;
        let n = self.apps.peers.len();
        let Some(g) = self.apps.gathering.get_mut(&id) else {
            debug!(node = %self.id, snapshot = ?id, from = %part.node, "a part of a snapshot nobody waits for (it timed out)");
            return;
        };
        g.parts.insert(part.node, part);
        if g.parts.len() < n {
            return;
        }
        let g = self.apps.gathering.remove(&id).expect("present");
        let mut parts: Vec<Part> = g.parts.into_values().collect();
        parts.sort_by_key(|p| self.apps.peers.position(p.node));
        let state = GlobalState {
            id,
            parts,
            micros: g.began.elapsed().as_micros() as u64,
        };
        self.reply(g.client, ClientReply::Snapshot(Box::new(state)));
    }

    /// Store and snapshot requests of client `c`.
    pub(super) fn on_app_client(&mut self, c: u64, req: crate::wire::ClientRequest) {
        use crate::wire::ClientRequest as R;
        match req {
            R::Send { to, amount } => {
                let balance = self.apps.bank.balance();
                let refuse = if to == self.id {
                    Some(format!("node {to} is this node"))
                } else if !self.apps.peers.contains(to) {
                    Some(format!("no node has id {to}"))
                } else if amount == 0 {
                    Some("the amount must be more than zero".to_string())
                } else if amount > balance {
                    Some(format!(
                        "node {}'s balance ({balance}) does not cover {amount}",
                        self.id
                    ))
                } else {
                    None
                };
                if let Some(reason) = refuse {
                    self.reply(c, ClientReply::Refused { reason });
                    return;
                }
                self.call_bank(MEvent::Input(sn::Input::Transfer { to, amount }));
                let balance = self.apps.bank.balance();
                self.reply(c, ClientReply::Sent { balance });
            }
            R::Snapshot { timeout_ms } => {
                self.apps.started += 1;
                let id = SnapshotId {
                    initiator: self.id,
                    number: self.apps.started,
                };
                let wait = Duration::from_millis(timeout_ms.max(1)).min(MAX_SNAPSHOT_WAIT);
                let now = Instant::now();
                self.apps.gathering.insert(
                    id,
                    Gathering {
                        client: c,
                        parts: BTreeMap::new(),
                        markers: BTreeSet::new(),
                        waiting: BTreeMap::new(),
                        began: now,
                        deadline: now + wait,
                    },
                );
                self.call_bank(MEvent::Input(sn::Input::Snapshot));
            }
            R::Update(update) => {
                if self.apps.lost > 0 {
                    let reason = format!(
                        "node {} restarted and its replica lost the updates it had applied; the store's multicast algorithms cannot bring it back, so it takes no updates (send them to another node; `cluster up` of the whole cluster starts a new store)",
                        self.id
                    );
                    self.reply(c, ClientReply::Refused { reason });
                    return;
                }
                if let Err(reason) = update.check() {
                    self.reply(c, ClientReply::Refused { reason });
                    return;
                }
                self.apps.seq = self.apps.seq.wrapping_add(1);
                let payload = payload_id(self.id.0, self.apps.incarnation, self.apps.seq);
                // The body first on every link, then the algorithm's messages behind it.
                let peers = self.apps.peers.clone();
                for &p in peers.ids() {
                    if p != self.id {
                        self.send(
                            p,
                            PeerMsg::Update {
                                payload,
                                update: update.clone(),
                            },
                        );
                    }
                }
                self.apps.bodies.insert(payload, update);
                self.apps.waiting.insert(payload, c);
                self.call_store(MEvent::Input(mc::Input::Multicast(payload)));
            }
            R::Replica { log } => {
                let a = &self.apps;
                let status = ReplicaStatus {
                    node: self.id,
                    multicast: a.multicast.clone(),
                    accounts: a
                        .replica
                        .accounts
                        .iter()
                        .map(|(k, &v)| (k.clone(), v))
                        .collect(),
                    applied: a.replica.applied.len() as u64,
                    log: if log {
                        a.replica.applied.clone()
                    } else {
                        Vec::new()
                    },
                    digest: a.replica.digest(),
                    total: a.cut().total,
                    pending: a.waiting.len() as u64,
                    missing: a.missing,
                    lost: a.lost > 0,
                    balance: a.bank.balance(),
                };
                self.reply(c, ClientReply::Replica(Box::new(status)));
            }
            _ => {}
        }
    }

    /// Snapshots whose client's timeout ran out: the client learns which nodes were silent.
    pub(super) fn expire_snapshots(&mut self, now: Instant) {
        // A part incomplete for a heartbeat: tell its initiator which markers are missing, so
        // that a snapshot that times out can name the silent node, not only the waiting ones.
        let after = self.timeouts().heartbeat;
        let mut reports = Vec::new();
        for (id, r) in self.apps.recording.iter_mut() {
            if !r.reported && now.duration_since(r.since) >= after {
                r.reported = true;
                reports.push((*id, r.markers.clone()));
            }
        }
        for (snapshot, markers) in reports {
            let on = self.missing_markers(&markers);
            self.send(snapshot.initiator, PeerMsg::Waiting { snapshot, on });
        }
        let expired: Vec<SnapshotId> = self
            .apps
            .gathering
            .iter()
            .filter(|(_, g)| now >= g.deadline)
            .map(|(&id, _)| id)
            .collect();
        for id in expired {
            let g = self.apps.gathering.remove(&id).expect("listed");
            let others: Vec<NodeId> = self
                .apps
                .peers
                .ids()
                .iter()
                .copied()
                .filter(|&p| p != self.id)
                .collect();
            // Silent: a node whose marker has not reached the initiator, or a node that some
            // other node reported still waiting for.
            let mut silent: BTreeSet<NodeId> = others
                .iter()
                .copied()
                .filter(|p| !g.markers.contains(p))
                .collect();
            for on in g.waiting.values() {
                silent.extend(on.iter().copied());
            }
            let waiting_on_them: BTreeSet<NodeId> = g
                .waiting
                .iter()
                .filter(|(_, on)| !on.is_empty())
                .map(|(&w, _)| w)
                .chain((others.iter().any(|p| !g.markers.contains(p))).then_some(self.id))
                .collect();
            let list = |s: &BTreeSet<NodeId>| {
                s.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let no_part: Vec<String> = self
                .apps
                .peers
                .ids()
                .iter()
                .filter(|p| !g.parts.contains_key(p))
                .map(|p| p.to_string())
                .collect();
            let waited = now.duration_since(g.began);
            let reason = if silent.is_empty() {
                format!(
                    "snapshot {}#{} not complete after {waited:.1?}: every marker arrived, but no part came from node(s) {} (their links to node {} failed?)",
                    id.initiator,
                    id.number,
                    no_part.join(", "),
                    self.id
                )
            } else {
                format!(
                    "snapshot {}#{} not complete after {waited:.1?}: node(s) {} did not answer (no marker from them reached node(s) {}); parts missing from node(s) {}",
                    id.initiator,
                    id.number,
                    list(&silent),
                    list(&waiting_on_them),
                    no_part.join(", ")
                )
            };
            warn!(node = %self.id, "{reason}");
            self.reply(g.client, ClientReply::Refused { reason });
        }
    }

    /// Client `c` left: nobody waits for its snapshots and updates any more.
    pub(super) fn forget_app_client(&mut self, c: u64) {
        // Its updates stay pending until applied (a reply to a gone client goes nowhere).
        self.apps.gathering.retain(|_, g| g.client != c);
    }
}
