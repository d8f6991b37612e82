//! One module per agent harness, each one [`Adapter`] implementation: it
//! turns the harness's hook payloads into [`HookEvent`]s, hookd's
//! [`Outcome`]s back into what the harness reads, and reads its session
//! file. Adding a harness means adding a module here, its row in
//! [`adapter`], and a folder under `hooks/`.

pub mod claude_code;
pub mod codex;
pub mod copilot_cli;
pub mod cursor;
pub mod event;
pub mod gemini_cli;
pub mod lines;
pub mod opencode;
pub mod process;
pub mod qwen_code;
pub mod reading;
pub mod work;

pub use reading::{Boundary, Cursor, HarnessPoint, Method, Reading, SessionReading, Usage};

pub use claude_code::statusline;

pub use codex::{Launch, POINT_UNKNOWN};

pub use event::{Event, EventName, EventParts, StartSource, Trigger};

use protocol::wire::{Harness, HookReply, HookRequest};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// One hook, decoded: what every harness module produces.
#[derive(Debug, Clone)]
pub struct HookEvent {
    pub harness: Harness,
    /// The event's kind and what only that kind carries.
    pub event: Event,
    pub session_id: Option<String>,
    pub transcript_path: Option<PathBuf>,
    /// The project root: the work tree root of the directory the harness
    /// names (its project variable, else the payload's cwd), or that
    /// directory itself outside a repository.
    pub project_dir: Option<PathBuf>,
    /// The directory the harness names: where the agent works, at or below
    /// `project_dir`.
    pub working_dir: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub model: Option<String>,
    /// Set for events inside a subagent.
    pub agent_id: Option<String>,
    /// Claude Code's launch settings (its compaction variables) from the
    /// hook's environment; `None` for another harness.
    pub claude_code_knobs: Option<protocol::pressure::Knobs>,
    /// The context figure the hook itself carries (Cursor's preCompact,
    /// the only place Cursor gives one); `None` for every other hook.
    pub reported_context: Option<ReportedContext>,
    /// The hook's allow-listed environment.
    pub env: BTreeMap<String, String>,
    /// Fields that were present but not what the harness documents.
    pub problems: Vec<String>,
}

/// A context figure from a hook's own fields, checked: the tokens (or what
/// is wrong with them) and the window they fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedContext {
    pub tokens: Result<u64, String>,
    pub window: Option<u64>,
}

impl HookEvent {
    /// The event's name, without what it carries.
    pub fn name(&self) -> EventName {
        self.event.name()
    }
}

/// What hookd wants the harness to show; each harness renders it its own way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// For the person.
    pub system_message: Option<String>,
    /// For the model.
    pub additional_context: Option<String>,
    /// Plain stdout, for events whose output the harness reads as text
    /// (PreCompact: extra instructions for the summarizer).
    pub plain_stdout: Option<String>,
    /// Lines for stderr (shown in the harness's verbose mode only).
    pub notes: Vec<String>,
}

/// Most characters of each text an answer carries (for the model, for the
/// person, plain stdout, the notes): the longest resume prompt and the
/// lessons after it fit, and an answer stays far inside a frame. Text
/// beyond it is cut, never the whole answer dropped.
pub const MAX_ANSWER_CHARS: usize = 128 * 1024;

/// What ends a text that was cut to fit.
const CUT_NOTE: &str = "\n…(cut: too long for one hook answer)";

// Each character is at most 7 bytes once its JSON is put in a frame's JSON
// (`\u0001` escaped again): four texts of MAX_ANSWER_CHARS fit a frame.
const _: () = assert!(4 * 7 * MAX_ANSWER_CHARS < protocol::frame::MAX_FRAME_BYTES);

/// `text`, cut to at most `max` characters, saying so.
fn cut_to(mut text: String, max: usize) -> String {
    if text.len() <= max || text.chars().count() <= max {
        return text;
    }
    let note = CUT_NOTE.chars().count();
    let keep = if max > note { max - note } else { max };
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    text.truncate(end);
    if max > note {
        text.push_str(CUT_NOTE);
    }
    text
}

