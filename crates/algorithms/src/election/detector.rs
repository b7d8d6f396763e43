//! The failure detector: heartbeats from the coordinator and a timeout at every other process.
//!
//! Source: seed 000 "Election Algorithm: Basic Concepts (2)" ("the detection of a failure (e.g.
//! the crash of the current coordinator) is normally based on time-out: a process that gets no
//! response for a period of time suspects a failure and initiates an election"), seed 000
//! "Bully Algorithm: Basic Steps" ("message timeouts or failure of the coordinator to initiate a
//! handshake"), seed 001 ("the time-out interval a little larger than the round-trip message
//! delay"). Rules:
//! 1. The process that believes it is the coordinator sends a Heartbeat to every other process
//!    every `heartbeat`.
//! 2. Every other process that knows a coordinator expects its heartbeats: each one resets a
//!    timer of `heartbeat_timeout`.
//! 3. When that timer expires, the coordinator is suspected: the wrapped algorithm gets the
//!    Start input, as if its application had noticed.
//! 4. A coordinator that hears another process's heartbeat (two processes believe they lead)
//!    starts an election too, so that the algorithm settles who leads.
//! 5. On a ring, a process may learn of a new coordinator a whole lap before the coordinator
//!    itself does (the COORDINATOR message passes it first, and every crashed process skipped on
//!    the way costs T), and the coordinator beats only once it knows. So the first watch of a
//!    coordinator learned during the run lasts `heartbeat_timeout` plus a lap, 2nT; later ones
//!    `heartbeat_timeout`. (Without it, a re-election could silence the coordinator for longer
//!    than `heartbeat_timeout` and start the next one, for ever: found by `distsync stress`.)
//!
//! `Detector<A>` wraps any election algorithm `A` without changing it; the simulator uses it when
//! a scenario says `detect = "timeout"`. Heartbeats are counted under the kind "Heartbeat".

use super::nested;
use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, ParamError, Params, Peers, Process,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A message of the wrapped algorithm, or a heartbeat.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DetectMsg<M> {
    /// A message of the election algorithm.
    Inner(M),
    /// "The coordinator is alive."
    Heartbeat,
}

/// The kind heartbeats are counted under.
pub const HEARTBEAT: &str = "Heartbeat";

impl<M: Message> Message for DetectMsg<M> {
    fn kind(&self) -> &'static str {
        match self {
            DetectMsg::Inner(m) => m.kind(),
            DetectMsg::Heartbeat => HEARTBEAT,
        }
    }
}

/// The wrapped algorithm's timers and the detector's two.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DetectTimer<T> {
    /// A timer of the election algorithm.
    Inner(T),
    /// The coordinator's next heartbeat is due.
    Beat,
    /// The coordinator has been silent for `heartbeat_timeout`.
    Watch,
}

/// Election algorithm `A` with a heartbeat failure detector watching its coordinator.
#[derive(Clone, Debug, Serialize)]
pub struct Detector<A: Process> {
    inner: A,
    id: NodeId,
    #[serde(skip)]
    heartbeat: Duration,
    #[serde(skip)]
    timeout: Duration,
    /// The Beat timer is running.
    beating: bool,
    /// The coordinator whose heartbeats the Watch timer waits for.
    watched: Option<NodeId>,
    /// Rule 5: the lap a newly learned coordinator may take to learn it leads (0 off a ring).
    #[serde(skip)]
    lap: Duration,
    /// `on_start` has run: a coordinator learned from now on gets the lap (rule 5).
    started: bool,
    #[serde(skip)]
    scratch: Vec<EffectOf<A>>,
}

// The state, for the checker's fingerprints; `scratch` is empty between handler calls.
impl<A: Process + std::hash::Hash> std::hash::Hash for Detector<A> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (
            &self.inner,
            self.id,
            self.heartbeat,
            self.timeout,
            self.beating,
            self.watched,
            self.started,
        )
            .hash(state);
    }
}

impl<A: Election> Algorithm for Detector<A> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        A::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Detector {
            inner: A::new(id, peers, params),
            id,
            heartbeat: election::heartbeat(params),
            timeout: election::heartbeat_timeout(params),
            beating: false,
            watched: None,
            lap: if A::uses_ring() {
                election::answer_timeout(params) * 2 * peers.len() as u32
            } else {
                Duration::ZERO
            },
            started: false,
            scratch: Vec::new(),
        }
    }
}

