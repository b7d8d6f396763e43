//! The clock-synchronization family: what the runtime asks, what the algorithm reports, and what
//! monitors may observe.
//!
//! The runtime gives every process the [`Input::Sync`] input ("synchronize now") once per
//! `sync_interval`, and on scripted `sync = ID` events. A process never sets its own clock: it
//! reports [`Output::Adjust`] ("adjust my clock by `delta_ns`") and the runtime applies the
//! correction, by a step or a slew as its configuration says (the simulator's `[clocks] adjust`).
//! Algorithms read their clock only through `ctx.now()`.
//!
//! Parameters (scenario fields, durations with units):
//! - `server`: Cristian's time server (default: the lowest id).
//! - `samples`: how many request/reply exchanges a Cristian client makes per synchronization; it
//!   keeps the one with the smallest round trip (default 4).
//! - `min_delay`: the smallest one-way message delay the algorithm may assume (Cristian's "min",
//!   default 0).
//! - `max_drift_ppm`: the bound ρ on any clock's drift rate that error bounds account for
//!   (default 100 ppm, a common quartz specification).
//! - `threshold`: how far from the median a Berkeley clock may be and still count in the average
//!   (default 1s).
//! - `master_election`: the election algorithm (a registry name) that chooses Berkeley's master
//!   (default `"bully"`).
//! - `strata`: NTP's servers by stratum, `[[stratum-1 ids], [stratum-2 ids], ...]`; every node not
//!   listed is a client of the last level (default: the lowest id is the one stratum-1 server).
//! - `answer_timeout`: how long a process waits for a reply before giving up on it (default
//!   100ms for this family).

use crate::{Algorithm, NodeId, ParamError, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the runtime asks of a clock-synchronization process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// Synchronize now (a client asks its servers, a Berkeley master polls; others may ignore
    /// it, or use it to notice that a master fell silent).
    Sync,
}

/// What a clock-synchronization process reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Output {
    /// Correct this process's clock by `delta_ns` (signed). The runtime applies it.
    Adjust {
        /// The correction, in nanoseconds.
        delta_ns: i64,
        /// The algorithm's bound on the remaining error once the correction is made, relative
        /// to `reference` when one is named, if the algorithm computes one.
        bound_ns: Option<u64>,
        /// The clock the correction aims at (Cristian's time server), if there is one.
        reference: Option<NodeId>,
    },
    /// A synchronization round this process made or led is complete: the clocks in `used`
    /// counted, those in `ignored` were left out (a Berkeley clock beyond the threshold from the
    /// median, an NTP falseticker).
    Round {
        /// The clocks that counted.
        used: Vec<NodeId>,
        /// The clocks that were left out.
        ignored: Vec<NodeId>,
    },
    /// NTP: the servers' correctness intervals do not let a majority agree on the time, so the
    /// clock is left alone rather than following a minority.
    NoMajority {
        /// The servers that answered.
        servers: Vec<NodeId>,
        /// The most of them whose intervals share a point.
        largest_agreement: u32,
    },
    /// Berkeley: this process now takes `0` as its master (the election's result).
    Master(NodeId),
}

/// A clock-synchronization algorithm, as monitors and the harness see it.
pub trait ClockSync: Algorithm + Process<Input = Input, Output = Output> {
    /// The processes whose clocks the algorithm adjusts. Servers whose own clocks are the
    /// reference (Cristian's time server, NTP's stratum-1 servers) are not among them. Skew and
    /// error are measured over these.
    fn clients(peers: &Peers, params: &Params) -> Vec<NodeId> {
        let _ = params;
        peers.ids().to_vec()
    }

    /// The stratum this process works at now (NTP); `None` where strata do not apply.
    fn stratum(&self) -> Option<u8> {
        None
    }
}

/// Samples per Cristian synchronization when `samples` is not given.
pub const DEFAULT_SAMPLES: u32 = 4;
/// The drift bound ρ when `max_drift_ppm` is not given.
pub const DEFAULT_MAX_DRIFT_PPM: f64 = 100.0;
/// Berkeley's threshold from the median when `threshold` is not given.
pub const DEFAULT_THRESHOLD: Duration = Duration::from_secs(1);
/// How long to wait for a reply when `answer_timeout` is not given.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_millis(100);

