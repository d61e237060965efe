//! The station store: build, open, look up, shard, fail cleanly on corruption,
//! and stay a FlatBuffer that the reference implementation accepts.

use std::fs;
use std::path::Path;

use whereabouts_core::radio::Radio;
use whereabouts_core::store::record::{cell_key, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder, StoreError};

fn info(lat: f64, lon: f64, range_m: u32, samples: u32) -> StationInfo {
    StationInfo {
        lat,
        lon,
        range_m,
        samples,
        psc: None,
        created: 1_600_000_000,
        updated: 1_700_000_000,
        estimated: whereabouts_core::store::record::Estimated::Averaged,
    }
}

#[test]
fn an_area_of_several_cells_is_their_positions_extent_and_a_lone_cells_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    // LAC 100: three cells within 200 m of each other, each claiming 5 km.
    for (cid, lat) in [(1, 52.500), (2, 52.501), (3, 52.502)] {
        let st = Station::new(cell_key(Radio::Gsm, 100, cid), &info(lat, 13.40, 5_000, 10));
        b.push_cell(Radio::Gsm, 262, 1, st).unwrap();
    }
    // LAC 101: one cell.
    let st = Station::new(cell_key(Radio::Gsm, 101, 1), &info(52.60, 13.50, 2_000, 10));
    b.push_cell(Radio::Gsm, 262, 1, st).unwrap();
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let several = db.area(Radio::Gsm, 262, 1, 100).unwrap();
    assert!(
        several.range_m > 50 && several.range_m < 250,
        "{}",
        several.range_m
    );
    assert_eq!(db.area(Radio::Gsm, 262, 1, 101).unwrap().range_m, 2_000);
}

/// Two networks, two LACs, a UMTS cell with a 28-bit id and two WiFi APs.
fn build_small(dir: &Path, opts: BuildOptions) {
    let mut b = DbBuilder::new(dir, opts).unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 100, 1), &info(52.50, 13.40, 1000, 10)),
    )
    .unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 100, 2), &info(52.52, 13.42, 800, 5)),
    )
    .unwrap();
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 101, 1), &info(52.60, 13.50, 2000, 1)),
    )
    .unwrap();
    b.push_cell(
        Radio::Umts,
        262,
        2,
        Station::new(
            cell_key(Radio::Umts, 7, (12 << 16) | 4321),
            &info(48.1, 11.5, 500, 3),
        ),
    )
    .unwrap();
    b.push_wifi(Station::new(
        0x0011_2233_4455,
        &info(52.5001, 13.4001, 50, 4),
    ))
    .unwrap();
    b.push_wifi(Station::new(
        0x0011_2233_4466,
        &info(52.5002, 13.4002, 60, 4),
    ))
    .unwrap();
    b.commit().unwrap();
}

#[test]
fn build_open_and_look_up() {
    let dir = tempfile::tempdir().unwrap();
    build_small(dir.path(), BuildOptions::default());
    let db = Database::open(dir.path()).unwrap();
    let st = db.stats();
    assert_eq!((st.cells, st.wifi, st.areas, st.networks), (4, 2, 3, 2));

    let c = db.cell(Radio::Gsm, 262, 1, 100, 2).unwrap();
    assert!((c.lat() - 52.52).abs() < 1e-7 && c.range_m() == 800 && c.samples() == 5);
    assert!(db.cell(Radio::Gsm, 262, 1, 100, 3).is_none());
    assert!(db.cell(Radio::Lte, 262, 1, 100, 2).is_none());
    assert!(db.cell(Radio::Gsm, 262, 2, 100, 2).is_none());

    let area = db.area(Radio::Gsm, 262, 1, 100).unwrap();
    assert_eq!(area.cells, 2);
    assert!(area.lat() > 52.50 && area.lat() < 52.52);
    assert!(db.area(Radio::Gsm, 262, 1, 102).is_none());

    let short = db.cells_by_short_cid(Radio::Umts, 262, 2, 7, 4321);
    assert_eq!(short.len(), 1);
    assert!((short[0].lat() - 48.1).abs() < 1e-7);
    assert!(db
        .cells_by_short_cid(Radio::Umts, 262, 2, 8, 4321)
        .is_empty());

    assert!(db.wifi(0x0011_2233_4466).is_some());
    assert!(db.wifi(0x0011_2233_4467).is_none());
    assert_eq!(db.iter_cells().count(), 4);
    assert_eq!(db.iter_wifi().count(), 2);
}

