//! One station's position from its observations: weights, a robust centre that
//! drops inconsistent observations, the covering radius, and the moved-station
//! test. The reasoning behind each constant is in docs/learning.md.

use std::collections::{HashMap, HashSet};

use super::Observation;
use crate::geo::{distance_m, LocalFrame};
use crate::solve::{ta_interval, ta_middle_m, CONFIDENCE, MIN_CELL_ACCURACY_M};
use crate::store::netstats::{AdvancePoint, LevelPoint, MAX_ADVANCE_STEPS};
use crate::store::record::Station;

/// Assumed GPS error when a row does not state one (G-NetTrack never does):
/// a phone's typical open-sky fix.
pub const DEFAULT_GPS_ACCURACY_M: f64 = 20.0;
/// No fix is better than this, however confident it claims to be: one metre
/// fixes must not outweigh a hundred ten-metre ones.
const MIN_GPS_ACCURACY_M: f64 = 5.0;
/// GPS fixes and radio measurements are not taken at the same instant: a moving
/// device's fix is off by about its speed times this lag.
const GPS_LAG_S: f64 = 1.0;
/// Observations lose half their weight per this age, counted back from the
/// station's newest observation (not the wall clock, so learning old files
/// weighs them as learning them live would have).
const AGE_HALF_LIFE_S: f64 = 180.0 * 86_400.0;
/// Signal weight 10^((s - ref) / SIGNAL_DB_PER_DECADE): stronger readings come
/// from nearer the mast, so they count more: a reading 6 dB stronger counts 1.58
/// times. Devices hear a cell mostly on one side of its mast (a sector), so an
/// unweighted centre sits out in the sector; the weight draws it back toward the
/// mast, which every drive through the cell passes near. Fitted with the mode
/// below by cross-validation on the Cork learn files (`npx tsx bench/cork.ts --cv`;
/// docs/learning.md); 20 dB, the field amplitude's 1/d, overshoots.
const SIGNAL_DB_PER_DECADE: f64 = 30.0;
/// A timing advance is a direct distance: weight falls as TA_REF / (TA_REF + d).
const TA_REF_M: f64 = 500.0;
/// Drop observations farther from the robust centre than this many times the
/// weighted median distance (a disk's covering radius is 1.4 times its median
/// distance, so only points well beyond the bulk go).
const OUTLIER_FACTOR: f64 = 3.0;
/// ... but never closer than this: a tight cluster of fixes plus a few honest
/// ones at the edge of coverage is not an inconsistency.
const MIN_OUTLIER_CELL_M: f64 = 500.0;
const MIN_OUTLIER_WIFI_M: f64 = 100.0;
/// A cell's range is this many times the distance within which 90% of its kept
/// sightings lie. The sightings are where the learning drives went, a part of the
/// cell's coverage: the next device is often elsewhere in it. The solver's single-cell
/// radius (0.55 of the range, `solve::params::SINGLE_SPREAD`) then holds 68% of the
/// held-out fold's rows in three-fold cross-validation on the Cork learn files
/// (`npx tsx bench/cork.ts --cv`; docs/learning.md), where the farthest sighting holds too
/// few. WiFi keeps the farthest sighting: no WiFi data here to fit on.
const RANGE_PER_P90_CELL: f64 = 2.0;
/// A timing advance says how far from the mast the device was; a device served by the cell
/// is within the advances' reach of the mast, and so, the estimate lying among the sightings,
/// within about twice that of the estimate: the range is at least this many times the
/// distance holding 90% of the advances. Chosen on direction A of the Dakar logs
/// (`npx tsx bench/traces.ts --set dakar --cv`; docs/learning.md), where the sightings of a
/// walk past a cell cover a small part of its coverage and their spread alone holds 20% of
/// the other part's rows; 2 holds 60% on the cells with advances, 1 holds 53%.
const RANGE_PER_TA_CELL: f64 = 2.0;
/// A cell's range is shrunk towards this prior, which counts as this many passes: sightings
/// from one or two passes (a drive or walk past) show a strip of the coverage, not how far
/// it reaches; many passes outweigh the prior. 500 m, a typical urban cell's reach, and one
/// pass: chosen on direction A of the Dakar logs (pooled inside share 66%; 300 m gives 47%,
/// 700 m 79%), and leaving the Cork cross-validation folds' inside shares within 66% to 72%
/// (their cells are seen on many drives).
const RANGE_PRIOR_CELL_M: f64 = 500.0;
const RANGE_PRIOR_PASSES: f64 = 1.0;
/// A cell's positions by received level: at each level a multiple of `LEVEL_STEP_DB` within
/// its sightings, the mode (`MODE_KERNEL_CELL_M`) of its sightings within `LEVEL_WINDOW_DB` of
/// it, when there are at least `LEVEL_MIN_SIGHTINGS` from `LEVEL_MIN_PASSES` passes. Along
/// the roads a cell's devices travel its level rises and falls in the same places every time,
/// so where the learning drives heard it at a level is where the next device at that level
/// is; one pass says nothing of that. The window: 3, 4 and 6 dB in a prototype on three folds
/// of the Cork learn files (3 and 4 alike, 6 worse in every fold); the passes: the Dakar logs'
/// direction A, whose walks' levels are one street's (docs/experiments.md).
const LEVEL_STEP_DB: i32 = 2;
const LEVEL_WINDOW_DB: f64 = 4.0;
const LEVEL_MIN_SIGHTINGS: usize = 5;
const LEVEL_MIN_PASSES: usize = 2;
/// At most this many sightings are searched for a level's mode (every n-th beyond): a phone
/// left logging in one place gives tens of thousands at one level.
const LEVEL_MAX_SIGHTINGS: usize = 2_000;
/// The least covering radius we publish: a handful of fixes in one spot says
/// little about how far the station reaches.
const MIN_RANGE_CELL_M: f64 = 100.0;
const MIN_RANGE_WIFI_M: f64 = 30.0;
/// Gaussian kernel of the mode search that ends the estimate: the centre moves
/// from the trimmed mean to the densest place of the (weighted) observations
/// within about this distance. Where devices that hear a cell crowd (its main
/// roads, its strong-signal core) is where the next device most likely is, and
/// a mean is pulled off that place by a long tail of coverage along one road.
/// Fitted by cross-validation on the Cork learn files (`npx tsx bench/cork.ts --cv`;
/// docs/learning.md). Cells only: an access
/// point's sightings are a small disk around it without roads to crowd on, and
/// no WiFi data here says otherwise, so WiFi keeps the trimmed mean.
const MODE_KERNEL_CELL_M: f64 = 200.0;
/// Sightings of a cell less than this apart in time belong to one pass (a drive
/// through it, a stay in it); a longer silence starts a new pass. Drive-test rows
/// come every second or so, and separate drives hours or days apart.
const PASS_GAP_S: i64 = 600;
/// A cell's sighting counts once more for every further pass with a sighting
/// within this distance of it (the mode's kernel): a road driven on many days will
/// see the next device, a spot one phone sat at for an hour may not. Time still
/// counts within a pass (a long stay outweighs a quick drive-by, as where devices
/// spend time is where the next one will be), but a place's recurrence counts
/// too. Multiplying by the number of passes, not a power of it, and the kernel's
/// reach: cross-validation on the Cork learn files (`npx tsx bench/cork.ts --cv`;
/// docs/learning.md).
const PASS_REACH_M: f64 = MODE_KERNEL_CELL_M;
/// Passes are counted on one sighting per pass per square of this side: a
/// phone that stays put logs thousands of rows in one place.
const PASS_SQUARE_M: f64 = 10.0;

