//! Lookups in the labelled-polygon index, in the core alone (no napi): timezones and
//! countries on points uniform over the sphere, medians of 5 passes. The timezone file can be
//! swapped to compare builds: `WB_TIMEZONES=/tmp/tz.bin cargo bench -p whereabouts-core --bench polygons`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use whereabouts_core::countries::CountryIndex;
use whereabouts_core::timezone::TimezoneIndex;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

fn uniform(n: usize) -> Vec<(f64, f64)> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            (
                (2.0 * next() - 1.0).asin().to_degrees(),
                next() * 360.0 - 180.0,
            )
        })
        .collect()
}

/// Median nanoseconds per call of `f` over `points`, of 5 passes.
fn median_ns(points: &[(f64, f64)], mut f: impl FnMut(f64, f64)) -> f64 {
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

fn main() {
    let tz_file =
        std::env::var_os("WB_TIMEZONES").map_or_else(|| data("timezones.bin"), PathBuf::from);
    let tz = TimezoneIndex::open(&tz_file).expect("timezones file");
    let countries = CountryIndex::open(&data("countries.bin")).expect("data/countries.bin");
    let points = uniform(200_000);
    let tz_ns = median_ns(&points, |lat, lon| {
        black_box(tz.zone_index_at(lat, lon));
    });
    let country_ns = median_ns(&points, |lat, lon| {
        black_box(countries.country_at(lat, lon));
    });
    println!(
        "{} ({} points uniform over the sphere)",
        tz_file.display(),
        points.len()
    );
    println!("  timezone zone_index_at: {tz_ns:.0} ns/lookup");
    println!("  country_at:             {country_ns:.0} ns/lookup");
}