#[test]
fn short_cids_are_found_by_a_scan_of_their_lac_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    let short = 0x1234u64;
    // LAC 7: two long ids ending in the short one (two RNCs), a long id ending otherwise, and
    // a 16-bit id equal to the short one (found by its full id, never by the fallback);
    // LACs 6 and 8 hold long ids ending in it too.
    let cells = [
        (6, 0x5_0000 | short, 40.0),
        (7, short, 41.0),
        (7, 0x1_0000 | 0x1235, 42.0),
        (7, 0x3_0000 | short, 43.0),
        (7, 0xfff_0000 | short, 44.0),
        (8, 0x1_0000 | short, 45.0),
    ];
    for (lac, cid, lat) in cells {
        let s = Station::new(cell_key(Radio::Lte, lac, cid), &info(lat, 8.0, 1000, 3));
        b.push_cell(Radio::Lte, 262, 1, s).unwrap();
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let lats = |lac: u32| -> Vec<f64> {
        db.cells_by_short_cid(Radio::Lte, 262, 1, lac, short as u16)
            .iter()
            .map(|s| s.lat())
            .collect()
    };
    assert_eq!(lats(7), [43.0, 44.0]);
    assert_eq!(lats(6), [40.0]);
    assert_eq!(lats(8), [45.0]);
    assert!(lats(9).is_empty());
    assert!(db
        .cells_by_short_cid(Radio::Umts, 262, 1, 7, short as u16)
        .is_empty());
}

#[test]
fn a_database_stays_within_24_bytes_a_cell() {
    // Whole files: the 23-byte records, fences, areas, the masts' index and headers. LTE and
    // NR ids are the widest; format 6 spent 28 bytes a cell on LTE with its short-CID index.
    for (radio, lac_bits, cid_base) in [
        (Radio::Gsm, 16, 0),
        (Radio::Lte, 16, 0x100_0000),
        (Radio::Nr, 24, 0xf_0000_0000),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
        let n = 100_000u64;
        for i in 0..n {
            let lac = ((1u64 << lac_bits) - 1000 + i / 1000) as u32;
            let s = Station::new(
                cell_key(Radio::Nr, lac, cid_base + i % 1000),
                &info(50.0 + i as f64 * 1e-5, 8.0, 1000, 3),
            );
            b.push_cell(radio, 262, 1, s).unwrap();
        }
        let (_, stats) = b.commit().unwrap();
        let per_cell = stats.bytes as f64 / n as f64;
        // 23 (record) + 8/64 (fence) + 4/64 (mast index) + 24/1000 (area) + headers
        assert!(per_cell < 23.25, "{radio}: {per_cell} bytes per cell");
    }
}

