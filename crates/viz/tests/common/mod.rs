//! Writes traces by hand, keeping the observer's clocks exactly as docs/trace-format.md says
//! (process events tick; a send stamps the message; a delivery merges the stamp, then ticks), so
//! the fixtures are traces the simulator could have written.

#![allow(dead_code)]

pub mod checks;
pub mod geometry;

use serde_json::{json, Value};
use std::collections::HashMap;

/// A message on its way: (from, to, kind, msg, lamport, vector).
type Sent = (u32, u32, String, Value, u64, Vec<u64>);

pub struct Builder {
    ids: Vec<u32>,
    lamport: Vec<u64>,
    vector: Vec<Vec<u64>>,
    lines: Vec<String>,
    seq: u64,
    next_msg: u64,
    msgs: HashMap<u64, Sent>,
}

impl Builder {
    pub fn new(algorithm: &str, family: &str, ids: &[u32], seed: u64) -> Builder {
        let n = ids.len();
        let header = json!({"event":"header","version":1,"algorithm":algorithm,"family":family,"ids":ids,"seed":seed});
        Builder {
            ids: ids.to_vec(),
            lamport: vec![0; n],
            vector: vec![vec![0; n]; n],
            lines: vec![header.to_string()],
            seq: 0,
            next_msg: 0,
            msgs: HashMap::new(),
        }
    }

    fn pos(&self, node: u32) -> usize {
        self.ids
            .iter()
            .position(|&i| i == node)
            .expect("node in ids")
    }

    fn push(&mut self, mut v: Value) {
        v["seq"] = json!(self.seq);
        self.seq += 1;
        self.lines.push(v.to_string());
    }

    fn tick(&mut self, node: u32) -> (u64, Vec<u64>) {
        let p = self.pos(node);
        self.lamport[p] += 1;
        self.vector[p][p] += 1;
        (self.lamport[p], self.vector[p].clone())
    }

    pub fn start_all(&mut self) {
        for id in self.ids.clone() {
            self.push(json!({"time_ns":0,"event":"start","node":id}));
        }
    }

    pub fn input(&mut self, t: u64, node: u32, input: Value) {
        let (l, v) = self.tick(node);
        self.push(
            json!({"time_ns":t,"event":"input","node":node,"lamport":l,"vector":v,"input":input}),
        );
    }

    pub fn output(&mut self, t: u64, node: u32, output: Value) {
        let (l, v) = self.tick(node);
        self.push(json!({"time_ns":t,"event":"output","node":node,"lamport":l,"vector":v,"output":output}));
    }

    pub fn timer(&mut self, t: u64, node: u32, timer: Value) {
        let (l, v) = self.tick(node);
        self.push(
            json!({"time_ns":t,"event":"timer","node":node,"lamport":l,"vector":v,"timer":timer}),
        );
    }

    pub fn send(&mut self, t: u64, from: u32, to: u32, kind: &str, msg: Value) -> u64 {
        let (l, v) = self.tick(from);
        let id = self.next_msg;
        self.next_msg += 1;
        self.msgs
            .insert(id, (from, to, kind.to_string(), msg.clone(), l, v.clone()));
        self.push(json!({"time_ns":t,"event":"send","node":from,"lamport":l,"vector":v,"to":to,"msg_id":id,"kind":kind,"msg":msg}));
        id
    }

    pub fn deliver(&mut self, t: u64, msg_id: u64, duplicate: bool) {
        let (from, to, kind, msg, ml, mv) = self.msgs[&msg_id].clone();
        let p = self.pos(to);
        self.lamport[p] = self.lamport[p].max(ml);
        for (a, b) in self.vector[p].iter_mut().zip(&mv) {
            *a = (*a).max(*b);
        }
        let (l, v) = self.tick(to);
        self.push(json!({"time_ns":t,"event":"deliver","node":to,"lamport":l,"vector":v,"from":from,"msg_id":msg_id,"kind":kind,"msg":msg,"duplicate":duplicate}));
    }

    pub fn drop(&mut self, t: u64, msg_id: u64, reason: &str) {
        let (from, to, kind, ..) = self.msgs[&msg_id].clone();
        self.push(json!({"time_ns":t,"event":"drop","node":to,"from":from,"msg_id":msg_id,"kind":kind,"reason":reason}));
    }

    pub fn crash(&mut self, t: u64, node: u32) {
        self.push(json!({"time_ns":t,"event":"crash","node":node}));
    }

    pub fn recover(&mut self, t: u64, node: u32) {
        self.push(json!({"time_ns":t,"event":"recover","node":node}));
    }

    pub fn partition(&mut self, t: u64, groups: Value) {
        self.push(json!({"time_ns":t,"event":"partition","groups":groups}));
    }

    pub fn adjust(&mut self, t: u64, node: u32, delta_ns: i64) {
        self.push(json!({"time_ns":t,"event":"adjust","node":node,"delta_ns":delta_ns}));
    }

    pub fn heal(&mut self, t: u64) {
        self.push(json!({"time_ns":t,"event":"heal"}));
    }

    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }
}

const MS: u64 = 1_000_000;

