//! From a task to a budget: collect candidate files, score them, put them
//! in tiers, and fit each tier into its share of the tokens.
//!
//! Candidates are the files the saved state names (`context_needed`,
//! changed files), the files the session's transcript names, files whose
//! path (or, in projects of up to [`CONTENT_SEARCH_MAX_FILES`] files,
//! contents) has the task's keywords, the tests of all of these, and what
//! they import up to the maximum depth. Only files git would keep count,
//! and nothing outside the project is read.

use super::files::{self, FileType};
use super::imports;
use super::score::{self, Evidence};
use super::summary::{self, Level};
use super::tokens::{self, TextKind};
use crate::project_fs::Dir;
use crate::state::ContextState;
use crate::workflow::Workflow;
use protocol::budget::{Allocation, BudgetPlan, FileScore, Metrics, Overflow, PlannedFile, Tier};
use protocol::config::{BudgetConfig, OverflowStrategy};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

/// Projects up to this size also search file contents for the task's
/// keywords, reading at most [`CONTENT_SEARCH_MAX_BYTES`].
pub const CONTENT_SEARCH_MAX_FILES: usize = 3000;
pub const CONTENT_SEARCH_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of a file read to match keywords and imports.
const CONTENT_READ_BYTES: u64 = 256 * 1024;
/// Smallest useful piece of a truncated file, in tokens.
const MIN_TRUNCATED_TOKENS: usize = 100;
/// How many files below the threshold a plan keeps, to explain what was left out.
const BELOW_THRESHOLD_KEPT: usize = 10;

pub struct PlanInput<'a> {
    pub project: &'a Path,
    pub task: String,
    pub state: Option<&'a ContextState>,
    /// The session's transcript, for mentions.
    pub transcript: Option<&'a Path>,
    /// The project's files; None lists them (tracked and untracked).
    pub files: Option<Vec<String>>,
    /// Files with uncommitted changes, relative to the repository's root;
    /// None asks git.
    pub changed: Option<Vec<String>>,
    /// Files that are never candidates (relative to the root): another
    /// session's changes.
    pub left_out: Vec<String>,
    pub total_budget: u64,
    pub budget_source: String,
    pub session: Option<String>,
    pub config: &'a BudgetConfig,
    /// Where summaries are cached, if they are.
    pub cache_dir: Option<crate::project_fs::Dir>,
    pub now_ms: u64,
    /// When given, git is read under a deadline
    /// ([`crate::git::Repositories::bounded`]): a stuck read costs one
    /// deadline, not a thread for good.
    pub repositories: &'a crate::git::Repositories,
    /// How git reaches the repository (a save has it open already).
    pub repository: &'a crate::git::Access,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "the {tier} tier overflows: its files need {needed} tokens at their levels but it has {allocated}; \
         raise budget.max_tokens (or --max-tokens), or set budget.overflow_strategy to prioritize, summarize or truncate"
    )]
    Overflow {
        tier: &'static str,
        needed: u64,
        allocated: u64,
    },
    #[error("the budget has no tokens left after the reserves ({total} - {output} - {system})")]
    NoRoom {
        total: u64,
        output: u64,
        system: u64,
    },
}

/// The task as the saved state tells it: the active task, the objective and
/// the next actions (the last request, if none of those is known).
pub fn task_of(state: &ContextState) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(t) = state
        .tasks
        .iter()
        .find(|t| t.status == crate::state::TaskStatus::InProgress)
    {
        parts.push(t.title.clone());
    }
    parts.extend(state.active_work.action.clone());
    parts.extend(state.objective.clone());
    for a in &state.next_actions {
        parts.push(format!("{} {}", a.action, a.target));
    }
    if parts.is_empty() {
        parts.extend(state.recent_prompts.last().cloned());
    }
    parts.join("\n")
}

