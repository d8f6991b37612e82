//! Qwen Code: hook payloads in, hook output out, and how full the context is
//! from its chat file.
//!
//! What this relies on (measured with the real Qwen Code 0.24.4):
//! - hooks live under `hooks` in `~/.qwen/settings.json` and
//!   `<project>/.qwen/settings.json`, in Claude Code's layout with timeouts
//!   in seconds; `disableAllHooks: true` turns them all off;
//! - its events and payload fields are Claude Code's (`session_id`,
//!   `transcript_path`, `cwd`, `hook_event_name`, `source`, `trigger`,
//!   `compact_summary`, ...); a compaction is PreCompact → PostCompact
//!   (with `compact_summary`) → SessionStart(source `compact`);
//! - `hookSpecificOutput.additionalContext` reaches the model from
//!   SessionStart (in the system text of the next request), UserPromptSubmit,
//!   PostToolUse and PostToolBatch, and PreCompact's goes into the
//!   summarizer's instructions;
//! - the chat file (`~/.qwen/projects/<cwd, / as ->/chats/<session>.jsonl`,
//!   `transcript_path`) has a record per line: each reply (`type`
//!   `assistant`) carries `usageMetadata.promptTokenCount` (the context
//!   now) and `model`; a `system` record of subtype `chat_compression`
//!   marks each compaction, with `originalTokenCount` and `newTokenCount`
//!   (under `systemPayload.info`);
//! - it compacts at min(pct × window, window − 20,000 − 13,000): the window
//!   is `model.generationConfig.contextWindowSize`, else its own for the
//!   model (200,000 for a model it does not know; a reply may name it as
//!   `contextWindowSize`), pct `context.autoCompactThreshold` (0.85),
//!   20,000 the room it keeps for the summary and 13,000 its buffer.

use super::lines;
use super::process::{self, ProcessCache};
use super::work::{self, LineReader, WorkFacts, WorkLog};
use super::{
    Adapter, Boundary, Cursor, Event, EventName, Fields, HarnessPoint, HookEvent, Launch,
    LaunchPoints, Outcome, SessionFacts, SessionReading, Trigger, Usage, claude_code,
};
use crate::tail::{mentions_any, open_regular};
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value, json};
use std::io;
use std::path::{Path, PathBuf};

/// Qwen Code's window for a model it does not know.
const DEFAULT_WINDOW: u64 = 200_000;
/// The share of the window Qwen Code compacts at, unless
/// `context.autoCompactThreshold` says otherwise.
const DEFAULT_PCT: f64 = 0.85;
/// What Qwen Code keeps free for the summary it asks for.
const SUMMARY_RESERVE: u64 = 20_000;
/// How far below the window left after the summary's room it compacts.
const AUTOCOMPACT_BUFFER: u64 = 13_000;
/// A settings file larger than this is not read (they are a few kilobytes).
const SETTINGS_LIMIT: u64 = 1024 * 1024;
/// How a compaction's boundary is named: by where its record starts.
const BOUNDARY_PREFIX: &str = "qwen chat byte ";
/// The records a reading looks at; any other line is skipped unparsed.
const NEEDLES: [&[u8]; 2] = [b"usageMetadata", b"chat_compression"];

/// Qwen Code, as hookd's core sees it.
pub struct QwenCode;

impl Adapter for QwenCode {
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

    /// Qwen Code's point follows from its settings.
    fn point_unknown(&self, _session: &SessionFacts, _config: &WindowConfig) -> bool {
        false
    }

    /// Qwen Code adds an estimate of the pending message to the last
    /// reply's figure before it compares: a compaction does not show the
    /// point.
    fn point_shown_by_compaction(&self, _tokens: u64) -> Option<HarnessPoint> {
        None
    }

    fn has_launch_point(&self) -> bool {
        true
    }

    fn launch_point(
        &self,
        event: &HookEvent,
        peer_pid: Option<u32>,
        known: &LaunchPoints,
    ) -> Option<Launch> {
        Some(launch_point(event, peer_pid, &known.qwen))
    }

    fn boundary_offset(&self, boundary: &Boundary) -> Option<u64> {
        boundary.byte_offset(BOUNDARY_PREFIX)
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        injected_context_arrived(path, marker)
    }

    /// PreCompact fires only when a compaction follows.
    fn compaction_is_due(&self, _session: &SessionFacts, _trigger: Option<&Trigger>) -> bool {
        true
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        false
    }

