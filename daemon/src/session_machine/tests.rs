use super::*;
use crate::harness::{Boundary, Cursor, EventName, EventParts, Method, Reading, Usage};
use crate::sessions::SessionKey;
use protocol::wire::Harness;
use std::collections::BTreeMap;

/// A resume prompt waiting for its arrival check, no hook checking it.
fn pending_prompt(
    marker: &str,
    prompt: &str,
    injected_at_ms: u64,
    reinjected: bool,
) -> PendingResume {
    PendingResume {
        marker: marker.into(),
        prompt: prompt.into(),
        injected_at_ms,
        reinjected,
        checking_since_ms: None,
    }
}

/// Claude Code's compaction point for a 200k model: 200k − 20k − 13k.
const POINT: u64 = 167_000;

fn session(harness: Harness) -> Session {
    let mut s = Session::new(
        SessionKey {
            harness,
            id: "s".into(),
        },
        0,
    );
    s.project_dir = Some("/p".into());
    s.model = Some(match harness {
        Harness::GeminiCli => "gemini-2.5-flash".into(),
        _ => "claude-sonnet-4-5".into(),
    });
    s
}

fn event(harness: Harness, name: EventName) -> HookEvent {
    hook(harness, Event::from_parts(name, EventParts::default()))
}

fn hook(harness: Harness, event: Event) -> HookEvent {
    HookEvent {
        harness,
        event,
        session_id: Some("s".into()),
        transcript_path: None,
        project_dir: Some("/p".into()),
        working_dir: Some("/p".into()),
        cwd: None,
        model: None,
        agent_id: None,
        claude_code_knobs: None,
        reported_context: None,
        env: BTreeMap::new(),
        problems: Vec::new(),
    }
}

fn with(mut e: HookEvent, f: impl FnOnce(&mut HookEvent)) -> HookEvent {
    f(&mut e);
    e
}

/// A reading whose figure is `tokens`, the file grown to `offset`.
fn reading(
    tokens: u64,
    offset: u64,
    boundaries: Vec<Boundary>,
) -> Option<Result<SessionReading, String>> {
    Some(Ok(SessionReading {
        reading: Reading {
            usage: Some(Usage {
                tokens,
                model: None,
                from_boundary: false,
                message_id: Some(format!("m{offset}")),
                invalid: None,
            }),
            boundaries,
            cursor: Cursor {
                offset,
                dev: 1,
                ino: 1,
            },
            method: Method::Forward,
            bytes_read: 0,
        },
        window: None,
        compaction_point: None,
    }))
}

fn at(percent: u64) -> u64 {
    POINT * percent / 100
}

/// OpenCode's point comes from the model's limits its plugin logs: without
/// them no level fires. The same point as Claude Code's here.
fn opencode_point(harness: Harness) -> Option<crate::harness::HarnessPoint> {
    (harness == Harness::OpenCode).then(|| crate::harness::HarnessPoint {
        tokens: Some(POINT),
        fraction: Some(0.9),
        basis: "the model's limits".into(),
    })
}

fn levels(effects: &[Effect]) -> Vec<f64> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Record(LogEvent::Threshold { level, .. }) => Some(*level),
            _ => None,
        })
        .collect()
}

fn saves(effects: &[Effect]) -> Vec<(SaveReason, bool, bool)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Save {
                reason,
                checkpoint,
                first,
            } => Some((reason.clone(), *checkpoint, *first)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hook_names_the_sessions_file_and_whether_it_ended() {
    let mut s = session(Harness::ClaudeCode);
    s.transcript_path = Some("/t1.jsonl".into());
    s.cursor = Some(Cursor {
        offset: 10,
        dev: 1,
        ino: 1,
    });
    let tool = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
        e.transcript_path = Some("/t1.jsonl".into());
        e.working_dir = Some("/p/sub".into());
    });
    observe(&mut s, &tool, None, 5);
    assert!(s.cursor.is_some(), "the same file reads on");
    assert_eq!((s.events_seen, s.last_event_at_ms), (1, 5));
    assert_eq!(s.last_event, "post-tool-use");
    assert_eq!(s.working_dir.as_deref(), Some(Path::new("/p/sub")));
    let end = with(event(Harness::ClaudeCode, EventName::SessionEnd), |e| {
        e.transcript_path = Some("/t2.jsonl".into());
    });
    observe(&mut s, &end, None, 6);
    assert!(s.ended);
    assert_eq!(s.cursor, None, "another file is read from its start");
    observe(&mut s, &tool, None, 7);
    assert!(!s.ended, "a hook after SessionEnd is a session going on");
}

#[test]
fn each_level_fires_once_per_epoch_and_a_drop_rearms_them() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    let mut offset = 0;
    let mut step = |s: &mut Session, percent| {
        offset += 100;
        on_hook(
            s,
            &tool,
            reading(at(percent), offset, vec![]),
            &config,
            offset,
        )
    };
    assert!(levels(&step(&mut s, 60)).is_empty());
    let e = step(&mut s, 72);
    assert_eq!(levels(&e), [0.7]);
    assert!(e.iter().any(|e| matches!(
        e,
        Effect::Say {
            person: Some(_),
            model: Some(_)
        }
    )));
    assert!(saves(&e).is_empty(), "70% only says so");
    assert!(levels(&step(&mut s, 75)).is_empty(), "once per epoch");
    let e = step(&mut s, 85);
    assert_eq!(levels(&e), [0.8]);
    assert_eq!(saves(&e), [(SaveReason::Threshold(0.8), false, false)]);
    // Two levels at once: the higher one speaks, both count as fired.
    let e = step(&mut s, 96);
    assert_eq!(levels(&e), [0.95]);
    assert_eq!(saves(&e), [(SaveReason::Threshold(0.95), true, false)]);
    assert_eq!(s.fired, [0.7, 0.8, 0.9, 0.95]);
    // A drop of 30 points starts a new epoch: the levels fire again.
    let e = step(&mut s, 20);
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Record(LogEvent::Epoch { .. })))
    );
    assert_eq!(s.epoch, 2);
    assert_eq!(levels(&step(&mut s, 72)), [0.7]);
}

