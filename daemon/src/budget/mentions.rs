//! How often a session's transcript names each project file: one pass of
//! an Aho-Corasick automaton over the transcript's end, whatever the
//! number of files.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The transcript's last this many bytes are read.
pub const SCAN_BYTES: u64 = 8 * 1024 * 1024;

/// Mentions of each of `files` (project-relative) in the end of `transcript`.
/// A path counts where it stands alone or follows the project's own
/// directory (tool calls use absolute paths); `src/lib.rs` inside
/// `daemon/src/lib.rs` does not count for `src/lib.rs`.
pub fn count(
    transcript: &Path,
    project: &Path,
    files: &[String],
) -> std::io::Result<HashMap<String, u32>> {
    let mut file = std::fs::File::open(transcript)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(SCAN_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut text = Vec::with_capacity((len - start) as usize);
    file.take(SCAN_BYTES).read_to_end(&mut text)?;
    Ok(count_in(&text, project, files))
}

fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/')
}

/// Mentions of `files` in `text`.
pub fn count_in(text: &[u8], project: &Path, files: &[String]) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    let patterns: Vec<&String> = files.iter().filter(|f| f.len() >= 3).collect();
    // A DFA over thousands of paths takes longer to build than to run.
    let Ok(automaton) = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(&patterns)
    else {
        return counts;
    };
    let root = format!("{}/", project.display());
    let root = root.as_bytes();
    for m in automaton.find_iter(text) {
        let before = &text[..m.start()];
        let after = text.get(m.end()).copied();
        let starts_clean = match before.last() {
            None => true,
            Some(b'/') => before.ends_with(root),
            Some(b) => !is_path_byte(*b),
        };
        // A trailing dot ends a sentence, not a path.
        let ends_clean = match after {
            None => true,
            Some(b'.') => !text
                .get(m.end() + 1)
                .is_some_and(|b| b.is_ascii_alphanumeric()),
            Some(b) => !is_path_byte(b),
        };
        if starts_clean && ends_clean {
            *counts
                .entry(patterns[m.pattern().as_usize()].clone())
                .or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_count_alone_or_under_the_project() {
        let files: Vec<String> = ["src/lib.rs", "daemon/src/lib.rs", "README.md"]
            .map(String::from)
            .to_vec();
        let text = br#"{"file_path":"/home/u/proj/src/lib.rs"} see `src/lib.rs`. Edit daemon/src/lib.rs and /elsewhere/src/lib.rs; README.md, README.mdx"#;
        let counts = count_in(text, Path::new("/home/u/proj"), &files);
        assert_eq!(counts.get("src/lib.rs"), Some(&2), "{counts:?}");
        assert_eq!(counts.get("daemon/src/lib.rs"), Some(&1));
        assert_eq!(counts.get("README.md"), Some(&1));
    }

    #[test]
    fn reads_only_the_end_of_a_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut text = b"src/old.rs\n".to_vec();
        text.resize(SCAN_BYTES as usize + 100, b' ');
        text.extend_from_slice(b"\nsrc/new.rs\n");
        std::fs::write(&path, text).unwrap();
        let files = vec!["src/old.rs".to_string(), "src/new.rs".to_string()];
        let counts = count(&path, dir.path(), &files).unwrap();
        assert_eq!(counts.get("src/new.rs"), Some(&1));
        assert_eq!(counts.get("src/old.rs"), None);
    }
}