#[test]
fn fence_lookups_find_every_station_and_nothing_else() {
    // Networks of awkward sizes so that their ranges start and end inside fence blocks.
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    let sizes = [1u64, 63, 64, 65, 1000, 4097];
    let key_of = |net: u64, i: u64| (i * 7 + net) * 3; // sparse: neighbours are absent
    for (net, &n) in sizes.iter().enumerate() {
        for i in 0..n {
            let k = key_of(net as u64, i);
            let s = Station::new(
                cell_key(Radio::Gsm, (k >> 20) as u32, k & 0xfffff),
                &info(10.0, 10.0, 100, 1),
            );
            b.push_cell(Radio::Gsm, 100 + net as u16, 1, s).unwrap();
        }
    }
    for i in 0..5000u64 {
        b.push_wifi(Station::new(i * 5 + 2, &info(10.0, 10.0, 50, 1)))
            .unwrap();
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for (net, &n) in sizes.iter().enumerate() {
        let mcc = 100 + net as u16;
        for i in 0..n {
            let k = key_of(net as u64, i);
            let (lac, cid) = ((k >> 20) as u32, k & 0xfffff);
            assert!(
                db.cell(Radio::Gsm, mcc, 1, lac, cid).is_some(),
                "net {net} cell {i}"
            );
            assert!(db.cell(Radio::Gsm, mcc, 1, lac, cid + 1).is_none());
            assert!(
                db.cell(Radio::Gsm, mcc + 1, 1, lac, cid + 2).is_none() || net + 1 < sizes.len()
            );
        }
        assert!(db.cell(Radio::Gsm, mcc, 1, 0, 0).is_none() || key_of(net as u64, 0) == 0);
    }
    for i in 0..5000u64 {
        assert!(db.wifi(i * 5 + 2).is_some());
        assert!(db.wifi(i * 5 + 3).is_none());
    }
    assert!(db.wifi(0).is_none() && db.wifi(u64::MAX).is_none());
}

#[test]
fn shards_split_at_lac_groups_and_are_all_found() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BuildOptions {
        max_shard_bytes: 4096,
        ..BuildOptions::default()
    };
    let mut b = DbBuilder::new(dir.path(), opts).unwrap();
    for lac in 0..50u32 {
        for cid in 0..20u64 {
            let s = Station::new(
                cell_key(Radio::Lte, lac, 70_000 + cid),
                &info(40.0 + lac as f64 * 0.01, -3.0, 500, 2),
            );
            b.push_cell(Radio::Lte, 214, 7, s).unwrap();
        }
    }
    for k in 0..1000u64 {
        b.push_wifi(Station::new(k * 7 + 1, &info(40.0, -3.0, 40, 1)))
            .unwrap();
    }
    let (manifest, _) = b.commit().unwrap();
    assert!(
        manifest.shards.len() > 5,
        "{} shards",
        manifest.shards.len()
    );
    let db = Database::open(dir.path()).unwrap();
    for lac in 0..50u32 {
        assert_eq!(
            db.area(Radio::Lte, 214, 7, lac).unwrap().cells,
            20,
            "lac {lac}"
        );
        for cid in 0..20u64 {
            assert!(db.cell(Radio::Lte, 214, 7, lac, 70_000 + cid).is_some());
            // the two-step lookup of the solver finds the part of the split network too
            let block = db.cell_block(Radio::Lte, 214, 7, lac, 70_000 + cid);
            let found = block.and_then(|b| db.cell_among_in(b, lac, 70_000 + cid, (0, 0)));
            assert!(found.is_some(), "lac {lac} cid {cid}");
        }
        for missing in [69_999, 70_020] {
            assert!(db.cell(Radio::Lte, 214, 7, lac, missing).is_none());
            let block = db.cell_block(Radio::Lte, 214, 7, lac, missing);
            assert!(block
                .and_then(|b| db.cell_among_in(b, lac, missing, (0, 0)))
                .is_none());
        }
        assert_eq!(
            db.cells_by_short_cid(Radio::Lte, 214, 7, lac, (70_005u64 & 0xffff) as u16)
                .len(),
            1
        );
    }
    for k in 0..1000u64 {
        assert!(db.wifi(k * 7 + 1).is_some());
        assert!(db.wifi(k * 7 + 2).is_none());
    }
}

/// One operator's GSM and LTE sites on one mast, its UMTS site 5 km away, and another
/// operator's LTE site on the same mast: three sectors each, 300 m out from their mast.
fn build_masts(dir: &Path, opts: BuildOptions) {
    use whereabouts_core::geo::LocalFrame;
    let frame = LocalFrame::new(52.0, 4.0);
    let sectors = |east: f64, north: f64| -> Vec<StationInfo> {
        [0.0f64, 120.0, 240.0]
            .iter()
            .map(|az| {
                let (e, n) = (az.to_radians().sin() * 300.0, az.to_radians().cos() * 300.0);
                let (lat, lon) = frame.to_latlon(east + e, north + n);
                info(lat, lon, 800, 20)
            })
            .collect()
    };
    let mut b = DbBuilder::new(dir, opts).unwrap();
    for (i, s) in sectors(0.0, 0.0).iter().enumerate() {
        b.push_cell(
            Radio::Gsm,
            262,
            1,
            Station::new(cell_key(Radio::Gsm, 1, 11 + i as u64), s),
        )
        .unwrap();
    }
    // A lone GSM cell: no site of its own to pool.
    b.push_cell(
        Radio::Gsm,
        262,
        1,
        Station::new(cell_key(Radio::Gsm, 1, 21), &info(52.0, 4.0, 800, 20)),
    )
    .unwrap();
    for (i, s) in sectors(0.0, 5_000.0).iter().enumerate() {
        b.push_cell(
            Radio::Umts,
            262,
            1,
            Station::new(cell_key(Radio::Umts, 2, (1 << 16) | (15 + i as u64)), s),
        )
        .unwrap();
    }
    for (mnc, east) in [(1, 100.0), (2, 0.0)] {
        for (i, s) in sectors(east, 0.0).iter().enumerate() {
            let cid = (4_000 << 8) | (1 + i as u64);
            b.push_cell(
                Radio::Lte,
                262,
                mnc,
                Station::new(cell_key(Radio::Lte, 3, cid), s),
            )
            .unwrap();
        }
    }
    b.commit().unwrap();
}