fn read_start(path: &Path) -> Option<String> {
    // A link may lead anywhere (or to a FIFO): only the project's own files count.
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let (file, _) = crate::tail::open_regular(path).ok()??;
    let mut bytes = Vec::new();
    file.take(CONTENT_READ_BYTES).read_to_end(&mut bytes).ok()?;
    // Binary files have no words worth matching.
    if bytes.iter().take(8000).any(|b| *b == 0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn mtime_ms(path: &Path) -> Option<u64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(modified.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
}

/// Days since each file last changed, where that is within the decay
/// window: from git in a repository, else from modification times.
fn ages(input: &PlanInput, paths: &[String]) -> HashMap<String, f64> {
    let (project, now_ms) = (input.project, input.now_ms);
    let window_ms = (input.config.recency_decay_days * 86_400_000.0) as u64;
    let known = input.changed.as_deref();
    let from_git = {
        let (at, paths) = (project.to_path_buf(), paths.to_vec());
        let known = known.map(<[String]>::to_vec);
        let repo = input.repository.clone();
        input
            .repositories
            .bounded(project, crate::git::GIT_DEADLINE, move |_| {
                Ok(repo.last_changes(&at, &paths, known.as_deref(), now_ms, window_ms))
            })
            .ok()
            .flatten()
    };
    let changed = from_git.unwrap_or_else(|| {
        paths
            .iter()
            .filter_map(|p| Some((p.clone(), mtime_ms(&project.join(p))?)))
            .collect()
    });
    changed
        .into_iter()
        .map(|(p, ms)| (p, now_ms.saturating_sub(ms) as f64 / 86_400_000.0))
        .collect()
}

/// The files a plan chooses among, and what it needs to read their imports.
struct ProjectFiles<'a> {
    project: &'a Path,
    all: &'a [String],
    all_set: &'a HashSet<String>,
    /// The Go module path, when the project has a `go.mod`.
    go_module: Option<&'a str>,
}

impl ProjectFiles<'_> {
    fn imports_of(&self, rel: &str, text: &str) -> Vec<String> {
        imports::imports(rel, text, self.all_set, self.go_module)
    }
}

/// What the search of the project's contents read.
#[derive(Default)]
struct ContentsRead {
    /// The texts kept (only candidates': the project's would not fit in memory).
    contents: HashMap<String, Option<String>>,
    /// Each file read, with the files it imports.
    edges: HashMap<String, Vec<String>>,
    /// Files holding at least half the task's words, most first.
    content_matches: Vec<String>,
}

/// Where the project is small enough to read whole: the files whose
/// contents hold the task's words, and every file's imports (so importers
/// count too).
fn search_contents(files_of: &ProjectFiles, keywords: &[String]) -> ContentsRead {
    let mut out = ContentsRead::default();
    if files_of.all.len() > CONTENT_SEARCH_MAX_FILES {
        return out;
    }
    let wanted = keywords.len().div_ceil(2).max(1);
    let mut by_content: Vec<(usize, &String)> = Vec::new();
    let mut read = 0;
    for rel in files_of
        .all
        .iter()
        .filter(|f| files::file_type(f) != FileType::Other)
    {
        if read > CONTENT_SEARCH_MAX_BYTES {
            break;
        }
        let text = read_start(&files_of.project.join(rel));
        read += text.as_ref().map_or(0, String::len);
        if let Some(t) = &text {
            out.edges.insert(rel.clone(), files_of.imports_of(rel, t));
        }
        let n = text
            .as_deref()
            .map_or(0, |t| score::content_matches(keywords, t).len());
        if n >= wanted {
            by_content.push((n, rel));
            out.contents.insert(rel.clone(), text);
        }
    }
    by_content.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    out.content_matches = by_content.into_iter().map(|(_, rel)| rel.clone()).collect();
    out
}

/// Reads the imports of the files reachable from `seeds` within
/// `max_depth` steps into `edges`, the files not read yet through `text_of`.
fn follow_imports(
    files_of: &ProjectFiles,
    seeds: &[String],
    max_depth: u32,
    edges: &mut HashMap<String, Vec<String>>,
    text_of: &mut impl FnMut(&str) -> Option<String>,
) {
    let mut frontier = seeds.to_vec();
    for _ in 0..max_depth {
        if frontier.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for rel in &frontier {
            if edges.contains_key(rel) {
                continue;
            }
            let found = text_of(rel)
                .map(|t| files_of.imports_of(rel, &t))
                .unwrap_or_default();
            next.extend(found.iter().filter(|f| !edges.contains_key(*f)).cloned());
            edges.insert(rel.clone(), found);
        }
        frontier = next;
    }
}

