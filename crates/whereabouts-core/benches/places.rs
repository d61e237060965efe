//! Reverse geocoding in the core alone (no napi), on the points of `bench/reverse.ts`: uniform
//! over the sphere, kept where the core answers a country and a place. The time to open the
//! country polygons (their cell tree is built then); medians of 5 passes of
//! the country polygon (`country_at`), the whole reverse answer at zoom 18 and 10
//! (`reverse_with`), and the pure nearest place (`nearest`).
//!
//!   cargo bench -p whereabouts-core --bench places

use std::hint::black_box;
use std::time::Instant;

use whereabouts_core::countries::CountryIndex;
use whereabouts_core::places::PlaceIndex;

mod support;
use support::{data, median_ns, Numbers};

fn main() {
    let opened = Instant::now();
    let countries = CountryIndex::open(&data("countries.bin")).expect("data/countries.bin");
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    // the first lookup builds the cell tree
    let first = Instant::now();
    black_box(countries.country_at(48.85, 2.35));
    let tree_ms = first.elapsed().as_secs_f64() * 1e3;
    let places = PlaceIndex::open(&data("places.bin")).expect("data/places.bin");
    let mut numbers = Numbers::new();
    let mut points = Vec::new();
    while points.len() < 20_000 {
        let (lat, lon) = numbers.point_on_sphere();
        if places
            .reverse_with(&countries, lat, lon, 18)
            .is_some_and(|r| r.place.is_some())
        {
            points.push((lat, lon));
        }
    }
    let country_ns = median_ns(&points, |lat, lon| {
        black_box(countries.country_at(lat, lon));
    });
    let z18_ns = median_ns(&points, |lat, lon| {
        black_box(places.reverse_with(&countries, lat, lon, 18));
    });
    let z10_ns = median_ns(&points, |lat, lon| {
        black_box(places.reverse_with(&countries, lat, lon, 10));
    });
    let nearest_ns = median_ns(&points, |lat, lon| {
        black_box(places.nearest(lat, lon));
    });
    println!("{} points where the core answers a place", points.len());
    println!("  CountryIndex::open:    {open_ms:.0} ms (the file)");
    println!("  first country_at:      {tree_ms:.0} ms (builds the cell tree)");
    println!("  country_at:            {country_ns:.0} ns/lookup");
    println!("  reverse_with, zoom 18: {z18_ns:.0} ns/lookup");
    println!("  reverse_with, zoom 10: {z10_ns:.0} ns/lookup");
    println!("  nearest:               {nearest_ns:.0} ns/lookup");
}
