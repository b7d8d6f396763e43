//! The trace recorder: every event as a JSON line, with the observer's Lamport and vector
//! timestamps (docs/trace-format.md).

mod digits;
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

/// The most bytes of a line's fixed part: every field's key and punctuation, every number at
/// its longest (20 digits, 21 with a sign), `duplicate`'s `false` and the newline; the
/// variable parts (strings, the vector, payloads, groups) are counted apart.
const LINE_FIXED: usize = 512 + 8;

/// The most bytes of `s` as a JSON string (every byte escaped as `\u00XX`, and the quotes).
#[inline]
fn str_room(s: &str) -> usize {
    6 * s.len() + 2
}

/// The trace's bytes: `bytes[..len]` written, the rest room for the next lines, zeroed when it
/// was made. Lines are written into the room through a [`Cursor`], digits and all, without
/// going through `Vec::extend_from_slice` byte string by byte string.
#[derive(Default)]
struct Buf {
    bytes: Vec<u8>,
    len: usize,
}

impl Buf {
    /// The bytes written.
    #[inline]
    fn written(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// A cursor at the end of the bytes written, with room for at least `n` bytes; its
    /// position is added to `len` by the writer once the line is in.
    #[inline]
    fn room(&mut self, n: usize) -> Cursor<'_> {
        if self.bytes.len() - self.len < n {
            self.grow(n);
        }
        Cursor {
            w: &mut self.bytes[self.len..],
            p: 0,
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        let to = (self.len + n).max(2 * self.bytes.len()).max(1 << 17);
        self.bytes.resize(to, 0);
    }

    /// Appends `text` (the header line, a line of a session put back).
    fn extend(&mut self, text: &[u8]) {
        let mut c = self.room(text.len());
        c.put(text);
        let p = c.p;
        self.len += p;
    }

    /// Takes the bytes written out (the buffer is then empty).
    fn take(&mut self) -> Vec<u8> {
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.truncate(self.len);
        self.len = 0;
        bytes
    }

    /// Makes `bytes` the bytes written.
    fn set(&mut self, bytes: Vec<u8>) {
        self.len = bytes.len();
        self.bytes = bytes;
    }
}

impl Clone for Buf {
    /// A copy of the bytes written (not of the room).
    fn clone(&self) -> Buf {
        Buf {
            bytes: self.written().to_vec(),
            len: self.len,
        }
    }
}

/// A position in a buffer's room, where a line is being written.
struct Cursor<'a> {
    w: &'a mut [u8],
    p: usize,
}

impl Cursor<'_> {
    /// Writes `bytes` as they are.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.p + bytes.len();
        self.w[self.p..end].copy_from_slice(bytes);
        self.p = end;
    }

    /// Writes `v` in decimal, as serde_json writes it.
    #[inline(always)]
    fn num(&mut self, v: u64) {
        self.p += digits::write_u64(&mut self.w[self.p..], v);
    }

    /// Writes a few bytes (an event's or a kind's name) without a call to `memcpy`: two
    /// overlapping words, or two overlapping halves; longer ones as [`Cursor::put`].
    #[inline(always)]
    fn put_short(&mut self, bytes: &[u8]) {
        let (p, n) = (self.p, bytes.len());
        if (8..=16).contains(&n) {
            self.w[p..p + 8].copy_from_slice(&bytes[..8]);
            self.w[p + n - 8..p + n].copy_from_slice(&bytes[n - 8..]);
        } else if (4..8).contains(&n) {
            self.w[p..p + 4].copy_from_slice(&bytes[..4]);
            self.w[p + n - 4..p + n].copy_from_slice(&bytes[n - 4..]);
        } else {
            self.put(bytes);
            return;
        }
        self.p = p + n;
    }

    /// Writes an event's name, one of the engine's own (which need no escaping).
    #[inline(always)]
    fn event(&mut self, name: &'static str) {
        debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase()), "{name}");
        self.put(b"\"");
        self.put_short(name.as_bytes());
        self.put(b"\"");
    }

    /// Writes `s` as an escaped JSON string, as serde_json writes it.
    #[inline]
    fn str(&mut self, s: &str) {
        // serde_json escapes the control characters, `"` and `\` only: a string without them
        // (an event's or a message kind's name) is copied as it is.
        if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.put(b"\"");
            self.put_short(s.as_bytes());
            self.put(b"\"");
        } else {
            let mut text = Vec::with_capacity(s.len() + 8);
            crate::value_json::write_str(&mut text, s);
            self.put(&text);
        }
    }

    /// Writes `[a,b,...]`.
    fn nums(&mut self, values: impl IntoIterator<Item = u64>) {
        self.put(b"[");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.put(b",");
            }
            self.num(v);
        }
        self.put(b"]");
    }
}

