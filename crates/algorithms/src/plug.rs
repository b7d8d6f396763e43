//! Mutual-exclusion algorithms plugged into the registry at run time, from any crate.
//!
//! The registry's tables are compiled into this crate, and every runtime reaches an algorithm's
//! type through a visitor the tables instantiate. A type defined elsewhere (in a test, or in an
//! experiment outside the workspace) cannot join those tables; it joins through one of the
//! [`SLOTS`] slots here instead: [`registry::plug_mutex`](crate::registry::plug_mutex) stores
//! its functions in a free slot, and the registry's visitor hands out [`Plugged<K>`] for the
//! slot `K`, a type of this crate that every runtime is already compiled for. `Plugged<K>`
//! forwards each call to the plugged type through a trait object; messages and timers travel
//! as boxed values of the plugged type ([`Value<K>`]), so the simulator, the checker, the
//! page and the node runtime run the plugged algorithm with its own states, messages and
//! timers, as they run a built-in one.
//!
//! What the box costs: one allocation per message and timer, and one virtual call per
//! handler. On the wire a message is the JSON of the plugged type's message, so its
//! `Serialize` and `Deserialize` must round-trip through JSON; in traces and on the page it is
//! that JSON too. A built-in algorithm is one line of the registry's table and pays none of
//! this.

use crate::validate::{Invalid, Validate};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, ParamError, Params, Peers, Process, Time,
};
use rand_core::RngCore;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::{Any, TypeId};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

/// How many mutual-exclusion algorithms can be plugged in at run time. Each slot is one more
/// type every runtime is compiled for.
pub const SLOTS: usize = 2;

/// A plugged message or timer: a boxed value of the plugged algorithm's own type.
trait DynValue: Any + fmt::Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn DynValue>;
    fn eq_dyn(&self, other: &dyn DynValue) -> bool;
    fn hash_dyn(&self, state: &mut dyn Hasher);
    fn json(&self) -> serde_json::Value;
    fn kind(&self) -> &'static str;
    fn check(&self, peers: &Peers) -> Result<(), Invalid>;
    fn as_any(&self) -> &dyn Any;
}

/// A message of the plugged algorithm.
#[derive(Clone)]
struct MsgBox<M>(M);

/// A timer of the plugged algorithm.
#[derive(Clone)]
struct TimerBox<T>(T);

impl<M> fmt::Debug for MsgBox<M>
where
    M: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: fmt::Debug> fmt::Debug for TimerBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

fn json_of<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_else(|e| serde_json::Value::String(e.to_string()))
}

impl<M> DynValue for MsgBox<M>
where
    M: Message + Validate + Sync + 'static,
{
    fn clone_box(&self) -> Box<dyn DynValue> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn DynValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| o.0 == self.0)
    }
    fn hash_dyn(&self, mut state: &mut dyn Hasher) {
        self.0.hash(&mut state)
    }
    fn json(&self) -> serde_json::Value {
        json_of(&self.0)
    }
    fn kind(&self) -> &'static str {
        self.0.kind()
    }
    fn check(&self, peers: &Peers) -> Result<(), Invalid> {
        self.0.validate(peers)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<T> DynValue for TimerBox<T>
where
    T: Clone + fmt::Debug + Eq + Hash + Serialize + Send + Sync + 'static,
{
    fn clone_box(&self) -> Box<dyn DynValue> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn DynValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| o.0 == self.0)
    }
    fn hash_dyn(&self, mut state: &mut dyn Hasher) {
        self.0.hash(&mut state)
    }
    fn json(&self) -> serde_json::Value {
        json_of(&self.0)
    }
    fn kind(&self) -> &'static str {
        "timer"
    }
    fn check(&self, _: &Peers) -> Result<(), Invalid> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A message or a timer of the algorithm plugged into slot `K`.
pub struct Value<const K: usize>(Box<dyn DynValue>);

