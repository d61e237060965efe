//! Places for reverse geocoding: GeoNames populated places (with population, admin1 and
//! admin2 names) prepared by `scripts/build-places.mjs` into `data/places.bin`.
//!
//! [`PlaceIndex::reverse_with`] answers the country a point is in, from the country polygons
//! ([`crate::countries`]), and the place it belongs to in that country.
//! [`PlaceIndex::reverse`] is the answer without polygons: the nearest place decides the
//! country, so a point a few km across a border can take the neighbour's country. There are
//! no roads, suburbs or house numbers because the data has none.
//!
//! # Choosing the place
//! Only places within [`MAX_DISTANCE_M`] (50 km) of the point count: beyond that the point
//! is at sea or in empty land and there is no honest place to answer.
//! - The country polygon containing the point decides the country (without polygons: the
//!   **nearest** place).
//! - Among places of that country, larger places win over tiny ones nearby: the lowest
//!   `distance / w^k` wins, with `w = 1 + log10(population)` (4 for 1,000 people, 7.3 for
//!   Paris). `k = 2` at zoom 10 to 12, where the caller wants the city an area belongs to
//!   (a village of 1,000 wins over Paris's centre 10 km away only up to 3 km from the
//!   village); `k = 1` otherwise: from zoom 13 the village you stand in (the same village
//!   wins up to 5.5 km), and below zoom 10, where only admin names are answered, the place
//!   whose admin areas they are. Pure distance there would split a big city among its small
//!   neighbours: mid-town Manhattan is nearer to Hoboken's point than to Manhattan's, and
//!   would get New Jersey at zoom 8 but New York at zoom 13.
//!
//! # File format (`data/places.bin`, integers little-endian)
//! ```text
//! offset size  field
//!      0    8  magic "WBPLACE1"
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 32
//!     16    4  u32 n_places
//!     20    4  u32 n_strings
//!     24    4  u32 blob_len           bytes of the string blob, a multiple of 4
//!     28    4  u32 reserved = 0
//!     32       places: n_places x 28 bytes:
//!                i32 lat, i32 lon      1e-5 degree
//!                u32 population
//!                u32 name, state, county   string indexes; 0xFFFFFFFF = none
//!                2 x u8 country code (ISO 3166-1 alpha-2, upper case)
//!                u8 kind               0 place, 1 admin seat (PPLA*), 2 capital (PPLC)
//!                u8 reserved = 0
//!              offsets: (n_strings + 1) x u32 into the blob (UTF-8)
//!              blob: blob_len bytes, zero-padded
//!      end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```

use std::fmt;
use std::path::Path;

use smallvec::SmallVec;

use crate::countries::CountryIndex;
use crate::datafile::{check_checksum, check_head, u32_at, StringTable, NO_STRING};
use crate::geo::EARTH_RADIUS_M;
use crate::lazy_file::DataFile;

const MAGIC: &[u8; 8] = b"WBPLACE1";
const HEADER: usize = 32;
const RECORD: usize = 28;
const NONE: u32 = NO_STRING;

/// Farther than this from every place, a point has no answer.
pub const MAX_DISTANCE_M: f64 = 50_000.0;

/// Grid cell size in degrees: 0.5 degree cells keep a 50 km search to a few cells and the
/// cell table to 1 MB.
const CELL_DEG: f64 = 0.5;
const ROWS: usize = 360;
const COLS: usize = 720;

#[derive(Debug)]
pub enum PlacesError {
    Io(std::io::Error),
    Corrupt(String),
}

impl fmt::Display for PlacesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacesError::Io(e) => write!(f, "places: {e}"),
            PlacesError::Corrupt(m) => write!(f, "places file is corrupt: {m}"),
        }
    }
}

impl std::error::Error for PlacesError {}

fn corrupt(m: impl Into<String>) -> PlacesError {
    PlacesError::Corrupt(m.into())
}

#[derive(Clone, Copy, Debug)]
struct Record {
    lat: i32,
    lon: i32,
    population: u32,
    name: u32,
    state: u32,
    county: u32,
    country: [u8; 2],
    kind: u8,
}

/// A place as [`PlaceIndex::reverse`] answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct Place<'a> {
    /// Its index in [`PlaceIndex::get`]'s order: a stable handle while the file is open.
    pub id: usize,
    pub lat: f64,
    pub lon: f64,
    pub name: &'a str,
    pub state: Option<&'a str>,
    pub county: Option<&'a str>,
    /// ISO 3166-1 alpha-2, upper case.
    pub country_code: &'a str,
    pub population: u32,
    /// 0 place, 1 admin seat, 2 capital.
    pub kind: u8,
    /// Great-circle distance from the query point, metres.
    pub distance_m: f64,
}

