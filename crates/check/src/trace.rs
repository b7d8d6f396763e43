//! A counterexample in the project's trace format (docs/trace-format.md), so that `distsync
//! trace render`, `distsync clocks` and the browser page draw and step it.
//!
//! Time in a counterexample is abstract: step k happens at k milliseconds (step 0, the
//! processes' `on_start`, at 0). The observer's Lamport and vector clocks are kept as the
//! simulator keeps them. A copy made by a duplication is delivered with `duplicate: true` and
//! the original's `msg_id`.

use crate::{Action, NamedOutcome, StepEffect};
use distsync_core::NodeId;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

struct InFlight {
    id: u64,
    from: NodeId,
    to: NodeId,
    msg: Value,
    kind: String,
    stamp: (u64, Vec<u64>),
    duplicate: bool,
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    seq: u64,
    ids: Vec<NodeId>,
    lamport: Vec<u64>,
    vector: Vec<Vec<u64>>,
    flight: Vec<InFlight>,
    next_msg: u64,
}

impl Writer<'_> {
    fn pos(&self, id: NodeId) -> usize {
        self.ids.iter().position(|&i| i == id).unwrap_or(0)
    }

    fn line(
        &mut self,
        time: u64,
        event: &str,
        node: Option<NodeId>,
        extra: Value,
    ) -> io::Result<()> {
        let mut m = Map::new();
        m.insert("seq".into(), json!(self.seq));
        m.insert("time_ns".into(), json!(time));
        m.insert("event".into(), json!(event));
        if let Some(n) = node {
            m.insert("node".into(), json!(n));
        }
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        serde_json::to_writer(&mut *self.out, &Value::Object(m))?;
        self.out.write_all(b"\n")?;
        self.seq += 1;
        Ok(())
    }

    /// A process event: ticks the node's clocks (merging `received` first).
    fn process(
        &mut self,
        time: u64,
        event: &str,
        node: NodeId,
        received: Option<&(u64, Vec<u64>)>,
        extra: Value,
    ) -> io::Result<(u64, Vec<u64>)> {
        let p = self.pos(node);
        if let Some((l, v)) = received {
            self.lamport[p] = self.lamport[p].max(*l);
            for (mine, theirs) in self.vector[p].iter_mut().zip(v) {
                *mine = (*mine).max(*theirs);
            }
        }
        self.lamport[p] += 1;
        self.vector[p][p] += 1;
        let stamp = (self.lamport[p], self.vector[p].clone());
        let mut extra = extra;
        if let Value::Object(m) = &mut extra {
            m.insert("lamport".into(), json!(stamp.0));
            m.insert("vector".into(), json!(stamp.1));
        }
        self.line(time, event, Some(node), extra)?;
        Ok(stamp)
    }

    fn take(&mut self, from: NodeId, to: NodeId, msg: &Value) -> Option<InFlight> {
        let i = self
            .flight
            .iter()
            .position(|f| f.from == from && f.to == to && f.msg == *msg)?;
        Some(self.flight.remove(i))
    }

    fn effects(&mut self, time: u64, effects: &[StepEffect]) -> io::Result<()> {
        for e in effects {
            match e {
                StepEffect::Send {
                    from,
                    to,
                    kind,
                    msg,
                } => {
                    let id = self.next_msg;
                    self.next_msg += 1;
                    let stamp = self.process(
                        time,
                        "send",
                        *from,
                        None,
                        json!({"to": to, "msg_id": id, "kind": kind, "msg": msg}),
                    )?;
                    self.flight.push(InFlight {
                        id,
                        from: *from,
                        to: *to,
                        msg: msg.clone(),
                        kind: kind.clone(),
                        stamp,
                        duplicate: false,
                    });
                }
                StepEffect::Output { node, output } => {
                    self.process(time, "output", *node, None, json!({"output": output}))?;
                }
                StepEffect::Dropped {
                    from,
                    to,
                    kind,
                    msg,
                    reason,
                } => {
                    // A send dropped at once was not recorded as a send: record it, then drop.
                    let f = match self.take(*from, *to, msg) {
                        Some(f) => f,
                        None => {
                            let id = self.next_msg;
                            self.next_msg += 1;
                            let stamp = self.process(
                                time,
                                "send",
                                *from,
                                None,
                                json!({"to": to, "msg_id": id, "kind": kind, "msg": msg}),
                            )?;
                            InFlight {
                                id,
                                from: *from,
                                to: *to,
                                msg: msg.clone(),
                                kind: kind.clone(),
                                stamp,
                                duplicate: false,
                            }
                        }
                    };
                    self.line(
                        time,
                        "drop",
                        Some(f.to),
                        json!({"from": f.from, "msg_id": f.id, "kind": f.kind, "reason": reason}),
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// Writes the counterexample of `outcome` as a trace (JSON Lines). An outcome without a
/// counterexample is an error.
pub fn write_trace(out: &mut dyn Write, outcome: &NamedOutcome) -> io::Result<()> {
    let Some(v) = &outcome.violation else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no counterexample to write",
        ));
    };
    let n = outcome.ids.len();
    let mut w = Writer {
        out,
        seq: 0,
        ids: outcome.ids.clone(),
        lamport: vec![0; n],
        vector: vec![vec![0; n]; n],
        flight: Vec::new(),
        next_msg: 0,
    };
    let header = json!({
        "event": "header",
        "version": 1,
        "algorithm": outcome.algorithm,
        "family": outcome.family.name(),
        "ids": outcome.ids,
        "seed": 0,
    });
    serde_json::to_writer(&mut *w.out, &header)?;
    w.out.write_all(b"\n")?;
    for &id in &outcome.ids {
        w.line(0, "start", Some(id), json!({}))?;
    }
    for step in &v.steps {
        let time = step.number as u64 * 1_000_000;
        match &step.action {
            Action::Start => {}
            Action::Deliver { from, to, msg, .. } => {
                let f = w.take(*from, *to, msg);
                let (id, kind, stamp, dup) = match f {
                    Some(f) => (f.id, f.kind, Some(f.stamp), f.duplicate),
                    None => (u64::MAX, String::new(), None, false),
                };
                w.process(
                    time,
                    "deliver",
                    *to,
                    stamp.as_ref(),
                    json!({"from": from, "msg_id": id, "kind": kind, "msg": msg, "duplicate": dup}),
                )?;
            }
            Action::Input { node, input } => {
                w.process(time, "input", *node, None, json!({"input": input}))?;
            }
            Action::Timer { node, timer } => {
                w.process(time, "timer", *node, None, json!({"timer": timer}))?;
            }
            Action::Crash { node } => w.line(time, "crash", Some(*node), json!({}))?,
            Action::Recover { node } => w.line(time, "recover", Some(*node), json!({}))?,
            Action::Lose { from, to, msg, .. } => {
                if let Some(f) = w.take(*from, *to, msg) {
                    w.line(
                        time,
                        "drop",
                        Some(f.to),
                        json!({"from": f.from, "msg_id": f.id, "kind": f.kind, "reason": "loss"}),
                    )?;
                }
            }
            Action::Duplicate { from, to, msg, .. } => {
                if let Some(i) = w
                    .flight
                    .iter()
                    .position(|f| f.from == *from && f.to == *to && f.msg == *msg)
                {
                    let f = &w.flight[i];
                    let copy = InFlight {
                        id: f.id,
                        from: f.from,
                        to: f.to,
                        msg: f.msg.clone(),
                        kind: f.kind.clone(),
                        stamp: f.stamp.clone(),
                        duplicate: true,
                    };
                    w.flight.push(copy);
                }
            }
            Action::Partition { groups } => {
                w.line(time, "partition", None, json!({"groups": groups}))?
            }
            Action::Heal => w.line(time, "heal", None, json!({}))?,
        }
        w.effects(time, &step.effects)?;
    }
    w.out.flush()
}
