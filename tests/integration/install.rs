//! Setting hookd up as a person does: the real hookctl (install, uninstall,
//! doctor, paths, completions, service, logs) and the real install.sh, run
//! against temporary homes holding real settings files.

use hookd_tests::{Sandbox, bin, output_text, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A Claude Code settings file as Claude Code writes it (two-space JSON),
/// with someone else's hooks and settings in it.
const FOREIGN_SETTINGS: &str = r#"{
  "model": "claude-sonnet-4-5-20250929",
  "permissions": {
    "allow": [
      "Bash(cargo test:*)"
    ],
    "deny": []
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/format-changed.sh",
            "timeout": 30
          }
        ]
      }
    ],
    "Notification": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'Claude Code'"
          }
        ]
      }
    ]
  },
  "env": {
    "FOO": "bar"
  }
}
"#;

/// The events hookctl wires into Claude Code.
const CLAUDE_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PostToolBatch",
    "PreCompact",
    "PostCompact",
    "SubagentStop",
    "Stop",
    "SessionEnd",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn settings_file(sb: &Sandbox) -> PathBuf {
    sb.home().join(".claude/settings.json")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Backups hookctl made next to `file`.
fn backups(file: &Path) -> Vec<PathBuf> {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let mut found: Vec<PathBuf> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{name}.hookd-backup-"))
        })
        .collect();
    found.sort();
    found
}

/// The commands of every handler under `hooks.<event>`.
fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
}

fn hookctl() -> String {
    bin("hookctl").display().to_string()
}

/// An install from before hookd ran once per tool batch had a PostToolUse
/// hook too: installing again takes it out and leaves the person's own.
#[test]
fn installing_again_takes_out_a_hook_hookd_no_longer_uses() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    let mut old: Value = serde_json::from_str(FOREIGN_SETTINGS).unwrap();
    old["hooks"]["PostToolUse"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"hooks": [{"type": "command",
            "command": format!("{} hook post-tool-use", hookctl()), "timeout": 10}]}));
    write(&file, &serde_json::to_string_pretty(&old).unwrap());
    ok(&sb.hookctl(&["install", "claude-code"]));
    write(
        &file,
        &serde_json::to_string_pretty(&{
            let mut v = read_json(&file);
            v["hooks"]["PostToolUse"] = old["hooks"]["PostToolUse"].clone();
            v
        })
        .unwrap(),
    );
    let (_, report) = doctor(&sb);
    insta::assert_snapshot!(check_text(&sb, &report, "claude-code"), @r#"
        claude-code: warn
        detail: [TEMP]/home/.claude/settings.json: hookd hooks on PostToolUse, which this version no longer uses (they cost a process each time they run)
        fix: hookctl install claude-code
    "#);

    ok(&sb.hookctl(&["install", "claude-code"]));
    let v = read_json(&file);
    assert_eq!(commands(&v, "PostToolUse"), ["~/bin/format-changed.sh"]);
    assert_eq!(
        commands(&v, "PostToolBatch"),
        [format!("{} hook post-tool-batch", hookctl())]
    );
}

#[test]
fn install_keeps_every_foreign_hook_and_key_and_uninstall_restores_the_file() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    write(&file, FOREIGN_SETTINGS);

    let out = sb.hookctl(&["install", "claude-code"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          backup of the previous file: [TEMP]/home/.claude/settings.json.hookd-backup-[TIME]
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
    "#);
    let v = read_json(&file);
    // The statusLine is hookd's by default when the person had none.
    assert_eq!(
        v["statusLine"]["command"],
        format!("{} statusline", hookctl())
    );
    for event in CLAUDE_EVENTS {
        assert_eq!(
            commands(&v, event)
                .iter()
                .filter(|c| c.starts_with(&format!("{} hook ", hookctl())))
                .count(),
            1,
            "{event}: {v:#}"
        );
    }
    let start = &v["hooks"]["SessionStart"][0];
    assert_eq!(start["matcher"], "startup|resume|clear|compact");
    assert_eq!(start["hooks"][0]["timeout"], 30);
    // Foreign hooks first, where they were; other keys untouched, in order.
    assert_eq!(commands(&v, "PostToolUse")[0], "~/bin/format-changed.sh");
    assert_eq!(commands(&v, "Notification"), ["notify-send 'Claude Code'"]);
    let original: Value = serde_json::from_str(FOREIGN_SETTINGS).unwrap();
    for key in ["model", "permissions", "env"] {
        assert_eq!(v[key], original[key], "{key}");
    }
    // Top-level keys keep the person's order (read from the text: this
    // test's own JSON parser may sort keys).
    let text = std::fs::read_to_string(&file).unwrap();
    let at = |key: &str| text.find(&format!("\n  \"{key}\":")).unwrap();
    assert!(
        at("model") < at("permissions")
            && at("permissions") < at("hooks")
            && at("hooks") < at("env"),
        "{text}"
    );
    // The previous file was backed up byte for byte.
    let saved = backups(&file);
    assert_eq!(saved.len(), 1);
    assert_eq!(
        std::fs::read_to_string(&saved[0]).unwrap(),
        FOREIGN_SETTINGS
    );
    // The slash commands are there, as shipped.
    for name in ["hookd-save.md", "hookd-resume.md"] {
        assert_eq!(
            std::fs::read_to_string(sb.home().join(".claude/commands").join(name)).unwrap(),
            std::fs::read_to_string(repo().join("hooks/claude-code/commands").join(name)).unwrap(),
            "{name}"
        );
    }

    let out = sb.hookctl(&["uninstall", "claude-code"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FOREIGN_SETTINGS);
    assert!(!sb.home().join(".claude/commands").exists());
    assert_eq!(backups(&file).len(), 2, "uninstall backs up too");
    // What it leaves behind, it says.
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          unwired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: removed hookctl statusline
          /hookd-resume: removed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: removed [TEMP]/home/.claude/commands/hookd-save.md
          backup of the previous file: [TEMP]/home/.claude/settings.json.hookd-backup-[TIME]
          wrote [TEMP]/home/.claude/settings.json
        Kept 2 backup(s) hookd made of [TEMP]/home/.claude/settings.json (settings.json.hookd-backup-*): yours to delete once you no longer need them.
        hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.
    "#);

    // Nothing of ours is left: a second uninstall changes nothing.
    let out = sb.hookctl(&["uninstall", "claude-code"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          no hookd hook entries to remove
          [TEMP]/home/.claude/settings.json unchanged
        Kept 2 backup(s) hookd made of [TEMP]/home/.claude/settings.json (settings.json.hookd-backup-*): yours to delete once you no longer need them.
        hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.
    "#);
    assert_eq!(backups(&file).len(), 2);
}

#[test]
fn installing_twice_adds_nothing_and_writes_nothing() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    write(&file, FOREIGN_SETTINGS);
    ok(&sb.hookctl(&["install", "claude-code"]));
    let first = std::fs::read_to_string(&file).unwrap();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();

    // `--statusline`, what older scripts pass, is still accepted and changes nothing.
    let out = sb.hookctl(&["install", "claude-code", "--statusline", "--json"]);
    ok(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["changed"], false);
    assert_eq!(report["events"], serde_json::json!([]));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        modified
    );
    assert_eq!(backups(&file).len(), 1);
}

#[test]
fn a_missing_settings_file_is_created_without_a_backup() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home()).unwrap();
    let file = settings_file(&sb);
    ok(&sb.hookctl(&["install", "claude-code"]));
    let v = read_json(&file);
    assert_eq!(
        v["hooks"].as_object().unwrap().len(),
        CLAUDE_EVENTS.len(),
        "{v:#}"
    );
    assert!(backups(&file).is_empty());
    ok(&sb.hookctl(&["uninstall", "claude-code"]));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}\n");
}

