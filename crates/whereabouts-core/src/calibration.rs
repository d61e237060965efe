//! The radius model: a multiplicative factor on the solver's 68% accuracy radius per class
//! of answer, fitted on a user's own ground truth (`whereabouts calibrate`, and `learn` on a
//! held-out share of its observations) and stored with the database.
//!
//! A class is a path of up to four levels, each finer than the one before:
//! 1. what answered: `wifi`, `cells`, `scf` (a cell found by its short CID), `lacf` (the
//!    LAC/TAC area), `ipf`;
//! 2. the radio of the serving cell (cells, scf, lacf);
//! 3. how many stations were known: one cell (`cells-1`), several by their effective number
//!    `(sum w)^2 / sum w^2` under the solver's radius weights w (`cells-eff-1` under 1.5,
//!    `cells-eff-2` under 2.5, `cells-eff-3+`: a cell heard 20 dB above the others counts about
//!    one, however many were heard), or `aps-2`, `aps-3-4`, `aps-5+`;
//! 4. the serving station's quality: learned by us or a crowd average, and its sample count
//!    (`crowd-1-9`, `crowd-10-99`, `crowd-100+`, `learned-...`); a single cell placed on its
//!    mast's ring by its timing advance, whose radius is the ring's rather than the range's,
//!    is `learned-ring` or `crowd-ring` whatever its samples; a single learned cell placed by
//!    the level it was heard at, whose radius is that level's spread, is `learned-level`; an
//!    area answer from the known sectors of an unknown cell's site is `lacf/<radio>/site`.
//!
//! Each class's factor is the 68% quantile of error / radius of its rows, shrunk toward its
//! parent's factor (in logarithms, the parent weighing [`PRIOR_ROWS`] rows), and the whole
//! set's toward 1.0: a class with few rows keeps about its parent's factor, and with no rows
//! at all the radius is the solver's. A model may apply only a share of what it measured
//! ([`RadiusModel::trust`]: each factor raised to it), where its rows stand in for the
//! devices to come less well than a user's own ground truth does. Rows carry weights: rows
//! taken at one place (a device standing still logs thousands of rows with one error) are one
//! piece of evidence, not thousands, so the caller weighs them down ([`RadiusRow::weight`]).
//! The file is JSON, versioned by `format`, named in the manifest (`radius_model`); a
//! database without it answers with the solver's radii.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::radio::Radio;
use crate::solve::CONFIDENCE;
use crate::store::manifest::sync_dir;
use crate::store::{Manifest, StoreError};

/// The format this build writes and reads; a file of another format is refused with a
/// [`StoreError::Version`].
pub const RADIUS_MODEL_FORMAT: u32 = 1;

/// How many rows a parent class's factor weighs against a class's own quantile (a prior, not
/// fitted): the 68% quantile of 40 rows has a standard error of about 7 points of share, so a
/// class of 40 rows moves halfway from its parent's factor to its own.
pub const PRIOR_ROWS: f64 = 40.0;

/// Factors are kept within this of 1.0 either way (a bound against a broken file or a class
/// fitted on nonsense, not fitted).
pub const MAX_FACTOR: f64 = 20.0;

/// What answered, the first level of a class.
const KINDS: [&str; 6] = ["", "wifi", "cells", "scf", "lacf", "ipf"];
pub const KIND_WIFI: u8 = 1;
pub const KIND_CELLS: u8 = 2;
pub const KIND_SCF: u8 = 3;
pub const KIND_LACF: u8 = 4;
pub const KIND_IPF: u8 = 5;
/// Several cells are classed by their effective number ([`RadiusClass::cells`]). `cells-2-3`
/// and `cells-4+`, the raw counts that models written before classed them by, are still read
/// (a factor under them applies to no answer; the class's parent does).
const CELL_COUNTS: [&str; 7] = [
    "",
    "cells-1",
    "cells-2-3",
    "cells-4+",
    "cells-eff-1",
    "cells-eff-2",
    "cells-eff-3+",
];
const AP_COUNTS: [&str; 4] = ["", "aps-2", "aps-3-4", "aps-5+"];
const QUALITIES: [&str; 11] = [
    "",
    "crowd-1-9",
    "crowd-10-99",
    "crowd-100+",
    "learned-1-9",
    "learned-10-99",
    "learned-100+",
    "crowd-ring",
    "learned-ring",
    "learned-level",
    "site",
];
/// The quality of a ring answer, crowd and learned, and of a learned cell placed by its
/// level ([`QUALITIES`]).
const CROWD_RING: u8 = 7;
const LEARNED_RING: u8 = 8;
const LEARNED_LEVEL: u8 = 9;
/// The quality of an area answer from the known sectors of the unknown cell's site.
const SITE: u8 = 10;
const RADIOS: usize = Radio::ALL.len() + 1;

