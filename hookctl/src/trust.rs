//! `hookctl trust [DIR]` and `hookctl untrust [DIR]`: whether a project's
//! own `.hookd.yaml` wording and templates may reach the model and the
//! person. Trust is recorded per file, by hash: a file changed since needs
//! trusting again.

use anyhow::Context as _;
use protocol::trust::{self, TrustStore};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn store_path() -> anyhow::Result<PathBuf> {
    protocol::paths::state_dir()
        .map(|d| d.join(trust::STORE_FILE))
        .context("no state directory: set HOOKD_STATE_DIR or HOME")
}

fn project(dir: Option<PathBuf>, ctx: &crate::Context) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(d) => d,
        None => ctx.project()?,
    };
    std::fs::canonicalize(&dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

pub fn trust(ctx: &crate::Context, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let root = project(dir, ctx)?;
    let (mut record, refused) = trust::survey(&root);
    record.trusted_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let path = store_path()?;
    let mut store = TrustStore::load(&path);
    let files: Vec<String> = record.files.keys().cloned().collect();
    store.trust(&root, record);
    store
        .save(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    print_files(&root, &files, &refused);
    Ok(ExitCode::SUCCESS)
}

fn print_files(root: &Path, files: &[String], refused: &[(String, String)]) {
    if files.is_empty() {
        println!(
            "trusted {} (it has no .hookd.yaml or templates yet; trust it again after adding some)",
            root.display()
        );
    } else {
        println!("trusted {}, these files as they are now:", root.display());
        for f in files {
            println!("  {f}");
        }
        println!("a file that changes is not used until you run `hookctl trust` again");
    }
    for (f, why) in refused {
        println!("not trusted: {f} {why}");
    }
}

pub fn untrust(ctx: &crate::Context, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let root = project(dir, ctx)?;
    let path = store_path()?;
    let mut store = TrustStore::load(&path);
    if !store.untrust(&root) {
        println!("{} was not trusted; nothing changed", root.display());
        return Ok(ExitCode::SUCCESS);
    }
    store
        .save(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!(
        "{} is no longer trusted: its templates and threshold messages are not used",
        root.display()
    );
    Ok(ExitCode::SUCCESS)
}
