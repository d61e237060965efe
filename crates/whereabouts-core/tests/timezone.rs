//! Timezone index against the real `data/timezones.bin`: cities whose zone is certain, the
//! nautical zones at sea (with their inverted POSIX sign), the edges of the world, bad input
//! and damaged files. Agreement with geo-tz over many points is measured by
//! `bench/timezone.ts`, not here.

use std::path::PathBuf;
use std::sync::OnceLock;

use whereabouts_core::polygons::{
    CellTree, CELL_LABEL, CELL_MIXED, CELL_NODE, CELL_OUTSIDE, LAT_EDGE, LON_EDGE,
};
use whereabouts_core::timezone::{nautical_zone, TimezoneError, TimezoneIndex};

fn tz_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/timezones.bin")
}

fn tz() -> &'static TimezoneIndex {
    static T: OnceLock<TimezoneIndex> = OnceLock::new();
    T.get_or_init(|| TimezoneIndex::open(&tz_path()).expect("data/timezones.bin opens"))
}

#[test]
fn cities_get_their_zone() {
    let cases = [
        (52.52, 13.405, "Europe/Berlin"),
        (48.8566, 2.3522, "Europe/Paris"),
        (51.5074, -0.1278, "Europe/London"),
        (40.7128, -74.006, "America/New_York"),
        (34.0522, -118.2437, "America/Los_Angeles"),
        (-23.5505, -46.6333, "America/Sao_Paulo"),
        (35.6762, 139.6503, "Asia/Tokyo"),
        (28.6139, 77.209, "Asia/Kolkata"),
        (-33.8688, 151.2093, "Australia/Sydney"),
        (55.7558, 37.6173, "Europe/Moscow"),
        // the "1970" product merges zones that agree since 1970: Nairobi keeps Riyadh's
        (-1.2921, 36.8219, "Asia/Riyadh"),
        (27.7172, 85.324, "Asia/Kathmandu"),
        // Arizona keeps standard time all year: its own zone, not Denver's
        (33.4484, -112.074, "America/Phoenix"),
    ];
    for (lat, lon, want) in cases {
        assert_eq!(tz().zone_at(lat, lon), Some(want), "({lat}, {lon})");
    }
}

#[test]
fn open_sea_answers_the_nautical_zone_of_the_longitude() {
    // mid-Atlantic, 40 W: UTC-3, which the Etc names spell GMT+3
    assert_eq!(tz().zone_at(30.0, -40.0), Some("Etc/GMT+3"));
    // Indian Ocean, 80 E: UTC+5, spelled GMT-5
    assert_eq!(tz().zone_at(-30.0, 80.0), Some("Etc/GMT-5"));
    // South Pacific near the antimeridian
    assert_eq!(tz().zone_at(-40.0, -179.0), Some("Etc/GMT+12"));
}

#[test]
fn nautical_band_edges_belong_to_the_band_east_of_them() {
    assert_eq!(nautical_zone(0.0), "Etc/GMT");
    assert_eq!(nautical_zone(7.4999), "Etc/GMT");
    assert_eq!(nautical_zone(7.5), "Etc/GMT-1");
    assert_eq!(nautical_zone(-7.5), "Etc/GMT");
    assert_eq!(nautical_zone(-7.5001), "Etc/GMT+1");
    assert_eq!(nautical_zone(172.5), "Etc/GMT-12");
    assert_eq!(nautical_zone(179.99), "Etc/GMT-12");
    assert_eq!(nautical_zone(-179.99), "Etc/GMT+12");
    // geo-tz lists both for the antimeridian itself, GMT+12 first
    assert_eq!(nautical_zone(180.0), "Etc/GMT+12");
    assert_eq!(nautical_zone(-180.0), "Etc/GMT+12");
}

#[test]
fn edges_of_the_world_and_bad_input() {
    let t = tz();
    assert!(t.zone_at(90.0, 0.0).is_some());
    assert!(t.zone_at(-90.0, 0.0).is_some());
    assert!(t.zone_at(0.0, 180.0).is_some());
    assert!(t.zone_at(0.0, -180.0).is_some());
    assert_eq!(t.zone_at(90.1, 0.0), None);
    assert_eq!(t.zone_at(0.0, 180.5), None);
    assert_eq!(t.zone_at(f64::NAN, 0.0), None);
    assert_eq!(t.zone_at(0.0, f64::INFINITY), None);
    // Antarctica has zones of its own in the data
    assert!(t
        .zone_at(-77.85, 166.67)
        .is_some_and(|z| !z.starts_with("Etc/")));
}

#[test]
fn every_zone_name_is_an_iana_name() {
    let names = tz().zone_names();
    assert!(names.len() > 250, "{} zones", names.len());
    assert!(names.iter().all(|n| n.contains('/') || n == "UTC"));
}

#[test]
fn damaged_files_are_refused() {
    let bytes = std::fs::read(tz_path()).unwrap();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(matches!(
        TimezoneIndex::from_bytes(flipped),
        Err(TimezoneError::Corrupt(_))
    ));
    assert!(TimezoneIndex::from_bytes(bytes[..bytes.len() - 4].to_vec()).is_err());
    assert!(TimezoneIndex::from_bytes(b"WBTZONE1".to_vec()).is_err());
    assert!(TimezoneIndex::open(&PathBuf::from("/nonexistent/timezones.bin")).is_err());
}

