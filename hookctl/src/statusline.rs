//! `hookctl statusline`: Claude Code's statusLine command. It reads the
//! statusLine JSON, tells hookd about the window it names, and prints one
//! short line such as `ctx 72% ▓▓▓▓▓▓▓░░░ selective · 60% of 200k`. When
//! hookd is away it works the figures out from the input alone.

use crate::Context;
use crate::client::Client;
use crate::display::{bar, percent, short_tokens};
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
    let config = ctx.config();
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
    // The statusLine input alone, only when hookd did not answer.
    let context = from_daemon.or_else(|| {
        let input: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        from_input(&input, &config)
    });
    println!("{}", line(context.as_ref()));
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

/// `ctx 72% ▓▓▓▓▓▓▓░░░ selective · 60% of 200k`; `ctx –` before the first reply.
pub fn line(context: Option<&ContextStatus>) -> String {
    match context {
        Some(c) if c.invalid.is_some() => "ctx ? (invalid usage)".to_owned(),
        Some(c) if c.tokens_used > 0 => format!(
            "ctx {} {} {} · {} of {}",
            percent(c.pressure),
            bar(c.pressure, 10),
            c.advice.strategy.as_str(),
            percent(c.window_fraction),
            short_tokens(c.window_tokens)
        ),
        _ => "ctx –".to_owned(),
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
        assert_eq!(line(Some(&c)), "ctx 72% ▓▓▓▓▓▓▓░░░ selective · 60% of 200k");
        let before_first_reply: Value = serde_json::from_str(
            r#"{"context_window":{"context_window_size":200000,"current_usage":null}}"#,
        )
        .unwrap();
        assert_eq!(
            line(from_input(&before_first_reply, &Config::default()).as_ref()),
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
}
