//! Wall-clock helpers: Unix milliseconds on the wire, RFC 3339 in files.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far another machine's clock may run ahead of this one's: a time it
/// gives later than now plus this is not trusted as it stands.
pub const FUTURE_ALLOWANCE_MS: u64 = 10 * 60 * 1000;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// RFC 3339 UTC with seconds (`2026-11-21T17:50:41Z`).
pub fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// RFC 3339 UTC with milliseconds (`2026-11-21T17:50:41.123Z`).
pub fn rfc3339_millis(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Milliseconds since the epoch for an RFC 3339 timestamp, if it is one.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(text).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
}

/// `2026-11-26 13:04 UTC`: a time as a person reads it, to the minute.
pub fn utc_minutes(ms: u64) -> String {
    let full = rfc3339(ms); // 2026-11-26T13:04:05Z
    format!("{} {} UTC", &full[..10], &full[11..16])
}

/// A compact UTC stamp for names: `20260118_143022`.
pub fn compact_stamp(ms: u64) -> String {
    let full = rfc3339(ms); // 2026-01-18T14:30:22Z
    let digits: String = full.chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}_{}", &digits[..8], &digits[8..14])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip() {
        let ms = 1_737_210_622_000; // 2025-01-18T14:30:22Z
        assert_eq!(rfc3339(ms), "2025-01-18T14:30:22Z");
        assert_eq!(parse_rfc3339("2025-01-18T14:30:22Z"), Some(ms));
        assert_eq!(parse_rfc3339("2025-01-18T14:30:22.500Z"), Some(ms + 500));
        assert_eq!(compact_stamp(ms), "20250118_143022");
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
