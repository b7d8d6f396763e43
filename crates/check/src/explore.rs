//! The breadth-first explorer of the mutual-exclusion family.

use crate::fingerprint::{self, Fp, FpMap};
use crate::{
    CheckError, Config, Counterexample, Outcome, Progress, Property, Stats, Step, Transition,
    Verdict,
};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Ctx, Effect, EffectOf, NodeId, Peers, Process, Time};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::time::Instant;

/// What the checker needs of an algorithm: the mutual-exclusion view, and `Clone + Debug` to
/// copy states and fingerprint them. Implemented for every such type.
pub trait Checkable: MutualExclusion + Clone + Debug + 'static {}
impl<A: MutualExclusion + Clone + Debug + 'static> Checkable for A {}

/// States are numbered with `u32`; far more than memory allows anyway.
const MAX_STATES: usize = u32::MAX as usize - 1;

type Tr<A> = Transition<<A as Process>::Msg, <A as Process>::Timer>;

/// The application's view of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not asking; may request if it competes and has requests left.
    Idle,
    /// Asked, waits for Enter.
    Waiting,
    /// Entered; may release.
    InCs,
    /// Released, waits for Exit.
    Releasing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct App {
    competes: bool,
    phase: Phase,
    /// Requests still to make.
    left: u32,
    /// Enter outputs seen.
    enters: u32,
    /// Exit outputs seen.
    exits: u32,
}

/// One state of the model.
#[derive(Clone)]
struct State<A: Process> {
    procs: Vec<Rc<A>>,
    /// Fingerprint of each process's `Debug` rendering.
    proc_fps: Vec<u128>,
    /// In-flight messages with their hashes (computed once, at the send), link `from * n + to`.
    links: Vec<Vec<(u64, A::Msg)>>,
    /// Pending timers by process.
    timers: Vec<Vec<A::Timer>>,
    app: Vec<App>,
}

/// A property broken by a transition or a state.
struct Violation {
    property: Property,
    detail: String,
}

/// What one transition did, for rendering.
struct Effects<A: Process> {
    outputs: Vec<(NodeId, Output)>,
    sent: Vec<(NodeId, NodeId, A::Msg)>,
}

struct Model<'c> {
    config: &'c Config,
    peers: Peers,
    n: usize,
}

