//! A scripted model server for the Codex CLI, Gemini CLI, Qwen Code,
//! Copilot CLI and OpenCode scenarios: the `hookd-mock-model` binary (`tests/mock/main.rs`) serves one
//! of three APIs ([`mock_codex`](crate::mock_codex),
//! [`mock_gemini`](crate::mock_gemini), and OpenAI's Chat Completions,
//! [`mock_chat`](crate::mock_chat)) on 127.0.0.1, answering the main requests with the script's replies in
//! order, and logs every request before answering it, so that a test can
//! assert what reached the model.
//!
//! It is a separate process, not a thread of the test, because it must live
//! inside the loopback-only network namespace (`unshare -rn`) that the
//! clients then join; a multi-threaded test process cannot move itself there.
//! Plain HTTP/1.1 on std sockets: one connection a request (`Connection:
//! close`), bodies by `Content-Length` or chunked.
//!
//! The script (JSON) is `{"replies": [Reply…], "summary": {"text", "tokens"},
//! "latency_ms"}` (`latency_ms`, 0 unless given: how long the model thinks
//! before each answer), a reply `{"label", "tokens", "text"}` or `{"label", "tokens", "shell"}`
//! (a shell tool call running that command). `tokens` is the context size the
//! reply's usage reports. The log has one line a request:
//! `{"n", "t", "path", "kind", "label", "body"}`, `t` when it was answered
//! (seconds since the Unix epoch), `kind` being `main`, `summary`
//! (the client's compaction request), `utility` (side calls that want JSON) or
//! `other` (answered 404).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The text of the reply given once the script has run out; a scenario that
/// sees it asked the model more than it planned.
pub const EXHAUSTED: &str = "MOCK_SCRIPT_EXHAUSTED";
/// A request body larger than this is refused (the clients send well under a
/// megabyte; this bounds what a confused client can make us buffer).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub label: String,
    /// The context size the reply's usage reports.
    pub tokens: u64,
    pub action: Action,
}

/// What a reply does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Ends the turn with this text.
    Text(String),
    /// Calls the client's shell tool with this command.
    Shell(String),
}

impl Reply {
    pub fn text(label: &str, tokens: u64, text: &str) -> Reply {
        Reply {
            label: label.into(),
            tokens,
            action: Action::Text(text.into()),
        }
    }

    pub fn shell(label: &str, tokens: u64, command: &str) -> Reply {
        Reply {
            label: label.into(),
            tokens,
            action: Action::Shell(command.into()),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({"label": self.label, "tokens": self.tokens});
        match &self.action {
            Action::Text(t) => v["text"] = json!(t),
            Action::Shell(c) => v["shell"] = json!(c),
        }
        v
    }

    fn from_json(v: &Value) -> Reply {
        let label = v["label"].as_str().unwrap_or("reply").to_owned();
        let tokens = v["tokens"].as_u64().unwrap_or(1_000);
        let action = match (v["shell"].as_str(), v["text"].as_str()) {
            (Some(c), _) => Action::Shell(c.into()),
            (None, t) => Action::Text(t.unwrap_or("").into()),
        };
        Reply {
            label,
            tokens,
            action,
        }
    }
}

/// Which API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Codex,
    Gemini,
    /// OpenAI's Chat Completions.
    Chat,
}

/// What a request is, and what the mock answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A turn of the conversation: the script's next reply.
    Main,
    /// The client's compaction or compression request: the script's summary.
    Summary,
    /// A side call that wants a small JSON text (Gemini's routing and
    /// next-speaker checks, a Chat Completions `response_format`).
    Utility,
    /// Anything else: 404.
    Other,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Main => "main",
            Kind::Summary => "summary",
            Kind::Utility => "utility",
            Kind::Other => "other",
        }
    }
}

