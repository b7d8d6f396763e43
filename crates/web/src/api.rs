//! The HTTP routes: the page, its assets, and the JSON API (`docs/web.md` lists them).

use crate::assets;
use crate::session_api;
use crate::sessions::{Sessions, MAX_SESSIONS};
use crate::{Initial, MAX_BODY_BYTES};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use distsync_algorithms::registry;
use distsync_sim::session::Session;
use distsync_sim::Scenario;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// What every handler shares.
pub struct AppState {
    pub(crate) sessions: Mutex<Sessions<Session>>,
    pub(crate) initial: Option<Initial>,
}

impl AppState {
    /// A server with no session open yet.
    pub fn new(initial: Option<Initial>) -> AppState {
        AppState {
            sessions: Mutex::new(Sessions::new(MAX_SESSIONS)),
            initial,
        }
    }
}

pub(crate) type State = axum::extract::State<Arc<AppState>>;

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

    /// No session with this id.
    pub fn no_session(id: u64) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            field: "session".into(),
            message: format!(
                "no session {id}: it was closed (at most {MAX_SESSIONS} stay open) or never existed; start a new one"
            ),
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
        (
            self.status,
            Json(json!({ "error": error, "field": self.field, "message": self.message })),
        )
            .into_response()
    }
}

/// Parses a JSON body, naming the field at fault on error (`body.choices[2].node: ...`).
pub fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
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

/// The router of the page and the API, over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/assets/{file}", get(asset))
        .route("/api/algorithms", get(algorithms))
        .route("/api/initial", get(initial))
        .route("/api/examples", get(examples))
        .route("/api/lessons", get(lessons))
        .route("/api/scenario/parse", post(scenario_parse))
        .route("/api/scenario/toml", post(scenario_toml))
        .merge(session_api::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        assets::INDEX_HTML,
    )
        .into_response()
}

async fn asset(Path(file): Path<String>) -> Response {
    match assets::asset(&file) {
        Some((content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            bytes,
        )
            .into_response(),
        None => ApiError {
            status: StatusCode::NOT_FOUND,
            field: "path".into(),
            message: format!("no asset named `{file}`"),
        }
        .into_response(),
    }
}

#[derive(Serialize)]
struct AlgorithmInfo {
    name: &'static str,
    family: &'static str,
    fifo: bool,
    description: &'static str,
    /// A small scenario that shows it at work (the simulator's `default_scenario`).
    toml: String,
}

async fn algorithms() -> Json<Vec<AlgorithmInfo>> {
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
async fn examples() -> Json<Value> {
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
async fn lessons() -> Result<Json<Value>, ApiError> {
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

async fn initial(axum::extract::State(state): State) -> Json<Value> {
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

async fn scenario_parse(body: Bytes) -> Result<Json<Value>, ApiError> {
    let b: TomlBody = parse_body(&body)?;
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

async fn scenario_toml(body: Bytes) -> Result<Json<Value>, ApiError> {
    let b: ScenarioBody = parse_body(&body)?;
    let scenario: Scenario = serde_path_to_error::deserialize(b.scenario)
        .map_err(|e| ApiError::bad(format!("scenario.{}", e.path()), e.inner().to_string()))?;
    let toml = toml::to_string(&scenario)
        .map_err(|e| ApiError::bad("scenario", format!("cannot be written as TOML: {e}")))?;
    Ok(Json(json!({ "toml": toml })))
}
