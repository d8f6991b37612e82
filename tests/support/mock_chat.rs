//! The OpenAI Chat Completions API (`POST …/chat/completions`), for
//! [`mock_model`](crate::mock_model): what Qwen Code 0.24.4 speaks to an
//! `openai` provider, and what GitHub Copilot CLI 1.0.102 speaks to its
//! `openai` provider (`COPILOT_PROVIDER_BASE_URL`), and what OpenCode
//! 1.18.33 speaks to an `@ai-sdk/openai-compatible` provider, so nothing
//! here is one client's unless it says so.
//!
//! - A request with `"stream": true` gets server-sent events
//!   (`chat.completion.chunk` objects, then `data: [DONE]`), any other a
//!   `chat.completion` object.
//! - Every reply's `usage.prompt_tokens` is the reply's `tokens` (what Qwen
//!   Code writes to its transcript as `usageMetadata.promptTokenCount`);
//!   streamed, the usage comes in a last chunk with no choices, as OpenAI
//!   sends it for `stream_options.include_usage`.
//! - A shell call is a `tool_calls` entry for the shell tool the request
//!   offers (`run_shell_command` in Qwen Code, `bash` in Copilot CLI); its
//!   arguments are built from
//!   that tool's schema: `command`, and a plain value for every other
//!   required property.
//! - A compaction request is one whose last user message asks for a
//!   summary in one of the shapes of [`COMPACTION_REQUESTS`]: it gets the
//!   script's summary in that shape.
//! - A request that wants JSON back (`response_format`) is a side call:
//!   it gets `{}`. So is a tool-less request whose system prompt is one of
//!   [`SIDE_REQUESTS`] (OpenCode's title request before a session's first
//!   turn): it gets [`SIDE_ANSWER`] as plain text.

use crate::mock_model::{Action, HttpResponse, Kind, Reply};
use serde_json::{Value, json};

/// What a client's compaction request says in its last user message, and
/// the tag its answer must be wrapped in (`None`: plain text).
pub const COMPACTION_REQUESTS: [(&str, Option<&str>); 3] = [
    // Qwen Code: "First, reason in your <analysis> block. Then, produce the
    // <state_snapshot> XML."; an answer without the tag counts as a failed
    // compression.
    ("produce the <state_snapshot> XML", Some("state_snapshot")),
    // Copilot CLI: the message starts with these words and lists the
    // sections it wants (`<overview>`, `<history>`, ...); it takes a plain
    // answer as the summary.
    (
        "Please create a detailed summary of the conversation so far",
        None,
    ),
    // OpenCode: the conversation quoted in one user message, then a
    // Markdown template to fill in; it takes any text as the summary.
    (
        "Create a new anchored summary from the conversation history",
        None,
    ),
];
/// What the system prompt of a tool-less side call begins with.
pub const SIDE_REQUESTS: [&str; 1] = [
    // OpenCode names a new session from its first prompt.
    "You are a title generator",
];
/// The plain-text answer to a side call that does not want JSON.
pub const SIDE_ANSWER: &str = "E2E mock title";
/// The shell tools clients offer, by name, in the order they are looked for.
const SHELL_TOOLS: [&str; 3] = ["run_shell_command", "bash", "shell"];
/// Output tokens every reply reports.
const OUTPUT_TOKENS: u64 = 30;
/// The model named in replies when the request names none.
const DEFAULT_MODEL: &str = "mock-model";

pub fn classify(path: &str, body: &Value) -> Kind {
    let Some(messages) = body["messages"].as_array() else {
        return Kind::Other;
    };
    if !path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_end_matches('/')
        .ends_with("/chat/completions")
    {
        return Kind::Other;
    }
    if compaction_shape(messages).is_some() {
        return Kind::Summary;
    }
    if body["response_format"].is_object() || is_side_request(body, messages) {
        return Kind::Utility;
    }
    Kind::Main
}

