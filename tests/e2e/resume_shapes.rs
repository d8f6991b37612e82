//! The resume prompt in the shapes a session takes, as the model reads it in
//! its first request after each compaction: a task list with descriptions
//! and the person's constraints, two sessions in one repository compacting
//! at once, a session started in a subdirectory, and two compactions in one
//! session. Each prompt is also kept as a snapshot (`snapshots/`), with the
//! parts that differ per run redacted.

use hookd_tests::e2e::{ApiRequest, Reply, Scenario};
use hookd_tests::wait_until;
use regex::Regex;
use serde_json::json;
use std::time::Duration;

const HEADING: &str = "## Context Recovery - Resuming Previous Session";

/// The one resume prompt the model got in `request`, from its heading on.
fn prompt_in(request: &ApiRequest) -> String {
    assert_eq!(
        request.count(HEADING),
        1,
        "one resume prompt in the request answered with {}:\n{}",
        request.label,
        request.text()
    );
    let text = request.text();
    let from = text.find(HEADING).unwrap();
    // The prompt ends with its action line and marker; what follows is
    // Claude Code's.
    let end = text[from..]
        .find("[hookd-resume ")
        .and_then(|at| text[from + at..].find(']').map(|n| from + at + n + 1))
        .unwrap_or(text.len());
    text[from..end].to_owned()
}

/// The lines of the section under `heading` (up to the next heading or rule).
fn section<'a>(prompt: &'a str, heading: &str) -> Option<&'a str> {
    let at = prompt.find(&format!("\n{heading}"))? + 1;
    let body = &prompt[at + heading.len()..];
    let end = ["\n### ", "\n---"]
        .iter()
        .filter_map(|stop| body.find(stop))
        .min()
        .unwrap_or(body.len());
    Some(&body[..end])
}

/// The numbered lines of "Next Actions", in order.
fn next_actions(prompt: &str) -> Vec<String> {
    let list = section(prompt, "### Next Actions").expect("a Next Actions section");
    let numbered = Regex::new(r"^[0-9]+\. ").unwrap();
    list.lines()
        .filter(|l| numbered.is_match(l))
        .map(str::to_owned)
        .collect()
}

/// The prompt with the run's particulars replaced by fixed names: the
/// sandbox's path, times, capture names, commit ids, the marker, token
/// counts and relevance scores (their tokenizer estimate and recency move).
fn redact(prompt: &str, sc: &Scenario) -> String {
    let sandbox = sc.sandbox().path().display().to_string();
    let mut out = prompt.replace(&sandbox, "[SANDBOX]");
    for (pattern, with) in [
        (
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+)",
            "[TIME]",
        ),
        (
            r"(compact|threshold|save)_[0-9]{8}_[0-9]{6}",
            "${1}_[STAMP]",
        ),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[SESSION]",
        ),
        (r"\[hookd-resume [0-9a-f]+\]", "[hookd-resume MARKER]"),
        (r"\b[0-9a-f]{7,40}\b", "[SHA]"),
        (r"~?[0-9][0-9,]* tokens", "[N] tokens"),
        (r"[0-9][0-9,]*-token", "[N]-token"),
        (r"relevance [0-9.]+", "relevance [SCORE]"),
        (r"[0-9]+(\.[0-9]+)?%", "[PCT]"),
    ] {
        out = Regex::new(pattern)
            .unwrap()
            .replace_all(&out, with)
            .into_owned();
    }
    out
}

fn task_tools() -> Reply {
    Reply::tool(
        "t1.search",
        20_000,
        "ToolSearch",
        json!({"query": "select:TaskCreate,TaskUpdate", "max_results": 5}),
    )
}

fn task_create(label: &str, tokens: u64, subject: &str, description: &str) -> Reply {
    Reply::tool(
        label,
        tokens,
        "TaskCreate",
        json!({"subject": subject, "description": description}),
    )
}

