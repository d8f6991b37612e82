//! The configuration that applies to one request: the daemon's layers (user
//! file, flags) plus the project's `.hookd.yaml`, what the user trusts of
//! that project, and the hook's `HOOKD_*` environment. Parsed
//! configurations are cached until a file changes.

use protocol::config::{Effective, Layers, PROJECT_FILE, is_config_env};

/// A hook's `HOOKD_SYNC__*` variables, which never apply.
const SYNC_ENV_PREFIX: &str = "HOOKD_SYNC__";
use protocol::trust::TrustStore;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Cached configurations kept at most (one per project and environment).
const CACHE_LIMIT: usize = 256;

/// Modification time and length of one file, if it is there.
type FileStamp = Option<(SystemTime, u64)>;
/// Those of the user file, the project file and the trust store.
type Stamp = [FileStamp; 3];
/// A project and the `HOOKD_*` variables of a request.
type CacheKey = (Option<PathBuf>, Vec<(String, String)>);
/// A configuration as loaded: in force, or refused with its problem.
type Loaded = Result<Arc<Effective>, String>;

pub struct Settings {
    base: Layers,
    /// The user's record of trusted projects.
    trust_store: Option<PathBuf>,
    /// The daemon's own configuration (user file and flags) as of the user
    /// file's stamp: taken up again when the file changes, and kept as it
    /// was while a changed file is broken.
    fallback: Mutex<(FileStamp, Arc<Effective>)>,
    /// A configuration that was refused is cached too (as its problem):
    /// every hook asks, and a refused file stays refused until it changes.
    cache: Mutex<HashMap<CacheKey, (Stamp, Loaded)>>,
}

