//! More repositories that try to block hookd's git work: through an
//! alternate object store, past the part of a config hookd reads, with more
//! entries than hookd looks through, and through an object a restore reads.
//! The real daemon, driven through the real hookctl.

use crate::attacks::{Lab, assert_ok, repo_at};
use crate::attacks_blocking::{Fifo, Route, append, git_threads, survives};
use hookd_tests::{process_alive, stderr, stdout, wait_until};
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

/// hookctl's own limit for a checkpoint command (10 s), less a margin: an
/// answer after this came from a wait hookd did not bound.
const COMMAND_ANSWERED: Duration = Duration::from_secs(8);

#[test]
fn a_fifo_in_an_alternate_object_store_does_not_block() {
    survives(Route::refused("alternates-pack"), |_, git_dir, fifo| {
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
}

#[test]
fn a_fifo_included_past_the_first_mebibyte_of_a_config_does_not_block() {
    survives(
        Route::refused("include-after-padding"),
        |_, git_dir, fifo| {
            let padding = "# padding\n".repeat(110_000);
            append(
                &git_dir.join("config"),
                &format!("{padding}[include]\n\tpath = {}\n", fifo.display()),
            );
        },
    );
}

#[test]
fn more_refs_than_hookd_looks_through_are_refused_not_skipped() {
    survives(Route::refused("too-many-refs"), |_, git_dir, _| {
        // A FIFO among them would go unseen if hookd stopped looking.
        let tags = git_dir.join("refs/tags");
        std::fs::create_dir_all(&tags).unwrap();
        for i in 0..20_001 {
            std::fs::write(tags.join(format!("t{i}")), "").unwrap();
        }
    });
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
    let fifo = Fifo::make(&object);

    let started = Instant::now();
    let restore = lab
        .sb
        .hookctl_in(&repo.dir, &["checkpoint", "restore", &checkpoint]);
    let took = started.elapsed();
    let said = format!("{}{}", stdout(&restore), stderr(&restore));
    assert!(
        took < COMMAND_ANSWERED && said.contains("given up"),
        "the restore did not answer within the deadline ({took:?}): {said:?}"
    );

    // The next git command there answers at once, and no thread is added.
    let started = Instant::now();
    let listing = lab.sb.hookctl_in(&repo.dir, &["checkpoints"]);
    let said = format!("{}{}", stdout(&listing), stderr(&listing));
    assert!(
        started.elapsed() < Duration::from_secs(2) && said.contains("still stuck"),
        "checkpoints while the restore is stuck ({:?}): {said:?}",
        started.elapsed()
    );
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
