//! `hookd-bench`: hookd's whole-process benchmarks, run side by side and
//! printed as one table of figures and ratios.
//!
//! ```sh
//! cargo run --release -p hookd-tests --bin hookd-bench            # the full suite (a few minutes)
//! cargo run --release -p hookd-tests --bin hookd-bench -- --quick # small inputs: checks that it all works
//! ```
//!
//! Machines are noisy (this one has 2 cores shared with compilers), so every
//! figure is compared with a baseline measured in the same run, interleaved
//! with it: `/bin/true` for process start-up, the git plumbing for a
//! checkpoint, the 1 MB case for big transcripts. The real release binaries
//! run against a real daemon in a temporary sandbox (its own socket, state
//! and config directories); inputs are generated at run time (`inputs.rs`) and
//! deleted afterwards. Targets are reported, never enforced: only a wrong
//! answer (a lost event, a wrong context figure, a wrong checkpoint tree)
//! makes the run fail.
//!
//! In-process parts have criterion benches in `daemon/benches/`.

mod in_agents;
mod in_client;
mod inputs;
mod sync;

use hookd_tests::Sandbox;
use protocol::frame;
use protocol::wire::{Harness, Hello, HookRequest, Request, Response, StatusReport};
use serde_json::value::RawValue;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const MB: u64 = 1024 * 1024;
/// Untimed runs of each command before timing starts (page cache, daemon warm).
const WARMUP_RUNS: usize = 10;
/// Concurrent sessions of the load test (the issue's figure).
const LOAD_SESSIONS: usize = 50;

/// How much of everything: the issue's sizes, or small ones for CI.
struct Scale {
    quick: bool,
    hook_runs: usize,
    cold_runs: usize,
    context_sizes: [u64; 3],
    context_runs: usize,
    repo_files: usize,
    repo_modified: usize,
    repo_new: usize,
    pipeline_rounds: usize,
    load: Duration,
    /// Wait after the load before memory and idle CPU are read.
    settle: Duration,
    idle: Duration,
    in_client: in_client::InClientScale,
}

impl Scale {
    fn full() -> Scale {
        Scale {
            quick: false,
            hook_runs: 1000,
            cold_runs: 10,
            context_sizes: [MB, 100 * MB, 500 * MB],
            context_runs: 5,
            repo_files: 10_000,
            repo_modified: 100,
            repo_new: 50,
            pipeline_rounds: 5,
            load: Duration::from_secs(10),
            settle: Duration::from_secs(11),
            idle: Duration::from_secs(10),
            in_client: in_client::InClientScale {
                calls: 20,
                rounds: 5,
                warmup: 1,
            },
        }
    }

    fn quick() -> Scale {
        Scale {
            quick: true,
            hook_runs: 60,
            cold_runs: 3,
            context_sizes: [MB, 8 * MB, 32 * MB],
            context_runs: 2,
            repo_files: 1_000,
            repo_modified: 10,
            repo_new: 5,
            pipeline_rounds: 1,
            load: Duration::from_secs(1),
            settle: Duration::from_millis(1500),
            idle: Duration::from_secs(1),
            in_client: in_client::InClientScale {
                calls: 3,
                rounds: 1,
                warmup: 0,
            },
        }
    }
}

struct Options {
    scale: Scale,
    build: bool,
    keep: bool,
    /// Also measure hookctl linked statically, as install.sh builds it
    /// (default: yes, but for --quick).
    statics: Option<bool>,
    only: Option<Vec<String>>,
    out: Option<PathBuf>,
}

const MEASURES: [&str; 8] = [
    "hook",
    "cold",
    "context",
    "statusline",
    "pipeline",
    "sync",
    "load",
    "in-client",
];

