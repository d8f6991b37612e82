//! Repositories that try to block hookd: a FIFO among the files git reads
//! (a config include, `core.excludesFile`, a `.gitattributes` linked to
//! one, ...). Each test drives a real `hookd` process through the real
//! hookctl and checks that the hooks answer within their budget, the state is
//! saved without a checkpoint (the refusal or the deadline said in
//! `events.jsonl`), the next save works too, and the daemon still stops on
//! SIGTERM within its drain time.
//!
//! No real git runs once a FIFO is planted: it would block on it too.

use crate::attacks::{Lab, assert_ok, repo_at};
use hookd_tests::{GitRepo, process_alive, stdout, wait_until, workflow_events_of};
use serde_json::Value;
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The default `daemon.drain_timeout_ms`.
const DRAIN: Duration = Duration::from_millis(3000);
/// A hook answered through a route hookd refuses up front: no deadline was
/// waited for (hookd's git deadline is 5 s).
const REFUSED_QUICKLY: Duration = Duration::from_secs(4);
/// The default `client.session_start_timeout_ms` and `client.pre_compact_timeout_ms`.
const SESSION_START_BUDGET: Duration = Duration::from_secs(10);
const PRE_COMPACT_BUDGET: Duration = Duration::from_secs(30);

/// A FIFO that no one writes to. When it goes, its other end is opened and
/// closed, so that a reader still blocked on it (hookd, on a failing run)
/// gets an end of file and the test run never hangs.
pub(crate) struct Fifo(PathBuf);

impl Fifo {
    pub(crate) fn make(path: &Path) -> Fifo {
        let _ = std::fs::remove_file(path);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        Fifo(path.to_path_buf())
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        // Readers may come one after another: release a few.
        for _ in 0..5 {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.0);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How a test plants its FIFO: it gets the repository and the path the FIFO
/// will have (made after `plant` returns, so that git never sees it).
pub(crate) struct Route {
    pub(crate) name: &'static str,
    /// Whether hookd refuses the route before git reads anything; else only
    /// the deadline keeps hookd going.
    pub(crate) refused: bool,
    /// Whether the work tree's `.git` is a `gitdir:` file pointing elsewhere.
    pub(crate) separate_git_dir: bool,
}

impl Route {
    /// A route refused up front, in a plain repository.
    pub(crate) fn refused(name: &'static str) -> Route {
        Route {
            name,
            refused: true,
            separate_git_dir: false,
        }
    }
}

/// How many of the daemon's threads are doing git work (hookd names them).
pub(crate) fn git_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "hookd-git")
                })
                .count()
        })
        .unwrap_or(0)
}

