//! Gathering addresses and roads, folding duplicates and writing the address file.
//!
//! Text is interned (a street name is stored once however many houses it has), so memory
//! grows with the addresses kept, about 28 bytes each plus their distinct strings, never
//! with the size of the input files. The file is written aside, synced and renamed into
//! place: an interrupted import leaves the previous file intact.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;

use super::store::{
    cell_key, AddressIndex, AddressRec, RoadRec, ADDRESS_BYTES, HEADER, MAGIC, NONE, POINT_BYTES,
    ROAD_BYTES,
};
use super::AddressError;
use crate::datafile::fnv1a_words;

/// Optional parts of an address.
#[derive(Clone, Copy, Debug, Default)]
pub struct AddressExtra<'a> {
    pub postcode: Option<&'a str>,
    pub city: Option<&'a str>,
    pub suburb: Option<&'a str>,
}

/// Addresses and roads on their way to an address file.
#[derive(Default)]
pub struct AddressSet {
    strings: HashMap<Box<str>, u32>,
    addresses: Vec<AddressRec>,
    roads: Vec<(u32, Vec<(i32, i32)>)>,
}

/// What [`AddressSet::write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteStats {
    pub addresses: u64,
    pub roads: u64,
    /// Addresses and roads folded into an identical one (same point, number and street;
    /// same name and vertices).
    pub merged_duplicates: u64,
    pub bytes: u64,
}

impl AddressSet {
    pub fn new() -> AddressSet {
        AddressSet::default()
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.insert(s.into(), i);
        i
    }

