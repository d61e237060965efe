//! Core locate throughput against the targets, each case beside a
//! baseline measured in the same run (the machines are shared: the ratios are
//! the stable figures, absolute numbers drift).
//!
//! Targets (one thread = one core): 1,000,000 single-cell requests/s and
//! 300,000 mixed requests/s (3 cells + 8 WiFi APs).
//!
//! The database is built at start in a temp dir: 10 networks (GSM, UMTS, LTE of
//! mcc 208) of 102,400 cells each, tiled over the Paris region in 16x16-cell
//! LACs, and 2,000,000 APs in venues of 10. A request is made around a venue:
//! its serving cell is the cell of a random network covering the venue, the two
//! neighbours are the adjacent cells, the 8 APs are from the venue. About 10% of
//! cells and APs in requests are unknown, so the fallbacks (short CID, LAC area)
//! and the "unknown AP" paths are exercised as in real traffic.
//!
//! `mixed/locate_many_1t` and `_2t` solve the mixed pool's BATCH-request slices with
//! `Locator::locate_many` on one thread and on two (the summary prints the ratio; the
//! second row's "vs baseline" column is against the one-thread case).
//!
//! Land (data/land.bin) is loaded as in production, so border strictness runs;
//! a "no land" case shows what it costs. An "overlay" case adds learned stations
//! (crates/whereabouts-core/src/learn/overlay.rs) for the requests of the first
//! 10,000 of each pool: the hash-map lookups before the mmap path, hits and misses.
//!
//!   CARGO_TARGET_DIR=target/bench cargo bench -p whereabouts-core --bench locate
//!
//! Criterion prints its usual per-case report; a summary table (median
//! requests/s, ratio to the baseline, target met or not) follows at the end.
//!
//! To check that a change keeps every answer (bit for bit), dump them before and after:
//!   LOCATE_BENCH_DUMP=answers.txt target/bench/release/deps/locate-HASH
//!
//! The overlay's cost on its own, alternating slices with and without it:
//!   LOCATE_BENCH_OVERLAY_AB=1 target/bench/release/deps/locate-HASH
//!
//! To see where instructions go, run one case once under callgrind:
//!   LOCATE_BENCH_PROFILE=mixed/locate valgrind --tool=callgrind \
//!     --toggle-collect=locate::profile target/bench/release/deps/locate-HASH

use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, Throughput};
use whereabouts_core::geo::distance_m;
use whereabouts_core::land::LandIndex;
use whereabouts_core::learn::overlay::Overlay;
use whereabouts_core::learn::{LearnOptions, Observation, StationKey};
use whereabouts_core::radio::Radio;
use whereabouts_core::solve::{CellObs, Fallback, Locator, Options, Query, Source, WifiObs};
use whereabouts_core::store::record::{cell_key, Station, StationInfo};
use whereabouts_core::store::{BuildOptions, Database, DbBuilder};

const SINGLE_TARGET: f64 = 1_000_000.0;
const MIXED_TARGET: f64 = 300_000.0;

/// The region: inland around Paris, so that border strictness keeps answers as they are
/// (the common case in production) yet still runs its land test on every answer.
const LAT0: f64 = 48.55;
const LON0: f64 = 1.85;
const LAT_SPAN: f64 = 0.6;
const LON_SPAN: f64 = 1.0;

/// Per network: an NX x NY grid of cells, cut into TILE x TILE LACs.
const NX: u32 = 320;
const NY: u32 = 320;
const TILE: u32 = 16;
const TILES_X: u32 = NX / TILE;
const LAC_BASE: u32 = 100;

const NETWORKS: [(Radio, u16, u16); 10] = [
    (Radio::Gsm, 208, 1),
    (Radio::Gsm, 208, 10),
    (Radio::Gsm, 208, 20),
    (Radio::Umts, 208, 1),
    (Radio::Umts, 208, 10),
    (Radio::Umts, 208, 20),
    (Radio::Lte, 208, 1),
    (Radio::Lte, 208, 10),
    (Radio::Lte, 208, 15),
    (Radio::Lte, 208, 20),
];

const VENUES: u64 = 200_000;
const APS_PER_VENUE: u64 = 10;
const VENUE_RADIUS_M: f64 = 50.0;

