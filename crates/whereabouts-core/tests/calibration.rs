//! The radius model stored with a database: written and named in the manifest, read at open,
//! applied to every answer of its class (single and batch), kept by a new import, removed by a
//! reset; a database without one answers with the solver's radii.

use std::fs;
use std::path::Path;

use whereabouts_core::calibration::{self, RadiusClass, RadiusRow, KIND_CELLS};
use whereabouts_core::radio::Radio;
use whereabouts_core::sites::SiteKey;
use whereabouts_core::solve::{Answer, CellObs, Locator, Query};
use whereabouts_core::store::netstats::LearnedMast;
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder, Manifest, StoreError};

const NOW: i64 = 1_700_000_000;

/// LTE cell `cid` of 262/1 in TAC 7 at (lat, 13.3), 800 m range and 40 samples, a day old.
fn lte_cell(cid: u64, lat: f64, estimated: Estimated) -> Station {
    let info = StationInfo {
        lat,
        lon: 13.3,
        range_m: 800,
        samples: 40,
        psc: None,
        created: NOW - 86_400,
        updated: NOW - 86_400,
        estimated,
    };
    Station::new(cell_key(Radio::Lte, 7, cid), &info)
}

/// Ten LTE cells of 262/1 in TAC 7, 0.01 degree apart.
fn build(dir: &Path) {
    let mut b = DbBuilder::new(dir, BuildOptions::default()).unwrap();
    for k in 0..10u64 {
        let station = lte_cell(100 + k, 52.4 + k as f64 * 0.01, Estimated::Averaged);
        b.push_cell(Radio::Lte, 262, 1, station).unwrap();
    }
    b.commit().unwrap();
}

fn obs(cid: u64) -> CellObs {
    CellObs {
        radio: Some(Radio::Lte),
        mcc: Some(262),
        mnc: 1,
        lac: 7,
        cid,
        signal: None,
        asu: None,
        ta: None,
        psc: None,
    }
}

fn answer(dir: &Path, cells: &[CellObs]) -> Answer {
    let locator = Locator::new(Database::open(dir).unwrap()).with_now(NOW);
    let q = Query {
        cells,
        ..Default::default()
    };
    locator.locate(&q).unwrap()
}

/// The class of an answer from `cells` crowd LTE cells of 40 sightings heard with even
/// weights (their effective number the count).
fn lte_class(cells: usize) -> RadiusClass {
    RadiusClass::cells(
        KIND_CELLS,
        Some(Radio::Lte),
        cells,
        cells as f64,
        false,
        40,
        false,
        false,
    )
}

/// A model whose rows say one LTE cell's radius is 2.5 times too small.
fn model() -> calibration::RadiusModel {
    let class = lte_class(1);
    let rows: Vec<RadiusRow> = (1..=2_000)
        .map(|i| RadiusRow {
            class,
            ratio: 2.5 * i as f64 / 1_360.0,
            weight: 1.0,
        })
        .collect();
    calibration::fit(&rows, 0, 1.0)
}

