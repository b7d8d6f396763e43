//! The trace recorder: every event as a JSON line, with the observer's Lamport and vector
//! timestamps (docs/trace-format.md).

mod vector_text;

use crate::value_json::ValueJson;
use distsync_core::{NodeId, Time};
use serde::Serialize;
use std::io::{self, Write};
use vector_text::VectorText;

/// A message's stamp while it travels (see [`SentStamp`]).
pub(crate) type MsgStamp = Box<SentStamp>;

/// What a traced message carries from its send line to its delivery line: the sender's Lamport
/// and vector timestamps at the send, and the message's JSON as the send line wrote it, which
/// the delivery line copies instead of writing the message again (a message does not change in
/// flight).
#[derive(Clone)]
pub(crate) struct SentStamp {
    lamport: u64,
    vector: Vec<u64>,
    msg: Vec<u8>,
}

/// The header line.
#[derive(Serialize)]
struct Header<'a> {
    pub(crate) event: &'static str,
    version: u32,
    algorithm: &'a str,
    family: &'a str,
    ids: &'a [NodeId],
    seed: u64,
}

/// A field's value written as JSON (the trace's `msg`, `input`, `output` and `timer`): any
/// serializable value, written by [`ValueJson`] straight into the trace buffer.
pub(crate) trait Payload {
    /// Appends the value's JSON to `out`.
    fn write_json(&self, json: &mut ValueJson, out: &mut Vec<u8>);
}

impl<T: Serialize> Payload for T {
    fn write_json(&self, json: &mut ValueJson, out: &mut Vec<u8>) {
        json.write(self, out);
    }
}

/// One event line; absent fields are left out. [`Tracer`] writes it field by field in this
/// order, as `#[derive(Serialize)]` with `skip_serializing_if = "Option::is_none"` on every
/// optional field wrote it before (docs/trace-format.md).
#[derive(Default)]
pub(crate) struct Line<'a> {
    pub(crate) seq: u64,
    pub(crate) time_ns: u64,
    pub(crate) event: &'static str,
    pub(crate) node: Option<NodeId>,
    pub(crate) lamport: Option<u64>,
    /// The vector timestamp's JSON text (see [`VectorText`]).
    pub(crate) vector: Option<&'a [u8]>,
    pub(crate) from: Option<NodeId>,
    pub(crate) to: Option<NodeId>,
    pub(crate) msg_id: Option<u64>,
    pub(crate) kind: Option<&'a str>,
    pub(crate) msg: Option<&'a dyn Payload>,
    /// The `msg` field's JSON text, already written (when `msg` is `None`).
    pub(crate) msg_text: Option<&'a [u8]>,
    pub(crate) duplicate: Option<bool>,
    pub(crate) reason: Option<&'a str>,
    pub(crate) input: Option<&'a dyn Payload>,
    pub(crate) output: Option<&'a dyn Payload>,
    pub(crate) timer: Option<&'a dyn Payload>,
    pub(crate) groups: Option<&'a [Vec<NodeId>]>,
    pub(crate) delta_ns: Option<i64>,
    /// `violation` lines: the property broken and how.
    pub(crate) property: Option<&'a str>,
    pub(crate) detail: Option<&'a str>,
}

/// Appends `v` in decimal, as serde_json writes it (by `itoa`, as serde_json does).
#[inline]
fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `s` as an escaped JSON string, as serde_json writes it.
#[inline]
fn push_str(out: &mut Vec<u8>, s: &str) {
    crate::value_json::write_str(out, s);
}

/// Appends `[a,b,...]`.
#[inline]
fn push_u64s(out: &mut Vec<u8>, values: impl IntoIterator<Item = u64>) {
    out.push(b'[');
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_u64(out, v);
    }
    out.push(b']');
}

