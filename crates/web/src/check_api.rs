//! `POST /api/check`: the exhaustive checker (crates/check) on the page's current small
//! configuration (any family the checker explores), and its shortest counterexample loaded into
//! a new session as the learner's choices, to step through.

use crate::api::{parse_body, scenario_error, ApiError, Json, State};
use crate::check_config::{bounds_in_words, check_setup, properties_explored, CheckSetup};
use crate::session_api::{store, view_json, Window};
use distsync_check::{check_named, NamedViolation, Step};
use distsync_core::NodeId;
use distsync_sim::session::label_of;
use distsync_sim::session::{Choice, Session};
use distsync_sim::{Scenario, WorkloadKind, WorkloadSpec};
use serde::Deserialize;
use serde_json::{json, Value};

/// The most processes the page lets the checker explore (every interleaving grows fast).
pub const MAX_CHECK_NODES: usize = 4;
/// The most distinct states one check from the page visits before answering "within the bound".
pub const MAX_CHECK_STATES: usize = 300_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckBody {
    toml: String,
    #[serde(default)]
    origin: Option<String>,
}

/// The checker's configuration for `scenario`: [`check_setup`], the function `distsync check
/// FILE` uses (processes, parameters, links, `elect` starters, the `[check]` table and the
/// scenario's faults as fault bounds), within the page's limits: at most [`MAX_CHECK_NODES`]
/// processes and [`MAX_CHECK_STATES`] states, one thread unless `[check]` asks for more.
pub fn config_of(scenario: &Scenario, origin: &str) -> Result<CheckSetup, ApiError> {
    let mut setup = check_setup(scenario, origin).map_err(|e| ApiError {
        status: http::StatusCode::BAD_REQUEST,
        field: e.field.clone(),
        message: e.message,
    })?;
    let n = setup.config.nodes;
    if n > MAX_CHECK_NODES {
        return Err(ApiError::bad(
            "nodes",
            format!(
                "the checker explores every interleaving, which is for small configurations: at most {MAX_CHECK_NODES} processes, got {n}"
            ),
        ));
    }
    let c = &mut setup.config;
    c.bounds.max_states = c.bounds.max_states.min(MAX_CHECK_STATES);
    if setup.table.threads.is_none() {
        c.threads = 1;
    }
    Ok(setup)
}

/// The scenario a counterexample is stepped in: the same processes, links and parameters, no
/// workload of its own (requests come from the counterexample), no scripted events, no loss.
pub fn stepping_scenario(scenario: &Scenario) -> Scenario {
    let mut s = scenario.clone();
    // Only a family with a workload (mutual exclusion) gets one; the others' scenarios refuse it.
    s.workload = scenario.workload.as_ref().map(|w| WorkloadSpec {
        kind: WorkloadKind::None,
        rate: None,
        cs: w.cs,
        requests: None,
        gap: None,
    });
    s.events.clear();
    s.network.loss = 0.0;
    s.network.duplicate = 0.0;
    s
}

/// The checker's crash loses the messages on their way to the crashed process ("dropped:
/// crashed"), and its partition those between the two sides ("dropped: partition"), where the
/// simulator's would deliver them after a recovery or a heal: drops them in `session` as the
/// checker's step does, keeping the drops among `choices`.
fn lose_in_flight(
    session: &mut Session,
    lost: impl Fn(u32, u32) -> bool,
    choices: &mut Vec<Choice>,
) -> Result<(), String> {
    let lost: Vec<u64> = session
        .view()
        .pending
        .iter()
        .filter(|p| p.kind == "deliver")
        .filter(|p| p.from.zip(p.to).is_some_and(|(from, to)| lost(from, to)))
        .map(|p| p.id)
        .collect();
    for id in lost {
        let drop = Choice::Drop { id };
        session.apply(drop.clone()).map_err(|e| e.to_string())?;
        choices.push(drop);
    }
    Ok(())
}

