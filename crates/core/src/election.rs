//! The leader-election family: what the application asks, what the algorithm reports, what
//! monitors may observe, and the timeouts election algorithms share.
//!
//! Every process starts knowing the initial coordinator (`coordinator = ID` in the scenario, by
//! default the highest id), as the notes assume ("P6 is the leader, as it has the highest
//! number"). An election starts when the application (or a failure detector) gives a process the
//! [`Input::Start`] input, and when a crashed process recovers: "after a failed process recovers,
//! it immediately begins execution of the same algorithm" (seed 000, bully). A process reports
//! every leader it settles on with [`Output::Leader`].
//!
//! Timeouts (scenario fields, durations with units):
//! - `answer_timeout` is the notes' T: how long a process waits for an answer (the bully's OK, a
//!   ring successor's acknowledgement) before it takes the silent process for crashed.
//! - `coordinator_timeout` is the notes' T': how long a process that has taken part in an
//!   election waits for the announcement of its result before it starts the election again.
//! - `heartbeat` and `heartbeat_timeout` drive the failure detector that watches the coordinator.

use crate::{Algorithm, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the application asks of an election process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// This process starts an election, e.g. because it noticed the coordinator is gone. A
    /// process already taking part in an election may ignore it: that election will report.
    Start,
}

/// What an election process reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Output {
    /// The process now believes this process is the leader (the coordinator).
    Leader(NodeId),
}

/// A leader-election algorithm, as monitors and failure detectors see it.
pub trait Election: Algorithm + Process<Input = Input, Output = Output> {
    /// The leader this process believes in now; `None` while it knows none (e.g. after it
    /// recovered and before an election told it).
    fn leader(&self) -> Option<NodeId>;

    /// True while the process takes part in an election whose result it has not yet learned.
    fn electing(&self) -> bool;

    /// True while this process holds messages it sent and does not yet know to have arrived
    /// (the ring link's unacknowledged messages, resent past a crashed successor after T).
    /// Monitors take an election for over only when no process is electing or pending.
    fn pending(&self) -> bool {
        false
    }

    /// Whether the algorithm promises to elect the highest live id (the validity monitor checks
    /// it only for algorithms that promise it).
    fn elects_highest() -> bool {
        true
    }

    /// Whether the algorithm sends along the ring (membership order) rather than to any process.
    fn uses_ring() -> bool {
        false
    }

    /// For algorithms that work in rounds (Peterson's): how many rounds this process completed
    /// as an active process in the last election it took part in. The largest over all
    /// processes is the number of rounds the election needed. `None` for other algorithms.
    fn rounds(&self) -> Option<u32> {
        None
    }
}

/// The default T: 10ms, ample for the simulator's default 1ms delay (T must exceed a round trip).
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_millis(10);
/// The default heartbeat period of the failure detector.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(10);

/// The coordinator every process knows at start: `coordinator` in the scenario, else the highest
/// id.
pub fn initial_coordinator(peers: &Peers, params: &Params) -> NodeId {
    params.coordinator.unwrap_or_else(|| peers.highest())
}

/// T: the scenario's `answer_timeout`, else [`DEFAULT_ANSWER_TIMEOUT`].
pub fn answer_timeout(params: &Params) -> Duration {
    params.answer_timeout.unwrap_or(DEFAULT_ANSWER_TIMEOUT)
}

/// T': the scenario's `coordinator_timeout`, else `default_rounds` times T. Each algorithm
/// chooses how many T's it needs by default (the bully waits for one more election, a ring
/// algorithm for laps around the whole ring).
pub fn coordinator_timeout(params: &Params, default_rounds: u32) -> Duration {
    params
        .coordinator_timeout
        .unwrap_or_else(|| answer_timeout(params) * default_rounds)
}

/// The heartbeat period: the scenario's `heartbeat`, else [`DEFAULT_HEARTBEAT`].
pub fn heartbeat(params: &Params) -> Duration {
    params.heartbeat.unwrap_or(DEFAULT_HEARTBEAT)
}

