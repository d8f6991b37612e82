//! Input generators for the benchmarks: Claude Code transcripts of any size
//! in the real 2.1.330 format, hook and statusLine payloads, and a large git
//! repository. Everything is made at run time in a temporary directory, so
//! no large fixture lives in git.
//!
//! Transcript lines are the recorded fixture lines (`tests/fixtures/`) with
//! fresh ids, timestamps, token figures and tool output: a turn is what
//! Claude Code writes for one tool call (the API request record, the reply's
//! text and tool_use blocks with their usage, the tool_result with its
//! output, a prompt snapshot), and every tenth turn starts with a prompt.

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The model of generated sessions (1M window: compaction point 967,000 tokens).
pub const MODEL: &str = "claude-opus-5-5";
/// Tokens of the context in generated replies stay between these, well
/// under the 70% threshold, so that measuring the context never starts a
/// save in the background.
const TOKENS_LOW: u64 = 40_000;
const TOKENS_HIGH: u64 = 600_000;

fn fixtures() -> PathBuf {
    // Works from the tests crate and from the daemon's benches alike.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code-2.1.330")
}

fn fixture_lines(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("transcripts").join(name))
        .expect("fixture transcript");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("fixture line"))
        .collect()
}

fn pick(lines: &[Value], what: &str, test: impl Fn(&Value) -> bool) -> Value {
    lines
        .iter()
        .find(|v| test(v))
        .cloned()
        .unwrap_or_else(|| panic!("no {what} line in the fixture"))
}

/// A deterministic pseudo-random sequence (xorshift64*): ids and output text.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn uuid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }
}

/// A line with holes: the fixture line serialized once, with `\u{1}NAME\u{1}`
/// strings where the per-turn values go.
struct Template {
    pieces: Vec<(String, Option<String>)>,
}

impl Template {
    fn new(line: &Value) -> Template {
        let text = serde_json::to_string(line).expect("serialize");
        let marker = "\"\\u0001";
        let mut pieces = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(marker) {
            let after = &rest[at + marker.len()..];
            let end = after.find("\\u0001\"").expect("closed marker");
            pieces.push((rest[..at].to_owned(), Some(after[..end].to_owned())));
            rest = &after[end + "\\u0001\"".len()..];
        }
        pieces.push((rest.to_owned(), None));
        Template { pieces }
    }

    /// Writes the line; `value` gives each hole's JSON text.
    fn write(&self, out: &mut String, value: impl Fn(&str) -> String) {
        for (text, hole) in &self.pieces {
            out.push_str(text);
            if let Some(name) = hole {
                out.push_str(&value(name));
            }
        }
        out.push('\n');
    }
}

fn hole(name: &str) -> Value {
    Value::from(format!("\u{1}{name}\u{1}"))
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("serialize a string")
}

/// Writes Claude Code transcripts turn by turn.
pub struct TranscriptWriter {
    session_id: String,
    cwd: String,
    rng: Rng,
    turn: u64,
    last_uuid: String,
    /// Context of the latest reply.
    pub tokens: u64,
    templates: Templates,
    outputs: Vec<String>,
}

struct Templates {
    prompt: Template,
    api_request: Template,
    reply_text: Template,
    reply_tool: Template,
    tool_result: Template,
    snapshot: Template,
    last_prompt: Template,
}

