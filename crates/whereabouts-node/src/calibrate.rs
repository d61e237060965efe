//! The radius model's calls (`whereabouts calibrate`, `learn`'s own calibration): the rows of
//! a calibration located by the engine, the fit and its held-out shares, the stored model.

use std::path::Path;

use napi::bindgen_prelude::Float64ArraySlice;
use napi::Result;
use napi_derive::napi;
use whereabouts_core::calibration::{self, RadiusClass, RadiusRow};
use whereabouts_core::solve::Locator;

/// Calibration rows: per request, its class in the radius model ("" when it had no answer)
/// and its error over the radius the engine gives without a model (NaN when no answer).
#[napi(object)]
pub struct RadiusSamples {
    pub classes: Vec<String>,
    pub ratios: Vec<f64>,
}

pub(crate) fn samples(
    locator: &Locator,
    buffer: &Float64ArraySlice,
    length: u32,
    ips: &[String],
    truth_lat: &Float64ArraySlice,
    truth_lon: &Float64ArraySlice,
) -> Result<RadiusSamples> {
    let input = buffer
        .get(..length as usize)
        .ok_or_else(|| crate::err("radiusSamples: length beyond the buffer"))?;
    if truth_lat.len() != truth_lon.len() {
        return Err(crate::err(
            "radiusSamples: truth latitudes and longitudes differ in length",
        ));
    }
    let truth: Vec<(f64, f64)> = truth_lat
        .iter()
        .copied()
        .zip(truth_lon.iter().copied())
        .collect();
    let rows =
        whereabouts_core::wire::radius_samples(locator, input, ips, &truth).map_err(crate::err)?;
    let mut out = RadiusSamples {
        classes: Vec::with_capacity(rows.len()),
        ratios: Vec::with_capacity(rows.len()),
    };
    for r in rows {
        match r {
            Some((class, ratio)) => {
                out.classes.push(class.key());
                out.ratios.push(ratio);
            }
            None => {
                out.classes.push(String::new());
                out.ratios.push(f64::NAN);
            }
        }
    }
    Ok(out)
}

/// Fits the radius model of the database in `db` on the rows not `held_out` (each counting its
/// weight, `calibration::RadiusRow`), reports the inside shares on those that are (weighted
/// alike), and stores the model when `store`. JSON: `model`, `shares`
/// (per class with held-out rows: the inside shares with the stored model, or none, and with
/// the one fitted), `fitRows`, `testRows`, `file` (null: not stored). `trust`: the share of
/// each measured correction the model applies (`calibration::RadiusModel::trust`).
#[napi]
pub fn calibrate_radius(
    db: String,
    classes: Vec<String>,
    ratios: Vec<f64>,
    weights: Vec<f64>,
    held_out: Vec<bool>,
    store: bool,
    trust: f64,
) -> Result<String> {
    crate::guarded("calibrateRadius", || {
        let n = classes.len();
        if ratios.len() != n || weights.len() != n || held_out.len() != n {
            return Err(crate::err(
                "calibrateRadius: classes, ratios, weights and held_out differ in length",
            ));
        }
        let dir = Path::new(&db);
        // The stored model's factors are the "before" (also checks that a database is there).
        let old = calibration::stored(dir).map_err(crate::err)?;
        let old = old.map(|m| m.table()).transpose().map_err(crate::err)?;
        let (mut fit, mut test) = (Vec::new(), Vec::new());
        for (i, key) in classes.iter().enumerate() {
            let ratio = ratios[i];
            if key.is_empty() || !ratio.is_finite() {
                continue;
            }
            let class = RadiusClass::parse(key)
                .ok_or_else(|| crate::err(format!("calibrateRadius: unknown class {key:?}")))?;
            let row = RadiusRow {
                class,
                ratio,
                weight: weights[i],
            };
            if held_out[i] { &mut test } else { &mut fit }.push(row);
        }
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let model = calibration::fit(&fit, created, trust);
        let table = model.table().map_err(crate::err)?;
        let shares = calibration::shares(&test, old.as_ref(), &table);
        let file = if store {
            calibration::store(dir, Some(&model)).map_err(crate::err)?
        } else {
            None
        };
        let out = serde_json::json!({
            "model": model,
            "shares": shares,
            "fitRows": fit.len(),
            "testRows": test.len(),
            "file": file,
        });
        Ok(out.to_string())
    })
}

/// The radius model stored with the database in `db` (JSON), or null.
#[napi]
pub fn stored_radius_model(db: String) -> Result<Option<String>> {
    crate::guarded("storedRadiusModel", || {
        let model = calibration::stored(Path::new(&db)).map_err(crate::err)?;
        model
            .map(|m| serde_json::to_string(&m).map_err(crate::err))
            .transpose()
    })
}

/// Removes the radius model stored with the database in `db`; whether there was one.
#[napi]
pub fn reset_radius_model(db: String) -> Result<bool> {
    crate::guarded("resetRadiusModel", || {
        let dir = Path::new(&db);
        let had = whereabouts_core::store::Manifest::read_existing(dir)
            .map_err(crate::err)?
            .radius_model
            .is_some();
        if had {
            calibration::store(dir, None).map_err(crate::err)?;
        }
        Ok(had)
    })
}
