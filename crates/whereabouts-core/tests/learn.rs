//! `whereabouts learn`: the three observation formats, outlier rejection, the
//! hand-off into the station database, and the moved-station rule, checked
//! through the database that results. Fixtures are hand-made (invented places).

use std::fs;
use std::path::{Path, PathBuf};

use whereabouts_core::geo::{destination, distance_m};
use whereabouts_core::import::{import_files, ImportOptions};
use whereabouts_core::learn::{
    learn_files, LearnError, LearnOptions, LearnReport, ObservationFormat, BLOCKLIST_FILE,
};
use whereabouts_core::radio::Radio;
use whereabouts_core::store::record::Estimated;
use whereabouts_core::store::Database;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/learn")
        .join(name)
}

fn learn(dir: &Path, files: &[PathBuf], opts: &LearnOptions) -> Result<LearnReport, LearnError> {
    learn_files(dir, files, opts, &mut |_| true)
}

fn with_net() -> LearnOptions {
    LearnOptions {
        mcc: Some(272),
        mnc: Some(1),
        ..LearnOptions::default()
    }
}

#[test]
fn held_out_lines_are_not_learned() {
    let tmp = tempfile::tempdir().unwrap();
    // Line 15 is the GSM cell's only observation; the LTE cell keeps its others.
    let opts = LearnOptions {
        held_out: vec![vec![2, 15]],
        ..with_net()
    };
    let r = learn(tmp.path(), &[fixture("opencellid.csv")], &opts).unwrap();
    assert_eq!(
        r.files[0].accepted, 14,
        "held-out rows are still read and counted"
    );
    assert_eq!(r.observations, 12);
    let db = Database::open(tmp.path()).unwrap();
    assert!(db.cell(Radio::Gsm, 1, 1, 7, 300).is_none());
    assert!(db.cell(Radio::Lte, 1, 1, 100, 5000).is_some());

    let (report, obs) =
        whereabouts_core::learn::read::read_observations(&fixture("opencellid.csv"), &with_net())
            .unwrap();
    assert_eq!(report.accepted, 14);
    let lines: Vec<u64> = obs.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, (2..=15).collect::<Vec<_>>());
}

#[test]
fn opencellid_measurements() {
    let tmp = tempfile::tempdir().unwrap();
    let r = learn(tmp.path(), &[fixture("opencellid.csv")], &with_net()).unwrap();
    let f = &r.files[0];
    assert_eq!(f.format, ObservationFormat::OpenCellIdMeasurements);
    assert_eq!((f.rows, f.accepted, f.rejected), (16, 14, 2));
    assert_eq!(
        f.bad_lines.iter().map(|b| b.0).collect::<Vec<_>>(),
        [16, 17]
    );
    assert_eq!((r.added, r.outliers, r.cells), (2, 1, 2));

    let db = Database::open(tmp.path()).unwrap();
    let c = db
        .cell(Radio::Lte, 1, 1, 100, 5000)
        .expect("LTE cell learned");
    // The ring's centre; the fix 30 km away was dropped, not averaged in.
    assert!(distance_m(c.lat(), c.lon(), 50.0, 8.0) < 10.0);
    assert_eq!(c.samples(), 12);
    // A cell's range is twice the distance holding 90% of its kept observations (800 m
    // here), or twice the reach of their timing advances if more (TA 5: up to 6 LTE steps,
    // 937 m), shrunk towards 500 m weighing one pass: the ring is one pass, sightings a
    // minute apart (learn/estimate.rs).
    assert!((714..=724).contains(&c.range_m()), "{}", c.range_m());
    assert_eq!(c.psc(), Some(42));
    assert_eq!(c.estimated(), Estimated::Learned);
    // A cell seen once gets the radio's default reach.
    let g = db.cell(Radio::Gsm, 1, 1, 7, 300).unwrap();
    assert_eq!((g.samples(), g.range_m()), (1, 3000));
}