/// A class of answer: level indices, 0 where the level does not apply or is pooled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RadiusClass {
    pub kind: u8,
    /// 1 + the [`Radio`] code.
    pub radio: u8,
    pub count: u8,
    pub quality: u8,
}

impl RadiusClass {
    /// The class of a cell answer (`kind` one of cells, scf, lacf) from the serving cell's
    /// radio, how many cells were known (0: not counted) and, several, their effective number
    /// under the solver's radius weights (`solve::cells::effective_count`), and the serving
    /// cell's quality: learned or not, its samples, and whether the answer is on its mast's
    /// ring or placed by its level.
    ///
    /// The effective number rather than the count: where one cell is heard far above the
    /// others it carries the weights, the answer is about its estimate, and the radius from
    /// the anchors' spread claims too little; where the weights are even, too much. Each of
    /// the world families' held-out worlds 201..216 calibrated on half its cell scenarios'
    /// requests, the other half by effective number (under 1.5 / 1.5-2.5 / 2.5 and more)
    /// held 62.9 / 68.0 / 69.1% with these classes, 48.0 / 67.3 / 76.3% with the raw counts
    /// (docs/experiments.md).
    #[allow(clippy::too_many_arguments)]
    pub fn cells(
        kind: u8,
        radio: Option<Radio>,
        cells: usize,
        effective: f64,
        learned: bool,
        samples: u32,
        ring: bool,
        level: bool,
    ) -> Self {
        RadiusClass {
            kind,
            radio: radio.map_or(0, |r| r as u8 + 1),
            count: match cells {
                0 => 0,
                1 => 1,
                _ if effective < 1.5 => 4,
                _ if effective < 2.5 => 5,
                _ => 6,
            },
            quality: match (ring, learned) {
                (true, true) => LEARNED_RING,
                (true, false) => CROWD_RING,
                _ if level => LEARNED_LEVEL,
                _ if samples == 0 => 0,
                _ => samples_band(samples) + if learned { 3 } else { 0 },
            },
        }
    }

    /// The class of a WiFi answer from the number of known APs heard and the samples behind
    /// the strongest one.
    pub fn wifi(aps: usize, samples: u32) -> Self {
        RadiusClass {
            kind: KIND_WIFI,
            radio: 0,
            count: match aps {
                0 => 0,
                1 | 2 => 1,
                3 | 4 => 2,
                _ => 3,
            },
            quality: if samples == 0 {
                0
            } else {
                samples_band(samples)
            },
        }
    }

    /// The class of an area answer from the known sectors of the site of the serving cell,
    /// which the database lacks (`lacf/<radio>/site`).
    pub fn site(radio: Option<Radio>) -> Self {
        RadiusClass {
            kind: KIND_LACF,
            radio: radio.map_or(0, |r| r as u8 + 1),
            count: 0,
            quality: SITE,
        }
    }

    pub fn ip() -> Self {
        RadiusClass {
            kind: KIND_IPF,
            ..Default::default()
        }
    }

    /// The class one level coarser: its finest level set to 0 (None for the root).
    pub fn parent(self) -> Option<RadiusClass> {
        let mut c = self;
        if c.quality != 0 {
            c.quality = 0;
        } else if c.count != 0 {
            c.count = 0;
        } else if c.radio != 0 {
            c.radio = 0;
        } else if c.kind != 0 {
            c.kind = 0;
        } else {
            return None;
        }
        Some(c)
    }

    /// The class and its ancestors, finest first, ending with the root.
    pub fn lineage(self) -> impl Iterator<Item = RadiusClass> {
        std::iter::successors(Some(self), |c| c.parent())
    }

    /// The class's name in the model file: its levels joined by `/`, `all` for the root.
    pub fn key(self) -> String {
        let mut parts: Vec<&str> = Vec::with_capacity(4);
        if self.kind != 0 {
            parts.push(KINDS[self.kind as usize]);
        }
        if self.radio != 0 {
            parts.push(Radio::ALL[self.radio as usize - 1].name());
        }
        if self.count != 0 {
            parts.push(if self.kind == KIND_WIFI {
                AP_COUNTS[self.count as usize]
            } else {
                CELL_COUNTS[self.count as usize]
            });
        }
        if self.quality != 0 {
            parts.push(QUALITIES[self.quality as usize]);
        }
        if parts.is_empty() {
            "all".into()
        } else {
            parts.join("/")
        }
    }

