//! Cell evidence: multilateration of the known cells weighted by signal and by
//! how tightly each cell's coverage is known, the serving cell's timing advance
//! as a distance ring, and the LAC/TAC area fallback.

use super::lookup::{candidate_radios, SeenCell};
use super::query::{Answer, CellObs, Fallback, Source};
use super::weights::cell_signal_weight;
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;
use crate::store::Database;

/// Scale from a cell's published range (the farthest sighting) to the radius
/// that holds the device with the engine's confidence; calibrated on the simulator.
pub const SINGLE_CELL_ACCURACY_FACTOR: f64 = 0.75;
/// Scale from the weighted spread of the cells to the accuracy radius.
pub const MULTI_CELL_ACCURACY_FACTOR: f64 = 1.0;
/// Scale from an area's covering radius (90% of its cells' reach) to the accuracy radius.
pub const AREA_ACCURACY_FACTOR: f64 = 0.8;
/// The least a cell answer claims: cell positions are crowd estimates.
const MIN_CELL_ACCURACY_M: f64 = 50.0;
/// Cells with no published range are treated as this wide.
const DEFAULT_RANGE_M: f64 = 1_000.0;

fn range_of(c: &SeenCell) -> f64 {
    if c.range_m > 0.0 {
        c.range_m
    } else {
        DEFAULT_RANGE_M
    }
}

pub fn solve(cells: &[SeenCell], now: i64) -> Option<Answer> {
    let first = cells.first()?;
    let frame = LocalFrame::new(first.lat, first.lon);
    let mut pts = Vec::with_capacity(cells.len());
    let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for c in cells {
        let (x, y) = frame.to_xy(c.lat, c.lon);
        let r = range_of(c).max(100.0);
        let mut w = cell_signal_weight(c.radio, c.signal) / r;
        if c.serving && c.signal.is_none() {
            w *= 2.0;
        }
        pts.push((x, y, w, r));
        sw += w;
        sx += w * x;
        sy += w * y;
    }
    let (mut px, mut py) = (sx / sw, sy / sw);

    // The spread of the evidence around the estimate, each cell counting with its
    // own uncertainty (half its range): the basis of the accuracy radius.
    let spread = |px: f64, py: f64| {
        let s: f64 = pts
            .iter()
            .map(|&(x, y, w, r)| w * ((x - px).powi(2) + (y - py).powi(2) + (r * 0.5).powi(2)))
            .sum();
        (s / sw).sqrt()
    };
    let mut accuracy = if cells.len() == 1 {
        range_of(first) * SINGLE_CELL_ACCURACY_FACTOR
    } else {
        spread(px, py) * MULTI_CELL_ACCURACY_FACTOR
    };

    if let Some((d, tol)) = cells.iter().find(|c| c.serving).and_then(|c| c.ta_m) {
        let (cx, cy) = frame.to_xy(first.lat, first.lon);
        let (dx, dy) = (px - cx, py - cy);
        let len = (dx * dx + dy * dy).sqrt();
        if len > 1.0 {
            // The other cells give the bearing, the timing advance the distance.
            px = cx + dx / len * d;
            py = cy + dy / len * d;
            accuracy = accuracy.min(spread(px, py)).max(tol);
        } else {
            // The ring alone: every bearing is possible, the centre is `d` from all of them.
            accuracy = accuracy.min(d + tol);
        }
    }

    let (lat, lon) = frame.to_latlon(px, py);
    let samples: u32 = cells.iter().map(|c| c.samples).sum();
    let newest = cells.iter().map(|c| c.updated).max().unwrap_or(0);
    Some(Answer {
        lat,
        lon,
        accuracy_m: accuracy.max(MIN_CELL_ACCURACY_M),
        fallback: if cells.iter().any(|c| c.via_short_cid) {
            super::Fallback::Scf
        } else {
            Fallback::None
        },
        aged: samples <= 1 || newest < now - AGED_AFTER_S,
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
