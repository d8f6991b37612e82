//! Gemini CLI: hook payloads in, hook output out.
//!
//! What this relies on (measured with the real Gemini CLI 0.61.0, which the
//! end-to-end tests drive):
//! - hooks live under `hooks` in `~/.gemini/settings.json` and
//!   `<project>/.gemini/settings.json`, in Claude Code's layout with the
//!   timeout in milliseconds;
//! - its events map onto hookd's: `SessionStart` (source `startup`,
//!   `resume`, `clear`: there is no `compact`), `BeforeAgent` (a prompt),
//!   `BeforeTool`, `AfterTool`, `AfterAgent` (the turn ended), `PreCompress`
//!   (trigger `manual` or `auto`; advisory and asynchronous) and
//!   `SessionEnd`. It has no event after compression;
//! - every payload has `session_id`, `transcript_path`, `cwd`,
//!   `hook_event_name`, `timestamp`; hooks see `GEMINI_PROJECT_DIR`;
//! - stdout must be JSON only: `systemMessage` for the person, and
//!   `hookSpecificOutput.additionalContext` (with `hookEventName`) for the
//!   model on SessionStart, BeforeAgent and AfterTool.
//!
//! - the session file (`~/.gemini/tmp/<project>/chats/session-*.jsonl`,
//!   `transcript_path`) has a line per message; each reply (`type`
//!   `gemini`) carries `tokens.input` (the context now) and `model`, and
//!   its `toolCalls` (`name`, `args`: `write_file {file_path}`, `replace
//!   {file_path}`, `run_shell_command {command}`, `write_todos {todos:
//!   [{description, status}]}`); a reply is written again when its calls
//!   finish. The person's prompts are `user` messages, whose parts include
//!   hook context as `<hook_context>…</hook_context>`.
//!
//! What Gemini CLI cannot do for hookd: no hook fires after compression, so
//! the resume prompt goes in at the next prompt or tool call after the
//! session file shows one (a reply whose `tokens.input` fell);
//! PreCompress fires before every model call, compression or not, so it
//! means a compression only when Gemini CLI's own rule says so: the last
//! reply's `tokens.input` at or past `model.compressionThreshold` (0.5 by
//! default; settings files system defaults < user < project < system, the
//! project's only in a folder Gemini CLI trusts) of its window for the
//! model (1,048,576, or 256,000 for gemma-4 models), once per epoch, as a
//! compression that does not happen leaves PreCompress firing; and it
//! cannot add instructions to the summary.

