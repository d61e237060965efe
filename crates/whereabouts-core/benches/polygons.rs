//! Lookups in the labelled-polygon index, in the core alone (no napi): timezones and
//! countries on points uniform over the sphere, medians of 5 passes. The timezone file can be
//! swapped to compare builds: `WB_TIMEZONES=/tmp/tz.bin cargo bench -p whereabouts-core --bench polygons`.

use std::hint::black_box;
use std::path::PathBuf;

use whereabouts_core::countries::CountryIndex;
use whereabouts_core::timezone::TimezoneIndex;

mod support;
use support::{data, median_ns, Numbers};

fn main() {
    let tz_file =
        std::env::var_os("WB_TIMEZONES").map_or_else(|| data("timezones.bin"), PathBuf::from);
    let tz = TimezoneIndex::open(&tz_file).expect("timezones file");
    let countries = CountryIndex::open(&data("countries.bin")).expect("data/countries.bin");
    let mut numbers = Numbers::new();
    let points: Vec<(f64, f64)> = (0..200_000).map(|_| numbers.point_on_sphere()).collect();
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
