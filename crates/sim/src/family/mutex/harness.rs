//! The mutual-exclusion family in the simulator: workloads, monitors and metrics.
//!
//! Workloads: `poisson` (independent arrivals at `rate` per node; an arrival at a busy node waits
//! its turn there), `saturated` (every node re-requests the moment it exits: heavy load), `light`
//! (one request in the whole system at a time: the next is made once the previous one's messages
//! have all arrived), `none` (scripted `request` events only). A request stays in the critical
//! section for the workload's `cs` time E, then the harness gives the Release input.
//!
//! Monitors: mutual exclusion (never two nodes between Enter and Exit), deadlock (nothing left
//! that could happen while requests wait), starvation (requests of a finite workload unserved at
//! the end), and the contract between outputs and `in_critical_section()` (at each Enter, and
//! at each Release: a process stays in the critical section from its Enter to its Release).
//!
//! Metrics follow ORACLES.md: all messages of the run per entry; synchronization delay from an
//! Exit to the next Enter, counted only when some other request was waiting at that Exit;
//! response time from the Request input to the Exit; bypasses counted against request times.

use crate::engine::{Control, Harness};
use crate::report::{MutexReport, Report, Stats};
use crate::scenario::{Action, Checked, ScenarioError, WorkloadKind};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{format_duration, NodeId, Time};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use std::cell::Cell;
use std::time::Duration;

const ARRIVAL: u64 = 1;
const LIGHT_NEXT: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Waiting(usize),
    InCs(usize),
}

#[derive(Clone, Debug)]
struct NodeLoad {
    competes: bool,
    state: State,
    /// Requests that arrived while the node was busy, made after its Exit.
    backlog: u64,
    /// Workload requests counted against `requests` (arrivals, or issues for saturated/light).
    counted: u64,
}

#[derive(Clone, Debug)]
struct Record {
    node: NodeId,
    issued: Time,
    entered: Option<Time>,
    exited: Option<Time>,
    abandoned: bool,
    /// The process has been given the Request input (until then it is pending, and the process
    /// itself does not yet ask).
    given: bool,
}

/// The light workload's default pause after an exit before the next request: 20 delay bounds,
/// so that the previous request's last messages have usually arrived.
pub(crate) fn default_gap(delay: &crate::scenario::DelaySpec) -> Duration {
    (delay.bound() * 20).max(Duration::from_micros(1))
}

/// The harness of mutual-exclusion runs.
#[derive(Clone)]
pub struct MutexHarness {
    kind: WorkloadKind,
    exp: Option<Exp<f64>>,
    cs: Duration,
    limit: Option<u64>,
    gap: Duration,
    light_checks: u32,
    load: Vec<NodeLoad>,
    records: Vec<Record>,
    in_cs: Vec<NodeId>,
    /// The trace `seq` of each node's latest Enter output, when a trace is kept.
    enter_lines: Vec<Option<u64>>,
    pending_exit: Option<Time>,
    sync_delays: Vec<u64>,
    responses: Vec<u64>,
    entries: u64,
    first_request: Option<Time>,
    last_exit: Option<Time>,
    deadlock_reported: bool,
    /// `done()` as last computed; every callback that may change the workload's state clears
    /// it, so the engine's question after each event costs O(1) instead of a scan of the nodes.
    done: Cell<Option<bool>>,
}

