//! Timezone index against the real `data/timezones.bin`: cities whose zone is certain, the
//! nautical zones at sea (with their inverted POSIX sign), the edges of the world, bad input
//! and damaged files. Agreement with geo-tz over many points is measured by
//! `bench/timezone.ts`, not here.

use std::path::PathBuf;
use std::sync::OnceLock;

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

#[test]
fn the_zone_grid_agrees_with_the_lookup_inside_its_cells() {
    use whereabouts_core::polygons::{LAT_EDGE, LON_EDGE};
    use whereabouts_core::timezone::GRID_MIXED;
    let depth = 8;
    let grid = tz().zone_grid(depth);
    let n = 1usize << depth;
    assert_eq!(grid.len(), n * n);
    let (w, h) = (2.0 * LON_EDGE / n as f64, 2.0 * LAT_EDGE / n as f64);
    let mut single = 0;
    for (i, &zone) in grid.iter().enumerate() {
        if zone == GRID_MIXED {
            continue;
        }
        single += 1;
        let (x, y) = ((i % n) as f64, (i / n) as f64);
        // the centre and points just inside the four corners of the cell
        for (fx, fy) in [
            (0.5, 0.5),
            (0.001, 0.001),
            (0.999, 0.001),
            (0.001, 0.999),
            (0.999, 0.999),
        ] {
            let lon = -LON_EDGE + (x + fx) * w;
            let lat = LAT_EDGE - (y + fy) * h;
            assert_eq!(
                tz().zone_index_at(lat, lon),
                Some(zone as usize),
                "cell ({x}, {y}) at {lat}, {lon}"
            );
        }
    }
    // most of the sphere is open sea or deep inside one zone
    assert!(
        single > n * n * 3 / 4,
        "{single} of {} cells answer alone",
        n * n
    );
}
