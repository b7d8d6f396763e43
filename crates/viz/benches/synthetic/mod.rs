//! The synthetic trace of the benchmark and of `examples/million.rs`.

use serde_json::json;
use std::fmt::Write as _;

/// Processes in the synthetic run.
pub const NODES: usize = 16;

/// A mutual-exclusion-like run of 16 processes: each round one process requests, broadcasts a
/// request, gets replies, enters and leaves; one message in 50 is duplicated and one in 70 lost.
/// The observer's clocks are kept exactly as the trace format says.
pub fn synthetic(events: usize) -> String {
    let ids: Vec<usize> = (0..NODES).collect();
    let mut out = String::with_capacity(events * 190);
    let _ = writeln!(
        out,
        "{}",
        json!({"event":"header","version":1,"algorithm":"ricart-agrawala","family":"mutex","ids":ids,"seed":1})
    );
    let mut lamport = [0u64; NODES];
    let mut vector = vec![[0u64; NODES]; NODES];
    let mut seq = 0u64;
    let mut msg_id = 0u64;
    let mut t = 0u64;
    let mut round = 0usize;
    let vec_text = |v: &[u64; NODES]| {
        let parts: Vec<String> = v.iter().map(u64::to_string).collect();
        format!("[{}]", parts.join(","))
    };
    let tick = |lamport: &mut [u64; NODES], vector: &mut Vec<[u64; NODES]>, n: usize| {
        lamport[n] += 1;
        vector[n][n] += 1;
    };
    while (seq as usize) < events {
        let r = round % NODES;
        round += 1;
        tick(&mut lamport, &mut vector, r);
        let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{t},\"event\":\"input\",\"node\":{r},\"lamport\":{},\"vector\":{},\"input\":\"Request\"}}", lamport[r], vec_text(&vector[r]));
        seq += 1;
        let mut replies = Vec::new();
        for to in 0..NODES {
            if to == r {
                continue;
            }
            tick(&mut lamport, &mut vector, r);
            let (sl, sv) = (lamport[r], vector[r]);
            let id = msg_id;
            msg_id += 1;
            let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{t},\"event\":\"send\",\"node\":{r},\"lamport\":{sl},\"vector\":{},\"to\":{to},\"msg_id\":{id},\"kind\":\"Request\",\"msg\":{{\"Request\":{{\"ts\":{sl}}}}}}}", vec_text(&sv));
            seq += 1;
            t += 10_000;
            let arrive = t;
            if id.is_multiple_of(70) {
                let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{arrive},\"event\":\"drop\",\"node\":{to},\"from\":{r},\"msg_id\":{id},\"kind\":\"Request\",\"reason\":\"loss\"}}");
                seq += 1;
                continue;
            }
            let copies: u8 = if id.is_multiple_of(50) { 2 } else { 1 };
            for c in 0..copies {
                lamport[to] = lamport[to].max(sl);
                for k in 0..NODES {
                    vector[to][k] = vector[to][k].max(sv[k]);
                }
                tick(&mut lamport, &mut vector, to);
                let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{},\"event\":\"deliver\",\"node\":{to},\"lamport\":{},\"vector\":{},\"from\":{r},\"msg_id\":{id},\"kind\":\"Request\",\"msg\":{{\"Request\":{{\"ts\":{sl}}}}},\"duplicate\":{}}}", arrive, lamport[to], vec_text(&vector[to]), c == 1);
                seq += 1;
            }
            replies.push(to);
        }
        // Replies, sent in time order.
        for to in replies {
            t += 10_000;
            let at = t;
            tick(&mut lamport, &mut vector, to);
            let (sl, sv) = (lamport[to], vector[to]);
            let id = msg_id;
            msg_id += 1;
            let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{at},\"event\":\"send\",\"node\":{to},\"lamport\":{sl},\"vector\":{},\"to\":{r},\"msg_id\":{id},\"kind\":\"Reply\",\"msg\":\"Reply\"}}", vec_text(&sv));
            seq += 1;
            t += 10_000;
            let t_back = t;
            lamport[r] = lamport[r].max(sl);
            for k in 0..NODES {
                vector[r][k] = vector[r][k].max(sv[k]);
            }
            tick(&mut lamport, &mut vector, r);
            let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{t_back},\"event\":\"deliver\",\"node\":{r},\"lamport\":{},\"vector\":{},\"from\":{to},\"msg_id\":{id},\"kind\":\"Reply\",\"msg\":\"Reply\",\"duplicate\":false}}", lamport[r], vec_text(&vector[r]));
            seq += 1;
        }
        for (what, at) in [("Enter", t + 10_000), ("Exit", t + 5_010_000)] {
            tick(&mut lamport, &mut vector, r);
            let _ = writeln!(out, "{{\"seq\":{seq},\"time_ns\":{at},\"event\":\"output\",\"node\":{r},\"lamport\":{},\"vector\":{},\"output\":\"{what}\"}}", lamport[r], vec_text(&vector[r]));
            seq += 1;
        }
        t += 6_000_000;
    }
    out
}