/// The [`PASS_SQUARE_M`] square holding a local coordinate, along one axis: with the pass, what
/// counts as one place.
fn square(v: f64) -> i64 {
    (v / PASS_SQUARE_M).round() as i64
}
/// The mode search stops when a step moves less than this, or after this many steps.
const MODE_TOLERANCE_M: f64 = 0.5;
const MODE_MAX_STEPS: usize = 50;

/// A station's learned position.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub lat: f64,
    pub lon: f64,
    /// Radius of the station's coverage, metres: for WiFi the farthest kept
    /// observation, for cells twice the distance holding 90% of them or of their timing
    /// advances, shrunk towards a prior (`RANGE_PRIOR_CELL_M`) when few passes saw the cell.
    pub range_m: f64,
    /// Observations kept.
    pub samples: u32,
    /// Observations dropped as inconsistent.
    pub rejected: u32,
    /// Unix seconds of the oldest and newest kept observations with a time.
    pub first: Option<i64>,
    pub last: Option<i64>,
    /// PSC/PCI of the newest observation that knows it.
    pub psc: Option<u16>,
    /// Cells: where the sightings lay by received level (`LEVEL_STEP_DB`); empty for WiFi and
    /// for cells without enough sightings with a level.
    pub levels: Vec<LevelPoint>,
}

impl Estimate {
    /// A stored station's place and reach, to set beside a new estimate of it ([`far_apart`]).
    pub fn of_station(s: &Station) -> Estimate {
        Estimate {
            lat: s.lat(),
            lon: s.lon(),
            range_m: s.range_m() as f64,
            samples: s.samples(),
            rejected: 0,
            first: None,
            last: None,
            psc: s.psc(),
            levels: Vec::new(),
        }
    }
}

fn weight(o: &Observation, newest: Option<i64>) -> f64 {
    let acc = o
        .accuracy_m
        .unwrap_or(DEFAULT_GPS_ACCURACY_M)
        .max(MIN_GPS_ACCURACY_M);
    let lag = o.speed_mps.unwrap_or(0.0) * GPS_LAG_S;
    let mut w = 1.0 / (acc * acc + lag * lag);
    if let (Some(n), Some(t)) = (newest, o.time) {
        w *= 0.5f64.powf((n - t).max(0) as f64 / AGE_HALF_LIFE_S);
    }
    if let Some(s) = o.signal_dbm {
        // Relative to -100 dBm only to keep numbers near 1; clamped so that one
        // freak reading cannot take over.
        w *= 10f64.powf(((s + 100.0) / SIGNAL_DB_PER_DECADE).clamp(-3.0, 3.0));
    }
    if let Some(d) = o.ta_m {
        w *= TA_REF_M / (TA_REF_M + d);
    }
    w
}

/// The weighted median of `v` (pairs of value and weight); sorts `v`.
fn weighted_median(v: &mut [(f64, f64)]) -> f64 {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|p| p.1).sum();
    let mut acc = 0.0;
    for &(x, w) in v.iter() {
        acc += w;
        if acc >= total / 2.0 {
            return x;
        }
    }
    v.last().map_or(0.0, |p| p.0)
}

/// Mean-shift from `start` to the nearest mode of the weighted points
/// `(x, y, weight)` under a Gaussian kernel of `kernel` metres.
fn mode(
    pts: impl Iterator<Item = (f64, f64, f64)> + Clone,
    start: (f64, f64),
    kernel: f64,
) -> (f64, f64) {
    let (mut cx, mut cy) = start;
    for _ in 0..MODE_MAX_STEPS {
        let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
        for (x, y, w) in pts.clone() {
            let d = (x - cx).hypot(y - cy) / kernel;
            let k = w * (-0.5 * d * d).exp();
            sw += k;
            sx += k * x;
            sy += k * y;
        }
        // Every point beyond the kernel's reach (underflow): stay at the mean.
        if sw <= 0.0 {
            break;
        }
        let (nx, ny) = (sx / sw, sy / sw);
        let step = (nx - cx).hypot(ny - cy);
        (cx, cy) = (nx, ny);
        if step < MODE_TOLERANCE_M {
            break;
        }
    }
    (cx, cy)
}

