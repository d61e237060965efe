//! constrain() on points over land and near coasts, beside a naive baseline that
//! answers the same question by brute force over every edge of the region's polygon
//! pieces (even-odd point in polygon, then the nearest coast edge). Prints the ratio.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use whereabouts_core::geo::LocalFrame;
use whereabouts_core::land::LandIndex;

// The land bench times with criterion, so it takes only the data and the numbers.
#[allow(dead_code)]
mod support;
use support::{data, Numbers};

// Western Europe: Atlantic, North Sea, Baltic and Mediterranean coasts.
const BOX: (f64, f64, f64, f64) = (35.0, -12.0, 60.0, 20.0);
const ALLOWED_M: f64 = 5000.0;
const SEARCH_M: f64 = 50_000.0;

fn open() -> LandIndex {
    LandIndex::open(&data("land.bin")).expect("data/land.bin")
}

/// Deterministic points in the box that lie on land or within 30 km of it, the
/// positions a geolocation service actually answers.
fn points(l: &LandIndex, n: usize) -> Vec<(f64, f64)> {
    let mut numbers = Numbers::new();
    let mut next = || numbers.next();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let lat = BOX.0 + (BOX.2 - BOX.0) * next();
        let lon = BOX.1 + (BOX.3 - BOX.1) * next();
        if l.distance_to_land_m(lat, lon, 30_000.0).is_some() {
            out.push((lat, lon));
        }
    }
    out
}

struct Naive {
    /// Every edge of the pieces, for the even-odd rule.
    edges: Vec<[f64; 4]>,
    /// The edges that are coast, for the distance.
    coast: Vec<[f64; 4]>,
}

impl Naive {
    fn inside(&self, lat: f64, lon: f64) -> bool {
        let mut odd = false;
        for &[la, lo, lb, lob] in &self.edges {
            if (la > lat) != (lb > lat) && lon < lo + (lat - la) * (lob - lo) / (lb - la) {
                odd = !odd;
            }
        }
        odd
    }

    fn constrain(&self, lat: f64, lon: f64) -> (f64, f64, bool) {
        if self.inside(lat, lon) {
            return (lat, lon, false);
        }
        let f = LocalFrame::new(lat, lon);
        let mut best = (f64::INFINITY, 0.0, 0.0);
        for &[la, lo, lb, lob] in &self.coast {
            let (ax, ay) = f.to_xy(la, lo);
            let (bx, by) = f.to_xy(lb, lob);
            let (dx, dy) = (bx - ax, by - ay);
            let l2 = dx * dx + dy * dy;
            let t = if l2 > 0.0 {
                (-(ax * dx + ay * dy) / l2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let (px, py) = (ax + t * dx, ay + t * dy);
            let d = px.hypot(py);
            if d < best.0 {
                best = (d, px, py);
            }
        }
        let (d, px, py) = best;
        if d <= ALLOWED_M || d > SEARCH_M {
            return (lat, lon, false);
        }
        let k = (d - ALLOWED_M) / d;
        let (a, b) = f.to_latlon(px * k, py * k);
        (a, b, true)
    }
}

fn ns_per_call(pts: &[(f64, f64)], rounds: usize, f: impl Fn(f64, f64) -> (f64, f64, bool)) -> f64 {
    let mut samples = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        for &(lat, lon) in pts {
            black_box(f(black_box(lat), black_box(lon)));
        }
        samples.push(t.elapsed().as_nanos() as f64 / pts.len() as f64);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    let t = Instant::now();
    let land = open();
    println!("LandIndex::open: {:?}", t.elapsed());
    // the steady state: the cell tree is built beside the lookups, from the first
    while !land.cells_ready() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!("cell tree ready after {:?}", t.elapsed());
    let pts = points(&land, 4096);
    // whole latitude band: a ray to the east must see every edge it crosses
    let pieces = land
        .polygons()
        .pieces_in_box(BOX.0 - 1.0, -180.0, BOX.2 + 1.0, 180.0);
    let naive = Naive {
        edges: pieces.iter().map(|p| p.0).collect(),
        coast: pieces.iter().filter(|p| p.1).map(|p| p.0).collect(),
    };
    let on_land = pts.iter().filter(|p| land.is_land(p.0, p.1)).count();
    println!(
        "{} points ({} on land), naive baseline over {} edges",
        pts.len(),
        on_land,
        naive.edges.len()
    );
    // Both must agree before their speeds mean anything.
    let mut disagree = 0;
    for &(lat, lon) in pts.iter().take(400) {
        let (a, b) = (
            land.constrain(lat, lon, ALLOWED_M, SEARCH_M),
            naive.constrain(lat, lon),
        );
        if a.2 != b.2 || (a.0 - b.0).abs() > 1e-3 || (a.1 - b.1).abs() > 1e-3 {
            disagree += 1;
        }
    }
    println!("disagreements on 400 points: {disagree}");

    let idx = ns_per_call(&pts, 31, |a, b| land.constrain(a, b, ALLOWED_M, SEARCH_M));
    // The common case alone (on land or already within 5 km), and the points
    // that have to move.
    let (common, far): (Vec<_>, Vec<_>) = pts
        .iter()
        .partition(|p| land.distance_to_land_m(p.0, p.1, ALLOWED_M).is_some());
    let idx_common = ns_per_call(&common, 31, |a, b| {
        land.constrain(a, b, ALLOWED_M, SEARCH_M)
    });
    let idx_far = ns_per_call(&far, 31, |a, b| land.constrain(a, b, ALLOWED_M, SEARCH_M));
    println!(
        "median ns per constrain(), bt=1: {:.1} on the {} points on land or within 5 km, {:.0} on the {} points that move",
        idx_common,
        common.len(),
        idx_far,
        far.len()
    );
    let idx0 = ns_per_call(&pts, 31, |a, b| land.constrain(a, b, 0.0, SEARCH_M));
    let few = &pts[..32];
    let nv = ns_per_call(few, 5, |a, b| naive.constrain(a, b));
    println!("median ns per constrain(): index bt=1 {idx:.1}, index bt=0 {idx0:.1}, naive bt=1 {nv:.0}; naive/index = {:.0}x", nv / idx);

    let mut g = c.benchmark_group("land");
    g.bench_function("constrain_bt1_index", |b| {
        let mut i = 0;
        b.iter(|| {
            let (lat, lon) = pts[i & 4095];
            i += 1;
            land.constrain(black_box(lat), black_box(lon), ALLOWED_M, SEARCH_M)
        })
    });
    g.bench_function("constrain_bt0_index", |b| {
        let mut i = 0;
        b.iter(|| {
            let (lat, lon) = pts[i & 4095];
            i += 1;
            land.constrain(black_box(lat), black_box(lon), 0.0, SEARCH_M)
        })
    });
    g.sample_size(10);
    g.bench_function("constrain_bt1_naive", |b| {
        let mut i = 0;
        b.iter(|| {
            let (lat, lon) = pts[i & 4095];
            i += 1;
            naive.constrain(black_box(lat), black_box(lon))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
