//! The solver on hand-made databases whose answers can be checked by eye.

use whereabouts_core::geo::distance_m;
use whereabouts_core::radio::Radio;
use whereabouts_core::solve::{
    Border, CellObs, Fallback, IpFallback, Locator, Options, Query, Source, WifiObs,
};
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};

const NOW: i64 = 1_700_000_000;

fn st(lat: f64, lon: f64, range_m: u32, samples: u32) -> StationInfo {
    StationInfo {
        lat,
        lon,
        range_m,
        samples,
        psc: None,
        created: NOW - 400 * 86_400,
        updated: NOW - 10 * 86_400,
        estimated: Estimated::Averaged,
    }
}

/// GSM 262/1 LAC 10: cells 1 (52.50, 13.40) and 12 (52.51, 13.40), 1 km ranges, of different
/// sites (ids 0-9 and 10-19); LAC 12: sectors 31 (52.30, 13.40) and 32 (52.31, 13.40) of site 3;
/// LAC 14: learned sectors 41 (52.20, 13.40) and 42 (52.21, 13.40) of site 4, and sectors 51
/// (52.40, 13.40, averaged) and 52 (52.41, 13.40, learned) of site 5;
/// LTE 262/1 TAC 20: sectors 0x1A2B3C4 (48.14, 11.58) and 0x1A2B3C5 (48.15, 11.58) of one eNB; CDMA 310/4000 NID 5 BID 6;
/// an old single-sample GSM cell 99; WiFi APs 1..=3 near (52.5, 13.4) and AP 9 in Munich.
fn fixture() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 10, 1), &st(52.50, 13.40, 1000, 20)),
    )
    .unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 10, 12), &st(52.51, 13.40, 1000, 20)),
    )
    .unwrap();
    let mut old = st(52.60, 13.50, 2000, 1);
    old.updated = NOW - 200 * 86_400;
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 10, 99), &old),
    )
    .unwrap();
    for (cid, lat) in [(31, 52.30), (32, 52.31)] {
        b.push_cell(
            Radio::Gsm,
            262,
            1,
            Station::new(cell_key(Radio::Gsm, 12, cid), &st(lat, 13.40, 1000, 20)),
        )
        .unwrap();
    }
    for (cid, lat, estimated) in [
        (41, 52.20, Estimated::Learned),
        (42, 52.21, Estimated::Learned),
        (51, 52.40, Estimated::Averaged),
        (52, 52.41, Estimated::Learned),
    ] {
        let info = StationInfo {
            estimated,
            ..st(lat, 13.40, 1000, 20)
        };
        b.push_cell(
            Radio::Gsm,
            262,
            1,
            Station::new(cell_key(Radio::Gsm, 14, cid), &info),
        )
        .unwrap();
    }
    b.push_cell(
        Radio::Cdma,
        310,
        4000,
        Station::new(cell_key(Radio::Cdma, 5, 6), &st(40.0, -75.0, 3000, 9)),
    )
    .unwrap();
    b.push_cell(
        Radio::Lte,
        262,
        1,
        Station::new(
            cell_key(Radio::Lte, 20, 0x1A2_B3C4),
            &st(48.14, 11.58, 800, 30),
        ),
    )
    .unwrap();
    // A sibling sector of the same eNB (0x1A2B3): the mast is inferred between them.
    b.push_cell(
        Radio::Lte,
        262,
        1,
        Station::new(
            cell_key(Radio::Lte, 20, 0x1A2_B3C5),
            &st(48.15, 11.58, 800, 30),
        ),
    )
    .unwrap();
    b.push_wifi(Station::new(1, &st(52.5001, 13.4001, 60, 5)))
        .unwrap();
    b.push_wifi(Station::new(2, &st(52.5003, 13.4003, 60, 5)))
        .unwrap();
    b.push_wifi(Station::new(3, &st(52.5002, 13.4006, 60, 5)))
        .unwrap();
    b.push_wifi(Station::new(9, &st(48.14, 11.58, 60, 5)))
        .unwrap();
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    (dir, db)
}

fn gsm(lac: u32, cid: u64, signal: Option<f64>) -> CellObs {
    CellObs {
        radio: Some(Radio::Gsm),
        mcc: Some(262),
        mnc: 1,
        lac,
        cid,
        signal,
        asu: None,
        ta: None,
        psc: None,
    }
}

