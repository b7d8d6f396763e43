//! `POST /api/check`: the exhaustive checker (crates/check) on the page's current small
//! configuration (any family the checker explores), and its shortest counterexample loaded into
//! a new session as the learner's choices, to step through.

use crate::api::{parse_body, scenario_error, ApiError, Json, State};
use crate::check_config::{bounds_in_words, check_setup, properties_explored, CheckSetup};
use crate::session_api::{store, view_json, Window};
use distsync_check::{check_named, NamedViolation, Step};
use distsync_core::NodeId;
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

/// The numbers in a text, in order ("Reply { ts: 3, from: 1 }" -> [3, 1]).
fn numbers(text: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() || (c == '-' && cur.is_empty()) {
            cur.push(c);
        } else {
            if let Ok(n) = cur.parse() {
                out.push(n);
            }
            cur.clear();
        }
    }
    out
}

fn json_numbers(v: &Value, out: &mut Vec<i64>) {
    match v {
        Value::Number(n) => out.extend(n.as_i64()),
        Value::Array(a) => a.iter().for_each(|x| json_numbers(x, out)),
        Value::Object(m) => m.values().for_each(|x| json_numbers(x, out)),
        _ => {}
    }
}

/// The checker's crash loses the messages on their way to the crashed process ("dropped:
/// crashed"), where the simulator's would deliver them after a recovery: drops them in
/// `session` as the checker's step does, keeping the drops among `choices`.
fn lose_in_flight(
    session: &mut Session,
    node: NodeId,
    choices: &mut Vec<Choice>,
) -> Result<(), String> {
    let lost: Vec<u64> = session
        .view()
        .pending
        .iter()
        .filter(|p| p.kind == "deliver" && p.to == Some(node.0))
        .map(|p| p.id)
        .collect();
    for id in lost {
        let drop = Choice::Drop { id };
        session.apply(drop.clone()).map_err(|e| e.to_string())?;
        choices.push(drop);
    }
    Ok(())
}

