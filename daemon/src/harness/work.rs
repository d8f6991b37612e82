//! What a session's own file says about the work, in terms every harness
//! shares: the task list, the files the agent wrote (by its edit tools, its
//! shell commands or its patches), and what the person asked for. Each
//! harness module reads its own format into a [`WorkLog`]; the capture
//! reads the resulting [`WorkFacts`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Prompts longer than this are shortened.
const MAX_PROMPT_CHARS: usize = 600;
/// Task descriptions longer than this are shortened.
const MAX_DESCRIPTION_CHARS: usize = 600;
/// Files remembered as written, most recent kept.
const MAX_EDITED_FILES: usize = 200;
/// Files remembered as read, most recent kept.
const MAX_READ_FILES: usize = 200;
/// Tasks kept from one list (a hostile session may hold any number).
const MAX_TASKS: usize = 200;
/// Requests that changed the work kept besides the first.
const MAX_LATER_REQUESTS: usize = 3;
/// Tool calls remembered while reading, for their results to find them.
const MAX_RECENT_CALLS: usize = 32;
/// Tool calls kept after the resume prompt's marker: what the agent did first.
pub const FIRST_CALLS: usize = 3;
/// Longest target (a command, a pattern) or error line kept of a tool call.
const MAX_CALL_TEXT_CHARS: usize = 160;
/// Words of a request that carry meaning, at least, for it to set or change
/// the work ("yes, continue" does neither).
const SUBSTANTIAL_WORDS: usize = 2;

/// Where a task list came from. Written as today's text (`todos`, `tasks`,
/// `workflow_state.yml`), so saved states stay readable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskSource {
    /// A tool whose every call carries the whole list (Claude Code's
    /// `TodoWrite`, Codex's `update_plan`, Gemini CLI's `write_todos`).
    #[default]
    #[serde(rename = "todos")]
    Todos,
    /// Claude Code's `TaskCreate` / `TaskUpdate`: the list is their sum.
    #[serde(rename = "tasks")]
    Tasks,
    /// The project's `.workflow/workflow_state.yml`.
    #[serde(rename = "workflow_state.yml")]
    WorkflowFile,
}

/// A task's status. Written as its text (`pending`, `in_progress`,
/// `completed`, or whatever else the source said).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum TaskStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    /// Any other word a source used (`cancelled`, `blocked`, ...).
    Other(String),
}

impl TaskStatus {
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Other(word) => word,
        }
    }
}

impl From<String> for TaskStatus {
    fn from(word: String) -> Self {
        match word.as_str() {
            "pending" => TaskStatus::Pending,
            "in_progress" => TaskStatus::InProgress,
            "completed" => TaskStatus::Completed,
            _ => TaskStatus::Other(word),
        }
    }
}

impl From<&str> for TaskStatus {
    fn from(word: &str) -> Self {
        TaskStatus::from(word.to_owned())
    }
}

