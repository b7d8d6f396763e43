//! NTP (RFC 5905): the on-wire exchange, the clock filter, and the selection of truechimers
//! among several servers by the intersection (Marzullo) algorithm, with strata.
//!
//! Source: seed 000 table of contents "3.1.2.3 Network Time Protocol (NTP)" (the notes name it;
//! the rules are RFC 5905's), ORACLES.md "NTP (RFC 5905): offset = ((T2-T1)+(T3-T4))/2, delay =
//! (T4-T1)-(T3-T2)". Rules:
//! 1. Servers are arranged in strata (`strata`): stratum-1 servers take their own clock as the
//!    reference; a server of stratum k+1 synchronizes to those of stratum k; every other node is
//!    a client of the last stratum.
//! 2. On "sync now" a node sends each of its servers (`peers`) a request carrying its clock
//!    reading T1 (`polling`).
//! 3. A server answers with T1 (the origin timestamp), its receive and transmit readings T2 and
//!    T3, its stratum (`stratum`) and its root distance (`root_distance`: its own error bound;
//!    0 at stratum 1). A server that is not synchronized yet answers with stratum 16, and its
//!    reply gives no sample.
//! 4. A reply whose origin timestamp is not the outstanding T1 (`peers`) is bogus and dropped.
//!    Otherwise, with T4 the arrival reading: offset θ = ((T2-T1)+(T3-T4))/2, delay
//!    δ = (T4-T1)-(T3-T2).
//! 5. Clock filter: each server's last 8 samples are kept (`peers`), and the one with the
//!    lowest delay is that server's current sample.
//! 6. Each server's correctness interval is [θ-λ, θ+λ], with λ (the root distance) = δ/2 plus
//!    the dispersion ρ(δ + age) plus the server's own root distance when it answered; the true
//!    offset lies in it (the on-wire error is at most δ/2) unless the server is wrong.
//! 7. Selection (Marzullo's intersection algorithm): find the interval shared by the most
//!    correctness intervals. If more than half of the m servers' intervals share it, those
//!    servers are the truechimers; the others are falsetickers and are rejected.
//! 8. If no more than half share any point, no majority agrees: the clock is left alone and
//!    that is reported.
//! 9. Combine: the correction is the truechimers' offsets averaged with weights 1/λ; its error
//!    is at most the same weighted average of their λ (`root_distance`). The node's stratum
//!    (`stratum`) becomes one more than the lowest stratum among them.
//! 10. After a correction the stored samples (`peers`) are shifted by it, so that they stay
//!     measured against the corrected clock.
//!
//! RFC 5905's version of the intersection algorithm also requires the truechimers' midpoints
//! (offsets) to lie in the shared interval; with correctness intervals as unequal as a random
//! network makes them, a correct server whose wide interval is centred outside the narrow
//! intersection then counts against the majority, and a majority of correct servers is reported
//! as none (seen in simulation), so the plain Marzullo count is used here.
//!
//! Not implemented from RFC 5905: the cluster algorithm (which would prune survivors further),
//! the clock discipline's phase-locked loop (a correction is handed to the runtime whole), and
//! poll-interval adaptation (the runtime's `sync_interval` is the poll).

use distsync_core::clock_sync::{self, ClockSync, Input, Output};
use distsync_core::{Algorithm, Ctx, Message, NodeId, ParamError, Params, Peers, Process, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// How many samples the clock filter keeps per server.
pub const FILTER_SIZE: usize = 8;
/// The stratum of a node that is not synchronized.
pub const UNSYNCHRONIZED: u8 = 16;

/// Messages: NTP's client-mode and server-mode packets.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Client mode: the client's transmit reading T1.
    Request { t1: Time },
    /// Server mode: the origin T1 echoed, the server's receive T2 and transmit T3 readings, its
    /// stratum and its root distance in ns.
    Reply {
        t1: Time,
        t2: Time,
        t3: Time,
        stratum: u8,
        root_distance_ns: u64,
    },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
        }
    }
}

/// The one timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timer {
    /// Replies still missing are given up on; select among those that came.
    Select,
}