#[test]
fn gnettrack_needs_a_network_and_maps_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let err = learn(
        tmp.path(),
        &[fixture("gnettrack.csv")],
        &LearnOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("--mcc"), "{err}");
    assert!(!tmp.path().join("manifest.json").exists());

    let r = learn(tmp.path(), &[fixture("gnettrack.csv")], &with_net()).unwrap();
    let f = &r.files[0];
    assert_eq!(f.format, ObservationFormat::GNetTrack);
    assert_eq!((f.rows, f.accepted, f.rejected), (16, 14, 2));
    assert!(f.bad_lines[0].1.contains("TAC 0"), "{:?}", f.bad_lines);
    assert!(f.bad_lines[1].1.contains("Satellite"));
    let db = Database::open(tmp.path()).unwrap();
    let lte = db
        .cell(Radio::Lte, 272, 1, 0x64, 128003)
        .expect("5G row -> LTE cell");
    // A 250 m ring whose signal fades from -85 dBm (north) to -94 dBm going round
    // through east, south and west: well inside the ring, drawn to the strong side
    // by the signal weight and the mode search (docs/learning.md).
    let d = distance_m(lte.lat(), lte.lon(), 51.0, -1.0);
    assert!(
        d < 150.0 && lte.lat() > 51.0,
        "{d} m: {} {}",
        lte.lat(),
        lte.lon()
    );
    assert_eq!(lte.samples(), 10);
    let umts = db
        .cell(Radio::Umts, 272, 1, 0xC8, 1000)
        .expect("HSPA+ -> UMTS");
    assert!(distance_m(umts.lat(), umts.lon(), 51.0, -1.01) < 10.0);
}

/// `gnettrack-log.txt`: twelve rows of the Dakar G-NetTrack Pro logs (braz0101/GNetTrackAnalytics,
/// MIT; NOTICE), two operators' rows mixed, CRLF line ends kept.
#[test]
fn gnettrack_log_splits_cell_ids_and_reads_timing_advance() {
    let (report, obs) = whereabouts_core::learn::read::read_observations(
        &fixture("gnettrack-log.txt"),
        &LearnOptions::default(),
    )
    .unwrap();
    assert_eq!(report.format, ObservationFormat::GNetTrackLog);
    assert_eq!((report.rows, report.accepted, report.rejected), (12, 10, 2));
    assert!(
        report.bad_lines[0].1.contains("CellID 0"),
        "{:?}",
        report.bad_lines
    );
    assert!(report.bad_lines[1].1.contains("NetworkTech \"--\""));
    let key = |radio, mcc, mnc, lac, cid| whereabouts_core::learn::StationKey::Cell {
        radio,
        mcc,
        mnc,
        key: whereabouts_core::store::record::cell_key(radio, lac, cid),
    };
    // LTE: eNB 1059 sector 1 is ECI 1059 * 256 + 1; the network from each row's Operator.
    let yas_lte = key(Radio::Lte, 608, 2, 701, 1059 * 256 + 1);
    assert_eq!(obs.iter().filter(|(_, o)| o.key == yas_lte).count(), 6);
    let (_, o) = &obs[1];
    assert_eq!(o.key, yas_lte);
    assert_eq!(o.signal_dbm, Some(-93.0));
    assert_eq!(o.psc, Some(459));
    // TA 5 on LTE: five steps of 78.12 m; the first row states none.
    assert!((o.ta_m.unwrap() - 5.0 * 78.12).abs() < 1e-9);
    assert_eq!(obs[0].1.ta_m, None);
    assert_eq!(o.time, Some(1_752_876_736));
    // UMTS: RNC 5, cell 11542 is the 28-bit id 5 * 65536 + 11542; no TA on 3G.
    let umts = obs
        .iter()
        .filter(|(_, o)| o.key == key(Radio::Umts, 608, 2, 43, 5 * 65_536 + 11_542));
    assert_eq!(umts.clone().count(), 2);
    assert!(umts.clone().all(|(_, o)| o.ta_m.is_none()));
    assert_eq!(
        obs.iter()
            .filter(|(_, o)| o.key == key(Radio::Lte, 608, 3, 4112, 1171 * 256 + 5))
            .count(),
        2
    );

    // And learned: no --mcc/--mnc needed, the rows name their network.
    let tmp = tempfile::tempdir().unwrap();
    let r = learn(
        tmp.path(),
        &[fixture("gnettrack-log.txt")],
        &LearnOptions::default(),
    )
    .unwrap();
    assert_eq!(r.files[0].accepted, 10);
    let db = Database::open(tmp.path()).unwrap();
    let lte = db
        .cell(Radio::Lte, 608, 2, 701, 1059 * 256 + 1)
        .expect("learned");
    assert!(distance_m(lte.lat(), lte.lon(), 14.66535, -17.43595) < 50.0);
    assert!(db
        .cell(Radio::Umts, 608, 2, 43, 5 * 65_536 + 11_542)
        .is_some());
}

