//! The lines of a project's `.workflow/events.jsonl`: one [`LogEvent`] each,
//! tagged by its `kind`. Every writer builds one of these and every reader
//! parses through it, so the file has one schema (`docs/events.md`).
//!
//! A line is `{"ts", "kind", "harness", "session", ...the kind's fields}`;
//! [`LogEvent::line`] puts them in that order. The file is a log anyone may
//! edit: readers skip lines they cannot parse and kinds they do not know
//! ([`LogEvent::Unknown`]), and ignore fields they do not know.

use crate::harness::{StartSource, Trigger};
use crate::sessions::SessionKey;
use protocol::config::Action;
use protocol::memory::TaskOutcome;
use protocol::wire::Check;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// What a `resume_arrival` line says of a prompt that never arrived, even
/// injected again (the budget report counts it as lost).
pub const NEVER_ARRIVED: &str = "did not arrive, even injected again";

/// One line of `events.jsonl`, without its time and session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEvent {
    /// A compaction that began an epoch.
    Compaction(Compaction),
    /// A PostCompact hook, with the summary it carried.
    PostCompact {
        trigger: Option<Trigger>,
        summary_chars: usize,
        compact_summary: String,
    },
    /// A context's size before and after a compaction or a resume prompt.
    ContextTransition(Transition),
    /// An epoch begun because the usage dropped.
    Epoch {
        epoch: u32,
        reason: String,
        from: f64,
        to: f64,
    },
    /// A threshold level fired.
    Threshold {
        level: f64,
        crossed: Vec<f64>,
        action: Action,
        tokens_used: u64,
        tokens_max: u64,
        pressure: f64,
    },
    /// A resume prompt handed to the model, or why none was.
    Resume(Resume),
    /// Whether an injected resume prompt reached the session's file.
    ResumeArrival {
        marker: String,
        arrived: bool,
        action: String,
        #[serde(default)]
        after_ms: u64,
    },
    /// Whether the agent's first tool calls after a resume prompt followed it.
    ResumeFollowed {
        #[serde(default)]
        epoch: u32,
        marker: String,
        followed: bool,
        #[serde(default)]
        matched: Option<String>,
        #[serde(default)]
        first_call: FirstCall,
        #[serde(default)]
        calls: usize,
    },
    /// A compaction summary's `hookd-state` block, merged or not.
    Summary(SummaryTaken),
    /// One step of the pre-compact pipeline.
    Pipeline {
        step: String,
        ok: bool,
        ms: u64,
        detail: Option<String>,
        trigger: String,
    },
    /// Cross-task memory: a task begun, reflected on or closed.
    Memory(MemoryEvent),
    /// A kind this hookd does not know (written by a newer one, or by hand).
    #[serde(other)]
    Unknown,
}

/// A compaction, as the session's file or a hook showed it. The two are
/// told apart by `pre_tokens`, which only the file's has (maybe null).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Compaction {
    InFile(CompactionInFile),
    ByHook(CompactionByHook),
}

/// A compaction's record in the session's file (`source` is `transcript`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionInFile {
    pub trigger: Option<Trigger>,
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
    pub announced: bool,
    pub epoch: u32,
    pub source: String,
}

/// A compaction a SessionStart(compact) or PostCompact hook showed
/// (`source` names the hook).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionByHook {
    pub epoch: u32,
    pub trigger: Option<Trigger>,
    pub source: String,
    pub announced: bool,
}

impl<'de> Deserialize<'de> for Compaction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (fields, in_file) = fields_with(d, "pre_tokens")?;
        if in_file {
            CompactionInFile::deserialize(fields).map(Compaction::InFile)
        } else {
            CompactionByHook::deserialize(fields).map(Compaction::ByHook)
        }
        .map_err(D::Error::custom)
    }
}

