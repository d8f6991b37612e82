//! Small formatting helpers shared by the human-readable commands.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `42s`, `3m 5s`, `2h 10m`, `3d 4h`.
pub fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// `5s ago` for a Unix-millisecond time; `never` for 0.
pub fn ago(ms: u64) -> String {
    if ms == 0 {
        return "never".into();
    }
    format!("{} ago", duration(now_ms().saturating_sub(ms) / 1000))
}

/// The first 8 characters of an id, as git shortens hashes.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(185), "3m 5s");
        assert_eq!(duration(7800), "2h 10m");
        assert_eq!(duration(2 * 86_400 + 3600), "2d 1h");
        assert_eq!(short_id("90fcfea3-eaa5"), "90fcfea3");
        assert_eq!(short_id("abc"), "abc");
    }
}

pub use protocol::figures::{percent, thousands};

/// `▓▓▓▓▓▓▓░░░` for 0.72 in 10 cells (clamped to full).
pub fn bar(fraction: f64, cells: usize) -> String {
    let filled = ((fraction.clamp(0.0, 1.0) * cells as f64).round() as usize).min(cells);
    "▓".repeat(filled) + &"░".repeat(cells - filled)
}

/// `200k`, `1M`, `1.5M`.
pub fn short_tokens(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(100_000) {
        let m = n as f64 / 1_000_000.0;
        if m.fract() == 0.0 {
            format!("{m:.0}M")
        } else {
            format!("{m:.1}M")
        }
    } else if n >= 1000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn figures_read_naturally() {
        assert_eq!(bar(0.72, 10), "▓▓▓▓▓▓▓░░░");
        assert_eq!(bar(1.4, 4), "▓▓▓▓");
        assert_eq!(short_tokens(200_000), "200k");
        assert_eq!(short_tokens(1_000_000), "1M");
        assert_eq!(short_tokens(1_500_000), "1.5M");
    }
}