fn usage() -> ! {
    eprintln!(
        "usage: hookd-bench [--quick] [--no-build] [--[no-]static] [--keep] [--only {}] [--out FILE]\n\
         \x20      hookd-bench in-client [--calls N] [--rounds R] [...]   (= --only in-client)\n\
         \n  --quick     small inputs and few runs: checks that every benchmark works (CI)\
         \n  --no-build  do not run `cargo build` for hookd and hookctl first\
         \n  --static    also measure hookctl linked statically, as install.sh builds it on\
         \n              Linux with glibc (the default, but for --quick); --no-static: not\
         \n  --keep      keep the sandboxes (daemon logs, events.jsonl, inputs) and say where\
         \n  --only      a comma-separated list of measures\
         \n  --out FILE  also write the report to FILE\
         \n  --calls N   in-client: shell tool calls in the turn (20; 3 with --quick), in Claude\
         \n              Code, Codex CLI, Gemini CLI, Qwen Code, Copilot CLI and OpenCode (each\
         \n              skipped when not installed)\
         \n  --rounds R  in-client: timed rounds of each configuration (5; 1 with --quick)",
        MEASURES.join(",")
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut o = Options {
        scale: Scale::full(),
        build: true,
        keep: false,
        statics: None,
        only: None,
        out: None,
    };
    let (mut calls, mut rounds) = (None, None);
    let number = |value: Option<String>| -> usize {
        value
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage())
    };
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "in-client") {
        args.next();
        o.only = Some(vec!["in-client".to_owned()]);
    }
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => o.scale = Scale::quick(),
            "--calls" => calls = Some(number(args.next())),
            "--rounds" => rounds = Some(number(args.next())),
            "--static" => o.statics = Some(true),
            "--no-static" => o.statics = Some(false),
            "--no-build" => o.build = false,
            "--keep" => o.keep = true,
            "--only" => {
                let list: Vec<String> = args
                    .next()
                    .unwrap_or_else(|| usage())
                    .split(',')
                    .map(str::to_owned)
                    .collect();
                if list.iter().any(|m| !MEASURES.contains(&m.as_str())) {
                    usage();
                }
                o.only = Some(list);
            }
            "--out" => o.out = Some(args.next().unwrap_or_else(|| usage()).into()),
            "--bench" => {} // passed by `cargo bench`
            _ => usage(),
        }
    }
    o.scale.in_client.calls = calls.unwrap_or(o.scale.in_client.calls);
    o.scale.in_client.rounds = rounds.unwrap_or(o.scale.in_client.rounds);
    o
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(in_client::SERVE_FLAG) && args.len() == 4 {
        std::process::exit(in_client::serve_http_noop(
            Path::new(&args[2]),
            Path::new(&args[3]),
        ));
    }
    let opts = options();
    KEEP.store(opts.keep, std::sync::atomic::Ordering::Relaxed);
    let bins = binaries(opts.build);
    let static_hookctl = if opts.statics.unwrap_or(!opts.scale.quick) {
        static_hookctl(&bins, opts.build)
    } else {
        None
    };
    let started = Instant::now();
    let load_before = loadavg();
    let mut report = Report::default();
    let wanted = |m: &str| opts.only.as_ref().is_none_or(|l| l.iter().any(|x| x == m));
    let s = &opts.scale;
    if wanted("hook") || wanted("statusline") {
        warm_hooks(
            &bins,
            static_hookctl.as_deref(),
            s,
            wanted("hook"),
            wanted("statusline"),
            &mut report,
        );
    }
    if wanted("cold") {
        cold_hooks(&bins, s, &mut report);
    }
    if wanted("context") {
        context_sizes(&bins, s, &mut report);
    }
    if wanted("pipeline") {
        pipeline(&bins, s, &mut report);
    }
    if wanted("sync") {
        sync::sync(&bins, s, &mut report);
    }
    // Before the load test, whose own threads raise the load average.
    let load_after = loadavg();
    if wanted("load") {
        load(&bins, s, &mut report);
    }
    if wanted("in-client") {
        // What users get: install.sh installs the static hookctl where it builds.
        let hookctl = match static_hookctl {
            Some(path) => (path, "statically linked, as install.sh builds it"),
            None => (bins.join("hookctl"), "dynamically linked"),
        };
        in_client::in_client(&bins, (&hookctl.0, hookctl.1), &s.in_client, &mut report);
        in_agents::in_agents(&s.in_client, &mut report);
    }

    let mut text = String::new();
    let _ = writeln!(
        text,
        "hookd-bench{}: {} · {} · {} cores · load average {} at the start, {} before the load test · {:.0} s\n",
        if s.quick {
            " --quick (small inputs: checks that it works, not the speed)"
        } else {
            ""
        },
        short_date(),
        uname(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_after,
        started.elapsed().as_secs_f64()
    );
    text.push_str(&report.table());
    text.push('\n');
    for note in &report.notes {
        let _ = writeln!(text, "- {note}");
    }
    print!("\n{text}");
    if let Some(out) = &opts.out {
        std::fs::write(out, &text).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
    }
}

// ---------------------------------------------------------------------------
// The report

#[derive(Clone, Copy, PartialEq)]
enum Verdict {
    Met,
    Missed,
    Info,
}

struct Row {
    measure: String,
    figure: String,
    baseline: String,
    ratio: String,
    target: String,
    verdict: Verdict,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    fn row(
        &mut self,
        measure: impl Into<String>,
        figure: impl Into<String>,
        baseline: impl Into<String>,
        ratio: impl Into<String>,
        target: impl Into<String>,
        verdict: Verdict,
    ) {
        let row = Row {
            measure: measure.into(),
            figure: figure.into(),
            baseline: baseline.into(),
            ratio: ratio.into(),
            target: target.into(),
            verdict,
        };
        eprintln!(
            "  {}: {} {} {}",
            row.measure,
            row.figure,
            if row.ratio.is_empty() { "" } else { "·" },
            row.ratio
        );
        self.rows.push(row);
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    fn table(&self) -> String {
        let mut t = String::from(
            "| measure | figure | baseline (same run) | ratio | target | met |\n|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let met = match r.verdict {
                Verdict::Met => "yes",
                Verdict::Missed => "**no**",
                Verdict::Info => "–",
            };
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} | {} |",
                r.measure, r.figure, r.baseline, r.ratio, r.target, met
            );
        }
        t
    }
}

fn verdict(ok: bool) -> Verdict {
    if ok { Verdict::Met } else { Verdict::Missed }
}

// ---------------------------------------------------------------------------
// Timing

/// Wall-clock samples.
#[derive(Default, Clone)]
struct Samples(Vec<Duration>);

