//! The learned-station overlay and its compaction: lookup precedence, the
//! blocklist, persistence, the folded generation, crash safety and readers
//! during a generation switch. Hand-made stations around Berlin.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use whereabouts_core::geo::{destination, distance_m};
use whereabouts_core::learn::compact::{compact, Compactor, Thresholds};
use whereabouts_core::learn::overlay::{Lookup, Overlay, LEARNED_FILE};
use whereabouts_core::learn::{LearnOptions, Observation, Source, StationKey};
use whereabouts_core::radio::Radio;
use whereabouts_core::solve::{Answer, CellObs, Locator, Options, Query, WifiObs};
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};

const NOW: i64 = 1_700_000_000;

fn info(lat: f64, lon: f64, samples: u32) -> StationInfo {
    StationInfo {
        lat,
        lon,
        range_m: 1000,
        samples,
        psc: None,
        created: NOW - 400 * 86_400,
        updated: NOW - 10 * 86_400,
        estimated: Estimated::Averaged,
    }
}

fn cell_key_of(cid: u64) -> StationKey {
    StationKey::Cell {
        radio: Radio::Gsm,
        mcc: 262,
        mnc: 1,
        key: cell_key(Radio::Gsm, 10, cid),
    }
}

/// GSM 262/1 LAC 10 cells 1 (52.50, 13.40, 20 samples) and 2 (52.60, 13.40);
/// WiFi APs 1 and 2 near (52.50, 13.40).
fn database(dir: &Path) {
    let mut b = DbBuilder::new(dir, BuildOptions::default()).unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 10, 1), &info(52.50, 13.40, 20)),
    )
    .unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 10, 2), &info(52.60, 13.40, 20)),
    )
    .unwrap();
    b.push_wifi(Station::new(1, &info(52.5001, 13.4001, 5)))
        .unwrap();
    b.push_wifi(Station::new(2, &info(52.5003, 13.4003, 5)))
        .unwrap();
    b.commit().unwrap();
}

fn open(dir: &Path) -> Locator {
    Locator::new(Database::open(dir).unwrap())
        .with_overlay(Overlay::open(dir).unwrap())
        .with_now(NOW)
}

/// `n` sightings of `key` on a 200 m ring around (lat, lon), at `time`.
fn ring(key: StationKey, lat: f64, lon: f64, n: usize, time: i64) -> Vec<Observation> {
    (0..n)
        .map(|i| {
            let (la, lo) = destination(lat, lon, i as f64 * 360.0 / n as f64, 200.0);
            Observation {
                key,
                lat: la,
                lon: lo,
                accuracy_m: Some(10.0),
                time: Some(time + i as i64),
                speed_mps: None,
                signal_dbm: None,
                ta_m: None,
                psc: None,
                source: None,
            }
        })
        .collect()
}

fn learn(l: &Locator, obs: Vec<Observation>) {
    l.overlay()
        .learn(&l.database(), obs, &LearnOptions::default())
        .unwrap();
}

fn gsm(cid: u64) -> CellObs {
    CellObs {
        radio: Some(Radio::Gsm),
        mcc: Some(262),
        mnc: 1,
        lac: 10,
        cid,
        signal: None,
        asu: None,
        ta: None,
        psc: None,
    }
}

/// The answer from one cell, without fallbacks (no LAC area for an unknown cell).
fn locate_cell(l: &Locator, cid: u64) -> Option<Answer> {
    let cells = [gsm(cid)];
    l.locate(&Query {
        cells: &cells,
        wifi: &[],
        ip: None,
        options: Options {
            lacf: 0,
            scf: false,
            ..Options::default()
        },
    })
}