/// `text` after `before` (if any) with `separator`, within
/// [`MAX_ANSWER_CHARS`]: what came first stays whole.
fn append_within(before: Option<String>, separator: &str, text: String) -> String {
    match before {
        None => cut_to(text, MAX_ANSWER_CHARS),
        Some(mut before) => {
            let used = before.chars().count() + separator.chars().count();
            if used >= MAX_ANSWER_CHARS {
                return cut_to(before, MAX_ANSWER_CHARS);
            }
            before.push_str(separator);
            before.push_str(&cut_to(text, MAX_ANSWER_CHARS - used));
            before
        }
    }
}

impl Outcome {
    /// Adds a line for the person after whatever is there already.
    pub fn say(&mut self, text: String) {
        self.system_message = Some(append_within(self.system_message.take(), "\n", text));
    }

    /// Adds text for the model after whatever is there already.
    pub fn add_context(&mut self, text: String) {
        self.additional_context = Some(append_within(self.additional_context.take(), "\n\n", text));
    }

    /// The notes as the harness's stderr shows them, one line each.
    pub fn notes_for_stderr(&self) -> String {
        self.notes.iter().map(|n| format!("hookd: {n}\n")).collect()
    }

    /// Every text within [`MAX_ANSWER_CHARS`], whichever way it was set.
    fn cut_to_fit(mut self) -> Outcome {
        let cut = |text: Option<String>| text.map(|t| cut_to(t, MAX_ANSWER_CHARS));
        self.system_message = cut(self.system_message);
        self.additional_context = cut(self.additional_context);
        self.plain_stdout = cut(self.plain_stdout);
        let mut left = MAX_ANSWER_CHARS;
        let mut notes = Vec::new();
        for note in std::mem::take(&mut self.notes) {
            if left == 0 {
                break;
            }
            let note = cut_to(note, left);
            left = left.saturating_sub(note.chars().count() + 1);
            notes.push(note);
        }
        self.notes = notes;
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the hook payload is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the hook payload is JSON but not an object (it is {0})")]
    NotObject(&'static str),
}

/// Decodes a hook request for its harness.
pub fn parse(req: &HookRequest) -> Result<HookEvent, PayloadError> {
    let value: Value = serde_json::from_str(req.payload.get()).map_err(PayloadError::NotJson)?;
    let Value::Object(fields) = value else {
        return Err(PayloadError::NotObject(protocol::pressure::json_kind(
            &value,
        )));
    };
    // Cursor runs Claude Code's hooks too, with its own payloads: those are
    // Cursor's, answered in Cursor's format.
    let harness = match req.harness {
        Harness::ClaudeCode if cursor::is_cursor_payload(&fields) => Harness::Cursor,
        named => named,
    };
    let fields = Fields {
        map: fields,
        problems: Vec::new(),
    };
    let mut event = adapter(harness).parse(req, fields);
    event.harness = harness;
    // Every harness names the directory it started in; the project is the
    // repository that holds it, so a session in `pkg/sub` shares one
    // `.workflow/` and one settings file with the rest of the repository.
    event.working_dir = event.project_dir.clone();
    event.project_dir = event
        .working_dir
        .as_deref()
        .map(protocol::project::project_root);
    Ok(event)
}

/// Renders an outcome in the harness's output format.
pub fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let mut outcome = outcome.cut_to_fit();
    // The person's harness shows these words on a terminal, and the model
    // reads the rest: no escape sequence reaches either, whatever they quote.
    for text in [
        &mut outcome.system_message,
        &mut outcome.additional_context,
        &mut outcome.plain_stdout,
    ]
    .into_iter()
    .flatten()
    .chain(outcome.notes.iter_mut())
    {
        if let std::borrow::Cow::Owned(clean) = protocol::text::for_terminal(text) {
            *text = clean;
        }
    }
    adapter(event.harness).render(event, outcome)
}

/// An answer of one JSON object on stdout, nothing when it holds nothing,
/// and exit 0.
fn json_answer(out: Map<String, Value>, stderr: String) -> HookReply {
    HookReply {
        stdout: if out.is_empty() {
            String::new()
        } else {
            Value::Object(out).to_string() + "\n"
        },
        stderr,
        exit_code: 0,
    }
}

/// What a harness needs to know of a session to place its compaction point.
pub struct SessionFacts<'a> {
    pub harness: Harness,
    pub model: Option<&'a str>,
    pub usage: Option<&'a Usage>,
    /// The window Claude Code's statusLine reported.
    pub statusline_window: Option<u64>,
    /// The window the harness's own session file reported.
    pub reported_window: Option<u64>,
    /// Where the harness's own settings say it compacts.
    pub harness_point: Option<&'a HarnessPoint>,
    /// Claude Code's launch settings; `None` for another harness, or a
    /// Claude Code session no hook with an environment has reached yet.
    pub claude_code_knobs: Option<&'a protocol::pressure::Knobs>,
}

