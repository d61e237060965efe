//! Land index against the real `data/land.bin`. The offshore fixtures are built
//! from a straight stretch of coast (the Landes coast of France, which runs
//! north-south along about 1.3 degrees west): the coast is found by bisection
//! along a parallel, then points are placed due west of it.

use std::path::PathBuf;
use std::sync::OnceLock;

use whereabouts_core::geo::{destination, distance_m};
use whereabouts_core::land::{bt_allowed_m, LandError, LandIndex};

fn land_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/land.bin")
}

fn land() -> &'static LandIndex {
    static L: OnceLock<LandIndex> = OnceLock::new();
    L.get_or_init(|| LandIndex::open(&land_path()).expect("data/land.bin opens"))
}

const SEARCH_M: f64 = 200_000.0;

/// Longitude of the Landes coast at `lat`, by bisection between a town inland
/// and a point in the Bay of Biscay.
fn landes_coast_lon(lat: f64) -> f64 {
    let l = land();
    let (mut on, mut off) = (-0.5, -3.0);
    assert!(l.is_land(lat, on) && !l.is_land(lat, off));
    for _ in 0..40 {
        let mid = (on + off) / 2.0;
        if l.is_land(lat, mid) {
            on = mid;
        } else {
            off = mid;
        }
    }
    assert!((-1.5..-1.1).contains(&on), "coast at {on}");
    on
}

fn offshore(lat: f64, km: f64) -> (f64, f64) {
    destination(lat, landes_coast_lon(lat), 270.0, km * 1000.0)
}

#[test]
fn inland_cities_are_land() {
    let l = land();
    for (name, lat, lon) in [
        ("Paris", 48.8566, 2.3522),
        ("Nairobi", -1.2921, 36.8219),
        ("Denver", 39.7392, -104.9903),
        ("Alice Springs", -23.698, 133.8807),
        ("Ulaanbaatar", 47.8864, 106.9057),
        ("Manaus", -3.119, -60.0217),
    ] {
        assert!(l.is_land(lat, lon), "{name}");
        assert_eq!(l.distance_to_land_m(lat, lon, 1000.0), Some(0.0), "{name}");
        assert_eq!(
            l.constrain(lat, lon, 0.0, SEARCH_M),
            (lat, lon, false),
            "{name}"
        );
    }
}

#[test]
fn mid_ocean_is_not_land() {
    let l = land();
    for (lat, lon) in [
        (0.0, -30.0),
        (-40.0, -120.0),
        (30.0, -140.0),
        (-30.0, 80.0),
        (45.0, -40.0),
    ] {
        assert!(!l.is_land(lat, lon), "{lat},{lon}");
        assert_eq!(
            l.distance_to_land_m(lat, lon, 100_000.0),
            None,
            "{lat},{lon}"
        );
        // Nothing within the search radius: left alone.
        assert_eq!(l.constrain(lat, lon, 5000.0, 100_000.0), (lat, lon, false));
    }
}

#[test]
fn coastal_cities_and_water_near_them() {
    let l = land();
    // Lakes are land in Natural Earth's land layer; seas are not.
    assert!(l.is_land(41.8781, -87.70)); // Chicago, a few km inland
    assert!(!l.is_land(43.0, 5.0)); // Gulf of Lion
    assert!(!l.is_land(40.6, -73.0)); // Atlantic south of Long Island
    assert!(l.is_land(35.6762, 139.6503)); // Tokyo
}

#[test]
fn three_km_offshore() {
    let l = land();
    let (lat, lon) = offshore(44.0, 3.0);
    assert!(!l.is_land(lat, lon));
    let d = l.distance_to_land_m(lat, lon, 50_000.0).unwrap();
    assert!((2500.0..3100.0).contains(&d), "{d}");
    // bt=1 allows it.
    assert_eq!(
        l.constrain(lat, lon, bt_allowed_m(1), SEARCH_M),
        (lat, lon, false)
    );
    // bt=0 moves it onto land, about 3 km east.
    let (mlat, mlon, moved) = l.constrain(lat, lon, bt_allowed_m(0), SEARCH_M);
    assert!(moved);
    assert!(l.is_land(mlat, mlon));
    let step = distance_m(lat, lon, mlat, mlon);
    assert!((d..d + 100.0).contains(&step), "moved {step} for {d}");
    assert!(mlon > lon);
}

