//! Suzuki-Kasami 1985: broadcast requests with sequence numbers; the token carries the last
//! served sequence number of every site and a queue of waiting sites.
//!
//! Source: seed 003 "Suzuki-Kasami's Algorithm", steps 1-6 and the five-process example (the
//! notes' `req` is `RN` here, `last` is `LN`, `Q` is the token queue). Positions are the
//! membership order. Rules:
//! 1. A site S_i without the token that wants the CS increments RN_i[i] and sends
//!    REQUEST (i, sn) to all other sites, sn the new RN_i[i]. (With the idle token it enters.)
//! 2. On REQUEST (i, sn), S_j sets RN_j[i] := max(RN_j[i], sn); if S_j has the idle token and
//!    RN_j[i] = LN[i] + 1, it sends the token to S_i. An outdated request (sn not above LN[i])
//!    is thereby ignored.
//! 3. S_i executes the CS when it has the token.
//! 4. On leaving the CS: LN[i] := RN_i[i].
//! 5. Every S_j not in the token queue with RN_i[j] = LN[j] + 1 is appended to it, in
//!    increasing position (the example's order).
//! 6. If the queue is then not empty, its head is removed and sent the token; otherwise S_i
//!    keeps the idle token.
//!
//! N messages per entry (N-1 REQUEST, one token), 0 when holding the idle token;
//! synchronization delay T. FIFO channels are not needed.
// The rules above write vectors as the notes do (V[i]), not as links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The token: LN and Q.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Token {
    /// LN[j]: the sequence number of site j's latest visit to the CS (the notes' `last`).
    pub ln: Vec<u64>,
    /// Q: the sites waiting for the token, by id.
    pub q: VecDeque<NodeId>,
}

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST (i, sn); i is the sender.
    Request { sn: u64 },
    /// The token.
    Token(Token),
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Token(_) => "Token",
        }
    }
}

/// One site S_i.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct SuzukiKasami {
    /// This site's position in the membership order.
    i: usize,
    /// RN_i[j]: the largest sequence number received from site j (the notes' `req`).
    rn: Vec<u64>,
    /// The token, while this site holds it.
    token: Option<Token>,
    /// A request is outstanding (rule 1) and the token has not come yet.
    requesting: bool,
    in_cs: bool,
    /// This site is the initial holder.
    initial_holder: bool,
}

impl Algorithm for SuzukiKasami {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        super::validate_holder(params, peers)
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        SuzukiKasami {
            i: peers.index_of(id),
            rn: vec![0; peers.len()],
            token: None,
            requesting: false,
            in_cs: false,
            initial_holder: id == super::initial_holder(peers, params),
        }
    }
}

impl MutualExclusion for SuzukiKasami {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for SuzukiKasami {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // A recovered site does not mint a second token.
        if self.initial_holder && !ctx.recovered() {
            self.token = Some(Token {
                ln: vec![0; self.rn.len()],
                q: VecDeque::new(),
            });
        }
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request if self.in_cs || self.requesting => {}
            // The idle token is here: enter without messages.
            Input::Request if self.token.is_some() => self.enter(ctx),
            // Rule 1.
            Input::Request => {
                ctx.rule("1");
                self.rn[self.i] += 1;
                self.requesting = true;
                ctx.broadcast(Msg::Request {
                    sn: self.rn[self.i],
                });
            }
            Input::Release if self.in_cs => {
                self.in_cs = false;
                ctx.output(Output::Exit);
                if self.token.is_some() {
                    ctx.rule("4");
                    ctx.rule("5");
                }
                self.update_token(ctx.peers());
                self.pass_token(ctx);
            }
            Input::Release => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2.
            Msg::Request { sn } => {
                ctx.rule("2");
                let Some(j) = ctx.peers().position(from) else {
                    return;
                };
                self.rn[j] = self.rn[j].max(sn);
                let idle = !self.in_cs && !self.requesting;
                if let Some(token) = self.token.as_ref().filter(|_| idle) {
                    if self.rn[j] == token.ln[j] + 1 {
                        let token = self.token.take().expect("held");
                        ctx.send(from, Msg::Token(token));
                    }
                }
            }
            // Rule 3.
            Msg::Token(token) => {
                ctx.rule("3");
                self.token = Some(token);
                if self.requesting {
                    self.requesting = false;
                    self.enter(ctx);
                }
            }
        }
    }
}

impl SuzukiKasami {
    fn enter(&mut self, ctx: &mut Ctx<'_, Self>) {
        self.in_cs = true;
        ctx.output(Output::Enter);
    }

