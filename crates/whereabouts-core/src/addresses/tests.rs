//! Importers, lookups, search and merging, on files the tests write.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::pbf_writer::{self, Node, Way};
use super::*;
use crate::import::SourceKind;

const OA_HEADER: &str = "lon,lat,number,street,unit,city,district,region,postcode,id,hash";

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn import(out: &Path, files: &[PathBuf], replace: bool) -> AddressImportReport {
    let opts = AddressImportOptions {
        replace,
        ..Default::default()
    };
    import_address_files(out, files, &opts, &mut |_| true).unwrap()
}

fn oa_csv() -> String {
    [
        OA_HEADER,
        "-0.1276400,51.5033960,10,Downing Street,,London,,,SW1A 2AA,1,a",
        "-0.1278700,51.5034600,11,Downing St,,London,,,SW1A 2AB,2,b",
        "",
        "-0.1262000,51.5010000,1,\"Parliament Street, West\",,London,,,,3,c",
        "x,51.5,5,Whitehall,,London,,,,4,d",
        "-0.1262000,51.5010000,,Whitehall,,London,,,,5,e",
        "0,0,7,Nowhere Road,,,,,,6,f",
        "-0.1262000,95,8,Whitehall,,,,,,7,g",
        "13.3777,52.5163,5,Hauptstraße,,Berlin,,,10117,8,h",
    ]
    .join("\n")
}

/// The street fixture of `test/fixtures/streets.osm.pbf` (used by the JS tests too).
fn streets_pbf() -> Vec<u8> {
    let house: &[(&str, &str)] = &[
        ("addr:housenumber", "10"),
        ("addr:street", "Downing Street"),
        ("addr:postcode", "SW1A 2AA"),
        ("addr:city", "London"),
        ("addr:suburb", "Westminster"),
    ];
    let nodes: Vec<Node> = vec![
        (1, 51.503396, -0.127640, house),
        (2, 51.50340, -0.12700, &[]),
        (3, 51.50360, -0.12900, &[]),
        (4, 51.50280, -0.12610, &[]),
        (5, 51.50500, -0.12660, &[]),
        (6, 51.50343, -0.12795, &[]),
        (7, 51.50343, -0.12780, &[]),
        (8, 51.50350, -0.12780, &[]),
        (9, 51.50350, -0.12795, &[]),
    ];
    let ways: Vec<Way> = vec![
        (
            100,
            &[2, 3],
            &[("highway", "residential"), ("name", "Downing Street")],
        ),
        (
            101,
            &[4, 5],
            &[("highway", "primary"), ("name", "Whitehall")],
        ),
        (
            102,
            &[6, 7, 8, 9, 6],
            &[
                ("building", "yes"),
                ("addr:housenumber", "11"),
                ("addr:street", "Downing Street"),
            ],
        ),
        (
            103,
            &[4, 999],
            &[("highway", "service"), ("name", "Lost Lane")],
        ),
        (104, &[2, 4], &[("highway", "footway")]),
    ];
    pbf_writer::write(&nodes, &ways)
}

#[test]
fn openaddresses_rows_are_read_by_column_name_and_bad_rows_reported_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "oa.csv", oa_csv().as_bytes());
    assert_eq!(detect(&csv).unwrap(), Some(SourceKind::OpenAddressesCsv));
    let out = dir.path().join(FILE_NAME);
    let r = import(&out, &[csv], false);
    let f = &r.files[0];
    assert_eq!((f.rows, f.accepted, f.rejected), (8, 4, 4));
    let lines: Vec<u64> = f.bad_lines.iter().map(|b| b.0).collect();
    assert_eq!(lines, vec![6, 7, 8, 9]);
    assert!(
        f.bad_lines[0].1.contains("lon: not a number"),
        "{:?}",
        f.bad_lines
    );
    assert!(f.bad_lines[1].1.contains("number: missing"));
    assert!(f.bad_lines[2].1.contains("0,0"));
    assert!(f.bad_lines[3].1.contains("lat: out of range"));
    assert_eq!(r.addresses, 4);

    let idx = AddressIndex::open(&out).unwrap();
    let a = idx.nearest_address(51.50340, -0.12765, 100.0).unwrap();
    assert_eq!(
        (a.house_number, a.road, a.postcode, a.city, a.suburb),
        (
            "10",
            "Downing Street",
            Some("SW1A 2AA"),
            Some("London"),
            None
        )
    );
    assert!(a.distance_m < 2.0, "{}", a.distance_m);
    let quoted = idx.nearest_address(51.5010, -0.1262, 10.0).unwrap();
    assert_eq!(quoted.road, "Parliament Street, West");
    assert!(idx.nearest_address(51.5100, -0.1276, 100.0).is_none());
    assert!(idx.nearest_address(91.0, 0.0, 100.0).is_none());
}