    /// The class a [`RadiusClass::key`] names.
    pub fn parse(key: &str) -> Option<RadiusClass> {
        let mut c = RadiusClass::default();
        if key == "all" {
            return Some(c);
        }
        // Levels in order; each part is the next level it names.
        let mut level = 0;
        for part in key.split('/') {
            let found = (level..4).find_map(|l| {
                let i = match l {
                    0 => KINDS.iter().position(|k| *k == part && !k.is_empty()),
                    1 => Radio::parse(part)
                        .filter(|r| r.name() == part)
                        .map(|r| r as usize + 1),
                    2 => {
                        let names: &[&str] = if c.kind == KIND_WIFI {
                            &AP_COUNTS
                        } else {
                            &CELL_COUNTS
                        };
                        names.iter().position(|k| *k == part && !k.is_empty())
                    }
                    _ => QUALITIES.iter().position(|k| *k == part && !k.is_empty()),
                }?;
                Some((l, i as u8))
            })?;
            let (l, i) = found;
            match l {
                0 => c.kind = i,
                1 => c.radio = i,
                2 => c.count = i,
                _ => c.quality = i,
            }
            level = l + 1;
        }
        // Levels that a kind never has: WiFi and IP answers have no radio, area and IP
        // answers no count or quality (but an area answer's `site`), and only they a `site`.
        let valid = match c.kind {
            0 => false,
            KIND_WIFI => c.radio == 0 && c.quality != SITE,
            KIND_LACF => c.count == 0 && (c.quality == 0 || c.quality == SITE),
            KIND_IPF => c.radio == 0 && c.count == 0 && c.quality == 0,
            _ => c.quality != SITE,
        };
        valid.then_some(c)
    }

    /// The index of the class in a [`RadiusTable`].
    fn index(self) -> usize {
        ((self.kind as usize * RADIOS + self.radio as usize) * CELL_COUNTS.len()
            + self.count as usize)
            * QUALITIES.len()
            + self.quality as usize
    }
}

/// 1: under 10 samples, 2: under 100, 3: more.
fn samples_band(samples: u32) -> u8 {
    match samples {
        0..=9 => 1,
        10..=99 => 2,
        _ => 3,
    }
}

/// One row of a calibration: an answer's class, its error over the radius the solver gave
/// without a model, and how much it counts (1 for a row that stands alone; the caller gives
/// rows taken at one place a share of 1 between them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RadiusRow {
    pub class: RadiusClass,
    pub ratio: f64,
    pub weight: f64,
}

/// One class of a fitted model.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClassFactor {
    /// Fitting rows in the class (and its finer classes).
    pub rows: u64,
    /// Their total weight: the evidence the class's quantile rests on, in rows.
    #[serde(default)]
    pub weight: f64,
    /// The 68% quantile of their error / radius.
    pub quantile: f64,
    /// The factor applied: the quantile shrunk toward the parent's factor, raised to the
    /// model's [`RadiusModel::trust`].
    pub factor: f64,
}

/// The radius model as stored (`radius-model-N.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RadiusModel {
    pub format: u32,
    /// The confidence the factors aim at ([`CONFIDENCE`]).
    pub confidence: f64,
    /// The parent's weight in rows ([`PRIOR_ROWS`]).
    pub prior_rows: f64,
    /// Rows fitted on.
    pub rows: u64,
    /// Unix seconds of the fit.
    #[serde(default)]
    pub created: u64,
    /// The share, in logarithms, of each measured correction the factors apply: 1 for a fit
    /// on the user's own ground truth (`whereabouts calibrate`); less for `learn`'s own, on
    /// blocks of the very files it learns, which stand in for the next devices only so far.
    /// 1 in files written before it was kept.
    #[serde(default = "full_trust")]
    pub trust: f64,
    /// Every class with fitting rows, by [`RadiusClass::key`].
    pub classes: BTreeMap<String, ClassFactor>,
}

fn full_trust() -> f64 {
    1.0
}

