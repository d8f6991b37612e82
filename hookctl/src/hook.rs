//! `hookctl hook [EVENT]`: what a harness runs on every hook. It reads the
//! payload, asks hookd, and prints what hookd decided. It must never break or
//! stall the agent: when hookd cannot answer within the time budget it exits
//! 0 with no output, and it never exits 2 ("block") unless the configuration
//! allows hookd to block.

use crate::Context;
use crate::client::{Client, ClientError};
use protocol::config::ClientConfig;
use protocol::wire::{ErrorKind, Harness, HookRequest, Request, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The harness `hookctl hook` serves when no `--harness` names one: the
/// hooks `hookctl install` wires for it say no more than the event.
pub const DEFAULT_HARNESS: Harness = Harness::ClaudeCode;

/// Largest payload accepted on stdin.
pub const MAX_STDIN_BYTES: usize = 16 * 1024 * 1024;

/// Who finishes the process: the answer, or the watchdog at the deadline.
static FINISH: AtomicU8 = AtomicU8::new(WAITING);
const WAITING: u8 = 0;
const ANSWERING: u8 = 1;
const TIMED_OUT: u8 = 2;

pub struct HookArgs {
    pub event: Option<String>,
    pub harness: Harness,
    pub timeout_ms: Option<u64>,
    /// When the process started: the budget counts from here.
    pub started: Instant,
}

/// The fields hookctl itself reads from a payload: its event, and whether
/// it is Cursor's.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    hook_event_name: Option<serde_json::Value>,
    #[serde(default)]
    cursor_version: Option<serde_json::Value>,
    #[serde(default)]
    conversation_id: Option<serde_json::Value>,
    #[serde(default)]
    workspace_roots: Option<serde_json::Value>,
}

pub fn run(ctx: &Context, args: HookArgs) -> ExitCode {
    let client_config = ctx.client_config();
    let deadline_for = |event: Option<&str>| {
        let budget = args
            .timeout_ms
            .unwrap_or_else(|| budget_ms(&client_config, event));
        args.started + Duration::from_millis(budget)
    };
    // Armed before stdin is read: a stdin that never closes is bounded too.
    let mut deadline = deadline_for(args.event.as_deref());
    start_watchdog(deadline, ctx.verbose);
    // Cursor reads JSON on every path, `{}` when there is nothing to say.
    let json_always = |harness| harness == Harness::Cursor;
    JSON_WHEN_SILENT.store(json_always(args.harness), Ordering::SeqCst);
    // Cursor runs Claude Code's hooks too: only a payload tells.
    let peek_cursor = args.harness == Harness::ClaudeCode;
    let payload = match read_payload(args.event.is_none(), peek_cursor) {
        Ok(p) => p,
        Err(message) => {
            return answer(|| {
                eprintln!("hookctl: {message}");
                if json_always(args.harness) {
                    silent_answer();
                    return ExitCode::SUCCESS;
                }
                ExitCode::FAILURE
            });
        }
    };
    let harness = if payload.cursors {
        Harness::Cursor
    } else {
        args.harness
    };
    JSON_WHEN_SILENT.store(json_always(harness), Ordering::SeqCst);
    if args.event.is_none() && payload.event.is_some() {
        // Only now is the event known, and with it its own budget.
        deadline = deadline_for(payload.event.as_deref());
        start_watchdog(deadline, ctx.verbose);
    }

    let request = Request::Hook(HookRequest {
        harness,
        event: args.event,
        payload: payload.raw,
        env: protocol::env_vars(protocol::wire::is_forwarded_env),
        cwd: std::env::current_dir().ok(),
    });
    let greeting_within = Duration::from_millis(client_config.hook_timeout_ms);
    let reply = Client::one_request(
        &ctx.socket,
        deadline,
        greeting_within,
        client_config.autostart,
        &request,
    );
    match reply {
        Ok(Response::Hook(reply)) => answer(|| {
            let mut code = reply.exit_code;
            if code == 2 && !client_config.allow_block {
                ctx.note("hookd asked to block (exit 2) but client.allow_block is off; exiting 0");
                code = 0;
            }
            let _ = std::io::stdout().write_all(reply.stdout.as_bytes());
            let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
            let _ = std::io::stdout().flush();
            ExitCode::from(code.clamp(0, 255) as u8)
        }),
        Ok(other) => answer(|| {
            ctx.note(&crate::client::unexpected("a hook", &other).to_string());
            silent_answer();
            ExitCode::SUCCESS
        }),
        // The payload itself is at fault (too deeply nested, say): say so, never block.
        Err(ClientError::Daemon(e)) if e.kind == ErrorKind::BadPayload => answer(|| {
            eprintln!("hookctl: hookd refused the hook payload: {}", e.message);
            if json_always(harness) {
                silent_answer();
                return ExitCode::SUCCESS;
            }
            ExitCode::FAILURE
        }),
        Err(e) => answer(|| {
            // Fail open: the agent carries on as if there were no hook.
            ctx.note(&e.to_string());
            silent_answer();
            ExitCode::SUCCESS
        }),
    }
}

