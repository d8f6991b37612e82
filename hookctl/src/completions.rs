//! `hookctl completions bash|zsh|fish`: a completion script on stdout.

use clap_complete::Shell;
use std::process::ExitCode;

pub fn run(shell: Shell, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    clap_complete::generate(shell, &mut command, "hookctl", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
