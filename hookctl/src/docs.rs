//! The parts of `docs/` made from the code, so that they cannot drift:
//! `docs/commands.md` from hookctl's `--help`, and the reference table of
//! `docs/configuration.md` from the schema in `protocol/src/config.rs` (its
//! doc comments, defaults, bounds and what a project file may set). Each
//! generated part sits between marker comments; the prose around it is
//! written by hand. The tests make the parts again and fail when a page
//! differs; `HOOKD_UPDATE_DOCS=1` rewrites the pages instead.
//!
//! A last test checks that every relative link and `#anchor` in the
//! repository's Markdown pages leads somewhere.

use crate::Cli;
use clap::CommandFactory;
use protocol::config::{Config, UPPER_BOUNDS, USER_ONLY};
use protocol::memory::Capacity;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const UPDATE_VARIABLE: &str = "HOOKD_UPDATE_DOCS";
const UPDATE_COMMAND: &str = "HOOKD_UPDATE_DOCS=1 cargo test -p hookctl docs";
/// The schema's source: its doc comments are the reference's words.
const CONFIG_SOURCE: &str = include_str!("../../protocol/src/config.rs");

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("hookctl lives inside the workspace")
        .to_path_buf()
}

/// Replaces the block named `name` in `page` (the text between its two
/// marker comments) with `content`.
fn replace_block(page: &str, name: &str, content: &str) -> Result<String, String> {
    let begin = format!("<!-- generated: {name} ({UPDATE_COMMAND}) -->\n");
    let end = format!("<!-- end of generated: {name} -->");
    let start = page
        .find(&begin)
        .ok_or_else(|| format!("no line `{}`", begin.trim_end()))?
        + begin.len();
    let stop = page[start..]
        .find(&end)
        .ok_or_else(|| format!("no line `{end}` after the block's first marker"))?
        + start;
    Ok(format!("{}{content}{}", &page[..start], &page[stop..]))
}

/// Makes the block again; rewrites the page with `HOOKD_UPDATE_DOCS=1`,
/// else fails when it differs.
fn check_block(relative: &str, name: &str, content: &str) {
    let path = repository_root().join(relative);
    let page = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let fresh = replace_block(&page, name, content)
        .unwrap_or_else(|e| panic!("{relative}: {e}: put the two marker lines back"));
    if fresh == page {
        return;
    }
    if std::env::var_os(UPDATE_VARIABLE).is_some_and(|v| v == "1") {
        std::fs::write(&path, fresh)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let differs = page
        .lines()
        .zip(fresh.lines())
        .position(|(old, new)| old != new)
        .map_or_else(|| "its length".to_owned(), |i| format!("line {}", i + 1));
    panic!(
        "{relative} is out of date (its {name} block differs from the code, first at {differs}): \
         run `{UPDATE_COMMAND}` and commit the page"
    );
}

/// Every hookctl command's `--help`, the whole tree, each under its own heading.
fn commands_reference() -> String {
    fn walk(cmd: &clap::Command, path: &str, out: &mut String) {
        out.push_str(&format!("\n### `{path}`\n\n```text\n"));
        let help = cmd.clone().render_long_help().to_string();
        for line in help.trim_end().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str("```\n");
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                walk(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
    }
    // A fixed width, so that the page does not depend on the terminal.
    let mut cmd = Cli::command().term_width(100);
    cmd.build();
    let mut out = String::new();
    walk(&cmd, "hookctl", &mut out);
    out.push('\n');
    out
}

/// One field of a struct in the schema's source.
struct Field {
    name: String,
    rust_type: String,
    doc: String,
}

/// The fields of `struct name` in the schema's source, with their doc
/// comments; fields marked `#[serde(skip)]` are not settings.
fn struct_fields(name: &str) -> Vec<Field> {
    let start = CONFIG_SOURCE
        .find(&format!("pub struct {name} {{"))
        .unwrap_or_else(|| panic!("protocol/src/config.rs has no `pub struct {name}`"));
    let body = &CONFIG_SOURCE[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    let mut fields = Vec::new();
    let mut doc = Vec::new();
    let mut skipped = false;
    for line in body.lines().map(str::trim) {
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text.trim().to_owned());
        } else if line.starts_with("#[serde(skip") {
            skipped = true;
        } else if let Some(field) = line.strip_prefix("pub ") {
            let (field_name, rust_type) = field
                .split_once(':')
                .unwrap_or_else(|| panic!("cannot read the field `{line}` of {name}"));
            if !skipped {
                fields.push(Field {
                    name: field_name.trim().to_owned(),
                    rust_type: rust_type.trim().trim_end_matches(',').to_owned(),
                    doc: doc.join(" "),
                });
            }
            doc.clear();
            skipped = false;
        }
    }
    fields
}

/// The variants of `enum name` in the schema's source, as YAML spells them.
fn enum_variants(name: &str) -> Option<Vec<String>> {
    let start = CONFIG_SOURCE.find(&format!("pub enum {name} {{"))?;
    let body = &CONFIG_SOURCE[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    let snake = |word: &str| {
        let mut out = String::new();
        for (i, c) in word.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        }
        out
    };
    Some(
        body.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && !l.starts_with('#') && !l.is_empty())
            .map(|l| format!("`{}`", snake(l.trim_end_matches(','))))
            .collect(),
    )
}