struct Payload {
    raw: Box<RawValue>,
    event: Option<String>,
    /// Cursor's, by its own fields.
    cursors: bool,
}

/// What a hook answers when hookd has nothing to say, or could not be
/// asked: nothing, or `{}` for a harness that reads JSON on every path.
fn silent_answer() {
    if JSON_WHEN_SILENT.load(Ordering::SeqCst) {
        let _ = std::io::stdout().write_all(SILENT_JSON);
        let _ = std::io::stdout().flush();
    }
}

/// The payload, its `hook_event_name` when `want_event`, and whether it
/// is Cursor's when `peek_cursor`.
fn read_payload(want_event: bool, peek_cursor: bool) -> Result<Payload, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err("`hookctl hook` reads the harness's hook JSON on stdin; pipe it in".into());
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_STDIN_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the hook payload from stdin: {e}"))?;
    if bytes.len() > MAX_STDIN_BYTES {
        return Err(format!(
            "the hook payload on stdin is larger than {} MiB; nothing was sent",
            MAX_STDIN_BYTES >> 20
        ));
    }
    let mut text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "the hook payload on stdin is not UTF-8 (invalid byte at offset {}); nothing was sent",
            e.utf8_error().valid_up_to()
        )
    })?;
    // Trimmed in place: a payload can be megabytes of tool output.
    text.truncate(text.trim_end().len());
    let leading = text.len() - text.trim_start().len();
    text.drain(..leading);
    if text.is_empty() {
        return Err(
            "stdin is empty: expected the harness's hook JSON object; nothing was sent".into(),
        );
    }
    // Structs also deserialize from arrays, so check the shape first.
    if !text.starts_with('{') {
        let kind = match text.as_bytes()[0] {
            b'[' => "an array",
            b'"' => "a string",
            b't' | b'f' => "a boolean",
            b'n' => "null",
            b'-' | b'0'..=b'9' => "a number",
            _ => "not JSON at all",
        };
        return Err(format!(
            "the hook payload on stdin is not a JSON object (it is {kind}); nothing was sent"
        ));
    }
    let raw = RawValue::from_string(text).map_err(|e| {
        format!("the hook payload on stdin is not valid JSON: {e}; nothing was sent")
    })?;
    // Only a payload naming one of Cursor's fields can be Cursor's: most
    // never need the second pass.
    let peek_cursor = peek_cursor
        && ["\"cursor_version\"", "\"workspace_roots\""]
            .iter()
            .any(|field| raw.get().contains(field));
    // A second pass over the payload only when there is something to find.
    let peek = (want_event || peek_cursor)
        .then(|| serde_json::from_str::<Peek>(raw.get()).ok())
        .flatten();
    let event = match peek.as_ref().map(|p| &p.hook_event_name) {
        Some(Some(serde_json::Value::String(name))) if want_event => Some(name.clone()),
        _ => None,
    };
    let cursors = peek_cursor
        && peek.as_ref().is_some_and(|p| {
            protocol::wire::is_cursor_payload(
                p.cursor_version.as_ref(),
                p.conversation_id.as_ref(),
                p.workspace_roots.as_ref(),
            )
        });
    Ok(Payload {
        raw,
        event,
        cursors,
    })
}

