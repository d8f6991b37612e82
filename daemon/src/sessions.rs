//! The registry of agent sessions, keyed by harness and session id, and its
//! file in the state directory (written atomically, so a restarted daemon
//! picks up where it stopped).

use crate::harness::{Boundary, Cursor, HarnessPoint, SessionFacts, Usage};
use protocol::config::Config;
use protocol::pressure::{Advice, Knobs};
use protocol::wire::{
    ContextPoint, ContextStatus, Harness, Mark, PointMark, ResumeFollowed, SessionStatus,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// File name of the registry in the state directory.
pub const REGISTRY_FILE: &str = "sessions.json";
const REGISTRY_VERSION: u32 = 1;
/// Readings kept per session for the picture of its recent turns: enough
/// to see a climb and a compaction, small enough for every status.
pub const HISTORY_POINTS: usize = 24;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionKey {
    pub harness: Harness,
    pub id: String,
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.harness, self.id)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub key: SessionKey,
    #[serde(default)]
    pub project_dir: Option<PathBuf>,
    /// The directory the agent works in, at or below `project_dir`.
    #[serde(default)]
    pub working_dir: Option<PathBuf>,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    #[serde(default)]
    pub model: Option<String>,
    pub first_seen_ms: u64,
    pub last_event: String,
    pub last_event_at_ms: u64,
    pub events_seen: u64,
    #[serde(default)]
    pub ended: bool,
    /// The latest usage figure and where reading stopped.
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub usage_source: UsageSource,
    #[serde(default)]
    pub usage_at_ms: u64,
    #[serde(default)]
    pub cursor: Option<Cursor>,
    /// The window the statusLine reported (it beats any estimate).
    #[serde(default)]
    pub statusline_window: Option<u64>,
    /// The window the harness's own session file reported.
    #[serde(default)]
    pub reported_window: Option<u64>,
    /// Where the harness's own settings say it compacts.
    #[serde(default)]
    pub harness_point: Option<HarnessPoint>,
    /// Where the harness's command line or project settings say it
    /// compacts (they outrank its user settings), as the latest hook saw.
    #[serde(default)]
    pub launch_point: Option<HarnessPoint>,
    /// Where an automatic compaction showed the harness compacts, when that
    /// was below every point hookd could read (set somewhere it cannot see).
    #[serde(default)]
    pub learned_point: Option<HarnessPoint>,
    /// The harness process whose launch gave `launch_point`: another one
    /// may have been started with another limit.
    #[serde(default)]
    pub launch_process: Option<String>,
    /// An automatic compaction just taken in, and the figure it compacted:
    /// what [`crate::session_machine`] may learn the point from.
    #[serde(skip)]
    pub auto_compacted_at: Option<u64>,
    /// The latest compaction record taken from the session's file, for a
    /// harness that names them by where they start: only a later one is
    /// another compaction.
    #[serde(default)]
    pub boundaries_taken_to: Option<Cursor>,
    /// A compaction the session's file showed, whose resume prompt goes in
    /// at the next prompt or tool call (harnesses with no SessionStart after
    /// compacting).
    #[serde(default)]
    pub resume_due: bool,
    /// Claude Code's launch settings (its compaction variables), from its
    /// latest hook's or statusLine's environment; no other harness has them.
    /// Older files kept them, defaulted, for every session as `knobs`.
    #[serde(default, alias = "knobs", skip_serializing_if = "Option::is_none")]
    pub claude_code_knobs: Option<Knobs>,
    /// hookd's own settings in the latest hook's environment (`HOOKD_…`):
    /// the file watcher decides with the configuration the hooks have.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_env: BTreeMap<String, String>,
    pub epoch: u32,
    #[serde(default)]
    pub epoch_started_ms: u64,
    /// The compaction that started this epoch, when the transcript showed it.
    #[serde(default)]
    pub epoch_boundary: Option<String>,
    /// A hook opened this epoch and the session's file does not show the
    /// compaction's boundary yet (Claude Code writes it after
    /// SessionStart(compact)).
    #[serde(default)]
    pub awaiting_boundary: bool,
    /// A drop in the figure, not a compaction's record or hook, opened this
    /// epoch.
    #[serde(default)]
    pub epoch_by_drop: bool,
    /// Levels fired in this epoch.
    #[serde(default)]
    pub fired: Vec<f64>,
    /// Highest pressure seen in this epoch.
    #[serde(default)]
    pub peak_pressure: f64,
    /// A PreCompact hook announced a compaction that has not shown up yet.
    #[serde(default)]
    pub compaction_announced_ms: Option<u64>,
    /// That PreCompact's trigger (manual or auto).
    #[serde(default)]
    pub announced_trigger: Option<crate::harness::Trigger>,
    /// The epoch whose PreCompact ran the pipeline: a harness that fires it
    /// before every model call gets one save per epoch.
    #[serde(default)]
    pub precompact_saved_epoch: Option<u32>,
    #[serde(default)]
    pub last_save: Option<Mark>,
    #[serde(default)]
    pub last_checkpoint: Option<Mark>,
    #[serde(default)]
    pub resume: Option<Mark>,
    /// Why usage cannot be read right now, if it cannot.
    #[serde(default)]
    pub transcript_problem: Option<String>,
    /// A resume prompt injected but not yet seen in the transcript.
    #[serde(default)]
    pub resume_pending: Option<PendingResume>,
    /// The token the latest PreCompact asked the summary's block to carry.
    #[serde(default)]
    pub summary_token: Option<SummaryToken>,
    /// The latest readings, oldest first, at most [`HISTORY_POINTS`].
    #[serde(default)]
    pub history: Vec<ContextPoint>,
    /// A compaction happened: the next reading is the first after it.
    #[serde(default)]
    pub mark_next: Option<PointMark>,
    /// What following the injected resume prompt means, until the agent's
    /// first tool calls after it decide whether it did.
    #[serde(default)]
    pub follow_watch: Option<FollowWatch>,
    /// Whether the agent followed each resume prompt, oldest first, at
    /// most [`FOLLOWED_KEPT`].
    #[serde(default)]
    pub followed: Vec<ResumeFollowed>,
    /// Threshold words decided between hooks (the file watcher saw the
    /// crossing), said by the next hook inside a turn that can carry them
    /// to the model; a compaction drops them.
    #[serde(default)]
    pub unsaid: Vec<Words>,
}

