//! The one place hookd runs the `git` binary: a push or a fetch between a
//! shuttle repository of hookd's own and a URL the user elected.
//!
//! A shuttle is a bare repository hookd makes and configures alone (no
//! hooks, no remotes, no automatic gc or maintenance). A project's shuttle
//! reads the project's objects through `objects/info/alternates`, so git
//! never reads the project's config, hooks, remotes, `insteadOf`,
//! `sshCommand` or credential helper; only the user's own (global, system)
//! config and environment are honoured. What a fetch brings lands in the
//! shuttle's own objects, and a gc there could never prune the user's.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The directory of hookd's state dir that holds the shuttles.
pub const SYNC_DIR: &str = "sync";
/// The memory's shuttle, in [`SYNC_DIR`].
pub const MEMORY_SHUTTLE: &str = "memory.git";
/// An empty directory of hookd's: every run's `core.hooksPath`.
const NO_HOOKS: &str = "no-hooks";
/// The most of git's stderr kept for a message.
const STDERR_KEPT: usize = 16 * 1024;
/// The transports git may use: never `ext::` or `fd::`.
const ALLOWED_PROTOCOLS: &str = "file:ssh:https:http:git";

/// The git runs under way, by process group, so that none outlives the
/// daemon: [`Runs::stop_all`] kills them and refuses new ones.
#[derive(Default)]
pub struct Runs {
    groups: std::sync::Mutex<std::collections::HashSet<i32>>,
    stopped: std::sync::atomic::AtomicBool,
}

impl Runs {
    pub fn stop_all(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        for group in groups.iter() {
            if let Some(pid) = rustix::process::Pid::from_raw(*group) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }

    fn started(&self, group: i32) {
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(group);
    }

    fn ended(&self, group: i32) {
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&group);
    }
}

/// The shuttle of the repository whose common git dir has `digest`,
/// made or set right: it reads `objects_dir` through alternates.
pub fn project_shuttle(
    state_dir: &Path,
    digest: &str,
    objects_dir: &Path,
) -> Result<PathBuf, String> {
    let git_dir = state_dir.join(SYNC_DIR).join(format!("{digest}.git"));
    prepare(&git_dir, Some(objects_dir))?;
    Ok(git_dir)
}

/// The memory's shuttle, made or set right.
pub fn memory_shuttle(state_dir: &Path) -> Result<PathBuf, String> {
    let git_dir = state_dir.join(SYNC_DIR).join(MEMORY_SHUTTLE);
    prepare(&git_dir, None)?;
    Ok(git_dir)
}

/// Makes the bare repository `git_dir` (when new) and writes its config
/// and alternates, every time: hookd alone decides what they say.
fn prepare(git_dir: &Path, alternates: Option<&Path>) -> Result<(), String> {
    let fail = |what: &Path, e: std::io::Error| {
        format!(
            "cannot prepare hookd's sync repository {}: {e}",
            what.display()
        )
    };
    for dir in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        let dir = git_dir.join(dir);
        std::fs::create_dir_all(&dir).map_err(|e| fail(&dir, e))?;
    }
    let hooks = no_hooks(git_dir);
    std::fs::create_dir_all(&hooks).map_err(|e| fail(&hooks, e))?;
    let head = git_dir.join("HEAD");
    if !head.exists() {
        crate::fsutil::write_atomic(&head, b"ref: refs/heads/main\n")
            .map_err(|e| fail(&head, e))?;
    }
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\thooksPath = {}\n\
         [gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n",
        quoted(&hooks)?
    );
    let config_file = git_dir.join("config");
    crate::fsutil::write_atomic(&config_file, config.as_bytes())
        .map_err(|e| fail(&config_file, e))?;
    let alternates_file = git_dir.join("objects/info/alternates");
    match alternates {
        Some(objects) => {
            let line = objects
                .to_str()
                .filter(|s| !s.contains('\n'))
                .ok_or_else(|| {
                    format!(
                        "{} cannot be named in an alternates file",
                        objects.display()
                    )
                })?;
            crate::fsutil::write_atomic(&alternates_file, format!("{line}\n").as_bytes())
                .map_err(|e| fail(&alternates_file, e))?;
        }
        None => {
            let _ = std::fs::remove_file(&alternates_file);
        }
    }
    Ok(())
}

fn no_hooks(git_dir: &Path) -> PathBuf {
    git_dir
        .parent()
        .map_or_else(|| git_dir.join(NO_HOOKS), |sync| sync.join(NO_HOOKS))
}

