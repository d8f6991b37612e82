//! OpenCode: the payloads of hookd's plugin in, its answers out, and how
//! full the context is from the log that plugin keeps.
//!
//! OpenCode has no shell hooks; `hookctl install opencode` writes a plugin
//! (`hooks/opencode/hookd.js`) that OpenCode loads in-process. What this
//! relies on (measured with the real OpenCode 1.18.33):
//! - the plugin sends hookd its events through `hookctl hook --harness
//!   opencode <event>` with a payload of Claude Code's field names
//!   (`session_id`, `cwd`, `transcript_path`, `source`, `trigger`,
//!   `prompt`, `tool_name`) and `"v": 1`;
//! - `transcript_path` is the plugin's log (`<hookd state>/opencode/<session>.jsonl`),
//!   one JSON object per line with `"v": 1` and a `type`:
//!   `model` (the model's `limit` as OpenCode sees it, `compaction.reserved`
//!   and `compaction.auto` of its configuration), `usage` (an assistant
//!   message's `tokens` as OpenCode recorded them, `summary` for the
//!   compaction's own), `compacted` (OpenCode's `session.compacted`, with
//!   the summary's text and size), `prompt`, `tool` (a finished call with
//!   its `args`), and `context` (text hookd's answer gave the model, and
//!   where);
//! - OpenCode compacts after a reply whose count (`tokens.total`, else
//!   input + output + cache read + cache write) reaches its usable room:
//!   `limit.input − reserved` when the model has an input limit, else
//!   `limit.context − max output` (`reserved` is `compaction.reserved`,
//!   else min(20,000, max output); max output is `limit.output` capped at
//!   32,000);
//! - its answer (`{"context": ..}` on stdout) goes where the plugin puts
//!   it: a system message for the first request after a compaction
//!   (SessionStart), a text part of the person's message (a prompt), the
//!   tool's output (a tool call), the compaction request (PreCompact).

use super::lines;
use super::work::{self, LineReader, WorkFacts, WorkLog};
use super::{
    Adapter, Boundary, Cursor, EventName, Fields, HarnessPoint, HookEvent, Launch, LaunchPoints,
    Outcome, SessionFacts, SessionReading, Trigger, Usage, claude_code,
};
use crate::tail::mentions_any;
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value};
use std::io;
use std::path::Path;

/// The version of the plugin's payloads and log lines this module reads.
pub const PLUGIN_VERSION: u64 = 1;
/// OpenCode's cap on a reply's tokens, and its reply room for a model
/// that names no output limit.
const OUTPUT_TOKEN_MAX: u64 = 32_000;
/// The most OpenCode keeps free by default for the compaction's request.
const DEFAULT_RESERVED: u64 = 20_000;
/// How a compaction's boundary is named: by where its line starts.
const BOUNDARY_PREFIX: &str = "opencode log byte ";
/// The lines a reading looks at; any other line is skipped unparsed.
const NEEDLES: [&[u8]; 3] = [b"\"usage\"", b"\"compacted\"", b"\"model\""];

/// OpenCode, as hookd's core sees it.
pub struct OpenCode;

impl Adapter for OpenCode {
    fn parse(&self, req: &HookRequest, fields: Fields) -> HookEvent {
        parse(req, fields)
    }

    fn render(&self, event: &HookEvent, outcome: Outcome) -> HookReply {
        render(event, outcome)
    }

    fn read_session_file(
        &self,
        path: &Path,
        cursor: Option<&Cursor>,
        current: Option<&Usage>,
    ) -> Result<SessionReading, String> {
        read(path, cursor, current)
    }

    fn read_work(&self, path: &Path, max_bytes: u64, keep_prompts: usize) -> io::Result<WorkFacts> {
        work::read_file::<WorkReader>(path, max_bytes, keep_prompts)
    }

    fn calls_after_marker(
        &self,
        path: &Path,
        max_bytes: u64,
        marker: &str,
        from: Option<u64>,
    ) -> io::Result<Option<Vec<work::ToolCall>>> {
        work::calls_after_marker::<WorkReader>(path, max_bytes, marker, from)
    }

