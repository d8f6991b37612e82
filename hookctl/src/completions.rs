//! `hookctl completions bash|zsh|fish`: a completion script on stdout.

use clap_complete::Shell;
use std::process::ExitCode;

pub fn run(shell: Shell, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    // Made whole first: clap_complete panics on a write that fails.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "hookctl", &mut script);
    std::io::Write::write_all(&mut std::io::stdout(), &script)?;
    Ok(ExitCode::SUCCESS)
}