impl Samples {
    fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut v = self.0.clone();
        v.sort();
        v
    }

    /// Nearest-rank percentile, `p` in 0..=100.
    fn pct(&self, p: f64) -> Duration {
        let v = self.sorted();
        assert!(!v.is_empty(), "no samples");
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1]
    }

    fn median(&self) -> Duration {
        self.pct(50.0)
    }

    fn max(&self) -> Duration {
        self.sorted().last().copied().unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn fmt_ratio(r: f64) -> String {
    format!("{r:.2}×")
}

/// Runs `cmd` with `input` on stdin and its output thrown away; the wall
/// time of spawn to exit.
fn timed(mut cmd: Command, input: &Path) -> (Duration, ExitStatus) {
    let stdin = File::open(input).unwrap_or_else(|e| panic!("open {}: {e}", input.display()));
    cmd.stdin(stdin).stdout(Stdio::null()).stderr(Stdio::null());
    let started = Instant::now();
    let status = cmd.status().expect("spawn");
    (started.elapsed(), status)
}

fn timed_ok(cmd: Command, input: &Path, what: &str) -> Duration {
    let (took, status) = timed(cmd, input);
    assert!(status.success(), "{what} failed: {status}");
    took
}

// ---------------------------------------------------------------------------
// The binaries and the sandbox

/// The directory of the release binaries: where this driver itself was
/// built. Unless told not to, builds hookd and hookctl there first (cargo
/// does nothing when they are up to date).
fn binaries(build: bool) -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let dir = exe.parent().expect("target directory").to_path_buf();
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("release")
        .to_owned();
    if build {
        eprintln!("hookd-bench: building hookd and hookctl ({profile})…");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--locked",
            "-p",
            "hookd",
            "-p",
            "hookctl",
            "-p",
            "hookd-tests",
            "--bin",
            "hookd",
            "--bin",
            "hookctl",
            // The scripted model server Codex and Gemini CLI run against.
            // Named one by one: `--bins` would take this package's bins
            // too, and relinking this very program while it runs leaves
            // it nothing to re-execute in the mock's namespace.
            "--bin",
            "hookd-mock-model",
        ]);
        match profile.as_str() {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        cmd.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
        let status = cmd.status().expect("run cargo");
        assert!(status.success(), "cargo build failed");
    }
    for name in ["hookd", "hookctl"] {
        assert!(
            dir.join(name).is_file(),
            "{} is missing: build it (`cargo build --release`) or drop --no-build",
            dir.join(name).display()
        );
    }
    if profile != "release" {
        eprintln!(
            "hookd-bench: warning: {profile} binaries; figures mean little outside --release"
        );
    }
    dir
}

/// Keep the sandboxes for a look afterwards (`--keep`).
static KEEP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A sandbox with its own daemon: socket, state and config directories,
/// a home with a Claude Code projects directory, and a project.
struct Env {
    sb: std::mem::ManuallyDrop<Sandbox>,
    bins: PathBuf,
}

impl Env {
    fn new(bins: &Path) -> Env {
        let env = Env {
            sb: std::mem::ManuallyDrop::new(Sandbox::new()),
            bins: bins.to_path_buf(),
        };
        std::fs::create_dir_all(env.project()).unwrap();
        std::fs::create_dir_all(env.transcripts()).unwrap();
        env
    }

    fn path(&self) -> &Path {
        self.sb.path()
    }

    fn project(&self) -> PathBuf {
        self.path().join("proj")
    }

    /// Where Claude Code would keep this project's transcripts.
    fn transcripts(&self) -> PathBuf {
        self.sb.home().join(".claude/projects/-proj")
    }

    /// A command for `name` (a workspace binary, or any program) with only
    /// the sandbox's environment.
    fn command(&self, name: &str) -> Command {
        let program = if name.starts_with('/') {
            PathBuf::from(name)
        } else {
            self.bins.join(name)
        };
        let mut cmd = Command::new(program);
        self.sandbox_env(&mut cmd);
        cmd
    }

