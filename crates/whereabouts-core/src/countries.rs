//! The country of a point: Natural Earth 1:10m admin-0 polygons labelled with ISO 3166-1
//! alpha-2 codes, prepared by `scripts/build-countries.mjs` into `data/countries.bin` (a
//! [`PolygonIndex`], magic `WBCNTRY1`; how features without an ISO number and overseas
//! parts are labelled is in that script).
//!
//! A point inside a polygon takes its country. A point outside every polygon (at sea, or in
//! a gap of the 1:10m drawing, whose vertices sit up to a few hundred metres off the real
//! coast) takes the nearest country within [`SEA_MARGIN_M`], and has none farther out.

use std::path::Path;

use crate::polygons::{Hit, PolygonError, PolygonIndex};

const MAGIC: &[u8; 8] = b"WBCNTRY1";

/// How far off the drawn coast a point still belongs to the nearest country: 5 km covers
/// harbours, estuaries and beaches the 1:10m coastline cuts off (and the border
/// strictness band of `bt=1`), not open sea. In a strait narrower than twice that, the
/// nearer shore wins.
pub const SEA_MARGIN_M: f64 = 5_000.0;

/// The country polygons, loaded.
#[derive(Debug)]
pub struct CountryIndex {
    polygons: PolygonIndex,
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
        Ok(CountryIndex { polygons })
    }

    /// The ISO 3166-1 alpha-2 code (upper case) of the country at a point, as the module
    /// documents; None for an invalid coordinate or a point farther than
    /// [`SEA_MARGIN_M`] from every country.
    pub fn country_at(&self, lat: f64, lon: f64) -> Option<&str> {
        if !((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)) {
            return None;
        }
        let i = match self.polygons.hit(lat, lon) {
            Hit::Label(i) => i,
            Hit::Outside => self.polygons.nearest_label(lat, lon, SEA_MARGIN_M)?.0,
        };
        Some(&self.polygons.names()[i])
    }

    /// Every country code the polygons carry, sorted.
    pub fn codes(&self) -> &[String] {
        self.polygons.names()
    }
}