/// A path as a git config value: quoted, its `\` and `"` escaped.
fn quoted(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .filter(|s| !s.chars().any(char::is_control))
        .ok_or_else(|| format!("{} cannot be written in a git config", path.display()))?;
    Ok(format!(
        "\"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// Pushes each `(ref, sha)` to `url` as `+sha:ref`. The refs' objects are
/// read from the shuttle (its alternates included).
pub fn push(
    runs: &Runs,
    shuttle: &Path,
    url: &str,
    refs: &[(String, String)],
    timeout: Duration,
) -> Result<String, String> {
    if refs.is_empty() {
        return Ok("nothing to push".into());
    }
    let mut args: Vec<OsString> = ["push", "--porcelain", "--no-verify"]
        .iter()
        .map(OsString::from)
        .collect();
    if is_local(url) {
        args.push(format!("--receive-pack={}", local_side(shuttle, "receive-pack")).into());
    }
    args.extend(["--".into(), url.into()]);
    args.extend(
        refs.iter()
            .map(|(name, sha)| format!("+{sha}:{name}").into()),
    );
    let out = run(runs, shuttle, &args, timeout)?;
    let updated = out
        .lines()
        .filter(|l| {
            l.starts_with(['*', '+', ' ']) && l.contains('\t') && !l.contains("[up to date]")
        })
        .count();
    Ok(match updated {
        0 => format!("{} ref(s) already up to date", refs.len()),
        n => format!("pushed {n} of {} ref(s)", refs.len()),
    })
}

/// Fetches `+<namespace>*:<namespace>*` from `url` into the shuttle, all but
/// `own` (a ref or a `<prefix>*` of this machine's).
pub fn fetch(
    runs: &Runs,
    shuttle: &Path,
    url: &str,
    namespace: &str,
    own: &str,
    timeout: Duration,
) -> Result<String, String> {
    let mut args: Vec<OsString> = [
        "fetch",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    if is_local(url) {
        args.push(format!("--upload-pack={}", local_side(shuttle, "upload-pack")).into());
    }
    args.extend(
        [
            "--",
            url,
            &format!("+{namespace}*:{namespace}*"),
            &format!("^{own}"),
        ]
        .iter()
        .map(OsString::from),
    );
    run(runs, shuttle, &args, timeout)?;
    Ok("fetched".into())
}

/// Whether git reaches `url` by running a program on this machine inside
/// the target repository: a `file://` URL or a path (git takes
/// `host:path` with no `/` before the `:` for ssh).
fn is_local(url: &str) -> bool {
    match url.split_once("://") {
        Some((scheme, _)) => scheme == "file",
        None => match (url.find(':'), url.find('/')) {
            (Some(colon), Some(slash)) => slash < colon,
            (Some(_), None) => false,
            (None, _) => true,
        },
    }
}

/// The command git runs inside a local target repository (`receive-pack`
/// or `upload-pack`), for the shell git starts it with. Git clears the
/// `-c` settings of [`run`] for it, and the target's own config and hooks
/// would apply: these settings switch off each command they could name.
fn local_side(shuttle: &Path, program: &str) -> String {
    let hooks = no_hooks(shuttle);
    let settings = [
        format!("core.hooksPath={}", hooks.display()),
        "receive.autogc=false".into(),
        "gc.auto=0".into(),
        "maintenance.auto=false".into(),
        "core.alternateRefsCommand=true".into(),
        "core.fsmonitor=false".into(),
    ];
    let mut command = String::from("git");
    for setting in settings {
        command.push_str(" -c ");
        command.push_str(&shell_quoted(&setting));
    }
    command.push(' ');
    command.push_str(program);
    command
}

/// `text` as one word for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The environment a run keeps of hookd's own (the user's): their home and
/// config, ssh agent, locale, proxies, and their own ssh command.
fn kept_env(name: &str) -> bool {
    const KEPT: [&str; 18] = [
        "HOME",
        "PATH",
        "USER",
        "LOGNAME",
        "LANG",
        "SSH_AUTH_SOCK",
        "XDG_CONFIG_HOME",
        "GIT_SSH_COMMAND",
        "GIT_SSH",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
        "TMPDIR",
    ];
    KEPT.contains(&name) || name.starts_with("LC_")
}

/// Runs `git <args>` on the shuttle: hooks off, gc and maintenance off, the
/// environment cleared to [`kept_env`], stdin closed, in a process group of
/// its own that is killed whole at `timeout`. Its stdout, or what went
/// wrong with git's own words (bounded).
fn run(
    runs: &Runs,
    shuttle: &Path,
    args: &[OsString],
    timeout: Duration,
) -> Result<String, String> {
    if runs.stopped.load(std::sync::atomic::Ordering::SeqCst) {
        return Err("hookd is stopping: git was not run".into());
    }
    let hooks = no_hooks(shuttle);
    let mut command = Command::new("git");
    command
        .arg("-c")
        .arg(format!("core.hooksPath={}", hooks.display()))
        .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
        // Git would otherwise read the project's config to list the refs of
        // the shuttle's alternates.
        .args(["-c", "core.alternateRefsCommand=true"])
        .args(args)
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(kept_env)))
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .env("GIT_PROTOCOL_FROM_USER", "0")
        .env("GIT_DIR", shuttle)
        .current_dir(shuttle)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run git (is it installed and on PATH?): {e}"))?;
    let group = rustix::process::Pid::from_child(&child);
    runs.started(group.as_raw_nonzero().get());
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() >= timeout => break Err(None),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(Some(e)),
        }
    };
    if status.is_err() {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = child.wait();
    }
    runs.ended(group.as_raw_nonzero().get());
    let status = match status {
        Ok(status) => status,
        Err(Some(e)) => return Err(format!("cannot wait for git: {e}")),
        Err(None) => return Err(timed_out(args, timeout, collected(stderr))),
    };
    let out = collected(stdout);
    if status.success() {
        return Ok(out);
    }
    // A push's refused refs are on stdout (`!` lines of --porcelain).
    let refused: Vec<&str> = out.lines().filter(|l| l.starts_with('!')).collect();
    let said = [refused.join("; "), collected(stderr)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    Err(format!(
        "git {} failed ({status}): {}",
        args.first()
            .map(|a| a.to_string_lossy())
            .unwrap_or_default(),
        said.trim()
    ))
}

fn timed_out(args: &[OsString], timeout: Duration, said: String) -> String {
    format!(
        "git {} gave no answer within {} s (sync.timeout_secs) and was stopped{}",
        args.first()
            .map(|a| a.to_string_lossy())
            .unwrap_or_default(),
        timeout.as_secs(),
        if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        }
    )
}