impl TranscriptWriter {
    pub fn new(session_id: &str, cwd: &Path, seed: u64) -> TranscriptWriter {
        let lines = fixture_lines("basic.90fcfea3.jsonl");
        let common = |v: &mut Value| {
            if v.get("sessionId").is_some() {
                v["sessionId"] = hole("SESSION");
            }
            if v.get("uuid").is_some() {
                v["uuid"] = hole("UUID");
            }
            if v.get("parentUuid").is_some() {
                v["parentUuid"] = hole("PARENT");
            }
            if v.get("timestamp").is_some() {
                v["timestamp"] = hole("TIME");
            }
            if v.get("cwd").is_some() {
                v["cwd"] = hole("CWD");
            }
        };
        let mut prompt = pick(&lines, "prompt", |v| {
            v["type"] == "user" && v["message"]["content"].is_string()
        });
        common(&mut prompt);
        prompt["message"]["content"] = hole("PROMPT");
        prompt["promptId"] = hole("PROMPTID");
        let mut api_request = pick(&lines, "api-request", |v| v["type"] == "api-request");
        common(&mut api_request);
        api_request["id"] = hole("REQUEST");
        api_request["requestDigest"] = hole("DIGEST");
        let reply = |v: &mut Value| {
            common(v);
            v["message"]["id"] = hole("MSGID");
            v["message"]["model"] = Value::from(MODEL);
            v["requestId"] = hole("REQID");
            v["requestRef"] = hole("REQUEST");
            let usage = &mut v["message"]["usage"];
            usage["input_tokens"] = hole("IN");
            usage["cache_creation_input_tokens"] = hole("CREATE");
            usage["cache_read_input_tokens"] = hole("READ");
            usage["output_tokens"] = hole("OUT");
        };
        let mut reply_text = pick(&lines, "reply text", |v| {
            v["type"] == "assistant" && v["message"]["content"][0]["type"] == "text"
        });
        reply(&mut reply_text);
        reply_text["message"]["content"][0]["text"] = hole("TEXT");
        let mut reply_tool = pick(&lines, "tool_use", |v| {
            v["type"] == "assistant" && v["message"]["content"][0]["type"] == "tool_use"
        });
        reply(&mut reply_tool);
        reply_tool["message"]["content"][0] = hole("TOOL");
        let mut tool_result = pick(&lines, "tool_result", |v| {
            v["type"] == "user" && v["message"]["content"][0]["type"] == "tool_result"
        });
        common(&mut tool_result);
        tool_result["message"]["content"][0]["tool_use_id"] = hole("TOOLID");
        tool_result["message"]["content"][0]["content"] = hole("OUTPUT");
        tool_result["toolUseResult"] = hole("RESULT");
        tool_result["sourceToolAssistantUUID"] = hole("PARENT");
        tool_result["promptId"] = hole("PROMPTID");
        let mut snapshot = pick(&lines, "attachment", |v| {
            v["attachment"]["type"] == "prompt_snapshot"
        });
        common(&mut snapshot);
        let mut last_prompt = pick(&lines, "last-prompt", |v| v["type"] == "last-prompt");
        last_prompt["sessionId"] = hole("SESSION");
        last_prompt["lastPrompt"] = hole("PROMPT");
        last_prompt["leafUuid"] = hole("PARENT");

        let mut rng = Rng::new(seed);
        let outputs = (0..16).map(|i| tool_output(&mut rng, i)).collect();
        TranscriptWriter {
            session_id: session_id.to_owned(),
            cwd: cwd.display().to_string(),
            rng,
            turn: 0,
            last_uuid: String::new(),
            tokens: 0,
            templates: Templates {
                prompt: Template::new(&prompt),
                api_request: Template::new(&api_request),
                reply_text: Template::new(&reply_text),
                reply_tool: Template::new(&reply_tool),
                tool_result: Template::new(&tool_result),
                snapshot: Template::new(&snapshot),
                last_prompt: Template::new(&last_prompt),
            },
            outputs,
        }
    }

