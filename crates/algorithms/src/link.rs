//! Reliable FIFO links: sequence numbers, acknowledgements, retransmission and deduplication
//! under any algorithm, so that it sees the reliable, exactly-once, in-order channels the notes
//! assume (seed 001: "no messages are lost") on a network that loses, duplicates and reorders.
//!
//! `Reliable<A>` wraps any process `A` without changing it (as the election's `Detector` does);
//! the simulator uses it when a scenario says `[network] reliable = true`. Rules, per directed
//! link from a sender to a receiver:
//! 1. The sender numbers the messages it sends on the link 0, 1, 2, ... and sends each in a
//!    `Data` frame with its incarnation (its clock's reading when it starts, so a recovered
//!    process's numbers are not mistaken for its previous life's) and the link's `base`: the lowest number
//!    not yet acknowledged (or given up).
//! 2. The receiver acknowledges every `Data` frame it receives with an `Ack` of its number; a
//!    frame it already had (a duplicate, a retransmission whose first copy arrived, a frame of a
//!    previous incarnation) is discarded and acknowledged again (`ReAck`), so a lost `Ack` is
//!    repaired.
//! 3. The receiver hands the algorithm the frames in order: number `expected`, then the buffered
//!    ones after it, each in an event of its own; a frame after a gap waits in a buffer
//!    (head-of-line blocking, as in TCP). Links are therefore FIFO even on a network that
//!    reorders.
//! 4. A frame not acknowledged within the retransmission timeout `link_timeout` (the simulator
//!    derives it from the network's delay bound: more than the worst round trip) is sent again
//!    (`Retransmit`), the timeout doubling up to [`MAX_BACKOFF`] times the first; after
//!    [`MAX_TRIES`] sends the sender gives it up (its receiver is taken for crashed or cut off)
//!    and the next frames' `base` tells the receiver not to wait for it.
//! 5. A frame of a new incarnation of its sender resets the receiver's state for that sender:
//!    `expected` becomes the frame's `base`.
//! 6. Acknowledgements carry the receiver's incarnation, and frames the receiver's incarnation
//!    they are meant for, as the sender last heard it (from an acknowledgement or a frame of
//!    its own): a frame meant for a previous life of a
//!    recovered receiver is discarded (and acknowledged, so it is not sent again), and a sender
//!    that hears of a new incarnation of its receiver drops the frames meant for the previous
//!    one, as a TCP connection is reset when its peer restarts. A frame sent before the sender heard from
//!    its receiver at all (meant for no life in particular) may reach the receiver's next life,
//!    however long it was retransmitted: over reliable links, a message to a crashed process can
//!    arrive long after the network's delay bound (as over TCP, whose connection attempts to a
//!    host that is down are retried, and go to whoever accepts).
//! 7. Incarnations grow (they are clock readings): a frame or acknowledgement of an older
//!    incarnation than the one last heard (late in the network from a previous life) neither
//!    resets a link nor moves it back.
//!
//! The link's own traffic goes under its own kinds ([`RETRANSMIT`], [`ACK`], [`REACK`]); a first
//! transmission goes under the algorithm's kind, so message counts of the algorithm are the same
//! as without the link. Crashes are not masked: a crashed process loses its state and its
//! unacknowledged frames.

use distsync_core::clock_sync::ClockSync;
use distsync_core::election::Election;
use distsync_core::multicast::{Multicast, Order};
use distsync_core::mutex::MutualExclusion;
use distsync_core::snapshot::GlobalSnapshot;
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, ParamError, Params, Peers, Process,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// The kind a retransmitted `Data` frame is counted under.
pub const RETRANSMIT: &str = "LinkRetransmit";
/// The kind of an acknowledgement of a new frame.
pub const ACK: &str = "LinkAck";
/// The kind of an acknowledgement of a discarded frame (a duplicate).
pub const REACK: &str = "LinkReAck";
/// Every kind of the link's own traffic.
pub const KINDS: [&str; 3] = [RETRANSMIT, ACK, REACK];

