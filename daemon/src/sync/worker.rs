//! Pushing and pulling for the daemon: one job per repository at a time
//! (a checkpoint that comes while one runs is folded into one more run),
//! on threads of their own so a remote that hangs costs no hook anything,
//! and what each push and pull did, kept for `hookctl sync status`,
//! `status` and `doctor`. A failed push is tried again after
//! `sync.retry_secs`, and at the next checkpoint.

use super::{MEMORY_REFS, Machine, SYNC_REFS, memory_ref, transport};
use crate::git::sync_objects::{self, SyncRepository};
use crate::path_locks::PathLocks;
use crate::resources::Resources;
use crate::time::now_ms;
use protocol::config::{Config, SyncConfig};
use protocol::sync::{SyncAttempt, SyncReport, SyncTarget, masked as masked_text, shown_url};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Every repository's sync as it went, and which jobs run.
pub struct SyncWorker {
    state_dir: PathBuf,
    /// By project (its work tree root); `None`: the memory.
    targets: Mutex<BTreeMap<Option<PathBuf>, Tracked>>,
    /// One git run per shuttle at a time (two worktrees share one).
    shuttles: PathLocks,
    /// The settings as they are now: a retry reads them again.
    current: CurrentSettings,
    /// The memories a pull merges into.
    resources: Arc<Resources>,
    /// git's runs under way.
    runs: transport::Runs,
}

/// Where the worker reads the daemon's settings in force.
pub type CurrentSettings = Arc<dyn Fn() -> Config + Send + Sync>;

#[derive(Default)]
struct Tracked {
    shown: SyncTarget,
    running: bool,
    /// A checkpoint came while a push ran: push once more.
    again: bool,
    /// Bumped by every push; a retry timer fires only if none came since.
    pushes: u64,
}

impl SyncWorker {
    pub fn new(
        state_dir: &Path,
        current: CurrentSettings,
        resources: Arc<Resources>,
    ) -> Arc<SyncWorker> {
        Arc::new(SyncWorker {
            state_dir: state_dir.to_path_buf(),
            targets: Mutex::new(BTreeMap::new()),
            shuttles: PathLocks::default(),
            current,
            resources,
            runs: transport::Runs::default(),
        })
    }

