//! A small message pump for the election tests: a handful of processes, a constant (or
//! test-chosen) message delay, timers, crashes and recoveries, in simulated time. Events at the
//! same instant run in the order they were scheduled, so a constant delay gives a scripted,
//! FIFO delivery order. The simulator (crates/sim) is the real tool; this only exists so the
//! rules can be checked step by step next to the code.

use distsync_core::election::{Election, Input, Output};
use distsync_core::{Ctx, Effect, EffectOf, Message, NodeId, Params, Peers, Process, Time};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// One message that left a process.
#[derive(Clone, Debug)]
pub struct Sent<M> {
    pub time: Time,
    pub from: NodeId,
    pub to: NodeId,
    pub msg: M,
    /// False when the receiver was down at delivery time.
    pub delivered: bool,
}

enum Ev<P: Process> {
    Deliver {
        from: NodeId,
        to: usize,
        msg: P::Msg,
        log: usize,
    },
    Timer {
        node: usize,
        timer: P::Timer,
    },
}

type Delay = Box<dyn FnMut(NodeId, NodeId, &mut Xoshiro256PlusPlus) -> Duration>;

/// Processes of type `P` on a simulated network.
pub struct Net<P: Election> {
    pub peers: Peers,
    params: Params,
    nodes: Vec<Option<P>>,
    now: Time,
    next: u64,
    events: BTreeMap<(Time, u64), Ev<P>>,
    timers: HashMap<(usize, P::Timer), (Time, u64)>,
    delay: Delay,
    rng: Xoshiro256PlusPlus,
    /// Every message sent, in order.
    pub sent: Vec<Sent<P::Msg>>,
    /// Every output, in order.
    pub outputs: Vec<(Time, NodeId, Output)>,
}

impl<P: Election> Net<P> {
    /// Processes with these ids (in ring order), started at time zero, 1ms message delay.
    pub fn new(ids: &[u32], params: Params) -> Self {
        let peers = Peers::new(ids.iter().map(|&i| NodeId(i)).collect()).unwrap();
        P::validate(&params, &peers).unwrap();
        let mut net = Net {
            nodes: (0..ids.len()).map(|_| None).collect(),
            peers,
            params,
            now: Time::ZERO,
            next: 0,
            events: BTreeMap::new(),
            timers: HashMap::new(),
            delay: Box::new(|_, _, _| Duration::from_millis(1)),
            rng: Xoshiro256PlusPlus::seed_from_u64(7),
            sent: Vec::new(),
            outputs: Vec::new(),
        };
        for k in 0..ids.len() {
            net.boot(k, false);
        }
        net
    }

    /// Draws each message's delay from `delay` instead of the constant 1ms.
    pub fn with_delay(
        mut self,
        seed: u64,
        delay: impl FnMut(NodeId, NodeId, &mut Xoshiro256PlusPlus) -> Duration + 'static,
    ) -> Self {
        self.delay = Box::new(delay);
        self.rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        self
    }

    fn boot(&mut self, k: usize, recovered: bool) {
        let id = self.peers.ids()[k];
        self.nodes[k] = Some(P::new(id, &self.peers, &self.params));
        self.call(k, recovered, |p, ctx| p.on_start(ctx));
    }

    fn pos(&self, id: u32) -> usize {
        self.peers.index_of(NodeId(id))
    }

    /// The live process `id`.
    pub fn process(&self, id: u32) -> &P {
        self.nodes[self.pos(id)]
            .as_ref()
            .expect("the process is down")
    }

    /// Whether `id` is up.
    pub fn is_up(&self, id: u32) -> bool {
        self.nodes[self.pos(id)].is_some()
    }

    /// Crashes `id`: its state, pending timers and future deliveries are lost.
    pub fn crash(&mut self, id: u32) {
        let k = self.pos(id);
        self.nodes[k] = None;
        let keys: Vec<_> = self.timers.keys().filter(|t| t.0 == k).cloned().collect();
        for key in keys {
            let at = self.timers.remove(&key).unwrap();
            self.events.remove(&at);
        }
    }

