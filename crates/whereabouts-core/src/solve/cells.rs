//! Cell evidence: each known cell's anchor (its crowd estimate, or where on its sector's
//! axis from the mast its signal and a serving cell's timing advance put the device), a
//! weighted and robust mean of the anchors weighted by signal and by how many sightings
//! back each estimate, kept within the serving cell's sector (its timing advance's ring and
//! its wedge), and the LAC/TAC area fallback.

use super::lookup::{candidate_radios, SeenCell};
use super::query::{Answer, CellObs, Fallback, Source};
use super::weights::{cell_distance_factor, cell_signal_weight};
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;
use crate::store::Database;

/// Accuracy of a single cell's answer: the device is somewhere in the cell's coverage, about
/// `SINGLE_SPREAD` of its range from the crowd estimate at [`super::CONFIDENCE`], plus the
/// standard error of a crowd mean of `samples` sightings (`ESTIMATE_ERROR` range / sqrt(samples)),
/// added in quadrature as independent errors.
pub const SINGLE_SPREAD: f64 = 0.55;
pub const ESTIMATE_ERROR: f64 = 0.5;
/// Accuracy of several cells' answer: `SPREAD_SCALE` times the weighted spread S of their
/// anchors around their mean, inflated by (S / range)^`SPREAD_RANGE_EXP`. Cells whose anchors
/// lie far apart for their ranges barely share coverage, and a weighted mean then interpolates
/// poorly between them: with the spread alone the radius held 84% in dense urban networks and
/// 51% in sparse rural ones; with the inflation both sit near 68% (bench/accuracy.ts,
/// docs/positioning.md). 1.0 while the anchors were the crowd estimates; refitted on seed 1
/// with the sector axes. The exponent was 0.5 until the serving-sector terms below
/// ([`OFF_AXIS_SCALE`], [`BOUNDED_SCALE`]); 0.6 fitted with them on seed 1. The scale was 1.03
/// until session 7's position weights ([`weights`]), 1.0 since (the radius held 1
/// point more with the better answers).
pub const SPREAD_SCALE: f64 = 1.0;
const SPREAD_RANGE_EXP: f64 = 0.6;
/// A multi-cell radius when the first (serving) cell was not placed on its sector's axis (no
/// mast inferred: an omni site, a short-CID match, an unknown numbering): nothing bounds the
/// answer to the serving sector, and the anchors' spread understates the error (68% quantile of
/// error / radius 1.07 against 0.87 with an axis, seed 1), so the radius is this much wider.
const OFF_AXIS_SCALE: f64 = 1.1;
/// A multi-cell radius when the serving sector's bound ([`within_serving_sector`]) moved the
/// answer: the spread measured how far the neighbours pulled the mean, and the bound took part
/// of that back (68% quantile of error / radius 0.67-0.78 then, seed 1), so the radius shrinks
/// by this factor. Fitted on seed 1 with [`OFF_AXIS_SCALE`] and [`SPREAD_RANGE_EXP`] so that
/// each multi-cell scenario and each side of both terms holds about 68% (docs/positioning.md).
const BOUNDED_SCALE: f64 = 0.8;
/// The spread of a few anchors understates where the device can be, that of many overstates
/// it: with the spread model alone the radius held 31-53% of simulated answers from 2 or 3
/// cells and 73-85% from 7. A multi-cell radius is therefore scaled by
/// `(COUNT_REF / cells)^COUNT_EXP`, the 68% quantile of error / radius by cell count, fitted
/// as a power law over the multi-cell scenarios of seed 1 (docs/positioning.md).
const COUNT_REF: f64 = 4.64;
const COUNT_EXP: f64 = 0.83;
/// A single cell placed on its sector's axis by its signal ([`anchor_of`]) is that much
/// nearer the device than its crowd estimate: its radius shrinks by this factor.
const SINGLE_ON_AXIS_SCALE: f64 = 0.9;
/// A single crowd-averaged cell's radius: `CROWD_SPREAD` of its range plus the error of a
/// mean of few sightings, `CROWD_ESTIMATE_ERROR` range / samples^`CROWD_SAMPLES_EXP`, in
/// quadrature; the range taken as if one more sighting had said [`DEFAULT_RANGE_M`]. A crowd
/// record's range is how far its own sightings lay from their mean, so few sightings
/// understate the coverage (one has no spread at all: the simulator publishes its 50 m
/// floor), while many overstate where devices are. With the learned cells' model
/// ([`SINGLE_SPREAD`], [`ESTIMATE_ERROR`]) single crowd cells held 0% inside the radius from
/// one sighting, 32-37% from 2-4, 61-64% from 5-19 and 81% from 20 or more (68% overall);
/// fitted on seed 1 for every group near 68%: 87 / 61 / 66 / 69%, seed 2 79 / 60 / 66 / 71%
/// (docs/positioning.md).
const CROWD_SPREAD: f64 = 0.35;
const CROWD_ESTIMATE_ERROR: f64 = 3.0;
const CROWD_SAMPLES_EXP: f64 = 1.5;
/// Accuracy of an area's answer (a device on a cell the database lacks, somewhere in the
/// area): `AREA_ACCURACY_FACTOR` times the area's radius (90% of its cells' positions
/// within it), times sqrt(1 + `AREA_FEW_CELLS` / cells): a few cells are a poor sample
/// of the area's extent, and their centre of its middle. Fitted on the simulator's seed 1
/// and three folds of the Cork learn files (docs/positioning.md).
pub const AREA_ACCURACY_FACTOR: f64 = 0.82;
pub const AREA_FEW_CELLS: f64 = 5.0;
/// The least a cell answer claims: cell positions are crowd estimates.
const MIN_CELL_ACCURACY_M: f64 = 50.0;
/// Cells with no published range are treated as this wide.
const DEFAULT_RANGE_M: f64 = 1_000.0;
/// Crowd estimates from few sightings are noisy: a cell's weight grows with its
/// samples and saturates around this many (20 until session 7: see [`weights`]).
const SAMPLES_HALF_WEIGHT: f64 = 10.0;
/// A neighbour that is another sector of the serving cell's own site weighs this many times
/// its weight in the position. It is heard over the serving sector's own path, from the
/// same mast, so its level against the serving one says on which side of the serving
/// sector's axis the device is (near the boundary the two sectors share) rather than how far
/// out; its signal weight, fitted for other sites' cells, underrates that. Session 8, seeds
/// 1 / 2 at 10,000 requests (paired ratios to the weighted mean; rural, suburban, urban): x1
/// 1.221 / 1.152, 1.443 / 1.407, 1.352 / 1.360; x2 1.232 / 1.157, 1.465 / 1.430, 1.373 /
/// 1.372; x3 1.238 / 1.161, 1.470 / 1.436, 1.378 / 1.378; x4 1.235 / 1.162, 1.465 / 1.434,
/// 1.367 / 1.369; x6 and x12 worse; x0 (left out, the first guess: a side lobe says little)
/// 1.189 / 1.135, 1.362 / 1.324, 1.293 / 1.297. Seeds 3 to 6, x3 against x1: rural +0.010
/// to +0.023, suburban +0.023 to +0.030, urban +0.013 to +0.019. 17% of the rural requests,
/// 30% suburban and 35% urban hear such a sibling (seed 1).
const SERVING_SITE_WEIGHT: f64 = 3.0;
/// A cell whose estimate lies far from the others' consensus, for its coverage, was heard
/// through favourable shadowing or has a poor estimate: the mean is refined by this many
/// rounds of reweighting under a Cauchy loss on the distance in units of this many ranges.
/// 2 ranges and 3 rounds: medians 2-6% lower in every multi-cell simulated scenario, on
/// both seeds (docs/positioning.md); 1 range cut too much, 3 too little. 3 ranges since the
/// position weights of session 7 ([`weights`]), which already lean on tight cells.
const ROBUST_SCALE_RANGES: f64 = 3.0;
const ROBUST_ROUNDS: usize = 3;