    /// One more turn (a tool call and its result), appended to `out`.
    pub fn turn(&mut self, out: &mut String) {
        self.turn += 1;
        let n = self.turn;
        let time = timestamp(n);
        let session = quoted(&self.session_id);
        let cwd = quoted(&self.cwd);
        let prompt_text = format!(
            "Step {n}: carry on with the refactor of the session store and keep the tests green"
        );
        let prompt_id = quoted(&self.rng.uuid());
        if n % 10 == 1 {
            let uuid = self.rng.uuid();
            self.templates.prompt.write(out, |h| match h {
                "SESSION" => session.clone(),
                "UUID" => quoted(&uuid),
                "PARENT" => quoted(&self.last_uuid),
                "TIME" => quoted(&time),
                "CWD" => cwd.clone(),
                "PROMPT" => quoted(&prompt_text),
                "PROMPTID" => prompt_id.clone(),
                other => panic!("hole {other}"),
            });
            self.last_uuid = uuid;
        }
        let request = quoted(&self.rng.uuid());
        let digest = quoted(&format!("{:016x}{:016x}", self.rng.next(), self.rng.next()));
        self.templates.api_request.write(out, |h| match h {
            "SESSION" => session.clone(),
            "TIME" => quoted(&time),
            "REQUEST" => request.clone(),
            "DIGEST" => digest.clone(),
            other => panic!("hole {other}"),
        });
        // The context grows a little each turn and wraps (as after compactions).
        let span = TOKENS_HIGH - TOKENS_LOW;
        self.tokens = TOKENS_LOW + (n * 1_237) % span;
        let (input, create) = (self.tokens / 100, self.tokens / 20);
        let read = self.tokens - input - create;
        let msg_id = quoted(&format!("msg_bench_{n:08}_{:010x}", self.rng.next() >> 24));
        let req_id = quoted(&format!("req_bench_{:012x}", self.rng.next() >> 16));
        let (tool, output, result) = self.tool_call(n, TOOL_USE_ID);
        let text = quoted("Let me look at that next.");
        for (template, body) in [
            (&self.templates.reply_text, &text),
            (&self.templates.reply_tool, &tool),
        ] {
            let uuid = self.rng.uuid();
            template.write(out, |h| match h {
                "SESSION" => session.clone(),
                "UUID" => quoted(&uuid),
                "PARENT" => quoted(&self.last_uuid),
                "TIME" => quoted(&time),
                "CWD" => cwd.clone(),
                "MSGID" => msg_id.clone(),
                "REQID" => req_id.clone(),
                "REQUEST" => request.clone(),
                "IN" => input.to_string(),
                "CREATE" => create.to_string(),
                "READ" => read.to_string(),
                "OUT" => (50 + n % 400).to_string(),
                "TEXT" | "TOOL" => body.clone(),
                other => panic!("hole {other}"),
            });
            self.last_uuid = uuid;
        }
        let uuid = self.rng.uuid();
        self.templates.tool_result.write(out, |h| match h {
            "SESSION" => session.clone(),
            "UUID" => quoted(&uuid),
            "PARENT" => quoted(&self.last_uuid),
            "TIME" => quoted(&time),
            "CWD" => cwd.clone(),
            "TOOLID" => quoted(TOOL_USE_ID),
            "OUTPUT" => output.clone(),
            "RESULT" => result.clone(),
            "PROMPTID" => prompt_id.clone(),
            other => panic!("hole {other}"),
        });
        self.last_uuid = uuid;
        let uuid = self.rng.uuid();
        self.templates.snapshot.write(out, |h| match h {
            "SESSION" => session.clone(),
            "UUID" => quoted(&uuid),
            "PARENT" => quoted(&self.last_uuid),
            "TIME" => quoted(&time),
            "CWD" => cwd.clone(),
            other => panic!("hole {other}"),
        });
        self.last_uuid = uuid;
        self.templates.last_prompt.write(out, |h| match h {
            "SESSION" => session.clone(),
            "PROMPT" => quoted(&prompt_text),
            "PARENT" => quoted(&self.last_uuid),
            other => panic!("hole {other}"),
        });
    }

    /// The tool_use block, the tool_result content and `toolUseResult` (JSON texts).
    fn tool_call(&mut self, n: u64, id: &str) -> (String, String, String) {
        let output = &self.outputs[(n % self.outputs.len() as u64) as usize];
        let file = format!("src/store/module_{:03}.rs", n % 97);
        let (tool, result) = match n % 8 {
            0 => (
                json!({"type": "tool_use", "id": id, "name": "Edit", "input": {
                    "file_path": format!("{}/{file}", self.cwd),
                    "old_string": "let cache = HashMap::new();",
                    "new_string": "let cache = HashMap::with_capacity(64);",
                    "replace_all": false}}),
                json!({"filePath": format!("{}/{file}", self.cwd), "oldString": "let cache = HashMap::new();",
                    "newString": "let cache = HashMap::with_capacity(64);", "structuredPatch": [], "userModified": false}),
            ),
            1 if n % 40 == 1 => (
                json!({"type": "tool_use", "id": id, "name": "TodoWrite", "input": {"todos": [
                    {"content": "Refactor the session store", "status": "in_progress", "activeForm": "Refactoring the session store"},
                    {"content": "Run the test suite", "status": "pending", "activeForm": "Running the test suite"}]}}),
                json!({"oldTodos": [], "newTodos": []}),
            ),
            2 | 5 => (
                json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("{}/{file}", self.cwd)}}),
                json!({"type": "text", "file": {"filePath": format!("{}/{file}", self.cwd), "content": output, "numLines": 80, "startLine": 1, "totalLines": 80}}),
            ),
            _ => (
                json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "cargo test -p store 2>&1 | tail -60", "description": "Run the store tests"}}),
                json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}),
            ),
        };
        (tool.to_string(), quoted(output), result.to_string())
    }
}

