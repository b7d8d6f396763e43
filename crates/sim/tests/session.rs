//! The stepped engine (`Session`): stepping with `Next` is the batch run, event for event and
//! byte for byte, for every algorithm; going back restores exactly what was shown; manual
//! choices (a chosen delivery order, lost and duplicated messages, crashes, partitions) do what
//! they say, and a manual order breaks Lamport's algorithm on a non-FIFO network.

use distsync_algorithms::registry::{self, Family};
use distsync_core::NodeId;
use distsync_sim::session::{Choice, RunStop, Session, View};
use distsync_sim::{default_scenario, Report, Scenario};
use serde_json::{json, Value};

mod support;
use support::batch;

fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml(toml, "test.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

/// Steps `scenario` with `Next` to the end and checks it against the batch run.
fn stepping_is_the_batch_run(name: &str, scenario: &Scenario) {
    let (report, trace) = batch(scenario);
    let mut session = Session::new(scenario, "test.toml").unwrap();
    let stop = session.run(u64::MAX, None).unwrap();
    if stop != RunStop::Violation {
        assert!(matches!(stop, RunStop::Ended(_)), "{name}: {stop:?}");
    }
    // A violation stops `run`; go on to the end as the batch run does.
    while session.view().ended_by.is_none() {
        session.run(u64::MAX, None).unwrap();
    }
    let view = session.view();
    assert_eq!(
        view.ended_by.unwrap(),
        report.ended_by,
        "{name} (seed {})",
        scenario.seed
    );
    // Every live process's state serializes (a failure would show as null).
    for p in view.processes.iter().filter(|p| p.alive) {
        assert!(
            p.state.is_object(),
            "{name}: node {} state {}",
            p.id,
            p.state
        );
    }
    check(name, &session, &report, &trace);
}

fn check(name: &str, session: &Session, report: &Report, trace: &str) {
    let seed = report.seed;
    assert_eq!(
        session.trace_jsonl(),
        trace,
        "{name} (seed {seed}): the session's trace differs from the batch run's"
    );
    assert_eq!(
        serde_json::to_value(session.report()).unwrap(),
        serde_json::to_value(report).unwrap(),
        "{name} (seed {seed}): the session's report differs from the batch run's"
    );
}

#[test]
fn every_algorithm_stepped_with_next_is_the_batch_run() {
    let mut names = 0;
    for entry in registry::entries() {
        let toml = default_scenario(entry.name).expect("every algorithm has a default");
        let s = scenario(&toml);
        let (report, _) = batch(&s);
        assert!(report.events_processed > 10, "{}: {report:?}", entry.name);
        stepping_is_the_batch_run(entry.name, &s);
        if entry.family == Family::Election {
            let timeout = format!(
                "detect = \"timeout\"\nheartbeat = \"10ms\"\nheartbeat_timeout = \"40ms\"\n{toml}"
            );
            stepping_is_the_batch_run(entry.name, &scenario(&timeout));
        }
        names += 1;
    }
    assert_eq!(names, 24);
}

/// The default scenario is what the page starts a learner on: each clock-synchronization
/// algorithm's must show it correcting clocks. NTP's once named two stratum-1 servers whose
/// clocks disagreed; they never formed a majority and no clock was ever corrected.
#[test]
fn every_clock_algorithms_default_scenario_corrects_clocks() {
    for entry in registry::entries()
        .into_iter()
        .filter(|e| e.family == Family::ClockSync)
    {
        let s = scenario(&default_scenario(entry.name).unwrap());
        let (report, _) = batch(&s);
        let clock = report.sections.clock.as_ref().expect("a clock report");
        assert!(
            clock.adjustments > 0 && clock.no_majority == 0,
            "{}: {} adjustments, no majority {} times",
            entry.name,
            clock.adjustments,
            clock.no_majority
        );
    }
}

#[test]
fn stepping_matches_batch_runs_with_loss_duplication_crashes_and_partitions() {
    let lossy = r#"
        algorithm = "ricart-agrawala"
        nodes = 4
        seed = 7
        until = "2s"
        [network]
        delay = { exponential = "2ms" }
        fifo = false
        loss = 0.1
        duplicate = 0.1
        [workload]
        kind = "poisson"
        rate = 20.0
        cs = "5ms"
        [[event]]
        at = "300ms"
        partition = [[0, 1], [2, 3]]
        [[event]]
        at = "600ms"
        heal = true
        [[event]]
        at = "700ms"
        crash = 2
        [[event]]
        at = "900ms"
        recover = 2
    "#;
    stepping_is_the_batch_run("lossy ricart-agrawala", &scenario(lossy));
    let bully = r#"
        algorithm = "bully"
        nodes = 6
        seed = 3
        until = "1s"
        detect = "timeout"
        heartbeat = "10ms"
        heartbeat_timeout = "40ms"
        answer_timeout = "10ms"
        [network]
        delay = { uniform = ["500us", "2ms"] }
        loss = 0.05
        [[event]]
        at = "100ms"
        crash = 5
        [[event]]
        at = "400ms"
        recover = 5
    "#;
    stepping_is_the_batch_run("bully with timeouts", &scenario(bully));
}

/// A view as JSON, without `steps_recorded` (going back keeps the choices ahead, for `goto`).
fn shown(session: &Session) -> Value {
    let mut v = serde_json::to_value(session.view()).unwrap();
    v.as_object_mut().unwrap().remove("steps_recorded");
    v
}

fn pending_id(view: &View, kind: &str, from: u32, to: u32, msg_kind: &str) -> u64 {
    view.pending
        .iter()
        .find(|p| {
            p.kind == kind
                && p.from == Some(from)
                && p.to == Some(to)
                && p.msg_kind == Some(msg_kind)
        })
        .unwrap_or_else(|| panic!("no {msg_kind} {from}->{to} pending in {:#?}", view.pending))
        .id
}

/// A choice made from what the page shows.
type MakeChoice = dyn Fn(&View) -> Choice;

const MANUAL_RA: &str = r#"
    algorithm = "ricart-agrawala"
    nodes = 3
    seed = 5
    until = "10s"
    [network]
    delay = { uniform = ["1ms", "3ms"] }
    fifo = false
"#;

#[test]
fn back_restores_exactly_the_previous_view_after_every_kind_of_choice() {
    let s = scenario(MANUAL_RA);
    let mut session = Session::new(&s, "test.toml").unwrap();
    let mut kinds = Vec::new();
    let steps: Vec<Box<MakeChoice>> = vec![
        Box::new(|_| Choice::Request { node: NodeId(0) }),
        Box::new(|_| Choice::Next),
        Box::new(|_| Choice::Request { node: NodeId(2) }),
        Box::new(|v| Choice::Event {
            id: v.pending.iter().find(|p| p.kind == "input").unwrap().id,
        }),
        // The later of 0's two requests first.
        Box::new(|v| Choice::Event {
            id: pending_id(v, "deliver", 0, 2, "Request"),
        }),
        Box::new(|v| Choice::Duplicate {
            id: pending_id(v, "deliver", 0, 1, "Request"),
        }),
        Box::new(|v| Choice::Drop {
            id: pending_id(v, "deliver", 2, 1, "Request"),
        }),
        Box::new(|_| Choice::Partition {
            groups: vec![vec![NodeId(0), NodeId(1)], vec![NodeId(2)]],
        }),
        Box::new(|_| Choice::Heal),
        Box::new(|_| Choice::Crash { node: NodeId(1) }),
        Box::new(|_| Choice::Recover { node: NodeId(1) }),
        Box::new(|_| Choice::Input {
            node: NodeId(1),
            input: json!("Request"),
        }),
        Box::new(|_| Choice::Next),
    ];
    for (i, make) in steps.iter().enumerate() {
        let before = shown(&session);
        let choice = make(&session.view());
        kinds.push(format!("{choice:?}"));
        session
            .apply(choice.clone())
            .unwrap_or_else(|e| panic!("step {i} {choice:?}: {e}"));
        let after = shown(&session);
        assert_ne!(before, after, "{choice:?} changed nothing");
        session.back().unwrap();
        assert_eq!(shown(&session), before, "back after {choice:?}");
        session.goto(i + 1).unwrap();
        assert_eq!(shown(&session), after, "goto forward after {choice:?}");
    }
    // goto to any earlier step and forward again.
    let end = shown(&session);
    let trace = session.trace_jsonl();
    session.goto(3).unwrap();
    assert_eq!(session.view().step, 3);
    session.goto(steps.len()).unwrap();
    assert_eq!(shown(&session), end);
    assert_eq!(session.trace_jsonl(), trace);
    assert!(session.goto(steps.len() + 1).is_err());
    // A shared link: scenario and choices replay the same run.
    let again = Session::replay(&s, "test.toml", session.choices()).unwrap();
    assert_eq!(shown(&again), end);
    assert_eq!(again.trace_jsonl(), trace);
    assert_eq!(again.report(), session.report());
    // Choices travel as JSON.
    let text = serde_json::to_string(session.choices()).unwrap();
    let parsed: Vec<Choice> = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, session.choices());
    assert!(text.contains(r#"{"do":"request","node":0}"#), "{text}");
    // Applying after going back forgets what was ahead.
    session.goto(2).unwrap();
    session.apply(Choice::Crash { node: NodeId(2) }).unwrap();
    assert_eq!(session.recorded().len(), 3);
}

#[test]
fn a_reply_overtaking_a_request_breaks_lamport_on_a_non_fifo_network() {
    let s = scenario(
        r#"
        algorithm = "lamport-mutex"
        nodes = 2
        until = "10s"
        [network]
        delay = "1ms"
        fifo = false
        "#,
    );
    let mut session = Session::new(&s, "test.toml").unwrap();
    session.apply(Choice::Request { node: NodeId(0) }).unwrap();
    session.apply(Choice::Next).unwrap(); // 0 asks: REQUEST(ts 1) 0->1
    session.apply(Choice::Request { node: NodeId(1) }).unwrap();
    session.apply(Choice::Next).unwrap(); // 1 asks: REQUEST(ts 1) 1->0
    let request_1 = session
        .find_pending_delivery(NodeId(1), NodeId(0), &json!({"Request": {"ts": 1}}))
        .unwrap();
    // 0 replies, and its own request (1, 0) is first in the total order: it enters.
    session.apply(Choice::Event { id: request_1 }).unwrap();
    let v = session.view();
    assert_eq!(v.processes[0].badge.as_deref(), Some("in CS"));
    assert_eq!(v.processes[1].badge.as_deref(), Some("requesting"));
    let reply_0 = pending_id(&v, "deliver", 0, 1, "Reply");
    let request_0 = pending_id(&v, "deliver", 0, 1, "Request");
    assert!(reply_0 > request_0, "the REPLY was sent after the REQUEST");
    assert!(v.violations.is_empty(), "{:?}", v.violations);
    // The REPLY overtakes 0's REQUEST: node 1 knows of no earlier request and enters too.
    let applied = session.apply(Choice::Event { id: reply_0 }).unwrap();
    assert_eq!(applied.violations.len(), 1, "{applied:?}");
    let violation = &applied.violations[0];
    assert_eq!(violation.property, "mutual-exclusion");
    assert_eq!(violation.nodes, vec![0, 1]);
    assert_eq!(
        violation.detail,
        "node 1 entered the critical section while node 0 was in it"
    );
    // The events named are the two Enter outputs in the trace.
    let log = session.view().log;
    for (seq, node) in violation.events.iter().zip([0, 1]) {
        let line = &log
            .iter()
            .find(|e| e.line["seq"] == json!(seq))
            .unwrap()
            .line;
        assert_eq!(line["event"], "output");
        assert_eq!(line["output"], "Enter");
        assert_eq!(line["node"], node);
    }
    let v = session.view();
    assert!(v
        .processes
        .iter()
        .all(|p| p.badge.as_deref() == Some("in CS")));
    assert_eq!(session.report().violations[0], *violation);
    // On a FIFO network the same order is refused.
    let fifo = scenario(&s_fifo());
    let mut session = Session::new(&fifo, "test.toml").unwrap();
    session.apply(Choice::Request { node: NodeId(0) }).unwrap();
    session.apply(Choice::Next).unwrap();
    session.apply(Choice::Request { node: NodeId(1) }).unwrap();
    session.apply(Choice::Next).unwrap();
    let request_1 = pending_id(&session.view(), "deliver", 1, 0, "Request");
    session.apply(Choice::Event { id: request_1 }).unwrap();
    let v = session.view();
    let reply_0 = pending_id(&v, "deliver", 0, 1, "Reply");
    let request_0 = pending_id(&v, "deliver", 0, 1, "Request");
    let waiting = v.pending.iter().find(|p| p.id == reply_0).unwrap();
    assert_eq!(waiting.waits_for, Some(request_0));
    let err = session.apply(Choice::Event { id: reply_0 }).unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
}

fn s_fifo() -> String {
    r#"
    algorithm = "lamport-mutex"
    nodes = 2
    until = "10s"
    [network]
    delay = "1ms"
    fifo = true
    "#
    .into()
}

/// The trace lines of a session.
fn lines(session: &Session) -> Vec<Value> {
    session
        .trace_jsonl()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn faults_do_what_they_say() {
    let s = scenario(MANUAL_RA);
    let mut session = Session::new(&s, "test.toml").unwrap();
    let fresh = session.view().processes[1].state.clone();
    session.apply(Choice::Request { node: NodeId(0) }).unwrap();
    session.apply(Choice::Next).unwrap();

    // Drop: the message is gone, and the trace and the report say so.
    let v = session.view();
    let to_1 = pending_id(&v, "deliver", 0, 1, "Request");
    session.apply(Choice::Drop { id: to_1 }).unwrap();
    assert!(session.view().pending.iter().all(|p| p.id != to_1));
    let last = lines(&session).pop().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["reason"].as_str(),
            &last["node"]
        ),
        (Some("drop"), Some("manual"), &json!(1))
    );
    assert_eq!(session.report().messages.dropped, 1);

    // Duplicate: two copies, both delivered, the second marked.
    let to_2 = pending_id(&session.view(), "deliver", 0, 2, "Request");
    session.apply(Choice::Duplicate { id: to_2 }).unwrap();
    let copies: Vec<_> = session
        .view()
        .pending
        .into_iter()
        .filter(|p| p.kind == "deliver" && p.to == Some(2))
        .collect();
    assert_eq!(copies.len(), 2);
    assert_eq!(copies[0].msg_id, copies[1].msg_id);
    assert!(!copies[0].duplicate && copies[1].duplicate);
    session.apply(Choice::Event { id: copies[0].id }).unwrap();
    session.apply(Choice::Event { id: copies[1].id }).unwrap();
    let delivered: Vec<_> = lines(&session)
        .into_iter()
        .filter(|l| l["event"] == "deliver" && l["node"] == 2)
        .map(|l| l["duplicate"].clone())
        .collect();
    assert_eq!(delivered, vec![json!(false), json!(true)]);
    assert_eq!(session.report().messages.duplicated, 1);

    // Crash: the node is down, its deliveries are dropped ("crashed").
    let reply = pending_id(&session.view(), "deliver", 2, 0, "Reply");
    session.apply(Choice::Crash { node: NodeId(0) }).unwrap();
    let v = session.view();
    assert!(!v.processes[0].alive && v.processes[0].state.is_null());
    session.apply(Choice::Event { id: reply }).unwrap();
    let last = lines(&session).pop().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["reason"].as_str()),
        (Some("drop"), Some("crashed"))
    );
    assert!(session.apply(Choice::Crash { node: NodeId(0) }).is_err());
    assert!(session.apply(Choice::Request { node: NodeId(0) }).is_err());

    // Recover: fresh state.
    session.apply(Choice::Crash { node: NodeId(1) }).unwrap();
    session.apply(Choice::Recover { node: NodeId(1) }).unwrap();
    assert_eq!(session.view().processes[1].state, fresh);
    assert!(session.apply(Choice::Recover { node: NodeId(1) }).is_err());

    // Partition: a message across it is lost; in flight before it, refused on arrival.
    session.apply(Choice::Request { node: NodeId(2) }).unwrap();
    session.apply(Choice::Next).unwrap(); // 2 asks 0 (down) and 1
    let to_1 = pending_id(&session.view(), "deliver", 2, 1, "Request");
    session
        .apply(Choice::Partition {
            groups: vec![vec![NodeId(1)], vec![NodeId(2)]],
        })
        .unwrap();
    session.apply(Choice::Event { id: to_1 }).unwrap();
    let last = lines(&session).pop().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["reason"].as_str()),
        (Some("drop"), Some("partition"))
    );
    // Heal: deliveries go through again.
    session.apply(Choice::Heal).unwrap();
    session.apply(Choice::Recover { node: NodeId(0) }).unwrap();
    session.apply(Choice::Request { node: NodeId(1) }).unwrap();
    let input = session
        .view()
        .pending
        .iter()
        .find(|p| p.kind == "input")
        .unwrap()
        .id;
    session.apply(Choice::Event { id: input }).unwrap();
    let to_2 = pending_id(&session.view(), "deliver", 1, 2, "Request");
    session.apply(Choice::Event { id: to_2 }).unwrap();
    let last = lines(&session)
        .into_iter()
        .rev()
        .find(|l| l["event"] == "deliver" || l["event"] == "drop")
        .unwrap();
    assert_eq!(
        (&last["event"], &last["node"], &last["from"]),
        (&json!("deliver"), &json!(2), &json!(1))
    );

    // Choices that do not apply are refused and change nothing.
    let before = shown(&session);
    assert!(session.apply(Choice::Event { id: 999_999 }).is_err());
    assert!(session.apply(Choice::Elect { node: NodeId(1) }).is_err());
    assert!(session.apply(Choice::Crash { node: NodeId(9) }).is_err());
    assert!(session
        .apply(Choice::Input {
            node: NodeId(1),
            input: json!("Start"),
        })
        .is_err());
    assert_eq!(shown(&session), before);
}

