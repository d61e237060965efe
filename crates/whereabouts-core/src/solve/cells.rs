//! Cell evidence: multilateration of the known cells weighted by signal and by
//! how many sightings back each estimate, an LTE serving cell's timing advance as
//! a distance from its inferred mast, and the LAC/TAC area fallback.

use super::lookup::{candidate_radios, SeenCell};
use super::query::{Answer, CellObs, Fallback, Source};
use super::weights::cell_signal_weight;
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
/// estimates around the answer, inflated by sqrt(S / range). Cells whose estimates lie far
/// apart for their ranges barely share coverage, and a weighted mean then interpolates poorly
/// between them: with the spread alone the radius held 84% in dense urban networks and 51% in
/// sparse rural ones; with the inflation both sit near 68% (bench/accuracy.ts, docs/positioning.md).
pub const SPREAD_SCALE: f64 = 1.0;
/// A position from a timing advance and a mast is tighter than the cells' ranges say.
const TA_ACCURACY_SCALE: f64 = 0.7;
/// Scale from an area's covering radius (90% of its cells' reach) to the accuracy radius.
pub const AREA_ACCURACY_FACTOR: f64 = 0.5;
/// The least a cell answer claims: cell positions are crowd estimates.
const MIN_CELL_ACCURACY_M: f64 = 50.0;
/// Cells with no published range are treated as this wide.
const DEFAULT_RANGE_M: f64 = 1_000.0;
/// Crowd estimates from few sightings are noisy: a cell's weight grows with its
/// samples and saturates around this many.
const SAMPLES_HALF_WEIGHT: f64 = 20.0;

fn range_of(c: &SeenCell) -> f64 {
    if c.range_m > 0.0 {
        c.range_m
    } else {
        DEFAULT_RANGE_M
    }
}

/// How much a cell's estimate says about the device: its signal, how many sightings
/// back the estimate, and (weakly) how tight its coverage is.
fn weight(c: &SeenCell) -> f64 {
    let samples = c.samples.max(1) as f64;
    let mut w = cell_signal_weight(c.radio, c.signal) * samples
        / (samples + SAMPLES_HALF_WEIGHT)
        / range_of(c).max(100.0).sqrt();
    if c.serving && c.signal.is_none() {
        w *= 2.0;
    }
    w
}

pub fn solve(cells: &[SeenCell], now: i64) -> Option<Answer> {
    let first = cells.first()?;
    let frame = LocalFrame::new(first.lat, first.lon);
    let (mut sw, mut sx, mut sy, mut sr, mut s2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for c in cells {
        let (x, y) = frame.to_xy(c.lat, c.lon);
        let w = weight(c);
        sw += w;
        sx += w * x;
        sy += w * y;
        sr += w * range_of(c);
        s2 += w * (x * x + y * y);
    }
    let (mut px, mut py) = (sx / sw, sy / sw);
    let mut samples: smallvec::SmallVec<[u32; 8]> =
        cells.iter().map(|c| c.samples.max(1)).collect();
    samples.sort_unstable();
    let median_samples = samples[samples.len() / 2];
    // The frame's origin is the first cell, so the coordinates are a few kilometres at most
    // and E[d^2] - |mean|^2 keeps its precision; max(0) absorbs rounding.
    let spread = (s2 / sw - (px * px + py * py)).max(0.0).sqrt();
    let mut accuracy = if cells.len() == 1 {
        single_cell_accuracy(range_of(first), median_samples)
    } else {
        cells_accuracy(spread, sr / sw, median_samples)
    };

    // A timing advance is a distance from the mast, not from the crowd estimate: use
    // it only where the mast is known, in the direction the evidence points to.
    if let Some(((d, tol), (tlat, tlon))) = cells
        .iter()
        .find(|c| c.serving)
        .and_then(|c| c.ta_m.zip(c.tower))
    {
        let (tx, ty) = frame.to_xy(tlat, tlon);
        let (ex, ey) = frame.to_xy(first.lat, first.lon);
        // The serving sector's estimate gives the azimuth; the other cells refine it.
        let (bx, by) = ((ex + px) / 2.0 - tx, (ey + py) / 2.0 - ty);
        let len = bx.hypot(by);
        if len > 1.0 {
            px = tx + bx / len * d;
            py = ty + by / len * d;
            accuracy = (accuracy * TA_ACCURACY_SCALE).max(tol);
        }
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

/// The 68% radius of a single cell's answer: its coverage spread and the standard error of
/// its crowd estimate, in quadrature.
fn single_cell_accuracy(range_m: f64, samples: u32) -> f64 {
    range_m
        * (SINGLE_SPREAD * SINGLE_SPREAD + ESTIMATE_ERROR * ESTIMATE_ERROR / samples as f64).sqrt()
}

/// The 68% radius of a multi-cell answer from the weighted spread of the cells' estimates
/// around it, their weighted range and median samples.
fn cells_accuracy(spread_m: f64, range_m: f64, samples: u32) -> f64 {
    let between = SPREAD_SCALE * spread_m * (spread_m / range_m.max(1.0)).sqrt();
    let estimate = ESTIMATE_ERROR * range_m / (samples as f64).sqrt();
    between.hypot(estimate)
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
                        accuracy_m: (a.range_m as f64 * AREA_ACCURACY_FACTOR)
                            .max(MIN_CELL_ACCURACY_M),
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

    #[test]
    fn a_single_cell_radius_is_its_spread_once_the_estimate_is_well_sampled() {
        assert!((single_cell_accuracy(1_000.0, 1_000_000) - 550.0).abs() < 0.2);
        // One sighting: the estimate's own error, half the range, adds in quadrature.
        assert!((single_cell_accuracy(1_000.0, 1) - 0.55f64.hypot(0.5) * 1_000.0).abs() < 1e-9);
    }

    #[test]
    fn cells_far_apart_for_their_ranges_claim_more_than_their_spread() {
        let well_sampled = 1_000_000;
        // Estimates as far apart as the cells reach: the spread itself.
        assert!((cells_accuracy(500.0, 500.0, well_sampled) - 500.0).abs() < 1.0);
        // Overlapping coverage (spread a quarter of the range): half the spread.
        assert!((cells_accuracy(500.0, 2_000.0, well_sampled) - 250.0).abs() < 1.0);
        // Barely overlapping (spread four times the range): twice the spread.
        assert!((cells_accuracy(500.0, 125.0, well_sampled) - 1_000.0).abs() < 1.0);
        // Co-located estimates still carry the crowd means' error.
        assert!((cells_accuracy(0.0, 1_000.0, 25) - 100.0).abs() < 1e-9);
    }
}