/// What JavaScript does with a [`CellTree`] (src/geocoding/zone-lookup.ts): the zone of a
/// point from the cells alone, or None where it must ask the core.
fn zone_from_cells(tree: &CellTree, nautical_base: usize, lat: f64, lon: f64) -> Option<usize> {
    if !(lat > -LAT_EDGE && lat < LAT_EDGE && lon > -LON_EDGE && lon < LON_EDGE) {
        return None;
    }
    let cells = (1u64 << tree.max_depth) as f64;
    let (w, h) = (2.0 * LON_EDGE / cells, 2.0 * LAT_EDGE / cells);
    let fx = (lon + LON_EDGE) / (2.0 * LON_EDGE) * cells;
    let fy = (LAT_EDGE - lat) / (2.0 * LAT_EDGE) * cells;
    let (x, y) = (fx.floor(), fy.floor());
    let (gx, gy) = (tree.guard / w, tree.guard / h);
    if fx - x <= gx || x + 1.0 - fx <= gx || fy - y <= gy || y + 1.0 - fy <= gy {
        return None;
    }
    let (x, y) = (x as usize, y as usize);
    let mut shift = tree.max_depth - tree.top_depth;
    let n = 1usize << tree.top_depth;
    let mut e = tree.entries[(y >> shift) * n + (x >> shift)];
    while e & 3 == CELL_NODE {
        shift -= 1;
        e = tree.entries[(e >> 2) as usize + 2 * ((y >> shift) & 1) + ((x >> shift) & 1)];
    }
    match e & 3 {
        CELL_LABEL => Some((e >> 2) as usize),
        CELL_OUTSIDE => Some(nautical_base + (((lon + 7.5) / 15.0).floor() + 12.0) as usize),
        _ => None,
    }
}

/// A small random generator (xorshift), so that the points are the same on every run.
fn xorshift(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn the_cell_tree_agrees_with_the_lookup() {
    let t = tz();
    let started = std::time::Instant::now();
    let tree = t.zone_cells(8, 14);
    let built = started.elapsed();
    let base = t.all_names().len() - 25;
    let n = 1usize << tree.top_depth;
    assert!(tree.entries.len() >= n * n);
    assert!(tree.guard > 0.0 && tree.guard < 1e-4);

    // uniform points over the sphere, and the same points moved onto the sides of their
    // cells at every depth, where the cells must defer to the core
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let (mut answered, total) = (0, 40_000);
    for i in 0..total {
        let lat = (2.0 * xorshift(&mut state) - 1.0).asin().to_degrees();
        let lon = 360.0 * xorshift(&mut state) - 180.0;
        let want = t.zone_index_at(lat, lon);
        if let Some(zone) = zone_from_cells(&tree, base, lat, lon) {
            assert_eq!(Some(zone), want, "({lat}, {lon})");
            answered += 1;
        }
        let depth = tree.top_depth + (i as u32 % (tree.max_depth - tree.top_depth + 1));
        let cells = (1u64 << depth) as f64;
        let x = ((lon + LON_EDGE) / (2.0 * LON_EDGE) * cells).round();
        let side = -LON_EDGE + x * (2.0 * LON_EDGE / cells);
        for lon in [side, side - 1e-9, side + 1e-7, side + 1.5e-6, side + 2.5e-6] {
            if let Some(zone) = zone_from_cells(&tree, base, lat, lon) {
                assert_eq!(Some(zone), t.zone_index_at(lat, lon), "({lat}, {lon})");
            }
        }
    }
    println!(
        "cell tree 8..14: {} entries, built in {built:?}; {answered} of {total} uniform points answered",
        tree.entries.len()
    );
    // borders and coasts cross few of the smallest cells
    assert!(answered > total * 97 / 100, "{answered} of {total}");

    // cells with one answer: their centre and the points just inside their guard
    let mut checked = 0;
    let mut stack: Vec<(u32, u32, usize, usize)> = (0..n * n)
        .map(|i| (tree.entries[i], tree.top_depth, i % n, i / n))
        .collect();
    while let Some((e, depth, x, y)) = stack.pop() {
        if e & 3 == CELL_NODE {
            for k in 0..4 {
                let child = tree.entries[(e >> 2) as usize + k];
                stack.push((child, depth + 1, 2 * x + (k & 1), 2 * y + k / 2));
            }
            continue;
        }
        if e & 3 == CELL_MIXED {
            continue;
        }
        // one cell in five (the test runs unoptimised)
        checked += 1;
        if checked % 5 != 0 {
            continue;
        }
        let cells = (1u64 << depth) as f64;
        let (w, h) = (2.0 * LON_EDGE / cells, 2.0 * LAT_EDGE / cells);
        let (left, top) = (-LON_EDGE + x as f64 * w, LAT_EDGE - y as f64 * h);
        let g = tree.guard * 1.01;
        for (lat, lon) in [
            (top - h / 2.0, left + w / 2.0),
            (top - g, left + g),
            (top - g, left + w - g),
            (top - h + g, left + g),
            (top - h + g, left + w - g),
        ] {
            if let Some(zone) = zone_from_cells(&tree, base, lat, lon) {
                assert_eq!(Some(zone), t.zone_index_at(lat, lon), "({lat}, {lon})");
            }
        }
    }
    assert!(checked > 100_000, "{checked} cells");
}
