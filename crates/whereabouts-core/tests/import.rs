//! `whereabouts import`: formats, validation, merge rules, runs and atomicity,
//! checked through the database that results.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;
use whereabouts_core::import::{
    import_files, ImportError, ImportOptions, ImportReport, Phase, Progress, SourceKind,
};
use whereabouts_core::radio::Radio;
use whereabouts_core::store::record::{Station, StationInfo};
use whereabouts_core::store::Database;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn run(dir: &Path, files: &[PathBuf], opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    import_files(dir, files, opts, &mut |_| true)
}

fn import(dir: &Path, names: &[&str]) -> ImportReport {
    let files: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    run(dir, &files, &ImportOptions::default()).unwrap()
}

/// What `Station::new` makes of these values: the stored rounding of times and ranges.
fn stored(
    lat: f64,
    lon: f64,
    range_m: u32,
    samples: u32,
    created: i64,
    updated: i64,
) -> StationInfo {
    Station::new(
        0,
        &StationInfo {
            lat,
            lon,
            range_m,
            samples,
            psc: None,
            created,
            updated,
            estimated: whereabouts_core::store::record::Estimated::Averaged,
        },
    )
    .info()
}

/// Every cell with its network, and every AP, in stored order.
type Contents = (Vec<(Radio, u16, u16, Station)>, Vec<Station>);

fn all_stations(db: &Database) -> Contents {
    (db.iter_cells().collect(), db.iter_wifi().collect())
}

/// Nothing of an import may linger in the database directory.
fn assert_clean(dir: &Path) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.') && !name.ends_with(".tmp"),
            "leftover {name} in {}",
            dir.display()
        );
    }
}

#[test]
fn cell_csv_with_crlf_every_radio() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["cells_crlf.csv"]);
    let f = &rep.files[0];
    assert_eq!(f.kind, SourceKind::CellCsv);
    assert_eq!(
        (f.rows, f.accepted, f.rejected),
        (7, 7, 0),
        "{:?}",
        f.bad_lines
    );
    assert_eq!((rep.cells, rep.wifi, rep.shards), (7, 0, 1));
    assert!(rep.bytes > 7 * 24 && rep.seconds > 0.0);
    assert_clean(dir.path());

    let db = Database::open(dir.path()).unwrap();
    let c = db.cell(Radio::Gsm, 262, 1, 100, 1).unwrap();
    assert_eq!((c.lat_e7, c.lon_e7), (525_000_000, 134_000_000));
    assert_eq!((c.range_m(), c.samples(), c.psc()), (1000, 10, None));
    assert_eq!(
        c.info(),
        stored(52.5, 13.4, 1000, 10, 1_600_000_000, 1_700_000_000)
    );

    let u = db.cell(Radio::Umts, 262, 2, 7, 790_849).unwrap();
    assert_eq!(u.psc(), Some(503));
    // One UMTS cell with a 28-bit id: reachable by its short id too.
    assert_eq!(
        db.cells_by_short_cid(Radio::Umts, 262, 2, 7, (790_849u32 & 0xffff) as u16)
            .len(),
        1
    );

    let l = db.cell(Radio::Lte, 262, 3, 40000, 268_435_455).unwrap();
    assert_eq!(
        l.psc(),
        None,
        "PCI 600 is out of range for LTE: unknown, row kept"
    );
    assert_eq!(l.range_m(), 1500, "range 0 -> LTE default");

    let n = db
        .cell(Radio::Nr, 262, 3, 16_777_215, 68_719_476_735)
        .unwrap();
    assert_eq!(
        (n.psc(), n.range_m()),
        (Some(1007), 500),
        "missing range -> NR default"
    );

    let cdma = db.cell(Radio::Cdma, 310, 32767, 65534, 65535).unwrap();
    assert_eq!(cdma.lon_e7, -1_000_000_000);
    assert_eq!(db.cdma_mccs(32767), &[310]);

    assert!(db.cell(Radio::Nbiot, 262, 1, 5, 123).is_some());
    assert!(db.cell(Radio::Gsm, 262, 1, 100, 2).is_some());
    assert!(db.area(Radio::Gsm, 262, 1, 100).is_some());
    assert_eq!(db.manifest().sources, vec!["cells_crlf.csv".to_string()]);
}

