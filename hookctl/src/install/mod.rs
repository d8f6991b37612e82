//! `hookctl install|uninstall <harness>`: puts hookd's hook entries into a
//! harness's settings file, and takes exactly those out again.
//!
//! Our entries are the handlers whose command runs `hookctl hook` (any path
//! to hookctl), in a matcher group or, where a harness lists its handlers
//! bare (Copilot CLI), on their own; everything else in the file stays as it was, in its order.
//! A file is backed up before it is rewritten, written atomically, and
//! never written at all when it is not valid JSON. Installing twice changes
//! nothing the second time.

pub mod claude_code;
pub mod codex;
pub mod copilot_cli;
pub mod cursor;
pub mod gemini_cli;
pub mod json_file;
pub mod opencode;
pub mod qwen_code;

use anyhow::{Context, bail};
use json_file::JsonFile;
use protocol::wire::Harness;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct InstallArgs {
    /// claude-code, codex, gemini-cli, qwen-code, copilot-cli, opencode or cursor.
    #[arg(value_parser = crate::parse_harness)]
    harness: Harness,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Show the change as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Claude Code: leave the statusLine alone (by default hookd's becomes
    /// the statusLine, unless you have one of your own).
    #[arg(long)]
    no_statusline: bool,
    /// The statusLine is set by default; kept so that older scripts still run.
    #[arg(long, hide = true, conflicts_with = "no_statusline")]
    statusline: bool,
    /// Replace a statusLine or slash command that is not hookd's.
    #[arg(long)]
    force: bool,
    /// Machine-readable report.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct UninstallArgs {
    /// claude-code, codex, gemini-cli, qwen-code, copilot-cli, opencode or cursor.
    #[arg(value_parser = crate::parse_harness)]
    harness: Harness,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Show the change as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Machine-readable report.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ScopeArgs {
    /// The user's own settings (the default).
    #[arg(long, conflicts_with = "project")]
    user: bool,
    /// One project's settings instead (DIR/.claude/settings.json, DIR/.codex/hooks.json, DIR/.gemini/settings.json, DIR/.qwen/settings.json, DIR/.github/hooks/hookd.json, DIR/.opencode/plugins/hookd.js, DIR/.cursor/hooks.json).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

/// The name of a hooks file that is hookd's alone, for a harness that reads
/// every file of a folder (Copilot CLI).
pub const OWN_FILE: &str = "hookd.json";

/// Whose settings: the user's, or one project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    User,
    Project(PathBuf),
}

impl ScopeArgs {
    /// `--user` is the default; clap keeps it from meeting `--project`.
    fn resolve(&self) -> anyhow::Result<Scope> {
        match &self.project {
            None => Ok(Scope::User),
            Some(dir) if dir.is_dir() => Ok(Scope::Project(
                std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
            )),
            Some(dir) => bail!("--project {}: no such directory", dir.display()),
        }
    }
}

impl Scope {
    fn name(&self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project(_) => "project",
        }
    }

    /// The scope a harness that runs both would run besides this one: the
    /// user's for a project, the current directory's project for the user.
    fn other(&self) -> Option<Scope> {
        match self {
            Scope::User => Some(Scope::Project(std::env::current_dir().ok()?)),
            Scope::Project(_) => Some(Scope::User),
        }
    }
}

/// One hook entry hookd wants in a harness's file.
pub struct HookSpec {
    /// The harness's name for the event (the key under `hooks`).
    pub event: &'static str,
    /// The group's matcher, where the harness filters the event by one.
    pub matcher: Option<&'static str>,
    /// The event argument of `hookctl hook`.
    pub arg: &'static str,
    /// The harness's time limit for the command, in the harness's unit.
    /// Above hookctl's own budgets (1 s, 10 s for SessionStart, 30 s for
    /// PreCompact), so hookctl gives up first and exits 0.
    pub timeout: u64,
}

/// Everything hookctl knows of one harness: its settings file, its hook
/// entries, what else install and uninstall do there, and what doctor
/// checks. One implementation per module here, reached through [`wiring`];
/// no method has a default body, so a harness that leaves one out does not
/// compile.
pub trait Wiring: Sync {
    fn harness(&self) -> Harness;

    /// The hook entries hookd wants in the harness's file.
    fn hooks(&self) -> &'static [HookSpec];

    /// The settings file for a scope.
    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf>;

    /// One handler in the harness's format, running `command`.
    fn handler(&self, spec: &HookSpec, command: String) -> Value;

    /// Whether each event lists its handlers itself (Copilot CLI's and
    /// Cursor's layout), rather than in `{matcher, hooks: [...]}` groups.
    fn flat_entries(&self) -> bool;

    /// What a person must do before the hooks run.
    fn after_install(&self) -> &'static str;

    /// Whether the harness runs the hooks of the user's file and the
    /// project's both, so hookd wired in both hears every event twice.
    fn runs_every_scope(&self) -> bool;

    /// What install does in the harness's file besides the hooks (Claude
    /// Code's statusLine and slash commands), said in `report`.
    fn install_more(
        &self,
        root: &mut Map<String, Value>,
        exe: &Path,
        scope: &Scope,
        options: &InstallOptions,
        report: &mut Report,
    ) -> anyhow::Result<()>;

    /// What uninstall takes away besides the hooks, said in `report`.
    fn uninstall_more(
        &self,
        root: &mut Map<String, Value>,
        scope: &Scope,
        dry_run: bool,
        report: &mut Report,
    ) -> anyhow::Result<()>;

    /// Where the harness lives when it is installed: its own directory and
    /// its program's name.
    fn presence(&self) -> (Option<PathBuf>, &'static str);

    /// Whether doctor fails (rather than warns) when the harness is
    /// installed but hookd is not wired into it.
    fn unwired_fails(&self) -> bool;

    /// Another harness whose hook settings this one runs as well (Cursor
    /// runs Claude Code's): hookd wired there reaches this harness too.
    fn runs_hooks_of(&self) -> Option<Harness>;

    /// A problem doctor finds in the harness's own state once hookd's
    /// entries in `file` are right (Codex: hooks it has not trusted), with
    /// the project doctor looks at: what is wrong and what to do.
    fn doctor_problem(&self, file: &Path, project: Option<&Path>)
    -> Option<(String, &'static str)>;
}

/// What the person asked of `hookctl install` beyond the hooks.
pub struct InstallOptions {
    pub no_statusline: bool,
    pub statusline: bool,
    pub force: bool,
    pub dry_run: bool,
}

/// The one place hookctl turns a harness's name into its wiring.
pub fn wiring(harness: Harness) -> &'static dyn Wiring {
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

/// `<hookctl> hook [--harness X] <event>`.
pub fn command(wiring: &dyn Wiring, exe: &Path, spec: &HookSpec) -> String {
    let mut words = vec![shell_quote(&exe.to_string_lossy()), "hook".to_owned()];
    if wiring.harness() != crate::hook::DEFAULT_HARNESS {
        words.extend(["--harness".to_owned(), wiring.harness().as_str().to_owned()]);
    }
    words.push(spec.arg.to_owned());
    words.join(" ")
}

/// One entry of an event's list: a group holding the handler, or the
/// handler itself for a harness whose lists hold handlers, no groups
/// (Copilot CLI's, Cursor's).
fn group(wiring: &dyn Wiring, exe: &Path, spec: &HookSpec) -> Value {
    let handler = wiring.handler(spec, command(wiring, exe, spec));
    if wiring.flat_entries() {
        return handler;
    }
    let mut group = Map::new();
    if let Some(m) = spec.matcher {
        group.insert("matcher".into(), Value::from(m));
    }
    group.insert("hooks".into(), json!([handler]));
    Value::Object(group)
}

/// The person's home, where a harness keeps its folder; `what` names
/// what was looked for, in the error.
pub fn home_for(what: &str) -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .with_context(|| format!("cannot find {what}: HOME is not set"))
}

/// This hookctl's own path: what the hook commands run.
pub fn hookctl_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot find the path of this hookctl")
}

/// What a run did (or, with `--dry-run`, would do).
#[derive(Debug, Serialize)]
pub struct Report {
    pub action: &'static str,
    pub harness: Harness,
    pub scope: &'static str,
    pub file: PathBuf,
    pub dry_run: bool,
    /// Whether the settings file changes.
    pub changed: bool,
    pub backup: Option<PathBuf>,
    /// Events whose entry was added, updated or removed.
    pub events: Vec<String>,
    /// Everything else done, one line each (statusLine, slash commands).
    pub done: Vec<String>,
    /// What the person should know or do next.
    pub notes: Vec<String>,
    /// Backups of the settings file hookd made, left for the person.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backups_kept: Vec<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl Report {
    fn new(
        action: &'static str,
        harness: Harness,
        scope: &Scope,
        file: &Path,
        dry_run: bool,
    ) -> Report {
        Report {
            action,
            harness,
            scope: scope.name(),
            file: file.to_path_buf(),
            dry_run,
            changed: false,
            backup: None,
            events: Vec::new(),
            done: Vec::new(),
            notes: Vec::new(),
            backups_kept: Vec::new(),
            diff: None,
        }
    }
}

pub fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    // OpenCode takes a plugin file, not settings entries.
    if args.harness == Harness::OpenCode {
        return opencode::install(args);
    }
    let scope = args.scope.resolve()?;
    let wiring = wiring(args.harness);
    let path = wiring.file(&scope)?;
    let file = JsonFile::load(&path)?;
    let mut report = Report::new("install", args.harness, &scope, &path, args.dry_run);
    let exe = match &scope {
        Scope::User => hookctl_exe()?,
        // A project's file is shared: it names no path of this user's, and
        // each person's hooks run the hookctl on their own PATH.
        Scope::Project(_) => {
            if crate::client::find_on_path("hookctl").is_none() {
                report.notes.push(
                    "hookctl is not on your PATH: the project's hooks run `hookctl` from PATH, \
                     so put its directory there (install.sh says how)"
                        .into(),
                );
            }
            PathBuf::from("hookctl")
        }
    };
    let mut value = file.value.clone();
    if wiring.runs_every_scope()
        && let Some(other) = wired_elsewhere(wiring, &scope)
    {
        let (name, harness) = (wiring.harness().name(), wiring.harness());
        let twice = format!(
            "hookd is already wired into {name} in {}; {name} runs the hooks of the user's file \
             and the project's both, so every event would reach hookd twice",
            other.display()
        );
        if !args.force {
            bail!(
                "{twice}. Keep one: `hookctl uninstall {harness}` with the other scope, or pass --force to install anyway"
            );
        }
        report.notes.push(twice);
    }
    put_hooks(&mut value, wiring, &exe, &path)?;
    report.events = changed_events(&file.value, &value);
    let options = InstallOptions {
        no_statusline: args.no_statusline,
        statusline: args.statusline,
        force: args.force,
        dry_run: args.dry_run,
    };
    wiring.install_more(&mut value, &exe, &scope, &options, &mut report)?;
    finish(&file, &value, &mut report)?;
    report.notes.push(wiring.after_install().to_owned());
    print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

/// The other settings file (the user's for a project install; the current
/// directory's project for a user install) when it already runs hookd.
pub fn wired_elsewhere(wiring: &dyn Wiring, scope: &Scope) -> Option<PathBuf> {
    let path = wiring.file(&scope.other()?).ok()?;
    let file = JsonFile::load(&path).ok()?;
    (!our_commands(&file.value).is_empty()).then_some(path)
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    if args.harness == Harness::OpenCode {
        return opencode::uninstall(args);
    }
    let scope = args.scope.resolve()?;
    let wiring = wiring(args.harness);
    let path = wiring.file(&scope)?;
    let file = JsonFile::load(&path)?;
    let mut value = file.value.clone();
    let mut report = Report::new("uninstall", args.harness, &scope, &path, args.dry_run);
    take_hooks(&mut value);
    report.events = changed_events(&file.value, &value);
    wiring.uninstall_more(&mut value, &scope, args.dry_run, &mut report)?;
    if file.original.is_some() {
        finish(&file, &value, &mut report)?;
    }
    // A project's file that held only hookd's wiring goes whole, with the
    // backups hookd made of it: nothing of hookd's is left for a team to
    // commit. So does a file named for hookd (Copilot CLI's), wherever it is.
    let whole = matches!(scope, Scope::Project(_)) || path.file_name() == Some(OWN_FILE.as_ref());
    if whole && value.is_empty() && file.original.is_some() {
        let removed = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        for gone in std::iter::once(path.clone()).chain(json_file::backups_of(&path)) {
            if !args.dry_run {
                std::fs::remove_file(&gone)
                    .with_context(|| format!("cannot remove {}", gone.display()))?;
            }
            report.done.push(format!("{removed} {}", gone.display()));
        }
        report.backup = None;
        if !args.dry_run
            && let Some(dir) = path.parent()
        {
            // Only when empty: the folder may hold the project's own files.
            let _ = std::fs::remove_dir(dir);
        }
    }
    if !args.dry_run {
        report.backups_kept = json_file::backups_of(&path);
        if !report.backups_kept.is_empty() {
            report.notes.push(format!(
                "Kept {} backup(s) hookd made of {} ({}.hookd-backup-*): yours to delete once you no longer need them.",
                report.backups_kept.len(),
                path.display(),
                path.file_name().unwrap_or_default().to_string_lossy(),
            ));
        }
        report.notes.push(
            "hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.".into(),
        );
    }
    print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

/// Writes the file when it changed (or shows the diff on a dry run).
fn finish(file: &JsonFile, value: &Map<String, Value>, report: &mut Report) -> anyhow::Result<()> {
    report.changed = file.differs(value);
    if !report.changed {
        return Ok(());
    }
    if report.dry_run {
        report.diff = Some(file.diff(value));
    } else {
        report.backup = file.write(value)?;
    }
    Ok(())
}

fn print(report: &Report, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("a report serializes")
        );
        return;
    }
    let verb = match (report.action, report.dry_run) {
        ("install", false) => "wired",
        ("install", true) => "would wire",
        (_, false) => "unwired",
        (_, true) => "would unwire",
    };
    println!(
        "{} ({} settings): {}",
        report.harness,
        report.scope,
        report.file.display()
    );
    if report.events.is_empty() {
        let state = if report.action == "install" {
            "already wired: no hook entry to change"
        } else {
            "no hookd hook entries to remove"
        };
        println!("  {state}");
    } else {
        println!("  {verb} {}", report.events.join(", "));
    }
    for line in &report.done {
        println!("  {line}");
    }
    if let Some(backup) = &report.backup {
        println!("  backup of the previous file: {}", backup.display());
    }
    if report.changed && !report.dry_run {
        println!("  wrote {}", report.file.display());
    } else if !report.changed {
        println!("  {} unchanged", report.file.display());
    }
    if let Some(diff) = &report.diff {
        print!("{diff}");
    }
    if report.dry_run {
        println!("  (dry run: nothing was written)");
    }
    for note in &report.notes {
        println!("{note}");
    }
}

