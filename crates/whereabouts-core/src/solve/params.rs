//! The solver's fitted constants and priors, one section per concern: how a cell's signal
//! reads as distance and weight, where the cells put the device, how wide a cell answer's
//! radius is, and the WiFi centroid and its radius.
//!
//! Each constant says what it is, why it has its value, and whether it is a prior (a physical
//! fact or an assumption) or fitted. "Fitted on the simulator" means on the simulator's
//! reference world with `npx tsx bench/accuracy.ts --requests 10000 --seed N` (two seeds to
//! fit, others as a check), by the `wmean/ours (paired)` column, the ratio of the weighted
//! mean's median error to ours. "Fitted on the world families" means on the simulator's
//! world families, seeds 101..130 with 1,000 requests a scenario, reported on other seeds
//! (`bench/families.ts`): for the position constants, by coordinate descent over a grid of
//! each, maximising over the cell scenarios the mean of the log of the median world's paired
//! ratio plus half the log of the worst world's; for the radius constants (with the reference
//! world's seed 1 at 10,000 requests) with `npx tsx bench/radius-fit.ts` (a factor per radius
//! branch that brings the fit worlds' inside shares nearest 68%, least absolute deviations of
//! the per-world shares), by each scenario's share of true positions inside the radius,
//! [`super::CONFIDENCE`]. How the model works: docs/positioning.md; what was tried and
//! measured: docs/experiments.md.
//!
//! What differs between data sets is read from the database where it can be
//! (`store::netstats`): a crowd cell's range is scaled by its network's site spacing for the
//! position's weights and the robust mean ([`reference_spacing_per_range`]); the single crowd
//! cell's radius stands on its stored range, which its own sightings measured; the multi-cell
//! radius follows how far out from their masts the network's crowd placed its sectors
//! ([`SECTOR_OFFSET_REF`]). The multi-cell radius's shape was fitted over the world families
//! and a second generator's worlds together ([`SPREAD_SCALE`]). The rest (path-loss
//! exponents, serving levels) are still the reference world's: a crowd database holds no
//! levels to estimate them from, and on the simulator's world families they are where the
//! remaining misses are.

use crate::radio::Radio;

// Cell signal: distance and weight.

/// The path-loss exponent n of a cell's signal weight, 10^(dB / 5n) (inverse squared
/// distance). Fitted on the simulator: steeper than a physical n of 3.5 because the strongest
/// cells' estimates are also the best sampled.
pub(super) const CELL_PATH_LOSS_EXPONENT: f64 = 2.4;

/// dB per decade of distance from the mast when a level places a cell's anchor on its axis:
/// 10 n with n = 8, far steeper than the path loss itself (n of 2.5 to 4.5) because shadowing
/// (4 to 10 dB), antenna gain off the axis and each site's own power make one level a noisy
/// distance, and this shrinks it toward the typical one. Fitted on the world families
/// (position constants, below): 40 on the reference world alone, whose levels said more.
pub(super) const CELL_DISTANCE_DB_PER_DECADE: f64 = 80.0;

/// The level at which devices served by a cell of each radio typically hear it: where the
/// crowd that made a cell's estimate was. Fitted on the simulator (the level at which true
/// positions projected on a sector's axis lie at the estimate's distance from the mast), and
/// in line with real serving levels (GSM RSSI around -75 dBm, LTE RSRP around -100 dBm).
pub(super) fn typical_serving_dbm(radio: Radio) -> Option<f64> {
    match radio {
        Radio::Gsm => Some(-73.0),
        Radio::Umts => Some(-86.0),
        Radio::Lte | Radio::Nbiot | Radio::Nr => Some(-99.0),
        // No site grouping for CDMA ids: the factor is never asked for.
        Radio::Cdma => None,
    }
}

