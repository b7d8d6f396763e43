//! The session routes: make a session from a scenario (and choices), step it, take it back, run
//! it, and read its trace, diagram, scenario and share link.

use crate::api::{
    parse_body, scenario_error, ApiError, Ctx, IntoResponse, Json, Path, Query, Response, State,
};
use crate::sessions::Open;
use distsync_sim::session::{Choice, LogEntry, Session, SessionError};
use distsync_sim::{Scenario, SimError};
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

/// The most events one `run` request applies.
pub const MAX_RUN_EVENTS: u64 = 1_000_000;

/// The most processes a session runs (the page's form stops there too): a step of a larger run
/// costs seconds and its view megabytes.
pub const MAX_SESSION_PROCESSES: usize = 64;

/// The most choices (steps) a session records: what it holds grows linearly with them (about
/// 0.9 kB a step for 5 processes, docs/web.md), so this bounds one session's memory.
pub const MAX_SESSION_STEPS: usize = 50_000;

/// The most violations of a view that get their cause (`cause`): the first ones, which the
/// later ones follow from; a run that goes on after many violations would otherwise spend each
/// view explaining them all.
pub const MAX_CAUSES: usize = 10;

/// The most log lines one view carries (a window the page asks for is cut to this).
pub const MAX_VIEW_LOG_LINES: usize = 2_000;

/// Refuses a scenario with more than [`MAX_SESSION_PROCESSES`] processes, saying so.
fn check_size(scenario: &Scenario, origin: &str) -> Result<(), ApiError> {
    let n = scenario
        .check(origin)
        .map_err(|e| scenario_error(&e))?
        .peers
        .len();
    if n > MAX_SESSION_PROCESSES {
        return Err(ApiError::bad(
            "nodes",
            format!("the page runs at most {MAX_SESSION_PROCESSES} processes (a step of a larger run takes seconds and its view megabytes), got {n}; `distsync run` takes larger scenarios"),
        ));
    }
    Ok(())
}

/// How many more steps session `s` may record (at most [`MAX_SESSION_STEPS`] in all), or why
/// none.
fn room(s: &Session) -> Result<u64, ApiError> {
    let used = s.choices().len();
    if used >= MAX_SESSION_STEPS {
        return Err(ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            field: "steps".into(),
            message: format!("this run has reached {MAX_SESSION_STEPS} steps, the most a session keeps; go back, or download its trace and start a new run (`distsync run` has no such limit)"),
        });
    }
    Ok((MAX_SESSION_STEPS - used) as u64)
}

/// Which part of the log a view carries: entries `log_from..log_to` (by position in the log).
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct Window {
    log_from: Option<usize>,
    log_to: Option<usize>,
    log_tail: Option<usize>,
}

/// How many of the latest log lines a view carries when the page names no window: enough to
/// read what just happened, few enough that a step of a 10,000-event run stays quick.
pub const DEFAULT_LOG_TAIL: usize = 150;

/// The session's view as JSON: the log lines `log_from..log_to` when the page names a window,
/// else the latest `log_tail` (default [`DEFAULT_LOG_TAIL`]); the View says which (`log_from`,
/// `log_total`).
pub fn view_json(session: &Session, window: Window) -> Value {
    view_with(session, window, &mut None, None)
}

/// The view of an open session: [`view_json`], its causes kept until the run changes (a view
/// of the same step, another window of its log, costs no new pass over the trace), and its
/// branches (`branches`: the futures left behind by going back and choosing differently).
pub(crate) fn view_open(o: &mut Open<Session>, window: Window) -> Value {
    let mut json = view_with(&o.session, window, &mut o.causes, Some(&mut o.log));
    if !o.branches.is_empty() {
        let current = o.session.recorded();
        json["branches"] = o
            .branches
            .iter()
            .enumerate()
            .map(|(index, b)| {
                let fork = b.iter().zip(current).take_while(|(a, c)| a == c).count();
                json!({ "index": index, "fork": fork, "steps": b.len() })
            })
            .collect();
    }
    json
}