    /// PostCompact carries the summary, PreCompact's instructions included.
    fn compaction_summary<'e>(&self, event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        match &event.event {
            Event::PostCompact {
                summary: Some(summary),
                ..
            } => Some((summary, "post-compact")),
            _ => None,
        }
    }

    /// PostCompact gives the summary; the chat file's copy is not read.
    fn compaction_summary_in_file(&self, _path: &Path) -> io::Result<Option<String>> {
        Ok(None)
    }

    /// What SessionStart(compact) says goes into the system text of the
    /// requests after it, which the chat file does not keep, and is lost
    /// when the turn ends there: the prompt goes in with the next prompt or
    /// tool batch instead, whose context the chat file records.
    fn resumes_at_next_turn(&self) -> bool {
        true
    }

    fn takes_model_context(&self, kind: &EventName) -> bool {
        takes_additional_context(kind)
    }

    fn compacts_at_precompact_resumes_at_stop(&self) -> bool {
        false
    }
}

/// Qwen Code's payloads carry Claude Code's field names; the project is the
/// payload's `cwd` (Claude Code's variables are not Qwen Code's).
fn parse(req: &HookRequest, fields: Fields) -> HookEvent {
    let mut event = claude_code::parse(req, fields);
    event.claude_code_knobs = None;
    event.project_dir = event.cwd.clone();
    event
}

/// Events whose `hookSpecificOutput.additionalContext` reaches the model.
fn takes_additional_context(kind: &EventName) -> bool {
    matches!(
        kind,
        EventName::SessionStart
            | EventName::UserPromptSubmit
            | EventName::PostToolUse
            | EventName::PostToolBatch
    )
}

/// JSON on stdout: `systemMessage` for the person, the model's words as
/// `hookSpecificOutput.additionalContext` where Qwen Code reads them, and
/// PreCompact's instructions for the summarizer there too (Qwen Code reads
/// PreCompact's `additionalContext`, not its plain stdout).
fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = outcome.notes_for_stderr();
    let kind = event.name();
    let context = match kind {
        EventName::PreCompact => outcome.plain_stdout,
        _ => outcome
            .additional_context
            .filter(|_| takes_additional_context(&kind)),
    };
    let mut out = Map::new();
    if let Some(message) = outcome.system_message {
        out.insert("systemMessage".into(), Value::String(message));
    }
    if let Some(context) = context {
        out.insert(
            "hookSpecificOutput".into(),
            json!({ "hookEventName": kind.pascal(), "additionalContext": context }),
        );
    }
    super::json_answer(out, stderr)
}

/// What a run of records says about the context.
#[derive(Default)]
struct Fold {
    usage: Option<Usage>,
    boundaries: Vec<Boundary>,
    /// The window a reply said it was made in, where Qwen Code writes one.
    window: Option<u64>,
    /// The chat file, as errors name it.
    shown: String,
}

impl lines::Records for Fold {
    fn needles(&self) -> &[&'static [u8]] {
        &NEEDLES
    }

    fn gives_figure(&self, line: &[u8]) -> bool {
        memchr::memmem::find(line, b"usageMetadata").is_some()
            && serde_json::from_slice::<Value>(line).is_ok_and(|r| {
                r["type"] == "assistant" && r["usageMetadata"].is_object() && !is_sidechain(&r)
            })
    }

    /// Takes in the record at byte `at`, a line that mentions a needle.
    fn take(&mut self, at: u64, line: &[u8]) {
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match (record["type"].as_str(), record["subtype"].as_str()) {
            // A subagent's replies measure its own context, not the session's.
            (Some("assistant"), _) if is_sidechain(&record) => {}
            (Some("assistant"), _) if record["usageMetadata"].is_object() => {
                let usage = &record["usageMetadata"];
                match token_count(
                    "usageMetadata.promptTokenCount",
                    usage.get("promptTokenCount"),
                ) {
                    Ok(Some(tokens)) => {
                        self.usage = Some(Usage {
                            tokens,
                            model: record["model"].as_str().map(str::to_owned),
                            from_boundary: false,
                            message_id: record["uuid"].as_str().map(str::to_owned),
                            invalid: None,
                        });
                    }
                    // A reply that reports no prompt (an error) says nothing.
                    Ok(None) => {}
                    Err(why) => {
                        self.usage = Some(Usage::invalidated(
                            self.usage.take(),
                            format!(
                                "invalid usage in Qwen Code chat file {} at byte {at}: {why}",
                                self.shown
                            ),
                        ));
                    }
                }
                if let Ok(Some(window)) =
                    token_count("contextWindowSize", record.get("contextWindowSize"))
                    && window > 0
                {
                    self.window = Some(window);
                }
            }
            (Some("system"), Some("chat_compression")) => {
                let info = &record["systemPayload"]["info"];
                let count = |name: &str| token_count(name, info.get(name)).ok().flatten();
                let after = count("newTokenCount");
                let trigger = match info["triggerReason"].as_str() {
                    Some("manual") => Trigger::Manual,
                    _ => Trigger::Auto,
                };
                self.boundaries.push(Boundary {
                    uuid: Some(format!("{BOUNDARY_PREFIX}{at}")),
                    trigger: Some(trigger),
                    pre_tokens: count("originalTokenCount"),
                    post_tokens: after,
                    timestamp: record["timestamp"].as_str().map(str::to_owned),
                });
                // Qwen Code's own count of what is left, until the next reply.
                let model = self.usage.as_ref().and_then(|u| u.model.clone());
                self.usage = after.map(|tokens| Usage {
                    tokens,
                    model,
                    from_boundary: true,
                    message_id: None,
                    invalid: None,
                });
            }
            _ => {}
        }
    }
}