/// The unit of range the range-based constants of this file are expressed in, by radio: the
/// median site spacing (metres from a mast to the nearest other mast) over the median stored
/// range of the data they were set on (the simulator's reference world). A network's stored
/// ranges are read times its own spacing/range over this (`cells::range_units`), so that a
/// range says the same geometry whatever definition of range the network's data uses (the
/// farthest sighting, a quantile, twice the mean distance) and however much of a cell's
/// coverage its crowd saw. It differs by radio because the ranges do: lower bands reach
/// farther from the same masts.
pub(super) fn reference_spacing_per_range(radio: Radio) -> Option<f64> {
    match radio {
        Radio::Gsm => Some(0.40),
        Radio::Umts => Some(0.56),
        Radio::Lte | Radio::Nbiot => Some(0.69),
        Radio::Nr => Some(0.96),
        Radio::Cdma => None,
    }
}

// Cell position: the weighted, robust mean of the anchors, bounded by the serving sector.

/// Cells with no published range, in a network without statistics (a database written before
/// them), are taken to be this wide (an assumption, not fitted); with statistics, the
/// network's median range.
pub(super) const DEFAULT_RANGE_M: f64 = 1_000.0;

/// A cell of a network published at its masts (`NetworkScale::published_spacing_m`) with no
/// stored range is taken to reach this many of its network's median site spacings: a
/// published mast says where the mast is, not how far it serves. Fitted on the world
/// families' published-tower requests cut to their serving cell without an advance (fit
/// seeds 101..130, least absolute deviations of the per-world inside shares from 68%; flat
/// from 3 to 4).
pub(super) const PUBLISHED_REACH_SPACINGS: f64 = 3.0;

/// An answer served by a network published at its masts has its radius times
/// `PUBLISHED_LAYOUT_SCALE (spacing p50 / p10)^PUBLISHED_LAYOUT_EXP`
/// (`NetworkScale::published_spacing_spread`): masts on an even grid leave less room
/// between them than masts in strings along roads and in clusters, where a device
/// hears a far mast across a gap. The masts' layout is the one part of such a world's
/// radius that its table shows. Fitted on the inside shares of the published-tower
/// requests of 230 family worlds (101..130, 301..500) and 16 of the second generator's
/// (1..16), three quarters of the full least-squares law `exp(-0.171 + 0.166 ln r)`,
/// which minimised both generators' fit worlds' mean distance from 68%
/// (docs/experiments.md).
pub(super) const PUBLISHED_LAYOUT_SCALE: f64 = 0.88;
pub(super) const PUBLISHED_LAYOUT_EXP: f64 = 0.125;

/// A crowd network whose rows carry no sample counts (`NetworkScale::uncounted`) has each
/// estimate taken to rest on this many sightings. Fitted on the world families' fit seeds
/// 101..130 with every crowd count blanked (least absolute deviations of the per-world inside
/// shares of the cell scenarios from 68%: 823 at 10, as the same worlds with their counts;
/// 903 at 5, 883 at 20), checked on seeds 201..216 (`bench/export-variants.ts`).
pub(super) const UNCOUNTED_SAMPLES: u32 = 10;

/// A cell's weight grows with the sightings behind its crowd estimate, as
/// samples / (samples + this): few sightings make a noisy estimate. Fitted on the world
/// families (10 on the reference world).
pub(super) const SAMPLES_HALF_WEIGHT: f64 = 5.0;

/// The robust mean: this many rounds of reweighting under a Cauchy loss on the distance from
/// the mean in units of this many of the cell's ranges, so that a cell heard through
/// favourable shadowing, or with a poor estimate, pulls less. Fitted on the simulator.
pub(super) const ROBUST_SCALE_RANGES: f64 = 3.0;
pub(super) const ROBUST_ROUNDS: usize = 3;

/// How far off its sector's axis (mast to crowd estimate) a device served by the sector is
/// taken to be at most: 90 degrees (its cos and sin), the half-plane in front of the mast.
/// Beamwidths of 45 to 120 degrees, front-to-back ratios down to 10 dB and azimuths a crowd
/// estimate gives only roughly make a narrower wedge cut off devices the sector serves.
/// Fitted on the world families (45 degrees on the reference world).
pub(super) const SERVING_WEDGE_COS: f64 = 0.0;
pub(super) const SERVING_WEDGE_SIN: f64 = 1.0;