fn words(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Say { model, .. } => model.clone(),
            _ => None,
        })
        .collect()
}

#[test]
fn a_level_the_watcher_sees_fires_at_once_and_is_said_by_the_next_hook_that_reaches_the_model() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let taken = reading(at(85), 100, vec![]).unwrap();
    // Between hooks: the level fires and its save starts, nothing is said yet.
    let e = on_file_change(&mut s, taken, &config, 1);
    assert_eq!(levels(&e), [0.8]);
    assert_eq!(saves(&e), [(SaveReason::Threshold(0.8), false, false)]);
    assert!(words(&e).is_empty());
    assert_eq!(s.unsaid.len(), 1);
    // Stop cannot reach Claude Code's model, nor can a subagent's hook.
    let stop = event(Harness::ClaudeCode, EventName::Stop);
    assert!(words(&on_hook(&mut s, &stop, None, &config, 2)).is_empty());
    let sub = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
        e.agent_id = Some("a1".into())
    });
    assert!(words(&on_hook(&mut s, &sub, None, &config, 3)).is_empty());
    // The next hook that can says it, once; the level does not fire again.
    let prompt = event(Harness::ClaudeCode, EventName::UserPromptSubmit);
    let e = on_hook(&mut s, &prompt, None, &config, 4);
    assert_eq!(words(&e).len(), 1);
    assert!(words(&e)[0].contains("80%"), "{e:?}");
    assert!(levels(&e).is_empty() && saves(&e).is_empty());
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    assert!(words(&on_hook(&mut s, &tool, None, &config, 5)).is_empty());
    assert!(s.unsaid.is_empty());
}

#[test]
fn words_the_watcher_kept_are_dropped_by_a_compaction() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let taken = reading(at(92), 100, vec![]).unwrap();
    on_file_change(&mut s, taken, &config, 1);
    assert_eq!(s.unsaid.len(), 1);
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    let e = on_hook(&mut s, &start, None, &config, 2);
    assert!(
        !words(&e).iter().any(|w| w.contains("90%")),
        "stale words after a compaction: {e:?}"
    );
    assert!(s.unsaid.is_empty());
}

#[test]
fn words_the_watcher_kept_wait_past_a_new_runs_session_start_and_die_with_its_compaction() {
    let config = Config::default();
    // Cursor's figure comes from no file the watcher reads.
    for harness in Harness::ALL.into_iter().filter(|h| *h != Harness::Cursor) {
        let start = |source: &str| {
            hook(
                harness,
                Event::SessionStart {
                    source: Some(source.into()),
                },
            )
        };
        // The last reply of a run crossed a level: its words wait.
        let mut s = session(harness);
        s.reported_window = Some(190_000).filter(|_| harness == Harness::Codex);
        s.harness_point = opencode_point(harness);
        let high = if harness == Harness::GeminiCli {
            450_000
        } else {
            at(75)
        };
        on_file_change(&mut s, reading(high, 100, vec![]).unwrap(), &config, 1);
        assert_eq!(s.unsaid.len(), 1, "{harness}");
        // The next run starts: SessionStart keeps them.
        let e = on_hook(&mut s, &start("resume"), None, &config, 2);
        assert!(words(&e).is_empty(), "{harness}: {e:?}");
        assert_eq!(s.unsaid.len(), 1, "{harness}");
        // That run is `/compact`: the compaction drops them.
        let pre = hook(
            harness,
            Event::PreCompact {
                trigger: Some("manual".into()),
                instructions: None,
            },
        );
        on_hook(&mut s, &pre, None, &config, 3);
        let e = on_hook(&mut s, &start("compact"), None, &config, 4);
        let e = [
            e,
            on_hook(
                &mut s,
                &event(harness, EventName::PostCompact),
                None,
                &config,
                5,
            ),
        ]
        .concat();
        assert!(words(&e).is_empty(), "{harness}: stale words: {e:?}");
        assert!(s.unsaid.is_empty(), "{harness}");
        // A run that does not compact: its first prompt says them.
        let mut s = session(harness);
        s.reported_window = Some(190_000).filter(|_| harness == Harness::Codex);
        s.harness_point = opencode_point(harness);
        on_file_change(&mut s, reading(high, 100, vec![]).unwrap(), &config, 1);
        on_hook(&mut s, &start("resume"), None, &config, 2);
        let prompt = event(harness, EventName::UserPromptSubmit);
        let e = on_hook(&mut s, &prompt, None, &config, 3);
        assert_eq!(words(&e).len(), 1, "{harness}: {e:?}");
    }
}

