//! Membership: the roster (every node of the cluster and its address) is part of the view.
//!
//! A node starts with the roster of its cluster file, or with the one it stored beside its
//! epoch mark (`node-N.roster`) when a membership change committed one since. An admin asks the
//! leader for a change (`Membership`, an admin request: `distsync cluster add|remove`); the
//! leader checks the new roster as a cluster file is checked, then runs a view change that
//! carries it:
//! 1. `Prepare(e)` to the live nodes, as any view change;
//! 2. at the commit, the nodes of the *current* roster that answered `State` must be a majority
//!    of it, or the change is refused (the view commits with the current roster);
//! 3. the leader stores the new roster, sends it (`Roster(e, nodes)`) to every member ahead of
//!    `Commit(e)` on the same FIFO link, adopts it, and answers the admin; the members adopt it
//!    (stored before used) when it arrives.
//!
//! Adopting a roster links to the added nodes, drops the links of the removed ones, refuses
//! their connections from then on ([`crate::peer::Admitted`]), and counts majorities (the view's
//! quorum for leases, the epoch marks') over the new roster. The election instance is rebuilt
//! over the new roster once no view change is under way, as at a restart (it holds an election).
//! An added node starts from a cluster file that lists it, joins as a follower through the
//! ordinary view change that lets a live node in, and its `Prepare` and `Commit` raise its epoch
//! mark above every view before: its first grant's token (`epoch << 32` and up) is above every
//! token granted before the change.
//!
//! Every node sends its roster to a peer whose link comes up, so a node that was down during a
//! change learns it from the first node it hears (a roster of a higher epoch replaces its own),
//! and ahead of its `State` to a leader's `Prepare`: a view commits with a majority of answers,
//! and any majority holds a node of the majority that accepted the last change, so a leader
//! that missed it (two leaders for a while) adopts it before it commits; a change it was asked
//! for on the older roster is then refused ("ask again").
//! A removed node that starts again from its old file is refused by every node of the new roster
//! (not a peer), so it forms no majority and grants nothing; one that stored the roster that
//! removed it does not start.
//!
//! The replicated store and the snapshot bank (`apps`) keep the roster the node started with;
//! they follow a change at each node's next restart.

use super::{Node, NodeError};
use crate::config::{Cluster, NodeEntry};
use crate::wire::{ClientReply, Epoch, MemberChange, PeerMsg};
use distsync_core::NodeId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;
use tracing::{info, warn};

/// The file holding the roster node `id` last adopted, in `dir` (beside its epoch mark).
pub fn roster_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.roster"))
}

/// A stored roster.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RosterFile {
    /// The view that committed it.
    epoch: Epoch,
    /// The nodes.
    node: Vec<NodeEntry>,
}

/// A membership change the leader was asked for, until its view commits.
pub(super) struct Proposal {
    /// The admin's connection, answered once the change commits or fails.
    client: u64,
    /// The roster asked for.
    pub nodes: Vec<NodeEntry>,
    /// The change, for the logs and the answers.
    what: String,
    /// The roster it changes (its view's epoch): one adopted meanwhile voids it.
    base: Epoch,
}

/// `cluster` with the roster node `id` stored in its state directory, if it stored one, and the
/// epoch of that roster (0: the file's own). Refused when the stored roster does not hold `id`
/// (the node was removed) or cannot be read.
pub(super) fn stored(cluster: Cluster, id: NodeId) -> Result<(Cluster, Epoch), NodeError> {
    let Some(dir) = cluster.state_dir.clone() else {
        return Ok((cluster, 0));
    };
    let path = roster_path(&dir, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((cluster, 0)),
        Err(e) => {
            return Err(NodeError(format!(
                "node {id}: cannot read its roster {}: {e}",
                path.display()
            )))
        }
    };
    let file: RosterFile = toml::from_str(&text).map_err(|e| {
        NodeError(format!(
            "node {id}: {}: not a roster file: {}",
            path.display(),
            e.message()
        ))
    })?;
    if !file.node.iter().any(|n| n.id == id) {
        return Err(NodeError(format!(
            "node {id} was removed from the cluster (the roster committed in view {} lists {:?}, \
             {}); it no longer starts: remove that file to add it again with `distsync cluster add`",
            file.epoch,
            file.node.iter().map(|n| n.id.0).collect::<Vec<_>>(),
            path.display()
        )));
    }
    let origin = cluster.origin.clone();
    let mut with = Cluster::check(
        crate::config::ClusterFile {
            nodes: file.node,
            ..cluster.file
        },
        &format!("{origin} with the roster of {}", path.display()),
    )
    .map_err(|e| NodeError(e.to_string()))?;
    with.origin = origin;
    with.state_dir = Some(dir);
    Ok((with, file.epoch))
}

