//! The address file (`addresses.bin`) and the lookups over it: nearest address and nearest
//! named road within a radius.
//!
//! # File format (integers little-endian, the envelope of [`crate::datafile`])
//! ```text
//! offset size  field
//!      0    8  magic "WBADDRS1"
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 40
//!     16    4  u32 n_addresses
//!     20    4  u32 n_roads
//!     24    4  u32 n_points          road vertices
//!     28    4  u32 n_strings
//!     32    4  u32 blob_len          bytes of the string blob, a multiple of 4
//!     36    4  u32 reserved = 0
//!     40       addresses: n_addresses x 28 bytes, sorted by grid cell (0.001 degree):
//!                i32 lat, i32 lon    1e-7 degree
//!                u32 number, street, postcode, city, suburb   string indexes; 0xFFFFFFFF = none
//!              roads: n_roads x 12 bytes: u32 name, u32 first point, u32 point count (>= 2)
//!              points: n_points x 8 bytes: i32 lat, i32 lon (1e-7 degree)
//!              offsets: (n_strings + 1) x u32 into the blob (UTF-8)
//!              blob: blob_len bytes, zero-padded
//!      end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```
//! The file is read once into memory; the road segment grid is built at open (one entry per
//! 0.01-degree cell a segment's box touches), the street search index on the first search.

use std::path::Path;
use std::sync::OnceLock;

use smallvec::{smallvec, SmallVec};

use super::AddressError;
use crate::datafile::{check_checksum, check_head, u32_at, StringTable, NO_STRING};
use crate::geo::{LocalFrame, EARTH_RADIUS_M};
use crate::lazy_file::DataFile;

pub(super) const MAGIC: &[u8; 8] = b"WBADDRS1";
pub(super) const HEADER: usize = 40;
pub(super) const ADDRESS_BYTES: usize = 28;
pub(super) const ROAD_BYTES: usize = 12;
pub(super) const POINT_BYTES: usize = 8;
pub(super) const NONE: u32 = NO_STRING;

/// Address grid cell, degrees: about 110 m, so a 100 m search touches a few cells.
const CELL_DEG: f64 = 0.001;
const COLS: u64 = 360_000;
/// Address grid rows (the row of latitude 90 included).
const ROWS: usize = 180_001;
/// Road segment grid cell, degrees: about 1.1 km; a segment is listed in every cell its box touches.
const ROAD_CELL_DEG: f64 = 0.01;
const ROAD_COLS: u64 = 36_000;

/// An address record: coordinates in 1e-7 degree, text as string indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AddressRec {
    pub lat: i32,
    pub lon: i32,
    pub number: u32,
    pub street: u32,
    pub postcode: u32,
    pub city: u32,
    pub suburb: u32,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct RoadRec {
    pub name: u32,
    pub first: u32,
    pub count: u32,
}

/// The grid cell key of an address at 1e-7 degree coordinates; records are sorted by it.
pub(super) fn cell_key(lat: i32, lon: i32) -> u64 {
    let (row, col) = cell_of(lat as f64 * 1e-7, lon as f64 * 1e-7, CELL_DEG, COLS);
    row * COLS + col
}

fn cell_of(lat: f64, lon: f64, cell: f64, cols: u64) -> (u64, u64) {
    let row = ((lat + 90.0) / cell).floor().max(0.0) as u64;
    let col = (((lon + 180.0) / cell).floor().max(0.0) as u64).min(cols - 1);
    (row, col)
}

/// The rows and column ranges of cells within `radius_m` of a point (two column ranges
/// across the antimeridian).
fn cells_around(
    lat: f64,
    lon: f64,
    radius_m: f64,
    cell: f64,
    cols: u64,
) -> (std::ops::RangeInclusive<u64>, SmallVec<[(u64, u64); 2]>) {
    let m_per_deg = EARTH_RADIUS_M.to_radians();
    let dlat = radius_m / m_per_deg;
    let cos = (lat.abs() + dlat).min(90.0).to_radians().cos().max(1e-6);
    let dlon = radius_m / (m_per_deg * cos);
    let (r0, _) = cell_of((lat - dlat).max(-90.0), lon, cell, cols);
    let (r1, _) = cell_of((lat + dlat).min(90.0), lon, cell, cols);
    let spans = if dlon >= 180.0 {
        smallvec![(0, cols - 1)]
    } else {
        let (w, e) = (lon - dlon, lon + dlon);
        let col = |x: f64| cell_of(0.0, x, cell, cols).1;
        if w < -180.0 {
            smallvec![(0, col(e)), (col(w + 360.0), cols - 1)]
        } else if e > 180.0 {
            smallvec![(col(w), cols - 1), (0, col(e - 360.0))]
        } else {
            smallvec![(col(w), col(e))]
        }
    };
    (r0..=r1, spans)
}