/// The `hooks` object of a settings file, created when absent.
fn hooks_object<'a>(
    root: &'a mut Map<String, Value>,
    path: &Path,
) -> anyhow::Result<&'a mut Map<String, Value>> {
    match root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        Value::Object(hooks) => Ok(hooks),
        other => bail!(
            "`hooks` in {} is {}, not an object; nothing was changed. Fix it by hand, then run this again",
            path.display(),
            json_type(other)
        ),
    }
}

/// Makes hookd's entries in `root` exactly the wiring's: ours elsewhere go,
/// each event gets one group running this hookctl, where its old one was.
pub fn put_hooks(
    root: &mut Map<String, Value>,
    wiring: &dyn Wiring,
    exe: &Path,
    path: &Path,
) -> anyhow::Result<()> {
    let hooks = hooks_object(root, path)?;
    if let Some((event, value)) = wiring.hooks().iter().find_map(|spec| {
        hooks
            .get(spec.event)
            .filter(|v| !v.is_array())
            .map(|v| (spec.event, v))
    }) {
        bail!(
            "`hooks.{event}` in {} is {}, not a list; nothing was changed. Fix it by hand, then run this again",
            path.display(),
            json_type(value)
        );
    }
    let (positions, emptied) = remove_ours(hooks);
    for spec in wiring.hooks() {
        let groups = hooks
            .entry(spec.event)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(groups) = groups {
            let at = positions
                .get(spec.event)
                .copied()
                .unwrap_or(groups.len())
                .min(groups.len());
            groups.insert(at, group(wiring, exe, spec));
        }
    }
    for event in emptied {
        if !wiring.hooks().iter().any(|s| s.event == event) {
            hooks.shift_remove(&event);
        }
    }
    Ok(())
}

