//! Embeds the Claude Code slash commands shipped in
//! `hooks/claude-code/commands/*.md`, so `hookctl install claude-code` can
//! write them wherever hookctl was installed, and those older versions
//! installed (`hooks/claude-code/retired/`), so it can take them away.

use std::path::Path;

fn main() {
    let hooks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/claude-code");
    let mut out = embedded(
        &hooks.join("commands"),
        "COMMANDS",
        "`(file name, contents)` of each slash command in hooks/claude-code/commands/.",
        |name| name.to_owned(),
    );
    // `1-resume.md` was installed as `resume.md`.
    out += &embedded(
        &hooks.join("retired"),
        "RETIRED",
        "`(file name, contents)` of each slash command an older hookd installed \
         (hooks/claude-code/retired/).",
        |name| {
            name.split_once('-')
                .map_or(name, |(_, rest)| rest)
                .to_owned()
        },
    );
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("claude_commands.rs");
    std::fs::write(target, out).expect("write the embedded command list");
}

/// A `pub const NAME: &[(&str, &str)]` of the `.md` files in `dir`, each
/// named by `installed_as` of its own name.
fn embedded(dir: &Path, name: &str, doc: &str, installed_as: impl Fn(&str) -> String) -> String {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    files.sort();
    let mut out = format!("/// {doc}\npub const {name}: &[(&str, &str)] = &[\n");
    for path in files {
        let path = path.canonicalize().expect("a listed file has a real path");
        let file = path.file_name().expect("a file name").to_string_lossy();
        out += &format!(
            "    ({:?}, include_str!({:?})),\n",
            installed_as(&file),
            path.display().to_string()
        );
    }
    out += "];\n";
    out
}