/// Whether a record is a subagent's: Qwen Code marks them so where it
/// writes them into the session's chat file.
fn is_sidechain(record: &Value) -> bool {
    record["isSidechain"] == true
}

/// Reads what is new in the chat file.
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
    let read = lines::read(path, cursor, &mut fold, "Qwen Code chat file")?;
    // The point is settled from the hook, which knows the project: see `launch_point`.
    Ok(lines::session_reading(
        read,
        fold.usage,
        fold.boundaries,
        fold.window,
    ))
}

/// Whether injected text holding `marker` reached the model since the
/// latest compaction: Qwen Code records a prompt's and a tool batch's hook
/// context with them, so the marker is in the chat file after the
/// compaction's record.
fn injected_context_arrived(path: &Path, marker: &str) -> io::Result<bool> {
    let found = lines::scan_back(path, |line| {
        // A reply quoting the marker is not the prompt arriving.
        if memchr::memmem::find(line, marker.as_bytes()).is_some()
            && serde_json::from_slice::<Value>(line).is_ok_and(|r| r["type"] != "assistant")
        {
            return Some(true);
        }
        let compaction = memchr::memmem::find(line, b"chat_compression").is_some()
            && serde_json::from_slice::<Value>(line)
                .is_ok_and(|r| r["type"] == "system" && r["subtype"] == "chat_compression");
        compaction.then_some(false)
    })?;
    Ok(found.unwrap_or(false))
}

/// Where Qwen Code compacts by its settings files. Qwen Code reads them
/// once, at start, so what the first hook of its process (`peer_pid` or an
/// ancestor) found is kept in `known` for the later ones; without its
/// process, the settings as they are now.
fn launch_point(
    event: &HookEvent,
    peer_pid: Option<u32>,
    known: &ProcessCache<HarnessPoint>,
) -> Launch {
    let qwen = peer_pid.and_then(|pid| {
        process::find(pid, process::HOOK_ANCESTORS, |p| {
            known.contains(p.id) || p.args().is_some_and(|args| runs_qwen(&args))
        })
    });
    let process = qwen.as_ref().map(|p| p.id.describe("qwen"));
    // The session's project directory of Qwen Code's, `projects/<project>`:
    // one Qwen Code process has one.
    let files = event
        .transcript_path
        .as_deref()
        .and_then(|t| t.ancestors().nth(2))
        .or(event.cwd.as_deref())
        .unwrap_or(Path::new(""))
        .to_path_buf();
    if let Some(point) = qwen.as_ref().and_then(|p| known.get(p.id, &files)) {
        return Launch {
            process,
            point: Some(point),
        };
    }
    let point = settings_point(&settings_files(event));
    if let Some(p) = &qwen {
        known.put(p.id, &files, point.clone());
    }
    Launch {
        process,
        point: Some(point),
    }
}

/// Whether a process's arguments are Qwen Code's: its `qwen` launcher, or
/// node running the package's entry script.
fn runs_qwen(args: &[String]) -> bool {
    let script = args.iter().skip(1).find(|a| !a.starts_with('-'));
    args.first().into_iter().chain(script).any(|a| {
        let path = Path::new(a);
        match path.file_name().and_then(|n| n.to_str()) {
            Some("qwen") => true,
            Some("cli.js" | "cli-entry.js") => path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|dir| dir == "qwen-code"),
            _ => false,
        }
    })
}

/// Where one settings layer lives.
#[derive(Debug, Clone, PartialEq)]
enum SettingsFile {
    /// The user's: read as it is.
    Own(PathBuf),
    /// `<project>/.qwen/settings.json`: repository content, read without
    /// following a link and with a bound.
    Project(PathBuf),
}

