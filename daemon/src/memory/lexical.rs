//! Lexical similarity between task descriptions: TF-IDF cosine, with no
//! model and no network. It is the embedded default backend of cross-task
//! retrieval (see [`Similarity`] for where a semantic one would plug in).
//!
//! Text becomes terms by splitting on anything that is not a letter or a
//! digit and at camelCase humps, lowercasing, dropping English stopwords and
//! one-letter words, stripping common suffixes (`tests`, `testing`,
//! `tested` → `test`), and meeting a few words developers use for the same
//! thing (`flaky`, `intermittent`; `docs`, `documentation`: [`SYNONYMS`]). A term's weight is `(1 + ln tf) · idf` with the
//! smoothed `idf = ln((N + 1) / (df + 1)) + 1` over the stored tasks.
//!
//! Each task is two documents: its description, and its tags with its key
//! learnings. The similarity of a query (a new task's description and tags)
//! to a stored task is
//!
//! ```text
//! 0.8 · cos(query description, description) + 0.2 · cos(query description + tags, tags + learnings)
//! ```
//!
//! so the description decides, and shared tags (the task type, the project)
//! or learnings that mention the query's words only break ties: tags alone
//! can never lift an unrelated task over the threshold.
//!
//! ## The threshold
//!
//! `memory.similarity_threshold` defaults to 0.30. It was calibrated with
//! the pairs in `tests::calibration` below: 24 pairs of real-looking task
//! descriptions for the same kind of work in other words or on a sibling
//! object, and 24 pairs of unrelated work (several sharing a generic verb
//! such as "fix", "add" or "write"), each scored inside a background of 300
//! generated tasks (a memory some weeks old) and of 3 (a new user's: idf is
//! flat, so shared generic words weigh more). Similar pairs scored
//! 0.382–0.820 and 0.328–0.850, unrelated ones 0.012–0.285 and 0.031–0.255:
//! 0.30 sits in the gap left in both. The test fails when a pair lands on
//! the wrong side, and prints every figure with `--nocapture`. Lexical
//! similarity misses paraphrases without shared words ("the login check
//! sometimes times out" ~ "fix the flaky login test" shares only "login"):
//! that is the semantic backend's job, which is not built (see [`Similarity`]).

use std::collections::{BTreeMap, HashMap};

/// Weight of the description in the similarity; the rest goes to tags and learnings.
pub const DESCRIPTION_WEIGHT: f64 = 0.8;

/// Words that say nothing about what a task is.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "do", "does", "for", "from", "get", "has",
    "have", "how", "i", "if", "in", "into", "is", "it", "its", "let", "lets", "me", "my", "need",
    "needs", "no", "not", "now", "of", "on", "or", "our", "out", "please", "so", "some", "that",
    "the", "their", "them", "then", "there", "these", "this", "those", "to", "too", "up", "us",
    "use", "using", "very", "want", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your",
];

/// Words developers use for the same thing, after stemming: each maps to
/// the first of its group. Kept short and obvious on purpose.
const SYNONYMS: &[&[&str]] = &[
    &[
        "flaky",
        "flakey",
        "intermittent",
        "intermittently",
        "sporadic",
        "sporadically",
    ],
    &["fail", "failur", "error", "crash"],
    &["doc", "docs", "document", "documentation", "readm"],
    &["remov", "delet", "drop"],
    &["slow", "perf", "performanc", "latency", "speed"],
    &["docker", "dockeriz", "dockerfil", "container"],
    &["translat", "translation", "i18n", "localiz", "localization"],
    &["retry", "retri"],
    &["config", "configuration"],
    &["test", "spec"],
];

/// Splits text into terms (see the module docs).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in words(text) {
        let lower = word.to_lowercase();
        if lower.chars().count() < 2 || STOPWORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(canonical(stem(&lower)));
    }
    out
}

fn canonical(term: String) -> String {
    SYNONYMS
        .iter()
        .find(|group| group.contains(&term.as_str()))
        .map_or(term, |group| group[0].to_owned())
}

/// Alphanumeric runs, split again at camelCase humps (`loginTest` → `login`, `Test`).
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut prev: Option<char> = None;
        for (i, c) in run.char_indices() {
            if let Some(p) = prev
                && p.is_lowercase()
                && c.is_uppercase()
            {
                out.push(&run[start..i]);
                start = i;
            }
            prev = Some(c);
        }
        if start < run.len() {
            out.push(&run[start..]);
        }
    }
    out
}