/// An object's fields, and whether `field` is among them (null or not).
fn fields_with<'de, D: Deserializer<'de>>(d: D, field: &str) -> Result<(Value, bool), D::Error> {
    let fields = Map::deserialize(d)?;
    let has = fields.contains_key(field);
    Ok((Value::Object(fields), has))
}

/// The sizes around a compaction or a resume prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event_type", rename_all = "snake_case")]
pub enum Transition {
    Compaction {
        /// The compaction's trigger (`auto`, `manual`, `unknown`).
        action: String,
        before_tokens: u64,
        after_tokens: u64,
        compression_ratio: Option<f64>,
        /// The compaction record's id in the session's file.
        boundary: Option<String>,
    },
    Resume {
        /// The format the prompt went in (`markdown`, `compact`...).
        action: String,
        before_tokens: u64,
        after_tokens: u64,
        compression_ratio: Option<f64>,
        marker: String,
    },
}

impl Transition {
    pub fn compaction(trigger: &str, before: u64, after: u64, boundary: Option<String>) -> Self {
        Transition::Compaction {
            action: trigger.to_owned(),
            before_tokens: before,
            after_tokens: after,
            compression_ratio: compression_ratio(before, after),
            boundary,
        }
    }

    pub fn resume(format: &str, before: u64, after: u64, marker: String) -> Self {
        Transition::Resume {
            action: format.to_owned(),
            before_tokens: before,
            after_tokens: after,
            compression_ratio: compression_ratio(before, after),
            marker,
        }
    }
}

/// How much smaller `after` is than `before`, to three places.
pub fn compression_ratio(before: u64, after: u64) -> Option<f64> {
    (before > 0).then(|| ((1.0 - after as f64 / before as f64) * 1000.0).round() / 1000.0)
}

/// A resume prompt injected, or why none was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Resume {
    Injected {
        /// The SessionStart source (`compact`, `resume`).
        source: StartSource,
        #[serde(default)]
        epoch: u32,
        /// Always `true`.
        injected: bool,
        #[serde(default)]
        format: Option<String>,
        marker: String,
        #[serde(default)]
        state_file: Option<String>,
        #[serde(default)]
        captured_at: Option<String>,
        #[serde(default)]
        checks: Vec<Check>,
        #[serde(default)]
        template_problems: Vec<String>,
    },
    NotInjected {
        source: StartSource,
        /// Always `false`.
        injected: bool,
        reason: Option<String>,
    },
}

/// The agent's first tool call after a resume prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstCall {
    pub tool: String,
    pub target: Option<String>,
}

/// What became of a compaction summary's `hookd-state` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryTaken {
    /// Which hook or file delivered it.
    pub from: String,
    pub summary_chars: usize,
    /// Blocks without this compaction's token, left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_blocks: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<String>>,
    pub merged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// How many of each kind of record the merge took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken: Option<SummaryCounts>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryCounts {
    pub decisions: usize,
    pub rejected: usize,
    pub blockers: usize,
    pub next_actions: usize,
    pub constraints: usize,
    pub lifted_constraints: usize,
}

/// A cross-task memory event, tagged by its `action`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MemoryEvent {
    Begin(TaskBegun),
    Reflect(Reflected),
    Close(TaskClosed),
    /// Lessons of past tasks handed to a resume prompt.
    Retrieve {
        task_id: String,
        description: String,
        found: Vec<String>,
        items: usize,
    },
    /// The resume prompt's memory section could not be filled.
    ResumeSection {
        problem: String,
    },
}

/// A task begun: by `hookctl task start` (`from` names it) or noticed by hookd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskBegun {
    ByHand {
        task_id: String,
        description: String,
        window: u32,
        from: String,
    },
    Noticed {
        task_id: String,
        description: String,
        window: u32,
        scaled_because: Option<String>,
    },
}