/// One on-wire sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// θ, in ns.
    pub offset: i64,
    /// δ, in ns.
    pub delay: u64,
    /// The local reading T4 when it was taken.
    pub at: Time,
    /// The server's root distance when it answered, in ns.
    pub root_distance: u64,
}

/// Rule 4: offset and delay from the four timestamps.
pub fn on_wire(t1: Time, t2: Time, t3: Time, t4: Time) -> Sample {
    let [t1, t2, t3, t4] = [t1, t2, t3, t4].map(|t| t.as_nanos() as i128);
    let offset = ((t2 - t1) + (t3 - t4)) / 2;
    let delay = ((t4 - t1) - (t3 - t2)).max(0);
    Sample {
        offset: offset as i64,
        delay: delay as u64,
        at: Time::from_nanos(t4 as u64),
        root_distance: 0,
    }
}

/// What this node knows of one of its servers.
#[derive(Clone, Debug, Serialize)]
pub struct Peer {
    /// The server.
    pub id: NodeId,
    /// Its last samples, oldest first (rule 5).
    pub filter: VecDeque<Sample>,
    /// Its stratum, from its last reply.
    pub stratum: u8,
    /// The T1 of the request in flight, if any.
    pub outstanding: Option<Time>,
}

impl Peer {
    /// A server not heard from yet.
    pub fn new(id: NodeId) -> Peer {
        Peer {
            id,
            filter: VecDeque::with_capacity(FILTER_SIZE),
            stratum: UNSYNCHRONIZED,
            outstanding: None,
        }
    }

    /// Rule 5: the lowest-delay sample among the last [`FILTER_SIZE`].
    pub fn best(&self) -> Option<Sample> {
        self.filter
            .iter()
            .copied()
            .min_by_key(|s| (s.delay, u64::MAX - s.at.as_nanos()))
    }

    fn push(&mut self, sample: Sample) {
        if self.filter.len() == FILTER_SIZE {
            self.filter.pop_front();
        }
        self.filter.push_back(sample);
    }
}

/// A server's correctness interval, as selection sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The server.
    pub id: NodeId,
    /// θ, in ns.
    pub offset: f64,
    /// λ, in ns.
    pub distance: f64,
}

/// Marzullo's algorithm: the most intervals that share a point, and the interval `[low, high]`
/// they all share (the first such, from below). Touching intervals share their end point.
pub fn marzullo(candidates: &[Candidate]) -> (u32, Option<(f64, f64)>) {
    // Lower ends +1, upper ends -1; at equal values lower ends first.
    let mut edges: Vec<(f64, i32)> = candidates
        .iter()
        .flat_map(|c| [(c.offset - c.distance, 1), (c.offset + c.distance, -1)])
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let (mut count, mut best) = (0, 0);
    let mut region = None;
    for (i, &(value, kind)) in edges.iter().enumerate() {
        count += kind;
        if kind == 1 && count > best {
            best = count;
            // The region ends at the next upper end.
            let high = edges[i + 1..]
                .iter()
                .find(|e| e.1 == -1)
                .map_or(value, |e| e.0);
            region = Some((value, high));
        }
    }
    (best as u32, region)
}

/// Rules 7 and 8: the interval a majority of the candidates' intervals share, or `None` when
/// no more than half of them share any point.
pub fn intersection(candidates: &[Candidate]) -> Option<(f64, f64)> {
    match marzullo(candidates) {
        (count, Some(region)) if 2 * count as usize > candidates.len() => Some(region),
        _ => None,
    }
}

/// The most intervals that share a point, for the no-majority report.
pub fn largest_agreement(candidates: &[Candidate]) -> u32 {
    marzullo(candidates).0
}