/// A Ricart-Agrawala-like run of three processes with everything the diagram draws: two critical
/// sections, a duplicated message, a lost one, one lost to a partition, a crash inside the
/// critical section and a recovery, a clock adjustment, and a message still in flight at the end.
pub fn mutex_run() -> String {
    let mut b = Builder::new("ricart-agrawala", "mutex", &[0, 1, 2], 1);
    b.start_all();
    b.input(MS, 1, json!("Request"));
    let r10 = b.send(MS, 1, 0, "Request", json!({"Request":{"ts":1}}));
    let r12 = b.send(MS, 1, 2, "Request", json!({"Request":{"ts":1}}));
    b.deliver(2 * MS, r10, false);
    let a01 = b.send(2 * MS, 0, 1, "Reply", json!("Reply"));
    b.deliver(2 * MS + 500_000, r12, false);
    let a21 = b.send(2 * MS + 500_000, 2, 1, "Reply", json!("Reply"));
    b.deliver(2 * MS + 700_000, r12, true); // the duplicated copy
    b.deliver(3 * MS, a01, false);
    b.deliver(3 * MS + 200_000, a21, false);
    b.output(3 * MS + 200_000, 1, json!("Enter"));
    b.input(4 * MS, 1, json!("Release"));
    b.output(4 * MS, 1, json!("Exit"));
    b.input(5 * MS, 0, json!("Request"));
    let r01 = b.send(5 * MS, 0, 1, "Request", json!({"Request":{"ts":4}}));
    let r02 = b.send(5 * MS, 0, 2, "Request", json!({"Request":{"ts":4}}));
    b.drop(6 * MS, r02, "loss");
    b.deliver(6 * MS, r01, false);
    let a10 = b.send(6 * MS, 1, 0, "Reply", json!("Reply"));
    b.deliver(7 * MS, a10, false);
    b.timer(8 * MS, 0, json!("Retransmit"));
    let r02b = b.send(8 * MS, 0, 2, "Request", json!({"Request":{"ts":4}}));
    b.deliver(9 * MS, r02b, false);
    let a20 = b.send(9 * MS, 2, 0, "Reply", json!("Reply"));
    b.deliver(10 * MS, a20, false);
    b.output(10 * MS, 0, json!("Enter"));
    b.output(10 * MS + 100_000, 2, json!({"Adjust":{"delta_ns":-1500}}));
    b.partition(11 * MS, json!([[0, 1], [2]]));
    let lost = b.send(
        11 * MS + 100_000,
        1,
        2,
        "Request",
        json!({"Request":{"ts":9}}),
    );
    b.drop(12 * MS, lost, "partition");
    b.crash(12 * MS + 500_000, 0);
    b.heal(13 * MS);
    b.adjust(13 * MS + 500_000, 1, 2_500);
    b.recover(14 * MS, 0);
    b.send(
        14 * MS + 500_000,
        2,
        1,
        "Request",
        json!({"Request":{"ts":12}}),
    );
    b.text()
}

/// The bully example of the notes (seed 002): eight processes, 7 has crashed, 4 notices and
/// holds an election, 5 and 6 answer and hold their own, 6 wins; then 7 recovers and bullies
/// back.
pub fn bully_run() -> String {
    let mut b = Builder::new("bully", "election", &[0, 1, 2, 3, 4, 5, 6, 7], 2);
    b.start_all();
    b.crash(0, 7);
    b.input(MS, 4, json!("Start"));
    let e45 = b.send(MS, 4, 5, "Election", json!("Election"));
    let e46 = b.send(MS, 4, 6, "Election", json!("Election"));
    let e47 = b.send(MS, 4, 7, "Election", json!("Election"));
    b.deliver(2 * MS, e45, false);
    let o54 = b.send(2 * MS, 5, 4, "Ok", json!("Ok"));
    let e56 = b.send(2 * MS, 5, 6, "Election", json!("Election"));
    let e57 = b.send(2 * MS, 5, 7, "Election", json!("Election"));
    b.deliver(2 * MS, e46, false);
    let o64 = b.send(2 * MS, 6, 4, "Ok", json!("Ok"));
    let e67 = b.send(2 * MS, 6, 7, "Election", json!("Election"));
    b.drop(2 * MS, e47, "crashed");
    b.deliver(3 * MS, o54, false);
    b.deliver(3 * MS, e56, false);
    let o65 = b.send(3 * MS, 6, 5, "Ok", json!("Ok"));
    b.drop(3 * MS, e57, "crashed");
    b.deliver(3 * MS, o64, false);
    b.drop(3 * MS, e67, "crashed");
    b.deliver(4 * MS, o65, false);
    b.timer(8 * MS, 6, json!("T"));
    let mut coord = Vec::new();
    for to in 0..6 {
        coord.push(b.send(8 * MS, 6, to, "Coordinator", json!({"Coordinator":6})));
    }
    b.output(8 * MS, 6, json!({"Leader":6}));
    for (to, id) in coord.into_iter().enumerate() {
        b.deliver(9 * MS, id, false);
        b.output(9 * MS, to as u32, json!({"Leader":6}));
    }
    b.recover(12 * MS, 7);
    let mut coord = Vec::new();
    for to in 0..7 {
        coord.push(b.send(12 * MS, 7, to, "Coordinator", json!({"Coordinator":7})));
    }
    b.output(12 * MS, 7, json!({"Leader":7}));
    for (to, id) in coord.into_iter().enumerate() {
        b.deliver(13 * MS, id, false);
        b.output(13 * MS, to as u32, json!({"Leader":7}));
    }
    b.text()
}
