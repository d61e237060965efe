//! Step 1 of solving: find every observed cell and access point, in the learned
//! overlay first (a learned station replaces the database's, a withdrawn one is not
//! used), then in the database, including cells reported by their 16-bit short CID.

use smallvec::SmallVec;

use super::params::LEVEL_MATCH_DB;
use super::query::{CellObs, WifiObs};
use super::weights::wifi_band_loss_db;
use super::wifi::router_of;
use crate::geo;
use crate::learn::overlay::{Lookup, OverlayView};
use crate::learn::StationKey;
use crate::radio::Radio;
use crate::sites::{self, SiteMast};
use crate::store::netstats::{AdvancePoint, LevelPoint, NetworkScale};
use crate::store::record::{cell_key, Estimated, Station};
use crate::store::{CellBlock, Database, WifiBlock};

/// A cell the device saw that the database knows.
#[derive(Clone, Copy, Debug)]
pub struct SeenCell {
    pub radio: Radio,
    pub lat: f64,
    pub lon: f64,
    pub range_m: f64,
    pub samples: u32,
    pub updated: i64,
    /// Received level in dBm, from `signal` or converted from `asu`.
    pub signal: Option<f64>,
    /// Timing advance as a distance in metres, with its half-width (serving cell only).
    pub ta_m: Option<(f64, f64)>,
    /// The mast of the cell's site, inferred from its sibling sectors ([`SiteMast::of`]) and
    /// pooled with the other radios' masts near it ([`sites::pool`]), with the sectors'
    /// spread around their own mast.
    pub tower: Option<SiteMast>,
    pub serving: bool,
    /// Found by its short id among its LAC's cells rather than by its full id.
    pub via_short_cid: bool,
    /// Placed by our learner (the mode of GPS-tagged sightings), not a crowd average: its
    /// range and samples mean something else, and its radius has its own calibration.
    pub learned: bool,
    /// The scale of the cell's network, from the database's statistics.
    pub scale: NetworkScale,
    /// A learned cell heard at a level or timing advance its learning heard it at: placed
    /// where the learning heard it so (`lat`, `lon`), and how far from there 68% of those
    /// sightings lay.
    pub point_spread_m: Option<f64>,
}

#[derive(Clone, Copy, Debug)]
pub struct SeenAp {
    pub lat: f64,
    pub lon: f64,
    pub range_m: f64,
    pub samples: u32,
    pub updated: i64,
    /// The level as a 2.4 GHz AP as far away would read it (`wifi_band_loss_db`).
    pub signal: Option<f64>,
    /// Which router the AP is (`wifi::router_of`), in 32 bits that fit beside `samples`.
    pub router: u32,
}

/// Requests carry at most 7 cells and 15 APs unless an account's limit was raised:
/// these stay on the stack.
pub type SeenCells = SmallVec<[SeenCell; 8]>;
pub type SeenAps = SmallVec<[SeenAp; 16]>;

pub struct Seen {
    pub cells: SeenCells,
    pub wifi: SeenAps,
}

/// Short-CID candidates farther apart than this are different cells in different
/// places: the fallback refuses to guess between them.
const SHORT_CID_MAX_SPREAD_M: f64 = 10_000.0;

