//! The country of a point: Natural Earth 1:10m admin-0 polygons labelled with ISO 3166-1
//! alpha-2 codes, prepared by `scripts/build-countries.mjs` into `data/countries.bin` (a
//! [`PolygonIndex`], magic `WBCNTRY1`; how features without an ISO number and overseas
//! parts are labelled is in that script).
//!
//! A point inside a polygon takes its country. A point outside every polygon (at sea, or in
//! a gap of the 1:10m drawing, whose vertices sit up to a few hundred metres off the real
//! coast) takes the nearest country within [`SEA_MARGIN_M`], and has none farther out.
//!
//! Most points lie deep inside a country: the polygons' [`CellTree`] (the tree's quads,
//! split further inside its leaves where no edge comes near, down to `CELL_MAX_DEPTH`)
//! answers those from a few table reads, without the walk down the tree or a
//! point-in-polygon test; the other points (borders, coasts) take the tree's answer.

use std::path::Path;
use std::sync::OnceLock;

use crate::lazy_file::DataFile;
use crate::polygons::{CellTree, Hit, PolygonError, PolygonIndex, CELL_LABEL};

const MAGIC: &[u8; 8] = b"WBCNTRY1";

/// How far off the drawn coast a point still belongs to the nearest country: 5 km covers
/// harbours, estuaries and beaches the 1:10m coastline cuts off (and the border
/// strictness band of `bt=1`), not open sea. In a strait narrower than twice that, the
/// nearer shore wins.
pub const SEA_MARGIN_M: f64 = 5_000.0;

/// The cell tree's top grid: 256 x 256 cells of 1.4 x 0.7 degrees (256 kB).
const CELL_TOP_DEPTH: u32 = 8;
/// Its smallest cells: 2048 x 2048 of 0.18 x 0.09 degrees (about 20 x 10 km at the
/// equator). Deeper trees answer a few more points but take longer to build on first use
/// (`benches/places.rs`: depth 10 28 ms and `country_at` 102-106 ns, 11 47 ms and 93 ns,
/// 12 85 ms and 87 ns).
const CELL_MAX_DEPTH: u32 = 11;

/// The country polygons, loaded.
#[derive(Debug)]
pub struct CountryIndex {
    polygons: PolygonIndex,
    /// The answers that need no geometry ([`PolygonIndex::cell_tree`]), built on the first
    /// lookup rather than at open: it takes about 47 ms, which an engine that never reverse
    /// geocodes should not pay at start (the timezones' tree is built on first use too).
    cells: OnceLock<CellTree>,
}

impl CountryIndex {
    pub fn open(path: &Path) -> Result<CountryIndex, PolygonError> {
        CountryIndex::from_bytes(std::fs::read(path)?)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<CountryIndex, PolygonError> {
        let polygons = PolygonIndex::from_bytes(bytes, MAGIC, "country index")?;
        let is_code = |c: &String| c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase());
        if let Some(bad) = polygons.names().iter().find(|c| !is_code(c)) {
            return Err(PolygonError::Corrupt(format!(
                "country label {bad:?} is not an ISO 3166-1 alpha-2 code"
            )));
        }
        Ok(CountryIndex {
            polygons,
            cells: OnceLock::new(),
        })
    }

    /// Builds the cell tree now instead of on the first lookup (a server at start).
    pub fn prepare(&self) {
        self.cells();
    }

    fn cells(&self) -> &CellTree {
        self.cells
            .get_or_init(|| self.polygons.cell_tree(CELL_TOP_DEPTH, CELL_MAX_DEPTH))
    }

    /// The ISO 3166-1 alpha-2 code (upper case) of the country at a point, as the module
    /// documents; None for an invalid coordinate or a point farther than
    /// [`SEA_MARGIN_M`] from every country.
    pub fn country_at(&self, lat: f64, lon: f64) -> Option<&str> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        let i = match self.cells().answer_at(lat, lon) {
            Some(e) if e & 3 == CELL_LABEL => (e >> 2) as usize,
            // outside every polygon for certain: only the sea margin is left to ask
            Some(_) => self.polygons.nearest_label(lat, lon, SEA_MARGIN_M)?.0,
            None => self.label_from_tree(lat, lon)?,
        };
        Some(&self.polygons.names()[i])
    }

    /// The label of a valid point from the polygon tree: the containing polygon's, else the
    /// nearest within [`SEA_MARGIN_M`].
    fn label_from_tree(&self, lat: f64, lon: f64) -> Option<usize> {
        match self.polygons.hit(lat, lon) {
            Hit::Label(i) => Some(i),
            Hit::Outside => Some(self.polygons.nearest_label(lat, lon, SEA_MARGIN_M)?.0),
        }
    }

    /// Every country code the polygons carry, sorted.
    pub fn codes(&self) -> &[String] {
        self.polygons.names()
    }
}

impl DataFile for CountryIndex {
    type Error = PolygonError;
    const HEADER: usize = PolygonIndex::HEADER;

    fn io_error(_path: &Path, e: std::io::Error) -> PolygonError {
        PolygonError::Io(e)
    }

    fn check_header(head: &[u8], len: usize) -> Result<(), PolygonError> {
        PolygonIndex::check_header(head, len, MAGIC, "country index")
    }

    fn from_file_bytes(bytes: Vec<u8>) -> Result<CountryIndex, PolygonError> {
        CountryIndex::from_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn countries() -> CountryIndex {
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/countries.bin");
        CountryIndex::open(&path).expect("data/countries.bin")
    }

    /// The cell tree answers as the polygon tree does: on random points, and on points on
    /// and next to the corners of its cells at every depth, where floating point decides the
    /// side.
    #[test]
    fn the_cells_answer_as_the_tree() {
        use crate::polygons::{LAT_EDGE, LON_EDGE};
        let c = countries();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut from_cells = 0;
        for i in 0..400_000 {
            let (mut lat, mut lon) = (
                (2.0 * next() - 1.0).asin().to_degrees(),
                next() * 360.0 - 180.0,
            );
            if i % 2 == 1 {
                // onto a cell's corner, or a hair beside it
                let depth = CELL_TOP_DEPTH + (i as u32 / 2) % (CELL_MAX_DEPTH - CELL_TOP_DEPTH + 1);
                let n = (1u32 << depth) as f64;
                let (w, h) = (2.0 * LON_EDGE / n, 2.0 * LAT_EDGE / n);
                let nudge = [0.0, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6][i % 7];
                lon = (-LON_EDGE + ((lon + LON_EDGE) / w).round() * w + nudge).clamp(-180.0, 180.0);
                lat = (LAT_EDGE - ((LAT_EDGE - lat) / h).round() * h + nudge).clamp(-90.0, 90.0);
            }
            let Some(e) = c.cells().answer_at(lat, lon) else {
                continue;
            };
            from_cells += usize::from(i % 2 == 0);
            let want = match c.polygons.hit(lat, lon) {
                Hit::Label(l) => ((l as u32) << 2) | CELL_LABEL,
                Hit::Outside => crate::polygons::CELL_OUTSIDE,
            };
            assert_eq!(e, want, "({lat}, {lon})");
        }
        // the fast path is taken for most uniform points: most of the sphere is far from a
        // coast or border
        assert!(from_cells > 190_000, "{from_cells} of 200000");
    }
}
