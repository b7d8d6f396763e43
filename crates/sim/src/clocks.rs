//! Physical clocks in the simulator: each node's clock has an offset and a drift rate, and is
//! adjusted the way real systems do it: a step, or a slew that never runs the clock backwards.
//!
//! The simulator keeps true time for measurement. When a scenario has a `[clocks]` section, true
//! time and every clock count from an epoch of 1000 s, so that a clock set 50 ms behind still
//! reads a positive time at the start; without one, every clock is exactly true time.

pub use crate::scenario::{Adjust, EPOCH_NS};
use crate::scenario::{ClocksSpec, NumberSpec, SignedSpec};
use distsync_core::{NodeId, Peers, Time};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One node's clock.
#[derive(Clone, Debug)]
pub(crate) struct LocalClock {
    /// True time (ns since the run started) of the last re-basing.
    base_true: u64,
    /// The reading at `base_true`, in ns since the epoch of the run.
    base_local: f64,
    /// 1 + drift.
    rate: f64,
    /// Extra rate while a slew is under way (signed fraction), and until when.
    slew: f64,
    slew_until: u64,
}

impl LocalClock {
    fn new(epoch: u64, offset_ns: i64, drift_ppm: f64) -> LocalClock {
        LocalClock {
            base_true: 0,
            base_local: epoch as f64 + offset_ns as f64,
            rate: 1.0 + drift_ppm * 1e-6,
            slew: 0.0,
            slew_until: 0,
        }
    }

    /// The reading at true time `t` (ns since the run started), in ns since the epoch.
    pub(crate) fn read_at(&self, t: u64) -> f64 {
        let dt = t.saturating_sub(self.base_true) as f64;
        let slewed = t.min(self.slew_until).saturating_sub(self.base_true) as f64;
        self.base_local + dt * self.rate + slewed * self.slew
    }

    /// How much true time passes while this clock advances `local_ns`, at its current rate.
    pub(crate) fn true_span(&self, now: u64, local_ns: u64) -> u64 {
        let rate = if now < self.slew_until {
            self.rate + self.slew
        } else {
            self.rate
        };
        (local_ns as f64 / rate).round() as u64
    }

    /// Applies a correction of `delta_ns` at true time `now`.
    pub(crate) fn adjust(&mut self, now: u64, delta_ns: i64, mode: Adjust, slew_ppm: f64) {
        self.base_local = self.read_at(now);
        self.base_true = now;
        self.slew = 0.0;
        self.slew_until = now;
        match mode {
            Adjust::Step => self.base_local += delta_ns as f64,
            Adjust::Slew => {
                let rate = slew_ppm * 1e-6;
                self.slew = rate * (delta_ns as f64).signum();
                self.slew_until = now + ((delta_ns.unsigned_abs() as f64) / rate).round() as u64;
            }
        }
    }
}

/// Every node's clock, and how to adjust them.
#[derive(Clone, Debug)]
pub(crate) struct Clocks {
    pub(crate) epoch: u64,
    /// How many nodes there are.
    n: usize,
    /// Each node's clock; empty while every clock is [`PERFECT`] (no `[clocks]` table, nothing
    /// adjusted yet).
    clocks: Vec<LocalClock>,
    pub(crate) adjust: Adjust,
    pub(crate) slew_ppm: f64,
    /// Every clock still reads true time exactly (no `[clocks]` table, no adjustment yet): then
    /// a reading is true time itself, with no floating point on the simulator's hot path.
    exact: bool,
}

/// A clock that reads true time: what every node has without a `[clocks]` table.
const PERFECT: LocalClock = LocalClock {
    base_true: 0,
    base_local: 0.0,
    rate: 1.0,
    slew: 0.0,
    slew_until: 0,
};

/// Below 2^53 ns (104 days) an integer survives the round trip through `f64` exactly, so an
/// exact clock's reading through [`LocalClock::read_at`] is the true time itself.
const EXACT_F64: u64 = 1 << 53;

fn sample_signed<R: Rng>(spec: &SignedSpec, rng: &mut R) -> i64 {
    match *spec {
        SignedSpec::Fixed(v) => v,
        SignedSpec::Uniform(lo, hi) => rng.gen_range(lo..=hi),
    }
}

fn sample_number<R: Rng>(spec: &NumberSpec, rng: &mut R) -> f64 {
    match *spec {
        NumberSpec::Fixed(v) => v,
        NumberSpec::Uniform(lo, hi) => {
            if lo == hi {
                lo
            } else {
                rng.gen_range(lo..=hi)
            }
        }
    }
}

impl Clocks {
    /// Perfect clocks: every reading is true time.
    pub(crate) fn perfect(n: usize) -> Clocks {
        Clocks {
            epoch: 0,
            n,
            // Filled in at the first adjustment: until then every clock is `PERFECT` (40 bytes
            // a node that a million-process run never reads).
            clocks: Vec::new(),
            adjust: Adjust::Step,
            slew_ppm: 500.0,
            exact: true,
        }
    }

