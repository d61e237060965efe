//! Installing a station database generation fetched from elsewhere (a publication of
//! the shared store), and the pid-file directory locks around such work.

use std::path::Path;

use napi::{Error, Result};
use napi_derive::napi;
use whereabouts_core::store::install::{install_staged, lock_dir, unlock_dir};
use whereabouts_core::store::Manifest;

/// Switches `db` to the database of `manifest` (the text of its manifest.json), whose shards
/// wait in `staged` (see `store::install::install_staged`).
#[napi]
pub fn install_generation(db: String, staged: String, manifest: String) -> Result<()> {
    crate::guarded("installGeneration", || {
        let m: Manifest = serde_json::from_str(&manifest)
            .map_err(|e| Error::from_reason(format!("manifest: {e}")))?;
        install_staged(Path::new(&db), Path::new(&staged), &m).map_err(crate::err)
    })
}

/// Takes the lock file `lock` for this process (the protocol of `.import.lock`); fails while
/// another live process holds it. Released by `releaseDirLock`.
#[napi]
pub fn take_dir_lock(lock: String) -> Result<()> {
    crate::guarded("takeDirLock", || {
        std::mem::forget(lock_dir(Path::new(&lock)).map_err(crate::err)?);
        Ok(())
    })
}

/// Releases a lock this process took with `takeDirLock`.
#[napi]
pub fn release_dir_lock(lock: String) {
    unlock_dir(Path::new(&lock));
}