impl Line<'_> {
    /// Appends the line's JSON object (no newline).
    fn write(&self, json: &mut ValueJson, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"seq\":");
        push_u64(out, self.seq);
        out.extend_from_slice(b",\"time_ns\":");
        push_u64(out, self.time_ns);
        out.extend_from_slice(b",\"event\":");
        push_str(out, self.event);
        if let Some(node) = self.node {
            out.extend_from_slice(b",\"node\":");
            push_u64(out, node.0.into());
        }
        if let Some(lamport) = self.lamport {
            out.extend_from_slice(b",\"lamport\":");
            push_u64(out, lamport);
        }
        if let Some(vector) = self.vector {
            out.extend_from_slice(b",\"vector\":");
            out.extend_from_slice(vector);
        }
        if let Some(from) = self.from {
            out.extend_from_slice(b",\"from\":");
            push_u64(out, from.0.into());
        }
        if let Some(to) = self.to {
            out.extend_from_slice(b",\"to\":");
            push_u64(out, to.0.into());
        }
        if let Some(msg_id) = self.msg_id {
            out.extend_from_slice(b",\"msg_id\":");
            push_u64(out, msg_id);
        }
        if let Some(kind) = self.kind {
            out.extend_from_slice(b",\"kind\":");
            push_str(out, kind);
        }
        if let Some(msg) = self.msg {
            out.extend_from_slice(b",\"msg\":");
            msg.write_json(json, out);
        } else if let Some(text) = self.msg_text {
            out.extend_from_slice(b",\"msg\":");
            out.extend_from_slice(text);
        }
        if let Some(duplicate) = self.duplicate {
            out.extend_from_slice(if duplicate {
                b",\"duplicate\":true"
            } else {
                b",\"duplicate\":false"
            });
        }
        if let Some(reason) = self.reason {
            out.extend_from_slice(b",\"reason\":");
            push_str(out, reason);
        }
        if let Some(input) = self.input {
            out.extend_from_slice(b",\"input\":");
            input.write_json(json, out);
        }
        if let Some(output) = self.output {
            out.extend_from_slice(b",\"output\":");
            output.write_json(json, out);
        }
        if let Some(timer) = self.timer {
            out.extend_from_slice(b",\"timer\":");
            timer.write_json(json, out);
        }
        if let Some(groups) = self.groups {
            out.extend_from_slice(b",\"groups\":[");
            for (i, group) in groups.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_u64s(out, group.iter().map(|id| u64::from(id.0)));
            }
            out.push(b']');
        }
        if let Some(delta_ns) = self.delta_ns {
            out.extend_from_slice(b",\"delta_ns\":");
            out.extend_from_slice(itoa::Buffer::new().format(delta_ns).as_bytes());
        }
        if let Some(property) = self.property {
            out.extend_from_slice(b",\"property\":");
            push_str(out, property);
        }
        if let Some(detail) = self.detail {
            out.extend_from_slice(b",\"detail\":");
            push_str(out, detail);
        }
        out.push(b'}');
    }
}

/// Writes the trace lines into a buffer and keeps the observer's clocks. A batch run drains the
/// buffer into its writer now and then ([`Tracer::drain_into`]); a stepped session keeps it all.
pub(crate) struct Tracer {
    buf: Vec<u8>,
    seq: u64,
    lamport: Vec<u64>,
    /// Each node's vector clock, with its JSON text.
    vector: Vec<VectorText>,
    error: Option<io::Error>,
    /// The value writer's reusable memory.
    json: ValueJson,
    /// Stamps of delivered messages, kept for the next sends (no allocation per send).
    spare: Vec<MsgStamp>,
}

/// How many delivered messages' stamps [`Tracer`] keeps for reuse at most.
const SPARE_STAMPS: usize = 1024;

impl Clone for Tracer {
    /// A copy of the trace so far and of the clocks (a write error is not copied).
    fn clone(&self) -> Tracer {
        Tracer {
            buf: self.buf.clone(),
            seq: self.seq,
            lamport: self.lamport.clone(),
            vector: self.vector.clone(),
            error: None,
            json: ValueJson::default(),
            spare: Vec::new(),
        }
    }
}