/// Reflections added: from a capture or a summary, or one by `hookctl reflect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reflected {
    Found {
        task_id: String,
        added: usize,
        iteration: u32,
        /// `capture` or `summary`.
        from: String,
    },
    ByHand {
        task_id: String,
        #[serde(rename = "type")]
        reflection_type: String,
        from: String,
    },
}

/// A task closed: by hookd (`because`, maybe null, says why its outcome
/// is what it is) or by `hookctl task` (no `because`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TaskClosed {
    Noticed(TaskClosedNoticed),
    ByHand(TaskClosedByHand),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskClosedNoticed {
    pub task_id: String,
    /// What closed it.
    pub on: String,
    pub outcome: Option<TaskOutcome>,
    pub because: Option<String>,
    pub key_learnings: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskClosedByHand {
    pub task_id: String,
    pub on: String,
    pub outcome: Option<TaskOutcome>,
    pub key_learnings: usize,
}

impl<'de> Deserialize<'de> for TaskClosed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (fields, noticed) = fields_with(d, "because")?;
        if noticed {
            TaskClosedNoticed::deserialize(fields).map(TaskClosed::Noticed)
        } else {
            TaskClosedByHand::deserialize(fields).map(TaskClosed::ByHand)
        }
        .map_err(D::Error::custom)
    }
}

impl LogEvent {
    /// The `kind` this event is written with.
    pub fn kind(&self) -> &'static str {
        match self {
            LogEvent::Compaction(_) => "compaction",
            LogEvent::PostCompact { .. } => "post_compact",
            LogEvent::ContextTransition(_) => "context_transition",
            LogEvent::Epoch { .. } => "epoch",
            LogEvent::Threshold { .. } => "threshold",
            LogEvent::Resume(_) => "resume",
            LogEvent::ResumeArrival { .. } => "resume_arrival",
            LogEvent::ResumeFollowed { .. } => "resume_followed",
            LogEvent::Summary(_) => "summary",
            LogEvent::Pipeline { .. } => "pipeline",
            LogEvent::Memory(_) => "memory",
            LogEvent::Unknown => "unknown",
        }
    }

    /// The line for `events.jsonl` (no newline), written at `ts`.
    pub fn line(&self, ts: &str, session: Option<&SessionKey>) -> String {
        let mut line = Map::new();
        line.insert("ts".into(), Value::String(ts.to_owned()));
        line.insert("kind".into(), Value::String(self.kind().into()));
        if let Some(key) = session {
            line.insert("harness".into(), Value::String(key.harness.as_str().into()));
            line.insert("session".into(), Value::String(key.id.clone()));
        }
        // Plain data: serializing it cannot fail.
        if let Ok(Value::Object(fields)) = serde_json::to_value(self) {
            line.extend(fields.into_iter().filter(|(name, _)| name != "kind"));
        }
        Value::Object(line).to_string()
    }

    /// One line read back; `None` when it is not JSON or not an object.
    /// A kind not known here is [`LogEvent::Unknown`]; a known kind whose
    /// fields do not fit is `Unknown` too.
    pub fn read(line: &[u8]) -> Option<ReadLine> {
        let value: Value = serde_json::from_slice(line).ok()?;
        let Value::Object(map) = &value else {
            return None;
        };
        let text = |name: &str| map.get(name).and_then(Value::as_str).map(str::to_owned);
        let (kind, session) = (text("kind"), text("session"));
        let event = LogEvent::deserialize(value).unwrap_or(LogEvent::Unknown);
        Some(ReadLine {
            kind,
            session,
            event,
        })
    }
}

