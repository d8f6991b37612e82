//! What a hook printed: nothing, a harness's JSON answer, or PreCompact's
//! plain text.

use crate::normalize::Normalizer;
use serde_json::Value;
use std::process::Output;

/// A hook's answer. Derefs to its JSON (`Null` for none, a string for
/// text) so that a test may still look at one field of it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    raw: Value,
}

impl HookAnswer {
    /// A hook's stdout: JSON if it is JSON, else text; empty is silent.
    pub fn parse(stdout: &str) -> HookAnswer {
        let raw = if stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(stdout).unwrap_or_else(|_| Value::String(stdout.to_owned()))
        };
        HookAnswer { raw }
    }

    /// PreCompact's answer, which is always text.
    pub fn text_of(out: &Output) -> HookAnswer {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let raw = if text.trim().is_empty() {
            Value::Null
        } else {
            Value::String(text)
        };
        HookAnswer { raw }
    }

    /// Plain text, not a harness's JSON answer.
    pub fn is_text(&self) -> bool {
        self.raw.is_string()
    }

    /// The JSON answer, `Null` for none.
    pub fn json(&self) -> &Value {
        &self.raw
    }

    /// The text the model is given (`additionalContext`), or "".
    pub fn context(&self) -> &str {
        self.raw["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or("")
    }

    /// What the person is shown (`systemMessage`), or "".
    pub fn system_message(&self) -> &str {
        self.raw["systemMessage"].as_str().unwrap_or("")
    }

    /// The plain text answer, or "".
    pub fn text(&self) -> &str {
        self.raw.as_str().unwrap_or("")
    }

    /// The whole answer as text to snapshot: one `field: value` line per
    /// JSON leaf (dotted path), a text of several lines indented below its
    /// field, with the run's varying parts normalized.
    pub fn normalized(&self, normalizer: &Normalizer) -> String {
        let mut out = String::new();
        match &self.raw {
            Value::Null => out.push_str("(no output)\n"),
            Value::String(text) => out.push_str(text),
            json => leaves(json, "", &mut out),
        }
        normalizer.normalize(&out)
    }
}

impl std::ops::Deref for HookAnswer {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.raw
    }
}

impl PartialEq<Value> for HookAnswer {
    fn eq(&self, other: &Value) -> bool {
        self.raw == *other
    }
}

impl std::fmt::Display for HookAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.raw.fmt(f)
    }
}

fn leaves(value: &Value, path: &str, out: &mut String) {
    match value {
        Value::Object(map) => {
            // In key order: serde_json keeps a map's order only where a
            // crate of the build asks it to, so hookd's order is the build's.
            let mut fields: Vec<_> = map.iter().collect();
            fields.sort_by_key(|(key, _)| *key);
            for (key, v) in fields {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                leaves(v, &path, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, &format!("{path}[{i}]"), out);
            }
        }
        Value::String(text) if text.contains('\n') => {
            out.push_str(&format!("{path}: |\n"));
            for line in text.lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&format!("  {line}\n"));
                }
            }
        }
        other => out.push_str(&format!("{path}: {other}\n")),
    }
}
