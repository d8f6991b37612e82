//! `hookctl status`: the daemon and the sessions it follows.

use crate::Context;
use crate::client::ClientError;
use crate::display::{
    ago_at, compaction_percent, duration, now_ms, percent, short_id, sparkline, sparkline_legend,
    thousands, window_bar,
};
use protocol::wire::{ContextStatus, Mark, SessionStatus, StatusQuery, StatusReport};
use std::process::ExitCode;

/// What a person sees when no session has reached hookd yet.
pub const NO_SESSIONS: &str = "no sessions yet: start Claude Code, Codex or Gemini CLI in a project \
(after `hookctl install <harness>`); a session shows here from its first hook";

/// How much `render` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// What a person needs: the context in words and a picture.
    Plain,
    /// Also the figures behind it: the compaction point's basis, the
    /// levels passed since the last compaction and the room for what hookd adds.
    Verbose,
}

pub fn run(ctx: &Context, session: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match ctx.connect(false) {
        Ok(client) => client,
        Err(ClientError::NotRunning(path)) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "running": false, "socket": path })
                );
            } else {
                println!(
                    "hookd is not running (socket {}). `hookctl daemon start` starts it.",
                    path.display()
                );
            }
            return Ok(ExitCode::from(3));
        }
        Err(e) => return Err(e.into()),
    };
    let report = client.call(StatusQuery {
        session: session.clone(),
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let detail = if ctx.verbose {
            Detail::Verbose
        } else {
            Detail::Plain
        };
        print!("{}", render(&report, detail, now_ms()));
    }
    if session.is_some() && report.sessions.is_empty() {
        eprintln!(
            "hookctl: no session matches {}",
            session.unwrap_or_default()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The report for a person, with times as seen at `now` (Unix ms).
pub fn render(report: &StatusReport, detail: Detail, now: u64) -> String {
    let d = &report.daemon;
    let mut out = format!(
        "hookd {} (protocol {}) · pid {} · up {} · {}\nsocket {}\n",
        d.version,
        d.protocol,
        d.pid,
        duration(d.uptime_secs),
        protocol::text::counted(d.events_handled, "event"),
        d.socket.display()
    );
    for w in &d.warnings {
        out += &format!("warning: {w}\n");
    }
    for line in report.sync.iter().flat_map(crate::sync::lines) {
        out += &format!("sync {line}\n");
    }
    if report.sessions.is_empty() {
        out += NO_SESSIONS;
        out.push('\n');
        return out;
    }
    let n = report.sessions.len();
    out += &format!("{}\n", protocol::text::counted(n as u64, "session"));
    for s in &report.sessions {
        out += &session(s, detail, now);
    }
    out
}

fn session(s: &SessionStatus, detail: Detail, now: u64) -> String {
    let project = s
        .project_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "-".into());
    let mut out = format!(
        "\n{} {} {}  {}  {}\n",
        if s.ended { "○" } else { "●" },
        s.harness,
        short_id(&s.session_id),
        project,
        s.model.as_deref().unwrap_or("model unknown"),
    );
    match &s.context {
        Some(c) => {
            if let Some(why) = &c.invalid {
                out += &format!(
                    "    context  the latest figure cannot be right ({why}); showing the last good one\n"
                );
            }
            out += &context_lines(c, detail);
            out += &history_lines(s, c);
        }
        None if s.epoch > 1 => {
            out += "    context  unknown since the last compaction (no figure read since)\n"
        }
        None => out += "    context  unknown until the first reply\n",
    }
    out += &format!("    {}\n", compactions(s));
    if detail == Detail::Verbose {
        let fired: Vec<String> = s.fired.iter().map(|l| percent(*l)).collect();
        let since = match s.epoch.saturating_sub(1) {
            0 => "since the session began".to_owned(),
            n => format!("since compaction {n}"),
        };
        out += &format!(
            "    levels passed {since}: {}\n",
            if fired.is_empty() {
                "none".to_owned()
            } else {
                fired.join(", ")
            }
        );
    }
    out += &format!(
        "    last save {} · last checkpoint {}\n",
        mark(s.last_save.as_ref(), now, false),
        mark(s.last_checkpoint.as_ref(), now, true)
    );
    if let Some(resume) = &s.resume {
        out += &format!("    resume prompt {}\n", mark(Some(resume), now, false));
    }
    for r in &s.resumes_followed {
        let line = protocol::wire::followed_line(Some(r.epoch), r.words(), r.detail.as_deref());
        out += &format!("    {line}\n");
    }
    out += &format!(
        "    last event {} {} · {}{}\n",
        s.last_event.as_deref().unwrap_or("-"),
        ago_at(s.last_event_at_ms, now),
        protocol::text::counted(s.events_seen, "event"),
        if s.ended { " · ended" } else { "" }
    );
    if let Some(t) = &s.transcript_path {
        out += &format!("    transcript {}\n", t.display());
    }
    for note in &s.notes {
        out += &format!("    note: {note}\n");
    }
    out
}

/// `72% of the way to compaction (120,240 of 167,000 tokens), 60% of the
/// window`: the figure the levels are measured against first, as every
/// screen and message leads with it; a bar of the window with compaction
/// marked; and with `Verbose` where the point comes from and the room.
fn context_lines(c: &ContextStatus, detail: Detail) -> String {
    let at = compaction_percent(c.tokens_max, c.window_tokens);
    let words = if c.point_unknown {
        protocol::figures::window_words(c.tokens_used, c.window_tokens)
    } else {
        protocol::figures::context_words(c.tokens_used, c.tokens_max, c.window_tokens)
    };
    let mut out = format!("    context  {words}\n");
    out += &format!(
        "             {}  the window, {}\n",
        window_bar(c.window_fraction, at as f64 / 100.0, 20),
        compaction_words(c),
    );
    if detail == Detail::Verbose {
        let point = if c.point_unknown {
            format!(
                "not known yet (the window, {}, stands in)",
                thousands(c.tokens_max)
            )
        } else {
            format!("{} ({})", thousands(c.tokens_max), c.basis)
        };
        out += &format!(
            "             compaction point: {point}, figure from the {}\n             room: {}\n",
            c.source,
            c.advice.summary(),
        );
    }
    out
}

/// `│ = compaction at 83%`, or that it does not compact by itself.
fn compaction_words(c: &ContextStatus) -> String {
    if c.point_unknown {
        "compaction point not known yet".to_owned()
    } else if !protocol::figures::compacts_by_itself(c.tokens_max, c.window_tokens) {
        "no automatic compaction".to_owned()
    } else {
        format!(
            "│ = compaction at {}%",
            compaction_percent(c.tokens_max, c.window_tokens)
        )
    }
}

/// The sparkline of the recent readings, `█` at the compaction point, with
/// what happened marked under it.
fn history_lines(s: &SessionStatus, c: &ContextStatus) -> String {
    if s.history.is_empty() {
        return String::new();
    }
    let (line, marks) = sparkline(&s.history, c.tokens_max);
    let n = s.history.len();
    let full = if c.point_unknown {
        "the whole window"
    } else {
        "at the compaction point"
    };
    let mut out = format!(
        "    recent   {line}  {}, █ = {full}\n",
        if n == 1 {
            "the latest reply".to_owned()
        } else {
            format!("the last {n} replies")
        }
    );
    if !marks.is_empty() {
        let pad = " ".repeat(n.saturating_sub(marks.chars().count()));
        out += &format!(
            "             {marks}{pad}  {}\n",
            sparkline_legend(&s.history)
        );
    }
    out
}

/// `not compacted yet · passed 70% of the way` in words a person reads.
fn compactions(s: &SessionStatus) -> String {
    let times = s.epoch.saturating_sub(1);
    let head = match times {
        0 => "not compacted yet".to_owned(),
        1 => "compacted once".to_owned(),
        n => format!("compacted {n} times"),
    };
    if s.fired.is_empty() {
        return head;
    }
    let mut levels: Vec<f64> = s.fired.clone();
    levels.sort_by(f64::total_cmp);
    let levels: Vec<String> = levels.iter().map(|l| percent(*l)).collect();
    let since = if times == 0 { "" } else { " since then" };
    format!("{head} · passed {} of the way{since}", levels.join(", "))
}

/// `5m ago (before /compact)`; the detail (a file, a commit, what went
/// wrong) when it failed or `detail` asks for it.
fn mark(m: Option<&Mark>, now: u64, detail: bool) -> String {
    match m {
        None => "never".into(),
        Some(m) => {
            let status = if m.ok { "" } else { ", FAILED" };
            let detail = m
                .detail
                .as_deref()
                .filter(|_| detail || !m.ok)
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let skipped = m
                .skipped
                .as_deref()
                .map(|s| format!("; {s}"))
                .unwrap_or_default();
            format!(
                "{} ({}{status}{detail}{skipped})",
                ago_at(m.at_ms, now),
                trigger_words(&m.what)
            )
        }
    }
}

/// What caused a save, in words: `threshold 0.80` → `at 80% of the way`.
/// Unknown causes are shown as they are.
pub fn trigger_words(what: &str) -> String {
    if let Some(level) = what
        .strip_prefix("threshold ")
        .and_then(|l| l.parse::<f64>().ok())
    {
        return format!("at {} of the way to compaction", percent(level));
    }
    match what {
        "manual" => "with hookctl save".to_owned(),
        "pre-compact auto" => "before automatic compaction".to_owned(),
        "pre-compact manual" => "before /compact".to_owned(),
        "unannounced compaction" => "after a compaction no hook announced".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use protocol::pressure::Advice;
    use protocol::wire::{ContextPoint, DaemonInfo, PointMark, ResumeFollowed};

    /// 2026-11-21T20:00:00Z: every time in the report is relative to it.
    pub(crate) const NOW: u64 = 1_795_291_200_000;

    pub(crate) fn report(sessions: Vec<SessionStatus>) -> StatusReport {
        StatusReport {
            daemon: DaemonInfo {
                version: "0.1.0".into(),
                protocol: 1,
                pid: 4242,
                started_at_ms: NOW - 3_723_000,
                uptime_secs: 3_723,
                socket: "/run/user/1000/hookd/hookd.sock".into(),
                state_dir: "/home/dev/.local/state/hookd".into(),
                log_dir: None,
                events_handled: 318,
                warnings: Vec::new(),
            },
            sessions,
            sync: None,
        }
    }

    fn context(tokens: u64) -> ContextStatus {
        let pressure = tokens as f64 / 167_000.0;
        ContextStatus {
            tokens_used: tokens,
            tokens_max: 167_000,
            window_tokens: 200_000,
            pressure,
            window_fraction: tokens as f64 / 200_000.0,
            basis: "200000 window − 20000 output reserve − 13000 buffer".into(),
            source: "reply".into(),
            advice: Advice::for_pressure(pressure),
            updated_at_ms: NOW - 5_000,
            invalid: None,
            point_unknown: false,
        }
    }

    /// A session that climbed, saved with a checkpoint at 95%, compacted,
    /// and is climbing again.
    pub(crate) fn session() -> SessionStatus {
        let climb = [
            (20_000, None),
            (45_000, None),
            (80_000, None),
            (118_000, None),
            (135_000, Some(PointMark::Save)),
            (152_000, None),
            (160_000, Some(PointMark::Checkpoint)),
            (3_000, Some(PointMark::Compaction)),
            (31_000, None),
            (64_000, None),
            (98_000, None),
            (120_240, None),
        ];
        let history = climb
            .iter()
            .enumerate()
            .map(|(i, (tokens, mark))| ContextPoint {
                at_ms: NOW - 60_000 * (climb.len() - i) as u64,
                tokens: *tokens,
                mark: *mark,
            })
            .collect();
        SessionStatus {
            harness: "claude-code".into(),
            session_id: "4d7453d0-1db5-4325-aa8c-30d671da3857".into(),
            project_dir: Some("/home/dev/proj".into()),
            transcript_path: Some(
                "/home/dev/.claude/projects/-home-dev-proj/4d7453d0.jsonl".into(),
            ),
            last_event: Some("post-tool-use".into()),
            last_event_at_ms: NOW - 5_000,
            events_seen: 87,
            ended: false,
            model: Some("claude-sonnet-4-5-20250929".into()),
            context: Some(context(120_240)),
            epoch: 2,
            fired: vec![0.7],
            last_save: Some(Mark {
                at_ms: NOW - 300_000,
                what: "pre-compact auto".into(),
                ok: true,
                detail: Some("/home/dev/proj/.workflow/context_state.json".into()),
                skipped: None,
            }),
            last_checkpoint: Some(Mark {
                at_ms: NOW - 360_000,
                what: "threshold 0.95".into(),
                ok: true,
                detail: Some("3f2a9c1e".into()),
                skipped: None,
            }),
            resume: None,
            notes: Vec::new(),
            history,
            resumes_followed: Vec::new(),
        }
    }

    #[test]
    fn a_save_says_what_it_left_out_and_a_failure_says_why_first() {
        let save = |ok, detail: &str, skipped: Option<&str>| Mark {
            at_ms: NOW - 1_000,
            what: "threshold 0.95".into(),
            ok,
            detail: Some(detail.into()),
            skipped: skipped.map(Into::into),
        };
        let at_95 = save(
            true,
            "/p/.workflow/context_state.json",
            Some("files to reload left out: 2,000 of 167,000 tokens free: no room to reload files"),
        );
        assert_eq!(
            mark(Some(&at_95), NOW, false),
            "1s ago (at 95% of the way to compaction; files to reload left out: 2,000 of 167,000 tokens free: \
             no room to reload files)"
        );
        let failed = save(
            false,
            "cannot write .workflow/context_state.json: disk full",
            None,
        );
        assert_eq!(
            mark(Some(&failed), NOW, false),
            "1s ago (at 95% of the way to compaction, FAILED: cannot write .workflow/context_state.json: disk full)"
        );
    }

    #[test]
    fn each_compaction_says_whether_its_resume_prompt_was_followed() {
        let followed = |epoch, followed, detail: Option<&str>| ResumeFollowed {
            epoch,
            followed,
            detail: detail.map(str::to_owned),
        };
        let s = SessionStatus {
            resumes_followed: vec![
                followed(
                    2,
                    Some(true),
                    Some("Read notes/jwt.md (named notes/jwt.md)"),
                ),
                followed(3, Some(false), Some("Bash ls /tmp")),
                followed(4, None, None),
            ],
            ..session()
        };
        let text = render(&report(vec![s]), Detail::Plain, NOW);
        for line in [
            "    after compaction 1: resumed and followed (Read notes/jwt.md (named notes/jwt.md))",
            "    after compaction 2: resumed, went elsewhere (Bash ls /tmp)",
            "    after compaction 3: resumed, not yet decided",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
    }

    #[test]
    fn status_with_a_session() {
        let report = report(vec![session()]);
        insta::assert_snapshot!("status_plain", render(&report, Detail::Plain, NOW));
        insta::assert_snapshot!("status_verbose", render(&report, Detail::Verbose, NOW));
    }

    #[test]
    fn status_before_the_first_session_and_reply() {
        insta::assert_snapshot!(
            "status_empty",
            render(&report(Vec::new()), Detail::Plain, NOW)
        );
        let fresh = SessionStatus {
            context: None,
            epoch: 1,
            fired: Vec::new(),
            last_save: None,
            last_checkpoint: None,
            history: Vec::new(),
            ..session()
        };
        let text = render(&report(vec![fresh]), Detail::Plain, NOW);
        insta::assert_snapshot!("status_first_reply_pending", text);
    }

    #[test]
    fn the_plain_status_names_no_internal_figure() {
        let plain = render(&report(vec![session()]), Detail::Plain, NOW);
        let verbose = render(&report(vec![session()]), Detail::Verbose, NOW);
        for jargon in [
            "prefetch",
            "trust",
            "stuff",
            "hybrid",
            "selective",
            "epoch",
            "fired",
            "Ω",
        ] {
            let text = format!("{plain}{verbose}");
            assert!(!text.contains(jargon), "{jargon}: {text}");
        }
        assert_eq!(
            trigger_words("threshold 0.80"),
            "at 80% of the way to compaction"
        );
        assert_eq!(trigger_words("something new"), "something new");
    }
}
