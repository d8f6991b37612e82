//! The Responses API as Codex CLI 0.169.0 uses it (`POST /v1/responses`,
//! streamed as server-sent events), for [`mock_model`](crate::mock_model).
//!
//! - A reply is `response.created`, one `response.output_item.added` /
//!   `.done` pair per output item, then `response.completed` whose
//!   `response.usage` Codex copies into the rollout's `token_count` record:
//!   `total_tokens` is the reply's `tokens`, so `last_token_usage.total_tokens`
//!   equals the script's figure.
//! - A shell call is a `function_call` item for the shell tool the request
//!   offers (`exec_command {"cmd"}` in 0.169.0, else `shell_command
//!   {"command"}`); its result comes back as a `function_call_output` item.
//! - Codex's local compaction is an ordinary request whose last user message
//!   asks for a "CONTEXT CHECKPOINT COMPACTION": it gets the summary.

use crate::mock_model::{Action, HttpResponse, Kind, Reply};
use serde_json::{Value, json};

/// What Codex's compaction prompt says, in the request's last user message.
pub const COMPACTION_PROMPT: &str = "CONTEXT CHECKPOINT COMPACTION";
/// Output tokens every reply reports (the rest of `tokens` is input).
const OUTPUT_TOKENS: u64 = 50;

pub fn classify(path: &str, body: &Value) -> Kind {
    if !path.trim_end_matches('/').ends_with("/responses") || body["input"].is_null() {
        return Kind::Other;
    }
    let last_user = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|item| item["type"] == "message" && item["role"] == "user");
    match last_user {
        Some(m) if item_text(m).contains(COMPACTION_PROMPT) => Kind::Summary,
        _ => Kind::Main,
    }
}

/// The shell tool the request offers, and its arguments for `command`.
fn shell_call(body: &Value, command: &str) -> (String, Value) {
    let offered = |name: &str| {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == name)
    };
    if offered("exec_command") || !offered("shell_command") {
        ("exec_command".into(), json!({"cmd": command}))
    } else {
        ("shell_command".into(), json!({"command": command}))
    }
}

pub fn respond(n: u64, _kind: &Kind, reply: &Reply, body: &Value) -> HttpResponse {
    let item = match &reply.action {
        Action::Shell(command) => {
            let (name, arguments) = shell_call(body, command);
            json!({
                "type": "function_call",
                "id": format!("fc_e2e_{n:03}"),
                "call_id": format!("call_e2e_{n:03}"),
                "name": name,
                "arguments": arguments.to_string(),
                "status": "completed",
            })
        }
        Action::Text(text) => json!({
            "type": "message",
            "id": format!("msg_e2e_{n:03}"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
    };
    let id = format!("resp_e2e_{n:03}");
    let output = reply.tokens.min(OUTPUT_TOKENS);
    let mut sse = String::new();
    let mut event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        sse.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event("response.created", json!({"response": {"id": id}}));
    event(
        "response.output_item.added",
        json!({"output_index": 0, "item": item}),
    );
    event(
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
    );
    event(
        "response.completed",
        json!({"response": {"id": id, "usage": {
            "input_tokens": reply.tokens - output,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.tokens,
        }}}),
    );
    HttpResponse::sse(sse)
}

fn item_text(item: &Value) -> String {
    let mut out = String::new();
    match &item["content"] {
        Value::String(s) => out.push_str(s),
        Value::Array(parts) => {
            for p in parts {
                if let Some(t) = p["text"].as_str() {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
        _ => {}
    }
    out
}

/// The conversation as the model reads it: every message (developer
/// messages included: hooks' additional context arrives as one), tool call
/// and tool output of `input`.
pub fn conversation_text(body: &Value) -> String {
    let mut out = String::new();
    for item in body["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => {
                out.push_str(item["arguments"].as_str().unwrap_or(""));
                out.push('\n');
            }
            Some("function_call_output") => {
                match &item["output"] {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&item_text(&json!({"content": other}))),
                }
                out.push('\n');
            }
            _ => out.push_str(&item_text(item)),
        }
    }
    out
}
