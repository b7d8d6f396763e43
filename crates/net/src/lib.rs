//! The distsync network runtime: a cluster of OS processes over TCP that serves distributed
//! locks and leader election with the same algorithm files the simulator runs, unchanged.
//!
//! Modules, one job each (after tokio's mini-redis):
//! - [`config`]: the cluster file;
//! - [`files`]: private files written safely (no links followed, renamed into place, synced);
//! - [`frame`]: length-prefixed frames with a size bound;
//! - [`auth`]: the Noise handshake (pre-shared key per role) and encrypted frames;
//! - [`wire`]: the messages inside frames;
//! - [`connection`]: one authenticated connection;
//! - [`transport`]: TCP, or a Unix domain socket to a node on this machine;
//! - [`machine`]: the algorithms behind an object-safe interface;
//! - `peer`: links to the other nodes (connect, reconnect, heartbeats);
//! - `timers`: the algorithms' timers as deadlines keyed by name with generations;
//! - `node`: the node runtime (events in, algorithm handlers, effects out; views and failover);
//! - [`store`]: the replicated bank the store's multicast keeps at every node;
//! - [`persist`]: the epoch high-water mark each node keeps on disk;
//! - [`colocated`]: central's coordinator and a competing client in one node;
//! - `client`: the client side of the client protocol (the `lock` and `leader` verbs);
//! - [`lock_client`]: a persistent lock client for programs (many locks, one connection);
//! - `shutdown`: clean stop on SIGTERM and ctrl-c.
//!
//! docs/net.md describes the protocol, the failure handling and its limits.

pub mod auth;
pub mod client;
pub mod colocated;
pub mod config;
pub mod connection;
pub mod files;
pub mod frame;
pub mod keys;
pub mod lease;
pub mod local;
pub mod lock_client;
pub mod machine;
pub mod node;
mod peer;
pub mod persist;
pub mod shutdown;
pub mod store;
pub mod systemd;
pub mod timers;
pub mod transport;
pub mod wire;

pub use config::{
    ClockSettings, Cluster, ClusterFile, ConfigError, LockSettings, NodeEntry, StoreSettings,
    Timeouts,
};
pub use node::run;
pub use peer::{MAX_PREAUTH, MAX_PREAUTH_PER_ADDR};

/// The tokio the runtime uses, for callers that drive it (the CLI).
pub use tokio;

/// Logs to stderr through `tracing`, filtered by `RUST_LOG` (default: `info`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// A multi-threaded tokio runtime for a node or a client.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// The runtime a node runs on: one thread. A node's work is one event loop fed by its
/// connections' tasks; on one thread a request's hand-offs between those tasks are plain queue
/// operations instead of cross-thread wake-ups (an eventfd write and a futex each), which
/// measured as the largest cost of a lock round trip on loopback (docs/net.md, "Benchmark").
pub fn node_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