#[test]
fn the_watcher_fires_nothing_from_a_figure_older_than_the_compaction_under_way() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    on_hook(&mut s, &start, None, &config, 1);
    assert_eq!(s.epoch, 2);
    // The reply before the compaction, written late, then the boundary.
    let late = reading(at(99), 100, vec![]).unwrap();
    let e = on_file_change(&mut s, late, &config, 2);
    assert!(levels(&e).is_empty() && s.unsaid.is_empty(), "{e:?}");
    let boundary = Boundary {
        uuid: Some("b1".into()),
        trigger: Some("auto".into()),
        pre_tokens: Some(at(99)),
        post_tokens: Some(3_000),
        timestamp: None,
    };
    let after = reading(3_000, 200, vec![boundary]).unwrap();
    on_file_change(&mut s, after, &config, 3);
    assert_eq!(s.epoch, 2, "the boundary names the epoch the hook opened");
    // From the boundary on, the levels count again.
    let e = on_file_change(&mut s, reading(at(85), 300, vec![]).unwrap(), &config, 4);
    assert_eq!(levels(&e), [0.8]);
}

#[test]
fn only_a_hook_starts_an_epoch_on_a_drop() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    on_file_change(&mut s, reading(at(85), 100, vec![]).unwrap(), &config, 1);
    // A compaction's low figure, before anything names the compaction.
    on_file_change(&mut s, reading(at(20), 200, vec![]).unwrap(), &config, 2);
    assert_eq!(s.epoch, 1);
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    on_hook(&mut s, &tool, None, &config, 3);
    assert_eq!(s.epoch, 2, "the next hook sees the drop");
}

#[test]
fn a_compaction_recorded_after_its_drop_is_one_epoch_and_resumes() {
    let config = Config::default();
    let mut s = session(Harness::CopilotCli);
    s.harness_point = Some(crate::harness::HarnessPoint {
        tokens: Some(POINT),
        fraction: Some(0.8),
        basis: "the prompt limit".into(),
    });
    let tool = event(Harness::CopilotCli, EventName::PostToolUse);
    on_hook(&mut s, &tool, reading(at(85), 100, vec![]), &config, 1);
    // The small figure is in the file before the compaction's record.
    let e = on_hook(&mut s, &tool, reading(at(20), 200, vec![]), &config, 2);
    assert_eq!(s.epoch, 2);
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Record(LogEvent::Epoch { .. })))
    );
    s.resume_due = false;
    let boundary = Boundary {
        uuid: Some("c1".into()),
        ..Boundary::default()
    };
    let e = on_hook(
        &mut s,
        &tool,
        reading(at(20), 300, vec![boundary]),
        &config,
        3,
    );
    assert_eq!(s.epoch, 2, "the drop and the record are one compaction");
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Record(LogEvent::Compaction(_)))),
        "{e:?}"
    );
    assert!(
        s.resume_due || e.iter().any(|e| matches!(e, Effect::Resume { .. })),
        "{e:?}"
    );
    // A later compaction is one of its own.
    let later = Boundary {
        uuid: Some("c2".into()),
        ..Boundary::default()
    };
    on_hook(&mut s, &tool, reading(at(20), 400, vec![later]), &config, 4);
    assert_eq!(s.epoch, 3);
}

#[test]
fn the_watcher_fires_nothing_when_no_hook_checks() {
    let mut config = Config::default();
    config.monitor.check_on.clear();
    let mut s = session(Harness::ClaudeCode);
    let taken = reading(at(96), 100, vec![]).unwrap();
    let e = on_file_change(&mut s, taken, &config, 1);
    assert!(levels(&e).is_empty() && saves(&e).is_empty());
    assert!(s.unsaid.is_empty());
}

#[test]
fn a_subagent_fires_nothing_an_unchecked_event_keeps_the_words_and_an_invalid_figure_is_ignored() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let sub = with(event(Harness::ClaudeCode, EventName::PostToolUse), |e| {
        e.agent_id = Some("a1".into())
    });
    let e = on_hook(&mut s, &sub, reading(at(99), 10, vec![]), &config, 1);
    assert!(levels(&e).is_empty() && saves(&e).is_empty());
    // Stop does not say the levels, but what it read fires them: the
    // save now, the words at the next hook that reaches the model.
    let stop = event(Harness::ClaudeCode, EventName::Stop);
    let e = on_hook(&mut s, &stop, reading(at(99), 20, vec![]), &config, 2);
    assert_eq!(levels(&e), [0.95]);
    assert_eq!(saves(&e), [(SaveReason::Threshold(0.95), true, false)]);
    assert!(words(&e).is_empty());
    assert_eq!(s.unsaid.len(), 1);
    s.usage.as_mut().unwrap().invalid = Some("input_tokens is a string".into());
    s.fired.clear();
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    assert!(levels(&on_hook(&mut s, &tool, None, &config, 3)).is_empty());
}

