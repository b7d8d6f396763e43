//! Leader election in the simulator: the seed examples as scenario files, the message counts of
//! ORACLES.md, and agreement and validity under crashes and recoveries over many seeds.

mod common;
use common::run_toml;
use distsync_sim::{run, Report, RunOptions, Scenario};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;

/// A trace written to memory.
#[derive(Clone, Default)]
struct Buffer(Rc<RefCell<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn scenario_file(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario and returns its report and trace lines.
fn run_traced(scenario: &Scenario) -> (Report, Vec<Value>) {
    let buffer = Buffer::default();
    let report = run(
        scenario,
        RunOptions {
            trace: Some(Box::new(buffer.clone())),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(buffer.0.borrow().clone()).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (report, lines)
}

/// The algorithm's own message inside the wrappers' envelopes: `{"Data":{"msg":M}}` (ring link)
/// and `{"Inner":M}` (detector) are unwrapped.
fn payload(msg: &Value) -> &Value {
    if let Some(inner) = msg.get("Inner") {
        return payload(inner);
    }
    if let Some(data) = msg.get("Data") {
        return &data["msg"];
    }
    msg
}

/// (time_ns, from, to, kind, payload) of every send of these kinds, in order.
fn sends<'a>(trace: &'a [Value], kinds: &[&str]) -> Vec<(u64, u64, u64, &'a str, &'a Value)> {
    trace
        .iter()
        .filter(|l| l["event"] == "send" && kinds.contains(&l["kind"].as_str().unwrap()))
        .map(|l| {
            (
                l["time_ns"].as_u64().unwrap(),
                l["node"].as_u64().unwrap(),
                l["to"].as_u64().unwrap(),
                l["kind"].as_str().unwrap(),
                payload(&l["msg"]),
            )
        })
        .collect()
}

/// (time_ns, node, leader) of every Leader output.
fn leaders(trace: &[Value]) -> Vec<(u64, u64, u64)> {
    trace
        .iter()
        .filter(|l| l["event"] == "output")
        .map(|l| {
            (
                l["time_ns"].as_u64().unwrap(),
                l["node"].as_u64().unwrap(),
                l["output"]["Leader"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn kind_count(r: &Report, kind: &str) -> u64 {
    let e = r.sections.election.as_ref().unwrap();
    e.messages.by_kind.get(kind).copied().unwrap_or(0)
}

/// Asserts the run ended with every live process naming `leader`, and no violation.
fn assert_settled_on(r: &Report, leader: u32) {
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let e = r.sections.election.as_ref().unwrap();
    assert!(e.agreed);
    assert_eq!(e.leader, Some(leader));
    assert!(e.known_by.values().all(|&l| l == Some(leader)), "{e:?}");
}

#[test]
fn seed_002_bully_eight_processes_then_7_recovers() {
    let (r, trace) = run_traced(&scenario_file("bully-eight-processes.toml"));
    assert_settled_on(&r, 7);
    assert_eq!(r.sections.election.as_ref().unwrap().known_by.len(), 8);
    let step = |from: u64, kind: &str| -> Vec<u64> {
        sends(&trace, &[kind])
            .iter()
            .filter(|s| s.1 == from)
            .map(|s| s.2)
            .collect()
    };
    // 4 notices: ELECTION to 5, 6 and 7.
    assert_eq!(step(4, "Election"), vec![5, 6, 7]);
    // 5 and 6 answer OK and hold their own elections; 6 also answers 5.
    assert_eq!(step(5, "Ok"), vec![4]);
    assert_eq!(step(6, "Ok"), vec![4, 5]);
    assert_eq!(step(5, "Election"), vec![6, 7]);
    assert_eq!(step(6, "Election"), vec![7]);
    // 6 wins and tells everyone; after recovering, 7 tells everyone.
    assert_eq!(step(6, "Coordinator"), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(step(7, "Coordinator"), vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(kind_count(&r, "Election"), 6);
    assert_eq!(kind_count(&r, "Ok"), 3);
    let out = leaders(&trace);
    assert!(out.iter().take(7).all(|o| o.2 == 6), "{out:?}");
    assert!(out.iter().skip(7).all(|o| o.2 == 7 && o.0 >= 100_000_000));
    // 4 noticed at 1ms; 6 waited T = 10ms for 7; the last process heard at 13ms.
    assert_eq!(
        r.sections.election.as_ref().unwrap().completion_time_ns,
        Some(12_000_000)
    );
}

#[test]
fn seed_000_ring_of_six_list_grows_3_5_0_1_4_and_5_is_announced() {
    let (r, trace) = run_traced(&scenario_file("ring-six-processes.toml"));
    assert_settled_on(&r, 5);
    let elections: Vec<(u64, u64, Vec<u64>)> = sends(&trace, &["Election"])
        .iter()
        .map(|s| (s.1, s.2, ids(&s.4["Election"]["list"])))
        .collect();
    assert_eq!(
        elections,
        vec![
            (3, 5, vec![3]),
            (5, 0, vec![3, 5]),
            (0, 1, vec![3, 5, 0]),
            (1, 4, vec![3, 5, 0, 1]),
            (4, 6, vec![3, 5, 0, 1, 4]), // 6 is down: no acknowledgement within T
            (4, 3, vec![3, 5, 0, 1, 4]),
        ]
    );
    let coordinator: Vec<(u64, u64, Vec<u64>)> = sends(&trace, &["Coordinator"])
        .iter()
        .map(|s| (s.1, s.2, ids(&s.4["Coordinator"]["members"])))
        .collect();
    let members = vec![3, 5, 0, 1, 4];
    assert_eq!(
        coordinator,
        vec![
            (3, 5, members.clone()),
            (5, 0, members.clone()),
            (0, 1, members.clone()),
            (1, 4, members.clone()),
            (4, 6, members.clone()),
            (4, 3, members),
        ]
    );
    // 2n messages for one initiator on a ring of n = 6.
    assert_eq!(r.sections.election.as_ref().unwrap().messages.total, 12);
}

#[test]
fn seed_002_simultaneous_elections_by_2_and_5_both_complete_and_agree() {
    let (r, trace) = run_traced(&scenario_file("ring-simultaneous-elections.toml"));
    assert_settled_on(&r, 6);
    let started: Vec<(u64, Vec<u64>)> = sends(&trace, &["Coordinator"])
        .iter()
        .map(|s| (s.1, ids(&s.4["Coordinator"]["members"])))
        .filter(|(from, m)| *from == m[0])
        .collect();
    assert_eq!(
        started,
        vec![
            (2, vec![2, 3, 4, 5, 6, 0, 1]),
            (5, vec![5, 6, 0, 1, 2, 3, 4])
        ]
    );
    assert_eq!(kind_count(&r, "Election"), 16);
    assert_eq!(kind_count(&r, "Coordinator"), 16);
    // One leader per election: every live process reported 6, once.
    let mut reported: Vec<u64> = leaders(&trace).iter().map(|o| o.1).collect();
    reported.sort();
    assert_eq!(reported, vec![0, 1, 2, 3, 4, 5, 6]);
}

#[test]
fn seed_000_active_list_four_processes_p3_is_elected() {
    let (r, trace) = run_traced(&scenario_file("ring-active-list-four-processes.toml"));
    assert_settled_on(&r, 3);
    let delivered: Vec<(u64, u64, String)> = trace
        .iter()
        .filter(|l| l["event"] == "deliver" && l["kind"] != "Ack")
        .map(|l| {
            let m = payload(&l["msg"]);
            let what = match (m.get("Elect"), m.get("Elected")) {
                (Some(e), _) => format!("elect({})", e["j"]),
                (_, Some(e)) => format!("Elected({})", e["coordinator"]),
                _ => panic!("{m}"),
            };
            (
                l["from"].as_u64().unwrap(),
                l["node"].as_u64().unwrap(),
                what,
            )
        })
        .collect();
    let d = |from, to, what: &str| (from, to, what.to_string());
    assert_eq!(
        delivered,
        vec![
            d(2, 3, "elect(2)"),
            d(3, 2, "elect(3)"), // past P4 and P1, both skipped
            d(3, 2, "elect(2)"),
            d(2, 3, "elect(3)"),
            d(2, 3, "Elected(3)"),
            d(3, 2, "Elected(3)"),
        ]
    );
}

#[test]
fn seed_004_example_4_21_p1_holds_4_7_7_and_stays_active_with_7() {
    let (r, trace) = run_traced(&scenario_file("peterson-example-4-21.toml"));
    assert_settled_on(&r, 7);
    // What P1 (id 4) receives in round 1, and what it sends in round 2.
    let received: Vec<&Value> = trace
        .iter()
        .filter(|l| l["event"] == "deliver" && l["node"] == 4 && l["kind"] == "Election")
        .map(|l| payload(&l["msg"]))
        .take(2)
        .collect();
    assert_eq!(received[0]["Tid"]["tid"], 7); // ntid = 7
    assert_eq!(received[1]["Max"]["max"], 7); // nntid = max(7, 3) = 7
    let p1: Vec<&Value> = sends(&trace, &["Election"])
        .iter()
        .filter(|s| s.1 == 4)
        .map(|s| s.4)
        .collect();
    assert_eq!(p1[0]["Tid"]["tid"], 4); // tid = 4
    assert_eq!(p1[2]["Tid"]["round"], 2); // still active in round 2 ...
    assert_eq!(p1[2]["Tid"]["tid"], 7); // ... with 7
                                        // In round 2, P1's 7 comes round to process 7, which receives its own id: elected. Round 1
                                        // is the only round any process completed.
    let last = trace
        .iter()
        .rfind(|l| l["event"] == "deliver" && l["node"] == 7 && l["kind"] == "Election")
        .unwrap();
    assert_eq!(
        payload(&last["msg"])["Tid"],
        serde_json::json!({"epoch": 1, "round": 2, "tid": 7})
    );
    assert_eq!(r.sections.election.as_ref().unwrap().rounds, Some(1));
    assert_eq!(kind_count(&r, "Election"), 8);
    assert_eq!(kind_count(&r, "Elected"), 3);
}

#[test]
fn chang_roberts_scenario_is_the_worst_case() {
    let r = run(
        &scenario_file("chang-roberts-all-start.toml"),
        RunOptions::default(),
    )
    .unwrap();
    assert_settled_on(&r, 7);
    assert_eq!(kind_count(&r, "Election"), 36);
    assert_eq!(kind_count(&r, "Elected"), 8);
}

#[test]
fn a_crash_of_the_coordinator_alone_starts_an_election_with_timeout_detection() {
    let (r, trace) = run_traced(&scenario_file("bully-timeout-detection.toml"));
    assert_settled_on(&r, 7);
    let out = leaders(&trace);
    // Between the crash (300ms) and the recovery (1s) everyone settles on 6, within a few
    // heartbeat timeouts.
    let six: Vec<_> = out.iter().filter(|o| o.2 == 6).collect();
    assert_eq!(six.len(), 7, "{out:?}");
    assert!(six.iter().all(|o| o.0 > 300_000_000 && o.0 < 400_000_000));
    assert!(r.messages.by_kind["Heartbeat"] > 0);
    let e = r.sections.election.as_ref().unwrap();
    assert!(e.completion_time_ns.unwrap() < 100_000_000);
    assert!(!e.messages.by_kind.contains_key("Heartbeat"));
}

/// An election scenario with every listed process starting at time 0.
fn all_start(algorithm: &str, order: &[u32], delay: &str, fifo: bool) -> String {
    let ids: Vec<String> = order.iter().map(|i| i.to_string()).collect();
    let mut text = format!(
        "algorithm = \"{algorithm}\"\nids = [{}]\nuntil = \"1h\"\n[network]\ndelay = {delay}\nfifo = {fifo}\n",
        ids.join(", ")
    );
    for id in order {
        text.push_str(&format!("[[event]]\nat = \"0ms\"\nelect = {id}\n"));
    }
    text
}

fn shuffled(n: u32, rng: &mut Xoshiro256PlusPlus) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    order
}

#[test]
fn chang_roberts_every_process_starting_n_n_plus_1_over_2_and_2n_minus_1() {
    for n in [2u32, 3, 5, 8, 13, 16, 32, 64] {
        let decreasing: Vec<u32> = (0..n).rev().collect();
        let r = run_toml(&all_start("chang-roberts", &decreasing, "\"1ms\"", true), 1);
        assert_settled_on(&r, n - 1);
        let n64 = u64::from(n);
        assert_eq!(kind_count(&r, "Election"), n64 * (n64 + 1) / 2, "n = {n}");
        assert_eq!(kind_count(&r, "Elected"), n64);
        let increasing: Vec<u32> = (0..n).collect();
        let r = run_toml(&all_start("chang-roberts", &increasing, "\"1ms\"", true), 1);
        assert_settled_on(&r, n - 1);
        assert_eq!(kind_count(&r, "Election"), 2 * n64 - 1, "n = {n}");
        assert_eq!(kind_count(&r, "Elected"), n64);
    }
}

#[test]
fn chang_roberts_average_over_random_orders_is_n_h_n() {
    let n = 16u32;
    let mut total = 0u64;
    for seed in 0..500u64 {
        let order = shuffled(n, &mut Xoshiro256PlusPlus::seed_from_u64(seed));
        let text = all_start(
            "chang-roberts",
            &order,
            "{ uniform = [\"500us\", \"1500us\"] }",
            false,
        );
        let r = run_toml(&text, seed);
        assert_settled_on(&r, n - 1);
        total += kind_count(&r, "Election");
    }
    let mean = total as f64 / 500.0;
    let n_h_n: f64 = (1..=n).map(|k| f64::from(n) / f64::from(k)).sum();
    println!("chang-roberts, n = {n}, 500 random orders: mean {mean:.2} election messages, n*H_n = {n_h_n:.2}");
    assert!(
        (mean - n_h_n).abs() <= 0.1 * n_h_n,
        "mean {mean} election messages, n*H_n = {n_h_n:.2}"
    );
}

fn log2_floor(n: u64) -> u64 {
    u64::from(63 - n.leading_zeros())
}
fn log2_ceil(n: u64) -> u64 {
    log2_floor(n) + u64::from(!n.is_power_of_two())
}

/// The longest causal chain of messages of `kind` alone, from the trace: (ending at the leader
/// when it output itself as leader, over the whole run).
fn longest_chain_of(trace: &[Value], kind: &str) -> (u64, u64) {
    let mut at_node: HashMap<u64, u64> = HashMap::new();
    let mut msg_chain: HashMap<u64, u64> = HashMap::new();
    let mut at_election = 0;
    for l in trace {
        if l["event"] == "output" && l["output"]["Leader"] == l["node"] {
            let node = l["node"].as_u64().unwrap();
            at_election = at_node.get(&node).copied().unwrap_or(0);
        }
        if l["kind"] != kind {
            continue;
        }
        let node = l["node"].as_u64().unwrap();
        let id = l["msg_id"].as_u64().unwrap();
        if l["event"] == "send" {
            msg_chain.insert(id, at_node.get(&node).copied().unwrap_or(0) + 1);
        } else if l["event"] == "deliver" {
            let c = msg_chain[&id];
            let here = at_node.entry(node).or_default();
            *here = (*here).max(c);
        }
    }
    (at_election, at_node.values().copied().max().unwrap_or(0))
}

fn check_peterson(order: &[u32], seed: u64, delay: &str, fifo: bool) -> (u64, (u64, u64)) {
    let n = order.len() as u64;
    let scenario = Scenario::from_toml(&all_start("peterson", order, delay, fifo), "t").unwrap();
    let (r, trace) = if n <= 64 {
        let mut s = scenario.clone();
        s.seed = seed;
        let (r, t) = run_traced(&s);
        (r, Some(t))
    } else {
        let r = run(
            &scenario,
            RunOptions {
                seed: Some(seed),
                ..RunOptions::default()
            },
        )
        .unwrap();
        (r, None)
    };
    assert_settled_on(&r, n as u32 - 1);
    let election = kind_count(&r, "Election");
    assert!(
        election <= 2 * n * log2_floor(n) + n,
        "{order:?} seed {seed}: {election} election messages"
    );
    assert_eq!(kind_count(&r, "Elected"), n);
    let rounds = u64::from(r.sections.election.as_ref().unwrap().rounds.unwrap());
    assert!(
        rounds <= log2_ceil(n),
        "{order:?} seed {seed}: {rounds} rounds"
    );
    let chains = trace.map_or((0, 0), |t| longest_chain_of(&t, "Election"));
    (election, chains)
}

#[test]
fn peterson_bounds_for_every_order_up_to_6_with_random_delays() {
    for n in 2..=6u32 {
        let mut order: Vec<u32> = (0..n).collect();
        let mut c = vec![0usize; n as usize];
        let mut seed = 0;
        check_peterson(&order, seed, "{ uniform = [\"100us\", \"3ms\"] }", false);
        let mut i = 0;
        while i < n as usize {
            if c[i] < i {
                order.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
                seed += 1;
                check_peterson(&order, seed, "{ uniform = [\"100us\", \"3ms\"] }", false);
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
    }
}

/// Random orders up to n = 1024. The longest causal chain of election messages that ends at the
/// leader when it learns it is elected is held against the seed's claim of at most 2n-1; the
/// longest over the whole run (values still travelling after that) is printed for
/// docs/election.md (`cargo test -p distsync-sim --test election peterson -- --nocapture`).
#[test]
fn peterson_bounds_for_random_orders_up_to_1024() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut worst = (0.0f64, 0.0f64);
    for (k, n) in [
        2u32, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 255, 256, 512, 1000, 1024,
    ]
    .into_iter()
    .enumerate()
    {
        for _ in 0..if n <= 64 { 8 } else { 1 } {
            let order = shuffled(n, &mut rng);
            let (_, (at_election, overall)) = check_peterson(
                &order,
                k as u64,
                "{ uniform = [\"100us\", \"3ms\"] }",
                false,
            );
            if n <= 64 {
                let bound = 2 * u64::from(n) - 1;
                assert!(
                    at_election <= bound,
                    "n = {n}: chain {at_election} at the election"
                );
                worst.0 = worst.0.max(at_election as f64 / bound as f64);
                worst.1 = worst.1.max(overall as f64 / bound as f64);
            }
        }
    }
    println!(
        "longest chain of election messages / (2n-1), worst over the runs with n <= 64: \
         {:.2} up to the election, {:.2} over the whole run",
        worst.0, worst.1
    );
    assert!(worst.0 > 0.0);
}

#[test]
fn bully_best_case_is_n_minus_2_coordinator_messages() {
    for n in 3..=12u32 {
        let text = format!(
            "algorithm = \"bully\"\nnodes = {n}\n[network]\ndelay = \"1ms\"\n\
             [[event]]\nat = \"0ms\"\ncrash = {}\n[[event]]\nat = \"1ms\"\nelect = {}\n",
            n - 1,
            n - 2
        );
        let r = run_toml(&text, 1);
        assert_settled_on(&r, n - 2);
        assert_eq!(kind_count(&r, "Coordinator"), u64::from(n - 2), "n = {n}");
        assert_eq!(kind_count(&r, "Election"), 1);
        assert_eq!(kind_count(&r, "Ok"), 0);
    }
}

/// The lowest process detects the crash of coordinator n-1: n(n-1)/2 ELECTION, (n-1)(n-2)/2 OK
/// and n-2 COORDINATOR messages, n^2 - n - 1 in all (derived in bully.rs).
#[test]
fn bully_worst_case_when_the_lowest_detects() {
    for n in 3..=12u64 {
        let text = format!(
            "algorithm = \"bully\"\nnodes = {n}\n[network]\ndelay = \"1ms\"\n\
             [[event]]\nat = \"0ms\"\ncrash = {}\n[[event]]\nat = \"1ms\"\nelect = 0\n",
            n - 1
        );
        let r = run_toml(&text, 1);
        assert_settled_on(&r, n as u32 - 2);
        assert_eq!(kind_count(&r, "Election"), n * (n - 1) / 2, "n = {n}");
        assert_eq!(kind_count(&r, "Ok"), (n - 1) * (n - 2) / 2, "n = {n}");
        assert_eq!(kind_count(&r, "Coordinator"), n - 2, "n = {n}");
        assert_eq!(
            r.sections.election.as_ref().unwrap().messages.total,
            n * n - n - 1
        );
    }
}

/// A random run: n processes in a random ring order, random delays, timeout detection, the
/// coordinator and one more process crashing at random times, each recovering or not.
fn faulty_scenario(algorithm: &str, seed: u64, fifo: bool) -> (String, u32, Vec<(u64, u32, bool)>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = rng.gen_range(3..=9u32);
    let order = shuffled(n, &mut rng);
    let top = n - 1;
    let other = rng.gen_range(0..n - 1);
    let mut faults = vec![
        (rng.gen_range(20..400u64), top, false),
        (rng.gen_range(20..400u64), other, false),
    ];
    for k in 0..2 {
        if rng.gen_bool(0.6) {
            let (at, node, _) = faults[k];
            faults.push((at + rng.gen_range(30..600u64), node, true));
        }
    }
    faults.sort();
    let ids: Vec<String> = order.iter().map(|i| i.to_string()).collect();
    let mut text = format!(
        "algorithm = \"{algorithm}\"\nids = [{}]\nuntil = \"2500ms\"\ndetect = \"timeout\"\n\
         heartbeat = \"20ms\"\nheartbeat_timeout = \"70ms\"\nanswer_timeout = \"10ms\"\n\
         [network]\ndelay = {{ uniform = [\"200us\", \"3ms\"] }}\nfifo = {fifo}\n",
        ids.join(", ")
    );
    for &(at, node, recover) in &faults {
        let what = if recover { "recover" } else { "crash" };
        text.push_str(&format!("[[event]]\nat = \"{at}ms\"\n{what} = {node}\n"));
    }
    let mut up: Vec<bool> = vec![true; n as usize];
    for &(_, node, recover) in &faults {
        up[node as usize] = recover;
    }
    let highest_live = (0..n).rev().find(|&i| up[i as usize]).unwrap();
    (text, highest_live, faults)
}

fn agreement_and_validity(algorithm: &str, fifo: bool) {
    for seed in 0..500u64 {
        let (text, highest_live, faults) = faulty_scenario(algorithm, seed, fifo);
        let r = run_toml(&text, seed);
        let e = r.sections.election.as_ref().unwrap();
        assert!(
            r.violations.is_empty() && e.agreed && e.leader == Some(highest_live),
            "{algorithm}: reproduce with seed={seed} (faults {faults:?}): {:?}, {e:?}",
            r.violations
        );
    }
}

#[test]
fn bully_agreement_and_validity_under_crashes_and_recoveries() {
    agreement_and_validity("bully", false);
}

#[test]
fn ring_agreement_and_validity_under_crashes_and_recoveries() {
    agreement_and_validity("ring", false);
}

#[test]
fn chang_roberts_agreement_and_validity_under_crashes_and_recoveries() {
    agreement_and_validity("chang-roberts", false);
}

#[test]
fn ring_active_list_agreement_and_validity_under_crashes_and_recoveries() {
    agreement_and_validity("ring-active-list", true);
}

#[test]
fn peterson_agreement_and_validity_under_crashes_and_recoveries() {
    agreement_and_validity("peterson", false);
}

#[test]
fn the_monitors_catch_a_dead_leader_and_a_split() {
    // No detector and no elect event: everyone still names the crashed coordinator.
    let r = run_toml(
        "algorithm = \"bully\"\nnodes = 4\n[[event]]\nat = \"1ms\"\ncrash = 3\n",
        1,
    );
    assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    assert_eq!(r.violations[0].property, "validity");
    assert!(r.violations[0].detail.contains("crashed"));
    // A partition during a bully election: each side elects its own highest process.
    let r = run_toml(
        "algorithm = \"bully\"\nnodes = 6\n\
         [[event]]\nat = \"0ms\"\ncrash = 5\n\
         [[event]]\nat = \"0ms\"\npartition = [[0, 1, 2], [3, 4]]\n\
         [[event]]\nat = \"1ms\"\nelect = 0\n[[event]]\nat = \"1ms\"\nelect = 3\n",
        1,
    );
    let properties: Vec<&str> = r.violations.iter().map(|v| v.property.as_str()).collect();
    assert!(properties.contains(&"agreement"), "{properties:?}");
    assert!(properties.contains(&"one-leader"), "{properties:?}");
    assert!(!r.sections.election.as_ref().unwrap().agreed);
}

#[test]
fn misplaced_fields_are_refused_with_the_field_named() {
    let err = |text: &str| {
        let s = Scenario::from_toml(text, "t.toml").unwrap();
        run(&s, RunOptions::default()).unwrap_err().to_string()
    };
    let e = err("algorithm = \"ricart-agrawala\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = 1\n");
    assert!(
        e.contains("event[0].elect") && e.contains("leader election"),
        "{e}"
    );
    let e = err("algorithm = \"central\"\nnodes = 3\ndetect = \"timeout\"\n");
    assert!(e.contains("`detect`"), "{e}");
    let e = err("algorithm = \"bully\"\nnodes = 3\n[workload]\nkind = \"light\"\n");
    assert!(e.contains("`workload`") && e.contains("elect = ID"), "{e}");
    let e = err("algorithm = \"ring\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nrequest = 1\n");
    assert!(e.contains("event[0].request"), "{e}");
    let e = err(
        "algorithm = \"peterson\"\nnodes = 3\nheartbeat = \"10ms\"\nheartbeat_timeout = \"5ms\"\n",
    );
    assert!(e.contains("`heartbeat_timeout`"), "{e}");
    let s = Scenario::from_toml(
        "algorithm = \"bully\"\nnodes = 3\ndetect = \"psychic\"\n",
        "t.toml",
    );
    assert!(s.unwrap_err().to_string().contains("unknown variant"));
}
