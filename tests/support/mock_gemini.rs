//! The Gemini API as Gemini CLI 0.61.0 uses it, for
//! [`mock_model`](crate::mock_model): `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
//! (`data:` lines, each a GenerateContentResponse) and `:generateContent`.
//!
//! - Every reply carries `usageMetadata`: `promptTokenCount` is the reply's
//!   `tokens`, which Gemini CLI writes to its session file as the reply's
//!   `tokens.input`.
//! - A shell call is a `functionCall` of `run_shell_command` (`args.command`);
//!   its result comes back as a `functionResponse` part.
//! - Side calls whose `generationConfig` asks for `responseMimeType:
//!   application/json` (model routing, next-speaker checks) get a small JSON
//!   text that sends the turn back to the user.
//! - Chat compression asks for a `<state_snapshot>` (then asks to verify it):
//!   both get the script's summary.

use crate::mock_model::{Action, HttpResponse, Kind, Reply};
use serde_json::{Value, json};

/// What Gemini CLI's compression requests name, in their last user message.
pub const COMPRESSION_PROMPT: &str = "<state_snapshot>";
/// Output tokens every reply reports.
const OUTPUT_TOKENS: u64 = 20;

fn is_generate(path: &str) -> bool {
    path.contains(":streamGenerateContent") || path.contains(":generateContent")
}

pub fn classify(path: &str, body: &Value) -> Kind {
    if !is_generate(path) {
        return Kind::Other;
    }
    if body["generationConfig"]["responseMimeType"] == "application/json" {
        return Kind::Utility;
    }
    let last_user = body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|c| c["role"] == "user");
    match last_user {
        Some(c) if parts_text(&c["parts"]).contains(COMPRESSION_PROMPT) => Kind::Summary,
        _ => Kind::Main,
    }
}

/// `gemini-2.5-flash` of `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`.
fn model_of(path: &str) -> &str {
    path.split("/models/")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or("gemini-2.5-flash")
}

pub fn respond(_n: u64, kind: &Kind, reply: &Reply, path: &str, _body: &Value) -> HttpResponse {
    let parts = match (kind, &reply.action) {
        (Kind::Utility, _) => json!([{"text": json!({
            "reasoning": "e2e mock: the user speaks next",
            "next_speaker": "user",
            "model_choice": "flash",
        }).to_string()}]),
        (Kind::Summary, Action::Text(text)) => {
            json!([{"text": format!("<state_snapshot>{text}</state_snapshot>")}])
        }
        (_, Action::Shell(command)) => json!([{"functionCall": {
            "name": "run_shell_command",
            "args": {"command": command},
        }}]),
        (_, Action::Text(text)) => json!([{"text": text}]),
    };
    let response = json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": reply.tokens,
            "candidatesTokenCount": OUTPUT_TOKENS,
            "totalTokenCount": reply.tokens + OUTPUT_TOKENS,
        },
        "modelVersion": model_of(path),
    });
    if path.contains(":streamGenerateContent") {
        HttpResponse::sse(format!("data: {response}\n\n"))
    } else {
        HttpResponse::json(&response)
    }
}

fn parts_text(parts: &Value) -> String {
    let mut out = String::new();
    for part in parts.as_array().into_iter().flatten() {
        if let Some(t) = part["text"].as_str() {
            out.push_str(t);
        } else if !part["functionCall"].is_null() {
            out.push_str(&part["functionCall"]["args"].to_string());
        } else if let Some(response) = part["functionResponse"]["response"].as_object() {
            match response.get("output").and_then(Value::as_str) {
                Some(output) => out.push_str(output),
                None => out.push_str(&Value::Object(response.clone()).to_string()),
            }
        }
        out.push('\n');
    }
    out
}

/// The conversation as the model reads it: the text, calls and results of
/// every part of `contents` (not the system instruction or tool definitions).
pub fn conversation_text(body: &Value) -> String {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| parts_text(&c["parts"]))
        .collect()
}
