//! Chrome trace-event JSON, which opens in the Perfetto UI (ui.perfetto.dev) and chrome://tracing.
//!
//! The run is one trace "process" (pid 1) named after the algorithm; each distsync process is one
//! thread track `P<id>` (tid = id + 1, sorted in the header's ring order), and a last track
//! `network` holds partitions (a slice from `partition` to `heal`). On a process track:
//!
//! - every event of the process is a zero-length slice (`ph: "X"`, `dur: 0`) named for what
//!   happened, with its sequence number, Lamport and vector timestamps and message in `args`;
//! - critical sections (output `Enter` to `Exit` or crash) are slices named `critical section`;
//! - in an `election` run, elections are slices named `election`: from the first input, or send or
//!   delivery of a message whose kind names an election, after the process last learnt a leader,
//!   to its next leader announcement (`{"Leader": id}`), crash, or the end of the trace;
//! - every delivered or dropped copy of a message is a flow (`ph: "s"` on the sender at the send,
//!   `ph: "f"` with `bp: "e"` on the receiver at the delivery or drop), both bound to the
//!   zero-length slices of those events. The flow id is the `seq` of the delivery or drop, so a
//!   duplicated message has two flows.
//!
//! Times are in microseconds with nanosecond decimals (`ts`), as the format wants. Events are
//! written sorted by time, longer slices first at equal times, each flow event right after the
//! slice it binds to, and long slices that would overlap partly are cut at their parent's end so
//! every track nests.

use crate::trace::{leader_of, variant_name, Event, EventKind, NodeId, Trace};
use serde_json::{json, Map, Value};
use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt::Write as _;

const PID: u64 = 1;

/// One record of the output and the key it is sorted by.
struct Record {
    ts_ns: u64,
    /// 0 for long slices (written before events at the same time), 1 for events and flows.
    class: u8,
    dur_ns: Reverse<u64>,
    seq: u64,
    /// 0 for an event's slice, 1 for the flow events bound to it.
    sub: u8,
    what: What,
}

/// What a record writes.
#[derive(Clone, Copy)]
enum What {
    /// The zero-length slice of `trace.events[i]`.
    Event(usize),
    /// The start of the flow of the delivered or dropped copy `copy`, at its send.
    FlowStart { copy: usize, send: usize },
    /// The end of that flow, at the copy's delivery or drop.
    FlowEnd { copy: usize },
    /// A long slice.
    Span(usize),
}

/// A slice spanning time on a track.
#[derive(Clone, Debug)]
struct Span {
    tid: u64,
    start_ns: u64,
    end_ns: u64,
    name: &'static str,
    cat: &'static str,
    args: Map<String, Value>,
}