/// What a Rust type of the schema is, in the words of a YAML file.
fn type_words(rust_type: &str) -> String {
    if let Some(inner) = rust_type
        .strip_prefix("Option<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!("{} or none", type_words(inner));
    }
    if let Some(inner) = rust_type
        .strip_prefix("Vec<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!("list of {}", plural(&type_words(inner)));
    }
    if let Some(inner) = rust_type
        .strip_prefix("BTreeMap<String, ")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!("map of names to {}", plural(&type_words(inner)));
    }
    match rust_type {
        "u32" | "u64" | "usize" => "integer".into(),
        "f64" => "number".into(),
        "bool" => "boolean".into(),
        "String" => "string".into(),
        "PathBuf" => "path".into(),
        "crate::memory::Capacity" => format!(
            "integer (1–{}) or preset ({})",
            Capacity::MAX,
            Capacity::preset_list()
        ),
        other => {
            if let Some(variants) = enum_variants(other) {
                return format!("one of {}", variants.join(", "));
            }
            let fields = struct_fields(other);
            let names: Vec<String> = fields.iter().map(|f| format!("`{}`", f.name)).collect();
            let types: Vec<String> = fields.iter().map(|f| type_words(&f.rust_type)).collect();
            if types.iter().all(|t| *t == types[0]) {
                format!("map of {} to {}", names.join(", "), plural(&types[0]))
            } else {
                format!("map of {}", names.join(", "))
            }
        }
    }
}

fn plural(words: &str) -> String {
    match words {
        "map of `level`, `message`, `action`" => "levels (`level`, `message`, `action`)".into(),
        w if w.starts_with("one of ") || w.starts_with("map ") => w.to_owned(),
        w => format!("{w}s"),
    }
}

/// A default value, short: long texts (threshold messages) are left out.
fn default_words(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let scalar = |v: &Value| match v {
        Value::Null => Some("none".to_owned()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 => format!("{f:.0}"),
            _ => n.to_string(),
        }),
        Value::String(s) if s.chars().count() <= 40 => Some(s.clone()),
        _ => None,
    };
    match value {
        Value::Array(items) if items.is_empty() => "[]".into(),
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(map) => map
                    .values()
                    .filter_map(scalar)
                    .collect::<Vec<_>>()
                    .join(" "),
                other => scalar(other).unwrap_or_default(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {}", scalar(v).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", "),
        other => scalar(other).unwrap_or_default(),
    }
}

/// What a project's `.hookd.yaml` may do with `key`, read from the schema:
/// `USER_ONLY`, and the memory keys it may only narrow.
fn project_words(key: &str) -> String {
    let section = key.split('.').next().unwrap();
    if USER_ONLY.contains(&key) || USER_ONLY.contains(&section) {
        return "no".into();
    }
    if let Some(field) = key.strip_prefix("memory.") {
        let start = CONFIG_SOURCE
            .find("const MEMORY_NARROW_ONLY")
            .expect("protocol/src/config.rs has MEMORY_NARROW_ONLY");
        let list = &CONFIG_SOURCE[start..start + CONFIG_SOURCE[start..].find("];").unwrap()];
        if let Some(line) = list.lines().find(|l| l.contains(&format!("(\"{field}\","))) {
            return if line.contains("Narrower::Off") {
                "only to turn it off"
            } else if line.contains("Narrower::AtLeast") {
                "only to raise it"
            } else if line.contains("Narrower::AtMost") {
                "only to lower it"
            } else {
                panic!("MEMORY_NARROW_ONLY: cannot read `{}`", line.trim())
            }
            .into();
        }
    }
    "yes".into()
}

fn bound_words(key: &str) -> String {
    UPPER_BOUNDS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or_else(|| "–".to_owned(), |(_, max)| format!("{max}"))
}

/// Doc comments as table text: intra-doc links lose their brackets.
fn doc_words(doc: &str) -> String {
    doc.replace("[`", "`")
        .replace("`]", "`")
        .replace('|', "\\|")
}

