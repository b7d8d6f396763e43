//! The trace model: the JSON-lines trace of `docs/trace-format.md`, read line by line into plain
//! types, with an error naming the line and the field for anything malformed.
//!
//! This crate reads the trace itself rather than borrowing the simulator's types, so a trace file
//! is all the renderers need (a trace from a real cluster, or one written by hand, draws the same).

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;

/// A process id, as in the header's `ids`.
pub type NodeId = u32;

/// The trace format version this crate reads.
pub const VERSION: u64 = 1;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The format version (always [`VERSION`] for traces this crate accepts).
    pub version: u64,
    /// The registry name of the algorithm that ran, e.g. `"ricart-agrawala"`.
    pub algorithm: String,
    /// Its family, e.g. `"mutex"` or `"election"`.
    pub family: String,
    /// The membership in ring order; vector timestamps are indexed by position in this list.
    pub ids: Vec<NodeId>,
    /// The seed of the run.
    pub seed: u64,
}

/// Why a message was lost (`drop` events).
pub type DropReason = String;

/// What happened, with the fields particular to each kind of event.
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// The process started (time 0).
    Start,
    /// The application asked something, e.g. `"Request"`.
    Input(Value),
    /// The process reported something, e.g. `"Enter"`, `{"Leader": 5}`.
    Output(Value),
    /// A message left the event's node.
    Send {
        /// The destination.
        to: NodeId,
        /// The message's id, shared by its deliveries and drops.
        msg_id: u64,
        /// The message kind, e.g. `"Request"`.
        kind: String,
        /// The message itself (serde JSON of the algorithm's message type).
        msg: Value,
    },
    /// A message reached the event's node.
    Deliver {
        /// The sender.
        from: NodeId,
        /// The message's id.
        msg_id: u64,
        /// The message kind.
        kind: String,
        /// The message itself.
        msg: Value,
        /// True for the second copy of a duplicated message.
        duplicate: bool,
    },
    /// A message to the event's node was lost, at the time it would have arrived.
    Drop {
        /// The sender.
        from: NodeId,
        /// The message's id.
        msg_id: u64,
        /// The message kind.
        kind: String,
        /// `"loss"`, `"partition"` or `"crashed"`.
        reason: DropReason,
    },
    /// A timer of the node expired.
    Timer(Value),
    /// The process crashed and lost its state.
    Crash,
    /// The process restarted with fresh state.
    Recover,
    /// Links between the groups stop delivering.
    Partition {
        /// The groups of ids.
        groups: Vec<Vec<NodeId>>,
    },
    /// Every link delivers again.
    Heal,
    /// The runtime corrected the node's physical clock (by a step or a slew).
    Adjust {
        /// The correction, in nanoseconds (negative: set back).
        delta_ns: i64,
    },
    /// A monitor found a property broken (`violation` lines, written by the simulator at the
    /// time it found it). Not a process event: it has no node and no timestamps.
    Violation {
        /// The property, like `"mutual-exclusion"`.
        property: String,
        /// What happened, in words.
        detail: String,
    },
    /// An event kind this build does not know (a later trace version's addition); kept and drawn
    /// as a plain mark rather than refused.
    Other {
        /// The `event` field.
        name: String,
    },
}

impl EventKind {
    /// The `event` field's value for this kind.
    pub fn name(&self) -> &str {
        match self {
            EventKind::Start => "start",
            EventKind::Input(_) => "input",
            EventKind::Output(_) => "output",
            EventKind::Send { .. } => "send",
            EventKind::Deliver { .. } => "deliver",
            EventKind::Drop { .. } => "drop",
            EventKind::Timer(_) => "timer",
            EventKind::Crash => "crash",
            EventKind::Recover => "recover",
            EventKind::Partition { .. } => "partition",
            EventKind::Heal => "heal",
            EventKind::Adjust { .. } => "adjust",
            EventKind::Violation { .. } => "violation",
            EventKind::Other { name } => name,
        }
    }

    /// True for the kinds that tick the node's clocks and so must carry timestamps.
    pub fn is_process_event(&self) -> bool {
        matches!(
            self,
            EventKind::Input(_)
                | EventKind::Output(_)
                | EventKind::Send { .. }
                | EventKind::Deliver { .. }
                | EventKind::Timer(_)
        )
    }
}

/// One line of the trace after the header.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The event's id: 0, 1, 2, ... in file order.
    pub seq: u64,
    /// True (simulated) time in nanoseconds.
    pub time_ns: u64,
    /// The process the event happens at (`None` for `partition` and `heal`).
    pub node: Option<NodeId>,
    /// The node's Lamport timestamp of this event (process events).
    pub lamport: Option<u64>,
    /// The node's vector timestamp of this event, indexed like the header's `ids`.
    pub vector: Option<Vec<u64>>,
    /// What happened.
    pub kind: EventKind,
    /// The 1-based line of the file the event was read from.
    pub line: usize,
}

/// A malformed trace: where, which field, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The file (or other origin) the trace came from.
    pub origin: String,
    /// The 1-based line number.
    pub line: usize,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.origin, self.line)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for TraceError {}

