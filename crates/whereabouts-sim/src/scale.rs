//! Scale mode: an N-row synthetic OpenCelliD export for import-speed tests,
//! streamed in constant memory. Stations come in groups of GROUP cells that
//! share a network and LAC/TAC, scattered over many mccs and mncs worldwide.
//! A small share of rows repeat an earlier key (as merged exports do) and a few
//! rows are deliberately malformed; both are counted and reported.

use std::fs::File;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use crate::output::CELLS_HEADER;
use crate::rng::{hash2, hash3, mix64};

const GROUP: u64 = 512;
const MCCS: u64 = 550;
const MNCS: u64 = 99;
/// Share of rows, in parts per 2^32, that repeat a recent key.
const DUPLICATE_PER_2_32: u64 = (0.002 * 4_294_967_296.0) as u64;
const DUPLICATE_WINDOW: u64 = 256;
/// One bad row in about this many, plus two at 1/3 and 2/3 of any file of 10+ rows.
const BAD_EVERY: u64 = 1_000_003;

pub const BAD_KINDS: [&str; 6] = [
    "too few fields",
    "non-numeric latitude",
    "latitude out of range",
    "unknown radio",
    "mcc out of range",
    "empty cell id",
];

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    pub rows: u64,
    pub unique_keys: u64,
    pub duplicates: u64,
    pub bad_by_kind: [u64; 6],
    /// 1-based line numbers (the header is line 1) of the first bad rows.
    pub bad_lines: Vec<u64>,
}

impl Stats {
    pub fn bad(&self) -> u64 {
        self.bad_by_kind.iter().sum()
    }
}

#[derive(Clone, Copy)]
struct Group {
    radio: u8,
    mcc: u64,
    mnc: u64,
    lac: u64,
    base: u64,
    lat_c: i64,
    lon_c: i64,
}

/// The (pure) parameters of group g. (mcc, mnc, lac) is injective in g, so
/// keys of different groups never collide.
fn group(seed: u64, g: u64) -> Group {
    let h = hash3(seed, 0x5ca1e, g);
    let h2 = mix64(h);
    let mcc_i = g % MCCS;
    let mnc_i = (g / MCCS) % MNCS;
    let lac_i = g / (MCCS * MNCS);
    let mcc = 200 + mcc_i;
    let mnc = 1 + mnc_i;
    let lac = 1 + lac_i * 7 + hash2(mcc, mnc) % 1_000;
    let r = h % 100;
    let radio = match r {
        0..=24 => 0,  // GSM
        25..=44 => 1, // UMTS
        45..=94 => 2, // LTE
        _ => 3,       // NR
    };
    let base = match radio {
        1 => 1 + (h2 >> 8) % 4_000,           // RNC
        2 => (h2 >> 8) % ((1 << 20) - GROUP), // eNB base
        3 => (h2 >> 8) % ((1 << 24) - GROUP), // gNB base
        _ => 0,
    };
    let lat_c = -55_000_000 + ((h2 & 0xffff_ffff) % 125_000_000) as i64;
    let lon_c = -180_000_000 + ((h2 >> 32) % 360_000_000) as i64;
    Group {
        radio,
        mcc,
        mnc,
        lac,
        base,
        lat_c,
        lon_c,
    }
}

const RADIO_NAMES: [&[u8]; 4] = [b"GSM", b"UMTS", b"LTE", b"NR"];

fn cell_id(g: &Group, j: u64) -> (u64, u64) {
    match g.radio {
        0 => (1 + j * 37, 0),
        1 => ((g.base << 16) | (1 + j * 37), (j * 7) % 512),
        2 => (((g.base + j / 3) << 8) | (j % 3 + 1), j % 504),
        _ => (((g.base + j / 3) << 12) | (j % 3 + 1), j % 1008),
    }
}

/// "00".."99": formatting two digits per division halves the divisions, which
/// are most of the cost of a row.
const DIGITS2: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// One row, assembled on the stack and appended to the output buffer in one
/// copy (a Vec push per byte checks capacity every time).
struct Line {
    b: [u8; 192],
    n: usize,
}

impl Line {
    #[inline]
    fn new() -> Line {
        Line { b: [0; 192], n: 0 }
    }

