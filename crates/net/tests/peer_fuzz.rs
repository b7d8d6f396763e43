//! Peer input is hostile input: every algorithm of the registry, behind the node's machine layer
//! (decoding and field validation, then the handler), gets arbitrary authenticated messages mixed
//! with its own traffic, and must never panic. A message the validation refuses is dropped (an
//! error from `handle`), as the node drops it.
//!
//! The forged messages are built from a stream of integers (small ones, the membership's size
//! around it, and the extremes), read as the algorithm's own message type: every field of every
//! message is an integer, a length or a variant tag underneath, so nearly every stream is some
//! message, and the interesting values (a vector one short, an id one past the last, a counter
//! at its maximum) come up in a few hundred cases. The case count is fixed, so this runs in
//! bounded time in CI (`cargo test -p distsync-net --test peer_fuzz`).

use distsync_algorithms::election::Detector;
use distsync_algorithms::registry::{self, ElectionVisitor, Entry, Family, MutexVisitor};
use distsync_core::election::Election;
use distsync_core::mutex::{self as mx, MutualExclusion};
use distsync_core::{NodeId, Params, Peers, Process, Time};
use distsync_net::machine::{self, Env, Event, Machine, Out};
use distsync_net::wire;
use proptest::prelude::*;
use rand_core::SeedableRng;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Reads the longest message of type `M` at the start of `bytes` and encodes it as the wire
/// does, so that the machine decodes exactly it.
fn canonical<M: Serialize + DeserializeOwned>(bytes: &[u8]) -> Option<Vec<u8>> {
    let (m, _rest): (M, _) = postcard::take_from_bytes(bytes).ok()?;
    Some(wire::encode(&m))
}

type Canon = fn(&[u8]) -> Option<Vec<u8>>;

struct MutexCanon;
impl MutexVisitor for MutexCanon {
    type Output = Canon;
    fn visit<A: MutualExclusion + Serialize + registry::Explorable>(
        self,
        _: &'static Entry,
    ) -> Canon {
        canonical::<<A as Process>::Msg>
    }
}

struct ElectionCanon;
impl ElectionVisitor for ElectionCanon {
    type Output = Canon;
    fn visit<A: Election + Serialize + registry::Explorable>(self, _: &'static Entry) -> Canon {
        canonical::<<Detector<A> as Process>::Msg>
    }
}

/// Postcard's variable-length integer encoding (the wire's): seven bits a byte, low first, the
/// high bit set on every byte but the last.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One integer of a forged message: small ones most often (tags, lengths, ids), then the
/// membership's size and its neighbours, then the extremes.
fn atom(n: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..6,
        3 => Just(n.saturating_sub(1)),
        3 => Just(n),
        3 => Just(n + 1),
        1 => Just(127u64),
        1 => Just(128u64),
        1 => Just(1023u64),
        1 => Just(u32::MAX as u64),
        1 => Just(u32::MAX as u64 - 1),
        1 => Just(1u64 << 62),
        1 => Just(u64::MAX - 1),
        1 => Just(u64::MAX),
    ]
}

#[derive(Clone, Debug)]
enum Step {
    /// The application at a node asks (Request) or leaves (Release); elections ignore it.
    Input(usize, bool),
    /// Deliver the in-flight message at this index (modulo the count).
    Deliver(usize),
    /// A forged message from one member to another.
    Forge(usize, usize, Vec<u64>),
    /// Fire a pending timer of a node (modulo the count).
    Timer(usize, usize),
}

fn step(n: u64) -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0usize..8, any::<bool>()).prop_map(|(k, r)| Step::Input(k, r)),
        4 => (0usize..64).prop_map(Step::Deliver),
        4 => (0usize..8, 0usize..8, proptest::collection::vec(atom(n), 1..12))
            .prop_map(|(a, b, xs)| Step::Forge(a, b, xs)),
        1 => (0usize..8, 0usize..8).prop_map(|(k, t)| Step::Timer(k, t)),
    ]
}

