//! The in-client measure: what hookd's hooks cost inside the real Claude
//! Code, not beside it.
//!
//! The pinned Claude Code the end-to-end scenarios drive runs one headless
//! turn of N sequential Bash tool calls against the project's Messages API
//! mock (in its loopback-only network namespace), once per hook
//! configuration, the configurations interleaved round by round (the first
//! one rotating) so that noise hits all alike:
//!
//! - `none`: no hooks at all, the floor;
//! - `noop`: every event `hookctl install claude-code` wires runs `/bin/true`;
//! - `hookd`: the hooks as `hookctl install claude-code` writes them, against
//!   a real daemon on the sandbox's socket (started by the first hook, as in
//!   the end-to-end scenarios);
//! - `http-noop`: the hot events as `type: "http"` hooks to a loopback server
//!   of this program's that answers `{}` at once, the others `/bin/true`: the
//!   most an HTTP endpoint in hookd could save over spawning a process.
//!
//! Per run: the wall time from spawning claude to its exit, and the tool-call
//! loop, from the mock receiving the first model request to the last (N tool
//! calls, each with its PostToolBatch hook, nothing else).
//! Each hook's own wall time is the one Claude Code records in its debug log
//! (whole milliseconds; none for SessionEnd).

use super::{Env, Report, Samples, Verdict, fmt_duration, fmt_ratio, ratio, verdict};
use hookd_tests::ChildGuard;
use hookd_tests::e2e::{self, ClaudeMissing, HookRun, MockLog, MockServer, Reply};
use hookd_tests::mock_model::read_request;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::io::{BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The command of every no-op hook.
const NOOP_COMMAND: &str = "/bin/true";
/// The events `http-noop` sends over HTTP: those that fire on every prompt,
/// tool call or turn, and that Claude Code takes as HTTP hooks (it skips
/// SessionStart over HTTP).
const HTTP_EVENTS: [&str; 3] = ["UserPromptSubmit", "PostToolBatch", "Stop"];
/// A run that takes longer is killed and fails the measure.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Targets: hookd's added cost per tool call over no-op hooks, and every
/// hook's p90 inside the client.
const ADDED_COST_TARGET_MS: f64 = 2.0;
const HOOK_P90_TARGET: Duration = Duration::from_millis(10);
const PROMPT: &str = "Run the benchmark's commands, one after the other.";

/// How much of it: tool calls in the turn, timed rounds, untimed rounds first.
pub struct InClientScale {
    pub calls: usize,
    pub rounds: usize,
    pub warmup: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Config {
    None,
    Noop,
    Hookd,
    HttpNoop,
}

const CONFIGS: [Config; 4] = [Config::None, Config::Noop, Config::Hookd, Config::HttpNoop];

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::None => "none",
            Config::Noop => "noop",
            Config::Hookd => "hookd",
            Config::HttpNoop => "http-noop",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Config::None => "no hooks",
            Config::Noop => "`/bin/true` on every event",
            Config::Hookd => "hookd's hooks",
            Config::HttpNoop => "hot events as HTTP hooks to a no-op server",
        }
    }
}

/// One configuration's HOME, project and figures.
struct Setup {
    config: Config,
    dir: PathBuf,
    walls: Samples,
    loops: Samples,
    /// Every tool call's cycle: a model request to the next.
    cycles: Samples,
    /// Claude Code's own duration of each command hook, by event.
    hooks: BTreeMap<String, Samples>,
}

impl Setup {
    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    fn project(&self) -> PathBuf {
        self.dir.join("proj")
    }

    fn settings_file(&self) -> PathBuf {
        self.home().join(".claude/settings.json")
    }
}

