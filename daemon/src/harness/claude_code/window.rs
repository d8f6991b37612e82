//! The context window of a Claude model, and so where Claude Code compacts.

use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, Knobs, compaction_point};

/// Windows of the models Claude Code 2.1.330 offers, by id prefix. The
/// longest matching prefix wins; a `[1m]` suffix always means one million.
const MODEL_WINDOWS: &[(&str, u64)] = &[
    ("claude-opus-5", 1_000_000),
    ("claude-sonnet-5", 1_000_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
];

const ONE_MILLION: u64 = 1_000_000;

/// The model's window: the statusLine's figure if we have one, else the
/// configured table, else the built-in one, else the configured default.
pub fn model_window(
    model: Option<&str>,
    statusline_window: Option<u64>,
    config: &WindowConfig,
) -> u64 {
    if let Some(w) = statusline_window.filter(|w| *w > 0) {
        return w;
    }
    let Some(model) = model else {
        return config.default_window_tokens;
    };
    if let Some(w) = config.model_window(model) {
        return w;
    }
    if model.ends_with("[1m]") {
        return ONE_MILLION;
    }
    MODEL_WINDOWS
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, w)| *w)
        .unwrap_or(config.default_window_tokens)
}

/// Where this session compacts.
pub fn compaction_point_for(
    model: Option<&str>,
    statusline_window: Option<u64>,
    knobs: &Knobs,
    config: &WindowConfig,
) -> CompactionPoint {
    let window = model_window(model, statusline_window, config);
    let mut point = compaction_point(
        window,
        knobs,
        config.output_reserve_tokens,
        config.autocompact_buffer_tokens,
    );
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        point.tokens = forced;
        point.basis = format!("{forced} (window.tokens_max)");
    }
    point
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_by_model() {
        let c = WindowConfig::default();
        assert_eq!(model_window(Some("claude-opus-5-5"), None, &c), 1_000_000);
        assert_eq!(
            model_window(Some("claude-sonnet-4-5-20250929"), None, &c),
            200_000
        );
        assert_eq!(
            model_window(Some("claude-sonnet-4-5-20250929[1m]"), None, &c),
            1_000_000
        );
        assert_eq!(model_window(Some("some-other-model"), None, &c), 200_000);
        assert_eq!(model_window(None, None, &c), 200_000);
        assert_eq!(
            model_window(Some("claude-opus-5-5"), Some(200_000), &c),
            200_000,
            "the statusLine wins"
        );
    }

    #[test]
    fn configured_windows_win_over_the_table() {
        let mut c = WindowConfig::default();
        c.models.insert("claude-sonnet-4-5".into(), 500_000);
        assert_eq!(
            model_window(Some("claude-sonnet-4-5-20250929"), None, &c),
            500_000
        );
        c.tokens_max = Some(1234);
        assert_eq!(
            compaction_point_for(Some("claude-opus-5-5"), None, &Knobs::default(), &c).tokens,
            1234
        );
    }

    #[test]
    fn the_fixture_sessions_compaction_points() {
        let c = WindowConfig::default();
        let k = Knobs::default();
        assert_eq!(
            compaction_point_for(Some("claude-opus-5-5"), None, &k, &c).tokens,
            967_000
        );
        assert_eq!(
            compaction_point_for(Some("claude-sonnet-4-5-20250929"), None, &k, &c).tokens,
            167_000
        );
    }
}