#[test]
fn the_view_lays_out_rings_trees_and_circles_and_shows_state() {
    let layout = |name: &str| {
        let s = scenario(&default_scenario(name).unwrap());
        let v = Session::new(&s, "test.toml").unwrap().view();
        (v.layout, v.edges)
    };
    assert_eq!(
        layout("token-ring"),
        ("ring", vec![[0, 1], [1, 2], [2, 3], [3, 0]])
    );
    let (kind, edges) = layout("raymond");
    assert_eq!(kind, "tree");
    assert_eq!(edges.len(), 3);
    assert_eq!(layout("ricart-agrawala"), ("circle", vec![]));
    assert_eq!(layout("chang-roberts").0, "ring");
    // The state panel shows the algorithm's own variables by their names.
    let s = scenario(&default_scenario("suzuki-kasami").unwrap());
    let mut session = Session::new(&s, "test.toml").unwrap();
    session.run(40, None).unwrap();
    let v = session.view();
    let state = &v.processes[0].state;
    assert!(
        state.get("rn").is_some() && state.get("token").is_some(),
        "{state}"
    );
    assert!(v.log.iter().all(|e| !e.label.is_empty()));
    assert!(v.log.iter().any(|e| e.line["vector"].is_array()));
    // Elections show leaders.
    let s = scenario(&default_scenario("bully").unwrap());
    let mut session = Session::new(&s, "test.toml").unwrap();
    assert_eq!(session.run(u64::MAX, None).unwrap(), RunStop::Ended("idle"));
    let v = session.view();
    assert!(!v.processes[4].alive);
    for p in &v.processes[..4] {
        assert_eq!(p.badge.as_deref(), Some("leader 3"), "{p:?}");
    }
    assert!(v.quiet);
    assert!(session.apply(Choice::Next).is_err());
}