/// Fills `seen` (cleared first) rather than returning it: the stack lists are about 2 KB,
/// and moving them out of a call would be a copy per request. `overlay` is None
/// while nothing is learned: the lookups then cost what they cost without an overlay.
pub fn resolve(
    db: &Database,
    overlay: Option<&OverlayView<'_>>,
    cells: &[CellObs],
    wifi: &[WifiObs],
    scf: bool,
    seen: &mut Seen,
) {
    seen.cells.clear();
    seen.wifi.clear();
    // Every station's block found and its cache lines asked for first, so that the
    // searches below wait for memory together: a request's lookups are independent, and
    // each is a few cache misses in a file far larger than the cache.
    let mut firsts: SmallVec<[Option<FirstNetwork>; 8]> = SmallVec::new();
    for obs in cells {
        firsts.push(match (candidate_radios(obs).first(), obs.mcc) {
            (Some(&radio), Some(mcc)) => Some(FirstNetwork {
                radio,
                mcc,
                block: db.cell_block(radio, mcc, obs.mnc, obs.lac, obs.cid),
            }),
            _ => None,
        });
    }
    // Filled in place and read by reference: collected and then consumed by the loop
    // below, the 512-byte list would be copied twice per request, with or without APs.
    let mut blocks: SmallVec<[Option<WifiBlock>; 16]> = SmallVec::new();
    for obs in wifi {
        blocks.push(db.wifi_block(obs.bssid));
    }
    for (i, (obs, &first)) in cells.iter().zip(firsts.iter()).enumerate() {
        let serving = i == 0;
        match find_cell(db, overlay, obs, first, serving, &mut seen.cells) {
            // Withdrawn as moved: no evidence, not even through its short id.
            Found::Seen | Found::Withdrawn => {}
            Found::Unknown if scf && obs.cid <= 0xffff => {
                if let Some(c) = find_by_short_cid(db, obs, serving) {
                    seen.cells.push(c);
                }
            }
            Found::Unknown => {}
        }
    }
    for (obs, &block) in wifi.iter().zip(blocks.iter()) {
        let found = match overlay.map(|o| o.get(&StationKey::Wifi(obs.bssid))) {
            None | Some(Lookup::Unknown) => block.and_then(|b| db.wifi_in(b, obs.bssid)),
            Some(Lookup::Learned(st)) => Some(st),
            Some(Lookup::Blocked) => None,
        };
        if let Some(st) = found {
            seen.wifi.push(SeenAp {
                router: router_of(obs.bssid),
                lat: st.lat(),
                lon: st.lon(),
                range_m: st.range_m() as f64,
                samples: st.samples(),
                updated: st.updated(),
                signal: obs.signal.map(|s| s + wifi_band_loss_db(obs.frequency)),
            });
        }
    }
}

/// The radios to try for a cell: the one it names, or those its ids fit.
pub fn candidate_radios(obs: &CellObs) -> &'static [Radio] {
    match obs.radio {
        Some(Radio::Gsm) => &[Radio::Gsm],
        Some(Radio::Cdma) => &[Radio::Cdma],
        Some(Radio::Umts) => &[Radio::Umts],
        Some(Radio::Lte) => &[Radio::Lte],
        // NB-IoT carriers are often exported under their anchor LTE cell's id.
        Some(Radio::Nbiot) => &[Radio::Nbiot, Radio::Lte],
        Some(Radio::Nr) => &[Radio::Nr],
        None if obs.cid > 0xffff => &[Radio::Lte, Radio::Umts, Radio::Nr, Radio::Nbiot],
        None => &[Radio::Gsm, Radio::Umts, Radio::Lte, Radio::Cdma],
    }
}

/// The mccs to try: the one given, or every mcc under which a CDMA SID is known (a request
/// names an mcc for every radio but CDMA).
pub(super) fn candidate_mccs<'a>(db: &'a Database, radio: Radio, obs: &'a CellObs) -> &'a [u16] {
    match &obs.mcc {
        Some(m) => std::slice::from_ref(m),
        None if radio == Radio::Cdma => db.cdma_mccs(obs.mnc),
        None => &[],
    }
}

/// What [`find_cell`] made of a cell.
enum Found {
    /// Added to the seen cells.
    Seen,
    /// Withdrawn as moved (learned overlay).
    Withdrawn,
    Unknown,
}

/// A cell's first candidate network (the radio and mcc it names) and the block of it where
/// the cell would be ([`Database::cell_block`]), found before any cell is searched.
#[derive(Clone, Copy)]
struct FirstNetwork {
    radio: Radio,
    mcc: u16,
    block: Option<CellBlock>,
}

