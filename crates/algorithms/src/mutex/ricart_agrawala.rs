//! Ricart-Agrawala 1981: permission from all, with deferred replies.
//!
//! Source: seed 000 "The Ricart-Agrawala Algorithm", seed 001 "Ricart & Agrawala's Algorithm",
//! seed 003 "Ricart-Agrawala Algorithm" steps 1-4. Rules:
//! 1. To request: send a timestamped REQUEST (ts, i) to every other site (`request`).
//! 2. On REQUEST (ts, j): reply at once unless inside the CS (`in_cs`), or requesting with a
//!    request (`request`) earlier than (ts, j) by (timestamp, id); otherwise defer the reply
//!    (`deferred_replies`).
//! 3. Enter the CS (`in_cs`) with a REPLY from every other site (`replied`, `replies_missing`).
//! 4. On exit, send the deferred replies (`deferred_replies`).
//!
//! 2(N-1) messages per entry; synchronization delay T; FIFO channels are not needed.
//!
//! A duplication rule, beyond the notes (which assume exactly-once channels): a REPLY echoes the
//! timestamp of the REQUEST it answers, and a site counts it only for that request, once per
//! site. A late or duplicated copy of a REPLY to an earlier request is then ignored instead of
//! counting as permission for the current one. A duplicated REQUEST is answered twice, which the
//! requester ignores the same way. On exactly-once channels the echo changes no message count.

use crate::site_bits::SiteBits;
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{
    Algorithm, Ctx, LamportClock, Message, NoTimer, NodeId, Params, Peers, Process, Stamp,
};
use serde::{Deserialize, Serialize};

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST (ts, i): the sender wants the CS; its id is the message's sender.
    Request { ts: u64 },
    /// REPLY: permission for the request stamped `ts` (the duplication rule).
    Reply { ts: u64 },
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Reply { .. } => "Reply",
        }
    }
}

/// One site's state.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct RicartAgrawala {
    id: NodeId,
    clock: LamportClock,
    /// Our outstanding request, from the Request input to the Exit.
    request: Option<Stamp>,
    in_cs: bool,
    /// `replied[k]`: the site at membership position k has replied to our current request.
    /// One bit per site: it prints, serializes and hashes as the `Vec<bool>` it stands for.
    replied: SiteBits,
    replies_missing: usize,
    /// Requests we answer only when we leave the CS: who, and the timestamp to echo.
    deferred_replies: Vec<(NodeId, u64)>,
}

impl Algorithm for RicartAgrawala {
    fn new(id: NodeId, peers: &Peers, _params: &Params) -> Self {
        RicartAgrawala {
            id,
            clock: LamportClock::default(),
            request: None,
            in_cs: false,
            replied: SiteBits::new(peers.len()),
            replies_missing: 0,
            deferred_replies: Vec::new(),
        }
    }
}

impl MutualExclusion for RicartAgrawala {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl Process for RicartAgrawala {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _ctx: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 1.
            Input::Request if self.request.is_none() => {
                ctx.rule("1");
                let ts = self.clock.tick();
                self.request = Some(Stamp {
                    time: ts,
                    node: self.id,
                });
                self.replied.clear_all();
                self.replies_missing = ctx.peers().len() - 1;
                ctx.broadcast(Msg::Request { ts });
                self.enter_if_permitted(ctx);
            }
            // Rule 4.
            Input::Release if self.in_cs => {
                ctx.rule("4");
                self.in_cs = false;
                self.request = None;
                for (j, ts) in self.deferred_replies.drain(..) {
                    ctx.send(j, Msg::Reply { ts });
                }
                ctx.output(Output::Exit);
            }
            // A second Request while one is outstanding, or a Release outside the CS: the
            // application broke the contract; ignoring it keeps the state consistent.
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2.
            Msg::Request { ts } => {
                ctx.rule("2");
                self.clock.observe(ts);
                let theirs = Stamp {
                    time: ts,
                    node: from,
                };
                let ours_first = self.request.is_some_and(|ours| ours < theirs);
                if self.in_cs || ours_first {
                    self.deferred_replies.push((from, ts));
                } else {
                    ctx.send(from, Msg::Reply { ts });
                }
            }
            // Rule 3. Only a REPLY to our current request counts, and each site once: a stale or
            // duplicated REPLY does not open the CS early (the duplication rule).
            Msg::Reply { ts } => {
                ctx.rule("3");
                if self.request.is_some_and(|ours| ours.time == ts) {
                    if let Some(k) = ctx.peers().position(from) {
                        if !self.replied.get(k) {
                            self.replied.set(k);
                            self.replies_missing -= 1;
                        }
                    }
                    self.enter_if_permitted(ctx);
                }
            }
        }
    }
}

