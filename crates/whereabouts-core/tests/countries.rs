//! Countries from their polygons against the real `data/countries.bin` (and the reverse
//! answer built on them with `data/places.bin`): points on either side of borders where the
//! nearest place is across the border, off a coast, at sea, and damaged files.

use std::path::PathBuf;
use std::sync::OnceLock;

use whereabouts_core::countries::CountryIndex;
use whereabouts_core::geo::distance_m;
use whereabouts_core::places::{weight, PlaceIndex, MAX_DISTANCE_M};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

fn countries() -> &'static CountryIndex {
    static C: OnceLock<CountryIndex> = OnceLock::new();
    C.get_or_init(|| CountryIndex::open(&data("countries.bin")).expect("data/countries.bin opens"))
}

fn places() -> &'static PlaceIndex {
    static P: OnceLock<PlaceIndex> = OnceLock::new();
    P.get_or_init(|| PlaceIndex::open(&data("places.bin")).expect("data/places.bin opens"))
}

/// The ranking with polygons against a full scan of the country's places within 50 km, on
/// points uniform over the sphere and points up to 40 km from random places, at the three
/// rankings (zoom 5 and 18: k = 1, zoom 10: k = 2). The scan measures by haversine, the index
/// by chord: scores are compared to a billionth.
#[test]
fn the_ranking_with_polygons_is_a_full_scan_of_the_countrys_places() {
    let idx = places();
    let mut all: Vec<_> = (0..idx.len()).map(|i| idx.get(i).unwrap()).collect();
    all.sort_by(|a, b| a.lat.total_cmp(&b.lat));
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut answered = 0;
    for n in 0..3_000 {
        let (lat, lon) = if n % 2 == 0 {
            (
                (2.0 * next() - 1.0).asin().to_degrees(),
                next() * 360.0 - 180.0,
            )
        } else {
            let p = &all[(next() * all.len() as f64) as usize];
            let lat = (p.lat + (next() - 0.5) * 0.7).clamp(-90.0, 90.0);
            let lon = p.lon + (next() - 0.5) * 0.7;
            (
                lat,
                if lon > 180.0 {
                    lon - 360.0
                } else if lon < -180.0 {
                    lon + 360.0
                } else {
                    lon
                },
            )
        };
        let zoom = [5, 10, 18][n % 3];
        let k = if zoom == 10 { 2 } else { 1 };
        let Some(got) = idx.reverse_with(countries(), lat, lon, zoom) else {
            assert_eq!(countries().country_at(lat, lon), None);
            continue;
        };
        // 50 km is under half a degree of latitude: the scan need not look farther
        let from = all.partition_point(|q| q.lat < lat - 0.5);
        let want = all[from..]
            .iter()
            .take_while(|q| q.lat <= lat + 0.5)
            .filter(|q| q.country_code == got.country_code)
            .map(|q| (q, distance_m(lat, lon, q.lat, q.lon)))
            .filter(|(_, d)| *d <= MAX_DISTANCE_M)
            .map(|(q, d)| d / weight(q.population).powi(k))
            .min_by(f64::total_cmp);
        match (got.place, want) {
            (None, None) => {}
            (Some(p), Some(best)) => {
                answered += 1;
                let score = p.distance_m / weight(p.population).powi(k);
                assert_eq!(p.country_code, got.country_code);
                assert!(
                    (score - best).abs() <= best * 1e-9,
                    "({lat}, {lon}) zoom {zoom}: {} scores {score}, the best {best}",
                    p.name
                );
            }
            (got, want) => panic!("({lat}, {lon}) zoom {zoom}: {got:?} against {want:?}"),
        }
    }
    assert!(answered > 1_000, "{answered}");
}