/// Finds the cell and adds it, with the radio it was found under, to `seen`. Pushed here
/// rather than returned: the cell, its record and its mast made a return value the caller
/// read back with wider loads than the stores that wrote it, a store-forwarding stall.
fn find_cell(
    db: &Database,
    overlay: Option<&OverlayView<'_>>,
    obs: &CellObs,
    first: Option<FirstNetwork>,
    serving: bool,
    seen: &mut SeenCells,
) -> Found {
    let mnc = obs.mnc;
    for &radio in candidate_radios(obs) {
        for &mcc in candidate_mccs(db, radio, obs) {
            if let Some(o) = overlay {
                let key = cell_key(radio, obs.lac, obs.cid);
                match o.get(&StationKey::Cell {
                    radio,
                    mcc,
                    mnc,
                    key,
                }) {
                    // A learned cell's mast is the one our learner fitted from timing
                    // advances, if any: its siblings may be learned or not. A station learned
                    // live has no levels (the overlay keeps none; `learn::compact`).
                    Lookup::Learned(st) => {
                        let scale = db.network_scale(radio, mcc, mnc);
                        let tower = db.learned_mast(radio, mcc, mnc, obs.cid);
                        let mut c = seen_cell(radio, obs, &st, serving, false, tower, scale);
                        // Learned live from GPS fixes: ours, whatever the export's rows are
                        // (a crowd cell refined by fewer fixes than it had stays averaged).
                        c.learned = st.estimated() == Estimated::Learned;
                        seen.push(c);
                        return Found::Seen;
                    }
                    Lookup::Blocked => return Found::Withdrawn,
                    Lookup::Unknown => {}
                }
            }
            let site = sites::site_cids(radio, obs.cid).unwrap_or((obs.cid, obs.cid));
            let found = match first {
                Some(f) if f.radio == radio && f.mcc == mcc => f
                    .block
                    .and_then(|b| db.cell_among_in(b, obs.lac, obs.cid, site)),
                _ => db.cell_among(radio, mcc, mnc, obs.lac, obs.cid, site),
            };
            if let Some(m) = found {
                // A crowd average sits out along its sector's axis from the mast its
                // siblings give; a learned position (the mode of sightings) has the mast our
                // learner fitted from timing advances, if any (`learn::masts`). A published
                // cell is its mast, whatever siblings its id gives (`cells::mast_of`); the
                // ids of a network numbered otherwise give no siblings.
                let tower = match m.cell.estimated() {
                    kind if published_row(kind, &m.scale) => None,
                    Estimated::Averaged if !m.scale.ids_name_sites => None,
                    Estimated::Averaged => SiteMast::of(radio, m.neighbours).map(|mut site| {
                        if let Some(p) = m.pooled_mast() {
                            (site.lat, site.lon) = p.apply((site.lat, site.lon));
                        }
                        site
                    }),
                    Estimated::Learned => db.learned_mast(radio, mcc, mnc, obs.cid),
                };
                let mut c = seen_cell(radio, obs, &m.cell, serving, false, tower, m.scale);
                if c.learned {
                    at_its_level(&mut c, db.learned_levels(radio, mcc, mnc, m.cell.key));
                    at_its_advance(&mut c, db.learned_advances(radio, mcc, mnc, m.cell.key));
                }
                seen.push(c);
                return Found::Seen;
            }
        }
    }
    Found::Unknown
}

fn find_by_short_cid(db: &Database, obs: &CellObs, serving: bool) -> Option<SeenCell> {
    let mnc = obs.mnc;
    for &radio in candidate_radios(obs).iter().filter(|r| r.has_short_cid()) {
        for &mcc in candidate_mccs(db, radio, obs) {
            let found = db.cells_by_short_cid(radio, mcc, mnc, obs.lac, obs.cid as u16);
            if found.is_empty() {
                continue;
            }
            let first = found[0];
            let spread = found
                .iter()
                .map(|s| geo::distance_m(first.lat(), first.lon(), s.lat(), s.lon()))
                .fold(0.0, f64::max);
            if spread > SHORT_CID_MAX_SPREAD_M {
                return None;
            }
            // Several full ids share the short one: use their centre and widen the
            // range to cover them all.
            let n = found.len() as f64;
            let lat = found.iter().map(|s| s.lat()).sum::<f64>() / n;
            let lon = found.iter().map(|s| s.lon()).sum::<f64>() / n;
            let scale = db.network_scale(radio, mcc, mnc);
            let mut c = seen_cell(radio, obs, &first, serving, true, None, scale);
            c.lat = lat;
            c.lon = lon;
            c.range_m = found
                .iter()
                .map(|s| geo::distance_m(lat, lon, s.lat(), s.lon()) + s.range_m() as f64)
                .fold(c.range_m, f64::max);
            c.samples = found.iter().map(|s| s.samples()).sum();
            return Some(c);
        }
    }
    None
}