/// Sends of one frame before the sender gives it up.
pub const MAX_TRIES: u32 = 16;
/// The retransmission timeout doubles up to this many times the first.
pub const MAX_BACKOFF: u32 = 8;
/// The retransmission timeout when the runtime names none.
pub const DEFAULT_LINK_TIMEOUT: Duration = Duration::from_millis(10);

/// A frame on a reliable link.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Frame<M> {
    /// A message of the algorithm, numbered on its link.
    Data {
        /// The sender's incarnation.
        inc: u64,
        /// The message's number on the link.
        seq: u64,
        /// The lowest number the sender still waits to see acknowledged.
        base: u64,
        /// The receiver's incarnation this frame is meant for, as the sender last heard it (0:
        /// not heard yet).
        to: u64,
        /// A retransmission (counted as the link's traffic, not the algorithm's).
        again: bool,
        /// The algorithm's message.
        msg: M,
    },
    /// The receiver got frame `seq` of incarnation `inc`.
    Ack {
        /// The sender's incarnation the frame carried.
        inc: u64,
        /// The receiver's own incarnation.
        rinc: u64,
        /// The frame's number.
        seq: u64,
        /// It was a duplicate, discarded.
        dup: bool,
    },
}

impl<M: Message> Message for Frame<M> {
    fn kind(&self) -> &'static str {
        match self {
            Frame::Data {
                again: false, msg, ..
            } => msg.kind(),
            Frame::Data { again: true, .. } => RETRANSMIT,
            Frame::Ack { dup: false, .. } => ACK,
            Frame::Ack { dup: true, .. } => REACK,
        }
    }
}

/// The wrapped algorithm's timers and the link's retransmission timers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LinkTimer<T> {
    /// A timer of the algorithm.
    Inner(T),
    /// Frame `seq` to `to` has not been acknowledged.
    Retransmit(NodeId, u64),
    /// The next buffered frame from this sender is ready: it is handed over in an event of its
    /// own (right away), so that each handler of the algorithm sees one message.
    Drain(NodeId),
}

/// A frame sent and not yet acknowledged.
#[derive(Clone, Debug, Serialize)]
struct Unacked<M> {
    msg: M,
    tries: u32,
    /// The receiver's incarnation it was meant for.
    to: u64,
}

/// The sending end of one link.
#[derive(Clone, Debug, Default, Serialize)]
struct Outgoing<M> {
    next: u64,
    unacked: BTreeMap<u64, Unacked<M>>,
    /// The receiver's incarnation, from its last acknowledgement (0: none yet).
    peer: u64,
}

impl<M> Outgoing<M> {
    fn base(&self) -> u64 {
        self.unacked.keys().next().copied().unwrap_or(self.next)
    }

    /// The receiver is (now) in incarnation `inc`: frames meant for its previous lives would be
    /// discarded there, so they are dropped here, and the base moves past them. An older
    /// incarnation (a late frame of a previous life) changes nothing (rule 7).
    fn heard(&mut self, inc: u64) {
        if inc > self.peer {
            self.peer = inc;
            self.unacked.retain(|_, f| f.to == 0 || f.to >= inc);
        }
    }
}

/// The receiving end of one link.
#[derive(Clone, Debug, Serialize)]
struct Incoming<M> {
    inc: u64,
    expected: u64,
    buffer: BTreeMap<u64, M>,
}

/// Process `A` over reliable FIFO links.
#[derive(Clone, Debug, Serialize)]
#[serde(bound(serialize = "A: Serialize"))]
pub struct Reliable<A: Process> {
    inner: A,
    inc: u64,
    #[serde(skip)]
    timeout: Duration,
    #[serde(serialize_with = "crate::state::sorted")]
    out: HashMap<NodeId, Outgoing<A::Msg>>,
    #[serde(serialize_with = "crate::state::sorted")]
    incoming: HashMap<NodeId, Incoming<A::Msg>>,
    #[serde(skip)]
    scratch: Vec<EffectOf<A>>,
}

