//! Fixed-size records of the station file. Each is a FlatBuffers struct (see
//! `schema/stations.fbs`), stored little-endian and read in place from the mmap.
//!
//! A cell costs exactly 23 bytes ([`StationRecord`]): radio, mcc and mnc live once per
//! network in [`Network`], and the per-cell fields are packed into 181 bits.

#[cfg(target_endian = "big")]
compile_error!("station files are read in place and assume a little-endian host");

use crate::radio::Radio;

/// Days are counted from 2000-01-01 so that 15 bits last until 2089.
pub const EPOCH_2000_UNIX: i64 = 946_684_800;
const DAY_S: i64 = 86_400;

pub const PSC_UNKNOWN: u16 = 1023;
pub const MAX_RANGE_M: u32 = 65_532;
pub const MAX_SAMPLES: u32 = 8_191;

/// Where a cell key splits: `lac << CID_BITS | rank`, sortable as one integer, where the
/// rank is the cell id reordered ([`cid_rank`]) so that a short id's cells lie together.
pub const CID_BITS: u32 = 36;
pub const CID_MASK: u64 = (1 << CID_BITS) - 1;

/// UMTS C-IDs (16 bits) from here on form the one decade short of ten ids (65,530 to
/// 65,535), ranked after all full decades.
const UMTS_LAST_DECADE: u64 = 65_530;
/// The first rank of that decade, after 6,553 full decades of 4,096 RNCs.
const UMTS_LAST_DECADE_RANK: u64 = UMTS_LAST_DECADE * 4096;
const LOW_28: u64 = (1 << 28) - 1;

/// The key of cell `cid` in `lac` for `radio`.
pub fn cell_key(radio: Radio, lac: u32, cid: u64) -> u64 {
    rank_key(lac, cid_rank(radio, cid & CID_MASK))
}

/// The key of the cell of rank `rank` ([`cid_rank`]) in `lac`.
pub fn rank_key(lac: u32, rank: u64) -> u64 {
    ((lac as u64) << CID_BITS) | rank
}

pub fn key_lac(key: u64) -> u32 {
    (key >> CID_BITS) as u32
}

/// The cell id of a key made by [`cell_key`] for the same radio.
pub fn key_cid(radio: Radio, key: u64) -> u64 {
    rank_cid(radio, key & CID_MASK)
}

/// Where a cell lies among its LAC's cells: a bijection of the 36-bit ids that keeps a
/// site's sectors together (they share a mast, [`crate::sites::site_cids`]) and puts the
/// ids that share their low 16 bits near each other, for the short-id fallback (`scf`):
/// - LTE, `eNB << 8 | sector`: the eNB's low byte first, then its other bits, then the
///   sector. A short id's cells lie among 1/256 of the LAC's.
/// - UMTS, `rnc << 16 | ci`: the C-ID's decade first (a site's sectors share it), then
///   the RNC, then the C-ID's last digit. A short id's cells lie among 1/6,554. The last,
///   short decade (65,530 to 65,535) follows the full ones, so that 28-bit ids keep 28-bit
///   ranks.
/// - Every other radio: the id itself (GSM and CDMA ids have 16 bits, NB-IoT and NR have no
///   short ids).
pub fn cid_rank(radio: Radio, cid: u64) -> u64 {
    match radio {
        Radio::Lte => ((cid >> 8) & 0xff) << 28 | (cid >> 16) << 8 | (cid & 0xff),
        // A 28-bit id is ranked within 28 bits; the bits above (no valid id has them) stay.
        Radio::Umts => {
            let (rnc, ci) = ((cid >> 16) & 0xfff, cid & 0xffff);
            let rank = if ci < UMTS_LAST_DECADE {
                ((ci / 10) << 12 | rnc) * 10 + ci % 10
            } else {
                UMTS_LAST_DECADE_RANK + rnc * 6 + (ci - UMTS_LAST_DECADE)
            };
            (cid & !LOW_28) | rank
        }
        _ => cid,
    }
}

fn rank_cid(radio: Radio, rank: u64) -> u64 {
    match radio {
        Radio::Lte => ((rank >> 8) & 0xf_ffff) << 16 | (rank >> 28) << 8 | (rank & 0xff),
        Radio::Umts => {
            let low = rank & LOW_28;
            let (rnc, ci) = if low < UMTS_LAST_DECADE_RANK {
                let (q, digit) = (low / 10, low % 10);
                (q & 0xfff, (q >> 12) * 10 + digit)
            } else {
                let k = low - UMTS_LAST_DECADE_RANK;
                (k / 6, UMTS_LAST_DECADE + k % 6)
            };
            (rank & !LOW_28) | rnc << 16 | ci
        }
        _ => rank,
    }
}