#[test]
fn masts_pool_across_one_operators_radios_in_one_or_many_shards() {
    use whereabouts_core::geo::LocalFrame;
    use whereabouts_core::sites::{site_cids, SiteMast};
    for max_shard_bytes in [BuildOptions::default().max_shard_bytes, 100] {
        let dir = tempfile::tempdir().unwrap();
        build_masts(
            dir.path(),
            BuildOptions {
                max_shard_bytes,
                ..BuildOptions::default()
            },
        );
        let db = Database::open(dir.path()).unwrap();
        if max_shard_bytes == 100 {
            assert!(db.shards().len() >= 4, "{} shards", db.shards().len());
        }
        // The pooled mast as (east, north) metres from the site's own.
        let shift = |radio, mnc, lac, cid| {
            let site = site_cids(radio, cid).unwrap();
            let m = db
                .cell_among(radio, 262, mnc, lac, cid, site)
                .expect("cell found");
            let own = SiteMast::of(radio, m.neighbours).map(|s| (s.lat, s.lon))?;
            let (lat, lon) = m.pooled_mast()?.apply(own);
            let (e, n) = LocalFrame::new(own.0, own.1).to_xy(lat, lon);
            Some((e.round(), n.round()))
        };
        // The GSM and LTE masts of operator 1 are 100 m apart, within their sectors'
        // spread (300 m): each moves halfway to the other (to the metre of the stored shift).
        assert_eq!(shift(Radio::Gsm, 1, 1, 12), Some((50.0, 0.0)));
        assert_eq!(
            shift(Radio::Lte, 1, 3, (4_000 << 8) | 3),
            Some((-50.0, 0.0))
        );
        // Too far, alone, or another operator's.
        assert_eq!(shift(Radio::Umts, 1, 2, (1 << 16) | 16), None);
        assert_eq!(shift(Radio::Gsm, 1, 1, 21), None);
        assert_eq!(shift(Radio::Lte, 2, 3, (4_000 << 8) | 1), None);
        let masts: usize = db.shards().iter().map(|s| s.masts().len()).sum();
        assert_eq!(masts, 2);
    }
}

#[test]
fn every_pooled_site_is_found_through_its_block_of_cells() {
    use whereabouts_core::geo::LocalFrame;
    use whereabouts_core::sites::site_cids;
    // 700 masts 2 km apart, each with a GSM site of 2 or 3 sectors (so sites start anywhere
    // in the blocks of 64 cells, some cut by a block's start) and an LTE site 100 m off.
    let frame = LocalFrame::new(48.0, 11.0);
    let sector = |mast: u64, k: u64, east: f64| {
        let (lat, lon) = frame.to_latlon(
            (mast % 30) as f64 * 2_000.0 + east + 300.0 * k as f64,
            (mast / 30) as f64 * 2_000.0 + 300.0 * (k % 2) as f64,
        );
        info(lat, lon, 800, 20)
    };
    let sectors = |mast: u64| 2 + mast % 2;
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    for mast in 0..700u64 {
        for k in 0..sectors(mast) {
            let s = Station::new(
                cell_key(Radio::Gsm, 1, mast * 10 + k),
                &sector(mast, k, 0.0),
            );
            b.push_cell(Radio::Gsm, 262, 3, s).unwrap();
        }
    }
    let mut lte: Vec<Station> = (0..700u64)
        .flat_map(|mast| {
            (0..sectors(mast)).map(move |k| {
                Station::new(
                    cell_key(Radio::Lte, 2, (mast << 8) | k),
                    &sector(mast, k, 100.0),
                )
            })
        })
        .collect();
    // In key order, which ranks the ids.
    lte.sort_unstable_by_key(|s| s.key);
    for s in lte {
        b.push_cell(Radio::Lte, 262, 3, s).unwrap();
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    for mast in 0..700u64 {
        for (radio, lac, cid) in [
            (Radio::Gsm, 1, mast * 10 + 1),
            (Radio::Lte, 2, (mast << 8) | 1),
        ] {
            let site = site_cids(radio, cid).unwrap();
            let m = db.cell_among(radio, 262, 3, lac, cid, site).unwrap();
            assert_eq!(m.neighbours.len() as u64, sectors(mast));
            assert!(m.pooled_mast().is_some(), "{radio} mast {mast}");
        }
    }
    assert_eq!(db.shards()[0].masts().len(), 1_400);
}

#[test]
fn out_of_order_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    b.push_cell(
        Radio::Gsm,
        1,
        1,
        Station::new(cell_key(Radio::Gsm, 1, 2), &info(0.0, 0.0, 1, 1)),
    )
    .unwrap();
    let e = b
        .push_cell(
            Radio::Gsm,
            1,
            1,
            Station::new(cell_key(Radio::Gsm, 1, 2), &info(0.0, 0.0, 1, 1)),
        )
        .unwrap_err();
    assert!(matches!(e, StoreError::Invalid(_)));
    // A key wider than a record's 60 bits (no importer makes one) is refused, not cut.
    let wide = Station::new(1 << 60, &info(0.0, 0.0, 1, 1));
    let e = b.push_cell(Radio::Nr, 1, 1, wide).unwrap_err();
    assert!(e.to_string().contains("passes 60 bits"), "{e}");
    let e = b.push_wifi(wide).unwrap_err();
    assert!(e.to_string().contains("passes 60 bits"), "{e}");
}