impl From<TaskStatus> for String {
    fn from(status: TaskStatus) -> String {
        status.as_str().to_owned()
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskItem {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    pub active_form: Option<String>,
    /// The detail the agent wrote for the task (TaskCreate's `description`).
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedFile {
    /// As the tool call named it: absolute, or relative to the session's directory.
    pub path: String,
    pub edits: u32,
    /// The session's own write brought the file into being (the harness's
    /// file says so), rather than changing one that was there.
    pub created: bool,
}

/// A tool call the agent made, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The harness's id for the call, which its result repeats.
    pub id: Option<String>,
    pub tool: String,
    /// The file it names, else its command (one line) or pattern, clipped.
    pub target: Option<String>,
    /// `None` until its result is read; `Err` holds the first line of the error.
    pub outcome: Option<Result<(), String>>,
}

impl ToolCall {
    /// `succeeded`, `failed: <first line of the error>` or `no result yet`.
    pub fn outcome_words(&self) -> String {
        match &self.outcome {
            None => "no result yet".into(),
            Some(Ok(())) => "succeeded".into(),
            Some(Err(error)) if error.is_empty() => "failed".into(),
            Some(Err(error)) => format!("failed: {error}"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkFacts {
    pub tasks: Vec<TaskItem>,
    pub task_source: Option<TaskSource>,
    /// In order of their last write, most recent last.
    pub edited: Vec<EditedFile>,
    /// Files the agent read, as the tool call named them; most recent last.
    pub read: Vec<String>,
    /// Most recent last.
    pub prompts: Vec<String>,
    /// The requests that set the work: the session's first substantial one,
    /// then the latest ones that changed it (oldest first).
    pub requests: Vec<String>,
    /// The agent's last tool call in the window read, and how it ended.
    pub last_call: Option<ToolCall>,
    /// The first [`FIRST_CALLS`] tool calls after the line holding the
    /// marker looked for; `None` when no line held it.
    pub calls_after_marker: Option<Vec<ToolCall>>,
}

impl WorkFacts {
    /// Whether the file gave anything at all.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
            && self.edited.is_empty()
            && self.read.is_empty()
            && self.prompts.is_empty()
            && self.requests.is_empty()
    }
}

/// A whole task list as a planning tool writes it: each item's title under
/// `title_key` and its `status`; its `id` and `activeForm` where it has them,
/// else the id `<id_prefix>-<position>`.
pub fn task_list(items: &[Value], title_key: &str, id_prefix: &str) -> Vec<TaskItem> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            Some(TaskItem {
                id: item["id"]
                    .as_str()
                    .map_or_else(|| format!("{id_prefix}-{}", i + 1), str::to_owned),
                title: item[title_key].as_str()?.to_owned(),
                status: item["status"].as_str().unwrap_or("pending").into(),
                active_form: item["activeForm"].as_str().map(str::to_owned),
                description: None,
            })
        })
        .collect()
}

/// Gathers facts line by line; each harness feeds it what its format holds.
#[derive(Default)]
pub struct WorkLog {
    todos: Option<Vec<TaskItem>>,
    pub tasks: Vec<TaskItem>,
    source: Option<TaskSource>,
    edited: Vec<EditedFile>,
    read: Vec<String>,
    prompts: Vec<String>,
    first_request: Option<String>,
    later_requests: Vec<String>,
    recent_calls: Vec<ToolCall>,
    calls_after_marker: Option<Vec<ToolCall>>,
}

impl WorkLog {
    /// A whole task list, replacing the one before.
    pub fn todos(&mut self, mut list: Vec<TaskItem>) {
        list.truncate(MAX_TASKS);
        self.todos = Some(list);
        self.source = Some(TaskSource::Todos);
    }

    /// A task list kept by create and update calls changed.
    pub fn tasks_changed(&mut self) {
        self.tasks.truncate(MAX_TASKS);
        self.source = Some(TaskSource::Tasks);
    }

    /// A file the agent wrote.
    pub fn edited(&mut self, path: &str) {
        let path = path.trim();
        if path.is_empty() {
            return;
        }
        let (edits, created) = match self.edited.iter().position(|e| e.path == path) {
            Some(i) => {
                let earlier = self.edited.remove(i);
                (earlier.edits + 1, earlier.created)
            }
            None => (1, false),
        };
        if self.edited.len() >= MAX_EDITED_FILES {
            self.edited.remove(0);
        }
        self.edited.push(EditedFile {
            path: path.to_owned(),
            edits,
            created,
        });
    }

    /// A file the agent wrote that did not exist before this write: the
    /// write itself is counted once, where it was seen first.
    pub fn created(&mut self, path: &str) {
        let path = path.trim();
        if !self.edited.iter().any(|e| e.path == path) {
            self.edited(path);
        }
        if let Some(file) = self.edited.iter_mut().find(|e| e.path == path) {
            file.created = true;
        }
    }

    /// A file the agent read.
    pub fn read(&mut self, path: &str) {
        let path = path.trim();
        if path.is_empty() {
            return;
        }
        self.read.retain(|p| p != path);
        if self.read.len() >= MAX_READ_FILES {
            self.read.remove(0);
        }
        self.read.push(path.to_owned());
    }

    /// A shell command the agent ran: the files it writes by redirection,
    /// `tee`, `sed -i`, `touch`, `cp` / `mv` targets.
    pub fn shell(&mut self, command: &str) {
        for path in files_written_by_shell(command) {
            self.edited(&path);
        }
    }

    /// A patch in the `*** Begin Patch` format (Codex's `apply_patch`).
    pub fn patch(&mut self, patch: &str) {
        let added = files_added_by_patch(patch);
        for path in files_in_patch(patch) {
            if added.contains(&path) {
                self.created(&path);
            } else {
                self.edited(&path);
            }
        }
    }

    /// A tool call the agent made (`target` as [`call_target`] finds it).
    pub fn call(&mut self, id: Option<&str>, tool: &str, target: Option<String>) {
        let call = ToolCall {
            id: id.filter(|id| !id.is_empty()).map(str::to_owned),
            tool: clip_line(tool),
            target: target.map(|t| clip_line(&t)).filter(|t| !t.is_empty()),
            outcome: None,
        };
        if let Some(after) = self
            .calls_after_marker
            .as_mut()
            .filter(|calls| calls.len() < FIRST_CALLS)
        {
            after.push(call.clone());
        }
        if self.recent_calls.len() >= MAX_RECENT_CALLS {
            self.recent_calls.remove(0);
        }
        self.recent_calls.push(call);
    }

    /// How a tool call ended: `error` is its error text when it failed.
    /// Without an id it answers the latest call still waiting.
    /// Whether a kept call still waits for its result, so that a reader
    /// parses the result lines it would otherwise skip.
    pub fn awaits_result(&self) -> bool {
        self.recent_calls.iter().any(|c| c.outcome.is_none())
    }

    pub fn result(&mut self, id: Option<&str>, error: Option<&str>) {
        let call = self.recent_calls.iter_mut().rev().find(|c| match id {
            Some(id) => c.id.as_deref() == Some(id),
            None => c.outcome.is_none(),
        });
        if let Some(call) = call {
            call.outcome = Some(match error {
                None => Ok(()),
                Some(text) => Err(clip_line(text)),
            });
        }
    }

    /// The line holding the marker looked for was read: the calls from
    /// here on are the first ones after it (its first appearance counts).
    pub fn marker_seen(&mut self) {
        self.calls_after_marker.get_or_insert_with(Vec::new);
    }

    /// Something the person typed. Slash commands, their output and
    /// injected reminders (`<...>`) are not requests, nor a hook's context
    /// recorded with the prompt.
    /// What the person marked `<private>` is never kept.
    pub fn prompt(&mut self, text: &str) {
        let text = crate::secrets::strip_private(text);
        let text = without_hook_context(&text);
        let text = text.trim();
        if text.is_empty() || text.starts_with('<') {
            return;
        }
        let text = shorten(text, MAX_PROMPT_CHARS);
        if is_substantial(&text) {
            if self.first_request.is_none() {
                self.first_request = Some(text.clone());
            } else {
                self.later_requests.retain(|r| *r != text);
                self.later_requests.push(text.clone());
                if self.later_requests.len() > MAX_LATER_REQUESTS {
                    self.later_requests.remove(0);
                }
            }
        }
        self.prompts.push(text);
        // Only the latest few are kept; the window is bounded anyway.
        if self.prompts.len() > 64 {
            self.prompts.drain(..32);
        }
    }

    /// The first request, when the file's window started after it (read
    /// separately from the file's start).
    pub fn first_request_from_start(&mut self, first: Option<String>) {
        let Some(first) = first else { return };
        if self.first_request.as_ref() == Some(&first) {
            return;
        }
        if let Some(later_first) = self.first_request.replace(first) {
            self.later_requests.insert(0, later_first);
            if self.later_requests.len() > MAX_LATER_REQUESTS {
                self.later_requests.remove(0);
            }
        }
    }

    pub fn finish(mut self, keep_prompts: usize) -> WorkFacts {
        let (tasks, task_source) = match (self.source, self.todos) {
            (Some(TaskSource::Todos), Some(todos)) => (todos, Some(TaskSource::Todos)),
            (Some(TaskSource::Tasks), _) => (self.tasks, Some(TaskSource::Tasks)),
            _ => (Vec::new(), None),
        };
        let skip = self.prompts.len().saturating_sub(keep_prompts);
        self.prompts.drain(..skip);
        let mut requests: Vec<String> = self.first_request.into_iter().collect();
        requests.extend(self.later_requests);
        WorkFacts {
            tasks,
            task_source,
            edited: self.edited,
            read: self.read,
            prompts: self.prompts,
            requests,
            last_call: self.recent_calls.pop(),
            calls_after_marker: self.calls_after_marker,
        }
    }
}

/// Bytes read from the start of a session file for its first request, when
/// the window read from its end starts later.
pub const START_BYTES: u64 = 256 * 1024;

/// A harness's reader of its session file, one line at a time.
pub trait LineReader: Default {
    fn line(&mut self, line: &[u8]);
    fn log(&mut self) -> &mut WorkLog;
}

/// Reads the last `max_bytes` of a session file with `R` (and its start,
/// for the session's first request, when the window starts later).
pub fn read_file<R: LineReader>(
    path: &Path,
    max_bytes: u64,
    keep_prompts: usize,
) -> io::Result<WorkFacts> {
    read_file_after::<R>(path, max_bytes, keep_prompts, None, None)
}

/// The agent's first tool calls after the line that holds `marker`, read
/// with `R` as [`read_file_after`] reads them; `None` when no line read
/// holds it.
pub fn calls_after_marker<R: LineReader>(
    path: &Path,
    max_bytes: u64,
    marker: &str,
    from: Option<u64>,
) -> io::Result<Option<Vec<ToolCall>>> {
    read_file_after::<R>(path, max_bytes, 0, Some(marker), from)
        .map(|facts| facts.calls_after_marker)
}

/// [`read_file`], also keeping the first tool calls after the first line
/// (in the window read) that holds `marker`. With `from` (where the file
/// stood when the marker went out), the window is the `max_bytes` from
/// that offset on, not the file's last ones: the calls that follow a marker
/// come right after it, however long the session's file has grown since.
pub fn read_file_after<R: LineReader>(
    path: &Path,
    max_bytes: u64,
    keep_prompts: usize,
    marker: Option<&str>,
    from: Option<u64>,
) -> io::Result<WorkFacts> {
    let finder = marker
        .filter(|m| !m.is_empty())
        .map(|m| memchr::memmem::Finder::new(m.as_bytes()));
    let (mut file, meta) = crate::tail::open_regular(path)?
        .ok_or_else(|| io::Error::other(format!("{} is not a regular file", path.display())))?;
    let len = meta.len();
    // One byte early: the line `from` begins is whole, the one it cuts dropped.
    let from = from.filter(|at| *at <= len).map(|at| at.saturating_sub(1));
    let (start, end) = match from {
        Some(at) => (at, len.min(at.saturating_add(max_bytes))),
        None => (len.saturating_sub(max_bytes), len),
    };
    let mut first_request = None;
    if start > 0 && from.is_none() {
        let mut head = Vec::new();
        Read::by_ref(&mut file)
            .take(START_BYTES.min(start))
            .read_to_end(&mut head)?;
        let mut first = R::default();
        for line in whole_lines(&head, false) {
            first.line(line);
            if first.log().first_request.is_some() {
                break;
            }
        }
        first_request = first.log().first_request.take();
    }
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((end - start) as usize);
    // No further than the length measured: the harness may still be writing.
    file.take(end - start).read_to_end(&mut bytes)?;
    let mut reader = R::default();
    for line in whole_lines(&bytes, start > 0) {
        reader.line(line);
        if let Some(finder) = &finder
            && finder.find(line).is_some()
        {
            reader.log().marker_seen();
        }
    }
    let mut log = std::mem::take(reader.log());
    log.first_request_from_start(first_request);
    Ok(log.finish(keep_prompts))
}

/// The lines of `bytes`; the first is dropped when it is a fragment (the
/// window started mid-file).
fn whole_lines(bytes: &[u8], mid_file: bool) -> impl Iterator<Item = &[u8]> {
    let from = if mid_file {
        memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1)
    } else {
        0
    };
    bytes[from..].split(|b| *b == b'\n')
}

/// What a tool call works on, from its input: the file it names, else its
/// command's first line, else its pattern or query, else the task it
/// updates; for a whole task list, the title of the item in progress.
pub fn call_target(input: &Value) -> Option<String> {
    let text = |key: &str| input[key].as_str().map(str::trim).filter(|t| !t.is_empty());
    let file = [
        "file_path",
        "notebook_path",
        "absolute_path",
        "path",
        "dir_path",
    ]
    .into_iter()
    .find_map(text);
    if let Some(file) = file {
        return Some(file.to_owned());
    }
    let command = match &input["command"] {
        Value::String(command) => Some(command.as_str()),
        // `["bash", "-lc", "<script>"]`: the script is the last word.
        Value::Array(words) => words.last().and_then(Value::as_str),
        _ => None,
    }
    .or(input["cmd"].as_str());
    if let Some(command) = command.and_then(|c| c.lines().find(|l| !l.trim().is_empty())) {
        return Some(command.trim().to_owned());
    }
    if let Some(found) = ["pattern", "query", "url", "subject"]
        .into_iter()
        .find_map(text)
    {
        return Some(found.to_owned());
    }
    let task = input["taskId"].clone();
    match task {
        Value::String(id) if !id.is_empty() => return Some(id),
        Value::Number(id) => return Some(id.to_string()),
        _ => {}
    }
    for (list, title) in [
        ("todos", "content"),
        ("todos", "description"),
        ("plan", "step"),
    ] {
        let current = input[list]
            .as_array()
            .into_iter()
            .flatten()
            .find(|item| item["status"] == "in_progress")
            .and_then(|item| item[title].as_str());
        if let Some(current) = current {
            return Some(current.to_owned());
        }
    }
    None
}

/// The first line of outside text, cleaned and clipped as every outside
/// text hookd shows.
fn clip_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    protocol::text::clip(
        &protocol::text::one_line(line.unwrap_or("")),
        MAX_CALL_TEXT_CHARS,
    )
}

