//! Street-level addresses for reverse geocoding at zoom 16 to 18 and house-number search.
//!
//! - [`import_address_files`]: streams OpenAddresses CSVs ([`openaddresses`]) and
//!   OpenStreetMap `.osm.pbf` extracts ([`osm`]) into one address file, merging with the
//!   file already there and folding duplicates.
//! - [`AddressIndex`]: the file in memory; [`AddressIndex::nearest_address`],
//!   [`AddressIndex::nearest_road`] and [`AddressIndex::search`].
//!
//! Formats, rules and measured figures: `docs/geocoding.md`.

mod builder;
mod import;
pub mod normalize;
pub mod openaddresses;
pub mod osm;
mod search;
mod store;

use std::fmt;

pub use builder::{AddressExtra, AddressSet, WriteStats};
pub use import::{detect, import_address_files, AddressImportOptions, AddressImportReport};
pub use search::AddressMatch;
pub use store::{Address, AddressIndex, AddressStats, Road};

/// The file name of the address file inside a database directory.
pub const FILE_NAME: &str = "addresses.bin";

#[derive(Debug)]
pub enum AddressError {
    Io(String),
    Corrupt(String),
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddressError::Io(m) => write!(f, "address file: {m}"),
            AddressError::Corrupt(m) => write!(f, "address file is corrupt: {m}"),
        }
    }
}

impl std::error::Error for AddressError {}

#[cfg(test)]
mod pbf_writer;
#[cfg(test)]
mod tests;