#[test]
fn a_split_election_names_the_two_announcers_and_their_outputs() {
    // A partition during a bully election: each side elects its own highest process.
    let s = scenario(
        "algorithm = \"bully\"\nnodes = 6\n\
         [[event]]\nat = \"0ms\"\ncrash = 5\n\
         [[event]]\nat = \"0ms\"\npartition = [[0, 1, 2], [3, 4]]\n\
         [[event]]\nat = \"1ms\"\nelect = 0\n[[event]]\nat = \"1ms\"\nelect = 3\n",
    );
    let mut session = Session::new(&s, "test.toml").unwrap();
    assert_eq!(session.run(u64::MAX, None).unwrap(), RunStop::Violation);
    let v = session.view();
    let violation = &v.violations[0];
    assert_eq!(violation.property, "one-leader");
    assert_eq!(violation.nodes.len(), 2);
    assert_eq!(violation.events.len(), 2);
    let trace = lines(&session);
    for (node, seq) in violation.nodes.iter().zip(&violation.events) {
        let line = &trace[*seq as usize];
        assert_eq!(line["seq"], json!(seq));
        assert_eq!(
            (&line["event"], &line["node"]),
            (&json!("output"), &json!(node))
        );
        assert!(line["output"]["Leader"].is_number(), "{line}");
    }
    let leaders: Vec<&Value> = violation
        .events
        .iter()
        .map(|s| &trace[*s as usize]["output"]["Leader"])
        .collect();
    assert_ne!(leaders[0], leaders[1]);
}

