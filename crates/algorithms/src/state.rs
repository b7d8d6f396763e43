//! Serializing the processes' state for people to read (the web page's state panel): maps
//! whose keys JSON cannot take as keys, and hash maps, whose order would change from run to run.

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map as a list of `[key, value]` pairs, in key order (JSON object keys must be strings).
pub fn pairs<K: Serialize, V: Serialize, S: Serializer>(
    map: &BTreeMap<K, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(map.len()))?;
    for entry in map {
        seq.serialize_element(&entry)?;
    }
    seq.end()
}

/// A hash map as a list of `[key, value]` pairs sorted by key, so that the same state always
/// serializes to the same text.
pub fn sorted<K: Serialize + Ord + Hash, V: Serialize, S: Serializer>(
    map: &HashMap<K, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut entries: Vec<(&K, &V)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut seq = s.serialize_seq(Some(entries.len()))?;
    for entry in entries {
        seq.serialize_element(&entry)?;
    }
    seq.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct S {
        #[serde(serialize_with = "pairs")]
        a: BTreeMap<(u32, u32), bool>,
        #[serde(serialize_with = "sorted")]
        b: HashMap<u64, &'static str>,
    }

    #[test]
    fn maps_become_sorted_pair_lists() {
        let s = S {
            a: [((2, 1), true), ((1, 9), false)].into_iter().collect(),
            b: [(3, "c"), (1, "a"), (2, "b")].into_iter().collect(),
        };
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"a":[[[1,9],false],[[2,1],true]],"b":[[1,"a"],[2,"b"],[3,"c"]]}"#
        );
    }
}
