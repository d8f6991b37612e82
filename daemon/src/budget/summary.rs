//! A file at four levels of detail:
//!
//! - `full`: the whole file;
//! - `detailed` (≤ 2,000 tokens): its structure — signatures, type and
//!   class definitions, interfaces, doc comments — from the real parser;
//! - `summary` (≤ 500 tokens): what it is for, its top-level items, its size;
//! - `stub` (≤ 100 tokens): path, type, last modified, line count.
//!
//! Summaries are cached in `.workflow/summaries/`, keyed by the file's path
//! and invalidated when its size or modification time changes.

use super::files::{self, FileType};
use super::outline::{self, Lang};
use super::tokens::{self, TextKind};
use crate::project_fs::Dir;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::UNIX_EPOCH;

pub const DETAILED_TOKENS: usize = 2000;
pub const SUMMARY_TOKENS: usize = 500;
pub const STUB_TOKENS: usize = 100;
/// The cache directory, inside `.workflow/`.
pub const CACHE_DIR: &str = "summaries";
/// Largest file read for a summary; larger ones are summarized from their start.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Stub,
    Summary,
    Detailed,
    Full,
}

impl Level {
    pub fn parse(name: &str) -> Option<Level> {
        Some(match name {
            "full" => Level::Full,
            "detailed" => Level::Detailed,
            "summary" => Level::Summary,
            "stub" => Level::Stub,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Detailed => "detailed",
            Level::Summary => "summary",
            Level::Stub => "stub",
        }
    }

    /// The next shorter level, if any.
    pub fn shorter(self) -> Option<Level> {
        match self {
            Level::Full => Some(Level::Detailed),
            Level::Detailed => Some(Level::Summary),
            Level::Summary => Some(Level::Stub),
            Level::Stub => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSummary {
    pub path: String,
    pub level: Level,
    pub tokens: usize,
    pub text: String,
    /// Came from the cache.
    #[serde(skip)]
    pub cached: bool,
}

/// Cache entry: the summary and the file stamp it was made from.
#[derive(Serialize, Deserialize)]
struct Cached {
    len: u64,
    mtime_ns: u128,
    summary: FileSummary,
}

fn stamp(meta: &std::fs::Metadata) -> (u64, u128) {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    (meta.len(), mtime)
}

/// `rel` (inside `project`) at `level`; with `cache_dir`, from and into the cache.
pub fn summarize(
    project: &Path,
    rel: &str,
    level: Level,
    cache_dir: Option<&Dir>,
) -> std::io::Result<FileSummary> {
    let path = project.join(rel);
    let meta = regular_file(project, &path)?;
    let (len, mtime_ns) = stamp(&meta);
    let cache_file =
        cache_dir.map(|d| (d, format!("{}.{}.json", files::hash(rel), level.as_str())));
    if let Some((dir, file)) = &cache_file
        && let Ok(Some(bytes)) = dir.read(file, crate::workflow::MAX_FILE_BYTES)
        && let Ok(entry) = serde_json::from_slice::<Cached>(&bytes)
        && entry.len == len
        && entry.mtime_ns == mtime_ns
        && entry.summary.path == rel
    {
        return Ok(FileSummary {
            cached: true,
            ..entry.summary
        });
    }
    let summary = make(&path, rel, level, &meta)?;
    if let Some((dir, file)) = &cache_file {
        let entry = Cached {
            len,
            mtime_ns,
            summary: summary.clone(),
        };
        let _ = dir.write_cache(file, &serde_json::to_vec(&entry).unwrap_or_default());
    }
    Ok(summary)
}

/// Estimated tokens of `rel` in full, from its size alone (no read).
pub fn full_tokens(project: &Path, rel: &str) -> usize {
    let len = regular_file(project, &project.join(rel)).map_or(0, |m| m.len());
    tokens::estimate_bytes(len as usize, TextKind::of_path(rel))
}

/// A repository may commit a symlink to any file of the user's: only a
/// regular file that really lies inside the project is ever read.
fn regular_file(project: &Path, path: &Path) -> std::io::Result<std::fs::Metadata> {
    let meta = std::fs::symlink_metadata(path)?;
    let inside = || -> Option<bool> {
        Some(
            path.canonicalize()
                .ok()?
                .starts_with(project.canonicalize().ok()?),
        )
    };
    if meta.is_file() && inside() == Some(true) {
        Ok(meta)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file inside the project",
                path.display()
            ),
        ))
    }
}

fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn make(
    path: &Path,
    rel: &str,
    level: Level,
    meta: &std::fs::Metadata,
) -> std::io::Result<FileSummary> {
    let kind = TextKind::of_path(rel);
    let text = match level {
        Level::Stub => stub(rel, meta, read_text(path).ok().map(|t| t.lines().count())),
        Level::Full => read_text(path)?,
        Level::Detailed => {
            tokens::truncate_to(&detailed(rel, &read_text(path)?), DETAILED_TOKENS, kind)
        }
        Level::Summary => {
            let content = read_text(path)?;
            tokens::truncate_to(&summary(rel, &content, meta), SUMMARY_TOKENS, kind)
        }
    };
    let tokens = tokens::estimate(&text, kind);
    Ok(FileSummary {
        path: rel.to_owned(),
        level,
        tokens,
        text,
        cached: false,
    })
}

fn modified(meta: &std::fs::Metadata) -> String {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| crate::time::rfc3339(d.as_millis() as u64))
        .unwrap_or_else(|| "unknown".into())
}