#[test]
fn sessions_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    let s = scenario(&default_scenario("bully").unwrap());
    let session = Session::new(&s, "test.toml").unwrap();
    send(&session);
    let view = std::thread::spawn(move || session.view()).join().unwrap();
    assert_eq!(view.algorithm, "bully");
}

#[test]
fn a_checker_counterexample_replays_step_by_step_in_a_session() {
    use distsync_check::{check_named, Config};
    let config = Config {
        nodes: 2,
        fifo: false,
        ..Config::default()
    };
    let outcome = check_named("lamport-mutex", &config, &mut |_| {}).unwrap();
    let violation = outcome.violation.expect("non-FIFO Lamport breaks");
    assert_eq!(violation.property.name(), "mutual-exclusion");
    let steps = violation.steps;
    let s = scenario(
        r#"
        algorithm = "lamport-mutex"
        nodes = 2
        [network]
        delay = "1ms"
        fifo = false
        "#,
    );
    let mut session = Session::new(&s, "test.toml").unwrap();
    for step in steps.iter().filter(|s| s.number > 0) {
        session
            .follow_checker_step(&step.transition)
            .unwrap_or_else(|e| panic!("{}: {e}\n{:#?}", step.transition, session.view().pending));
    }
    let v = session.view();
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    assert_eq!(v.violations[0].property, "mutual-exclusion");
    assert!(session.follow_checker_step("deliver Nothing 0->1").is_err());
}

