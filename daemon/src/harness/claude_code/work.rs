//! What a Claude Code transcript says about the work: the task list (the
//! latest TodoWrite, or TaskCreate/TaskUpdate replayed, with the
//! descriptions TaskCreate keeps), the files the agent wrote (its edit tools
//! and Bash), and what the person asked for. Read at capture time from the
//! end of the file (a bounded window), main chain only.

use crate::harness::work::{self, LineReader, TaskItem, TaskStatus, WorkFacts, WorkLog};
use crate::tail::mentions_any;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::path::Path;

/// Reads the last `max_bytes` of the transcript (and its start, for the
/// session's first request).
pub fn read(path: &Path, max_bytes: u64, keep_prompts: usize) -> io::Result<WorkFacts> {
    work::read_file::<Reader>(path, max_bytes, keep_prompts)
}

const TOOLS: [&[u8]; 9] = [
    // Quoted: the bare word is in every line that says "README" or "Ready".
    b"\"Read\"",
    b"TodoWrite",
    b"TaskCreate",
    b"TaskUpdate",
    b"Edit",
    b"Write",
    b"NotebookEdit",
    b"MultiEdit",
    b"Bash",
];

#[derive(Default)]
pub(crate) struct Reader {
    log: WorkLog,
    /// TaskCreate calls waiting for their result (which carries the id).
    pending_creates: HashMap<String, TaskItem>,
    /// Write calls waiting for their result (which says whether the file
    /// was created or replaced), by call id.
    pending_writes: HashMap<String, String>,
}

/// Write calls whose result is awaited, at most: a result that never
/// comes must not let the map grow.
const MAX_PENDING_WRITES: usize = 64;

impl LineReader for Reader {
    fn log(&mut self) -> &mut WorkLog {
        &mut self.log
    }

    fn line(&mut self, line: &[u8]) {
        // Every call counts for the last step; `tool_use_id` (every result
        // line, however big) does not match.
        let mentions_tool =
            mentions_any(line, &TOOLS) || mentions_any(line, &[br#""type":"tool_use""#]);
        let has_result = mentions_any(line, &[b"tool_result"]);
        let answers_a_call = (!self.pending_creates.is_empty()
            || !self.pending_writes.is_empty()
            || self.log.awaits_result())
            && has_result;
        let maybe_prompt = !has_result && mentions_any(line, &[b"\"user\""]);
        if !mentions_tool && !answers_a_call && !maybe_prompt {
            return;
        }
        let Ok(entry) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if entry["isSidechain"] == true {
            return;
        }
        match entry["type"].as_str() {
            Some("assistant") => self.assistant(&entry),
            Some("user") => self.user(&entry),
            _ => {}
        }
    }
}

impl Reader {
    fn assistant(&mut self, entry: &Value) {
        let Some(blocks) = entry["message"]["content"].as_array() else {
            return;
        };
        for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
            let input = &block["input"];
            let name = block["name"].as_str().unwrap_or("");
            self.log
                .call(block["id"].as_str(), name, work::call_target(input));
            match name {
                "TodoWrite" => {
                    if let Some(todos) = input["todos"].as_array() {
                        self.log.todos(work::task_list(todos, "content", "todo"));
                    }
                }
                "TaskCreate" => {
                    let Some(subject) = input["subject"].as_str() else {
                        continue;
                    };
                    let item = TaskItem {
                        id: String::new(),
                        title: subject.to_owned(),
                        status: TaskStatus::Pending,
                        active_form: input["activeForm"].as_str().map(str::to_owned),
                        description: work::description(input["description"].as_str()),
                    };
                    if let Some(id) = block["id"].as_str() {
                        self.pending_creates.insert(id.to_owned(), item);
                    }
                }
                "TaskUpdate" => {
                    let id = input["taskId"]
                        .as_str()
                        .or(input["task_id"].as_str())
                        .map(str::to_owned)
                        .or_else(|| input["taskId"].as_u64().map(|n| n.to_string()));
                    let Some(id) = id else { continue };
                    if input["status"] == "deleted" {
                        self.log.tasks.retain(|t| t.id != id);
                    } else if let Some(task) = self.log.tasks.iter_mut().find(|t| t.id == id) {
                        if let Some(status) = input["status"].as_str() {
                            task.status = status.into();
                        }
                        if let Some(subject) = input["subject"].as_str() {
                            task.title = subject.to_owned();
                        }
                        if let Some(form) = input["activeForm"].as_str() {
                            task.active_form = Some(form.to_owned());
                        }
                        if let Some(text) = work::description(input["description"].as_str()) {
                            task.description = Some(text);
                        }
                    }
                    self.log.tasks_changed();
                }
                "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
                    let path = input["file_path"]
                        .as_str()
                        .or(input["notebook_path"].as_str());
                    if let Some(path) = path {
                        self.log.edited(path);
                        if block["name"] == "Write"
                            && let Some(id) = block["id"].as_str()
                            && self.pending_writes.len() < MAX_PENDING_WRITES
                        {
                            self.pending_writes.insert(id.to_owned(), path.to_owned());
                        }
                    }
                }
                "Read" => {
                    if let Some(path) = input["file_path"].as_str() {
                        self.log.read(path);
                    }
                }
                "Bash" => {
                    if let Some(command) = input["command"].as_str() {
                        self.log.shell(command);
                    }
                }
                _ => {}
            }
        }
    }

