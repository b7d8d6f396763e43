//! The multicast family in the simulator: a workload of multicasts, monitors of the delivery
//! orders, the replicated-database application, and figures.
//!
//! Workload (`[multicast]`): every process multicasts `count` times (default 10) at Poisson
//! arrivals of `rate` per second; scripted `multicast = ID` events add more. Payloads are ids
//! 1, 2, 3... in the order the multicasts are made.
//!
//! The harness knows the true causal history of the multicasts from the order of inputs and
//! deliveries at each process: a multicast's causal past is everything its sender had delivered
//! (with their own pasts) and its sender's earlier multicasts. Monitors:
//! - `fifo-order`: a process delivers a sender's multicasts in the order they were made;
//! - `causal-order`: no process delivers a multicast before one in its causal past;
//! - `total-order`: every process delivers in the same order (the first to deliver the k-th
//!   message fixes it); with the replicated database, the replicas end with one balance;
//! - `integrity` (always): nothing is delivered twice or without being multicast;
//! - `undelivered` (always, unless the run reached its horizon): every live process delivered
//!   every multicast.
//!
//! Which orders are violations is `check` (default: what the algorithm promises); breaches of
//! the others are still counted in the report.

pub use super::report::MulticastReport;
pub use super::spec::{MulticastSpec, DEFAULT_COUNT};
use crate::app::{self, AppKind};
use crate::engine::{Control, Harness};
use crate::family::common::accept_at;
use crate::report::{Report, Stats};
use crate::scenario::{Action, Checked, ScenarioError};
use distsync_core::multicast::{Input, Multicast, Order, Output};
use distsync_core::{NodeId, Time};
use rand_distr::{Distribution, Exp};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const ARRIVAL: u64 = 1;

#[derive(Clone, Debug)]
struct Record {
    origin: usize,
    /// The origin's how-many-th multicast (from 1).
    seq: u64,
    /// Of each process (by position), how many multicasts are in this one's causal past.
    deps: Vec<u64>,
    at: Time,
}

/// What the harness knows of one process.
#[derive(Clone, Debug)]
struct NodeState {
    issued: u64,
    /// Multicast inputs given and not yet acted on, in order: their payloads.
    pending: std::collections::VecDeque<u64>,
    /// Multicasts the process has acted on (its `multicasts()` as last seen; a recovered
    /// process counts afresh).
    acted: u64,
    /// Multicasts it has made in the whole run.
    made: u64,
    /// Of each sender, how many multicasts are in this process's causal past.
    past: Vec<u64>,
    /// Of each sender, the longest gap-free run of its multicasts delivered here.
    prefix: Vec<u64>,
    /// Delivered beyond the prefix, by sender: their sequence numbers.
    beyond: Vec<BTreeSet<u64>>,
    delivered: BTreeSet<u64>,
    /// How many deliveries so far (the position of the next in the total order).
    position: usize,
    disagreed: bool,
    balance: u64,
}

/// The harness of multicast runs.
#[derive(Clone)]
pub struct MulticastHarness {
    exp: Option<Exp<f64>>,
    count: u64,
    checked: Vec<Order>,
    database: Option<u64>,
    nodes: Vec<NodeState>,
    records: BTreeMap<u64, Record>,
    next_payload: u64,
    /// Payloads of multicast inputs given from outside the workload (a session following a
    /// checker counterexample gives the checker's own): the workload's numbering skips them.
    given: BTreeSet<u64>,
    /// The total order as the first process to deliver each position fixed it.
    order: Vec<u64>,
    deliveries: u64,
    delays: Vec<u64>,
    fifo_inversions: u64,
    causal_inversions: u64,
    order_disagreements: u64,
}