/// A checker step that carries the checker's own choice in its input (a multicast's payload,
/// a transfer's receiver and amount) is given as it is: the lost multicast of fifo-broadcast
/// is then found pending by its text, and chandy-lamport's transfers are made as the checker
/// made them. Both used to fail to replay (`crates/cli/tests/check_replay.rs`).
#[test]
fn checker_steps_that_name_a_multicast_or_a_transfer_replay() {
    use distsync_check::{check_named, Config, FaultBounds};
    let cases = [
        (
            "fifo-broadcast",
            Config {
                nodes: 3,
                faults: FaultBounds {
                    loss: 1,
                    ..FaultBounds::default()
                },
                ..Config::default()
            },
            "algorithm = \"fifo-broadcast\"\nnodes = 3\n[network]\ndelay = \"1ms\"\n",
            // The checker's completion, as the simulator's monitor names it.
            ("completion", "undelivered"),
        ),
        (
            "chandy-lamport",
            Config {
                nodes: 3,
                fifo: false,
                ..Config::default()
            },
            "algorithm = \"chandy-lamport\"\nnodes = 3\n[network]\ndelay = \"1ms\"\nfifo = false\n[app]\nkind = \"bank\"\n",
            ("conservation", "snapshot-total"),
        ),
    ];
    for (name, config, toml, (checked, monitored)) in cases {
        let outcome = check_named(name, &config, &mut |_| {}).unwrap();
        let violation = outcome.violation.expect("a counterexample");
        let mut session = Session::new(&scenario(toml), "test.toml").unwrap();
        let mut inputs = 0;
        for step in violation.steps.iter().filter(|s| s.number > 0) {
            let applied = session
                .follow_checker_step(&step.transition)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", step.transition));
            inputs += applied
                .iter()
                .filter(|c| matches!(c, Choice::Input { .. }))
                .count();
        }
        assert!(inputs > 0, "{name}: no input given as the checker named it");
        let property = violation.property.name();
        assert_eq!(property, checked, "{name}");
        let property = monitored;
        let mut shown: Vec<String> = session
            .view()
            .violations
            .iter()
            .map(|v| v.property.clone())
            .collect();
        if !shown.iter().any(|p| p == property) {
            for _ in 0..5 {
                session.run(100_000, None).unwrap();
            }
            shown = session
                .view()
                .violations
                .iter()
                .map(|v| v.property.clone())
                .collect();
        }
        assert!(
            shown.iter().any(|p| p == property),
            "{name}: the checker found {property}, the session shows {shown:?}"
        );
    }
}