/// Qwen Code's settings files, lowest precedence first: the user's (next
/// to the chat file's `projects/`, else `~/.qwen`), then the project's.
fn settings_files(event: &HookEvent) -> Vec<SettingsFile> {
    let qwen_dir = event
        .transcript_path
        .as_deref()
        .and_then(qwen_dir_of)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".qwen")));
    let mut files: Vec<SettingsFile> = qwen_dir
        .map(|dir| SettingsFile::Own(dir.join("settings.json")))
        .into_iter()
        .collect();
    if let Some(dir) = &event.cwd {
        files.push(SettingsFile::Project(dir.clone()));
    }
    files
}

/// `~/.qwen` of a chat file at `~/.qwen/projects/<project>/chats/<id>.jsonl`.
fn qwen_dir_of(chat_file: &Path) -> Option<PathBuf> {
    let projects = chat_file.ancestors().nth(3)?;
    (projects.file_name()? == "projects").then(|| projects.parent().map(Path::to_path_buf))?
}

/// One settings file's JSON; `Ok(None)` when it is absent.
fn settings_of(file: &SettingsFile) -> Result<Option<(String, Value)>, String> {
    let (shown, bytes) = match file {
        SettingsFile::Own(path) => {
            let shown = path.display().to_string();
            match open_regular(path) {
                Ok(Some((file, meta))) if meta.len() <= SETTINGS_LIMIT => {
                    let mut bytes = Vec::new();
                    io::Read::read_to_end(&mut io::Read::take(file, SETTINGS_LIMIT), &mut bytes)
                        .map_err(|e| format!("cannot read {shown}: {e}"))?;
                    (shown, bytes)
                }
                Ok(Some(_)) => {
                    return Err(format!("{shown} is larger than {SETTINGS_LIMIT} bytes"));
                }
                Ok(None) => return Err(format!("{shown} is not a regular file")),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read {shown}: {e}")),
            }
        }
        SettingsFile::Project(root) => {
            let shown = root
                .join(protocol::project::QWEN_CODE_PROJECT_SETTINGS)
                .display()
                .to_string();
            let read = crate::project_fs::Dir::open(root)
                .and_then(|dir| dir.open_dir(".qwen"))
                .and_then(|dir| dir.read("settings.json", SETTINGS_LIMIT));
            match read {
                Ok(Some(bytes)) => (shown, bytes),
                Ok(None) => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read {shown}: {e}")),
            }
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown} is not UTF-8"))?;
    match serde_json::from_str(&text) {
        Ok(value) => Ok(Some((shown, value))),
        Err(e) => Err(format!("{shown} is not valid JSON ({e})")),
    }
}

/// What Qwen Code's settings say of its point, the later file winning.
/// With a window set, the point itself: `tokens` the point and `fraction`
/// its share of the window (so the window can be had back). Without one,
/// only the share (`fraction`, Qwen Code's default when unset): the window
/// is then Qwen Code's own for the model, which its chat file may report.
/// A file hookd cannot read and a value Qwen Code would not take are passed
/// over and said in the basis.
fn settings_point(files: &[SettingsFile]) -> HarnessPoint {
    let mut window: Option<(u64, String)> = None;
    let mut pct: Option<(f64, String)> = None;
    let mut passed_over = Vec::new();
    for file in files {
        let (shown, settings) = match settings_of(file) {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err(why) => {
                passed_over.push(format!("{why}: its settings are not counted"));
                continue;
            }
        };
        match &settings["model"]["generationConfig"]["contextWindowSize"] {
            Value::Null => {}
            Value::Number(n) if n.as_u64().is_some_and(|w| w > 0) => {
                window = n.as_u64().map(|w| (w, shown.clone()));
            }
            other => passed_over.push(format!(
                "model.generationConfig.contextWindowSize {} in {shown} is not a number of \
                 tokens: ignored, fix it there",
                protocol::text::clip(&other.to_string(), 40)
            )),
        }
        match &settings["context"]["autoCompactThreshold"] {
            Value::Null => {}
            Value::Number(n) if n.as_f64().is_some_and(|t| t > 0.0 && t <= 1.0) => {
                pct = n.as_f64().map(|t| (t, shown.clone()));
            }
            other => passed_over.push(format!(
                "context.autoCompactThreshold {} in {shown} is not a share of the window \
                 (above 0, at most 1): ignored, fix it there",
                protocol::text::clip(&other.to_string(), 40)
            )),
        }
    }
    let share = pct.as_ref().map_or(DEFAULT_PCT, |(p, _)| *p);
    let mut sources = vec![match &pct {
        Some((_, shown)) => format!("context.autoCompactThreshold in {shown}"),
        None => "Qwen Code's default threshold".to_owned(),
    }];
    if let Some((_, shown)) = &window {
        sources.insert(
            0,
            format!("model.generationConfig.contextWindowSize in {shown}"),
        );
    }
    sources.extend(passed_over);
    let basis = sources.join("; ");
    match window {
        Some((size, _)) => {
            let point = client_point(size, share);
            HarnessPoint {
                tokens: Some(point),
                fraction: Some(point as f64 / size as f64),
                basis: format!("{} ({basis})", point_basis(size, share, point)),
            }
        }
        None => HarnessPoint {
            tokens: None,
            fraction: Some(share),
            basis,
        },
    }
}

/// Where Qwen Code compacts a window of `window` tokens with share `pct`:
/// the smaller of the share and the window less the summary's room and the
/// buffer, or the share alone when the window is too small for that.
fn client_point(window: u64, pct: f64) -> u64 {
    let proportional = (pct * window as f64) as u64;
    match window.checked_sub(SUMMARY_RESERVE + AUTOCOMPACT_BUFFER) {
        Some(ceiling) if ceiling > 0 => proportional.min(ceiling),
        _ => proportional,
    }
}

fn point_basis(window: u64, pct: f64, point: u64) -> String {
    format!(
        "min({pct} × {window}, {window} − {SUMMARY_RESERVE} summary reserve − \
         {AUTOCOMPACT_BUFFER} buffer) = {point}"
    )
}

/// Where Qwen Code compacts: the point its settings give (as its process
/// started with them), else its share of the window its chat file reports, else of its
/// default window; `window.tokens_max` and `window.models` of hookd's
/// configuration win.
fn compaction_point(session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
    let configured = session.model.and_then(|m| config.model_window(m));
    let settings = session.harness_point;
    // A point the settings fixed, with the window it was taken from.
    let fixed = settings.and_then(|p| {
        let (tokens, share) = (p.tokens?, p.fraction.filter(|f| *f > 0.0)?);
        Some((tokens, (tokens as f64 / share).round() as u64, p))
    });
    let window = configured
        .or(fixed.map(|(_, window, _)| window))
        .or(session.reported_window)
        .unwrap_or(DEFAULT_WINDOW);
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        return CompactionPoint {
            window,
            tokens: forced,
            basis: format!("{forced} (window.tokens_max)"),
        };
    }
    if let (None, Some((tokens, _, point))) = (configured, fixed) {
        return CompactionPoint {
            window,
            tokens,
            basis: point.basis.clone(),
        };
    }
    let share = settings
        .filter(|p| p.tokens.is_none())
        .and_then(|p| p.fraction)
        .unwrap_or(DEFAULT_PCT);
    let tokens = client_point(window, share);
    let whose = if configured.is_some() {
        "window.models"
    } else if session.reported_window.is_some() {
        "the window Qwen Code's chat file reports"
    } else {
        "Qwen Code's default window"
    };
    let threshold = settings
        .filter(|p| p.tokens.is_none())
        .map_or("Qwen Code's default threshold", |p| p.basis.as_str());
    CompactionPoint {
        window,
        tokens,
        basis: format!(
            "{} ({whose}; {threshold})",
            point_basis(window, share, tokens)
        ),
    }
}

