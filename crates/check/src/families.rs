//! The application model and the properties of each family.

use crate::model::{Spec, Violation, World};
use crate::{CheckError, Config, Property};
use distsync_algorithms::election::{detector::HEARTBEAT, ring_link::ACK};
use distsync_core::election::{self as el, Election};
use distsync_core::multicast::{self as mc, Multicast, Order};
use distsync_core::mutex::{self as mx, MutualExclusion};
use distsync_core::snapshot::{self as sn, GlobalSnapshot};
use distsync_core::{NodeId, Peers};
use std::marker::PhantomData;

/// Message kinds that are not the algorithm's own (the election monitors ignore them).
pub(crate) const OVERHEAD_KINDS: [&str; 2] = [ACK, HEARTBEAT];

/// "0", "0 and 1", "0, 1 and 2".
pub(crate) fn list(ids: &[NodeId]) -> String {
    let names: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

// ---------------------------------------------------------------- mutual exclusion

/// The application's view of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Phase {
    /// Not asking; may request if it competes and has requests left.
    Idle,
    /// Asked, waits for Enter.
    Waiting,
    /// Entered; may release.
    InCs,
    /// Released, waits for Exit.
    Releasing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MutexApp {
    competes: bool,
    phase: Phase,
    /// Requests still to make.
    left: u32,
    /// Enter outputs seen.
    enters: u32,
    /// Exit outputs seen.
    exits: u32,
}

/// Each competitor requests the critical section `requests` times, one at a time, and
/// releases it after entering.
pub(crate) struct MutexSpec<A> {
    requests: u32,
    competitors: Vec<NodeId>,
    ids: Vec<NodeId>,
    _a: PhantomData<fn() -> A>,
}

impl<A: MutualExclusion> MutexSpec<A> {
    pub fn new(config: &Config, peers: &Peers) -> Result<Self, CheckError> {
        if config.requests == 0 {
            return Err(CheckError::new(
                "requests",
                "each competitor must request the critical section at least once",
            ));
        }
        Ok(MutexSpec {
            requests: config.requests,
            competitors: A::competitors(peers, &config.params),
            ids: peers.ids().to_vec(),
            _a: PhantomData,
        })
    }
}

impl<A: MutualExclusion> Spec<A> for MutexSpec<A> {
    // Requests, releases, Enter and Exit change only the position's own entry.
    const LOCAL_APP: bool = true;

    fn unreached(&self) -> &'static str {
        "some request is never granted"
    }

    type App = Vec<MutexApp>;

    fn init(&self, _w: &World<A>) -> Self::App {
        self.ids
            .iter()
            .map(|id| {
                let competes = self.competitors.contains(id);
                MutexApp {
                    competes,
                    phase: Phase::Idle,
                    left: if competes { self.requests } else { 0 },
                    enters: 0,
                    exits: 0,
                }
            })
            .collect()
    }

    fn inputs(&self, app: &Self::App, _w: &World<A>, pos: usize, out: &mut Vec<mx::Input>) {
        let a = &app[pos];
        match a.phase {
            Phase::Idle if a.competes && a.left > 0 => out.push(mx::Input::Request),
            Phase::InCs => out.push(mx::Input::Release),
            _ => {}
        }
    }

    fn take_input(&self, app: &mut Self::App, pos: usize, input: &mx::Input) {
        let a = &mut app[pos];
        match input {
            mx::Input::Request => {
                a.phase = Phase::Waiting;
                a.left -= 1;
            }
            mx::Input::Release => a.phase = Phase::Releasing,
        }
    }

    fn output(
        &self,
        app: &mut Self::App,
        _w: &World<A>,
        pos: usize,
        output: &mx::Output,
    ) -> Option<Violation> {
        let a = &mut app[pos];
        let expected = match output {
            mx::Output::Enter => Phase::Waiting,
            mx::Output::Exit => Phase::Releasing,
        };
        if a.phase != expected {
            return Some(Violation::new(
                Property::OutputContract,
                format!(
                    "node {} output {output:?} while its application was {:?}",
                    self.ids[pos], a.phase
                ),
            ));
        }
        match output {
            mx::Output::Enter => {
                a.phase = Phase::InCs;
                a.enters += 1;
            }
            mx::Output::Exit => {
                a.phase = Phase::Idle;
                a.exits += 1;
            }
        }
        None
    }

    fn crash(&self, app: &mut Self::App, _w: &World<A>, pos: usize) {
        // A crashed process's request is abandoned; after a recovery it does not compete.
        app[pos] = MutexApp {
            competes: false,
            phase: Phase::Idle,
            left: 0,
            enters: 0,
            exits: 0,
        };
    }

    fn check_state(&self, app: &Self::App, w: &World<A>) -> Option<Violation> {
        // The usual case, nothing broken, in one pass that looks each process up once; when
        // something is, the passes below name it.
        let (mut inside, mut entered, mut consistent) = (0, 0, true);
        for (p, a) in app.iter().enumerate() {
            let in_cs = w.proc(p).map(|q| q.in_critical_section());
            inside += usize::from(in_cs == Some(true));
            entered += usize::from(a.phase == Phase::InCs);
            consistent &= match (a.phase, in_cs) {
                (_, None) | (Phase::Releasing, _) => true,
                (Phase::InCs, Some(in_cs)) => in_cs,
                (Phase::Idle | Phase::Waiting, Some(in_cs)) => !in_cs,
            };
        }
        if inside < 2 && entered < 2 && consistent {
            return None;
        }
        // Counted first and listed only when broken: this runs for every new state, and one
        // process in the critical section, the usual case, would be a vector allocated and
        // freed each time.
        let inside =
            || (0..app.len()).filter(|&p| w.proc(p).is_some_and(|p| p.in_critical_section()));
        if inside().nth(1).is_some() {
            let inside: Vec<NodeId> = inside().map(|p| self.ids[p]).collect();
            return Some(Violation::new(
                Property::MutualExclusion,
                format!(
                    "nodes {} are in the critical section at once",
                    list(&inside)
                ),
            ));
        }
        let entered = || (0..app.len()).filter(|&p| app[p].phase == Phase::InCs);
        if entered().nth(1).is_some() {
            let entered: Vec<NodeId> = entered().map(|p| self.ids[p]).collect();
            return Some(Violation::new(
                Property::MutualExclusion,
                format!(
                    "nodes {} were told Enter and not yet released",
                    list(&entered)
                ),
            ));
        }
        for (p, a) in app.iter().enumerate() {
            let Some(proc) = w.proc(p) else { continue };
            let in_cs = proc.in_critical_section();
            let ok = match a.phase {
                Phase::InCs => in_cs,
                Phase::Releasing => true,
                Phase::Idle | Phase::Waiting => !in_cs,
            };
            if !ok {
                return Some(Violation::new(
                    Property::OutputContract,
                    format!(
                        "node {} says in_critical_section() = {in_cs} while its application is {:?}",
                        self.ids[p], a.phase
                    ),
                ));
            }
        }
        None
    }

    fn check_terminal(&self, app: &Self::App, w: &World<A>) -> Option<Violation> {
        let waiting: Vec<NodeId> = (0..app.len())
            .filter(|&p| w.alive(p) && matches!(app[p].phase, Phase::Waiting | Phase::Releasing))
            .map(|p| self.ids[p])
            .collect();
        if !waiting.is_empty() {
            return Some(Violation::new(
                Property::Deadlock,
                format!(
                    "nothing can happen (no message in flight, no timer, no input) while \
                     nodes {} wait for the critical section",
                    list(&waiting)
                ),
            ));
        }
        for (p, a) in app.iter().enumerate() {
            if !w.alive(p) || !a.competes {
                continue;
            }
            let asked = self.requests;
            if a.enters != asked || a.exits != asked || a.left != 0 {
                return Some(Violation::new(
                    Property::Completion,
                    format!(
                        "the run ended with node {} entered {} and left {} times of {asked} \
                         requested",
                        self.ids[p], a.enters, a.exits
                    ),
                ));
            }
        }
        None
    }

    fn goal(&self, app: &Self::App, w: &World<A>) -> bool {
        app.iter()
            .enumerate()
            .all(|(p, a)| !w.alive(p) || (a.left == 0 && a.phase == Phase::Idle))
    }

    fn waiting(&self, app: &Self::App, w: &World<A>, pos: usize) -> bool {
        w.alive(pos) && matches!(app[pos].phase, Phase::Waiting | Phase::Releasing)
    }

    fn rename_app(&self, app: &Self::App, perm: &[usize]) -> Option<Self::App> {
        let mut renamed = app.clone();
        for (p, a) in app.iter().enumerate() {
            renamed[perm[p]] = *a;
        }
        Some(renamed)
    }
}

