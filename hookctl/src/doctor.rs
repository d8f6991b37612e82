//! `hookctl doctor [--json]`: checks that hookd can work here, explains each
//! failure with its fix, and exits 0 only when nothing failed. It changes
//! nothing: it never starts the daemon or writes a file.

use crate::Context;
use crate::client::{self, Client, ClientError};
use crate::install::{self, Scope, json_file::JsonFile};
use protocol::wire::{Harness, Request, Response, StatusQuery};
use serde::Serialize;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How long doctor waits for the daemon, and for `--version` of a program.
const WAIT: Duration = Duration::from_secs(3);
/// The Claude Code release hookd's fixtures were recorded with.
const CHECKED_CLAUDE_CODE: &str = "2.1.330";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// Worth knowing; hookd works.
    Warn,
    Fail,
    /// Does not apply here.
    Skip,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn new(name: &'static str, status: Status, detail: impl Into<String>) -> Check {
        Check {
            name,
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

pub fn run(ctx: &Context, json: bool) -> anyhow::Result<ExitCode> {
    let exe = install::hookctl_exe()?;
    let mut checks = vec![
        hookctl_binary(&exe),
        hookd_binary(),
        daemon(ctx),
        socket_dir(ctx),
    ];
    checks.push(config(ctx));
    for harness in Harness::ALL {
        checks.push(wiring(harness, &exe, ctx.project_root().as_deref()));
    }
    checks.push(git());
    checks.push(sync(ctx));
    checks.push(workflow_dir(ctx.project_root().as_deref()));
    checks.push(templates());
    checks.push(claude_code_version());
    let ok = checks.iter().all(|c| c.status != Status::Fail);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "ok": ok, "checks": checks }))?
        );
    } else {
        for c in &checks {
            let mark = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
                Status::Skip => "skip",
            };
            println!("{mark}  {:<12} {}", c.name, c.detail);
            if let Some(fix) = &c.fix {
                println!("      {:<12} fix: {fix}", "");
            }
        }
        let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
        if ok {
            println!("all checks passed");
        } else {
            println!("{failed} check(s) failed");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// This hookctl, and the one a shell (and a slash command) would run.
fn hookctl_binary(exe: &Path) -> Check {
    let this = format!("hookctl {} at {}", protocol::VERSION, exe.display());
    let add_to_path = |dir: &Path| {
        format!(
            "add {0} to PATH, e.g. echo 'export PATH=\"{0}:$PATH\"' >> ~/.profile (or ~/.zshrc), then open a new shell",
            dir.display()
        )
    };
    let dir = exe.parent().unwrap_or(Path::new("/"));
    match client::find_on_path("hookctl") {
        // The hooks run hookctl by its path; a person typing it needs PATH.
        None => Check::new(
            "hookctl",
            Status::Warn,
            format!(
                "{this}; not on your PATH (hooks run it by its path; typing hookctl and the \
                 slash commands need it there)"
            ),
        )
        .fix(add_to_path(dir)),
        Some(found) if same_file(&found, exe) => {
            Check::new("hookctl", Status::Ok, format!("{this} (on PATH)"))
        }
        Some(found) => match version_of(&found) {
            Some(v) if v == protocol::VERSION => Check::new(
                "hookctl",
                Status::Warn,
                format!(
                    "{this}; PATH finds another copy at {}, same version",
                    found.display()
                ),
            ),
            other => Check::new(
                "hookctl",
                Status::Fail,
                format!(
                    "{this}; PATH finds {} at {}",
                    other.map_or("an unknown version".into(), |v| format!("version {v}")),
                    found.display()
                ),
            )
            .fix(format!(
                "reinstall (./install.sh), or put {} first on PATH",
                dir.display()
            )),
        },
    }
}

/// The hookd that autostart would run, and its version.
fn hookd_binary() -> Check {
    let Some(hookd) = client::find_hookd() else {
        return Check::new("hookd", Status::Fail, "no hookd next to hookctl or on PATH")
            .fix("install both binaries (./install.sh), or set HOOKD_BIN to hookd's path");
    };
    match version_of(&hookd) {
        Some(v) if v == protocol::VERSION => Check::new(
            "hookd",
            Status::Ok,
            format!("hookd {v} at {}", hookd.display()),
        ),
        Some(v) => Check::new(
            "hookd",
            Status::Fail,
            format!(
                "hookd {v} at {}, but hookctl is {}",
                hookd.display(),
                protocol::VERSION
            ),
        )
        .fix("install hookd and hookctl from the same build (./install.sh)"),
        None => Check::new(
            "hookd",
            Status::Fail,
            format!("{} does not run (`--version` failed)", hookd.display()),
        )
        .fix("reinstall it (./install.sh)"),
    }
}

fn daemon(ctx: &Context) -> Check {
    match Client::connect(&ctx.socket.path, Instant::now() + WAIT) {
        Ok(mut c) => match c.request(&Request::Status(StatusQuery::default())) {
            Ok(Response::Status(report)) => {
                let d = report.daemon;
                let detail = format!(
                    "hookd {} running (pid {}) on {}",
                    d.version,
                    d.pid,
                    d.socket.display()
                );
                if d.warnings.is_empty() {
                    Check::new("daemon", Status::Ok, detail)
                } else {
                    Check::new(
                        "daemon",
                        Status::Warn,
                        format!("{detail}; it reports: {}", d.warnings.join("; ")),
                    )
                    .fix("see `hookctl status` and `hookctl logs`")
                }
            }
            Ok(_) | Err(_) => {
                Check::new("daemon", Status::Fail, "hookd answered, but not a status")
                    .fix("`hookctl daemon restart`, then `hookctl logs`")
            }
        },
        Err(ClientError::NotRunning(path)) => {
            let autostart = ctx.client_config().autostart;
            if autostart && client::find_hookd().is_some() {
                Check::new(
                    "daemon",
                    Status::Ok,
                    format!(
                        "not running on {}; the first hook starts it (client.autostart)",
                        path.display()
                    ),
                )
            } else {
                Check::new(
                    "daemon",
                    Status::Fail,
                    format!("not running on {}, and nothing will start it", path.display()),
                )
                .fix("`hookctl daemon start`, or set client.autostart: true and install hookd next to hookctl")
            }
        }
        Err(ClientError::Mismatch(message)) => Check::new("daemon", Status::Fail, message)
            .fix("`hookctl daemon restart` starts the hookd that matches this hookctl"),
        Err(e) => Check::new("daemon", Status::Fail, format!("cannot reach hookd: {e}"))
            .fix("`hookctl daemon restart`; if it persists, `hookctl logs`"),
    }
}

/// Where sync goes, and whether it can: a missing remote named with its
/// fix, a failing push shown.
fn sync(ctx: &Context) -> Check {
    let config = ctx.user_config().sync;
    if config.remote.is_none() && config.memory_remote.is_none() {
        return Check::new("sync", Status::Skip, "off (sync.remote is not set)");
    }
    let request = protocol::sync::SyncRequest {
        action: protocol::sync::SyncAction::Status,
        project: ctx.project().ok(),
    };
    let report = Client::connect(&ctx.socket.path, Instant::now() + WAIT)
        .map_err(|e| e.to_string())
        .and_then(|mut c| {
            c.request(&Request::Sync(request))
                .map_err(|e| e.to_string())
        });
    let report = match report {
        Ok(Response::Sync(report)) => report,
        Ok(other) => {
            return Check::new(
                "sync",
                Status::Fail,
                format!("hookd answered {}", other.describe()),
            );
        }
        Err(e) => return Check::new("sync", Status::Skip, format!("cannot ask hookd: {e}")),
    };
    let detail = crate::sync::lines(&report).join("; ");
    let problem = report.repositories.iter().find_map(|t| t.problem.clone());
    let failing = report
        .repositories
        .iter()
        .chain(report.memory.as_ref())
        .any(|t| t.last_push.as_ref().is_some_and(|a| !a.ok));
    match (problem, failing) {
        (Some(problem), _) if !problem.starts_with("no remote") => Check::new(
            "sync",
            Status::Warn,
            detail,
        )
        .fix("see `hookctl sync status`; run hookctl in the repository whose checkpoints you sync"),
        (Some(_), _) => {
            let remote = report.remote.clone().unwrap_or_default();
            Check::new("sync", Status::Warn, detail)
                .fix(format!("`git remote add {remote} <url>` in this repository, or set sync.remote to a remote it has"))
        }
        (None, true) => Check::new("sync", Status::Warn, detail)
            .fix("see `hookctl sync status`; `hookctl sync push` tries again now"),
        (None, false) => Check::new("sync", Status::Ok, detail),
    }
}

/// The socket's directory is ours and private, and so is the socket.
fn socket_dir(ctx: &Context) -> Check {
    use std::os::unix::fs::MetadataExt;
    let socket = &ctx.socket.path;
    let Some(dir) = socket.parent() else {
        return Check::new(
            "socket",
            Status::Fail,
            format!("{} has no directory", socket.display()),
        );
    };
    let uid = protocol::paths::effective_uid();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::new(
                "socket",
                Status::Ok,
                format!("{} is created (0700) when hookd starts", dir.display()),
            );
        }
        Err(e) => {
            return Check::new("socket", Status::Fail, format!("{}: {e}", dir.display()))
                .fix("choose a socket path you can use: set HOOKD_SOCKET");
        }
    };
    if meta.uid() != uid {
        return Check::new(
            "socket",
            Status::Fail,
            format!(
                "{} belongs to uid {}, not to you (uid {uid})",
                dir.display(),
                meta.uid()
            ),
        )
        .fix("use a directory of your own: set HOOKD_SOCKET or XDG_RUNTIME_DIR");
    }
    if meta.mode() & 0o077 != 0 {
        // hookd tightens a directory it chose; one the person named is theirs to
        // decide (the socket itself is 0600 and other users are refused anyway).
        let status = if ctx.socket.dir_is_ours() {
            Status::Fail
        } else {
            Status::Warn
        };
        return Check::new(
            "socket",
            status,
            format!(
                "{} is mode {:o}; others can reach hookd",
                dir.display(),
                meta.mode() & 0o777
            ),
        )
        .fix(format!("chmod 700 {}", dir.display()));
    }
    match std::fs::metadata(socket) {
        Ok(m) if m.mode() & 0o077 != 0 => Check::new(
            "socket",
            Status::Fail,
            format!("{} is mode {:o}", socket.display(), m.mode() & 0o777),
        )
        .fix("`hookctl daemon restart` recreates it 0600"),
        _ => Check::new(
            "socket",
            Status::Ok,
            format!("{} (directory 0700, yours)", socket.display()),
        ),
    }
}