/// A response, ready to be written.
pub struct HttpResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn not_found() -> HttpResponse {
        HttpResponse {
            status: 404,
            content_type: "application/json",
            body: br#"{"error":{"code":404,"message":"not in the mock","status":"NOT_FOUND"}}"#
                .to_vec(),
        }
    }

    pub fn sse(body: String) -> HttpResponse {
        HttpResponse {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn json(v: &Value) -> HttpResponse {
        HttpResponse {
            status: 200,
            content_type: "application/json",
            body: v.to_string().into_bytes(),
        }
    }
}

struct State {
    api: Api,
    replies: Vec<Reply>,
    next: usize,
    summary: Reply,
    requests: u64,
    log: PathBuf,
}

impl State {
    /// Logs the request, then builds the answer.
    fn answer(&mut self, path: &str, body: &Value) -> HttpResponse {
        self.requests += 1;
        let n = self.requests;
        let kind = match self.api {
            Api::Codex => crate::mock_codex::classify(path, body),
            Api::Gemini => crate::mock_gemini::classify(path, body),
            Api::Chat => crate::mock_chat::classify(path, body),
        };
        let reply = match kind {
            Kind::Main => Some(match self.replies.get(self.next) {
                Some(r) => {
                    self.next += 1;
                    r.clone()
                }
                None => Reply::text(EXHAUSTED, 1_000, EXHAUSTED),
            }),
            Kind::Summary => Some(match &self.summary.action {
                Action::Text(text) => Reply {
                    action: Action::Text(answer_block_request(&body.to_string(), text)),
                    ..self.summary.clone()
                },
                Action::Shell(_) => self.summary.clone(),
            }),
            Kind::Utility => Some(Reply::text("utility", 200, "")),
            Kind::Other => None,
        };
        let label = reply.as_ref().map_or("not found", |r| r.label.as_str());
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let entry = json!({"n": n, "t": t, "path": path, "kind": kind.name(), "label": label, "body": body});
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the mock's request log");
        writeln!(file, "{entry}").expect("write the mock's request log");
        match (reply, self.api) {
            (None, _) => HttpResponse::not_found(),
            (Some(r), Api::Codex) => crate::mock_codex::respond(n, &kind, &r, body),
            (Some(r), Api::Gemini) => crate::mock_gemini::respond(n, &kind, &r, path, body),
            (Some(r), Api::Chat) => crate::mock_chat::respond(n, &kind, &r, body),
        }
    }
}

/// What a summarizer that follows hookd's PreCompact instructions writes:
/// `summary` with the token those instructions give (found anywhere in
/// `request`, which holds them when the client passed them on) after each
/// `hookd-state` info string. Without instructions, `summary` as it is.
pub fn answer_block_request(request: &str, summary: &str) -> String {
    const ASKED: &str = "info string `hookd-state ";
    let Some(token) = request.find(ASKED).map(|at| {
        request[at + ASKED.len()..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect::<String>()
    }) else {
        return summary.to_owned();
    };
    summary
        .split_inclusive('\n')
        .map(|line| match line.trim_end().strip_suffix("hookd-state") {
            Some(fence) if fence.trim_start().starts_with("```") => {
                format!("{fence}hookd-state {token}\n")
            }
            _ => line.to_owned(),
        })
        .collect()
}

/// `ip link set lo up` through ioctl(2), without needing iproute2: a fresh
/// network namespace starts with its loopback down.
pub fn loopback_up() -> std::io::Result<()> {
    // struct ifreq: the interface name, then a union whose first member used
    // here is the short `ifr_flags`; 40 bytes covers it on Linux.
    let mut ifreq = [0u8; 40];
    ifreq[..2].copy_from_slice(b"lo");
    // SAFETY: a plain socket(2) call; the descriptor is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write an ifreq, which the
    // 40-byte buffer holds; fd is the socket opened above.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, ifreq.as_mut_ptr()) < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            let flags = i16::from_ne_bytes([ifreq[16], ifreq[17]]) | libc::IFF_UP as i16;
            ifreq[16..18].copy_from_slice(&flags.to_ne_bytes());
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, ifreq.as_mut_ptr()) < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: closing the socket opened above.
    unsafe { libc::close(fd) };
    result
}

/// Reads one request: the method, the path and the body (parsed as JSON,
/// else kept as text under `unparsed`). At the end of the stream the method
/// is empty.
pub fn read_request(reader: &mut impl BufRead) -> std::io::Result<(String, String, Value)> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((&header, ""));
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().unwrap_or(0);
        } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let mut raw = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if size == 0 || raw.len() + size > MAX_BODY {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            raw.extend_from_slice(&chunk[..size]);
        }
    } else {
        raw.resize(length.min(MAX_BODY), 0);
        reader.read_exact(&mut raw)?;
    }
    let body = if raw.is_empty() {
        json!({"method": method})
    } else {
        serde_json::from_slice(&raw)
            .unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(&raw)}))
    };
    Ok((method, path, body))
}

