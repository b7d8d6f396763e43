//! The clock-synchronization family in the simulator: periodic "sync now" inputs, the
//! corrections applied to the drifting clocks, monitors and figures.
//!
//! Every `sync_interval` (default 1s, from time 0) each live process gets the `Sync` input; a
//! scripted `sync = ID` event gives it to one process. A process's `Adjust` output is applied to
//! its clock at once with [`Control::adjust_clock`] (a step or a slew, as `[clocks] adjust` says).
//!
//! Figures (the report's `clock` section), measured over the live *clients*: the processes the
//! algorithm adjusts (not Cristian's time server nor NTP's stratum-1 servers, whose clocks are
//! the reference):
//! - `max_skew_ns`: the largest difference between two clients' clocks at the end;
//! - `max_error_ns`: the largest distance of a client's clock from true time at the end;
//! - `worst_skew_ns`, `worst_error_ns`: the same, worst over the run from the first moment every
//!   live client had made one correction (`first_sync_ns`). Clocks drift linearly between
//!   corrections, so the worst is found at the corrections (just before and after each) and the
//!   ticks; under `adjust = "slew"` a slew ending between those points is not sampled.
//! - `rounds`: synchronization rounds completed (a Cristian or NTP client's exchange with its
//!   servers, a Berkeley master's poll and averaging).
//!
//! Monitor `sync-bound`: when a correction names a reference clock and an error bound (Cristian),
//! the clock once corrected must be within that bound of the reference clock.

pub use super::report::ClockReport;
use crate::clocks::ClockReading;
use crate::engine::{Control, Harness};
use crate::family::common::accept_at;
use crate::report::Report;
use crate::scenario::{Action, Checked, ScenarioError};
use distsync_core::clock_sync::{ClockSync, Input, Output};
use distsync_core::{NodeId, Time};
use std::collections::BTreeMap;
use std::time::Duration;

/// The default `sync_interval`.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(1);

const TICK: u64 = 1;

/// The harness of clock-synchronization runs.
#[derive(Clone)]
pub struct ClockHarness {
    interval: Duration,
    /// `client[pos]`: the process at membership position `pos` is adjusted by the algorithm.
    client: Vec<bool>,
    corrected: Vec<bool>,
    first_sync: Option<Time>,
    worst_skew: f64,
    worst_error: f64,
    rounds: u64,
    adjustments: u64,
    bound_checks: u64,
    worst_bound_ratio: f64,
    ignored: BTreeMap<NodeId, u64>,
    no_majority: u64,
    masters: Vec<NodeId>,
}

impl ClockHarness {
    /// Checks the scenario against algorithm `A`.
    pub fn new<A: ClockSync>(
        checked: &Checked,
        origin: &str,
    ) -> Result<ClockHarness, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let scenario = &checked.scenario;
        let peers = &checked.peers;
        let params = scenario.params();
        A::validate(&params, peers).map_err(|e| err(e.field, e.message))?;
        let interval = scenario
            .clock_sync
            .sync_interval
            .unwrap_or(DEFAULT_SYNC_INTERVAL);
        if interval.is_zero() {
            return Err(err(
                "sync_interval",
                "must be longer than zero (write it with a unit, like \"1s\")".into(),
            ));
        }
        if scenario.workload.is_some() {
            return Err(err(
                "workload",
                format!(
                    "`[workload]` applies to mutual exclusion, and `{}` synchronizes clocks",
                    scenario.algorithm
                ),
            ));
        }
        for (_, i, action) in &checked.actions {
            let what = match action {
                Action::Request(_) => "request",
                Action::Snapshot(_) => "snapshot",
                Action::Multicast(_) => "multicast",
                _ => continue,
            };
            return Err(err(
                &format!("event[{i}].{what}"),
                format!(
                    "`{what}` events do not apply to `{}`, a clock-synchronization algorithm (use `sync = ID`)",
                    scenario.algorithm
                ),
            ));
        }
        let clients = A::clients(peers, &params);
        Ok(ClockHarness {
            interval,
            client: peers.ids().iter().map(|i| clients.contains(i)).collect(),
            corrected: vec![false; peers.len()],
            first_sync: None,
            worst_skew: 0.0,
            worst_error: 0.0,
            rounds: 0,
            adjustments: 0,
            bound_checks: 0,
            worst_bound_ratio: 0.0,
            ignored: BTreeMap::new(),
            no_majority: 0,
            masters: Vec::new(),
        })
    }

    /// Skew and error over the live clients now, in ns.
    fn measure<A: ClockSync>(&self, ctl: &Control<'_, A>) -> (f64, f64) {
        let errors: Vec<f64> = ctl
            .peers()
            .ids()
            .iter()
            .enumerate()
            .filter(|&(pos, &id)| self.client[pos] && ctl.alive(id))
            .map(|(_, &id)| ctl.clock_error_ns(id))
            .collect();
        if errors.is_empty() {
            return (0.0, 0.0);
        }
        let hi = errors.iter().copied().fold(f64::MIN, f64::max);
        let lo = errors.iter().copied().fold(f64::MAX, f64::min);
        let worst = errors.iter().map(|e| e.abs()).fold(0.0, f64::max);
        (hi - lo, worst)
    }

    /// Updates the worst figures, once the first synchronization is complete.
    fn sample<A: ClockSync>(&mut self, ctl: &Control<'_, A>) {
        if self.first_sync.is_some() {
            let (skew, error) = self.measure(ctl);
            self.worst_skew = self.worst_skew.max(skew);
            self.worst_error = self.worst_error.max(error);
        }
    }

    fn note_first_sync<A: ClockSync>(&mut self, ctl: &Control<'_, A>) {
        if self.first_sync.is_some() {
            return;
        }
        let ids = ctl.peers().ids();
        let all =
            (0..ids.len()).all(|p| !self.client[p] || !ctl.alive(ids[p]) || self.corrected[p]);
        if all && self.corrected.iter().any(|&c| c) {
            self.first_sync = Some(ctl.now());
        }
    }

    fn adjust<A: ClockSync>(
        &mut self,
        node: NodeId,
        delta_ns: i64,
        bound_ns: Option<u64>,
        reference: Option<NodeId>,
        ctl: &mut Control<'_, A>,
    ) {
        self.sample(ctl);
        if let (Some(bound), Some(reference)) = (bound_ns, reference) {
            let target = ctl.clock_error_ns(node) + delta_ns as f64;
            let residual = target - ctl.clock_error_ns(reference);
            self.bound_checks += 1;
            let ratio = if bound == 0 {
                if residual.abs() < 0.5 {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                residual.abs() / bound as f64
            };
            self.worst_bound_ratio = self.worst_bound_ratio.max(ratio);
            if residual.abs() > bound as f64 {
                ctl.violation(
                    "sync-bound",
                    format!(
                        "node {node}'s clock, corrected by {delta_ns}ns, is {:.0}ns from node {reference}'s, beyond the bound of {bound}ns it reported",
                        residual
                    ),
                );
            }
        }
        ctl.adjust_clock(node, delta_ns);
        self.adjustments += 1;
        let pos = ctl.peers().index_of(node);
        self.corrected[pos] = true;
        self.note_first_sync(ctl);
        self.sample(ctl);
    }
}

