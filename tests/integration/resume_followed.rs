//! What the model reads after a compaction, and whether it followed it:
//! words queued before a compaction never cross it, and the first tool
//! calls after the resume prompt are judged against what it asked for.

use hookd_tests::{Scenario, additional_context, wait_until};
use serde_json::Value;
use std::time::Duration;

/// Where Claude Code compacts a 200k window: 200,000 − 20,000 − 13,000.
const COMPACTS_AT: u64 = 167_000;

fn at(fraction: f64) -> u64 {
    (COMPACTS_AT as f64 * fraction) as u64
}

fn context(answer: &Value) -> String {
    if answer.is_null() {
        return String::new();
    }
    additional_context(answer)
}

/// A level crossed by a run's last reply is about that run: the next run's
/// SessionStart(resume) does not carry it, and when that run is `/compact`
/// the compaction drops it, so the model never reads it past the
/// compaction.
#[test]
fn a_level_crossed_on_a_runs_last_reply_never_reaches_the_model_after_the_next_runs_compact() {
    let mut s = Scenario::build()
        .setting("resume.records_hint", false)
        .start();
    assert_eq!(s.turn(at(0.50)), Value::Null);
    // The run's last reply lands after its last tool hook: the watcher fires 70%.
    s.transcript.reply(at(0.75));
    assert!(
        wait_until(Duration::from_secs(10), || s.events("threshold").len() == 1),
        "the watcher fired the level: {:?}",
        s.events("threshold")
    );
    s.hook("Stop", "stop");
    // `claude -p --resume <id> "/compact"`: SessionStart(resume), then the compaction.
    let resumed = s.hook("SessionStart(source=resume)", "session-start");
    assert!(
        !context(&resumed).contains("Context at 70%"),
        "SessionStart(resume) carried the last run's level, which outlives the compaction: {resumed}"
    );
    let start = s.compact(at(0.75), 4_000);
    let prompt = context(&start);
    assert!(prompt.contains("Context Recovery"), "{start}");
    assert!(!prompt.contains("Context at 70%"), "{prompt}");
    s.transcript.context_arrived("SessionStart", &prompt);
    let post = s.hook("PostCompact(trigger=manual)", "post-compact");
    assert!(!context(&post).contains("Context at 70%"), "{post}");
    // The first turn after the compaction hears nothing of the old level either.
    let out = s.turn(4_500);
    assert!(!context(&out).contains("Context at 70%"), "{out}");
    assert!(out["systemMessage"].is_null(), "{out}");
}
