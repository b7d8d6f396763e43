//! The distsync network runtime: a cluster of OS processes over TCP that serves distributed
//! locks and leader election with the same algorithm files the simulator runs, unchanged.
//!
//! Modules, one job each (after tokio's mini-redis):
//! - [`config`]: the cluster file;
//! - [`frame`]: length-prefixed frames with a size bound;
//! - [`auth`]: the HMAC-SHA256 handshake and per-frame MACs;
//! - [`wire`]: the messages inside frames;
//! - [`connection`]: one authenticated TCP connection;
//! - [`machine`]: the algorithms behind an object-safe interface;
//! - `peer`: links to the other nodes (connect, reconnect, heartbeats);
//! - `timers`: the algorithms' timers as deadlines keyed by name with generations;
//! - `node`: the node runtime (events in, algorithm handlers, effects out; views and failover);
//! - `client`: the client side of the client protocol;
//! - `shutdown`: clean stop on SIGTERM and ctrl-c.
//!
//! docs/net.md describes the protocol, the failure handling and its limits.

pub mod auth;
pub mod config;
pub mod connection;
pub mod frame;
pub mod machine;
pub mod wire;