/// The choice that makes checker step `step` happen in `session`, from its pending events.
pub fn choice_for(step: &Step, session: &Session) -> Result<Option<Choice>, String> {
    let t = step.transition.as_str();
    if t == "start" || step.number == 0 {
        return Ok(None);
    }
    let view = serde_json::to_value(session.view()).expect("plain data");
    let pending = view["pending"].as_array().cloned().unwrap_or_default();
    if let Some(rest) = t.strip_prefix("input ") {
        // "input Request at 2" / "input Release at 2"
        let (what, node) = rest
            .rsplit_once(" at ")
            .ok_or_else(|| format!("cannot read checker step `{t}`"))?;
        let node: u32 = node
            .trim()
            .parse()
            .map_err(|_| format!("cannot read the node of checker step `{t}`"))?;
        if what.starts_with("Request") {
            return Ok(Some(Choice::Request {
                node: distsync_core::NodeId(node),
            }));
        }
        if what.starts_with("Start") {
            // An election's start: the same input the page's "start an election" gives.
            return Ok(Some(Choice::Elect {
                node: distsync_core::NodeId(node),
            }));
        }
        // A release: the session schedules it when the process enters; take that pending event.
        let found = pending.iter().find(|p| {
            p["kind"] != "deliver"
                && p["node"].as_u64() == Some(node as u64)
                && p["label"]
                    .as_str()
                    .is_some_and(|l| l.to_lowercase().contains(&what.to_lowercase()))
        });
        let found = found.or_else(|| {
            pending.iter().find(|p| {
                p["kind"] != "deliver"
                    && p["kind"] != "timer"
                    && p["node"].as_u64() == Some(node as u64)
            })
        });
        return found
            .and_then(|p| p["id"].as_u64())
            .map(|id| Some(Choice::Event { id }))
            .ok_or_else(|| format!("no pending {what} at {node} for checker step `{t}`"));
    }
    if let Some(rest) = t.strip_prefix("deliver ") {
        // "deliver Reply { ts: 3 } 1->0"
        let (msg, link) = rest
            .rsplit_once(' ')
            .ok_or_else(|| format!("cannot read checker step `{t}`"))?;
        let (from, to) = link
            .split_once("->")
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
            .ok_or_else(|| format!("cannot read the link of checker step `{t}`"))?;
        let kind = msg
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        let want = numbers(msg);
        let candidates: Vec<&Value> = pending
            .iter()
            .filter(|p| {
                p["kind"] == "deliver"
                    && p["from"].as_u64() == Some(from)
                    && p["to"].as_u64() == Some(to)
                    && p["msg_kind"]
                        .as_str()
                        .is_none_or(|k| k.eq_ignore_ascii_case(kind))
            })
            .collect();
        let exact = candidates.iter().find(|p| {
            let mut got = Vec::new();
            json_numbers(&p["msg"], &mut got);
            got == want
        });
        return exact
            .or(candidates.first())
            .and_then(|p| p["id"].as_u64())
            .map(|id| Some(Choice::Event { id }))
            .ok_or_else(|| format!("no message in flight matches checker step `{t}`"));
    }
    if let Some(rest) = t.strip_prefix("timer ") {
        let node: u64 = rest
            .rsplit_once(" at ")
            .and_then(|(_, n)| n.trim().parse().ok())
            .ok_or_else(|| format!("cannot read checker step `{t}`"))?;
        return pending
            .iter()
            .find(|p| p["kind"] == "timer" && p["node"].as_u64() == Some(node))
            .and_then(|p| p["id"].as_u64())
            .map(|id| Some(Choice::Event { id }))
            .ok_or_else(|| format!("no pending timer at {node} for checker step `{t}`"));
    }
    // A crash or a recovery the checker chose ("crash 2", "recover 2"): the same fault now.
    for (prefix, crash) in [("crash ", true), ("recover ", false)] {
        if let Some(rest) = t.strip_prefix(prefix) {
            let node = distsync_core::NodeId(
                rest.trim()
                    .parse()
                    .map_err(|_| format!("cannot read the node of checker step `{t}`"))?,
            );
            return Ok(Some(if crash {
                Choice::Crash { node }
            } else {
                Choice::Recover { node }
            }));
        }
    }
    Err(format!("cannot read checker step `{t}`"))
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
    // Load the counterexample: walk it in a session, mapping each checker step to the pending
    // event it names, and keep the choices made.
    let stepping = stepping_scenario(&scenario);
    let toml_text = toml::to_string(&stepping)
        .map_err(|e| ApiError::bad("toml", format!("cannot be written back: {e}")))?;
    let loaded = (move || -> Result<(Session, Vec<Choice>), String> {
        let mut session = Session::new(&stepping, "counterexample").map_err(|e| e.to_string())?;
        let mut choices = Vec::new();
        for step in &steps {
            // The session's own reading of the step first (every kind of step, messages by
            // their exact text); then the looser reading by numbers.
            if step.number > 0 {
                if let Ok(applied) = session.follow_checker_step(&step.transition) {
                    let crashed: Vec<NodeId> = applied
                        .iter()
                        .filter_map(|c| match c {
                            Choice::Crash { node } => Some(*node),
                            _ => None,
                        })
                        .collect();
                    choices.extend(applied);
                    for node in crashed {
                        lose_in_flight(&mut session, node, &mut choices)?;
                    }
                    continue;
                }
            }
            if let Some(choice) = choice_for(step, &session)? {
                let request = match choice {
                    Choice::Request { node } | Choice::Elect { node } => Some(node),
                    _ => None,
                };
                let crashed = match choice {
                    Choice::Crash { node } => Some(node),
                    _ => None,
                };
                session.apply(choice.clone()).map_err(|e| e.to_string())?;
                choices.push(choice);
                // The checker's crash loses the messages on their way to the crashed process
                // ("dropped: crashed"); the simulator's would deliver them after a recovery:
                // drop them, as the checker's step says.
                if let Some(node) = crashed {
                    lose_in_flight(&mut session, node, &mut choices)?;
                }
                // A request or an election's start reaches the process as an input event: take
                // it now, as the checker's step does.
                if let Some(node) = request {
                    let input = session
                        .view()
                        .pending
                        .iter()
                        .find(|p| p.kind == "input" && p.node == Some(node.0))
                        .map(|p| p.id)
                        .ok_or_else(|| format!("the request at {} is not pending", node.0))?;
                    let take = Choice::Event { id: input };
                    session.apply(take.clone()).map_err(|e| e.to_string())?;
                    choices.push(take);
                }
            }
        }
        Ok((session, choices))
    })();
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
