//! All Handlebars code: the resume prompt, the progress summary and the
//! PreCompact instructions, rendered in strict mode without HTML escaping.
//!
//! The built-in templates (`templates/*.hbs`) are compiled into the
//! binary. A file of the same name in the user's config directory
//! (`templates/`) or the project's `.workflow/templates/` overrides one (the
//! project's wins). A project's template is repository content: it is used
//! only once the user trusts that exact file (`hookctl trust`), and it is
//! read without following links. Every override is data: at most 64 KiB,
//! no partials or decorators (a partial can recurse until the stack
//! overflows), blocks nested at most [`MAX_BLOCK_DEPTH`] deep. A broken or
//! refused override is reported with its name (and line), and the built-in
//! one is used instead.
//!
//! Every value a template sees is cleaned first ([`clean_view`]), so a
//! user's own template gets the same protection as the built-in ones: a
//! value from a repository, a session file, a payload or the memory cannot
//! start a line, open or close a code span, or carry a control character.

use crate::workflow::Workflow;
use handlebars::{Handlebars, handlebars_helper, no_escape};
use protocol::config::Config;
use protocol::trust::{MAX_FILE_BYTES, ProjectTrust, TEMPLATES_DIR};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Deepest nesting of blocks (`{{#if}}`, `{{#each}}`, …) an override may use.
pub const MAX_BLOCK_DEPTH: usize = 16;

pub const RESUME_PROMPT: &str = "resume_prompt";
/// The resume prompt as compressed, token-saving YAML.
pub const RESUME_PROMPT_YAML: &str = "resume_prompt.yaml";
/// The resume prompt as one `<workflow_context>` XML message.
pub const RESUME_PROMPT_XML: &str = "resume_prompt.xml";
pub const PROGRESS_SUMMARY: &str = "progress_summary";
pub const PRECOMPACT_INSTRUCTIONS: &str = "precompact_instructions";
/// The cross-task memory's part of resume prompts (and its SessionStart lessons).
pub const MEMORY_SECTION: &str = "memory_section";

/// A template's file name: `<name>.hbs`, with `.md` for names without a format.
pub fn file_name(name: &str) -> String {
    if name.contains('.') {
        format!("{name}.hbs")
    } else {
        format!("{name}.md.hbs")
    }
}

/// Each template by name, as compiled in.
pub const NAMES: [&str; 6] = [
    RESUME_PROMPT,
    RESUME_PROMPT_YAML,
    RESUME_PROMPT_XML,
    PROGRESS_SUMMARY,
    PRECOMPACT_INSTRUCTIONS,
    MEMORY_SECTION,
];

handlebars_helper!(pct: |v: Value| match v.as_f64() {
    Some(f) => format!("{:.0}%", f * 100.0),
    None => "unknown".to_owned(),
});

handlebars_helper!(join: |v: Value| match v {
    Value::Array(items) => items
        .iter()
        .map(|i| match i { Value::String(s) => s.clone(), other => other.to_string() })
        .collect::<Vec<_>>()
        .join(", "),
    Value::Null => String::new(),
    other => other.to_string(),
});

handlebars_helper!(xml: |v: Value| {
    let text = match v { Value::String(s) => s, Value::Null => String::new(), other => other.to_string() };
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
});

handlebars_helper!(oneline: |v: Value| match v {
    Value::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
    Value::Null => String::new(),
    other => other.to_string(),
});

/// Longest value a template sees, in characters.
pub const MAX_VALUE_CHARS: usize = 2_000;

/// Values that hookd rendered itself with its own templates, from values
/// already cleaned: their lines are its own.
const FRAGMENTS: [&str; 2] = ["progress_summary", "memory_section"];

/// `data` as templates may see it: every string on one line (control
/// characters, newlines included, become spaces), clipped to
/// [`MAX_VALUE_CHARS`], with backticks turned into quotes (no value can
/// open or close a code span) and typographic quotes into plain ones (the
/// templates quote repository text with them), except the top-level
/// [`FRAGMENTS`].
pub fn clean_view(data: &Value) -> Value {
    match data {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = match value {
                        Value::String(_) if FRAGMENTS.contains(&key.as_str()) => value.clone(),
                        other => clean_value(other),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        other => clean_value(other),
    }
}

fn clean_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clean_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(clean_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), clean_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// One value's text, as [`clean_view`] shows it.
pub fn clean_text(text: &str) -> String {
    let line = protocol::text::one_line(text)
        .replace('`', "'")
        .replace(['“', '”'], "\"");
    protocol::text::clip(&line, MAX_VALUE_CHARS)
}

pub struct Renderer {
    hb: Handlebars<'static>,
    /// Names whose override compiled; their built-in twin is `builtin/<name>`.
    overridden: Vec<String>,
    /// Overrides that could not be used, and why.
    pub problems: Vec<String>,
}

fn engine() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(no_escape);
    hb.register_helper("pct", Box::new(pct));
    hb.register_helper("join", Box::new(join));
    hb.register_helper("xml", Box::new(xml));
    hb.register_helper("oneline", Box::new(oneline));
    hb
}

