//! What the lookup benches share: the repository's data files, the same pseudo-random
//! points on every run (so that runs and benches compare), and a median of timed passes.

use std::path::PathBuf;
use std::time::Instant;

/// A file of the repository's `data/` directory.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// xorshift64 from a fixed seed: the same numbers on every run and machine.
pub struct Numbers(u64);

impl Numbers {
    pub fn new() -> Numbers {
        Numbers(0x9e37_79b9_7f4a_7c15)
    }

    /// The next number, uniform in [0, 1).
    pub fn next(&mut self) -> f64 {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next point uniform over the sphere: (lat, lon) in degrees.
    pub fn point_on_sphere(&mut self) -> (f64, f64) {
        let lat = (2.0 * self.next() - 1.0).asin().to_degrees();
        (lat, self.next() * 360.0 - 180.0)
    }
}

/// Median nanoseconds per call of `f` over `points`, of 5 passes.
pub fn median_ns(points: &[(f64, f64)], mut f: impl FnMut(f64, f64)) -> f64 {
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for &(lat, lon) in points {
                f(lat, lon);
            }
            t.elapsed().as_nanos() as f64 / points.len() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}