    /// Restarts `id` with fresh state, told it recovered.
    pub fn recover(&mut self, id: u32) {
        let k = self.pos(id);
        assert!(self.nodes[k].is_none(), "{id} is not down");
        self.boot(k, true);
    }

    /// Gives `id` the Start input now.
    pub fn start(&mut self, id: u32) {
        let k = self.pos(id);
        self.call(k, false, |p, ctx| p.on_input(Input::Start, ctx));
    }

    fn call(&mut self, k: usize, recovered: bool, f: impl FnOnce(&mut P, &mut Ctx<'_, P>)) {
        let Some(process) = self.nodes[k].as_mut() else {
            return;
        };
        let id = self.peers.ids()[k];
        let mut effects: Vec<EffectOf<P>> = Vec::new();
        let mut ctx = Ctx::new(
            id,
            &self.peers,
            self.now,
            recovered,
            &mut self.rng,
            &mut effects,
        );
        f(process, &mut ctx);
        for effect in effects {
            match effect {
                Effect::Send { to, msg } => {
                    let after = (self.delay)(id, to, &mut self.rng);
                    let log = self.sent.len();
                    self.sent.push(Sent {
                        time: self.now,
                        from: id,
                        to,
                        msg: msg.clone(),
                        delivered: true,
                    });
                    let to = self.peers.index_of(to);
                    self.schedule(
                        self.now + after,
                        Ev::Deliver {
                            from: id,
                            to,
                            msg,
                            log,
                        },
                    );
                }
                Effect::SetTimer { timer, after } => {
                    if let Some(old) = self.timers.remove(&(k, timer.clone())) {
                        self.events.remove(&old);
                    }
                    let at = self.schedule(
                        self.now + after,
                        Ev::Timer {
                            node: k,
                            timer: timer.clone(),
                        },
                    );
                    self.timers.insert((k, timer), at);
                }
                Effect::CancelTimer { timer } => {
                    if let Some(old) = self.timers.remove(&(k, timer)) {
                        self.events.remove(&old);
                    }
                }
                Effect::Output(o) => self.outputs.push((self.now, id, o)),
            }
        }
    }

    fn schedule(&mut self, at: Time, ev: Ev<P>) -> (Time, u64) {
        let key = (at, self.next);
        self.next += 1;
        self.events.insert(key, ev);
        key
    }

    /// Runs the next event; false when there is none.
    pub fn step(&mut self) -> bool {
        let Some(((at, seq), ev)) = self.events.pop_first() else {
            return false;
        };
        self.now = at;
        match ev {
            Ev::Deliver { from, to, msg, log } => {
                if self.nodes[to].is_some() {
                    self.call(to, false, |p, ctx| p.on_message(from, msg, ctx));
                } else {
                    self.sent[log].delivered = false;
                }
            }
            Ev::Timer { node, timer } => {
                if self.timers.get(&(node, timer.clone())) == Some(&(at, seq)) {
                    self.timers.remove(&(node, timer.clone()));
                    self.call(node, false, |p, ctx| p.on_timer(timer, ctx));
                }
            }
        }
        true
    }

    /// Runs events until none is left or `limit` ran (then panics: the run did not settle).
    pub fn run(&mut self, limit: usize) -> usize {
        for n in 0..limit {
            if !self.step() {
                return n;
            }
        }
        panic!("no quiescence after {limit} events");
    }

    /// Runs every event scheduled up to `until`.
    pub fn run_until(&mut self, until: Time) {
        while self
            .events
            .first_key_value()
            .is_some_and(|(k, _)| k.0 <= until)
        {
            self.step();
        }
        self.now = self.now.max(until);
    }

    /// How many messages of this kind were sent.
    pub fn count(&self, kind: &str) -> usize {
        self.sent.iter().filter(|s| s.msg.kind() == kind).count()
    }

    /// Asserts every live process believes in `leader` and none is still electing.
    pub fn assert_all_agree_on(&self, leader: u32) {
        for (id, p) in self.peers.ids().iter().zip(&self.nodes) {
            if let Some(p) = p {
                assert_eq!(p.leader(), Some(NodeId(leader)), "process {id}");
                assert!(!p.electing(), "process {id} is still electing");
            }
        }
    }
}
