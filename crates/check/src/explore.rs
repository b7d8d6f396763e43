//! The breadth-first explorer, shared by every family: level by level, each level's states
//! expanded in parallel chunks and merged in a fixed order, so that the result (verdict, state
//! count, counterexample) is the same on one thread as on many. Merging is one thread's work;
//! while it merges a batch of chunks, the other threads judge the batch before and expand the
//! batch after (taking turns instead, a second core made the checker slower: 0.91x at load 1.5;
//! docs/check.md has the figures).
//!
//! A level is one buffer of encoded states (see [`crate::model::St`]); each worker thread has
//! its own scratch state and memo of handler calls ([`Worker`]).

use crate::model::{lock, Checkable, Eff, Effects, Model, Move, Spec, St, Violation, Worker};
use crate::visited::{shard_of, Probe, Visited, SHARDS};
use crate::{
    Action, Bound, CheckError, Counterexample, Outcome, Progress, Property, Stats, Step,
    StepEffect, Transition, Verdict,
};
use distsync_core::{Algorithm, Message, NodeId};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use std::time::Instant;

/// In the browser (wasm32-unknown-unknown, where `std::time::Instant` panics) there is no clock:
/// elapsed times read zero and progress is reported by state count alone.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[derive(Clone, Copy)]
struct Instant;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl Instant {
    fn now() -> Instant {
        Instant
    }
    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

/// States whose successors are merged and judged together: a violation stops the exploration
/// at the end of its chunk, so the figures then depend on this size (and on nothing else).
const CHUNK: usize = 64;

/// Chunks expanded at once, in parallel, before they are merged one by one.
const BATCH: usize = 32;

/// The states of chunk `c` of a level of `count` states.
fn chunk_states(c: usize, count: usize) -> std::ops::Range<usize> {
    c * CHUNK..((c + 1) * CHUNK).min(count)
}

/// `f` of each of `items`, in order: on the current pool's threads unless there is one thread.
fn each<T: Send>(
    threads: usize,
    items: std::ops::Range<usize>,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Vec<T> {
    if threads == 1 {
        items.map(f).collect()
    } else {
        items.into_par_iter().map(f).collect()
    }
}

/// One chunk merged: where its parents end in the level, its new states, what stopped it,
/// and the figures after it.
struct Merged {
    end: usize,
    fresh: std::ops::Range<usize>,
    move_violation: Option<(Violation, Vec<u32>)>,
    bound_hit: bool,
    states: usize,
    transitions: u64,
    depth: usize,
}

/// One successor of a state; its bytes are `bytes[start..end]` of its chunk's [`Expanded`].
struct Succ {
    /// The move's position in the parent's enabled list.
    k: u32,
    start: usize,
    end: usize,
    fp: u128,
    /// A property broken by the transition itself (an output).
    on_move: Option<Violation>,
    /// For liveness: the move's fairness identity.
    fair: u64,
}

/// Every worker's scratch space: one per pool thread, and one for the calling thread.
struct Workers<A: distsync_core::Process>(Vec<Mutex<Worker<A>>>);

impl<A: distsync_core::Process> Workers<A> {
    fn new(threads: usize) -> Self {
        Workers(
            (0..=threads)
                .map(|_| Mutex::new(Worker::default()))
                .collect(),
        )
    }

    /// Runs `f` with this thread's worker (no other thread uses it meanwhile).
    fn with<R>(&self, f: impl FnOnce(&mut Worker<A>) -> R) -> R {
        let slot = rayon::current_thread_index()
            .unwrap_or(self.0.len() - 1)
            .min(self.0.len() - 1);
        let mut w = lock(&self.0[slot]);
        f(&mut w)
    }
}

/// What is judged of a state reached for the first time.
struct Judged {
    /// A property broken by the state.
    on_state: Option<Violation>,
    /// No move but faults is enabled there.
    stuck: bool,
    /// Some move at all is enabled there.
    live: bool,
    goal: bool,
    /// For liveness: the positions with an obligation.
    waiting: u64,
}

fn judge<A, S>(model: &Model<'_, A, S>, w: &mut Worker<A>, bytes: &[u8]) -> Judged
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut st = std::mem::take(&mut w.st);
    st.decode(model, bytes, false);
    let stuck = !model.progress_possible(&st, &mut w.inputs);
    let (app, world) = (model.app(&st), model.world(&st));
    let on_state = model.spec.check_state(app, &world).or_else(|| {
        stuck
            .then(|| model.spec.check_terminal(app, &world))
            .flatten()
    });
    // Some move is enabled if one other than a fault is, or a fault is.
    let live = !stuck || model.fault_possible(&st);
    debug_assert_eq!(live, {
        model.enabled(&st, &mut w.moves, &mut w.inputs);
        !w.moves.is_empty()
    });
    let judged = Judged {
        on_state,
        stuck,
        live,
        goal: model.spec.goal(app, &world),
        waiting: if model.config.liveness {
            model.waiting_mask(&st)
        } else {
            0
        },
    };
    w.st = st;
    judged
}

/// The successors of a chunk of states, and (for liveness) the fairness identities of their
/// moves, in flat buffers: one allocation of each per chunk instead of per state (allocating
/// and freeing three vectors per state was a fifth of the checker's samples, and the freeing
/// happened in the merge, which one thread does alone).
#[derive(Default)]
struct Expanded {
    bytes: Vec<u8>,
    succs: Vec<Succ>,
    enabled: Vec<u64>,
    /// Per parent, in order: where its successors and its enabled identities end.
    ends: Vec<(usize, usize)>,
    /// The successors' positions in `succs` grouped by the visited shard of their
    /// fingerprint, each group in order; `shard_ends[s]` is where shard `s`'s group ends.
    by_shard: Vec<u32>,
    shard_ends: [u32; SHARDS],
    /// Per successor, what its shard's lookup found (a state's index, or tagged [`NEW`] or
    /// [`AGAIN`]); written by the shard's thread, read by the merge.
    found: Vec<AtomicU64>,
}

/// Emptied [`Expanded`] buffers, handed back by the merge for the next chunks to fill: a chunk
/// grows its buffers state by state, and growing new ones for every chunk was 35,000 `realloc`
/// copies per 100,000 states, 8% of the instructions (callgrind).
type Spares = Mutex<Vec<Expanded>>;

impl Expanded {
    fn clear(&mut self) {
        self.bytes.clear();
        self.succs.clear();
        self.enabled.clear();
        self.ends.clear();
        self.by_shard.clear();
        self.found.clear();
    }

    /// Groups the successors by shard ([`Expanded::by_shard`]) and makes room for what their
    /// lookups find.
    fn group_by_shard(&mut self) {
        let mut starts = [0u32; SHARDS];
        for s in &self.succs {
            starts[shard_of(s.fp)] += 1;
        }
        let mut at = 0;
        for (start, end) in starts.iter_mut().zip(&mut self.shard_ends) {
            at += *start;
            *end = at;
            *start = at - *start;
        }
        self.by_shard.resize(self.succs.len(), 0);
        for (j, s) in self.succs.iter().enumerate() {
            let at = &mut starts[shard_of(s.fp)];
            self.by_shard[*at as usize] = j as u32;
            *at += 1;
        }
        self.found
            .resize_with(self.succs.len(), || AtomicU64::new(0));
    }

    /// The positions in `succs` of the successors in shard `s`, in order.
    fn in_shard(&self, s: usize) -> &[u32] {
        let start = if s == 0 { 0 } else { self.shard_ends[s - 1] };
        &self.by_shard[start as usize..self.shard_ends[s] as usize]
    }

    /// Where parent `p`'s successors and enabled identities are, in `succs` and `enabled`.
    fn parent(&self, p: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (s0, e0) = if p == 0 { (0, 0) } else { self.ends[p - 1] };
        let (s1, e1) = self.ends[p];
        (s0..s1, e0..e1)
    }
}

/// Expands the states `parents` of `level` into one [`Expanded`] (a spare one, if any), its
/// successors `grouped` by visited shard for lookups on several threads.
fn expand_chunk<A, S>(
    model: &Model<'_, A, S>,
    w: &mut Worker<A>,
    level: &Level,
    parents: std::ops::Range<usize>,
    spares: &Spares,
    grouped: bool,
) -> Expanded
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let spare = lock(spares).pop();
    let mut ex = spare.unwrap_or_default();
    ex.ends.reserve(parents.len());
    for i in parents {
        expand(model, w, level.get(i), &mut ex);
        ex.ends.push((ex.succs.len(), ex.enabled.len()));
    }
    if grouped {
        ex.group_by_shard();
    }
    ex
}

/// Appends the successors of `parent` to `ex`.
fn expand<A, S>(model: &Model<'_, A, S>, w: &mut Worker<A>, parent: &[u8], ex: &mut Expanded)
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut st = std::mem::take(&mut w.st);
    let mut next = std::mem::take(&mut w.next);
    let mut moves = std::mem::take(&mut w.moves);
    st.decode(model, parent, true);
    model.enabled(&st, &mut moves, &mut w.inputs);
    let liveness = model.config.liveness;
    ex.bytes.reserve(parent.len() * (moves.len() + 1));
    ex.succs.reserve(moves.len());
    let enabled_start = ex.enabled.len();
    let mut sink = Effects::sink();
    for &m in &moves {
        model.prefetch_call(w, &st, m);
    }
    for (k, &m) in moves.iter().enumerate() {
        let fair = if liveness { model.fair_id(&st, m) } else { 0 };
        if fair != 0 && !ex.enabled[enabled_start..].contains(&fair) {
            ex.enabled.push(fair);
        }
        next.clone_from(&st);
        let on_move = model.apply(w, &mut next, m, &mut sink);
        let start = ex.bytes.len();
        next.encode(model.n, &mut ex.bytes);
        let fp = model.key(&next, &ex.bytes[start..], &mut w.sym);
        ex.succs.push(Succ {
            k: k as u32,
            start,
            end: ex.bytes.len(),
            fp,
            on_move,
            fair,
        });
    }
    w.st = st;
    w.next = next;
    w.moves = moves;
}

/// What [`explore`] found: the verdict as moves, and the figures.
pub(crate) struct Found {
    pub violation: Option<(Violation, Vec<u32>, Option<usize>)>,
    pub stats: Stats,
}

/// The resident set size of this process, in bytes (Linux; 0 elsewhere).
pub(crate) fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// The machine's memory, in bytes (Linux; `None` elsewhere).
pub(crate) fn machine_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// One BFS level: its states' bytes, and per state its range there and its index.
#[derive(Default)]
struct Level {
    bytes: Vec<u8>,
    states: Vec<(usize, usize, u32)>,
}

impl Level {
    fn push(&mut self, bytes: &[u8], idx: u32) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        self.states.push((start, self.bytes.len(), idx));
    }
    fn get(&self, i: usize) -> &[u8] {
        let (a, b, _) = self.states[i];
        &self.bytes[a..b]
    }
    fn clear(&mut self) {
        self.bytes.clear();
        self.states.clear();
    }
}