fn stub(rel: &str, meta: &std::fs::Metadata, lines: Option<usize>) -> String {
    let kind = files::file_type(rel).as_str();
    match lines {
        Some(n) => format!(
            "`{rel}`: {kind} file, {n} lines, last modified {}\n",
            modified(meta)
        ),
        None => format!(
            "`{rel}`: {kind} file, {} bytes, last modified {}\n",
            meta.len(),
            modified(meta)
        ),
    }
}

/// Structure only: an outline for code, headings for Markdown, the start otherwise.
fn detailed(rel: &str, content: &str) -> String {
    if let Some(lang) = Lang::of_path(rel) {
        let outline = outline::outline(content, lang);
        let text = outline.render();
        if !text.trim().is_empty() {
            return format!("`{rel}` (outline: bodies left out)\n\n{text}");
        }
    }
    if files::file_type(rel) == FileType::Docs && rel.ends_with(".md") {
        let headings: Vec<&str> = content.lines().filter(|l| l.starts_with('#')).collect();
        if !headings.is_empty() {
            let first = first_paragraph(content).unwrap_or_default();
            return format!("`{rel}` (headings)\n\n{first}\n\n{}\n", headings.join("\n"));
        }
    }
    format!("`{rel}` (start)\n\n{content}")
}

/// The first paragraph of prose (not a heading).
fn first_paragraph(content: &str) -> Option<String> {
    let para: Vec<&str> = content
        .lines()
        .skip_while(|l| l.trim().is_empty() || l.starts_with('#'))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    (!para.is_empty()).then(|| para.join(" "))
}