fn ap(bssid: u64, signal: f64) -> WifiObs {
    WifiObs {
        bssid,
        signal: Some(signal),
        frequency: None,
    }
}

fn q<'a>(cells: &'a [CellObs], wifi: &'a [WifiObs]) -> Query<'a> {
    Query {
        cells,
        wifi,
        ip: None,
        options: Options::default(),
    }
}

fn locator() -> (tempfile::TempDir, Locator) {
    let (dir, db) = fixture();
    (dir, Locator::new(db).with_now(NOW))
}

#[test]
fn a_single_cell_answers_with_its_position_and_a_range_based_radius() {
    let (_d, l) = locator();
    let a = l.locate(&q(&[gsm(10, 1, None)], &[])).unwrap();
    assert!(distance_m(a.lat, a.lon, 52.50, 13.40) < 1.0);
    // a crowd average: its 1000 m range (at least the 1000 m prior over 20 samples) x
    // sqrt(0.95^2 + 3^2 / 20^1.5)
    assert_eq!(a.accuracy_m, 1002.0);
    assert_eq!(a.fallback, Fallback::None);
    assert!(!a.aged);
    assert_eq!(a.source, Source::Cells);
}

#[test]
fn two_cells_pull_toward_the_stronger_signal() {
    let (_d, l) = locator();
    let cells = [gsm(10, 1, Some(-60.0)), gsm(10, 12, Some(-95.0))];
    let a = l.locate(&q(&cells, &[])).unwrap();
    assert!(a.lat > 52.50 && a.lat < 52.505, "{}", a.lat);
    let even = [gsm(10, 1, Some(-80.0)), gsm(10, 12, Some(-80.0))];
    let b = l.locate(&q(&even, &[])).unwrap();
    assert!((b.lat - 52.505).abs() < 1e-4, "{}", b.lat);
}

fn lte(cid: u64, signal: Option<f64>) -> CellObs {
    CellObs {
        radio: Some(Radio::Lte),
        lac: 20,
        cid,
        ..gsm(0, 0, signal)
    }
}

#[test]
fn lte_timing_advance_bounds_the_distance_from_the_inferred_mast() {
    let (_d, l) = locator();
    // The mast is midway between the two sectors' estimates: (48.145, 11.58), 556 m from
    // each. No signal: the crowd's distance, 556 m, within reported step 9 (78.12 m steps:
    // 8 to 11 steps allowed, 625 to 859 m): 625 m, toward the serving sector's estimate.
    let mut serving = lte(0x1A2_B3C4, None);
    serving.ta = Some(9.0);
    let a = l.locate(&q(&[serving], &[])).unwrap();
    let d = distance_m(48.145, 11.58, a.lat, a.lon);
    assert!((d - 8.0 * 78.12).abs() < 2.0, "{d}");
    assert!(a.lat < 48.145, "south of the mast");
    // -50 dBm, 49 dB above the typical LTE serving level: 10^(-49/80) of 556 m is 136 m,
    // within reported step 5 (4 to 7 steps, 312 to 547 m): 312 m.
    let mut strong = lte(0x1A2_B3C4, Some(-50.0));
    strong.ta = Some(5.0);
    let a = l.locate(&q(&[strong], &[])).unwrap();
    let d = distance_m(48.145, 11.58, a.lat, a.lon);
    assert!((d - 4.0 * 78.12).abs() < 2.0, "{d}");
}

