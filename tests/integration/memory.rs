//! Cross-task memory: reflections recorded on one task reach the next
//! similar one at its start, unrelated tasks get nothing, and resume
//! prompts keep exactly Ω reflections. The real daemon in-process, driven
//! through the real hookctl, with transcripts in Claude Code's format.

use hookd_tests::{
    HookAnswer, Sandbox, Scenario, ScenarioBuilder, TestEvent, Transcript, output_text, stderr,
    stdout,
};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::Instant;

/// Sessions of one repository and their memory: each step runs a hook of
/// the session named, or hookctl as its agent would.
struct Env {
    s: Scenario,
}

impl Env {
    fn new() -> Env {
        Env::with_project_config(None)
    }

    fn with_project_config(config: Option<&str>) -> Env {
        // Lessons are what these tests look for in SessionStart's answer.
        let s = Scenario::build()
            .setting("resume.records_hint", false)
            .repository(|repo| {
                repo.write("src/lib.rs", "pub fn a() {}\n");
                repo.commit_all("initial");
                if let Some(text) = config {
                    repo.write(".hookd.yaml", text);
                }
            })
            .start();
        Env { s }
    }

    /// The daemon starts on a sandbox the test has prepared.
    fn started(sb: Sandbox) -> Env {
        let s = ScenarioBuilder::in_sandbox(sb)
            .setting("resume.records_hint", false)
            .repository(|_| {})
            .start();
        Env { s }
    }

    fn session(&self, id: &str) -> Transcript {
        self.s.session(id)
    }

    fn start(&self, t: &Transcript) -> HookAnswer {
        self.s
            .hook_of(t, "SessionStart(source=startup)", "session-start", |_| {})
    }

    /// The person types `text`: the transcript holds it, then the hook runs.
    fn prompt(&self, t: &Transcript, text: &str) -> HookAnswer {
        t.prompt(text);
        self.s
            .hook_of(t, "UserPromptSubmit", "user-prompt-submit", |p| {
                p["prompt"] = Value::from(text)
            })
    }

    fn stop(&self, t: &Transcript) {
        self.s.hook_of(t, "Stop", "stop", |_| {});
    }

    fn end(&self, t: &Transcript) {
        self.s
            .hook_of(t, "SessionEnd(reason=other)", "session-end", |_| {});
    }

    fn compact(&self, t: &Transcript) -> String {
        context(&self.s.compact_of(t, 120_000, 3_000))
    }

    /// `hookctl ARGS` in the project, as the agent of `session` would run it.
    fn hookctl(&self, session: Option<&str>, args: &[&str]) -> Output {
        let mut cmd = self.s.sb.command("hookctl");
        cmd.arg("--project").arg(&self.s.project).args(args);
        if let Some(id) = session {
            cmd.env("CLAUDE_CODE_SESSION_ID", id);
        }
        cmd.output().expect("run hookctl")
    }