impl<A: Algorithm> Algorithm for Reliable<A> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        A::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        Reliable {
            inner: A::new(id, peers, params),
            inc: 0,
            timeout: params.link_timeout.unwrap_or(DEFAULT_LINK_TIMEOUT),
            out: HashMap::new(),
            incoming: HashMap::new(),
            scratch: Vec::new(),
        }
    }
}

impl<A: Process> Process for Reliable<A> {
    type Msg = Frame<A::Msg>;
    type Input = A::Input;
    type Output = A::Output;
    type Timer = LinkTimer<A::Timer>;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // Rule 1: an incarnation that a recovered process does not share with its past: its
        // clock's reading at start (plus one, 0 meaning "not heard yet"). Not drawn from the
        // generator, so that a run over reliable links makes the same random choices as without.
        self.inc = ctx.now().as_nanos() + 1;
        self.run(ctx, |a, c| a.on_start(c));
    }

    fn on_input(&mut self, input: A::Input, ctx: &mut Ctx<'_, Self>) {
        self.run(ctx, |a, c| a.on_input(input, c));
    }

    fn on_message(&mut self, from: NodeId, frame: Frame<A::Msg>, ctx: &mut Ctx<'_, Self>) {
        match frame {
            Frame::Data {
                inc,
                seq,
                base,
                to,
                msg,
                ..
            } => {
                if to != 0 && to != self.inc {
                    // Rule 6: meant for this process's previous life.
                    let rinc = self.inc;
                    ctx.send(
                        from,
                        Frame::Ack {
                            inc,
                            rinc,
                            seq,
                            dup: true,
                        },
                    );
                    return;
                }
                // The sender's incarnation, for the frames this process sends it (rule 6).
                if let Some(link) = self.out.get_mut(&from) {
                    link.heard(inc);
                }
                self.receive(from, inc, seq, base, msg, ctx)
            }
            Frame::Ack { inc, rinc, seq, .. } => {
                if inc == self.inc {
                    if let Some(link) = self.out.get_mut(&from) {
                        link.heard(rinc);
                        if link.unacked.remove(&seq).is_some() {
                            ctx.cancel_timer(LinkTimer::Retransmit(from, seq));
                        }
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, timer: LinkTimer<A::Timer>, ctx: &mut Ctx<'_, Self>) {
        match timer {
            LinkTimer::Inner(t) => self.run(ctx, |a, c| a.on_timer(t, c)),
            LinkTimer::Drain(from) => self.drain(from, ctx),
            // Rule 4.
            LinkTimer::Retransmit(to, seq) => {
                let Some(link) = self.out.get_mut(&to) else {
                    return;
                };
                let Some(frame) = link.unacked.get_mut(&seq) else {
                    return;
                };
                if frame.tries >= MAX_TRIES {
                    link.unacked.remove(&seq);
                    return;
                }
                frame.tries += 1;
                let backoff = 1u32 << (frame.tries - 1).min(MAX_BACKOFF.trailing_zeros());
                let (msg, meant) = (frame.msg.clone(), frame.to);
                let base = link.base();
                ctx.send(
                    to,
                    Frame::Data {
                        inc: self.inc,
                        seq,
                        base,
                        to: meant,
                        again: true,
                        msg,
                    },
                );
                ctx.set_timer(LinkTimer::Retransmit(to, seq), self.timeout * backoff);
            }
        }
    }
}

impl<A: Process> Reliable<A> {
    /// Runs a handler of the algorithm and carries out its effects, its sends over the links.
    fn run(&mut self, ctx: &mut Ctx<'_, Self>, handler: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        let mut effects = crate::election::nested(ctx, &mut self.inner, &mut self.scratch, handler);
        for effect in effects.drain(..) {
            match effect {
                Effect::Send { to, msg } => self.send(to, msg, ctx),
                Effect::SetTimer { timer, after } => ctx.set_timer(LinkTimer::Inner(timer), after),
                Effect::CancelTimer { timer } => ctx.cancel_timer(LinkTimer::Inner(timer)),
                Effect::Output(o) => ctx.output(o),
            }
        }
        self.scratch = effects;
    }

    /// Rule 1.
    fn send(&mut self, to: NodeId, msg: A::Msg, ctx: &mut Ctx<'_, Self>) {
        let link = self.out.entry(to).or_insert_with(|| Outgoing {
            next: 0,
            unacked: BTreeMap::new(),
            peer: 0,
        });
        let seq = link.next;
        link.next += 1;
        let meant = link.peer;
        link.unacked.insert(
            seq,
            Unacked {
                msg: msg.clone(),
                tries: 1,
                to: meant,
            },
        );
        let base = link.base();
        ctx.send(
            to,
            Frame::Data {
                inc: self.inc,
                seq,
                base,
                to: meant,
                again: false,
                msg,
            },
        );
        ctx.set_timer(LinkTimer::Retransmit(to, seq), self.timeout);
    }

    /// Rules 2, 3 and 5.
    fn receive(
        &mut self,
        from: NodeId,
        inc: u64,
        seq: u64,
        base: u64,
        msg: A::Msg,
        ctx: &mut Ctx<'_, Self>,
    ) {
        let link = self.incoming.entry(from).or_insert_with(|| Incoming {
            inc,
            expected: base,
            buffer: BTreeMap::new(),
        });
        if inc != link.inc {
            if inc < link.inc {
                // Rule 7: a late frame of the sender's previous life.
                let rinc = self.inc;
                ctx.send(
                    from,
                    Frame::Ack {
                        inc,
                        rinc,
                        seq,
                        dup: true,
                    },
                );
                return;
            }
            // Rule 5: the sender has recovered.
            link.inc = inc;
            link.expected = base;
            link.buffer.clear();
        }
        let fresh = seq >= link.expected.max(base) && !link.buffer.contains_key(&seq);
        let rinc = self.inc;
        ctx.send(
            from,
            Frame::Ack {
                inc,
                rinc,
                seq,
                dup: !fresh,
            },
        );
        if base > link.expected {
            // Frames before `base` were given up by the sender: do not wait for them.
            link.expected = base;
            link.buffer = link.buffer.split_off(&base);
        }
        if !fresh {
            return;
        }
        link.buffer.insert(seq, msg);
        self.drain(from, ctx);
    }

    /// Rule 3: hands the algorithm the next frame from `from` if it is the expected one, and
    /// schedules the following one if it is ready too.
    fn drain(&mut self, from: NodeId, ctx: &mut Ctx<'_, Self>) {
        let Some(link) = self.incoming.get_mut(&from) else {
            return;
        };
        let Some(m) = link.buffer.remove(&link.expected) else {
            return;
        };
        link.expected += 1;
        if link.buffer.contains_key(&link.expected) {
            ctx.set_timer(LinkTimer::Drain(from), Duration::ZERO);
        }
        self.run(ctx, |a, c| a.on_message(from, m, c));
    }

    /// The wrapped algorithm.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// Frames sent and not yet acknowledged nor given up.
    pub fn unacknowledged(&self) -> usize {
        self.out.values().map(|l| l.unacked.len()).sum()
    }
}

impl<A: MutualExclusion> MutualExclusion for Reliable<A> {
    fn in_critical_section(&self) -> bool {
        self.inner.in_critical_section()
    }
    fn competitors(peers: &Peers, params: &Params) -> Vec<NodeId> {
        A::competitors(peers, params)
    }
}

impl<A: Election> Election for Reliable<A> {
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

impl<A: ClockSync> ClockSync for Reliable<A> {
    fn clients(peers: &Peers, params: &Params) -> Vec<NodeId> {
        A::clients(peers, params)
    }
    fn stratum(&self) -> Option<u8> {
        self.inner.stratum()
    }
}

impl<A: Multicast> Multicast for Reliable<A> {
    fn multicasts(&self) -> u64 {
        self.inner.multicasts()
    }
    fn guarantees() -> &'static [Order] {
        A::guarantees()
    }
}

impl<A: GlobalSnapshot> GlobalSnapshot for Reliable<A> {
    fn balance(&self) -> u64 {
        self.inner.balance()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    /// Counts what it receives; sends `Ping(k)` to node 1 on input k.
    #[derive(Debug, Default)]
    struct Counter {
        got: Vec<u32>,
    }
    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    struct Ping(u32);
    impl Message for Ping {
        fn kind(&self) -> &'static str {
            "Ping"
        }
    }
    impl Process for Counter {
        type Msg = Ping;
        type Input = u32;
        type Output = ();
        type Timer = ();
        fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_input(&mut self, k: u32, ctx: &mut Ctx<'_, Self>) {
            ctx.send(NodeId(1), Ping(k));
        }
        fn on_message(&mut self, _from: NodeId, m: Ping, _ctx: &mut Ctx<'_, Self>) {
            self.got.push(m.0);
        }
    }
    impl Algorithm for Counter {
        fn new(_id: NodeId, _peers: &Peers, _params: &Params) -> Self {
            Counter::default()
        }
    }

    fn peers() -> Peers {
        Peers::new((0..2).map(NodeId).collect()).unwrap()
    }

    fn reliable(id: u32, peers: &Peers) -> Reliable<Counter> {
        let params = Params {
            link_timeout: Some(Duration::from_millis(5)),
            ..Params::default()
        };
        Reliable::new(NodeId(id), peers, &params)
    }

    fn data(inc: u64, seq: u64, base: u64) -> Frame<Ping> {
        Frame::Data {
            inc,
            seq,
            base,
            to: 0,
            again: false,
            msg: Ping(seq as u32),
        }
    }

    /// The receiver's incarnation in the tests' driver (it starts at time zero).
    const RINC: u64 = 1;

    fn ack(inc: u64, seq: u64, dup: bool) -> Vec<(NodeId, Frame<Ping>)> {
        vec![(
            NodeId(0),
            Frame::Ack {
                inc,
                rinc: RINC,
                seq,
                dup,
            },
        )]
    }

    #[test]
    fn frames_are_handed_over_once_and_in_order_and_every_copy_is_acknowledged() {
        let peers = peers();
        let mut d = Driver::new(reliable(1, &peers), NodeId(1), &peers);
        d.start();
        assert_eq!(d.process.inc, RINC);
        // Frame 1 before frame 0: acknowledged, held back.
        assert_eq!(d.receive(0, data(7, 1, 0)).sent(), ack(7, 1, false));
        assert!(d.process.inner().got.is_empty());
        // Frame 0 is handed over, and frame 1 right after, in an event of its own.
        assert_eq!(d.receive(0, data(7, 0, 0)).sent(), ack(7, 0, false));
        assert_eq!(d.process.inner().got, vec![0]);
        assert!(d.effects().contains(&Effect::SetTimer {
            timer: LinkTimer::Drain(NodeId(0)),
            after: Duration::ZERO
        }));
        d.fire(LinkTimer::Drain(NodeId(0)));
        assert_eq!(d.process.inner().got, vec![0, 1]);
        // A duplicate is discarded and acknowledged again, under the REACK kind.
        let sent = d.receive(0, data(7, 0, 0)).sent();
        assert_eq!(sent, ack(7, 0, true));
        assert_eq!(sent[0].1.kind(), REACK);
        assert_eq!(d.process.inner().got, vec![0, 1]);
        // A frame whose sender gave up earlier ones (base 5) is not held back for them.
        d.receive(0, data(7, 5, 5));
        assert_eq!(d.process.inner().got, vec![0, 1, 5]);
        // A new incarnation of the sender starts again from its base...
        d.receive(0, data(9, 0, 0));
        assert_eq!(d.process.inner().got, vec![0, 1, 5, 0]);
        // ...and a late frame of the old one is discarded.
        assert_eq!(d.receive(0, data(7, 6, 0)).sent(), ack(7, 6, true));
        assert_eq!(d.process.inner().got, vec![0, 1, 5, 0]);
        // Rule 7: so is a frame of a life before the newest heard, even one never seen (the
        // newer life's frames overtook it); it does not reset the link back.
        d.receive(0, data(20, 0, 0));
        assert_eq!(d.process.inner().got, vec![0, 1, 5, 0, 0]);
        assert_eq!(d.receive(0, data(15, 0, 0)).sent(), ack(15, 0, true));
        d.receive(0, data(20, 1, 0));
        assert_eq!(d.process.inner().got, vec![0, 1, 5, 0, 0, 1]);
        // A frame meant for a previous life of this receiver is discarded.
        let stale = Frame::Data {
            inc: 20,
            seq: 2,
            base: 0,
            to: RINC + 1,
            again: false,
            msg: Ping(2),
        };
        assert_eq!(d.receive(0, stale).sent(), ack(20, 2, true));
        assert_eq!(d.process.inner().got, vec![0, 1, 5, 0, 0, 1]);
    }

    #[test]
    fn unacknowledged_frames_are_sent_again_with_backoff_then_given_up() {
        let peers = peers();
        let mut d = Driver::new(reliable(0, &peers), NodeId(0), &peers);
        d.start().input(3);
        let sent = d.sent();
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].1.kind(),
            "Ping",
            "a first transmission is the algorithm's"
        );
        assert_eq!(d.process.unacknowledged(), 1);
        let mut waits = Vec::new();
        for _ in 2..=MAX_TRIES {
            d.fire(LinkTimer::Retransmit(NodeId(1), 0));
            let sent = d.sent();
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].1.kind(), RETRANSMIT);
            waits.extend(d.effects().iter().filter_map(|e| match e {
                Effect::SetTimer { after, .. } => Some(after.as_millis()),
                _ => None,
            }));
        }
        assert_eq!(&waits[..4], &[10, 20, 40, 40]);
        d.fire(LinkTimer::Retransmit(NodeId(1), 0));
        assert!(d.sent().is_empty(), "given up after {MAX_TRIES} sends");
        assert_eq!(d.process.unacknowledged(), 0);
        // The next frame tells the receiver not to wait for the one given up.
        d.input(4);
        assert!(matches!(
            d.sent()[0].1,
            Frame::Data {
                seq: 1,
                base: 1,
                ..
            }
        ));
        // An acknowledgement of another incarnation does not clear it; this one's does.
        let inc = d.process.inc;
        d.receive(
            1,
            Frame::Ack {
                inc: inc ^ 1,
                rinc: 5,
                seq: 1,
                dup: false,
            },
        );
        assert_eq!(d.process.unacknowledged(), 1);
        d.receive(
            1,
            Frame::Ack {
                inc,
                rinc: 5,
                seq: 1,
                dup: false,
            },
        );
        assert_eq!(d.process.unacknowledged(), 0);
        // Later frames are meant for the receiver's incarnation it acknowledged with.
        d.input(5);
        assert!(matches!(d.sent()[0].1, Frame::Data { seq: 2, to: 5, .. }));
        // Rule 7: a late acknowledgement from an older life of the receiver moves nothing back.
        d.receive(
            1,
            Frame::Ack {
                inc,
                rinc: 3,
                seq: 0,
                dup: true,
            },
        );
        assert_eq!(d.process.unacknowledged(), 1);
        d.input(6);
        assert!(matches!(d.sent()[0].1, Frame::Data { seq: 3, to: 5, .. }));
    }
}
