//! More repositories that try to block hookd's git work: through an
//! alternate object store, past the part of a config hookd reads, with more
//! entries than hookd looks through, and through an object a restore reads.
//! The real daemon, driven through the real hookctl.

use crate::attacks::{Lab, assert_ok, repo_at};
use crate::attacks_blocking::{Fifo, Route, append, git_threads, survives};
use hookd_tests::{output_text, process_alive, stdout, wait_until};
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

/// hookctl's own limit for a checkpoint command (10 s), less a margin: an
/// answer after this came from a wait hookd did not bound.
const COMMAND_ANSWERED: Duration = Duration::from_secs(8);

#[test]
fn a_fifo_in_an_alternate_object_store_does_not_block() {
    let said = survives(Route::refused("alternates-pack"), |_, git_dir, fifo| {
        // libgit2 lists the alternate's packs and opens an index when it
        // looks for an object there.
        let alternate = fifo.with_file_name("borrowed-objects");
        std::fs::create_dir_all(alternate.join("pack")).unwrap();
        std::fs::write(alternate.join("pack/pack-1.pack"), "PACK").unwrap();
        symlink(fifo, alternate.join("pack/pack-1.idx")).unwrap();
        std::fs::create_dir_all(git_dir.join("objects/info")).unwrap();
        std::fs::write(
            git_dir.join("objects/info/alternates"),
            format!("# borrowed\n{}\n", alternate.display()),
        )
        .unwrap();
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/borrowed-objects/pack/pack-1.idx (in the git directory) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/borrowed-objects/pack/pack-1.idx (in the git directory) is a FIFO, and reading it could hang hookd; no checkpoint was made. Replace it with a regular file or remove it
    "#);
}

#[test]
fn a_fifo_included_past_the_first_mebibyte_of_a_config_does_not_block() {
    let said = survives(
        Route::refused("include-after-padding"),
        |_, git_dir, fifo| {
            let padding = "# padding\n".repeat(110_000);
            append(
                &git_dir.join("config"),
                &format!("{padding}[include]\n\tpath = {}\n", fifo.display()),
            );
        },
    );
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/config is 1048576 bytes or larger, more than hookd looks through for files that could hang it; no checkpoint was made. Make the file smaller
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/config is 1048576 bytes or larger, more than hookd looks through for files that could hang it; no checkpoint was made. Make the file smaller
    "#);
}

#[test]
fn more_refs_than_hookd_looks_through_are_refused_not_skipped() {
    let said = survives(Route::refused("too-many-refs"), |_, git_dir, _| {
        // A FIFO among them would go unseen if hookd stopped looking.
        let tags = git_dir.join("refs/tags");
        std::fs::create_dir_all(&tags).unwrap();
        for i in 0..20_001 {
            std::fs::write(tags.join(format!("t{i}")), "").unwrap();
        }
    });
    insta::assert_snapshot!(said, @r#"
        save 1: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/refs/tags and the git directory's other folders hookd looks through hold more than 20000 entries, more than hookd looks through for files that could hang it; no checkpoint was made. Pack its refs (`git pack-refs --all`) and objects (`git gc`)
        save 2: hookd leaves the git repository of [TEMP]/proj alone: [TEMP]/proj/.git/refs/tags and the git directory's other folders hookd looks through hold more than 20000 entries, more than hookd looks through for files that could hang it; no checkpoint was made. Pack its refs (`git pack-refs --all`) and objects (`git gc`)
    "#);
}

#[test]
fn a_restore_reading_an_object_that_is_a_fifo_answers_within_the_deadline() {
    let lab = Lab::new();
    let repo = repo_at(&lab.sb.path().join("proj"));
    repo.write(
        "src/lib.rs",
        "pub fn a() {}\npub fn only_checkpointed() {}\n",
    );
    assert_ok(&lab.sb.hookctl_in(&repo.dir, &["save"]), "save");
    let checkpoint = repo.hookd_refs().pop().expect("a checkpoint was made");
    let blob = repo.git(&["hash-object", "src/lib.rs"]).trim().to_owned();
    // hookd wrote the checkpoint's new blob as a loose object: hookd does not
    // look at those up front, so only the deadline stands between a restore
    // and the FIFO.
    let object = repo
        .git_dir()
        .join("objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    assert!(
        object.is_file(),
        "{} is not a loose object",
        object.display()
    );
    std::fs::remove_file(repo.dir.join("src/lib.rs")).unwrap();
    let normalizer = lab.normalizer(&repo.dir);
    let fifo = Fifo::make(&object);

    let started = Instant::now();
    let restore = lab
        .sb
        .hookctl_in(&repo.dir, &["checkpoint", "restore", &checkpoint]);
    let took = started.elapsed();
    let said = normalizer.normalize(&output_text(&restore));
    assert!(
        took < COMMAND_ANSWERED,
        "the restore did not answer within the deadline ({took:?}): {said:?}"
    );
    insta::assert_snapshot!(said, @r#"
        --- stderr
        hookctl: hookd answered: git work for [TEMP]/proj took longer than 5 s and was given up: hookd went on without waiting for it (it may still finish) and skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)
        --- exit 1
    "#);

    // The next git command there answers at once, and no thread is added.
    let started = Instant::now();
    let listing = lab.sb.hookctl_in(&repo.dir, &["checkpoints"]);
    let said = normalizer.normalize(&output_text(&listing));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "checkpoints while the restore is stuck ({:?}): {said:?}",
        started.elapsed()
    );
    insta::assert_snapshot!(said, @r#"
        --- stderr
        hookctl: hookd answered: git work for [TEMP]/proj is still stuck from an earlier call: hookd skips git there until it returns (a file in the repository may be a FIFO or on a stalled network file system)
        --- exit 1
    "#);
    assert_eq!(git_threads(lab.pid), 1, "threads doing git work");

    // Once the read returns, git works there again.
    drop(fifo);
    assert!(
        wait_until(Duration::from_secs(5), || {
            let listing = lab.sb.hookctl_in(&repo.dir, &["checkpoints"]);
            listing.status.success() && stdout(&listing).contains(&checkpoint[..7])
        }),
        "git stayed skipped after the stuck read returned"
    );
    assert!(process_alive(lab.pid));
}