impl RicartAgrawala {
    fn enter_if_permitted(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.request.is_some() && !self.in_cs && self.replies_missing == 0 {
            ctx.rule("3");
            self.in_cs = true;
            ctx.output(Output::Enter);
        }
    }

    /// The sites whose requests wait for our exit, with the timestamps of those requests.
    pub fn deferred_replies(&self) -> &[(NodeId, u64)] {
        &self.deferred_replies
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::testing::Driver;

    fn site(id: u32, peers: &Peers) -> Driver<'_, RicartAgrawala> {
        Driver::new(
            RicartAgrawala::new(NodeId(id), peers, &Params::default()),
            NodeId(id),
            peers,
        )
    }

    #[test]
    fn request_goes_to_all_others_and_all_replies_open_the_cs() {
        let peers = Peers::range(3);
        let mut s = site(0, &peers);
        s.input(Input::Request);
        assert_eq!(
            s.sent(),
            vec![
                (NodeId(1), Msg::Request { ts: 1 }),
                (NodeId(2), Msg::Request { ts: 1 })
            ]
        );
        s.receive(1, Msg::Reply { ts: 1 });
        assert!(s.outputs().is_empty());
        s.receive(1, Msg::Reply { ts: 1 }); // a duplicate counts once
        assert!(s.outputs().is_empty());
        s.receive(2, Msg::Reply { ts: 1 });
        assert_eq!(s.outputs(), vec![Output::Enter]);
    }

    #[test]
    fn an_idle_site_replies_at_once() {
        let peers = Peers::range(3);
        let mut s = site(1, &peers);
        s.receive(0, Msg::Request { ts: 5 });
        assert_eq!(s.sent(), vec![(NodeId(0), Msg::Reply { ts: 5 })]);
    }

    #[test]
    fn the_earlier_request_wins_and_ties_go_to_the_lower_id() {
        let peers = Peers::range(3);
        let mut s = site(1, &peers);
        s.input(Input::Request); // (1, 1)
        s.receive(2, Msg::Request { ts: 1 }); // (1, 2) is later: defer
        assert!(s.sent().is_empty());
        s.receive(0, Msg::Request { ts: 1 }); // (1, 0) is earlier: reply
        assert_eq!(s.sent(), vec![(NodeId(0), Msg::Reply { ts: 1 })]);
        assert_eq!(s.process.deferred_replies(), &[(NodeId(2), 1)]);
    }

    #[test]
    fn a_site_in_the_cs_defers_and_replies_on_exit() {
        let peers = Peers::range(2);
        let mut s = site(0, &peers);
        s.input(Input::Request);
        s.receive(1, Msg::Reply { ts: 1 });
        assert!(s.process.in_critical_section());
        s.receive(1, Msg::Request { ts: 1 }); // earlier than nothing we hold: we are in the CS
        assert!(s.sent().is_empty());
        s.input(Input::Release);
        assert_eq!(s.sent(), vec![(NodeId(1), Msg::Reply { ts: 1 })]);
        assert_eq!(s.outputs(), vec![Output::Exit]);
        assert!(s.process.deferred_replies().is_empty());
    }

    /// The state as it was before `replied` became one bit per site: same name, fields and
    /// types but `replied: Vec<bool>`.
    mod with_a_vec_of_bool {
        use super::*;

