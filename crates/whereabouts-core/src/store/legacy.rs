//! Reading the shards of store formats 5 and 6, whose stations are 24-byte records laid out
//! as the in-memory [`Station`] is, so that [`crate::import::upgrade`] can write them again
//! in the current format. Only what the stations need is read (networks, cells, WiFi); the
//! derived tables are built anew. Formats before 5 packed a station's metadata otherwise
//! and are not read.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use memmap2::Mmap;

use super::record::{Network, Station};
use super::table::{records, RootTable};
use super::StoreError;

/// The formats this module reads.
pub const FORMATS: Range<u32> = 5..7;

/// FlatBuffers field ids of the vectors read, the same in formats 5 and 6.
const NETWORKS: usize = 2;
const CELLS: usize = 3;
const WIFI: usize = 6;

/// One shard of format 5 or 6, mapped.
pub struct LegacyShard {
    map: Mmap,
    networks: Range<usize>,
    cells: Range<usize>,
    wifi: Range<usize>,
}

impl LegacyShard {
    /// Maps a shard and checks what reading its stations trusts: the identifier, a format
    /// in [`FORMATS`], each vector inside the file and 8-aligned, and every network's cells
    /// inside the cells vector.
    pub fn open(path: &Path) -> Result<LegacyShard, StoreError> {
        let corrupt = |why: &str| StoreError::Corrupt(format!("{}: {why}", path.display()));
        let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
        // SAFETY: published shards are never modified in place (module store::shard).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io(path, e))?;
        let root = RootTable::read(&map).map_err(|why| corrupt(&why))?;
        let version = root.u32_field(0).unwrap_or(0);
        if !FORMATS.contains(&version) {
            return Err(StoreError::Version(format!(
                "{}: format version {version} cannot be upgraded (formats {} and {} can): \
                 import the sources again (`whereabouts import --replace`)",
                path.display(),
                FORMATS.start,
                FORMATS.end - 1
            )));
        }
        let vector = |id: usize, size: usize, name: &str| {
            root.vector(id, size, name)
                .map(Option::unwrap_or_default)
                .map_err(|why| corrupt(&why))
        };
        let (networks, cells, wifi) = (
            vector(NETWORKS, std::mem::size_of::<Network>(), "networks")?,
            vector(CELLS, std::mem::size_of::<Station>(), "cells")?,
            vector(WIFI, std::mem::size_of::<Station>(), "wifi")?,
        );
        let shard = LegacyShard {
            networks,
            cells,
            wifi,
            map,
        };
        let cells = shard.cells().len();
        if shard
            .networks()
            .iter()
            .any(|n| n.first as usize + n.count as usize > cells || n.radio().is_none())
        {
            return Err(corrupt("network entry points outside the cells"));
        }
        Ok(shard)
    }

    fn slice<T: super::writer::Record>(&self, r: &Range<usize>) -> &[T] {
        // SAFETY: open() took every range from RootTable::vector, which checks alignment.
        unsafe { records(&self.map[r.clone()]) }
    }

    /// The shard's networks, each naming its cells.
    pub fn networks(&self) -> &[Network] {
        self.slice(&self.networks)
    }

    /// Every cell, by network, sorted by key within one.
    pub fn cells(&self) -> &[Station] {
        self.slice(&self.cells)
    }

    /// Every access point, sorted by BSSID.
    pub fn wifi(&self) -> &[Station] {
        self.slice(&self.wifi)
    }
}
