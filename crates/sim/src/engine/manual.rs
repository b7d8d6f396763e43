//! The engine driven by hand: the pending events as people see them, and choices beyond "the
//! earliest event next": apply a chosen pending event, lose or duplicate a message in flight,
//! crash, recover, partition, heal, or give a node a request or an input, all at the current
//! time. A chosen event that is not the earliest is taken out of the queue by rebuilding it
//! (O(n), fine at the sizes people step through); the batch path never comes here.

use super::{Control, Engine, Event, Harness, Kind, Turn};
use crate::report::Violation;
use crate::scenario::Action;
use distsync_core::{Algorithm, Message, NodeId, Peers, Time};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pending event, as the page lists and draws it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PendingEvent {
    /// What [`Choice::Event`](crate::session::Choice::Event), [`Choice::Drop`](crate::session::Choice::Drop) and
    /// [`Choice::Duplicate`](crate::session::Choice::Duplicate) name it by.
    pub id: u64,
    /// When it is due.
    pub time_ns: u64,
    /// "deliver", "lost" (a copy lost on the way, noted when it would have arrived), "timer",
    /// "input", "wake" (the workload's next arrival) or "action" (a scripted event).
    pub kind: &'static str,
    /// The sender, for messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    /// The receiver, for messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    /// The node it happens at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The message's id (as in the trace), for messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<u64>,
    /// The message's kind ("Request", "Reply"...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_kind: Option<&'static str>,
    /// The message, as the trace writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<Value>,
    /// A second copy of a duplicated message.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub duplicate: bool,
    /// The timer, as the trace writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer: Option<Value>,
    /// The input, as the trace writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// On a FIFO network, the pending delivery on the same link that must arrive first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<u64>,
    /// A short text: `Reply{ts:3} 0->1`, `timer T at 2`.
    pub label: String,
    /// The message or timer as the notes name it (`Election(7)`, `Request(ts=3)`), never cut
    /// short; for the reliable ring link's `Data` frame, the algorithm's message it carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// The reliable ring link's own traffic (acknowledgements, retransmission timers), not the
    /// algorithm's: the page hides it unless asked to show the link layer.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub link: bool,
}

impl<A: Algorithm, H: Harness<A>> Engine<A, H> {
    /// The current (true) time.
    pub(crate) fn now(&self) -> Time {
        self.core.now
    }

    /// The horizon.
    pub(crate) fn until(&self) -> Time {
        self.until
    }

    /// Events applied so far.
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// How many events are pending (for `bench`, which sizes its anchor by it).
    pub(crate) fn pending_len(&self) -> usize {
        self.core.pending_len()
    }

    /// The membership.
    pub(crate) fn peers(&self) -> &Peers {
        &self.core.peers
    }

    /// The process at position `pos`, `None` while it is crashed.
    pub(crate) fn process(&self, pos: usize) -> Option<&A> {
        self.core.slots[pos].process.as_ref()
    }

    /// The harness's words on what `node` is doing.
    pub(crate) fn describe(&self, pos: usize) -> Option<String> {
        let id = self.core.peers.ids()[pos];
        self.harness.describe(id, self.process(pos))
    }

    /// The violations recorded so far (the harness's final checks come only with the report).
    pub(crate) fn violations(&self) -> &[Violation] {
        &self.core.violations
    }

    /// The rules of the algorithm's file that the latest handler naming any applied, with its
    /// process's id ([`distsync_core::Ctx::rule`]), forgotten once taken: the session takes
    /// them before and after each choice, so what it gets after is the choice's own.
    pub(crate) fn take_rules(&mut self) -> Option<(NodeId, distsync_core::Rules)> {
        let (pos, rules) = self.core.rules.take()?;
        Some((self.core.peers.ids()[pos], rules))
    }

    /// The trace so far (header and event lines, JSON lines), when the trace is kept.
    pub(crate) fn trace_bytes(&self) -> &[u8] {
        self.core.tracer.as_ref().map_or(&[], |t| t.buffered())
    }

    /// Takes the trace so far out of the engine (which then holds none): a copy of the engine
    /// made meanwhile costs its state, not its trace.
    pub(crate) fn take_trace(&mut self) -> Vec<u8> {
        self.core
            .tracer
            .as_mut()
            .map_or_else(Vec::new, |t| t.take_buffered())
    }

    /// Gives the engine its trace so far back (taken by [`Engine::take_trace`], from this engine
    /// or from one that went on from the same point and was cut back to it).
    pub(crate) fn set_trace(&mut self, trace: Vec<u8>) {
        if let Some(t) = self.core.tracer.as_mut() {
            t.set_buffered(trace);
        }
    }

