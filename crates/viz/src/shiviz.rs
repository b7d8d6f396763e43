//! A log for ShiViz (the space-time viewer of distributed-system logs).
//!
//! A ShiViz file is: the regular expression that parses the log (first line), the delimiter of
//! several executions (second line, empty here: one run per file), then the log. Each logged
//! event is two lines, which [`REGEX`] reads: a description (the `event` group), then the host
//! and its vector clock as JSON (`P3 {"P3":4,"P0":2}`).
//!
//! ShiViz wants each host's own clock component to start at 1 and to rise by exactly 1 with each
//! of its logged events, and every other component to name an event of that host already logged.
//! The trace's vector clocks count only the events that tick (and keep counting across a crash),
//! so the clocks here are recomputed over the logged events themselves, by the same rule the
//! trace's are: a local event ticks its own component; a delivery first merges the clock the
//! message's send was logged with. The happened-before order is the trace's.
//!
//! Logged: every `input`, `output`, `send`, `deliver`, `timer`, `crash`, `recover` and `adjust`. Not
//! logged: `start` (no information), `drop` (it happens to no process: the message is lost on
//! the way; its send is logged), and `partition`/`heal` (they belong to no host).

use crate::svg::describe_into;
use crate::trace::{Event, EventKind, NodeId, Trace};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The parsing expression written on the first line. It is ShiViz's default with two changes:
/// the clock's braces are escaped, so every regex dialect reads it the same way, and the event
/// and host must not be empty; otherwise a match could begin at the newline ending the previous
/// event and read a description such as `output {"Adjust":...}` as a host and its clock.
pub const REGEX: &str = r"(?<event>.+)\n(?<host>\S+) (?<clock>\{.*\})";

/// The host name of a process in the log.
pub fn host(node: NodeId) -> String {
    format!("P{node}")
}

/// The ShiViz log of `trace`.
pub fn render(trace: &Trace) -> String {
    let ids = &trace.header.ids;
    let position: HashMap<NodeId, usize> = ids.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let n = ids.len();
    let mut clocks: Vec<Vec<u64>> = vec![vec![0; n]; n];
    let mut sent: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut out = String::with_capacity(trace.events.len() * 120 + 128);
    let mut scratch = String::new();
    let hosts: Vec<String> = ids.iter().map(|&id| host(id)).collect();
    out.push_str(REGEX);
    out.push_str("\n\n");
    for e in &trace.events {
        let Some(node) = e.node else { continue };
        let Some(&me) = position.get(&node) else {
            continue;
        };
        if !logged(e) {
            continue;
        }
        if let EventKind::Deliver { msg_id, .. } = e.kind {
            if let Some(stamp) = sent.get(&msg_id) {
                for (mine, theirs) in clocks[me].iter_mut().zip(stamp) {
                    *mine = (*mine).max(*theirs);
                }
            }
        }
        clocks[me][me] += 1;
        if let EventKind::Send { msg_id, .. } = e.kind {
            sent.insert(msg_id, clocks[me].clone());
        }
        line(&mut out, &mut scratch, e);
        out.push_str(&hosts[me]);
        out.push_str(" {");
        // Own component first, then the others in ring order; zero components are left out.
        let _ = write!(out, "\"{}\":{}", hosts[me], clocks[me][me]);
        for (i, &c) in clocks[me].iter().enumerate() {
            if i != me && c > 0 {
                let _ = write!(out, ",\"{}\":{c}", hosts[i]);
            }
        }
        out.push_str("}\n");
    }
    out
}

fn logged(e: &Event) -> bool {
    e.kind.is_process_event()
        || matches!(
            e.kind,
            EventKind::Crash | EventKind::Recover | EventKind::Adjust { .. }
        )
}

/// The description line: one line whatever the message holds (the host is on the next line).
fn line(out: &mut String, scratch: &mut String, e: &Event) {
    scratch.clear();
    describe_into(scratch, e, false);
    let text = match e.node {
        Some(_) => scratch
            .split_once(' ')
            .map_or(scratch.as_str(), |(_, rest)| rest),
        None => scratch.as_str(),
    };
    if text.contains(['\n', '\r']) {
        out.push_str(&text.replace(['\n', '\r'], " "));
    } else {
        out.push_str(text);
    }
    out.push('\n');
}
