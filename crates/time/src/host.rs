//! A host for one clock-synchronization process (an algorithm file of
//! `distsync_algorithms::clocks`, unchanged): it builds the [`Ctx`] exactly as the simulator
//! does, keeps the process's timers as deadlines, and hands back the sends and outputs for the
//! caller's I/O layer. Pure: the caller passes the clock reading and the monotonic time.

use distsync_core::{Ctx, Effect, NodeId, Peers, Process, Time};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;
use std::time::Duration;

/// What a handler call asked for besides timers.
#[derive(Debug)]
pub enum Action<P: Process> {
    /// Send this message to that node.
    Send(NodeId, P::Msg),
    /// The process reports this.
    Output(P::Output),
}

/// One process with its timers.
pub struct Host<P: Process> {
    /// The algorithm's state.
    pub process: P,
    id: NodeId,
    peers: Peers,
    rng: Xoshiro256PlusPlus,
    /// Pending timers: deadline in monotonic ns.
    timers: HashMap<P::Timer, u64>,
}

impl<P: Process> Host<P> {
    /// A host for `process`, node `id` among `peers`, with randomness seeded by `seed`.
    pub fn new(process: P, id: NodeId, peers: Peers, seed: u64) -> Host<P> {
        Host {
            process,
            id,
            peers,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            timers: HashMap::new(),
        }
    }

    /// Calls one handler with `now` as the local clock reading and `mono_ns` as the monotonic
    /// time timers are kept in; returns the sends and outputs in order.
    pub fn call(
        &mut self,
        now: Time,
        mono_ns: u64,
        f: impl FnOnce(&mut P, &mut Ctx<'_, P>),
    ) -> Vec<Action<P>> {
        self.call_with(now, mono_ns, false, f)
    }

    /// `on_start`, telling the process whether it is recovering (`ctx.recovered()`: it joins
    /// processes that ran without it).
    pub fn start(&mut self, now: Time, mono_ns: u64, recovered: bool) -> Vec<Action<P>> {
        self.call_with(now, mono_ns, recovered, |p, c| p.on_start(c))
    }

    fn call_with(
        &mut self,
        now: Time,
        mono_ns: u64,
        recovered: bool,
        f: impl FnOnce(&mut P, &mut Ctx<'_, P>),
    ) -> Vec<Action<P>> {
        let mut effects = Vec::new();
        {
            let mut ctx = Ctx::new(
                self.id,
                &self.peers,
                now,
                recovered,
                &mut self.rng,
                &mut effects,
            );
            f(&mut self.process, &mut ctx);
        }
        let mut actions = Vec::new();
        for e in effects {
            match e {
                Effect::Send { to, msg } => actions.push(Action::Send(to, msg)),
                Effect::Output(o) => actions.push(Action::Output(o)),
                Effect::SetTimer { timer, after } => {
                    self.timers
                        .insert(timer, mono_ns.saturating_add(after.as_nanos() as u64));
                }
                Effect::CancelTimer { timer } => {
                    self.timers.remove(&timer);
                }
            }
        }
        actions
    }

    /// The earliest pending timer and its deadline (monotonic ns).
    pub fn next_timer(&self) -> Option<(P::Timer, u64)> {
        self.timers
            .iter()
            .min_by_key(|(_, &at)| at)
            .map(|(t, &at)| (t.clone(), at))
    }

    /// Takes the timer `timer` out (it is about to fire).
    pub fn take_timer(&mut self, timer: &P::Timer) {
        self.timers.remove(timer);
    }

    /// How long until `deadline` from `mono_ns`.
    pub fn until(deadline: u64, mono_ns: u64) -> Duration {
        Duration::from_nanos(deadline.saturating_sub(mono_ns))
    }
}