/// Verdicts on resume prompts kept per session.
pub const FOLLOWED_KEPT: usize = 8;

/// What the resume prompt asked the agent to pick up, to judge its first
/// tool calls by. Paths are relative to the project, as the state keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowWatch {
    /// The epoch of the compaction the prompt came after.
    pub epoch: u32,
    /// The injected prompt's marker: the calls after it count.
    pub marker: String,
    /// How far the session's file was read when the prompt went out: the
    /// marker and the calls after it lie beyond.
    #[serde(default)]
    pub from_offset: Option<u64>,
    /// The reload list's files and the first next action's "read first" files.
    pub files: Vec<String>,
    /// The first next action's target.
    pub next_target: Option<String>,
    /// The task in progress: its id and title.
    pub task_id: Option<String>,
    pub task_title: Option<String>,
}

/// Words for the person (`systemMessage`) and the model (context).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Words {
    pub person: Option<String>,
    pub model: Option<String>,
}

/// Where a session's figure came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The latest reply in the session's file.
    Reply,
    /// A compaction's own estimate, until the next reply.
    Compaction,
    /// Claude Code's statusLine input.
    Statusline,
    /// A figure a hook carried itself (Cursor's preCompact).
    PreCompactHook,
    /// No figure yet (and anything another version wrote that this one does not know).
    #[default]
    #[serde(other)]
    None,
}

impl UsageSource {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::None => "none",
            UsageSource::Reply => "reply",
            UsageSource::Compaction => "compaction",
            UsageSource::Statusline => "statusline",
            UsageSource::PreCompactHook => "pre-compact hook",
        }
    }
}