/// Places a learned cell at the position its learning found for the level it is heard at
/// (the nearest of `levels`, within [`LEVEL_MATCH_DB`]); leaves it at its estimate otherwise.
/// With a timing advance and a mast, the advance then puts it on the mast's ring along the
/// level's bearing, when the level is tighter than the ring (its spread at most the radius
/// the ring's answer would claim); else along the estimate's. On the simulator's walks, most
/// routes walked again, the estimate's bearing made learned masts cost 12% in the median
/// world; on the Dakar walks the looser levels, whose passes were on other streets, would
/// have raised the p90 (docs/experiments.md).
fn at_its_level(c: &mut SeenCell, levels: &[LevelPoint]) {
    let Some(signal) = c.signal else {
        return;
    };
    let i = levels.partition_point(|p| f64::from(p.dbm) < signal);
    let nearest = [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|j| levels.get(j))
        .min_by(|a, b| {
            (f64::from(a.dbm) - signal)
                .abs()
                .total_cmp(&(f64::from(b.dbm) - signal).abs())
        });
    let tighter_than_ring = |p: &&LevelPoint| match (c.ta_m, c.tower) {
        (Some((d, step)), Some(_)) => {
            f64::from(p.spread_m) <= super::cells::ring_radius(true, d, step)
        }
        _ => true,
    };
    let near = |p: &&LevelPoint| (f64::from(p.dbm) - signal).abs() <= LEVEL_MATCH_DB;
    if let Some(p) = nearest.filter(near).filter(tighter_than_ring) {
        (c.lat, c.lon) = (p.lat, p.lon);
        c.point_spread_m = Some(f64::from(p.spread_m));
    }
}

/// Places a learned cell heard at a timing advance at the position its learning found for
/// that advance around its site's learned mast (`learn::estimate::advance_points`), with that
/// position's spread, unless its level placed it tighter ([`at_its_level`]). Where the
/// learning's devices were at the advance's distance from the mast says more of where the
/// next one is than the bearing of the estimate or level: on the simulator's walks the
/// median world's median error went from 0.576 to 0.560 of the centroid's, the worst
/// world's from 0.859 to 0.817; on the world families' sightings and the Dakar logs, where
/// few cells have such points, by 1% or less (docs/experiments.md). Unlike a level's, a
/// point looser than the ring's radius answers too: its spread is measured, so it claims
/// what it shows (held back there, the walks' worst world came to 0.823 and the families'
/// inside share fell from 66.3% to 64.9%).
fn at_its_advance(c: &mut SeenCell, advances: &[AdvancePoint]) {
    let Some((d, step)) = c.ta_m else {
        return;
    };
    let steps = super::ta_steps(d, step);
    let Ok(i) = advances.binary_search_by(|p| f64::from(p.steps).total_cmp(&steps)) else {
        return;
    };
    let p = advances[i];
    if c.point_spread_m.is_some_and(|s| s <= f64::from(p.spread_m)) {
        return;
    }
    (c.lat, c.lon) = (p.lat, p.lon);
    c.point_spread_m = Some(f64::from(p.spread_m));
}

/// Whether a stored row of a network is a publisher's mast (`NetworkScale`): its averaged
/// rows when the network is published at its masts, its exact rows (an export's `changeable`
/// 0, stored as learned) when those stand on one another's positions.
fn published_row(kind: Estimated, scale: &NetworkScale) -> bool {
    match kind {
        Estimated::Averaged => scale.averaged_rows_published,
        Estimated::Learned => scale.exact_rows_published,
    }
}

#[inline]
pub(super) fn seen_cell(
    radio: Radio,
    obs: &CellObs,
    st: &Station,
    serving: bool,
    via_short_cid: bool,
    tower: Option<SiteMast>,
    scale: NetworkScale,
) -> SeenCell {
    let signal = obs
        .signal
        .or_else(|| obs.asu.and_then(|a| asu_to_dbm(radio, a)));
    // The middle of the reported step (a step's near edge is what the advance counts), on the
    // radios whose requests' advances the solver reads.
    let ta_m = match (serving, obs.ta) {
        (true, Some(ta)) => {
            super::read_advance_step_m(radio).map(|step| (super::ta_middle_m(ta, step), step))
        }
        _ => None,
    };
    let published = published_row(st.estimated(), &scale);
    SeenCell {
        radio,
        lat: st.lat(),
        lon: st.lon(),
        range_m: st.range_m() as f64,
        samples: st.samples(),
        updated: st.updated(),
        signal,
        ta_m,
        serving,
        via_short_cid,
        tower,
        // An export's exact rows are stored as learned; a publisher's masts are not ours.
        learned: st.estimated() == Estimated::Learned && !published,
        // The published spacing is read by the published rows only: a crowd's rows beside
        // a publisher's exact ones stay a crowd's.
        scale: if published {
            scale
        } else {
            NetworkScale {
                published_spacing_m: None,
                ..scale
            }
        },
        point_spread_m: None,
    }
}

