//! `manifest.json`: the list of shard files that make up a database. Replacing it
//! by rename is the one atomic step that switches readers to a new database.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StoreError;

pub const MANIFEST_FILE: &str = "manifest.json";

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ShardEntry {
    pub file: String,
    pub cells: u64,
    pub wifi: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    /// Increases with every import; shard names carry it so a new database never
    /// overwrites a file an open reader still maps.
    pub generation: u64,
    pub created: u64,
    pub shards: Vec<ShardEntry>,
    /// True when the stations come from the simulator rather than real observations.
    #[serde(default)]
    pub simulated: bool,
    /// Human-readable sources merged into this database (file names, exports).
    #[serde(default)]
    pub sources: Vec<String>,
    /// The file of per-network statistics ([`super::netstats`]), itself versioned; None in
    /// databases written before it existed, whose networks answer with the solver's priors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_stats: Option<String>,
    /// The radius model fitted on the user's ground truth (`crate::calibration`), a file in
    /// the directory; None: the solver's radii as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius_model: Option<String>,
}

impl ShardEntry {
    /// The shard's file in `dir`; a name that would lead out of it is corrupt.
    pub fn path_in(&self, dir: &Path) -> Result<PathBuf, StoreError> {
        if self.file.contains('/') || self.file.contains('\\') || self.file.starts_with('.') {
            return Err(StoreError::Corrupt(format!(
                "manifest names an odd shard file {:?}",
                self.file
            )));
        }
        Ok(dir.join(&self.file))
    }
}

impl Manifest {
    /// The manifest of the database in `dir`, which must have one.
    pub fn read_existing(dir: &Path) -> Result<Manifest, StoreError> {
        Manifest::read(dir)?.ok_or_else(|| {
            StoreError::NotFound(format!(
                "no station database in {} (manifest.json missing; create one with `whereabouts import --db {} FILE...`)",
                dir.display(),
                dir.display()
            ))
        })
    }

    pub fn read(dir: &Path) -> Result<Option<Manifest>, StoreError> {
        let path = dir.join(MANIFEST_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))
    }

    /// Writes aside, syncs, then renames over the old manifest.
    pub fn write_atomic(&self, dir: &Path) -> Result<(), StoreError> {
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).expect("manifest serialises");
        let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.sync_all())
            .map_err(|e| StoreError::io(&tmp, e))?;
        let path = dir.join(MANIFEST_FILE);
        fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
        sync_dir(dir)
    }
}

pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}
