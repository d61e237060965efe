//! Reading `data/search.bin` (written by `scripts/build-search.mjs`).
//!
//! ```text
//! offset size  field (integers little-endian)
//!      0    8  magic "WBSEARC1"
//!      8    4  u32 version = 1
//!     12    4  u32 header size = 36
//!     16    4  u32 n_places
//!     20    4  u32 n_countries
//!     24    4  u32 n_strings
//!     28    4  u32 blob_len          bytes of the string blob, a multiple of 4
//!     32    4  u32 deflated_len      bytes of the zlib stream that follows
//!     36       zlib stream, zero-padded to a multiple of 4, inflating to:
//!                places: n_places x 28 bytes
//!                  i32 lat, i32 lon     1e-5 degree
//!                  u32 population
//!                  u32 names            string: the GeoNames name, then its alternate names, '\n'-separated
//!                  u32 state, county    strings (admin1 and admin2 names; 0xFFFFFFFF none); a state
//!                                       string may hold "name\nCODE" (US "Texas\nTX")
//!                  2 x u8 country code  ISO 3166-1 alpha-2, upper case
//!                  u8 kind              0 place, 1 seat of a lower admin division (PPLA2-5),
//!                                       2 seat of a first-level division (PPLA), 3 capital (PPLC)
//!                  u8 reserved = 0
//!                countries: n_countries x 8 bytes: 2 x u8 alpha-2, 2 x u8 zero, u32 names string
//!                  (English name first, then every other name and the alpha-3 code)
//!                offsets: (n_strings + 1) x u32; blob: blob_len bytes of UTF-8
//!    end-4    4  u32 FNV-1a (32-bit) over the preceding u32 words
//! ```
//! The names are 80 % of the bytes and compress 2.2 to 1, hence the zlib stream.

use std::io::Read;

use crate::datafile::{check_checksum, check_head, u32_at, StringTable, NO_STRING};

const MAGIC: &[u8; 8] = b"WBSEARC1";
pub(crate) const HEADER: usize = 36;
const RECORD: usize = 28;
const COUNTRY: usize = 8;
pub(crate) const NONE: u32 = NO_STRING;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub lat: i32,
    pub lon: i32,
    pub population: u32,
    pub names: u32,
    pub state: u32,
    pub county: u32,
    pub country: [u8; 2],
    pub kind: u8,
}

/// The validated contents of a search file.
pub(crate) struct SearchFile {
    pub places: Vec<Record>,
    /// Alpha-2 code and names string of every country.
    pub countries: Vec<([u8; 2], u32)>,
    pub strings: StringTable,
}

/// Checks what the header `head` (at least the first [`HEADER`] bytes of a file of `len`
/// bytes) tells without the rest: the envelope and the compressed section's size against the
/// length, which a foreign or truncated file fails.
pub(crate) fn check_header(head: &[u8], len: usize) -> Result<(), String> {
    check_head(head, len, MAGIC, HEADER, "search file")?;
    let deflated_len = u32_at(head, 32) as usize;
    let body_end = len - 4;
    if deflated_len > body_end - HEADER || (body_end - HEADER) - deflated_len >= 4 {
        return Err("the compressed section has the wrong size".into());
    }
    Ok(())
}

/// Validates and decodes a search file; any inconsistency is an error naming it.
pub(crate) fn read(b: &[u8]) -> Result<SearchFile, String> {
    check_header(b, b.len())?;
    check_checksum(b)?;
    let [n, n_countries, n_strings, blob_len, deflated_len] =
        [16, 20, 24, 28, 32].map(|o| u32_at(b, o) as usize);
    let size = [
        n.checked_mul(RECORD),
        n_countries.checked_mul(COUNTRY),
        n_strings.checked_add(1).and_then(|s| s.checked_mul(4)),
        Some(blob_len),
    ]
    .into_iter()
    .try_fold(0usize, |acc, s| s.and_then(|s| acc.checked_add(s)))
    .filter(|&s| s <= 1 << 30)
    .ok_or("section sizes overflow")?;
    // never inflate more than the header promises: a damaged stream cannot eat memory
    let mut data = Vec::with_capacity(size);
    flate2::read::ZlibDecoder::new(&b[HEADER..HEADER + deflated_len])
        .take(size as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("the compressed section is damaged ({e})"))?;
    if data.len() != size {
        return Err("section sizes do not add up".into());
    }
    let countries_at = n * RECORD;
    let strings_at = countries_at + n_countries * COUNTRY;
    let strings = StringTable::read(&data, strings_at, n_strings, blob_len)?;
    let valid = |s: u32| s == NONE || (s as usize) < strings.len();
    let mut places = Vec::with_capacity(n);
    for i in 0..n {
        let o = i * RECORD;
        let r = Record {
            lat: u32_at(&data, o) as i32,
            lon: u32_at(&data, o + 4) as i32,
            population: u32_at(&data, o + 8),
            names: u32_at(&data, o + 12),
            state: u32_at(&data, o + 16),
            county: u32_at(&data, o + 20),
            country: [data[o + 24], data[o + 25]],
            kind: data[o + 26],
        };
        if !(-9_000_000..=9_000_000).contains(&r.lat)
            || !(-18_000_000..=18_000_000).contains(&r.lon)
            || r.names == NONE
            || ![r.names, r.state, r.county].into_iter().all(valid)
            || !r.country.iter().all(u8::is_ascii_uppercase)
            || r.kind > 3
        {
            return Err(format!("place {i} is invalid"));
        }
        places.push(r);
    }
    let mut countries = Vec::with_capacity(n_countries);
    for i in 0..n_countries {
        let o = countries_at + i * COUNTRY;
        let code = [data[o], data[o + 1]];
        let names = u32_at(&data, o + 4);
        if !code.iter().all(u8::is_ascii_uppercase) || names == NONE || !valid(names) {
            return Err(format!("country {i} is invalid"));
        }
        countries.push((code, names));
    }
    Ok(SearchFile {
        places,
        countries,
        strings,
    })
}