    fn user(&mut self, entry: &Value) {
        let content = &entry["message"]["content"];
        if let Some(blocks) = content.as_array() {
            for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
                // Write's result says `create` for a file that was not there.
                if let Some(path) = block["tool_use_id"]
                    .as_str()
                    .and_then(|id| self.pending_writes.remove(id))
                    && block["is_error"] != true
                    && tool_result(entry)["type"] == "create"
                {
                    self.log.created(&path);
                }
                let error = (block["is_error"] == true)
                    .then(|| work::content_text(&block["content"], "\n").unwrap_or_default());
                self.log
                    .result(block["tool_use_id"].as_str(), error.as_deref());
                let Some(item) = block["tool_use_id"]
                    .as_str()
                    .and_then(|id| self.pending_creates.remove(id))
                else {
                    continue;
                };
                if block["is_error"] == true {
                    continue;
                }
                if let Some(id) = created_task_id(entry, block) {
                    self.log.tasks.push(TaskItem { id, ..item });
                    self.log.tasks_changed();
                }
            }
        }
        if entry["isMeta"] == true
            || entry["isCompactSummary"] == true
            || entry["isVisibleInTranscriptOnly"] == true
        {
            return;
        }
        // A list holding anything but text (a tool result) is no prompt.
        if content
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] != "text"))
        {
            return;
        }
        let Some(text) = work::content_text(content, "\n") else {
            return;
        };
        self.log.prompt(&text);
    }
}

/// What Claude Code kept of a tool's result beside the text the model saw.
fn tool_result(entry: &Value) -> &Value {
    if entry["toolUseResult"].is_object() {
        &entry["toolUseResult"]
    } else {
        &entry["tool_use_result"]
    }
}