/// The memberships tried: 1 to 5 nodes, from 0 up or scattered (ids need not be contiguous).
fn membership() -> impl Strategy<Value = Peers> {
    (1usize..=5, any::<bool>()).prop_map(|(n, scattered)| {
        let ids: Vec<NodeId> = if scattered {
            [7, 2, 11, 0, 5][..n].iter().map(|&i| NodeId(i)).collect()
        } else {
            (0..n as u32).map(NodeId).collect()
        };
        Peers::new(ids).unwrap()
    })
}

/// Runs a script against one instance per member; any panic fails the case.
fn run<I: Clone, O>(
    peers: &Peers,
    mut nodes: Vec<Box<dyn Machine<I, O>>>,
    canon: Canon,
    input: impl Fn(bool) -> Option<I>,
    script: &[Step],
) {
    let ids = peers.ids().to_vec();
    let n = ids.len();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut timers: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
    let mut flight: Vec<(usize, NodeId, Vec<u8>)> = Vec::new();
    let mut now = 0u64;
    let mut call = |k: usize,
                    ev: Event<'_, I>,
                    nodes: &mut Vec<Box<dyn Machine<I, O>>>,
                    timers: &mut Vec<Vec<Vec<u8>>>,
                    flight: &mut Vec<(usize, NodeId, Vec<u8>)>,
                    now: u64| {
        let mut out = Vec::new();
        let env = Env {
            id: ids[k],
            peers,
            now: Time(now),
            recovered: false,
            rng: &mut rng,
        };
        // A refused message is dropped, as the node drops it.
        let _ = nodes[k].handle(env, ev, &mut out);
        for o in out {
            match o {
                Out::Send(to, bytes) => {
                    if let Some(j) = peers.position(to) {
                        flight.push((j, ids[k], bytes));
                    }
                }
                Out::SetTimer(key, _) => {
                    if !timers[k].contains(&key) {
                        timers[k].push(key);
                    }
                }
                Out::CancelTimer(key) => timers[k].retain(|t| *t != key),
                Out::Output(_) => {}
            }
        }
    };
    for k in 0..n {
        call(k, Event::Start, &mut nodes, &mut timers, &mut flight, now);
    }
    for s in script {
        now += 1_000_000;
        match s {
            Step::Input(k, request) => {
                if let Some(i) = input(*request) {
                    call(
                        k % n,
                        Event::Input(i),
                        &mut nodes,
                        &mut timers,
                        &mut flight,
                        now,
                    );
                }
            }
            Step::Deliver(x) if !flight.is_empty() => {
                let (to, from, bytes) = flight.remove(x % flight.len());
                let ev = Event::Message(from, &bytes);
                call(to, ev, &mut nodes, &mut timers, &mut flight, now);
            }
            Step::Deliver(_) => {}
            Step::Forge(a, b, atoms) => {
                let mut raw = Vec::new();
                for &x in atoms {
                    varint(x, &mut raw);
                }
                // The node takes a message only from another member: the handshake refuses a
                // peer claiming the node's own id or one outside the cluster, and the node drops
                // a mutex message from outside its view.
                let (a, b) = (a % n, b % n);
                if a == b {
                    continue;
                }
                if let Some(bytes) = canon(&raw) {
                    let ev = Event::Message(ids[a], &bytes);
                    call(b, ev, &mut nodes, &mut timers, &mut flight, now);
                }
            }
            Step::Timer(k, t) => {
                let k = k % n;
                if !timers[k].is_empty() {
                    let at = t % timers[k].len();
                    let key = timers[k].remove(at);
                    call(
                        k,
                        Event::Timer(&key),
                        &mut nodes,
                        &mut timers,
                        &mut flight,
                        now,
                    );
                }
            }
        }
    }
}

fn names(family: Family) -> Vec<&'static str> {
    registry::entries()
        .iter()
        .filter(|e| e.family == family)
        .map(|e| e.name)
        .collect()
}

fn mutex_input(request: bool) -> Option<mx::Input> {
    Some(if request {
        mx::Input::Request
    } else {
        mx::Input::Release
    })
}

