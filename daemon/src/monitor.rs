//! The context monitor's rules: which threshold fires at a given pressure,
//! and what it says. Pure functions; the engine applies them to sessions.

use protocol::config::{Action, Threshold};
use protocol::figures::context_words;
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

/// For the model: the configured message with the figures behind it.
pub fn message(threshold: &Threshold, context: &ContextStatus) -> String {
    format!("{} [hookd: {}]", threshold.message, words(context))
}

/// For the person: one short line with the figure every screen leads with,
/// and what hookd does about it (the model's instructions stay the model's).
pub fn person_line(threshold: &Threshold, context: &ContextStatus) -> String {
    let doing = match threshold.action {
        Action::LogWarning => "",
        Action::AutoSaveState => "; saving the work state",
        Action::RecommendCompact => "; saving the work state: a good moment for /compact",
        Action::ForceSaveState => "; saving the work state with a git checkpoint",
    };
    format!("hookd: context {}{doing}", words(context))
}

fn words(context: &ContextStatus) -> String {
    context_words(
        context.tokens_used,
        context.tokens_max,
        context.window_tokens,
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
            point_unknown: false,
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
             search first, then open line ranges. [hookd: 72% of the way to compaction \
             (120,240 of 167,000 tokens), 60% of the window]"
        );
        assert_eq!(
            person_line(&levels()[3], &ctx),
            "hookd: context 72% of the way to compaction (120,240 of 167,000 tokens), 60% \
             of the window; saving the work state with a git checkpoint"
        );
        // No jargon reaches the model or the person.
        for t in levels() {
            let text = message(&t, &ctx) + &person_line(&t, &ctx);
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
                point_unknown: false,
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
            let at = ctx(tokens, 167_000);
            out += &format!(
                "{:.0}%, to the model: {}\n{:.0}%, to the person: {}\n\n",
                t.level * 100.0,
                message(t, &at),
                t.level * 100.0,
                person_line(t, &at)
            );
        }
        out += &format!(
            "no automatic compaction: {}\n",
            message(&levels()[0], &ctx(140_000, 200_000))
        );
        insta::assert_snapshot!(out);
    }
}
