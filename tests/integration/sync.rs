//! Sync through git, as two machines do it: each is a sandbox of its own
//! (HOME, socket, state, config) with the real `hookd` binary running in it,
//! and the remote is a bare repository in a temporary directory, reached
//! over `file://` (and `ssh://` to an `sshd` the test starts, where it can).

use hookd_tests::{
    ChildGuard, GitRepo, Sandbox, TestEvent, Transcript, git_command, run_with_stdin, stderr,
    stdout, wait_until,
};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

const REMOTE: &str = "hookd-sync";

/// One machine: its sandbox, its daemon (the real binary, in the sandbox's
/// environment: its HOME is the machine's own) and its project.
struct Machine {
    // Declared first: the daemon goes before its sandbox.
    _daemon: ChildGuard,
    sb: Sandbox,
    project: GitRepo,
    /// What this machine's refs carry.
    id: String,
}

impl Machine {
    /// A machine called `name` whose user config's `sync` section is
    /// `sync_yaml` (indented under `sync:`), its project a repository with
    /// one commit; `prepare` runs on the project before the daemon starts.
    fn start(name: &str, sync_yaml: &str, prepare: impl FnOnce(&GitRepo)) -> Machine {
        Machine::start_with(name, sync_yaml, &[], prepare)
    }

    /// [`Machine::start`] with `env` in the daemon's environment.
    fn start_with(
        name: &str,
        sync_yaml: &str,
        env: &[(&str, &str)],
        prepare: impl FnOnce(&GitRepo),
    ) -> Machine {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.home()).unwrap();
        std::fs::create_dir_all(sb.config_dir()).unwrap();
        std::fs::create_dir_all(sb.state_dir()).unwrap();
        std::fs::write(
            sb.config_dir().join("config.yaml"),
            format!("sync:\n  machine_name: {name}\n{sync_yaml}"),
        )
        .unwrap();
        // The machine's id, fixed so the test knows its refs.
        std::fs::write(sb.state_dir().join("machine-id"), "0a0b0c\n").unwrap();
        let project = GitRepo::init(&sb.path().join("proj"));
        project.write("README.md", &format!("{name}'s project\n"));
        project.commit_all("initial");
        prepare(&project);
        let daemon = ChildGuard::spawn(
            sb.command("hookd")
                .arg("run")
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        sb.wait_for(TestEvent::Listening, "");
        Machine {
            _daemon: daemon,
            sb,
            project,
            id: format!("{name}-0a0b0c"),
        }
    }

    fn hookctl(&self, args: &[&str]) -> Output {
        self.sb.hookctl_in(&self.project.dir, args)
    }

    /// A commit of its own holding `file`, on `refs/hookd/sync/<me>/<kind>/main`
    /// (what the export makes; here with `git` itself). Returns the commit and
    /// the blob.
    fn sync_ref(&self, kind: &str, file: &str, content: &str) -> (String, String) {
        let blob = git_in(
            &self.project.dir,
            &["hash-object", "-w", "--stdin"],
            content,
        );
        let mut tree = String::new();
        let mut entry = format!("100644 blob {blob}");
        // From the file up to the root: one tree per directory.
        for (i, name) in file.rsplit('/').enumerate() {
            if i > 0 {
                entry = format!("040000 tree {tree}");
            }
            tree = git_in(
                &self.project.dir,
                &["mktree"],
                &format!("{entry}\t{name}\n"),
            );
        }
        let commit = git_in(
            &self.project.dir,
            &["commit-tree", &tree, "-m", &format!("hookd: {kind}")],
            "",
        );
        let name = format!("refs/hookd/sync/{}/{kind}/main", self.id);
        self.project.git(&["update-ref", &name, &commit]);
        // Recorded as hookd's own, as the export records what it makes: a
        // tip that is not is never pushed.
        hookd::sync::Ledger::in_state_dir(&self.sb.state_dir())
            .record(hookd::sync::ledger::Kind::Made, &commit)
            .unwrap();
        (commit, blob)
    }

    /// A save with a checkpoint, as `hookctl save` asks for it.
    fn save(&self) {
        self.project
            .write("work.txt", &format!("{:?}\n", Instant::now()));
        let out = self.hookctl(&["save"]);
        assert!(out.status.success(), "save: {}", stderr(&out));
    }

    /// `hookctl sync status` as a person reads it.
    fn status(&self) -> String {
        let out = self.hookctl(&["sync", "status"]);
        assert!(out.status.success(), "sync status: {}", stderr(&out));
        stdout(&out)
    }
}