/// Walks the checker's counterexample `steps` in a new session of `stepping` (see
/// [`stepping_scenario`]), each step by [`Session::follow_checker_step`], with the messages the
/// checker's crashes and partitions drop dropped too; returns the session and the choices made.
pub fn follow_counterexample(
    stepping: &Scenario,
    steps: &[Step],
) -> Result<(Session, Vec<Choice>), String> {
    let mut session = Session::new(stepping, "counterexample").map_err(|e| e.to_string())?;
    let mut choices = Vec::new();
    for step in steps {
        if step.number == 0 {
            continue; // every process's start, which the session made
        }
        let applied = session
            .follow_checker_step(&step.transition)
            .map_err(|e| format!("step {}: {e}", step.number))?;
        let mut drops: Vec<Box<dyn Fn(u32, u32) -> bool>> = Vec::new();
        for c in &applied {
            match c {
                Choice::Crash { node } => {
                    let node = node.0;
                    drops.push(Box::new(move |_, to| to == node));
                }
                Choice::Partition { groups } => {
                    let side = |n: u32| groups.iter().position(|g| g.iter().any(|x| x.0 == n));
                    let sides: Vec<(u32, Option<usize>)> =
                        groups.iter().flatten().map(|n| (n.0, side(n.0))).collect();
                    let of = move |n: u32| sides.iter().find(|s| s.0 == n).and_then(|s| s.1);
                    drops.push(Box::new(move |from, to| of(from) != of(to)));
                }
                _ => {}
            }
        }
        choices.extend(applied);
        for lost in drops {
            lose_in_flight(&mut session, lost, &mut choices)?;
        }
    }
    Ok((session, choices))
}

/// A counterexample replayed from its trace: the session, and for each step of the checker
/// (1-based, as `distsync check` numbers them) what it was and the properties the session's
/// monitors found broken by it.
pub struct Replayed {
    /// The session, after the last step.
    pub session: Session,
    /// The choices made, in order.
    pub choices: Vec<Choice>,
    /// Per checker step replayed: its number, the trace's words for it, the properties first
    /// found broken at it.
    pub steps: Vec<(u64, String, Vec<String>)>,
}

/// The variant name of an input as the trace writes it (`"Request"`, `{"Multicast":2}`).
fn variant(input: &Value) -> Option<&str> {
    match input {
        Value::String(s) => Some(s),
        Value::Object(m) if m.len() == 1 => m.keys().next().map(String::as_str),
        _ => None,
    }
}