/// The places of `data/places.bin` with a grid index over them.
pub struct PlaceIndex {
    /// Sorted by grid cell.
    places: Vec<Record>,
    strings: StringTable,
    /// What the search reads of each place, in the order of `places`.
    spots: Vec<Spot>,
    /// `cells[c].start..cells[c + 1].start` are the places of cell `c` (row-major from the
    /// south-west).
    cells: Vec<Cell>,
    /// The cosine of each cell row's latitude farthest from the equator (the row's smallest).
    row_cos: Vec<f64>,
    /// The squared chord of [`MAX_DISTANCE_M`] on the unit sphere.
    max_chord2: f64,
}

/// What the search reads of a place, together: a lookup is bound by cache misses, and one
/// record per place looked at costs one where separate arrays cost one each.
#[derive(Clone, Copy)]
struct Spot {
    /// The place as a unit vector: distances by chord instead of haversine trigonometry.
    unit: [f64; 3],
    /// [`weight`] of its population.
    weight: f64,
    /// 1e-5 degree, as in the file: places are sorted by it within a cell.
    lat: i32,
    country: [u8; 2],
}

/// A grid cell: where its places start, and the largest [`weight`] among them, rounded up
/// (a cell whose nearest corner is too far for even its largest place to win is skipped).
#[derive(Clone, Copy, Default)]
struct Cell {
    start: u32,
    max_weight: f32,
}

/// Where the sections of a places file lie, from its header.
struct Sections {
    n: usize,
    n_strings: usize,
    blob_len: usize,
    offsets_at: usize,
}

/// The sections of a file of `len` bytes from its header `head` (at least its first
/// [`HEADER`] bytes), checked against that length: what a foreign or truncated file fails.
fn sections(head: &[u8], len: usize) -> Result<Sections, PlacesError> {
    check_head(head, len, MAGIC, HEADER, "places file").map_err(PlacesError::Corrupt)?;
    let n = u32_at(head, 16) as usize;
    let n_strings = u32_at(head, 20) as usize;
    let blob_len = u32_at(head, 24) as usize;
    let offsets_at = n
        .checked_mul(RECORD)
        .and_then(|r| r.checked_add(HEADER))
        .ok_or_else(|| corrupt("sizes overflow"))?;
    let blob_at = n_strings
        .checked_add(1)
        .and_then(|s| s.checked_mul(4))
        .and_then(|s| s.checked_add(offsets_at))
        .ok_or_else(|| corrupt("sizes overflow"))?;
    if blob_at.checked_add(blob_len) != Some(len - 4) {
        return Err(corrupt("section sizes do not add up"));
    }
    Ok(Sections {
        n,
        n_strings,
        blob_len,
        offsets_at,
    })
}

impl DataFile for PlaceIndex {
    type Error = PlacesError;
    const HEADER: usize = HEADER;

    fn io_error(_path: &Path, e: std::io::Error) -> PlacesError {
        PlacesError::Io(e)
    }

    fn check_header(head: &[u8], len: usize) -> Result<(), PlacesError> {
        sections(head, len).map(drop)
    }

    fn from_file_bytes(bytes: Vec<u8>) -> Result<PlaceIndex, PlacesError> {
        PlaceIndex::from_bytes(&bytes)
    }
}

// `as usize` truncates towards zero and takes negatives and NaN to 0: the floor, clamped,
// without a call into libm's `floor` (no SSE4.1 on the baseline target)
fn cell_row(lat: f64) -> usize {
    (((lat + 90.0) / CELL_DEG) as usize).min(ROWS - 1)
}

fn cell_col(lon: f64) -> usize {
    (((lon + 180.0) / CELL_DEG) as usize).min(COLS - 1)
}

impl PlaceIndex {
    /// Reads and validates a places file.
    pub fn open(path: &Path) -> Result<PlaceIndex, PlacesError> {
        let bytes = std::fs::read(path).map_err(PlacesError::Io)?;
        PlaceIndex::from_bytes(&bytes)
    }