/// `git <args>` in `dir` with `stdin`; its trimmed stdout.
fn git_in(dir: &Path, args: &[&str], stdin: &str) -> String {
    let mut cmd = git_command(dir);
    cmd.args(args);
    let out = run_with_stdin(cmd, stdin.as_bytes());
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// A bare repository to push to.
fn bare_remote(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    git_in(dir, &["init", "-q", "--bare", "."], "");
    dir.to_path_buf()
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The refs of `repo` (a git dir or a work tree) under `prefix`, as `sha name` lines.
fn refs_of(repo: &Path, prefix: &str) -> String {
    git_in(
        repo,
        &["for-each-ref", "--format=%(objectname) %(refname)", prefix],
        "",
    )
}

fn sync_section(remote: &str) -> String {
    format!("  remote: {remote}\n  timeout_secs: 20\n  retry_secs: 3600\n")
}

#[test]
fn a_checkpoint_pushes_this_machines_refs_and_another_machine_pulls_them_in() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let add_remote = |r: &GitRepo| {
        r.git(&["remote", "add", REMOTE, &url]);
    };
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        add_remote(r);
        r.write("src/lib.rs", "pub fn a() {}\n");
    });

    // The push follows the checkpoint, in the background: the exported
    // checkpoint and the saved state, as they are in A's repository.
    a.save();
    let mine = || refs_of(&a.project.dir, "refs/hookd/sync/");
    assert!(
        wait_until(Duration::from_secs(20), || mine().lines().count() == 2
            && refs_of(&remote, "refs/") == mine()),
        "A has: {}\nthe remote has: {}\nstatus: {}",
        mine(),
        refs_of(&remote, "refs/"),
        a.status()
    );
    let wanted = mine();
    let of_a = |rev: &str| a.project.git(&["rev-parse", rev]).trim().to_owned();
    let checkpoint = of_a(&format!("refs/hookd/sync/{}/checkpoints/main", a.id));
    let state = of_a(&format!("refs/hookd/sync/{}/state/main", a.id));
    let blob = of_a(&format!("{checkpoint}:src/lib.rs"));
    // Nothing but hookd's sync refs went there; the push is shown once git
    // has ended.
    let mut status = String::new();
    wait_until(Duration::from_secs(10), || {
        status = a.status();
        status.contains("last push:")
    });
    assert!(
        status.contains(&url) && status.contains("last push: ok"),
        "{status}"
    );
    assert!(status.contains(&format!("machine: {}", a.id)), "{status}");

    // B has none of A's objects until it pulls.
    let b = Machine::start("b", &sync_section(REMOTE), add_remote);
    let head_before = b.project.git(&["rev-parse", "HEAD"]);
    let cat = |sha: &str| {
        git_command(&b.project.dir)
            .args(["cat-file", "-e", sha])
            .status()
            .unwrap()
    };
    assert!(!cat(&blob).success());
    let out = b.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("last pull: ok"), "{}", stdout(&out));
    assert!(cat(&checkpoint).success() && cat(&blob).success() && cat(&state).success());
    assert_eq!(
        refs_of(&b.project.dir, "refs/hookd/sync/"),
        wanted,
        "B's project holds A's refs"
    );
    git_in(
        &b.project.dir,
        &["fsck", "--no-dangling", "--connectivity-only"],
        "",
    );
    assert_eq!(b.project.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(refs_of(&b.project.dir, "refs/heads/").lines().count(), 1);

    // B's own refs go to the remote beside A's, and A takes them in.
    let (b_state, _) = b.sync_ref("state", "context_state.json", "{\"b\":1}\n");
    let out = b.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = a.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        refs_of(&a.project.dir, "refs/hookd/sync/")
            .contains(&format!("{b_state} refs/hookd/sync/{}/state/main", b.id))
    );
}

#[test]
fn an_unknown_remote_pushes_nothing_anywhere_and_status_and_doctor_say_why() {
    let remotes = Sandbox::new();
    let origin = bare_remote(&remotes.path().join("origin.git"));
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", "origin", &file_url(&origin)]);
    });
    a.sync_ref("checkpoints", "a.txt", "a\n");
    a.save();
    let out = a.hookctl(&["sync", "push"]);
    assert!(
        !out.status.success(),
        "a push that could not go is a failure"
    );
    let said = stdout(&out);
    assert!(
        said.contains("no remote `hookd-sync`") && said.contains("git remote add hookd-sync <url>"),
        "{said}"
    );
    assert_eq!(refs_of(&origin, "refs/"), "", "never a fallback to origin");
    let status = a.status();
    assert!(
        status.contains("nothing is pushed: no remote `hookd-sync` in"),
        "{status}"
    );
    let doctor = stdout(&a.hookctl(&["doctor"]));
    let line = doctor
        .lines()
        .position(|l| l.starts_with("warn  sync "))
        .expect(&doctor);
    assert!(
        doctor
            .lines()
            .nth(line)
            .unwrap()
            .contains("no remote `hookd-sync`"),
        "{doctor}"
    );
    assert!(
        doctor
            .lines()
            .nth(line + 1)
            .unwrap()
            .contains("git remote add hookd-sync <url>"),
        "{doctor}"
    );
    let general = stdout(&a.hookctl(&["status"]));
    assert!(general.contains("sync remote: hookd-sync"), "{general}");
}