#[test]
fn a_line_that_is_not_utf8_is_one_bad_row_and_the_next_line_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"LON,LAT,NUMBER,STREET\n-0.1,51.5,1,Bad \xff Road\n".to_vec();
    bytes.extend_from_slice(b"-0.1,51.6,2,Good Road\n");
    let csv = write(dir.path(), "latin1.csv", &bytes);
    let r = import(&dir.path().join(FILE_NAME), &[csv], false);
    let f = &r.files[0];
    assert_eq!((f.rows, f.accepted, f.rejected), (2, 1, 1));
    assert_eq!(f.bad_lines, vec![(2, "not UTF-8".to_string())]);
}

#[test]
fn gzip_and_upper_case_headers_are_read_and_other_files_are_not_address_files() {
    let dir = tempfile::tempdir().unwrap();
    let text = oa_csv().replacen(OA_HEADER, &OA_HEADER.to_uppercase(), 1);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz_file = write(dir.path(), "oa.csv.gz", &gz.finish().unwrap());
    assert_eq!(
        detect(&gz_file).unwrap(),
        Some(SourceKind::OpenAddressesCsv)
    );
    let r = import(&dir.path().join(FILE_NAME), &[gz_file], false);
    assert_eq!(r.addresses, 4);

    let cells = write(
        dir.path(),
        "cells.csv",
        crate::import::CELL_HEADER.as_bytes(),
    );
    assert_eq!(detect(&cells).unwrap(), None);
    let err = import_address_files(
        &dir.path().join("x.bin"),
        &[cells],
        &AddressImportOptions::default(),
        &mut |_| true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("not an address file"), "{err}");
}

#[test]
fn osm_nodes_ways_and_named_roads_are_imported_and_looked_up() {
    let dir = tempfile::tempdir().unwrap();
    let pbf = write(dir.path(), "streets.osm.pbf", &streets_pbf());
    assert_eq!(detect(&pbf).unwrap(), Some(SourceKind::OsmPbf));
    let out = dir.path().join(FILE_NAME);
    let r = import(&out, &[pbf], false);
    let f = &r.files[0];
    // node 1, ways 100, 101, 102 accepted; way 103 lacks node 999; way 104 has no name
    assert_eq!((f.rows, f.accepted, f.rejected), (5, 4, 1));
    assert_eq!(f.bad_lines[0].0, 103);
    assert!(f.bad_lines[0].1.contains("node 999 is not in the file"));
    assert_eq!((r.addresses, r.roads), (2, 2));

    let idx = AddressIndex::open(&out).unwrap();
    let ten = idx.nearest_address(51.503396, -0.127640, 50.0).unwrap();
    assert_eq!(
        (ten.house_number, ten.postcode, ten.city, ten.suburb),
        ("10", Some("SW1A 2AA"), Some("London"), Some("Westminster"))
    );
    // the building's centroid, its closing vertex counted once
    let eleven = idx.nearest_address(51.503465, -0.127875, 3.0).unwrap();
    assert_eq!(eleven.house_number, "11");
    assert!(eleven.distance_m < 0.5, "{}", eleven.distance_m);

    // 20 m north of Whitehall's line, far from both of its vertices
    let road = idx
        .nearest_road(51.50390, -0.12635 + 0.00029, 100.0)
        .unwrap();
    assert_eq!(road.name, "Whitehall");
    assert!(
        road.distance_m < 25.0 && road.distance_m > 10.0,
        "{}",
        road.distance_m
    );
    assert!(idx.nearest_road(51.5100, -0.1200, 100.0).is_none());
}

#[test]
fn the_committed_osm_fixture_is_the_one_this_writer_makes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/streets.osm.pbf");
    let bytes = streets_pbf();
    if std::env::var_os("WHEREABOUTS_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).expect("run with WHEREABOUTS_WRITE_FIXTURES=1 to write it"),
        bytes,
        "test/fixtures/streets.osm.pbf is stale: run with WHEREABOUTS_WRITE_FIXTURES=1"
    );
}