    /// One entry per project, however its path was spelled.
    fn key(project: &Path) -> Option<PathBuf> {
        Some(std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf()))
    }

    fn targets(&self) -> MutexGuard<'_, BTreeMap<Option<PathBuf>, Tracked>> {
        self.targets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After a save that made or kept a checkpoint: push `project` in the
    /// background, unless sync is off. Never waits for git, nor for the
    /// file system (the project's path is resolved on the push's thread).
    pub fn after_checkpoint(self: &Arc<Self>, project: &Path, sync: &SyncConfig) {
        if sync.remote.is_none() {
            return;
        }
        let worker = self.clone();
        let project = project.to_path_buf();
        let sync = sync.clone();
        let spawned = std::thread::Builder::new()
            .name("hookd-sync".into())
            .spawn(move || {
                if worker.claim(&project) {
                    worker.background_push(&project, &sync);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a sync push");
        }
    }

    /// Whether this thread runs `project`'s push: not when one runs
    /// already, which then runs once more.
    fn claim(&self, project: &Path) -> bool {
        let mut targets = self.targets();
        let tracked = targets.entry(Self::key(project)).or_default();
        if tracked.running {
            tracked.again = true;
            return false;
        }
        tracked.running = true;
        true
    }

    /// Pushes until no checkpoint came meanwhile; arms the retry when the
    /// last push failed.
    fn background_push(self: &Arc<Self>, project: &Path, sync: &SyncConfig) {
        let key = Self::key(project);
        loop {
            self.push_project(project, sync);
            let mut targets = self.targets();
            let tracked = targets.entry(key.clone()).or_default();
            if std::mem::take(&mut tracked.again) {
                continue;
            }
            tracked.running = false;
            let failed = tracked.shown.next_retry_ms.is_some();
            let generation = tracked.pushes;
            drop(targets);
            if failed {
                self.arm_retry(project, sync, generation);
            }
            // The lessons learnt so far go with the checkpoint.
            self.push_memory(sync);
            return;
        }
    }

    /// Tries `project` again after `sync.retry_secs`, unless a push came
    /// since, with the settings in force then.
    fn arm_retry(self: &Arc<Self>, project: &Path, sync: &SyncConfig, generation: u64) {
        let worker = self.clone();
        let project = project.to_path_buf();
        let wait = Duration::from_secs(sync.retry_secs);
        let _ = std::thread::Builder::new()
            .name("hookd-sync-retry".into())
            .spawn(move || {
                std::thread::sleep(wait);
                let sync = (worker.current)().sync;
                let due = worker
                    .targets()
                    .get(&Self::key(&project))
                    .is_some_and(|t| t.pushes == generation && !t.running);
                if due {
                    worker.after_checkpoint(&project, &sync);
                }
            });
    }

    /// Stops every git run under way and refuses new ones: the daemon is
    /// stopping, and no git outlives it.
    pub fn stop(&self) {
        self.runs.stop_all();
    }

    /// Pushes `project`'s sync refs now (the caller waits), and keeps how
    /// it went.
    pub fn push_project(&self, project: &Path, sync: &SyncConfig) -> SyncTarget {
        let attempt = masked(self.try_push_project(project, sync));
        if let Err(Failure::Run(why, _) | Failure::Setup(why)) = &attempt {
            tracing::warn!(project = %project.display(), "sync push: {why}");
        }
        let mut targets = self.targets();
        let tracked = targets.entry(Self::key(project)).or_default();
        tracked.pushes += 1;
        apply(&mut tracked.shown, project, attempt, true, sync);
        tracked.shown.clone()
    }

    fn try_push_project(&self, project: &Path, sync: &SyncConfig) -> Outcome {
        let machine = self.machine(sync)?;
        let remote = sync.remote.as_deref().ok_or_else(no_remote_set)?;
        // Nothing is exported for a repository without the remote.
        self.repository(project, remote, &machine)?;
        self.export_before_push(project, &machine);
        let repo = self.repository(project, remote, &machine)?;
        let url = repo.url.clone().map_err(Failure::Setup)?;
        let shuttle = transport::project_shuttle(&self.state_dir, &repo.digest, &repo.objects_dir)
            .map_err(|e| Failure::Run(e, url.clone()))?;
        let (refs, planted) = self.made_here(&repo.own_refs).map_err(Failure::Setup)?;
        let lock = self.shuttles.for_path(&shuttle);
        let _one = lock.lock().unwrap_or_else(|p| p.into_inner());
        transport::push(&self.runs, &shuttle, &url, &refs, timeout(sync))
            .map(|detail| (with_planted(detail, &planted), url.clone()))
            .map_err(|e| Failure::Run(with_planted(e, &planted), url))
    }

    /// This machine's `checkpoints/<branch>` and `state/<branch>` refs
    /// whose tips hookd made (they are in the ledger), and the names of the
    /// others: a tip written there by anything else (`git update-ref` to
    /// the user's HEAD, say) could carry the user's whole history.
    fn made_here(&self, own_refs: &[(String, String)]) -> Result<(RefTips, Vec<String>), String> {
        let trusted = super::Ledger::in_state_dir(&self.state_dir).read()?;
        let (mut refs, mut planted) = (Vec::new(), Vec::new());
        for (name, sha) in own_refs {
            let kind_is_synced = super::split_sync_ref(name).is_some_and(|(_, kind)| {
                kind.starts_with("checkpoints/") || kind.starts_with("state/")
            });
            if kind_is_synced && trusted.made(sha) {
                refs.push((name.clone(), sha.clone()));
            } else {
                planted.push(name.clone());
            }
        }
        for name in &planted {
            tracing::warn!(reference = %name, "not pushed: hookd did not write its tip");
        }
        Ok((refs, planted))
    }

    /// Fetches the other machines' sync refs of `project`'s remote and
    /// copies them into its repository (the caller waits).
    pub fn pull_project(&self, project: &Path, sync: &SyncConfig) -> SyncTarget {
        let attempt = masked(self.try_pull_project(project, sync));
        let mut targets = self.targets();
        let tracked = targets.entry(Self::key(project)).or_default();
        apply(&mut tracked.shown, project, attempt, false, sync);
        tracked.shown.clone()
    }

    fn try_pull_project(&self, project: &Path, sync: &SyncConfig) -> Outcome {
        let machine = self.machine(sync)?;
        let remote = sync.remote.as_deref().ok_or_else(no_remote_set)?;
        let repo = self.repository(project, remote, &machine)?;
        let url = repo.url.clone().map_err(Failure::Setup)?;
        let run = |e: String| Failure::Run(e, url.clone());
        let shuttle = transport::project_shuttle(&self.state_dir, &repo.digest, &repo.objects_dir)
            .map_err(run)?;
        let lock = self.shuttles.for_path(&shuttle);
        let _one = lock.lock().unwrap_or_else(|p| p.into_inner());
        let own = format!("{SYNC_REFS}{}/*", machine.id);
        transport::fetch(&self.runs, &shuttle, &url, SYNC_REFS, &own, timeout(sync))
            .map_err(run)?;
        let ledger = super::Ledger::in_state_dir(&self.state_dir);
        let copied = sync_objects::copy_fetched(
            project,
            &shuttle,
            SYNC_REFS,
            |name| fetched_ref_is_acceptable(name, &machine.id),
            &|sha| ledger.record(super::ledger::Kind::Pulled, sha),
        )
        .map_err(run)?;
        let mut detail = format!(
            "{} ref(s) of other machines updated, {} object(s) copied",
            copied.moved.len(),
            copied.objects
        );
        for refused in &copied.refused {
            detail.push_str(&format!("; left alone {refused}"));
        }
        Ok((detail, url))
    }

    /// Pushes the memory's ref to `sync.memory_remote` (the caller waits).
    pub fn push_memory(&self, sync: &SyncConfig) -> Option<SyncTarget> {
        let url = sync.memory_remote.clone()?;
        let attempt = self.memory_run(sync, &url, |shuttle, machine| {
            self.export_memory_before_push(shuttle, machine);
            let refs = sync_objects::shuttle_refs(shuttle, MEMORY_REFS)?;
            let own = memory_ref(&machine.id);
            let mine: Vec<_> = refs.into_iter().filter(|(name, _)| *name == own).collect();
            transport::push(&self.runs, shuttle, &url, &mine, timeout(sync))
        });
        Some(self.keep_memory(attempt, true, sync))
    }

    /// Fetches the other machines' memory refs into the memory's shuttle
    /// (the caller waits).
    pub fn pull_memory(&self, sync: &SyncConfig) -> Option<SyncTarget> {
        let url = sync.memory_remote.clone()?;
        let attempt = self.memory_run(sync, &url, |shuttle, machine| {
            let own = memory_ref(&machine.id);
            transport::fetch(&self.runs, shuttle, &url, MEMORY_REFS, &own, timeout(sync))?;
            let config = (self.current)();
            let merged =
                super::import::merge_memory(shuttle, machine, &self.resources.memories, &config)?;
            for skipped in &merged.skipped {
                tracing::warn!("memory merge: {skipped}");
            }
            Ok(format!(
                "fetched; {} task(s) added, {} updated from other machines",
                merged.added.len(),
                merged.updated.len()
            ))
        });
        Some(self.keep_memory(attempt, false, sync))
    }

    fn memory_run(
        &self,
        sync: &SyncConfig,
        url: &str,
        work: impl FnOnce(&Path, &Machine) -> Result<String, String>,
    ) -> Outcome {
        let machine = self.machine(sync)?;
        let run = |e: String| Failure::Run(e, url.to_owned());
        protocol::config::check_remote_url(url)
            .map_err(|e| Failure::Setup(format!("sync.memory_remote: {e}")))?;
        let shuttle = transport::memory_shuttle(&self.state_dir).map_err(run)?;
        let lock = self.shuttles.for_path(&shuttle);
        let _one = lock.lock().unwrap_or_else(|p| p.into_inner());
        work(&shuttle, &machine)
            .map(|d| (d, url.to_owned()))
            .map_err(run)
    }

    fn keep_memory(&self, attempt: Outcome, push: bool, sync: &SyncConfig) -> SyncTarget {
        let attempt = masked(attempt);
        let mut targets = self.targets();
        let tracked = targets.entry(None).or_default();
        apply(&mut tracked.shown, Path::new(""), attempt, push, sync);
        tracked.shown.project = None;
        tracked.shown.clone()
    }

    /// Sync as it is: for `project` (its URL or why none, looked up now),
    /// or for every repository pushed for; and the memory.
    pub fn report(&self, sync: &SyncConfig, project: Option<&Path>) -> SyncReport {
        let machine = self.machine(sync).map(|m| m.id).unwrap_or_default();
        let targets = self.targets();
        let mut repositories: Vec<SyncTarget> = match project {
            Some(_) if sync.remote.is_none() => Vec::new(),
            Some(p) => vec![
                targets
                    .get(&Self::key(p))
                    .map(|t| t.shown.clone())
                    .unwrap_or_default(),
            ],
            None => targets
                .iter()
                .filter(|(k, _)| k.is_some())
                .map(|(_, t)| t.shown.clone())
                .collect(),
        };
        let memory = sync.memory_remote.as_ref().map(|url| {
            let mut shown = targets
                .get(&None)
                .map(|t| t.shown.clone())
                .unwrap_or_default();
            shown.url = Some(shown_url(url));
            shown
        });
        drop(targets);
        if let (Some(p), Some(remote), Some(shown)) =
            (project, &sync.remote, repositories.first_mut())
        {
            shown.project = Some(p.to_path_buf());
            match sync_objects::sync_repository(p, remote, SYNC_REFS) {
                Ok(repo) => match repo.url {
                    Ok(url) => {
                        shown.url = Some(shown_url(&url));
                        shown.problem = None;
                    }
                    Err(why) => shown.problem = Some(why),
                },
                Err(why) => shown.problem = Some(why),
            }
        }
        SyncReport {
            remote: sync.remote.clone(),
            memory_remote: sync.memory_remote.as_deref().map(shown_url),
            machine,
            repositories,
            memory,
        }
    }

    /// Before a push: the local checkpoints not yet exported become this
    /// machine's `refs/hookd/sync/<me>/checkpoints/<branch>` commits, their
    /// secret files left out. What cannot be exported is not pushed; the
    /// refs exported before still are.
    fn export_before_push(&self, project: &Path, machine: &Machine) {
        let prefix = (self.current)().checkpoint.ref_prefix;
        let ledger = super::Ledger::in_state_dir(&self.state_dir);
        match super::export::export_checkpoints_under(project, machine, &prefix, &ledger) {
            Ok(report) => {
                for exported in &report.exported {
                    for (path, why) in &exported.left_out {
                        tracing::info!(project = %project.display(), branch = %exported.branch, file = %path, "left out of the pushed checkpoint: {why}");
                    }
                }
            }
            Err(e) => tracing::warn!(project = %project.display(), "{e}"),
        }
    }

    /// Before a memory push: this machine's task records become its
    /// `refs/hookd/memory/<me>` commit in the memory's shuttle.
    fn export_memory_before_push(&self, shuttle: &Path, machine: &Machine) {
        let config = (self.current)();
        let Some(dir) = crate::memory::dir(&config) else {
            tracing::warn!("no data directory for the memory: nothing of it is pushed");
            return;
        };
        let tasks = dir.join(crate::memory::store::TASKS_DIR);
        if let Err(e) = super::export::export_memory(shuttle, machine, &tasks) {
            tracing::warn!("{e}");
        }
    }

    fn machine(&self, sync: &SyncConfig) -> Result<Machine, Failure> {
        Machine::for_sync(&self.state_dir, sync).map_err(Failure::Setup)
    }

    fn repository(
        &self,
        project: &Path,
        remote: &str,
        machine: &Machine,
    ) -> Result<SyncRepository, Failure> {
        let own = format!("{SYNC_REFS}{}/", machine.id);
        sync_objects::sync_repository(project, remote, &own).map_err(Failure::Setup)
    }
}

/// Only another machine's `checkpoints/<branch>` or `state/<branch>` ref,
/// under a valid machine id, is taken from a fetch into a project.
fn fetched_ref_is_acceptable(name: &str, me: &str) -> Result<(), &'static str> {
    let Some((machine, kind)) = super::split_sync_ref(name) else {
        return Err("not a sync ref");
    };
    if machine == me {
        return Err("this machine's own ref");
    }
    if protocol::config::check_machine_name(machine).is_err() {
        return Err("not a machine id");
    }
    let branch = kind
        .strip_prefix("checkpoints/")
        .or_else(|| kind.strip_prefix("state/"));
    if branch.is_none_or(str::is_empty) {
        return Err("not a checkpoint or saved-state ref");
    }
    Ok(())
}

