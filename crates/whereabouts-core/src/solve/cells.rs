//! Cell evidence: each known cell's anchor (its crowd estimate, or where on its sector's
//! axis from the mast its signal and a serving cell's timing advance put the device), a
//! weighted and robust mean of the anchors weighted by signal and by how many sightings
//! back each estimate, kept within the serving cell's sector (its timing advance's ring and
//! its wedge), and the LAC/TAC area fallback.

use smallvec::SmallVec;

use super::lookup::{candidate_mccs, candidate_radios, seen_cell, SeenCell};
use super::params::{
    reference_spacing_per_range, AREA_ACCURACY_FACTOR, AREA_FEW_CELLS, BOUNDED_SCALE, COUNT_EXP,
    COUNT_REF, CROWD_ESTIMATE_ERROR, CROWD_RANGE_MAX_SPACINGS, CROWD_RING_SPREAD,
    CROWD_SAMPLES_EXP, CROWD_SPREAD, DEFAULT_RANGE_M, ESTIMATE_ERROR, LEARNED_SPREAD_SHARE,
    LEVEL_RADIUS_SCALE, MIN_CELL_ACCURACY_M, MIN_LEVEL_ACCURACY_M, OFF_AXIS_SCALE, ONE_MAST_SCALE,
    ON_MAST_SCALE, OWN_RADII_SCALE, PUBLISHED_LAYOUT_EXP, PUBLISHED_LAYOUT_SCALE,
    PUBLISHED_REACH_SPACINGS, RING_MISS_FLOOR, RING_MISS_SCALE, RING_MISS_SCALE_LEARNED,
    RING_MISS_SCALE_ON_MAST, RING_SPREAD, ROBUST_ROUNDS, ROBUST_SCALE_RANGES, SAME_PLACE_COUNT,
    SAMPLES_HALF_WEIGHT, SECTOR_OFFSET_BOUNDS, SECTOR_OFFSET_REF, SERVING_WEDGE_COS,
    SERVING_WEDGE_SIN, SINGLE_ON_AXIS_SCALE, SINGLE_SPREAD, SITE_REACH_PER_SPACING,
    SITE_SPACING_MAX_CELLS, SITE_SPACING_RANK, SPREAD_RANGE_EXP, SPREAD_SCALE, SPREAD_SIZE_EXP,
    SPREAD_SIZE_REF_M, UNCOUNTED_SAMPLES, UNLEVELLED_COUNT_EXP, UNLEVELLED_COUNT_REF,
    UNLEVELLED_MAST_COUNT_EXP, UNLEVELLED_SERVING_WEIGHT,
};
use super::query::{Answer, CellObs, Fallback, Source};
use super::weights::{cell_distance_factor, cell_signal_weight};
use super::AGED_AFTER_S;
use crate::geo::LocalFrame;
use crate::radio::Radio;
use crate::sites::{site_cids, site_of_key, SiteMast};
use crate::store::Database;

/// Two positions nearer than this are one place: an estimate on its mast (a published
/// tower's), sectors of one mast, anchors the count law counts once ([`anchor_count`]).
const SAME_PLACE_M: f64 = 1.0;

/// Whether two points of a local frame are one place ([`SAME_PLACE_M`]).
fn same_place(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).hypot(a.1 - b.1) < SAME_PLACE_M
}

/// A cell's anchor ([`anchor_of`]) in the local frame with its weight and range.
#[derive(Clone, Copy)]
struct Anchor {
    x: f64,
    y: f64,
    w: f64,
    range: f64,
}

/// A cell's range in the units the solver's constants are expressed in: its stored range
/// (or its network's typical one) read through its network's scale ([`range_units`]).
fn range_of(c: &SeenCell) -> f64 {
    stored_range_of(c) * range_units(c)
}

/// A cell's stored range, or when it has none its network's median range, or without
/// statistics [`DEFAULT_RANGE_M`].
fn stored_range_of(c: &SeenCell) -> f64 {
    if c.range_m > 0.0 {
        c.range_m
    } else if let Some(spacing) = published_spacing_of(c) {
        PUBLISHED_REACH_SPACINGS * spacing
    } else {
        prior_range_of(c)
    }
}

/// Whether `c`'s network stated one range for every cell (`NetworkScale::unranged`).
fn unranged(c: &SeenCell) -> bool {
    c.scale.unranged && !c.learned
}

/// The range a single crowd cell's radius reads: the stored one, which a crowd measured from
/// the very sightings whose spread the device is in; for a network without ranges of its own,
/// the network's units ([`range_of`]: its site spacing), the geometry being all there is.
/// (The multi-cell radius keeps the stored ones: in the network's units it widened in the
/// families' median worlds without ranges, suburban 74% -> 78% and rural 77% -> 80% inside,
/// `experiments.md`.)
fn radius_range_of(c: &SeenCell) -> f64 {
    if unranged(c) {
        range_of(c)
    } else {
        stored_range_of(c)
    }
}

/// The site spacing of `c`'s network when it is published at its masts (`NetworkScale`).
fn published_spacing_of(c: &SeenCell) -> Option<f64> {
    match c.scale.published_spacing_m {
        Some(s) if !c.learned && s > 0.0 => Some(s as f64),
        _ => None,
    }
}

/// How many sightings back `c`'s estimate: a published mast's position is exact, whatever
/// count its publisher wrote (often none), so as many as count at all; a crowd network
/// exported without counts, the prior [`UNCOUNTED_SAMPLES`].
fn samples_of(c: &SeenCell) -> u32 {
    if published_spacing_of(c).is_some() {
        u32::MAX
    } else if c.scale.uncounted && !c.learned {
        UNCOUNTED_SAMPLES
    } else {
        c.samples.max(1)
    }
}

/// What one metre of `c`'s stored range is in the solver's units: the network's median site
/// spacing over its median range, against [`reference_spacing_per_range`] (bounded to
/// 1/4..4). Ranges published under another definition (the farthest sighting, a quantile,
/// twice the mean distance) or from crowds that saw less of each cell's coverage put the same
/// geometry in other numbers; the spacing of the sites is the geometry itself. 1 without
/// statistics, for a learned cell (its range is our learner's), and for a network whose
/// sector estimates sit on their masts (published tower positions, `NetworkScale`).
fn range_units(c: &SeenCell) -> f64 {
    if c.learned {
        return 1.0;
    }
    match (
        c.scale.spacing_per_range,
        reference_spacing_per_range(c.radio),
    ) {
        (Some(v), Some(reference)) => (v as f64 / reference).clamp(0.25, 4.0),
        _ => 1.0,
    }
}

/// The range a cell's anchor weighs and tolerates by in the position (its weight, the robust
/// mean's scale): for a crowd cell, the geometric mean of its own range and its network's
/// median range (both in the network's units), since one crowd's range is noisy and the
/// network's typical one steadies it; a learned cell's own (our learner's); a published
/// mast's, its network's spacing ([`PUBLISHED_REACH_SPACINGS`]). The share of the own range
/// (the exponent, here a half) fitted on the world families (fit seeds 101..130, the position
/// constants' objective of `params.rs`): 1 (the own range alone) 0.033, 0 (the network's
/// alone) 0.042, 0.25 0.045, 0.5 0.051, 0.75 0.052; the root kept of the two that tie.
fn position_range_of(c: &SeenCell) -> f64 {
    if let Some(spacing) = published_spacing_of(c) {
        return PUBLISHED_REACH_SPACINGS * spacing;
    }
    let own = range_of(c);
    match c.scale.median_range_m {
        Some(median) if !c.learned && median > 0.0 => (own * median as f64 * range_units(c)).sqrt(),
        _ => own,
    }
}

/// What a cell of `c`'s network is taken to reach when its own range says little: the
/// network's median stored range, or [`DEFAULT_RANGE_M`] without statistics.
fn prior_range_of(c: &SeenCell) -> f64 {
    c.scale
        .median_range_m
        .map_or(DEFAULT_RANGE_M, |r| (r as f64).max(1.0))
}

/// How much a cell says, as two weights: its signal and how many sightings back its estimate
/// count in both ([`SAMPLES_HALF_WEIGHT`]); how tight its coverage is counts in each
/// differently.
///
/// The first weighs the cells' spread around the answer for its radius, with the root of the
/// range: the radius models ([`cells_accuracy`], [`count_factor`]) were fitted on the spread
/// and range weighted so.
///
/// The second weighs the anchors for the position, with the whole of the position's range
/// ([`position_range_of`]): a cell heard with a tight coverage puts the device near its anchor
/// whatever its level. It gives the better
/// positions, but the radius weighted by it is too wide in the country (more than 68%
/// inside) for answers no better: hence two (docs/positioning.md).
///
/// `levelled`: whether every cell of the request came with a level ([`all_levelled`]). A
/// level weighs a cell against the others' levels; against a cell without one it has nothing
/// to compare, so then no cell's level counts.
fn weights(c: &SeenCell, position_range: f64, levelled: bool) -> (f64, f64) {
    let samples = samples_of(c) as f64;
    let signal = if levelled { c.signal } else { None };
    let mut w = cell_signal_weight(c.radio, signal) * samples / (samples + SAMPLES_HALF_WEIGHT);
    if c.serving && signal.is_none() {
        w *= UNLEVELLED_SERVING_WEIGHT;
    }
    // A published mast's stored range is its publisher's: its network's spacing instead.
    let range = match published_spacing_of(c) {
        Some(_) => position_range,
        None => range_of(c),
    };
    let root = range.max(100.0).sqrt();
    (w / root, w / position_range.max(100.0))
}