fn timestamp(n: u64) -> String {
    let secs = 41 + n * 7;
    format!(
        "2026-11-21T{:02}:{:02}:{:02}.{:03}Z",
        (17 + secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
        n % 1000
    )
}

/// Realistic tool output of 1 to 6 KB: test runner lines and source text.
pub fn tool_output(rng: &mut Rng, i: usize) -> String {
    let lines = 20 + rng.below(100) as usize;
    let mut out = String::new();
    for l in 0..lines {
        match (i + l) % 3 {
            0 => {
                let _ = writeln!(
                    out,
                    "test store::tests::case_{:04} ... ok ({} ms)",
                    rng.below(10_000),
                    rng.below(90)
                );
            }
            1 => {
                let _ = writeln!(
                    out,
                    "    let entry_{} = self.entries.get(&key_{}).cloned().unwrap_or_default();",
                    rng.below(1000),
                    rng.below(1000)
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "   Compiling store v0.{}.{} (/home/dev/proj/crates/store)",
                    rng.below(10),
                    rng.below(30)
                );
            }
        }
    }
    out
}

/// What a generated transcript ends with.
#[derive(Debug, Clone)]
pub struct Generated {
    pub bytes: u64,
    pub turns: u64,
    /// Context of the last reply: what hookd must report.
    pub tokens: u64,
}

/// Writes a transcript of at least `bytes` bytes.
/// The id of every generated tool call, and of the hook payloads'. Claude
/// Code writes the reply that asks for a tool before it runs the tool's
/// hooks, and hookd waits (up to 300 ms) for that reply to show in the
/// transcript: one id for all keeps a fixed payload file true to any turn.
pub const TOOL_USE_ID: &str = "toolu_bench_01HookdBenchLiveCall";

pub fn transcript(
    path: &Path,
    session_id: &str,
    cwd: &Path,
    bytes: u64,
    seed: u64,
) -> io::Result<(Generated, TranscriptWriter)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut writer = TranscriptWriter::new(session_id, cwd, seed);
    let mut file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut buf = String::with_capacity(64 * 1024);
    while written < bytes {
        buf.clear();
        writer.turn(&mut buf);
        file.write_all(buf.as_bytes())?;
        written += buf.len() as u64;
    }
    file.flush()?;
    Ok((
        Generated {
            bytes: written,
            turns: writer.turn,
            tokens: writer.tokens,
        },
        writer,
    ))
}

/// Appends one turn to a transcript, as Claude Code does between two tool calls.
pub fn append_turn(path: &Path, writer: &mut TranscriptWriter) -> io::Result<()> {
    let mut buf = String::new();
    writer.turn(&mut buf);
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    file.write_all(buf.as_bytes())
}