/// Explores `model` breadth first until a property breaks, every reachable state is visited,
/// or a bound is reached.
pub(crate) fn explore<A, S>(
    model: &Model<'_, A, S>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Found, CheckError>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let start = Instant::now();
    let config = model.config;
    let bounds = config.bounds;
    let max_memory = bounds.max_memory.unwrap_or_else(crate::default_max_memory);
    let threads = if config.threads == 0 {
        rayon::current_num_threads().max(1)
    } else {
        config.threads
    };
    // One thread needs no pool (and the browser, single-threaded, cannot make one).
    let pool = if threads > 1 {
        Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| CheckError::new("threads", e.to_string()))?,
        )
    } else {
        None
    };
    let workers = Workers::<A>::new(threads);
    let spares = Spares::default();
    let mut stats = Stats {
        threads,
        ..Stats::default()
    };

    let (root, violation, root_stuck, root_goal, root_waiting, (root_bytes, root_key)) = workers
        .with(|w| {
            let (root, violation) = model.initial(w, &mut Effects::sink());
            let root_stuck = !model.progress_possible(&root, &mut w.inputs);
            let (app, world) = (model.app(&root), model.world(&root));
            let violation = violation
                .or_else(|| model.spec.check_state(app, &world))
                .or_else(|| {
                    root_stuck
                        .then(|| model.spec.check_terminal(app, &world))
                        .flatten()
                });
            let goal = model.spec.goal(app, &world);
            let waiting = if config.liveness {
                model.waiting_mask(&root)
            } else {
                0
            };
            let mut bytes = Vec::new();
            root.encode(model.n, &mut bytes);
            let key = model.key(&root, &bytes, &mut w.sym);
            (root, violation, root_stuck, goal, waiting, (bytes, key))
        });
    drop(root);
    stats.states = 1;
    if let Some(v) = violation {
        stats.elapsed = start.elapsed();
        return Ok(Found {
            violation: Some((v, Vec::new(), None)),
            stats,
        });
    }
    if root_stuck {
        stats.terminal_states += 1;
    }
    let mut graph = Graph {
        parents_of: vec![(u32::MAX, u32::MAX)],
        visited: (0..SHARDS).map(|_| Shard::default()).collect(),
        edges: Vec::new(),
        goal: vec![root_goal],
        live: Live {
            edge_info: Vec::new(),
            waiting: vec![root_waiting],
            enabled_at: vec![(0, 0)],
            enabled: Vec::new(),
        },
        states: 1,
        transitions: 0,
        depth: 0,
        stopped: false,
    };
    let root_shard = &mut graph.visited[shard_of(root_key)].table;
    root_shard.reserve(1);
    if let Probe::Vacant(slot) = root_shard.probe(root_key) {
        root_shard.insert(slot, root_key, 0);
    }

    // Both at once: `serial` on this thread, `parallel` on the pool (and on this thread, once
    // `serial` is done); one after the other on one thread.
    let both = |serial: &mut (dyn FnMut() + Send), parallel: &mut (dyn FnMut() + Send)| match &pool
    {
        None => {
            serial();
            parallel();
        }
        Some(pool) => {
            pool.install(|| rayon::join(serial, parallel));
        }
    };

    let mut frontier = Level::default();
    frontier.push(&root_bytes, 0);
    let mut depth = 0usize;
    let mut last_report = Instant::now();
    // The memory is read, and progress reported, every 4096 new states or 200ms.
    let mut next_check = 4096;
    let mut found: Option<(Violation, Vec<u32>)> = None;
    'levels: while !frontier.states.is_empty() {
        if depth >= bounds.max_depth {
            stats.bound = Some(Bound::Depth);
            break;
        }
        let mut next_level = Level::default();
        let level = std::mem::take(&mut frontier);
        let count = level.states.len();
        let chunks = count.div_ceil(CHUNK);
        // The chunks of the batch from chunk `c0` on, expanded (in parallel).
        let expand_batch = |c0: usize| -> Vec<Expanded> {
            each(threads, c0..(c0 + BATCH).min(chunks), |c| {
                workers.with(|w| {
                    expand_chunk(
                        model,
                        w,
                        &level,
                        chunk_states(c, count),
                        &spares,
                        threads > 1,
                    )
                })
            })
        };
        // A batch's new states, judged (in parallel, a chunk's worth to a task).
        let judge_batch = |fresh: &Level| -> Vec<Judged> {
            let n = fresh.states.len();
            each(threads, 0..n.div_ceil(CHUNK), |c| {
                workers.with(|w| {
                    chunk_states(c, n)
                        .map(|i| judge(model, w, fresh.get(i)))
                        .collect::<Vec<_>>()
                })
            })
            .into_iter()
            .flatten()
            .collect()
        };
        // Batches go through three steps: expanded, merged into the graph (known states become
        // edges, new ones get the next indices: in order, so one thread does it), and judged
        // and taken chunk by chunk, in order, as if each chunk had been expanded alone: the
        // result does not depend on the batch (a violation stops at its chunk, with that
        // chunk's figures). While one thread merges a batch, the others judge the batch before
        // it and expand the batch after it.
        let mut expanded = Vec::new();
        both(&mut || {}, &mut || expanded = expand_batch(0));
        let mut c0 = 0;
        // The last batch merged: its new states and its chunks' figures, not yet judged.
        let mut unjudged: Option<(Level, Vec<Merged>)> = None;
        // A batch's new states, once judged and taken: the buffers the next merge fills.
        let mut spare_fresh = Level::default();
        loop {
            let merging = c0 < chunks && !graph.stopped;
            if !merging && unjudged.is_none() {
                break;
            }
            let c1 = (c0 + BATCH).min(chunks);
            let mut this_batch = std::mem::take(&mut expanded);
            let mut merged_now = None;
            let mut judged = None;
            both(
                &mut || {
                    if merging {
                        merged_now = Some(merge(
                            &mut graph,
                            &level,
                            std::mem::take(&mut this_batch),
                            c0,
                            depth,
                            config,
                            &spares,
                            std::mem::take(&mut spare_fresh),
                            threads,
                        ));
                    }
                },
                &mut || {
                    judged = unjudged.as_ref().map(|(fresh, _)| judge_batch(fresh));
                    if merging && c1 < chunks {
                        expanded = expand_batch(c1);
                    }
                },
            );
            if let (Some((fresh, merged)), Some(judged)) = (unjudged.take(), judged) {
                let mut judged = judged.into_iter();
                for m in merged {
                    // The figures as they were when this chunk was merged.
                    stats.states = m.states;
                    stats.transitions = m.transitions;
                    stats.depth = m.depth;
                    for i in m.fresh {
                        let j = judged.next().expect("one per fresh state");
                        let child = fresh.states[i].2;
                        graph.goal[child as usize] = j.goal;
                        if config.liveness {
                            graph.live.waiting[child as usize] = j.waiting;
                        }
                        if let Some(v) = j.on_state {
                            found = Some((v, path(&graph.parents_of, child, None)));
                            break 'levels;
                        }
                        if j.stuck {
                            stats.terminal_states += 1;
                        }
                        if j.live {
                            next_level.push(fresh.get(i), child);
                        }
                    }
                    if let Some(mv) = m.move_violation {
                        found = Some(mv);
                        break 'levels;
                    }
                    if m.bound_hit {
                        stats.bound = Some(Bound::States);
                        break 'levels;
                    }
                    if stats.states >= next_check || last_report.elapsed().as_millis() >= 200 {
                        next_check = stats.states + 4096;
                        last_report = Instant::now();
                        let rss = resident_bytes();
                        stats.peak_memory = stats.peak_memory.max(rss);
                        progress(&Progress {
                            states: stats.states,
                            depth,
                            frontier: count - m.end + next_level.states.len(),
                            max_states: bounds.max_states,
                            elapsed: start.elapsed(),
                            memory: rss,
                        });
                        if rss > max_memory {
                            stats.bound = Some(Bound::Memory);
                            break 'levels;
                        }
                        if crate::interrupted() {
                            stats.bound = Some(Bound::Interrupted);
                            break 'levels;
                        }
                    }
                }
                // Its buffers, emptied, for the batch after next.
                spare_fresh = fresh;
                spare_fresh.clear();
            }
            unjudged = merged_now;
            c0 = c1;
        }
        frontier = next_level;
        depth += 1;
    }
    stats.peak_memory = stats.peak_memory.max(resident_bytes());
    stats.bound_hit = stats.bound.is_some();
    drop(frontier);
    if let Some((v, moves)) = found {
        stats.elapsed = start.elapsed();
        return Ok(Found {
            violation: Some((v, moves, None)),
            stats,
        });
    }
    if !stats.bound_hit {
        drop(std::mem::take(&mut graph.visited));
        if let Some(stuck) = cannot_finish(&graph.edges, &graph.goal) {
            let moves = path(&graph.parents_of, stuck, None);
            let v = Violation::new(
                Property::Progress,
                format!(
                    "{} no continuation reaches the goal: the processes can keep going, but {}",
                    if moves.is_empty() {
                        "from the initial state".to_string()
                    } else {
                        format!("after these {} steps", moves.len())
                    },
                    model.spec.unreached()
                ),
            );
            stats.elapsed = start.elapsed();
            return Ok(Found {
                violation: Some((v, moves, None)),
                stats,
            });
        }
    }
    if config.liveness && !stats.bound_hit {
        if let Some((pos, state, cycle)) =
            fair_cycle(&graph.edges, &graph.live, graph.goal.len(), model.n)
        {
            let mut moves = path(&graph.parents_of, state, None);
            let loop_start = moves.len();
            moves.extend(cycle);
            let v = Violation::new(
                Property::Liveness,
                format!(
                    "under weak fairness (every message, timer and input continuously possible \
                     is eventually taken) node {} can wait for ever: {} (the last {} steps \
                     repeat)",
                    model.ids()[pos],
                    model.spec.unreached(),
                    moves.len() - loop_start
                ),
            );
            stats.elapsed = start.elapsed();
            return Ok(Found {
                violation: Some((v, moves, Some(loop_start))),
                stats,
            });
        }
    }
    stats.elapsed = start.elapsed();
    Ok(Found {
        violation: None,
        stats,
    })
}

