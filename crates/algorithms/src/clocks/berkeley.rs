//! The Berkeley algorithm (Gusella and Zatti 1989): an elected master averages every clock.
//!
//! Source: seed 000 table of contents "3.1.2.1 Berkeley Algorithm", and seed 000 "Need of
//! Election Algorithm: Few Examples" ("Berkeley Algorithm: to select a leader or master to take
//! the responsibility of averaging the time"); the rules are Gusella and Zatti's, as Tanenbaum
//! tells them. Rules:
//! 1. A master is chosen by an election algorithm (`master_election`, a registry name, bully by
//!    default): the first process in membership order starts an election when the run starts,
//!    any process starts one when the master falls silent (rule 7), and a recovered process
//!    follows the election algorithm's own rule.
//! 2. On "sync now" the master polls every other process for its clock (`round`, `rounds`).
//! 3. A process polled by the process it takes for master (`election`) answers with its clock
//!    reading (`answered`).
//! 4. The master estimates each offset with the round trip: reading + RTT/2 minus its own clock
//!    when the answer arrives (`round`). Its own offset is 0.
//! 5. When every process has answered, or the answer timeout expires, the master takes a
//!    fault-tolerant average: the offsets (its own included) within `threshold` of their median
//!    (the lower median, for an even count) are averaged, those beyond it are left out.
//! 6. The master sends every process that answered its own adjustment, the average minus that
//!    process's offset (a clock left out of the average is still corrected), and adjusts its own
//!    clock by the average.
//! 7. A process that takes another for master and gets no poll for two sync periods
//!    (`silent_periods`) suspects the master has crashed and starts an election.
//!
//! A duplication rule, beyond the notes (which assume exactly-once channels): a process applies
//! an Adjust only for the round of the last Poll it answered, and only once. A duplicated (or
//! late) Adjust would otherwise move the clock twice; a duplicated Clock answer is already
//! counted once per process (rule 4). No message is added: the round number is in every message.
//!
//! The estimate of an offset is wrong by half the asymmetry of its round trip, so right after a
//! round two clocks are at most the spread of round-trip asymmetry apart (max - min delay), plus
//! what they drift while the adjustments travel. There is no reference clock: the average is
//! only as close to true time as the clocks are on average.

use crate::election::nested_apart;
use distsync_core::clock_sync::{self, ClockSync, Input, Output};
use distsync_core::election::{self, Election};
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, ParamError, Params, Peers, Process, Time,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The election algorithm that chooses the master when `master_election` is not given.
pub const DEFAULT_MASTER_ELECTION: &str = "bully";

/// Messages: the election algorithm's, and the three of a round.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg<E> {
    /// A message of the election algorithm that chooses the master.
    Election(E),
    /// The master asks for the clock (round `round`).
    Poll { round: u64 },
    /// The answer: the process's clock reading.
    Clock { round: u64, reading: Time },
    /// The master's adjustment for the receiving process.
    Adjust { round: u64, delta_ns: i64 },
}

impl<E: Message> Message for Msg<E> {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Election(m) => m.kind(),
            Msg::Poll { .. } => "Poll",
            Msg::Clock { .. } => "Clock",
            Msg::Adjust { .. } => "Adjust",
        }
    }
}

/// Timers: the election algorithm's, and the master's wait for answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer<T> {
    /// A timer of the election algorithm.
    Election(T),
    /// The answers of the round under way are overdue.
    Round,
}

/// The round a master is running.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Round {
    number: u64,
    /// The master's clock when it polled.
    polled_at: Time,
    /// The estimated offsets of the processes that answered (rule 4).
    offsets: Vec<(NodeId, i64)>,
}

/// One process of the Berkeley algorithm, with election algorithm `E` choosing the master.
#[derive(Clone, Debug, Serialize)]
pub struct Berkeley<E: Process> {
    id: NodeId,
    election: E,
    #[serde(skip)]
    scratch: Vec<EffectOf<E>>,
    /// The master's round under way.
    round: Option<Round>,
    rounds: u64,
    /// Sync periods since the last poll from the master (rule 7).
    silent_periods: u32,
    /// The (master, round) of the last Poll answered, and whether its Adjust was applied (the
    /// duplication rule).
    answered: Option<(NodeId, u64)>,
    adjusted: bool,
    threshold: u64,
    #[serde(skip)]
    timeout: Duration,
}

impl<E: Election> Algorithm for Berkeley<E> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        // The registry chose `E` from `params.master_election` (`registry::master_election`).
        clock_sync::validate(params, peers)?;
        E::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Berkeley {
            id,
            election: E::new(id, peers, params),
            scratch: Vec::new(),
            round: None,
            rounds: 0,
            silent_periods: 0,
            answered: None,
            adjusted: false,
            threshold: clock_sync::threshold_ns(params),
            timeout: clock_sync::reply_timeout(params),
        }
    }
}

