//! Independent checks of the three outputs, used on hand-written and simulated traces alike.

use distsync_viz::trace::{leader_of, EventKind, Trace};
use regex::Regex;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

fn has_class(node: &roxmltree::Node, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|t| t == class))
}

fn count_class(doc: &roxmltree::Document, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.is_element() && has_class(n, class))
        .count()
}

fn title_of<'a>(node: &roxmltree::Node<'a, 'a>) -> Option<&'a str> {
    node.children()
        .find(|c| c.has_tag_name("title"))
        .and_then(|t| t.text())
}

/// The SVG of the whole run: parses as XML, one line per process, one arrow per delivered copy,
/// one marked end per drop, one bar per critical section, one mark per crash, recovery and leader
/// announcement, and every event dot carries its Lamport and vector timestamps.
pub fn check_svg(trace: &Trace, svg: &str) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    let root = doc.root_element();
    assert!(root.has_tag_name(("http://www.w3.org/2000/svg", "svg")));

    let processes: Vec<_> = doc
        .descendants()
        .filter(|n| n.is_element() && has_class(n, "process"))
        .collect();
    assert_eq!(
        processes.len(),
        trace.header.ids.len(),
        "one line per process"
    );
    for (p, id) in processes.iter().zip(&trace.header.ids) {
        assert_eq!(p.attribute("data-node"), Some(id.to_string().as_str()));
        assert!(p
            .children()
            .any(|c| c.has_tag_name("line") && has_class(&c, "lifeline")));
        let label = p
            .children()
            .find(|c| c.has_tag_name("text"))
            .expect("a label");
        assert_eq!(label.text(), Some(format!("P{id}").as_str()));
    }

    let count = |f: &dyn Fn(&EventKind) -> bool| trace.events.iter().filter(|e| f(&e.kind)).count();
    let delivered = count(&|k| matches!(k, EventKind::Deliver { .. }));
    let duplicates = count(&|k| {
        matches!(
            k,
            EventKind::Deliver {
                duplicate: true,
                ..
            }
        )
    });
    let dropped = count(&|k| matches!(k, EventKind::Drop { .. }));
    assert_eq!(
        count_class(&doc, "msg"),
        delivered,
        "one arrow per delivered copy"
    );
    assert_eq!(
        count_class(&doc, "duplicate"),
        duplicates,
        "duplicates drawn apart"
    );
    assert_eq!(
        count_class(&doc, "drop"),
        dropped,
        "one dropped line per drop"
    );
    assert_eq!(
        count_class(&doc, "cross"),
        dropped,
        "one marked end per drop"
    );
    assert_eq!(count_class(&doc, "cs"), trace.critical_sections().len());
    assert_eq!(
        count_class(&doc, "crash"),
        count(&|k| matches!(k, EventKind::Crash))
    );
    assert_eq!(
        count_class(&doc, "recover"),
        count(&|k| matches!(k, EventKind::Recover))
    );
    assert_eq!(
        count_class(&doc, "leader"),
        count(&|k| matches!(k, EventKind::Output(v) if leader_of(v).is_some()))
    );
    assert_eq!(count_class(&doc, "adjust"), adjustments(trace));
    assert_eq!(
        count_class(&doc, "partition"),
        count(&|k| matches!(k, EventKind::Partition { .. }))
    );

    // Arrows point with a marker that exists, and carry their tooltip.
    let markers: HashSet<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("marker"))
        .filter_map(|n| n.attribute("id").map(|id| format!("url(#{id})")))
        .collect();
    for arrow in doc
        .descendants()
        .filter(|n| n.is_element() && has_class(n, "msg"))
    {
        let m = arrow.attribute("marker-end").expect("an arrow head");
        assert!(markers.contains(m), "marker {m} is defined");
        let title = title_of(&arrow).expect("a tooltip");
        assert!(title.contains(" → P"), "{title}");
    }
    // Every event dot has its timestamps in a tooltip.
    let dots: Vec<_> = doc
        .descendants()
        .filter(|n| n.is_element() && has_class(n, "ev"))
        .collect();
    let stamped = count(&|k| k.is_process_event());
    assert!(
        dots.len()
            >= stamped
                - count(&|k| matches!(k, EventKind::Output(v) if leader_of(v).is_some()))
                - adjustments(trace)
    );
    for dot in dots {
        let title = title_of(&dot).expect("a tooltip");
        if title.contains(" send ") || title.contains(" deliver ") || title.contains(" input ") {
            assert!(
                title.contains("Lamport ") && title.contains("vector ["),
                "{title}"
            );
        }
    }
    // The legend names every message kind.
    let legend = doc
        .descendants()
        .find(|n| n.is_element() && has_class(n, "legend"))
        .expect("a legend");
    let legend_text: Vec<&str> = legend.descendants().filter_map(|n| n.text()).collect();
    for e in &trace.events {
        if let EventKind::Send { kind, .. } = &e.kind {
            assert!(legend_text.contains(&kind.as_str()), "legend names {kind}");
        }
    }
}