#[test]
fn an_invalid_settings_file_is_refused_with_where_it_is_broken() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    let broken = "{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"Stop\": [\n  }\n}\n";
    write(&file, broken);
    let mut said = String::new();
    for args in [
        &["install", "claude-code"][..],
        &["install", "claude-code", "--dry-run"],
        &["uninstall", "claude-code"],
    ] {
        let out = sb.hookctl(args);
        said.push_str(&format!("# {}\n{}", args.join(" "), output_text(&out)));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
        assert!(backups(&file).is_empty());
    }
    insta::assert_snapshot!(sb.normalize(&said), @r#"
        # install claude-code
        --- stderr
        hookctl: [TEMP]/home/.claude/settings.json is not valid JSON: expected value (line 5, column 3); nothing was changed. Fix the file (comments are not allowed) or move it aside, then run this again
        --- exit 1
        # install claude-code --dry-run
        --- stderr
        hookctl: [TEMP]/home/.claude/settings.json is not valid JSON: expected value (line 5, column 3); nothing was changed. Fix the file (comments are not allowed) or move it aside, then run this again
        --- exit 1
        # uninstall claude-code
        --- stderr
        hookctl: [TEMP]/home/.claude/settings.json is not valid JSON: expected value (line 5, column 3); nothing was changed. Fix the file (comments are not allowed) or move it aside, then run this again
        --- exit 1
    "#);

    // A file of the wrong shape is refused just as plainly.
    write(&file, "{\"hooks\": [\"not\", \"an object\"]}");
    let out = sb.hookctl(&["install", "claude-code"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: `hooks` in [TEMP]/home/.claude/settings.json is a list, not an object; nothing was changed. Fix it by hand, then run this again
        --- exit 1
    "#);
}

#[test]
fn a_dry_run_prints_the_diff_and_writes_nothing() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    write(&file, FOREIGN_SETTINGS);
    let out = sb.hookctl(&["install", "claude-code", "--dry-run"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          would wire SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /hookd-resume: would install [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: would install [TEMP]/home/.claude/commands/hookd-save.md
        --- [TEMP]/home/.claude/settings.json
        +++ [TEMP]/home/.claude/settings.json
                 ]
               }
        +    ],
        +    "SessionStart": [
        +      {
        +        "matcher": "startup|resume|clear|compact",
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook session-start",
        +            "timeout": 30
        +          }
        +        ]
        +      }
        +    ],
        +    "UserPromptSubmit": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook user-prompt-submit",
        +            "timeout": 10
        +          }
        +        ]
        +      }
        +    ],
        +    "PostToolBatch": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook post-tool-batch",
        +            "timeout": 10
        +          }
        +        ]
        +      }
        +    ],
        +    "PreCompact": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook pre-compact",
        +            "timeout": 60
        +          }
        +        ]
        +      }
        +    ],
        +    "PostCompact": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook post-compact",
        +            "timeout": 10
        +          }
        +        ]
        +      }
        +    ],
        +    "SubagentStop": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook subagent-stop",
        +            "timeout": 10
        +          }
        +        ]
        +      }
        +    ],
        +    "Stop": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook stop",
        +            "timeout": 10
        +          }
        +        ]
        +      }
        +    ],
        +    "SessionEnd": [
        +      {
        +        "hooks": [
        +          {
        +            "type": "command",
        +            "command": "[BIN]/hookctl hook session-end",
        +            "timeout": 10
        +          }
        +        ]
        +      }
             ]
           },
           "env": {
             "FOO": "bar"
        +  },
        +  "statusLine": {
        +    "type": "command",
        +    "command": "[BIN]/hookctl statusline"
           }
         }
          (dry run: nothing was written)
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
    "#);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FOREIGN_SETTINGS);
    assert!(backups(&file).is_empty());
    assert!(!sb.home().join(".claude/commands").exists());
}