/// What each harness process seen took in at its launch.
#[derive(Default)]
pub struct LaunchPoints {
    pub(super) codex: process::ProcessCache<codex::ProcessPoint>,
    pub(super) gemini: process::ProcessCache<Option<HarnessPoint>>,
    pub(super) qwen: process::ProcessCache<HarnessPoint>,
}

/// Everything hookd asks of one harness: one implementation per harness
/// module, reached through [`adapter`]. No method has a default body, so a
/// harness that leaves one out does not compile.
pub trait Adapter: Sync {
    /// The payload's fields as a [`HookEvent`]; `project_dir` is the
    /// directory the harness names (the project root is found after).
    fn parse(&self, req: &HookRequest, fields: Fields) -> HookEvent;

    /// An outcome, already cut to fit and cleaned, in the harness's format.
    fn render(&self, event: &HookEvent, outcome: Outcome) -> HookReply;

    /// What is new in the session's file. Blocking.
    fn read_session_file(
        &self,
        path: &Path,
        cursor: Option<&Cursor>,
        current: Option<&Usage>,
    ) -> Result<SessionReading, String>;

    /// What the session's file says about the work (tasks, files written,
    /// requests), from its last `max_bytes`. Blocking.
    fn read_work(
        &self,
        path: &Path,
        max_bytes: u64,
        keep_prompts: usize,
    ) -> io::Result<work::WorkFacts>;

    /// The agent's first tool calls after the line of its session file that
    /// holds `marker` (an injected resume prompt's), from the last
    /// `max_bytes`, and from offset `from` on when the file still reaches
    /// it; `None` when no line read holds the marker. Blocking.
    fn calls_after_marker(
        &self,
        path: &Path,
        max_bytes: u64,
        marker: &str,
        from: Option<u64>,
    ) -> io::Result<Option<Vec<work::ToolCall>>>;

    /// Where the session's harness compacts (or compresses) its context.
    fn compaction_point(
        &self,
        session: &SessionFacts,
        config: &protocol::config::WindowConfig,
    ) -> protocol::pressure::CompactionPoint;

    /// Whether the session's compaction point cannot be known yet (it is
    /// learned at the first compaction): no level fires against a guess.
    fn point_unknown(
        &self,
        session: &SessionFacts,
        config: &protocol::config::WindowConfig,
    ) -> bool;

    /// The point an automatic compaction at `tokens` shows, for a harness
    /// that compacts as soon as its figure reaches its point.
    fn point_shown_by_compaction(&self, tokens: u64) -> Option<HarnessPoint>;

    /// Whether a hook of this harness can tell where its process compacts.
    fn has_launch_point(&self) -> bool;

    /// Where the harness that ran a hook compacts, from what only its hooks
    /// can see (its command line, read from the hook's process `peer_pid`
    /// and its ancestors; its project's settings), kept per harness process
    /// in `known`: `None` when that cannot be known. Blocking, and asked
    /// only when [`Adapter::has_launch_point`].
    fn launch_point(
        &self,
        event: &HookEvent,
        peer_pid: Option<u32>,
        known: &LaunchPoints,
    ) -> Option<Launch>;

    /// Where a compaction's record starts in the session's file, for a
    /// harness that names its compactions so (the file only grows: a later
    /// record is a later compaction).
    fn boundary_offset(&self, boundary: &Boundary) -> Option<u64>;

    /// Whether injected text holding `marker` reached the model since the
    /// latest compaction, by what the session's file recorded. Blocking.
    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool>;

