//! Lists of ids that the ring algorithms look up at every hop, kept so that a look-up and an
//! append cost the same at any length. Nothing here is a rule of an algorithm, only how a list
//! is kept, so it lives apart; each reads, writes, compares and hashes as the plain list.
//!
//! With every process of a ring of n starting, the ring algorithm with id lists (ring.rs) has n
//! ELECTION messages each going round the ring, and every receiver asks whether its id is in
//! the list the message carries (rule 3); the ring link (ring_link.rs) keeps a copy of every
//! message it sends until it is acknowledged. A plain `Vec` made both a copy and a scan per hop,
//! n³/2 ids in all (3.4 x 10^10 at n = 4,096). [`IdList`] makes a copy one shared pointer and
//! the look-up one hash probe. The ring algorithm with active lists (ring_active_list.rs) asks
//! the same of each process's active list for every elect message ([`IndexedIds`]).

use distsync_core::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

/// Lists no longer than this are scanned; longer ones are indexed by a set of their ids.
const SCAN: usize = 32;

/// The hasher of the index: ids are numbers chosen by the scenario, not by an adversary, so a
/// multiplication spreads them enough.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type Index = HashSet<NodeId, BuildHasherDefault<IdHasher>>;

fn index_of(ids: &[NodeId]) -> Index {
    let mut index = Index::with_capacity_and_hasher(ids.len() * 2, Default::default());
    index.extend(ids.iter().copied());
    index
}

/// A list of ids with a set of them beside it once it is longer than `SCAN` (32): the list of a
/// process's own (ring_active_list.rs's active list), cloned with the process.
#[derive(Clone, Default)]
pub struct IndexedIds {
    ids: Vec<NodeId>,
    index: Option<Index>,
}

impl IndexedIds {
    /// Whether `id` is in the list.
    pub fn contains(&self, id: NodeId) -> bool {
        match &self.index {
            Some(index) => index.contains(&id),
            None => self.ids.contains(&id),
        }
    }

    /// Appends `id`.
    pub fn push(&mut self, id: NodeId) {
        self.ids.push(id);
        match &mut self.index {
            Some(index) => {
                index.insert(id);
            }
            None if self.ids.len() > SCAN => self.index = Some(index_of(&self.ids)),
            None => {}
        }
    }

    /// The ids, in the order they were added.
    pub fn as_slice(&self) -> &[NodeId] {
        &self.ids
    }
}

impl From<Vec<NodeId>> for IndexedIds {
    fn from(ids: Vec<NodeId>) -> IndexedIds {
        let index = (ids.len() > SCAN).then(|| index_of(&ids));
        IndexedIds { ids, index }
    }
}

impl PartialEq for IndexedIds {
    fn eq(&self, other: &IndexedIds) -> bool {
        self.ids == other.ids
    }
}

impl Eq for IndexedIds {}

impl Hash for IndexedIds {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ids.hash(state);
    }
}

impl fmt::Debug for IndexedIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ids.fmt(f)
    }
}

impl Serialize for IndexedIds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.ids.serialize(s)
    }
}

/// The ids an ELECTION message of the ring algorithm has met, appended one per hop.
///
/// The copies of one message (the one in flight, the ring link's copy kept until the
/// acknowledgement, the next process's copy with its id appended) share one growing buffer:
/// each copy is a length into it, since a copy only ever appends. An append to a copy whose
/// length is the buffer's (the usual case: the latest hop) extends the buffer in place; an
/// append to a shorter copy (a copy resent after its receiver was taken for crashed, which
/// another copy had already extended) starts a buffer of its own. A look-up in the latest copy
/// probes the buffer's set of ids once the list is longer than `SCAN` (32); in a shorter copy it
/// scans.
#[derive(Clone)]
pub struct IdList {
    shared: Arc<Mutex<IndexedIds>>,
    len: usize,
}

impl IdList {
    /// The list of the one id `id` (an initiator's).
    pub fn of(id: NodeId) -> IdList {
        IdList::from(vec![id])
    }

    fn buffer(&self) -> MutexGuard<'_, IndexedIds> {
        // Nothing panics while holding the lock, but a poisoned one is as good as any.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `id` is in the list.
    pub fn contains(&self, id: NodeId) -> bool {
        let buffer = self.buffer();
        if buffer.ids.len() == self.len {
            buffer.contains(id)
        } else {
            buffer.ids[..self.len].contains(&id)
        }
    }

    /// Appends `id`.
    pub fn push(&mut self, id: NodeId) {
        let mut buffer = self.buffer();
        if buffer.ids.len() == self.len {
            buffer.push(id);
            drop(buffer);
        } else {
            let mut ids = buffer.ids[..self.len].to_vec();
            drop(buffer);
            ids.push(id);
            self.shared = Arc::new(Mutex::new(IndexedIds::from(ids)));
        }
        self.len += 1;
    }