/// Where overrides come from, in order of precedence.
pub enum Overrides {
    /// A project's `.workflow/templates/`, with what the user trusts of it.
    Project {
        root: PathBuf,
        trust: Option<ProjectTrust>,
    },
    /// A directory of the user's own.
    User(PathBuf),
}

impl Overrides {
    /// The text of override `file`, or why it cannot be used; `None` when
    /// there is no such override.
    fn read(&self, file: &str) -> Option<(PathBuf, Result<String, String>)> {
        match self {
            Overrides::Project { root, trust } => {
                let workflow = Workflow::new(root);
                let path = workflow.path("templates").join(file);
                let bytes = workflow
                    .open()
                    .and_then(|dir| dir.open_dir("templates"))
                    .and_then(|dir| dir.read(file, MAX_FILE_BYTES));
                let text = match bytes {
                    Ok(None) => return None,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                    Err(e) => Err(format!("cannot be read ({e})")),
                    Ok(Some(bytes)) => {
                        let rel = format!("{TEMPLATES_DIR}/{file}");
                        if trust.as_ref().is_some_and(|t| t.allows(&rel, &bytes)) {
                            String::from_utf8(bytes).map_err(|_| "is not UTF-8".to_owned())
                        } else {
                            Err(format!(
                                "is not used until you trust this project (`hookctl trust {}`)",
                                root.display()
                            ))
                        }
                    }
                };
                Some((path, text))
            }
            Overrides::User(dir) => {
                let path = dir.join(file);
                let text = match std::fs::metadata(&path) {
                    Err(_) => return None,
                    Ok(m) if m.len() > MAX_FILE_BYTES => {
                        Err(format!("is larger than {} KiB", MAX_FILE_BYTES / 1024))
                    }
                    Ok(_) => {
                        std::fs::read_to_string(&path).map_err(|e| format!("cannot be read ({e})"))
                    }
                };
                Some((path, text))
            }
        }
    }
}

/// Refuses what handlebars could recurse on without bound: partials and
/// decorators, and blocks nested deeper than [`MAX_BLOCK_DEPTH`].
fn check_structure(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    for (i, _) in text.match_indices("{{") {
        let tag = text[i + 2..].trim_start_matches(['{', '~']).trim_start();
        if tag.starts_with('>')
            || tag.starts_with("#>")
            || tag.starts_with("#*")
            || tag.starts_with('*')
        {
            let line = text[..i].lines().count().max(1);
            return Err(format!(
                "uses a partial or decorator at line {line}, which hookd does not allow"
            ));
        }
        if tag.starts_with('#') {
            depth += 1;
            if depth > MAX_BLOCK_DEPTH {
                let line = text[..i].lines().count().max(1);
                return Err(format!(
                    "nests blocks deeper than {MAX_BLOCK_DEPTH} at line {line}"
                ));
            }
        } else if tag.starts_with('/') {
            depth = depth.saturating_sub(1);
        }
    }
    Ok(())
}

impl Renderer {
    /// The built-in templates only.
    pub fn built_in() -> Renderer {
        Renderer::load(&[])
    }

    /// Built-ins, overridden by the project's trusted templates and the user's.
    pub fn for_project(project: Option<&Path>, config: &Config) -> Renderer {
        let mut sources = Vec::new();
        if let Some(root) = project {
            sources.push(Overrides::Project {
                root: root.to_path_buf(),
                trust: config.trust.clone(),
            });
        }
        if let Some(c) = protocol::paths::config_dir() {
            sources.push(Overrides::User(c.join("templates")));
        }
        Renderer::load(&sources)
    }