#[test]
fn a_project_file_cannot_elect_a_remote() {
    let remotes = Sandbox::new();
    let origin = bare_remote(&remotes.path().join("origin.git"));
    let a = Machine::start("a", "", |r| {
        r.git(&["remote", "add", "origin", &file_url(&origin)]);
        r.write(
            ".hookd.yaml",
            &format!(
                "sync:\n  remote: origin\n  memory_remote: {}\n",
                file_url(&origin)
            ),
        );
    });
    // Trusted or not, the project's file does not set sync.
    let trusted = a.hookctl(&["trust"]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    a.sync_ref("checkpoints", "a.txt", "a\n");
    a.save();
    let out = a.hookctl(&["sync", "push"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("sync is off"), "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(refs_of(&origin, "refs/"), "");
    assert!(a.status().contains("remote: none"));
}

/// A TCP listener that accepts and never says a word.
fn silent_listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((conn, _)) = accepting.accept() {
            held.push(conn);
        }
    });
    (listener, port)
}

/// The time of `runs` PreCompact hooks in `m`'s project.
fn pre_compact_times(m: &Machine, runs: usize) -> Vec<Duration> {
    let transcript = Transcript::create(
        m.sb.path().join("claude/s1.jsonl"),
        "s1",
        hookd_tests::SONNET,
    );
    transcript.prompt("make the thing");
    (0..runs)
        .map(|i| {
            m.project.write("work.txt", &format!("{i}\n"));
            let payload = transcript.payload("PreCompact(trigger=manual)", &m.project.dir);
            let started = Instant::now();
            let out = m.sb.hook("pre-compact", &payload);
            let took = started.elapsed();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            took
        })
        .collect()
}

#[test]
fn a_remote_that_never_answers_costs_pre_compact_nothing_and_shows_as_failing() {
    let (_listener, port) = silent_listener();
    let url = format!("http://127.0.0.1:{port}/r.git");
    let hanging = Machine::start(
        "a",
        &format!("  remote: {REMOTE}\n  timeout_secs: 4\n  retry_secs: 3600\n"),
        |r| {
            r.git(&["remote", "add", REMOTE, &url]);
        },
    );
    hanging.sync_ref("checkpoints", "a.txt", "a\n");
    let off = Machine::start("b", "", |_| {});
    // Interleaved, so that a slow moment of the machine hits both alike.
    let mut on_times = Vec::new();
    let mut off_times = Vec::new();
    for _ in 0..3 {
        on_times.extend(pre_compact_times(&hanging, 1));
        off_times.extend(pre_compact_times(&off, 1));
    }
    on_times.sort();
    off_times.sort();
    let (on, off_median) = (on_times[1], off_times[1]);
    assert!(
        on < off_median + Duration::from_millis(1500) && on < Duration::from_secs(4),
        "PreCompact with a hanging remote took {on:?}, without sync {off_median:?}"
    );
    // After the deadline the push shows as failing, with its retry.
    let mut status = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            status = hanging.status();
            status.contains("last push: FAILED")
        }),
        "{status}"
    );
    assert!(
        status.contains("no answer within 4 s") && status.contains("next retry: in"),
        "{status}"
    );
    assert!(status.contains(&url), "{status}");
    let doctor = stdout(&hanging.hookctl(&["doctor"]));
    assert!(doctor.contains("last push: FAILED"), "{doctor}");

    // A push under way when the daemon stops goes with it.
    hanging.save();
    assert!(
        wait_until(Duration::from_secs(10), || !processes_naming(&url)
            .is_empty()),
        "the push runs git"
    );
    let out = hanging.hookctl(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        wait_until(Duration::from_secs(10), || processes_naming(&url)
            .is_empty()),
        "git outlived the daemon: {:?}",
        processes_naming(&url)
    );
}

/// The processes whose command line holds `text`.
fn processes_naming(text: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(text))
        })
        .collect()
}

