//! Pooling masts across radios (`sites::pool`, run at an import's commit) on one large
//! operator: `POOL_BENCH_SITES` masts (default 250,000) over a country-sized area, each
//! carrying GSM, UMTS, LTE and NR sites whose inferred masts lie up to 100 m apart, with
//! spreads of 100 m to 1.6 km. Prints the time a site on one thread (the baseline) and on the
//! machine's threads, alternated over three rounds, their ratio, and how many were pooled.
//!
//!   cargo bench -p whereabouts-core --bench pool

use std::time::Instant;

use whereabouts_core::radio::Radio;
use whereabouts_core::sites::{pool_on, SiteMast};

fn main() {
    let masts: usize = std::env::var("POOL_BENCH_SITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250_000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut unit = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut sites = Vec::with_capacity(4 * masts);
    for _ in 0..masts {
        let (lat, lon) = (45.0 + unit() * 9.0, unit() * 13.0);
        let spread_m = 100.0 + unit() * 1_500.0;
        for radio in [Radio::Gsm, Radio::Umts, Radio::Lte, Radio::Nr] {
            sites.push(SiteMast {
                radio,
                lat: lat + (unit() - 0.5) * 0.001,
                lon: lon + (unit() - 0.5) * 0.0015,
                spread_m,
            });
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = sites.len() as f64;
    for round in 1..=3 {
        let mut ns = [0.0; 2];
        let mut pooled = 0;
        for (k, t) in [1, threads].into_iter().enumerate() {
            let start = Instant::now();
            let out = pool_on(&sites, t);
            ns[k] = start.elapsed().as_secs_f64() * 1e9 / n;
            pooled = out.iter().filter(|p| p.is_some()).count();
        }
        println!(
            "round {round}: {} sites, {pooled} pooled: one thread {:.0} ns a site, {threads} threads {:.0} ns ({:.2}x)",
            sites.len(),
            ns[0],
            ns[1],
            ns[0] / ns[1]
        );
    }
}