/// The ranks, inclusive, among which lie all cells of `radio` whose id ends in the 16 bits
/// `short` (with others, which the caller filters out). None: the radio has no short ids.
pub fn short_cid_ranks(radio: Radio, short: u16) -> Option<(u64, u64)> {
    let s = short as u64;
    match radio {
        Radio::Lte => Some(((s >> 8) << 28, (s >> 8) << 28 | LOW_28)),
        Radio::Umts if s < UMTS_LAST_DECADE => {
            let decade = s / 10;
            Some(((decade << 12) * 10, ((decade << 12 | 0xfff) * 10 + 9)))
        }
        Radio::Umts => Some((UMTS_LAST_DECADE_RANK, LOW_28)),
        _ => None,
    }
}

/// How a station's position was estimated, which says where the device hearing it is
/// likely to be relative to it (docs/positioning.md, Cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Estimated {
    /// A crowd average of where devices that reported the station were: imported from an
    /// OpenCelliD/MLS/Android-SQLite export, or a simulator crowd estimate. For a sector,
    /// pulled out from its mast along its azimuth.
    #[default]
    Averaged,
    /// Our learner's mode of GPS-tagged sightings (`learn`, overlay stations and the
    /// stations compaction writes from them): where the sightings crowd most, not a mean.
    Learned,
}

/// Decoded per-station attributes, in natural units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StationInfo {
    pub lat: f64,
    pub lon: f64,
    /// Coverage radius in metres as estimated by the source.
    pub range_m: u32,
    pub samples: u32,
    /// Primary scrambling code (UMTS) or physical cell id (LTE, NR).
    pub psc: Option<u16>,
    /// Unix seconds, resolved to the month (created) and the day (updated).
    pub created: i64,
    pub updated: i64,
    pub estimated: Estimated,
}

/// A cell (key = [`cell_key`], `lac << 36 | rank`) or a WiFi access point (key = 48-bit BSSID).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Station {
    pub key: u64,
    pub lat_e7: i32,
    pub lon_e7: i32,
    /// psc:10 | range/4 m:14 | samples:13 | created month since 2000:11 | learned:1 |
    /// updated day since 2000:15 (the `meta` module's layout; format 4 had 12 bits of months and
    /// no flag)
    pub meta: u64,
}

/// The one place the bits of [`Station::meta`] are laid out: (shift, width) of each field.
mod meta {
    pub const PSC: (u32, u32) = (0, 10);
    pub const RANGE: (u32, u32) = (10, 14);
    pub const SAMPLES: (u32, u32) = (24, 13);
    /// 11 bits of 30-day months from 2000 last until 2168.
    pub const CREATED: (u32, u32) = (37, 11);
    /// Set for [`super::Estimated::Learned`].
    pub const LEARNED: (u32, u32) = (48, 1);
    pub const UPDATED: (u32, u32) = (49, 15);

    pub const fn max((_, width): (u32, u32)) -> u64 {
        (1 << width) - 1
    }

    pub const fn pack((shift, width): (u32, u32), v: u64) -> u64 {
        (v & ((1 << width) - 1)) << shift
    }

    pub const fn get(m: u64, (shift, width): (u32, u32)) -> u64 {
        (m >> shift) & ((1 << width) - 1)
    }
}

// The fields tile the 64 bits exactly.
const _: () = {
    let f = [
        meta::PSC,
        meta::RANGE,
        meta::SAMPLES,
        meta::CREATED,
        meta::LEARNED,
        meta::UPDATED,
    ];
    let mut next = 0;
    let mut i = 0;
    while i < f.len() {
        assert!(f[i].0 == next);
        next += f[i].1;
        i += 1;
    }
    assert!(next == 64);
};

const _: () = assert!(std::mem::size_of::<Station>() == 24);

