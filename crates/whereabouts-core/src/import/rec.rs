//! The fixed-size record that flows through parsing, sorting, spilling and merging.
//!
//! It keeps what the station file rounds away (samples beyond 8,191, exact ranges)
//! so that duplicates merge as if all their observations had arrived in one row.
//! Times are whole days: the station file keeps the month of `created` and the day
//! of `updated`, so finer times would change nothing that is stored.

use crate::radio::Radio;
use crate::store::record::{Estimated, Station, StationInfo, MAX_RANGE_M};

/// `net` of WiFi records: above every packed cell network, so WiFi sorts after cells.
pub const WIFI_NET: u32 = u32::MAX;

const DAY_S: i64 = 86_400;

/// One parsed station; 32 bytes so that a 4M-row run costs 128 MB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rec {
    /// Cell: `store::record::cell_key`, `lac << 36 | rank`; WiFi: the 48-bit BSSID.
    pub key: u64,
    /// Cell: `radio << 25 | mcc << 15 | mnc` (orders like the tuple, as mcc < 1024
    /// and mnc < 32768 after validation); WiFi: [`WIFI_NET`].
    pub net: u32,
    pub lat_e7: i32,
    pub lon_e7: i32,
    pub samples: u32,
    /// Metres, saturated at `u16::MAX`: the station file keeps at most 65,532 m.
    pub range_m: u16,
    /// Days since 1970-01-01 (unix seconds / 86,400, clamped to `u16`).
    pub created_day: u16,
    pub updated_day: u16,
    /// PSC/PCI (10 bits), or [`PSC_NONE`]; [`REC_LEARNED`] set for a station whose position
    /// is [`Estimated::Learned`] (read with [`Rec::psc`] and [`Rec::estimated`]).
    pub psc_learned: u16,
}

/// `Rec::psc` when the scrambling code / physical cell id is unknown.
pub const PSC_NONE: u16 = 0x7fff;
/// The bit of `Rec::psc_learned` that marks a learned position: a record has no room for a
/// field of its own, and a PSC/PCI needs 10 bits.
pub const REC_LEARNED: u16 = 0x8000;

pub const REC_BYTES: usize = 32;

pub fn pack_net(radio: Radio, mcc: u16, mnc: u16) -> u32 {
    (radio as u32) << 25 | (mcc as u32) << 15 | mnc as u32
}

pub fn unpack_net(net: u32) -> (u8, u16, u16) {
    (
        (net >> 25) as u8,
        ((net >> 15) & 0x3ff) as u16,
        (net & 0x7fff) as u16,
    )
}

/// The total order of the output: cells by (radio, mcc, mnc, key), then WiFi by
/// BSSID. Wide enough for stations of an existing database whose mcc or mnc would
/// not fit the packed `net`.
pub fn full_key(radio: u8, mcc: u16, mnc: u16, key: u64) -> u128 {
    (radio as u128) << 96 | (mcc as u128) << 80 | (mnc as u128) << 64 | key as u128
}

pub fn wifi_full_key(bssid: u64) -> u128 {
    1u128 << 120 | bssid as u128
}

pub fn unix_to_day(unix: i64) -> u16 {
    unix.div_euclid(DAY_S).clamp(0, u16::MAX as i64) as u16
}

impl Rec {
    /// The sort key within one run: cheaper than [`Rec::full_key`] and the same order.
    #[inline]
    pub fn sort_key(&self) -> (u32, u64) {
        (self.net, self.key)
    }

    /// The PSC/PCI, or [`PSC_NONE`].
    pub fn psc(&self) -> u16 {
        self.psc_learned & !REC_LEARNED
    }

    pub fn estimated(&self) -> Estimated {
        if self.psc_learned & REC_LEARNED != 0 {
            Estimated::Learned
        } else {
            Estimated::Averaged
        }
    }

    pub fn full_key(&self) -> u128 {
        if self.net == WIFI_NET {
            wifi_full_key(self.key)
        } else {
            let (r, mcc, mnc) = unpack_net(self.net);
            full_key(r, mcc, mnc, self.key)
        }
    }

    pub fn encode(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.key.to_le_bytes());
        out[8..12].copy_from_slice(&self.net.to_le_bytes());
        out[12..16].copy_from_slice(&self.lat_e7.to_le_bytes());
        out[16..20].copy_from_slice(&self.lon_e7.to_le_bytes());
        out[20..24].copy_from_slice(&self.samples.to_le_bytes());
        out[24..26].copy_from_slice(&self.range_m.to_le_bytes());
        out[26..28].copy_from_slice(&self.created_day.to_le_bytes());
        out[28..30].copy_from_slice(&self.updated_day.to_le_bytes());
        out[30..32].copy_from_slice(&self.psc_learned.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Rec {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Rec {
            key: u64::from_le_bytes(b[0..8].try_into().expect("8 bytes")),
            net: u32_at(8),
            lat_e7: u32_at(12) as i32,
            lon_e7: u32_at(16) as i32,
            samples: u32_at(20),
            range_m: u16_at(24),
            created_day: u16_at(26),
            updated_day: u16_at(28),
            psc_learned: u16_at(30),
        }
    }

    /// A station already in the database, back in record form for merging.
    pub fn from_station(net: u32, s: &Station) -> Rec {
        Rec {
            key: s.key,
            net,
            lat_e7: s.lat_e7,
            lon_e7: s.lon_e7,
            samples: s.samples(),
            range_m: s.range_m().min(u16::MAX as u32) as u16,
            created_day: unix_to_day(s.created()),
            updated_day: unix_to_day(s.updated()),
            psc_learned: s.psc().unwrap_or(PSC_NONE)
                | match s.estimated() {
                    Estimated::Averaged => 0,
                    Estimated::Learned => REC_LEARNED,
                },
        }
    }
}

/// Running sums of one key's duplicates. Integer sums make the result independent
/// of the order in which duplicates meet, hence of how rows were split into runs.
#[derive(Default)]
pub struct Acc {
    weight: u64,
    lat: i128,
    lon: i128,
    range: u128,
    samples: u64,
    created_day: u16,
    updated_day: u16,
    /// (updated_day, weight, psc) of the best record that knows its PSC.
    psc: Option<(u16, u64, u16)>,
    /// The part of `weight` from records of learned positions.
    learned_weight: u64,
    pub count: u64,
}

impl Acc {
    pub fn add(&mut self, r: &Rec) {
        let w = r.samples.max(1) as u64;
        if self.count == 0 {
            self.created_day = r.created_day;
            self.updated_day = r.updated_day;
        } else {
            self.created_day = self.created_day.min(r.created_day);
            self.updated_day = self.updated_day.max(r.updated_day);
        }
        self.count += 1;
        self.weight += w;
        self.lat += w as i128 * r.lat_e7 as i128;
        self.lon += w as i128 * r.lon_e7 as i128;
        self.range += w as u128 * r.range_m as u128;
        self.samples += r.samples as u64;
        if r.estimated() == Estimated::Learned {
            self.learned_weight += w;
        }
        if r.psc() != PSC_NONE {
            let cand = (r.updated_day, w, r.psc());
            if self.psc.is_none_or(|p| cand > p) {
                self.psc = Some(cand);
            }
        }
    }