/// A line of `events.jsonl` read back.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadLine {
    /// The `kind` as written, known here or not.
    pub kind: Option<String>,
    pub session: Option<String>,
    pub event: LogEvent,
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::wire::Harness;

    fn key() -> SessionKey {
        SessionKey {
            harness: Harness::ClaudeCode,
            id: "s1".into(),
        }
    }

    fn every_kind() -> Vec<LogEvent> {
        vec![
            LogEvent::Compaction(Compaction::InFile(CompactionInFile {
                trigger: Some("auto".into()),
                pre_tokens: None,
                post_tokens: None,
                announced: false,
                epoch: 2,
                source: "transcript".into(),
            })),
            LogEvent::Compaction(Compaction::ByHook(CompactionByHook {
                epoch: 2,
                trigger: None,
                source: "session-start compact".into(),
                announced: true,
            })),
            LogEvent::Memory(MemoryEvent::Close(TaskClosed::Noticed(TaskClosedNoticed {
                task_id: "t1".into(),
                on: "session-end".into(),
                outcome: None,
                because: None,
                key_learnings: 0,
            }))),
            LogEvent::Memory(MemoryEvent::Close(TaskClosed::ByHand(TaskClosedByHand {
                task_id: "t1".into(),
                on: "hookctl task".into(),
                outcome: None,
                key_learnings: 1,
            }))),
            LogEvent::PostCompact {
                trigger: Some("manual".into()),
                summary_chars: 3,
                compact_summary: "abc".into(),
            },
            LogEvent::ContextTransition(Transition::compaction(
                "auto",
                1000,
                250,
                Some("u1".into()),
            )),
            LogEvent::ContextTransition(Transition::resume("markdown", 400, 300, "m1".into())),
            LogEvent::Epoch {
                epoch: 3,
                reason: "usage dropped".into(),
                from: 0.9,
                to: 0.2,
            },
            LogEvent::Threshold {
                level: 0.7,
                crossed: vec![0.5, 0.7],
                action: Action::AutoSaveState,
                tokens_used: 70,
                tokens_max: 100,
                pressure: 0.7,
            },
            LogEvent::Resume(Resume::NotInjected {
                source: "compact".into(),
                injected: false,
                reason: Some("no saved state".into()),
            }),
            LogEvent::ResumeArrival {
                marker: "m1".into(),
                arrived: true,
                action: "arrived".into(),
                after_ms: 10,
            },
            LogEvent::ResumeFollowed {
                epoch: 2,
                marker: "m1".into(),
                followed: true,
                matched: Some("Read a.rs (named a.rs)".into()),
                first_call: FirstCall {
                    tool: "Read".into(),
                    target: Some("a.rs".into()),
                },
                calls: 1,
            },
            LogEvent::Summary(SummaryTaken {
                from: "post-compact".into(),
                summary_chars: 10,
                merged: false,
                why: Some("the summary has no hookd-state block".into()),
                ..SummaryTaken::default()
            }),
            LogEvent::Pipeline {
                step: "capture_workflow_state".into(),
                ok: true,
                ms: 3,
                detail: None,
                trigger: "pre-compact auto".into(),
            },
            LogEvent::Memory(MemoryEvent::Reflect(Reflected::Found {
                task_id: "t1".into(),
                added: 2,
                iteration: 1,
                from: "capture".into(),
            })),
            LogEvent::Memory(MemoryEvent::Begin(TaskBegun::ByHand {
                task_id: "t1".into(),
                description: "d".into(),
                window: 8,
                from: "hookctl task start".into(),
            })),
        ]
    }

    #[test]
    fn every_kind_reads_back_as_written() {
        for event in every_kind() {
            let line = event.line("2026-01-01T00:00:00.000Z", Some(&key()));
            let read = LogEvent::read(line.as_bytes()).unwrap();
            assert_eq!(read.event, event, "{line}");
            assert_eq!(read.kind.as_deref(), Some(event.kind()));
            assert_eq!(read.session.as_deref(), Some("s1"));
        }
    }

    #[test]
    fn a_line_starts_with_its_time_kind_and_session() {
        let line = LogEvent::Epoch {
            epoch: 3,
            reason: "usage dropped".into(),
            from: 0.9,
            to: 0.2,
        }
        .line("T", Some(&key()));
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["kind"], "epoch");
        assert_eq!(value["harness"], "claude-code");
        assert_eq!(value["epoch"], 3);
        if line.starts_with(r#"{"ts":"T","kind":"epoch""#) {
            // With serde_json's `preserve_order` (the workspace build), the
            // fields follow in the order declared.
            assert!(line.ends_with(r#""epoch":3,"reason":"usage dropped","from":0.9,"to":0.2}"#));
        }
    }

    #[test]
    fn unknown_kinds_and_fields_are_ignored() {
        let read = LogEvent::read(br#"{"ts":"T","kind":"from_the_future","x":1}"#).unwrap();
        assert_eq!(read.event, LogEvent::Unknown);
        assert_eq!(read.kind.as_deref(), Some("from_the_future"));
        let read = LogEvent::read(
            br#"{"ts":"T","kind":"resume_arrival","marker":"m","arrived":false,"action":"injected again","after_ms":5,"new":true}"#,
        )
        .unwrap();
        assert!(matches!(
            read.event,
            LogEvent::ResumeArrival { arrived: false, .. }
        ));
        // A known kind with fields that do not fit is not trusted.
        let read = LogEvent::read(br#"{"kind":"epoch","epoch":"three"}"#).unwrap();
        assert_eq!(read.event, LogEvent::Unknown);
        assert!(LogEvent::read(b"not json").is_none());
        assert!(LogEvent::read(b"[1]").is_none());
    }

    /// docs/events.md has a row for every memory action, as written.
    #[test]
    fn every_memory_action_is_documented() {
        // A new action fails to compile here until it is named, then below
        // until docs/events.md has its row.
        let action = |event: &MemoryEvent| match event {
            MemoryEvent::Begin(_) => "begin",
            MemoryEvent::Reflect(_) => "reflect",
            MemoryEvent::Close(_) => "close",
            MemoryEvent::Retrieve { .. } => "retrieve",
            MemoryEvent::ResumeSection { .. } => "resume_section",
        };
        let id = || "t1".to_owned();
        let every = [
            MemoryEvent::Begin(TaskBegun::ByHand {
                task_id: id(),
                description: id(),
                window: 5,
                from: id(),
            }),
            MemoryEvent::Reflect(Reflected::ByHand {
                task_id: id(),
                reflection_type: id(),
                from: id(),
            }),
            MemoryEvent::Close(TaskClosed::ByHand(TaskClosedByHand {
                task_id: id(),
                on: id(),
                outcome: None,
                key_learnings: 0,
            })),
            MemoryEvent::Retrieve {
                task_id: id(),
                description: id(),
                found: Vec::new(),
                items: 0,
            },
            MemoryEvent::ResumeSection { problem: id() },
        ];
        let docs = include_str!("../../docs/events.md");
        for event in every {
            let name = action(&event);
            let line = serde_json::to_value(LogEvent::Memory(event)).unwrap();
            assert_eq!(line["action"], name, "the action's name as written");
            assert!(
                docs.contains(&format!("| `{name}` |")),
                "docs/events.md has no row for the memory action `{name}`"
            );
        }
    }

    /// docs/events.md documents every kind: a kind added to the enum (and
    /// so to the exhaustive match in [`LogEvent::kind`]) and not to the docs
    /// fails this test.
    #[test]
    fn every_kind_is_documented() {
        let docs = include_str!("../../docs/events.md");
        let source = include_str!("events.rs");
        let body = source
            .split_once("pub fn kind(&self)")
            .and_then(|(_, rest)| rest.split_once("\n    }\n"))
            .unwrap()
            .0;
        let kinds: Vec<&str> = body
            .split("=> \"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|kind| *kind != "unknown")
            .collect();
        assert_eq!(kinds.len(), 11, "{kinds:?}");
        for kind in kinds {
            assert!(
                docs.contains(&format!("## `{kind}`")),
                "docs/events.md has no section for `{kind}`"
            );
        }
    }
}
