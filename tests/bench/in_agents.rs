//! The in-client measure for the other clients: what hookd's hooks cost
//! inside the real Codex CLI, Gemini CLI, Qwen Code, GitHub Copilot CLI and OpenCode.
//!
//! Each client (the pinned ones the end-to-end scenarios drive, against the
//! same scripted model server) runs headless prompts of N sequential shell
//! calls, one session per configuration, resumed prompt after prompt, the
//! configurations interleaved round by round (the first one rotating):
//!
//! - `none`: hookd not installed, the floor;
//! - `noop`: every hook `hookctl install <client>` wires runs `/bin/true`
//!   (OpenCode: hookd's plugin, running `/bin/true` where it runs hookctl);
//! - `hookd`: the hooks as `hookctl install` writes them (OpenCode: its
//!   plugin), against a daemon the first hook starts on the sandbox's socket.
//!
//! Gemini runs twice: far below its compression point, and held near it
//! (every reply reports 93% of the point, no compression), where its
//! PreCompress hook, which fires before every model call, meets a context
//! hookd counts as close to compaction.
//!
//! Only Copilot CLI times its hooks where a bench can read it (a `hook.start`
//! and a `hook.end` record in its `events.jsonl`), so for every client the
//! figures are the whole run (spawn to exit), the tool-call loop (the model
//! server answering the prompt's first request to its last: N tool calls
//! with their hooks) and each call's cycle (one request to the next); the
//! cost per tool call is the loop's median over `noop`'s, divided by N. For
//! Copilot CLI, each hook's own time as it recorded it is added, `noop`'s
//! and `hookd`'s.

use super::in_client::InClientScale;
use super::{Report, Samples, Verdict, fmt_duration, fmt_ratio, ratio};
use hookd_tests::e2e_agents::{Agent, AgentRun, Client, GEMINI_COMPRESSES_AT, Wiring};
use hookd_tests::mock_model::Reply;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The command of every no-op hook.
const NOOP_COMMAND: &str = "/bin/true";
/// How OpenCode's plugin, as installed, names the hookctl it runs.
const PLUGIN_HOOKCTL: &str = "const HOOKCTL = ";
/// Far below every threshold: no warning, no save.
const FAR_TOKENS: u64 = 20_000;
/// Gemini held near its point: 93% of where it compresses, for every reply.
const NEAR_TOKENS: u64 = GEMINI_COMPRESSES_AT * 93 / 100;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Config {
    None,
    Noop,
    Hookd,
}

const CONFIGS: [Config; 3] = [Config::None, Config::Noop, Config::Hookd];

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::None => "none",
            Config::Noop => "noop",
            Config::Hookd => "hookd",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Config::None => "no hooks",
            Config::Noop => "`/bin/true` on every event hookd wires",
            Config::Hookd => "hookd's hooks",
        }
    }
}

/// One measured case: a client at a context size.
struct Case {
    client: Client,
    tokens: u64,
    title: String,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            client: Client::Codex,
            tokens: FAR_TOKENS,
            title: format!("Codex CLI {}", Client::Codex.pinned_version()),
        },
        Case {
            client: Client::Gemini,
            tokens: FAR_TOKENS,
            title: format!("Gemini CLI {}", Client::Gemini.pinned_version()),
        },
        Case {
            client: Client::OpenCode,
            tokens: FAR_TOKENS,
            title: format!("OpenCode {}", Client::OpenCode.pinned_version()),
        },
        Case {
            client: Client::Gemini,
            tokens: NEAR_TOKENS,
            title: format!(
                "Gemini CLI {} held near its compression point ({} of {} tokens)",
                Client::Gemini.pinned_version(),
                NEAR_TOKENS,
                GEMINI_COMPRESSES_AT
            ),
        },
        Case {
            client: Client::Qwen,
            tokens: FAR_TOKENS,
            title: format!("Qwen Code {}", Client::Qwen.pinned_version()),
        },
        Case {
            client: Client::Copilot,
            tokens: FAR_TOKENS,
            title: format!("Copilot CLI {}", Client::Copilot.pinned_version()),
        },
    ]
}

