//! `Trace::read_window` against the whole trace: a window read alone draws the same SVG bytes,
//! and a malformed line after the window is refused as `Trace::read` refuses it.

use distsync_viz::svg::{render, SvgOptions};
use distsync_viz::trace::Trace;

const HEADER: &str = r#"{"event":"header","version":1,"algorithm":"central","family":"mutex","ids":[0,1,2],"seed":7}"#;

/// A trace with what straddles a window: a critical section entered before it and left
/// after it, a process down across it, a message sent before it and delivered after it, a
/// duplicated copy in it of a message first delivered before it, a message sent in it and
/// delivered after it, one sent in it and never delivered, and a message kind first seen
/// after it. `ids`: the msg ids of the two replies, in the order they are sent.
fn straddling(ids: [u64; 2]) -> String {
    let [r1, r2] = ids;
    let lines = [
        HEADER.to_string(),
        r#"{"seq":0,"time_ns":0,"event":"start","node":0}"#.into(),
        r#"{"seq":1,"time_ns":0,"event":"start","node":1}"#.into(),
        r#"{"seq":2,"time_ns":0,"event":"start","node":2}"#.into(),
        r#"{"seq":3,"time_ns":10,"event":"send","node":1,"lamport":1,"vector":[0,1,0],"to":0,"msg_id":1,"kind":"Request","msg":"Request"}"#.into(),
        r#"{"seq":4,"time_ns":12,"event":"send","node":1,"lamport":2,"vector":[0,2,0],"to":0,"msg_id":2,"kind":"Request","msg":"Request"}"#.into(),
        r#"{"seq":5,"time_ns":20,"event":"deliver","node":0,"lamport":2,"vector":[1,1,0],"from":1,"msg_id":2,"kind":"Request","msg":"Request","duplicate":false}"#.into(),
        r#"{"seq":6,"time_ns":22,"event":"output","node":0,"lamport":3,"vector":[2,1,0],"output":"Enter"}"#.into(),
        r#"{"seq":7,"time_ns":25,"event":"crash","node":2}"#.into(),
        r#"{"seq":8,"time_ns":45,"event":"deliver","node":0,"lamport":4,"vector":[3,1,0],"from":1,"msg_id":2,"kind":"Request","msg":"Request","duplicate":true}"#.into(),
        format!(r#"{{"seq":9,"time_ns":50,"event":"send","node":0,"lamport":5,"vector":[4,1,0],"to":1,"msg_id":{r1},"kind":"Reply","msg":"Reply"}}"#),
        format!(r#"{{"seq":10,"time_ns":55,"event":"send","node":0,"lamport":6,"vector":[5,1,0],"to":1,"msg_id":{r2},"kind":"Reply","msg":"Reply"}}"#),
        r#"{"seq":11,"time_ns":60,"event":"timer","node":1,"lamport":3,"vector":[0,3,0],"timer":"T"}"#.into(),
        r#"{"seq":12,"time_ns":80,"event":"deliver","node":1,"lamport":7,"vector":[5,4,0],"from":0,"msg_id":3,"kind":"Reply","msg":"Reply","duplicate":false}"#.into(),
        r#"{"seq":13,"time_ns":85,"event":"output","node":0,"lamport":7,"vector":[6,1,0],"output":"Exit"}"#.into(),
        r#"{"seq":14,"time_ns":90,"event":"recover","node":2}"#.into(),
        r#"{"seq":15,"time_ns":95,"event":"deliver","node":0,"lamport":8,"vector":[7,2,0],"from":1,"msg_id":1,"kind":"Request","msg":"Request","duplicate":false}"#.into(),
        r#"{"seq":16,"time_ns":100,"event":"send","node":2,"lamport":1,"vector":[0,0,1],"to":0,"msg_id":5,"kind":"Ack","msg":"Ack"}"#.into(),
        r#"{"seq":17,"time_ns":110,"event":"drop","node":0,"from":2,"msg_id":5,"kind":"Ack","reason":"loss"}"#.into(),
    ];
    lines.join("\n") + "\n"
}

/// Every window of the trace above, read alone, draws the same bytes as from the whole
/// trace; with the ids rising, less is kept for a window inside it, the duplicated copy's
/// send (let go before the window) looked up again; with ids that do not rise, the whole
/// trace is read.
#[test]
fn a_window_read_alone_draws_what_the_whole_trace_draws() {
    let times = [
        0, 10, 12, 20, 22, 25, 40, 45, 50, 55, 70, 80, 85, 90, 95, 100, 110, 120,
    ];
    for ids in [[3, 4], [4, 3]] {
        let text = straddling(ids);
        let whole = Trace::parse(&text, "t.jsonl").unwrap();
        for &from in &times {
            let tos = times.iter().filter(|&&t| t >= from).map(|&t| Some(t));
            for to in tos.chain([None]) {
                let reader = std::io::Cursor::new(text.as_bytes());
                let w = Trace::read_window(reader, "t.jsonl", from, to).unwrap();
                assert_eq!(w.events, whole.events.len());
                assert_eq!(w.end_time_ns, 110);
                let opts = SvgOptions {
                    from_ns: Some(from),
                    to_ns: to,
                };
                assert_eq!(
                    render(&w.trace, &opts).unwrap(),
                    render(&whole, &opts).unwrap(),
                    "ids {ids:?}, window {from}..{to:?}"
                );
                if ids == [4, 3] {
                    assert_eq!(w.trace, whole, "ids that do not rise: the whole trace");
                }
            }
        }
    }
    let text = straddling([3, 4]);
    let w = Trace::read_window(std::io::Cursor::new(text.as_bytes()), "t", 40, Some(70)).unwrap();
    let seqs: Vec<u64> = w.trace.events.iter().map(|e| e.seq).collect();
    // The sends of the message crossing the window (3) and of the duplicated copy (4), the
    // section's Enter (6) and Exit (13), the crash (7) and recovery (14), the window (8-11),
    // the late delivery (12) and the crossing one (15), the first Ack (16) and the last
    // event (17); not the starts, nor the first copy's delivery.
    assert_eq!(seqs, [3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
}

/// A malformed line anywhere, after the window too, is refused as `read` refuses it.
#[test]
fn a_window_refuses_a_malformed_tail() {
    let mut text = straddling([3, 4]);
    text.push_str("{\"seq\":18,\"time_ns\":120,\"event\":\"send\"\n");
    let err = Trace::read_window(
        std::io::Cursor::new(text.as_bytes()),
        "t.jsonl",
        0,
        Some(30),
    )
    .unwrap_err();
    assert_eq!(err.line, 20, "{err}");
    assert!(
        err.to_string().starts_with("t.jsonl:20: not a JSON object"),
        "{err}"
    );
}