impl MutexHarness {
    /// Checks the scenario against algorithm `A` and prepares its workload.
    pub fn new<A: MutualExclusion>(
        checked: &Checked,
        origin: &str,
    ) -> Result<MutexHarness, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let scenario = &checked.scenario;
        let peers = &checked.peers;
        let params = scenario.params();
        A::validate(&params, peers).map_err(|e| err(e.field, e.message))?;
        let competitors = A::competitors(peers, &params);
        for (at, i, action) in &checked.actions {
            let _ = at;
            if let Action::Request(n) = action {
                if !competitors.contains(n) {
                    return Err(err(
                        &format!("event[{i}].request"),
                        format!(
                            "node {n} does not compete for the critical section in {}",
                            scenario.algorithm
                        ),
                    ));
                }
            }
        }
        let workload = scenario.workload.clone();
        let kind = workload.as_ref().map_or(WorkloadKind::None, |w| w.kind);
        let cs = workload
            .as_ref()
            .map_or(Duration::from_millis(10), |w| w.cs);
        let limit = workload.as_ref().and_then(|w| w.requests);
        let gap = workload
            .as_ref()
            .and_then(|w| w.gap)
            .unwrap_or_else(|| default_gap(&scenario.network.delay));
        let exp = match (kind, workload.as_ref().and_then(|w| w.rate)) {
            (WorkloadKind::Poisson, Some(rate)) => {
                Some(Exp::new(rate).map_err(|e| err("workload.rate", e.to_string()))?)
            }
            _ => None,
        };
        let load = peers
            .ids()
            .iter()
            .map(|id| NodeLoad {
                competes: competitors.contains(id),
                state: State::Idle,
                backlog: 0,
                counted: 0,
            })
            .collect();
        Ok(MutexHarness {
            kind,
            exp,
            cs,
            limit,
            gap,
            light_checks: 0,
            load,
            records: Vec::new(),
            in_cs: Vec::new(),
            enter_lines: vec![None; peers.len()],
            pending_exit: None,
            sync_delays: Vec::new(),
            responses: Vec::new(),
            entries: 0,
            first_request: None,
            last_exit: None,
            deadlock_reported: false,
            done: Cell::new(None),
        })
    }

    fn under_limit(&self, pos: usize) -> bool {
        self.limit.is_none_or(|l| self.load[pos].counted < l)
    }

    /// `done()` worked out from the workload's state (a scan of the nodes), and cached until a
    /// callback changes that state.
    #[cold]
    #[inline(never)]
    fn compute_done(&self) -> bool {
        let finite = self.limit.is_some() || self.kind == WorkloadKind::None;
        let done = finite
            && self.load.iter().enumerate().all(|(p, l)| {
                !l.competes
                    || (l.state == State::Idle
                        && l.backlog == 0
                        && (self.kind == WorkloadKind::None || !self.under_limit(p)))
            });
        self.done.set(Some(done));
        done
    }

    fn issue<A: MutualExclusion>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        let node = ctl.peers().ids()[pos];
        let now = ctl.now();
        self.records.push(Record {
            node,
            issued: now,
            entered: None,
            exited: None,
            abandoned: false,
            given: false,
        });
        self.load[pos].state = State::Waiting(self.records.len() - 1);
        self.first_request.get_or_insert(now);
        ctl.input_at(now, node, Input::Request);
    }

    /// A request arrives at `pos`: made at once if the node is idle, else queued behind its own.
    fn arrive<A: MutualExclusion>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        if self.load[pos].state == State::Idle {
            self.issue(pos, ctl);
        } else {
            self.load[pos].backlog += 1;
        }
    }

    fn schedule_arrival<A: MutualExclusion>(&mut self, pos: usize, ctl: &mut Control<'_, A>) {
        if let Some(exp) = &self.exp {
            let secs: f64 = exp.sample(ctl.rng());
            let at = ctl.now() + Duration::from_secs_f64(secs);
            let node = ctl.peers().ids()[pos];
            ctl.wake(at, node, ARRIVAL);
        }
    }

    /// Light load: the next requester, at random among live competitors with requests left.
    fn light_next<A: MutualExclusion>(&mut self, ctl: &mut Control<'_, A>) {
        let ids = ctl.peers().ids().to_vec();
        let candidates: Vec<usize> = (0..self.load.len())
            .filter(|&p| self.load[p].competes && self.under_limit(p) && ctl.alive(ids[p]))
            .collect();
        if candidates.is_empty() {
            return;
        }
        let pos = candidates[ctl.rng().gen_range(0..candidates.len())];
        self.load[pos].counted += 1;
        self.light_checks = 0;
        self.arrive(pos, ctl);
    }

    fn waiting_nodes(&self, ids: &[NodeId], except: Option<usize>) -> Vec<NodeId> {
        (0..self.load.len())
            .filter(|&p| Some(p) != except && matches!(self.load[p].state, State::Waiting(_)))
            .map(|p| ids[p])
            .collect()
    }

    fn unserved(&self) -> u64 {
        let waiting = self
            .records
            .iter()
            .filter(|r| r.entered.is_none() && !r.abandoned)
            .count() as u64;
        waiting + self.load.iter().map(|l| l.backlog).sum::<u64>()
    }

    /// The most times one request was overtaken: requests made strictly later that entered
    /// before it (or at all, for a request never served).
    fn max_bypass(&self) -> u64 {
        let mut served: Vec<u64> = self
            .records
            .iter()
            .filter_map(|r| r.entered.map(|t| t.as_nanos()))
            .collect();
        served.sort_unstable();
        served.dedup();
        let mut fenwick = vec![0u64; served.len() + 1];
        let add = |f: &mut Vec<u64>, mut i: usize| {
            while i < f.len() {
                f[i] += 1;
                i += i & i.wrapping_neg();
            }
        };
        let sum = |f: &Vec<u64>, mut i: usize| {
            let mut s = 0;
            while i > 0 {
                s += f[i];
                i -= i & i.wrapping_neg();
            }
            s
        };
        let mut order: Vec<&Record> = self.records.iter().filter(|r| !r.abandoned).collect();
        order.sort_by_key(|r| std::cmp::Reverse(r.issued));
        let mut best = 0;
        let mut i = 0;
        while i < order.len() {
            let mut j = i;
            while j < order.len() && order[j].issued == order[i].issued {
                j += 1;
            }
            // Query the whole group of equal request times before inserting it.
            for r in &order[i..j] {
                let before = match r.entered {
                    Some(t) => served.partition_point(|&e| e < t.as_nanos()),
                    None => served.len(),
                };
                best = best.max(sum(&fenwick, before));
            }
            for r in &order[i..j] {
                if let Some(t) = r.entered {
                    add(
                        &mut fenwick,
                        served.partition_point(|&e| e < t.as_nanos()) + 1,
                    );
                }
            }
            i = j;
        }
        best
    }
}