/// The Chrome trace-event JSON of `trace`, as one JSON object.
pub fn render(trace: &Trace) -> String {
    let h = &trace.header;
    let tid = |node: NodeId| u64::from(node) + 1;
    let network_tid = h.ids.iter().map(|&i| u64::from(i)).max().unwrap_or(0) + 2;
    let mut records: Vec<Record> = Vec::with_capacity(trace.events.len() * 2 + 16);

    let meta = |name: &str, tid: Option<u64>, args: Value| {
        let mut v = json!({"name": name, "ph": "M", "pid": PID, "args": args});
        if let Some(t) = tid {
            v["tid"] = json!(t);
        }
        v
    };
    let mut head = vec![
        meta(
            "process_name",
            None,
            json!({"name": format!("distsync {} (seed {})", h.algorithm, h.seed)}),
        ),
        meta("process_sort_index", None, json!({"sort_index": 0})),
    ];
    for (pos, &id) in h.ids.iter().enumerate() {
        head.push(meta(
            "thread_name",
            Some(tid(id)),
            json!({"name": format!("P{id}")}),
        ));
        head.push(meta(
            "thread_sort_index",
            Some(tid(id)),
            json!({"sort_index": pos}),
        ));
    }
    let has_network = trace
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Partition { .. } | EventKind::Heal));
    if has_network {
        head.push(meta(
            "thread_name",
            Some(network_tid),
            json!({"name": "network"}),
        ));
        head.push(meta(
            "thread_sort_index",
            Some(network_tid),
            json!({"sort_index": h.ids.len()}),
        ));
    }

    // Sends by message id, for the flows.
    let mut sends: HashMap<u64, usize> = HashMap::new();
    for (i, e) in trace.events.iter().enumerate() {
        if let EventKind::Send { msg_id, .. } = e.kind {
            sends.insert(msg_id, i);
        }
    }

    for (i, e) in trace.events.iter().enumerate() {
        if e.node.is_none() {
            continue;
        }
        records.push(Record {
            ts_ns: e.time_ns,
            class: 1,
            dur_ns: Reverse(0),
            seq: e.seq,
            sub: 0,
            what: What::Event(i),
        });
        let msg_id = match &e.kind {
            EventKind::Deliver { msg_id, .. } | EventKind::Drop { msg_id, .. } => *msg_id,
            _ => continue,
        };
        let Some(&s) = sends.get(&msg_id) else {
            continue;
        };
        let send = &trace.events[s];
        if send.node.is_none() {
            continue;
        }
        records.push(Record {
            ts_ns: send.time_ns,
            class: 1,
            dur_ns: Reverse(0),
            seq: send.seq,
            sub: 1,
            what: What::FlowStart { copy: i, send: s },
        });
        records.push(Record {
            ts_ns: e.time_ns,
            class: 1,
            dur_ns: Reverse(0),
            seq: e.seq,
            sub: 1,
            what: What::FlowEnd { copy: i },
        });
    }

    let mut spans = critical_sections(trace, &tid);
    if h.family == "election" {
        spans.extend(elections(trace, &tid));
    }
    spans.extend(partitions(trace, network_tid));
    let spans = nest(spans);
    for (i, span) in spans.iter().enumerate() {
        records.push(Record {
            ts_ns: span.start_ns,
            class: 0,
            dur_ns: Reverse(span.end_ns - span.start_ns),
            seq: 0,
            sub: 0,
            what: What::Span(i),
        });
    }

    records.sort_unstable_by(|a, b| {
        (a.ts_ns, a.class, a.dur_ns, a.seq, a.sub).cmp(&(b.ts_ns, b.class, b.dur_ns, b.seq, b.sub))
    });
    let mut out = String::with_capacity(records.len() * 200 + 1024);
    out.push_str("{\"displayTimeUnit\":\"ns\",\"otherData\":");
    out.push_str(
        &json!({
            "algorithm": h.algorithm,
            "family": h.family,
            "seed": h.seed,
            "ids": h.ids,
            "source": "distsync trace render --perfetto",
        })
        .to_string(),
    );
    out.push_str(",\"traceEvents\":[\n");
    for (i, v) in head.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&v.to_string());
    }
    let mut scratch = String::new();
    for r in &records {
        out.push_str(",\n");
        match r.what {
            What::Event(i) => {
                let e = &trace.events[i];
                write_event(&mut out, &mut scratch, e, tid(e.node.unwrap_or(0)));
            }
            What::FlowStart { copy, send } => {
                let s = &trace.events[send];
                write_flow(
                    &mut out,
                    "s",
                    &trace.events[copy],
                    s.time_ns,
                    tid(s.node.unwrap_or(0)),
                );
            }
            What::FlowEnd { copy } => {
                let e = &trace.events[copy];
                write_flow(&mut out, "f", e, e.time_ns, tid(e.node.unwrap_or(0)));
            }
            What::Span(i) => write_span(&mut out, &spans[i]),
        }
    }
    out.push_str("\n]}\n");
    out
}

/// Appends `s` as a JSON string.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends nanoseconds as the format's microseconds, exactly (up to three decimals).
fn push_micros(out: &mut String, ns: u64) {
    if ns.is_multiple_of(1000) {
        let _ = write!(out, "{}", ns / 1000);
    } else {
        let _ = write!(out, "{}.{:03}", ns / 1000, ns % 1000);
    }
}