#[test]
fn a_learned_station_refines_the_database_and_is_seen_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    let before = locate_cell(&l, 1).unwrap();
    assert!(distance_m(before.lat, before.lon, 52.50, 13.40) < 5.0);
    assert!(l.overlay().is_empty());

    // 10 sightings centred 1.1 km north: not a move, a refinement weighted 20 : 10.
    learn(&l, ring(cell_key_of(1), 52.51, 13.40, 10, NOW));
    let after = locate_cell(&l, 1).unwrap();
    let want = (52.50 * 20.0 + 52.51 * 10.0) / 30.0;
    assert!(
        distance_m(after.lat, after.lon, want, 13.40) < 15.0,
        "{after:?}"
    );
    match l.overlay().view().unwrap().get(&cell_key_of(1)) {
        Lookup::Learned(s) => assert_eq!(s.samples(), 30),
        other => panic!("{other:?}"),
    }

    // A cell the database lacks is found through the overlay alone.
    assert!(locate_cell(&l, 7).is_none());
    learn(&l, ring(cell_key_of(7), 52.40, 13.30, 5, NOW));
    let new = locate_cell(&l, 7).unwrap();
    assert!(distance_m(new.lat, new.lon, 52.40, 13.30) < 15.0);
    let s = l.overlay().stats();
    assert_eq!((s.cells, s.wifi, s.blocked), (2, 0, 0));
}

#[test]
fn a_moved_station_is_withdrawn_then_learned_again() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // Newer sightings 20 km from the database's position: moved, withdrawn.
    learn(&l, ring(cell_key_of(2), 52.78, 13.40, 4, NOW));
    assert!(locate_cell(&l, 2).is_none(), "a moved cell is no evidence");
    assert_eq!(
        l.overlay().view().unwrap().get(&cell_key_of(2)),
        Lookup::Blocked
    );
    assert_eq!(l.overlay().stats().blocked, 1);
    // Still inside the 30-day block: ignored.
    learn(&l, ring(cell_key_of(2), 52.78, 13.40, 5, NOW + 86_400));
    assert!(locate_cell(&l, 2).is_none());
    // After the block, sightings arriving one at a time are held until there are
    // enough, then the station is published from them alone.
    let after = NOW + 40 * 86_400;
    let fresh = ring(cell_key_of(2), 52.78, 13.40, 3, after);
    learn(&l, fresh[..1].to_vec());
    learn(&l, fresh[1..2].to_vec());
    assert!(locate_cell(&l, 2).is_none());
    // Held sightings survive a restart.
    drop(l);
    let l = open(tmp.path());
    learn(&l, fresh[2..].to_vec());
    let a = locate_cell(&l, 2).expect("learned again");
    assert!(distance_m(a.lat, a.lon, 52.78, 13.40) < 15.0, "{a:?}");
    assert_eq!(l.overlay().stats().blocked, 0);
}

#[test]
fn the_overlay_survives_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    learn(&l, ring(cell_key_of(7), 52.40, 13.30, 5, NOW));
    learn(&l, ring(StationKey::Wifi(1), 52.60, 13.60, 1, NOW));
    let want = l.overlay().snapshot().stations;
    drop(l);
    let l = open(tmp.path());
    assert_eq!(l.overlay().snapshot().stations, want);
    assert!(locate_cell(&l, 7).is_some());
    // AP 1 seen once 14 km from its database position: held, not withdrawn (a
    // single fix is no move), and still so after the reopen.
    match l.overlay().view().unwrap().get(&StationKey::Wifi(1)) {
        Lookup::Learned(s) => assert!(distance_m(s.lat(), s.lon(), 52.5001, 13.4001) < 1.0),
        other => panic!("{other:?}"),
    };
}