// Cell radius: the 68% radius of a cell answer.

/// A single learned cell's radius: `SINGLE_SPREAD` of its range (the device is somewhere in
/// its coverage) and the standard error of a mean of `samples` sightings, `ESTIMATE_ERROR`
/// range / sqrt(samples), in quadrature. The learner's range is fitted against this
/// (`learn::estimate`, `npx tsx bench/cork.ts --cv`).
pub const SINGLE_SPREAD: f64 = 0.55;
pub const ESTIMATE_ERROR: f64 = 0.5;

/// A single crowd-averaged cell's radius: `CROWD_SPREAD` of its stored range and
/// `CROWD_ESTIMATE_ERROR` range / samples^`CROWD_SAMPLES_EXP`, in quadrature, the range at
/// least the network's median range (or [`DEFAULT_RANGE_M`]) over its samples. The stored
/// range, not read in its network's units: on the world families the 68% quantile of error /
/// radius varied between worlds half as much (standard deviation of its log 0.30 against
/// 0.48 in units of spacing), the stored range being measured from the very sightings whose
/// spread the device is in, whatever its definition, where the spacing is the geometry of the
/// sites, not of the coverage. A crowd range is how far a cell's own sightings lay from their
/// mean, so few sightings understate the coverage (one has no spread at all): hence the
/// floor and the estimate's term. Form and constants fitted on the world families'
/// single-cell scenario, so that cells of few and of many sightings each hold about 68% in
/// every fit world (least absolute deviations over worlds and bins of sightings;
/// docs/experiments.md).
pub(super) const CROWD_SPREAD: f64 = 0.95;
pub(super) const CROWD_ESTIMATE_ERROR: f64 = 3.0;
pub(super) const CROWD_SAMPLES_EXP: f64 = 1.5;

/// A lone crowd cell's radius, in a network whose median stored range is more than this many
/// of its median site spacings, times this many spacings over that range
/// (`cells::wide_ranges_factor`). A device is served by a cell about as far out as the sites
/// around stand; a crowd whose ranges run several spacings counted where the cell was heard
/// at all (as a neighbour, or at the farthest sighting), and the stored range then overstates
/// the serving area. The families' networks run 0.35-3.5 spacings; the second generator's
/// (`bench/other-worlds.ts`), whose phones partly log their neighbours, 1.8-19, where the
/// single cells held 87% inside in the median fit world. Fitted on both generators' fit
/// worlds (the objective of [`SPREAD_RANGE_EXP`], with (k spacings / range)^e): k 3, e 0.5
/// 0.1335; k 2, e 0.5 0.1274, e 0.75 0.1169, e 1 0.1146, e 1.5 0.1166; k 1.5, e 0.75 0.1137,
/// e 1 0.1134 (the families' part worse); without, 0.1407 (docs/experiments.md).
pub(super) const CROWD_RANGE_MAX_SPACINGS: f64 = 2.0;

/// A lone crowd or published cell's radius times this and the distance factor its level
/// implies (`solve::cells`, `level_reach`). With the stored range's radius alone, the lone
/// cells of the held-out family worlds 201..216 (no advance) held 42% inside when heard 30 dB
/// or more below their radio's typical serving level and 89% when 10 dB or more above it;
/// with the factor, 69-77% in every 10 dB bin; Cork's centroids imported as an averaged
/// export, 85.8% -> 75.2%. Fitted on the cell scenarios of family worlds 101..130 (the sum
/// over worlds and scenarios of |inside - 68%|: 9.92 without the factor, 9.74 / 9.69 at 0.8 /
/// 0.9, 10.03 at 1.0; docs/experiments.md).
pub(super) const LEVEL_RADIUS_SCALE: f64 = 0.9;

/// A single cell placed on its sector's axis by its signal is that much nearer the device
/// than its crowd estimate: its radius shrinks by this factor. Fitted on the simulator.
pub(super) const SINGLE_ON_AXIS_SCALE: f64 = 0.9;

