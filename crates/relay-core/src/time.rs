//! The one ISO 8601 formatter: a Unix time in milliseconds and a local offset in minutes, as
//! `2026-11-29T23:05:07+01:00`. Sans-IO: the time and the offset arrive as numbers (the adapter
//! reads the clock and `getTimezoneOffset()`); there is no clock and no time-zone database here.
//!
//! Contract (the edge cases, each table-tested):
//! - **Seconds, floored**: sub-second digits are dropped by rounding toward the past, so a negative
//!   epoch time `-1` ms is `1969-12-31T23:59:59`, the second it lies in.
//! - **Offset always explicit**: never `Z`; offset 0 is `+00:00`, negative offsets are `-HH:MM`,
//!   and half-hour and 45-minute offsets (`+05:30`, `+05:45`, `-09:30`) are exact.
//! - **Offsets beyond ±23:59** (the largest RFC 3339 allows) are clamped to ±23:59. The local
//!   time is computed with the clamped offset, so the text still names the exact instant.
//! - **Calendar**: proleptic Gregorian, with day, month and year rollover on either side of the
//!   offset (checked against `jiff` over its whole range in the tests).
//! - **Years** 0000–9999 have four digits; other years use the ISO 8601 expanded form, a sign and
//!   at least six digits (`+275760`, `-000001`), which covers JavaScript's whole `Date` range
//!   (±8.64e15 ms).
//! - **Total**: any `i64` and `i32` is formatted without a panic or an overflow (times beyond
//!   `i64` milliseconds saturate).
//!
//! Both users share this one function: the boot block's note timestamps
//! ([`crate::render::format_local_iso`]) and the handoff's metadata, sidecar and retry time
//! ([`crate::handoff::format_timestamp`]). They used to have separate implementations that agreed
//! on ordinary times; the handoff's printed offsets beyond ±23:59 and years outside 0–9999 in
//! forms that are not ISO 8601 (`+166:40`, `-001`, `10000`), which this one does not.

/// The largest offset RFC 3339 can write, in minutes (23:59).
pub const MAX_OFFSET_MINUTES: i32 = 23 * 60 + 59;

const MS_PER_DAY: i64 = 86_400_000;

/// Format a Unix timestamp in ms as local ISO 8601 with an explicit offset, to the second (see
/// the module documentation for every edge case).
pub fn format_local_iso(ms: i64, tz_offset_minutes: i32) -> String {
    let off = tz_offset_minutes.clamp(-MAX_OFFSET_MINUTES, MAX_OFFSET_MINUTES);
    let local = ms.saturating_add(i64::from(off) * 60_000);
    let days = local.div_euclid(MS_PER_DAY);
    let secs_of_day = local.rem_euclid(MS_PER_DAY) / 1000;
    let (y, m, d) = civil_from_days(days);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", y.unsigned_abs())
    } else {
        format!("+{y:06}")
    };
    let sign = if off < 0 { '-' } else { '+' };
    let abs = off.unsigned_abs();
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60,
        abs / 60,
        abs % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
