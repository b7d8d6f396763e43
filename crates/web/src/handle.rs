//! The API without HTTP: one request (method, path, query string, body, and the asking client's
//! secret) in, one answer (status, content type, bytes) out. The HTTP server (`crate::server`)
//! and the in-browser engine (crates/web-wasm, in a Web Worker) both answer through
//! [`handle`], so the page drives either with the same calls.

use crate::api::{self, ApiError, AppState, Ctx, IntoResponse, Path, Query, Response, State};
use crate::{check_api, session_api};
use http::StatusCode;
use serde::de::DeserializeOwned;

/// One request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST` or `DELETE` (`HEAD` is answered as `GET`; the server drops the body).
    pub method: &'a str,
    /// The path, `/api/session/ID/view`.
    pub path: &'a str,
    /// The query string without its `?` (may be empty).
    pub query: &'a str,
    /// The body (JSON for the API's posts; may be empty).
    pub body: &'a [u8],
    /// The secret of the page asking: it owns the sessions it makes.
    pub client: &'a str,
}

/// Parses a query string into `T`, naming the parameter at fault.
fn query<T: DeserializeOwned>(q: &str) -> Result<T, ApiError> {
    serde_urlencoded::from_str(q).map_err(|e| ApiError::bad("query", e.to_string()))
}

fn not_found(path: &str) -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        field: "path".into(),
        message: format!("no such page or API route: `{path}` (docs/web.md lists the API)"),
    }
    .into_response()
}

fn wrong_method(method: &str, path: &str, allowed: &str) -> Response {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        field: "method".into(),
        message: format!("`{path}` answers {allowed}, not {method}"),
    }
    .into_response()
}

/// Answers one request.
pub fn handle(app: &AppState, req: &Request<'_>) -> Response {
    let method = if req.method.eq_ignore_ascii_case("HEAD") {
        "GET"
    } else {
        req.method
    };
    let ctx = Ctx {
        app,
        client: req.client,
    };
    let segments: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    let body = req.body;
    macro_rules! only {
        ($m:literal, $e:expr) => {
            if method.eq_ignore_ascii_case($m) {
                $e
            } else {
                wrong_method(method, req.path, $m)
            }
        };
    }
    macro_rules! q {
        ($t:ty) => {
            match query::<$t>(req.query) {
                Ok(v) => Query(v),
                Err(e) => return e.into_response(),
            }
        };
    }
    match segments.as_slice() {
        [""] | ["index.html"] => only!("GET", api::index()),
        ["favicon.ico"] => only!("GET", api::asset(Path("favicon.svg"))),
        ["assets", file] => only!("GET", api::asset(Path(file))),
        ["api", "algorithms"] => only!("GET", api::algorithms().into_response()),
        ["api", "initial"] => only!("GET", api::initial(State(ctx)).into_response()),
        ["api", "examples"] => only!("GET", api::examples().into_response()),
        ["api", "lessons"] => only!("GET", api::lessons().into_response()),
        ["api", "scenario", "parse"] => {
            only!("POST", api::scenario_parse(body).into_response())
        }
        ["api", "scenario", "toml"] => only!("POST", api::scenario_toml(body).into_response()),
        ["api", "check"] => only!("POST", check_api::check(State(ctx), body).into_response()),
        ["api", "session"] => only!(
            "POST",
            session_api::create(State(ctx), q!(session_api::Window), body).into_response()
        ),
        ["api", "session", id] => only!("DELETE", session_api::close(State(ctx), Path(id))),
        ["api", "session", id, action] => {
            let (s, p) = (State(ctx), Path(*id));
            match *action {
                "view" => only!(
                    "GET",
                    session_api::view(s, p, q!(session_api::Window)).into_response()
                ),
                "apply" => only!(
                    "POST",
                    session_api::apply(s, p, q!(session_api::Window), body).into_response()
                ),
                "back" => only!(
                    "POST",
                    session_api::back(s, p, q!(session_api::Window)).into_response()
                ),
                "goto" => only!(
                    "POST",
                    session_api::goto(s, p, q!(session_api::Window), body).into_response()
                ),
                "run" => only!(
                    "POST",
                    session_api::run(s, p, q!(session_api::Window), body).into_response()
                ),
                "trace" => only!("GET", session_api::trace(s, p).into_response()),
                "svg" => only!(
                    "GET",
                    session_api::svg(s, p, q!(session_api::SvgQuery)).into_response()
                ),
                "scenario" => only!("GET", session_api::scenario(s, p).into_response()),
                "report" => only!("GET", session_api::report(s, p).into_response()),
                "share" => only!("GET", session_api::share(s, p).into_response()),
                "branch" => only!(
                    "POST",
                    session_api::branch(s, p, q!(session_api::Window), body).into_response()
                ),
                "compare" => only!(
                    "GET",
                    session_api::compare(s, p, q!(crate::compare::CompareQuery)).into_response()
                ),
                "quiz" => match method.to_ascii_uppercase().as_str() {
                    "GET" => session_api::quiz(s, p, q!(session_api::QuizQuery)).into_response(),
                    "POST" => session_api::quiz_answer(s, p, body).into_response(),
                    _ => wrong_method(method, req.path, "GET, POST"),
                },
                _ => not_found(req.path),
            }
        }
        _ => not_found(req.path),
    }
}