impl Tracer {
    pub(crate) fn new(algorithm: &str, family: &str, ids: &[NodeId], seed: u64) -> Tracer {
        let mut t = Tracer {
            buf: Vec::new(),
            seq: 0,
            lamport: vec![0; ids.len()],
            vector: vec![VectorText::zeros(ids.len()); ids.len()],
            error: None,
            json: ValueJson::default(),
            spare: Vec::new(),
        };
        let header = Header {
            event: "header",
            version: 1,
            algorithm,
            family,
            ids,
            seed,
        };
        t.write(&header);
        t
    }

    fn write<S: Serialize>(&mut self, line: &S) {
        if self.error.is_some() {
            return;
        }
        match serde_json::to_writer(&mut self.buf, line) {
            Ok(()) => self.buf.push(b'\n'),
            Err(e) => self.error = Some(io::Error::from(e)),
        }
    }

    /// Writes an event line and counts it.
    #[inline]
    fn write_line(&mut self, line: &Line<'_>) {
        line.write(&mut self.json, &mut self.buf);
        self.buf.push(b'\n');
        self.seq += 1;
    }

    /// The lines written and not yet drained.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Takes the lines written and not yet drained out of the tracer (which then holds none),
    /// so that a copy of the tracer does not copy them.
    pub(crate) fn take_buffered(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Puts back lines taken by [`Tracer::take_buffered`] (or a prefix of them, with the clocks
    /// of that point).
    pub(crate) fn set_buffered(&mut self, buf: Vec<u8>) {
        self.buf = buf;
    }

    /// The observer's Lamport and vector clocks of the node at `pos` now.
    pub(crate) fn stamps(&self, pos: usize) -> (u64, &[u64]) {
        (self.lamport[pos], self.vector[pos].values())
    }

    /// How many event lines were written (the next line's `seq`).
    pub(crate) fn lines(&self) -> u64 {
        self.seq
    }

    /// Moves the buffered lines to `out`.
    pub(crate) fn drain_into(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Ticks the clocks of the node at `pos` for a process event, merging `received` first.
    #[inline]
    fn tick(&mut self, pos: usize, received: Option<&SentStamp>) {
        if let Some(stamp) = received {
            self.lamport[pos] = self.lamport[pos].max(stamp.lamport);
            self.vector[pos].merge(&stamp.vector);
        }
        self.lamport[pos] += 1;
        self.vector[pos].increment(pos);
    }

    /// A process event at position `pos` (not a send or a delivery): ticks its clocks and
    /// writes the line with the new stamps.
    pub(crate) fn process_event(
        &mut self,
        time: Time,
        event: &'static str,
        node: NodeId,
        pos: usize,
        fill: Line<'_>,
    ) {
        self.tick(pos, None);
        let line = Line {
            seq: self.seq,
            time_ns: time.as_nanos(),
            event,
            node: Some(node),
            lamport: Some(self.lamport[pos]),
            vector: Some(self.vector[pos].text()),
            ..fill
        };
        // Field by field: the line borrows the vector while the buffer grows.
        line.write(&mut self.json, &mut self.buf);
        self.buf.push(b'\n');
        self.seq += 1;
    }

    /// A delivery at position `pos` of a message stamped `received` at its send: ticks the
    /// clocks after merging the stamp's, and writes the line with the new stamps and the
    /// message's JSON from the stamp (from `msg` when it has none: a message sent untraced).
    /// The stamp's memory is kept for a later send.
    pub(crate) fn deliver_event(
        &mut self,
        time: Time,
        node: NodeId,
        pos: usize,
        received: Option<MsgStamp>,
        msg: &dyn Payload,
        fill: Line<'_>,
    ) {
        self.tick(pos, received.as_deref());
        let line = Line {
            seq: self.seq,
            time_ns: time.as_nanos(),
            event: "deliver",
            node: Some(node),
            lamport: Some(self.lamport[pos]),
            vector: Some(self.vector[pos].text()),
            msg: if received.is_some() { None } else { Some(msg) },
            msg_text: received.as_deref().map(|s| &s.msg[..]),
            ..fill
        };
        line.write(&mut self.json, &mut self.buf);
        self.buf.push(b'\n');
        self.seq += 1;
        if let Some(stamp) = received {
            if self.spare.len() < SPARE_STAMPS {
                self.spare.push(stamp);
            }
        }
    }

    /// A send of `msg` at position `pos`: a process event whose stamp the message carries,
    /// returned with the message's JSON as the line wrote it.
    pub(crate) fn send_event(
        &mut self,
        time: Time,
        node: NodeId,
        pos: usize,
        msg: &dyn Payload,
        fill: Line<'_>,
    ) -> MsgStamp {
        let mut stamp = self.spare.pop().unwrap_or_else(|| {
            Box::new(SentStamp {
                lamport: 0,
                vector: Vec::with_capacity(self.vector.len()),
                msg: Vec::new(),
            })
        });
        stamp.msg.clear();
        msg.write_json(&mut self.json, &mut stamp.msg);
        self.tick(pos, None);
        let line = Line {
            seq: self.seq,
            time_ns: time.as_nanos(),
            event: "send",
            node: Some(node),
            lamport: Some(self.lamport[pos]),
            vector: Some(self.vector[pos].text()),
            msg_text: Some(&stamp.msg),
            ..fill
        };
        line.write(&mut self.json, &mut self.buf);
        self.buf.push(b'\n');
        self.seq += 1;
        stamp.lamport = self.lamport[pos];
        stamp.vector.clear();
        stamp.vector.extend_from_slice(self.vector[pos].values());
        stamp
    }

    /// An event that is not a process event (start, crash, drop, partition...): no clock ticks.
    pub(crate) fn plain_event(
        &mut self,
        time: Time,
        event: &'static str,
        node: Option<NodeId>,
        fill: Line<'_>,
    ) {
        let line = Line {
            seq: self.seq,
            time_ns: time.as_nanos(),
            event,
            node,
            ..fill
        };
        self.write_line(&line);
    }

    /// Drains the rest into `out` and flushes it; reports the first error if any.
    pub(crate) fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        self.drain_into(out)?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The event lines of `tracer` so far, parsed.
    fn lines(tracer: &Tracer) -> Vec<Value> {
        std::str::from_utf8(tracer.buffered())
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_delivery_line_carries_the_message_as_its_send_line_wrote_it() {
        #[derive(Serialize)]
        enum Msg {
            Request {
                ts: u64,
                z: Vec<u8>,
                a: &'static str,
            },
        }
        let msg = Msg::Request {
            ts: 7,
            z: vec![1, 2],
            a: "q\"uote",
        };
        let expected = serde_json::to_value(&msg).unwrap();
        let ids = [NodeId(0), NodeId(1)];
        let mut t = Tracer::new("x", "mutex", &ids, 1);
        let stamp = t.send_event(Time::ZERO, NodeId(0), 0, &msg, Line::default());
        // A second send reuses nothing of the first's stamp while it travels.
        let other = t.send_event(Time::ZERO, NodeId(1), 1, &1u8, Line::default());
        t.deliver_event(Time::ZERO, NodeId(1), 1, Some(stamp), &msg, Line::default());
        // A message sent before the trace began has no stamp: its JSON is written at delivery.
        t.deliver_event(Time::ZERO, NodeId(0), 0, None, &msg, Line::default());
        t.deliver_event(Time::ZERO, NodeId(0), 0, Some(other), &1u8, Line::default());
        let l = lines(&t);
        assert_eq!(l[0]["msg"], expected);
        assert_eq!(l[2]["msg"], expected);
        assert_eq!(l[2]["vector"], serde_json::json!([1, 2]));
        assert_eq!(l[3]["msg"], expected);
        assert_eq!(l[4]["msg"], serde_json::json!(1));
        assert_eq!(l[4]["vector"], serde_json::json!([3, 1]));
        // The send line and the delivery line write the same bytes for the message.
        let text = std::str::from_utf8(t.buffered()).unwrap();
        let written = serde_json::to_string(&expected).unwrap();
        assert_eq!(text.matches(&format!("\"msg\":{written}")).count(), 3);
    }
}