fn config(ctx: &Context) -> Check {
    let layers = protocol::config::Layers::from_process(ctx.project_root());
    let files: Vec<String> = [layers.user_file.clone(), layers.project_file()]
        .into_iter()
        .flatten()
        .filter(|f| f.exists())
        .map(|f| f.display().to_string())
        .collect();
    match protocol::config::load(&layers) {
        Ok(_) if files.is_empty() => {
            Check::new("config", Status::Ok, "no config files; the defaults apply")
        }
        Ok(e) if !e.warnings.is_empty() => Check::new("config", Status::Warn, e.warnings.join("; "))
            .fix("keep those settings in your own config.yaml, or trust the project with `hookctl trust`"),
        Ok(_) => Check::new("config", Status::Ok, format!("valid: {}", files.join(", "))),
        Err(e) => Check::new("config", Status::Fail, e.to_string())
            .fix("edit the file it names; `hookctl config` shows each value and its source"),
    }
}

/// A harness's hooks point at this hookctl, in the user's settings or the
/// project's.
fn wiring(harness: Harness, exe: &Path, project: Option<&Path>) -> Check {
    if harness == Harness::OpenCode {
        return opencode_plugin(exe, project);
    }
    let name = harness.as_str();
    let wiring = install::wiring(harness);
    let install_fix = format!("hookctl install {harness}");
    let mut scopes = vec![Scope::User];
    scopes.extend(project.map(|p| Scope::Project(p.to_path_buf())));
    let found = match wired_files(wiring, &scopes) {
        Ok(found) => found,
        Err(e) => {
            return Check::new(name, Status::Fail, e.to_string())
                .fix("fix the JSON at the place named, then run this again");
        }
    };
    if wiring.runs_every_scope() && found.len() > 1 {
        let files: Vec<String> = found.iter().map(|(p, _)| p.display().to_string()).collect();
        return Check::new(
            name,
            Status::Fail,
            format!(
                "hookd is wired in both {}: {} runs both, so every event reaches hookd twice",
                files.join(" and "),
                harness.name()
            ),
        )
        .fix(format!(
            "keep one: hookctl uninstall {harness} --user, or hookctl uninstall {harness} --project DIR"
        ));
    }
    let Some((path, ours)) = found.into_iter().next() else {
        if let Some(check) = heard_through_another(wiring, &scopes) {
            return check;
        }
        return if harness_present(wiring) {
            let status = if wiring.unwired_fails() {
                Status::Fail
            } else {
                Status::Warn
            };
            Check::new(
                name,
                status,
                "installed here, but hookd is not wired into it",
            )
            .fix(install_fix)
        } else {
            Check::new(name, Status::Skip, "not installed")
        };
    };
    let missing: Vec<&str> = wiring
        .hooks()
        .iter()
        .map(|s| s.event)
        .filter(|e| !ours.iter().any(|(event, _)| event == e))
        .collect();
    let elsewhere: Vec<String> = ours
        .iter()
        .filter_map(|(_, cmd)| install::runs_hookctl(cmd, "hook"))
        .filter(|program| {
            // A project's wiring names `hookctl` alone: the one PATH finds.
            let runs = if program.contains('/') {
                Some(PathBuf::from(program))
            } else {
                client::find_on_path(program)
            };
            !runs.is_some_and(|runs| same_file(&runs, exe))
        })
        .collect();
    if let Some(other) = elsewhere.first() {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "{}: hooks run {other}, not this hookctl ({})",
                path.display(),
                exe.display()
            ),
        )
        .fix(install_fix);
    }
    if !missing.is_empty() {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "{}: no hookd hook for {}",
                path.display(),
                missing.join(", ")
            ),
        )
        .fix(install_fix);
    }
    let mut stale: Vec<&str> = ours
        .iter()
        .map(|(event, _)| event.as_str())
        .filter(|e| !wiring.hooks().iter().any(|s| s.event == *e))
        .collect();
    stale.dedup();
    if !stale.is_empty() {
        return Check::new(
            name,
            Status::Warn,
            format!(
                "{}: hookd hooks on {}, which this version no longer uses (they cost a process each time they run)",
                path.display(),
                stale.join(", ")
            ),
        )
        .fix(install_fix);
    }
    if let Some(check) = heard_twice(wiring, &scopes) {
        return check;
    }
    if let Some((problem, fix)) = wiring.doctor_problem(&path, project) {
        return Check::new(name, Status::Warn, problem).fix(fix);
    }
    let detail = format!(
        "{} events wired in {}",
        wiring.hooks().len(),
        path.display()
    );
    Check::new(name, Status::Ok, detail)
}

