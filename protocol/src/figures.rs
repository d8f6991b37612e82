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