/// The explored graph, as the merge builds it.
struct Graph {
    /// Every state's index, by its fingerprint, in [`SHARDS`] shards.
    visited: Vec<Shard>,
    /// Parent index and the move (its position in the parent's enabled list), by state index.
    parents_of: Vec<(u32, u32)>,
    /// For the progress analysis: every edge between state indices, and the goal states.
    edges: Vec<(u32, u32)>,
    goal: Vec<bool>,
    /// For liveness: per edge its fairness identity and move; per state its obligations and
    /// the identities of its enabled moves.
    live: Live,
    /// The figures as the merge leaves them (the report's are those of the last chunk judged).
    states: usize,
    transitions: u64,
    depth: usize,
    /// A chunk stopped the merge: a violation on a move, or the bound on states.
    stopped: bool,
}

/// The moves from the initial state to state `idx`, then `last`.
fn path(parents: &[(u32, u32)], idx: u32, last: Option<u32>) -> Vec<u32> {
    let mut moves: Vec<u32> = last.into_iter().collect();
    let mut i = idx;
    while parents[i as usize].0 != u32::MAX {
        moves.push(parents[i as usize].1);
        i = parents[i as usize].0;
    }
    moves.reverse();
    moves
}

/// One shard of the visited table, and the slots of the new states the merge numbered since
/// its last lookups (their values are set to the states' indices before its next ones).
#[derive(Default)]
struct Shard {
    table: Visited,
    pending: Vec<(usize, u32)>,
}