    /// Whether a PreCompact-like hook with this `trigger` means a
    /// compaction now.
    fn compaction_is_due(&self, session: &SessionFacts, trigger: Option<&Trigger>) -> bool;

    /// Whether the harness's automatic PreCompact-like hook fires again and
    /// again while no compaction follows, so that one save per epoch stands
    /// for all of them.
    fn precompact_repeats_without_compaction(&self) -> bool;

    /// The compaction summary a hook carries, and what to call where it
    /// came from.
    fn compaction_summary<'e>(&self, event: &'e HookEvent) -> Option<(&'e str, &'static str)>;

    /// The latest compaction's summary as the session's file keeps it, for
    /// a harness that writes one there. Blocking.
    fn compaction_summary_in_file(&self, path: &Path) -> io::Result<Option<String>>;

    /// Whether the resume prompt goes in at the first prompt or tool call
    /// after a compaction the session's file showed (the harness has no
    /// SessionStart after compacting).
    fn resumes_at_next_turn(&self) -> bool;

    /// Whether a hook of this kind can give the model words.
    fn takes_model_context(&self, kind: &EventName) -> bool;

    /// Whether the PreCompact-like hook is the only sign of a compaction
    /// (no hook after it, no session file read) and the model can be given
    /// words after it only as the next turn a Stop hook starts: the epoch
    /// turns at PreCompact, and the resume prompt waits for the next Stop.
    fn compacts_at_precompact_resumes_at_stop(&self) -> bool;
}

/// The one place a harness's name becomes its implementation.
pub fn adapter(harness: Harness) -> &'static dyn Adapter {
    match harness {
        Harness::ClaudeCode => &claude_code::ClaudeCode,
        Harness::Codex => &codex::Codex,
        Harness::GeminiCli => &gemini_cli::GeminiCli,
        Harness::QwenCode => &qwen_code::QwenCode,
        Harness::CopilotCli => &copilot_cli::CopilotCli,
        Harness::OpenCode => &opencode::OpenCode,
        Harness::Cursor => &cursor::Cursor,
    }
}

/// A path from the hook's forwarded environment, under the same rule as
/// [`Fields::path`]: absolute, or noted and treated as absent.
pub fn env_path(
    env: &BTreeMap<String, String>,
    name: &str,
    problems: &mut Vec<String>,
) -> Option<PathBuf> {
    let value = env.get(name).filter(|s| !s.is_empty())?;
    absolute(
        value.clone(),
        &format!("environment variable `{name}`"),
        problems,
    )
}

/// The directory hookctl ran in, as it reported it: absolute, or nothing.
pub fn request_cwd(req: &HookRequest) -> Option<PathBuf> {
    req.cwd.clone().filter(|p| p.is_absolute())
}

fn absolute(path: String, what: &str, problems: &mut Vec<String>) -> Option<PathBuf> {
    let path = PathBuf::from(path);
    if path.is_absolute() {
        return Some(path);
    }
    problems.push(format!(
        "{what} is not an absolute path ({:?}); ignored",
        path.display().to_string()
    ));
    None
}

/// Lenient field access: a field of the wrong type is treated as absent and
/// noted, never an error that could disturb the agent.
pub struct Fields {
    map: Map<String, Value>,
    pub problems: Vec<String>,
}