/// A resume prompt on its way to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingResume {
    /// Unique text inside the prompt, looked for in the transcript.
    pub marker: String,
    pub prompt: String,
    pub injected_at_ms: u64,
    /// Injected a second time already.
    pub reinjected: bool,
    /// When a hook began looking for it: hooks that run meanwhile leave it
    /// to that one, so it is never injected again twice nor judged twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checking_since_ms: Option<u64>,
}

impl PendingResume {
    /// Longest a check may hold its claim: past it, the hook that took it is
    /// taken for gone (a check looks for at most a fraction of a second).
    const CHECK_CLAIM_MS: u64 = 10_000;

    /// Claims the arrival check for a hook at `now`, unless another hook
    /// holds it.
    pub fn claim_check(&mut self, now: u64) -> bool {
        if self
            .checking_since_ms
            .is_some_and(|since| now.saturating_sub(since) < Self::CHECK_CLAIM_MS)
        {
            return false;
        }
        self.checking_since_ms = Some(now);
        true
    }
}

/// The one-time token PreCompact gave a compaction's summary block; only
/// a block that repeats it is merged (see `capture::summary_block`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryToken {
    pub token: String,
    /// The epoch it was given in: it serves that compaction's summary,
    /// which may arrive once the next epoch began, and no later one's.
    pub epoch: u32,
    /// The fingerprint of the block it let in, once one did.
    #[serde(default)]
    pub used_by: Option<String>,
}

impl Session {
    /// The summary token that may still let a block in.
    pub fn live_summary_token(&self) -> Option<SummaryToken> {
        self.summary_token
            .clone()
            .filter(|t| self.epoch <= t.epoch.saturating_add(1))
    }
}

/// Why an epoch began.
#[derive(Debug, Clone, PartialEq)]
pub enum EpochStart {
    /// The transcript shows a compaction.
    Boundary(Boundary),
    /// A SessionStart(compact) or PostCompact hook says one happened.
    Hook(String),
    /// Usage fell by at least `monitor.reset_drop`.
    Drop { from: f64, to: f64 },
}

impl Session {
    pub fn new(key: SessionKey, now_ms: u64) -> Self {
        Session {
            key,
            project_dir: None,
            working_dir: None,
            transcript_path: None,
            model: None,
            first_seen_ms: now_ms,
            last_event: String::new(),
            last_event_at_ms: now_ms,
            events_seen: 0,
            ended: false,
            usage: None,
            usage_source: UsageSource::None,
            usage_at_ms: 0,
            cursor: None,
            statusline_window: None,
            reported_window: None,
            harness_point: None,
            launch_point: None,
            learned_point: None,
            launch_process: None,
            auto_compacted_at: None,
            boundaries_taken_to: None,
            resume_due: false,
            claude_code_knobs: None,
            config_env: BTreeMap::new(),
            epoch: 1,
            epoch_started_ms: now_ms,
            epoch_boundary: None,
            awaiting_boundary: false,
            epoch_by_drop: false,
            fired: Vec::new(),
            peak_pressure: 0.0,
            compaction_announced_ms: None,
            announced_trigger: None,
            precompact_saved_epoch: None,
            last_save: None,
            last_checkpoint: None,
            resume: None,
            transcript_problem: None,
            resume_pending: None,
            summary_token: None,
            history: Vec::new(),
            mark_next: None,
            follow_watch: None,
            followed: Vec::new(),
            unsaid: Vec::new(),
        }
    }