#[test]
fn the_compaction_summary_is_taken_from_claude_codes_summarizer_and_post_compact() {
    let config = Config::default();
    let summaries = |harness: Harness, kind: EventName, f: &dyn Fn(&mut HookEvent)| {
        let mut s = session(harness);
        let mut e = event(harness, kind);
        f(&mut e);
        on_hook(&mut s, &e, None, &config, 1)
            .into_iter()
            .filter_map(|e| match e {
                Effect::TakeSummary { summary, from } => Some((summary, from)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let summarizer = |e: &mut HookEvent| {
        e.agent_id = Some("a1".into());
        e.event = Event::SubagentStop {
            agent_type: Some(String::new()),
            last_message: Some("the summary".into()),
        };
    };
    assert_eq!(
        summaries(Harness::ClaudeCode, EventName::SubagentStop, &summarizer),
        [("the summary".to_owned(), "subagent-stop")]
    );
    let own_subagent = |e: &mut HookEvent| {
        summarizer(e);
        e.event = Event::SubagentStop {
            agent_type: Some("general-purpose".into()),
            last_message: Some("the summary".into()),
        };
    };
    assert!(summaries(Harness::ClaudeCode, EventName::SubagentStop, &own_subagent).is_empty());
    let post = |e: &mut HookEvent| {
        e.event = Event::PostCompact {
            trigger: None,
            summary: Some("the summary".into()),
        }
    };
    assert_eq!(
        summaries(Harness::ClaudeCode, EventName::PostCompact, &post),
        [("the summary".to_owned(), "post-compact")]
    );
    assert!(summaries(Harness::Codex, EventName::SubagentStop, &summarizer).is_empty());
}

#[test]
fn the_records_hint_goes_to_the_model_at_startup_unless_turned_off() {
    let mut config = Config::default();
    let hint = |config: &Config, source: &str| {
        let mut s = session(Harness::ClaudeCode);
        let e = hook(
            Harness::ClaudeCode,
            Event::SessionStart {
                source: Some(source.into()),
            },
        );
        on_hook(&mut s, &e, None, config, 1).contains(&Effect::Say {
            person: None,
            model: Some(RECORDS_HINT.into()),
        })
    };
    assert!(hint(&config, "startup"));
    assert!(!hint(&config, "compact"));
    config.resume.records_hint = false;
    assert!(!hint(&config, "startup"));
}

#[test]
fn an_announced_compaction_saves_before_pre_compact_answers_and_resumes_at_session_start() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let pre = hook(
        Harness::ClaudeCode,
        Event::PreCompact {
            trigger: Some("auto".into()),
            instructions: None,
        },
    );
    let e = on_hook(&mut s, &pre, reading(at(90), 10, vec![]), &config, 1_000);
    assert_eq!(
        saves(&e),
        [(SaveReason::PreCompact("auto".into()), true, true)]
    );
    assert_eq!(s.compaction_announced_ms, Some(1_000));
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    let e = on_hook(&mut s, &start, None, &config, 2_000);
    assert_eq!(s.epoch, 2);
    assert!(saves(&e).is_empty(), "announced: no second capture");
    assert!(e.contains(&Effect::Resume {
        source: "compact".into()
    }));
    // The boundary the transcript writes afterwards names the same compaction.
    let boundary = Boundary {
        uuid: Some("b1".into()),
        trigger: Some("auto".into()),
        pre_tokens: Some(at(90)),
        post_tokens: Some(9_000),
        timestamp: None,
    };
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    let e = on_hook(
        &mut s,
        &tool,
        reading(9_000, 20, vec![boundary]),
        &config,
        3_000,
    );
    assert_eq!(s.epoch, 2, "one compaction, one epoch");
    assert!(saves(&e).is_empty());
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Record(LogEvent::ContextTransition(_))))
    );
}

/// A second compaction soon after the first (a `/compact` right after
/// an automatic one) is a compaction of its own: its PreCompact
/// announced it, so its hooks open the next epoch.
#[test]
fn two_announced_compactions_in_quick_succession_are_two_epochs() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    let pre = hook(
        Harness::ClaudeCode,
        Event::PreCompact {
            trigger: Some("manual".into()),
            instructions: None,
        },
    );
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    let post = hook(
        Harness::ClaudeCode,
        Event::PostCompact {
            trigger: Some("manual".into()),
            summary: None,
        },
    );
    for (n, at) in [(2, 1_000), (3, 11_000)] {
        on_hook(&mut s, &pre, None, &config, at);
        on_hook(&mut s, &start, None, &config, at + 1_000);
        on_hook(&mut s, &post, None, &config, at + 2_000);
        assert_eq!(s.epoch, n, "one epoch per compaction");
    }
}

#[test]
fn an_unannounced_compaction_is_found_by_each_signal() {
    let config = Config::default();
    let boundary = Boundary {
        uuid: Some("b1".into()),
        trigger: Some("auto".into()),
        pre_tokens: Some(150_000),
        post_tokens: Some(9_000),
        timestamp: None,
    };
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    let post = hook(
        Harness::ClaudeCode,
        Event::PostCompact {
            trigger: Some("manual".into()),
            summary: Some("the summary".into()),
        },
    );
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    for (signal, hook, seen) in [
        (
            "transcript boundary",
            &tool,
            reading(9_000, 10, vec![boundary]),
        ),
        ("PostCompact", &post, None),
        ("SessionStart(compact)", &start, None),
    ] {
        let mut s = session(Harness::ClaudeCode);
        let e = on_hook(&mut s, hook, seen, &config, 1_000);
        assert_eq!(s.epoch, 2, "{signal}");
        let compaction = e
            .iter()
            .find_map(|e| match e {
                Effect::Record(LogEvent::Compaction(c)) => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{signal}: no compaction recorded"));
        let announced = match compaction {
            Compaction::InFile(c) => c.announced,
            Compaction::ByHook(c) => c.announced,
        };
        assert!(!announced, "{signal}");
        let first = hook.name() == EventName::SessionStart;
        assert_eq!(
            saves(&e),
            [(SaveReason::UnannouncedCompaction, true, first)],
            "{signal}: captured after the fact, before a resume when one follows"
        );
    }
}

#[test]
fn gemini_pre_compress_counts_only_near_the_point_and_resumes_at_the_next_turn() {
    let config = Config::default();
    let mut s = session(Harness::GeminiCli);
    let pre = event(Harness::GeminiCli, EventName::PreCompact);
    // Half of the 1,048,576-token window is Gemini CLI's compression point.
    let e = on_hook(&mut s, &pre, reading(5_000, 10, vec![]), &config, 1);
    assert!(
        saves(&e).is_empty(),
        "far from the point: a lookup, no pipeline"
    );
    let e = on_hook(&mut s, &pre, reading(600_000, 20, vec![]), &config, 2);
    assert_eq!(saves(&e).len(), 1);
    // The next reply's input fell: the compression is confirmed.
    let boundary = Boundary {
        uuid: Some("r3".into()),
        trigger: Some("auto".into()),
        pre_tokens: Some(600_000),
        post_tokens: Some(2_100),
        timestamp: None,
    };
    let stop = event(Harness::GeminiCli, EventName::Stop);
    let e = on_hook(
        &mut s,
        &stop,
        reading(2_100, 30, vec![boundary]),
        &config,
        3,
    );
    assert!(s.resume_due);
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Resume { .. })),
        "no turn yet"
    );
    s.resume_pending = Some(pending_prompt("[m]", "p", 0, false));
    let prompt = event(Harness::GeminiCli, EventName::UserPromptSubmit);
    let e = on_hook(&mut s, &prompt, None, &config, 4);
    assert!(e.contains(&Effect::Resume {
        source: "compact".into()
    }));
    assert!(
        !e.contains(&Effect::CheckArrival),
        "not on the hook that injects"
    );
    assert!(!s.resume_due, "once");
    let e = on_hook(&mut s, &prompt, None, &config, 5);
    assert!(!e.iter().any(|e| matches!(e, Effect::Resume { .. })));
    assert!(e.contains(&Effect::CheckArrival));
}

