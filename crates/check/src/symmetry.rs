//! Symmetry reduction (`--symmetry`): where processes are interchangeable up to their ids, two
//! states that differ only by a renaming of those processes have the same futures up to that
//! renaming, so only one of them needs exploring.
//!
//! The checker keeps exploring **actual** states (so every counterexample is a real trace, with
//! nothing to rename back); what changes is the key under which a state is remembered: the
//! smallest, over every permutation of the interchangeable positions, of the fingerprint of the
//! renamed state. Two states get the same key exactly when one is a renaming of the other (up
//! to 128-bit collisions). The renamed fingerprint of each interned process state, message,
//! timer and application state is computed once per permutation and cached by each worker.
//!
//! The checker's ids are the positions 0..N-1, so a permutation of positions is a renaming of
//! ids. Only algorithms whose rules never compare ids (and whose application model is
//! symmetric) may be reduced; the others are refused with the reason.

use crate::fingerprint::fingerprint;
use crate::state::{Checkable, Faults, St, CRASHED};
use crate::MAX_NODES;
use distsync_algorithms::multicast::CausalBroadcast;
use distsync_algorithms::mutex::{central, Central};
use distsync_core::{NodeId, Params, Peers, Process};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::any::{Any, TypeId};

type Rename<T> = Box<dyn Fn(&T, &[usize]) -> u128 + Send + Sync>;

/// How to rename one algorithm's values: each function gives the fingerprint of the value
/// renamed by `perm` (old position -> new position).
pub(crate) struct Renaming<A: Process> {
    /// The interchangeable positions; the others stay where they are.
    pub movable: Vec<usize>,
    pub proc: Rename<A>,
    pub msg: Rename<A::Msg>,
    pub timer: Rename<A::Timer>,
}

fn down<T: 'static, U: 'static>(x: &T) -> &U {
    (x as &dyn Any)
        .downcast_ref::<U>()
        .expect("the type was checked")
}

/// The values of a type without ids: renaming leaves them as they are.
fn unchanged<T: std::hash::Hash + ?Sized>(x: &T, _perm: &[usize]) -> u128 {
    fingerprint(x)
}

/// The fingerprint of a JSON value (after renaming).
fn fp_json(v: &Value) -> u128 {
    xxhash_rust::xxh3::xxh3_128(v.to_string().as_bytes())
}

/// A JSON number that is a position (or id), renamed.
fn rename_num(v: &mut Value, perm: &[usize]) {
    if let Some(p) = v.as_u64() {
        *v = Value::from(perm[p as usize] as u64);
    }
}

/// A JSON array indexed by position, reordered.
fn permute_array(v: &mut Value, perm: &[usize]) {
    if let Value::Array(a) = v {
        let old = a.clone();
        for (p, x) in old.into_iter().enumerate() {
            a[perm[p]] = x;
        }
    }
}

/// Multicast `k` of process `p` is number `p * per + k`: the same multicast after renaming.
pub(crate) fn rename_multicast(idx: u64, per: u64, perm: &[usize]) -> u64 {
    perm[(idx / per) as usize] as u64 * per + idx % per
}

