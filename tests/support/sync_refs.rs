//! What another machine's push leaves in a repository after a pull, built
//! with the `git` binary exactly as the sync format says: a saved-state
//! commit on `refs/hookd/sync/<machine>/state/<branch>` and an exported
//! checkpoint commit on `refs/hookd/sync/<machine>/checkpoints/<branch>`.
//! (The real export replaces these in the end-to-end tests.)

use crate::GitRepo;
use std::io::Write;
use std::process::Stdio;

/// The machine a synced commit says it came from.
#[derive(Debug, Clone)]
pub struct OtherMachine {
    pub id: String,
    pub name: String,
}

impl OtherMachine {
    pub fn new(name: &str) -> OtherMachine {
        OtherMachine {
            id: format!("{name}-a1b2c3"),
            name: name.into(),
        }
    }
}

/// A saved-state commit's content and trailers.
pub struct SyncedSave<'a> {
    pub machine: &'a OtherMachine,
    pub branch: &'a str,
    pub project: &'a str,
    pub saved_at: &'a str,
    pub state_json: &'a [u8],
    pub resume_prompt: Option<&'a str>,
    pub checkpoint_source: Option<&'a str>,
    pub session: Option<&'a str>,
}

fn git_stdin(repo: &GitRepo, args: &[&str], stdin: &[u8]) -> String {
    let mut child = repo
        .command()
        .env("GIT_AUTHOR_NAME", "laptop")
        .env("GIT_AUTHOR_EMAIL", "me@laptop")
        .env("GIT_COMMITTER_NAME", "laptop")
        .env("GIT_COMMITTER_EMAIL", "me@laptop")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn blob(repo: &GitRepo, bytes: &[u8]) -> String {
    git_stdin(repo, &["hash-object", "-w", "--stdin"], bytes)
}

/// A commit of `tree` on top of `reference`'s tip (if any), the ref moved to it.
fn commit_on(repo: &GitRepo, reference: &str, tree: &str, message: &str) -> String {
    let parent = repo
        .command()
        .args(["rev-parse", "--verify", "--quiet", reference])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_owned());
    let mut args = vec!["commit-tree", tree];
    if let Some(parent) = &parent {
        args.extend(["-p", parent]);
    }
    let sha = git_stdin(repo, &args, message.as_bytes());
    repo.git(&["update-ref", reference, &sha]);
    sha
}

fn message(title: &str, trailers: &[(&str, &str)]) -> String {
    let block: Vec<String> = trailers
        .iter()
        .map(|(k, v)| format!("Hookd-{k}: {v}"))
        .collect();
    format!("{title}\n\n{}\n", block.join("\n"))
}

/// Writes a saved-state commit as another machine's push leaves it;
/// returns its sha.
pub fn write_synced_state(repo: &GitRepo, save: &SyncedSave) -> String {
    let mut entries = vec![format!(
        "100644 blob {}\tcontext_state.json",
        blob(repo, save.state_json)
    )];
    if let Some(prompt) = save.resume_prompt {
        entries.push(format!(
            "100644 blob {}\tresume_prompt.md",
            blob(repo, prompt.as_bytes())
        ));
    }
    let tree = git_stdin(repo, &["mktree"], (entries.join("\n") + "\n").as_bytes());
    let mut trailers = vec![
        ("Machine", save.machine.id.as_str()),
        ("Machine-Name", save.machine.name.as_str()),
        ("Project", save.project),
        ("Branch", save.branch),
        ("Saved-At", save.saved_at),
    ];
    if let Some(source) = save.checkpoint_source {
        trailers.push(("Checkpoint-Source", source));
    }
    if let Some(session) = save.session {
        trailers.push(("Session", session));
    }
    let reference = format!("refs/hookd/sync/{}/state/{}", save.machine.id, save.branch);
    commit_on(
        repo,
        &reference,
        &tree,
        &message("hookd: saved state", &trailers),
    )
}

/// Writes an exported checkpoint commit of `files` (a flat or nested
/// tree) as another machine's push leaves it; returns its sha.
pub fn write_exported_checkpoint(
    repo: &GitRepo,
    machine: &OtherMachine,
    branch: &str,
    source: &str,
    base: &str,
    files: &[(&str, &str)],
) -> String {
    // Built in a scratch index, never the user's.
    let index = tempfile::NamedTempFile::new().unwrap();
    let index_path = index.path().to_owned();
    drop(index);
    for (path, content) in files {
        let sha = blob(repo, content.as_bytes());
        let out = repo
            .command()
            .env("GIT_INDEX_FILE", &index_path)
            .args([
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{sha},{path}"),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = repo
        .command()
        .env("GIT_INDEX_FILE", &index_path)
        .args(["write-tree"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&index_path);
    let tree = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let trailers = [
        ("Machine", machine.id.as_str()),
        ("Machine-Name", machine.name.as_str()),
        ("Source", source),
        ("Branch", branch),
        ("Base", base),
        ("Trigger", "pre-compact auto"),
    ];
    let reference = format!("refs/hookd/sync/{}/checkpoints/{branch}", machine.id);
    commit_on(
        repo,
        &reference,
        &tree,
        &message("hookd: checkpoint", &trailers),
    )
}

/// Writes `refs/hookd/memory/<machine id>` in the bare repository
/// `memory_repo` (made if missing): a commit whose tree is
/// `tasks/<task id>.json` per record, on top of the previous one.
pub fn write_memory_ref(
    memory_repo: &std::path::Path,
    machine: &OtherMachine,
    records: &[(&str, &[u8])],
) -> String {
    if !memory_repo.join("HEAD").exists() {
        std::fs::create_dir_all(memory_repo).unwrap();
        let out = crate::git_command(memory_repo)
            .args(["init", "-q", "--bare"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let repo = GitRepo {
        dir: memory_repo.to_path_buf(),
    };
    let entries: Vec<String> = records
        .iter()
        .map(|(name, bytes)| format!("100644 blob {}\t{name}", blob(&repo, bytes)))
        .collect();
    let tasks = git_stdin(&repo, &["mktree"], (entries.join("\n") + "\n").as_bytes());
    let root = git_stdin(
        &repo,
        &["mktree"],
        format!("040000 tree {tasks}\ttasks\n").as_bytes(),
    );
    let trailers = [
        ("Machine", machine.id.as_str()),
        ("Machine-Name", machine.name.as_str()),
    ];
    commit_on(
        &repo,
        &format!("refs/hookd/memory/{}", machine.id),
        &root,
        &message("hookd: memory", &trailers),
    )
}