/// The weighted `p` quantile of `v` (value, weight; sorted here): the least value with at
/// least a share `p` of the weight at or under it. With equal weights, the nearest rank.
fn quantile(v: &mut [(f64, f64)], p: f64) -> f64 {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|x| x.1).sum();
    // A relative slack, so that equal weights summing with rounding error keep the nearest rank.
    let target = p * total * (1.0 - 1e-12);
    let mut sum = 0.0;
    for &(x, w) in v.iter() {
        sum += w;
        if sum >= target {
            return x;
        }
    }
    v.last().map_or(1.0, |x| x.0)
}

/// Fits the model on rows of error / radius (the radius being the solver's, without a model);
/// rows whose ratio or weight is not a finite number (ratio >= 0, weight > 0) are passed over.
/// Its factors apply the share `trust` (0 to 1; 1 when not a number) of each measured
/// correction ([`RadiusModel::trust`]).
pub fn fit(samples: &[RadiusRow], created: u64, trust: f64) -> RadiusModel {
    let trust = if trust.is_finite() {
        trust.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let mut ratios: BTreeMap<RadiusClass, Vec<(f64, f64)>> = BTreeMap::new();
    let mut rows = 0;
    for s in samples {
        if !(s.ratio.is_finite() && s.ratio >= 0.0 && s.weight.is_finite() && s.weight > 0.0) {
            continue;
        }
        rows += 1;
        for c in s.class.lineage() {
            ratios.entry(c).or_default().push((s.ratio, s.weight));
        }
    }
    // Coarser classes first: a class's parent has fewer levels set.
    let depth = |c: &RadiusClass| {
        [c.kind, c.radio, c.count, c.quality]
            .iter()
            .filter(|&&l| l != 0)
            .count()
    };
    let mut order: Vec<RadiusClass> = ratios.keys().copied().collect();
    order.sort_by_key(|c| (depth(c), *c));
    let mut factors: BTreeMap<RadiusClass, ClassFactor> = BTreeMap::new();
    // Each class's factor as measured, before the trust: what its children shrink toward.
    let mut measured: BTreeMap<RadiusClass, f64> = BTreeMap::new();
    for c in order {
        let v = ratios.get_mut(&c).expect("class listed");
        let n: f64 = v.iter().map(|x| x.1).sum();
        // Ratios of 0 (an answer on the truth) would make the logarithm -inf.
        let q = quantile(v, CONFIDENCE).max(1e-3);
        let parent = c.parent().map_or(1.0, |p| measured[&p]);
        let own = ((n * q.ln() + PRIOR_ROWS * parent.ln()) / (n + PRIOR_ROWS))
            .exp()
            .clamp(1.0 / MAX_FACTOR, MAX_FACTOR);
        measured.insert(c, own);
        let factor = own.powf(trust);
        factors.insert(
            c,
            ClassFactor {
                rows: v.len() as u64,
                weight: n,
                quantile: q,
                factor,
            },
        );
    }
    RadiusModel {
        format: RADIUS_MODEL_FORMAT,
        confidence: CONFIDENCE,
        prior_rows: PRIOR_ROWS,
        rows,
        created,
        trust,
        classes: factors.into_iter().map(|(c, f)| (c.key(), f)).collect(),
    }
}

/// A model resolved for answering: one factor per possible class, each its own or its
/// nearest fitted ancestor's (1.0 when none was fitted).
#[derive(Clone, Debug)]
pub struct RadiusTable {
    factors: Vec<f32>,
}

impl RadiusTable {
    /// The factor of `class`.
    #[inline]
    pub fn factor(&self, class: RadiusClass) -> f64 {
        self.factors.get(class.index()).map_or(1.0, |&f| f as f64)
    }
}

impl RadiusModel {
    /// Checks the model and resolves every class's factor.
    pub fn table(&self) -> Result<RadiusTable, String> {
        if self.format != RADIUS_MODEL_FORMAT {
            return Err(format!(
                "radius model format {} (this build reads format {RADIUS_MODEL_FORMAT})",
                self.format
            ));
        }
        let mut fitted: BTreeMap<RadiusClass, f64> = BTreeMap::new();
        for (key, f) in &self.classes {
            let class = RadiusClass::parse(key)
                .ok_or_else(|| format!("radius model: unknown class {key:?}"))?;
            if !(f.factor.is_finite() && (1.0 / MAX_FACTOR..=MAX_FACTOR).contains(&f.factor)) {
                return Err(format!(
                    "radius model: class {key:?} has factor {}",
                    f.factor
                ));
            }
            fitted.insert(class, f.factor);
        }
        let size = KINDS.len() * RADIOS * CELL_COUNTS.len() * QUALITIES.len();
        let mut factors = vec![1.0f32; size];
        for kind in 0..KINDS.len() as u8 {
            for radio in 0..RADIOS as u8 {
                for count in 0..CELL_COUNTS.len() as u8 {
                    for quality in 0..QUALITIES.len() as u8 {
                        let c = RadiusClass {
                            kind,
                            radio,
                            count,
                            quality,
                        };
                        let f = c
                            .lineage()
                            .find_map(|a| fitted.get(&a).copied())
                            .unwrap_or(1.0);
                        factors[c.index()] = f as f32;
                    }
                }
            }
        }
        Ok(RadiusTable { factors })
    }

    /// Reads the model file `file` of the database in `dir`.
    pub fn read(dir: &Path, file: &str) -> Result<RadiusModel, StoreError> {
        if file.contains('/') || file.contains('\\') || file.starts_with('.') {
            return Err(StoreError::Corrupt(format!(
                "manifest names an odd radius model file {file:?}"
            )));
        }
        let path = dir.join(file);
        let text = fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
        let model: RadiusModel = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
        if model.format != RADIUS_MODEL_FORMAT {
            return Err(StoreError::Version(format!(
                "{}: radius model format {}, this build reads format {RADIUS_MODEL_FORMAT}: recalibrate \
                 with `whereabouts calibrate`, or remove it with `whereabouts calibrate --reset`",
                path.display(),
                model.format
            )));
        }
        Ok(model)
    }
}

/// The model stored with the database in `dir`, if any.
pub fn stored(dir: &Path) -> Result<Option<RadiusModel>, StoreError> {
    let manifest = Manifest::read_existing(dir)?;
    manifest
        .radius_model
        .as_deref()
        .map(|f| RadiusModel::read(dir, f))
        .transpose()
}

/// Stores `model` with the database in `dir` (None: removes the stored one), under the
/// directory's import lock: the file is written aside and renamed, then the manifest names it
/// (a new name each time, so that a reloading engine sees the change), then the old file goes.
/// Returns the file name written.
pub fn store(dir: &Path, model: Option<&RadiusModel>) -> Result<Option<String>, StoreError> {
    if let Some(m) = model {
        m.table().map_err(StoreError::Invalid)?;
    }
    let lock = dir.join(".import.lock");
    crate::store::builder::take_lock(&lock)?;
    let result = store_locked(dir, model);
    let _ = fs::remove_file(&lock);
    result
}

fn store_locked(dir: &Path, model: Option<&RadiusModel>) -> Result<Option<String>, StoreError> {
    let mut manifest = Manifest::read_existing(dir)?;
    let old = manifest.radius_model.clone();
    let name = match model {
        Some(m) => {
            let n = old
                .as_deref()
                .and_then(|f| {
                    f.strip_prefix("radius-model-")?
                        .strip_suffix(".json")?
                        .parse::<u64>()
                        .ok()
                })
                .map_or(1, |n| n + 1);
            let name = format!("radius-model-{n}.json");
            let tmp = dir.join(format!(".{name}.tmp"));
            let text = serde_json::to_string_pretty(m).expect("radius model serialises");
            let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
            f.write_all(text.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_all())
                .map_err(|e| StoreError::io(&tmp, e))?;
            let path = dir.join(&name);
            fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
            Some(name)
        }
        None => None,
    };
    manifest.radius_model = name.clone();
    manifest.write_atomic(dir)?;
    if let Some(old) = old.filter(|o| Some(o) != name.as_ref()) {
        // Readers parsed the model when they opened the database: unlinking is safe.
        let _ = fs::remove_file(dir.join(old));
        sync_dir(dir)?;
    }
    Ok(name)
}

/// One class's inside shares on held-out rows: with the stored model (or none), and with the
/// model just fitted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClassShares {
    pub class: String,
    pub rows: u64,
    pub before: f64,
    pub after: f64,
    /// The factor the fitted model applies to the class.
    pub factor: f64,
}