#[test]
fn wigle_wifi_only_and_never_nomap() {
    let tmp = tempfile::tempdir().unwrap();
    let r = learn(tmp.path(), &[fixture("wigle.csv")], &with_net()).unwrap();
    let f = &r.files[0];
    assert_eq!(f.format, ObservationFormat::Wigle);
    assert_eq!((f.rows, f.accepted, f.rejected, f.skipped), (9, 6, 1, 2));
    let db = Database::open(tmp.path()).unwrap();
    assert_eq!(db.stats().wifi, 1);
    let ap = db.wifi(0x0200_0000_0001).unwrap();
    // Inside the 40 m ring, pulled toward the sharper, stronger fixes.
    assert!(distance_m(ap.lat(), ap.lon(), 48.0, 2.0) < 30.0);
    assert!(db.wifi(0x0200_0000_0002).is_none(), "_nomap stored");
}

#[test]
fn unknown_format_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("x.csv");
    fs::write(&f, "a,b,c\n1,2,3\n").unwrap();
    let err = learn(&tmp.path().join("db"), &[f], &with_net()).unwrap_err();
    assert!(matches!(err, LearnError::Format(_)), "{err}");
}

/// Learned stations join the stations already imported; the rest are kept.
#[test]
fn merges_into_an_imported_database() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("cells.csv");
    fs::write(
        &csv,
        "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n\
         LTE,1,1,100,5000,,8.0010,50.0,1000,12,1,1600000000,1600000000,0\n\
         GSM,1,1,9,9,,9.0,51.0,2000,3,1,1600000000,1600000000,0\n",
    )
    .unwrap();
    let db_dir = tmp.path().join("db");
    import_files(&db_dir, &[csv], &ImportOptions::default(), &mut |_| true).unwrap();
    let r = learn(&db_dir, &[fixture("opencellid.csv")], &with_net()).unwrap();
    assert_eq!((r.added, r.refined, r.cells), (1, 1, 3));
    let db = Database::open(&db_dir).unwrap();
    let c = db.cell(Radio::Lte, 1, 1, 100, 5000).unwrap();
    // 12 imported samples at 8.0010 and 12 learned ones at 8.0: halfway.
    assert!((c.lon() - 8.0005).abs() < 2e-5, "{}", c.lon());
    assert_eq!(c.samples(), 24);
    // Half imported, half learned: still the crowd average it was (learned only when the
    // learned samples weigh more).
    assert_eq!(c.estimated(), Estimated::Averaged);
    let g = db.cell(Radio::Gsm, 1, 1, 9, 9).unwrap();
    assert_eq!(g.estimated(), Estimated::Averaged);
    assert_eq!(
        db.cell(Radio::Gsm, 1, 1, 7, 300).unwrap().estimated(),
        Estimated::Learned
    );
}

fn measurements(rows: &[(f64, f64, i64)]) -> String {
    let mut s = String::from(
        "mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid\n",
    );
    for (lat, lon, t) in rows {
        s += &format!("1,1,,77,{lat},{lon},-90,{},10,0,0,LTE,,,5,,,,\n", t * 1000);
    }
    s
}

fn ring(lat: f64, lon: f64, t0: i64, n: usize) -> Vec<(f64, f64, i64)> {
    (0..n)
        .map(|i| {
            let (la, lo) = destination(lat, lon, i as f64 * 360.0 / n as f64, 300.0);
            (la, lo, t0 + i as i64 * 3600)
        })
        .collect()
}