pub(crate) fn append(path: &Path, text: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// Builds a repository, plants the route's FIFO (`plant` gets the
/// repository, its git directory and the FIFO's path), and checks every
/// promise. Returns what each save said of its checkpoint in
/// `events.jsonl`, normalized: the refusal or the deadline.
#[must_use]
pub(crate) fn survives(route: Route, plant: impl FnOnce(&GitRepo, &Path, &Path)) -> String {
    let lab = Lab::new();
    let dir = lab.sb.path().join("proj");
    let repo = if route.separate_git_dir {
        let repo = GitRepo::init_separate(&dir, &lab.sb.path().join("git-dirs/proj.git"));
        repo.write("README.md", "# demo\n");
        repo.write("src/lib.rs", "pub fn a() {}\n");
        repo.commit_all("initial");
        repo
    } else {
        repo_at(&dir)
    };
    let git_dir = repo.git_dir();
    let fifo_path = lab.sb.path().join("trap.fifo");
    plant(&repo, &git_dir, &fifo_path);
    // A change to save: git then reads the attributes of a file to add.
    repo.write("src/lib.rs", "pub fn a() {}\npub fn uncommitted() {}\n");
    let fifo = Fifo::make(&fifo_path);
    let state = repo.dir.join(".workflow/context_state.json");

    let mut t = lab.transcript(route.name);
    let mut said = String::new();
    let started = Instant::now();
    lab.start_session(&repo.dir, &t);
    assert!(
        started.elapsed() < SESSION_START_BUDGET,
        "{}: SessionStart took {:?}",
        route.name,
        started.elapsed()
    );
    t.reply(140_000);

    for round in 1..=2 {
        let _ = std::fs::remove_file(&state);
        let started = Instant::now();
        let pre = lab.hook(&repo.dir, &t, "PreCompact(trigger=manual)", "pre-compact");
        let took = started.elapsed();
        assert_ok(&pre, "pre-compact");
        // The instructions come after the save: PreCompact did not give up.
        insta::allow_duplicates! {
            insta::assert_snapshot!(lab.sb.normalize(&stdout(&pre)), @r#"
                hookd saved the workflow state (.workflow/context_state.json). Keep in your summary: the request, what the person said must or must not be done, the task in progress (Cache the token table), the next steps in order, the decisions and blockers.
                End it with one fenced code block, info string `hookd-state [TOKEN]`, of YAML, each key only if it applies: decisions [{topic, decision, reasoning}], rejected [{approach, why}], blockers [{issue, status: unresolved|workaround|resolved, notes}], constraints [text], lifted_constraints [text], active_task, progress_notes, next_actions [{action, target, priority, context_needed: [files]}].
            "#);
        }
        assert!(took < PRE_COMPACT_BUDGET, "{}: took {took:?}", route.name);
        if route.refused {
            assert!(
                took < REFUSED_QUICKLY,
                "{} (save {round}): hookd waited {took:?}, as if for a deadline",
                route.name
            );
        }
        assert!(
            state.is_file(),
            "{} (save {round}): no state saved",
            route.name
        );
        let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        assert!(
            saved["checkpoint"]["sha"].is_null(),
            "{} (save {round}): a checkpoint was made through the FIFO: {}",
            route.name,
            saved["checkpoint"]
        );
        // Said where the person looks: the save's line in events.jsonl.
        let note = workflow_events_of(&repo.dir, "pipeline")
            .into_iter()
            .rfind(|e| e["step"] == "checkpoint")
            .map(|e| e["detail"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        said += &format!("save {round}: {note}\n");
    }
    assert!(
        !git_dir.join("refs/hookd").exists()
            && !std::fs::read_to_string(git_dir.join("packed-refs"))
                .unwrap_or_default()
                .contains("refs/hookd/"),
        "{}: a checkpoint ref was written",
        route.name
    );

    // One read stuck at most, not one more per save.
    let stuck = if route.refused { 0 } else { 1 };
    assert!(
        wait_until(Duration::from_secs(2), || git_threads(lab.pid) == stuck),
        "{}: {} threads doing git work, {stuck} expected",
        route.name,
        git_threads(lab.pid)
    );

    // SAFETY: signalling the daemon this test started.
    assert_eq!(unsafe { libc::kill(lab.pid, libc::SIGTERM) }, 0);
    let stopped = wait_until(DRAIN + Duration::from_millis(1500), || {
        !process_alive(lab.pid)
    });
    assert!(
        stopped,
        "{}: hookd still runs {:?} after SIGTERM",
        route.name,
        DRAIN + Duration::from_millis(1500)
    );
    drop(fifo);
    lab.sb.normalize(&said)
}

#[test]
fn a_fifo_in_config_include_does_not_block() {
    let said = survives(Route::refused("include-path"), |_, git_dir, fifo| {
        append(
            &git_dir.join("config"),
            &format!("[include]\n\tpath = {}\n", fifo.display()),
        );
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/proj/.git/config) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/proj/.git/config) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_in_a_nested_conditional_include_does_not_block() {
    let said = survives(Route::refused("include-if-nested"), |_, git_dir, fifo| {
        // .git/config includes, on a condition every repository meets,
        // a file that includes the FIFO by a path relative to itself.
        let middle = fifo.with_file_name("middle.cfg");
        std::fs::write(&middle, "[include]\n\tpath = \"trap.fifo\" ; the trap\n").unwrap();
        append(
            &git_dir.join("config"),
            &format!("[includeIf \"gitdir:/\"]\n\tpath = {}\n", middle.display()),
        );
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/middle.cfg) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/middle.cfg) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_as_core_excludes_file_does_not_block() {
    let said = survives(Route::refused("excludes-file"), |_, git_dir, fifo| {
        append(
            &git_dir.join("config"),
            &format!("[core]\n\texcludesFile = {}\n", fifo.display()),
        );
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (core.excludesFile) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (core.excludesFile) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_as_core_attributes_file_does_not_block() {
    let said = survives(Route::refused("attributes-file"), |_, git_dir, fifo| {
        append(
            &git_dir.join("config"),
            &format!("[core]\n\tattributesFile = {}\n", fifo.display()),
        );
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (core.attributesFile) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (core.attributesFile) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_committed_gitattributes_linked_to_a_fifo_does_not_block() {
    let said = survives(
        Route::refused("gitattributes-link"),
        |repo, git_dir, fifo| {
            // Committed while the target is a plain file; the FIFO comes
            // after. A filter driver makes hookd ask for attributes.
            append(
                &git_dir.join("config"),
                "[filter \"crypt\"]\n\tclean = cat\n",
            );
            std::fs::write(fifo, "secret.txt filter=crypt\n").unwrap();
            symlink(fifo, repo.dir.join(".gitattributes")).unwrap();
            repo.commit_all("attributes");
        },
    );
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.gitattributes (in the work tree) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.gitattributes (in the work tree) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_as_info_attributes_does_not_block() {
    let said = survives(Route::refused("info-attributes"), |_, git_dir, fifo| {
        std::fs::create_dir_all(git_dir.join("info")).unwrap();
        symlink(fifo, git_dir.join("info/attributes")).unwrap();
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/info/attributes (in the git directory) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/info/attributes (in the git directory) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_hookd_does_not_foresee_costs_one_deadline_and_no_lock() {
    // A `.gitignore` in a directory git does not track is not among the
    // files hookd checks first: the git deadline gives the save up, later
    // saves skip git while the stuck read lasts, and SIGTERM still works.
    let said = survives(
        Route {
            name: "untracked-gitignore",
            refused: false,
            separate_git_dir: false,
        },
        |repo, _, fifo| {
            std::fs::create_dir_all(repo.dir.join("scratch")).unwrap();
            symlink(fifo, repo.dir.join("scratch/.gitignore")).unwrap();
        },
    );
    insta::assert_snapshot!(said, @r#"
        save 1: git work for [TEMP]/proj took longer than 5 s and was given up: hookd went on without waiting for it (it may still finish) and skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)
        save 2: git work for [TEMP]/proj is still stuck from an earlier call: hookd skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)
    "#);
}

#[test]
fn a_fifo_included_by_a_git_dir_found_through_a_gitdir_file_does_not_block() {
    let said = survives(
        Route {
            name: "gitdir-file-include",
            refused: true,
            separate_git_dir: true,
        },
        |_, git_dir, fifo| {
            append(
                &git_dir.join("config"),
                &format!("[include]\n\tpath = {}\n", fifo.display()),
            );
        },
    );
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/git-dirs/proj.git/config) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/trap.fifo (include.path in [TEMP]/git-dirs/proj.git/config) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}
