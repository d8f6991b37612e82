//! Figures as both sides print them, so a message from hookd and a line
//! from hookctl say the same number the same way.

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A fraction as a whole percentage: `0.724` → `72%`.
pub fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// The share of the window as Claude Code shows it (its statusLine's
/// `used_percentage`): whole percent, half rounded up, at most 100.
pub fn window_percent(tokens: u64, window: u64) -> u64 {
    if window == 0 {
        return 0;
    }
    let (tokens, window) = (u128::from(tokens), u128::from(window));
    ((tokens * 200 + window) / (window * 2)).min(100) as u64
}

/// Where compaction happens, in whole percent of the window, rounded down:
/// a figure shown as under it has not reached it.
pub fn compaction_percent(point: u64, window: u64) -> u64 {
    if window == 0 {
        return 100;
    }
    (u128::from(point) * 100 / u128::from(window)).min(100) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(167_000), "167,000");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(percent(0.724), "72%");
        assert_eq!(percent(1.02), "102%");
    }
}