/// The positions by level of a cell's sightings ([`LEVEL_STEP_DB`]): `pts` are the local
/// positions and weights of `obs`. All of them (of the operator's own), not only those the estimate kept: the far
/// ends of a cell's roads, which the estimate's trim drops, are where it is heard weakest,
/// and a level's mode of five sightings or more stands off a stray fix.
fn level_points(
    obs: &[Observation],
    pts: &[(f64, f64, f64)],
    pass: &[u32],
    frame: &LocalFrame,
) -> Vec<LevelPoint> {
    // The operator's own sightings only, as for masts (`learn::masts`): a level's position
    // answers every device heard at it, so one token's few submissions at a level nobody
    // else reported would place them.
    let mut heard: Vec<(f64, (f64, f64, f64), u32)> = obs
        .iter()
        .zip(pts)
        .zip(pass)
        .filter(|((o, _), _)| o.source.is_none())
        // The levels the statistics file can hold (`netstats::parse_levels_text`): a reader
        // that let another through must not make the file unreadable.
        .filter_map(|((o, &p), &k)| {
            let s = o.signal_dbm.filter(|s| (-200.0..=0.0).contains(s))?;
            Some((s, p, k))
        })
        .collect();
    if heard.len() < LEVEL_MIN_SIGHTINGS {
        return Vec::new();
    }
    heard.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (lo, hi) = (heard[0].0, heard[heard.len() - 1].0);
    let mut out = Vec::new();
    let mut level = (lo / LEVEL_STEP_DB as f64).ceil() as i32 * LEVEL_STEP_DB;
    while level as f64 <= hi {
        let l = level as f64;
        let from = heard.partition_point(|h| h.0 < l - LEVEL_WINDOW_DB);
        let to = heard.partition_point(|h| h.0 <= l + LEVEL_WINDOW_DB);
        if let Some((x, y, spread)) = mode_and_spread(&heard[from..to]) {
            let (lat, lon) = frame.to_latlon(x, y);
            out.push(LevelPoint {
                dbm: level as i16,
                lat,
                lon,
                spread_m: spread as f32,
            });
        }
        level += LEVEL_STEP_DB;
    }
    out
}

/// The positions by timing advance of a cell's sightings around its site's learned mast
/// (`mast`, latitude and longitude; `step` metres an advance): for each advance a device may
/// report, the mode of the sightings whose distance from the mast that advance allows
/// (`solve::ta_interval`, the distances the solver holds a row with that advance to), with
/// their spread, as for a level (`mode_and_spread`: five sightings from two passes or
/// more). Every sighting counts, with or without an advance of its own: the advance only
/// says how far from the mast, and the sightings at that distance say where around it the
/// learning's devices were. Along the streets a cell's devices travel, the ring of an
/// advance crosses them in a few places, so where the learning heard the cell at that
/// distance is where the next device that reports the advance is; the cell's estimate, a
/// mode over all its distances, says less of it (docs/experiments.md).
pub fn advance_points(obs: &[Observation], mast: (f64, f64), step: f64) -> Vec<AdvancePoint> {
    let frame = LocalFrame::new(mast.0, mast.1);
    let (pts, pass) = weighted_points(obs, &frame, false);
    // The operator's own sightings only, as for levels.
    let mut own: Vec<(f64, (f64, f64, f64), u32)> = obs
        .iter()
        .zip(&pts)
        .zip(&pass)
        .filter(|((o, _), _)| o.source.is_none())
        .map(|((_, &p), &k)| (p.0.hypot(p.1), p, k))
        .collect();
    if own.len() < LEVEL_MIN_SIGHTINGS || step.is_nan() || step <= 0.0 {
        return Vec::new();
    }
    own.sort_by(|a, b| a.0.total_cmp(&b.0));
    let farthest = own[own.len() - 1].0;
    let mut out = Vec::new();
    for steps in 0..=MAX_ADVANCE_STEPS {
        let (lo, hi) = ta_interval(ta_middle_m(f64::from(steps), step), step);
        if lo > farthest {
            break;
        }
        let from = own.partition_point(|h| h.0 < lo);
        let to = own.partition_point(|h| h.0 <= hi);
        if let Some((x, y, spread)) = mode_and_spread(&own[from..to]) {
            let (lat, lon) = frame.to_latlon(x, y);
            out.push(AdvancePoint {
                steps,
                lat,
                lon,
                spread_m: spread as f32,
            });
        }
    }
    out
}

/// The mode of the sightings `near` one level or advance (the level or distance, local
/// position and weight, pass) and their spread around it: the distance within which the next
/// pass's device would be with 68% probability ([`held_out_spread`]). None with too few
/// sightings or passes.
fn mode_and_spread(near: &[(f64, (f64, f64, f64), u32)]) -> Option<(f64, f64, f64)> {
    if near.len() < LEVEL_MIN_SIGHTINGS {
        return None;
    }
    let mut by_pass: HashMap<u32, (f64, f64, f64)> = HashMap::new();
    for h in near {
        let e = by_pass.entry(h.2).or_default();
        e.0 += 1.0;
        e.1 += h.1 .0;
        e.2 += h.1 .1;
    }
    if by_pass.len() < LEVEL_MIN_PASSES {
        return None;
    }
    let stride = near.len().div_ceil(LEVEL_MAX_SIGHTINGS);
    let sample = near.iter().step_by(stride).map(|h| h.1);
    let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for (x, y, w) in sample.clone() {
        sw += w;
        sx += w * x;
        sy += w * y;
    }
    if sw <= 0.0 {
        return None;
    }
    let (cx, cy) = mode(sample, (sx / sw, sy / sw), MODE_KERNEL_CELL_M);
    Some((cx, cy, held_out_spread(near, &by_pass, (cx, cy))))
}