#[test]
fn a_repository_that_names_commands_runs_none_of_them() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let markers = remotes.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let touch = |name: &str| format!("touch {}", markers.join(name).display());
    let url = file_url(&remote);
    // The remote is local: git runs receive-pack and upload-pack inside it,
    // where its own hooks and config would apply.
    let executable = |path: &Path, text: String| {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    let remote_hooks = remotes.path().join("remote-hooks");
    std::fs::create_dir_all(&remote_hooks).unwrap();
    for hook in [
        "pre-receive",
        "update",
        "post-receive",
        "post-update",
        "reference-transaction",
    ] {
        executable(
            &remote.join("hooks").join(hook),
            format!("#!/bin/sh\n{}\n", touch(&format!("remote-{hook}"))),
        );
        executable(
            &remote_hooks.join(hook),
            format!(
                "#!/bin/sh\n{}\n",
                touch(&format!("remote-hooks-path-{hook}"))
            ),
        );
    }
    let remote_command = remotes.path().join("remote-command");
    executable(
        &remote_command,
        format!("#!/bin/sh\n{}\n", touch("remote-command")),
    );
    for (key, value) in [
        ("core.hooksPath", remote_hooks.display().to_string()),
        ("core.fsmonitor", remote_command.display().to_string()),
        (
            "core.alternateRefsCommand",
            remote_command.display().to_string(),
        ),
        ("receive.autogc", "true".into()),
        ("gc.auto", "1".into()),
    ] {
        git_in(&remote, &["config", key, &value], "");
    }
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        // Alternates make receive-pack list their refs (with the command).
        std::fs::write(
            remote.join("objects/info/alternates"),
            format!("{}\n", r.dir.join(".git/objects").display()),
        )
        .unwrap();
        r.git(&[
            "config",
            "core.sshCommand",
            &format!("{}; ssh", touch("ssh-command")),
        ]);
        r.git(&[
            "config",
            &format!("remote.{REMOTE}.receivepack"),
            &format!("{}; git-receive-pack", touch("receivepack")),
        ]);
        r.git(&[
            "config",
            &format!("remote.{REMOTE}.uploadpack"),
            &format!("{}; git-upload-pack", touch("uploadpack")),
        ]);
        r.git(&[
            "config",
            &format!("url.ext::sh -c '{}' %S .insteadOf", touch("insteadof")),
            "file://",
        ]);
        r.git(&[
            "config",
            "credential.helper",
            &format!("!{}", touch("credential")),
        ]);
        r.git(&["config", "protocol.ext.allow", "always"]);
        let hook = r.dir.join(".git/hooks/pre-push");
        std::fs::write(&hook, format!("#!/bin/sh\n{}\n", touch("pre-push"))).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // Another remote whose URL is a command.
        r.git(&[
            "remote",
            "add",
            "evil",
            &format!("ext::sh -c '{}'", touch("ext-url")),
        ]);
    });
    let (commit, _) = a.sync_ref("checkpoints", "a.txt", "a\n");
    a.project
        .git(&["config", "core.fsmonitor", &touch("fsmonitor")]);
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = a.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    // The push went where the URL says, not where insteadOf would send it.
    assert!(refs_of(&remote, "refs/").contains(&commit));

    // A machine electing the remote whose URL is a command is refused.
    std::fs::write(
        a.sb.config_dir().join("config.yaml"),
        "sync:\n  machine_name: a\n  remote: evil\n  timeout_secs: 20\n  retry_secs: 3600\n",
    )
    .unwrap();
    let out = a.hookctl(&["sync", "push"]);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("never a command transport"),
        "{}",
        stdout(&out)
    );
    a.save();
    std::thread::sleep(Duration::from_secs(1));
    let left: Vec<_> = std::fs::read_dir(&markers)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "commands the repository named ran: {left:?}"
    );
}

#[test]
fn two_machines_pushing_at_once_lose_nothing() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let add_remote = |r: &GitRepo| {
        r.git(&["remote", "add", REMOTE, &url]);
    };
    let a = Machine::start("a", &sync_section(REMOTE), add_remote);
    let b = Machine::start("b", &sync_section(REMOTE), add_remote);
    let mut wanted = Vec::new();
    for (m, kind) in [
        (&a, "checkpoints"),
        (&a, "state"),
        (&b, "checkpoints"),
        (&b, "state"),
    ] {
        let (commit, _) = m.sync_ref(kind, "f.txt", &format!("{} {kind}\n", m.id));
        wanted.push(format!("{commit} refs/hookd/sync/{}/{kind}/main", m.id));
    }
    wanted.sort();
    for round in 0..3 {
        let (ra, rb) = std::thread::scope(|s| {
            let ta = s.spawn(|| a.hookctl(&["sync", "push"]));
            let tb = s.spawn(|| b.hookctl(&["sync", "push"]));
            (ta.join().unwrap(), tb.join().unwrap())
        });
        assert!(ra.status.success(), "round {round}: {}", stdout(&ra));
        assert!(rb.status.success(), "round {round}: {}", stdout(&rb));
    }
    let mut have: Vec<String> = refs_of(&remote, "refs/")
        .lines()
        .map(str::to_owned)
        .collect();
    have.sort();
    assert_eq!(have, wanted);
    for m in [&a, &b] {
        let out = m.hookctl(&["sync", "pull"]);
        assert!(out.status.success(), "{}", stdout(&out));
        let mut have: Vec<String> = refs_of(&m.project.dir, "refs/hookd/sync/")
            .lines()
            .map(str::to_owned)
            .collect();
        have.sort();
        assert_eq!(have, wanted, "{}", m.id);
    }
}

/// An `sshd` of the test's own, on a port of its own, that lets the test's
/// key in as the user running the test.
struct Sshd {
    _child: ChildGuard,
    port: u16,
}

