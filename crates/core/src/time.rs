//! Time as algorithms see it: nanoseconds on a local clock, and durations written with units.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A clock reading in nanoseconds. In the simulator it is the node's (possibly drifting) local
/// clock; in the real runtime it is the operating system's monotonic clock since start.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Time(pub u64);

impl Time {
    /// The start of a run.
    pub const ZERO: Time = Time(0);
    /// Later than any reachable time.
    pub const MAX: Time = Time(u64::MAX);

    /// A reading of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }

    /// The reading in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is, or zero if it is not later.
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(
            self.0
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, earlier: Time) -> Duration {
        self.since(earlier)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format_duration(Duration::from_nanos(self.0)))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Why a duration string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
    /// What was wrong with it.
    pub reason: String,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a duration: {} (write a number and a unit, like \"250us\", \"10ms\" or \"2s\")",
            self.input, self.reason
        )
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration written with units: "250us", "10ms", "2s", "1m 30s", "1.5ms".
///
/// ```
/// use distsync_core::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
/// assert_eq!(parse_duration("1.5ms").unwrap(), Duration::from_micros(1500));
/// assert!(parse_duration("10").unwrap_err().reason.contains("unit"));
/// assert!(parse_duration("-5ms").unwrap_err().reason.contains("negative"));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let fail = |reason: &str| DurationError {
        input: text.to_string(),
        reason: reason.to_string(),
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(fail("it is empty"));
    }
    if trimmed.starts_with('-') {
        return Err(fail("a duration cannot be negative"));
    }
    if trimmed.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(fail("it has no unit"));
    }
    // humantime does not take fractions ("1.5ms"); split them off by hand into the next unit down.
    let ns = match parse_fraction(trimmed) {
        Some(ns) => ns,
        None => humantime::parse_duration(trimmed)
            .map_err(|e| fail(&e.to_string()))?
            .as_nanos(),
    };
    // Times are nanoseconds in a u64 (`Time`): a longer duration would wrap around where it is
    // converted (a uniform delay's upper bound below its lower one).
    u64::try_from(ns)
        .map(Duration::from_nanos)
        .map_err(|_| fail("it is too long: the longest is 18446744073s (2^64 ns, about 584 years)"))
}

/// Parses a signed duration in nanoseconds: "-50ms", "+2s", "250us". Clock offsets use it.
///
/// ```
/// use distsync_core::parse_signed_duration;
/// assert_eq!(parse_signed_duration("-50ms").unwrap(), -50_000_000);
/// assert_eq!(parse_signed_duration("+1.5us").unwrap(), 1_500);
/// assert!(parse_signed_duration("-7").is_err());
/// ```
pub fn parse_signed_duration(text: &str) -> Result<i64, DurationError> {
    let trimmed = text.trim();
    let (sign, rest) = match trimmed.strip_prefix('-') {
        Some(rest) => (-1i64, rest),
        None => (1, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let d = parse_duration(rest).map_err(|e| DurationError {
        input: text.to_string(),
        reason: e.reason,
    })?;
    i64::try_from(d.as_nanos())
        .map(|ns| sign * ns)
        .map_err(|_| DurationError {
            input: text.to_string(),
            reason: "it is too large".to_string(),
        })
}

/// The nanoseconds of a duration with a fraction ("1.5ms"), rounded (saturating past `u128`);
/// `None` when `text` is not one.
fn parse_fraction(text: &str) -> Option<u128> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    if !number.contains('.') {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    // Digits and a point only: never negative or NaN; a cast saturates (an infinite value too).
    Some((value * scale).round() as u128)
}

/// Formats a duration compactly with the largest fitting unit: "250us", "1.5ms", "2s".
///
/// ```
/// use distsync_core::format_duration;
/// use std::time::Duration;
/// assert_eq!(format_duration(Duration::from_micros(1500)), "1.5ms");
/// assert_eq!(format_duration(Duration::from_secs(2)), "2s");
/// assert_eq!(format_duration(Duration::ZERO), "0s");
/// ```
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    let (value, unit) = if ns == 0.0 {
        (0.0, "s")
    } else if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let mut text = format!("{value:.3}");
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    format!("{text}{unit}")
}

/// Serde support for [`Duration`] fields written as strings with units.
///
/// Use with `#[serde(with = "distsync_core::serde_duration")]`. A bare number is refused with a
/// message asking for a unit, because "10" could mean seconds or milliseconds.
pub mod serde_duration {
    use super::{format_duration, parse_duration};
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;
    use std::time::Duration;

    /// Writes the duration as a string with units.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Reads a duration string with units.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(DurationVisitor)
    }

    pub(crate) struct DurationVisitor;

    impl Visitor<'_> for DurationVisitor {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "a duration with a unit, like \"250us\", \"10ms\" or \"2s\""
            )
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            parse_duration(v).map_err(E::custom)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            Err(E::custom(format!(
                "the bare number {v} is not a duration: add a unit, like \"{v}ms\" or \"{v}s\""
            )))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            self.visit_i64(v as i64)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            Err(E::custom(format!(
                "the bare number {v} is not a duration: add a unit, like \"{v}ms\" or \"{v}s\""
            )))
        }
    }

    /// The same for `Option<Duration>` fields.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::Duration;

        /// Writes the duration, if any, as a string with units.
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        /// Reads an optional duration string with units.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            #[derive(Deserialize)]
            struct Wrapped(#[serde(with = "super")] Duration);
            Option::<Wrapped>::deserialize(d).map(|w| w.map(|Wrapped(d)| d))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Holder {
        #[serde(with = "serde_duration")]
        d: Duration,
    }

    #[test]
    fn durations_from_toml() {
        let h: Holder = toml::from_str("d = \"2s\"").unwrap();
        assert_eq!(h.d, Duration::from_secs(2));
        let e = toml::from_str::<Holder>("d = 10").unwrap_err().to_string();
        assert!(e.contains("add a unit"), "{e}");
        let e = toml::from_str::<Holder>("d = \"-1ms\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
        let e = toml::from_str::<Holder>("d = \"10 parsecs\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a duration"), "{e}");
    }

    /// Every duration a run can hold is taken, and one past `Time`'s range (2^64 ns) is refused
    /// in words, whole or with a fraction, instead of wrapping around where it is converted.
    #[test]
    fn durations_past_the_clock_are_refused() {
        let longest = parse_duration("18446744073s").unwrap();
        assert!(longest.as_nanos() <= u128::from(u64::MAX));
        assert_eq!(
            parse_duration("5124095h").unwrap().as_secs(),
            5124095 * 3600
        );
        for text in ["18446744074s", "5124096h", "5124095.6h"] {
            let e = parse_duration(text).unwrap_err();
            assert!(e.reason.contains("584 years"), "{text}: {e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn time_arithmetic_saturates() {
        assert_eq!(Time(5) + Duration::from_nanos(3), Time(8));
        assert_eq!(Time(5) - Time(8), Duration::ZERO);
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
    }

    #[test]
    fn format_round_trips_through_parse() {
        for ns in [
            1u64,
            999,
            1_000,
            250_000,
            1_500_000,
            2_000_000_000,
            12_345_678,
        ] {
            let d = Duration::from_nanos(ns);
            let back = parse_duration(&format_duration(d)).unwrap();
            let err = (back.as_nanos() as i128 - d.as_nanos() as i128).abs();
            assert!(err * 1000 <= d.as_nanos() as i128, "{ns}: {back:?}");
        }
    }
}