impl<const K: usize> Value<K> {
    fn new(value: impl DynValue) -> Self {
        Value(Box::new(value))
    }

    /// The plugged type's value; the slot holds one type, so the downcast cannot fail.
    fn get<T: 'static>(&self) -> &T {
        self.0
            .as_any()
            .downcast_ref::<T>()
            .expect("a slot's values are all of the type plugged into it")
    }
}

impl<const K: usize> Clone for Value<K> {
    fn clone(&self) -> Self {
        Value(self.0.clone_box())
    }
}

impl<const K: usize> fmt::Debug for Value<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<const K: usize> PartialEq for Value<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(&*other.0)
    }
}

impl<const K: usize> Eq for Value<K> {}

impl<const K: usize> Hash for Value<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash_dyn(state)
    }
}

impl<const K: usize> Serialize for Value<K> {
    /// The plugged value's JSON: as a JSON value in a readable format (traces, the page), as
    /// its text in a binary one (the wire), which the reader decodes with the plugged type.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let json = self.0.json();
        if serializer.is_human_readable() {
            json.serialize(serializer)
        } else {
            serializer.serialize_str(&json.to_string())
        }
    }
}

impl<'de, const K: usize> Deserialize<'de> for Value<K> {
    /// A message of the plugged type, from what [`Serialize`] wrote; an error if the slot is
    /// empty or the text is not one of its messages.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = if deserializer.is_human_readable() {
            serde_json::Value::deserialize(deserializer)?
        } else {
            let text = String::deserialize(deserializer)?;
            serde_json::from_str(&text).map_err(D::Error::custom)?
        };
        let slot = slot::<K>().ok_or_else(|| D::Error::custom("no algorithm is plugged here"))?;
        (slot.decode)(json).map(Value).map_err(D::Error::custom)
    }
}

impl<const K: usize> Message for Value<K> {
    fn kind(&self) -> &'static str {
        self.0.kind()
    }
}

impl<const K: usize> Validate for Value<K> {
    fn validate(&self, peers: &Peers) -> Result<(), Invalid> {
        self.0.check(peers)
    }
}

/// What a handler of the plugged process is called with.
enum Event<'a, const K: usize> {
    Start,
    Input(Input),
    Message(NodeId, &'a Value<K>),
    Timer(&'a Value<K>),
}

/// What the plugged process needs of the runtime's context to make its own.
struct Env<'a> {
    id: NodeId,
    position: Option<usize>,
    peers: &'a Peers,
    now: Time,
    recovered: bool,
    rng: &'a mut dyn RngCore,
}

/// A process of the plugged algorithm, behind the trait object.
trait DynMutex<const K: usize>: fmt::Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn DynMutex<K>>;
    fn hash_dyn(&self, state: &mut dyn Hasher);
    fn json(&self) -> serde_json::Value;
    fn in_critical_section(&self) -> bool;
    fn handle(&mut self, event: Event<'_, K>, env: Env<'_>) -> Vec<EffectOf<Plugged<K>>>;
}

/// A process of the plugged type `A`.
#[derive(Clone, Debug)]
struct Wrapped<A>(A);

