//! `hookctl statusline`: Claude Code's statusLine command. It reads the
//! statusLine JSON, tells hookd about the window it names, and prints one
//! short line such as `ctx 60% · compacts at 83%`: the share of the window
//! exactly as Claude Code counts it, and where compaction comes. When hookd
//! is away it works the figures out from the input alone.

use crate::Context;
use crate::client::Client;
use crate::display::window_percent;
use protocol::config::Config;
use protocol::pressure::{Advice, CONTEXT_COUNTS, Knobs, compaction_point, token_count, token_sum};
use protocol::wire::{ContextStatus, Request, Response, StatusLineRequest};
use serde_json::Value;
use serde_json::value::RawValue;
use std::io::Read;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    let mut text = String::new();
    std::io::stdin()
        .take(crate::hook::MAX_STDIN_BYTES as u64)
        .read_to_string(&mut text)?;
    let text = text.trim();
    // Only user-level keys (client, window) are read here.
    let config = ctx.user_config();
    let deadline = Instant::now() + Duration::from_millis(config.client.statusline_timeout_ms);
    let env = protocol::env_vars(protocol::wire::is_forwarded_env);
    let from_daemon = RawValue::from_string(text.to_owned())
        .ok()
        .and_then(|payload| {
            let request = Request::StatusLine(StatusLineRequest { payload, env });
            match Client::one_request(&ctx.socket, deadline, config.client.autostart, &request)
                .ok()?
            {
                Response::Context(c) => Some(*c),
                _ => None,
            }
        });
    let input: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    // The statusLine input alone, only when hookd did not answer.
    let context = from_daemon.or_else(|| from_input(&input, &config));
    println!("{}", line(context.as_ref(), used_percent(&input)));
    Ok(ExitCode::SUCCESS)
}

/// The figures from the statusLine input alone.
fn from_input(input: &Value, config: &Config) -> Option<ContextStatus> {
    let window = token_count(
        "context_window_size",
        input["context_window"].get("context_window_size"),
    )
    .ok()
    .flatten()
    .filter(|w| *w > 0)?;
    let usage = &input["context_window"]["current_usage"];
    if !usage.is_object() {
        return None;
    }
    // Figures that cannot be right show as unknown, not as a full context.
    let tokens = token_sum(usage, &CONTEXT_COUNTS).ok()?;
    let knobs = Knobs::from_env(|name| std::env::var(name).ok());
    let point = compaction_point(
        window,
        &knobs,
        config.window.output_reserve_tokens,
        config.window.autocompact_buffer_tokens,
    );
    let tokens_max = config.window.tokens_max.unwrap_or(point.tokens).max(1);
    let pressure = tokens as f64 / tokens_max as f64;
    Some(ContextStatus {
        tokens_used: tokens,
        tokens_max,
        window_tokens: point.window,
        pressure,
        window_fraction: tokens as f64 / point.window as f64,
        basis: point.basis,
        source: "statusline".into(),
        advice: Advice::for_pressure(pressure),
        updated_at_ms: 0,
        invalid: None,
    })
}

/// Claude Code's own figure for the input: its `used_percentage`, else its
/// usage over its window counted the same way. `None` before the first reply.
fn used_percent(input: &Value) -> Option<u64> {
    let window = &input["context_window"];
    if let Some(p) = window["used_percentage"]
        .as_f64()
        .filter(|p| p.is_finite() && *p >= 0.0)
    {
        return Some(p.round().min(100.0) as u64);
    }
    let size = token_count("context_window_size", window.get("context_window_size"))
        .ok()
        .flatten()?;
    let tokens = token_sum(&window["current_usage"], &CONTEXT_COUNTS).ok()?;
    Some(window_percent(tokens, size))
}