    /// The observer's Lamport and vector clocks of the node at `pos`, when the trace is kept.
    pub(crate) fn stamps(&self, pos: usize) -> Option<(u64, &[u64])> {
        self.core.tracer.as_ref().map(|t| t.stamps(pos))
    }

    /// The time of the earliest pending event.
    pub(crate) fn next_time(&self) -> Option<Time> {
        self.core.queue.peek().map(|e| e.time)
    }

    /// Whether applying `event` would do anything: a timer cancelled, replaced or lost in a
    /// crash would not.
    fn live(&self, event: &Event<A>) -> bool {
        match &event.kind {
            Kind::Timer {
                pos,
                timer,
                generation,
            } => {
                let slot = &self.core.slots[*pos];
                slot.process.is_some() && slot.timers.get(timer) == Some(generation)
            }
            _ => true,
        }
    }

    /// Whether something that would do anything is pending.
    pub(crate) fn quiet(&self) -> bool {
        !self.core.queue.iter().any(|e| self.live(e))
    }

    /// Turns of the batch run until one applies an event that does something, or the run ends:
    /// what the batch run does, in steps people can see.
    pub(crate) fn step_next(&mut self) -> Turn {
        loop {
            let dead = self.core.queue.peek().is_some_and(|e| !self.live(e));
            match self.turn() {
                Turn::Applied if dead => continue,
                Turn::Idle => continue,
                turn => return turn,
            }
        }
    }

    /// The pending events that would do something, earliest first.
    pub(crate) fn pending(&self) -> Vec<PendingEvent> {
        let mut events: Vec<&Event<A>> = self.core.queue.iter().filter(|e| self.live(e)).collect();
        events.sort_by_key(|e| (e.time, e.seq));
        let ids = self.core.peers.ids();
        let fifo = self.core.network.fifo();
        let mut out: Vec<PendingEvent> = Vec::with_capacity(events.len());
        for e in events {
            let mut p = PendingEvent {
                id: e.seq,
                time_ns: e.time.as_nanos(),
                kind: "",
                from: None,
                to: None,
                node: None,
                msg_id: None,
                msg_kind: None,
                msg: None,
                duplicate: false,
                timer: None,
                input: None,
                waits_for: None,
                label: String::new(),
                what: None,
                link: false,
            };
            match &e.kind {
                Kind::Deliver {
                    from,
                    to,
                    msg,
                    msg_id,
                    duplicate,
                    ..
                } => {
                    let value = serde_json::to_value(msg).unwrap_or_default();
                    p.kind = "deliver";
                    p.from = Some(ids[*from as usize].0);
                    p.to = Some(ids[*to as usize].0);
                    p.node = p.to;
                    p.msg_id = Some(*msg_id);
                    p.msg_kind = Some(msg.kind());
                    let what = label_of(&value);
                    p.label = format!("{what} {}->{}", ids[*from as usize], ids[*to as usize]);
                    p.link = is_link_plumbing(&value);
                    p.what = Some(what);
                    p.msg = Some(value);
                    p.duplicate = *duplicate;
                    if fifo {
                        // The earliest copy still travelling on the same link goes first.
                        p.waits_for = out
                            .iter()
                            .find(|q| q.kind == "deliver" && q.from == p.from && q.to == p.to)
                            .map(|q| q.id);
                    }
                }
                Kind::Lost {
                    from,
                    to,
                    msg_id,
                    kind,
                    partitioned,
                } => {
                    let kind = self.core.kinds[*kind as usize].name;
                    let reason = super::lost_reason(*partitioned);
                    p.kind = "lost";
                    p.from = Some(ids[*from as usize].0);
                    p.to = Some(ids[*to as usize].0);
                    p.node = p.to;
                    p.msg_id = Some(*msg_id);
                    p.msg_kind = Some(kind);
                    p.label = format!(
                        "{kind} {}->{} lost ({reason})",
                        ids[*from as usize], ids[*to as usize]
                    );
                }
                Kind::Timer { pos, timer, .. } => {
                    let value = serde_json::to_value(timer).unwrap_or_default();
                    p.kind = "timer";
                    p.node = Some(ids[*pos].0);
                    let what = label_of(&value);
                    p.label = format!("timer {what} at {}", ids[*pos]);
                    p.link = is_link_plumbing(&value);
                    p.what = Some(what);
                    p.timer = Some(value);
                }
                Kind::Input { pos, input } => {
                    let value = serde_json::to_value(input).unwrap_or_default();
                    p.kind = "input";
                    p.node = Some(ids[*pos].0);
                    p.label = format!("{} at {}", label_of(&value), ids[*pos]);
                    p.input = Some(value);
                }
                Kind::Wake { pos, .. } => {
                    p.kind = "wake";
                    p.node = Some(ids[*pos].0);
                    p.label = format!("workload at {}", ids[*pos]);
                }
                Kind::Action(i) => {
                    let action = &self.core.actions[*i];
                    p.kind = "action";
                    p.node = action_node(action).map(|n| n.0);
                    p.label = action_label(action);
                }
            }
            out.push(p);
        }
        out
    }