#[test]
fn a_sector_signal_places_the_device_on_its_axis_from_the_mast() {
    let (_d, l) = locator();
    // Site 3's mast is midway between sectors 31 and 32: (52.305, 13.40), 556 m from each.
    let mast = |a: &whereabouts_core::solve::Answer| distance_m(52.305, 13.40, a.lat, a.lon);
    // At the typical GSM serving level (-73 dBm) the device is where the crowd was.
    let typical = l.locate(&q(&[gsm(12, 31, Some(-73.0))], &[])).unwrap();
    assert!(distance_m(typical.lat, typical.lon, 52.30, 13.40) < 1.0);
    // 40 dB stronger: the level says sqrt(10) times nearer the mast; heard alone, the cell
    // moves half of that in log distance, 10^(1/4) times nearer, on the sector's side of it.
    let near = l.locate(&q(&[gsm(12, 31, Some(-33.0))], &[])).unwrap();
    assert!(
        (mast(&near) - 556.0 / 10f64.powf(0.25)).abs() < 3.0,
        "{}",
        mast(&near)
    );
    assert!(near.lat < 52.305);
    // Weaker: farther out than the estimate.
    let far = l.locate(&q(&[gsm(12, 31, Some(-90.0))], &[])).unwrap();
    assert!(far.lat < 52.30 && mast(&far) > 600.0, "{}", mast(&far));
    // A timing advance of 0 (553.5 m steps: at most 2 steps allowed) keeps the weak one within 1107 m.
    let mut ta = gsm(12, 31, Some(-110.0));
    ta.ta = Some(0.0);
    let bounded = l.locate(&q(&[ta], &[])).unwrap();
    assert!(mast(&bounded) <= 2.0 * 553.5 + 1.0, "{}", mast(&bounded));
}

#[test]
fn a_cell_without_sibling_sectors_stays_at_its_estimate() {
    let (_d, l) = locator();
    // Cell 1 is alone among ids 0-9: no mast, so neither signal nor timing advance moves it.
    let mut serving = gsm(10, 1, Some(-55.0));
    serving.ta = Some(3.0);
    let a = l.locate(&q(&[serving], &[])).unwrap();
    assert!(distance_m(a.lat, a.lon, 52.50, 13.40) < 1.0);
}

#[test]
fn a_learned_cell_stays_at_its_estimate_whatever_its_signal() {
    let (_d, l) = locator();
    // Sectors 41 and 42 would give a mast as 31 and 32 do, but a learned position is the
    // mode of sightings, not a crowd average out along the sector's axis.
    for signal in [-53.0, -73.0, -110.0] {
        let mut c = gsm(14, 41, Some(signal));
        c.ta = Some(0.0);
        let a = l.locate(&q(&[c], &[])).unwrap();
        assert!(distance_m(a.lat, a.lon, 52.20, 13.40) < 1.0, "{signal}");
    }
    // Its radius is a learned cell's whatever its signal, where the same geometry averaged
    // moves onto its axis (the test above) and claims 0.9 of its unmoved radius, times what
    // its level says of its distance: 20 dB above GSM's typical serving level, 10^(-20/80),
    // times 0.9 (`LEVEL_RADIUS_SCALE`).
    let learned = l.locate(&q(&[gsm(14, 41, Some(-53.0))], &[])).unwrap();
    let learned_still = l.locate(&q(&[gsm(14, 41, None)], &[])).unwrap();
    assert_eq!(learned.accuracy_m, learned_still.accuracy_m);
    let moved = l.locate(&q(&[gsm(12, 31, Some(-53.0))], &[])).unwrap();
    let unmoved = l.locate(&q(&[gsm(12, 31, None)], &[])).unwrap();
    assert!(
        (moved.accuracy_m / unmoved.accuracy_m - 0.9 * 0.9 * 10f64.powf(-0.25)).abs() < 0.01,
        "{} {}",
        moved.accuracy_m,
        unmoved.accuracy_m
    );
}

#[test]
fn learned_siblings_do_not_make_a_mast() {
    let (_d, l) = locator();
    // Sector 51 is averaged, but its only sibling (52) is learned: no mast, no axis.
    let a = l.locate(&q(&[gsm(14, 51, Some(-53.0))], &[])).unwrap();
    assert!(distance_m(a.lat, a.lon, 52.40, 13.40) < 1.0);
}

#[test]
fn wifi_wins_when_it_agrees_with_the_cells() {
    let (_d, l) = locator();
    let a = l
        .locate(&q(
            &[gsm(10, 1, None)],
            &[ap(1, -60.0), ap(2, -60.0), ap(3, -60.0)],
        ))
        .unwrap();
    assert_eq!(a.source, Source::Wifi);
    assert!(distance_m(a.lat, a.lon, 52.5002, 13.40033) < 15.0);
    assert!(a.accuracy_m < 100.0, "{}", a.accuracy_m);
}

