//! The simulated region: a 40 x 40 km square on the North Sea coast of South
//! Holland (The Hague, Delft, Leiden, Zoetermeer), a local metric frame, a land
//! mask and the urban / suburban / rural zoning.
//!
//! Coordinates inside the simulator are metres east (x) and north (y) of the
//! region centre; only the writers convert to degrees.

pub const LAT0: f64 = 52.11;
pub const LON0: f64 = 4.39;
/// Half the side of the square region, metres.
pub const HALF: f64 = 20_000.0;
/// Metres per degree of latitude on the WGS 84 mean sphere.
pub const M_PER_DEG_LAT: f64 = 111_195.080_233_532_9;

/// Everything the land mask marks as land lies at least this far from the
/// hand-drawn coastline, so a few hundred metres of drawing error cannot put a
/// simulated tower or device into the sea.
pub const COAST_INSET_M: f64 = 600.0;

pub fn m_per_deg_lon() -> f64 {
    static M: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *M.get_or_init(|| M_PER_DEG_LAT * libm::cos(LAT0.to_radians()))
}

pub fn to_latlon(x: f64, y: f64) -> (f64, f64) {
    (LAT0 + y / M_PER_DEG_LAT, LON0 + x / m_per_deg_lon())
}

pub fn to_xy(lat: f64, lon: f64) -> (f64, f64) {
    ((lon - LON0) * m_per_deg_lon(), (lat - LAT0) * M_PER_DEG_LAT)
}

#[inline]
pub fn dist(ax: f64, ay: f64, bx: f64, by: f64) -> f64 {
    let (dx, dy) = (ax - bx, ay - by);
    libm::sqrt(dx * dx + dy * dy)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Env {
    Urban,
    Suburban,
    Rural,
}

impl Env {
    pub const ALL: [Env; 3] = [Env::Urban, Env::Suburban, Env::Rural];
    pub fn name(self) -> &'static str {
        match self {
            Env::Urban => "urban",
            Env::Suburban => "suburban",
            Env::Rural => "rural",
        }
    }
}

/// (name, lat, lon, radius in metres of the zone it creates)
pub const URBAN_CORE: (&str, f64, f64, f64) = ("The Hague centre", 52.0799, 4.3133, 4_000.0);
pub const SUBURBAN_CENTRES: [(&str, f64, f64, f64); 4] = [
    ("The Hague agglomeration", 52.0799, 4.3133, 10_000.0),
    ("Leiden", 52.1601, 4.4970, 4_000.0),
    ("Zoetermeer", 52.0575, 4.4931, 3_000.0),
    ("Delft", 52.0116, 4.3571, 3_000.0),
];

pub fn urban_centre_xy() -> (f64, f64) {
    to_xy(URBAN_CORE.1, URBAN_CORE.2)
}

/// Zone centres in the local frame: env_at runs for every simulated measurement.
fn zone_centres() -> &'static [(f64, f64, f64, Env); 5] {
    static Z: std::sync::OnceLock<[(f64, f64, f64, Env); 5]> = std::sync::OnceLock::new();
    Z.get_or_init(|| {
        let (ux, uy) = to_xy(URBAN_CORE.1, URBAN_CORE.2);
        let mut z = [(ux, uy, URBAN_CORE.3 * URBAN_CORE.3, Env::Urban); 5];
        for (i, (_, lat, lon, r)) in SUBURBAN_CENTRES.iter().enumerate() {
            let (cx, cy) = to_xy(*lat, *lon);
            z[i + 1] = (cx, cy, r * r, Env::Suburban);
        }
        z
    })
}

pub fn env_at(x: f64, y: f64) -> Env {
    for &(cx, cy, r2, env) in zone_centres() {
        let (dx, dy) = (x - cx, y - cy);
        if dx * dx + dy * dy < r2 {
            return env;
        }
    }
    Env::Rural
}