/// Whether every one of `cells` came with a level: else they are weighed alike ([`weights`])
/// and their radius follows [`unlevelled_factor`]. A device that names its neighbours by
/// their ids alone weighs its serving cell's level against nothing: kept, it would carry the
/// weights whatever its level (the other generator's held-out worlds held 20-43% inside in
/// the median world, docs/experiments.md).
fn all_levelled(cells: &[SeenCell]) -> bool {
    cells.iter().all(|c| c.signal.is_some())
}

/// How many cells `cells` count for by their radius weights ([`weights`]):
/// `(sum w)^2 / sum w^2`, from 1 where one cell carries them to the count where they are even.
/// The radius model's classes of several cells (`calibration::RadiusClass::cells`).
pub(super) fn effective_count(cells: &[SeenCell]) -> f64 {
    if cells.len() < 2 {
        return cells.len() as f64;
    }
    let levelled = all_levelled(cells);
    let (sum, squares) = cells.iter().fold((0.0, 0.0), |(s, q), c| {
        let w = weights(c, position_range_of(c), levelled).0;
        (s + w, q + w * w)
    });
    if squares > 0.0 {
        sum * sum / squares
    } else {
        cells.len() as f64
    }
}

/// Where a device hearing `c` is likely to be: the crowd estimate is where the devices that
/// reported the cell were, pulled out from the mast along the sector's azimuth. With the
/// mast known from sibling sectors, the device is on that axis at the distance its signal
/// implies relative to the crowd's ([`cell_distance_factor`]), and a serving cell's timing
/// advance bounds that distance. A cell heard `alone` without an advance moves half as far in
/// log distance (the square root of the level's factor): a level read against its radio's
/// typical serving level misleads where a world's or a device's levels sit off it, and no
/// other cell pulls back. A learned cell's mast is the one our learner fitted from timing
/// advances, and only an advance moves it. Without a mast, the estimate itself. The flag:
/// placed on the sector's axis.
fn anchor_of(frame: &LocalFrame, c: &SeenCell, alone: bool) -> (f64, f64, bool) {
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
    if own < SAME_PLACE_M {
        return (x, y, false);
    }
    // The estimate gives the axis and how far out along it the crowd sat: the sector's own
    // distance, not its site's mean one. On Cork's real centroids the sectors of one site lie
    // at their own distances (a far sector would push its near siblings out), and the site's
    // mean placed the rows 37% farther from the truth (docs/experiments.md).
    // A learned position is the mode of its own sightings, not a crowd's mean at the
    // typical serving level (`typical_serving_dbm`): only a timing advance moves it along its
    // axis from the mast our learner fitted (`learn::masts`).
    if c.learned && c.ta_m.is_none() {
        return (x, y, false);
    }
    let mut factor = match c.signal {
        Some(s) if !c.learned => cell_distance_factor(c.radio, s).unwrap_or(1.0),
        _ => 1.0,
    };
    match c.ta_m {
        Some((d, step)) => {
            let (lo, hi) = ta_interval(d, step);
            factor = factor.clamp(lo / own, hi / own);
        }
        // The full move gained 1-3% in the median world of the families' lone cells without
        // an advance and lost up to 14% in a few; half of it loses at most 4% (single cell,
        // fit worlds 101..130: median world 1.072 -> 1.059, worst 0.937 -> 0.973; on Cork's
        // centroids the median 215.7 -> 210.2 m; docs/experiments.md).
        None if alone => factor = factor.sqrt(),
        None => {}
    }
    (tx + factor * ux, ty + factor * uy, true)
}

/// The metres a step of a serving cell's timing advance, for the radios whose requests'
/// advances the solver reads (GSM and LTE); None for the others.
pub(crate) fn read_advance_step_m(radio: Radio) -> Option<f64> {
    match radio {
        Radio::Gsm | Radio::Lte => radio.ta_step_m(),
        _ => None,
    }
}

/// The middle of the step an advance of `ta` steps of `step` metres reports (an advance counts
/// a step's near edge).
pub(crate) fn ta_middle_m(ta: f64, step: f64) -> f64 {
    ta * step + step / 2.0
}

/// The advance, in whole steps, whose step's middle is `d` ([`ta_middle_m`]).
pub(crate) fn ta_steps(d: f64, step: f64) -> f64 {
    (d / step - 0.5).round()
}

/// The distances from the mast a timing advance allows: `d` is the middle of the reported
/// step ([`ta_middle_m`]), and a reported advance may be a step off either way (the
/// simulator's is; real ones round and lag), so from one step below the reported one to one
/// above.
pub(crate) fn ta_interval(d: f64, step: f64) -> (f64, f64) {
    ((d - 1.5 * step).max(0.0), d + 1.5 * step)
}

/// The radius factor of an answer served by `c` when its network is published at its masts
/// (`PUBLISHED_LAYOUT_SCALE`): by how evenly its masts stand. None for other networks.
fn layout_factor(c: &SeenCell) -> Option<f64> {
    published_spacing_of(c)?;
    let spread = f64::from(c.scale.published_spacing_spread?).max(1.0);
    Some(PUBLISHED_LAYOUT_SCALE * spread.powf(PUBLISHED_LAYOUT_EXP))
}

pub fn solve(cells: &[SeenCell], now: i64) -> Option<Answer> {
    let first = cells.first()?;
    let frame = LocalFrame::new(first.lat, first.lon);
    if cells.len() > 1 && on_one_mast(&frame, cells) {
        return one_mast_answer(cells, now);
    }
    let (mut sw, mut sr, mut ax, mut ay, mut a2, mut moved) = (0.0, 0.0, 0.0, 0.0, 0.0, false);
    // Sum over the cells of (w r)^2, r a cell's radius alone ([`lone_radius`]), for a learned
    // answer's radius ([`OWN_RADII_SCALE`]).
    let mut own2 = 0.0;
    // The position's first estimate: the anchors' mean by their position weights.
    let (mut pw, mut px, mut py) = (0.0, 0.0, 0.0);
    let mut first_on_axis = false;
    let mut anchors: smallvec::SmallVec<[Anchor; 8]> = smallvec::SmallVec::new();
    // One cell has no others to weigh against.
    let levelled = cells.len() == 1 || all_levelled(cells);
    for (i, c) in cells.iter().enumerate() {
        let position_range = position_range_of(c);
        // One cell's weights would divide out: their exponential is saved.
        let (w, wp) = if cells.len() == 1 {
            (1.0, 1.0)
        } else {
            weights(c, position_range, levelled)
        };
        let stored = stored_range_of(c);
        sw += w;
        if cells.len() > 1 && first.learned {
            let own = w * lone_radius(c, samples_of(c));
            own2 += own * own;
        }
        // The multi-cell radius in stored ranges: read in the network's units, its range
        // terms widen and narrow it the wrong way in the world families (docs/experiments.md).
        sr += w * stored;
        let (x, y, on_axis) = anchor_of(&frame, c, cells.len() == 1);
        moved |= on_axis;
        first_on_axis |= i == 0 && on_axis;
        ax += w * x;
        ay += w * y;
        a2 += w * (x * x + y * y);
        pw += wp;
        px += wp * x;
        py += wp * y;
        // A published mast is where it is: no distance from the others makes it an outlier.
        let range = if published_spacing_of(c).is_some() {
            f64::INFINITY
        } else {
            position_range
        };
        anchors.push(Anchor { x, y, w: wp, range });
    }
    let mut samples: smallvec::SmallVec<[u32; 8]> = cells.iter().map(samples_of).collect();
    samples.sort_unstable();
    let median_samples = samples[samples.len() / 2];
    let (mx, my) = (ax / sw, ay / sw);
    (px, py) = (px / pw, py / pw);
    // The frame's origin is the first cell, so the coordinates are a few kilometres at most
    // and E[d^2] - |mean|^2 keeps its precision; max(0) absorbs rounding.
    let spread = (a2 / sw - (mx * mx + my * my)).max(0.0).sqrt();
    // A single learned cell placed by its level or its advance (`lookup`): that point's own
    // spread, as the learner measured it (how far the next pass's device may be,
    // `learn::estimate`), also when its advance puts it on its mast's ring (the level said
    // where along it). No factor: the one
    // that holds 68% depends on whether the next devices travel the learning's roads (0.88 on
    // the LTE rows of three folds of the Cork learn files, 0.94 on its held-out files, 0.87 on
    // the simulated walks, 0.92 to 0.97 on sightings at independent places), and a single one
    // trades them (docs/experiments.md); `learn`'s calibration fits it per database. Its floor
    // is a GPS fix's (`MIN_LEVEL_ACCURACY_M`): the learner keeps the crowd floor for a level
    // tight only because a phone sat still.
    let by_level = match cells.len() {
        1 => first.point_spread_m,
        _ => None,
    };
    // Else a single cell on its mast's ring by its advance: the ring's radius, not the
    // range's. Placed on its axis (a learned cell moves only so), (px, py) is its anchor on
    // the ring; a published tower's cell (its estimate on its mast) answers at the mast, with
    // the device somewhere on the ring.
    let ring = match (by_level, cells.len(), first.tower, first.ta_m) {
        (Some(_), ..) => None,
        (None, 1, Some(tower), Some((_, step))) if moved => {
            Some(ring_accuracy(&frame, first.learned, tower, step, px, py))
        }
        // The error is the device's distance from the mast, which the advance reports (its
        // step's middle): a prior, not fitted. On the world families' published-tower
        // requests cut to their serving cell it holds 68.1% in the median held-out world
        // (60.4-71.8%), where the range's radius held 77.0% (62.2-93.3%)
        // (`npx tsx bench/lone-tower.ts .eval/family-{201..216}-1000`).
        (None, 1, _, Some((d, _))) if on_its_mast(&frame, first) => Some(d),
        _ => None,
    };
    let mut accuracy = if let Some(radius) = by_level.or(ring) {
        radius
    } else if cells.len() == 1 {
        let scale = if moved { SINGLE_ON_AXIS_SCALE } else { 1.0 };
        lone_radius(first, median_samples) * scale
    } else {
        let on_mast = on_its_mast(&frame, first);
        let scale = if first_on_axis {
            1.0
        } else if on_mast {
            ON_MAST_SCALE
        } else {
            OFF_AXIS_SCALE
        };
        // Masts for anchors: their spread is the geometry itself, whatever ranges and
        // sightings their publisher wrote.
        let between = if on_mast {
            spread
        } else {
            cells_accuracy(spread, sr / sw)
        };
        let count = anchor_count(&anchors);
        let unlevelled = if levelled {
            1.0
        } else {
            unlevelled_factor(count, on_mast)
        };
        let spread_radius =
            between * count_factor(count) * unlevelled * scale * offset_factor(first);
        if first.learned {
            LEARNED_SPREAD_SHARE * spread_radius.hypot(OWN_RADII_SCALE * own2.sqrt() / sw)
        } else {
            spread_radius
        }
    };
    // The radius models were fitted on the spread around the plain weighted mean, so the
    // robust refinement moves only the position.
    if anchors.len() > 1 {
        (px, py) = robust_mean(&anchors, px, py);
        let (bx, by) = within_serving_sector(&frame, first, px, py);
        match ring_miss(&frame, first, px, py) {
            Some(miss) => {
                let scale = if first.learned {
                    RING_MISS_SCALE_LEARNED
                } else if on_its_mast(&frame, first) {
                    RING_MISS_SCALE_ON_MAST
                } else {
                    RING_MISS_SCALE
                };
                accuracy = scale * ring_miss_accuracy(accuracy, miss);
            }
            None if (bx - px).hypot(by - py) > 1.0 => accuracy *= BOUNDED_SCALE,
            None => {}
        }
        (px, py) = (bx, by);
    }

    // A network published at its masts: by how evenly they stand, but a lone cell on its
    // mast's ring claims its advance's distance, which the layout does not change.
    if ring.is_none() {
        if let Some(factor) = layout_factor(first) {
            accuracy *= factor;
        }
    }

    let (lat, lon) = frame.to_latlon(px, py);
    Some(Answer {
        lat,
        lon,
        accuracy_m: accuracy.max(if by_level.is_some() {
            MIN_LEVEL_ACCURACY_M
        } else {
            MIN_CELL_ACCURACY_M
        }),
        fallback: fallback_of(cells),
        aged: aged(cells, now),
        source: Source::Cells,
        ring: ring.is_some(),
        level: by_level.is_some(),
    })
}