    /// What the session's harness needs to place its compaction point.
    pub fn facts(&self) -> SessionFacts<'_> {
        SessionFacts {
            harness: self.key.harness,
            model: self
                .model
                .as_deref()
                .or_else(|| self.usage.as_ref()?.model.as_deref()),
            usage: self.usage.as_ref(),
            statusline_window: self.statusline_window,
            reported_window: self.reported_window,
            // A learned point stands for a limit set where hookd cannot
            // look, which outranks every one it can read; it goes when one
            // of those appears or changes.
            harness_point: self
                .learned_point
                .as_ref()
                .or(self.launch_point.as_ref())
                .or(self.harness_point.as_ref()),
            claude_code_knobs: self.claude_code_knobs.as_ref(),
        }
    }

    /// What `hookctl status` notes of the session's compaction point, when
    /// it cannot be known yet.
    pub fn point_note(&self, config: &Config) -> Option<String> {
        let (adapter, facts) = (crate::harness::adapter(self.key.harness), self.facts());
        // The harness's own words for why (Codex: until its first compaction).
        adapter
            .point_unknown(&facts, &config.window)
            .then(|| adapter.compaction_point(&facts, &config.window).basis)
    }

    pub fn status(&self, context: Option<ContextStatus>) -> SessionStatus {
        SessionStatus {
            harness: self.key.harness.as_str().to_owned(),
            session_id: self.key.id.clone(),
            project_dir: self.project_dir.clone(),
            transcript_path: self.transcript_path.clone(),
            last_event: Some(self.last_event.clone()),
            last_event_at_ms: self.last_event_at_ms,
            events_seen: self.events_seen,
            ended: self.ended,
            model: self.model.clone(),
            context,
            epoch: self.epoch,
            fired: self.fired.clone(),
            last_save: self.last_save.clone(),
            last_checkpoint: self.last_checkpoint.clone(),
            resume: self.resume.clone(),
            notes: self.transcript_problem.iter().cloned().collect(),
            history: self.history.clone(),
            resumes_followed: self
                .followed
                .iter()
                .cloned()
                .chain(self.follow_watch.as_ref().map(|w| ResumeFollowed {
                    epoch: w.epoch,
                    followed: None,
                    detail: None,
                }))
                .collect(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Registry {
    sessions: HashMap<SessionKey, Session>,
}

#[derive(Deserialize)]
struct RegistryFile {
    version: u32,
    sessions: Vec<Session>,
}

#[derive(Serialize)]
struct RegistryFileRef<'a> {
    version: u32,
    sessions: Vec<&'a Session>,
}

impl Registry {
    pub fn get(&self, key: &SessionKey) -> Option<&Session> {
        self.sessions.get(key)
    }

    pub fn get_mut(&mut self, key: &SessionKey) -> Option<&mut Session> {
        self.sessions.get_mut(key)
    }

    /// The session for `key`, created if new.
    pub fn entry(&mut self, key: SessionKey, now_ms: u64) -> &mut Session {
        self.sessions
            .entry(key.clone())
            .or_insert_with(|| Session::new(key, now_ms))
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    /// Sessions whose id starts with `filter` (all when `None`), most recent first.
    pub fn matching(&self, filter: Option<&str>) -> Vec<&Session> {
        let mut out: Vec<&Session> = self
            .sessions
            .values()
            .filter(|s| filter.is_none_or(|f| s.key.id.starts_with(f)))
            .collect();
        out.sort_by(|a, b| {
            b.last_event_at_ms
                .cmp(&a.last_event_at_ms)
                .then_with(|| a.key.cmp(&b.key))
        });
        out
    }

    /// Ends sessions idle too long, forgets ended ones after a while, and
    /// drops the longest-idle sessions beyond `max`. Returns the keys removed.
    pub fn expire(
        &mut self,
        now_ms: u64,
        idle_expiry_ms: u64,
        keep_ended_ms: u64,
        max: usize,
    ) -> Vec<SessionKey> {
        for s in self.sessions.values_mut() {
            if !s.ended && now_ms.saturating_sub(s.last_event_at_ms) >= idle_expiry_ms {
                s.ended = true;
            }
        }
        let mut removed: Vec<SessionKey> = self
            .sessions
            .values()
            .filter(|s| s.ended && now_ms.saturating_sub(s.last_event_at_ms) >= keep_ended_ms)
            .map(|s| s.key.clone())
            .collect();
        for key in &removed {
            self.sessions.remove(key);
        }
        if self.sessions.len() > max {
            let mut by_age: Vec<(u64, SessionKey)> = self
                .sessions
                .values()
                .map(|s| (s.last_event_at_ms, s.key.clone()))
                .collect();
            by_age.sort();
            for (_, key) in by_age.into_iter().take(self.sessions.len() - max) {
                self.sessions.remove(&key);
                removed.push(key);
            }
        }
        removed
    }

    /// Drops the longest-idle sessions (ended ones first) beyond `max`.
    pub fn evict_over(&mut self, max: usize) -> Vec<SessionKey> {
        if self.sessions.len() <= max {
            return Vec::new();
        }
        let mut by_age: Vec<(bool, u64, SessionKey)> = self
            .sessions
            .values()
            .map(|s| (!s.ended, s.last_event_at_ms, s.key.clone()))
            .collect();
        by_age.sort();
        let excess = self.sessions.len() - max;
        let gone: Vec<SessionKey> = by_age.into_iter().take(excess).map(|(_, _, k)| k).collect();
        for key in &gone {
            self.sessions.remove(key);
        }
        gone
    }

    /// Reads the registry a previous daemon left. A missing file is an empty
    /// registry; a corrupt one is set aside (renamed) and reported.
    pub fn load(path: &Path) -> (Registry, Option<String>) {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Registry::default(), None);
            }
            Err(e) => {
                return (
                    Registry::default(),
                    Some(format!("cannot read {}: {e}", path.display())),
                );
            }
        };
        match serde_json::from_slice::<RegistryFile>(&text) {
            Ok(file) if file.version == REGISTRY_VERSION => {
                let sessions = file
                    .sessions
                    .into_iter()
                    .map(|s| (s.key.clone(), s))
                    .collect();
                (Registry { sessions }, None)
            }
            Ok(file) => (
                Registry::default(),
                Some(format!(
                    "{} has version {}; starting empty",
                    path.display(),
                    file.version
                )),
            ),
            Err(e) => {
                let aside = path.with_extension("json.corrupt");
                let _ = std::fs::rename(path, &aside);
                (
                    Registry::default(),
                    Some(format!(
                        "{} was corrupt ({e}); moved to {}",
                        path.display(),
                        aside.display()
                    )),
                )
            }
        }
    }

    #[cfg(test)]
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::fsutil::write_atomic(path, &self.to_bytes()?)
    }

    /// The registry file's bytes: taken under the registry lock, written
    /// after it is released, so no hook waits for a disk.
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut sessions: Vec<&Session> = self.sessions.values().collect();
        sessions.sort_by(|a, b| a.key.cmp(&b.key));
        serde_json::to_vec(&RegistryFileRef {
            version: REGISTRY_VERSION,
            sessions,
        })
        .map_err(std::io::Error::other)
    }
}

