//! The daemon's one use of serde_yaml: the project's workflow file and the
//! `hookd-state` block of a compaction summary. Both are untrusted text.

use serde::de::DeserializeOwned;

/// `text` read as `T`; the error names the key and the line.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
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
}
