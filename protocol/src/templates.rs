//! The built-in templates, shared by the daemon (which renders them) and
//! hookctl (which copies one for editing and tells a person's own override
//! from a copy an older install left behind).
//!
//! Older installs copied every built-in template into the user's templates
//! folder, where a file overrides the built-in one: after an upgrade, the
//! stale copy hid every new section. A copy still equal to a version hookd
//! shipped (`templates/released.sha256`) is therefore not an override: it
//! is ignored, and `hookctl templates tidy` removes it.

/// `(file name, text)` of each built-in template.
pub const BUILT_IN: [(&str, &str); 6] = [
    (
        "resume_prompt.md.hbs",
        include_str!("../../templates/resume_prompt.md.hbs"),
    ),
    (
        "resume_prompt.yaml.hbs",
        include_str!("../../templates/resume_prompt.yaml.hbs"),
    ),
    (
        "resume_prompt.xml.hbs",
        include_str!("../../templates/resume_prompt.xml.hbs"),
    ),
    (
        "progress_summary.md.hbs",
        include_str!("../../templates/progress_summary.md.hbs"),
    ),
    (
        "precompact_instructions.md.hbs",
        include_str!("../../templates/precompact_instructions.md.hbs"),
    ),
    (
        "memory_section.md.hbs",
        include_str!("../../templates/memory_section.md.hbs"),
    ),
];

/// `<sha256>  <file name>` of every version shipped, `#` lines aside.
const RELEASED: &str = include_str!("../../templates/released.sha256");

/// The built-in text of template `file` (`resume_prompt.md.hbs`).
pub fn built_in(file: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(f, _)| *f == file).map(|(_, t)| *t)
}

/// Whether `text` is a version of template `file` that hookd shipped: a
/// copy an older install made and nobody changed.
pub fn is_shipped_copy(file: &str, text: &[u8]) -> bool {
    let digest = crate::trust::hash(text);
    RELEASED
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once("  "))
        .any(|(sha, name)| name.trim() == file && sha == digest)
}

/// What a person's own version of template `file` lacks of the built-in
/// one: its sections (Markdown headings, YAML top-level keys, XML
/// elements), in the built-in's order. Empty when it lacks none, or `file`
/// is not a template.
pub fn lacks(file: &str, own: &str) -> Vec<String> {
    let Some(built_in) = built_in(file) else {
        return Vec::new();
    };
    let theirs = sections(file, own);
    let mut missing = Vec::new();
    for section in sections(file, built_in) {
        if !theirs.contains(&section) && !missing.contains(&section) {
            missing.push(section);
        }
    }
    missing
}

/// The sections of a template, by name, as its format has them: Markdown
/// headings (`Approaches Ruled Out`), YAML keys at the start of a line
/// (`RELOAD:`), XML elements one level inside the root
/// (`<context_to_reload>`).
fn sections(file: &str, text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        if file.ends_with(".md.hbs") {
            if let Some(heading) = line.trim_start().strip_prefix('#') {
                // A heading's own words, before any value shown in it.
                let words = heading.trim_start_matches('#').split("{{").next();
                names.extend(
                    words
                        .map(str::trim)
                        .filter(|w| !w.is_empty())
                        .map(str::to_owned),
                );
            }
        } else if file.ends_with(".yaml.hbs") {
            if let Some((key, _)) = line.split_once(':')
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                names.push(format!("{key}:"));
            }
        } else if let Some(element) = line.strip_prefix("  <") {
            // XML: two spaces in, a child of the root element.
            let name: String = element
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                names.push(format!("<{name}>"));
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template changed without its new digest would make the next
    /// upgrade take a person's unchanged copy of it for their own work.
    #[test]
    fn every_built_in_text_is_among_the_shipped_versions() {
        for (file, text) in BUILT_IN {
            assert!(
                is_shipped_copy(file, text.as_bytes()),
                "add `{}  {file}` to templates/released.sha256",
                crate::trust::hash(text.as_bytes())
            );
        }
        assert!(!is_shipped_copy(
            "resume_prompt.md.hbs",
            b"my own resume prompt"
        ));
        // A digest counts for its own file only.
        let (_, memory) = BUILT_IN[5];
        assert!(!is_shipped_copy("resume_prompt.md.hbs", memory.as_bytes()));
    }

    #[test]
    fn what_an_edited_template_lacks_is_named() {
        let markdown = built_in("resume_prompt.md.hbs").unwrap();
        assert!(lacks("resume_prompt.md.hbs", markdown).is_empty());
        let without = markdown.replace("### Approaches Ruled Out", "### Something else");
        let missing = lacks("resume_prompt.md.hbs", &without);
        assert_eq!(missing, ["Approaches Ruled Out"], "{missing:?}");
        let missing = lacks(
            "resume_prompt.md.hbs",
            "## Context Recovery\n{{objective}}\n",
        );
        assert!(missing.contains(&"Where You Stopped".to_owned()));
        let xml = built_in("resume_prompt.xml.hbs").unwrap();
        assert!(lacks("resume_prompt.xml.hbs", xml).is_empty());
        assert!(!lacks("resume_prompt.xml.hbs", "<workflow_context/>").is_empty());
        let yaml = built_in("resume_prompt.yaml.hbs").unwrap();
        assert!(lacks("resume_prompt.yaml.hbs", yaml).is_empty());
        assert!(lacks("resume_prompt.yaml.hbs", "").contains(&"RELOAD:".to_owned()));
        assert!(lacks("no_such.hbs", "").is_empty());
    }
}