/// Writes `path` to disk and drops it from the page cache, so that the next
/// read comes from the disk (the file alone: other processes keep their cache).
pub fn evict(path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    file.sync_all()?;
    // SAFETY: a valid descriptor; the call only advises the kernel.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// A recorded hook payload rewritten for a session, with tool output of a
/// realistic size in `tool_response`.
pub fn hook_payload(
    event: &str,
    session_id: &str,
    transcript: &Path,
    cwd: &Path,
    output: &str,
) -> Vec<u8> {
    let text = std::fs::read_to_string(fixtures().join("hook_payloads.json")).expect("payloads");
    let all: Value = serde_json::from_str(&text).expect("payloads JSON");
    let mut p = all["payloads"][event]["stdin"].clone();
    assert!(p.is_object(), "no {event} payload in the fixtures");
    p["session_id"] = Value::from(session_id);
    p["transcript_path"] = Value::from(transcript.display().to_string());
    p["cwd"] = Value::from(cwd.display().to_string());
    if p.get("tool_use_id").is_some() {
        p["tool_use_id"] = Value::from(TOOL_USE_ID);
    }
    if p.get("tool_response").is_some() {
        p["tool_input"]["command"] = Value::from("cargo test -p store 2>&1 | tail -60");
        p["tool_response"]["stdout"] = Value::from(output);
    }
    serde_json::to_vec(&p).expect("serialize")
}

/// A recorded statusLine input (one with usage), rewritten for a session.
pub fn statusline_payload(session_id: &str, transcript: &Path, cwd: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(fixtures().join("statusline.jsonl")).expect("statusline");
    let mut p: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("statusline JSON"))
        .find(|v| v["context_window"]["current_usage"].is_object())
        .expect("a statusLine input with usage");
    p["session_id"] = Value::from(session_id);
    p["transcript_path"] = Value::from(transcript.display().to_string());
    p["cwd"] = Value::from(cwd.display().to_string());
    p["workspace"]["current_dir"] = Value::from(cwd.display().to_string());
    p["workspace"]["project_dir"] = Value::from(cwd.display().to_string());
    serde_json::to_vec(&p).expect("serialize")
}

/// Hermetic git: no global or system configuration, fixed dates.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@hookd.invalid")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@hookd.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_DIR");
    cmd
}

/// Runs git; a failure stops the benchmark with git's message.
pub fn run_git(dir: &Path, args: &[&str]) -> String {
    let out = git(dir).args(args).output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository of `files` committed source files in 100-file directories,
/// then `modified` of them changed and `new` untracked files added.
pub fn repository(dir: &Path, files: usize, modified: usize, new: usize) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    run_git(dir, &["init", "-q", "-b", "main"]);
    // No `gc --auto` in the background while something is being timed.
    run_git(dir, &["config", "gc.auto", "0"]);
    let mut rng = Rng::new(files as u64);
    // Files last touched a day ago, as in a repository in use: none is newer
    // than the index git writes next ("racily clean" entries would make
    // every tool hash them again, which a real repository seldom asks).
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    for i in 0..files {
        std::fs::create_dir_all(dir.join(format!("src/m{:03}", i / 100)))?;
        let path = dir.join(source_path(i));
        std::fs::write(&path, source_file(&mut rng, i, 0))?;
        std::fs::File::options()
            .write(true)
            .open(&path)?
            .set_modified(old)?;
    }
    std::fs::write(dir.join(".gitignore"), "target/\n*.log\n")?;
    run_git(dir, &["add", "-A"]);
    run_git(dir, &["commit", "-q", "-m", "Initial import"]);
    // Packed, as a cloned repository is.
    run_git(dir, &["repack", "-adq"]);
    // Modified files spread over the tree, new ones in their own module.
    let step = (files / modified.max(1)).max(1);
    for i in (0..files).step_by(step).take(modified) {
        std::fs::write(dir.join(source_path(i)), source_file(&mut rng, i, 1))?;
    }
    std::fs::create_dir_all(dir.join("src/added"))?;
    for i in 0..new {
        std::fs::write(
            dir.join(format!("src/added/new_{i:03}.rs")),
            source_file(&mut rng, files + i, 0),
        )?;
    }
    Ok(())
}

fn source_path(i: usize) -> String {
    format!("src/m{:03}/file_{i:05}.rs", i / 100)
}

/// About 1.5 KB of Rust-looking text; `revision` changes a few lines.
fn source_file(rng: &mut Rng, i: usize, revision: u32) -> String {
    let mut text = format!("//! Module {i}.\n\nuse std::collections::HashMap;\n\n");
    for f in 0..6 {
        let _ = write!(
            text,
            "pub fn item_{i}_{f}(input: &HashMap<String, u64>) -> u64 {{\n    \
             let base = input.get(\"k{f}\").copied().unwrap_or({});\n    \
             base.wrapping_mul({}) + {revision}\n}}\n\n",
            rng.below(1000),
            rng.below(97) + 1
        );
    }
    text
}