/// `ctx 60% · compacts at 83%`; `ctx –` before the first reply.
pub fn line(context: Option<&ContextStatus>, used: Option<u64>) -> String {
    if context.is_some_and(|c| c.invalid.is_some()) {
        return "ctx ? (invalid usage)".to_owned();
    }
    let used = used.or_else(|| {
        context
            .filter(|c| c.tokens_used > 0)
            .map(|c| window_percent(c.tokens_used, c.window_tokens))
    });
    match (used, context) {
        (Some(used), Some(c)) => format!("ctx {used}% · {}", crate::status::compaction_words(c)),
        (Some(used), None) => format!("ctx {used}%"),
        (None, _) => "ctx –".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_from_a_real_statusline_input() {
        let text = r#"{"model":{"id":"claude-sonnet-4-5-20250929"},"context_window":{"context_window_size":200000,
            "current_usage":{"input_tokens":2000,"output_tokens":1500,"cache_creation_input_tokens":8000,"cache_read_input_tokens":110240}}}"#;
        let input: Value = serde_json::from_str(text).unwrap();
        let c = from_input(&input, &Config::default()).unwrap();
        assert_eq!((c.tokens_used, c.tokens_max), (120_240, 167_000));
        assert_eq!(
            line(Some(&c), used_percent(&input)),
            "ctx 60% · compacts at 83%"
        );
        let before_first_reply: Value = serde_json::from_str(
            r#"{"context_window":{"context_window_size":200000,"current_usage":null}}"#,
        )
        .unwrap();
        assert_eq!(
            line(
                from_input(&before_first_reply, &Config::default()).as_ref(),
                used_percent(&before_first_reply)
            ),
            "ctx –"
        );
        // Figures that cannot be right are not a full context.
        for usage in [
            format!(
                r#"{{"input_tokens":{},"cache_read_input_tokens":5}}"#,
                u64::MAX
            ),
            r#"{"input_tokens":1e12}"#.to_owned(),
            "[150000]".to_owned(),
        ] {
            let input: Value = serde_json::from_str(&format!(
                r#"{{"context_window":{{"context_window_size":200000,"current_usage":{usage}}}}}"#
            ))
            .unwrap();
            assert_eq!(from_input(&input, &Config::default()), None, "{usage}");
        }
    }

    /// Claude Code's own figure, on every recorded statusLine input: the
    /// same whether it comes from `used_percentage` or from the usage.
    #[test]
    fn the_figure_is_claude_codes_used_percentage() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/claude-code-2.1.330/statusline.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut seen = 0;
        for row in text.lines() {
            let mut input: Value = serde_json::from_str(row).unwrap();
            let Some(claude) = input["context_window"]["used_percentage"].as_u64() else {
                continue;
            };
            input["context_window"]["used_percentage"] = Value::Null;
            assert_eq!(used_percent(&input), Some(claude), "{row}");
            let c = from_input(&input, &Config::default());
            assert!(
                line(c.as_ref(), used_percent(&input)).starts_with(&format!("ctx {claude}% · ")),
                "{row}"
            );
            seen += 1;
        }
        assert!(seen >= 10, "{seen} inputs with a figure");
    }

    #[test]
    fn the_line_says_where_compaction_comes() {
        let config = Config::default();
        let input = |size: u64, tokens: u64| -> Value {
            serde_json::from_str(&format!(
                r#"{{"context_window":{{"context_window_size":{size},"used_percentage":null,
                "current_usage":{{"input_tokens":{tokens}}}}}}}"#
            ))
            .unwrap()
        };
        let shown = |i: &Value| line(from_input(i, &config).as_ref(), used_percent(i));
        assert_eq!(shown(&input(200_000, 84_000)), "ctx 42% · compacts at 83%");
        assert_eq!(
            shown(&input(1_000_000, 500_000)),
            "ctx 50% · compacts at 96%"
        );
        // Right after /compact Claude Code shows 0, and so do we.
        assert_eq!(shown(&input(200_000, 0)), "ctx 0% · compacts at 83%");
        // hookd away and nothing to go on.
        assert_eq!(line(None, None), "ctx –");
        assert_eq!(line(None, Some(12)), "ctx 12%");
    }

    /// The line for fixed inputs: a climb through one 200k session, a 1M
    /// window, no automatic compaction, the moment after /compact, before
    /// the first reply, and an input that cannot be right.
    #[test]
    fn lines_for_fixed_inputs() {
        let config = Config::default();
        let with_knobs = |size: u64, tokens: u64, used: &str| -> String {
            let input: Value = serde_json::from_str(&format!(
                r#"{{"context_window":{{"context_window_size":{size},"used_percentage":{used},
                "current_usage":{{"input_tokens":{tokens}}}}}}}"#
            ))
            .unwrap();
            line(from_input(&input, &config).as_ref(), used_percent(&input))
        };
        let mut out = String::new();
        for (what, size, tokens, used) in [
            ("early", 200_000, 21_000, "11"),
            ("mid", 200_000, 84_000, "42"),
            ("near compaction", 200_000, 160_000, "80"),
            ("1M window", 1_000_000, 500_000, "50"),
            ("right after /compact", 200_000, 0, "0"),
            ("no used_percentage", 200_000, 120_240, "null"),
        ] {
            out += &format!("{what}: {}\n", with_knobs(size, tokens, used));
        }
        let disabled = ContextStatus {
            tokens_max: 200_000,
            ..from_input(
                &serde_json::json!({"context_window": {"context_window_size": 200_000,
                    "current_usage": {"input_tokens": 90_000}}}),
                &config,
            )
            .unwrap()
        };
        out += &format!(
            "automatic compaction off: {}\n",
            line(Some(&disabled), None)
        );
        let invalid = ContextStatus {
            invalid: Some("input_tokens is negative (-5)".into()),
            ..disabled
        };
        out += &format!("invalid usage: {}\n", line(Some(&invalid), Some(40)));
        out += &format!("before the first reply: {}\n", line(None, None));
        insta::assert_snapshot!(out);
    }
}