/// How far from `centre` the next pass's device at this level may be: each sighting's
/// distance from the centre as its own pass's absence would have moved it (the mean of the
/// other passes' sightings less the mean of all, added to `centre`: a pass that alone pulled
/// the position its way is measured from where the others put it), and of those distances the
/// one a new one stays within with 68% probability: rank 0.68 (n + 1) of n, interpolated (the
/// order statistics' coverage, k / (n + 1) for the k-th smallest).
///
/// Why both: the distances from a position fitted on the same sightings understate a new
/// one's. On the world families' independent sightings, where a level has 5 to 30 of them,
/// the 68% quantile of those distances held 49% of held-out rows with 5-9 sightings and 59-66%
/// with 10-30; by the rank 0.68 (n + 1) 60-65% and 64-70%. On drives and walks the sightings
/// come in passes along one road, and the pass, not the sighting, is the unit a new device
/// repeats: a level seen on two passes of other streets is as uncertain as they lie apart
/// (docs/experiments.md).
///
/// Every sighting counts, as every request does: a phone that logs for hours in one place is
/// where the next rows will come from. But a level that is tight only because a phone sat
/// still is tight about one spot, and a device moving through the cell at that level may be
/// anywhere along its road: so the spread is at least the same distance over the places
/// (one sighting per pass and [`PASS_SQUARE_M`] square), up to the least a cell answer
/// claims ([`MIN_CELL_ACCURACY_M`]), which a level seen at fewer places than a level needs
/// sightings ([`LEVEL_MIN_SIGHTINGS`]) keeps. A level whose places are as tight as its
/// sightings was walked or driven there, on several passes, and claims what they show.
fn held_out_spread(
    near: &[(f64, (f64, f64, f64), u32)],
    by_pass: &HashMap<u32, (f64, f64, f64)>,
    (cx, cy): (f64, f64),
) -> f64 {
    let n = near.len() as f64;
    let (tx, ty) = by_pass
        .values()
        .fold((0.0, 0.0), |(ax, ay), p| (ax + p.1, ay + p.2));
    let d: Vec<f64> = near
        .iter()
        .map(|h| {
            // Two passes or more (`LEVEL_MIN_PASSES`), so the others have sightings.
            let (k, kx, ky) = by_pass[&h.2];
            let ox = (tx - kx) / (n - k) - tx / n;
            let oy = (ty - ky) / (n - k) - ty / n;
            (h.1 .0 - cx - ox).hypot(h.1 .1 - cy - oy)
        })
        .collect();
    let mut seen = HashSet::new();
    let by_place: Vec<f64> = d
        .iter()
        .zip(near)
        .filter(|(_, h)| seen.insert((h.2, square(h.1 .0), square(h.1 .1))))
        .map(|(&d, _)| d)
        .collect();
    let over_places = if by_place.len() < LEVEL_MIN_SIGHTINGS {
        MIN_CELL_ACCURACY_M
    } else {
        held_out_quantile(by_place).min(MIN_CELL_ACCURACY_M)
    };
    held_out_quantile(d).max(over_places)
}

/// Of `d`, the distance a further one stays within with 68% probability: rank 0.68 (n + 1)
/// of the n, interpolated ([`held_out_spread`]). `d` is not empty.
fn held_out_quantile(mut d: Vec<f64>) -> f64 {
    d.sort_by(f64::total_cmp);
    let rank = CONFIDENCE * (d.len() as f64 + 1.0);
    let i = (rank.floor() as usize).clamp(1, d.len());
    let (below, above) = (d[i - 1], d[i.min(d.len() - 1)]);
    below + (above - below) * (rank - rank.floor())
}

/// Each observation's pass (1-based): sightings less than [`PASS_GAP_S`] apart in time share
/// one; a sighting without a time is a pass of its own.
fn pass_ids(obs: &[Observation]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..obs.len()).collect();
    order.sort_by_key(|&i| obs[i].time);
    let mut pass = vec![0u32; obs.len()];
    let mut next = 0u32;
    let mut prev: Option<i64> = None;
    for &i in &order {
        let t = obs[i].time;
        if !matches!((t, prev), (Some(t), Some(p)) if t - p <= PASS_GAP_S) {
            next += 1;
        }
        prev = t;
        pass[i] = next;
    }
    pass
}

/// The distance from the mast within which 90% of the kept sightings that carry a timing
/// advance lie, each taken a step beyond its stated distance (an observation states the
/// step's near edge). 0 without any.
fn ta_reach(obs: &[Observation], kept: &[usize]) -> f64 {
    let mut d: Vec<f64> = kept
        .iter()
        .filter_map(|&i| {
            let o = &obs[i];
            let super::StationKey::Cell { radio, .. } = o.key else {
                return None;
            };
            Some(o.ta_m? + radio.ta_step_m()?)
        })
        .collect();
    if d.is_empty() {
        return 0.0;
    }
    d.sort_by(f64::total_cmp);
    d[((d.len() - 1) as f64 * 0.9) as usize]
}

/// Sightings (local x, y and pass) by square of side [`PASS_REACH_M`].
type Bins = HashMap<(i64, i64), Vec<(f64, f64, u32)>>;

/// For each of `pts` (the local positions of `obs`), the number of passes with a
/// sighting within [`PASS_REACH_M`] of it, its own pass included. A sighting
/// without a time is a pass of its own: nothing ties it to the others.
fn passes_near(pass: &[u32], pts: &[(f64, f64, f64)]) -> Vec<u32> {
    let bin = |v: f64| (v / PASS_REACH_M).floor() as i64;
    // One representative sighting per pass and square, binned by the reach.
    let mut seen = HashSet::new();
    let mut bins: Bins = HashMap::new();
    for (p, &k) in pts.iter().zip(pass) {
        if seen.insert((square(p.0), square(p.1), k)) {
            bins.entry((bin(p.0), bin(p.1)))
                .or_default()
                .push((p.0, p.1, k));
        }
    }
    // Counted at each square's centre, once per square.
    let mut memo: HashMap<(i64, i64), u32> = HashMap::new();
    let mut near = Vec::new();
    pts.iter()
        .map(|p| {
            let (sx, sy) = (square(p.0), square(p.1));
            *memo.entry((sx, sy)).or_insert_with(|| {
                let (x, y) = (sx as f64 * PASS_SQUARE_M, sy as f64 * PASS_SQUARE_M);
                near.clear();
                for bx in bin(x) - 1..=bin(x) + 1 {
                    for by in bin(y) - 1..=bin(y) + 1 {
                        let reps = bins.get(&(bx, by)).map_or(&[][..], |v| v);
                        near.extend(
                            reps.iter()
                                .filter(|r| (r.0 - x).hypot(r.1 - y) <= PASS_REACH_M)
                                .map(|r| r.2),
                        );
                    }
                }
                near.sort_unstable();
                near.dedup();
                near.len().max(1) as u32
            })
        })
        .collect()
}