fn fuzz_mutex(name: &str, peers: &Peers, script: &[Step]) {
    let kind = machine::mutex_kind(name).unwrap();
    let canon = registry::visit_mutex(name, MutexCanon).unwrap();
    let params = Params::default();
    let nodes = peers
        .ids()
        .iter()
        .map(|&id| {
            let m: Box<dyn Machine<mx::Input, mx::Output>> = Box::new(Boxed(
                distsync_net::colocated::instance(&kind, id, peers, &params),
            ));
            m
        })
        .collect();
    run(peers, nodes, canon, mutex_input, script);
}

fn fuzz_election(name: &str, peers: &Peers, script: &[Step]) {
    let kind = machine::election_kind(name).unwrap();
    let canon = registry::visit_election(name, ElectionCanon).unwrap();
    let params = Params::default();
    let nodes = peers
        .ids()
        .iter()
        .map(|&id| {
            let m: Box<dyn Machine<_, _>> = Box::new(BoxedE((kind.new)(id, peers, &params)));
            m
        })
        .collect();
    run(peers, nodes, canon, |_| None, script);
}

/// The node's mutex instances (`MutexMachine`) as plain machines.
struct Boxed(Box<dyn machine::MutexMachine>);
impl Machine<mx::Input, mx::Output> for Boxed {
    fn handle(
        &mut self,
        env: Env<'_>,
        event: Event<'_, mx::Input>,
        out: &mut Vec<Out<mx::Output>>,
    ) -> Result<(), wire::DecodeError> {
        self.0.handle(env, event, out)
    }
}

/// The node's election instances (`ElectionMachine`) as plain machines.
struct BoxedE(Box<dyn machine::ElectionMachine>);
impl Machine<distsync_core::election::Input, distsync_core::election::Output> for BoxedE {
    fn handle(
        &mut self,
        env: Env<'_>,
        event: Event<'_, distsync_core::election::Input>,
        out: &mut Vec<Out<distsync_core::election::Output>>,
    ) -> Result<(), wire::DecodeError> {
        self.0.handle(env, event, out)
    }
}