/// A [`Station`] as the file stores it: 23 bytes, where the in-memory value takes 24. With
/// the derived tables on top (areas, fences, the masts' index, short CIDs found by a scan of
/// the LAC rather than an index of their own), a database stays within 24 bytes a cell
/// (format 7; format 6 took 24 for the record and 27 in all). The bits, little-endian from
/// byte 0:
///
/// ```text
/// key:60 | lat:28 | lon:29 | meta:64    (181 of 184 bits; the last 3 are zero)
/// ```
///
/// The key needs 60 bits for an NR cell (a 24-bit TAC over a 36-bit cid), 48 for WiFi.
/// Positions are kept to a microdegree (0.11 m), the precision of the OpenCelliD and MLS
/// exports, offset to be unsigned (`lat + 90`, `lon + 180` degrees). The record has no
/// alignment: its fields are read as unaligned words, which x86 and ARM load at full speed.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StationRecord([u8; 23]);

const _: () = assert!(std::mem::size_of::<StationRecord>() == 23);
const _: () = assert!(std::mem::align_of::<StationRecord>() == 1);

/// Bits of the key in [`StationRecord`]: a 24-bit TAC over a 36-bit cid.
pub const KEY_BITS: u32 = 60;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;
const LAT_BITS: u32 = 28;
const LON_BITS: u32 = 29;
const LAT_OFFSET_E6: i64 = 90_000_000;
const LON_OFFSET_E6: i64 = 180_000_000;
/// Meta bits in the second word, after the latitude's high bits and the longitude.
const META_LOW_BITS: u32 = 64 - (LAT_BITS - (64 - KEY_BITS)) - LON_BITS;

impl StationRecord {
    fn word(&self, at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.0[at..at + 8]);
        u64::from_le_bytes(w)
    }

    /// The station's key: what lookups search by, without unpacking the rest.
    #[inline]
    pub fn key(&self) -> u64 {
        self.word(0) & KEY_MASK
    }

    /// Packs `s`; its position is rounded to a microdegree. Keys wider than 60 bits do not
    /// occur (every importer checks each radio's LAC and cid ranges) and are masked.
    pub fn pack(s: &Station) -> StationRecord {
        debug_assert!(s.key <= KEY_MASK, "a station key passes 60 bits");
        let e6 = |e7: i32, offset: i64, bits: u32| {
            ((e7 as i64 + 5).div_euclid(10) + offset).clamp(0, (1 << bits) - 1) as u64
        };
        let lat = e6(s.lat_e7, LAT_OFFSET_E6, LAT_BITS);
        let lon = e6(s.lon_e7, LON_OFFSET_E6, LON_BITS);
        let lat_low = 64 - KEY_BITS;
        let w0 = (s.key & KEY_MASK) | (lat << KEY_BITS);
        let w1 =
            (lat >> lat_low) | (lon << (LAT_BITS - lat_low)) | (s.meta << (64 - META_LOW_BITS));
        let w2 = s.meta >> META_LOW_BITS;
        let mut b = [0u8; 23];
        b[0..8].copy_from_slice(&w0.to_le_bytes());
        b[8..16].copy_from_slice(&w1.to_le_bytes());
        b[16..23].copy_from_slice(&w2.to_le_bytes()[..7]);
        StationRecord(b)
    }

    /// The station, unpacked.
    #[inline]
    pub fn station(&self) -> Station {
        let (w0, w1) = (self.word(0), self.word(8));
        // The last 7 bytes, read as the word ending at the record's end.
        let w2 = self.word(15) >> 8;
        let lat_low = 64 - KEY_BITS;
        let lat = (w0 >> KEY_BITS) | ((w1 & ((1 << (LAT_BITS - lat_low)) - 1)) << lat_low);
        let lon = (w1 >> (LAT_BITS - lat_low)) & ((1 << LON_BITS) - 1);
        Station {
            key: w0 & KEY_MASK,
            lat_e7: ((lat as i64 - LAT_OFFSET_E6) * 10) as i32,
            lon_e7: ((lon as i64 - LON_OFFSET_E6) * 10) as i32,
            meta: (w1 >> (64 - META_LOW_BITS)) | (w2 << META_LOW_BITS),
        }
    }
}

impl From<&StationRecord> for Station {
    fn from(r: &StationRecord) -> Station {
        r.station()
    }
}

impl From<&Station> for Station {
    fn from(s: &Station) -> Station {
        *s
    }
}

impl std::fmt::Debug for StationRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.station().fmt(f)
    }
}

fn days_since_2000(unix: i64) -> i64 {
    (unix - EPOCH_2000_UNIX).div_euclid(DAY_S)
}

