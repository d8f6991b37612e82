//! In-process benchmarks of the pre-compact pipeline's parts on a generated
//! repository (10,000 files, 100 modified, 50 new; `HOOKD_BENCH_FILES`
//! changes the size): the snapshot through hookd's private index, the
//! checkpoint commit, the status with line counts, and the whole pipeline.
//!
//! `cargo bench -p hookd --bench checkpoint`. The whole-process comparison
//! with the git plumbing comes from `hookd-bench` (see CONTRIBUTING.md).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hookd::git::{self, CheckpointMeta, SnapshotOptions};
use hookd::pipeline::{self, SaveRequest};
use hookd::resources::Resources;
use hookd::sessions::SessionKey;
use hookd::state::SaveTrigger;
use protocol::config::Config;
use protocol::wire::Harness;
use std::path::Path;

#[allow(dead_code)]
#[path = "../../tests/bench/inputs.rs"]
mod inputs;

/// As if hookd had never checkpointed the repository, with a tree it has
/// not seen either (a new file each time: no cached answer applies).
fn forget_checkpoints(repo: &Path) {
    static ROUND: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = ROUND.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::fs::write(
        repo.join(format!("src/added/round_{n}.rs")),
        format!("// {n}\n"),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(repo.join(".git/hookd"));
    let _ = std::fs::remove_dir_all(repo.join(".workflow"));
    let _ = inputs::git(repo)
        .args(["update-ref", "-d", "refs/hookd/checkpoints/main"])
        .output();
}

fn checkpoints(c: &mut Criterion) {
    let files: usize = std::env::var("HOOKD_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    inputs::repository(&repo, files, files / 100, files / 200).unwrap();
    let transcript = dir.path().join("s.jsonl");
    inputs::transcript(&transcript, "s", &repo, 1 << 20, 4).unwrap();

    let config = Config::default();
    let opts = SnapshotOptions {
        include_untracked: true,
        max_file_bytes: config.checkpoint.max_file_bytes,
    };
    let meta = CheckpointMeta {
        session: Some("bench".into()),
        trigger: "bench".into(),
        tokens: None,
    };
    let prefix = config.checkpoint.ref_prefix.clone();
    // What the engine would hold: the index lock and the changes cache.
    // A state directory of its own: the saves record what they wrote there.
    let resources = Resources::in_state_dir(&dir.path().join("state"));
    let repositories = &resources.repositories;
    let checkpoint = || {
        let snapshot = git::snapshot(repositories, &repo, &opts).unwrap();
        git::commit_checkpoint(&repo, &snapshot, &meta, &prefix).unwrap()
    };

    let mut group = c.benchmark_group(format!("checkpoint, {files} files"));
    group.sample_size(10);
    group.bench_function("first (private index seeded from the user's)", |b| {
        b.iter_batched(
            || forget_checkpoints(&repo),
            |()| checkpoint(),
            BatchSize::PerIteration,
        )
    });
    checkpoint();
    group.bench_function("again, nothing changed", |b| b.iter(checkpoint));
    group.bench_function("snapshot only, nothing changed", |b| {
        b.iter(|| git::snapshot(repositories, &repo, &opts).unwrap())
    });
    let mut n = 0;
    group.bench_function("changes against HEAD, with line counts", |b| {
        b.iter_batched(
            || {
                // A tree not seen yet, so the answer is not the cached one.
                n += 1;
                std::fs::write(repo.join("src/added/changes.rs"), format!("// {n}\n")).unwrap();
                git::snapshot(repositories, &repo, &opts).unwrap()
            },
            |snapshot| git::changes(repositories, &repo, &snapshot).unwrap(),
            BatchSize::PerIteration,
        )
    });
    let snapshot = git::snapshot(repositories, &repo, &opts).unwrap();
    git::changes(repositories, &repo, &snapshot).unwrap();
    group.bench_function("changes against HEAD, the same tree again", |b| {
        b.iter(|| git::changes(repositories, &repo, &snapshot).unwrap())
    });

    let request = SaveRequest {
        session: Some(SessionKey {
            harness: Harness::ClaudeCode,
            id: "bench".into(),
        }),
        project: repo.clone(),
        working_dir: None,
        transcript: Some(transcript.clone()),
        context: None,
        trigger: SaveTrigger::PreCompact("manual".into()),
        checkpoint: true,
    };
    group.bench_function("whole pipeline, first checkpoint", |b| {
        b.iter_batched(
            || forget_checkpoints(&repo),
            |()| assert!(pipeline::save(&request, &config, &resources).ok()),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("whole pipeline, nothing changed", |b| {
        b.iter(|| assert!(pipeline::save(&request, &config, &resources).ok()))
    });
    group.finish();
}

criterion_group!(benches, checkpoints);
criterion_main!(benches);