/// The renaming of algorithm `A`, or why it has none.
pub(crate) fn renaming<A: Checkable>(
    peers: &Peers,
    params: &Params,
    requests: u32,
) -> Result<Renaming<A>, String> {
    let n = peers.len();
    let t = TypeId::of::<A>();
    if t == TypeId::of::<Central>() {
        // The clients are interchangeable; the coordinator stays.
        let c = central::coordinator(peers, params);
        let cpos = peers.position(c).expect("a member");
        return Ok(Renaming {
            movable: (0..n).filter(|&p| p != cpos).collect(),
            proc: Box::new(|a: &A, perm: &[usize]| {
                let map = |id: NodeId| NodeId(perm[id.0 as usize] as u32);
                let renamed = match down::<A, Central>(a) {
                    Central::Coordinator {
                        holder,
                        request_queue,
                        held,
                        latest,
                    } => Central::Coordinator {
                        holder: holder.map(map),
                        request_queue: request_queue.iter().map(|&id| map(id)).collect(),
                        held: *held,
                        latest: latest.iter().map(|(&id, &k)| (map(id), k)).collect(),
                    },
                    Central::Client {
                        coordinator,
                        state,
                        request,
                    } => Central::Client {
                        coordinator: map(*coordinator),
                        state: *state,
                        request: *request,
                    },
                };
                fingerprint(&renamed)
            }),
            // REQUEST, GRANT, DENIED and RELEASE carry a request number, never an id.
            msg: Box::new(unchanged),
            timer: Box::new(unchanged),
        });
    }
    if t == TypeId::of::<CausalBroadcast>() {
        // Every process is interchangeable: the rules compare vector timestamps entry by entry,
        // never ids. Renaming moves the vector entries, the sender positions in the buffer, and
        // the payloads (multicast k of p becomes multicast k of its new name).
        let per = u64::from(requests.max(1));
        return Ok(Renaming {
            movable: (0..n).collect(),
            proc: Box::new(move |a: &A, perm: &[usize]| {
                let p = down::<A, CausalBroadcast>(a);
                let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
                rename_num(&mut v["id"], perm);
                permute_array(&mut v["vt"], perm);
                if let Value::Array(buffer) = &mut v["buffer"] {
                    for entry in buffer {
                        rename_num(&mut entry[0], perm);
                        permute_array(&mut entry[1], perm);
                        if let Some(x) = entry[2].as_u64() {
                            entry[2] = Value::from(rename_multicast(x, per, perm));
                        }
                    }
                }
                fp_json(&v)
            }),
            msg: Box::new(move |m: &A::Msg, perm: &[usize]| {
                let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
                let body = &mut v["Message"];
                permute_array(&mut body["ts"], perm);
                if let Some(x) = body["payload"].as_u64() {
                    body["payload"] = Value::from(rename_multicast(x, per, perm));
                }
                fp_json(&v)
            }),
            timer: Box::new(unchanged),
        });
    }
    Err(
        "symmetry reduction applies only where processes are interchangeable up to their ids; \
         this algorithm's rules tell processes apart by id (ties broken by id, a ring or tree \
         order, quorums, a fixed holder or initiator), so renaming processes changes what \
         happens. It is supported for `central` (the clients) and `causal-broadcast` (every \
         process)"
            .to_string(),
    )
}

/// Every permutation of `movable` (the other positions fixed), as old -> new position.
pub(crate) fn permutations(n: usize, movable: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut order = movable.to_vec();
    fn heap(
        k: usize,
        order: &mut Vec<usize>,
        n: usize,
        movable: &[usize],
        out: &mut Vec<Vec<usize>>,
    ) {
        if k <= 1 {
            let mut perm: Vec<usize> = (0..n).collect();
            for (i, &from) in movable.iter().enumerate() {
                perm[from] = order[i];
            }
            out.push(perm);
            return;
        }
        for i in 0..k {
            heap(k - 1, order, n, movable, out);
            let j = if k.is_multiple_of(2) { i } else { 0 };
            order.swap(j, k - 1);
        }
    }
    let k = order.len();
    heap(k, &mut order, n, movable, &mut out);
    out.sort();
    out.dedup();
    out
}

/// Each worker's cache of renamed fingerprints, by (permutation, interned id).
#[derive(Default)]
pub(crate) struct SymCache {
    procs: FxHashMap<(u16, u32), u128>,
    msgs: FxHashMap<(u16, u32), u128>,
    timers: FxHashMap<(u16, u32), u128>,
    apps: FxHashMap<(u16, u32), u128>,
    flights: Vec<(u16, u128)>,
    pending: Vec<(u16, u128, u64)>,
    bytes: Vec<u8>,
}

/// What the canonical key needs: renamed fingerprints of interned values.
pub(crate) trait Renamer {
    fn proc(&self, id: u32, perm: &[usize]) -> u128;
    fn msg(&self, id: u32, perm: &[usize]) -> u128;
    fn timer(&self, id: u32, perm: &[usize]) -> u128;
    fn app(&self, id: u32, perm: &[usize]) -> u128;
}

