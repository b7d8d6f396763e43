//! distsync's time service.
//!
//! Modules, sans-I/O first (no sockets, no clock reads), then the thin tokio layer:
//! - [`packet`]: the RFC 5905 / RFC 4330 NTP header, its timestamp formats, a strict decoder;
//! - [`auth`]: RFC 5905 symmetric-key MACs, keys from a chrony key file;
//! - [`server`]: what an NTP server answers (or not) to a datagram, with rate limiting;
//! - [`client`]: a strict client's checks of a reply, its offset/delay/dispersion, the
//!   combination of several servers;
//! - [`vclock`]: a virtual clock (offset and rate over a monotonic base, step or slew);
//! - [`host`]: runs a clock-synchronization algorithm file's process, keeping its timers;
//! - [`serve`]: the NTP server over UDP (tokio), serving the system clock or a virtual clock
//!   disciplined from upstream servers;
//! - [`query`]: the NTP client over UDP (tokio): samples, checks, the combined estimate;
//! - [`rxstamp`]: kernel receive timestamps for both;
//! - [`cluster`]: Berkeley, Cristian or NTP among a cluster's nodes over UDP, with virtual
//!   clocks, and the status query that measures them;
//!
//! docs/time.md describes how to run it and what it does not do.

pub mod auth;
pub mod client;
pub mod cluster;
pub mod host;
pub mod packet;
pub mod query;
pub mod rxstamp;
pub mod serve;
pub mod server;
pub mod vclock;
