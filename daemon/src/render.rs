//! All Handlebars code: the resume prompt, the progress summary and the
//! PreCompact instructions, rendered in strict mode without HTML escaping.
//!
//! The built-in templates (`templates/*.hbs`) are compiled into the
//! binary. A file of the same name in the user's config directory
//! (`templates/`) or the project's `.workflow/templates/` overrides one (the
//! project's wins). A broken override is reported with its name and line,
//! and the built-in one is used instead.

use handlebars::{Handlebars, handlebars_helper, no_escape};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const RESUME_PROMPT: &str = "resume_prompt";
/// The resume prompt in seed 004's compressed, token-optimized YAML.
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

pub const BUILT_IN: [(&str, &str); 6] = [
    (
        RESUME_PROMPT,
        include_str!("../../templates/resume_prompt.md.hbs"),
    ),
    (
        RESUME_PROMPT_YAML,
        include_str!("../../templates/resume_prompt.yaml.hbs"),
    ),
    (
        RESUME_PROMPT_XML,
        include_str!("../../templates/resume_prompt.xml.hbs"),
    ),
    (
        PROGRESS_SUMMARY,
        include_str!("../../templates/progress_summary.md.hbs"),
    ),
    (
        PRECOMPACT_INSTRUCTIONS,
        include_str!("../../templates/precompact_instructions.md.hbs"),
    ),
    (
        MEMORY_SECTION,
        include_str!("../../templates/memory_section.md.hbs"),
    ),
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

impl Renderer {
    /// The built-in templates only.
    pub fn built_in() -> Renderer {
        Renderer::load(&[])
    }

    /// Built-ins, overridden by files in `dirs` (earlier directories win).
    pub fn load(dirs: &[PathBuf]) -> Renderer {
        let mut hb = engine();
        let mut overridden = Vec::new();
        let mut problems = Vec::new();
        for (name, text) in BUILT_IN {
            hb.register_template_string(&format!("builtin/{name}"), text)
                .expect("built-in templates compile");
            let mut chosen = false;
            for dir in dirs {
                let path = dir.join(file_name(name));
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
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

    /// Where a project's templates may live, in order of precedence.
    pub fn dirs_for(project: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(p) = project {
            dirs.push(p.join(crate::workflow::WORKFLOW_DIR).join("templates"));
        }
        if let Some(c) = protocol::paths::config_dir() {
            dirs.push(c.join("templates"));
        }
        dirs
    }

    /// Renders `name`; if an override fails on this data, the built-in one
    /// renders instead and the failure is noted.
    pub fn render(&mut self, name: &str, data: &Value) -> String {
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
        let mut r = Renderer::load(&[dir.path().to_path_buf()]);
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
        assert_eq!(r.render(PROGRESS_SUMMARY, &data), "Notes: n1\n");
    }

    #[test]
    fn an_override_that_fails_on_the_data_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("progress_summary.md.hbs"),
            "{{no_such_field}}\n",
        )
        .unwrap();
        let mut r = Renderer::load(&[dir.path().to_path_buf()]);
        assert!(r.problems.is_empty());
        let data = json!({"tasks": {"all": [], "done": [], "current": [], "pending": [], "done_count": 0, "all_count": 0}, "notes": [], "open_blockers": []});
        assert_eq!(r.render(PROGRESS_SUMMARY, &data), "");
        assert!(r.problems[0].contains("no_such_field"), "{:?}", r.problems);
    }

    #[test]
    fn project_templates_win_over_user_templates() {
        let project = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        std::fs::write(
            project.path().join("precompact_instructions.md.hbs"),
            "project\n",
        )
        .unwrap();
        std::fs::write(user.path().join("precompact_instructions.md.hbs"), "user\n").unwrap();
        let mut r = Renderer::load(&[project.path().to_path_buf(), user.path().to_path_buf()]);
        assert_eq!(r.render(PRECOMPACT_INSTRUCTIONS, &json!({})), "project\n");
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