impl<'c> Model<'c> {
    fn new<A: Checkable>(config: &'c Config) -> Result<Model<'c>, CheckError> {
        if config.nodes == 0 {
            return Err(CheckError::new("nodes", "at least one node is needed"));
        }
        if config.nodes > 64 {
            return Err(CheckError::new(
                "nodes",
                format!(
                    "{} nodes is far beyond what exhaustive exploration can cover; use 2 to 6",
                    config.nodes
                ),
            ));
        }
        if config.requests == 0 {
            return Err(CheckError::new(
                "requests",
                "each competitor must request the critical section at least once",
            ));
        }
        if config.bounds.max_states == 0 || config.bounds.max_states > MAX_STATES {
            return Err(CheckError::new(
                "max-states",
                format!("the state bound must be between 1 and {MAX_STATES}"),
            ));
        }
        let ids = (0..config.nodes as u32).map(NodeId).collect();
        let peers = Peers::new(ids).map_err(|e| CheckError::new("nodes", e.to_string()))?;
        A::validate(&config.params, &peers).map_err(|e| CheckError::new(e.field, e.message))?;
        Ok(Model {
            config,
            n: config.nodes,
            peers,
        })
    }

    fn pos(&self, id: NodeId) -> Option<usize> {
        self.peers.position(id)
    }

    /// The initial state: every process built and started, in membership order.
    fn initial<A: Checkable>(&self) -> (State<A>, Effects<A>, Option<Violation>) {
        let competitors = A::competitors(&self.peers, &self.config.params);
        let ids = self.peers.ids();
        let mut state = State::<A> {
            procs: ids
                .iter()
                .map(|&id| Rc::new(A::new(id, &self.peers, &self.config.params)))
                .collect(),
            proc_fps: vec![0; self.n],
            links: vec![Vec::new(); self.n * self.n],
            timers: vec![Vec::new(); self.n],
            app: ids
                .iter()
                .map(|id| {
                    let competes = competitors.contains(id);
                    App {
                        competes,
                        phase: Phase::Idle,
                        left: if competes { self.config.requests } else { 0 },
                        enters: 0,
                        exits: 0,
                    }
                })
                .collect(),
        };
        let mut effects = Effects {
            outputs: Vec::new(),
            sent: Vec::new(),
        };
        let mut violation = None;
        for pos in 0..self.n {
            state.proc_fps[pos] = fingerprint::of_debug(&*state.procs[pos]);
            let v = self.call(&mut state, pos, &mut effects, |p, ctx| p.on_start(ctx));
            violation = violation.or(v);
        }
        (state, effects, violation)
    }

    /// Runs one handler of process `pos` and carries out its effects.
    fn call<A: Checkable>(
        &self,
        state: &mut State<A>,
        pos: usize,
        record: &mut Effects<A>,
        handler: impl FnOnce(&mut A, &mut Ctx<'_, A>),
    ) -> Option<Violation> {
        let id = self.peers.ids()[pos];
        let mut effects: Vec<EffectOf<A>> = Vec::new();
        // Each call gets the same fresh generator: a call depends on the process state alone.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        {
            let process = Rc::make_mut(&mut state.procs[pos]);
            let mut ctx = Ctx::new(id, &self.peers, Time::ZERO, false, &mut rng, &mut effects);
            handler(process, &mut ctx);
        }
        state.proc_fps[pos] = fingerprint::of_debug(&*state.procs[pos]);
        let mut violation = None;
        for effect in effects {
            match effect {
                Effect::Send { to, msg } => match self.pos(to) {
                    Some(t) if t != pos => {
                        record.sent.push((id, to, msg.clone()));
                        state.links[pos * self.n + t].push((fingerprint::of_hash(&msg), msg));
                    }
                    _ => {
                        violation = violation.or(Some(Violation {
                            property: Property::OutputContract,
                            detail: format!("node {id} sent {msg:?} to {to}, not another member"),
                        }));
                    }
                },
                Effect::SetTimer { timer, .. } => {
                    let timers = &mut state.timers[pos];
                    timers.retain(|t| *t != timer);
                    timers.push(timer);
                }
                Effect::CancelTimer { timer } => state.timers[pos].retain(|t| *t != timer),
                Effect::Output(output) => {
                    record.outputs.push((id, output));
                    let app = &mut state.app[pos];
                    let expected = match output {
                        Output::Enter => Phase::Waiting,
                        Output::Exit => Phase::Releasing,
                    };
                    if app.phase == expected {
                        match output {
                            Output::Enter => {
                                app.phase = Phase::InCs;
                                app.enters += 1;
                            }
                            Output::Exit => {
                                app.phase = Phase::Idle;
                                app.exits += 1;
                            }
                        }
                    } else {
                        violation = violation.or(Some(Violation {
                            property: Property::OutputContract,
                            detail: format!(
                                "node {id} output {output:?} while its application was {:?}",
                                app.phase
                            ),
                        }));
                    }
                }
            }
        }
        violation
    }

    /// Every transition enabled in `state`, in a fixed order.
    fn enabled<A: Checkable>(&self, state: &State<A>) -> Vec<Tr<A>> {
        let ids = self.peers.ids();
        let mut out = Vec::new();
        for (link, msgs) in state.links.iter().enumerate() {
            let (from, to) = (ids[link / self.n], ids[link % self.n]);
            if self.config.fifo {
                if let Some((_, msg)) = msgs.first() {
                    out.push(Transition::Deliver {
                        from,
                        to,
                        msg: msg.clone(),
                    });
                }
            } else {
                for (i, (h, msg)) in msgs.iter().enumerate() {
                    // Equal messages on one link lead to the same state: deliver one of them.
                    if !msgs[..i].iter().any(|(g, m)| g == h && m == msg) {
                        out.push(Transition::Deliver {
                            from,
                            to,
                            msg: msg.clone(),
                        });
                    }
                }
            }
        }
        for (pos, app) in state.app.iter().enumerate() {
            let node = ids[pos];
            match app.phase {
                Phase::Idle if app.competes && app.left > 0 => out.push(Transition::Input {
                    node,
                    input: Input::Request,
                }),
                Phase::InCs => out.push(Transition::Input {
                    node,
                    input: Input::Release,
                }),
                _ => {}
            }
            for timer in &state.timers[pos] {
                out.push(Transition::Timer {
                    node,
                    timer: timer.clone(),
                });
            }
        }
        out
    }

    /// Whether any transition is enabled (cheaper than [`Model::enabled`]).
    fn any_enabled<A: Checkable>(&self, state: &State<A>) -> bool {
        state.links.iter().any(|l| !l.is_empty())
            || state.timers.iter().any(|t| !t.is_empty())
            || state.app.iter().any(|a| {
                a.phase == Phase::InCs || (a.phase == Phase::Idle && a.competes && a.left > 0)
            })
    }

    /// Takes transition `t` from `state`; `None` if it is not enabled there.
    fn apply<A: Checkable>(
        &self,
        state: &State<A>,
        t: &Tr<A>,
    ) -> Option<(State<A>, Effects<A>, Option<Violation>)> {
        let mut next = state.clone();
        let mut effects = Effects {
            outputs: Vec::new(),
            sent: Vec::new(),
        };
        let violation = match t {
            Transition::Deliver { from, to, msg } => {
                let (f, r) = (self.pos(*from)?, self.pos(*to)?);
                let link = &mut next.links[f * self.n + r];
                let i = if self.config.fifo {
                    (link.first().map(|(_, m)| m) == Some(msg)).then_some(0)?
                } else {
                    link.iter().position(|(_, m)| m == msg)?
                };
                let (_, msg) = link.remove(i);
                let from = *from;
                self.call(&mut next, r, &mut effects, |p, ctx| {
                    p.on_message(from, msg, ctx)
                })
            }
            Transition::Input { node, input } => {
                let pos = self.pos(*node)?;
                let app = &mut next.app[pos];
                match input {
                    Input::Request if app.phase == Phase::Idle && app.competes && app.left > 0 => {
                        app.phase = Phase::Waiting;
                        app.left -= 1;
                    }
                    Input::Release if app.phase == Phase::InCs => app.phase = Phase::Releasing,
                    _ => return None,
                }
                let input = *input;
                self.call(&mut next, pos, &mut effects, |p, ctx| {
                    p.on_input(input, ctx)
                })
            }
            Transition::Timer { node, timer } => {
                let pos = self.pos(*node)?;
                let i = next.timers[pos].iter().position(|x| x == timer)?;
                let timer = next.timers[pos].remove(i);
                self.call(&mut next, pos, &mut effects, |p, ctx| {
                    p.on_timer(timer, ctx)
                })
            }
        };
        Some((next, effects, violation))
    }

    /// The safety properties of one state.
    fn check_state<A: Checkable>(&self, state: &State<A>) -> Option<Violation> {
        let ids = self.peers.ids();
        let inside: Vec<NodeId> = (0..self.n)
            .filter(|&p| state.procs[p].in_critical_section())
            .map(|p| ids[p])
            .collect();
        if inside.len() > 1 {
            return Some(Violation {
                property: Property::MutualExclusion,
                detail: format!(
                    "nodes {} are in the critical section at once",
                    list(&inside)
                ),
            });
        }
        let entered: Vec<NodeId> = (0..self.n)
            .filter(|&p| state.app[p].phase == Phase::InCs)
            .map(|p| ids[p])
            .collect();
        if entered.len() > 1 {
            return Some(Violation {
                property: Property::MutualExclusion,
                detail: format!(
                    "nodes {} were told Enter and not yet released",
                    list(&entered)
                ),
            });
        }
        for (p, app) in state.app.iter().enumerate() {
            let in_cs = state.procs[p].in_critical_section();
            let ok = match app.phase {
                Phase::InCs => in_cs,
                Phase::Releasing => true,
                Phase::Idle | Phase::Waiting => !in_cs,
            };
            if !ok {
                return Some(Violation {
                    property: Property::OutputContract,
                    detail: format!(
                        "node {} says in_critical_section() = {in_cs} while its application is {:?}",
                        ids[p], app.phase
                    ),
                });
            }
        }
        None
    }

    /// Whether every competitor made all its requests and left the critical section each time.
    fn all_served<A: Checkable>(&self, state: &State<A>) -> bool {
        state
            .app
            .iter()
            .all(|a| a.left == 0 && a.phase == Phase::Idle)
    }

    /// The properties of a state where nothing is enabled.
    fn check_terminal<A: Checkable>(&self, state: &State<A>) -> Option<Violation> {
        let ids = self.peers.ids();
        let waiting: Vec<NodeId> = (0..self.n)
            .filter(|&p| matches!(state.app[p].phase, Phase::Waiting | Phase::Releasing))
            .map(|p| ids[p])
            .collect();
        if !waiting.is_empty() {
            return Some(Violation {
                property: Property::Deadlock,
                detail: format!(
                    "nothing can happen (no message in flight, no timer, no input) while \
                     nodes {} wait for the critical section",
                    list(&waiting)
                ),
            });
        }
        for (p, app) in state.app.iter().enumerate() {
            let asked = if app.competes {
                self.config.requests
            } else {
                0
            };
            if app.enters != asked || app.exits != asked || app.left != 0 {
                return Some(Violation {
                    property: Property::Completion,
                    detail: format!(
                        "the run ended with node {} entered {} and left {} times of {asked} \
                         requested",
                        ids[p], app.enters, app.exits
                    ),
                });
            }
        }
        None
    }

    fn fingerprint<A: Checkable>(&self, state: &State<A>) -> u128 {
        let mut fp = Fp::new();
        for f in &state.proc_fps {
            fp.write_u128(*f);
        }
        let mut hashes = Vec::new();
        for link in &state.links {
            fp.write_usize(link.len());
            hashes.clear();
            hashes.extend(link.iter().map(|(h, _)| *h));
            if !self.config.fifo {
                hashes.sort_unstable();
            }
            for h in &hashes {
                fp.write_u64(*h);
            }
        }
        for timers in &state.timers {
            hashes.clear();
            hashes.extend(timers.iter().map(fingerprint::of_hash));
            hashes.sort_unstable();
            fp.write_usize(hashes.len());
            for h in &hashes {
                fp.write_u64(*h);
            }
        }
        state.app.hash(&mut fp);
        fp.finish128()
    }

    fn step_of<A: Checkable>(&self, number: usize, t: &Tr<A>, effects: &Effects<A>) -> Step {
        Step {
            number,
            transition: t.to_string(),
            outputs: effects
                .outputs
                .iter()
                .map(|(id, o)| format!("{o:?} at {id}"))
                .collect(),
            sent: effects
                .sent
                .iter()
                .map(|(f, t, m)| format!("{m:?} {f}->{t}"))
                .collect(),
        }
    }
}

/// "0", "0 and 1", "0, 1 and 2".
fn list(ids: &[NodeId]) -> String {
    let names: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// Explores every interleaving of `config` for algorithm `A`, breadth first, until a property
/// breaks, every reachable state is visited, or a bound is reached. `progress` is called every
/// few thousand states.
pub fn check<A: Checkable>(
    config: &Config,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome<A::Msg, A::Timer>, CheckError> {
    let start = Instant::now();
    let model = Model::new::<A>(config)?;
    let mut stats = Stats::default();

    let (root, _, violation) = model.initial::<A>();
    // Parent index and the transition that led here, by state index.
    let mut parents: Vec<(u32, Option<Tr<A>>)> = vec![(u32::MAX, None)];
    let mut visited: FpMap<u32> = FpMap::default();
    visited.insert(model.fingerprint(&root), 0);
    stats.states = 1;
    // For the progress analysis: every edge (from, to) between state indices, and which states
    // have every request served.
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut done: Vec<bool> = vec![model.all_served(&root)];

    let found = |parents: &Vec<(u32, Option<Tr<A>>)>, idx: u32, last: Option<Tr<A>>| {
        let mut trace: Vec<Tr<A>> = last.into_iter().collect();
        let mut i = idx;
        while let (p, Some(t)) = &parents[i as usize] {
            trace.push(t.clone());
            i = *p;
        }
        trace.reverse();
        trace
    };

    let violation = violation.or_else(|| model.check_state(&root)).or_else(|| {
        (!model.any_enabled(&root))
            .then(|| model.check_terminal(&root))
            .flatten()
    });
    if let Some(v) = violation {
        stats.elapsed = start.elapsed();
        return Ok(Outcome {
            verdict: Verdict::Violated(Box::new(counterexample::<A>(&model, v, Vec::new()))),
            stats,
        });
    }
    if !model.any_enabled(&root) {
        stats.terminal_states += 1;
    }

    let mut queue: VecDeque<(State<A>, u32, usize)> = VecDeque::from([(root, 0, 0)]);
    let mut next_report = 4096;
    'explore: while let Some((state, idx, depth)) = queue.pop_front() {
        if depth >= config.bounds.max_depth {
            if model.any_enabled(&state) {
                stats.bound_hit = true;
            }
            continue;
        }
        for t in model.enabled(&state) {
            stats.transitions += 1;
            let Some((next, _, violation)) = model.apply(&state, &t) else {
                continue;
            };
            // A transition's own violation counts even when it leads to a known state.
            if let Some(v) = violation {
                let trace = found(&parents, idx, Some(t));
                stats.depth = stats.depth.max(depth + 1);
                stats.elapsed = start.elapsed();
                return Ok(Outcome {
                    verdict: Verdict::Violated(Box::new(counterexample::<A>(&model, v, trace))),
                    stats,
                });
            }
            let fp = model.fingerprint(&next);
            if let Some(&known) = visited.get(&fp) {
                edges.push((idx, known));
                continue;
            }
            if stats.states >= config.bounds.max_states {
                stats.bound_hit = true;
                break 'explore;
            }
            let child = parents.len() as u32;
            visited.insert(fp, child);
            edges.push((idx, child));
            done.push(model.all_served(&next));
            parents.push((idx, Some(t)));
            stats.states += 1;
            stats.depth = stats.depth.max(depth + 1);
            let terminal = !model.any_enabled(&next);
            let violation = model
                .check_state(&next)
                .or_else(|| terminal.then(|| model.check_terminal(&next)).flatten());
            if let Some(v) = violation {
                let trace = found(&parents, child, None);
                stats.elapsed = start.elapsed();
                return Ok(Outcome {
                    verdict: Verdict::Violated(Box::new(counterexample::<A>(&model, v, trace))),
                    stats,
                });
            }
            if terminal {
                stats.terminal_states += 1;
            } else {
                queue.push_back((next, child, depth + 1));
            }
            if stats.states >= next_report {
                next_report += 4096;
                progress(&Progress {
                    states: stats.states,
                    depth,
                    frontier: queue.len(),
                    max_states: config.bounds.max_states,
                });
            }
        }
    }
    if !stats.bound_hit {
        if let Some(stuck) = cannot_finish(&edges, &done) {
            let trace = found(&parents, stuck, None);
            let v = Violation {
                property: Property::Progress,
                detail: format!(
                    "{} no continuation serves every request: the processes can keep \
                     exchanging messages but some request is never granted",
                    if trace.is_empty() {
                        "from the initial state".to_string()
                    } else {
                        format!("after these {} steps", trace.len())
                    }
                ),
            };
            stats.elapsed = start.elapsed();
            return Ok(Outcome {
                verdict: Verdict::Violated(Box::new(counterexample::<A>(&model, v, trace))),
                stats,
            });
        }
    }
    stats.elapsed = start.elapsed();
    let verdict = if stats.bound_hit {
        Verdict::HoldsWithinBound
    } else {
        Verdict::Proved
    };
    Ok(Outcome { verdict, stats })
}

/// The first state (in BFS order, so one of the shallowest) from which no path reaches a state
/// where every request is served, or `None` if every state can still finish.
fn cannot_finish(edges: &[(u32, u32)], done: &[bool]) -> Option<u32> {
    let n = done.len();
    // Reverse adjacency in compressed rows: for each state, the states with an edge into it.
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

/// Builds the counterexample for `trace` by replaying it.
fn counterexample<A: Checkable>(
    model: &Model<'_>,
    v: Violation,
    trace: Vec<Tr<A>>,
) -> Counterexample<A::Msg, A::Timer> {
    let replayed = replay_model::<A>(model, &trace);
    let (steps, final_states) = match replayed {
        Ok(r) => (r.steps, r.final_states),
        // The trace was built from the explored transitions: replaying it cannot fail.
        Err(e) => (Vec::new(), vec![format!("replay failed: {e}")]),
    };
    Counterexample {
        property: v.property,
        detail: v.detail,
        trace,
        steps,
        final_states,
    }
}

/// The result of replaying a trace.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The trace, rendered with outputs and sends; preceded by a step 0 when processes sent
    /// messages or output something at start.
    pub steps: Vec<Step>,
    /// The first property broken on the way (`None` if every state kept them), with its detail
    /// and the step number after which it broke (0: the initial state).
    pub violation: Option<(Property, String, usize)>,
    /// Every process's state at the end, by membership position.
    pub final_states: Vec<String>,
    /// Which processes are in the critical section at the end, by `in_critical_section()`.
    pub in_critical_section: Vec<NodeId>,
}

/// Runs `trace` from the initial state of `config`, checking every transition is enabled where
/// it is taken and every property after each step: an independent confirmation of a
/// counterexample.
pub fn replay<A: Checkable>(config: &Config, trace: &[Tr<A>]) -> Result<Replayed, CheckError> {
    let model = Model::new::<A>(config)?;
    replay_model::<A>(&model, trace)
}

fn replay_model<A: Checkable>(model: &Model<'_>, trace: &[Tr<A>]) -> Result<Replayed, CheckError> {
    let (mut state, start, v) = model.initial::<A>();
    let mut violation = v
        .or_else(|| model.check_state(&state))
        .map(|v| (v.property, v.detail, 0));
    let mut steps = Vec::new();
    if !start.sent.is_empty() || !start.outputs.is_empty() {
        let mut step = model.step_of::<A>(
            0,
            &Transition::Input {
                node: model.peers.ids()[0],
                input: Input::Request,
            },
            &start,
        );
        step.transition = "start (every process's on_start)".to_string();
        steps.push(step);
    }
    for (i, t) in trace.iter().enumerate() {
        if !model.enabled(&state).contains(t) {
            return Err(CheckError::new(
                "trace",
                format!("step {} ({t}) is not enabled there", i + 1),
            ));
        }
        let (next, effects, v) = model
            .apply(&state, t)
            .ok_or_else(|| CheckError::new("trace", format!("step {} ({t}) failed", i + 1)))?;
        steps.push(model.step_of::<A>(i + 1, t, &effects));
        state = next;
        if violation.is_none() {
            violation = v
                .or_else(|| model.check_state(&state))
                .or_else(|| {
                    (!model.any_enabled(&state))
                        .then(|| model.check_terminal(&state))
                        .flatten()
                })
                .map(|v| (v.property, v.detail, i + 1));
        }
    }
    if trace.is_empty() && violation.is_none() && !model.any_enabled(&state) {
        violation = model
            .check_terminal(&state)
            .map(|v| (v.property, v.detail, 0));
    }
    let ids = model.peers.ids();
    Ok(Replayed {
        steps,
        violation,
        final_states: state.procs.iter().map(|p| format!("{p:?}")).collect(),
        in_critical_section: (0..model.n)
            .filter(|&p| state.procs[p].in_critical_section())
            .map(|p| ids[p])
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_algorithms::mutex::{Central, RicartAgrawala};

    fn config(nodes: usize, requests: u32, fifo: bool) -> Config {
        Config {
            nodes,
            requests,
            fifo,
            ..Config::default()
        }
    }

    #[test]
    fn non_fifo_links_are_fingerprinted_as_multisets() {
        let cfg = config(3, 1, false);
        let model = Model::new::<RicartAgrawala>(&cfg).unwrap();
        let (root, _, _) = model.initial::<RicartAgrawala>();
        let mut a = root.clone();
        let mut b = root.clone();
        // Two different messages queued on one link, in both orders.
        let m1 = distsync_algorithms::mutex::ricart_agrawala::Msg::Reply { ts: 1 };
        let (s0, s1) = {
            let t = Transition::Input {
                node: NodeId(0),
                input: Input::Request,
            };
            let (s, _, _) = model.apply(&root, &t).unwrap();
            (s.links[1].clone(), s)
        };
        let m1 = (fingerprint::of_hash(&m1), m1);
        a.links[1] = vec![s0[0].clone(), m1.clone()];
        b.links[1] = vec![m1, s0[0].clone()];
        assert_eq!(model.fingerprint(&a), model.fingerprint(&b));
        let fifo = config(3, 1, true);
        let fifo_model = Model::new::<RicartAgrawala>(&fifo).unwrap();
        assert_ne!(fifo_model.fingerprint(&a), fifo_model.fingerprint(&b));
        // A request changes the state.
        assert_ne!(model.fingerprint(&root), model.fingerprint(&s1));
    }

    #[test]
    fn fifo_delivers_only_the_head_and_non_fifo_any_distinct_message() {
        let m = distsync_algorithms::mutex::ricart_agrawala::Msg::Reply { ts: 1 };
        for (fifo, expected) in [(true, 1), (false, 1)] {
            let cfg = config(2, 1, fifo);
            let model = Model::new::<RicartAgrawala>(&cfg).unwrap();
            let (mut s, _, _) = model.initial::<RicartAgrawala>();
            let m = (fingerprint::of_hash(&m), m.clone());
            s.links[1] = vec![m.clone(), m];
            let delivers = model
                .enabled(&s)
                .iter()
                .filter(|t| matches!(t, Transition::Deliver { .. }))
                .count();
            assert_eq!(delivers, expected, "equal messages give one transition");
        }
    }

    #[test]
    fn inputs_follow_the_application_contract() {
        let cfg = config(2, 1, false);
        let model = Model::new::<Central>(&cfg).unwrap();
        let (root, _, _) = model.initial::<Central>();
        // Node 1 is the coordinator and does not compete.
        let enabled = model.enabled(&root);
        assert_eq!(
            enabled,
            vec![Transition::Input {
                node: NodeId(0),
                input: Input::Request
            }]
        );
        let release = Transition::Input {
            node: NodeId(0),
            input: Input::Release,
        };
        assert!(
            model.apply(&root, &release).is_none(),
            "no Release before Enter"
        );
    }

    #[test]
    fn node_lists_read_as_english() {
        assert_eq!(list(&[NodeId(3)]), "3");
        assert_eq!(list(&[NodeId(0), NodeId(1)]), "0 and 1");
        assert_eq!(list(&[NodeId(0), NodeId(1), NodeId(2)]), "0, 1 and 2");
    }

    #[test]
    fn bad_configurations_name_the_field() {
        let err = |c: Config| check::<Central>(&c, &mut |_| {}).unwrap_err().field;
        assert_eq!(err(config(0, 1, false)), "nodes");
        assert_eq!(err(config(2, 0, false)), "requests");
        let mut c = config(2, 1, false);
        c.bounds.max_states = 0;
        assert_eq!(err(c), "max-states");
        let mut c = config(2, 1, false);
        c.params.coordinator = Some(NodeId(7));
        assert_eq!(err(c), "coordinator");
    }

    #[test]
    fn a_tiny_bound_gives_no_proof() {
        let mut c = config(3, 1, false);
        c.bounds.max_states = 5;
        let o = check::<RicartAgrawala>(&c, &mut |_| {}).unwrap();
        assert!(matches!(o.verdict, Verdict::HoldsWithinBound));
        assert!(o.stats.bound_hit);
        assert_eq!(o.stats.states, 5);
        let mut c = config(3, 1, false);
        c.bounds.max_depth = 2;
        let o = check::<RicartAgrawala>(&c, &mut |_| {}).unwrap();
        assert!(matches!(o.verdict, Verdict::HoldsWithinBound));
        assert_eq!(o.stats.depth, 2);
    }
}