#[test]
fn a_5_ghz_ap_heard_as_strongly_as_a_2_4_ghz_one_is_the_nearer() {
    // APs 1 and 2, 33 m apart, heard at the same level: the same weight without a band; with
    // AP 2 on 5 GHz, its 7 dB of extra free-space loss say it is the nearer one.
    let (_d, l) = locator();
    let at = |frequency: Option<f64>| {
        let wifi = [
            ap(1, -70.0),
            WifiObs {
                frequency,
                ..ap(2, -70.0)
            },
        ];
        let a = l.locate(&q(&[], &wifi)).unwrap();
        (
            distance_m(a.lat, a.lon, 52.5001, 13.4001),
            distance_m(a.lat, a.lon, 52.5003, 13.4003),
        )
    };
    for plain in [None, Some(2437.0), Some(60_480.0)] {
        let (to_1, to_2) = at(plain);
        assert!((to_1 - to_2).abs() < 1.0, "{plain:?}: {to_1} {to_2}");
    }
    for band5 in [5180.0, 5955.0] {
        let (to_1, to_2) = at(Some(band5));
        assert!(to_2 < 0.5 * to_1, "{band5}: {to_1} {to_2}");
    }
}

#[test]
fn one_known_ap_never_answers_on_its_own() {
    let (_d, l) = locator();
    // AP 1 is known, 0x77 is not: a cluster of one; without cells there is no answer.
    assert!(l
        .locate(&q(&[], &[ap(1, -50.0), ap(0x77, -50.0)]))
        .is_none());
    // APs far apart (Berlin and Munich) form two clusters of one.
    assert!(l.locate(&q(&[], &[ap(1, -50.0), ap(9, -50.0)])).is_none());
}

#[test]
fn a_wifi_cluster_far_from_every_seen_cell_is_distrusted() {
    let (_d, l) = locator();
    // The APs say Berlin, the LTE cell says Munich.
    let a = l
        .locate(&q(&[lte(0x1A2_B3C4, None)], &[ap(1, -60.0), ap(2, -60.0)]))
        .unwrap();
    assert_eq!(a.source, Source::Cells);
    assert!(distance_m(a.lat, a.lon, 48.14, 11.58) < 1.0);
}

#[test]
fn unknown_cell_falls_back_to_its_lac_area() {
    let (_d, l) = locator();
    let a = l.locate(&q(&[gsm(10, 12345, None)], &[])).unwrap();
    assert_eq!(a.fallback, Fallback::Lacf);
    assert!(a.aged);
    assert!(a.lat > 52.49 && a.lat < 52.61);
    let unknown = [gsm(10, 12345, None)];
    let mut off = q(&unknown, &[]);
    off.options.lacf = 0;
    assert!(l.locate(&off).is_none());
}

#[test]
fn two_equal_cells_answer_between_them_with_a_radius_from_their_spread() {
    let (_d, l) = locator();
    let a = l
        .locate(&q(
            &[gsm(10, 1, Some(-80.0)), gsm(10, 12, Some(-80.0))],
            &[],
        ))
        .unwrap();
    // Equal weights: the midpoint of (52.50, 13.40) and (52.51, 13.40).
    assert!(distance_m(a.lat, a.lon, 52.505, 13.40) < 1.0);
    // Spread S = half the 1112 m between them, range 1000 m: 1.2 S (S / 1000 m)^0.25 times
    // (S / 1 km)^0.1 = 543 m, times (5.8 / 2)^0.5 for an answer from two cells, and 1.1
    // because the serving cell has no sibling sectors (no axis: nothing bounds the answer to
    // its sector).
    let s = distance_m(52.50, 13.40, 52.51, 13.40) / 2.0;
    let expected = 1.2 * s * (s / 1000.0).powf(0.35) * (5.8f64 / 2.0).sqrt() * 1.1;
    assert!(
        (a.accuracy_m - expected).abs() <= 1.0,
        "{} vs {expected}",
        a.accuracy_m
    );
}

#[test]
fn lacf_2_forces_the_area_answer() {
    let (_d, l) = locator();
    let known = [gsm(10, 1, None)];
    let mut forced = q(&known, &[]);
    forced.options.lacf = 2;
    let a = l.locate(&forced).unwrap();
    assert_eq!(a.fallback, Fallback::Lacf);
    assert!(a.accuracy_m > 750.0);
}

