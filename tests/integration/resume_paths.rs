//! Where a session's project is and how the resume prompt names its files:
//! a session started in a subdirectory belongs to its repository, every
//! path is written from the directory the agent works in, and each session
//! is told to reload only its own work.

use crate::attacks::{Lab, assert_ok, repo_at};
use hookd_tests::{
    GitRepo, Scenario, Transcript, additional_context, hook_json, run_with_stdin, stderr, stdout,
};
use serde_json::{Value, json};
use std::path::Path;

/// `hookctl hook <event>` for `transcript`'s session as Claude Code sends it
/// from `dir`: the payload's `cwd` and `CLAUDE_PROJECT_DIR` both name it.
fn hook_from(
    s: &Scenario,
    transcript: &Transcript,
    dir: &Path,
    fixture: &str,
    event: &str,
) -> Value {
    let mut payload: Value = serde_json::from_slice(&transcript.payload(fixture, dir)).unwrap();
    payload["cwd"] = json!(dir.display().to_string());
    let mut cmd = s.sb.command("hookctl");
    cmd.arg("hook").arg(event).env("CLAUDE_PROJECT_DIR", dir);
    let out = run_with_stdin(cmd, &serde_json::to_vec(&payload).unwrap());
    assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
    if event == "pre-compact" {
        Value::Null
    } else {
        hook_json(&out)
    }
}

/// A manual compaction of `transcript`'s session, sent from `dir`; the
/// resume prompt SessionStart injected, and the summary it showed the person.
fn compact_from(s: &Scenario, transcript: &Transcript, dir: &Path) -> (String, String) {
    hook_from(
        s,
        transcript,
        dir,
        "PreCompact(trigger=manual)",
        "pre-compact",
    );
    transcript.boundary("manual", 100_000, 4_000);
    let out = hook_from(
        s,
        transcript,
        dir,
        "SessionStart(source=compact)",
        "session-start",
    );
    let summary = out["systemMessage"].as_str().unwrap_or_default().to_owned();
    (additional_context(&out), summary)
}