/// A cell's anchor ([`anchor_of`]) in the local frame with its weight and range.
#[derive(Clone, Copy)]
struct Anchor {
    x: f64,
    y: f64,
    w: f64,
    range: f64,
}

fn range_of(c: &SeenCell) -> f64 {
    if c.range_m > 0.0 {
        c.range_m
    } else {
        DEFAULT_RANGE_M
    }
}

/// How much a cell says, as two weights: its signal and how many sightings back its estimate
/// in both, and how tight its coverage is in each differently.
///
/// The first weighs the cells' spread around the answer for its radius, with the root of the
/// range: the radius models ([`cells_accuracy`], [`count_factor`]) were fitted on the spread
/// and range weighted so.
///
/// The second weighs the anchors for the position, with the whole range: a cell heard with a
/// tight coverage puts the device near its anchor whatever its level. Session 7 measured
/// every position constant on 10,000 requests a scenario, where earlier fits had used 1,000
/// (the urban ratio to the weighted mean was 1.26 to 1.30 on seeds 1-4, not the 1.31 of seed
/// 1's first 1,000); fitted on seeds 1 and 2, seeds 3 and 4 the check. With this weight,
/// samples saturating at 10 (was 20), a robust scale of 3 ranges (was 2) and a 45-degree
/// serving wedge (was 60), the ratios went from 1.288 / 1.297 / 1.264 / 1.296 to 1.309 /
/// 1.315 / 1.300 / 1.306 in town, from 1.361 / 1.341 / 1.361 / 1.326 to 1.377 / 1.335 / 1.377
/// / 1.356 in the suburbs and from 1.170 / 1.137 / 1.211 / 1.144 to 1.197 / 1.162 / 1.235 /
/// 1.187 in the country (docs/positioning.md). The radius weighted by the second weight held
/// 71-73% in the country, for answers no better: hence two.
fn weights(c: &SeenCell) -> (f64, f64) {
    let samples = c.samples.max(1) as f64;
    let mut w = cell_signal_weight(c.radio, c.signal) * samples / (samples + SAMPLES_HALF_WEIGHT);
    if c.serving && c.signal.is_none() {
        w *= 2.0;
    }
    let root = range_of(c).max(100.0).sqrt();
    (w / root, w / (root * root))
}

