//! The algorithms, unchanged, behind one object-safe interface with byte-encoded messages and
//! timers, so that the runtime is compiled once and not once per pair of algorithms.
//!
//! [`Erased`] holds an algorithm value and drives its [`Process`] handlers exactly as the
//! simulator does (`sim::engine::call`): it builds a [`Ctx`] with the node id, the view's
//! membership, the local clock reading and the node's randomness, calls one handler, and hands
//! back the recorded effects, with messages encoded by the algorithm's own serde types and timers
//! as their encoding (the runtime keys its sleeps by those bytes; `Erased` maps them back to the
//! timer values it was given).

use crate::wire::{self, DecodeError};
use distsync_algorithms::election::Detector;
use distsync_algorithms::registry::{
    self, ElectionVisitor, Entry, Explorable, MulticastVisitor, MutexVisitor, SnapshotVisitor,
};
use distsync_algorithms::validate::Validate;
use distsync_core::election::{self as el, Election};
use distsync_core::multicast::{self as mc, Multicast};
use distsync_core::mutex::{self as mx, MutualExclusion};
use distsync_core::snapshot::{self as sn, GlobalSnapshot};
use distsync_core::{Ctx, Effect, EffectOf, NodeId, ParamError, Params, Peers, Process, Time};
use rand_core::RngCore;
use std::collections::HashMap;
use std::time::Duration;

/// What a handler call sees: the same things a simulated process sees.
pub struct Env<'a> {
    /// This node.
    pub id: NodeId,
    /// The membership the instance was built with.
    pub peers: &'a Peers,
    /// The OS monotonic clock since the node started.
    pub now: Time,
    /// Whether `on_start` follows a restart.
    pub recovered: bool,
    /// The node's randomness.
    pub rng: &'a mut dyn RngCore,
}

/// An event for a handler.
pub enum Event<'a, I> {
    /// `on_start`.
    Start,
    /// `on_input`.
    Input(I),
    /// `on_message` with the encoded message.
    Message(NodeId, &'a [u8]),
    /// `on_timer` with the timer's encoding.
    Timer(&'a [u8]),
}

/// An effect with the message and timer encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out<O> {
    /// Send these bytes to that node.
    Send(NodeId, Vec<u8>),
    /// Fire this timer after that long, replacing a pending one of the same encoding.
    SetTimer(Vec<u8>, Duration),
    /// Forget this timer.
    CancelTimer(Vec<u8>),
    /// Report to the runtime.
    Output(O),
}

/// One algorithm instance with encoded messages and timers.
pub trait Machine<I, O> {
    /// Calls the handler for `event`, appending its effects to `out`. A message that does not
    /// decode, or whose fields are out of range for the membership
    /// ([`Validate`]), is an error and reaches no
    /// handler.
    fn handle(
        &mut self,
        env: Env<'_>,
        event: Event<'_, I>,
        out: &mut Vec<Out<O>>,
    ) -> Result<(), DecodeError>;
}

/// A mutual-exclusion instance (`Send`, so that a node's loop can run as a task).
pub trait MutexMachine: Machine<mx::Input, mx::Output> + Send {
    /// Between Enter and Exit.
    fn in_critical_section(&self) -> bool;
}

/// An election instance (`Send`, so that a node's loop can run as a task).
pub trait ElectionMachine: Machine<el::Input, el::Output> + Send {
    /// The leader it believes in.
    fn leader(&self) -> Option<NodeId>;
    /// Whether it takes part in an election whose result it has not learned.
    fn electing(&self) -> bool;
}

/// A multicast instance (the store's).
pub trait MulticastMachine: Machine<mc::Input, mc::Output> + Send {
    /// How many multicasts it has made.
    fn multicasts(&self) -> u64;
}

/// A snapshot instance with its bank account (the node's own).
pub trait SnapshotMachine: Machine<sn::Input, sn::Output> + Send {
    /// The account's balance now.
    fn balance(&self) -> u64;
}

/// An algorithm value and the timers it has set, by encoding.
pub struct Erased<A: Process> {
    /// The algorithm, as the registry builds it.
    pub inner: A,
    timers: HashMap<Vec<u8>, A::Timer>,
    effects: Vec<EffectOf<A>>,
}