/// How long the coordinator may stay silent before it is suspected: the scenario's
/// `heartbeat_timeout`, else three heartbeat periods plus T.
pub fn heartbeat_timeout(params: &Params) -> Duration {
    params
        .heartbeat_timeout
        .unwrap_or_else(|| heartbeat(params) * 3 + answer_timeout(params))
}

/// The checks every election algorithm makes: the coordinator is a member, and the timeouts are
/// positive and fit together.
pub fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
    if let Some(c) = params.coordinator {
        if !peers.contains(c) {
            return Err(ParamError::new(
                "coordinator",
                format!("node {c} is not one of the scenario's node ids"),
            ));
        }
    }
    let positive = [
        ("answer_timeout", params.answer_timeout),
        ("coordinator_timeout", params.coordinator_timeout),
        ("heartbeat", params.heartbeat),
        ("heartbeat_timeout", params.heartbeat_timeout),
    ];
    for (field, value) in positive {
        if value == Some(Duration::ZERO) {
            return Err(ParamError::new(
                field,
                "must be longer than zero (write it with a unit, like \"10ms\")",
            ));
        }
    }
    if heartbeat_timeout(params) <= heartbeat(params) {
        return Err(ParamError::new(
            "heartbeat_timeout",
            format!(
                "must be longer than the heartbeat period ({:?}), or every coordinator is suspected",
                heartbeat(params)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let peers = Peers::new([3, 5, 0].map(NodeId).to_vec()).unwrap();
        let mut params = Params::default();
        assert_eq!(initial_coordinator(&peers, &params), NodeId(5));
        assert_eq!(answer_timeout(&params), DEFAULT_ANSWER_TIMEOUT);
        assert_eq!(coordinator_timeout(&params, 3), DEFAULT_ANSWER_TIMEOUT * 3);
        params.coordinator = Some(NodeId(0));
        params.answer_timeout = Some(Duration::from_millis(4));
        params.coordinator_timeout = Some(Duration::from_millis(7));
        assert_eq!(initial_coordinator(&peers, &params), NodeId(0));
        assert_eq!(coordinator_timeout(&params, 3), Duration::from_millis(7));
        assert!(validate(&params, &peers).is_ok());
    }

    #[test]
    fn bad_parameters_name_their_field() {
        let peers = Peers::range(3);
        let bad = |params: Params| validate(&params, &peers).unwrap_err().field;
        assert_eq!(
            bad(Params {
                coordinator: Some(NodeId(9)),
                ..Params::default()
            }),
            "coordinator"
        );
        assert_eq!(
            bad(Params {
                answer_timeout: Some(Duration::ZERO),
                ..Params::default()
            }),
            "answer_timeout"
        );
        assert_eq!(
            bad(Params {
                heartbeat: Some(Duration::from_millis(20)),
                heartbeat_timeout: Some(Duration::from_millis(20)),
                ..Params::default()
            }),
            "heartbeat_timeout"
        );
    }

    #[test]
    fn timeouts_are_scenario_fields_with_units() {
        let params: Params =
            toml::from_str("answer_timeout = \"5ms\"\nheartbeat_timeout = \"1s\"").unwrap();
        assert_eq!(params.answer_timeout, Some(Duration::from_millis(5)));
        assert_eq!(params.heartbeat_timeout, Some(Duration::from_secs(1)));
        assert_eq!(params.coordinator_timeout, None);
        let e = toml::from_str::<Params>("heartbeat = 10")
            .unwrap_err()
            .to_string();
        assert!(e.contains("add a unit"), "{e}");
    }

    #[test]
    fn inputs_and_outputs_serialize_as_the_trace_shows_them() {
        assert_eq!(serde_json::to_string(&Input::Start).unwrap(), "\"Start\"");
        assert_eq!(
            serde_json::to_string(&Output::Leader(NodeId(6))).unwrap(),
            "{\"Leader\":6}"
        );
    }
}
