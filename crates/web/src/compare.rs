//! Two branches of a session's history side by side (`GET /api/session/ID/compare`): the run
//! shown and a branch, or two branches, each replayed to its end without switching to it, with
//! the step where they part, what each did there (the first difference), the outcome each
//! reached (leader, entries, violations...) and each one's space-time diagram from the fork on,
//! both drawn over the same window of time so that they line up.

use crate::api::ApiError;
use distsync_sim::session::{Choice, LogEntry, Session, View};
use distsync_sim::Scenario;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

/// The most log lines after the fork each side carries, and the most events after the fork the
/// busier side's diagram draws (the page shows the first ones; the whole run is one switch
/// away).
pub const COMPARE_LOG_LINES: usize = 200;

/// `GET /api/session/ID/compare?a=...&b=...`: each side is `current` (the run shown) or a
/// branch's number (as the View's `branches` lists them); `a` defaults to `current`, `b` to
/// branch 0.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    a: Option<String>,
    b: Option<String>,
}

/// One side of the comparison, as the query names it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Current,
    Branch(usize),
}

fn side(field: &str, text: Option<&str>, default: Side, branches: usize) -> Result<Side, ApiError> {
    let Some(text) = text else {
        return Ok(default);
    };
    if text == "current" {
        return Ok(Side::Current);
    }
    let wrong = || {
        ApiError::bad(
            field,
            format!(
                "expected `current` or a branch number from 0 to {} ({branches} branches), got `{text}`",
                branches.saturating_sub(1)
            ),
        )
    };
    let n: usize = text.parse().map_err(|_| wrong())?;
    if n >= branches {
        return Err(wrong());
    }
    Ok(Side::Branch(n))
}

/// The two sides' views, side by side (see the module's documentation): `current` is the
/// choices the run shown recorded, `branches` its branches'.
pub(crate) fn compare(
    scenario: &Scenario,
    current: &[Choice],
    branches: &[Vec<Choice>],
    q: &CompareQuery,
) -> Result<Value, ApiError> {
    let n = branches.len();
    if n == 0 {
        return Err(ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            field: "branches".into(),
            message: "this run has no branch to compare with: go back and choose differently first (the old future becomes a branch)".into(),
        });
    }
    let a = side("a", q.a.as_deref(), Side::Current, n)?;
    let b = side("b", q.b.as_deref(), Side::Branch(0), n)?;
    if a == b {
        return Err(ApiError::bad(
            "b",
            "names the same run as `a`: compare two different ones",
        ));
    }
    let choices = |s: Side| -> &[Choice] {
        match s {
            Side::Current => current,
            Side::Branch(i) => &branches[i],
        }
    };
    let (ca, cb) = (choices(a), choices(b));
    let fork = ca.iter().zip(cb).take_while(|(x, y)| x == y).count();
    let replay = |c: &[Choice]| {
        Session::replay(scenario, "compare", c).map_err(|e| ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            field: "branches".into(),
            message: format!("a branch no longer replays: {e}"),
        })
    };
    let (sa, sb) = (replay(ca)?, replay(cb)?);
    // Each whole: its log, and the steps that wrote no event.
    let (va, vb) = (sa.view_window(0, usize::MAX), sb.view_window(0, usize::MAX));
    // The time of the fork: both runs are the same up to it.
    let fork_ns = va
        .log
        .iter()
        .take_while(|e| e.step <= fork)
        .filter_map(|e| e.line["time_ns"].as_u64())
        .last()
        .unwrap_or(0);
    // The diagrams' window: from the fork to the later end, but no further than where the
    // busier run has written COMPARE_LOG_LINES events after the fork (a long run would draw
    // megabytes): the same window for both, so that they line up.
    let cap = |v: &View| {
        v.log
            .iter()
            .filter(|e| e.step > fork && !e.link)
            .nth(COMPARE_LOG_LINES)
            .and_then(|e| e.line["time_ns"].as_u64())
    };
    let end = va.time_ns.max(vb.time_ns).max(fork_ns);
    let to_ns = [cap(&va), cap(&vb)]
        .into_iter()
        .flatten()
        .min()
        .map_or(end, |c| c.clamp(fork_ns, end));
    let sides = [(a, &sa, &va, ca), (b, &sb, &vb, cb)]
        .into_iter()
        .map(|(which, s, v, c)| side_json(which, s, v, c, fork, fork_ns, to_ns))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(json!({
        "fork": fork,
        "fork_ns": fork_ns,
        "to_ns": to_ns,
        "cut": to_ns < end,
        "sides": sides,
    }))
}