/// Cristian's time server: `server`, else the lowest id.
pub fn server(peers: &Peers, params: &Params) -> NodeId {
    params.server.unwrap_or_else(|| {
        *peers
            .ids()
            .iter()
            .min()
            .expect("a membership is never empty")
    })
}

/// `samples`, else [`DEFAULT_SAMPLES`].
pub fn samples(params: &Params) -> u32 {
    params.samples.unwrap_or(DEFAULT_SAMPLES)
}

/// `min_delay` in nanoseconds, else 0.
pub fn min_delay_ns(params: &Params) -> u64 {
    params.min_delay.map_or(0, |d| d.as_nanos() as u64)
}

/// ρ as a fraction (`max_drift_ppm` / 10^6).
pub fn max_drift(params: &Params) -> f64 {
    params.max_drift_ppm.unwrap_or(DEFAULT_MAX_DRIFT_PPM) * 1e-6
}

/// σ as a fraction (`slew_ppm` / 10^6): the extra rate of a clock slewing a correction, 0 when
/// corrections are steps.
pub fn slew_rate(params: &Params) -> f64 {
    params.slew_ppm.unwrap_or(0.0) * 1e-6
}

/// Berkeley's threshold in nanoseconds.
pub fn threshold_ns(params: &Params) -> u64 {
    params.threshold.unwrap_or(DEFAULT_THRESHOLD).as_nanos() as u64
}

/// How long to wait for a reply: `answer_timeout`, else [`DEFAULT_REPLY_TIMEOUT`].
pub fn reply_timeout(params: &Params) -> Duration {
    params.answer_timeout.unwrap_or(DEFAULT_REPLY_TIMEOUT)
}

/// The checks every clock-synchronization algorithm makes on the fields it shares.
pub fn validate(params: &Params, peers: &Peers) -> Result<(), ParamError> {
    if let Some(s) = params.server {
        if !peers.contains(s) {
            return Err(ParamError::new(
                "server",
                format!("node {s} is not one of the scenario's node ids"),
            ));
        }
    }
    if params.samples == Some(0) {
        return Err(ParamError::new(
            "samples",
            "a client needs at least 1 sample per synchronization",
        ));
    }
    if let Some(p) = params.max_drift_ppm {
        if !(p.is_finite() && (0.0..100_000.0).contains(&p)) {
            return Err(ParamError::new(
                "max_drift_ppm",
                format!("expected a drift bound between 0 and 100000 ppm, got {p}"),
            ));
        }
    }
    if params.answer_timeout == Some(Duration::ZERO) {
        return Err(ParamError::new(
            "answer_timeout",
            "must be longer than zero (write it with a unit, like \"100ms\")",
        ));
    }
    if params.threshold == Some(Duration::ZERO) {
        return Err(ParamError::new(
            "threshold",
            "must be longer than zero, or every clock but the median is left out",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_field_names() {
        let peers = Peers::new([4, 2, 7].map(NodeId).to_vec()).unwrap();
        let mut params = Params::default();
        assert_eq!(server(&peers, &params), NodeId(2));
        assert_eq!(samples(&params), DEFAULT_SAMPLES);
        assert_eq!(min_delay_ns(&params), 0);
        assert!((max_drift(&params) - 100e-6).abs() < 1e-15);
        assert!(validate(&params, &peers).is_ok());
        params.server = Some(NodeId(9));
        assert_eq!(validate(&params, &peers).unwrap_err().field, "server");
        params.server = None;
        params.samples = Some(0);
        assert_eq!(validate(&params, &peers).unwrap_err().field, "samples");
        params.samples = None;
        params.max_drift_ppm = Some(-1.0);
        assert_eq!(
            validate(&params, &peers).unwrap_err().field,
            "max_drift_ppm"
        );
    }

    #[test]
    fn outputs_serialize_as_the_trace_shows_them() {
        let o = Output::Adjust {
            delta_ns: -5,
            bound_ns: Some(3),
            reference: Some(NodeId(0)),
        };
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            "{\"Adjust\":{\"delta_ns\":-5,\"bound_ns\":3,\"reference\":0}}"
        );
        assert_eq!(serde_json::to_string(&Input::Sync).unwrap(), "\"Sync\"");
    }
}
