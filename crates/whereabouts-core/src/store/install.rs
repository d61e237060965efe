//! Installing a database built elsewhere (a generation another server published):
//! its shards, fetched into a staging directory, are renamed into the database
//! directory and the manifest replaced by rename, the switch an import makes
//! ([`super::DbBuilder::commit`]). Readers pick it up on their next reload; lookups
//! in flight finish on the old mapping.

use std::fs;
use std::path::{Path, PathBuf};

use super::builder::take_lock;
use super::layout::FORMAT_VERSION;
use super::manifest::sync_dir;
use super::{Manifest, StoreError};

/// A directory lock taken with [`lock_dir`]; removed when dropped.
pub struct DirLock(PathBuf);

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Takes the lock file `lock` (holding our pid; one whose process is gone is taken
/// over), the protocol of the directory's `.import.lock`. Fails with
/// [`StoreError::Busy`] while a live process holds it.
pub fn lock_dir(lock: &Path) -> Result<DirLock, StoreError> {
    take_lock(lock)?;
    Ok(DirLock(lock.to_path_buf()))
}

/// Releases a lock taken with [`lock_dir`] and kept (across an FFI boundary, say)
/// instead of dropped: removes `lock` if it holds this process's pid.
pub fn unlock_dir(lock: &Path) {
    let ours = fs::read_to_string(lock)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_some_and(|p| p == std::process::id());
    if ours {
        let _ = fs::remove_file(lock);
    }
}

/// Switches `dir` to the database `manifest` describes, whose shards wait in
/// `staged`: under `dir/.import.lock` (never alongside an import, a learn run or a
/// compaction) each shard is checked against its listed size and renamed in, the
/// manifest is replaced atomically, and the shards only the old manifest listed are
/// removed. A manifest of a newer store format than this build reads is refused, so
/// a server is never switched to a database it cannot open.
pub fn install_staged(dir: &Path, staged: &Path, manifest: &Manifest) -> Result<(), StoreError> {
    if manifest.format > FORMAT_VERSION {
        return Err(StoreError::Invalid(format!(
            "the database to install has store format {}, newer than this build reads ({FORMAT_VERSION}): upgrade whereabouts",
            manifest.format
        )));
    }
    for e in &manifest.shards {
        let from = e.path_in(staged)?;
        let bytes = fs::metadata(&from)
            .map_err(|err| StoreError::io(&from, err))?
            .len();
        if bytes != e.bytes {
            return Err(StoreError::Corrupt(format!(
                "{}: {bytes} bytes, the manifest says {}",
                from.display(),
                e.bytes
            )));
        }
    }
    fs::create_dir_all(dir).map_err(|err| StoreError::io(dir, err))?;
    let _lock = lock_dir(&dir.join(".import.lock"))?;
    let old = Manifest::read(dir)?;
    for e in &manifest.shards {
        let to = e.path_in(dir)?;
        fs::rename(e.path_in(staged)?, &to).map_err(|err| StoreError::io(&to, err))?;
    }
    // The network statistics belong to the generation and travel with it; the radius model
    // was fitted on this directory's operator's own truth and stays (or stays absent).
    let mut manifest = manifest.clone();
    if let Some(name) = &manifest.network_stats {
        let from = plain_file(staged, name)?;
        if from.exists() {
            let to = plain_file(dir, name)?;
            fs::rename(&from, &to).map_err(|err| StoreError::io(&to, err))?;
        } else if !plain_file(dir, name)?.exists() {
            // Published without its statistics: answer with the priors rather than fail to open.
            manifest.network_stats = None;
        }
    }
    manifest.radius_model = old.as_ref().and_then(|m| m.radius_model.clone());
    sync_dir(dir)?;
    manifest.write_atomic(dir)?;
    // Open readers keep their mappings of the old files; unlinking is safe.
    for e in old.iter().flat_map(|m| &m.shards) {
        if !manifest.shards.iter().any(|n| n.file == e.file) {
            let _ = fs::remove_file(dir.join(&e.file));
        }
    }
    if let Some(f) = old.as_ref().and_then(|m| m.network_stats.as_ref()) {
        if manifest.network_stats.as_ref() != Some(f) && !f.contains(['/', '\\']) {
            let _ = fs::remove_file(dir.join(f));
        }
    }
    Ok(())
}

/// `dir/name` for a file name the manifest gives, refusing one that would leave `dir`.
fn plain_file(dir: &Path, name: &str) -> Result<std::path::PathBuf, StoreError> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        return Err(StoreError::Corrupt(format!(
            "a manifest names an odd file {name:?}"
        )));
    }
    Ok(dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::manifest::ShardEntry;

    fn manifest(generation: u64, files: &[(&str, u64)]) -> Manifest {
        Manifest {
            format: FORMAT_VERSION,
            generation,
            shards: files
                .iter()
                .map(|(f, b)| ShardEntry {
                    file: f.to_string(),
                    bytes: *b,
                    ..ShardEntry::default()
                })
                .collect(),
            ..Manifest::default()
        }
    }

    #[test]
    fn renames_the_shards_in_switches_the_manifest_and_drops_the_old_shards() {
        let dir = tempfile::tempdir().unwrap();
        let staged = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("stations-g000001-000.fb"), b"old").unwrap();
        manifest(1, &[("stations-g000001-000.fb", 3)])
            .write_atomic(dir.path())
            .unwrap();
        fs::write(staged.path().join("stations-g000002-000.fb"), b"newer").unwrap();
        let m = manifest(2, &[("stations-g000002-000.fb", 5)]);
        install_staged(dir.path(), staged.path(), &m).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(m));
        assert!(!dir.path().join("stations-g000001-000.fb").exists());
        assert_eq!(
            fs::read(dir.path().join("stations-g000002-000.fb")).unwrap(),
            b"newer"
        );
        assert!(!dir.path().join(".import.lock").exists());
    }

    #[test]
    fn brings_the_generation_statistics_and_keeps_the_directory_s_own_radius_model() {
        let dir = tempfile::tempdir().unwrap();
        let staged = tempfile::tempdir().unwrap();
        let mut old = manifest(1, &[]);
        old.network_stats = Some("network-stats-000001.json".into());
        old.radius_model = Some("radius-model-1.json".into());
        fs::write(dir.path().join("network-stats-000001.json"), b"{}").unwrap();
        old.write_atomic(dir.path()).unwrap();
        fs::write(staged.path().join("stations-g000002-000.fb"), b"newer").unwrap();
        fs::write(staged.path().join("network-stats-000002.json"), b"{}").unwrap();
        let mut m = manifest(2, &[("stations-g000002-000.fb", 5)]);
        m.network_stats = Some("network-stats-000002.json".into());
        m.radius_model = Some("radius-model-9.json".into());
        install_staged(dir.path(), staged.path(), &m).unwrap();
        let now = Manifest::read(dir.path()).unwrap().unwrap();
        assert_eq!(
            now.network_stats.as_deref(),
            Some("network-stats-000002.json")
        );
        assert_eq!(now.radius_model.as_deref(), Some("radius-model-1.json"));
        assert!(dir.path().join("network-stats-000002.json").exists());
        assert!(!dir.path().join("network-stats-000001.json").exists());

        // A publication without its statistics file answers with the priors.
        let staged = tempfile::tempdir().unwrap();
        fs::write(staged.path().join("stations-g000003-000.fb"), b"third").unwrap();
        let mut m = manifest(3, &[("stations-g000003-000.fb", 5)]);
        m.network_stats = Some("network-stats-000003.json".into());
        install_staged(dir.path(), staged.path(), &m).unwrap();
        assert_eq!(
            Manifest::read(dir.path()).unwrap().unwrap().network_stats,
            None
        );

        let mut odd = manifest(4, &[]);
        odd.network_stats = Some("../x.json".into());
        assert!(install_staged(dir.path(), staged.path(), &odd).is_err());
    }

    #[test]
    fn refuses_a_wrong_size_a_newer_format_and_a_busy_directory_leaving_the_old_database() {
        let dir = tempfile::tempdir().unwrap();
        let staged = tempfile::tempdir().unwrap();
        let old = manifest(1, &[]);
        old.write_atomic(dir.path()).unwrap();
        fs::write(staged.path().join("stations-g000002-000.fb"), b"newer").unwrap();
        let short = manifest(2, &[("stations-g000002-000.fb", 9)]);
        let e = install_staged(dir.path(), staged.path(), &short).unwrap_err();
        assert!(e.to_string().contains("the manifest says 9"), "{e}");
        let mut newer = manifest(2, &[("stations-g000002-000.fb", 5)]);
        newer.format = FORMAT_VERSION + 1;
        let e = install_staged(dir.path(), staged.path(), &newer).unwrap_err();
        assert!(e.to_string().contains("newer than this build"), "{e}");
        // pid 1 is alive and not us: the directory is busy.
        fs::write(dir.path().join(".import.lock"), "1\n").unwrap();
        let ok = manifest(2, &[("stations-g000002-000.fb", 5)]);
        let e = install_staged(dir.path(), staged.path(), &ok).unwrap_err();
        assert!(matches!(e, StoreError::Busy(_)), "{e}");
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(old));
    }
}