// ---------------------------------------------------------------- leader election

/// The election application: who still gets a Start input, and the election being judged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ElectionApp {
    /// Positions that still get the Start input (bit per position).
    starts: u64,
    /// The leader the first `Leader` output of the current election named.
    announced: Option<NodeId>,
    /// A crash or recovery came while the election was unsettled: it is not judged.
    disturbed: bool,
    /// Some process output `Leader`.
    any_output: bool,
}

/// Elections start with a Start input at the configured processes (by default the lowest id),
/// all in one election; a perfect failure detector gives Start to a live process that names a
/// crashed leader (see [`ElectionSpec::suspects`]); a recovered process holds an election
/// itself (the algorithms' rule).
pub(crate) struct ElectionSpec<A> {
    starters: u64,
    untimed: bool,
    ids: Vec<NodeId>,
    elects_highest: bool,
    _a: PhantomData<fn() -> A>,
}

impl<A: Election> ElectionSpec<A> {
    pub fn new(config: &Config, peers: &Peers) -> Result<Self, CheckError> {
        let mut starters = 0u64;
        let elect = if config.elect.is_empty() {
            vec![peers.ids()[0]]
        } else {
            config.elect.clone()
        };
        for id in elect {
            let p = peers.position(id).ok_or_else(|| {
                CheckError::new("elect", format!("node {id} is not one of the ids 0..N-1"))
            })?;
            starters |= 1 << p;
        }
        Ok(ElectionSpec {
            starters,
            untimed: config.untimed,
            ids: peers.ids().to_vec(),
            elects_highest: A::elects_highest(),
            _a: PhantomData,
        })
    }