/// A short-CID match among the cells marks the answer.
fn fallback_of(cells: &[SeenCell]) -> Fallback {
    if cells.iter().any(|c| c.via_short_cid) {
        Fallback::Scf
    } else {
        Fallback::None
    }
}

/// Based on a single sighting in all, or on cells none of which was updated lately.
fn aged(cells: &[SeenCell], now: i64) -> bool {
    let total_samples: u32 = cells.iter().map(|c| c.samples).sum();
    let newest = cells.iter().map(|c| c.updated).max().unwrap_or(0);
    total_samples <= 1 || newest < now - AGED_AFTER_S
}

/// Whether every cell heard is a sector of one mast at that mast (a network published at its
/// masts): their anchors are one point, whose spread is nil.
fn on_one_mast(frame: &LocalFrame, cells: &[SeenCell]) -> bool {
    let Some((lat, lon)) = mast_of(&cells[0]) else {
        return false;
    };
    let mast = frame.to_xy(lat, lon);
    cells.iter().all(|c| {
        on_its_mast(frame, c)
            && mast_of(c).is_some_and(|(lat, lon)| same_place(frame.to_xy(lat, lon), mast))
    })
}

/// Sectors of one published mast, and no other mast heard: together they say where the mast
/// is, as one of them does, so the answer is the serving cell's alone (at the mast; with a
/// timing advance, the advance's distance for its radius). The anchors' spread, nil, is no
/// radius: as one, such answers claimed the 50 m floor and held 4% inside on the world
/// families' `cells-known-towers` (docs/experiments.md). Without an advance the serving
/// cell's radius shrinks by [`ONE_MAST_SCALE`]: a device whose strongest cells are all on one
/// mast is nearer it than one that hears its serving sector among other masts.
fn one_mast_answer(cells: &[SeenCell], now: i64) -> Option<Answer> {
    let mut answer = solve(&cells[..1], now)?;
    if !answer.ring {
        answer.accuracy_m = (answer.accuracy_m * ONE_MAST_SCALE).max(MIN_CELL_ACCURACY_M);
    }
    answer.fallback = fallback_of(cells);
    answer.aged = aged(cells, now);
    Some(answer)
}

/// Where `c`'s mast stands: the one its sibling sectors give (or our learner fitted), or, for
/// a network published at its masts, the cell's own position, also when no sibling names it
/// (an omni site).
fn mast_of(c: &SeenCell) -> Option<(f64, f64)> {
    match c.tower {
        Some(t) => Some((t.lat, t.lon)),
        None => published_spacing_of(c).map(|_| (c.lat, c.lon)),
    }
}