/// A light suffix stripper: enough to meet `test`, `tests`, `testing`, `tested`.
pub fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    let long = |w: &str, n: usize| w.chars().count() > n;
    if !w.chars().all(|c| c.is_ascii_alphabetic()) {
        return w;
    }
    if w.ends_with("ies") && long(&w, 4) {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|s| w.ends_with(s))
        && long(&w, 4)
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
        && long(&w, 3)
    {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        // As Porter: the rest must hold a vowel (string, red stay), and -eed stays (speed).
        let rest = &w[..w.len().saturating_sub(suffix.len())];
        if w.ends_with(suffix)
            && long(&w, suffix.len() + 2)
            && !w.ends_with("eed")
            && rest.contains(['a', 'e', 'i', 'o', 'u', 'y'])
        {
            w.truncate(w.len() - suffix.len());
            // running → runn → run; but fall, pass, buzz keep their double letter.
            let b = w.as_bytes();
            if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] && !b"lsz".contains(&b[b.len() - 1])
            {
                w.pop();
            }
            break;
        }
    }
    if w.ends_with('e') && long(&w, 3) {
        w.pop();
    }
    w
}

/// What a similarity backend does: score stored tasks against a query.
/// [`Lexical`] is the one built in; a semantic backend (a local sentence
/// embedding model) would implement the same trait. None is built: see
/// `docs/memory.md`.
pub trait Similarity {
    /// Adds or replaces a task's documents.
    fn upsert(&mut self, id: &str, description: &str, aux: &str);
    fn remove(&mut self, id: &str);
    /// Tasks sharing anything with the query, with their similarity (0 to 1),
    /// best first.
    fn rank(&self, description: &str, tags: &str) -> Vec<(&str, f64)>;
}

type TermId = u32;
type Slot = u32;

/// One task's two documents as (term, raw count) lists.
#[derive(Debug, Clone, Default)]
struct Doc {
    id: String,
    description: Vec<(TermId, u32)>,
    aux: Vec<(TermId, u32)>,
}

/// TF-IDF over every stored task, kept in memory and updated one task at a time.
#[derive(Debug, Default)]
pub struct Lexical {
    vocabulary: HashMap<String, TermId>,
    /// Per term: tasks holding it in either document.
    df: Vec<u32>,
    /// Per term: the slots of tasks holding it.
    postings: Vec<Vec<Slot>>,
    docs: Vec<Option<Doc>>,
    free: Vec<Slot>,
    slots: HashMap<String, Slot>,
}

fn tf(count: u32) -> f64 {
    if count == 1 {
        1.0
    } else {
        1.0 + f64::from(count).ln()
    }
}

impl Lexical {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn intern(&mut self, term: String) -> TermId {
        if let Some(id) = self.vocabulary.get(&term) {
            return *id;
        }
        let id = self.df.len() as TermId;
        self.vocabulary.insert(term, id);
        self.df.push(0);
        self.postings.push(Vec::new());
        id
    }

    /// The terms of `text` and how often each comes, in the terms' order
    /// rather than their ids' (which depend on what was indexed first): a
    /// cosine then adds up the same way in every run, and a similarity
    /// shown as a percentage does not flip at a rounding edge.
    fn counted_terms(&mut self, text: &str) -> Vec<(TermId, u32)> {
        let mut by_term: BTreeMap<String, u32> = BTreeMap::new();
        for t in terms(text) {
            *by_term.entry(t).or_default() += 1;
        }
        by_term
            .into_iter()
            .map(|(t, c)| (self.intern(t), c))
            .collect()
    }

    fn idf(&self, term: TermId) -> f64 {
        let n = self.slots.len() as f64;
        let df = f64::from(self.df.get(term as usize).copied().unwrap_or(0));
        ((n + 1.0) / (df + 1.0)).ln() + 1.0
    }

    /// idf for a query term that may not be in the vocabulary.
    fn idf_of(&self, term: &str) -> f64 {
        match self.vocabulary.get(term) {
            Some(id) => self.idf(*id),
            None => ((self.slots.len() as f64 + 1.0) / 1.0).ln() + 1.0,
        }
    }

