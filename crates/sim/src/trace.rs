//! The trace recorder: every event as a JSON line, with the observer's Lamport and vector
//! timestamps (docs/trace-format.md).

mod digits;
mod msg_cache;
mod vector_text;

use crate::value_json::ValueJson;
use distsync_core::{Message, NodeId, Time};
use msg_cache::MsgCache;
use serde::Serialize;
use std::io::{self, Write};
use vector_text::VectorText;

/// A message's stamp while it travels (see [`SentStamp`]).
pub(crate) type MsgStamp = Box<SentStamp>;

/// What a traced message carries from its send line to its delivery line: the sender's Lamport
/// and vector timestamps at the send, and the line's tail from `msg_id` on
/// (`,"msg_id":7,"kind":"Request","msg":{"Request":{"ts":3}}`) as the send line wrote it, which
/// the delivery line copies instead of writing it again (a message does not change in flight).
#[derive(Clone)]
pub(crate) struct SentStamp {
    lamport: u64,
    vector: Vec<u64>,
    /// The message id the tail names.
    msg_id: u64,
    tail: Vec<u8>,
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

/// One event line other than a send or a delivery; absent fields are left out. [`Tracer`]
/// writes it field by field in this order, as `#[derive(Serialize)]` with
/// `skip_serializing_if = "Option::is_none"` on every optional field wrote it before
/// (docs/trace-format.md). Send and delivery lines, most of a trace, are written by
/// [`Tracer::send_event`] and [`Tracer::deliver_event`] from text kept per process and per
/// message, in the same order (`to` or `from` after `vector`, then `msg_id`, `kind`, `msg`
/// and a delivery's `duplicate`).
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
    pub(crate) msg_id: Option<u64>,
    pub(crate) kind: Option<&'a str>,
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
/// its longest (20 digits, 21 with a sign) and the newline; the
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
        if let Some(msg_id) = self.msg_id {
            c.put(b",\"msg_id\":");
            c.num(msg_id);
        }
        if let Some(kind) = self.kind {
            c.put(b",\"kind\":");
            c.str(kind);
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

/// A few bytes of constant text kept for a line: `bytes[..len]`, the rest zeros, so that it is
/// copied as one fixed-size block and the cursor moved on by `len`.
#[derive(Clone, Copy)]
struct Piece<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Piece<N> {
    fn new(text: &[u8]) -> Piece<N> {
        let mut bytes = [0; N];
        bytes[..text.len()].copy_from_slice(text);
        Piece {
            bytes,
            len: text.len(),
        }
    }
}

impl Cursor<'_> {
    /// Writes `piece`'s text (all `N` bytes stored, the cursor moved past its text only).
    #[inline(always)]
    fn piece<const N: usize>(&mut self, piece: &Piece<N>) {
        self.w[self.p..self.p + N].copy_from_slice(&piece.bytes);
        self.p += piece.len;
    }
}

/// A send or delivery line's text between its time and its Lamport timestamp, per process:
/// `,"event":"deliver","node":4294967295,"lamport":` at its longest, 47 bytes.
type NodePrefix = Piece<48>;

/// A process id's digits.
type IdText = Piece<16>;

/// The bytes a send or delivery line takes at most besides its vector and its tail: its
/// constant parts and the number written at each place with the 24 bytes of room
/// [`digits::write_u64`] wants.
const MSG_LINE_FIXED: usize = 8 + 24 + 16 + 24 + 48 + 24 + 16 + 8 + 16 + 24;

/// Writes the trace lines into a buffer and keeps the observer's clocks. A batch run drains the
/// buffer into its writer now and then ([`Tracer::drain_into`]); a stepped session keeps it all.
/// `M` is the algorithm's message type, whose texts are kept by value ([`MsgCache`]).
pub(crate) struct Tracer<M> {
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
    /// The last line's time and its digits (the lines of one event share it).
    time: u64,
    time_text: Piece<24>,
    /// Per process (by position): its send and delivery lines' text from the event's name to
    /// the Lamport timestamp, and its id's digits.
    send_prefix: Vec<NodePrefix>,
    deliver_prefix: Vec<NodePrefix>,
    ids: Vec<IdText>,
    /// The messages' kinds and JSON by value.
    msgs: MsgCache<M>,
}

/// How many delivered messages' stamps [`Tracer`] keeps for reuse at most.
const SPARE_STAMPS: usize = 1024;

impl<M> Clone for Tracer<M> {
    /// A copy of the trace so far and of the clocks (a write error is not copied).
    fn clone(&self) -> Tracer<M> {
        Tracer {
            buf: self.buf.clone(),
            seq: self.seq,
            lamport: self.lamport.clone(),
            vector: self.vector.clone(),
            error: None,
            json: ValueJson::default(),
            scratch: Vec::new(),
            spare: Vec::new(),
            time: self.time,
            time_text: self.time_text,
            send_prefix: self.send_prefix.clone(),
            deliver_prefix: self.deliver_prefix.clone(),
            ids: self.ids.clone(),
            msgs: MsgCache::default(),
        }
    }
}

/// The digits of `v`.
fn digits_of(v: u64) -> Vec<u8> {
    itoa::Buffer::new().format(v).as_bytes().to_vec()
}

impl<M: Message> Tracer<M> {
    pub(crate) fn new(algorithm: &str, family: &str, ids: &[NodeId], seed: u64) -> Tracer<M> {
        let prefix = |event: &str, id: NodeId| {
            let text = [
                b",\"event\":\"",
                event.as_bytes(),
                b"\",\"node\":",
                &digits_of(id.0.into()),
                b",\"lamport\":",
            ]
            .concat();
            NodePrefix::new(&text)
        };
        let mut t = Tracer {
            buf: Buf::default(),
            seq: 0,
            lamport: vec![0; ids.len()],
            vector: vec![VectorText::zeros(ids.len()); ids.len()],
            error: None,
            json: ValueJson::default(),
            scratch: Vec::new(),
            spare: Vec::new(),
            time: 0,
            time_text: Piece::new(b"0"),
            send_prefix: ids.iter().map(|&id| prefix("send", id)).collect(),
            deliver_prefix: ids.iter().map(|&id| prefix("deliver", id)).collect(),
            ids: ids
                .iter()
                .map(|id| IdText::new(&digits_of(id.0.into())))
                .collect(),
            msgs: MsgCache::default(),
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

    /// The digits of `time_ns`, worked out again only when the time moved since the last line.
    #[inline]
    fn time_text(&mut self, time_ns: u64) -> Piece<24> {
        if time_ns != self.time {
            self.time = time_ns;
            let mut bytes = [0u8; 24];
            let len = digits::write_u64(&mut bytes, time_ns);
            self.time_text = Piece { bytes, len };
        }
        self.time_text
    }

    /// Writes a send or delivery line of the node at `pos`, whose clocks are ticked: its
    /// prefix, its peer's id after `peer_key` (`,"to":` or `,"from":`), the message's `tail`
    /// and `end`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn msg_line(
        &mut self,
        time_ns: u64,
        pos: usize,
        deliver: bool,
        peer_key: &[u8; 8],
        peer_key_len: usize,
        peer: usize,
        tail: &[u8],
        end: &[u8],
    ) {
        let time = self.time_text(time_ns);
        let prefix = if deliver {
            &self.deliver_prefix[pos]
        } else {
            &self.send_prefix[pos]
        };
        let vector = self.vector[pos].text();
        let mut c = self
            .buf
            .room(MSG_LINE_FIXED + vector.len() + tail.len() + end.len());
        c.put(b"{\"seq\":");
        c.num(self.seq);
        c.put(b",\"time_ns\":");
        c.piece(&time);
        c.piece(prefix);
        c.num(self.lamport[pos]);
        c.put(b",\"vector\":");
        c.put(vector);
        c.w[c.p..c.p + 8].copy_from_slice(peer_key);
        c.p += peer_key_len;
        c.piece(&self.ids[peer]);
        c.put(tail);
        c.put(end);
        let p = c.p;
        self.buf.len += p;
        self.seq += 1;
    }

    /// A delivery at position `pos` of message `msg_id`, `msg`, from the node at `from`,
    /// stamped `received` at its send: ticks the clocks after merging the stamp's, and writes
    /// the line with the new stamps and the message's text from the stamp (written now when it
    /// has none: a message sent untraced). The stamp's memory is kept for a later send.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver_event(
        &mut self,
        time: Time,
        pos: usize,
        from: usize,
        received: Option<MsgStamp>,
        msg: &M,
        msg_id: u64,
        duplicate: bool,
    ) {
        self.tick(pos, received.as_deref());
        let end: &[u8] = if duplicate {
            b",\"duplicate\":true}\n"
        } else {
            b",\"duplicate\":false}\n"
        };
        let mut tail = std::mem::take(&mut self.scratch);
        let stamped = received.as_deref().filter(|s| s.msg_id == msg_id);
        let text = match stamped {
            Some(stamp) => &stamp.tail[..],
            None => {
                tail.clear();
                self.write_tail(msg, msg_id, &mut tail);
                &tail[..]
            }
        };
        self.msg_line(
            time.as_nanos(),
            pos,
            true,
            b",\"from\":",
            8,
            from,
            text,
            end,
        );
        self.scratch = tail;
        if let Some(stamp) = received {
            if self.spare.len() < SPARE_STAMPS {
                self.spare.push(stamp);
            }
        }
    }