/// A single cell placed on its mast's ring by its timing advance: the radius is this much of
/// hypot(step, d), d the answer's distance from the mast. The advance leaves the device
/// within about a step of the ring, and where on the ring is what remains: an error along it
/// that grows with the ring's size, not with the cell's range (which also holds the spread
/// across rings that the advance removed). On the world families' sightings the
/// learned-range radius held 94% where the ring fell inside the learned position and 39%
/// where it fell at twice its distance or more; this form holds 57-77% across those.
/// Learned cells: their mast fitted from advance rings (`learn::masts`); fitted on the
/// sightings of family worlds 101..108 (`bench/traces.ts --set families`, the 68% quantile of
/// error over hypot(step, d)), checked on the Dakar logs and worlds 201..216. Crowd cells:
/// their mast from sibling sectors and their axis from the crowd, both rougher, so wider;
/// fitted on the single-cell scenario of family worlds 101..130 (least absolute deviations of
/// the worlds' inside shares from 68%), checked on worlds 201..216 (docs/experiments.md).
pub(super) const RING_SPREAD: f64 = 0.81;
pub(super) const CROWD_RING_SPREAD: f64 = 1.05;

/// Several cells' radius: `SPREAD_SCALE` times the weighted spread S of their anchors around
/// their mean, times (S / range)^`SPREAD_RANGE_EXP`: cells whose anchors lie far apart for
/// their ranges barely share coverage, and a weighted mean interpolates poorly between them.
/// The range's part is kept small because what a stored range measures depends on its
/// export (the farthest sighting, a quantile, twice the mean distance; sightings of the cell
/// as a neighbour or only as the serving cell): with the exponent 0.6 and a term for the
/// crowd means' error (half the range over the root of the sightings), fitted on the
/// simulator's worlds alone, the worlds of a second generator with other crowd and radio
/// models (`bench/other-worlds.ts`) held 17-61% inside where their sites stand sparse and
/// 46-97% where dense. No term for the crowd means' error now (at 0.1 of the range over the
/// root of the sightings, the objective below is 0.1565 against 0.1544 without). Fitted with
/// [`COUNT_EXP`] and [`SPREAD_SIZE_EXP`] on the cell scenarios of the world families' fit
/// seeds 101..130 and the other worlds' seeds 1..16 together (each generator's mean over
/// world and scenario of |inside - 68%|, summed), reported on the families' seeds 201..216 and
/// the other worlds' 101..116 (docs/experiments.md).
pub const SPREAD_SCALE: f64 = 1.2;
pub(super) const SPREAD_RANGE_EXP: f64 = 0.25;

/// The multi-cell radius also times (S / `SPREAD_SIZE_REF_M`)^`SPREAD_SIZE_EXP`, S the spread
/// in metres: where sites stand sparse a device strays farther beyond its cells' spread than
/// where they stand dense (a longer reach, so weaker neighbours from farther away decide the
/// mean). Without it the other worlds' sparse requests held 38% inside in the median fit
/// world against 68-72% for their dense ones. Fitted with [`SPREAD_SCALE`] (the objective of
/// [`SPREAD_RANGE_EXP`]): exponent 0 0.1544, 0.05 0.1461, 0.1 0.1407, 0.15 0.1397, 0.2 0.1429
/// at 1 km; the reference 0.7 km 0.1402, 1.4 km 0.1427 at 0.1. 0.1, whose families' part was
/// the best (docs/experiments.md).
pub(super) const SPREAD_SIZE_EXP: f64 = 0.1;
pub(super) const SPREAD_SIZE_REF_M: f64 = 1_000.0;

