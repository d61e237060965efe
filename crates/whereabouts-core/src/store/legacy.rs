//! Reading the shards of store formats 5 to 7 so that [`crate::import::upgrade`] can write
//! their stations again in the current format. Formats 5 and 6 hold 24-byte records laid
//! out as the in-memory [`Station`] is, format 7 the 23-byte [`StationRecord`]; all three
//! key a cell by `lac << 36 | cid`, where format 8 ranks the id ([`super::record::cid_rank`]).
//! Only what the stations need is read (networks, cells, WiFi); the derived tables are built
//! anew. Formats before 5 packed a station's metadata otherwise and are not read.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use memmap2::Mmap;

use super::record::{cell_key, key_lac, Network, Station, StationRecord, CID_MASK};
use super::table::{records, RootTable};
use super::StoreError;
use crate::radio::Radio;

/// The formats this module reads.
pub const FORMATS: Range<u32> = 5..8;

/// The first format of 23-byte records.
const PACKED_FROM: u32 = 7;

/// FlatBuffers field ids of the vectors read, the same in formats 5 to 7.
const NETWORKS: usize = 2;
const CELLS: usize = 3;
const WIFI: usize = 6;

/// One shard of format 5, 6 or 7, mapped.
pub struct LegacyShard {
    map: Mmap,
    format: u32,
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
        let record = if version >= PACKED_FROM {
            std::mem::size_of::<StationRecord>()
        } else {
            std::mem::size_of::<Station>()
        };
        let (networks, cells, wifi) = (
            vector(NETWORKS, std::mem::size_of::<Network>(), "networks")?,
            vector(CELLS, record, "cells")?,
            vector(WIFI, record, "wifi")?,
        );
        let shard = LegacyShard {
            format: version,
            networks,
            cells,
            wifi,
            map,
        };
        let cells = shard.records(&shard.cells).len();
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

    fn records(&self, r: &Range<usize>) -> Records<'_> {
        if self.format >= PACKED_FROM {
            Records::Packed(self.slice(r))
        } else {
            Records::Wide(self.slice(r))
        }
    }

    /// How many cells and access points the shard holds.
    pub fn stations(&self) -> usize {
        self.records(&self.cells).len() + self.records(&self.wifi).len()
    }

    /// The radio of network `n` (`open` refused networks without one) and its cells, keyed
    /// as the current format keys them ([`cell_key`]), in stored order: sorted by LAC, and
    /// within one by id, not by key.
    pub fn cells(&self, n: &Network) -> (Radio, impl Iterator<Item = Station> + '_) {
        let radio = n.radio().unwrap_or(Radio::Gsm);
        let records = self.records(&self.cells);
        let cells = (n.first as usize..(n.first + n.count) as usize).map(move |i| {
            let mut s = records.get(i);
            s.key = cell_key(radio, key_lac(s.key), s.key & CID_MASK);
            s
        });
        (radio, cells)
    }

    /// Every access point, sorted by BSSID.
    pub fn wifi(&self) -> impl Iterator<Item = Station> + '_ {
        let records = self.records(&self.wifi);
        (0..records.len()).map(move |i| records.get(i))
    }
}

/// A vector of either record layout.
#[derive(Clone, Copy)]
enum Records<'a> {
    Wide(&'a [Station]),
    Packed(&'a [StationRecord]),
}

impl Records<'_> {
    fn len(&self) -> usize {
        match self {
            Records::Wide(r) => r.len(),
            Records::Packed(r) => r.len(),
        }
    }

    fn get(&self, i: usize) -> Station {
        match self {
            Records::Wide(r) => r[i],
            Records::Packed(r) => r[i].station(),
        }
    }
}