impl<E: Election> ClockSync for Berkeley<E> {}

impl<E: Election> Process for Berkeley<E> {
    type Msg = Msg<E::Msg>;
    type Input = Input;
    type Output = Output;
    type Timer = Timer<E::Timer>;

    // Rule 1.
    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.elect(ctx, |e, c| e.on_start(c));
        if !ctx.recovered() && ctx.peers().ids()[0] == self.id {
            ctx.rule("1");
            self.elect(ctx, |e, c| e.on_input(election::Input::Start, c));
        }
    }

    fn on_input(&mut self, Input::Sync: Input, ctx: &mut Ctx<'_, Self>) {
        let master = self.election.leader();
        if master == Some(self.id) {
            // Rule 2.
            if self.round.is_none() {
                self.poll(ctx);
            }
        } else if master.is_some() && !self.election.electing() {
            // Rule 7.
            ctx.rule("7");
            self.silent_periods += 1;
            if self.silent_periods >= 2 {
                self.silent_periods = 0;
                self.elect(ctx, |e, c| e.on_input(election::Input::Start, c));
            }
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Self::Msg, ctx: &mut Ctx<'_, Self>) {
        let from_master = self.election.leader() == Some(from);
        match msg {
            Msg::Election(m) => self.elect(ctx, |e, c| e.on_message(from, m, c)),
            // Rule 3.
            Msg::Poll { round } if from_master => {
                ctx.rule("3");
                self.silent_periods = 0;
                if self.answered != Some((from, round)) {
                    self.answered = Some((from, round));
                    self.adjusted = false;
                }
                ctx.send(
                    from,
                    Msg::Clock {
                        round,
                        reading: ctx.now(),
                    },
                );
            }
            // Rule 4.
            Msg::Clock { round, reading } => {
                let Some(r) = self.round.as_mut().filter(|r| r.number == round) else {
                    return;
                };
                if r.offsets.iter().any(|(j, _)| *j == from) {
                    return; // a duplicate answer
                }
                ctx.rule("4");
                r.offsets
                    .push((from, estimate(r.polled_at, reading, ctx.now())));
                if r.offsets.len() + 1 == ctx.peers().len() {
                    ctx.cancel_timer(Timer::Round);
                    self.average(ctx);
                }
            }
            // Rule 6, at the receiving end: once, for the round answered (the duplication rule).
            Msg::Adjust { round, delta_ns }
                if from_master && self.answered == Some((from, round)) && !self.adjusted =>
            {
                ctx.rule("6");
                self.adjusted = true;
                ctx.output(Output::Adjust {
                    delta_ns,
                    bound_ns: None,
                    reference: None,
                })
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: Self::Timer, ctx: &mut Ctx<'_, Self>) {
        match timer {
            Timer::Election(t) => self.elect(ctx, |e, c| e.on_timer(t, c)),
            // Rule 5: average with the answers that came.
            Timer::Round => {
                if self.round.is_some() {
                    self.average(ctx);
                }
            }
        }
    }
}

/// Rule 4: the offset of a clock that read `reading` when polled at `polled_at` and answered
/// at `now` (the master's clock): reading + RTT/2 - now.
pub fn estimate(polled_at: Time, reading: Time, now: Time) -> i64 {
    let rtt = now.as_nanos().saturating_sub(polled_at.as_nanos());
    (reading.as_nanos() as i128 + (rtt / 2) as i128 - now.as_nanos() as i128) as i64
}

/// Rule 5: the fault-tolerant average of `offsets` (not empty): the mean of those within
/// `threshold` of the (lower) median, and which were left out (by position).
pub fn fault_tolerant_average(offsets: &[i64], threshold: u64) -> (i64, Vec<usize>) {
    let mut sorted = offsets.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    // The lower median: a clock's own reading, so that at least that clock is always kept
    // (with two clocks 10s apart, the mean of the middle two would keep neither).
    let median = sorted[(n - 1) / 2] as i128;
    let within = |o: i64| (o as i128 - median).unsigned_abs() <= threshold as u128;
    let used: Vec<i128> = offsets
        .iter()
        .filter(|&&o| within(o))
        .map(|&o| o as i128)
        .collect();
    let ignored = (0..n).filter(|&i| !within(offsets[i])).collect();
    let count = used.len().max(1) as i128;
    let sum: i128 = used.iter().sum();
    // Rounded to the nearest nanosecond.
    let average = (2 * sum + count * sum.signum()) / (2 * count);
    (average as i64, ignored)
}

impl<E: Election> Berkeley<E> {
    /// Runs a handler of the election algorithm and carries out its effects (rule 1).
    fn elect(&mut self, ctx: &mut Ctx<'_, Self>, handler: impl FnOnce(&mut E, &mut Ctx<'_, E>)) {
        // The election names the rules of its own file: here they are this file's rule 1.
        let (mut effects, rules) =
            nested_apart(ctx, &mut self.election, &mut self.scratch, handler);
        if !rules.is_empty() {
            ctx.rule("1");
        }
        for effect in effects.drain(..) {
            match effect {
                Effect::Send { to, msg } => ctx.send(to, Msg::Election(msg)),
                Effect::SetTimer { timer, after } => ctx.set_timer(Timer::Election(timer), after),
                Effect::CancelTimer { timer } => ctx.cancel_timer(Timer::Election(timer)),
                Effect::Output(election::Output::Leader(m)) => {
                    self.silent_periods = 0;
                    ctx.output(Output::Master(m));
                }
            }
        }
        self.scratch = effects;
        if self.election.leader() != Some(self.id) && self.round.take().is_some() {
            ctx.cancel_timer(Timer::Round); // no longer the master
        }
    }

    /// Rule 2.
    fn poll(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("2");
        self.rounds += 1;
        self.round = Some(Round {
            number: self.rounds,
            polled_at: ctx.now(),
            offsets: Vec::new(),
        });
        if ctx.peers().len() == 1 {
            return self.average(ctx);
        }
        ctx.broadcast(Msg::Poll { round: self.rounds });
        ctx.set_timer(Timer::Round, self.timeout);
    }

    /// Rules 5 and 6.
    fn average(&mut self, ctx: &mut Ctx<'_, Self>) {
        let Some(round) = self.round.take() else {
            return;
        };
        ctx.rule("5");
        ctx.rule("6");
        let mut ids = vec![self.id];
        let mut offsets = vec![0];
        for &(j, o) in &round.offsets {
            ids.push(j);
            offsets.push(o);
        }
        let (average, left_out) = fault_tolerant_average(&offsets, self.threshold);
        for (&j, &o) in ids.iter().zip(&offsets).skip(1) {
            ctx.send(
                j,
                Msg::Adjust {
                    round: round.number,
                    delta_ns: average - o,
                },
            );
        }
        ctx.output(Output::Adjust {
            delta_ns: average,
            bound_ns: None,
            reference: None,
        });
        let ignored: Vec<NodeId> = left_out.iter().map(|&i| ids[i]).collect();
        ctx.output(Output::Round {
            used: ids
                .iter()
                .copied()
                .filter(|i| !ignored.contains(i))
                .collect(),
            ignored,
        });
    }

    /// The master this process believes in.
    pub fn master(&self) -> Option<NodeId> {
        self.election.leader()
    }

    /// The election algorithm inside.
    pub fn election(&self) -> &E {
        &self.election
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::Bully;
    use distsync_core::testing::Driver;

    const MS: i64 = 1_000_000;
    type B = Berkeley<Bully>;

    #[test]
    fn the_fault_tolerant_average_leaves_out_clocks_far_from_the_median() {
        // Tanenbaum's example in minutes: master 3:00 (0), others +25 and -10: average +5.
        assert_eq!(fault_tolerant_average(&[0, 25, -10], 100), (5, vec![]));
        // One clock 10 s off: left out, the others averaged.
        let s = 1_000 * MS;
        let (avg, out) = fault_tolerant_average(&[0, 4 * MS, -2 * MS, 10 * s, MS], s as u64);
        assert_eq!(out, vec![3]);
        assert_eq!(avg, 3 * MS / 4);
        // An even count: the lower of the two middle values is the median.
        assert_eq!(
            fault_tolerant_average(&[0, 10, 20, 1000], 15),
            (10, vec![3])
        );
        assert_eq!(fault_tolerant_average(&[0, 10 * s], s as u64), (0, vec![1]));
    }

    #[test]
    fn the_offset_estimate_adds_half_the_round_trip() {
        let t = |ms: i64| Time::from_nanos((ms * MS) as u64);
        // Polled at 100, answered 130 (its clock), back at 110: 130 + 5 - 110 = +25.
        assert_eq!(estimate(t(100), t(130), t(110)), 25 * MS);
    }

    #[test]
    fn the_election_of_the_master_is_named_as_this_files_rule_1() {
        // Bully names the rules of bully.rs; through Berkeley they show as Berkeley's rule 1,
        // never as Berkeley's rules of the same numbers.
        use rand_core::SeedableRng;
        let peers = Peers::range(3);
        let params = Params::default();
        let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(1);
        let mut effects = Vec::new();
        let mut first = B::new(NodeId(0), &peers, &params);
        let mut ctx = Ctx::new(
            NodeId(0),
            &peers,
            Time::from_nanos(0),
            false,
            &mut rng,
            &mut effects,
        );
        first.on_start(&mut ctx);
        assert_eq!(ctx.rules().as_slice(), ["1"]);
        let mut ctx = Ctx::new(
            NodeId(0),
            &peers,
            Time::from_nanos(0),
            false,
            &mut rng,
            &mut effects,
        );
        first.on_message(NodeId(2), Msg::Poll { round: 1 }, &mut ctx);
        assert!(
            ctx.rules().is_empty(),
            "no master yet: the poll is not answered"
        );
    }

    #[test]
    fn the_first_process_starts_an_election_and_the_master_polls() {
        let peers = Peers::range(3);
        let params = Params::default();
        let mut top = Driver::new(B::new(NodeId(2), &peers, &params), NodeId(2), &peers);
        top.start();
        assert!(top.effects().is_empty(), "only the first process starts");
        top.receive(1, Msg::Election(crate::election::bully::Msg::Election));
        // The highest process answers OK, wins its own election at once and says so.
        assert_eq!(top.outputs(), vec![Output::Master(NodeId(2))]);
        top.input(Input::Sync);
        assert_eq!(
            top.sent(),
            vec![
                (NodeId(0), Msg::Poll { round: 1 }),
                (NodeId(1), Msg::Poll { round: 1 })
            ]
        );
        let mut low = Driver::new(B::new(NodeId(0), &peers, &params), NodeId(0), &peers);
        low.start();
        assert_eq!(low.sent().len(), 2, "ELECTION to both higher processes");
        low.receive(2, Msg::Election(crate::election::bully::Msg::Coordinator));
        assert_eq!(low.outputs(), vec![Output::Master(NodeId(2))]);
        low.advance(Duration::from_millis(3));
        low.receive(2, Msg::Poll { round: 1 });
        assert_eq!(
            low.sent(),
            vec![(
                NodeId(2),
                Msg::Clock {
                    round: 1,
                    reading: Time::from_nanos(3 * MS as u64)
                }
            )]
        );
        // A poll from a process it does not take for master is not answered.
        low.receive(1, Msg::Poll { round: 7 });
        assert!(low.sent().is_empty());
        // The duplication rule: the Adjust of the round answered is applied once; a copy, or an
        // Adjust for a round not answered, is ignored.
        let adjust = |round| Msg::Adjust { round, delta_ns: 5 };
        low.receive(2, adjust(1));
        assert_eq!(
            low.outputs(),
            vec![Output::Adjust {
                delta_ns: 5,
                bound_ns: None,
                reference: None
            }]
        );
        low.receive(2, adjust(1));
        low.receive(2, adjust(2));
        assert!(low.outputs().is_empty());
    }

    #[test]
    fn the_master_sends_each_its_own_adjustment_even_when_left_out() {
        let peers = Peers::range(3);
        let params = Params {
            threshold: Some(Duration::from_millis(100)),
            ..Params::default()
        };
        let mut m = Driver::new(B::new(NodeId(2), &peers, &params), NodeId(2), &peers);
        m.start();
        m.advance(Duration::from_secs(20));
        m.input(Input::Sync); // polled at 20s
        m.advance(Duration::from_millis(2));
        // Node 0 reads 20.011s at our 20.002s: offset +10ms; node 1 is 10s ahead.
        m.receive(
            0,
            Msg::Clock {
                round: 1,
                reading: Time::from_nanos(20_011 * MS as u64),
            },
        );
        m.receive(
            1,
            Msg::Clock {
                round: 1,
                reading: Time::from_nanos(30_001 * MS as u64),
            },
        );
        assert_eq!(
            m.sent(),
            vec![
                (
                    NodeId(0),
                    Msg::Adjust {
                        round: 1,
                        delta_ns: -5 * MS
                    }
                ),
                (
                    NodeId(1),
                    Msg::Adjust {
                        round: 1,
                        delta_ns: 5 * MS - 10_000 * MS
                    }
                ),
            ]
        );
        assert_eq!(
            m.outputs(),
            vec![
                Output::Adjust {
                    delta_ns: 5 * MS,
                    bound_ns: None,
                    reference: None
                },
                Output::Round {
                    used: vec![NodeId(2), NodeId(0)],
                    ignored: vec![NodeId(1)]
                },
            ]
        );
    }

    #[test]
    fn two_silent_periods_start_an_election() {
        let peers = Peers::range(3);
        let mut p = Driver::new(
            B::new(NodeId(1), &peers, &Params::default()),
            NodeId(1),
            &peers,
        );
        p.start();
        p.receive(2, Msg::Election(crate::election::bully::Msg::Coordinator));
        p.input(Input::Sync);
        assert!(p.sent().is_empty());
        p.input(Input::Sync);
        assert_eq!(
            p.sent(),
            vec![(
                NodeId(2),
                Msg::Election(crate::election::bully::Msg::Election)
            )]
        );
    }
}