/// Scores every candidate for the task, best first.
pub fn score_candidates(input: &PlanInput, keywords: &[String]) -> Vec<FileScore> {
    let project = input.project;
    let all = input.files.clone().unwrap_or_else(|| {
        let (at, repo) = (project.to_path_buf(), input.repository.clone());
        input
            .repositories
            .bounded(project, crate::git::GIT_DEADLINE, move |_| {
                Ok(files::list_in(&repo, &at, true))
            })
            .unwrap_or_default()
    });
    let all_set: HashSet<String> = all.iter().cloned().collect();
    let mut evidence: BTreeMap<String, Evidence> = BTreeMap::new();
    let add = |evidence: &mut BTreeMap<String, Evidence>, rel: &str, reason: &str| {
        let e = evidence.entry(rel.to_owned()).or_default();
        if !e.reasons.iter().any(|r| r == reason) {
            e.reasons.push(reason.to_owned());
        }
    };
    let known = |path: &str| -> Option<String> {
        let rel = files::inside(project, path)?;
        all_set.contains(&rel).then_some(rel)
    };

    // The saved state's own files.
    if let Some(state) = input.state {
        for action in &state.next_actions {
            for needed in &action.context_needed {
                if let Some(rel) = known(needed) {
                    add(&mut evidence, &rel, "context_needed");
                    evidence.get_mut(&rel).expect("just added").mentions += 2;
                }
            }
        }
        for m in &state.modified_files {
            if let Some(rel) = known(&m.path) {
                add(&mut evidence, &rel, "modified");
            }
        }
        if let Some(rel) = state.active_work.file_path.as_deref().and_then(known) {
            add(&mut evidence, &rel, "active");
        }
    }
    // What the session named.
    if let Some(transcript) = input.transcript
        && let Ok(counts) = super::mentions::count(transcript, project, &all)
    {
        for (rel, n) in counts {
            add(&mut evidence, &rel, "transcript");
            evidence.get_mut(&rel).expect("just added").mentions += n;
        }
    }
    // Paths with the task's words.
    let mut by_path: Vec<(usize, &String)> = all
        .iter()
        .map(|f| (score::path_matches(keywords, f).len(), f))
        .filter(|(n, _)| *n > 0)
        .collect();
    by_path.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    for (_, rel) in by_path.iter().take(input.config.max_candidates / 2) {
        add(&mut evidence, rel, "keyword");
    }
    let go_module = all_set
        .contains("go.mod")
        .then(|| read_start(&project.join("go.mod")))
        .flatten()
        .and_then(|t| imports::go_module(&t));
    let project_files = ProjectFiles {
        project,
        all: &all,
        all_set: &all_set,
        go_module: go_module.as_deref(),
    };
    let mut read = search_contents(&project_files, keywords);
    for rel in read
        .content_matches
        .iter()
        .take(input.config.max_candidates / 4)
    {
        add(&mut evidence, rel, "content");
    }
    let mut text_of = |rel: &str| -> Option<String> {
        read.contents
            .entry(rel.to_owned())
            .or_insert_with(|| read_start(&project.join(rel)))
            .clone()
    };

    // The task's own files are depth 0 (not files that merely use its
    // words); follow their imports.
    let seeds: Vec<String> = evidence
        .iter()
        .filter(|(_, e)| e.reasons.iter().any(|r| r != "content"))
        .map(|(rel, _)| rel.clone())
        .collect();
    follow_imports(
        &project_files,
        &seeds,
        input.config.max_import_depth,
        &mut read.edges,
        &mut text_of,
    );
    let depths = imports::distances(&seeds, &read.edges, input.config.max_import_depth);
    for rel in depths.keys() {
        if !evidence.contains_key(rel) {
            add(&mut evidence, rel, "import");
        }
    }
    let tests = files::Tests::index(&all);
    for rel in &seeds {
        for test in tests.of(rel) {
            add(&mut evidence, &test, "test");
        }
    }

    // hookd's own files and the files left out are nobody's to reload.
    evidence.retain(|rel, _| {
        !protocol::project::is_hookd_file(rel)
            && !input.left_out.contains(rel)
            && project.join(rel).is_file()
    });
    let paths: Vec<String> = evidence.keys().cloned().collect();
    let ages = ages(input, &paths);
    let mut scores: Vec<FileScore> = evidence
        .into_iter()
        .map(|(rel, mut e)| {
            let text = text_of(&rel);
            e.path_matches = score::path_matches(keywords, &rel);
            e.content_matches = text
                .as_deref()
                .map(|t| score::content_matches(keywords, t))
                .unwrap_or_default();
            e.keyword_count = keywords.len();
            e.age_days = ages.get(&rel).copied();
            e.depth = depths.get(&rel).copied();
            score::score(&rel, &e, input.config)
        })
        .collect();
    scores.sort_by(|a, b| {
        b.total
            .total_cmp(&a.total)
            .then_with(|| a.path.cmp(&b.path))
    });
    scores.truncate(input.config.max_candidates);
    scores
}

