//! Stations changed in a time window, streamed in stored order from a cursor, then the site
//! masts our learner fitted (`learn::masts`) changed in it, then the positions by level of
//! the learned cells changed in it (`learn::estimate`): what a server hands to another one
//! that syncs from it (see [`crate::sync`]).
//!
//! There is no index on `updated`: a query walks the mapped vectors in order and skips
//! what is outside the window, so it costs a scan but no memory. The cursor is a station
//! key, not a position, so paging stays correct when the database is replaced by a new
//! generation between two pages.

use std::collections::BTreeMap;
use std::fmt;

use super::database::Database;
use super::layout::FORMAT_VERSION;
use super::netstats::{CellId, CellPoints, LearnedMast};
use super::record::{key_cid, key_lac, Station};
use crate::radio::Radio;
use crate::sites::SiteKey;

/// A place in the sync order: cells by (radio, mcc, mnc, key), then WiFi by BSSID (the
/// stored order), then learned masts by site, then learned cells' levels by cell. The derived
/// order is that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StationKey {
    Cell {
        radio: u8,
        mcc: u16,
        mnc: u16,
        /// [`super::record::cell_key`], whose order is the store format's.
        key: u64,
    },
    Wifi(u64),
    Mast(SiteKey),
    Levels(CellId),
}

impl fmt::Display for StationKey {
    /// The cursor text: `c<format>.<radio>.<mcc>.<mnc>.<key hex>`, `w.<bssid hex>`,
    /// `m.<radio>.<mcc>.<mnc>.<site hex>` or `l<format>.<radio>.<mcc>.<mnc>.<key hex>`. A
    /// cell key's order is the store format's (format 8 ranks the ids), so the cursor names
    /// the format: one from another (a server upgraded between two pages) is no cursor,
    /// where read in this format's order it would resume at another place in its LAC.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StationKey::Cell {
                radio,
                mcc,
                mnc,
                key,
            } => write!(f, "c{FORMAT_VERSION}.{radio}.{mcc}.{mnc}.{key:x}"),
            StationKey::Wifi(b) => write!(f, "w.{b:x}"),
            StationKey::Mast(s) => {
                write!(f, "m.{}.{}.{}.{:x}", s.radio as u8, s.mcc, s.mnc, s.site)
            }
            StationKey::Levels((radio, mcc, mnc, key)) => {
                write!(f, "l{FORMAT_VERSION}.{}.{mcc}.{mnc}.{key:x}", *radio as u8)
            }
        }
    }
}

impl StationKey {
    /// Reads the text written by `Display`; `None` for anything else.
    pub fn parse(text: &str) -> Option<StationKey> {
        let parts: Vec<&str> = text.split('.').collect();
        match parts.as_slice() {
            [c, radio, mcc, mnc, key] if *c == format!("c{FORMAT_VERSION}") => {
                Some(StationKey::Cell {
                    radio: radio.parse().ok()?,
                    mcc: mcc.parse().ok()?,
                    mnc: mnc.parse().ok()?,
                    key: u64::from_str_radix(key, 16).ok()?,
                })
            }
            ["w", bssid] => Some(StationKey::Wifi(u64::from_str_radix(bssid, 16).ok()?)),
            ["m", radio, mcc, mnc, site] => Some(StationKey::Mast(SiteKey {
                radio: Radio::from_code(radio.parse().ok()?)?,
                mcc: mcc.parse().ok()?,
                mnc: mnc.parse().ok()?,
                site: u64::from_str_radix(site, 16).ok()?,
            })),
            [l, radio, mcc, mnc, key] if *l == format!("l{FORMAT_VERSION}") => {
                Some(StationKey::Levels((
                    Radio::from_code(radio.parse().ok()?)?,
                    mcc.parse().ok()?,
                    mnc.parse().ok()?,
                    u64::from_str_radix(key, 16).ok()?,
                )))
            }
            _ => None,
        }
    }
}

/// Which stations count as changed: `since <= updated < until` (unix seconds).
/// `updated` is kept to the day, so windows that end at midnight UTC tile without
/// handing any station version out twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub since: i64,
    pub until: i64,
}

