//! `hookctl templates [list|show NAME|edit NAME|tidy]`: the templates hookd renders,
//! and the person's own versions of them in the templates folder.
//!
//! The built-in templates are compiled into hookd; a file of the same name
//! in the folder replaces one. Nothing is copied there unless a person asks
//! (`edit`), so an upgrade's new templates reach everyone who did not.

use clap::Subcommand;
use protocol::templates::{BUILT_IN, is_shipped_copy, lacks};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum Action {
    /// Each template, and whether a version of yours replaces the built-in one.
    List,
    /// Print a built-in template.
    Show {
        /// The template's file name (resume_prompt.md.hbs, ...) or its name (resume_prompt).
        name: String,
    },
    /// Copy a built-in template into your templates folder to change it.
    Edit {
        /// The template's file name (resume_prompt.md.hbs, ...) or its name (resume_prompt).
        name: String,
    },
    /// Remove the unchanged copies an older install left in your templates folder.
    Tidy {
        /// Say what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// A file in the templates folder, as hookd takes it.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// No file: the built-in one applies.
    None,
    /// A copy of an older version hookd shipped, unchanged: ignored.
    ShippedCopy,
    /// This version's built-in text, not changed yet (`edit` made it).
    SameAsBuiltIn,
    /// The person's own, with the built-in's sections it lacks.
    Own { lacks: Vec<String> },
    /// A file that cannot be read (hookd uses the built-in one).
    Unreadable(String),
}

/// What the templates folder holds for template `file`.
pub fn found(dir: &Path, file: &str) -> Found {
    match std::fs::read(dir.join(file)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::None,
        Err(e) => Found::Unreadable(e.to_string()),
        Ok(bytes) if protocol::templates::built_in(file).is_some_and(|t| t.as_bytes() == bytes) => {
            Found::SameAsBuiltIn
        }
        Ok(bytes) if is_shipped_copy(file, &bytes) => Found::ShippedCopy,
        Ok(bytes) => Found::Own {
            lacks: lacks(file, &String::from_utf8_lossy(&bytes)),
        },
    }
}

/// The person's templates folder.
pub fn folder() -> anyhow::Result<PathBuf> {
    protocol::paths::config_dir()
        .map(|d| d.join("templates"))
        .ok_or_else(|| anyhow::anyhow!("no config directory here: is HOME set?"))
}

pub fn run(action: Option<Action>) -> anyhow::Result<ExitCode> {
    let dir = folder()?;
    match action.unwrap_or(Action::List) {
        Action::List => list(&dir),
        Action::Show { name } => {
            let (_, text) = named(&name)?;
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Action::Edit { name } => edit(&dir, &name),
        Action::Tidy { dry_run } => {
            for line in tidy(&dir, dry_run)? {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list(dir: &Path) -> anyhow::Result<ExitCode> {
    println!("templates folder: {}", dir.display());
    for (file, _) in BUILT_IN {
        let how = match found(dir, file) {
            Found::None => "built-in".to_owned(),
            Found::ShippedCopy => "built-in (your copy is an older hookd's, unchanged: \
                                   `hookctl templates tidy` removes it)"
                .to_owned(),
            Found::SameAsBuiltIn => "yours, the built-in's text until you change it".to_owned(),
            Found::Own { lacks } if lacks.is_empty() => "yours".to_owned(),
            Found::Own { lacks } => format!("yours, without: {}", lacks.join(", ")),
            Found::Unreadable(why) => format!("built-in (yours cannot be read: {why})"),
        };
        println!("  {file:<32} {how}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The built-in template `name` (a file name, or a name without `.hbs`).
fn named(name: &str) -> anyhow::Result<(String, &'static str)> {
    let file = if name.ends_with(".hbs") {
        name.to_owned()
    } else if name.contains('.') {
        format!("{name}.hbs")
    } else {
        format!("{name}.md.hbs")
    };
    match protocol::templates::built_in(&file) {
        Some(text) => Ok((file, text)),
        None => {
            let known: Vec<&str> = BUILT_IN.iter().map(|(f, _)| *f).collect();
            anyhow::bail!("no template `{name}` (known: {})", known.join(", "))
        }
    }
}

fn edit(dir: &Path, name: &str) -> anyhow::Result<ExitCode> {
    let (file, text) = named(name)?;
    let path = dir.join(&file);
    if found(dir, &file) != Found::None {
        anyhow::bail!(
            "{} is already there: edit it, or remove it to start again from the built-in one",
            path.display()
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    write_new(&path, text.as_bytes())?;
    println!("copied the built-in {file} to {}", path.display());
    println!(
        "hookd uses it once you change it, from the next save on; after an upgrade, \
         `hookctl doctor` says what it lacks of the new built-in"
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `path` only if nothing is there (a file made meanwhile is kept).
fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Removes each copy of a version hookd shipped; says what it did.
pub fn tidy(dir: &Path, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let mut done = Vec::new();
    for (file, _) in BUILT_IN {
        if found(dir, file) != Found::ShippedCopy {
            continue;
        }
        let path = dir.join(file);
        if !dry_run {
            std::fs::remove_file(&path)
                .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
        }
        let removed = if dry_run { "would remove" } else { "removed" };
        done.push(format!(
            "{removed} {} (an older hookd's copy, unchanged; the built-in one applies)",
            path.display()
        ));
    }
    if !dry_run {
        // Only when empty: what is left is the person's.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(done)
}