/// A learned answer's multi-cell radius: `LEARNED_SPREAD_SHARE` times the spread's radius
/// above and `OWN_RADII_SCALE` times the cells' own radii, in quadrature. The own radii are
/// `sqrt(sum (w r)^2) / sum w`: r each cell's radius were it heard alone (`solve::cells`,
/// `lone_radius`) and w its radius weight. Where one cell carries the weight (levels 20 dB
/// apart) the anchors' spread is nil and the answer that cell's estimate, whose own radius is
/// the error; where the weights are even the spread speaks. On the world families' learned
/// scans, by the effective number of cells `(sum w)^2 / sum w^2`, the spread alone held 42% inside
/// at one and 88% at four or more; two phones' serving cells merged into one request on the
/// Dakar logs (`bench/traces.ts --set dakar --scans`) held 24%. Fitted on the whole scans of
/// `bench/traces.ts --set families --scans` on worlds 101..108 (the per-world objective is
/// flat along a ridge from 0.7 / 0.65 to 2.0 / 0.4; 1.5 / 0.45 is where the classes by the
/// effective number agree), reported on worlds 201..216 and the Dakar scans
/// (docs/experiments.md). Crowd and published cells keep the spread alone: their own radii
/// rest on stored ranges whose meaning is the export's, and every amount of them spread the
/// worlds' shares wider.
pub(super) const OWN_RADII_SCALE: f64 = 1.5;
pub(super) const LEARNED_SPREAD_SHARE: f64 = 0.45;

/// The multi-cell radius when the serving cell was not placed on its sector's axis (an omni
/// site, a short-CID match, an unknown numbering): nothing bounds the answer to the serving
/// sector and the anchors' spread understates the error, so the radius is this much wider.
/// Fitted with [`SPREAD_RANGE_EXP`].
pub(super) const OFF_AXIS_SCALE: f64 = 1.1;

/// The multi-cell radius, in place of [`OFF_AXIS_SCALE`], when the serving cell's estimate is
/// its mast (published tower positions): this times the anchors' spread alone (with the count
/// law below), no range term, since a publisher's ranges and sample counts are whatever it
/// wrote (the families' `cells-known-towers` with every range divided by 4 held 84% inside
/// under the spread-and-range model, with every sample count 1, 96%). The anchors are masts,
/// not where the devices that hear them are, and nothing bounds the answer to a sector.
/// Fitted with [`RING_MISS_SCALE_ON_MAST`], [`ONE_MAST_SCALE`] and [`SAME_PLACE_COUNT`] on the
/// world families' `cells-known-towers`, the one scenario of such networks (fit seeds 101..130,
/// least absolute deviations of the per-world inside shares from 68%), and refitted alone
/// with the count law ([`COUNT_EXP`]): 1.0 1.552, 1.04 1.474, 1.08 1.541.
pub(super) const ON_MAST_SCALE: f64 = 1.04;

/// The serving cell's radius times this when every cell heard is a sector of its one
/// published mast and no advance was reported (`solve::cells`, `one_mast_answer`): the
/// device's strongest cells are all that mast's, so it is nearer the mast than one that hears
/// the serving sector among others, for which the single cell's radius holds. Fitted with
/// [`ON_MAST_SCALE`] (flat from 0.45 to 0.6); on those answers alone, the 68% quantile of
/// error over the stored range is 0.45 in the median fit world (docs/experiments.md).
pub(super) const ONE_MAST_SCALE: f64 = 0.5;

/// The multi-cell radius when the serving sector's wedge moved the answer and no timing
/// advance measured its miss ([`RING_MISS_SCALE`]): the spread measured how far the
/// neighbours pulled the mean and the bound took part of that back, so the radius shrinks by
/// this factor. Fitted with [`SPREAD_RANGE_EXP`].
pub(super) const BOUNDED_SCALE: f64 = 0.8;