    fn compaction_point(&self, session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
        compaction_point(session, config)
    }

    /// Until the plugin has logged the model's limits, no level fires
    /// against a guess.
    fn point_unknown(&self, session: &SessionFacts, config: &WindowConfig) -> bool {
        session.harness_point.is_none() && config.tokens_max.is_none()
    }

    /// The point is read from the model's limits, never guessed from a
    /// compaction.
    fn point_shown_by_compaction(&self, _tokens: u64) -> Option<HarnessPoint> {
        None
    }

    fn has_launch_point(&self) -> bool {
        false
    }

    fn launch_point(
        &self,
        _event: &HookEvent,
        _peer_pid: Option<u32>,
        _known: &LaunchPoints,
    ) -> Option<Launch> {
        None
    }

    fn boundary_offset(&self, boundary: &Boundary) -> Option<u64> {
        boundary.byte_offset(BOUNDARY_PREFIX)
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        injected_context_arrived(path, marker)
    }

    /// `experimental.session.compacting` runs only when a compaction follows.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    fn compaction_summary<'e>(&self, _event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        None
    }

    /// The plugin logs the summary OpenCode wrote with its `compacted` line.
    fn compaction_summary_in_file(&self, path: &Path) -> io::Result<Option<String>> {
        latest_summary(path)
    }

    /// The plugin sends SessionStart(compact) itself, at the first request
    /// after `session.compacted`, and puts its answer into that request.
    fn resumes_at_next_turn(&self) -> bool {
        false
    }

    fn compacts_at_precompact_resumes_at_stop(&self) -> bool {
        false
    }

    fn takes_model_context(&self, kind: &EventName) -> bool {
        takes_context(kind)
    }
}

/// The plugin's payloads carry Claude Code's field names; the project is
/// the payload's `cwd` (OpenCode's `directory`).
fn parse(req: &HookRequest, fields: Fields) -> HookEvent {
    let version = fields.value("v").cloned();
    let mut event = claude_code::parse(req, fields);
    event.claude_code_knobs = None;
    event.project_dir = event.cwd.clone();
    if version.as_ref().and_then(Value::as_u64) != Some(PLUGIN_VERSION) {
        event.problems.push(format!(
            "the OpenCode plugin's payload has version {}, hookd reads {PLUGIN_VERSION}: \
             run `hookctl install opencode` again so that the plugin matches this hookd",
            version.map_or("none".to_owned(), |v| protocol::text::clip(
                &v.to_string(),
                20
            ))
        ));
    }
    event
}

/// Events whose answer the plugin hands to the model.
fn takes_context(kind: &EventName) -> bool {
    matches!(
        kind,
        EventName::SessionStart | EventName::UserPromptSubmit | EventName::PostToolUse
    )
}

/// JSON on stdout for the plugin: `context` for the model (PreCompact's
/// instructions for the compaction request), `message` for the person.
fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = outcome.notes_for_stderr();
    let kind = event.name();
    let context = match kind {
        EventName::PreCompact => outcome.plain_stdout,
        _ => outcome.additional_context.filter(|_| takes_context(&kind)),
    };
    let mut out = Map::new();
    if let Some(context) = context {
        out.insert("context".into(), Value::String(context));
    }
    if let Some(message) = outcome.system_message {
        out.insert("message".into(), Value::String(message));
    }
    super::json_answer(out, stderr)
}

/// OpenCode's count of a reply's context: its total, else the sum of its
/// parts, as OpenCode compares it with its usable room.
fn reply_tokens(tokens: &Value) -> Result<Option<u64>, String> {
    if let Some(total) = token_count("tokens.total", tokens.get("total"))?.filter(|t| *t > 0) {
        return Ok(Some(total));
    }
    let mut sum = None::<u64>;
    for (name, value) in [
        ("tokens.input", tokens.get("input")),
        ("tokens.output", tokens.get("output")),
        (
            "tokens.cache.read",
            tokens.get("cache").and_then(|c| c.get("read")),
        ),
        (
            "tokens.cache.write",
            tokens.get("cache").and_then(|c| c.get("write")),
        ),
    ] {
        if let Some(n) = token_count(name, value)? {
            sum = Some(sum.unwrap_or(0).saturating_add(n));
        }
    }
    Ok(sum)
}