/// Each sighting's position in `frame` with its weight ([`weight`]; for a cell, times the
/// passes near it, [`passes_near`]), and each sighting's pass (empty for WiFi). Passes: cells
/// only, like the mode: fitted on drive tests, and no WiFi data here says how access points'
/// sightings recur.
fn weighted_points(
    obs: &[Observation],
    frame: &LocalFrame,
    wifi: bool,
) -> (Vec<(f64, f64, f64)>, Vec<u32>) {
    let newest = obs.iter().filter_map(|o| o.time).max();
    let mut pts: Vec<(f64, f64, f64)> = obs
        .iter()
        .map(|o| {
            let (x, y) = frame.to_xy(o.lat, o.lon);
            (x, y, weight(o, newest))
        })
        .collect();
    let pass = if wifi { Vec::new() } else { pass_ids(obs) };
    if !wifi {
        let passes = passes_near(&pass, &pts);
        for (p, n) in pts.iter_mut().zip(passes) {
            p.2 *= f64::from(n);
        }
    }
    (pts, pass)
}

/// Estimates a station from its observations (any order); None without any.
pub fn estimate(obs: &[Observation], wifi: bool) -> Option<Estimate> {
    let first = obs.first()?;
    let frame = LocalFrame::new(first.lat, first.lon);
    let (pts, pass) = weighted_points(obs, &frame, wifi);
    let min_outlier = if wifi {
        MIN_OUTLIER_WIFI_M
    } else {
        MIN_OUTLIER_CELL_M
    };
    // Robust start: the coordinate-wise weighted median, which a minority of
    // wild fixes cannot drag away.
    let mut cx = weighted_median(&mut pts.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>());
    let mut cy = weighted_median(&mut pts.iter().map(|p| (p.1, p.2)).collect::<Vec<_>>());
    let mut keep = vec![true; pts.len()];
    // Twice: the first pass may start from a centre the outliers still pulled.
    for _ in 0..2 {
        let mut d: Vec<(f64, f64)> = pts
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(p, _)| ((p.0 - cx).hypot(p.1 - cy), p.2))
            .collect();
        let limit = (OUTLIER_FACTOR * weighted_median(&mut d)).max(min_outlier);
        for (p, k) in pts.iter().zip(keep.iter_mut()) {
            *k = (p.0 - cx).hypot(p.1 - cy) <= limit;
        }
        let (mut sw, mut sx, mut sy) = (0.0, 0.0, 0.0);
        for (p, _) in pts.iter().zip(&keep).filter(|(_, k)| **k) {
            sw += p.2;
            sx += p.2 * p.0;
            sy += p.2 * p.1;
        }
        if sw > 0.0 {
            cx = sx / sw;
            cy = sy / sw;
        }
    }
    let kept: Vec<usize> = (0..pts.len()).filter(|&i| keep[i]).collect();
    if !wifi {
        (cx, cy) = mode(kept.iter().map(|&i| pts[i]), (cx, cy), MODE_KERNEL_CELL_M);
    }
    let levels = if wifi {
        Vec::new()
    } else {
        level_points(obs, &pts, &pass, &frame)
    };
    let mut dists: Vec<f64> = kept
        .iter()
        .map(|&i| (pts[i].0 - cx).hypot(pts[i].1 - cy))
        .collect();
    dists.sort_by(f64::total_cmp);
    let reach = if wifi {
        dists.last().copied().unwrap_or(0.0)
    } else {
        // `kept` holds at least the half of the weight within the median distance.
        let p90 = dists
            .get(((dists.len().max(1) - 1) as f64 * 0.9) as usize)
            .copied()
            .unwrap_or(0.0);
        let own = (RANGE_PER_P90_CELL * p90).max(RANGE_PER_TA_CELL * ta_reach(obs, &kept));
        // Few passes have seen little of the coverage: shrink towards the prior, which
        // counts as RANGE_PRIOR_PASSES passes.
        let passes = {
            let mut ids: Vec<u32> = kept.iter().map(|&i| pass[i]).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len() as f64
        };
        (passes * own + RANGE_PRIOR_PASSES * RANGE_PRIOR_CELL_M) / (passes + RANGE_PRIOR_PASSES)
    };
    let (lat, lon) = frame.to_latlon(cx, cy);
    let times = kept.iter().filter_map(|&i| obs[i].time);
    let psc = kept
        .iter()
        .filter_map(|&i| obs[i].psc.map(|p| (obs[i].time, p)))
        .max()
        .map(|p| p.1);
    Some(Estimate {
        lat,
        lon,
        range_m: reach.max(if wifi {
            MIN_RANGE_WIFI_M
        } else {
            MIN_RANGE_CELL_M
        }),
        samples: kept.len() as u32,
        rejected: (pts.len() - kept.len()) as u32,
        first: times.clone().min(),
        last: times.max(),
        psc,
        levels,
    })
}

/// Recent observations are those within this much of the station's newest one.
pub const RECENT_S: i64 = 7 * 86_400;
/// A station has moved when its recent and older observations agree among
/// themselves but their centres lie at least this far apart...
pub const MOVED_MIN_M: f64 = 5_000.0;
/// ... and both sides have at least this many observations.
pub const MOVED_MIN_OBS: usize = 3;

/// Whether two estimates of the same station describe different places: their
/// centres are far apart and their covering disks do not even touch (a big
/// cell seen at different ends of its coverage is not a moved cell).
pub fn far_apart(a: &Estimate, b: &Estimate) -> bool {
    let d = distance_m(a.lat, a.lon, b.lat, b.lon);
    d >= MOVED_MIN_M && d > a.range_m + b.range_m
}

/// The time from which a station's observations describe a new place, if its
/// recent observations (`obs` sorted by time) sit far from the older ones, with the tokens
/// of the recent ones (None: trusted data among them). Submitted (untrusted) sightings
/// count only when independent tokens agree, on both sides: a token's own old-dated
/// sightings must not set up the "old place" that honest recent ones then seem to leave.
pub fn moved_at(obs: &[Observation], wifi: bool) -> Option<(i64, Option<Vec<u64>>)> {
    let newest = obs.iter().filter_map(|o| o.time).max()?;
    let split = obs.partition_point(|o| o.time.is_none_or(|t| t < newest - RECENT_S));
    let (old, recent) = obs.split_at(split);
    if old.len() < MOVED_MIN_OBS
        || recent.len() < MOVED_MIN_OBS
        || super::distinct_times(recent) < super::MOVED_MIN_TIMES
        || !super::agreed(old)
        || !super::agreed(recent)
    {
        return None;
    }
    let (a, b) = (estimate(old, wifi)?, estimate(recent, wifi)?);
    if far_apart(&a, &b) && !heard_there_before(obs, &a, &b) {
        Some((
            recent.first().and_then(|o| o.time)?,
            super::tokens_of(recent),
        ))
    } else {
        None
    }
}