impl<A, const K: usize> DynMutex<K> for Wrapped<A>
where
    A: MutualExclusion + Serialize + Clone + fmt::Debug + Hash + Send + Sync + 'static,
    A::Msg: Validate + Sync + 'static,
    A::Timer: Sync + 'static,
{
    fn clone_box(&self) -> Box<dyn DynMutex<K>> {
        Box::new(self.clone())
    }
    fn hash_dyn(&self, mut state: &mut dyn Hasher) {
        self.0.hash(&mut state)
    }
    fn json(&self) -> serde_json::Value {
        json_of(&self.0)
    }
    fn in_critical_section(&self) -> bool {
        self.0.in_critical_section()
    }
    fn handle(&mut self, event: Event<'_, K>, env: Env<'_>) -> Vec<EffectOf<Plugged<K>>> {
        let mut effects: Vec<EffectOf<A>> = Vec::new();
        let mut ctx = Ctx::new(
            env.id,
            env.peers,
            env.now,
            env.recovered,
            env.rng,
            &mut effects,
        );
        if let Some(p) = env.position {
            ctx = ctx.at_position(p);
        }
        match event {
            Event::Start => self.0.on_start(&mut ctx),
            Event::Input(input) => self.0.on_input(input, &mut ctx),
            Event::Message(from, msg) => {
                let msg = msg.get::<MsgBox<A::Msg>>().0.clone();
                self.0.on_message(from, msg, &mut ctx)
            }
            Event::Timer(timer) => {
                let timer = timer.get::<TimerBox<A::Timer>>().0.clone();
                self.0.on_timer(timer, &mut ctx)
            }
        }
        effects
            .into_iter()
            .map(|e| match e {
                Effect::Send { to, msg } => Effect::Send {
                    to,
                    msg: Value::new(MsgBox(msg)),
                },
                Effect::SetTimer { timer, after } => Effect::SetTimer {
                    timer: Value::new(TimerBox(timer)),
                    after,
                },
                Effect::CancelTimer { timer } => Effect::CancelTimer {
                    timer: Value::new(TimerBox(timer)),
                },
                Effect::Output(o) => Effect::Output(o),
            })
            .collect()
    }
}

/// The functions of the type plugged into a slot.
struct Slot {
    ty: TypeId,
    name: &'static str,
    validate: fn(&Params, &Peers) -> Result<(), ParamError>,
    new: fn(NodeId, &Peers, &Params) -> Box<dyn Any + Send + Sync>,
    competitors: fn(&Peers, &Params) -> Vec<NodeId>,
    decode: fn(serde_json::Value) -> Result<Box<dyn DynValue>, String>,
}

static MUTEX_SLOTS: [OnceLock<Slot>; SLOTS] = [const { OnceLock::new() }; SLOTS];

fn slot<const K: usize>() -> Option<&'static Slot> {
    MUTEX_SLOTS.get(K).and_then(OnceLock::get)
}

/// The slot's functions, for a `Plugged<K>` that exists only once its slot is filled.
fn filled<const K: usize>() -> &'static Slot {
    slot::<K>().expect("the registry hands out Plugged<K> only for a filled slot")
}

fn new_wrapped<A, const K: usize>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn DynMutex<K>>
where
    A: MutualExclusion + Serialize + Clone + fmt::Debug + Hash + Send + Sync + 'static,
    A::Msg: Validate + Sync + 'static,
    A::Timer: Sync + 'static,
{
    Box::new(Wrapped(A::new(id, peers, params)))
}

fn new_any<A, const K: usize>(
    id: NodeId,
    peers: &Peers,
    params: &Params,
) -> Box<dyn Any + Send + Sync>
where
    A: MutualExclusion + Serialize + Clone + fmt::Debug + Hash + Send + Sync + 'static,
    A::Msg: Validate + Sync + 'static,
    A::Timer: Sync + 'static,
{
    Box::new(new_wrapped::<A, K>(id, peers, params))
}

fn decode<M>(json: serde_json::Value) -> Result<Box<dyn DynValue>, String>
where
    M: Message + Validate + Sync + 'static,
{
    let msg: M = serde_json::from_value(json).map_err(|e| e.to_string())?;
    Ok(Box::new(MsgBox(msg)))
}

