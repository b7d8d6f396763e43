//! Happens-before from a trace: the Lamport and vector timestamps every process event carries
//! (docs/trace-format.md) say how two events relate.
//!
//! Vector timestamps decide it exactly: a -> b iff V(a) < V(b) (ORACLES.md). Lamport timestamps
//! only follow it: a -> b implies L(a) < L(b), not the converse, which [`Relation`] shows side
//! by side.
//!
//! ```
//! use distsync_sim::causality::Trace;
//! use distsync_core::Causality;
//! let text = r#"{"event":"header","version":1,"algorithm":"x","family":"mutex","ids":[0,1],"seed":1}
//! {"seq":0,"time_ns":0,"event":"send","node":0,"lamport":1,"vector":[1,0],"to":1,"msg_id":1}
//! {"seq":1,"time_ns":0,"event":"input","node":1,"lamport":1,"vector":[0,1]}
//! {"seq":2,"time_ns":5,"event":"deliver","node":1,"lamport":2,"vector":[1,2],"from":0,"msg_id":1}
//! "#;
//! let trace = Trace::parse(text.as_bytes(), "t.jsonl").unwrap();
//! assert_eq!(trace.relation(0, 2).unwrap().causality, Causality::Before);
//! assert_eq!(trace.relation(0, 1).unwrap().causality, Causality::Concurrent);
//! ```

use distsync_core::{Causality, NodeId, VectorClock};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::BufRead;
use std::path::Path;

/// One event of a trace, as far as causality is concerned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Its id (its line's `seq`).
    pub seq: u64,
    /// True time, in ns.
    pub time_ns: u64,
    /// Its kind: "send", "deliver", "input", "output", "timer", "crash", ...
    pub event: String,
    /// The process it happened at (absent for partitions and heals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// Its Lamport timestamp (process events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lamport: Option<u64>,
    /// Its vector timestamp (process events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<VectorClock>,
    /// The message, for sends, deliveries and drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<u64>,
}

/// How two events relate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relation {
    /// The first event.
    pub a: Event,
    /// The second event.
    pub b: Event,
    /// What their vector timestamps say: `before` means a happened before b.
    pub causality: Causality,
    /// Whether L(a) < L(b), which a -> b implies but which does not imply a -> b.
    pub lamport_less: bool,
}

/// A trace that cannot be used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The file (or other origin) of the trace.
    pub origin: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for TraceError {}

#[derive(Deserialize)]
struct Header {
    event: String,
    ids: Vec<NodeId>,
}

/// A trace's events with their timestamps.
#[derive(Clone, Debug)]
pub struct Trace {
    origin: String,
    /// The membership, in the order vector entries follow.
    pub ids: Vec<NodeId>,
    /// Every event, by `seq`.
    pub events: Vec<Event>,
}

