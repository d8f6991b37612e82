//! Embeds the Claude Code slash commands shipped in
//! `hooks/claude-code/commands/*.md`, so `hookctl install claude-code` can
//! write them wherever hookctl was installed.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/claude-code/commands");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    files.sort();
    let mut out = String::from(
        "/// `(file name, contents)` of each slash command in hooks/claude-code/commands/.\n\
         pub const COMMANDS: &[(&str, &str)] = &[\n",
    );
    for path in files {
        let path = path.canonicalize().expect("a listed file has a real path");
        let name = path.file_name().expect("a file name").to_string_lossy();
        out += &format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        );
    }
    out += "];\n";
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("claude_commands.rs");
    std::fs::write(target, out).expect("write the embedded command list");
}
