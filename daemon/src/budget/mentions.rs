//! How often a session's transcript names each project file: one pass over
//! the transcript's end, each path-like word looked up among the project's
//! files, whatever their number.

use crate::tail::open_regular;
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
    let Some((mut file, meta)) = open_regular(transcript)? else {
        return Ok(HashMap::new());
    };
    let len = meta.len();
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
    let known: HashMap<&[u8], &String> = files
        .iter()
        .filter(|f| f.len() >= 3)
        .map(|f| (f.as_bytes(), f))
        .collect();
    let root = format!("{}/", project.display());
    let root = root.as_bytes();
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut i = 0;
    while i < text.len() {
        if !is_path_byte(text[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < text.len() && is_path_byte(text[i]) {
            i += 1;
        }
        let mut word = &text[start..i];
        // A trailing dot ends a sentence, not a path.
        while let Some(shorter) = word.strip_suffix(b".") {
            word = shorter;
        }
        // The word is a file, or ends in one under the project's own directory
        // (tool calls use absolute paths); the longest such file counts.
        let found = known.get(word).or_else(|| {
            memchr::memchr_iter(b'/', word).find_map(|slash| {
                let file = known.get(&word[slash + 1..])?;
                text[..start + slash + 1].ends_with(root).then_some(file)
            })
        });
        if let Some(file) = found {
            *counts.entry((*file).clone()).or_insert(0) += 1;
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
    fn a_project_directory_with_a_space_still_counts() {
        let files = vec!["src/lib.rs".to_string(), "lib.rs".to_string()];
        let text =
            br#"{"file_path":"/home/u/my proj/src/lib.rs"} and /home/u/other proj/src/lib.rs"#;
        let counts = count_in(text, Path::new("/home/u/my proj"), &files);
        assert_eq!(counts.get("src/lib.rs"), Some(&1), "{counts:?}");
        assert_eq!(
            counts.get("lib.rs"),
            None,
            "the longest file under the project"
        );
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