impl Window {
    pub fn contains(&self, s: &Scanned) -> bool {
        let u = s.updated();
        u >= self.since && u < self.until
    }
}

/// What the scan meets: a station, with its network for cells, a learned mast, or a learned
/// cell's positions by level and by advance with the day its cell last changed (they change
/// with it).
#[derive(Clone, Debug, PartialEq)]
pub enum Scanned {
    Cell {
        radio: Radio,
        mcc: u16,
        mnc: u16,
        station: Station,
    },
    Wifi(Station),
    Mast(SiteKey, LearnedMast),
    /// Its levels and advances: a page for a receiver that does not read advances skips a
    /// cell that has none of the levels (`sync::PageRequest::advances`).
    Levels {
        cell: CellId,
        updated: i64,
        points: CellPoints,
    },
}

impl Scanned {
    /// Unix seconds of the day it last changed.
    pub fn updated(&self) -> i64 {
        match self {
            Scanned::Cell { station, .. } | Scanned::Wifi(station) => station.updated(),
            Scanned::Mast(_, m) => m.updated,
            Scanned::Levels { updated, .. } => *updated,
        }
    }
}

impl Database {
    /// Every station after `after` (all when `None`), in stored order, then every learned
    /// mast, changed or not: callers filter with a [`Window`] and may stop early (a page, a
    /// scan budget).
    pub fn scan_from(
        &self,
        after: Option<StationKey>,
    ) -> impl Iterator<Item = (StationKey, Scanned)> + '_ {
        // Where each part resumes: None from its start, Some(None) not at all.
        let (cells_after, skip_cells, wifi_after, skip_wifi, masts_after, levels_after) =
            match after {
                None => (None, false, None, false, None, None),
                Some(StationKey::Cell {
                    radio,
                    mcc,
                    mnc,
                    key,
                }) => (
                    Some(((radio, mcc, mnc), key)),
                    false,
                    None,
                    false,
                    None,
                    None,
                ),
                Some(StationKey::Wifi(b)) => (None, true, Some(b), false, None, None),
                Some(StationKey::Mast(site)) => (None, true, None, true, Some(Some(site)), None),
                Some(StationKey::Levels(cell)) => (None, true, None, true, Some(None), Some(cell)),
            };
        let cells = self
            .shards()
            .iter()
            .filter(move |_| !skip_cells)
            .flat_map(move |s| {
                let nets = s.networks();
                let start =
                    cells_after.map_or(0, |(net, _)| nets.partition_point(|n| n.sort_key() < net));
                nets[start..].iter().flat_map(move |n| {
                    let radio = Radio::from_code(n.radio);
                    let cells = if radio.is_some() {
                        s.network_cells(n)
                    } else {
                        &[]
                    };
                    let from = match cells_after {
                        Some((net, key)) if net == n.sort_key() => {
                            cells.partition_point(|c| c.key() <= key)
                        }
                        _ => 0,
                    };
                    let radio = radio.unwrap_or(Radio::Gsm);
                    cells[from..].iter().map(move |c| {
                        (
                            StationKey::Cell {
                                radio: n.radio,
                                mcc: n.mcc,
                                mnc: n.mnc,
                                key: c.key(),
                            },
                            Scanned::Cell {
                                radio,
                                mcc: n.mcc,
                                mnc: n.mnc,
                                station: c.station(),
                            },
                        )
                    })
                })
            });
        let wifi = self
            .shards()
            .iter()
            .filter(move |_| !skip_wifi)
            .flat_map(move |s| {
                let w = s.wifi();
                let from = wifi_after.map_or(0, |b| w.partition_point(|x| x.key() <= b));
                w[from..]
                    .iter()
                    .map(|x| (StationKey::Wifi(x.key()), Scanned::Wifi(x.station())))
            });
        // A few per learned site: collected and ordered for each scan.
        let mut masts: Vec<(SiteKey, LearnedMast)> = self
            .network_stats()
            .map(|f| f.learned_masts().collect())
            .unwrap_or_default();
        masts.sort_by_key(|(site, _)| *site);
        let from = match masts_after {
            None => 0,
            Some(Some(after)) => masts.partition_point(|(s, _)| *s <= after),
            Some(None) => masts.len(),
        };
        let masts = masts
            .into_iter()
            .skip(from)
            .map(|(site, m)| (StationKey::Mast(site), Scanned::Mast(site, m)));
        // One a learned cell heard on repeated passes: collected and ordered when the scan
        // gets there, each with its cell's day (a cell no longer stored has none to send).
        let levels = std::iter::once(()).flat_map(move |()| {
            // By cell (a map's order), from the cursor on.
            let levels: BTreeMap<CellId, CellPoints> = self
                .network_stats()
                .map(|f| f.learned_points(|cell| levels_after.is_none_or(|after| *cell > after)))
                .unwrap_or_default();
            levels.into_iter().filter_map(move |(cell, points)| {
                let (radio, mcc, mnc, key) = cell;
                let station = self.cell(radio, mcc, mnc, key_lac(key), key_cid(radio, key))?;
                Some((
                    StationKey::Levels(cell),
                    Scanned::Levels {
                        cell,
                        updated: station.updated(),
                        points,
                    },
                ))
            })
        });
        cells.chain(wifi).chain(masts).chain(levels)
    }

    /// The stations of `window` after `after`, in stored order.
    pub fn changed(
        &self,
        window: Window,
        after: Option<StationKey>,
    ) -> impl Iterator<Item = (StationKey, Scanned)> + '_ {
        self.scan_from(after)
            .filter(move |(_, s)| window.contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::record::{cell_key, StationInfo};
    use crate::store::{BuildOptions, DbBuilder};

    const DAY: i64 = 86_400;
    /// 2023-11-14, a midnight.
    const D0: i64 = 19_675 * DAY;

    fn station(key: u64, updated: i64) -> Station {
        Station::new(
            key,
            &StationInfo {
                lat: 52.0,
                lon: 4.0,
                range_m: 100,
                samples: 3,
                psc: None,
                created: D0 - 100 * DAY,
                updated,
                estimated: crate::store::record::Estimated::Averaged,
            },
        )
    }

    /// Two networks of cells and three APs; small shards so that the scan crosses shards.
    fn db() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = DbBuilder::new(
            dir.path(),
            BuildOptions {
                max_shard_bytes: 1,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        b.push_cell(
            Radio::Gsm,
            262,
            1,
            station(cell_key(Radio::Gsm, 1, 1), D0 - DAY),
        )
        .unwrap();
        b.push_cell(Radio::Gsm, 262, 1, station(cell_key(Radio::Gsm, 1, 2), D0))
            .unwrap();
        b.push_cell(
            Radio::Gsm,
            262,
            1,
            station(cell_key(Radio::Gsm, 2, 1), D0 + DAY),
        )
        .unwrap();
        b.push_cell(Radio::Lte, 204, 8, station(cell_key(Radio::Lte, 7, 99), D0))
            .unwrap();
        b.push_wifi(station(0x10, D0)).unwrap();
        b.push_wifi(station(0x20, D0 - 5 * DAY)).unwrap();
        b.push_wifi(station(0x30, D0 + 2 * DAY)).unwrap();
        b.commit().unwrap();
        let db = Database::open(dir.path()).unwrap();
        (dir, db)
    }

    fn keys(it: impl Iterator<Item = (StationKey, Scanned)>) -> Vec<StationKey> {
        it.map(|(k, _)| k).collect()
    }

    #[test]
    fn scan_visits_every_station_in_key_order() {
        let (_dir, db) = db();
        let all = keys(db.scan_from(None));
        assert_eq!(all.len(), 7);
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
        assert_eq!(all[6], StationKey::Wifi(0x30));
    }

    #[test]
    fn window_keeps_since_and_drops_until() {
        let (_dir, db) = db();
        let got = keys(db.changed(
            Window {
                since: D0,
                until: D0 + DAY,
            },
            None,
        ));
        assert_eq!(
            got,
            vec![
                StationKey::Cell {
                    radio: Radio::Gsm as u8,
                    mcc: 262,
                    mnc: 1,
                    key: cell_key(Radio::Gsm, 1, 2)
                },
                StationKey::Cell {
                    radio: Radio::Lte as u8,
                    mcc: 204,
                    mnc: 8,
                    key: cell_key(Radio::Lte, 7, 99)
                },
                StationKey::Wifi(0x10),
            ]
        );
        let none = Window {
            since: D0 + 3 * DAY,
            until: D0 + 9 * DAY,
        };
        assert_eq!(db.changed(none, None).count(), 0);
    }

    #[test]
    fn resuming_after_each_key_gives_the_rest() {
        let (_dir, db) = db();
        let all = keys(db.scan_from(None));
        for (i, k) in all.iter().enumerate() {
            assert_eq!(
                keys(db.scan_from(Some(*k))),
                all[i + 1..].to_vec(),
                "after {k:?}"
            );
        }
        // A cursor between stored keys (a station deleted since) resumes at the next one.
        let between = StationKey::Cell {
            radio: Radio::Gsm as u8,
            mcc: 262,
            mnc: 1,
            key: cell_key(Radio::Gsm, 1, 3),
        };
        assert_eq!(keys(db.scan_from(Some(between))), all[2..].to_vec());
        assert_eq!(
            keys(db.scan_from(Some(StationKey::Wifi(0x15)))),
            all[5..].to_vec()
        );
    }

    #[test]
    fn learned_masts_follow_the_stations_by_their_own_day() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = DbBuilder::new(dir.path(), BuildOptions::default()).unwrap();
        let site = |enb: u64| SiteKey {
            radio: Radio::Lte,
            mcc: 204,
            mnc: 8,
            site: enb << 8,
        };
        let mast = |enb: u64, updated: i64| LearnedMast {
            site: enb << 8,
            lat: 52.0,
            lon: 4.0,
            sightings: 12,
            updated,
        };
        b.learned_masts().insert(site(2), mast(2, D0 + DAY));
        b.learned_masts().insert(site(1), mast(1, D0));
        for enb in [1, 2] {
            let s = station(cell_key(Radio::Lte, 7, enb << 8 | 1), D0 - 9 * DAY);
            let learned = StationInfo {
                estimated: crate::store::record::Estimated::Learned,
                ..s.info()
            };
            b.push_cell(Radio::Lte, 204, 8, Station::new(s.key, &learned))
                .unwrap();
        }
        b.push_wifi(station(0x10, D0)).unwrap();
        b.commit().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let all = keys(db.scan_from(None));
        assert_eq!(
            all[2..],
            [
                StationKey::Wifi(0x10),
                StationKey::Mast(site(1)),
                StationKey::Mast(site(2))
            ]
        );
        let day = Window {
            since: D0,
            until: D0 + DAY,
        };
        assert_eq!(
            keys(db.changed(day, None)),
            [StationKey::Wifi(0x10), StationKey::Mast(site(1))]
        );
        for (i, k) in all.iter().enumerate() {
            assert_eq!(keys(db.scan_from(Some(*k))), all[i + 1..].to_vec());
        }
    }

    #[test]
    fn cursor_text_round_trips() {
        for k in [
            StationKey::Cell {
                radio: 5,
                mcc: 999,
                mnc: 65535,
                key: u64::MAX,
            },
            StationKey::Wifi(0xfeed_beef_cafe),
            StationKey::Mast(SiteKey {
                radio: Radio::Nr,
                mcc: 999,
                mnc: 999,
                site: 0xfff_ffff_f000,
            }),
        ] {
            assert_eq!(StationKey::parse(&k.to_string()), Some(k));
        }
        let current = format!("c{FORMAT_VERSION}.3.262.1.12345");
        assert!(StationKey::parse(&current).is_some());
        // Up to format 7 cursors were `c.`: their keys order a LAC's cells otherwise.
        let older = format!("c{}.3.262.1.12345", FORMAT_VERSION - 1);
        for bad in [
            "",
            "c.1.2.3",
            "w.xyz",
            "x.1",
            "c.3.262.1.12345",
            &older,
            "w.1.2",
            "m.9.262.1.100",
            "m.3.262.1",
        ] {
            assert_eq!(StationKey::parse(bad), None, "{bad}");
        }
        for tail in [".1.2.3", ".300.1.1.1"] {
            let bad = format!("c{FORMAT_VERSION}{tail}");
            assert_eq!(StationKey::parse(&bad), None, "{bad}");
        }
    }
}