/// Takes every hookd entry out of `root`, and the lists and `hooks` object
/// that only held ours.
pub fn take_hooks(root: &mut Map<String, Value>) {
    let Some(Value::Object(hooks)) = root.get_mut("hooks") else {
        return;
    };
    let (positions, emptied) = remove_ours(hooks);
    for event in emptied {
        hooks.shift_remove(&event);
    }
    if hooks.is_empty() && !positions.is_empty() {
        root.shift_remove("hooks");
    }
}

/// Removes the handlers that run `hookctl hook`, and the groups that held
/// nothing else. Returns, per event, where its first such group was, and
/// the events whose lists this emptied.
fn remove_ours(hooks: &mut Map<String, Value>) -> (BTreeMap<String, usize>, Vec<String>) {
    let mut positions = BTreeMap::new();
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        let mut kept = Vec::with_capacity(groups.len());
        let mut first = None;
        for mut group in groups.drain(..) {
            let (removed, now_empty) = remove_from_group(&mut group);
            if removed && first.is_none() {
                first = Some(kept.len());
            }
            if !(removed && now_empty) {
                kept.push(group);
            }
        }
        *groups = kept;
        if let Some(at) = first {
            positions.insert(event.clone(), at);
            if groups.is_empty() {
                emptied.push(event.clone());
            }
        }
    }
    (positions, emptied)
}