/// A whole trace: its header and its events in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The first line.
    pub header: Header,
    /// Every other line.
    pub events: Vec<Event>,
}

/// A critical section of one node: from its `output "Enter"` to its next `"Exit"` or crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CriticalSection {
    /// The node inside.
    pub node: NodeId,
    /// When it entered.
    pub start_ns: u64,
    /// When it left (`Exit` or crash); `None` when the trace ends with the node still inside.
    pub end_ns: Option<u64>,
    /// True when the section ended by a crash rather than an `Exit`.
    pub ended_by_crash: bool,
    /// Index in [`Trace::events`] of the `Enter` output.
    pub enter_event: usize,
}

/// Where one message went: its send and what became of each copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageFate {
    /// Index in [`Trace::events`] of the `send`, when the trace has it.
    pub send: Option<usize>,
    /// Indices of its `deliver` events (two when duplicated).
    pub deliveries: Vec<usize>,
    /// Indices of its `drop` events.
    pub drops: Vec<usize>,
}

/// The member ids a text names after the words "node", "nodes", "process" or "processes":
/// the numbers that follow such a word, up to the next word that is not "and".
fn named_nodes(text: &str, ids: &[NodeId]) -> Vec<NodeId> {
    let mut out = Vec::new();
    let mut naming = false;
    for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']') {
        if word.is_empty() {
            continue;
        }
        let bare = word
            .trim_end_matches("'s")
            .trim_end_matches(['.', ':', ';', ')']);
        if matches!(bare, "node" | "nodes" | "process" | "processes" | "P") {
            naming = true;
        } else if let Ok(n) = bare.trim_start_matches('P').parse::<u32>() {
            if naming && ids.contains(&n) {
                out.push(n);
            }
        } else if bare != "and" {
            naming = false;
        }
    }
    out
}

impl Trace {
    /// Reads a trace from its text. `origin` names it in errors (usually the file name).
    pub fn parse(text: &str, origin: &str) -> Result<Trace, TraceError> {
        let mut parser = Parser::new(origin);
        for (i, line) in text.lines().enumerate() {
            parser.line(i + 1, line)?;
        }
        parser.finish()
    }