/// Rule 9: the weighted average of the truechimers' offsets and its error bound.
pub fn combine(truechimers: &[Candidate]) -> (f64, f64) {
    let weights: Vec<f64> = truechimers
        .iter()
        .map(|c| 1.0 / c.distance.max(1.0))
        .collect();
    let total: f64 = weights.iter().sum();
    let offset = truechimers
        .iter()
        .zip(&weights)
        .map(|(c, w)| c.offset * w)
        .sum::<f64>()
        / total;
    let bound = truechimers
        .iter()
        .zip(&weights)
        .map(|(c, w)| c.distance * w)
        .sum::<f64>()
        / total;
    (offset, bound)
}

/// One node: a stratum-1 server, a server of a higher stratum, or a client.
#[derive(Clone, Debug, Serialize)]
pub struct Ntp {
    /// The servers this node synchronizes to (empty at stratum 1).
    peers: Vec<Peer>,
    /// 1 at stratum 1; [`UNSYNCHRONIZED`] until a first selection; then one more than the
    /// lowest truechimer's.
    stratum: u8,
    /// The error bound of the last correction (0 at stratum 1).
    root_distance: u64,
    /// When that correction was made (local reading).
    last_sync: Option<Time>,
    /// Whether this node answers requests (it is listed in `strata`).
    serves: bool,
    #[serde(skip)]
    rho: f64,
    #[serde(skip)]
    timeout: Duration,
    polling: bool,
}

/// The strata: `strata`, else the lowest id alone at stratum 1.
fn strata(peers: &Peers, params: &Params) -> Vec<Vec<NodeId>> {
    match &params.strata {
        Some(s) => s.clone(),
        None => vec![vec![*peers.ids().iter().min().expect("non-empty")]],
    }
}