/// Fills a free slot with `A` under `name`, or finds the slot `A` already fills under that
/// name (so that several tests of one binary may plug the same type). `Err` with the reason
/// if every slot is taken, or if `name` is plugged with another type.
pub(crate) fn plug_mutex<A>(name: &'static str) -> Result<usize, String>
where
    A: MutualExclusion + Serialize + Clone + fmt::Debug + Hash + Send + Sync + 'static,
    A::Msg: Validate + Sync + 'static,
    A::Timer: Sync + 'static,
{
    fn make<A, const K: usize>(name: &'static str) -> Slot
    where
        A: MutualExclusion + Serialize + Clone + fmt::Debug + Hash + Send + Sync + 'static,
        A::Msg: Validate + Sync + 'static,
        A::Timer: Sync + 'static,
    {
        Slot {
            ty: TypeId::of::<A>(),
            name,
            validate: A::validate,
            new: new_any::<A, K>,
            competitors: A::competitors,
            decode: decode::<A::Msg>,
        }
    }
    let makers: [fn(&'static str) -> Slot; SLOTS] = [make::<A, 0>, make::<A, 1>];
    for (k, cell) in MUTEX_SLOTS.iter().enumerate() {
        let mut filled_now = false;
        let slot = cell.get_or_init(|| {
            filled_now = true;
            makers[k](name)
        });
        if filled_now {
            return Ok(k);
        }
        if slot.name == name {
            return if slot.ty == TypeId::of::<A>() {
                Ok(k)
            } else {
                Err(format!("`{name}` is already plugged in with another type"))
            };
        }
    }
    Err(format!(
        "every one of the {SLOTS} slots for mutual-exclusion algorithms plugged in at run time is taken"
    ))
}

/// A process of the mutual-exclusion algorithm plugged into slot `K`: what the registry's
/// visitor hands the runtimes for it.
pub struct Plugged<const K: usize>(Box<dyn DynMutex<K>>);

impl<const K: usize> Plugged<K> {
    fn call(&mut self, event: Event<'_, K>, ctx: &mut Ctx<'_, Self>) {
        let id = ctx.id();
        let position = ctx.position();
        let peers = ctx.peers();
        let now = ctx.now();
        let recovered = ctx.recovered();
        let env = Env {
            id,
            position,
            peers,
            now,
            recovered,
            rng: ctx.rng(),
        };
        for effect in self.0.handle(event, env) {
            match effect {
                Effect::Send { to, msg } => ctx.send(to, msg),
                Effect::SetTimer { timer, after } => ctx.set_timer(timer, after),
                Effect::CancelTimer { timer } => ctx.cancel_timer(timer),
                Effect::Output(o) => ctx.output(o),
            }
        }
    }
}

impl<const K: usize> Clone for Plugged<K> {
    fn clone(&self) -> Self {
        Plugged(self.0.clone_box())
    }
}

impl<const K: usize> fmt::Debug for Plugged<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<const K: usize> Hash for Plugged<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash_dyn(state)
    }
}

impl<const K: usize> Serialize for Plugged<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.json().serialize(serializer)
    }
}

impl<const K: usize> Process for Plugged<K> {
    type Msg = Value<K>;
    type Input = Input;
    type Output = Output;
    type Timer = Value<K>;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.call(Event::Start, ctx)
    }
    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        self.call(Event::Input(input), ctx)
    }
    fn on_message(&mut self, from: NodeId, msg: Value<K>, ctx: &mut Ctx<'_, Self>) {
        self.call(Event::Message(from, &msg), ctx)
    }
    fn on_timer(&mut self, timer: Value<K>, ctx: &mut Ctx<'_, Self>) {
        self.call(Event::Timer(&timer), ctx)
    }
}

impl<const K: usize> Algorithm for Plugged<K> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        (filled::<K>().validate)(params, peers)
    }
    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let any = (filled::<K>().new)(id, peers, params);
        let boxed = any
            .downcast::<Box<dyn DynMutex<K>>>()
            .expect("a slot makes processes for its own index");
        Plugged(*boxed)
    }
}

impl<const K: usize> MutualExclusion for Plugged<K> {
    fn in_critical_section(&self) -> bool {
        self.0.in_critical_section()
    }
    fn competitors(peers: &Peers, params: &Params) -> Vec<NodeId> {
        (filled::<K>().competitors)(peers, params)
    }
}