/// OpenCode's plugin is hookd's, as install writes it for its scope, in
/// one folder only; and what OpenCode would skip.
fn opencode_plugin(exe: &Path, project: Option<&Path>) -> Check {
    use install::opencode::{Found, found_at, plugin_file, plugin_text, skipped};
    let name = Harness::OpenCode.as_str();
    let mut scopes = vec![Scope::User];
    scopes.extend(project.map(|p| Scope::Project(p.to_path_buf())));
    let mut ours = Vec::new();
    for scope in scopes {
        let Ok(path) = plugin_file(&scope) else {
            continue;
        };
        match found_at(&path) {
            Found::Nothing => {}
            Found::Other(what) => {
                return Check::new(
                    name,
                    Status::Warn,
                    format!("{what}: OpenCode loads it, hookd's is not there"),
                )
                .fix("move that file away, then hookctl install opencode");
            }
            Found::Ours(text) => ours.push((scope, path, text)),
        }
    }
    if ours.len() > 1 {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "hookd's plugin is in {} and {}: OpenCode loads both, so every event reaches hookd twice",
                ours[0].1.display(),
                ours[1].1.display()
            ),
        )
        .fix("keep one: hookctl uninstall opencode --user, or hookctl uninstall opencode --project DIR");
    }
    let Some((scope, path, text)) = ours.pop() else {
        return if harness_present(install::wiring(Harness::OpenCode)) {
            Check::new(
                name,
                Status::Warn,
                "installed here, but hookd's plugin is not in its plugins folder",
            )
            .fix("hookctl install opencode")
        } else {
            Check::new(name, Status::Skip, "not installed")
        };
    };
    if text != plugin_text(&scope, exe) {
        return Check::new(
            name,
            Status::Warn,
            format!(
                "{} is another version of hookd's plugin, or runs another hookctl",
                path.display()
            ),
        )
        .fix(format!(
            "hookctl install opencode{}",
            match scope {
                Scope::Project(_) => " --project DIR",
                Scope::User => "",
            }
        ));
    }
    let said = skipped(&scope);
    if !said.is_empty() {
        return Check::new(name, Status::Warn, said.join("; "))
            .fix("unset the variables named, turn automatic compaction back on (compaction.auto), and run hookctl install opencode again for a folder with no node_modules");
    }
    Check::new(name, Status::Ok, format!("plugin in {}", path.display()))
}