    /// The merged station; rounding halves away from zero like `Station::new`.
    pub fn station(&self, key: u64) -> Station {
        let w = self.weight.max(1) as i128;
        let div_round = |s: i128| {
            let q = (2 * s.abs() + w) / (2 * w);
            if s < 0 {
                -q
            } else {
                q
            }
        };
        let lat_e7 = div_round(self.lat) as i32;
        let lon_e7 = div_round(self.lon) as i32;
        let range = ((2 * self.range + w as u128) / (2 * w as u128)) as u32;
        let info = StationInfo {
            lat: lat_e7 as f64 * 1e-7,
            lon: lon_e7 as f64 * 1e-7,
            range_m: range.min(MAX_RANGE_M),
            samples: self.samples.min(u32::MAX as u64) as u32,
            psc: self.psc.map(|p| p.2),
            created: self.created_day as i64 * DAY_S,
            updated: self.updated_day as i64 * DAY_S,
            // The mean is mostly what the heavier side says it is.
            estimated: if 2 * self.learned_weight > self.weight {
                Estimated::Learned
            } else {
                Estimated::Averaged
            },
        };
        let mut s = Station::new(key, &info);
        // Exact, whatever the float round trip would do.
        s.lat_e7 = lat_e7;
        s.lon_e7 = lon_e7;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_round_trips() {
        let r = Rec {
            key: 0x0fed_cba9_8765_4321,
            net: pack_net(Radio::Nr, 999, 32767),
            lat_e7: -899_999_999,
            lon_e7: 1_799_999_999,
            samples: u32::MAX,
            range_m: 65_535,
            created_day: 1,
            updated_day: 65_535,
            psc_learned: 1007,
        };
        let mut b = [0u8; REC_BYTES];
        r.encode(&mut b);
        assert_eq!(Rec::decode(&b), r);
        assert_eq!(unpack_net(r.net), (Radio::Nr as u8, 999, 32767));
    }

    #[test]
    fn packed_order_matches_full_order() {
        let a = Rec {
            net: pack_net(Radio::Gsm, 999, 32767),
            key: u64::MAX >> 4,
            ..Rec::default()
        };
        let b = Rec {
            net: pack_net(Radio::Cdma, 0, 0),
            key: 0,
            ..Rec::default()
        };
        let w = Rec {
            net: WIFI_NET,
            key: 0,
            ..Rec::default()
        };
        assert!(a.sort_key() < b.sort_key() && a.full_key() < b.full_key());
        assert!(b.sort_key() < w.sort_key() && b.full_key() < w.full_key());
    }

    #[test]
    fn weighted_mean_rounds_half_away_from_zero() {
        let mut acc = Acc::default();
        let base = Rec {
            samples: 1,
            range_m: 10,
            psc_learned: PSC_NONE,
            ..Rec::default()
        };
        acc.add(&Rec {
            lat_e7: -1,
            lon_e7: 1,
            ..base
        });
        acc.add(&Rec {
            lat_e7: -2,
            lon_e7: 2,
            range_m: 11,
            ..base
        });
        let s = acc.station(7);
        assert_eq!((s.lat_e7, s.lon_e7), (-2, 2));
        assert_eq!(s.range_m(), 12); // mean 10.5 -> 11, stored rounded up to 4 m
        assert_eq!(s.estimated(), Estimated::Averaged);
    }

    #[test]
    fn a_merge_is_learned_when_learned_records_weigh_more() {
        let at = |samples, learned: bool| Rec {
            samples,
            psc_learned: 12 | if learned { REC_LEARNED } else { 0 },
            ..Rec::default()
        };
        let merged = |a: Rec, b: Rec| {
            let mut acc = Acc::default();
            acc.add(&a);
            acc.add(&b);
            acc.station(1)
        };
        let s = merged(at(30, true), at(10, false));
        assert_eq!((s.estimated(), s.psc()), (Estimated::Learned, Some(12)));
        assert_eq!(
            merged(at(10, true), at(30, false)).estimated(),
            Estimated::Averaged
        );
        // The flag survives the record's byte form.
        let mut b = [0u8; REC_BYTES];
        at(5, true).encode(&mut b);
        assert_eq!(Rec::decode(&b).estimated(), Estimated::Learned);
        assert_eq!(Rec::decode(&b).psc(), 12);
    }
}