/// What a successor's lookup found, in [`Expanded::found`]: a known state's index (tag 0), a
/// new state and its slot in the shard (tag [`NEW`]), or the same new state as an earlier
/// successor of the batch, by chunk (bits 32 to 61) and position (tag [`AGAIN`]).
const NEW: u64 = 1 << 62;
const AGAIN: u64 = 2 << 62;
const TAGS: u64 = 3 << 62;

/// A value in the visited table that is not yet a state's index: the first successor of the
/// batch with that fingerprint, by chunk (bits 32 to 62) and position. The merge numbers it and
/// the shard's next lookups set the index ([`Shard::pending`]).
const PROVISIONAL: u64 = 1 << 63;

/// Looks up every successor of `expanded` in shard `s` of the visited table, in order, and
/// inserts the new ones with provisional values: the batch's work on that shard, which no other
/// shard's touches.
fn look_up_shard(shard: &mut Shard, s: usize, expanded: &[Expanded]) {
    let table = &mut shard.table;
    for (slot, child) in shard.pending.drain(..) {
        table.set(slot, u64::from(child));
    }
    table.reserve(expanded.iter().map(|ex| ex.in_shard(s).len()).sum());
    let order = expanded
        .iter()
        .enumerate()
        .flat_map(|(e, ex)| ex.in_shard(s).iter().map(move |&j| (e, j as usize)));
    // The slot of the successor `AHEAD` lookups on is asked for before each lookup.
    let mut ahead = order.clone();
    for (e, j) in ahead.by_ref().take(AHEAD) {
        table.prefetch(expanded[e].succs[j].fp);
    }
    for (e, j) in order {
        if let Some((e2, j2)) = ahead.next() {
            table.prefetch(expanded[e2].succs[j2].fp);
        }
        let fp = expanded[e].succs[j].fp;
        let found = match table.probe(fp) {
            Probe::Known(v) if v & PROVISIONAL != 0 => AGAIN | (v & !PROVISIONAL),
            Probe::Known(v) => v,
            Probe::Vacant(slot) => {
                table.insert(slot, fp, PROVISIONAL | (e as u64) << 32 | j as u64);
                NEW | slot as u64
            }
        };
        expanded[e].found[j].store(found, Ordering::Relaxed);
    }
}