impl<A: MutualExclusion> Harness<A> for MutexHarness {
    fn accepts(&self, action: &Action, ctl: &Control<'_, A>) -> Result<(), String> {
        let Action::Request(node) = *action else {
            return Err(format!(
                "{action:?} does not apply to mutual exclusion (request the critical section)"
            ));
        };
        let pos = ctl
            .peers()
            .position(node)
            .ok_or(format!("node {node} is not a member"))?;
        if !self.load[pos].competes {
            return Err(format!(
                "node {node} does not compete for the critical section"
            ));
        }
        if !ctl.alive(node) {
            return Err(format!("node {node} is down"));
        }
        Ok(())
    }

    fn describe(&self, node: NodeId, process: Option<&A>) -> Option<String> {
        let process = process?;
        if process.in_critical_section() {
            return Some("in CS".into());
        }
        let waiting = self
            .records
            .iter()
            .rev()
            .find(|r| r.node == node)
            .is_some_and(|r| r.entered.is_none() && !r.abandoned && r.given);
        waiting.then(|| "requesting".into())
    }

    fn on_input(&mut self, node: NodeId, input: &Input, ctl: &mut Control<'_, A>) {
        let pos = ctl.peers().index_of(node);
        if *input == Input::Request {
            if let State::Waiting(rec) = self.load[pos].state {
                self.records[rec].given = true;
            }
        }
        // Between Enter and Release the process is in the critical section (the checker's
        // output-contract): one that left it on its own (a duplicated token taken for a new
        // one) is found when the application releases it.
        if *input == Input::Release
            && matches!(self.load[pos].state, State::InCs(_))
            && ctl.process(node).is_some_and(|p| !p.in_critical_section())
        {
            ctl.violation(
                "contract",
                format!(
                    "node {node} is released from the critical section it entered, but in_critical_section() is false"
                ),
            );
        }
    }

    fn start(&mut self, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        for pos in 0..self.load.len() {
            if !self.load[pos].competes {
                continue;
            }
            match self.kind {
                WorkloadKind::Saturated if self.under_limit(pos) => {
                    self.load[pos].counted += 1;
                    self.issue(pos, ctl);
                }
                WorkloadKind::Poisson if self.under_limit(pos) => self.schedule_arrival(pos, ctl),
                _ => {}
            }
        }
        if self.kind == WorkloadKind::Light {
            self.light_next(ctl);
        }
    }

    fn on_output(&mut self, node: NodeId, output: &Output, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        let pos = ctl.peers().index_of(node);
        let now = ctl.now();
        match (output, self.load[pos].state) {
            (Output::Enter, State::Waiting(rec)) => {
                self.enter_lines[pos] = ctl.last_trace_seq();
                if let Some(&other) = self.in_cs.first() {
                    let other_pos = ctl.peers().index_of(other);
                    let events = [self.enter_lines[other_pos], self.enter_lines[pos]]
                        .into_iter()
                        .flatten()
                        .collect();
                    ctl.violation_of(
                        "mutual-exclusion",
                        format!(
                            "node {node} entered the critical section while node {other} was in it"
                        ),
                        vec![other, node],
                        events,
                    );
                }
                if ctl.process(node).is_some_and(|p| !p.in_critical_section()) {
                    ctl.violation(
                        "contract",
                        format!("node {node} output Enter but in_critical_section() is false"),
                    );
                }
                self.in_cs.push(node);
                self.load[pos].state = State::InCs(rec);
                self.records[rec].entered = Some(now);
                self.entries += 1;
                if let Some(exit) = self.pending_exit.take() {
                    self.sync_delays.push((now - exit).as_nanos() as u64);
                }
                ctl.input_at(now + self.cs, node, Input::Release);
            }
            (Output::Exit, State::InCs(rec)) => {
                self.in_cs.retain(|&n| n != node);
                self.load[pos].state = State::Idle;
                let r = &mut self.records[rec];
                r.exited = Some(now);
                self.responses.push((now - r.issued).as_nanos() as u64);
                self.last_exit = Some(now);
                let others_wait = self
                    .load
                    .iter()
                    .enumerate()
                    .any(|(p, l)| p != pos && matches!(l.state, State::Waiting(_)));
                if others_wait {
                    self.pending_exit = Some(now);
                }
                if self.load[pos].backlog > 0 {
                    self.load[pos].backlog -= 1;
                    self.issue(pos, ctl);
                } else {
                    match self.kind {
                        WorkloadKind::Saturated if self.under_limit(pos) => {
                            self.load[pos].counted += 1;
                            self.issue(pos, ctl);
                        }
                        WorkloadKind::Light => ctl.wake(now + self.gap, node, LIGHT_NEXT),
                        _ => {}
                    }
                }
            }
            (Output::Enter, state) => ctl.violation(
                "contract",
                format!("node {node} output Enter without a pending request (it was {state:?})"),
            ),
            (Output::Exit, state) => ctl.violation(
                "contract",
                format!("node {node} output Exit outside the critical section (it was {state:?})"),
            ),
        }
    }