fn adjustments(trace: &Trace) -> usize {
    trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Adjust { .. }))
        .count()
}

/// Slices (ph X) of one track, in file order, must nest: each starts after the enclosing one
/// ends or ends within it.
fn check_nesting(tid: u64, slices: &[(f64, f64, String)]) {
    let mut stack: Vec<(f64, f64, &str)> = Vec::new();
    let mut last_ts = f64::NEG_INFINITY;
    for (ts, dur, name) in slices {
        assert!(*ts >= last_ts, "track {tid}: slices in time order");
        last_ts = *ts;
        let end = ts + dur;
        // Close the slices this one starts after (at the same instant, a zero-length slice is
        // a sibling of a zero-length one, and a longer slice a sibling of one that ends there).
        while let Some(&(top_ts, top_end, _)) = stack.last() {
            let top_dur = top_end - top_ts;
            if *ts > top_end || (*ts == top_end && (top_dur == 0.0 || *dur > 0.0)) {
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(&(pts, pend, pname)) = stack.last() {
            assert!(
                end <= pend + 1e-9,
                "track {tid}: slice {name} [{ts}, {end}] overlaps {pname} [{pts}, {pend}] without nesting"
            );
        }
        stack.push((*ts, end, name));
    }
}

/// The Perfetto JSON: parses, every flow has its start and end (each bound to a slice of its
/// track at its time), one flow per delivered or dropped copy, one slice per critical section,
/// and the slices of each track nest.
pub fn check_perfetto(trace: &Trace, text: &str) {
    let v: Value = serde_json::from_str(text).expect("the Perfetto output parses as JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut slices: HashMap<u64, Vec<(f64, f64, String)>> = HashMap::new();
    let mut starts: HashMap<(u64, String), (f64, u64)> = HashMap::new();
    let mut ends: HashMap<(u64, String), (f64, u64)> = HashMap::new();
    let mut cs = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert_eq!(e["pid"], 1);
        match ph {
            "M" => {
                if e["name"] == "thread_name" {
                    names.insert(
                        e["tid"].as_u64().unwrap(),
                        e["args"]["name"].as_str().unwrap().to_string(),
                    );
                }
            }
            "X" => {
                let tid = e["tid"].as_u64().expect("tid");
                let ts = e["ts"].as_f64().expect("ts");
                let dur = e["dur"].as_f64().expect("dur");
                assert!(dur >= 0.0);
                if e["cat"] == "cs" {
                    cs += 1;
                }
                slices.entry(tid).or_default().push((
                    ts,
                    dur,
                    e["name"].as_str().unwrap().to_string(),
                ));
            }
            "s" | "f" => {
                let key = (
                    e["id"].as_u64().expect("flow id"),
                    e["name"].as_str().unwrap().to_string(),
                );
                let at = (e["ts"].as_f64().unwrap(), e["tid"].as_u64().unwrap());
                // The flow event must be bound to a slice of its track at its time, written
                // before it.
                let bound = slices
                    .get(&at.1)
                    .is_some_and(|s| s.iter().any(|&(ts, dur, _)| ts <= at.0 && at.0 <= ts + dur));
                assert!(bound, "flow {ph} {key:?} at {at:?} has a slice to bind to");
                if ph == "s" {
                    assert!(
                        starts.insert(key.clone(), at).is_none(),
                        "one start per flow {key:?}"
                    );
                } else {
                    assert_eq!(e["bp"], "e", "flow ends bind to the enclosing slice");
                    assert!(
                        ends.insert(key.clone(), at).is_none(),
                        "one end per flow {key:?}"
                    );
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    for id in &trace.header.ids {
        assert_eq!(
            names.get(&(u64::from(*id) + 1)),
            Some(&format!("P{id}")),
            "a track per process"
        );
    }
    assert_eq!(starts.len(), ends.len());
    for (key, (sts, _)) in &starts {
        let (ets, _) = ends
            .get(key)
            .unwrap_or_else(|| panic!("flow {key:?} has an end"));
        assert!(ets >= sts, "flow {key:?} ends after it starts");
    }
    for key in ends.keys() {
        assert!(starts.contains_key(key), "flow {key:?} has a start");
    }
    let sends: HashSet<u64> = trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Send { msg_id, .. } => Some(msg_id),
            _ => None,
        })
        .collect();
    let copies = trace
        .events
        .iter()
        .filter(|e| match e.kind {
            EventKind::Deliver { msg_id, .. } | EventKind::Drop { msg_id, .. } => {
                sends.contains(&msg_id)
            }
            _ => false,
        })
        .count();
    assert_eq!(
        starts.len(),
        copies,
        "one flow per delivered or dropped copy"
    );
    assert_eq!(
        cs,
        trace.critical_sections().len(),
        "one slice per critical section"
    );
    for (tid, s) in &slices {
        check_nesting(*tid, s);
    }
}

/// The ShiViz log: the first line is a regex that, applied to the log after the delimiter line,
/// reads every logged event and nothing else; each host's own clock starts at 1 and rises by 1;
/// every other component names an event of that host that exists and whose clock it dominates;
/// and the order the clocks give is the trace's happened-before order.
pub fn check_shiviz(trace: &Trace, log: &str) {
    let (regex_line, rest) = log.split_once('\n').expect("a regex line");
    let (delimiter, body) = rest.split_once('\n').expect("a delimiter line");
    assert_eq!(delimiter, "", "one execution: the delimiter line is empty");
    let re = Regex::new(regex_line).expect("the declared regex compiles");
    let names: Vec<&str> = re.capture_names().flatten().collect();
    for g in ["event", "host", "clock"] {
        assert!(names.contains(&g), "the regex has the group {g}");
    }
    let mut matched = 0usize;
    let mut covered = 0usize;
    let mut per_host: HashMap<String, Vec<HashMap<String, u64>>> = HashMap::new();
    let mut order: Vec<(String, usize)> = Vec::new();
    for c in re.captures_iter(body) {
        let whole = c.get(0).unwrap();
        assert_eq!(whole.start(), covered, "no unread text between events");
        covered = whole.end() + 1; // the newline after the clock line
        matched += 1;
        let host = c["host"].to_string();
        let clock: HashMap<String, u64> =
            serde_json::from_str(&c["clock"]).expect("the clock is a JSON object of counters");
        let mine = per_host.entry(host.clone()).or_default();
        assert_eq!(
            clock.get(&host).copied(),
            Some(mine.len() as u64 + 1),
            "host {host}: own clock starts at 1 and rises by 1 (event {:?})",
            &c["event"]
        );
        if let Some(prev) = mine.last() {
            for (h, &v) in prev {
                assert!(
                    clock.get(h).copied().unwrap_or(0) >= v,
                    "host {host}: clocks never go back"
                );
            }
        }
        mine.push(clock);
        order.push((host, mine.len() - 1));
    }
    assert_eq!(covered, body.len(), "the regex reads the whole log");
    let logged = trace
        .events
        .iter()
        .filter(|e| {
            e.kind.is_process_event()
                || matches!(
                    e.kind,
                    EventKind::Crash | EventKind::Recover | EventKind::Adjust { .. }
                )
        })
        .count();
    assert_eq!(
        matched, logged,
        "every process event, crash and recovery is logged"
    );
    // Other components refer to existing events whose clocks they dominate.
    for (host, clocks) in &per_host {
        for clock in clocks {
            for (h, &v) in clock {
                if h == host || v == 0 {
                    continue;
                }
                let theirs = per_host
                    .get(h)
                    .unwrap_or_else(|| panic!("host {h} logs events"));
                let referenced = theirs
                    .get(v as usize - 1)
                    .unwrap_or_else(|| panic!("{host} refers to event {v} of {h}, which exists"));
                for (k, &x) in referenced {
                    assert!(
                        clock.get(k).copied().unwrap_or(0) >= x,
                        "clock dominates what it has seen"
                    );
                }
            }
        }
    }
    // The same happened-before order as the trace's vector timestamps, on the events that tick.
    let stamped: Vec<(usize, &Vec<u64>)> = trace
        .events
        .iter()
        .filter(|e| {
            e.kind.is_process_event()
                || matches!(
                    e.kind,
                    EventKind::Crash | EventKind::Recover | EventKind::Adjust { .. }
                )
        })
        .enumerate()
        .filter(|(_, e)| e.kind.is_process_event())
        .map(|(i, e)| (i, e.vector.as_ref().unwrap()))
        .collect();
    if stamped.len() <= 2000 {
        let shiviz: Vec<&HashMap<String, u64>> =
            order.iter().map(|(h, k)| &per_host[h][*k]).collect();
        let leq = |a: &HashMap<String, u64>, b: &HashMap<String, u64>| {
            a.iter().all(|(h, &v)| b.get(h).copied().unwrap_or(0) >= v)
        };
        for &(i, vi) in &stamped {
            for &(j, vj) in &stamped {
                if i == j {
                    continue;
                }
                let trace_before = vi.iter().zip(vj).all(|(a, b)| a <= b) && vi != vj;
                let shiviz_before = leq(shiviz[i], shiviz[j]) && shiviz[i] != shiviz[j];
                assert_eq!(
                    trace_before, shiviz_before,
                    "happened-before of logged events {i} and {j}"
                );
            }
        }
    }
}