impl<A: Process> Erased<A> {
    /// Wraps `inner`.
    pub fn new(inner: A) -> Self {
        Erased {
            inner,
            timers: HashMap::new(),
            effects: Vec::new(),
        }
    }
}

impl<A: Process> Machine<A::Input, A::Output> for Erased<A>
where
    A::Msg: Validate,
{
    fn handle(
        &mut self,
        env: Env<'_>,
        event: Event<'_, A::Input>,
        out: &mut Vec<Out<A::Output>>,
    ) -> Result<(), DecodeError> {
        // Peer input is hostile input: a message is decoded and its fields checked against the
        // membership (a short vector, a stranger's id, an overflowing counter) before any
        // handler runs; what fails reaches none.
        let mut msg = match &event {
            Event::Message(_, bytes) => {
                let msg: A::Msg = wire::decode(bytes)?;
                msg.validate_for(env.peers, env.id)
                    .map_err(|e| DecodeError(e.to_string()))?;
                Some(msg)
            }
            _ => None,
        };
        let mut effects = std::mem::take(&mut self.effects);
        {
            let mut ctx = Ctx::new(
                env.id,
                env.peers,
                env.now,
                env.recovered,
                env.rng,
                &mut effects,
            );
            match event {
                Event::Start => self.inner.on_start(&mut ctx),
                Event::Input(i) => self.inner.on_input(i, &mut ctx),
                Event::Message(from, _) => {
                    if let Some(msg) = msg.take() {
                        self.inner.on_message(from, msg, &mut ctx)
                    }
                }
                Event::Timer(key) => {
                    // A timer cancelled or replaced after the runtime queued its expiry is gone.
                    let Some(timer) = self.timers.remove(key) else {
                        self.effects = effects;
                        return Ok(());
                    };
                    self.inner.on_timer(timer, &mut ctx)
                }
            }
        }
        for e in effects.drain(..) {
            out.push(match e {
                Effect::Send { to, msg } => Out::Send(to, wire::encode(&msg)),
                Effect::SetTimer { timer, after } => {
                    let key = wire::encode(&timer);
                    self.timers.insert(key.clone(), timer);
                    Out::SetTimer(key, after)
                }
                Effect::CancelTimer { timer } => {
                    let key = wire::encode(&timer);
                    self.timers.remove(&key);
                    Out::CancelTimer(key)
                }
                Effect::Output(o) => Out::Output(o),
            });
        }
        self.effects = effects;
        Ok(())
    }
}

impl<A: MutualExclusion + Send> MutexMachine for Erased<A>
where
    A::Msg: Validate,
{
    fn in_critical_section(&self) -> bool {
        self.inner.in_critical_section()
    }
}

impl<A: Election + Send> ElectionMachine for Erased<A>
where
    A::Msg: Validate,
{
    fn leader(&self) -> Option<NodeId> {
        self.inner.leader()
    }
    fn electing(&self) -> bool {
        self.inner.electing()
    }
}

impl<A: Multicast + Send> MulticastMachine for Erased<A>
where
    A::Msg: Validate,
{
    fn multicasts(&self) -> u64 {
        self.inner.multicasts()
    }
}

impl<A: GlobalSnapshot + Send> SnapshotMachine for Erased<A>
where
    A::Msg: Validate,
{
    fn balance(&self) -> u64 {
        self.inner.balance()
    }
}

/// How to build instances of one multicast algorithm.
#[derive(Clone, Copy)]
pub struct MulticastKind {
    /// Its registry entry.
    pub entry: &'static Entry,
    /// A fresh instance.
    pub new: fn(NodeId, &Peers, &Params) -> Box<dyn MulticastMachine>,
}

/// How to build instances of one snapshot algorithm.
#[derive(Clone, Copy)]
pub struct SnapshotKind {
    /// Its registry entry.
    pub entry: &'static Entry,
    /// Checks parameters against a membership.
    pub validate: fn(&Params, &Peers) -> Result<(), ParamError>,
    /// A fresh instance.
    pub new: fn(NodeId, &Peers, &Params) -> Box<dyn SnapshotMachine>,
}

