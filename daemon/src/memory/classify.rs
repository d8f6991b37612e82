//! Transparent keyword rules: a task's type from its description, a
//! reflection's type from its text, a task's outcome from its task list.
//! Rules work on stemmed terms ([`lexical::terms`]), so `tests`, `testing`
//! and `tested` all count as `test`.

use super::lexical;
use protocol::memory::{ReflectionType, TaskOutcome, TaskType};

/// Keywords per task type. A description scores one point per keyword it
/// holds (a phrase counts when its words appear in order); the highest
/// score wins, ties go to the type listed first, and no keyword at all
/// means `implementation`.
const TASK_RULES: &[(TaskType, &[&str])] = &[
    (
        TaskType::Debugging,
        &[
            "fix",
            "bug",
            "debug",
            "error",
            "crash",
            "fail",
            "failure",
            "flaky",
            "broken",
            "regression",
            "panic",
            "exception",
            "leak",
            "wrong",
            "hang",
            "intermittently",
            "incorrect",
            "issue",
            "timeout",
        ],
    ),
    (
        TaskType::Testing,
        &[
            "test",
            "coverage",
            "spec",
            "e2e",
            "unit test",
            "integration test",
            "assert",
            "fixture",
            "mock",
            "property test",
            "benchmark",
        ],
    ),
    (
        TaskType::Refactoring,
        &[
            "refactor",
            "rename",
            "restructure",
            "clean up",
            "cleanup",
            "simplify",
            "extract",
            "reorganize",
            "dedupe",
            "deduplicate",
            "split",
            "decouple",
            "tidy",
            "modernize",
        ],
    ),
    (
        TaskType::Documentation,
        &[
            "document",
            "documentation",
            "doc",
            "docs",
            "readme",
            "changelog",
            "release notes",
            "comment",
            "docstring",
            "guide",
            "tutorial",
            "manual",
            "translate",
            "translation",
        ],
    ),
    (
        TaskType::Architecture,
        &[
            "architecture",
            "architect",
            "design",
            "redesign",
            "migrate",
            "migration",
            "schema",
            "scalability",
            "plugin system",
            "boundary",
            "rfc",
            "monolith",
            "microservice",
        ],
    ),
    (
        TaskType::Research,
        &[
            "research",
            "investigate",
            "explore",
            "compare",
            "evaluate",
            "spike",
            "survey",
            "find out",
            "look into",
            "prototype",
            "feasibility",
            "why",
        ],
    ),
    (
        TaskType::Implementation,
        &[
            "implement",
            "add",
            "build",
            "create",
            "feature",
            "support",
            "introduce",
            "endpoint",
            "integrate",
            "enable",
        ],
    ),
];

/// Stemmed keyword phrases, built once per call (the lists are tiny).
fn phrase(keyword: &str) -> Vec<String> {
    // Stopwords are kept in phrases' own words; "why" is one of them.
    keyword.split_whitespace().map(lexical::stem).collect()
}

/// Whether `terms` holds `phrase` as consecutive terms.
fn holds(terms: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && terms.windows(phrase.len()).any(|w| w == phrase)
}

/// Terms of `text` with stopwords kept (a few keywords are stopwords).
fn all_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| lexical::stem(&w.to_lowercase()))
        .collect()
}

/// The task type of a description, by [`TASK_RULES`].
pub fn task_type(description: &str) -> TaskType {
    let terms = all_terms(description);
    let mut best = (0, TaskType::Implementation);
    for (kind, keywords) in TASK_RULES {
        let score = keywords
            .iter()
            .filter(|k| holds(&terms, &phrase(k)))
            .count();
        if score > best.0 {
            best = (score, *kind);
        }
    }
    best.1
}

/// Reflection types by keyword, checked in this order; none means `strategy_change`.
const REFLECTION_RULES: &[(ReflectionType, &[&str])] = &[
    (
        ReflectionType::SuccessPattern,
        &[
            "works",
            "worked",
            "fixed",
            "solved",
            "resolved",
            "succeeded",
            "passes",
            "passed",
            "green",
            "the trick",
            "the fix was",
        ],
    ),
    (
        ReflectionType::ErrorAnalysis,
        &[
            "error",
            "fail",
            "failed",
            "failing",
            "failure",
            "bug",
            "crash",
            "flaky",
            "broken",
            "panic",
            "exception",
            "regression",
            "root cause",
            "because",
            "caused",
        ],
    ),
    (
        ReflectionType::ConstraintDiscovery,
        &[
            "must",
            "cannot",
            "can't",
            "only",
            "requires",
            "require",
            "limit",
            "limited",
            "not allowed",
            "never",
            "always",
            "constraint",
            "forbidden",
            "read-only",
        ],
    ),
];