fn write_event(out: &mut String, scratch: &mut String, e: &Event, tid: u64) {
    scratch.clear();
    slice_name(scratch, e);
    out.push_str("{\"name\":");
    push_json_str(out, scratch);
    out.push_str(",\"cat\":");
    push_json_str(out, e.kind.name());
    out.push_str(",\"ph\":\"X\",\"ts\":");
    push_micros(out, e.time_ns);
    let _ = write!(
        out,
        ",\"dur\":0,\"pid\":{PID},\"tid\":{tid},\"args\":{{\"seq\":{}",
        e.seq
    );
    if let Some(l) = e.lamport {
        let _ = write!(out, ",\"lamport\":{l}");
    }
    if let Some(v) = &e.vector {
        out.push_str(",\"vector\":[");
        for (i, c) in v.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{c}");
        }
        out.push(']');
    }
    match &e.kind {
        EventKind::Send { msg_id, msg, .. } | EventKind::Deliver { msg_id, msg, .. } => {
            let _ = write!(out, ",\"msg_id\":{msg_id},\"msg\":{msg}");
        }
        EventKind::Drop { msg_id, reason, .. } => {
            let _ = write!(out, ",\"msg_id\":{msg_id},\"reason\":");
            push_json_str(out, reason);
        }
        EventKind::Input(v) | EventKind::Output(v) | EventKind::Timer(v) => {
            let _ = write!(out, ",\"value\":{v}");
        }
        EventKind::Adjust { delta_ns } => {
            let _ = write!(out, ",\"delta_ns\":{delta_ns}");
        }
        _ => {}
    }
    out.push_str("}}");
}

fn write_flow(out: &mut String, ph: &str, copy: &Event, ts_ns: u64, tid: u64) {
    let kind = match &copy.kind {
        EventKind::Deliver { kind, .. } | EventKind::Drop { kind, .. } => kind.as_str(),
        _ => "message",
    };
    out.push_str("{\"name\":");
    push_json_str(out, kind);
    let _ = write!(
        out,
        ",\"cat\":\"message\",\"ph\":\"{ph}\",\"id\":{},\"ts\":",
        copy.seq
    );
    push_micros(out, ts_ns);
    let _ = write!(out, ",\"pid\":{PID},\"tid\":{tid}");
    if ph == "f" {
        out.push_str(",\"bp\":\"e\"");
    }
    out.push('}');
}

fn write_span(out: &mut String, span: &Span) {
    out.push_str("{\"name\":");
    push_json_str(out, span.name);
    out.push_str(",\"cat\":");
    push_json_str(out, span.cat);
    out.push_str(",\"ph\":\"X\",\"ts\":");
    push_micros(out, span.start_ns);
    out.push_str(",\"dur\":");
    push_micros(out, span.end_ns - span.start_ns);
    let _ = write!(
        out,
        ",\"pid\":{PID},\"tid\":{},\"args\":{}}}",
        span.tid,
        Value::Object(span.args.clone())
    );
}

fn slice_name(out: &mut String, e: &Event) {
    let _ = match &e.kind {
        EventKind::Send { to, kind, .. } => write!(out, "send {kind} → P{to}"),
        EventKind::Deliver {
            from,
            kind,
            duplicate,
            ..
        } => write!(
            out,
            "deliver {kind} ← P{from}{}",
            if *duplicate { " (duplicate)" } else { "" }
        ),
        EventKind::Drop {
            from, kind, reason, ..
        } => write!(out, "drop {kind} ← P{from} ({reason})"),
        EventKind::Input(v) => write!(out, "input {}", variant_name(v).unwrap_or("?")),
        EventKind::Output(v) => match leader_of(v) {
            Some(l) => write!(out, "leader {l}"),
            None => write!(out, "output {}", variant_name(v).unwrap_or("?")),
        },
        EventKind::Timer(v) => write!(out, "timer {}", variant_name(v).unwrap_or("?")),
        EventKind::Adjust { delta_ns } => write!(out, "clock adjusted by {delta_ns} ns"),
        other => write!(out, "{}", other.name()),
    };
}

fn critical_sections(trace: &Trace, tid: &dyn Fn(NodeId) -> u64) -> Vec<Span> {
    let end = trace.end_time_ns();
    trace
        .critical_sections()
        .into_iter()
        .map(|cs| {
            let mut args = Map::new();
            args.insert(
                "ended_by".into(),
                json!(match (cs.end_ns, cs.ended_by_crash) {
                    (None, _) => "end of trace",
                    (_, true) => "crash",
                    _ => "Exit",
                }),
            );
            Span {
                tid: tid(cs.node),
                start_ns: cs.start_ns,
                end_ns: cs.end_ns.unwrap_or(end).max(cs.start_ns),
                name: "critical section",
                cat: "cs",
                args,
            }
        })
        .collect()
}

/// True for events that show the process taking part in an election.
fn election_activity(e: &Event) -> bool {
    match &e.kind {
        EventKind::Input(_) => true,
        EventKind::Send { kind, .. } | EventKind::Deliver { kind, .. } => {
            let k = kind.to_ascii_lowercase();
            k.contains("elect") && !k.starts_with("elected")
        }
        _ => false,
    }
}