    /// The leader every live process (but `except`) names, if they all name the same one,
    /// none is electing or holding unacknowledged messages, and none of the algorithm's own
    /// messages is in flight.
    fn settled(w: &World<A>, except: Option<usize>) -> Option<NodeId> {
        if w.msgs()
            .any(|m| !OVERHEAD_KINDS.contains(&distsync_core::Message::kind(m)))
        {
            return None;
        }
        let mut agreed = None;
        for (pos, p) in w.procs().enumerate() {
            if Some(pos) == except {
                continue;
            }
            let Some(p) = p else { continue };
            if p.pending() || p.electing() {
                return None;
            }
            match (p.leader(), agreed) {
                (None, _) => return None,
                (Some(l), None) => agreed = Some(l),
                (Some(l), Some(a)) if l != a => return None,
                _ => {}
            }
        }
        agreed
    }

    fn trigger(app: &mut ElectionApp, w: &World<A>, except: Option<usize>) {
        if Self::settled(w, except).is_some() {
            app.announced = None;
            app.disturbed = false;
        } else {
            app.disturbed = true;
        }
    }

    /// The failure detector: a live process that is not electing and names a crashed leader
    /// (or none) suspects it and is given Start, once nothing is in flight (timed) or at any
    /// moment (untimed). It is perfect: it suspects only crashed processes, and eventually.
    fn suspects(&self, w: &World<A>, pos: usize) -> bool {
        let Some(p) = w.proc(pos) else { return false };
        if p.electing() || p.pending() || (!self.untimed && w.in_flight()) {
            return false;
        }
        match p.leader() {
            None => true,
            Some(l) => self
                .ids
                .iter()
                .position(|&i| i == l)
                .is_some_and(|q| !w.alive(q)),
        }
    }

    fn highest_live(&self, w: &World<A>) -> Option<NodeId> {
        (0..self.ids.len())
            .filter(|&p| w.alive(p))
            .map(|p| self.ids[p])
            .max()
    }
}

