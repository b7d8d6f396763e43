//! Times as people read them, and the axis scale of the space-time diagram.

/// A time unit for display: its symbol and its length in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub symbol: &'static str,
    pub ns: u64,
}

const UNITS: [Unit; 4] = [
    Unit {
        symbol: "s",
        ns: 1_000_000_000,
    },
    Unit {
        symbol: "ms",
        ns: 1_000_000,
    },
    Unit {
        symbol: "µs",
        ns: 1_000,
    },
    Unit {
        symbol: "ns",
        ns: 1,
    },
];

/// The largest unit not longer than `ns` (nanoseconds for 0).
pub(crate) fn unit_for(ns: u64) -> Unit {
    UNITS
        .iter()
        .copied()
        .find(|u| ns >= u.ns)
        .unwrap_or(UNITS[3])
}

/// `ns` in `unit`, exactly, without trailing zeros: 1_250_000 in ms is "1.25".
pub(crate) fn in_unit(ns: u64, unit: Unit) -> String {
    let whole = ns / unit.ns;
    let frac = ns % unit.ns;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = unit.ns.to_string().len() - 1;
    let s = format!("{frac:0digits$}");
    format!("{whole}.{}", s.trim_end_matches('0'))
}

/// A duration or instant in nanoseconds, in the largest unit that keeps it at least 1:
/// `format_ns(1_250_000) == "1.25 ms"`, `format_ns(0) == "0 ns"`.
pub fn format_ns(ns: u64) -> String {
    let unit = unit_for(ns);
    format!("{} {}", in_unit(ns, unit), unit.symbol)
}

/// `ns` to about four significant digits, for labels: `format_ns_short(3_023_079_906) ==
/// "3.023 s"` (tooltips keep exact times).
pub(crate) fn format_ns_short(ns: u64) -> String {
    let unit = unit_for(ns);
    let value = ns as f64 / unit.ns as f64;
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    let text = format!("{value:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", unit.symbol)
}

/// A round step (1, 2 or 5 times a power of ten nanoseconds) giving about `target` ticks over
/// `span` nanoseconds.
pub(crate) fn nice_step(span: u64, target: u64) -> u64 {
    let raw = (span / target.max(1)).max(1);
    let mut mag = 1u64;
    while let Some(next) = mag.checked_mul(10).filter(|&n| n <= raw) {
        mag = next;
    }
    [1, 2, 5, 10]
        .iter()
        .filter_map(|&m| mag.checked_mul(m))
        .find(|&step| step >= raw)
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_exactly() {
        assert_eq!(format_ns(0), "0 ns");
        assert_eq!(format_ns(999), "999 ns");
        assert_eq!(format_ns(1_000), "1 µs");
        assert_eq!(format_ns(1_250_000), "1.25 ms");
        assert_eq!(format_ns(2_000_000_001), "2.000000001 s");
        assert_eq!(in_unit(500_000, UNITS[1]), "0.5");
        assert_eq!(format_ns_short(3_023_079_906), "3.023 s");
        assert_eq!(format_ns_short(8_019_688), "8.02 ms");
        assert_eq!(format_ns_short(608_647), "608.6 µs");
        assert_eq!(format_ns_short(10_000_000), "10 ms");
        assert_eq!(format_ns_short(0), "0 ns");
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(10_000_000, 10), 1_000_000);
        assert_eq!(nice_step(13_000_000, 10), 2_000_000);
        assert_eq!(nice_step(40_000_000, 10), 5_000_000);
        assert_eq!(nice_step(3, 10), 1);
        assert_eq!(nice_step(0, 10), 1);
        assert_eq!(nice_step(u64::MAX, 1), u64::MAX);
    }
}