#[test]
fn gzip_including_multi_member_is_detected_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read(fixture("cells_crlf.csv")).unwrap();
    let (head, tail) = text.split_at(text.len() / 2);
    // Two gzip members, split mid-line, under a name that says nothing.
    let mut bytes = Vec::new();
    for part in [head, tail] {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(part).unwrap();
        bytes.extend(gz.finish().unwrap());
    }
    let path = dir.path().join("export.data");
    fs::write(&path, &bytes).unwrap();
    let db_dir = dir.path().join("db");
    let mut last: Option<Progress> = None;
    let rep = import_files(&db_dir, &[path], &ImportOptions::default(), &mut |p| {
        if p.phase == Phase::Reading {
            last = Some(p.clone());
        }
        true
    })
    .unwrap();
    assert_eq!((rep.files[0].accepted, rep.cells), (7, 7));
    let last = last.unwrap();
    assert_eq!(
        last.bytes_total,
        bytes.len() as u64,
        "progress counts compressed bytes"
    );
    assert_eq!((last.bytes_done, last.rows), (bytes.len() as u64, 7));
}

#[test]
fn headerless_cell_export() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["headerless.csv"]);
    let f = &rep.files[0];
    assert_eq!((f.kind, f.rows, f.accepted), (SourceKind::CellCsv, 3, 2));
    assert_eq!(
        f.bad_lines,
        vec![(3, "cid: 70000 out of range 0..=65535 for gsm".to_string())]
    );
}

#[test]
fn wifi_in_every_bssid_format() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["wifi.csv"]);
    let f = &rep.files[0];
    assert_eq!(
        (f.kind, f.rows, f.accepted, f.rejected),
        (SourceKind::WifiCsv, 8, 5, 3)
    );
    assert_eq!(
        f.bad_lines,
        vec![
            (
                7,
                "bssid: multicast/broadcast address \"01:00:5e:00:00:01\"".to_string()
            ),
            (
                8,
                "bssid: multicast/broadcast address \"ff:ff:ff:ff:ff:ff\"".to_string()
            ),
            (9, "bssid: not a valid value \"00:11:22:33:44\"".to_string()),
        ]
    );
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.stats().wifi, 5);
    let w = db.wifi(0x0011_2233_4455).unwrap();
    assert_eq!(
        (w.lat_e7, w.lon_e7, w.range_m(), w.samples()),
        (525_001_000, 134_001_000, 52, 4)
    );
    assert_eq!(db.wifi(0x0011_2233_4466).unwrap().range_m(), 60);
    assert_eq!(
        db.wifi(0x0011_2233_4477).unwrap().range_m(),
        100,
        "WiFi default range"
    );
    assert!(db.wifi(0x0011_2233_4488).is_some());
    assert!(
        db.wifi(0xaabb_ccdd_eeff).is_some(),
        "locally administered BSSIDs are kept"
    );
}

#[test]
fn bad_rows_are_counted_and_reported_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["bad_rows.csv"]);
    let f = &rep.files[0];
    assert_eq!((f.rows, f.accepted, f.rejected), (15, 2, 13));
    let expected = [
        (
            3,
            "radio: unknown \"WIFI\" (expected GSM, UMTS, LTE, CDMA, NR or NBIOT)",
        ),
        (4, "lac: 65534 out of range 0..=65533 for gsm"),
        (5, "cid: 65536 out of range 0..=65535 for gsm"),
        (6, "mcc: 1000 out of range 0..=999"),
        (7, "mnc: 1000 out of range 0..=999 for gsm"),
        (8, "position (0, 0) is a placeholder, not a location"),
        (9, "lat: 91.5 out of range -90..=90"),
        (10, "lon: 180.5 out of range -180..=180"),
        (11, "lon: not a number \"abc\""),
        (12, "expected 14 fields, found 10"),
        (13, "lat: not a number \"nan\""),
        (14, "cid: 268435456 out of range 0..=268435455 for lte"),
        (15, "range: -5 out of range >= 0"),
    ];
    let got: Vec<(u64, &str)> = f.bad_lines.iter().map(|(l, r)| (*l, r.as_str())).collect();
    assert_eq!(got, expected);
    assert_eq!(rep.cells, 2, "the quoted row on line 16 is accepted");

    let opts = ImportOptions {
        max_error_lines: 3,
        replace: true,
        ..ImportOptions::default()
    };
    let rep = run(dir.path(), &[fixture("bad_rows.csv")], &opts).unwrap();
    let lines: Vec<u64> = rep.files[0].bad_lines.iter().map(|b| b.0).collect();
    assert_eq!((rep.files[0].rejected, lines), (13, vec![3, 4, 5]));
}