    /// Clocks drawn from the scenario's `[clocks]` section with the run's generator.
    pub(crate) fn from_spec<R: Rng>(spec: &ClocksSpec, peers: &Peers, rng: &mut R) -> Clocks {
        let clocks = peers
            .ids()
            .iter()
            .map(|id| {
                let own = spec.node.iter().find(|c| c.id == *id);
                let offset = match own.and_then(|c| c.offset) {
                    Some(v) => v,
                    None => sample_signed(&spec.offset, rng),
                };
                let drift = match own.and_then(|c| c.drift_ppm) {
                    Some(v) => v,
                    None => sample_number(&spec.drift_ppm, rng),
                };
                LocalClock::new(EPOCH_NS, offset, drift)
            })
            .collect();
        Clocks {
            epoch: EPOCH_NS,
            n: peers.len(),
            clocks,
            adjust: spec.adjust,
            slew_ppm: spec.slew_ppm,
            exact: false,
        }
    }

    /// Node at `pos` reads its clock at true time `t`.
    #[inline]
    pub(crate) fn read(&self, pos: usize, t: Time) -> Time {
        if self.exact && t.as_nanos() < EXACT_F64 {
            return t;
        }
        Time(self.clock(pos).read_at(t.as_nanos()).max(0.0).round() as u64)
    }

    /// How much true time passes, from true time `now`, while the clock at `pos` advances
    /// `local_ns` (a timer set on the local clock).
    #[inline]
    pub(crate) fn true_span(&self, pos: usize, now: u64, local_ns: u64) -> u64 {
        if self.exact && local_ns < EXACT_F64 {
            return local_ns;
        }
        self.clock(pos).true_span(now, local_ns)
    }

    /// Corrects the clock at `pos` by `delta_ns` at true time `now`, by a step or a slew as
    /// the scenario says.
    pub(crate) fn adjust(&mut self, pos: usize, now: u64, delta_ns: i64) {
        self.exact = false;
        if self.clocks.is_empty() {
            self.clocks = vec![PERFECT; self.n];
        }
        let (mode, slew_ppm) = (self.adjust, self.slew_ppm);
        self.clocks[pos].adjust(now, delta_ns, mode, slew_ppm);
    }

    /// How far the clock at `pos` is from true time at `t` (reading minus true time), in ns.
    pub(crate) fn error(&self, pos: usize, t: Time) -> f64 {
        self.clock(pos).read_at(t.as_nanos()) - (self.epoch + t.as_nanos()) as f64
    }

    /// The clock at `pos`.
    #[inline]
    fn clock(&self, pos: usize) -> &LocalClock {
        self.clocks.get(pos).unwrap_or(&PERFECT)
    }
}

/// A clock's state as a report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockReading {
    /// The node.
    pub node: NodeId,
    /// Its reading minus true time, in ns.
    pub error_ns: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_accumulates_and_a_step_corrects_it() {
        let mut c = LocalClock::new(EPOCH_NS, -5_000_000, 100.0);
        // After 10 s of true time a 100 ppm clock has gained 1 ms on its -5 ms start.
        let t = 10_000_000_000;
        assert_eq!(c.read_at(t) - (EPOCH_NS + t) as f64, -4_000_000.0);
        c.adjust(t, 4_000_000, Adjust::Step, 500.0);
        assert_eq!(c.read_at(t) - (EPOCH_NS + t) as f64, 0.0);
    }

    #[test]
    fn a_slew_corrects_gradually_and_never_runs_backwards() {
        let mut c = LocalClock::new(EPOCH_NS, 10_000_000, 0.0);
        c.adjust(0, -10_000_000, Adjust::Slew, 500.0);
        // 10 ms at 500 ppm takes 20 s of true time.
        let mut last = c.read_at(0);
        for step in 1..=30 {
            let t = step * 1_000_000_000;
            let now = c.read_at(t);
            assert!(now > last, "the clock never runs backwards");
            last = now;
        }
        assert!((c.read_at(20_000_000_000) - (EPOCH_NS + 20_000_000_000) as f64).abs() < 1.0);
        assert!((c.read_at(30_000_000_000) - (EPOCH_NS + 30_000_000_000) as f64).abs() < 1.0);
    }

    #[test]
    fn exact_clocks_read_true_time_as_the_float_path_does() {
        let mut c = Clocks::perfect(2);
        for t in [
            0,
            1,
            999_999_999,
            3_600_000_000_123,
            EXACT_F64 - 1,
            EXACT_F64,
            u64::MAX,
        ] {
            let float = Time(c.clock(0).read_at(t).max(0.0).round() as u64);
            assert_eq!(c.read(0, Time(t)), float, "t = {t}");
            let span = c.clock(1).true_span(t, t);
            assert_eq!(c.true_span(1, t, t), span, "t = {t}");
        }
        // An adjustment ends the shortcut for every clock.
        c.adjust(0, 1_000, 5_000);
        assert_eq!(c.read(0, Time(1_000)), Time(6_000));
        assert_eq!(c.read(1, Time(1_000)), Time(1_000));
    }

    #[test]
    fn timers_run_on_the_local_clock() {
        let c = LocalClock::new(EPOCH_NS, 0, 1000.0); // runs 0.1% fast
        assert_eq!(c.true_span(0, 1_001_000), 1_000_000);
    }
}
