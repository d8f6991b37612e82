//! `hookctl daemon install-service | uninstall-service`: hookd always up, as
//! a systemd user unit (Linux) or a launchd agent (macOS), for people who
//! prefer that to autostart (which stays the default). The service runs
//! `hookd run` on the socket this hookctl resolves now, so the service and
//! the hooks always meet on the same socket.

use crate::Context;
use crate::install::json_file::write_atomic;
use anyhow::{Context as _, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The launchd label, and the systemd unit's name.
const LABEL: &str = "dev.hookd.hookd";
const UNIT: &str = "hookd.service";
/// Environment a service must keep to see the same files as this hookctl.
const KEPT_ENV: &[&str] = &[
    "HOOKD_STATE_DIR",
    "HOOKD_CONFIG_DIR",
    "HOOKD_DATA_DIR",
    "HOOKD_LOG",
];

#[derive(clap::Args)]
pub struct ServiceArgs {
    /// Show the service file and the commands, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write (or remove) the service file, but do not start or stop it.
    #[arg(long)]
    no_start: bool,
    /// Machine-readable report.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    action: &'static str,
    manager: &'static str,
    file: PathBuf,
    dry_run: bool,
    /// The service manager's commands, as run (or to run).
    commands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    contents: Option<String>,
}

/// systemd on Linux, launchd on macOS.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    fn here() -> anyhow::Result<Manager> {
        if cfg!(target_os = "macos") {
            Ok(Manager::Launchd)
        } else if cfg!(target_os = "linux") {
            Ok(Manager::Systemd)
        } else {
            bail!("no service manager support on this system; autostart from hookctl still works")
        }
    }

    fn name(self) -> &'static str {
        match self {
            Manager::Systemd => "systemd",
            Manager::Launchd => "launchd",
        }
    }

    fn file(self) -> anyhow::Result<PathBuf> {
        let home = || std::env::var_os("HOME").map(PathBuf::from);
        let path = match self {
            Manager::Systemd => std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| Some(home()?.join(".config")))
                .map(|d| d.join("systemd/user").join(UNIT)),
            Manager::Launchd => home().map(|h| {
                h.join("Library/LaunchAgents")
                    .join(format!("{LABEL}.plist"))
            }),
        };
        path.context("cannot find where the service file goes: HOME is not set")
    }

    fn start_commands(self, file: &Path) -> Vec<Vec<String>> {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![
                owned(&["systemctl", "--user", "daemon-reload"]),
                owned(&["systemctl", "--user", "enable", "--now", UNIT]),
            ],
            Manager::Launchd => vec![vec![
                "launchctl".into(),
                "bootstrap".into(),
                format!("gui/{}", protocol::paths::effective_uid()),
                file.display().to_string(),
            ]],
        }
    }

    fn stop_commands(self) -> Vec<Vec<String>> {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![owned(&["systemctl", "--user", "disable", "--now", UNIT])],
            Manager::Launchd => vec![vec![
                "launchctl".into(),
                "bootout".into(),
                format!("gui/{}/{LABEL}", protocol::paths::effective_uid()),
            ]],
        }
    }
}

pub fn install(ctx: &Context, args: ServiceArgs) -> anyhow::Result<ExitCode> {
    let manager = Manager::here()?;
    let file = manager.file()?;
    let hookd = crate::client::find_hookd()
        .context("no hookd next to hookctl or on PATH: install it first (./install.sh)")?;
    let hookd = std::fs::canonicalize(&hookd).unwrap_or(hookd);
    let env: Vec<(String, String)> = KEPT_ENV
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect();
    let contents = match manager {
        Manager::Systemd => systemd_unit(&hookd, &ctx.socket.path, &env),
        Manager::Launchd => launchd_plist(&hookd, &ctx.socket.path, &env),
    };
    let commands = if args.no_start {
        Vec::new()
    } else {
        manager.start_commands(&file)
    };
    let report = Report {
        action: "install-service",
        manager: manager.name(),
        file: file.clone(),
        dry_run: args.dry_run,
        commands: commands.iter().map(|c| c.join(" ")).collect(),
        contents: args.dry_run.then(|| contents.clone()),
    };
    if !args.dry_run {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        write_atomic(&file, contents.as_bytes(), 0o644)?;
        if !args.no_start {
            // An autostarted daemon holds the socket; the service's own would fail to bind.
            if let Some(pid) =
                crate::client::stop_daemon(&ctx.socket, std::time::Duration::from_secs(10))?
            {
                println!("hookd stopped (pid {pid})");
            }
            for command in &commands {
                run(command)?;
            }
        }
    }
    print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

pub fn uninstall(args: ServiceArgs) -> anyhow::Result<ExitCode> {
    let manager = Manager::here()?;
    let file = manager.file()?;
    let commands = if args.no_start || !file.exists() {
        Vec::new()
    } else {
        manager.stop_commands()
    };
    let report = Report {
        action: "uninstall-service",
        manager: manager.name(),
        file: file.clone(),
        dry_run: args.dry_run,
        commands: commands.iter().map(|c| c.join(" ")).collect(),
        contents: None,
    };
    if !args.dry_run {
        for command in &commands {
            // Already stopped or never loaded is fine: the file goes either way.
            let _ = run(command);
        }
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", file.display())),
        }
        if manager == Manager::Systemd && !args.no_start {
            let _ = run(&["systemctl", "--user", "daemon-reload"].map(String::from));
        }
    }
    print(&report, args.json);
    Ok(ExitCode::SUCCESS)
}

