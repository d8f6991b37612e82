//! What the tests of one harness each need: a small git project, fixtures
//! placed in this run's directories, and doctor's check of the harness.

use hookd_tests::{GitRepo, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `parser/` in the sandbox: a git repository with one committed file.
pub fn parser_project(sb: &Sandbox) -> (PathBuf, GitRepo) {
    let project = sb.path().join("parser");
    let repo = GitRepo::init(&project);
    repo.write("src/parser.rs", "pub fn parse() {}\n");
    repo.commit_all("start");
    (project, repo)
}

/// `hookctl doctor`'s check named `name`, run in `dir`.
pub fn doctor_check(sb: &Sandbox, dir: &Path, name: &str) -> Value {
    let out = sb.hookctl_in(dir, &["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {report:#}"))
}

/// `value` with each placeholder of `places` in its strings replaced by
/// that path of this run (`$CWD` by the project, say).
pub fn placed(value: Value, places: &[(&str, &Path)]) -> Value {
    match value {
        Value::String(s) => Value::String(places.iter().fold(s, |s, (name, path)| {
            s.replace(name, &path.display().to_string())
        })),
        Value::Array(items) => items.into_iter().map(|v| placed(v, places)).collect(),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| (k, placed(v, places)))
            .collect(),
        other => other,
    }
}
