//! `distsync web`: an interactive page where a learner steps through a run, chooses what happens
//! next, injects faults and steps back.
//!
//! The page (HTML, CSS and JavaScript embedded in the binary, nothing fetched from the internet)
//! asks a small JSON API around the project's own simulator: every decision about what happens
//! next is taken by `distsync_sim::session::Session`, the page only draws and asks. The API is
//! [`handle`](fn@crate::handle), a plain function of the request; it answers over HTTP ([`Server`], feature
//! `server`) or inside the browser, compiled to WebAssembly by crates/web-wasm for the static
//! build (`scripts/build-static.sh`).
//!
//! ```no_run
//! # #[cfg(feature = "server")] {
//! let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
//! println!("{}", server.url());
//! server.wait();
//! # }
//! ```
//!
//! The JSON API is described in `docs/web.md`.

mod api;
mod assets;
pub mod cause;
pub mod check_api;
pub mod check_config;
pub mod compare;
pub mod examples;
pub mod handle;
pub mod lessons;
pub mod quiz;
mod report_view;
pub mod rules;
#[cfg(feature = "server")]
mod server;
mod session_api;
pub mod sessions;

#[cfg(feature = "server")]
use std::net::SocketAddr;
#[cfg(feature = "server")]
use std::sync::Arc;
#[cfg(feature = "server")]
use std::thread::JoinHandle;

pub use api::{AppState, Response};
pub use handle::{handle, Request};
#[cfg(feature = "server")]
pub use server::{content_security_policy, exposure, router, CLIENT_HEADER};
pub use session_api::{MAX_SESSION_PROCESSES, MAX_SESSION_STEPS, MAX_VIEW_LOG_LINES};
pub use sessions::{IDLE_CLOSE, MAX_CLIENT_SESSIONS, MAX_SESSIONS};

/// The most checks (`POST /api/check`) running at once; another is answered 503 "busy".
pub const MAX_CHECKS: usize = 2;

/// The largest request body the server reads (a scenario, or the choices of a shared run).
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// A scenario the page opens at start (the `SCENARIO` argument of `distsync web`).
#[derive(Clone, Debug)]
pub struct Initial {
    /// The TOML text.
    pub toml: String,
    /// Its file name, for error messages.
    pub origin: String,
}

/// Why the server could not start.
#[cfg(feature = "server")]
#[derive(Debug)]
pub enum StartError {
    /// The address could not be bound.
    Bind(SocketAddr, std::io::Error),
    /// The runtime could not be built.
    Runtime(std::io::Error),
}

#[cfg(feature = "server")]
impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Bind(addr, e) => write!(f, "--listen {addr}: cannot listen there: {e}"),
            StartError::Runtime(e) => write!(f, "cannot start the server's runtime: {e}"),
        }
    }
}

#[cfg(feature = "server")]
impl std::error::Error for StartError {}

/// A running server: its address, and the thread serving it.
#[cfg(feature = "server")]
pub struct Server {
    addr: SocketAddr,
    thread: JoinHandle<()>,
}

#[cfg(feature = "server")]
impl Server {
    /// Binds `addr` (port 0 picks a free port) and serves the page and the API on a thread of
    /// its own, until the process ends.
    pub fn start(addr: SocketAddr, initial: Option<Initial>) -> Result<Server, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
            .map_err(StartError::Runtime)?;
        let std_listener =
            std::net::TcpListener::bind(addr).map_err(|e| StartError::Bind(addr, e))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| StartError::Bind(addr, e))?;
        let local = std_listener
            .local_addr()
            .map_err(|e| StartError::Bind(addr, e))?;
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).map_err(|e| {
            StartError::Runtime(std::io::Error::other(format!(
                "no randomness for session ids: {e}"
            )))
        })?;
        let state = Arc::new(api::AppState::new(initial, seed));
        let thread = std::thread::Builder::new()
            .name("distsync-web".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(std_listener)
                        .expect("a bound non-blocking listener");
                    // An accept error on one connection is logged by axum and serving goes on;
                    // `serve` returns only if the listener itself fails.
                    if let Err(e) = axum::serve(listener, router(state, local)).await {
                        eprintln!("error: the web server stopped: {e}");
                    }
                })
            })
            .map_err(StartError::Runtime)?;
        Ok(Server {
            addr: local,
            thread,
        })
    }

    /// The address actually bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL, `http://ADDR/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Blocks until the server stops (which it does only on a fatal listener error).
    pub fn wait(self) {
        let _ = self.thread.join();
    }
}