fn script() -> impl Strategy<Value = (Peers, Vec<Step>)> {
    membership().prop_flat_map(|peers| {
        let n = peers.len() as u64;
        (Just(peers), proptest::collection::vec(step(n), 0..80))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn no_mutex_algorithm_panics_on_forged_messages((peers, script) in script()) {
        for name in names(Family::Mutex) {
            fuzz_mutex(name, &peers, &script);
        }
    }

    #[test]
    fn no_election_algorithm_panics_on_forged_messages((peers, script) in script()) {
        for name in names(Family::Election) {
            fuzz_election(name, &peers, &script);
        }
    }
}

/// One mutex instance of a node, driven by hand.
struct Site {
    id: NodeId,
    peers: Peers,
    m: Box<dyn machine::MutexMachine>,
    rng: rand_xoshiro::Xoshiro256PlusPlus,
}

impl Site {
    fn new(algorithm: &str, id: u32, n: u32) -> Site {
        let peers = Peers::range(n);
        let kind = machine::mutex_kind(algorithm).unwrap();
        let m = (kind.new)(NodeId(id), &peers, &Params::default());
        let mut s = Site {
            id: NodeId(id),
            peers,
            m,
            rng: rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1),
        };
        s.call(Event::Start).unwrap();
        s
    }

    fn call(
        &mut self,
        ev: Event<'_, mx::Input>,
    ) -> Result<Vec<Out<mx::Output>>, wire::DecodeError> {
        let mut out = Vec::new();
        let env = Env {
            id: self.id,
            peers: &self.peers,
            now: Time::ZERO,
            recovered: false,
            rng: &mut self.rng,
        };
        self.m.handle(env, ev, &mut out).map(|()| out)
    }
}

/// Reported: a token whose LN is shorter than the membership, from an authenticated peer, made
/// suzuki-kasami index out of bounds (`suzuki_kasami.rs`, rule 5) when the site left the
/// critical section. The token is refused, so the site never enters on it.
#[test]
fn suzuki_kasami_refuses_a_short_token() {
    use distsync_algorithms::mutex::suzuki_kasami::{Msg, Token};
    let mut s1 = Site::new("suzuki-kasami", 1, 3);
    s1.call(Event::Input(mx::Input::Request)).unwrap();
    let forged = wire::encode(&Msg::Token(Token {
        ln: vec![],
        q: Default::default(),
    }));
    let r = s1.call(Event::Message(NodeId(0), &forged));
    assert!(
        r.is_err(),
        "a token of 0 entries for 3 sites is refused: {r:?}"
    );
    assert!(!s1.m.in_critical_section());
    s1.call(Event::Input(mx::Input::Release)).unwrap();
}

/// Reported: the same with ricart-agrawala-token's token array (rule RR2 indexed past it).
#[test]
fn ricart_agrawala_token_refuses_a_short_token() {
    use distsync_algorithms::mutex::ricart_agrawala_token::Msg;
    let mut s1 = Site::new("ricart-agrawala-token", 1, 3);
    s1.call(Event::Input(mx::Input::Request)).unwrap();
    let forged = wire::encode(&Msg::Token { token: vec![0] });
    let r = s1.call(Event::Message(NodeId(0), &forged));
    assert!(
        r.is_err(),
        "a token array of 1 entry for 3 processes is refused: {r:?}"
    );
    assert!(!s1.m.in_critical_section());
    // A request from another process, then leaving: RR2 looks at every entry.
    let req = wire::encode(&Msg::Request { ts: 5 });
    s1.call(Event::Message(NodeId(2), &req)).unwrap();
    s1.call(Event::Input(mx::Input::Release)).unwrap();
}

/// A suzuki-kasami token whose queue names a node outside the membership, or one whose LN
/// entry is at the counter's maximum (LN[j] + 1 overflows), is refused too.
#[test]
fn suzuki_kasami_refuses_strangers_and_overflowing_counters() {
    use distsync_algorithms::mutex::suzuki_kasami::{Msg, Token};
    let mut s1 = Site::new("suzuki-kasami", 1, 3);
    s1.call(Event::Input(mx::Input::Request)).unwrap();
    let stranger = wire::encode(&Msg::Token(Token {
        ln: vec![0; 3],
        q: [NodeId(9)].into_iter().collect(),
    }));
    assert!(s1.call(Event::Message(NodeId(0), &stranger)).is_err());
    let huge = wire::encode(&Msg::Token(Token {
        ln: vec![0, 0, u64::MAX],
        q: Default::default(),
    }));
    assert!(s1.call(Event::Message(NodeId(0), &huge)).is_err());
    let fine = wire::encode(&Msg::Token(Token {
        ln: vec![0; 3],
        q: Default::default(),
    }));
    let out = s1.call(Event::Message(NodeId(0), &fine)).unwrap();
    assert_eq!(out, vec![Out::Output(mx::Output::Enter)]);
}

/// Found by the forged-message property above: a token whose queue names the site it is sent
/// to made that site send the token to itself at its release (the core's "a process must not
/// send to itself" panic). Such a token is refused; the site keeps waiting for a real one.
#[test]
fn suzuki_kasami_refuses_a_token_that_queues_its_receiver() {
    use distsync_algorithms::mutex::suzuki_kasami::{Msg, Token};
    let mut s1 = Site::new("suzuki-kasami", 1, 3);
    s1.call(Event::Input(mx::Input::Request)).unwrap();
    let queues_receiver = wire::encode(&Msg::Token(Token {
        ln: vec![0; 3],
        q: [NodeId(2), NodeId(1)].into_iter().collect(),
    }));
    let r = s1.call(Event::Message(NodeId(0), &queues_receiver));
    let e = r.expect_err("a token queueing its receiver is refused");
    assert!(
        e.to_string()
            .contains("token queue names node 1, the site it is sent to"),
        "{e}"
    );
    assert!(!s1.m.in_critical_section());
    s1.call(Event::Input(mx::Input::Release)).unwrap();
}
