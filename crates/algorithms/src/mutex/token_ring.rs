//! Token ring: a single token circulates around a logical ring; its holder may enter the CS.
//!
//! Source: seed 000 "Token Ring Algorithm" (the algorithm), seed 001 "Token-Passing Mutual
//! Exclusion", seed 003 "Token Ring Algorithm". Rules:
//! 1. The token is initially given to one process (`holder`, by default the first id).
//! 2. The ring is the membership order: each process passes the token to its clockwise
//!    neighbour, the next id in that order.
//! 3. A process that receives the token and does not want the CS passes it on at once.
//! 4. A process that wants the CS waits for the token, keeps it, and enters.
//! 5. On leaving the CS it passes the token to its neighbour (one entry per visit: no starvation).
//!
//! The token circulates even when nobody wants it: unbounded messages per entry under light
//! load, 1 under heavy load; an entry waits 0 to N-1 passes (synchronization delay T..(N-1)T).
//! A lost token (its holder crashed) is not regenerated: a recovered process starts without it.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The token, passed to the clockwise neighbour.
    Token,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        "Token"
    }
}

/// One process of the ring.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct TokenRing {
    /// Whether this process holds the token now.
    token: bool,
    /// The application asked for the CS and has not left it yet.
    wants: bool,
    in_cs: bool,
    /// This process is the initial holder (rule 1).
    initial_holder: bool,
}

impl Algorithm for TokenRing {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        super::validate_holder(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        TokenRing {
            token: false,
            wants: false,
            in_cs: false,
            initial_holder: id == super::initial_holder(peers, params),
        }
    }
}

impl MutualExclusion for TokenRing {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for TokenRing {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // Rule 1; a recovered process does not mint a second token.
        if self.initial_holder && !ctx.recovered() {
            self.token = true;
            self.use_or_pass(ctx);
        }
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request if !self.wants => {
                self.wants = true;
                // Only a one-process ring keeps the token between visits.
                if self.token {
                    self.use_or_pass(ctx);
                }
            }
            // Rule 5.
            Input::Release if self.in_cs => {
                ctx.rule("5");
                self.in_cs = false;
                self.wants = false;
                ctx.output(Output::Exit);
                self.pass(ctx);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Token => {
                self.token = true;
                self.use_or_pass(ctx);
            }
        }
    }
}

impl TokenRing {
    /// Rules 3 and 4.
    fn use_or_pass(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.wants {
            if !self.in_cs {
                ctx.rule("4");
                self.in_cs = true;
                ctx.output(Output::Enter);
            }
        } else {
            ctx.rule("3");
            self.pass(ctx);
        }
    }

    /// Rule 2: hand the token to the clockwise neighbour (a ring of one keeps it).
    fn pass(&mut self, ctx: &mut Ctx<'_, Self>) {
        let next = ctx.peers().successor(ctx.id());
        if next != ctx.id() {
            ctx.rule("2");
            self.token = false;
            ctx.send(next, Msg::Token);
        }
    }

    /// Whether this process holds the token.
    pub fn has_token(&self) -> bool {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn node<'a>(id: u32, peers: &'a Peers, params: &Params) -> Driver<'a, TokenRing> {
        Driver::new(TokenRing::new(NodeId(id), peers, params), NodeId(id), peers)
    }

    #[test]
    fn the_initial_holder_passes_the_unwanted_token_clockwise() {
        let peers = Peers::new([3, 5, 0].map(NodeId).to_vec()).unwrap();
        let mut a = node(3, &peers, &Params::default());
        a.start();
        assert_eq!(
            a.sent(),
            vec![(NodeId(5), Msg::Token)],
            "3 is first, 5 next"
        );
        assert!(!a.process.has_token());
        let mut b = node(5, &peers, &Params::default());
        b.start();
        assert!(b.sent().is_empty(), "only the holder starts with the token");
        // The last in the ring passes to the first.
        let mut c = node(0, &peers, &Params::default());
        c.receive(5, Msg::Token);
        assert_eq!(c.sent(), vec![(NodeId(3), Msg::Token)]);
    }

    #[test]
    fn a_requester_keeps_the_token_enters_and_passes_it_on_exit() {
        let peers = Peers::range(3);
        let mut s = node(1, &peers, &Params::default());
        s.input(Input::Request);
        assert!(
            s.sent().is_empty() && s.outputs().is_empty(),
            "waits for the token"
        );
        s.receive(0, Msg::Token);
        assert_eq!(s.outputs(), vec![Output::Enter]);
        assert!(s.sent().is_empty(), "keeps the token inside");
        s.input(Input::Release);
        assert_eq!(s.outputs(), vec![Output::Exit]);
        assert_eq!(s.sent(), vec![(NodeId(2), Msg::Token)]);
        // Not wanting it any more, the next visit passes straight through.
        s.receive(0, Msg::Token);
        assert_eq!(s.sent(), vec![(NodeId(2), Msg::Token)]);
    }

    #[test]
    fn holder_comes_from_the_parameters_and_is_checked() {
        let peers = Peers::range(3);
        let params = Params {
            holder: Some(NodeId(2)),
            ..Params::default()
        };
        let mut s = node(2, &peers, &params);
        s.start();
        assert_eq!(s.sent(), vec![(NodeId(0), Msg::Token)]);
        let bad = Params {
            holder: Some(NodeId(9)),
            ..Params::default()
        };
        assert_eq!(
            TokenRing::validate(&bad, &peers).unwrap_err().field,
            "holder"
        );
    }

    #[test]
    fn a_ring_of_one_keeps_its_token() {
        let peers = Peers::range(1);
        let mut s = node(0, &peers, &Params::default());
        s.start();
        assert!(s.sent().is_empty());
        s.input(Input::Request);
        assert_eq!(s.outputs(), vec![Output::Enter]);
        s.input(Input::Release);
        assert!(s.sent().is_empty());
    }

    #[test]
    fn heavy_load_costs_one_message_per_entry_and_random_orders_stay_safe() {
        // Every process wants the CS: each pass of the token is one entry.
        let mut p: Pump<TokenRing> = Pump::new(&[0, 1, 2, 3], &Params::default());
        for id in 0..4 {
            p.input(id, Input::Request);
        }
        p.deliver_at(0); // the token from 0 reaches 1
        assert_eq!(p.in_cs(), vec![NodeId(1)]);
        let mut entries = 1;
        for next in [2, 3, 0] {
            let before = p.sent();
            let cur = p.in_cs()[0].0;
            p.input(cur, Input::Release);
            p.input(cur, Input::Request);
            p.deliver_at(0);
            assert_eq!(p.in_cs(), vec![NodeId(next)]);
            assert_eq!(p.sent() - before, 1);
            entries += 1;
        }
        assert_eq!(entries, 4);
        for seed in 0..40 {
            let mut p: Pump<TokenRing> = Pump::new(&[4, 1, 7], &Params::default());
            assert_eq!(p.shake(seed, 5, false), 15);
        }
    }
}
