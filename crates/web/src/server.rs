//! The HTTP server (feature `server`): axum hands every request to [`crate::handle`] on a
//! blocking thread, after the checks that make the server safe to share with a classroom:
//!
//! - the `Host` header must name the listen address when it is a loopback one (a DNS-rebinding
//!   page cannot read answers), and an `Origin`, when sent, must be the page's own (another
//!   site's page cannot drive the API);
//! - a request that changes something (`POST`, `DELETE`) must carry the page's secret in
//!   `x-distsync-client` and, when it has a body, `content-type: application/json`: neither can
//!   be sent by a cross-site form or a `text/plain` post without a CORS preflight, which this
//!   server never grants;
//! - every answer carries a strict Content-Security-Policy, `X-Content-Type-Options: nosniff`,
//!   `frame-ancestors 'none'` and `Referrer-Policy: no-referrer`.

use crate::api::{ApiError, AppState, IntoResponse};
use crate::handle::{handle, Request};
use crate::MAX_BODY_BYTES;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;

/// The state shared by every request.
pub type Shared = Arc<AppState>;

/// The header that carries the page's secret (it owns the sessions the page makes).
pub const CLIENT_HEADER: &str = "x-distsync-client";

/// The Content-Security-Policy of every answer: the page's own scripts, styles, images and
/// WebAssembly only, and the space-time diagram's `<style>` element by its hash; no inline
/// script, no framing, no form posts, no base URL changes.
pub fn content_security_policy() -> &'static str {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CSP.get_or_init(|| {
        use base64::Engine as _;
        use sha2::Digest as _;
        let style = base64::engine::general_purpose::STANDARD
            .encode(sha2::Sha256::digest(distsync_viz::svg::STYLE.as_bytes()));
        format!(
            "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
             style-src 'self' 'sha256-{style}'; img-src 'self' data: blob:; connect-src 'self'; \
             worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
    })
}

/// The router of the page and the API, for a server listening on `listen`.
pub fn router(state: Shared, listen: SocketAddr) -> Router {
    Router::new()
        .fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = state.clone();
                async move { serve(state, listen, method, uri, headers, body).await }
            },
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// The hosts a loopback server answers to: its address, `localhost` and the loopback addresses,
/// with its port.
fn host_allowed(host: &str, listen: SocketAddr) -> bool {
    if !listen.ip().is_loopback() {
        // A server on a public address is reachable by whatever name points at it, and a
        // DNS-rebinding page learns nothing it could not ask directly.
        return true;
    }
    let port = listen.port();
    [
        format!("{listen}"),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ]
    .iter()
    .any(|h| h.eq_ignore_ascii_case(host))
}

fn refuse(status: StatusCode, field: &str, message: String) -> crate::api::Response {
    ApiError {
        status,
        field: field.into(),
        message,
    }
    .into_response()
}

/// The checks of the module's documentation; `None` when the request may go on.
fn gate(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
    listen: SocketAddr,
) -> Option<crate::api::Response> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(host) = text(header::HOST) else {
        return Some(refuse(
            StatusCode::BAD_REQUEST,
            "host",
            "the request names no Host".into(),
        ));
    };
    if !host_allowed(host, listen) {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "host",
            format!("this server answers to {listen} (or localhost), not to Host `{host}`"),
        ));
    }
    if let Some(origin) = text(header::ORIGIN) {
        // http://, or https:// behind a TLS proxy that keeps the Host.
        let same = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(host));
        if !same {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                "origin",
                format!("requests from another site (Origin `{origin}`) are refused; open the page at http://{host}/"),
            ));
        }
    }
    if *method == Method::GET || *method == Method::HEAD {
        return None;
    }
    if !body.is_empty() {
        let json = text(header::CONTENT_TYPE).is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return Some(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "content-type",
                format!(
                    "the API reads JSON bodies only (content-type: application/json), got {}",
                    text(header::CONTENT_TYPE).unwrap_or("none")
                ),
            ));
        }
    }
    if headers.get(CLIENT_HEADER).is_none() && uri.path().starts_with("/api/") {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            CLIENT_HEADER,
            format!("a request that changes something must carry the page's {CLIENT_HEADER} header (the page sends it)"),
        ));
    }
    None
}

async fn serve(
    state: Shared,
    listen: SocketAddr,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = match gate(&method, &uri, &headers, &body, listen) {
        Some(refused) => refused,
        None => {
            let client = headers
                .get(CLIENT_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let (m, u) = (method.clone(), uri.clone());
            let run = move || {
                let app: &AppState = &state;
                handle(
                    app,
                    &Request {
                        method: m.as_str(),
                        path: u.path(),
                        query: u.query().unwrap_or(""),
                        body: &body,
                        client: &client,
                    },
                )
            };
            tokio::task::spawn_blocking(run).await.unwrap_or_else(|e| {
                refuse(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "",
                    format!("the request failed: {e}"),
                )
            })
        }
    };
    let mut r = Response::new(if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(answer.body)
    });
    *r.status_mut() = answer.status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(answer.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(content_security_policy()),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    r
}

/// What a server listening on `addr` exposes, when that is more than this machine: a note for
/// the terminal (`None` on a loopback address).
pub fn exposure(addr: SocketAddr) -> Option<String> {
    if addr.ip().is_loopback() {
        return None;
    }
    Some(format!(
        "note: --listen {addr} is not a loopback address: anyone who can reach this machine on port {} can open the page, \
         make up to {} sessions per page ({} in all) and run the checker ({} at once). \
         Each page reads and drives only its own sessions. There is no login and no TLS: \
         use it on a classroom network, or put a TLS proxy in front.",
        addr.port(),
        crate::sessions::MAX_CLIENT_SESSIONS,
        crate::sessions::MAX_SESSIONS,
        crate::MAX_CHECKS,
    ))
}