/// Whether the station was heard at the new place `b` before it was last heard at the old
/// place `a` (each within its covering radius): a moved station leaves its old place for
/// good, where one heard at both places in turn is a big cell seen at two ends of its
/// coverage, or at the edge of a route walked on other days, whose newest sightings happen
/// to come from the rarer place.
fn heard_there_before(obs: &[Observation], a: &Estimate, b: &Estimate) -> bool {
    let within =
        |o: &Observation, e: &Estimate| distance_m(o.lat, o.lon, e.lat, e.lon) <= e.range_m;
    let Some(last_old) = obs
        .iter()
        .filter(|o| within(o, a))
        .filter_map(|o| o.time)
        .max()
    else {
        return false;
    };
    obs.iter()
        .any(|o| o.time.is_some_and(|t| t < last_old) && within(o, b))
}

#[cfg(test)]
mod tests {
    use super::super::StationKey;
    use super::*;
    use crate::geo::destination;

    fn at(lat: f64, lon: f64) -> Observation {
        Observation::bare(StationKey::Wifi(1), lat, lon)
    }

    fn ring(n: usize, r: f64) -> Vec<Observation> {
        (0..n)
            .map(|i| {
                let (la, lo) = destination(50.0, 8.0, i as f64 * 360.0 / n as f64, r);
                at(la, lo)
            })
            .collect()
    }

    /// Three passes a day apart over `n` places (`place(i)`), a second apart, heard 1 dB
    /// weaker at each; from `source`.
    fn three_passes(
        n: u32,
        place: impl Fn(u32) -> (f64, f64),
        source: Option<super::super::Source>,
    ) -> Vec<Observation> {
        (0..3)
            .flat_map(|day| (0..n).map(move |i| (day, i)))
            .map(|(day, i)| {
                let (lat, lon) = place(i);
                Observation {
                    time: Some(1_700_000_000 + day * 86_400 + i64::from(i)),
                    signal_dbm: Some(-70.0 - f64::from(i)),
                    source,
                    ..at(lat, lon)
                }
            })
            .collect()
    }

    #[test]
    fn levels_come_from_repeated_passes_of_the_operators_own_sightings() {
        // Three passes a day apart along a road east, 40 dB weaker at its end.
        let road = |source: Option<super::super::Source>| -> Vec<Observation> {
            three_passes(
                41,
                |i| destination(50.0, 8.0, 90.0, f64::from(i) * 50.0),
                source,
            )
        };
        let own = estimate(&road(None), false).unwrap();
        assert_eq!(own.levels.len(), 21, "{:?}", own.levels);
        // Heard at -90 dBm 20 steps of 50 m out: the level's position is there (within its
        // window of 4 dB either way, the stronger readings weighing more).
        let p = own.levels.iter().find(|p| p.dbm == -90).unwrap();
        let (lat, lon) = destination(50.0, 8.0, 90.0, 1_000.0);
        assert!(distance_m(p.lat, p.lon, lat, lon) < 60.0, "{p:?}");
        // Submitted sightings place no level; one pass neither.
        let submitted = road(Some(super::super::Source::of("ab", None)));
        assert!(estimate(&submitted, false).unwrap().levels.is_empty());
        let once: Vec<Observation> = road(None).into_iter().take(41).collect();
        assert!(estimate(&once, false).unwrap().levels.is_empty());
        // WiFi keeps none.
        assert!(estimate(&road(None), true).unwrap().levels.is_empty());
        // Readings above 0 dBm (a reader's mistake) make no level the file could not hold.
        let shifted: Vec<Observation> = road(None)
            .into_iter()
            .map(|o| Observation {
                signal_dbm: o.signal_dbm.map(|s| s + 90.0),
                ..o
            })
            .collect();
        let levels = estimate(&shifted, false).unwrap().levels;
        assert!(
            !levels.is_empty() && levels.iter().all(|p| p.dbm <= 0),
            "{levels:?}"
        );
    }

    #[test]
    fn advances_come_from_the_sightings_at_their_distance_from_the_mast() {
        // A street from the mast at (50, 8) 1.5 km east, then 1 km north, walked on three
        // days, a sighting every 50 m; none carries an advance of its own.
        let street = |source: Option<super::super::Source>| -> Vec<Observation> {
            let place = |i: u32| {
                if i <= 30 {
                    destination(50.0, 8.0, 90.0, f64::from(i) * 50.0)
                } else {
                    let (la, lo) = destination(50.0, 8.0, 90.0, 1_500.0);
                    destination(la, lo, 0.0, f64::from(i - 30) * 50.0)
                }
            };
            three_passes(50, place, source)
        };
        let step = 78.12;
        let points = advance_points(&street(None), (50.0, 8.0), step);
        let steps: Vec<u16> = points.iter().map(|p| p.steps).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
        // Advance 12 (859-1,094 m from the mast) is on the street's first stretch, 977 m
        // east, where the cell's estimate (the mode of the whole street, drawn to the mast by
        // the stronger readings) is not.
        let p = points.iter().find(|p| p.steps == 12).unwrap();
        let (lat, lon) = destination(50.0, 8.0, 90.0, ta_middle_m(12.0, step));
        assert!(distance_m(p.lat, p.lon, lat, lon) < 60.0, "{p:?}");
        let e = estimate(&street(None), false).unwrap();
        assert!(distance_m(e.lat, e.lon, lat, lon) > 300.0, "{e:?}");
        // Its spread is the street's length within those distances, not the ring's.
        assert!(p.spread_m > 20.0 && p.spread_m < 150.0, "{p:?}");
        // No advance beyond the farthest sighting's (1.8 km out), and every one up to it
        // whose distances hold sightings of two passes.
        let farthest = street(None)
            .iter()
            .map(|o| distance_m(50.0, 8.0, o.lat, o.lon))
            .fold(0.0, f64::max);
        let near_edge = |steps: u16| ta_interval(ta_middle_m(f64::from(steps), step), step).0;
        let last = points.last().unwrap().steps;
        assert!(near_edge(last) <= farthest && near_edge(last + 1) > farthest - 50.0);
        assert!(points.len() >= 20, "{}", points.len());
        // Submitted sightings place none; one pass neither; nor a step of nothing.
        let submitted = street(Some(super::super::Source::of("ab", None)));
        assert!(advance_points(&submitted, (50.0, 8.0), step).is_empty());
        let once: Vec<Observation> = street(None).into_iter().take(50).collect();
        assert!(advance_points(&once, (50.0, 8.0), step).is_empty());
        assert!(advance_points(&street(None), (50.0, 8.0), 0.0).is_empty());
    }

