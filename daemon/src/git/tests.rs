use super::restore::{requested_path, unsafe_component};
use super::*;

#[test]
fn exclude_is_added_once() {
    let dir = tempfile::tempdir().unwrap();
    git2::Repository::init(dir.path()).unwrap();
    assert!(exclude(dir.path(), ".workflow/").unwrap());
    assert!(!exclude(dir.path(), ".workflow/").unwrap());
    let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
    assert_eq!(text.matches(".workflow/").count(), 1);
    // A linked worktree's exclude is its main repository's.
    let repo = git2::Repository::open(dir.path()).unwrap();
    let linked = linked_worktree(&repo, dir.path());
    assert!(exclude(&linked, ".other/").unwrap());
    let text = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
    assert!(text.contains("\n.other/\n"), "{text}");
    let outside = tempfile::tempdir().unwrap();
    assert!(matches!(
        exclude(outside.path(), ".workflow/"),
        Err(GitError::NotARepository { .. })
    ));
}

/// A `.git` file inside another work tree is used only when it names a
/// git dir of that repository or a worktree's that names it back.
#[test]
fn a_git_file_inside_a_work_tree_must_name_a_git_dir_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("outer");
    let other = dir.path().join("other/.git");
    for part in ["modules/sub", "objects", "refs"] {
        std::fs::create_dir_all(outer.join(".git").join(part)).unwrap();
    }
    std::fs::write(outer.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let sub = outer.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let belongs = |git_dir: &Path| special_files::git_dir_belongs(&sub.join(".git"), &sub, git_dir);
    std::fs::write(sub.join(".git"), "gitdir: x\n").unwrap();
    assert!(belongs(&outer.join(".git/modules/sub")), "a submodule's");
    assert!(!belongs(&other), "another repository's");
    let linked = dir.path().join("other/.git/worktrees/sub");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(
        linked.join("gitdir"),
        format!("{}\n", sub.join(".git").display()),
    )
    .unwrap();
    assert!(belongs(&linked), "a worktree's that names it back");
    std::fs::write(linked.join("gitdir"), "/elsewhere/.git\n").unwrap();
    assert!(!belongs(&linked), "a worktree's that names another");
    let top = dir.path().join("top");
    std::fs::create_dir_all(&top).unwrap();
    std::fs::write(top.join(".git"), "gitdir: x\n").unwrap();
    assert!(
        special_files::git_dir_belongs(&top.join(".git"), &top, &other),
        "a separate git dir at the top of a work tree"
    );
}

/// A git dir whose `commondir` names another repository writes into
/// that repository's objects, refs and exclude file: only a linked
/// worktree's, `<common>/worktrees/<name>` naming this `.git` back, may.
#[test]
fn a_commondir_is_followed_only_from_a_worktree_that_names_this_git_back() {
    let dir = tempfile::tempdir().unwrap();
    let important = dir.path().join("important");
    let repo = git2::Repository::init(&important).unwrap();
    let exclude_file = important.join(".git/info/exclude");
    let exclude_before = std::fs::read(&exclude_file).ok();
    let vendored = dir.path().join("proj/vendor/x");
    let fake = vendored.join(".git");
    for sub in ["objects", "refs/heads"] {
        std::fs::create_dir_all(fake.join(sub)).unwrap();
    }
    std::fs::write(fake.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        fake.join("commondir"),
        format!("{}\n", important.join(".git").display()),
    )
    .unwrap();
    assert!(
        !special_files::git_dir_belongs(&fake, &vendored, &fake),
        "a .git directory with a commondir"
    );
    assert!(exclude(&vendored, ".workflow/").is_err());
    assert!(special_files::refuse_before_open(&vendored).is_err());
    assert!(open(&vendored).is_err());
    // The same git dir named by a `.git` file at the top of a work tree.
    let top = dir.path().join("top");
    std::fs::create_dir_all(&top).unwrap();
    std::fs::write(top.join(".git"), format!("gitdir: {}\n", fake.display())).unwrap();
    assert!(!special_files::git_dir_belongs(
        &top.join(".git"),
        &top,
        &fake
    ));
    assert!(exclude(&top, ".workflow/").is_err());
    assert!(special_files::refuse_before_open(&top).is_err());
    // Naming this `.git` back is not enough outside `<common>/worktrees/`.
    std::fs::write(
        fake.join("gitdir"),
        format!("{}\n", top.join(".git").display()),
    )
    .unwrap();
    assert!(!special_files::git_dir_belongs(
        &top.join(".git"),
        &top,
        &fake
    ));
    assert_eq!(std::fs::read(&exclude_file).ok(), exclude_before);
    assert!(
        repo.references_glob("refs/hookd/*")
            .unwrap()
            .next()
            .is_none()
    );

    // A real linked worktree and its git dir still belong.
    let linked = linked_worktree(&repo, dir.path());
    let linked_git_dir = important.join(".git/worktrees/linked");
    assert!(special_files::git_dir_belongs(
        &linked.join(".git"),
        &linked,
        &linked_git_dir
    ));
    special_files::refuse_before_open(&linked).unwrap();
    open(&linked).unwrap();
    assert!(exclude(&linked, ".workflow/").unwrap());
}