/// The measure, added to `report`; skipped (and said so) without the pinned
/// Claude Code.
/// `hookctl`: the one hooks run, and how it is linked.
pub fn in_client(
    bins: &Path,
    (hookctl, linked): (&Path, &str),
    scale: &InClientScale,
    report: &mut Report,
) {
    let claude = match e2e::pinned_claude() {
        Ok(path) => path,
        Err(missing) => {
            let why = match missing {
                ClaudeMissing::NotSet => format!(
                    "${} is not set (point it at a Claude Code {} `claude`; \
                     tests/tools/install-clients installs one)",
                    e2e::CLAUDE_ENV,
                    e2e::PINNED_VERSION
                ),
                ClaudeMissing::Unusable(why) => why,
            };
            assert!(
                !std::env::var(e2e::REQUIRE_ENV).is_ok_and(|v| v == "require"),
                "{}=require: the in-client measure cannot run: {why}",
                e2e::REQUIRE_ENV
            );
            eprintln!("hookd-bench: in-client measure skipped: {why}");
            report.note(format!("In-client measure skipped: {why}."));
            return;
        }
    };
    eprintln!(
        "hookd-bench: inside Claude Code {}: {} rounds of one turn of {} Bash calls, 4 configurations…",
        e2e::PINNED_VERSION,
        scale.rounds,
        scale.calls
    );
    let env = Env::new(bins);
    let rounds = scale.warmup + scale.rounds;
    let mock = MockServer::messages_api(
        env.path(),
        &script(scale.calls, rounds),
        &("<summary>unused</summary>".into(), 3_000),
    );
    let http_log = env.path().join("http-noop.log");
    let http = start_http_noop(&env, &mock, &http_log);

    let mut setups: Vec<Setup> = CONFIGS
        .iter()
        .map(|&config| {
            let dir = env.path().join(config.name());
            Setup {
                config,
                dir,
                walls: Samples::default(),
                loops: Samples::default(),
                cycles: Samples::default(),
                hooks: BTreeMap::new(),
            }
        })
        .collect();
    for setup in &setups {
        for dir in [setup.home(), setup.dir.join("tmp")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        e2e::write_gitconfig(&setup.home());
        e2e::make_project(&setup.project(), &setup.home());
    }
    let hookd_setup = setups.iter().find(|s| s.config == Config::Hookd).unwrap();
    let installed = install_hookd(&env, hookctl, hookd_setup);
    for setup in &setups {
        let settings = match setup.config {
            Config::None => json!({}),
            Config::Noop => json!({ "hooks": rewire(&installed, |_| None) }),
            Config::Hookd => continue,
            Config::HttpNoop => json!({ "hooks": rewire(&installed, |event| {
                HTTP_EVENTS.contains(&event).then(|| json!({
                    "type": "http",
                    "url": format!("http://127.0.0.1:{}/{event}", http.port),
                    "timeout": 10,
                }))
            })}),
        };
        std::fs::create_dir_all(setup.settings_file().parent().unwrap()).unwrap();
        std::fs::write(setup.settings_file(), settings.to_string()).unwrap();
    }

    // Started here rather than by the first hook, to read its CPU time.
    let daemon = env.start();
    let cpu_before = super::proc_stat(daemon).ticks;
    let mut log_offset = 0;
    let mut hookd_sessions = Vec::new();
    let started = Instant::now();
    for round in 0..rounds {
        for k in 0..CONFIGS.len() {
            let setup = &mut setups[(round + k) % CONFIGS.len()];
            let run = run_turn(&env, &mock, &claude, setup, round, scale.calls, log_offset);
            log_offset = run.log_offset;
            check_hooks(setup.config, &run, scale.calls);
            if setup.config == Config::Hookd {
                hookd_sessions.push((run.session_id.clone(), run.hooks.len()));
            }
            if round < scale.warmup {
                continue;
            }
            setup.walls.push(run.wall);
            setup.loops.push(run.tool_loop);
            for &cycle in &run.cycles {
                setup.cycles.push(cycle);
            }
            let timed = run.hooks.iter().filter_map(|hook| {
                let ms = hook.duration_ms?;
                Some((hook.event.clone(), Duration::from_millis(ms)))
            });
            for (event, took) in timed.chain(run.http_hooks) {
                setup.hooks.entry(event).or_default().push(took);
            }
        }
    }
    let cpu_ticks = super::proc_stat(daemon).ticks - cpu_before;
    check_daemon(&env, &hookd_sessions);
    check_http_noop(&http_log, scale.calls, rounds);
    rows(&setups, scale, started.elapsed(), report);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let cpu_ms = cpu_ticks as f64 * 1000.0 / hz / (rounds * scale.calls) as f64;
    report.row(
        "hookd daemon's CPU time per tool call in the `hookd` runs (all threads; their SessionStart, prompt and Stop included)",
        format!("{cpu_ms:.2} ms"),
        "",
        "",
        "report",
        Verdict::Info,
    );
    report.note(format!(
        "In-client: hookd's hooks ran {} ({linked}).",
        hookctl.display()
    ));
}

/// The mock's script: for every run, N Bash calls then a closing text.
fn script(calls: usize, rounds: usize) -> Vec<Reply> {
    let mut replies = Vec::new();
    for round in 0..rounds {
        for k in 0..CONFIGS.len() {
            let config = CONFIGS[(round + k) % CONFIGS.len()];
            for call in 0..calls {
                // Far below every threshold: no warning, no save.
                let tokens = 20_000 + 50 * call as u64;
                let label = run_label(round, config, &format!("call{call}"));
                replies.push(Reply::bash(&label, tokens, &format!("echo call {call}")));
            }
            let label = run_label(round, config, "done");
            replies.push(Reply::text(&label, 21_000, "Done."));
        }
    }
    replies
}

fn run_label(round: usize, config: Config, step: &str) -> String {
    format!("r{round}.{}.{step}", config.name())
}

/// `hookctl install claude-code` in `setup`'s HOME; returns the hooks it
/// wrote (they run this `hookctl`).
fn install_hookd(env: &Env, hookctl: &Path, setup: &Setup) -> Map<String, Value> {
    let out = env
        .command(&hookctl.display().to_string())
        .args(["install", "claude-code"])
        .env("HOME", setup.home())
        .current_dir(setup.project())
        .output()
        .expect("hookctl install");
    assert!(
        out.status.success(),
        "hookctl install claude-code: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(setup.settings_file()).unwrap())
            .expect("the installed settings");
    let hooks = settings["hooks"].as_object().cloned().unwrap_or_default();
    assert!(
        hooks.contains_key("PostToolBatch") && hooks.contains_key("Stop"),
        "hookctl install wrote no hooks: {settings}"
    );
    hooks
}

/// The installed hooks with every handler replaced: by what `http` gives
/// for its event, else by a no-op command with the same timeout.
fn rewire(
    installed: &Map<String, Value>,
    http: impl Fn(&str) -> Option<Value>,
) -> Map<String, Value> {
    let mut hooks = installed.clone();
    for (event, groups) in hooks.iter_mut() {
        for group in groups.as_array_mut().into_iter().flatten() {
            for handler in group["hooks"].as_array_mut().into_iter().flatten() {
                *handler = http(event).unwrap_or_else(|| {
                    json!({"type": "command", "command": NOOP_COMMAND, "timeout": handler["timeout"]})
                });
            }
        }
    }
    hooks
}

/// What one run gave.
struct TurnRun {
    session_id: String,
    wall: Duration,
    tool_loop: Duration,
    cycles: Vec<Duration>,
    hooks: Vec<HookRun>,
    /// Each HTTP hook's event and time.
    http_hooks: Vec<(String, Duration)>,
    log_offset: u64,
}

/// One headless turn; fails the measure unless it went exactly as scripted.
fn run_turn(
    env: &Env,
    mock: &MockServer,
    claude: &Path,
    setup: &Setup,
    round: usize,
    calls: usize,
    log_offset: u64,
) -> TurnRun {
    let name = format!("r{round}.{}", setup.config.name());
    let out_file = env.path().join(format!("{name}.stdout.jsonl"));
    let err_file = env.path().join(format!("{name}.stderr.txt"));
    let debug_file = env.path().join(format!("{name}.debug.txt"));
    let mut cmd = mock.enter(claude);
    env.sandbox_env(&mut cmd);
    cmd.env("HOME", setup.home())
        .env("TMPDIR", setup.dir.join("tmp"));
    e2e::headless_claude(&mut cmd, mock.port, PROMPT, &debug_file);
    let started = Instant::now();
    let status = e2e::run_bounded(&mut cmd, &setup.project(), &out_file, &err_file, RUN_LIMIT);
    let wall = started.elapsed();
    let events = e2e::stream_events(&out_file);
    let result = events.iter().rev().find(|e| e["type"] == "result");
    let ok = status.is_some_and(|s| s.success())
        && result.is_some_and(|r| r["is_error"] == false && r["subtype"] == "success");
    assert!(
        ok,
        "in-client run {name} failed ({status:?}): {}\nresult: {result:?}",
        std::fs::read_to_string(&err_file).unwrap_or_default()
    );
    let (log, log_offset) = MockLog::read_from(&mock.log, log_offset);
    let main = log.of_kind("main");
    let expected: Vec<String> = (0..calls)
        .map(|c| run_label(round, setup.config, &format!("call{c}")))
        .chain([run_label(round, setup.config, "done")])
        .collect();
    assert_eq!(
        main.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
        expected,
        "in-client run {name}: the model requests were not the script's"
    );
    let first = main.first().unwrap().received;
    let last = main.last().unwrap().received;
    let cycles = main
        .windows(2)
        .map(|pair| Duration::from_secs_f64((pair[1].received - pair[0].received).max(0.0)))
        .collect();
    TurnRun {
        session_id: result.unwrap()["session_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        wall,
        tool_loop: Duration::from_secs_f64((last - first).max(0.0)),
        cycles,
        hooks: e2e::hook_runs(&debug_file, |command| {
            command == NOOP_COMMAND || command.contains("hookctl")
        }),
        http_hooks: http_hook_times(&debug_file),
        log_offset,
    }
}

/// The HTTP hooks Claude Code ran, each with its event and time, from the
/// stamps of its debug log (whole milliseconds): `Hooks: HTTP hook POST to
/// URL`, then `Hooks: HTTP hook response status …`; it runs them one by one.
fn http_hook_times(debug_file: &Path) -> Vec<(String, Duration)> {
    const DAY_MS: u64 = 24 * 3600 * 1000;
    let text = std::fs::read_to_string(debug_file).unwrap_or_default();
    let mut posted: Option<(String, u64)> = None;
    let mut times = Vec::new();
    for line in text.lines() {
        let Some(at) = stamp_ms(line) else {
            continue;
        };
        if let Some((_, url)) = line.split_once("Hooks: HTTP hook POST to ") {
            let event = url.trim().rsplit('/').next().unwrap_or_default();
            posted = Some((event.to_owned(), at));
        } else if line.contains("Hooks: HTTP hook response status")
            && let Some((event, start)) = posted.take()
        {
            times.push((event, Duration::from_millis((at + DAY_MS - start) % DAY_MS)));
        }
    }
    times
}

/// The time of day of a debug line's stamp (`2026-11-23T14:16:18.533Z …`),
/// in milliseconds.
fn stamp_ms(line: &str) -> Option<u64> {
    let field = |range: std::ops::Range<usize>| line.get(range)?.parse::<u64>().ok();
    let (h, m, s, ms) = (
        field(11..13)?,
        field(14..16)?,
        field(17..19)?,
        field(20..23)?,
    );
    Some(((h * 60 + m) * 60 + s) * 1000 + ms)
}

/// Every tool call ran its hook (PostToolBatch; the HTTP ones also
/// UserPromptSubmit and Stop), and each command exited 0.
fn check_hooks(config: Config, run: &TurnRun, calls: usize) {
    let post_tool_batch = run
        .hooks
        .iter()
        .filter(|h| h.event == "PostToolBatch")
        .count();
    let (commands, http) = match config {
        Config::None => (0, 0),
        Config::HttpNoop => (0, calls + 2),
        Config::Noop | Config::Hookd => (calls, 0),
    };
    assert_eq!(
        (post_tool_batch, run.http_hooks.len()),
        (commands, http),
        "{}: PostToolBatch command hooks and HTTP hooks run",
        config.name()
    );
    if let Some(failed) = run.hooks.iter().find(|h| h.status != 0) {
        panic!("{}: a hook failed: {failed:?}", config.name());
    }
}

/// Every hookd hook Claude Code ran reached the daemon: a hook that could
/// not would exit 0 at once and flatter the figures.
fn check_daemon(env: &Env, sessions: &[(String, usize)]) {
    let status = env.status();
    for (id, hooks) in sessions {
        let seen = status
            .sessions
            .iter()
            .find(|s| &s.session_id == id)
            .map_or(0, |s| s.events_seen);
        assert_eq!(
            seen, *hooks as u64,
            "hookd saw {seen} events of session {id}, Claude Code ran {hooks} hookd hooks"
        );
    }
}

/// The HTTP server got every hot event of every http-noop run.
fn check_http_noop(log: &Path, calls: usize, rounds: usize) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let count = |event: &str| text.lines().filter(|l| *l == format!("/{event}")).count();
    for (event, per_run) in [
        ("UserPromptSubmit", 1),
        ("PostToolBatch", calls),
        ("Stop", 1),
    ] {
        assert_eq!(
            count(event),
            per_run * rounds,
            "http-noop: {event} requests received"
        );
    }
}

// ---------------------------------------------------------------------------
// The no-op HTTP hook server

/// The hidden mode that serves the no-op HTTP hooks: `hookd-bench
/// --serve-http-noop PORT_FILE LOG_FILE`.
pub const SERVE_FLAG: &str = "--serve-http-noop";

/// The server, a child of this program inside the mock's namespace (where
/// the client can reach it).
struct HttpNoop {
    _child: ChildGuard,
    port: u16,
}

fn start_http_noop(env: &Env, mock: &MockServer, log: &Path) -> HttpNoop {
    let port_file = env.path().join("http-noop.port");
    let exe = std::env::current_exe().expect("own path");
    let mut cmd = mock.enter(&exe);
    cmd.arg(SERVE_FLAG)
        .arg(&port_file)
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let child = ChildGuard::spawn(&mut cmd);
    hookd_tests::wait_until(Duration::from_secs(10), || port_file.exists());
    let port = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .expect("the no-op HTTP hook server did not start");
    HttpNoop {
        _child: child,
        port,
    }
}

/// Serves until killed: every request gets `{}` at once, in one write (no
/// wait for a delayed ACK), its path logged.
pub fn serve_http_noop(port_file: &Path, log: &Path) -> i32 {
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("hookd-bench: bind 127.0.0.1: {e}");
            return 1;
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let tmp = port_file.with_extension("tmp");
    if std::fs::write(&tmp, port.to_string())
        .and_then(|()| std::fs::rename(&tmp, port_file))
        .is_err()
    {
        eprintln!("hookd-bench: cannot write {}", port_file.display());
        return 1;
    }
    let log = std::sync::Arc::new(std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the HTTP hook log"),
    ));
    for stream in listener.incoming().flatten() {
        let log = std::sync::Arc::clone(&log);
        std::thread::spawn(move || answer_noop(stream, &log));
    }
    0
}

/// Answers every request of a (kept-alive) connection.
fn answer_noop(stream: TcpStream, log: &std::sync::Mutex<std::fs::File>) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(&stream);
    while let Ok((method, path, _body)) = read_request(&mut reader) {
        if method.is_empty() {
            return;
        }
        let reply =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        if (&stream).write_all(reply).is_err() {
            return;
        }
        let _ = writeln!(log.lock().unwrap(), "{path}");
    }
}