/// Past the point, PreCompress keeps firing before every model call while
/// Gemini CLI compresses nothing (it gave up after a failed attempt, or
/// the file still shows the figure from before the compression): one
/// pipeline for the epoch, a lookup for the rest, and the next epoch's
/// compression gets its own. `/compress` always saves.
/// A compaction's trigger goes with it: a later compaction no hook
/// announced is not taken for an automatic one (which would teach a
/// point where none is).
#[test]
fn a_compactions_trigger_is_not_inherited_by_the_next() {
    let mut s = session(Harness::Codex);
    s.announced_trigger = Some("auto".into());
    s.compaction_announced_ms = Some(1_000);
    let mut effects = Vec::new();
    assert!(!hook_epoch(
        &mut s,
        "post-compact",
        Some(&Trigger::Auto),
        2_000,
        &mut effects
    ));
    let record = |uuid: &str, pre| Boundary {
        uuid: Some(uuid.into()),
        trigger: None,
        pre_tokens: Some(pre),
        post_tokens: None,
        timestamp: None,
    };
    let Some(Ok(r1)) = reading(3_000, 10, vec![record("r1", 90_000)]) else {
        unreachable!()
    };
    s.take_reading(r1, 2_100);
    assert_eq!(s.auto_compacted_at, Some(90_000), "its record knows it");
    s.auto_compacted_at = None;
    let Some(Ok(r2)) = reading(2_000, 20, vec![record("r2", 30_000)]) else {
        unreachable!()
    };
    let began = s.take_reading(r2, 900_000).unwrap();
    assert_eq!(began.len(), 1);
    assert_eq!(began[0].0.trigger, None, "not announced, not known");
    assert_eq!(s.auto_compacted_at, None);
}

#[test]
fn gemini_pre_compress_saves_once_per_epoch_past_the_point() {
    let config = Config::default();
    let mut s = session(Harness::GeminiCli);
    let pre = hook(
        Harness::GeminiCli,
        Event::PreCompact {
            trigger: Some("auto".into()),
            instructions: None,
        },
    );
    let mut runs = Vec::new();
    for (n, tokens) in [600_000, 610_000, 620_000, 630_000].into_iter().enumerate() {
        let n = n as u64 + 1;
        let e = on_hook(&mut s, &pre, reading(tokens, n * 10, vec![]), &config, n);
        runs.push(
            saves(&e)
                .iter()
                .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
                .count(),
        );
    }
    assert_eq!(runs, [1, 0, 0, 0], "one pipeline for the epoch");
    // The compression shows: a new epoch, and past the point again, a new save.
    let boundary = Boundary {
        uuid: Some("r5".into()),
        trigger: Some("auto".into()),
        pre_tokens: Some(630_000),
        post_tokens: Some(2_100),
        timestamp: None,
    };
    let e = on_hook(&mut s, &pre, reading(2_100, 50, vec![boundary]), &config, 5);
    assert!(
        saves(&e)
            .iter()
            .all(|s| !matches!(s.0, SaveReason::PreCompact(_)))
    );
    let e = on_hook(&mut s, &pre, reading(700_000, 60, vec![]), &config, 6);
    assert_eq!(
        saves(&e)
            .iter()
            .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
            .count(),
        1,
        "the next compression's save"
    );
    let e = on_hook(&mut s, &pre, reading(710_000, 70, vec![]), &config, 7);
    assert!(
        saves(&e)
            .iter()
            .all(|s| !matches!(s.0, SaveReason::PreCompact(_)))
    );
    let manual = with(pre.clone(), |e| {
        e.event = Event::PreCompact {
            trigger: Some(Trigger::Manual),
            instructions: None,
        }
    });
    let e = on_hook(&mut s, &manual, reading(710_000, 70, vec![]), &config, 8);
    assert_eq!(
        saves(&e),
        [(SaveReason::PreCompact("manual".into()), true, true)],
        "/compress compresses: it saves"
    );
    // A compression too small to show as one, seen as a drop of usage:
    // a new epoch, so the next compression past the point saves again.
    let epoch = s.epoch;
    let tool = event(Harness::GeminiCli, EventName::PostToolUse);
    on_hook(&mut s, &tool, reading(712_000, 75, vec![]), &config, 9);
    on_hook(&mut s, &tool, reading(300_000, 80, vec![]), &config, 9);
    assert_eq!(s.epoch, epoch + 1, "the drop began an epoch");
    let e = on_hook(&mut s, &pre, reading(600_000, 90, vec![]), &config, 10);
    assert_eq!(
        saves(&e)
            .iter()
            .filter(|s| s.0 == SaveReason::PreCompact("auto".into()))
            .count(),
        1,
        "a save for the new epoch"
    );
    // Claude Code's PreCompact is always a compaction: each one saves.
    let mut s = session(Harness::ClaudeCode);
    let pre = hook(
        Harness::ClaudeCode,
        Event::PreCompact {
            trigger: Some("auto".into()),
            instructions: None,
        },
    );
    for n in 1..=2 {
        let e = on_hook(&mut s, &pre, reading(at(99), n * 10, vec![]), &config, n);
        assert_eq!(saves(&e).len(), 1, "PreCompact {n}");
    }
}