    /// Byte by byte: the slices are a few bytes long, where a memmove call
    /// costs more than the copy.
    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        for &c in s {
            self.b[self.n] = c;
            self.n += 1;
        }
    }

    #[inline]
    fn byte(&mut self, c: u8) {
        self.b[self.n] = c;
        self.n += 1;
    }

    /// Writes the digits in place from the right, two per division.
    #[inline]
    fn u64(&mut self, mut v: u64) {
        let len = POW10.iter().take_while(|&&p| v >= p).count().max(1);
        let mut end = self.n + len;
        while v >= 100 {
            let r = (v % 100) as usize * 2;
            v /= 100;
            end -= 2;
            self.b[end] = DIGITS2[r];
            self.b[end + 1] = DIGITS2[r + 1];
        }
        if v >= 10 {
            let r = v as usize * 2;
            self.b[end - 2] = DIGITS2[r];
            self.b[end - 1] = DIGITS2[r + 1];
        } else {
            self.b[end - 1] = b'0' + v as u8;
        }
        self.n += len;
    }

    /// Micro-degrees as a fixed-point decimal with 6 places: exact and identical
    /// on every platform, and much faster than float formatting.
    #[inline]
    fn micro(&mut self, v: i64) {
        if v < 0 {
            self.byte(b'-');
        }
        let a = v.unsigned_abs();
        self.u64(a / 1_000_000);
        self.byte(b'.');
        let f = (a % 1_000_000) as usize;
        let (hi, mid, lo) = (f / 10_000, f / 100 % 100, f % 100);
        self.bytes(&DIGITS2[hi * 2..hi * 2 + 2]);
        self.bytes(&DIGITS2[mid * 2..mid * 2 + 2]);
        self.bytes(&DIGITS2[lo * 2..lo * 2 + 2]);
    }
}

#[cfg(test)]
fn push_micro(buf: &mut Vec<u8>, v: i64) {
    let mut l = Line::new();
    l.micro(v);
    buf.extend_from_slice(&l.b[..l.n]);
}

fn is_bad(i: u64, rows: u64) -> bool {
    i % BAD_EVERY == BAD_EVERY / 2 || (rows >= 10 && (i == rows / 3 || i == 2 * rows / 3))
}

/// Created 2012-01-01 .. 2026-05-31; updated between created and 2026-06-01.
const T_MIN: u64 = 1_325_376_000;
const T_MAX: u64 = 1_780_272_000;

fn push_row(buf: &mut Vec<u8>, seed: u64, g: &Group, j: u64, row_hash: u64) {
    let (cid, unit) = cell_id(g, j);
    let h = row_hash;
    let h2 = mix64(h ^ seed);
    let lat =
        (g.lat_c + ((h & 0x3_ffff) as i64 % 300_001) - 150_000).clamp(-90_000_000, 90_000_000);
    let lon = (g.lon_c + (((h >> 18) & 0x3_ffff) as i64 % 300_001) - 150_000)
        .clamp(-180_000_000, 180_000_000);
    let range = 100 + (h >> 36) % 20_000;
    let samples = 1 + (h2 & 0xffff) % 500;
    let created = T_MIN + (h2 >> 16) % (T_MAX - T_MIN);
    let updated = created + (h2 >> 40) % (T_MAX - created + 1);
    let mut l = Line::new();
    l.bytes(RADIO_NAMES[g.radio as usize]);
    l.byte(b',');
    l.u64(g.mcc);
    l.byte(b',');
    l.u64(g.mnc);
    l.byte(b',');
    l.u64(g.lac);
    l.byte(b',');
    l.u64(cid);
    l.byte(b',');
    l.u64(unit);
    l.byte(b',');
    l.micro(lon);
    l.byte(b',');
    l.micro(lat);
    l.byte(b',');
    l.u64(range);
    l.byte(b',');
    l.u64(samples);
    l.bytes(b",1,");
    l.u64(created);
    l.byte(b',');
    l.u64(updated);
    l.bytes(b",0\n");
    buf.extend_from_slice(&l.b[..l.n]);
}

fn push_bad(buf: &mut Vec<u8>, kind: usize) {
    let row: &[u8] = match kind {
        0 => b"LTE,262,1,4711,12345\n",
        1 => b"LTE,262,1,4711,12345,7,13.404954,abc,1000,5,1,1600000000,1600000000,0\n",
        2 => b"GSM,262,1,4711,12345,0,13.404954,123.456789,1000,5,1,1600000000,1600000000,0\n",
        3 => b"LTX,262,1,4711,12345,7,13.404954,52.520008,1000,5,1,1600000000,1600000000,0\n",
        4 => b"UMTS,1000,1,4711,12345,7,13.404954,52.520008,1000,5,1,1600000000,1600000000,0\n",
        _ => b"LTE,262,1,4711,,7,13.404954,52.520008,1000,5,1,1600000000,1600000000,0\n",
    };
    buf.extend_from_slice(row);
}

