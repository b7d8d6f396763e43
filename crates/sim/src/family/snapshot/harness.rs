//! The snapshot family in the simulator: the bank's transfers, scripted snapshots, and the
//! checks of what they record.
//!
//! The bank (`[app] kind = "bank"`): every process sends money to random others, `rate`
//! transfers per second (Poisson), `transfers` each (default: until the horizon), 1..=`max_amount`
//! at a time. `snapshot = ID` events start snapshots. Crashes, partitions, loss and duplication
//! are refused: they destroy or create money, and the bank's invariant would mean nothing.
//!
//! The report's `snapshot` section lists every snapshot with each process's recorded state and
//! each channel's recorded transfers. Monitors:
//! - `snapshot-total`: a complete snapshot's recorded money (states plus channels) equals the
//!   money in the system;
//! - `snapshot-consistency` (the checker's property of the same name): a process's part of a
//!   snapshot counts no transfer twice. Each process's recorded state is explained by a moment of its
//!   own run since the snapshot began (its balance then, the transfers from each sender that it
//!   received after that moment in the order they came): the transfers it had received by then
//!   and those recorded in transit must all be different messages. A message delivered twice (a
//!   duplicate) and counted both times breaks it; the transfers are told apart by the message,
//!   not by the amount, so two transfers of the same amount are never taken for one;
//! - `markers`: every process received exactly one marker of each snapshot from every other
//!   process and sent one to each, and the run sent N(N-1) markers per snapshot;
//! - `snapshot-incomplete`: every snapshot completes (unless the run reached its horizon);
//! - `money`: when nothing is left in transit, the balances add up to the money in the system.

pub use super::report::{RecordedChannel, RecordedSnapshot, SnapshotReport};
use crate::app::{self, AppKind};
use crate::engine::{Control, Harness};
use crate::family::common::accept_at;
use crate::report::Report;
use crate::scenario::{Action, Checked, ScenarioError};
use distsync_core::snapshot::{GlobalSnapshot, Input, LocalSnapshot, Output, SnapshotId};
use distsync_core::{NodeId, Time};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::collections::BTreeMap;
use std::time::Duration;

const TRANSFER: u64 = 1;

#[derive(Clone)]
struct Taking {
    started: Time,
    completed: Option<Time>,
    parts: BTreeMap<NodeId, LocalSnapshot>,
    /// Where each process's [`Seen`] log stood when the snapshot began.
    log_from: Vec<usize>,
}

/// One thing a process did while a snapshot was being taken: a delivery (its sender's position
/// and message id) or an input, with the process's balance just before it.
#[derive(Clone, Copy)]
struct Seen {
    before: u64,
    msg: Option<(usize, u64)>,
}

/// The harness of snapshot runs.
#[derive(Clone)]
pub struct SnapshotHarness {
    exp: Option<Exp<f64>>,
    limit: Option<u64>,
    max_amount: u64,
    money: u64,
    issued: Vec<u64>,
    /// Snapshots each process was told to start.
    started: Vec<u64>,
    snapshots: BTreeMap<SnapshotId, Taking>,
    order: Vec<SnapshotId>,
    /// By position: the deliveries and inputs since the oldest snapshot still being taken
    /// began (only the latest while none is), for `snapshot-consistency`.
    log: Vec<Vec<Seen>>,
    /// By position: the transfers received before that (message id, sender's position,
    /// amount).
    earlier: Vec<Vec<(u64, usize, u64)>>,
    /// Snapshots started and not yet complete.
    open: usize,
}

