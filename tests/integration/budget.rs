//! The context budget and the resume formats: scores
//! and allocations on real repositories (this project's own tree among
//! them), summaries read with the real parsers, the budgeted section of the
//! resume prompt, and the context report.

use hookd_tests::{
    GitRepo, Sandbox, Scenario, TestDaemon, assert_valid, output_text, state_schema, stderr,
    stdout, workflow_events,
};
use serde_json::{Value, json};
use std::path::Path;

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).expect("JSON output")
}

/// The lines of `text` from the one starting `heading` to the next blank line.
fn section(text: &str, heading: &str) -> String {
    let start = text
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("no {heading} in:\n{text}"));
    text[start + 1..]
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

fn tier_files(plan: &Value, tier: &str) -> Vec<String> {
    plan["allocation"][tier]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

/// This repository's tracked files (fixtures aside), committed long ago in a new repository.
fn copy_of_this_project(dest: &Path) -> GitRepo {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    let repo = GitRepo::init(dest);
    for rel in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let rel = String::from_utf8_lossy(rel).into_owned();
        if rel.starts_with("tests/fixtures/") || !root.join(&rel).is_file() {
            continue;
        }
        let to = dest.join(&rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(&rel), to).unwrap();
    }
    repo.commit_all("this project");
    repo
}

