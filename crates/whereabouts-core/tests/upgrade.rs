//! `import::upgrade`: a database of store format 5 or 6 written again in the current format
//! from its own stations (fixture: tests/fixtures/format6, see its README).

use std::fs;
use std::path::{Path, PathBuf};

use whereabouts_core::import::{upgrade, ImportError, Progress};
use whereabouts_core::radio::Radio;
use whereabouts_core::store::layout::{FORMAT_VERSION, F_VERSION, TABLE_POS};
use whereabouts_core::store::record::Estimated;
use whereabouts_core::store::{Database, Manifest, StoreError};

fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format6");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    fs::create_dir(&dir).unwrap();
    for e in fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "README.md" {
            fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    (tmp, dir)
}

fn quiet() -> impl FnMut(&Progress) -> bool {
    |_| true
}

/// Writes `version` into the manifest and the format field of every shard of `dir`.
fn set_version(dir: &Path, version: u32) {
    let mut manifest = Manifest::read(dir).unwrap().unwrap();
    manifest.format = version;
    manifest.write_atomic(dir).unwrap();
    for e in manifest.shards {
        let p = dir.join(e.file);
        let mut bytes = fs::read(&p).unwrap();
        let at = TABLE_POS + F_VERSION;
        bytes[at..at + 4].copy_from_slice(&version.to_le_bytes());
        fs::write(&p, bytes).unwrap();
    }
}

#[test]
fn a_format_6_database_is_refused_with_the_upgrade_named_then_upgraded_with_every_station() {
    let (_tmp, dir) = fixture_copy();
    let e = Database::open(&dir).err().expect("refused").to_string();
    assert!(
        e.contains("format version 6")
            && e.contains(&format!("whereabouts upgrade --db {}", dir.display())),
        "{e}"
    );

    let report = upgrade(&dir, &mut quiet()).unwrap();
    assert_eq!(report.from_format, 6);
    assert_eq!((report.build.cells, report.build.wifi), (8, 3));
    let manifest = Manifest::read(&dir).unwrap().unwrap();
    assert_eq!(manifest.format, FORMAT_VERSION);
    assert!(manifest.simulated);
    assert_eq!(manifest.sources, ["fixture.csv"]);
    assert_eq!(manifest.created, 1_700_000_000);
    // Only the new generation's shards are left.
    let files = fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, manifest.shards.len() + 1, "shards and the manifest");

    let db = Database::open(&dir).unwrap();
    let near = |a: f64, b: f64| (a - b).abs() < 0.6e-6;
    let gsm = [
        (10, 52.5012345, 13.4001234),
        (11, 52.4990001, 13.4021239),
        (12, 52.4990007, 13.3981231),
    ];
    for (cid, lat, lon) in gsm {
        let c = db.cell(Radio::Gsm, 262, 1, 100, cid).expect("GSM cell");
        assert!(near(c.lat(), lat) && near(c.lon(), lon), "{cid}: {c:?}");
        assert_eq!((c.range_m(), c.samples(), c.psc()), (900, 20, Some(17)));
        assert_eq!(c.updated(), 1_700_000_000 - 1_700_000_000 % 86_400);
        assert_eq!(c.estimated(), Estimated::Averaged);
    }
    let learned = db.cell(Radio::Gsm, 262, 1, 100, 99).unwrap();
    assert_eq!(learned.estimated(), Estimated::Learned);
    assert_eq!((learned.range_m(), learned.samples()), (300, 5));
    for sector in 1..=3 {
        assert!(db
            .cell(Radio::Lte, 262, 1, 200, (4660 << 8) | sector)
            .is_some());
    }
    let nr = db
        .cell(Radio::Nr, 262, 2, 16_000_000, 68_000_000_001)
        .unwrap();
    assert!(near(nr.lat(), 48.1371234) && near(nr.lon(), 11.5754321));
    for bssid in [0x0011_2233_4455, 0x0011_2233_4466, 0xfeed_beef_cafe] {
        assert!(db.wifi(bssid).is_some(), "{bssid:x}");
    }
    assert_eq!(db.iter_cells().count(), 8);
    // The derived tables are built anew: the LTE site's mast is pooled with the GSM one's.
    let lte = db
        .cell_among(
            Radio::Lte,
            262,
            1,
            200,
            (4660 << 8) | 1,
            ((4660 << 8), (4660 << 8) | 0xff),
        )
        .unwrap();
    assert_eq!(lte.neighbours.len(), 3);
    assert!(lte.pooled_mast().is_some());
    assert!(db.area(Radio::Gsm, 262, 1, 100).is_some());
    drop(db);

    // A current database is left alone.
    let again = upgrade(&dir, &mut quiet()).unwrap();
    assert_eq!((again.from_format, again.build.shards), (FORMAT_VERSION, 0));
    assert_eq!(Manifest::read(&dir).unwrap().unwrap(), manifest);
}

#[test]
fn format_5_is_read_too_and_older_formats_are_refused_untouched() {
    let (_tmp, dir) = fixture_copy();
    set_version(&dir, 5);
    let report = upgrade(&dir, &mut quiet()).unwrap();
    assert_eq!((report.from_format, report.build.cells), (5, 8));
    assert!(Database::open(&dir).is_ok());

    let (_tmp, dir) = fixture_copy();
    set_version(&dir, 4);
    let before = Manifest::read(&dir).unwrap().unwrap();
    let e = upgrade(&dir, &mut quiet()).unwrap_err();
    assert!(
        matches!(e, ImportError::Store(StoreError::Version(_)))
            && e.to_string()
                .contains("format version 4 cannot be upgraded")
            && e.to_string().contains("import the sources again"),
        "{e}"
    );
    assert_eq!(Manifest::read(&dir).unwrap().unwrap(), before);
}

#[test]
fn a_cancelled_upgrade_leaves_the_old_database() {
    let (_tmp, dir) = fixture_copy();
    let before: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let mut calls = 0;
    let e = upgrade(&dir, &mut |p: &Progress| {
        calls += 1;
        p.rows == 0
    })
    .unwrap_err();
    assert!(matches!(e, ImportError::Cancelled), "{e}");
    assert!(calls >= 2);
    let mut after: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after);
    assert_eq!(Manifest::read(&dir).unwrap().unwrap().format, 6);
}

#[test]
fn a_corrupt_shard_is_an_error_and_changes_nothing() {
    let (_tmp, dir) = fixture_copy();
    let shard = dir.join(&Manifest::read(&dir).unwrap().unwrap().shards[0].file);
    let bytes = fs::read(&shard).unwrap();
    // Into the cells vector, which starts after the 92-byte head of format 6.
    fs::write(&shard, &bytes[..120]).unwrap();
    let e = upgrade(&dir, &mut quiet()).unwrap_err();
    assert!(e.to_string().contains("corrupt station database"), "{e}");
    assert_eq!(Manifest::read(&dir).unwrap().unwrap().format, 6);
}
