//! Sync pages: the stations of a database changed in a time window, the site masts its
//! learner fitted and the learned cells' positions by level (and, for a receiver that reads
//! them, by advance) that changed in it, written in
//! the formats `import` reads (the OpenCelliD/MLS cell export, the WiFi station file, the
//! learned-mast and learned-level files) and
//! gzip-compressed. A client stores each page as a `.csv.gz` file and imports them
//! together, so the wire format needs no reader of its own. Wire rules: `docs/sync.md`.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::import::{CELL_HEADER, LEVELS_ADVANCES_HEADER, LEVELS_HEADER, MAST_HEADER, WIFI_HEADER};
use crate::radio::Radio;
use crate::store::changes::{Scanned, StationKey, Window};
use crate::store::netstats::{advances_text, levels_text};
use crate::store::record::{key_cid, key_lac, Estimated};
use crate::store::Database;

/// What one page may hold and how far it may look.
#[derive(Clone, Copy, Debug)]
pub struct PageRequest {
    pub window: Window,
    /// Resume after this station (the previous page's `next`).
    pub after: Option<StationKey>,
    /// Most stations in the page.
    pub max_stations: usize,
    /// Most stations looked at, changed or not: bounds the time one page takes on a
    /// large database where few stations changed.
    pub max_scanned: u64,
    /// The receiver reads learned cells' advances: level pages carry them in a column of
    /// their own (`LEVELS_ADVANCES_HEADER`). A receiver that does not ask gets the level
    /// file it has always read, without the cells that have advances only.
    pub advances: bool,
}

/// Which file format a page's body is in: a page never mixes kinds, because each format has
/// its own header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Cells,
    Wifi,
    Masts,
    Levels,
}

/// One page: a gzip-compressed CSV body (empty when `stations` is 0).
#[derive(Debug)]
pub struct Page {
    pub body: Vec<u8>,
    pub kind: Option<PageKind>,
    pub stations: u64,
    pub scanned: u64,
    /// Where the next page starts; `None` when the scan reached the end.
    pub next: Option<StationKey>,
}

/// Builds one page of `db`'s changes.
pub fn changes_page(db: &Database, req: &PageRequest) -> io::Result<Page> {
    let mut out: Option<(PageKind, GzEncoder<Vec<u8>>)> = None;
    let mut stations = 0u64;
    let mut scanned = 0u64;
    let mut last: Option<StationKey> = None;
    let mut exhausted = true;
    let mut line = String::with_capacity(128);
    for (key, s) in db.scan_from(req.after) {
        if stations as usize >= req.max_stations || scanned >= req.max_scanned {
            exhausted = false;
            break;
        }
        let kind = match s {
            Scanned::Cell { .. } => PageKind::Cells,
            Scanned::Wifi(_) => PageKind::Wifi,
            Scanned::Mast(..) => PageKind::Masts,
            Scanned::Levels { .. } => PageKind::Levels,
        };
        if out.as_ref().is_some_and(|(k, _)| *k != kind) {
            exhausted = false;
            break;
        }
        scanned += 1;
        last = Some(key);
        if !req.window.contains(&s)
            || matches!(&s, Scanned::Levels { points, .. } if !req.advances && points.levels.is_empty())
        {
            continue;
        }
        let (_, gz) = out.get_or_insert_with(|| {
            // The fastest level: at the default one, compressing takes most of a page's time,
            // for a body only a little smaller.
            let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
            let header = match kind {
                PageKind::Cells => CELL_HEADER,
                PageKind::Wifi => WIFI_HEADER,
                PageKind::Masts => MAST_HEADER,
                PageKind::Levels if req.advances => LEVELS_ADVANCES_HEADER,
                PageKind::Levels => LEVELS_HEADER,
            };
            // Writing into a Vec cannot fail.
            let _ = writeln!(gz, "{header}");
            (kind, gz)
        });
        line.clear();
        csv_line(&s, req.advances, &mut line);
        gz.write_all(line.as_bytes())?;
        stations += 1;
    }
    let (kind, body) = match out {
        Some((k, gz)) => (Some(k), gz.finish()?),
        None => (None, Vec::new()),
    };
    Ok(Page {
        body,
        kind,
        stations,
        scanned,
        next: if exhausted { None } else { last },
    })
}