#[test]
fn duplicates_merge_by_sample_weight() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["dups.csv", "wifi_dups.csv"]);
    assert_eq!((rep.cells, rep.wifi, rep.merged_duplicates), (3, 2, 3));
    let db = Database::open(dir.path()).unwrap();

    // Weights 1 and 2: (52.0 + 2 * 52.3) / 3 = 52.2; ranges (1000 + 2 * 2000) / 3 = 1667.
    let c = db.cell(Radio::Gsm, 262, 1, 100, 1).unwrap();
    assert_eq!((c.lat_e7, c.lon_e7), (522_000_000, 132_000_000));
    assert_eq!(
        c.info(),
        stored(52.2, 13.2, 1667, 3, 1_400_000_000, 1_700_000_000)
    );
    // Zero samples still weigh 1; no range given: the GSM default.
    let z = db.cell(Radio::Gsm, 262, 1, 100, 2).unwrap();
    assert_eq!(
        (z.lat_e7, z.lon_e7, z.samples(), z.range_m()),
        (105_000_000, 105_000_000, 0, 3000)
    );
    // Same lac/cid under another radio is another cell.
    assert_eq!(db.cell(Radio::Lte, 262, 1, 100, 1).unwrap().samples(), 1);

    // Weights 1 and 3 across BSSID spellings: 52.5 + 3/4 * 0.0003 = 52.500225.
    let w = db.wifi(0x0011_2233_4455).unwrap();
    assert_eq!((w.lat_e7, w.lon_e7), (525_002_250, 134_002_250));
    assert_eq!(
        w.info(),
        stored(52.500225, 13.400225, 40, 4, 1_500_000_000, 1_700_000_000)
    );
}

#[test]
fn second_import_adds_and_updates() {
    let dir = tempfile::tempdir().unwrap();
    import(dir.path(), &["cells_crlf.csv", "wifi.csv"]);
    let rep = import(dir.path(), &["update.csv"]);
    assert_eq!((rep.cells, rep.wifi, rep.merged_duplicates), (8, 5, 1));
    assert_clean(dir.path());
    let db = Database::open(dir.path()).unwrap();
    // Stored (52.5, 13.4) x 10 samples + new (52.9, 13.8) x 30 -> (52.8, 13.7).
    let c = db.cell(Radio::Gsm, 262, 1, 100, 1).unwrap();
    assert_eq!((c.lat_e7, c.lon_e7), (528_000_000, 137_000_000));
    assert_eq!(
        c.info(),
        stored(52.8, 13.7, 1750, 40, 1_500_000_000, 1_750_000_000)
    );
    assert!(db.cell(Radio::Gsm, 262, 1, 200, 1).is_some());
    assert!(
        db.cell(Radio::Gsm, 262, 1, 100, 2).is_some(),
        "old cells stay"
    );
    assert!(db.wifi(0x0011_2233_4455).is_some(), "old WiFi stays");
    assert_eq!(
        db.manifest().sources,
        vec!["cells_crlf.csv", "wifi.csv", "update.csv"]
    );
}

#[test]
fn replace_drops_the_old_stations() {
    let dir = tempfile::tempdir().unwrap();
    import(dir.path(), &["cells_crlf.csv", "wifi.csv"]);
    let opts = ImportOptions {
        replace: true,
        ..ImportOptions::default()
    };
    let rep = run(dir.path(), &[fixture("update.csv")], &opts).unwrap();
    assert_eq!((rep.cells, rep.wifi, rep.merged_duplicates), (2, 0, 0));
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.cell(Radio::Gsm, 262, 1, 100, 1).unwrap().samples(), 30);
    assert!(db.cell(Radio::Gsm, 262, 1, 100, 2).is_none());
    assert_eq!(db.manifest().sources, vec!["update.csv"]);
}