    /// Takes the pending event `id` out of the queue.
    fn take(&mut self, id: u64) -> Result<Event<A>, String> {
        self.core
            .queue
            .remove_where(|e| e.seq == id)
            .ok_or_else(|| format!("no pending event has id {id}"))
    }

    /// The pending event `id`, checked: it would do something, and on a FIFO network a
    /// delivery is the earliest on its link.
    fn chosen(&self, id: u64) -> Result<&Event<A>, String> {
        let Some(event) = self.core.queue.iter().find(|e| e.seq == id) else {
            return Err(format!("no pending event has id {id}"));
        };
        if !self.live(event) {
            return Err(format!(
                "event {id} is a timer that was cancelled or lost in a crash"
            ));
        }
        if let Kind::Deliver { from, to, .. } = event.kind {
            if self.core.network.fifo() {
                let before = self.core.queue.iter().find(|e| {
                    matches!(e.kind, Kind::Deliver { from: f, to: t, .. } if f == from && t == to)
                        && (e.time, e.seq) < (event.time, event.seq)
                });
                if let Some(b) = before {
                    let ids = self.core.peers.ids();
                    return Err(format!(
                        "the network is FIFO: event {} on the link {}->{} must be delivered first",
                        b.seq, ids[from as usize], ids[to as usize]
                    ));
                }
            }
        }
        Ok(event)
    }

    /// Applies the pending event `id` now (time moves to its time if that is later).
    pub(crate) fn apply_event(&mut self, id: u64) -> Result<(), String> {
        let event = self.chosen(id)?;
        if event.time > self.until {
            return Err(format!(
                "event {id} is due after the horizon ({} ns > {} ns)",
                event.time.as_nanos(),
                self.until.as_nanos()
            ));
        }
        let event = self.take(id)?;
        self.core.now = self.core.now.max(event.time);
        self.events += 1;
        self.dispatch(event.kind);
        Ok(())
    }

    /// Loses the message in flight `id` now.
    pub(crate) fn drop_message(&mut self, id: u64) -> Result<(), String> {
        let event = self.chosen(id)?;
        if !matches!(event.kind, Kind::Deliver { .. }) {
            return Err(format!("event {id} is not a message in flight"));
        }
        let event = self.take(id)?;
        if let Kind::Deliver {
            from,
            to,
            msg,
            msg_id,
            chain,
            ..
        } = event.kind
        {
            let core = &mut self.core;
            core.in_flight -= 1;
            if chain == 0 {
                core.in_flight_excluded -= 1;
            }
            core.messages.dropped += 1;
            core.trace_drop(from as usize, to as usize, msg_id, msg.kind(), "manual");
        }
        Ok(())
    }

    /// Adds a second copy of the message in flight `id`, due at the same time, after it.
    pub(crate) fn duplicate_message(&mut self, id: u64) -> Result<(), String> {
        let event = self.chosen(id)?;
        let Kind::Deliver {
            from,
            to,
            msg,
            msg_id,
            chain,
            stamp,
            ..
        } = &event.kind
        else {
            return Err(format!("event {id} is not a message in flight"));
        };
        let kind = Kind::Deliver {
            from: *from,
            to: *to,
            msg: msg.clone(),
            msg_id: *msg_id,
            duplicate: true,
            chain: *chain,
            stamp: stamp.clone(),
        };
        let (time, chain) = (event.time, *chain);
        let core = &mut self.core;
        core.in_flight += 1;
        if chain == 0 {
            core.in_flight_excluded += 1;
        }
        core.messages.duplicated += 1;
        core.push(time, kind);
        Ok(())
    }