const MARKER: &str = "[hookd-resume 1]";

fn watch() -> FollowWatch {
    FollowWatch {
        epoch: 2,
        marker: MARKER.into(),
        from_offset: None,
        files: vec!["notes/jwt_design.md".into(), "src/auth/jwt.rs".into()],
        next_target: Some("src/auth/refresh.rs".into()),
        task_id: Some("2".into()),
        task_title: Some("Implement JWT signing".into()),
    }
}

fn call(tool: &str, target: &str) -> ToolCall {
    ToolCall {
        id: None,
        tool: tool.into(),
        target: Some(target.into()).filter(|t: &String| !t.is_empty()),
        outcome: None,
    }
}

/// What the engine does with the calls read after `marker`: judged once
/// the prompt arrived, the line written only for a verdict taken.
fn on_follow_reading(s: &mut Session, marker: &str, calls: Option<Vec<ToolCall>>) -> Vec<Effect> {
    if s.resume_pending.is_some() {
        return Vec::new();
    }
    let Some((verdict, record)) = s
        .follow_watch
        .as_ref()
        .and_then(|watch| follow_verdict(watch, s.project_dir.as_deref(), marker, calls))
    else {
        return Vec::new();
    };
    if on_followed(s, marker, verdict) {
        vec![Effect::Record(record)]
    } else {
        Vec::new()
    }
}

/// The verdict `calls` lead to: `Some(followed)` once decided.
fn verdict(calls: Option<Vec<ToolCall>>) -> (Option<bool>, Vec<Effect>) {
    let mut s = session(Harness::ClaudeCode);
    s.follow_watch = Some(watch());
    let e = on_follow_reading(&mut s, MARKER, calls);
    (s.followed.last().and_then(|f| f.followed), e)
}

#[test]
fn the_first_tool_calls_after_the_resume_prompt_decide_whether_it_was_followed() {
    let followed = [
        vec![call("Read", "/p/notes/jwt_design.md")],
        // From a directory under the project, or named from the root.
        vec![call("Read", "jwt.rs"), call("Edit", "auth/jwt.rs")],
        vec![call("Grep", "src/auth/jwt.rs")],
        vec![call("Bash", "cat notes/jwt_design.md | head")],
        vec![call("Write", "src/auth/refresh.rs")],
        vec![call("TaskUpdate", "2")],
        vec![call("TodoWrite", "Implement JWT signing")],
        // Any of the first calls will do.
        vec![call("Bash", "ls"), call("Read", "./src/auth/jwt.rs")],
    ];
    for calls in followed {
        let (v, e) = verdict(Some(calls.clone()));
        assert_eq!(v, Some(true), "{calls:?}");
        let Effect::Record(LogEvent::ResumeFollowed {
            epoch,
            followed,
            matched,
            ..
        }) = &e[0]
        else {
            panic!("{e:?}")
        };
        assert_eq!((*epoch, *followed), (2, true));
        assert!(matched.is_some(), "{e:?}");
    }
    let elsewhere = [
        vec![call("Bash", "ls -la /tmp")],
        // A command naming another file that ends like a watched one.
        vec![call("Bash", "cat notes/jwt_design.md.bak")],
        vec![
            call("Read", "/p/src/other.rs"),
            call("Read", "/q/notes/jwt_design.md"),
        ],
        vec![call("TaskUpdate", "3")],
        vec![call("WebSearch", "")],
    ];
    for calls in elsewhere {
        let (v, e) = verdict(Some(calls.clone()));
        assert_eq!(v, Some(false), "{calls:?}");
        let Effect::Record(LogEvent::ResumeFollowed { first_call, .. }) = &e[0] else {
            panic!("{e:?}")
        };
        assert_eq!(first_call.tool, calls[0].tool);
    }
    // No tool call yet (a text-only answer), or the marker not found: undecided.
    for calls in [Some(Vec::new()), None] {
        let (v, e) = verdict(calls);
        assert_eq!(v, None);
        assert!(e.is_empty());
    }
}