/// Removes our handlers from one matcher group: (removed any, now empty).
/// A bare handler of ours is a group emptied.
fn remove_from_group(group: &mut Value) -> (bool, bool) {
    if is_our_handler(group) {
        return (true, true);
    }
    let Some(Value::Array(handlers)) = group.get_mut("hooks") else {
        return (false, false);
    };
    let before = handlers.len();
    handlers.retain(|h| !is_our_handler(h));
    (handlers.len() < before, handlers.is_empty())
}

fn is_our_handler(handler: &Value) -> bool {
    handler_command(handler).is_some_and(|c| runs_hookctl(c, "hook").is_some())
}

/// A handler's command line: `command`, or Copilot CLI's `bash`.
fn handler_command(handler: &Value) -> Option<&str> {
    handler["command"].as_str().or(handler["bash"].as_str())
}

/// The handlers of one entry of an event's list: a group's, or the entry
/// itself when it is a bare handler.
fn handlers_of(entry: &Value) -> &[Value] {
    match entry.get("hooks") {
        Some(Value::Array(handlers)) => handlers,
        Some(_) => &[],
        None => std::slice::from_ref(entry),
    }
}

/// Our handlers in a settings file, per event: `(event, command)`.
pub fn our_commands(root: &Map<String, Value>) -> Vec<(String, String)> {
    let Some(Value::Object(hooks)) = root.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in hooks {
        for group in groups.as_array().into_iter().flatten() {
            for handler in handlers_of(group) {
                if is_our_handler(handler) {
                    out.push((
                        event.clone(),
                        handler_command(handler).unwrap_or("").to_owned(),
                    ));
                }
            }
        }
    }
    out
}