/// The coastline from the Nieuwe Waterweg (the ship canal south of Hoek van
/// Holland) north to past Noordwijk, drawn by hand from well-known beach
/// points (Hoek van Holland, Ter Heijde, Kijkduin, Scheveningen, Wassenaarse
/// Slag, Katwijk, Noordwijk, Langevelderslag). Land is east/south-east of it.
/// The first two points are the north bank of the Nieuwe Waterweg from Maassluis
/// to the sea; the land south of the canal (Rozenburg, Maasvlakte) is left out.
pub const WATER_LINE: [(f64, f64); 13] = [
    (51.9180, 4.2500), // Maassluis, on the canal
    (51.9780, 4.1250), // Hoek van Holland, canal mouth
    (51.9900, 4.1180),
    (52.0320, 4.1660), // Ter Heijde
    (52.0700, 4.2190), // Kijkduin
    (52.1000, 4.2620),
    (52.1150, 4.2790), // Scheveningen
    (52.1500, 4.3300),
    (52.1750, 4.3620), // Wassenaarse Slag
    (52.2050, 4.3960), // Katwijk aan Zee
    (52.2420, 4.4260), // Noordwijk aan Zee
    (52.2900, 4.4770), // Langevelderslag
    (52.3300, 4.5100), // past the region's northern edge
];

pub struct Land {
    water: Vec<(f64, f64)>,
    /// Coarse raster: 0 = every point of the tile is water, 1 = every point is
    /// land, 2 = mixed (decided exactly). Saves the segment loop for nearly all
    /// of the millions of land tests a world needs.
    tiles: Vec<u8>,
}

const LAND_TILE_M: f64 = 100.0;
const LAND_TILES: usize = (2.0 * HALF / LAND_TILE_M) as usize;

impl Land {
    pub fn new() -> Land {
        let mut land = Land {
            water: WATER_LINE.iter().map(|&(la, lo)| to_xy(la, lo)).collect(),
            tiles: Vec::new(),
        };
        let half_diag = LAND_TILE_M * std::f64::consts::FRAC_1_SQRT_2;
        let mut tiles = vec![0u8; LAND_TILES * LAND_TILES];
        for j in 0..LAND_TILES {
            for i in 0..LAND_TILES {
                let cx = -HALF + (i as f64 + 0.5) * LAND_TILE_M;
                let cy = -HALF + (j as f64 + 0.5) * LAND_TILE_M;
                let (d, on_land_side) = land.coast_distance(cx, cy);
                // Every point of the tile is within half_diag of its centre.
                tiles[j * LAND_TILES + i] = if on_land_side && d >= COAST_INSET_M + half_diag {
                    1
                } else if (!on_land_side && d > half_diag)
                    || (on_land_side && d + half_diag < COAST_INSET_M)
                {
                    0
                } else {
                    2
                };
            }
        }
        land.tiles = tiles;
        land
    }

    /// Distance to the water line and whether the point is on its land side.
    fn coast_distance(&self, x: f64, y: f64) -> (f64, bool) {
        // The line runs roughly SW->NE with the sea on its left (north-west),
        // so a point is on land when it lies right of the nearest segment.
        let mut best = f64::INFINITY;
        let mut side = 0.0;
        for w in self.water.windows(2) {
            let (ax, ay) = w[0];
            let (bx, by) = w[1];
            let (dx, dy) = (bx - ax, by - ay);
            let len2 = dx * dx + dy * dy;
            let t = (((x - ax) * dx + (y - ay) * dy) / len2).clamp(0.0, 1.0);
            let (px, py) = (ax + t * dx, ay + t * dy);
            let d = dist(x, y, px, py);
            if d < best {
                best = d;
                side = dx * (y - ay) - dy * (x - ax);
            }
        }
        (best, side < 0.0)
    }

    /// Inside the region, on the land side of the water line, and at least
    /// COAST_INSET_M from it.
    pub fn is_land(&self, x: f64, y: f64) -> bool {
        if x.abs() > HALF || y.abs() > HALF {
            return false;
        }
        let i = (((x + HALF) / LAND_TILE_M) as usize).min(LAND_TILES - 1);
        let j = (((y + HALF) / LAND_TILE_M) as usize).min(LAND_TILES - 1);
        match self.tiles[j * LAND_TILES + i] {
            0 => false,
            1 => true,
            _ => {
                let (d, land_side) = self.coast_distance(x, y);
                land_side && d >= COAST_INSET_M
            }
        }
    }