/// The level a tier starts its files at.
fn level_for(tier: Tier) -> Level {
    match tier {
        Tier::Primary => Level::Full,
        Tier::Supporting => Level::Detailed,
        Tier::Reference | Tier::History => Level::Summary,
    }
}

struct Sizer<'a> {
    project: &'a Path,
    cache_dir: Option<&'a crate::project_fs::Dir>,
    cached: usize,
    made: usize,
}

/// One file's size at a level, and whether a summary was made for it.
struct Sized {
    level: Level,
    tokens: usize,
    summary: Option<bool>,
}

impl Sizer<'_> {
    /// Tokens of `rel` at `level`; a shorter level that would not be
    /// smaller than the whole file is the whole file.
    fn tokens(&mut self, rel: &str, level: Level) -> (Level, usize) {
        let sized = self.measure(rel, level);
        self.count(&sized);
        (sized.level, sized.tokens)
    }

    fn count(&mut self, sized: &Sized) {
        match sized.summary {
            Some(true) => self.cached += 1,
            Some(false) => self.made += 1,
            None => {}
        }
    }

    fn measure(&self, rel: &str, level: Level) -> Sized {
        let full = summary::full_tokens(self.project, rel);
        let whole = |summary| Sized {
            level: Level::Full,
            tokens: full,
            summary,
        };
        if level == Level::Full {
            return whole(None);
        }
        match summary::summarize(self.project, rel, level, self.cache_dir) {
            Ok(s) if s.tokens >= full => whole(Some(s.cached)),
            Ok(s) => Sized {
                level,
                tokens: s.tokens,
                summary: Some(s.cached),
            },
            Err(_) => whole(None),
        }
    }

    /// Sizes of many files, on every core: making the summaries of a few
    /// hundred files is the slowest part of a plan.
    fn tokens_of_all(&mut self, files: &[(&str, Level)]) -> Vec<(Level, usize)> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let chunk = files.len().div_ceil(threads).max(1);
        let this = &*self;
        let sized: Vec<Sized> = std::thread::scope(|scope| {
            let parts: Vec<_> = files
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|(rel, level)| this.measure(rel, *level))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            parts
                .into_iter()
                .flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        sized
            .iter()
            .map(|s| {
                self.count(s);
                (s.level, s.tokens)
            })
            .collect()
    }
}