impl SnapshotHarness {
    /// Checks the scenario against algorithm `A` and prepares the bank.
    pub fn new<A: GlobalSnapshot>(
        checked: &Checked,
        origin: &str,
    ) -> Result<SnapshotHarness, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let scenario = &checked.scenario;
        let peers = &checked.peers;
        let spec = match &scenario.app {
            Some(a) if a.kind == AppKind::Bank => a.clone(),
            Some(_) => {
                return Err(err(
                    "app.kind",
                    format!(
                        "`{}` takes snapshots of a bank: write `kind = \"bank\"`",
                        scenario.algorithm
                    ),
                ))
            }
            None => {
                return Err(err(
                    "app",
                    format!(
                    "`{}` takes snapshots of an application: add `[app]` with `kind = \"bank\"`",
                    scenario.algorithm
                ),
                ))
            }
        };
        A::validate(&scenario.params(), peers).map_err(|e| {
            let field = if e.field == "balances" {
                "app.balances"
            } else {
                e.field
            };
            err(field, e.message)
        })?;
        if scenario.workload.is_some() {
            return Err(err(
                "workload",
                "`[workload]` applies to mutual exclusion; the bank's transfers are set in `[app]`"
                    .into(),
            ));
        }
        for (field, p) in [
            ("network.loss", scenario.network.loss),
            ("network.duplicate", scenario.network.duplicate),
        ] {
            if p > 0.0 && !scenario.network.reliable {
                return Err(err(
                    field,
                    "a lost or duplicated transfer destroys or creates money, so the bank's invariant would mean nothing: snapshots run on reliable channels (add `reliable = true` to `[network]` to mask loss and duplication)".into(),
                ));
            }
        }
        for (_, i, action) in &checked.actions {
            let what = match action {
                Action::Crash(_) => "crash",
                Action::Recover(_) => "recover",
                Action::Partition(_) => "partition",
                Action::Request(_) => "request",
                Action::Sync(_) => "sync",
                Action::Multicast(_) => "multicast",
                Action::Elect(_) | Action::ElectAll => "elect",
                Action::Heal | Action::Snapshot(_) => continue,
            };
            return Err(err(
                &format!("event[{i}].{what}"),
                format!(
                    "`{what}` events do not apply to `{}` (snapshots of the bank run without faults; use `snapshot = ID`)",
                    scenario.algorithm
                ),
            ));
        }
        let exp = match spec.rate {
            Some(r) if r > 0.0 && r.is_finite() => {
                Some(Exp::new(r).map_err(|e| err("app.rate", e.to_string()))?)
            }
            Some(r) => {
                return Err(err(
                    "app.rate",
                    format!("expected a positive number of transfers per second, got {r}"),
                ))
            }
            None => None,
        };
        let max_amount = spec.max_amount.unwrap_or(app::DEFAULT_MAX_AMOUNT);
        if max_amount == 0 {
            return Err(err("app.max_amount", "must be at least 1".into()));
        }
        let params = scenario.params();
        let money = match &params.balances {
            Some(b) => b.iter().sum(),
            None => params.balance.unwrap_or(app::DEFAULT_BALANCE) * peers.len() as u64,
        };
        Ok(SnapshotHarness {
            exp,
            limit: spec.transfers,
            max_amount,
            money,
            issued: vec![0; peers.len()],
            started: vec![0; peers.len()],
            snapshots: BTreeMap::new(),
            order: Vec::new(),
            log: vec![Vec::new(); peers.len()],
            earlier: vec![Vec::new(); peers.len()],
            open: 0,
        })
    }

    fn under_limit(&self, pos: usize) -> bool {
        self.limit.is_none_or(|l| self.issued[pos] < l)
    }

    fn schedule<A: GlobalSnapshot>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        if let Some(exp) = &self.exp {
            if self.under_limit(pos) {
                let secs: f64 = exp.sample(ctl.rng());
                let at = ctl.now() + Duration::from_secs_f64(secs);
                let node = ctl.peers().ids()[pos];
                ctl.wake(at, node, TRANSFER);
            }
        }
    }

    /// Checks one process's part of a snapshot when it reports it.
    fn part<A: GlobalSnapshot>(
        &mut self,
        node: NodeId,
        local: &LocalSnapshot,
        ctl: &mut Control<'_, A>,
    ) {
        let id = local.id;
        let others: Vec<NodeId> = ctl
            .peers()
            .ids()
            .iter()
            .copied()
            .filter(|&j| j != node)
            .collect();
        let mut from = local.markers_from.clone();
        from.sort();
        let mut to = local.markers_to.clone();
        to.sort();
        if from != others || to != others {
            ctl.violation(
                "markers",
                format!(
                    "node {node}'s part of snapshot ({}, {}) had markers from {:?} and to {:?}; expected exactly one from and to each of {:?}",
                    id.initiator, id.number, local.markers_from, local.markers_to, others
                ),
            );
        }
        let now = ctl.now();
        let n = ctl.peers().len();
        let Some(taking) = self.snapshots.get_mut(&id) else {
            ctl.violation(
                "contract",
                format!(
                    "node {node} reported a part of snapshot ({}, {}), which nobody started",
                    id.initiator, id.number
                ),
            );
            return;
        };
        let pos = ctl.peers().index_of(node);
        if let Some(process) = ctl.process(node) {
            let run = Run {
                earlier: &self.earlier[pos],
                log: &self.log[pos],
                now: process.balance(),
            };
            if let Some(why) = run.counted_twice(taking.log_from[pos], local, ctl.peers()) {
                ctl.violation(
                    "snapshot-consistency",
                    format!(
                        "node {node}'s part of snapshot ({}, {}) {why}",
                        id.initiator, id.number
                    ),
                );
            }
        }
        if taking.parts.insert(node, local.clone()).is_some() {
            ctl.violation(
                "contract",
                format!(
                    "node {node} reported its part of snapshot ({}, {}) twice",
                    id.initiator, id.number
                ),
            );
        }
        if taking.parts.len() == n && taking.completed.is_none() {
            taking.completed = Some(now);
            let total = recorded_total(taking);
            if total != self.money {
                ctl.violation(
                    "snapshot-total",
                    format!(
                        "snapshot ({}, {}) recorded {total} in states and channels, but the system holds {}",
                        id.initiator, id.number, self.money
                    ),
                );
            }
            self.open -= 1;
            if self.open == 0 {
                // No snapshot is being taken: keep each process's latest entry only.
                for (log, earlier) in self.log.iter_mut().zip(&mut self.earlier) {
                    let keep = log.len().saturating_sub(1);
                    for k in 0..keep {
                        if let Some((sender, msg)) = log[k].msg {
                            let amount = log[k + 1].before.saturating_sub(log[k].before);
                            if amount > 0 {
                                earlier.push((msg, sender, amount));
                            }
                        }
                    }
                    log.drain(..keep);
                }
            }
        }
    }
}