/// How to build and check instances of one mutual-exclusion algorithm.
#[derive(Clone, Copy)]
pub struct MutexKind {
    /// Its registry entry.
    pub entry: &'static Entry,
    /// Checks parameters against a membership.
    pub validate: fn(&Params, &Peers) -> Result<(), ParamError>,
    /// A fresh instance.
    pub new: fn(NodeId, &Peers, &Params) -> Box<dyn MutexMachine>,
    /// Who competes for the lock (all but the central coordinator).
    pub competitors: fn(&Peers, &Params) -> Vec<NodeId>,
}

/// How to build and check instances of one election algorithm, wrapped in the heartbeat
/// [`Detector`] that watches the leader.
#[derive(Clone, Copy)]
pub struct ElectionKind {
    /// Its registry entry.
    pub entry: &'static Entry,
    /// Checks parameters against a membership.
    pub validate: fn(&Params, &Peers) -> Result<(), ParamError>,
    /// A fresh instance.
    pub new: fn(NodeId, &Peers, &Params) -> Box<dyn ElectionMachine>,
}

fn new_mutex<A: MutualExclusion + Send + 'static>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn MutexMachine>
where
    A::Msg: Validate,
{
    Box::new(Erased::new(A::new(id, peers, params)))
}

fn new_election<A: Election + Send + 'static>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn ElectionMachine>
where
    A::Msg: Validate,
{
    Box::new(Erased::new(<Detector<A> as distsync_core::Algorithm>::new(
        id, peers, params,
    )))
}

fn new_multicast<A: Multicast + Explorable>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn MulticastMachine>
where
    A::Msg: Validate,
{
    Box::new(Erased::new(A::new(id, peers, params)))
}

fn new_snapshot<A: GlobalSnapshot + Explorable>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn SnapshotMachine>
where
    A::Msg: Validate,
{
    Box::new(Erased::new(A::new(id, peers, params)))
}

struct MulticastKindOf;
impl MulticastVisitor for MulticastKindOf {
    type Output = MulticastKind;
    fn visit<A: Multicast + serde::Serialize + Explorable>(
        self,
        entry: &'static Entry,
    ) -> MulticastKind
    where
        A::Msg: Validate,
    {
        MulticastKind {
            entry,
            new: new_multicast::<A>,
        }
    }
}

struct SnapshotKindOf;
impl SnapshotVisitor for SnapshotKindOf {
    type Output = SnapshotKind;
    fn visit<A: GlobalSnapshot + serde::Serialize + Explorable>(
        self,
        entry: &'static Entry,
    ) -> SnapshotKind
    where
        A::Msg: Validate,
    {
        SnapshotKind {
            entry,
            validate: A::validate,
            new: new_snapshot::<A>,
        }
    }
}

/// The multicast algorithm called `name`.
pub fn multicast_kind(name: &str) -> Option<MulticastKind> {
    registry::visit_multicast(name, MulticastKindOf)
}

/// The snapshot algorithm called `name`.
pub fn snapshot_kind(name: &str) -> Option<SnapshotKind> {
    registry::visit_snapshot(name, SnapshotKindOf)
}

struct MutexKindOf;
impl MutexVisitor for MutexKindOf {
    type Output = MutexKind;
    fn visit<A: MutualExclusion + Send + 'static>(self, entry: &'static Entry) -> MutexKind
    where
        A::Msg: Validate,
    {
        MutexKind {
            entry,
            validate: A::validate,
            new: new_mutex::<A>,
            competitors: A::competitors,
        }
    }
}

struct ElectionKindOf;
impl ElectionVisitor for ElectionKindOf {
    type Output = ElectionKind;
    fn visit<A: Election + Send + 'static>(self, entry: &'static Entry) -> ElectionKind
    where
        A::Msg: Validate,
    {
        ElectionKind {
            entry,
            validate: <Detector<A> as distsync_core::Algorithm>::validate,
            new: new_election::<A>,
        }
    }
}

/// The mutual-exclusion algorithm called `name`.
pub fn mutex_kind(name: &str) -> Option<MutexKind> {
    registry::visit_mutex(name, MutexKindOf)
}

/// The election algorithm called `name`.
pub fn election_kind(name: &str) -> Option<ElectionKind> {
    registry::visit_election(name, ElectionKindOf)
}