/// Starts `sshd` in `dir` with keys made there, and writes `home`'s
/// `~/.ssh/config` so that `ssh sync-test` reaches it with that key.
fn start_sshd(dir: &Path, home: &Path) -> Result<Sshd, String> {
    let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .ok_or("sshd is not installed (openssh-server)")?;
    let keygen = |path: &Path| {
        std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(path)
            .status()
            .map_err(|e| format!("ssh-keygen cannot run: {e}"))
            .and_then(|s| {
                s.success()
                    .then_some(())
                    .ok_or_else(|| "ssh-keygen failed".to_owned())
            })
    };
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    keygen(&dir.join("host_key"))?;
    keygen(&dir.join("user_key"))?;
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))
        .map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             PidFile none\nPermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\n",
            d = dir.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    std::fs::create_dir_all("/run/sshd").ok();
    let child = ChildGuard::spawn(
        std::process::Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let ssh_dir = home.join(".ssh");
    std::fs::create_dir_all(&ssh_dir).map_err(|e| e.to_string())?;
    std::fs::write(
        ssh_dir.join("config"),
        format!(
            "Host sync-test\n  HostName 127.0.0.1\n  Port {port}\n  IdentityFile {}/user_key\n  IdentitiesOnly yes\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  BatchMode yes\n  LogLevel ERROR\n",
            dir.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut sshd = Sshd {
        _child: child,
        port,
    };
    let up = wait_until(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", sshd.port)).is_ok()
    });
    if !up {
        return Err(format!("sshd did not listen on port {port}"));
    }
    // It answers, and lets the key in.
    let probe = std::process::Command::new("ssh")
        .arg("-F")
        .arg(ssh_dir.join("config"))
        .args(["sync-test", "true"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !probe.status.success() {
        sshd.port = 0;
        return Err(format!(
            "ssh to the test's sshd failed: {}",
            stderr(&probe).trim()
        ));
    }
    Ok(sshd)
}

/// ssh reads `~/.ssh/config` of the passwd entry, not of `$HOME`: the
/// user's own `GIT_SSH_COMMAND` (in the daemon's environment) names the
/// config of each machine's HOME.
const SSH_WITH_HOME_CONFIG: &str = "ssh -F \"$HOME/.ssh/config\"";

#[test]
fn over_ssh_to_a_local_sshd_a_push_and_a_pull_carry_the_refs() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = format!("ssh://sync-test{}", remote.display());
    let add_remote = |r: &GitRepo| {
        r.git(&["remote", "add", REMOTE, &url]);
    };
    let env = [("GIT_SSH_COMMAND", SSH_WITH_HOME_CONFIG)];
    let a = Machine::start_with("a", &sync_section(REMOTE), &env, add_remote);
    let b = Machine::start_with("b", &sync_section(REMOTE), &env, add_remote);
    // Never a pass unrun: `tests/run` leaves this test out, and counts it
    // as skipped, where sshd is not installed.
    let _sshd = start_sshd(&remotes.path().join("sshd"), &a.sb.home())
        .unwrap_or_else(|reason| panic!("the test's sshd cannot start: {reason}"));
    std::fs::create_dir_all(b.sb.home().join(".ssh")).unwrap();
    std::fs::copy(
        a.sb.home().join(".ssh/config"),
        b.sb.home().join(".ssh/config"),
    )
    .unwrap();
    let (commit, blob) = a.sync_ref("state", "context_state.json", "{\"over\":\"ssh\"}\n");
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(refs_of(&remote, "refs/").contains(&commit));

    let out = b.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    git_in(&b.project.dir, &["cat-file", "-e", &blob], "");
    assert!(refs_of(&b.project.dir, "refs/hookd/sync/").contains(&commit));
}

#[test]
fn the_memory_goes_to_its_own_remote_and_comes_back_on_the_other_machine() {
    let remotes = Sandbox::new();
    let memory = bare_remote(&remotes.path().join("memory.git"));
    let section = format!(
        "  memory_remote: {}\n  timeout_secs: 20\n",
        file_url(&memory)
    );
    let a = Machine::start("a", &section, |_| {});
    let b = Machine::start("b", &section, |_| {});
    // Nothing to push yet: the memory's shuttle is made, the push is fine.
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("memory: file://"), "{}", stdout(&out));
    // A task A's memory closed, with what it learnt (and a key in it).
    let id = "0a0a0a0a-0000-4000-8000-00000000000a";
    let record = serde_json::json!({
        "task_id": id,
        "task_description": "fix the flaky login test",
        "task_type": "debugging",
        "timestamp": "2026-11-20T10:00:00Z",
        "outcome": "success",
        "iterations": 1,
        "reflections": [{"iteration": 1,
                         "content": "Mocking the clock fixed it; the test token was AKIAIOSFODNN7EXAMPLF",
                         "type": "success_pattern", "effectiveness": "helpful",
                         "origin": "hookctl reflect"}],
        "key_learnings": ["Worked: Mocking the clock fixed the flakiness"],
        "tags": ["debugging"],
        "project": "/home/me/proj",
        "updated_at": "2026-11-20T10:00:00Z",
        "closed_at": "2026-11-20T10:00:00Z",
    });
    let tasks = a.sb.memory_dir().join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join(format!("{id}.json")), record.to_string()).unwrap();
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let pushed = refs_of(&memory, "refs/");
    assert!(
        pushed.ends_with(&format!(" refs/hookd/memory/{}", a.id)) && pushed.lines().count() == 1,
        "{pushed}"
    );
    let everything = git_in(&memory, &["log", "-p", "--all"], "");
    assert!(everything.contains("Mocking the clock"), "{everything}");
    assert!(!everything.contains("AKIAIOSFODNN7EXAMPLF"), "{everything}");

    let out = b.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("1 task(s) added"), "{}", stdout(&out));
    let shown = b.hookctl(&["memory", "show", id, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["task"]["machine"], "a", "{shown:#}");
    // What B learns from it names where it came from.
    let search = stdout(&b.hookctl(&["memory", "search", "fix the flaky signup test"]));
    assert!(search.contains("fix the flaky login test"), "{search}");
    // A pull again adds nothing and deletes nothing.
    let out = b.hookctl(&["sync", "pull"]);
    assert!(stdout(&out).contains("0 task(s) added"), "{}", stdout(&out));
    let list = b.hookctl(&["memory", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(1), "{list:#}");
}

#[test]
fn a_failed_push_is_tried_again_after_retry_secs() {
    let remotes = Sandbox::new();
    let later = remotes.path().join("later.git");
    let url = file_url(&later);
    let a = Machine::start(
        "a",
        &format!("  remote: {REMOTE}\n  timeout_secs: 20\n  retry_secs: 2\n"),
        |r| {
            r.git(&["remote", "add", REMOTE, &url]);
        },
    );
    // The remote is not there yet: the push fails, and says when it tries again.
    a.save();
    let mut status = String::new();
    assert!(
        wait_until(Duration::from_secs(20), || {
            status = a.status();
            status.contains("last push: FAILED")
        }),
        "{status}"
    );
    let commit = a
        .project
        .git(&[
            "rev-parse",
            &format!("refs/hookd/sync/{}/checkpoints/main", a.id),
        ])
        .trim()
        .to_owned();
    assert!(status.contains("next retry: in"), "{status}");
    // It comes; the retry finds it with no checkpoint to set it off.
    bare_remote(&later);
    assert!(
        wait_until(Duration::from_secs(20), || refs_of(&later, "refs/")
            .contains(&commit)),
        "{}",
        a.status()
    );
    assert!(
        wait_until(Duration::from_secs(10), || a
            .status()
            .contains("last push: ok")),
        "{}",
        a.status()
    );
    assert!(!a.status().contains("next retry"));
}

/// A machine `a` that pushed one state ref, and the sandbox of the remote.
fn pushed_state() -> (Sandbox, String, Machine, String, String) {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
    });
    let (commit, blob) = a.sync_ref("state", "context_state.json", "{\"a\":1}\n");
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    (remotes, url, a, commit, blob)
}