impl MulticastHarness {
    /// Checks the scenario against algorithm `A` and prepares its workload.
    pub fn new<A: Multicast>(
        checked: &Checked,
        origin: &str,
    ) -> Result<MulticastHarness, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let scenario = &checked.scenario;
        let peers = &checked.peers;
        A::validate(&scenario.params(), peers).map_err(|e| err(e.field, e.message))?;
        if scenario.workload.is_some() {
            return Err(err(
                "workload",
                "`[workload]` applies to mutual exclusion; multicasts are set in `[multicast]`"
                    .into(),
            ));
        }
        for (_, i, action) in &checked.actions {
            let what = match action {
                Action::Request(_) => "request",
                Action::Sync(_) => "sync",
                Action::Snapshot(_) => "snapshot",
                _ => continue,
            };
            return Err(err(
                &format!("event[{i}].{what}"),
                format!(
                    "`{what}` events do not apply to `{}`, a multicast algorithm (use `multicast = ID`)",
                    scenario.algorithm
                ),
            ));
        }
        let spec = scenario.multicast.clone().unwrap_or(MulticastSpec {
            rate: None,
            count: None,
            check: None,
        });
        let exp = match spec.rate {
            Some(r) if r > 0.0 && r.is_finite() => {
                Some(Exp::new(r).map_err(|e| err("multicast.rate", e.to_string()))?)
            }
            Some(r) => {
                return Err(err(
                    "multicast.rate",
                    format!("expected a positive number of multicasts per second, got {r}"),
                ))
            }
            None => None,
        };
        let mut orders = spec.check.unwrap_or_else(|| A::guarantees().to_vec());
        orders.sort();
        orders.dedup();
        let database = match &scenario.app {
            None => None,
            Some(a) if a.kind == AppKind::ReplicatedDatabase => {
                let bank_only = [
                    ("app.balances", a.balances.is_some()),
                    ("app.rate", a.rate.is_some()),
                    ("app.transfers", a.transfers.is_some()),
                    ("app.max_amount", a.max_amount.is_some()),
                ];
                if let Some((field, _)) = bank_only.iter().find(|f| f.1) {
                    return Err(err(
                        field,
                        "applies to the bank application, not to the replicated database".into(),
                    ));
                }
                Some(a.balance.unwrap_or(app::DEFAULT_BALANCE))
            }
            Some(_) => {
                return Err(err(
                    "app.kind",
                    format!(
                        "`{}` is a multicast algorithm: the application it runs is \"replicated-database\"",
                        scenario.algorithm
                    ),
                ))
            }
        };
        let n = peers.len();
        Ok(MulticastHarness {
            exp,
            count: spec.count.unwrap_or(DEFAULT_COUNT),
            checked: orders,
            database,
            nodes: (0..n)
                .map(|_| NodeState {
                    issued: 0,
                    pending: Default::default(),
                    acted: 0,
                    made: 0,
                    past: vec![0; n],
                    prefix: vec![0; n],
                    beyond: vec![BTreeSet::new(); n],
                    delivered: BTreeSet::new(),
                    position: 0,
                    disagreed: false,
                    balance: database.unwrap_or(0),
                })
                .collect(),
            records: BTreeMap::new(),
            next_payload: 0,
            given: BTreeSet::new(),
            order: Vec::new(),
            deliveries: 0,
            delays: Vec::new(),
            fifo_inversions: 0,
            causal_inversions: 0,
            order_disagreements: 0,
        })
    }

    fn schedule<A: Multicast>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        if let Some(exp) = &self.exp {
            if self.nodes[pos].issued < self.count {
                let secs: f64 = exp.sample(ctl.rng());
                let at = ctl.now() + Duration::from_secs_f64(secs);
                let node = ctl.peers().ids()[pos];
                ctl.wake(at, node, ARRIVAL);
            }
        }
    }

    fn issue<A: Multicast>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        self.next_payload += 1;
        while self.given.contains(&self.next_payload) {
            self.next_payload += 1;
        }
        let payload = self.next_payload;
        self.nodes[pos].pending.push_back(payload);
        let node = ctl.peers().ids()[pos];
        let now = ctl.now();
        ctl.input_at(now, node, Input::Multicast(payload));
    }

    /// Records the multicasts process `pos` has acted on since last seen: each one's causal
    /// past is what the process had delivered by then, and its own earlier multicasts.
    fn catch_up<A: Multicast>(&mut self, pos: usize, ctl: &Control<'_, A>) {
        let node = ctl.peers().ids()[pos];
        let Some(p) = ctl.process(node) else {
            return;
        };
        let acted = p.multicasts();
        let now = ctl.now();
        let state = &mut self.nodes[pos];
        while state.acted < acted {
            state.acted += 1;
            let Some(payload) = state.pending.pop_front() else {
                break; // acted on more inputs than it was given: the contract monitor's business
            };
            state.made += 1;
            let seq = state.made;
            let mut deps = state.past.clone();
            deps[pos] = seq - 1;
            state.past[pos] = seq;
            self.records.insert(
                payload,
                Record {
                    origin: pos,
                    seq,
                    deps,
                    at: now,
                },
            );
        }
    }

    fn deliver<A: Multicast>(
        &mut self,
        pos: usize,
        origin: NodeId,
        payload: u64,
        ctl: &mut Control<'_, A>,
    ) {
        let node = ctl.peers().ids()[pos];
        // This delivery comes after any multicast this process has acted on, and the sender
        // must have acted on this one.
        self.catch_up(pos, ctl);
        if let Some(o) = ctl.peers().position(origin) {
            self.catch_up(o, ctl);
        }
        let Some(record) = self.records.get(&payload).cloned() else {
            ctl.violation(
                "integrity",
                format!("node {node} delivered payload {payload} from node {origin}, which no process multicast"),
            );
            return;
        };
        let sender = ctl.peers().ids()[record.origin];
        if sender != origin || !self.nodes[pos].delivered.insert(payload) {
            ctl.violation(
                "integrity",
                format!("node {node} delivered payload {payload} (from node {sender}) twice, or as from node {origin}"),
            );
            return;
        }
        self.deliveries += 1;
        if pos != record.origin {
            self.delays.push((ctl.now() - record.at).as_nanos() as u64);
        }
        let state = &mut self.nodes[pos];
        let o = record.origin;
        // fifo-order.
        if state.prefix[o] + 1 != record.seq {
            self.fifo_inversions += 1;
            if self.checked.contains(&Order::Fifo) {
                ctl.violation(
                    "fifo-order",
                    format!(
                        "node {node} delivered node {sender}'s multicast #{} (payload {payload}) after only {} of its earlier ones",
                        record.seq, state.prefix[o]
                    ),
                );
            }
        }
        // causal-order.
        let missing: Vec<String> = (0..record.deps.len())
            .filter(|&k| state.prefix[k] < record.deps[k])
            .map(|k| format!("node {}'s #{}", ctl.peers().ids()[k], state.prefix[k] + 1))
            .collect();
        if !missing.is_empty() {
            self.causal_inversions += 1;
            if self.checked.contains(&Order::Causal) {
                ctl.violation(
                    "causal-order",
                    format!(
                        "node {node} delivered node {sender}'s multicast #{} (payload {payload}) before {}, which happened before it",
                        record.seq,
                        missing.join(", ")
                    ),
                );
            }
        }
        // Record the delivery.
        state.beyond[o].insert(record.seq);
        while state.beyond[o].remove(&(state.prefix[o] + 1)) {
            state.prefix[o] += 1;
        }
        for (mine, theirs) in state.past.iter_mut().zip(&record.deps) {
            *mine = (*mine).max(*theirs);
        }
        state.past[o] = state.past[o].max(record.seq);
        if self.database.is_some() {
            state.balance = app::apply_update(state.balance, payload);
        }
        // total-order.
        let at = state.position;
        state.position += 1;
        if at == self.order.len() {
            self.order.push(payload);
        } else if self.order[at] != payload {
            self.order_disagreements += 1;
            if self.checked.contains(&Order::Total) && !state.disagreed {
                state.disagreed = true;
                ctl.violation(
                    "total-order",
                    format!(
                        "node {node} delivered payload {payload} as its delivery #{}, where another process delivered payload {}",
                        at + 1,
                        self.order[at]
                    ),
                );
            }
        }
    }

    fn undelivered<A: Multicast>(&self, ctl: &Control<'_, A>) -> u64 {
        let ids = ctl.peers().ids();
        (0..self.nodes.len())
            .filter(|&p| ctl.alive(ids[p]))
            .map(|p| {
                self.records
                    .keys()
                    .filter(|m| !self.nodes[p].delivered.contains(m))
                    .count() as u64
            })
            .sum()
    }
}