/// What the engine does with an arrival check: the words and the line
/// from the pending prompt, then the verdict taken in.
fn arrive(s: &mut Session, found: bool, now: u64) -> Vec<Effect> {
    let Some(pending) = s.resume_pending.clone() else {
        return Vec::new();
    };
    let effects = arrival_effects(&pending, found, now);
    on_arrival(s, &pending.marker, found, now);
    effects
}

#[test]
fn the_verdict_waits_for_the_arrival_and_is_given_once_per_compaction() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    s.follow_watch = Some(watch());
    s.resume_pending = Some(pending_prompt(MARKER, "p", 0, false));
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    let e = on_hook(&mut s, &tool, None, &config, 1);
    assert!(e.contains(&Effect::CheckArrival) && e.contains(&Effect::CheckFollowed));
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("resume".into()),
        },
    );
    assert!(!on_hook(&mut s, &start, None, &config, 2).contains(&Effect::CheckFollowed));
    let calls = || Some(vec![call("Read", "notes/jwt_design.md")]);
    assert!(
        on_follow_reading(&mut s, MARKER, calls()).is_empty(),
        "not arrived yet"
    );
    arrive(&mut s, true, 3);
    assert!(
        on_follow_reading(&mut s, "[hookd-resume 0]", calls()).is_empty(),
        "calls read after another prompt's marker judge nothing"
    );
    assert_eq!(on_follow_reading(&mut s, MARKER, calls()).len(), 1);
    assert!(s.follow_watch.is_none());
    assert!(
        on_follow_reading(&mut s, MARKER, calls()).is_empty(),
        "once"
    );
    assert!(!on_hook(&mut s, &tool, None, &config, 4).contains(&Effect::CheckFollowed));
    let status = s.status(None);
    assert_eq!(status.resumes_followed.len(), 1);
    assert_eq!(status.resumes_followed[0].words(), "resumed and followed");
    // A prompt lost for good cannot be followed: nothing left to decide.
    s.follow_watch = Some(watch());
    s.resume_pending = Some(pending_prompt(MARKER, "p", 0, true));
    arrive(&mut s, false, 5);
    assert!(s.follow_watch.is_none());
}

#[test]
fn hooks_at_once_leave_the_arrival_check_and_the_verdict_to_one() {
    let config = Config::default();
    let mut s = session(Harness::ClaudeCode);
    s.follow_watch = Some(watch());
    s.resume_pending = Some(pending_prompt(MARKER, "p", 0, false));
    let tool = event(Harness::ClaudeCode, EventName::PostToolUse);
    assert!(on_hook(&mut s, &tool, None, &config, 1_000).contains(&Effect::CheckArrival));
    // A second hook while the first looks: it neither injects nor judges.
    assert!(!on_hook(&mut s, &tool, None, &config, 1_200).contains(&Effect::CheckArrival));
    // The first one's verdict frees it for the prompt injected again.
    on_arrival(&mut s, MARKER, false, 1_300);
    assert!(s.resume_pending.as_ref().unwrap().reinjected);
    assert!(on_hook(&mut s, &tool, None, &config, 1_400).contains(&Effect::CheckArrival));
    // A hook that took the check and never came back holds it no longer
    // than its claim.
    assert!(!on_hook(&mut s, &tool, None, &config, 5_000).contains(&Effect::CheckArrival));
    assert!(on_hook(&mut s, &tool, None, &config, 11_500).contains(&Effect::CheckArrival));
    // Two verdicts on one prompt: the session takes the first only.
    on_arrival(&mut s, MARKER, true, 11_600);
    let verdict = || ResumeFollowed {
        epoch: 1,
        followed: Some(true),
        detail: None,
    };
    assert!(on_followed(&mut s, MARKER, verdict()));
    assert!(!on_followed(&mut s, MARKER, verdict()));
    assert_eq!(s.followed.len(), 1);
}

#[test]
fn a_missing_resume_prompt_goes_in_once_more_then_counts_as_lost() {
    let mut s = session(Harness::ClaudeCode);
    let pending = pending_prompt("[hookd-resume 1]", "the prompt", 100, false);
    s.resume_pending = Some(pending.clone());
    let e = arrive(&mut s, true, 500);
    assert_eq!(s.resume.as_ref().unwrap().what, "arrived");
    assert!(s.resume_pending.is_none());
    assert!(!e.iter().any(|e| matches!(e, Effect::Say { .. })));

    s.resume_pending = Some(pending);
    let e = arrive(&mut s, false, 500);
    assert!(e.contains(&Effect::Say {
        person: None,
        model: Some("the prompt".into())
    }));
    assert!(s.resume_pending.as_ref().unwrap().reinjected);
    let e = arrive(&mut s, false, 900);
    assert!(!e.iter().any(|e| matches!(e, Effect::Say { .. })));
    assert!(s.resume_pending.is_none());
    assert!(!s.resume.as_ref().unwrap().ok);
    assert!(arrive(&mut s, false, 950).is_empty(), "nothing pending");
    // The verdict on one prompt leaves a prompt injected since alone.
    s.resume_pending = Some(pending_prompt("[hookd-resume 2]", "another", 900, false));
    on_arrival(&mut s, "[hookd-resume 1]", false, 1_000);
    assert_eq!(
        s.resume_pending.as_ref().map(|p| p.marker.as_str()),
        Some("[hookd-resume 2]")
    );
}