/// Scores the candidates and fits them to the budget.
/// Each tier's share of the `available` tokens.
fn shared_out(config: &BudgetConfig, available: u64) -> Allocation {
    let shares = &config.allocation;
    let share_of = |tier: Tier| match tier {
        Tier::Primary => shares.primary,
        Tier::Supporting => shares.supporting,
        Tier::Reference => shares.reference,
        Tier::History => shares.history,
    };
    let mut allocation = Allocation::default();
    for tier in [
        Tier::Primary,
        Tier::Supporting,
        Tier::Reference,
        Tier::History,
    ] {
        let t = allocation.tier_mut(tier);
        t.percentage = share_of(tier);
        t.allocated_tokens = (available as f64 * share_of(tier) / 100.0).floor() as u64;
    }
    allocation
}

/// Where a file that does not fit in its tier's `room` goes, by the
/// overflow strategy: cut to the room, a shorter level that fits, or out
/// (`None`). The level, tokens, and whether it was cut.
fn overflowing(
    strategy: OverflowStrategy,
    sizer: &mut Sizer,
    path: &str,
    level: Level,
    room: usize,
) -> Option<(Level, usize, bool)> {
    match strategy {
        OverflowStrategy::Prioritize | OverflowStrategy::Error => None,
        OverflowStrategy::Truncate => (room >= MIN_TRUNCATED_TOKENS).then_some((level, room, true)),
        OverflowStrategy::Summarize => {
            let mut shorter = level.shorter();
            while let Some(l) = shorter {
                let (l, t) = sizer.tokens(path, l);
                if t <= room {
                    return Some((l, t, false));
                }
                shorter = l.shorter();
            }
            None
        }
    }
}

/// How full the plan is and how relevant its tokens are, and the tokens it uses.
fn metrics_of(allocation: &Allocation, available: u64) -> (Metrics, u64) {
    let planned: Vec<&PlannedFile> = Tier::FILES
        .iter()
        .flat_map(|t| allocation.tier(*t).files.iter())
        .collect();
    let file_tokens: u64 = planned.iter().map(|f| f.tokens).sum();
    let total_used = file_tokens + allocation.history.total_tokens;
    let weighted: f64 = planned
        .iter()
        .map(|f| f.tokens as f64 * f.relevance_score)
        .sum();
    let metrics = Metrics {
        utilization: round3(total_used as f64 / available as f64),
        efficiency: if file_tokens == 0 {
            0.0
        } else {
            round3(weighted / file_tokens as f64)
        },
    };
    (metrics, total_used)
}