fn task_update(label: &str, tokens: u64, id: &str, status: &str) -> Reply {
    Reply::tool(
        label,
        tokens,
        "TaskUpdate",
        json!({"taskId": id, "status": status}),
    )
}

fn write(label: &str, tokens: u64, path: &str, content: &str) -> Reply {
    Reply::tool(
        label,
        tokens,
        "Write",
        json!({"file_path": format!("@PROJECT@/{path}"), "content": content}),
    )
}

fn read(label: &str, tokens: u64, path: &str) -> Reply {
    Reply::tool(
        label,
        tokens,
        "Read",
        json!({"file_path": format!("@PROJECT@/{path}")}),
    )
}

const JWT_SUMMARY: &str = "<summary>
E2E_JWT_SUMMARY: the design note is written; signing is stubbed.

```hookd-state
constraints:
  - no new crates without asking
  - do not touch the tests
decisions:
  - {topic: Token format, decision: HS256 with a 15 minute expiry, reasoning: one shared secret is enough here}
next_actions:
  - {action: finish, target: JWT signing in src/auth/jwt.rs, priority: 1, context_needed: [src/auth/jwt.rs]}
```
</summary>";

/// A task list with descriptions, one task done, one in progress, one
/// pending; the person's constraints in the summary's block. After the
/// compaction the prompt leads with the task in progress, its description
/// and the last step (a failed `ls`; Claude Code does not count grep's
/// "no match" as a failure), lists the constraints under the
/// objective, puts the summary's next action first and the pending task
/// after the one in progress, names the file still to create, and leaves
/// hookd's own wiring out. The agent's first step after it reads the file
/// it was told to, and hookd records that it followed.
#[test]
fn tasks_constraints_and_the_task_in_progress_lead() {
    let Some(mut sc) = Scenario::builder("resume-tasks")
        .replies(vec![
            task_tools(),
            task_create(
                "t1.create1",
                22_000,
                "Write the JWT design note",
                "Record the token format and expiry rules in notes/jwt_design.md.",
            ),
            task_create(
                "t1.create2",
                24_000,
                "Implement JWT signing",
                "Sign HS256 access tokens (15 min expiry) in src/auth/jwt.rs.",
            ),
            task_create(
                "t1.create3",
                26_000,
                "Add token refresh endpoint",
                "POST /refresh in src/auth/refresh.rs rotates the refresh token.",
            ),
            write(
                "t1.note",
                30_000,
                "notes/jwt_design.md",
                "# JWT\n\nHS256, 15 minute access tokens.\n",
            ),
            task_update("t1.done1", 31_000, "1", "completed"),
            task_update("t1.start2", 32_000, "2", "in_progress"),
            write(
                "t1.jwt",
                36_000,
                "src/auth/jwt.rs",
                "pub fn sign(claims: &str) -> String {\n    todo!(\"HS256 {claims}\")\n}\n",
            ),
            Reply::bash("t1.check", 38_000, "ls src/auth/verify.rs"),
            Reply::text("t1.text", 38_100, "Signing is stubbed; verify is next."),
            read("t3.read", 6_000, "src/auth/jwt.rs"),
            Reply::text("t3.text", 6_500, "Finishing the signing."),
        ])
        .summary(JWT_SUMMARY, 4_000)
        .start()
    else {
        return;
    };
    let first = sc.start_session(
        "TURN 1: add JWT auth to the service. No new crates without asking, and do not touch the tests.",
    );
    let sid = first.session_id.clone();
    sc.compact(&sid, "keep the JWT plan");
    sc.resume(&sid, "TURN 3: carry on");
    let log = sc.log();
    let prompt = prompt_in(log.answered_with("t3.read"));
    println!("--- the resume prompt the model got (tasks) ---\n{prompt}");

    let stopped = section(&prompt, "### Where You Stopped").expect("Where You Stopped");
    let next_at = prompt.find("### Next Actions").expect("Next Actions");
    assert!(prompt.find("### Where You Stopped").unwrap() < next_at);
    for said in [
        "Implement JWT signing",
        "Sign HS256 access tokens (15 min expiry) in src/auth/jwt.rs.",
        "no new crates without asking",
        "do not touch the tests",
    ] {
        assert!(
            stopped.contains(said),
            "{said:?} where the agent stopped:\n{stopped}"
        );
    }
    let last_step = stopped
        .lines()
        .find(|l| l.contains("Last step"))
        .expect("the last step");
    assert!(
        last_step.contains("ls src/auth/verify.rs") && last_step.contains("failed"),
        "{last_step}"
    );
    let actions = next_actions(&prompt);
    assert!(
        actions[0].contains("JWT signing"),
        "the summary's own next action leads: {actions:#?}"
    );
    let refresh = actions
        .iter()
        .position(|a| a.contains("refresh endpoint"))
        .expect("the pending task is a next action");
    let signing = actions
        .iter()
        .position(|a| a.contains("Implement JWT signing") || a.contains("JWT signing"))
        .unwrap();
    assert!(
        signing < refresh,
        "in progress before pending: {actions:#?}"
    );
    assert!(
        prompt
            .lines()
            .any(|l| l.contains("src/auth/refresh.rs") && l.contains("to create")),
        "the file the pending task will create:\n{prompt}"
    );
    assert!(
        !prompt
            .lines()
            .any(|l| l.trim_end().ends_with(": 2") || l.contains("“2”")),
        "a task shown as a bare id:\n{prompt}"
    );
    for own in [".claude/settings.json", ".claude/commands/"] {
        assert!(!prompt.contains(own), "hookd's own {own}:\n{prompt}");
    }

    // Its first step after the compaction read the file the prompt named.
    assert!(
        wait_until(Duration::from_secs(10), || sc
            .events("resume_followed")
            .iter()
            .any(|e| e["followed"] == true)),
        "resume_followed events: {:?}",
        sc.events("resume_followed")
    );
    let status = sc.hookctl(&["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("resumed and followed"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    insta::assert_snapshot!("resume_prompt_tasks", redact(&prompt, &sc));
}

fn lane_summary(lane: &str, file: &str) -> String {
    format!("<summary>LANE-{lane}: {file} is started.</summary>")
}

/// Two sessions in one repository, each writing its own file, compact at
/// the same moment: each one's prompt is its own (its objective, its file to
/// reload) and holds nothing of the other's work or of hookd's wiring.
#[test]
fn two_sessions_in_one_repository_compact_at_once() {
    let alpha_summary = lane_summary("alpha", "src/alpha.rs");
    let beta_summary = lane_summary("beta", "src/beta.rs");
    let Some(mut sc) = Scenario::builder("resume-two-sessions")
        .lane(
            "alpha",
            vec![
                write("a1.write", 30_000, "src/alpha.rs", "pub fn alpha() {}\n"),
                Reply::text("a1.text", 30_100, "alpha started"),
                Reply::text("a3.text", 5_000, "alpha resumed"),
            ],
            &[(&alpha_summary, 3_000)],
        )
        .lane(
            "beta",
            vec![
                write("b1.write", 40_000, "src/beta.rs", "pub fn beta() {}\n"),
                Reply::text("b1.text", 40_100, "beta started"),
                Reply::text("b3.text", 5_000, "beta resumed"),
            ],
            &[(&beta_summary, 3_000)],
        )
        .start()
    else {
        return;
    };
    let project = sc.project.clone();
    let dir = project.as_path();
    let started = sc.together(&[
        (dir, "LANE-alpha TURN 1: write the alpha module", None),
        (dir, "LANE-beta TURN 1: write the beta module", None),
    ]);
    let (alpha, beta) = (started[0].session_id.clone(), started[1].session_id.clone());
    assert_ne!(alpha, beta);
    sc.together(&[
        (dir, "/compact keep alpha", Some(&alpha)),
        (dir, "/compact keep beta", Some(&beta)),
    ]);
    sc.together(&[
        (dir, "TURN 3: carry on", Some(&alpha)),
        (dir, "TURN 3: carry on", Some(&beta)),
    ]);
    let log = sc.log();
    for (lane, own, other, label) in [
        ("alpha", "src/alpha.rs", "src/beta.rs", "a3.text"),
        ("beta", "src/beta.rs", "src/alpha.rs", "b3.text"),
    ] {
        let prompt = prompt_in(log.answered_with(label));
        println!("--- the resume prompt {lane} got ---\n{prompt}");
        let reload = section(&prompt, "### Context to Reload")
            .unwrap_or_else(|| panic!("{lane}: no Context to Reload:\n{prompt}"));
        assert!(reload.contains(&format!("`{own}`")), "{lane}:\n{prompt}");
        assert!(!reload.contains(other), "{lane} reloads {other}:\n{prompt}");
        if let Some(changes) = section(&prompt, "### Recent Changes") {
            assert!(!changes.contains(other), "{lane} claims {other}:\n{prompt}");
        }
        for own in [".claude/settings.json", ".claude/commands/"] {
            assert!(
                !prompt.contains(own),
                "{lane}: hookd's own {own}:\n{prompt}"
            );
        }
        let objective = prompt
            .lines()
            .find(|l| l.contains("**Objective**"))
            .unwrap_or_else(|| panic!("{lane}: no objective:\n{prompt}"));
        assert!(objective.contains(&format!("LANE-{lane}")), "{objective}");
        let other_lane = if lane == "alpha" {
            "LANE-beta"
        } else {
            "LANE-alpha"
        };
        assert!(!prompt.contains(other_lane), "{lane}:\n{prompt}");
        if lane == "alpha" {
            insta::assert_snapshot!("resume_prompt_two_sessions_alpha", redact(&prompt, &sc));
        }
    }
}

/// Claude Code started in `pkg/sub` of the repository: hookd keeps one
/// `.workflow/` at the work tree's root, finds the files to reload, and
/// writes every path from the directory the agent works in.
#[test]
fn a_session_started_in_a_subdirectory() {
    let Some(mut sc) = Scenario::builder("resume-subdirectory")
        .replies(vec![
            write(
                "s1.write",
                30_000,
                "pkg/sub/notes/jwt_design.md",
                "# JWT\n\nHS256 access tokens.\n",
            ),
            Reply::bash(
                "s1.append",
                32_000,
                "printf '15 minute expiry.\\n' >> notes/jwt_design.md",
            ),
            Reply::text("s1.text", 32_100, "The note is written."),
            Reply::text("s3.text", 5_000, "Back to the note."),
        ])
        .start()
    else {
        return;
    };
    // Claude Code reads project settings from the directory it starts in
    // only: hookd is wired for the user, as a person working in
    // subdirectories wires it.
    let wired = sc.hookctl(&["install", "claude-code"]);
    assert!(wired.status.success(), "{wired:?}");
    let sub = sc.project.join("pkg/sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("README.md"), "# sub\n").unwrap();
    sc.git(&["add", "-A", "pkg"]);
    sc.git(&["commit", "-q", "-m", "a package"]);

    let first = sc.claude_in(&sub, "TURN 1: write the JWT design note", None);
    let sid = first.session_id.clone();
    sc.claude_in(&sub, "/compact keep the note", Some(&sid));
    sc.claude_in(&sub, "TURN 3: carry on", Some(&sid));

    assert!(
        sc.project.join(".workflow/context_state.json").exists(),
        "the state at the work tree's root"
    );
    assert!(
        !sub.join(".workflow").exists(),
        "no .workflow/ in the subdirectory"
    );
    let log = sc.log();
    let prompt = prompt_in(log.answered_with("s3.text"));
    println!("--- the resume prompt the model got (subdirectory) ---\n{prompt}");
    let reload = section(&prompt, "### Context to Reload")
        .unwrap_or_else(|| panic!("no Context to Reload:\n{prompt}"));
    assert!(reload.contains("`notes/jwt_design.md`"), "{prompt}");
    assert!(
        !prompt.contains("pkg/sub/notes"),
        "one path base, the agent's directory:\n{prompt}"
    );
    let change = section(&prompt, "### Recent Changes")
        .and_then(|s| s.lines().find(|l| l.contains("`notes/jwt_design.md`")))
        .unwrap_or_else(|| panic!("the note among the changes:\n{prompt}"));
    assert!(change.contains("by the agent"), "{change}");
    insta::assert_snapshot!("resume_prompt_subdirectory", redact(&prompt, &sc));
}

const FIRST_SUMMARY: &str = "<summary>
E2E_FIRST_SUMMARY: the parser module exists.

```hookd-state
constraints:
  - keep the public API stable
next_actions:
  - {action: write, target: the line parser in src/parser.rs, priority: 1, context_needed: [src/parser.rs]}
```
</summary>";

const SECOND_SUMMARY: &str = "<summary>
E2E_SECOND_SUMMARY: parse_line is written.

```hookd-state
next_actions:
  - {action: test, target: parse_line, priority: 1, context_needed: [src/parser.rs]}
```
</summary>";

/// Two compactions in one session. A level crossed on the first run's last
/// reply is not carried past the first compaction; each compaction's first
/// request holds one resume prompt, the second one's with the second
/// summary's next action first and the constraint from the first summary
/// still in force.
#[test]
fn two_compactions_in_one_session() {
    let Some(mut sc) = Scenario::builder("resume-twice")
        .replies(vec![
            write("r1.write", 30_000, "src/parser.rs", "pub fn parse() {}\n"),
            Reply::text("r1.text", 125_500, "The parser module exists."),
            Reply::bash(
                "r3.edit",
                6_000,
                "printf 'pub fn parse_line() {}\\n' >> src/parser.rs",
            ),
            Reply::text("r3.text", 7_000, "parse_line is written."),
            Reply::text("r5.text", 5_000, "Testing parse_line next."),
        ])
        .summaries(&[(FIRST_SUMMARY, 4_000), (SECOND_SUMMARY, 4_000)])
        .start()
    else {
        return;
    };
    let first = sc.start_session("TURN 1: start the parser. Keep the public API stable.");
    let sid = first.session_id.clone();
    // The last reply crossed 70%: the level fired between hooks, its words
    // waiting for a hook that can carry them.
    assert!(
        wait_until(Duration::from_secs(10), || sc
            .events("threshold")
            .iter()
            .any(|e| e["level"] == 0.7)),
        "threshold events: {:?}",
        sc.events("threshold")
    );
    sc.compact(&sid, "first");
    sc.resume(&sid, "TURN 3: go on");
    let log = sc.log();
    let after_first = log.answered_with("r3.edit");
    let first_prompt = prompt_in(after_first);
    assert!(
        !after_first.contains("Context at 70%"),
        "a warning from before the compaction reached the model after it:\n{}",
        after_first.text()
    );
    assert!(next_actions(&first_prompt)[0].contains("the line parser"));

    sc.compact(&sid, "second");
    sc.resume(&sid, "TURN 5: go on");
    let log = sc.log();
    let after_second = log.answered_with("r5.text");
    let prompt = prompt_in(after_second);
    println!("--- the resume prompt after the second compaction ---\n{prompt}");
    assert!(!after_second.contains("Context at 70%"));
    assert_eq!(sc.session(&sid)["epoch"], 3);
    let actions = next_actions(&prompt);
    assert!(actions[0].contains("parse_line"), "{actions:#?}");
    let stopped = section(&prompt, "### Where You Stopped").expect("Where You Stopped");
    assert!(
        stopped.contains("keep the public API stable"),
        "the constraint carried across the second compaction:\n{prompt}"
    );
    insta::assert_snapshot!("resume_prompt_second_compaction", redact(&prompt, &sc));
}