/// Degrees from 1e-7 units, exactly: the importer reads them back to the same integer.
fn push_e7(out: &mut String, v: i32) {
    use std::fmt::Write as _;
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:07}", a / 10_000_000, a % 10_000_000);
}

/// One row in the import format of its kind, newline included; a learned cell's advances in a
/// column of their own with `advances`.
fn csv_line(s: &Scanned, advances: bool, out: &mut String) {
    use std::fmt::Write as _;
    match s {
        &Scanned::Cell {
            radio,
            mcc,
            mnc,
            station,
        } => {
            let _ = write!(
                out,
                "{},{mcc},{mnc},{},{},",
                export_radio(radio),
                key_lac(station.key),
                key_cid(radio, station.key)
            );
            if let Some(p) = station.psc() {
                let _ = write!(out, "{p}");
            }
            out.push(',');
            push_e7(out, station.lon_e7);
            out.push(',');
            push_e7(out, station.lat_e7);
            // averageSignal is not kept; 0 is what the exports write for unknown. changeable 0
            // says the position is not a crowd average (OpenCelliD: an exact one), which
            // the importer reads back as learned.
            let changeable = match station.estimated() {
                Estimated::Averaged => 1,
                Estimated::Learned => 0,
            };
            let _ = writeln!(
                out,
                ",{},{},{changeable},{},{},0",
                station.range_m(),
                station.samples(),
                station.created(),
                station.updated()
            );
        }
        &Scanned::Wifi(station) => {
            let b = station.key;
            let _ = write!(
                out,
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x},",
                b >> 40 & 0xff,
                b >> 32 & 0xff,
                b >> 24 & 0xff,
                b >> 16 & 0xff,
                b >> 8 & 0xff,
                b & 0xff
            );
            push_e7(out, station.lat_e7);
            out.push(',');
            push_e7(out, station.lon_e7);
            let _ = writeln!(
                out,
                ",{},{},{},{}",
                station.range_m(),
                station.samples(),
                station.created(),
                station.updated()
            );
        }
        &Scanned::Mast(site, m) => {
            // Positions to 7 decimals (a centimetre): the mast crosses as fitted, near enough.
            let _ = writeln!(
                out,
                "{},{},{},{},{:.7},{:.7},{},{}",
                export_radio(site.radio),
                site.mcc,
                site.mnc,
                site.site,
                m.lat,
                m.lon,
                m.sightings,
                m.updated
            );
        }
        Scanned::Levels {
            cell: (radio, mcc, mnc, key),
            points,
            ..
        } => {
            let _ = write!(
                out,
                "{},{mcc},{mnc},{},{},",
                export_radio(*radio),
                key_lac(*key),
                key_cid(*radio, *key)
            );
            out.push_str(&levels_text(&points.levels));
            if advances {
                out.push(',');
                out.push_str(&advances_text(&points.advances));
            }
            out.push('\n');
        }
    }
}

