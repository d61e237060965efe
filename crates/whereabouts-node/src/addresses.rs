//! Street-level addresses: `importAddresses` (on a worker thread, with progress),
//! `addressFileKind`, and the engine's nearest-address, nearest-road and search methods.

use std::path::PathBuf;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task};
use napi_derive::napi;

use crate::import::{file_reports, FileReport};
use crate::progress::{forward, ProgressFn};
use crate::{err, guarded, NativeEngine};
use whereabouts_core::addresses::{
    detect, import_address_files, Address, AddressImportOptions, AddressImportReport, AddressIndex,
};
use whereabouts_core::import::SourceKind;

#[napi(object)]
pub struct AddressImportFileOptions {
    pub replace: Option<bool>,
}

#[napi(object)]
pub struct AddressImportSummary {
    pub files: Vec<FileReport>,
    pub addresses: f64,
    pub roads: f64,
    pub merged_duplicates: f64,
    pub bytes: f64,
    pub seconds: f64,
    pub peak_rss_bytes: Option<f64>,
}

/// An address as the lookups answer it; `score` only from `searchAddresses`.
#[napi(object)]
pub struct NativeAddress {
    pub lat: f64,
    pub lon: f64,
    pub house_number: String,
    pub road: String,
    pub postcode: Option<String>,
    pub city: Option<String>,
    pub suburb: Option<String>,
    pub distance_m: f64,
    pub score: Option<f64>,
}

#[napi(object)]
pub struct NativeRoad {
    pub name: String,
    pub lat: f64,
    pub lon: f64,
    pub distance_m: f64,
}

#[napi(object)]
pub struct AddressStats {
    pub addresses: f64,
    pub roads: f64,
    pub bytes: f64,
}

fn native_address(a: Address, score: Option<f64>) -> NativeAddress {
    NativeAddress {
        lat: a.lat,
        lon: a.lon,
        house_number: a.house_number.to_owned(),
        road: a.road.to_owned(),
        postcode: a.postcode.map(str::to_owned),
        city: a.city.map(str::to_owned),
        suburb: a.suburb.map(str::to_owned),
        distance_m: a.distance_m,
        score,
    }
}

pub struct AddressImportTask {
    out: PathBuf,
    files: Vec<PathBuf>,
    options: AddressImportOptions,
    progress: Option<ProgressFn>,
}

impl Task for AddressImportTask {
    type Output = AddressImportReport;
    type JsValue = AddressImportSummary;

    fn compute(&mut self) -> Result<AddressImportReport> {
        let mut report = forward(self.progress.as_ref());
        let (out, files, options) = (&self.out, &self.files, &self.options);
        guarded("address import", move || {
            import_address_files(out, files, options, &mut report).map_err(err)
        })
    }

    fn resolve(&mut self, _env: Env, r: AddressImportReport) -> Result<AddressImportSummary> {
        Ok(AddressImportSummary {
            files: file_reports(r.files),
            addresses: r.addresses as f64,
            roads: r.roads as f64,
            merged_duplicates: r.merged_duplicates as f64,
            bytes: r.bytes as f64,
            seconds: r.seconds,
            peak_rss_bytes: r.peak_rss_bytes.map(|b| b as f64),
        })
    }
}

/// Imports OpenAddresses CSVs and `.osm.pbf` extracts into the address file `out`,
/// merging with it unless `replace` (see docs/geocoding.md).
#[napi(ts_return_type = "Promise<AddressImportSummary>")]
pub fn import_addresses(
    out: String,
    files: Vec<String>,
    options: Option<AddressImportFileOptions>,
    #[napi(ts_arg_type = "(progress: FileProgress) => void")] progress: Option<ProgressFn>,
) -> Result<AsyncTask<AddressImportTask>> {
    Ok(AsyncTask::new(AddressImportTask {
        out: PathBuf::from(out),
        files: files.into_iter().map(PathBuf::from).collect(),
        options: AddressImportOptions {
            replace: options.and_then(|o| o.replace).unwrap_or(false),
            ..AddressImportOptions::default()
        },
        progress,
    }))
}

/// `"OpenAddressesCsv"` or `"OsmPbf"` for an address file, null for any other file.
#[napi]
pub fn address_file_kind(path: String) -> Result<Option<String>> {
    guarded("address file detection", || {
        Ok(detect(&PathBuf::from(path)).map_err(err)?.map(|k| match k {
            SourceKind::OsmPbf => "OsmPbf".to_string(),
            other => format!("{other:?}"),
        }))
    })
}

impl NativeEngine {
    fn addresses(&self) -> Result<&AddressIndex> {
        self.locator()?;
        crate::loaded(&self.addresses, "no address file is loaded").map(std::sync::Arc::as_ref)
    }
}

#[napi]
impl NativeEngine {
    /// Whether an address file is loaded (false after close).
    #[napi]
    pub fn has_addresses(&self) -> bool {
        self.inner.is_some() && self.addresses.is_some()
    }

    /// Counts of the loaded address file.
    #[napi]
    pub fn address_stats(&self) -> Result<AddressStats> {
        guarded("addresses", || {
            let s = self.addresses()?.stats();
            Ok(AddressStats {
                addresses: s.addresses as f64,
                roads: s.roads as f64,
                bytes: s.bytes as f64,
            })
        })
    }

    /// The nearest address within `radiusM` metres, or null (also for a bad coordinate).
    #[napi]
    pub fn nearest_address(
        &self,
        lat: f64,
        lon: f64,
        radius_m: f64,
    ) -> Result<Option<NativeAddress>> {
        guarded("addresses", || {
            Ok(self
                .addresses()?
                .nearest_address(lat, lon, radius_m)
                .map(|a| native_address(a, None)))
        })
    }

    /// The nearest named road within `radiusM` metres, or null (also for a bad coordinate).
    #[napi]
    pub fn nearest_road(&self, lat: f64, lon: f64, radius_m: f64) -> Result<Option<NativeRoad>> {
        guarded("addresses", || {
            Ok(self
                .addresses()?
                .nearest_road(lat, lon, radius_m)
                .map(|r| NativeRoad {
                    name: r.name.to_owned(),
                    lat: r.lat,
                    lon: r.lon,
                    distance_m: r.distance_m,
                }))
        })
    }

    /// Addresses matching a house number, street and city (free text; number and city may
    /// be empty), best first with a score in [0, 1], at most `limit`.
    #[napi]
    pub fn search_addresses(
        &self,
        number: String,
        street: String,
        city: String,
        limit: u32,
    ) -> Result<Vec<NativeAddress>> {
        guarded("address search", || {
            Ok(self
                .addresses()?
                .search(&number, &street, &city, limit as usize)
                .into_iter()
                .map(|m| native_address(m.address, Some(m.score)))
                .collect())
        })
    }
}