#[test]
fn each_family_takes_its_own_request_and_refuses_the_others() {
    let cases = [
        (
            "ricart-agrawala",
            Choice::Request { node: NodeId(1) },
            "Request",
        ),
        ("bully", Choice::Elect { node: NodeId(1) }, "Start"),
        ("cristian", Choice::Sync { node: NodeId(1) }, "Sync"),
        (
            "causal-broadcast",
            Choice::Multicast { node: NodeId(1) },
            "Multicast",
        ),
        (
            "chandy-lamport",
            Choice::Snapshot { node: NodeId(1) },
            "Snapshot",
        ),
    ];
    for (name, choice, input) in &cases {
        let s = scenario(&default_scenario(name).unwrap());
        let mut session = Session::new(&s, "test.toml").unwrap();
        for (other, wrong, _) in &cases {
            if other != name {
                let err = session.apply(wrong.clone()).unwrap_err();
                assert!(err.to_string().contains("does not apply"), "{name}: {err}");
            }
        }
        session.apply(choice.clone()).unwrap();
        let v = session.view();
        let scheduled = v
            .pending
            .iter()
            .find(|p| p.kind == "input" && p.node == Some(1) && p.time_ns == 0)
            .unwrap_or_else(|| panic!("{name}: {:#?}", v.pending));
        assert!(
            scheduled.label.starts_with(input),
            "{name}: {}",
            scheduled.label
        );
        // A report before the end says so.
        assert_eq!(session.report().ended_by, "paused");
    }
}