/// A cell whose recent observations sit 40 km from its old ones is withdrawn
/// and blocklisted; observations after the block period bring it back at the
/// new place.
#[test]
fn moved_station_is_blocked_then_relearned() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = tmp.path().join("db");
    let day = 86_400;
    let t0 = 1_700_000_000;
    let mut rows = ring(50.0, 8.0, t0, 8);
    rows.extend(ring(50.3, 8.3, t0 + 20 * day, 6));
    let f1 = tmp.path().join("a.csv");
    fs::write(&f1, measurements(&rows)).unwrap();
    let r = learn(&db_dir, &[f1], &with_net()).unwrap();
    assert_eq!((r.moved, r.blocked, r.cells), (1, 1, 0));
    let list = fs::read_to_string(db_dir.join(BLOCKLIST_FILE)).unwrap();
    assert!(list.contains("lte/1/1/5/77"), "{list}");

    // Still inside the block period: ignored, still withdrawn.
    let f2 = tmp.path().join("b.csv");
    fs::write(&f2, measurements(&ring(50.3, 8.3, t0 + 30 * day, 6))).unwrap();
    let r = learn(&db_dir, &[f2], &with_net()).unwrap();
    assert_eq!((r.blocked, r.cells), (1, 0));

    // After it: re-learned from the fresh observations only.
    let f3 = tmp.path().join("c.csv");
    fs::write(&f3, measurements(&ring(50.3, 8.3, t0 + 60 * day, 6))).unwrap();
    let r = learn(&db_dir, &[f3], &with_net()).unwrap();
    assert_eq!((r.relearned, r.blocked, r.cells), (1, 0, 1));
    let db = Database::open(&db_dir).unwrap();
    let c = db.cell(Radio::Lte, 1, 1, 5, 77).unwrap();
    assert!(distance_m(c.lat(), c.lon(), 50.3, 8.3) < 10.0);
    assert_eq!(c.samples(), 6);
    assert!(!fs::read_to_string(db_dir.join(BLOCKLIST_FILE))
        .unwrap()
        .contains("lte/1/1/5/77"));
}

/// A database station (LTE 1/1/5/77 at 50.0, 8.0, 40 samples) imported into `db_dir`.
fn imported_station(tmp: &Path) -> PathBuf {
    let csv = tmp.join("cells.csv");
    fs::write(
        &csv,
        "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n\
         LTE,1,1,5,77,,8.0,50.0,1000,40,1,1600000000,1600000000,0\n",
    )
    .unwrap();
    let db_dir = tmp.join("db");
    import_files(&db_dir, &[csv], &ImportOptions::default(), &mut |_| true).unwrap();
    db_dir
}

/// Far rows too few to agree on a new place neither withdraw a database
/// station nor move it: they are outliers.
#[test]
fn a_lone_far_row_is_an_outlier_not_a_move() {
    let tmp = tempfile::tempdir().unwrap();
    let db_dir = imported_station(tmp.path());
    let mut rows = ring(50.0, 8.0, 1_700_000_000, 4);
    rows.push((50.5, 8.5, 1_700_000_000 + 100));
    let f = tmp.path().join("a.csv");
    fs::write(&f, measurements(&rows)).unwrap();
    let r = learn(&db_dir, &[f], &with_net()).unwrap();
    assert_eq!((r.moved, r.blocked, r.refined, r.outliers), (0, 0, 1, 1));
    let db = Database::open(&db_dir).unwrap();
    let c = db.cell(Radio::Lte, 1, 1, 5, 77).unwrap();
    assert!(distance_m(c.lat(), c.lon(), 50.0, 8.0) < 10.0);
    assert_eq!(c.samples(), 44);
}

/// A database station far from what devices now report is withdrawn too.
#[test]
fn moved_against_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("cells.csv");
    fs::write(
        &csv,
        "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n\
         LTE,1,1,5,77,,8.0,50.0,1000,40,1,1600000000,1600000000,0\n",
    )
    .unwrap();
    let db_dir = tmp.path().join("db");
    import_files(&db_dir, &[csv], &ImportOptions::default(), &mut |_| true).unwrap();
    let f = tmp.path().join("a.csv");
    fs::write(&f, measurements(&ring(50.5, 8.5, 1_700_000_000, 6))).unwrap();
    let r = learn(&db_dir, &[f], &with_net()).unwrap();
    assert_eq!((r.moved, r.blocked, r.cells), (1, 1, 0));
    assert!(Database::open(&db_dir)
        .unwrap()
        .cell(Radio::Lte, 1, 1, 5, 77)
        .is_none());
}

