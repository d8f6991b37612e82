//! Snapshots of what people read from the real binaries, with the
//! environment pinned and the parts that differ per run (the sandbox's
//! path, the build's directory, the version, backup stamps) redacted.

use hookd_tests::{Sandbox, bin, stdout};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The text with the run's particulars replaced by fixed names.
fn redact(text: &str, sb: &Sandbox) -> String {
    let build = bin("hookctl").parent().unwrap().display().to_string();
    let mut out = text
        .replace(&sb.path().display().to_string(), "[SANDBOX]")
        .replace(&build, "[BUILD]")
        .replace(protocol::VERSION, "[VERSION]");
    // settings.json.hookd-backup-<stamp>
    while let Some(at) = out.find("hookd-backup-").map(|i| i + "hookd-backup-".len()) {
        let end = out[at..]
            .find(char::is_whitespace)
            .map_or(out.len(), |n| at + n);
        if &out[at..end] == "[STAMP]" {
            break;
        }
        out.replace_range(at..end, "[STAMP]");
    }
    out
}

/// A directory of programs for PATH: hookctl and hookd from this build,
/// and a `git` and `claude` that only print a fixed version.
fn pinned_path(sb: &Sandbox) -> PathBuf {
    let dir = sb.path().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["hookctl", "hookd"] {
        symlink(bin(name), dir.join(name)).unwrap();
    }
    for (name, version) in [
        ("git", "git version 2.99.0"),
        ("claude", "2.1.330 (Claude Code)"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn run(sb: &Sandbox, path: &Path, args: &[&str]) -> Output {
    sb.command("hookctl")
        .env("PATH", path)
        .args(args)
        .output()
        .expect("run hookctl")
}

#[test]
fn doctor_and_install_as_a_person_reads_them() {
    let sb = Sandbox::new();
    let path = pinned_path(&sb);
    let claude = sb.home().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        "{\n  \"statusLine\": {\"type\": \"command\", \"command\": \"~/my-line.sh\"}\n}\n",
    )
    .unwrap();

    let install = run(&sb, &path, &["install", "claude-code"]);
    assert!(install.status.success(), "{install:?}");
    insta::assert_snapshot!(
        "install_claude_code_keeps_a_statusline",
        redact(&stdout(&install), &sb)
    );

    let doctor = run(&sb, &path, &["doctor"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", stdout(&doctor));
    insta::assert_snapshot!("doctor", redact(&stdout(&doctor), &sb));
}

/// `hookctl templates`: which of the person's templates apply, what an
/// edited one lacks, and a copy an older install left.
#[test]
fn templates_as_a_person_reads_them() {
    let sb = Sandbox::new();
    let dir = sb.config_dir().join("templates");
    std::fs::create_dir_all(&dir).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::copy(
        repo.join("tests/fixtures/older-templates/resume_prompt.md.hbs"),
        dir.join("resume_prompt.md.hbs"),
    )
    .unwrap();
    let progress = std::fs::read_to_string(repo.join("templates/progress_summary.md.hbs")).unwrap();
    std::fs::write(dir.join("progress_summary.md.hbs"), progress + "\nmine\n").unwrap();
    std::fs::write(dir.join("resume_prompt.xml.hbs"), "<workflow_context/>\n").unwrap();
    let out = sb.hookctl(&["templates"]);
    assert!(out.status.success());
    insta::assert_snapshot!("templates", redact(&stdout(&out), &sb));
}