    /// Validates and indexes the bytes of a places file; any inconsistency is an error.
    pub fn from_bytes(b: &[u8]) -> Result<PlaceIndex, PlacesError> {
        let Sections {
            n,
            n_strings,
            blob_len,
            offsets_at,
        } = sections(b, b.len())?;
        check_checksum(b).map_err(PlacesError::Corrupt)?;
        let strings =
            StringTable::read(b, offsets_at, n_strings, blob_len).map_err(PlacesError::Corrupt)?;
        let mut places = Vec::with_capacity(n);
        for i in 0..n {
            let o = HEADER + i * RECORD;
            let r = Record {
                lat: u32_at(b, o) as i32,
                lon: u32_at(b, o + 4) as i32,
                population: u32_at(b, o + 8),
                name: u32_at(b, o + 12),
                state: u32_at(b, o + 16),
                county: u32_at(b, o + 20),
                country: [b[o + 24], b[o + 25]],
                kind: b[o + 26],
            };
            let valid_ref = |s: u32| s == NONE || (s as usize) < n_strings;
            if !(-9_000_000..=9_000_000).contains(&r.lat)
                || !(-18_000_000..=18_000_000).contains(&r.lon)
                || r.name == NONE
                || !valid_ref(r.name)
                || !valid_ref(r.state)
                || !valid_ref(r.county)
                || !r.country.iter().all(u8::is_ascii_uppercase)
            {
                return Err(corrupt(format!("place {i} is invalid")));
            }
            places.push(r);
        }
        let cell_of =
            |r: &Record| cell_row(r.lat as f64 * 1e-5) * COLS + cell_col(r.lon as f64 * 1e-5);
        // by latitude within a cell, so a search reads only its latitude band of each cell;
        // stable: places at the same latitude keep the file's order, so ties resolve the same way
        places.sort_by_cached_key(|r| (cell_of(r), r.lat));
        let mut cells = vec![Cell::default(); ROWS * COLS + 1];
        for r in &places {
            let c = &mut cells[cell_of(r)];
            c.start += 1;
            let w = weight(r.population) as f32;
            c.max_weight = c.max_weight.max(w.next_up());
        }
        // counts to starts
        let mut start = 0;
        for c in &mut cells {
            (c.start, start) = (start, start + c.start);
        }
        let spots = places
            .iter()
            .map(|r| Spot {
                unit: unit(r.lat as f64 * 1e-5, r.lon as f64 * 1e-5),
                weight: weight(r.population),
                lat: r.lat,
                country: r.country,
            })
            .collect();
        let row_cos = (0..ROWS)
            .map(|row| {
                let (south, north) = (
                    row as f64 * CELL_DEG - 90.0,
                    (row + 1) as f64 * CELL_DEG - 90.0,
                );
                south.abs().max(north.abs()).to_radians().cos().max(0.0)
            })
            .collect();
        Ok(PlaceIndex {
            places,
            strings,
            spots,
            cells,
            row_cos,
            max_chord2: chord2_of(MAX_DISTANCE_M),
        })
    }