/// The radio names the exports write.
fn export_radio(r: Radio) -> &'static str {
    match r {
        Radio::Gsm => "GSM",
        Radio::Cdma => "CDMA",
        Radio::Umts => "UMTS",
        Radio::Lte => "LTE",
        Radio::Nbiot => "NBIOT",
        Radio::Nr => "NR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{import_files, ImportOptions, SourceKind};
    use crate::sites::SiteKey;
    use crate::store::netstats::{AdvancePoint, CellPoints, LearnedMast, LevelPoint};
    use crate::store::record::{cell_key, Station, StationInfo};
    use crate::store::{BuildOptions, DbBuilder};

    const DAY: i64 = 86_400;
    const D0: i64 = 19_675 * DAY;

    /// WiFi stations carry no PSC: the WiFi file has no column for one.
    fn station(key: u64, lat: f64, updated: i64, psc: Option<u16>) -> Station {
        Station::new(
            key,
            &StationInfo {
                lat,
                lon: -8.4705987,
                range_m: 1234,
                samples: 17,
                psc,
                created: D0 - 400 * DAY,
                updated,
                estimated: Estimated::Averaged,
            },
        )
    }

    fn source() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
        // The learned cells' site mast (eNB 0), fitted from their advances
        // (the builder keeps a mast while a learned cell of its site is written).
        b.learned_masts().insert(
            SiteKey {
                radio: Radio::Lte,
                mcc: 272,
                mnc: 1,
                site: 0,
            },
            LearnedMast {
                site: 0,
                lat: -51.8981234567,
                lon: -8.4701234567,
                sightings: 42,
                updated: D0 - DAY,
            },
        );
        // Levels and advances of the learned cells 101 (in the windows below) and 103 (in
        // the first only; advances alone), and of cell 102, which is not learned: the builder
        // keeps none for it.
        for i in [1u64, 2, 3] {
            let point = |dbm: i16, lat: f64| LevelPoint {
                dbm,
                lat,
                lon: -8.4701234567,
                spread_m: 35.0 + i as f32,
            };
            let advance = |steps: u16| AdvancePoint {
                steps,
                lat: -51.8961234567,
                lon: -8.4711234567,
                spread_m: 50.0 + i as f32,
            };
            b.learned_points().insert(
                (Radio::Lte, 272, 1, cell_key(Radio::Lte, 3, 100 + i)),
                CellPoints {
                    levels: if i == 3 {
                        Vec::new()
                    } else {
                        vec![point(-100, -51.8981234567), point(-98, -51.8971234567)]
                    },
                    advances: vec![advance(2), advance(5)],
                },
            );
        }
        for i in 0..5u64 {
            let s = station(
                cell_key(Radio::Lte, 3, 100 + i),
                -51.8979123,
                D0 - (i as i64) * DAY,
                Some(301),
            );
            // Odd cells learned: the flag travels in the `changeable` column.
            let estimated = if i % 2 == 1 {
                Estimated::Learned
            } else {
                Estimated::Averaged
            };
            let s = Station::new(
                s.key,
                &StationInfo {
                    estimated,
                    ..s.info()
                },
            );
            b.push_cell(Radio::Lte, 272, 1, s).unwrap();
        }
        b.push_wifi(station(0x0011_2233_4455, 51.9, D0, None))
            .unwrap();
        b.push_wifi(station(0x0011_2233_4466, 51.9, D0 - 30 * DAY, None))
            .unwrap();
        b.commit().unwrap();
        let db = Database::open(dir.path()).unwrap();
        (dir, db)
    }

    fn all_pages(db: &Database, window: Window, max_stations: usize, advances: bool) -> Vec<Page> {
        let mut pages = Vec::new();
        let mut after = None;
        loop {
            let p = changes_page(
                db,
                &PageRequest {
                    window,
                    after,
                    max_stations,
                    max_scanned: 1_000,
                    advances,
                },
            )
            .unwrap();
            after = p.next;
            pages.push(p);
            if after.is_none() {
                return pages;
            }
        }
    }

    #[test]
    fn pages_split_by_size_and_kind_and_cover_the_window_once() {
        let (_dir, db) = source();
        let window = Window {
            since: D0 - 2 * DAY,
            until: D0 + DAY,
        };
        let pages = all_pages(&db, window, 2, false);
        let counts: Vec<(Option<PageKind>, u64)> =
            pages.iter().map(|p| (p.kind, p.stations)).collect();
        // Three cells in the window (two pages), one AP, one mast, one learned cell's levels
        // (cell 101's; 103 changed before the window): never two kinds together.
        assert_eq!(
            counts,
            vec![
                (Some(PageKind::Cells), 2),
                (Some(PageKind::Cells), 1),
                (Some(PageKind::Wifi), 1),
                (Some(PageKind::Masts), 1),
                (Some(PageKind::Levels), 1),
            ]
        );
    }

    #[test]
    fn a_scan_budget_ends_a_page_early_with_a_cursor() {
        let (_dir, db) = source();
        let window = Window {
            since: D0 + DAY,
            until: D0 + 2 * DAY,
        };
        let p = changes_page(
            &db,
            &PageRequest {
                window,
                after: None,
                max_stations: 10,
                max_scanned: 3,
                advances: false,
            },
        )
        .unwrap();
        assert_eq!((p.stations, p.scanned, p.kind), (0, 3, None));
        assert!(p.body.is_empty());
        assert!(p.next.is_some());
    }

    /// The pages of `db` since 0, imported into a new database.
    fn imported(db: &Database, advances: bool) -> (tempfile::TempDir, Database, Vec<SourceKind>) {
        let window = Window {
            since: 0,
            until: D0 + DAY,
        };
        let out = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for (i, p) in all_pages(db, window, 1000, advances).iter().enumerate() {
            if p.stations > 0 {
                let f = out.path().join(format!("page-{i}.csv.gz"));
                std::fs::write(&f, &p.body).unwrap();
                files.push(f);
            }
        }
        let target = out.path().join("db");
        let report =
            import_files(&target, &files, &ImportOptions::default(), &mut |_| true).unwrap();
        assert!(report.files.iter().all(|f| f.rejected == 0), "{report:?}");
        let kinds = report.files.iter().map(|f| f.kind).collect();
        let copy = Database::open(&target).unwrap();
        (out, copy, kinds)
    }

    #[test]
    fn pages_import_back_to_the_same_stations() {
        let (_dir, db) = source();
        let (_out, copy, kinds) = imported(&db, true);
        assert_eq!(
            kinds,
            [
                SourceKind::CellCsv,
                SourceKind::WifiCsv,
                SourceKind::MastCsv,
                SourceKind::LevelsCsv
            ]
        );
        let a: Vec<_> = db.scan_from(None).collect();
        let b: Vec<_> = copy.scan_from(None).collect();
        assert_eq!(a.len(), b.len());
        for ((ka, sa), (kb, sb)) in a.iter().zip(&b) {
            assert_eq!(ka, kb);
            match (sa, sb) {
                // Seven decimals: a centimetre.
                (Scanned::Mast(_, ma), Scanned::Mast(_, mb)) => {
                    assert!((ma.lat - mb.lat).abs() < 1e-7 && (ma.lon - mb.lon).abs() < 1e-7);
                    assert_eq!((ma.sightings, ma.updated), (mb.sightings, mb.updated));
                }
                (
                    Scanned::Levels {
                        cell: ca,
                        updated: ua,
                        points: pa,
                    },
                    Scanned::Levels {
                        cell: cb,
                        updated: ub,
                        points: pb,
                    },
                ) => {
                    assert_eq!((ca, ua), (cb, ub));
                    assert_eq!(pa.levels.len(), pb.levels.len());
                    for (a, b) in pa.levels.iter().zip(&pb.levels) {
                        assert_eq!((a.dbm, a.spread_m), (b.dbm, b.spread_m));
                        assert!((a.lat - b.lat).abs() < 1e-7 && (a.lon - b.lon).abs() < 1e-7);
                    }
                    assert_eq!(pa.advances.len(), pb.advances.len());
                    for (a, b) in pa.advances.iter().zip(&pb.advances) {
                        assert_eq!((a.steps, a.spread_m), (b.steps, b.spread_m));
                        assert!((a.lat - b.lat).abs() < 1e-7 && (a.lon - b.lon).abs() < 1e-7);
                    }
                }
                _ => assert_eq!(sa, sb),
            }
        }
        assert!(a.iter().any(|(_, s)| matches!(
            s,
            Scanned::Cell { station, .. } if station.estimated() == Estimated::Learned
        )));
        // The learned cells' levels and advances come last: 101 and 103, not 102 (not
        // learned).
        let levels: Vec<_> = a
            .iter()
            .filter_map(|(k, _)| match k {
                StationKey::Levels(cell) => Some(cell.3),
                _ => None,
            })
            .collect();
        assert_eq!(
            levels,
            [cell_key(Radio::Lte, 3, 101), cell_key(Radio::Lte, 3, 103)]
        );
        assert!(matches!(a.last(), Some((_, Scanned::Levels { .. }))));
        // Their cursor resumes after them.
        let last = a.last().unwrap().0;
        assert_eq!(StationKey::parse(&last.to_string()), Some(last));
        assert_eq!(db.scan_from(Some(a[a.len() - 2].0)).count(), 1);

        // A receiver that does not read advances gets the levels alone: 101's, not 103's
        // (it has none).
        let (_out, copy, _) = imported(&db, false);
        let points: Vec<_> = copy
            .scan_from(None)
            .filter_map(|(_, s)| match s {
                Scanned::Levels { cell, points, .. } => Some((cell.3, points)),
                _ => None,
            })
            .collect();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].0, cell_key(Radio::Lte, 3, 101));
        assert_eq!(
            (points[0].1.levels.len(), points[0].1.advances.len()),
            (2, 0)
        );
    }
}
