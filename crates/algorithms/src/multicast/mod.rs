//! Ordered multicast, one file per algorithm: FIFO broadcast (the baseline), causal broadcast
//! with vector clocks (Birman-Schiper-Stephenson), and totally ordered multicast with Lamport
//! clocks and acknowledgements.

pub mod causal_broadcast;
pub mod fifo_broadcast;
pub mod total_order;

pub use causal_broadcast::CausalBroadcast;
pub use fifo_broadcast::FifoBroadcast;
pub use total_order::TotalOrder;