    /// Number of places.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// True when the file holds no places.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// The `i`-th place in index order (distance 0), for checks and benches.
    pub fn get(&self, i: usize) -> Option<Place<'_>> {
        (i < self.places.len()).then(|| self.place(i, 0.0))
    }

    fn string(&self, i: u32) -> Option<&str> {
        self.strings.get(i)
    }

    fn place(&self, i: usize, distance_m: f64) -> Place<'_> {
        let r = &self.places[i];
        Place {
            id: i,
            lat: r.lat as f64 * 1e-5,
            lon: r.lon as f64 * 1e-5,
            name: self.string(r.name).unwrap_or(""),
            state: self.string(r.state),
            county: self.string(r.county),
            // validated as two ASCII upper-case letters at load
            country_code: std::str::from_utf8(&r.country).unwrap_or("??"),
            population: r.population,
            kind: r.kind,
            distance_m,
        }
    }

    /// The place with the lowest `distance / weight^k` among the places within
    /// [`MAX_DISTANCE_M`] that `keep` accepts (of several equal, the first in index order),
    /// and its distance; `k = 0` is the nearest place. `None` for an invalid coordinate.
    ///
    /// The cells that the 50 km circle can reach are visited in the order of a lower bound
    /// on the score of any place in them (their nearest side's distance over their largest
    /// weight), and the visit stops at the first cell whose bound is above the best score so
    /// far: a lookup in a town reads a cell or two, one in empty land the few around it.
    fn best(
        &self,
        lat: f64,
        lon: f64,
        k: i32,
        keep: impl Fn(&Spot) -> bool,
    ) -> Option<(usize, f64)> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        let mut order: SmallVec<[(f64, u32); 32]> = SmallVec::new();
        let dlat = (MAX_DISTANCE_M / EARTH_RADIUS_M).to_degrees();
        let (r0, r1) = (cell_row(lat - dlat), cell_row(lat + dlat));
        let cols = cols_within(lat, lon, dlat);
        for row in r0..=r1 {
            // the latitude part of the cells' distance bound (see `cell_distance_bound`)
            let south = row as f64 * CELL_DEG - 90.0;
            let lat_gap = (south - lat)
                .max(lat - (south + CELL_DEG))
                .max(0.0)
                .to_radians();
            let row_cos = self.row_cos[row];
            for &(c0, c1) in &cols {
                for col in c0..c1 + 1 {
                    let c = row * COLS + col;
                    let cell = self.cells[c];
                    if cell.start == self.cells[c + 1].start {
                        continue;
                    }
                    let bound = cell_distance_bound(lat_gap, row_cos, lon, col)
                        / pow(f64::from(cell.max_weight), k);
                    order.push((bound, c as u32));
                }
            }
        }
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let q = unit(lat, lon);
        let max_chord2 = self.max_chord2;
        // (index, distance, score)
        let mut best: Option<(usize, f64, f64)> = None;
        for &(bound, c) in &order {
            if best.is_some_and(|b| bound > b.2) {
                break;
            }
            let c = c as usize;
            let (start, end) = (
                self.cells[c].start as usize,
                self.cells[c + 1].start as usize,
            );
            // no place beyond `reach` can beat the best; its latitude band, rounded outwards
            let max_w = pow(f64::from(self.cells[c].max_weight), k);
            let reach = best.map_or(MAX_DISTANCE_M, |b| (b.2 * max_w).min(MAX_DISTANCE_M));
            // in the file's 1e-5 degree units, widened by one (a metre) for rounding
            let dlat = (reach / EARTH_RADIUS_M).to_degrees();
            let lat_lo = (lat - dlat) * 1e5 - 1.0;
            let lat_hi = (lat + dlat) * 1e5 + 1.0;
            let cell = &self.spots[start..end];
            let from = cell.partition_point(|s| f64::from(s.lat) < lat_lo);
            for (i, s) in cell[from..].iter().enumerate() {
                if f64::from(s.lat) > lat_hi {
                    break;
                }
                if !keep(s) {
                    continue;
                }
                let u = &s.unit;
                let (dx, dy, dz) = (u[0] - q[0], u[1] - q[1], u[2] - q[2]);
                let chord2 = dx * dx + dy * dy + dz * dz;
                if chord2 > max_chord2 {
                    continue;
                }
                let wk = pow(s.weight, k);
                // an arc is longer than its chord: a cheap bound spares most arcsines
                if let Some(b) = best {
                    if EARTH_RADIUS_M * chord2.sqrt() * (1.0 - 1e-12) / wk > b.2 {
                        continue;
                    }
                }
                let d = 2.0 * EARTH_RADIUS_M * (chord2.sqrt() / 2.0).min(1.0).asin();
                if d > MAX_DISTANCE_M {
                    continue;
                }
                let at = start + from + i;
                let score = d / wk;
                if best.is_none_or(|b| score < b.2 || (score == b.2 && at < b.0)) {
                    best = Some((at, d, score));
                }
            }
        }
        best.map(|(i, d, _)| (i, d))
    }

    /// The nearest place within [`MAX_DISTANCE_M`], by distance alone; `None` for an invalid
    /// coordinate.
    pub fn nearest(&self, lat: f64, lon: f64) -> Option<Place<'_>> {
        let (i, d) = self.best(lat, lon, 0, |_| true)?;
        Some(self.place(i, d))
    }

    /// The place answering a reverse lookup at `zoom` (0 to 18) without country polygons:
    /// the nearest place decides the country, as the module documents; `None` for an
    /// invalid coordinate or a point 50 km or more from every place.
    pub fn reverse(&self, lat: f64, lon: f64, zoom: u8) -> Option<Place<'_>> {
        if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
            return None;
        }
        let (nearest, _) = self.best(lat, lon, 0, |_| true)?;
        let (i, d) = self.ranked(lat, lon, zoom, self.spots[nearest].country)?;
        Some(self.place(i, d))
    }

    /// The reverse answer with the country from its polygons: the country containing the
    /// point (or the nearest within [`SEA_MARGIN_M`](crate::countries::SEA_MARGIN_M) at
    /// sea) and the place [`PlaceIndex::reverse`]'s ranking picks among that country's
    /// places within 50 km, if any. `None` for an invalid coordinate or no country.
    pub fn reverse_with<'a>(
        &'a self,
        countries: &'a CountryIndex,
        lat: f64,
        lon: f64,
        zoom: u8,
    ) -> Option<Reverse<'a>> {
        let (country_code, place) = self.reverse_id_with(countries, lat, lon, zoom)?;
        Some(Reverse {
            country_code,
            place: place.map(|(i, d)| self.place(i, d)),
        })
    }

    /// [`PlaceIndex::reverse_with`] as the country code and the place's id (for
    /// [`PlaceIndex::get`]) and distance: all that a caller keeping the names itself needs,
    /// without reading the place's record (a cache miss).
    pub fn reverse_id_with<'a>(
        &'a self,
        countries: &'a CountryIndex,
        lat: f64,
        lon: f64,
        zoom: u8,
    ) -> Option<(&'a str, Option<(usize, f64)>)> {
        let code = countries.country_at(lat, lon)?;
        let country: [u8; 2] = code.as_bytes().try_into().ok()?;
        Some((code, self.ranked(lat, lon, zoom, country)))
    }

    /// The ranking of the module notes among the places of `country` within 50 km.
    fn ranked(&self, lat: f64, lon: f64, zoom: u8, country: [u8; 2]) -> Option<(usize, f64)> {
        let k = if (10..13).contains(&zoom) { 2 } else { 1 };
        self.best(lat, lon, k, |s| s.country == country)
    }
}

