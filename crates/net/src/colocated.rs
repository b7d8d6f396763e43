//! A competitor next to the coordinator: the node that runs central's coordinator also serves
//! its own clients.
//!
//! In the central algorithm (seed 000, seed 001) the coordinator is a lock manager that does not
//! compete for the critical section; before this module, a client connected to the coordinator's
//! node was redirected to another node, and every grant took four hops (client, node, coordinator,
//! node, client). Here the coordinator's node runs, beside the coordinator, one more process of
//! the same algorithm: an ordinary central *client*, under an id no node has ([`LOCAL`]). The
//! messages between the two (REQUEST, GRANT, DENIED, RELEASE) are handed over inside the node
//! instead of travelling over TCP, so a client of the coordinator's node takes a lock in one round
//! trip to one process, as with Redis.
//!
//! Nothing of the algorithm changes: the coordinator sees one more client, with its own id and
//! its own request numbers, queued first come first served with the others, and it grants the
//! critical section to one client at a time exactly as before, so mutual exclusion is the
//! algorithm's. What the node adds is only the delivery between two processes it hosts:
//! immediate, in order, exactly once (an in-memory queue emptied before the handler returns).
//!
//! [`instance`] builds this pair for a node that is not among the algorithm's competitors (only
//! central's coordinator is one), and the plain algorithm for every other node. The pair looks
//! like one instance to the node: inputs (Request, Release) go to the local client, messages from
//! other nodes to the coordinator, the local client's Enter and Exit come out as the instance's,
//! and it is in the critical section when the local client is.

use crate::machine::{Env, Event, Machine, MutexKind, MutexMachine, Out};
use crate::wire::DecodeError;
use distsync_core::mutex as mx;
use distsync_core::{NodeId, Params, Peers};
use std::collections::VecDeque;

/// The id of the client process that runs inside the coordinator's node. Node ids are below
/// 1024 (an epoch carries its leader's id in 10 bits), so no node has it.
pub const LOCAL: NodeId = NodeId(u32::MAX);

/// The instance of lock algorithm `kind` for node `id` in a view of `members`: the algorithm's own
/// process, and for a node that does not compete (central's coordinator) that process paired with
/// a local competitor ([`Colocated`]).
pub fn instance(
    kind: &MutexKind,
    id: NodeId,
    members: &Peers,
    params: &Params,
) -> Box<dyn MutexMachine> {
    let home = (kind.new)(id, members, params);
    if (kind.competitors)(members, params).contains(&id) {
        home
    } else {
        Box::new(Colocated {
            me: id,
            home,
            local: (kind.new)(LOCAL, members, params),
        })
    }
}

/// A non-competing process of the algorithm (central's coordinator) and a competing one
/// ([`LOCAL`]) in one node, their messages to each other delivered in memory.
pub struct Colocated {
    me: NodeId,
    home: Box<dyn MutexMachine>,
    local: Box<dyn MutexMachine>,
}

/// Which of the two processes a timer belongs to: the first byte of its key.
const HOME_TIMER: u8 = 0;
const LOCAL_TIMER: u8 = 1;

impl Colocated {
    /// Carries out what one of the two processes did: messages to the other are queued for it,
    /// everything else goes out (timer keys marked with their owner).
    fn route(
        &self,
        from_local: bool,
        effects: &mut Vec<Out<mx::Output>>,
        inbox: &mut VecDeque<(bool, Vec<u8>)>,
        out: &mut Vec<Out<mx::Output>>,
    ) {
        let mark = if from_local { LOCAL_TIMER } else { HOME_TIMER };
        let keyed = |k: Vec<u8>| {
            let mut key = Vec::with_capacity(k.len() + 1);
            key.push(mark);
            key.extend_from_slice(&k);
            key
        };
        for e in effects.drain(..) {
            match e {
                Out::Send(to, msg) if !from_local && to == LOCAL => inbox.push_back((true, msg)),
                Out::Send(to, msg) if from_local && to == self.me => inbox.push_back((false, msg)),
                Out::Send(to, msg) => out.push(Out::Send(to, msg)),
                Out::SetTimer(k, after) => out.push(Out::SetTimer(keyed(k), after)),
                Out::CancelTimer(k) => out.push(Out::CancelTimer(keyed(k))),
                Out::Output(o) => out.push(Out::Output(o)),
            }
        }
    }
}

impl Machine<mx::Input, mx::Output> for Colocated {
    fn handle(
        &mut self,
        env: Env<'_>,
        event: Event<'_, mx::Input>,
        out: &mut Vec<Out<mx::Output>>,
    ) -> Result<(), DecodeError> {
        let Env {
            id,
            peers,
            now,
            recovered,
            rng,
        } = env;
        let mut inbox: VecDeque<(bool, Vec<u8>)> = VecDeque::new();
        let mut effects = Vec::new();
        macro_rules! call {
            ($local:expr, $ev:expr) => {{
                let env = Env {
                    id: if $local { LOCAL } else { id },
                    peers,
                    now,
                    recovered,
                    rng: &mut *rng,
                };
                let r = if $local {
                    self.local.handle(env, $ev, &mut effects)
                } else {
                    self.home.handle(env, $ev, &mut effects)
                };
                self.route($local, &mut effects, &mut inbox, out);
                r
            }};
        }
        match event {
            Event::Start => {
                call!(false, Event::Start)?;
                call!(true, Event::Start)?;
            }
            Event::Input(i) => call!(true, Event::Input(i))?,
            // Other nodes talk to the coordinator only (the local client's id is nobody's).
            Event::Message(from, bytes) => call!(false, Event::Message(from, bytes))?,
            Event::Timer(key) => match key.split_first() {
                Some((&LOCAL_TIMER, k)) => call!(true, Event::Timer(k))?,
                Some((&HOME_TIMER, k)) => call!(false, Event::Timer(k))?,
                _ => {}
            },
        }
        while let Some((to_local, msg)) = inbox.pop_front() {
            if to_local {
                call!(true, Event::Message(id, &msg))?;
            } else {
                call!(false, Event::Message(LOCAL, &msg))?;
            }
        }
        Ok(())
    }
}