/// Merges the expanded chunks of the batch from chunk `c0` on of `level` (at `depth`) into
/// `graph`, in order, until a chunk stops it: the batch's new states (in `fresh`, empty), and
/// each chunk's figures. The visited shards are looked up first, each on its own (in parallel
/// on more than one thread); then one thread numbers the new states and links them, in order.
#[allow(clippy::too_many_arguments)]
fn merge(
    graph: &mut Graph,
    level: &Level,
    mut expanded: Vec<Expanded>,
    c0: usize,
    depth: usize,
    config: &crate::Config,
    spares: &Spares,
    mut fresh: Level,
    threads: usize,
) -> (Level, Vec<Merged>) {
    // On one thread the merge looks each successor up itself (the lookups ahead of it would
    // only add work: 7% more instructions).
    let parallel = threads > 1;
    if parallel {
        graph
            .visited
            .par_iter_mut()
            .enumerate()
            .for_each(|(s, shard)| look_up_shard(shard, s, &expanded));
    }
    let count = level.states.len();
    let mut merged: Vec<Merged> = Vec::new();
    // On one thread: the successor whose visited slot is asked for next, `AHEAD` successors
    // before its lookup, across chunks.
    let mut ahead = (0usize, 0usize);
    if !parallel {
        // Room for every successor of the batch in its shard, made once.
        let mut incoming = [0usize; SHARDS];
        for s in expanded.iter().flat_map(|ex| &ex.succs) {
            incoming[shard_of(s.fp)] += 1;
        }
        for (shard, extra) in graph.visited.iter_mut().zip(incoming) {
            shard.table.reserve(extra);
        }
        for _ in 0..AHEAD {
            prefetch_next(&graph.visited, &expanded, &mut ahead);
        }
    }
    for e in 0..expanded.len() {
        let c = c0 + e;
        let chunk = chunk_states(c, count);
        let fresh_start = fresh.states.len();
        let mut move_violation: Option<(Violation, Vec<u32>)> = None;
        let mut bound_hit = false;
        'merge: for (p, i) in chunk.clone().enumerate() {
            let idx = level.states[i].2;
            let (succs, enabled) = expanded[e].parent(p);
            if config.liveness {
                graph.live.enabled_at[idx as usize] =
                    (graph.live.enabled.len() as u32, enabled.len() as u32);
                graph
                    .live
                    .enabled
                    .extend_from_slice(&expanded[e].enabled[enabled]);
            }
            for j in succs {
                if !parallel {
                    prefetch_next(&graph.visited, &expanded, &mut ahead);
                }
                let s = &mut expanded[e].succs[j];
                graph.transitions += 1;
                if let Some(v) = s.on_move.take() {
                    graph.depth = graph.depth.max(depth + 1);
                    move_violation = Some((v, path(&graph.parents_of, idx, Some(s.k))));
                    break 'merge;
                }
                let (k, fair, fp, bytes) = (s.k, s.fair, s.fp, s.start..s.end);
                let found = if parallel {
                    *expanded[e].found[j].get_mut()
                } else {
                    match graph.visited[shard_of(fp)].table.probe(fp) {
                        Probe::Known(v) => v,
                        Probe::Vacant(slot) => NEW | slot as u64,
                    }
                };
                let known = match found & TAGS {
                    0 => Some(found as u32),
                    AGAIN => {
                        // Numbered when that earlier successor was merged.
                        let (e2, j2) = (((found & !TAGS) >> 32) as usize, found as u32 as usize);
                        let first = *expanded[e2].found[j2].get_mut();
                        debug_assert_eq!(first & TAGS, 0, "numbered before");
                        Some(first as u32)
                    }
                    _ => None,
                };
                if let Some(known) = known {
                    graph.edges.push((idx, known));
                    if config.liveness {
                        graph.live.edge_info.push((fair, k));
                    }
                    continue;
                }
                if graph.states >= config.bounds.max_states {
                    bound_hit = true;
                    break 'merge;
                }
                let child = graph.parents_of.len() as u32;
                let (shard, slot) = (&mut graph.visited[shard_of(fp)], (found & !TAGS) as usize);
                if parallel {
                    shard.pending.push((slot, child));
                    *expanded[e].found[j].get_mut() = u64::from(child);
                } else {
                    shard.table.insert(slot, fp, u64::from(child));
                }
                graph.parents_of.push((idx, k));
                graph.edges.push((idx, child));
                graph.goal.push(false);
                if config.liveness {
                    graph.live.edge_info.push((fair, k));
                    graph.live.waiting.push(0);
                    graph.live.enabled_at.push((0, 0));
                }
                graph.states += 1;
                graph.depth = graph.depth.max(depth + 1);
                fresh.push(&expanded[e].bytes[bytes], child);
            }
        }
        let stop = move_violation.is_some() || bound_hit;
        merged.push(Merged {
            end: chunk.end,
            fresh: fresh_start..fresh.states.len(),
            move_violation,
            bound_hit,
            states: graph.states,
            transitions: graph.transitions,
            depth: graph.depth,
        });
        if stop {
            graph.stopped = true;
            break;
        }
    }
    // The buffers, emptied, for the chunks to come (an AGAIN may point into any earlier chunk
    // of the batch, so they are handed back only now).
    let mut spare = lock(spares);
    for mut ex in expanded {
        ex.clear();
        spare.push(ex);
    }
    (fresh, merged)
}

/// Lookups ahead of which a successor's visited slot is asked for.
const AHEAD: usize = 16;

