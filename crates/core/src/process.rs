//! The process contract: events in, effects out.

use crate::{NodeId, ParamError, Params, Peers, Time};
use rand_core::RngCore;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// A protocol message. `kind()` names the variant as the notes do ("Request", "Reply"...) and is
/// what metrics count by. Messages are `Send`, so that a run can move between threads (the web
/// page's sessions live in a server).
pub trait Message: Clone + Debug + Eq + Hash + Serialize + DeserializeOwned + Send {
    /// The variant's name, for `messages.by_kind` in reports.
    fn kind(&self) -> &'static str;
}

/// The timer type of a process that sets no timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NoTimer {}

/// An algorithm as a state machine. The runtime calls the handlers one at a time; a handler
/// answers only through its [`Ctx`].
pub trait Process {
    /// What processes send each other.
    type Msg: Message;
    /// What the application asks of the process (e.g. request the critical section).
    type Input: Clone + Debug + Serialize + DeserializeOwned + Send;
    /// What the process reports to the application (e.g. it entered the critical section).
    type Output: Clone + Debug + Serialize + Send;
    /// Named timeouts. Setting a timer that is already set moves its deadline.
    type Timer: Clone + Debug + Eq + Hash + Serialize + Send;

    /// Called once when the process starts, and again after a recovery (`ctx.recovered()`).
    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>);
    /// The application asks something.
    fn on_input(&mut self, input: Self::Input, ctx: &mut Ctx<'_, Self>);
    /// A message arrived from `from`.
    fn on_message(&mut self, from: NodeId, msg: Self::Msg, ctx: &mut Ctx<'_, Self>);
    /// A timer set earlier expired.
    fn on_timer(&mut self, timer: Self::Timer, ctx: &mut Ctx<'_, Self>) {
        let _ = (timer, ctx);
    }
}

/// How a runtime builds an algorithm's processes from a scenario or cluster file.
pub trait Algorithm: Process + Sized {
    /// Checks the parameters against the membership once, before any process is built, so that
    /// a bad `coordinator = 9` is reported as input error instead of failing later.
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        let _ = (params, peers);
        Ok(())
    }
    /// A fresh process `id`, at start or after a crash (all state is lost in a crash).
    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self;
}

/// One thing a process asked the runtime to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Effect<M, O, T> {
    /// Send `msg` to `to`.
    Send { to: NodeId, msg: M },
    /// Call `on_timer(timer)` after `after` on the local clock, replacing any pending one.
    SetTimer { timer: T, after: Duration },
    /// Forget a pending timer.
    CancelTimer { timer: T },
    /// Report to the application.
    Output(O),
}

/// The effect type of process `P`.
pub type EffectOf<P> = Effect<<P as Process>::Msg, <P as Process>::Output, <P as Process>::Timer>;

/// What a handler may see and do: its id, the membership, the local clock, randomness, and the
/// effects it records for the runtime to carry out after the handler returns.
pub struct Ctx<'a, P: Process + ?Sized> {
    id: NodeId,
    /// Where `id` stands in `peers`, when the runtime says ([`Ctx::at_position`]).
    position: Option<usize>,
    peers: &'a Peers,
    now: Time,
    recovered: bool,
    rng: &'a mut dyn RngCore,
    effects: &'a mut Vec<EffectOf<P>>,
    /// The rules the handler said it applied ([`Ctx::rule`]); `None` when the runtime does not
    /// read them ([`Ctx::without_rules`]).
    rules: Option<Rules>,
}

/// The numbered rules of an algorithm's file that one handler call applied, in the order the
/// handler named them ([`Ctx::rule`]): at most [`Rules::CAPACITY`], a rule named twice counts
/// once. Runtimes may read them after the call ([`Ctx::rules`]) to show which rule handled an
/// event (the web page's rule panel); nothing else depends on them, and an algorithm that
/// names none is run exactly the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    names: [&'static str; Rules::CAPACITY],
    len: u8,
}

impl Rules {
    /// How many rules one handler call can name; further ones are ignored.
    pub const CAPACITY: usize = 4;

    /// The rules named, in order.
    pub fn as_slice(&self) -> &[&'static str] {
        &self.names[..self.len as usize]
    }

    /// Whether no rule was named.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `rule` unless it is there already or the list is full.
    pub fn push(&mut self, rule: &'static str) {
        let len = self.len as usize;
        if len < Self::CAPACITY && !self.as_slice().contains(&rule) {
            self.names[len] = rule;
            self.len += 1;
        }
    }
}

impl<'a, P: Process + ?Sized> Ctx<'a, P> {
    /// A context for one handler call. Runtimes build it; algorithms only use it.
    pub fn new(
        id: NodeId,
        peers: &'a Peers,
        now: Time,
        recovered: bool,
        rng: &'a mut dyn RngCore,
        effects: &'a mut Vec<EffectOf<P>>,
    ) -> Self {
        Ctx {
            id,
            position: None,
            peers,
            now,
            recovered,
            rng,
            effects,
            rules: Some(Rules::default()),
        }
    }