/// The lines of the prompt's section `heading`, up to the next heading.
fn section<'a>(prompt: &'a str, heading: &str) -> Vec<&'a str> {
    prompt
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("#"))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// A session Claude Code started in `pkg/sub` of a repository: it reads its
/// notes by a path relative to where it works, edits them by an absolute
/// one, and reads a root file by `../..`. The project is the repository:
/// one `.workflow/` at its root, paths kept from the root in the state and
/// shown from `pkg/sub` in every section, its own file found to reload.
#[test]
fn a_session_in_a_subdirectory_belongs_to_its_repository_and_sees_paths_from_where_it_works() {
    let mut s = Scenario::build()
        .repository(|repo| {
            repo.write("src/auth.rs", "//! Auth.\n\npub fn sign() {}\n");
            repo.write(
                "pkg/sub/notes/jwt_design.md",
                "# JWT design\n\nSign with HS256.\n",
            );
            repo.commit_all("initial");
        })
        .session("sub-session")
        .start();
    let sub = s.project.join("pkg/sub");
    let notes = sub.join("notes/jwt_design.md");
    std::fs::write(
        &notes,
        "# JWT design\n\nSign with HS256, rotate keys daily.\n",
    )
    .unwrap();
    let t = &mut s.transcript;
    t.prompt("design the JWT signing for the auth service");
    t.tool_use(
        "r1",
        "Read",
        json!({"file_path": "notes/jwt_design.md"}),
        90_000,
    );
    t.tool_result("r1", "# JWT design", json!({}));
    t.tool_use(
        "r2",
        "Read",
        json!({"file_path": "../../src/auth.rs"}),
        92_000,
    );
    t.tool_result("r2", "//! Auth.", json!({}));
    t.tool_use(
        "e1",
        "Edit",
        json!({"file_path": notes.display().to_string(), "old_string": "HS256.", "new_string": "HS256, rotate keys daily."}),
        95_000,
    );
    t.tool_result("e1", "ok", json!({"filePath": notes.display().to_string()}));
    hook_from(
        &s,
        &s.transcript,
        &sub,
        "SessionStart(source=startup)",
        "session-start",
    );

    let (prompt, summary) = compact_from(&s, &s.transcript, &sub);

    // One project: the repository's root, with the one `.workflow/`.
    assert!(s.project.join(".workflow/context_state.json").is_file());
    assert!(
        !sub.join(".workflow").exists(),
        "no .workflow/ in the subdirectory"
    );
    let state = s.state();
    assert_eq!(state["project_dir"], s.project.display().to_string());
    assert_eq!(state["working_dir"], "pkg/sub");
    assert_eq!(
        state["modified_files"][0]["path"], "pkg/sub/notes/jwt_design.md",
        "{state:#}"
    );

    // The agent's own file, named from where it works, in every section.
    assert!(!prompt.contains("pkg/sub/"), "one path base: {prompt}");
    let shown = [
        "### Where You Stopped",
        "### Context to Reload",
        "### Recent Changes",
    ]
    .map(|heading| format!("{heading}\n{}\n", section(&prompt, heading).join("\n")))
    .concat();
    insta::assert_snapshot!(s.normalize(&shown), @r#"
        ### Where You Stopped
        - **Objective**: design the JWT signing for the auth service
        - **In progress**: no task was recorded as in progress
        - **File**: `notes/jwt_design.md`
        - **Last step**: Edit `notes/jwt_design.md`: succeeded
        ### Context to Reload
        Read these again before you continue, most relevant first (22 tokens of a 67,450-token budget, sized for the room left: 163,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `notes/jwt_design.md`: primary, full, ~14 tokens, relevance 0.754
        - `../../src/auth.rs`: reference, full, ~8 tokens, relevance 0.352
        ### Recent Changes
        - `notes/jwt_design.md` - modified: +1 −1 lines; edited by the agent (1 edit)
    "#);
    // The person's summary names the file the same way.
    insta::assert_snapshot!(s.normalize(&summary), @"Saved state from [TIME] (before /compact) · read first: notes/jwt_design.md · last step: Edit notes/jwt_design.md: succeeded");

    // hookctl typed in the subdirectory means the repository too.
    let mut cmd = s.sb.command("hookctl");
    cmd.current_dir(&sub)
        .env("CLAUDE_PROJECT_DIR", &sub)
        .args(["resume", "--print"]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(!printed.contains("pkg/sub/"), "one path base: {printed}");
    let reload = section(&printed, "### Context to Reload").join("\n");
    insta::assert_snapshot!(s.normalize(&reload), @r#"
        Read these again before you continue, most relevant first (22 tokens of a 67,450-token budget, sized for the room left: 163,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `notes/jwt_design.md`: primary, full, ~14 tokens, relevance 0.754
        - `../../src/auth.rs`: reference, full, ~8 tokens, relevance 0.352
    "#);

    // The checkpoint's restore hint works with the path as the prompt shows it.
    let sha = state["checkpoint"]["sha"]
        .as_str()
        .expect("a checkpoint")
        .to_owned();
    std::fs::write(&notes, "lost\n").unwrap();
    let mut cmd = s.sb.command("hookctl");
    cmd.current_dir(&sub).env("CLAUDE_PROJECT_DIR", &sub).args([
        "checkpoint",
        "restore",
        &sha,
        "--path",
        "notes/jwt_design.md",
        "--force",
    ]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "# JWT design\n\nSign with HS256, rotate keys daily.\n"
    );
    // The same through a link to the project (the current directory is
    // always the resolved one): still the file under the subdirectory.
    let link = s.sb.path().join("project-link");
    std::os::unix::fs::symlink(&s.project, &link).unwrap();
    std::fs::write(&notes, "lost again\n").unwrap();
    let mut cmd = s.sb.command("hookctl");
    cmd.current_dir(&sub)
        .env("CLAUDE_PROJECT_DIR", link.join("pkg/sub"))
        .args([
            "checkpoint",
            "restore",
            &sha,
            "--path",
            "notes/jwt_design.md",
            "--force",
        ]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "# JWT design\n\nSign with HS256, rotate keys daily.\n"
    );
}

/// Two sessions in one repository, each editing its own file, with hookd
/// wired into the project (`hookctl install --project`) and configured by
/// `.hookd.yaml`: each is told to reload only its own file, sees the other's
/// apart, and never sees hookd's own files.
#[test]
fn two_sessions_in_one_repository_each_reload_only_their_own_work() {
    let mut s = Scenario::build()
        .repository(|repo| {
            repo.write("src/billing.rs", "//! Billing.\n\npub fn invoice() {}\n");
            repo.write("src/search.rs", "//! Search.\n\npub fn query() {}\n");
            repo.commit_all("initial");
        })
        .session("billing-session")
        .start();
    let project_arg = s.project.display().to_string();
    let out =
        s.sb.hookctl(&["install", "claude-code", "--project", &project_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.project.join(".claude/settings.json").is_file());
    std::fs::write(s.project.join(".hookd.yaml"), "resume:\n  enabled: true\n").unwrap();

    let billing = s.project.join("src/billing.rs");
    let search = s.project.join("src/search.rs");
    std::fs::write(&billing, "//! Billing.\n\npub fn invoice() -> u32 { 1 }\n").unwrap();
    std::fs::write(&search, "//! Search.\n\npub fn query() -> u32 { 2 }\n").unwrap();

    let edit = |t: &mut Transcript, id: &str, file: &Path, request: &str| {
        t.prompt(request);
        t.tool_use(
            id,
            "Edit",
            json!({"file_path": file.display().to_string(), "old_string": "()", "new_string": "() -> u32"}),
            95_000,
        );
        t.tool_result(id, "ok", json!({"filePath": file.display().to_string()}));
    };
    edit(
        &mut s.transcript,
        "b1",
        &billing,
        "make invoices return their total",
    );
    let mut other = s.session("search-session");
    edit(
        &mut other,
        "q1",
        &search,
        "make search return the hit count",
    );

    // What each session is told, section by section.
    let mut told = String::new();
    for transcript in [&s.transcript, &other] {
        let (prompt, _) = compact_from(&s, transcript, &s.project);
        told.push_str(&format!("== {}\n", transcript.session_id));
        for heading in [
            "### Context to Reload",
            "### Recent Changes",
            "### Changed Outside This Session",
        ] {
            let lines = section(&prompt, heading);
            for hookds in [".claude/", ".hookd.yaml", ".workflow/"] {
                assert!(
                    !lines.iter().any(|l| l.contains(hookds)),
                    "{hookds} in:\n{prompt}"
                );
            }
            told.push_str(&format!("{heading}\n{}\n", lines.join("\n")));
        }
    }
    insta::assert_snapshot!(s.normalize(&told), @r#"
        == billing-session
        ### Context to Reload
        Read these again before you continue, most relevant first (13 tokens of a 67,450-token budget, sized for the room left: 163,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/billing.rs`: supporting, full, ~13 tokens, relevance 0.533
        ### Recent Changes
        - `src/billing.rs` - modified: +1 −1 lines; edited fn invoice; edited by the agent (1 edit)
        ### Changed Outside This Session
        Changed, but by no tool call this session's file records: another session's or the person's work, or a command's (a formatter, a generator). Check before you treat them as yours.
        - `src/search.rs` - modified
        == search-session
        ### Context to Reload
        Read these again before you continue, most relevant first (12 tokens of a 67,450-token budget, sized for the room left: 163,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/search.rs`: supporting, full, ~12 tokens, relevance 0.64
        ### Recent Changes
        - `src/search.rs` - modified: +1 −1 lines; edited fn query; edited by the agent (1 edit)
        ### Changed Outside This Session
        Changed, but by no tool call this session's file records: another session's or the person's work, or a command's (a formatter, a generator). Check before you treat them as yours.
        - `src/billing.rs` - modified
    "#);
}

/// Without git, a file the agent wrote is "created" when Claude Code's
/// Write result says it made it, and "edited" when it changed one.
#[test]
fn without_git_a_file_the_agent_created_is_listed_as_created() {
    let mut s = Scenario::build().session("plain-session").start();
    let new = s.project.join("design.md");
    let old = s.project.join("todo.md");
    std::fs::write(&old, "- sign\n").unwrap();
    std::fs::write(&new, "# Design\n").unwrap();
    let t = &mut s.transcript;
    t.prompt("write the design down");
    t.tool_use(
        "w1",
        "Write",
        json!({"file_path": new.display().to_string(), "content": "# Design\n"}),
        95_000,
    );
    t.tool_result(
        "w1",
        "File created successfully",
        json!({"type": "create", "filePath": new.display().to_string(), "content": "# Design\n"}),
    );
    t.tool_use(
        "w2",
        "Write",
        json!({"file_path": old.display().to_string(), "content": "- sign\n- verify\n"}),
        96_000,
    );
    t.tool_result(
        "w2",
        "The file has been updated",
        json!({"type": "update", "filePath": old.display().to_string(), "content": "- sign\n- verify\n"}),
    );
    let prompt = additional_context(&s.compact(100_000, 4_000));
    let changes = section(&prompt, "### Recent Changes");
    insta::assert_snapshot!(changes.join("\n"), @r#"
        - `design.md` - created: created by the agent
        - `todo.md` - edited: edited by the agent (1 edit)
    "#);
}

/// A `.git` file in a subdirectory of a project (a tarball can carry one;
/// git itself never checks one out) naming another repository's git dir:
/// a session started there must leave that repository as it was, refs,
/// objects, exclude file and all, and write nothing outside the project.
#[test]
fn a_git_file_in_a_subdirectory_cannot_send_hookd_into_another_repository() {
    let lab = Lab::new();
    let victim = repo_at(&lab.elsewhere().join("victim"));
    let project = repo_at(&lab.sb.path().join("proj"));
    let sub = project.dir.join("pkg/sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join(".git"),
        format!("gitdir: {}\n", victim.git_dir().display()),
    )
    .unwrap();
    std::fs::write(sub.join("notes.md"), "# notes\n").unwrap();
    let save = a_session_there_leaves_it_alone(
        &lab,
        &project,
        &sub,
        &victim,
        "a .git file naming another repository",
    );
    insta::assert_snapshot!(save, @r#"
        state saved to [TEMP]/proj/pkg/sub/.workflow/context_state.json
        resume prompt in [TEMP]/proj/pkg/sub/.workflow/resume_prompt.md
        --- stderr
        problem: no checkpoint: hookd leaves the git repository of [TEMP]/proj/pkg/sub alone: its .git file names [TEMP]/elsewhere/victim/.git, which is neither inside it, nor a submodule's git dir of the repository above, nor a worktree's that names it back; no checkpoint was made
        --- exit 1
    "#);
}

/// A git directory that came with a project's files (a vendored package,
/// a tarball) holding a `commondir` file that names another repository:
/// a session started there must leave that repository as it was, refs,
/// objects, exclude file and all, and the save says why.
#[test]
fn a_commondir_file_cannot_send_hookd_into_another_repository() {
    let lab = Lab::new();
    let important = repo_at(&lab.elsewhere().join("important"));
    let project = repo_at(&lab.sb.path().join("proj"));
    let vendored = project.dir.join("vendor/x");
    let fake = vendored.join(".git");
    for sub in ["objects", "refs/heads"] {
        std::fs::create_dir_all(fake.join(sub)).unwrap();
    }
    std::fs::write(fake.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        fake.join("commondir"),
        format!("{}\n", important.git_dir().display()),
    )
    .unwrap();
    std::fs::write(vendored.join("lib.rs"), "pub fn x() {}\n").unwrap();
    let save = a_session_there_leaves_it_alone(
        &lab,
        &project,
        &vendored,
        &important,
        "a git dir whose commondir names another repository",
    );
    insta::assert_snapshot!(save, @r#"
        state saved to [TEMP]/proj/vendor/x/.workflow/context_state.json
        resume prompt in [TEMP]/proj/vendor/x/.workflow/resume_prompt.md
        --- stderr
        problem: no checkpoint: hookd leaves the git repository of [TEMP]/proj/vendor/x alone: its git directory [TEMP]/proj/vendor/x/.git has a commondir file naming [TEMP]/elsewhere/important/.git, which would take its objects and refs, yet it is not a linked worktree of that repository ([TEMP]/elsewhere/important/.git/worktrees/<name> whose gitdir file names this .git back); no checkpoint was made. If it came with the project's files (a vendored package, a tarball), remove [TEMP]/proj/vendor/x/.git/commondir or that git directory; for a worktree, run `git worktree add` from the repository
        --- exit 1
    "#);
}

/// A session started in `dir` of `project` (which leads git to `victim`):
/// a save fails, a compaction runs its pipeline, and `victim` keeps its
/// refs, objects and exclude file, with nothing written outside the
/// project. Returns what the failed save said, normalized.
fn a_session_there_leaves_it_alone(
    lab: &Lab,
    project: &GitRepo,
    dir: &Path,
    victim: &GitRepo,
    what: &str,
) -> String {
    let exclude = victim.git_dir().join("info/exclude");
    let exclude_before = std::fs::read(&exclude).ok();
    let victim_before = victim.fingerprint();
    let victim_refs = victim.git(&["for-each-ref"]);
    let outside = lab.outside(&project.dir, &[]);

    let mut t = lab.transcript("planted-git");
    lab.start_session(dir, &t);
    t.reply(140_000);
    assert_ok(
        &lab.hook(dir, &t, "PostToolUse", "post-tool-use"),
        "post-tool-use",
    );
    // A save asked for a checkpoint: it fails, saying why.
    let save = lab.sb.hookctl_in(dir, &["save"]);
    assert_eq!(save.status.code(), Some(1), "{}", stderr(&save));
    let said = lab.sb.normalize(&hookd_tests::output_text(&save));
    assert_ok(
        &lab.hook(dir, &t, "PreCompact(trigger=manual)", "pre-compact"),
        "pre-compact",
    );
    t.boundary("manual", 140_000, 4_000);
    assert_ok(
        &lab.hook(dir, &t, "SessionStart(source=compact)", "session-start"),
        "session-start",
    );

    assert_eq!(
        victim.git(&["for-each-ref"]),
        victim_refs,
        "no ref, refs/hookd/ included"
    );
    assert!(victim.hookd_refs().is_empty());
    assert_eq!(victim.fingerprint(), victim_before);
    assert_eq!(
        std::fs::read(&exclude).ok(),
        exclude_before,
        "{}",
        exclude.display()
    );
    outside.assert_unchanged(what);
    said
}

/// Another user's directory (B's `/tmp/shared`, open to all) holding a
/// repository, with my project in a subdirectory of it: my project is my
/// directory, and hookd writes nothing into B's repository, its exclude
/// file included. Needs root, to give `shared` another owner.
#[test]
fn a_repository_in_another_users_directory_above_the_project_is_left_alone_as_root() {
    hookd_tests::assert_root("to give a directory another owner");
    let lab = Lab::new();
    let shared = repo_at(&lab.elsewhere().join("shared"));
    let mine = shared.dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.md"), "# notes\n").unwrap();
    let exclude = shared.git_dir().join("info/exclude");
    let exclude_before = std::fs::read_to_string(&exclude).ok();
    let shared_refs = shared.git(&["for-each-ref"]);
    std::os::unix::fs::chown(&shared.dir, Some(4242), None).unwrap();
    let outside = lab.outside(&mine, &[]);

    let mut t = lab.transcript("shared");
    lab.start_session(&mine, &t);
    t.reply(140_000);
    assert_ok(
        &lab.hook(&mine, &t, "PostToolUse", "post-tool-use"),
        "post-tool-use",
    );
    assert!(
        mine.join(".workflow").is_dir(),
        "my project is my directory"
    );
    lab.sb.hookctl_in(&mine, &["save"]);
    assert_ok(
        &lab.hook(&mine, &t, "PreCompact(trigger=manual)", "pre-compact"),
        "pre-compact",
    );

    assert_eq!(
        std::fs::read_to_string(&exclude).ok(),
        exclude_before,
        "{}",
        exclude.display()
    );
    // Back to mine, for git to read it.
    std::os::unix::fs::chown(&shared.dir, Some(0), None).unwrap();
    assert_eq!(shared.git(&["for-each-ref"]), shared_refs);
    assert!(shared.hookd_refs().is_empty());
    outside.assert_unchanged("a repository in another user's directory above the project");
}