/// Whether two cells are sectors of one site: the same mast, inferred from the same
/// siblings, so equal to the bit.
fn same_site(a: &SeenCell, b: &SeenCell) -> bool {
    match (a.tower, b.tower) {
        (Some(s), Some(t)) => s.lat == t.lat && s.lon == t.lon,
        _ => false,
    }
}

/// Where a device hearing `c` is likely to be: the crowd estimate is where the devices that
/// reported the cell were, pulled out from the mast along the sector's azimuth. With the
/// mast known from sibling sectors, the device is on that axis at the distance its signal
/// implies relative to the crowd's ([`cell_distance_factor`]), and a serving cell's timing
/// advance bounds that distance. Without a mast, the estimate itself. The flag: placed on
/// the sector's axis.
fn anchor_of(frame: &LocalFrame, c: &SeenCell) -> (f64, f64, bool) {
    let (x, y) = frame.to_xy(c.lat, c.lon);
    if c.signal.is_none() && c.ta_m.is_none() {
        return (x, y, false);
    }
    let Some(tower) = c.tower else {
        return (x, y, false);
    };
    let (tx, ty) = frame.to_xy(tower.lat, tower.lon);
    let (ux, uy) = (x - tx, y - ty);
    let own = (ux * ux + uy * uy).sqrt();
    // An estimate on the mast gives no axis.
    if own < 1.0 {
        return (x, y, false);
    }
    // The estimate gives the axis; how far out along it the crowd sits is taken from all
    // the site's sectors (their mean distance from their mast), a steadier figure than one
    // sector's: the sectors of a mast share its surroundings and its radio. Measured on the
    // simulator at 10,000 requests, seeds 1 to 4 (paired ratios to the weighted mean): single
    // cells 1.299 / 1.338 / 1.317 / 1.353 -> 1.317 / 1.361 / 1.345 / 1.361, town cells 1.317 /
    // 1.325 / 1.330 / 1.320 -> 1.354 / 1.356 / 1.348 / 1.339, suburban +0.015 to +0.029, rural
    // -0.001 to +0.014; three quarters of the site's distance and a quarter of the sector's
    // did as well, half of each a little worse.
    let len = tower.spread_m;
    let (ux, uy) = (ux / own * len, uy / own * len);
    let mut factor = c
        .signal
        .and_then(|s| cell_distance_factor(c.radio, s, c.serving))
        .unwrap_or(1.0);
    if let Some((d, step)) = c.ta_m {
        let (lo, hi) = ta_interval(d, step);
        factor = factor.clamp(lo / len, hi / len);
    }
    (tx + factor * ux, ty + factor * uy, true)
}