    /// Only the sandbox's environment, in the project, no stdin.
    fn sandbox_env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.sb.home())
            .env("HOOKD_SOCKET", self.sb.socket())
            .env("HOOKD_STATE_DIR", self.sb.state_dir())
            .env("HOOKD_CONFIG_DIR", self.sb.config_dir())
            .env("HOOKD_DATA_DIR", self.path().join("data"))
            .env("HOOKD_BIN", self.bins.join("hookd"))
            .current_dir(self.project())
            .stdin(Stdio::null());
    }

    fn hookctl(&self, args: &[&str]) -> Command {
        let mut cmd = self.command("hookctl");
        cmd.args(args);
        cmd
    }

    fn start(&self) -> i32 {
        let out = self
            .command("hookd")
            .arg("start")
            .output()
            .expect("hookd start");
        assert!(
            out.status.success(),
            "hookd start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.pid().expect("a running daemon")
    }

    fn stop(&self) {
        let _ = self.command("hookd").arg("stop").output();
    }

    fn pid(&self) -> Option<i32> {
        let lock = self.sb.socket().with_file_name("hookd.sock.pid");
        std::fs::read_to_string(lock).ok()?.trim().parse().ok()
    }

    fn status(&self) -> StatusReport {
        let out = self
            .hookctl(&["status", "--json"])
            .output()
            .expect("hookctl status");
        assert!(
            out.status.success(),
            "hookctl status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Runs a hook once and checks it succeeded; returns its stdout.
    fn hook_once(&self, event: &str, input: &Path) -> String {
        let out = self
            .hookctl(&["hook", event])
            .stdin(File::open(input).unwrap())
            .output()
            .expect("hookctl hook");
        assert!(
            out.status.success(),
            "hookctl hook {event}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop();
        if KEEP.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("hookd-bench: kept {}", self.path().display());
        } else {
            // SAFETY: dropped once, here; `sb` is not used afterwards.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.sb) };
        }
    }
}

/// Realistic tool output carried by PostToolUse payloads (about 4 KB).
fn tool_output() -> String {
    let mut rng = inputs::Rng::new(42);
    let mut out = String::new();
    while out.len() < 4096 {
        out.push_str(&inputs::tool_output(&mut rng, out.len()));
    }
    out.truncate(4096);
    out
}

// ---------------------------------------------------------------------------
// Warm hooks and the statusline

/// Runs the commands in turn, round after round, the first one rotating so
/// that none always follows another; `before` runs (untimed) at the start
/// of each round. Returns the samples of each command, warm-up left out.
fn interleaved(
    commands: &[&dyn Fn() -> Command],
    input: &Path,
    rounds: usize,
    mut before: impl FnMut(),
) -> Vec<Samples> {
    let mut samples = vec![Samples::default(); commands.len()];
    for round in 0..WARMUP_RUNS + rounds {
        before();
        for k in 0..commands.len() {
            let i = (round + k) % commands.len();
            let took = timed_ok(commands[i](), input, "a timed run");
            if round >= WARMUP_RUNS {
                samples[i].push(took);
            }
        }
    }
    samples
}

/// The rows of one start-up comparison with `/bin/true`.
fn startup_rows(report: &mut Report, what: &str, runs: &Samples, trues: &Samples, p99: bool) {
    let r = ratio(runs.median(), trues.median());
    report.row(
        format!("{what}: median"),
        fmt_duration(runs.median()),
        format!("`/bin/true` {}", fmt_duration(trues.median())),
        fmt_ratio(r),
        "≤ 2×",
        verdict(r <= 2.0),
    );
    if p99 {
        let p = runs.pct(99.0);
        report.row(
            format!("{what}: p99"),
            fmt_duration(p),
            format!("`/bin/true` {}", fmt_duration(trues.pct(99.0))),
            fmt_ratio(ratio(p, trues.pct(99.0))),
            "≤ 10 ms",
            verdict(p <= Duration::from_millis(10)),
        );
    }
}

fn warm_hooks(
    bins: &Path,
    static_hookctl: Option<&Path>,
    s: &Scale,
    hook: bool,
    statusline: bool,
    report: &mut Report,
) {
    eprintln!("hookd-bench: hookctl against a warm daemon…");
    let env = Env::new(bins);
    env.start();
    let sid = "bench-warm-0001";
    let transcript = env.transcripts().join(format!("{sid}.jsonl"));
    let (_, mut writer) =
        inputs::transcript(&transcript, sid, &env.project(), MB, 1).expect("write the transcript");
    let payload = inputs::hook_payload(
        "PostToolUse",
        sid,
        &transcript,
        &env.project(),
        &tool_output(),
    );
    let hook_input = env.write("post-tool-use.json", &payload);
    env.hook_once("post-tool-use", &hook_input);
    let true_cmd = || env.command("/bin/true");
    // The hookctl that `cargo build --release` makes, and the static one install.sh makes.
    let hookctls: Vec<String> = std::iter::once(bins.join("hookctl"))
        .chain(static_hookctl.map(Path::to_path_buf))
        .map(|p| p.display().to_string())
        .collect();

    if hook {
        let hooks: Vec<Box<dyn Fn() -> Command>> = hookctls
            .iter()
            .map(|bin| {
                let env = &env;
                Box::new(move || {
                    let mut cmd = env.command(bin);
                    cmd.args(["hook", "post-tool-use"]);
                    cmd
                }) as Box<dyn Fn() -> Command>
            })
            .collect();
        let mut commands: Vec<&dyn Fn() -> Command> = vec![&true_cmd];
        commands.extend(hooks.iter().map(|b| b.as_ref()));
        // Claude Code writes the turn, then runs the hook.
        let samples = interleaved(&commands, &hook_input, s.hook_runs, || {
            inputs::append_turn(&transcript, &mut writer).unwrap()
        });
        // Every hook reached the daemon and the figure is the latest reply's.
        let status = env.status();
        let session = status
            .sessions
            .iter()
            .find(|x| x.session_id == sid)
            .expect("the session");
        assert_eq!(
            session.events_seen,
            1 + ((WARMUP_RUNS + s.hook_runs) * hooks.len()) as u64
        );
        assert_eq!(
            session.context.as_ref().map(|c| c.tokens_used),
            Some(writer.tokens),
            "the context figure is the latest reply's"
        );
        startup_rows(
            report,
            "`hookctl hook post-tool-use`, warm daemon",
            &samples[1],
            &samples[0],
            true,
        );
        if let Some(statics) = samples.get(2) {
            startup_rows(
                report,
                "same, hookctl linked statically (as install.sh builds it)",
                statics,
                &samples[0],
                true,
            );
        }
        report.note(format!(
            "Warm hooks: {} runs of each command, interleaved with `/bin/true` run by run (same stdin \
             file, same environment); a {} KB PostToolUse payload (recorded from Claude Code 2.1.330, \
             with 4 KB of tool output); before each round a turn is appended to the session's 1 MB \
             transcript, as Claude Code does before the hook.",
            samples[0].len(),
            payload.len() / 1024,
        ));
    }

    if statusline {
        let input = env.write(
            "statusline.json",
            &inputs::statusline_payload(sid, &transcript, &env.project()),
        );
        let out = env
            .hookctl(&["statusline"])
            .stdin(File::open(&input).unwrap())
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        // Coloured: the figure comes after the colour's escape sequence.
        assert!(line.contains("ctx "), "statusline printed {line:?}");
        let lines: Vec<Box<dyn Fn() -> Command>> = hookctls
            .iter()
            .map(|bin| {
                let env = &env;
                Box::new(move || {
                    let mut cmd = env.command(bin);
                    cmd.arg("statusline");
                    cmd
                }) as Box<dyn Fn() -> Command>
            })
            .collect();
        let mut commands: Vec<&dyn Fn() -> Command> = vec![&true_cmd];
        commands.extend(lines.iter().map(|b| b.as_ref()));
        let samples = interleaved(&commands, &input, s.hook_runs, || {});
        startup_rows(
            report,
            "`hookctl statusline`, statusLine JSON on stdin",
            &samples[1],
            &samples[0],
            false,
        );
        if let Some(statics) = samples.get(2) {
            startup_rows(
                report,
                "same, hookctl linked statically",
                statics,
                &samples[0],
                false,
            );
        }
    }
}

/// hookctl as install.sh builds it on Linux with glibc: linked statically
/// (static-pie), next to the ordinary build in `target/<host>/release/`.
/// `None` on other systems, or when it does not build.
fn static_hookctl(bins: &Path, build: bool) -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().ok()?;
    let host = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))?;
    if !host.ends_with("-linux-gnu") || bins.file_name()? != "release" {
        return None;
    }
    let path = bins.parent()?.join(&host).join("release/hookctl");
    if build {
        eprintln!("hookd-bench: building the static hookctl ({host}), as install.sh does…");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let flags = format!(
            "{} -C target-feature=+crt-static",
            std::env::var("RUSTFLAGS").unwrap_or_default()
        );
        let built = Command::new(cargo)
            .args([
                "build",
                "--release",
                "--locked",
                "-p",
                "hookctl",
                "--target",
            ])
            .arg(&host)
            .env("RUSTFLAGS", flags.trim())
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .status()
            .is_ok_and(|s| s.success());
        if !built {
            eprintln!("hookd-bench: the static hookctl did not build; measuring without it");
            return None;
        }
    }
    path.is_file().then_some(path)
}