#[test]
fn ten_km_offshore() {
    let l = land();
    let (lat, lon) = offshore(44.0, 10.0);
    let d = l.distance_to_land_m(lat, lon, 50_000.0).unwrap();
    assert!((9500.0..10_100.0).contains(&d), "{d}");
    // bt=2 allows it.
    assert_eq!(
        l.constrain(lat, lon, bt_allowed_m(2), SEARCH_M),
        (lat, lon, false)
    );
    // bt=1 brings it to 5 km from land.
    let (mlat, mlon, moved) = l.constrain(lat, lon, bt_allowed_m(1), SEARCH_M);
    assert!(moved);
    let after = l.distance_to_land_m(mlat, mlon, 50_000.0).unwrap();
    assert!(after <= 5000.0 + 5.0 && after > 4500.0, "{after}");
    let step = distance_m(lat, lon, mlat, mlon);
    assert!((step - (d - 5000.0)).abs() < 30.0, "{step} for {d}");
    // Constraining the answer again leaves it where it is.
    assert!(!l.constrain(mlat, mlon, bt_allowed_m(1), SEARCH_M).2);
}

#[test]
fn moved_points_lie_within_the_allowed_band() {
    let l = land();
    // Along a parallel through many coasts, offshore points out to 40 km.
    let mut moved_any = 0;
    for i in 0..400 {
        let (lat, lon) = (38.0 + (i % 20) as f64 * 0.37, -12.0 + (i / 20) as f64 * 1.3);
        for allowed in [0.0, 5000.0, 15000.0] {
            let (mlat, mlon, moved) = l.constrain(lat, lon, allowed, 60_000.0);
            let before = l.distance_to_land_m(lat, lon, 60_000.0);
            if !moved {
                assert!((mlat, mlon) == (lat, lon));
                assert!(
                    before.is_none_or(|d| d <= allowed),
                    "{lat},{lon} {before:?} {allowed}"
                );
                continue;
            }
            moved_any += 1;
            let before = before.unwrap();
            assert!(before > allowed);
            let after = l.distance_to_land_m(mlat, mlon, 60_000.0).unwrap();
            if allowed == 0.0 {
                assert!(
                    l.is_land(mlat, mlon) || after < 1.0,
                    "{lat},{lon} -> {mlat},{mlon}"
                );
            } else {
                assert!(after <= allowed + 5.0, "{lat},{lon}: {after} > {allowed}");
            }
            let step = distance_m(lat, lon, mlat, mlon);
            assert!(
                step <= before + 500.0,
                "{lat},{lon}: stepped {step} for {before}"
            );
        }
    }
    assert!(moved_any > 50, "{moved_any}");
}