    /// Built-ins, overridden by files from `sources` (earlier sources win).
    pub fn load(sources: &[Overrides]) -> Renderer {
        let mut hb = engine();
        let mut overridden = Vec::new();
        let mut problems = Vec::new();
        for name in NAMES {
            let file = file_name(name);
            let text = protocol::templates::built_in(&file).expect("every name has a built-in");
            hb.register_template_string(&format!("builtin/{name}"), text)
                .expect("built-in templates compile");
            let mut chosen = false;
            for source in sources {
                let Some((path, text)) = source.read(&file) else {
                    continue;
                };
                // A copy an older install made, never changed: not the
                // person's own, and stale after an upgrade.
                if text
                    .as_ref()
                    .is_ok_and(|t| protocol::templates::is_shipped_copy(&file, t.as_bytes()))
                {
                    continue;
                }
                let text = match text.and_then(|t| check_structure(&t).map(|()| t)) {
                    Ok(text) => text,
                    Err(why) => {
                        problems.push(format!(
                            "template {} {why}; using the built-in one",
                            path.display()
                        ));
                        continue;
                    }
                };
                match hb.register_template_string(name, &text) {
                    Ok(()) => {
                        chosen = true;
                        break;
                    }
                    Err(e) => {
                        let place = e
                            .pos()
                            .map(|(line, col)| format!(" at line {line}, column {col}"))
                            .unwrap_or_default();
                        problems.push(format!(
                            "template {} is broken{place} ({}); using the built-in one",
                            path.display(),
                            e.reason()
                        ));
                    }
                }
            }
            if chosen {
                overridden.push(name.to_owned());
            }
        }
        Renderer {
            hb,
            overridden,
            problems,
        }
    }

    /// Renders `name`; if an override fails on this data, the built-in one
    /// renders instead and the failure is noted.
    pub fn render(&mut self, name: &str, data: &Value) -> String {
        let cleaned = clean_view(data);
        let data = &cleaned;
        if self.overridden.iter().any(|n| n == name) {
            match self.hb.render(name, data) {
                Ok(text) => return tidy(&text),
                Err(e) => {
                    self.problems.push(format!(
                        "template {} failed ({e}); using the built-in one",
                        file_name(name)
                    ));
                    self.overridden.retain(|n| n != name);
                }
            }
        }
        match self.hb.render(&format!("builtin/{name}"), data) {
            Ok(text) => tidy(&text),
            Err(e) => {
                // Only a bug in hookd can land here: say so rather than crash.
                tracing::error!(template = name, error = %e, "built-in template failed");
                format!("(hookd could not render {name}: {e})")
            }
        }
    }
}

