//! Sites: which cells share a mast, where the mast is, and how the masts of one operator's
//! radios are pooled.
//!
//! A sector's crowd estimate lies out from its mast along its azimuth (where the devices
//! that heard it were), so the mean of a site's sector estimates finds the mast better than
//! any one of them ([`SiteMast::of`]). One mast usually carries several radios (GSM, UMTS,
//! LTE, NR), each with its own crowd: averaging the masts that each radio infers, where they
//! lie close enough to be one mast, finds it better still ([`pool`]). Station ids do not link
//! radios, so the pooling goes by distance. The import pools ([`crate::store::builder`]);
//! the solver reads the result as a shift from the site's own mast
//! ([`crate::store::record::Mast`]).

use rustc_hash::FxHashMap;

use crate::geo::{self, LocalFrame};
use crate::radio::Radio;
use crate::store::record::{key_cid, Estimated, Station};

/// The ids of the cells that share a cell's site (its sibling sectors), inclusive. LTE and
/// NB-IoT: `eNB << 8 | cell` (3GPP TS 36.300); NR: `gNB << 12 | cell`, the common 24-bit
/// gNB id. GSM and UMTS ids carry no site by standard, but operators commonly number a
/// site's sectors by the last decimal digit (UMTS: of the 16-bit C-ID under its RNC); the
/// distance check of [`SiteMast::of`] rejects groups that are not one site. CDMA: no site.
pub fn site_cids(radio: Radio, cid: u64) -> Option<(u64, u64)> {
    match radio {
        Radio::Lte | Radio::Nbiot => Some((cid & !0xff, cid | 0xff)),
        Radio::Nr => Some((cid & !0xfff, cid | 0xfff)),
        Radio::Gsm => Some((cid / 10 * 10, cid / 10 * 10 + 9)),
        Radio::Umts => {
            let (rnc, first) = (cid & !0xffff, (cid & 0xffff) / 10 * 10);
            Some((rnc | first, rnc | (first + 9).min(0xffff)))
        }
        Radio::Cdma => None,
    }
}

/// The site of a stored cell key (`record::cell_key`): its first sector's id
/// ([`site_cids`]); None for radios without sites. A LAC/TAC's cells are stored in key order,
/// which keeps a site's sectors together.
pub fn site_of_key(radio: Radio, key: u64) -> Option<u64> {
    site_cids(radio, key_cid(radio, key)).map(|(first, _)| first)
}

/// A site: its network and its first sector's id ([`site_cids`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SiteKey {
    pub radio: Radio,
    pub mcc: u16,
    pub mnc: u16,
    pub site: u64,
}

impl SiteKey {
    /// The site of cell `cid` of (radio, mcc, mnc); None for radios without sites (CDMA).
    pub fn of_cell(radio: Radio, mcc: u16, mnc: u16, cid: u64) -> Option<SiteKey> {
        site_cids(radio, cid).map(|(site, _)| SiteKey {
            radio,
            mcc,
            mnc,
            site,
        })
    }
}

/// Sibling estimates farther than this many of their mean range from their centre are not
/// one site's sectors (reused ids, another numbering, bad data). Sectors' crowd estimates lie
/// about one range from the mast in sparse networks (the simulator's rural sites: 2-3 km
/// for ranges of 3-4 km), so the bound is loose enough to keep them.
const SITE_MAX_SPREAD_RANGES: f64 = 3.0;

/// The averaged stations among `siblings`: in-memory ones at import, the file's records at
/// lookup. A record is unpacked where it lies: copied out first, its 23 bytes would go
/// through two overlapping stores that the unpacking's loads cannot forward from (a stall).
fn averaged<S>(siblings: &[S]) -> impl Iterator<Item = Station> + '_
where
    for<'a> &'a S: Into<Station>,
{
    siblings
        .iter()
        .map(|s| s.into())
        .filter(|s: &Station| s.estimated() == Estimated::Averaged)
}