impl Fields {
    pub fn string(&mut self, name: &str) -> Option<String> {
        match self.map.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => {
                self.problems.push(format!(
                    "field `{name}` is {}, expected a string",
                    protocol::pressure::json_kind(other)
                ));
                None
            }
        }
    }

    /// An absolute path; a relative one would resolve against the daemon's
    /// own directory, so it is noted and treated as absent.
    pub fn path(&mut self, name: &str) -> Option<PathBuf> {
        let path = self.string(name).filter(|s| !s.is_empty())?;
        absolute(path, &format!("field `{name}`"), &mut self.problems)
    }

    pub fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string in a JSON value.
    fn strings(value: &Value) -> Vec<String> {
        match value {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items.iter().flat_map(strings).collect(),
            Value::Object(map) => map.values().flat_map(strings).collect(),
            _ => Vec::new(),
        }
    }

    /// `event` of a compaction in `harness`, parsed from a small payload.
    fn compaction_event(harness: Harness, event: &str) -> HookEvent {
        let req = HookRequest {
            harness,
            event: Some(event.into()),
            payload: serde_json::value::RawValue::from_string(
                r#"{"session_id":"s","cwd":"/p","source":"compact","trigger":"auto"}"#.into(),
            )
            .unwrap(),
            env: BTreeMap::new(),
            cwd: Some("/p".into()),
        };
        parse(&req).unwrap()
    }

    #[test]
    fn no_answer_carries_an_escape_sequence() {
        let osc = "x\u{1b}]0;pwned\u{7}\u{9b}2J";
        for harness in Harness::ALL {
            for event in ["SessionStart", "PreCompact"] {
                let ev = compaction_event(harness, event);
                let outcome = Outcome {
                    system_message: Some(osc.into()),
                    additional_context: Some(osc.into()),
                    plain_stdout: Some(osc.into()),
                    notes: vec![osc.into()],
                };
                let reply = render(&ev, outcome);
                for text in [&reply.stdout, &reply.stderr] {
                    // A JSON answer would escape them; the words themselves must not hold them.
                    assert!(
                        !text.contains(['\u{1b}', '\u{7}', '\u{9b}'])
                            && !text.contains("\\u001b")
                            && !text.contains("\\u0007"),
                        "{harness} {event}: {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_text_of_an_answer_is_cut_to_fit_and_what_came_first_stays_whole() {
        let marker = "[hookd-resume 0123456789ab]";
        let prompt = format!("{}{marker}", "p\"\n".repeat(20_000));
        for harness in Harness::ALL {
            for event in ["SessionStart", "PreCompact"] {
                let ev = compaction_event(harness, event);
                let mut outcome = Outcome::default();
                outcome.add_context(prompt.clone());
                outcome.add_context("\u{1}".repeat(40 * 1024 * 1024));
                outcome.say("s".repeat(MAX_ANSWER_CHARS + 1));
                outcome.notes = vec!["n".repeat(MAX_ANSWER_CHARS); 3];
                if event == "PreCompact" {
                    outcome.plain_stdout = Some("i".repeat(40 * 1024 * 1024));
                }
                let reply = render(&ev, outcome);
                let frame = protocol::frame::encode(&protocol::wire::Response::Hook(reply.clone()))
                    .unwrap_or_else(|e| panic!("{harness} {event}: {e}"));
                assert!(
                    frame.len() < 8 * 1024 * 1024,
                    "{harness} {event}: {}",
                    frame.len()
                );
                assert!(
                    reply.stderr.chars().count() <= MAX_ANSWER_CHARS + 10,
                    "{harness} {event}"
                );
                // Every text in the answer, whether JSON or plain.
                let texts: Vec<String> = match serde_json::from_str::<Value>(reply.stdout.trim()) {
                    Ok(v) => strings(&v),
                    Err(_) => vec![reply.stdout.clone()],
                };
                for text in &texts {
                    assert!(
                        text.chars().count() <= MAX_ANSWER_CHARS,
                        "{harness} {event}"
                    );
                }
                if event == "SessionStart" {
                    assert!(
                        texts.iter().any(|t| t.contains(marker)),
                        "{harness} {event}: the prompt was cut"
                    );
                }
            }
        }
        // Each text alone is cut to the characters allowed, with a note.
        let cut = cut_to("é".repeat(MAX_ANSWER_CHARS * 2), MAX_ANSWER_CHARS);
        assert_eq!(cut.chars().count(), MAX_ANSWER_CHARS);
        assert!(cut.ends_with(CUT_NOTE));
        assert_eq!(cut_to("short".into(), 3), "sho");
    }

    fn hook_of(harness: Harness, event: &str, payload: &str) -> HookEvent {
        let req = HookRequest {
            harness,
            event: Some(event.into()),
            payload: serde_json::value::RawValue::from_string(payload.into()).unwrap(),
            env: BTreeMap::new(),
            cwd: Some("/p".into()),
        };
        parse(&req).unwrap()
    }

    #[test]
    fn every_harness_gives_a_typed_event_with_its_own_fields() {
        // Each harness's name for the same moments.
        let names = |harness| match harness {
            Harness::ClaudeCode
            | Harness::Codex
            | Harness::QwenCode
            | Harness::CopilotCli
            | Harness::OpenCode => ["SessionStart", "PreCompact", "Stop"],
            Harness::GeminiCli => ["SessionStart", "PreCompress", "AfterAgent"],
            Harness::Cursor => ["sessionStart", "preCompact", "stop"],
        };
        for harness in Harness::ALL {
            let [start, pre, stop] = names(harness);
            // Cursor's stop says how the turn ended.
            let payload = r#"{"session_id":"s","source":"compact","trigger":"auto","prompt":"p","status":"completed"}"#;
            assert_eq!(
                hook_of(harness, start, payload).event,
                Event::SessionStart {
                    source: Some(StartSource::Compact)
                },
                "{harness}"
            );
            assert_eq!(
                hook_of(harness, pre, payload).event,
                Event::PreCompact {
                    trigger: Some(Trigger::Auto),
                    instructions: None
                },
                "{harness}"
            );
            assert!(
                matches!(hook_of(harness, stop, payload).event, Event::Stop { .. }),
                "{harness}"
            );
            // A source or trigger hookd does not know is kept as it was spelt.
            let odd = r#"{"session_id":"s","source":"fork","trigger":"scheduled"}"#;
            assert_eq!(
                hook_of(harness, start, odd).event,
                Event::SessionStart {
                    source: Some(StartSource::Other("fork".into()))
                },
                "{harness}"
            );
            assert_eq!(
                hook_of(harness, pre, odd).event,
                Event::PreCompact {
                    trigger: Some(Trigger::Other("scheduled".into())),
                    instructions: None
                },
                "{harness}"
            );
            // A field of the wrong type is noted and absent, never an error.
            let wrong = r#"{"session_id":"s","source":["compact"],"trigger":7}"#;
            let ev = hook_of(harness, start, wrong);
            assert_eq!(ev.event, Event::SessionStart { source: None }, "{harness}");
            for field in ["field `source` is an array", "field `trigger` is a number"] {
                assert!(
                    ev.problems.iter().any(|p| p.starts_with(field)),
                    "{harness}: {field}: {:?}",
                    ev.problems
                );
            }
            let ev = hook_of(harness, pre, wrong);
            assert_eq!(
                ev.event,
                Event::PreCompact {
                    trigger: None,
                    instructions: None
                },
                "{harness}"
            );
            assert_eq!(
                hook_of(harness, "notification", payload).event,
                Event::Other("notification".into()),
                "{harness}"
            );
        }
        // Claude Code's summarizer ends as a subagent with no type.
        let ev = hook_of(
            Harness::ClaudeCode,
            "SubagentStop",
            r#"{"session_id":"s","agent_id":"a","agent_type":"","last_assistant_message":"sum"}"#,
        );
        assert_eq!(
            ev.event,
            Event::SubagentStop {
                agent_type: Some(String::new()),
                last_message: Some("sum".into())
            }
        );
        assert_eq!(
            adapter(Harness::ClaudeCode).compaction_summary(&ev),
            Some(("sum", "subagent-stop"))
        );
        let ev = hook_of(
            Harness::ClaudeCode,
            "PostCompact",
            r#"{"session_id":"s","trigger":"manual","compact_summary":"sum"}"#,
        );
        assert_eq!(
            ev.event,
            Event::PostCompact {
                trigger: Some(Trigger::Manual),
                summary: Some("sum".into())
            }
        );
        let ev = hook_of(
            Harness::ClaudeCode,
            "UserPromptSubmit",
            r#"{"session_id":"s","prompt":"fix it"}"#,
        );
        assert_eq!(
            ev.event,
            Event::Prompt {
                text: Some("fix it".into())
            }
        );
    }

    #[test]
    fn relative_paths_are_refused_and_noted_by_every_harness() {
        use serde_json::value::RawValue;
        for harness in Harness::ALL {
            let req = HookRequest {
                harness,
                event: Some("stop".into()),
                payload: RawValue::from_string(
                    r#"{"session_id":"s","cwd":".","transcript_path":"../t.jsonl"}"#.into(),
                )
                .unwrap(),
                env: BTreeMap::from([
                    ("CLAUDE_PROJECT_DIR".to_owned(), "proj".to_owned()),
                    ("GEMINI_PROJECT_DIR".to_owned(), "proj".to_owned()),
                    ("CODEX_HOME".to_owned(), "codex".to_owned()),
                ]),
                cwd: Some("/hook/cwd".into()),
            };
            let ev = parse(&req).unwrap();
            let hook_cwd = Some(std::path::Path::new("/hook/cwd"));
            assert_eq!(ev.cwd.as_deref(), hook_cwd, "{harness}");
            assert_eq!(ev.project_dir.as_deref(), hook_cwd, "{harness}");
            assert!(
                ev.transcript_path.as_ref().is_none_or(|p| p.is_absolute()),
                "{harness}: {:?}",
                ev.transcript_path
            );
            for what in ["field `cwd`", "field `transcript_path`"] {
                assert!(
                    ev.problems
                        .iter()
                        .any(|p| p.starts_with(&format!("{what} is not an absolute path"))),
                    "{harness}: {what}: {:?}",
                    ev.problems
                );
            }
            let variable = match harness {
                Harness::ClaudeCode => "CLAUDE_PROJECT_DIR",
                Harness::GeminiCli => "GEMINI_PROJECT_DIR",
                Harness::Codex => "CODEX_HOME",
                // Neither Qwen Code nor OpenCode has a project variable: hookd reads none.
                Harness::QwenCode | Harness::OpenCode => continue,
                // Copilot CLI's variable names only where its session file is.
                Harness::CopilotCli => continue,
                // Cursor's project is `workspace_roots[0]`, not a variable.
                Harness::Cursor => continue,
            };
            assert!(
                ev.problems.iter().any(|p| p.contains(variable)),
                "{harness}: {:?}",
                ev.problems
            );
        }
    }
}

#[cfg(test)]
mod fuzz {
    //! Hook payloads of any shape: decoding and rendering never panic, and
    //! every outcome renders to JSON a harness can read.

    use super::*;
    use proptest::prelude::*;
    use serde_json::value::RawValue;

    /// Any JSON value, nested a few levels.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,40}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,12}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Objects that use the field names harnesses send, with values of any type.
    fn payload() -> impl Strategy<Value = Value> {
        let names = prop_oneof![
            Just("session_id"),
            Just("transcript_path"),
            Just("cwd"),
            Just("hook_event_name"),
            Just("source"),
            Just("trigger"),
            Just("model"),
            Just("prompt"),
            Just("tool_name"),
            Just("agent_id"),
            Just("compact_summary"),
            Just("custom_instructions"),
            Just("reason"),
        ];
        proptest::collection::vec((names, json()), 0..12).prop_map(|fields| {
            Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        })
    }

    proptest! {
        #[test]
        fn any_payload_parses_and_renders(payload in payload(), event in proptest::option::of("[a-z-]{0,20}"), harness in 0usize..Harness::ALL.len()) {
            let req = HookRequest {
                harness: Harness::ALL[harness],
                event,
                payload: RawValue::from_string(payload.to_string()).unwrap(),
                env: BTreeMap::new(),
                cwd: None,
            };
            let event = parse(&req).unwrap();
            let outcome = Outcome {
                system_message: Some("m".into()),
                additional_context: Some("c".into()),
                ..Outcome::default()
            };
            let reply = render(&event, outcome);
            prop_assert_eq!(reply.exit_code, 0);
            if !reply.stdout.is_empty() {
                prop_assert!(serde_json::from_str::<Value>(&reply.stdout).is_ok(), "{}", reply.stdout);
            }
        }

        #[test]
        fn anything_that_is_not_an_object_is_refused(value in json().prop_filter("not an object", |v| !v.is_object())) {
            let req = HookRequest {
                harness: Harness::ClaudeCode,
                event: None,
                payload: RawValue::from_string(value.to_string()).unwrap(),
                env: BTreeMap::new(),
                cwd: None,
            };
            prop_assert!(matches!(parse(&req), Err(PayloadError::NotObject(_))));
        }
    }
}
