//! Sync: what a push costs the daemon for a large repository (the first,
//! and one after a few files changed), against `git push` of the same refs
//! from the repository itself; and a PreCompact hook's time with sync on
//! against off, interleaved.

use super::{
    Env, MB, Report, Samples, Scale, Verdict, fmt_duration, fmt_ratio, inputs, ratio, timed_ok,
};
use std::path::Path;
use std::time::Instant;

const MACHINE: &str = "bench-0a0b0c";
const REMOTE: &str = "hookd-sync";

fn config(env: &Env, sync_on: bool) {
    let dir = env.sb.config_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let sync = if sync_on {
        format!("sync:\n  remote: {REMOTE}\n  machine_name: bench\n")
    } else {
        "sync:\n  machine_name: bench\n".to_owned()
    };
    std::fs::write(dir.join("config.yaml"), sync).unwrap();
}

fn bare(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    inputs::run_git(path, &["init", "-q", "--bare", "."]);
}

/// A local checkpoint of the work tree as it is, on
/// `refs/hookd/checkpoints/main` (what a save makes; here with git itself,
/// so that no save pushes it first). Returns the commit.
fn checkpoint(repo: &Path, index: &Path, parent: Option<&str>) -> String {
    let git = |args: &[&str]| {
        let out = inputs::git(repo)
            .env("GIT_INDEX_FILE", index)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["add", "-A"]);
    let tree = git(&["write-tree"]);
    let mut args = vec![
        "commit-tree",
        tree.as_str(),
        "-m",
        "WIP: Pre-compaction checkpoint",
    ];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let commit = git(&args);
    inputs::run_git(
        repo,
        &["update-ref", "refs/hookd/checkpoints/main", &commit],
    );
    commit
}

/// Changes `n` files of the repository.
fn touch_files(repo: &Path, n: usize, round: usize) {
    for i in 0..n {
        let path = repo.join(format!("bench-sync/f{i}.txt"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("round {round} file {i}\n")).unwrap();
    }
}

pub fn sync(bins: &Path, s: &Scale, report: &mut Report) {
    eprintln!(
        "hookd-bench: sync pushes of a {}-file repository…",
        s.repo_files
    );
    let env = Env::new(bins);
    let repo = env.path().join("repo");
    inputs::repository(&repo, s.repo_files, s.repo_modified, s.repo_new)
        .expect("make the repository");
    std::fs::create_dir_all(env.sb.state_dir()).unwrap();
    std::fs::write(env.sb.state_dir().join("machine-id"), "0a0b0c\n").unwrap();
    config(&env, true);
    env.start();
    let index = env.path().join("export-index");
    let [mut first, mut again, mut git_first, mut git_again] =
        std::array::from_fn(|_| Samples::default());
    for round in 0..s.pipeline_rounds {
        // A remote, a shuttle and a sync ref never pushed before.
        let remote = env.path().join(format!("remote-{round}.git"));
        let plain = env.path().join(format!("plain-{round}.git"));
        bare(&remote);
        bare(&plain);
        let _ = inputs::git(&repo)
            .args(["remote", "remove", REMOTE])
            .output();
        let url = format!("file://{}", remote.display());
        inputs::run_git(&repo, &["remote", "add", REMOTE, &url]);
        let _ = std::fs::remove_dir_all(env.sb.state_dir().join("sync"));
        let _ = std::fs::remove_file(&index);
        // No export before this round's: the first reads every file.
        let exported = format!("refs/hookd/sync/{MACHINE}/checkpoints/main");
        let _ = inputs::git(&repo)
            .args(["update-ref", "-d", &exported])
            .output();
        let commit = checkpoint(&repo, &index, None);
        let push = || env.hookctl(&["--project", repo.to_str().unwrap(), "sync", "push"]);
        let plain_push = |commit: &str| {
            let started = Instant::now();
            let refspec = format!("+{commit}:refs/hookd/checkpoints/main");
            inputs::run_git(
                &repo,
                &[
                    "push",
                    "-q",
                    &format!("file://{}", plain.display()),
                    &refspec,
                ],
            );
            started.elapsed()
        };
        first.push(timed_ok(push(), Path::new("/dev/null"), "the first push"));
        git_first.push(plain_push(&commit));
        touch_files(&repo, s.repo_modified, round);
        let next = checkpoint(&repo, &index, Some(&commit));
        again.push(timed_ok(
            push(),
            Path::new("/dev/null"),
            "an incremental push",
        ));
        git_again.push(plain_push(&next));
        let landed = inputs::run_git(&remote, &["log", "-1", "--format=%B", &exported]);
        assert!(
            landed.contains(&format!("Hookd-Source: {next}")),
            "the remote has the export of the last checkpoint: {landed}"
        );
    }
    let files = format!("{} files", super::thousands(s.repo_files as u64));
    report.row(
        format!("sync: first push (`hookctl sync push`), {files}"),
        fmt_duration(first.median()),
        format!("`git push` {}", fmt_duration(git_first.median())),
        fmt_ratio(ratio(first.median(), git_first.median())),
        "",
        Verdict::Info,
    );
    report.row(
        format!("sync: incremental push, {} files changed", s.repo_modified),
        fmt_duration(again.median()),
        format!("`git push` {}", fmt_duration(git_again.median())),
        fmt_ratio(ratio(again.median(), git_again.median())),
        "",
        Verdict::Info,
    );
    hook_time(&env, &repo, s, report);
    report.note(format!(
        "Sync: a generated repository ({files}); {} rounds, each to a new bare `file://` remote \
         with hookd's shuttle removed. A push is `hookctl sync push` to its answer: the daemon \
         exports the checkpoint (made beforehand with git plumbing, as a save makes it: every \
         file read for secrets the first time, the changed ones after), prepares the shuttle \
         and runs `git push`. Baseline: `git push` of the same checkpoint commit from the \
         repository to another bare remote. Hook time: PreCompact with `sync.remote` set (each one's push runs in the \
         background: its export and push) against unset, interleaved.",
        first.len()
    ));
}

/// A PreCompact hook's time with sync on and off, interleaved.
fn hook_time(env: &Env, repo: &Path, s: &Scale, report: &mut Report) {
    let sid = "bench-sync-01";
    let transcript = env.transcripts().join(format!("{sid}.jsonl"));
    inputs::transcript(&transcript, sid, repo, MB, 3).expect("write the transcript");
    let pre = env.write(
        "sync-pre.json",
        &inputs::hook_payload("PreCompact(trigger=manual)", sid, &transcript, repo, ""),
    );
    let [mut on, mut off] = std::array::from_fn(|_| Samples::default());
    let rounds = s.pipeline_rounds * 4;
    for round in 0..rounds {
        for sync_on in if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        } {
            config(env, sync_on);
            touch_files(repo, 3, round * 2 + usize::from(sync_on));
            let took = timed_ok(env.hookctl(&["hook", "pre-compact"]), &pre, "PreCompact");
            if sync_on {
                on.push(took)
            } else {
                off.push(took)
            }
        }
    }
    let r = ratio(on.median(), off.median());
    report.row(
        "sync: PreCompact with sync on (push in the background)",
        fmt_duration(on.median()),
        format!("sync off {}", fmt_duration(off.median())),
        fmt_ratio(r),
        "≈ 1.0×",
        super::verdict(r <= 1.15),
    );
}