/// A task's description as kept: trimmed, bounded, `None` when empty.
pub fn description(text: Option<&str>) -> Option<String> {
    let text = text?.trim();
    (!text.is_empty()).then(|| shorten(text, MAX_DESCRIPTION_CHARS))
}

/// Words that neither set nor change the work.
const FILLER: &[&str] = &[
    "yes", "yeah", "yep", "yup", "no", "nope", "ok", "okay", "sure", "please", "thanks", "thank",
    "you", "go", "ahead", "continue", "proceed", "carry", "on", "keep", "going", "do", "it",
    "that", "this", "and", "then", "now", "the", "with", "next", "step", "lgtm", "great", "good",
    "fine", "sounds", "right", "alright", "cool", "nice", "perfect", "looks", "again", "same",
    "as", "before", "let's", "lets", "we", "what", "about", "for", "all", "just", "so", "well",
];

/// Whether a prompt says what to do (at least two meaningful words), as
/// opposed to an acknowledgement such as "yes, continue".
pub fn is_substantial(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_' || c == '.'))
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| w.chars().count() >= 2 && !FILLER.contains(&w.as_str()))
        .take(SUBSTANTIAL_WORDS)
        .count()
        >= SUBSTANTIAL_WORDS
}

/// Most files one command is taken to write.
const MAX_FILES_PER_COMMAND: usize = 16;