pub fn plan(input: &PlanInput) -> Result<BudgetPlan, PlanError> {
    let started = Instant::now();
    let config = input.config;
    let reserves = config.reserve_for_output + config.reserve_for_system;
    if input.total_budget <= reserves {
        return Err(PlanError::NoRoom {
            total: input.total_budget,
            output: config.reserve_for_output,
            system: config.reserve_for_system,
        });
    }
    let available = input.total_budget - reserves;
    let keywords = score::keywords(&input.task);
    let scores = score_candidates(input, &keywords);
    let candidates = scores.len();
    let (included, below): (Vec<FileScore>, Vec<FileScore>) =
        scores.into_iter().partition(|s| s.tier.is_some());

    let mut allocation = shared_out(config, available);
    let mut sizer = Sizer {
        project: input.project,
        cache_dir: input.cache_dir.as_ref(),
        cached: 0,
        made: 0,
    };
    let starting: Vec<(&str, Level)> = included
        .iter()
        .map(|s| (s.path.as_str(), s.tier.map_or(Level::Summary, level_for)))
        .collect();
    let first_sizes = sizer.tokens_of_all(&starting);
    let mut overflow = Overflow::default();
    for tier in Tier::FILES {
        let allocated = allocation.tier(tier).allocated_tokens as usize;
        let mut used = 0usize;
        let mut files = Vec::new();
        let mut needed = 0usize;
        for (i, s) in included
            .iter()
            .enumerate()
            .filter(|(_, s)| s.tier == Some(tier))
        {
            let (level, tokens) = first_sizes[i];
            needed += tokens;
            let room = allocated.saturating_sub(used);
            let placed = if tokens <= room {
                Some((level, tokens, false))
            } else {
                overflow.occurred = true;
                overflow.files_affected.push(s.path.clone());
                overflowing(config.overflow_strategy, &mut sizer, &s.path, level, room)
            };
            if let Some((level, tokens, truncated)) = placed {
                used += tokens;
                files.push(PlannedFile {
                    path: s.path.clone(),
                    level: level.as_str().to_owned(),
                    tokens: tokens as u64,
                    relevance_score: s.total,
                    truncated,
                });
            }
        }
        if config.overflow_strategy == OverflowStrategy::Error && needed > allocated {
            return Err(PlanError::Overflow {
                tier: tier.as_str(),
                needed: needed as u64,
                allocated: allocated as u64,
            });
        }
        let t = allocation.tier_mut(tier);
        t.files = files;
        t.total_tokens = used as u64;
    }
    if overflow.occurred {
        overflow.strategy_applied = Some(config.overflow_strategy.as_str().to_owned());
    }
    // History: what the resume prompt carries of the conversation.
    let history_tokens = input.state.map_or(0, history_tokens) as u64;
    allocation.history.total_tokens = history_tokens.min(allocation.history.allocated_tokens);
    allocation.history.note =
        Some("the resume prompt: progress, decisions and recent requests".into());

    let (metrics, total_used) = metrics_of(&allocation, available);
    let mut below = below;
    below.truncate(BELOW_THRESHOLD_KEPT);
    Ok(BudgetPlan {
        timestamp: crate::time::rfc3339(input.now_ms),
        task: input.task.clone(),
        session: input.session.clone(),
        total_budget: input.total_budget,
        budget_source: input.budget_source.clone(),
        reserve_for_output: config.reserve_for_output,
        reserve_for_system: config.reserve_for_system,
        available,
        allocation,
        overflow,
        metrics,
        total_used,
        keywords,
        candidates,
        below_threshold: below,
        scores: included,
        elapsed_ms: started.elapsed().as_millis() as u64,
        summaries_cached: sizer.cached,
        summaries_made: sizer.made,
    })
}

pub(super) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Tokens of the conversation the resume prompt carries.
fn history_tokens(state: &ContextState) -> usize {
    let mut text = state.progress_summary.clone();
    for d in &state.decisions {
        text += &d.decision;
        text += d.reasoning.as_deref().unwrap_or("");
    }
    for p in &state.recent_prompts {
        text += p;
    }
    tokens::estimate(&text, TextKind::Prose)
}

/// Scores one file (which need not be a candidate) for a task.
pub fn score_one(input: &PlanInput, rel: &str) -> FileScore {
    let keywords = score::keywords(&input.task);
    if let Some(found) = score_candidates(input, &keywords)
        .into_iter()
        .find(|s| s.path == rel)
    {
        return found;
    }
    let text = read_start(&input.project.join(rel));
    let mentions = input
        .transcript
        .and_then(|t| super::mentions::count(t, input.project, &[rel.to_owned()]).ok())
        .and_then(|c| c.get(rel).copied())
        .unwrap_or(0);
    let e = Evidence {
        path_matches: score::path_matches(&keywords, rel),
        content_matches: text
            .as_deref()
            .map(|t| score::content_matches(&keywords, t))
            .unwrap_or_default(),
        keyword_count: keywords.len(),
        age_days: ages(input, &[rel.to_owned()]).get(rel).copied(),
        mentions,
        depth: None,
        file_type: None,
        reasons: vec!["named".into()],
    };
    score::score(rel, &e, input.config)
}

/// Where budget records live, inside `.workflow/`.
pub const RECORDS_DIR: &str = "budget-records";

/// Saves `plan` as a budget record in `workflow` and keeps the newest `keep`.
pub fn save_record(
    workflow: &Dir,
    plan: &BudgetPlan,
    now_ms: u64,
    keep: usize,
) -> std::io::Result<PathBuf> {
    let (dir, _) = workflow.create_dir(RECORDS_DIR)?;
    let who: String = plan
        .session
        .as_deref()
        .unwrap_or("nosession")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Milliseconds too: two plans in one second are two records.
    let stamp = crate::time::compact_stamp(now_ms);
    let name = format!("{stamp}_{:03}_{who}.json", now_ms % 1000);
    let bytes = serde_json::to_vec_pretty(plan).expect("a plan serializes");
    dir.write_atomic(&name, &bytes)?;
    let mut all = record_names(&dir);
    let excess = all.len().saturating_sub(keep.max(1));
    for old in all.drain(..excess) {
        let _ = dir.remove(&old);
    }
    Ok(dir.path().join(name))
}

