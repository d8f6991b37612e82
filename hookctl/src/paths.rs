//! `hookctl paths [NAME]`: where hookd's files live, as this environment
//! resolves them (install.sh asks here rather than guess).

use crate::Context;
use anyhow::bail;
use protocol::config::USER_FILE;
use std::path::PathBuf;
use std::process::ExitCode;

/// Every path hookd uses, with its name on the command line.
pub fn all(ctx: &Context) -> Vec<(&'static str, Option<PathBuf>)> {
    let config = protocol::paths::config_dir();
    let state = protocol::paths::state_dir();
    vec![
        ("socket", Some(ctx.socket.path.clone())),
        ("config-dir", config.clone()),
        ("config-file", config.as_ref().map(|d| d.join(USER_FILE))),
        (
            "templates-dir",
            config.as_ref().map(|d| d.join("templates")),
        ),
        ("state-dir", state.clone()),
        ("log-dir", state.as_ref().map(|d| d.join("logs"))),
        ("data-dir", protocol::paths::data_dir()),
    ]
}

pub fn run(ctx: &Context, name: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let paths = all(ctx);
    if let Some(name) = name {
        let Some((_, path)) = paths.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = paths.iter().map(|(n, _)| *n).collect();
            bail!("unknown path `{name}` (known: {})", known.join(", "));
        };
        let Some(path) = path else {
            bail!("{name} cannot be found here: is HOME set?");
        };
        println!("{}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if json {
        let map: serde_json::Map<String, serde_json::Value> = paths
            .into_iter()
            .map(|(n, p)| (n.to_owned(), serde_json::json!(p)))
            .collect();
        println!("{}", serde_json::to_string_pretty(&map)?);
    } else {
        for (name, path) in paths {
            let shown = path.map_or("(unknown: HOME is not set)".into(), |p| {
                p.display().to_string()
            });
            println!("{name:<14} {shown}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