/// Stores `nodes` as the roster committed in view `epoch`.
fn store(dir: &Path, id: NodeId, epoch: Epoch, nodes: &[NodeEntry]) -> std::io::Result<()> {
    let text = toml::to_string(&RosterFile {
        epoch,
        node: nodes.to_vec(),
    })
    .map_err(std::io::Error::other)?;
    crate::files::write_private(&roster_path(dir, id), text.as_bytes())
}

/// The roster of `cluster`, as it travels.
fn entries(cluster: &Cluster) -> Vec<(NodeId, String)> {
    cluster
        .file
        .nodes
        .iter()
        .map(|n| (n.id, n.addr.clone()))
        .collect()
}

impl Node {
    /// This node's roster, for a peer (`Roster`).
    pub(super) fn roster_msg(&self) -> PeerMsg {
        PeerMsg::Roster {
            epoch: self.roster_epoch,
            nodes: entries(&self.cluster),
        }
    }

    /// An admin asks for a membership change.
    pub(super) fn on_member_request(&mut self, c: u64, change: MemberChange) {
        match self.propose(&change) {
            Ok(nodes) => {
                let what = match &change {
                    MemberChange::Add { id, addr } => format!("add node {id} at {addr}"),
                    MemberChange::Remove { id } => format!("remove node {id}"),
                };
                info!(node = %self.id, client = c, "an admin asks to {what}: changing view");
                self.proposal = Some(Proposal {
                    client: c,
                    nodes,
                    what,
                    base: self.roster_epoch,
                });
                self.force_change = true;
                self.lead();
            }
            Err(reason) => {
                info!(node = %self.id, client = c, "membership change refused: {reason}");
                self.reply(c, ClientReply::Refused { reason });
            }
        }
    }

    /// The roster `change` makes of the current one, checked; or why not.
    fn propose(&self, change: &MemberChange) -> Result<Vec<NodeEntry>, String> {
        let me = self.id;
        if self.election.leader() != Some(me) || self.election.electing() {
            return Err(match self.election.leader() {
                Some(l) if !self.election.electing() => {
                    format!("node {me} is not the leader (node {l} is): ask the leader")
                }
                _ => format!("node {me} is not the leader (an election is under way)"),
            });
        }
        if let Some(p) = &self.proposal {
            return Err(format!(
                "a membership change is under way ({}); ask again once it is done",
                p.what
            ));
        }
        let mut nodes = self.cluster.file.nodes.clone();
        match change {
            MemberChange::Add { id, addr } => {
                if nodes.iter().any(|n| n.id == *id) {
                    return Err(format!("node {id} is in the roster already"));
                }
                nodes.push(NodeEntry {
                    id: *id,
                    addr: addr.clone(),
                });
            }
            MemberChange::Remove { id } => {
                if *id == me {
                    return Err(format!(
                        "node {me} is the leader and does not remove itself: stop it first \
                         (`distsync cluster stop --id {me}`; `cluster remove` does), then ask the \
                         next leader"
                    ));
                }
                if !nodes.iter().any(|n| n.id == *id) {
                    return Err(format!("node {id} is not in the roster"));
                }
                nodes.retain(|n| n.id != *id);
            }
        }
        // The new roster is checked as a cluster file is (ids, addresses, the algorithms'
        // constraints on the number of nodes), its addresses resolved here.
        Cluster::check(
            crate::config::ClusterFile {
                nodes: nodes.clone(),
                ..self.cluster.file.clone()
            },
            "the new roster",
        )
        .map_err(|e| e.to_string())?;
        Ok(nodes)
    }

    /// How many nodes of the current roster are among `answered`, and how many are a majority
    /// of it.
    pub(super) fn roster_majority(&self, answered: impl Iterator<Item = NodeId>) -> (usize, usize) {
        let n = self.cluster.peers.len();
        let k = answered.filter(|&p| self.cluster.peers.contains(p)).count();
        (k, n / 2 + 1)
    }