/// The causes of a view's first violations, read off the whole trace, or taken from `cache`
/// when it holds them for the session's current version.
type CauseCache = Option<(u64, Vec<Option<crate::cause::Cause>>)>;

fn view_with(
    session: &Session,
    window: Window,
    cache: &mut CauseCache,
    log: Option<&mut Vec<LogEntry>>,
) -> Value {
    let view = match (window.log_from, window.log_to) {
        (None, None) => {
            // The number of lines first (an empty window is cheap), then the tail.
            let total = session.view_window(usize::MAX, usize::MAX).log_total;
            let tail = window
                .log_tail
                .unwrap_or(DEFAULT_LOG_TAIL)
                .min(MAX_VIEW_LOG_LINES);
            session.view_window(total.saturating_sub(tail), total)
        }
        (from, to) => {
            let from = from.unwrap_or(0);
            let to = to
                .unwrap_or(from.saturating_add(distsync_sim::session::VIEW_LOG_LINES))
                .min(from.saturating_add(MAX_VIEW_LOG_LINES));
            session.view_window(from, to)
        }
    };
    let mut json = serde_json::to_value(&view).expect("a view is plain data");
    if !view.violations.is_empty() {
        // Say why: each violation's cause, read off the whole trace so far (once per version
        // of the run).
        let first = &view.violations[..view.violations.len().min(MAX_CAUSES)];
        let causes = match cache {
            Some((version, causes))
                if *version == session.version() && causes.len() == first.len() =>
            {
                causes.clone()
            }
            _ => {
                let causes = match log {
                    // The lines since the log was last read, appended (the run only went
                    // forward since: a step back emptied it).
                    Some(log) => {
                        let total = view.log_total;
                        if log.len() > total {
                            log.clear();
                        }
                        log.extend(session.view_window(log.len(), total).log);
                        crate::cause::explain_all(first, log)
                    }
                    None => {
                        crate::cause::explain_all(first, &session.view_window(0, usize::MAX).log)
                    }
                };
                *cache = Some((session.version(), causes.clone()));
                causes
            }
        };
        if let Some(vs) = json.get_mut("violations").and_then(Value::as_array_mut) {
            for (x, cause) in vs.iter_mut().zip(causes) {
                if let Some(cause) = cause {
                    x["cause"] = serde_json::to_value(cause).expect("plain data");
                }
            }
        }
    } else if let Some(log) = log {
        // Nothing to explain: the log is not kept.
        *log = Vec::new();
    }
    crate::rules::annotate(&mut json);
    json
}

fn session_error(e: impl std::fmt::Display) -> ApiError {
    ApiError {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        field: "choice".into(),
        message: e.to_string(),
    }
}

/// Runs `f` on session `id` if the asking client owns it (the server calls the handlers off its
/// async workers: a replay or a long run is CPU work).
fn with_session<T>(
    state: &Ctx<'_>,
    id: &str,
    f: impl FnOnce(&mut Open<Session>) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let open = state
        .sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(id, state.client)
        .map_err(|why| ApiError::no_session(id, why))?;
    let mut guard = open.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut guard)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    toml: String,
    #[serde(default)]
    origin: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
}

/// Makes a session from scenario TOML (and replays `choices`): the scenario is checked as
/// `distsync run` checks it.
pub fn make_session(toml: &str, origin: &str, choices: &[Choice]) -> Result<Session, ApiError> {
    let scenario = Scenario::from_toml(toml, origin).map_err(|e| scenario_error(&e))?;
    check_size(&scenario, origin)?;
    if choices.len() > MAX_SESSION_STEPS {
        return Err(ApiError::bad(
            "choices",
            format!(
                "a session keeps at most {MAX_SESSION_STEPS} steps, got {}",
                choices.len()
            ),
        ));
    }
    Session::replay(&scenario, origin, choices).map_err(|e| match e {
        SessionError::Scenario(SimError::Scenario(e)) => scenario_error(&e),
        SessionError::Scenario(e) => ApiError::bad("toml", e.to_string()),
        SessionError::Choice { step, message } => {
            ApiError::bad(format!("choices[{step}]"), message)
        }
    })
}