/// Walks a counterexample as `distsync check --trace` writes it (docs/trace-format.md) in a
/// new session of `stepping` (the scenario the check was of, through [`stepping_scenario`]):
/// each delivery, timer, input, crash, recovery, loss, partition and heal of the trace as the
/// pending event or the fault it names. A duplication writes no line of its own: a message
/// the trace delivers twice (`duplicate: true` on the copy) is duplicated when it is sent.
/// `origin` names the trace in errors.
pub fn follow_trace(stepping: &Scenario, trace: &str, origin: &str) -> Result<Replayed, String> {
    let mut lines = Vec::new();
    for (i, text) in trace.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| format!("{origin}: line {}: not JSON: {e}", i + 1))?;
        lines.push((i + 1, v));
    }
    let Some((_, header)) = lines.first() else {
        return Err(format!(
            "{origin}: empty, expected a trace written by `distsync check --trace`"
        ));
    };
    if header["event"] != "header" {
        return Err(format!("{origin}: line 1: expected the trace's header"));
    }
    if header["algorithm"] != stepping.algorithm.as_str() {
        return Err(format!(
            "{origin}: the counterexample is of `{}`, the scenario runs `{}`",
            header["algorithm"].as_str().unwrap_or("?"),
            stepping.algorithm
        ));
    }
    // Every message sent, by id, and those the trace delivers twice.
    let mut sent = std::collections::HashMap::new();
    let mut twice = std::collections::HashSet::new();
    for (_, v) in &lines {
        match v["event"].as_str() {
            Some("send") => {
                sent.insert(
                    v["msg_id"].as_u64(),
                    (v["node"].clone(), v["to"].clone(), v["msg"].clone()),
                );
            }
            Some("deliver") if v["duplicate"] == true => {
                twice.insert(v["msg_id"].as_u64());
            }
            _ => {}
        }
    }
    let mut session = Session::new(stepping, "counterexample").map_err(|e| e.to_string())?;
    let mut choices: Vec<Choice> = Vec::new();
    let mut steps: Vec<(u64, String, Vec<String>)> = Vec::new();
    let id_of = |v: &Value, what: &str, line: usize| -> Result<NodeId, String> {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(NodeId)
            .ok_or_else(|| format!("{origin}: line {line}: expected a node id in `{what}`"))
    };
    for (line, v) in &lines[1..] {
        let line = *line;
        let event = v["event"].as_str().unwrap_or("");
        if event == "send" && twice.contains(&v["msg_id"].as_u64()) {
            // A message the trace delivers twice is duplicated as soon as it is sent, so that
            // on a FIFO link the copy comes before what is sent after it.
            let (from, to) = (
                id_of(&v["node"], "node", line)?,
                id_of(&v["to"], "to", line)?,
            );
            let id = session
                .find_pending_delivery(from, to, &v["msg"])
                .ok_or_else(|| format!("{origin}: line {line}: the message sent is not pending"))?;
            session
                .apply(Choice::Duplicate { id })
                .map_err(|e| format!("{origin}: line {line}: {e}"))?;
            choices.push(Choice::Duplicate { id });
            continue;
        }
        if matches!(event, "start" | "send" | "output") {
            continue; // what a step did, which the session does again
        }
        let step = v["time_ns"].as_u64().unwrap_or(0) / 1_000_000;
        let mut broken: Vec<String> = Vec::new();
        let mut apply = |session: &mut Session, choices: &mut Vec<Choice>, c: Choice| {
            let done = session
                .apply(c.clone())
                .map_err(|e| format!("{origin}: line {line} (step {step}): {e}"))?;
            broken.extend(done.violations.into_iter().map(|v| v.property));
            choices.push(c);
            Ok::<(), String>(())
        };
        let missing = |what: &str| {
            format!("{origin}: line {line} (step {step}): no pending {what} matches it")
        };
        let words;
        match event {
            "deliver" | "drop" => {
                let msg_id = v["msg_id"].as_u64();
                let (from, to, msg) = match event {
                    "deliver" => (v["from"].clone(), v["node"].clone(), v["msg"].clone()),
                    _ => match sent.get(&msg_id) {
                        Some(m) => m.clone(),
                        None => return Err(format!("{origin}: line {line}: a drop of message {msg_id:?}, which no line sent")),
                    },
                };
                let (from, to) = (id_of(&from, "from", line)?, id_of(&to, "node", line)?);
                let reason = v["reason"].as_str().unwrap_or("");
                let id = session.find_pending_delivery(from, to, &msg);
                match (event, reason, id) {
                    ("deliver", _, Some(id)) => apply(&mut session, &mut choices, Choice::Event { id })?,
                    ("deliver", _, None) => return Err(missing("delivery")),
                    (_, "loss", Some(id)) => apply(&mut session, &mut choices, Choice::Drop { id })?,
                    (_, "loss", None) => return Err(missing("message to lose")),
                    // Lost to a crash or a partition: dropped now if still on its way.
                    (_, _, Some(id)) => apply(&mut session, &mut choices, Choice::Drop { id })?,
                    (_, _, None) => {}
                }
                words = match event {
                    "deliver" => format!("deliver {} {}->{}", label_of(&msg), from, to),
                    _ => format!("lose {} {}->{} ({reason})", label_of(&msg), from, to),
                };
            }
            "timer" => {
                let node = id_of(&v["node"], "node", line)?;
                let id = session
                    .find_pending_timer(node, &v["timer"])
                    .ok_or_else(|| missing("timer"))?;
                apply(&mut session, &mut choices, Choice::Event { id })?;
                words = format!("timer {} fires at {node}", label_of(&v["timer"]));
            }
            "input" => {
                let node = id_of(&v["node"], "node", line)?;
                let input = &v["input"];
                let pending = |session: &Session| {
                    session
                        .view()
                        .pending
                        .iter()
                        .find(|p| p.kind == "input" && p.node == Some(node.0) && p.input.as_ref() == Some(input))
                        .map(|p| p.id)
                };
                if pending(&session).is_none() {
                    let ask = match variant(input) {
                        Some("Request") => Some(Choice::Request { node }),
                        Some("Start") => Some(Choice::Elect { node }),
                        Some("Snapshot") => Some(Choice::Snapshot { node }),
                        _ => None,
                    };
                    match ask {
                        Some(c) => apply(&mut session, &mut choices, c)?,
                        // An input with the checker's own choice in it (a multicast's payload,
                        // a transfer's receiver and amount), given as it is.
                        None => apply(&mut session, &mut choices, Choice::Input { node, input: input.clone() })?,
                    }
                }
                if let Some(id) = pending(&session) {
                    apply(&mut session, &mut choices, Choice::Event { id })?;
                } else if !matches!(choices.last(), Some(Choice::Input { .. })) {
                    return Err(missing("input"));
                }
                words = format!("input {} at {node}", label_of(input));
            }
            "crash" | "recover" => {
                let node = id_of(&v["node"], "node", line)?;
                let c = if event == "crash" { Choice::Crash { node } } else { Choice::Recover { node } };
                apply(&mut session, &mut choices, c)?;
                words = format!("{event} {node}");
            }
            "partition" => {
                let groups: Vec<Vec<NodeId>> = serde_json::from_value(v["groups"].clone())
                    .map_err(|e| format!("{origin}: line {line}: `groups`: expected lists of node ids: {e}"))?;
                apply(&mut session, &mut choices, Choice::Partition { groups })?;
                words = format!("partition {}", v["groups"]);
            }
            "heal" => {
                apply(&mut session, &mut choices, Choice::Heal)?;
                words = "heal".to_string();
            }
            other => {
                return Err(format!(
                    "{origin}: line {line}: cannot replay a `{other}` event (a trace written by `distsync check --trace` is expected)"
                ))
            }
        }
        match steps.last_mut() {
            Some(last) if last.0 == step => {
                last.1.push_str(&format!(", {words}"));
                last.2.extend(broken);
            }
            _ => steps.push((step, words, broken)),
        }
    }
    Ok(Replayed {
        session,
        choices,
        steps,
    })
}

