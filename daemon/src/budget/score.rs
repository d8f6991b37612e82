//! Relevance of a file to the task: five
//! factors, each in 0..=1, combined by configured weights.
//!
//! - task alignment: the task's keywords in the file's path (two matches
//!   are a full score) and in its contents (the share of keywords found),
//!   weighted 0.6 and 0.4;
//! - recency: 1 for a file changed now, falling to 0 over the decay days;
//! - mention density: how often the session named the file, 5 times or
//!   more being a full score (a file the saved state says to read first
//!   counts twice);
//! - dependency depth: 1 for the task's own files, less for each import
//!   step away, 0 beyond the maximum depth;
//! - file type: source 1.0, test 0.9, requirements 0.8, docs 0.7,
//!   config 0.6, anything else 0.5.

use super::files::FileType;
use protocol::budget::{Factors, FileScore, Tier};
use protocol::config::BudgetConfig;
use std::collections::BTreeSet;

/// Words that say nothing about which files matter.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
    "from",
    "into",
    "onto",
    "then",
    "than",
    "when",
    "what",
    "which",
    "where",
    "while",
    "will",
    "would",
    "should",
    "could",
    "can",
    "not",
    "but",
    "all",
    "any",
    "are",
    "was",
    "were",
    "has",
    "have",
    "had",
    "its",
    "our",
    "your",
    "their",
    "them",
    "they",
    "there",
    "here",
    "also",
    "just",
    "only",
    "some",
    "more",
    "most",
    "each",
    "every",
    "other",
    "about",
    "after",
    "before",
    "over",
    "under",
    "via",
    "per",
    "use",
    "using",
    "add",
    "adding",
    "make",
    "making",
    "fix",
    "fixing",
    "update",
    "updating",
    "change",
    "changing",
    "implement",
    "implementing",
    "create",
    "creating",
    "remove",
    "removing",
    "support",
    "new",
    "get",
    "set",
    "run",
    "running",
    "need",
    "needs",
    "want",
    "like",
    "work",
    "working",
    "done",
    "todo",
    "task",
    "next",
    "file",
    "files",
    "code",
    "please",
    "now",
    "first",
    "sure",
    "let",
    "see",
    "check",
    "try",
    "way",
    "one",
    "two",
    "out",
    "how",
    "why",
    "who",
    "you",
    "yes",
];

/// The words of `text`, normalized: lower case, split at camelCase humps
/// (the whole word kept too), trailing digits and a plural `s` dropped.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_word(text, |w| {
        out.push(w.to_owned());
        true
    });
    out
}

/// Calls `f` with each normalized word of `text` (as [`words`] gives
/// them, without allocating each) until it returns false.
fn each_word(text: &str, mut f: impl FnMut(&str) -> bool) {
    let mut buf = String::new();
    let mut emit = |part: &str, f: &mut dyn FnMut(&str) -> bool| {
        normalize_into(part, &mut buf);
        buf.len() < 3 || f(&buf)
    };
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.len() < 3 {
            continue;
        }
        if !emit(word, &mut f) {
            return;
        }
        let (mut start, mut prev_lower) = (0, false);
        for (i, c) in word.char_indices() {
            if prev_lower && c.is_uppercase() {
                if !emit(&word[start..i], &mut f) {
                    return;
                }
                start = i;
            }
            prev_lower = c.is_lowercase();
        }
        if start > 0 && !emit(&word[start..], &mut f) {
            return;
        }
    }
}

fn normalize_into(word: &str, out: &mut String) {
    out.clear();
    out.extend(word.chars().flat_map(char::to_lowercase));
    while out.len() > 3 && out.ends_with(|c: char| c.is_ascii_digit()) {
        out.pop();
    }
    if out.len() > 4 && out.ends_with('s') && !out.ends_with("ss") {
        out.pop();
    }
}

/// The task's keywords, in order of first appearance.
pub fn keywords(task: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    words(task)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// Keywords in `path`: equal to one of its words, or (for keywords of four
/// letters or more) inside one (`auth` in `oauth`).
pub fn path_matches(keywords: &[String], path: &str) -> Vec<String> {
    if keywords.is_empty() {
        return Vec::new();
    }
    let path_words = words(path);
    keywords
        .iter()
        .filter(|k| {
            path_words
                .iter()
                .any(|w| w == *k || (k.len() >= 4 && w.contains(k.as_str())))
        })
        .cloned()
        .collect()
}

/// Keywords among the words of `content`.
pub fn content_matches(keywords: &[String], content: &str) -> Vec<String> {
    if keywords.is_empty() {
        return Vec::new();
    }
    let mut found = vec![false; keywords.len()];
    let mut missing = keywords.len();
    each_word(content, |w| {
        if let Some(i) = keywords.iter().position(|k| k == w)
            && !found[i]
        {
            found[i] = true;
            missing -= 1;
        }
        missing > 0
    });
    keywords
        .iter()
        .zip(found)
        .filter(|(_, f)| *f)
        .map(|(k, _)| k.clone())
        .collect()
}

pub fn file_type_priority(kind: FileType) -> f64 {
    match kind {
        FileType::Source => 1.0,
        FileType::Test => 0.9,
        FileType::Requirements => 0.8,
        FileType::Docs => 0.7,
        FileType::Config => 0.6,
        FileType::Other => 0.5,
    }
}

/// What is known about one file, from which its score follows.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub path_matches: Vec<String>,
    pub content_matches: Vec<String>,
    pub keyword_count: usize,
    pub age_days: Option<f64>,
    pub mentions: u32,
    pub depth: Option<u32>,
    pub file_type: Option<FileType>,
    pub reasons: Vec<String>,
}