    /// At the leader's commit of view `epoch` carrying `nodes`: adopt it and answer the admin,
    /// or, without a majority of the current roster among the nodes that answered, refuse.
    /// Returns whether the roster changed.
    pub(super) fn commit_roster(
        &mut self,
        epoch: Epoch,
        nodes: Vec<NodeEntry>,
        answered: Vec<NodeId>,
    ) -> bool {
        let Some(proposal) = self.proposal.take() else {
            return false;
        };
        if proposal.base != self.roster_epoch {
            // A member told this leader of a roster committed by another leader meanwhile
            // (its answer to the Prepare): the change was asked of an older roster.
            let reason = format!(
                "a roster was committed in view {} meanwhile: nothing changed; ask again",
                self.roster_epoch
            );
            self.reply(proposal.client, ClientReply::Refused { reason });
            return false;
        }
        let (k, need) = self.roster_majority(answered.iter().copied());
        if k < need {
            let reason = format!(
                "only {k} of the {} nodes of the roster answered the view change; a membership \
                 change needs a majority ({need}): nothing changed",
                self.cluster.peers.len()
            );
            warn!(node = %self.id, epoch, "cannot {}: {reason}", proposal.what);
            self.reply(proposal.client, ClientReply::Refused { reason });
            return false;
        }
        let wire: Vec<(NodeId, String)> = nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
        // A removed node that is still up (it could not be stopped) is told, on its link before
        // `adopt` drops it, so that it stops serving and stores the roster that removed it.
        let removed: Vec<NodeId> = answered
            .iter()
            .copied()
            .filter(|&p| p != self.id && !wire.iter().any(|(id, _)| *id == p))
            .collect();
        for p in removed {
            self.send(
                p,
                PeerMsg::Roster {
                    epoch,
                    nodes: wire.clone(),
                },
            );
        }
        if !self.adopt(epoch, nodes) {
            self.reply(
                proposal.client,
                ClientReply::Refused {
                    reason: "the new roster could not be adopted (see the leader's log)".into(),
                },
            );
            return false;
        }
        info!(node = %self.id, epoch, "membership change committed: {}", proposal.what);
        self.reply(proposal.client, ClientReply::Roster { epoch, nodes: wire });
        true
    }

    /// The leader of a membership change lost its leadership before the commit.
    pub(super) fn abandon_proposal(&mut self, why: &str) {
        if let Some(p) = self.proposal.take() {
            warn!(node = %self.id, "membership change abandoned ({}): {why}", p.what);
            self.reply(
                p.client,
                ClientReply::Refused {
                    reason: format!("{why}: nothing changed; ask again"),
                },
            );
        }
    }

    /// A peer's roster: adopted when committed in a later view than this node's.
    pub(super) fn on_roster(&mut self, from: NodeId, epoch: Epoch, nodes: Vec<(NodeId, String)>) {
        if epoch <= self.roster_epoch {
            return;
        }
        if !self.epochs.plausible(epoch) {
            self.drop_peer_msg(
                from,
                format_args!("a roster of view {epoch}, far above what a majority has seen"),
            );
            return;
        }
        let nodes = nodes
            .into_iter()
            .map(|(id, addr)| NodeEntry { id, addr })
            .collect();
        self.adopt(epoch, nodes);
    }

    /// Makes `nodes` (committed in view `epoch`) this node's roster: stored first, then the
    /// links, the admitted peers, the majorities, and (at the next quiet tick) the election.
    fn adopt(&mut self, epoch: Epoch, nodes: Vec<NodeEntry>) -> bool {
        let me = self.id;
        let old: Vec<NodeId> = self.cluster.peers.ids().to_vec();
        let cluster = match Cluster::check(
            crate::config::ClusterFile {
                nodes: nodes.clone(),
                ..self.cluster.file.clone()
            },
            &self.cluster.origin,
        ) {
            Ok(mut c) => {
                c.origin = self.cluster.origin.clone();
                c.state_dir = self.cluster.state_dir.clone();
                c
            }
            Err(e) => {
                warn!(node = %me, epoch, "roster not adopted: {e}");
                return false;
            }
        };
        if let Some(dir) = &cluster.state_dir {
            if let Err(e) = store(dir, me, epoch, &nodes) {
                // Not adopted (a restart would come back with the old one): it sits out until
                // its disk takes writes, and is sent the roster again when it takes part.
                self.epochs.sit_out(epoch, "roster", e);
                return false;
            }
        }
        let new: Vec<NodeId> = cluster.peers.ids().to_vec();
        self.roster_epoch = epoch;
        let cluster = Arc::new(cluster);
        self.cluster = cluster.clone();
        if old == new {
            return true;
        }
        info!(node = %me, epoch, was = ?old, now = ?new, "roster adopted");
        *self.admitted.write().unwrap_or_else(|e| e.into_inner()) = new.clone();
        for gone in old.iter().filter(|p| !new.contains(p)) {
            // Dropping the sender ends the link's task.
            self.links.remove(gone);
            self.last_heard.remove(gone);
            self.epochs.forget(*gone);
        }
        for &added in new.iter().filter(|p| !old.contains(p) && **p != me) {
            let (tx, rx) = mpsc::channel(crate::peer::LINK_QUEUE);
            self.links.insert(added, tx);
            crate::peer::spawn_link(
                me,
                added,
                cluster.clone(),
                self.keys.clone(),
                Arc::new(tokio::sync::Notify::new()),
                self.epochs.silent.clone(),
                rx,
            );
        }
        self.epochs.resize(new.len());
        self.quorum = new.len() / 2 + 1;
        self.election_due = true;
        if !new.contains(&me) {
            self.removed = Some(format!(
                "node {me} was removed from the cluster (membership change in view {epoch}); use another node"
            ));
            self.revoke_all("this node was removed from the cluster");
        }
        true
    }

