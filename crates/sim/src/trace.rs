//! The trace recorder: every event as a JSON line, with the observer's Lamport and vector
//! timestamps (docs/trace-format.md).

use distsync_core::{NodeId, Time};
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

/// A message's stamp while it travels: the sender's Lamport and vector timestamps at the send.
pub(crate) type MsgStamp = Box<(u64, Vec<u64>)>;

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

/// One event line; absent fields are left out.
#[derive(Serialize, Default)]
pub(crate) struct Line<'a> {
    pub(crate) seq: u64,
    pub(crate) time_ns: u64,
    pub(crate) event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<NodeId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lamport: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vector: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<NodeId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<NodeId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) msg_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) msg: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duplicate: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timer: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) groups: Option<Vec<Vec<NodeId>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) delta_ns: Option<i64>,
    /// `violation` lines: the property broken and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) property: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<&'a str>,
}

/// Writes the trace lines into a buffer and keeps the observer's clocks. A batch run drains the
/// buffer into its writer now and then ([`Tracer::drain_into`]); a stepped session keeps it all.
pub(crate) struct Tracer {
    buf: Vec<u8>,
    seq: u64,
    lamport: Vec<u64>,
    vector: Vec<Vec<u64>>,
    error: Option<io::Error>,
}

impl Clone for Tracer {
    /// A copy of the trace so far and of the clocks (a write error is not copied).
    fn clone(&self) -> Tracer {
        Tracer {
            buf: self.buf.clone(),
            seq: self.seq,
            lamport: self.lamport.clone(),
            vector: self.vector.clone(),
            error: None,
        }
    }
}

impl Tracer {
    pub(crate) fn new(algorithm: &str, family: &str, ids: &[NodeId], seed: u64) -> Tracer {
        let mut t = Tracer {
            buf: Vec::new(),
            seq: 0,
            lamport: vec![0; ids.len()],
            vector: vec![vec![0; ids.len()]; ids.len()],
            error: None,
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
        (self.lamport[pos], &self.vector[pos])
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

    /// A process event at position `pos`: ticks its clocks (merging `received` first) and writes
    /// the line with the new stamps. Returns the stamp, for messages.
    pub(crate) fn process_event(
        &mut self,
        time: Time,
        event: &'static str,
        node: NodeId,
        pos: usize,
        received: Option<&(u64, Vec<u64>)>,
        fill: Line<'_>,
    ) -> MsgStamp {
        if let Some((lamport, vector)) = received {
            self.lamport[pos] = self.lamport[pos].max(*lamport);
            for (mine, theirs) in self.vector[pos].iter_mut().zip(vector) {
                *mine = (*mine).max(*theirs);
            }
        }
        self.lamport[pos] += 1;
        self.vector[pos][pos] += 1;
        let stamp = Box::new((self.lamport[pos], self.vector[pos].clone()));
        let line = Line {
            seq: self.seq,
            time_ns: time.as_nanos(),
            event,
            node: Some(node),
            lamport: Some(stamp.0),
            vector: Some(&stamp.1),
            ..fill
        };
        self.write(&line);
        self.seq += 1;
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
        self.write(&line);
        self.seq += 1;
    }

    /// Drains the rest into `out` and flushes it; reports the first error if any.
    pub(crate) fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        self.drain_into(out)?;
        out.flush()
    }
}