/// What the file is for, its top-level items, its size.
fn summary(rel: &str, content: &str, meta: &std::fs::Metadata) -> String {
    let lines = content.lines().count();
    let kind = TextKind::of_path(rel);
    let mut out = format!(
        "`{rel}`: {} file, {lines} lines, {} bytes, ~{} tokens, last modified {}\n",
        files::file_type(rel).as_str(),
        meta.len(),
        tokens::estimate(content, kind),
        modified(meta)
    );
    if let Some(lang) = Lang::of_path(rel) {
        let o = outline::outline(content, lang);
        if let Some(doc) = o
            .module_doc
            .as_deref()
            .map(clean_doc)
            .filter(|d| !d.is_empty())
        {
            out += &format!("Purpose: {doc}\n");
        }
        let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
        for item in o.items.iter().filter(|i| !i.name.is_empty()) {
            let name = if item.members.is_empty() {
                item.name.clone()
            } else {
                let members: Vec<&str> = item
                    .members
                    .iter()
                    .map(|m| m.name.as_str())
                    .filter(|n| !n.is_empty())
                    .collect();
                format!("{} ({})", item.name, members.join(", "))
            };
            match groups.iter_mut().find(|(k, _)| *k == item.kind) {
                Some((_, names)) => names.push(name),
                None => groups.push((item.kind, vec![name])),
            }
        }
        for (kind, names) in groups {
            // "classes", "functions", "structs".
            let plural = if kind.ends_with('s') { "es" } else { "s" };
            out += &format!("{kind}{plural}: {}\n", names.join(", "));
        }
    } else if let Some(first) = first_paragraph(content) {
        out += &format!("Purpose: {first}\n");
        let headings: Vec<&str> = content
            .lines()
            .filter(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .collect();
        if !headings.is_empty() {
            out += &format!("Sections: {}\n", headings.join("; "));
        }
    }
    out
}

/// A doc comment without its comment markers, on one line.
fn clean_doc(doc: &str) -> String {
    doc.lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("//!")
                .trim_start_matches("///")
                .trim_start_matches("//")
                .trim_start_matches("/**")
                .trim_start_matches("/*!")
                .trim_end_matches("*/")
                .trim_start_matches('*')
                .trim_matches('"')
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUST: &str = "//! OAuth tokens for the client.\n\n/// A token.\npub struct Token {\n    pub value: String,\n}\n\nimpl Token {\n    pub fn expired(&self) -> bool {\n        false\n    }\n}\n\npub fn refresh(t: &Token) -> Token {\n    t.clone()\n}\n";

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/token.rs"), RUST).unwrap();
        std::fs::write(
            dir.path().join("notes.md"),
            "# Notes\n\nHow the client logs in.\n\n## Flow\n\nstep\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn every_level_of_a_rust_file() {
        let p = project();
        let full = summarize(p.path(), "src/token.rs", Level::Full, None).unwrap();
        assert_eq!(full.text, RUST);
        let detailed = summarize(p.path(), "src/token.rs", Level::Detailed, None).unwrap();
        assert!(
            detailed
                .text
                .contains("pub fn refresh(t: &Token) -> Token { … }")
                && !detailed.text.contains("t.clone()"),
            "{}",
            detailed.text
        );
        assert!(detailed.tokens <= DETAILED_TOKENS);
        let summary = summarize(p.path(), "src/token.rs", Level::Summary, None).unwrap();
        assert!(
            summary
                .text
                .contains("Purpose: OAuth tokens for the client."),
            "{}",
            summary.text
        );
        assert!(
            summary.text.contains("structs: Token")
                && summary.text.contains("functions: refresh")
                && summary.text.contains("impls: Token (expired)"),
            "{}",
            summary.text
        );
        assert!(summary.tokens <= SUMMARY_TOKENS);
        let stub = summarize(p.path(), "src/token.rs", Level::Stub, None).unwrap();
        assert!(
            stub.text.starts_with("`src/token.rs`: source file,")
                && stub.text.contains("last modified"),
            "{}",
            stub.text
        );
        assert!(stub.tokens <= STUB_TOKENS);
    }

    #[test]
    fn markdown_gets_headings_and_purpose() {
        let p = project();
        let summary = summarize(p.path(), "notes.md", Level::Summary, None).unwrap();
        assert!(
            summary.text.contains("Purpose: How the client logs in.")
                && summary.text.contains("Sections: Notes; Flow"),
            "{}",
            summary.text
        );
        let detailed = summarize(p.path(), "notes.md", Level::Detailed, None).unwrap();
        assert!(
            detailed.text.contains("# Notes\n## Flow"),
            "{}",
            detailed.text
        );
    }

    #[test]
    fn a_symlink_out_of_the_project_is_never_read() {
        let p = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa.rs"), "pub fn secret_key() {}\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("id_rsa.rs"),
            p.path().join("src/key.rs"),
        )
        .unwrap();
        assert!(summarize(p.path(), "src/key.rs", Level::Full, None).is_err());
        assert_eq!(full_tokens(p.path(), "src/key.rs"), 0);
    }

    #[test]
    fn the_cache_is_used_until_the_file_changes() {
        let p = project();
        let (cache, _) = crate::workflow::Workflow::new(p.path())
            .ensure(false)
            .unwrap()
            .create_dir(CACHE_DIR)
            .unwrap();
        let first = summarize(p.path(), "src/token.rs", Level::Detailed, Some(&cache)).unwrap();
        assert!(!first.cached);
        let second = summarize(p.path(), "src/token.rs", Level::Detailed, Some(&cache)).unwrap();
        assert!(second.cached);
        assert_eq!(second.text, first.text);
        std::fs::write(p.path().join("src/token.rs"), "pub fn other() {}\n").unwrap();
        let third = summarize(p.path(), "src/token.rs", Level::Detailed, Some(&cache)).unwrap();
        assert!(
            !third.cached && third.text.contains("pub fn other()"),
            "{}",
            third.text
        );
    }

    #[test]
    fn a_huge_file_is_cut_to_its_level() {
        let p = project();
        let big: String = (0..5000)
            .map(|i| format!("pub fn f{i}(x: u32) -> u32 {{ x }}\n"))
            .collect();
        std::fs::write(p.path().join("src/big.rs"), &big).unwrap();
        let detailed = summarize(p.path(), "src/big.rs", Level::Detailed, None).unwrap();
        assert!(detailed.tokens <= DETAILED_TOKENS, "{}", detailed.tokens);
        assert!(detailed.text.contains("more lines)"));
        let summary = summarize(p.path(), "src/big.rs", Level::Summary, None).unwrap();
        assert!(summary.tokens <= SUMMARY_TOKENS, "{}", summary.tokens);
    }
}
