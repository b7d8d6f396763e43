//! The ring link: carries a ring algorithm's messages to the successor, skipping crashed ones.
//!
//! Source: seed 002 "Steps of the Ring Algorithm" ("if the successor is down, the process skips
//! to the next available running process in the ring"), seed 001 "Token-Ring Election
//! Algorithm" ("if the successor is down, the originating process sends the message to the next
//! process"), seed 003 "Ring Algorithm - Overview" ("processes are able to skip faulty systems:
//! instead of sending to process j, send to j + 1. Faulty systems are those that don't respond
//! in a fixed amount of time"). Rules:
//! 1. Every message of the wrapped algorithm travels as `Data` and is answered by an `Ack` from
//!    the process that received it.
//! 2. No `Ack` within T (`answer_timeout`): the receiver is taken for crashed and the message is
//!    sent to the receiver's successor instead, and so on around the ring.
//! 3. When every other process has been skipped, the message has come back to its sender, which
//!    receives it itself (a ring of one live process).
//!
//! Nothing is remembered about skipped processes: the next message tries the successor again,
//! so a recovered process is back in the ring at once. The link assumes reliable channels, as
//! the notes do (seed 001: "no messages are lost"): a lost message looks like a crashed
//! successor. Acknowledgements are counted under the kind "Ack", apart from the algorithm's own.

use super::nested;
use distsync_core::election::{self, Election, Input, Output};
use distsync_core::{
    Algorithm, Ctx, Effect, EffectOf, Message, NodeId, ParamError, Params, Peers, Process,
};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::any::Any;
use std::cell::Cell;
use std::time::Duration;

/// A wrapped message, or the acknowledgement of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LinkMsg<M> {
    /// A message of the ring algorithm. `inc` (the sender's incarnation: its start time) and
    /// `seq` name it for the acknowledgement.
    Data { inc: u64, seq: u64, msg: M },
    /// "Received": the receiver is alive.
    Ack { inc: u64, seq: u64 },
}

/// The kind acknowledgements are counted under.
pub const ACK: &str = "Ack";

impl<M: Message> Message for LinkMsg<M> {
    fn kind(&self) -> &'static str {
        match self {
            LinkMsg::Data { msg, .. } => msg.kind(),
            LinkMsg::Ack { .. } => ACK,
        }
    }
}

/// The wrapped algorithm's timers, and T for each unacknowledged message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LinkTimer<T> {
    /// A timer of the ring algorithm.
    Inner(T),
    /// T for message `seq`.
    Ack(u64),
}

thread_local! {
    /// The wrapped algorithm's effects of one handler call, carried out right after it: one
    /// list per thread, lent to each call ([`RingLink::run`]) and given back emptied, of the
    /// type of the ring link that lent it last (another type's is replaced).
    static EFFECTS: Cell<Option<Box<dyn Any>>> = const { Cell::new(None) };
}

/// A message sent and not yet acknowledged: its `seq`, to whom, and what.
type Unacked<M> = (u64, (NodeId, M));

/// A ring algorithm `A` whose sends skip crashed successors.
#[derive(Clone, Debug, Serialize)]
pub struct RingLink<A: Process> {
    inner: A,
    id: NodeId,
    #[serde(skip)]
    t: Duration,
    incarnation: u64,
    next_seq: u64,
    /// Messages sent and not yet acknowledged, by `seq` (increasing: each is sent after the
    /// last): to whom, and what. Rarely more than one or two at once, so a short list (it
    /// writes and hashes as the map it stands for: `[seq, [to, msg]]` pairs in `seq` order),
    /// kept in the process's own state up to two (at a million processes, reading a list kept
    /// elsewhere in memory for every acknowledgement was a cache miss each).
    unacked: SmallVec<[Unacked<A::Msg>; 2]>,
}

// The state, for the checker's fingerprints.
impl<A: Process + std::hash::Hash> std::hash::Hash for RingLink<A> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let link = (self.id, self.t, self.incarnation, self.next_seq);
        (&self.inner, link, &self.unacked).hash(state);
    }
}

impl<A: Election + 'static> Algorithm for RingLink<A> {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        A::validate(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        RingLink {
            inner: A::new(id, peers, params),
            id,
            t: election::answer_timeout(params),
            incarnation: 0,
            next_seq: 0,
            unacked: SmallVec::new(),
        }
    }
}

impl<A: Election + 'static> Election for RingLink<A> {
    fn leader(&self) -> Option<NodeId> {
        self.inner.leader()
    }
    fn electing(&self) -> bool {
        self.inner.electing()
    }
    fn pending(&self) -> bool {
        !self.unacked.is_empty() || self.inner.pending()
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

impl<A: Election + 'static> Process for RingLink<A> {
    type Msg = LinkMsg<A::Msg>;
    type Input = Input;
    type Output = Output;
    type Timer = LinkTimer<A::Timer>;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // Acknowledgements still in flight from before a crash must not match new messages.
        self.incarnation = ctx.now().as_nanos();
        self.run(ctx, |a, c| a.on_start(c));
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        self.run(ctx, |a, c| a.on_input(input, c));
    }

    fn on_message(&mut self, from: NodeId, msg: Self::Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 1.
            LinkMsg::Data { inc, seq, msg } => {
                ctx.send(from, LinkMsg::Ack { inc, seq });
                self.run(ctx, |a, c| a.on_message(from, msg, c));
            }
            LinkMsg::Ack { inc, seq } => {
                if inc == self.incarnation && self.take_unacked(seq).is_some() {
                    ctx.cancel_timer(LinkTimer::Ack(seq));
                }
            }
        }
    }

    fn on_timer(&mut self, timer: Self::Timer, ctx: &mut Ctx<'_, Self>) {
        match timer {
            LinkTimer::Inner(t) => self.run(ctx, |a, c| a.on_timer(t, c)),
            // Rule 2.
            LinkTimer::Ack(seq) => {
                if let Some((to, msg)) = self.take_unacked(seq) {
                    let next = ctx.peers().successor(to);
                    if next == self.id {
                        // Rule 3.
                        let me = self.id;
                        self.run(ctx, |a, c| a.on_message(me, msg, c));
                    } else {
                        self.send(next, msg, ctx);
                    }
                }
            }
        }
    }
}

