//! Ricart-Agrawala second algorithm: the token carries, for every process, the logical time of
//! its last holding; requests are broadcast with Lamport timestamps.
//!
//! Source: seed 000 "Ricart-Agrawala Second Algorithm", rules RI1-RR2. Positions k = 1 .. n are
//! the membership order. Rules:
//! - RI1: state := NO-TOKEN for every process except the initial holder (`holder`, by default
//!   the first id), whose state := TOKEN-PRESENT (`state`).
//! - RI2: token[k] := 0 and request[k] := 0 for all k (`token`, `request`).
//! - RA1: to enter, if state = NO-TOKEN send REQUEST (T, i) to all others, T the local logical
//!   clock (`clock`), and wait for the token (`waiting`); then state := TOKEN-HELD and enter
//!   (`state`).
//! - RH1: on REQUEST (T, j): request[j] := max(request[j], T) (`request`).
//! - RH2: then, if state = TOKEN-PRESENT, release the resource (RR2) (`state`).
//! - RR1: on leaving the CS, state := TOKEN-PRESENT (`state`).
//! - RR2: for k in i+1 .. n, 1 .. i-1: if request[k] > token[k] then state := NO-TOKEN,
//!   token[i] := C_i (the local logical clock), send the token to k, and stop searching
//!   (`request`, `token`, `state`).
//!
//! N messages per entry (N-1 REQUEST, one token) for a process without the token, 0 for one
//! holding it; synchronization delay T. FIFO channels are not needed: a REQUEST is outdated
//! exactly when its timestamp is not above the requester's token entry.
// The rules above write vectors as the notes do (V[i]), not as links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, ParamError, Params, Peers, Process,
};
use serde::{Deserialize, Serialize};

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST (T, j): the sender wants the token; T is its logical clock.
    Request { ts: u64 },
    /// The token: `token[k]` is the logical time of process k's last holding.
    Token { token: Vec<u64> },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Token { .. } => "Token",
        }
    }
}

/// A process's state with respect to the token, as the notes name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub enum State {
    /// NO-TOKEN.
    NoToken,
    /// TOKEN-PRESENT: holding the token without using it.
    TokenPresent,
    /// TOKEN-HELD: holding the token inside the CS.
    TokenHeld,
}

/// One process P_i.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct RicartAgrawalaToken {
    /// i: this process's position in the membership order.
    i: usize,
    /// C_i, the local logical clock.
    clock: LamportClock,
    state: State,
    /// request[k]: the timestamp of the last request received from process k.
    request: Vec<u64>,
    /// The token array, while this process holds the token.
    token: Option<Vec<u64>>,
    /// RA1: a REQUEST was sent and the token has not come yet.
    waiting: bool,
    /// This process is the initial holder (RI1).
    initial_holder: bool,
}

impl Algorithm for RicartAgrawalaToken {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        super::validate_holder(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let n = peers.len();
        RicartAgrawalaToken {
            i: peers.index_of(id),
            clock: LamportClock::default(),
            state: State::NoToken,
            request: vec![0; n],
            token: None,
            waiting: false,
            initial_holder: id == super::initial_holder(peers, params),
        }
    }
}

impl MutualExclusion for RicartAgrawalaToken {
    fn in_critical_section(&self) -> bool {
        self.state == State::TokenHeld
    }
}

impl Process for RicartAgrawalaToken {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // RI1 and RI2. A recovered process does not mint a second token.
        if self.initial_holder && !ctx.recovered() {
            ctx.rule("RI1");
            ctx.rule("RI2");
            self.state = State::TokenPresent;
            self.token = Some(vec![0; self.request.len()]);
        }
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // RA1.
            Input::Request if self.state == State::TokenPresent => self.enter(ctx),
            Input::Request if self.state == State::NoToken && !self.waiting => {
                let ts = self.clock.tick();
                self.waiting = true;
                ctx.rule("RA1");
                ctx.broadcast(Msg::Request { ts });
            }
            // RR1, then RR2.
            Input::Release if self.state == State::TokenHeld => {
                self.state = State::TokenPresent;
                ctx.rule("RR1");
                ctx.output(Output::Exit);
                self.release(ctx);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Request { ts } => {
                self.clock.observe(ts);
                // RH1.
                ctx.rule("RH1");
                if let Some(j) = ctx.peers().position(from) {
                    self.request[j] = self.request[j].max(ts);
                }
                // RH2.
                if self.state == State::TokenPresent {
                    ctx.rule("RH2");
                    self.release(ctx);
                }
            }
            Msg::Token { token } => {
                self.token = Some(token);
                if self.waiting {
                    self.waiting = false;
                    self.enter(ctx);
                } else {
                    // Not asked for (cannot happen with one token): hold it like an idle holder.
                    self.state = State::TokenPresent;
                    self.release(ctx);
                }
            }
        }
    }
}

impl RicartAgrawalaToken {
    /// RA1, second half: state := TOKEN-HELD, enter.
    fn enter(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.state = State::TokenHeld;
        ctx.rule("RA1");
        ctx.output(Output::Enter);
    }

    /// RR2: pass the token to the first process after i with a pending request.
    fn release(&mut self, ctx: &mut Ctx<'_, Self>) {
        let n = self.request.len();
        let Some(token) = self.token.as_mut() else {
            return;
        };
        ctx.rule("RR2");
        let next = (1..n)
            .map(|d| (self.i + d) % n)
            .find(|&k| self.request[k] > token[k]);
        if let Some(k) = next {
            self.state = State::NoToken;
            token[self.i] = self.clock.value();
            let token = self.token.take().expect("held");
            ctx.send(ctx.peers().ids()[k], Msg::Token { token });
        }
    }

    /// The state with respect to the token.
    pub fn state(&self) -> State {
        self.state
    }

