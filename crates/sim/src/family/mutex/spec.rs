//! The scenario's fields of mutual exclusion: the parameters some of its algorithms read.

use crate::family::section::{section, Codec, Refusal};
use distsync_core::{NodeId, QuorumKind};
use serde::de::{Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

section! {
    /// The mutual-exclusion fields of a scenario (top-level keys of the file;
    /// `Scenario::mutex`), each read by some algorithms of the family.
    pub struct MutexSpec {
        /// The central algorithm's lock manager.
        pub coordinator: Option<NodeId> => Refusal::Param,
        /// The initial token holder of token algorithms.
        pub holder: Option<NodeId> => Refusal::Param,
        /// Tree edges for tree algorithms.
        pub tree: Option<Vec<[NodeId; 2]>> as Edges => Refusal::Param,
        /// Quorum construction for quorum algorithms.
        pub quorums: Option<QuorumKind> => Refusal::Param,
    }
}

impl MutexSpec {
    /// Sets the algorithms' parameters of this section in `params`.
    pub(crate) fn params(&self, params: &mut distsync_core::Params) {
        params.coordinator = self.coordinator;
        params.holder = self.holder;
        params.tree = self.tree.clone();
        params.quorums = self.quorums;
    }

    /// Checks that every node the section names is a member (`member` refuses one that is
    /// not, naming the field).
    pub(crate) fn check<E>(&self, member: impl Fn(&str, NodeId) -> Result<(), E>) -> Result<(), E> {
        if let Some(c) = self.coordinator {
            member("coordinator", c)?;
        }
        if let Some(h) = self.holder {
            member("holder", h)?;
        }
        if let Some(tree) = &self.tree {
            for (i, [a, b]) in tree.iter().enumerate() {
                member(&format!("tree[{i}]"), *a)?;
                member(&format!("tree[{i}]"), *b)?;
            }
        }
        Ok(())
    }
}

/// How `tree` is written: a list of edges, each exactly two ids. Read as `[NodeId; 2]` alone,
/// an edge of three ids (`[[0, 1, 2]]`) would lose its third without a word.
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Edges(Option<Vec<Edge>>);

impl Codec<Option<Vec<[NodeId; 2]>>> for Edges {
    fn encode(value: &Option<Vec<[NodeId; 2]>>) -> Edges {
        Edges(value.as_ref().map(|v| v.iter().map(|&e| Edge(e)).collect()))
    }
    fn decode(self) -> Option<Vec<[NodeId; 2]>> {
        self.0.map(|v| v.into_iter().map(|Edge(e)| e).collect())
    }
}

/// One edge of `tree`: two ids, refused (naming the field) with fewer or more.
#[derive(Serialize)]
#[serde(transparent)]
pub(crate) struct Edge([NodeId; 2]);

impl<'de> Deserialize<'de> for Edge {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Edge, D::Error> {
        struct EdgeVisitor;
        impl<'de> Visitor<'de> for EdgeVisitor {
            type Value = Edge;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an edge of `tree`: two ids, like [0, 1]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Edge, A::Error> {
                let mut ids = Vec::with_capacity(2);
                while let Some(id) = seq.next_element::<NodeId>()? {
                    ids.push(id);
                }
                match ids[..] {
                    [a, b] => Ok(Edge([a, b])),
                    _ => Err(A::Error::custom(format!(
                        "`tree`: an edge is two ids, like [0, 1], and this one has {}",
                        ids.len()
                    ))),
                }
            }
        }
        deserializer.deserialize_seq(EdgeVisitor)
    }
}
