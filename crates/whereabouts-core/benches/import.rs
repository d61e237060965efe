//! End-to-end import throughput on a synthetic OpenCelliD-style CSV.
//!
//! `IMPORT_BENCH_ROWS` rows (default 1,000,000; 2% duplicates; about 180,000
//! LAC areas) are written
//! to a temp file, then timed three ways in one run so that the ratios show where
//! time goes: reading bytes only, reading + parsing + validating (`check_files`),
//! and the full import (sort, spill, merge, write shards). Peak RSS is reset
//! between stages where Linux allows it (`/proc/self/clear_refs`).
//! `IMPORT_BENCH_RUN_ROWS` overrides the run size; `IMPORT_BENCH_GZ=1` compresses the input.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::time::Instant;

use whereabouts_core::import::{check_files, import_files, peak_rss_bytes, ImportOptions, Phase};

/// A small xorshift generator: reproducible rows without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn generate(path: &Path, rows: u64, gz: bool) -> u64 {
    let file = File::create(path).unwrap();
    let mut out: Box<dyn Write> = if gz {
        Box::new(flate2::write::GzEncoder::new(
            BufWriter::with_capacity(1 << 20, file),
            flate2::Compression::fast(),
        ))
    } else {
        Box::new(BufWriter::with_capacity(1 << 20, file))
    };
    writeln!(
        out,
        "radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal"
    )
    .unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut recent: Vec<String> = Vec::new();
    for i in 0..rows {
        if i % 50 == 49 && !recent.is_empty() {
            // A duplicate of a recent cell, observed elsewhere.
            let prefix = &recent[rng.below(recent.len() as u64) as usize];
            let lon = rng.below(3_600_000_000) as f64 / 1e7 - 180.0;
            writeln!(
                out,
                "{prefix},{lon:.7},48.1234567,800,3,1,1500000000,1700000000,0"
            )
            .unwrap();
            continue;
        }
        let (radio, cid) = match rng.below(10) {
            0..=2 => ("GSM", rng.below(65_536)),
            3..=4 => ("UMTS", rng.below(268_435_456)),
            _ => ("LTE", rng.below(268_435_456)),
        };
        // About 600 networks of 300 areas each: real exports put hundreds of
        // cells in an area, which decides how many areas the store derives.
        let net = rng.below(600);
        let (mcc, mnc) = (200 + net, net % 40);
        let lac = 1 + rng.below(300) * 97;
        let unit = if radio == "GSM" {
            String::new()
        } else {
            rng.below(504).to_string()
        };
        let prefix = format!("{radio},{mcc},{mnc},{lac},{cid},{unit}");
        let lon = rng.below(3_600_000_000) as f64 / 1e7 - 180.0;
        let lat = rng.below(1_700_000_000) as f64 / 1e7 - 85.0;
        let range = rng.below(5000);
        let samples = 1 + rng.below(200);
        let created = 1_300_000_000 + rng.below(300_000_000);
        let updated = created + rng.below(100_000_000);
        writeln!(
            out,
            "{prefix},{lon:.7},{lat:.7},{range},{samples},1,{created},{updated},0"
        )
        .unwrap();
        if recent.len() < 1024 {
            recent.push(prefix);
        } else {
            recent[rng.below(1024) as usize] = prefix;
        }
    }
    drop(out);
    fs::metadata(path).unwrap().len()
}

/// User + system CPU seconds of this process so far (Linux; 0 elsewhere): with other
/// work on the machine, rows per CPU second is steadier than rows per second.
fn cpu_seconds() -> f64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat; 100 ticks a second on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

fn reset_peak_rss() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

fn mib(b: Option<u64>) -> String {
    b.map_or("unknown".into(), |b| {
        format!("{:.0} MiB", b as f64 / (1 << 20) as f64)
    })
}

fn main() {
    let rows: u64 = std::env::var("IMPORT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000);
    let gz = std::env::var("IMPORT_BENCH_GZ").is_ok_and(|v| v == "1");
    let mut opts = ImportOptions::default();
    if let Some(r) = std::env::var("IMPORT_BENCH_RUN_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        opts.run_rows = r;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir
        .path()
        .join(if gz { "cells.csv.gz" } else { "cells.csv" });
    let t = Instant::now();
    let size = generate(&input, rows, gz);
    println!(
        "generated {rows} rows, {:.1} MiB{} in {:.1} s",
        size as f64 / (1 << 20) as f64,
        if gz { " (gzip)" } else { "" },
        t.elapsed().as_secs_f64()
    );

    // Warm the page cache so the three stages read the same way.
    let mut sink = vec![0u8; 1 << 20];
    let mut f = File::open(&input).unwrap();
    let t = Instant::now();
    let mut total = 0usize;
    loop {
        let n = f.read(&mut sink).unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    let read_s = t.elapsed().as_secs_f64();
    println!(
        "read only:        {:>8.2} s  {:>10.0} rows/s  ({:.0} MiB/s)",
        read_s,
        rows as f64 / read_s,
        total as f64 / (1 << 20) as f64 / read_s
    );

    reset_peak_rss();
    let cpu = cpu_seconds();
    let t = Instant::now();
    let reports = check_files(std::slice::from_ref(&input), &opts, &mut |_| true).unwrap();
    let parse_s = t.elapsed().as_secs_f64();
    let parse_cpu = cpu_seconds() - cpu;
    assert_eq!(reports[0].rows, rows);
    println!(
        "read+parse:       {:>8.2} s  {:>10.0} rows/s  {:>6.2} CPU s  peak RSS {}",
        parse_s,
        rows as f64 / parse_s,
        parse_cpu,
        mib(peak_rss_bytes())
    );

    reset_peak_rss();
    let db = dir.path().join("db");
    let cpu = cpu_seconds();
    let t = Instant::now();
    let mut phases: Vec<(Phase, f64)> = Vec::new();
    let rep = import_files(&db, std::slice::from_ref(&input), &opts, &mut |p| {
        if phases.last().is_none_or(|l| l.0 != p.phase) {
            phases.push((p.phase, t.elapsed().as_secs_f64()));
        }
        true
    })
    .unwrap();
    let import_s = t.elapsed().as_secs_f64();
    let import_cpu = cpu_seconds() - cpu;
    let mut ends: Vec<f64> = phases.iter().skip(1).map(|p| p.1).collect();
    ends.push(import_s);
    let split: Vec<String> = phases
        .iter()
        .zip(ends)
        .map(|((phase, start), end)| format!("{phase:?} {:.2} s", end - start))
        .collect();
    println!(
        "full import:      {:>8.2} s  {:>10.0} rows/s  {:>6.2} CPU s  peak RSS {}  (run_rows {})",
        import_s,
        rows as f64 / import_s,
        import_cpu,
        mib(rep.peak_rss_bytes),
        opts.run_rows
    );
    println!("  phases: {}", split.join(", "));
    println!(
        "output: {} cells, {} merged duplicates, {} shard(s), {:.1} MiB, {:.1} bytes/cell; import/parse time ratio {:.2}",
        rep.cells,
        rep.merged_duplicates,
        rep.shards,
        rep.bytes as f64 / (1 << 20) as f64,
        rep.bytes as f64 / rep.cells.max(1) as f64,
        import_s / parse_s
    );
}
