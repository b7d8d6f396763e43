//! "Say why": the cause of a violation in the algorithm's terms, read off the run's trace, so the
//! page can name it in words, mark its events in the log and the diagram, and offer to go back
//! to just before it.
//!
//! What is read, by property:
//! - `mutual-exclusion` (two nodes in the critical section): the two entries and requests, then
//!   what let the second one in: a message that overtook an earlier one on a link between the
//!   two (non-FIFO links), a second copy of a message (duplication), the other's crash and
//!   recovery, or else the last message the second received from the first, placed against the
//!   first's request and entry;
//! - `deadlock` and `starvation` (requests that wait for ever): for each waiting node, whom it
//!   asked and who has not answered (a message of another kind back), and the cycle of waits
//!   when there is one;
//! - any other property, two leaders named (`one-leader`, `agreement`) among them: the event
//!   that made each event of the violation happen (the delivery, timer or input that the same
//!   step applied).
//!
//! "Just before" is the step before the cause's decisive event (the overtaking delivery, the
//! duplicate, the event that made the violation happen, or the first of the waiting requests).

use distsync_sim::session::{label_of, LogEntry};
use distsync_sim::Violation;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A violation's cause, as the page shows it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Cause {
    /// The cause in words (which processes, which messages, at which steps).
    pub text: String,
    /// The trace events involved, by `seq`: marked in the log and the diagram.
    pub events: Vec<u64>,
    /// The messages involved, by `msg_id`: their arrows are marked in the diagram.
    pub messages: Vec<u64>,
    /// The step just before the cause's first decisive event ("back to just before it").
    pub back_to: Option<usize>,
}

/// One trace line, the fields the explanations read.
struct Ev<'a> {
    seq: u64,
    step: usize,
    event: &'a str,
    node: Option<u32>,
    from: Option<u32>,
    to: Option<u32>,
    msg_id: Option<u64>,
    duplicate: bool,
    line: &'a Value,
}

impl Ev<'_> {
    fn msg(&self) -> String {
        self.line.get("msg").map(label_of).unwrap_or_default()
    }
    /// The message's kind (its variant name), to tell a request from its answer.
    fn kind(&self) -> String {
        match self.line.get("kind").and_then(Value::as_str) {
            Some(k) => k.to_string(),
            None => self.msg().split('(').next().unwrap_or("").to_string(),
        }
    }
    fn is(&self, event: &str, field: &str, value: &str) -> bool {
        self.event == event && self.line.get(field).map(label_of).as_deref() == Some(value)
    }
}

fn events(log: &[LogEntry]) -> Vec<Ev<'_>> {
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    log.iter()
        .map(|e| Ev {
            seq: num(&e.line, "seq").unwrap_or(u64::MAX),
            step: e.step,
            event: e.line.get("event").and_then(Value::as_str).unwrap_or(""),
            node: num(&e.line, "node").map(|n| n as u32),
            from: num(&e.line, "from").map(|n| n as u32),
            to: num(&e.line, "to").map(|n| n as u32),
            msg_id: num(&e.line, "msg_id"),
            duplicate: e.line.get("duplicate") == Some(&Value::Bool(true)),
            line: &e.line,
        })
        .collect()
}

/// The cause of `violation` in the run whose whole trace is `log` (every line, with its step),
/// or `None` when the trace says nothing more than the violation's own detail.
pub fn explain(violation: &Violation, log: &[LogEntry]) -> Option<Cause> {
    explain_all(std::slice::from_ref(violation), log)
        .pop()
        .flatten()
}

/// The causes of `violations` (in their order), reading the trace once for all of them.
pub fn explain_all(violations: &[Violation], log: &[LogEntry]) -> Vec<Option<Cause>> {
    let evs = events(log);
    let ix = Index::of(&evs);
    violations
        .iter()
        .map(|v| match v.property.as_str() {
            "mutual-exclusion" => mutual_exclusion(v, &evs, &ix).or_else(|| triggers(v, &evs, &ix)),
            "deadlock" | "starvation" => waits(&evs).or_else(|| triggers(v, &evs, &ix)),
            _ => triggers(v, &evs, &ix),
        })
        .collect()
}

