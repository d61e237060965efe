//! The site answer of an unknown sector (`solve::cells::site_answer`): the mean of its
//! site's known sectors, with a radius that reads every cell of its LAC/TAC once
//! (`Database::lac_cells`) to find the third-nearest other site. One LTE network with a LAC
//! of each size below (three-sector sites on a grid 1 km apart, sectors 300 m out from their
//! mast), each request the unknown fourth sector of a random site; beside it, in the same
//! process, the same request answered by the LAC's area (`lacf` 2, the baseline: one area
//! lookup) and a known sector of the same site (the single-cell path). Alternated over three
//! rounds; medians printed with the ratio to the area answer. The database is built in a
//! temporary directory and stays in the page cache.
//!
//!   cargo bench -p whereabouts-core --bench site_answer

use std::hint::black_box;
use std::time::Instant;

use whereabouts_core::geo::LocalFrame;
use whereabouts_core::radio::Radio;
use whereabouts_core::solve::{CellObs, Locator, Options, Query, Source};
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};

// Only the numbers: this bench times its own rounds.
#[allow(dead_code)]
mod support;
use support::Numbers;

/// Cells in each LAC (three a site).
const LAC_SIZES: [u32; 4] = [99, 999, 9_999, 99_999];

fn cid(site: u32, sector: u32) -> u64 {
    (u64::from(0x1_0000 + site) << 8) | u64::from(sector)
}

fn cell(lac: u32, cid: u64) -> CellObs {
    CellObs {
        radio: Some(Radio::Lte),
        mcc: Some(262),
        mnc: 1,
        lac,
        cid,
        signal: None,
        asu: None,
        ta: None,
        psc: None,
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).expect("builder");
    let frame = LocalFrame::new(50.0, 8.0);
    for (lac, &n) in LAC_SIZES.iter().enumerate() {
        let sites = n / 3;
        let side = f64::from(sites).sqrt().ceil() as u32;
        let mut cells = Vec::with_capacity(n as usize);
        for site in 0..sites {
            let (mx, my) = (
                f64::from(site % side) * 1_000.0,
                f64::from(site / side) * 1_000.0 + lac as f64 * 400_000.0,
            );
            for sector in 1..=3 {
                let bearing = f64::from(sector - 1) * 120f64.to_radians();
                let (lat, lon) =
                    frame.to_latlon(mx + 300.0 * bearing.sin(), my + 300.0 * bearing.cos());
                let info = StationInfo {
                    lat,
                    lon,
                    range_m: 1_000,
                    samples: 20,
                    psc: None,
                    created: 1_600_000_000,
                    updated: 1_700_000_000,
                    estimated: Estimated::Averaged,
                };
                cells.push(Station::new(
                    cell_key(Radio::Lte, lac as u32 + 1, cid(site, sector)),
                    &info,
                ));
            }
        }
        // The builder takes a LAC's cells in key order.
        cells.sort_unstable_by_key(|s| s.key);
        for s in cells {
            b.push_cell(Radio::Lte, 262, 1, s).expect("push");
        }
    }
    b.commit().expect("commit");
    let l = Locator::new(Database::open(dir.path()).expect("open")).with_now(1_700_000_000);

    let mut numbers = Numbers::new();
    let area = Options {
        lacf: 2,
        ..Options::default()
    };
    println!("LAC cells | area answer ns | site answer ns | ratio | known sector ns");
    for (lac, &n) in LAC_SIZES.iter().enumerate() {
        let lac = lac as u32 + 1;
        let sites: Vec<u32> = (0..1_000)
            .map(|_| (numbers.next() * f64::from(n / 3)) as u32)
            .collect();
        let unknown: Vec<[CellObs; 1]> = sites.iter().map(|&s| [cell(lac, cid(s, 4))]).collect();
        let known: Vec<[CellObs; 1]> = sites.iter().map(|&s| [cell(lac, cid(s, 1))]).collect();
        let first = l.locate(&Query {
            cells: &unknown[0],
            wifi: &[],
            ip: None,
            options: Options::default(),
        });
        assert_eq!(first.map(|a| a.source), Some(Source::Site), "a site answer");
        let lookups = (20_000_000 / n as usize).clamp(2_000, 200_000);
        let time = |cells: &[[CellObs; 1]], options: Options| {
            let t = Instant::now();
            for k in 0..lookups {
                black_box(l.locate(&Query {
                    cells: &cells[k % cells.len()],
                    wifi: &[],
                    ip: None,
                    options,
                }));
            }
            t.elapsed().as_nanos() as f64 / lookups as f64
        };
        let (mut by_area, mut by_site, mut by_cell) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..3 {
            by_area.push(time(&unknown, area));
            by_site.push(time(&unknown, Options::default()));
            by_cell.push(time(&known, Options::default()));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[1]
        };
        let (a, s, c) = (
            median(&mut by_area),
            median(&mut by_site),
            median(&mut by_cell),
        );
        println!(
            "{n:>9} | {a:>14.0} | {s:>14.0} | {:>4.0}x | {c:>15.0}",
            s / a
        );
    }
}