impl<A: Election> Spec<A> for ElectionSpec<A> {
    fn unreached(&self) -> &'static str {
        "the election never ends with every live process naming one live leader"
    }

    type App = ElectionApp;

    fn init(&self, _w: &World<A>) -> Self::App {
        ElectionApp {
            starts: self.starters,
            announced: None,
            disturbed: false,
            any_output: false,
        }
    }

    fn inputs(&self, app: &Self::App, w: &World<A>, pos: usize, out: &mut Vec<el::Input>) {
        if (app.starts >> pos) & 1 == 1 || self.suspects(w, pos) {
            out.push(el::Input::Start);
        }
    }

    fn take_input(&self, app: &mut Self::App, pos: usize, _input: &el::Input) {
        app.starts &= !(1 << pos);
    }

    fn output(
        &self,
        app: &mut Self::App,
        w: &World<A>,
        pos: usize,
        output: &el::Output,
    ) -> Option<Violation> {
        let el::Output::Leader(leader) = *output;
        let node = self.ids[pos];
        app.any_output = true;
        if w.proc(pos).is_some_and(|p| p.leader() != Some(leader)) {
            return Some(Violation::new(
                Property::OutputContract,
                format!("node {node} output Leader({leader}) but its leader() says otherwise"),
            ));
        }
        match app.announced {
            None => app.announced = Some(leader),
            Some(first) if first != leader && !app.disturbed => {
                return Some(Violation::new(
                    Property::OneLeader,
                    format!("one election announced {first}, then node {node} announced {leader}"),
                ));
            }
            Some(_) => {}
        }
        None
    }

    fn crash(&self, app: &mut Self::App, w: &World<A>, _pos: usize) {
        Self::trigger(app, w, None);
    }

    fn recover(&self, app: &mut Self::App, w: &World<A>, pos: usize) {
        Self::trigger(app, w, Some(pos));
    }

    fn check_state(&self, _app: &Self::App, _w: &World<A>) -> Option<Violation> {
        None
    }

    fn check_terminal(&self, app: &Self::App, w: &World<A>) -> Option<Violation> {
        let mut unsettled = Vec::new();
        let mut named: Vec<(NodeId, NodeId)> = Vec::new();
        for (pos, p) in w.procs().enumerate() {
            let Some(p) = p else { continue };
            if p.electing() || p.leader().is_none() {
                unsettled.push(self.ids[pos]);
            }
            if let Some(l) = p.leader() {
                named.push((self.ids[pos], l));
            }
        }
        if !unsettled.is_empty() {
            return Some(Violation::new(
                Property::Termination,
                format!(
                    "nothing can happen while nodes {} are still electing or know no leader",
                    list(&unsettled)
                ),
            ));
        }
        if let Some(&(a, la)) = named.first() {
            if let Some(&(b, lb)) = named.iter().find(|(_, l)| *l != la) {
                return Some(Violation::new(
                    Property::Agreement,
                    format!(
                        "the election is over, but node {a} names {la} and node {b} names {lb}"
                    ),
                ));
            }
            let h = self.highest_live(w);
            if self.elects_highest {
                let alive = self
                    .ids
                    .iter()
                    .position(|&i| i == la)
                    .is_some_and(|p| w.alive(p));
                if !alive {
                    return Some(Violation::new(
                        Property::Validity,
                        format!(
                            "the leader, {la}, has crashed; the highest live process is {}",
                            h.map(|h| h.to_string()).unwrap_or_default()
                        ),
                    ));
                }
                if app.any_output && Some(la) != h {
                    return Some(Violation::new(
                        Property::Validity,
                        format!(
                            "the leader is {la}, but the highest live process is {}",
                            h.map(|h| h.to_string()).unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        None
    }

    fn goal(&self, app: &Self::App, w: &World<A>) -> bool {
        let pending_start = (0..self.ids.len()).any(|p| w.alive(p) && (app.starts >> p) & 1 == 1);
        !pending_start
            && Self::settled(w, None).is_some_and(|l| {
                self.ids
                    .iter()
                    .position(|&i| i == l)
                    .is_some_and(|p| w.alive(p))
            })
    }

    fn waiting(&self, app: &Self::App, w: &World<A>, pos: usize) -> bool {
        w.proc(pos)
            .is_some_and(|p| p.electing() || p.leader().is_none())
            || (w.alive(pos) && (app.starts >> pos) & 1 == 1)
    }
}

// ---------------------------------------------------------------- multicast

/// The multicast application: multicast `k` of process `p` is number `p * R + k` and carries
/// that number as its payload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MulticastApp {
    /// Multicasts made, by process.
    made: Vec<u8>,
    /// Multicasts made or delivered at each process (its causal past), as bits.
    seen: Vec<u64>,
    /// Multicasts delivered at each process, as bits.
    delivered: Vec<u64>,
    /// Deliveries at each process, in order.
    order: Vec<Vec<u8>>,
    /// The causal past of each multicast when it was made.
    deps: Vec<u64>,
}

/// Each process multicasts `requests` times, at any moment.
pub(crate) struct MulticastSpec<A> {
    per: u32,
    ids: Vec<NodeId>,
    orders: Vec<Order>,
    _a: PhantomData<fn() -> A>,
}

impl<A: Multicast> MulticastSpec<A> {
    pub fn new(config: &Config, peers: &Peers) -> Result<Self, CheckError> {
        if config.requests == 0 || config.requests as usize * peers.len() > 64 {
            return Err(CheckError::new(
                "requests",
                "each process multicasts 1 or more times, and at most 64 multicasts in all",
            ));
        }
        Ok(MulticastSpec {
            per: config.requests,
            ids: peers.ids().to_vec(),
            orders: config
                .orders
                .clone()
                .unwrap_or_else(|| A::guarantees().to_vec()),
            _a: PhantomData,
        })
    }

    fn name(&self, idx: u8) -> String {
        let per = self.per as usize;
        format!(
            "multicast {} of {}",
            idx as usize % per + 1,
            self.ids[idx as usize / per]
        )
    }
}

impl<A: Multicast> Spec<A> for MulticastSpec<A> {
    const CRASH_REFUSAL: Option<&'static str> = Some(
        "the multicast algorithms assume processes do not crash (a crashed process's \
         deliveries cannot be judged); use --loss or --duplicate",
    );

    fn unreached(&self) -> &'static str {
        "some multicast is never delivered everywhere"
    }

    type App = MulticastApp;

    fn init(&self, _w: &World<A>) -> Self::App {
        let n = self.ids.len();
        MulticastApp {
            made: vec![0; n],
            seen: vec![0; n],
            delivered: vec![0; n],
            order: vec![Vec::new(); n],
            deps: vec![0; n * self.per as usize],
        }
    }

    fn inputs(&self, app: &Self::App, _w: &World<A>, pos: usize, out: &mut Vec<mc::Input>) {
        let made = app.made[pos] as u32;
        if made < self.per {
            out.push(mc::Input::Multicast(u64::from(
                pos as u32 * self.per + made,
            )));
        }
    }

    fn take_input(&self, app: &mut Self::App, pos: usize, input: &mc::Input) {
        let mc::Input::Multicast(idx) = *input;
        app.made[pos] += 1;
        app.deps[idx as usize] = app.seen[pos];
        app.seen[pos] |= 1 << idx;
    }

    fn output(
        &self,
        app: &mut Self::App,
        _w: &World<A>,
        pos: usize,
        output: &mc::Output,
    ) -> Option<Violation> {
        let mc::Output::Deliver { origin, payload } = *output;
        let node = self.ids[pos];
        let per = self.per as usize;
        let idx = payload as usize;
        let made = idx < self.ids.len() * per && (app.made[idx / per] as usize) > idx % per;
        if !made || self.ids[idx / per] != origin {
            return Some(Violation::new(
                Property::OutputContract,
                format!("node {node} delivered payload {payload} from {origin}, never multicast"),
            ));
        }
        let bit = 1u64 << idx;
        let name = self.name(idx as u8);
        if app.delivered[pos] & bit != 0 {
            return Some(Violation::new(
                Property::OutputContract,
                format!("node {node} delivered {name} twice"),
            ));
        }
        if self.orders.contains(&Order::Fifo) {
            let first = idx / per * per;
            for earlier in first..idx {
                if app.delivered[pos] & (1 << earlier) == 0 {
                    return Some(Violation::new(
                        Property::FifoOrder,
                        format!(
                            "node {node} delivered {name} before {}",
                            self.name(earlier as u8)
                        ),
                    ));
                }
            }
        }
        if self.orders.contains(&Order::Causal) {
            let missing = app.deps[idx] & !app.delivered[pos];
            if missing != 0 {
                let m = missing.trailing_zeros() as u8;
                return Some(Violation::new(
                    Property::CausalOrder,
                    format!(
                        "node {node} delivered {name} before {}, which happened before it",
                        self.name(m)
                    ),
                ));
            }
        }
        if self.orders.contains(&Order::Total) {
            for (q, order) in app.order.iter().enumerate() {
                if q == pos || app.delivered[q] & bit == 0 {
                    continue;
                }
                let at = order.iter().position(|&x| x as usize == idx).unwrap_or(0);
                for &x in &app.order[pos] {
                    if order[at..].contains(&x) {
                        return Some(Violation::new(
                            Property::TotalOrder,
                            format!(
                                "node {node} delivered {} before {name}, node {} the other way round",
                                self.name(x),
                                self.ids[q]
                            ),
                        ));
                    }
                }
            }
        }
        app.delivered[pos] |= bit;
        app.seen[pos] |= bit;
        app.order[pos].push(idx as u8);
        None
    }

    fn check_state(&self, _app: &Self::App, _w: &World<A>) -> Option<Violation> {
        None
    }

    fn check_terminal(&self, app: &Self::App, w: &World<A>) -> Option<Violation> {
        let all: u64 = (0..self.ids.len())
            .flat_map(|p| (0..app.made[p] as usize).map(move |k| p * self.per as usize + k))
            .fold(0, |m, i| m | 1 << i);
        for (pos, d) in app.delivered.iter().enumerate() {
            if w.alive(pos) && *d != all {
                let m = (all & !d).trailing_zeros() as u8;
                return Some(Violation::new(
                    Property::Completion,
                    format!(
                        "nothing can happen, and node {} never delivered {}",
                        self.ids[pos],
                        self.name(m)
                    ),
                ));
            }
        }
        None
    }

    fn goal(&self, app: &Self::App, w: &World<A>) -> bool {
        let all = (1u64 << (self.ids.len() * self.per as usize)) - 1;
        app.made.iter().all(|&m| m as u32 == self.per)
            && (0..self.ids.len()).all(|p| !w.alive(p) || app.delivered[p] == all)
    }

    fn waiting(&self, app: &Self::App, w: &World<A>, pos: usize) -> bool {
        let all: u64 = (0..self.ids.len())
            .flat_map(|p| (0..app.made[p] as usize).map(move |k| p * self.per as usize + k))
            .fold(0, |m, i| m | 1 << i);
        w.alive(pos) && app.delivered[pos] != all
    }

    fn rename_app(&self, app: &Self::App, perm: &[usize]) -> Option<Self::App> {
        let per = u64::from(self.per);
        let idx = |i: u64| crate::symmetry::rename_multicast(i, per, perm);
        let bits = |b: u64| {
            (0..64)
                .filter(|i| (b >> i) & 1 == 1)
                .fold(0u64, |m, i| m | 1 << idx(i))
        };
        let mut r = app.clone();
        for (p, &q) in perm.iter().enumerate().take(self.ids.len()) {
            r.made[q] = app.made[p];
            r.seen[q] = bits(app.seen[p]);
            r.delivered[q] = bits(app.delivered[p]);
            r.order[q] = app.order[p]
                .iter()
                .map(|&i| idx(u64::from(i)) as u8)
                .collect();
        }
        for (i, &d) in app.deps.iter().enumerate() {
            r.deps[idx(i as u64) as usize] = bits(d);
        }
        Some(r)
    }
}

// ---------------------------------------------------------------- snapshot

/// The bank application: transfer `k` of process `p` moves 2^(p*R+k) to a process of the
/// checker's choosing; process 0 starts one snapshot at a moment of the checker's choosing.
/// Distinct powers of two make every recorded sum decompose into exactly the transfers it
/// counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SnapshotApp {
    /// Transfers made, by process.
    made: Vec<u8>,
    /// Each transfer's sender and receiver position, by transfer number (u8::MAX: not made).
    to: Vec<u8>,
    started: bool,
    /// Each process's recorded part: its balance and the amounts recorded in transit to it,
    /// by sender position.
    parts: Vec<Option<(u64, Vec<u64>)>>,
}

pub(crate) struct SnapshotSpec<A> {
    per: u32,
    ids: Vec<NodeId>,
    opening: u64,
    _a: PhantomData<fn() -> A>,
}

impl<A: GlobalSnapshot> SnapshotSpec<A> {
    pub fn new(config: &Config, peers: &Peers) -> Result<Self, CheckError> {
        if config.requests as usize * peers.len() > 40 {
            return Err(CheckError::new(
                "requests",
                "at most 40 transfers in all (each moves a distinct power of two)",
            ));
        }
        let opening = config.params.balance.unwrap_or(1000);
        let total_moved: u64 = (1u64 << (config.requests as usize * peers.len())) - 1;
        if opening < total_moved {
            return Err(CheckError::new(
                "balance",
                format!("the opening balance must cover every transfer: at least {total_moved}"),
            ));
        }
        Ok(SnapshotSpec {
            per: config.requests,
            ids: peers.ids().to_vec(),
            opening,
            _a: PhantomData,
        })
    }
}

impl<A: GlobalSnapshot> Spec<A> for SnapshotSpec<A> {
    const CRASH_REFUSAL: Option<&'static str> = Some(
        "the snapshot algorithm assumes processes do not crash (the money of a crashed \
         account is gone); use --loss or --duplicate",
    );

    fn unreached(&self) -> &'static str {
        "the snapshot is never complete"
    }

    type App = SnapshotApp;

    fn init(&self, _w: &World<A>) -> Self::App {
        let n = self.ids.len();
        SnapshotApp {
            made: vec![0; n],
            to: vec![u8::MAX; n * self.per as usize],
            started: false,
            parts: vec![None; n],
        }
    }

    fn inputs(&self, app: &Self::App, _w: &World<A>, pos: usize, out: &mut Vec<sn::Input>) {
        if pos == 0 && !app.started {
            out.push(sn::Input::Snapshot);
        }
        let made = app.made[pos] as u32;
        if made < self.per {
            let amount = 1u64 << (pos as u32 * self.per + made);
            for (q, &to) in self.ids.iter().enumerate() {
                if q != pos {
                    out.push(sn::Input::Transfer { to, amount });
                }
            }
        }
    }

    fn take_input(&self, app: &mut Self::App, pos: usize, input: &sn::Input) {
        match *input {
            sn::Input::Snapshot => app.started = true,
            sn::Input::Transfer { to, amount } => {
                app.made[pos] += 1;
                let q = self.ids.iter().position(|&i| i == to).unwrap_or(0);
                app.to[amount.trailing_zeros() as usize] = q as u8;
            }
        }
    }

    fn output(
        &self,
        app: &mut Self::App,
        _w: &World<A>,
        pos: usize,
        output: &sn::Output,
    ) -> Option<Violation> {
        let sn::Output::Recorded(part) = output;
        let node = self.ids[pos];
        if app.parts[pos].is_some() {
            return Some(Violation::new(
                Property::OutputContract,
                format!("node {node} reported its part of the snapshot twice"),
            ));
        }
        let mut transit = vec![0u64; self.ids.len()];
        for c in &part.channels {
            let Some(q) = self.ids.iter().position(|&i| i == c.from) else {
                continue;
            };
            for &a in &c.amounts {
                if transit[q] & a != 0 || !a.is_power_of_two() {
                    return Some(Violation::new(
                        Property::SnapshotConsistency,
                        format!(
                            "node {node} recorded the transfer of {a} from {} twice in transit",
                            c.from
                        ),
                    ));
                }
                transit[q] |= a;
            }
        }
        app.parts[pos] = Some((part.balance, transit));
        if app.parts.iter().all(|p| p.is_some()) {
            return self.judge(app);
        }
        None
    }

    fn check_state(&self, _app: &Self::App, _w: &World<A>) -> Option<Violation> {
        None
    }

    fn check_terminal(&self, app: &Self::App, w: &World<A>) -> Option<Violation> {
        let missing: Vec<NodeId> = (0..self.ids.len())
            .filter(|&p| w.alive(p) && app.parts[p].is_none())
            .map(|p| self.ids[p])
            .collect();
        if app.started && !missing.is_empty() {
            return Some(Violation::new(
                Property::Completion,
                format!(
                    "nothing can happen, and nodes {} never reported their part of the snapshot",
                    list(&missing)
                ),
            ));
        }
        None
    }

    fn goal(&self, app: &Self::App, _w: &World<A>) -> bool {
        app.started
            && app.parts.iter().all(|p| p.is_some())
            && app.made.iter().all(|&m| m as u32 == self.per)
    }

    fn waiting(&self, app: &Self::App, w: &World<A>, pos: usize) -> bool {
        app.started && w.alive(pos) && app.parts[pos].is_none()
    }
}

