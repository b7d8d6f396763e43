//! distsync's time service.
//!
//! Modules, sans-I/O first (no sockets, no clock reads), then the thin tokio layer:
//! - [`packet`]: the RFC 5905 / RFC 4330 NTP header, its timestamp formats, a strict decoder;
//!
//! docs/time.md describes how to run it and what it does not do.

pub mod packet;