#[test]
fn an_unfinished_build_leaves_the_previous_database() {
    let dir = tempfile::tempdir().unwrap();
    build_small(dir.path(), BuildOptions::default());
    {
        let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
        b.push_cell(
            Radio::Gsm,
            1,
            1,
            Station::new(cell_key(Radio::Gsm, 1, 1), &info(0.0, 0.0, 1, 1)),
        )
        .unwrap();
        // dropped without commit, as when an import is interrupted
    }
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.stats().cells, 4);
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".staging")),
        "{names:?}"
    );
}

#[test]
fn a_new_build_replaces_the_old_shards() {
    let dir = tempfile::tempdir().unwrap();
    build_small(dir.path(), BuildOptions::default());
    let old = Database::open(dir.path()).unwrap();
    build_small(dir.path(), BuildOptions::default());
    let new = Database::open(dir.path()).unwrap();
    assert_eq!(new.manifest().generation, old.manifest().generation + 1);
    // The old reader still works on its (now unlinked) files.
    assert!(old.cell(Radio::Gsm, 262, 1, 100, 1).is_some());
    let fb_files = fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "fb")
        })
        .count();
    assert_eq!(fb_files, new.manifest().shards.len());
}

#[test]
fn missing_and_corrupt_databases_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Database::open(dir.path()),
        Err(StoreError::NotFound(_))
    ));

    build_small(dir.path(), BuildOptions::default());
    let db = Database::open(dir.path()).unwrap();
    let shard = db.shards()[0].path().to_path_buf();
    drop(db);
    let bytes = fs::read(&shard).unwrap();

    // Every truncation and a sweep of single-byte corruptions: Err or a consistent
    // database, never a panic.
    for len in [0, 3, 8, 40, 67, 68, 100, bytes.len() - 1] {
        fs::write(&shard, &bytes[..len.min(bytes.len())]).unwrap();
        assert!(Database::open(dir.path()).is_err(), "truncated to {len}");
    }
    for i in 0..bytes.len().min(200) {
        let mut b = bytes.clone();
        b[i] ^= 0xa5;
        fs::write(&shard, &b).unwrap();
        if let Ok(db) = Database::open(dir.path()) {
            let _ = db.cell(Radio::Gsm, 262, 1, 100, 1);
            let _ = db.area(Radio::Gsm, 262, 1, 100);
            let _ = db.cells_by_short_cid(Radio::Umts, 262, 2, 7, 4321);
        }
    }
    fs::write(dir.path().join("manifest.json"), b"{not json").unwrap();
    assert!(matches!(
        Database::open(dir.path()),
        Err(StoreError::Corrupt(_))
    ));
}

mod reference_flatbuffers {
    //! Reads a shard with the `flatbuffers` crate's own verifier and accessors,
    //! using the field ids of schema/stations.fbs.
    use flatbuffers::{
        Follow, ForwardsUOffset, InvalidFlatbuffer, SimpleToVerifyInSlice, Table, Vector,
        Verifiable, Verifier,
    };