#[test]
fn short_cid_finds_the_28_bit_cell() {
    let (_d, l) = locator();
    let short = CellObs {
        radio: Some(Radio::Lte),
        lac: 20,
        cid: 0xB3C4,
        ..gsm(0, 0, None)
    };
    let a = l.locate(&q(&[short], &[])).unwrap();
    assert_eq!(a.fallback, Fallback::Scf);
    assert!(distance_m(a.lat, a.lon, 48.14, 11.58) < 1.0);
    let shorts = [short];
    let mut off = q(&shorts, &[]);
    off.options.scf = false;
    off.options.lacf = 0;
    assert!(l.locate(&off).is_none());
}

#[test]
fn a_cell_without_radio_is_tried_on_the_radios_its_id_fits() {
    let (_d, l) = locator();
    let unknown = CellObs {
        radio: None,
        lac: 20,
        cid: 0x1A2_B3C4,
        ..gsm(0, 0, None)
    };
    let a = l.locate(&q(&[unknown], &[])).unwrap();
    assert!(distance_m(a.lat, a.lon, 48.14, 11.58) < 1.0);
}

#[test]
fn cdma_without_mcc_is_found_by_its_sid() {
    let (_d, l) = locator();
    let cdma = CellObs {
        radio: Some(Radio::Cdma),
        mcc: None,
        mnc: 4000,
        lac: 5,
        cid: 6,
        ..gsm(0, 0, None)
    };
    let a = l.locate(&q(&[cdma], &[])).unwrap();
    assert!(distance_m(a.lat, a.lon, 40.0, -75.0) < 1.0);
}

#[test]
fn old_or_single_sample_stations_are_aged() {
    let (_d, l) = locator();
    let a = l.locate(&q(&[gsm(10, 99, None)], &[])).unwrap();
    assert!(a.aged);
}

struct FixedIp;
impl IpFallback for FixedIp {
    fn locate_ip(&self, ip: &str) -> Option<(f64, f64, f64)> {
        (ip == "203.0.113.7").then_some((51.0, 10.0, 300_000.0))
    }
}

#[test]
fn ip_fallback_answers_only_when_enabled_and_nothing_else_does() {
    let (_d, db) = fixture();
    let l = Locator::new(db).with_now(NOW).with_ip(Box::new(FixedIp));
    let mut query = q(&[], &[]);
    query.ip = Some("203.0.113.7");
    assert!(l.locate(&query).is_none());
    query.options.ipf = true;
    let a = l.locate(&query).unwrap();
    assert_eq!(
        (a.lat, a.lon, a.accuracy_m, a.fallback),
        (51.0, 10.0, 300_000.0, Fallback::Ipf)
    );
    let cells = [gsm(10, 1, None)];
    query.cells = &cells;
    assert_eq!(l.locate(&query).unwrap().fallback, Fallback::None);
}

/// "Land" is everything north of latitude 52.55.
struct NorthIsLand;
impl Border for NorthIsLand {
    fn constrain(&self, lat: f64, lon: f64, allowed_m: f64, _search_m: f64) -> (f64, f64, bool) {
        let d = distance_m(lat, lon, 52.55, lon);
        if lat >= 52.55 || d <= allowed_m {
            return (lat, lon, false);
        }
        let target = 52.55 - allowed_m / 111_195.0;
        (
            target.max(lat).min(52.55) + if allowed_m == 0.0 { 1e-5 } else { 0.0 },
            lon,
            true,
        )
    }
}

#[test]
fn border_strictness_moves_answers_toward_land() {
    let (_d, db) = fixture();
    let l = Locator::new(db)
        .with_now(NOW)
        .with_border(Box::new(NorthIsLand));
    let cells = [gsm(10, 1, None)]; // 52.50: 5.56 km from "land"
    let mut query = q(&cells, &[]);
    query.options.bt = 2;
    assert!((l.locate(&query).unwrap().lat - 52.50).abs() < 1e-9);
    query.options.bt = 1;
    let a = l.locate(&query).unwrap();
    assert!(a.lat > 52.50 && distance_m(a.lat, a.lon, 52.55, a.lon) <= 5_001.0);
    // The radius still covers where the unconstrained estimate was.
    assert!(a.accuracy_m >= distance_m(a.lat, a.lon, 52.50, 13.40) - 1.0);
    query.options.bt = 0;
    assert!(l.locate(&query).unwrap().lat >= 52.55);
}

