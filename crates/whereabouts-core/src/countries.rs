//! The country of a point: Natural Earth 1:10m admin-0 polygons labelled with ISO 3166-1
//! alpha-2 codes, prepared by `scripts/build-countries.mjs` into `data/countries.bin` (a
//! [`PolygonIndex`], magic `WBCNTRY1`; how features without an ISO number and overseas
//! parts are labelled is in that script).
//!
//! A point inside a polygon takes its country. A point outside every polygon (at sea, or in
//! a gap of the 1:10m drawing, whose vertices sit up to a few hundred metres off the real
//! coast) takes the nearest country within [`SEA_MARGIN_M`], and has none farther out.
//!
//! Most points lie deep inside a country: a grid of the polygon tree's quads at depth
//! [`GRID_DEPTH`] answers those from one table entry, without the walk down the tree or a
//! point-in-polygon test; the other points (borders, coasts, sea) take the tree's answer.

use std::path::Path;

use crate::polygons::{GridCell, Hit, PolygonError, PolygonIndex, LAT_EDGE, LON_EDGE};

const MAGIC: &[u8; 8] = b"WBCNTRY1";

/// How far off the drawn coast a point still belongs to the nearest country: 5 km covers
/// harbours, estuaries and beaches the 1:10m coastline cuts off (and the border
/// strictness band of `bt=1`), not open sea. In a strait narrower than twice that, the
/// nearer shore wins.
pub const SEA_MARGIN_M: f64 = 5_000.0;

/// 1024 x 1024 cells of 0.35 x 0.18 degrees (1 MB of one-byte labels). Half the points of
/// `benches/places.rs` (near places: coasts, borders) still go to the tree; depth 11 sent
/// 0.7 % fewer there at four times the memory, as the tree's leaves keep their geometry.
const GRID_DEPTH: u32 = 10;
/// A grid cell whose points do not all have one country (or a label above 254): the tree
/// answers them.
const ASK_TREE: u8 = u8::MAX;
/// Closer than this (in cells) to a cell's edge, a point takes the tree's side of the edge.
const EDGE_GUARD: f64 = 1e-6;

/// The country polygons, loaded.
#[derive(Debug)]
pub struct CountryIndex {
    polygons: PolygonIndex,
    /// The label of every point strictly inside each cell of
    /// [`PolygonIndex::coarse_grid`], or [`ASK_TREE`].
    grid: Vec<u8>,
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
        let grid = polygons
            .coarse_grid(GRID_DEPTH)
            .into_iter()
            .map(|cell| match cell {
                GridCell::Label(l) => u8::try_from(l).unwrap_or(ASK_TREE),
                // outside every polygon may still be within the sea margin of one
                GridCell::Outside | GridCell::Mixed => ASK_TREE,
            })
            .collect();
        Ok(CountryIndex { polygons, grid })
    }

    /// The ISO 3166-1 alpha-2 code (upper case) of the country at a point, as the module
    /// documents; None for an invalid coordinate or a point farther than
    /// [`SEA_MARGIN_M`] from every country.
    pub fn country_at(&self, lat: f64, lon: f64) -> Option<&str> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        let i = match self.grid_label(lat, lon) {
            Some(i) => i,
            None => self.label_from_tree(lat, lon)?,
        };
        Some(&self.polygons.names()[i])
    }

    /// The label of a point from the grid, when its cell has one country and the point is
    /// not on (or within a millionth of a cell of) the cell's edge.
    fn grid_label(&self, lat: f64, lon: f64) -> Option<usize> {
        // false for the rims beyond geo-tz's box, which the tree clamps
        if !(lat > -LAT_EDGE && lat < LAT_EDGE && lon > -LON_EDGE && lon < LON_EDGE) {
            return None;
        }
        let n = 1usize << GRID_DEPTH;
        let fx = (lon + LON_EDGE) / (2.0 * LON_EDGE) * n as f64;
        let fy = (LAT_EDGE - lat) / (2.0 * LAT_EDGE) * n as f64;
        // both positive here: truncation is the floor, without a call into libm
        let (x, y) = (fx as usize, fy as usize);
        let inside =
            |f: f64, c: usize| f - c as f64 > EDGE_GUARD && (c + 1) as f64 - f > EDGE_GUARD;
        if !(inside(fx, x) && inside(fy, y)) {
            return None;
        }
        let label = self.grid[y * n + x];
        (label != ASK_TREE).then_some(label as usize)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn countries() -> CountryIndex {
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/countries.bin");
        CountryIndex::open(&path).expect("data/countries.bin")
    }

    /// The grid answers as the tree does: on random points, and on points on and next to
    /// the cells' edges, where floating point decides the side.
    #[test]
    fn the_grid_answers_as_the_tree() {
        let c = countries();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let n = (1u32 << GRID_DEPTH) as f64;
        let (w, h) = (2.0 * LON_EDGE / n, 2.0 * LAT_EDGE / n);
        let mut from_grid = 0;
        for i in 0..400_000 {
            let (mut lat, mut lon) = (
                (2.0 * next() - 1.0).asin().to_degrees(),
                next() * 360.0 - 180.0,
            );
            if i % 2 == 1 {
                // onto a cell's corner, or a hair beside it
                let nudge = [0.0, 1e-12, -1e-12, 1e-9, -1e-9][i % 5];
                lon = (-LON_EDGE + ((lon + LON_EDGE) / w).round() * w + nudge).clamp(-180.0, 180.0);
                lat = (LAT_EDGE - ((LAT_EDGE - lat) / h).round() * h + nudge).clamp(-90.0, 90.0);
            }
            let grid = c.grid_label(lat, lon);
            from_grid += usize::from(grid.is_some());
            let tree = c.label_from_tree(lat, lon);
            assert!(
                grid.is_none() || grid == tree,
                "({lat}, {lon}): {grid:?} {tree:?}"
            );
        }
        // the fast path is taken at all: about a quarter of the sphere is land
        assert!(from_grid > 40_000, "{from_grid}");
    }
}