/// Budget record files in `dir`, oldest first.
fn record_names(dir: &Dir) -> Vec<String> {
    let mut names: Vec<String> = dir
        .names()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.ends_with(".json") && dir.is_file(n))
        .collect();
    names.sort();
    names
}

/// How many budget records `.workflow/` holds.
pub fn record_count(workflow: &Workflow) -> usize {
    workflow
        .open()
        .and_then(|w| w.open_dir(RECORDS_DIR))
        .map_or(0, |dir| record_names(&dir).len())
}

/// The newest readable record (of `session`, when given).
pub fn latest_record(workflow: &Workflow, session: Option<&str>) -> Option<(PathBuf, BudgetPlan)> {
    let dir = workflow.open().ok()?.open_dir(RECORDS_DIR).ok()?;
    record_names(&dir).into_iter().rev().find_map(|name| {
        let bytes = dir.read(&name, crate::workflow::MAX_FILE_BYTES).ok()??;
        let plan: BudgetPlan = serde_json::from_slice(&bytes).ok()?;
        match session {
            Some(id) if plan.session.as_deref().is_none_or(|s| !s.starts_with(id)) => None,
            _ => Some((dir.path().join(&name), plan)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_file_is_not_read_for_its_words() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("key"), "secret words\n").unwrap();
        std::fs::write(dir.path().join("own.rs"), "own words\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("key"), dir.path().join("link.rs")).unwrap();
        assert_eq!(
            read_start(&dir.path().join("own.rs")).as_deref(),
            Some("own words\n")
        );
        assert_eq!(read_start(&dir.path().join("link.rs")), None);
    }
    use crate::state::NextAction;

    /// A project outside git (modification times give recency) whose three
    /// parser files match the task in path and contents.
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        for (name, fns) in [
            ("parser_token_a", 400),
            ("parser_token_b", 300),
            ("parser_token_c", 200),
        ] {
            let body: String = (0..fns)
                .map(|i| format!("/// Parser step {i}: one token.\npub fn parse_token_{i}(input: &str) -> usize {{\n    input.len() + {i}\n}}\n"))
                .collect();
            std::fs::write(dir.path().join(format!("src/{name}.rs")), body).unwrap();
        }
        std::fs::write(dir.path().join("src/unrelated.rs"), "pub fn x() {}\n").unwrap();
        dir
    }

    fn plan_with(
        dir: &Path,
        strategy: OverflowStrategy,
        total: u64,
    ) -> Result<BudgetPlan, PlanError> {
        let config = BudgetConfig {
            overflow_strategy: strategy,
            ..BudgetConfig::default()
        };
        let input = PlanInput {
            project: dir,
            task: "parser token".into(),
            state: None,
            transcript: None,
            files: None,
            changed: None,
            left_out: Vec::new(),
            total_budget: total,
            budget_source: "test".into(),
            session: None,
            config: &config,
            cache_dir: None,
            now_ms: crate::time::now_ms(),
            repositories: &crate::git::Repositories::default(),
            repository: &crate::git::Access::ByPath,
        };
        plan(&input)
    }

    #[test]
    fn tiers_allocations_and_metrics() {
        let dir = project();
        let p = plan_with(dir.path(), OverflowStrategy::Prioritize, 100_000).unwrap();
        assert_eq!(
            (
                p.available,
                p.allocation.primary.allocated_tokens,
                p.allocation.supporting.allocated_tokens
            ),
            (90_000, 45_000, 27_000)
        );
        assert_eq!(
            (
                p.allocation.reference.allocated_tokens,
                p.allocation.history.allocated_tokens
            ),
            (13_500, 4_500)
        );
        let primary: Vec<&str> = p
            .allocation
            .primary
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(primary.len(), 3, "{primary:?}");
        assert!(
            p.allocation
                .primary
                .files
                .iter()
                .all(|f| f.level == "full" && f.relevance_score >= 0.7)
        );
        assert!(!p.scores.iter().any(|s| s.path == "src/unrelated.rs"));
        let used: u64 = p.allocation.primary.files.iter().map(|f| f.tokens).sum();
        assert_eq!(p.total_used, used);
        assert_eq!(
            p.metrics.utilization,
            ((used as f64 / 90_000.0) * 1000.0).round() / 1000.0
        );
        assert!(!p.overflow.occurred);
    }

    #[test]
    fn overflow_strategies() {
        let dir = project();
        // The biggest file is ~8,300 tokens; a primary tier of 7,500 holds one or two.
        let total = 10_000 + 15_000;
        let prioritize = plan_with(dir.path(), OverflowStrategy::Prioritize, total).unwrap();
        assert!(prioritize.overflow.occurred);
        assert_eq!(
            prioritize.overflow.strategy_applied.as_deref(),
            Some("prioritize")
        );
        assert!(prioritize.allocation.primary.total_tokens <= 7_500);
        assert_eq!(
            prioritize.allocation.primary.files.len() + prioritize.overflow.files_affected.len(),
            3
        );

        let summarize = plan_with(dir.path(), OverflowStrategy::Summarize, total).unwrap();
        assert_eq!(
            summarize.allocation.primary.files.len(),
            3,
            "every file kept, some shorter"
        );
        assert!(
            summarize
                .allocation
                .primary
                .files
                .iter()
                .any(|f| f.level != "full")
        );
        assert!(summarize.allocation.primary.total_tokens <= 7_500);

        let truncate = plan_with(dir.path(), OverflowStrategy::Truncate, total).unwrap();
        assert!(
            truncate
                .allocation
                .primary
                .files
                .iter()
                .any(|f| f.truncated)
        );
        assert!(truncate.allocation.primary.total_tokens <= 7_500);

        let error = plan_with(dir.path(), OverflowStrategy::Error, total).unwrap_err();
        assert!(
            error.to_string().contains("the primary tier overflows"),
            "{error}"
        );

        let no_room = plan_with(dir.path(), OverflowStrategy::Prioritize, 9_000).unwrap_err();
        assert!(matches!(no_room, PlanError::NoRoom { .. }));
    }

    #[test]
    fn the_saved_state_names_the_task_and_its_files() {
        let dir = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("secret.rs"),
            "pub fn parser_token() {}\n",
        )
        .unwrap();
        let state = ContextState {
            objective: Some("speed up the parser".into()),
            next_actions: vec![NextAction {
                action: "cache".into(),
                target: "the token table".into(),
                priority: 1,
                context_needed: vec![
                    "src/unrelated.rs".into(),
                    outside.path().join("secret.rs").display().to_string(),
                ],
                source: String::new(),
            }],
            ..ContextState::default()
        };
        let task = task_of(&state);
        assert_eq!(task, "speed up the parser\ncache the token table");
        let config = BudgetConfig::default();
        let input = PlanInput {
            project: dir.path(),
            task,
            state: Some(&state),
            transcript: None,
            files: None,
            changed: None,
            left_out: Vec::new(),
            total_budget: 100_000,
            budget_source: "test".into(),
            session: None,
            config: &config,
            cache_dir: None,
            now_ms: crate::time::now_ms(),
            repositories: &crate::git::Repositories::default(),
            repository: &crate::git::Access::ByPath,
        };
        let scores = score_candidates(&input, &score::keywords(&input.task));
        let named = scores
            .iter()
            .find(|s| s.path == "src/unrelated.rs")
            .expect("context_needed is a candidate");
        assert_eq!(named.reasons, vec!["context_needed"]);
        assert_eq!(named.mentions, 2);
        assert!(
            scores.iter().all(|s| !s.path.contains("secret")),
            "nothing outside the project"
        );
    }
}