#[test]
fn unknown_header_is_a_format_error_naming_the_accepted_ones() {
    let dir = tempfile::tempdir().unwrap();
    import(dir.path(), &["wifi.csv"]);
    let files = [fixture("cells_crlf.csv"), fixture("unknown_header.csv")];
    let err = run(dir.path(), &files, &ImportOptions::default()).unwrap_err();
    let ImportError::Format(msg) = err else {
        panic!("expected a format error, got {err:?}");
    };
    assert!(
        msg.contains("unknown_header.csv") && msg.contains("line 1"),
        "{msg}"
    );
    assert!(msg.contains("radio,mcc,mnc,lac,cid,lat,lon"), "{msg}");
    assert!(msg.contains(whereabouts_core::import::CELL_HEADER), "{msg}");
    assert!(msg.contains(whereabouts_core::import::WIFI_HEADER), "{msg}");
    // The import failed as a whole: the database is as before.
    let db = Database::open(dir.path()).unwrap();
    assert_eq!((db.stats().cells, db.stats().wifi), (0, 5));
    assert_clean(dir.path());
}

#[test]
fn cancel_leaves_the_previous_database() {
    let dir = tempfile::tempdir().unwrap();
    import(dir.path(), &["cells_crlf.csv"]);
    let before = all_stations(&Database::open(dir.path()).unwrap());
    let manifest = fs::read(dir.path().join("manifest.json")).unwrap();
    for stop_at in [Phase::Reading, Phase::Merging, Phase::Writing] {
        let err = import_files(
            dir.path(),
            &[fixture("update.csv")],
            &ImportOptions::default(),
            &mut |p| p.phase != stop_at,
        )
        .unwrap_err();
        assert!(matches!(err, ImportError::Cancelled), "{err:?}");
        assert_eq!(
            fs::read(dir.path().join("manifest.json")).unwrap(),
            manifest
        );
        assert_eq!(all_stations(&Database::open(dir.path()).unwrap()), before);
        assert_clean(dir.path());
    }
}

#[test]
fn many_small_runs_give_the_same_database_as_one() {
    let names = [
        "cells_crlf.csv",
        "dups.csv",
        "wifi.csv",
        "wifi_dups.csv",
        "update.csv",
    ];
    let files: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    let one = tempfile::tempdir().unwrap();
    let many = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let a = run(one.path(), &files, &ImportOptions::default()).unwrap();
    let opts = ImportOptions {
        run_rows: 3,
        temp_dir: Some(spill.path().to_path_buf()),
        ..ImportOptions::default()
    };
    let b = run(many.path(), &files, &opts).unwrap();
    assert_eq!(
        (a.cells, a.wifi, a.merged_duplicates),
        (b.cells, b.wifi, b.merged_duplicates)
    );
    assert_eq!(
        all_stations(&Database::open(one.path()).unwrap()),
        all_stations(&Database::open(many.path()).unwrap())
    );
    assert_eq!(
        fs::read_dir(spill.path()).unwrap().count(),
        0,
        "spilled runs removed"
    );
}

#[test]
fn more_runs_than_the_fan_in_are_merged_in_passes() {
    // 300 rows in runs of 2: 150 runs, more than one merge can open at once.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("bssid,lat,lon,range,samples,created,updated\n");
    for i in 0..300u64 {
        let bssid = 0x0200_0000_0000u64 + (i * 7919) % 101; // many duplicates
        text += &format!(
            "{bssid:012x},{}.5,13.25,{},{},1600000000,1700000000\n",
            40 + i % 7,
            10 + i,
            i % 5
        );
    }
    let input = dir.path().join("many.csv");
    fs::write(&input, text).unwrap();
    let (one, many) = (dir.path().join("one"), dir.path().join("many"));
    let a = run(
        &one,
        std::slice::from_ref(&input),
        &ImportOptions::default(),
    )
    .unwrap();
    let opts = ImportOptions {
        run_rows: 2,
        ..ImportOptions::default()
    };
    let b = run(&many, &[input], &opts).unwrap();
    assert_eq!((a.wifi, a.merged_duplicates), (101, 199));
    assert_eq!((b.wifi, b.merged_duplicates), (101, 199));
    assert_eq!(
        all_stations(&Database::open(&one).unwrap()),
        all_stations(&Database::open(&many).unwrap())
    );
    assert_clean(&many);
}