/// What a run of log lines says about the context.
#[derive(Default)]
struct Fold {
    usage: Option<Usage>,
    boundaries: Vec<Boundary>,
    window: Option<u64>,
    point: Option<HarnessPoint>,
    /// The log, as errors name it.
    shown: String,
    /// Reading back: whether a reply's usage and a model line were passed.
    seen_reply: bool,
    seen_model: bool,
}

/// The lines a reading back needs even below where the last one stopped.
#[derive(Clone, Copy, PartialEq)]
enum FigureLine {
    /// A reply's usage (not the compaction's own): the figure.
    Reply,
    /// The model's limits: the point.
    Model,
}

fn figure_line(line: &[u8]) -> Option<FigureLine> {
    let record = serde_json::from_slice::<Value>(line).ok()?;
    match record["type"].as_str()? {
        "usage" if record["summary"] != true => Some(FigureLine::Reply),
        "model" => Some(FigureLine::Model),
        _ => None,
    }
}

impl lines::Records for Fold {
    fn needles(&self) -> &[&'static [u8]] {
        &NEEDLES
    }

    fn gives_figure(&self, line: &[u8]) -> bool {
        figure_line(line).is_some()
    }

    /// The figure and the point are on lines of two kinds: the latest of each.
    fn back_far_enough(&mut self, line: &[u8]) -> bool {
        match figure_line(line) {
            Some(FigureLine::Reply) => self.seen_reply = true,
            Some(FigureLine::Model) => self.seen_model = true,
            None => {}
        }
        self.seen_reply && self.seen_model
    }

    /// Takes in the line at byte `at`, one that mentions a needle.
    fn take(&mut self, at: u64, line: &[u8]) {
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match record["type"].as_str() {
            // The compaction's own reply measures the context before it.
            Some("usage") if record["summary"] == true => {}
            Some("usage") => match reply_tokens(&record["tokens"]) {
                Ok(Some(tokens)) => {
                    self.usage = Some(Usage {
                        tokens,
                        model: record["model"].as_str().map(str::to_owned),
                        from_boundary: false,
                        message_id: record["id"].as_str().map(str::to_owned),
                        invalid: None,
                    });
                }
                Ok(None) => {}
                Err(why) => {
                    self.usage = Some(Usage::invalidated(
                        self.usage.take(),
                        format!(
                            "invalid usage in OpenCode log {} at byte {at}: {why}",
                            self.shown
                        ),
                    ));
                }
            },
            Some("compacted") => {
                // The summary's size: what is left of the context.
                let after = token_count("summary_tokens", record.get("summary_tokens"))
                    .ok()
                    .flatten();
                self.boundaries.push(Boundary {
                    uuid: Some(format!("{BOUNDARY_PREFIX}{at}")),
                    trigger: Some(match record["auto"].as_bool() {
                        Some(false) => Trigger::Manual,
                        _ => Trigger::Auto,
                    }),
                    pre_tokens: self.usage.as_ref().map(|u| u.tokens),
                    post_tokens: after,
                    timestamp: None,
                });
                // The summary is what is left, until the next reply.
                let model = self.usage.as_ref().and_then(|u| u.model.clone());
                self.usage = after.map(|tokens| Usage {
                    tokens,
                    model,
                    from_boundary: true,
                    message_id: None,
                    invalid: None,
                });
            }
            Some("model") => {
                if let Some((window, point)) = limits_point(&record) {
                    self.window = Some(window);
                    self.point = Some(point);
                }
            }
            _ => {}
        }
    }
}

