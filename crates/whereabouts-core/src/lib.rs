//! # whereabouts-core
//!
//! The plain-Rust heart of Whereabouts: an offline engine that turns the cell towers
//! and WiFi access points a device sees into a position with an honest accuracy
//! radius. It knows nothing of Node; `whereabouts-node` is a thin skin over it.
//!
//! - [`store`]: the memory-mapped FlatBuffers station database and its manifest.
//! - [`import`]: streaming import of OpenCelliD/MLS and WiFi exports into a database.
//! - [`sites`]: which cells share a mast, where it is, and masts pooled across radios.
//! - [`solve`]: WiFi clustering, cell multilateration, fallbacks and accuracy.
//! - [`calibration`]: the radius model fitted on a user's ground truth, stored with the database.
//! - [`land`]: land polygons for border strictness (`bt`).
//! - [`learn`]: station positions learned from GPS-tagged observations: files in
//!   batches, live submissions into an overlay that is compacted in the background.
//! - [`ip`]: IP address to location from MMDB files (the `ipf` fallback).
//! - [`lazy_file`]: geocoding files checked cheaply at open and read on first use.
//! - [`polygons`]: labelled polygons in a quadtree, shared by timezones and countries.
//! - [`timezone`]: timezone of a point from timezone-boundary-builder polygons.
//! - [`countries`]: country of a point from Natural Earth admin-0 polygons.
//! - [`places`]: reverse geocoding over GeoNames places.
//! - [`addresses`]: street-level addresses and roads (OpenAddresses, OpenStreetMap).
//! - [`search`]: forward geocoding (free text to places) over GeoNames places.
//! - [`progress`]: progress reports of the long-running file commands (import, learn).
//! - [`sync`]: pages of changed stations in the import formats, for database sync.
//! - [`wire`]: the numbers that cross to JavaScript (the batch wire format, the reverse key).
//! - [`tiles`]: the basemap's vector tiles and raster tiles rendered from them.

pub mod addresses;
pub mod calibration;
pub mod countries;
mod datafile;
pub mod geo;
pub mod import;
pub mod ip;
pub mod land;
pub mod lazy_file;
pub mod learn;
pub mod places;
pub mod polygons;
pub mod progress;
pub mod radio;
pub mod search;
pub mod sites;
pub mod solve;
pub mod store;
pub mod sync;
pub mod tiles;
pub mod timezone;
pub mod wire;

pub use radio::Radio;