fn sqlite_fixture(path: &Path, with_radio: bool) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let radio_col = if with_radio { ", radio TEXT" } else { "" };
    conn.execute_batch(&format!(
        "CREATE TABLE cells (mcc INTEGER, mnc INTEGER, lac INTEGER, cid INTEGER,
           longitude REAL, latitude REAL, accuracy REAL, samples INTEGER, extra TEXT{radio_col});
         CREATE TABLE other (x);"
    ))
    .unwrap();
    // mcc, mnc, lac, cid, longitude, latitude, accuracy, samples, radio
    type Row = (i64, i64, i64, i64, f64, f64, f64, i64, &'static str);
    let rows: [Row; 4] = [
        (262, 1, 100, 1234, 13.4, 52.5, 800.4, 7, "gsm"),
        (262, 2, 7, 790_849, 11.5, 48.1, 0.0, 3, "lte"),
        (262, 1, 100, 1235, 13.4, 100.0, 800.0, 1, "gsm"),
        (262, 1, 101, 1236, 13.5, 52.6, 900.0, 1, "wimax"),
    ];
    for r in rows {
        if with_radio {
            conn.execute(
                "INSERT INTO cells VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'x', ?9)",
                rusqlite::params![r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8],
            )
            .unwrap();
        } else {
            conn.execute(
                "INSERT INTO cells VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'x')",
                rusqlite::params![r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7],
            )
            .unwrap();
        }
    }
}

#[test]
fn sqlite_cells_table() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("towers.db");
    sqlite_fixture(&src, false);
    let db_dir = dir.path().join("db");
    let rep = run(
        &db_dir,
        std::slice::from_ref(&src),
        &ImportOptions::default(),
    )
    .unwrap();
    let f = &rep.files[0];
    assert_eq!(
        (f.kind, f.rows, f.accepted, f.rejected),
        (SourceKind::SqliteCells, 4, 3, 1)
    );
    assert_eq!(
        f.bad_lines,
        vec![(3, "lat: 100 out of range -90..=90".to_string())]
    );
    let db = Database::open(&db_dir).unwrap();
    // No radio column: 16-bit ids are GSM, longer ones UMTS.
    let g = db.cell(Radio::Gsm, 262, 1, 100, 1234).unwrap();
    assert_eq!((g.lat_e7, g.range_m(), g.samples()), (525_000_000, 800, 7));
    let mtime = fs::metadata(&src).unwrap().modified().unwrap();
    let mtime = mtime
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert_eq!(
        g.updated(),
        stored(1.0, 1.0, 1, 1, mtime, mtime).updated,
        "times: the file's"
    );
    assert_eq!(
        db.cell(Radio::Umts, 262, 2, 7, 790_849).unwrap().range_m(),
        2000,
        "UMTS default"
    );

    let opts = ImportOptions {
        sqlite_radio: Some(Radio::Lte),
        replace: true,
        ..ImportOptions::default()
    };
    run(&db_dir, std::slice::from_ref(&src), &opts).unwrap();
    let db = Database::open(&db_dir).unwrap();
    assert!(db.cell(Radio::Lte, 262, 1, 100, 1234).is_some());
    assert!(db.cell(Radio::Lte, 262, 2, 7, 790_849).is_some());
    assert!(db.cell(Radio::Gsm, 262, 1, 100, 1234).is_none());
}

#[test]
fn sqlite_radio_column_wins_and_gzip_works() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("towers.db");
    sqlite_fixture(&src, true);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&fs::read(&src).unwrap()).unwrap();
    let packed = dir.path().join("towers.db.gz");
    fs::write(&packed, gz.finish().unwrap()).unwrap();
    let db_dir = dir.path().join("db");
    let opts = ImportOptions {
        sqlite_radio: Some(Radio::Nr),
        ..ImportOptions::default()
    };
    let rep = run(&db_dir, &[packed], &opts).unwrap();
    let f = &rep.files[0];
    assert_eq!(
        (f.kind, f.accepted, f.rejected),
        (SourceKind::SqliteCells, 2, 2)
    );
    assert_eq!(f.bad_lines[1], (4, "radio: unknown radio name".to_string()));
    let db = Database::open(&db_dir).unwrap();
    assert!(db.cell(Radio::Gsm, 262, 1, 100, 1234).is_some());
    assert!(db.cell(Radio::Lte, 262, 2, 7, 790_849).is_some());
    assert_clean(&db_dir);
}

#[test]
fn sqlite_without_cells_table_is_a_format_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("other.db");
    rusqlite::Connection::open(&src)
        .unwrap()
        .execute_batch("CREATE TABLE towers (a, b);")
        .unwrap();
    let err = run(&dir.path().join("db"), &[src], &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(&err, ImportError::Format(m) if m.contains("`cells`")),
        "{err:?}"
    );
}