#[test]
fn context_budget_on_this_projects_own_tree() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let repo = copy_of_this_project(&sb.path().join("hookd"));
    // Work in progress on the client, and a file git ignores.
    let client = repo.dir.join("hookctl/src/client.rs");
    let mut text = std::fs::read_to_string(&client).unwrap();
    text.push_str("\n/// Where an OAuth token for the daemon would be read.\npub fn oauth_token() -> Option<String> {\n    None\n}\n");
    std::fs::write(&client, text).unwrap();
    repo.write(".gitignore", "target/\nsecret_client.rs\n");
    repo.write("secret_client.rs", "// oauth client secrets\n");
    let dir = repo.dir.display().to_string();

    let task = "add OAuth support to the client";
    let plan = json_of(&sb.hookctl(&["--project", &dir, "context-budget", task, "--json"]));
    assert_eq!(plan["keywords"], json!(["oauth", "client"]));
    assert_eq!(
        (plan["total_budget"].as_u64(), plan["available"].as_u64()),
        (Some(100_000), Some(90_000))
    );
    let allocated: Vec<u64> = ["primary", "supporting", "reference", "history"]
        .iter()
        .map(|t| plan["allocation"][t]["allocated_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(allocated, vec![45_000, 27_000, 13_500, 4_500]);

    // The file the task is about ranks first, and the scores explain why.
    let scores = plan["scores"].as_array().unwrap();
    let first = &scores[0];
    assert_eq!(first["path"], "hookctl/src/client.rs", "{plan:#}");
    assert_eq!(first["path_matches"], json!(["client"]));
    assert_eq!(first["content_matches"], json!(["oauth", "client"]));
    assert_eq!(
        first["factors"]["recency"], 1.0,
        "changed now; the rest of the tree is old history"
    );
    assert_eq!(first["factors"]["task_alignment"], 0.7);
    assert_eq!(first["tier"], "supporting");
    assert!(
        tier_files(&plan, "supporting").contains(&"hookctl/src/client.rs".to_owned()),
        "{plan:#}"
    );
    // A file that imports it is one step away.
    let main = json_of(&sb.hookctl(&[
        "--project",
        &dir,
        "context-score",
        &repo.dir.join("hookctl/src/main.rs").display().to_string(),
        "--task",
        task,
        "--json",
    ]));
    assert_eq!(main["depth"], 1, "{main:#}");
    assert_eq!(main["factors"]["dependency_depth"], 0.75, "{main:#}");
    for s in scores {
        let total = s["total"].as_f64().unwrap();
        let tier = s["tier"].as_str().unwrap();
        let expected = if total >= 0.7 {
            "primary"
        } else if total >= 0.5 {
            "supporting"
        } else {
            "reference"
        };
        assert_eq!(tier, expected, "{s:#}");
        assert!(total >= 0.3);
    }
    let everything = plan.to_string();
    assert!(
        !everything.contains("secret_client.rs"),
        "ignored files never count"
    );
    let used: u64 = ["primary", "supporting", "reference", "history"]
        .iter()
        .map(|t| plan["allocation"][t]["total_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(plan["total_used"].as_u64(), Some(used));

    // The table a person reads, and the record it leaves.
    let out = sb.hookctl(&[
        "--project",
        &dir,
        "context-budget",
        task,
        "--show-allocation",
    ]);
    // How the budget is split (which files fill it is this tree's own
    // business, and changes with it), the client in it, and the verdict.
    let table = stdout(&out);
    let split: String = table
        .lines()
        .take_while(|l| !l.starts_with("SUPPORTING CONTEXT"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(split, @r#"
        ================================================================================
        CONTEXT BUDGET ALLOCATION
        ================================================================================
        Task: "add OAuth support to the client"
        Keywords: oauth, client
        Total Budget: 100,000 tokens (budget.max_tokens)

        ALLOCATION:
        Reserved:
          - Output generation: 8,000 tokens
          - System prompts: 2,000 tokens
          - Available: 90,000 tokens

        PRIMARY CONTEXT (50% = 45,000 tokens): 0 files, 0 tokens (0.0% of allocation)
    "#);
    assert!(table.contains("\n  hookctl/src/client.rs "), "{table}");
    assert_eq!(
        table.lines().find(|l| l.starts_with("Status:")),
        Some("Status: ✓ Within budget, no overflow handling needed"),
        "{table}"
    );
    let records = std::fs::read_dir(repo.dir.join(".workflow/budget-records"))
        .unwrap()
        .count();
    assert_eq!(records, 2);
    let report = json_of(&sb.hookctl(&["--project", &dir, "context-report", "--json"]));
    assert_eq!(report["record"]["task"], task);
    assert_eq!(report["records"], 2);

    // The same question again is answered from the summary cache.
    let again = json_of(&sb.hookctl(&["--project", &dir, "context-budget", task, "--json"]));
    assert_eq!(again["summaries_made"], 0, "{again:#}");
    assert_eq!(again["allocation"], plan["allocation"]);

    // --max-tokens changes the whole budget.
    let small = json_of(&sb.hookctl(&[
        "--project",
        &dir,
        "context-budget",
        task,
        "--max-tokens",
        "20000",
        "--json",
    ]));
    assert_eq!(small["available"], 10_000);
    assert_eq!(small["budget_source"], "--max-tokens");

    // One file's factors.
    let score = json_of(&sb.hookctl(&[
        "--project",
        &dir,
        "context-score",
        &client.display().to_string(),
        "--task",
        task,
        "--json",
    ]));
    assert_eq!(score["total"], first["total"]);
    let text = stdout(&sb.hookctl(&[
        "--project",
        &dir,
        "context-score",
        &client.display().to_string(),
        "--task",
        task,
    ]));
    insta::assert_snapshot!(text, @r#"
        hookctl/src/client.rs (source)
          task_alignment    0.70 × 0.40 = 0.280   path: client; contents: oauth, client
          recency           1.00 × 0.20 = 0.200   modified 0.0 days ago
          mention_density   0.00 × 0.20 = 0.000   named 0 times by the session
          dependency_depth  1.00 × 0.10 = 0.100   one of the task's own files
          file_type         1.00 × 0.10 = 0.100   source
          total             0.680 → supporting (≥ 0.5)
          candidate because: keyword, content
    "#);
}

const RUST: &str = r#"//! Tokens of the query language.

use std::fmt;

/// One token.
#[derive(Debug)]
pub struct Token {
    pub kind: Kind,
}

pub enum Kind {
    Word,
    Number,
}

impl Token {
    /// Whether it ends a statement.
    pub fn is_end(&self) -> bool {
        let secret_body_marker = 1;
        secret_body_marker == 0
    }
}
"#;

const PYTHON: &str = r#""""HTTP client for the inventory service."""

import json


class Client:
    """Talks to the service."""

    def __init__(self, base_url: str) -> None:
        self.secret_body_marker = base_url

    def fetch(self, item: str) -> dict:
        """One item."""
        return json.loads(item)


def connect(url: str) -> Client:
    return Client(url)
"#;

const TYPESCRIPT: &str = r#"/** Session storage for the web app. */

export interface Session {
  id: string;
  expires: number;
}

export type Store = Map<string, Session>;

/** Keeps sessions in memory. */
export class MemoryStore {
  private sessions: Store = new Map();

  get(id: string): Session | undefined {
    const secretBodyMarker = this.sessions.get(id);
    return secretBodyMarker;
  }
}

export function expired(s: Session, now: number): boolean {
  return s.expires < now;
}
"#;

#[test]
fn summaries_of_rust_python_and_typescript_at_every_level() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("src/token.rs", RUST);
    repo.write("app/client.py", PYTHON);
    repo.write("web/session.ts", TYPESCRIPT);
    repo.commit_all("three languages");
    let dir = repo.dir.display().to_string();
    let summarize = |file: &str, level: &str, cache: bool| {
        let path = repo.dir.join(file).display().to_string();
        let mut args = vec![
            "--project",
            dir.as_str(),
            "summarize",
            path.as_str(),
            "--level",
            level,
            "--json",
        ];
        if cache {
            args.push("--cache");
        }
        json_of(&sb.hookctl(&args))
    };
    // Each level of one file as the model is given it; bodies are left out.
    let levels = |file: &str, source: &str| -> String {
        let full = summarize(file, "full", false);
        assert_eq!(full["text"], source);
        let mut said = String::new();
        for (level, max_tokens) in [("detailed", 2000), ("summary", 500), ("stub", 100)] {
            let out = summarize(file, level, false);
            assert!(
                out["tokens"].as_u64().unwrap() <= max_tokens,
                "{file} {level}: {out:#}"
            );
            let text = out["text"].as_str().unwrap();
            assert!(
                !text.contains("secret_body_marker") && !text.contains("secretBodyMarker"),
                "{file} {level}: bodies are left out:\n{text}"
            );
            said += &format!("--- {level}\n{text}\n");
        }
        sb.normalize(&said)
    };
    insta::assert_snapshot!(
        levels("src/token.rs", RUST),
        @r#"
        --- detailed
        `src/token.rs` (outline: bodies left out)

        //! Tokens of the query language.


        /// One token.
        #[derive(Debug)]
        pub struct Token {
            pub kind: Kind,
        }

        pub enum Kind {
            Word,
            Number,
        }

        impl Token { … }
            /// Whether it ends a statement.
            pub fn is_end(&self) -> bool { … }


        --- summary
        `src/token.rs`: source file, 22 lines, 326 bytes, ~94 tokens, last modified [TIME]
        Purpose: Tokens of the query language.
        structs: Token
        enums: Kind
        impls: Token (is_end)

        --- stub
        `src/token.rs`: source file, 22 lines, last modified [TIME]
    "#
    );
    insta::assert_snapshot!(
        levels("app/client.py", PYTHON),
        @r#"
        --- detailed
        `app/client.py` (outline: bodies left out)

        """HTTP client for the inventory service."""

        class Client:
            """Talks to the service."""
            def __init__(self, base_url: str) -> None:
            def fetch(self, item: str) -> dict:
                """One item."""

        def connect(url: str) -> Client:


        --- summary
        `app/client.py`: source file, 18 lines, 352 bytes, ~101 tokens, last modified [TIME]
        Purpose: HTTP client for the inventory service.
        classes: Client (__init__, fetch)
        functions: connect

        --- stub
        `app/client.py`: source file, 18 lines, last modified [TIME]
    "#
    );
    insta::assert_snapshot!(
        levels("web/session.ts", TYPESCRIPT),
        @r#"
        --- detailed
        `web/session.ts` (outline: bodies left out)

        /** Session storage for the web app. */

        export interface Session {
          id: string;
          expires: number;
        }

        export type Store = Map<string, Session>;

        /** Keeps sessions in memory. */
        export class MemoryStore { … }
            private sessions: Store = new Map()
            get(id: string): Session | undefined { … }

        export function expired(s: Session, now: number): boolean { … }


        --- summary
        `web/session.ts`: source file, 22 lines, 464 bytes, ~133 tokens, last modified [TIME]
        Purpose: Session storage for the web app.
        interfaces: Session
        types: Store
        classes: MemoryStore (sessions, get)
        functions: expired

        --- stub
        `web/session.ts`: source file, 22 lines, last modified [TIME]
    "#
    );

    // The cache: used until the file changes.
    assert_eq!(summarize("src/token.rs", "detailed", true)["cached"], false);
    assert_eq!(summarize("src/token.rs", "detailed", true)["cached"], true);
    assert!(
        repo.dir
            .join(".workflow/summaries")
            .read_dir()
            .unwrap()
            .count()
            >= 1
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    repo.write("src/token.rs", "pub fn changed() {}\n");
    let changed = summarize("src/token.rs", "detailed", true);
    assert_eq!(changed["cached"], false);
    insta::assert_snapshot!(changed["text"].as_str().unwrap(), @r#"
        `src/token.rs` (outline: bodies left out)

        pub fn changed() { … }
    "#);

    // A plain-text summary for a person.
    let out = sb.hookctl(&[
        "--project",
        &dir,
        "summarize",
        &repo.dir.join("web/session.ts").display().to_string(),
        "--level",
        "summary",
    ]);
    assert!(stdout(&out).starts_with("`web/session.ts`: source file,"));
}

#[test]
fn bad_requests_name_what_was_wrong() {
    let sb = Sandbox::new();
    let _daemon = TestDaemon::start(sb.daemon_options());
    let repo = GitRepo::init(&sb.path().join("proj"));
    repo.write("a.rs", "fn a() {}\n");
    repo.commit_all("a");
    let outside = sb.path().join("outside.rs");
    std::fs::write(&outside, "fn secret() {}\n").unwrap();
    let dir = repo.dir.display().to_string();

    let out = sb.hookctl(&[
        "--project",
        &dir,
        "summarize",
        &outside.display().to_string(),
    ]);
    assert!(!stdout(&out).contains("secret"), "the file is never read");
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd answered: [TEMP]/outside.rs is not a file inside the project [TEMP]/proj (only the project's own files are read)
        --- exit 1
    "#);

    let out = sb.hookctl(&["--project", &dir, "context-budget"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd answered: no task: name one (`hookctl context-budget "add OAuth support to the client"`), or save the workflow state first (`hookctl save`)
        --- exit 1
    "#);

    let out = sb.hookctl(&[
        "--project",
        &dir,
        "summarize",
        &repo.dir.join("a.rs").display().to_string(),
        "--level",
        "tiny",
    ]);
    // A usage error is never exit 2.
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        error: invalid value 'tiny' for '--level <LEVEL>'
          [possible values: full, detailed, summary, stub]

        For more information, try '--help'.
        --- exit 1
    "#);

    let out = sb.hookctl(&[
        "--project",
        &dir,
        "context-budget",
        "anything",
        "--max-tokens",
        "9000",
    ]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd answered: the budget has no tokens left after the reserves (9000 - 8000 - 2000)
        --- exit 1
    "#);

    repo.write(".hookd.yaml", "budget:\n  max_tokens: 5000\n");
    let out = sb.hookctl(&["--project", &dir, "context-budget", "anything"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: hookd answered: config file [TEMP]/proj/.hookd.yaml: budget.max_tokens: 5000 leaves nothing after the reserves (8000 + 2000) (line 2); using the daemon's configuration (`hookctl config` shows every setting and where it comes from)
        --- exit 1
    "#);
}

/// A parser project, the agent at work on its cache; `config` is the
/// project's `.hookd.yaml` (none when empty).
fn parser_cache_session(config: &str) -> Scenario {
    let mut s = Scenario::build()
        .repository(|repo| {
            repo.write(
                "src/lib.rs",
                "//! A small parser.\n\npub mod parser;\npub mod cache;\npub mod report;\n",
            );
            repo.write(
                "src/parser.rs",
                "//! The parser.\n\nuse crate::cache::Table;\n\n/// Parses one line.\npub fn parse(line: &str, table: &mut Table) -> usize {\n    table.len() + line.len()\n}\n",
            );
            repo.write(
                "src/cache.rs",
                "//! Token table cache.\n\npub struct Table(Vec<String>);\n\nimpl Table {\n    pub fn len(&self) -> usize {\n        self.0.len()\n    }\n}\n",
            );
            repo.write("src/report.rs", "//! Reports.\n\npub fn print() {}\n");
            repo.write("tests/parser_test.rs", "#[test]\nfn parses() {}\n");
            repo.write("README.md", "# parser\n\nParses lines.\n");
            if !config.is_empty() {
                repo.write(".hookd.yaml", config);
            }
            repo.commit_all("initial");
            repo.write(
                "src/parser.rs",
                "//! The parser.\n\nuse crate::cache::Table;\n\n/// Parses one line, with the token cache.\npub fn parse(line: &str, table: &mut Table) -> usize {\n    table.len() + line.len() + 1\n}\n",
            );
        })
        .session("b1-session")
        .start();
    let parser = s.project.join("src/parser.rs").display().to_string();
    let t = &mut s.transcript;
    t.prompt("make the parser faster with a token cache");
    t.todo_write(
        "tw",
        &[
            ("Profile the parser", "completed", "Profiling"),
            (
                "Cache the token table in the parser",
                "in_progress",
                "Caching",
            ),
        ],
        100_000,
    );
    for (i, name) in ["Read", "Edit", "Edit", "Read", "Edit"].iter().enumerate() {
        let id = format!("p{i}");
        t.tool_use(
            &id,
            name,
            json!({"file_path": parser, "old_string": "1", "new_string": "2"}),
            100_000 + i as u64,
        );
        t.tool_result(&id, "ok", json!({}));
    }
    s
}

/// A compaction from the last reply's 100,004 tokens: what SessionStart injected.
fn compact(s: &Scenario) -> String {
    s.compact(100_004, 4_000)["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a resume prompt")
        .to_owned()
}

#[test]
fn a_compaction_reloads_budgeted_context_and_the_report_totals_it() {
    let s = parser_cache_session("");
    let injected = compact(&s);

    // The saved state names what to reload, by tier.
    let state = s.state();
    assert_valid(&state_schema(), &state);
    let reload = &state["context_to_reload"];
    let first = &reload["files"][0];
    assert_eq!(first["path"], "src/parser.rs", "{reload:#}");
    assert_eq!(
        (first["tier"].as_str(), first["level"].as_str()),
        (Some("primary"), Some("full"))
    );
    let paths: Vec<&str> = reload["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"src/cache.rs"),
        "imported by the parser: {paths:?}"
    );
    assert!(!paths.contains(&"src/report.rs"), "unrelated: {paths:?}");

    // The prompt the model got carries the section.
    insta::assert_snapshot!(section(&injected, "### Context to Reload"), @r#"
        ### Context to Reload
        Read these again before you continue, most relevant first (96 tokens of a 67,450-token budget, sized for the room left: 163,000 of 167,000 tokens free: room for every file). Where the level is not `full`, `hookctl summarize <file> --level <level>` gives just that much.
        - `src/parser.rs`: primary, full, ~51 tokens, relevance 0.812
        - `src/cache.rs`: reference, full, ~38 tokens, relevance 0.388
        - `tests/parser_test.rs`: reference, full, ~7 tokens, relevance 0.31
    "#);
    assert!(injected.chars().count() <= 9000);

    // Events: the budget step, the compaction and the resume as transitions.
    let events = workflow_events(&s.project);
    let step = events
        .iter()
        .find(|e| e["kind"] == "pipeline" && e["step"] == "context_budget")
        .expect("a context_budget step");
    assert_eq!(step["ok"], true, "{step}");
    s.hook("PostToolUse", "post-tool-use");
    let events = workflow_events(&s.project);
    let compaction = events
        .iter()
        .find(|e| e["kind"] == "context_transition" && e["event_type"] == "compaction")
        .expect("the compaction as a transition");
    assert_eq!(
        (
            compaction["before_tokens"].as_u64(),
            compaction["after_tokens"].as_u64(),
            compaction["compression_ratio"].as_f64()
        ),
        (Some(100_004), Some(4_000), Some(0.96))
    );
    let resume = events
        .iter()
        .find(|e| e["kind"] == "context_transition" && e["event_type"] == "resume")
        .expect("the resume as a transition");
    assert_eq!(resume["action"], "markdown");
    assert_eq!(resume["before_tokens"], resume["after_tokens"]);

    // The report: the session, the record the pipeline saved, the totals.
    let dir = s.project.display().to_string();
    let report = json_of(
        &s.sb
            .hookctl(&["--project", &dir, "context-report", "--json"]),
    );
    assert_eq!(report["session"], "b1-session");
    assert_eq!(
        report["record"]["allocation"]["primary"]["files"][0]["path"],
        "src/parser.rs"
    );
    let t = &report["transitions"];
    assert_eq!(
        (t["compactions"].as_u64(), t["resumes"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(t["compaction_ratio"], 0.96);
    let out = s.sb.hookctl(&["--project", &dir, "context-report"]);
    insta::assert_snapshot!(s.normalize(&output_text(&out)), @r#"
        ================================================================================
        CONTEXT REPORT
        ================================================================================
        Session: b1-session
        Context now: 2% of the way to compaction (4,000 of 167,000 tokens), 2% of the window

        LATEST BUDGET (1 of 1 records): [TEMP]/proj/.workflow/budget-records/[STAMP]_b1-session.json
        Task: "Cache the token table in the parser Caching make the parser faster with a token cache finish Cache the token table in the parser" at [TIME]
        Used 140 of 71,000 tokens; utilization 0.2%, efficiency 0.61
          primary     full           51  0.81  src/parser.rs
          reference   full           38  0.39  src/cache.rs
          reference   full            7  0.31  tests/parser_test.rs

        CONTEXT TRANSITIONS (.workflow/events.jsonl):
        Compactions: 1, 100,004 → 4,000 tokens (compression 96.0%)
        Resume prompts: 1, 653 tokens as sent vs 653 in Markdown (format saved 0.0%)
        Resume prompts, followed or not:
          session b1-sessi after compaction 1: resumed, not yet decided
        Events: compaction 1, context_transition 2, pipeline 5, resume 1, resume_arrival 1
    "#);

    // The session's own view of one file: mentions counted from its transcript.
    let score = json_of(&s.sb.hookctl(&[
        "--project",
        &dir,
        "context-score",
        &s.project.join("src/parser.rs").display().to_string(),
        "--json",
    ]));
    assert!(score["mentions"].as_u64().unwrap() >= 5, "{score:#}");
    assert_eq!(score["factors"]["mention_density"], 1.0);
}

#[test]
fn resume_prompts_in_yaml_and_xml() {
    let s = parser_cache_session("resume:\n  format: yaml\n");
    let yaml = compact(&s);
    // The arrival marker ends it.
    insta::assert_snapshot!(s.normalize(&yaml), @r#"
        # hookd resume: context compacted; the work as saved [TIME] (before /compact). Continue at NEXT 1.
        MISSION: make the parser faster with a token cache
        IN_PROGRESS: Cache the token table in the parser
        LAST_STEP: Edit src/parser.rs: succeeded
        NEXT: 1. finish Cache the token table in the parser
        OPEN: (in progress) Cache the token table in the parser
        PHASE: not recorded
        DONE: Profile the parser✓
        CURRENT: Cache the token table in the parser @ src/parser.rs
        CONSTRAINTS: branch main|checkpoint [SHA] (branch and index untouched)
        RELOAD: src/parser.rs(full)|src/cache.rs(full)|tests/parser_test.rs(full) (sized for 163,000 of 167,000 tokens free: room for every file)
        CHANGED: src/parser.rs
        CONTEXT: 59% of the way to compaction (100,004 of 167,000 tokens), 50% of the window
        [hookd-resume [MARKER]]
    "#);
    let events = workflow_events(&s.project);
    let resume = events
        .iter()
        .find(|e| e["kind"] == "context_transition" && e["event_type"] == "resume")
        .unwrap();
    assert_eq!(resume["action"], "yaml");
    assert!(
        resume["after_tokens"].as_u64() < resume["before_tokens"].as_u64(),
        "{resume}"
    );
    assert!(
        resume["compression_ratio"].as_f64().unwrap() > 0.3,
        "{resume}"
    );

    let s = parser_cache_session("resume:\n  format: xml\n");
    let xml = compact(&s);
    let end = xml.find("</workflow_context>").expect("closed") + "</workflow_context>".len();
    let document = &xml[..end];
    insta::assert_snapshot!(s.normalize(&xml), @r#"
        <workflow_context source="hookd" captured_at="[TIME]" trigger="pre-compact manual">
          <note>Your context was compacted. This is where the work stood; continue from the first action of next_step_context.</note>
          <where_you_stopped>
            <current_objective>make the parser faster with a token cache</current_objective>
            <in_progress>Cache the token table in the parser (Caching)</in_progress>
            <last_step tool="Edit" target="src/parser.rs">succeeded</last_step>
          </where_you_stopped>
          <next_step_context>
            1. finish Cache the token table in the parser
          </next_step_context>
          <open_tasks>
            <task status="in progress">Cache the token table in the parser</task>
          </open_tasks>
          <events_history>
            <action type="task_completed">Profile the parser</action>
            <action type="file_modified">src/parser.rs: +2 −2 lines; edited fn parse; edited by the agent (3 edits)</action>
          </events_history>
          <current_state>
            <phase>not recorded</phase>
            <active_task>Cache the token table in the parser</active_task>
            <file>src/parser.rs</file>
            <blocking_issues></blocking_issues>
            <context_usage>59% of the way to compaction (100,004 of 167,000 tokens), 50% of the window</context_usage>
          </current_state>
          <constraints>
            <constraint>on branch main</constraint>
            <constraint check="git_status_matches" status="pass">HEAD is still [SHA] on main, and the working tree is as saved</constraint>
            <constraint check="workflow_exists" status="pass">no workflow file was in use; .workflow/ is in place</constraint>
            <constraint check="task_valid" status="pass">&quot;Cache the token table in the parser&quot; is still open (in_progress)</constraint>
          </constraints>
          <context_to_reload tokens="96" budget="67,450" sized_for="163,000 of 167,000 tokens free: room for every file">
            <file path="src/parser.rs" tier="primary" level="full" tokens="51" relevance="0.812"/>
            <file path="src/cache.rs" tier="reference" level="full" tokens="38" relevance="0.388"/>
            <file path="tests/parser_test.rs" tier="reference" level="full" tokens="7" relevance="0.31"/>
          </context_to_reload>
          <checkpoint sha="[SHA]" ref="refs/hookd/checkpoints/main">branch and index untouched; hookctl checkpoint restore [SHA] --path FILE brings a file back</checkpoint>
        </workflow_context>
        [hookd-resume [MARKER]]
    "#);
    // Well-formed XML, by a real parser.
    let mut check = std::process::Command::new("python3");
    check.args([
        "-c",
        "import sys, xml.dom.minidom; xml.dom.minidom.parseString(sys.stdin.read())",
    ]);
    let out = hookd_tests::run_with_stdin(check, document.as_bytes());
    assert!(out.status.success(), "{}\n{document}", stderr(&out));
}
