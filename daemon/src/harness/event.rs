//! What a hook means, in hookd's own terms: every harness module turns its
//! payload into one [`Event`], and the core matches it, never a name.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// One hook's kind and what only that kind carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A run starts; `source` is absent when the payload does not say.
    SessionStart {
        source: Option<StartSource>,
    },
    /// The person sent a prompt.
    Prompt {
        text: Option<String>,
    },
    PreToolUse {
        tool: Option<String>,
    },
    PostToolUse {
        tool: Option<String>,
    },
    /// A reply that called tools ended (Claude Code's PostToolBatch).
    ToolBatch,
    /// A compaction is about to happen; `instructions` are the person's
    /// words to the summarizer (`/compact <words>`).
    PreCompact {
        trigger: Option<Trigger>,
        instructions: Option<String>,
    },
    PostCompact {
        trigger: Option<Trigger>,
        summary: Option<String>,
    },
    Stop {
        last_message: Option<String>,
    },
    /// A subagent ended; Claude Code's compaction summarizer has the type "".
    SubagentStop {
        agent_type: Option<String>,
        last_message: Option<String>,
    },
    SessionEnd {
        reason: Option<String>,
    },
    /// Any other event: recorded, never an error. Kept in kebab case.
    Other(String),
}

impl Event {
    pub fn name(&self) -> EventName {
        match self {
            Event::SessionStart { .. } => EventName::SessionStart,
            Event::Prompt { .. } => EventName::UserPromptSubmit,
            Event::PreToolUse { .. } => EventName::PreToolUse,
            Event::PostToolUse { .. } => EventName::PostToolUse,
            Event::ToolBatch => EventName::PostToolBatch,
            Event::PreCompact { .. } => EventName::PreCompact,
            Event::PostCompact { .. } => EventName::PostCompact,
            Event::Stop { .. } => EventName::Stop,
            Event::SubagentStop { .. } => EventName::SubagentStop,
            Event::SessionEnd { .. } => EventName::SessionEnd,
            Event::Other(name) => EventName::Other(name.clone()),
        }
    }

    /// Every field a payload may carry, taken by the event `name` names.
    pub fn from_parts(name: EventName, parts: EventParts) -> Event {
        match name {
            EventName::SessionStart => Event::SessionStart {
                source: parts.source.map(StartSource::from),
            },
            // What the person marked `<private>` goes no further than here.
            EventName::UserPromptSubmit => Event::Prompt {
                text: parts
                    .prompt
                    .map(|p| crate::secrets::strip_private(&p).into_owned()),
            },
            EventName::PreToolUse => Event::PreToolUse {
                tool: parts.tool_name,
            },
            EventName::PostToolUse => Event::PostToolUse {
                tool: parts.tool_name,
            },
            EventName::PostToolBatch => Event::ToolBatch,
            EventName::PreCompact => Event::PreCompact {
                trigger: parts.trigger.map(Trigger::from),
                instructions: parts.custom_instructions,
            },
            EventName::PostCompact => Event::PostCompact {
                trigger: parts.trigger.map(Trigger::from),
                summary: parts.compact_summary,
            },
            EventName::Stop => Event::Stop {
                last_message: parts.last_assistant_message,
            },
            EventName::SubagentStop => Event::SubagentStop {
                agent_type: parts.agent_type,
                last_message: parts.last_assistant_message,
            },
            EventName::SessionEnd => Event::SessionEnd {
                reason: parts.reason,
            },
            EventName::Other(name) => Event::Other(name),
        }
    }
}

/// The kind-specific fields of a payload, as read before its kind decides
/// which of them it keeps (a field of the wrong type is already noted and
/// absent).
#[derive(Debug, Clone, Default)]
pub struct EventParts {
    pub source: Option<String>,
    pub trigger: Option<String>,
    pub reason: Option<String>,
    pub prompt: Option<String>,
    pub tool_name: Option<String>,
    pub custom_instructions: Option<String>,
    pub compact_summary: Option<String>,
    pub agent_type: Option<String>,
    pub last_assistant_message: Option<String>,
}