/// Exact for every day count `format_local_iso` can produce (|days| < 1.1e11, far from overflow).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2026-11-29T22:05:07Z
    const T: i64 = 1_795_989_907_000;
    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;

    #[test]
    fn table() {
        let cases: &[(i64, i32, &str)] = &[
            // Ordinary times, both signs of offset, and sub-second floors.
            (T, 0, "2026-11-29T22:05:07+00:00"),
            (T, 60, "2026-11-29T23:05:07+01:00"),
            (T, -300, "2026-11-29T17:05:07-05:00"),
            (T + 999, 0, "2026-11-29T22:05:07+00:00"),
            (T - 1, 0, "2026-11-29T22:05:06+00:00"),
            // Half-hour and 45-minute offsets, east and west.
            (T, 330, "2026-11-30T03:35:07+05:30"),
            (T, 345, "2026-11-30T03:50:07+05:45"),
            (T, 525, "2026-11-30T06:50:07+08:45"),
            (T, 765, "2026-11-30T10:50:07+12:45"),
            (T, -210, "2026-11-29T18:35:07-03:30"),
            (T, -570, "2026-11-29T12:35:07-09:30"),
            (T, -30, "2026-11-29T21:35:07-00:30"),
            (T, 1, "2026-11-29T22:06:07+00:01"),
            (T, -1, "2026-11-29T22:04:07-00:01"),
            // An offset crossing midnight, a month end and a year end, forwards and backwards.
            (1_798_759_800_000, 60, "2027-01-01T00:30:00+01:00"),
            (1_798_759_800_000, 0, "2026-12-31T23:30:00+00:00"),
            (1_798_761_600_000, -1, "2026-12-31T23:59:00-00:01"),
            (1_798_761_600_000, 0, "2027-01-01T00:00:00+00:00"),
            (1_798_761_600_000 - 1, 0, "2026-12-31T23:59:59+00:00"),
            (1_772_325_000_000, -60, "2026-02-28T23:30:00-01:00"),
            (1_709_172_900_000, -180, "2024-02-28T23:15:00-03:00"),
            (1_709_172_900_000, 0, "2024-02-29T02:15:00+00:00"),
            (1_709_251_200_000 - HOUR, 90, "2024-03-01T00:30:00+01:30"),
            // Leap years: 2000 is one, 1900 and 2100 are not.
            (951_782_400_000, 0, "2000-02-29T00:00:00+00:00"),
            (-2_203_891_200_000, 0, "1900-03-01T00:00:00+00:00"),
            (4_107_542_400_000, 0, "2100-03-01T00:00:00+00:00"),
            // Around the epoch: negative times floor to the second they lie in.
            (0, 0, "1970-01-01T00:00:00+00:00"),
            (-1, 0, "1969-12-31T23:59:59+00:00"),
            (-999, 0, "1969-12-31T23:59:59+00:00"),
            (-1000, 0, "1969-12-31T23:59:59+00:00"),
            (-1001, 0, "1969-12-31T23:59:58+00:00"),
            (-1000, 840, "1970-01-01T13:59:59+14:00"),
            (0, -720, "1969-12-31T12:00:00-12:00"),
            // Years 0000–9999 are four digits; others use the expanded form.
            (-62_167_219_200_000, 0, "0000-01-01T00:00:00+00:00"),
            (-62_167_219_200_001, 0, "-000001-12-31T23:59:59+00:00"),
            (-62_167_219_200_000, -1, "-000001-12-31T23:59:00-00:01"),
            (253_402_300_799_999, 0, "9999-12-31T23:59:59+00:00"),
            (253_402_300_800_000, 0, "+010000-01-01T00:00:00+00:00"),
            (253_402_300_799_999, 1, "+010000-01-01T00:00:59+00:01"),
            // JavaScript's Date range (±8.64e15 ms), which note timestamps may use.
            (8_640_000_000_000_000, 0, "+275760-09-13T00:00:00+00:00"),
            (-8_640_000_000_000_000, 0, "-271821-04-20T00:00:00+00:00"),
            // Offsets beyond ±23:59 are clamped; the text still names the exact instant.
            (T, 10_000, "2026-11-30T22:04:07+23:59"),
            (T, -10_000, "2026-11-28T22:06:07-23:59"),
            (T, 1440, "2026-11-30T22:04:07+23:59"),
            (T, 1439, "2026-11-30T22:04:07+23:59"),
        ];
        for &(ms, off, want) in cases {
            assert_eq!(format_local_iso(ms, off), want, "{ms} ms at {off} min");
        }
    }

    #[test]
    fn out_of_range_values_do_not_panic() {
        for ms in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            for off in [
                i32::MIN,
                -MAX_OFFSET_MINUTES - 1,
                0,
                MAX_OFFSET_MINUTES + 1,
                i32::MAX,
            ] {
                let s = format_local_iso(ms, off);
                assert!(s.ends_with("+23:59") || s.ends_with("-23:59") || s.ends_with("+00:00"));
                assert!(s.contains('T'), "{s}");
            }
        }
        assert_eq!(
            format_local_iso(i64::MAX, 0),
            "+292278994-08-17T07:12:55+00:00"
        );
        assert_eq!(
            format_local_iso(i64::MIN, 0),
            "-292275055-05-16T16:47:04+00:00"
        );
    }

    /// The same instant and offset as `jiff` renders it (RFC 3339, to the second).
    fn oracle(ms: i64, off: i32) -> String {
        let ts = jiff::Timestamp::from_second(ms.div_euclid(1000)).unwrap();
        let offset = jiff::tz::Offset::from_seconds(off * 60).unwrap();
        ts.display_with_offset(offset).to_string()
    }

    #[test]
    fn agrees_with_jiff_at_the_edges_of_its_range() {
        // jiff covers -9999-01-01 to 9999-12-31 (UTC, padded by a day for offsets).
        let lo = jiff::Timestamp::MIN.as_millisecond() + 2 * MS_PER_DAY;
        let hi = jiff::Timestamp::MAX.as_millisecond() - 2 * MS_PER_DAY;
        for ms in [lo, lo + 999, hi, hi - 999, -1, 0, 1] {
            for off in [-MAX_OFFSET_MINUTES, -570, 0, 345, MAX_OFFSET_MINUTES] {
                assert_eq!(format_local_iso(ms, off), oracle(ms, off), "{ms} {off}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Calendar arithmetic agrees with jiff for every instant jiff can represent, at any
        /// offset RFC 3339 can write.
        #[test]
        fn agrees_with_jiff(
            ms in (jiff::Timestamp::MIN.as_millisecond() + 2 * MS_PER_DAY)
                ..(jiff::Timestamp::MAX.as_millisecond() - 2 * MS_PER_DAY),
            off in -MAX_OFFSET_MINUTES..=MAX_OFFSET_MINUTES,
        ) {
            prop_assert_eq!(format_local_iso(ms, off), oracle(ms, off));
        }

        /// Near today, where every real timestamp lies.
        #[test]
        fn agrees_with_jiff_near_now(ms in 0i64..4_102_444_800_000, off in -840i32..=840) {
            prop_assert_eq!(format_local_iso(ms, off), oracle(ms, off));
        }
    }
}
