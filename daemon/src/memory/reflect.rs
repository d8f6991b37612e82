//! Turning what a capture found into reflections, and what a closed task
//! taught into key learnings.
//!
//! Each capture's decisions and blockers are compared with what the task
//! already reflected (by a fingerprint of their text, kept in the record),
//! so a decision becomes a reflection once, and a blocker once per status:
//!
//! | captured | reflection |
//! |---|---|
//! | a decision | `strategy_change`: "topic: decision (because why)" |
//! | an open blocker naming a failure | `error_analysis` |
//! | any other open blocker | `constraint_discovery` |
//! | a blocker with a workaround | `strategy_change`: "workaround for …" |
//! | a resolved blocker | `success_pattern`: "resolved …" |
//! | an approach the summary says was rejected | `error_analysis`: "did not work: …" |
//!
//! Of the blockers a compaction summary gave, only resolved ones count: an
//! open one is the summarizer's reading of the moment, not yet a lesson.
//!
//! When a task closes, each reflection is judged by the outcome (again, if
//! the task closes again with another one):
//!
//! | outcome | helpful | unhelpful |
//! |---|---|---|
//! | success | all | none |
//! | partial, or unknown | success patterns, error analyses, constraints | none |
//! | failure | error analyses, constraints, success patterns | strategy changes |

use crate::state::{Blocker, Decision, Rejected, fingerprint};
use protocol::memory::{Effectiveness, Reflection, ReflectionType, TaskOutcome, TaskRecord};

/// Longest reflection kept, in characters.
pub const MAX_REFLECTION_CHARS: usize = 600;
/// Longest key learning, in characters.
const MAX_LEARNING_CHARS: usize = 240;

/// A reflection to add, and the fingerprint that keeps it from coming twice.
pub struct New {
    pub fingerprint: String,
    pub kind: ReflectionType,
    pub content: String,
    pub source: &'static str,
    /// Who said it: the decision's, blocker's or approach's own source.
    pub origin: String,
}

/// `text` trimmed and cut to `max` characters, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    protocol::text::clip(text.trim(), max)
}

/// The reflections a capture's decisions, blockers and approaches given up
/// on add to `task`.
pub fn from_capture(
    task: &TaskRecord,
    decisions: &[Decision],
    blockers: &[Blocker],
    rejected: &[Rejected],
) -> Vec<New> {
    candidates(decisions, blockers, rejected)
        .into_iter()
        .filter(|n| !task.reflected.contains(&n.fingerprint))
        .collect()
}

/// `format` of a text that is given and not blank, else nothing.
fn optional(text: Option<&str>, format: impl Fn(&str) -> String) -> String {
    text.map(str::trim)
        .filter(|t| !t.is_empty())
        .map(format)
        .unwrap_or_default()
}

/// Every reflection these decisions, blockers and approaches given up on
/// stand for, once each.
pub fn candidates(decisions: &[Decision], blockers: &[Blocker], rejected: &[Rejected]) -> Vec<New> {
    let mut out: Vec<New> = Vec::new();
    let mut push = |new: New| {
        if !out.iter().any(|n| n.fingerprint == new.fingerprint) {
            out.push(new);
        }
    };
    for d in decisions {
        if d.decision.trim().is_empty() {
            continue;
        }
        let why = optional(d.reasoning.as_deref(), |w| format!(" (because {w})"));
        let content = format!("{}: {}{why}", d.topic.trim(), d.decision.trim());
        push(New {
            fingerprint: fingerprint(&["decision", &d.topic, &d.decision]),
            kind: ReflectionType::StrategyChange,
            content: clip(&content, MAX_REFLECTION_CHARS),
            source: "decision",
            origin: d.source.clone(),
        });
    }
    for b in blockers {
        if b.issue.trim().is_empty() {
            continue;
        }
        let notes = optional(b.notes.as_deref(), |n| format!(": {n}"));
        let (kind, content) = match b.status.as_str() {
            "resolved" => (
                ReflectionType::SuccessPattern,
                format!("resolved {}{notes}", b.issue.trim()),
            ),
            "workaround" => (
                ReflectionType::StrategyChange,
                format!("workaround for {}{notes}", b.issue.trim()),
            ),
            _ => (
                super::classify::blocker_type(&b.issue),
                format!("blocked by {}{notes}", b.issue.trim()),
            ),
        };
        let status = match b.status.as_str() {
            "resolved" | "workaround" => b.status.as_str(),
            _ => "open",
        };
        push(New {
            fingerprint: fingerprint(&["blocker", &b.issue, status]),
            kind,
            content: clip(&content, MAX_REFLECTION_CHARS),
            source: "blocker",
            origin: b.source.clone(),
        });
    }
    for r in rejected.iter().filter(|r| !r.approach.trim().is_empty()) {
        let why = optional(r.why.as_deref(), |w| format!(" ({w})"));
        push(New {
            fingerprint: fingerprint(&["rejected", &r.approach]),
            kind: ReflectionType::ErrorAnalysis,
            content: clip(
                &format!("did not work: {}{why}", r.approach.trim()),
                MAX_REFLECTION_CHARS,
            ),
            source: "rejected",
            origin: r.source.clone(),
        });
    }
    out
}

/// What a closed task's outcome says of each kind of reflection.
fn judged(kind: ReflectionType, outcome: Option<TaskOutcome>) -> Effectiveness {
    use Effectiveness::*;
    use ReflectionType::*;
    match (outcome, kind) {
        (Some(TaskOutcome::Success), _) => Helpful,
        (Some(TaskOutcome::Failure), StrategyChange) => Unhelpful,
        (_, StrategyChange) => Neutral,
        _ => Helpful,
    }
}