    /// request[k], by membership position.
    pub fn request_array(&self) -> &[u64] {
        &self.request
    }

    /// The token array, if this process holds the token.
    pub fn token_array(&self) -> Option<&[u64]> {
        self.token.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn process(id: u32, peers: &Peers) -> Driver<'_, RicartAgrawalaToken> {
        let mut d = Driver::new(
            RicartAgrawalaToken::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        );
        d.start();
        d
    }

    #[test]
    fn ri1_ri2_only_the_holder_starts_with_the_token_all_zero() {
        let peers = Peers::range(3);
        let p0 = process(0, &peers);
        assert_eq!(p0.process.state(), State::TokenPresent);
        assert_eq!(p0.process.token_array(), Some(&[0, 0, 0][..]));
        assert_eq!(p0.process.request_array(), &[0, 0, 0]);
        let p1 = process(1, &peers);
        assert_eq!(p1.process.state(), State::NoToken);
        assert_eq!(p1.process.token_array(), None);
    }

    #[test]
    fn ra1_holder_enters_without_messages_others_broadcast_and_wait() {
        let peers = Peers::range(3);
        let mut p0 = process(0, &peers);
        p0.input(Input::Request);
        assert!(p0.sent().is_empty());
        assert_eq!(p0.outputs(), vec![Output::Enter]);
        assert_eq!(p0.process.state(), State::TokenHeld);

        let mut p1 = process(1, &peers);
        p1.input(Input::Request);
        assert_eq!(
            p1.sent(),
            vec![
                (NodeId(0), Msg::Request { ts: 1 }),
                (NodeId(2), Msg::Request { ts: 1 })
            ]
        );
        assert!(p1.outputs().is_empty());
        p1.receive(
            0,
            Msg::Token {
                token: vec![3, 0, 0],
            },
        );
        assert_eq!(p1.outputs(), vec![Output::Enter]);
        assert_eq!(p1.process.state(), State::TokenHeld);
    }

    #[test]
    fn rh1_keeps_the_latest_request_rh2_an_idle_holder_passes_at_once() {
        let peers = Peers::range(3);
        let mut p0 = process(0, &peers);
        p0.input(Input::Request); // TOKEN-HELD
        p0.receive(2, Msg::Request { ts: 4 });
        p0.receive(2, Msg::Request { ts: 2 }); // an older one arriving late
        assert_eq!(p0.process.request_array(), &[0, 0, 4]);
        assert!(p0.sent().is_empty(), "inside the CS: no RH2");
        // RR1 + RR2: the token goes to 2 with token[0] = C_0 = max(max(0, 4) + 1, 2) + 1 = 6.
        p0.input(Input::Release);
        assert_eq!(
            p0.sent(),
            vec![(
                NodeId(2),
                Msg::Token {
                    token: vec![6, 0, 0]
                }
            )]
        );
        assert_eq!(p0.process.state(), State::NoToken);

        let mut idle = process(0, &peers);
        idle.receive(1, Msg::Request { ts: 1 });
        assert_eq!(
            idle.sent(),
            vec![(
                NodeId(1),
                Msg::Token {
                    token: vec![2, 0, 0]
                }
            )]
        );
    }

    #[test]
    fn rr2_searches_i_plus_1_to_n_then_1_to_i_minus_1_and_skips_served_requests() {
        let peers = Peers::range(5);
        let mut p2 = process(2, &peers);
        p2.receive(1, Msg::Request { ts: 3 });
        p2.receive(0, Msg::Request { ts: 3 });
        p2.receive(4, Msg::Request { ts: 2 });
        p2.input(Input::Request);
        p2.receive(
            3,
            Msg::Token {
                token: vec![3, 1, 0, 0, 0],
            },
        );
        assert_eq!(p2.outputs(), vec![Output::Enter]);
        p2.input(Input::Release);
        // 3 has no request; 4 asked at 2 > token[4] = 0: 4 comes first, before 0 and 1.
        let sent = p2.sent();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, NodeId(4));
        // With 4 served, 0's request at 3 is not above token[0] = 3 (served), 1's is: 1 next.
        let mut p2 = process(2, &peers);
        p2.receive(1, Msg::Request { ts: 3 });
        p2.receive(0, Msg::Request { ts: 3 });
        p2.input(Input::Request);
        p2.receive(
            4,
            Msg::Token {
                token: vec![3, 1, 0, 0, 9],
            },
        );
        p2.input(Input::Release);
        assert_eq!(p2.sent()[0].0, NodeId(1));
        // Nobody waiting: RR2 finds no k and the holder keeps the token (TOKEN-PRESENT).
        let mut p2 = process(2, &peers);
        p2.input(Input::Request);
        p2.receive(4, Msg::Token { token: vec![0; 5] });
        p2.input(Input::Release);
        assert!(p2.sent().is_empty());
        assert_eq!(p2.process.state(), State::TokenPresent);
    }

    #[test]
    fn light_load_costs_n_without_the_token_and_0_with_it() {
        for n in 1..=6u32 {
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<RicartAgrawalaToken> = Pump::new(&ids, &Params::default());
            assert_eq!(p.serve_alone(0), 0, "N={n}: the holder");
            for id in 1..n {
                assert_eq!(
                    p.serve_alone(id),
                    n as usize,
                    "N={n}: node {id} without the token"
                );
                assert_eq!(
                    p.serve_alone(id),
                    0,
                    "N={n}: node {id} again, now holding it"
                );
            }
        }
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_serve_everyone() {
        for seed in 0..200 {
            let mut p: Pump<RicartAgrawalaToken> = Pump::new(&[0, 1, 2, 3, 4], &Params::default());
            assert_eq!(p.shake(seed, 4, false), 20);
        }
    }
}
