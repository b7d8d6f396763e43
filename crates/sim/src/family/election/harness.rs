//! The leader-election family in the simulator: scripted elections, failure detection, monitors
//! and metrics.
//!
//! Every process starts knowing the initial coordinator (`coordinator`, else the highest id).
//! Elections start with scripted `elect = ID` events (the process is given the Start input), with
//! recoveries (a recovered process holds an election), and, with `detect = "timeout"`, when a
//! process misses the coordinator's heartbeats for `heartbeat_timeout` (the algorithm then runs
//! inside [`Detector`]).
//!
//! An *election*, for the monitors, begins with a trigger (an `elect`, `crash` or `recover`
//! event) while the system is settled, i.e. every live process names the same leader, none is
//! electing, none of the algorithm's messages is in flight (acknowledgements and heartbeats
//! aside) and none waits to be resent past a crashed process (`pending()`), and lasts until the
//! next trigger that finds it settled. A trigger that finds it
//! unsettled, later than the election's first instant, *disturbs* it.
//!
//! Monitors:
//! - `one-leader`: within an undisturbed election, every `Leader` output names the same process
//!   (checked as outputs happen).
//! - `agreement`: at the end, every live process names the same leader.
//! - `validity`: at the end, for algorithms that promise it, that leader is the highest live id
//!   (checked once some election happened: the configured initial coordinator is not judged).
//! - `termination`: at the end (the horizon, or when nothing is left to happen), no live process
//!   is still electing or without a leader.
//! - `contract`: a `Leader(x)` output agrees with the process's `leader()`.
//!
//! Metrics: the algorithm's own messages (the ring link's acknowledgements and the detector's
//! heartbeats are counted in the top-level `messages` only), the completion time of the first
//! election that announced a leader (from its trigger to its last `Leader` output), the longest
//! causal chain of the algorithm's messages, and the round in which the leader was elected for
//! algorithms that work in rounds.

use crate::engine::{Control, Harness};
use crate::report::{ElectionMessages, ElectionReport, Report};
use crate::scenario::{Action, Checked, ScenarioError};
use distsync_algorithms::election::{detector::HEARTBEAT, ring_link::ACK};
use distsync_core::election::{Election, Input, Output};
use distsync_core::{format_duration, NodeId, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Message kinds that are not the election algorithm's own: they are left out of the election's
/// message counts and do not lengthen causal chains.
pub const OVERHEAD_KINDS: [&str; 2] = [ACK, HEARTBEAT];

/// One election, as the monitors delimit it.
#[derive(Clone, Debug)]
struct Episode {
    start: Time,
    disturbed: bool,
    /// The leader the first `Leader` output of this election named.
    announced: Option<NodeId>,
    /// Who output it, and the trace `seq` of that output (when a trace is kept).
    announced_by: Option<(NodeId, Option<u64>)>,
    /// A one-leader violation was recorded for this election.
    reported: bool,
    /// The last `Leader` output of this election.
    last_output: Option<Time>,
}

/// The harness of election runs.
#[derive(Clone)]
pub struct ElectionHarness {
    elects_highest: bool,
    /// The duration of the first election that announced a leader.
    completion: Option<u64>,
    outputs: u64,
    current: Option<Episode>,
    elections: u64,
    disturbed: u64,
    /// Whether the algorithm runs on a ring (its processes start assuming a coordinator that no
    /// election of the run named).
    ring: bool,
    /// The nodes that have output a leader since they last started.
    learned: BTreeSet<NodeId>,
}

impl ElectionHarness {
    /// Checks the scenario against algorithm `A`.
    pub fn new<A: Election>(checked: &Checked, origin: &str) -> Result<Self, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let scenario = &checked.scenario;
        A::validate(&scenario.params(), &checked.peers).map_err(|e| err(e.field, e.message))?;
        if scenario.workload.is_some() {
            return Err(err(
                "workload",
                format!(
                    "a workload drives mutual exclusion; {} is an election algorithm: start \
                     elections with `elect = ID` events, recoveries or `detect = \"timeout\"`",
                    scenario.algorithm
                ),
            ));
        }
        for (_, i, action) in &checked.actions {
            if let Action::Request(_) = action {
                return Err(err(
                    &format!("event[{i}].request"),
                    format!(
                        "`request` asks for a critical section; {} is an election algorithm \
                         (use `elect = ID`)",
                        scenario.algorithm
                    ),
                ));
            }
        }
        Ok(ElectionHarness {
            elects_highest: A::elects_highest(),
            completion: None,
            outputs: 0,
            current: None,
            elections: 0,
            disturbed: 0,
            ring: A::uses_ring(),
            learned: BTreeSet::new(),
        })
    }

    /// The leader every live process (but `except`) names, if they all name the same one, none
    /// is electing and none of the algorithm's messages is still travelling.
    fn settled<P: Election>(ctl: &Control<'_, P>, except: Option<NodeId>) -> Option<NodeId> {
        if ctl.in_flight_own() > 0 {
            return None;
        }
        let mut agreed = None;
        for (pos, &id) in ctl.peers().ids().iter().enumerate() {
            if Some(id) == except {
                continue;
            }
            let Some(p) = ctl.process_at(pos) else {
                continue;
            };
            if p.pending() {
                return None;
            }
            match (p.electing(), p.leader(), agreed) {
                (true, _, _) | (_, None, _) => return None,
                (false, Some(l), None) => agreed = Some(l),
                (false, Some(l), Some(a)) if l != a => return None,
                _ => {}
            }
        }
        agreed
    }

    /// An `elect`, `crash` or `recover` event happened now; a recovering node's fresh state does
    /// not count in deciding whether the system was settled.
    fn trigger<P: Election>(&mut self, ctl: &Control<'_, P>, recovering: Option<NodeId>) {
        let now = ctl.now();
        if let Some(e) = &mut self.current {
            if e.start == now {
                return; // simultaneous triggers start one election together
            }
            if Self::settled(ctl, recovering).is_none() {
                if !e.disturbed {
                    e.disturbed = true;
                    self.disturbed += 1;
                }
                return;
            }
        }
        self.close();
        self.elections += 1;
        self.current = Some(Episode {
            start: now,
            disturbed: false,
            announced: None,
            announced_by: None,
            reported: false,
            last_output: None,
        });
    }

    /// The current election is over: its duration is the completion time if it is the first
    /// that announced a leader.
    fn close(&mut self) {
        if let Some(e) = self.current.take() {
            if let (None, Some(last)) = (self.completion, e.last_output) {
                self.completion = Some(last.as_nanos() - e.start.as_nanos());
            }
        }
    }
}

