//! The time axis of the space-time diagram: linear where things happen, shortened where nothing
//! does.
//!
//! Runs have bursts of activity separated by long quiet stretches (a timeout, a pause before a
//! recovery). Drawn linearly, the bursts shrink to a few pixels. Here the typical gap between
//! successive event times (the median gap) gets [`GAP_PX`] pixels, every gap is
//! drawn to that scale, except that a gap that would be wider than [`BREAK_OVER_PX`] is drawn
//! [`BREAK_PX`] wide and marked as a break on the axis. The whole is then stretched or squeezed
//! to lie between [`MIN_WIDTH`] and [`MAX_WIDTH`] pixels. Between two successive event times the
//! mapping is linear, so the order of events and the slope of each message stay truthful, and
//! tick labels give true times.

/// Pixels for the typical gap between successive event times.
pub(crate) const GAP_PX: f64 = 28.0;
/// A gap wider than this (at the typical scale) is shortened.
pub(crate) const BREAK_OVER_PX: f64 = 8.0 * GAP_PX;
/// The width of a shortened gap.
pub(crate) const BREAK_PX: f64 = 84.0;
/// The narrowest plot.
pub(crate) const MIN_WIDTH: f64 = 720.0;
/// The widest plot.
pub(crate) const MAX_WIDTH: f64 = 60_000.0;

/// A piecewise-linear map from true time to pixels.
#[derive(Clone, Debug)]
pub(crate) struct TimeScale {
    /// (time, x) at every event time and at both ends of the window; times rise strictly.
    knots: Vec<(u64, f64)>,
    /// The shortened gaps, as (from, to) times.
    pub breaks: Vec<(u64, u64)>,
    /// The stretches drawn to scale, as (from, to) times, between the breaks.
    pub runs: Vec<(u64, u64)>,
    /// Pixels per nanosecond inside the runs.
    pub px_per_ns: f64,
    /// The plot's width in pixels.
    pub width: f64,
}

impl TimeScale {
    /// The scale for the window `[t0, t1]` (with `t1 > t0`) holding events at `times` (sorted,
    /// possibly repeated, all inside the window).
    pub(crate) fn new(t0: u64, t1: u64, times: impl Iterator<Item = u64>) -> TimeScale {
        let t1 = t1.max(t0 + 1);
        let mut ts: Vec<u64> = Vec::new();
        ts.push(t0);
        for t in times {
            if t > *ts.last().unwrap_or(&t0) && t < t1 {
                ts.push(t);
            }
        }
        ts.push(t1);
        let gaps: Vec<u64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
        let mut sorted = gaps.clone();
        sorted.sort_unstable();
        let typical = sorted[sorted.len() / 2].max(1) as f64;
        let mut px_per_ns = GAP_PX / typical;
        let mut widths: Vec<f64> = Vec::with_capacity(gaps.len());
        let mut shortened: Vec<bool> = Vec::with_capacity(gaps.len());
        for &g in &gaps {
            let w = g as f64 * px_per_ns;
            let short = w > BREAK_OVER_PX;
            widths.push(if short { BREAK_PX } else { w });
            shortened.push(short);
        }
        let total: f64 = widths.iter().sum();
        let factor = if total < MIN_WIDTH {
            MIN_WIDTH / total
        } else if total > MAX_WIDTH {
            MAX_WIDTH / total
        } else {
            1.0
        };
        px_per_ns *= factor;
        let mut knots = Vec::with_capacity(ts.len());
        let mut x = 0.0;
        knots.push((ts[0], 0.0));
        let (mut breaks, mut runs) = (Vec::new(), Vec::new());
        let mut run_start = ts[0];
        for (i, w) in widths.iter().enumerate() {
            x += w * factor;
            knots.push((ts[i + 1], x));
            if shortened[i] {
                runs.push((run_start, ts[i]));
                breaks.push((ts[i], ts[i + 1]));
                run_start = ts[i + 1];
            }
        }
        runs.push((run_start, t1));
        TimeScale {
            knots,
            breaks,
            runs,
            px_per_ns,
            width: x,
        }
    }

    /// The x offset of time `t` (clamped to the window).
    pub(crate) fn x(&self, t: u64) -> f64 {
        let i = self.knots.partition_point(|&(kt, _)| kt <= t);
        if i == 0 {
            return 0.0;
        }
        if i == self.knots.len() {
            return self.width;
        }
        let (ta, xa) = self.knots[i - 1];
        let (tb, xb) = self.knots[i];
        xa + (xb - xa) * ((t - ta) as f64 / (tb - ta) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn quiet_stretches_are_shortened() {
        // Events 1 ms apart, then 10 ms of nothing, then 85 ms of nothing.
        let times = [1, 2, 3, 4, 14, 15, 100, 101].map(|t| t * MS);
        let s = TimeScale::new(0, 101 * MS, times.into_iter());
        assert_eq!(s.breaks, vec![(4 * MS, 14 * MS), (15 * MS, 100 * MS)]);
        assert_eq!(
            s.runs,
            vec![(0, 4 * MS), (14 * MS, 15 * MS), (100 * MS, 101 * MS)]
        );
        // Every millisecond of activity gets the same room, a break a fixed one.
        let ms = s.x(2 * MS) - s.x(MS);
        assert!((s.x(15 * MS) - s.x(14 * MS) - ms).abs() < 1e-9);
        let b1 = s.x(14 * MS) - s.x(4 * MS);
        let b2 = s.x(100 * MS) - s.x(15 * MS);
        assert!((b1 - b2).abs() < 1e-9 && b1 < 4.0 * ms);
        assert!((s.width - MIN_WIDTH).abs() < 1e-9);
        assert_eq!(s.x(101 * MS), s.width);
        assert_eq!(s.x(0), 0.0);
        // Monotone, and linear inside a gap.
        assert!(s.x(50 * MS) > s.x(15 * MS) && s.x(50 * MS) < s.x(100 * MS));
        assert!((s.x(MS + MS / 2) - (s.x(MS) + ms / 2.0)).abs() < 1e-9);
        // A gap of 7 typical gaps is not shortened.
        let s = TimeScale::new(
            0,
            17 * MS,
            [1, 2, 3, 10, 11, 12].map(|t| t * MS).into_iter(),
        );
        assert!(s.breaks.is_empty(), "{:?}", s.breaks);
    }

    #[test]
    fn evenly_spread_events_are_linear_and_widths_are_bounded() {
        let s = TimeScale::new(0, 100 * MS, (0..=100).map(|t| t * MS));
        assert!(s.breaks.is_empty());
        assert!((s.x(50 * MS) - s.width / 2.0).abs() < 1e-6);
        assert!((s.width - 100.0 * GAP_PX).abs() < 1e-6);
        let s = TimeScale::new(0, 10_000_000 * MS, (0..=10_000_000).map(|t| t * MS));
        assert!((s.width / MAX_WIDTH - 1.0).abs() < 1e-9, "{}", s.width);
        let s = TimeScale::new(5, 5, std::iter::empty());
        assert!((s.width - MIN_WIDTH).abs() < 1e-9);
        assert_eq!(s.x(4), 0.0);
    }
}