/// 3GPP ASU to dBm (TS 27.007 for GSM, TS 25.133 for UMTS RSCP, TS 36.133 for LTE RSRP).
fn asu_to_dbm(radio: Radio, asu: f64) -> Option<f64> {
    match radio {
        Radio::Gsm if (0.0..=31.0).contains(&asu) => Some(2.0 * asu - 113.0),
        Radio::Umts if (-5.0..=91.0).contains(&asu) => Some(asu - 120.0),
        Radio::Lte | Radio::Nr if (0.0..=97.0).contains(&asu) => Some(asu - 140.0),
        // CDMA ASU is a coarse 1-16 level scale; map it onto the spec's -100..-75 dBm.
        Radio::Cdma if (1.0..=16.0).contains(&asu) => Some(-100.0 + (asu - 1.0) * 25.0 / 15.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned_cell(signal: f64, ta_m: Option<(f64, f64)>) -> SeenCell {
        SeenCell {
            radio: Radio::Lte,
            lat: 50.0,
            lon: 8.0,
            range_m: 800.0,
            samples: 100,
            updated: 0,
            signal: Some(signal),
            ta_m,
            tower: Some(SiteMast {
                radio: Radio::Lte,
                lat: 50.003,
                lon: 8.0,
                spread_m: 0.0,
            }),
            serving: true,
            via_short_cid: false,
            learned: true,
            scale: NetworkScale::UNKNOWN,
            point_spread_m: None,
        }
    }

    #[test]
    fn a_level_places_a_cell_unless_its_ring_claims_less() {
        let levels = [
            LevelPoint {
                dbm: -90,
                lat: 50.001,
                lon: 8.002,
                spread_m: 120.0,
            },
            LevelPoint {
                dbm: -80,
                lat: 50.002,
                lon: 8.001,
                spread_m: 600.0,
            },
        ];
        let placed = |signal, ta| {
            let mut c = learned_cell(signal, ta);
            at_its_level(&mut c, &levels);
            (c.lat, c.lon, c.point_spread_m)
        };
        // Without an advance, the nearest level within 4 dB; none beyond.
        assert_eq!(placed(-91.0, None), (50.001, 8.002, Some(120.0)));
        assert_eq!(placed(-79.0, None), (50.002, 8.001, Some(600.0)));
        assert_eq!(placed(-70.0, None), (50.0, 8.0, None));
        // An advance 300 m out: the ring would claim 0.81 x hypot(300, 78) = 251 m, so the
        // tight level places the cell and the loose one leaves it at its estimate.
        let ta = Some((300.0, 78.12));
        assert!(super::super::cells::ring_radius(true, 300.0, 78.12) > 200.0);
        assert_eq!(placed(-91.0, ta), (50.001, 8.002, Some(120.0)));
        assert_eq!(placed(-79.0, ta), (50.0, 8.0, None));
    }

    #[test]
    fn an_advance_places_a_cell_unless_its_level_placed_it_tighter() {
        let step = 78.12;
        let levels = [LevelPoint {
            dbm: -90,
            lat: 50.001,
            lon: 8.002,
            spread_m: 60.0,
        }];
        let advances = [
            AdvancePoint {
                steps: 3,
                lat: 50.0025,
                lon: 8.004,
                spread_m: 90.0,
            },
            AdvancePoint {
                steps: 4,
                lat: 50.0028,
                lon: 8.0045,
                spread_m: 40.0,
            },
        ];
        let placed = |signal, steps: Option<f64>| {
            let mut c = learned_cell(
                signal,
                steps.map(|s| (super::super::ta_middle_m(s, step), step)),
            );
            at_its_level(&mut c, &levels);
            at_its_advance(&mut c, &advances);
            (c.lat, c.lon, c.point_spread_m)
        };
        // The request's advance picks its point; one the learning has none for, or no
        // advance, leaves the cell where its level (or its estimate) put it.
        assert_eq!(placed(-70.0, Some(3.0)), (50.0025, 8.004, Some(90.0)));
        assert_eq!(placed(-70.0, Some(4.0)), (50.0028, 8.0045, Some(40.0)));
        assert_eq!(placed(-70.0, Some(5.0)), (50.0, 8.0, None));
        assert_eq!(placed(-90.0, None), (50.001, 8.002, Some(60.0)));
        // Heard at a level placed tighter than the advance's point: the level's; looser: the
        // advance's.
        assert_eq!(placed(-90.0, Some(3.0)), (50.001, 8.002, Some(60.0)));
        assert_eq!(placed(-90.0, Some(4.0)), (50.0028, 8.0045, Some(40.0)));
    }
}