#[test]
fn exclude_never_reads_the_config() {
    // It runs without a deadline: a FIFO the config includes is never opened.
    let dir = tempfile::tempdir().unwrap();
    let git_dir = dir.path().join("git-dirs/work.git");
    let work = dir.path().join("work");
    let mut opts = git2::RepositoryInitOptions::new();
    opts.workdir_path(&work).no_dotgit_dir(true);
    git2::Repository::init_opts(&git_dir, &opts).unwrap();
    assert!(work.join(".git").is_file());
    let fifo = dir.path().join("trap");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let config = git_dir.join("config");
    let plain = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{plain}[include]\n\tpath = {}\n", fifo.display()),
    )
    .unwrap();
    assert!(exclude(&work, ".workflow/").unwrap());
    let text = std::fs::read_to_string(git_dir.join("info/exclude")).unwrap();
    assert!(text.contains("\n.workflow/\n"), "{text}");
}

#[test]
fn a_work_tree_has_one_git_thread_however_many_callers_come_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let repositories = Repositories::default();
    let started = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Arc::new(Mutex::new(released));
    let callers: Vec<_> = (0..3)
        .map(|_| {
            let (repositories, project) = (repositories.clone(), dir.path().to_path_buf());
            let (started, released) = (started.clone(), released.clone());
            std::thread::spawn(move || {
                repositories.bounded(&project, std::time::Duration::from_millis(200), move |_| {
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _ = released.lock().unwrap().recv();
                    Ok(())
                })
            })
        })
        .collect();
    for caller in callers {
        let answer = caller.join().unwrap();
        assert!(
            matches!(
                answer,
                Err(GitError::TimedOut { .. } | GitError::Stuck { .. })
            ),
            "{answer:?}"
        );
    }
    assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(repositories.is_stuck(dir.path()));
    release.send(()).unwrap();
    assert!(
        frees_within_two_seconds(&repositories, dir.path()),
        "the mark outlived the work"
    );
    assert!(
        repositories
            .bounded(dir.path(), GIT_DEADLINE, |_| Ok(()))
            .is_ok()
    );
}

/// Whether the work tree's stuck mark goes once its git work returned.
fn frees_within_two_seconds(repositories: &Repositories, dir: &Path) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        !repositories.is_stuck(dir)
    })
}

#[test]
fn include_paths_are_read_as_git_reads_them() {
    let text = "[core]\n\tpath = not-an-include\n\
        [include] path = a.cfg\n\
        [Include]\n\tPATH = \"b c.cfg\" # a comment\n\
        [includeIf \"gitdir:/x]y/\"]\n\tpath = ~/d\\\n.cfg ; more\n\
        [include.old]\n\tpath=e\\\"f\n\
        [user]\n\tname = x\n\tpath = g\n";
    let found: Vec<String> = special_files::include_paths(text)
        .into_iter()
        .map(|(_, value)| value)
        .collect();
    assert_eq!(found, ["a.cfg", "b c.cfg", "~/d.cfg", "e\"f"]);
}

#[test]
fn a_fifo_git_would_read_refuses_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    git2::Repository::init(&work).unwrap();
    assert!(head_info(&work).is_ok());
    let fifo = dir.path().join("trap");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let config = work.join(".git/config");
    let plain = std::fs::read_to_string(&config).unwrap();
    for (key, value) in [
        ("include", "path"),
        ("core", "excludesFile"),
        ("core", "attributesFile"),
    ] {
        std::fs::write(
            &config,
            format!("{plain}[{key}]\n\t{value} = {}\n", fifo.display()),
        )
        .unwrap();
        match head_info(&work) {
            Err(e @ GitError::UnsafeFile { .. }) => {
                let said = e.to_string();
                assert!(said.contains("a FIFO") && said.contains("trap"), "{said}");
            }
            other => panic!("{key}.{value}: {other:?}"),
        }
    }
    std::fs::write(&config, &plain).unwrap();
    // The work tree's own files are looked at before git walks it.
    std::os::unix::fs::symlink(&fifo, work.join(".gitignore")).unwrap();
    let opts = SnapshotOptions {
        include_untracked: true,
        max_file_bytes: 1024,
    };
    assert!(matches!(
        snapshot(&Repositories::default(), &work, &opts),
        Err(GitError::UnsafeFile { .. })
    ));
    assert_eq!(project_files(&work, true), None);
}

#[test]
fn git_work_past_its_deadline_marks_the_work_tree_stuck_until_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let repositories = Repositories::default();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let slow = repositories.bounded(
        dir.path(),
        std::time::Duration::from_millis(50),
        move |_| {
            let _ = released.recv();
            Ok(1)
        },
    );
    assert!(matches!(slow, Err(GitError::TimedOut { .. })), "{slow:?}");
    assert!(repositories.is_stuck(dir.path()));
    let next = repositories.bounded(dir.path(), GIT_DEADLINE, |_| Ok(2));
    assert!(matches!(next, Err(GitError::Stuck { .. })), "{next:?}");
    release.send(()).unwrap();
    assert!(
        frees_within_two_seconds(&repositories, dir.path()),
        "the mark outlived the work"
    );
    assert_eq!(
        repositories
            .bounded(dir.path(), GIT_DEADLINE, |_| Ok(3))
            .unwrap(),
        3
    );
}