    /// Rejection-samples a land point in env `env` (any env when None).
    pub fn sample(&self, rng: &mut crate::rng::Rng, env: Option<Env>) -> (f64, f64) {
        let (cx, cy, r) = match env {
            Some(Env::Urban) => {
                let (ux, uy) = urban_centre_xy();
                (ux, uy, URBAN_CORE.3)
            }
            _ => (0.0, 0.0, HALF),
        };
        loop {
            let x = cx + rng.range(-r, r);
            let y = cy + rng.range(-r, r);
            if self.is_land(x, y) && env.is_none_or(|e| env_at(x, y) == e) {
                return (x, y);
            }
        }
    }
}

impl Default for Land {
    fn default() -> Self {
        Land::new()
    }
}

/// The synthetic street network is a grid rotated by this angle; in suburban and
/// rural zones only every 2nd / 9th grid line is a street.
pub const STREET_ANGLE_DEG: f64 = 12.0;
pub const STREET_SPACING_M: f64 = 110.0;

pub fn street_every(env: Env) -> i64 {
    match env {
        Env::Urban => 1,
        Env::Suburban => 2,
        Env::Rural => 9,
    }
}

pub fn street_axes() -> (f64, f64) {
    static A: std::sync::OnceLock<(f64, f64)> = std::sync::OnceLock::new();
    *A.get_or_init(|| {
        let a = STREET_ANGLE_DEG.to_radians();
        (libm::cos(a), libm::sin(a))
    })
}

/// To street-grid coordinates (u along one family of streets, v along the other).
pub fn to_uv(x: f64, y: f64) -> (f64, f64) {
    let (c, s) = street_axes();
    (x * c + y * s, -x * s + y * c)
}

pub fn from_uv(u: f64, v: f64) -> (f64, f64) {
    let (c, s) = street_axes();
    (u * c - v * s, u * s + v * c)
}

/// Moves a point onto the nearest street of the zone it lies in, across one of
/// the two street families: this is where crowdsourcing phones usually are.
pub fn snap_to_street(x: f64, y: f64, along_u: bool) -> (f64, f64) {
    let spacing = STREET_SPACING_M * street_every(env_at(x, y)) as f64;
    let (u, v) = to_uv(x, y);
    if along_u {
        from_uv(u, (v / spacing).round() * spacing)
    } else {
        from_uv((u / spacing).round() * spacing, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_places_classify() {
        let land = Land::new();
        let at = |la, lo| to_xy(la, lo);
        // The Hague centre, Delft, Leiden, Zoetermeer are land.
        for (la, lo) in [
            (52.0799, 4.3133),
            (52.0116, 4.3571),
            (52.1601, 4.4970),
            (52.0575, 4.4931),
        ] {
            let (x, y) = at(la, lo);
            assert!(land.is_land(x, y), "{la},{lo}");
        }
        // North Sea off Scheveningen and off Katwijk; south of the Nieuwe Waterweg.
        for (la, lo) in [(52.12, 4.24), (52.22, 4.36), (51.95, 4.15)] {
            let (x, y) = at(la, lo);
            assert!(!land.is_land(x, y), "{la},{lo}");
        }
        let (x, y) = at(52.0799, 4.3133);
        assert_eq!(env_at(x, y), Env::Urban);
        let (x, y) = at(52.1601, 4.4970);
        assert_eq!(env_at(x, y), Env::Suburban);
        let (x, y) = at(52.25, 4.62);
        assert_eq!(env_at(x, y), Env::Rural);
    }

    #[test]
    fn projection_round_trips() {
        let (x, y) = to_xy(52.2, 4.5);
        let (la, lo) = to_latlon(x, y);
        assert!((la - 52.2).abs() < 1e-12 && (lo - 4.5).abs() < 1e-12);
    }
}