impl Algorithm for Ntp {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        clock_sync::validate(params, peers)?;
        let levels = strata(peers, params);
        if levels.is_empty() || levels.iter().any(|l| l.is_empty()) {
            return Err(ParamError::new(
                "strata",
                "expected non-empty levels, like [[0, 1, 2]] (stratum-1 servers first)",
            ));
        }
        if levels.len() >= UNSYNCHRONIZED as usize - 1 {
            return Err(ParamError::new(
                "strata",
                "NTP has at most 14 levels of servers",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in levels.iter().flatten() {
            if !peers.contains(*id) {
                return Err(ParamError::new(
                    "strata",
                    format!("node {id} is not one of the scenario's node ids"),
                ));
            }
            if !seen.insert(*id) {
                return Err(ParamError::new(
                    "strata",
                    format!("node {id} is listed at two strata"),
                ));
            }
        }
        Ok(())
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let levels = strata(peers, params);
        let level = levels.iter().position(|l| l.contains(&id));
        let upstream: &[NodeId] = match level {
            Some(0) => &[],
            Some(k) => &levels[k - 1],
            None => levels.last().expect("validated non-empty"),
        };
        Ntp {
            peers: upstream.iter().map(|&s| Peer::new(s)).collect(),
            stratum: if level == Some(0) { 1 } else { UNSYNCHRONIZED },
            root_distance: 0,
            last_sync: None,
            serves: level.is_some(),
            rho: clock_sync::max_drift(params),
            timeout: clock_sync::reply_timeout(params),
            polling: false,
        }
    }
}

impl ClockSync for Ntp {
    fn clients(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let top = strata(peers, params).into_iter().next().unwrap_or_default();
        peers
            .ids()
            .iter()
            .copied()
            .filter(|i| !top.contains(i))
            .collect()
    }

    fn stratum(&self) -> Option<u8> {
        Some(self.stratum)
    }
}

impl Process for Ntp {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = Timer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    // Rule 2.
    fn on_input(&mut self, Input::Sync: Input, ctx: &mut Ctx<'_, Self>) {
        if self.peers.is_empty() || self.polling {
            return;
        }
        ctx.rule("2");
        self.polling = true;
        let t1 = ctx.now();
        for p in &mut self.peers {
            p.outstanding = Some(t1);
            ctx.send(p.id, Msg::Request { t1 });
        }
        ctx.set_timer(Timer::Select, self.timeout);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 3.
            Msg::Request { t1 } if self.serves => {
                ctx.rule("3");
                let now = ctx.now();
                ctx.send(
                    from,
                    Msg::Reply {
                        t1,
                        t2: now,
                        t3: now,
                        stratum: self.stratum,
                        root_distance_ns: self.root_distance_now(now),
                    },
                );
            }
            // Rules 4 and 5.
            Msg::Reply {
                t1,
                t2,
                t3,
                stratum,
                root_distance_ns,
            } => {
                let Some(p) = self.peers.iter_mut().find(|p| p.id == from) else {
                    return;
                };
                ctx.rule("4");
                if p.outstanding != Some(t1) {
                    return; // bogus: not the answer to our request in flight
                }
                p.outstanding = None;
                p.stratum = stratum;
                // An unsynchronized server's time means nothing: no sample.
                if stratum < UNSYNCHRONIZED {
                    ctx.rule("5");
                    p.push(Sample {
                        root_distance: root_distance_ns,
                        ..on_wire(t1, t2, t3, ctx.now())
                    });
                }
                if self.peers.iter().all(|p| p.outstanding.is_none()) {
                    ctx.cancel_timer(Timer::Select);
                    self.select(ctx);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, Timer::Select: Timer, ctx: &mut Ctx<'_, Self>) {
        if self.polling {
            for p in &mut self.peers {
                p.outstanding = None;
            }
            self.select(ctx);
        }
    }
}

impl Ntp {
    /// The root distance this node advertises: its last bound, grown by drift since.
    fn root_distance_now(&self, now: Time) -> u64 {
        match self.last_sync {
            Some(at) if self.stratum < UNSYNCHRONIZED => {
                self.root_distance
                    + (self.rho * now.as_nanos().saturating_sub(at.as_nanos()) as f64) as u64
            }
            _ => 0,
        }
    }

    /// Rule 6: the correctness intervals of the usable servers.
    pub fn candidates(&self, now: Time) -> Vec<Candidate> {
        self.peers
            .iter()
            .filter(|p| p.stratum < UNSYNCHRONIZED)
            .filter_map(|p| {
                let s = p.best()?;
                let age = now.as_nanos().saturating_sub(s.at.as_nanos());
                let distance = s.delay as f64 / 2.0
                    + self.rho * (s.delay + age) as f64
                    + s.root_distance as f64
                    + 2.0;
                Some(Candidate {
                    id: p.id,
                    offset: s.offset as f64,
                    distance,
                })
            })
            .collect()
    }

    /// Rules 7 to 10.
    fn select(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.polling = false;
        let candidates = self.candidates(ctx.now());
        if candidates.is_empty() {
            return;
        }
        ctx.rule("7");
        let Some((low, high)) = intersection(&candidates) else {
            ctx.rule("8");
            ctx.output(Output::NoMajority {
                servers: candidates.iter().map(|c| c.id).collect(),
                largest_agreement: largest_agreement(&candidates),
            });
            return;
        };
        let (truechimers, falsetickers): (Vec<Candidate>, Vec<Candidate>) = candidates
            .iter()
            .partition(|c| c.offset - c.distance <= low && c.offset + c.distance >= high);
        ctx.rule("9");
        let (offset, bound) = combine(&truechimers);
        let delta = offset.round() as i64;
        let lowest = truechimers
            .iter()
            .filter_map(|c| self.peers.iter().find(|p| p.id == c.id))
            .map(|p| p.stratum)
            .min()
            .unwrap_or(UNSYNCHRONIZED);
        self.stratum = (lowest + 1).min(UNSYNCHRONIZED);
        self.root_distance = bound.ceil() as u64;
        self.last_sync = Some(ctx.now());
        ctx.rule("10");
        for p in &mut self.peers {
            for s in &mut p.filter {
                s.offset -= delta;
            }
        }
        ctx.output(Output::Adjust {
            delta_ns: delta,
            bound_ns: Some(bound.ceil() as u64),
            reference: None,
        });
        ctx.output(Output::Round {
            used: truechimers.iter().map(|c| c.id).collect(),
            ignored: falsetickers.iter().map(|c| c.id).collect(),
        });
    }

    /// What this node knows of its servers.
    pub fn servers(&self) -> &[Peer] {
        &self.peers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    const MS: u64 = 1_000_000;

    fn t(ms: u64) -> Time {
        Time::from_nanos(ms * MS)
    }

    #[test]
    fn on_wire_offset_and_delay() {
        // The server is 100ms ahead; 3ms out, 5ms back, 1ms inside the server.
        let s = on_wire(t(1000), t(1103), t(1104), t(1009));
        assert_eq!(s.offset, ((103 + 95) / 2) * MS as i64); // 99ms: the asymmetry costs 1ms
        assert_eq!(s.delay, 8 * MS);
    }

    #[test]
    fn the_filter_keeps_the_lowest_delay_of_the_last_eight() {
        let mut p = Peer::new(NodeId(0));
        let sample = |delay, at| Sample {
            offset: 0,
            delay,
            at: t(at),
            root_distance: 0,
        };
        p.push(sample(1, 0)); // the best, until it falls out
        for i in 1..8 {
            p.push(sample(10 + i, i));
        }
        assert_eq!(p.best().unwrap().delay, 1);
        p.push(sample(50, 8)); // a ninth sample pushes the first out
        assert_eq!(p.filter.len(), FILTER_SIZE);
        assert_eq!(p.best().unwrap().delay, 11);
    }

    fn c(id: u32, offset: f64, distance: f64) -> Candidate {
        Candidate {
            id: NodeId(id),
            offset,
            distance,
        }
    }

    #[test]
    fn one_falseticker_of_five_is_rejected() {
        let cs = [
            c(0, 1.0, 3.0),
            c(1, -1.0, 2.5),
            c(2, 0.5, 2.0),
            c(3, 1000.0, 3.0), // a second off
            c(4, -0.5, 3.0),
        ];
        let (low, high) = intersection(&cs).unwrap();
        assert!(low <= 0.0 && high >= 0.0, "{low} {high}");
        let survivors: Vec<u32> = cs
            .iter()
            .filter(|c| c.offset - c.distance <= low && c.offset + c.distance >= high)
            .map(|c| c.id.0)
            .collect();
        assert_eq!(survivors, vec![0, 1, 2, 4]);
    }

    #[test]
    fn no_majority_when_three_of_five_disagree_among_themselves() {
        let cs = [
            c(0, 0.0, 3.0),
            c(1, 1.0, 3.0),
            c(2, 1000.0, 3.0),
            c(3, 1001.0, 3.0),
            c(4, -1000.0, 3.0),
        ];
        assert_eq!(intersection(&cs), None);
        assert_eq!(largest_agreement(&cs), 2);
    }

    #[test]
    fn a_correct_majority_with_unequal_intervals_is_found() {
        // Server 1's wide interval is centred outside the narrow intersection of the others:
        // it still contains the true offset and still counts.
        let cs = [
            c(0, 0.1, 0.2),
            c(1, -1.0, 2.0),
            c(2, 0.0, 0.3),
            c(3, 1000.0, 3.0),
            c(4, 0.2, 0.5),
        ];
        assert_eq!(marzullo(&cs).0, 4);
        let (low, high) = intersection(&cs).unwrap();
        assert!(
            (low - (-0.1)).abs() < 1e-9 && (high - 0.3).abs() < 1e-9,
            "{low} {high}"
        );
    }

    #[test]
    fn a_majority_that_agrees_wins_even_if_it_is_wrong() {
        // Three servers wrong by the same second are a majority: NTP cannot tell.
        let cs = [
            c(0, 0.0, 3.0),
            c(1, 1.0, 3.0),
            c(2, 1000.0, 3.0),
            c(3, 1001.0, 3.0),
            c(4, 1000.5, 3.0),
        ];
        let (low, high) = intersection(&cs).unwrap();
        assert!(low >= 990.0 && high <= 1010.0);
    }

    #[test]
    fn combining_weights_by_the_inverse_distance() {
        let (offset, bound) = combine(&[c(0, 0.0, 1.0), c(1, 3.0, 2.0)]);
        // Weights 1 and 1/2: (0 + 1.5) / 1.5 = 1; bound (1 + 1) / 1.5.
        assert!((offset - 1.0).abs() < 1e-9);
        assert!((bound - 4.0 / 3.0).abs() < 1e-9);
    }

    fn params(strata: Vec<Vec<u32>>) -> Params {
        Params {
            strata: Some(
                strata
                    .into_iter()
                    .map(|l| l.into_iter().map(NodeId).collect())
                    .collect(),
            ),
            max_drift_ppm: Some(0.0),
            ..Params::default()
        }
    }

    #[test]
    fn strata_decide_who_asks_whom() {
        let peers = Peers::range(6);
        let p = params(vec![vec![0, 1], vec![2]]);
        let ids = |n: &Ntp| n.servers().iter().map(|p| p.id.0).collect::<Vec<_>>();
        assert!(ids(&Ntp::new(NodeId(0), &peers, &p)).is_empty());
        assert_eq!(ids(&Ntp::new(NodeId(2), &peers, &p)), vec![0, 1]);
        assert_eq!(ids(&Ntp::new(NodeId(5), &peers, &p)), vec![2]);
        assert_eq!(Ntp::clients(&peers, &p), [2, 3, 4, 5].map(NodeId).to_vec());
        let bad = params(vec![vec![0], vec![0]]);
        assert_eq!(Ntp::validate(&bad, &peers).unwrap_err().field, "strata");
        let bad = params(vec![vec![9]]);
        assert_eq!(Ntp::validate(&bad, &peers).unwrap_err().field, "strata");
    }

    #[test]
    fn a_client_polls_selects_and_takes_the_stratum_below() {
        let peers = Peers::range(3);
        let p = params(vec![vec![0, 1]]);
        let mut client = Driver::new(Ntp::new(NodeId(2), &peers, &p), NodeId(2), &peers);
        client.advance(Duration::from_millis(1000));
        client.input(Input::Sync);
        assert_eq!(
            client.sent(),
            vec![
                (NodeId(0), Msg::Request { t1: t(1000) }),
                (NodeId(1), Msg::Request { t1: t(1000) }),
            ]
        );
        let reply = |t2: u64| Msg::Reply {
            t1: t(1000),
            t2: t(t2),
            t3: t(t2),
            stratum: 1,
            root_distance_ns: 0,
        };
        client.advance(Duration::from_millis(4));
        client.receive(0, reply(1052)); // server 0: 50ms ahead, 2ms each way
                                        // A reply with a wrong origin timestamp is bogus.
        client.receive(
            1,
            Msg::Reply {
                t1: t(999),
                t2: t(1),
                t3: t(1),
                stratum: 1,
                root_distance_ns: 0,
            },
        );
        assert!(client.outputs().is_empty());
        client.receive(1, reply(1052));
        assert_eq!(
            client.outputs(),
            vec![
                Output::Adjust {
                    delta_ns: 50 * MS as i64,
                    bound_ns: Some(2 * MS + 2),
                    reference: None,
                },
                Output::Round {
                    used: vec![NodeId(0), NodeId(1)],
                    ignored: vec![],
                },
            ]
        );
        assert_eq!(client.process.stratum(), Some(2));
        // The kept samples now read against the corrected clock.
        assert_eq!(client.process.servers()[0].best().unwrap().offset, 0);
    }

    #[test]
    fn an_unsynchronized_server_is_not_used() {
        let peers = Peers::range(2);
        let p = params(vec![vec![0]]);
        let mut client = Driver::new(Ntp::new(NodeId(1), &peers, &p), NodeId(1), &peers);
        client.input(Input::Sync);
        client.receive(
            0,
            Msg::Reply {
                t1: Time::ZERO,
                t2: Time::ZERO,
                t3: Time::ZERO,
                stratum: UNSYNCHRONIZED,
                root_distance_ns: 0,
            },
        );
        assert!(client.outputs().is_empty());
        assert_eq!(client.process.stratum(), Some(UNSYNCHRONIZED));
    }
}