fn serve(stream: TcpStream, state: &Mutex<State>, latency: Duration) -> std::io::Result<()> {
    let (_method, path, body) = read_request(&mut BufReader::new(&stream))?;
    std::thread::sleep(latency);
    let response = state.lock().unwrap().answer(&path, &body);
    let reason = if response.status == 200 {
        "OK"
    } else {
        "Not Found"
    };
    let mut out = &stream;
    write!(
        out,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    )?;
    out.write_all(&response.body)?;
    out.flush()
}

/// `hookd-mock-model --api codex|gemini|chat --script FILE --log FILE
/// --port-file FILE [--loopback-up]`: serves until killed.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(api), Some(script), Some(log), Some(port_file)) = (
        value("--api"),
        value("--script"),
        value("--log"),
        value("--port-file"),
    ) else {
        eprintln!(
            "usage: hookd-mock-model --api codex|gemini|chat --script FILE --log FILE --port-file FILE [--loopback-up]"
        );
        return 2;
    };
    let api = match api.as_str() {
        "codex" => Api::Codex,
        "gemini" => Api::Gemini,
        "chat" => Api::Chat,
        other => {
            eprintln!("hookd-mock-model: unknown API {other}");
            return 2;
        }
    };
    if args.iter().any(|a| a == "--loopback-up")
        && let Err(e) = loopback_up()
    {
        eprintln!("hookd-mock-model: cannot bring lo up: {e}");
        return 1;
    }
    let script: Value = match std::fs::read_to_string(&script)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hookd-mock-model: {script}: {e}");
            return 1;
        }
    };
    let replies = script["replies"]
        .as_array()
        .map(|a| a.iter().map(Reply::from_json).collect())
        .unwrap_or_default();
    let summary = Reply {
        label: "summary".into(),
        tokens: script["summary"]["tokens"].as_u64().unwrap_or(2_000),
        action: Action::Text(
            script["summary"]["text"]
                .as_str()
                .unwrap_or("E2E_SUMMARY")
                .into(),
        ),
    };
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("hookd-mock-model: bind 127.0.0.1: {e}");
            return 1;
        }
    };
    let state = Arc::new(Mutex::new(State {
        api,
        replies,
        next: 0,
        summary,
        requests: 0,
        log: PathBuf::from(log),
    }));
    // Written whole, then renamed: the test reads it as soon as it exists.
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let tmp = format!("{port_file}.tmp");
    if std::fs::write(&tmp, port.to_string())
        .and_then(|()| std::fs::rename(&tmp, Path::new(&port_file)))
        .is_err()
    {
        eprintln!("hookd-mock-model: cannot write {port_file}");
        return 1;
    }
    let latency = Duration::from_millis(script["latency_ms"].as_u64().unwrap_or(0));
    for stream in listener.incoming().flatten() {
        let state = Arc::clone(&state);
        std::thread::spawn(move || {
            if let Err(e) = serve(stream, &state, latency) {
                eprintln!("hookd-mock-model: {e}");
            }
        });
    }
    0
}

/// One request the mock received, as the test reads it back.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub n: u64,
    /// When the mock answered it: seconds since the Unix epoch.
    pub received: f64,
    pub path: String,
    pub kind: String,
    /// The label of the reply given.
    pub label: String,
    pub body: Value,
    text: String,
}

impl ModelRequest {
    /// Everything the model reads in the request's conversation (messages,
    /// tool calls and results; not the tool definitions, nor the system
    /// prompt except in Chat Completions, where it is a message).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many times `needle` occurs in [`text`](Self::text).
    pub fn count(&self, needle: &str) -> usize {
        self.text.matches(needle).count()
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.text.contains(needle)
    }
}

/// The mock's request log.
#[derive(Debug, Clone)]
pub struct ModelLog {
    pub requests: Vec<ModelRequest>,
}