/// An OpenCelliD measurement CSV of sectors 1 and 2 of LTE 272/1 eNB 4000 (TAC 100), seen
/// along two streets near a mast at `mast`, each row with the timing advance the mast gives.
fn walked_past_a_mast(path: &Path, mast: (f64, f64)) {
    let mut csv =
        String::from("mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid\n");
    let frame = whereabouts_core::geo::LocalFrame::new(mast.0, mast.1);
    let mut t = 1_700_000_000_000u64;
    let mut row = |cid: u64, x: f64, y: f64| {
        let (lat, lon) = frame.to_latlon(x, y);
        let ta = (x.hypot(y) / 78.12).floor();
        t += 60_000;
        csv.push_str(&format!(
            "272,1,,{cid},{lat:.6},{lon:.6},-95,{t},10,1,0,LTE,{ta},,100,42,,,\n"
        ));
    };
    for i in 0..20 {
        // Sector 1: a street 300 m north of the mast; sector 2: one 500 m east of it.
        row(4000 * 256 + 1, -600.0 + i as f64 * 63.0, 300.0);
        row(4000 * 256 + 2, 500.0, -600.0 + i as f64 * 63.0);
    }
    fs::write(path, csv).unwrap();
}

/// The answer for LTE 272/1 cell `cid` of TAC 100 heard alone at `signal`, with advance `ta`.
fn locate_lte(
    locator: &whereabouts_core::solve::Locator,
    cid: u64,
    signal: Option<f64>,
    ta: Option<f64>,
) -> whereabouts_core::solve::Answer {
    use whereabouts_core::solve::{CellObs, Options, Query};
    let cells = [CellObs {
        radio: Some(Radio::Lte),
        mcc: Some(272),
        mnc: 1,
        lac: 100,
        cid,
        signal,
        asu: None,
        ta,
        psc: None,
    }];
    let q = Query {
        cells: &cells,
        wifi: &[],
        ip: None,
        options: Options::default(),
    };
    locator.locate(&q).expect("an answer")
}

#[test]
fn timing_advances_fit_the_sites_mast_and_put_a_serving_cell_on_its_ring() {
    use whereabouts_core::solve::Locator;
    let tmp = tempfile::tempdir().unwrap();
    let mast = (51.9, -8.47);
    let csv = tmp.path().join("walk.csv");
    walked_past_a_mast(&csv, mast);
    let dir = tmp.path().join("db");
    let r = learn(&dir, &[csv], &LearnOptions::default()).unwrap();
    assert_eq!(r.masts, 1);
    let db = Database::open(&dir).unwrap();
    let fitted = db
        .learned_mast(Radio::Lte, 272, 1, 4000 * 256 + 2)
        .expect("the site's mast");
    let off = distance_m(fitted.lat, fitted.lon, mast.0, mast.1);
    assert!(off < 40.0, "{off} m from the mast");
    assert!(db
        .learned_mast(Radio::Lte, 272, 1, 4001 * 256 + 1)
        .is_none());
    let sector = db.cell(Radio::Lte, 272, 1, 100, 4000 * 256 + 1).unwrap();

    let locator = Locator::new(db);
    let locate = |ta: Option<f64>| locate_lte(&locator, 4000 * 256 + 1, Some(-95.0), ta);
    // Without an advance: the learned position.
    let plain = locate(None);
    assert!(distance_m(plain.lat, plain.lon, sector.lat(), sector.lon()) < 1.0);
    // Advance 8 (625-703 m, a step either way: 547-781 m): out along the line from the mast
    // through the learned position (about 300 m out) to the ring's inner edge.
    let ringed = locate(Some(8.0));
    let from_mast = distance_m(fitted.lat, fitted.lon, ringed.lat, ringed.lon);
    assert!((from_mast - 7.0 * 78.12).abs() < 2.0, "{from_mast}");
    let along = distance_m(ringed.lat, ringed.lon, sector.lat(), sector.lon())
        + distance_m(fitted.lat, fitted.lon, sector.lat(), sector.lon());
    assert!(
        (along - from_mast).abs() < 2.0,
        "off the line: {along} vs {from_mast}"
    );

    // A later run without advances keeps the mast while the site's cells stay learned.
    let wifi = tmp.path().join("wigle.csv");
    fs::copy(fixture("wigle.csv"), &wifi).unwrap();
    let r = learn(&dir, &[wifi], &LearnOptions::default()).unwrap();
    assert_eq!(r.masts, 1);
    let db = Database::open(&dir).unwrap();
    let kept = db.learned_mast(Radio::Lte, 272, 1, 4000 * 256 + 1).unwrap();
    assert_eq!((kept.lat, kept.lon), (fitted.lat, fitted.lon));
    drop(db);

    // A generation whose cells of the site are no longer learned drops it.
    use whereabouts_core::store::record::{cell_key, Station, StationInfo};
    use whereabouts_core::store::{BuildOptions, DbBuilder};
    let mut b = DbBuilder::new(&dir, BuildOptions::default()).unwrap();
    let info = StationInfo {
        lat: sector.lat(),
        lon: sector.lon(),
        range_m: 500,
        samples: 10,
        psc: None,
        created: 1_700_000_000,
        updated: 1_700_000_000,
        estimated: Estimated::Averaged,
    };
    let key = cell_key(Radio::Lte, 100, 4000 * 256 + 1);
    b.push_cell(Radio::Lte, 272, 1, Station::new(key, &info))
        .unwrap();
    assert_eq!(b.commit().unwrap().1.learned_masts, 0);
    let db = Database::open(&dir).unwrap();
    assert!(db
        .learned_mast(Radio::Lte, 272, 1, 4000 * 256 + 1)
        .is_none());
}