/// Asks for the visited slot of the successor at `at` (chunk, successor) of `expanded`, and
/// moves `at` to the next one.
fn prefetch_next(visited: &[Shard], expanded: &[Expanded], at: &mut (usize, usize)) {
    while let Some(ex) = expanded.get(at.0) {
        if let Some(s) = ex.succs.get(at.1) {
            visited[shard_of(s.fp)].table.prefetch(s.fp);
            at.1 += 1;
            return;
        }
        *at = (at.0 + 1, 0);
    }
}

/// What liveness needs of the explored graph.
struct Live {
    /// Per edge (parallel to `edges`): its fairness identity (0: a fault) and its move.
    edge_info: Vec<(u64, u32)>,
    /// Per state: the positions with an obligation.
    waiting: Vec<u64>,
    /// Per state: where its enabled identities are in `enabled`.
    enabled_at: Vec<(u32, u32)>,
    enabled: Vec<u64>,
}

/// A fair cycle along which some position waits for ever: the position, a state of the cycle
/// (the shallowest of its strongly connected component) and the cycle's moves from there.
fn fair_cycle(
    edges: &[(u32, u32)],
    live: &Live,
    n_states: usize,
    n: usize,
) -> Option<(usize, u32, Vec<u32>)> {
    use std::collections::{HashMap, HashSet, VecDeque};
    // Forward adjacency in compressed rows, edge indices.
    let mut start = vec![0u32; n_states + 1];
    for &(from, _) in edges {
        start[from as usize + 1] += 1;
    }
    for i in 0..n_states {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut out = vec![0u32; edges.len()];
    for (e, &(from, _)) in edges.iter().enumerate() {
        out[fill[from as usize] as usize] = e as u32;
        fill[from as usize] += 1;
    }
    let succ = |s: u32| &out[start[s as usize] as usize..start[s as usize + 1] as usize];
    for pos in 0..n {
        let inside = |s: u32| (live.waiting[s as usize] >> pos) & 1 == 1;
        // Tarjan's strongly connected components of the states where `pos` waits, iteratively.
        let mut index = vec![u32::MAX; n_states];
        let mut low = vec![0u32; n_states];
        let mut on_stack = vec![false; n_states];
        let mut stack: Vec<u32> = Vec::new();
        let mut next_index = 0u32;
        for root in 0..n_states as u32 {
            if !inside(root) || index[root as usize] != u32::MAX {
                continue;
            }
            let mut call: Vec<(u32, usize)> = vec![(root, 0)];
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&mut (v, ref mut i)) = call.last_mut() {
                let es = succ(v);
                if *i < es.len() {
                    let w = edges[es[*i] as usize].1;
                    *i += 1;
                    if !inside(w) {
                        continue;
                    }
                    if index[w as usize] == u32::MAX {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        call.push((w, 0));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u as usize] = low[u as usize].min(low[v as usize]);
                }
                if low[v as usize] != index[v as usize] {
                    continue;
                }
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("on the stack");
                    on_stack[w as usize] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                let members: HashSet<u32> = comp.iter().copied().collect();
                let internal: Vec<u32> = comp
                    .iter()
                    .flat_map(|&s| succ(s).iter().copied())
                    .filter(|&e| members.contains(&edges[e as usize].1))
                    .collect();
                if internal.is_empty() {
                    continue;
                }
                // Weak fairness: every identity enabled in all the component's states is taken
                // by an edge inside it.
                let mut count: HashMap<u64, usize> = HashMap::new();
                for &s in &comp {
                    let (a, l) = live.enabled_at[s as usize];
                    for &id in &live.enabled[a as usize..(a + l) as usize] {
                        *count.entry(id).or_default() += 1;
                    }
                }
                let taken: HashSet<u64> = internal
                    .iter()
                    .map(|&e| live.edge_info[e as usize].0)
                    .collect();
                let required: Vec<u64> = count
                    .iter()
                    .filter(|(_, &c)| c == comp.len())
                    .map(|(&id, _)| id)
                    .collect();
                if required.iter().any(|id| !taken.contains(id)) {
                    continue;
                }
                // A fair cycle: from the shallowest state, pass through every state of the
                // component (so that nothing it does not take is continuously enabled along
                // it), take an edge of each required identity, and come back.
                let s0 = *comp.iter().min().expect("not empty");
                let bfs = |from: u32, to_edge: &dyn Fn(u32) -> bool| -> Option<Vec<u32>> {
                    // Edges from `from`, inside the component, ending with one accepted edge.
                    let mut prev: HashMap<u32, u32> = HashMap::new();
                    let mut queue = VecDeque::from([from]);
                    let mut seen: HashSet<u32> = HashSet::from([from]);
                    while let Some(s) = queue.pop_front() {
                        for &e in succ(s) {
                            let t = edges[e as usize].1;
                            if !members.contains(&t) {
                                continue;
                            }
                            if to_edge(e) {
                                let mut path = vec![e];
                                let mut cur = s;
                                while cur != from {
                                    let pe = prev[&cur];
                                    path.push(pe);
                                    cur = edges[pe as usize].0;
                                }
                                path.reverse();
                                return Some(path);
                            }
                            if seen.insert(t) {
                                prev.insert(t, e);
                                queue.push_back(t);
                            }
                        }
                    }
                    None
                };
                let mut cycle: Vec<u32> = Vec::new();
                let mut visited: HashSet<u32> = HashSet::from([s0]);
                let mut cur = s0;
                let mut states = comp.clone();
                states.sort_unstable();
                for t in states {
                    if visited.contains(&t) {
                        continue;
                    }
                    let p = bfs(cur, &|e| edges[e as usize].1 == t)?;
                    visited.extend(p.iter().map(|&e| edges[e as usize].1));
                    cur = t;
                    cycle.extend(p);
                }
                let mut targets = required.clone();
                targets.sort_unstable();
                for id in targets {
                    if cycle.iter().any(|&e| live.edge_info[e as usize].0 == id) {
                        continue;
                    }
                    let p = bfs(cur, &|e| live.edge_info[e as usize].0 == id)?;
                    cur = edges[*p.last().expect("an edge") as usize].1;
                    cycle.extend(p);
                }
                if cycle.is_empty() || cur != s0 {
                    let p = bfs(cur, &|e| edges[e as usize].1 == s0)?;
                    cycle.extend(p);
                }
                let moves = cycle
                    .iter()
                    .map(|&e| live.edge_info[e as usize].1)
                    .collect();
                return Some((pos, s0, moves));
            }
        }
    }
    None
}