fn run(command: &[String]) -> anyhow::Result<()> {
    let shown = command.join(" ");
    let out = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{shown}`"))?;
    if !out.status.success() {
        bail!(
            "`{shown}` failed ({}): {}; the service file is written, run the command yourself once the problem is fixed",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn print(report: &Report, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("a report serializes")
        );
        return;
    }
    let (did, would) = match report.action {
        "install-service" => ("wrote", "would write"),
        _ => ("removed", "would remove"),
    };
    let verb = if report.dry_run { would } else { did };
    println!("{} {verb} {}", report.manager, report.file.display());
    if let Some(contents) = &report.contents {
        print!("{contents}");
    }
    for command in &report.commands {
        let ran = if report.dry_run { "would run" } else { "ran" };
        println!("{ran}: {command}");
    }
}

/// A systemd user unit running `hookd run`.
fn systemd_unit(hookd: &Path, socket: &Path, env: &[(String, String)]) -> String {
    let quote = |p: &Path| {
        let s = p.display().to_string();
        if s.contains([' ', '"', '\\']) {
            format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
        } else {
            s
        }
    };
    let mut unit = format!(
        "[Unit]\n\
         Description=hookd: keeps AI coding agents' working state across context compaction\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={} run --socket {}\n\
         Restart=on-failure\n\
         RestartSec=2\n",
        quote(hookd),
        quote(socket)
    );
    for (k, v) in env {
        unit += &format!("Environment=\"{k}={}\"\n", v.replace('"', "\\\""));
    }
    unit += "\n[Install]\nWantedBy=default.target\n";
    unit
}

/// A launchd agent running `hookd run`, restarted if it fails.
fn launchd_plist(hookd: &Path, socket: &Path, env: &[(String, String)]) -> String {
    let xml = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let string = |s: &str| format!("<string>{}</string>", xml(s));
    let mut plist = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n\
         \x20 <key>Label</key>{}\n\
         \x20 <key>ProgramArguments</key>\n\
         \x20 <array>{}{}{}{}</array>\n",
        string(LABEL),
        string(&hookd.display().to_string()),
        string("run"),
        string("--socket"),
        string(&socket.display().to_string()),
    );
    if !env.is_empty() {
        plist += "  <key>EnvironmentVariables</key>\n  <dict>";
        for (k, v) in env {
            plist += &format!("<key>{}</key>{}", xml(k), string(v));
        }
        plist += "</dict>\n";
    }
    plist += "  <key>RunAtLoad</key><true/>\n  \
              <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n\
              </dict>\n</plist>\n";
    plist
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_hookd_on_the_resolved_socket() {
        let unit = systemd_unit(
            Path::new("/home/u/.local/bin/hookd"),
            Path::new("/run/user/1000/hookd/hookd.sock"),
            &[("HOOKD_STATE_DIR".into(), "/s".into())],
        );
        assert!(unit.contains(
            "ExecStart=/home/u/.local/bin/hookd run --socket /run/user/1000/hookd/hookd.sock\n"
        ));
        assert!(unit.contains("Environment=\"HOOKD_STATE_DIR=/s\"\n"));
        assert!(unit.contains("WantedBy=default.target"));
        let spaced = systemd_unit(Path::new("/a b/hookd"), Path::new("/s.sock"), &[]);
        assert!(spaced.contains("ExecStart=\"/a b/hookd\" run"), "{spaced}");
    }

    #[test]
    fn the_plist_escapes_its_strings() {
        let plist = launchd_plist(Path::new("/Users/a&b/hookd"), Path::new("/tmp/h.sock"), &[]);
        assert!(plist.contains("<string>/Users/a&amp;b/hookd</string><string>run</string>"));
        assert!(plist.contains("<key>Label</key><string>dev.hookd.hookd</string>"));
        assert!(plist.contains("<key>RunAtLoad</key><true/>"));
    }
}