/// The key of `st` under symmetry: the smallest fingerprint of its renamings.
pub(crate) fn canonical(
    st: &St,
    n: usize,
    fifo: bool,
    perms: &[Vec<usize>],
    r: &dyn Renamer,
    c: &mut SymCache,
) -> u128 {
    let mut best = u128::MAX;
    for (k, perm) in perms.iter().enumerate() {
        let k = k as u16;
        let b = &mut c.bytes;
        b.clear();
        let mut procs = [0u128; MAX_NODES];
        for p in 0..n {
            if st.procs[p] != CRASHED {
                procs[perm[p]] = *c
                    .procs
                    .entry((k, st.procs[p]))
                    .or_insert_with(|| r.proc(st.procs[p], perm));
            }
        }
        for fp in &procs[..n] {
            b.extend_from_slice(&fp.to_le_bytes());
        }
        let app = *c
            .apps
            .entry((k, st.app))
            .or_insert_with(|| r.app(st.app, perm));
        b.extend_from_slice(&app.to_le_bytes());
        b.extend_from_slice(&st.now.to_le_bytes());
        let Faults {
            crashes,
            recoveries,
            losses,
            duplicates,
            partition,
            cut,
        } = st.faults;
        let mut renamed_cut = 0u64;
        for (p, &to) in perm.iter().enumerate().take(n) {
            if (cut >> p) & 1 == 1 {
                renamed_cut |= 1 << to;
            }
        }
        if renamed_cut & 1 == 1 {
            // The cut is the side without position 0.
            renamed_cut = !renamed_cut & ((1u64 << n) - 1);
        }
        b.extend_from_slice(&[crashes, recoveries, losses, duplicates, partition]);
        b.extend_from_slice(&renamed_cut.to_le_bytes());
        c.flights.clear();
        for f in &st.msgs {
            let (from, to) = (f.link as usize / n, f.link as usize % n);
            let link = (perm[from] * n + perm[to]) as u16;
            let fp = *c
                .msgs
                .entry((k, f.msg))
                .or_insert_with(|| r.msg(f.msg, perm));
            c.flights.push((link, fp));
        }
        if fifo {
            // A link's order is kept: sort by link only (stable).
            c.flights.sort_by_key(|&(link, _)| link);
        } else {
            c.flights.sort_unstable();
        }
        b.extend_from_slice(&(c.flights.len() as u32).to_le_bytes());
        for (link, fp) in &c.flights {
            b.extend_from_slice(&link.to_le_bytes());
            b.extend_from_slice(&fp.to_le_bytes());
        }
        c.pending.clear();
        for t in &st.timers {
            let fp = *c
                .timers
                .entry((k, t.timer))
                .or_insert_with(|| r.timer(t.timer, perm));
            c.pending
                .push((perm[t.pos as usize] as u16, fp, t.deadline));
        }
        c.pending.sort_unstable();
        for (pos, fp, deadline) in &c.pending {
            b.extend_from_slice(&pos.to_le_bytes());
            b.extend_from_slice(&fp.to_le_bytes());
            b.extend_from_slice(&deadline.to_le_bytes());
        }
        best = best.min(xxhash_rust::xxh3::xxh3_128(b));
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_move_only_the_movable_positions() {
        let p = permutations(3, &[0, 1, 2]);
        assert_eq!(p.len(), 6);
        let q = permutations(4, &[1, 2, 3]);
        assert_eq!(q.len(), 6);
        assert!(q.iter().all(|perm| perm[0] == 0));
        assert!(q.contains(&vec![0, 1, 2, 3]));
        assert_eq!(permutations(2, &[1]), vec![vec![0, 1]]);
    }

    #[test]
    fn multicasts_are_renamed_with_their_sender() {
        // 3 processes, 2 multicasts each; swap 0 and 2.
        let perm = [2, 1, 0];
        assert_eq!(rename_multicast(0, 2, &perm), 4);
        assert_eq!(rename_multicast(1, 2, &perm), 5);
        assert_eq!(rename_multicast(3, 2, &perm), 3);
    }
}
