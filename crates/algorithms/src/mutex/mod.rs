//! Mutual-exclusion algorithms, one file each.

pub mod central;
pub mod lamport;
pub mod ricart_agrawala;

pub use central::Central;
pub use lamport::LamportMutex;
pub use ricart_agrawala::RicartAgrawala;
