//! The three outputs on traces written by hand (tests/common), checked by counting elements,
//! re-parsing, and the rules of each format.

mod common;

use common::checks::{check_perfetto, check_shiviz, check_svg};
use common::{bully_run, mutex_run, Builder};
use distsync_viz::svg::{render, SvgOptions};
use distsync_viz::trace::{EventKind, Trace};
use distsync_viz::{perfetto, shiviz};
use serde_json::json;

const MS: u64 = 1_000_000;

fn class_count(svg: &str, class: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split_whitespace().any(|t| t == class))
        })
        .count()
}

#[test]
fn mutex_run_svg_has_every_mark() {
    let trace = Trace::parse(&mutex_run(), "mutex.jsonl").unwrap();
    let svg = render(&trace, &SvgOptions::default()).unwrap();
    check_svg(&trace, &svg);
    // The fixture's own figures, counted by hand: 3 processes, 9 delivered copies (one of them
    // a duplicate), 2 drops, 2 critical sections (the second ended by the crash), one message in
    // flight, one clock adjustment (an adjust event; the algorithm's Adjust output is an
    // ordinary output), one partition and its heal.
    assert_eq!(class_count(&svg, "process"), 3);
    assert_eq!(class_count(&svg, "msg"), 9);
    assert_eq!(class_count(&svg, "duplicate"), 1);
    assert_eq!(class_count(&svg, "drop"), 2);
    assert_eq!(class_count(&svg, "cross"), 2);
    assert_eq!(class_count(&svg, "cs"), 2);
    assert_eq!(class_count(&svg, "crashed"), 1);
    assert_eq!(class_count(&svg, "inflight"), 1);
    assert_eq!(class_count(&svg, "adjust"), 1);
    assert_eq!(
        class_count(&svg, "output"),
        1,
        "the Adjust output, labelled"
    );
    assert_eq!(class_count(&svg, "crash"), 1);
    assert_eq!(class_count(&svg, "recover"), 1);
    assert_eq!(class_count(&svg, "down"), 1);
    assert_eq!(class_count(&svg, "partition"), 1);
    assert_eq!(class_count(&svg, "heal"), 1);
    // The time scale has its unit.
    assert!(svg.contains(">time (ms)</text>"));
}

#[test]
fn bully_run_svg_marks_leaders_crash_and_recovery() {
    let trace = Trace::parse(&bully_run(), "bully.jsonl").unwrap();
    let svg = render(&trace, &SvgOptions::default()).unwrap();
    check_svg(&trace, &svg);
    assert_eq!(class_count(&svg, "process"), 8);
    assert_eq!(class_count(&svg, "leader"), 7 + 8);
    assert_eq!(class_count(&svg, "drop"), 3);
    assert!(svg.contains(">leader 6</text>") && svg.contains(">leader 7</text>"));
}

#[test]
fn a_window_draws_what_it_overlaps() {
    let trace = Trace::parse(&mutex_run(), "mutex.jsonl").unwrap();
    let (from, to) = (5 * MS, 8 * MS);
    let svg = render(
        &trace,
        &SvgOptions {
            from_ns: Some(from),
            to_ns: Some(to),
        },
    )
    .unwrap();
    // Deliveries whose flight [send, delivery] overlaps [5 ms, 8 ms]: the request 0→1 (5..6 ms)
    // and the reply 1→0 (6..7 ms); the retransmitted request is sent at 8 ms and arrives at 9.
    let msgs = trace.messages();
    let expected = msgs
        .iter()
        .flat_map(|(_, f)| f.deliveries.iter().map(move |&d| (f.send, d)))
        .filter(|&(s, d)| {
            let sent = s.map_or(trace.events[d].time_ns, |s| trace.events[s].time_ns);
            let got = trace.events[d].time_ns;
            got >= from && sent <= to
        })
        .count();
    assert_eq!(expected, 3);
    assert_eq!(class_count(&svg, "msg"), expected);
    assert_eq!(
        class_count(&svg, "drop"),
        1,
        "the lost request to P2 at 6 ms"
    );
    assert_eq!(class_count(&svg, "process"), 3);
    assert!(svg.contains("5 ms to 8 ms"));
    roxmltree::Document::parse(&svg).unwrap();
    // Nothing drawn lies left of the plot's start.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    for n in doc.descendants().filter(|n| n.has_tag_name("line")) {
        for a in ["x1", "x2"] {
            if let Some(x) = n.attribute(a) {
                assert!(x.parse::<f64>().unwrap() >= 0.0);
            }
        }
    }
}