/// The distances from the mast a timing advance allows: `d` is the middle of the reported
/// step, and a reported advance may be a step off either way (the simulator's is; real
/// ones round and lag), so from one step below the reported one to one above.
fn ta_interval(d: f64, step: f64) -> (f64, f64) {
    ((d - 1.5 * step).max(0.0), d + 1.5 * step)
}

pub fn solve(cells: &[SeenCell], now: i64) -> Option<Answer> {
    let first = cells.first()?;
    let frame = LocalFrame::new(first.lat, first.lon);
    let (mut sw, mut sr, mut ax, mut ay, mut a2, mut moved) = (0.0, 0.0, 0.0, 0.0, 0.0, false);
    // The position's first estimate: the anchors' mean by their position weights.
    let (mut pw, mut px, mut py) = (0.0, 0.0, 0.0);
    let mut first_on_axis = false;
    let mut anchors: smallvec::SmallVec<[Anchor; 8]> = smallvec::SmallVec::new();
    for (i, c) in cells.iter().enumerate() {
        // One cell's weights would divide out: their exponential is saved.
        let (w, mut wp) = if cells.len() == 1 {
            (1.0, 1.0)
        } else {
            weights(c)
        };
        if i > 0 && same_site(c, first) {
            wp *= SERVING_SITE_WEIGHT;
        }
        let range = range_of(c);
        sw += w;
        sr += w * range;
        let (x, y, on_axis) = anchor_of(&frame, c);
        moved |= on_axis;
        first_on_axis |= i == 0 && on_axis;
        ax += w * x;
        ay += w * y;
        a2 += w * (x * x + y * y);
        pw += wp;
        px += wp * x;
        py += wp * y;
        anchors.push(Anchor { x, y, w: wp, range });
    }
    let mut samples: smallvec::SmallVec<[u32; 8]> =
        cells.iter().map(|c| c.samples.max(1)).collect();
    samples.sort_unstable();
    let median_samples = samples[samples.len() / 2];
    let (mx, my) = (ax / sw, ay / sw);
    (px, py) = (px / pw, py / pw);
    // The frame's origin is the first cell, so the coordinates are a few kilometres at most
    // and E[d^2] - |mean|^2 keeps its precision; max(0) absorbs rounding.
    let spread = (a2 / sw - (mx * mx + my * my)).max(0.0).sqrt();
    let mut accuracy = if cells.len() == 1 {
        let scale = if moved { SINGLE_ON_AXIS_SCALE } else { 1.0 };
        let radius = if first.learned {
            single_cell_accuracy(range_of(first), median_samples)
        } else {
            crowd_cell_accuracy(range_of(first), median_samples)
        };
        radius * scale
    } else {
        let scale = if first_on_axis { 1.0 } else { OFF_AXIS_SCALE };
        cells_accuracy(spread, sr / sw, median_samples) * count_factor(cells.len()) * scale
    };
    // The radius models were fitted on the spread around the plain weighted mean, so the
    // robust refinement moves only the position.
    if anchors.len() > 1 {
        (px, py) = robust_mean(&anchors, px, py);
        let (bx, by) = within_serving_sector(&frame, first, px, py);
        if (bx - px).hypot(by - py) > 1.0 {
            accuracy *= BOUNDED_SCALE;
        }
        (px, py) = (bx, by);
    }

    let (lat, lon) = frame.to_latlon(px, py);
    let total_samples: u32 = cells.iter().map(|c| c.samples).sum();
    let newest = cells.iter().map(|c| c.updated).max().unwrap_or(0);
    Some(Answer {
        lat,
        lon,
        accuracy_m: accuracy.max(MIN_CELL_ACCURACY_M),
        fallback: if cells.iter().any(|c| c.via_short_cid) {
            Fallback::Scf
        } else {
            Fallback::None
        },
        aged: total_samples <= 1 || newest < now - AGED_AFTER_S,
        source: Source::Cells,
    })
}