/// Requests per pool: enough that the stations they touch are spread over the whole
/// tables, far more than the last-level cache holds, as with real traffic over a region.
/// (A pool of 128k single-cell requests touched only ~8 MB of the baseline's table, which
/// the cache largely held: the baseline looked twice as fast as it is.)
const SINGLE_POOL: usize = 1024 * BATCH;
const MIXED_POOL: usize = 256 * BATCH;
/// Requests per measured iteration.
const BATCH: usize = 1_000;
const UNKNOWN_SHARE: f64 = 0.10;

/// SplitMix64 as a pure hash: every position and id is a function of its indices,
/// so requests can name stations without keeping the generated tables.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn h(a: u64, b: u64, c: u64) -> u64 {
    mix(mix(mix(a) ^ b) ^ c)
}

/// Uniform in [0, 1).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

struct Grid;

impl Grid {
    fn dlat() -> f64 {
        LAT_SPAN / NY as f64
    }
    fn dlon() -> f64 {
        LON_SPAN / NX as f64
    }
    /// Each network's grid is shifted by a fraction of a cell so that networks do
    /// not put their cells on the same spots.
    fn offset(net: usize) -> (f64, f64) {
        let x = mix(net as u64 ^ 0x0ff5e7);
        (unit(x), unit(mix(x)))
    }
    fn position(net: usize, gx: u32, gy: u32) -> (f64, f64) {
        let (ox, oy) = Grid::offset(net);
        let j = h(net as u64, gx as u64, gy as u64);
        let jx = (unit(j) - 0.5) * 0.7;
        let jy = (unit(mix(j)) - 0.5) * 0.7;
        (
            LAT0 + (gy as f64 + oy + jy) * Grid::dlat(),
            LON0 + (gx as f64 + ox + jx) * Grid::dlon(),
        )
    }
    /// The grid cell of `net` covering a point (clamped to the grid).
    fn covering(net: usize, lat: f64, lon: f64) -> (u32, u32) {
        let (ox, oy) = Grid::offset(net);
        let gx = ((lon - LON0) / Grid::dlon() - ox)
            .round()
            .clamp(0.0, (NX - 1) as f64) as u32;
        let gy = ((lat - LAT0) / Grid::dlat() - oy)
            .round()
            .clamp(0.0, (NY - 1) as f64) as u32;
        (gx, gy)
    }
    /// LAC and index within it; `local` past TILE^2 names a cell that does not exist.
    fn lac_local(gx: u32, gy: u32) -> (u32, u32) {
        let lac = LAC_BASE + (gy / TILE) * TILES_X + gx / TILE;
        (lac, (gy % TILE) * TILE + gx % TILE)
    }
    /// Cell ids shaped like each radio's: 16-bit GSM CIs, RNC<<16 | CI for UMTS,
    /// eNB<<8 | sector for LTE (the latter two exercise the short-CID fallback).
    fn cid(radio: Radio, lac: u32, local: u32) -> u64 {
        let local = local as u64;
        match radio {
            Radio::Gsm => 10 + local * 7,
            Radio::Umts => ((lac as u64 % 4000 + 1) << 16) | (local * 5 + 1),
            _ => ((lac as u64 * 300 + local / 3) << 8) | (local % 3 + 1),
        }
    }
    fn range_m(radio: Radio, x: u64) -> u32 {
        let (lo, hi) = match radio {
            Radio::Gsm => (1_200, 3_500),
            Radio::Umts => (700, 2_000),
            _ => (400, 1_500),
        };
        lo + (x % (hi - lo) as u64) as u32
    }
}

fn venue_centre(v: u64) -> (f64, f64) {
    let x = h(0xbe_0e, v, 0);
    (
        LAT0 + 0.02 + unit(x) * (LAT_SPAN - 0.04),
        LON0 + 0.02 + unit(mix(x)) * (LON_SPAN - 0.04),
    )
}

/// A universally administered unicast MAC (the two low bits of the first octet clear),
/// as the request layer would keep.
fn venue_bssid(v: u64, k: u64) -> u64 {
    h(0xb551d, v, k) & 0xfcff_ffff_ffff
}

fn venue_ap(v: u64, k: u64) -> (f64, f64) {
    let (lat, lon) = venue_centre(v);
    let x = h(0xa9, v, k);
    let d = unit(x) * VENUE_RADIUS_M;
    whereabouts_core::geo::destination(lat, lon, unit(mix(x)) * 360.0, d)
}

