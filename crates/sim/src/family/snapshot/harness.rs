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
        }
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
                },
            );
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