/// Iteratively reweighted mean from (px, py): each anchor's weight divided by
/// 1 + (distance / (ROBUST_SCALE_RANGES * range))^2.
fn robust_mean(anchors: &[Anchor], mut px: f64, mut py: f64) -> (f64, f64) {
    for _ in 0..ROBUST_ROUNDS {
        let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
        for a in anchors {
            let scale = ROBUST_SCALE_RANGES * a.range.max(1.0);
            let u2 = ((a.x - px).powi(2) + (a.y - py).powi(2)) / (scale * scale);
            let w = a.w / (1.0 + u2);
            sw += w;
            sx += w * a.x;
            sy += w * a.y;
        }
        if sw > 0.0 {
            (px, py) = (sx / sw, sy / sw);
        }
    }
    (px, py)
}

/// How far off its sector's axis (mast to crowd estimate) a device served by a sector is
/// taken to be at most: 45 degrees (cos and sin), within the 60 of half the 120 degrees each
/// sector of a three-sector site serves, since the crowd's estimate already leans to the
/// sector's middle. On the simulator's seed 1 (1,000 requests), bounds of 45 / 60 / 90 degrees
/// gave suburban medians 430 / 426 / 430 m (434 without) and 60 was kept; with session 7's
/// position weights (measured on the way, with a range weight of range^-0.75), on 10,000
/// requests of seeds 1 and 2, 45 against 60 moved the rural ratio to the weighted mean from
/// 1.178 / 1.146 to 1.189 / 1.155 and no other by more than 0.001 (docs/positioning.md).
const SERVING_WEDGE_COS: f64 = std::f64::consts::FRAC_1_SQRT_2;
const SERVING_WEDGE_SIN: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Where the serving cell allows the device to be, when it was placed on its sector's axis
/// ([`anchor_of`]): within its timing advance's distances from the mast ([`ta_interval`]),
/// and within the sector's wedge around its axis ([`SERVING_WEDGE_COS`]). The mean of several
/// anchors can leave both (neighbours pull it across the mast's ring or out of the sector);
/// the answer is moved back onto the nearest distance and bearing allowed, the other
/// coordinate kept (polar coordinates around the mast). The serving cell's own anchor
/// already lies inside both, so a single cell's answer never moves.
fn within_serving_sector(frame: &LocalFrame, c: &SeenCell, px: f64, py: f64) -> (f64, f64) {
    if !c.serving || (c.signal.is_none() && c.ta_m.is_none()) {
        return (px, py);
    }
    let Some(tower) = c.tower else {
        return (px, py);
    };
    let (tx, ty) = frame.to_xy(tower.lat, tower.lon);
    let (x, y) = frame.to_xy(c.lat, c.lon);
    let len = ((x - tx).powi(2) + (y - ty).powi(2)).sqrt();
    let (dx, dy) = (px - tx, py - ty);
    let r = (dx * dx + dy * dy).sqrt();
    // No axis (an estimate on the mast), or an answer on the mast: no bearing to bound.
    if len < 1.0 || r < 1.0 {
        return (px, py);
    }
    let (ux, uy) = ((x - tx) / len, (y - ty) / len);
    let dist = match c.ta_m {
        Some((d, step)) => {
            let (lo, hi) = ta_interval(d, step);
            r.clamp(lo, hi)
        }
        None => r,
    };
    // The bearing, as a unit vector: kept inside the wedge, else its nearer edge.
    let (mut bx, mut by) = (dx / r, dy / r);
    if bx * ux + by * uy < SERVING_WEDGE_COS {
        // Which side of the axis: the sign of the cross product axis x answer.
        let side = if ux * by - uy * bx >= 0.0 { 1.0 } else { -1.0 };
        let (vx, vy) = (-uy * side, ux * side);
        bx = SERVING_WEDGE_COS * ux + SERVING_WEDGE_SIN * vx;
        by = SERVING_WEDGE_COS * uy + SERVING_WEDGE_SIN * vy;
    }
    (tx + dist * bx, ty + dist * by)
}

/// The 68% radius of a single learned cell's answer: its coverage spread and the standard
/// error of its estimate, in quadrature.
fn single_cell_accuracy(range_m: f64, samples: u32) -> f64 {
    range_m
        * (SINGLE_SPREAD * SINGLE_SPREAD + ESTIMATE_ERROR * ESTIMATE_ERROR / samples as f64).sqrt()
}