/// Checks that both algorithms exist and accept the parameters for the full membership.
pub fn validate(
    mutex: &str,
    election: &str,
    params: &Params,
    peers: &Peers,
) -> Result<(), ParamError> {
    let m = mutex_kind(mutex).ok_or_else(|| ParamError::new("mutex", "unknown algorithm"))?;
    let e =
        election_kind(election).ok_or_else(|| ParamError::new("election", "unknown algorithm"))?;
    (m.validate)(params, peers)?;
    (e.validate)(params, peers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn central_runs_behind_the_erased_interface() {
        let kind = mutex_kind("central").unwrap();
        let peers = Peers::range(3);
        let params = Params::default();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut client = (kind.new)(NodeId(0), &peers, &params);
        let mut coord = (kind.new)(NodeId(2), &peers, &params);
        let mut out = Vec::new();
        let e = Env {
            id: NodeId(0),
            peers: &peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut rng,
        };
        client
            .handle(e, Event::Input(mx::Input::Request), &mut out)
            .unwrap();
        let [Out::Send(to, bytes)] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!(*to, NodeId(2));
        let bytes = bytes.clone();
        out.clear();
        let e = Env {
            id: NodeId(2),
            peers: &peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut rng,
        };
        coord
            .handle(e, Event::Message(NodeId(0), &bytes), &mut out)
            .unwrap();
        let [Out::Send(NodeId(0), grant)] = &out[..] else {
            panic!("{out:?}")
        };
        let grant = grant.clone();
        out.clear();
        let e = Env {
            id: NodeId(0),
            peers: &peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut rng,
        };
        client
            .handle(e, Event::Message(NodeId(2), &grant), &mut out)
            .unwrap();
        assert_eq!(out, vec![Out::Output(mx::Output::Enter)]);
        assert!(client.in_critical_section());
        // Garbage is a decode error, not a panic.
        let e = Env {
            id: NodeId(2),
            peers: &peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut rng,
        };
        assert!(coord
            .handle(e, Event::Message(NodeId(0), &[99, 1]), &mut out)
            .is_err());
    }

    #[test]
    fn every_registered_algorithm_has_a_kind() {
        use registry::Family;
        /// Whether the node runtime has a kind for the algorithm called so.
        type HasKind = fn(&str) -> bool;
        // The kind of each family the node runtime runs, one line each; clock synchronization
        // runs in crates/time.
        let kinds: [(Family, HasKind); 4] = [
            (Family::Mutex, |name| mutex_kind(name).is_some()),
            (Family::Election, |name| election_kind(name).is_some()),
            (Family::Multicast, |name| multicast_kind(name).is_some()),
            (Family::Snapshot, |name| snapshot_kind(name).is_some()),
        ];
        for e in registry::entries() {
            let runs = kinds
                .iter()
                .find(|(f, _)| *f == e.family)
                .map(|(_, has)| has);
            assert_eq!(
                runs.is_some(),
                e.family != Family::ClockSync,
                "{}: the node runtime runs every family but clock synchronization (crates/time)",
                e.family.name()
            );
            if let Some(has) = runs {
                assert!(has(e.name), "{}", e.name);
            }
        }
    }

    #[test]
    fn election_timers_round_trip_through_their_encoding() {
        let kind = election_kind("bully").unwrap();
        let peers = Peers::range(3);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut m = (kind.new)(NodeId(0), &peers, &Params::default());
        let mut out = Vec::new();
        let env = Env {
            id: NodeId(0),
            peers: &peers,
            now: Time::ZERO,
            recovered: true,
            rng: &mut rng,
        };
        m.handle(env, Event::Start, &mut out).unwrap();
        // A recovered bully process holds an election: ELECTION to 1 and 2, and a timer T.
        let sends = out.iter().filter(|o| matches!(o, Out::Send(..))).count();
        assert_eq!(sends, 2, "{out:?}");
        let key = out
            .iter()
            .find_map(|o| match o {
                Out::SetTimer(k, _) => Some(k.clone()),
                _ => None,
            })
            .expect("a timer");
        out.clear();
        let env = Env {
            id: NodeId(0),
            peers: &peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut rng,
        };
        m.handle(env, Event::Timer(&key), &mut out).unwrap();
        // Nobody answered within T: node 0 is the coordinator.
        assert_eq!(m.leader(), Some(NodeId(0)));
    }
}