impl MutexMachine for Colocated {
    fn in_critical_section(&self) -> bool {
        self.local.in_critical_section()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_core::Time;
    use rand_core::SeedableRng;

    fn env<'a>(id: NodeId, peers: &'a Peers, rng: &'a mut dyn rand_core::RngCore) -> Env<'a> {
        Env {
            id,
            peers,
            now: Time::ZERO,
            recovered: false,
            rng,
        }
    }

    /// Node 2 coordinates (the highest id). Its local client enters at once without a message
    /// on the wire; a client of node 0 asks over the wire and is queued (DENIED), then granted
    /// when the local client releases; the local client asks again and is queued behind it.
    #[test]
    fn the_coordinators_own_client_is_queued_with_the_others() {
        let kind = crate::machine::mutex_kind("central").unwrap();
        let peers = Peers::range(3);
        let params = Params::default();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut coord = instance(&kind, NodeId(2), &peers, &params);
        let mut client = instance(&kind, NodeId(0), &peers, &params);
        let mut out = Vec::new();
        coord
            .handle(env(NodeId(2), &peers, &mut rng), Event::Start, &mut out)
            .unwrap();
        assert!(out.is_empty(), "{out:?}");
        coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Input(mx::Input::Request),
                &mut out,
            )
            .unwrap();
        assert_eq!(
            out,
            vec![Out::Output(mx::Output::Enter)],
            "no message left the node"
        );
        assert!(coord.in_critical_section());
        out.clear();
        // Node 0's request crosses the wire and finds the critical section busy.
        client
            .handle(
                env(NodeId(0), &peers, &mut rng),
                Event::Input(mx::Input::Request),
                &mut out,
            )
            .unwrap();
        let [Out::Send(NodeId(2), request)] = &out[..] else {
            panic!("{out:?}")
        };
        let request = request.clone();
        out.clear();
        coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Message(NodeId(0), &request),
                &mut out,
            )
            .unwrap();
        let [Out::Send(NodeId(0), denied)] = &out[..] else {
            panic!("{out:?}")
        };
        client
            .handle(
                env(NodeId(0), &peers, &mut rng),
                Event::Message(NodeId(2), &denied.clone()),
                &mut out,
            )
            .unwrap();
        assert!(!client.in_critical_section());
        out.clear();
        // The local client releases and asks again in the same turn: node 0 is granted first.
        coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Input(mx::Input::Release),
                &mut out,
            )
            .unwrap();
        coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Input(mx::Input::Request),
                &mut out,
            )
            .unwrap();
        assert!(!coord.in_critical_section(), "queued behind node 0");
        let [Out::Output(mx::Output::Exit), Out::Send(NodeId(0), grant)] = &out[..] else {
            panic!("{out:?}")
        };
        let grant = grant.clone();
        out.clear();
        client
            .handle(
                env(NodeId(0), &peers, &mut rng),
                Event::Message(NodeId(2), &grant),
                &mut out,
            )
            .unwrap();
        assert_eq!(out, vec![Out::Output(mx::Output::Enter)]);
        out.clear();
        // Node 0 releases: the local client enters.
        client
            .handle(
                env(NodeId(0), &peers, &mut rng),
                Event::Input(mx::Input::Release),
                &mut out,
            )
            .unwrap();
        let release = out
            .iter()
            .find_map(|o| match o {
                Out::Send(NodeId(2), m) => Some(m.clone()),
                _ => None,
            })
            .unwrap();
        out.clear();
        coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Message(NodeId(0), &release),
                &mut out,
            )
            .unwrap();
        assert_eq!(out, vec![Out::Output(mx::Output::Enter)]);
        assert!(coord.in_critical_section());
    }

    #[test]
    fn competing_nodes_get_the_plain_algorithm() {
        let kind = crate::machine::mutex_kind("ricart-agrawala").unwrap();
        let peers = Peers::range(3);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut m = instance(&kind, NodeId(2), &peers, &Params::default());
        let mut out = Vec::new();
        m.handle(
            env(NodeId(2), &peers, &mut rng),
            Event::Input(mx::Input::Request),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.iter().filter(|o| matches!(o, Out::Send(..))).count(),
            2,
            "ricart-agrawala asks both others: {out:?}"
        );
    }

    /// A message from another node that does not decode is an error, as for any instance.
    #[test]
    fn an_undecodable_message_is_refused() {
        let kind = crate::machine::mutex_kind("central").unwrap();
        let peers = Peers::range(3);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut coord = instance(&kind, NodeId(2), &peers, &Params::default());
        let mut out = Vec::new();
        assert!(coord
            .handle(
                env(NodeId(2), &peers, &mut rng),
                Event::Message(NodeId(0), &[99, 1]),
                &mut out
            )
            .is_err());
    }
}