/// The other harness whose hooks this one runs too, and its settings file
/// that runs hookd.
fn wired_in_another(wiring: &dyn install::Wiring, scopes: &[Scope]) -> Option<(Harness, PathBuf)> {
    let other = wiring.runs_hooks_of()?;
    let found = wired_files(install::wiring(other), scopes).ok()?;
    Some((other, found.into_iter().next()?.0))
}

/// A harness present but not wired in its own settings still hears hookd
/// where it runs another harness's hooks (Cursor: Claude Code's).
fn heard_through_another(wiring: &dyn install::Wiring, scopes: &[Scope]) -> Option<Check> {
    let harness = wiring.harness();
    if !harness_present(wiring) {
        return None;
    }
    let (other, path) = wired_in_another(wiring, scopes)?;
    // Which of them it runs, and whether it reads their answers, is not
    // documented: heard, maybe, but not to be counted on.
    Some(
        Check::new(
            harness.as_str(),
            Status::Warn,
            format!(
                "not wired in its own settings; {} runs hookd's {} hooks ({}), whose payloads hookd knows as {}'s, but which of them it runs, and whether it reads their answers, is not documented",
                harness.name(),
                other.name(),
                path.display(),
                harness.name()
            ),
        )
        .fix(format!("hookctl install {harness}")),
    )
}