/// Unix seconds of the UTC midnight that starts the day of `unix`: the resolution of a
/// station's `updated`, and so of a sync window.
pub fn day_start(unix: i64) -> i64 {
    unix.div_euclid(DAY_S) * DAY_S
}

impl Station {
    pub fn new(key: u64, info: &StationInfo) -> Station {
        let psc = info.psc.map_or(PSC_UNKNOWN, |p| p.min(PSC_UNKNOWN - 1)) as u64;
        let range = (info.range_m.min(MAX_RANGE_M).div_ceil(4)) as u64;
        let samples = info.samples.min(MAX_SAMPLES) as u64;
        let max_month = meta::max(meta::CREATED) as i64;
        let created_month =
            (days_since_2000(info.created).clamp(0, max_month * 30) / 30).min(max_month) as u64;
        let updated_day =
            days_since_2000(info.updated).clamp(0, meta::max(meta::UPDATED) as i64) as u64;
        let learned = (info.estimated == Estimated::Learned) as u64;
        Station {
            key,
            // To the microdegree a record keeps ([`StationRecord`]): a station answers the
            // same from the learner's overlay as from the file its compaction writes.
            // Rounded, then scaled as floats: the cast saturates where an integer product
            // could overflow (importers check ranges; this must not panic if one did not).
            lat_e7: ((info.lat * 1e6).round() * 10.0) as i32,
            lon_e7: ((info.lon * 1e6).round() * 10.0) as i32,
            meta: meta::pack(meta::PSC, psc)
                | meta::pack(meta::RANGE, range)
                | meta::pack(meta::SAMPLES, samples)
                | meta::pack(meta::CREATED, created_month)
                | meta::pack(meta::LEARNED, learned)
                | meta::pack(meta::UPDATED, updated_day),
        }
    }

    pub fn lat(&self) -> f64 {
        self.lat_e7 as f64 * 1e-7
    }

    pub fn lon(&self) -> f64 {
        self.lon_e7 as f64 * 1e-7
    }

    pub fn psc(&self) -> Option<u16> {
        let p = meta::get(self.meta, meta::PSC) as u16;
        (p != PSC_UNKNOWN).then_some(p)
    }

    pub fn range_m(&self) -> u32 {
        meta::get(self.meta, meta::RANGE) as u32 * 4
    }

    pub fn samples(&self) -> u32 {
        meta::get(self.meta, meta::SAMPLES) as u32
    }

    /// Unix seconds of the first day of the month the station was first seen.
    pub fn created(&self) -> i64 {
        EPOCH_2000_UNIX + meta::get(self.meta, meta::CREATED) as i64 * 30 * DAY_S
    }

    /// Unix seconds of the day the station was last updated.
    pub fn updated(&self) -> i64 {
        EPOCH_2000_UNIX + meta::get(self.meta, meta::UPDATED) as i64 * DAY_S
    }

    /// How the station's position was estimated.
    pub fn estimated(&self) -> Estimated {
        if meta::get(self.meta, meta::LEARNED) == 1 {
            Estimated::Learned
        } else {
            Estimated::Averaged
        }
    }

    pub fn info(&self) -> StationInfo {
        StationInfo {
            lat: self.lat(),
            lon: self.lon(),
            range_m: self.range_m(),
            samples: self.samples(),
            psc: self.psc(),
            created: self.created(),
            updated: self.updated(),
            estimated: self.estimated(),
        }
    }
}

/// One (radio, mcc, mnc) network: its cells are `cells[first .. first + count]`,
/// sorted by key, so a lookup is two binary searches.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Network {
    pub radio: u8,
    pub _pad0: u8,
    pub mcc: u16,
    pub mnc: u16,
    pub _pad1: u16,
    pub first: u32,
    pub count: u32,
}

const _: () = assert!(std::mem::size_of::<Network>() == 16);

impl Network {
    pub fn radio(&self) -> Option<Radio> {
        Radio::from_code(self.radio)
    }

    pub fn sort_key(&self) -> (u8, u16, u16) {
        (self.radio, self.mcc, self.mnc)
    }
}

/// A LAC/TAC area derived from its cells: a sample-weighted centre, the radius within
/// which 90% of its cells' positions lie (at least their median range) and how many cells it
/// was derived from.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Area {
    pub network: u32,
    pub lac: u32,
    pub lat_e7: i32,
    pub lon_e7: i32,
    pub range_m: u32,
    pub cells: u32,
}