    #[test]
    fn a_levels_spread_is_how_far_the_next_pass_may_be() {
        // Ten untimed sightings (a pass each) on a 300 m circle: each is measured from where
        // the other nine put the centre, 300 / 9 m the other way, so 333 m, not 300.
        let circle: Vec<(f64, (f64, f64, f64), u32)> = (0..10)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::TAU / 10.0;
                (-80.0, (300.0 * a.cos(), 300.0 * a.sin(), 1.0), i + 1)
            })
            .collect();
        let (x, y, spread) = mode_and_spread(&circle).unwrap();
        assert!(x.hypot(y) < 1.0, "{x} {y}");
        assert!((spread - 3_000.0 / 9.0).abs() < 1.0, "{spread}");
        // Two passes 400 m apart, the first weighing more: the position is near it, and the
        // next device may be at either, so the spread reaches the other pass.
        let two: Vec<(f64, (f64, f64, f64), u32)> = (0..10)
            .map(|i| match i % 2 {
                0 => (-80.0, (0.0, 0.0, 2.0), 1),
                _ => (-80.0, (400.0, 0.0, 1.0), 2),
            })
            .collect();
        let (x, _, spread) = mode_and_spread(&two).unwrap();
        assert!(x < 50.0, "{x}");
        assert!(spread > 400.0, "{spread}");
        // Of n distances the next falls within the k-th smallest with probability k / (n + 1):
        // of five, rank 0.68 x 6 = 4.08, between the fourth and the fifth. Five sightings a pass
        // each, the centre at their mean (320 m): each measured from the mean of the other
        // four, |5 x - 1600| / 4: 25, 100, 150, 275 and 350 m.
        let five: Vec<(f64, (f64, f64, f64), u32)> = [100.0, 200.0, 300.0, 400.0, 600.0]
            .iter()
            .zip(1..)
            .map(|(&d, k)| (-80.0, (d, 0.0, 1.0), k))
            .collect();
        let by_pass: HashMap<u32, (f64, f64, f64)> =
            five.iter().map(|h| (h.2, (1.0, h.1 .0, h.1 .1))).collect();
        let spread = held_out_spread(&five, &by_pass, (320.0, 0.0));
        assert!((spread - (275.0 + 0.08 * 75.0)).abs() < 1e-6, "{spread}");
    }

    #[test]
    fn a_level_tight_only_where_a_phone_sat_still_claims_the_cell_floor() {
        let spread = |near: &[(f64, (f64, f64, f64), u32)]| mode_and_spread(near).unwrap().2;
        // Walked on four passes along the same 60 m of street, a sighting every 6 m: as
        // tight over its places as over its sightings, and it claims that.
        let walked: Vec<_> = (0..40u32)
            .map(|i| {
                (
                    -80.0,
                    (f64::from(i % 10) * 6.0, f64::from(i / 10), 1.0),
                    i / 10 + 1,
                )
            })
            .collect();
        let s = spread(&walked);
        assert!(s > 10.0 && s < MIN_CELL_ACCURACY_M, "{s}");
        // A phone that sat still for two sessions (500 sightings each within a metre) and one
        // drive past 100 to 600 m away: tight over the sightings, not over the places.
        let mut still: Vec<_> = (0..1_000u32)
            .map(|i| (-80.0, (f64::from(i % 3) * 0.3, 0.0, 1.0), i / 500 + 1))
            .collect();
        still.extend((1..=6).map(|k| (-80.0, (f64::from(k) * 100.0, 0.0, 1.0), 3)));
        assert_eq!(spread(&still), MIN_CELL_ACCURACY_M);
        // The same two sessions alone: too few places to say anything tighter.
        assert_eq!(spread(&still[..1_000]), MIN_CELL_ACCURACY_M);
    }

    #[test]
    fn outlier_is_dropped_and_centre_kept() {
        let mut obs = ring(12, 300.0);
        let (la, lo) = destination(50.0, 8.0, 45.0, 20_000.0);
        obs.push(at(la, lo));
        let e = estimate(&obs, false).unwrap();
        assert!(distance_m(e.lat, e.lon, 50.0, 8.0) < 5.0, "{e:?}");
        assert_eq!((e.samples, e.rejected), (12, 1));
        // A cell's range: twice the distance holding 90% of the kept observations, shrunk
        // towards the prior as if one more pass had said it (each untimed sighting is a pass).
        let want = (12.0 * 600.0 + RANGE_PRIOR_CELL_M) / 13.0;
        assert!((e.range_m - want).abs() < 2.0, "{e:?}");
        assert!((estimate(&obs, true).unwrap().range_m - 300.0).abs() < 5.0);
    }

    #[test]
    fn stronger_signal_pulls_towards_itself() {
        let mut a = at(50.0, 8.0);
        a.signal_dbm = Some(-60.0);
        let (la, lo) = destination(50.0, 8.0, 90.0, 400.0);
        let mut b = at(la, lo);
        b.signal_dbm = Some(-100.0);
        let e = estimate(&[a, b], false).unwrap();
        // 40 dB: weights 10^(40/30) = 21.5 : 1, so the mean lies 17.7 m from the
        // strong reading; the mode search then moves it nearer still (400 m is two
        // kernels: the weak reading hardly counts there).
        let w = 10f64.powf(40.0 / 30.0);
        let d = distance_m(e.lat, e.lon, 50.0, 8.0);
        assert!(d < 400.0 / (w + 1.0) && d > 0.0, "{d}");
    }

    #[test]
    fn fast_and_vague_fixes_weigh_less() {
        let slow = at(50.0, 8.0);
        let (la, lo) = destination(50.0, 8.0, 0.0, 200.0);
        let mut fast = at(la, lo);
        fast.speed_mps = Some(40.0);
        fast.accuracy_m = Some(50.0);
        let e = estimate(&[slow, fast], false).unwrap();
        assert!(distance_m(e.lat, e.lon, 50.0, 8.0) < 20.0);
    }

    #[test]
    fn places_seen_on_many_passes_outweigh_one_long_stay() {
        // One phone logs 100 rows a second apart at A; ten drives, a day apart,
        // log 5 rows each at B, 1 km away.
        let (bla, blo) = destination(50.0, 8.0, 90.0, 1000.0);
        let mut obs = Vec::new();
        for i in 0..100 {
            let mut o = at(50.0, 8.0);
            o.time = Some(1_000_000 + i);
            obs.push(o);
        }
        for d in 1..=10 {
            for i in 0..5 {
                let mut o = at(bla, blo);
                o.time = Some(1_000_000 + d * 86_400 + i);
                obs.push(o);
            }
        }
        let e = estimate(&obs, false).unwrap();
        assert!(distance_m(e.lat, e.lon, bla, blo) < 1.0, "{e:?}");
        // The same rows as one pass (a second apart throughout): the stay's 100 rows
        // beat the 50.
        for (i, o) in obs.iter_mut().enumerate() {
            o.time = Some(1_000_000 + i as i64);
        }
        let e = estimate(&obs, false).unwrap();
        assert!(distance_m(e.lat, e.lon, 50.0, 8.0) < 1.0, "{e:?}");
    }

    #[test]
    fn passes_are_counted_within_reach() {
        let (la, lo) = destination(50.0, 8.0, 0.0, PASS_REACH_M * 0.9);
        let (fla, flo) = destination(50.0, 8.0, 0.0, PASS_REACH_M * 1.5);
        let obs: Vec<Observation> = [
            (50.0, 8.0, 0),
            (50.0, 8.0, 5),
            (la, lo, 3_600),
            (fla, flo, 7_200),
        ]
        .into_iter()
        .map(|(lat, lon, t)| {
            let mut o = at(lat, lon);
            o.time = Some(t);
            o
        })
        .collect();
        let frame = LocalFrame::new(50.0, 8.0);
        let pts: Vec<(f64, f64, f64)> = obs
            .iter()
            .map(|o| {
                let (x, y) = frame.to_xy(o.lat, o.lon);
                (x, y, 1.0)
            })
            .collect();
        // The first two rows are one pass; the third is near them, the fourth near the third only.
        assert_eq!(passes_near(&pass_ids(&obs), &pts), vec![2, 2, 3, 2]);
    }

    #[test]
    fn timing_advance_and_few_passes_widen_a_cells_range() {
        // One pass: ten sightings a second apart along 90 m of one street.
        let walk = |ta: Option<f64>| -> Vec<Observation> {
            (0..10)
                .map(|i| {
                    let (la, lo) = destination(50.0, 8.0, 90.0, i as f64 * 10.0);
                    let mut o = at(la, lo);
                    o.key = StationKey::Cell {
                        radio: crate::radio::Radio::Lte,
                        mcc: 1,
                        mnc: 1,
                        key: 1,
                    };
                    o.time = Some(1_000 + i);
                    o.ta_m = ta;
                    o
                })
                .collect()
        };
        let spread_only = estimate(&walk(None), false).unwrap();
        // The spread says under 100 m; one pass weighs as much as the prior.
        assert!(
            spread_only.range_m > RANGE_PRIOR_CELL_M / 2.0
                && spread_only.range_m < (100.0 + RANGE_PRIOR_CELL_M) / 2.0,
            "{spread_only:?}"
        );
        // TA 4 (312 m to 390 m from the mast): twice the reach before the prior.
        let ta = estimate(&walk(Some(4.0 * crate::radio::LTE_TA_STEP_M)), false).unwrap();
        let reach = 5.0 * crate::radio::LTE_TA_STEP_M * RANGE_PER_TA_CELL;
        assert!(
            (ta.range_m - (reach + RANGE_PRIOR_CELL_M) / 2.0).abs() < 1.0,
            "{ta:?}"
        );
    }

    #[test]
    fn moved_station_is_detected() {
        let mut obs: Vec<Observation> = ring(6, 200.0)
            .into_iter()
            .enumerate()
            .map(|(i, mut o)| {
                o.time = Some(1_000_000 + i as i64 * 86_400);
                o
            })
            .collect();
        let later = 1_000_000 + 30 * 86_400;
        for i in 0..5 {
            let (la, lo) = destination(50.1, 8.2, i as f64 * 70.0, 150.0);
            let mut o = at(la, lo);
            o.time = Some(later + i);
            obs.push(o);
        }
        assert_eq!(moved_at(&obs, false), Some((later, None)));
        // The same places observed over a month without a jump: not moved.
        assert_eq!(moved_at(&obs[..6], false), None);
        // The new place heard once before the old place's last sighting: a station heard
        // at both in turn, whose newest sightings come from the rarer one, has not moved.
        let (la, lo) = destination(50.1, 8.2, 0.0, 100.0);
        let mut before = at(la, lo);
        before.time = Some(1_000_000 + 86_400 / 2);
        let mut heard_at_both = obs.clone();
        heard_at_both.insert(1, before);
        assert_eq!(moved_at(&heard_at_both, false), None);
        // Heard there only after the old place's last sighting: moved, from then.
        let mut after = heard_at_both[1].clone();
        after.time = Some(1_000_000 + 10 * 86_400);
        let mut moved_earlier = obs.clone();
        moved_earlier.insert(6, after);
        assert_eq!(moved_at(&moved_earlier, false), Some((later, None)));
    }
}