/// A site's mast, with what pooling and the solver need to know of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SiteMast {
    pub radio: Radio,
    pub lat: f64,
    pub lon: f64,
    /// How far the site's sector estimates lie from their mean, on average: how far out
    /// from the mast the site's crowds sit, the scale of the mast's own error, and so how
    /// far another radio's mast may lie and still be taken for the same one.
    pub spread_m: f64,
}

impl SiteMast {
    /// The mast of a site from its sectors' crowd estimates: each is pulled out from the
    /// mast along its own azimuth, and with two or more sectors the pulls roughly cancel in
    /// their mean (the simulator's towns: 50 m from the true mast, where one sector's estimate
    /// is 220 m off). None for fewer than two (an omni site, or ids that do not name sites).
    /// Only averaged siblings count: learned positions are not pulled out along their
    /// azimuths, and their pulls would not cancel.
    pub fn of<S>(radio: Radio, siblings: &[S]) -> Option<SiteMast>
    where
        for<'a> &'a S: Into<Station>,
    {
        if siblings.len() < 2 {
            return None;
        }
        let (mut n, mut lat, mut lon, mut range) = (0.0, 0.0, 0.0, 0.0);
        for s in averaged(siblings) {
            n += 1.0;
            lat += s.lat();
            lon += s.lon();
            range += s.range_m() as f64;
        }
        if n < 2.0 {
            return None;
        }
        let (lat, lon) = (lat / n, lon / n);
        // In degrees on the plane tangent at the mast (the sectors are kilometres apart): the
        // solver asks this of every cell it finds, and a local frame's conversions and
        // `hypot` cost a tenth of a single cell's instructions.
        let m_per_deg = geo::EARTH_RADIUS_M.to_radians();
        let bound = SITE_MAX_SPREAD_RANGES * (range / n).max(100.0) / m_per_deg;
        let cos2 = lat.to_radians().cos().powi(2);
        let mut spread = 0.0;
        for s in averaged(siblings) {
            let d2 = (s.lat() - lat).powi(2) + (s.lon() - lon).powi(2) * cos2;
            if d2 > bound * bound {
                return None;
            }
            spread += d2.sqrt();
        }
        Some(SiteMast {
            radio,
            lat,
            lon,
            spread_m: spread / n * m_per_deg,
        })
    }
}

/// Masts farther apart than this are never pooled, whatever their spread: a site whose
/// sectors disagree by more is one whose estimates say little, and a pooled shift must
/// fit the 16 bits a [`crate::store::record::Mast`] gives it.
pub const MAX_POOL_DISTANCE_M: f64 = 10_000.0;

/// How far another radio's mast may lie and still be pooled, in the site's spreads. Fitted
/// on the simulator's worlds (`npx tsx bench/accuracy.ts --requests 10000`, single and town
/// cells) with every radio on every mast and with some or all LTE and NR on masts of their
/// own nearby (`--separate-masts`): 0.75 gives up nothing where radios share masts and half
/// the loss where none do.
const POOL_REACH_SPREADS: f64 = 0.75;

/// The side of the grid cells that [`pool`] searches, in degrees of latitude (2.2 km).
const GRID_DEG: f64 = 0.02;