#[test]
fn markup_in_messages_is_escaped() {
    let mut b = Builder::new("a<b>", "mutex&co", &[3, 5], 9);
    b.start_all();
    let m = b.send(
        MS,
        3,
        5,
        "Kind<&>\"'",
        json!({"text": "</title><script>x</script> & \u{1}"}),
    );
    b.deliver(2 * MS, m, false);
    b.output(2 * MS, 5, json!({"Note": "<b>"}));
    let trace = Trace::parse(&b.text(), "x").unwrap();
    let svg = render(&trace, &SvgOptions::default()).unwrap();
    check_svg(&trace, &svg);
    assert!(!svg.contains("<script>"));
    check_perfetto(&trace, &perfetto::render(&trace));
    check_shiviz(&trace, &shiviz::render(&trace));
}

#[test]
fn width_grows_with_the_events_and_is_bounded() {
    let width = |svg: &str| -> f64 {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.root_element()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap()
    };
    let mut small = Builder::new("x", "mutex", &[0, 1], 1);
    let m = small.send(0, 0, 1, "A", json!("A"));
    small.deliver(MS, m, false);
    let mut big = Builder::new("x", "mutex", &[0, 1], 1);
    for i in 0..400 {
        let m = big.send(i * MS, 0, 1, "A", json!("A"));
        big.deliver(i * MS + MS / 2, m, false);
    }
    let mut huge = Builder::new("x", "mutex", &[0, 1], 1);
    for i in 0..20_000 {
        let m = huge.send(i * MS, 0, 1, "A", json!("A"));
        huge.deliver(i * MS + MS / 2, m, false);
    }
    let draw = |b: &Builder| {
        render(
            &Trace::parse(&b.text(), "t").unwrap(),
            &SvgOptions::default(),
        )
        .unwrap()
    };
    let (ws, wb, wh) = (
        width(&draw(&small)),
        width(&draw(&big)),
        width(&draw(&huge)),
    );
    assert!(ws < wb && wb < wh, "{ws} {wb} {wh}");
    assert!(wh <= 60_000.0 + 200.0);
}

#[test]
fn mutex_run_perfetto() {
    let trace = Trace::parse(&mutex_run(), "mutex.jsonl").unwrap();
    let out = perfetto::render(&trace);
    check_perfetto(&trace, &out);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    // The crash-ended critical section ends at the crash (12.5 ms after its 10 ms start).
    let cs: Vec<_> = events.iter().filter(|e| e["cat"] == "cs").collect();
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[1]["ts"], json!(10000));
    assert_eq!(cs[1]["dur"], json!(2500));
    assert_eq!(cs[1]["args"]["ended_by"], "crash");
    // The partition is a slice on the network track, from partition to heal.
    let p: Vec<_> = events.iter().filter(|e| e["cat"] == "network").collect();
    assert_eq!(p.len(), 1);
    assert_eq!(
        (p[0]["ts"].clone(), p[0]["dur"].clone()),
        (json!(11000), json!(2000))
    );
}

#[test]
fn bully_run_perfetto_has_elections() {
    let trace = Trace::parse(&bully_run(), "bully.jsonl").unwrap();
    let out = perfetto::render(&trace);
    check_perfetto(&trace, &out);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let elections: Vec<_> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "election")
        .collect();
    // One election per leader announcement (15); P4's runs from its start at 1 ms to 9 ms.
    assert_eq!(elections.len(), 15);
    let p4 = elections
        .iter()
        .find(|e| e["tid"] == 5 && e["args"]["outcome"]["leader"] == 6)
        .unwrap();
    assert_eq!(
        (p4["ts"].clone(), p4["dur"].clone()),
        (json!(1000), json!(8000))
    );
}

#[test]
fn shiviz_logs_follow_the_rules() {
    for (name, text) in [("mutex", mutex_run()), ("bully", bully_run())] {
        let trace = Trace::parse(&text, name).unwrap();
        check_shiviz(&trace, &shiviz::render(&trace));
    }
}

#[test]
fn shiviz_renumbers_clocks_across_a_crash() {
    // The trace's own clocks go on across a crash and do not count crashes; ShiViz's must count
    // each logged event exactly once.
    let trace = Trace::parse(&bully_run(), "bully").unwrap();
    let log = shiviz::render(&trace);
    let p7: Vec<&str> = log.lines().filter(|l| l.starts_with("P7 {")).collect();
    assert_eq!(
        p7[0], r#"P7 {"P7":1}"#,
        "the crash is P7's first logged event"
    );
    assert_eq!(p7[1], r#"P7 {"P7":2}"#, "then its recovery");
    assert!(p7[2].starts_with(r#"P7 {"P7":3"#));
    assert_eq!(p7.len(), 2 + 7 + 1);
}

#[test]
fn drops_and_timers_keep_their_meaning() {
    let trace = Trace::parse(&mutex_run(), "m").unwrap();
    assert!(trace
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Drop { reason, .. } if reason == "partition")));
    let log = shiviz::render(&trace);
    assert!(log.contains("timer \"Retransmit\""));
    assert!(!log.contains(" drop "), "drops are no process's event");
}
