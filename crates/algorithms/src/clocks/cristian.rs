//! Cristian's algorithm (Cristian 1989): a client sets its clock from a time server's reading.
//!
//! Source: seed 000 table of contents "3.1.2.2 Cristian's Algorithm" (the notes name it; the
//! rules are Cristian's and Tanenbaum's), ORACLES.md "Cristian: set to T + RTT/2, error at most
//! RTT/2 - min delay". Rules:
//! 1. On "sync now" a client asks the time server `server` for its time, `samples` times one
//!    after the other (`remaining`), noting the round trip RTT of each exchange on its own
//!    clock (`outstanding`).
//! 2. The server answers a request with its clock reading T.
//! 3. The client's estimate of the server's clock when a reply arrives is T + RTT/2.
//! 4. It keeps the sample with the smallest round trip (`best`) (the most accurate: the error
//!    of a sample is at most RTT/2 - min, where min is the smallest one-way delay).
//! 5. When every exchange has answered or timed out (`remaining`), it sets its clock to that
//!    estimate (`best`) (it reports the correction) and reports the error bound RTT/2 - min.
//!
//! The bound the client reports also allows for clock drift, as Cristian's own bound does: the
//! round trip is measured on a clock that may run fast or slow by up to ρ (`max_drift_ppm`), the
//! server's clock drifts while the reply travels, and the two clocks drift apart between the
//! sample and the correction. Reported bound: RTT/2 - min + (2ρ + σ)(RTT + age) + 2ns, where age
//! is the time from the sample to the correction and 2ns covers readings in whole nanoseconds. It
//! holds relative to the server's clock.
//!
//! A slewing rule, beyond the notes: a client that applies its corrections by slewing
//! (`slew_ppm` = σ, the simulator's `[clocks] adjust = "slew"`) runs up to σ faster or slower
//! than its drift until the correction is made, which can take seconds, so its next round trip
//! and the age of its sample are measured on a clock up to ρ + σ off: the drift term uses ρ + σ
//! for the client and ρ for the server, 2ρ + σ in all. With steps σ is 0.

use distsync_core::clock_sync::{self, ClockSync, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process, Time};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The client asks for the time; `seq` matches the reply to its request.
    Request { seq: u64 },
    /// The server's clock reading T when it answered.
    Reply { seq: u64, t: Time },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
        }
    }
}

/// The client's one timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// The reply to the outstanding request is overdue: take it as lost.
    Timeout,
}

/// One request/reply exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Its round trip on the client's clock, in ns.
    pub rtt: u64,
    /// T + RTT/2 minus the client's reading when the reply arrived, in ns.
    pub offset: i64,
    /// The client's reading when the reply arrived.
    pub at: Time,
}

/// One process: the time server, or a client of it.
#[derive(Clone, Debug, Serialize)]
pub struct Cristian {
    id: NodeId,
    server: NodeId,
    samples: u32,
    min_delay: u64,
    #[serde(skip)]
    rho: f64,
    /// σ: the extra rate of this clock while it slews a correction (0 with steps).
    sigma: f64,
    #[serde(skip)]
    timeout: Duration,
    seq: u64,
    /// The request in flight: its number and when it left, on the client's clock.
    outstanding: Option<(u64, Time)>,
    /// Exchanges still to make in this synchronization.
    remaining: u32,
    /// The sample with the smallest round trip so far (rule 4).
    best: Option<Sample>,
}

impl Algorithm for Cristian {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        clock_sync::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Cristian {
            id,
            server: clock_sync::server(peers, params),
            samples: clock_sync::samples(params),
            min_delay: clock_sync::min_delay_ns(params),
            rho: clock_sync::max_drift(params),
            sigma: clock_sync::slew_rate(params),
            timeout: clock_sync::reply_timeout(params),
            seq: 0,
            outstanding: None,
            remaining: 0,
            best: None,
        }
    }
}

impl ClockSync for Cristian {
    fn clients(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let server = clock_sync::server(peers, params);
        peers
            .ids()
            .iter()
            .copied()
            .filter(|&i| i != server)
            .collect()
    }
}