// ---------------------------------------------------------------------------
// The report

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Signed milliseconds per tool call.
fn per_call(a: Duration, b: Duration, calls: usize) -> f64 {
    (ms(a) - ms(b)) / calls as f64
}

fn fmt_signed_ms(v: f64) -> String {
    format!("{v:+.2} ms")
}

fn rows(setups: &[Setup], scale: &InClientScale, took: Duration, report: &mut Report) {
    let by = |c: Config| setups.iter().find(|s| s.config == c).unwrap();
    let (none, noop, hookd, http) = (
        by(Config::None),
        by(Config::Noop),
        by(Config::Hookd),
        by(Config::HttpNoop),
    );
    let n = scale.calls;
    let head = format!(
        "Claude Code {}, one turn of {n} Bash calls",
        e2e::PINNED_VERSION
    );
    for s in setups {
        let (baseline, r) = if s.config == Config::Noop || s.config == Config::None {
            (String::new(), String::new())
        } else {
            (
                format!("`noop` {}", fmt_duration(noop.walls.median())),
                fmt_ratio(ratio(s.walls.median(), noop.walls.median())),
            )
        };
        report.row(
            format!(
                "{head}: whole run (tool-call loop; one call's median cycle), `{}`: {}",
                s.config.name(),
                s.config.describe()
            ),
            format!(
                "{} ({}; {})",
                fmt_duration(s.walls.median()),
                fmt_duration(s.loops.median()),
                fmt_duration(s.cycles.median())
            ),
            baseline,
            r,
            "report",
            Verdict::Info,
        );
    }
    // Per tool call: (tool-call loop, whole run, median cycle) of `a` over `b`.
    let cost = |a: &Setup, b: &Setup| {
        (
            per_call(a.loops.median(), b.loops.median(), n),
            per_call(a.walls.median(), b.walls.median(), n),
            per_call(a.cycles.median(), b.cycles.median(), 1),
        )
    };
    let added = cost(hookd, noop).0;
    let added_ok = added <= ADDED_COST_TARGET_MS;
    for (what, (a, b), target, met) in [
        (
            "hookd's added cost per tool call over `noop` (tool-call loop; what a user feels)",
            (hookd, noop),
            format!("≤ {ADDED_COST_TARGET_MS} ms"),
            verdict(added_ok),
        ),
        (
            "`http-noop`'s cost per tool call over `noop` (negative: HTTP saves)",
            (http, noop),
            "report".to_owned(),
            Verdict::Info,
        ),
        (
            "`noop`'s cost per tool call over `none` (one no-op process a call)",
            (noop, none),
            "report".to_owned(),
            Verdict::Info,
        ),
    ] {
        let (in_loop, whole, cycle) = cost(a, b);
        report.row(
            what,
            fmt_signed_ms(in_loop),
            format!(
                "whole run: {} · median cycle: {}",
                fmt_signed_ms(whole),
                fmt_signed_ms(cycle)
            ),
            "",
            target,
            met,
        );
    }
    let mut slow_hooks = Vec::new();
    for (event, samples) in &hookd.hooks {
        let p90 = samples.pct(90.0);
        let ok = p90 <= HOOK_P90_TARGET;
        if !ok {
            slow_hooks.push(format!("{event} {}", fmt_duration(p90)));
        }
        let (baseline, r) = noop.hooks.get(event).map_or_else(Default::default, |b| {
            (
                format!(
                    "`/bin/true` {} / {}",
                    fmt_duration(b.median()),
                    fmt_duration(b.pct(90.0))
                ),
                fmt_ratio(ratio(samples.median(), b.median())),
            )
        });
        report.row(
            format!(
                "`{event}` hook inside the client, hookd: median / p90 ({} runs)",
                samples.len()
            ),
            format!("{} / {}", fmt_duration(samples.median()), fmt_duration(p90)),
            baseline,
            r,
            "p90 ≤ 10 ms",
            verdict(ok),
        );
    }
    for (event, samples) in &http.hooks {
        if !HTTP_EVENTS.contains(&event.as_str()) {
            continue;
        }
        let (baseline, r) = noop.hooks.get(event).map_or_else(Default::default, |b| {
            (
                format!("`/bin/true` {}", fmt_duration(b.median())),
                fmt_ratio(ratio(samples.median(), b.median())),
            )
        });
        report.row(
            format!(
                "`{event}` as an HTTP hook to a no-op server, inside the client: median / p90 ({} runs)",
                samples.len()
            ),
            format!(
                "{} / {}",
                fmt_duration(samples.median()),
                fmt_duration(samples.pct(90.0))
            ),
            baseline,
            r,
            "report",
            Verdict::Info,
        );
    }
    let verdicts = format!(
        "In-client targets: added cost per tool call ≤ {ADDED_COST_TARGET_MS} ms: {} ({}); \
         every hook's p90 ≤ 10 ms: {}.",
        if added_ok { "PASS" } else { "FAIL" },
        fmt_signed_ms(added),
        if slow_hooks.is_empty() {
            "PASS".to_owned()
        } else {
            format!("FAIL ({})", slow_hooks.join(", "))
        }
    );
    eprintln!("hookd-bench: {verdicts}");
    report.note(verdicts);
    report.note(format!(
        "In-client: the real Claude Code {} (`$HOOKD_E2E_CLAUDE`), headless (`claude -p`, \
         stream-json, `--debug-file`), against the Messages API mock in a loopback-only network \
         namespace; {} timed rounds (after {} untimed) of one turn of {n} sequential Bash calls \
         in each configuration, interleaved, the first rotating; {:.0} s in all. A figure is the \
         median over rounds. Whole run: claude's spawn to exit. Tool-call loop: the mock \
         receiving the first model request to the last, i.e. {n} tool calls with their \
         PostToolBatch hooks, which Claude Code waits for before its next request (hookd \
         wires no PostToolUse hook: one process per batch, not two per call): the cost per tool call a user feels is the loop's difference over `noop` \
         divided by {n}. A call's cycle: one model request to the next; the median of all \
         {n} × rounds cycles is steadier than the loop when the machine is busy. `http-noop` sends {} over HTTP (a server of the bench's, answering `{{}}` \
         at once), the other events run `/bin/true`. A hook's time is the one Claude Code records \
         in its debug log (`finished with status 0 (N ms)`, whole milliseconds; SessionEnd has \
         none); every hookd hook was checked to have reached the daemon.",
        e2e::PINNED_VERSION,
        scale.rounds,
        scale.warmup,
        took.as_secs_f64(),
        HTTP_EVENTS.join(", ")
    ));
}