/// The 68% radius of a single crowd-averaged cell's answer ([`CROWD_SPREAD`]).
fn crowd_cell_accuracy(range_m: f64, samples: u32) -> f64 {
    let n = samples.max(1) as f64;
    let range = (n * range_m + DEFAULT_RANGE_M) / (n + 1.0);
    let estimate = CROWD_ESTIMATE_ERROR * CROWD_ESTIMATE_ERROR / n.powf(CROWD_SAMPLES_EXP);
    range * (CROWD_SPREAD * CROWD_SPREAD + estimate).sqrt()
}

/// The 68% radius of a multi-cell answer from the weighted spread of the cells' estimates
/// around it, their weighted range and median samples.
fn cells_accuracy(spread_m: f64, range_m: f64, samples: u32) -> f64 {
    let between = SPREAD_SCALE * spread_m * (spread_m / range_m.max(1.0)).powf(SPREAD_RANGE_EXP);
    let estimate = ESTIMATE_ERROR * range_m / (samples as f64).sqrt();
    between.hypot(estimate)
}

/// The calibration of a multi-cell radius by the number of cells ([`COUNT_REF`]).
fn count_factor(cells: usize) -> f64 {
    (COUNT_REF / cells.max(1) as f64).powf(COUNT_EXP)
}

/// The 68% radius of an area's answer from its radius and cell count.
fn area_accuracy(radius_m: f64, cells: u32) -> f64 {
    let few = (1.0 + AREA_FEW_CELLS / cells.max(1) as f64).sqrt();
    (radius_m * AREA_ACCURACY_FACTOR * few).max(MIN_CELL_ACCURACY_M)
}