    fn ok(&self, session: Option<&str>, args: &[&str]) -> String {
        let out = self.hookctl(session, args);
        assert!(
            out.status.success(),
            "hookctl {args:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    fn json(&self, session: Option<&str>, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_str(&self.ok(session, &args)).expect("JSON output")
    }

    fn tasks(&self) -> Vec<Value> {
        self.json(None, &["memory", "list"])["tasks"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The stored task with this description, once it has closed.
    fn closed(&self, description: &str) -> Value {
        let mut found = Value::Null;
        let what = format!("{description:?} to close");
        self.s
            .sb
            .wait_until_after(TestEvent::MemoryDone, &what, || {
                found = self
                    .tasks()
                    .into_iter()
                    .find(|t| t["task_description"] == description && t["closed"] == true)
                    .unwrap_or(Value::Null);
                !found.is_null()
            });
        found
    }

    /// Waits until the task's close on `on` (`stop`, `session-end`) is recorded.
    fn closed_on(&self, task_id: &str, on: &str) {
        let what = format!("the close of {task_id} on {on}");
        self.s
            .sb
            .wait_until_after(TestEvent::MemoryDone, &what, || {
                self.memory_events()
                    .iter()
                    .any(|e| e["action"] == "close" && e["task_id"] == task_id && e["on"] == on)
            });
    }

    fn memory_events(&self) -> Vec<Value> {
        self.s.events("memory")
    }

    /// `text` normalized for a snapshot, these tasks' ids (whole or the
    /// first 8 characters shown) as `[TASK]`.
    fn normalize(&self, text: &str, task_ids: &[&str]) -> String {
        task_ids
            .iter()
            .fold(self.s.normalizer(), |n, id| {
                // The whole id first: `with` puts each new one ahead.
                n.with(&id[..8], "[TASK]").with(*id, "[TASK]")
            })
            .normalize(text)
    }
}

/// The section of a resume prompt that keeps this task's reflections.
fn reflections_section(prompt: &str) -> String {
    let start = prompt
        .find("#### Reflections on This Task")
        .unwrap_or_else(|| panic!("no window in:\n{prompt}"));
    prompt[start..]
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

use hookd_tests::additional_context as context;

fn todos(t: &mut Transcript, items: &[(&str, &str)]) {
    let items: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|&(content, status)| (content, status, content))
        .collect();
    let id = format!("tw-{}", t.tool_use_id());
    t.todo_write(&id, &items, 20_000);
}

/// Session A works on the flaky login test, learns two things, and ends.
fn session_a(env: &Env) -> Transcript {
    let mut a = env.session("aaaa-login");
    assert_eq!(
        env.start(&a),
        Value::Null,
        "nothing is known about the task yet"
    );
    assert_eq!(
        env.prompt(&a, "fix the flaky login test"),
        Value::Null,
        "the memory is empty"
    );
    let out = env.ok(
        Some("aaaa-login"),
        &[
            "reflect",
            "Mocking the clock fixed the flakiness",
            "--type",
            "success_pattern",
        ],
    );
    let task = env.tasks()[0]["task_id"].as_str().unwrap().to_owned();
    insta::assert_snapshot!(env.normalize(&out, &[&task]), @r#"
        recorded a reflection (what worked) on task [TASK] ("fix the flaky login test", debugging), before any compaction
        1 reflection in all; resume prompts keep the last 3
    "#);
    // A decision the next capture turns into a reflection.
    env.ok(
        Some("aaaa-login"),
        &[
            "decision",
            "Waits",
            "wait for network idle instead of sleeping",
            "--why",
            "sleeps race with the spinner",
        ],
    );
    todos(
        &mut a,
        &[
            ("Reproduce the flake", "completed"),
            ("Fix the login test", "completed"),
        ],
    );
    env.ok(
        None,
        &["save", "--session", "aaaa-login", "--no-checkpoint"],
    );
    env.stop(&a);
    env.end(&a);
    a
}

#[test]
fn a_similar_task_gets_the_first_ones_learnings_and_an_unrelated_one_nothing() {
    let env = Env::new();
    session_a(&env);
    let a = env.closed("fix the flaky login test");
    assert_eq!(a["outcome"], "success");
    assert_eq!(a["task_type"], "debugging");
    assert_eq!(a["reflections"], 2, "{a:#}");
    let shown = env.json(None, &["memory", "show", a["task_id"].as_str().unwrap()]);
    let learnings: Vec<&str> = shown["task"]["key_learnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        learnings,
        vec![
            "Worked: Mocking the clock fixed the flakiness",
            "Worked: Waits: wait for network idle instead of sleeping (because sleeps race with the spinner)"
        ]
    );
    assert_eq!(shown["task"]["outcome_source"], "2 of 2 tasks completed");

    // B: described before it starts, as a person would from a terminal.
    let out = env.ok(None, &["task", "start", "fix the flaky signup test"]);
    let tasks = env.tasks();
    let b_task = tasks
        .iter()
        .find(|t| t["task_description"] == "fix the flaky signup test")
        .and_then(|t| t["task_id"].as_str())
        .expect("the task started");
    insta::assert_snapshot!(env.normalize(&out, &[b_task]), @r#"
        task [TASK]: "fix the flaky signup test", debugging
        resume prompts keep its last 3 reflections (config memory.window)
        lessons from similar past tasks: on
        no live agent session in [TEMP]/proj: the next session there takes this task up
    "#);
    let b = env.session("bbbb-signup");
    let lessons = context(&env.start(&b));
    insta::assert_snapshot!(env.normalize(&lessons, &[]), @r#"
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (debugging, success, 0 compactions, [DATE]; similarity 52%; project [TEMP]/proj)
        - Worked: Mocking the clock fixed the flakiness (from [TEMP]/proj)
        - Worked: Waits: wait for network idle instead of sleeping (because sleeps race with the spinner) (from [TEMP]/proj)
    "#);
    // Its first prompt describes nothing new: no second hand-over.
    assert_eq!(env.prompt(&b, "go ahead with the signup test"), Value::Null);

    // C: unrelated work, described by its first prompt: nothing.
    let c = env.session("cccc-notes");
    assert_eq!(env.start(&c), Value::Null);
    assert_eq!(env.prompt(&c, "write the release notes"), Value::Null);

    // D: similar work, described by its first prompt: the lessons come with it.
    let d = env.session("dddd-checkout");
    env.start(&d);
    let lessons = context(&env.prompt(&d, "the checkout test fails intermittently, fix it"));
    insta::assert_snapshot!(env.normalize(&lessons, &[]), @r#"
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("the checkout test fails intermittently, fix it"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (debugging, success, 0 compactions, [DATE]; similarity 38%; project [TEMP]/proj)
        - Worked: Mocking the clock fixed the flakiness (from [TEMP]/proj)
        - Worked: Waits: wait for network idle instead of sleeping (because sleeps race with the spinner) (from [TEMP]/proj)
    "#);
    assert!(
        !lessons.contains("fix the flaky signup test"),
        "B has nothing to teach yet:\n{lessons}"
    );

    // The hook answers with the lessons; their record follows it.
    let retrievals = || -> Vec<(String, usize)> {
        env.memory_events()
            .iter()
            .filter(|e| e["action"] == "retrieve")
            .map(|e| {
                (
                    e["description"].as_str().unwrap().to_owned(),
                    e["found"].as_array().unwrap().len(),
                )
            })
            .collect()
    };
    env.s
        .sb
        .wait_until_after(TestEvent::MemoryDone, "four retrievals recorded", || {
            retrievals().len() == 4
        });
    assert_eq!(
        retrievals(),
        vec![
            ("fix the flaky login test".to_owned(), 0),
            ("fix the flaky signup test".to_owned(), 1),
            ("write the release notes".to_owned(), 0),
            (
                "the checkout test fails intermittently, fix it".to_owned(),
                1
            ),
        ]
    );
    let stats = env.json(None, &["memory", "stats"]);
    assert_eq!(stats["cross_task_retrieval_count"], 2);
    assert_eq!(stats["retrievals_empty"], 2);
    assert_eq!(stats["tasks_injected"], 2);
    assert_eq!(stats["retrieved_success_rate"], 1.0);
    assert_eq!(stats["tasks"], 4);
}

#[test]
fn the_resume_prompt_keeps_exactly_omega_reflections() {
    let env = Env::new();
    let mut t = env.session("omega-1");
    env.start(&t);
    env.prompt(&t, "make the parser faster");
    todos(&mut t, &[("Profile the parser", "in_progress")]);
    for i in 1..=6 {
        env.ok(
            Some("omega-1"),
            &["reflect", &format!("lesson number {i} about the parser")],
        );
    }
    let window = |prompt: &str| -> Vec<String> {
        let start = prompt
            .find("#### Reflections on This Task")
            .unwrap_or_else(|| panic!("no window in:\n{prompt}"));
        prompt[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("- ["))
            .map(str::to_owned)
            .collect()
    };
    let numbers = |lines: &[String]| -> Vec<u32> {
        lines
            .iter()
            .map(|l| {
                let n = l.split("lesson number ").nth(1).unwrap();
                n.split(' ').next().unwrap().parse().unwrap()
            })
            .collect()
    };

    // The default Ω: 3.
    let prompt = env.compact(&t);
    insta::assert_snapshot!(reflections_section(&prompt), @r#"
        #### Reflections on This Task (the last 3 of 6)
        - [a change of approach, before any compaction] lesson number 4 about the parser
        - [a change of approach, before any compaction] lesson number 5 about the parser
        - [a change of approach, before any compaction] lesson number 6 about the parser
    "#);
    // The file PreCompact wrote has the same window.
    let file = std::fs::read_to_string(env.s.project.join(".workflow/resume_prompt.md")).unwrap();
    assert_eq!(numbers(&window(&file)), vec![4, 5, 6]);

    // Ω from the project's configuration, by preset name.
    env.s
        .repo()
        .write(".hookd.yaml", "memory:\n  window: simple\n");
    env.ok(
        Some("omega-1"),
        &["reflect", "lesson number 7 about the parser"],
    );
    // After one compaction: iteration 2.
    let prompt = env.compact(&t);
    insta::assert_snapshot!(reflections_section(&prompt), @r#"
        #### Reflections on This Task (the last 1 of 7)
        - [a change of approach, after 1 compaction] lesson number 7 about the parser
    "#);

    // Ω for this task, from the command line: it wins over the configuration.
    let out = env.ok(
        Some("omega-1"),
        &["task", "start", "make the parser faster", "--memory", "5"],
    );
    let task = env.json(Some("omega-1"), &["task", "show"]);
    let id = task["task"]["task_id"].as_str().unwrap();
    insta::assert_snapshot!(env.normalize(&out, &[id]), @r#"
        task [TASK]: "make the parser faster", implementation
        resume prompts keep its last 5 reflections (hookctl task start --memory)
        lessons from similar past tasks: on
    "#);
    let prompt = env.compact(&t);
    assert_eq!(numbers(&window(&prompt)), vec![3, 4, 5, 6, 7]);

    // Every reflection stays on disk.
    let task = env.json(Some("omega-1"), &["task", "show"]);
    assert_eq!(task["task"]["reflections"].as_array().unwrap().len(), 7);
    assert_eq!(task["task"]["iterations"], 3);
    assert_eq!(task["window"], 5);
    let stats = env.json(None, &["memory", "stats"]);
    assert_eq!(stats["reflections_injected"], 3 + 1 + 5, "{stats:#}");
}

#[test]
fn captures_turn_decisions_and_blockers_into_reflections_once() {
    let env = Env::new();
    let t = env.session("capture-1");
    env.start(&t);
    env.prompt(&t, "migrate the users table to Postgres 16");
    let id = Some("capture-1");
    env.ok(id, &["decision", "Locks", "copy in batches of 10k rows"]);
    env.ok(id, &["blocker", "the migration fails on duplicate emails"]);
    env.ok(id, &["blocker", "ops must approve downtime windows"]);
    env.ok(None, &["save", "--session", "capture-1", "--no-checkpoint"]);
    env.ok(None, &["save", "--session", "capture-1", "--no-checkpoint"]);
    let kinds = |task: &Value| -> Vec<(String, u64)> {
        task["task"]["reflections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["type"].as_str().unwrap().to_owned(),
                    r["iteration"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let task = env.json(id, &["task", "show"]);
    assert_eq!(task["task"]["task_type"], "architecture");
    assert_eq!(
        kinds(&task),
        vec![
            ("strategy_change".to_owned(), 1),
            ("error_analysis".to_owned(), 1),
            ("constraint_discovery".to_owned(), 1),
        ],
        "a second save adds nothing"
    );
    // The compaction ends iteration 1; what is resolved after it is iteration 2.
    env.compact(&t);
    env.ok(
        id,
        &[
            "blocker",
            "the migration fails on duplicate emails",
            "--status",
            "resolved",
            "--notes",
            "dedupe first",
        ],
    );
    env.ok(None, &["save", "--session", "capture-1", "--no-checkpoint"]);
    let task = env.json(id, &["task", "show"]);
    assert_eq!(kinds(&task).len(), 4);
    assert_eq!(kinds(&task)[3], ("success_pattern".to_owned(), 2));
    assert_eq!(
        task["task"]["reflections"][3]["content"],
        "resolved the migration fails on duplicate emails: dedupe first"
    );
    assert_eq!(task["task"]["iterations"], 1);
}

#[test]
fn outcomes_come_from_the_task_list_unless_given_by_hand() {
    let env = Env::new();
    // Some of the list done: partial.
    let mut p = env.session("outcome-partial");
    env.start(&p);
    env.prompt(&p, "add OAuth login with GitHub");
    todos(
        &mut p,
        &[
            ("Register the app", "completed"),
            ("Handle the callback", "in_progress"),
        ],
    );
    env.stop(&p);
    let task = env.closed("add OAuth login with GitHub");
    assert_eq!(task["outcome"], "partial");

    // Given by hand: it wins over a finished list.
    let mut f = env.session("outcome-failed");
    env.start(&f);
    env.prompt(&f, "speed up the CSV export for big reports");
    env.ok(
        Some("outcome-failed"),
        &[
            "reflect",
            "streaming rows did not help; the query is the cost",
        ],
    );
    let out = env.ok(Some("outcome-failed"), &["task", "failed"]);
    let task = env.json(Some("outcome-failed"), &["task", "show"]);
    let id = task["task"]["task_id"].as_str().unwrap();
    insta::assert_snapshot!(env.normalize(&out, &[id]), @r#"
        task [TASK] ("speed up the CSV export for big reports", implementation) closed: failure
        key learnings:
          - Did not work: streaming rows did not help; the query is the cost
    "#);
    todos(&mut f, &[("Stream the rows", "completed")]);
    env.stop(&f);
    env.end(&f);
    let task = env.closed("speed up the CSV export for big reports");
    env.closed_on(task["task_id"].as_str().unwrap(), "session-end");
    let task = env.closed("speed up the CSV export for big reports");
    assert_eq!(task["outcome"], "failure");
    let shown = env.json(None, &["memory", "show", task["task_id"].as_str().unwrap()]);
    assert_eq!(shown["task"]["outcome_source"], "hookctl task failed");
    assert_eq!(
        shown["task"]["reflections"][0]["effectiveness"],
        "unhelpful"
    );

    // No task list and nothing said: unknown. A session that never said what it
    // was doing leaves nothing behind.
    let u = env.session("outcome-unknown");
    env.start(&u);
    env.prompt(&u, "rename the config keys to snake_case");
    env.end(&u);
    let task = env.closed("rename the config keys to snake_case");
    assert_eq!(task["outcome"], Value::Null);
    let quiet = env.session("outcome-quiet");
    env.start(&quiet);
    env.prompt(&quiet, "hi");
    env.end(&quiet);
    assert_eq!(env.tasks().len(), 3, "{:#?}", env.tasks());
}

#[test]
fn cross_task_lessons_can_be_turned_off() {
    let env = Env::new();
    session_a(&env);
    env.closed("fix the flaky login test");
    // For one task.
    env.ok(
        None,
        &[
            "task",
            "start",
            "fix the flaky signup test",
            "--no-cross-task",
        ],
    );
    let b = env.session("nocross-b");
    assert_eq!(env.start(&b), Value::Null);
    // For the project.
    env.s
        .repo()
        .write(".hookd.yaml", "memory:\n  cross_task: false\n");
    let c = env.session("nocross-c");
    env.start(&c);
    assert_eq!(env.prompt(&c, "fix the flaky checkout test"), Value::Null);
    let stats = env.json(None, &["memory", "stats"]);
    assert_eq!(stats["cross_task_retrieval_count"], 0, "{stats:#}");
}

#[test]
fn the_memory_commands_list_search_show_and_forget() {
    let env = Env::new();
    session_a(&env);
    let a = env.closed("fix the flaky login test");
    let id = a["task_id"].as_str().unwrap();
    // Each column is named, and the short ones explained.
    let list = env.ok(None, &["memory", "list"]);
    insta::assert_snapshot!(env.normalize(&list, &[id]), @r#"
        task      changed     outcome  type           cmp ref  description
        [TASK]  [DATE]  success  debugging        0   2  fix the flaky login test
        (cmp: compactions during the task; ref: its reflections)
    "#);
    let search = env.ok(None, &["memory", "search", "flaky signup test"]);
    insta::assert_snapshot!(env.normalize(&search, &[id]), @r#"
        score  task      changed     outcome  type           cmp ref  description
        0.36★  [TASK]  [DATE]  success  debugging        0   2  fix the flaky login test
        (cmp: compactions during the task; ref: its reflections)
        (★: at or above the similarity threshold, 0.30)
    "#);
    let found = env.json(None, &["memory", "search", "write the release notes"]);
    assert_eq!(found["tasks"].as_array().unwrap().len(), 0, "{found:#}");
    let shown = env.ok(None, &["memory", "show", &id[..8]]);
    insta::assert_snapshot!(env.normalize(&shown, &[id]), @r#"
        task [TASK]
          description: "fix the flaky login test", debugging
          described by: first prompt
          began: [TIME]
          project: [TEMP]/proj
          session: claude-code:aaaa-login
          compactions: 0
          state: closed [TIME]: success
          outcome from: 2 of 2 tasks completed
          resume prompts keep its last 3 reflections (config memory.window); lessons from similar tasks: on
          reflections: 2 (the last 2 go into resume prompts)
           ▸ [what worked, before any compaction, helpful] Mocking the clock fixed the flakiness
           ▸ [a change of approach, before any compaction, helpful] Waits: wait for network idle instead of sleeping (because sleeps race with the spinner)
          key learnings:
            - Worked: Mocking the clock fixed the flakiness
            - Worked: Waits: wait for network idle instead of sleeping (because sleeps race with the spinner)
    "#);
    let stats = env.ok(None, &["memory", "stats"]);
    insta::assert_snapshot!(env.normalize(&stats, &[id]), @r#"
        memory: [TEMP]/data/memory
        tasks: 1 (0 open), reflections: 2 (2 helpful, 0 neutral, 0 unhelpful)
        cross-task retrievals: 0 handed lessons over, 1 found nothing similar
        handed over: 0 past tasks, 0 lessons; 0 reflections of current tasks in resume prompts
        reflections kept per resume prompt, on average: 3.0
        closed tasks with lessons: 0 tasks
        closed tasks without:      1 task, 100% succeeded, 0.0 compactions on average
    "#);
    let out = env.ok(None, &["memory", "forget", &id[..8]]);
    insta::assert_snapshot!(env.normalize(&out, &[id]), @r#"forgot task [TASK] ("fix the flaky login test")"#);
    assert!(env.tasks().is_empty());
    assert!(
        !env.s
            .sb
            .memory_dir()
            .join(format!("tasks/{id}.json"))
            .exists()
    );
    let out = env.hookctl(None, &["memory", "show", id]);
    insta::assert_snapshot!(env.normalize(&output_text(&out), &[id]), @r#"
        --- stderr
        hookctl: hookd answered: no stored task has an id starting with [TASK]
        --- exit 1
    "#);
    // No session and no open task.
    let out = env.hookctl(None, &["reflect", "anything"]);
    insta::assert_snapshot!(env.normalize(&output_text(&out), &[id]), @r#"
        --- stderr
        hookctl: hookd answered: no agent session or open task in [TEMP]/proj: run this from the agent's session, or describe the task first with `hookctl task start "…"`
        --- exit 1
    "#);
}

/// Writes a task record and its index line as hookd does.
fn store_task(
    dir: &Path,
    index: &mut String,
    id: &str,
    description: &str,
    learnings: &[&str],
    updated_ms: u64,
) {
    let record = json!({
        "task_id": id,
        "task_description": description,
        "task_type": "implementation",
        "timestamp": "2026-11-01T10:00:00Z",
        "outcome": "success",
        "iterations": 1,
        "reflections": learnings.iter().map(|l| json!({"iteration": 1, "content": l, "type": "success_pattern", "effectiveness": "helpful", "origin": "records.jsonl"})).collect::<Vec<_>>(),
        "key_learnings": learnings.iter().map(|l| format!("Worked: {l}")).collect::<Vec<_>>(),
        "tags": ["implementation", "other"],
        "updated_at": "2026-11-01T10:00:00Z",
        "closed_at": "2026-11-01T10:00:00Z",
    });
    std::fs::write(dir.join(format!("tasks/{id}.json")), record.to_string()).unwrap();
    let entry = json!({
        "task_id": id,
        "task_description": description,
        "task_type": "implementation",
        "timestamp": "2026-11-01T10:00:00Z",
        "updated_ms": updated_ms,
        "outcome": "success",
        "iterations": 1,
        "tags": ["implementation", "other"],
        "key_learnings": record["key_learnings"],
        "closed": true,
        "reflections": learnings.len(),
        "helpful": learnings.len(),
        "window": 3,
    });
    index.push_str(&entry.to_string());
    index.push('\n');
}

fn uuid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn unreadable_memory_files_are_skipped_and_reported_and_hooks_go_on() {
    let sb = Sandbox::new();
    let dir = sb.memory_dir();
    std::fs::create_dir_all(dir.join("tasks")).unwrap();
    let mut index = String::new();
    store_task(
        &dir,
        &mut index,
        &uuid(1),
        "fix the flaky login test",
        &["mock the clock"],
        now_ms(),
    );
    store_task(
        &dir,
        &mut index,
        &uuid(2),
        "fix the flaky logout test",
        &["reset the session"],
        now_ms(),
    );
    index.push_str("{\"task_id\": \"torn line\n");
    index.push_str("not json at all\n");
    std::fs::write(dir.join("index.jsonl"), index).unwrap();
    std::fs::write(
        dir.join(format!("tasks/{}.json", uuid(2))),
        b"{\"task_id\": 12",
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("tasks/{}.json", uuid(3))),
        b"\xff\xfe garbage",
    )
    .unwrap();
    let env = Env::started(sb);

    // The hook works, and still hands over what could be read.
    env.ok(None, &["task", "start", "fix the flaky signup test"]);
    let t = env.session("after-corruption");
    let lessons = context(&env.start(&t));
    insta::assert_snapshot!(env.normalize(&lessons, &[]), @r#"
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 41%)
        - Worked: mock the clock
    "#);
    let list = env.json(None, &["memory", "list"]);
    let problems: String = list["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}\n", p.as_str().unwrap()))
        .collect();
    insta::assert_snapshot!(env.normalize(&problems, &[]), @r#"
        [TEMP]/data/memory/index.jsonl line 3 is corrupt (EOF while parsing a string at line 1 column 22); skipped
        [TEMP]/data/memory/index.jsonl line 4 is corrupt (expected ident at line 1 column 2); skipped
        [TEMP]/data/memory/tasks/00000000-0000-4000-8000-000000000003.json is corrupt (line 1, column 1: expected value at line 1 column 1); skipped
        [TEMP]/data/memory/tasks/00000000-0000-4000-8000-000000000002.json is corrupt (line 1, column 14: invalid type: integer `12`, expected a string at line 1 column 14); skipped
    "#);
    // A record the index names but that cannot be read: reported when needed.
    let out = env.hookctl(None, &["memory", "show", &uuid(2)]);
    insta::assert_snapshot!(env.normalize(&output_text(&out), &[]), @r#"
        --- stderr
        hookctl: hookd answered: [TEMP]/data/memory/tasks/00000000-0000-4000-8000-000000000002.json is corrupt (line 1, column 14: invalid type: integer `12`, expected a string at line 1 column 14); skipped
        --- exit 1
    "#);
    let out = env.hookctl(None, &["memory", "stats"]);
    insta::assert_snapshot!(env.normalize(&output_text(&out), &[]), @r#"
        memory: [TEMP]/data/memory
        tasks: 3 (1 open), reflections: 2 (2 helpful, 0 neutral, 0 unhelpful)
        cross-task retrievals: 1 handed lessons over, 0 found nothing similar
        handed over: 1 past task, 1 lesson; 0 reflections of current tasks in resume prompts
        past tasks handed over had succeeded: 100%
        reflections kept per resume prompt, on average: 3.0
        closed tasks with lessons: 0 tasks
        closed tasks without:      2 tasks, 100% succeeded, 1.0 compactions on average
        --- stderr
        problem: [TEMP]/data/memory/index.jsonl line 3 is corrupt (EOF while parsing a string at line 1 column 22); skipped
        problem: [TEMP]/data/memory/index.jsonl line 4 is corrupt (expected ident at line 1 column 2); skipped
        problem: [TEMP]/data/memory/tasks/00000000-0000-4000-8000-000000000003.json is corrupt (line 1, column 1: expected value at line 1 column 1); skipped
        problem: [TEMP]/data/memory/tasks/00000000-0000-4000-8000-000000000002.json is corrupt (line 1, column 14: invalid type: integer `12`, expected a string at line 1 column 14); skipped
    "#);
}

/// The closing figure: retrieval among 10,000 stored tasks, end to end (the
/// daemon loads the memory at the first hook that needs it). Not a timed
/// assertion; the figures are printed (`--nocapture`).
#[test]
fn retrieval_among_ten_thousand_tasks() {
    const TASKS: u64 = 10_000;
    let verbs = [
        "add", "refactor", "document", "update", "remove", "migrate", "review", "rename", "design",
    ];
    let objects = [
        "the parser",
        "the config loader",
        "the payment webhook",
        "the search index",
        "the CLI flags",
        "the user profile page",
        "the cache layer",
        "the email sender",
        "the upload handler",
        "the rate limiter",
        "the session store",
        "the metrics exporter",
        "the image resizer",
        "the audit log",
        "the feature flags",
        "the GraphQL schema",
        "the docker image",
        "the onboarding wizard",
        "the invoice generator",
        "the retry policy",
    ];
    let details = [
        "for large inputs",
        "on Windows",
        "after the upgrade",
        "in staging",
        "for admins",
        "with pagination",
        "under load",
        "for the mobile app",
        "without downtime",
        "behind the proxy",
    ];
    let sb = Sandbox::new();
    let dir = sb.memory_dir();
    std::fs::create_dir_all(dir.join("tasks")).unwrap();
    let mut index = String::new();
    let now = now_ms();
    let generating = Instant::now();
    for n in 0..TASKS {
        let i = n as usize;
        let description = format!(
            "{} {} {}",
            verbs[i % verbs.len()],
            objects[(i / verbs.len()) % objects.len()],
            details[(i / 7) % details.len()]
        );
        store_task(
            &dir,
            &mut index,
            &uuid(n + 10),
            &description,
            &["kept the change small"],
            now - n,
        );
    }
    store_task(
        &dir,
        &mut index,
        &uuid(1),
        "fix the flaky login test",
        &["mock the clock"],
        now,
    );
    std::fs::write(dir.join("index.jsonl"), &index).unwrap();
    println!(
        "generated {} tasks ({} KiB of index) in {:?}",
        TASKS + 1,
        index.len() / 1024,
        generating.elapsed()
    );
    let env = Env::started(sb);

    let first = Instant::now();
    let listed = env.json(None, &["memory", "stats"]);
    println!("first request (loads the memory): {:?}", first.elapsed());
    assert_eq!(listed["tasks"], TASKS + 1);
    let mut hooks = Vec::new();
    let mut said = String::new();
    for i in 0..5 {
        let t = env.session(&format!("scale-{i}"));
        env.start(&t);
        let started = Instant::now();
        let lessons = context(&env.prompt(&t, "fix the flaky signup test"));
        hooks.push(started.elapsed());
        said += &format!("--- session {i}\n{}\n", env.normalize(&lessons, &[]));
    }
    // The one related task, and nothing of the 10,000 unrelated ones.
    insta::assert_snapshot!(said, @r#"
        --- session 0
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 59%)
        - Worked: mock the clock

        --- session 1
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 59%)
        - Worked: mock the clock

        --- session 2
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 58%)
        - Worked: mock the clock

        --- session 3
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 58%)
        - Worked: mock the clock

        --- session 4
        ## Lessons From Similar Past Tasks

        hookd's cross-task memory holds earlier tasks like this one ("fix the flaky signup test"). What they taught is below: use what fits; it is advice from past sessions, not an instruction.

        **fix the flaky login test** (implementation, success, 1 compaction, [DATE]; similarity 58%)
        - Worked: mock the clock
    "#);
    println!(
        "UserPromptSubmit with retrieval among {} tasks, through hookctl: {hooks:?}",
        TASKS + 1
    );
    let searching = Instant::now();
    let found = env.json(None, &["memory", "search", "fix the flaky signup test"]);
    println!("hookctl memory search: {:?}", searching.elapsed());
    // The five sessions above are the best matches; the stored one comes next.
    let first_other = found["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_description"] != "fix the flaky signup test")
        .unwrap();
    assert_eq!(first_other["task_id"], Value::from(uuid(1)));
}

#[test]
fn a_session_hookd_does_not_know_never_closes_another_sessions_task() {
    let env = Env::new();
    let live = env.session("live-session");
    env.start(&live);
    env.prompt(&live, "add OAuth login with GitHub");
    let out = env.hookctl(Some("typo-session"), &["task", "failed"]);
    insta::assert_snapshot!(env.normalize(&output_text(&out), &[]), @r#"
        --- stderr
        hookctl: hookd answered: no session `typo-session` is known to hookd: `hookctl status` lists the sessions it follows
        --- exit 1
    "#);
    let out = env.hookctl(Some("typo-session"), &["reflect", "nothing to say"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let tasks = env.tasks();
    assert_eq!(tasks.len(), 1, "{tasks:#?}");
    assert!(
        tasks.iter().all(|t| t["closed"] != true),
        "the live session's task was closed: {tasks:#?}"
    );
}

/// Whatever the person marks `<private>` in a prompt or a record is kept
/// nowhere: not in the saved state, the resume prompt, the records, nor the
/// memory's task records.
#[test]
fn a_private_span_leaves_no_trace() {
    let env = Env::new();
    let a = env.session("aaaa-private");
    env.start(&a);
    env.prompt(
        &a,
        "fix the flaky login test <private>my staging pin is PRIVATE-WORD-1</private> today",
    );
    env.prompt(
        &a,
        "<private>the vault phrase is PRIVATE-WORD-2</private>and also handle expired sessions in the login flow",
    );
    env.ok(
        Some("aaaa-private"),
        &[
            "note",
            "ask ops <private>PRIVATE-WORD-3</private> about the cert",
        ],
    );
    env.compact(&a);
    env.end(&a);
    env.s
        .sb
        .wait_until_after(TestEvent::MemoryDone, "the task to close", || {
            env.tasks().iter().any(|t| t["closed"] == true)
        });
    let tasks = serde_json::to_string(&env.tasks()).unwrap();
    assert!(tasks.contains("fix the flaky login test"), "{tasks}");
    let state = serde_json::to_string(&env.s.state()).unwrap();
    assert!(state.contains("fix the flaky login test"), "{state}");
    assert!(state.contains("handle expired sessions"), "{state}");
    let mut seen = vec![
        ("context_state.json".to_owned(), state),
        ("resume_prompt.md".to_owned(), env.s.resume_prompt()),
    ];
    for dir in [env.s.project.join(".workflow"), env.s.sb.memory_dir()] {
        for file in files_under(&dir) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            seen.push((file.display().to_string(), text));
        }
    }
    assert!(seen.iter().any(|(_, text)| text.contains("about the cert")));
    for (name, text) in &seen {
        assert!(
            !text.contains("PRIVATE-WORD"),
            "{name} keeps a private span:\n{text}"
        );
    }
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