/// What a chat file says about the work: the person's prompts (`user`
/// records), the todo list (`todo_write` calls: the whole list each time),
/// the files the agent wrote (`write_file`, `edit`, and its shell commands)
/// and how each call ended (`tool_result` records).
#[derive(Default)]
pub(crate) struct WorkReader {
    log: WorkLog,
}

impl LineReader for WorkReader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        if !mentions_any(line, &[b"\"user\"", b"functionCall", b"tool_result"]) {
            return;
        }
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let parts = record["message"]["parts"].as_array();
        match record["type"].as_str() {
            Some("user") => {
                let text: Vec<&str> = parts
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    self.log.prompt(&text.join("\n"));
                }
            }
            Some("assistant") => {
                for call in parts.into_iter().flatten().map(|p| &p["functionCall"]) {
                    let Some(name) = call["name"].as_str() else {
                        continue;
                    };
                    let args = &call["args"];
                    self.log
                        .call(call["id"].as_str(), name, work::call_target(args));
                    self.call(name, args);
                }
            }
            Some("tool_result") => {
                let result = &record["toolCallResult"];
                let id = result["callId"].as_str();
                match result["status"].as_str() {
                    Some("error" | "cancelled") => {
                        let words = result["error"]["message"]
                            .as_str()
                            .or(result["status"].as_str())
                            .unwrap_or("");
                        self.log.result(id, Some(words));
                    }
                    _ => self.log.result(id, None),
                }
            }
            _ => {}
        }
    }
}

