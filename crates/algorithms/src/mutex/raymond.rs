//! Raymond 1989: the token moves along the edges of a tree whose edges point toward the token;
//! requests are queued in FIFO order at every node on the way.
//!
//! Source: seed 003 "Raymond's Algorithm" (holder, request_q, the rules below), seed 001
//! "Tree-Based Token Algorithm for Mutual Exclusion" (the same algorithm told with the
//! requester's id in the queues, and the four-process example P0..P3). Rules:
//! 1. Every node has `holder`, the neighbour on the path toward the token (itself at the root,
//!    the token holder), and a FIFO `request_q`.
//! 2. A node that wants the CS appends itself to `request_q`; a node receiving a REQUEST from a
//!    neighbour appends that neighbour.
//! 3. A node without the token whose `request_q` is not empty sends one REQUEST, for the head
//!    of the queue, to its `holder`, unless it already did for this wait (`asked`).
//! 4. A node holding the token, outside the CS, with a non-empty `request_q`, removes the head:
//!    if it is itself it enters the CS, otherwise it sends it the token and points `holder` at
//!    it (the tree re-roots); if entries remain, rule 3 sends a REQUEST after the token.
//! 5. On leaving the CS, rule 4 then rule 3.
//!
//! The tree is the scenario's `tree` (edges) or, by default, a balanced binary tree rooted at
//! the initial holder (`holder`, default the first id): the holder first, then the other ids in
//! membership order, node k's parent being node (k-1)/2 of that list.
//!
//! A REQUEST carries the id of the process that asked first for the head it is sent for, so the
//! queues can also be read as seed 001 tells them ("P1 adds P3 into its FIFO queue"); the token
//! still goes to the neighbour the request came from. 2 x distance messages per entry under
//! light load, about 4(N-1)/N under heavy load; FIFO channels are not needed.

use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Messages, named as in the notes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// REQUEST, sent toward the token; `origin` is the process the request is for.
    Request { origin: NodeId },
    /// The token (the privilege).
    Token,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Request { .. } => "Request",
            Msg::Token => "Token",
        }
    }
}

/// One entry of `request_q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct Entry {
    /// Where the token goes for this entry: the neighbour the request came from, or this node.
    pub from: NodeId,
    /// The process that asked (seed 001's reading of the queue).
    pub origin: NodeId,
}

/// One node of the tree.
#[derive(Clone, Debug, Hash, Serialize)]
pub struct Raymond {
    id: NodeId,
    /// The neighbour toward the token; `id` itself at the root.
    holder: NodeId,
    /// FIFO queue of the neighbours (or this node) waiting for the token.
    request_q: VecDeque<Entry>,
    /// A REQUEST has been sent to `holder` for the current head (rule 3).
    asked: bool,
    /// Inside the CS.
    using: bool,
    /// The application's request is outstanding (queued or inside).
    requesting: bool,
    /// At the initial root: a tree neighbour, where a recovered root points since it lost the
    /// token in the crash.
    root_neighbour: Option<NodeId>,
}

/// The tree's edges: the scenario's, checked, or the default balanced binary tree.
pub fn tree_edges(peers: &Peers, params: &Params) -> Result<Vec<[NodeId; 2]>, ParamError> {
    super::validate_holder(params, peers)?;
    let root = super::initial_holder(peers, params);
    let Some(edges) = &params.tree else {
        let order: Vec<NodeId> = std::iter::once(root)
            .chain(peers.ids().iter().copied().filter(|&id| id != root))
            .collect();
        return Ok((1..order.len())
            .map(|k| [order[(k - 1) / 2], order[k]])
            .collect());
    };
    let n = peers.len();
    let bad = |m: String| Err(ParamError::new("tree", m));
    if edges.len() != n - 1 {
        return bad(format!(
            "a tree over {n} nodes has {} edges, this one has {}",
            n - 1,
            edges.len()
        ));
    }
    for &[a, b] in edges {
        for end in [a, b] {
            if !peers.contains(end) {
                return bad(format!(
                    "edge [{a}, {b}]: node {end} is not one of the node ids"
                ));
            }
        }
        if a == b {
            return bad(format!("edge [{a}, {b}] is a loop"));
        }
    }
    // N-1 edges and connected: a spanning tree.
    let reached = parents(peers, edges, root)
        .iter()
        .filter(|p| p.is_some())
        .count();
    if reached != n {
        return bad(format!(
            "the edges do not connect all {n} nodes (only {reached} are reachable from {root})"
        ));
    }
    Ok(edges.clone())
}