#[test]
fn compaction_writes_database_plus_overlay_and_then_folds() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    learn(&l, ring(cell_key_of(1), 52.51, 13.40, 10, NOW));
    learn(&l, ring(cell_key_of(7), 52.40, 13.30, 5, NOW));
    learn(&l, ring(cell_key_of(2), 52.78, 13.40, 4, NOW));
    let snap = l.overlay().snapshot().stations;
    let answer_1 = locate_cell(&l, 1).unwrap();
    let generation = l.database().manifest().generation;

    let r = compact(&l).unwrap();
    assert_eq!(r.generation, generation + 1);
    assert_eq!(r.folded, 3);
    let db = l.database();
    assert_eq!(db.manifest().generation, generation + 1);
    // Every learned station as the overlay had it; the withdrawn one gone; the rest kept.
    for (key, station) in &snap {
        let StationKey::Cell { key: k, .. } = key else {
            unreachable!()
        };
        let got = db.cell(Radio::Gsm, 262, 1, 10, k & ((1 << 36) - 1));
        assert_eq!(got, *station, "{}", key.label());
    }
    assert_eq!((db.stats().cells, db.stats().wifi), (2, 2));
    // A station first learned stays learned in the database; cell 1, refined with fewer
    // learned samples (10) than its imported ones (20), stays averaged.
    let kind = |cid| db.cell(Radio::Gsm, 262, 1, 10, cid).unwrap().estimated();
    assert_eq!(kind(7), Estimated::Learned);
    assert_eq!(kind(1), Estimated::Averaged);
    // Same answers, now from the database; the overlay keeps only the block.
    assert_eq!(locate_cell(&l, 1).unwrap(), answer_1);
    assert!(locate_cell(&l, 2).is_none());
    let s = l.overlay().stats();
    assert_eq!((s.cells, s.wifi, s.blocked), (0, 0, 1));
    assert_eq!(l.overlay().snapshot().stations.len(), 0);
    // Nothing waits: a second compaction writes no generation.
    assert_eq!(compact(&l).unwrap().generation, generation + 1);
}

#[test]
fn a_crash_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    learn(&l, ring(cell_key_of(7), 52.40, 13.30, 5, NOW));

    // Another live process holds the database (pid 1 always exists): the compaction
    // fails before writing anything and the overlay keeps its rows.
    let lock = tmp.path().join(".import.lock");
    std::fs::write(&lock, "1\n").unwrap();
    assert!(compact(&l).is_err());
    std::fs::remove_file(&lock).unwrap();
    drop(l);
    let l = open(tmp.path());
    assert_eq!(l.overlay().stats().cells, 1);

    // A crash after the new manifest but before the fold: keep a copy of the rows,
    // compact, put the copy back as if the fold never happened.
    let copy = tmp.path().join("copy.sqlite");
    rusqlite::Connection::open(tmp.path().join(LEARNED_FILE))
        .unwrap()
        .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
        .unwrap();
    let folded = compact(&l).unwrap();
    let answer = locate_cell(&l, 7).unwrap();
    drop(l);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(tmp.path().join(format!("{LEARNED_FILE}{ext}")));
    }
    std::fs::rename(&copy, tmp.path().join(LEARNED_FILE)).unwrap();
    let l = open(tmp.path());
    assert_eq!(l.database().manifest().generation, folded.generation);
    assert_eq!(l.overlay().stats().cells, 1, "rows stay until folded");
    // Entries replace rather than add: folding them again changes no station.
    assert_eq!(locate_cell(&l, 7).unwrap(), answer);
    let again = compact(&l).unwrap();
    assert_eq!(again.folded, 1);
    assert_eq!(locate_cell(&l, 7).unwrap(), answer);
    let s = l.database().cell(Radio::Gsm, 262, 1, 10, 7).unwrap();
    assert_eq!(s.samples(), 5);
}