    fn intern_opt(&mut self, s: Option<&str>) -> u32 {
        match s.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => self.intern(s),
            None => NONE,
        }
    }

    /// Adds an address at 1e-7 degree coordinates; the caller has validated them.
    pub fn add_address(
        &mut self,
        lat_e7: i32,
        lon_e7: i32,
        number: &str,
        street: &str,
        extra: AddressExtra,
    ) {
        let rec = AddressRec {
            lat: lat_e7,
            lon: lon_e7,
            number: self.intern(number.trim()),
            street: self.intern(street.trim()),
            postcode: self.intern_opt(extra.postcode),
            city: self.intern_opt(extra.city),
            suburb: self.intern_opt(extra.suburb),
        };
        self.addresses.push(rec);
    }

    /// Adds a named road as a polyline of at least two 1e-7 degree points.
    pub fn add_road(&mut self, name: &str, points: Vec<(i32, i32)>) {
        if points.len() >= 2 {
            let name = self.intern(name.trim());
            self.roads.push((name, points));
        }
    }

    pub fn address_count(&self) -> usize {
        self.addresses.len()
    }

    /// Adds everything an existing address file holds.
    pub fn add_index(&mut self, index: &AddressIndex) {
        let mut map = vec![NONE; index.strings_len()];
        let mut remap = |set: &mut AddressSet, i: u32| -> u32 {
            if i == NONE {
                return NONE;
            }
            if map[i as usize] == NONE {
                map[i as usize] = set.intern(index.string(i).unwrap_or(""));
            }
            map[i as usize]
        };
        for r in &index.addresses {
            let rec = AddressRec {
                lat: r.lat,
                lon: r.lon,
                number: remap(self, r.number),
                street: remap(self, r.street),
                postcode: remap(self, r.postcode),
                city: remap(self, r.city),
                suburb: remap(self, r.suburb),
            };
            self.addresses.push(rec);
        }
        for r in &index.roads {
            let name = remap(self, r.name);
            let pts = index.points[r.first as usize..(r.first + r.count) as usize].to_vec();
            self.roads.push((name, pts));
        }
    }

    /// Folds duplicates and writes the address file to `path`, atomically.
    pub fn write(mut self, path: &Path) -> Result<WriteStats, AddressError> {
        let mut merged = 0u64;
        // Same point, number and street: one house. Fill its missing parts from the others.
        self.addresses
            .sort_unstable_by_key(|r| (r.lat, r.lon, r.number, r.street));
        let mut kept: Vec<AddressRec> = Vec::with_capacity(self.addresses.len());
        for r in self.addresses.drain(..) {
            match kept.last_mut() {
                Some(k)
                    if (k.lat, k.lon, k.number, k.street) == (r.lat, r.lon, r.number, r.street) =>
                {
                    merged += 1;
                    for (mine, theirs) in [
                        (&mut k.postcode, r.postcode),
                        (&mut k.city, r.city),
                        (&mut k.suburb, r.suburb),
                    ] {
                        if *mine == NONE {
                            *mine = theirs;
                        }
                    }
                }
                _ => kept.push(r),
            }
        }
        kept.sort_by_key(|r| (cell_key(r.lat, r.lon), r.lat, r.lon));
        self.roads.sort_unstable();
        let before = self.roads.len();
        self.roads.dedup();
        merged += (before - self.roads.len()) as u64;

        // Strings in id order, only those still referenced, renumbered densely.
        let mut by_id: Vec<Option<Box<str>>> = vec![None; self.strings.len()];
        for (s, i) in self.strings.drain() {
            by_id[i as usize] = Some(s);
        }
        let mut used = vec![false; by_id.len()];
        for r in &kept {
            for s in [r.number, r.street, r.postcode, r.city, r.suburb] {
                if s != NONE {
                    used[s as usize] = true;
                }
            }
        }
        for (name, _) in &self.roads {
            used[*name as usize] = true;
        }
        let mut renum = vec![NONE; by_id.len()];
        let mut offsets = vec![0u32];
        let mut blob: Vec<u8> = Vec::new();
        for (i, s) in by_id.iter().enumerate() {
            if used[i] {
                renum[i] = (offsets.len() - 1) as u32;
                blob.extend_from_slice(s.as_deref().unwrap_or("").as_bytes());
                if blob.len() > u32::MAX as usize {
                    return Err(AddressError::Io("address strings exceed 4 GiB".into()));
                }
                offsets.push(blob.len() as u32);
            }
        }
        while !blob.len().is_multiple_of(4) {
            blob.push(0);
        }
        let re = |s: u32| if s == NONE { NONE } else { renum[s as usize] };
        let n_points: usize = self.roads.iter().map(|r| r.1.len()).sum();
        let size = HEADER
            + kept.len() * ADDRESS_BYTES
            + self.roads.len() * ROAD_BYTES
            + n_points * POINT_BYTES
            + offsets.len() * 4
            + blob.len()
            + 4;
        if n_points > u32::MAX as usize || kept.len() > u32::MAX as usize {
            return Err(AddressError::Io("too many addresses for one file".into()));
        }
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(MAGIC);
        for w in [
            1,
            HEADER as u32,
            kept.len() as u32,
            self.roads.len() as u32,
            n_points as u32,
            (offsets.len() - 1) as u32,
            blob.len() as u32,
            0,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for r in &kept {
            for w in [
                r.lat as u32,
                r.lon as u32,
                re(r.number),
                re(r.street),
                re(r.postcode),
                re(r.city),
                re(r.suburb),
            ] {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        let mut first = 0u32;
        for (name, pts) in &self.roads {
            let road = RoadRec {
                name: re(*name),
                first,
                count: pts.len() as u32,
            };
            for w in [road.name, road.first, road.count] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            first += pts.len() as u32;
        }
        for (_, pts) in &self.roads {
            for &(lat, lon) in pts {
                out.extend_from_slice(&(lat as u32).to_le_bytes());
                out.extend_from_slice(&(lon as u32).to_le_bytes());
            }
        }
        for o in &offsets {
            out.extend_from_slice(&o.to_le_bytes());
        }
        out.extend_from_slice(&blob);
        let sum = fnv1a_words(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(out.len(), size);
        write_atomically(path, &out)?;
        Ok(WriteStats {
            addresses: kept.len() as u64,
            roads: self.roads.len() as u64,
            merged_duplicates: merged,
            bytes: out.len() as u64,
        })
    }
}

/// Writes `bytes` beside `path`, syncs, renames over `path` and syncs the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), AddressError> {
    let io = |e: std::io::Error| AddressError::Io(format!("{}: {e}", path.display()));
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(d) = dir {
        fs::create_dir_all(d).map_err(io)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "addresses.bin".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        w.write_all(bytes)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Some(d) = dir {
            File::open(d)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}