/// A request that offers no tools and whose system prompt begins as one of
/// [`SIDE_REQUESTS`] does.
fn is_side_request(body: &Value, messages: &[Value]) -> bool {
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    !offers_tools
        && messages.iter().filter(|m| m["role"] == "system").any(|m| {
            let text = content_text(&m["content"]);
            SIDE_REQUESTS
                .iter()
                .any(|s| text.trim_start().starts_with(s))
        })
}

/// The compaction request shape the last user message asks for, if any.
fn compaction_shape(messages: &[Value]) -> Option<Option<&'static str>> {
    let last_user = messages.iter().rev().find(|m| m["role"] == "user")?;
    let text = content_text(&last_user["content"]);
    COMPACTION_REQUESTS
        .iter()
        .find(|(asks, _)| text.contains(asks))
        .map(|&(_, tag)| tag)
}

/// The name of the shell tool `body` offers, and its JSON schema.
fn offered_shell(body: &Value) -> (String, Value) {
    let tools: Vec<&Value> = body["tools"].as_array().into_iter().flatten().collect();
    SHELL_TOOLS
        .iter()
        .find_map(|name| {
            tools
                .iter()
                .find(|t| t["function"]["name"] == *name)
                .map(|t| (name.to_string(), t["function"]["parameters"].clone()))
        })
        .unwrap_or_else(|| (SHELL_TOOLS[0].into(), Value::Null))
}

/// A shell call's arguments: `command`, and for every other required
/// property of `schema` a plain value of its type.
fn shell_arguments(schema: &Value, command: &str) -> Value {
    let mut arguments = json!({"command": command});
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|n| *n != "command")
    {
        arguments[name] = match schema["properties"][name]["type"].as_str() {
            Some("boolean") => json!(false),
            Some("integer" | "number") => json!(0),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("e2e mock step"),
        };
    }
    arguments
}

/// The assistant message of a reply: its content and tool calls, and the
/// finish reason that goes with them.
fn message(n: u64, kind: &Kind, reply: &Reply, body: &Value) -> (Value, &'static str) {
    match (kind, &reply.action) {
        (Kind::Utility, _) => {
            let content = if body["response_format"].is_object() {
                "{}"
            } else {
                SIDE_ANSWER
            };
            (json!({"role": "assistant", "content": content}), "stop")
        }
        (_, Action::Shell(command)) => {
            let (name, schema) = offered_shell(body);
            let call = json!({
                "id": format!("call_e2e_{n:03}"),
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": shell_arguments(&schema, command).to_string(),
                },
            });
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                "tool_calls",
            )
        }
        (Kind::Summary, Action::Text(text)) => {
            let tag = body["messages"]
                .as_array()
                .and_then(|m| compaction_shape(m))
                .flatten();
            let content = match tag {
                Some(tag) => format!("<{tag}>\n{text}\n</{tag}>"),
                None => text.clone(),
            };
            (json!({"role": "assistant", "content": content}), "stop")
        }
        (_, Action::Text(text)) => (json!({"role": "assistant", "content": text}), "stop"),
    }
}

pub fn respond(n: u64, kind: &Kind, reply: &Reply, body: &Value) -> HttpResponse {
    let (message, finish) = message(n, kind, reply, body);
    let id = format!("chatcmpl-e2e-{n:03}");
    let model = body["model"].as_str().unwrap_or(DEFAULT_MODEL);
    let usage = json!({
        "prompt_tokens": reply.tokens,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": reply.tokens + OUTPUT_TOKENS,
        "prompt_tokens_details": {"cached_tokens": 0},
    });
    // A fixed time: replies are the same from one run to the next.
    let created = 1_700_000_000;
    if body["stream"] != true {
        return HttpResponse::json(&json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }));
    }
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut c = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
        });
        if let Some(u) = usage {
            c["usage"] = u.clone();
        }
        format!("data: {c}\n\n")
    };
    let mut delta = message;
    // A streamed tool call carries its position in the list.
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (i, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(i);
        }
    }
    let mut sse = chunk(
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
        None,
    );
    sse.push_str(&chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        None,
    ));
    sse.push_str(&chunk(json!([]), Some(&usage)));
    sse.push_str("data: [DONE]\n\n");
    HttpResponse::sse(sse)
}