/// An address as the lookups answer it.
#[derive(Clone, Debug, PartialEq)]
pub struct Address<'a> {
    pub lat: f64,
    pub lon: f64,
    pub house_number: &'a str,
    pub road: &'a str,
    pub postcode: Option<&'a str>,
    pub city: Option<&'a str>,
    pub suburb: Option<&'a str>,
    /// Great-circle distance from the query point, metres (0 for search results).
    pub distance_m: f64,
}

/// A named road as [`AddressIndex::nearest_road`] answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Road<'a> {
    pub name: &'a str,
    /// The nearest point of the road to the query point.
    pub lat: f64,
    pub lon: f64,
    pub distance_m: f64,
}

/// Counts of an open address file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressStats {
    pub addresses: u64,
    pub roads: u64,
    pub points: u64,
    pub bytes: u64,
}

/// An address file in memory with its indexes.
pub struct AddressIndex {
    pub(super) addresses: Vec<AddressRec>,
    /// The grid cell of each address: binary searches compare these, not coordinates.
    keys: Vec<u64>,
    /// `row_start[r]..row_start[r + 1]` are the addresses of grid row `r` (720 KB): a
    /// lookup then binary-searches a row's few thousand keys, not the whole file's, which
    /// cost most of its time in cache misses.
    row_start: Vec<u32>,
    pub(super) roads: Vec<RoadRec>,
    pub(super) points: Vec<(i32, i32)>,
    strings: StringTable,
    /// (road cell key, index of the segment's first point), sorted.
    segments: Vec<(u64, u32)>,
    pub(super) search: OnceLock<super::search::StreetIndex>,
    bytes: u64,
}

fn corrupt(m: impl Into<String>) -> AddressError {
    AddressError::Corrupt(m.into())
}

/// Counts and offsets of an address file's sections, from its header.
struct Sections {
    n_addr: usize,
    n_roads: usize,
    n_points: usize,
    n_strings: usize,
    blob_len: usize,
    roads_at: usize,
    points_at: usize,
    offsets_at: usize,
}

/// The sections of a file of `len` bytes from its header `head` (at least its first
/// [`HEADER`] bytes), checked against that length: what a foreign or truncated file fails.
fn sections(head: &[u8], len: usize) -> Result<Sections, AddressError> {
    check_head(head, len, MAGIC, HEADER, "address file").map_err(AddressError::Corrupt)?;
    let [n_addr, n_roads, n_points, n_strings, blob_len] =
        [16, 20, 24, 28, 32].map(|o| u32_at(head, o) as usize);
    // u32 counts times small record sizes: no overflow in a 64-bit usize
    let roads_at = HEADER + n_addr * ADDRESS_BYTES;
    let points_at = roads_at + n_roads * ROAD_BYTES;
    let offsets_at = points_at + n_points * POINT_BYTES;
    let blob_at = offsets_at + (n_strings + 1) * 4;
    if blob_at.checked_add(blob_len) != Some(len - 4) {
        return Err(corrupt("section sizes do not add up"));
    }
    Ok(Sections {
        n_addr,
        n_roads,
        n_points,
        n_strings,
        blob_len,
        roads_at,
        points_at,
        offsets_at,
    })
}

impl DataFile for AddressIndex {
    type Error = AddressError;
    const HEADER: usize = HEADER;

    fn io_error(path: &Path, e: std::io::Error) -> AddressError {
        AddressError::Io(format!("{}: {e}", path.display()))
    }

    fn check_header(head: &[u8], len: usize) -> Result<(), AddressError> {
        sections(head, len).map(drop)
    }

    fn from_file_bytes(bytes: Vec<u8>) -> Result<AddressIndex, AddressError> {
        AddressIndex::from_bytes(&bytes)
    }
}

impl AddressIndex {
    /// Reads and validates an address file.
    pub fn open(path: &Path) -> Result<AddressIndex, AddressError> {
        let bytes = std::fs::read(path).map_err(|e| AddressIndex::io_error(path, e))?;
        AddressIndex::from_bytes(&bytes)
    }