impl<A: GlobalSnapshot> SnapshotSpec<A> {
    /// Every part is in: the recorded state must count each transfer exactly once.
    fn judge(&self, app: &SnapshotApp) -> Option<Violation> {
        let n = self.ids.len();
        let per = self.per as usize;
        // Transfers by sender and receiver.
        let sent_by = |p: usize| -> u64 {
            (0..per)
                .map(|k| p * per + k)
                .filter(|&i| app.to[i] != u8::MAX)
                .fold(0, |m, i| m | 1 << i)
        };
        let received_by = |q: usize| -> u64 {
            (0..n * per)
                .filter(|&i| app.to[i] as usize == q)
                .fold(0, |m, i| m | 1 << i)
        };
        let mut recorded_total: u128 = 0;
        // Decode each part: balance = opening + received - sent (before recording), the two
        // sets disjoint sums of distinct powers of two, hence unique.
        let mut before: Vec<(u64, u64)> = Vec::new();
        for q in 0..n {
            let (balance, transit) = app.parts[q].as_ref().expect("every part");
            recorded_total +=
                u128::from(*balance) + transit.iter().map(|&t| u128::from(t)).sum::<u128>();
            let sent = sent_by(q);
            let recv = received_by(q);
            let mut found = None;
            let mut s = sent;
            loop {
                // s ranges over every subset of `sent`.
                let r = i128::from(*balance) - i128::from(self.opening) + i128::from(s);
                if r >= 0 && (r as u64) & !recv == 0 && r <= i128::from(u64::MAX) {
                    found = Some((s, r as u64));
                    break;
                }
                if s == 0 {
                    break;
                }
                s = (s - 1) & sent;
            }
            let Some(f) = found else {
                return Some(Violation::new(
                    Property::SnapshotConsistency,
                    format!(
                        "node {}'s recorded balance {balance} is no balance it ever had",
                        self.ids[q]
                    ),
                ));
            };
            before.push(f);
        }
        for q in 0..n {
            let (_, transit) = app.parts[q].as_ref().expect("every part");
            let (_, received) = before[q];
            for (p, &t) in transit.iter().enumerate() {
                let both = t & received;
                if both != 0 {
                    return Some(Violation::new(
                        Property::SnapshotConsistency,
                        format!(
                            "the transfer of {} from {} to {} is recorded both as received and in transit",
                            1u64 << both.trailing_zeros(),
                            self.ids[p],
                            self.ids[q]
                        ),
                    ));
                }
                let unsent = t & !before[p].0;
                if unsent != 0 {
                    return Some(Violation::new(
                        Property::SnapshotConsistency,
                        format!(
                            "the transfer of {} from {} to {} is recorded in transit but not as sent",
                            1u64 << unsent.trailing_zeros(),
                            self.ids[p],
                            self.ids[q]
                        ),
                    ));
                }
            }
            for (p, (sent_before, _)) in before.iter().enumerate() {
                let orphan = received & sent_by(p) & !sent_before;
                if orphan != 0 {
                    return Some(Violation::new(
                        Property::SnapshotConsistency,
                        format!(
                            "the transfer of {} from {} to {} is recorded as received but not as sent",
                            1u64 << orphan.trailing_zeros(),
                            self.ids[p],
                            self.ids[q]
                        ),
                    ));
                }
            }
        }
        let expected = u128::from(self.opening) * n as u128;
        if recorded_total != expected {
            return Some(Violation::new(
                Property::Conservation,
                format!("the snapshot records {recorded_total} in all; the bank holds {expected}"),
            ));
        }
        None
    }
}