#[test]
fn a_statusline_of_the_users_own_is_replaced_only_with_force() {
    let sb = Sandbox::new();
    let file = settings_file(&sb);
    write(
        &file,
        "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"~/my-line.sh\"\n  }\n}\n",
    );
    // It keeps the person's, and says how to add ours.
    let out = sb.hookctl(&["install", "claude-code"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: kept yours (`~/my-line.sh`)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          backup of the previous file: [TEMP]/home/.claude/settings.json.hookd-backup-[TIME]
          wrote [TEMP]/home/.claude/settings.json
        To see hookd's context figure in your statusLine, run `[BIN]/hookctl statusline` from your script with the same JSON on its stdin, and print its line with yours; or replace yours with hookd's: `hookctl install claude-code --force`.
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
    "#);
    assert_eq!(read_json(&file)["statusLine"]["command"], "~/my-line.sh");

    let out = sb.hookctl(&["install", "claude-code", "--force"]);
    ok(&out);
    assert_eq!(
        read_json(&file)["statusLine"]["command"],
        format!("{} statusline", hookctl())
    );
    // Uninstall removes ours; the person's original is in the backup.
    ok(&sb.hookctl(&["uninstall", "claude-code"]));
    assert!(read_json(&file).get("statusLine").is_none());
    let first_backup = &backups(&file)[0];
    assert_eq!(
        std::fs::read_to_string(first_backup).unwrap(),
        "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"~/my-line.sh\"\n  }\n}\n",
    );
}

#[test]
fn no_statusline_leaves_the_statusline_alone() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home()).unwrap();
    let file = settings_file(&sb);
    let out = sb.hookctl(&["install", "claude-code", "--no-statusline"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
    "#);
    assert!(read_json(&file).get("statusLine").is_none());
    assert!(!read_json(&file)["hooks"].as_object().unwrap().is_empty());
}

#[test]
fn project_scope_wires_the_projects_own_files() {
    let sb = Sandbox::new();
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let project_arg = project.display().to_string();
    for (harness, file) in [
        ("claude-code", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("gemini-cli", ".gemini/settings.json"),
    ] {
        ok(&sb.hookctl(&["install", harness, "--project", &project_arg]));
        assert!(project.join(file).is_file(), "{harness}");
    }
    assert!(project.join(".claude/commands/hookd-save.md").is_file());
    assert!(
        !sb.home().join(".claude").exists(),
        "the user's settings stay untouched"
    );
    // A file a team commits names no path of this user's: its hooks are
    // the shipped fragment's, bare `hookctl` and all.
    let home = sb.path().display().to_string();
    for (harness, file) in [
        ("claude-code", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("gemini-cli", ".gemini/settings.json"),
    ] {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(!text.contains(&home), "{file}: {text}");
        let shipped = read_json(
            &repo()
                .join("hooks")
                .join(harness)
                .join(Path::new(file).file_name().unwrap()),
        );
        assert_eq!(
            read_json(&project.join(file))["hooks"],
            shipped["hooks"],
            "{file}"
        );
    }
    // Its doctor takes the bare `hookctl` for the one PATH finds: this one.
    let dir = bin("hookctl").parent().unwrap().display().to_string();
    let out = sb
        .command("hookctl")
        .current_dir(&project)
        .env(
            "PATH",
            format!("{dir}:{}", std::env::var("PATH").unwrap_or_default()),
        )
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["claude-code", "codex", "gemini-cli"] {
        let c = check(&report, name);
        assert!(
            !c["detail"]
                .as_str()
                .unwrap_or("")
                .contains("not this hookctl"),
            "{c:#}"
        );
    }
    // Uninstalled, the project holds nothing of hookd's: no `{}`, no backup.
    for harness in ["claude-code", "codex", "gemini-cli"] {
        ok(&sb.hookctl(&["uninstall", harness, "--project", &project_arg]));
    }
    let left: Vec<_> = walk(&project);
    assert!(left.is_empty(), "left behind: {left:?}");

    let out = sb.hookctl(&["install", "codex", "--project", "/no/such/dir"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: --project /no/such/dir: no such directory
        --- exit 1
    "#);
}

/// The fragments shipped under `hooks/` are what install writes, with
/// `hookctl` in place of the installed path.
#[test]
fn the_shipped_fragments_are_what_install_writes() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home()).unwrap();
    ok(&sb.hookctl(&["install", "claude-code"]));
    ok(&sb.hookctl(&["install", "codex"]));
    ok(&sb.hookctl(&["install", "gemini-cli"]));
    let as_shipped = |path: PathBuf| -> Value {
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str(&text.replace(&hookctl(), "hookctl")).unwrap()
    };
    let fragment = |rel: &str| read_json(&repo().join("hooks").join(rel));

    let claude = as_shipped(settings_file(&sb));
    assert_eq!(
        claude["hooks"],
        fragment("claude-code/settings.json")["hooks"]
    );
    assert_eq!(
        claude["statusLine"],
        fragment("claude-code/statusline.json")["statusLine"]
    );
    assert_eq!(
        as_shipped(sb.home().join(".codex/hooks.json")),
        fragment("codex/hooks.json")
    );
    assert_eq!(
        as_shipped(sb.home().join(".gemini/settings.json")),
        fragment("gemini-cli/settings.json")
    );
    // Every slash command shipped is installed, as it is.
    for entry in std::fs::read_dir(repo().join("hooks/claude-code/commands")).unwrap() {
        let path = entry.unwrap().path();
        let installed = sb
            .home()
            .join(".claude/commands")
            .join(path.file_name().unwrap());
        assert_eq!(
            std::fs::read_to_string(&installed).unwrap(),
            std::fs::read_to_string(&path).unwrap()
        );
    }
}

#[test]
fn gemini_settings_keep_their_other_keys_and_codex_honours_codex_home() {
    let sb = Sandbox::new();
    let gemini = sb.home().join(".gemini/settings.json");
    let original = "{\n  \"theme\": \"GitHub\",\n  \"hooks\": {\n    \"disabled\": [\n      \"secret-scanner\"\n    ],\n    \"BeforeTool\": [\n      {\n        \"matcher\": \"run_shell_command\",\n        \"hooks\": [\n          {\n            \"name\": \"secret-scanner\",\n            \"type\": \"command\",\n            \"command\": \"scan.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    write(&gemini, original);
    ok(&sb.hookctl(&["install", "gemini-cli"]));
    let v = read_json(&gemini);
    assert_eq!(v["theme"], "GitHub");
    assert_eq!(
        v["hooks"]["disabled"],
        serde_json::json!(["secret-scanner"])
    );
    assert_eq!(
        commands(&v, "AfterTool"),
        [format!(
            "{} hook --harness gemini-cli after-tool",
            hookctl()
        )]
    );
    assert_eq!(v["hooks"]["AfterTool"][0]["hooks"][0]["timeout"], 10_000);
    ok(&sb.hookctl(&["uninstall", "gemini-cli"]));
    assert_eq!(std::fs::read_to_string(&gemini).unwrap(), original);

    let codex_home = sb.path().join("codex-home");
    let out = sb
        .command("hookctl")
        .env("CODEX_HOME", &codex_home)
        .args(["install", "codex"])
        .output()
        .unwrap();
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        codex (user settings): [TEMP]/codex-home/hooks.json
          wired SessionStart, UserPromptSubmit, PostToolUse, PreCompact, PostCompact, Stop, SessionEnd
          wrote [TEMP]/codex-home/hooks.json
        Codex skips new or changed hooks, silently, until you trust them: open `codex` in a terminal once and choose "Trust all" at its hook review (or trust each hookd hook in /hooks). Project hooks also need the project to be trusted. `hookctl doctor` checks that Codex has trusted them.
    "#);
    let v = read_json(&codex_home.join("hooks.json"));
    assert_eq!(
        commands(&v, "PreCompact"),
        [format!("{} hook --harness codex pre-compact", hookctl())]
    );
}

#[test]
fn codex_is_wired_once_and_doctor_knows_whether_codex_trusts_the_hooks() {
    let sb = Sandbox::new();
    let codex_home = sb.path().join("codex-home");
    let project = sb.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let codex = |args: &[&str]| {
        sb.command("hookctl")
            .env("CODEX_HOME", &codex_home)
            .current_dir(&project)
            .args(args)
            .output()
            .unwrap()
    };
    ok(&codex(&["install", "codex"]));
    let user_file = codex_home.join("hooks.json");
    let v = read_json(&user_file);
    assert_eq!(
        commands(&v, "SessionEnd"),
        [format!("{} hook --harness codex session-end", hookctl())]
    );
    assert_eq!(
        v["hooks"]["SessionStart"][0]["matcher"],
        "startup|resume|clear|compact|fork"
    );
    // Codex runs both files' hooks: a second level is refused by default.
    let project_arg = project.display().to_string();
    let twice = codex(&["install", "codex", "--project", &project_arg]);
    insta::assert_snapshot!(sb.normalize(&output_text(&twice)), @r#"
        --- stderr
        hookctl: hookd is already wired into Codex in [TEMP]/codex-home/hooks.json; Codex runs the hooks of the user's file and the project's both, so every event would reach hookd twice. Keep one: `hookctl uninstall codex` with the other scope, or pass --force to install anyway
        --- exit 1
    "#);
    assert!(!project.join(".codex/hooks.json").exists());

    // Not trusted yet: doctor says so, with the fix.
    let doctor = |sb: &Sandbox| {
        let out = sb
            .command("hookctl")
            .env("CODEX_HOME", &codex_home)
            .current_dir(&project)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let report = doctor(&sb);
    insta::assert_snapshot!(check_text(&sb, &report, "codex"), @r#"
        codex: warn
        detail: [TEMP]/codex-home/hooks.json: Codex has not trusted hookd's hooks for session_start, user_prompt_submit, post_tool_use, pre_compact, post_compact, stop, session_end, and `codex exec` skips untrusted hooks without a word
        fix: run `codex` in a terminal once and choose "Trust all" at the hook review (or trust hookd's hooks in /hooks)
    "#);
    // Codex's hook review records each hook's trust in config.toml.
    let mut trusted = String::from("model = \"m\"\n");
    for event in [
        "session_start",
        "user_prompt_submit",
        "post_tool_use",
        "pre_compact",
        "post_compact",
        "stop",
        "session_end",
    ] {
        trusted += &format!(
            "[hooks.state.\"{}:{event}:0:0\"]\ntrusted_hash = \"sha256:00\"\n",
            user_file.display()
        );
    }
    write(&codex_home.join("config.toml"), &trusted);
    let report = doctor(&sb);
    assert_eq!(check(&report, "codex")["status"], "ok", "{report}");

    // Both levels wired anyway (--force): doctor flags the duplicate.
    ok(&codex(&[
        "install",
        "codex",
        "--project",
        &project_arg,
        "--force",
    ]));
    let report = doctor(&sb);
    insta::assert_snapshot!(check_text(&sb, &report, "codex"), @r#"
        codex: fail
        detail: hookd is wired in both [TEMP]/codex-home/hooks.json and [TEMP]/proj/.codex/hooks.json: Codex runs both, so every event reaches hookd twice
        fix: keep one: hookctl uninstall codex --user, or hookctl uninstall codex --project DIR
    "#);
}

#[test]
fn gemini_cli_honours_gemini_cli_home() {
    let sb = Sandbox::new();
    let home = sb.path().join("gemini-home");
    let out = sb
        .command("hookctl")
        .env("GEMINI_CLI_HOME", &home)
        .args(["install", "gemini-cli"])
        .output()
        .unwrap();
    ok(&out);
    let v = read_json(&home.join(".gemini/settings.json"));
    assert_eq!(
        commands(&v, "PreCompress"),
        [format!(
            "{} hook --harness gemini-cli pre-compress",
            hookctl()
        )]
    );
    assert!(!sb.home().join(".gemini/settings.json").exists());
}

/// doctor with this hookctl's directory first on PATH.
fn doctor(sb: &Sandbox) -> (Option<i32>, Value) {
    let dir = bin("hookctl").parent().unwrap().display().to_string();
    let path = format!("{dir}:{}", std::env::var("PATH").unwrap_or_default());
    let out = sb
        .command("hookctl")
        .env("PATH", path)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}\n{}\n{}", stdout(&out), stderr(&out)));
    (out.status.code(), report)
}

/// One check of a `doctor --json` report as a person reads it: its
/// status, what it found and the fix, normalized for a snapshot.
fn check_text(sb: &Sandbox, report: &Value, name: &str) -> String {
    let c = check(report, name);
    let mut text = format!("{name}: {}\n", c["status"].as_str().unwrap_or("?"));
    for field in ["detail", "fix"] {
        if let Some(value) = c[field].as_str() {
            text += &format!("{field}: {value}\n");
        }
    }
    sb.normalize(&text)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report:#}"))
}

#[test]
fn doctor_explains_what_fails_and_passes_once_it_is_fixed() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home().join(".claude")).unwrap();
    let (code, report) = doctor(&sb);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["ok"], false);
    let claude = check(&report, "claude-code");
    assert_eq!(claude["status"], "fail", "{claude:#}");
    assert_eq!(claude["fix"], "hookctl install claude-code");
    assert_eq!(
        check(&report, "templates")["detail"],
        "built-in (none of yours)"
    );
    assert_eq!(check(&report, "hookd")["status"], "ok");
    assert_eq!(check(&report, "daemon")["status"], "ok", "autostartable");

    ok(&sb.hookctl(&["install", "claude-code"]));
    let (code, report) = doctor(&sb);
    assert_eq!(check(&report, "claude-code")["status"], "ok", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");

    // Wired to another hookctl is a failure with the same fix.
    let file = settings_file(&sb);
    let moved = std::fs::read_to_string(&file)
        .unwrap()
        .replace(&hookctl(), "/old/place/hookctl");
    std::fs::write(&file, moved).unwrap();
    let (code, report) = doctor(&sb);
    assert_eq!(code, Some(1));
    insta::assert_snapshot!(check_text(&sb, &report, "claude-code"), @r#"
        claude-code: fail
        detail: [TEMP]/home/.claude/settings.json: hooks run /old/place/hookctl, not this hookctl ([BIN]/hookctl)
        fix: hookctl install claude-code
    "#);

    // A broken config names its file.
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(sb.config_dir().join("config.yaml"), "client:\n  nope: 1\n").unwrap();
    let (_, report) = doctor(&sb);
    insta::assert_snapshot!(check_text(&sb, &report, "config"), @r#"
        config: fail
        detail: config file [TEMP]/config/config.yaml: client: unknown field `nope`, expected one of `hook_timeout_ms`, `pre_compact_timeout_ms`, `session_start_timeout_ms`, `statusline_timeout_ms`, `autostart`, `allow_block` at line 2 column 3
        fix: edit the file it names; `hookctl config` shows each value and its source
    "#);
}

#[test]
fn paths_completions_and_usage_errors() {
    let sb = Sandbox::new();
    let out = sb.hookctl(&["paths", "config-dir"]);
    ok(&out);
    assert_eq!(stdout(&out).trim(), sb.config_dir().display().to_string());
    let out = sb.hookctl(&["paths", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["log-dir"],
        sb.state_dir().join("logs").display().to_string()
    );
    assert_eq!(v["socket"], sb.socket().display().to_string());

    for shell in ["bash", "zsh", "fish"] {
        let out = sb.hookctl(&["completions", shell]);
        ok(&out);
        let script = stdout(&out);
        assert!(
            script.contains("hookctl") && script.contains("doctor"),
            "{shell}"
        );
    }
    // Usage errors exit 1: a harness reads 2 as "block".
    let mut said = String::new();
    for args in [
        &["install", "no-such-harness"][..],
        &["completions", "tcsh"],
        &["paths", "nope"],
    ] {
        let out = sb.hookctl(args);
        said += &format!("# hookctl {}\n{}", args.join(" "), output_text(&out));
    }
    insta::assert_snapshot!(sb.normalize(&said), @r#"
        # hookctl install no-such-harness
        --- stderr
        error: invalid value 'no-such-harness' for '<HARNESS>': unknown harness `no-such-harness` (known: claude-code, codex, gemini-cli, qwen-code, copilot-cli)

        For more information, try '--help'.
        --- exit 1
        # hookctl completions tcsh
        --- stderr
        error: invalid value 'tcsh' for '<SHELL>'
          [possible values: bash, elvish, fish, powershell, zsh]

          tip: a similar value exists: 'zsh'

        For more information, try '--help'.
        --- exit 1
        # hookctl paths nope
        --- stderr
        hookctl: unknown path `nope` (known: socket, config-dir, config-file, templates-dir, state-dir, log-dir, data-dir)
        --- exit 1
    "#);
}

#[test]
fn the_service_unit_runs_hookd_on_the_hooks_socket() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let sb = Sandbox::new();
    let xdg = sb.path().join("xdg");
    let service = |args: &[&str]| {
        sb.command("hookctl")
            .env("XDG_CONFIG_HOME", &xdg)
            .arg("daemon")
            .args(args)
            .output()
            .unwrap()
    };
    let out = service(&["install-service", "--dry-run"]);
    let dry_run = output_text(&out);
    insta::assert_snapshot!(sb.normalize(&dry_run), @r#"
        systemd would write [TEMP]/xdg/systemd/user/hookd.service
        [Unit]
        Description=hookd: keeps AI coding agents' working state across context compaction

        [Service]
        Type=simple
        ExecStart=[BIN]/hookd run --socket [SOCKET]
        Restart=on-failure
        RestartSec=2
        Environment="HOOKD_STATE_DIR=[TEMP]/state"
        Environment="HOOKD_CONFIG_DIR=[TEMP]/config"
        Environment="HOOKD_DATA_DIR=[TEMP]/data"

        [Install]
        WantedBy=default.target
        would run: systemctl --user daemon-reload
        would run: systemctl --user enable --now hookd.service
    "#);
    let unit = xdg.join("systemd/user/hookd.service");
    assert!(!unit.exists());

    ok(&service(&["install-service", "--no-start"]));
    let written = std::fs::read_to_string(&unit).unwrap();
    // The unit written is the one the dry run showed.
    let shown: Vec<&str> = dry_run
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("would run"))
        .collect();
    assert_eq!(written.trim_end(), shown.join("\n").trim_end());
    ok(&service(&["uninstall-service", "--no-start"]));
    assert!(!unit.exists());
}

#[test]
fn logs_print_the_daemons_log() {
    let sb = Sandbox::new();
    let out = sb.hookctl(&["logs"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: no hookd log in [TEMP]/state/logs yet (hookd writes one once it runs)
        --- exit 1
    "#);

    ok(&sb.hookctl(&["daemon", "start"]));
    let out = sb.hookctl(&["logs", "-n", "20"]);
    ok(&sb.hookctl(&["daemon", "stop"]));
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @"[TIME]  INFO hookd::server: listening socket=[SOCKET] pid=[PID]");
}

/// install.sh's output without the lines of the checks `hookctl doctor`
/// ran at its end other than `keep` (the rest name this machine's own
/// tools: its git, whether Claude Code is installed), normalized.
fn installer_said(sb: &Sandbox, out: &Output, keep: &[&str]) -> String {
    let mut said = String::new();
    let mut kept = true;
    for line in output_text(out).lines() {
        let status = line.split_whitespace().next().unwrap_or_default();
        if ["ok", "warn", "skip", "fail"].contains(&status)
            && line.starts_with(&format!("{status} "))
        {
            let name = line.split_whitespace().nth(1).unwrap_or_default();
            kept = keep.contains(&name);
        } else if !line.starts_with("                   ") {
            kept = true;
        }
        if kept {
            said += line;
            said.push('\n');
        }
    }
    sb.normalize(&said)
}

/// install.sh in a temporary home and prefix, with the binaries this test
/// run built (`--from-build`), so it does not build a release again.
struct Setup {
    sb: Sandbox,
    prefix: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.home()).unwrap();
        let prefix = sb.path().join("prefix");
        Setup { sb, prefix }
    }

    fn bin_dir(&self) -> PathBuf {
        self.prefix.join("bin")
    }

    /// install.sh with `args`, the prefix on PATH (or not), and only the
    /// sandbox's environment.
    fn run(&self, args: &[&str], path: &str) -> Output {
        Command::new("bash")
            .arg(repo().join("install.sh"))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.sb.home())
            .env("HOOKD_SOCKET", self.sb.socket())
            .env("HOOKD_STATE_DIR", self.sb.state_dir())
            .env("HOOKD_CONFIG_DIR", self.sb.config_dir())
            .env("HOOKD_DATA_DIR", self.sb.path().join("data"))
            // A daemon a failed test leaves behind goes away by itself.
            .env("HOOKD_DAEMON__IDLE_TIMEOUT_SECS", "120")
            .current_dir(self.sb.path())
            .output()
            .expect("run install.sh")
    }

    fn install(&self, extra: &[&str]) -> Output {
        let built = bin("hookctl").parent().unwrap().display().to_string();
        let prefix = self.prefix.display().to_string();
        let mut args = vec!["--from-build", &built, "--prefix", &prefix];
        args.extend_from_slice(extra);
        let path = format!(
            "{}:{}",
            self.bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.run(&args, &path)
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = self.sb.hookd(&["stop"]);
    }
}

#[test]
fn install_sh_sets_up_twice_without_change_and_uninstalls_cleanly() {
    let setup = Setup::new();
    let sb = &setup.sb;
    let file = settings_file(sb);
    write(&file, FOREIGN_SETTINGS);

    // An older install's copy of a template, never changed, and one of the
    // person's own.
    let templates = sb.config_dir().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    let older = repo().join("tests/fixtures/older-templates/resume_prompt.md.hbs");
    std::fs::copy(&older, templates.join("resume_prompt.md.hbs")).unwrap();
    let own = std::fs::read_to_string(repo().join("templates/progress_summary.md.hbs")).unwrap()
        + "\n(my own line)\n";
    write(&templates.join("progress_summary.md.hbs"), &own);

    // The stale template copy goes, the person's own stays; nothing that
    // reads as an error on a fresh machine, and a last line saying what
    // comes next.
    let out = setup.install(&[]);
    ok(&out);
    let text = stdout(&out);
    assert!(!text.contains("not running"), "{text}");
    insta::assert_snapshot!(installer_said(sb, &out, &[]), @r#"
        install.sh: installed [TEMP]/prefix/bin/hookd
        install.sh: installed [TEMP]/prefix/bin/hookctl
        install.sh: removed [TEMP]/config/templates/resume_prompt.md.hbs (an older hookd's copy, unchanged; the built-in one applies)
        install.sh: wrote [TEMP]/config/config.yaml
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          backup of the previous file: [TEMP]/home/.claude/settings.json.hookd-backup-[TIME]
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
        hookd started (pid [PID]) on [SOCKET]
        all checks passed
        install.sh: done: hookd is running and Claude Code is wired; restart running Claude Code sessions, then try: hookctl status
    "#);
    for name in ["hookd", "hookctl"] {
        assert_eq!(
            std::fs::read(setup.bin_dir().join(name)).unwrap(),
            std::fs::read(bin(name)).unwrap(),
            "{name}"
        );
    }
    let installed = setup.bin_dir().join("hookctl").display().to_string();
    let v = read_json(&file);
    assert_eq!(commands(&v, "Stop"), [format!("{installed} hook stop")]);
    let config = sb.config_dir().join("config.yaml");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .starts_with("# hookd configuration")
    );
    // The built-in templates are not copied.
    let left: Vec<_> = std::fs::read_dir(&templates)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["progress_summary.md.hbs"]);
    let status = sb.hookctl(&["daemon", "status"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&status)), @"hookd 0.1.0 is running (pid [PID], up [DURATION]) on [SOCKET]");

    // Twice: nothing changes.
    let files = [
        file.clone(),
        config.clone(),
        setup.bin_dir().join("hookd"),
        setup.bin_dir().join("hookctl"),
    ];
    let stamps: Vec<_> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().modified().unwrap())
        .collect();
    let out = setup.install(&[]);
    ok(&out);
    insta::assert_snapshot!(installer_said(sb, &out, &[]), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          already wired: no hook entry to change
          statusLine: already hookctl statusline
          /hookd-resume: already [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: already [TEMP]/home/.claude/commands/hookd-save.md
          [TEMP]/home/.claude/settings.json unchanged
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
        hookd is already running (pid [PID]) on [SOCKET]
        all checks passed
        install.sh: done: hookd is running and Claude Code is wired; restart running Claude Code sessions, then try: hookctl status
    "#);
    for (f, stamp) in files.iter().zip(&stamps) {
        assert_eq!(
            std::fs::metadata(f).unwrap().modified().unwrap(),
            *stamp,
            "{}",
            f.display()
        );
    }
    assert_eq!(backups(&file).len(), 1);

    // A config of the person's own survives uninstall; ours does not.
    let start_lock = sb.socket().with_file_name("hookd.sock.start");
    write(&start_lock, "");
    // It says what it leaves behind, and how to remove that too.
    let out = setup.install(&["--uninstall"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          unwired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: removed hookctl statusline
          /hookd-resume: removed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: removed [TEMP]/home/.claude/commands/hookd-save.md
          backup of the previous file: [TEMP]/home/.claude/settings.json.hookd-backup-[TIME]
          wrote [TEMP]/home/.claude/settings.json
        Kept 2 backup(s) hookd made of [TEMP]/home/.claude/settings.json (settings.json.hookd-backup-*): yours to delete once you no longer need them.
        hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.
        hookd stopped (pid [PID])
        install.sh: removed [SOCKET].start
        install.sh: kept [TEMP]/config/templates/progress_summary.md.hbs (yours)
        install.sh: removed [TEMP]/config/config.yaml
        install.sh: removed [TEMP]/prefix/bin/hookd
        install.sh: removed [TEMP]/prefix/bin/hookctl
        install.sh: done. What stays behind, yours to keep or delete:
        install.sh:   session state and logs: [TEMP]/state
        install.sh:   the cross-task memory: [TEMP]/data/memory
        install.sh:   each project's .workflow/ directory
        install.sh:   the checkpoints in each repository (refs under refs/hookd/); in a repository, this deletes them:
        install.sh:     git for-each-ref --format='%(refname)' refs/hookd/ | xargs -n1 git update-ref -d
    "#);
    assert!(!start_lock.exists(), "the start lock is ours to remove");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FOREIGN_SETTINGS);
    assert!(!setup.bin_dir().join("hookd").exists());
    assert!(!setup.bin_dir().join("hookctl").exists());
    assert!(!config.exists());
    assert_eq!(
        std::fs::read_to_string(templates.join("progress_summary.md.hbs")).unwrap(),
        own
    );
    let status = sb.hookctl(&["daemon", "status"]);
    assert_eq!(status.status.code(), Some(3), "{}", stdout(&status));
}

#[test]
fn install_sh_no_wire_leaves_claude_code_alone_and_keeps_a_changed_config() {
    let setup = Setup::new();
    let out = setup.install(&["--no-wire"]);
    ok(&out);
    assert!(!settings_file(&setup.sb).exists());
    let config = setup.sb.config_dir().join("config.yaml");
    std::fs::write(&config, "client:\n  hook_timeout_ms: 500\n").unwrap();
    let out = setup.install(&["--uninstall"]);
    insta::assert_snapshot!(setup.sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          no hookd hook entries to remove
          [TEMP]/home/.claude/settings.json unchanged
        hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.
        hookd stopped (pid [PID])
        install.sh: kept [TEMP]/config/config.yaml (you changed it)
        install.sh: removed [TEMP]/prefix/bin/hookd
        install.sh: removed [TEMP]/prefix/bin/hookctl
        install.sh: done. What stays behind, yours to keep or delete:
        install.sh:   session state and logs: [TEMP]/state
        install.sh:   the cross-task memory: [TEMP]/data/memory
        install.sh:   each project's .workflow/ directory
        install.sh:   the checkpoints in each repository (refs under refs/hookd/); in a repository, this deletes them:
        install.sh:     git for-each-ref --format='%(refname)' refs/hookd/ | xargs -n1 git update-ref -d
    "#);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "client:\n  hook_timeout_ms: 500\n"
    );
}

#[test]
fn install_sh_uninstall_removes_the_starting_config_an_earlier_install_wrote() {
    let setup = Setup::new();
    ok(&setup.install(&["--no-wire"]));
    let config = setup.sb.config_dir().join("config.yaml");
    let ours = std::fs::read_to_string(&config).unwrap();
    let pointer = "# from; docs/configuration.md, in hookd's sources, lists every key.\n";
    assert!(ours.contains(pointer), "{ours}");
    // Earlier installs pointed at the README for the keys.
    let earlier = ours.replace(
        pointer,
        "# from; the README's configuration reference lists every key.\n",
    );
    std::fs::write(&config, earlier).unwrap();
    let out = setup.install(&["--uninstall"]);
    insta::assert_snapshot!(setup.sb.normalize(&output_text(&out)), @r#"
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          no hookd hook entries to remove
          [TEMP]/home/.claude/settings.json unchanged
        hookd itself stays installed (and running, if it was): `./install.sh --uninstall` removes it, its start lock and its default files.
        hookd stopped (pid [PID])
        install.sh: removed [TEMP]/config/config.yaml
        install.sh: removed [TEMP]/prefix/bin/hookd
        install.sh: removed [TEMP]/prefix/bin/hookctl
        install.sh: done. What stays behind, yours to keep or delete:
        install.sh:   session state and logs: [TEMP]/state
        install.sh:   the cross-task memory: [TEMP]/data/memory
        install.sh:   each project's .workflow/ directory
        install.sh:   the checkpoints in each repository (refs under refs/hookd/); in a repository, this deletes them:
        install.sh:     git for-each-ref --format='%(refname)' refs/hookd/ | xargs -n1 git update-ref -d
    "#);
    assert!(!config.exists());
}

#[test]
fn install_sh_says_clearly_what_is_wrong() {
    let setup = Setup::new();
    let out = setup.run(&["--help"], "/usr/bin:/bin");
    ok(&out);
    insta::assert_snapshot!(stdout(&out), @r#"
        Sets hookd up in one command: builds hookd and hookctl, installs them,
        writes the default config (never over yours) and takes away template copies
        an older install left unchanged, wires Claude
        Code, starts the daemon and ends with `hookctl doctor`. Running it again
        changes nothing; --uninstall undoes it.

          ./install.sh [--prefix DIR]     install into DIR/bin (default ~/.local)
          ./install.sh --no-wire          leave Claude Code's settings alone
          ./install.sh --from-build DIR   use the hookd and hookctl in DIR instead of building
          ./install.sh --uninstall        undo it all (give the same --prefix)
          ./install.sh --help

        Building needs Rust (cargo), git and a C compiler (libgit2 and tree-sitter
        are compiled from C); it honours CARGO_TARGET_DIR and CC. Exit status: 0
        when doctor passes; a prefix not on PATH is the last line's advice, not a
        failure (the hooks run hookctl by its full path).
    "#);

    // No cargo (and no --from-build).
    if !Path::new("/usr/bin/cargo").exists() && !Path::new("/bin/cargo").exists() {
        let out = setup.run(&[], "/usr/bin:/bin");
        insta::assert_snapshot!(setup.sb.normalize(&output_text(&out)), @r#"
            --- stderr
            install.sh: error: cargo not found: install a Rust toolchain first (https://rustup.rs), open a new shell, and run ./install.sh again
            --- exit 1
        "#);
    }

    // A prefix that cannot be created.
    let blocker = setup.sb.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let built = bin("hookctl").parent().unwrap().display().to_string();
    let bad = blocker.join("sub").display().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    let out = setup.run(&["--from-build", &built, "--prefix", &bad], &path);
    insta::assert_snapshot!(setup.sb.normalize(&output_text(&out)), @r#"
        --- stderr
        install.sh: error: cannot create [TEMP]/a-file/sub/bin: choose a --prefix you can write to (the default is ~/.local)
        --- exit 1
    "#);

    // A prefix that is not on PATH: installed and working (the hooks name
    // hookctl by its path), and the last line says the one step left.
    let prefix = setup.prefix.display().to_string();
    let out = setup.run(&["--from-build", &built, "--prefix", &prefix], &path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Its doctor says the same, not "on PATH" a line above.
    assert!(!stdout(&out).contains("(on PATH)"), "{}", stdout(&out));
    insta::assert_snapshot!(installer_said(&setup.sb, &out, &["hookctl"]), @r#"
        install.sh: installed [TEMP]/prefix/bin/hookd
        install.sh: installed [TEMP]/prefix/bin/hookctl
        install.sh: wrote [TEMP]/config/config.yaml
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
        hookd started (pid [PID]) on [SOCKET]
        warn  hookctl      hookctl 0.1.0 at [TEMP]/prefix/bin/hookctl; not on your PATH (hooks run it by its path; typing hookctl and the slash commands need it there)
                           fix: add [TEMP]/prefix/bin to PATH, e.g. echo 'export PATH="[TEMP]/prefix/bin:$PATH"' >> ~/.profile (or ~/.zshrc), then open a new shell
        all checks passed
        install.sh: done, one step left: [TEMP]/prefix/bin is not on your PATH (hooks work without it; typing hookctl, /hookd-resume and /hookd-save need it): echo 'export PATH="[TEMP]/prefix/bin:$PATH"' >> ~/.bashrc, then open a new shell
    "#);
    assert!(setup.bin_dir().join("hookctl").is_file());
}

#[test]
fn install_sh_checks_for_a_c_compiler_before_building() {
    let setup = Setup::new();
    // A PATH with cargo and git (stand-ins) but no C compiler.
    let tools = setup.sb.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for name in ["cargo", "git"] {
        write(&tools.join(name), "#!/bin/sh\nexit 0\n");
        std::fs::set_permissions(
            tools.join(name),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    for name in ["bash", "dirname", "sed"] {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(real, tools.join(name)).unwrap();
    }
    let out = setup.run(&[], &tools.display().to_string());
    // Said before any building starts.
    insta::assert_snapshot!(setup.sb.normalize(&output_text(&out)), @r#"
        --- stderr
        install.sh: error: no C compiler (cc) found: the build compiles C (libgit2, tree-sitter). Install one (Debian/Ubuntu: sudo apt-get install build-essential; Fedora: sudo dnf install gcc; macOS: xcode-select --install), then run ./install.sh again
        --- exit 1
    "#);
}

/// hookd's slash commands never hide Claude Code's own (`/resume`): an
/// older install's `/resume` and `/save-state` are taken away, exactly as
/// written; a person's own command of that name stays.
#[test]
fn install_takes_away_an_older_hookds_resume_and_keeps_the_persons_own() {
    let retired = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hooks/claude-code/retired");
    let mut said = String::new();
    for (version, theirs) in [(1, false), (2, false), (3, true)] {
        let sb = Sandbox::new();
        let commands = sb.home().join(".claude/commands");
        std::fs::create_dir_all(&commands).unwrap();
        let older = |name: &str| std::fs::read(retired.join(format!("{version}-{name}"))).unwrap();
        std::fs::write(commands.join("save-state.md"), older("save-state.md")).unwrap();
        let own_resume = "---\ndescription: my own resume\n---\nDo it my way.\n";
        if theirs {
            std::fs::write(commands.join("resume.md"), own_resume).unwrap();
        } else {
            std::fs::write(commands.join("resume.md"), older("resume.md")).unwrap();
        }
        let out = sb.hookctl(&["install", "claude-code"]);
        said += &format!("# version {version}\n{}", sb.normalize(&output_text(&out)));
        assert!(!commands.join("save-state.md").exists());
        assert!(commands.join("hookd-save.md").is_file());
        assert!(commands.join("hookd-resume.md").is_file());
        if theirs {
            assert_eq!(
                std::fs::read_to_string(commands.join("resume.md")).unwrap(),
                own_resume
            );
        } else {
            assert!(!commands.join("resume.md").exists(), "version {version}");
        }
        ok(&sb.hookctl(&["uninstall", "claude-code"]));
        assert!(!commands.join("hookd-resume.md").exists());
        assert_eq!(commands.join("resume.md").exists(), theirs);
    }
    // Version 3's `/resume` is the person's own: kept, and not named.
    insta::assert_snapshot!(said, @r#"
        # version 1
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /resume: removed [TEMP]/home/.claude/commands/resume.md (an older hookd's; now /hookd-resume)
          /save-state: removed [TEMP]/home/.claude/commands/save-state.md (an older hookd's; now /hookd-save)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
        # version 2
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /resume: removed [TEMP]/home/.claude/commands/resume.md (an older hookd's; now /hookd-resume)
          /save-state: removed [TEMP]/home/.claude/commands/save-state.md (an older hookd's; now /hookd-save)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
        # version 3
        claude-code (user settings): [TEMP]/home/.claude/settings.json
          wired SessionStart, UserPromptSubmit, PostToolBatch, PreCompact, PostCompact, SubagentStop, Stop, SessionEnd
          statusLine: hookctl statusline (the context figure under the prompt)
          /save-state: removed [TEMP]/home/.claude/commands/save-state.md (an older hookd's; now /hookd-save)
          /hookd-resume: installed [TEMP]/home/.claude/commands/hookd-resume.md
          /hookd-save: installed [TEMP]/home/.claude/commands/hookd-save.md
          wrote [TEMP]/home/.claude/settings.json
        Claude Code reads hooks when a session starts: restart running sessions (or review the hooks with /hooks in a session).
    "#);
}

/// A template copy an older install left unchanged never hides a newer
/// built-in one; a person's own edited one is used, and doctor names what
/// it lacks of the built-in.
#[test]
fn templates_of_an_older_install_give_way_and_edited_ones_are_named() {
    let sb = Sandbox::new();
    let templates = sb.config_dir().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    let older = repo().join("tests/fixtures/older-templates/resume_prompt.md.hbs");
    std::fs::copy(&older, templates.join("resume_prompt.md.hbs")).unwrap();

    insta::assert_snapshot!(sb.normalize(&output_text(&sb.hookctl(&["templates"]))), @r#"
        templates folder: [TEMP]/config/templates
          resume_prompt.md.hbs             built-in (your copy is an older hookd's, unchanged: `hookctl templates tidy` removes it)
          resume_prompt.yaml.hbs           built-in
          resume_prompt.xml.hbs            built-in
          progress_summary.md.hbs          built-in
          precompact_instructions.md.hbs   built-in
          memory_section.md.hbs            built-in
    "#);
    let (_, report) = doctor(&sb);
    let templates_check = check(&report, "templates").clone();
    assert_eq!(templates_check["status"], "warn", "{templates_check:#}");
    assert_eq!(templates_check["fix"], "hookctl templates tidy");
    let out = sb.hookctl(&["templates", "tidy"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @"removed [TEMP]/config/templates/resume_prompt.md.hbs (an older hookd's copy, unchanged; the built-in one applies)");
    assert!(!templates.exists(), "an emptied folder goes too");

    // A copy to edit, then an edit that drops a section.
    let out = sb.hookctl(&["templates", "edit", "resume_prompt"]);
    ok(&out);
    let mine = templates.join("resume_prompt.md.hbs");
    let text = std::fs::read_to_string(&mine).unwrap();
    assert_eq!(
        text,
        std::fs::read_to_string(repo().join("templates/resume_prompt.md.hbs")).unwrap()
    );
    // Unchanged, it is the person's: listed so, and tidy leaves it.
    insta::assert_snapshot!(sb.normalize(&output_text(&sb.hookctl(&["templates"]))), @r#"
        templates folder: [TEMP]/config/templates
          resume_prompt.md.hbs             yours, the built-in's text until you change it
          resume_prompt.yaml.hbs           built-in
          resume_prompt.xml.hbs            built-in
          progress_summary.md.hbs          built-in
          precompact_instructions.md.hbs   built-in
          memory_section.md.hbs            built-in
    "#);
    ok(&sb.hookctl(&["templates", "tidy"]));
    assert!(
        mine.is_file(),
        "a fresh copy to edit is not an older install's"
    );
    let out = sb.hookctl(&["templates", "edit", "resume_prompt"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&out)), @r#"
        --- stderr
        hookctl: [TEMP]/config/templates/resume_prompt.md.hbs is already there: edit it, or remove it to start again from the built-in one
        --- exit 1
    "#);
    write(
        &mine,
        &text.replace("### Approaches Ruled Out", "### Dead ends"),
    );
    let (_, report) = doctor(&sb);
    insta::assert_snapshot!(check_text(&sb, &report, "templates"), @r#"
        templates: warn
        detail: yours hide parts of newer built-in ones: [TEMP]/config/templates/resume_prompt.md.hbs lacks Approaches Ruled Out
        fix: add what they lack (`hookctl templates show NAME` prints the built-in one), or delete them to use the built-in templates
    "#);
    let listed = sb.hookctl(&["templates", "list"]);
    insta::assert_snapshot!(sb.normalize(&output_text(&listed)), @r#"
        templates folder: [TEMP]/config/templates
          resume_prompt.md.hbs             yours, without: Approaches Ruled Out
          resume_prompt.yaml.hbs           built-in
          resume_prompt.xml.hbs            built-in
          progress_summary.md.hbs          built-in
          precompact_instructions.md.hbs   built-in
          memory_section.md.hbs            built-in
    "#);
    // Tidy leaves it: it is the person's.
    ok(&sb.hookctl(&["templates", "tidy"]));
    assert!(mine.is_file());
    let shown = stdout(&sb.hookctl(&["templates", "show", "resume_prompt.md.hbs"]));
    assert!(shown.contains("### Approaches Ruled Out"), "{shown}");
}

/// Every file and directory under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
