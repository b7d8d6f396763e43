//! A distribution of durations, as reports give it.

use serde::{Deserialize, Serialize};

/// A distribution of durations in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// How many samples.
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// The median (nearest rank).
    pub p50: u64,
    /// The 99th percentile (nearest rank).
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl Stats {
    /// The statistics of `samples` (sorted in place).
    pub fn of(samples: &mut [u64]) -> Stats {
        if samples.is_empty() {
            return Stats::default();
        }
        samples.sort_unstable();
        let rank = |q: f64| {
            samples[((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Stats {
            count: samples.len() as u64,
            mean: samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len() as f64,
            p50: rank(0.50),
            p99: rank(0.99),
            max: *samples.last().expect("non-empty"),
        }
    }
}