    /// Reads a trace line by line from a reader (for large files).
    pub fn read<R: BufRead>(reader: R, origin: &str) -> Result<Trace, TraceError> {
        let mut parser = Parser::new(origin);
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|e| TraceError {
                origin: origin.to_string(),
                line: i + 1,
                field: None,
                message: format!("cannot read: {e}"),
            })?;
            parser.line(i + 1, &line)?;
        }
        parser.finish()
    }

    /// Reads from a trace what the SVG drawing of the window `from_ns..=to_ns` (`None`: to the
    /// end) needs, line by line, keeping in memory the events of the window and the few outside
    /// it that the drawing uses: the send of each message delivered or dropped in the window (or
    /// sent before it and delivered after it), the delivery or drop after the window of each
    /// message sent in it, the `Enter` of a critical section open when the window starts and the
    /// `Exit` or `crash` that closes one open when it ends, the `crash` of a process down when the
    /// window starts and the `recover` after it, the first event of each message kind (the
    /// drawing's colours follow their order) and the last event (the trace's end). Everything
    /// else is read, checked as [`Trace::read`] checks it, and let go, so a window of a large
    /// trace costs memory in proportion to the window. [`svg::render`](crate::svg::render) of
    /// the returned trace with the same window draws the same bytes as of the whole trace.
    ///
    /// Every line is still read (a message kind first seen after the window, a late delivery, the
    /// trace's end all change the drawing), and a malformed line anywhere is refused as by
    /// [`Trace::read`]. The reading relies on message ids that rise with their sends, as the
    /// simulator writes them; for a trace whose ids do not (written by hand, or by another
    /// program) it reads the whole trace instead, so the drawing is the same either way. The
    /// reader is read again from the start (`Seek`) in two cases: that one, and a duplicated copy
    /// in the window of a message sent and first delivered before it (its send is looked up).
    pub fn read_window<R: BufRead + std::io::Seek>(
        mut reader: R,
        origin: &str,
        from_ns: u64,
        to_ns: Option<u64>,
    ) -> Result<Windowed, TraceError> {
        let to_ns = to_ns.unwrap_or(u64::MAX);
        let read_err = |line: usize, e: std::io::Error| TraceError {
            origin: origin.to_string(),
            line,
            field: None,
            message: format!("cannot read: {e}"),
        };
        let mut parser = Parser::new(origin);
        let mut w = WindowState::new(from_ns, to_ns);
        let mut count = 0usize;
        let mut last: Option<Event> = None;
        let mut line = String::new();
        let mut n = 0usize;
        loop {
            line.clear();
            if reader
                .read_line(&mut line)
                .map_err(|e| read_err(n + 1, e))?
                == 0
            {
                break;
            }
            n += 1;
            let text = line.strip_suffix('\n').unwrap_or(&line);
            let text = text.strip_suffix('\r').unwrap_or(text);
            let Some(ev) = parser.event_line(n, text)? else {
                continue;
            };
            count += 1;
            if w.rising {
                w.see(&ev);
            }
            last = Some(ev);
        }
        let header = parser.finish()?.header;
        let end_time_ns = last.as_ref().map_or(0, |e| e.time_ns);
        if !w.rising {
            // Message ids out of order: the whole trace, as `read` gives it.
            reader.rewind().map_err(|e| read_err(1, e))?;
            let trace = Trace::read(reader, origin)?;
            return Ok(Windowed {
                trace,
                events: count,
                end_time_ns,
            });
        }
        if !w.missing.is_empty() {
            // Sends resolved before the window whose duplicated copy comes in or after it.
            reader.rewind().map_err(|e| read_err(1, e))?;
            let mut again = Parser::new(origin);
            for (i, text) in reader.lines().enumerate() {
                let text = text.map_err(|e| read_err(i + 1, e))?;
                let Some(ev) = again.event_line(i + 1, &text)? else {
                    continue;
                };
                if ev.time_ns >= from_ns {
                    break;
                }
                if let EventKind::Send { msg_id, .. } = &ev.kind {
                    if w.missing.remove(msg_id) {
                        w.kept.insert(ev.line, ev);
                    }
                }
            }
        }
        if let Some(ev) = last {
            w.kept.entry(ev.line).or_insert(ev);
        }
        let mut events: Vec<Event> = w.kept.into_values().collect();
        events.extend(w.open_cs.into_values().flatten());
        events.extend(w.down.into_values().flatten());
        events.sort_by_key(|e| e.line);
        events.dedup_by_key(|e| e.line);
        Ok(Windowed {
            trace: Trace { header, events },
            events: count,
            end_time_ns,
        })
    }

    /// The position of `node` in the header's `ids` (its lane, and its vector index).
    pub fn position(&self, node: NodeId) -> Option<usize> {
        self.header.ids.iter().position(|&id| id == node)
    }

    /// Every `violation` event, in order: its index in `events`, time, property and detail.
    pub fn violations(&self) -> Vec<(usize, u64, &str, &str)> {
        self.events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.kind {
                EventKind::Violation { property, detail } => {
                    Some((i, e.time_ns, property.as_str(), detail.as_str()))
                }
                _ => None,
            })
            .collect()
    }

    /// The processes a violation concerns: for `mutual-exclusion`, those inside the critical
    /// section at its time; otherwise the member ids its detail names after "node", "nodes" or
    /// "process" (like "node 3", "nodes [0, 1]", "nodes 0 and 1"); every process when it names
    /// none.
    pub fn violation_nodes(&self, index: usize) -> Vec<NodeId> {
        let Some(EventKind::Violation { property, detail }) =
            self.events.get(index).map(|e| &e.kind)
        else {
            return Vec::new();
        };
        let time = self.events[index].time_ns;
        let mut nodes: Vec<NodeId> = Vec::new();
        if property == "mutual-exclusion" {
            for cs in self.critical_sections() {
                if cs.start_ns <= time && cs.end_ns.is_none_or(|end| end >= time) {
                    nodes.push(cs.node);
                }
            }
        }
        if nodes.len() < 2 {
            nodes.extend(named_nodes(detail, &self.header.ids));
        }
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.is_empty() {
            nodes = self.header.ids.clone();
        }
        nodes
    }

    /// The time of the last event (0 for an empty trace).
    pub fn end_time_ns(&self) -> u64 {
        self.events.last().map_or(0, |e| e.time_ns)
    }

    /// Every message by id, in order of first appearance.
    pub fn messages(&self) -> Vec<(u64, MessageFate)> {
        let mut order: Vec<(u64, MessageFate)> = Vec::new();
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, e) in self.events.iter().enumerate() {
            let id = match &e.kind {
                EventKind::Send { msg_id, .. }
                | EventKind::Deliver { msg_id, .. }
                | EventKind::Drop { msg_id, .. } => *msg_id,
                _ => continue,
            };
            let slot = *index.entry(id).or_insert_with(|| {
                order.push((id, MessageFate::default()));
                order.len() - 1
            });
            let fate = &mut order[slot].1;
            match e.kind {
                EventKind::Send { .. } => fate.send = Some(i),
                EventKind::Deliver { .. } => fate.deliveries.push(i),
                _ => fate.drops.push(i),
            }
        }
        order
    }

    /// Every critical section, in order of entry.
    pub fn critical_sections(&self) -> Vec<CriticalSection> {
        let mut open: HashMap<NodeId, usize> = HashMap::new();
        let mut out: Vec<CriticalSection> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let Some(node) = e.node else { continue };
            match &e.kind {
                EventKind::Output(v) if variant_name(v) == Some("Enter") => {
                    if let std::collections::hash_map::Entry::Vacant(slot) = open.entry(node) {
                        slot.insert(out.len());
                        out.push(CriticalSection {
                            node,
                            start_ns: e.time_ns,
                            end_ns: None,
                            ended_by_crash: false,
                            enter_event: i,
                        });
                    }
                }
                EventKind::Output(v) if variant_name(v) == Some("Exit") => {
                    if let Some(k) = open.remove(&node) {
                        out[k].end_ns = Some(e.time_ns);
                    }
                }
                EventKind::Crash => {
                    if let Some(k) = open.remove(&node) {
                        out[k].end_ns = Some(e.time_ns);
                        out[k].ended_by_crash = true;
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// What [`Trace::read_window`] gives: the events a window's drawing needs, and what it learned
/// of the whole trace on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Windowed {
    /// The header, and the events the drawing needs, in file order.
    pub trace: Trace,
    /// How many events the whole trace has.
    pub events: usize,
    /// The time of the whole trace's last event (0 for none).
    pub end_time_ns: u64,
}

/// The bookkeeping of [`Trace::read_window`] as it reads.
struct WindowState {
    from: u64,
    to: u64,
    /// The events kept so far, by line.
    kept: std::collections::BTreeMap<usize, Event>,
    /// Message kinds seen (the first event of each is kept).
    kinds: std::collections::HashSet<String>,
    /// Sends before the window not yet delivered or dropped.
    pending: HashMap<u64, Event>,
    /// Messages whose send is kept (sent in the window, or before it and resolved after its
    /// start).
    kept_sends: std::collections::HashSet<u64>,
    /// Ids of messages delivered or dropped in or after the window whose send, before the
    /// window, was let go (the first copy of a duplicated message came before the window).
    missing: std::collections::HashSet<u64>,
    /// The largest send id so far, and that before the window.
    last_send: Option<u64>,
    last_before: Option<u64>,
    /// Per node with a critical section open: its `Enter` when that came before the window and
    /// is kept, `None` when it is in the window; absent: the section opened after the window
    /// (nothing of it is drawn).
    open_cs: HashMap<NodeId, Option<Event>>,
    /// Nodes with an open section that the drawing shows (opened up to the window's end).
    cs_shown: std::collections::HashSet<NodeId>,
    /// Per node down: its `crash` before the window (kept), or `None` for a crash in it.
    down: HashMap<NodeId, Option<Event>>,
    /// Nodes down whose stretch the drawing shows.
    down_shown: std::collections::HashSet<NodeId>,
    /// False once a send id does not rise or a message is resolved before its send: the
    /// reading above does not hold and the whole trace is read instead.
    rising: bool,
}

impl WindowState {
    fn new(from: u64, to: u64) -> WindowState {
        WindowState {
            from,
            to,
            kept: Default::default(),
            kinds: Default::default(),
            pending: HashMap::new(),
            kept_sends: Default::default(),
            missing: Default::default(),
            last_send: None,
            last_before: None,
            open_cs: HashMap::new(),
            cs_shown: Default::default(),
            down: HashMap::new(),
            down_shown: Default::default(),
            rising: true,
        }
    }

    fn keep(&mut self, ev: &Event) {
        self.kept.entry(ev.line).or_insert_with(|| ev.clone());
    }

    fn see(&mut self, ev: &Event) {
        let t = ev.time_ns;
        let before = t < self.from;
        let inside = !before && t <= self.to;
        if inside {
            self.keep(ev);
        }
        if let EventKind::Send { kind, .. }
        | EventKind::Deliver { kind, .. }
        | EventKind::Drop { kind, .. } = &ev.kind
        {
            if !self.kinds.contains(kind) {
                self.kinds.insert(kind.clone());
                self.keep(ev);
            }
        }
        match &ev.kind {
            EventKind::Send { msg_id, .. } => {
                if self.last_send.is_some_and(|l| *msg_id <= l) {
                    self.rising = false;
                    return;
                }
                self.last_send = Some(*msg_id);
                if before {
                    self.last_before = Some(*msg_id);
                    self.pending.insert(*msg_id, ev.clone());
                } else if inside {
                    self.kept_sends.insert(*msg_id);
                }
            }
            EventKind::Deliver { msg_id, .. } | EventKind::Drop { msg_id, .. } => {
                let id = *msg_id;
                if self.last_send.is_none_or(|l| id > l) {
                    // Resolved before it was sent (or never sent): not the simulator's order.
                    self.rising = false;
                    return;
                }
                if before {
                    self.pending.remove(&id);
                } else if let Some(send) = self.pending.remove(&id) {
                    self.kept_sends.insert(id);
                    self.kept.insert(send.line, send);
                    self.keep(ev);
                } else if self.kept_sends.contains(&id) {
                    self.keep(ev);
                } else if self.last_before.is_some_and(|l| id <= l) {
                    self.missing.insert(id);
                    self.kept_sends.insert(id);
                    self.keep(ev);
                }
                // Otherwise sent after the window (every send in it is in `kept_sends`), or
                // never: not drawn.
            }
            _ => {}
        }
        // Critical sections and down stretches, of events at a node (as the drawing reads them).
        let Some(node) = ev.node else { return };
        match &ev.kind {
            EventKind::Output(v) => match variant_name(v) {
                Some("Enter") => {
                    if let std::collections::hash_map::Entry::Vacant(slot) =
                        self.open_cs.entry(node)
                    {
                        if before {
                            slot.insert(Some(ev.clone()));
                            self.cs_shown.insert(node);
                        } else if inside {
                            slot.insert(None);
                            self.cs_shown.insert(node);
                        } else {
                            slot.insert(None);
                        }
                    }
                }
                Some("Exit") => self.close_cs(node, ev, before),
                _ => {}
            },
            EventKind::Crash => {
                self.close_cs(node, ev, before);
                if let std::collections::hash_map::Entry::Vacant(slot) = self.down.entry(node) {
                    if before {
                        slot.insert(Some(ev.clone()));
                        self.down_shown.insert(node);
                    } else if inside {
                        slot.insert(None);
                        self.down_shown.insert(node);
                    } else {
                        slot.insert(None);
                    }
                }
            }
            EventKind::Recover => {
                if let Some(crash) = self.down.remove(&node) {
                    if self.down_shown.remove(&node) && !before {
                        // The stretch ends in or after the window: drawn, from its crash.
                        if let Some(crash) = crash {
                            self.kept.insert(crash.line, crash);
                        }
                        self.keep(ev);
                    }
                }
            }
            _ => {}
        }
    }

    /// The `Exit` or `crash` at `ev` closes `node`'s open section: kept when the drawing shows
    /// that section and the event is not before the window (the section then ends in or after it).
    fn close_cs(&mut self, node: NodeId, ev: &Event, before: bool) {
        if let Some(enter) = self.open_cs.remove(&node) {
            if self.cs_shown.remove(&node) && !before {
                if let Some(enter) = enter {
                    self.kept.insert(enter.line, enter);
                }
                self.keep(ev);
            }
        }
    }
}

/// The variant name of a serde-JSON enum value: `"Enter"` for `"Enter"`, `"Leader"` for
/// `{"Leader": 5}`; `None` for anything else.
pub fn variant_name(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Object(map) if map.len() == 1 => map.keys().next().map(String::as_str),
        _ => None,
    }
}

/// The leader named by a leader announcement (`{"Leader": 5}`), if `output` is one.
pub fn leader_of(output: &Value) -> Option<u64> {
    match output {
        Value::Object(map) if map.len() == 1 => map.get("Leader").and_then(Value::as_u64),
        _ => None,
    }
}

struct Parser {
    origin: String,
    header: Option<Header>,
    events: Vec<Event>,
    last_seq: Option<u64>,
    last_time: u64,
}

impl Parser {
    fn new(origin: &str) -> Parser {
        Parser {
            origin: origin.to_string(),
            header: None,
            events: Vec::new(),
            last_seq: None,
            last_time: 0,
        }
    }

    fn err(&self, line: usize, field: Option<&str>, message: impl Into<String>) -> TraceError {
        TraceError {
            origin: self.origin.clone(),
            line,
            field: field.map(str::to_string),
            message: message.into(),
        }
    }

    fn line(&mut self, n: usize, text: &str) -> Result<(), TraceError> {
        if let Some(ev) = self.event_line(n, text)? {
            self.events.push(ev);
        }
        Ok(())
    }

    /// Reads line `n`: the header (kept), or an event checked against the lines before it and
    /// returned for the caller to keep or not; `None` for the header and blank lines.
    fn event_line(&mut self, n: usize, text: &str) -> Result<Option<Event>, TraceError> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| self.err(n, None, format!("not a JSON object: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(self.err(n, None, "expected a JSON object"));
        };
        let fields = Fields {
            obj: &obj,
            line: n,
            parser: self,
        };
        let event = fields.string("event")?;
        if self.header.is_none() {
            if event != "header" {
                return Err(self.err(
                    n,
                    Some("event"),
                    format!("the first line must be the header (\"event\":\"header\"), found \"{event}\""),
                ));
            }
            let header = fields.header()?;
            self.header = Some(header);
            return Ok(None);
        }
        if event == "header" {
            return Err(self.err(n, Some("event"), "a second header"));
        }
        let ev = fields.event(event)?;
        let expected = self.last_seq.map_or(0, |seq| seq + 1);
        if ev.seq < expected {
            return Err(self.err(
                n,
                Some("seq"),
                format!(
                    "expected {expected} or more (seq must rise in file order), found {}",
                    ev.seq
                ),
            ));
        }
        if ev.time_ns < self.last_time {
            return Err(self.err(
                n,
                Some("time_ns"),
                format!(
                    "time goes backwards: {} after {} on the line before",
                    ev.time_ns, self.last_time
                ),
            ));
        }
        self.last_time = ev.time_ns;
        self.last_seq = Some(ev.seq);
        Ok(Some(ev))
    }

    fn finish(self) -> Result<Trace, TraceError> {
        match self.header {
            Some(header) => Ok(Trace {
                header,
                events: self.events,
            }),
            None => Err(self.err(1, None, "empty trace: no header line")),
        }
    }
}

struct Fields<'a> {
    obj: &'a Map<String, Value>,
    line: usize,
    parser: &'a Parser,
}

impl Fields<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> TraceError {
        self.parser.err(self.line, Some(field), message)
    }

    fn get(&self, field: &str) -> Result<&Value, TraceError> {
        self.obj
            .get(field)
            .ok_or_else(|| self.err(field, "missing"))
    }

    fn string(&self, field: &str) -> Result<&str, TraceError> {
        self.get(field)?
            .as_str()
            .ok_or_else(|| self.err(field, "expected a string"))
    }

    fn uint(&self, field: &str) -> Result<u64, TraceError> {
        self.get(field)?
            .as_u64()
            .ok_or_else(|| self.err(field, "expected a non-negative integer"))
    }

    fn int(&self, field: &str) -> Result<i64, TraceError> {
        self.get(field)?
            .as_i64()
            .ok_or_else(|| self.err(field, "expected an integer"))
    }

    fn opt_uint(&self, field: &str) -> Result<Option<u64>, TraceError> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(field, "expected a non-negative integer")),
        }
    }

    fn boolean(&self, field: &str) -> Result<bool, TraceError> {
        self.get(field)?
            .as_bool()
            .ok_or_else(|| self.err(field, "expected true or false"))
    }

    fn id_value(&self, field: &str, v: &Value) -> Result<NodeId, TraceError> {
        v.as_u64()
            .and_then(|x| NodeId::try_from(x).ok())
            .ok_or_else(|| self.err(field, format!("expected a node id, found {v}")))
    }

    fn member(&self, field: &str) -> Result<NodeId, TraceError> {
        let id = self.id_value(field, self.get(field)?)?;
        let ids = self.parser.header.as_ref().map_or(&[][..], |h| &h.ids[..]);
        if !ids.contains(&id) {
            return Err(self.err(
                field,
                format!("node {id} is not in the header's ids {ids:?}"),
            ));
        }
        Ok(id)
    }

    fn json(&self, field: &str) -> Result<Value, TraceError> {
        self.get(field).cloned()
    }

    fn header(&self) -> Result<Header, TraceError> {
        let version = self.uint("version")?;
        if version != VERSION {
            return Err(self.err(
                "version",
                format!("trace format version {version} is not supported (this build reads version {VERSION})"),
            ));
        }
        let ids_value = self.get("ids")?;
        let Some(list) = ids_value.as_array() else {
            return Err(self.err("ids", "expected an array of node ids"));
        };
        if list.is_empty() {
            return Err(self.err("ids", "expected at least one node id"));
        }
        let mut ids = Vec::with_capacity(list.len());
        for v in list {
            let id = self.id_value("ids", v)?;
            if ids.contains(&id) {
                return Err(self.err("ids", format!("node id {id} appears more than once")));
            }
            ids.push(id);
        }
        Ok(Header {
            version,
            algorithm: self.string("algorithm")?.to_string(),
            family: self.string("family")?.to_string(),
            ids,
            seed: self.uint("seed")?,
        })
    }

    fn event(&self, name: &str) -> Result<Event, TraceError> {
        let seq = self.uint("seq")?;
        let time_ns = self.uint("time_ns")?;
        let kind = match name {
            "start" => EventKind::Start,
            "input" => EventKind::Input(self.json("input")?),
            "output" => EventKind::Output(self.json("output")?),
            "send" => EventKind::Send {
                to: self.member("to")?,
                msg_id: self.uint("msg_id")?,
                kind: self.string("kind")?.to_string(),
                msg: self.json("msg")?,
            },
            "deliver" => EventKind::Deliver {
                from: self.member("from")?,
                msg_id: self.uint("msg_id")?,
                kind: self.string("kind")?.to_string(),
                msg: self.json("msg")?,
                duplicate: self.boolean("duplicate")?,
            },
            "drop" => EventKind::Drop {
                from: self.member("from")?,
                msg_id: self.uint("msg_id")?,
                kind: self.string("kind")?.to_string(),
                reason: self.string("reason")?.to_string(),
            },
            "timer" => EventKind::Timer(self.json("timer")?),
            "crash" => EventKind::Crash,
            "recover" => EventKind::Recover,
            "partition" => EventKind::Partition {
                groups: self.groups()?,
            },
            "heal" => EventKind::Heal,
            "adjust" => EventKind::Adjust {
                delta_ns: self.int("delta_ns")?,
            },
            "violation" => EventKind::Violation {
                property: self.string("property")?.to_string(),
                detail: self.string("detail")?.to_string(),
            },
            other => EventKind::Other {
                name: other.to_string(),
            },
        };
        let node = match kind {
            EventKind::Partition { .. } | EventKind::Heal | EventKind::Violation { .. } => None,
            EventKind::Other { .. } if !self.obj.contains_key("node") => None,
            _ => Some(self.member("node")?),
        };
        let lamport = self.opt_uint("lamport")?;
        let vector = self.vector()?;
        if kind.is_process_event() {
            if lamport.is_none() {
                return Err(self.err("lamport", format!("missing (a {name} event is stamped)")));
            }
            if vector.is_none() {
                return Err(self.err("vector", format!("missing (a {name} event is stamped)")));
            }
        }
        Ok(Event {
            seq,
            time_ns,
            node,
            lamport,
            vector,
            kind,
            line: self.line,
        })
    }

    fn vector(&self) -> Result<Option<Vec<u64>>, TraceError> {
        let v = match self.obj.get("vector") {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v,
        };
        let Some(items) = v.as_array() else {
            return Err(self.err("vector", "expected an array of non-negative integers"));
        };
        let n = self.parser.header.as_ref().map_or(0, |h| h.ids.len());
        if items.len() != n {
            return Err(self.err(
                "vector",
                format!(
                    "expected {n} entries (one per id in the header), found {}",
                    items.len()
                ),
            ));
        }
        items
            .iter()
            .map(|x| {
                x.as_u64().ok_or_else(|| {
                    self.err(
                        "vector",
                        format!("expected a non-negative integer, found {x}"),
                    )
                })
            })
            .collect::<Result<Vec<u64>, TraceError>>()
            .map(Some)
    }

    fn groups(&self) -> Result<Vec<Vec<NodeId>>, TraceError> {
        let v = self.get("groups")?;
        let Some(groups) = v.as_array() else {
            return Err(self.err("groups", "expected an array of arrays of node ids"));
        };
        groups
            .iter()
            .map(|g| {
                g.as_array()
                    .ok_or_else(|| self.err("groups", "expected an array of arrays of node ids"))?
                    .iter()
                    .map(|id| self.id_value("groups", id))
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"event":"header","version":1,"algorithm":"central","family":"mutex","ids":[0,1,2],"seed":7}"#;

    fn parse(lines: &[&str]) -> Result<Trace, TraceError> {
        let mut text = String::from(HEADER);
        for l in lines {
            text.push('\n');
            text.push_str(l);
        }
        Trace::parse(&text, "t.jsonl")
    }

    #[test]
    fn reads_every_kind() {
        let t = parse(&[
            r#"{"seq":0,"time_ns":0,"event":"start","node":0}"#,
            r#"{"seq":1,"time_ns":5,"event":"input","node":1,"lamport":1,"vector":[0,1,0],"input":"Request"}"#,
            r#"{"seq":2,"time_ns":5,"event":"send","node":1,"lamport":2,"vector":[0,2,0],"to":0,"msg_id":0,"kind":"Request","msg":{"Request":{"ts":1}}}"#,
            r#"{"seq":3,"time_ns":9,"event":"deliver","node":0,"lamport":3,"vector":[1,2,0],"from":1,"msg_id":0,"kind":"Request","msg":{"Request":{"ts":1}},"duplicate":false}"#,
            r#"{"seq":4,"time_ns":9,"event":"drop","node":2,"from":1,"msg_id":1,"kind":"Request","reason":"loss"}"#,
            r#"{"seq":5,"time_ns":10,"event":"timer","node":2,"lamport":1,"vector":[0,0,1],"timer":"T"}"#,
            r#"{"seq":6,"time_ns":11,"event":"crash","node":2}"#,
            r#"{"seq":7,"time_ns":12,"event":"partition","groups":[[0,1],[2]]}"#,
            r#"{"seq":8,"time_ns":13,"event":"heal"}"#,
            r#"{"seq":9,"time_ns":14,"event":"recover","node":2}"#,
            r#"{"seq":10,"time_ns":15,"event":"output","node":0,"lamport":4,"vector":[2,2,0],"output":{"Leader":2}}"#,
            r#"{"seq":11,"time_ns":16,"event":"adjust","node":1,"delta_ns":-250}"#,
        ])
        .unwrap();
        assert_eq!(t.events[11].kind, EventKind::Adjust { delta_ns: -250 });
        assert_eq!(t.header.ids, vec![0, 1, 2]);
        assert_eq!(t.events.len(), 12);
        assert_eq!(t.events[3].line, 5);
        assert_eq!(
            t.events[7].kind,
            EventKind::Partition {
                groups: vec![vec![0, 1], vec![2]]
            }
        );
        assert_eq!(t.events[7].node, None);
        let msgs = t.messages();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].1.send, Some(2));
        assert_eq!(msgs[0].1.deliveries, vec![3]);
        assert_eq!(msgs[1].1.send, None);
        assert_eq!(msgs[1].1.drops, vec![4]);
        if let EventKind::Output(v) = &t.events[10].kind {
            assert_eq!(leader_of(v), Some(2));
        } else {
            panic!("not an output");
        }
    }

    #[test]
    fn errors_name_the_line_and_field() {
        let e = parse(&[
            r#"{"seq":0,"time_ns":0,"event":"start","node":0}"#,
            r#"{"seq":1,"time_ns":5,"event":"send","node":1,"lamport":2,"vector":[0,2,0],"to":0,"kind":"Request","msg":"Request"}"#,
        ])
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.field.as_deref(), Some("msg_id"));
        assert_eq!(e.to_string(), "t.jsonl:3: field `msg_id`: missing");

        let e = parse(&[r#"{"seq":0,"time_ns":0,"event":"start","node":9}"#]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("node"));
        assert!(e.message.contains("not in the header's ids"), "{e}");

        let e = parse(&[
            r#"{"seq":0,"time_ns":0,"event":"input","node":0,"lamport":1,"vector":[1,0],"input":"Request"}"#,
        ])
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("vector"));
        assert!(e.message.contains("expected 3 entries"), "{e}");

        let e = parse(&[r#"{"seq":0,"time_ns":0,"event":"input","node":0,"input":"Request"}"#])
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("lamport"));

        let e = parse(&["{not json"]).unwrap_err();
        assert_eq!((e.line, e.field.clone()), (2, None));
        assert!(e.message.starts_with("not a JSON object"), "{e}");

        let e = parse(&["[1,2]"]).unwrap_err();
        assert_eq!(e.message, "expected a JSON object");

        let e = parse(&[
            r#"{"seq":0,"time_ns":10,"event":"start","node":0}"#,
            r#"{"seq":1,"time_ns":9,"event":"start","node":1}"#,
        ])
        .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (3, Some("time_ns")));

        let e = parse(&[
            r#"{"seq":4,"time_ns":1,"event":"start","node":0}"#,
            r#"{"seq":4,"time_ns":1,"event":"start","node":1}"#,
        ])
        .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (3, Some("seq")));

        let e = parse(&[r#"{"seq":0,"time_ns":-1,"event":"start","node":0}"#]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("time_ns"));

        let e =
            parse(&[r#"{"seq":0,"time_ns":1,"event":"partition","groups":[0,1]}"#]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("groups"));
    }

    #[test]
    fn header_errors() {
        let e = Trace::parse("", "x").unwrap_err();
        assert_eq!(e.to_string(), "x:1: empty trace: no header line");
        let e = Trace::parse(r#"{"seq":0,"time_ns":0,"event":"start","node":0}"#, "x").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("event"));
        let e = Trace::parse(
            r#"{"event":"header","version":2,"algorithm":"a","family":"f","ids":[0],"seed":1}"#,
            "x",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("version"));
        let e = Trace::parse(
            r#"{"event":"header","version":1,"algorithm":"a","family":"f","ids":[0,0],"seed":1}"#,
            "x",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("ids"));
        let e = Trace::parse(
            r#"{"event":"header","version":1,"algorithm":"a","family":"f","ids":[],"seed":1}"#,
            "x",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("ids"));
        let e = Trace::parse(
            r#"{"event":"header","version":1,"family":"f","ids":[1],"seed":1}"#,
            "x",
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("algorithm"));
    }

    #[test]
    fn unknown_kinds_are_kept_blank_lines_skipped() {
        let t = parse(&[
            "",
            r#"{"seq":0,"time_ns":3,"event":"snapshot-marker","node":1}"#,
            "   ",
        ])
        .unwrap();
        assert_eq!(
            t.events[0].kind,
            EventKind::Other {
                name: "snapshot-marker".into()
            }
        );
        assert_eq!(t.events[0].node, Some(1));
        assert_eq!(t.events[0].line, 3);
    }

    #[test]
    fn critical_sections_end_at_exit_or_crash() {
        let t = parse(&[
            r#"{"seq":0,"time_ns":1,"event":"output","node":0,"lamport":1,"vector":[1,0,0],"output":"Enter"}"#,
            r#"{"seq":1,"time_ns":4,"event":"output","node":0,"lamport":2,"vector":[2,0,0],"output":"Exit"}"#,
            r#"{"seq":2,"time_ns":5,"event":"output","node":1,"lamport":1,"vector":[0,1,0],"output":"Enter"}"#,
            r#"{"seq":3,"time_ns":7,"event":"crash","node":1}"#,
            r#"{"seq":4,"time_ns":8,"event":"output","node":2,"lamport":1,"vector":[0,0,1],"output":"Enter"}"#,
        ])
        .unwrap();
        let cs = t.critical_sections();
        assert_eq!(cs.len(), 3);
        assert_eq!(
            (cs[0].start_ns, cs[0].end_ns, cs[0].ended_by_crash),
            (1, Some(4), false)
        );
        assert_eq!(
            (cs[1].start_ns, cs[1].end_ns, cs[1].ended_by_crash),
            (5, Some(7), true)
        );
        assert_eq!((cs[2].node, cs[2].end_ns), (2, None));
    }

    #[test]
    fn output_classification() {
        use serde_json::json;
        assert_eq!(variant_name(&json!("Enter")), Some("Enter"));
        assert_eq!(variant_name(&json!({"Leader": 3})), Some("Leader"));
        assert_eq!(variant_name(&json!(3)), None);
        assert_eq!(leader_of(&json!({"Leader": 3})), Some(3));
        assert_eq!(leader_of(&json!("Leader")), None);
    }
}