/// An OpenCelliD measurement CSV of LTE 272/1 cell `cid` (TAC 100) driven along one road west
/// to east, 2 km through `origin`, on `passes` days: heard at -70 dBm at the west end, 40 dB
/// weaker at the east end; with `mast` (metres east and north of `origin`), each row has the
/// timing advance that mast gives.
fn driven_road(path: &Path, origin: (f64, f64), cid: u64, passes: u64, mast: Option<(f64, f64)>) {
    let mut csv =
        String::from("mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid\n");
    let frame = whereabouts_core::geo::LocalFrame::new(origin.0, origin.1);
    for day in 0..passes {
        for i in 0..=80 {
            let x = -1_000.0 + i as f64 * 25.0;
            let (lat, lon) = frame.to_latlon(x, 0.0);
            let signal = (-70.0 - 40.0 * (x + 1_000.0) / 2_000.0).round();
            let t = 1_700_000_000_000u64 + day * 86_400_000 + i as u64 * 2_000;
            let ta = mast.map_or(String::new(), |(mx, my)| {
                ((x - mx).hypot(my) / 78.12).floor().to_string()
            });
            csv.push_str(&format!(
                "272,1,,{cid},{lat:.6},{lon:.6},{signal},{t},10,12,0,LTE,{ta},,100,42,,,\n"
            ));
        }
    }
    fs::write(path, csv).unwrap();
}