/// Refs as (name, sha).
type RefTips = Vec<(String, String)>;

/// A push's detail, naming the refs left out because hookd did not write
/// their tips.
fn with_planted(detail: String, planted: &[String]) -> String {
    match planted {
        [] => detail,
        _ => format!(
            "{detail}; not pushed (hookd did not write their tips; delete them with `git update-ref -d <ref>`): {}",
            planted.join(", ")
        ),
    }
}

/// What a push or pull did and where to, or why not.
type Outcome = Result<(String, String), Failure>;

enum Failure {
    /// Nothing was tried: no such remote, a refused URL, no repository.
    Setup(String),
    /// git ran (or was to) and failed: what, and the URL.
    Run(String, String),
}

fn no_remote_set() -> Failure {
    Failure::Setup("sync.remote is not set in your configuration: nothing is pushed".into())
}

fn timeout(sync: &SyncConfig) -> Duration {
    Duration::from_secs(sync.timeout_secs.max(1))
}

/// `attempt` with the password or token of its URL masked, in the URL and
/// in what git said, before it is logged, kept or shown.
fn masked(attempt: Outcome) -> Outcome {
    match attempt {
        Ok((detail, url)) => Ok((masked_text(&detail, &url), shown_url(&url))),
        Err(Failure::Run(why, url)) => Err(Failure::Run(masked_text(&why, &url), shown_url(&url))),
        setup => setup,
    }
}