#[test]
fn progress_is_reported_per_phase() {
    let dir = tempfile::tempdir().unwrap();
    let mut phases = Vec::new();
    import_files(
        dir.path(),
        &[fixture("cells_crlf.csv")],
        &ImportOptions::default(),
        &mut |p| {
            if phases.last() != Some(&p.phase) {
                phases.push(p.phase);
            }
            true
        },
    )
    .unwrap();
    assert_eq!(
        phases,
        [
            Phase::Reading,
            Phase::Sorting,
            Phase::Merging,
            Phase::Writing
        ]
    );
}

#[test]
fn peak_rss_is_known_on_linux() {
    let dir = tempfile::tempdir().unwrap();
    let rep = import(dir.path(), &["wifi.csv"]);
    if cfg!(target_os = "linux") {
        assert!(rep.peak_rss_bytes.unwrap() > 1 << 20);
    }
}

#[test]
fn bom_headerless_and_newline_free_binary_input() {
    let dir = tempfile::tempdir().unwrap();
    let bom = dir.path().join("bom.csv");
    let mut text = b"\xef\xbb\xbf".to_vec();
    text.extend(fs::read(fixture("headerless.csv")).unwrap());
    fs::write(&bom, text).unwrap();
    let rep = run(&dir.path().join("db"), &[bom], &ImportOptions::default()).unwrap();
    assert_eq!((rep.files[0].accepted, rep.files[0].rejected), (2, 1));

    // 20 MiB without a newline: refused without holding it all in memory.
    let blob = dir.path().join("blob.bin");
    fs::write(&blob, vec![b'x'; 20 << 20]).unwrap();
    let err = run(&dir.path().join("db"), &[blob], &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(&err, ImportError::Format(m) if m.contains("line 1 is longer")),
        "{err:?}"
    );
    assert_clean(&dir.path().join("db"));
}

#[test]
fn line_numbers_stay_exact_across_parallel_blocks() {
    // About 5 MiB: several parser blocks, each with bad and blank lines.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("bssid,lat,lon,range,samples,created,updated\r\n");
    let mut expected_bad = Vec::new();
    let mut accepted = 0u64;
    for line in 2..=80_000u64 {
        if line % 1013 == 0 {
            text += "\r\n";
        } else if line % 997 == 0 {
            text += &format!(
                "{:012x},95.0,13.4,50,1,1600000000,1700000000\r\n",
                0x0200_0000_0000u64 + line
            );
            expected_bad.push(line);
        } else {
            text += &format!(
                "{:012x},52.{line:05},13.4,50,1,1600000000,1700000000\r\n",
                0x0200_0000_0000u64 + line
            );
            accepted += 1;
        }
    }
    let input = dir.path().join("big.csv");
    fs::write(&input, text).unwrap();
    let opts = ImportOptions {
        max_error_lines: 1000,
        ..ImportOptions::default()
    };
    let rep = run(&dir.path().join("db"), &[input], &opts).unwrap();
    let f = &rep.files[0];
    let got: Vec<u64> = f.bad_lines.iter().map(|b| b.0).collect();
    assert_eq!(got, expected_bad);
    assert_eq!(
        (f.accepted, f.rejected),
        (accepted, expected_bad.len() as u64)
    );
    assert_eq!(rep.wifi, accepted);
    assert!(f
        .bad_lines
        .iter()
        .all(|b| b.1 == "lat: 95 out of range -90..=90"));
}

#[test]
fn a_line_too_long_after_blocks_in_flight_is_named_by_its_exact_number() {
    // About 3 MiB of rows (several parser blocks out when the long line is met), then
    // 17 MiB without a newline: the blocks in flight are applied first, so the number counts
    // every line before it.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("bssid,lat,lon,range,samples,created,updated\n");
    let rows = 60_000u64;
    for i in 0..rows {
        text += &format!(
            "{:012x},52.{i:05},13.4,50,1,1600000000,1700000000\n",
            0x0200_0000_0000u64 + i
        );
    }
    let mut bytes = text.into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', 17 << 20));
    let input = dir.path().join("long.csv");
    fs::write(&input, bytes).unwrap();
    let err = run(&dir.path().join("db"), &[input], &ImportOptions::default()).unwrap_err();
    let line = rows + 2;
    assert!(
        matches!(&err, ImportError::Format(m) if m.contains(&format!("line {line} is longer"))),
        "{err:?}"
    );
    assert_clean(&dir.path().join("db"));
}
