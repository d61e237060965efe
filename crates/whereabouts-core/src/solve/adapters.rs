//! The solver's view of the land and IP data: thin impls of its traits.

use super::{Border, IpFallback};
use crate::ip::IpLocator;
use crate::land::LandIndex;

impl IpFallback for IpLocator {
    fn locate_ip(&self, ip: &str) -> Option<(f64, f64, f64)> {
        self.locate_str(ip).map(|l| (l.lat, l.lon, l.accuracy_m))
    }
}

impl Border for LandIndex {
    fn constrain(&self, lat: f64, lon: f64, allowed_m: f64, search_m: f64) -> (f64, f64, bool) {
        LandIndex::constrain(self, lat, lon, allowed_m, search_m)
    }
}