#[test]
fn readers_keep_answering_while_generations_switch() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = Arc::new(open(tmp.path()));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (l, stop) = (Arc::clone(&l), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0u64;
                let wifi = [
                    WifiObs {
                        bssid: 1,
                        signal: Some(-60.0),
                        frequency: None,
                    },
                    WifiObs {
                        bssid: 2,
                        signal: Some(-70.0),
                        frequency: None,
                    },
                ];
                let cells = [gsm(1)];
                while !stop.load(Ordering::Relaxed) {
                    let a = l
                        .locate(&Query {
                            cells: &cells,
                            wifi: &wifi,
                            ip: None,
                            options: Options::default(),
                        })
                        .expect("an answer in every generation");
                    assert!(distance_m(a.lat, a.lon, 52.50, 13.40) < 2_000.0);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let compactor = Arc::new(Compactor::new(Thresholds {
        stations: 1,
        age_s: 3_600,
    }));
    for round in 0..5 {
        learn(&l, ring(cell_key_of(100 + round), 52.45, 13.35, 3, NOW));
        assert!(compactor.spawn_if_due(&l) || compactor.is_running());
        while compactor.is_running() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(compactor.last().unwrap().is_ok());
    }
    stop.store(true, Ordering::Relaxed);
    let answered: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(answered > 0);
    assert_eq!(l.database().stats().cells, 2 + 5);
    assert!(l.overlay().is_empty());
}

#[test]
fn engines_sharing_a_directory_see_each_others_learning_and_folds() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    // Two engines on one directory, as the server's cluster workers are.
    let (a, b) = (open(tmp.path()), open(tmp.path()));
    learn(&a, ring(cell_key_of(7), 52.40, 13.30, 5, NOW));
    assert!(locate_cell(&b, 7).is_none());
    b.overlay().refresh().unwrap();
    let from_a = locate_cell(&b, 7).expect("b reads a's rows");
    // b refines what a learned, not the database's (absent) station.
    learn(&b, ring(cell_key_of(7), 52.40, 13.30, 5, NOW + 60));
    a.overlay().refresh().unwrap();
    match a.overlay().view().unwrap().get(&cell_key_of(7)) {
        Lookup::Learned(s) => assert_eq!(s.samples(), 10),
        other => panic!("{other:?}"),
    }
    compact(&a).unwrap();
    assert!(b.reload().unwrap());
    b.overlay().refresh().unwrap();
    assert!(b.overlay().is_empty(), "b drops what a folded");
    let folded = locate_cell(&b, 7).unwrap();
    assert!(distance_m(folded.lat, folded.lon, from_a.lat, from_a.lon) < 15.0);
}

/// One sighting of `key` at (lat, lon) at `time`: a single submission's fix.
fn sighting(key: StationKey, lat: f64, lon: f64, time: i64) -> Vec<Observation> {
    let mut o = ring(key, lat, lon, 1, time);
    o[0].lat = lat;
    o[0].lon = lon;
    o
}

#[test]
fn a_single_bad_fix_does_not_withdraw_a_station() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // One submission whose GPS put it 20 km from cell 2: held, not a move.
    learn(&l, sighting(cell_key_of(2), 52.78, 13.40, NOW));
    let a = locate_cell(&l, 2).expect("still answered");
    assert!(distance_m(a.lat, a.lon, 52.60, 13.40) < 5.0, "{a:?}");
    assert_eq!(l.overlay().stats().blocked, 0);
    // Nor does it drag the station when honest sightings follow.
    learn(&l, ring(cell_key_of(2), 52.60, 13.40, 4, NOW + 60));
    let a = locate_cell(&l, 2).unwrap();
    assert!(distance_m(a.lat, a.lon, 52.60, 13.40) < 5.0, "{a:?}");
    assert_eq!(l.overlay().stats().blocked, 0);
}

#[test]
fn three_consistent_far_sightings_from_separate_submissions_make_a_move() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    for (i, (la, lo)) in [(52.780, 13.400), (52.781, 13.401), (52.779, 13.399)]
        .into_iter()
        .enumerate()
    {
        assert!(
            locate_cell(&l, 2).is_some(),
            "withdrawn after {i} sightings"
        );
        learn(&l, sighting(cell_key_of(2), la, lo, NOW + i as i64 * 600));
    }
    assert!(
        locate_cell(&l, 2).is_none(),
        "three agreeing sightings: moved"
    );
    assert_eq!(
        l.overlay().view().unwrap().get(&cell_key_of(2)),
        Lookup::Blocked
    );
}

#[test]
fn far_sightings_of_one_submission_or_in_disagreement_are_no_move() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // Three stations' worth of one fix replayed: one time, however many rows.
    let mut same_time = ring(cell_key_of(2), 52.78, 13.40, 3, NOW);
    for o in &mut same_time {
        o.time = Some(NOW);
    }
    learn(&l, same_time);
    assert!(locate_cell(&l, 2).is_some());
    // Three far sightings at different times, but as many at the old place since: no move.
    let tmp2 = tempfile::tempdir().unwrap();
    database(tmp2.path());
    let l = open(tmp2.path());
    let mut mixed = ring(cell_key_of(2), 52.78, 13.40, 3, NOW);
    mixed.extend(ring(cell_key_of(2), 52.60, 13.40, 3, NOW + 10));
    learn(&l, mixed);
    assert!(locate_cell(&l, 2).is_some());
    assert_eq!(l.overlay().stats().blocked, 0);
}

