//! A test-only message pump for the mutual-exclusion unit tests: a few processes, the messages
//! between them held in one list, delivered in the order a test scripts, or in a seeded random
//! order. There is no time and no network model; it exists to replay the notes' multi-process
//! examples step by step and to shake an algorithm's safety in unit tests. Scenario-level
//! measurement is the simulator's job (crates/sim).

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Ctx, Effect, EffectOf, Message, NodeId, Params, Peers, Time};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet};

/// One message on its way.
#[derive(Clone, Debug, Hash)]
pub struct Flight<M> {
    pub from: NodeId,
    pub to: NodeId,
    pub msg: M,
}

/// Processes of algorithm `P` and the messages between them.
pub struct Pump<P: MutualExclusion> {
    pub peers: Peers,
    pub procs: Vec<P>,
    /// Messages sent and not yet delivered, oldest first.
    pub in_flight: Vec<Flight<P::Msg>>,
    /// Every message sent so far, by kind.
    pub by_kind: BTreeMap<&'static str, usize>,
    /// Every output so far, in order.
    pub outputs: Vec<(NodeId, Output)>,
    requesting: Vec<bool>,
    rng: Xoshiro256PlusPlus,
}

impl<P: MutualExclusion> Pump<P> {
    /// Processes for `ids` built with `params` (validated first), all started.
    pub fn new(ids: &[u32], params: &Params) -> Pump<P> {
        let peers = Peers::new(ids.iter().map(|&i| NodeId(i)).collect()).unwrap();
        P::validate(params, &peers).expect("valid parameters");
        let procs = peers
            .ids()
            .iter()
            .map(|&id| P::new(id, &peers, params))
            .collect();
        let n = peers.len();
        let mut pump = Pump {
            peers,
            procs,
            in_flight: Vec::new(),
            by_kind: BTreeMap::new(),
            outputs: Vec::new(),
            requesting: vec![false; n],
            rng: Xoshiro256PlusPlus::seed_from_u64(7),
        };
        for &id in pump.peers.clone().ids() {
            pump.call(id, |p, ctx| p.on_start(ctx));
        }
        pump
    }

    /// The process `id`.
    pub fn node(&self, id: u32) -> &P {
        &self.procs[self.peers.index_of(NodeId(id))]
    }