/// Pools the masts of one operator's sites (all its radios, same mcc and mnc): a site's mast
/// is averaged with the nearest mast of each of the operator's other radios within three
/// quarters of the site's own spread (`POOL_REACH_SPREADS`; of its own, not theirs: a site
/// whose sectors agree closely needs a partner as close). Returns, for each site in order,
/// the pooled mast as (east, north) metres from its own, or None when no other radio's mast
/// is near enough. How it was chosen: docs/positioning.md, "Masts pooled across radios".
pub fn pool(sites: &[SiteMast]) -> Vec<Option<(f64, f64)>> {
    pool_on(
        sites,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}

/// [`pool`] on `threads` threads (the same answer on any number).
pub fn pool_on(sites: &[SiteMast], threads: usize) -> Vec<Option<(f64, f64)>> {
    let mut grid: FxHashMap<(u8, i32, i32), Vec<u32>> = FxHashMap::default();
    for (i, s) in sites.iter().enumerate() {
        let (y, x) = grid_cell(s.lat, s.lon);
        grid.entry((s.radio as u8, y, x))
            .or_default()
            .push(i as u32);
    }
    let mut radios: Vec<u8> = sites.iter().map(|s| s.radio as u8).collect();
    radios.sort_unstable();
    radios.dedup();
    let mut out = vec![None; sites.len()];
    // Each site's pooling reads the others and writes its own entry: the sites are split
    // among the threads (a country's operator has a million sites or more, at about 1.3 us
    // each on one thread).
    let chunk = sites.len().div_ceil(threads.max(1)).max(4_096);
    std::thread::scope(|scope| {
        for (part, out) in sites.chunks(chunk).zip(out.chunks_mut(chunk)) {
            let (grid, radios) = (&grid, &radios);
            scope.spawn(move || {
                for (s, o) in part.iter().zip(out.iter_mut()) {
                    *o = pool_one(sites, grid, radios, s);
                }
            });
        }
    });
    out
}

fn grid_cell(lat: f64, lon: f64) -> (i32, i32) {
    (
        (lat / GRID_DEG).floor() as i32,
        (lon / GRID_DEG).floor() as i32,
    )
}

/// [`pool`] for one site.
fn pool_one(
    sites: &[SiteMast],
    grid: &FxHashMap<(u8, i32, i32), Vec<u32>>,
    radios: &[u8],
    s: &SiteMast,
) -> Option<(f64, f64)> {
    let m_per_deg = geo::EARTH_RADIUS_M.to_radians();
    let reach = (POOL_REACH_SPREADS * s.spread_m).min(MAX_POOL_DISTANCE_M);
    let frame = LocalFrame::new(s.lat, s.lon);
    let (y0, x0) = grid_cell(s.lat, s.lon);
    let dy = (reach / m_per_deg / GRID_DEG).ceil() as i32;
    let cos = s.lat.to_radians().cos().max(0.01);
    let dx = (reach / (m_per_deg * cos) / GRID_DEG).ceil() as i32;
    let (mut n, mut sx, mut sy) = (1.0, 0.0, 0.0);
    for &r in radios.iter().filter(|&&r| r != s.radio as u8) {
        // (squared distance, east, north) of the nearest within reach.
        let mut nearest: Option<(f64, f64, f64)> = None;
        for y in y0 - dy..=y0 + dy {
            for x in x0 - dx..=x0 + dx {
                for &j in grid.get(&(r, y, x)).map_or(&[][..], |v| v.as_slice()) {
                    let o = &sites[j as usize];
                    let (ex, ny) = frame.to_xy(o.lat, o.lon);
                    let d2 = ex * ex + ny * ny;
                    if d2 <= reach * reach && nearest.is_none_or(|(best, _, _)| d2 < best) {
                        nearest = Some((d2, ex, ny));
                    }
                }
            }
        }
        if let Some((_, ex, ny)) = nearest {
            n += 1.0;
            sx += ex;
            sy += ny;
        }
    }
    (n > 1.0).then(|| (sx / n, sy / n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::record::StationInfo;

    fn station(lat: f64, lon: f64, range_m: u32) -> Station {
        Station::new(
            0,
            &StationInfo {
                lat,
                lon,
                range_m,
                samples: 10,
                psc: None,
                created: 1_600_000_000,
                updated: 1_700_000_000,
                estimated: Estimated::Averaged,
            },
        )
    }

    fn site(radio: Radio, lat: f64, lon: f64, spread_m: f64) -> SiteMast {
        SiteMast {
            radio,
            lat,
            lon,
            spread_m,
        }
    }

    #[test]
    fn a_site_mast_is_its_sectors_mean_and_its_spread_their_mean_distance() {
        // Three sectors 200 m north, and 200 m south-east and south-west of (52, 4).
        let frame = LocalFrame::new(52.0, 4.0);
        let at = |e: f64, n: f64| frame.to_latlon(e, n);
        let s30 = 200.0 * 0.5;
        let e30 = 200.0 * 3f64.sqrt() / 2.0;
        let sectors: Vec<Station> = [at(0.0, 200.0), at(e30, -s30), at(-e30, -s30)]
            .iter()
            .map(|&(lat, lon)| station(lat, lon, 500))
            .collect();
        let m = SiteMast::of(Radio::Lte, &sectors).unwrap();
        let (e, n) = frame.to_xy(m.lat, m.lon);
        assert!(e.abs() < 0.5 && n.abs() < 0.5, "{e} {n}");
        assert!((m.spread_m - 200.0).abs() < 0.5, "{}", m.spread_m);
        assert_eq!(SiteMast::of(Radio::Lte, &sectors[..1]), None);
    }

    #[test]
    fn masts_pool_with_the_nearest_of_each_other_radio_within_the_spread() {
        let frame = LocalFrame::new(52.0, 4.0);
        let at = |radio, e: f64, n: f64, spread| {
            let (lat, lon) = frame.to_latlon(e, n);
            site(radio, lat, lon, spread)
        };
        let sites = [
            at(Radio::Gsm, 0.0, 0.0, 300.0),
            // Two UMTS masts in reach: the nearer one counts.
            at(Radio::Umts, 100.0, 0.0, 300.0),
            at(Radio::Umts, 250.0, 0.0, 300.0),
            // An LTE mast beyond the GSM site's reach (0.75 of its spread) but within its own.
            at(Radio::Lte, 0.0, 400.0, 600.0),
            // Another GSM site never pools with the first.
            at(Radio::Gsm, 50.0, 0.0, 300.0),
        ];
        let pooled = pool(&sites);
        let (e, n) = pooled[0].unwrap();
        assert!((e - 50.0).abs() < 0.5 && n.abs() < 0.5, "{e} {n}");
        // The LTE site reaches the GSM sites and the first UMTS one: the nearest of each.
        let (e, n) = pooled[3].unwrap();
        let nearest_gsm = (0.0f64, 0.0f64);
        let umts = (100.0f64, 0.0f64);
        let want = (
            (0.0 + nearest_gsm.0 + umts.0) / 3.0,
            (400.0 + nearest_gsm.1 + umts.1) / 3.0 - 400.0,
        );
        assert!(
            (e - want.0).abs() < 1.0 && (n - want.1).abs() < 1.0,
            "{e} {n} {want:?}"
        );
    }

    #[test]
    fn pooling_answers_the_same_on_any_number_of_threads() {
        // 3,000 masts 300 m apart on a line, GSM and LTE on each, the LTE 60 m off.
        let frame = LocalFrame::new(52.0, 4.0);
        let sites: Vec<SiteMast> = (0..6_000)
            .map(|i| {
                let (radio, off) = if i % 2 == 0 {
                    (Radio::Gsm, 0.0)
                } else {
                    (Radio::Lte, 60.0)
                };
                let (lat, lon) = frame.to_latlon((i / 2) as f64 * 300.0 + off, 0.0);
                site(radio, lat, lon, 100.0)
            })
            .collect();
        let one = pool_on(&sites, 1);
        assert_eq!(one, pool_on(&sites, 3));
        assert!(one
            .iter()
            .all(|p| p.is_some_and(|(e, _)| (e.abs() - 30.0).abs() < 0.5)));
    }

    #[test]
    fn a_mast_without_another_radio_near_stays_its_own() {
        let sites = [
            site(Radio::Gsm, 52.0, 4.0, 200.0),
            site(Radio::Lte, 52.01, 4.0, 200.0),
            site(Radio::Gsm, 52.0, 4.001, 200.0),
        ];
        assert_eq!(pool(&sites), vec![None, None, None]);
    }
}