/// Wired in its own settings and in another harness's it runs too: each
/// event reaches hookd twice.
fn heard_twice(wiring: &dyn install::Wiring, scopes: &[Scope]) -> Option<Check> {
    let harness = wiring.harness();
    let (other, path) = wired_in_another(wiring, scopes)?;
    Some(
        Check::new(
            harness.as_str(),
            Status::Warn,
            format!(
                "hookd is wired into {} too ({}), and {} runs {}'s hooks: each {} event reaches hookd twice",
                other.name(),
                path.display(),
                harness.name(),
                other.name(),
                harness.name()
            ),
        )
        .fix(format!(
            "keep {}'s own: `hookctl uninstall {other}` if you do not use {} (with both, hookd saves once a compaction but hears every other event twice)",
            harness.name(),
            other.name()
        )),
    )
}

/// A settings file that runs hookd, and its `(event, command)` entries.
type WiredFile = (PathBuf, Vec<(String, String)>);

/// The settings files of `scopes` that run hookd for `wiring`; the first
/// file that cannot be read is the error.
fn wired_files(wiring: &dyn install::Wiring, scopes: &[Scope]) -> anyhow::Result<Vec<WiredFile>> {
    let mut found = Vec::new();
    for scope in scopes {
        let Ok(path) = wiring.file(scope) else {
            continue;
        };
        if !path.exists() {
            continue;
        }
        let ours = install::our_commands(&JsonFile::load(&path)?.value);
        if !ours.is_empty() {
            found.push((path, ours));
        }
    }
    Ok(found)
}

/// Whether a harness seems to be installed: its directory or its program.
fn harness_present(wiring: &dyn install::Wiring) -> bool {
    let (dir, program) = wiring.presence();
    dir.is_some_and(|d| d.is_dir()) || client::find_on_path(program).is_some()
}

fn git() -> Check {
    match output_of(OsStr::new("git"), &["--version"]) {
        Some(v) => Check::new("git", Status::Ok, v),
        None => Check::new("git", Status::Fail, "git does not run")
            .fix("install git: checkpoints and state validation need it"),
    }
}