/// One configuration's session and figures.
struct Setup {
    config: Config,
    agent: Agent,
    walls: Samples,
    loops: Samples,
    cycles: Samples,
    /// Each hook's own time, by event, as the client recorded it (Copilot
    /// CLI only).
    hooks: BTreeMap<String, Samples>,
    /// The hook runs of the client's record already counted.
    hooks_seen: usize,
}

/// The measure, added to `report`; a client that is not installed is
/// skipped (and said so), as the end-to-end scenarios do.
pub fn in_agents(scale: &InClientScale, report: &mut Report) {
    for case in cases() {
        measure(&case, scale, report);
    }
}

fn measure(case: &Case, scale: &InClientScale, report: &mut Report) {
    let rounds = scale.warmup + scale.rounds;
    eprintln!(
        "hookd-bench: inside {}: {} rounds of one prompt of {} shell calls, 3 configurations…",
        case.title, rounds, scale.calls
    );
    let started = Instant::now();
    let mut setups = Vec::new();
    for config in CONFIGS {
        let name = format!("bench-{}-{}", case.client.harness(), config.name());
        let wiring = if config == Config::None {
            Wiring::NoHooks
        } else {
            Wiring::Hookd
        };
        let Some(agent) = Agent::builder(case.client, &name)
            .replies(script(case, scale.calls, rounds))
            .wiring(wiring)
            .start()
        else {
            let why = format!(
                "${} is not set (tests/tools/install-clients installs {} and prints it)",
                case.client.env_var(),
                case.title
            );
            eprintln!(
                "hookd-bench: in-client measure of {} skipped: {why}",
                case.title
            );
            report.note(format!("In-client {} skipped: {why}.", case.title));
            return;
        };
        if config == Config::Noop {
            rewire_to_noop(&agent);
        }
        setups.push(Setup {
            config,
            agent,
            walls: Samples::default(),
            loops: Samples::default(),
            cycles: Samples::default(),
            hooks: BTreeMap::new(),
            hooks_seen: 0,
        });
    }
    for round in 0..rounds {
        for k in 0..CONFIGS.len() {
            let setup = &mut setups[(round + k) % CONFIGS.len()];
            let run = setup.agent.run(&prompt(round, scale.calls));
            let (tool_loop, cycles) = check_run(case, setup, &run, round, scale.calls);
            let hook_times = new_hook_times(case, setup);
            if round >= scale.warmup {
                for (event, time) in hook_times {
                    setup.hooks.entry(event).or_default().push(time);
                }
                setup.walls.push(run.elapsed);
                setup.loops.push(tool_loop);
                for cycle in cycles {
                    setup.cycles.push(cycle);
                }
            }
        }
    }
    let hookd = setups.iter().find(|s| s.config == Config::Hookd).unwrap();
    let reached = hooks_reached(&hookd.agent);
    rows(case, &setups, scale, reached, rounds, report);
    report.note(format!(
        "In-client {}: {} timed rounds (after {} untimed) of one headless prompt of {} \
         sequential shell calls per configuration, the same session resumed each round, \
         every reply reporting {} tokens; {:.0} s in all. hookd's hooks ran the \
         dynamically linked hookctl the end-to-end scenarios install, the daemon logging \
         at debug level as there.",
        case.title,
        scale.rounds,
        scale.warmup,
        scale.calls,
        case.tokens,
        started.elapsed().as_secs_f64()
    ));
}

fn prompt(round: usize, calls: usize) -> String {
    format!("ROUND {round}: run the benchmark's {calls} commands, one after the other.")
}