    /// Validates and indexes the bytes of an address file; any inconsistency is an error.
    pub fn from_bytes(b: &[u8]) -> Result<AddressIndex, AddressError> {
        let Sections {
            n_addr,
            n_roads,
            n_points,
            n_strings,
            blob_len,
            roads_at,
            points_at,
            offsets_at,
        } = sections(b, b.len())?;
        check_checksum(b).map_err(AddressError::Corrupt)?;
        let strings =
            StringTable::read(b, offsets_at, n_strings, blob_len).map_err(AddressError::Corrupt)?;
        let valid_lat = |v: i32| (-900_000_000..=900_000_000).contains(&v);
        let valid_lon = |v: i32| (-1_800_000_000..=1_800_000_000).contains(&v);
        let opt = |s: u32| s == NONE || (s as usize) < n_strings;
        let mut addresses = Vec::with_capacity(n_addr);
        let mut keys = Vec::with_capacity(n_addr);
        let mut last_key = 0u64;
        for i in 0..n_addr {
            let o = HEADER + i * ADDRESS_BYTES;
            let r = AddressRec {
                lat: u32_at(b, o) as i32,
                lon: u32_at(b, o + 4) as i32,
                number: u32_at(b, o + 8),
                street: u32_at(b, o + 12),
                postcode: u32_at(b, o + 16),
                city: u32_at(b, o + 20),
                suburb: u32_at(b, o + 24),
            };
            if !valid_lat(r.lat)
                || !valid_lon(r.lon)
                || (r.number as usize) >= n_strings
                || (r.street as usize) >= n_strings
                || !opt(r.postcode)
                || !opt(r.city)
                || !opt(r.suburb)
            {
                return Err(corrupt(format!("address {i} is invalid")));
            }
            let key = cell_key(r.lat, r.lon);
            if key < last_key {
                return Err(corrupt("addresses are not in grid order"));
            }
            last_key = key;
            keys.push(key);
            addresses.push(r);
        }
        let mut points = Vec::with_capacity(n_points);
        for i in 0..n_points {
            let o = points_at + i * POINT_BYTES;
            let (lat, lon) = (u32_at(b, o) as i32, u32_at(b, o + 4) as i32);
            if !valid_lat(lat) || !valid_lon(lon) {
                return Err(corrupt(format!("road point {i} is invalid")));
            }
            points.push((lat, lon));
        }
        let mut roads = Vec::with_capacity(n_roads);
        let mut next = 0u32;
        for i in 0..n_roads {
            let o = roads_at + i * ROAD_BYTES;
            let r = RoadRec {
                name: u32_at(b, o),
                first: u32_at(b, o + 4),
                count: u32_at(b, o + 8),
            };
            // Roads tile the points in order: the segment grid finds a point's road by it.
            if (r.name as usize) >= n_strings
                || r.first != next
                || r.count < 2
                || (r.first as u64 + r.count as u64) > n_points as u64
            {
                return Err(corrupt(format!("road {i} is invalid")));
            }
            next = r.first + r.count;
            roads.push(r);
        }
        if next as usize != n_points {
            return Err(corrupt("road points do not add up"));
        }
        let segments = segment_grid(&roads, &points);
        let mut row_start = vec![0u32; ROWS + 1];
        for &k in &keys {
            row_start[(k / COLS) as usize + 1] += 1;
        }
        for r in 0..ROWS {
            row_start[r + 1] += row_start[r];
        }
        Ok(AddressIndex {
            addresses,
            keys,
            row_start,
            roads,
            points,
            strings,
            segments,
            search: OnceLock::new(),
            bytes: b.len() as u64,
        })
    }

    pub fn stats(&self) -> AddressStats {
        AddressStats {
            addresses: self.addresses.len() as u64,
            roads: self.roads.len() as u64,
            points: self.points.len() as u64,
            bytes: self.bytes,
        }
    }

    pub(super) fn string(&self, i: u32) -> Option<&str> {
        self.strings.get(i)
    }

    pub(super) fn strings_len(&self) -> usize {
        self.strings.len()
    }