fn info(lat: f64, lon: f64, range_m: u32, x: u64, now: i64) -> StationInfo {
    StationInfo {
        lat,
        lon,
        range_m,
        samples: 2 + (x % 300) as u32,
        psc: None,
        created: now - 800 * 86_400,
        updated: now - (x % 60) as i64 * 86_400,
        estimated: whereabouts_core::store::record::Estimated::Averaged,
    }
}

/// Writes the database; returns (cells, APs) written.
fn build_db(dir: &Path, now: i64) -> (u64, u64) {
    let mut b = DbBuilder::new(dir, BuildOptions::default()).unwrap();
    for (net, &(radio, mcc, mnc)) in NETWORKS.iter().enumerate() {
        // LACs in increasing order, a LAC's cells sorted by key (which ranks the cid): the
        // builder's order.
        let mut lac_cells = Vec::with_capacity((TILE * TILE) as usize);
        for ty in 0..NY / TILE {
            for tx in 0..TILES_X {
                lac_cells.clear();
                for local in 0..TILE * TILE {
                    let (gx, gy) = (tx * TILE + local % TILE, ty * TILE + local / TILE);
                    let (lac, l) = Grid::lac_local(gx, gy);
                    debug_assert_eq!(l, local);
                    let (lat, lon) = Grid::position(net, gx, gy);
                    let x = h(net as u64 + 77, gx as u64, gy as u64);
                    lac_cells.push(Station::new(
                        cell_key(radio, lac, Grid::cid(radio, lac, local)),
                        &info(lat, lon, Grid::range_m(radio, x), x, now),
                    ));
                }
                lac_cells.sort_unstable_by_key(|s| s.key);
                for &st in &lac_cells {
                    b.push_cell(radio, mcc, mnc, st).unwrap();
                }
            }
        }
    }
    let mut aps: Vec<Station> = Vec::with_capacity((VENUES * APS_PER_VENUE) as usize);
    for v in 0..VENUES {
        for k in 0..APS_PER_VENUE {
            let (lat, lon) = venue_ap(v, k);
            let x = h(0x5a, v, k);
            aps.push(Station::new(
                venue_bssid(v, k),
                &info(lat, lon, 40 + (x % 120) as u32, x, now),
            ));
        }
    }
    aps.sort_unstable_by_key(|s| s.key);
    aps.dedup_by_key(|s| s.key);
    for s in &aps {
        b.push_wifi(*s).unwrap();
    }
    let (_, stats) = b.commit().unwrap();
    (stats.cells, stats.wifi)
}

/// One generated request, with the point it was made at.
struct Req {
    cells: Vec<CellObs>,
    wifi: Vec<WifiObs>,
    truth: (f64, f64),
}

impl Req {
    fn query(&self) -> Query<'_> {
        Query {
            cells: &self.cells,
            wifi: &self.wifi,
            ip: None,
            options: Options::default(),
        }
    }
}

impl Req {
    /// Every station of the request seen at its true position.
    fn sightings(&self) -> Vec<Observation> {
        let at = |key| Observation {
            accuracy_m: Some(10.0),
            ..Observation::bare(key, self.truth.0, self.truth.1)
        };
        let cells = self.cells.iter().map(|c| {
            at(StationKey::Cell {
                radio: c.radio.unwrap(),
                mcc: c.mcc.unwrap(),
                mnc: c.mnc,
                key: cell_key(c.radio.unwrap(), c.lac, c.cid),
            })
        });
        let aps = self.wifi.iter().map(|w| at(StationKey::Wifi(w.bssid)));
        cells.chain(aps).collect()
    }
}

/// Requests of each pool whose stations the overlay case has learned.
const OVERLAY_REQUESTS: usize = 10_000;