/// Opens `session` in the store, owned by the asking client; its id.
pub(crate) fn store(state: &Ctx<'_>, session: Session, toml: String) -> Result<String, ApiError> {
    state
        .sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(state.client, Open::new(session, toml))
        .map_err(|why| ApiError::no_session("", why))
}

pub(crate) fn create(
    State(state): State,
    Query(window): Query<Window>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let b: CreateBody = parse_body(body)?;
    let origin = b.origin.unwrap_or_else(|| "scenario".into());
    let (session, toml) = make_session(&b.toml, &origin, &b.choices).map(|s| (s, b.toml))?;
    let view = view_json(&session, window);
    let id = store(&state, session, toml)?;
    Ok(Json(json!({ "session": id, "view": view })))
}

pub(crate) fn close(State(state): State, Path(id): Path<&str>) -> Response {
    match state
        .sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(id, state.client)
    {
        Ok(()) => Response::no_content(),
        Err(why) => ApiError::no_session(id, why).into_response(),
    }
}

pub(crate) fn view(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
) -> Result<Json<Value>, ApiError> {
    with_session(&state, id, move |o| Ok(Json(view_open(o, window))))
}

pub(crate) fn apply(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let choice: Choice = parse_body(body)?;
    with_session(&state, id, move |o| {
        room(&o.session)?;
        // Choosing after going back leaves the recorded future: keep it as a branch.
        let old = o.session.recorded().to_vec();
        let step = o.session.choices().len();
        o.session.apply(choice).map_err(session_error)?;
        if old.len() > step && o.session.recorded() != &old[..] && !o.branches.contains(&old) {
            o.branches.push(old);
        }
        Ok(Json(view_open(o, window)))
    })
}

