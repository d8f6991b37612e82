//! Context pressure and what follows from it. Shared by the daemon (which
//! knows the most) and hookctl's statusline (which must answer even when the
//! daemon is away).
//!
//! - The compaction point: where Claude Code compacts on its own, so that a
//!   95% warning fires before it does.
//! - The retrieval strategy for a given pressure (stuff / hybrid / selective,
//!   and no prefetch at all above 95%).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Claude Code keeps room for the reply: `min(max output, 20k)` tokens.
pub const DEFAULT_OUTPUT_RESERVE_TOKENS: u64 = 20_000;
/// Claude Code compacts this many tokens before the effective window ends.
pub const DEFAULT_AUTOCOMPACT_BUFFER_TOKENS: u64 = 13_000;
/// `CLAUDE_CODE_AUTO_COMPACT_WINDOW` is clamped to this range.
const AUTO_COMPACT_WINDOW_RANGE: (u64, u64) = (100_000, 1_000_000);

/// Claude Code's compaction settings, as its environment gives them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`: compact at this percentage (1–100) of the effective window.
    #[serde(default)]
    pub autocompact_pct: Option<f64>,
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`: a smaller window to compact within.
    #[serde(default)]
    pub auto_compact_window: Option<u64>,
    /// `CLAUDE_CODE_MAX_CONTEXT_TOKENS`: a cap on the model's window.
    #[serde(default)]
    pub max_context_tokens: Option<u64>,
    /// `DISABLE_AUTO_COMPACT` or `DISABLE_COMPACT`: no automatic compaction.
    #[serde(default)]
    pub auto_compact_disabled: bool,
    /// Set by a harness that compacts at a fixed fraction of its window
    /// (Codex: 0.9) rather than by Claude Code's reserve and buffer.
    #[serde(default)]
    pub compact_fraction: Option<f64>,
}

impl Knobs {
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Knobs {
        let num = |name: &str| {
            get(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0)
        };
        let truthy =
            |name: &str| get(name).is_some_and(|v| !matches!(v.trim(), "" | "0" | "false" | "no"));
        Knobs {
            autocompact_pct: get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p <= 100.0),
            auto_compact_window: num("CLAUDE_CODE_AUTO_COMPACT_WINDOW"),
            max_context_tokens: num("CLAUDE_CODE_MAX_CONTEXT_TOKENS"),
            auto_compact_disabled: truthy("DISABLE_AUTO_COMPACT") || truthy("DISABLE_COMPACT"),
            compact_fraction: None,
        }
    }
}

/// The token count at which the harness compacts, with how it was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionPoint {
    /// The model's window after caps (the statusLine's denominator).
    pub window: u64,
    /// Where compaction happens: the denominator of the thresholds.
    pub tokens: u64,
    /// One line for people: how `tokens` follows from `window`.
    pub basis: String,
}

/// Where Claude Code compacts a context of `model_window` tokens:
/// `min(window, knobs) − output reserve − buffer`, or earlier with a
/// percentage override. Without automatic compaction, the window itself.
/// A harness with its own fixed fraction (`knobs.compact_fraction`)
/// compacts at that fraction of the window.
pub fn compaction_point(
    model_window: u64,
    knobs: &Knobs,
    reserve: u64,
    buffer: u64,
) -> CompactionPoint {
    let mut window = model_window.max(1);
    let mut basis = format!("{window} window");
    if let Some(cap) = knobs.max_context_tokens.filter(|c| *c < window) {
        window = cap;
        basis = format!("{window} (CLAUDE_CODE_MAX_CONTEXT_TOKENS)");
    }
    if knobs.auto_compact_disabled {
        return CompactionPoint {
            window,
            tokens: window,
            basis: format!("{basis}; automatic compaction disabled"),
        };
    }
    if let Some(fraction) = knobs.compact_fraction.filter(|f| *f > 0.0 && *f <= 1.0) {
        return CompactionPoint {
            window,
            tokens: ((window as f64 * fraction).floor() as u64).max(1),
            basis: format!("{:.0}% of {basis}", fraction * 100.0),
        };
    }
    let mut compact_window = window;
    if let Some(w) = knobs.auto_compact_window {
        let w = w.clamp(AUTO_COMPACT_WINDOW_RANGE.0, AUTO_COMPACT_WINDOW_RANGE.1);
        if w < compact_window {
            compact_window = w;
            basis = format!("{basis}, {w} auto-compact window");
        }
    }
    let effective = compact_window.saturating_sub(reserve).max(1);
    let mut tokens = effective.saturating_sub(buffer).max(1);
    basis = format!("{basis} − {reserve} output reserve − {buffer} buffer");
    if let Some(pct) = knobs.autocompact_pct {
        let at = (effective as f64 * pct / 100.0).floor() as u64;
        if at < tokens {
            tokens = at.max(1);
            basis = format!("{pct}% of {effective} (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE)");
        }
    }
    CompactionPoint {
        window,
        tokens,
        basis,
    }
}

/// Above this a token count is corrupt, not large. The biggest windows are a
/// few million tokens, so 100M leaves room for any model to come. A fixed
/// bound, not a multiple of the window: the window of an unknown model is a
/// guess, and a wrong guess must not turn a true figure into a refused one.
pub const MAX_PLAUSIBLE_TOKENS: u64 = 100_000_000;

/// The counts of a Claude reply's usage that make up its context.
pub const CONTEXT_COUNTS: [&str; 3] = [
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
];

/// One token count from a harness's record: a JSON integer, not negative,
/// not absurd. Absent or null is `None`; anything else is the reason it is
/// refused.
pub fn token_count(name: &str, value: Option<&Value>) -> Result<Option<u64>, String> {
    let n = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n,
        Some(Value::Bool(_)) => return Err(format!("{name} is a boolean")),
        Some(Value::String(_)) => return Err(format!("{name} is a string")),
        Some(Value::Array(_)) => return Err(format!("{name} is an array")),
        Some(Value::Object(_)) => return Err(format!("{name} is an object")),
    };
    match n.as_u64() {
        Some(count) if count > MAX_PLAUSIBLE_TOKENS => Err(format!(
            "{name} is {count}, above the {MAX_PLAUSIBLE_TOKENS} tokens no context holds"
        )),
        Some(count) => Ok(Some(count)),
        None if n.is_i64() => Err(format!("{name} is negative ({n})")),
        None => Err(format!("{name} is not a whole number ({n})")),
    }
}

/// The sum of the named counts of a usage object (absent ones count 0),
/// refused like a single count when it is not believable.
pub fn token_sum(usage: &Value, names: &[&str]) -> Result<u64, String> {
    let Value::Object(fields) = usage else {
        return Err(format!("usage is {}", json_kind(usage)));
    };
    let mut total: u64 = 0;
    for name in names {
        total = total.saturating_add(token_count(name, fields.get(*name))?.unwrap_or(0));
    }
    if total > MAX_PLAUSIBLE_TOKENS {
        return Err(format!(
            "{} add up to {total}, above the {MAX_PLAUSIBLE_TOKENS} tokens no context holds",
            names.join(" + ")
        ));
    }
    Ok(total)
}

/// What kind of JSON value `v` is, for messages: "a string", "an array".
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Under 30%: room to load everything relevant.
    Stuff,
    /// 30–70%: standard retrieval with moderate limits.
    Hybrid,
    /// Over 70%: minimal prefetch, defer to on-demand tools.
    Selective,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Stuff => "stuff",
            Strategy::Hybrid => "hybrid",
            Strategy::Selective => "selective",
        }
    }
}

/// Pressure above which nothing is prefetched at all.
pub const SKIP_PREFETCH_ABOVE: f64 = 0.95;
/// Items a retrieval may load at standard pressure.
pub const BASE_PREFETCH_LIMIT: u32 = 5;

/// The retrieval advice for one pressure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub strategy: Strategy,
    /// Used tokens over the compaction point (may exceed 1).
    pub pressure: f64,
    /// How many items a retrieval may load.
    pub prefetch_limit: u32,
    /// The lowest trust (relevance) an item needs.
    pub min_trust: f64,
    /// Above 95%: load nothing extra.
    pub skip_prefetch: bool,
}

impl Advice {
    pub fn for_pressure(pressure: f64) -> Advice {
        let (strategy, multiplier, min_trust) = if pressure < 0.30 {
            (Strategy::Stuff, 3.0, 0.2)
        } else if pressure < 0.70 {
            (Strategy::Hybrid, 1.0, 0.3)
        } else {
            (Strategy::Selective, 0.4, 0.5)
        };
        if pressure > SKIP_PREFETCH_ABOVE {
            return Advice {
                strategy,
                pressure,
                prefetch_limit: 0,
                min_trust: 1.0,
                skip_prefetch: true,
            };
        }
        let prefetch_limit = ((BASE_PREFETCH_LIMIT as f64 * multiplier) as u32).max(1);
        Advice {
            strategy,
            pressure,
            prefetch_limit,
            min_trust,
            skip_prefetch: false,
        }
    }

    /// What hookd may add to the context at this pressure, in words a
    /// person reads: `half the files to reload, up to 5 lessons of past
    /// tasks scored 0.3 or more`.
    pub fn summary(&self) -> String {
        if self.skip_prefetch {
            return "no room for more: no files to reload, no lessons of past tasks".to_owned();
        }
        let files = self.files_words();
        format!(
            "{files} to reload, up to {} lessons of past tasks scored {:.1} or more",
            self.prefetch_limit, self.min_trust
        )
    }

    /// The share of the changed files the reload list may name.
    pub fn files_words(&self) -> &'static str {
        match self.strategy {
            Strategy::Stuff => "every file",
            Strategy::Hybrid => "half the files",
            Strategy::Selective => "a quarter of the files",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(window: u64, knobs: &Knobs) -> u64 {
        compaction_point(
            window,
            knobs,
            DEFAULT_OUTPUT_RESERVE_TOKENS,
            DEFAULT_AUTOCOMPACT_BUFFER_TOKENS,
        )
        .tokens
    }

    #[test]
    fn default_compaction_points() {
        assert_eq!(point(200_000, &Knobs::default()), 167_000);
        assert_eq!(point(1_000_000, &Knobs::default()), 967_000);
    }

    #[test]
    fn knobs_move_the_compaction_point() {
        let pct = Knobs {
            autocompact_pct: Some(50.0),
            ..Knobs::default()
        };
        assert_eq!(point(200_000, &pct), 90_000);
        let window = Knobs {
            auto_compact_window: Some(400_000),
            ..Knobs::default()
        };
        assert_eq!(point(1_000_000, &window), 367_000);
        let clamped = Knobs {
            auto_compact_window: Some(10),
            ..Knobs::default()
        };
        assert_eq!(point(1_000_000, &clamped), 67_000);
        let cap = Knobs {
            max_context_tokens: Some(150_000),
            ..Knobs::default()
        };
        assert_eq!(point(200_000, &cap), 117_000);
        let off = Knobs {
            auto_compact_disabled: true,
            ..Knobs::default()
        };
        assert_eq!(point(200_000, &off), 200_000);
        // A percentage above the default point does not move it later.
        let late = Knobs {
            autocompact_pct: Some(99.0),
            ..Knobs::default()
        };
        assert_eq!(point(200_000, &late), 167_000);
        let codex = Knobs {
            compact_fraction: Some(0.9),
            ..Knobs::default()
        };
        assert_eq!(point(272_000, &codex), 244_800);
    }

    #[test]
    fn knobs_from_env() {
        let env = |name: &str| match name {
            "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE" => Some("60".to_owned()),
            "CLAUDE_CODE_MAX_CONTEXT_TOKENS" => Some("oops".to_owned()),
            "DISABLE_COMPACT" => Some("1".to_owned()),
            _ => None,
        };
        let k = Knobs::from_env(env);
        assert_eq!(k.autocompact_pct, Some(60.0));
        assert_eq!(k.max_context_tokens, None);
        assert!(k.auto_compact_disabled);
        assert_eq!(Knobs::from_env(|_| Some("0".into())).autocompact_pct, None);
    }

    #[test]
    fn token_counts_are_whole_believable_numbers() {
        use serde_json::json;
        let count = |v: Value| token_count("n", Some(&v));
        assert_eq!(count(json!(150_000)), Ok(Some(150_000)));
        assert_eq!(count(Value::Null), Ok(None));
        assert_eq!(token_count("n", None), Ok(None));
        for (v, why) in [
            (json!(1e12), "n is not a whole number"),
            (json!(5.0), "n is not a whole number"),
            (json!(-5), "n is negative"),
            (json!("5"), "n is a string"),
            (json!([5]), "n is an array"),
            (json!(u64::MAX), "above the 100000000 tokens"),
        ] {
            let err = count(v.clone()).unwrap_err();
            assert!(err.contains(why), "{v}: {err}");
        }
        let names = ["a", "b", "c"];
        assert_eq!(token_sum(&json!({"a": 1, "c": 2}), &names), Ok(3));
        // A sum near u64::MAX saturates and is refused; it never wraps.
        let err = token_sum(&json!({"a": 99_999_999, "b": 99_999_999}), &names).unwrap_err();
        assert!(err.contains("a + b + c add up to 199999998"), "{err}");
        let err = token_sum(&json!([150_000]), &names).unwrap_err();
        assert_eq!(err, "usage is an array");
    }

    #[test]
    fn strategies_follow_pressure() {
        assert_eq!(Advice::for_pressure(0.1).strategy, Strategy::Stuff);
        assert_eq!(Advice::for_pressure(0.1).prefetch_limit, 15);
        assert_eq!(Advice::for_pressure(0.3).strategy, Strategy::Hybrid);
        assert_eq!(Advice::for_pressure(0.5).prefetch_limit, 5);
        let tight = Advice::for_pressure(0.72);
        assert_eq!(
            (tight.strategy, tight.prefetch_limit, tight.min_trust),
            (Strategy::Selective, 2, 0.5)
        );
        assert!(!tight.skip_prefetch);
        let full = Advice::for_pressure(0.96);
        assert!(full.skip_prefetch);
        assert_eq!(full.prefetch_limit, 0);
        assert_eq!(
            full.summary(),
            "no room for more: no files to reload, no lessons of past tasks"
        );
        assert_eq!(
            tight.summary(),
            "a quarter of the files to reload, up to 2 lessons of past tasks scored 0.5 or more"
        );
    }
}
