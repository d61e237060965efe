//! Timezone of a point: the timezone-boundary-builder polygons that `geo-tz` ships
//! (its default "1970" product), prepared by `scripts/build-timezones.mjs` into
//! `data/timezones.bin`.
//!
//! [`TimezoneIndex::zone_at`] answers the IANA name of the zone containing a point, and
//! for a point at sea outside every polygon the nautical zone of its longitude
//! (`Etc/GMT-1` for 7.5 E to 22.5 E: the Etc zones name the offset with the sign
//! inverted, POSIX style).
//!
//! # Data
//! The polygons are a [`PolygonIndex`] (magic `WBTZONE1`), whose quadtree copies geo-tz's
//! so that every quad-level decision is identical to geo-tz's: see [`crate::polygons`].
//! The builder keeps geo-tz's vertices unsimplified on its 1e-6 degree lattice, so answers
//! can differ from geo-tz's only where a polygon cut at a quad's side is rounded to the
//! lattice (`bench/timezone.ts` measures how often: 3 in 100,000 points near borders).

use std::path::Path;

use crate::lazy_file::DataFile;
use crate::polygons::{CellTree, Hit, PolygonError, PolygonIndex};

const MAGIC: &[u8; 8] = b"WBTZONE1";

/// Errors opening the timezone file.
pub type TimezoneError = PolygonError;

/// Nautical zones, index = hours east of Greenwich + 12. Etc zone names carry the POSIX
/// sign: `Etc/GMT-1` is UTC+1.
const NAUTICAL: [&str; 25] = [
    "Etc/GMT+12",
    "Etc/GMT+11",
    "Etc/GMT+10",
    "Etc/GMT+9",
    "Etc/GMT+8",
    "Etc/GMT+7",
    "Etc/GMT+6",
    "Etc/GMT+5",
    "Etc/GMT+4",
    "Etc/GMT+3",
    "Etc/GMT+2",
    "Etc/GMT+1",
    "Etc/GMT",
    "Etc/GMT-1",
    "Etc/GMT-2",
    "Etc/GMT-3",
    "Etc/GMT-4",
    "Etc/GMT-5",
    "Etc/GMT-6",
    "Etc/GMT-7",
    "Etc/GMT-8",
    "Etc/GMT-9",
    "Etc/GMT-10",
    "Etc/GMT-11",
    "Etc/GMT-12",
];

/// The nautical zone of a longitude (-180..=180): 15-degree bands centred on multiples of
/// 15 degrees; a longitude on a band edge belongs to the band east of it, and both
/// antimeridian edges to UTC-12, as geo-tz answers first.
pub fn nautical_zone(lon: f64) -> &'static str {
    if lon <= -180.0 || lon >= 180.0 {
        return NAUTICAL[0];
    }
    let h = ((lon + 7.5) / 15.0).floor().clamp(-12.0, 12.0) as i64;
    NAUTICAL[(h + 12) as usize]
}

/// The timezone polygons, loaded.
#[derive(Debug)]
pub struct TimezoneIndex {
    polygons: PolygonIndex,
}

impl TimezoneIndex {
    pub fn open(path: &Path) -> Result<TimezoneIndex, TimezoneError> {
        TimezoneIndex::from_bytes(std::fs::read(path)?)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<TimezoneIndex, TimezoneError> {
        Ok(TimezoneIndex {
            polygons: PolygonIndex::from_bytes(bytes, MAGIC, "timezone index")?,
        })
    }

    /// Every zone name the polygons use, in file order (nautical zones not included).
    pub fn zone_names(&self) -> &[String] {
        self.polygons.names()
    }

    /// The IANA name of the timezone at a point; the nautical `Etc/GMT±N` zone at sea.
    /// None for a latitude outside -90..=90, a longitude outside -180..=180, or NaN.
    pub fn zone_at(&self, lat: f64, lon: f64) -> Option<&str> {
        let i = self.zone_index_at(lat, lon)?;
        let names = self.polygons.names();
        Some(match names.get(i) {
            Some(n) => n,
            None => NAUTICAL[i - names.len()],
        })
    }

    /// Every name [`TimezoneIndex::zone_index_at`] can answer: the polygons' zones in file
    /// order, then the 25 nautical zones from `Etc/GMT+12` (UTC-12) to `Etc/GMT-12`.
    pub fn all_names(&self) -> Vec<&str> {
        self.polygons
            .names()
            .iter()
            .map(String::as_str)
            .chain(NAUTICAL.iter().copied())
            .collect()
    }

    /// The nautical zone of a longitude as an index into [`TimezoneIndex::all_names`].
    fn nautical_index(&self, lon: f64) -> usize {
        let name = nautical_zone(lon);
        self.polygons.names().len() + NAUTICAL.iter().position(|n| *n == name).unwrap_or(12)
    }

    /// The zones that need no geometry, for JavaScript to answer most points without a call
    /// into the core (which costs more than the lookup): the polygons' [`CellTree`]
    /// ([`PolygonIndex::cell_tree`]), whose labels are indexes into
    /// [`TimezoneIndex::all_names`]. A cell outside every polygon has the nautical zone of
    /// each point's longitude, `all_names().len() - 25 + h + 12` with
    /// `h = floor((lon + 7.5) / 15)` ([`nautical_zone`]; the cells lie within
    /// +-179.9999 degrees, so the antimeridian's own rule never applies).
    pub fn zone_cells(&self, top_depth: u32, max_depth: u32) -> CellTree {
        self.polygons.cell_tree(top_depth, max_depth)
    }

    /// The zone at a point as an index into [`TimezoneIndex::all_names`]: the form that
    /// crosses into JavaScript without building a string per lookup.
    pub fn zone_index_at(&self, lat: f64, lon: f64) -> Option<usize> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        if lat == 90.0 {
            // geo-tz lists every nautical zone for the pole itself; its longitude's is one
            return Some(self.nautical_index(lon));
        }
        Some(match self.polygons.hit(lat, lon) {
            Hit::Label(i) => i,
            Hit::Outside => self.nautical_index(lon),
        })
    }
}

impl DataFile for TimezoneIndex {
    type Error = PolygonError;
    const HEADER: usize = PolygonIndex::HEADER;

    fn io_error(_path: &Path, e: std::io::Error) -> PolygonError {
        PolygonError::Io(e)
    }

    fn check_header(head: &[u8], len: usize) -> Result<(), PolygonError> {
        PolygonIndex::check_header(head, len, MAGIC, "timezone index")
    }

    fn from_file_bytes(bytes: Vec<u8>) -> Result<TimezoneIndex, PolygonError> {
        TimezoneIndex::from_bytes(bytes)
    }
}