/// What one process did, for `snapshot-consistency`.
struct Run<'a> {
    /// The transfers it received before its log begins.
    earlier: &'a [(u64, usize, u64)],
    /// Its deliveries and inputs since then.
    log: &'a [Seen],
    /// Its balance now.
    now: u64,
}

impl Run<'_> {
    /// Why the process's part `part` counts some transfer twice, at every moment of its log
    /// since `from` that explains the part (a moment where its balance was the recorded one,
    /// followed by the transfers recorded in transit from each sender in the order they came);
    /// `None` when one such moment counts each transfer once, or when none explains the part
    /// (the markers and snapshot-total monitors judge such a part).
    fn counted_twice(
        &self,
        from: usize,
        part: &LocalSnapshot,
        peers: &distsync_core::Peers,
    ) -> Option<String> {
        let log = self.log;
        // The transfers received: deliveries that raised the balance, with the amount.
        let after = |k: usize| log.get(k + 1).map_or(self.now, |s| s.before);
        let received: Vec<(usize, usize, u64, u64)> = log
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let (sender, msg) = s.msg?;
                let amount = after(k).checked_sub(s.before).filter(|&a| a > 0)?;
                Some((k, sender, msg, amount))
            })
            .collect();
        let mut why = None;
        for cut in (from..log.len()).filter(|&k| log[k].before == part.balance) {
            let mut counted: Vec<(u64, usize, u64)> = self.earlier.to_vec();
            counted.extend(
                received
                    .iter()
                    .filter(|r| r.0 < cut)
                    .map(|&(_, sender, msg, amount)| (msg, sender, amount)),
            );
            let mut explained = true;
            for c in &part.channels {
                let Some(sender) = peers.position(c.from) else {
                    continue;
                };
                let later: Vec<(u64, usize, u64)> = received
                    .iter()
                    .filter(|r| r.0 >= cut && r.1 == sender)
                    .take(c.amounts.len())
                    .map(|&(_, sender, msg, amount)| (msg, sender, amount))
                    .collect();
                if later.iter().map(|l| l.2).ne(c.amounts.iter().copied()) {
                    explained = false;
                    break;
                }
                counted.extend(later);
            }
            if !explained {
                continue;
            }
            counted.sort_unstable();
            match counted.windows(2).find(|w| w[0].0 == w[1].0) {
                None => return None,
                Some(w) => {
                    why.get_or_insert_with(|| {
                        format!(
                            "counts the transfer of {} from {} twice (a message and its duplicate)",
                            w[0].2,
                            peers.ids()[w[0].1]
                        )
                    });
                }
            }
        }
        why
    }
}