/// How full a session's context is, by the rules of its harness.
pub fn context_of(session: &Session, config: &Config) -> Option<ContextStatus> {
    let usage = session.usage.as_ref()?;
    Some(context_for(session, config, usage.tokens))
}

pub fn empty_context(session: &Session, config: &Config) -> ContextStatus {
    context_for(session, config, 0)
}

fn context_for(session: &Session, config: &Config, tokens: u64) -> ContextStatus {
    let adapter = crate::harness::adapter(session.key.harness);
    let facts = session.facts();
    let point = adapter.compaction_point(&facts, &config.window);
    let point_unknown = adapter.point_unknown(&facts, &config.window);
    let pressure = tokens as f64 / point.tokens.max(1) as f64;
    ContextStatus {
        tokens_used: tokens,
        tokens_max: point.tokens,
        window_tokens: point.window,
        pressure,
        window_fraction: tokens as f64 / point.window.max(1) as f64,
        basis: point.basis,
        source: session.usage_source.as_str().to_owned(),
        advice: Advice::for_pressure(pressure),
        updated_at_ms: session.usage_at_ms,
        invalid: session.usage.as_ref().and_then(|u| u.invalid.clone()),
        point_unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> SessionKey {
        SessionKey {
            harness: Harness::ClaudeCode,
            id: id.into(),
        }
    }

    #[test]
    fn an_older_registry_with_knobs_on_every_session_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REGISTRY_FILE);
        // As an older hookd wrote them: `knobs` for every harness, the
        // announced trigger as text.
        let mut registry = Registry::default();
        for harness in Harness::ALL {
            let key = SessionKey {
                harness,
                id: format!("{harness}-1"),
            };
            registry.sessions.insert(key.clone(), Session::new(key, 0));
        }
        let mut file: serde_json::Value =
            serde_json::from_slice(&registry.to_bytes().unwrap()).unwrap();
        for session in file["sessions"].as_array_mut().unwrap() {
            session["knobs"] = serde_json::json!({
                "autocompact_pct": 50.0,
                "auto_compact_window": null,
                "max_context_tokens": null,
                "auto_compact_disabled": false
            });
            session["announced_trigger"] = "auto".into();
        }
        std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
        let (loaded, problem) = Registry::load(&path);
        assert_eq!(problem, None);
        assert_eq!(loaded.sessions.len(), Harness::ALL.len());
        for s in loaded.sessions.values() {
            let knobs = s
                .claude_code_knobs
                .as_ref()
                .expect("the old knobs are kept");
            assert_eq!(knobs.autocompact_pct, Some(50.0), "{}", s.key);
            assert_eq!(s.announced_trigger, Some(crate::harness::Trigger::Auto));
        }
        // Written again, a session without Claude Code's settings has none.
        let mut fresh = Registry::default();
        let key = SessionKey {
            harness: Harness::Codex,
            id: "c".into(),
        };
        fresh.sessions.insert(key.clone(), Session::new(key, 0));
        let text = String::from_utf8(fresh.to_bytes().unwrap()).unwrap();
        assert!(!text.contains("knobs"), "{text}");
    }

    #[test]
    fn a_summary_token_serves_its_compaction_and_no_later_one() {
        let mut s = Session::new(key("s1"), 0);
        assert_eq!(s.live_summary_token(), None, "no PreCompact, no token");
        let token = SummaryToken {
            token: "t".into(),
            epoch: s.epoch,
            used_by: None,
        };
        s.summary_token = Some(token.clone());
        assert_eq!(s.live_summary_token(), Some(token.clone()));
        // The summary may arrive once its compaction began the next epoch.
        s.epoch += 1;
        assert_eq!(s.live_summary_token(), Some(token));
        // A later compaction whose PreCompact did not run gets none.
        s.epoch += 1;
        assert_eq!(s.live_summary_token(), None);
    }

    #[test]
    fn the_registry_survives_a_restart_and_a_corrupt_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REGISTRY_FILE);
        let mut r = Registry::default();
        let s = r.entry(key("abc"), 5);
        s.epoch = 3;
        s.fired = vec![0.7];
        r.save(&path).unwrap();
        let (back, problem) = Registry::load(&path);
        assert!(problem.is_none());
        let s = back.get(&key("abc")).unwrap();
        assert_eq!((s.epoch, s.fired.clone()), (3, vec![0.7]));

        std::fs::write(&path, b"{\"version\":1,\"sessions\":[{").unwrap();
        let (back, problem) = Registry::load(&path);
        assert!(back.is_empty());
        assert!(problem.unwrap().contains("corrupt"));
        assert!(
            path.with_extension("json.corrupt").exists(),
            "kept for a person to look at"
        );
    }

    #[test]
    fn idle_sessions_end_and_the_oldest_go_first() {
        let mut r = Registry::default();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            r.entry(key(id), 0).last_event_at_ms = i as u64 * 10;
        }
        let removed = r.expire(25, 1_000, 1_000, 2);
        assert_eq!(removed, vec![key("a")]);
        let removed = r.expire(5_000, 1_000, 10_000, 10);
        assert!(removed.is_empty());
        assert!(r.iter().all(|s| s.ended), "idle past the expiry");
        let removed = r.expire(20_000, 1_000, 10_000, 10);
        assert_eq!(removed.len(), 2, "ended long enough ago");
    }
}