/// A message's content as text: a string, or the `text` of each part.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Everything the model reads in the request's messages: every message's
/// content (the system prompt's too: Qwen Code appends SessionStart hooks'
/// context to it), tool call arguments and tool results; not the tool
/// definitions.
pub fn conversation_text(body: &Value) -> String {
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        out.push_str(&content_text(&m["content"]));
        out.push('\n');
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            out.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/v1/chat/completions";

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn shell_tool() -> Value {
        json!({"type": "function", "function": {
            "name": "run_shell_command",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "description": {"type": "string"},
                    "is_background": {"type": "boolean"},
                    "timeout": {"type": "number"},
                },
                "required": ["command", "is_background"],
            },
        }})
    }

    /// The `data:` objects of a streamed answer, and whether it ended with `[DONE]`.
    fn chunks(response: HttpResponse) -> (Vec<Value>, bool) {
        assert_eq!(response.content_type, "text/event-stream");
        let text = String::from_utf8(response.body).unwrap();
        assert!(text.ends_with("\n\n"), "{text}");
        let data: Vec<&str> = text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").expect("a data line"))
            .collect();
        let done = data.last() == Some(&"[DONE]");
        let objects = data
            .iter()
            .filter(|d| **d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        (objects, done)
    }

    #[test]
    fn requests_by_kind() {
        let turn = json!({"model": "m", "messages": [
            {"role": "system", "content": "You are Qwen Code."},
            user("TURN 1"),
        ]});
        assert_eq!(classify(PATH, &turn), Kind::Main);
        assert_eq!(classify("/chat/completions", &turn), Kind::Main);
        assert_eq!(classify("/v1/models", &turn), Kind::Other);
        assert_eq!(classify(PATH, &json!({"model": "m"})), Kind::Other);

        let mut compaction = turn.clone();
        compaction["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": [{"type": "text",
                "text": "First, reason in your <analysis> block. Then, produce the <state_snapshot> XML."}]}));
        assert_eq!(classify(PATH, &compaction), Kind::Summary);

        // The words in an earlier message are not a compaction request.
        let mut later = compaction.clone();
        later["messages"]
            .as_array_mut()
            .unwrap()
            .push(user("TURN 2"));
        assert_eq!(classify(PATH, &later), Kind::Main);

        let mut side = turn.clone();
        side["response_format"] = json!({"type": "json_object"});
        assert_eq!(classify(PATH, &side), Kind::Utility);
    }

    /// OpenCode's requests as 1.18.33 sends them, cut short.
    fn opencode_request(system: &str, last_user: &str, tools: usize) -> Value {
        let tools: Vec<Value> = (0..tools)
            .map(|i| json!({"type": "function", "function": {"name": format!("tool{i}")}}))
            .collect();
        json!({"model": "mock-model", "stream": true, "tools": tools, "messages": [
            {"role": "system", "content": system},
            user("TURN 1"),
            user(last_user),
        ]})
    }

    #[test]
    fn opencode_title_and_summary_requests() {
        let title = opencode_request(
            "You are a title generator. You output ONLY a thread title.",
            "\"TURN 1\"",
            0,
        );
        assert_eq!(classify(PATH, &title), Kind::Utility);
        let (objects, _) = chunks(respond(
            1,
            &Kind::Utility,
            &Reply::text("utility", 200, ""),
            &title,
        ));
        assert_eq!(objects[0]["choices"][0]["delta"]["content"], SIDE_ANSWER);

        // The same words in the prompt of a turn that offers tools are the
        // user's, not a side call.
        let turn = opencode_request("You are a title generator.", "TURN 1", 10);
        assert_eq!(classify(PATH, &turn), Kind::Main);
        let turn = opencode_request("You are opencode.", "You are a title generator", 0);
        assert_eq!(classify(PATH, &turn), Kind::Main);

        let summary = opencode_request(
            "You are a context summarization agent.",
            "Here is the conversation so far:\n\n<conversation>\n</conversation>\n\n\
             Create a new anchored summary from the conversation history in the \
             <conversation> tags above so another coding agent can continue the work.",
            0,
        );
        assert_eq!(classify(PATH, &summary), Kind::Summary);
        let answer = respond(
            2,
            &Kind::Summary,
            &Reply::text("summary", 2_000, "E2E_SUMMARY"),
            &json!({"messages": summary["messages"]}),
        );
        let answer: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(
            answer["choices"][0]["message"]["content"], "E2E_SUMMARY",
            "plain text, no tag"
        );
    }

    #[test]
    fn streamed_text_with_usage_then_done() {
        let body = json!({"model": "mock-model", "stream": true, "messages": [user("hi")]});
        let (objects, done) = chunks(respond(
            3,
            &Kind::Main,
            &Reply::text("r", 42_000, "Done."),
            &body,
        ));
        assert!(done, "ends with [DONE]");
        assert_eq!(objects[0]["object"], "chat.completion.chunk");
        assert_eq!(objects[0]["model"], "mock-model");
        assert_eq!(objects[0]["choices"][0]["delta"]["content"], "Done.");
        assert_eq!(objects[1]["choices"][0]["finish_reason"], "stop");
        let last = objects.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["prompt_tokens"], 42_000);
        assert_eq!(last["usage"]["total_tokens"], 42_000 + OUTPUT_TOKENS);
    }

    #[test]
    fn shell_calls_follow_the_offered_tool_schema() {
        let body = json!({"stream": true, "messages": [user("go")], "tools": [
            {"type": "function", "function": {"name": "read_file"}},
            shell_tool(),
        ]});
        let (objects, _) = chunks(respond(
            7,
            &Kind::Main,
            &Reply::shell("t", 5_000, "echo hi > notes.txt"),
            &body,
        ));
        let call = &objects[0]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["index"], 0);
        assert_eq!(call["id"], "call_e2e_007");
        assert_eq!(call["function"]["name"], "run_shell_command");
        let arguments: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            arguments,
            json!({"command": "echo hi > notes.txt", "is_background": false})
        );
        assert_eq!(objects[1]["choices"][0]["finish_reason"], "tool_calls");

        // A client whose shell tool is `bash`, with no schema given.
        let body = json!({"messages": [user("go")], "tools": [
            {"type": "function", "function": {"name": "bash"}},
        ]});
        let answer = respond(1, &Kind::Main, &Reply::shell("t", 10, "ls"), &body);
        let answer: Value = serde_json::from_slice(&answer.body).unwrap();
        let call = &answer["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "bash");
        assert_eq!(call["function"]["arguments"], r#"{"command":"ls"}"#);
    }

    #[test]
    fn unstreamed_answers_are_one_completion() {
        let body = json!({"model": "m", "messages": [user("hi")]});
        let answer = respond(2, &Kind::Main, &Reply::text("r", 900, "ok"), &body);
        assert_eq!(answer.content_type, "application/json");
        let answer: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(answer["object"], "chat.completion");
        assert_eq!(answer["choices"][0]["message"]["content"], "ok");
        assert_eq!(answer["choices"][0]["finish_reason"], "stop");
        assert_eq!(answer["usage"]["prompt_tokens"], 900);
    }

    #[test]
    fn summaries_come_in_the_shape_asked() {
        let body = json!({"messages": [
            {"role": "system", "content": "You summarize."},
            user("TURN 1"),
            user("First, reason in your <analysis> block. Then, produce the <state_snapshot> XML."),
        ]});
        let answer = respond(
            4,
            &Kind::Summary,
            &Reply::text("summary", 2_000, "E2E_SUMMARY"),
            &body,
        );
        let answer: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(
            answer["choices"][0]["message"]["content"],
            "<state_snapshot>\nE2E_SUMMARY\n</state_snapshot>"
        );
    }

    /// Copilot CLI's compaction request: a final user message that starts
    /// with its words and names the sections it wants; the summary comes
    /// back as it is, streamed like any reply, with the summary's usage.
    #[test]
    fn copilot_summary_requests_get_the_plain_summary() {
        let ask = "Please create a detailed summary of the conversation so far. The history is \
                   being compacted so moving forward, all conversation history will be removed.\n\n\
                   The summary should include the following parts:\n1. <overview> - high-level summary";
        let body = json!({"model": "mock-model", "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are the GitHub Copilot CLI."},
                user("TURN 1"),
                {"role": "tool", "tool_call_id": "c", "content": "<shellId: 0 completed with exit code 0>"},
                user(ask),
            ],
            "tools": [copilot_bash_tool()]});
        assert_eq!(classify(PATH, &body), Kind::Summary);
        let (objects, done) = chunks(respond(
            3,
            &Kind::Summary,
            &Reply::text("summary", 2_000, "E2E_SUMMARY"),
            &body,
        ));
        assert!(done);
        assert_eq!(objects[0]["choices"][0]["delta"]["content"], "E2E_SUMMARY");
        assert_eq!(objects[1]["choices"][0]["finish_reason"], "stop");
        assert_eq!(objects.last().unwrap()["usage"]["prompt_tokens"], 2_000);

        // Its words quoted in an earlier message are not a request.
        let mut later = body.clone();
        later["messages"]
            .as_array_mut()
            .unwrap()
            .push(user("TURN 2"));
        assert_eq!(classify(PATH, &later), Kind::Main);
    }

    /// Copilot CLI's shell tool, as 1.0.102 offers it (descriptions cut).
    fn copilot_bash_tool() -> Value {
        json!({"type": "function", "function": {
            "name": "bash",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "description": {"type": "string"},
                    "mode": {"type": "string", "enum": ["sync", "async"]},
                    "initial_wait": {"type": "integer"},
                    "detach": {"type": "boolean"},
                },
                "required": ["command", "description"],
            },
        }})
    }

    /// Among Copilot CLI's tools (`view`, `create`, `bash`, ...) the call
    /// goes to `bash`, with the description it requires.
    #[test]
    fn copilot_shell_calls_go_to_bash_with_a_description() {
        let mut tools: Vec<Value> = ["view", "create", "edit", "read_bash", "grep", "task"]
            .iter()
            .map(|name| json!({"type": "function", "function": {"name": name}}))
            .collect();
        tools.insert(3, copilot_bash_tool());
        let body = json!({"stream": true, "stream_options": {"include_usage": true},
            "messages": [user("go")], "tools": tools});
        let (objects, _) = chunks(respond(
            1,
            &Kind::Main,
            &Reply::shell("t", 6_000, "echo 'step 1' >> notes.txt"),
            &body,
        ));
        let call = &objects[0]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "bash");
        let arguments: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            arguments,
            json!({"command": "echo 'step 1' >> notes.txt", "description": "e2e mock step"})
        );
        assert_eq!(objects.last().unwrap()["usage"]["prompt_tokens"], 6_000);
    }

    #[test]
    fn the_conversation_is_every_message() {
        let body = json!({"messages": [
            {"role": "system", "content": "SYSTEM PROMPT\n\nHOOK CONTEXT"},
            {"role": "user", "content": [{"type": "text", "text": "TURN 1"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "run_shell_command", "arguments": "{\"command\":\"ls\"}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "notes.txt"},
        ], "tools": [shell_tool()]});
        let text = conversation_text(&body);
        for part in ["HOOK CONTEXT", "TURN 1", r#"{"command":"ls"}"#, "notes.txt"] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert!(
            !text.contains("is_background"),
            "no tool definitions: {text}"
        );
    }
}