/// Qwen Code's SessionStart(compact) words are not kept where hookd can see
/// them arrive: its resume waits for the next prompt or tool batch.
#[test]
fn qwen_code_resumes_after_its_compaction_at_the_next_turn_not_at_session_start() {
    let config = Config::default();
    let mut s = session(Harness::QwenCode);
    let start = hook(
        Harness::QwenCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    let e = on_hook(&mut s, &start, None, &config, 1);
    assert!(!e.iter().any(|e| matches!(e, Effect::Resume { .. })));
    assert!(s.resume_due);
    let batch = hook(Harness::QwenCode, Event::ToolBatch);
    let e = on_hook(&mut s, &batch, None, &config, 2);
    assert!(e.contains(&Effect::Resume {
        source: "compact".into()
    }));
    assert!(!s.resume_due, "once");
    // Claude Code's own SessionStart(compact) still resumes there.
    let mut claude = session(Harness::ClaudeCode);
    let start = hook(
        Harness::ClaudeCode,
        Event::SessionStart {
            source: Some("compact".into()),
        },
    );
    let e = on_hook(&mut claude, &start, None, &config, 1);
    assert!(e.contains(&Effect::Resume {
        source: "compact".into()
    }));
}

/// Cursor shows its compaction by its preCompact alone: the epoch turns and
/// the state is saved there, once however often the hook arrives at once,
/// and the resume prompt goes with the next completed stop, not a tool call.
#[test]
fn cursor_counts_its_compaction_at_precompact_and_resumes_at_the_next_stop_once() {
    let config = Config::default();
    let mut s = session(Harness::Cursor);
    let pre = hook(
        Harness::Cursor,
        Event::PreCompact {
            trigger: Some(Trigger::Auto),
            instructions: None,
        },
    );
    let e = on_hook(&mut s, &pre, None, &config, 1_000);
    assert_eq!(
        saves(&e),
        vec![(SaveReason::PreCompact(Trigger::Auto), true, true)]
    );
    assert_eq!(s.epoch, 2);
    assert!(s.resume_due);
    assert!(!s.awaiting_boundary, "no record of it follows");
    // The same hook again (Cursor runs hookd's Claude Code hooks too).
    let e = on_hook(&mut s, &pre, None, &config, 1_500);
    assert!(saves(&e).is_empty(), "{e:?}");
    assert_eq!(s.epoch, 2);
    // A tool call after it cannot carry the prompt to the model.
    let tool = hook(Harness::Cursor, Event::PostToolUse { tool: None });
    let e = on_hook(&mut s, &tool, None, &config, 2_000);
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Resume { .. })),
        "{e:?}"
    );
    let stop = hook(Harness::Cursor, Event::Stop { last_message: None });
    let e = on_hook(&mut s, &stop, None, &config, 3_000);
    assert!(e.contains(&Effect::Resume {
        source: "compact".into()
    }));
    let e = on_hook(&mut s, &stop, None, &config, 4_000);
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Resume { .. })),
        "once"
    );
    // A later compaction is one of its own.
    let e = on_hook(&mut s, &pre, None, &config, 1_000 + 10 * 60_000);
    assert_eq!(saves(&e).len(), 1);
    assert_eq!(s.epoch, 3);
    // Claude Code's Stop never carries a resume prompt.
    let mut claude = session(Harness::ClaudeCode);
    claude.resume_due = true;
    let stop = hook(Harness::ClaudeCode, Event::Stop { last_message: None });
    let e = on_hook(&mut claude, &stop, None, &config, 1);
    assert!(!e.iter().any(|e| matches!(e, Effect::Resume { .. })));
}

/// preCompact's own figure is the session's, from the hook's fields.
#[test]
fn a_figure_the_hook_carries_becomes_the_sessions() {
    let mut s = session(Harness::Cursor);
    let pre = with(
        hook(
            Harness::Cursor,
            Event::PreCompact {
                trigger: Some(Trigger::Auto),
                instructions: None,
            },
        ),
        |e| {
            e.reported_context = Some(crate::harness::ReportedContext {
                tokens: Ok(150_000),
                window: Some(200_000),
            })
        },
    );
    observe(&mut s, &pre, None, 9);
    assert_eq!(s.usage.as_ref().map(|u| u.tokens), Some(150_000));
    assert_eq!(s.reported_window, Some(200_000));
    assert_eq!(
        (s.usage_source, s.usage_at_ms),
        (crate::sessions::UsageSource::PreCompactHook, 9)
    );
    let wrong = with(pre, |e| {
        e.reported_context = Some(crate::harness::ReportedContext {
            tokens: Err("too many".into()),
            window: None,
        })
    });
    observe(&mut s, &wrong, None, 10);
    let usage = s.usage.as_ref().unwrap();
    assert_eq!(usage.invalid.as_deref(), Some("too many"));
    assert_eq!(s.reported_window, Some(200_000), "kept when not named");
}

/// Once its compaction's save has the figure, Cursor's session shows none:
/// the figure was the context before that compaction. Other harnesses read
/// theirs again from their files.
#[test]
fn the_figure_before_cursors_compaction_is_let_go_once_saved() {
    let saved = || outcomes::Saved {
        what: "pre-compact auto".into(),
        ok: true,
        detail: None,
        skipped: None,
        checkpoint: None,
        compaction_token: Some(None),
    };
    for (harness, kept) in [(Harness::Cursor, false), (Harness::ClaudeCode, true)] {
        let mut s = session(harness);
        s.usage = Some(Usage {
            tokens: 150_000,
            model: None,
            from_boundary: false,
            message_id: None,
            invalid: None,
        });
        outcomes::on_saved(&mut s, saved(), 5);
        assert_eq!(s.usage.is_some(), kept, "{harness:?}");
    }
}