    pub(super) fn address(&self, i: usize, distance_m: f64) -> Address<'_> {
        let r = &self.addresses[i];
        Address {
            lat: r.lat as f64 * 1e-7,
            lon: r.lon as f64 * 1e-7,
            house_number: self.string(r.number).unwrap_or(""),
            road: self.string(r.street).unwrap_or(""),
            postcode: self.string(r.postcode).filter(|s| !s.is_empty()),
            city: self.string(r.city).filter(|s| !s.is_empty()),
            suburb: self.string(r.suburb).filter(|s| !s.is_empty()),
            distance_m,
        }
    }

    /// The nearest address within `radius_m` metres of a point; `None` for an invalid
    /// coordinate or when there is none that near.
    pub fn nearest_address(&self, lat: f64, lon: f64, radius_m: f64) -> Option<Address<'_>> {
        if !valid_point(lat, lon) || radius_m.is_nan() || radius_m < 0.0 {
            return None;
        }
        let frame = LocalFrame::new(lat, lon);
        let mut best: Option<(f64, usize)> = None;
        let (rows, spans) = cells_around(lat, lon, radius_m, CELL_DEG, COLS);
        for row in rows {
            for &(c0, c1) in &spans {
                let (k0, k1) = (row * COLS + c0, row * COLS + c1);
                let (from, to) = (
                    self.row_start[row as usize] as usize,
                    self.row_start[row as usize + 1] as usize,
                );
                let keys = &self.keys[from..to];
                let start = from + keys.partition_point(|&k| k < k0);
                let end = from + keys.partition_point(|&k| k <= k1);
                for (i, r) in self.addresses[start..end].iter().enumerate() {
                    let (x, y) = frame.to_xy(r.lat as f64 * 1e-7, r.lon as f64 * 1e-7);
                    let d = x.hypot(y);
                    if d <= radius_m && best.is_none_or(|(bd, _)| d < bd) {
                        best = Some((d, start + i));
                    }
                }
            }
        }
        best.map(|(d, i)| self.address(i, d))
    }

    /// The nearest named road within `radius_m` metres of a point (distance to its
    /// segments, not its vertices); `None` for an invalid coordinate or none that near.
    pub fn nearest_road(&self, lat: f64, lon: f64, radius_m: f64) -> Option<Road<'_>> {
        if !valid_point(lat, lon) || radius_m.is_nan() || radius_m < 0.0 {
            return None;
        }
        let frame = LocalFrame::new(lat, lon);
        let xy = |p: (i32, i32)| frame.to_xy(p.0 as f64 * 1e-7, p.1 as f64 * 1e-7);
        let mut best: Option<(f64, u32, (f64, f64))> = None;
        let (rows, spans) = cells_around(lat, lon, radius_m, ROAD_CELL_DEG, ROAD_COLS);
        for row in rows {
            for &(c0, c1) in &spans {
                let (k0, k1) = (row * ROAD_COLS + c0, row * ROAD_COLS + c1);
                let start = self.segments.partition_point(|s| s.0 < k0);
                for &(key, seg) in &self.segments[start..] {
                    if key > k1 {
                        break;
                    }
                    let (a, b) = (
                        xy(self.points[seg as usize]),
                        xy(self.points[seg as usize + 1]),
                    );
                    let (d, p) = point_segment(a, b);
                    if d <= radius_m && best.is_none_or(|(bd, _, _)| d < bd) {
                        best = Some((d, seg, p));
                    }
                }
            }
        }
        let (d, seg, p) = best?;
        let road = &self.roads[self.roads.partition_point(|r| r.first + r.count <= seg)];
        let (plat, plon) = frame.to_latlon(p.0, p.1);
        Some(Road {
            name: self.string(road.name).unwrap_or(""),
            lat: plat,
            lon: plon,
            distance_m: d,
        })
    }
}

fn valid_point(lat: f64, lon: f64) -> bool {
    (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)
}

/// Distance from the origin to segment `a`-`b` (local metres) and the nearest point.
fn point_segment(a: (f64, f64), b: (f64, f64)) -> (f64, (f64, f64)) {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (-(a.0 * dx + a.1 * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let p = (a.0 + t * dx, a.1 + t * dy);
    (p.0.hypot(p.1), p)
}

/// Every (cell, segment) pair, sorted: a segment is listed in each road cell its box touches.
fn segment_grid(roads: &[RoadRec], points: &[(i32, i32)]) -> Vec<(u64, u32)> {
    let mut out = Vec::with_capacity(points.len());
    for r in roads {
        for s in r.first..r.first + r.count - 1 {
            let (a, b) = (points[s as usize], points[s as usize + 1]);
            let deg = |v: i32| v as f64 * 1e-7;
            let (r0, c0) = cell_of(
                deg(a.0.min(b.0)),
                deg(a.1.min(b.1)),
                ROAD_CELL_DEG,
                ROAD_COLS,
            );
            let (r1, c1) = cell_of(
                deg(a.0.max(b.0)),
                deg(a.1.max(b.1)),
                ROAD_CELL_DEG,
                ROAD_COLS,
            );
            // A segment across the antimeridian would span the world: list its ends only.
            if c1 - c0 > ROAD_COLS / 2 {
                out.push((r0 * ROAD_COLS + c0, s));
                out.push((r1 * ROAD_COLS + c1, s));
                continue;
            }
            for row in r0..=r1 {
                for col in c0..=c1 {
                    out.push((row * ROAD_COLS + col, s));
                }
            }
        }
    }
    out.sort_unstable();
    out
}
