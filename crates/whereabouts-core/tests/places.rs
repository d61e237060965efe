//! Reverse geocoding: hand-checkable points against the real `data/places.bin`, the ranking
//! rules on a small hand-made file (so that the distances can be checked on paper), and
//! damaged files.

use std::path::PathBuf;
use std::sync::OnceLock;

use whereabouts_core::geo::distance_m;
use whereabouts_core::places::{weight, PlaceIndex, PlacesError};

fn real() -> &'static PlaceIndex {
    static P: OnceLock<PlaceIndex> = OnceLock::new();
    P.get_or_init(|| {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/places.bin");
        PlaceIndex::open(&path).expect("data/places.bin opens")
    })
}

/// One place of a hand-made file: lat, lon, population, name, state, county, country.
type Row<'a> = (
    f64,
    f64,
    u32,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    &'a str,
);

/// Writes a places file in the format of `places.rs` (what scripts/build-places.mjs writes).
fn file(rows: &[Row]) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut intern = |s: Option<&str>| -> u32 {
        match s {
            None => u32::MAX,
            Some(s) => match strings.iter().position(|x| x == s) {
                Some(i) => i as u32,
                None => {
                    strings.push(s.to_owned());
                    (strings.len() - 1) as u32
                }
            },
        }
    };
    let mut records = Vec::new();
    for &(lat, lon, pop, name, state, county, cc) in rows {
        records.extend(((lat * 1e5).round() as i32).to_le_bytes());
        records.extend(((lon * 1e5).round() as i32).to_le_bytes());
        records.extend(pop.to_le_bytes());
        records.extend(intern(Some(name)).to_le_bytes());
        records.extend(intern(state).to_le_bytes());
        records.extend(intern(county).to_le_bytes());
        records.extend(cc.as_bytes());
        records.extend([0u8, 0]);
    }
    let mut blob = Vec::new();
    let mut offsets = Vec::new();
    for s in &strings {
        offsets.extend((blob.len() as u32).to_le_bytes());
        blob.extend(s.as_bytes());
    }
    offsets.extend((blob.len() as u32).to_le_bytes());
    while !blob.len().is_multiple_of(4) {
        blob.push(0);
    }
    let mut out = Vec::new();
    out.extend(b"WBPLACE1");
    for v in [
        1u32,
        32,
        rows.len() as u32,
        strings.len() as u32,
        blob.len() as u32,
        0,
    ] {
        out.extend(v.to_le_bytes());
    }
    out.extend(records);
    out.extend(offsets);
    out.extend(blob);
    let mut h: u32 = 0x811c_9dc5;
    for w in out.chunks_exact(4) {
        h = (h ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]])).wrapping_mul(0x0100_0193);
    }
    out.extend(h.to_le_bytes());
    out
}

#[test]
fn central_paris_is_paris_france() {
    for zoom in [0, 5, 10, 13, 18] {
        let p = real().reverse(48.8566, 2.3522, zoom).expect("an answer");
        assert_eq!(p.country_code, "FR");
        assert_eq!(p.state, Some("Île-de-France"), "zoom {zoom}");
    }
    let p = real().reverse(48.8566, 2.3522, 18).unwrap();
    assert_eq!(p.name, "Paris");
    assert!(p.population > 2_000_000);
    assert!(p.distance_m < 1_000.0);
}

#[test]
fn other_cities_worldwide() {
    let cases = [
        (52.52, 13.405, "Berlin", "DE"),
        (40.7128, -74.006, "New York City", "US"),
        (35.6895, 139.6917, "Tokyo", "JP"),
        (-33.8688, 151.2093, "Sydney", "AU"),
        (-22.9068, -43.1729, "Rio de Janeiro", "BR"),
    ];
    for (lat, lon, name, cc) in cases {
        let p = real().reverse(lat, lon, 10).expect(name);
        assert_eq!((p.name, p.country_code), (name, cc));
    }
}

#[test]
fn a_big_city_keeps_its_admin_names_against_a_nearer_small_neighbour() {
    // mid-town Manhattan: Hoboken's point (New Jersey) is the nearest, but Manhattan's
    // (1.6 million people) wins the weighted choice at every zoom
    for zoom in [3, 8, 13, 18] {
        let p = real().reverse(40.75, -73.99, zoom).unwrap();
        assert_eq!(p.state, Some("New York"), "zoom {zoom}");
    }
    assert_eq!(
        real().nearest(40.75, -73.99).unwrap().state,
        Some("New Jersey")
    );
}