#[test]
fn a_held_outlier_survives_a_restart_and_a_compaction_and_expires() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    learn(&l, sighting(cell_key_of(2), 52.780, 13.400, NOW));
    compact(&l).unwrap();
    drop(l);
    let l = open(tmp.path());
    learn(&l, sighting(cell_key_of(2), 52.781, 13.401, NOW + 600));
    drop(l);
    let l = open(tmp.path());
    assert!(locate_cell(&l, 2).is_some());
    // The third agrees with the two held ones: moved.
    learn(&l, sighting(cell_key_of(2), 52.779, 13.399, NOW + 1200));
    assert!(locate_cell(&l, 2).is_none(), "the held sightings were lost");

    // Sightings that do not accumulate within a week are dropped as outliers.
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    learn(&l, sighting(cell_key_of(2), 52.780, 13.400, NOW));
    let r = l
        .overlay()
        .learn(
            &l.database(),
            sighting(cell_key_of(2), 52.781, 13.401, NOW + 8 * 86_400),
            &LearnOptions::default(),
        )
        .unwrap();
    assert_eq!(r.outliers, 1, "{r:?}");
    learn(
        &l,
        sighting(cell_key_of(2), 52.779, 13.399, NOW + 8 * 86_400 + 600),
    );
    assert!(locate_cell(&l, 2).is_some(), "an expired sighting counted");
}

/// LTE cells whose stored order (ranked ids, store format 8) is not their id order: eNBs
/// 257 and 513 share their low byte and sort before eNB 300.
#[test]
fn compaction_merges_learned_lte_cells_in_the_stored_order() {
    let tmp = tempfile::tempdir().unwrap();
    let lte = |cid| StationKey::Cell {
        radio: Radio::Lte,
        mcc: 262,
        mnc: 1,
        key: cell_key(Radio::Lte, 20, cid),
    };
    let imported = [(257u64 << 8) | 1, (300 << 8) | 1, (513 << 8) | 1];
    let mut cells: Vec<Station> = imported
        .iter()
        .enumerate()
        .map(|(i, &cid)| {
            Station::new(
                cell_key(Radio::Lte, 20, cid),
                &info(52.50 + i as f64 * 0.01, 13.40, 20),
            )
        })
        .collect();
    cells.sort_unstable_by_key(|s| s.key);
    let mut b = DbBuilder::new(tmp.path(), BuildOptions::default()).unwrap();
    for s in cells {
        b.push_cell(Radio::Lte, 262, 1, s).unwrap();
    }
    b.commit().unwrap();
    let l = open(tmp.path());
    // New cells on either side of the imported ones in key order, and between them.
    let learned = [
        (1u64 << 8) | 2,
        (257 << 8) | 2,
        (300 << 8) | 2,
        (769 << 8) | 1,
    ];
    for (i, &cid) in learned.iter().enumerate() {
        learn(&l, ring(lte(cid), 52.60 + i as f64 * 0.01, 13.50, 5, NOW));
    }
    let r = compact(&l).unwrap();
    assert_eq!(r.folded, learned.len() as u64);
    let db = l.database();
    assert_eq!(db.stats().cells, 7);
    for cid in imported.iter().chain(&learned) {
        assert!(db.cell(Radio::Lte, 262, 1, 20, *cid).is_some(), "{cid:#x}");
    }
    // Keys increase in the file, and eNB 257's two sectors are one site.
    let keys: Vec<u64> = db.iter_cells().map(|c| c.3.key).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:x?}");
    let site = db
        .cell_among(
            Radio::Lte,
            262,
            1,
            20,
            (257 << 8) | 1,
            (257 << 8, (257 << 8) | 0xff),
        )
        .unwrap();
    assert_eq!(site.neighbours.len(), 2);
}

