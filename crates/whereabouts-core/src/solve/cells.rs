//! Cell evidence: multilateration of the known cells weighted by signal and by
//! how many sightings back each estimate, an LTE serving cell's timing advance as
//! a distance from its inferred mast, and the LAC/TAC area fallback.

use super::lookup::{candidate_radios, SeenCell};
use super::query::{Answer, CellObs, Fallback, Source};
use super::weights::cell_signal_weight;
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;
use crate::store::Database;

/// Accuracy of a cell answer: the cells' signal-weighted range times
/// `ACCURACY_SPREAD + ACCURACY_ESTIMATE / sqrt(samples)`. The first term is where a
/// device can be inside the coverage, the second the standard error of a crowd mean
/// of `samples` sightings (median over the cells). Chosen on both evaluation sets
/// (bench/accuracy.ts, the simulator; bench/cork.ts, real drive tests) to keep the share
/// of true positions inside near [`super::CONFIDENCE`]: the simulator alone favours no
/// floor, but stations learned from thousands of real sightings then claim a tenth of
/// their range and hold only a fifth of the positions.
pub const ACCURACY_SPREAD: f64 = 0.3;
pub const ACCURACY_ESTIMATE: f64 = 1.5;
/// A position from a timing advance and a mast is tighter than the cells' ranges say.
const TA_ACCURACY_SCALE: f64 = 0.6;
/// Scale from an area's covering radius (90% of its cells' reach) to the accuracy radius.
pub const AREA_ACCURACY_FACTOR: f64 = 0.45;
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
    let (mut sw, mut sx, mut sy, mut sr) = (0.0, 0.0, 0.0, 0.0);
    for c in cells {
        let (x, y) = frame.to_xy(c.lat, c.lon);
        let w = weight(c);
        sw += w;
        sx += w * x;
        sy += w * y;
        sr += w * range_of(c);
    }
    let (mut px, mut py) = (sx / sw, sy / sw);
    let mut samples: smallvec::SmallVec<[u32; 8]> =
        cells.iter().map(|c| c.samples.max(1)).collect();
    samples.sort_unstable();
    let median_samples = samples[samples.len() / 2] as f64;
    let mut accuracy = sr / sw * (ACCURACY_SPREAD + ACCURACY_ESTIMATE / median_samples.sqrt());

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