    /// Writes the tail of a line about message `msg_id`, `msg`: `,"msg_id":7,"kind":...,"msg":...`.
    #[inline]
    fn write_tail(&mut self, msg: &M, msg_id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"msg_id\":");
        out.extend_from_slice(itoa::Buffer::new().format(msg_id).as_bytes());
        out.extend_from_slice(self.msgs.text(msg, &mut self.json));
    }

    /// A send of message `msg_id`, `msg`, from the node at `pos` to the one at `to`: a process
    /// event whose stamp the message carries, returned with the line's tail as it wrote it.
    pub(crate) fn send_event(
        &mut self,
        time: Time,
        pos: usize,
        to: usize,
        msg: &M,
        msg_id: u64,
    ) -> MsgStamp {
        let mut stamp = self.spare.pop().unwrap_or_else(|| {
            Box::new(SentStamp {
                lamport: 0,
                vector: Vec::with_capacity(self.vector.len()),
                msg_id: 0,
                tail: Vec::new(),
            })
        });
        stamp.tail.clear();
        self.write_tail(msg, msg_id, &mut stamp.tail);
        stamp.msg_id = msg_id;
        self.tick(pos, None);
        self.msg_line(
            time.as_nanos(),
            pos,
            false,
            b",\"to\":\0\0",
            6,
            to,
            &stamp.tail,
            b"}\n",
        );
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
    fn lines<M: Message>(tracer: &Tracer<M>) -> Vec<Value> {
        std::str::from_utf8(tracer.buffered())
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
    enum Msg {
        Request { ts: u64, z: Vec<u8>, a: String },
        One(u8),
    }

    impl Message for Msg {
        fn kind(&self) -> &'static str {
            match self {
                Msg::Request { .. } => "Request",
                Msg::One(_) => "O\"ne",
            }
        }
    }

    /// The line `serde_json` writes for `fields` (in their order), as the trace's lines were
    /// first written: by `#[derive(Serialize)]` of a struct of those fields.
    fn serde_line(fields: &[(&str, Value)]) -> String {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    #[test]
    fn a_delivery_line_carries_the_message_as_its_send_line_wrote_it() {
        let msg = Msg::Request {
            ts: 7,
            z: vec![1, 2],
            a: "q\"uote".into(),
        };
        let expected = serde_json::to_value(&msg).unwrap();
        let ids = [NodeId(0), NodeId(1)];
        let mut t = Tracer::new("x", "mutex", &ids, 1);
        let stamp = t.send_event(Time::ZERO, 0, 1, &msg, 1);
        // A second send reuses nothing of the first's stamp while it travels.
        let other = t.send_event(Time::ZERO, 1, 0, &Msg::One(1), 2);
        t.deliver_event(Time::ZERO, 1, 0, Some(stamp), &msg, 1, false);
        // A message sent before the trace began has no stamp: its JSON is written at delivery.
        t.deliver_event(Time::ZERO, 0, 1, None, &msg, 3, true);
        t.deliver_event(Time::ZERO, 0, 1, Some(other), &Msg::One(1), 2, false);
        let l = lines(&t);
        assert_eq!(l[0]["msg"], expected);
        assert_eq!(l[2]["msg"], expected);
        assert_eq!(l[2]["vector"], serde_json::json!([1, 2]));
        assert_eq!(l[3]["msg"], expected);
        assert_eq!(l[4]["msg"], serde_json::json!({"One": 1}));
        assert_eq!(l[4]["vector"], serde_json::json!([3, 1]));
        // The send line and the delivery line write the same bytes for the message.
        let text = std::str::from_utf8(t.buffered()).unwrap();
        let written = serde_json::to_string(&expected).unwrap();
        assert_eq!(text.matches(&format!("\"msg\":{written}")).count(), 3);
    }

    #[test]
    fn send_and_delivery_lines_are_the_fields_serde_wrote() {
        use serde_json::json;
        let ids = [NodeId(40), NodeId(7), NodeId(123_456)];
        let mut t = Tracer::new("x", "mutex", &ids, 1);
        let one = Msg::One(9);
        let big = Time::from_nanos(12_345_678_901_234);
        let s = t.send_event(big, 2, 0, &one, 99_999_999_999);
        t.send_event(big, 2, 1, &one, 5);
        t.deliver_event(
            Time::from_nanos(u64::MAX),
            0,
            2,
            Some(s),
            &one,
            99_999_999_999,
            true,
        );
        let text = std::str::from_utf8(t.buffered()).unwrap();
        let got: Vec<&str> = text.lines().skip(1).collect();
        let kind = json!("O\"ne");
        let m = json!({"One": 9});
        assert_eq!(
            got[0],
            serde_line(&[
                ("seq", json!(0)),
                ("time_ns", json!(12_345_678_901_234u64)),
                ("event", json!("send")),
                ("node", json!(123_456)),
                ("lamport", json!(1)),
                ("vector", json!([0, 0, 1])),
                ("to", json!(40)),
                ("msg_id", json!(99_999_999_999u64)),
                ("kind", kind.clone()),
                ("msg", m.clone()),
            ])
        );
        assert_eq!(
            got[1],
            serde_line(&[
                ("seq", json!(1)),
                ("time_ns", json!(12_345_678_901_234u64)),
                ("event", json!("send")),
                ("node", json!(123_456)),
                ("lamport", json!(2)),
                ("vector", json!([0, 0, 2])),
                ("to", json!(7)),
                ("msg_id", json!(5)),
                ("kind", kind.clone()),
                ("msg", m.clone()),
            ])
        );
        assert_eq!(
            got[2],
            serde_line(&[
                ("seq", json!(2)),
                ("time_ns", json!(u64::MAX)),
                ("event", json!("deliver")),
                ("node", json!(40)),
                ("lamport", json!(2)),
                ("vector", json!([1, 0, 1])),
                ("from", json!(123_456)),
                ("msg_id", json!(99_999_999_999u64)),
                ("kind", kind),
                ("msg", m),
                ("duplicate", json!(true)),
            ])
        );
    }
}