impl ModelLog {
    pub fn read(path: &Path, api: Api) -> ModelLog {
        let requests = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("mock log line");
                let text = match api {
                    Api::Codex => crate::mock_codex::conversation_text(&v["body"]),
                    Api::Gemini => crate::mock_gemini::conversation_text(&v["body"]),
                    Api::Chat => crate::mock_chat::conversation_text(&v["body"]),
                };
                ModelRequest {
                    n: v["n"].as_u64().unwrap_or(0),
                    received: v["t"].as_f64().unwrap_or_default(),
                    path: v["path"].as_str().unwrap_or("").to_owned(),
                    kind: v["kind"].as_str().unwrap_or("").to_owned(),
                    label: v["label"].as_str().unwrap_or("").to_owned(),
                    body: v["body"].clone(),
                    text,
                }
            })
            .collect();
        ModelLog { requests }
    }

    /// The labels of the replies given, in order (404s included).
    pub fn labels(&self) -> Vec<&str> {
        self.requests.iter().map(|r| r.label.as_str()).collect()
    }

    /// The requests of one kind (`main`, `summary`, `utility`, `other`).
    pub fn of_kind(&self, kind: &str) -> Vec<&ModelRequest> {
        self.requests.iter().filter(|r| r.kind == kind).collect()
    }

    /// Whether a main request came after the script ran out.
    pub fn exhausted(&self) -> bool {
        self.requests.iter().any(|r| r.label == EXHAUSTED)
    }

    /// The one request answered with the reply labelled `label`.
    pub fn answered_with(&self, label: &str) -> &ModelRequest {
        let found: Vec<&ModelRequest> = self.requests.iter().filter(|r| r.label == label).collect();
        assert_eq!(
            found.len(),
            1,
            "one request answered with {label:?}: {:?}",
            self.labels()
        );
        found[0]
    }

    /// The first main request whose conversation contains `needle`.
    pub fn first_containing(&self, needle: &str) -> Option<&ModelRequest> {
        self.requests
            .iter()
            .find(|r| r.kind == "main" && r.contains(needle))
    }

    /// The main requests after request `n`.
    pub fn main_after(&self, n: u64) -> Vec<&ModelRequest> {
        self.requests
            .iter()
            .filter(|r| r.kind == "main" && r.n > n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_survive_the_script_file() {
        for reply in [
            Reply::text("t1.text", 1_234, "Done."),
            Reply::shell("t1.tool", 99, "echo hi > notes.txt"),
        ] {
            assert_eq!(Reply::from_json(&reply.to_json()), reply);
        }
    }

    #[test]
    fn codex_compaction_requests_get_the_summary() {
        let turn = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "TURN 1"}]},
        ]});
        let compaction = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "TURN 1"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text",
                "text": "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary"}]},
        ]});
        assert_eq!(
            crate::mock_codex::classify("/v1/responses", &turn),
            Kind::Main
        );
        assert_eq!(
            crate::mock_codex::classify("/v1/responses", &compaction),
            Kind::Summary
        );
        assert_eq!(
            crate::mock_codex::classify("/v1/models", &turn),
            Kind::Other
        );
    }

    #[test]
    fn codex_shell_calls_and_usage() {
        let body = json!({"tools": [{"type": "function", "name": "exec_command"}], "input": []});
        let sse =
            crate::mock_codex::respond(7, &Kind::Main, &Reply::shell("t", 5_000, "ls"), &body);
        let text = String::from_utf8(sse.body).unwrap();
        assert!(text.contains(r#""name":"exec_command""#), "{text}");
        assert!(text.contains(r#"\"cmd\":\"ls\""#), "{text}");
        assert!(text.contains(r#""total_tokens":5000"#), "{text}");
        assert!(text.ends_with("\n\n") && text.contains("event: response.completed"));
    }

    #[test]
    fn gemini_requests_by_kind() {
        let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
        let user = |text: &str| json!({"contents": [{"role": "user", "parts": [{"text": text}]}]});
        assert_eq!(
            crate::mock_gemini::classify(path, &user("TURN 1")),
            Kind::Main
        );
        assert_eq!(
            crate::mock_gemini::classify(
                "/v1beta/models/gemini-2.5-flash:generateContent",
                &user("Generate a new <state_snapshot> based on the provided history.")
            ),
            Kind::Summary
        );
        let mut utility = user("who speaks next?");
        utility["generationConfig"] = json!({"responseMimeType": "application/json"});
        assert_eq!(crate::mock_gemini::classify(path, &utility), Kind::Utility);
        let reply = crate::mock_gemini::respond(
            1,
            &Kind::Main,
            &Reply::text("r", 42, "ok"),
            path,
            &utility,
        );
        let text = String::from_utf8(reply.body).unwrap();
        let data: Value =
            serde_json::from_str(text.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(data["usageMetadata"]["promptTokenCount"], 42);
        assert_eq!(data["modelVersion"], "gemini-2.5-flash");
    }
}