/// The position of the line `seq` (the lines come in `seq` order).
fn at(evs: &[Ev<'_>], seq: u64) -> Option<usize> {
    evs.binary_search_by_key(&seq, |e| e.seq).ok()
}

/// The event a step applied: the first line the step wrote.
fn trigger<'a, 'b>(evs: &'b [Ev<'a>], i: usize) -> &'b Ev<'a> {
    let step = evs[i].step;
    let first = evs[..=i]
        .iter()
        .rposition(|e| e.step != step)
        .map_or(0, |p| p + 1);
    &evs[first]
}

/// How an event that made something happen reads: "receiving Reply from P0".
fn cause_words(e: &Ev<'_>) -> String {
    match e.event {
        "deliver" => format!(
            "receiving {}{} from P{}",
            e.msg(),
            if e.duplicate { " (a second copy)" } else { "" },
            e.from.unwrap_or_default()
        ),
        "timer" => format!(
            "its timer {}",
            e.line.get("timer").map(label_of).unwrap_or_default()
        ),
        "input" => format!(
            "the input {}",
            e.line.get("input").map(label_of).unwrap_or_default()
        ),
        "crash" => "a crash".into(),
        "recover" => "a recovery".into(),
        other => other.to_string(),
    }
}

/// Any property: what made each of the violation's events happen (or the step that found it).
fn triggers(violation: &Violation, evs: &[Ev<'_>], ix: &Index) -> Option<Cause> {
    let mut seqs: Vec<u64> = violation.events.clone();
    if seqs.is_empty() {
        // The violation's own line in the trace.
        let line = evs.iter().rev().find(|e| {
            e.event == "violation"
                && e.line.get("property").and_then(Value::as_str) == Some(&violation.property)
                && e.line.get("detail").and_then(Value::as_str) == Some(&violation.detail)
        })?;
        seqs.push(line.seq);
    }
    let mut parts = Vec::new();
    let mut marked = BTreeSet::new();
    let mut messages = BTreeSet::new();
    let mut first_step = usize::MAX;
    let mut seen = BTreeSet::new();
    seqs.sort_unstable();
    for s in seqs {
        let Some(i) = at(evs, s) else { continue };
        let t = trigger(evs, i);
        marked.insert(s);
        marked.insert(t.seq);
        messages.extend(t.msg_id);
        first_step = first_step.min(t.step);
        if evs[i].event == "violation" && seen.contains(&t.seq) {
            continue; // the event that made it happen is told already
        }
        let what = match evs[i].event {
            "deliver" => format!(
                "P{} received {}{} from P{}",
                evs[i].node.unwrap_or_default(),
                evs[i].msg(),
                if evs[i].duplicate {
                    " (a second copy)"
                } else {
                    ""
                },
                evs[i].from.unwrap_or_default()
            ),
            "output" => format!(
                "P{} output {}",
                evs[i].node.unwrap_or_default(),
                evs[i].line.get("output").map(label_of).unwrap_or_default()
            ),
            "violation" => "the monitors saw it".to_string(),
            other => format!("P{} {other}", evs[i].node.unwrap_or_default()),
        };
        let on = if t.seq == s {
            String::new()
        } else {
            format!(" on {}", cause_words(t))
        };
        let node = match t.node {
            Some(n) if t.seq != s && evs[i].event == "violation" => format!(" at P{n}"),
            _ => String::new(),
        };
        parts.push(format!("at step {}{node}, {what}{on}", evs[i].step));
        seen.insert(t.seq);
        if t.event == "deliver" {
            for (older, end) in overtaken(evs, ix, t) {
                let fate = match end {
                    Some(e) => format!("delivered only at step {}", evs[e].step),
                    None => "still on its way".to_string(),
                };
                parts.push(format!(
                    "that message overtook {} from P{}, sent at step {} and so before it (causally), {fate}",
                    older.msg(),
                    older.node.unwrap_or_default(),
                    older.step
                ));
                marked.insert(older.seq);
                messages.extend(older.msg_id);
                if let Some(e) = end {
                    marked.insert(evs[e].seq);
                }
            }
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut text = parts.join("; ");
    text[..1].make_ascii_uppercase();
    Some(Cause {
        text: text + ".",
        events: marked.into_iter().collect(),
        messages: messages.into_iter().collect(),
        back_to: (first_step != usize::MAX).then(|| first_step.saturating_sub(1)),
    })
}

/// The messages to the receiver of delivery `d` that happened before its message (by the
/// vector timestamps of their sends) and were not yet delivered there: the ones it overtook
/// (the latest two).
fn overtaken<'a, 'b>(
    evs: &'b [Ev<'a>],
    ix: &Index,
    d: &Ev<'a>,
) -> Vec<(&'b Ev<'a>, Option<usize>)> {
    let (Some(id), Some(to)) = (d.msg_id, d.node) else {
        return Vec::new();
    };
    let Some(&s) = ix.send.get(&id) else {
        return Vec::new();
    };
    let Some(vs) = vector_of(&evs[s]) else {
        return Vec::new();
    };
    let Some(di) = at(evs, d.seq) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (&(_, t), sends) in &ix.link {
        if t != to {
            continue;
        }
        for &k in sends.iter().filter(|&&k| k < s) {
            let end = evs[k].msg_id.and_then(|m| ix.end.get(&m).copied());
            if end.is_some_and(|e| e < di || evs[e].event == "drop") {
                continue;
            }
            let before = vector_of(&evs[k])
                .is_some_and(|vk| vk.len() == vs.len() && vk.iter().zip(&vs).all(|(a, b)| a <= b));
            if before {
                found.push((&evs[k], end));
            }
        }
    }
    found.sort_by_key(|(e, _)| std::cmp::Reverse(e.seq));
    found.truncate(2);
    found
}

/// The vector timestamp of a trace line.
fn vector_of(e: &Ev<'_>) -> Option<Vec<u64>> {
    e.line
        .get("vector")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect()
}

/// The latest `Request` input of `node` before position `before`.
fn request_of(evs: &[Ev<'_>], node: u32, before: usize) -> Option<usize> {
    evs[..before]
        .iter()
        .rposition(|e| e.node == Some(node) && e.is("input", "input", "Request"))
}

/// Where each message was sent, and delivered (its first copy) or lost; the sends of each link.
struct Index {
    send: HashMap<u64, usize>,
    end: HashMap<u64, usize>,
    link: HashMap<(u32, u32), Vec<usize>>,
}

impl Index {
    fn of(evs: &[Ev<'_>]) -> Index {
        let mut ix = Index {
            send: HashMap::new(),
            end: HashMap::new(),
            link: HashMap::new(),
        };
        for (i, e) in evs.iter().enumerate() {
            let Some(id) = e.msg_id else { continue };
            match e.event {
                "send" => {
                    ix.send.entry(id).or_insert(i);
                    if let (Some(f), Some(t)) = (e.node, e.to) {
                        ix.link.entry((f, t)).or_default().push(i);
                    }
                }
                "deliver" | "drop" => {
                    ix.end.entry(id).or_insert(i);
                }
                _ => {}
            }
        }
        ix
    }
}

fn mutual_exclusion(v: &Violation, evs: &[Ev<'_>], ix: &Index) -> Option<Cause> {
    let (&[b, a], &[eb_seq, ea_seq]) = (v.nodes.as_slice(), v.events.as_slice()) else {
        return None;
    };
    let (eb, ea) = (at(evs, eb_seq)?, at(evs, ea_seq)?);
    let send_of = |id: u64| ix.send.get(&id).copied();
    let end_of = |id: u64| ix.end.get(&id).copied();
    let ra = request_of(evs, a, ea);
    let rb = request_of(evs, b, eb);
    let start = ra.into_iter().chain(rb).min().unwrap_or(0);
    let mut text = format!(
        "P{a} entered the critical section at step {} while P{b} was in it (since step {}).",
        evs[ea].step, evs[eb].step
    );
    let mut marked: BTreeSet<u64> = [eb_seq, ea_seq].into();
    marked.extend(ra.map(|i| evs[i].seq));
    marked.extend(rb.map(|i| evs[i].seq));
    let mut messages = BTreeSet::new();
    let mut decisive: Option<usize> = None;
    let pair = |x: Option<u32>, y: Option<u32>| matches!((x, y), (Some(x), Some(y)) if (x == a && y == b) || (x == b && y == a));

    // 1. A message that overtook an earlier one on a link between the two.
    let mut overtakes = 0;
    for d in start..ea {
        let e = &evs[d];
        if e.event != "deliver" || e.duplicate || !pair(e.from, e.node) || overtakes == 2 {
            continue;
        }
        let Some(s) = e.msg_id.and_then(send_of) else {
            continue;
        };
        // An earlier send on the same link, delivered after this one (or not yet).
        let sends = ix
            .link
            .get(&(e.from.unwrap_or_default(), e.node.unwrap_or_default()));
        let sends = sends.map_or(&[][..], |v| &v[..v.partition_point(|&k| k < s)]);
        // The most recent earlier sends only: an overtaken message is a recent one.
        let earlier = sends.iter().rev().take(256).find(|&&k| {
            evs[k].msg_id.is_some_and(|id| match end_of(id) {
                Some(end) => evs[end].event == "deliver" && end > d,
                None => true,
            })
        });
        let Some(older) = earlier.map(|&k| &evs[k]) else {
            continue;
        };
        let fate = match older.msg_id.and_then(end_of) {
            Some(end) => format!("delivered only at step {}", evs[end].step),
            None => "still on its way".to_string(),
        };
        text.push_str(&format!(
            " On the link P{} → P{}, {} (sent at step {}) overtook {}, sent before it (step {}) and {fate}: the link is not FIFO, and P{} acted on the later message first.",
            e.from.unwrap_or_default(),
            e.node.unwrap_or_default(),
            e.msg(),
            evs[s].step,
            older.msg(),
            older.step,
            e.node.unwrap_or_default(),
        ));
        marked.extend([e.seq, evs[s].seq, older.seq]);
        messages.extend(e.msg_id);
        messages.extend(older.msg_id);
        if let Some(end) = older.msg_id.and_then(end_of) {
            marked.insert(evs[end].seq);
        }
        decisive = Some(decisive.map_or(d, |x: usize| x.min(d)));
        overtakes += 1;
    }

    // 2. A second copy of a message delivered to one of the two.
    for (d, e) in evs.iter().enumerate().take(ea).skip(start) {
        if e.event == "deliver" && e.duplicate && (e.node == Some(a) || e.node == Some(b)) {
            text.push_str(&format!(
                " At step {}, P{} received a second copy of {} from P{} (the network duplicated it) and acted on it again.",
                e.step,
                e.node.unwrap_or_default(),
                e.msg(),
                e.from.unwrap_or_default()
            ));
            marked.insert(e.seq);
            messages.extend(e.msg_id);
            decisive = Some(decisive.map_or(d, |x: usize| x.min(d)));
            break;
        }
    }

    // 3. A crash and recovery of one of the two while the requests were pending.
    for (d, e) in evs.iter().enumerate().take(ea).skip(start) {
        if e.event == "recover" && (e.node == Some(a) || e.node == Some(b)) {
            text.push_str(&format!(
                " At step {}, P{} recovered with a fresh state: what it knew of the other's request was lost.",
                e.step,
                e.node.unwrap_or_default()
            ));
            marked.insert(e.seq);
            decisive = Some(decisive.map_or(d, |x: usize| x.min(d)));
            break;
        }
    }

    // 4. Otherwise: the last message the second received from the first, placed in time.
    if decisive.is_none() {
        let from_b = evs[..ea]
            .iter()
            .enumerate()
            .skip(ra.unwrap_or(0))
            .rev()
            .find(|(_, e)| e.event == "deliver" && e.node == Some(a) && e.from == Some(b));
        match from_b {
            Some((d, e)) => {
                let s = e.msg_id.and_then(send_of);
                let when = match (s, rb) {
                    (Some(s), _) if s > eb => format!(
                        "sent at step {}, after P{b} had entered the critical section",
                        evs[s].step
                    ),
                    (Some(s), Some(rb)) if s < rb => format!(
                        "sent at step {}, before P{b}'s own request (step {})",
                        evs[s].step, evs[rb].step
                    ),
                    (Some(s), Some(rb)) => format!(
                        "sent at step {}, while P{b} was waiting for the critical section (it asked at step {})",
                        evs[s].step, evs[rb].step
                    ),
                    (Some(s), None) => format!("sent at step {}", evs[s].step),
                    (None, _) => "whose send is not in the trace".to_string(),
                };
                text.push_str(&format!(
                    " The last message P{a} received from P{b} before entering was {} (step {}), {when}.",
                    e.msg(),
                    e.step
                ));
                marked.insert(e.seq);
                marked.extend(s.map(|s| evs[s].seq));
                messages.extend(e.msg_id);
                decisive = Some(d);
            }
            None => {
                text.push_str(&format!(
                    " P{a} received no message from P{b} since it asked{}.",
                    ra.map(|r| format!(" (step {})", evs[r].step))
                        .unwrap_or_default()
                ));
            }
        }
        let t = trigger(evs, ea);
        if t.seq != ea_seq {
            text.push_str(&format!(
                " P{a} entered on {} (step {}).",
                cause_words(t),
                t.step
            ));
            marked.insert(t.seq);
            messages.extend(t.msg_id);
        }
        if decisive.is_none() {
            decisive = Some(at(evs, t.seq)?);
        }
    }
    let back = decisive.map(|d| evs[d].step.saturating_sub(1));
    Some(Cause {
        text,
        events: marked.into_iter().collect(),
        messages: messages.into_iter().collect(),
        back_to: back,
    })
}

/// Deadlock and starvation: who waits for whom.
fn waits(evs: &[Ev<'_>]) -> Option<Cause> {
    // The nodes whose latest request has not been served (no Enter since, no crash since).
    let mut latest: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        let Some(n) = e.node else { continue };
        if e.is("input", "input", "Request") {
            latest.insert(n, i);
        } else if e.is("output", "output", "Enter") || e.event == "crash" {
            latest.remove(&n);
        }
    }
    if latest.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let mut marked = BTreeSet::new();
    let mut messages = BTreeSet::new();
    let mut waits_for: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut first = usize::MAX;
    for (&w, &r) in &latest {
        marked.insert(evs[r].seq);
        first = first.min(r);
        // Whom it asked since its request (by message kind), and who answered (another kind).
        let mut asked: BTreeMap<u32, (String, usize)> = BTreeMap::new();
        for (i, e) in evs.iter().enumerate().skip(r) {
            if e.event == "send" && e.node == Some(w) && e.to.is_some_and(|t| t != w) {
                asked
                    .entry(e.to.unwrap_or_default())
                    .or_insert((e.kind(), i));
            }
        }
        let answered: BTreeSet<u32> = evs
            .iter()
            .skip(r)
            .filter(|e| e.event == "deliver" && e.node == Some(w))
            .filter_map(|e| {
                let from = e.from?;
                let (kind, _) = asked.get(&from)?;
                (e.kind() != *kind).then_some(from)
            })
            .collect();
        let missing: Vec<u32> = asked
            .keys()
            .copied()
            .filter(|x| !answered.contains(x))
            .collect();
        for x in &missing {
            let (_, i) = &asked[x];
            marked.insert(evs[*i].seq);
            messages.extend(evs[*i].msg_id);
        }
        let names = |xs: &mut dyn Iterator<Item = u32>| {
            xs.map(|x| format!("P{x}")).collect::<Vec<_>>().join(", ")
        };
        let part = if asked.is_empty() {
            format!(
                "P{w} asked at step {} and sent nothing to the others",
                evs[r].step
            )
        } else if missing.is_empty() {
            format!(
                "P{w} asked {} at step {} and every one answered",
                names(&mut asked.keys().copied()),
                evs[r].step
            )
        } else {
            format!(
                "P{w} asked {} (step {}) and waits for {}",
                names(&mut asked.keys().copied()),
                evs[r].step,
                names(&mut missing.iter().copied())
            )
        };
        parts.push(part);
        waits_for.insert(w, missing);
    }
    let mut text = parts.join("; ") + ".";
    if let Some(cycle) = cycle(&waits_for) {
        let words: Vec<String> = cycle
            .windows(2)
            .map(|p| format!("P{} for P{}", p[0], p[1]))
            .collect();
        text.push_str(&format!(
            " A cycle of waits, none of which can end: {}.",
            words.join(", ")
        ));
    }
    Some(Cause {
        text,
        events: marked.into_iter().collect(),
        messages: messages.into_iter().collect(),
        back_to: Some(evs[first].step.saturating_sub(1)),
    })
}

/// A cycle in the waits-for graph, as its nodes with the first repeated at the end.
fn cycle(g: &BTreeMap<u32, Vec<u32>>) -> Option<Vec<u32>> {
    for &start in g.keys() {
        let mut path = vec![start];
        let mut at = start;
        // Follow the first waited-for node that itself waits (a path of at most |g| steps).
        for _ in 0..g.len() {
            let Some(next) = g[&at].iter().copied().find(|x| g.contains_key(x)) else {
                break;
            };
            if let Some(p) = path.iter().position(|&x| x == next) {
                let mut c = path[p..].to_vec();
                c.push(next);
                return Some(c);
            }
            path.push(next);
            at = next;
        }
    }
    None
}