impl<A: Election + 'static> RingLink<A> {
    /// Runs a handler of the ring algorithm and carries out what it asked.
    fn run(&mut self, ctx: &mut Ctx<'_, Self>, handler: impl FnOnce(&mut A, &mut Ctx<'_, A>)) {
        // The thread's list, not one kept per process (at a million processes a kept one is
        // 144 MB, and the thread's is in cache where a process's own is not) nor a fresh one
        // each call (its allocation, growth and release were about 60 instructions of a
        // chang-roberts event, 5% of them).
        let mut list: Box<Vec<EffectOf<A>>> = EFFECTS
            .take()
            .and_then(|lent| lent.downcast().ok())
            .unwrap_or_default();
        *list = nested(ctx, &mut self.inner, &mut list, handler);
        for effect in list.drain(..) {
            match effect {
                Effect::Send { to, msg } => self.send(to, msg, ctx),
                Effect::SetTimer { timer, after } => ctx.set_timer(LinkTimer::Inner(timer), after),
                Effect::CancelTimer { timer } => ctx.cancel_timer(LinkTimer::Inner(timer)),
                Effect::Output(o) => ctx.output(o),
            }
        }
        EFFECTS.set(Some(list));
    }

    fn send(&mut self, to: NodeId, msg: A::Msg, ctx: &mut Ctx<'_, Self>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unacked.push((seq, (to, msg.clone())));
        ctx.send(
            to,
            LinkMsg::Data {
                inc: self.incarnation,
                seq,
                msg,
            },
        );
        ctx.set_timer(LinkTimer::Ack(seq), self.t);
    }

    /// Takes message `seq` out of the unacknowledged ones, if it is there.
    fn take_unacked(&mut self, seq: u64) -> Option<(NodeId, A::Msg)> {
        let i = self.unacked.iter().position(|(s, _)| *s == seq)?;
        let (_, taken) = self.unacked.remove(i);
        if self.unacked.spilled() && self.unacked.len() <= self.unacked.inline_size() {
            // Back into the process's own state once it fits (a list left elsewhere in memory
            // would be a cache miss for every later acknowledgement of this process).
            self.unacked.shrink_to_fit();
        }
        Some(taken)
    }

    /// The wrapped algorithm.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::peterson::Msg;
    use crate::election::testkit::Net;
    use crate::election::Peterson;
    use distsync_core::testing::Driver;

    fn data(seq: u64, msg: Msg) -> LinkMsg<Msg> {
        LinkMsg::Data { inc: 0, seq, msg }
    }

    /// Three messages unacknowledged at once go beyond the two kept in the state; the first
    /// acknowledgement brings the other two back into it, in order.
    #[test]
    fn unacknowledged_messages_come_back_into_the_state_once_they_fit() {
        let peers = Peers::range(4);
        let link = RingLink::<Peterson>::new(NodeId(2), &peers, &Params::default());
        let mut p = Driver::new(link, NodeId(2), &peers);
        p.start().input(Input::Start); // sends its tid (seq 0)
        let (epoch, round) = (1, 1);
        p.receive(
            1,
            data(
                0,
                Msg::Tid {
                    epoch,
                    round,
                    tid: NodeId(3),
                },
            ),
        ); // sends max (seq 1)
        p.receive(
            1,
            data(
                1,
                Msg::Max {
                    epoch,
                    round,
                    max: NodeId(3),
                },
            ),
        ); // round 2 (seq 2)
        assert_eq!(p.process.unacked.len(), 3);
        assert!(p.process.unacked.spilled());
        p.receive(3, LinkMsg::Ack { inc: 0, seq: 0 });
        assert!(!p.process.unacked.spilled());
        let seqs: Vec<u64> = p.process.unacked.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, vec![1, 2]);
    }

    /// Peterson over the link: the process holding the largest value crashes mid-election: the
    /// election stalls, T' starts epoch 2 without it, and 7 is elected; 9 recovers, its old
    /// epoch reaches a process outside any election, a new epoch starts and 9 takes over.
    #[test]
    fn crash_mid_election_then_recovery() {
        let order = [5, 2, 9, 1, 7, 3];
        let mut net: Net<RingLink<Peterson>> = Net::new(&order, Params::default());
        for id in order {
            net.start(id);
        }
        net.run_until(distsync_core::Time::from_nanos(1_500_000));
        net.crash(9);
        net.run(100_000);
        net.assert_all_agree_on(7);
        net.recover(9);
        net.run(100_000);
        net.assert_all_agree_on(9);
    }
}