/// `obs` as submitted through token `token` (device `device`; 0: none).
fn from(token: u64, device: u64, mut obs: Vec<Observation>) -> Vec<Observation> {
    for o in &mut obs {
        o.source = Some(Source { token, device });
    }
    obs
}

#[test]
fn one_token_neither_moves_nor_blocks_a_known_cell_and_is_quarantined() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // 40 submissions placing cell 2 in Sydney, at distinct times, from one token (and
    // a different device id on each).
    for i in 0..40u64 {
        let obs = sighting(cell_key_of(2), -33.87, 151.21, NOW + i as i64 * 600);
        learn(&l, from(7, i + 1, obs));
    }
    let a = locate_cell(&l, 2).expect("still answered");
    assert!(distance_m(a.lat, a.lon, 52.60, 13.40) < 5.0, "{a:?}");
    assert_eq!(l.overlay().stats().blocked, 0);
    let c = l.overlay().contributions(Some(7)).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].quarantined.as_deref(), Some("automatic"), "{c:?}");
    assert!(c[0].held <= 8, "{c:?}");
    // Quarantined: its sightings near a station refine nothing.
    let near = ring(cell_key_of(1), 52.53, 13.40, 5, NOW + 90_000);
    let r = l
        .overlay()
        .learn(&l.database(), from(7, 1, near), &LearnOptions::default())
        .unwrap();
    assert_eq!((r.quarantined, r.refined), (5, 0), "{r:?}");
}

#[test]
fn one_token_adds_at_most_its_cap_to_a_station() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // 4 km north of cell 1 (20 samples): near enough to refine, not a move.
    for i in 0..30i64 {
        let obs = ring(cell_key_of(1), 52.536, 13.40, 5, NOW + i * 600);
        learn(&l, from(9, (i % 3) as u64 + 1, obs));
    }
    let a = locate_cell(&l, 1).unwrap();
    // 10 of its samples beside the database's 20: a third of the way at most.
    let moved = distance_m(a.lat, a.lon, 52.50, 13.40);
    assert!(moved < 4_000.0 * 10.0 / 30.0 + 50.0, "{moved} m");
    let c = l.overlay().contributions(Some(9)).unwrap();
    assert_eq!(
        c[0].stations[0].used, 9,
        "three devices, three sightings each: {c:?}"
    );
    // Taken out again, the station is the database's.
    let r = l.overlay().revert_token(Some(&l.database()), 9).unwrap();
    assert_eq!(r.stations, 1);
    let a = locate_cell(&l, 1).unwrap();
    assert!(distance_m(a.lat, a.lon, 52.50, 13.40) < 1.0, "{a:?}");
    assert!(l.overlay().contributions(Some(9)).unwrap().is_empty());
}

#[test]
fn three_tokens_agreeing_move_a_station_and_reverting_one_lifts_the_block() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    let places = [(52.780, 13.400), (52.781, 13.401), (52.779, 13.399)];
    // Two tokens agreeing, many times over: no move.
    for round in 0..4i64 {
        for (t, (la, lo)) in places.iter().take(2).enumerate() {
            let obs = sighting(cell_key_of(2), *la, *lo, NOW + round * 1200 + t as i64 * 60);
            learn(&l, from(t as u64 + 1, 1, obs));
        }
    }
    assert!(locate_cell(&l, 2).is_some(), "two tokens moved a station");
    // A third token agrees: moved.
    let (la, lo) = places[2];
    learn(&l, from(3, 1, sighting(cell_key_of(2), la, lo, NOW + 6000)));
    assert!(locate_cell(&l, 2).is_none(), "three tokens agreeing: moved");
    let c = l.overlay().contributions(Some(3)).unwrap();
    assert_eq!(c[0].blocks, vec![cell_key_of(2).label()]);
    // Token 3 turns out to be a sock puppet: reverting it lifts the block.
    let r = l.overlay().revert_token(Some(&l.database()), 3).unwrap();
    assert_eq!(r.unblocked, 1, "{r:?}");
    let a = locate_cell(&l, 2).expect("restored");
    assert!(distance_m(a.lat, a.lon, 52.60, 13.40) < 5.0, "{a:?}");
    // A fresh engine on the file agrees.
    drop(l);
    let l = open(tmp.path());
    assert!(locate_cell(&l, 2).is_some());
}