// ---------------------------------------------------------------------------
// Cold daemon: the hook starts it

fn cold_hooks(bins: &Path, s: &Scale, report: &mut Report) {
    eprintln!("hookd-bench: hooks that start the daemon…");
    let env = Env::new(bins);
    let sid = "bench-cold-0001";
    let transcript = env.transcripts().join(format!("{sid}.jsonl"));
    inputs::transcript(&transcript, sid, &env.project(), MB, 2).expect("write the transcript");
    let input = env.write(
        "post-tool-use.json",
        &inputs::hook_payload(
            "PostToolUse",
            sid,
            &transcript,
            &env.project(),
            &tool_output(),
        ),
    );
    let mut cold = Samples::default();
    for _ in 0..s.cold_runs {
        env.stop();
        assert!(env.pid().is_none(), "the daemon is stopped");
        cold.push(timed_ok(
            env.hookctl(&["hook", "post-tool-use"]),
            &input,
            "a cold hook",
        ));
        // The hook was answered by the daemon it started, not failed open.
        assert_eq!(
            env.status().daemon.events_handled,
            1,
            "the cold hook reached hookd"
        );
    }
    env.stop();
    report.row(
        "same, daemon cold (the hook starts it): median",
        fmt_duration(cold.median()),
        format!("max {}", fmt_duration(cold.max())),
        "",
        "≤ 100 ms",
        verdict(cold.median() <= Duration::from_millis(100)),
    );
    report.note(format!(
        "Cold hooks: {} runs; each starts from a stopped daemon and includes `hookd start` \
         (fork, bind, readiness) and the answer; the daemon then reports exactly one event.",
        cold.len()
    ));
}

// ---------------------------------------------------------------------------
// Context of big transcripts

fn context_sizes(bins: &Path, s: &Scale, report: &mut Report) {
    eprintln!("hookd-bench: the context of big transcripts…");
    let env = Env::new(bins);
    env.start();
    let made = Instant::now();
    let files: Vec<(PathBuf, inputs::Generated)> = s
        .context_sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let path = env.transcripts().join(format!("big-{}.jsonl", size / MB));
            let (generated, _) =
                inputs::transcript(&path, "bench-ctx", &env.project(), size, 10 + i as u64)
                    .expect("write the transcript");
            (path, generated)
        })
        .collect();
    let made = made.elapsed();
    let mut first = vec![Samples::default(); files.len()];
    let mut percent = vec![0.0; files.len()];
    // Round by round, every size in turn: a drift in the machine's load hits all alike.
    for rep in 0..s.context_runs {
        for (i, (path, generated)) in files.iter().enumerate() {
            // A session the daemon has never seen, its transcript not in the page cache.
            let sid = format!("bench-ctx-{}-{rep}", generated.bytes / MB);
            let input = env.write(
                "ctx.json",
                &inputs::hook_payload("PostToolUse", &sid, path, &env.project(), "ok"),
            );
            inputs::evict(path).expect("drop the transcript from the page cache");
            first[i].push(timed_ok(
                env.hookctl(&["hook", "post-tool-use"]),
                &input,
                "the first hook",
            ));
            let status = env.status();
            let context = status
                .sessions
                .iter()
                .find(|x| x.session_id == sid)
                .and_then(|x| x.context.clone())
                .expect("a context figure after the first hook");
            assert_eq!(
                context.tokens_used,
                generated.tokens,
                "the context of the {} MB transcript",
                generated.bytes / MB
            );
            percent[i] = context.pressure * 100.0;
        }
    }
    for (path, _) in &files {
        let _ = std::fs::remove_file(path);
    }
    let base = first[0].median();
    for (i, (_, generated)) in files.iter().enumerate() {
        let median = first[i].median();
        let last = i + 1 == files.len();
        report.row(
            format!(
                "context % of a new session, {} MB transcript (first hook, cold page cache)",
                generated.bytes / MB
            ),
            format!("{} ({:.1}%, exact)", fmt_duration(median), percent[i]),
            if i == 0 {
                "–".to_owned()
            } else {
                format!("1 MB case {}", fmt_duration(base))
            },
            fmt_ratio(ratio(median, base)),
            if last {
                "≤ 2× the 1 MB case"
            } else {
                "flat"
            },
            if last {
                verdict(ratio(median, base) <= 2.0)
            } else {
                Verdict::Info
            },
        );
    }
    let biggest = &files[files.len() - 1].1;
    report.note(format!(
        "Big transcripts: generated in the real format ({} MB in all, {} turns in the biggest, \
         written in {:.1} s); {} rounds, each size in turn: the file is written to disk and dropped \
         from the page cache (posix_fadvise), then the first hook of a new session is timed and the \
         figure `hookctl status --json` shows is checked against the generator's last reply.",
        files.iter().map(|(_, g)| g.bytes).sum::<u64>() / MB,
        thousands(biggest.turns),
        made.as_secs_f64(),
        s.context_runs
    ));
}