    /// Weighted query vector: term → weight, and its norm (summed in the
    /// terms' order, the same in every run).
    fn query<'q>(&self, text: &'q [String]) -> (BTreeMap<&'q str, f64>, f64) {
        let mut raw: BTreeMap<&'q str, u32> = BTreeMap::new();
        for t in text {
            *raw.entry(t.as_str()).or_default() += 1;
        }
        let weights: BTreeMap<&'q str, f64> = raw
            .into_iter()
            .map(|(t, c)| (t, tf(c) * self.idf_of(t)))
            .collect();
        let norm = weights.values().map(|w| w * w).sum::<f64>().sqrt();
        (weights, norm)
    }

    /// The query's weights as a dense vector over the vocabulary.
    fn dense(&self, weights: &BTreeMap<&str, f64>) -> Vec<f64> {
        let mut out = vec![0.0; self.df.len()];
        for (t, w) in weights {
            if let Some(id) = self.vocabulary.get(*t) {
                out[*id as usize] = *w;
            }
        }
        out
    }
}

/// Cosine of a query (dense weights, and its norm) and a document, with
/// every term's idf computed once per ranking.
fn cosine(query: &[f64], query_norm: f64, idf: &[f64], doc: &[(TermId, u32)]) -> f64 {
    if query_norm == 0.0 || doc.is_empty() {
        return 0.0;
    }
    let (mut dot, mut norm) = (0.0, 0.0);
    for (t, c) in doc {
        let w = tf(*c) * idf[*t as usize];
        dot += query[*t as usize] * w;
        norm += w * w;
    }
    if norm == 0.0 {
        0.0
    } else {
        (dot / (query_norm * norm.sqrt())).clamp(0.0, 1.0)
    }
}