/// The configuration reference: one row per key (keys that share one doc
/// comment share a row), from the schema itself.
fn configuration_reference() -> String {
    let defaults = serde_json::to_value(Config::default()).expect("the default config serializes");
    let mut out = String::from(
        "\n| key | type | default | at most | in `.hookd.yaml` | what it does |\n|---|---|---|---|---|---|\n",
    );
    for section in struct_fields("Config") {
        let fields = struct_fields(&section.rust_type);
        let mut rows: Vec<Vec<&Field>> = Vec::new();
        for field in &fields {
            match rows.last_mut() {
                // A field without a comment belongs with the one above it.
                Some(row) if field.doc.is_empty() => row.push(field),
                _ => rows.push(vec![field]),
            }
        }
        for row in rows {
            let key = |f: &Field| format!("{}.{}", section.name, f.name);
            let column = |words: &dyn Fn(&Field) -> String| {
                let all: Vec<String> = row.iter().map(|f| words(f)).collect();
                if all.iter().all(|w| *w == all[0]) {
                    all[0].clone()
                } else {
                    all.join(" / ")
                }
            };
            let keys: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, f)| match i {
                    0 => format!("`{}`", key(f)),
                    _ => format!("`{}`", f.name),
                })
                .collect();
            let default = |f: &Field| {
                let value = &defaults[&section.name][&f.name];
                assert!(
                    !value.is_null() || f.rust_type.starts_with("Option<"),
                    "{} has no default",
                    key(f)
                );
                default_words(value)
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                keys.join(" / "),
                column(&|f| type_words(&f.rust_type)).replace('|', "\\|"),
                column(&default).replace('|', "\\|"),
                column(&|f| bound_words(&key(f))),
                column(&|f| project_words(&key(f))),
                doc_words(&row[0].doc),
            ));
        }
    }
    out.push('\n');
    out
}

#[test]
fn docs_commands_page_is_hookctl_help() {
    check_block("docs/commands.md", "commands", &commands_reference());
}

#[test]
fn docs_configuration_reference_is_the_schema() {
    let reference = configuration_reference();
    // Every setting the schema serializes has its row.
    let defaults = serde_json::to_value(Config::default()).unwrap();
    for (section, fields) in defaults.as_object().unwrap() {
        for field in fields.as_object().unwrap().keys() {
            assert!(
                reference.contains(&format!("`{section}.{field}`"))
                    || reference.contains(&format!(" / `{field}`")),
                "{section}.{field} has no row in the configuration reference: \
                 give its field a doc comment in protocol/src/config.rs"
            );
        }
    }
    check_block("docs/configuration.md", "configuration", &reference);
}

/// The anchors GitHub makes for a page's headings.
fn anchors(page: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in page.lines() {
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        let Some(title) = line.trim_start_matches('#').strip_prefix(' ') else {
            continue;
        };
        if !line.starts_with('#') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.push(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of a page's inline links, outside code.
fn link_targets(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold examples, not links.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn docs_links_and_anchors_resolve() {
    let root = repository_root();
    let mut pages: Vec<PathBuf> = Vec::new();
    for dir in [root.clone(), root.join("docs"), root.join("hooks")] {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "md") {
                pages.push(entry.path());
            }
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let relative = std::path::absolute(&linked)
                .ok()
                .and_then(|p| {
                    let mut clean = PathBuf::new();
                    for part in p.components() {
                        match part {
                            std::path::Component::ParentDir => {
                                clean.pop();
                            }
                            other => clean.push(other),
                        }
                    }
                    clean
                        .strip_prefix(&root)
                        .ok()
                        .map(|p| p.display().to_string())
                })
                .unwrap_or_default();
            if !linked.exists() {
                broken.push(format!("{name}: `{target}`: no file {relative}"));
                continue;
            }
            if let Some(anchor) = anchor {
                let heads = std::fs::read_to_string(&linked)
                    .map(|t| anchors(&t))
                    .unwrap_or_default();
                if !heads.iter().any(|h| h == anchor) {
                    broken.push(format!(
                        "{name}: `{target}`: {relative} has no heading #{anchor}"
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere (fix the link, or the heading it names):\n{}",
        broken.join("\n")
    );
}

#[test]
fn docs_anchors_are_github_s() {
    let page = "# hookd\n## The summary's `hookd-state` block\n```\n# not a heading\n```\n## After compaction: the resume prompt\n## Notes\n## Notes\n";
    assert_eq!(
        anchors(page),
        [
            "hookd",
            "the-summarys-hookd-state-block",
            "after-compaction-the-resume-prompt",
            "notes",
            "notes-1"
        ]
    );
}