/// The multi-cell radius when the serving cell has a mast and a timing advance: the advance
/// is a measured distance from the mast, so how far the cells' mean missed its ring is a
/// measure of this answer's error that no other part of the radius has. The radius R becomes
/// `k * sqrt(R * (miss + RING_MISS_FLOOR * R))` (in place of [`BOUNDED_SCALE`]), k by what
/// the serving cell is. With R alone, answers held 90-99% inside where the mean missed its
/// ring by under a tenth of R and 21-40% where it missed by over 2 R (world families, every
/// cell scenario); over the fit worlds the median miss over R correlated 0.91 with a world's
/// 68% factor on published towers. The form and `RING_MISS_FLOOR` from a re-implementation
/// over family worlds 101..130; each k fitted in the engine by least absolute deviations of
/// the fit worlds' inside shares from 68% (crowd cells and published towers: the cell
/// scenarios of worlds 101..130; learned cells: the whole scans of `bench/traces.ts --set
/// families --scans` on worlds 101..108), checked on worlds 201..216 (docs/experiments.md).
/// The k differ as the radii R of the three do: each R is calibrated on its own.
pub(super) const RING_MISS_FLOOR: f64 = 0.2;
/// k for a crowd cell on its sector's axis.
pub(super) const RING_MISS_SCALE: f64 = 0.96;
/// k for a cell whose estimate is its mast (published towers), whose R holds
/// [`ON_MAST_SCALE`] already.
pub(super) const RING_MISS_SCALE_ON_MAST: f64 = 0.78;
/// k for a learned cell on the mast our learner fitted.
pub(super) const RING_MISS_SCALE_LEARNED: f64 = 1.25;

/// The multi-cell radius times `sqrt(SECTOR_OFFSET_REF / offset)`, bounded by
/// `SECTOR_OFFSET_BOUNDS`, where offset is the median sector offset of the serving cell's
/// network (its sector estimates' distance from their masts over their ranges, measured by
/// `store::netstats`). A crowd that placed its sectors near their masts (estimates from the
/// strongest sighting, or from sightings crowded near the sites) gives anchors nearer the
/// masts than the devices that hear them are, so their spread understates the error. On the
/// world families the 68% quantile of error / radius of the multi-cell scenarios fell with the
/// offset as offset^-0.3 to offset^-0.5 (rural to urban); the exponent (the root) was fitted
/// on seeds 101..130 by the per-world inside shares, the reference at the families' typical
/// offset.
pub(super) const SECTOR_OFFSET_REF: f64 = 0.35;
pub(super) const SECTOR_OFFSET_BOUNDS: (f64, f64) = (0.7, 1.5);

/// The multi-cell radius times `(COUNT_REF / cells)^COUNT_EXP`: the spread of a few anchors
/// understates where the device can be, that of many overstates it. `COUNT_REF` from the
/// world families alone (where every exponent from 0.7 to 0.9 with its scale refitted did
/// alike, docs/experiments.md); the exponent fitted with [`SPREAD_RANGE_EXP`] over both
/// generators' worlds: 0.25 0.1731, 0.375 0.1647, 0.5 0.1616, 1.0 0.1809 (the objective there,
/// with the spread's exponent at 0.2).
pub(super) const COUNT_REF: f64 = 5.8;
pub(super) const COUNT_EXP: f64 = 0.5;

/// The multi-cell radius of cells weighed without their levels (a request where some cell
/// came without one, `solve::cells`) times `(cells / UNLEVELLED_COUNT_REF)^-exp` from two
/// cells on, exp `UNLEVELLED_COUNT_EXP`, or `UNLEVELLED_MAST_COUNT_EXP` for cells answered on
/// their masts. Weighed alike, every heard cell spreads the anchors as much as the strongest,
/// where levels leave about two that count (`effective_count`); the spread then grows with the
/// count faster than the error does. With the levels taken off every cell (`bench/families.ts
/// --drop-levels cells`), the 68% quantile of error over the levelled radius fell from 1.0-1.1
/// at two cells to 0.6 at seven (crowd answers) and to 0.8 (published masts, whose places are
/// exact) in the families' fit worlds 101..130; at seven, 0.55-0.8 and 0.84 in the other
/// generator's 1..16. Fitted on both generators' fit worlds, levels taken off every cell and
/// off the neighbours (the sum over the four of each set's mean |inside - 68%| over worlds and
/// cell scenarios): 3.38 without; crowd exponent 0 / 0.35 / 0.4 / 0.45 / 0.5 (masts alike,
/// [`UNLEVELLED_SERVING_WEIGHT`] 2): 2.10 (scale 0.8) / 2.00 / 1.98 / 2.01 / 2.13; then the
/// masts' 0.05 / 0.15 / 0.25 (serving weight 3): 1.87 / 1.79 / 1.78 (docs/experiments.md).
pub(super) const UNLEVELLED_COUNT_REF: f64 = 2.0;
pub(super) const UNLEVELLED_COUNT_EXP: f64 = 0.4;
pub(super) const UNLEVELLED_MAST_COUNT_EXP: f64 = 0.25;