/// For every round, N shell calls then a closing text, all at the case's size.
fn script(case: &Case, calls: usize, rounds: usize) -> Vec<Reply> {
    let mut replies = Vec::new();
    for round in 0..rounds {
        for call in 0..calls {
            replies.push(Reply::shell(
                &format!("r{round}.call{call}"),
                case.tokens + call as u64,
                &format!("echo call {call}"),
            ));
        }
        replies.push(Reply::text(
            &format!("r{round}.done"),
            case.tokens + calls as u64,
            "Done.",
        ));
    }
    replies
}

/// The client's hook settings with every hookctl command replaced by the
/// no-op, everything else (events, matchers, timeouts) as installed; for
/// OpenCode, the plugin's hookctl.
fn rewire_to_noop(agent: &Agent) {
    let file = agent.hook_settings_file();
    if agent.client == Client::OpenCode {
        let plugin = std::fs::read_to_string(&file).unwrap();
        let mut replaced = 0;
        let text: Vec<String> = plugin
            .lines()
            .map(|line| {
                if line.starts_with(PLUGIN_HOOKCTL) {
                    replaced += 1;
                    format!("{PLUGIN_HOOKCTL}{NOOP_COMMAND:?};")
                } else {
                    line.to_owned()
                }
            })
            .collect();
        assert_eq!(
            replaced,
            1,
            "no `{PLUGIN_HOOKCTL}` line in {}",
            file.display()
        );
        std::fs::write(&file, text.join("\n") + "\n").unwrap();
        return;
    }
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let replaced = replace_commands(&mut settings["hooks"]);
    assert!(replaced > 0, "no hookctl command in {}", file.display());
    std::fs::write(&file, settings.to_string()).unwrap();
}

/// Replaces every command that runs hookctl (a `command`, or in Copilot
/// CLI's own format a `bash`); returns how many.
fn replace_commands(v: &mut Value) -> usize {
    match v {
        Value::Object(map) => {
            let mut n = 0;
            for (key, value) in map.iter_mut() {
                if (key == "command" || key == "bash")
                    && value.as_str().is_some_and(|c| c.contains("hookctl"))
                {
                    *value = Value::from(NOOP_COMMAND);
                    n += 1;
                } else {
                    n += replace_commands(value);
                }
            }
            n
        }
        Value::Array(items) => items.iter_mut().map(replace_commands).sum(),
        _ => 0,
    }
}

/// The run asked the model exactly the round's script and no compaction
/// happened (a figure of another path is no figure); returns its tool-call
/// loop and every call's cycle.
fn check_run(
    case: &Case,
    setup: &Setup,
    run: &AgentRun,
    round: usize,
    calls: usize,
) -> (Duration, Vec<Duration>) {
    let log = setup.agent.log();
    let main: Vec<_> = log
        .of_kind("main")
        .into_iter()
        .filter(|r| r.label.starts_with(&format!("r{round}.")))
        .collect();
    assert_eq!(
        main.len(),
        calls + 1,
        "in-client {} `{}` round {round}: the model requests were not the script's: {:?}\n{}",
        case.title,
        setup.config.name(),
        log.labels(),
        run.stderr
    );
    assert!(
        log.of_kind("summary").is_empty(),
        "in-client {} `{}`: the client compacted, which the measure does not mean to time",
        case.title,
        setup.config.name()
    );
    let secs = |s: f64| Duration::from_secs_f64(s.max(0.0));
    let tool_loop = secs(main[calls].received - main[0].received);
    let cycles = main
        .windows(2)
        .map(|pair| secs(pair[1].received - pair[0].received))
        .collect();
    (tool_loop, cycles)
}

/// The hook runs the client recorded since the last call, with their
/// times (Copilot CLI's `events.jsonl`; nothing for the other clients).
fn new_hook_times(case: &Case, setup: &mut Setup) -> Vec<(String, Duration)> {
    if case.client != Client::Copilot || setup.config == Config::None {
        return Vec::new();
    }
    let all = setup.agent.copilot_hook_times();
    let new = all[setup.hooks_seen.min(all.len())..].to_vec();
    setup.hooks_seen = all.len();
    assert!(
        !new.is_empty(),
        "in-client {} `{}`: the client recorded no hook run",
        case.title,
        setup.config.name()
    );
    new
}