impl<A: ClockSync> Harness<A> for ClockHarness {
    fn accepts(&self, action: &Action, ctl: &Control<'_, A>) -> Result<(), String> {
        let node = match *action {
            Action::Sync(node) => Some(node),
            _ => None,
        };
        accept_at(
            action,
            node,
            "clock synchronization (synchronize a node)",
            ctl,
        )
    }

    fn start(&mut self, ctl: &mut Control<'_, A>) {
        let first = ctl.peers().ids()[0];
        ctl.wake(Time::ZERO, first, TICK);
    }

    fn on_output(&mut self, node: NodeId, output: &Output, ctl: &mut Control<'_, A>) {
        match output {
            Output::Adjust {
                delta_ns,
                bound_ns,
                reference,
            } => self.adjust(node, *delta_ns, *bound_ns, *reference, ctl),
            Output::Round { ignored, .. } => {
                self.rounds += 1;
                for &i in ignored {
                    *self.ignored.entry(i).or_default() += 1;
                }
            }
            Output::NoMajority { .. } => self.no_majority += 1,
            Output::Master(m) => {
                if self.masters.last() != Some(m) {
                    self.masters.push(*m);
                }
            }
        }
    }

    fn on_wake(&mut self, _node: NodeId, tag: u64, ctl: &mut Control<'_, A>) {
        if tag != TICK {
            return;
        }
        let now = ctl.now();
        for id in ctl.peers().ids().to_vec() {
            if ctl.alive(id) {
                ctl.input_at(now, id, Input::Sync);
            }
        }
        self.sample(ctl);
        let first = ctl.peers().ids()[0];
        ctl.wake(now + self.interval, first, TICK);
    }

    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, A>) {
        if let Action::Sync(node) = *action {
            if ctl.alive(node) {
                let now = ctl.now();
                ctl.input_at(now, node, Input::Sync);
            }
        }
    }

    fn on_crash(&mut self, _node: NodeId, ctl: &mut Control<'_, A>) {
        // A crashed client no longer counts; the others may now all be corrected.
        self.note_first_sync(ctl);
    }

    fn finish(&mut self, ctl: &mut Control<'_, A>, report: &mut Report) {
        self.sample(ctl);
        let (skew, error) = self.measure(ctl);
        let ids = ctl.peers().ids().to_vec();
        let clocks = ids
            .iter()
            .map(|&id| ClockReading {
                node: id,
                error_ns: ctl.clock_error_ns(id).round() as i64,
            })
            .collect();
        let strata = ids
            .iter()
            .filter_map(|&id| Some((id.to_string(), ctl.process(id)?.stratum()?)))
            .collect();
        let synced = self.first_sync.is_some();
        report.sections.clock = Some(ClockReport {
            max_skew_ns: skew.round() as u64,
            max_error_ns: error.round() as u64,
            worst_skew_ns: synced.then(|| self.worst_skew.round() as u64),
            worst_error_ns: synced.then(|| self.worst_error.round() as u64),
            first_sync_ns: self.first_sync.map(Time::as_nanos),
            rounds: self.rounds,
            adjustments: self.adjustments,
            sync_interval_ns: self.interval.as_nanos() as u64,
            bound_checks: self.bound_checks,
            worst_bound_ratio: self.worst_bound_ratio,
            ignored: self
                .ignored
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            no_majority: self.no_majority,
            masters: self.masters.clone(),
            strata,
            clocks,
        });
    }
}