impl<A: Election> Election for Detector<A> {
    fn leader(&self) -> Option<NodeId> {
        self.inner.leader()
    }
    fn electing(&self) -> bool {
        self.inner.electing()
    }
    fn pending(&self) -> bool {
        self.inner.pending()
    }
    fn elects_highest() -> bool {
        A::elects_highest()
    }
    fn uses_ring() -> bool {
        A::uses_ring()
    }
    fn rounds(&self) -> Option<u32> {
        self.inner.rounds()
    }
}

impl<A: Election> Process for Detector<A> {
    type Msg = DetectMsg<A::Msg>;
    type Input = Input;
    type Output = Output;
    type Timer = DetectTimer<A::Timer>;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.run(ctx, |a, c| a.on_start(c));
        self.started = true;
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        self.run(ctx, |a, c| a.on_input(input, c));
    }

    fn on_message(&mut self, from: NodeId, msg: Self::Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            DetectMsg::Inner(m) => self.run(ctx, |a, c| a.on_message(from, m, c)),
            // Rule 2.
            DetectMsg::Heartbeat if self.watched == Some(from) => {
                ctx.set_timer(DetectTimer::Watch, self.timeout);
            }
            // Rule 4.
            DetectMsg::Heartbeat if self.inner.leader() == Some(self.id) => {
                self.run(ctx, |a, c| a.on_input(Input::Start, c));
            }
            DetectMsg::Heartbeat => {}
        }
    }

    fn on_timer(&mut self, timer: Self::Timer, ctx: &mut Ctx<'_, Self>) {
        match timer {
            DetectTimer::Inner(t) => self.run(ctx, |a, c| a.on_timer(t, c)),
            // Rule 1.
            DetectTimer::Beat => {
                self.beating = false;
                if self.inner.leader() == Some(self.id) {
                    ctx.broadcast(DetectMsg::Heartbeat);
                    self.beating = true;
                    ctx.set_timer(DetectTimer::Beat, self.heartbeat);
                }
            }
            // Rule 3.
            DetectTimer::Watch => {
                let suspected = self.watched.take();
                if suspected.is_some() && self.inner.leader() == suspected {
                    self.run(ctx, |a, c| a.on_input(Input::Start, c));
                } else {
                    self.refresh(ctx);
                }
            }
        }
    }
}

impl<A: Election> Detector<A> {
    fn run(&mut self, ctx: &mut Ctx<'_, Self>, handler: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let mut effects = nested(ctx, &mut self.inner, &mut self.scratch, handler);
        for effect in effects.drain(..) {
            match effect {
                Effect::Send { to, msg } => ctx.send(to, DetectMsg::Inner(msg)),
                Effect::SetTimer { timer, after } => {
                    ctx.set_timer(DetectTimer::Inner(timer), after)
                }
                Effect::CancelTimer { timer } => ctx.cancel_timer(DetectTimer::Inner(timer)),
                Effect::Output(o) => ctx.output(o),
            }
        }
        self.scratch = effects;
        self.refresh(ctx);
    }

    /// Beats as the coordinator, or watches the coordinator this process now believes in.
    fn refresh(&mut self, ctx: &mut Ctx<'_, Self>) {
        let leader = self.inner.leader();
        if leader == Some(self.id) {
            if !self.beating {
                self.beating = true;
                ctx.set_timer(DetectTimer::Beat, self.heartbeat);
            }
            if self.watched.take().is_some() {
                ctx.cancel_timer(DetectTimer::Watch);
            }
        } else if leader != self.watched {
            self.watched = leader;
            // Rule 5: a coordinator learned during the run gets a lap to learn it leads.
            let grace = if self.started {
                self.lap
            } else {
                Duration::ZERO
            };
            match leader {
                Some(_) => ctx.set_timer(DetectTimer::Watch, self.timeout + grace),
                None => ctx.cancel_timer(DetectTimer::Watch),
            }
        }
    }

    /// The wrapped algorithm.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::testkit::Net;
    use crate::election::{Bully, ChangRoberts, Peterson, Ring, RingActiveList, RingLink};
    use distsync_core::Time;

    fn params() -> Params {
        Params {
            heartbeat: Some(Duration::from_millis(10)),
            heartbeat_timeout: Some(Duration::from_millis(35)),
            ..Params::default()
        }
    }