/// How many hooks reached hookd: a hook that could not would exit 0 at once
/// and flatter the figures.
fn hooks_reached(agent: &Agent) -> u64 {
    let id = agent.session_id().to_owned();
    let seen = agent
        .session(&id)
        .and_then(|s| s["events_seen"].as_u64())
        .unwrap_or(0);
    assert!(
        seen > 0,
        "hookd never saw session {id}: its hooks did not reach the daemon\n{}",
        agent.diagnostics()
    );
    seen
}

/// Checkpoint commits hookd made in the project.
fn checkpoints(agent: &Agent) -> usize {
    let refs = agent.hookd_refs();
    if refs.is_empty() {
        return 0;
    }
    let mut args = vec!["log", "--format=%s"];
    args.extend(refs.iter().map(String::as_str));
    agent
        .git(&args)
        .lines()
        .filter(|s| s.starts_with("WIP: Pre-compaction checkpoint"))
        .count()
}

fn per_call_ms(a: Duration, b: Duration, calls: usize) -> f64 {
    (a.as_secs_f64() - b.as_secs_f64()) * 1e3 / calls as f64
}

fn rows(
    case: &Case,
    setups: &[Setup],
    scale: &InClientScale,
    hooks_seen: u64,
    rounds: usize,
    report: &mut Report,
) {
    let by = |c: Config| setups.iter().find(|s| s.config == c).unwrap();
    let (none, noop, hookd) = (by(Config::None), by(Config::Noop), by(Config::Hookd));
    let n = scale.calls;
    let head = format!("{}, one prompt of {n} shell calls", case.title);
    for s in setups {
        let (baseline, r) = if s.config == Config::Hookd {
            (
                format!("`noop` {}", fmt_duration(noop.walls.median())),
                fmt_ratio(ratio(s.walls.median(), noop.walls.median())),
            )
        } else {
            Default::default()
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
    let hooks_per_run = hooks_seen as f64 / rounds as f64;
    for (what, a, b) in [
        (
            "hookd's added cost per tool call over `noop` (tool-call loop)",
            hookd,
            noop,
        ),
        (
            "`noop`'s cost per tool call over `none` (tool-call loop)",
            noop,
            none,
        ),
    ] {
        report.row(
            format!("{head}: {what}"),
            format!(
                "{:+.2} ms",
                per_call_ms(a.loops.median(), b.loops.median(), n)
            ),
            format!(
                "whole run: {:+.2} ms · median cycle: {:+.2} ms",
                per_call_ms(a.walls.median(), b.walls.median(), n),
                per_call_ms(a.cycles.median(), b.cycles.median(), 1)
            ),
            "",
            "report",
            Verdict::Info,
        );
    }
    for (event, noop_times) in &noop.hooks {
        let Some(hookd_times) = hookd.hooks.get(event) else {
            continue;
        };
        report.row(
            format!(
                "{head}: one {event} hook's time as the client records it, median (p90; runs), \
                 `hookd` against `noop`"
            ),
            format!(
                "{} ({}; {})",
                fmt_duration(hookd_times.median()),
                fmt_duration(hookd_times.pct(90.0)),
                hookd_times.len()
            ),
            format!(
                "`noop` {} ({}; {})",
                fmt_duration(noop_times.median()),
                fmt_duration(noop_times.pct(90.0)),
                noop_times.len()
            ),
            fmt_ratio(ratio(hookd_times.median(), noop_times.median())),
            "report",
            Verdict::Info,
        );
    }
    let pipelines = hookd.agent.pipeline_runs(None).len();
    report.row(
        format!("{head}: hookd's pipeline runs and checkpoint commits, all {rounds} rounds"),
        format!(
            "{pipelines} / {} ({hooks_per_run:.1} hookd hooks a run)",
            checkpoints(&hookd.agent)
        ),
        "",
        "",
        "report (no compaction happened)",
        Verdict::Info,
    );
}
