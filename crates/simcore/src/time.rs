//! Virtual time: integer nanoseconds.
//!
//! Simulated time is a `u64` count of nanoseconds since the start of a run.
//! Integers keep sums exact and the event order total, unlike the `f64`
//! clocks of some simulators (compared with an epsilon).

/// A point in virtual time, in nanoseconds since the start of the run.
pub type SimTime = u64;

/// One microsecond in [`SimTime`] units.
pub const MICROS: SimTime = 1_000;
/// One millisecond in [`SimTime`] units.
pub const MILLIS: SimTime = 1_000_000;
/// One second in [`SimTime`] units.
pub const SECONDS: SimTime = 1_000_000_000;

/// Formats a duration in ns with a readable unit (`ns`, `µs`, `ms`, `s`).
pub fn format_duration(ns: u64) -> String {
    if ns < MICROS {
        format!("{ns} ns")
    } else if ns < MILLIS {
        format!("{:.1} µs", ns as f64 / MICROS as f64)
    } else if ns < SECONDS {
        format!("{:.2} ms", ns as f64 / MILLIS as f64)
    } else {
        format!("{:.3} s", ns as f64 / SECONDS as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_each_unit() {
        assert_eq!(format_duration(999), "999 ns");
        assert_eq!(format_duration(1_500), "1.5 µs");
        assert_eq!(format_duration(2_500_000), "2.50 ms");
        assert_eq!(format_duration(3 * SECONDS), "3.000 s");
    }
}