impl Settings {
    /// `base` holds the user file and daemon flags; `fallback` is used when a
    /// project's layers are broken.
    pub fn new(base: Layers, fallback: Effective, trust_store: Option<PathBuf>) -> Self {
        let stamp = user_stamp(base.user_file.as_deref());
        Settings {
            base,
            trust_store,
            fallback: Mutex::new((stamp, Arc::new(fallback))),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The daemon's own configuration, with the user file as it is now
    /// (the last good one while it is broken).
    pub fn daemon(&self) -> Arc<Effective> {
        let stamp = user_stamp(self.base.user_file.as_deref());
        let mut fallback = self.fallback.lock().unwrap_or_else(|p| p.into_inner());
        if fallback.0 != stamp {
            fallback.0 = stamp;
            if let Ok(effective) = protocol::config::load(&self.base) {
                fallback.1 = Arc::new(effective);
            }
        }
        fallback.1.clone()
    }

    /// What is wrong with the user's configuration now, if anything: said
    /// while it lasts, gone as soon as the file is fixed.
    pub fn user_problem(&self) -> Option<String> {
        self.for_request(None, &BTreeMap::new()).1
    }

    /// The configuration for a project and a hook's environment. A broken
    /// layer gives the daemon's configuration and the reason.
    pub fn for_request(
        &self,
        project: Option<&Path>,
        env: &BTreeMap<String, String>,
    ) -> (Arc<Effective>, Option<String>) {
        let env: Vec<(String, String)> = env
            .iter()
            // Where sync pushes, and as which machine, is the daemon's own
            // setting: a push runs after the hook, with the daemon's.
            .filter(|(k, _)| is_config_env(k) && !k.starts_with(SYNC_ENV_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let project = project.map(Path::to_path_buf);
        let stamp = [
            user_stamp(self.base.user_file.as_deref()),
            stamp_of(project.as_ref().map(|p| p.join(PROJECT_FILE)).as_deref()),
            stamp_of(self.trust_store.as_deref()),
        ];
        let key = (project.clone(), env.clone());
        if let Some((cached_stamp, loaded)) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            && *cached_stamp == stamp
        {
            return self.answer(loaded.clone());
        }
        let mut layers = self.base.clone();
        layers.trust = project
            .as_deref()
            .zip(self.trust_store.as_deref())
            .and_then(|(root, store)| TrustStore::load(store).lookup(root).cloned());
        layers.project_root = project;
        layers.env.extend(env);
        let loaded = protocol::config::load(&layers)
            .map(Arc::new)
            .map_err(|e| format!("{e}; using the daemon's configuration"));
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, (stamp, loaded.clone()));
        drop(cache);
        self.answer(loaded)
    }

    /// The configuration to use, and the problem with the one asked for.
    fn answer(&self, loaded: Loaded) -> (Arc<Effective>, Option<String>) {
        match loaded {
            Ok(effective) => (effective, None),
            Err(problem) => (self.daemon(), Some(problem)),
        }
    }
}

/// The user's own file, through a link to it (a dotfiles repository):
/// an edit of the file it names is an edit of the configuration.
fn user_stamp(path: Option<&Path>) -> FileStamp {
    let meta = std::fs::metadata(path?).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn stamp_of(path: Option<&Path>) -> FileStamp {
    let meta = std::fs::symlink_metadata(path?).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_own_configuration_follows_the_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, "monitor:\n  reset_drop: [oops\n").unwrap();
        let layers = Layers {
            user_file: Some(file.clone()),
            ..Layers::default()
        };
        let (effective, problem) = crate::load_daemon_config(&layers);
        assert!(problem.is_some());
        let settings = Settings::new(layers, effective, None);
        assert_eq!(settings.daemon().config.monitor.reset_drop, 0.30);
        assert!(settings.user_problem().is_some());
        // A second apart at most in mtime: the length differs anyway.
        std::fs::write(&file, "monitor:\n  reset_drop: 0.5\n").unwrap();
        assert_eq!(settings.daemon().config.monitor.reset_drop, 0.5);
        assert_eq!(settings.user_problem(), None);
        // Broken again: the last good one stays, and the problem is said.
        std::fs::write(&file, "monitor: [\n").unwrap();
        assert_eq!(settings.daemon().config.monitor.reset_drop, 0.5);
        assert!(settings.user_problem().is_some());
    }

    /// A user file that is a link (a dotfiles repository): an edit of the
    /// file it names is seen.
    #[test]
    fn a_linked_user_file_is_followed_for_its_changes() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles.yaml");
        std::fs::write(&real, "monitor:\n  reset_drop: 0.4\n").unwrap();
        let file = dir.path().join("config.yaml");
        std::os::unix::fs::symlink(&real, &file).unwrap();
        let layers = Layers {
            user_file: Some(file),
            ..Layers::default()
        };
        let (effective, _) = crate::load_daemon_config(&layers);
        let settings = Settings::new(layers, effective, None);
        assert_eq!(settings.daemon().config.monitor.reset_drop, 0.4);
        std::fs::write(&real, "monitor:\n  reset_drop: 0.45\n").unwrap();
        assert_eq!(settings.daemon().config.monitor.reset_drop, 0.45);
        let env = BTreeMap::new();
        assert_eq!(
            settings.for_request(None, &env).0.config.monitor.reset_drop,
            0.45
        );
    }

    #[test]
    fn a_hooks_environment_sets_no_sync_key() {
        let settings = Settings::new(Layers::default(), Effective::defaults(), None);
        let env: BTreeMap<String, String> = [
            ("HOOKD_SYNC__MACHINE_NAME", "elsewhere"),
            ("HOOKD_SYNC__REMOTE", "origin"),
            ("HOOKD_MONITOR__RESET_DROP", "0.5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let (c, problem) = settings.for_request(None, &env);
        assert!(problem.is_none());
        assert_eq!(c.config.sync, protocol::config::SyncConfig::default());
        assert_eq!(c.config.monitor.reset_drop, 0.5, "other keys still apply");
    }

    #[test]
    fn project_files_apply_and_changes_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::new(Layers::default(), Effective::defaults(), None);
        let env = BTreeMap::new();
        let (c, problem) = settings.for_request(Some(dir.path()), &env);
        assert!(problem.is_none());
        assert_eq!(c.config.monitor.reset_drop, 0.30);
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            "monitor:\n  reset_drop: 0.5\n",
        )
        .unwrap();
        let (c, _) = settings.for_request(Some(dir.path()), &env);
        assert_eq!(c.config.monitor.reset_drop, 0.5);
        let env = BTreeMap::from([("HOOKD_MONITOR__RESET_DROP".to_owned(), "0.25".to_owned())]);
        assert_eq!(
            settings
                .for_request(Some(dir.path()), &env)
                .0
                .config
                .monitor
                .reset_drop,
            0.25
        );
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            "monitor:\n  reset_dorp: 0.5\n",
        )
        .unwrap();
        let (c, problem) = settings.for_request(Some(dir.path()), &BTreeMap::new());
        assert!(problem.unwrap().contains("reset_dorp"));
        assert_eq!(
            c.config.monitor.reset_drop, 0.30,
            "the daemon's configuration stands in"
        );
    }
}