/// The inside shares of the held-out rows `test`, for every class (and ancestor) that has
/// some, each row counting its weight as in the fit: a row is inside when its error / radius is
/// at most the class's factor (`before`: that of `old`, 1.0 without one).
pub fn shares(
    test: &[RadiusRow],
    old: Option<&RadiusTable>,
    new: &RadiusTable,
) -> Vec<ClassShares> {
    // Rows, weight, weight inside before, weight inside after.
    let mut by: BTreeMap<RadiusClass, (u64, f64, f64, f64)> = BTreeMap::new();
    for t in test {
        if !(t.ratio.is_finite() && t.weight.is_finite() && t.weight > 0.0) {
            continue;
        }
        let before = t.ratio <= old.map_or(1.0, |m| m.factor(t.class));
        let after = t.ratio <= new.factor(t.class);
        for c in t.class.lineage() {
            let e = by.entry(c).or_default();
            e.0 += 1;
            e.1 += t.weight;
            e.2 += if before { t.weight } else { 0.0 };
            e.3 += if after { t.weight } else { 0.0 };
        }
    }
    by.into_iter()
        .map(|(c, (n, w, b, a))| ClassShares {
            class: c.key(),
            rows: n,
            before: b / w,
            after: a / w,
            factor: new.factor(c),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cells` cells heard with even weights (their effective number the count).
    fn lte(cells: usize, learned: bool, samples: u32) -> RadiusClass {
        RadiusClass::cells(
            KIND_CELLS,
            Some(Radio::Lte),
            cells,
            cells as f64,
            learned,
            samples,
            false,
            false,
        )
    }

    fn on_ring(learned: bool) -> RadiusClass {
        RadiusClass::cells(
            KIND_CELLS,
            Some(Radio::Lte),
            1,
            1.0,
            learned,
            50,
            true,
            false,
        )
    }

    /// `n` ratios spread evenly so that their 68% quantile is `q`.
    fn rows(class: RadiusClass, n: usize, q: f64) -> Vec<RadiusRow> {
        (1..=n)
            .map(|i| RadiusRow {
                class,
                ratio: q * i as f64 / (CONFIDENCE * n as f64),
                weight: 1.0,
            })
            .collect()
    }

    #[test]
    fn keys_name_classes_and_parse_back() {
        for c in [
            lte(1, false, 50),
            lte(5, true, 3),
            RadiusClass::wifi(3, 200),
            RadiusClass::cells(KIND_LACF, Some(Radio::Gsm), 0, 0.0, false, 0, false, false),
            on_ring(true),
            on_ring(false),
            RadiusClass::site(Some(Radio::Lte)),
            RadiusClass::ip(),
            RadiusClass::default(),
        ] {
            for a in c.lineage() {
                assert_eq!(RadiusClass::parse(&a.key()), Some(a));
            }
        }
        assert_eq!(
            lte(2, true, 150).key(),
            "cells/lte/cells-eff-2/learned-100+"
        );
        // Several cells by their effective number, not their count: seven cells one of which
        // carries the weights are about one.
        let carried = RadiusClass::cells(
            KIND_CELLS,
            Some(Radio::Lte),
            7,
            1.2,
            false,
            50,
            false,
            false,
        );
        assert_eq!(carried.key(), "cells/lte/cells-eff-1/crowd-10-99");
        assert_eq!(
            lte(7, false, 50).key(),
            "cells/lte/cells-eff-3+/crowd-10-99"
        );
        // The raw counts of older models still parse.
        assert!(RadiusClass::parse("cells/lte/cells-2-3/learned-100+").is_some());
        assert!(RadiusClass::parse("cells/lte/cells-4+").is_some());
        // On a ring: the ring's radius, whatever the samples.
        assert_eq!(on_ring(true).key(), "cells/lte/cells-1/learned-ring");
        assert_eq!(on_ring(false).key(), "cells/lte/cells-1/crowd-ring");
        // Placed by its level: the level's radius.
        let by_level =
            RadiusClass::cells(KIND_CELLS, Some(Radio::Lte), 1, 1.0, true, 50, false, true);
        assert_eq!(by_level.key(), "cells/lte/cells-1/learned-level");
        assert_eq!(RadiusClass::parse(&by_level.key()), Some(by_level));
        assert_eq!(
            on_ring(true).parent(),
            Some(lte(1, true, 50).parent().unwrap())
        );
        assert_eq!(RadiusClass::wifi(2, 5).key(), "wifi/aps-2/crowd-1-9");
        assert_eq!(RadiusClass::parse("cells/lte/aps-2"), None);
        assert_eq!(RadiusClass::parse("wifi/lte"), None);
        assert_eq!(RadiusClass::parse("lacf/gsm/cells-1"), None);
        assert_eq!(RadiusClass::parse("ipf/crowd-1-9"), None);
        assert_eq!(
            RadiusClass::parse("lacf/umts"),
            Some(RadiusClass {
                kind: KIND_LACF,
                radio: Radio::Umts as u8 + 1,
                ..Default::default()
            })
        );
        assert_eq!(RadiusClass::parse("nonsense"), None);
        // An unknown cell answered at its site's known sectors: an area answer of its own.
        assert_eq!(RadiusClass::site(Some(Radio::Umts)).key(), "lacf/umts/site");
        assert_eq!(RadiusClass::parse("cells/lte/site"), None);
        assert_eq!(RadiusClass::parse("wifi/site"), None);
    }

    #[test]
    fn a_class_with_many_rows_gets_its_own_quantile() {
        let c = lte(1, false, 50);
        let model = fit(&rows(c, 4_000, 1.5), 0, 1.0);
        let t = model.table().unwrap();
        let f = t.factor(c);
        // 4,000 rows against 40 of the parent's (the same rows): within 1% of 1.5.
        assert!((f - 1.5).abs() < 0.015, "{f}");
        // The inside share with the factor is 68% (the quantile's rank).
        let inside = rows(c, 4_000, 1.5).iter().filter(|r| r.ratio <= f).count();
        assert!((inside as f64 / 4_000.0 - CONFIDENCE).abs() < 0.01);
    }

    /// A class of 2,000 rows whose radius is half too small (one LTE cell) and one of 10 rows
    /// whose radius is twice too wide (five cells of even weights), with the finer class.
    fn big_and_small() -> (Vec<RadiusRow>, RadiusClass) {
        let small = lte(5, false, 50);
        let mut s = rows(lte(1, false, 50), 2_000, 2.0);
        s.extend(rows(small, 10, 0.5));
        (s, small)
    }

    #[test]
    fn a_model_by_raw_cell_counts_still_loads_and_its_parent_applies() {
        // A model fitted when several cells were classed by their count: its `cells-2-3`
        // factor matches no answer now, and an answer of several cells takes the radio's.
        let old = RadiusClass::parse("cells/lte/cells-2-3").unwrap();
        let mut s = rows(old, 500, 2.0);
        s.extend(rows(lte(1, false, 50), 500, 1.0));
        let model = fit(&s, 0, 1.0);
        assert!(model.classes.contains_key("cells/lte/cells-2-3"));
        let t = model.table().unwrap();
        let several = lte(2, false, 50);
        let radio = RadiusClass {
            count: 0,
            quality: 0,
            ..several
        };
        assert_eq!(t.factor(several), t.factor(radio));
        assert!(t.factor(old) > t.factor(radio));
    }

    #[test]
    fn a_class_with_few_rows_is_pooled_toward_its_parent() {
        let (s, small) = big_and_small();
        let model = fit(&s, 0, 1.0);
        let t = model.table().unwrap();
        let parent = t.factor(RadiusClass {
            count: 0,
            quality: 0,
            ..small
        });
        let f = t.factor(small);
        // 10 rows of their own against 40 of the parent's: a fifth of the way in logs.
        let class = &model.classes["cells/lte/cells-eff-3+"];
        assert_eq!(class.rows, 10);
        assert!((class.quantile - 0.5).abs() < 0.03, "{}", class.quantile);
        let parent_factor = model.classes["cells/lte"].factor;
        let expected = ((10.0 * class.quantile.ln() + 40.0 * parent_factor.ln()) / 50.0).exp();
        let own = class.factor;
        assert!((own - expected).abs() < 1e-9 * expected, "{own} {expected}");
        assert!(f < parent && f > 0.5, "{f} {parent}");
        // A class never fitted takes its nearest fitted ancestor's factor.
        let unseen = lte(2, true, 3);
        assert_eq!(
            t.factor(unseen),
            t.factor(RadiusClass {
                count: 0,
                quality: 0,
                ..unseen
            })
        );
        // A kind never fitted takes the root's factor.
        assert_eq!(
            t.factor(RadiusClass::wifi(3, 50)),
            t.factor(RadiusClass::default())
        );
    }

    #[test]
    fn a_model_of_partial_trust_applies_that_share_of_each_correction() {
        let (s, _) = big_and_small();
        let full = fit(&s, 0, 1.0);
        let quarter = fit(&s, 0, 0.25);
        assert_eq!(quarter.trust, 0.25);
        for (key, c) in &full.classes {
            let q = &quarter.classes[key];
            // Each factor is the full one's fourth root: the pooling toward the parents is
            // on the measured factors, so a class keeps its place between them.
            assert!((q.factor - c.factor.powf(0.25)).abs() < 1e-9, "{key}");
            assert_eq!(q.quantile, c.quantile);
        }
        assert!(quarter.classes["cells"].factor > 1.1);
        // No trust: the solver's radii.
        assert!(fit(&s, 0, 0.0).classes.values().all(|c| c.factor == 1.0));
        // A file written before the trust was kept reads as a full one.
        let mut old: serde_json::Value = serde_json::to_value(&full).unwrap();
        old.as_object_mut().unwrap().remove("trust");
        let read: RadiusModel = serde_json::from_value(old).unwrap();
        assert_eq!(read.trust, 1.0);
    }

    #[test]
    fn without_rows_every_factor_is_one_and_few_rows_stay_near_it() {
        let empty = fit(&[], 0, 1.0);
        assert!(empty.classes.is_empty());
        let t = empty.table().unwrap();
        assert_eq!(t.factor(lte(1, false, 50)), 1.0);
        // Four rows that say 3.0: shrunk most of the way to 1.0 at the root.
        let few = fit(&rows(lte(1, false, 50), 4, 3.0), 0, 1.0);
        let root = few.classes["all"].factor;
        assert!(root > 1.0 && root < 3f64.powf(0.1) * 1.01, "{root}");
    }

    #[test]
    fn shares_before_and_after_count_rows_inside() {
        let c = lte(1, false, 50);
        let test = rows(c, 100, 2.0);
        let model = fit(&test, 0, 1.0);
        let t = model.table().unwrap();
        let s = shares(&test, None, &t);
        let all = s.iter().find(|x| x.class == "all").unwrap();
        assert_eq!(all.rows, 100);
        // Ratios i / 34 for i in 1..=100: 34 of them at or under 1.
        assert!((all.before - 0.34).abs() < 1e-9, "{}", all.before);
        assert!((all.after - CONFIDENCE).abs() < 0.03, "{}", all.after);
    }

    #[test]
    fn rows_of_one_place_count_as_one() {
        let c = lte(1, false, 50);
        // 100 rows of ratio 3.0 taken at one place, and 100 places of ratio 0.5 ... 1.0.
        let mut s: Vec<RadiusRow> = (0..100)
            .map(|_| RadiusRow {
                class: c,
                ratio: 3.0,
                weight: 0.01,
            })
            .collect();
        s.extend((0..100).map(|i| RadiusRow {
            class: c,
            ratio: 0.5 + i as f64 / 200.0,
            weight: 1.0,
        }));
        let model = fit(&s, 0, 1.0);
        let leaf = &model.classes[&c.key()];
        assert_eq!(leaf.rows, 200);
        assert!((leaf.weight - 101.0).abs() < 1e-9);
        // The place weighs one row in 101: the quantile is that of the 100 places
        // (their 69th of 101), not the 3.0 that unweighted rows would give.
        assert!((leaf.quantile - 0.84).abs() < 0.01, "{}", leaf.quantile);
        // Rows of no weight, or a broken ratio, are passed over.
        let broken = [
            RadiusRow {
                class: c,
                ratio: f64::NAN,
                weight: 1.0,
            },
            RadiusRow {
                class: c,
                ratio: 1.0,
                weight: 0.0,
            },
        ];
        assert_eq!(fit(&broken, 0, 1.0).rows, 0);
    }

    #[test]
    fn a_model_rejects_unknown_classes_formats_and_wild_factors() {
        let mut m = fit(&rows(lte(1, false, 50), 100, 1.2), 0, 1.0);
        m.classes.insert(
            "cells/xx".into(),
            ClassFactor {
                rows: 1,
                weight: 1.0,
                quantile: 1.0,
                factor: 1.0,
            },
        );
        assert!(m.table().unwrap_err().contains("unknown class"));
        let mut m = fit(&rows(lte(1, false, 50), 100, 1.2), 0, 1.0);
        m.classes.get_mut("all").unwrap().factor = f64::NAN;
        assert!(m.table().is_err());
        let mut m = fit(&rows(lte(1, false, 50), 100, 1.2), 0, 1.0);
        m.format = 2;
        assert!(m.table().unwrap_err().contains("format 2"));
    }
}
