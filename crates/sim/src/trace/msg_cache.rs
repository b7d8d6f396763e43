//! The JSON of the messages sent lately, found by their value.
//!
//! A trace line of a send or a delivery ends with the message's kind and JSON
//! (`,"kind":"Request","msg":{"Request":{"ts":3}}`). Writing the JSON through serde costs a few
//! hundred instructions, and most messages are sent many times over: a broadcast sends one
//! REQUEST to every peer, and every peer answers it with the same REPLY. So the text is kept per
//! message value, in a small direct-mapped table indexed by the value's hash and checked by
//! `==`; a message not there is written and takes its slot.
//!
//! This relies on a message's JSON being a function of its value: two messages equal by `Eq`
//! serialize to the same text. Every message type of the project derives both; a type whose
//! `Eq` ignored a field its `Serialize` writes would see the text of an equal message written
//! before. `tests::texts_are_what_serde_writes` compares the table's texts with serde_json's on
//! random sequences of messages that collide in the table.

use crate::value_json::{write_str, ValueJson};
use distsync_core::Message;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// How many messages' texts are kept (a power of two). At N = 32 a saturated mutual exclusion
/// run has about 64 distinct messages in flight.
const SLOTS: usize = 256;

/// Messages' `,"kind":...,"msg":...` texts by value.
pub(crate) struct MsgCache<M> {
    keys: Vec<Option<M>>,
    texts: Vec<Vec<u8>>,
}

impl<M> Default for MsgCache<M> {
    fn default() -> Self {
        MsgCache {
            keys: Vec::new(),
            texts: Vec::new(),
        }
    }
}

impl<M: Message> MsgCache<M> {
    /// The slot of `msg`'s value.
    #[inline]
    fn slot(msg: &M) -> usize {
        let mut h = FxHasher::default();
        msg.hash(&mut h);
        // The hash's high bits, mixed: FxHash's low bits vary little for small integers.
        (h.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// `msg`'s kind and JSON as a line's tail writes them: `,"kind":"K","msg":JSON`.
    #[inline]
    pub(crate) fn text(&mut self, msg: &M, json: &mut ValueJson) -> &[u8] {
        if self.keys.is_empty() {
            self.keys.resize_with(SLOTS, || None);
            self.texts.resize_with(SLOTS, Vec::new);
        }
        let i = Self::slot(msg);
        if self.keys[i].as_ref() != Some(msg) {
            self.fill(i, msg, json);
        }
        &self.texts[i]
    }

    /// Writes `msg`'s text into slot `i`, which it takes.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, i: usize, msg: &M, json: &mut ValueJson) {
        let text = &mut self.texts[i];
        text.clear();
        text.extend_from_slice(b",\"kind\":");
        write_str(text, msg.kind());
        text.extend_from_slice(b",\"msg\":");
        json.write(msg, text);
        self.keys[i] = Some(msg.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    enum Msg {
        Request { ts: u64 },
        Reply { ts: u64 },
        Ids(Vec<u32>),
        Probe,
    }

    impl Message for Msg {
        fn kind(&self) -> &'static str {
            match self {
                Msg::Request { .. } => "Request",
                Msg::Reply { .. } => "Re\"ply",
                Msg::Ids(_) => "Ids",
                Msg::Probe => "Probe",
            }
        }
    }

    fn msg() -> impl Strategy<Value = Msg> {
        prop_oneof![
            (0u64..600).prop_map(|ts| Msg::Request { ts }),
            (0u64..600).prop_map(|ts| Msg::Reply { ts }),
            proptest::collection::vec(0u32..4, 0..3).prop_map(Msg::Ids),
            Just(Msg::Probe),
        ]
    }

    fn expected(m: &Msg) -> Vec<u8> {
        format!(
            ",\"kind\":{},\"msg\":{}",
            serde_json::to_string(m.kind()).unwrap(),
            serde_json::to_string(&serde_json::to_value(m).unwrap()).unwrap()
        )
        .into_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever was kept before (more values than slots, so that they collide), the text
        /// given for a message is its kind and its JSON as serde_json writes them.
        #[test]
        fn texts_are_what_serde_writes(msgs in proptest::collection::vec(msg(), 1..800)) {
            let mut cache = MsgCache::default();
            let mut json = ValueJson::default();
            for m in &msgs {
                prop_assert_eq!(cache.text(m, &mut json).to_vec(), expected(m));
            }
        }
    }
}