/// The reflection type of a free text (for `hookctl reflect` without `--type`).
pub fn reflection_type(text: &str) -> ReflectionType {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |k: &str| {
        let parts: Vec<&str> = k.split_whitespace().collect();
        words.windows(parts.len()).any(|w| w == parts.as_slice())
    };
    REFLECTION_RULES
        .iter()
        .find(|(_, keywords)| keywords.iter().any(|k| has(k)))
        .map_or(ReflectionType::StrategyChange, |(kind, _)| *kind)
}

/// Words that make a blocker an error rather than a constraint.
const ERROR_WORDS: &[&str] = &[
    "error",
    "fail",
    "failure",
    "bug",
    "crash",
    "flaky",
    "broken",
    "panic",
    "exception",
    "leak",
    "regression",
    "timeout",
    "wrong",
    "hang",
];

/// An open blocker is an `error_analysis` when it names a failure, else a
/// `constraint_discovery` (something in the way).
pub fn blocker_type(issue: &str) -> ReflectionType {
    let terms = all_terms(issue);
    if ERROR_WORDS
        .iter()
        .any(|w| terms.contains(&lexical::stem(w)))
    {
        ReflectionType::ErrorAnalysis
    } else {
        ReflectionType::ConstraintDiscovery
    }
}

/// The outcome a task list implies: every item completed → success, some →
/// partial, none → failure. An empty list says nothing (`None`). Also the
/// share completed, as `final_quality`.
pub fn outcome_of(statuses: &[&str]) -> Option<(TaskOutcome, f64, String)> {
    if statuses.is_empty() {
        return None;
    }
    let done = statuses.iter().filter(|s| **s == "completed").count();
    let all = statuses.len();
    let outcome = match done {
        0 => TaskOutcome::Failure,
        d if d == all => TaskOutcome::Success,
        _ => TaskOutcome::Partial,
    };
    Some((
        outcome,
        done as f64 / all as f64,
        format!("{done} of {all} tasks completed"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_types_follow_the_keywords() {
        for (text, kind) in [
            ("fix the flaky login test", TaskType::Debugging),
            ("Login test fails intermittently", TaskType::Debugging),
            ("write unit tests for the parser", TaskType::Testing),
            ("increase test coverage", TaskType::Testing),
            ("refactor the payment module", TaskType::Refactoring),
            ("clean up the config loader", TaskType::Refactoring),
            ("write the release notes", TaskType::Documentation),
            ("document the REST API", TaskType::Documentation),
            ("design the plugin architecture", TaskType::Architecture),
            (
                "migrate the users table to Postgres",
                TaskType::Architecture,
            ),
            ("investigate why the dashboard is slow", TaskType::Research),
            ("compare Redis and Memcached", TaskType::Research),
            ("add OAuth login with GitHub", TaskType::Implementation),
            ("make the parser faster", TaskType::Implementation),
            ("", TaskType::Implementation),
        ] {
            assert_eq!(task_type(text), kind, "{text:?}");
        }
    }

    #[test]
    fn reflection_types_follow_the_keywords() {
        for (text, kind) in [
            (
                "Waiting for the network idle event fixed it",
                ReflectionType::SuccessPattern,
            ),
            (
                "The test failed because the mock clock drifted",
                ReflectionType::ErrorAnalysis,
            ),
            (
                "Migrations must run before the seed script",
                ReflectionType::ConstraintDiscovery,
            ),
            (
                "Switched to testing the reducer directly",
                ReflectionType::StrategyChange,
            ),
        ] {
            assert_eq!(reflection_type(text), kind, "{text:?}");
        }
        assert_eq!(
            blocker_type("CI is flaky on macOS"),
            ReflectionType::ErrorAnalysis
        );
        assert_eq!(
            blocker_type("Need the ops team's API key"),
            ReflectionType::ConstraintDiscovery
        );
    }

    #[test]
    fn outcomes_follow_the_task_list() {
        assert_eq!(outcome_of(&[]), None);
        let (o, q, why) = outcome_of(&["completed", "completed"]).unwrap();
        assert_eq!(
            (o, q, why.as_str()),
            (TaskOutcome::Success, 1.0, "2 of 2 tasks completed")
        );
        assert_eq!(
            outcome_of(&["completed", "in_progress", "pending", "pending"])
                .unwrap()
                .0,
            TaskOutcome::Partial
        );
        assert_eq!(
            outcome_of(&["pending", "in_progress"]).unwrap().0,
            TaskOutcome::Failure
        );
    }
}