/// A serving cell's weight among cells weighed without their levels, the others' being 1:
/// the cell the device is attached to is likely the nearest. On both generators' fit worlds,
/// levels taken off every cell and off the neighbours (the mean over cell scenarios of the
/// log of the median world's ratio to the weighted mean plus half the worst's, summed over the
/// four): 2 / 3 / 4: 0.750 / 0.832 / 0.850; 3 is the families' best where no cell has a level
/// (0.131), 4 the other generator's.
pub(super) const UNLEVELLED_SERVING_WEIGHT: f64 = 3.0;

/// What the count law ([`COUNT_REF`]) counts for a cell whose anchor is a place already
/// counted: a sector of a published mast heard beside its sibling adds its level to the
/// weights, not another place to the anchors' spread. Counted whole, each extra sector of a
/// mast shrank the radius as a new mast would: on the families' `cells-known-towers` answers
/// over several masts, those with no extra sector held 84% inside and those with four or more
/// 39% (answers without an advance). Counted as nothing, the classes agree but the worlds
/// spread wider (fit worlds 101..130: the per-world objective 1.86 against 1.61); half, with
/// [`ON_MAST_SCALE`] and [`RING_MISS_SCALE_ON_MAST`] refitted, narrows the classes to 82% and
/// 53% and the worlds to 1.52 (docs/experiments.md).
pub(super) const SAME_PLACE_COUNT: f64 = 0.5;

/// An area's radius (a device on a cell the database lacks, somewhere in its LAC/TAC area):
/// `AREA_ACCURACY_FACTOR` times the area's radius (90% of its cells' positions within it),
/// times sqrt(1 + `AREA_FEW_CELLS` / cells), since a few cells are a poor sample of the area's
/// extent. Fitted on the simulator and on three folds of the Cork learn files
/// (`npx tsx bench/cork.ts --cv`); on the world families the factor that brings the lacf
/// worlds nearest 68% is within 4% of it, so it is kept.
pub const AREA_ACCURACY_FACTOR: f64 = 0.82;
pub const AREA_FEW_CELLS: f64 = 5.0;

/// A site answer's reach (`cells::site_answer`): a missing sector serves about halfway to the
/// sites around its mast. A prior: the half is where two equal sites' coverages meet. The
/// third-nearest other site of the LAC/TAC stands for "the sites around", not the nearest:
/// the nearest one or two may stand beside the mast along a road or in a cluster, while in a
/// regular layout the third-nearest is one of the six at the site spacing. Measured, not
/// fitted: on the world families' `lacf-site` requests the 68% quantile of error over the site
/// answer's radius is 0.94 in the median fit world (0.68-1.49) and 1.00 in the median report
/// world (0.89-1.19) (docs/experiments.md, "a site answer's reach from the sites around it").
pub(super) const SITE_SPACING_RANK: usize = 3;
pub(super) const SITE_REACH_PER_SPACING: f64 = 0.5;
/// The most cells of a LAC/TAC a site answer reads to find the sites around its mast (the
/// store has no spatial index of cells): about 0.15 ms (`cargo bench --bench site_answer`,
/// some 7.4 ns a cell). A larger LAC/TAC's site answers take the radius of a LAC/TAC with too
/// few sites. A bound on the work one request can ask for, not fitted.
pub(super) const SITE_SPACING_MAX_CELLS: usize = 20_000;

/// A learned cell heard at a level is placed at its learning's position for the nearest level
/// within this many dB (a prior: the learner's window, `learn::estimate`, so that the level
/// heard lies among the sightings that position was found from).
pub(super) const LEVEL_MATCH_DB: f64 = 4.0;