/// Sweeps over the edges before [`cannot_finish`] searches backwards instead.
const SWEEPS: usize = 4;

/// Marks the source of every edge, taken in the order given, whose target reaches a goal;
/// whether any mark is new.
fn sweep<'a>(edges: impl Iterator<Item = &'a (u32, u32)>, reaches: &mut [bool]) -> bool {
    let mut changed = false;
    for &(from, to) in edges {
        if reaches[to as usize] && !reaches[from as usize] {
            reaches[from as usize] = true;
            changed = true;
        }
    }
    changed
}

/// The first state (in BFS order, so one of the shallowest) from which no path reaches a goal
/// state, or `None` if the goal stays reachable from everywhere.
fn cannot_finish(edges: &[(u32, u32)], done: &[bool]) -> Option<u32> {
    let n = done.len();
    let mut reaches = done.to_vec();
    // The edges are in BFS order of their sources, and most lead deeper: walking them from
    // the last to the first, each state takes what its successors reach, which settles most
    // states in one sweep; a sweep from the first to the last then carries it along the edges
    // that lead back, and so on, alternating; a sweep that changes nothing means every state
    // is settled. Only if a few sweeps do not settle it are the edges turned around and
    // searched from the goal states (each sweep reads the edges in order and the flags, a few
    // megabytes; turning them around scatters them).
    for k in 0..SWEEPS {
        let changed = if k % 2 == 0 {
            sweep(edges.iter().rev(), &mut reaches)
        } else {
            sweep(edges.iter(), &mut reaches)
        };
        if !changed {
            return reaches.iter().position(|&r| !r).map(|i| i as u32);
        }
    }
    let mut start = vec![0u32; n + 1];
    for &(_, to) in edges {
        start[to as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut into = vec![0u32; edges.len()];
    for &(from, to) in edges {
        into[fill[to as usize] as usize] = from;
        fill[to as usize] += 1;
    }
    // Every state known to reach a goal is a start of the search.
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| reaches[i as usize]).collect();
    while let Some(s) = stack.pop() {
        for &p in &into[start[s as usize] as usize..start[s as usize + 1] as usize] {
            if !reaches[p as usize] {
                reaches[p as usize] = true;
                stack.push(p);
            }
        }
    }
    reaches.iter().position(|&r| !r).map(|i| i as u32)
}

fn json<T: Serialize + ?Sized>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Replays `moves` from the initial state, rendering each step and checking every property on
/// the way. Returns the typed transitions, the steps, the first violation met (with the step
/// after which it broke) and the final state.
#[allow(clippy::type_complexity)]
pub(crate) fn replay_moves<A, S>(
    model: &Model<'_, A, S>,
    moves: &[u32],
) -> Result<
    (
        Vec<Transition<A::Msg, A::Timer, A::Input>>,
        Vec<Step>,
        Option<(Violation, usize)>,
        St,
    ),
    CheckError,
>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut w = Worker::default();
    let mut effects = Effects::new();
    let (mut state, v) = model.initial(&mut w, &mut effects);
    let mut inputs = Vec::new();
    let mut violation = v
        .or_else(|| {
            model
                .spec
                .check_state(model.app(&state), &model.world(&state))
        })
        .map(|v| (v, 0));
    let mut steps = Vec::new();
    if !effects.items.is_empty() || !effects.dropped.is_empty() {
        steps.push(step_of::<A>(
            0,
            Action::Start,
            "start (every process's on_start)".into(),
            &effects,
        ));
    }
    let mut transitions = Vec::new();
    let mut enabled = Vec::new();
    for (i, &k) in moves.iter().enumerate() {
        model.enabled(&state, &mut enabled, &mut inputs);
        let m = *enabled.get(k as usize).ok_or_else(|| {
            CheckError::new("trace", format!("step {} is not enabled there", i + 1))
        })?;
        let t = model.transition(&state, m, &mut inputs);
        let mut effects = Effects::new();
        let v = model.apply(&mut w, &mut state, m, &mut effects);
        steps.push(step_of::<A>(
            i + 1,
            action_of::<A>(&t),
            t.to_string(),
            &effects,
        ));
        transitions.push(t);
        if violation.is_none() {
            let stuck = !model.progress_possible(&state, &mut inputs);
            let (app, world) = (model.app(&state), model.world(&state));
            violation = v
                .or_else(|| model.spec.check_state(app, &world))
                .or_else(|| {
                    stuck
                        .then(|| model.spec.check_terminal(app, &world))
                        .flatten()
                })
                .map(|v| (v, i + 1));
        }
    }
    Ok((transitions, steps, violation, state))
}

/// The moves of a typed trace, checked to be enabled where they are taken.
pub(crate) fn moves_of<A, S>(
    model: &Model<'_, A, S>,
    trace: &[Transition<A::Msg, A::Timer, A::Input>],
) -> Result<Vec<u32>, CheckError>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut w = Worker::default();
    let (mut state, _) = model.initial(&mut w, &mut Effects::sink());
    let mut inputs = Vec::new();
    let mut enabled: Vec<Move> = Vec::new();
    let mut out = Vec::new();
    for (i, t) in trace.iter().enumerate() {
        model.enabled(&state, &mut enabled, &mut inputs);
        let k = enabled
            .iter()
            .position(|&m| model.transition(&state, m, &mut inputs) == *t)
            .ok_or_else(|| {
                CheckError::new(
                    "trace",
                    format!("step {} ({t}) is not enabled there", i + 1),
                )
            })?;
        out.push(k as u32);
        model.apply(&mut w, &mut state, enabled[k], &mut Effects::sink());
    }
    Ok(out)
}