/// Where a line's payloads lie in the writer's scratch buffer (written there first, so that
/// the line's length is known before it is written).
#[derive(Default)]
struct Payloads {
    msg: Option<std::ops::Range<usize>>,
    input: Option<std::ops::Range<usize>>,
    output: Option<std::ops::Range<usize>>,
    timer: Option<std::ops::Range<usize>>,
}

/// Writes `value`'s JSON at the end of `scratch` and returns where it lies.
#[inline]
fn payload(
    value: Option<&dyn Payload>,
    json: &mut ValueJson,
    scratch: &mut Vec<u8>,
) -> Option<std::ops::Range<usize>> {
    let value = value?;
    let start = scratch.len();
    value.write_json(json, scratch);
    Some(start..scratch.len())
}

impl Line<'_> {
    /// Appends the line's JSON object and its newline to `buf`; the payloads are put together
    /// in `scratch` first.
    fn write(&self, json: &mut ValueJson, scratch: &mut Vec<u8>, buf: &mut Buf) {
        scratch.clear();
        let payloads = Payloads {
            msg: payload(self.msg, json, scratch),
            input: payload(self.input, json, scratch),
            output: payload(self.output, json, scratch),
            timer: payload(self.timer, json, scratch),
        };
        let strs = [
            self.event,
            self.kind.unwrap_or(""),
            self.reason.unwrap_or(""),
        ];
        let more = [self.property.unwrap_or(""), self.detail.unwrap_or("")];
        let mut room = LINE_FIXED
            + scratch.len()
            + self.vector.map_or(0, <[u8]>::len)
            + self.msg_text.map_or(0, <[u8]>::len)
            + strs.iter().chain(&more).map(|s| str_room(s)).sum::<usize>();
        if let Some(groups) = self.groups {
            room += groups.iter().map(|g| 11 * g.len() + 2).sum::<usize>() + 2;
        }
        let mut c = buf.room(room);
        self.write_to(&mut c, scratch, &payloads);
        let p = c.p;
        buf.len += p;
    }

    /// Writes the line at the cursor (which has room for it).
    #[inline]
    fn write_to(&self, c: &mut Cursor<'_>, scratch: &[u8], payloads: &Payloads) {
        c.put(b"{\"seq\":");
        c.num(self.seq);
        c.put(b",\"time_ns\":");
        c.num(self.time_ns);
        c.put(b",\"event\":");
        c.event(self.event);
        if let Some(node) = self.node {
            c.put(b",\"node\":");
            c.num(node.0.into());
        }
        if let Some(lamport) = self.lamport {
            c.put(b",\"lamport\":");
            c.num(lamport);
        }
        if let Some(vector) = self.vector {
            c.put(b",\"vector\":");
            c.put(vector);
        }
        if let Some(from) = self.from {
            c.put(b",\"from\":");
            c.num(from.0.into());
        }
        if let Some(to) = self.to {
            c.put(b",\"to\":");
            c.num(to.0.into());
        }
        if let Some(msg_id) = self.msg_id {
            c.put(b",\"msg_id\":");
            c.num(msg_id);
        }
        if let Some(kind) = self.kind {
            c.put(b",\"kind\":");
            c.str(kind);
        }
        if let Some(msg) = &payloads.msg {
            c.put(b",\"msg\":");
            c.put(&scratch[msg.clone()]);
        } else if let Some(text) = self.msg_text {
            c.put(b",\"msg\":");
            c.put(text);
        }
        if let Some(duplicate) = self.duplicate {
            c.put(if duplicate {
                b",\"duplicate\":true"
            } else {
                b",\"duplicate\":false"
            });
        }
        if let Some(reason) = self.reason {
            c.put(b",\"reason\":");
            c.str(reason);
        }
        if let Some(input) = &payloads.input {
            c.put(b",\"input\":");
            c.put(&scratch[input.clone()]);
        }
        if let Some(output) = &payloads.output {
            c.put(b",\"output\":");
            c.put(&scratch[output.clone()]);
        }
        if let Some(timer) = &payloads.timer {
            c.put(b",\"timer\":");
            c.put(&scratch[timer.clone()]);
        }
        if let Some(groups) = self.groups {
            c.put(b",\"groups\":[");
            for (i, group) in groups.iter().enumerate() {
                if i > 0 {
                    c.put(b",");
                }
                c.nums(group.iter().map(|id| u64::from(id.0)));
            }
            c.put(b"]");
        }
        if let Some(delta_ns) = self.delta_ns {
            c.put(b",\"delta_ns\":");
            c.p += digits::write_i64(&mut c.w[c.p..], delta_ns);
        }
        if let Some(property) = self.property {
            c.put(b",\"property\":");
            c.str(property);
        }
        if let Some(detail) = self.detail {
            c.put(b",\"detail\":");
            c.str(detail);
        }
        c.put(b"}\n");
    }
}