/// The files a shell command writes, as far as its words show: the target
/// of `>` / `>>`, and the file arguments of `tee`, `touch`, `sed -i`, and
/// the last argument of `cp` / `mv`. Words with shell expansions are left
/// out (their value is unknown).
pub fn files_written_by_shell(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let command = without_heredoc_bodies(command);
    for part in command.split(['\n', ';', '|', '&']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            // `>file`, `>>file`, `> file`, `2>file`, `x>file` (not `2>&1`).
            if let Some(at) = w.find('>') {
                let rest = w[at..].trim_start_matches('>');
                let target = if rest.is_empty() {
                    i += 1;
                    words.get(i).copied()
                } else {
                    Some(rest)
                };
                out.extend(target.and_then(plain_path));
            }
            i += 1;
        }
        let Some(program) = words.first() else {
            continue;
        };
        let args: Vec<&str> = words[1..]
            .iter()
            .take_while(|w| !w.contains('>') && !w.contains('<'))
            .copied()
            .collect();
        let files = || args.iter().filter(|a| !a.starts_with('-'));
        match *program {
            "tee" | "touch" => out.extend(files().filter_map(|a| plain_path(a))),
            "sed" if args.iter().any(|a| a.starts_with("-i")) => {
                // The script is the first non-option argument (unless -e gave it).
                let scripted = args.contains(&"-e");
                out.extend(
                    files()
                        .skip(usize::from(!scripted))
                        .filter_map(|a| plain_path(a)),
                );
            }
            "cp" | "mv" if files().count() >= 2 => {
                out.extend(files().next_back().and_then(|a| plain_path(a)));
            }
            _ => {}
        }
    }
    out.dedup();
    out.truncate(MAX_FILES_PER_COMMAND);
    out
}