impl WorkReader {
    /// Qwen Code's tools are Gemini CLI's, its to-do list excepted.
    fn call(&mut self, name: &str, args: &Value) {
        super::gemini_cli::note_tool_call(&mut self.log, name, args, ("todo_write", "content"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Method;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    use std::io::Write;

    fn reply(uuid: &str, prompt: u64) -> String {
        json!({
            "uuid": uuid, "type": "assistant", "model": "qwen3-coder-plus",
            "message": {"role": "model", "parts": [{"text": "ok"}]},
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 20,
                              "totalTokenCount": prompt + 20, "cachedContentTokenCount": 0}
        })
        .to_string()
    }

    fn compression(original: u64, new: u64) -> String {
        json!({
            "uuid": "c", "type": "system", "subtype": "chat_compression",
            "timestamp": "2026-11-26T08:00:00.000Z",
            "systemPayload": {"info": {"originalTokenCount": original, "newTokenCount": new,
                                       "triggerReason": "token_limit"},
                              "compressedHistory": []}
        })
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
    fn the_figure_is_the_latest_replys_prompt_tokens() {
        let mut windowed: Value = serde_json::from_str(&reply("b", 4200)).unwrap();
        windowed["contextWindowSize"] = json!(1_000_000);
        let f = file_of(&[reply("a", 1000), windowed.to_string()]);
        let r = read(f.path(), None, None).unwrap();
        assert_eq!(r.window, Some(1_000_000), "the window a reply names");
        let usage = r.reading.usage.unwrap();
        assert_eq!(usage.tokens, 4200);
        assert_eq!(usage.model.as_deref(), Some("qwen3-coder-plus"));
        assert!(r.reading.boundaries.is_empty());
        assert_eq!(r.reading.method, Method::Backward);
    }

    #[test]
    fn a_compression_record_is_a_boundary_and_its_new_count_the_figure() {
        let mut f = file_of(&[reply("a", 180_000)]);
        let first = read(f.path(), None, None).unwrap();
        writeln!(f, "{}", compression(180_000, 3_000)).unwrap();
        let second = read(
            f.path(),
            Some(&first.reading.cursor),
            first.reading.usage.as_ref(),
        )
        .unwrap();
        assert_eq!(second.reading.method, Method::Forward);
        let [boundary] = second.reading.boundaries.as_slice() else {
            panic!("{:?}", second.reading.boundaries)
        };
        assert_eq!(boundary.pre_tokens, Some(180_000));
        assert_eq!(boundary.post_tokens, Some(3_000));
        assert_eq!(boundary.trigger, Some(Trigger::Auto));
        let at = QwenCode.boundary_offset(boundary).unwrap();
        assert_eq!(at, first.reading.cursor.offset);
        let usage = second.reading.usage.unwrap();
        assert_eq!((usage.tokens, usage.from_boundary), (3_000, true));
        // Read again from nothing, the same record is the same boundary.
        let again = read(f.path(), None, None).unwrap();
        assert_eq!(again.reading.boundaries, second.reading.boundaries);
        // And read on, nothing new.
        let after = read(f.path(), Some(&second.reading.cursor), Some(&usage)).unwrap();
        assert_eq!(after.reading.method, Method::Unchanged);
        assert!(after.reading.boundaries.is_empty());
    }

    #[test]
    fn a_bad_count_is_said_and_the_last_good_one_stands() {
        let bad = reply("b", 1).replace("\"promptTokenCount\":1", "\"promptTokenCount\":-5");
        let f = file_of(&[reply("a", 900), bad]);
        let first = read(f.path(), None, None).unwrap();
        let usage = first.reading.usage.unwrap();
        assert!(usage.invalid.unwrap().contains("negative"));
        // A subagent's reply is its own context's, not the session's.
        let mut sub: Value = serde_json::from_str(&reply("s", 90_000)).unwrap();
        sub["isSidechain"] = json!(true);
        let f = file_of(&[reply("a", 900), sub.to_string()]);
        assert_eq!(
            read(f.path(), None, None)
                .unwrap()
                .reading
                .usage
                .unwrap()
                .tokens,
            900
        );
        // Garbage lines and other records are skipped.
        let f = file_of(&[
            reply("a", 900),
            "{not json usageMetadata".into(),
            "[]".into(),
        ]);
        assert_eq!(
            read(f.path(), None, None)
                .unwrap()
                .reading
                .usage
                .unwrap()
                .tokens,
            900
        );
    }

    #[test]
    fn the_point_is_the_smaller_of_the_share_and_the_window_less_reserve_and_buffer() {
        assert_eq!(client_point(200_000, 0.85), 167_000);
        assert_eq!(client_point(1_000_000, 0.85), 850_000);
        assert_eq!(client_point(200_000, 0.5), 100_000);
        // A window too small for the reserve falls back to the share.
        assert_eq!(client_point(30_000, 0.85), 25_500);
    }

    #[test]
    fn settings_give_the_window_and_share_the_later_file_winning() {
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join("settings.json");
        std::fs::write(
            &user,
            r#"{"model":{"generationConfig":{"contextWindowSize":131072}},"context":{"autoCompactThreshold":0.7}}"#,
        )
        .unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".qwen")).unwrap();
        std::fs::write(
            project.path().join(".qwen/settings.json"),
            r#"{"context":{"autoCompactThreshold":"high"}}"#,
        )
        .unwrap();
        let point = settings_point(&[
            SettingsFile::Own(user.clone()),
            SettingsFile::Project(project.path().to_path_buf()),
        ]);
        assert_eq!(point.tokens, Some(91_750));
        assert!(
            point
                .basis
                .contains("context.autoCompactThreshold \"high\""),
            "{}",
            point.basis
        );
        let facts = SessionFacts {
            harness: Harness::QwenCode,
            model: None,
            usage: None,
            statusline_window: None,
            reported_window: None,
            harness_point: Some(&point),
            claude_code_knobs: None,
        };
        let cp = compaction_point(&facts, &WindowConfig::default());
        assert_eq!((cp.window, cp.tokens), (131_072, 91_750));
        // No settings at all: Qwen Code's defaults, of the window its chat
        // file reports when it does.
        let none = settings_point(&[SettingsFile::Own(home.path().join("absent.json"))]);
        assert_eq!((none.tokens, none.fraction), (None, Some(0.85)));
        let facts = SessionFacts {
            harness_point: Some(&none),
            ..facts
        };
        let cp = compaction_point(&facts, &WindowConfig::default());
        assert_eq!((cp.window, cp.tokens), (200_000, 167_000), "{}", cp.basis);
        let facts = SessionFacts {
            reported_window: Some(1_000_000),
            ..facts
        };
        let cp = compaction_point(&facts, &WindowConfig::default());
        assert_eq!((cp.window, cp.tokens), (1_000_000, 850_000), "{}", cp.basis);
    }

    /// Qwen Code reads its settings once, at start: an edit while it runs
    /// does not move the point hookd shows for that process; a hook without
    /// its process takes the settings as they are now.
    #[test]
    fn a_running_qwen_keeps_the_settings_it_started_with() {
        use crate::harness::process::tests::harness_with_child;
        let home = tempfile::tempdir().unwrap();
        let qwen_dir = home.path().join(".qwen");
        let chats = qwen_dir.join("projects/-proj/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let settings = qwen_dir.join("settings.json");
        let share = |pct: f64| {
            std::fs::write(
                &settings,
                json!({"context": {"autoCompactThreshold": pct}}).to_string(),
            )
            .unwrap();
        };
        share(0.5);
        let payload = json!({"session_id": "s1", "transcript_path": chats.join("s1.jsonl")});
        let event = crate::harness::parse(&request("pre-compact", &payload.to_string())).unwrap();
        let bin = tempfile::tempdir().unwrap();
        let (mut qwen, hook) = harness_with_child(bin.path(), "qwen", &["--yolo"], &[]);
        let known = ProcessCache::default();
        let first = launch_point(&event, Some(hook), &known);
        share(0.7);
        let edited = launch_point(&event, Some(hook), &known);
        let _ = std::process::Command::new("kill")
            .arg(hook.to_string())
            .status();
        qwen.kill().unwrap();
        qwen.wait().unwrap();
        let without_process = launch_point(&event, None, &known);

        let fraction = |l: &Launch| l.point.as_ref().and_then(|p| p.fraction);
        assert!(first.process.is_some(), "the hook's qwen was found");
        assert_eq!(fraction(&first), Some(0.5));
        assert_eq!(fraction(&edited), Some(0.5), "kept for the running process");
        assert_eq!(fraction(&without_process), Some(0.7), "read as it is now");
    }

    #[test]
    fn the_arrival_check_finds_the_marker_after_the_compaction_and_nothing_else() {
        let marker = "[hookd-resume 0123456789ab]";
        let user = json!({"type": "user", "message": {"parts": [{"text": marker}]}}).to_string();
        let f = file_of(&[reply("a", 180_000), compression(180_000, 3_000)]);
        assert!(!injected_context_arrived(f.path(), marker).unwrap());
        // A reply after the compaction is no sign: SessionStart's words are
        // not in the request it answered.
        let f = file_of(&[
            reply("a", 180_000),
            compression(180_000, 3_000),
            reply("b", 3_100),
        ]);
        assert!(!injected_context_arrived(f.path(), marker).unwrap());
        let f = file_of(&[
            reply("a", 180_000),
            compression(180_000, 3_000),
            user.clone(),
            reply("b", 3_100),
        ]);
        assert!(injected_context_arrived(f.path(), marker).unwrap());
        // The model quoting it is no sign either.
        let quoted =
            json!({"type": "assistant", "message": {"parts": [{"text": marker}]}}).to_string();
        let f = file_of(&[reply("a", 180_000), compression(180_000, 3_000), quoted]);
        assert!(!injected_context_arrived(f.path(), marker).unwrap());
        // Before the latest compaction, it is not in the context any more.
        let f = file_of(&[user, reply("a", 180_000), compression(180_000, 3_000)]);
        assert!(!injected_context_arrived(f.path(), marker).unwrap());
    }

    fn request(event: &str, payload: &str) -> HookRequest {
        HookRequest {
            harness: Harness::QwenCode,
            event: Some(event.to_owned()),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: BTreeMap::from([("CLAUDE_PROJECT_DIR".to_owned(), "/elsewhere".to_owned())]),
            cwd: None,
        }
    }

    #[test]
    fn the_project_is_the_payloads_cwd_and_the_answer_qwen_codes() {
        let ev = crate::harness::parse(&request(
            "session-start",
            r#"{"session_id":"s","cwd":"/p/sub","source":"compact"}"#,
        ))
        .unwrap();
        assert_eq!(ev.working_dir.as_deref(), Some(Path::new("/p/sub")));
        assert!(ev.claude_code_knobs.is_none());
        let outcome = Outcome {
            additional_context: Some("resume".into()),
            ..Outcome::default()
        };
        let reply = render(&ev, outcome);
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "resume");
        // PreCompact's words for the summarizer go where Qwen Code reads them.
        let pre = crate::harness::parse(&request("pre-compact", r#"{"trigger":"auto"}"#)).unwrap();
        let reply = render(
            &pre,
            Outcome {
                plain_stdout: Some("keep the block".into()),
                ..Outcome::default()
            },
        );
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(
            v["hookSpecificOutput"]["additionalContext"],
            "keep the block"
        );
        // PreToolUse's context does not reach Qwen Code's model: not sent.
        let pre_tool = crate::harness::parse(&request("pre-tool-use", "{}")).unwrap();
        let reply = render(
            &pre_tool,
            Outcome {
                additional_context: Some("x".into()),
                ..Outcome::default()
            },
        );
        assert_eq!(reply.stdout, "");
    }

    #[test]
    fn the_work_is_read_from_the_records() {
        let lines = [
            json!({"type": "user", "message": {"role": "user", "parts": [{"text": "add a parser"}]}}),
            // A prompt with hookd's words recorded beside it.
            json!({"type": "user", "message": {"role": "user", "parts": [
                {"text": "now the tests"},
                {"text": "<hook_context>[hookd: 70% of the way] [hookd-resume abc]</hook_context>"}
            ]}}),
            json!({"type": "assistant", "message": {"role": "model", "parts": [
                {"functionCall": {"id": "c1", "name": "write_file",
                                  "args": {"file_path": "/p/src/parser.rs", "content": "x"}}},
                {"functionCall": {"id": "c2", "name": "todo_write",
                                  "args": {"todos": [{"id": "1", "content": "write tests", "status": "in_progress"}]}}}
            ]}}),
            json!({"type": "tool_result", "toolCallResult": {"callId": "c1", "status": "success"}}),
        ];
        let f = file_of(&lines.map(|l| l.to_string()));
        let facts = work::read_file::<WorkReader>(f.path(), 1 << 20, 5).unwrap();
        assert!(
            facts.edited.iter().any(|e| e.path == "/p/src/parser.rs"),
            "{facts:?}"
        );
        assert_eq!(facts.tasks[0].title, "write tests");
        assert!(
            facts.prompts.iter().any(|p| p == "add a parser"),
            "{facts:?}"
        );
        assert!(
            facts.prompts.iter().any(|p| p == "now the tests")
                && !facts.prompts.iter().any(|p| p.contains("hookd")),
            "hookd's own words are not the person's: {facts:?}"
        );
    }
}