    /// Messages sent so far.
    pub fn sent(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// The nodes inside the critical section.
    pub fn in_cs(&self) -> Vec<NodeId> {
        self.peers
            .ids()
            .iter()
            .zip(&self.procs)
            .filter(|(_, p)| p.in_critical_section())
            .map(|(&id, _)| id)
            .collect()
    }

    fn call(&mut self, id: NodeId, f: impl FnOnce(&mut P, &mut Ctx<'_, P>)) {
        let pos = self.peers.index_of(id);
        let mut effects: Vec<EffectOf<P>> = Vec::new();
        {
            let mut ctx = Ctx::new(
                id,
                &self.peers,
                Time::ZERO,
                false,
                &mut self.rng,
                &mut effects,
            );
            f(&mut self.procs[pos], &mut ctx);
        }
        for e in effects {
            match e {
                Effect::Send { to, msg } => {
                    assert_ne!(to, id, "{id} sent to itself");
                    *self.by_kind.entry(msg.kind()).or_default() += 1;
                    self.in_flight.push(Flight { from: id, to, msg });
                }
                Effect::Output(o) => {
                    match o {
                        Output::Enter => {
                            assert!(self.procs[pos].in_critical_section());
                            assert!(self.requesting[pos], "{id} entered without a request");
                        }
                        Output::Exit => {
                            assert!(!self.procs[pos].in_critical_section());
                            self.requesting[pos] = false;
                        }
                    }
                    self.outputs.push((id, o));
                }
                Effect::SetTimer { .. } | Effect::CancelTimer { .. } => {}
            }
        }
        let inside = self.in_cs();
        assert!(
            inside.len() <= 1,
            "mutual exclusion violated: {inside:?} inside"
        );
    }

    /// The application of `id` asks `input`.
    pub fn input(&mut self, id: u32, input: Input) -> &mut Self {
        if input == Input::Request {
            self.requesting[self.peers.index_of(NodeId(id))] = true;
        }
        self.call(NodeId(id), |p, ctx| p.on_input(input, ctx));
        self
    }

    /// Delivers in-flight message `k` (0 = the oldest) and returns it.
    pub fn deliver_at(&mut self, k: usize) -> Flight<P::Msg> {
        let f = self.in_flight.remove(k);
        let (from, msg) = (f.from, f.msg.clone());
        self.call(f.to, |p, ctx| p.on_message(from, msg, ctx));
        f
    }

    /// Delivers the oldest message from `from` to `to` and returns it; panics if there is none.
    pub fn deliver(&mut self, from: u32, to: u32) -> P::Msg {
        let k = self
            .in_flight
            .iter()
            .position(|f| f.from == NodeId(from) && f.to == NodeId(to))
            .unwrap_or_else(|| panic!("no message in flight from {from} to {to}"));
        self.deliver_at(k).msg
    }

    /// The messages in flight from `from` to `to`, oldest first.
    pub fn pending(&self, from: u32, to: u32) -> Vec<P::Msg> {
        self.in_flight
            .iter()
            .filter(|f| f.from == NodeId(from) && f.to == NodeId(to))
            .map(|f| f.msg.clone())
            .collect()
    }

    /// Delivers oldest-first until nothing is in flight (at most `limit` deliveries).
    pub fn drain(&mut self, limit: usize) -> &mut Self {
        for _ in 0..limit {
            if self.in_flight.is_empty() {
                return self;
            }
            self.deliver_at(0);
        }
        panic!(
            "still {} messages in flight after {limit} deliveries",
            self.in_flight.len()
        );
    }

    /// Light load: `id` alone requests, enters, releases; everything else is delivered. Returns
    /// the messages sent from the request until the system is quiet again.
    pub fn serve_alone(&mut self, id: u32) -> usize {
        let before = self.sent();
        self.input(id, Input::Request);
        self.drain(100_000);
        assert_eq!(self.in_cs(), vec![NodeId(id)], "{id} did not get in alone");
        self.input(id, Input::Release);
        self.drain(100_000);
        self.sent() - before
    }

    /// Random interleaving: every node asks `requests` times; requests, releases and deliveries
    /// (in any order, or oldest first per link with `fifo`) are picked at random. Mutual
    /// exclusion is checked after every step; a state where requests wait and nothing can happen
    /// fails the test as a deadlock. Returns the entries made.
    pub fn shake(&mut self, seed: u64, requests: usize, fifo: bool) -> usize {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = self.peers.len();
        let mut left = vec![requests; n];
        let entered = |outputs: &[(NodeId, Output)]| {
            outputs.iter().filter(|(_, o)| *o == Output::Enter).count()
        };
        let entries_before = entered(&self.outputs);
        for _ in 0..2_000_000 {
            let idle: Vec<usize> = (0..n)
                .filter(|&k| !self.requesting[k] && left[k] > 0)
                .collect();
            let inside: Vec<usize> = (0..n)
                .filter(|&k| self.procs[k].in_critical_section())
                .collect();
            let all_done = left.iter().all(|&l| l == 0) && !self.requesting.iter().any(|&r| r);
            if all_done {
                return entered(&self.outputs) - entries_before;
            }
            let choices = idle.len().min(1) + inside.len().min(1) + self.in_flight.len().min(1);
            assert!(
                choices > 0,
                "seed {seed}: deadlock, requests wait and nothing is in flight: {:?}",
                self.requesting
            );
            let mut pick = rng.next_u32() as usize % 10;
            if self.in_flight.is_empty() {
                pick = 0;
            }
            if pick < 2 && !idle.is_empty() {
                let k = idle[rng.next_u32() as usize % idle.len()];
                left[k] -= 1;
                let id = self.peers.ids()[k].0;
                self.input(id, Input::Request);
            } else if pick < 4 && !inside.is_empty() {
                let id = self.peers.ids()[inside[0]].0;
                self.input(id, Input::Release);
            } else if !self.in_flight.is_empty() {
                let k = if fifo {
                    let j = rng.next_u32() as usize % self.in_flight.len();
                    let (from, to) = (self.in_flight[j].from, self.in_flight[j].to);
                    self.in_flight
                        .iter()
                        .position(|f| f.from == from && f.to == to)
                        .expect("j itself matches")
                } else {
                    rng.next_u32() as usize % self.in_flight.len()
                };
                self.deliver_at(k);
            } else if !inside.is_empty() {
                let id = self.peers.ids()[inside[0]].0;
                self.input(id, Input::Release);
            } else if !idle.is_empty() {
                let k = idle[0];
                left[k] -= 1;
                let id = self.peers.ids()[k].0;
                self.input(id, Input::Request);
            }
        }
        panic!("seed {seed}: no completion after 2M steps (livelock or starvation)");
    }

    /// Scripts the deadlock: a, b, c request; a's REQUEST reaches x first, b's y, c's z;
    /// then everything else is delivered. Returns the pump.
    pub fn deadlock_script(n: u32, t: [u32; 6]) -> Pump<P> {
        let [a, b, c, x, y, z] = t;
        let ids: Vec<u32> = (0..n).collect();
        let mut p: Pump<P> = Pump::new(&ids, &Params::default());
        p.input(a, Input::Request)
            .input(b, Input::Request)
            .input(c, Input::Request);
        for (from, to) in [(a, x), (b, y), (c, z)] {
            if from != to {
                p.deliver(from, to);
            }
        }
        p
    }
}

/// Three sites whose quorums meet pairwise in three distinct arbiters, each reached first
/// by a different one of them: `(a, b, c, x, y, z)` with x in R_a ∩ R_b won by a, y in
/// R_b ∩ R_c won by b, z in R_c ∩ R_a won by c.
pub fn deadlock_triple(qs: &[Vec<usize>]) -> Option<[u32; 6]> {
    let n = qs.len();
    let meet = |a: usize, b: usize| qs[a].iter().copied().find(|x| qs[b].contains(x));
    for a in 0..n {
        for b in 0..n {
            for c in 0..n {
                if a == b || b == c || a == c {
                    continue;
                }
                let (x, y, z) = (meet(a, b)?, meet(b, c)?, meet(c, a)?);
                let distinct = [x, y, z].iter().collect::<BTreeSet<_>>().len() == 3;
                // Each arbiter must not be one of the other two requesters (its own
                // request would lock it at request time).
                if distinct && x != c && y != a && z != b && x != b && y != c && z != a {
                    return Some([a, b, c, x, y, z].map(|v| v as u32));
                }
            }
        }
    }
    None
}