#[test]
fn a_stored_model_scales_its_class_and_survives_a_reopen_and_an_import() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let one = [obs(103)];
    let two = [obs(103), obs(104)];
    let before_one = answer(dir.path(), &one);
    let before_two = answer(dir.path(), &two);

    // The sample is the answer without a model, with its class.
    let locator = Locator::new(Database::open(dir.path()).unwrap()).with_now(NOW);
    let (raw, class) = locator
        .radius_sample(
            &locator.database(),
            &Query {
                cells: &one,
                ..Default::default()
            },
            NOW,
        )
        .unwrap();
    assert_eq!(raw, before_one);
    assert_eq!(class.key(), "cells/lte/cells-1/crowd-10-99");

    let m = model();
    let file = calibration::store(dir.path(), Some(&m)).unwrap().unwrap();
    assert_eq!(file, "radius-model-1.json");
    assert_eq!(
        Manifest::read_existing(dir.path())
            .unwrap()
            .radius_model
            .as_deref(),
        Some(file.as_str())
    );
    assert_eq!(calibration::stored(dir.path()).unwrap().as_ref(), Some(&m));
    // The running locator sees the new model on reload; the stations are the same.
    assert!(locator.reload().unwrap());
    let table = m.table().unwrap();
    let f1 = table.factor(class);
    assert!((f1 - 2.5).abs() < 0.05, "{f1}");

    let after_one = answer(dir.path(), &one);
    assert_eq!(after_one.lat, before_one.lat);
    assert!((after_one.accuracy_m - before_one.accuracy_m * f1).abs() <= 0.5 * f1 + 0.5);
    assert!(after_one.accuracy_m > 2.0 * before_one.accuracy_m);
    // Two cells: a class the rows never saw, so the nearest fitted ancestor's factor
    // (cells/lte, pooled from the same rows).
    let two_class = lte_class(2);
    let f2 = table.factor(two_class);
    assert_eq!(
        f2,
        table.factor(RadiusClass {
            count: 0,
            quality: 0,
            ..two_class
        })
    );
    let after_two = answer(dir.path(), &two);
    // Both rounded to the metre: within half a metre times the factor, plus half.
    assert!((after_two.accuracy_m - before_two.accuracy_m * f2).abs() <= 0.5 * f2 + 0.5);

    // Batch answers are the single ones.
    let queries = [
        Query {
            cells: &one,
            ..Default::default()
        },
        Query {
            cells: &two,
            ..Default::default()
        },
    ];
    let mut out = [None, None];
    locator.locate_many(&queries, NOW, 2, &mut out).unwrap();
    assert_eq!(out, [Some(after_one), Some(after_two)]);

    // A new import keeps the model (it was fitted on the user's ground truth).
    build(dir.path());
    assert_eq!(answer(dir.path(), &one), after_one);
    // A second fit is a new file; the old one goes.
    let file2 = calibration::store(dir.path(), Some(&m)).unwrap().unwrap();
    assert_eq!(file2, "radius-model-2.json");
    assert!(!dir.path().join(&file).exists());

    // Reset: the solver's radii again, and the file is gone.
    assert_eq!(calibration::store(dir.path(), None).unwrap(), None);
    assert!(!dir.path().join(&file2).exists());
    assert_eq!(answer(dir.path(), &one), before_one);
    assert_eq!(calibration::stored(dir.path()).unwrap(), None);
}

#[test]
fn a_database_without_a_model_answers_as_before_and_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let one = [obs(105)];
    let plain = answer(dir.path(), &one);
    // An older manifest has no radius_model key at all.
    let text = fs::read_to_string(dir.path().join("manifest.json")).unwrap();
    assert!(!text.contains("radius_model"));

    let mut m = model();
    calibration::store(dir.path(), Some(&m)).unwrap();
    assert_ne!(answer(dir.path(), &one), plain);
    // A file of a format this build does not read: a clear error at open, and a reset works.
    m.format = 99;
    let name = Manifest::read_existing(dir.path())
        .unwrap()
        .radius_model
        .unwrap();
    fs::write(dir.path().join(&name), serde_json::to_string(&m).unwrap()).unwrap();
    match Database::open(dir.path()) {
        Err(StoreError::Version(msg)) => assert!(msg.contains("format 99"), "{msg}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened a model of format 99"),
    }
    calibration::store(dir.path(), None).unwrap();
    assert_eq!(answer(dir.path(), &one), plain);
    // A model that does not check is never written.
    m.format = calibration::RADIUS_MODEL_FORMAT;
    m.classes.get_mut("all").unwrap().factor = -1.0;
    assert!(calibration::store(dir.path(), Some(&m)).is_err());
    assert_eq!(
        Manifest::read_existing(dir.path()).unwrap().radius_model,
        None
    );
}

#[test]
fn storing_into_a_directory_without_a_database_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = calibration::store(dir.path(), Some(&model())).unwrap_err();
    assert!(err.to_string().contains("no station database"), "{err}");
}

#[test]
fn a_single_cell_on_its_masts_ring_is_a_class_of_its_own() {
    // A learned LTE cell of eNB 1 about 550 m north of the site mast our learner fitted.
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    b.learned_masts().insert(
        SiteKey {
            radio: Radio::Lte,
            mcc: 262,
            mnc: 1,
            site: 1 << 8,
        },
        LearnedMast {
            site: 1 << 8,
            lat: 52.4,
            lon: 13.3,
            sightings: 30,
            updated: NOW - 86_400,
        },
    );
    let station = lte_cell(1 << 8 | 1, 52.405, Estimated::Learned);
    b.push_cell(Radio::Lte, 262, 1, station).unwrap();
    b.commit().unwrap();
    let locator = Locator::new(Database::open(dir.path()).unwrap()).with_now(NOW);
    let class = |ta: Option<f64>| {
        let cells = [CellObs {
            ta,
            ..obs(1 << 8 | 1)
        }];
        let q = Query {
            cells: &cells,
            ..Default::default()
        };
        let (_, class) = locator.radius_sample(&locator.database(), &q, NOW).unwrap();
        class.key()
    };
    assert_eq!(class(None), "cells/lte/cells-1/learned-10-99");
    assert_eq!(class(Some(7.0)), "cells/lte/cells-1/learned-ring");
}