fn make_request(i: u64, n_cells: usize, n_wifi: usize) -> Req {
    let r = mix(i ^ 0x5eed_0001);
    let v = r % VENUES;
    let truth = venue_centre(v);
    let net = (mix(r) % NETWORKS.len() as u64) as usize;
    let (radio, mcc, mnc) = NETWORKS[net];
    let (gx, gy) = Grid::covering(net, truth.0, truth.1);
    let neighbours = [
        (gx, gy),
        ((gx + 1).min(NX - 1), gy),
        (gx, (gy + 1).min(NY - 1)),
    ];
    let mut cells = Vec::with_capacity(n_cells);
    for (k, &(cx, cy)) in neighbours.iter().take(n_cells).enumerate() {
        let x = h(i, 0xce11, k as u64);
        let (lac, mut local) = Grid::lac_local(cx, cy);
        if unit(x) < UNKNOWN_SHARE {
            local += TILE * TILE; // an id the database has never seen in a known LAC
        }
        let signal = [-75.0, -90.0, -100.0][k] + (unit(mix(x)) - 0.5) * 10.0;
        cells.push(CellObs {
            radio: Some(radio),
            mcc: Some(mcc),
            mnc,
            lac,
            cid: Grid::cid(radio, lac, local),
            signal: Some(signal.round()),
            asu: None,
            ta: None,
            psc: None,
        });
    }
    let mut wifi = Vec::with_capacity(n_wifi);
    let first = mix(r ^ 0xf1) % APS_PER_VENUE;
    for k in 0..n_wifi as u64 {
        let x = h(i, 0xa11, k);
        let bssid = if unit(x) < UNKNOWN_SHARE {
            mix(x) & 0xfcff_ffff_ffff
        } else {
            venue_bssid(v, (first + k) % APS_PER_VENUE)
        };
        wifi.push(WifiObs {
            bssid,
            signal: Some((-55.0 - unit(mix(x)) * 35.0).round()),
            frequency: None,
        });
    }
    Req { cells, wifi, truth }
}

type CellMapKey = (u8, u16, u16, u32, u64);

/// What an app would write without the engine: station tables in std HashMaps
/// (default SipHash), loaded from the same database.
struct Baseline {
    cells: HashMap<CellMapKey, (f64, f64)>,
    wifi: HashMap<u64, (f64, f64)>,
}

impl Baseline {
    fn load(db: &Database) -> Baseline {
        let mut cells = HashMap::with_capacity(db.stats().cells as usize);
        for (radio, mcc, mnc, st) in db.iter_cells() {
            let (lac, cid) = (
                whereabouts_core::store::record::key_lac(st.key),
                whereabouts_core::store::record::key_cid(radio, st.key),
            );
            cells.insert((radio as u8, mcc, mnc, lac, cid), (st.lat(), st.lon()));
        }
        let mut wifi = HashMap::with_capacity(db.stats().wifi as usize);
        for st in db.iter_wifi() {
            wifi.insert(st.key, (st.lat(), st.lon()));
        }
        Baseline { cells, wifi }
    }

    fn key(c: &CellObs) -> CellMapKey {
        (
            c.radio.map_or(0, |r| r as u8),
            c.mcc.unwrap_or(0),
            c.mnc,
            c.lac,
            c.cid,
        )
    }

    fn single(&self, q: &Query) -> Option<(f64, f64)> {
        self.cells.get(&Baseline::key(q.cells.first()?)).copied()
    }

    /// The signal-weighted mean of bench/baseline.ts: weight = received milliwatts.
    fn weighted_mean(&self, q: &Query) -> Option<(f64, f64)> {
        let (mut sw, mut sla, mut slo) = (0.0, 0.0, 0.0);
        let mut add = |p: Option<&(f64, f64)>, signal: Option<f64>| {
            if let Some(&(la, lo)) = p {
                let w = 10f64.powf((signal.unwrap_or(-90.0) + 100.0) / 10.0);
                sw += w;
                sla += w * la;
                slo += w * lo;
            }
        };
        for c in q.cells {
            add(self.cells.get(&Baseline::key(c)), c.signal);
        }
        for a in q.wifi {
            add(self.wifi.get(&a.bssid), a.signal);
        }
        (sw > 0.0).then(|| (sla / sw, slo / sw))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    with_land: Locator,
    no_land: Locator,
    /// `with_land` plus a learned-station overlay holding the stations of the first
    /// OVERLAY_REQUESTS requests of each pool (so some requests hit it, most miss).
    with_overlay: Locator,
    baseline: Baseline,
    single: Vec<Req>,
    mixed: Vec<Req>,
}

fn land_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/land.bin")
}