    /// A struct of the schema as raw bytes of its size and alignment.
    macro_rules! raw_struct {
        ($t:ident, $size:literal, $align:literal) => {
            #[derive(Clone, Copy)]
            #[repr(C, align($align))]
            pub struct $t([u8; $size]);

            impl<'a> Follow<'a> for $t {
                type Inner = &'a $t;
                unsafe fn follow(buf: &'a [u8], loc: usize) -> Self::Inner {
                    unsafe { &*(buf[loc..].as_ptr() as *const $t) }
                }
            }
            impl Verifiable for $t {
                fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
                    v.in_buffer::<Self>(pos)
                }
            }
            impl SimpleToVerifyInSlice for $t {}
        };
    }
    raw_struct!(Raw23, 23, 1);
    raw_struct!(Raw24, 24, 8);
    raw_struct!(Raw16, 16, 4);
    raw_struct!(Raw4, 4, 4);
    raw_struct!(Raw8, 8, 4);
    raw_struct!(RawU64, 8, 8);

    pub struct StationDb<'a>(pub Table<'a>);

    impl<'a> Follow<'a> for StationDb<'a> {
        type Inner = StationDb<'a>;
        unsafe fn follow(buf: &'a [u8], loc: usize) -> Self::Inner {
            StationDb(unsafe { Table::new(buf, loc) })
        }
    }

    impl Verifiable for StationDb<'_> {
        fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
            v.visit_table(pos)?
                .visit_field::<u32>("format_version", 4, false)?
                .visit_field::<u64>("created", 6, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, Raw16>>>("networks", 8, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, Raw23>>>("cells", 10, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, Raw24>>>("areas", 12, false)?
                // Field 5 (slot 14), `short_cids` up to format 6, is deprecated.
                .visit_field::<ForwardsUOffset<Vector<'_, Raw23>>>("wifi", 16, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, RawU64>>>("cell_fences", 18, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, RawU64>>>("wifi_fences", 20, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, Raw8>>>("masts", 22, false)?
                .visit_field::<ForwardsUOffset<Vector<'_, Raw4>>>("mast_blocks", 24, false)?
                .finish();
            Ok(())
        }
    }

    impl StationDb<'_> {
        pub fn version(&self) -> u32 {
            unsafe { self.0.get::<u32>(4, Some(0)).unwrap() }
        }
        pub fn vector_len(&self, slot: u16) -> usize {
            unsafe {
                self.0
                    .get::<ForwardsUOffset<Vector<'_, Raw24>>>(slot, None)
                    .map_or(0, |v| v.len())
            }
        }
        pub fn networks_len(&self) -> usize {
            unsafe {
                self.0
                    .get::<ForwardsUOffset<Vector<'_, Raw16>>>(8, None)
                    .map_or(0, |v| v.len())
            }
        }
    }
}

#[test]
fn a_database_of_the_previous_format_is_refused_with_what_to_do() {
    use whereabouts_core::store::layout::{FORMAT_VERSION, F_VERSION, TABLE_POS};
    let dir = tempfile::tempdir().unwrap();
    build_small(dir.path(), BuildOptions::default());
    let paths: Vec<_> = Database::open(dir.path())
        .unwrap()
        .shards()
        .iter()
        .map(|s| s.path().to_path_buf())
        .collect();
    for p in paths {
        let mut bytes = fs::read(&p).unwrap();
        let at = TABLE_POS + F_VERSION;
        bytes[at..at + 4].copy_from_slice(&(FORMAT_VERSION - 1).to_le_bytes());
        fs::write(&p, bytes).unwrap();
    }
    let e = Database::open(dir.path())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains(&format!(
            "format version {}, this build reads {FORMAT_VERSION}",
            FORMAT_VERSION - 1
        )) && e.contains("import the sources again")
            && !e.contains("corrupt"),
        "{e}"
    );
}

#[test]
fn shards_are_flatbuffers_the_reference_library_accepts() {
    for build in [build_small, build_masts] {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), BuildOptions::default());
        check_with_reference_library(&Database::open(dir.path()).unwrap());
    }
}