pub(crate) fn back(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
) -> Result<Json<Value>, ApiError> {
    with_session(&state, id, move |o| {
        o.session.back().map_err(session_error)?;
        o.log.clear();
        Ok(Json(view_open(o, window)))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GotoBody {
    step: usize,
}

pub(crate) fn goto(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let b: GotoBody = parse_body(body)?;
    with_session(&state, id, move |o| {
        if b.step < o.session.choices().len() {
            o.log.clear();
        }
        o.session.goto(b.step).map_err(session_error)?;
        Ok(Json(view_open(o, window)))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunBody {
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    until_ns: Option<u64>,
}

pub(crate) fn run(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let b: RunBody = if body.is_empty() {
        RunBody {
            limit: None,
            until_ns: None,
        }
    } else {
        parse_body(body)?
    };
    let limit = b.limit.unwrap_or(MAX_RUN_EVENTS);
    if limit > MAX_RUN_EVENTS {
        return Err(ApiError::bad(
            "body.limit",
            format!("at most {MAX_RUN_EVENTS} events per request, got {limit}"),
        ));
    }
    with_session(&state, id, move |o| {
        let until = b.until_ns.map(distsync_core::Time::from_nanos);
        let limit = limit.min(room(&o.session)?);
        let old = o.session.recorded().to_vec();
        let step = o.session.choices().len();
        let stop = o.session.run(limit, until).map_err(session_error)?;
        if old.len() > step && o.session.recorded() != &old[..] && !o.branches.contains(&old) {
            o.branches.push(old);
        }
        let mut v = view_open(o, window);
        v["stop"] = serde_json::to_value(stop).expect("plain data");
        Ok(Json(v))
    })
}

fn text_response(content_type: &'static str, body: String) -> Response {
    Response::ok(content_type, body)
}

pub(crate) fn trace(State(state): State, Path(id): Path<&str>) -> Result<Response, ApiError> {
    with_session(&state, id, |o| {
        Ok(text_response(
            "application/x-ndjson; charset=utf-8",
            o.session.trace_jsonl(),
        ))
    })
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct SvgQuery {
    /// Draw from this trace line on (the page passes the first line of its log window), so a
    /// long run draws only its window.
    from_seq: Option<usize>,
    from_ns: Option<u64>,
    to_ns: Option<u64>,
}

/// The trace's header and its event lines from `from_seq` on.
fn trace_from(jsonl: &str, from_seq: usize) -> String {
    let mut lines = jsonl.split_inclusive('\n');
    let mut out = String::new();
    if let Some(header) = lines.next() {
        out.push_str(header);
    }
    for line in lines.skip(from_seq) {
        out.push_str(line);
    }
    out
}

pub(crate) fn svg(
    State(state): State,
    Path(id): Path<&str>,
    Query(q): Query<SvgQuery>,
) -> Result<Response, ApiError> {
    // Copy the trace under the session's lock, draw without it: stepping goes on meanwhile.
    let jsonl = with_session(&state, id, |o| Ok(o.session.trace_jsonl()))?;
    {
        let text = match q.from_seq {
            Some(n) if n > 0 => trace_from(&jsonl, n),
            _ => jsonl,
        };
        let trace = distsync_viz::trace::Trace::parse(&text, "session")
            .map_err(|e| ApiError::bad("trace", e.to_string()))?;
        // A window that starts after the run ends has nothing to draw (and its scale would
        // divide by nothing).
        let end = trace.end_time_ns();
        if let Some(from) = q.from_ns.filter(|&f| f > end) {
            return Err(ApiError::bad(
                "from_ns",
                format!("the run so far ends at {end} ns; a diagram from {from} ns would be empty: give at most {end}"),
            ));
        }
        let opts = distsync_viz::svg::SvgOptions {
            from_ns: q.from_ns,
            to_ns: q.to_ns,
        };
        let svg = distsync_viz::svg::render(&trace, &opts)
            .map_err(|e| ApiError::bad("from_ns", e.to_string()))?;
        Ok(text_response("image/svg+xml; charset=utf-8", svg))
    }
}

/// The report `distsync run --json` gives for the run so far (a copy of it finished with the
/// family's final checks): the page's outcome panel (clock values, the assembled snapshots,
/// the delivery orders and balances, the metrics) reads it.
pub(crate) fn report(State(state): State, Path(id): Path<&str>) -> Result<Json<Value>, ApiError> {
    with_session(&state, id, |o| {
        Ok(Json(crate::report_view::report_json(&o.session)))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BranchBody {
    index: usize,
}

/// Switches to branch `index`: the run shown becomes that branch's (replayed), at the step
/// where it parts from the run shown before, which becomes a branch in its place.
pub(crate) fn branch(
    State(state): State,
    Path(id): Path<&str>,
    Query(window): Query<Window>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let b: BranchBody = parse_body(body)?;
    with_session(&state, id, move |o| {
        let Some(target) = o.branches.get(b.index).cloned() else {
            return Err(ApiError::bad(
                "body.index",
                format!("there are {} branches, numbered from 0", o.branches.len()),
            ));
        };
        let current = o.session.recorded().to_vec();
        let fork = target
            .iter()
            .zip(&current)
            .take_while(|(a, c)| a == c)
            .count();
        let mut session =
            Session::replay(o.session.scenario(), "branch", &target).map_err(session_error)?;
        session.goto(fork).map_err(session_error)?;
        o.session = session;
        o.log.clear();
        o.branches[b.index] = current;
        Ok(Json(view_open(o, window)))
    })
}

/// Two branches of the history side by side, neither switched to ([`crate::compare`]).
pub(crate) fn compare(
    State(state): State,
    Path(id): Path<&str>,
    Query(q): Query<crate::compare::CompareQuery>,
) -> Result<Json<Value>, ApiError> {
    // Copy what the two runs are made of under the session's lock, replay them without it:
    // stepping goes on meanwhile.
    let (scenario, current, branches) = with_session(&state, id, |o| {
        Ok((
            o.session.scenario().clone(),
            o.session.recorded().to_vec(),
            o.branches.clone(),
        ))
    })?;
    crate::compare::compare(&scenario, &current, &branches, &q).map(Json)
}

/// `GET /api/session/ID/quiz?level=...`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuizQuery {
    level: crate::quiz::Level,
}

/// The question of a level at the session's step, without its answer, or why there is none.
pub(crate) fn quiz(
    State(state): State,
    Path(id): Path<&str>,
    Query(q): Query<QuizQuery>,
) -> Result<Json<Value>, ApiError> {
    with_session(&state, id, move |o| {
        Ok(Json(match crate::quiz::question(&o.session, q.level) {
            Ok((question, _)) => json!({ "question": question }),
            Err(why) => json!({ "question": null, "why": why }),
        }))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuizAnswerBody {
    level: crate::quiz::Level,
    step: usize,
    kind: String,
    answer: String,
}

/// Marks an answer against the run at the question's step: `{right, answer: [...], why}`.
pub(crate) fn quiz_answer(
    State(state): State,
    Path(id): Path<&str>,
    body: &[u8],
) -> Result<Json<Value>, ApiError> {
    let b: QuizAnswerBody = parse_body(body)?;
    with_session(&state, id, move |o| {
        let moved = |why: String| ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            field: "body.step".into(),
            message: why,
        };
        if o.session.choices().len() != b.step {
            return Err(moved(format!(
                "the question was about step {}, the run is at step {}: ask again",
                b.step,
                o.session.choices().len()
            )));
        }
        let (question, answer) = crate::quiz::question(&o.session, b.level).map_err(moved)?;
        if question.kind != b.kind {
            return Err(moved(format!(
                "the question at this step is `{}`, not `{}`: ask again",
                question.kind, b.kind
            )));
        }
        if !question.options.contains(&b.answer) {
            return Err(ApiError::bad(
                "body.answer",
                format!("not one of the options: {:?}", question.options),
            ));
        }
        Ok(Json(json!({
            "right": answer.right.contains(&b.answer),
            "answer": answer.right,
            "why": answer.why,
        })))
    })
}

pub(crate) fn scenario(State(state): State, Path(id): Path<&str>) -> Result<Response, ApiError> {
    with_session(&state, id, |o| {
        Ok(text_response(
            "application/toml; charset=utf-8",
            o.toml.clone(),
        ))
    })
}

/// The URL fragment that replays a run: `toml=<scenario>&choices=<JSON>`, form-urlencoded, where
/// in the choices a number `k` stands for `k` times `{"do":"next"}`.
pub fn share_fragment(toml: &str, choices: &[Choice]) -> String {
    let mut packed: Vec<Value> = Vec::new();
    let mut nexts = 0u64;
    for c in choices {
        if matches!(c, Choice::Next) {
            nexts += 1;
            continue;
        }
        if nexts > 0 {
            packed.push(json!(nexts));
            nexts = 0;
        }
        packed.push(serde_json::to_value(c).expect("plain data"));
    }
    if nexts > 0 {
        packed.push(json!(nexts));
    }
    let choices = serde_json::to_string(&packed).expect("plain data");
    form_urlencoded::Serializer::new(String::new())
        .append_pair("toml", toml)
        .append_pair("choices", &choices)
        .finish()
}

pub(crate) fn share(State(state): State, Path(id): Path<&str>) -> Result<Json<Value>, ApiError> {
    with_session(&state, id, |o| {
        Ok(Json(json!({
            "fragment": share_fragment(&o.toml, o.session.choices()),
        })))
    })
}