#[test]
fn going_back_from_a_checkpoint_is_a_replay_from_the_start() {
    // Long enough for several checkpoints (one every 256 choices).
    let s = scenario(
        r#"
        algorithm = "ricart-agrawala"
        nodes = 5
        seed = 11
        until = "1h"
        [network]
        delay = { uniform = ["1ms", "3ms"] }
        fifo = false
        [workload]
        kind = "saturated"
        cs = "1ms"
        requests = 60
        "#,
    );
    let mut session = Session::new(&s, "test.toml").unwrap();
    assert_eq!(session.run(900, None).unwrap(), RunStop::Limit);
    session.apply(Choice::Request { node: NodeId(3) }).unwrap();
    assert_eq!(session.run(99, None).unwrap(), RunStop::Limit);
    let all = session.choices().to_vec();
    assert_eq!(all.len(), 1000);
    for target in [1000, 999, 700, 512, 511, 256, 255, 3, 0, 600] {
        session.goto(target).unwrap();
        let fresh = Session::replay(&s, "test.toml", &all[..target]).unwrap();
        assert_eq!(shown(&session), shown(&fresh), "goto {target}");
        assert_eq!(session.trace_jsonl(), fresh.trace_jsonl(), "goto {target}");
        assert_eq!(session.report(), fresh.report(), "goto {target}");
    }
    // A new choice after going back forgets the checkpoints ahead of it.
    session.apply(Choice::Request { node: NodeId(0) }).unwrap();
    assert_eq!(session.run(400, None).unwrap(), RunStop::Limit);
    let mine = session.choices().to_vec();
    session.goto(601).unwrap();
    let fresh = Session::replay(&s, "test.toml", &mine[..601]).unwrap();
    assert_eq!(shown(&session), shown(&fresh));
    assert_eq!(session.trace_jsonl(), fresh.trace_jsonl());
}