#[test]
fn a_pull_writes_no_object_through_a_symlinked_fan_out_directory() {
    let (remotes, url, _a, _, blob) = pushed_state();
    // The directory the fetched blob would be written to is a link; the
    // repository itself opens.
    let elsewhere = remotes.path().join("elsewhere-objects");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let b = Machine::start("b", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        std::os::unix::fs::symlink(&elsewhere, r.dir.join(".git/objects").join(&blob[..2]))
            .unwrap();
    });
    let out = b.hookctl(&["sync", "pull"]);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("last pull: FAILED")
            && stdout(&out).contains(&format!("objects/{}", &blob[..2]))
            && stdout(&out).contains("a symlink"),
        "{}",
        stdout(&out)
    );
    assert_eq!(refs_of(&b.project.dir, "refs/hookd/sync/"), "");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_pull_moves_no_ref_through_a_symlinked_refs_directory() {
    let (remotes, url, _a, commit, _) = pushed_state();
    let elsewhere = remotes.path().join("elsewhere-refs");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let b = Machine::start("b", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        std::os::unix::fs::symlink(&elsewhere, r.dir.join(".git/refs/hookd")).unwrap();
    });
    let out = b.hookctl(&["sync", "pull"]);
    let said = stdout(&out);
    assert!(
        said.contains("left alone refs/hookd/sync/a-") && said.contains("0 ref(s)"),
        "{said}{}",
        stderr(&out)
    );
    let written: Vec<_> = walk(&elsewhere);
    assert!(written.is_empty(), "written through the link: {written:?}");
    assert!(!refs_of(&b.project.dir, "refs/").contains(&commit));
}

