//! The API's handlers: the page, its assets, and the JSON API (`docs/web.md` lists them). They
//! are plain functions of the request's parts; `crate::handle` routes to them, and the HTTP server
//! (`crate::server`) and the in-browser engine (crates/web-wasm) both call `handle`.

use crate::assets;
use crate::sessions::{Refusal, Sessions, MAX_CLIENT_SESSIONS, MAX_SESSIONS};
use crate::{Initial, MAX_BODY_BYTES};
use distsync_algorithms::registry;
use distsync_sim::session::Session;
use distsync_sim::Scenario;
use http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A JSON answer (200).
pub struct Json<T>(pub T);

/// What a handler runs in: the shared state and the client asking (the secret its page sends,
/// which owns the sessions it makes).
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub app: &'a AppState,
    pub client: &'a str,
}

impl std::ops::Deref for Ctx<'_> {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        self.app
    }
}

/// The context a handler reads (named like the extractor it replaced).
pub(crate) struct State<'a>(pub Ctx<'a>);

/// A path parameter.
pub(crate) struct Path<T>(pub T);

/// A parsed query string.
pub(crate) struct Query<T>(pub T);

/// An answer: its status, content type and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `content-type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A 200 answer.
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: StatusCode::OK,
            content_type,
            body: body.into(),
        }
    }

    /// A 204 answer.
    pub fn no_content() -> Response {
        Response {
            status: StatusCode::NO_CONTENT,
            content_type: "text/plain; charset=utf-8",
            body: Vec::new(),
        }
    }
}

/// Turns a handler's result into an answer.
pub trait IntoResponse {
    /// The answer.
    fn into_response(self) -> Response;
}

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(body) => Response::ok("application/json", body),
            Err(e) => ApiError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                field: String::new(),
                message: format!("the answer cannot be written as JSON: {e}"),
            }
            .into_response(),
        }
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    fn into_response(self) -> Response {
        match self {
            Ok(t) => t.into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// What every handler shares.
pub struct AppState {
    pub(crate) sessions: Mutex<Sessions<Session>>,
    pub(crate) initial: Option<Initial>,
    /// How many checks are running (at most [`crate::MAX_CHECKS`]).
    pub(crate) checks: AtomicUsize,
}

impl AppState {
    /// An engine with no session open yet; session ids are drawn from a generator seeded with
    /// `seed` (32 random bytes: from the OS on the server, from `crypto.getRandomValues` in the
    /// browser).
    pub fn new(initial: Option<Initial>, seed: [u8; 32]) -> AppState {
        AppState {
            sessions: Mutex::new(Sessions::new(MAX_SESSIONS, MAX_CLIENT_SESSIONS, seed)),
            initial,
            checks: AtomicUsize::new(0),
        }
    }

    /// Takes one of the [`crate::MAX_CHECKS`] places of the checker, or says it is busy.
    pub(crate) fn check_slot(self: &AppState) -> Result<CheckSlot<'_>, ApiError> {
        let taken = self
            .checks
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < crate::MAX_CHECKS).then_some(n + 1)
            })
            .is_ok();
        if taken {
            Ok(CheckSlot(&self.checks))
        } else {
            Err(ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                field: "check".into(),
                message: format!(
                    "the checker is busy ({} checks are running, the most at once); try again in a moment",
                    crate::MAX_CHECKS
                ),
            })
        }
    }
}

/// A place of the checker, given back when dropped.
pub(crate) struct CheckSlot<'a>(&'a AtomicUsize);

impl Drop for CheckSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An error answered as `{"error": "...", "field": "..."}` with a 4xx/5xx status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub field: String,
    pub message: String,
}

impl ApiError {
    /// A bad request: `field` (may be empty) and what was expected.
    pub fn bad(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            field: field.into(),
            message: message.into(),
        }
    }

    /// Session `id` cannot be had, for `why`.
    pub fn no_session(id: &str, why: Refusal) -> ApiError {
        let (status, message) = match why {
            Refusal::Missing => (
                StatusCode::NOT_FOUND,
                format!(
                    "no session {id}: it was closed (a page keeps at most {MAX_CLIENT_SESSIONS} open) or never existed; start a new one"
                ),
            ),
            Refusal::Foreign => (
                StatusCode::FORBIDDEN,
                format!("session {id} belongs to another page: a page reads and drives only the sessions it made"),
            ),
            Refusal::Full => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the server is full ({MAX_SESSIONS} sessions are open); try again when some pages have closed"),
            ),
        };
        ApiError {
            status,
            field: "session".into(),
            message,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        };
        let mut r = Json(json!({ "error": error, "field": self.field, "message": self.message }))
            .into_response();
        r.status = self.status;
        r
    }
}

/// Parses a JSON body, naming the field at fault on error (`body.choices[2].node: ...`).
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            field: "body".into(),
            message: format!("at most {MAX_BODY_BYTES} bytes, got {}", body.len()),
        });
    }
    if body.is_empty() {
        return Err(ApiError::bad("body", "expected a JSON object, got nothing"));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path == "?" || path.is_empty() {
            "body".to_string()
        } else {
            format!("body.{path}")
        };
        ApiError::bad(field, e.inner().to_string())
    })
}