/// Writes the header and `rows` data rows to `out`. `progress` is called about
/// once a second with (rows written, elapsed seconds).
pub fn write_rows(
    seed: u64,
    rows: u64,
    sink: &mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
    progress: &mut dyn FnMut(u64, f64),
) -> io::Result<Stats> {
    let t0 = Instant::now();
    let mut last = 0.0;
    let mut st = Stats {
        rows,
        ..Stats::default()
    };
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    buf.extend_from_slice(CELLS_HEADER.as_bytes());
    buf.push(b'\n');
    let mut u: u64 = 0;
    let mut cur_g = u64::MAX;
    let mut g = group(seed, 0);
    for i in 0..rows {
        if is_bad(i, rows) {
            let kind = (st.bad() % BAD_KINDS.len() as u64) as usize;
            push_bad(&mut buf, kind);
            st.bad_by_kind[kind] += 1;
            if st.bad_lines.len() < 20 {
                st.bad_lines.push(i + 2);
            }
        } else {
            let h = hash2(seed, i);
            if u > 0 && (h >> 32) < DUPLICATE_PER_2_32 {
                // Same key as a recent station, different measurements.
                let back = 1 + (h & 0xffff) % u.min(DUPLICATE_WINDOW);
                let v = u - back;
                let gv = group(seed, v / GROUP);
                push_row(&mut buf, seed, &gv, v % GROUP, mix64(h));
                st.duplicates += 1;
            } else {
                let gi = u / GROUP;
                if gi != cur_g {
                    g = group(seed, gi);
                    cur_g = gi;
                }
                push_row(&mut buf, seed, &g, u % GROUP, h);
                u += 1;
            }
        }
        if buf.len() >= (1 << 20) - 256 {
            buf = sink(buf)?;
            buf.clear();
            let e = t0.elapsed().as_secs_f64();
            if e - last >= 1.0 {
                last = e;
                progress(i + 1, e);
            }
        }
    }
    if !buf.is_empty() {
        sink(buf)?;
    }
    st.unique_keys = u;
    Ok(st)
}

/// Hands a full buffer to the writer thread and takes back an empty one (or a
/// new one while fewer than a handful circulate), so generation overlaps with
/// disk writes and compression in bounded memory, without copying.
fn pipe_sink(
    tx: &SyncSender<Vec<u8>>,
    back: &Receiver<Vec<u8>>,
    full: Vec<u8>,
) -> io::Result<Vec<u8>> {
    tx.send(full)
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "writer stopped"))?;
    Ok(back
        .try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(1 << 20)))
}

fn drain(rx: Receiver<Vec<u8>>, back: SyncSender<Vec<u8>>, sink: &mut dyn Write) -> io::Result<()> {
    for buf in rx {
        sink.write_all(&buf)?;
        let _ = back.try_send(buf);
    }
    Ok(())
}

fn writer(
    out: Option<File>,
    gz: bool,
    rx: Receiver<Vec<u8>>,
    back: SyncSender<Vec<u8>>,
) -> io::Result<()> {
    let mut base: Box<dyn Write> = match out {
        Some(f) => Box::new(f),
        None => Box::new(io::stdout().lock()),
    };
    if gz {
        let mut enc = flate2::GzBuilder::new().write(&mut base, flate2::Compression::fast());
        drain(rx, back, &mut enc)?;
        enc.finish()?;
    } else {
        drain(rx, back, &mut base)?;
    }
    base.flush()
}