    /// Once no view change is under way and the view is open, rebuilds the election instance over the roster
    /// adopted since it was built; it starts as a restarted process does (an election).
    pub(super) fn rebuild_election(&mut self) {
        // After the view opens: an election now at the leader would abandon the change.
        let settled = self.change.is_none() && self.view.as_ref().is_none_or(|v| v.open);
        if !self.election_due || !settled || self.removed.is_some() {
            return;
        }
        self.election_due = false;
        let ek = crate::machine::election_kind(&self.cluster.file.election)
            .expect("checked with the file");
        self.timers.cancel_election();
        self.election_peers = self.cluster.peers.clone();
        self.election = (ek.new)(self.id, &self.election_peers, &self.params);
        info!(node = %self.id, peers = ?self.election_peers.ids(), "election instance rebuilt over the new roster");
        self.start();
    }

    /// Whether `from` is in this node's roster (messages of other nodes are dropped, but their
    /// roster).
    pub(super) fn in_roster(&self, from: NodeId) -> bool {
        self.cluster.peers.contains(from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster_in(dir: &Path) -> Cluster {
        let mut text = "mutex = \"ricart-agrawala\"\nelection = \"bully\"\n\
                        secret = \"0123456789abcdef0123\"\n"
            .to_string();
        for i in 0..3 {
            text += &format!("[[node]]\nid = {i}\naddr = \"127.0.0.1:{}\"\n", 7000 + i);
        }
        let mut c = Cluster::from_toml(&text, "test.toml").unwrap();
        c.state_dir = Some(dir.to_path_buf());
        c
    }

    fn entry(id: u32) -> NodeEntry {
        NodeEntry {
            id: NodeId(id),
            addr: format!("127.0.0.1:{}", 7000 + id),
        }
    }

    /// A node starts from the roster it stored, not its file's; one the stored roster leaves
    /// out does not start, saying why and which file; a corrupt roster file is named.
    #[test]
    fn a_stored_roster_replaces_the_files_and_a_removed_node_does_not_start() {
        let tmp = tempfile::TempDir::with_prefix("distsync-roster-").unwrap();
        let dir = tmp.path();
        let (c, epoch) = stored(cluster_in(dir), NodeId(1)).unwrap();
        assert_eq!(
            (c.peers.len(), epoch),
            (3, 0),
            "no roster stored: the file's"
        );
        store(dir, NodeId(1), 5 << 10 | 2, &[entry(0), entry(1), entry(3)]).unwrap();
        let (c, epoch) = stored(cluster_in(dir), NodeId(1)).unwrap();
        assert_eq!(c.peers.ids(), &[NodeId(0), NodeId(1), NodeId(3)]);
        assert_eq!(epoch, 5 << 10 | 2);
        assert_eq!(c.origin, "test.toml");
        assert_eq!(c.addr_of(NodeId(3)).unwrap().port(), 7003);
        store(dir, NodeId(2), 6 << 10 | 1, &[entry(0), entry(1)]).unwrap();
        let e = stored(cluster_in(dir), NodeId(2)).unwrap_err().0;
        assert!(
            e.contains("node 2 was removed") && e.contains("node-2.roster"),
            "{e}"
        );
        std::fs::write(roster_path(dir, NodeId(0)), "epoch = \"x\"\n").unwrap();
        let e = stored(cluster_in(dir), NodeId(0)).unwrap_err().0;
        assert!(e.contains("not a roster file"), "{e}");
    }
}