        #[derive(Debug, Hash, Serialize)]
        pub struct RicartAgrawala {
            pub id: NodeId,
            pub clock: LamportClock,
            pub request: Option<Stamp>,
            pub in_cs: bool,
            pub replied: Vec<bool>,
            pub replies_missing: usize,
            pub deferred_replies: Vec<(NodeId, u64)>,
        }
    }

    fn as_before(s: &RicartAgrawala) -> with_a_vec_of_bool::RicartAgrawala {
        with_a_vec_of_bool::RicartAgrawala {
            id: s.id,
            clock: s.clock,
            request: s.request,
            in_cs: s.in_cs,
            replied: s.replied.iter().collect(),
            replies_missing: s.replies_missing,
            deferred_replies: s.deferred_replies.clone(),
        }
    }

    /// Issue 15 (row b4): a site's state prints (`{:?}`, `{:#?}`), serializes and hashes
    /// exactly as it did with `replied: Vec<bool>`, at every step of a request at 70 sites (past
    /// one word of bits), so the checker's fingerprints and every output stay the same.
    #[test]
    fn the_state_shows_serializes_and_hashes_as_with_a_vec_of_bool() {
        use crate::site_bits::tests::{recorded, std_hash};
        let peers = Peers::range(70);
        let mut s = site(66, &peers);
        let mut states = vec![s.process.clone()];
        s.receive(3, Msg::Request { ts: 4 }); // idle: reply
        states.push(s.process.clone());
        s.input(Input::Request);
        let ts = s.process.request.unwrap().time;
        for j in [0, 1, 63, 64, 65, 69] {
            s.receive(j, Msg::Reply { ts });
            states.push(s.process.clone());
        }
        s.receive(67, Msg::Request { ts: ts + 3 }); // later: deferred
        s.receive(2, Msg::Request { ts }); // (ts, 2) is earlier: reply
        states.push(s.process.clone());
        for j in (0..70).filter(|&j| j != 66) {
            s.receive(j, Msg::Reply { ts });
        }
        assert!(s.process.in_critical_section());
        states.push(s.process.clone());
        s.input(Input::Release);
        states.push(s.process.clone());
        for state in &states {
            let before = as_before(state);
            assert_eq!(format!("{state:?}"), format!("{before:?}"));
            assert_eq!(format!("{state:#?}"), format!("{before:#?}"));
            assert_eq!(
                serde_json::to_string(state).unwrap(),
                serde_json::to_string(&before).unwrap()
            );
            assert_eq!(recorded(state), recorded(&before));
            assert_eq!(std_hash(state), std_hash(&before));
        }
        // The states above do differ in `replied`, so the comparisons are not all of one state.
        assert!(format!("{:?}", states[3]).contains("replied: [true, true, false"));
        let in_cs = &states[states.len() - 2];
        let all_but_us: Vec<bool> = (0..70).map(|k| k != 66).collect();
        assert_eq!(as_before(in_cs).replied, all_but_us);
    }

    /// Issue 10, item 1: a late copy of the REPLY to request k must not count for request k+1.
    #[test]
    fn a_reply_to_an_earlier_request_is_not_permission_for_the_current_one() {
        let peers = Peers::range(2);
        let mut s = site(0, &peers);
        s.input(Input::Request); // (1, 0)
        s.receive(1, Msg::Reply { ts: 1 });
        assert_eq!(s.outputs(), vec![Output::Enter]);
        s.input(Input::Release);
        assert_eq!(s.outputs(), vec![Output::Exit]);
        s.input(Input::Request); // (2, 0)
        s.receive(1, Msg::Reply { ts: 1 }); // the duplicated copy of the first REPLY
        assert!(!s.process.in_critical_section());
        assert!(s.outputs().is_empty());
        s.receive(1, Msg::Reply { ts: 2 });
        assert_eq!(s.outputs(), vec![Output::Enter]);
    }
}