#[test]
fn one_token_cannot_set_up_an_old_place_with_back_dated_sightings() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    // The attacker's sightings 20 km away, dated ten days back ...
    for i in 0..3i64 {
        let obs = sighting(cell_key_of(2), 52.78, 13.40, NOW - 10 * 86_400 + i * 600);
        learn(&l, from(66, 1, obs));
    }
    // ... then honest tokens at the true place now, learned together (one batch): no move.
    let mut honest = Vec::new();
    for t in 1..=3u64 {
        let obs = sighting(cell_key_of(2), 52.60, 13.40, NOW + t as i64 * 600);
        honest.extend(from(t, 1, obs));
    }
    learn(&l, honest);
    assert!(locate_cell(&l, 2).is_some());
    assert_eq!(l.overlay().stats().blocked, 0);
}

#[test]
fn compaction_fits_masts_from_the_operators_own_advances_and_keeps_those_that_fit_none() {
    let tmp = tempfile::tempdir().unwrap();
    database(tmp.path());
    let l = open(tmp.path());
    let lte = |cid| StationKey::Cell {
        radio: Radio::Lte,
        mcc: 262,
        mnc: 1,
        key: cell_key(Radio::Lte, 20, cid),
    };
    // eNB 900's sectors 1 and 2 walked past along two streets near a mast at (52.45, 13.45),
    // each sighting with the advance the mast gives; eNB 901's in the same batch, but
    // submitted through a token; eNB 902's, too few.
    let mast = (52.45, 13.45);
    let frame = whereabouts_core::geo::LocalFrame::new(mast.0, mast.1);
    let walk = |cid: u64, along: bool| -> Vec<Observation> {
        (0..20)
            .map(|i| {
                let s = -600.0 + i as f64 * 63.0;
                let (x, y) = if along { (s, 300.0) } else { (500.0, s) };
                let (lat, lon) = frame.to_latlon(x, y);
                Observation {
                    key: lte(cid),
                    lat,
                    lon,
                    accuracy_m: Some(5.0),
                    time: Some(NOW - 3_600 + i),
                    speed_mps: None,
                    signal_dbm: None,
                    ta_m: Some((x.hypot(y) / 78.12).floor() * 78.12),
                    psc: None,
                    source: None,
                }
            })
            .collect()
    };
    let mut obs = walk((900 << 8) | 1, true);
    obs.extend(walk((900 << 8) | 2, false));
    obs.extend(from(7, 0, walk((901 << 8) | 1, true)));
    obs.extend(walk((902 << 8) | 1, true).into_iter().take(3));
    learn(&l, obs);
    // Nothing fitted before a compaction: the overlay keeps the sightings.
    assert!(l
        .database()
        .learned_mast(Radio::Lte, 262, 1, 900 << 8)
        .is_none());
    compact(&l).unwrap();
    let db = l.database();
    let m = db
        .learned_mast(Radio::Lte, 262, 1, (900 << 8) | 2)
        .expect("eNB 900's mast");
    assert!(distance_m(m.lat, m.lon, mast.0, mast.1) < 40.0);
    assert!(db.learned_mast(Radio::Lte, 262, 1, 901 << 8).is_none());
    assert!(db.learned_mast(Radio::Lte, 262, 1, 902 << 8).is_none());
    // eNB 900's sightings went with its mast; eNB 902's wait for more.
    let (left, _) = l.overlay().advances().unwrap();
    assert_eq!(left.len(), 3);
    assert!(left.iter().all(|o| o.key == lte((902 << 8) | 1)));
    // A later compaction keeps the mast while its cells stay learned.
    learn(&l, ring(cell_key_of(1), 52.50, 13.40, 5, NOW));
    compact(&l).unwrap();
    assert_eq!(
        l.database()
            .learned_mast(Radio::Lte, 262, 1, 900 << 8)
            .map(|m| (m.lat, m.lon)),
        Some((m.lat, m.lon))
    );
}