/// The command with the bodies of its here-documents left out (their
/// lines are data, not commands).
fn without_heredoc_bodies(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut terminator: Option<String> = None;
    for line in command.lines() {
        if let Some(end) = &terminator {
            if line.trim() == end {
                terminator = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if let Some(at) = line
            .find("<<")
            .filter(|at| !line[at + 2..].starts_with('<'))
        {
            let word = line[at + 2..]
                .trim_start_matches(['-', '~'])
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_matches(|c| c == '\'' || c == '"');
            if !word.is_empty() {
                terminator = Some(word.to_owned());
            }
        }
    }
    out
}

/// A word that names a file plainly: quotes removed; nothing the shell
/// would expand, no device, no directory.
fn plain_path(word: &str) -> Option<String> {
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    let plain = !word.is_empty()
        && !word.contains(['$', '`', '*', '?', '~', '(', ')', '{', '}', '&'])
        && !word.starts_with("/dev/")
        && !word.ends_with('/');
    plain.then(|| word.to_owned())
}

/// The files a `*** Begin Patch` patch adds, updates, deletes or moves to.
pub fn files_in_patch(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        for marker in [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ] {
            if let Some(path) = line.strip_prefix(marker) {
                let path = path.trim();
                if !path.is_empty() && !out.iter().any(|p| p == path) {
                    out.push(path.to_owned());
                }
            }
        }
        if out.len() >= MAX_FILES_PER_COMMAND {
            break;
        }
    }
    out
}

/// The files a patch adds (`*** Add File:`).
fn files_added_by_patch(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|line| line.strip_prefix("*** Add File: "))
        .map(|path| path.trim().to_owned())
        .filter(|path| !path.is_empty())
        .take(MAX_FILES_PER_COMMAND)
        .collect()
}