/// The time budget for an event: compaction and session start do real work.
fn budget_ms(config: &ClientConfig, event: Option<&str>) -> u64 {
    let normalized: String = event
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    match normalized.as_str() {
        "precompact" | "precompress" => config.pre_compact_timeout_ms,
        "sessionstart" => config.session_start_timeout_ms,
        _ => config.hook_timeout_ms,
    }
}

/// Whether the watchdog explains itself on stderr (`-v`).
static VERBOSE: AtomicBool = AtomicBool::new(false);
/// Whether the harness reads JSON on every path (Cursor): the watchdog
/// then answers `{}` rather than nothing.
static JSON_WHEN_SILENT: AtomicBool = AtomicBool::new(false);
const SILENT_JSON: &[u8] = b"{}\n";

/// At the deadline, exit 0 with no output, unless the answer is already
/// being written. A one-shot `SIGALRM` timer rather than a thread: a hook
/// runs after every tool call, and a thread (stack, allocator arena) costs
/// a measurable share of hookctl's start-up.
fn start_watchdog(deadline: Instant, verbose: bool) {
    VERBOSE.store(verbose, Ordering::SeqCst);
    let left = deadline
        .checked_duration_since(Instant::now())
        .unwrap_or_default()
        // A zero timer would disarm it instead of firing at once.
        .max(Duration::from_micros(1));
    let timer = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: libc::timeval {
            tv_sec: left.as_secs() as libc::time_t,
            tv_usec: left.subsec_micros() as libc::suseconds_t,
        },
    };
    // SAFETY: `on_deadline` only does async-signal-safe work (an atomic, write(2), _exit(2)).
    unsafe {
        libc::signal(
            libc::SIGALRM,
            on_deadline as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut());
    }
}

extern "C" fn on_deadline(_signal: libc::c_int) {
    if FINISH
        .compare_exchange(WAITING, TIMED_OUT, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        if VERBOSE.load(Ordering::SeqCst) {
            let message: &[u8] =
                b"hookctl: hookd did not answer within the hook's time budget; carrying on without it\n";
            // SAFETY: write(2) and _exit(2) are async-signal-safe.
            unsafe { libc::write(2, message.as_ptr().cast(), message.len()) };
        }
        if JSON_WHEN_SILENT.load(Ordering::SeqCst) {
            // SAFETY: write(2) is async-signal-safe.
            unsafe { libc::write(1, SILENT_JSON.as_ptr().cast(), SILENT_JSON.len()) };
        }
        // A `hookd start` still under way goes on; its lock must not stay behind.
        crate::client::remove_held_start_lock();
        // SAFETY: as above; stdout holds nothing, or only `{}`: no answer is cut.
        unsafe { libc::_exit(0) };
    }
    // The answer is being written: let it finish.
}

/// Runs `write` unless the watchdog already gave up on us.
fn answer(write: impl FnOnce() -> ExitCode) -> ExitCode {
    if FINISH
        .compare_exchange(WAITING, ANSWERING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        write()
    } else {
        // Unreachable in practice: the watchdog exits the process as it sets TIMED_OUT.
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_and_session_start_get_their_own_budgets() {
        let c = ClientConfig::default();
        assert_eq!(budget_ms(&c, Some("pre-compact")), c.pre_compact_timeout_ms);
        assert_eq!(budget_ms(&c, Some("PreCompact")), c.pre_compact_timeout_ms);
        assert_eq!(
            budget_ms(&c, Some("SessionStart")),
            c.session_start_timeout_ms
        );
        assert_eq!(budget_ms(&c, Some("post-tool-use")), c.hook_timeout_ms);
        assert_eq!(budget_ms(&c, None), c.hook_timeout_ms);
    }
}
