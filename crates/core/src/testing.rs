//! A tiny driver for unit-testing one process's rules by hand, without a simulator.
//!
//! ```
//! use distsync_core::testing::Driver;
//! use distsync_core::{Ctx, Message, NodeId, NoTimer, Peers, Process};
//! # use serde::{Deserialize, Serialize};
//! # #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)] struct Ping;
//! # impl Message for Ping { fn kind(&self) -> &'static str { "Ping" } }
//! struct Shout;
//! impl Process for Shout {
//!     type Msg = Ping; type Input = (); type Output = (); type Timer = NoTimer;
//!     fn on_start(&mut self, _: &mut Ctx<'_, Self>) {}
//!     fn on_input(&mut self, _: (), ctx: &mut Ctx<'_, Self>) { ctx.broadcast(Ping) }
//!     fn on_message(&mut self, _: NodeId, _: Ping, _: &mut Ctx<'_, Self>) {}
//! }
//! let peers = Peers::range(3);
//! let mut d = Driver::new(Shout, NodeId(1), &peers);
//! d.input(());
//! assert_eq!(d.sent(), vec![(NodeId(0), Ping), (NodeId(2), Ping)]);
//! ```

use crate::process::EffectOf;
use crate::{Ctx, Effect, NodeId, Peers, Process, Time};
use rand_core::{impls, Error, RngCore};
use std::time::Duration;

/// One process, driven by hand. Effects of the last call are kept until the next one.
pub struct Driver<'a, P: Process> {
    /// The process under test; inspect its state freely.
    pub process: P,
    id: NodeId,
    peers: &'a Peers,
    now: Time,
    rng: SplitMix64,
    effects: Vec<EffectOf<P>>,
}

impl<'a, P: Process> Driver<'a, P> {
    /// Wraps `process` as node `id` of `peers`, at time zero.
    pub fn new(process: P, id: NodeId, peers: &'a Peers) -> Self {
        Driver {
            process,
            id,
            peers,
            now: Time::ZERO,
            rng: SplitMix64(0x5eed),
            effects: Vec::new(),
        }
    }

    /// Moves the local clock forward.
    pub fn advance(&mut self, by: Duration) -> &mut Self {
        self.now = self.now + by;
        self
    }

    fn call(&mut self, f: impl FnOnce(&mut P, &mut Ctx<'_, P>)) -> &mut Self {
        self.effects.clear();
        let mut ctx = Ctx::new(
            self.id,
            self.peers,
            self.now,
            false,
            &mut self.rng,
            &mut self.effects,
        );
        f(&mut self.process, &mut ctx);
        self
    }

    /// Calls `on_start`.
    pub fn start(&mut self) -> &mut Self {
        self.call(|p, ctx| p.on_start(ctx))
    }

    /// Calls `on_input`.
    pub fn input(&mut self, input: P::Input) -> &mut Self {
        self.call(|p, ctx| p.on_input(input, ctx))
    }

    /// Calls `on_message`.
    pub fn receive(&mut self, from: u32, msg: P::Msg) -> &mut Self {
        self.call(|p, ctx| p.on_message(NodeId(from), msg, ctx))
    }

    /// Calls `on_timer`.
    pub fn fire(&mut self, timer: P::Timer) -> &mut Self {
        self.call(|p, ctx| p.on_timer(timer, ctx))
    }

    /// Every effect of the last call.
    pub fn effects(&self) -> &[EffectOf<P>] {
        &self.effects
    }

    /// The messages the last call sent, in order.
    pub fn sent(&self) -> Vec<(NodeId, P::Msg)> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send { to, msg } => Some((*to, msg.clone())),
                _ => None,
            })
            .collect()
    }

    /// The outputs of the last call, in order.
    pub fn outputs(&self) -> Vec<P::Output> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Output(o) => Some(o.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A small deterministic generator for hand-driven tests (SplitMix64).
struct SplitMix64(u64);

impl RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        impls::fill_bytes_via_next(self, dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}