#[test]
fn search_finds_house_numbers_through_abbreviations_and_ranks_by_score() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "oa.csv", oa_csv().as_bytes());
    let out = dir.path().join(FILE_NAME);
    import(&out, &[csv], false);
    let idx = AddressIndex::open(&out).unwrap();

    let hits = idx.search("10", "Downing St", "London", 5);
    assert_eq!(hits[0].address.house_number, "10");
    assert_eq!(hits[0].address.road, "Downing Street");
    assert!((hits[0].score - 1.0).abs() < 1e-9, "{}", hits[0].score);
    // "Downing St" in the data is the same street, but 11 is not 10
    assert_eq!(hits.len(), 1);

    let berlin = idx.search("5", "Hauptstr.", "", 5);
    assert_eq!(berlin[0].address.road, "Hauptstraße");
    let wrong_city = idx.search("10", "downing street", "Paris", 5);
    assert!((wrong_city[0].score - 0.8).abs() < 1e-9);
    let all = idx.search("", "Downing Street", "", 5);
    assert_eq!(all.len(), 2);
    assert!(idx.search("10", "Abbey Road", "", 5).is_empty());
    assert!(idx.search("10", "", "", 5).is_empty());
}

#[test]
fn a_second_import_merges_and_folds_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(FILE_NAME);
    let a = write(dir.path(), "a.csv", oa_csv().as_bytes());
    import(&out, &[a], false);
    let b = write(
        dir.path(),
        "b.csv",
        b"LON,LAT,NUMBER,STREET,POSTCODE\n\
          -0.1276400,51.5033960,10,Downing Street,SW1A 2AA\n\
          -0.1400000,51.5010000,1,Buckingham Gate,SW1E 6JP\n",
    );
    let pbf = write(dir.path(), "s.osm.pbf", &streets_pbf());
    let r = import(&out, &[b, pbf.clone()], false);
    // 4 old + 2 CSV + 2 OSM; the CSV and OSM 10 Downing Street fold into the old one
    assert_eq!(r.addresses, 6);
    assert_eq!(r.merged_duplicates, 2);
    let idx = AddressIndex::open(&out).unwrap();
    let ten = idx.nearest_address(51.503396, -0.127640, 1.0).unwrap();
    // the fold fills the suburb that only OSM had
    assert_eq!(
        (ten.city, ten.suburb),
        (Some("London"), Some("Westminster"))
    );
    assert!(idx.nearest_address(51.5010, -0.1400, 5.0).is_some());

    // importing the same roads again folds them too
    let r = import(&out, std::slice::from_ref(&pbf), false);
    assert_eq!((r.addresses, r.roads), (6, 2));
    let r = import(&out, &[pbf], true);
    assert_eq!((r.addresses, r.roads), (2, 2));
}

#[test]
fn a_damaged_file_is_refused_and_a_cancelled_import_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(FILE_NAME);
    let a = write(dir.path(), "a.csv", oa_csv().as_bytes());
    import(&out, std::slice::from_ref(&a), false);
    let before = std::fs::read(&out).unwrap();
    let err = import_address_files(&out, &[a], &AddressImportOptions::default(), &mut |_| false)
        .unwrap_err();
    assert!(matches!(err, crate::import::ImportError::Cancelled));
    assert_eq!(std::fs::read(&out).unwrap(), before);

    let mut bad = before.clone();
    bad[50] ^= 1;
    assert!(AddressIndex::from_bytes(&bad)
        .err()
        .unwrap()
        .to_string()
        .contains("checksum"));
    assert!(AddressIndex::from_bytes(&before[..40]).is_err());
}

#[test]
fn one_import_at_a_time_and_a_killed_imports_leftovers_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(FILE_NAME);
    let a = write(dir.path(), "a.csv", oa_csv().as_bytes());
    let leftover = write(dir.path(), ".addresses.bin.tmp-99999999", b"half a file");
    import(&out, std::slice::from_ref(&a), false);
    assert!(!leftover.exists());
    assert!(!dir.path().join(".addresses.bin.lock").exists());
    // pid 1 is alive: its lock stands
    std::fs::write(dir.path().join(".addresses.bin.lock"), "1\n").unwrap();
    let err = import_address_files(&out, &[a], &AddressImportOptions::default(), &mut |_| true)
        .unwrap_err();
    assert!(err.to_string().contains("another import"), "{err}");
}
