//! What a hook's own fields and a statusLine input say of a session,
//! before any reading of its file: where it works, which file it writes,
//! its model, its harness's knobs, whether it ended, the figure the
//! statusLine gave.

use crate::harness::{self, Event, HookEvent, Launch};
use crate::sessions::{Session, UsageSource};
use protocol::pressure::Knobs;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A hook of this session arrived (`launch`: where the harness process
/// behind it compacts, when it could be read).
pub fn observe(s: &mut Session, event: &HookEvent, launch: Option<Launch>, now: u64) {
    if event.project_dir.is_some() {
        s.project_dir.clone_from(&event.project_dir);
        s.working_dir.clone_from(&event.working_dir);
    }
    if event.transcript_path.is_some() && event.transcript_path != s.transcript_path {
        // Another file: reading starts over in it.
        s.transcript_path.clone_from(&event.transcript_path);
        s.cursor = None;
        s.boundaries_taken_to = None;
    }
    if event.model.is_some() {
        s.model.clone_from(&event.model);
    }
    if !event.env.is_empty() {
        s.config_env = event
            .env
            .iter()
            .filter(|(name, _)| protocol::config::is_config_env(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect::<BTreeMap<_, _>>();
    }
    if event.claude_code_knobs.is_some() {
        s.claude_code_knobs.clone_from(&event.claude_code_knobs);
    }
    if let Some(reported) = &event.reported_context {
        match &reported.tokens {
            Ok(tokens) => {
                let usage = s.usage.get_or_insert_with(Default::default);
                usage.tokens = *tokens;
                usage.from_boundary = false;
                usage.invalid = None;
                s.usage_source = UsageSource::PreCompactHook;
                s.usage_at_ms = now;
            }
            Err(why) => s.usage = Some(harness::Usage::invalidated(s.usage.take(), why.clone())),
        }
        if reported.window.is_some() {
            s.reported_window = reported.window;
        }
    }
    s.last_event = event.name().kebab().into_owned();
    s.last_event_at_ms = now;
    s.events_seen += 1;
    s.ended = matches!(event.event, Event::SessionEnd { .. });
    if let Some(launch) = launch {
        s.take_launch(launch);
    }
}

/// What a statusLine input says, the project already found from its
/// directory.
#[derive(Debug, Clone, Default)]
pub struct StatusLine {
    pub window: Option<u64>,
    /// `None` before the first reply; an error names what cannot be right.
    pub tokens: Option<Result<u64, String>>,
    pub model: Option<String>,
    pub project: Option<PathBuf>,
    pub working_dir: Option<PathBuf>,
    pub transcript: Option<PathBuf>,
    pub knobs: Knobs,
}

/// Claude Code's statusLine input: the window and figure it names beat
/// any estimate; the first project and file it names stand until a hook
/// names others.
pub fn on_statusline(s: &mut Session, input: StatusLine, now: u64) {
    if input.window.is_some() {
        s.statusline_window = input.window;
    }
    if input.model.is_some() {
        s.model = input.model;
    }
    if input.project.is_some() && s.project_dir.is_none() {
        s.project_dir = input.project;
        s.working_dir = input.working_dir;
    }
    if let Some(path) = input.transcript {
        s.transcript_path.get_or_insert(path);
    }
    s.claude_code_knobs = Some(input.knobs);
    match input.tokens {
        Some(Ok(tokens)) => {
            let usage = s.usage.get_or_insert_with(Default::default);
            usage.tokens = tokens;
            usage.from_boundary = false;
            usage.invalid = None;
            s.usage_source = UsageSource::Statusline;
            s.usage_at_ms = now;
        }
        Some(Err(why)) => {
            s.usage = Some(harness::Usage::invalidated(s.usage.take(), why));
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::SessionKey;
    use protocol::wire::Harness;

    fn session() -> Session {
        Session::new(
            SessionKey {
                harness: Harness::ClaudeCode,
                id: "s".into(),
            },
            0,
        )
    }

    #[test]
    fn the_statusline_figure_beats_the_files_and_its_project_stands_until_a_hook_names_one() {
        let mut s = session();
        let input = StatusLine {
            window: Some(1_000_000),
            tokens: Some(Ok(42_000)),
            project: Some("/p".into()),
            working_dir: Some("/p/sub".into()),
            transcript: Some("/t.jsonl".into()),
            ..StatusLine::default()
        };
        on_statusline(&mut s, input, 7);
        assert_eq!(s.statusline_window, Some(1_000_000));
        assert_eq!(s.usage.as_ref().map(|u| u.tokens), Some(42_000));
        assert_eq!(
            (s.usage_source, s.usage_at_ms),
            (UsageSource::Statusline, 7)
        );
        assert_eq!(
            s.working_dir.as_deref(),
            Some(std::path::Path::new("/p/sub"))
        );
        // Another project or file named later does not move the session.
        let input = StatusLine {
            tokens: Some(Err("more than the window".into())),
            project: Some("/q".into()),
            transcript: Some("/u.jsonl".into()),
            ..StatusLine::default()
        };
        on_statusline(&mut s, input, 8);
        assert_eq!(s.project_dir.as_deref(), Some(std::path::Path::new("/p")));
        assert_eq!(
            s.transcript_path.as_deref(),
            Some(std::path::Path::new("/t.jsonl"))
        );
        assert_eq!(s.statusline_window, Some(1_000_000), "kept when not named");
        let usage = s.usage.as_ref().unwrap();
        assert!(
            usage.invalid.is_some(),
            "a figure that cannot be right says so"
        );
    }
}
