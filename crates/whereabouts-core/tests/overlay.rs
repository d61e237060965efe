//! The learned-station overlay and its compaction: lookup precedence, the
//! blocklist, persistence, the folded generation, crash safety and readers
//! during a generation switch. Hand-made stations around Berlin.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use whereabouts_core::geo::{destination, distance_m};
use whereabouts_core::learn::compact::{compact, Compactor, Thresholds};
use whereabouts_core::learn::overlay::{Lookup, Overlay, LEARNED_FILE};
use whereabouts_core::learn::{LearnOptions, Observation, StationKey};
use whereabouts_core::radio::Radio;
use whereabouts_core::solve::{Answer, CellObs, Locator, Options, Query, WifiObs};
use whereabouts_core::store::record::{cell_key, Station, StationInfo};
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
    }
}

fn cell_key_of(cid: u64) -> StationKey {
    StationKey::Cell {
        radio: Radio::Gsm,
        mcc: 262,
        mnc: 1,
        key: cell_key(10, cid),
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
        Station::new(cell_key(10, 1), &info(52.50, 13.40, 20)),
    )
    .unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(10, 2), &info(52.60, 13.40, 20)),
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
    // AP 1 seen 14 km from its database position: withdrawn, and still after the reopen.
    assert_eq!(
        l.overlay().view().unwrap().get(&StationKey::Wifi(1)),
        Lookup::Blocked
    );
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
        let got = db
            .cell(Radio::Gsm, 262, 1, 10, k & ((1 << 36) - 1))
            .copied();
        assert_eq!(got, *station, "{}", key.label());
    }
    assert_eq!((db.stats().cells, db.stats().wifi), (2, 2));
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
    let s = l
        .database()
        .cell(Radio::Gsm, 262, 1, 10, 7)
        .copied()
        .unwrap();
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