    /// The number of ids.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ids, copied out.
    pub fn to_vec(&self) -> Vec<NodeId> {
        self.buffer().ids[..self.len].to_vec()
    }
}

impl From<Vec<NodeId>> for IdList {
    fn from(ids: Vec<NodeId>) -> IdList {
        let len = ids.len();
        IdList {
            shared: Arc::new(Mutex::new(IndexedIds::from(ids))),
            len,
        }
    }
}

impl PartialEq for IdList {
    fn eq(&self, other: &IdList) -> bool {
        if self.len != other.len {
            return false;
        }
        if Arc::ptr_eq(&self.shared, &other.shared) {
            return true; // two lengths into one buffer: the same ids
        }
        // One lock at a time.
        let mine = self.to_vec();
        other.buffer().ids[..other.len] == mine[..]
    }
}

impl Eq for IdList {}

impl Hash for IdList {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.buffer().ids[..self.len].hash(state);
    }
}

impl fmt::Debug for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.buffer().ids[..self.len].fmt(f)
    }
}

impl Serialize for IdList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.buffer().ids[..self.len].serialize(s)
    }
}

impl<'de> Deserialize<'de> for IdList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<IdList, D::Error> {
        Vec::<NodeId>::deserialize(d).map(IdList::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::DefaultHasher;

    fn ids(v: impl IntoIterator<Item = u32>) -> Vec<NodeId> {
        v.into_iter().map(NodeId).collect()
    }

    fn digest(h: &impl Hash) -> u64 {
        let mut s = DefaultHasher::new();
        h.hash(&mut s);
        s.finish()
    }

    /// Copies taken along a message's way, appended to and looked up in any order, read as the
    /// plain lists they stand for, below and above the length where the index starts.
    #[test]
    fn copies_of_a_list_read_as_plain_lists() {
        let mut list = IdList::of(NodeId(1000));
        let mut plain = vec![NodeId(1000)];
        let mut kept: Vec<(IdList, Vec<NodeId>)> = Vec::new();
        for i in 0..100u32 {
            // The ring link's copy, then the next hop's append.
            kept.push((list.clone(), plain.clone()));
            let id = NodeId(i * 7 % 101);
            list.push(id);
            plain.push(id);
            // Every 9th hop, an old copy is extended (a resend): it forks.
            if i % 9 == 8 {
                let (mut old, mut old_plain) = kept[kept.len() / 2].clone();
                old.push(NodeId(5000 + i));
                old_plain.push(NodeId(5000 + i));
                kept.push((old, old_plain));
            }
        }
        kept.push((list, plain));
        for (list, plain) in &kept {
            assert_eq!(list.to_vec(), *plain);
            assert_eq!(list.len(), plain.len());
            for probe in (0..120).chain([1000, 5008, 5017, 6000]) {
                let id = NodeId(probe);
                assert_eq!(
                    list.contains(id),
                    plain.contains(&id),
                    "{probe} in {plain:?}"
                );
            }
            assert_eq!(format!("{list:?}"), format!("{plain:?}"));
            assert_eq!(
                serde_json::to_string(list).unwrap(),
                serde_json::to_string(plain).unwrap()
            );
            assert_eq!(digest(list), digest(plain));
            let back: IdList =
                serde_json::from_str(&serde_json::to_string(plain).unwrap()).unwrap();
            assert_eq!(&back, list);
        }
        // Equal lists in different buffers are equal; a prefix is not.
        assert_eq!(IdList::from(ids(0..50)), IdList::from(ids(0..50)));
        let mut a = IdList::from(ids(0..40));
        let b = a.clone();
        a.push(NodeId(40));
        assert_ne!(a, b);
        assert_eq!(a, IdList::from(ids(0..41)));
    }

    #[test]
    fn an_indexed_list_reads_as_its_plain_list() {
        let mut list = IndexedIds::default();
        let mut plain = Vec::new();
        for i in 0..80u32 {
            let id = NodeId(i * 13 % 97);
            assert_eq!(list.contains(id), plain.contains(&id));
            list.push(id);
            plain.push(id);
            assert!(list.contains(id));
            assert!(!list.contains(NodeId(200 + i)));
        }
        assert_eq!(list.as_slice(), &plain[..]);
        assert_eq!(list, IndexedIds::from(plain.clone()));
        assert_eq!(digest(&list), digest(&plain));
        assert_eq!(format!("{list:?}"), format!("{plain:?}"));
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
        let cloned = list.clone();
        assert!(cloned.contains(NodeId(13)) && !cloned.contains(NodeId(199)));
    }
}