pub(crate) fn action_of<A: distsync_core::Process>(
    t: &Transition<A::Msg, A::Timer, A::Input>,
) -> Action {
    match t {
        Transition::Deliver { from, to, msg } => Action::Deliver {
            from: *from,
            to: *to,
            kind: msg.kind().to_string(),
            msg: json(msg),
        },
        Transition::Input { node, input } => Action::Input {
            node: *node,
            input: json(input),
        },
        Transition::Timer { node, timer } => Action::Timer {
            node: *node,
            timer: json(timer),
        },
        Transition::Crash { node } => Action::Crash { node: *node },
        Transition::Recover { node } => Action::Recover { node: *node },
        Transition::Lose { from, to, msg } => Action::Lose {
            from: *from,
            to: *to,
            kind: msg.kind().to_string(),
            msg: json(msg),
        },
        Transition::Duplicate { from, to, msg } => Action::Duplicate {
            from: *from,
            to: *to,
            kind: msg.kind().to_string(),
            msg: json(msg),
        },
        Transition::Partition { groups } => Action::Partition {
            groups: groups.to_vec(),
        },
        Transition::Heal => Action::Heal,
    }
}

fn step_of<A: distsync_core::Process>(
    number: usize,
    action: Action,
    transition: String,
    effects: &Effects<A>,
) -> Step {
    let mut sent = Vec::new();
    let mut outputs = Vec::new();
    let mut typed = Vec::new();
    for e in &effects.items {
        match e {
            Eff::Send(f, t, m) => {
                sent.push(format!("{m:?} {f}->{t}"));
                typed.push(StepEffect::Send {
                    from: *f,
                    to: *t,
                    kind: m.kind().to_string(),
                    msg: json(m),
                });
            }
            Eff::Output(at, o) => {
                outputs.push(format!("{o:?} at {at}"));
                typed.push(StepEffect::Output {
                    node: *at,
                    output: json(o),
                });
            }
        }
    }
    for (f, t, m, reason) in &effects.dropped {
        sent.push(format!("{m:?} {f}->{t} (dropped: {reason})"));
        typed.push(StepEffect::Dropped {
            from: *f,
            to: *t,
            kind: m.kind().to_string(),
            msg: json(m),
            reason: (*reason).to_string(),
        });
    }
    Step {
        number,
        action,
        transition,
        outputs,
        sent,
        effects: typed,
    }
}

/// Builds the outcome of an exploration: the counterexample replayed and rendered.
pub(crate) fn outcome<A, S>(
    model: &Model<'_, A, S>,
    found: Found,
) -> Outcome<A::Msg, A::Timer, A::Input>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let stats = found.stats;
    let verdict = match found.violation {
        None if stats.bound.is_some() => Verdict::HoldsWithinBound,
        None => Verdict::Proved,
        Some((v, moves, loop_start)) => {
            let (trace, steps, final_states) = match replay_moves::<A, S>(model, &moves) {
                Ok((trace, steps, _, state)) => (
                    trace,
                    steps,
                    (0..model.n)
                        .map(|p| match model.proc_of(&state, p) {
                            Some(p) => format!("{p:?}"),
                            None => "crashed".to_string(),
                        })
                        .collect(),
                ),
                // The moves were taken from the exploration: replaying them cannot fail.
                Err(e) => (Vec::new(), Vec::new(), vec![format!("replay failed: {e}")]),
            };
            Verdict::Violated(Box::new(Counterexample {
                property: v.property,
                detail: v.detail,
                trace,
                steps,
                final_states,
                loop_start,
            }))
        }
    };
    Outcome { verdict, stats }
}

/// The ids of a model, for the trace writer.
#[allow(dead_code)]
pub(crate) fn ids_of<A: Checkable, S: Spec<A>>(model: &Model<'_, A, S>) -> Vec<NodeId> {
    model.ids().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The states that reach a goal, by repeating "a state reaches one if a successor does"
    /// until nothing changes: what `cannot_finish` must agree with.
    fn reference(edges: &[(u32, u32)], done: &[bool]) -> Option<u32> {
        let mut reaches = done.to_vec();
        loop {
            let before = reaches.clone();
            for &(from, to) in edges {
                reaches[from as usize] |= reaches[to as usize];
            }
            if reaches == before {
                return reaches.iter().position(|&r| !r).map(|i| i as u32);
            }
        }
    }

    #[test]
    fn cannot_finish_agrees_with_the_fixpoint_with_few_and_many_back_edges() {
        // A chain 0 -> 1 -> ... -> 9 whose goal is reached only from state 0, through back
        // edges k -> k-1: the first sweep (from the last edge) settles only state 1, the
        // second (from the first) carries it up the chain.
        let mut edges: Vec<(u32, u32)> = (0..9).map(|k| (k, k + 1)).collect();
        edges.extend((1..10).map(|k| (k, k - 1)));
        edges.sort_unstable();
        let mut done = vec![false; 10];
        done[0] = true;
        assert_eq!(cannot_finish(&edges, &done), None);
        assert_eq!(cannot_finish(&edges, &done), reference(&edges, &done));
        // Forward edges only, goal at the end: one sweep settles it.
        let forward: Vec<(u32, u32)> = (0..9).map(|k| (k, k + 1)).collect();
        let mut done = vec![false; 10];
        done[9] = true;
        assert_eq!(cannot_finish(&forward, &done), None);
        // States that cannot finish: 2 leads only to 4, which only loops on itself.
        let mut edges = vec![(0, 1), (0, 2), (1, 3), (2, 4), (4, 4), (3, 5), (5, 1)];
        edges.sort_unstable();
        let mut done = vec![false; 6];
        done[3] = true;
        assert_eq!(cannot_finish(&edges, &done), Some(2));
        assert_eq!(cannot_finish(&edges, &done), reference(&edges, &done));
        // Pseudo-random graphs, BFS-like (edges sorted by source), against the reference: their
        // paths to a goal go up and down the indices, some more often than `SWEEPS` sweeps
        // settle, so the search over the reversed edges runs too.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let n = 2 + next(40) as usize;
            let mut edges: Vec<(u32, u32)> = (0..n * 2)
                .map(|_| (next(n as u64) as u32, next(n as u64) as u32))
                .collect();
            edges.sort_unstable();
            let done: Vec<bool> = (0..n).map(|_| next(7) == 0).collect();
            assert_eq!(cannot_finish(&edges, &done), reference(&edges, &done));
        }
    }
}