/// Keeps `attempt` as the last push (or pull) of `shown`.
fn apply(shown: &mut SyncTarget, project: &Path, attempt: Outcome, push: bool, sync: &SyncConfig) {
    shown.project = Some(project.to_path_buf());
    let now = now_ms();
    let record = match attempt {
        Ok((detail, url)) => {
            shown.problem = None;
            shown.url = Some(url.clone());
            SyncAttempt {
                at_ms: now,
                ok: true,
                detail,
                url,
            }
        }
        Err(Failure::Setup(why)) => {
            shown.problem = Some(why.clone());
            shown.url = None;
            SyncAttempt {
                at_ms: now,
                ok: false,
                detail: why,
                url: String::new(),
            }
        }
        Err(Failure::Run(why, url)) => {
            shown.problem = None;
            shown.url = Some(url.clone());
            SyncAttempt {
                at_ms: now,
                ok: false,
                detail: why,
                url,
            }
        }
    };
    if push {
        shown.next_retry_ms = (!record.ok && shown.problem.is_none())
            .then(|| now + sync.retry_secs.saturating_mul(1000));
        shown.last_push = Some(record);
    } else {
        shown.last_pull = Some(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::test_git::git;

    #[test]
    fn checkpoints_that_come_while_a_push_runs_make_one_more_push() {
        let dir = tempfile::tempdir().unwrap();
        let (project, remote, state) = (
            dir.path().join("p"),
            dir.path().join("r.git"),
            dir.path().join("s"),
        );
        for d in [&project, &remote, &state] {
            std::fs::create_dir_all(d).unwrap();
        }
        git(&remote, &["init", "-q", "--bare"]);
        git(&project, &["init", "-q", "-b", "main"]);
        git(&project, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(
            &project,
            &[
                "remote",
                "add",
                "hookd-sync",
                &format!("file://{}", remote.display()),
            ],
        );
        std::fs::write(state.join(super::super::machine::MACHINE_FILE), "000000\n").unwrap();
        git(
            &project,
            &["update-ref", "refs/hookd/sync/m-000000/state/main", "HEAD"],
        );
        // As though hookd had made it: only such a tip is pushed.
        let tip = git(&project, &["rev-parse", "HEAD"]);
        super::super::Ledger::in_state_dir(&state)
            .record(super::super::ledger::Kind::Made, &tip)
            .unwrap();
        let sync = SyncConfig {
            remote: Some("hookd-sync".into()),
            machine_name: Some("m".into()),
            ..SyncConfig::default()
        };
        let current = Config {
            sync: sync.clone(),
            ..Config::default()
        };
        let worker = SyncWorker::new(
            &state,
            Arc::new(move || current.clone()),
            Arc::new(Resources::default()),
        );
        for _ in 0..5 {
            worker.after_checkpoint(&project, &sync);
        }
        let key = SyncWorker::key(&project);
        let done = || {
            worker
                .targets()
                .get(&key)
                .is_some_and(|t| !t.running && t.shown.last_push.as_ref().is_some_and(|a| a.ok))
        };
        let started = std::time::Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(30), "no push ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Settled: no thread claims the project any more.
        std::thread::sleep(Duration::from_millis(300));
        let pushes = worker.targets()[&key].pushes;
        assert!(
            (1..=2).contains(&pushes),
            "{pushes} pushes for 5 checkpoints"
        );
        assert!(git(&remote, &["for-each-ref"]).contains("refs/hookd/sync/m-000000/state/main"));
    }

    #[test]
    fn only_other_machines_checkpoint_and_state_refs_are_taken() {
        let me = "laptop-abcdef";
        assert!(fetched_ref_is_acceptable("refs/hookd/sync/box-123456/state/main", me).is_ok());
        assert!(
            fetched_ref_is_acceptable("refs/hookd/sync/box-123456/checkpoints/feat/x", me).is_ok()
        );
        for bad in [
            "refs/hookd/sync/laptop-abcdef/state/main",
            "refs/hookd/sync/box-123456/heads/main",
            "refs/hookd/sync/box-123456/state/",
            "refs/hookd/sync/bad_name/state/main",
            "refs/heads/main",
        ] {
            assert!(fetched_ref_is_acceptable(bad, me).is_err(), "{bad}");
        }
    }
}