#[test]
fn antimeridian_and_poles() {
    let l = land();
    // Wrangel Island and Taveuni (Fiji) straddle 180 degrees.
    assert!(l.is_land(71.2, 179.9));
    assert!(l.is_land(71.2, -179.9));
    assert!(l.is_land(-17.8, 178.0)); // Viti Levu
    assert!(l.is_land(66.0, 177.0)); // Chukotka
                                     // Water near the antimeridian measures to land on both sides of it.
    for lat in [-17.05, -16.6, -16.1] {
        let d = l.distance_to_land_m(lat, 179.999, 200_000.0).unwrap();
        let e = l.distance_to_land_m(lat, -179.999, 200_000.0).unwrap();
        assert!(d > 0.0 && (d - e).abs() < 300.0, "{lat}: {d} {e}");
        let f = l.distance_to_land_m(lat, 180.0, 200_000.0).unwrap();
        let g = l.distance_to_land_m(lat, -180.0, 200_000.0).unwrap();
        assert!((f - g).abs() < 1.0, "{lat}: {f} {g}");
    }
    let r = l.constrain(-17.05, -179.999, 0.0, 200_000.0);
    assert!(r.2 && l.is_land(r.0, r.1), "{r:?}");
    // Antarctica reaches the pole; the Arctic Ocean does not hold land.
    assert!(l.is_land(-90.0, 0.0));
    assert!(l.is_land(-89.5, 123.0));
    assert!(l.is_land(-80.0, 20.0));
    assert!(!l.is_land(90.0, 0.0));
    assert!(!l.is_land(-60.0, 0.0));
    for (lat, lon) in [
        (90.0, 0.0),
        (-90.0, 180.0),
        (89.99, -180.0),
        (-85.0, 179.9999),
        (0.0, 540.0),
    ] {
        for allowed in [0.0, 5000.0, 15000.0] {
            let (a, b, _) = l.constrain(lat, lon, allowed, 2_000_000.0);
            assert!(a.is_finite() && b.is_finite());
        }
        let _ = l.distance_to_land_m(lat, lon, 5_000_000.0);
    }
    let r = l.constrain(f64::NAN, 0.0, 0.0, 1e5);
    assert!(r.0.is_nan() && !r.2);
    assert!(!l.is_land(f64::NAN, 1.0));
}

#[test]
fn country_points_are_on_land() {
    let l = land();
    let csv = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/countries.csv"),
    )
    .unwrap();
    let (mut n, mut on) = (0, 0);
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (lat, lon): (f64, f64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        n += 1;
        if l.is_land(lat, lon) {
            on += 1;
        } else {
            // Tiny islands may be missing from the land layer, never far off.
            assert!(l.distance_to_land_m(lat, lon, 20_000.0).is_some(), "{line}");
        }
    }
    assert!(on * 100 >= n * 95, "{on} of {n}");
}

#[test]
fn corrupt_files_are_errors() {
    let good = std::fs::read(land_path()).unwrap();
    assert!(LandIndex::from_bytes(good.clone()).is_ok());
    assert!(matches!(
        LandIndex::from_bytes(Vec::new()),
        Err(LandError::Corrupt(_))
    ));
    for cut in [10, 100, good.len() / 2, good.len() - 4, good.len() - 1] {
        assert!(
            LandIndex::from_bytes(good[..cut].to_vec()).is_err(),
            "cut {cut}"
        );
    }
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(LandIndex::from_bytes(flipped).is_err());
    let mut noise = vec![0u8; good.len()];
    let mut x = 12345u32;
    for b in noise.iter_mut() {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
    }
    assert!(LandIndex::from_bytes(noise).is_err());
    // A sound polygon file of another kind: refused by its magic, and with the land magic
    // by its labels (countries, not "land").
    let countries =
        std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/countries.bin"))
            .unwrap();
    assert!(LandIndex::from_bytes(countries.clone()).is_err());
    let mut relabelled = countries;
    relabelled[..8].copy_from_slice(b"WBLAND02");
    let n = relabelled.len() - 4;
    let mut h: u32 = 0x811c_9dc5;
    for w in relabelled[..n].chunks_exact(4) {
        h = (h ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]])).wrapping_mul(0x0100_0193);
    }
    relabelled[n..].copy_from_slice(&h.to_le_bytes());
    let e = LandIndex::from_bytes(relabelled).unwrap_err();
    assert!(
        matches!(e, LandError::Corrupt(ref m) if m.contains("labels")),
        "{e}"
    );
    let missing = LandIndex::open(std::path::Path::new("/nonexistent/land.bin"));
    assert!(matches!(missing, Err(LandError::Io(_))));
}

#[test]
fn flat_islets_are_coast() {
    let l = land();
    // Natural Earth's quantisation flattens this islet (33.6505 N, 139.294..139.298 E) to
    // a line there and back; the build widens it to a sliver, so it still counts for the
    // distance to land.
    let (lat, lon) = destination(33.6505, 139.296, 0.0, 5000.0);
    assert!(!l.is_land(lat, lon));
    let d = l.distance_to_land_m(lat, lon, 20_000.0).expect("the islet");
    assert!((4900.0..5100.0).contains(&d), "{d}");
}
