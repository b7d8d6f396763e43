//! The page's engine in the browser: `distsync_web::handle` (the same API `distsync web` serves
//! over HTTP) compiled to WebAssembly. `crates/web/assets/worker.js` loads it in a Web Worker
//! and answers the page's requests with it, so the simulator, the stepping sessions and the
//! checker all run on the learner's machine and the page never freezes.
//!
//! Built by `scripts/build-static.sh` (cargo for wasm32-unknown-unknown, then wasm-bindgen).

use wasm_bindgen::prelude::*;

/// One engine: its sessions and nothing else (every page has its own).
#[wasm_bindgen]
pub struct Engine {
    state: distsync_web::AppState,
}

/// One answer: status, content type and body text.
#[wasm_bindgen(getter_with_clone)]
pub struct Answer {
    /// The HTTP status the server would have answered.
    pub status: u16,
    /// Its content type.
    pub content_type: String,
    /// Its body (JSON, NDJSON, SVG, TOML or HTML text).
    pub body: String,
}

#[wasm_bindgen]
impl Engine {
    /// An engine with no session; `seed` (32 bytes from `crypto.getRandomValues`) seeds the
    /// session ids.
    #[wasm_bindgen(constructor)]
    pub fn new(seed: &[u8]) -> Result<Engine, JsError> {
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| JsError::new("the engine's seed must be 32 bytes"))?;
        Ok(Engine {
            state: distsync_web::AppState::new(None, seed),
        })
    }

    /// Answers one request, as `distsync web` would: `path` without its query string, `query`
    /// without its `?`, `body` as text (empty for none).
    pub fn handle(&self, method: &str, path: &str, query: &str, body: &str) -> Answer {
        let r = distsync_web::handle(
            &self.state,
            &distsync_web::Request {
                method,
                path,
                query,
                body: body.as_bytes(),
                client: "page",
            },
        );
        Answer {
            status: r.status.as_u16(),
            content_type: r.content_type.to_string(),
            body: String::from_utf8_lossy(&r.body).into_owned(),
        }
    }
}