    /// A crash of the coordinator alone starts the election, for every algorithm.
    fn crash_of_the_coordinator_alone_elects_the_next<A: Election>(ids: &[u32]) {
        let mut net: Net<Detector<A>> = Net::new(ids, params());
        net.run_until(Time::from_nanos(100_000_000));
        assert_eq!(net.count("Election") + net.count("Elect"), 0);
        assert!(net.count("Heartbeat") >= 9 * (ids.len() - 1));
        let top = *ids.iter().max().unwrap();
        net.crash(top);
        net.run_until(Time::from_nanos(2_000_000_000));
        let second = *ids.iter().filter(|&&i| i != top).max().unwrap();
        net.assert_all_agree_on(second);
        // The new coordinator beats: nobody suspects it.
        let elections = net.count("Election") + net.count("Elect");
        net.run_until(Time::from_nanos(3_000_000_000));
        assert_eq!(net.count("Election") + net.count("Elect"), elections);
        // The old one comes back and, being the highest, takes over.
        net.recover(top);
        net.run_until(Time::from_nanos(4_000_000_000));
        net.assert_all_agree_on(top);
    }

    #[test]
    fn every_algorithm_reacts_to_a_silent_coordinator() {
        let ids = [3, 5, 0, 1, 4, 6];
        crash_of_the_coordinator_alone_elects_the_next::<Bully>(&ids);
        crash_of_the_coordinator_alone_elects_the_next::<RingLink<Ring>>(&ids);
        crash_of_the_coordinator_alone_elects_the_next::<RingLink<ChangRoberts>>(&ids);
        crash_of_the_coordinator_alone_elects_the_next::<RingLink<RingActiveList>>(&ids);
        crash_of_the_coordinator_alone_elects_the_next::<RingLink<Peterson>>(&ids);
    }

    #[test]
    fn heartbeats_reset_the_watch_and_silence_starts_one_election() {
        let mut net: Net<Detector<Bully>> = Net::new(&[0, 1, 2], params());
        net.crash(2);
        net.run_until(Time::from_nanos(34_000_000));
        assert_eq!(net.count("Election"), 0);
        net.run_until(Time::from_nanos(36_000_000));
        // 0 and 1 both time out at 35ms: 0 sends to 1 and 2, 1 to 2.
        assert_eq!(net.count("Election"), 3);
        net.run_until(Time::from_nanos(500_000_000));
        net.assert_all_agree_on(1);
    }
}

/// Every algorithm under the detector, with random delays, the coordinator and one more process
/// crashing at random times and (sometimes) recovering: at the horizon every live process agrees
/// on the highest live id. `STRESS=N` runs N seeds per algorithm instead of 100.
#[cfg(test)]
mod stress {
    use super::*;
    use crate::election::testkit::Net;
    use crate::election::{Bully, ChangRoberts, Peterson, Ring, RingActiveList, RingLink};
    use distsync_core::Time;
    use rand_core::{RngCore, SeedableRng};

    fn ms(x: u64) -> Time {
        Time::from_nanos(x * 1_000_000)
    }

    fn stress<A: Election>(seeds: u64, fifo: bool) {
        for seed in 0..seeds {
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut r = |k: u64| rng.next_u64() % k;
            let n = 3 + r(8) as u32;
            let mut order: Vec<u32> = (0..n).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, r(i as u64 + 1) as usize);
            }
            let params = Params {
                heartbeat: Some(Duration::from_millis(10)),
                ..Params::default()
            };
            let mut net: Net<Detector<A>> = Net::new(&order, params);
            if !fifo {
                net = net.with_delay(seed, |_, _, rng| {
                    Duration::from_micros(500 + rng.next_u64() % 2500)
                });
            }
            let top = n - 1;
            let other = r(n as u64 - 1) as u32;
            let t1 = 20 + r(300);
            let t2 = 20 + r(300);
            let mut script = vec![(t1, 0, top), (t2, 0, other)];
            if r(3) > 0 {
                script.push((t1 + 50 + r(500), 1, top));
            }
            if r(2) > 0 {
                script.push((t2 + 50 + r(500), 1, other));
            }
            script.sort();
            for (at, what, id) in script {
                net.run_until(ms(at));
                if what == 0 {
                    net.crash(id);
                } else {
                    net.recover(id);
                }
            }
            net.run_until(ms(5_000));
            let live_max = order
                .iter()
                .copied()
                .filter(|&i| net.is_up(i))
                .max()
                .unwrap();
            for &i in &order {
                if net.is_up(i) {
                    let p = net.process(i);
                    assert_eq!(
                        (p.leader(), p.electing()),
                        (Some(NodeId(live_max)), false),
                        "{}: seed {seed}, order {order:?}, process {i}",
                        std::any::type_name::<A>()
                    );
                }
            }
        }
    }

    #[test]
    fn stress_all() {
        let k: u64 = std::env::var("STRESS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100);
        stress::<Bully>(k, false);
        stress::<RingLink<Ring>>(k, false);
        stress::<RingLink<ChangRoberts>>(k, false);
        stress::<RingLink<RingActiveList>>(k, true);
        stress::<RingLink<Peterson>>(k, false);
    }
}