#[test]
fn trailer_values_hold_no_line_breaks() {
    assert_eq!(trailer_value("plain ünïcode"), "plain ünïcode");
    assert_eq!(
        trailer_value("a\nHookd-Session: x\r\t\u{1b}[0m\u{2028}"),
        "a\\nHookd-Session: x\\r\\t\\u{1b}[0m\\u{2028}"
    );
    let snapshot = Snapshot {
        tree: git2::Oid::ZERO_SHA1,
        head: None,
        branch: "main\nHookd-Base: forged".into(),
        state: "clean".into(),
        skipped: vec![Skipped {
            path: "big\nHookd-Session: forged".into(),
            reason: SkipReason::TooLarge(9),
        }],
        workdir: PathBuf::new(),
    };
    let meta = CheckpointMeta {
        session: Some("real\nHookd-Trigger: forged".into()),
        trigger: "manual".into(),
        tokens: None,
    };
    let message = checkpoint_message(&meta, &snapshot);
    let t = trailers(&message);
    assert_eq!(t["Trigger"], "manual");
    assert_eq!(t["Base"], "unborn");
    assert_eq!(t["Session"], "real\\nHookd-Trigger: forged");
    // Only hookd's own trailer block counts, first key first.
    let t = trailers("Title\n\nHookd-Session: in the body\n\nHookd-Session: a\nHookd-Session: b\n");
    assert_eq!(t["Session"], "a");
}

#[test]
fn only_plain_names_are_restored() {
    for bad in [
        &b""[..],
        b".",
        b"..",
        b".git",
        b".GIT",
        b".Git. ",
        b"GIT~1",
        b"a/b",
        b"a\0b",
    ] {
        assert!(unsafe_component(bad).is_some(), "{bad:?}");
    }
    for good in [
        &b"a.txt"[..],
        b".gitignore",
        b".github",
        b"git",
        b"...",
        b".git2",
    ] {
        assert!(unsafe_component(good).is_none(), "{good:?}");
    }
    assert_eq!(
        requested_path(Path::new("./src/lib.rs")).unwrap(),
        [b"src".to_vec(), b"lib.rs".to_vec()]
    );
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        ".git/config",
        "a/.GIT",
    ] {
        assert!(requested_path(Path::new(bad)).is_err(), "{bad}");
    }
}

#[test]
fn paths_inside_a_git_dir_are_recognized() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    git2::Repository::init(&work).unwrap();
    std::fs::create_dir_all(work.join("src")).unwrap();
    assert!(!project_is_inside_git_dir(dir.path()));
    assert!(!project_is_inside_git_dir(&work));
    assert!(!project_is_inside_git_dir(&work.join("src")));
    assert!(project_is_inside_git_dir(&work.join(".git")));
    assert!(project_is_inside_git_dir(&work.join(".git/refs/heads")));
    assert!(project_is_inside_git_dir(&work.join(".GIT/not-there")));
    std::os::unix::fs::symlink(work.join(".git/refs"), dir.path().join("link")).unwrap();
    assert!(project_is_inside_git_dir(&dir.path().join("link")));

    let bare = dir.path().join("bare.git");
    git2::Repository::init_bare(&bare).unwrap();
    assert!(project_is_inside_git_dir(&bare));
    assert!(project_is_inside_git_dir(&bare.join("objects")));

    // A separate git dir, wherever it is, whatever its name.
    let separate = dir.path().join("separate");
    let mut opts = git2::RepositoryInitOptions::new();
    opts.workdir_path(&dir.path().join("project"))
        .no_dotgit_dir(true);
    git2::Repository::init_opts(&separate, &opts).unwrap();
    assert!(project_is_inside_git_dir(&separate));
    assert!(!project_is_inside_git_dir(&dir.path().join("project")));

    // A work tree whose own files look like a git dir's is a work tree.
    std::fs::write(work.join("HEAD"), "not git's\n").unwrap();
    std::fs::create_dir_all(work.join("objects")).unwrap();
    std::fs::create_dir_all(work.join("refs")).unwrap();
    assert!(!project_is_inside_git_dir(&work));
    assert!(!project_is_inside_git_dir(&work.join("refs")));
}

/// A first commit in `repo`, then a worktree of it linked at `dir/linked`.
fn linked_worktree(repo: &git2::Repository, dir: &Path) -> PathBuf {
    let tree = repo.treebuilder(None).unwrap().write().unwrap();
    let tree = repo.find_tree(tree).unwrap();
    let me = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(Some("HEAD"), &me, &me, "first", &tree, &[])
        .unwrap();
    let linked = dir.join("linked");
    repo.worktree("linked", &linked, None).unwrap();
    linked
}