/// The `scale` command: writes to FILE (or stdout for `-`), optionally gzipped,
/// and reports counts and throughput on stderr.
pub fn run(seed: u64, rows: u64, out: &str, gz: bool) -> Result<(), String> {
    let t0 = Instant::now();
    let file = if out == "-" {
        None
    } else {
        Some(File::create(out).map_err(|e| format!("cannot create {out}: {e}"))?)
    };
    let (tx, rx) = sync_channel::<Vec<u8>>(4);
    let (back_tx, back_rx) = sync_channel::<Vec<u8>>(6);
    let handle = std::thread::spawn(move || writer(file, gz, rx, back_tx));
    let mut sink = |full: Vec<u8>| pipe_sink(&tx, &back_rx, full);
    let mut progress = |n: u64, e: f64| {
        eprintln!(
            "  {n}/{rows} rows ({:.1}%), {:.2} M rows/s",
            100.0 * n as f64 / rows.max(1) as f64,
            n as f64 / e / 1e6
        );
    };
    let generated = write_rows(seed, rows, &mut sink, &mut progress);
    drop(tx);
    let written = handle
        .join()
        .map_err(|_| "writer thread panicked".to_string())?;
    written.map_err(|e| format!("writing {out}: {e}"))?;
    let st = generated.map_err(|e| format!("writing {out}: {e}"))?;
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} rows to {out}{} in {secs:.2} s ({:.2} M rows/s): {} unique keys, {} duplicate keys, {} bad rows",
        st.rows,
        if gz { " (gzip)" } else { "" },
        st.rows as f64 / secs.max(1e-9) / 1e6,
        st.unique_keys,
        st.duplicates,
        st.bad()
    );
    for (k, n) in BAD_KINDS.iter().zip(st.bad_by_kind) {
        if n > 0 {
            eprintln!("  bad rows, {k}: {n}");
        }
    }
    if !st.bad_lines.is_empty() {
        let lines: Vec<String> = st.bad_lines.iter().map(|l| l.to_string()).collect();
        eprintln!(
            "  bad row line numbers (header = line 1){}: {}",
            if st.bad() > 20 { ", first 20" } else { "" },
            lines.join(" ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(seed: u64, rows: u64) -> (Vec<u8>, Stats) {
        let mut v = Vec::new();
        let st = write_rows(
            seed,
            rows,
            &mut |b: Vec<u8>| {
                v.extend_from_slice(&b);
                Ok(b)
            },
            &mut |_, _| {},
        )
        .unwrap();
        (v, st)
    }

    #[test]
    fn deterministic_and_counted() {
        let (a, sa) = gen(3, 50_000);
        let (b, _) = gen(3, 50_000);
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CELLS_HEADER);
        assert_eq!(lines.len() as u64, 50_001);
        assert_eq!(sa.bad(), 2);
        assert_eq!(sa.unique_keys + sa.duplicates + sa.bad(), 50_000);
        // Every good row has 14 fields and valid coordinates; bad ones are at the reported lines.
        let mut keys = std::collections::BTreeMap::new();
        for (n, l) in lines.iter().enumerate().skip(1) {
            if sa.bad_lines.contains(&(n as u64 + 1)) {
                continue;
            }
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 14, "{l}");
            let lon: f64 = f[6].parse().unwrap();
            let lat: f64 = f[7].parse().unwrap();
            assert!(lat.abs() <= 90.0 && lon.abs() <= 180.0);
            assert!(f[6].split('.').nth(1).unwrap().len() == 6);
            let created: u64 = f[11].parse().unwrap();
            let updated: u64 = f[12].parse().unwrap();
            assert!(updated >= created);
            let cid: u64 = f[4].parse().unwrap();
            let lac: u64 = f[3].parse().unwrap();
            assert!(lac <= 65533);
            match f[0] {
                "GSM" => assert!(cid <= 65535),
                "UMTS" | "LTE" => assert!(cid <= 268_435_455),
                "NR" => assert!(cid <= 68_719_476_735),
                r => panic!("radio {r}"),
            }
            *keys
                .entry((
                    f[0].to_string(),
                    f[1].to_string(),
                    f[2].to_string(),
                    f[3].to_string(),
                    f[4].to_string(),
                ))
                .or_insert(0u64) += 1;
        }
        assert_eq!(keys.len() as u64, sa.unique_keys);
        let dups: u64 = keys.values().map(|&c| c - 1).sum();
        assert_eq!(dups, sa.duplicates);
        assert!(
            sa.duplicates > 40 && sa.duplicates < 200,
            "{}",
            sa.duplicates
        );
    }

    #[test]
    fn fixed_point() {
        let mut b = Vec::new();
        push_micro(&mut b, -1_234_567);
        b.push(b' ');
        push_micro(&mut b, 5);
        assert_eq!(String::from_utf8(b).unwrap(), "-1.234567 0.000005");
    }
}