pub(crate) fn check(State(state): State, body: &[u8]) -> Result<Json<Value>, ApiError> {
    let b: CheckBody = parse_body(body)?;
    let origin = b.origin.unwrap_or_else(|| "scenario".into());
    let scenario = Scenario::from_toml(&b.toml, &origin).map_err(|e| scenario_error(&e))?;
    let setup = config_of(&scenario, &origin)?;
    let config = &setup.config;
    let slot = state.check_slot()?;
    let outcome = check_named(&scenario.algorithm, config, &mut |_| {})
        .map_err(|e| ApiError::bad(e.field.clone(), e.message.clone()))?;
    drop(slot);
    let mut answer = json!({
        "algorithm": outcome.algorithm,
        "proved": outcome.proved,
        "states": outcome.stats.states,
        "transitions": outcome.stats.transitions,
        "bound_hit": outcome.stats.bound_hit,
        "bound": outcome.stats.bound.map(|b| b.flag()),
        "max_states": config.bounds.max_states,
        "properties": properties_explored(outcome.algorithm, config, !outcome.stats.bound_hit),
        "bounds": bounds_in_words(outcome.algorithm, config),
        "notes": setup.notes,
        "needs_fifo": outcome.needs_fifo,
        "violation": Value::Null,
    });
    let Some(NamedViolation {
        property,
        detail,
        steps,
        final_states,
        ..
    }) = outcome.violation
    else {
        return Ok(Json(answer));
    };
    answer["violation"] = json!({
        "property": property.name(),
        "detail": detail,
        "steps": steps.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        "final_states": final_states,
    });
    // Load the counterexample: walk it in a session, each checker step applied as the pending
    // event (or the fault) it names, and keep the choices made.
    let stepping = stepping_scenario(&scenario);
    let toml_text = toml::to_string(&stepping)
        .map_err(|e| ApiError::bad("toml", format!("cannot be written back: {e}")))?;
    let loaded = follow_counterexample(&stepping, &steps);
    match loaded {
        Ok((session, choices)) => {
            answer["view"] = view_json(&session, Window::default());
            answer["choices"] = serde_json::to_value(&choices).expect("plain data");
            answer["toml"] = json!(toml_text);
            answer["session"] = json!(store(&state, session, toml_text)?);
        }
        Err(e) => {
            answer["load_error"] = json!(format!(
                "the counterexample could not be replayed in the stepper: {e}"
            ));
        }
    }
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_check::Action;

    /// A step the session cannot follow is an error that names the step and its number.
    #[test]
    fn a_step_nothing_pending_matches_is_named() {
        let scenario = Scenario::from_toml(
            "algorithm = \"lamport-mutex\"\nnodes = 2\n[workload]\nkind = \"none\"\n",
            "test.toml",
        )
        .unwrap();
        let step = |number: usize, transition: &str| Step {
            number,
            action: Action::Start,
            transition: transition.to_string(),
            outputs: Vec::new(),
            sent: Vec::new(),
            effects: Vec::new(),
        };
        let steps = [step(0, "start"), step(1, "deliver Nothing 0->1")];
        let Err(why) = follow_counterexample(&stepping_scenario(&scenario), &steps) else {
            panic!("a message nobody sent was followed");
        };
        assert!(why.starts_with("step 1: "), "{why}");
        assert!(why.contains("`deliver Nothing 0->1`"), "{why}");
    }
}