fn side_json(
    which: Side,
    session: &Session,
    view: &View,
    choices: &[Choice],
    fork: usize,
    fork_ns: u64,
    to_ns: u64,
) -> Result<Value, ApiError> {
    let (name, branch) = match which {
        Side::Current => ("this run".to_string(), Value::Null),
        Side::Branch(i) => (format!("branch {}", i + 1), json!(i)),
    };
    // What this side did at the fork: its choice there and the lines it wrote; when that step
    // wrote none (a timer of the workload, a scripted event not yet due), what it did in words,
    // then the first step after it that wrote some.
    let log = &view.log;
    let choice = choices.get(fork);
    let lines_of = |step: usize| -> Vec<&LogEntry> {
        log.iter().filter(|e| e.step == step && !e.link).collect()
    };
    let labels = |es: &[&LogEntry]| {
        es.iter()
            .map(|e| e.label.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let first = lines_of(fork + 1);
    let (first_text, marked) = if choice.is_none() {
        ("nothing: this run ends at the fork".to_string(), Vec::new())
    } else if !first.is_empty() {
        (labels(&first), first)
    } else {
        let silent = view
            .silent_steps
            .iter()
            .find(|s| s.step == fork + 1)
            .map(|s| s.label.clone())
            .unwrap_or_else(|| choice.map(choice_words).unwrap_or_default());
        let then = log
            .iter()
            .filter(|e| e.step > fork + 1 && !e.link)
            .map(|e| e.step)
            .next();
        match then {
            Some(step) => {
                let next = lines_of(step);
                (
                    format!(
                        "{silent} (no event); then at step {step}: {}",
                        labels(&next)
                    ),
                    next,
                )
            }
            None => (format!("{silent} (no event)"), Vec::new()),
        }
    };
    // The trace events of the first difference, by `seq` (the diagram's events name theirs).
    let first_seqs: Vec<Value> = marked.iter().map(|e| e.line["seq"].clone()).collect();
    let after: Vec<Value> = log
        .iter()
        .filter(|e| e.step > fork && !e.link)
        .take(COMPARE_LOG_LINES)
        .map(|e| {
            json!({
                "step": e.step,
                "time_ns": e.line["time_ns"],
                "seq": e.line["seq"],
                "label": e.label,
                "first": first_seqs.contains(&e.line["seq"]),
            })
        })
        .collect();
    let report = crate::report_view::report_json(session);
    let violations: Vec<Value> = view
        .violations
        .iter()
        .map(|v| json!({ "property": v.property, "detail": v.detail, "time_ns": v.time_ns }))
        .collect();
    let processes: Vec<Value> = view
        .processes
        .iter()
        .map(|p| json!({ "id": p.id, "alive": p.alive, "badge": p.badge }))
        .collect();
    let svg = diagram(session, fork_ns, to_ns)?;
    Ok(json!({
        "name": name,
        "branch": branch,
        "steps": choices.len(),
        "choice": choice,
        "first": first_text,
        "first_seqs": first_seqs,
        "log": after,
        "time_ns": view.time_ns,
        "final_checks": view.final_checks,
        "violations": violations,
        "processes": processes,
        "outcome": outcome(&report, &view.violations),
        "svg": svg,
    }))
}

/// A choice in words, for a step that wrote no event.
fn choice_words(c: &Choice) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| {
            let obj = v.as_object()?;
            let what = obj.get("do")?.as_str()?.to_string();
            let rest: Vec<String> = obj
                .iter()
                .filter(|(k, _)| k.as_str() != "do")
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            Some(if rest.is_empty() {
                what
            } else {
                format!("{what} {}", rest.join(", "))
            })
        })
        .unwrap_or_else(|| "a choice".into())
}

/// The outcome a run reached, in a few lines of words read off its report: the leader, the
/// critical-section entries, the clocks' skew, the deliveries, the snapshots, the violations.
pub fn outcome(report: &Value, violations: &[distsync_sim::Violation]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = report.get("election") {
        out.push(match e["leader"].as_u64() {
            Some(l) if e["agreed"] == true => format!("leader: P{l}, agreed by every live process"),
            Some(l) => format!("leader: P{l}, not yet agreed by every live process"),
            None => "leader: none named".to_string(),
        });
    }
    if let Some(m) = report.get("mutex") {
        out.push(format!(
            "critical-section entries: {}, requests unserved: {}",
            m["entries"], m["unserved_requests"]
        ));
    }
    if let Some(c) = report.get("clock") {
        out.push(format!(
            "clock rounds: {}, adjustments: {}, largest skew now: {}",
            c["rounds"],
            c["adjustments"],
            crate::quiz::ns_words(c["max_skew_ns"].as_i64().unwrap_or_default())
        ));
    }
    if let Some(m) = report.get("multicast") {
        out.push(format!(
            "multicasts: {}, deliveries: {}, undelivered: {}",
            m["multicasts"], m["deliveries"], m["undelivered"]
        ));
    }
    if let Some(s) = report.get("snapshot") {
        out.push(format!(
            "snapshots completed: {}, consistent: {}",
            s["completed"], s["consistent"]
        ));
    }
    if violations.is_empty() {
        out.push("no violation".to_string());
    }
    for v in violations {
        out.push(format!("VIOLATION {}: {}", v.property, v.detail));
    }
    out
}

/// The space-time diagram of `session` from `from_ns` to `to_ns`.
fn diagram(session: &Session, from_ns: u64, to_ns: u64) -> Result<String, ApiError> {
    let trace = distsync_viz::trace::Trace::parse(&session.trace_jsonl(), "compare")
        .map_err(|e| ApiError::bad("trace", e.to_string()))?;
    let opts = distsync_viz::svg::SvgOptions {
        from_ns: Some(from_ns),
        to_ns: Some(to_ns),
    };
    distsync_viz::svg::render(&trace, &opts).map_err(|e| ApiError::bad("from_ns", e.to_string()))
}