/// Where OpenCode compacts for the model a `model` line names: its
/// window and the point, with how it follows. `None` when the line gives
/// no window.
fn limits_point(record: &Value) -> Option<(u64, HarnessPoint)> {
    let limit = &record["limit"];
    let count = |name: &str| token_count(name, limit.get(name)).ok().flatten();
    let window = count("context").filter(|w| *w > 0)?;
    let input = count("input").filter(|i| *i > 0);
    let max_output = count("output")
        .filter(|o| *o > 0)
        .map_or(OUTPUT_TOKEN_MAX, |o| o.min(OUTPUT_TOKEN_MAX));
    let configured = token_count("compaction.reserved", record.get("reserved"))
        .ok()
        .flatten();
    let reserved = configured.unwrap_or(DEFAULT_RESERVED.min(max_output));
    let (tokens, how) = match input {
        Some(input) => (
            input.saturating_sub(reserved),
            format!(
                "limit.input {input} − {reserved} reserved{}",
                if configured.is_some() {
                    " (compaction.reserved)"
                } else {
                    ""
                }
            ),
        ),
        None => (
            window.saturating_sub(max_output),
            format!("limit.context {window} − {max_output} max output"),
        ),
    };
    let tokens = tokens.max(1);
    let model = record["model"].as_str().unwrap_or("the model");
    let mut basis = format!(
        "{how} = {tokens} (OpenCode's limits for {})",
        protocol::text::clip(model, 60)
    );
    if record["auto"] == false {
        basis.push_str("; compaction.auto is false: OpenCode does not compact by itself");
    }
    Some((
        window,
        HarnessPoint {
            tokens: Some(tokens),
            fraction: Some(tokens as f64 / window as f64),
            basis,
        },
    ))
}

/// Reads what is new in the log: forward from where the last reading
/// stopped, or from the end back to the latest reply and model line when
/// there is no such place or too much was appended.
fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    current: Option<&Usage>,
) -> Result<SessionReading, String> {
    let mut fold = Fold {
        usage: current.cloned(),
        shown: path.display().to_string(),
        ..Fold::default()
    };
    let read = lines::read(path, cursor, &mut fold, "OpenCode log")?;
    let mut reading = lines::session_reading(read, fold.usage, fold.boundaries, fold.window);
    // The plugin logs the model's limits: the point is the log's.
    reading.compaction_point = fold.point;
    Ok(reading)
}

/// Whether text holding `marker` reached the model since the latest
/// compaction: the plugin logs a `context` line when it hands hookd's text
/// to OpenCode, then what OpenCode recorded of the reply to the request
/// that carried it: a tool call it made (logged when the tool ends) or its
/// `usage` (set when its step ends, after its tools). The marker counts
/// once such a line follows it.
fn injected_context_arrived(path: &Path, marker: &str) -> io::Result<bool> {
    let mut answered = false;
    let found = lines::scan_back(path, |line| {
        if !mentions_any(
            line,
            &[b"\"usage\"", b"\"tool\"", b"\"compacted\"", b"\"context\""],
        ) {
            return None;
        }
        let record = serde_json::from_slice::<Value>(line).ok()?;
        match record["type"].as_str() {
            Some("usage") if record["summary"] != true => answered = true,
            Some("tool") => answered = true,
            Some("context")
                if answered && record["text"].as_str().is_some_and(|t| t.contains(marker)) =>
            {
                return Some(true);
            }
            Some("compacted") => return Some(false),
            _ => {}
        }
        None
    })?;
    Ok(found.unwrap_or(false))
}

/// The summary of the latest compaction in the log, if the plugin saw it.
fn latest_summary(path: &Path) -> io::Result<Option<String>> {
    let found = lines::scan_back(path, |line| {
        if !mentions_any(line, &[b"\"compacted\""]) {
            return None;
        }
        let record = serde_json::from_slice::<Value>(line).ok()?;
        (record["type"] == "compacted").then(|| record["summary"].as_str().map(str::to_owned))
    })?;
    Ok(found.flatten())
}

