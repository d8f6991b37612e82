//! The context monitor's rules: which threshold fires at a given pressure,
//! and what it says. Pure functions; the engine applies them to sessions.

use protocol::config::{Action, Threshold};
use protocol::figures::{thousands, window_percent};
use protocol::wire::ContextStatus;

/// A threshold to fire now, and every level crossed with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    pub threshold: Threshold,
    /// All newly crossed levels, the fired one included.
    pub crossed: Vec<f64>,
}

/// Levels at or under `pressure` not yet fired this epoch. When several are
/// crossed at once, the highest fires and all are recorded.
pub fn check(thresholds: &[Threshold], pressure: f64, fired: &[f64]) -> Option<Firing> {
    let crossed: Vec<&Threshold> = thresholds
        .iter()
        .filter(|t| t.level <= pressure && !fired.iter().any(|f| same_level(*f, t.level)))
        .collect();
    let highest = crossed.iter().max_by(|a, b| a.level.total_cmp(&b.level))?;
    Some(Firing {
        threshold: (*highest).clone(),
        crossed: crossed.iter().map(|t| t.level).collect(),
    })
}

fn same_level(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Whether usage fell far enough from the epoch's peak to arm the levels again.
pub fn dropped_enough(peak: f64, pressure: f64, reset_drop: f64) -> bool {
    peak - pressure >= reset_drop
}

/// Whether an action saves state, and with a git checkpoint.
pub fn saves(action: Action) -> Option<bool> {
    match action {
        Action::LogWarning => None,
        Action::AutoSaveState | Action::RecommendCompact => Some(false),
        Action::ForceSaveState => Some(true),
    }
}

/// The configured message with the figures behind it, in the basis the
/// person sees: the share of the window (Claude Code's own figure) and where
/// compaction comes.
pub fn message(threshold: &Threshold, context: &ContextStatus) -> String {
    let compaction = if context.tokens_max >= context.window_tokens {
        "no automatic compaction".to_owned()
    } else {
        format!("compaction at {}", thousands(context.tokens_max))
    };
    format!(
        "{} [hookd: {} tokens, {}% of the window; {compaction}]",
        threshold.message,
        thousands(context.tokens_used),
        window_percent(context.tokens_used, context.window_tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::config::MonitorConfig;
    use protocol::pressure::Advice;

    fn levels() -> Vec<Threshold> {
        MonitorConfig::default().thresholds
    }

    #[test]
    fn each_level_fires_once() {
        let t = levels();
        assert_eq!(check(&t, 0.5, &[]), None);
        let f = check(&t, 0.72, &[]).unwrap();
        assert_eq!((f.threshold.level, f.crossed.clone()), (0.70, vec![0.70]));
        assert_eq!(check(&t, 0.75, &[0.70]), None);
        assert_eq!(
            check(&t, 0.83, &[0.70]).unwrap().threshold.action,
            Action::AutoSaveState
        );
    }

    #[test]
    fn crossing_several_fires_the_highest_and_records_all() {
        let f = check(&levels(), 0.96, &[0.70]).unwrap();
        assert_eq!(f.threshold.level, 0.95);
        assert_eq!(f.threshold.action, Action::ForceSaveState);
        assert_eq!(f.crossed, vec![0.80, 0.90, 0.95]);
    }

    #[test]
    fn messages_carry_the_figures() {
        let ctx = ContextStatus {
            invalid: None,
            tokens_used: 120_240,
            tokens_max: 167_000,
            window_tokens: 200_000,
            pressure: 0.72,
            window_fraction: 0.6012,
            basis: String::new(),
            source: "reply".into(),
            advice: Advice::for_pressure(0.72),
            updated_at_ms: 0,
        };
        let warn = message(&levels()[0], &ctx);
        assert_eq!(
            warn,
            "Context at 70% of the way to compaction. Read only what the task needs: \
             search first, then open line ranges. [hookd: 120,240 tokens, 60% of the \
             window; compaction at 167,000]"
        );
        // No jargon reaches the model or the person.
        for t in levels() {
            let text = message(&t, &ctx);
            assert!(
                !text.contains("strategy") && !text.contains("prefetch") && !text.contains("trust"),
                "{text}"
            );
        }
    }

    /// What the person and the model read at each level, with the figures
    /// of a 200k window; and with automatic compaction off.
    #[test]
    fn the_message_at_each_level() {
        let ctx = |tokens: u64, max: u64| {
            let pressure = tokens as f64 / max as f64;
            ContextStatus {
                invalid: None,
                tokens_used: tokens,
                tokens_max: max,
                window_tokens: 200_000,
                pressure,
                window_fraction: tokens as f64 / 200_000.0,
                basis: String::new(),
                source: "reply".into(),
                advice: Advice::for_pressure(pressure),
                updated_at_ms: 0,
            }
        };
        let mut out = String::new();
        for (t, tokens) in levels().iter().zip([120_240, 138_610, 153_640, 160_320]) {
            out += &format!(
                "{:.0}%: {}\n\n",
                t.level * 100.0,
                message(t, &ctx(tokens, 167_000))
            );
        }
        out += &format!(
            "no automatic compaction: {}\n",
            message(&levels()[0], &ctx(140_000, 200_000))
        );
        insta::assert_snapshot!(out);
    }
}