impl Similarity for Lexical {
    fn upsert(&mut self, id: &str, description: &str, aux: &str) {
        self.remove(id);
        let doc = Doc {
            id: id.to_owned(),
            description: self.counted_terms(description),
            aux: self.counted_terms(aux),
        };
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as Slot
            }
        };
        let mut seen: Vec<TermId> = doc
            .description
            .iter()
            .chain(doc.aux.iter())
            .map(|(t, _)| *t)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for t in seen {
            self.df[t as usize] += 1;
            self.postings[t as usize].push(slot);
        }
        self.docs[slot as usize] = Some(doc);
        self.slots.insert(id.to_owned(), slot);
    }

    fn remove(&mut self, id: &str) {
        let Some(slot) = self.slots.remove(id) else {
            return;
        };
        let Some(doc) = self.docs[slot as usize].take() else {
            return;
        };
        let mut seen: Vec<TermId> = doc
            .description
            .iter()
            .chain(doc.aux.iter())
            .map(|(t, _)| *t)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for t in seen {
            self.df[t as usize] = self.df[t as usize].saturating_sub(1);
            if let Some(pos) = self.postings[t as usize].iter().position(|s| *s == slot) {
                self.postings[t as usize].swap_remove(pos);
            }
        }
        self.free.push(slot);
    }

    fn rank(&self, description: &str, tags: &str) -> Vec<(&str, f64)> {
        let q_desc = terms(description);
        let mut q_full = q_desc.clone();
        q_full.extend(terms(tags));
        let (wd, nd) = self.query(&q_desc);
        let (wf, nf) = self.query(&q_full);
        let (qd, qf) = (self.dense(&wd), self.dense(&wf));
        let idf: Vec<f64> = (0..self.df.len() as TermId).map(|t| self.idf(t)).collect();
        let mut candidates: Vec<Slot> = wf
            .keys()
            .filter_map(|t| self.vocabulary.get(*t))
            .flat_map(|t| self.postings[*t as usize].iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut out: Vec<(&str, f64)> = candidates
            .into_iter()
            .filter_map(|slot| {
                let doc = self.docs[slot as usize].as_ref()?;
                let d = cosine(&qd, nd, &idf, &doc.description);
                let a = cosine(&qf, nf, &idf, &doc.aux);
                let score = DESCRIPTION_WEIGHT * d + (1.0 - DESCRIPTION_WEIGHT) * a;
                (score > 0.0).then_some((doc.id.as_str(), score))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn terms_are_split_lowered_stopped_and_stemmed() {
        assert_eq!(
            terms("Fix the flaky loginTest in src/auth_tests.rs"),
            vec!["fix", "flaky", "login", "test", "src", "auth", "test", "rs"]
        );
        for (a, b) in [
            ("tests", "test"),
            ("testing", "test"),
            ("tested", "test"),
            ("fixes", "fix"),
            ("fixing", "fix"),
            ("fixed", "fix"),
            ("libraries", "library"),
            ("running", "run"),
            ("speed", "speed"),
            ("string", "string"),
            ("failing", "fail"),
            ("release", "releas"),
            ("released", "releas"),
            ("caches", "cach"),
            ("cache", "cach"),
            ("class", "class"),
            ("status", "status"),
            ("v2", "v2"),
        ] {
            assert_eq!(stem(a), b, "{a}");
        }
        assert!(terms("the a of to").is_empty());
        assert_eq!(terms("É café naïve"), vec!["café", "naïve"]);
        // Words developers use for the same thing meet.
        assert_eq!(terms("intermittently fails"), terms("flaky failure"));
        assert_eq!(terms("docs"), terms("documentation"));
    }

    fn index(tasks: &[(&str, &str, &str)]) -> Lexical {
        let mut l = Lexical::default();
        for (id, d, a) in tasks {
            l.upsert(id, d, a);
        }
        l
    }

    /// The same tasks indexed in another order score the same, to the last
    /// bit: a percentage shown to the model does not depend on it.
    #[test]
    fn scores_do_not_depend_on_the_order_tasks_were_indexed() {
        let mut rng = Lcg(7);
        let tasks: Vec<(String, String, String)> = (0..300)
            .map(|i| {
                (
                    format!("t{i}"),
                    generated_task(&mut rng),
                    generated_task(&mut rng),
                )
            })
            .collect();
        let refs: Vec<(&str, &str, &str)> = tasks
            .iter()
            .map(|(id, d, a)| (id.as_str(), d.as_str(), a.as_str()))
            .collect();
        let forward = index(&refs);
        let reversed: Vec<_> = refs.iter().rev().copied().collect();
        let backward = index(&reversed);
        for query in [
            "fix the flaky signup test",
            "migrate the cache layer under load",
        ] {
            let bits = |l: &Lexical| -> Vec<(String, u64)> {
                l.rank(query, "proj")
                    .into_iter()
                    .map(|(id, score)| (id.to_owned(), score.to_bits()))
                    .collect()
            };
            assert_eq!(bits(&forward), bits(&backward), "{query}");
        }
    }

    #[test]
    fn similar_descriptions_rank_first_and_unrelated_ones_not_at_all() {
        let l = index(&[
            ("a", "fix the flaky login test", "debugging proj"),
            ("b", "write the release notes for 2.0", "documentation proj"),
            ("c", "add a dark mode toggle", "implementation proj"),
        ]);
        let ranked = l.rank("fix the flaky signup test", "debugging proj");
        assert_eq!(ranked[0].0, "a", "{ranked:?}");
        assert!(ranked[0].1 > 0.5, "{ranked:?}");
        // Sharing only the project tag: far under any sensible threshold.
        assert!(ranked.iter().skip(1).all(|(_, s)| *s < 0.1), "{ranked:?}");
        assert!(l.rank("", "").is_empty());
        assert!(l.rank("quantum chromodynamics", "").is_empty());
    }

    #[test]
    fn updates_and_removals_keep_the_index_consistent() {
        let mut l = index(&[("a", "fix login", ""), ("b", "fix signup", "")]);
        assert_eq!(l.df[l.vocabulary["fix"] as usize], 2);
        l.upsert("a", "write docs", "");
        assert_eq!(l.df[l.vocabulary["fix"] as usize], 1);
        assert_eq!(l.len(), 2);
        l.remove("b");
        l.remove("b");
        assert_eq!(l.df[l.vocabulary["fix"] as usize], 0);
        assert!(l.rank("fix signup", "").is_empty());
        l.upsert("c", "fix signup", "");
        assert_eq!(l.docs.len(), 2, "the freed slot is reused");
        assert_eq!(l.rank("fix signup", "")[0].0, "c");
    }

    /// A deterministic stand-in for a random generator (no dependency for it).
    pub(crate) struct Lcg(pub u64);

    impl Lcg {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }

        pub(crate) fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.next() as usize % from.len()]
        }
    }

    const VERBS: &[&str] = &[
        "fix",
        "add",
        "implement",
        "refactor",
        "document",
        "test",
        "investigate",
        "update",
        "remove",
        "migrate",
        "speed up",
        "clean up",
        "design",
        "review",
        "rename",
    ];
    const OBJECTS: &[&str] = &[
        "the parser",
        "the config loader",
        "the payment webhook",
        "the search index",
        "the CLI flags",
        "the user profile page",
        "the cache layer",
        "the email sender",
        "the upload handler",
        "the rate limiter",
        "the session store",
        "the metrics exporter",
        "the image resizer",
        "the audit log",
        "the feature flags",
        "the GraphQL schema",
        "the docker image",
        "the onboarding wizard",
        "the invoice generator",
        "the retry policy",
        "the websocket server",
        "the billing cron",
        "the translation files",
        "the sitemap",
    ];
    const DETAILS: &[&str] = &[
        "for large inputs",
        "on Windows",
        "after the upgrade",
        "in staging",
        "for admins",
        "with pagination",
        "under load",
        "for the mobile app",
        "without downtime",
        "behind the proxy",
        "in the nightly build",
        "for the EU region",
    ];

    /// A plausible task description for the background corpus.
    pub(crate) fn generated_task(rng: &mut Lcg) -> String {
        format!(
            "{} {} {}",
            rng.pick(VERBS),
            rng.pick(OBJECTS),
            rng.pick(DETAILS)
        )
    }

    /// Similar: the same kind of work, in other words or on a sibling object.
    const SIMILAR: &[(&str, &str)] = &[
        ("fix the flaky login test", "fix the flaky signup test"),
        (
            "login test fails intermittently on CI",
            "fix the flaky login test",
        ),
        ("add OAuth login with GitHub", "add OAuth login with Google"),
        (
            "write the release notes for 2.3",
            "draft release notes for version 2.4",
        ),
        (
            "migrate the users table to Postgres 16",
            "migrate the orders table to Postgres 16",
        ),
        (
            "speed up the CSV export for big reports",
            "CSV export is slow for large reports",
        ),
        (
            "refactor the payment module into smaller services",
            "refactor the billing module into smaller services",
        ),
        (
            "add dark mode to the settings page",
            "dark mode toggle on the settings page",
        ),
        (
            "document the REST API endpoints",
            "write documentation for the REST API",
        ),
        (
            "memory leak in the websocket server",
            "fix the websocket server memory leak under load",
        ),
        (
            "increase unit test coverage of the parser",
            "add unit tests for the parser",
        ),
        (
            "upgrade React from 17 to 18",
            "upgrade React to version 18 and fix the warnings",
        ),
        (
            "set up the GitHub Actions CI pipeline",
            "fix the GitHub Actions CI pipeline caching",
        ),
        (
            "investigate slow queries on the dashboard",
            "dashboard queries are slow, investigate",
        ),
        (
            "rename the config keys to snake_case",
            "rename config keys from camelCase to snake_case",
        ),
        (
            "add rate limiting to the public API",
            "rate limit the public API per token",
        ),
        (
            "fix the timezone bug in the scheduler",
            "scheduler runs jobs at the wrong timezone",
        ),
        (
            "dockerize the worker service",
            "write a Dockerfile for the worker service",
        ),
        (
            "add retries to the email sender",
            "email sender should retry on SMTP errors",
        ),
        (
            "crash when uploading large images",
            "fix the crash on large image uploads",
        ),
        (
            "translate the onboarding screens to German",
            "add German translations for onboarding",
        ),
        (
            "compare Redis and Memcached for the session cache",
            "evaluate Redis for the session cache",
        ),
        (
            "remove the deprecated v1 endpoints",
            "delete deprecated v1 API endpoints",
        ),
        (
            "design the plugin architecture",
            "architecture for a plugin system design",
        ),
    ];

    /// Unrelated: different work, some sharing a generic verb or a project word.
    const UNRELATED: &[(&str, &str)] = &[
        ("fix the flaky login test", "write the release notes"),
        ("fix the flaky login test", "fix the typo in the README"),
        ("add OAuth login with GitHub", "add a CSV export to reports"),
        (
            "write the release notes for 2.3",
            "write unit tests for the parser",
        ),
        (
            "migrate the users table to Postgres 16",
            "add dark mode to the settings page",
        ),
        (
            "speed up the CSV export for big reports",
            "document the REST API endpoints",
        ),
        (
            "refactor the payment module into smaller services",
            "fix the timezone bug in the scheduler",
        ),
        (
            "add dark mode to the settings page",
            "add retries to the email sender",
        ),
        (
            "document the REST API endpoints",
            "memory leak in the websocket server",
        ),
        (
            "memory leak in the websocket server",
            "translate the onboarding screens to German",
        ),
        (
            "increase unit test coverage of the parser",
            "upgrade React from 17 to 18",
        ),
        (
            "upgrade React from 17 to 18",
            "remove the deprecated v1 endpoints",
        ),
        (
            "set up the GitHub Actions CI pipeline",
            "design the plugin architecture",
        ),
        (
            "investigate slow queries on the dashboard",
            "rename the config keys to snake_case",
        ),
        (
            "rename the config keys to snake_case",
            "crash when uploading large images",
        ),
        (
            "add rate limiting to the public API",
            "write the release notes for 2.3",
        ),
        (
            "fix the timezone bug in the scheduler",
            "fix the crash on large image uploads",
        ),
        (
            "dockerize the worker service",
            "compare Redis and Memcached for the session cache",
        ),
        (
            "add retries to the email sender",
            "add OAuth login with GitHub",
        ),
        (
            "crash when uploading large images",
            "increase unit test coverage of the parser",
        ),
        (
            "translate the onboarding screens to German",
            "speed up the CSV export for big reports",
        ),
        (
            "compare Redis and Memcached for the session cache",
            "refactor the payment module",
        ),
        (
            "remove the deprecated v1 endpoints",
            "set up the GitHub Actions CI pipeline",
        ),
        (
            "design the plugin architecture",
            "fix the flaky signup test",
        ),
    ];

    /// Similarity of `b` (as a new task) to `a` (stored), inside a
    /// background corpus of `background` generated tasks.
    fn scored(pairs: &[(&str, &str)], background: usize) -> Vec<f64> {
        let mut rng = Lcg(7);
        let mut l = Lexical::default();
        for i in 0..background {
            l.upsert(
                &format!("bg{i}"),
                &generated_task(&mut rng),
                "implementation proj",
            );
        }
        pairs
            .iter()
            .map(|(a, b)| {
                l.upsert("stored", a, "proj");
                let s = l
                    .rank(b, "proj")
                    .into_iter()
                    .find(|(id, _)| *id == "stored")
                    .map_or(0.0, |(_, s)| s);
                l.remove("stored");
                s
            })
            .collect()
    }

    #[test]
    fn calibration() {
        let threshold = protocol::config::MemoryConfig::default().similarity_threshold;
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        // A memory a few weeks old, and one of a new user.
        for background in [300, 3] {
            let similar = scored(SIMILAR, background);
            let unrelated = scored(UNRELATED, background);
            println!(
                "{background} stored tasks: similar {:.3}..{:.3}, unrelated {:.3}..{:.3}; threshold {threshold}",
                min(&similar),
                max(&similar),
                min(&unrelated),
                max(&unrelated)
            );
            for ((a, b), s) in SIMILAR.iter().zip(&similar) {
                println!("similar   {s:.3}  {a:?} ~ {b:?}");
                assert!(*s >= threshold, "{a:?} ~ {b:?} scored {s:.3}");
            }
            for ((a, b), s) in UNRELATED.iter().zip(&unrelated) {
                println!("unrelated {s:.3}  {a:?} / {b:?}");
                assert!(*s < threshold, "{a:?} / {b:?} scored {s:.3}");
            }
        }
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text splits into terms without panicking, and any stored texts
        /// rank any query with scores in (0, 1], best first.
        #[test]
        fn any_text_tokenizes_and_ranks(
            docs in proptest::collection::vec(("\\PC{0,60}", "\\PC{0,40}"), 0..12),
            query in "\\PC{0,60}",
        ) {
            let mut l = Lexical::default();
            for (i, (d, a)) in docs.iter().enumerate() {
                for t in terms(d) {
                    prop_assert!(t.chars().count() >= 2, "{t:?} from {d:?}");
                }
                l.upsert(&i.to_string(), d, a);
            }
            let ranked = l.rank(&query, "");
            for w in ranked.windows(2) {
                prop_assert!(w[0].1 >= w[1].1);
            }
            for (_, s) in &ranked {
                prop_assert!(*s > 0.0 && *s <= 1.0 + 1e-9, "{s}");
            }
            for i in 0..docs.len() {
                l.remove(&i.to_string());
            }
            prop_assert!(l.rank(&query, "").is_empty());
            prop_assert!(l.df.iter().all(|d| *d == 0));
        }
    }
}
