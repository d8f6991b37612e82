//! The context budget and the resume formats: scores
//! and allocations on real repositories (this project's own tree among
//! them), summaries read with the real parsers, the budgeted section of the
//! resume prompt, and the context report.

use hookd_tests::{
    GitRepo, Sandbox, Scenario, TestDaemon, assert_valid, state_schema, stderr, stdout,
    workflow_events,
};
use serde_json::{Value, json};
use std::path::Path;

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_str(&stdout(out)).expect("JSON output")
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
    let table = stdout(&out);
    assert!(
        table.contains("CONTEXT BUDGET ALLOCATION")
            && table.contains("PRIMARY CONTEXT (50% = 45,000 tokens)")
            && table.contains("  - Available: 90,000 tokens")
            && table.contains("hookctl/src/client.rs")
            && table.contains("Status: ✓ Within budget"),
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
    assert!(
        text.contains(
            "task_alignment    0.70 × 0.40 = 0.280   path: client; contents: oauth, client"
        ) && text.contains("→ supporting (≥ 0.5)"),
        "{text}"
    );
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
    let cases = [
        (
            "src/token.rs",
            RUST,
            vec![
                "pub struct Token {",
                "pub fn is_end(&self) -> bool",
                "/// Whether it ends a statement.",
                "pub enum Kind",
            ],
            vec!["Purpose: Tokens of the query language.", "Token", "Kind"],
        ),
        (
            "app/client.py",
            PYTHON,
            vec![
                "class Client:",
                "def fetch(self, item: str) -> dict:",
                "\"\"\"One item.\"\"\"",
                "def connect(url: str) -> Client:",
            ],
            vec![
                "Purpose: HTTP client for the inventory service.",
                "Client",
                "connect",
            ],
        ),
        (
            "web/session.ts",
            TYPESCRIPT,
            vec![
                "export interface Session",
                "export class MemoryStore",
                "get(id: string): Session | undefined",
                "export function expired(s: Session, now: number): boolean",
            ],
            vec![
                "Purpose: Session storage for the web app.",
                "MemoryStore",
                "expired",
            ],
        ),
    ];
    for (file, source, detailed_has, summary_has) in cases {
        let full = summarize(file, "full", false);
        assert_eq!(full["text"], source);
        let detailed = summarize(file, "detailed", false);
        let text = detailed["text"].as_str().unwrap();
        for needle in detailed_has {
            assert!(
                text.contains(needle),
                "{file} detailed lacks {needle}:\n{text}"
            );
        }
        assert!(
            !text.contains("secret_body_marker") && !text.contains("secretBodyMarker"),
            "{file}: bodies are left out:\n{text}"
        );
        assert!(detailed["tokens"].as_u64().unwrap() <= 2000);
        let summary = summarize(file, "summary", false);
        let text = summary["text"].as_str().unwrap();
        for needle in summary_has {
            assert!(
                text.contains(needle),
                "{file} summary lacks {needle}:\n{text}"
            );
        }
        assert!(summary["tokens"].as_u64().unwrap() <= 500);
        let stub = summarize(file, "stub", false);
        let text = stub["text"].as_str().unwrap();
        let lines = source.lines().count();
        assert!(
            text.starts_with(&format!(
                "`{file}`: source file, {lines} lines, last modified "
            )),
            "{text}"
        );
        assert!(stub["tokens"].as_u64().unwrap() <= 100);
    }

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
    assert!(
        changed["text"]
            .as_str()
            .unwrap()
            .contains("pub fn changed()")
    );

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
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a file inside the project"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("secret"));

    let out = sb.hookctl(&["--project", &dir, "context-budget"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no task: name one"),
        "{}",
        stderr(&out)
    );

    let out = sb.hookctl(&[
        "--project",
        &dir,
        "summarize",
        &repo.dir.join("a.rs").display().to_string(),
        "--level",
        "tiny",
    ]);
    assert_eq!(out.status.code(), Some(1), "a usage error is never exit 2");
    assert!(stderr(&out).contains("tiny"), "{}", stderr(&out));

    let out = sb.hookctl(&[
        "--project",
        &dir,
        "context-budget",
        "anything",
        "--max-tokens",
        "9000",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no tokens left after the reserves (9000 - 8000 - 2000)"),
        "{}",
        stderr(&out)
    );

    repo.write(".hookd.yaml", "budget:\n  max_tokens: 5000\n");
    let out = sb.hookctl(&["--project", &dir, "context-budget", "anything"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("budget.max_tokens") && stderr(&out).contains("reserves"),
        "{}",
        stderr(&out)
    );
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
    assert!(injected.contains("### Context to Reload"), "{injected}");
    assert!(
        injected.contains("- `src/parser.rs`: primary, full, ~"),
        "{injected}"
    );
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
    let text = stdout(&s.sb.hookctl(&["--project", &dir, "context-report"]));
    assert!(
        text.contains("Session: b1-session")
            && text.contains("Compactions: 1, 100,004 → 4,000 tokens (compression 96.0%)")
            && text.contains("primary     full")
            && text.contains("src/parser.rs"),
        "{text}"
    );

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
    assert!(
        yaml.starts_with("# hookd resume:")
            && yaml.contains("\nMISSION: make the parser faster with a token cache\n")
            && yaml.contains("\nCURRENT: Cache the token table in the parser @ src/parser.rs\n")
            && yaml.contains("\nDONE: Profile the parser✓")
            && yaml.contains("\nRELOAD: src/parser.rs(full)")
            && yaml.contains("\nNEXT: "),
        "{yaml}"
    );
    assert!(yaml.trim_end().ends_with(']'), "the marker ends it: {yaml}");
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
    assert!(
        document.starts_with("<workflow_context source=\"hookd\""),
        "{xml}"
    );
    assert!(
        document.contains("<file path=\"src/parser.rs\" tier=\"primary\" level=\"full\""),
        "{xml}"
    );
    // Well-formed XML, by a real parser.
    let mut check = std::process::Command::new("python3");
    check.args([
        "-c",
        "import sys, xml.dom.minidom; xml.dom.minidom.parseString(sys.stdin.read())",
    ]);
    let out = hookd_tests::run_with_stdin(check, document.as_bytes());
    assert!(out.status.success(), "{}\n{document}", stderr(&out));
}
