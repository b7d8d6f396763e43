//! Node identities and the ordered membership every process is told about.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The identity of one process. Ids need not be contiguous: the ring example of seed 000 has
/// processes 0, 1, 3, 4, 5 and 6.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a list of ids cannot be a membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeersError {
    /// No ids at all.
    Empty,
    /// The same id appears twice.
    Duplicate(NodeId),
}

impl fmt::Display for PeersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeersError::Empty => write!(f, "at least one node id is needed"),
            PeersError::Duplicate(id) => write!(f, "node id {id} appears more than once"),
        }
    }
}

impl std::error::Error for PeersError {}

/// The ordered list of all process ids. The order is the ring order for ring algorithms: the
/// successor of `ids[i]` is `ids[(i + 1) % n]`.
#[derive(Clone, Debug)]
pub struct Peers {
    /// Shared: processes that keep the whole membership (the ring algorithm's members before
    /// any COORDINATOR) hold this list instead of a copy each ([`Peers::shared_ids`]).
    ids: Arc<[NodeId]>,
    index: Index,
    /// The highest id, found once: every process of an election asks for it when it starts.
    highest: NodeId,
}

#[derive(Clone, Debug)]
enum Index {
    /// `dense[id]` is the position of `id`, or `u32::MAX`; used when ids are small numbers.
    Dense(Vec<u32>),
    Sparse(HashMap<NodeId, usize>),
}

impl Peers {
    /// A membership in the given order.
    ///
    /// ```
    /// use distsync_core::{NodeId, Peers};
    /// let ring = Peers::new([3, 5, 0, 1, 4, 6].map(NodeId).to_vec()).unwrap();
    /// assert_eq!(ring.successor(NodeId(6)), NodeId(3));
    /// assert_eq!(ring.position(NodeId(0)), Some(2));
    /// ```
    pub fn new(ids: Vec<NodeId>) -> Result<Peers, PeersError> {
        if ids.is_empty() {
            return Err(PeersError::Empty);
        }
        let max = ids.iter().map(|id| id.0 as usize).max().unwrap_or(0);
        let index = if max <= 16 * ids.len() + 1024 {
            let mut dense = vec![u32::MAX; max + 1];
            for (pos, id) in ids.iter().enumerate() {
                if dense[id.0 as usize] != u32::MAX {
                    return Err(PeersError::Duplicate(*id));
                }
                dense[id.0 as usize] = pos as u32;
            }
            Index::Dense(dense)
        } else {
            let mut sparse = HashMap::with_capacity(ids.len());
            for (pos, id) in ids.iter().enumerate() {
                if sparse.insert(*id, pos).is_some() {
                    return Err(PeersError::Duplicate(*id));
                }
            }
            Index::Sparse(sparse)
        };
        let highest = *ids.iter().max().expect("non-empty");
        Ok(Peers {
            ids: ids.into(),
            index,
            highest,
        })
    }

    /// The ids `0..n` in increasing order.
    pub fn range(n: u32) -> Peers {
        Peers::new((0..n.max(1)).map(NodeId).collect()).expect("0..n has no duplicates")
    }

    /// All ids, in membership (ring) order.
    #[inline]
    pub fn ids(&self) -> &[NodeId] {
        &self.ids
    }

    /// All ids, in membership (ring) order, as a list that costs nothing to keep: every holder
    /// shares one.
    pub fn shared_ids(&self) -> Arc<[NodeId]> {
        Arc::clone(&self.ids)
    }

    /// How many processes there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Never true: a membership has at least one id.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Where `id` stands in the membership order, if it is a member.
    #[inline]
    pub fn position(&self, id: NodeId) -> Option<usize> {
        match &self.index {
            Index::Dense(dense) => dense
                .get(id.0 as usize)
                .copied()
                .filter(|&p| p != u32::MAX)
                .map(|p| p as usize),
            Index::Sparse(sparse) => sparse.get(&id).copied(),
        }
    }

    /// Whether `id` is a member.
    pub fn contains(&self, id: NodeId) -> bool {
        self.position(id).is_some()
    }

    /// The position of a member; panics on a non-member, which is a bug in the caller.
    #[inline]
    pub fn index_of(&self, id: NodeId) -> usize {
        self.position(id)
            .unwrap_or_else(|| panic!("node {id} is not a member"))
    }

    /// The next member in ring order.
    pub fn successor(&self, id: NodeId) -> NodeId {
        let next = self.index_of(id) + 1;
        self.ids[if next == self.ids.len() { 0 } else { next }]
    }

    /// The highest id of the membership.
    pub fn highest(&self) -> NodeId {
        self.highest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_empty_are_refused() {
        assert_eq!(Peers::new(vec![]).unwrap_err(), PeersError::Empty);
        assert_eq!(
            Peers::new(vec![NodeId(1), NodeId(2), NodeId(1)]).unwrap_err(),
            PeersError::Duplicate(NodeId(1))
        );
        // Sparse ids take the hash-map index, with the same answers.
        let sparse = Peers::new(vec![NodeId(4_000_000_000), NodeId(7)]).unwrap();
        assert_eq!(sparse.position(NodeId(7)), Some(1));
        assert_eq!(sparse.position(NodeId(8)), None);
        assert_eq!(sparse.successor(NodeId(7)), NodeId(4_000_000_000));
        assert!(Peers::new(vec![NodeId(4_000_000_000), NodeId(4_000_000_000)]).is_err());
    }

    #[test]
    fn ring_order_is_membership_order() {
        let ring = Peers::new([3, 5, 0, 1, 4, 6].map(NodeId).to_vec()).unwrap();
        let walk: Vec<u32> = std::iter::successors(Some(NodeId(3)), |&id| Some(ring.successor(id)))
            .take(7)
            .map(|id| id.0)
            .collect();
        assert_eq!(walk, vec![3, 5, 0, 1, 4, 6, 3]);
        assert_eq!(ring.highest(), NodeId(6));
        assert!(!ring.contains(NodeId(2)));
    }
}
