//! The process contract of distsync.
//!
//! Every algorithm in distsync is a plain state machine implementing [`Process`]: it is handed
//! events (start, application input, message, timer) together with a [`Ctx`], and answers only by
//! recording effects in that context (send, set or cancel a timer, output). It never does I/O,
//! never reads a clock of its own and never draws randomness except from the context. The same
//! algorithm value can therefore be driven by the deterministic simulator, by an exhaustive
//! checker, or by a real network runtime.
//!
//! ```
//! use distsync_core::{Ctx, Effect, Message, NodeId, NoTimer, Peers, Process, Time};
//! use serde::{Deserialize, Serialize};
//!
//! /// Replies "pong" to every "ping".
//! struct Echo;
//!
//! #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
//! enum Msg { Ping, Pong }
//! impl Message for Msg {
//!     fn kind(&self) -> &'static str { match self { Msg::Ping => "Ping", Msg::Pong => "Pong" } }
//! }
//!
//! impl Process for Echo {
//!     type Msg = Msg;
//!     type Input = ();
//!     type Output = ();
//!     type Timer = NoTimer;
//!     fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}
//!     fn on_input(&mut self, _: (), ctx: &mut Ctx<'_, Self>) { ctx.broadcast(Msg::Ping) }
//!     fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
//!         if msg == Msg::Ping { ctx.send(from, Msg::Pong) }
//!     }
//! }
//!
//! let peers = Peers::new(vec![NodeId(0), NodeId(1), NodeId(2)]).unwrap();
//! use rand_core::SeedableRng;
//! let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
//! let mut effects = Vec::new();
//! let mut ctx = Ctx::new(NodeId(0), &peers, Time::ZERO, false, &mut rng, &mut effects);
//! Echo.on_input((), &mut ctx);
//! // A broadcast goes to every other node, never to the sender itself.
//! assert_eq!(effects.len(), 2);
//! assert!(matches!(effects[0], Effect::Send { to: NodeId(1), .. }));
//! ```

pub mod clock;
pub mod clock_sync;
pub mod election;
mod id;
pub mod multicast;
pub mod mutex;
mod params;
mod process;
pub mod snapshot;
pub mod testing;
mod time;

pub use clock::{Causality, LamportClock, Stamp, VectorClock};
pub use id::{NodeId, Peers, PeersError};
pub use params::{ParamError, Params, QuorumKind};
pub use process::{Algorithm, Ctx, Effect, EffectOf, Message, NoTimer, Process, Rules};
pub use time::{
    format_duration, parse_duration, parse_signed_duration, serde_duration, DurationError, Time,
};
