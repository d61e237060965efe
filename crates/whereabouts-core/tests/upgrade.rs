//! `import::upgrade`: a database of store format 5, 6 or 7 written again in the current
//! format from its own stations (fixtures: tests/fixtures/format6 and format7, see their
//! READMEs).

use std::fs;
use std::path::{Path, PathBuf};

use whereabouts_core::import::{upgrade, ImportError, Progress};
use whereabouts_core::radio::Radio;
use whereabouts_core::store::layout::{FORMAT_VERSION, F_VERSION, TABLE_POS};
use whereabouts_core::store::record::Estimated;
use whereabouts_core::store::{Database, Manifest, StoreError};

fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    copy_of("format6")
}

fn copy_of(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
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
    // Only the new generation's shards are left, with its network statistics.
    let files = fs::read_dir(&dir).unwrap().count();
    assert!(manifest.network_stats.is_some());
    assert_eq!(
        files,
        manifest.shards.len() + 2,
        "shards, network statistics and the manifest"
    );

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
fn a_format_7_database_is_upgraded_with_its_cells_in_the_order_of_their_ranks() {
    let (_tmp, dir) = copy_of("format7");
    let e = Database::open(&dir).err().expect("refused").to_string();
    assert!(
        e.contains("format version 7") && e.contains("whereabouts upgrade"),
        "{e}"
    );

    let report = upgrade(&dir, &mut quiet()).unwrap();
    assert_eq!(report.from_format, 7);
    assert_eq!((report.build.cells, report.build.wifi), (13, 2));
    let db = Database::open(&dir).unwrap();
    // The whole database in stored order: keys increase within each network.
    let cells: Vec<_> = db.iter_cells().collect();
    assert_eq!(cells.len(), 13);
    for w in cells.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!((a.0 as u8, a.1, a.2) < (b.0 as u8, b.1, b.2) || a.3.key < b.3.key);
    }
    let near = |a: f64, b: f64| (a - b).abs() < 0.6e-6;
    for (enb, lat) in [(257u64, 52.50), (300, 52.52), (513, 52.54)] {
        let site = ((enb << 8), (enb << 8) | 0xff);
        for sector in 1..=3 {
            let m = db
                .cell_among(Radio::Lte, 262, 1, 300, (enb << 8) | sector, site)
                .unwrap_or_else(|| panic!("eNB {enb} sector {sector}"));
            assert_eq!(m.neighbours.len(), 3, "eNB {enb}: its three sectors");
            if sector == 1 {
                assert!(near(m.cell.lat(), lat + 0.0010), "{:?}", m.cell);
            }
        }
    }
    // eNBs 257 and 513 share their low byte: both sector 1 cells answer the short id.
    let mut short: Vec<_> = db
        .cells_by_short_cid(Radio::Lte, 262, 1, 300, 0x0101)
        .iter()
        .map(|c| c.lat())
        .collect();
    short.sort_by(f64::total_cmp);
    assert_eq!(short.len(), 2);
    assert!(
        near(short[0], 52.501) && near(short[1], 52.541),
        "{short:?}"
    );
    for (rnc, ci, lat) in [
        (1u64, 1001u64, 48.10),
        (1, 1002, 48.11),
        (2, 11, 48.12),
        (3, 1001, 48.13),
    ] {
        let c = db.cell(Radio::Umts, 262, 2, 400, (rnc << 16) | ci).unwrap();
        assert!(near(c.lat(), lat), "{rnc}/{ci}: {c:?}");
    }
    let by_ci: Vec<_> = db
        .cells_by_short_cid(Radio::Umts, 262, 2, 400, 1001)
        .iter()
        .map(|c| c.lat())
        .collect();
    assert_eq!(by_ci.len(), 2, "{by_ci:?}");
    let site = db
        .cell_among(
            Radio::Umts,
            262,
            2,
            400,
            (1 << 16) | 1001,
            ((1 << 16) | 1000, (1 << 16) | 1009),
        )
        .unwrap();
    assert_eq!(
        site.neighbours.len(),
        2,
        "RNC 1's C-IDs 1001 and 1002, not RNC 3's 1001"
    );
    for bssid in [0x0011_2233_4455, 0x0011_2233_4466] {
        assert!(db.wifi(bssid).is_some(), "{bssid:x}");
    }
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