/// Events whose hookd entries differ between two versions of a file.
fn changed_events(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let entries = |root: &Map<String, Value>| {
        let mut map: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        if let Some(Value::Object(hooks)) = root.get("hooks") {
            for (event, groups) in hooks {
                for group in groups.as_array().into_iter().flatten() {
                    if handlers_of(group).iter().any(is_our_handler) {
                        map.entry(event.clone()).or_default().push(group.clone());
                    }
                }
            }
        }
        map
    };
    let (a, b) = (entries(before), entries(after));
    let mut events: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|e| a.get(*e) != b.get(*e))
        .cloned()
        .collect();
    // In the file's own order.
    let order: Vec<&String> = [after, before]
        .iter()
        .filter_map(|root| root.get("hooks")?.as_object())
        .flat_map(|hooks| hooks.keys())
        .collect();
    events.sort_by_key(|e| order.iter().position(|k| *k == e).unwrap_or(usize::MAX));
    events.dedup();
    events
}

/// If `command` runs `hookctl <sub>` (any path to hookctl, after any
/// `NAME=value` assignments), the path it runs hookctl by.
pub fn runs_hookctl(command: &str, sub: &str) -> Option<String> {
    let words = shell_words(command);
    let mut rest = words.iter().skip_while(|w| is_assignment(w));
    let program = rest.next()?;
    let is_hookctl = Path::new(program)
        .file_name()
        .is_some_and(|n| n == "hookctl");
    (is_hookctl && rest.next().is_some_and(|w| w == sub)).then(|| program.clone())
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// Splits a command line into words the way a POSIX shell would for simple
/// commands: quotes and backslashes, no expansions.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The word as a shell reads it back: bare when safe, else single-quoted.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Says that a harness with no statusLine ignored `--statusline`.
fn no_statusline(harness: Harness, options: &InstallOptions, report: &mut Report) {
    if options.statusline {
        report
            .notes
            .push(format!("{harness} has no statusLine; --statusline ignored"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn each_harness_is_one_wiring_whose_hooks_name_it() {
        let exe = Path::new("/x/hookctl");
        for harness in Harness::ALL {
            let wiring = wiring(harness);
            assert_eq!(wiring.harness(), harness);
            // OpenCode's wiring is a plugin file, not entries (`opencode.rs`).
            if harness == Harness::OpenCode {
                continue;
            }
            assert!(!wiring.hooks().is_empty(), "{harness}");
            let mut root = Map::new();
            put_hooks(&mut root, wiring, exe, Path::new("s.json")).unwrap();
            let ours = our_commands(&root);
            assert_eq!(ours.len(), wiring.hooks().len(), "{harness}");
            for (event, command) in &ours {
                let spec = wiring.hooks().iter().find(|s| s.event == event).unwrap();
                assert!(command.ends_with(&format!(" {}", spec.arg)), "{command}");
                // What `hookctl hook` is told is the harness it then serves.
                let told = command.contains(&format!("--harness {harness} "));
                assert_eq!(
                    told,
                    harness != crate::hook::DEFAULT_HARNESS,
                    "{harness}: {command}"
                );
            }
            for scope in [Scope::User, Scope::Project("/p".into())] {
                if let Ok(file) = wiring.file(&scope) {
                    let json = file.extension().is_some_and(|e| e == "json");
                    assert!(json, "{harness}: {}", file.display());
                }
            }
        }
    }

    #[test]
    fn our_commands_are_recognized_by_what_they_run() {
        assert!(runs_hookctl("/home/u/.local/bin/hookctl hook stop", "hook").is_some());
        assert!(runs_hookctl("hookctl hook --harness codex stop", "hook").is_some());
        assert!(runs_hookctl("'/a b/hookctl' hook stop", "hook").is_some());
        assert!(runs_hookctl("HOOKD_LOG=debug hookctl hook stop", "hook").is_some());
        assert_eq!(
            runs_hookctl("\"/x y/hookctl\" statusline", "statusline").as_deref(),
            Some("/x y/hookctl")
        );
        assert!(runs_hookctl("hookctl statusline", "hook").is_none());
        assert!(runs_hookctl("echo hookctl hook", "hook").is_none());
        assert!(runs_hookctl("/usr/bin/my-hookctl hook stop", "hook").is_none());
        assert!(runs_hookctl("", "hook").is_none());
    }

    #[test]
    fn quoting_round_trips() {
        for word in ["/usr/bin/hookctl", "/a b/hookctl", "/it's/hookctl", ""] {
            assert_eq!(shell_words(&shell_quote(word)), [word], "{word}");
        }
        assert_eq!(
            shell_quote("/usr/local/bin/hookctl"),
            "/usr/local/bin/hookctl"
        );
    }

    #[test]
    fn install_then_uninstall_leaves_foreign_hooks_alone() {
        let original = obj(
            r#"{"model":"x","hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint.sh"}]}],"Notification":[{"hooks":[{"type":"command","command":"notify"}]}]}}"#,
        );
        let exe = Path::new("/opt/hk/hookctl");
        let path = Path::new("settings.json");
        let mut v = original.clone();
        put_hooks(&mut v, &claude_code::ClaudeCode, exe, path).unwrap();
        let ours = our_commands(&v);
        assert_eq!(ours.len(), claude_code::ClaudeCode.hooks().len());
        assert!(
            ours.iter()
                .all(|(_, c)| c.starts_with("/opt/hk/hookctl hook "))
        );
        // The foreign PostToolUse group stays first.
        assert_eq!(
            v["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "lint.sh"
        );
        assert_eq!(
            changed_events(&original, &v).len(),
            claude_code::ClaudeCode.hooks().len()
        );

        let mut again = v.clone();
        put_hooks(&mut again, &claude_code::ClaudeCode, exe, path).unwrap();
        assert_eq!(again, v, "a second install changes nothing");
        assert!(changed_events(&v, &again).is_empty());

        let mut moved = v.clone();
        put_hooks(
            &mut moved,
            &claude_code::ClaudeCode,
            Path::new("/new/hookctl"),
            path,
        )
        .unwrap();
        assert_eq!(
            moved["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "lint.sh"
        );
        assert_eq!(
            our_commands(&moved).len(),
            claude_code::ClaudeCode.hooks().len()
        );

        take_hooks(&mut v);
        assert_eq!(v, original);
        assert_eq!(
            v.keys().collect::<Vec<_>>(),
            original.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn bare_handlers_are_ours_by_their_bash_and_the_rest_stay() {
        let original = obj(
            r#"{"version":1,"hooks":{"postToolUse":[{"type":"command","bash":"lint.sh","timeoutSec":5}]}}"#,
        );
        let exe = Path::new("/opt/hk/hookctl");
        let mut v = original.clone();
        put_hooks(
            &mut v,
            &copilot_cli::CopilotCli,
            exe,
            Path::new("hookd.json"),
        )
        .unwrap();
        let post = v["hooks"]["postToolUse"].as_array().unwrap();
        assert_eq!(post[0]["bash"], "lint.sh");
        assert_eq!(
            post[1],
            json!({"type": "command", "bash": "/opt/hk/hookctl hook --harness copilot-cli post-tool-use", "timeoutSec": 10})
        );
        assert_eq!(
            our_commands(&v).len(),
            copilot_cli::CopilotCli.hooks().len()
        );
        let mut again = v.clone();
        put_hooks(
            &mut again,
            &copilot_cli::CopilotCli,
            exe,
            Path::new("hookd.json"),
        )
        .unwrap();
        assert_eq!(again, v, "a second install changes nothing");
        take_hooks(&mut v);
        assert_eq!(v, original);
    }

    #[test]
    fn a_hooks_value_of_the_wrong_shape_is_refused() {
        let exe = Path::new("/x/hookctl");
        let mut v = obj(r#"{"hooks":[]}"#);
        let err = put_hooks(&mut v, &claude_code::ClaudeCode, exe, Path::new("s.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`hooks` in s.json is a list"), "{err}");
        let mut v = obj(r#"{"hooks":{"Stop":{"oops":1}}}"#);
        let err = put_hooks(&mut v, &claude_code::ClaudeCode, exe, Path::new("s.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`hooks.Stop`"), "{err}");
    }
}
