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
    fn call(
        &self,
        s: &mut State,
        pos: usize,
        f: impl FnOnce(&mut RicartAgrawala, &mut Ctx<'_, RicartAgrawala>),
    ) {
        let mut effects = Vec::new();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0);
        {
            let mut ctx = Ctx::new(
                NodeId(pos as u32),
                &self.peers,
                Time::ZERO,
                false,
                &mut rng,
                &mut effects,
            );
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
        s.net
            .sort_unstable_by(|a, b| format_key(a).cmp(&format_key(b)));
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
                self.call(&mut s, to as usize, |p, ctx| {
                    p.on_message(NodeId(from as u32), msg, ctx)
                });
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
        vec![stateright::Property::always(
            "mutual exclusion",
            |_, s: &State| s.phase.iter().filter(|p| **p == Phase::InCs).count() <= 1,
        )]
    }
}

/// CPU seconds used by this process so far (user + system, from /proc; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime is the 12th, stime the 13th.
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// One run: (unique states, wall seconds, CPU seconds).
fn run(checker: &str, threads: usize, peers: &Peers) -> (usize, f64, f64) {
    let (t, c) = (Instant::now(), cpu_seconds());
    let states = if checker == "stateright" {
        let c = Ra {
            peers: peers.clone(),
        }
        .checker()
        .threads(threads)
        .spawn_bfs()
        .join();
        assert!(c.discovery("mutual exclusion").is_none());
        c.unique_state_count()
    } else {
        let config = Config {
            nodes: N,
            requests: REQUESTS as u32,
            fifo: false,
            threads,
            ..Config::default()
        };
        let o = check::<RicartAgrawala>(&config, &mut |_| {}).unwrap();
        assert!(matches!(o.verdict, Verdict::Proved));
        o.stats.states
    };
    (states, t.elapsed().as_secs_f64(), cpu_seconds() - c)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every argument is a known flag followed by its value: anything else is refused, so that a
    // mistyped flag is not silently measured with the defaults.
    for pair in args.chunks(2) {
        if !["--rounds", "--only", "--threads"].contains(&pair[0].as_str()) || pair.len() < 2 {
            eprintln!(
                "checker-vs-stateright: unexpected argument '{}'; usage: [--rounds N] [--only distsync|stateright] [--threads N|all]",
                pair[0]
            );
            std::process::exit(2);
        }
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rounds: usize = match flag("--rounds") {
        None => 5,
        Some(r) => {
            match r.parse() {
                Ok(n) if n > 0 => n,
                _ => {
                    eprintln!("checker-vs-stateright: --rounds: expected a positive whole number, got '{r}'");
                    std::process::exit(2);
                }
            }
        }
    };
    let only = flag("--only");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let thread_counts: Vec<usize> = match flag("--threads").as_deref() {
        Some("all") => vec![cores],
        Some(t) => vec![t.parse().expect("--threads N or all")],
        None if cores > 1 => vec![1, cores],
        None => vec![1],
    };
    let checkers: Vec<&str> = match only.as_deref() {
        Some("stateright") => vec!["stateright"],
        Some("distsync") => vec!["distsync"],
        Some(other) => panic!("--only stateright|distsync, not {other}"),
        None => vec!["stateright", "distsync"],
    };
    let peers = Peers::range(N as u32);
    let load_before = load_average();
    // rows[(checker, threads)] = per round (states, wall, cpu)
    let mut rows: Vec<(&str, usize, Vec<(usize, f64, f64)>)> = Vec::new();
    for &threads in &thread_counts {
        for &c in &checkers {
            rows.push((c, threads, Vec::new()));
        }
    }
    for round in 0..rounds {
        for &threads in &thread_counts {
            // Paired runs, back to back; the order alternates from round to round.
            let mut order = checkers.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            for c in order {
                let r = run(c, threads, &peers);
                eprintln!("round {round}: {c:<10} {threads} thread(s): {} states, {:.3} s wall, {:.2} s CPU", r.0, r.1, r.2);
                rows.iter_mut()
                    .find(|x| x.0 == c && x.1 == threads)
                    .unwrap()
                    .2
                    .push(r);
            }
        }
    }
    println!("ricart-agrawala, {N} nodes x {REQUESTS} requests, non-FIFO links; medians of {rounds} paired rounds");
    println!(
        "load average before: {load_before}; after: {}; {cores} cores",
        load_average()
    );
    println!(
        "{:<16} {:>7} {:>9} {:>9} {:>9} {:>12}",
        "checker", "threads", "states", "wall s", "CPU s", "states/s"
    );
    let mut rate = std::collections::HashMap::new();
    for (c, threads, runs) in &rows {
        let states = runs[0].0;
        assert!(
            runs.iter().all(|r| r.0 == states),
            "state counts differ between rounds"
        );
        let wall = median(runs.iter().map(|r| r.1).collect());
        let cpu = median(runs.iter().map(|r| r.2).collect());
        let name = if *c == "stateright" {
            "stateright 0.31"
        } else {
            "distsync check"
        };
        println!(
            "{:<16} {:>7} {:>9} {:>9.3} {:>9.2} {:>12.0}",
            name,
            threads,
            states,
            wall,
            cpu,
            states as f64 / wall
        );
        rate.insert(
            (*c, *threads),
            runs.iter().map(|r| r.0 as f64 / r.1).collect::<Vec<f64>>(),
        );
    }
    if checkers.len() == 2 {
        let side = |t: usize| {
            let d = &rate[&("distsync", t)];
            let s = &rate[&("stateright", t)];
            median(d.iter().zip(s).map(|(d, s)| d / s).collect())
        };
        let cells: Vec<String> = thread_counts
            .iter()
            .map(|&t| {
                format!(
                    "{} thread{}: {:.2}x",
                    t,
                    if t == 1 { "" } else { "s" },
                    side(t)
                )
            })
            .collect();
        println!(
            "distsync / stateright, unique states/s (median of the per-round ratios): {}",
            cells.join("   ")
        );
        // On a loaded machine the wall clock is mostly waiting for a core; the CPU seconds
        // each checker used are the steadier comparison (for one thread; on more, CPU time
        // adds the threads up and says nothing of the speed-up).
        let by_cpu = |t: usize| {
            let runs = |c: &str| &rows.iter().find(|x| x.0 == c && x.1 == t).unwrap().2;
            median(
                runs("stateright")
                    .iter()
                    .zip(runs("distsync"))
                    .map(|(s, d)| s.2 / d.2.max(1e-9))
                    .collect(),
            )
        };
        if thread_counts.contains(&1) {
            println!(
                "stateright CPU s / distsync CPU s, 1 thread (median of the per-round ratios): {:.2}x",
                by_cpu(1)
            );
        }
        if thread_counts.len() == 2 {
            let speedup = |c: &str| {
                median(rate[&(c, thread_counts[1])].clone()) / median(rate[&(c, 1)].clone())
            };
            println!(
                "speed-up from 1 to {} threads: distsync {:.2}x, stateright {:.2}x",
                thread_counts[1],
                speedup("distsync"),
                speedup("stateright")
            );
        }
    }
}
