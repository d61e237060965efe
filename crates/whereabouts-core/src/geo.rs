//! Spherical geometry on the WGS 84 mean radius: distances, bearings and a local
//! tangent-plane projection in which the solver works in metres.

pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// Great-circle distance in metres (haversine).
pub fn distance_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * a.sqrt().min(1.0).asin()
}

/// The point reached from (lat, lon) after `dist_m` metres on initial bearing `bearing_deg`.
pub fn destination(lat: f64, lon: f64, bearing_deg: f64, dist_m: f64) -> (f64, f64) {
    let d = dist_m / EARTH_RADIUS_M;
    let b = bearing_deg.to_radians();
    let p1 = lat.to_radians();
    let l1 = lon.to_radians();
    let p2 = (p1.sin() * d.cos() + p1.cos() * d.sin() * b.cos()).asin();
    let l2 = l1 + (b.sin() * d.sin() * p1.cos()).atan2(d.cos() - p1.sin() * p2.sin());
    (p2.to_degrees(), normalize_lon(l2.to_degrees()))
}

pub fn normalize_lon(lon: f64) -> f64 {
    let mut l = (lon + 180.0) % 360.0;
    if l < 0.0 {
        l += 360.0;
    }
    l - 180.0
}

/// An equirectangular projection around an origin: accurate to well under a metre
/// over the few tens of kilometres a single fix spans, and cheap.
#[derive(Clone, Copy, Debug)]
pub struct LocalFrame {
    lat0: f64,
    lon0: f64,
    m_per_deg_lat: f64,
    m_per_deg_lon: f64,
}

impl LocalFrame {
    pub fn new(lat0: f64, lon0: f64) -> Self {
        let m_per_deg_lat = EARTH_RADIUS_M.to_radians();
        let m_per_deg_lon = m_per_deg_lat * lat0.to_radians().cos().max(1e-6);
        LocalFrame {
            lat0,
            lon0,
            m_per_deg_lat,
            m_per_deg_lon,
        }
    }

    /// (east, north) in metres.
    pub fn to_xy(&self, lat: f64, lon: f64) -> (f64, f64) {
        let mut dlon = lon - self.lon0;
        if dlon > 180.0 {
            dlon -= 360.0;
        } else if dlon < -180.0 {
            dlon += 360.0;
        }
        (
            dlon * self.m_per_deg_lon,
            (lat - self.lat0) * self.m_per_deg_lat,
        )
    }

    pub fn to_latlon(&self, x: f64, y: f64) -> (f64, f64) {
        (
            (self.lat0 + y / self.m_per_deg_lat).clamp(-90.0, 90.0),
            normalize_lon(self.lon0 + x / self.m_per_deg_lon),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_degree_of_latitude() {
        let d = distance_m(0.0, 0.0, 1.0, 0.0);
        assert!((d - 111_195.0).abs() < 5.0, "{d}");
    }

    #[test]
    fn destination_inverts_distance() {
        let (lat, lon) = destination(51.9, -8.47, 63.0, 2500.0);
        assert!((distance_m(51.9, -8.47, lat, lon) - 2500.0).abs() < 0.01);
    }

    #[test]
    fn local_frame_round_trip_across_antimeridian() {
        let f = LocalFrame::new(-16.5, 179.99);
        let (x, y) = f.to_xy(-16.51, -179.99);
        assert!(x > 0.0 && x < 3000.0 && y < 0.0);
        let (lat, lon) = f.to_latlon(x, y);
        assert!((lat + 16.51).abs() < 1e-9 && (lon + 179.99).abs() < 1e-9);
    }
}