/// The LAC/TAC area of the first observed cell whose area is known.
pub fn area_answer(db: &Database, cells: &[CellObs]) -> Option<Answer> {
    for obs in cells {
        let mnc = obs.mnc;
        for &radio in candidate_radios(obs) {
            let mccs: Vec<u16> = match obs.mcc {
                Some(m) => vec![m],
                None => db.cdma_mccs(mnc).to_vec(),
            };
            for mcc in mccs {
                if let Some(a) = db.area(radio, mcc, mnc, obs.lac) {
                    return Some(Answer {
                        lat: a.lat(),
                        lon: a.lon(),
                        accuracy_m: area_accuracy(a.range_m as f64, a.cells),
                        fallback: Fallback::Lacf,
                        aged: true,
                        source: Source::Area,
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::SiteMast;

    #[test]
    fn a_cell_far_from_the_consensus_for_its_range_pulls_less() {
        let at = |x: f64| Anchor {
            x,
            y: 0.0,
            w: 1.0,
            range: 500.0,
        };
        let anchors = [at(0.0), at(0.0), at(10_000.0)];
        // The plain mean is a third of the way to the far cell.
        let (x, y) = robust_mean(&anchors, 10_000.0 / 3.0, 0.0);
        assert_eq!(y, 0.0);
        // 117 m with the scale of 3 ranges: under 5% of the plain mean's pull.
        assert!(x < 150.0, "{x}");
        // Anchors within their coverage of each other keep (nearly) the plain mean.
        let near = [at(0.0), at(300.0)];
        let (x, _) = robust_mean(&near, 150.0, 0.0);
        assert!((x - 150.0).abs() < 1e-9, "{x}");
    }

    /// A serving LTE cell whose mast is at the frame's origin and whose crowd estimate lies
    /// 500 m east of it (its sector points east).
    fn serving_east(ta_m: Option<(f64, f64)>) -> (LocalFrame, SeenCell) {
        let frame = LocalFrame::new(52.0, 4.0);
        let (lat, lon) = frame.to_latlon(500.0, 0.0);
        let cell = SeenCell {
            radio: crate::radio::Radio::Lte,
            lat,
            lon,
            range_m: 1_000.0,
            samples: 50,
            updated: 0,
            signal: Some(-99.0),
            ta_m,
            tower: Some(SiteMast {
                radio: crate::radio::Radio::Lte,
                lat: 52.0,
                lon: 4.0,
                spread_m: 500.0,
            }),
            serving: true,
            via_short_cid: false,
            learned: false,
        };
        (frame, cell)
    }

    #[test]
    fn a_cell_is_placed_on_its_axis_at_its_sites_distance_not_its_own() {
        let (frame, cell) = serving_east(None);
        let at = |spread_m: f64| {
            let mut c = cell;
            if let Some(t) = c.tower.as_mut() {
                t.spread_m = spread_m;
            }
            let (x, y, on_axis) = anchor_of(&frame, &c);
            assert!(on_axis && y.abs() < 1e-6, "{x} {y}");
            x
        };
        // The sector's own estimate is 500 m out; its siblings' at 300 m on average.
        assert!((at(300.0) / at(500.0) - 0.6).abs() < 1e-9);
    }

    #[test]
    fn a_sector_of_the_serving_site_pulls_more_than_another_sites_cell() {
        let (frame, serving) = serving_east(None);
        // A weaker neighbour whose estimate lies 500 m north of the serving mast.
        let mut sibling = serving;
        (sibling.lat, sibling.lon) = frame.to_latlon(0.0, 500.0);
        sibling.serving = false;
        sibling.signal = Some(-110.0);
        // The same cell seen as another site's: a mast a hair away.
        let mut other = sibling;
        other.tower = other.tower.map(|mut t| {
            t.lat += 1e-9;
            t
        });
        let north_of = |cells: &[SeenCell]| {
            let a = solve(cells, 0).unwrap();
            frame.to_xy(a.lat, a.lon).1
        };
        let (pulled, less) = (north_of(&[serving, sibling]), north_of(&[serving, other]));
        assert!(pulled > less + 10.0, "{pulled} {less}");
    }

    #[test]
    fn the_serving_sector_bounds_the_answer() {
        let close = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).hypot(a.1 - b.1) < 1e-6;
        let (frame, mut cell) = serving_east(Some((4.5 * 78.12, 78.12)));
        // Inside the ring of distances the advance allows (234-469 m) and the wedge: kept.
        assert!(close(
            within_serving_sector(&frame, &cell, 300.0, 100.0),
            (300.0, 100.0)
        ));
        // Beyond the ring on the axis: moved in to its outer edge.
        assert!(close(
            within_serving_sector(&frame, &cell, 900.0, 0.0),
            (6.0 * 78.12, 0.0)
        ));
        // Due north of the mast (90 degrees off the axis), within the ring: turned to the
        // wedge's edge at 45 degrees, at the same distance.
        let (x, y) = within_serving_sector(&frame, &cell, 0.0, 300.0);
        let edge = 300.0 * std::f64::consts::FRAC_1_SQRT_2;
        assert!(close((x, y), (edge, edge)), "{x} {y}");
        // South: the other edge.
        let (_, y) = within_serving_sector(&frame, &cell, 0.0, -300.0);
        assert!(y < 0.0);
        // Without a timing advance only the wedge bounds it.
        cell.ta_m = None;
        assert!(close(
            within_serving_sector(&frame, &cell, 900.0, 0.0),
            (900.0, 0.0)
        ));
        // A neighbour bounds nothing.
        cell.serving = false;
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, 300.0),
            (0.0, 300.0)
        ));
    }

    #[test]
    fn the_multi_cell_radius_knows_whether_the_serving_sector_bounded_the_answer() {
        let (frame, serving) = serving_east(None);
        // A neighbour west of the mast, off the serving sector: the mean of the two anchors
        // lies north of the mast, 90 degrees off the axis, and the bound turns it.
        let (lat, lon) = frame.to_latlon(-500.0, 300.0);
        let neighbour = SeenCell {
            lat,
            lon,
            tower: None,
            serving: false,
            ..serving
        };
        let bounded = solve(&[serving, neighbour], 0).unwrap();
        let off_axis = solve(
            &[
                SeenCell {
                    tower: None,
                    ..serving
                },
                neighbour,
            ],
            0,
        )
        .unwrap();
        // At the typical level the serving anchor is its estimate either way: the same
        // anchors and spread, one radius shrunk by the bound, the other widened for want of
        // an axis.
        assert!(bounded.lon != off_axis.lon);
        let ratio = off_axis.accuracy_m / bounded.accuracy_m;
        assert!(
            (ratio - OFF_AXIS_SCALE / BOUNDED_SCALE).abs() < 1e-9,
            "{ratio}"
        );
    }

    #[test]
    fn a_timing_advance_allows_a_step_either_way() {
        // Reported step 4 of 78.12 m: its middle is 4.5 steps.
        let (lo, hi) = ta_interval(4.5 * 78.12, 78.12);
        assert!((lo - 3.0 * 78.12).abs() < 1e-9 && (hi - 6.0 * 78.12).abs() < 1e-9);
        assert_eq!(ta_interval(0.5 * 553.5, 553.5).0, 0.0);
    }

    #[test]
    fn a_single_cell_radius_is_its_spread_once_the_estimate_is_well_sampled() {
        assert!((single_cell_accuracy(1_000.0, 1_000_000) - 550.0).abs() < 0.2);
        // One sighting: the estimate's own error, half the range, adds in quadrature.
        assert!((single_cell_accuracy(1_000.0, 1) - 0.55f64.hypot(0.5) * 1_000.0).abs() < 1e-9);
    }

    #[test]
    fn a_crowd_cell_from_few_sightings_claims_little() {
        // well sampled: its spread, a third of its range
        assert!((crowd_cell_accuracy(1_000.0, 1_000_000) - 350.0).abs() < 0.5);
        // one sighting with the 50 m floor for a range: the prior range and the estimate's
        // error dominate, kilometres rather than the 50 m a published range would claim
        let one = crowd_cell_accuracy(50.0, 1);
        assert!((one - 525.0 * 0.35f64.hypot(3.0)).abs() < 1e-9, "{one}");
        // fewer sightings never claim more
        let radii: Vec<f64> = [1, 2, 4, 10, 50, 500]
            .iter()
            .map(|&n| crowd_cell_accuracy(800.0, n))
            .collect();
        assert!(radii.windows(2).all(|w| w[0] > w[1]), "{radii:?}");
    }

    #[test]
    fn an_area_of_few_cells_claims_more_than_its_spread() {
        let many = area_accuracy(10_000.0, 1_000_000);
        assert!((many - 8_200.0).abs() < 1.0, "{many}");
        // Five cells: sqrt(2) wider; one cell: sqrt(6).
        assert!((area_accuracy(10_000.0, 5) - 8_200.0 * 2f64.sqrt()).abs() < 1e-6);
        assert!((area_accuracy(10_000.0, 1) - 8_200.0 * 6f64.sqrt()).abs() < 1e-6);
        assert_eq!(area_accuracy(10.0, 100), MIN_CELL_ACCURACY_M);
    }

    #[test]
    fn cells_far_apart_for_their_ranges_claim_more_than_their_spread() {
        let well_sampled = 1_000_000;
        let k = SPREAD_SCALE;
        // Anchors as far apart as the cells reach: the spread itself.
        assert!((cells_accuracy(500.0, 500.0, well_sampled) - 500.0 * k).abs() < 1.0);
        // Overlapping coverage (spread a quarter of the range): 0.25^0.6 = 0.44 of the spread.
        let quarter = 500.0 * 0.25f64.powf(SPREAD_RANGE_EXP) * k;
        assert!((cells_accuracy(500.0, 2_000.0, well_sampled) - quarter).abs() < 1.0);
        // Barely overlapping (spread four times the range): 4^0.6 = 2.3 times the spread.
        let four = 500.0 * 4f64.powf(SPREAD_RANGE_EXP) * k;
        assert!((cells_accuracy(500.0, 125.0, well_sampled) - four).abs() < 1.0);
        // Co-located estimates still carry the crowd means' error.
        assert!((cells_accuracy(0.0, 1_000.0, 25) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn fewer_cells_claim_more_of_their_spread() {
        let f: Vec<f64> = (2..=7).map(count_factor).collect();
        assert!(f.windows(2).all(|w| w[0] > w[1]));
        // about twice the spread model's radius for 2 cells, 0.7 of it for 7
        assert!((f[0] - 2.02).abs() < 0.02 && (f[5] - 0.71).abs() < 0.02);
        assert!((count_factor(5) - 1.0).abs() < 0.1);
    }
}
