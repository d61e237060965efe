//! The byte layout of a station shard: a FlatBuffer of `schema/stations.fbs` that the
//! writer emits front to back (so it can stream) and the reader checks before use.
//!
//! ```text
//! 0   u32 root offset (= TABLE_POS)      4  "WHRB"
//! 8   vtable: u16 vtable size, u16 table size, 11 x u16 field offsets (field 5, the
//!     short-CID index of formats up to 6, absent), 6 bytes of padding
//! 40  table: i32 soffset to vtable, u32 format_version, u64 created,
//!            8 x u32 offsets to the vectors that follow, in the order written
//! 88  vectors, each a u32 length followed by 8-aligned struct data
//! ```

use std::mem::size_of;

use super::record::{Area, Mast, Network, StationRecord};

pub const FILE_IDENTIFIER: &[u8; 4] = b"WHRB";
/// 4: an area's radius is the spread of its cells' positions, no longer their coverage.
/// 5: a station's record says how its position was estimated (`record::Estimated`).
/// 6: masts pooled across radios (`record::Mast`), found through `mast_blocks`.
/// 7: 23-byte station records (`record::StationRecord`); no short-CID index (a short id is
/// found by a scan of its LAC's cells).
/// 8: a cell's key ranks its id (`record::cid_rank`), so that the cells of a short id lie
/// together and are found by a binary search.
pub const FORMAT_VERSION: u32 = 8;

pub const VTABLE_POS: usize = 8;
pub const FIELD_COUNT: usize = 11;
pub const VTABLE_SIZE: usize = 4 + 2 * FIELD_COUNT;
pub const TABLE_POS: usize = 40;
pub const TABLE_SIZE: usize = 48;
pub const HEADER_END: usize = TABLE_POS + TABLE_SIZE;

/// Field offsets inside the table, in schema order (FlatBuffers field ids 0..10).
pub const F_VERSION: usize = 4;
pub const F_CREATED: usize = 8;
pub const F_NETWORKS: usize = 16;
pub const F_CELLS: usize = 20;
pub const F_AREAS: usize = 24;
pub const F_WIFI: usize = 28;
pub const F_CELL_FENCES: usize = 32;
pub const F_WIFI_FENCES: usize = 36;
pub const F_MASTS: usize = 40;
pub const F_MAST_BLOCKS: usize = 44;
pub const FIELD_OFFSETS: [usize; FIELD_COUNT] = [
    F_VERSION,
    F_CREATED,
    F_NETWORKS,
    F_CELLS,
    F_AREAS,
    // Field 5, `short_cids` up to format 6: deprecated, so absent (offset 0).
    0,
    F_WIFI,
    F_CELL_FENCES,
    F_WIFI_FENCES,
    F_MASTS,
    F_MAST_BLOCKS,
];

/// Every `FENCE_STRIDE`-th station key is copied into a fence vector. The fences of a
/// shard are small enough to stay in cache, so a lookup's binary search misses the
/// cache only inside one block of this many stations instead of at every step.
pub const FENCE_STRIDE: usize = 64;

/// FlatBuffers offsets are 32-bit and signed in places: a shard must stay below 2 GiB.
pub const MAX_SHARD_BYTES: u64 = (1 << 31) - 1;

/// The vector fields, in the order the writer emits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorField {
    Cells,
    Wifi,
    Areas,
    Networks,
    CellFences,
    WifiFences,
    /// Written at commit, once every shard's sites are known ([`crate::sites::pool`]).
    Masts,
    /// For each block of `FENCE_STRIDE` cells, the first of the masts at or after it (one
    /// more entry closes the last): a site's mast is searched among the few of its block, in
    /// lines of their own, not by a binary search of all, which missed the cache at every
    /// step (a third of a single cell's time).
    MastBlocks,
}

impl VectorField {
    pub const ALL: [VectorField; 8] = [
        VectorField::Cells,
        VectorField::Wifi,
        VectorField::Areas,
        VectorField::Networks,
        VectorField::CellFences,
        VectorField::WifiFences,
        VectorField::Masts,
        VectorField::MastBlocks,
    ];

    pub fn table_offset(self) -> usize {
        match self {
            VectorField::Networks => F_NETWORKS,
            VectorField::Cells => F_CELLS,
            VectorField::Areas => F_AREAS,
            VectorField::Wifi => F_WIFI,
            VectorField::CellFences => F_CELL_FENCES,
            VectorField::WifiFences => F_WIFI_FENCES,
            VectorField::Masts => F_MASTS,
            VectorField::MastBlocks => F_MAST_BLOCKS,
        }
    }

    pub fn element_size(self) -> usize {
        match self {
            VectorField::Networks => size_of::<Network>(),
            VectorField::Cells | VectorField::Wifi => size_of::<StationRecord>(),
            VectorField::Areas => size_of::<Area>(),
            VectorField::CellFences | VectorField::WifiFences => size_of::<u64>(),
            VectorField::Masts => size_of::<Mast>(),
            VectorField::MastBlocks => size_of::<u32>(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            VectorField::Networks => "networks",
            VectorField::Cells => "cells",
            VectorField::Areas => "areas",
            VectorField::Wifi => "wifi",
            VectorField::CellFences => "cell_fences",
            VectorField::WifiFences => "wifi_fences",
            VectorField::Masts => "masts",
            VectorField::MastBlocks => "mast_blocks",
        }
    }
}

/// The fixed 88-byte head of a shard, with vector offsets filled in once known.
pub fn header_bytes(created: u64, vector_pos: &[(VectorField, usize)]) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_END];
    b[0..4].copy_from_slice(&(TABLE_POS as u32).to_le_bytes());
    b[4..8].copy_from_slice(FILE_IDENTIFIER);
    let vt = VTABLE_POS;
    b[vt..vt + 2].copy_from_slice(&(VTABLE_SIZE as u16).to_le_bytes());
    b[vt + 2..vt + 4].copy_from_slice(&(TABLE_SIZE as u16).to_le_bytes());
    for (i, off) in FIELD_OFFSETS.iter().enumerate() {
        let p = vt + 4 + 2 * i;
        b[p..p + 2].copy_from_slice(&(*off as u16).to_le_bytes());
    }
    let t = TABLE_POS;
    b[t..t + 4].copy_from_slice(&((TABLE_POS - VTABLE_POS) as i32).to_le_bytes());
    b[t + F_VERSION..t + F_VERSION + 4].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    b[t + F_CREATED..t + F_CREATED + 8].copy_from_slice(&created.to_le_bytes());
    for &(field, pos) in vector_pos {
        let f = t + field.table_offset();
        let rel = (pos - f) as u32;
        b[f..f + 4].copy_from_slice(&rel.to_le_bytes());
    }
    b
}

/// Padding before a vector's length prefix so that its data starts 8-aligned.
pub fn padding_before_vector(pos: usize) -> usize {
    (8 - (pos + 4) % 8) % 8
}