    fn on_wake(&mut self, node: NodeId, tag: u64, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        let pos = ctl.peers().index_of(node);
        match tag {
            ARRIVAL => {
                if ctl.alive(node) && self.under_limit(pos) {
                    self.load[pos].counted += 1;
                    self.arrive(pos, ctl);
                }
                if self.under_limit(pos) {
                    self.schedule_arrival(pos, ctl);
                }
            }
            LIGHT_NEXT => {
                // Wait for the previous request's last messages, but not forever: a token
                // algorithm keeps its token moving and is never quiet.
                if ctl.in_flight() > 0 && self.light_checks < 10 {
                    self.light_checks += 1;
                    ctl.wake(ctl.now() + self.gap, node, LIGHT_NEXT);
                } else {
                    self.light_next(ctl);
                }
            }
            _ => {}
        }
    }

    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        if let Action::Request(node) = action {
            if ctl.alive(*node) {
                let pos = ctl.peers().index_of(*node);
                self.arrive(pos, ctl);
            }
        }
    }

    fn on_crash(&mut self, node: NodeId, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        let pos = ctl.peers().index_of(node);
        self.in_cs.retain(|&n| n != node);
        if let State::Waiting(rec) | State::InCs(rec) = self.load[pos].state {
            self.records[rec].abandoned = true;
        }
        self.load[pos].state = State::Idle;
        self.load[pos].backlog = 0;
    }

    fn on_recover(&mut self, node: NodeId, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        let pos = ctl.peers().index_of(node);
        if self.kind == WorkloadKind::Saturated && self.load[pos].competes && self.under_limit(pos)
        {
            self.load[pos].counted += 1;
            self.issue(pos, ctl);
        }
    }

    fn on_idle(&mut self, ctl: &mut Control<'_, A>) {
        self.done.set(None);
        let ids = ctl.peers().ids().to_vec();
        let waiting = self.waiting_nodes(&ids, None);
        if !waiting.is_empty() && !self.deadlock_reported {
            self.deadlock_reported = true;
            ctl.violation(
                "deadlock",
                format!("nothing is left that could happen, and nodes {waiting:?} still wait for the critical section"),
            );
        }
    }

    // Asked after every event: the cached answer is read in place (inlined into the engine's
    // turn), and only a workload change since the last question costs the call that looks.
    #[inline]
    fn done(&self) -> bool {
        match self.done.get() {
            Some(done) => done,
            None => self.compute_done(),
        }
    }

    fn finish(&mut self, ctl: &mut Control<'_, A>, report: &mut Report) {
        self.done.set(None);
        let unserved = self.unserved();
        let finite = self.limit.is_some() || self.kind == WorkloadKind::None;
        if finite && unserved > 0 {
            let oldest = self
                .records
                .iter()
                .filter(|r| r.entered.is_none() && !r.abandoned)
                .min_by_key(|r| r.issued);
            let detail = match oldest {
                Some(r) => format!(
                    "{unserved} requests unserved when the run ended; the oldest, node {}'s, waited since {}",
                    r.node,
                    format_duration(Duration::from_nanos(r.issued.as_nanos()))
                ),
                None => format!("{unserved} requests unserved when the run ended"),
            };
            ctl.violation("starvation", detail);
        }
        let active = match (self.first_request, self.last_exit) {
            (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        report.sections.mutex = Some(MutexReport {
            entries: self.entries,
            messages_per_entry: if self.entries == 0 {
                0.0
            } else {
                ctl.messages_sent() as f64 / self.entries as f64
            },
            sync_delay_ns: Stats::of(&mut self.sync_delays),
            response_time_ns: Stats::of(&mut self.responses),
            throughput_per_s: if active > 0.0 {
                self.entries as f64 / active
            } else {
                0.0
            },
            unserved_requests: unserved,
            max_bypass: self.max_bypass(),
            abandoned_requests: self.records.iter().filter(|r| r.abandoned).count() as u64,
        });
    }
}
