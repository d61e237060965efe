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

use crate::countries::CountryIndex;
use crate::datafile::{check_envelope, u32_at, StringTable, NO_STRING};
use crate::geo::EARTH_RADIUS_M;

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
    /// `cells[c]..cells[c + 1]` are the places of cell `c` (row-major from the south-west).
    cells: Vec<u32>,
    /// Each place as a unit vector: distances by chord instead of haversine trigonometry.
    units: Vec<[f64; 3]>,
    /// [`weight`] of each place, and the largest.
    weights: Vec<f64>,
    max_weight: f64,
}

fn cell_row(lat: f64) -> usize {
    (((lat + 90.0) / CELL_DEG).floor().max(0.0) as usize).min(ROWS - 1)
}

fn cell_col(lon: f64) -> usize {
    (((lon + 180.0) / CELL_DEG).floor().max(0.0) as usize).min(COLS - 1)
}

impl PlaceIndex {
    /// Reads and validates a places file.
    pub fn open(path: &Path) -> Result<PlaceIndex, PlacesError> {
        let bytes = std::fs::read(path).map_err(PlacesError::Io)?;
        PlaceIndex::from_bytes(&bytes)
    }

    /// Validates and indexes the bytes of a places file; any inconsistency is an error.
    pub fn from_bytes(b: &[u8]) -> Result<PlaceIndex, PlacesError> {
        check_envelope(b, MAGIC, HEADER, "places file").map_err(PlacesError::Corrupt)?;
        let body = &b[..b.len() - 4];
        let n = u32_at(b, 16) as usize;
        let n_strings = u32_at(b, 20) as usize;
        let blob_len = u32_at(b, 24) as usize;
        let offsets_at = n
            .checked_mul(RECORD)
            .and_then(|r| r.checked_add(HEADER))
            .ok_or_else(|| corrupt("sizes overflow"))?;
        let blob_at = n_strings
            .checked_add(1)
            .and_then(|s| s.checked_mul(4))
            .and_then(|s| s.checked_add(offsets_at))
            .ok_or_else(|| corrupt("sizes overflow"))?;
        if blob_at.checked_add(blob_len) != Some(body.len()) {
            return Err(corrupt("section sizes do not add up"));
        }
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
        places.sort_by_key(|r| (cell_of(r), r.lat));
        let mut cells = vec![0u32; ROWS * COLS + 1];
        for r in &places {
            cells[cell_of(r) + 1] += 1;
        }
        for c in 1..cells.len() {
            cells[c] += cells[c - 1];
        }
        let units = places
            .iter()
            .map(|r| unit(r.lat as f64 * 1e-5, r.lon as f64 * 1e-5))
            .collect();
        let weights: Vec<f64> = places.iter().map(|r| weight(r.population)).collect();
        let max_weight = weights.iter().copied().fold(1.0, f64::max);
        Ok(PlaceIndex {
            places,
            strings,
            cells,
            units,
            weights,
            max_weight,
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

    /// Calls `f` with the index of every place within `radius_m` of the point and its distance.
    fn within(&self, lat: f64, lon: f64, radius_m: f64, mut f: impl FnMut(usize, f64)) {
        let dlat = (radius_m / EARTH_RADIUS_M).to_degrees();
        let (r0, r1) = (cell_row(lat - dlat), cell_row(lat + dlat));
        // the longitude span grows towards the poles; near them scan whole rows
        let cos = (lat.abs() + dlat).min(90.0).to_radians().cos();
        let full = cos < 1e-6 || dlat / cos >= 180.0;
        let dlon = if full { 180.0 } else { dlat / cos };
        let q = unit(lat, lon);
        let half_chord = (radius_m / (2.0 * EARTH_RADIUS_M)).min(std::f64::consts::FRAC_PI_2);
        let max_chord2 = (2.0 * half_chord.sin()).powi(2);
        // the latitude band in the file's 1e-5 degree units, rounded outwards
        let lat_lo = ((lat - dlat) * 1e5).floor() as i32;
        let lat_hi = ((lat + dlat) * 1e5).ceil() as i32;
        for row in r0..=r1 {
            let mut visit = |c0: usize, c1: usize| {
                for c in row * COLS + c0..=row * COLS + c1 {
                    let (start, end) = (self.cells[c] as usize, self.cells[c + 1] as usize);
                    let cell = &self.places[start..end];
                    let from = cell.partition_point(|r| r.lat < lat_lo);
                    let a = start + from;
                    for (i, r) in cell[from..].iter().enumerate() {
                        if r.lat > lat_hi {
                            break;
                        }
                        // a box test first spares the distance for most places of the band
                        if !full {
                            let dl = (r.lon as f64 * 1e-5 - lon).abs();
                            if dl.min(360.0 - dl) > dlon {
                                continue;
                            }
                        }
                        let u = &self.units[a + i];
                        let (dx, dy, dz) = (u[0] - q[0], u[1] - q[1], u[2] - q[2]);
                        let chord2 = dx * dx + dy * dy + dz * dz;
                        if chord2 <= max_chord2 {
                            let d = 2.0 * EARTH_RADIUS_M * (chord2.sqrt() / 2.0).min(1.0).asin();
                            if d <= radius_m {
                                f(a + i, d);
                            }
                        }
                    }
                }
            };
            if full {
                visit(0, COLS - 1);
                continue;
            }
            let (w, e) = (lon - dlon, lon + dlon);
            if w < -180.0 {
                visit(cell_col(w + 360.0), COLS - 1);
                visit(0, cell_col(e));
            } else if e > 180.0 {
                visit(cell_col(w), COLS - 1);
                visit(0, cell_col(e - 360.0));
            } else {
                visit(cell_col(w), cell_col(e));
            }
        }
    }

    /// The nearest place within [`MAX_DISTANCE_M`], by distance alone.
    pub fn nearest(&self, lat: f64, lon: f64) -> Option<Place<'_>> {
        let mut near = Vec::new();
        for r in SEARCH_RADII_M {
            near.clear();
            self.within(lat, lon, r, |i, d| near.push((i, d)));
            // every place within r was seen: the nearest of them is the nearest of all
            if let Some(&(i, d)) = near.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                return Some(self.place(i, d));
            }
        }
        None
    }

    /// The place answering a reverse lookup at `zoom` (0 to 18) without country polygons:
    /// the nearest place decides the country, as the module documents; `None` for an
    /// invalid coordinate or a point 50 km or more from every place.
    pub fn reverse(&self, lat: f64, lon: f64, zoom: u8) -> Option<Place<'_>> {
        if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
            return None;
        }
        self.ranked(lat, lon, zoom, |near| {
            // the first of equals, as `nearest` chooses
            let &(ni, _) = near.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(self.places[ni].country)
        })
    }

    /// The reverse answer with the country from its polygons: the country containing the
    /// point (or the nearest within [`SEA_MARGIN_M`](crate::countries::SEA_MARGIN_M) at
    /// sea) and the place [`PlaceIndex::reverse`]'s ranking picks among that country's
    /// places within 50 km, if any. `None` for an invalid coordinate or no country.
    pub fn reverse_with(
        &self,
        countries: &CountryIndex,
        lat: f64,
        lon: f64,
        zoom: u8,
    ) -> Option<Reverse<'_>> {
        let code = countries.country_at(lat, lon)?;
        let country: [u8; 2] = code.as_bytes().try_into().ok()?;
        let place = self.ranked(lat, lon, zoom, |_| Some(country));
        Some(Reverse {
            country_code: code.to_owned(),
            place,
        })
    }

    /// The ranking of the module notes among the places within 50 km of the country that
    /// `country_of` names, given the places within the radius searched so far.
    ///
    /// Searched in growing radii, because a place farther than `d` has a score above
    /// `d / w_max^k`: once the best score `s` within radius `r` has `s * w_max^k <= r` the
    /// answer is final, else one more search out to `s * w_max^k` settles it. A lookup in a
    /// town visits the places within a few km instead of the hundreds within 50 km.
    fn ranked(
        &self,
        lat: f64,
        lon: f64,
        zoom: u8,
        country_of: impl Fn(&[(usize, f64)]) -> Option<[u8; 2]>,
    ) -> Option<Place<'_>> {
        let k = if (10..13).contains(&zoom) { 2 } else { 1 };
        let reach = self.max_weight.powi(k);
        let mut near: Vec<(usize, f64)> = Vec::new();
        let mut r = SEARCH_RADII_M[0];
        let best = loop {
            near.clear();
            self.within(lat, lon, r, |i, d| near.push((i, d)));
            let mut best: Option<(usize, f64, f64)> = None;
            if let Some(country) = country_of(&near) {
                for &(i, d) in &near {
                    if self.places[i].country != country {
                        continue;
                    }
                    let score = d / self.weights[i].powi(k);
                    if best.is_none_or(|b| score < b.2) {
                        best = Some((i, d, score));
                    }
                }
            }
            // no place beyond `bound` can win; without a candidate, the next fixed radius
            let bound = match best {
                Some(b) => b.2 * reach,
                None => SEARCH_RADII_M
                    .into_iter()
                    .find(|&x| x > r)
                    .unwrap_or(f64::INFINITY),
            };
            if bound <= r || r >= MAX_DISTANCE_M {
                break best;
            }
            r = bound.min(MAX_DISTANCE_M);
        };
        best.map(|(i, d, _)| self.place(i, d))
    }
}

/// A point on the unit sphere.
fn unit(lat: f64, lon: f64) -> [f64; 3] {
    let (sp, cp) = lat.to_radians().sin_cos();
    let (sl, cl) = lon.to_radians().sin_cos();
    [cp * cl, cp * sl, sp]
}

/// The radii of the growing search; the last is [`MAX_DISTANCE_M`].
const SEARCH_RADII_M: [f64; 3] = [3_000.0, 12_000.0, MAX_DISTANCE_M];

/// A reverse answer with the country from its polygons.
#[derive(Clone, Debug, PartialEq)]
pub struct Reverse<'a> {
    /// ISO 3166-1 alpha-2, upper case.
    pub country_code: String,
    /// The place the ranking picks in that country; None when it has none within 50 km.
    pub place: Option<Place<'a>>,
}

/// The size weight of the ranking: `1 + log10(population)`, at least 1.
pub fn weight(population: u32) -> f64 {
    1.0 + (population.max(1) as f64).log10()
}