#[test]
fn nothing_known_is_no_match() {
    let (_d, l) = locator();
    let cells = [gsm(11, 5, None)];
    let aps = [ap(0x55, -50.0), ap(0x56, -50.0)];
    let mut query = q(&cells, &aps);
    query.options.lacf = 1;
    assert!(l.locate(&query).is_none());
}

/// LTE 262/2 TAC 30: twelve eNBs 5 km apart along a parallel (mast k at (50.0, 8.0 + 0.07 k)),
/// each with sectors 1, 2 and 3 placed 300 m out at 0, 120 and 240 degrees; eNB 12 has only
/// sector 1. Held out in turn, a sector lies 450 m from its siblings' mean. TAC 31: two such
/// eNBs (20 and 21) 5 km apart further north. Every row `estimated` so.
fn sites_fixture(estimated: Estimated) -> (tempfile::TempDir, Locator) {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    let frame = whereabouts_core::geo::LocalFrame::new(50.0, 8.0);
    let enbs = (0..13u64).map(|e| (30, e, 50.0, 8.0 + 0.07 * e as f64));
    let north = (20..22u64).map(|e| (31, e, 50.5, 8.0 + 0.07 * (e - 20) as f64));
    for (tac, enb, lat, lon) in enbs.chain(north) {
        let (mx, my) = frame.to_xy(lat, lon);
        let sectors: &[u64] = if enb == 12 { &[1] } else { &[1, 2, 3] };
        for &s in sectors {
            let bearing = (s - 1) as f64 * 120f64.to_radians();
            let (lat, lon) =
                frame.to_latlon(mx + 300.0 * bearing.sin(), my + 300.0 * bearing.cos());
            let cid = enb << 8 | s;
            let row = StationInfo {
                estimated,
                ..st(lat, lon, 1000, 50)
            };
            b.push_cell(
                Radio::Lte,
                262,
                2,
                Station::new(cell_key(Radio::Lte, tac, cid), &row),
            )
            .unwrap();
        }
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    (dir, Locator::new(db).with_now(NOW))
}

fn lte_in(tac: u32, cid: u64) -> CellObs {
    CellObs {
        radio: Some(Radio::Lte),
        mnc: 2,
        lac: tac,
        cid,
        ..gsm(0, 0, None)
    }
}

fn lte_30(cid: u64) -> CellObs {
    lte_in(30, cid)
}

#[test]
fn an_unknown_sector_answers_at_its_sites_known_sectors() {
    let (_d, l) = sites_fixture(Estimated::Averaged);
    let holdout = l
        .database()
        .network_scale(Radio::Lte, 262, 2)
        .site_holdout_m;
    // 450 m within the statistics' bin (2.2%).
    assert!(
        holdout.is_some_and(|d| (d - 450.0).abs() < 10.0),
        "{holdout:?}"
    );
    let holdout = f64::from(holdout.unwrap());
    let unknown = [lte_30(3 << 8 | 4)];
    let a = l.locate(&q(&unknown, &[])).unwrap();
    assert_eq!((a.fallback, a.source), (Fallback::Lacf, Source::Site));
    assert!(a.aged);
    // At the mean of the site's three sectors: its mast.
    assert!(distance_m(a.lat, a.lon, 50.0, 8.0 + 0.07 * 3.0) < 1.0);
    // The network's held-out distance and half the way to the third-nearest other site of
    // the TAC (eNBs 2 and 4 stand 5 km away, 1 and 5 10 km), in quadrature.
    let third = distance_m(50.0, 8.0 + 0.07 * 3.0, 50.0, 8.0 + 0.07);
    let want = holdout.hypot(third / 2.0);
    assert!(
        (a.accuracy_m - want).abs() < 0.01 * want,
        "{} vs {want}",
        a.accuracy_m
    );
    // A TAC with one other site says nothing of the spacing: the larger of the held-out
    // distance and a known sector's own radius (its 1 km range, alone and off its axis).
    let sibling = l.locate(&q(&[lte_in(31, 20 << 8 | 1)], &[])).unwrap();
    assert_eq!(
        (sibling.fallback, sibling.source),
        (Fallback::None, Source::Cells)
    );
    let few = l.locate(&q(&[lte_in(31, 20 << 8 | 4)], &[])).unwrap();
    assert_eq!(few.source, Source::Site);
    assert!(sibling.accuracy_m > holdout && sibling.accuracy_m > 900.0);
    assert!(
        (few.accuracy_m - sibling.accuracy_m).abs() <= 1.0,
        "{} vs {}",
        few.accuracy_m,
        sibling.accuracy_m
    );
    // A site of one known sector answers at it.
    let lone_site = l.locate(&q(&[lte_30(12 << 8 | 2)], &[])).unwrap();
    assert_eq!(lone_site.source, Source::Site);
    assert!(distance_m(lone_site.lat, lone_site.lon, 50.0027, 8.84) < 5.0);
    // A neighbour's site is no answer: the serving cell's area is.
    let neighbour = [lte_30(40 << 8 | 1), lte_30(3 << 8 | 4)];
    assert_eq!(l.locate(&q(&neighbour, &[])).unwrap().source, Source::Area);
    // No known sector of its site: the TAC area; lacf 2 forces the area; lacf 0 answers nothing.
    assert_eq!(
        l.locate(&q(&[lte_30(40 << 8 | 1)], &[])).unwrap().source,
        Source::Area
    );
    let mut forced = q(&unknown, &[]);
    forced.options.lacf = 2;
    assert_eq!(l.locate(&forced).unwrap().source, Source::Area);
    let mut off = q(&unknown, &[]);
    off.options.lacf = 0;
    assert!(l.locate(&off).is_none());
}

#[test]
fn a_learned_sites_unknown_sector_reaches_as_far_as_its_known_ones() {
    // A learned database knows the sites its traces passed, not every site around a mast: the
    // spacing of its TAC's known sites is no reach. The larger of the held-out distance and a
    // known sector's own radius answers, as where the TAC has too few sites.
    let (_d, l) = sites_fixture(Estimated::Learned);
    let holdout = f64::from(
        l.database()
            .network_scale(Radio::Lte, 262, 2)
            .site_holdout_m
            .unwrap(),
    );
    let a = l.locate(&q(&[lte_30(3 << 8 | 4)], &[])).unwrap();
    assert_eq!(a.source, Source::Site);
    let sibling = l.locate(&q(&[lte_30(3 << 8 | 1)], &[])).unwrap();
    let want = holdout.max(sibling.accuracy_m);
    assert!(
        (a.accuracy_m - want).abs() <= 1.0,
        "{} vs {want}",
        a.accuracy_m
    );
}

#[test]
fn a_site_answer_in_a_tac_too_large_to_read_takes_its_sectors_radius() {
    // 6,700 three-sector sites 1 km apart in one TAC: 20,100 cells, more than a site answer
    // reads to find the sites around its mast. It answers as where the TAC has too few sites.
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    let frame = whereabouts_core::geo::LocalFrame::new(50.0, 8.0);
    let mut cells = Vec::new();
    for site in 0..6_700u64 {
        let (mx, my) = ((site % 100) as f64 * 1_000.0, (site / 100) as f64 * 1_000.0);
        for s in 1..=3u64 {
            let bearing = (s - 1) as f64 * 120f64.to_radians();
            let (lat, lon) =
                frame.to_latlon(mx + 300.0 * bearing.sin(), my + 300.0 * bearing.cos());
            let key = cell_key(Radio::Lte, 30, (0x1_0000 + site) << 8 | s);
            cells.push(Station::new(key, &st(lat, lon, 1000, 50)));
        }
    }
    cells.sort_unstable_by_key(|s| s.key);
    for c in cells {
        b.push_cell(Radio::Lte, 262, 2, c).unwrap();
    }
    b.commit().unwrap();
    let l = Locator::new(Database::open(dir.path()).unwrap()).with_now(NOW);
    let holdout = f64::from(
        l.database()
            .network_scale(Radio::Lte, 262, 2)
            .site_holdout_m
            .unwrap(),
    );
    let site = (0x1_0000 + 5_050) << 8;
    let a = l.locate(&q(&[lte_30(site | 4)], &[])).unwrap();
    assert_eq!(a.source, Source::Site);
    let sibling = l.locate(&q(&[lte_30(site | 1)], &[])).unwrap();
    // Read, the third-nearest site 1.41 km away would give hypot(450, 707) = 838 m.
    let want = holdout.max(sibling.accuracy_m);
    assert!(want > 900.0, "{want}");
    assert!(
        (a.accuracy_m - want).abs() <= 1.0,
        "{} vs {want}",
        a.accuracy_m
    );
}