// ---------------------------------------------------------------------------
// The pre-compact pipeline on a big repository

fn pipeline(bins: &Path, s: &Scale, report: &mut Report) {
    eprintln!(
        "hookd-bench: the pre-compact pipeline on a {}-file repository…",
        s.repo_files
    );
    let env = Env::new(bins);
    let repo = env.path().join("repo");
    let made = Instant::now();
    inputs::repository(&repo, s.repo_files, s.repo_modified, s.repo_new)
        .expect("make the repository");
    let made = made.elapsed();
    env.start();
    let sid = "bench-pipeline-01";
    let transcript = env.transcripts().join(format!("{sid}.jsonl"));
    inputs::transcript(&transcript, sid, &repo, MB, 3).expect("write the transcript");
    let post = env.write(
        "post.json",
        &inputs::hook_payload("PostToolUse", sid, &transcript, &repo, &tool_output()),
    );
    env.hook_once("post-tool-use", &post);
    let pre = env.write(
        "pre.json",
        &inputs::hook_payload("PreCompact(trigger=manual)", sid, &transcript, &repo, ""),
    );
    let tmp_index = env.path().join("plumbing-index");
    let plumbing = |seeded: bool| -> (Duration, String) {
        let _ = std::fs::remove_file(&tmp_index);
        let started = Instant::now();
        if seeded {
            std::fs::copy(repo.join(".git/index"), &tmp_index).unwrap();
        }
        let git = |args: &[&str]| {
            let out = inputs::git(&repo)
                .env("GIT_INDEX_FILE", &tmp_index)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        git(&["add", "-A"]);
        let tree = git(&["write-tree"]);
        git(&["commit-tree", &tree, "-p", "HEAD", "-m", "plumbing"]);
        (started.elapsed(), tree)
    };
    let checkpoint = || {
        inputs::git(&repo)
            .args(["rev-parse", "-q", "--verify", "refs/hookd/checkpoints/main"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    // Warm the page cache for both.
    plumbing(false);
    let [mut plain, mut seeded, mut first, mut second, mut status] =
        std::array::from_fn(|_| Samples::default());
    for _ in 0..s.pipeline_rounds {
        // As if hookd had never checkpointed this repository: a daemon
        // without in-memory caches, no private index, ref or `.workflow/`.
        env.stop();
        env.start();
        env.hook_once("post-tool-use", &post);
        let _ = std::fs::remove_dir_all(repo.join(".git/hookd"));
        let _ = std::fs::remove_dir_all(repo.join(".workflow"));
        let _ = inputs::git(&repo)
            .args(["update-ref", "-d", "refs/hookd/checkpoints/main"])
            .output();
        let (took, tree) = plumbing(false);
        plain.push(took);
        seeded.push(plumbing(true).0);
        first.push(timed_ok(
            env.hookctl(&["hook", "pre-compact"]),
            &pre,
            "the first checkpoint",
        ));
        let made = checkpoint();
        assert!(!made.is_empty(), "the pipeline made a checkpoint");
        assert_eq!(
            inputs::run_git(&repo, &["rev-parse", &format!("{made}^{{tree}}")]),
            tree,
            "the checkpoint holds what `git add -A` would"
        );
        second.push(timed_ok(
            env.hookctl(&["hook", "pre-compact"]),
            &pre,
            "the second checkpoint",
        ));
        assert_eq!(checkpoint(), made, "no new commit when nothing changed");
        // What finding out that nothing changed costs git itself.
        let started = Instant::now();
        git_status(&repo);
        status.push(started.elapsed());
    }
    let files = format!(
        "{} files, {} modified, {} new",
        thousands(s.repo_files as u64),
        s.repo_modified,
        s.repo_new
    );
    let r = ratio(first.median(), plain.median());
    report.row(
        format!("full pre-compact pipeline (`hookctl hook pre-compact`), {files}"),
        fmt_duration(first.median()),
        format!("git plumbing {}", fmt_duration(plain.median())),
        fmt_ratio(r),
        "≤ 1.0×",
        verdict(r <= 1.0),
    );
    report.row(
        "same, against git plumbing through a copy of the repository's index",
        fmt_duration(first.median()),
        format!(
            "git plumbing, index copied {}",
            fmt_duration(seeded.median())
        ),
        fmt_ratio(ratio(first.median(), seeded.median())),
        "",
        Verdict::Info,
    );
    let r = ratio(second.median(), first.median());
    report.row(
        "second checkpoint, nothing changed",
        fmt_duration(second.median()),
        format!("first checkpoint {}", fmt_duration(first.median())),
        fmt_ratio(r),
        "≤ 0.2×",
        verdict(r <= 0.2),
    );
    report.row(
        "same, against `git status` (finding out that nothing changed)",
        fmt_duration(second.median()),
        format!("`git status` {}", fmt_duration(status.median())),
        fmt_ratio(ratio(second.median(), status.median())),
        "",
        Verdict::Info,
    );
    report.note(format!(
        "Pipeline: a generated repository ({files}; made in {:.1} s) and a 1 MB transcript; \
         {} rounds, each from a repository hookd never checkpointed (a restarted daemon; its \
         private index, ref and `.workflow/` removed). The pipeline is the whole PreCompact hook: capture (workflow file, \
         records, transcript, git status with line counts), progress summary, checkpoint commit, \
         context budget (the changed files scored and summarized), resume prompt, files written. Git plumbing: `GIT_INDEX_FILE=tmp git add -A && git write-tree \
         && git commit-tree` (three processes, fresh index). The checkpoint's tree is checked \
         against git's.",
        made.as_secs_f64(),
        first.len()
    ));
}

fn git_status(repo: &Path) {
    let out = inputs::git(repo)
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git status");
}

// ---------------------------------------------------------------------------
// Sustained load, memory, idle CPU

/// One hook as hookctl sends it: connect, Hello and request, both answers.
fn send_hook(socket: &Path, frames: &[u8]) -> Result<(), String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(frames)
        .map_err(|e| format!("write: {e}"))?;
    match frame::read_message::<_, Response>(&mut stream).map_err(|e| e.to_string())? {
        Response::Hello(_) => {}
        other => return Err(format!("handshake answered {other:?}")),
    }
    match frame::read_message::<_, Response>(&mut stream).map_err(|e| e.to_string())? {
        Response::Hook(_) => Ok(()),
        other => Err(format!("hook answered {other:?}")),
    }
}

fn hook_frames(event: &str, payload: &[u8]) -> Vec<u8> {
    let payload = RawValue::from_string(String::from_utf8(payload.to_vec()).unwrap()).unwrap();
    let request = Request::Hook(HookRequest {
        harness: Harness::ClaudeCode,
        event: Some(event.to_owned()),
        payload,
        env: Default::default(),
        cwd: None,
    });
    let mut frames = frame::encode(&Hello::current()).unwrap();
    frames.extend(frame::encode(&request).unwrap());
    frames
}

struct ProcStat {
    ticks: u64,
    /// Context switches of each thread, by thread id.
    switches: std::collections::HashMap<String, u64>,
}

/// CPU time (user + system, in clock ticks; exited threads included) and
/// the context switches of each thread.
fn proc_stat(pid: i32) -> ProcStat {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let mut switches = std::collections::HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let n = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
        switches.insert(task.file_name().to_string_lossy().into_owned(), n);
    }
    ProcStat { ticks, switches }
}

/// Wake-ups between two samples: context switches of the threads alive in
/// both, plus one for each thread that ended (an idle pool thread leaving).
fn wakeups(before: &ProcStat, after: &ProcStat) -> u64 {
    before
        .switches
        .iter()
        .map(|(tid, n)| after.switches.get(tid).map_or(1, |m| m.saturating_sub(*n)))
        .sum::<u64>()
        + after
            .switches
            .iter()
            .filter(|(tid, _)| !before.switches.contains_key(*tid))
            .map(|(_, n)| *n)
            .sum::<u64>()
}

fn proc_status_kib(pid: i32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn load(bins: &Path, s: &Scale, report: &mut Report) {
    eprintln!("hookd-bench: {LOAD_SESSIONS} sessions under load…");
    let env = Env::new(bins);
    let pid = env.start();
    let socket = env.sb.socket();
    let size = if s.quick { 64 * 1024 } else { 512 * 1024 };
    let mut sessions = Vec::new();
    for i in 0..LOAD_SESSIONS {
        let sid = format!("bench-load-{i:04}");
        let transcript = env.transcripts().join(format!("{sid}.jsonl"));
        let (_, writer) =
            inputs::transcript(&transcript, &sid, &env.project(), size, 100 + i as u64)
                .expect("write a transcript");
        let pre = inputs::hook_payload("PreToolUse", &sid, &transcript, &env.project(), "");
        let post = inputs::hook_payload(
            "PostToolUse",
            &sid,
            &transcript,
            &env.project(),
            &tool_output(),
        );
        let frames = [
            hook_frames("pre-tool-use", &pre),
            hook_frames("post-tool-use", &post),
        ];
        send_hook(&socket, &frames[1]).expect("the first hook of a session");
        sessions.push((sid, transcript, writer, frames));
    }
    let handled_before = env.status().daemon.events_handled;

    // Each session: append a turn, PreToolUse, PostToolUse, again, as fast as it can.
    let barrier = Arc::new(Barrier::new(LOAD_SESSIONS + 1));
    let threads: Vec<_> = sessions
        .into_iter()
        .map(|(sid, transcript, mut writer, frames)| {
            let (barrier, socket, duration) = (barrier.clone(), socket.clone(), s.load);
            std::thread::spawn(move || {
                let mut latencies = Samples::default();
                let mut failures = Vec::new();
                barrier.wait();
                let until = Instant::now() + duration;
                let mut n = 0u64;
                while Instant::now() < until {
                    if n.is_multiple_of(2) {
                        inputs::append_turn(&transcript, &mut writer).unwrap();
                    }
                    let started = Instant::now();
                    match send_hook(&socket, &frames[(n % 2) as usize]) {
                        Ok(()) => latencies.push(started.elapsed()),
                        Err(e) => failures.push(e),
                    }
                    n += 1;
                }
                (sid, n, latencies, failures)
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let mut all = Samples::default();
    let (mut sent, mut failed) = (0u64, Vec::new());
    for (_, n, latencies, failures) in &results {
        sent += n;
        all.0.extend(&latencies.0);
        failed.extend(failures.iter().cloned());
    }
    let status = env.status();
    let counted = status.daemon.events_handled - handled_before;
    for (sid, n, _, _) in &results {
        let seen = status
            .sessions
            .iter()
            .find(|x| &x.session_id == sid)
            .map_or(0, |x| x.events_seen);
        assert_eq!(seen, 1 + n, "every hook of {sid} was counted");
    }
    assert!(
        failed.is_empty(),
        "hooks failed under load: {:?}",
        &failed[..failed.len().min(5)]
    );
    assert_eq!(counted, sent, "hookd counted every hook");
    let rate = all.len() as f64 / elapsed.as_secs_f64();
    report.row(
        format!("sustained load: {LOAD_SESSIONS} concurrent sessions sending hooks"),
        format!("{} events/s", thousands(rate as u64)),
        "",
        "",
        "≥ 2,000/s",
        verdict(rate >= 2000.0),
    );
    report.row(
        "same: events lost",
        format!("{} of {}", sent - all.len() as u64, thousands(sent)),
        "",
        "",
        "none",
        verdict(failed.is_empty() && counted == sent),
    );
    report.row(
        "same: latency per hook, median / p99",
        format!(
            "{} / {}",
            fmt_duration(all.median()),
            fmt_duration(all.pct(99.0))
        ),
        "",
        "",
        "report",
        Verdict::Info,
    );
    report.note(format!(
        "Load: {LOAD_SESSIONS} threads, one session each ({} KB transcripts), for {:.0} s; each \
         appends a turn to its transcript, then sends PreToolUse and PostToolUse exactly as hookctl \
         does (connect, Hello and request in one write, both answers), as fast as it can. \
         `hookctl status --json` then shows every event counted, per session.",
        size / 1024,
        s.load.as_secs_f64()
    ));

    // The same through real hookctl processes: bounded by process creation.
    let post = env.write(
        "load-post.json",
        &inputs::hook_payload(
            "PostToolUse",
            "bench-load-0000",
            &env.transcripts().join("bench-load-0000.jsonl"),
            &env.project(),
            &tool_output(),
        ),
    );
    let spawn_rate = |command: &(dyn Fn() -> Command + Sync)| -> f64 {
        let barrier = Barrier::new(LOAD_SESSIONS + 1);
        let until = std::sync::OnceLock::new();
        let total: u64 = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..LOAD_SESSIONS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        let until: &Instant = until.get().expect("set before the start");
                        let mut n = 0u64;
                        while Instant::now() < *until {
                            timed_ok(command(), &post, "a process under load");
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            until.set(Instant::now() + s.load / 2).unwrap();
            barrier.wait();
            threads.into_iter().map(|t| t.join().unwrap()).sum()
        });
        total as f64 / (s.load / 2).as_secs_f64()
    };
    let via_hookctl = spawn_rate(&|| env.hookctl(&["hook", "post-tool-use"]));
    let via_true = spawn_rate(&|| env.command("/bin/true"));
    report.row(
        format!("same through `hookctl` processes, {LOAD_SESSIONS} at a time"),
        format!("{} events/s", thousands(via_hookctl as u64)),
        format!("`/bin/true` {}/s", thousands(via_true as u64)),
        fmt_ratio(via_hookctl / via_true),
        "report",
        Verdict::Info,
    );

    // Memory with the 50 sessions active, then CPU while nothing happens,
    // once the load's helper threads are gone (tokio lets an idle blocking
    // thread go after 10 s).
    std::thread::sleep(s.settle);
    let rss = proc_status_kib(pid, "VmRSS:");
    let peak = proc_status_kib(pid, "VmHWM:");
    // The heap apart from the program's own pages, which grow with its code.
    let anon = proc_status_kib(pid, "RssAnon:");
    let mib = |kib: u64| kib as f64 / 1024.0;
    report.row(
        format!("daemon resident memory, {LOAD_SESSIONS} active sessions"),
        format!(
            "{:.1} MiB (peak {:.1} MiB; heap and stacks {:.1} MiB, mapped files {:.1} MiB)",
            mib(rss),
            mib(peak),
            mib(anon),
            mib(rss.saturating_sub(anon))
        ),
        "",
        "",
        "≤ 20 MiB",
        verdict(rss <= 20 * 1024),
    );
    let before = proc_stat(pid);
    std::thread::sleep(s.idle);
    let after = proc_stat(pid);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let cpu = (after.ticks - before.ticks) as f64 / hz / s.idle.as_secs_f64() * 100.0;
    let wakeups = wakeups(&before, &after) as f64 / s.idle.as_secs_f64();
    report.row(
        "daemon CPU when idle",
        format!("{cpu:.2}% ({wakeups:.1} thread wake-ups/s)"),
        "",
        "",
        "~0%, no polling",
        verdict(cpu < 0.5 && wakeups <= 2.0),
    );
    report.note(format!(
        "Memory and idle CPU: VmRSS/VmHWM from /proc/<pid>/status {:.0} s after the load, \
         50 sessions still active; CPU from utime+stime in /proc/<pid>/stat and wake-ups from \
         the context switches of every thread of the daemon, over the next {:.0} idle seconds.",
        s.settle.as_secs_f64(),
        s.idle.as_secs_f64()
    ));
}

// ---------------------------------------------------------------------------
// Small helpers

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn uname() -> String {
    let out = Command::new("uname").args(["-sr"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn short_date() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::inputs::*;
    use serde_json::Value;
    use std::path::Path;

    #[test]
    fn generated_lines_are_json_and_keep_the_fixture_shape() {
        let mut w = TranscriptWriter::new("s-1", Path::new("/home/dev/proj"), 7);
        let mut out = String::new();
        for _ in 0..12 {
            w.turn(&mut out);
        }
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let replies: Vec<&Value> = lines.iter().filter(|v| v["type"] == "assistant").collect();
        assert_eq!(replies.len(), 24);
        let last = replies.last().unwrap();
        let u = &last["message"]["usage"];
        let sum = u["input_tokens"].as_u64().unwrap()
            + u["cache_creation_input_tokens"].as_u64().unwrap()
            + u["cache_read_input_tokens"].as_u64().unwrap();
        assert_eq!(sum, w.tokens);
        assert_eq!(last["sessionId"], "s-1");
        assert!(lines.iter().any(|v| v["toolUseResult"].is_object()));
    }
}