/// `.workflow/` can be written (or created) in the current project.
fn workflow_dir(project: Option<&Path>) -> Check {
    let Some(project) = project else {
        return Check::new(
            "workflow",
            Status::Skip,
            "no project (no working directory)",
        );
    };
    let dir = project.join(".workflow");
    if let Ok(meta) = std::fs::symlink_metadata(&dir) {
        use std::os::unix::fs::MetadataExt;
        let problem = if meta.file_type().is_symlink() {
            Some("is a symlink; hookd never follows links inside a project".to_owned())
        // SAFETY: geteuid has no preconditions and cannot fail.
        } else if meta.uid() != unsafe { libc::geteuid() } {
            Some("is owned by another user".to_owned())
        } else if meta.mode() & 0o022 != 0 {
            Some(format!(
                "is writable by other users (mode {:o})",
                meta.mode() & 0o7777
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Check::new(
                "workflow",
                Status::Fail,
                format!("{} {problem}: hookd keeps no state there", dir.display()),
            )
            .fix(format!(
                "if you did not make it, remove it (rm -r {0}); if it is yours: chmod go-w {0}",
                dir.display()
            ));
        }
    }
    let (target, what) = if dir.exists() {
        (dir.clone(), format!("{} is writable", dir.display()))
    } else {
        (
            project.to_path_buf(),
            format!("{} can be created", dir.display()),
        )
    };
    if writable(&target) {
        Check::new("workflow", Status::Ok, what)
    } else {
        Check::new(
            "workflow",
            Status::Fail,
            format!("{} is not writable", target.display()),
        )
        .fix(format!(
            "make it writable for you: chmod u+w {}",
            target.display()
        ))
    }
}

fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The user's own templates: readable, balanced, and not missing what a
/// newer built-in one shows. A copy an older install left unchanged is
/// ignored by hookd, and named here so it can go.
fn templates() -> Check {
    use crate::templates::Found;
    let Ok(dir) = crate::templates::folder() else {
        return Check::new(
            "templates",
            Status::Skip,
            "no config directory (HOME is not set)",
        );
    };
    let mut own = Vec::new();
    let mut stale = Vec::new();
    let mut behind = Vec::new();
    let mut broken = Vec::new();
    for (file, _) in protocol::templates::BUILT_IN {
        let path = dir.join(file);
        match crate::templates::found(&dir, file) {
            Found::None => {}
            Found::SameAsBuiltIn => own.push(file),
            Found::ShippedCopy => stale.push(path.display().to_string()),
            Found::Unreadable(why) => broken.push(format!("{} ({why})", path.display())),
            Found::Own { lacks } => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if text.matches("{{").count() != text.matches("}}").count() {
                    broken.push(format!("{} (unbalanced {{{{ }}}})", path.display()));
                } else if !lacks.is_empty() {
                    behind.push(format!("{} lacks {}", path.display(), lacks.join(", ")));
                }
                own.push(file);
            }
        }
    }
    if !broken.is_empty() {
        return Check::new("templates", Status::Fail, broken.join("; "))
            .fix("fix them, or delete them to use the built-in templates");
    }
    if !behind.is_empty() {
        return Check::new(
            "templates",
            Status::Warn,
            format!(
                "yours hide parts of newer built-in ones: {}",
                behind.join("; ")
            ),
        )
        .fix(
            "add what they lack (`hookctl templates show NAME` prints the built-in one), or \
             delete them to use the built-in templates",
        );
    }
    if !stale.is_empty() {
        return Check::new(
            "templates",
            Status::Warn,
            format!(
                "unchanged copies an older install left (hookd ignores them): {}",
                stale.join(", ")
            ),
        )
        .fix("hookctl templates tidy");
    }
    if own.is_empty() {
        return Check::new("templates", Status::Ok, "built-in (none of yours)");
    }
    Check::new(
        "templates",
        Status::Ok,
        format!("yours for {}, built-in for the rest", own.join(", ")),
    )
}

fn claude_code_version() -> Check {
    let Some(claude) = client::find_on_path("claude") else {
        return Check::new("claude", Status::Skip, "Claude Code is not on PATH");
    };
    match output_of(claude.as_os_str(), &["--version"]) {
        Some(v) => {
            let checked = if v.starts_with(CHECKED_CLAUDE_CODE) {
                String::new()
            } else {
                format!(" (hookd was checked against {CHECKED_CLAUDE_CODE})")
            };
            Check::new("claude", Status::Ok, format!("Claude Code {v}{checked}"))
        }
        None => Check::new(
            "claude",
            Status::Warn,
            format!("{} --version did not answer", claude.display()),
        ),
    }
}

/// `program --version`'s version number: the last word of its first line.
fn version_of(program: &Path) -> Option<String> {
    let line = output_of(program.as_os_str(), &["--version"])?;
    line.split_whitespace().last().map(str::to_owned)
}

/// The first line of a program's stdout, if it runs and succeeds in time.
fn output_of(program: &OsStr, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    out.lines().next().map(|l| l.trim().to_owned())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