/// Reads a pipe to its end on a thread of its own, keeping the last
/// [`STDERR_KEPT`] bytes.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * STDERR_KEPT {
                    kept.drain(..kept.len() - STDERR_KEPT);
                }
            }
            let _ = tx.send(kept);
        });
    }
    rx
}

/// What a pipe gave, waiting a little for a reader a stray process may hold.
fn collected(rx: mpsc::Receiver<Vec<u8>>) -> String {
    let bytes = rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    let start = bytes.len().saturating_sub(STDERR_KEPT);
    String::from_utf8_lossy(&bytes[start..]).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::test_git::git;

    #[test]
    fn a_shuttle_is_bare_without_hooks_and_reads_its_alternates() {
        let state = tempfile::tempdir().unwrap();
        let objects = state.path().join("project-objects");
        let shuttle = project_shuttle(state.path(), "abc", &objects).unwrap();
        let config = std::fs::read_to_string(shuttle.join("config")).unwrap();
        assert!(
            config.contains("bare = true") && config.contains("hooksPath"),
            "{config}"
        );
        assert!(
            config.contains("auto = 0") && !config.contains("remote"),
            "{config}"
        );
        assert_eq!(
            std::fs::read_to_string(shuttle.join("objects/info/alternates")).unwrap(),
            format!("{}\n", objects.display())
        );
        let memory = memory_shuttle(state.path()).unwrap();
        assert!(!memory.join("objects/info/alternates").exists());
        assert!(
            std::fs::read_dir(no_hooks(&memory))
                .unwrap()
                .next()
                .is_none()
        );
    }

    #[test]
    fn the_environment_keeps_the_users_own_and_nothing_of_git_else() {
        for kept in [
            "HOME",
            "PATH",
            "SSH_AUTH_SOCK",
            "LC_ALL",
            "GIT_SSH_COMMAND",
            "https_proxy",
        ] {
            assert!(kept_env(kept), "{kept}");
        }
        for dropped in [
            "GIT_DIR",
            "GIT_CONFIG_PARAMETERS",
            "GIT_EXEC_PATH",
            "GIT_ASKPASS",
            "LD_PRELOAD",
        ] {
            assert!(!kept_env(dropped), "{dropped}");
        }
    }

    /// A remote (`remote.git`) and a project with one commit, in `dir`.
    fn remote_and_project(dir: &Path) -> (PathBuf, String) {
        git(dir, &["init", "-q", "--bare", "remote.git"]);
        git(dir, &["init", "-q", "project"]);
        git(
            dir,
            &["-C", "project", "commit", "-q", "--allow-empty", "-m", "x"],
        );
        let sha = git(dir, &["-C", "project", "rev-parse", "HEAD"]);
        let objects = dir.join("project/.git/objects");
        let shuttle = project_shuttle(&dir.join("state"), "d", &objects).unwrap();
        (shuttle, sha)
    }

    #[test]
    fn a_refused_push_says_which_ref_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let (shuttle, sha) = remote_and_project(dir.path());
        // A ref named like the pushed one's directory: the remote cannot
        // create the pushed ref.
        let blocking = "refs/hookd/sync/m-000000/state";
        git(
            dir.path(),
            &[
                "-C",
                "project",
                "push",
                "-q",
                "../remote.git",
                &format!("HEAD:{blocking}"),
            ],
        );
        let url = format!("file://{}", dir.path().join("remote.git").display());
        let refused = format!("{blocking}/main");
        let err = push(
            &Runs::default(),
            &shuttle,
            &url,
            &[(refused.clone(), sha)],
            Duration::from_secs(20),
        )
        .unwrap_err();
        assert!(
            err.contains(&refused)
                && err.contains("remote rejected")
                && err.contains(&format!("'{blocking}' exists")),
            "{err}"
        );
        let refs = git(
            dir.path(),
            &[
                "--git-dir",
                "remote.git",
                "for-each-ref",
                "--format=%(refname)",
            ],
        );
        assert_eq!(refs, blocking);
    }

    #[test]
    fn a_local_remote_runs_none_of_its_hooks_or_configured_commands() {
        let dir = tempfile::tempdir().unwrap();
        let (shuttle, sha) = remote_and_project(dir.path());
        let remote = dir.path().join("remote.git");
        let markers = dir.path().join("markers");
        std::fs::create_dir(&markers).unwrap();
        let script = |name: &str| format!("#!/bin/sh\ntouch '{}'\n", markers.join(name).display());
        let executable = |path: &Path, text: String| {
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        let own_hooks = dir.path().join("remote-hooks");
        std::fs::create_dir(&own_hooks).unwrap();
        for hook in [
            "pre-receive",
            "update",
            "post-receive",
            "post-update",
            "reference-transaction",
        ] {
            executable(&remote.join("hooks").join(hook), script(hook));
            executable(&own_hooks.join(hook), script(&format!("hooks-path-{hook}")));
        }
        let command = dir.path().join("command");
        executable(&command, script("command"));
        let command = command.display().to_string();
        for (key, value) in [
            ("core.hooksPath", own_hooks.display().to_string()),
            ("core.fsmonitor", command.clone()),
            ("core.alternateRefsCommand", command.clone()),
            ("receive.autogc", "true".into()),
            ("gc.auto", "1".into()),
        ] {
            git(
                dir.path(),
                &["--git-dir", "remote.git", "config", key, &value],
            );
        }
        // Alternates make receive-pack list their refs (through the command).
        std::fs::write(
            remote.join("objects/info/alternates"),
            format!("{}\n", dir.path().join("project/.git/objects").display()),
        )
        .unwrap();
        let url = format!("file://{}", remote.display());
        let name = String::from("refs/hookd/sync/m-000000/state/main");
        push(
            &Runs::default(),
            &shuttle,
            &url,
            &[(name.clone(), sha.clone())],
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(
            git(dir.path(), &["--git-dir", "remote.git", "rev-parse", &name]),
            sha
        );
        let other = memory_shuttle(&dir.path().join("other-state")).unwrap();
        fetch(
            &Runs::default(),
            &other,
            remote.to_str().unwrap(),
            "refs/hookd/sync/",
            "refs/hookd/sync/me/*",
            Duration::from_secs(20),
        )
        .unwrap();
        let ran: Vec<_> = std::fs::read_dir(&markers)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(ran.is_empty(), "the remote's commands ran: {ran:?}");
    }

    #[test]
    fn only_a_path_or_a_file_url_is_reached_by_a_local_program() {
        for local in ["/srv/r.git", "file:///srv/r.git", "r.git", "./a:b"] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "ssh://h/r.git",
            "git@host:r.git",
            "host:r",
            "https://h/r.git",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }

    #[test]
    fn a_git_that_never_answers_is_stopped_at_its_deadline() {
        let state = tempfile::tempdir().unwrap();
        let shuttle = memory_shuttle(state.path()).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/r.git",
            listener.local_addr().unwrap().port()
        );
        let started = Instant::now();
        let err = fetch(
            &Runs::default(),
            &shuttle,
            &url,
            "refs/hookd/memory/",
            "refs/hookd/memory/me",
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(err.contains("no answer within 1 s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
    }
}