/// hookd's names for hook events. Harness-specific names map onto these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventName {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolBatch,
    PreCompact,
    PostCompact,
    Stop,
    SubagentStop,
    SessionEnd,
    /// Any other event. Kept in kebab case.
    Other(String),
}

const KNOWN: [(EventName, &str, &str); 10] = [
    (EventName::SessionStart, "SessionStart", "session-start"),
    (
        EventName::UserPromptSubmit,
        "UserPromptSubmit",
        "user-prompt-submit",
    ),
    (EventName::PreToolUse, "PreToolUse", "pre-tool-use"),
    (EventName::PostToolUse, "PostToolUse", "post-tool-use"),
    (EventName::PostToolBatch, "PostToolBatch", "post-tool-batch"),
    (EventName::PreCompact, "PreCompact", "pre-compact"),
    (EventName::PostCompact, "PostCompact", "post-compact"),
    (EventName::Stop, "Stop", "stop"),
    (EventName::SubagentStop, "SubagentStop", "subagent-stop"),
    (EventName::SessionEnd, "SessionEnd", "session-end"),
];

impl EventName {
    /// Accepts `PostToolUse`, `post-tool-use` and `post_tool_use` alike.
    pub fn from_name(name: &str) -> EventName {
        let kebab = to_kebab(name);
        KNOWN
            .iter()
            .find(|(_, _, k)| *k == kebab)
            .map(|(kind, _, _)| kind.clone())
            .unwrap_or(EventName::Other(kebab))
    }

    /// `post-tool-use`: the name the configuration and `events.jsonl` use.
    pub fn kebab(&self) -> Cow<'static, str> {
        match self {
            EventName::Other(name) => Cow::Owned(name.clone()),
            known => Cow::Borrowed(
                KNOWN
                    .iter()
                    .find(|(k, _, _)| k == known)
                    .map(|(_, _, n)| *n)
                    .unwrap_or(""),
            ),
        }
    }

    /// Claude Code's spelling (`PostToolUse`), used in `hookEventName`.
    pub fn pascal(&self) -> Cow<'static, str> {
        match self {
            EventName::Other(name) => Cow::Owned(
                name.split('-')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                            .unwrap_or_default()
                    })
                    .collect(),
            ),
            known => Cow::Borrowed(
                KNOWN
                    .iter()
                    .find(|(k, _, _)| k == known)
                    .map(|(_, p, _)| *p)
                    .unwrap_or(""),
            ),
        }
    }
}