/// For every position, its neighbour toward `root` (`root` itself at the root); `None` where
/// unreachable.
fn parents(peers: &Peers, edges: &[[NodeId; 2]], root: NodeId) -> Vec<Option<NodeId>> {
    let n = peers.len();
    let mut adj: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for &[a, b] in edges {
        if let (Some(pa), Some(pb)) = (peers.position(a), peers.position(b)) {
            adj[pa].push(b);
            adj[pb].push(a);
        }
    }
    let mut parent = vec![None; n];
    parent[peers.index_of(root)] = Some(root);
    let mut frontier = VecDeque::from([root]);
    while let Some(u) = frontier.pop_front() {
        for &v in &adj[peers.index_of(u)] {
            let pv = peers.index_of(v);
            if parent[pv].is_none() {
                parent[pv] = Some(u);
                frontier.push_back(v);
            }
        }
    }
    parent
}

impl Algorithm for Raymond {
    fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
        tree_edges(peers, params).map(|_| ())
    }

    fn new(id: NodeId, peers: &Peers, params: &Params) -> Self {
        let root = super::initial_holder(peers, params);
        // `validate` has accepted the parameters; should it not have been called, a bad tree
        // becomes a star around the root rather than a panic (still one token).
        let edges = tree_edges(peers, params).unwrap_or_default();
        let holder = parents(peers, &edges, root)[peers.index_of(id)].unwrap_or(root);
        let root_neighbour = (id == root).then(|| {
            edges
                .iter()
                .find_map(|&[a, b]| match (a == id, b == id) {
                    (true, _) => Some(b),
                    (_, true) => Some(a),
                    _ => None,
                })
                .unwrap_or(id)
        });
        Raymond {
            id,
            holder,
            request_q: VecDeque::new(),
            asked: false,
            using: false,
            requesting: false,
            root_neighbour,
        }
    }
}

impl MutualExclusion for Raymond {
    fn in_critical_section(&self) -> bool {
        self.using
    }
}

impl Process for Raymond {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        // A recovered initial root lost the token in its crash and must not mint another; it
        // points at a tree neighbour. (Regenerating a lost token is outside the algorithm as the
        // notes state it.)
        if let (Some(neighbour), true) = (self.root_neighbour, ctx.recovered()) {
            self.holder = neighbour;
        }
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            // Rule 2, then 4 and 3.
            Input::Request if !self.requesting => {
                ctx.rule("2");
                self.requesting = true;
                self.request_q.push_back(Entry {
                    from: self.id,
                    origin: self.id,
                });
                self.assign_privilege(ctx);
                self.make_request(ctx);
            }
            // Rule 5.
            Input::Release if self.using => {
                ctx.rule("5");
                self.using = false;
                self.requesting = false;
                ctx.output(Output::Exit);
                self.assign_privilege(ctx);
                self.make_request(ctx);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            // Rule 2, then 4 and 3.
            Msg::Request { origin } => {
                ctx.rule("2");
                self.request_q.push_back(Entry { from, origin });
            }
            Msg::Token => self.holder = self.id,
        }
        self.assign_privilege(ctx);
        self.make_request(ctx);
    }
}

impl Raymond {
    /// Rule 4.
    fn assign_privilege(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.holder != self.id || self.using {
            return;
        }
        let Some(head) = self.request_q.pop_front() else {
            return;
        };
        ctx.rule("4");
        self.asked = false;
        if head.from == self.id {
            self.using = true;
            ctx.output(Output::Enter);
        } else {
            self.holder = head.from;
            ctx.send(head.from, Msg::Token);
        }
    }