impl SnapshotHarness {
    /// Logs a delivery or an input at `node` while a snapshot is being taken.
    fn seen<A: GlobalSnapshot>(
        &mut self,
        node: NodeId,
        msg: Option<(usize, u64)>,
        ctl: &Control<'_, A>,
    ) {
        let Some(p) = ctl.process(node) else {
            return;
        };
        let (pos, before) = (ctl.peers().index_of(node), p.balance());
        let log = &mut self.log[pos];
        if self.open == 0 {
            // No snapshot is being taken: only the latest entry is kept, a transfer it
            // received is remembered.
            if let Some(Seen {
                before: then,
                msg: Some((sender, id)),
            }) = log.pop()
            {
                if before > then {
                    self.earlier[pos].push((id, sender, before - then));
                }
            }
            log.clear();
        }
        log.push(Seen { before, msg });
    }
}

fn recorded_total(taking: &Taking) -> u64 {
    taking
        .parts
        .values()
        .map(|p| p.balance + p.channels.iter().flat_map(|c| &c.amounts).sum::<u64>())
        .sum()
}

impl<A: GlobalSnapshot> Harness<A> for SnapshotHarness {
    fn accepts(&self, action: &Action, ctl: &Control<'_, A>) -> Result<(), String> {
        let node = match *action {
            Action::Snapshot(node) => Some(node),
            _ => None,
        };
        accept_at(action, node, "snapshots (start a snapshot at a node)", ctl)
    }

    fn start(&mut self, ctl: &mut Control<'_, A>) {
        for pos in 0..self.issued.len() {
            self.schedule(pos, ctl);
        }
    }

    fn on_input(&mut self, node: NodeId, _input: &Input, ctl: &mut Control<'_, A>) {
        self.seen(node, None, ctl);
    }

    fn on_deliver(&mut self, from: NodeId, to: NodeId, msg_id: u64, ctl: &mut Control<'_, A>) {
        let sender = ctl.peers().index_of(from);
        self.seen(to, Some((sender, msg_id)), ctl);
    }

    fn on_output(&mut self, node: NodeId, output: &Output, ctl: &mut Control<'_, A>) {
        let Output::Recorded(local) = output;
        self.part(node, local, ctl);
    }