/// The column ranges (inclusive; one, or two across the antimeridian) of the cells that a
/// circle of `dlat` degrees around the point can reach: all of them near the poles.
fn cols_within(lat: f64, lon: f64, dlat: f64) -> SmallVec<[(usize, usize); 2]> {
    // the longitude span grows towards the poles
    let cos = (lat.abs() + dlat).min(90.0).to_radians().cos();
    if cos < 1e-6 || dlat / cos >= 180.0 {
        return SmallVec::from_buf_and_len([(0, COLS - 1), (0, 0)], 1);
    }
    let (w, e) = (lon - dlat / cos, lon + dlat / cos);
    let mut cols = SmallVec::new();
    if w < -180.0 {
        cols.push((cell_col(w + 360.0), COLS - 1));
        cols.push((0, cell_col(e)));
    } else if e > 180.0 {
        cols.push((cell_col(w), COLS - 1));
        cols.push((0, cell_col(e - 360.0)));
    } else {
        cols.push((cell_col(w), cell_col(e)));
    }
    cols
}

/// A lower bound, in metres, on the distance from the point to any point of the cell in
/// column `col` of a row `lat_gap` radians of latitude away whose smallest cosine of latitude
/// is `row_cos`. The latitude difference alone bounds the angle; so does the angle to the
/// meridian plane of the point, `asin(cos(lat') sin(dlon)) >= cos(lat') (dlon - dlon^3 / 6)`.
/// No trigonometry: it is computed for every cell near.
#[inline]
fn cell_distance_bound(lat_gap: f64, row_cos: f64, lon: f64, col: usize) -> f64 {
    let west = col as f64 * CELL_DEG - 180.0;
    let dlon = if (west..=west + CELL_DEG).contains(&lon) {
        0.0
    } else {
        // both within -180..=180: at most 360 apart
        let gap = |x: f64| {
            let d = (x - lon).abs();
            d.min(360.0 - d)
        };
        gap(west).min(gap(west + CELL_DEG))
    };
    let x = dlon.to_radians();
    let across = if dlon <= 45.0 {
        row_cos * (x - x * x * x / 6.0)
    } else {
        0.0
    };
    // a margin far above the rounding of the distances it is compared with
    EARTH_RADIUS_M * lat_gap.max(across) * (1.0 - 1e-9)
}

/// `w^k` for the ranking's `k` (0, 1 or 2), as `f64::powi` computes it (`w * w` for 2) but
/// without its call into the runtime for a `k` unknown at compile time.
#[inline]
fn pow(w: f64, k: i32) -> f64 {
    match k {
        0 => 1.0,
        1 => w,
        2 => w * w,
        _ => w.powi(k),
    }
}

/// The squared chord of an arc of `m` metres on the unit sphere.
fn chord2_of(m: f64) -> f64 {
    let half = (m / (2.0 * EARTH_RADIUS_M)).min(std::f64::consts::FRAC_PI_2);
    (2.0 * half.sin()).powi(2)
}

/// A point on the unit sphere.
fn unit(lat: f64, lon: f64) -> [f64; 3] {
    let (sp, cp) = lat.to_radians().sin_cos();
    let (sl, cl) = lon.to_radians().sin_cos();
    [cp * cl, cp * sl, sp]
}

/// A reverse answer with the country from its polygons.
#[derive(Clone, Debug, PartialEq)]
pub struct Reverse<'a> {
    /// ISO 3166-1 alpha-2, upper case.
    pub country_code: &'a str,
    /// The place the ranking picks in that country; None when it has none within 50 km.
    pub place: Option<Place<'a>>,
}

/// The size weight of the ranking: `1 + log10(population)`, at least 1.
pub fn weight(population: u32) -> f64 {
    1.0 + (population.max(1) as f64).log10()
}
