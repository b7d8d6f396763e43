//! A virtual clock: an offset and a rate over a base clock, corrected by steps or slews, that
//! never touches the system clock.
//!
//! The base is a monotonic reading in nanoseconds (the tokio layer uses `Instant` since start),
//! so the virtual clock never jumps when someone steps the system clock. The virtual reading is
//!
//! ```text
//! virtual(t) = anchor_virtual + (t - anchor_base) * (1 + drift) + the part of the slew applied
//! ```
//!
//! A slew applies a correction gradually at [`MAX_SLEW`] (500 ppm, ntpd's and the Linux
//! kernel's bound), so the clock keeps running forwards even while it is set back. A step
//! applies it at once; the NTP server steps only before it first serves synchronized time.
//! Pure: every method takes the base reading, nothing reads a clock.

/// The fastest a slew changes the clock's rate: 500 ppm.
pub const MAX_SLEW: f64 = 500e-6;

/// A clock kept as an offset and a rate over a monotonic base.
#[derive(Clone, Debug, PartialEq)]
pub struct VirtualClock {
    anchor_base: i128,
    anchor_virtual: i128,
    drift: f64,
    slew_remaining: i128,
    slew_rate: f64,
}

impl VirtualClock {
    /// A clock that reads `virtual_ns` when the base reads `base_ns`, running at `1 + drift`
    /// times the base rate (`drift` = ppm / 10^6).
    pub fn new(base_ns: i128, virtual_ns: i128, drift: f64) -> VirtualClock {
        VirtualClock {
            anchor_base: base_ns,
            anchor_virtual: virtual_ns,
            drift,
            slew_remaining: 0,
            slew_rate: MAX_SLEW,
        }
    }

    /// Moves the anchor to `base_ns`, applying drift and the slew made since. A base reading
    /// earlier than the anchor is taken as no time passing (the clock never runs backwards).
    fn advance(&mut self, base_ns: i128) {
        let elapsed = (base_ns - self.anchor_base).max(0);
        let mut v = self.anchor_virtual + (elapsed as f64 * (1.0 + self.drift)).round() as i128;
        let can = (elapsed as f64 * self.slew_rate) as i128;
        let applied = self.slew_remaining.clamp(-can, can);
        v += applied;
        self.slew_remaining -= applied;
        self.anchor_base = self.anchor_base.max(base_ns);
        self.anchor_virtual = v;
    }

    /// The reading at base time `base_ns`.
    pub fn read(&mut self, base_ns: i128) -> i128 {
        self.advance(base_ns);
        self.anchor_virtual
    }

    /// Corrects the clock by `delta_ns` at once (forwards or backwards), dropping any slew under
    /// way.
    pub fn step(&mut self, base_ns: i128, delta_ns: i128) {
        self.advance(base_ns);
        self.anchor_virtual += delta_ns;
        self.slew_remaining = 0;
    }

    /// Corrects the clock by `delta_ns` gradually, at [`MAX_SLEW`]; adds to a slew under way.
    pub fn slew(&mut self, base_ns: i128, delta_ns: i128) {
        self.advance(base_ns);
        self.slew_remaining += delta_ns;
    }

    /// Replaces the slew under way by `delta_ns` (the newest measured offset supersedes what was
    /// left of the last one, as in ntpd's clock adjust).
    pub fn set_slew(&mut self, base_ns: i128, delta_ns: i128) {
        self.advance(base_ns);
        self.slew_remaining = delta_ns;
    }

    /// The part of the slews not applied yet.
    pub fn slew_remaining(&self) -> i128 {
        self.slew_remaining
    }

    /// The artificial rate error over the base, as a fraction.
    pub fn drift(&self) -> f64 {
        self.drift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;
    const S: i128 = 1_000_000_000;

    #[test]
    fn offset_and_drift() {
        let mut c = VirtualClock::new(0, 5 * MS, 100e-6);
        assert_eq!(c.read(0), 5 * MS);
        // 10s later, 100 ppm fast: 1ms gained.
        assert_eq!(c.read(10 * S), 10 * S + 6 * MS);
    }

    #[test]
    fn a_backwards_slew_never_runs_the_clock_backwards() {
        let mut c = VirtualClock::new(0, 0, 0.0);
        c.slew(0, -10 * MS);
        let mut last = c.read(0);
        for i in 1..=100 {
            let now = c.read(i * 250 * MS);
            assert!(now > last, "step {i}: {now} after {last}");
            last = now;
        }
        // 25s at 500 ppm is 12.5ms of slew: the whole 10ms is applied.
        assert_eq!(c.slew_remaining(), 0);
        assert_eq!(c.read(25 * S), 25 * S - 10 * MS);
    }

    #[test]
    fn a_slew_is_applied_at_500ppm() {
        let mut c = VirtualClock::new(0, 0, 0.0);
        c.slew(0, 2 * MS);
        assert_eq!(c.read(2 * S), 2 * S + MS); // half of it after 2s
        assert_eq!(c.slew_remaining(), MS);
    }

    #[test]
    fn a_base_going_backwards_holds_the_clock() {
        let mut c = VirtualClock::new(10 * S, 0, 0.0);
        assert_eq!(c.read(11 * S), S);
        assert_eq!(c.read(9 * S), S);
        assert_eq!(c.read(12 * S), 2 * S);
    }

    #[test]
    fn a_step_is_immediate() {
        let mut c = VirtualClock::new(0, 0, 0.0);
        c.slew(0, 5 * MS);
        c.step(S, -200 * MS);
        assert_eq!(c.slew_remaining(), 0);
        assert_eq!(c.read(S), S + 500_000 - 200 * MS);
    }
}
