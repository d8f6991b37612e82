//! The daemon's one use of serde_yaml: the project's workflow file and the
//! `hookd-state` block of a compaction summary. Both are untrusted text, so
//! both are bounded in size and nesting before the parser sees them.

use protocol::yaml_nesting;
use serde::de::DeserializeOwned;

/// Largest text [`from_str`] parses: a hand-written file (the workflow
/// file) is far smaller, and the parser takes about 80 ms for this much.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// Largest text [`to_json`] parses: a summary's block is a few lines.
pub const MAX_DATA_BYTES: usize = 64 * 1024;

/// Why text is not parsed at all: too large, or nested too deep for the
/// parser, whose time grows with the square of the depth.
fn refused(text: &str, max_bytes: usize) -> Option<String> {
    if text.len() > max_bytes {
        return Some(format!(
            "{} KiB of YAML is more than hookd reads ({} KiB)",
            text.len().div_ceil(1024),
            max_bytes / 1024
        ));
    }
    yaml_nesting::check(text, yaml_nesting::MAX_DEPTH)
        .err()
        .map(|e| e.to_string())
}

/// `text` read as `T`; the error names the key and the line.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    if let Some(why) = refused(text, MAX_FILE_BYTES) {
        return Err(why);
    }
    serde_yaml::from_str(text).map_err(|e| e.to_string())
}

/// Why [`to_json`] gave no data.
#[derive(Debug)]
pub enum NotData {
    /// Not YAML (or not all of it): the parser's words.
    Syntax(String),
    /// A YAML tag (`!x ...`): refused, as in the configuration, since nothing
    /// hookd reads has a use for one.
    Tag(String),
}

impl std::fmt::Display for NotData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotData::Syntax(e) => f.write_str(e),
            NotData::Tag(tag) => write!(f, "YAML tags are not read; `{tag}` was found"),
        }
    }
}

/// `text` read as plain data (maps, lists, strings, numbers), for a reader
/// that takes what it can use field by field.
pub fn to_json(text: &str) -> Result<serde_json::Value, NotData> {
    if let Some(why) = refused(text, MAX_DATA_BYTES) {
        return Err(NotData::Syntax(why));
    }
    let value: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|e| NotData::Syntax(e.to_string()))?;
    if let Some(tag) = protocol::config::first_tag(&value) {
        return Err(NotData::Tag(tag.to_string()));
    }
    serde_json::to_value(&value).map_err(|e| NotData::Syntax(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_data_reads_and_tags_are_refused() {
        let v = to_json("a: [1, two]\nb: {c: null}\n").unwrap();
        assert_eq!(v, serde_json::json!({"a": [1, "two"], "b": {"c": null}}));
        let err = to_json("a: [1, !evil {x: 1}]\n").unwrap_err();
        assert!(matches!(&err, NotData::Tag(_)), "{err}");
        assert!(err.to_string().contains("!evil"), "{err}");
        assert!(to_json("a: [unclosed\n").is_err());
    }

    #[test]
    fn text_too_large_or_too_deep_is_refused_unparsed() {
        let started = std::time::Instant::now();
        let deep = format!("a: {}", "[".repeat(60_000));
        let err = from_str::<serde_yaml::Value>(&deep).unwrap_err();
        assert!(
            err.contains("nested more than 64") && err.contains("line 1"),
            "{err}"
        );
        let err = to_json(&"[".repeat(70_000)).unwrap_err().to_string();
        assert!(err.contains("more than hookd reads (64 KiB)"), "{err}");
        let err = to_json(&"[".repeat(60_000)[..30_000])
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested more than 64"), "{err}");
        let flat = "- x\n".repeat(MAX_FILE_BYTES / 4 + 1);
        let err = from_str::<serde_yaml::Value>(&flat).unwrap_err();
        assert!(err.contains("more than hookd reads (256 KiB)"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(from_str::<serde_yaml::Value>(&"- x\n".repeat(MAX_FILE_BYTES / 4)).is_ok());
    }
}