/// The file's factors, total and tier.
pub fn score(path: &str, e: &Evidence, config: &BudgetConfig) -> FileScore {
    let path_part = if e.keyword_count == 0 {
        0.0
    } else {
        (e.path_matches.len() as f64 / e.keyword_count.min(2) as f64).min(1.0)
    };
    let content_part = if e.keyword_count == 0 {
        0.0
    } else {
        e.content_matches.len() as f64 / e.keyword_count as f64
    };
    let kind = e.file_type.unwrap_or_else(|| super::files::file_type(path));
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let factors = Factors {
        task_alignment: 0.6 * path_part + 0.4 * content_part,
        recency: e.age_days.map_or(0.0, |days| {
            (1.0 - days.max(0.0) / config.recency_decay_days).clamp(0.0, 1.0)
        }),
        mention_density: (f64::from(e.mentions) / 5.0).min(1.0),
        dependency_depth: e
            .depth
            .filter(|d| *d <= config.max_import_depth)
            .map_or(0.0, |d| {
                1.0 - f64::from(d) / f64::from(config.max_import_depth + 1)
            }),
        file_type: file_type_priority(kind),
    };
    let factors = Factors {
        task_alignment: round(factors.task_alignment),
        recency: round(factors.recency),
        mention_density: round(factors.mention_density),
        dependency_depth: round(factors.dependency_depth),
        file_type: round(factors.file_type),
    };
    let w = &config.weights;
    let weight_sum =
        w.task_alignment + w.recency + w.mention_density + w.dependency_depth + w.file_type;
    let weighted = w.task_alignment * factors.task_alignment
        + w.recency * factors.recency
        + w.mention_density * factors.mention_density
        + w.dependency_depth * factors.dependency_depth
        + w.file_type * factors.file_type;
    let total = if weight_sum > 0.0 {
        weighted / weight_sum
    } else {
        0.0
    };
    let total = round(total);
    FileScore {
        path: path.to_owned(),
        file_type: kind.as_str().to_owned(),
        factors,
        total,
        tier: tier(total, config),
        path_matches: e.path_matches.clone(),
        content_matches: e.content_matches.clone(),
        mentions: e.mentions,
        depth: e.depth,
        age_days: e.age_days.map(|d| (d * 100.0).round() / 100.0),
        reasons: e.reasons.clone(),
    }
}

pub fn tier(total: f64, config: &BudgetConfig) -> Option<Tier> {
    if total >= config.primary_threshold {
        Some(Tier::Primary)
    } else if total >= config.supporting_threshold {
        Some(Tier::Supporting)
    } else if total >= config.include_threshold {
        Some(Tier::Reference)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_drop_filler_and_normalize() {
        assert_eq!(
            keywords("Add OAuth support to the client"),
            vec!["oauth", "client"]
        );
        assert_eq!(
            keywords("refreshTokens in TokenManager2, tokens"),
            vec![
                "refreshtoken",
                "refresh",
                "token",
                "tokenmanager",
                "manager"
            ]
        );
    }

    #[test]
    fn path_and_content_matches() {
        let k = keywords("fix the auth token refresh in the client");
        assert_eq!(
            path_matches(&k, "src/api/oauth/token_manager.ts"),
            vec!["auth", "token"]
        );
        assert_eq!(
            content_matches(&k, "class Client { refresh() {} }"),
            vec!["refresh", "client"]
        );
    }

    #[test]
    fn factors_combine_by_weight_into_tiers() {
        let config = BudgetConfig::default();
        let keywords = keywords("oauth client");
        let primary = Evidence {
            path_matches: vec!["oauth".into(), "client".into()],
            content_matches: vec!["oauth".into(), "client".into()],
            keyword_count: keywords.len(),
            age_days: Some(0.0),
            mentions: 5,
            depth: Some(0),
            file_type: Some(FileType::Source),
            reasons: vec![],
        };
        let s = score("src/oauth/client.ts", &primary, &config);
        assert_eq!(s.total, 1.0);
        assert_eq!(s.tier, Some(Tier::Primary));

        // Half the keywords in the contents, a week old, two mentions, two imports away, a test.
        let supporting = Evidence {
            path_matches: vec!["client".into()],
            content_matches: vec!["client".into()],
            keyword_count: 2,
            age_days: Some(3.5),
            mentions: 2,
            depth: Some(2),
            file_type: Some(FileType::Test),
            reasons: vec![],
        };
        let s = score("test/client.test.ts", &supporting, &config);
        let f = s.factors;
        assert_eq!(
            (
                f.task_alignment,
                f.recency,
                f.mention_density,
                f.dependency_depth,
                f.file_type
            ),
            (0.5, 0.5, 0.4, 0.5, 0.9)
        );
        // 0.4*0.5 + 0.2*0.5 + 0.2*0.4 + 0.1*0.5 + 0.1*0.9
        assert_eq!(s.total, 0.52);
        assert_eq!(s.tier, Some(Tier::Supporting));

        let unrelated = Evidence {
            keyword_count: 2,
            file_type: Some(FileType::Config),
            age_days: Some(30.0),
            ..Evidence::default()
        };
        let s = score("Cargo.toml", &unrelated, &config);
        assert_eq!(s.total, 0.06);
        assert_eq!(s.tier, None);
    }
}
