//! OpenCode's wiring: no settings entries but a plugin file, hookd's
//! `hooks/opencode/hookd.js`, written to `~/.config/opencode/plugins/` (or
//! `<project>/.opencode/plugins/`). OpenCode loads every `*.js` there when
//! it starts.
//!
//! OpenCode also installs its plugin package (`@opencode-ai/plugin`) into
//! every config folder that has plugins, in the background, and waits for
//! it before the first request; offline that took about 70 s. It skips the
//! install when the folder has `node_modules/` and every dependency of its
//! `package.json` (and the plugin package) is in `package-lock.json`. A
//! folder OpenCode never installed into gets exactly that from install, and
//! nothing else: hookd's plugin imports no package.

use super::{InstallArgs, Report, Scope, UninstallArgs};
use anyhow::{Context, bail};
use protocol::wire::Harness;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The plugin, as kept in the repository.
pub const PLUGIN: &str = include_str!("../../../hooks/opencode/hookd.js");
/// The plugin's one line that names hookctl; a user install names this
/// hookctl's full path there.
const HOOKCTL_LINE: &str = "const HOOKCTL = \"hookctl\";";
/// What tells hookd's plugin file from someone else's of the same name.
const PLUGIN_MARK: &str = "// hookd's plugin for OpenCode";
/// The package OpenCode installs into its config folders, at the version
/// hookd was measured with.
const PLUGIN_PACKAGE: (&str, &str) = ("@opencode-ai/plugin", "1.18.33");

/// OpenCode's config folder for a scope: `$XDG_CONFIG_HOME/opencode` (else
/// `~/.config/opencode`), or `<project>/.opencode`.
pub fn config_dir(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(".opencode")),
        Scope::User => {
            let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
            env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))
                .map(|base| base.join("opencode"))
                .context(
                    "cannot find OpenCode's config folder: neither XDG_CONFIG_HOME nor HOME is set",
                )
        }
    }
}

/// Where the plugin goes for a scope.
pub fn plugin_file(scope: &Scope) -> anyhow::Result<PathBuf> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(protocol::project::OPENCODE_PROJECT_PLUGIN)),
        Scope::User => Ok(config_dir(scope)?.join("plugins").join("hookd.js")),
    }
}

/// The plugin as install writes it: the user's names this hookctl; a
/// project's, shared with others, runs the `hookctl` on each one's PATH.
pub fn plugin_text(scope: &Scope, exe: &Path) -> String {
    match scope {
        Scope::Project(_) => PLUGIN.to_owned(),
        Scope::User => {
            let quoted = serde_json::to_string(&exe.to_string_lossy()).unwrap_or_default();
            PLUGIN.replacen(HOOKCTL_LINE, &format!("const HOOKCTL = {quoted};"), 1)
        }
    }
}

/// What is at the plugin's place now.
pub enum Found {
    Nothing,
    /// hookd's plugin, with its text.
    Ours(String),
    /// A file of that name that is not hookd's (or not a file).
    Other(String),
}

pub fn found_at(path: &Path) -> Found {
    match std::fs::symlink_metadata(path) {
        Err(_) => Found::Nothing,
        Ok(meta) if !meta.is_file() => {
            Found::Other(format!("{} is not a plain file", path.display()))
        }
        Ok(meta) if meta.len() > 1024 * 1024 => Found::Other(format!(
            "{} is not hookd's plugin (too large)",
            path.display()
        )),
        Ok(_) => match std::fs::read_to_string(path) {
            Ok(text) if text.starts_with(PLUGIN_MARK) => Found::Ours(text),
            Ok(_) => Found::Other(format!("{} is not hookd's plugin", path.display())),
            Err(e) => Found::Other(format!("cannot read {}: {e}", path.display())),
        },
    }
}

