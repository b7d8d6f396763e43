//! The breadth-first explorer, shared by every family: level by level, each level's states
//! expanded in parallel chunks and merged in a fixed order, so that the result (verdict, state
//! count, counterexample) is the same on one thread as on many.

use crate::fingerprint::{fingerprint, FpMap};
use crate::model::{Checkable, Eff, Effects, Model, Spec, State, Violation};
use crate::{
    Action, Bound, CheckError, Counterexample, Outcome, Progress, Property, Stats, Step,
    StepEffect, Transition, Verdict,
};
use distsync_core::{Algorithm, Message, NodeId};
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// States expanded together in parallel before their successors are merged.
const CHUNK: usize = 2048;

/// One successor of a state.
struct Succ<A: distsync_core::Process, App> {
    /// The move's position in the parent's enabled list.
    k: u32,
    next: State<A, App>,
    fp: u128,
    /// A property broken by the transition itself (an output).
    on_move: Option<Violation>,
    /// A property broken by the state reached.
    on_state: Option<Violation>,
    /// No move but faults is enabled there.
    stuck: bool,
    /// Some move at all is enabled there.
    live: bool,
    goal: bool,
}

fn expand<A, S>(model: &Model<'_, S>, state: &State<A, S::App>) -> Vec<Succ<A, S::App>>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut moves = Vec::new();
    let mut inputs = Vec::new();
    let mut next_moves = Vec::new();
    model.enabled(state, &mut moves, &mut inputs);
    let mut out = Vec::with_capacity(moves.len());
    let mut sink = Effects::sink();
    for (k, &m) in moves.iter().enumerate() {
        let (next, on_move) = model.apply(state, m, &mut inputs, &mut sink);
        let fp = fingerprint(&next);
        let stuck = !model.progress_possible(&next, &mut inputs);
        let on_state = model.spec.check_state(&next.app, &next.world).or_else(|| {
            stuck
                .then(|| model.spec.check_terminal(&next.app, &next.world))
                .flatten()
        });
        model.enabled(&next, &mut next_moves, &mut inputs);
        let goal = model.spec.goal(&next.app, &next.world);
        out.push(Succ {
            k: k as u32,
            live: !next_moves.is_empty(),
            next,
            fp,
            on_move,
            on_state,
            stuck,
            goal,
        });
    }
    out
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

/// Explores `model` breadth first until a property breaks, every reachable state is visited,
/// or a bound is reached.
pub(crate) fn explore<A, S>(
    model: &Model<'_, S>,
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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| CheckError::new("threads", e.to_string()))?;
    let mut stats = Stats {
        threads,
        ..Stats::default()
    };
    let mut inputs = Vec::new();

    let (root, violation) = model.initial::<A>(&mut Effects::sink());
    let root_stuck = !model.progress_possible(&root, &mut inputs);
    let violation = violation
        .or_else(|| model.spec.check_state(&root.app, &root.world))
        .or_else(|| {
            root_stuck
                .then(|| model.spec.check_terminal(&root.app, &root.world))
                .flatten()
        });
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
    // Parent index and the move (its position in the parent's enabled list), by state index.
    let mut parents: Vec<(u32, u32)> = vec![(u32::MAX, u32::MAX)];
    let mut visited: FpMap<u32> = FpMap::default();
    visited.insert(fingerprint(&root), 0);
    // For the progress analysis: every edge between state indices, and the goal states.
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut goal: Vec<bool> = vec![model.spec.goal(&root.app, &root.world)];

    let path = |parents: &Vec<(u32, u32)>, idx: u32, last: Option<u32>| {
        let mut moves: Vec<u32> = last.into_iter().collect();
        let mut i = idx;
        while parents[i as usize].0 != u32::MAX {
            moves.push(parents[i as usize].1);
            i = parents[i as usize].0;
        }
        moves.reverse();
        moves
    };

    let mut frontier: Vec<(State<A, S::App>, u32)> = vec![(root, 0)];
    let mut depth = 0usize;
    let mut last_report = Instant::now();
    // The memory is read, and progress reported, every 4096 new states or 200ms.
    let mut next_check = 4096;
    let mut found: Option<(Violation, Vec<u32>)> = None;
    'levels: while !frontier.is_empty() {
        if depth >= bounds.max_depth {
            stats.bound = Some(Bound::Depth);
            break;
        }
        let mut next_level: Vec<(State<A, S::App>, u32)> = Vec::new();
        let level = std::mem::take(&mut frontier);
        for (c, chunk) in level.chunks(CHUNK).enumerate() {
            let expanded: Vec<Vec<Succ<A, S::App>>> = if threads == 1 {
                chunk.iter().map(|(s, _)| expand(model, s)).collect()
            } else {
                pool.install(|| chunk.par_iter().map(|(s, _)| expand(model, s)).collect())
            };
            for ((_, idx), succs) in chunk.iter().zip(expanded) {
                let idx = *idx;
                for s in succs {
                    stats.transitions += 1;
                    if let Some(v) = s.on_move {
                        stats.depth = stats.depth.max(depth + 1);
                        found = Some((v, path(&parents, idx, Some(s.k))));
                        break 'levels;
                    }
                    if let Some(&known) = visited.get(&s.fp) {
                        edges.push((idx, known));
                        continue;
                    }
                    if stats.states >= bounds.max_states {
                        stats.bound = Some(Bound::States);
                        break 'levels;
                    }
                    let child = parents.len() as u32;
                    visited.insert(s.fp, child);
                    parents.push((idx, s.k));
                    edges.push((idx, child));
                    goal.push(s.goal);
                    stats.states += 1;
                    stats.depth = stats.depth.max(depth + 1);
                    if let Some(v) = s.on_state {
                        found = Some((v, path(&parents, child, None)));
                        break 'levels;
                    }
                    if s.stuck {
                        stats.terminal_states += 1;
                    }
                    if s.live {
                        next_level.push((s.next, child));
                    }
                }
            }
            if stats.states >= next_check || last_report.elapsed().as_millis() >= 200 {
                next_check = stats.states + 4096;
                last_report = Instant::now();
                let rss = resident_bytes();
                stats.peak_memory = stats.peak_memory.max(rss);
                progress(&Progress {
                    states: stats.states,
                    depth,
                    frontier: level.len() - ((c + 1) * CHUNK).min(level.len()) + next_level.len(),
                    max_states: bounds.max_states,
                    elapsed: start.elapsed(),
                    memory: rss,
                });
                if rss > max_memory {
                    stats.bound = Some(Bound::Memory);
                    break 'levels;
                }
            }
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
        drop(visited);
        if let Some(stuck) = cannot_finish(&edges, &goal) {
            let moves = path(&parents, stuck, None);
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
    stats.elapsed = start.elapsed();
    Ok(Found {
        violation: None,
        stats,
    })
}

/// The first state (in BFS order, so one of the shallowest) from which no path reaches a goal
/// state, or `None` if the goal stays reachable from everywhere.
fn cannot_finish(edges: &[(u32, u32)], done: &[bool]) -> Option<u32> {
    let n = done.len();
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
    let mut reaches = done.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| done[i as usize]).collect();
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
    model: &Model<'_, S>,
    moves: &[u32],
) -> Result<
    (
        Vec<Transition<A::Msg, A::Timer, A::Input>>,
        Vec<Step>,
        Option<(Violation, usize)>,
        State<A, S::App>,
    ),
    CheckError,
>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
{
    let mut effects = Effects::new();
    let (mut state, v) = model.initial::<A>(&mut effects);
    let mut inputs = Vec::new();
    let mut violation = v
        .or_else(|| model.spec.check_state(&state.app, &state.world))
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
        let (next, v) = model.apply(&state, m, &mut inputs, &mut effects);
        steps.push(step_of::<A>(
            i + 1,
            action_of::<A>(&t),
            t.to_string(),
            &effects,
        ));
        transitions.push(t);
        state = next;
        if violation.is_none() {
            let stuck = !model.progress_possible(&state, &mut inputs);
            violation = v
                .or_else(|| model.spec.check_state(&state.app, &state.world))
                .or_else(|| {
                    stuck
                        .then(|| model.spec.check_terminal(&state.app, &state.world))
                        .flatten()
                })
                .map(|v| (v, i + 1));
        }
    }
    Ok((transitions, steps, violation, state))
}

/// The moves of a typed trace, checked to be enabled where they are taken.
pub(crate) fn moves_of<A, S>(
    model: &Model<'_, S>,
    trace: &[Transition<A::Msg, A::Timer, A::Input>],
) -> Result<Vec<u32>, CheckError>
where
    A: Checkable + Algorithm,
    S: Spec<A>,
    A::Input: PartialEq,
{
    let (mut state, _) = model.initial::<A>(&mut Effects::sink());
    let mut inputs = Vec::new();
    let mut enabled = Vec::new();
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
        state = model
            .apply(&state, enabled[k], &mut inputs, &mut Effects::sink())
            .0;
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
    model: &Model<'_, S>,
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
                    state
                        .world
                        .procs
                        .iter()
                        .map(|p| match p {
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
pub(crate) fn ids_of<S>(model: &Model<'_, S>) -> Vec<NodeId> {
    model.ids().to_vec()
}
