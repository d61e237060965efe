//! The station database: immutable FlatBuffers shards, memory-mapped, behind a manifest.
//!
//! - [`record`]: the fixed-size records (23 bytes a station).
//! - [`layout`] / [`writer`] / [`shard`]: the shard file, written streaming and read in place.
//! - [`builder`]: turns sorted station streams into shards, derived areas and masts pooled
//!   across radios.
//! - [`database`]: opens a directory and answers lookups across its shards.
//! - [`netstats`]: each network's own scale (ranges, samples, site spacing, sector offsets),
//!   written beside the shards and read at open.
//! - [`changes`]: stations changed in a time window, streamed from a cursor (sync).

pub mod builder;
pub mod changes;
pub mod database;
pub mod install;
pub mod layout;
pub mod legacy;
pub mod manifest;
mod masts;
pub mod netstats;
pub mod record;
pub mod shard;
mod table;
pub mod writer;

use std::fmt;
use std::path::Path;

pub use builder::{BuildOptions, DbBuilder};
pub use database::{CellBlock, CellMatch, Database, WifiBlock};
pub use manifest::Manifest;

#[derive(Debug)]
pub enum StoreError {
    /// No database at the path (no manifest).
    NotFound(String),
    Io(String),
    Corrupt(String),
    /// A sound file of another format version (written by an older or newer build):
    /// not damage, so not reported as corruption.
    Version(String),
    /// The caller broke an ordering or other contract of the builder.
    Invalid(String),
    /// Another live process holds the directory's `.import.lock` (an import, a
    /// learn run, a compaction): try again later.
    Busy(String),
}

impl StoreError {
    pub fn io(path: &Path, e: std::io::Error) -> StoreError {
        StoreError::Io(format!("{}: {e}", path.display()))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound(m) => write!(f, "{m}"),
            StoreError::Io(m) => write!(f, "I/O error: {m}"),
            StoreError::Corrupt(m) => write!(f, "corrupt station database: {m}"),
            StoreError::Invalid(m) | StoreError::Busy(m) | StoreError::Version(m) => {
                write!(f, "{m}")
            }
        }
    }
}

impl std::error::Error for StoreError {}