/// The id Claude Code gave a new task: `toolUseResult.task.id`, else the
/// `#N` in the result text ("Task #3 created successfully: …").
fn created_task_id(entry: &Value, block: &Value) -> Option<String> {
    let result = tool_result(entry);
    if let Some(id) = result["task"]["id"].as_str() {
        return Some(id.to_owned());
    }
    if let Some(id) = result["task"]["id"].as_u64() {
        return Some(id.to_string());
    }
    let text = work::content_text(&block["content"], " ")?;
    let after = &text[text.find('#')? + 1..];
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::work::TaskSource;
    use serde_json::json;
    use std::io::Write;

    fn transcript(entries: &[Value]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for e in entries {
            writeln!(f, "{e}").unwrap();
        }
        f
    }

    fn assistant(blocks: Value) -> Value {
        json!({"type": "assistant", "isSidechain": false, "message": {"role": "assistant", "content": blocks}})
    }

    fn prompt(text: &str) -> Value {
        json!({"type": "user", "isSidechain": false, "message": {"role": "user", "content": text}})
    }

    fn result(id: &str, text: &str, is_error: bool) -> Value {
        json!({"type": "user", "isSidechain": false, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]}})
    }

    #[test]
    fn the_last_tool_call_and_the_first_ones_after_the_marker() {
        let f = transcript(&[
            assistant(json!([{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/p/src/jwt.rs"}}])),
            result("t1", "fn sign() {}", false),
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": ["## Context Recovery [hookd-resume abc]"]}}),
            assistant(json!([{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "cargo test jwt\ncargo fmt"}}])),
            result("t2", "error: test failed, to rerun pass `--lib`\nmore", true),
            assistant(json!([{"type": "tool_use", "id": "s1", "name": "Read", "input": {"file_path": "/p/side.rs"}}]))
                .as_object().cloned().map(|mut o| { o.insert("isSidechain".into(), json!(true)); Value::Object(o) }).unwrap(),
        ]);
        let facts = read(f.path(), u64::MAX, 0).unwrap();
        let last = facts.last_call.unwrap();
        assert_eq!(
            (last.tool.as_str(), last.target.as_deref()),
            ("Bash", Some("cargo test jwt"))
        );
        assert_eq!(
            last.outcome_words(),
            "failed: error: test failed, to rerun pass `--lib`"
        );
        assert_eq!(facts.calls_after_marker, None, "no marker asked for");
        let after = work::read_file_after::<Reader>(
            f.path(),
            u64::MAX,
            0,
            Some("[hookd-resume abc]"),
            None,
        )
        .unwrap()
        .calls_after_marker
        .unwrap();
        let tools: Vec<&str> = after.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(tools, ["Bash"], "after the marker, main chain only");
        let none = work::read_file_after::<Reader>(
            f.path(),
            u64::MAX,
            0,
            Some("[hookd-resume zzz]"),
            None,
        )
        .unwrap();
        assert_eq!(none.calls_after_marker, None);
        // From where the file stood when the prompt went out: the same calls;
        // from past the marker's line, none found.
        let text = std::fs::read_to_string(f.path()).unwrap();
        // The marker line's start, whatever order serde_json writes keys in.
        let marker_at = text.find("hook_additional_context").unwrap();
        let sent_at = text[..marker_at].rfind('\n').map_or(0, |n| n + 1) as u64;
        let from = |at| {
            work::read_file_after::<Reader>(
                f.path(),
                u64::MAX,
                0,
                Some("[hookd-resume abc]"),
                Some(at),
            )
            .unwrap()
            .calls_after_marker
        };
        assert_eq!(from(sent_at).map(|c| c.len()), Some(1));
        assert_eq!(from(sent_at + 1), None);
    }

    fn write_result(id: &str, kept: Value) -> Value {
        json!({"type": "user", "isSidechain": false, "message": {"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": "ok"}]}, "toolUseResult": kept})
    }

    /// Write's result says whether the file was new (`create`) or replaced
    /// (`update`); Read's calls are the files the session looked at.
    #[test]
    fn a_written_file_is_created_only_when_the_result_says_so_and_reads_are_kept() {
        let f = transcript(&[
            assistant(
                json!([{"type": "tool_use", "id": "w1", "name": "Write", "input": {"file_path": "/p/new.rs", "content": "x"}}]),
            ),
            write_result("w1", json!({"type": "create", "filePath": "/p/new.rs"})),
            assistant(
                json!([{"type": "tool_use", "id": "w2", "name": "Write", "input": {"file_path": "/p/old.rs", "content": "x"}}]),
            ),
            write_result("w2", json!({"type": "update", "filePath": "/p/old.rs"})),
            assistant(
                json!([{"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": "/p/new.rs"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "notes/a.md"}}]),
            ),
        ]);
        let facts = read(f.path(), u64::MAX, 3).unwrap();
        let edited: Vec<(&str, u32, bool)> = facts
            .edited
            .iter()
            .map(|e| (e.path.as_str(), e.edits, e.created))
            .collect();
        assert_eq!(edited, [("/p/old.rs", 1, false), ("/p/new.rs", 2, true)]);
        assert_eq!(facts.read, ["notes/a.md"]);
    }

    /// After a marker, the window read starts where the file stood when it
    /// went out: the first calls are found however much the file grew after
    /// them, and that growth is not read.
    #[test]
    fn the_calls_after_a_marker_are_read_from_where_it_went_out() {
        let mut f = transcript(&[prompt("start")]);
        let sent_at = std::fs::metadata(f.path()).unwrap().len();
        for e in [
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": ["[hookd-resume w]"]}}),
            assistant(
                json!([{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/p/a.rs"}}]),
            ),
        ] {
            writeln!(f, "{e}").unwrap();
        }
        let filler = "x".repeat(1000);
        for _ in 0..200 {
            writeln!(f, "{}", json!({"type": "progress", "data": filler})).unwrap();
        }
        let window = 4096;
        assert!(std::fs::metadata(f.path()).unwrap().len() > sent_at + 40 * window);
        let calls = work::read_file_after::<Reader>(
            f.path(),
            window,
            0,
            Some("[hookd-resume w]"),
            Some(sent_at),
        )
        .unwrap()
        .calls_after_marker
        .expect("the marker is in the window");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].target.as_deref(), Some("/p/a.rs"));
    }

    #[test]
    fn the_latest_todo_list_and_edits() {
        let f = transcript(&[
            prompt("add OAuth support to the client"),
            assistant(
                json!([{"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": [
                    {"content": "Write the OAuth client", "status": "pending", "activeForm": "Writing the OAuth client"}
                ]}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/p/src/oauth.rs", "old_string": "a", "new_string": "b"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "t3", "name": "Write", "input": {"file_path": "/p/src/lib.rs", "content": "x"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "t4", "name": "Edit", "input": {"file_path": "/p/src/oauth.rs"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "t5", "name": "TodoWrite", "input": {"todos": [
                    {"content": "Write the OAuth client", "status": "completed", "activeForm": "Writing the OAuth client"},
                    {"content": "Add token refresh", "status": "in_progress", "activeForm": "Adding token refresh"},
                    {"content": "Document the flow", "status": "pending", "activeForm": "Documenting the flow"}
                ]}}]),
            ),
            json!({"type": "user", "isMeta": true, "message": {"content": "<local-command-caveat>x</local-command-caveat>"}}),
            prompt("<command-name>/compact</command-name>"),
            prompt("also handle expired tokens"),
            json!({"type": "assistant", "isSidechain": true, "message": {"content": [
                {"type": "tool_use", "id": "s1", "name": "Edit", "input": {"file_path": "/p/sub.rs"}}]}}),
        ]);
        let facts = read(f.path(), u64::MAX, 3).unwrap();
        assert_eq!(facts.task_source, Some(TaskSource::Todos));
        let titles: Vec<(&str, &str)> = facts
            .tasks
            .iter()
            .map(|t| (t.title.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            titles,
            vec![
                ("Write the OAuth client", "completed"),
                ("Add token refresh", "in_progress"),
                ("Document the flow", "pending")
            ]
        );
        assert_eq!(
            facts.tasks[1].active_form.as_deref(),
            Some("Adding token refresh")
        );
        let edited: Vec<(&str, u32)> = facts
            .edited
            .iter()
            .map(|e| (e.path.as_str(), e.edits))
            .collect();
        assert_eq!(
            edited,
            vec![("/p/src/lib.rs", 1), ("/p/src/oauth.rs", 2)],
            "sidechain edits are not ours"
        );
        assert_eq!(
            facts.edited.last().map(|e| e.path.as_str()),
            Some("/p/src/oauth.rs")
        );
        assert_eq!(
            facts.prompts,
            vec![
                "add OAuth support to the client",
                "also handle expired tokens"
            ]
        );
    }

    #[test]
    fn tasks_are_replayed_from_create_and_update() {
        let f = transcript(&[
            assistant(json!([
                {"type": "tool_use", "id": "c1", "name": "TaskCreate", "input": {"subject": "Parse the config", "description": "d"}},
                {"type": "tool_use", "id": "c2", "name": "TaskCreate", "input": {"subject": "Write tests", "activeForm": "Writing tests"}}
            ])),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "Task #1 created successfully: Parse the config"}]},
                "toolUseResult": {"task": {"id": "1", "subject": "Parse the config"}}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": "Task #2 created successfully: Write tests"}]}}),
            assistant(
                json!([{"type": "tool_use", "id": "u1", "name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "u2", "name": "TaskUpdate", "input": {"taskId": "2", "status": "in_progress"}}]),
            ),
            assistant(
                json!([{"type": "tool_use", "id": "c3", "name": "TaskCreate", "input": {"subject": "Never created"}}]),
            ),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "c3", "is_error": true, "content": "error"}]}}),
        ]);
        let facts = read(f.path(), u64::MAX, 3).unwrap();
        assert_eq!(facts.task_source, Some(TaskSource::Tasks));
        let tasks: Vec<(&str, &str, &str)> = facts
            .tasks
            .iter()
            .map(|t| (t.id.as_str(), t.title.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            tasks,
            vec![
                ("1", "Parse the config", "completed"),
                ("2", "Write tests", "in_progress")
            ]
        );
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/claude-code-2.1.330/transcripts")
            .join(name)
    }

    /// A real compacted session: the request that set the work is its first
    /// prompt; the compaction's continuation message and slash commands are
    /// no requests; Bash's `echo` wrote no file.
    #[test]
    fn a_real_compacted_transcript_keeps_the_request_that_set_the_work() {
        let facts = read(&fixture("compact_auto.e251d151.jsonl"), u64::MAX, 3).unwrap();
        assert_eq!(facts.requests, ["SCENARIO_COMPACT_AUTO : run 4 commands"]);
        assert_eq!(
            facts.prompts.last().map(String::as_str),
            Some("SCENARIO_AUTO_NEXT: and now?")
        );
        assert!(
            facts.prompts.iter().all(|p| !p.contains("being continued")),
            "{:?}",
            facts.prompts
        );
        assert!(facts.edited.is_empty(), "{:?}", facts.edited);
    }

    /// Claude Code 2.1.330's planning tool keeps the detail in TaskCreate's
    /// `description`; Bash writes files too. Lines shaped as the real client
    /// writes them (compact JSON, `toolUseResult` on the tool result).
    #[test]
    fn task_descriptions_and_files_written_by_bash_are_kept() {
        let lines = [
            r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"Add rate limiting to the API client"},"uuid":"u1"}"#,
            r#"{"parentUuid":"u1","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_c1","name":"TaskCreate","input":{"subject":"Add a token bucket","description":"Write the bucket in src/limit.rs and wire it into src/client.rs; see docs/limits.md","activeForm":"Adding a token bucket"}}]},"type":"assistant","uuid":"a1"}"#,
            r#"{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_c1","type":"tool_result","content":"Task #1 created successfully: Add a token bucket"}]},"toolUseResult":{"task":{"id":"1","subject":"Add a token bucket"}},"uuid":"u2"}"#,
            r#"{"parentUuid":"u2","isSidechain":false,"message":{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_b1","name":"Bash","input":{"command":"cat > src/limit.rs <<'EOF'\npub struct Bucket;\nEOF","description":"write the bucket"}}]},"type":"assistant","uuid":"a2"}"#,
            r#"{"parentUuid":"a2","isSidechain":false,"message":{"id":"msg_3","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_u1","name":"TaskUpdate","input":{"taskId":"1","status":"in_progress"}}]},"type":"assistant","uuid":"a3"}"#,
            r#"{"parentUuid":"a3","isSidechain":false,"type":"user","message":{"role":"user","content":"yes, continue"},"uuid":"u3"}"#,
        ];
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for line in lines {
            writeln!(f, "{line}").unwrap();
        }
        let facts = read(f.path(), u64::MAX, 3).unwrap();
        assert_eq!(facts.task_source, Some(TaskSource::Tasks));
        let task = &facts.tasks[0];
        assert_eq!(
            (task.id.as_str(), task.status.clone()),
            ("1", TaskStatus::InProgress)
        );
        assert_eq!(
            task.description.as_deref(),
            Some(
                "Write the bucket in src/limit.rs and wire it into src/client.rs; see docs/limits.md"
            )
        );
        assert_eq!(
            facts.edited.last().map(|e| e.path.as_str()),
            Some("src/limit.rs")
        );
        assert_eq!(facts.requests, ["Add rate limiting to the API client"]);
        assert_eq!(
            facts.prompts.last().map(String::as_str),
            Some("yes, continue")
        );
    }

    /// The window read from the end starts after the first request: it is
    /// read from the file's start.
    #[test]
    fn the_first_request_is_found_before_the_window() {
        let mut entries = vec![prompt("Port the parser to the new grammar")];
        entries.extend((0..200).map(|_| prompt("ok")));
        entries.push(prompt("now also update the docs"));
        let f = transcript(&entries);
        let facts = read(f.path(), 2000, 2).unwrap();
        assert_eq!(
            facts.requests,
            [
                "Port the parser to the new grammar",
                "now also update the docs"
            ]
        );
    }

    #[test]
    fn a_bounded_window_starts_at_a_whole_line() {
        let mut entries = vec![prompt("first request")];
        entries
            .extend((0..200).map(|i| prompt(&format!("filler prompt number {i} with some text"))));
        entries.push(prompt("the latest request"));
        let f = transcript(&entries);
        let facts = read(f.path(), 2000, 2).unwrap();
        assert_eq!(
            facts.prompts.last().map(String::as_str),
            Some("the latest request")
        );
        assert!(facts.prompts.iter().all(|p| !p.contains("first request")));
        assert!(
            facts
                .prompts
                .iter()
                .all(|p| p.starts_with("filler") || p.starts_with("the latest")),
            "{:?}",
            facts.prompts
        );
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Real lines, torn, duplicated and mixed with noise: never a panic.
        #[test]
        fn any_mix_of_lines_is_read(picks in proptest::collection::vec((0usize..400, 0usize..3, any::<u8>()), 0..80)) {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code-2.1.330/transcripts");
            let lines: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .flat_map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap().lines().map(str::to_owned).collect::<Vec<_>>())
                .collect();
            let mut text = Vec::new();
            for (i, how, byte) in picks {
                let line = lines[i % lines.len()].as_bytes();
                match how {
                    0 => text.extend_from_slice(line),
                    1 => text.extend_from_slice(&line[..line.len() / 2]),
                    _ => text.extend_from_slice(&[byte; 7]),
                }
                text.push(b'\n');
            }
            let mut f = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut f, &text).unwrap();
            let facts = read(f.path(), u64::MAX, 3).unwrap();
            prop_assert!(facts.prompts.len() <= 3);
        }
    }
}
