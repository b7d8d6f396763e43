//! Global snapshots: the Chandy-Lamport algorithm, over a bank application whose money moves
//! between processes.

pub mod bank;
pub mod chandy_lamport;

pub use bank::Bank;
pub use chandy_lamport::ChandyLamport;