/// `PostToolUse` → `post-tool-use`; `post_tool_use` → `post-tool-use`.
fn to_kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.trim().chars().enumerate() {
        if c == '_' || c == ' ' {
            out.push('-');
        } else if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('-') {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a run started. Written as the harness spells it (`compact`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StartSource {
    Startup,
    Resume,
    Clear,
    /// Right after a compaction.
    Compact,
    Other(String),
}

const START_SOURCES: [(StartSource, &str); 4] = [
    (StartSource::Startup, "startup"),
    (StartSource::Resume, "resume"),
    (StartSource::Clear, "clear"),
    (StartSource::Compact, "compact"),
];

impl StartSource {
    pub fn as_str(&self) -> &str {
        match self {
            StartSource::Other(text) => text,
            known => START_SOURCES
                .iter()
                .find(|(k, _)| k == known)
                .map_or("", |(_, name)| name),
        }
    }
}

impl From<String> for StartSource {
    fn from(text: String) -> StartSource {
        START_SOURCES
            .iter()
            .find(|(_, name)| *name == text)
            .map_or(StartSource::Other(text), |(k, _)| k.clone())
    }
}

impl From<&str> for StartSource {
    fn from(text: &str) -> StartSource {
        StartSource::from(text.to_owned())
    }
}

impl From<StartSource> for String {
    fn from(source: StartSource) -> String {
        source.as_str().to_owned()
    }
}

impl fmt::Display for StartSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who asked for a compaction. Written as the harness spells it (`auto`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Trigger {
    /// The person (`/compact`).
    Manual,
    /// The harness, at its compaction point.
    Auto,
    Other(String),
}

impl Trigger {
    pub fn as_str(&self) -> &str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Auto => "auto",
            Trigger::Other(text) => text,
        }
    }
}

impl From<String> for Trigger {
    fn from(text: String) -> Trigger {
        match text.as_str() {
            "manual" => Trigger::Manual,
            "auto" => Trigger::Auto,
            _ => Trigger::Other(text),
        }
    }
}

impl From<&str> for Trigger {
    fn from(text: &str) -> Trigger {
        Trigger::from(text.to_owned())
    }
}

impl From<Trigger> for String {
    fn from(trigger: Trigger) -> String {
        trigger.as_str().to_owned()
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_in_every_spelling() {
        assert_eq!(EventName::from_name("PostToolUse"), EventName::PostToolUse);
        assert_eq!(
            EventName::from_name("post-tool-use"),
            EventName::PostToolUse
        );
        assert_eq!(
            EventName::from_name("post_tool_use"),
            EventName::PostToolUse
        );
        assert_eq!(EventName::from_name("SessionEnd").kebab(), "session-end");
        assert_eq!(
            EventName::from_name("MessageDisplay"),
            EventName::Other("message-display".into())
        );
        assert_eq!(
            EventName::from_name("message-display").pascal(),
            "MessageDisplay"
        );
        assert_eq!(EventName::PreCompact.pascal(), "PreCompact");
    }

    #[test]
    fn sources_and_triggers_keep_their_spelling_both_ways() {
        for text in ["startup", "resume", "clear", "compact", "Compact", ""] {
            let source = StartSource::from(text);
            assert_eq!(source.as_str(), text);
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(json, format!("{text:?}"));
            assert_eq!(serde_json::from_str::<StartSource>(&json).unwrap(), source);
        }
        assert_eq!(StartSource::from("compact"), StartSource::Compact);
        assert_eq!(
            StartSource::from("Compact"),
            StartSource::Other("Compact".into())
        );
        for text in ["manual", "auto", "AUTO", "scheduled"] {
            let trigger = Trigger::from(text);
            assert_eq!(trigger.to_string(), text);
            let json = serde_json::to_string(&trigger).unwrap();
            assert_eq!(serde_json::from_str::<Trigger>(&json).unwrap(), trigger);
        }
        assert_eq!(Trigger::from("auto"), Trigger::Auto);
        assert_eq!(Trigger::from("AUTO"), Trigger::Other("AUTO".into()));
    }

    #[test]
    fn each_kind_keeps_only_its_own_fields() {
        let parts = EventParts {
            source: Some("clear".into()),
            trigger: Some("auto".into()),
            prompt: Some("p".into()),
            last_assistant_message: Some("done".into()),
            agent_type: Some(String::new()),
            ..EventParts::default()
        };
        let event = |name| Event::from_parts(name, parts.clone());
        assert_eq!(
            event(EventName::SessionStart),
            Event::SessionStart {
                source: Some(StartSource::Clear)
            }
        );
        assert_eq!(
            event(EventName::PreCompact),
            Event::PreCompact {
                trigger: Some(Trigger::Auto),
                instructions: None
            }
        );
        assert_eq!(
            event(EventName::SubagentStop),
            Event::SubagentStop {
                agent_type: Some(String::new()),
                last_message: Some("done".into())
            }
        );
        assert_eq!(event(EventName::PostToolBatch), Event::ToolBatch);
        for name in KNOWN.iter().map(|(n, _, _)| n.clone()) {
            assert_eq!(event(name.clone()).name(), name);
        }
        assert_eq!(
            event(EventName::Other("notification".into())),
            Event::Other("notification".into())
        );
    }
}