impl Trace {
    /// Reads the trace file at `path`.
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let origin = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| TraceError {
            origin: origin.clone(),
            message: format!("cannot read the trace: {e}"),
        })?;
        Trace::parse(std::io::BufReader::new(file), &origin)
    }

    /// Reads a trace from `reader`; `origin` names it in errors.
    pub fn parse(reader: impl BufRead, origin: &str) -> Result<Trace, TraceError> {
        let err = |message: String| TraceError {
            origin: origin.to_string(),
            message,
        };
        let mut lines = reader.lines().enumerate();
        let header: Header = match lines.next() {
            None => {
                return Err(err(
                    "the file is empty; a trace starts with its header line".into(),
                ))
            }
            Some((_, line)) => {
                let line = line.map_err(|e| err(format!("cannot read the trace: {e}")))?;
                serde_json::from_str(&line)
                    .ok()
                    .filter(|h: &Header| h.event == "header")
                    .ok_or_else(|| {
                        err("line 1 is not a trace header (write traces with `distsync run SCENARIO --trace FILE`)".into())
                    })?
            }
        };
        let n = header.ids.len();
        let mut events = Vec::new();
        for (i, line) in lines {
            let line = line.map_err(|e| err(format!("cannot read the trace: {e}")))?;
            if line.trim().is_empty() {
                continue;
            }
            let event: Event = serde_json::from_str(&line)
                .map_err(|e| err(format!("line {}: not a trace event: {e}", i + 1)))?;
            if event.seq != events.len() as u64 {
                return Err(err(format!(
                    "line {}: event id {} out of order (expected {})",
                    i + 1,
                    event.seq,
                    events.len()
                )));
            }
            if let Some(v) = &event.vector {
                if v.entries().len() != n {
                    return Err(err(format!(
                        "line {}: a vector timestamp of {} entries in a trace of {n} processes",
                        i + 1,
                        v.entries().len()
                    )));
                }
            }
            events.push(event);
        }
        Ok(Trace {
            origin: origin.to_string(),
            ids: header.ids,
            events,
        })
    }

    /// The event with id `seq`, if it is a process event (one with timestamps).
    pub fn event(&self, seq: u64) -> Result<&Event, TraceError> {
        let err = |message: String| TraceError {
            origin: self.origin.clone(),
            message,
        };
        let Some(e) = self.events.get(seq as usize) else {
            return Err(err(match self.events.len() {
                0 => format!("there is no event {seq}: the trace has no events"),
                len => format!(
                    "there is no event {seq}: event ids go from 0 to {}",
                    len - 1
                ),
            }));
        };
        if e.vector.is_none() || e.lamport.is_none() {
            return Err(err(format!(
                "event {seq} is a `{}` event, which carries no timestamps; happens-before relates process events (input, output, send, deliver, timer)",
                e.event
            )));
        }
        Ok(e)
    }

    /// How events `a` and `b` relate.
    pub fn relation(&self, a: u64, b: u64) -> Result<Relation, TraceError> {
        let (ea, eb) = (self.event(a)?, self.event(b)?);
        let (va, vb) = (
            ea.vector.as_ref().expect("checked"),
            eb.vector.as_ref().expect("checked"),
        );
        Ok(Relation {
            causality: va.compare(vb),
            lamport_less: ea.lamport < eb.lamport,
            a: ea.clone(),
            b: eb.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"event":"header","version":1,"algorithm":"x","family":"mutex","ids":[0,1],"seed":1}"#;

    fn parse(body: &str) -> Result<Trace, TraceError> {
        Trace::parse(format!("{HEADER}\n{body}").as_bytes(), "t.jsonl")
    }

    #[test]
    fn bad_traces_and_ids_get_clear_errors() {
        let e = Trace::parse("".as_bytes(), "t.jsonl").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = Trace::parse("{\"seq\":0}\n".as_bytes(), "t.jsonl").unwrap_err();
        assert!(e.message.contains("not a trace header"), "{e}");
        let e = parse("not json").unwrap_err();
        assert!(e.message.starts_with("line 2"), "{e}");
        let e = parse(r#"{"seq":0,"time_ns":0,"event":"input","node":0,"lamport":1,"vector":[1]}"#)
            .unwrap_err();
        assert!(e.message.contains("1 entries"), "{e}");
        let t = parse(
            r#"{"seq":0,"time_ns":0,"event":"start","node":0}
{"seq":1,"time_ns":0,"event":"input","node":0,"lamport":1,"vector":[1,0]}"#,
        )
        .unwrap();
        let e = t.relation(0, 1).unwrap_err();
        assert!(e.message.contains("`start` event"), "{e}");
        let e = t.relation(1, 7).unwrap_err();
        assert!(e.message.contains("from 0 to 1"), "{e}");
    }

    #[test]
    fn lamport_order_does_not_imply_happens_before() {
        // Seed 003's note: timestamps 3 < 7, yet the events are concurrent.
        let t = parse(
            r#"{"seq":0,"time_ns":0,"event":"input","node":0,"lamport":3,"vector":[3,0]}
{"seq":1,"time_ns":0,"event":"input","node":1,"lamport":7,"vector":[0,7]}"#,
        )
        .unwrap();
        let r = t.relation(0, 1).unwrap();
        assert_eq!(r.causality, Causality::Concurrent);
        assert!(r.lamport_less);
    }
}