#[test]
fn a_learned_cell_heard_at_an_advance_answers_where_its_drives_were_that_far_from_the_mast() {
    use whereabouts_core::solve::Locator;
    let tmp = tempfile::tempdir().unwrap();
    let origin = (51.9, -8.47);
    // Driven on three days with the advances of a mast 100 m off the road's west end: each
    // advance's distances from the mast cross the road once.
    let cid = 9100 * 256 + 1;
    let file = tmp.path().join("road.csv");
    driven_road(&file, origin, cid, 3, Some((-1_100.0, -100.0)));
    let dir = tmp.path().join("db");
    let report = learn(&dir, &[file], &LearnOptions::default()).unwrap();
    assert_eq!(report.advances, 1);
    let db = Database::open(&dir).unwrap();
    let key = whereabouts_core::store::record::cell_key(Radio::Lte, 100, cid);
    let advances = db.learned_advances(Radio::Lte, 272, 1, key).to_vec();
    assert!(advances.len() > 10, "{advances:?}");
    let mast = db
        .learned_mast(Radio::Lte, 272, 1, cid)
        .expect("a mast fitted from the advances");
    let locator = Locator::new(db);
    let frame = whereabouts_core::geo::LocalFrame::new(origin.0, origin.1);
    // Advance 10 (703-937 m from the mast) meets the road from 404 to 168 m west of its
    // middle: heard without a level, the cell answers there, not on the ring along its
    // estimate's bearing, and claims that stretch, not the ring's radius.
    let a = locate_lte(&locator, cid, None, Some(10.0));
    let (lat, lon) = frame.to_latlon(-286.0, 0.0);
    let off = distance_m(a.lat, a.lon, lat, lon);
    assert!(off < 80.0, "{off} m from the road's stretch at advance 10");
    let from_mast = distance_m(a.lat, a.lon, mast.lat, mast.lon);
    assert!(
        (from_mast - 10.5 * 78.12).abs() <= 1.5 * 78.12,
        "{from_mast} m from the mast"
    );
    assert!(a.accuracy_m < 150.0, "{}", a.accuracy_m);
    // An advance the drives never reached: the ring along the estimate's bearing, as before.
    let far = locate_lte(&locator, cid, None, Some(40.0));
    let from_mast = distance_m(far.lat, far.lon, mast.lat, mast.lon);
    assert!(
        (from_mast - 40.5 * 78.12).abs() <= 1.5 * 78.12 + 1.0,
        "{from_mast} m"
    );
}

