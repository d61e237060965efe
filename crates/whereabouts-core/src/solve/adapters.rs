//! The solver's view of the land and IP data: thin impls of its traits.

use super::{Border, IpFallback};
use crate::ip::IpLocator;

impl IpFallback for IpLocator {
    fn locate_ip(&self, ip: &str) -> Option<(f64, f64, f64)> {
        self.locate_str(ip).map(|l| (l.lat, l.lon, l.accuracy_m))
    }
}