/// Every file under `dir`, however deep.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A password or token in a remote's URL is shown as `***` wherever hookd
/// shows, keeps or logs the URL: status (plain and `--json`), doctor, the
/// push's and pull's errors, hookd's state directory and log.
#[test]
fn a_password_or_token_in_a_url_is_shown_nowhere() {
    // A port nothing listens on: the push fails at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let password = "pw-9f8e7d6c";
    let token = "ghp_tok3n5ecretvalue";
    let url = format!("https://me:{password}@127.0.0.1:{port}/r.git");
    let memory_url = format!("https://{token}@127.0.0.1:{port}/m.git");
    let section = format!("{}  memory_remote: {memory_url}\n", sync_section(REMOTE));
    let a = Machine::start("a", &section, |r| {
        r.git(&["remote", "add", REMOTE, &url]);
    });
    a.sync_ref("state", "context_state.json", "{}\n");
    let mut seen = String::new();
    for args in [
        &["sync", "push"][..],
        &["sync", "pull"],
        &["sync", "status"],
        &["sync", "status", "--json"],
        &["status"],
        &["doctor"],
    ] {
        let out = a.hookctl(args);
        seen.push_str(&stdout(&out));
        seen.push_str(&stderr(&out));
    }
    assert!(
        seen.contains(&format!("https://me:***@127.0.0.1:{port}/r.git"))
            && seen.contains(&format!("https://***@127.0.0.1:{port}/m.git")),
        "{seen}"
    );
    let kept: String = walk(&a.sb.state_dir())
        .into_iter()
        .filter_map(|f| std::fs::read(f).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    for secret in [password, token] {
        assert!(!seen.contains(secret), "{secret} shown: {seen}");
        assert!(!kept.contains(secret), "{secret} in hookd's state or log");
    }
}

/// A sync ref of this machine's planted at HEAD (`git update-ref`), whose
/// history holds a committed `.env` with a key: the push leaves it out and
/// names it, no object of the remote holds the key, and the next save
/// starts a new chain of its own that goes out.
#[test]
fn a_sync_ref_planted_at_head_is_never_pushed() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        r.write(".env", &format!("AWS_ACCESS_KEY_ID={FAKE_KEY}\n"));
        r.git(&["add", "-f", ".env"]);
        r.git(&["commit", "-q", "-m", "config"]);
    });
    let state = format!("refs/hookd/sync/{}/state/main", a.id);
    let checkpoints = format!("refs/hookd/sync/{}/checkpoints/main", a.id);
    a.project.git(&["update-ref", &state, "HEAD"]);
    a.project.git(&["update-ref", &checkpoints, "HEAD"]);
    let out = a.hookctl(&["sync", "push"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("not pushed"), "{said}");
    assert!(
        said.contains(&state) && said.contains(&checkpoints),
        "{said}"
    );
    assert_eq!(refs_of(&remote, "refs/"), "", "nothing went");
    let key_on_remote = || {
        let mut cmd = git_command(&remote);
        cmd.args(["cat-file", "--batch-all-objects", "--batch"]);
        let out = run_with_stdin(cmd, b"");
        String::from_utf8_lossy(&out.stdout).contains(FAKE_KEY)
    };
    assert!(!key_on_remote());

    // The next save's state starts a chain of its own, and that goes out.
    a.save();
    let out = a.hookctl(&["sync", "push"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let pushed = git_in(&remote, &["rev-parse", &state], "");
    let head = a.project.git(&["rev-parse", "HEAD"]);
    assert_ne!(pushed, head.trim());
    assert_eq!(
        git_in(&remote, &["rev-list", "--parents", "-n1", &pushed], ""),
        pushed,
        "no parent"
    );
    assert!(
        git_in(&remote, &["rev-list", "--all"], "")
            .lines()
            .all(|c| c != head.trim()),
        "none of the user's history went"
    );
    assert!(!key_on_remote());
}

/// A fake AWS access key, in the form the secret rules know.
const FAKE_KEY: &str = "AKIAIOSFODNN7EXAMPLF";

/// The whole handoff: machine A compacts a session whose work tree holds a
/// `.env` and a file with a cloud key; its push carries the saved state and
/// the checkpoint and neither secret; machine B pulls, `hookctl resume
/// --print` hands it A's work saying where and when it was saved, and
/// `hookctl checkpoint restore` puts A's unfinished file back (never B's
/// index or HEAD).
#[test]
fn a_compaction_on_one_machine_is_picked_up_on_another() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let a = Machine::start("laptop", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        r.write("src/auth.rs", "pub fn refresh() { todo!(\"expiry\") }\n");
        r.write(".env", &format!("AWS_ACCESS_KEY_ID={FAKE_KEY}\n"));
        r.write("config/settings.py", &format!("KEY = \"{FAKE_KEY}\"\n"));
    });
    let mut transcript = Transcript::create(
        a.sb.path().join("claude/s1.jsonl"),
        "s1-session",
        hookd_tests::SONNET,
    );
    let hook = |transcript: &Transcript, fixture: &str, event: &str| {
        let out =
            a.sb.hook(event, &transcript.payload(fixture, &a.project.dir));
        assert_eq!(out.status.code(), Some(0), "{event}: {}", stderr(&out));
        stdout(&out)
    };
    transcript.prompt("Add token refresh to the auth module, then use it in the login flow");
    transcript.todo_write(
        "t1",
        &[
            (
                "Write refresh() in src/auth.rs",
                "in_progress",
                "Writing refresh()",
            ),
            (
                "Use refresh() in the login flow",
                "pending",
                "Using refresh()",
            ),
        ],
        60_000,
    );
    hook(&transcript, "PostToolUse", "post-tool-use");
    transcript.reply(150_000);
    hook(&transcript, "PreCompact(trigger=manual)", "pre-compact");
    transcript.boundary("manual", 150_000, 9_000);
    hook(&transcript, "SessionStart(source=compact)", "session-start");

    // The push follows the compaction's checkpoint, in the background.
    let state_ref = format!("refs/hookd/sync/{}/state/main", a.id);
    let checkpoint_ref = format!("refs/hookd/sync/{}/checkpoints/main", a.id);
    assert!(
        wait_until(Duration::from_secs(30), || {
            let there = refs_of(&remote, "refs/");
            there.contains(&state_ref) && there.contains(&checkpoint_ref)
        }),
        "the remote has: {}\nstatus: {}",
        refs_of(&remote, "refs/"),
        a.status()
    );
    // No object on the remote holds the key, a `.env` or A's history.
    let objects = git_in(&remote, &["rev-list", "--objects", "--all"], "");
    for line in objects.lines() {
        let sha = line.split(' ').next().unwrap();
        let body = git_in(&remote, &["cat-file", "-p", sha], "");
        assert!(!body.contains(FAKE_KEY), "{line} holds the key:\n{body}");
        assert!(
            !line.ends_with(" .env") && !line.ends_with(" config/settings.py"),
            "{line}"
        );
    }
    let initial = a.project.git(&["rev-parse", "HEAD"]).trim().to_owned();
    assert!(!objects.contains(&initial), "A's own commits stay on A");
    let message = git_in(&remote, &["log", "-1", "--format=%B", &checkpoint_ref], "");
    assert!(
        message.contains("Hookd-Left-Out: .env (secret file name)")
            && message.contains("Hookd-Left-Out: config/settings.py"),
        "{message}"
    );

    // B works on the same repository, cloned elsewhere.
    let b = Machine::start("desk", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        r.git(&["fetch", "-q", &a.project.dir.display().to_string(), "main"]);
        r.git(&["reset", "-q", "--hard", "FETCH_HEAD"]);
    });
    let head_before = b.project.git(&["rev-parse", "HEAD"]);
    let out = b.hookctl(&["sync", "pull"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = b.hookctl(&["resume", "--print"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let prompt = stdout(&out);
    eprintln!("--- the resume prompt machine B printed ---\n{prompt}--- end ---");
    assert!(
        prompt.contains("Add token refresh to the auth module")
            && prompt.contains("It was saved on machine `laptop` in ")
            && prompt.contains(&a.project.dir.display().to_string())
            && prompt.contains("Write refresh() in src/auth.rs"),
        "{prompt}"
    );
    assert!(!prompt.contains(FAKE_KEY), "{prompt}");

    // A's unfinished file comes back from A's checkpoint; B's index and HEAD stay.
    let exported = git_in(&remote, &["rev-parse", &checkpoint_ref], "");
    let listed = stdout(&b.hookctl(&["checkpoints"]));
    assert!(
        listed.contains(&exported[..7]) && listed.contains("laptop"),
        "{listed}"
    );
    let out = b.hookctl(&["checkpoint", "restore", &exported, "--path", "src/auth.rs"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        std::fs::read_to_string(b.project.dir.join("src/auth.rs")).unwrap(),
        "pub fn refresh() { todo!(\"expiry\") }\n"
    );
    assert!(!b.project.dir.join(".env").exists());
    assert_eq!(b.project.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(b.project.git(&["diff", "--cached", "--name-only"]), "");
}

/// libgit2 appends to a ref's log when one exists, following a link: a log
/// planted as a link out of the repository (to a shell's start-up file,
/// say) makes hookd move neither that ref nor write a byte there.
#[test]
fn a_refs_log_linked_out_of_the_repository_is_never_written() {
    let remotes = Sandbox::new();
    let remote = bare_remote(&remotes.path().join("remote.git"));
    let url = file_url(&remote);
    let outside = remotes.path().join("bashrc");
    std::fs::write(&outside, "# mine\n").unwrap();
    let a = Machine::start("a", &sync_section(REMOTE), |r| {
        r.git(&["remote", "add", REMOTE, &url]);
        for reference in [
            "refs/hookd/checkpoints/main",
            "refs/hookd/sync/a-0a0b0c/state/main",
        ] {
            let log = r.git_dir().join("logs").join(reference);
            std::fs::create_dir_all(log.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&outside, &log).unwrap();
        }
    });
    a.project.write("work.txt", "w\n");
    let out = a.hookctl(&["save"]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("is not a plain file"), "{said}");
    let events = std::fs::read_to_string(a.project.dir.join(".workflow/events.jsonl")).unwrap();
    assert!(
        events.contains("its log logs/refs/hookd/sync/a-0a0b0c/state/main is not a plain file"),
        "{events}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "# mine\n");
    assert_eq!(refs_of(&a.project.dir, "refs/hookd/"), "");
}
