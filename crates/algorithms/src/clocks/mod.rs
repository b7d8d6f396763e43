//! Physical clock synchronization, one file per algorithm: Cristian's time server, the Berkeley
//! algorithm's elected master averaging every clock, and NTP's on-wire exchange, clock filter and
//! intersection over several servers. Each reports corrections ("adjust my clock by X") that
//! the runtime applies; none sets a clock itself.

pub mod berkeley;
pub mod cristian;
pub mod ntp;

pub use berkeley::Berkeley;
pub use cristian::Cristian;
pub use ntp::Ntp;