#[test]
fn a_learned_cell_heard_at_a_level_answers_where_its_drives_heard_it_so() {
    use whereabouts_core::solve::Locator;
    let tmp = tempfile::tempdir().unwrap();
    let origin = (51.9, -8.47);
    // Driven on three days; on one; on three with the advances of a mast 300 m south.
    let (three, once, masted) = (9000 * 256 + 1, 9001 * 256 + 1, 9002 * 256 + 1);
    let files = [
        (three, 3, None),
        (once, 1, None),
        (masted, 3, Some((0.0, -300.0))),
    ]
    .map(|(cid, passes, mast)| {
        let f = tmp.path().join(format!("{cid}.csv"));
        driven_road(&f, origin, cid, passes, mast);
        f
    });
    let dir = tmp.path().join("db");
    learn(&dir, &files, &LearnOptions::default()).unwrap();
    let db = Database::open(&dir).unwrap();
    let key = |cid| whereabouts_core::store::record::cell_key(Radio::Lte, 100, cid);
    let levels = db.learned_levels(Radio::Lte, 272, 1, key(three)).to_vec();
    assert!(levels.len() > 10, "{levels:?}");
    // One pass says nothing of where the next device at a level will be.
    assert!(db.learned_levels(Radio::Lte, 272, 1, key(once)).is_empty());
    let estimate = db.cell(Radio::Lte, 272, 1, 100, three).unwrap();
    let (estimate_lat, estimate_lon) = (estimate.lat(), estimate.lon());

    let locator = Locator::new(db);
    let locate = |signal: Option<f64>, ta: Option<f64>| locate_lte(&locator, three, signal, ta);
    let frame = whereabouts_core::geo::LocalFrame::new(origin.0, origin.1);
    // Strong near the west end, weak near the east end: each answer is where the drives
    // heard the cell so, within about its level's stretch of road, and claims that stretch.
    // An advance changes nothing without a mast to read it from.
    for (signal, x) in [(-72.0, -950.0), (-90.0, 0.0), (-108.0, 950.0)] {
        for ta in [None, Some(3.0)] {
            let a = locate(Some(signal), ta);
            let (want_lat, want_lon) = frame.to_latlon(x, 0.0);
            let off = distance_m(a.lat, a.lon, want_lat, want_lon);
            assert!(off < 150.0, "{signal} dBm {ta:?}: {off} m from {x}");
            assert!(a.accuracy_m < 300.0, "{signal} dBm: {}", a.accuracy_m);
        }
    }
    // No level, or a level the drives never heard: the cell's estimate.
    for signal in [None, Some(-40.0)] {
        let a = locate(signal, None);
        let off = distance_m(a.lat, a.lon, estimate_lat, estimate_lon);
        assert!(off < 1.0, "{signal:?}: {off} m");
    }
    // With a learned mast, an advance puts the cell on the mast's ring along its level's
    // bearing (without one, the level alone places it), and it claims the level's spread.
    // An advance of 6: 6.5 steps of 78.12 m.
    let at = |signal, ta| locate_lte(&locator, masted, Some(signal), ta);
    let (west, east) = (at(-72.0, None), at(-108.0, None));
    assert!(distance_m(west.lat, west.lon, east.lat, east.lon) > 1_000.0);
    let mast = locator
        .database()
        .learned_mast(Radio::Lte, 272, 1, masted)
        .expect("a mast fitted from the advances");
    let ring_m = 6.5 * 78.12;
    for (signal, x) in [(-72.0, -950.0), (-108.0, 950.0)] {
        let a = at(signal, Some(6.0));
        let from_mast = distance_m(a.lat, a.lon, mast.lat, mast.lon);
        // Within the advance's interval (a step and a half either side of its middle).
        assert!(
            (from_mast - ring_m).abs() <= 1.5 * 78.12 + 1.0,
            "{signal} dBm: {from_mast} m from the mast"
        );
        // The level's bearing from the mast (300 m south of the road): towards x on the road.
        let (lat, lon) = frame.to_latlon(x, 0.0);
        let around = whereabouts_core::geo::LocalFrame::new(mast.lat, mast.lon);
        let (dx, dy) = around.to_xy(lat, lon);
        let k = from_mast / dx.hypot(dy);
        let want = around.to_latlon(k * dx, k * dy);
        let off = distance_m(a.lat, a.lon, want.0, want.1);
        assert!(off < 40.0, "{signal} dBm: {off} m off the level's bearing");
        assert!(a.accuracy_m < 300.0, "{signal} dBm: {}", a.accuracy_m);
    }
    drop(locator);

    // A later run that does not hear the cell keeps its levels.
    let wifi = tmp.path().join("wigle.csv");
    fs::copy(fixture("wigle.csv"), &wifi).unwrap();
    learn(&dir, &[wifi], &LearnOptions::default()).unwrap();
    let db = Database::open(&dir).unwrap();
    assert_eq!(
        db.learned_levels(Radio::Lte, 272, 1, key(three)),
        levels.as_slice()
    );
    assert!(!db
        .learned_levels(Radio::Lte, 272, 1, key(masted))
        .is_empty());

    // Live learning refines the first cell on its road and sees the masted one 20 km north:
    // the compaction keeps the refined cell's levels and drops the moved one's.
    use whereabouts_core::learn::{compact::compact, overlay::Overlay, Observation, StationKey};
    let locator = Locator::new(db).with_overlay(Overlay::open(&dir).unwrap());
    let sighting = |cid, x: f64, y: f64, i: i64| {
        let (lat, lon) = frame.to_latlon(x, y);
        Observation {
            key: StationKey::Cell {
                radio: Radio::Lte,
                mcc: 272,
                mnc: 1,
                key: key(cid),
            },
            lat,
            lon,
            accuracy_m: Some(5.0),
            time: Some(1_800_000_000 + i),
            speed_mps: None,
            signal_dbm: None,
            ta_m: None,
            psc: None,
            source: None,
        }
    };
    let mut obs: Vec<Observation> = (0..3)
        .map(|i| sighting(three, -500.0 + 500.0 * i as f64, 0.0, i))
        .collect();
    obs.extend((0..4).map(|i| sighting(masted, 200.0 * i as f64, 20_000.0, 10 + i)));
    let report = locator
        .overlay()
        .learn(&locator.database(), obs, &LearnOptions::default())
        .unwrap();
    assert_eq!((report.refined, report.moved), (1, 1), "{report:?}");
    compact(&locator).unwrap();
    let db = locator.database();
    assert_eq!(
        db.learned_levels(Radio::Lte, 272, 1, key(three)),
        levels.as_slice()
    );
    assert!(db
        .learned_levels(Radio::Lte, 272, 1, key(masted))
        .is_empty());
}
