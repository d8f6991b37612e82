//! `hookctl statusline`: Claude Code's statusLine command. It reads the
//! statusLine JSON, tells hookd about the window it names, and prints one
//! short line such as `ctx 72% to compaction · 60% of window`: how far the
//! context is on its way to compaction (what hookd's levels are measured
//! against, coloured by them), then the share of the window exactly as
//! Claude Code counts it. When hookd is away it works the figures out from
//! the input alone.

use crate::Context;
use crate::client::Client;
use crate::display::window_percent;
use protocol::config::Config;
use protocol::figures::{compacts_by_itself, way_percent};
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
            let greeting_within = Duration::from_millis(config.client.statusline_timeout_ms);
            match Client::one_request(
                &ctx.socket,
                deadline,
                greeting_within,
                config.client.autostart,
                &request,
            )
            .ok()?
            {
                Response::Context(c) => Some(*c),
                _ => None,
            }
        });
    let input: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    // The statusLine input alone, only when hookd did not answer.
    let context = from_daemon.or_else(|| from_input(&input, &config));
    let levels: Vec<f64> = config.monitor.thresholds.iter().map(|t| t.level).collect();
    let shown = line(context.as_ref(), used_percent(&input));
    // Cleaned first: the colour is ours, the rest may quote the input.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let shown = coloured(
        &crate::display::terminal(&shown),
        context.as_ref(),
        &levels,
        no_color,
    );
    crate::display::out(&format!("{shown}\n"));
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
        point_unknown: false,
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

/// `ctx 72% to compaction · 60% of window`: how far the context is on its
/// way to compaction (what the levels are measured against) first, then
/// the share of the window as Claude Code counts it; `ctx –` before the
/// first reply.
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
        (Some(used), Some(c)) if c.point_unknown => {
            format!("ctx {used}% of window · compaction point unknown")
        }
        (Some(used), Some(c)) if !compacts_by_itself(c.tokens_max, c.window_tokens) => {
            format!("ctx {used}% of window · no automatic compaction")
        }
        (Some(used), Some(c)) => format!(
            "ctx {}% to compaction · {used}% of window",
            way_percent(c.tokens_used, c.tokens_max)
        ),
        (Some(used), None) => format!("ctx {used}% of window"),
        (None, _) => "ctx –".to_owned(),
    }
}

/// `line` with its leading figure coloured by the levels it has passed:
/// green below the first, yellow past it, red past the second highest, bold
/// red past the highest. Plain when `NO_COLOR` is set.
pub fn coloured(
    line: &str,
    context: Option<&ContextStatus>,
    levels: &[f64],
    no_color: bool,
) -> String {
    let Some(c) = context
        .filter(|c| c.invalid.is_none() && compacts_by_itself(c.tokens_max, c.window_tokens))
    else {
        return line.to_owned();
    };
    // Only a figure against compaction has a level to show.
    if no_color || !line.contains("% to compaction") {
        return line.to_owned();
    }
    let mut levels = levels.to_vec();
    levels.sort_by(f64::total_cmp);
    let passed = levels.iter().filter(|l| c.pressure >= **l).count();
    let colour = match (passed, levels.len()) {
        (0, _) => "32",
        (p, n) if p == n => "1;31",
        (p, n) if p + 1 == n => "31",
        _ => "33",
    };
    // The figure is the text up to the first ` · `.
    let (figure, rest) = line.split_once(" · ").unwrap_or((line, ""));
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(" · {rest}")
    };
    format!("\x1b[{colour}m{figure}\x1b[0m{rest}")
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
            "ctx 72% to compaction · 60% of window"
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
            let shown = line(c.as_ref(), used_percent(&input));
            assert!(
                shown.ends_with(&format!(" · {claude}% of window")),
                "{shown}: {row}"
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
        assert_eq!(
            shown(&input(200_000, 84_000)),
            "ctx 50% to compaction · 42% of window"
        );
        assert_eq!(
            shown(&input(1_000_000, 500_000)),
            "ctx 51% to compaction · 50% of window"
        );
        // Right after /compact Claude Code shows 0, and so do we.
        assert_eq!(
            shown(&input(200_000, 0)),
            "ctx 0% to compaction · 0% of window"
        );
        // hookd away and nothing to go on.
        assert_eq!(line(None, None), "ctx –");
        assert_eq!(line(None, Some(12)), "ctx 12% of window");
    }

    /// The leading figure takes the colour of the levels it passed, so
    /// 95% of the way looks like danger; the rest of the line stays plain.
    #[test]
    fn the_figure_is_coloured_by_the_levels_passed() {
        let config = Config::default();
        let levels: Vec<f64> = config.monitor.thresholds.iter().map(|t| t.level).collect();
        let at = |tokens: u64| {
            let input: Value = serde_json::from_str(&format!(
                r#"{{"context_window":{{"context_window_size":200000,"current_usage":{{"input_tokens":{tokens}}}}}}}"#
            ))
            .unwrap();
            let c = from_input(&input, &config);
            coloured(
                &line(c.as_ref(), used_percent(&input)),
                c.as_ref(),
                &levels,
                false,
            )
        };
        assert_eq!(
            at(50_000),
            "\x1b[32mctx 29% to compaction\x1b[0m · 25% of window"
        );
        assert!(
            at(120_240).starts_with("\x1b[33mctx 72% to"),
            "{}",
            at(120_240)
        );
        assert!(
            at(153_640).starts_with("\x1b[31mctx 92% to"),
            "{}",
            at(153_640)
        );
        assert!(
            at(160_320).starts_with("\x1b[1;31mctx 96% to"),
            "{}",
            at(160_320)
        );
        // Nothing to colour without a compaction to measure against.
        assert_eq!(coloured("ctx –", None, &levels, false), "ctx –");
        // NO_COLOR: the same line, plain.
        let input: Value = serde_json::from_str(
            r#"{"context_window":{"context_window_size":200000,"current_usage":{"input_tokens":160320}}}"#,
        )
        .unwrap();
        let c = from_input(&input, &config);
        let plain = line(c.as_ref(), used_percent(&input));
        assert_eq!(plain, "ctx 96% to compaction · 80% of window");
        assert_eq!(coloured(&plain, c.as_ref(), &levels, true), plain);
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