/// Chandy-Lamport's part of a snapshot that records one transfer twice in transit (a message
/// and its duplicate, both arriving between the process's recording and the sender's marker)
/// breaks `snapshot-consistency`, the checker's property of that name, at the step that
/// completes the part; two different transfers of the same amount recorded the same way do
/// not (the monitor tells transfers apart by their message, not by their amount).
#[test]
fn a_snapshot_that_counts_a_duplicated_transfer_twice_breaks_snapshot_consistency() {
    let toml = "algorithm = \"chandy-lamport\"\nnodes = 3\n[network]\ndelay = \"1ms\"\n[app]\nkind = \"bank\"\n";
    let marker = |from: u32, to: u32| {
        format!(
            "deliver Marker {{ snapshot: SnapshotId {{ initiator: 0, number: 1 }} }} {from}->{to}"
        )
    };
    let transfer = "input Transfer { to: 1, amount: 4 } at 2".to_string();
    for (second, breaks) in [
        ("duplicate Transfer { amount: 4 } 2->1".to_string(), true),
        (transfer.clone(), false),
    ] {
        let steps = [
            "input Snapshot at 0".to_string(),
            marker(0, 1),
            transfer.clone(),
            second.clone(),
            marker(0, 2),
            "deliver Transfer { amount: 4 } 2->1".to_string(),
            "deliver Transfer { amount: 4 } 2->1".to_string(),
        ];
        let mut session = Session::new(&scenario(toml), "test.toml").unwrap();
        for step in &steps {
            session
                .follow_checker_step(step)
                .unwrap_or_else(|e| panic!("{step}: {e}"));
        }
        assert!(session.view().violations.is_empty());
        let last = session.follow_checker_step(&marker(2, 1)).unwrap();
        assert_eq!(last.len(), 1);
        let shown: Vec<String> = session
            .view()
            .violations
            .iter()
            .map(|v| format!("{}: {}", v.property, v.detail))
            .collect();
        let consistency = shown
            .iter()
            .any(|v| v.starts_with("snapshot-consistency: node 1's part of snapshot (0, 1) counts the transfer of 4 from 2 twice"));
        assert_eq!(consistency, breaks, "{second}: {shown:?}");
    }
}

/// Ricart-Agrawala's token algorithm taking a duplicated token for a new one leaves the
/// critical section without an Exit: the checker's output-contract, found by the simulator's
/// `contract` monitor when the application releases the process.
#[test]
fn a_duplicated_token_breaks_the_contract_at_the_release() {
    use distsync_check::{check_named, Config, FaultBounds};
    let config = Config {
        nodes: 3,
        faults: FaultBounds {
            duplicate: 1,
            ..FaultBounds::default()
        },
        ..Config::default()
    };
    let outcome = check_named("ricart-agrawala-token", &config, &mut |_| {}).unwrap();
    let violation = outcome.violation.expect("a counterexample");
    assert_eq!(violation.property.name(), "output-contract");
    let toml = "algorithm = \"ricart-agrawala-token\"\nnodes = 3\n[network]\ndelay = \"1ms\"\n[workload]\nkind = \"none\"\n";
    let mut session = Session::new(&scenario(toml), "test.toml").unwrap();
    for step in violation.steps.iter().filter(|s| s.number > 0) {
        session
            .follow_checker_step(&step.transition)
            .unwrap_or_else(|e| panic!("{}: {e}", step.transition));
    }
    assert!(session.view().violations.is_empty());
    session.run(1_000, None).unwrap();
    let shown: Vec<String> = session
        .view()
        .violations
        .iter()
        .map(|v| v.property.clone())
        .collect();
    assert!(shown.contains(&"contract".to_string()), "{shown:?}");
}

/// A stepped engine (a session) keeps the rules its handlers name, which the page shows, while
/// a batch run does without them (`Ctx::without_rules`); both give the same report.
#[test]
fn a_session_shows_the_rules_its_handlers_name_and_reports_as_the_batch_run() {
    let s = distsync_sim::bench::mutex_heavy("ricart-agrawala", 3, 2);
    let (report, _) = batch(&s);
    let mut session = Session::new(&s, "test.toml").unwrap();
    let mut named = Vec::new();
    while session.view().ended_by.is_none() {
        session.apply(Choice::Next).unwrap();
        if let Some(rule) = session.view().rule {
            named.extend(rule.rules);
        }
    }
    for rule in ["1", "2", "3", "4"] {
        assert!(named.contains(&rule), "rule {rule} in {named:?}");
    }
    assert_eq!(
        serde_json::to_value(session.report()).unwrap(),
        serde_json::to_value(&report).unwrap()
    );
}