    fn on_wake(&mut self, node: NodeId, tag: u64, ctl: &mut Control<'_, A>) {
        if tag != TRANSFER {
            return;
        }
        let pos = ctl.peers().index_of(node);
        let n = ctl.peers().len();
        if n > 1 && self.under_limit(pos) {
            self.issued[pos] += 1;
            let mut other = ctl.rng().gen_range(0..n - 1);
            if other >= pos {
                other += 1;
            }
            let to = ctl.peers().ids()[other];
            let amount = ctl.rng().gen_range(1..=self.max_amount);
            let now = ctl.now();
            ctl.input_at(now, node, Input::Transfer { to, amount });
        }
        self.schedule(pos, ctl);
    }

    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, A>) {
        if let Action::Snapshot(node) = *action {
            let pos = ctl.peers().index_of(node);
            self.started[pos] += 1;
            let id = SnapshotId {
                initiator: node,
                number: self.started[pos],
            };
            self.snapshots.insert(
                id,
                Taking {
                    started: ctl.now(),
                    completed: None,
                    parts: BTreeMap::new(),
                    log_from: self.log.iter().map(Vec::len).collect(),
                },
            );
            self.open += 1;
            self.order.push(id);
            let now = ctl.now();
            ctl.input_at(now, node, Input::Snapshot);
        }
    }

    fn finish(&mut self, ctl: &mut Control<'_, A>, report: &mut Report) {
        let ids = ctl.peers().ids().to_vec();
        let n = ids.len() as u64;
        let count = |kind: &str| {
            ctl.messages_by_kind()
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, c)| *c)
        };
        let (markers, transfers) = (count("Marker"), count("Transfer"));
        let horizon = report.ended_by == "horizon";
        let incomplete: Vec<SnapshotId> = self
            .order
            .iter()
            .copied()
            .filter(|id| self.snapshots[id].completed.is_none())
            .collect();
        if !incomplete.is_empty() && !horizon {
            ctl.violation(
                "snapshot-incomplete",
                format!("snapshots {incomplete:?} never completed, and nothing was left to happen"),
            );
        }
        if incomplete.is_empty() && markers != n * (n - 1) * self.order.len() as u64 {
            ctl.violation(
                "markers",
                format!(
                    "{markers} markers were sent for {} snapshots of {n} processes; exactly one per directed channel is {}",
                    self.order.len(),
                    n * (n - 1) * self.order.len() as u64
                ),
            );
        }
        let mut balances = BTreeMap::new();
        for &id in &ids {
            if let Some(p) = ctl.process(id) {
                balances.insert(id.to_string(), p.balance());
            }
        }
        let held: u64 = balances.values().sum();
        if ctl.in_flight() == 0 && held != self.money {
            ctl.violation(
                "money",
                format!(
                    "nothing is in transit and the balances add up to {held}, not {}",
                    self.money
                ),
            );
        }
        let snapshots: Vec<RecordedSnapshot> = self
            .order
            .iter()
            .map(|id| {
                let t = &self.snapshots[id];
                let mut channels = Vec::new();
                for (to, part) in &t.parts {
                    for c in &part.channels {
                        channels.push(RecordedChannel {
                            from: c.from,
                            to: *to,
                            amounts: c.amounts.clone(),
                        });
                    }
                }
                let total = recorded_total(t);
                RecordedSnapshot {
                    initiator: id.initiator,
                    number: id.number,
                    started_ns: t.started.as_nanos(),
                    completed_ns: t.completed.map(Time::as_nanos),
                    states: t
                        .parts
                        .iter()
                        .map(|(k, p)| (k.to_string(), p.balance))
                        .collect(),
                    channels,
                    recorded_total: total,
                    consistent: t.completed.map(|_| total == self.money),
                }
            })
            .collect();
        report.sections.snapshot = Some(SnapshotReport {
            money: self.money,
            transfers,
            markers,
            completed: snapshots
                .iter()
                .filter(|s| s.completed_ns.is_some())
                .count() as u64,
            consistent: snapshots
                .iter()
                .filter(|s| s.consistent == Some(true))
                .count() as u64,
            snapshots,
            balances,
        });
    }
}