pub fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let scope = args.scope.resolve()?;
    let path = plugin_file(&scope)?;
    let mut report = Report::new("install", Harness::OpenCode, &scope, &path, args.dry_run);
    let exe = match &scope {
        Scope::User => super::hookctl_exe()?,
        Scope::Project(_) => PathBuf::from("hookctl"),
    };
    let text = plugin_text(&scope, &exe);
    if let Some(other) = wired_elsewhere(&scope) {
        let twice = format!(
            "hookd's plugin is already in {}; OpenCode loads the user's plugins and the \
             project's both, so every event would reach hookd twice",
            other.display()
        );
        if !args.force {
            bail!(
                "{twice}. Keep one: `hookctl uninstall opencode` with the other scope, or pass --force to install anyway"
            );
        }
        report.notes.push(twice);
    }
    match found_at(&path) {
        Found::Ours(old) if old == text => {}
        Found::Other(what) if !args.force => {
            bail!("{what}; nothing was changed. Move it away, or pass --force to replace it")
        }
        _ => {
            report.changed = true;
            report.events.push("plugin".into());
            if !args.dry_run {
                write_file(&path, &text)?;
            }
        }
    }
    let dir = config_dir(&scope)?;
    if !dir.join("node_modules").exists() {
        seed_packages(&dir, args.dry_run, &mut report)?;
    }
    report.notes.push(
        "OpenCode loads plugins when it starts: restart it. `hookctl doctor` says what it would skip."
            .into(),
    );
    super::print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