pub(crate) fn index() -> Response {
    Response::ok("text/html; charset=utf-8", assets::INDEX_HTML)
}

pub(crate) fn asset(Path(file): Path<&str>) -> Response {
    match assets::asset(file) {
        Some((content_type, bytes)) => Response::ok(content_type, bytes),
        None => ApiError {
            status: StatusCode::NOT_FOUND,
            field: "path".into(),
            message: format!("no asset named `{file}`"),
        }
        .into_response(),
    }
}

#[derive(Serialize)]
pub(crate) struct AlgorithmInfo {
    name: &'static str,
    family: &'static str,
    fifo: bool,
    description: &'static str,
    /// A small scenario that shows it at work (the simulator's `default_scenario`).
    toml: String,
}

pub(crate) fn algorithms() -> Json<Vec<AlgorithmInfo>> {
    Json(
        registry::entries()
            .into_iter()
            .map(|e| AlgorithmInfo {
                name: e.name,
                family: e.family.name(),
                fifo: e.needs_fifo,
                description: e.description,
                toml: distsync_sim::default_scenario(e.name).expect("a registry name"),
            })
            .collect(),
    )
}

/// The built-in example scenarios (`distsync examples`): name, algorithm, what the file says
/// about itself, and its text.
pub(crate) fn examples() -> Json<Value> {
    Json(Value::Array(
        crate::examples::EXAMPLES
            .iter()
            .map(|(name, toml)| {
                let algorithm = Scenario::from_toml(toml, name)
                    .map(|s| s.algorithm)
                    .unwrap_or_default();
                json!({
                    "name": name,
                    "algorithm": algorithm,
                    "description": crate::examples::description(toml),
                    "toml": toml,
                })
            })
            .collect(),
    ))
}

/// The lessons (`crates/web/lessons/`), each with its scenario's text.
pub(crate) fn lessons() -> Result<Json<Value>, ApiError> {
    let mut out = Vec::new();
    for (name, text) in crate::lessons::LESSONS {
        let lesson = crate::lessons::parse(name, text).map_err(|e| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            field: "lesson".into(),
            message: e,
        })?;
        let toml = crate::lessons::scenario_of(&lesson);
        let mut v = serde_json::to_value(&lesson).expect("plain data");
        v["name"] = json!(name);
        v["toml"] = json!(toml);
        out.push(v);
    }
    Ok(Json(Value::Array(out)))
}

pub(crate) fn initial(State(state): State) -> Json<Value> {
    Json(match &state.initial {
        Some(i) => json!({ "toml": i.toml, "origin": i.origin }),
        None => Value::Null,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlBody {
    toml: String,
    #[serde(default)]
    origin: Option<String>,
}

/// Parses scenario TOML: the same checks as `distsync run`, answered with the scenario as JSON
/// (so the page can fill its form from a file).
fn parse_scenario(toml: &str, origin: &str) -> Result<Scenario, ApiError> {
    Scenario::from_toml(toml, origin).map_err(|e| scenario_error(&e))
}

/// A scenario error as the API answers it: the whole message names the file and the field.
pub fn scenario_error(e: &distsync_sim::ScenarioError) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        field: if e.field.is_empty() {
            "toml".into()
        } else {
            e.field.clone()
        },
        message: e.to_string(),
    }
}

pub(crate) fn scenario_parse(body: &[u8]) -> Result<Json<Value>, ApiError> {
    let b: TomlBody = parse_body(body)?;
    let origin = b.origin.unwrap_or_else(|| "scenario".into());
    let scenario = parse_scenario(&b.toml, &origin)?;
    scenario.check(&origin).map_err(|e| scenario_error(&e))?;
    Ok(Json(json!({ "scenario": scenario })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioBody {
    scenario: Value,
}

pub(crate) fn scenario_toml(body: &[u8]) -> Result<Json<Value>, ApiError> {
    let b: ScenarioBody = parse_body(body)?;
    let scenario: Scenario = serde_path_to_error::deserialize(b.scenario)
        .map_err(|e| ApiError::bad(format!("scenario.{}", e.path()), e.inner().to_string()))?;
    let toml = toml::to_string(&scenario)
        .map_err(|e| ApiError::bad("scenario", format!("cannot be written as TOML: {e}")))?;
    Ok(Json(json!({ "toml": toml })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_checks_run_at_once() {
        let state = AppState::new(None, [0; 32]);
        let slots: Vec<_> = (0..crate::MAX_CHECKS)
            .map(|_| state.check_slot().expect("a free place"))
            .collect();
        let busy = state.check_slot().err().expect("the checker is busy");
        assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(busy.message.contains("busy"), "{}", busy.message);
        drop(slots);
        assert!(state.check_slot().is_ok(), "places are given back");
    }
}