fn elections(trace: &Trace, tid: &dyn Fn(NodeId) -> u64) -> Vec<Span> {
    let mut open: HashMap<NodeId, u64> = HashMap::new();
    let mut out = Vec::new();
    let mut close = |node: NodeId, start: u64, end: u64, how: Value| {
        let mut args = Map::new();
        args.insert("outcome".into(), how);
        out.push(Span {
            tid: tid(node),
            start_ns: start,
            end_ns: end.max(start),
            name: "election",
            cat: "election",
            args,
        });
    };
    for e in &trace.events {
        let Some(node) = e.node else { continue };
        match &e.kind {
            EventKind::Output(v) if leader_of(v).is_some() => {
                let start = open.remove(&node).unwrap_or(e.time_ns);
                close(node, start, e.time_ns, json!({"leader": leader_of(v)}));
            }
            EventKind::Crash => {
                if let Some(start) = open.remove(&node) {
                    close(node, start, e.time_ns, json!("crashed"));
                }
            }
            _ if election_activity(e) => {
                open.entry(node).or_insert(e.time_ns);
            }
            _ => {}
        }
    }
    let end = trace.end_time_ns();
    let mut rest: Vec<(NodeId, u64)> = open.into_iter().collect();
    rest.sort_unstable();
    for (node, start) in rest {
        close(node, start, end, json!("unfinished when the trace ends"));
    }
    out
}

fn partitions(trace: &Trace, network_tid: u64) -> Vec<Span> {
    let mut out = Vec::new();
    let mut open: Option<(u64, Value)> = None;
    let end = trace.end_time_ns();
    let mut push = |start: u64, stop: u64, groups: Value| {
        let mut args = Map::new();
        args.insert("groups".into(), groups);
        out.push(Span {
            tid: network_tid,
            start_ns: start,
            end_ns: stop.max(start),
            name: "partition",
            cat: "network",
            args,
        });
    };
    for e in &trace.events {
        match &e.kind {
            EventKind::Partition { groups } => {
                if let Some((start, g)) = open.take() {
                    push(start, e.time_ns, g);
                }
                open = Some((e.time_ns, json!(groups)));
            }
            EventKind::Heal => {
                if let Some((start, g)) = open.take() {
                    push(start, e.time_ns, g);
                }
            }
            _ => {}
        }
    }
    if let Some((start, g)) = open {
        push(start, end, g);
    }
    out
}

/// Makes the spans of each track nest: a span that starts inside another but would end after it
/// is cut at the other's end (and says so in its args).
fn nest(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by_key(|s| (s.tid, s.start_ns, Reverse(s.end_ns)));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    let mut stack: Vec<(u64, u64)> = Vec::new(); // (tid, end) of open spans
    for mut s in spans {
        while let Some(&(tid, end)) = stack.last() {
            if tid != s.tid || end <= s.start_ns {
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(&(_, end)) = stack.last() {
            if s.end_ns > end {
                s.args
                    .insert("cut_at_parent_end_from_ns".into(), json!(s.end_ns));
                s.end_ns = end;
            }
        }
        stack.push((s.tid, s.end_ns));
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(tid: u64, start_ns: u64, end_ns: u64) -> Span {
        Span {
            tid,
            start_ns,
            end_ns,
            name: "s",
            cat: "c",
            args: Map::new(),
        }
    }

    #[test]
    fn micros_are_exact() {
        let m = |ns| {
            let mut s = String::new();
            push_micros(&mut s, ns);
            s
        };
        assert_eq!(m(1_000), "1");
        assert_eq!(m(1_000_001), "1000.001");
        assert_eq!(m(5), "0.005");
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(
            serde_json::from_str::<String>(&s).unwrap(),
            "a\"b\\c\nd\u{1}é"
        );
    }

    #[test]
    fn overlapping_spans_are_cut_to_nest() {
        let out = nest(vec![
            span(1, 0, 10),
            span(1, 5, 20),
            span(2, 5, 20),
            span(1, 10, 30),
        ]);
        let ends: Vec<(u64, u64, u64)> =
            out.iter().map(|s| (s.tid, s.start_ns, s.end_ns)).collect();
        assert_eq!(ends, vec![(1, 0, 10), (1, 5, 10), (1, 10, 30), (2, 5, 20)]);
        assert!(out[1].args.contains_key("cut_at_parent_end_from_ns"));
        assert!(!out[2].args.contains_key("cut_at_parent_end_from_ns"));
    }
}
