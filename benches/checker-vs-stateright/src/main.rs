//! Unique states per second of distsync's checker and of stateright 0.31 on the same model:
//! Ricart-Agrawala (distsync's own process type, driven through `Ctx` by both), 3 nodes, each
//! requesting the critical section twice, non-FIFO links (a multiset of messages in flight).
//!
//! `cargo run --release --manifest-path benches/checker-vs-stateright/Cargo.toml [-- ROUNDS]`

use distsync_algorithms::mutex::{ricart_agrawala::Msg, RicartAgrawala};
use distsync_check::{check, Config, Verdict};
use distsync_core::mutex::{Input, Output};
use distsync_core::{Algorithm, Ctx, Effect, NodeId, Params, Peers, Process, Time};
use rand_core::SeedableRng;
use stateright::{Checker, Model};
use std::time::Instant;

const N: usize = 3;
const REQUESTS: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    Waiting,
    InCs,
    Releasing,
}

#[derive(Clone, Debug, Hash)]
struct State {
    procs: Vec<RicartAgrawala>,
    /// In flight, sorted: a multiset.
    net: Vec<(u8, u8, Msg)>,
    phase: Vec<Phase>,
    left: Vec<u8>,
}

// The processes have no `PartialEq`; stateright compares states only to rebuild paths.
impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.net == other.net
            && self.phase == other.phase
            && self.left == other.left
            && format!("{:?}", self.procs) == format!("{:?}", other.procs)
    }
}
impl Eq for State {}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Deliver(usize),
    Input(usize, Input),
}

struct Ra {
    peers: Peers,
}

impl Ra {
    fn call(&self, s: &mut State, pos: usize, f: impl FnOnce(&mut RicartAgrawala, &mut Ctx<'_, RicartAgrawala>)) {
        let mut effects = Vec::new();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0);
        {
            let mut ctx = Ctx::new(NodeId(pos as u32), &self.peers, Time::ZERO, false, &mut rng, &mut effects);
            f(&mut s.procs[pos], &mut ctx);
        }
        for e in effects {
            match e {
                Effect::Send { to, msg } => {
                    s.net.push((pos as u8, to.0 as u8, msg));
                }
                Effect::Output(Output::Enter) => s.phase[pos] = Phase::InCs,
                Effect::Output(Output::Exit) => s.phase[pos] = Phase::Idle,
                _ => {}
            }
        }
        s.net.sort_unstable_by(|a, b| format_key(a).cmp(&format_key(b)));
    }
}

fn format_key(m: &(u8, u8, Msg)) -> (u8, u8, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.2.hash(&mut h);
    (m.0, m.1, h.finish())
}

impl Model for Ra {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let procs = (0..N)
            .map(|i| RicartAgrawala::new(NodeId(i as u32), &self.peers, &Params::default()))
            .collect();
        vec![State {
            procs,
            net: Vec::new(),
            phase: vec![Phase::Idle; N],
            left: vec![REQUESTS; N],
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for i in 0..s.net.len() {
            if i == 0 || s.net[i - 1] != s.net[i] {
                actions.push(Action::Deliver(i));
            }
        }
        for p in 0..N {
            match s.phase[p] {
                Phase::Idle if s.left[p] > 0 => actions.push(Action::Input(p, Input::Request)),
                Phase::InCs => actions.push(Action::Input(p, Input::Release)),
                _ => {}
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Deliver(i) => {
                let (from, to, msg) = s.net.remove(i);
                self.call(&mut s, to as usize, |p, ctx| p.on_message(NodeId(from as u32), msg, ctx));
            }
            Action::Input(p, input) => {
                match input {
                    Input::Request => {
                        s.phase[p] = Phase::Waiting;
                        s.left[p] -= 1;
                    }
                    Input::Release => s.phase[p] = Phase::Releasing,
                }
                self.call(&mut s, p, |q, ctx| q.on_input(input, ctx));
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        vec![stateright::Property::always("mutual exclusion", |_, s: &State| {
            s.phase.iter().filter(|p| **p == Phase::InCs).count() <= 1
        })]
    }
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let peers = Peers::range(N as u32);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    for round in 0..rounds {
        for threads in [1, cores] {
            let t = Instant::now();
            let c = Ra { peers: peers.clone() }.checker().threads(threads).spawn_bfs().join();
            let secs = t.elapsed().as_secs_f64();
            let states = c.unique_state_count();
            assert!(c.discovery("mutual exclusion").is_none());
            rows.push(("stateright 0.31", threads, round, states, secs));

            let config = Config {
                nodes: N,
                requests: REQUESTS as u32,
                fifo: false,
                threads,
                ..Config::default()
            };
            let t = Instant::now();
            let o = check::<RicartAgrawala>(&config, &mut |_| {}).unwrap();
            let secs = t.elapsed().as_secs_f64();
            assert!(matches!(o.verdict, Verdict::Proved));
            rows.push(("distsync check", threads, round, o.stats.states, secs));
        }
    }
    println!("ricart-agrawala, {N} nodes x {REQUESTS} requests, non-FIFO; best of {rounds} rounds");
    println!("{:<16} {:>7} {:>9} {:>9} {:>12}", "checker", "threads", "states", "seconds", "states/s");
    for name in ["stateright 0.31", "distsync check"] {
        for threads in [1, cores] {
            let best = rows
                .iter()
                .filter(|r| r.0 == name && r.1 == threads)
                .min_by(|a, b| a.4.total_cmp(&b.4))
                .unwrap();
            println!(
                "{:<16} {:>7} {:>9} {:>9.3} {:>12.0}",
                name, threads, best.3, best.4, best.3 as f64 / best.4
            );
        }
    }
}
