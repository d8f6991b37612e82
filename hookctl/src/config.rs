//! `hookctl config`: the effective configuration, value by value, with where
//! each one came from.

use crate::Context;
use protocol::config::{Layers, load};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(ctx: &Context, project: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let layers = Layers::from_process(project.or_else(|| ctx.project_root()));
    let effective = load(&layers)?;
    let entries = effective.entries();
    if json {
        for warning in &effective.warnings {
            eprintln!("hookctl: warning: {warning}");
        }
        let items: Vec<_> = entries
            .iter()
            .map(|(key, value, source)| serde_json::json!({ "key": key, "value": value, "source": source }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(ExitCode::SUCCESS);
    }
    let files = [layers.user_file.clone(), layers.project_file()];
    for file in files.iter().flatten() {
        let state = if file.exists() { "read" } else { "absent" };
        println!("# {} ({state})", file.display());
    }
    for warning in &effective.warnings {
        println!("# warning: {warning}");
    }
    for (key, value, source) in entries {
        let text = serde_yaml::to_string(&value)?;
        let text = text.trim_end();
        // A list or a map goes on the lines below its key, even of one item
        // (an empty one is `[]` or `{}`, which may stay on the line).
        let block = (value.is_sequence() || value.is_mapping()) && !text.starts_with(['[', '{']);
        if text.contains('\n') || block {
            println!("{key}:  # {source}");
            for line in text.lines() {
                println!("    {line}");
            }
        } else {
            println!("{key}: {text}  # {source}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