impl<P: Election> Harness<P> for ElectionHarness {
    fn accepts(&self, action: &Action, ctl: &Control<'_, P>) -> Result<(), String> {
        let node = match *action {
            Action::Elect(node) => node,
            Action::ElectAll if (0..ctl.peers().len()).any(|pos| ctl.process_at(pos).is_some()) => {
                return Ok(())
            }
            Action::ElectAll => return Err("every node is down".into()),
            _ => {
                return Err(format!(
                    "{action:?} does not apply to leader election (start an election)"
                ))
            }
        };
        if !ctl.alive(node) {
            return Err(format!("node {node} is down or not a member"));
        }
        Ok(())
    }

    fn describe(&self, node: NodeId, process: Option<&P>) -> Option<String> {
        let process = process?;
        if process.electing() {
            return Some("electing".into());
        }
        // A ring election's process starts assuming a coordinator (its card shows it) that no
        // election named: it wears a leader badge once an election of the run told it one.
        if self.ring && !self.learned.contains(&node) {
            return None;
        }
        process.leader().map(|l| format!("leader {l}"))
    }

    fn start(&mut self, _ctl: &mut Control<'_, P>) {}

    fn on_output(&mut self, node: NodeId, output: &Output, ctl: &mut Control<'_, P>) {
        let Output::Leader(leader) = *output;
        self.outputs += 1;
        self.learned.insert(node);
        if ctl
            .process(node)
            .is_some_and(|p| p.leader() != Some(leader))
        {
            ctl.violation(
                "contract",
                format!("node {node} output Leader({leader}) but its leader() says otherwise"),
            );
        }
        let Some(e) = &mut self.current else { return };
        e.last_output = Some(ctl.now());
        match e.announced {
            None => {
                e.announced = Some(leader);
                e.announced_by = Some((node, ctl.last_trace_seq()));
            }
            Some(first) if first != leader && !e.disturbed && !e.reported => {
                e.reported = true;
                let start = format_duration(Duration::from_nanos(e.start.as_nanos()));
                let (by, line) = e.announced_by.unwrap_or((node, None));
                let events = [line, ctl.last_trace_seq()].into_iter().flatten().collect();
                ctl.violation_of(
                    "one-leader",
                    format!(
                        "the election that began at {start} announced {first}, then node {node} \
                         announced {leader}"
                    ),
                    vec![by, node],
                    events,
                );
            }
            Some(_) => {}
        }
    }

    fn on_action(&mut self, action: &Action, ctl: &mut Control<'_, P>) {
        match *action {
            Action::Elect(node) => {
                self.trigger(ctl, None);
                if ctl.alive(node) {
                    let now = ctl.now();
                    ctl.input_at(now, node, Input::Start);
                }
            }
            // What one `elect` event per process in ring order does: the first triggers the
            // election, the others join it at the same instant, every live process is started.
            Action::ElectAll => {
                self.trigger(ctl, None);
                let now = ctl.now();
                for pos in 0..ctl.peers().len() {
                    if ctl.process_at(pos).is_some() {
                        ctl.input_at_position(now, pos, Input::Start);
                    }
                }
            }
            _ => {}
        }
    }

    fn on_crash(&mut self, _node: NodeId, ctl: &mut Control<'_, P>) {
        self.trigger(ctl, None);
    }

    fn on_recover(&mut self, node: NodeId, ctl: &mut Control<'_, P>) {
        self.learned.remove(&node);
        // Called before the recovered process starts: its fresh state does not count.
        self.trigger(ctl, Some(node));
    }

    fn finish(&mut self, ctl: &mut Control<'_, P>, report: &mut Report) {
        self.close();
        let mut known = Vec::new();
        let mut counts: BTreeMap<NodeId, usize> = BTreeMap::new();
        let mut unsettled = Vec::new();
        let mut highest_live = None;
        let mut rounds = None;
        for (pos, &id) in ctl.peers().ids().iter().enumerate() {
            let Some(p) = ctl.process_at(pos) else {
                continue;
            };
            highest_live = highest_live.max(Some(id));
            let leader = p.leader();
            known.push((id, leader.map(|l| l.0)));
            if let Some(l) = leader {
                *counts.entry(l).or_default() += 1;
            }
            if p.electing() || leader.is_none() {
                unsettled.push(id);
            }
            rounds = rounds.max(p.rounds());
        }
        // The report's map is keyed by the ids' text: built from a list already in the text's
        // order, it takes no comparison of strings beyond one pass (inserting a million ids in
        // ring order one by one was 8% of a million-process run).
        known.sort_unstable_by_key(|(id, _)| text_order(id.0));
        let known_by: BTreeMap<String, Option<u32>> = known
            .into_iter()
            .map(|(id, leader)| (id.0.to_string(), leader))
            .collect();
        let live = known_by.len();
        // The most named leader; among equals, the highest.
        let leader = counts
            .iter()
            .max_by_key(|(l, n)| (**n, **l))
            .map(|(l, _)| *l);
        let agreed = live > 0 && counts.len() == 1 && counts.values().all(|&n| n == live);
        if !unsettled.is_empty() {
            ctl.violation(
                "termination",
                format!(
                    "when the run ended, nodes {unsettled:?} were still electing or knew no leader"
                ),
            );
        }
        if counts.len() > 1 {
            let named: Vec<String> = counts
                .iter()
                .map(|(l, n)| format!("{n} name {l}"))
                .collect();
            ctl.violation(
                "agreement",
                format!(
                    "live processes name different leaders: {}",
                    named.join(", ")
                ),
            );
        }
        // A crashed leader is never valid; a live one must be the highest once some election
        // announced a result (the configured initial coordinator is not judged).
        if let (true, true, Some(l), Some(h)) = (self.elects_highest, agreed, leader, highest_live)
        {
            if !ctl.alive(l) {
                ctl.violation(
                    "validity",
                    format!("the leader, {l}, has crashed; the highest live process is {h}"),
                );
            } else if self.outputs > 0 && l != h {
                ctl.violation(
                    "validity",
                    format!("the leader is {l}, but the highest live process is {h}"),
                );
            }
        }
        let mut by_kind = BTreeMap::new();
        let mut total = 0;
        for &(kind, n) in ctl.messages_by_kind() {
            if !OVERHEAD_KINDS.contains(&kind) {
                by_kind.insert(kind.to_string(), n);
                total += n;
            }
        }
        report.sections.election = Some(ElectionReport {
            leader: leader.map(|l| l.0),
            agreed,
            known_by,
            messages: ElectionMessages { total, by_kind },
            completion_time_ns: self.completion,
            longest_chain: ctl.longest_chain(),
            rounds,
            elections: self.elections,
            disturbed: self.disturbed,
        });
    }
}

/// A key that orders numbers as their decimal text does ("10" before "9"): the digits padded
/// with zeros to ten, then the length (a shorter text is a prefix of the longer one it ties).
fn text_order(v: u32) -> (u64, u32) {
    let digits = v.checked_ilog10().unwrap_or(0) + 1;
    (u64::from(v) * 10u64.pow(10 - digits), digits)
}

#[cfg(test)]
mod tests {
    use super::text_order;

    #[test]
    fn text_order_is_the_order_of_the_decimal_text() {
        let mut values: Vec<u32> = vec![
            0,
            1,
            2,
            9,
            10,
            11,
            19,
            20,
            99,
            100,
            101,
            1000,
            999_999,
            1_000_000,
            4_294_967_295,
            4_000_000_000,
            123,
            1230,
            1229,
        ];
        values.extend((0..2000).map(|i| i * 7919 % 100_003));
        let mut by_key = values.clone();
        by_key.sort_by_key(|&v| text_order(v));
        let mut by_text = values;
        by_text.sort_by_key(|v| v.to_string());
        assert_eq!(by_key, by_text);
    }
}
