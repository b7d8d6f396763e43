//! The multicast family: the application multicasts a payload to every process, each process
//! (the sender too) delivers it; what monitors may observe.
//!
//! A multicast goes to all processes of the membership (a broadcast). The sender's own copy is
//! delivered locally, without a message ("self-delivery is local", ORACLES.md), but no earlier
//! than the algorithm's ordering allows.

use crate::{Algorithm, NodeId, Process};
use serde::{Deserialize, Serialize};

/// What the application asks of a multicast process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// Multicast this payload (an id the application gives, unique in the run).
    Multicast(u64),
}

/// What a multicast process reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Output {
    /// The payload `payload`, multicast by `origin`, is delivered to the application here.
    Deliver {
        /// The process that multicast it.
        origin: NodeId,
        /// What it multicast.
        payload: u64,
    },
}

/// An ordering property of deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Two multicasts of one process are delivered everywhere in the order it made them.
    Fifo,
    /// No multicast is delivered before one that happened before it.
    Causal,
    /// Every process delivers the multicasts in the same order.
    Total,
}

/// A multicast algorithm, as monitors and workloads see it.
pub trait Multicast: Algorithm + Process<Input = Input, Output = Output> {
    /// How many multicasts this process has made (inputs it has acted on).
    fn multicasts(&self) -> u64;

    /// The ordering properties the algorithm promises (monitored unless a scenario says
    /// otherwise).
    fn guarantees() -> &'static [Order];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_outputs_and_orders_serialize_as_scenarios_and_traces_show_them() {
        assert_eq!(
            serde_json::to_string(&Input::Multicast(7)).unwrap(),
            "{\"Multicast\":7}"
        );
        assert_eq!(
            serde_json::to_string(&Output::Deliver {
                origin: NodeId(2),
                payload: 7
            })
            .unwrap(),
            "{\"Deliver\":{\"origin\":2,\"payload\":7}}"
        );
        assert_eq!(serde_json::to_string(&Order::Causal).unwrap(), "\"causal\"");
        assert!(Order::Fifo < Order::Total);
    }
}