    /// The same context, not keeping the rules the handler names ([`Ctx::rule`] does nothing
    /// and [`Ctx::rules`] reads none): for a runtime that never shows them, such as the
    /// simulator's batch run, where keeping them was about 5% of the instructions per event.
    pub fn without_rules(mut self) -> Self {
        self.rules = None;
        self
    }

    /// The same context, told that this process stands at `position` in the membership
    /// (`peers().ids()[position] == id()`), so that [`Ctx::successor`] need not look its id up:
    /// on a large ring in a random order that look-up is a cache miss per message.
    pub fn at_position(mut self, position: usize) -> Self {
        debug_assert_eq!(self.peers.ids().get(position), Some(&self.id));
        self.position = Some(position);
        self
    }

    /// Where this process stands in the membership, if the runtime said.
    pub fn position(&self) -> Option<usize> {
        self.position
    }

    /// This process's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The next process in ring order: `peers().successor(id())`.
    pub fn successor(&self) -> NodeId {
        match self.position {
            Some(p) => {
                let ids = self.peers.ids();
                ids[if p + 1 == ids.len() { 0 } else { p + 1 }]
            }
            None => self.peers.successor(self.id),
        }
    }

    /// Every process id, in ring order.
    pub fn peers(&self) -> &'a Peers {
        self.peers
    }

    /// The local clock reading.
    pub fn now(&self) -> Time {
        self.now
    }

    /// True in `on_start` after a crash and recovery.
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    /// The seeded randomness of the run.
    pub fn rng(&mut self) -> &mut dyn RngCore {
        self.rng
    }

    /// Sends `msg` to `to`. A message to oneself is a bug in the algorithm (the conventions do
    /// not count such messages), so it is refused in debug builds and dropped otherwise.
    pub fn send(&mut self, to: NodeId, msg: P::Msg) {
        debug_assert_ne!(to, self.id, "a process must not send to itself");
        if to != self.id {
            self.effects.push(Effect::Send { to, msg });
        }
    }

    /// Sends `msg` to every other process (N-1 messages).
    pub fn broadcast(&mut self, msg: P::Msg) {
        let me = self.id;
        for &to in self.peers.ids() {
            if to != me {
                self.effects.push(Effect::Send {
                    to,
                    msg: msg.clone(),
                });
            }
        }
    }

    /// Asks for `on_timer(timer)` after `after`, replacing a pending timer of the same name.
    pub fn set_timer(&mut self, timer: P::Timer, after: Duration) {
        self.effects.push(Effect::SetTimer { timer, after });
    }

    /// Cancels a pending timer; nothing happens if it is not pending.
    pub fn cancel_timer(&mut self, timer: P::Timer) {
        self.effects.push(Effect::CancelTimer { timer });
    }

    /// Reports to the application.
    pub fn output(&mut self, output: P::Output) {
        self.effects.push(Effect::Output(output));
    }

    /// Says that this call applies rule `rule` of the algorithm's file, as its header comment
    /// numbers it (`"2"` for "2. On REQUEST ..."). Optional and without effect on the run: a
    /// runtime that shows the rules reads them with [`Ctx::rules`]; the others ignore them.
    #[inline]
    pub fn rule(&mut self, rule: &'static str) {
        if let Some(rules) = self.rules.as_mut() {
            rules.push(rule);
        }
    }

    /// The rules this call named so far ([`Ctx::rule`]); none after [`Ctx::without_rules`].
    pub fn rules(&self) -> Rules {
        self.rules.unwrap_or_default()
    }

    /// Whether this context keeps the rules its handler names (not after
    /// [`Ctx::without_rules`]): a wrapper that runs another algorithm's handler in a context of
    /// its own keeps them there only if so.
    pub fn keeps_rules(&self) -> bool {
        self.rules.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// A process that names two rules and sends once per message.
    struct Echo;

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Ping;

    impl Message for Ping {
        fn kind(&self) -> &'static str {
            "Ping"
        }
    }

    impl Process for Echo {
        type Msg = Ping;
        type Input = ();
        type Output = ();
        type Timer = NoTimer;
        fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_input(&mut self, _input: (), _ctx: &mut Ctx<'_, Self>) {}
        fn on_message(&mut self, from: NodeId, msg: Ping, ctx: &mut Ctx<'_, Self>) {
            ctx.rule("2");
            ctx.rule("3");
            ctx.send(from, msg);
        }
    }

    /// A context keeps the rules its handler names, unless the runtime said it does not read
    /// them; the handler's effects are the same either way.
    #[test]
    fn rules_are_kept_unless_the_runtime_does_without_them() {
        let peers = Peers::range(2);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        for keep in [true, false] {
            let mut effects = Vec::new();
            let ctx = Ctx::new(NodeId(0), &peers, Time::ZERO, false, &mut rng, &mut effects);
            let mut ctx = if keep { ctx } else { ctx.without_rules() };
            Echo.on_message(NodeId(1), Ping, &mut ctx);
            let named = ctx.rules();
            let expected: &[&str] = if keep { &["2", "3"] } else { &[] };
            assert_eq!(named.as_slice(), expected);
            assert_eq!(
                effects,
                vec![Effect::Send {
                    to: NodeId(1),
                    msg: Ping
                }]
            );
        }
    }
}