/// The other scope's plugin (the user's for a project install; the
/// current directory's project for a user install) when it is hookd's.
fn wired_elsewhere(scope: &Scope) -> Option<PathBuf> {
    let path = plugin_file(&scope.other()?).ok()?;
    matches!(found_at(&path), Found::Ours(_)).then_some(path)
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let scope = args.scope.resolve()?;
    let path = plugin_file(&scope)?;
    let mut report = Report::new("uninstall", Harness::OpenCode, &scope, &path, args.dry_run);
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    if let Found::Ours(_) = found_at(&path) {
        report.changed = true;
        report.events.push("plugin".into());
        if !args.dry_run {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            // Only when empty: the folder may hold the person's own plugins.
            let _ = path.parent().map(std::fs::remove_dir);
        }
    }
    // The package files install seeded go only as install wrote them.
    let dir = config_dir(&scope)?;
    let seeded = seeded_files();
    let untouched = seeded
        .iter()
        .all(|(name, text)| std::fs::read_to_string(dir.join(name)).is_ok_and(|t| t == *text));
    let modules = dir.join("node_modules");
    let empty_modules = std::fs::read_dir(&modules).is_ok_and(|mut d| d.next().is_none());
    if untouched && empty_modules {
        for (name, _) in &seeded {
            if !args.dry_run {
                std::fs::remove_file(dir.join(name))
                    .with_context(|| format!("cannot remove {}", dir.join(name).display()))?;
            }
            report
                .done
                .push(format!("{verb} {}", dir.join(name).display()));
        }
        if !args.dry_run {
            let _ = std::fs::remove_dir(&modules);
            let _ = std::fs::remove_dir(&dir);
        }
        report.done.push(format!("{verb} {}", modules.display()));
    }
    super::print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

/// The package files install writes into a folder OpenCode never
/// installed into: its plugin package as the one dependency, and a lock
/// that lists it, so that OpenCode finds nothing to install.
fn seeded_files() -> [(&'static str, String); 2] {
    let (name, version) = PLUGIN_PACKAGE;
    let package = json!({ "dependencies": { name: version } });
    let lock = json!({
        "lockfileVersion": 3,
        "requires": true,
        "packages": { "": { "dependencies": { name: version } } },
    });
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    [
        ("package.json", pretty(&package)),
        ("package-lock.json", pretty(&lock)),
    ]
}

fn seed_packages(dir: &Path, dry_run: bool, report: &mut Report) -> anyhow::Result<()> {
    let seeded = seeded_files();
    if seeded.iter().any(|(name, _)| dir.join(name).exists()) {
        report.notes.push(format!(
            "{} has a package.json or package-lock.json but no node_modules: OpenCode will \
             install its plugin package there when it starts (offline it waits about 70 s); \
             run `npm install` in that folder once",
            dir.display()
        ));
        return Ok(());
    }
    let verb = if dry_run { "would write" } else { "wrote" };
    for (name, text) in &seeded {
        if !dry_run {
            write_file(&dir.join(name), text)?;
        }
        report
            .done
            .push(format!("{verb} {}", dir.join(name).display()));
    }
    let modules = dir.join("node_modules");
    if !dry_run {
        std::fs::create_dir_all(&modules)
            .with_context(|| format!("cannot create {}", modules.display()))?;
    }
    report.done.push(format!(
        "{} {} (empty): OpenCode does not install {} at start, which offline waits about 70 s",
        if dry_run { "would create" } else { "created" },
        modules.display(),
        PLUGIN_PACKAGE.0
    ));
    Ok(())
}

/// Writes `text` to `path` through a temporary file beside it.
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("a file to write has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    super::json_file::write_atomic(path, text.as_bytes(), 0o644)
}

/// What OpenCode does not do that hookd needs, as doctor says it (for
/// OpenCode started with this environment): where its automatic
/// compaction is off, where it loads no plugin, and a config folder it
/// would install into at start.
pub fn skipped(scope: &Scope) -> Vec<String> {
    // As OpenCode reads its switches: on only as `true` or `1`.
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let mut said = Vec::new();
    if set("OPENCODE_DISABLE_AUTOCOMPACT") {
        said.push(
            "OPENCODE_DISABLE_AUTOCOMPACT is on: OpenCode does not compact by itself".to_owned(),
        );
    }
    if set("OPENCODE_PURE") {
        said.push(
            "OPENCODE_PURE is on (as `opencode --pure` sets it): OpenCode loads no plugin, hookd's included"
                .to_owned(),
        );
    }
    if matches!(scope, Scope::Project(_)) && set("OPENCODE_DISABLE_PROJECT_CONFIG") {
        said.push(
            "OPENCODE_DISABLE_PROJECT_CONFIG is on: OpenCode loads nothing from the project's \
             .opencode/, hookd's plugin included"
                .to_owned(),
        );
    }
    let mut configs = Vec::new();
    if let Ok(dir) = config_dir(&Scope::User) {
        configs.extend(["opencode.json", "opencode.jsonc", "config.json"].map(|n| dir.join(n)));
    }
    if let Scope::Project(root) = scope {
        configs.push(root.join("opencode.json"));
        configs.push(root.join(".opencode/opencode.json"));
    }
    for file in configs {
        let Some(config) = protocol::trust::read_project_file(&file)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        else {
            continue;
        };
        if config["compaction"]["auto"] == false {
            said.push(format!(
                "compaction.auto is false in {}: OpenCode does not compact by itself",
                file.display()
            ));
        }
    }
    if let Ok(dir) = config_dir(scope)
        && !dir.join("node_modules").exists()
    {
        said.push(format!(
            "{} has no node_modules: OpenCode installs its plugin package there at start \
             (offline it waits about 70 s)",
            dir.display()
        ));
    }
    said
}

/// OpenCode, as hookctl's shared code sees it: a plugin, no hook entries.
pub struct OpenCode;

impl super::Wiring for OpenCode {
    fn harness(&self) -> Harness {
        Harness::OpenCode
    }

    fn hooks(&self) -> &'static [super::HookSpec] {
        &[]
    }

    fn file(&self, scope: &Scope) -> anyhow::Result<PathBuf> {
        plugin_file(scope)
    }

    fn handler(&self, _spec: &super::HookSpec, command: String) -> Value {
        Value::String(command)
    }

    fn after_install(&self) -> &'static str {
        "OpenCode loads plugins when it starts: restart it."
    }

    fn runs_every_scope(&self) -> bool {
        true
    }

    fn install_more(
        &self,
        _root: &mut serde_json::Map<String, Value>,
        _exe: &Path,
        _scope: &Scope,
        _options: &super::InstallOptions,
        _report: &mut Report,
    ) -> anyhow::Result<()> {
        Ok(())
    }

    fn uninstall_more(
        &self,
        _root: &mut serde_json::Map<String, Value>,
        _scope: &Scope,
        _dry_run: bool,
        _report: &mut Report,
    ) -> anyhow::Result<()> {
        Ok(())
    }

    fn presence(&self) -> (Option<PathBuf>, &'static str) {
        (config_dir(&Scope::User).ok(), "opencode")
    }

    fn unwired_fails(&self) -> bool {
        false
    }

    fn flat_entries(&self) -> bool {
        false
    }

    fn runs_hooks_of(&self) -> Option<Harness> {
        None
    }

    fn doctor_problem(
        &self,
        _file: &Path,
        _project: Option<&Path>,
    ) -> Option<(String, &'static str)> {
        None
    }
}