/// Where OpenCode compacts: the point of the model's limits the plugin
/// logged; `window.tokens_max` and `window.models` of hookd's
/// configuration win.
fn compaction_point(session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
    let configured = session.model.and_then(|m| config.model_window(m));
    let point = session.harness_point;
    let window = configured
        .or(session.reported_window)
        .unwrap_or(config.default_window_tokens);
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        return CompactionPoint {
            window,
            tokens: forced,
            basis: format!("{forced} (window.tokens_max)"),
        };
    }
    match (configured, point) {
        (
            None,
            Some(HarnessPoint {
                tokens: Some(tokens),
                basis,
                ..
            }),
        ) => CompactionPoint {
            window,
            tokens: *tokens,
            basis: basis.clone(),
        },
        // A window hookd's configuration gives keeps OpenCode's share of it.
        (
            Some(_),
            Some(HarnessPoint {
                fraction: Some(share),
                ..
            }),
        ) => {
            let tokens = ((*share * window as f64) as u64).max(1);
            CompactionPoint {
                window,
                tokens,
                basis: format!("{tokens} ({share:.3} × {window}, window.models)"),
            }
        }
        _ => {
            let reply_room = OUTPUT_TOKEN_MAX.min(window / 2);
            let tokens = window - reply_room;
            CompactionPoint {
                window,
                tokens,
                basis: format!(
                    "{window} − {reply_room} reply room = {tokens} (no model limits from \
                     OpenCode's plugin yet)"
                ),
            }
        }
    }
}

/// What the plugin's log says about the work: the person's prompts, the
/// tool calls (OpenCode's `write`, `edit`, `read`, `bash`, `todowrite`)
/// and how each ended.
#[derive(Default)]
pub(crate) struct WorkReader {
    log: WorkLog,
}

impl LineReader for WorkReader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        if !mentions_any(line, &[b"\"prompt\"", b"\"tool\""]) {
            return;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match record["type"].as_str() {
            Some("prompt") => {
                if let Some(text) = record["text"].as_str() {
                    self.log.prompt(text);
                }
            }
            Some("tool") => {
                let Some(name) = record["tool"].as_str() else {
                    return;
                };
                let args = &record["args"];
                let id = record["id"].as_str();
                self.log
                    .call(id, name, work::call_target(&file_path_args(args)));
                self.call(name, args);
                self.log.result(id, record["error"].as_str());
            }
            _ => {}
        }
    }
}

/// OpenCode's tools name their file `filePath`; the shared readers know
/// `file_path`.
fn file_path_args(args: &Value) -> Value {
    let mut args = args.clone();
    if let Some(path) = args_path(&args)
        && let Some(map) = args.as_object_mut()
    {
        map.insert("file_path".into(), Value::String(path));
    }
    args
}

fn args_path(args: &Value) -> Option<String> {
    args["filePath"].as_str().map(str::to_owned)
}