const _: () = assert!(std::mem::size_of::<Area>() == 24);

impl Area {
    pub fn lat(&self) -> f64 {
        self.lat_e7 as f64 * 1e-7
    }

    pub fn lon(&self) -> f64 {
        self.lon_e7 as f64 * 1e-7
    }
}

/// A site whose mast pooling moved ([`crate::sites::pool`]): `cell` is the position in the
/// shard's cells of the site's first sector, the shift is from the mast its own sectors
/// give ([`crate::sites::SiteMast::of`]) to the pooled one, in 1e-5 degrees (1.1 m of latitude).
/// Degrees rather than metres: applying them costs an add, where metres cost a cosine, a
/// tenth of a single cell's instructions. Sites pooling left alone have no entry. 8 bytes a
/// pooled site, where absolute positions would take 12.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mast {
    pub cell: u32,
    pub dlat_e5: i16,
    pub dlon_e5: i16,
}

impl Mast {
    /// The pooled mast of a site whose sectors give `(lat, lon)`.
    pub fn apply(&self, (lat, lon): (f64, f64)) -> (f64, f64) {
        let lon = lon + self.dlon_e5 as f64 * 1e-5;
        let lon = match lon {
            l if l > 180.0 => l - 360.0,
            l if l < -180.0 => l + 360.0,
            l => l,
        };
        (lat + self.dlat_e5 as f64 * 1e-5, lon)
    }
}