    /// Rules 4 and 5.
    fn update_token(&mut self, peers: &Peers) {
        let Some(token) = self.token.as_mut() else {
            return;
        };
        token.ln[self.i] = self.rn[self.i];
        for (j, &site) in peers.ids().iter().enumerate() {
            if self.rn[j] == token.ln[j] + 1 && !token.q.contains(&site) {
                token.q.push_back(site);
            }
        }
    }

    /// Rule 6.
    fn pass_token(&mut self, ctx: &mut Ctx<'_, Self>) {
        if let Some(token) = self.token.as_mut() {
            if let Some(next) = token.q.pop_front() {
                ctx.rule("6");
                let token = self.token.take().expect("held");
                ctx.send(next, Msg::Token(token));
            }
        }
    }

    /// RN (the notes' `req`), by membership position.
    pub fn rn(&self) -> &[u64] {
        &self.rn
    }

    /// The token, if this site holds it.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn site(id: u32, peers: &Peers) -> Driver<'_, SuzukiKasami> {
        let mut d = Driver::new(
            SuzukiKasami::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        );
        d.start();
        d
    }

    fn q(ids: &[u32]) -> VecDeque<NodeId> {
        ids.iter().map(|&i| NodeId(i)).collect()
    }

    #[test]
    fn rule_1_increments_rn_and_broadcasts_the_holder_enters_silently() {
        let peers = Peers::range(3);
        let mut s1 = site(1, &peers);
        s1.input(Input::Request);
        assert_eq!(s1.process.rn(), &[0, 1, 0]);
        assert_eq!(
            s1.sent(),
            vec![
                (NodeId(0), Msg::Request { sn: 1 }),
                (NodeId(2), Msg::Request { sn: 1 })
            ]
        );
        let mut s0 = site(0, &peers);
        s0.input(Input::Request);
        assert!(s0.sent().is_empty());
        assert_eq!(s0.outputs(), vec![Output::Enter]);
        assert_eq!(
            s0.process.rn(),
            &[0, 0, 0],
            "no request, no sequence number"
        );
    }

    #[test]
    fn rule_2_the_idle_token_goes_only_to_a_current_request() {
        let peers = Peers::range(3);
        let mut s0 = site(0, &peers);
        s0.receive(2, Msg::Request { sn: 2 }); // RN[2] = 2 but LN[2] + 1 = 1: not current
        assert!(s0.sent().is_empty());
        assert_eq!(s0.process.rn(), &[0, 0, 2]);
        s0.receive(2, Msg::Request { sn: 1 }); // outdated: RN keeps the max
        assert_eq!(s0.process.rn(), &[0, 0, 2]);
        assert!(s0.sent().is_empty());
        s0.receive(1, Msg::Request { sn: 1 });
        assert_eq!(
            s0.sent(),
            vec![(
                NodeId(1),
                Msg::Token(Token {
                    ln: vec![0, 0, 0],
                    q: q(&[])
                })
            )]
        );
        assert!(s0.process.token().is_none());
        // A holder inside the CS does not give the token away.
        let mut s0 = site(0, &peers);
        s0.input(Input::Request);
        s0.receive(1, Msg::Request { sn: 1 });
        assert!(s0.sent().is_empty());
    }

    #[test]
    fn rules_3_to_6_enter_with_the_token_update_ln_queue_and_pass() {
        let peers = Peers::range(4);
        let mut s2 = site(2, &peers);
        s2.input(Input::Request);
        s2.receive(3, Msg::Request { sn: 1 });
        s2.receive(0, Msg::Request { sn: 4 });
        s2.receive(
            1,
            Msg::Token(Token {
                ln: vec![3, 1, 0, 0],
                q: q(&[3]),
            }),
        );
        assert_eq!(s2.outputs(), vec![Output::Enter]);
        s2.input(Input::Release);
        // LN[2] := RN[2] = 1; 0 (RN 4 = LN 3 + 1) is appended, 3 is already queued;
        // the head, 3, gets the token.
        assert_eq!(
            s2.sent(),
            vec![(
                NodeId(3),
                Msg::Token(Token {
                    ln: vec![3, 1, 1, 0],
                    q: q(&[0])
                })
            )]
        );
        // Nobody waiting: the token stays, idle.
        let mut s0 = site(0, &peers);
        s0.input(Input::Request);
        s0.input(Input::Release);
        assert!(s0.sent().is_empty());
        assert!(s0.process.token().is_some());
    }

    fn rns(p: &Pump<SuzukiKasami>) -> Vec<Vec<u64>> {
        p.procs.iter().map(|s| s.rn().to_vec()).collect()
    }

    fn holder(p: &Pump<SuzukiKasami>) -> (u32, Token) {
        let k = p
            .procs
            .iter()
            .position(|s| s.token().is_some())
            .expect("a holder");
        (k as u32, p.procs[k].token().unwrap().clone())
    }

    /// The state the holder's token has after rules 4 and 5, before rule 6 sends it.
    fn at_exit(p: &Pump<SuzukiKasami>, id: u32) -> Token {
        let mut probe = p.node(id).clone();
        probe.update_token(&p.peers);
        probe.token().unwrap().clone()
    }

    #[test]
    fn seed_003_five_process_example_step_by_step() {
        // The example starts with "process 0 has sent a request to all, and grabbed the token":
        // we reach that state by the rules, with the idle token at 4 sending it to 0.
        let params = Params {
            holder: Some(NodeId(4)),
            ..Params::default()
        };
        let mut p: Pump<SuzukiKasami> = Pump::new(&[0, 1, 2, 3, 4], &params);
        p.input(0, Input::Request).drain(100);
        assert_eq!(p.in_cs(), vec![NodeId(0)]);
        assert!(
            rns(&p).iter().all(|rn| rn == &[1, 0, 0, 0, 0]),
            "req=[1,0,0,0,0]"
        );
        assert_eq!(
            holder(&p),
            (
                0,
                Token {
                    ln: vec![0; 5],
                    q: q(&[])
                }
            ),
            "last=[0,0,0,0,0]"
        );

        // "1 & 2 send requests to enter CS": req=[1,1,1,0,0] everywhere, last unchanged.
        p.input(1, Input::Request)
            .input(2, Input::Request)
            .drain(100);
        assert!(rns(&p).iter().all(|rn| rn == &[1, 1, 1, 0, 0]));
        assert_eq!(
            holder(&p),
            (
                0,
                Token {
                    ln: vec![0; 5],
                    q: q(&[])
                }
            )
        );

        // "0 prepares to exit CS": last=[1,0,0,0,0], Q=(1,2).
        assert_eq!(
            at_exit(&p, 0),
            Token {
                ln: vec![1, 0, 0, 0, 0],
                q: q(&[1, 2])
            }
        );
        // "0 passes token (Q and last) to 1".
        p.input(0, Input::Release);
        assert_eq!(
            p.pending(0, 1),
            vec![Msg::Token(Token {
                ln: vec![1, 0, 0, 0, 0],
                q: q(&[2])
            })]
        );
        p.deliver(0, 1);
        assert_eq!(p.in_cs(), vec![NodeId(1)]);

        // "0 and 3 send requests": req=[2,1,1,1,0] everywhere.
        p.input(0, Input::Request)
            .input(3, Input::Request)
            .drain(100);
        assert!(
            rns(&p).iter().all(|rn| rn == &[2, 1, 1, 1, 0]),
            "{:?}",
            rns(&p)
        );
        assert_eq!(
            holder(&p),
            (
                1,
                Token {
                    ln: vec![1, 0, 0, 0, 0],
                    q: q(&[2])
                }
            )
        );
        // The figure shows Q=(2,0,3) at 1; by rules 4 and 5 that queue forms when 1 exits,
        // together with last[1] = 1 (the figure still shows last=[1,0,0,0,0] there).
        assert_eq!(
            at_exit(&p, 1),
            Token {
                ln: vec![1, 1, 0, 0, 0],
                q: q(&[2, 0, 3])
            }
        );

        // "1 sends token to 2".
        p.input(1, Input::Release);
        assert_eq!(
            p.pending(1, 2),
            vec![Msg::Token(Token {
                ln: vec![1, 1, 0, 0, 0],
                q: q(&[0, 3])
            })]
        );
        p.deliver(1, 2);
        assert_eq!(p.in_cs(), vec![NodeId(2)]);
        // And the rest is served in queue order: 0, then 3.
        p.input(2, Input::Release).drain(10);
        assert_eq!(p.in_cs(), vec![NodeId(0)]);
        p.input(0, Input::Release).drain(10);
        assert_eq!(p.in_cs(), vec![NodeId(3)]);
    }

    #[test]
    fn light_load_costs_n_without_the_token_and_0_with_the_idle_token() {
        for n in 1..=6u32 {
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<SuzukiKasami> = Pump::new(&ids, &Params::default());
            assert_eq!(p.serve_alone(0), 0, "N={n}: the holder");
            for id in (1..n).rev() {
                assert_eq!(p.serve_alone(id), n as usize, "N={n}: node {id}");
                assert_eq!(
                    p.serve_alone(id),
                    0,
                    "N={n}: node {id} holding the idle token"
                );
            }
        }
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_serve_everyone() {
        for seed in 0..200 {
            let mut p: Pump<SuzukiKasami> = Pump::new(&[0, 1, 2, 3, 4], &Params::default());
            assert_eq!(p.shake(seed, 4, false), 20);
        }
    }
}
