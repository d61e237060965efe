//! The short-CID fallback (`Database::cells_by_short_cid`): a binary search for the run of
//! the LAC's cells among which the short id's lie (a 256th of an LTE LAC,
//! `record::cid_rank`), then a read of that run. One LTE network with a LAC of each size
//! below (eNB << 8 | sector ids, 3 sectors a site), looked up by the short id of a random
//! cell of the LAC, beside the full-id lookup of the same cells (`Database::cell`, the
//! baseline); both in the same process, alternated over three rounds, medians printed with
//! their ratio. The database is built in a temporary directory and stays in the page cache.
//!
//!   cargo bench -p whereabouts-core --bench short_cid

use std::hint::black_box;
use std::time::Instant;

use whereabouts_core::radio::Radio;
use whereabouts_core::store::record::{cell_key, Estimated, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};

const LAC_SIZES: [u32; 4] = [100, 1_000, 10_000, 100_000];

fn cid(i: u32) -> u64 {
    // eNB ids from 0x10000: every id passes 16 bits; its low 16 bits repeat every 256 sites.
    (((0x1_0000 + i / 3) as u64) << 8) | (i % 3 + 1) as u64
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).expect("builder");
    for (lac, &n) in LAC_SIZES.iter().enumerate() {
        let mut cells = Vec::with_capacity(n as usize);
        for i in 0..n {
            let info = StationInfo {
                lat: 50.0 + (i % 1000) as f64 * 1e-3,
                lon: 8.0 + (i / 1000) as f64 * 1e-3,
                range_m: 1000,
                samples: 10,
                psc: None,
                created: 1_600_000_000,
                updated: 1_700_000_000,
                estimated: Estimated::Averaged,
            };
            cells.push(Station::new(
                cell_key(Radio::Lte, lac as u32 + 1, cid(i)),
                &info,
            ));
        }
        // The builder takes a LAC's cells in key order, which ranks the ids.
        cells.sort_unstable_by_key(|s| s.key);
        for s in cells {
            b.push_cell(Radio::Lte, 262, 1, s).expect("push");
        }
    }
    b.commit().expect("commit");
    let db = Database::open(dir.path()).expect("open");

    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    println!("LAC cells | full id ns | short id ns | ratio | matches a short id");
    for (lac, &n) in LAC_SIZES.iter().enumerate() {
        let lac = lac as u32 + 1;
        let picks: Vec<u64> = (0..2_000)
            .map(|_| cid((next() % n as u64) as u32))
            .collect();
        let lookups = (20_000_000 / n as usize).clamp(2_000, 200_000);
        let (mut full, mut short, mut matches) = (Vec::new(), Vec::new(), 0);
        for _ in 0..3 {
            let t = Instant::now();
            for k in 0..lookups {
                black_box(db.cell(Radio::Lte, 262, 1, lac, picks[k % picks.len()]));
            }
            full.push(t.elapsed().as_nanos() as f64 / lookups as f64);
            let t = Instant::now();
            for k in 0..lookups {
                let found =
                    db.cells_by_short_cid(Radio::Lte, 262, 1, lac, picks[k % picks.len()] as u16);
                matches = black_box(found).len();
            }
            short.push(t.elapsed().as_nanos() as f64 / lookups as f64);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[1]
        };
        let (f, s) = (median(&mut full), median(&mut short));
        println!(
            "{n:>9} | {f:>10.0} | {s:>11.0} | {:>4.0}x | {matches}",
            s / f
        );
    }
}
