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

/// How far a context is on its way to compaction, in whole percent
/// rounded down: a level shown as reached has been reached.
pub fn way_percent(used: u64, point: u64) -> u64 {
    if point == 0 {
        return 100;
    }
    (u128::from(used) * 100 / u128::from(point)).min(u128::from(u64::MAX)) as u64
}

/// Whether a context of `window` tokens compacts by itself at `point`: no
/// point at or past the window (an unknown window, 0, says nothing).
pub fn compacts_by_itself(point: u64, window: u64) -> bool {
    window == 0 || point < window
}

/// `45% of the window (90,000 of 200,000 tokens)`.
pub fn window_words(used: u64, window: u64) -> String {
    format!(
        "{}% of the window ({} of {} tokens)",
        window_percent(used, window),
        thousands(used),
        thousands(window)
    )
}

/// The context as every screen and message says it, leading with the
/// share the levels are measured against: `96% of the way to compaction
/// (160,320 of 167,000 tokens), 80% of the window`; with no automatic
/// compaction, `45% of the window (90,000 of 200,000 tokens), no automatic
/// compaction`.
pub fn context_words(used: u64, point: u64, window: u64) -> String {
    if !compacts_by_itself(point, window) {
        return format!("{}, no automatic compaction", window_words(used, window));
    }
    let mut words = format!(
        "{}% of the way to compaction ({} of {} tokens)",
        way_percent(used, point),
        thousands(used),
        thousands(point)
    );
    if window > 0 {
        words += &format!(", {}% of the window", window_percent(used, window));
    }
    words
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

    #[test]
    fn one_figure_leads() {
        assert_eq!(
            context_words(160_320, 167_000, 200_000),
            "96% of the way to compaction (160,320 of 167,000 tokens), 80% of the window"
        );
        // 94.99% has not reached the 95% level, and does not say it has.
        assert_eq!(way_percent(158_649, 167_000), 94);
        assert_eq!(way_percent(170_000, 167_000), 101);
        assert_eq!(
            context_words(90_000, 200_000, 200_000),
            "45% of the window (90,000 of 200,000 tokens), no automatic compaction"
        );
        assert_eq!(
            context_words(50_000, 100_000, 0),
            "50% of the way to compaction (50,000 of 100,000 tokens)"
        );
    }
}