impl<A: Multicast> Harness<A> for MulticastHarness {
    fn accepts(&self, action: &Action, ctl: &Control<'_, A>) -> Result<(), String> {
        let node = match *action {
            Action::Multicast(node) => Some(node),
            _ => None,
        };
        accept_at(action, node, "multicast (multicast from a node)", ctl)
    }

    fn start(&mut self, ctl: &mut Control<'_, A>) {
        for pos in 0..self.nodes.len() {
            self.schedule(pos, ctl);
        }
    }

    fn on_output(&mut self, node: NodeId, output: &Output, ctl: &mut Control<'_, A>) {
        let Output::Deliver { origin, payload } = *output;
        let pos = ctl.peers().index_of(node);
        self.deliver(pos, origin, payload, ctl);
    }

    fn on_wake(&mut self, node: NodeId, tag: u64, ctl: &mut Control<'_, A>) {
        if tag != ARRIVAL {
            return;
        }
        let pos = ctl.peers().index_of(node);
        if ctl.alive(node) && self.nodes[pos].issued < self.count {
            self.nodes[pos].issued += 1;
            self.issue(pos, ctl);
        }
        self.schedule(pos, ctl);
    }

    /// A multicast input the workload did not make (a session's
    /// [`Choice::Input`](crate::session::Choice::Input), e.g. the checker's `Multicast(2)`)
    /// is recorded as given now, so that its payload is known as multicast when the process
    /// acts on it.
    fn on_input(&mut self, node: NodeId, input: &Input, ctl: &mut Control<'_, A>) {
        let Input::Multicast(payload) = *input;
        let pos = ctl.peers().index_of(node);
        if !self.nodes[pos].pending.contains(&payload) {
            self.given.insert(payload);
            self.nodes[pos].pending.push_back(payload);
        }
    }

    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, A>) {
        if let Action::Multicast(node) = *action {
            if ctl.alive(node) {
                let pos = ctl.peers().index_of(node);
                self.issue(pos, ctl);
            }
        }
    }

    fn before_crash(&mut self, node: NodeId, ctl: &mut Control<'_, A>) {
        // What it multicast and the harness has not recorded yet (a record is made lazily, at
        // the next delivery) is recorded now, while its state is still there: another process
        // may deliver it after the crash.
        let pos = ctl.peers().index_of(node);
        self.catch_up(pos, ctl);
    }

    fn on_crash(&mut self, node: NodeId, ctl: &mut Control<'_, A>) {
        // Inputs it had not acted on are lost with it.
        let pos = ctl.peers().index_of(node);
        self.nodes[pos].pending.clear();
    }

    fn on_recover(&mut self, node: NodeId, ctl: &mut Control<'_, A>) {
        // A recovered process starts afresh: its count of multicasts restarts at zero.
        let pos = ctl.peers().index_of(node);
        self.nodes[pos].acted = 0;
    }

    fn done(&self) -> bool {
        let issued = self.exp.is_none() || self.nodes.iter().all(|n| n.issued >= self.count);
        let n = self.nodes.len() as u64;
        issued
            && self.nodes.iter().all(|s| s.pending.is_empty())
            && self.deliveries == self.records.len() as u64 * n
    }

    fn finish(&mut self, ctl: &mut Control<'_, A>, report: &mut Report) {
        for pos in 0..self.nodes.len() {
            self.catch_up(pos, ctl);
        }
        let undelivered = self.undelivered(ctl);
        if undelivered > 0 && report.ended_by != "horizon" {
            ctl.violation(
                "undelivered",
                format!("{undelivered} (multicast, live process) pairs were never delivered, and nothing was left to happen"),
            );
        }
        let ids = ctl.peers().ids().to_vec();
        let mut balances = BTreeMap::new();
        if self.database.is_some() {
            for (p, id) in ids.iter().enumerate() {
                if ctl.alive(*id) {
                    balances.insert(id.to_string(), self.nodes[p].balance);
                }
            }
            let distinct: BTreeSet<u64> = balances.values().copied().collect();
            if distinct.len() > 1 && self.checked.contains(&Order::Total) {
                ctl.violation(
                    "replica-divergence",
                    format!("the replicas end with different balances: {balances:?}"),
                );
            }
        }
        let multicasts = self.records.len() as u64;
        report.sections.multicast = Some(MulticastReport {
            multicasts,
            deliveries: self.deliveries,
            undelivered,
            messages_per_multicast: if multicasts == 0 {
                0.0
            } else {
                ctl.messages_sent() as f64 / multicasts as f64
            },
            delivery_delay_ns: Stats::of(&mut self.delays),
            checked: self.checked.clone(),
            fifo_inversions: self.fifo_inversions,
            causal_inversions: self.causal_inversions,
            order_disagreements: self.order_disagreements,
            balances,
        });
    }
}