use super::lines::SEARCH_LIMIT;
use super::process::{self, ProcessCache};
use super::work::{self, LineReader, WorkFacts, WorkLog};
use super::{
    Adapter, Boundary, Cursor, Event, EventName, EventParts, Fields, HarnessPoint, HookEvent,
    Launch, LaunchPoints, Method, Outcome, Reading, SessionFacts, SessionReading, Trigger, Usage,
};
use crate::tail::{ReverseLines, mentions_any, open_regular};
use protocol::config::WindowConfig;
use protocol::pressure::{CompactionPoint, token_count};
use protocol::wire::{HookReply, HookRequest};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Gemini CLI compresses at this fraction of the window unless its
/// settings say otherwise.
const DEFAULT_COMPRESSION_THRESHOLD: f64 = 0.5;
/// A reply whose input fell below this share of the one before shows a
/// compression (nothing else makes a conversation's input shrink).
const COMPRESSED_BELOW: f64 = 0.7;
/// Gemini CLI's window for every model its table does not list.
const DEFAULT_TOKEN_LIMIT: u64 = 1_048_576;
/// The models Gemini CLI's table names (exact names, as it matches them).
const MODEL_TOKEN_LIMITS: &[(&str, u64)] = &[
    ("gemma-4-31b-it", 256_000),
    ("gemma-4-26b-a4b-it", 256_000),
    ("gemini-3-pro-preview", 1_048_576),
    ("gemini-3-flash-preview", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-3.5-flash", 1_048_576),
    ("gemini-3.1-flash-lite", 1_048_576),
];
/// A settings file larger than this is not read (they are a few kilobytes).
const SETTINGS_LIMIT: u64 = 1024 * 1024;
/// Sign-ins with which Gemini CLI may take its compression threshold from
/// Google's server when no settings file sets one.
const SERVER_THRESHOLD_AUTH: &[&str] = &["oauth-personal", "compute-default-credentials"];
/// Where Gemini CLI keeps its system-wide settings on Linux.
const SYSTEM_SETTINGS_DIR: &str = "/etc/gemini-cli";

/// One reply's figure.
struct Reply {
    id: Option<String>,
    tokens: Result<u64, String>,
    model: Option<String>,
}

fn reply_of(line: &[u8]) -> Option<Reply> {
    memchr::memmem::find(line, b"\"gemini\"")?;
    let entry: Value = serde_json::from_slice(line).ok()?;
    if entry["type"] != "gemini" {
        return None;
    }
    let tokens = entry.get("tokens")?;
    Some(Reply {
        id: entry["id"].as_str().map(str::to_owned),
        tokens: token_count("tokens.input", tokens.get("input"))
            .and_then(|t| t.ok_or_else(|| "tokens.input is missing".to_owned())),
        model: entry["model"].as_str().map(str::to_owned),
    })
}

/// Reads the session file from its end: the latest reply's figure, and a
/// compression when it fell well below the reply before it.
fn read(
    path: &Path,
    cursor: Option<&Cursor>,
    current: Option<&Usage>,
) -> Result<SessionReading, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = || path.display().to_string();
    let (file, meta) = match open_regular(path) {
        Ok(Some(opened)) => opened,
        Ok(None) => {
            return Err(format!(
                "Gemini CLI session file {} is not a regular file",
                shown()
            ));
        }
        Err(e) => {
            return Err(format!(
                "cannot read Gemini CLI session file {}: {e}",
                shown()
            ));
        }
    };
    let now = Cursor {
        offset: meta.len(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let unchanged = cursor == Some(&now);
    let mut latest: Option<Reply> = None;
    let mut before: Option<Reply> = None;
    if !unchanged {
        let mut lines = ReverseLines::new(&file, meta.len());
        lines.stop_below(meta.len().saturating_sub(SEARCH_LIMIT));
        while let Some(line) = lines
            .next_line()
            .map_err(|e| format!("cannot read Gemini CLI session file {}: {e}", shown()))?
        {
            let Some(reply) = reply_of(&line) else {
                continue;
            };
            match &latest {
                None => latest = Some(reply),
                // A reply is written again when its tool calls finish.
                Some(l) if l.id.is_some() && l.id == reply.id => {}
                Some(_) => {
                    before = Some(reply);
                    break;
                }
            }
        }
    }
    let mut boundaries = Vec::new();
    let usage = match &latest {
        None => current.cloned(),
        Some(Reply {
            tokens: Err(why), ..
        }) => Some(Usage::invalidated(
            current.cloned(),
            format!("invalid usage in session file {}: {why}", shown()),
        )),
        Some(Reply {
            tokens: Ok(tokens),
            id,
            model,
        }) => {
            if let Some(Reply {
                tokens: Ok(prior),
                id: prior_id,
                ..
            }) = &before
                && (*tokens as f64) < *prior as f64 * COMPRESSED_BELOW
            {
                boundaries.push(Boundary {
                    // The reply after the compression names it.
                    uuid: id.clone().or_else(|| prior_id.clone()),
                    trigger: Some("auto".into()),
                    pre_tokens: Some(*prior),
                    post_tokens: Some(*tokens),
                    timestamp: None,
                });
            }
            Some(Usage {
                tokens: *tokens,
                model: model.clone(),
                from_boundary: false,
                message_id: id.clone(),
                invalid: None,
            })
        }
    };
    Ok(SessionReading {
        reading: Reading {
            usage,
            boundaries,
            cursor: now,
            method: if unchanged {
                Method::Unchanged
            } else {
                Method::Backward
            },
            bytes_read: 0,
        },
        window: None,
        // Settled from the hook, which sees Gemini CLI's environment: see
        // [`launch_point`].
        compaction_point: None,
    })
}

/// Where Gemini CLI compresses by its settings files, read at a hook: which
/// of them it took depends on its environment (`GEMINI_CLI_TRUST_WORKSPACE`,
/// `GEMINI_RESTRICTED_MODE`, `GEMINI_CLI_TRUSTED_FOLDERS_PATH`), as it was
/// when Gemini CLI started (the process that ran the hook, `peer_pid`, or
/// an ancestor), else as the hook sees it. Gemini CLI reads its settings
/// once, at start, so what its process's first hook found is kept in
/// `known` for the later ones (PreCompress comes before every model call);
/// without its process, the settings as they are now. `None` when the
/// session file does not say where Gemini CLI keeps its settings.
fn launch_point(
    event: &HookEvent,
    peer_pid: Option<u32>,
    known: &ProcessCache<Option<HarnessPoint>>,
) -> Option<Launch> {
    let transcript = event.transcript_path.as_deref()?;
    let gemini_dir = gemini_dir_of(transcript)?;
    // A process seen before is known by its stat alone.
    let gemini = peer_pid.and_then(|pid| {
        process::find(pid, process::HOOK_ANCESTORS, |p| {
            known.contains(p.id) || p.args().is_some_and(|args| runs_gemini(&args))
        })
    });
    let process = gemini.as_ref().map(|p| p.id.describe("gemini"));
    // The session's own directory of Gemini CLI's, `tmp/<project>`: one
    // Gemini CLI process has one.
    let files = transcript.ancestors().nth(2).unwrap_or(transcript);
    if let Some(point) = gemini.as_ref().and_then(|p| known.get(p.id, files)) {
        return Some(Launch { process, point });
    }
    let project = project_root_of(transcript).or_else(|| event.cwd.clone());
    let env = gemini
        .as_ref()
        .and_then(|p| p.environment())
        .map(|environ| {
            trust_env(|name| {
                environ.iter().find_map(|entry| {
                    entry
                        .strip_prefix(name)?
                        .strip_prefix('=')
                        .map(str::to_owned)
                })
            })
        })
        .unwrap_or_else(|| trust_env(|name| event.env.get(name).cloned()));
    let trusted_folders = env
        .get(TRUSTED_FOLDERS_PATH_VAR)
        .filter(|p| !p.is_empty())
        .map_or_else(|| gemini_dir.join(TRUSTED_FOLDERS_FILE), PathBuf::from);
    let trust = TrustInputs {
        env,
        trusted_folders,
    };
    let point = configured_threshold(&settings_files(&gemini_dir, project.as_deref()), &trust);
    if let Some(p) = &gemini {
        known.put(p.id, files, point.clone());
    }
    Some(Launch { process, point })
}

/// `~/.gemini` of a session file at `~/.gemini/tmp/<project>/chats/session-*.jsonl`.
fn gemini_dir_of(session_file: &Path) -> Option<PathBuf> {
    let tmp = session_file.ancestors().nth(3)?;
    (tmp.file_name()? == "tmp").then(|| tmp.parent().map(Path::to_path_buf))?
}

/// The directory Gemini CLI ran in, which it records in
/// `~/.gemini/tmp/<project>/.project_root`: its project settings are there.
fn project_root_of(session_file: &Path) -> Option<PathBuf> {
    let slug_dir = session_file.ancestors().nth(2)?;
    let bytes = crate::project_fs::Dir::open(slug_dir)
        .ok()?
        .read(".project_root", 4096)
        .ok()??;
    let text = String::from_utf8(bytes).ok()?;
    let root = PathBuf::from(text.trim_end_matches(['\n', '\r']));
    root.is_absolute().then_some(root)
}

/// Where one settings layer lives.
#[derive(Debug, Clone, PartialEq)]
enum SettingsFile {
    /// The user's or the system's: read as they are.
    Own(PathBuf),
    /// `<project>/.gemini/settings.json`: repository content, read without
    /// following a link and with a bound.
    Project(PathBuf),
}

/// Gemini CLI's settings files, lowest precedence first: system defaults,
/// user, project (not when the project is the home directory, as Gemini CLI
/// skips it then), system.
fn settings_files(gemini_dir: &Path, project: Option<&Path>) -> Vec<SettingsFile> {
    let system = Path::new(SYSTEM_SETTINGS_DIR);
    let mut files = vec![
        SettingsFile::Own(system.join("system-defaults.json")),
        SettingsFile::Own(gemini_dir.join("settings.json")),
    ];
    let home = gemini_dir.parent();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if let Some(project) = project.filter(|p| !home.is_some_and(|h| same(p, h))) {
        files.push(SettingsFile::Project(project.to_path_buf()));
    }
    files.push(SettingsFile::Own(system.join("settings.json")));
    files
}

/// The text of one settings file; `Ok(None)` when it is absent.
fn settings_text(file: &SettingsFile) -> Result<Option<(String, String)>, String> {
    let (shown, bytes) = match file {
        SettingsFile::Own(path) => {
            let shown = path.display().to_string();
            let bytes = match open_regular(path) {
                Ok(Some((file, meta))) if meta.len() <= SETTINGS_LIMIT => {
                    let mut bytes = Vec::new();
                    io::Read::read_to_end(&mut io::Read::take(file, SETTINGS_LIMIT), &mut bytes)
                        .map_err(|e| format!("cannot read {shown}: {e}"))?;
                    bytes
                }
                Ok(Some(_)) => {
                    return Err(format!("{shown} is larger than {SETTINGS_LIMIT} bytes"));
                }
                Ok(None) => return Err(format!("{shown} is not a regular file")),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read {shown}: {e}")),
            };
            (shown, bytes)
        }
        SettingsFile::Project(root) => {
            let shown = root.join(".gemini/settings.json").display().to_string();
            let read = crate::project_fs::Dir::open(root)
                .and_then(|dir| dir.open_dir(".gemini"))
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
    Ok(Some((shown, text)))
}

/// One settings file, parsed; `None` when it is absent, or cannot be read
/// or parsed (then said in `passed_over`).
fn settings_of(file: &SettingsFile, passed_over: &mut Vec<String>) -> Option<(String, Value)> {
    let (shown, text) = match settings_text(file) {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(why) => {
            passed_over.push(format!("{why}: its settings are not counted"));
            return None;
        }
    };
    match serde_json::from_str(&without_comments(&text)) {
        Ok(settings) => Some((shown, settings)),
        Err(e) => {
            passed_over.push(format!(
                "{shown} is not valid JSON ({e}): its settings are not counted"
            ));
            None
        }
    }
}

/// `model.compressionThreshold` as Gemini CLI settles it: the settings
/// file of highest precedence that sets it wins. The project's file counts
/// only in a folder Gemini CLI trusts, and is not even read otherwise. A
/// value Gemini CLI would not take as a share of the window, or a file
/// hookd cannot read, is passed over, and said in the basis.
fn configured_threshold(files: &[SettingsFile], trust: &TrustInputs) -> Option<HarnessPoint> {
    let mut chosen: Option<(f64, String)> = None;
    let mut passed_over = Vec::new();
    let mut auth: Option<String> = None;
    let mut layers: Vec<Option<(String, Value)>> = files
        .iter()
        .map(|file| match file {
            SettingsFile::Own(_) => settings_of(file, &mut passed_over),
            SettingsFile::Project(_) => None,
        })
        .collect();
    let project = files.iter().enumerate().find_map(|(at, file)| match file {
        SettingsFile::Project(root) => Some((at, root)),
        SettingsFile::Own(_) => None,
    });
    if let Some((at, root)) = project {
        let own: Vec<&(String, Value)> = layers.iter().flatten().collect();
        match workspace_trust(trust, &own, root) {
            Ok(()) => layers[at] = settings_of(&files[at], &mut passed_over),
            Err(why) => passed_over.push(format!(
                "{} is not read: Gemini CLI does not trust {} ({why})",
                root.join(protocol::project::GEMINI_CLI_PROJECT_SETTINGS)
                    .display(),
                root.display()
            )),
        }
    }
    for (shown, settings) in layers.iter().flatten() {
        let shown = shown.clone();
        if let Some(selected) = settings["security"]["auth"]["selectedType"].as_str() {
            auth = Some(selected.to_owned());
        }
        match &settings["model"]["compressionThreshold"] {
            Value::Null => {}
            // Gemini CLI takes a zero as "not set".
            Value::Number(n) if n.as_f64() == Some(0.0) => {}
            Value::Number(n) if n.as_f64().is_some_and(|t| t > 0.0 && t <= 1.0) => {
                chosen = n.as_f64().map(|t| (t, shown));
            }
            other => passed_over.push(format!(
                "model.compressionThreshold {} in {shown} is not a share of the window \
                 (a number above 0, at most 1): ignored, fix it there",
                protocol::text::clip(&other.to_string(), 40)
            )),
        }
    }
    // Signed in with Google, Gemini CLI asks Google's server for a
    // threshold when no settings file sets one; hookd cannot see that answer.
    let server_may_set = chosen.is_none()
        && auth
            .as_deref()
            .is_some_and(|a| SERVER_THRESHOLD_AUTH.contains(&a));
    if chosen.is_none() && passed_over.is_empty() && !server_may_set {
        return None;
    }
    let mut basis = match &chosen {
        Some((t, shown)) => format!("model.compressionThreshold {t} in {shown}"),
        None if server_may_set => format!(
            "Gemini CLI's default compression threshold, assumed: signed in with Google \
             (security.auth.selectedType {}), Gemini CLI may take another from Google's \
             server, which hookd cannot see; set model.compressionThreshold in \
             ~/.gemini/settings.json to make it known",
            auth.as_deref().unwrap_or("")
        ),
        None => "Gemini CLI's default compression threshold".to_owned(),
    };
    for note in passed_over {
        basis.push_str("; ");
        basis.push_str(&note);
    }
    Some(HarnessPoint {
        tokens: None,
        fraction: chosen.map(|(t, _)| t),
        basis,
    })
}

/// What decides whether Gemini CLI trusts the folder it runs in.
struct TrustInputs {
    /// Its trust variables ([`TRUST_VARS`]), as set when it read its settings.
    env: BTreeMap<String, String>,
    /// Its `trustedFolders.json`.
    trusted_folders: PathBuf,
}

/// Gemini CLI's variables that trust or distrust the folder it runs in, and
/// the one that moves its `trustedFolders.json`.
const TRUST_WORKSPACE_VAR: &str = "GEMINI_CLI_TRUST_WORKSPACE";
const RESTRICTED_MODE_VAR: &str = "GEMINI_RESTRICTED_MODE";
const TRUSTED_FOLDERS_PATH_VAR: &str = "GEMINI_CLI_TRUSTED_FOLDERS_PATH";
const TRUST_VARS: [&str; 3] = [
    TRUST_WORKSPACE_VAR,
    RESTRICTED_MODE_VAR,
    TRUSTED_FOLDERS_PATH_VAR,
];
const TRUSTED_FOLDERS_FILE: &str = "trustedFolders.json";
/// The trust levels `trustedFolders.json` may give a path.
const TRUST_LEVELS: [&str; 3] = ["TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"];

fn trust_env(get: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    TRUST_VARS
        .iter()
        .filter_map(|name| get(name).map(|value| ((*name).to_owned(), value)))
        .collect()
}

/// Whether a command line runs Gemini CLI: its program, or the script node
/// runs, is `gemini` (npm's launcher) or `gemini.js` (the bundle).
fn runs_gemini(args: &[String]) -> bool {
    let script = args.iter().skip(1).find(|a| !a.starts_with('-'));
    args.first().into_iter().chain(script).any(|a| {
        matches!(
            Path::new(a).file_name().and_then(|n| n.to_str()),
            Some("gemini" | "gemini.js")
        )
    })
}

/// Whether Gemini CLI trusts `project`, and so takes its settings file, as
/// Gemini CLI decides it: `GEMINI_RESTRICTED_MODE=true` or
/// `GEMINI_CLI_TRUST_WORKSPACE=false` distrust it, `…=true` trusts it;
/// otherwise, with folder trust on (`security.folderTrust.enabled`, true
/// unless the user's or system settings turn it off; `own` holds them,
/// lowest precedence first), the longest rule of `trustedFolders.json` that
/// covers it decides, and no rule means not trusted. `Err` says why not.
/// (Trust an IDE grants is not seen here.)
fn workspace_trust(
    trust: &TrustInputs,
    own: &[&(String, Value)],
    project: &Path,
) -> Result<(), String> {
    let var = |name: &str| trust.env.get(name).map(String::as_str);
    if var(RESTRICTED_MODE_VAR) == Some("true") {
        return Err(format!("{RESTRICTED_MODE_VAR}=true"));
    }
    match var(TRUST_WORKSPACE_VAR) {
        Some("false") => return Err(format!("{TRUST_WORKSPACE_VAR}=false")),
        Some("true") => return Ok(()),
        _ => {}
    }
    let folder_trust = own
        .iter()
        .rev()
        .find_map(|(_, settings)| settings["security"]["folderTrust"]["enabled"].as_bool());
    if folder_trust == Some(false) {
        return Ok(());
    }
    folder_rule(&trust.trusted_folders, project)
}

/// What the user's `trustedFolders.json` says of `project`: the rule with
/// the longest path that is `project` or above it (`TRUST_PARENT` covers
/// the rule path's parent). Gemini CLI refuses to start with a file it
/// cannot read or parse, so such a file trusts nothing.
fn folder_rule(file: &Path, project: &Path) -> Result<(), String> {
    let shown = file.display().to_string();
    let text = match settings_text(&SettingsFile::Own(file.to_path_buf())) {
        Ok(Some((_, text))) => text,
        Ok(None) => return Err(format!("no rule for it in {shown}")),
        Err(why) => return Err(format!("{why}; Gemini CLI does not start with it")),
    };
    let rules: Value = serde_json::from_str(&without_comments(&text)).map_err(|e| {
        format!("{shown} is not valid JSON ({e}); Gemini CLI does not start with it")
    })?;
    let Some(rules) = rules.as_object() else {
        return Err(format!(
            "{shown} is not a JSON object; Gemini CLI does not start with it"
        ));
    };
    let location = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    let mut longest: Option<(usize, &str, &str)> = None;
    for (raw, level) in rules {
        let Some(level) = level.as_str().filter(|l| TRUST_LEVELS.contains(l)) else {
            return Err(format!(
                "the trust level of {} in {shown} is not one of {}; Gemini CLI does not \
                 start with it",
                protocol::text::clip(raw, 200),
                TRUST_LEVELS.join(", ")
            ));
        };
        let rule = absolute(Path::new(raw), project);
        let covered = if level == "TRUST_PARENT" {
            rule.parent().unwrap_or(&rule).to_path_buf()
        } else {
            rule.clone()
        };
        let covered = covered.canonicalize().unwrap_or(covered);
        // Gemini CLI compares the rule paths' lengths in UTF-16 units.
        let length = rule.to_string_lossy().encode_utf16().count();
        if location.starts_with(&covered) && longest.is_none_or(|(l, _, _)| length > l) {
            longest = Some((length, raw, level));
        }
    }
    match longest {
        Some((_, raw, "DO_NOT_TRUST")) => Err(format!(
            "{} is DO_NOT_TRUST in {shown}",
            protocol::text::clip(raw, 200)
        )),
        Some(_) => Ok(()),
        None => Err(format!("no rule for it in {shown}")),
    }
}

/// `path` made absolute from `base`, `.` and `..` resolved by name.
fn absolute(path: &Path, base: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(path).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// JSON text without `//` and `/* */` comments (Gemini CLI's settings may
/// carry them), strings left as they are.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(escaped) = chars.next() {
                        out.push(escaped);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The threshold the session's settings gave, else Gemini CLI's default.
fn threshold(session: &SessionFacts) -> f64 {
    session
        .harness_point
        .and_then(|p| p.fraction)
        .unwrap_or(DEFAULT_COMPRESSION_THRESHOLD)
}

/// Gemini CLI's window for `model`, by its own table, and whether the table
/// names the model.
fn token_limit(model: Option<&str>) -> (u64, bool) {
    model
        .and_then(|m| MODEL_TOKEN_LIMITS.iter().find(|(name, _)| *name == m))
        .map_or((DEFAULT_TOKEN_LIMIT, false), |(_, limit)| (*limit, true))
}

/// Where Gemini CLI itself compresses: `threshold × tokenLimit(model)`.
fn client_point(session: &SessionFacts) -> f64 {
    threshold(session) * token_limit(session.model).0 as f64
}

/// Gemini CLI compresses at `model.compressionThreshold` of the model's
/// window (hookd's `window.models` may name another window).
fn compaction_point(session: &SessionFacts, config: &WindowConfig) -> CompactionPoint {
    let model = session.model;
    let configured = model.and_then(|m| config.model_window(m));
    let (limit, listed) = token_limit(model);
    let window = configured.unwrap_or(limit);
    if let Some(forced) = config.tokens_max.filter(|t| *t > 0) {
        return CompactionPoint {
            window,
            tokens: forced,
            basis: format!("{forced} (window.tokens_max)"),
        };
    }
    let threshold = threshold(session);
    let whose_window = match (configured, listed, model) {
        (Some(_), _, _) => "window.models".to_owned(),
        (None, true, Some(m)) => format!("Gemini CLI's window for {m}"),
        (None, false, Some(m)) => {
            format!("Gemini CLI's window for {m}, as for every model it does not list")
        }
        (None, _, None) => "Gemini CLI's default window; the model is not known yet".to_owned(),
    };
    CompactionPoint {
        window,
        tokens: (window as f64 * threshold) as u64,
        basis: match session.harness_point {
            Some(p) => format!(
                "{threshold} of the {window}-token window ({whose_window}; {})",
                p.basis
            ),
            None => format!(
                "{threshold} of the {window}-token window ({whose_window}; \
                 Gemini CLI's default compression threshold)"
            ),
        },
    }
}

/// Whether Gemini CLI compresses at the model call a PreCompress precedes:
/// its own rule, the last prompt's tokens at or past its point; `/compress`
/// (trigger `manual`) compresses wherever the figure stands. PreCompress
/// fires before every model call, so anything looser saves on calls that
/// compress nothing. Gemini CLI also needs an earlier prompt to fold into
/// its summary, so within a chat's first prompt it compresses nothing even
/// past the point; the session file would show that, but nothing carries it
/// here yet.
fn compression_is_due(session: &SessionFacts, trigger: Option<&Trigger>) -> bool {
    if trigger == Some(&Trigger::Manual) {
        return true;
    }
    let Some(usage) = session.usage.filter(|u| u.invalid.is_none()) else {
        return false;
    };
    usage.tokens as f64 >= client_point(session)
}

/// Whether the session file holds `marker` since its latest compression
/// (hook context goes to the model inside the prompt Gemini CLI records).
fn user_message_holds(path: &Path, marker: &str) -> io::Result<bool> {
    let Some((file, meta)) = open_regular(path)? else {
        return Ok(false);
    };
    let mut lines = ReverseLines::new(&file, meta.len());
    lines.stop_below(meta.len().saturating_sub(SEARCH_LIMIT));
    while let Some(line) = lines.next_line()? {
        if memchr::memmem::find(&line, marker.as_bytes()).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What a chat file says about the work: the person's prompts (`user`
/// messages), the todo list (`write_todos` calls: the whole list each
/// time), and the files the agent wrote (`write_file`, `replace`, and its
/// shell commands).
fn read_work(path: &Path, max_bytes: u64, keep_prompts: usize) -> io::Result<WorkFacts> {
    work::read_file::<WorkReader>(path, max_bytes, keep_prompts)
}

#[derive(Default)]
pub(crate) struct WorkReader {
    log: WorkLog,
    /// Tool calls already taken in: a reply is written again when its calls finish.
    seen_calls: std::collections::HashSet<String>,
}

impl LineReader for WorkReader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        if !mentions_any(line, &[b"\"user\"", b"toolCalls"]) {
            return;
        }
        let Ok(entry) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match entry["type"].as_str() {
            Some("user") => {
                let Some(text) = work::content_text(&entry["content"], "\n") else {
                    return;
                };
                self.log.prompt(&text);
            }
            Some("gemini") => {
                for call in entry["toolCalls"].as_array().into_iter().flatten() {
                    let id = call["id"].as_str().unwrap_or("");
                    let name = call["name"].as_str().unwrap_or("");
                    let first = id.is_empty() || self.seen_calls.insert(id.to_owned());
                    if first {
                        self.log
                            .call(Some(id), name, work::call_target(&call["args"]));
                    }
                    // A finished call's status, on its first line or its rewrite.
                    match call["status"].as_str() {
                        Some("success") => self.log.result(Some(id), None),
                        Some("error" | "cancelled") => {
                            let words = call["resultDisplay"]
                                .as_str()
                                .or(call["status"].as_str())
                                .unwrap_or("");
                            self.log.result(Some(id), Some(words));
                        }
                        _ => {}
                    }
                    if first {
                        self.call(name, &call["args"]);
                    }
                }
            }
            _ => {}
        }
    }
}

impl WorkReader {
    fn call(&mut self, name: &str, args: &Value) {
        note_tool_call(&mut self.log, name, args, ("write_todos", "description"));
    }
}

/// What a call of one of Gemini CLI's file and shell tools says of the work
/// (Qwen Code, built from Gemini CLI, has the same ones); `todos` names the
/// to-do tool and the field of an item's text.
pub(super) fn note_tool_call(log: &mut WorkLog, name: &str, args: &Value, todos: (&str, &str)) {
    match name {
        "write_file" | "replace" | "edit" => {
            if let Some(path) = args["file_path"]
                .as_str()
                .or(args["absolute_path"].as_str())
            {
                log.edited(path);
            }
        }
        "read_file" => {
            if let Some(path) = args["absolute_path"]
                .as_str()
                .or(args["file_path"].as_str())
            {
                log.read(path);
            }
        }
        "run_shell_command" => {
            if let Some(command) = args["command"].as_str() {
                log.shell(command);
            }
        }
        _ if name == todos.0 => {
            if let Some(items) = args["todos"].as_array() {
                log.todos(work::task_list(items, todos.1, "todo"));
            }
        }
        _ => {}
    }
}

/// Gemini CLI, as hookd's core sees it.
pub struct GeminiCli;

impl Adapter for GeminiCli {
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
        read_work(path, max_bytes, keep_prompts)
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

    /// Gemini CLI's point follows from its model and settings.
    fn point_unknown(&self, _session: &SessionFacts, _config: &WindowConfig) -> bool {
        false
    }

    /// A compression does not show where the point is.
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
        launch_point(event, peer_pid, &known.gemini)
    }

    /// Compressions are found by the figure's fall, not by a record.
    fn boundary_offset(&self, _boundary: &Boundary) -> Option<u64> {
        None
    }

    fn injected_context_arrived(&self, path: &Path, marker: &str) -> io::Result<bool> {
        user_message_holds(path, marker)
    }

    /// PreCompress fires before every model call; a compression follows
    /// only when Gemini CLI's own rule says so.
    fn compaction_is_due(&self, session: &SessionFacts, trigger: Option<&Trigger>) -> bool {
        compression_is_due(session, trigger)
    }

    fn precompact_repeats_without_compaction(&self) -> bool {
        true
    }

    /// No hook follows a compression.
    fn compaction_summary<'e>(&self, _event: &'e HookEvent) -> Option<(&'e str, &'static str)> {
        None
    }

    /// The session file keeps no summary hookd reads.
    fn compaction_summary_in_file(&self, _path: &Path) -> io::Result<Option<String>> {
        Ok(None)
    }

    /// No SessionStart follows a compression.
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

/// Gemini CLI's event names and hookd's, both ways.
const EVENTS: [(&str, EventName); 7] = [
    ("SessionStart", EventName::SessionStart),
    ("BeforeAgent", EventName::UserPromptSubmit),
    ("BeforeTool", EventName::PreToolUse),
    ("AfterTool", EventName::PostToolUse),
    ("AfterAgent", EventName::Stop),
    ("PreCompress", EventName::PreCompact),
    ("SessionEnd", EventName::SessionEnd),
];

/// hookd's event for a Gemini CLI name in any spelling (`AfterTool`,
/// `after-tool`); other names stay what they are.
fn kind_of(name: &str) -> EventName {
    let squashed = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let wanted = squashed(name);
    EVENTS
        .iter()
        .find(|(gemini, _)| squashed(gemini) == wanted)
        .map(|(_, kind)| kind.clone())
        .unwrap_or_else(|| EventName::from_name(name))
}

/// Gemini CLI's name for one of hookd's events, as `hookEventName` wants it.
fn gemini_name(kind: &EventName) -> Option<&'static str> {
    EVENTS
        .iter()
        .find(|(_, k)| k == kind)
        .map(|(gemini, _)| *gemini)
}

fn parse(req: &HookRequest, mut f: Fields) -> HookEvent {
    let payload_event = f.string("hook_event_name");
    let kind = match (&req.event, &payload_event) {
        (Some(arg), _) => kind_of(arg),
        (None, Some(name)) => kind_of(name),
        (None, None) => EventName::Other("unknown".into()),
    };
    let cwd = f.path("cwd").or_else(|| super::request_cwd(req));
    let project_dir =
        super::env_path(&req.env, "GEMINI_PROJECT_DIR", &mut f.problems).or_else(|| cwd.clone());
    let session_id = f.string("session_id").filter(|s| !s.is_empty());
    let transcript_path = f.path("transcript_path");
    // Every field is read whatever the event, so a wrong type is noted alike.
    let parts = EventParts {
        source: f.string("source"),
        trigger: f.string("trigger"),
        reason: f.string("reason"),
        prompt: f.string("prompt"),
        tool_name: f.string("tool_name"),
        // Gemini CLI has no PostCompact or SubagentStop, and AfterAgent's
        // reply is not read.
        ..EventParts::default()
    };
    let mut event = HookEvent {
        harness: req.harness,
        event: Event::from_parts(kind, parts),
        session_id,
        transcript_path,
        project_dir,
        // Set from `project_dir` by `harness::parse`, for every harness.
        working_dir: None,
        cwd,
        // Gemini CLI's transcript is not read, so no reply needs waiting for.
        model: None,
        agent_id: None,
        claude_code_knobs: None,
        reported_context: None,
        env: req.env.clone(),
        problems: Vec::new(),
    };
    event.problems = f.problems;
    event
}

/// Events whose `hookSpecificOutput.additionalContext` reaches the model.
pub(super) fn takes_additional_context(kind: &EventName) -> bool {
    matches!(
        kind,
        EventName::SessionStart | EventName::UserPromptSubmit | EventName::PostToolUse
    )
}

fn render(event: &HookEvent, outcome: Outcome) -> HookReply {
    let stderr = outcome.notes_for_stderr();
    let mut out = Map::new();
    if let Some(msg) = outcome.system_message {
        out.insert("systemMessage".into(), Value::String(msg));
    }
    if let (Some(ctx), Some(name)) = (
        outcome
            .additional_context
            .filter(|_| takes_additional_context(&event.name())),
        gemini_name(&event.name()),
    ) {
        out.insert(
            "hookSpecificOutput".into(),
            json!({ "hookEventName": name, "additionalContext": ctx }),
        );
    }
    // Plain text for a summarizer has no place: Gemini CLI reads stdout as
    // JSON only, and shows stderr as a message when stdout is empty.
    if out.is_empty() {
        return HookReply::silent();
    }
    HookReply {
        stdout: Value::Object(out).to_string() + "\n",
        stderr,
        exit_code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::Session;
    use protocol::wire::Harness;
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    use std::path::Path;

    fn request(event: Option<&str>, payload: &str) -> HookRequest {
        HookRequest {
            harness: Harness::GeminiCli,
            event: event.map(str::to_owned),
            payload: RawValue::from_string(payload.to_owned()).unwrap(),
            env: BTreeMap::from([("GEMINI_PROJECT_DIR".to_owned(), "/proj".to_owned())]),
            cwd: None,
        }
    }

    #[test]
    fn gemini_events_map_onto_hookds() {
        for (arg, kind) in [
            ("after-tool", EventName::PostToolUse),
            ("AfterTool", EventName::PostToolUse),
            ("before-agent", EventName::UserPromptSubmit),
            ("after-agent", EventName::Stop),
            ("pre-compress", EventName::PreCompact),
            ("session-start", EventName::SessionStart),
            ("session-end", EventName::SessionEnd),
            ("notification", EventName::Other("notification".into())),
        ] {
            let ev = crate::harness::parse(&request(Some(arg), r#"{"session_id":"g"}"#)).unwrap();
            assert_eq!(ev.name(), kind, "{arg}");
        }
        let ev = crate::harness::parse(&request(
            None,
            r#"{"session_id":"g","hook_event_name":"PreCompress","trigger":"auto","cwd":"/proj/sub","timestamp":"2026-05-01T10:00:00Z","transcript_path":"/t.json"}"#,
        ))
        .unwrap();
        assert_eq!(
            ev.event,
            Event::PreCompact {
                trigger: Some(Trigger::Auto),
                instructions: None
            }
        );
        assert_eq!(ev.project_dir.as_deref(), Some(Path::new("/proj")));
        assert_eq!(ev.cwd.as_deref(), Some(Path::new("/proj/sub")));
    }

    #[test]
    fn output_uses_geminis_event_names() {
        let outcome = Outcome {
            system_message: Some("for you".into()),
            additional_context: Some("for the model".into()),
            ..Outcome::default()
        };
        let ev =
            crate::harness::parse(&request(Some("after-tool"), r#"{"session_id":"g"}"#)).unwrap();
        let v: Value = serde_json::from_str(&render(&ev, outcome.clone()).stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "AfterTool");
        assert_eq!(
            v["hookSpecificOutput"]["additionalContext"],
            "for the model"
        );
        assert_eq!(v["systemMessage"], "for you");

        let ev =
            crate::harness::parse(&request(Some("pre-compress"), r#"{"session_id":"g"}"#)).unwrap();
        let reply = render(
            &ev,
            Outcome {
                plain_stdout: Some("instructions".into()),
                ..outcome
            },
        );
        let v: Value = serde_json::from_str(&reply.stdout).unwrap();
        assert_eq!(
            v.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["systemMessage"]
        );
        assert_eq!(
            render(&ev, Outcome::default()),
            HookReply::silent(),
            "nothing to say is no output"
        );
    }

    /// A reply line as Gemini CLI 0.61.0 writes it.
    fn reply(id: &str, input: u64) -> String {
        format!(
            r#"{{"id":"{id}","timestamp":"2026-11-23T11:16:44.575Z","type":"gemini","content":"","thoughts":[],"tokens":{{"input":{input},"output":20,"cached":0,"thoughts":0,"tool":0,"total":{t}}},"model":"gemini-2.5-flash"}}"#,
            t = input + 20
        )
    }

    fn session_file(home: &Path, lines: &[String]) -> std::path::PathBuf {
        let dir = home.join(".gemini/tmp/proj/chats");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session-2026-11-23T11-16-da8bfe61.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    fn session() -> Session {
        let key = crate::sessions::SessionKey {
            harness: protocol::wire::Harness::GeminiCli,
            id: "g".into(),
        };
        Session::new(key, 0)
    }

    #[test]
    fn usage_and_model_come_from_the_session_file() {
        let home = tempfile::tempdir().unwrap();
        let user = r#"{"id":"u1","type":"user","content":[{"text":"TURN 1"}]}"#.to_owned();
        let path = session_file(
            home.path(),
            &[user, reply("a", 5000), reply("a", 5000), reply("b", 6000)],
        );
        let mut s = session();
        let began = s.take_reading(read(&path, None, None).unwrap(), 1).unwrap();
        assert!(began.is_empty());
        assert_eq!(s.model.as_deref(), Some("gemini-2.5-flash"));
        let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
        assert_eq!(
            (c.tokens_used, c.window_tokens, c.tokens_max),
            (6000, 1_048_576, 524_288)
        );
        assert!(!compression_is_due(&s.facts(), Some(&Trigger::Auto)));
    }

    #[test]
    fn a_compression_is_a_fall_in_input_and_only_near_the_point_is_one_due() {
        let home = tempfile::tempdir().unwrap();
        let mut lines = vec![reply("a", 5000), reply("b", 600_000)];
        let path = session_file(home.path(), &lines);
        let mut s = session();
        s.take_reading(read(&path, None, None).unwrap(), 1);
        assert!(compression_is_due(&s.facts(), Some(&Trigger::Auto)));
        lines.push(reply("c", 2100));
        let path = session_file(home.path(), &lines);
        let taken = read(&path, s.cursor.as_ref(), s.usage.as_ref()).unwrap();
        let began = s.take_reading(taken, 200_000).unwrap();
        assert_eq!(began.len(), 1, "one compression");
        assert_eq!(began[0].0.pre_tokens, Some(600_000));
        assert_eq!(began[0].0.post_tokens, Some(2100));
        assert_eq!(s.epoch, 2);
        // Read again: the same compression, not a second one.
        let again = read(&path, None, s.usage.as_ref()).unwrap();
        assert!(s.take_reading(again, 200_001).unwrap().is_empty());
        assert_eq!(s.epoch, 2);

        // A threshold in the user's settings moves the point, as the next hook reads it.
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"{"model": {"compressionThreshold": 0.2}}"#,
        )
        .unwrap();
        s.launch_point = launch_point(&hook_in(&path, &[]), None, &ProcessCache::default())
            .unwrap()
            .point;
        let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
        assert_eq!(c.tokens_max, 209_715);
        assert!(c.basis.contains("compressionThreshold"), "{}", c.basis);
    }

    /// The facts of a session whose latest reply came from `model` with
    /// `tokens` of input.
    fn facts_of<'a>(
        model: &'a str,
        usage: &'a Usage,
        point: Option<&'a HarnessPoint>,
        knobs: &'a protocol::pressure::Knobs,
    ) -> SessionFacts<'a> {
        SessionFacts {
            harness: Harness::GeminiCli,
            model: Some(model),
            usage: Some(usage),
            statusline_window: None,
            reported_window: None,
            harness_point: point,
            claude_code_knobs: Some(knobs),
        }
    }

    fn usage(tokens: u64) -> Usage {
        Usage {
            tokens,
            model: None,
            from_boundary: false,
            message_id: None,
            invalid: None,
        }
    }

    #[test]
    fn the_window_is_gemini_clis_own_for_every_model_name() {
        let knobs = protocol::pressure::Knobs::default();
        let config = WindowConfig::default();
        let used = usage(1000);
        for (model, window, point) in [
            ("gemini-2.5-flash", 1_048_576, 524_288),
            ("my-local-model", 1_048_576, 524_288),
            ("gemma-4-31b-it", 256_000, 128_000),
            ("gemma-4-26b-a4b-it", 256_000, 128_000),
            // Gemini CLI matches whole names: a longer one is not gemma-4's.
            ("gemma-4-31b-it-custom", 1_048_576, 524_288),
        ] {
            let c = compaction_point(&facts_of(model, &used, None, &knobs), &config);
            assert_eq!(
                (c.window, c.tokens),
                (window, point),
                "{model}: {}",
                c.basis
            );
            assert!(c.basis.contains(model), "{}", c.basis);
        }
        let basis = |m| compaction_point(&facts_of(m, &used, None, &knobs), &config).basis;
        assert!(!basis("gemini-2.5-pro").contains("does not list"));
        // 0.61.0's table no longer names gemini-2.5-flash: the default applies.
        assert!(basis("gemini-2.5-flash").contains("does not list"));
        // hookd's own window table still wins where the user set one.
        let config = WindowConfig {
            models: [("my-local".to_owned(), 32_000)].into_iter().collect(),
            ..WindowConfig::default()
        };
        let c = compaction_point(&facts_of("my-local-model", &used, None, &knobs), &config);
        assert_eq!((c.window, c.tokens), (32_000, 16_000), "{}", c.basis);
    }

    #[test]
    fn precompress_means_a_compression_only_by_gemini_clis_own_rule() {
        let knobs = protocol::pressure::Knobs::default();
        for (model, tokens, due) in [
            // The 90-100% band compresses nothing.
            ("gemini-2.5-flash", 480_000, false),
            ("gemini-2.5-flash", 524_287, false),
            ("gemini-2.5-flash", 524_288, true),
            ("my-local-model", 490_000, false),
            ("gemma-4-31b-it", 127_999, false),
            ("gemma-4-31b-it", 128_000, true),
        ] {
            let used = usage(tokens);
            assert_eq!(
                compression_is_due(&facts_of(model, &used, None, &knobs), Some(&Trigger::Auto)),
                due,
                "{model} at {tokens}"
            );
        }
        let point = HarnessPoint {
            tokens: None,
            fraction: Some(0.3),
            basis: "model.compressionThreshold 0.3".into(),
        };
        let used = usage(314_573);
        let facts = facts_of("gemini-2.5-flash", &used, Some(&point), &knobs);
        assert!(
            compression_is_due(&facts, Some(&Trigger::Auto)),
            "0.3 × 1,048,576 = 314,572.8"
        );
        let used = usage(314_572);
        let facts = facts_of("gemini-2.5-flash", &used, Some(&point), &knobs);
        assert!(!compression_is_due(&facts, Some(&Trigger::Auto)));
        let bad = usage(600_000);
        let bad = Usage {
            invalid: Some("bad".into()),
            ..bad
        };
        assert!(!compression_is_due(
            &facts_of("gemini-2.5-flash", &bad, None, &knobs),
            Some(&Trigger::Auto)
        ));
        // `/compress` compresses wherever the figure stands.
        let low = usage(5_000);
        assert!(compression_is_due(
            &facts_of("gemini-2.5-flash", &low, None, &knobs),
            Some(&Trigger::Manual)
        ));
    }

    #[test]
    fn settings_layers_are_taken_in_gemini_clis_order() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        let project = home.path().join("proj");
        std::fs::create_dir_all(&gemini).unwrap();
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        let files = settings_files(&gemini, Some(&project));
        assert_eq!(
            files,
            [
                SettingsFile::Own("/etc/gemini-cli/system-defaults.json".into()),
                SettingsFile::Own(gemini.join("settings.json")),
                SettingsFile::Project(project.clone()),
                SettingsFile::Own("/etc/gemini-cli/settings.json".into()),
            ]
        );
        // The home directory as the project: Gemini CLI reads no project file.
        assert!(
            !settings_files(&gemini, Some(home.path()))
                .contains(&SettingsFile::Project(home.path().into()))
        );

        let user = SettingsFile::Own(gemini.join("settings.json"));
        let proj = SettingsFile::Project(project.clone());
        let trusted = TrustInputs {
            env: BTreeMap::from([(TRUST_WORKSPACE_VAR.to_owned(), "true".to_owned())]),
            trusted_folders: gemini.join(TRUSTED_FOLDERS_FILE),
        };
        let configured_threshold = |files: &[SettingsFile]| configured_threshold(files, &trusted);
        assert_eq!(
            configured_threshold(&[user.clone(), proj.clone()]),
            None,
            "nothing set"
        );
        std::fs::write(
            gemini.join("settings.json"),
            "{\n  // comments are allowed\n  \"model\": {\"compressionThreshold\": 0.2 /* user */}\n}",
        )
        .unwrap();
        let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
        assert_eq!(p.fraction, Some(0.2), "{}", p.basis);
        std::fs::write(
            project.join(".gemini/settings.json"),
            r#"{"model": {"compressionThreshold": 0.3}, "url": "http://x//y"}"#,
        )
        .unwrap();
        let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
        assert_eq!(p.fraction, Some(0.3), "the project's wins: {}", p.basis);
        assert!(
            p.basis.contains("proj/.gemini/settings.json"),
            "{}",
            p.basis
        );

        // Out of range in the project: the user's stands, and the basis says why.
        for bad in ["1.5", "-0.2", "\"0.3\""] {
            std::fs::write(
                project.join(".gemini/settings.json"),
                format!(r#"{{"model": {{"compressionThreshold": {bad}}}}}"#),
            )
            .unwrap();
            let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
            assert_eq!(p.fraction, Some(0.2), "{bad}: {}", p.basis);
            assert!(p.basis.contains("ignored"), "{}", p.basis);
        }
        // A zero is "not set" to Gemini CLI.
        std::fs::write(
            project.join(".gemini/settings.json"),
            r#"{"model": {"compressionThreshold": 0}}"#,
        )
        .unwrap();
        assert_eq!(
            configured_threshold(&[user.clone(), proj.clone()])
                .unwrap()
                .fraction,
            Some(0.2)
        );

        // A link in the project is not followed; a huge file is not read.
        std::fs::remove_file(project.join(".gemini/settings.json")).unwrap();
        let elsewhere = home.path().join("elsewhere.json");
        std::fs::write(&elsewhere, r#"{"model": {"compressionThreshold": 0.1}}"#).unwrap();
        std::os::unix::fs::symlink(&elsewhere, project.join(".gemini/settings.json")).unwrap();
        let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
        assert_eq!(p.fraction, Some(0.2), "{}", p.basis);
        assert!(p.basis.contains("symlink"), "{}", p.basis);
        std::fs::remove_file(project.join(".gemini/settings.json")).unwrap();
        std::fs::write(
            project.join(".gemini/settings.json"),
            vec![b' '; SETTINGS_LIMIT as usize + 1],
        )
        .unwrap();
        let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
        assert!(p.basis.contains("larger than"), "{}", p.basis);
        // Signed in with Google and no threshold set: the default is an assumption.
        std::fs::remove_file(project.join(".gemini/settings.json")).unwrap();
        std::fs::write(
            gemini.join("settings.json"),
            r#"{"security": {"auth": {"selectedType": "oauth-personal"}}}"#,
        )
        .unwrap();
        let p = configured_threshold(&[user.clone(), proj.clone()]).unwrap();
        assert_eq!(p.fraction, None, "{}", p.basis);
        assert!(p.basis.contains("Google's server"), "{}", p.basis);
        std::fs::write(
            gemini.join("settings.json"),
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
        )
        .unwrap();
        assert_eq!(configured_threshold(&[user.clone(), proj.clone()]), None);
        std::fs::write(project.join(".gemini/settings.json"), "{not json").unwrap();
        let p = configured_threshold(&[user, proj]).unwrap();
        assert!(p.basis.contains("not valid JSON"), "{}", p.basis);
    }

    /// A hook of the session whose chat file is `transcript`, with `env`.
    /// A project under `home` whose `.gemini/settings.json` sets the
    /// threshold to 0.3, and a chat file of Gemini CLI run in it.
    fn project_at_threshold(home: &Path) -> (PathBuf, PathBuf) {
        let project = home.join("work/proj");
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        std::fs::write(
            project.join(".gemini/settings.json"),
            r#"{"model": {"compressionThreshold": 0.3}}"#,
        )
        .unwrap();
        let path = session_file(home, &[reply("a", 5000)]);
        let slug = path.parent().unwrap().parent().unwrap();
        std::fs::write(slug.join(".project_root"), project.display().to_string()).unwrap();
        (project, path)
    }

    fn hook_in(transcript: &Path, env: &[(&str, &str)]) -> HookEvent {
        let payload = json!({
            "session_id": "g",
            "transcript_path": transcript,
            "cwd": "/nowhere",
            "hook_event_name": "PreCompress",
        });
        let mut req = request(Some("pre-compress"), &payload.to_string());
        req.env
            .extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        crate::harness::parse(&req).unwrap()
    }

    #[test]
    fn the_project_settings_are_found_from_the_session_file() {
        let home = tempfile::tempdir().unwrap();
        let (_, path) = project_at_threshold(home.path());
        let mut s = session();
        s.take_reading(read(&path, None, None).unwrap(), 1);
        let hook = hook_in(&path, &[(TRUST_WORKSPACE_VAR, "true")]);
        s.launch_point = launch_point(&hook, None, &ProcessCache::default())
            .unwrap()
            .point;
        let c = crate::sessions::context_of(&s, &protocol::config::Config::default()).unwrap();
        assert_eq!(c.tokens_max, 314_572, "{}", c.basis);
        assert!(c.basis.contains("0.3"), "{}", c.basis);
    }

    /// Gemini CLI reads its settings once, at start: an edit of the
    /// project's settings while it runs does not move the point hookd
    /// shows for that process, found above the hook's and read through its
    /// environment (which trusts the project where the hook's does not). A
    /// hook without its process takes the settings as they are now.
    #[test]
    fn a_running_gemini_keeps_the_settings_it_started_with() {
        use crate::harness::process::tests::harness_with_child;
        let home = tempfile::tempdir().unwrap();
        let (project, path) = project_at_threshold(home.path());
        let settings = project.join(".gemini/settings.json");
        let bin = tempfile::tempdir().unwrap();
        let (gemini, hook) = harness_with_child(
            bin.path(),
            "gemini",
            &["--yolo"],
            &[(TRUST_WORKSPACE_VAR, "true")],
        );
        let event = hook_in(&path, &[]);
        let known = ProcessCache::default();
        let first = launch_point(&event, Some(hook), &known).unwrap();
        std::fs::write(&settings, r#"{"model": {"compressionThreshold": 0.6}}"#).unwrap();
        let edited = launch_point(&event, Some(hook), &known).unwrap();
        // A session of another of Gemini CLI's project directories is not
        // that process's: what was kept for it does not answer.
        let other_slug = home.path().join(".gemini/tmp/other");
        std::fs::create_dir_all(other_slug.join("chats")).unwrap();
        std::fs::write(
            other_slug.join(".project_root"),
            project.display().to_string(),
        )
        .unwrap();
        let other = other_slug.join("chats/session-other.jsonl");
        std::fs::copy(&path, &other).unwrap();
        let elsewhere = launch_point(&hook_in(&other, &[]), Some(hook), &known).unwrap();
        let _ = std::process::Command::new("kill")
            .arg(hook.to_string())
            .status();
        let mut gemini = gemini;
        gemini.kill().unwrap();
        gemini.wait().unwrap();
        let trusted_now = launch_point(
            &hook_in(&path, &[(TRUST_WORKSPACE_VAR, "true")]),
            None,
            &known,
        )
        .unwrap();

        let fraction = |l: &Launch| l.point.as_ref().and_then(|p| p.fraction);
        assert_eq!(fraction(&first), Some(0.3), "{:?}", first.point);
        assert!(
            first
                .process
                .as_deref()
                .is_some_and(|p| p.starts_with("gemini pid"))
        );
        assert_eq!(fraction(&edited), Some(0.3));
        assert_eq!(edited.process, first.process);
        assert_eq!(fraction(&trusted_now), Some(0.6));
        assert_eq!(fraction(&elsewhere), Some(0.6));
    }

    /// A session an older hookd saved keeps the point it once read from
    /// the session file; the first launch point a hook reads replaces it,
    /// even one that says the settings set no threshold.
    #[test]
    fn a_point_saved_by_an_older_hookd_goes_at_the_first_hook() {
        let home = tempfile::tempdir().unwrap();
        let path = session_file(home.path(), &[reply("a", 5000)]);
        let mut s = session();
        s.take_reading(read(&path, None, None).unwrap(), 1);
        s.harness_point = Some(HarnessPoint {
            tokens: None,
            fraction: Some(0.2),
            basis: "saved".into(),
        });
        let launch = launch_point(&hook_in(&path, &[]), None, &ProcessCache::default()).unwrap();
        assert_eq!(launch.point.as_ref().and_then(|p| p.fraction), None);
        s.take_launch(launch.clone());
        assert_eq!(s.facts().harness_point, launch.point.as_ref());
        s.take_launch(Launch {
            process: None,
            point: None,
        });
        assert_eq!(s.facts().harness_point, None);
    }

    /// Gemini CLI takes a project's settings only in a folder it trusts:
    /// folder trust is on unless the user's or system settings turn it off,
    /// and then `GEMINI_CLI_TRUST_WORKSPACE`, `GEMINI_RESTRICTED_MODE` or the
    /// longest rule of `trustedFolders.json` decides; no rule, not trusted.
    /// Untrusted, the project's file is not read at all.
    #[test]
    fn a_project_threshold_counts_only_in_a_folder_gemini_cli_trusts() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        std::fs::create_dir_all(&gemini).unwrap();
        let (project, path) = project_at_threshold(home.path());
        let folders = gemini.join(TRUSTED_FOLDERS_FILE);
        let point = |env: &[(&str, &str)]| {
            launch_point(&hook_in(&path, env), None, &ProcessCache::default())
                .expect("the session file says where Gemini CLI's settings are")
                .point
        };
        let fraction = |env: &[(&str, &str)]| point(env).and_then(|p| p.fraction);
        let basis = |env: &[(&str, &str)]| point(env).map(|p| p.basis).unwrap_or_default();

        // No rule: not trusted, and the basis says why.
        assert_eq!(fraction(&[]), None, "{}", basis(&[]));
        assert!(basis(&[]).contains("does not trust"), "{}", basis(&[]));
        assert!(basis(&[]).contains("no rule"), "{}", basis(&[]));
        // The environment decides first.
        assert_eq!(fraction(&[(TRUST_WORKSPACE_VAR, "true")]), Some(0.3));
        assert_eq!(
            fraction(&[(TRUST_WORKSPACE_VAR, "true"), (RESTRICTED_MODE_VAR, "true")]),
            None
        );
        // The rules: the longest that covers the project wins.
        let rules = |text: &str| std::fs::write(&folders, text).unwrap();
        let work = home.path().join("work");
        rules(&format!(r#"{{"{}": "TRUST_FOLDER"}}"#, work.display()));
        assert_eq!(fraction(&[]), Some(0.3), "{}", basis(&[]));
        rules(&format!(
            r#"{{"{}": "TRUST_FOLDER", "{}": "DO_NOT_TRUST"}}"#,
            work.display(),
            project.display()
        ));
        assert_eq!(fraction(&[]), None);
        assert!(basis(&[]).contains("DO_NOT_TRUST"), "{}", basis(&[]));
        assert_eq!(fraction(&[(TRUST_WORKSPACE_VAR, "true")]), Some(0.3));
        rules(&format!(
            "{{\n  // a comment\n  \"{}\": \"TRUST_PARENT\"\n}}",
            project.join("src").display()
        ));
        assert_eq!(fraction(&[]), Some(0.3), "TRUST_PARENT covers the parent");
        rules(&format!(
            r#"{{"{}": "TRUST_FOLDER"}}"#,
            project.join("src").display()
        ));
        assert_eq!(
            fraction(&[]),
            None,
            "a rule below the project does not cover it"
        );
        // The variable that moves the file.
        let elsewhere = home.path().join("folders.json");
        std::fs::write(
            &elsewhere,
            format!(r#"{{"{}": "TRUST_FOLDER"}}"#, project.display()),
        )
        .unwrap();
        let moved = elsewhere.display().to_string();
        assert_eq!(fraction(&[(TRUSTED_FOLDERS_PATH_VAR, &moved)]), Some(0.3));
        // A file Gemini CLI refuses to start with trusts nothing, and says so.
        for bad in [
            "{not json".to_owned(),
            "[1, 2]".to_owned(),
            format!(r#"{{"{}": "TRUST_EVERYTHING"}}"#, project.display()),
        ] {
            rules(&bad);
            assert_eq!(fraction(&[]), None, "{bad}");
            assert!(basis(&[]).contains("does not start"), "{}", basis(&[]));
        }
        std::fs::remove_file(&folders).unwrap();
        std::fs::write(&folders, vec![b' '; SETTINGS_LIMIT as usize + 1]).unwrap();
        assert!(basis(&[]).contains("larger than"), "{}", basis(&[]));
        std::fs::remove_file(&folders).unwrap();
        // Folder trust turned off in the user's settings: every folder is trusted.
        std::fs::write(
            gemini.join("settings.json"),
            r#"{"security": {"folderTrust": {"enabled": false}}}"#,
        )
        .unwrap();
        assert_eq!(fraction(&[]), Some(0.3), "{}", basis(&[]));
        std::fs::write(
            gemini.join("settings.json"),
            r#"{"security": {"folderTrust": {"enabled": true}}}"#,
        )
        .unwrap();
        assert_eq!(fraction(&[]), None);

        // Untrusted, nothing of the project's file is read: a FIFO there
        // would block a reader, and an unreadable file would be named.
        std::fs::remove_file(project.join(".gemini/settings.json")).unwrap();
        let fifo = std::ffi::CString::new(
            project
                .join(".gemini/settings.json")
                .to_str()
                .unwrap()
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let b = basis(&[]);
        assert!(
            b.contains("does not trust") && !b.contains("FIFO") && !b.contains("not a regular"),
            "{b}"
        );
    }

    #[test]
    fn nothing_on_stderr_when_stdout_is_empty() {
        let ev = crate::harness::parse(&request(
            Some("after-tool"),
            r#"{"session_id":"g","cwd":7}"#,
        ))
        .unwrap();
        assert!(!ev.problems.is_empty());
        let reply = render(
            &ev,
            Outcome {
                notes: ev.problems.clone(),
                ..Outcome::default()
            },
        );
        assert_eq!(reply, HookReply::silent());
    }

    /// A chat file as Gemini CLI 0.61.0 writes it: a line per message; a
    /// reply is written again when its tool calls finish; hook context is
    /// wrapped in `<hook_context>` inside the recorded prompt (SessionStart's
    /// before the person's words, in the same part).
    #[test]
    fn the_work_is_read_from_the_chat_file() {
        let lines = [
            r#"{"sessionId":"0b7c","projectHash":"ab","startTime":"2026-11-23T10:00:00.000Z","kind":"main"}"#,
            r#"{"id":"m1","timestamp":"2026-11-23T10:00:00.000Z","type":"user","content":[{"text":"<hook_context>hookd: a note at the session's start</hook_context>\n\nAdd retries to the HTTP client"}]}"#,
            r#"{"id":"m2","timestamp":"2026-11-23T10:00:01.000Z","type":"gemini","content":"","toolCalls":[{"id":"write_todos_1","name":"write_todos","args":{"todos":[{"description":"Write the retry loop","status":"in_progress"},{"description":"Test the backoff","status":"pending"}]},"status":"success"}],"tokens":{"input":5000},"model":"gemini-2.5-pro"}"#,
            r#"{"id":"m3","timestamp":"2026-11-23T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_1","name":"run_shell_command","args":{"command":"echo 'step 1' > notes.txt"},"status":"success"},{"id":"write_1","name":"write_file","args":{"file_path":"/p/src/http.rs","content":"x"},"status":"success"}],"tokens":{"input":6000},"model":"gemini-2.5-pro"}"#,
            r#"{"id":"m3","timestamp":"2026-11-23T10:00:02.500Z","type":"gemini","content":"","toolCalls":[{"id":"run_1","name":"run_shell_command","args":{"command":"echo 'step 1' > notes.txt"},"status":"success"},{"id":"write_1","name":"write_file","args":{"file_path":"/p/src/http.rs","content":"x"},"status":"success"}],"tokens":{"input":6000},"model":"gemini-2.5-pro"}"#,
            r#"{"id":"m4","timestamp":"2026-11-23T10:00:03.000Z","type":"user","content":[{"text":"now also log each retry"},{"text":"<hook_context>## Context Recovery ... [hookd-resume 0123]</hook_context>"}]}"#,
        ];
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for l in lines {
            std::io::Write::write_all(&mut f, format!("{l}\n").as_bytes()).unwrap();
        }
        let facts = read_work(f.path(), u64::MAX, 3).unwrap();
        assert_eq!(
            facts.requests,
            ["Add retries to the HTTP client", "now also log each retry"]
        );
        let tasks: Vec<(&str, &str)> = facts
            .tasks
            .iter()
            .map(|t| (t.title.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            tasks,
            [
                ("Write the retry loop", "in_progress"),
                ("Test the backoff", "pending")
            ]
        );
        let edited: Vec<(&str, u32)> = facts
            .edited
            .iter()
            .map(|e| (e.path.as_str(), e.edits))
            .collect();
        assert_eq!(
            edited,
            [("notes.txt", 1), ("/p/src/http.rs", 1)],
            "a reply written twice counts once"
        );
        let last = facts.last_call.unwrap();
        assert_eq!(
            (
                last.tool.as_str(),
                last.target.as_deref(),
                last.outcome_words().as_str()
            ),
            ("write_file", Some("/p/src/http.rs"), "succeeded")
        );
        // The calls after the resume prompt's marker (in the prompt of m4).
        let mut f = f;
        for l in [
            r#"{"id":"m5","type":"gemini","content":"","toolCalls":[{"id":"read_1","name":"read_file","args":{"absolute_path":"/p/src/retry.rs"}}],"tokens":{"input":7000}}"#,
            r#"{"id":"m5","type":"gemini","content":"","toolCalls":[{"id":"read_1","name":"read_file","args":{"absolute_path":"/p/src/retry.rs"},"status":"error","resultDisplay":"File not found: /p/src/retry.rs"}],"tokens":{"input":7000}}"#,
        ] {
            std::io::Write::write_all(&mut f, format!("{l}\n").as_bytes()).unwrap();
        }
        let after = work::read_file_after::<WorkReader>(
            f.path(),
            u64::MAX,
            0,
            Some("[hookd-resume 0123]"),
            None,
        )
        .unwrap();
        let calls = after.calls_after_marker.unwrap();
        assert_eq!(
            calls.len(),
            1,
            "a reply written twice is one call: {calls:?}"
        );
        assert_eq!(calls[0].target.as_deref(), Some("/p/src/retry.rs"));
        assert_eq!(
            after.last_call.unwrap().outcome_words(),
            "failed: File not found: /p/src/retry.rs"
        );
    }
}