/// Judges the reflections of a closing task and distils its key learnings.
pub fn close(task: &mut TaskRecord, max_learnings: usize) {
    let outcome = task.outcome;
    for r in &mut task.reflections {
        r.effectiveness = judged(r.kind, outcome);
    }
    task.key_learnings = learnings(&task.reflections, max_learnings);
}

/// Key learnings: what worked, then what to watch for, then what did not
/// work; newest first within each, without repeats.
pub fn learnings(reflections: &[Reflection], max: usize) -> Vec<String> {
    let order = [
        (
            ReflectionType::SuccessPattern,
            Effectiveness::Helpful,
            "Worked",
        ),
        (
            ReflectionType::StrategyChange,
            Effectiveness::Helpful,
            "Worked",
        ),
        (
            ReflectionType::ErrorAnalysis,
            Effectiveness::Helpful,
            "Watch for",
        ),
        (
            ReflectionType::ConstraintDiscovery,
            Effectiveness::Helpful,
            "Constraint",
        ),
        (
            ReflectionType::StrategyChange,
            Effectiveness::Unhelpful,
            "Did not work",
        ),
    ];
    let mut out: Vec<String> = Vec::new();
    for (kind, effectiveness, label) in order {
        for r in reflections
            .iter()
            .rev()
            .filter(|r| r.kind == kind && r.effectiveness == effectiveness)
        {
            let line = clip(&format!("{label}: {}", r.content), MAX_LEARNING_CHARS);
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out.truncate(max);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use protocol::memory::TaskType;

    pub(crate) fn record() -> TaskRecord {
        TaskRecord {
            task_id: "t".into(),
            task_description: "fix the flaky login test".into(),
            task_type: TaskType::Debugging,
            timestamp: String::new(),
            outcome: None,
            iterations: 0,
            final_quality: None,
            reflections: Vec::new(),
            key_learnings: Vec::new(),
            tags: Vec::new(),
            project: None,
            session: None,
            description_source: None,
            updated_at: String::new(),
            closed_at: None,
            outcome_source: None,
            outcome_explicit: false,
            window: None,
            scaled_window: None,
            scaled_because: None,
            cross_task: None,
            lessons_from: Vec::new(),
            reflected: Vec::new(),
            recorded: Vec::new(),
            machine: None,
        }
    }

    fn blocker(issue: &str, status: &str, notes: Option<&str>) -> Blocker {
        Blocker {
            issue: issue.into(),
            status: status.into(),
            notes: notes.map(str::to_owned),
            ..Blocker::default()
        }
    }

    #[test]
    fn decisions_and_blockers_become_reflections_once_per_status() {
        let mut task = record();
        let decisions = vec![Decision {
            topic: "Waits".into(),
            decision: "wait for network idle".into(),
            reasoning: Some("the spinner hides late requests".into()),
            ..Decision::default()
        }];
        let blockers = vec![blocker("login test is flaky on CI", "unresolved", None)];
        let first = from_capture(&task, &decisions, &blockers, &[]);
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].kind, ReflectionType::StrategyChange);
        assert_eq!(
            first[0].content,
            "Waits: wait for network idle (because the spinner hides late requests)"
        );
        assert_eq!(first[1].kind, ReflectionType::ErrorAnalysis);
        task.reflected
            .extend(first.iter().map(|n| n.fingerprint.clone()));
        assert!(from_capture(&task, &decisions, &blockers, &[]).is_empty());
        let resolved = vec![blocker(
            "login test is flaky on CI",
            "resolved",
            Some("mocked the clock"),
        )];
        let again = from_capture(&task, &decisions, &resolved, &[]);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].kind, ReflectionType::SuccessPattern);
        assert_eq!(
            again[0].content,
            "resolved login test is flaky on CI: mocked the clock"
        );
    }

    fn reflection(kind: ReflectionType, content: &str) -> Reflection {
        Reflection {
            iteration: 1,
            content: content.into(),
            kind,
            effectiveness: Effectiveness::Neutral,
            recorded_at: String::new(),
            source: "decision".into(),
            origin: "records.jsonl".into(),
        }
    }

    #[test]
    fn closing_judges_reflections_and_distils_learnings() {
        let mut task = record();
        task.reflections = vec![
            reflection(ReflectionType::StrategyChange, "retry the request"),
            reflection(ReflectionType::ErrorAnalysis, "the clock drifts in CI"),
            reflection(ReflectionType::SuccessPattern, "mocking the clock works"),
        ];
        task.outcome = Some(TaskOutcome::Failure);
        close(&mut task, 5);
        let e: Vec<Effectiveness> = task.reflections.iter().map(|r| r.effectiveness).collect();
        assert_eq!(
            e,
            vec![
                Effectiveness::Unhelpful,
                Effectiveness::Helpful,
                Effectiveness::Helpful
            ]
        );
        assert_eq!(
            task.key_learnings,
            vec![
                "Worked: mocking the clock works",
                "Watch for: the clock drifts in CI",
                "Did not work: retry the request"
            ]
        );
        task.outcome = Some(TaskOutcome::Success);
        close(&mut task, 2);
        assert_eq!(
            task.key_learnings,
            vec![
                "Worked: mocking the clock works",
                "Worked: retry the request"
            ]
        );
    }

    #[test]
    fn long_text_is_clipped_on_a_character_boundary() {
        assert_eq!(clip("ééééé", 3), "éé…");
        assert_eq!(clip(" short ", 10), "short");
        assert_ne!(fingerprint(&["a", "bc"]), fingerprint(&["ab", "c"]));
    }
}