/// Uniform numbers in [0, 1) from a fixed LCG: reproducible random points.
fn lcg(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn the_grid_finds_the_same_nearest_place_as_a_full_scan() {
    let idx = real();
    let all: Vec<_> = (0..idx.len()).map(|i| idx.get(i).unwrap()).collect();
    assert!(idx.get(idx.len()).is_none());
    // points up to 0.6 degree from random places (some beyond 50 km from all, some wrapped
    // across the antimeridian); a fixed LCG keeps the test reproducible
    let mut rnd = lcg(1);
    for _ in 0..300 {
        let p = &all[(rnd() * all.len() as f64) as usize];
        let lat = (p.lat + (rnd() - 0.5) * 1.2).clamp(-90.0, 90.0);
        let mut lon = p.lon + (rnd() - 0.5) * 1.2;
        if lon > 180.0 {
            lon -= 360.0;
        } else if lon < -180.0 {
            lon += 360.0;
        }
        let brute = all
            .iter()
            .map(|q| distance_m(lat, lon, q.lat, q.lon))
            .fold(f64::INFINITY, f64::min);
        match idx.nearest(lat, lon) {
            Some(n) => assert!((n.distance_m - brute).abs() < 1e-6, "{lat},{lon}"),
            None => assert!(brute > 50_000.0, "{lat},{lon}: {brute} m"),
        }
    }
}

#[test]
fn the_ranking_is_a_full_scan_of_50_km() {
    let idx = real();
    let all: Vec<_> = (0..idx.len()).map(|i| idx.get(i).unwrap()).collect();
    let mut rnd = lcg(7);
    for n in 0..200 {
        let p = &all[(rnd() * all.len() as f64) as usize];
        // up to about 40 km from a place: cells near and far come into play
        let lat = (p.lat + (rnd() - 0.5) * 0.7).clamp(-89.0, 89.0);
        let lon = (p.lon + (rnd() - 0.5) * 0.7).clamp(-180.0, 180.0);
        let zoom = if n % 2 == 0 { 10 } else { 18 };
        let k = if zoom == 10 { 2 } else { 1 };
        let near: Vec<_> = all
            .iter()
            .map(|q| (q, distance_m(lat, lon, q.lat, q.lon)))
            .filter(|(_, d)| *d <= 50_000.0)
            .collect();
        let want = near
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .and_then(|(nearest, _)| {
                near.iter()
                    .filter(|(q, _)| q.country_code == nearest.country_code)
                    .min_by(|a, b| {
                        let sa = a.1 / weight(a.0.population).powi(k);
                        let sb = b.1 / weight(b.0.population).powi(k);
                        sa.total_cmp(&sb)
                    })
            })
            .map(|(q, _)| (q.lat, q.lon));
        let got = idx.reverse(lat, lon, zoom).map(|q| (q.lat, q.lon));
        assert_eq!(got, want, "({lat}, {lon}) zoom {zoom}");
    }
}

#[test]
fn mid_ocean_and_empty_land_have_no_answer() {
    assert_eq!(real().reverse(30.0, -40.0, 18), None); // mid-Atlantic
    assert_eq!(real().reverse(-50.0, -120.0, 3), None); // South Pacific
    assert_eq!(real().reverse(-85.0, 0.0, 10), None); // Antarctica
    assert_eq!(real().reverse(90.0, 0.0, 10), None);
}

#[test]
fn invalid_coordinates_have_no_answer() {
    assert_eq!(real().reverse(91.0, 0.0, 10), None);
    assert_eq!(real().reverse(0.0, 180.5, 10), None);
    assert_eq!(real().reverse(f64::NAN, 0.0, 10), None);
}

#[test]
fn the_real_file_is_big_and_has_admin_names() {
    assert!(real().len() > 100_000);
    let p = real().reverse(51.5074, -0.1278, 18).unwrap();
    assert_eq!((p.name, p.country_code), ("London", "GB"));
    assert_eq!(p.state, Some("England"));
    assert!(p.county.is_some());
}

/// A city of 2,000,000 at (0, 0), a village of 1,000 east of it, a hamlet across a border.
fn village_and_city(village_km: f64) -> PlaceIndex {
    let km = 1.0 / 111.195; // degrees of latitude/longitude per km at the equator
    PlaceIndex::from_bytes(&file(&[
        (
            0.0,
            0.0,
            2_000_000,
            "Big City",
            Some("Region"),
            Some("Metro"),
            "AA",
        ),
        (
            0.0,
            10.0 * km,
            1_000,
            "Village",
            Some("Region"),
            Some("Rural"),
            "AA",
        ),
        (0.0, village_km * km, 1_000, "Hamlet", None, None, "BB"),
    ]))
    .unwrap()
}

#[test]
fn weights_are_as_documented() {
    assert_eq!(weight(1_000), 4.0);
    assert!((weight(2_000_000) - 7.301).abs() < 1e-3);
    assert_eq!(weight(0), 1.0);
    assert!((distance_m(0.0, 0.0, 0.0, 1.0) - 111_195.0).abs() < 1.0);
}

#[test]
fn a_village_wins_where_one_stands_and_the_city_at_city_zoom() {
    let km = 1.0 / 111.195;
    let idx = village_and_city(-30.0);
    // 4 km west of the village, 6 km east of the city centre.
    // zoom 13+: 4/4 = 1.0 against 6/7.3 = 0.82: the city. 2 km from the village: 0.5 against
    // 8/7.3 = 1.1: the village.
    assert_eq!(idx.reverse(0.0, 6.0 * km, 13).unwrap().name, "Big City");
    assert_eq!(idx.reverse(0.0, 8.0 * km, 13).unwrap().name, "Village");
    assert_eq!(idx.reverse(0.0, 8.0 * km, 18).unwrap().name, "Village");
    // zoom 10-12: 2/16 = 0.125 against 8/53.3 = 0.150: still the village; 2.5 km from the
    // village (7.5 km from the city): 0.156 against 0.141: the city.
    assert_eq!(idx.reverse(0.0, 8.0 * km, 10).unwrap().name, "Village");
    assert_eq!(idx.reverse(0.0, 7.5 * km, 10).unwrap().name, "Big City");
    assert_eq!(idx.reverse(0.0, 7.5 * km, 13).unwrap().name, "Village");
    // below zoom 10 the admin names are those of the zoom 13+ place: the village's county
    // 2.5 km from it, the city's 4 km from the village (4/4 = 1.0 against 6/7.3 = 0.82)
    let p = idx.reverse(0.0, 7.5 * km, 8).unwrap();
    assert_eq!((p.name, p.county), ("Village", Some("Rural")));
    let p = idx.reverse(0.0, 6.0 * km, 8).unwrap();
    assert_eq!((p.name, p.county), ("Big City", Some("Metro")));
}

#[test]
fn the_nearest_place_decides_the_country() {
    let km = 1.0 / 111.195;
    // the hamlet (country BB) is 2 km west of the city; 1.5 km west of the hamlet the
    // point is nearest to the hamlet: country BB, and the city of AA is not a candidate.
    let idx = village_and_city(-2.0);
    let p = idx.reverse(0.0, -3.5 * km, 10).unwrap();
    assert_eq!((p.name, p.country_code, p.state), ("Hamlet", "BB", None));
    // 0.5 km east of the hamlet the city is nearer (1.5 km): AA
    assert_eq!(idx.reverse(0.0, -0.5 * km, 10).unwrap().country_code, "AA");
}

#[test]
fn fifty_km_is_the_limit() {
    let km = 1.0 / 111.195;
    let idx = village_and_city(-30.0);
    assert_eq!(idx.reverse(49.0 * km, 0.0, 3).unwrap().name, "Big City");
    assert_eq!(idx.reverse(51.0 * km, 0.0, 3), None);
    // across the antimeridian
    let wrap =
        PlaceIndex::from_bytes(&file(&[(0.0, 179.9, 5_000, "East", None, None, "FJ")])).unwrap();
    assert_eq!(wrap.reverse(0.0, -179.9, 10).unwrap().name, "East");
}

#[test]
fn damaged_files_are_errors() {
    let good = file(&[(1.0, 2.0, 5_000, "Town", Some("S"), None, "AA")]);
    assert!(PlaceIndex::from_bytes(&good).is_ok());
    assert!(matches!(
        PlaceIndex::from_bytes(b"garbage"),
        Err(PlacesError::Corrupt(_))
    ));
    assert!(PlaceIndex::from_bytes(&[]).is_err());
    assert!(PlaceIndex::from_bytes(&good[..good.len() - 4]).is_err());
    for i in 8..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x40;
        assert!(PlaceIndex::from_bytes(&bad).is_err(), "flipped byte {i}");
    }
    // a well-formed checksum over an inconsistent header is still refused
    let mut lying = good.clone();
    lying[16] = 200; // n_places
    let n = lying.len() - 4;
    let mut h: u32 = 0x811c_9dc5;
    for w in lying[..n].chunks_exact(4) {
        h = (h ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]])).wrapping_mul(0x0100_0193);
    }
    lying[n..].copy_from_slice(&h.to_le_bytes());
    assert!(matches!(
        PlaceIndex::from_bytes(&lying),
        Err(PlacesError::Corrupt(_))
    ));
    assert!(matches!(
        PlaceIndex::open(&PathBuf::from("/nonexistent/places.bin")),
        Err(PlacesError::Io(_))
    ));
}
