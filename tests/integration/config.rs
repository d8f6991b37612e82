//! `hookctl config` and configuration errors as a person meets them.

use hookd_tests::{Sandbox, stderr, stdout};

#[test]
fn config_shows_each_value_and_its_source() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.config_dir()).unwrap();
    std::fs::write(
        sb.config_dir().join("config.yaml"),
        "client:\n  hook_timeout_ms: 750\n",
    )
    .unwrap();
    std::fs::write(
        sb.path().join(".hookd.yaml"),
        "resume:\n  max_chars: 600\ndaemon:\n  idle_timeout_secs: 60\n",
    )
    .unwrap();
    let out = sb
        .command("hookctl")
        .env("HOOKD_CLIENT__AUTOSTART", "false")
        .arg("config")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("client.hook_timeout_ms: 750  # user file"),
        "{text}"
    );
    assert!(
        text.contains("resume.max_chars: 600  # project file"),
        "{text}"
    );
    // The daemon's settings are the user's alone: named, and not applied.
    assert!(
        text.contains("# warning: daemon in ") && text.contains(".hookd.yaml is ignored"),
        "{text}"
    );
    assert!(
        text.contains("daemon.idle_timeout_secs: 0  # default"),
        "{text}"
    );
    assert!(
        text.contains("client.autostart: false  # env HOOKD_CLIENT__AUTOSTART"),
        "{text}"
    );
    assert!(
        text.contains("client.allow_block: false  # default"),
        "{text}"
    );
    assert!(text.contains("monitor.thresholds:"), "{text}");

    let json: serde_json::Value = serde_json::from_slice(&sb.hookctl(&["config", "--json"]).stdout)
        .expect("config --json is JSON");
    let item = json
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "client.hook_timeout_ms")
        .unwrap();
    assert_eq!(item["value"], 750);
    assert_eq!(item["source"]["kind"], "user");
}

#[test]
fn a_broken_config_names_the_key_the_file_and_the_line() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.path().join(".hookd.yaml"),
        "client:\n  hook_timeout_ms: 10\n  autostrat: true\n",
    )
    .unwrap();
    let out = sb.hookctl(&["config"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("autostrat") && err.contains(".hookd.yaml") && err.contains("line 3"),
        "{err}"
    );
}