/// Writes the trace lines into a buffer and keeps the observer's clocks. A batch run drains the
/// buffer into its writer now and then ([`Tracer::drain_into`]); a stepped session keeps it all.
pub(crate) struct Tracer {
    buf: Buf,
    seq: u64,
    lamport: Vec<u64>,
    /// Each node's vector clock, with its JSON text.
    vector: Vec<VectorText>,
    error: Option<io::Error>,
    /// The value writer's reusable memory.
    json: ValueJson,
    /// Where a line's payloads are put together before the line is written.
    scratch: Vec<u8>,
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
            scratch: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl Tracer {
    pub(crate) fn new(algorithm: &str, family: &str, ids: &[NodeId], seed: u64) -> Tracer {
        let mut t = Tracer {
            buf: Buf::default(),
            seq: 0,
            lamport: vec![0; ids.len()],
            vector: vec![VectorText::zeros(ids.len()); ids.len()],
            error: None,
            json: ValueJson::default(),
            scratch: Vec::new(),
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
        let mut text = Vec::new();
        match serde_json::to_writer(&mut text, line) {
            Ok(()) => {
                text.push(b'\n');
                self.buf.extend(&text);
            }
            Err(e) => self.error = Some(io::Error::from(e)),
        }
    }

    /// Writes an event line and counts it.
    #[inline]
    fn write_line(&mut self, line: &Line<'_>) {
        line.write(&mut self.json, &mut self.scratch, &mut self.buf);
        self.seq += 1;
    }

    /// The lines written and not yet drained.
    pub(crate) fn buffered(&self) -> &[u8] {
        self.buf.written()
    }

    /// Takes the lines written and not yet drained out of the tracer (which then holds none),
    /// so that a copy of the tracer does not copy them.
    pub(crate) fn take_buffered(&mut self) -> Vec<u8> {
        self.buf.take()
    }

    /// Puts back lines taken by [`Tracer::take_buffered`] (or a prefix of them, with the clocks
    /// of that point).
    pub(crate) fn set_buffered(&mut self, buf: Vec<u8>) {
        self.buf.set(buf);
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
        out.write_all(self.buf.written())?;
        self.buf.len = 0;
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
        line.write(&mut self.json, &mut self.scratch, &mut self.buf);
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
        line.write(&mut self.json, &mut self.scratch, &mut self.buf);
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
        line.write(&mut self.json, &mut self.scratch, &mut self.buf);
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