const _: () = assert!(std::mem::size_of::<Mast>() == 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn station_meta_round_trips() {
        let info = StationInfo {
            lat: 51.8979123,
            lon: -8.4705987,
            range_m: 1234,
            samples: 17,
            psc: Some(503),
            created: 1_546_300_800, // 2019-01-01
            updated: 1_700_000_000,
            estimated: Estimated::Learned,
        };
        let s = Station::new(cell_key(Radio::Lte, 65533, 268_435_455), &info);
        let back = s.info();
        // To the microdegree.
        assert!((back.lat - 51.897912).abs() < 1e-9 && (back.lon + 8.470599).abs() < 1e-9);
        assert_eq!(back.range_m, 1236); // rounded up to 4 m
        assert_eq!(back.samples, 17);
        assert_eq!(back.psc, Some(503));
        assert_eq!(back.estimated, Estimated::Learned);
        assert!(info.created - back.created < 31 * 86_400 && back.created <= info.created);
        assert!(info.updated - back.updated < 86_400 && back.updated <= info.updated);
        assert_eq!(key_lac(s.key), 65533);
        assert_eq!(key_cid(Radio::Lte, s.key), 268_435_455);
    }

    /// The 36-bit ids a test draws: random ones of 36, 28 and 16 bits, and each radio's edges.
    fn ids() -> Vec<u64> {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut ids: Vec<u64> = (0..10_000)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                [x & CID_MASK, x & LOW_28, x & 0xffff]
            })
            .collect();
        for r in Radio::ALL {
            ids.extend([0, 1, 9, 10, 0xff, 0x100, 0xffff, 0x1_0000, r.max_cid()]);
            ids.extend([r.max_cid() - 1, (r.max_cid() + 1) & CID_MASK, CID_MASK]);
        }
        ids.extend([
            (1 << 28) - 1,
            1 << 28,
            (4095 << 16) | 65535,
            (4095 << 16) | 65529,
        ]);
        ids
    }

    #[test]
    fn a_rank_is_a_bijection_of_36_bit_ids() {
        for r in Radio::ALL {
            let mut ranks = std::collections::HashSet::new();
            for cid in ids() {
                let key = cell_key(r, 513, cid);
                assert_eq!(key_lac(key), 513);
                assert_eq!(key_cid(r, key), cid, "{r} {cid:#x}");
                assert!(key & CID_MASK == cid_rank(r, cid) && cid_rank(r, cid) <= CID_MASK);
                ranks.insert((cid_rank(r, cid), cid));
            }
            let distinct: std::collections::HashSet<_> = ranks.iter().map(|p| p.0).collect();
            let ids: std::collections::HashSet<_> = ranks.iter().map(|p| p.1).collect();
            assert_eq!(distinct.len(), ids.len(), "{r}: two ids share a rank");
        }
    }

    #[test]
    fn a_site_is_one_run_of_ranks_and_a_short_id_lies_in_its_span() {
        for r in Radio::ALL {
            for cid in ids().into_iter().filter(|&c| c <= r.max_cid()) {
                let rank = cid_rank(r, cid);
                if let Some((lo, hi)) = crate::sites::site_cids(r, cid) {
                    let (a, b) = (cid_rank(r, lo), cid_rank(r, hi));
                    assert!(a <= rank && rank <= b, "{r} {cid:#x}");
                    // Exactly the site's ids rank between its ends.
                    assert!(b - a <= hi - lo, "{r} {cid:#x}: {a}..{b} holds other ids");
                }
                if r.has_short_cid() {
                    let (lo, hi) = short_cid_ranks(r, cid as u16).unwrap();
                    assert!(lo <= rank && rank <= hi, "{r} {cid:#x}");
                } else {
                    assert_eq!(short_cid_ranks(r, cid as u16), None);
                }
            }
        }
        // A short id's span is a small share of the ranks.
        let (lo, hi) = short_cid_ranks(Radio::Lte, 0x1234).unwrap();
        assert_eq!(hi - lo + 1, 1 << 28);
        let (lo, hi) = short_cid_ranks(Radio::Umts, 1234).unwrap();
        assert_eq!(hi - lo + 1, 4096 * 10);
    }

    #[test]
    fn records_keep_every_field_to_the_microdegree() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut stations = vec![
            Station {
                key: (1 << KEY_BITS) - 1,
                lat_e7: 900_000_000,
                lon_e7: 1_800_000_000,
                meta: u64::MAX,
            },
            Station {
                key: 0,
                lat_e7: -900_000_000,
                lon_e7: -1_800_000_000,
                meta: 0,
            },
            Station {
                key: cell_key(Radio::Nr, 16_777_215, 68_719_476_735),
                lat_e7: -5,
                lon_e7: 4,
                meta: 1 << 63,
            },
        ];
        for _ in 0..10_000 {
            stations.push(Station {
                key: next() >> 4,
                lat_e7: (next() % 1_800_000_001) as i32 - 900_000_000,
                lon_e7: ((next() % 3_600_000_001) as i64 - 1_800_000_000) as i32,
                meta: next(),
            });
        }
        for s in stations {
            let r = StationRecord::pack(&s);
            let back = r.station();
            assert_eq!(r.key(), s.key);
            assert_eq!((back.key, back.meta), (s.key, s.meta), "{s:?}");
            assert!((back.lat_e7 - s.lat_e7).abs() <= 5, "{s:?} -> {back:?}");
            assert!((back.lon_e7 - s.lon_e7).abs() <= 5, "{s:?} -> {back:?}");
            assert_eq!(back.lat_e7 % 10, 0);
            // Packing what unpacking gave changes nothing.
            assert_eq!(StationRecord::pack(&back), r);
        }
    }

    #[test]
    fn fields_saturate_instead_of_wrapping() {
        let info = StationInfo {
            lat: -33.0,
            lon: 151.0,
            range_m: 1_000_000,
            samples: 1_000_000,
            psc: None,
            created: 0,
            updated: 10_000_000_000,
            estimated: Estimated::Averaged,
        };
        let s = Station::new(cell_key(Radio::Nr, 16_777_215, 68_719_476_735), &info);
        assert_eq!(s.range_m(), MAX_RANGE_M);
        let wild = Station::new(
            1,
            &StationInfo {
                lat: 1e9,
                lon: -1e9,
                ..info
            },
        );
        assert_eq!((wild.lat_e7, wild.lon_e7), (i32::MAX, i32::MIN));
        assert_eq!(s.samples(), MAX_SAMPLES);
        assert_eq!(s.psc(), None);
        assert_eq!(s.created(), EPOCH_2000_UNIX);
        assert_eq!(s.estimated(), Estimated::Averaged);
        // The latest month saturates without reaching the flag beside it.
        let late = Station::new(
            1,
            &StationInfo {
                created: 10_000_000_000,
                ..info
            },
        );
        assert_eq!(late.estimated(), Estimated::Averaged);
        assert_eq!(
            late.created(),
            EPOCH_2000_UNIX + 2047 * 30 * 86_400,
            "11 bits of months"
        );
        assert_eq!(late.updated(), s.updated());
        assert_eq!(key_lac(s.key), 16_777_215);
        assert_eq!(key_cid(Radio::Nr, s.key), 68_719_476_735);
    }
}