fn check_with_reference_library(db: &Database) {
    for shard in db.shards() {
        let bytes = fs::read(shard.path()).unwrap();
        assert!(flatbuffers::buffer_has_identifier(&bytes, "WHRB", false));
        let root = flatbuffers::root::<reference_flatbuffers::StationDb>(&bytes).expect("verifies");
        assert_eq!(
            root.version(),
            whereabouts_core::store::layout::FORMAT_VERSION
        );
        assert_eq!(root.vector_len(10), shard.cells().len());
        assert_eq!(root.vector_len(16), shard.wifi().len());
        assert_eq!(root.vector_len(12), shard.areas().len());
        assert_eq!(root.networks_len(), shard.networks().len());
        assert_eq!(root.vector_len(22), shard.masts().len());
        assert_eq!(root.vector_len(24), shard.cell_fences().len() + 1);
    }
}

/// The `Key: value` lines of `file`'s mappings in /proc/self/smaps.
#[cfg(target_os = "linux")]
fn smaps_of(file: &Path) -> Vec<(String, String)> {
    let smaps = fs::read_to_string("/proc/self/smaps").unwrap();
    let name = file.to_str().unwrap();
    let mut out = Vec::new();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        let range = first.split('-').count() == 2
            && first.split('-').all(|h| u64::from_str_radix(h, 16).is_ok());
        if range {
            inside = line.ends_with(name);
        } else if let (true, Some((key, value))) = (inside, line.split_once(':')) {
            out.push((key.to_string(), value.trim().to_string()));
        }
    }
    out
}

/// The pages of `file` mapped into this process (Rss of its mappings).
#[cfg(target_os = "linux")]
fn mapped_bytes(file: &Path) -> u64 {
    smaps_of(file)
        .iter()
        .filter(|(key, _)| key == "Rss")
        .map(|(_, kb)| kb.trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024)
        .sum()
}

/// The kernel's flags of `file`'s mappings (`rr`: advised random reads, `sr`: sequential).
#[cfg(target_os = "linux")]
fn mapping_flags(file: &Path) -> Vec<String> {
    smaps_of(file)
        .into_iter()
        .filter(|(key, _)| key == "VmFlags")
        .flat_map(|(_, flags)| {
            flags
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Opening maps the shards and reads their headers, networks and fences: nothing in
/// proportion to the cells. Reading a cell per network at open (to learn each network's key
/// range) once mapped most of a world database's cells, readahead and folios doing the rest.
#[cfg(target_os = "linux")]
#[test]
fn opening_touches_no_share_of_the_cells() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    // 1,000 networks of 2,000 cells: 48 MB of cells, a network every 48 KB.
    for mnc in 0..1_000u16 {
        for cid in 0..2_000u64 {
            let s = Station::new(cell_key(Radio::Lte, 1, cid), &info(50.0, 8.0, 1000, 3));
            b.push_cell(Radio::Lte, 262, mnc, s).unwrap();
        }
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let shard = &db.shards()[0];
    let (size, mapped) = (shard.bytes() as u64, mapped_bytes(shard.path()));
    assert!(size > 45_000_000, "{size}");
    assert!(
        mapped < size / 8,
        "open mapped {mapped} of {size} bytes of {}",
        shard.path().display()
    );
    // and a lookup still finds its cell in any network
    assert!(db.cell(Radio::Lte, 262, 999, 1, 1_999).is_some());
}

/// Lookups read a few lines here and there, so shards are mapped without readahead (cold,
/// 10,000 lookups in a 1.3 GB shard read 1.2 GB from disk with it, 53 MB without); a merge,
/// which reads every station in order, asks for readahead back.
#[cfg(target_os = "linux")]
#[test]
fn shards_are_mapped_for_lookups_and_read_ahead_for_merges() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
    for cid in 0..1_000u64 {
        let s = Station::new(cell_key(Radio::Lte, 1, cid), &info(50.0, 8.0, 1000, 3));
        b.push_cell(Radio::Lte, 262, 1, s).unwrap();
    }
    b.commit().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let path = db.shards()[0].path().to_path_buf();
    let flags = mapping_flags(&path);
    assert!(flags.iter().any(|f| f == "rr"), "after open: {flags:?}");
    assert_eq!(db.iter_cells().count(), 1_000);
    let flags = mapping_flags(&path);
    assert!(
        flags.iter().any(|f| f == "sr") && !flags.iter().any(|f| f == "rr"),
        "after a merge's read: {flags:?}"
    );
}
