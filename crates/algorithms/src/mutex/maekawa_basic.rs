//! Maekawa 1985, basic form: permission from a quorum (request set) only, exactly as seed 003
//! states it, without deadlock handling. It can deadlock; `maekawa` adds FAILED, INQUIRE and
//! YIELD to prevent it.
//!
//! Source: seed 003 "Maekawa's algorithm" (request sets with `i ∈ S_i`, `S_i ∩ S_j ≠ ∅`, and the
//! rules below). Quorums come from [`quorum`](super::quorum) (`quorums = "plane" | "grid"`).
//! Rules:
//! 1. To enter, S_i sends REQUEST(i) to every site of its request set R_i.
//! 2. S_j, on REQUEST(i), returns a REPLY if it has not sent a REPLY since the last RELEASE it
//!    received; otherwise it queues the request (first come, first served).
//! 3. S_i enters the CS when it has a REPLY from every site of R_i.
//! 4. On leaving, S_i sends RELEASE(i) to every site of R_i.
//! 5. S_j, on RELEASE, sends a REPLY to the next site in its queue and deletes it from the queue;
//!    with the queue empty, it notes that no REPLY is outstanding.
//!
//! A site is a member of its own request set: its own REQUEST, REPLY and RELEASE to itself are
//! handled at once and are not messages, so an entry costs 3(K-1) messages for a quorum of K.
//! Two sites that each win a different member of the other's quorum first wait for each other
//! forever: that is the deadlock the notes leave open.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST(i); i is the sender.
    Request,
    /// REPLY: the sender's permission.
    Reply,
    /// RELEASE(i): the sender left the CS.
    Release,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request => "Request",
            Msg::Reply => "Reply",
            Msg::Release => "Release",
        }
    }
}

/// One site: a requester with request set R_i, and an arbiter for the sites whose request sets
/// contain it.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct MaekawaBasic {
    id: NodeId,
    /// R_i, this site included.
    request_set: Vec<NodeId>,
    /// The application's request is outstanding.
    requesting: bool,
    in_cs: bool,
    /// The sites of R_i whose REPLY has arrived.
    replies: BTreeSet<NodeId>,
    /// As arbiter: the site holding this site's REPLY since the last RELEASE.
    replied_to: Option<NodeId>,
    /// As arbiter: the requests waiting for the REPLY, first come first served.
    queue: VecDeque<NodeId>,
    /// Messages from this site to itself, handled before the handler returns.
    local: VecDeque<Msg>,
}

impl Algorithm for MaekawaBasic {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        super::quorum::for_params(peers, params).map(|_| ())
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let request_set = super::quorum::for_params(peers, params)
            .map(|q| q[peers.index_of(id)].clone())
            // `validate` refuses this; without it, asking everyone is still safe.
            .unwrap_or_else(|_| peers.ids().to_vec());
        MaekawaBasic {
            id,
            request_set,
            requesting: false,
            in_cs: false,
            replies: BTreeSet::new(),
            replied_to: None,
            queue: VecDeque::new(),
            local: VecDeque::new(),
        }
    }
}

impl MutualExclusion for MaekawaBasic {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for MaekawaBasic {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 1.
            Input::Request if !self.requesting => {
                ctx.rule("1");
                self.requesting = true;
                self.replies.clear();
                for m in self.request_set.clone() {
                    self.post(m, Msg::Request, ctx);
                }
            }
            // Rule 4.
            Input::Release if self.in_cs => {
                ctx.rule("4");
                self.in_cs = false;
                self.requesting = false;
                ctx.output(Output::Exit);
                for m in self.request_set.clone() {
                    self.post(m, Msg::Release, ctx);
                }
            }
            _ => {}
        }
        self.drain(ctx);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        self.handle(from, msg, ctx);
        self.drain(ctx);
    }
}