/// A message's text: the string itself, or the `text` of each part of a
/// list joined by `separator`. `None` for any other shape.
pub fn content_text(content: &Value, separator: &str) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(separator),
        ),
        _ => None,
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// Gemini CLI and Qwen Code (its fork) hand a hook's context to the model
/// inside the prompt and record it there, wrapped in these tags (before the
/// person's words for SessionStart's, after them for a prompt's): it is
/// hookd's own text, not the person's.
const HOOK_CONTEXT_OPEN: &str = "<hook_context>";
const HOOK_CONTEXT_CLOSE: &str = "</hook_context>";

/// The person's words of a recorded prompt, without hook context.
pub fn without_hook_context(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(HOOK_CONTEXT_OPEN) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut words = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(HOOK_CONTEXT_OPEN) {
        words.push_str(&rest[..at]);
        rest = rest[at..]
            .find(HOOK_CONTEXT_CLOSE)
            .map_or("", |end| &rest[at + end + HOOK_CONTEXT_CLOSE.len()..]);
    }
    words.push_str(rest);
    std::borrow::Cow::Owned(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_sources_keep_their_text() {
        for word in ["pending", "in_progress", "completed", "cancelled"] {
            let status = TaskStatus::from(word);
            assert_eq!(serde_json::to_value(&status).unwrap(), word);
            assert_eq!(
                serde_json::from_value::<TaskStatus>(word.into()).unwrap(),
                status
            );
        }
        assert_eq!(TaskStatus::from("in_progress"), TaskStatus::InProgress);
        for (source, word) in [
            (TaskSource::Todos, "todos"),
            (TaskSource::Tasks, "tasks"),
            (TaskSource::WorkflowFile, "workflow_state.yml"),
        ] {
            assert_eq!(serde_json::to_value(source).unwrap(), word);
            assert_eq!(
                serde_json::from_value::<TaskSource>(word.into()).unwrap(),
                source
            );
        }
    }

    #[test]
    fn acknowledgements_do_not_set_the_work() {
        for ack in [
            "yes, continue",
            "ok",
            "Go ahead.",
            "continue with the next step",
            "thanks! keep going",
            "yes do it",
        ] {
            assert!(!is_substantial(ack), "{ack}");
        }
        for request in [
            "add OAuth support to the client",
            "fix the failing test",
            "TURN 1: add step 1 to notes.txt",
            "now also handle expired tokens",
        ] {
            assert!(is_substantial(request), "{request}");
        }
    }

    #[test]
    fn the_first_request_and_the_latest_changes_are_kept() {
        let mut log = WorkLog::default();
        for p in [
            "add OAuth support to the client",
            "yes, continue",
            "also handle expired tokens",
            "ok",
            "<command-name>/compact</command-name>",
            "write the refresh tests too",
            "go on",
        ] {
            log.prompt(p);
        }
        let facts = log.finish(2);
        assert_eq!(
            facts.requests,
            [
                "add OAuth support to the client",
                "also handle expired tokens",
                "write the refresh tests too"
            ]
        );
        assert_eq!(facts.prompts, ["write the refresh tests too", "go on"]);
    }

    /// A prompt that opens with a private span is still a request, without it.
    #[test]
    fn private_spans_of_prompts_are_never_kept() {
        let mut log = WorkLog::default();
        log.prompt("<private>pin 4411</private> add OAuth support to the client");
        log.prompt("go on <PRIVATE>and the rest");
        let facts = log.finish(8);
        assert_eq!(facts.requests, ["add OAuth support to the client"]);
        assert_eq!(facts.prompts, ["add OAuth support to the client", "go on"]);
    }

    #[test]
    fn a_first_request_read_from_the_start_goes_first() {
        let mut log = WorkLog::default();
        log.prompt("also handle expired tokens");
        log.first_request_from_start(Some("add OAuth support".into()));
        assert_eq!(
            log.finish(0).requests,
            ["add OAuth support", "also handle expired tokens"]
        );
    }

    #[test]
    fn shell_commands_name_the_files_they_write() {
        let cases: [(&str, &[&str]); 9] = [
            ("echo 'step 1' >> notes.txt", &["notes.txt"]),
            (
                "cat > src/a.rs <<'EOF'\nif x > 3 {}\nEOF\ntouch b",
                &["src/a.rs", "b"],
            ),
            ("printf x>out.log 2>&1", &["out.log"]),
            ("cargo test 2>/dev/null | tee test.log", &["test.log"]),
            (
                "sed -i 's/a/b/' src/lib.rs src/main.rs",
                &["src/lib.rs", "src/main.rs"],
            ),
            ("sed -i -e 's/a/b/' src/lib.rs", &["src/lib.rs"]),
            (
                "cp template.md docs/guide.md && touch done",
                &["docs/guide.md", "done"],
            ),
            ("echo $HOME > \"$OUT\"; ls -la", &[]),
            ("git status && cargo build", &[]),
        ];
        for (command, files) in cases {
            assert_eq!(files_written_by_shell(command), files, "{command}");
        }
        let many = (0..1000)
            .map(|i| format!("> f{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(files_written_by_shell(&many).len(), MAX_FILES_PER_COMMAND);
    }

    #[test]
    fn tool_calls_keep_their_target_and_outcome_and_the_first_ones_after_the_marker() {
        use serde_json::json;
        let targets = [
            (
                json!({"file_path": "/p/src/a.rs", "content": "x"}),
                "/p/src/a.rs",
            ),
            (json!({"command": "cargo test\n--all"}), "cargo test"),
            (json!({"command": ["bash", "-lc", "ls -la"]}), "ls -la"),
            (json!({"pattern": "fn main", "path": ""}), "fn main"),
            (json!({"taskId": 2, "status": "in_progress"}), "2"),
            (
                json!({"todos": [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}]}),
                "b",
            ),
        ];
        for (input, target) in targets {
            assert_eq!(call_target(&input).as_deref(), Some(target), "{input}");
        }
        assert_eq!(call_target(&json!({"x": 1})), None);

        let mut log = WorkLog::default();
        log.call(Some("t1"), "Read", Some("a.rs".into()));
        log.result(Some("t1"), None);
        log.marker_seen();
        log.call(Some("t2"), "Bash", Some("cargo build".into()));
        log.result(Some("t2"), Some("error[E0425]: cannot find value\nmore"));
        for i in 3..8 {
            log.call(Some(&format!("t{i}")), "Grep", Some(format!("p{i}")));
        }
        log.marker_seen();
        let facts = log.finish(0);
        let after = facts.calls_after_marker.unwrap();
        assert_eq!(after.len(), FIRST_CALLS);
        assert_eq!(after[0].tool, "Bash");
        let last = facts.last_call.unwrap();
        assert_eq!(
            (last.tool.as_str(), last.target.as_deref()),
            ("Grep", Some("p7"))
        );
        assert_eq!(last.outcome_words(), "no result yet");

        let mut log = WorkLog::default();
        log.call(Some("t2"), "Bash", Some("cargo build".into()));
        log.result(Some("t2"), Some("error[E0425]: cannot find value\nmore"));
        assert_eq!(
            log.finish(0).last_call.unwrap().outcome_words(),
            "failed: error[E0425]: cannot find value"
        );
        let long = "x".repeat(1000);
        let mut log = WorkLog::default();
        log.call(None, "Bash", Some(long));
        log.result(None, None);
        let last = log.finish(0).last_call.unwrap();
        assert!(last.target.as_ref().unwrap().chars().count() <= MAX_CALL_TEXT_CHARS + 1);
        assert_eq!(last.outcome_words(), "succeeded");
    }

    #[test]
    fn patches_name_their_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hello\n*** Delete File: old.txt\n*** Update File: src/b.rs\n*** Move to: src/c.rs\n*** End Patch";
        assert_eq!(
            files_in_patch(patch),
            ["src/a.rs", "docs/new.md", "old.txt", "src/b.rs", "src/c.rs"]
        );
        let mut log = WorkLog::default();
        log.patch(patch);
        log.edited("docs/new.md");
        let created: Vec<(&str, u32)> = log
            .edited
            .iter()
            .filter(|e| e.created)
            .map(|e| (e.path.as_str(), e.edits))
            .collect();
        assert_eq!(
            created,
            [("docs/new.md", 2)],
            "a file a patch adds is created"
        );
    }
}