    /// Carries out `action` now: a fault the engine handles, or a request the harness takes.
    pub(crate) fn inject(&mut self, action: Action) -> Result<(), String> {
        let member = |peers: &Peers, n: NodeId| {
            peers
                .position(n)
                .map(|_| ())
                .ok_or(format!("node {n} is not a member"))
        };
        match &action {
            Action::Crash(n) => {
                member(&self.core.peers, *n)?;
                if self.core.slots[self.core.peers.index_of(*n)]
                    .process
                    .is_none()
                {
                    return Err(format!("node {n} is already down"));
                }
            }
            Action::Recover(n) => {
                member(&self.core.peers, *n)?;
                if self.core.slots[self.core.peers.index_of(*n)]
                    .process
                    .is_some()
                {
                    return Err(format!("node {n} is up"));
                }
            }
            Action::Partition(groups) => {
                for n in groups.iter().flatten() {
                    member(&self.core.peers, *n)?;
                }
            }
            Action::Heal => {}
            other => {
                let ctl = Control {
                    core: &mut self.core,
                };
                self.harness.accepts(other, &ctl)?;
            }
        }
        self.act(&action);
        Ok(())
    }

    /// Gives `node` the input `input` (as the trace writes inputs) now.
    pub(crate) fn give_input(&mut self, node: NodeId, input: &Value) -> Result<(), String> {
        let pos = self
            .core
            .peers
            .position(node)
            .ok_or(format!("node {node} is not a member"))?;
        if self.core.slots[pos].process.is_none() {
            return Err(format!("node {node} is down"));
        }
        let input: A::Input = serde_json::from_value(input.clone())
            .map_err(|e| format!("{input} is not an input of this algorithm: {e}"))?;
        self.events += 1;
        self.dispatch(Kind::Input { pos, input });
        Ok(())
    }

    /// The earliest pending delivery from `from` to `to` of the message `msg` (as the trace
    /// writes messages).
    pub(crate) fn find_delivery(&self, from: NodeId, to: NodeId, msg: &Value) -> Option<u64> {
        let (from, to) = (
            self.core.peers.position(from)?,
            self.core.peers.position(to)?,
        );
        self.core
            .queue
            .iter()
            .filter(|e| match &e.kind {
                Kind::Deliver {
                    from: f,
                    to: t,
                    msg: m,
                    ..
                } => {
                    *f as usize == from
                        && *t as usize == to
                        && serde_json::to_value(m).is_ok_and(|v| v == *msg)
                }
                _ => false,
            })
            .min_by_key(|e| (e.time, e.seq))
            .map(|e| e.seq)
    }

    /// The pending event that the checker's step `text` names ("deliver Reply { ts: 3 } 1->0",
    /// "input Release at 2", "timer T fires at 1": the checker writes messages, inputs and
    /// timers with `Debug`), earliest first.
    pub(crate) fn find_checker_step(&self, text: &str) -> Option<u64> {
        let ids = self.core.peers.ids();
        self.core
            .queue
            .iter()
            .filter(|e| self.live(e))
            .filter(|e| {
                let said = match &e.kind {
                    Kind::Deliver { from, to, msg, .. } => {
                        format!(
                            "deliver {msg:?} {}->{}",
                            ids[*from as usize].0, ids[*to as usize].0
                        )
                    }
                    Kind::Input { pos, input } => format!("input {input:?} at {}", ids[*pos].0),
                    Kind::Timer { pos, timer, .. } => {
                        format!("timer {timer:?} fires at {}", ids[*pos].0)
                    }
                    _ => return false,
                };
                said == text
            })
            .min_by_key(|e| (e.time, e.seq))
            .map(|e| e.seq)
    }

    /// The pending timer `timer` (as the trace writes timers) of `node`.
    pub(crate) fn find_timer(&self, node: NodeId, timer: &Value) -> Option<u64> {
        let pos = self.core.peers.position(node)?;
        self.core
            .queue
            .iter()
            .filter(|e| self.live(e))
            .filter(|e| match &e.kind {
                Kind::Timer {
                    pos: p, timer: t, ..
                } => *p == pos && serde_json::to_value(t).is_ok_and(|v| v == *timer),
                _ => false,
            })
            .min_by_key(|e| (e.time, e.seq))
            .map(|e| e.seq)
    }
}

/// The node a scripted action concerns.
fn action_node(action: &Action) -> Option<NodeId> {
    match *action {
        Action::Request(n)
        | Action::Crash(n)
        | Action::Recover(n)
        | Action::Elect(n)
        | Action::Sync(n)
        | Action::Snapshot(n)
        | Action::Multicast(n) => Some(n),
        Action::Partition(_) | Action::Heal | Action::ElectAll => None,
    }
}

