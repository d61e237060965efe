//! The pooled masts of a database being built ([`crate::sites::pool`]). Each site's mast is
//! spilled to a staging file as its cells stream past, in stream order (network by
//! network, radio first); at commit each operator's sites, spread over its radios' parts of
//! the spill, are read back together and pooled, and the shifts come out in the stream's
//! order again, ready to be written as each shard's `masts` vector. Memory holds one
//! operator's sites at a time, not the database's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::record::Mast;
use crate::geo;
use crate::radio::Radio;
use crate::sites::{self, SiteMast};

const SPILLED_BYTES: usize = 32;
const SHIFT_BYTES: usize = 4;
/// A site pooling left alone.
const NO_SHIFT: i16 = i16::MIN;

/// One network's run of sites in the spill (each site records its own shard).
#[derive(Clone, Copy, Debug)]
struct Segment {
    radio: Radio,
    mcc: u16,
    mnc: u16,
    first: u64,
    count: u64,
}

/// A spilled site: its mast and spread, and where its first sector lies.
#[derive(Clone, Copy, Debug)]
struct Spilled {
    lat: f64,
    lon: f64,
    spread_m: f64,
    shard: u32,
    cell: u32,
}

impl Spilled {
    fn encode(&self) -> [u8; SPILLED_BYTES] {
        let mut b = [0u8; SPILLED_BYTES];
        b[0..8].copy_from_slice(&self.lat.to_le_bytes());
        b[8..16].copy_from_slice(&self.lon.to_le_bytes());
        b[16..24].copy_from_slice(&self.spread_m.to_le_bytes());
        b[24..28].copy_from_slice(&self.shard.to_le_bytes());
        b[28..32].copy_from_slice(&self.cell.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Spilled {
        let f = |i: usize| f64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Spilled {
            lat: f(0),
            lon: f(8),
            spread_m: f(16),
            shard: u(24),
            cell: u(28),
        }
    }
}

pub struct MastSpill {
    path: PathBuf,
    out: BufWriter<File>,
    count: u64,
    segments: Vec<Segment>,
}

impl MastSpill {
    pub fn create(path: &Path) -> io::Result<MastSpill> {
        Ok(MastSpill {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, File::create(path)?),
            count: 0,
            segments: Vec::new(),
        })
    }

    /// Adds a site whose first sector is `cell` of shard `shard`. Sites come in the
    /// builder's order: by shard, then cell.
    pub fn push(
        &mut self,
        (radio, mcc, mnc): (Radio, u16, u16),
        shard: u32,
        cell: u32,
        site: &SiteMast,
    ) -> io::Result<()> {
        let same = self
            .segments
            .last()
            .is_some_and(|s| (s.radio, s.mcc, s.mnc) == (radio, mcc, mnc));
        if !same {
            self.segments.push(Segment {
                radio,
                mcc,
                mnc,
                first: self.count,
                count: 0,
            });
        }
        if let Some(s) = self.segments.last_mut() {
            s.count += 1;
        }
        self.count += 1;
        let spilled = Spilled {
            lat: site.lat,
            lon: site.lon,
            spread_m: site.spread_m,
            shard,
            cell,
        };
        self.out.write_all(&spilled.encode())
    }

    /// Pools each operator's sites, staging the shifts in `shifts_path`, and returns the
    /// pooled sites in the order they were pushed.
    pub fn pool(self, shifts_path: &Path) -> io::Result<PooledMasts> {
        let mut spill = self.out.into_inner().map_err(|e| e.into_error())?;
        spill.flush()?;
        let mut shifts = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(shifts_path)?;
        shifts.set_len(self.count * SHIFT_BYTES as u64)?;
        let mut reader = File::open(&self.path)?;
        let mut order: Vec<usize> = (0..self.segments.len()).collect();
        order.sort_by_key(|&i| (self.segments[i].mcc, self.segments[i].mnc, i));
        let mut buf = Vec::new();
        for operator in order.chunk_by(|&a, &b| {
            let (a, b) = (&self.segments[a], &self.segments[b]);
            (a.mcc, a.mnc) == (b.mcc, b.mnc)
        }) {
            let mut masts = Vec::new();
            for &si in operator {
                let seg = self.segments[si];
                buf.resize(seg.count as usize * SPILLED_BYTES, 0);
                reader.seek(SeekFrom::Start(seg.first * SPILLED_BYTES as u64))?;
                reader.read_exact(&mut buf)?;
                masts.extend(buf.chunks_exact(SPILLED_BYTES).map(|b| {
                    let s = Spilled::decode(b);
                    SiteMast {
                        radio: seg.radio,
                        lat: s.lat,
                        lon: s.lon,
                        spread_m: s.spread_m,
                    }
                }));
            }
            let pooled = sites::pool(&masts);
            let m_per_deg = geo::EARTH_RADIUS_M.to_radians();
            let mut at = 0;
            for &si in operator {
                let seg = self.segments[si];
                let part = &pooled[at..at + seg.count as usize];
                at += seg.count as usize;
                let mut bytes = Vec::with_capacity(part.len() * SHIFT_BYTES);
                for (shift, site) in part.iter().zip(&masts[at - part.len()..at]) {
                    let e5 = |deg: f64| {
                        let v = (deg * 1e5).round();
                        (v.abs() < i16::MAX as f64).then_some(v as i16)
                    };
                    let cos = site.lat.to_radians().cos().max(1e-6);
                    // Beyond 16 bits (10 km of longitude past 74 degrees): not pooled.
                    let (dlat, dlon) = shift
                        .and_then(|(e, n)| Some((e5(n / m_per_deg)?, e5(e / (m_per_deg * cos))?)))
                        .filter(|&s| s != (0, 0))
                        .unwrap_or((NO_SHIFT, NO_SHIFT));
                    bytes.extend_from_slice(&dlat.to_le_bytes());
                    bytes.extend_from_slice(&dlon.to_le_bytes());
                }
                shifts.seek(SeekFrom::Start(seg.first * SHIFT_BYTES as u64))?;
                shifts.write_all(&bytes)?;
            }
        }
        reader.seek(SeekFrom::Start(0))?;
        shifts.seek(SeekFrom::Start(0))?;
        Ok(PooledMasts {
            spill: BufReader::with_capacity(1 << 20, reader),
            shifts: BufReader::with_capacity(1 << 18, shifts),
            remaining: self.count,
        })
    }
}

/// The pooled sites, as (shard, mast entry), in the builder's order.
pub struct PooledMasts {
    spill: BufReader<File>,
    shifts: BufReader<File>,
    remaining: u64,
}

impl Iterator for PooledMasts {
    type Item = io::Result<(u32, Mast)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut site = [0u8; SPILLED_BYTES];
        let mut shift = [0u8; SHIFT_BYTES];
        while self.remaining > 0 {
            self.remaining -= 1;
            if let Err(e) = self
                .spill
                .read_exact(&mut site)
                .and_then(|_| self.shifts.read_exact(&mut shift))
            {
                return Some(Err(e));
            }
            let dlat_e5 = i16::from_le_bytes([shift[0], shift[1]]);
            let dlon_e5 = i16::from_le_bytes([shift[2], shift[3]]);
            if dlat_e5 == NO_SHIFT {
                continue;
            }
            let s = Spilled::decode(&site);
            return Some(Ok((
                s.shard,
                Mast {
                    cell: s.cell,
                    dlat_e5,
                    dlon_e5,
                },
            )));
        }
        None
    }
}