impl MaekawaBasic {
    fn handle(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2.
            Msg::Request => {
                ctx.rule("2");
                if self.replied_to.is_none() {
                    self.replied_to = Some(from);
                    self.post(from, Msg::Reply, ctx);
                } else {
                    self.queue.push_back(from);
                }
            }
            // Rule 3.
            Msg::Reply => {
                ctx.rule("3");
                if self.requesting && !self.in_cs {
                    self.replies.insert(from);
                    if self.request_set.iter().all(|m| self.replies.contains(m)) {
                        self.in_cs = true;
                        ctx.output(Output::Enter);
                    }
                }
            }
            // Rule 5.
            Msg::Release => {
                ctx.rule("5");
                if self.replied_to == Some(from) {
                    self.replied_to = self.queue.pop_front();
                    if let Some(next) = self.replied_to {
                        self.post(next, Msg::Reply, ctx);
                    }
                }
            }
        }
    }

    /// Sends, or handles locally what is addressed to this site itself.
    fn post(&mut self, to: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        if to == self.id {
            self.local.push_back(msg);
        } else {
            ctx.send(to, msg);
        }
    }

    fn drain(&mut self, ctx: &mut Ctx<'_, Self>) {
        while let Some(msg) = self.local.pop_front() {
            self.handle(self.id, msg, ctx);
        }
    }

    /// R_i, this site included.
    pub fn request_set(&self) -> &[NodeId] {
        &self.request_set
    }

    /// As arbiter: the site holding this site's REPLY, if any.
    pub fn replied_to(&self) -> Option<NodeId> {
        self.replied_to
    }

    /// As arbiter: the queued requests, first come first served.
    pub fn queue(&self) -> &VecDeque<NodeId> {
        &self.queue
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn site(id: u32, peers: &Peers) -> Driver<'_, MaekawaBasic> {
        Driver::new(
            MaekawaBasic::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    #[test]
    fn rules_1_and_3_request_the_quorum_and_enter_with_every_reply() {
        let peers = Peers::range(7);
        let mut s = site(0, &peers);
        let others: Vec<NodeId> = s
            .process
            .request_set()
            .iter()
            .copied()
            .filter(|&m| m != NodeId(0))
            .collect();
        assert_eq!(others.len(), 2, "plane quorums of 3 for N = 7");
        s.input(Input::Request);
        assert_eq!(
            s.sent(),
            others
                .iter()
                .map(|&m| (m, Msg::Request))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            s.process.replied_to(),
            Some(NodeId(0)),
            "its own arbiter replied at once"
        );
        s.receive(others[0].0, Msg::Reply);
        assert!(s.outputs().is_empty());
        s.receive(others[1].0, Msg::Reply);
        assert_eq!(s.outputs(), vec![Output::Enter]);
        // Rule 4: RELEASE to the others; its own arbiter is free again.
        s.input(Input::Release);
        assert_eq!(
            s.sent(),
            others
                .iter()
                .map(|&m| (m, Msg::Release))
                .collect::<Vec<_>>()
        );
        assert_eq!(s.process.replied_to(), None);
    }

    #[test]
    fn rules_2_and_5_one_reply_at_a_time_then_the_queue_in_arrival_order() {
        let peers = Peers::range(7);
        let mut j = site(3, &peers);
        j.receive(1, Msg::Request);
        assert_eq!(j.sent(), vec![(NodeId(1), Msg::Reply)]);
        j.receive(5, Msg::Request);
        j.receive(2, Msg::Request);
        assert!(j.sent().is_empty());
        assert_eq!(j.process.queue(), &VecDeque::from([NodeId(5), NodeId(2)]));
        j.receive(2, Msg::Release); // not the holder of the reply: nothing
        assert!(j.sent().is_empty());
        j.receive(1, Msg::Release);
        assert_eq!(j.sent(), vec![(NodeId(5), Msg::Reply)]);
        j.receive(5, Msg::Release);
        assert_eq!(j.sent(), vec![(NodeId(2), Msg::Reply)]);
        j.receive(2, Msg::Release);
        assert!(j.sent().is_empty());
        assert_eq!(j.process.replied_to(), None);
    }

    #[test]
    fn light_load_costs_3_k_minus_1() {
        for (n, kind) in [
            (7, None),
            (13, None),
            (9, None),
            (7, Some(distsync_core::QuorumKind::Grid)),
        ] {
            let params = Params {
                quorums: kind,
                ..Params::default()
            };
            let ids: Vec<u32> = (0..n).collect();
            let mut p: Pump<MaekawaBasic> = Pump::new(&ids, &params);
            for id in 0..n {
                let k = p.node(id).request_set().len();
                assert_eq!(p.serve_alone(id), 3 * (k - 1), "N={n} node {id}");
            }
        }
    }

    #[test]
    fn three_sites_each_winning_a_member_of_the_others_quorum_deadlock() {
        let qs = super::super::quorum::quorums(7, distsync_core::QuorumKind::Plane).unwrap();
        let t = super::super::pump::deadlock_triple(&qs)
            .expect("the plane of order 2 has such a triple");
        let mut p: Pump<MaekawaBasic> = Pump::deadlock_script(7, t);
        p.drain(1000);
        assert!(p.in_flight.is_empty());
        assert!(p.in_cs().is_empty(), "nobody can enter: {t:?}");
        let [a, b, c, x, y, z] = t;
        assert_eq!(p.node(x).replied_to(), Some(NodeId(a)));
        assert_eq!(p.node(y).replied_to(), Some(NodeId(b)));
        assert_eq!(p.node(z).replied_to(), Some(NodeId(c)));
    }

    #[test]
    fn without_contention_for_the_same_arbiters_random_orders_are_safe() {
        // Safety holds in every order; only liveness is at risk. Sequential requests (one site
        // at a time) always complete.
        for seed in 0..50 {
            let mut p: Pump<MaekawaBasic> = Pump::new(&[0, 1, 2, 3, 4, 5, 6], &Params::default());
            for id in [seed % 7, (seed * 3 + 1) % 7, (seed * 5 + 2) % 7] {
                p.serve_alone(id as u32);
            }
        }
    }
}