impl Process for Cristian {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    // Rule 1; a client already synchronizing finishes that synchronization first.
    fn on_input(&mut self, Input::Sync: Input, ctx: &mut Ctx<'_, Self>) {
        if self.id != self.server && self.remaining == 0 && self.outstanding.is_none() {
            self.remaining = self.samples;
            self.best = None;
            self.ask(ctx);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2.
            Msg::Request { seq } if self.id == self.server => {
                ctx.rule("2");
                ctx.send(from, Msg::Reply { seq, t: ctx.now() });
            }
            // Rules 3 and 4.
            Msg::Reply { seq, t } if from == self.server => {
                let Some((asked, sent_at)) = self.outstanding else {
                    return;
                };
                if asked != seq {
                    return; // the reply to a request already given up on
                }
                self.outstanding = None;
                ctx.rule("3");
                ctx.rule("4");
                ctx.cancel_timer(Timer::Timeout);
                let sample = Self::sample(sent_at, t, ctx.now());
                if self.best.is_none_or(|b| sample.rtt < b.rtt) {
                    self.best = Some(sample);
                }
                self.next(ctx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, Timer::Timeout: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.outstanding.take().is_some() {
            self.next(ctx);
        }
    }
}

impl Cristian {
    /// Rule 3: the estimate of the server's clock is T + RTT/2 when the reply arrives at `now`.
    pub fn sample(sent_at: Time, t: Time, now: Time) -> Sample {
        let rtt = now.as_nanos().saturating_sub(sent_at.as_nanos());
        let estimate = t.as_nanos() as i128 + (rtt / 2) as i128;
        Sample {
            rtt,
            offset: (estimate - now.as_nanos() as i128) as i64,
            at: now,
        }
    }

    /// The bound on the error of `sample` used at `now` (see the header).
    pub fn bound(&self, sample: &Sample, now: Time) -> u64 {
        let age = now.as_nanos().saturating_sub(sample.at.as_nanos());
        let half = (sample.rtt / 2) as f64 - self.min_delay as f64;
        let drift = (2.0 * self.rho + self.sigma) * (sample.rtt + age) as f64;
        (half.max(0.0) + drift).ceil() as u64 + 2
    }

    /// Rule 1: the next request.
    fn ask(&mut self, ctx: &mut Ctx<'_, Self>) {
        ctx.rule("1");
        self.remaining -= 1;
        self.seq += 1;
        self.outstanding = Some((self.seq, ctx.now()));
        ctx.send(self.server, Msg::Request { seq: self.seq });
        ctx.set_timer(Timer::Timeout, self.timeout);
    }

    /// Another exchange, or rule 5.
    fn next(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.remaining > 0 {
            return self.ask(ctx);
        }
        let Some(best) = self.best.take() else {
            return; // no reply at all: the clock is left alone
        };
        ctx.rule("5");
        let bound = self.bound(&best, ctx.now());
        ctx.output(Output::Adjust {
            delta_ns: best.offset,
            bound_ns: Some(bound),
            reference: Some(self.server),
        });
        ctx.output(Output::Round {
            used: vec![self.server],
            ignored: Vec::new(),
        });
    }

    /// The sample with the smallest round trip of the synchronization under way.
    pub fn best(&self) -> Option<Sample> {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;
    use distsync_core::Effect;

    const MS: u64 = 1_000_000;

    fn client(params: &Params, peers: &Peers) -> Cristian {
        Cristian::new(NodeId(1), peers, params)
    }

    #[test]
    fn the_server_answers_with_its_reading() {
        let peers = Peers::range(3);
        let mut s = Driver::new(
            Cristian::new(NodeId(0), &peers, &Params::default()),
            NodeId(0),
            &peers,
        );
        s.advance(Duration::from_millis(7));
        s.receive(2, Msg::Request { seq: 4 });
        assert_eq!(
            s.sent(),
            vec![(
                NodeId(2),
                Msg::Reply {
                    seq: 4,
                    t: Time::from_nanos(7 * MS)
                }
            )]
        );
        s.input(Input::Sync); // the server never synchronizes
        assert!(s.effects().is_empty());
    }

    #[test]
    fn t_plus_half_the_round_trip() {
        // Sent at 100ms, the server read 250ms, the reply came back at 110ms: RTT 10ms, the
        // server's clock now reads 255ms, 145ms ahead of ours.
        let s = Cristian::sample(
            Time::from_nanos(100 * MS),
            Time::from_nanos(250 * MS),
            Time::from_nanos(110 * MS),
        );
        assert_eq!(s.rtt, 10 * MS);
        assert_eq!(s.offset, 145 * MS as i64);
    }

    #[test]
    fn keeps_the_smallest_round_trip_and_reports_its_bound() {
        let peers = Peers::range(2);
        let params = Params {
            samples: Some(3),
            min_delay: Some(Duration::from_millis(1)),
            max_drift_ppm: Some(0.0),
            ..Params::default()
        };
        let mut c = Driver::new(client(&params, &peers), NodeId(1), &peers);
        c.input(Input::Sync);
        assert_eq!(c.sent(), vec![(NodeId(0), Msg::Request { seq: 1 })]);
        // Exchange 1: RTT 8ms, server read 50ms.
        c.advance(Duration::from_millis(8));
        c.receive(
            0,
            Msg::Reply {
                seq: 1,
                t: Time::from_nanos(50 * MS),
            },
        );
        assert_eq!(c.sent(), vec![(NodeId(0), Msg::Request { seq: 2 })]);
        // Exchange 2: RTT 4ms (the best), server read 60ms at our 12ms.
        c.advance(Duration::from_millis(4));
        c.receive(
            0,
            Msg::Reply {
                seq: 2,
                t: Time::from_nanos(60 * MS),
            },
        );
        assert_eq!(c.process.best().unwrap().rtt, 4 * MS);
        // Exchange 3: RTT 6ms.
        c.advance(Duration::from_millis(6));
        c.receive(
            0,
            Msg::Reply {
                seq: 3,
                t: Time::from_nanos(70 * MS),
            },
        );
        // Best sample: 60 + 2 - 12 = +50ms; bound RTT/2 - min = 2 - 1 = 1ms (+2ns rounding).
        assert_eq!(
            c.outputs(),
            vec![
                Output::Adjust {
                    delta_ns: 50 * MS as i64,
                    bound_ns: Some(MS + 2),
                    reference: Some(NodeId(0)),
                },
                Output::Round {
                    used: vec![NodeId(0)],
                    ignored: vec![],
                },
            ]
        );
    }

    #[test]
    fn drift_widens_the_bound() {
        let peers = Peers::range(2);
        let params = Params {
            max_drift_ppm: Some(100.0),
            ..Params::default()
        };
        let c = client(&params, &peers);
        let s = Sample {
            rtt: 10 * MS,
            offset: 0,
            at: Time::from_nanos(0),
        };
        // 5ms + 2 * 100e-6 * (10ms + 1s) = 5ms + 202us.
        assert_eq!(
            c.bound(&s, Time::from_nanos(1000 * MS)),
            5 * MS + 202_000 + 2
        );
    }

    #[test]
    fn a_slewing_client_adds_its_slew_rate_to_the_drift_term() {
        let peers = Peers::range(2);
        let params = Params {
            max_drift_ppm: Some(100.0),
            slew_ppm: Some(500.0),
            ..Params::default()
        };
        let c = client(&params, &peers);
        let s = Sample {
            rtt: 10 * MS,
            offset: 0,
            at: Time::from_nanos(0),
        };
        // 5ms + (2 * 100e-6 + 500e-6) * (10ms + 1s) = 5ms + 707us.
        assert_eq!(
            c.bound(&s, Time::from_nanos(1000 * MS)),
            5 * MS + 707_000 + 2
        );
    }

    #[test]
    fn a_lost_reply_times_out_and_a_late_one_is_ignored() {
        let peers = Peers::range(2);
        let params = Params {
            samples: Some(2),
            ..Params::default()
        };
        let mut c = Driver::new(client(&params, &peers), NodeId(1), &peers);
        c.input(Input::Sync);
        c.fire(Timer::Timeout);
        assert_eq!(c.sent(), vec![(NodeId(0), Msg::Request { seq: 2 })]);
        c.receive(
            0,
            Msg::Reply {
                seq: 1,
                t: Time::from_nanos(5),
            },
        );
        assert!(
            c.effects().is_empty(),
            "the reply to request 1 came too late"
        );
        c.fire(Timer::Timeout);
        assert!(c.outputs().is_empty(), "no sample: the clock is left alone");
        // A new synchronization may start.
        c.input(Input::Sync);
        assert!(matches!(c.effects()[0], Effect::Send { .. }));
    }

    #[test]
    fn a_second_sync_while_one_is_under_way_is_ignored() {
        let peers = Peers::range(2);
        let mut c = Driver::new(client(&Params::default(), &peers), NodeId(1), &peers);
        c.input(Input::Sync);
        c.input(Input::Sync);
        assert!(c.effects().is_empty());
    }
}