impl WorkReader {
    fn call(&mut self, name: &str, args: &Value) {
        match name {
            "write" | "edit" | "multiedit" => {
                if let Some(path) = args_path(args) {
                    self.log.edited(&path);
                }
            }
            "read" => {
                if let Some(path) = args_path(args) {
                    self.log.read(&path);
                }
            }
            "bash" => {
                if let Some(command) = args["command"].as_str() {
                    self.log.shell(command);
                }
            }
            "patch" | "apply_patch" => {
                if let Some(patch) = args["patchText"].as_str() {
                    self.log.patch(patch);
                }
            }
            "todowrite" => {
                if let Some(items) = args["todos"].as_array() {
                    self.log.todos(work::task_list(items, "content", "todo"));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;
    use serde_json::json;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    use std::io::Write;

    fn usage(id: &str, total: u64) -> String {
        json!({"v": 1, "type": "usage", "id": id, "model": "mock/mock-model",
               "tokens": {"total": total, "input": total - 30, "output": 30, "reasoning": 0,
                          "cache": {"read": 0, "write": 0}}, "summary": false})
        .to_string()
    }

    fn model(limit: Value, reserved: Value) -> String {
        json!({"v": 1, "type": "model", "model": "mock/mock-model", "limit": limit,
               "reserved": reserved, "auto": true})
        .to_string()
    }

    fn file_of(lines: &[String]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for line in lines {
            writeln!(f, "{line}").unwrap();
        }
        f
    }

    #[test]
    fn a_replys_count_is_its_total_else_the_sum_of_its_parts() {
        assert_eq!(
            reply_tokens(&json!({"total": 9580, "input": 1})),
            Ok(Some(9580))
        );
        let parts =
            json!({"total": 0, "input": 100, "output": 20, "cache": {"read": 300, "write": 4}});
        assert_eq!(reply_tokens(&parts), Ok(Some(424)));
        assert_eq!(reply_tokens(&json!({})), Ok(None));
        assert!(
            reply_tokens(&json!({"input": -1}))
                .unwrap_err()
                .contains("tokens.input")
        );
    }

    #[test]
    fn the_point_is_opencodes_rule_for_the_models_limits() {
        let point = |limit: Value, reserved: Value| {
            let line: Value = serde_json::from_str(&model(limit, reserved)).unwrap();
            let (window, p) = limits_point(&line).unwrap();
            (window, p.tokens.unwrap(), p.basis)
        };
        // No input limit: the window less the reply's room (its output limit).
        let (window, tokens, basis) =
            point(json!({"context": 10_000, "output": 1_000}), json!(null));
        assert_eq!((window, tokens), (10_000, 9_000));
        assert!(
            basis.contains("limit.context 10000 − 1000 max output = 9000"),
            "{basis}"
        );
        // The reply's room is at most 32,000, and 32,000 when not given.
        assert_eq!(
            point(json!({"context": 200_000, "output": 64_000}), json!(null)).1,
            168_000
        );
        assert_eq!(
            point(json!({"context": 200_000, "output": 0}), json!(null)).1,
            168_000
        );
        // An input limit: less what is reserved, min(20,000, max output) by default.
        assert_eq!(
            point(
                json!({"context": 400_000, "input": 272_000, "output": 128_000}),
                json!(null)
            )
            .1,
            252_000
        );
        assert_eq!(
            point(
                json!({"context": 400_000, "input": 272_000, "output": 8_000}),
                json!(null)
            )
            .1,
            264_000
        );
        let (_, tokens, basis) = point(
            json!({"context": 400_000, "input": 272_000, "output": 8_000}),
            json!(50_000),
        );
        assert_eq!(tokens, 222_000);
        assert!(basis.contains("compaction.reserved"), "{basis}");
        // No window, or one that is not a count: no point.
        let line: Value =
            serde_json::from_str(&model(json!({"context": "big"}), json!(null))).unwrap();
        assert!(limits_point(&line).is_none());
        let mut off: Value =
            serde_json::from_str(&model(json!({"context": 10_000}), json!(null))).unwrap();
        off["auto"] = json!(false);
        assert!(
            limits_point(&off)
                .unwrap()
                .1
                .basis
                .contains("compaction.auto is false")
        );
    }

    #[test]
    fn the_log_gives_the_figure_the_point_and_each_compaction_once() {
        let mut f = file_of(&[
            model(json!({"context": 10_000, "output": 1_000}), json!(null)),
            usage("m1", 3_030),
            usage("m2", 9_580),
        ]);
        let first = read(f.path(), None, None).unwrap();
        assert_eq!(first.reading.method, crate::harness::Method::Backward);
        assert_eq!(first.reading.usage.as_ref().unwrap().tokens, 9_580);
        assert_eq!(first.window, Some(10_000));
        assert_eq!(first.compaction_point.as_ref().unwrap().tokens, Some(9_000));
        let mut summary: Value = serde_json::from_str(&usage("s", 9_630)).unwrap();
        summary["summary"] = json!(true);
        writeln!(f, "{summary}").unwrap();
        writeln!(
            f,
            r#"{{"v":1,"type":"compacted","auto":true,"summary_tokens":30}}"#
        )
        .unwrap();
        let second = read(
            f.path(),
            Some(&first.reading.cursor),
            first.reading.usage.as_ref(),
        )
        .unwrap();
        assert_eq!(second.reading.method, crate::harness::Method::Forward);
        let [boundary] = second.reading.boundaries.as_slice() else {
            panic!("{:?}", second.reading.boundaries)
        };
        assert_eq!(
            (
                boundary.pre_tokens,
                boundary.post_tokens,
                boundary.trigger.clone()
            ),
            (Some(9_580), Some(30), Some(Trigger::Auto))
        );
        assert_eq!(
            OpenCode.boundary_offset(boundary),
            Some(first.reading.cursor.offset + summary.to_string().len() as u64 + 1)
        );
        let after = second.reading.usage.unwrap();
        assert_eq!((after.tokens, after.from_boundary), (30, true));
        // The summary's own reply is never the figure, and a fresh reading
        // finds the same boundary.
        let again = read(f.path(), None, None).unwrap();
        assert_eq!(again.reading.boundaries, second.reading.boundaries);
        assert_eq!(again.reading.usage.unwrap().tokens, 30);
    }

    #[test]
    fn the_summary_is_the_latest_compacted_lines() {
        let f = file_of(&[
            r#"{"v":1,"type":"compacted","summary":"first"}"#.into(),
            usage("m", 2_000),
            r#"{"v":1,"type":"compacted","summary":"second <hookd-state/>"}"#.into(),
            usage("n", 2_100),
        ]);
        assert_eq!(
            latest_summary(f.path()).unwrap().as_deref(),
            Some("second <hookd-state/>")
        );
        let none = file_of(&[usage("m", 2_000)]);
        assert_eq!(latest_summary(none.path()).unwrap(), None);
    }

    #[test]
    fn a_bad_count_is_said_and_the_last_good_one_stands() {
        let bad = usage("b", 100).replace("\"total\":100", "\"total\":\"many\"");
        let f = file_of(&[usage("a", 900), "{not json \"usage\"".into(), bad]);
        let usage = read(f.path(), None, None).unwrap().reading.usage.unwrap();
        assert_eq!(usage.tokens, 900);
        assert!(usage.invalid.unwrap().contains("tokens.total is a string"));
        let missing = read(Path::new("/nonexistent/ses_x.jsonl"), None, None).unwrap_err();
        assert!(missing.contains("is missing"), "{missing}");
    }

    #[test]
    fn the_prompt_arrived_when_a_reply_follows_its_context_line_after_the_compaction() {
        let marker = "[hookd-resume 0123456789ab]";
        let gave = json!({"v": 1, "type": "context", "where": "system", "text": format!("resume {marker}")})
            .to_string();
        let tool =
            json!({"v": 1, "type": "tool", "id": "c", "tool": "bash", "args": {}}).to_string();
        let compacted = r#"{"v":1,"type":"compacted","auto":true}"#.to_owned();
        let arrived =
            |lines: &[String]| injected_context_arrived(file_of(lines).path(), marker).unwrap();
        assert!(arrived(&[compacted.clone(), gave.clone(), tool.clone()]));
        assert!(arrived(&[
            compacted.clone(),
            gave.clone(),
            usage("m", 2_000)
        ]));
        // Handed over, but no request with it was answered yet.
        assert!(!arrived(&[compacted.clone(), gave.clone()]));
        // Before the latest compaction, it is not in the context any more.
        assert!(!arrived(&[gave.clone(), tool.clone(), compacted.clone()]));
        // Another prompt's marker is not this one.
        let other = gave.replace("0123456789ab", "ba9876543210");
        assert!(!arrived(&[compacted, other, tool]));
    }

    fn request(event: &str, payload: &str) -> HookRequest {
        HookRequest {
            harness: Harness::OpenCode,
            event: Some(event.to_owned()),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    #[test]
    fn the_payload_is_versioned_and_the_answer_the_plugins_shape() {
        let ev = crate::harness::parse(&request(
            "session-start",
            r#"{"v":1,"session_id":"ses_1","cwd":"/p/sub","source":"compact"}"#,
        ))
        .unwrap();
        assert_eq!(ev.working_dir.as_deref(), Some(Path::new("/p/sub")));
        assert!(ev.problems.is_empty(), "{:?}", ev.problems);
        let reply = render(
            &ev,
            Outcome {
                additional_context: Some("resume".into()),
                system_message: Some("saved".into()),
                ..Outcome::default()
            },
        );
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(v, json!({"context": "resume", "message": "saved"}));
        // A plugin of another version is said, and still heard.
        let old =
            crate::harness::parse(&request("stop", r#"{"v":7,"session_id":"ses_1"}"#)).unwrap();
        assert!(
            old.problems.iter().any(|p| p.contains("version 7")),
            "{:?}",
            old.problems
        );
        // PreCompact's words are for the compaction request.
        let pre =
            crate::harness::parse(&request("pre-compact", r#"{"v":1,"trigger":"auto"}"#)).unwrap();
        let reply = render(
            &pre,
            Outcome {
                plain_stdout: Some("keep the block".into()),
                additional_context: Some("not this".into()),
                ..Outcome::default()
            },
        );
        assert_eq!(reply.stdout, "{\"context\":\"keep the block\"}\n");
        // Nothing the plugin can hand to the model: no answer.
        let stop = crate::harness::parse(&request("stop", r#"{"v":1}"#)).unwrap();
        let quiet = render(
            &stop,
            Outcome {
                additional_context: Some("x".into()),
                ..Outcome::default()
            },
        );
        assert_eq!(quiet.stdout, "");
    }

    #[test]
    fn hookds_configuration_wins_and_no_level_fires_before_the_limits_are_known() {
        let line: Value = serde_json::from_str(&model(
            json!({"context": 10_000, "output": 1_000}),
            json!(null),
        ))
        .unwrap();
        let (_, point) = limits_point(&line).unwrap();
        let facts = SessionFacts {
            harness: Harness::OpenCode,
            model: Some("mock/mock-model"),
            usage: None,
            statusline_window: None,
            reported_window: Some(10_000),
            harness_point: Some(&point),
            claude_code_knobs: None,
        };
        let config = WindowConfig::default();
        let cp = compaction_point(&facts, &config);
        assert_eq!((cp.window, cp.tokens), (10_000, 9_000));
        assert!(!OpenCode.point_unknown(&facts, &config));
        let models = WindowConfig {
            models: [("mock/".to_owned(), 20_000)].into(),
            ..WindowConfig::default()
        };
        let cp = compaction_point(&facts, &models);
        assert_eq!((cp.window, cp.tokens), (20_000, 18_000), "{}", cp.basis);
        let forced = WindowConfig {
            tokens_max: Some(5_000),
            ..WindowConfig::default()
        };
        assert_eq!(compaction_point(&facts, &forced).tokens, 5_000);
        let unknown = SessionFacts {
            harness_point: None,
            reported_window: None,
            ..facts
        };
        assert!(OpenCode.point_unknown(&unknown, &config));
    }

    #[test]
    fn the_work_is_read_from_the_log() {
        let lines = [
            json!({"v": 1, "type": "prompt", "text": "add a parser to the project"}),
            json!({"v": 1, "type": "tool", "id": "c1", "tool": "write",
                   "args": {"filePath": "/p/src/parser.rs", "content": "x"}, "error": null}),
            json!({"v": 1, "type": "tool", "id": "c2", "tool": "todowrite",
                   "args": {"todos": [{"id": "1", "content": "write tests", "status": "in_progress"}]}}),
            json!({"v": 1, "type": "tool", "id": "c3", "tool": "bash",
                   "args": {"command": "cargo test"}, "error": "exit 101"}),
        ];
        let f = file_of(&lines.map(|l| l.to_string()));
        let facts = work::read_file::<WorkReader>(f.path(), 1 << 20, 5).unwrap();
        assert!(
            facts.edited.iter().any(|e| e.path == "/p/src/parser.rs"),
            "{facts:?}"
        );
        assert_eq!(facts.tasks[0].title, "write tests");
        assert!(
            facts
                .prompts
                .iter()
                .any(|p| p == "add a parser to the project"),
            "{facts:?}"
        );
        let last = facts.last_call.unwrap();
        assert_eq!(last.tool, "bash");
        assert!(last.outcome.unwrap().is_err());
    }
}