    /// Rule 3.
    fn make_request(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.holder == self.id || self.asked {
            return;
        }
        if let Some(head) = self.request_q.front() {
            ctx.rule("3");
            self.asked = true;
            ctx.send(
                self.holder,
                Msg::Request {
                    origin: head.origin,
                },
            );
        }
    }

    /// The neighbour toward the token (this node itself when it holds the token).
    pub fn holder(&self) -> NodeId {
        self.holder
    }

    /// Whether this node holds the token.
    pub fn has_token(&self) -> bool {
        self.holder == self.id
    }

    /// The FIFO request queue, head first.
    pub fn request_q(&self) -> &VecDeque<Entry> {
        &self.request_q
    }
}

#[cfg(test)]
mod tests {
    use super::super::pump::Pump;
    use super::*;
    use distsync_core::testing::Driver;

    fn chain(n: u32) -> Params {
        Params {
            tree: Some((1..n).map(|k| [NodeId(k - 1), NodeId(k)]).collect()),
            ..Params::default()
        }
    }

    fn node<'a>(id: u32, peers: &'a Peers, params: &Params) -> Driver<'a, Raymond> {
        let mut d = Driver::new(Raymond::new(NodeId(id), peers, params), NodeId(id), peers);
        d.start();
        d
    }

    fn entry(from: u32, origin: u32) -> Entry {
        Entry {
            from: NodeId(from),
            origin: NodeId(origin),
        }
    }

    #[test]
    fn holder_pointers_follow_the_tree_toward_the_initial_holder() {
        let peers = Peers::range(7);
        // Default: balanced binary tree rooted at 0: 1, 2 under 0; 3, 4 under 1; 5, 6 under 2.
        let parents: Vec<u32> = (0..7)
            .map(|i| {
                Raymond::new(NodeId(i), &peers, &Params::default())
                    .holder()
                    .0
            })
            .collect();
        assert_eq!(parents, vec![0, 0, 0, 1, 1, 2, 2]);
        // Rooted at the holder 4: order 4, 0, 1, 2, 3, 5, 6.
        let params = Params {
            holder: Some(NodeId(4)),
            ..Params::default()
        };
        let parents: Vec<u32> = (0..7)
            .map(|i| Raymond::new(NodeId(i), &peers, &params).holder().0)
            .collect();
        assert_eq!(parents, vec![4, 4, 0, 0, 4, 1, 1]);
        // A scenario tree, re-rooted at its holder.
        let params = Params {
            holder: Some(NodeId(2)),
            ..chain(4)
        };
        let parents: Vec<u32> = (0..4)
            .map(|i| {
                Raymond::new(NodeId(i), &Peers::range(4), &params)
                    .holder()
                    .0
            })
            .collect();
        assert_eq!(parents, vec![1, 2, 2, 2]);
    }

    #[test]
    fn bad_trees_and_holders_name_their_field() {
        let peers = Peers::range(4);
        let with = |edges: Vec<[u32; 2]>| Params {
            tree: Some(
                edges
                    .into_iter()
                    .map(|[a, b]| [NodeId(a), NodeId(b)])
                    .collect(),
            ),
            ..Params::default()
        };
        for (edges, says) in [
            (vec![[0, 1], [1, 2]], "3 edges"),
            (vec![[0, 1], [1, 2], [2, 9]], "node 9"),
            (vec![[0, 1], [1, 1], [2, 3]], "loop"),
            (vec![[0, 1], [1, 0], [2, 3]], "do not connect"),
        ] {
            let err = Raymond::validate(&with(edges), &peers).unwrap_err();
            assert_eq!(err.field, "tree");
            assert!(err.message.contains(says), "{}", err.message);
        }
        let bad = Params {
            holder: Some(NodeId(5)),
            ..Params::default()
        };
        assert_eq!(Raymond::validate(&bad, &peers).unwrap_err().field, "holder");
        assert!(Raymond::validate(&chain(4), &peers).is_ok());
    }

    #[test]
    fn rules_2_and_3_queue_and_ask_the_holder_once() {
        let peers = Peers::range(4);
        let mut p2 = node(2, &peers, &chain(4)); // holder 1
        p2.receive(3, Msg::Request { origin: NodeId(3) });
        assert_eq!(
            p2.sent(),
            vec![(NodeId(1), Msg::Request { origin: NodeId(3) })]
        );
        p2.input(Input::Request);
        assert!(p2.sent().is_empty(), "already asked for this wait");
        assert_eq!(
            p2.process.request_q(),
            &VecDeque::from([entry(3, 3), entry(2, 2)])
        );
    }

    #[test]
    fn rule_4_the_token_goes_to_the_head_and_a_request_follows_if_more_wait() {
        let peers = Peers::range(4);
        let mut p2 = node(2, &peers, &chain(4));
        p2.receive(3, Msg::Request { origin: NodeId(3) });
        p2.input(Input::Request);
        p2.receive(1, Msg::Token);
        assert_eq!(
            p2.sent(),
            vec![
                (NodeId(3), Msg::Token),
                (NodeId(3), Msg::Request { origin: NodeId(2) })
            ]
        );
        assert_eq!(p2.process.holder(), NodeId(3));
        // The root, idle, gives the token to a requesting neighbour at once.
        let mut p0 = node(0, &peers, &chain(4));
        p0.receive(1, Msg::Request { origin: NodeId(3) });
        assert_eq!(p0.sent(), vec![(NodeId(1), Msg::Token)]);
        assert_eq!(p0.process.holder(), NodeId(1));
        // Its own request at the head: it enters.
        let mut p0 = node(0, &peers, &chain(4));
        p0.input(Input::Request);
        assert_eq!(p0.outputs(), vec![Output::Enter]);
        assert!(p0.sent().is_empty());
    }

    #[test]
    fn rule_5_on_exit_the_token_leaves_for_the_queued_neighbour() {
        let peers = Peers::range(4);
        let mut p0 = node(0, &peers, &chain(4));
        p0.input(Input::Request);
        p0.receive(1, Msg::Request { origin: NodeId(2) });
        assert!(p0.sent().is_empty(), "inside the CS the token stays");
        p0.input(Input::Release);
        assert_eq!(p0.outputs(), vec![Output::Exit]);
        assert_eq!(p0.sent(), vec![(NodeId(1), Msg::Token)]);
        assert!(!p0.process.has_token());
    }

    fn holders(p: &Pump<Raymond>) -> Vec<u32> {
        p.procs.iter().map(|r| r.holder().0).collect()
    }

    fn queue(p: &Pump<Raymond>, id: u32) -> Vec<u32> {
        p.node(id).request_q().iter().map(|e| e.origin.0).collect()
    }

    fn token_at(p: &Pump<Raymond>) -> Option<u32> {
        let at: Vec<u32> = (0..p.procs.len() as u32)
            .filter(|&i| p.node(i).has_token())
            .collect();
        assert!(at.len() <= 1, "two tokens: {at:?}");
        at.first().copied()
    }

    #[test]
    fn seed_001_example_p0_to_p3_step_by_step() {
        // The tree of the example: P3 -> P2 -> P1 -> P0, P0 the root with the token.
        let mut p: Pump<Raymond> = Pump::new(&[0, 1, 2, 3], &chain(4));
        // 1. P0 holds the token and is the root.
        assert_eq!(token_at(&p), Some(0));
        assert_eq!(holders(&p), vec![0, 0, 1, 2]);
        // 2. P3 adds itself to its queue and sends a request to its parent P2.
        p.input(3, Input::Request);
        assert_eq!(queue(&p, 3), vec![3]);
        assert_eq!(p.pending(3, 2), vec![Msg::Request { origin: NodeId(3) }]);
        // 3. P2 adds P3 to its queue and passes the request to P1.
        p.deliver(3, 2);
        assert_eq!(queue(&p, 2), vec![3]);
        assert_eq!(p.pending(2, 1), vec![Msg::Request { origin: NodeId(3) }]);
        // 4. P1 adds P3 to its queue and passes the request to P0.
        p.deliver(2, 1);
        assert_eq!(queue(&p, 1), vec![3]);
        assert_eq!(p.pending(1, 0), vec![Msg::Request { origin: NodeId(3) }]);
        // 5. P2 also wants the token: its queue is not empty, so it only adds itself.
        p.input(2, Input::Request);
        assert_eq!(queue(&p, 2), vec![3, 2]);
        assert!(p.pending(2, 1).is_empty());
        // 6. P0 passes the token to P1 and points at it: P1 is the root, temporarily.
        p.deliver(1, 0);
        assert_eq!(p.pending(0, 1), vec![Msg::Token]);
        assert_eq!(holders(&p), vec![1, 0, 1, 2]);
        p.deliver(0, 1);
        // 7. P1 removes the head (for P3), passes the token to P2 and points at it.
        assert_eq!(queue(&p, 1), Vec::<u32>::new());
        assert_eq!(p.pending(1, 2), vec![Msg::Token]);
        assert_eq!(holders(&p), vec![1, 2, 1, 2]);
        p.deliver(1, 2);
        // 8. P2 removes P3, passes the token to P3, points at it, and (its own request still
        //    queued) sends a request to its new parent P3.
        assert_eq!(queue(&p, 2), vec![2]);
        assert_eq!(
            p.pending(2, 3),
            vec![Msg::Token, Msg::Request { origin: NodeId(2) }]
        );
        assert_eq!(holders(&p), vec![1, 2, 3, 2]);
        // 9. P3 holds the token and enters; it clears its queue; P2's request is appended.
        p.deliver(2, 3);
        assert_eq!(token_at(&p), Some(3));
        assert_eq!(p.in_cs(), vec![NodeId(3)]);
        assert_eq!(queue(&p, 3), Vec::<u32>::new());
        p.deliver(2, 3);
        assert_eq!(queue(&p, 3), vec![2]);
        assert_eq!(holders(&p), vec![1, 2, 3, 3]);
        // 10. P3 completes its CS and sends the token back to P2, the new root.
        p.input(3, Input::Release);
        assert_eq!(p.pending(3, 2), vec![Msg::Token]);
        assert_eq!(holders(&p), vec![1, 2, 3, 2]);
        p.deliver(3, 2);
        // 11. P2 holds the token and is inside; its queue is empty; it waits for requests.
        assert_eq!(token_at(&p), Some(2));
        assert_eq!(p.in_cs(), vec![NodeId(2)]);
        assert_eq!(holders(&p), vec![1, 2, 2, 2]);
        assert_eq!(queue(&p, 2), Vec::<u32>::new());
        assert!(p.in_flight.is_empty());
    }

    /// Hops between two nodes of the tree.
    fn distance(peers: &Peers, params: &Params, a: NodeId, b: NodeId) -> usize {
        let edges = tree_edges(peers, params).unwrap();
        let up = parents(peers, &edges, a);
        let mut hops = 0;
        let mut at = b;
        while at != a {
            at = up[peers.index_of(at)].unwrap();
            hops += 1;
        }
        hops
    }

    #[test]
    fn light_load_costs_twice_the_distance_to_the_holder() {
        for n in [1u32, 2, 5, 7, 12] {
            let ids: Vec<u32> = (0..n).collect();
            let peers = Peers::range(n);
            for params in [Params::default(), chain(n)] {
                let mut p: Pump<Raymond> = Pump::new(&ids, &params);
                let mut at = NodeId(0);
                for k in [3u32, 1, 6, 6, 0, 11, 4, 2] {
                    let id = k % n;
                    let d = distance(&peers, &params, at, NodeId(id));
                    assert_eq!(p.serve_alone(id), 2 * d, "N={n} {params:?}: {at} to {id}");
                    at = NodeId(id);
                }
            }
        }
    }

    #[test]
    fn random_interleavings_without_fifo_are_safe_and_serve_everyone() {
        for seed in 0..200 {
            let mut p: Pump<Raymond> = Pump::new(&[0, 1, 2, 3, 4, 5], &Params::default());
            assert_eq!(p.shake(seed, 4, false), 24);
        }
    }
}