#[test]
fn points_near_borders_take_the_country_they_are_in() {
    let cases = [
        (48.5830, 7.7480, "FR", "Strasbourg cathedral"),
        (48.5700, 7.8300, "DE", "Kehl, across the Rhine"),
        (47.5580, 7.5880, "CH", "Basel old town"),
        (47.5950, 7.6100, "DE", "Weil am Rhein, 4 km north of Basel"),
        (
            47.5870,
            7.5600,
            "FR",
            "Saint-Louis, 3 km north-west of Basel",
        ),
        (52.3700, 4.8900, "NL", "Amsterdam"),
        (51.2300, 4.4000, "BE", "Antwerp"),
        (43.7330, 7.4200, "MC", "Monaco"),
        (-29.3100, 27.4800, "LS", "Maseru: a hole in South Africa"),
        (
            -21.1150,
            55.5360,
            "RE",
            "Réunion: France's overseas part, ISO's own code",
        ),
        (64.7000, 177.5000, "RU", "Anadyr, east of 177 E"),
        (
            65.9000,
            -172.0000,
            "RU",
            "Chukotka, west of the antimeridian",
        ),
        (-17.8000, 178.0000, "FJ", "Viti Levu"),
        (-16.5000, -179.9000, "FJ", "Fiji, west of the antimeridian"),
        (
            42.6600,
            21.1600,
            "XK",
            "Pristina: Kosovo, no ISO number in Natural Earth",
        ),
        (
            35.1900,
            33.3600,
            "CY",
            "North Nicosia: Northern Cyprus, counted as Cyprus",
        ),
    ];
    for (lat, lon, want, what) in cases {
        assert_eq!(
            countries().country_at(lat, lon),
            Some(want),
            "{what} ({lat}, {lon})"
        );
    }
}

#[test]
fn off_the_coast_the_nearest_country_within_5_km_and_none_farther() {
    // 2 km off Scheveningen, the Netherlands
    assert_eq!(countries().country_at(52.1170, 4.2370), Some("NL"));
    // off Dover, nearer to England than to France
    assert_eq!(countries().country_at(51.1000, 1.3700), Some("GB"));
    // mid-Atlantic, mid-Pacific, and 20 km off the Dutch coast
    assert_eq!(countries().country_at(30.0, -40.0), None);
    assert_eq!(countries().country_at(0.0, -140.0), None);
    assert_eq!(countries().country_at(52.2300, 4.0000), None);
    // bad coordinates
    assert_eq!(countries().country_at(91.0, 0.0), None);
    assert_eq!(countries().country_at(0.0, f64::NAN), None);
}

#[test]
fn the_city_comes_from_the_country_of_the_polygon() {
    let at = |lat, lon| {
        let r = places()
            .reverse_with(countries(), lat, lon, 10)
            .expect("an answer");
        (r.country_code, r.place.map(|p| p.name.to_owned()))
    };
    // north of Kehl the nearest place is French (across the Rhine): the polygon keeps the
    // point German, and the city is the German one
    let (cc, city) = at(48.6200, 7.8500);
    assert_eq!(cc, "DE");
    assert_eq!(city.as_deref(), Some("Kehl"));
    let old = places().reverse(48.6200, 7.8500, 10).expect("a place");
    assert_eq!(
        old.country_code, "FR",
        "without polygons the nearest place decided"
    );
    // and on the French bank by Strasbourg's port, where Kehl's point is the nearest
    let (cc, city) = at(48.5500, 7.7900);
    assert_eq!(cc, "FR");
    assert_eq!(city.as_deref(), Some("Strasbourg"));
    assert_eq!(
        places()
            .reverse(48.5500, 7.7900, 10)
            .expect("a place")
            .country_code,
        "DE"
    );
    let (cc, city) = at(48.5830, 7.7480);
    assert_eq!(cc, "FR");
    assert_eq!(city.as_deref(), Some("Strasbourg"));
    let (cc, city) = at(47.5580, 7.5880);
    assert_eq!(cc, "CH");
    assert_eq!(city.as_deref(), Some("Basel"));
    // at sea 2 km off the Dutch coast: the Netherlands, and a Dutch city
    let r = places()
        .reverse_with(countries(), 52.1170, 4.2370, 10)
        .expect("NL");
    assert_eq!(r.country_code, "NL");
    assert!(r.place.is_some_and(|p| p.country_code == "NL"));
    assert_eq!(places().reverse_with(countries(), 30.0, -40.0, 10), None);
}

#[test]
fn a_country_without_a_place_nearby_is_answered_alone() {
    // the Sahara in southern Algeria: no place of 1,000 people within 50 km
    let r = places()
        .reverse_with(countries(), 24.0, 2.0, 10)
        .expect("Algeria");
    assert_eq!(r.country_code, "DZ");
    assert_eq!(r.place, None);
    assert_eq!(
        places().reverse(24.0, 2.0, 10),
        None,
        "without polygons: nothing"
    );
}

#[test]
fn damaged_files_are_refused() {
    let mut b = std::fs::read(data("countries.bin")).unwrap();
    assert!(CountryIndex::from_bytes(b.clone()).is_ok());
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    assert!(CountryIndex::from_bytes(b).is_err());
    let tz = std::fs::read(data("timezones.bin")).unwrap();
    let e = CountryIndex::from_bytes(tz).unwrap_err().to_string();
    assert!(e.contains("not a country index"), "{e}");
}
