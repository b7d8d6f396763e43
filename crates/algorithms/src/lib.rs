//! The algorithms of distsync, each a sans-I/O [`Process`](distsync_core::Process) in a file of
//! its own, and a registry from kebab-case names to them.
//!
//! ```
//! use distsync_algorithms::registry::{self, Family};
//! let ra = registry::lookup("ricart-agrawala").unwrap();
//! assert_eq!(ra.family, Family::Mutex);
//! assert!(!ra.needs_fifo);
//! assert!(registry::lookup("lamport-mutex").unwrap().needs_fifo);
//! ```

pub mod clocks;
pub mod election;
pub mod link;
pub mod multicast;
pub mod mutex;
pub mod plug;
pub mod registry;
mod site_bits;
pub mod snapshot;
pub mod state;
pub mod validate;