/// No runs of blank lines, no trailing blank lines.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_broken_override_names_its_line_and_the_built_in_stands_in() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("progress_summary.md.hbs"),
            "ok\n{{#if x}}\nnever closed\n",
        )
        .unwrap();
        let mut r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(
            r.problems[0].contains("progress_summary.md.hbs")
                && r.problems[0].contains("at line 4"),
            "{:?}",
            r.problems
        );
        assert_eq!(
            r.problems[0].lines().count(),
            1,
            "one line: {:?}",
            r.problems
        );
        let data = json!({"tasks": {"all": [], "done": [], "current": [], "pending": [], "done_count": 0, "all_count": 0}, "notes": ["n1"], "open_blockers": []});
        assert_eq!(
            r.render(PROGRESS_SUMMARY, &data),
            "Notes (quoted from `.workflow/records.jsonl`): “n1”\n"
        );
    }

    /// An older install copied the built-in templates into the user's
    /// folder; such a copy, unchanged, must not hide the newer built-in one.
    #[test]
    fn an_unchanged_copy_an_older_install_left_is_not_an_override() {
        let dir = tempfile::tempdir().unwrap();
        let older = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/older-templates/resume_prompt.md.hbs");
        let older = std::fs::read_to_string(older).unwrap();
        std::fs::write(dir.path().join("resume_prompt.md.hbs"), &older).unwrap();
        let r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(!r.overridden.iter().any(|n| n == RESUME_PROMPT));
        // Changed by one character, it is the person's own.
        std::fs::write(dir.path().join("resume_prompt.md.hbs"), older + " ").unwrap();
        let r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        assert!(r.overridden.iter().any(|n| n == RESUME_PROMPT));
    }

    #[test]
    fn an_override_that_fails_on_the_data_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("progress_summary.md.hbs"),
            "{{no_such_field}}\n",
        )
        .unwrap();
        let mut r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        assert!(r.problems.is_empty());
        let data = json!({"tasks": {"all": [], "done": [], "current": [], "pending": [], "done_count": 0, "all_count": 0}, "notes": [], "open_blockers": []});
        assert_eq!(r.render(PROGRESS_SUMMARY, &data), "");
        assert!(r.problems[0].contains("no_such_field"), "{:?}", r.problems);
    }

    #[test]
    fn project_templates_win_over_user_templates() {
        let project = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        let templates = project.path().join(TEMPLATES_DIR);
        std::fs::create_dir_all(&templates).unwrap();
        std::fs::write(
            templates.join("precompact_instructions.md.hbs"),
            "project\n",
        )
        .unwrap();
        std::fs::write(user.path().join("precompact_instructions.md.hbs"), "user\n").unwrap();
        let sources = |trust| {
            [
                Overrides::Project {
                    root: project.path().to_path_buf(),
                    trust,
                },
                Overrides::User(user.path().to_path_buf()),
            ]
        };
        // Not trusted: the user's stands, and the project's is named.
        let mut r = Renderer::load(&sources(None));
        assert_eq!(r.render(PRECOMPACT_INSTRUCTIONS, &json!({})), "user\n");
        assert!(r.problems[0].contains("trust"), "{:?}", r.problems);
        let (trust, _) = protocol::trust::survey(project.path());
        let mut r = Renderer::load(&sources(Some(trust.clone())));
        assert_eq!(r.render(PRECOMPACT_INSTRUCTIONS, &json!({})), "project\n");
        // Changed since it was trusted: not used.
        std::fs::write(
            templates.join("precompact_instructions.md.hbs"),
            "changed\n",
        )
        .unwrap();
        let mut r = Renderer::load(&sources(Some(trust)));
        assert_eq!(r.render(PRECOMPACT_INSTRUCTIONS, &json!({})), "user\n");
    }

    #[test]
    fn partials_and_deep_nesting_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let recursive = "{{#*inline \"p\"}}{{> p}}{{/inline}}{{> p}}";
        std::fs::write(dir.path().join("precompact_instructions.md.hbs"), recursive).unwrap();
        let deep = "{{#if a}}".repeat(MAX_BLOCK_DEPTH + 1) + &"{{/if}}".repeat(MAX_BLOCK_DEPTH + 1);
        std::fs::write(dir.path().join("progress_summary.md.hbs"), deep).unwrap();
        let mut r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(
            r.problems.iter().any(|p| p.contains("partial")),
            "{:?}",
            r.problems
        );
        assert!(
            r.problems.iter().any(|p| p.contains("deeper")),
            "{:?}",
            r.problems
        );
        // The built-in template is used instead.
        assert_eq!(
            r.render(PRECOMPACT_INSTRUCTIONS, &json!({})),
            Renderer::built_in().render(PRECOMPACT_INSTRUCTIONS, &json!({}))
        );
    }

    #[test]
    fn a_users_own_template_sees_only_cleaned_values() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("progress_summary.md.hbs"),
            "{{#each notes}}- {{this}}\n{{/each}}`{{path}}`\n{{{loud}}} {{loud}}\n",
        )
        .unwrap();
        let mut r = Renderer::load(&[Overrides::User(dir.path().to_path_buf())]);
        let data = json!({
            "notes": ["a\n\n### FORGED\n- b", "x\u{1b}]0;t\u{7}y"],
            "path": "src/a`\n# b.rs",
            "loud": "triple\nstash",
        });
        assert_eq!(
            r.render(PROGRESS_SUMMARY, &data),
            "- a ### FORGED - b\n- x ]0;t y\n`src/a' # b.rs`\ntriple stash triple stash\n"
        );
        let long = "w".repeat(MAX_VALUE_CHARS + 10);
        let cleaned = clean_view(&json!({"a": [long], "progress_summary": "l1\nl2"}));
        assert_eq!(
            cleaned["a"][0].as_str().unwrap().chars().count(),
            MAX_VALUE_CHARS
        );
        assert_eq!(
            cleaned["progress_summary"], "l1\nl2",
            "hookd's own fragment"
        );
    }

    #[test]
    fn markdown_is_not_escaped() {
        let mut hb = engine();
        hb.register_template_string("t", "{{x}} {{pct p}} {{join l}}")
            .unwrap();
        assert_eq!(
            hb.render("t", &json!({"x": "<a & b>", "p": 0.724, "l": ["a", "b"]}))
                .unwrap(),
            "<a & b> 72% a, b"
        );
        assert_eq!(tidy("\n\na\n\n\n\nb\n\n"), "a\n\nb\n");
        hb.register_template_string("x", "<a>{{xml x}}</a> {{oneline y}}")
            .unwrap();
        assert_eq!(
            hb.render("x", &json!({"x": "<b & \"c\">", "y": "one\n  two"}))
                .unwrap(),
            "<a>&lt;b &amp; &quot;c&quot;&gt;</a> one two"
        );
        assert_eq!(file_name(RESUME_PROMPT), "resume_prompt.md.hbs");
        assert_eq!(file_name(RESUME_PROMPT_XML), "resume_prompt.xml.hbs");
    }
}