/// A scripted action in a few words.
pub(crate) fn action_label(action: &Action) -> String {
    match action {
        Action::Request(n) => format!("request at {n}"),
        Action::Crash(n) => format!("crash {n}"),
        Action::Recover(n) => format!("recover {n}"),
        Action::Elect(n) => format!("elect at {n}"),
        Action::ElectAll => "elect at every node".into(),
        Action::Sync(n) => format!("sync at {n}"),
        Action::Snapshot(n) => format!("snapshot at {n}"),
        Action::Multicast(n) => format!("multicast at {n}"),
        Action::Partition(groups) => format!("partition {groups:?}"),
        Action::Heal => "heal".into(),
    }
}

/// A message, timer or input as the notes write it, never cut short: `Election(7)`,
/// `Request(ts=3, from=1)`, `Token(ln=[1, 0, 0], q=[2])`, `Release`. The reliable ring link's
/// `Data{inc, seq, msg}` frame is written as the message it carries, and its `Inner` timers as
/// the algorithm's timer.
pub fn label_of(value: &Value) -> String {
    if let Some(inner) = link_payload(value) {
        return label_of(inner);
    }
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) if map.len() == 1 => {
            let (name, inner) = map.iter().next().expect("one entry");
            match inner {
                Value::Null => name.clone(),
                Value::Object(fields) => {
                    let fields: Vec<String> = fields
                        .iter()
                        .map(|(k, v)| format!("{k}={}", plain(v)))
                        .collect();
                    format!("{name}({})", fields.join(", "))
                }
                Value::Array(items) => {
                    let items: Vec<String> = items.iter().map(plain).collect();
                    format!("{name}({})", items.join(", "))
                }
                other => format!("{name}({})", plain(other)),
            }
        }
        other => plain(other),
    }
}

/// What a reliable-link frame carries: the message of a `Data{inc, seq, msg}` frame, the timer
/// of an `Inner(T)` timer.
fn link_payload(value: &Value) -> Option<&Value> {
    let Value::Object(map) = value else {
        return None;
    };
    if map.len() != 1 {
        return None;
    }
    match map.iter().next() {
        Some((name, Value::Object(f)))
            if name == "Data" && f.len() == 3 && f.contains_key("inc") && f.contains_key("seq") =>
        {
            f.get("msg")
        }
        Some((name, inner)) if name == "Inner" => Some(inner),
        _ => None,
    }
}

/// Whether a message or timer belongs to the reliable ring link rather than to the algorithm:
/// its `Ack{inc, seq}` acknowledgements and its `Ack(seq)` retransmission timers (the `Data`
/// frames carry the algorithm's messages and are not).
pub fn is_link_plumbing(value: &Value) -> bool {
    let Value::Object(map) = value else {
        return false;
    };
    match map.get("Ack") {
        Some(Value::Object(f)) => {
            map.len() == 1 && f.len() == 2 && f.contains_key("inc") && f.contains_key("seq")
        }
        Some(Value::Number(_)) => map.len() == 1,
        _ => false,
    }
}

/// A value inside a label: arrays as `[a, b]`, records as `{k: v}`, a variant as its label.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(plain).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.len() == 1 => label_of(value),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", plain(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_link_plumbing, label_of};
    use serde_json::json;

    #[test]
    fn messages_are_labelled_as_the_notes_name_them_never_cut_short() {
        assert_eq!(label_of(&json!({ "Election": 7 })), "Election(7)");
        assert_eq!(
            label_of(&json!({ "Request": { "ts": 3 } })),
            "Request(ts=3)"
        );
        assert_eq!(label_of(&json!("Release")), "Release");
        let token = json!({ "Token": { "ln": [1, 0, 2, 0, 0, 0, 0, 0], "q": [2, 4] } });
        assert_eq!(
            label_of(&token),
            "Token(ln=[1, 0, 2, 0, 0, 0, 0, 0], q=[2, 4])"
        );
        assert_eq!(
            label_of(&json!({ "Elect": [1, [3, 5, 0]] })),
            "Elect(1, [3, 5, 0])"
        );
    }

    #[test]
    fn the_ring_links_frames_show_the_message_they_carry_and_acks_are_plumbing() {
        let data = json!({ "Data": { "inc": 0, "seq": 4, "msg": { "Election": 7 } } });
        assert_eq!(label_of(&data), "Election(7)");
        assert!(!is_link_plumbing(&data));
        let ack = json!({ "Ack": { "inc": 0, "seq": 4 } });
        assert!(is_link_plumbing(&ack));
        assert!(is_link_plumbing(&json!({ "Ack": 4 })), "the ack timer");
        assert_eq!(label_of(&json!({ "Inner": "Answer" })), "Answer");
        // An algorithm's own message called Ack, with other fields, is not the link's.
        assert!(!is_link_plumbing(&json!({ "Ack": { "ts": 3 } })));
    }
}