/// Whether a cell's estimate is its mast's position (published tower positions, every sector
/// of a site on its mast): no axis, and the anchors are the masts themselves ([`ON_MAST_SCALE`]).
fn on_its_mast(frame: &LocalFrame, c: &SeenCell) -> bool {
    let Some((lat, lon)) = mast_of(c) else {
        return false;
    };
    same_place(frame.to_xy(lat, lon), frame.to_xy(c.lat, c.lon))
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

/// How far the cells' mean (px, py) lies from the ring the serving cell's timing advance
/// draws around its mast (the middle of the advance's step), when there are both.
fn ring_miss(frame: &LocalFrame, c: &SeenCell, px: f64, py: f64) -> Option<f64> {
    let (Some((lat, lon)), Some((d, _)), true) = (mast_of(c), c.ta_m, c.serving) else {
        return None;
    };
    let (tx, ty) = frame.to_xy(lat, lon);
    Some(((px - tx).hypot(py - ty) - d).abs())
}

/// The multi-cell radius, up to its scale ([`RING_MISS_SCALE`]), when the serving cell's
/// advance says how far the cells' mean missed its ring ([`ring_miss`]): the geometric mean of
/// the radius and the miss (plus a share of the radius).
fn ring_miss_accuracy(radius: f64, miss: f64) -> f64 {
    (radius * (miss + RING_MISS_FLOOR * radius)).sqrt()
}

/// Where the serving cell allows the device to be, when it was placed on its sector's axis
/// ([`anchor_of`]): within its timing advance's distances from the mast ([`ta_interval`]),
/// and within the sector's wedge around its axis ([`SERVING_WEDGE_COS`]). The mean of several
/// anchors can leave both (neighbours pull it across the mast's ring or out of the sector);
/// the answer is moved back onto the nearest distance and bearing allowed, the other
/// coordinate kept (polar coordinates around the mast). The serving cell's own anchor
/// already lies inside both, so a single cell's answer never moves. A serving cell whose
/// estimate is its mast (published tower positions) has no axis: only its advance's
/// distances bound the answer, along the bearing the neighbours pulled it to.
fn within_serving_sector(frame: &LocalFrame, c: &SeenCell, px: f64, py: f64) -> (f64, f64) {
    if !c.serving || (c.signal.is_none() && c.ta_m.is_none()) {
        return (px, py);
    }
    let Some((lat, lon)) = mast_of(c) else {
        return (px, py);
    };
    let (tx, ty) = frame.to_xy(lat, lon);
    let (x, y) = frame.to_xy(c.lat, c.lon);
    let len = ((x - tx).powi(2) + (y - ty).powi(2)).sqrt();
    let (dx, dy) = (px - tx, py - ty);
    let r = (dx * dx + dy * dy).sqrt();
    // An answer on the mast: no bearing to keep.
    if r < 1.0 {
        return (px, py);
    }
    // No axis (an estimate on its mast: published tower positions): no wedge, but the
    // advance still gives the distance from the mast, along the bearing the neighbours gave.
    if len < 1.0 {
        return match c.ta_m {
            Some((d, step)) => {
                let (lo, hi) = ta_interval(d, step);
                let dist = r.clamp(lo, hi);
                (tx + dx / r * dist, ty + dy / r * dist)
            }
            None => (px, py),
        };
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

/// The 68% radius of a single cell's answer at (x, y) on the ring of `step`s around `tower`.
fn ring_accuracy(
    frame: &LocalFrame,
    learned: bool,
    tower: SiteMast,
    step: f64,
    x: f64,
    y: f64,
) -> f64 {
    let (tx, ty) = frame.to_xy(tower.lat, tower.lon);
    ring_radius(learned, (x - tx).hypot(y - ty), step)
}

/// The 68% radius of a single cell's answer `d` metres from its mast on the ring of `step`s
/// ([`RING_SPREAD`]): how far along the ring the bearing may be off, and the step.
pub(super) fn ring_radius(learned: bool, d: f64, step: f64) -> f64 {
    let spread = if learned {
        RING_SPREAD
    } else {
        CROWD_RING_SPREAD
    };
    spread * d.hypot(step)
}

/// The 68% radius of `c`'s answer were it heard alone without a timing advance, `samples`
/// its sightings: a learned cell's coverage and estimate ([`single_cell_accuracy`]); a crowd
/// or published cell's stored range ([`crowd_cell_accuracy`]) by the level it was heard at
/// ([`level_reach`]) and its network's ranges ([`wide_ranges_factor`]).
fn lone_radius(c: &SeenCell, samples: u32) -> f64 {
    if c.learned {
        return single_cell_accuracy(range_of(c), samples);
    }
    let prior = if unranged(c) {
        prior_range_of(c) * range_units(c)
    } else {
        prior_range_of(c)
    };
    crowd_cell_accuracy(radius_range_of(c), prior, samples) * level_reach(c) * wide_ranges_factor(c)
}

/// The 68% radius of a single learned cell's answer: its coverage spread and the standard
/// error of its estimate, in quadrature.
fn single_cell_accuracy(range_m: f64, samples: u32) -> f64 {
    range_m
        * (SINGLE_SPREAD * SINGLE_SPREAD + ESTIMATE_ERROR * ESTIMATE_ERROR / samples as f64).sqrt()
}

/// How far a lone crowd or published cell's device lies from its estimate by the level it
/// was heard at, as a factor on the cell's radius: the distance factor the level implies on
/// its sector's axis ([`cell_distance_factor`], 1 at the radio's typical serving level, more
/// when weaker, 0.2 to 3) times [`LEVEL_RADIUS_SCALE`]. A weak level puts the device out at
/// the edge of the coverage, a strong one near the mast, whose sector estimate is near it
/// too. 1 without a level, for a radio whose levels give no distance, and for a short-CID
/// match, which may name another cell than the one heard.
fn level_reach(c: &SeenCell) -> f64 {
    match c.signal {
        Some(signal) if !c.via_short_cid => {
            cell_distance_factor(c.radio, signal).map_or(1.0, |f| LEVEL_RADIUS_SCALE * f)
        }
        _ => 1.0,
    }
}

/// A lone crowd cell's radius in a network whose median stored range runs more than
/// [`CROWD_RANGE_MAX_SPACINGS`] site spacings: times that many spacings over the median range
/// (`NetworkScale::spacing_per_range`, kept for crowd networks only). 1 in a network without
/// ranges (each row its radio's default) or without the statistics.
fn wide_ranges_factor(c: &SeenCell) -> f64 {
    match c.scale.spacing_per_range {
        Some(v) if !unranged(c) => (CROWD_RANGE_MAX_SPACINGS * v as f64).min(1.0),
        _ => 1.0,
    }
}

/// The 68% radius of a single crowd-averaged cell's answer ([`CROWD_SPREAD`]): its stored
/// range, at least its network's typical range (`prior_range_m`) over its sightings.
fn crowd_cell_accuracy(range_m: f64, prior_range_m: f64, samples: u32) -> f64 {
    let n = samples.max(1) as f64;
    let range = range_m.max(prior_range_m / n);
    let estimate = CROWD_ESTIMATE_ERROR * CROWD_ESTIMATE_ERROR / n.powf(CROWD_SAMPLES_EXP);
    range * (CROWD_SPREAD * CROWD_SPREAD + estimate).sqrt()
}

/// The 68% radius of a multi-cell answer from the weighted spread of the cells' estimates
/// around it and their weighted range ([`SPREAD_SCALE`], [`SPREAD_SIZE_EXP`]).
fn cells_accuracy(spread_m: f64, range_m: f64) -> f64 {
    SPREAD_SCALE
        * spread_m
        * (spread_m / range_m.max(1.0)).powf(SPREAD_RANGE_EXP)
        * (spread_m.max(1.0) / SPREAD_SIZE_REF_M).powf(SPREAD_SIZE_EXP)
}

/// The multi-cell radius by how far out from their masts the serving cell's network's crowd
/// placed its sectors ([`SECTOR_OFFSET_REF`]); 1 without statistics or for a network published
/// at its masts.
fn offset_factor(c: &SeenCell) -> f64 {
    match c.scale.sector_offset {
        Some(offset) if !c.learned => (SECTOR_OFFSET_REF / (offset as f64).max(1e-3))
            .sqrt()
            .clamp(SECTOR_OFFSET_BOUNDS.0, SECTOR_OFFSET_BOUNDS.1),
        _ => 1.0,
    }
}

/// The calibration of a multi-cell radius by the number of cells ([`COUNT_REF`]), counted by
/// [`anchor_count`].
fn count_factor(cells: f64) -> f64 {
    (COUNT_REF / cells.max(1.0)).powf(COUNT_EXP)
}

/// The multi-cell radius of cells weighed without their levels ([`UNLEVELLED_COUNT_REF`]),
/// `cells` counted by [`anchor_count`]; `on_masts` for cells answered on their masts.
fn unlevelled_factor(cells: f64, on_masts: bool) -> f64 {
    let exp = if on_masts {
        UNLEVELLED_MAST_COUNT_EXP
    } else {
        UNLEVELLED_COUNT_EXP
    };
    (cells.max(UNLEVELLED_COUNT_REF) / UNLEVELLED_COUNT_REF).powf(-exp)
}

/// How many cells the count law counts: each anchor at a place of its own as one, each further
/// anchor at a place already counted (within [`SAME_PLACE_M`]: a sector of a published mast
/// heard with its sibling) as [`SAME_PLACE_COUNT`].
fn anchor_count(anchors: &[Anchor]) -> f64 {
    let places = anchors
        .iter()
        .enumerate()
        .filter(|&(i, a)| {
            !anchors[..i]
                .iter()
                .any(|b| same_place((a.x, a.y), (b.x, b.y)))
        })
        .count();
    places as f64 + SAME_PLACE_COUNT * (anchors.len() - places) as f64
}

/// The 68% radius of an area's answer from its radius and cell count.
fn area_accuracy(radius_m: f64, cells: u32) -> f64 {
    let few = (1.0 + AREA_FEW_CELLS / cells.max(1) as f64).sqrt();
    (radius_m * AREA_ACCURACY_FACTOR * few).max(MIN_CELL_ACCURACY_M)
}

/// The site of the serving cell when the database lacks it but knows other sectors of its
/// site (its LAC/TAC's cells whose ids [`site_cids`] reads as that site): the mean of those
/// sectors' positions, where the site's mast is. The device is somewhere in the missing
/// sector's coverage, which reaches about halfway to the sites around the mast: the radius
/// is how far a sector lies from the mean of its site's others in the cell's network
/// ([`NetworkScale::site_holdout_m`]: 68% of them, each held out in turn) and half the
/// distance to the LAC/TAC's third-nearest other site ([`SITE_REACH_PER_SPACING`],
/// [`SITE_SPACING_RANK`]), in quadrature, at least as far as the known sectors lie from their
/// mean. The spacing measures the coverage whatever the crowd's ranges mean (a farthest
/// sighting, a quantile, twice a mean distance), which a known sector's own radius does not.
/// Where the sites are learned, or the LAC/TAC has fewer other sites, the spacing is no
/// reach (a learned database knows the sites its traces passed, not those around a mast): the
/// radius is the larger of the held-out distance and a known sector's own radius (the
/// median sibling's, alone, as [`solve`] gives it). The first dominates for a learned network
/// (sectors placed along the roads their drives took, tight radii): the 68% quantile of error
/// over it is 1.09 on the Cork drive tests' held-out LTE rows. A neighbour's site is no
/// answer: a device hears neighbours well beyond their sector, and on the families' `lacf`
/// requests their sites did worse than the area. None where the network has no such statistic
/// (too few sites of two sectors, or ids that name no sites): the area answers
/// (docs/experiments.md).
///
/// [`NetworkScale::site_holdout_m`]: crate::store::netstats::NetworkScale
pub fn site_answer(db: &Database, cells: &[CellObs]) -> Option<Answer> {
    let obs = cells.first()?;
    let mnc = obs.mnc;
    for &radio in candidate_radios(obs) {
        let Some(span) = site_cids(radio, obs.cid) else {
            continue;
        };
        for &mcc in candidate_mccs(db, radio, obs) {
            let Some((siblings, scale)) = db.cells_in(radio, mcc, mnc, obs.lac, span) else {
                continue;
            };
            let Some(holdout) = scale.site_holdout_m else {
                continue;
            };
            // Each sibling as the solver sees it alone, heard at no level.
            let lone = CellObs {
                signal: None,
                asu: None,
                ta: None,
                ..*obs
            };
            let first = siblings[0].station();
            let frame = LocalFrame::new(first.lat(), first.lon());
            let mut xy: SmallVec<[(f64, f64); 8]> = SmallVec::new();
            let mut seen: SmallVec<[SeenCell; 8]> = SmallVec::new();
            for record in siblings {
                let st = record.station();
                xy.push(frame.to_xy(st.lat(), st.lon()));
                seen.push(seen_cell(radio, &lone, &st, true, false, None, scale));
            }
            let n = xy.len() as f64;
            let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
            let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
            let spread = xy
                .iter()
                .map(|&(x, y)| (x - mx).hypot(y - my))
                .fold(0.0, f64::max);
            let (lat, lon) = frame.to_latlon(mx, my);
            let spacing = if seen.iter().all(|c| c.learned) {
                None
            } else {
                site_spacing(db, radio, mcc, mnc, obs.lac, span.0, &frame, (mx, my))
            };
            let reach = match spacing {
                Some(spacing) => f64::from(holdout).hypot(spacing * SITE_REACH_PER_SPACING),
                None => {
                    // The median sibling's own radius, as the solver gives it.
                    let mut own: SmallVec<[f64; 8]> = seen
                        .iter()
                        .filter_map(|c| solve(std::slice::from_ref(c), 0).map(|a| a.accuracy_m))
                        .collect();
                    own.sort_unstable_by(f64::total_cmp);
                    f64::from(holdout).max(own.get(own.len() / 2).copied().unwrap_or(0.0))
                }
            };
            return Some(Answer {
                lat,
                lon,
                accuracy_m: reach.max(spread).max(MIN_CELL_ACCURACY_M),
                fallback: Fallback::Lacf,
                aged: true,
                source: Source::Site,
                ring: false,
                level: false,
            });
        }
    }
    None
}

/// How far the [`SITE_SPACING_RANK`]-th nearest other site of the LAC/TAC lies from a site's
/// mast at `mast` (in `frame`): each other site at the mean of its known sectors. None where
/// the LAC/TAC has fewer other sites (the sites beyond it are not read: the store has no
/// spatial index of cells), or more than [`SITE_SPACING_MAX_CELLS`] cells to read.
#[allow(clippy::too_many_arguments)]
fn site_spacing(
    db: &Database,
    radio: Radio,
    mcc: u16,
    mnc: u16,
    lac: u32,
    own: u64,
    frame: &LocalFrame,
    mast: (f64, f64),
) -> Option<f64> {
    let mut nearest = [f64::INFINITY; SITE_SPACING_RANK];
    let mut keep = |site: Option<u64>, sum: (f64, f64, f64)| {
        if site.is_none() || site == Some(own) {
            return;
        }
        let d = (sum.0 / sum.2 - mast.0).hypot(sum.1 / sum.2 - mast.1);
        if let Some(i) = nearest.iter().position(|&n| d < n) {
            nearest[i..].rotate_right(1);
            nearest[i] = d;
        }
    };
    let cells = db.lac_cells(radio, mcc, mnc, lac);
    if cells.clone().map(<[_]>::len).sum::<usize>() > SITE_SPACING_MAX_CELLS {
        return None;
    }
    let mut site = None;
    let mut sum = (0.0, 0.0, 0.0);
    for record in cells.flatten() {
        let this = site_of_key(radio, record.key());
        if this != site {
            keep(site, sum);
            site = this;
            sum = (0.0, 0.0, 0.0);
        }
        let st = record.station();
        let (x, y) = frame.to_xy(st.lat(), st.lon());
        sum = (sum.0 + x, sum.1 + y, sum.2 + 1.0);
    }
    keep(site, sum);
    let far = nearest[SITE_SPACING_RANK - 1];
    far.is_finite().then_some(far)
}

/// The LAC/TAC area of the first observed cell whose area is known.
pub fn area_answer(db: &Database, cells: &[CellObs]) -> Option<Answer> {
    for obs in cells {
        for &radio in candidate_radios(obs) {
            for &mcc in candidate_mccs(db, radio, obs) {
                if let Some(a) = db.area(radio, mcc, obs.mnc, obs.lac) {
                    return Some(Answer {
                        lat: a.lat(),
                        lon: a.lon(),
                        accuracy_m: area_accuracy(a.range_m as f64, a.cells),
                        fallback: Fallback::Lacf,
                        aged: true,
                        source: Source::Area,
                        ring: false,
                        level: false,
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
    use crate::solve::params::typical_serving_dbm;
    use crate::store::netstats::NetworkScale;

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
            scale: NetworkScale::UNKNOWN,
            point_spread_m: None,
        };
        (frame, cell)
    }

    #[test]
    fn cells_count_by_their_radius_weights() {
        let (_, a) = serving_east(None);
        let b = SeenCell {
            serving: false,
            ..a
        };
        assert_eq!(effective_count(&[a]), 1.0);
        assert!((effective_count(&[a, b, b]) - 3.0).abs() < 1e-9);
        // 40 dB above the others: about one, however many were heard.
        let strong = SeenCell {
            signal: a.signal.map(|s| s + 40.0),
            ..a
        };
        let n = effective_count(&[strong, b, b, b]);
        assert!(n < 1.05, "{n}");
    }

    #[test]
    fn cells_without_levels_weigh_alike_and_claim_less_the_more_are_heard() {
        // Crowd cells on a line, no masts: each answers at its estimate.
        let (frame, mut serving) = serving_east(None);
        serving.tower = None;
        serving.signal = Some(-70.0);
        let cells: Vec<SeenCell> = (0..5)
            .map(|i| {
                let mut c = serving;
                c.serving = i == 0;
                c.signal = Some(-70.0 - 10.0 * i as f64);
                (c.lat, c.lon) = frame.to_latlon(500.0 + 400.0 * i as f64, 0.0);
                c
            })
            .collect();
        let bare: Vec<SeenCell> = cells
            .iter()
            .map(|c| SeenCell { signal: None, ..*c })
            .collect();
        // Levels on the serving cell alone weigh nothing: the answer is the bare one.
        let mut serving_only = bare.clone();
        serving_only[0].signal = Some(-70.0);
        let (a, b) = (solve(&serving_only, 0).unwrap(), solve(&bare, 0).unwrap());
        assert_eq!((a.lat, a.lon, a.accuracy_m), (b.lat, b.lon, b.accuracy_m));
        assert!((effective_count(&serving_only) - effective_count(&bare)).abs() < 1e-12);
        // The levelled answer leans on the strong serving cell; the bare one does not.
        let levelled = solve(&cells, 0).unwrap();
        let east = |lat: f64, lon: f64| frame.to_xy(lat, lon).0;
        assert!(east(levelled.lat, levelled.lon) < east(b.lat, b.lon) - 300.0);
        // The bare radius is the spread's, less by the count: (5 / 2)^-0.4 = 0.69 of what the
        // same cells claim heard at one level (alike but for the bare serving cell's weight of
        // [`UNLEVELLED_SERVING_WEIGHT`]).
        let factor = unlevelled_factor(5.0, false);
        assert!((factor - 2.5f64.powf(-0.4)).abs() < 1e-12, "{factor}");
        let even: Vec<SeenCell> = cells
            .iter()
            .map(|c| SeenCell {
                signal: Some(-100.0),
                ..*c
            })
            .collect();
        let even = solve(&even, 0).unwrap().accuracy_m;
        let ratio = b.accuracy_m / even;
        assert!(
            (ratio / factor - 1.0).abs() < 0.1,
            "{ratio} against {factor}"
        );
        assert_eq!(unlevelled_factor(1.0, false), 1.0);
        assert_eq!(unlevelled_factor(2.0, false), 1.0);
        // Published masts' spread grows less with the count (their places are exact).
        assert!(unlevelled_factor(5.0, true) > factor);
    }

    #[test]
    fn a_learned_answer_carried_by_one_cell_claims_that_cells_own_radius() {
        // Two learned cells 300 m apart, heard 40 dB apart: the stronger carries the weight,
        // so the anchors' spread is a few metres and the answer is that cell's estimate.
        let (frame, mut strong) = serving_east(None);
        strong.learned = true;
        strong.tower = None;
        strong.signal = Some(-70.0);
        let mut weak = strong;
        weak.serving = false;
        weak.signal = Some(-110.0);
        (weak.lat, weak.lon) = frame.to_latlon(500.0, 300.0);
        let alone = solve(&[strong], 0).unwrap().accuracy_m;
        assert_eq!(alone, lone_radius(&strong, strong.samples));
        let pair = solve(&[strong, weak], 0).unwrap().accuracy_m;
        let own = LEARNED_SPREAD_SHARE * OWN_RADII_SCALE * alone;
        assert!((pair - own).abs() < 0.01 * own, "{pair} against {own}");
        // Crowd cells keep the spread's radius alone: here the floor.
        let (strong, weak) = (
            SeenCell {
                learned: false,
                ..strong
            },
            SeenCell {
                learned: false,
                ..weak
            },
        );
        assert_eq!(
            solve(&[strong, weak], 0).unwrap().accuracy_m,
            MIN_CELL_ACCURACY_M
        );
    }

    #[test]
    fn a_learned_level_claims_its_spread_down_to_a_gps_fix() {
        let (_, mut cell) = serving_east(None);
        cell.learned = true;
        cell.tower = None;
        for (spread, claimed) in [(120.0, 120.0), (30.0, 30.0), (5.0, MIN_LEVEL_ACCURACY_M)] {
            cell.point_spread_m = Some(spread);
            assert_eq!(solve(&[cell], 0).unwrap().accuracy_m, claimed, "{spread}");
        }
        // Without a level, a cell answer keeps the crowd floor however small its range.
        cell.point_spread_m = None;
        cell.range_m = 10.0;
        assert_eq!(solve(&[cell], 0).unwrap().accuracy_m, MIN_CELL_ACCURACY_M);
    }

    #[test]
    fn a_cell_heard_alone_without_an_advance_moves_half_as_far_in_log_distance() {
        let (frame, mut cell) = serving_east(None);
        // 40 dB above the typical level: the level's factor is 10^(-1/2).
        cell.signal = cell.signal.map(|s| s + 40.0);
        let (among, _, _) = anchor_of(&frame, &cell, false);
        let (alone, _, on_axis) = anchor_of(&frame, &cell, true);
        assert!(on_axis);
        assert!((among - 500.0 * 10f64.powf(-0.5)).abs() < 1e-6, "{among}");
        assert!((alone - 500.0 * 10f64.powf(-0.25)).abs() < 1e-6, "{alone}");
        // With an advance the advance bounds the distance, alone or not.
        cell.ta_m = Some((ta_middle_m(6.0, 78.12), 78.12));
        assert_eq!(
            anchor_of(&frame, &cell, true).0,
            anchor_of(&frame, &cell, false).0
        );
    }

    #[test]
    fn a_cell_is_placed_on_its_axis_at_its_own_distance_not_its_sites() {
        let (frame, cell) = serving_east(None);
        let at = |spread_m: f64| {
            let mut c = cell;
            if let Some(t) = c.tower.as_mut() {
                t.spread_m = spread_m;
            }
            let (x, y, on_axis) = anchor_of(&frame, &c, true);
            assert!(on_axis && y.abs() < 1e-6, "{x} {y}");
            x
        };
        // The sector's own estimate is 500 m out, its siblings' at 300 m on average: at the
        // typical level it stays where its own crowd was.
        assert!((at(300.0) - at(500.0)).abs() < 1e-9);
        assert!((at(300.0) - 500.0).abs() < 1e-6, "{}", at(300.0));
    }

    #[test]
    fn a_learned_cell_on_its_ring_claims_the_rings_radius() {
        let step = 78.12;
        // A learned cell 500 m east of its mast with a range of 1 km, heard alone.
        let (_, mut cell) = serving_east(None);
        cell.learned = true;
        let alone = solve(&[cell], 0).unwrap();
        let spread = single_cell_accuracy(1_000.0, 50);
        assert!((alone.accuracy_m - spread).abs() < 1e-6);
        // Advance 9 (its step's middle 742 m, a step and a half either way 625-859 m): the
        // learned distance (500 m) held to the inner edge, 8 steps; the radius grows with the
        // ring, not with the range.
        for (ta, d) in [(9.0, 8.0 * step), (30.0, 29.0 * step)] {
            cell.ta_m = Some(((ta + 0.5) * step, step));
            let ringed = solve(&[cell], 0).unwrap();
            assert!(
                (ringed.accuracy_m - RING_SPREAD * d.hypot(step)).abs() < 0.5,
                "{} {}",
                ringed.accuracy_m,
                RING_SPREAD * d.hypot(step)
            );
        }
        // A crowd cell on its ring: its mast and axis are rougher, the radius wider; on its
        // axis without an advance, its range's radius.
        cell.learned = false;
        let crowd = solve(&[cell], 0).unwrap();
        let (x, y, on_axis) = anchor_of(&LocalFrame::new(52.0, 4.0), &cell, true);
        assert!(on_axis);
        let want = CROWD_RING_SPREAD * x.hypot(y).hypot(step);
        assert!(
            (crowd.accuracy_m - want).abs() < 0.5,
            "{} {want}",
            crowd.accuracy_m
        );
        cell.ta_m = None;
        let off_ring = solve(&[cell], 0).unwrap().accuracy_m;
        let want = crowd_cell_accuracy(1_000.0, DEFAULT_RANGE_M, 50)
            * level_reach(&cell)
            * SINGLE_ON_AXIS_SCALE;
        assert!((off_ring - want).abs() < 1e-6, "{off_ring} {want}");
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
        // Due north of the mast (90 degrees off the axis): on the wedge's edge, kept.
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, 300.0),
            (0.0, 300.0)
        ));
        // Behind the mast, north-west, within the ring: turned to the wedge's edge, due
        // north, at the same distance.
        let (x, y) = within_serving_sector(&frame, &cell, -200.0, 300.0);
        assert!(close((x, y), (0.0, 200f64.hypot(300.0))), "{x} {y}");
        // South-west: the other edge.
        let (_, y) = within_serving_sector(&frame, &cell, -200.0, -300.0);
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
            within_serving_sector(&frame, &cell, -200.0, 300.0),
            (-200.0, 300.0)
        ));
    }

    #[test]
    fn a_lone_cell_on_its_mast_claims_its_advances_distance() {
        let (_, mut cell) = serving_east(None);
        let tower = cell.tower.unwrap();
        // Published tower positions: the estimate is the mast.
        (cell.lat, cell.lon) = (tower.lat, tower.lon);
        let without = solve(&[cell], 0).unwrap();
        assert!(!without.ring);
        assert!(
            (without.accuracy_m
                - crowd_cell_accuracy(1_000.0, DEFAULT_RANGE_M, 50) * level_reach(&cell))
            .abs()
                < 1e-6
        );
        // Advance 6: the device is on the ring 508 m out, any bearing; the answer stays on
        // the mast and claims the ring's distance, whatever the range.
        let d = 6.5 * 78.12;
        cell.ta_m = Some((d, 78.12));
        for range_m in [300.0, 1_000.0, 5_000.0] {
            cell.range_m = range_m;
            let a = solve(&[cell], 0).unwrap();
            assert!(a.ring);
            assert!((a.accuracy_m - d).abs() < 1e-9, "{}", a.accuracy_m);
            assert!((a.lat - tower.lat).abs() < 1e-9 && (a.lon - tower.lon).abs() < 1e-9);
        }
        // Advance 0 on LTE: the floor of a cell answer.
        cell.ta_m = Some((0.5 * 78.12, 78.12));
        assert_eq!(solve(&[cell], 0).unwrap().accuracy_m, MIN_CELL_ACCURACY_M);
    }

    #[test]
    fn a_lone_cell_heard_weaker_claims_more() {
        // No mast: the level does not move the answer, only its radius.
        let (_, cell) = serving_east(None);
        let cell = SeenCell {
            tower: None,
            ..cell
        };
        let at = |signal: Option<f64>, via_short_cid: bool| {
            solve(
                &[SeenCell {
                    signal,
                    via_short_cid,
                    ..cell
                }],
                0,
            )
            .unwrap()
            .accuracy_m
        };
        let typical = typical_serving_dbm(cell.radio).unwrap();
        let (weak, usual, strong) = (
            at(Some(typical - 20.0), false),
            at(Some(typical), false),
            at(Some(typical + 20.0), false),
        );
        assert!(weak > usual && usual > strong, "{weak} {usual} {strong}");
        // The level's distance factor, times the scale: 10^(20/80) either way of the typical.
        let f = cell_distance_factor(cell.radio, typical - 20.0).unwrap();
        assert!((weak / usual - f).abs() < 1e-9, "{}", weak / usual);
        assert!((at(None, false) * LEVEL_RADIUS_SCALE - usual).abs() < 1e-9);
        // A short-CID match may be another cell: its level says nothing of this one.
        assert_eq!(at(Some(typical - 20.0), true), at(None, true));
    }

    #[test]
    fn sectors_of_one_mast_answer_as_their_serving_cell() {
        let (_, mut serving) = serving_east(None);
        let tower = serving.tower.unwrap();
        // Published tower positions: every sector's estimate is the mast.
        (serving.lat, serving.lon) = (tower.lat, tower.lon);
        let sibling = SeenCell {
            serving: false,
            signal: Some(-105.0),
            ..serving
        };
        let alone = solve(&[serving], 0).unwrap();
        let both = solve(&[serving, sibling], 0).unwrap();
        // At the mast, as the serving cell alone, with half its radius: not the nil spread's
        // floor.
        assert!((both.lat - tower.lat).abs() < 1e-9 && (both.lon - tower.lon).abs() < 1e-9);
        let want = ONE_MAST_SCALE * alone.accuracy_m;
        assert!(want > 2.0 * MIN_CELL_ACCURACY_M);
        assert!(
            (both.accuracy_m - want).abs() < 1e-6,
            "{} vs {want}",
            both.accuracy_m
        );
        // With an advance, the advance's distance, as the serving cell alone claims.
        let d = 6.5 * 78.12;
        serving.ta_m = Some((d, 78.12));
        let a = solve(&[serving, sibling], 0).unwrap();
        assert!(a.ring);
        assert!((a.accuracy_m - d).abs() < 1e-9, "{}", a.accuracy_m);
        // A sector of another mast makes it a multi-cell answer again.
        let (lat, lon) = LocalFrame::new(tower.lat, tower.lon).to_latlon(-800.0, 0.0);
        let other = SeenCell {
            lat,
            lon,
            tower: Some(SiteMast { lat, lon, ..tower }),
            ..sibling
        };
        assert!(!solve(&[serving, sibling, other], 0).unwrap().ring);
    }

    #[test]
    fn a_serving_cell_on_its_mast_bounds_the_distance_by_its_advance() {
        let close = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).hypot(a.1 - b.1) < 1e-6;
        let (frame, mut cell) = serving_east(Some((4.5 * 78.12, 78.12)));
        let tower = cell.tower.unwrap();
        (cell.lat, cell.lon) = (tower.lat, tower.lon);
        // Pulled 100 m north by the neighbours: out to the ring (234-469 m), same bearing.
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, 100.0),
            (0.0, 3.0 * 78.12)
        ));
        // Within the ring, any bearing: kept (no wedge without an axis).
        assert!(close(
            within_serving_sector(&frame, &cell, -300.0, 0.0),
            (-300.0, 0.0)
        ));
        // Beyond it: in to its outer edge.
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, -900.0),
            (0.0, -6.0 * 78.12)
        ));
        // On the mast: no bearing, kept.
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, 0.0),
            (0.0, 0.0)
        ));
        // Without an advance nothing bounds it.
        cell.ta_m = None;
        assert!(close(
            within_serving_sector(&frame, &cell, 0.0, 100.0),
            (0.0, 100.0)
        ));
    }

    /// [`serving_east`] with a neighbour west of the mast, off the serving sector: the mean of
    /// the two anchors lies behind the mast, north-west of it, where the bound turns it.
    fn serving_and_neighbour_west() -> (LocalFrame, SeenCell, SeenCell) {
        let (frame, serving) = serving_east(None);
        let (lat, lon) = frame.to_latlon(-1_500.0, 300.0);
        let neighbour = SeenCell {
            lat,
            lon,
            tower: None,
            serving: false,
            ..serving
        };
        (frame, serving, neighbour)
    }

    /// The answer of `serving` and `neighbour` with the serving cell's mast unknown: no axis,
    /// no bound.
    fn without_mast(serving: SeenCell, neighbour: SeenCell) -> Answer {
        let serving = SeenCell {
            tower: None,
            ..serving
        };
        solve(&[serving, neighbour], 0).unwrap()
    }

    #[test]
    fn the_multi_cell_radius_knows_whether_the_serving_sector_bounded_the_answer() {
        let (_, serving, neighbour) = serving_and_neighbour_west();
        let bounded = solve(&[serving, neighbour], 0).unwrap();
        let off_axis = without_mast(serving, neighbour);
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
    fn a_serving_advance_sizes_the_radius_by_how_far_the_mean_missed_its_ring() {
        let (frame, serving, neighbour) = serving_and_neighbour_west();
        // Without an advance: the wedge's bound, R times BOUNDED_SCALE; without a mast, the
        // cells' mean unbounded.
        let r = solve(&[serving, neighbour], 0).unwrap().accuracy_m / BOUNDED_SCALE;
        let unbounded = without_mast(serving, neighbour);
        let (mx, my) = frame.to_xy(unbounded.lat, unbounded.lon);
        // Advance 6, a ring of 508 m whose interval holds the serving anchor (500 m): the same
        // anchors and mean, the radius by how far the mean missed the ring. Advance 20, a ring
        // of 1,602 m far beyond where the cells put the device: wider.
        for ta in [6.0, 20.0] {
            let step = 78.12;
            let d = (ta + 0.5) * step;
            let with_ta = SeenCell {
                ta_m: Some((d, step)),
                ..serving
            };
            let a = solve(&[with_ta, neighbour], 0).unwrap();
            if ta == 6.0 {
                let miss = (mx.hypot(my) - d).abs();
                let want = RING_MISS_SCALE * (r * (miss + RING_MISS_FLOOR * r)).sqrt();
                assert!(
                    (a.accuracy_m - want).abs() < 1e-6,
                    "{} {want}",
                    a.accuracy_m
                );
            } else {
                // A ring far from where the cells put the device: a wider radius.
                let near = solve(
                    &[
                        SeenCell {
                            ta_m: Some((6.5 * step, step)),
                            ..serving
                        },
                        neighbour,
                    ],
                    0,
                )
                .unwrap();
                assert!(a.accuracy_m > near.accuracy_m);
            }
        }
    }

    #[test]
    fn cells_on_their_masts_claim_the_masts_radius() {
        let (frame, serving) = serving_east(None);
        // Published tower positions: the serving cell's estimate is its mast.
        let on_mast = SeenCell {
            lat: 52.0,
            lon: 4.0,
            ..serving
        };
        let (lat, lon) = frame.to_latlon(-500.0, 300.0);
        let neighbour = SeenCell {
            lat,
            lon,
            tower: None,
            serving: false,
            ..serving
        };
        let mast = solve(&[on_mast, neighbour], 0).unwrap();
        let no_mast = solve(
            &[
                SeenCell {
                    tower: None,
                    ..on_mast
                },
                neighbour,
            ],
            0,
        )
        .unwrap();
        // The same anchors either way (no axis from an estimate on its mast, no bound): on
        // its mast, the radius is the anchors' spread alone (their weights are equal: half
        // their distance), with no range or sightings term.
        assert!((mast.lat - no_mast.lat).abs() < 1e-12 && (mast.lon - no_mast.lon).abs() < 1e-12);
        let spread = 500f64.hypot(300.0) / 2.0;
        let want = ON_MAST_SCALE * spread * count_factor(2.0);
        assert!(
            (mast.accuracy_m - want).abs() < 1e-6,
            "{} vs {want}",
            mast.accuracy_m
        );
        let crowd = cells_accuracy(spread, 1_000.0) * count_factor(2.0) * OFF_AXIS_SCALE;
        assert!(
            (no_mast.accuracy_m - crowd).abs() < 1e-6,
            "{} vs {crowd}",
            no_mast.accuracy_m
        );
    }

    #[test]
    fn a_published_network_answers_the_same_whatever_ranges_and_sightings_it_wrote() {
        let (frame, serving) = serving_east(None);
        let published = NetworkScale {
            published_spacing_m: Some(400.0),
            ..NetworkScale::UNKNOWN
        };
        let (lat, lon) = frame.to_latlon(-500.0, 300.0);
        let (far_lat, far_lon) = frame.to_latlon(3_000.0, -2_000.0);
        let answer = |range_m: f64, samples: u32| {
            let cell = |lat: f64, lon: f64, serving: bool| SeenCell {
                lat,
                lon,
                range_m,
                samples,
                serving,
                scale: published,
                ..serving_east(None).1
            };
            // Each cell on its mast (the serving cell's at the frame's origin).
            let mut on_mast = cell(52.0, 4.0, true);
            on_mast.signal = Some(-90.0);
            let mut near = cell(lat, lon, false);
            near.tower = Some(SiteMast {
                lat,
                lon,
                ..serving.tower.unwrap()
            });
            let mut far = cell(far_lat, far_lon, false);
            far.tower = Some(SiteMast {
                lat: far_lat,
                lon: far_lon,
                ..serving.tower.unwrap()
            });
            solve(&[on_mast, near, far], 0).unwrap()
        };
        let base = answer(1_000.0, 100);
        for (range_m, samples) in [(100.0, 100), (20_000.0, 100), (1_000.0, 0), (0.0, 1)] {
            let other = answer(range_m, samples);
            assert!(
                (other.lat - base.lat).abs() < 1e-12
                    && (other.lon - base.lon).abs() < 1e-12
                    && (other.accuracy_m - base.accuracy_m).abs() < 1e-9,
                "range {range_m}, samples {samples}: {other:?} against {base:?}"
            );
        }
        // A crowd's cells, by contrast, weigh and claim by their ranges and sightings.
        let crowd = |range_m: f64| {
            let cell = |lat: f64, lon: f64, serving: bool| SeenCell {
                lat,
                lon,
                range_m,
                serving,
                tower: None,
                ..serving_east(None).1
            };
            solve(
                &[
                    cell(52.0, 4.0, true),
                    cell(lat, lon, false),
                    cell(far_lat, far_lon, false),
                ],
                0,
            )
            .unwrap()
        };
        assert!(crowd(100.0).accuracy_m != crowd(20_000.0).accuracy_m);
    }

    #[test]
    fn a_published_network_claims_by_how_evenly_its_masts_stand() {
        let (frame, serving) = serving_east(None);
        let (lat, lon) = frame.to_latlon(-900.0, 600.0);
        let answer = |spread: Option<f32>, published: bool| {
            let scale = NetworkScale {
                published_spacing_m: published.then_some(800.0),
                published_spacing_spread: spread,
                ..NetworkScale::UNKNOWN
            };
            let mut on_mast = SeenCell {
                lat: 52.0,
                lon: 4.0,
                scale,
                ..serving
            };
            on_mast.signal = Some(-90.0);
            let mut other = SeenCell {
                lat,
                lon,
                serving: false,
                scale,
                ..serving
            };
            other.signal = Some(-95.0);
            other.tower = Some(SiteMast {
                lat,
                lon,
                ..serving.tower.unwrap()
            });
            solve(&[on_mast, other], 0).unwrap().accuracy_m
        };
        let unscaled = answer(None, true);
        // Masts on a grid (the median spacing 1.2 times the 10% quantile) claim less than masts
        // strung along roads (3 times), by the layout's law.
        let grid = answer(Some(1.2), true);
        let roads = answer(Some(3.0), true);
        let want =
            |r: f32| unscaled * PUBLISHED_LAYOUT_SCALE * f64::from(r).powf(PUBLISHED_LAYOUT_EXP);
        assert!((grid - want(1.2)).abs() < 1e-6, "{grid} vs {}", want(1.2));
        assert!((roads - want(3.0)).abs() < 1e-6, "{roads} vs {}", want(3.0));
        assert!(grid < roads);
        // A spread without a published spacing (the lookup withdrew it: a learned cell, a crowd
        // network) changes nothing.
        assert_eq!(answer(Some(3.0), false), answer(None, false));
    }

    #[test]
    fn a_network_without_sample_counts_is_read_at_the_prior_count() {
        let (_, cell) = serving_east(None);
        let alone = |samples: u32, uncounted: bool| {
            let c = SeenCell {
                samples,
                tower: None,
                scale: NetworkScale {
                    uncounted,
                    ..NetworkScale::UNKNOWN
                },
                ..cell
            };
            solve(&[c], 0).unwrap().accuracy_m
        };
        // An export without counts: neither its 0 nor its 1 reads as one sighting.
        let prior = alone(UNCOUNTED_SAMPLES, false);
        assert_eq!(alone(0, true), prior);
        assert_eq!(alone(1, true), prior);
        assert!(alone(1, false) > prior);
        // A learned cell's count is our learner's own.
        let learned = SeenCell {
            learned: true,
            samples: 1,
            tower: None,
            scale: NetworkScale {
                uncounted: true,
                ..NetworkScale::UNKNOWN
            },
            ..cell
        };
        assert_eq!(samples_of(&learned), 1);
    }

    #[test]
    fn a_lone_cell_of_a_network_without_ranges_claims_by_its_networks_spacing() {
        let (_, cell) = serving_east(None);
        let reference = reference_spacing_per_range(cell.radio).unwrap();
        let alone = |range_m: f64, unranged: bool| {
            let c = SeenCell {
                range_m,
                tower: None,
                scale: NetworkScale {
                    median_range_m: Some(1_500.0),
                    spacing_per_range: Some((2.0 * reference) as f32),
                    unranged,
                    ..NetworkScale::UNKNOWN
                },
                ..cell
            };
            solve(&[c], 0).unwrap().accuracy_m
        };
        // Every cell at the import's default: the range read in the network's units (twice
        // the default here), as a stored range of that size would claim.
        let spacing = alone(3_000.0, false);
        // (The units are stored as f32.)
        assert!((alone(1_500.0, true) / spacing - 1.0).abs() < 1e-6);
        assert!(alone(1_500.0, false) < spacing);
    }

    #[test]
    fn a_lone_crowd_cell_of_a_network_whose_ranges_run_several_spacings_claims_less() {
        let (_, cell) = serving_east(None);
        let alone = |spacing_per_range: f32, unranged: bool| {
            let c = SeenCell {
                range_m: 3_000.0,
                tower: None,
                scale: NetworkScale {
                    median_range_m: Some(3_000.0),
                    spacing_per_range: Some(spacing_per_range),
                    unranged,
                    ..NetworkScale::UNKNOWN
                },
                ..cell
            };
            solve(&[c], 0).unwrap().accuracy_m
        };
        // Ranges of two spacings or less: the stored range's radius.
        let within = alone(0.5, false);
        assert_eq!(alone(0.9, false), within);
        // Ranges of five spacings: two fifths of it (f32 units).
        assert!((alone(0.2, false) / within - 0.4).abs() < 1e-6);
        // Ranges the import gave every row say nothing of the crowd: read in the network's
        // units alone (0.2 / 0.5 of them), not cut further.
        assert!((alone(0.2, true) / alone(0.5, true) - 0.4).abs() < 1e-6);
    }

    #[test]
    fn a_range_is_read_in_its_networks_units() {
        let (_, mut cell) = serving_east(None);
        let reference = reference_spacing_per_range(cell.radio).unwrap();
        // Without statistics: the stored range as it is, and the prior for none.
        assert_eq!(range_of(&cell), 1_000.0);
        cell.range_m = 0.0;
        assert_eq!(range_of(&cell), DEFAULT_RANGE_M);
        // Sites twice as far apart for their ranges as the reference's: ranges that say
        // half the geometry, read twice as wide; the network's median range for none.
        cell.scale = NetworkScale {
            median_range_m: Some(600.0),
            spacing_per_range: Some((2.0 * reference) as f32),
            sector_offset: Some(0.35),
            ..NetworkScale::UNKNOWN
        };
        assert!(
            (range_of(&cell) - 1_200.0).abs() < 1e-3,
            "{}",
            range_of(&cell)
        );
        cell.range_m = 1_000.0;
        assert!((range_of(&cell) - 2_000.0).abs() < 1e-3);
        // Bounded: one figure of a network says at most this much.
        cell.scale.spacing_per_range = Some((100.0 * reference) as f32);
        assert!((range_of(&cell) - 4_000.0).abs() < 1e-3);
        // A learned cell's range is our learner's own.
        cell.learned = true;
        assert_eq!(range_of(&cell), 1_000.0);
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
        // well sampled: its spread, a little more than its range
        let many = crowd_cell_accuracy(1_000.0, DEFAULT_RANGE_M, 1_000_000);
        assert!((many - 1_000.0 * CROWD_SPREAD).abs() < 0.5, "{many}");
        // one sighting with the 50 m floor for a range: the network's range and the
        // estimate's error, a kilometre or more rather than the 50 m a published range says
        let one = crowd_cell_accuracy(50.0, DEFAULT_RANGE_M, 1);
        assert!(
            (one - 1_000.0 * CROWD_SPREAD.hypot(CROWD_ESTIMATE_ERROR)).abs() < 1e-9,
            "{one}"
        );
        // fewer sightings never claim more
        let radii: Vec<f64> = [1, 2, 4, 10, 50, 500]
            .iter()
            .map(|&n| crowd_cell_accuracy(800.0, DEFAULT_RANGE_M, n))
            .collect();
        assert!(radii.windows(2).all(|w| w[0] > w[1]), "{radii:?}");
    }

    #[test]
    fn a_crowd_whose_sectors_sit_near_their_masts_widens_the_multi_cell_radius() {
        let (_, mut cell) = serving_east(None);
        assert_eq!(offset_factor(&cell), 1.0);
        cell.scale.sector_offset = Some(SECTOR_OFFSET_REF as f32);
        assert!((offset_factor(&cell) - 1.0).abs() < 1e-6);
        // Estimates a quarter as far out: twice as wide, within the bound.
        cell.scale.sector_offset = Some((SECTOR_OFFSET_REF / 4.0) as f32);
        assert!((offset_factor(&cell) - 2f64.min(SECTOR_OFFSET_BOUNDS.1)).abs() < 1e-6);
        cell.scale.sector_offset = Some(0.0);
        assert_eq!(offset_factor(&cell), SECTOR_OFFSET_BOUNDS.1);
        cell.scale.sector_offset = Some(10.0);
        assert_eq!(offset_factor(&cell), SECTOR_OFFSET_BOUNDS.0);
        // Our learner's cells are not a crowd's.
        cell.learned = true;
        assert_eq!(offset_factor(&cell), 1.0);
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
        // At 500 m, the size's factor (500 m / 1 km)^0.1.
        let k = SPREAD_SCALE * (500.0 / SPREAD_SIZE_REF_M).powf(SPREAD_SIZE_EXP);
        // Anchors as far apart as the cells reach: the spread itself.
        assert!((cells_accuracy(500.0, 500.0) - 500.0 * k).abs() < 1e-9);
        // Overlapping coverage (spread a quarter of the range): 0.25^0.25 = 0.71 of the spread.
        let quarter = 500.0 * 0.25f64.powf(SPREAD_RANGE_EXP) * k;
        assert!((cells_accuracy(500.0, 2_000.0) - quarter).abs() < 1e-9);
        assert!(quarter < 500.0 * k);
        // Barely overlapping (spread four times the range): 4^0.25 = 1.41 times the spread.
        let four = 500.0 * 4f64.powf(SPREAD_RANGE_EXP) * k;
        assert!((cells_accuracy(500.0, 125.0) - four).abs() < 1e-9);
        assert!(four > 500.0 * k);
        // Sites ten times as far apart, for the same ranges' share: more than ten times as wide.
        assert!(cells_accuracy(5_000.0, 5_000.0) > 10.0 * cells_accuracy(500.0, 500.0));
    }

    #[test]
    fn a_cell_at_a_place_already_counted_counts_half() {
        let at = |x: f64, y: f64| Anchor {
            x,
            y,
            w: 1.0,
            range: 1_000.0,
        };
        // Three sectors of one mast (within a metre of each other) and one of another mast.
        let sectors = [at(0.0, 0.0), at(0.4, 0.0), at(0.0, 0.5), at(800.0, 0.0)];
        assert_eq!(anchor_count(&sectors), 2.0 + 2.0 * SAME_PLACE_COUNT);
        let apart = [at(0.0, 0.0), at(5.0, 0.0), at(0.0, 5.0), at(800.0, 0.0)];
        assert_eq!(anchor_count(&apart), 4.0);
        // More sectors of the masts already heard still narrow the radius, by less than masts.
        assert!(count_factor(anchor_count(&sectors)) > count_factor(4.0));
        assert!(count_factor(anchor_count(&sectors)) < count_factor(2.0));
    }

    #[test]
    fn fewer_cells_claim_more_of_their_spread() {
        let f: Vec<f64> = (2..=7).map(|n| count_factor(n as f64)).collect();
        assert!(f.windows(2).all(|w| w[0] > w[1]));
        // about 1.7 times the spread model's radius for 2 cells, a little more than itself
        // for 5, nine tenths of it for 7
        assert!((f[0] - 1.70).abs() < 0.02 && (f[3] - 1.08).abs() < 0.02);
        assert!((f[5] - 0.91).abs() < 0.02);
    }
}