impl Fixture {
    /// `report`: print what the pools make the solver do (skipped when profiling: under
    /// callgrind it would take longer than the profiled run itself).
    fn build(report: bool) -> Fixture {
        let now = now_s();
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let (cells, aps) = build_db(dir.path(), now);
        let db = Database::open(dir.path()).unwrap();
        let st = db.stats();
        eprintln!(
            "database: {cells} cells, {aps} APs, {} shard(s), {:.1} MB, built in {:.1} s",
            st.shards,
            st.bytes as f64 / 1e6,
            t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let land = LandIndex::open(&land_path())
            .unwrap_or_else(|e| panic!("{}: {e:?}", land_path().display()));
        // The steady state: otherwise the first lookups (all of a profile's, under
        // callgrind) take the slower polygon test while the cell tree is built.
        land.prepare();
        let with_land = Locator::new(db).with_border(Box::new(land));
        let no_land = Locator::new(Database::open(dir.path()).unwrap());
        let baseline = Baseline::load(&with_land.database());
        eprintln!(
            "land index and baseline HashMaps loaded in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let single: Vec<Req> = (0..SINGLE_POOL as u64)
            .map(|i| make_request(i, 1, 0))
            .collect();
        let mixed: Vec<Req> = (0..MIXED_POOL as u64)
            .map(|i| make_request(i + (1 << 40), 3, 8))
            .collect();
        let t = Instant::now();
        let overlay_land = LandIndex::open(&land_path()).unwrap();
        overlay_land.prepare();
        let with_overlay = Locator::new(Database::open(dir.path()).unwrap())
            .with_border(Box::new(overlay_land))
            .with_overlay(Overlay::open(dir.path()).unwrap());
        let sightings: Vec<Observation> = single
            .iter()
            .take(OVERLAY_REQUESTS)
            .chain(mixed.iter().take(OVERLAY_REQUESTS))
            .flat_map(Req::sightings)
            .collect();
        with_overlay
            .overlay()
            .learn(
                &with_overlay.database(),
                sightings,
                &LearnOptions::default(),
            )
            .unwrap();
        let o = with_overlay.overlay().stats();
        eprintln!(
            "overlay: {} cells, {} APs, {} withdrawn, learned in {:.1} s",
            o.cells,
            o.wifi,
            o.blocked,
            t.elapsed().as_secs_f64()
        );
        let f = Fixture {
            _dir: dir,
            with_land,
            no_land,
            with_overlay,
            baseline,
            single,
            mixed,
        };
        if report {
            f.report_answers("single-cell", &f.single);
            f.report_answers("mixed 3+8", &f.mixed);
        }
        f
    }

    /// What the pools make the solver do: a benchmark of requests that all fail, or all
    /// take one path, would measure the wrong thing.
    fn report_answers(&self, name: &str, pool: &[Req]) {
        let (mut none, mut wifi, mut cells, mut lacf, mut scf) = (0, 0, 0, 0, 0);
        let mut errs = Vec::with_capacity(pool.len());
        let mut base_errs = Vec::with_capacity(pool.len());
        for r in pool {
            let q = r.query();
            match self.with_land.locate(&q) {
                None => none += 1,
                Some(a) => {
                    match (a.source, a.fallback) {
                        (_, Fallback::Lacf) => lacf += 1,
                        (_, Fallback::Scf) => scf += 1,
                        (Source::Wifi, _) => wifi += 1,
                        _ => cells += 1,
                    }
                    errs.push(distance_m(a.lat, a.lon, r.truth.0, r.truth.1));
                }
            }
            let b = if r.wifi.is_empty() {
                self.baseline.single(&q)
            } else {
                self.baseline.weighted_mean(&q)
            };
            if let Some((la, lo)) = b {
                base_errs.push(distance_m(la, lo, r.truth.0, r.truth.1));
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let pct = |n: usize| 100.0 * n as f64 / pool.len() as f64;
        eprintln!(
            "{name} pool ({} requests): WiFi {:.1}%, cells {:.1}%, scf {:.1}%, lacf {:.1}%, none {:.1}%; \
             median error {:.0} m (baseline {:.0} m, answers {:.1}%)",
            pool.len(),
            pct(wifi),
            pct(cells),
            pct(scf),
            pct(lacf),
            pct(none),
            median(&mut errs),
            median(&mut base_errs),
            pct(base_errs.len()),
        );
    }
}

/// Which cases ran in this process (a filter on the command line skips some), so
/// that the summary never reports figures left over from an earlier run.
struct Ran(RefCell<Vec<(&'static str, &'static str)>>);

impl Ran {
    fn mark(&self, group: &'static str, id: &'static str) {
        let mut v = self.0.borrow_mut();
        if !v.contains(&(group, id)) {
            v.push((group, id));
        }
    }
}

/// Times `f` over successive BATCH-request slices of the pool, cycling through it.
fn bench_case<F>(
    c: &mut Criterion,
    ran: &Ran,
    group: &'static str,
    id: &'static str,
    pool: &[Req],
    f: F,
) where
    F: Fn(&Query) -> Option<(f64, f64)>,
{
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(id, |b| {
        ran.mark(group, id);
        let mut next = 0usize;
        b.iter(|| {
            let start = next;
            next = (next + BATCH) % pool.len();
            for r in &pool[start..start + BATCH] {
                black_box(f(&black_box(r).query()));
            }
        });
    });
    g.finish();
}

/// Times `Locator::locate_many` over successive BATCH-request slices of the mixed pool on
/// `threads` threads (the calling thread and threads - 1 started per batch).
fn bench_many(c: &mut Criterion, ran: &Ran, id: &'static str, fx: &Fixture, threads: usize) {
    let queries: Vec<Query> = fx.mixed.iter().map(Req::query).collect();
    let mut out = vec![None; BATCH];
    let now = now_s();
    let mut g = c.benchmark_group("mixed");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(id, |b| {
        ran.mark("mixed", id);
        let mut next = 0usize;
        b.iter(|| {
            let start = next;
            next = (next + BATCH) % queries.len();
            fx.with_land
                .locate_many(&queries[start..start + BATCH], now, threads, &mut out)
                .unwrap();
            black_box(&out);
        });
    });
    g.finish();
}

fn as_point(a: Option<whereabouts_core::solve::Answer>) -> Option<(f64, f64)> {
    a.map(|a| (a.lat, a.lon))
}

fn criterion_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(p).join("criterion");
    }
    // target/<profile>/deps/locate-<hash>: three levels up is the target dir.
    std::env::current_exe()
        .ok()
        .and_then(|e| e.ancestors().nth(3).map(|t| t.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// Median nanoseconds per iteration (one BATCH) from criterion's estimates of this run.
fn median_ns(dir: &Path, group: &str, id: &str, since: SystemTime) -> Option<f64> {
    let file = dir.join(group).join(id).join("new").join("estimates.json");
    let modified = std::fs::metadata(&file).ok()?.modified().ok()?;
    if modified < since {
        return None; // criterion did not measure in this run (e.g. --test, --list)
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// This thread's CPU time in seconds: unlike wall time, it leaves out the time other
/// processes held the core (cache contention with them still counts).
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A driver for profilers (`valgrind --tool=callgrind`): LOCATE_BENCH_PROFILE=group/id
/// runs that case over LOCATE_BENCH_N requests (default 20,000) once, without
/// criterion's repetitions, so that instruction counts per request are easy to read.
#[inline(never)] // a frame of its own, for callgrind --toggle-collect
fn profile(fx: &Fixture, case: &str) {
    let n: usize = std::env::var("LOCATE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    type Case<'a> = Box<dyn Fn(&Query) -> Option<(f64, f64)> + 'a>;
    let (pool, f): (&[Req], Case) = match case {
        "single/baseline_hashmap" => (&fx.single, Box::new(|q| fx.baseline.single(q))),
        "single/locate" => (&fx.single, Box::new(|q| as_point(fx.with_land.locate(q)))),
        "single/locate_no_land" => (&fx.single, Box::new(|q| as_point(fx.no_land.locate(q)))),
        "single/locate_overlay" => (
            &fx.single,
            Box::new(|q| as_point(fx.with_overlay.locate(q))),
        ),
        "mixed/baseline_hashmap_mean" => (&fx.mixed, Box::new(|q| fx.baseline.weighted_mean(q))),
        "mixed/locate" => (&fx.mixed, Box::new(|q| as_point(fx.with_land.locate(q)))),
        "mixed/locate_no_land" => (&fx.mixed, Box::new(|q| as_point(fx.no_land.locate(q)))),
        "mixed/locate_overlay" => (&fx.mixed, Box::new(|q| as_point(fx.with_overlay.locate(q)))),
        _ => panic!("unknown case {case}"),
    };
    let t = Instant::now();
    let cpu = thread_cpu_s();
    for r in pool.iter().cycle().take(n) {
        black_box(f(&r.query()));
    }
    let cpu = thread_cpu_s() - cpu;
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{case}: {n} requests in {s:.3} s ({:.0}/s), {cpu:.3} s of thread CPU time ({:.0}/s)",
        n as f64 / s,
        n as f64 / cpu
    );
}

/// LOCATE_BENCH_DUMP=FILE: every answer of both pools, with and without the overlay, one
/// line each with the floats' bits, so that a change meant to keep answers (a speed-up) can
/// be checked to keep them: dump before and after, then `cmp` the files.
fn dump(fx: &Fixture, path: &Path) {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for (name, pool) in [("single", &fx.single), ("mixed", &fx.mixed)] {
        for (lname, l) in [("land", &fx.with_land), ("overlay", &fx.with_overlay)] {
            for (i, r) in pool.iter().enumerate() {
                let line = match l.locate(&r.query()) {
                    None => "none".to_string(),
                    Some(a) => format!(
                        "{:016x} {:016x} {:016x} {:?} {:?} {}",
                        a.lat.to_bits(),
                        a.lon.to_bits(),
                        a.accuracy_m.to_bits(),
                        a.fallback,
                        a.source,
                        a.aged
                    ),
                };
                writeln!(w, "{name} {lname} {i} {line}").unwrap();
            }
        }
    }
}

/// LOCATE_BENCH_OVERLAY_AB=1: the cost of a non-empty overlay, measured by
/// alternating BATCH-request slices between the engine without and with it, so
/// that the machine's drift hits both alike (each goes first in half the slices,
/// since the second run finds the slice's stations cached); prints the medians.
fn overlay_ab(fx: &Fixture) {
    for (name, pool) in [("single", &fx.single), ("mixed", &fx.mixed)] {
        let (mut without, mut with) = (Vec::new(), Vec::new());
        let slices = (pool.len() / BATCH).min(200);
        for k in 0..slices {
            let reqs = &pool[k * BATCH..(k + 1) * BATCH];
            let mut pair = [(&fx.with_land, &mut without), (&fx.with_overlay, &mut with)];
            // The second run over a slice finds its stations in the cache: take turns.
            if k % 2 == 1 {
                pair.reverse();
            }
            for (l, times) in pair {
                let t = Instant::now();
                for r in reqs {
                    black_box(l.locate(&r.query()));
                }
                times.push(t.elapsed().as_secs_f64() / BATCH as f64);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (a, b) = (median(&mut without), median(&mut with));
        println!(
            "{name}: {slices} slices of {BATCH}; median {:.0} ns/request without the overlay, {:.0} ns with it ({:.2}x)",
            a * 1e9,
            b * 1e9,
            b / a
        );
    }
}

fn main() {
    if let Ok(case) = std::env::var("LOCATE_BENCH_PROFILE") {
        profile(&Fixture::build(false), &case);
        return;
    }
    if let Some(path) = std::env::var_os("LOCATE_BENCH_DUMP") {
        dump(&Fixture::build(false), Path::new(&path));
        return;
    }
    if std::env::var_os("LOCATE_BENCH_OVERLAY_AB").is_some() {
        overlay_ab(&Fixture::build(false));
        return;
    }
    let start = SystemTime::now();
    let dir = criterion_dir();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .output_directory(&dir)
        .configure_from_args();
    let fx = Fixture::build(true);
    let ran = Ran(RefCell::new(Vec::new()));

    bench_case(
        &mut c,
        &ran,
        "single",
        "baseline_hashmap",
        &fx.single,
        |q| fx.baseline.single(q),
    );
    bench_case(&mut c, &ran, "single", "locate", &fx.single, |q| {
        as_point(fx.with_land.locate(q))
    });
    bench_case(&mut c, &ran, "single", "locate_no_land", &fx.single, |q| {
        as_point(fx.no_land.locate(q))
    });
    bench_case(&mut c, &ran, "single", "locate_overlay", &fx.single, |q| {
        as_point(fx.with_overlay.locate(q))
    });
    bench_case(
        &mut c,
        &ran,
        "mixed",
        "baseline_hashmap_mean",
        &fx.mixed,
        |q| fx.baseline.weighted_mean(q),
    );
    bench_case(&mut c, &ran, "mixed", "locate", &fx.mixed, |q| {
        as_point(fx.with_land.locate(q))
    });
    bench_case(&mut c, &ran, "mixed", "locate_no_land", &fx.mixed, |q| {
        as_point(fx.no_land.locate(q))
    });
    bench_case(&mut c, &ran, "mixed", "locate_overlay", &fx.mixed, |q| {
        as_point(fx.with_overlay.locate(q))
    });
    bench_many(&mut c, &ran, "locate_many_1t", &fx, 1);
    bench_many(&mut c, &ran, "locate_many_2t", &fx, 2);
    c.final_summary();

    let ran = ran.0.into_inner();
    // Only cases measured in this run count.
    let rate = |group: &'static str, id: &'static str| {
        ran.contains(&(group, id))
            .then(|| median_ns(&dir, group, id, start))
            .flatten()
            .map(|ns| BATCH as f64 * 1e9 / ns)
    };
    let rows: [(&'static str, &'static str, &'static str, Option<f64>); 10] = [
        ("single", "baseline_hashmap", "baseline_hashmap", None),
        ("single", "locate", "baseline_hashmap", Some(SINGLE_TARGET)),
        (
            "single",
            "locate_no_land",
            "baseline_hashmap",
            Some(SINGLE_TARGET),
        ),
        (
            "single",
            "locate_overlay",
            "baseline_hashmap",
            Some(SINGLE_TARGET),
        ),
        (
            "mixed",
            "baseline_hashmap_mean",
            "baseline_hashmap_mean",
            None,
        ),
        (
            "mixed",
            "locate",
            "baseline_hashmap_mean",
            Some(MIXED_TARGET),
        ),
        (
            "mixed",
            "locate_no_land",
            "baseline_hashmap_mean",
            Some(MIXED_TARGET),
        ),
        (
            "mixed",
            "locate_overlay",
            "baseline_hashmap_mean",
            Some(MIXED_TARGET),
        ),
        ("mixed", "locate_many_1t", "baseline_hashmap_mean", None),
        ("mixed", "locate_many_2t", "locate_many_1t", None),
    ];
    if rows.iter().all(|r| rate(r.0, r.1).is_none()) {
        return;
    }
    println!(
        "\nSummary: median requests/s on one thread (= per core), batch {BATCH}, \
         pools {SINGLE_POOL} single / {MIXED_POOL} mixed"
    );
    println!(
        "{:<30} {:>14} {:>14} {:>12}",
        "case", "requests/s", "vs baseline", "target"
    );
    for (group, id, base, target) in rows {
        let Some(r) = rate(group, id) else { continue };
        let ratio = rate(group, base).map_or("-".to_string(), |b| {
            if base == id {
                "1.00x".to_string()
            } else {
                format!("{:.2}x", r / b)
            }
        });
        let verdict = target.map_or("-".to_string(), |t| {
            format!("{} {:.0}k", if r >= t { "met" } else { "MISSED" }, t / 1e3)
        });
        println!(
            "{:<30} {:>14} {:>14} {:>12}",
            format!("{group}/{id}"),
            format!("{:.0}", r),
            ratio,
            verdict
        );
    }
    if let (Some(one), Some(two)) = (
        rate("mixed", "locate_many_1t"),
        rate("mixed", "locate_many_2t"),
    ) {
        println!(
            "locate_many: 2 threads {:.2}x 1 thread (the machine's other load shares the cores)",
            two / one
        );
    }
    for group in ["single", "mixed"] {
        if let (Some(on), Some(off)) = (rate(group, "locate"), rate(group, "locate_no_land")) {
            let ns = 1e9 / on - 1e9 / off;
            if ns > 0.0 {
                println!("land (border strictness) costs {ns:.0} ns per {group} request");
            } else {
                // The cost is a few hundred instructions: on a busy machine the two
                // cases' noise can exceed it.
                println!(
                    "land (border strictness): not measurable above this run's noise \
                     for {group} requests ({ns:.0} ns)"
                );
            }
        }
    }
}