/// The least a cell answer claims (a floor, not fitted): cell positions are crowd estimates.
pub(crate) const MIN_CELL_ACCURACY_M: f64 = 50.0;
/// The least a learned cell's answer at its level claims: the level's spread is what our own
/// passes showed (`learn::estimate`, which keeps [`MIN_CELL_ACCURACY_M`] for a level that is
/// tight only because a phone sat still), and no closer than the GPS fixes it was learned
/// from (a prior: a phone's typical fix).
pub(super) const MIN_LEVEL_ACCURACY_M: f64 = crate::learn::estimate::DEFAULT_GPS_ACCURACY_M;

// WiFi: clusters, the centroid and its radius.

/// The path-loss exponent n of an AP's signal weight, 10^(dB / 5n): a decade of weight per
/// 20 dB. Fitted on the simulator's wifi-urban scenario with the centroid's other weights: a
/// steeper weight leans on the one strongest AP, whose estimate is as noisy as the others'.
pub(super) const WIFI_PATH_LOSS_EXPONENT: f64 = 4.0;

/// APs farther apart than this are not heard together: two clusters (a prior: WiFi reaches
/// a few hundred metres at most).
pub(super) const CLUSTER_LINK_M: f64 = 500.0;

/// A cluster member this far from the first centroid has moved and is dropped. Fitted on the
/// simulator's wifi-urban and moved-ap scenarios; medians are flat around it.
pub(super) const OUTLIER_M: f64 = 350.0;

/// The WiFi radius: this times the cluster's spread (`wifi.rs`), and at least the most any one
/// member alone moved the answer. Fitted on the world families' fit seeds (101..130) with
/// that floor, over the sum of the wifi-urban and moved-ap worlds' distances from 68% inside:
/// 0.6 (4.92), 0.65 (3.22), 0.7 (2.16), 0.75 (2.43); the spread alone at 0.8 gave 2.59
/// (docs/experiments.md).
pub const WIFI_ACCURACY_FACTOR: f64 = 0.7;

/// The WiFi radius times this when the scan's APs disagreed: some were left out of the answer
/// (in another cluster, or beyond [`OUTLIER_M`]). A moved router is heard where it now
/// stands, often strongest, so the members that answer are those the device heard less well,
/// and their agreement understates the error: with every AP in the world families'
/// moved-AP scans, the far moves left out among them, the 68% quantile of error over the
/// radius was 1.05 in the median world, against 1.00 for the WiFi scans. Fitted on the fit
/// seeds 101..130 (the sum over the wifi-urban and moved-ap worlds of the distance from 68%
/// inside: 1.0 2.16, 1.03 1.88, 1.05 1.85, 1.07 1.92, 1.1 2.09; docs/experiments.md).
pub(super) const WIFI_DISAGREED_SCALE: f64 = 1.05;

/// The members' spread around the WiFi centroid is at least this share of their reach's
/// square (half their range, weighted): one router's 2.4 and 5 GHz BSSIDs lie together and
/// spread over nothing, yet the device may be anywhere within their reach. A floor, not fitted:
/// the families' worlds seldom hear APs together (0 to 0.5 cost nothing there).
pub(super) const WIFI_MIN_SPREAD_SHARE: f64 = 0.25;

/// The length whose geometric mean with a WiFi answer's members' range (root mean square,
/// weighted) is the least its radius claims, before the count's root (`wifi.rs`). Crowd
/// estimates of APs heard together come from the same passes and share their error, which
/// their spread does not show: in the second generator's worlds, where a building's APs are
/// heard together, the spread radius was half the error. Fitted on both generators' fit worlds
/// (families 101..130, other worlds 1..16; docs/experiments.md).
pub(super) const WIFI_SHARED_ERROR_M: f64 = 18.0;

/// The least a WiFi answer claims (a floor, not fitted).
pub(super) const MIN_WIFI_ACCURACY_M: f64 = 15.0;

/// APs with no published range are taken to be this wide (an assumption, not fitted).
pub(super) const DEFAULT_AP_RANGE_M: f64 = 100.0;
