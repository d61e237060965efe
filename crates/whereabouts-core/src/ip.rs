//! IP address to location from MMDB files (the `ipf` fallback).
//!
//! The MMDB files are read by a small reader of our own rather than through the
//! `maxminddb` crate: its 0.26 decoder indexes slices without bounds checks and
//! follows pointers without limit, so a corrupt or hostile file can panic the
//! process or overflow the stack. Here every read is checked, nesting is bounded,
//! and a damaged record only makes that one lookup answer `None`.
//!
//! Record shapes understood (chosen per record, so a database needs no declared type):
//! - flat `country_code` (the `@ip-location-db/*-country-mmdb` packages),
//! - GeoIP2 `country.iso_code` / `registered_country.iso_code` (GeoLite2-Country,
//!   DB-IP country lite),
//! - GeoIP2 `location.latitude/longitude[/accuracy_radius]` with `city`
//!   (GeoLite2-City, DB-IP city lite),
//! - flat `latitude`/`longitude` with `city` (the `@ip-location-db/*-city-mmdb` packages).
//!
//! A bare country becomes a position through the country table (`alpha2,lat,lon,radius_m,name`).

use std::fmt;
use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// Accuracy for a city-level record that states no radius (DB-IP city lite, the
/// ip-location-db city files). MaxMind publishes its own city accuracy as the share
/// of addresses placed "within 50 km", and free city databases are at best that
/// good, so 50 km is the smallest radius we can claim without overstating; it is
/// capped by the country's own radius for small countries.
pub const DEFAULT_CITY_ACCURACY_M: f64 = 50_000.0;

/// No IP answer may claim to be vaguer than half the Earth's circumference.
const MAX_ACCURACY_M: f64 = 20_000_000.0;

/// The spec keeps the metadata within the last 128 KiB of the file.
const METADATA_MAX_SIZE: usize = 128 * 1024;
const METADATA_MARKER: &[u8] = b"\xAB\xCD\xEFMaxMind.com";
const DATA_SEPARATOR: usize = 16;

/// Real records nest three or four levels; anything deeper is a corrupt or hostile file.
const MAX_DEPTH: u32 = 32;

/// How many records are sampled at open to recognise a database's shape.
const SHAPE_SAMPLES: usize = 16;

#[derive(Debug)]
pub enum IpError {
    Io(io::Error),
    Mmdb(String),
    Countries(String),
}

impl fmt::Display for IpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpError::Io(e) => write!(f, "I/O error: {e}"),
            IpError::Mmdb(m) => write!(f, "MMDB error: {m}"),
            IpError::Countries(m) => write!(f, "country table error: {m}"),
        }
    }
}

impl std::error::Error for IpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IpError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// io::Error carries no path, and "No such file or directory" alone does not tell
/// a user which of several configured files is missing.
fn io_err(path: &Path, e: io::Error) -> IpError {
    IpError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[derive(Clone, Debug, PartialEq)]
pub struct IpLocation {
    pub lat: f64,
    pub lon: f64,
    /// Radius in metres: the database's own radius when it has one, else the
    /// country radius or [`DEFAULT_CITY_ACCURACY_M`].
    pub accuracy_m: f64,
    /// ISO 3166-1 alpha-2, uppercase.
    pub country: Option<String>,
    /// True when the record names a city; false for country-level answers.
    pub city_level: bool,
}

/// The record layout a database was recognised as at open (from sampled records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordShape {
    /// Flat `{country_code}`.
    CountryCode,
    /// GeoIP2 `{country: {iso_code}}` without a location.
    GeoIp2Country,
    /// GeoIP2 with `location.latitude/longitude`.
    GeoIp2City,
    /// Flat `{latitude, longitude, ...}`.
    FlatCity,
}

#[derive(Clone, Debug)]
pub struct DatabaseInfo {
    pub path: PathBuf,
    pub database_type: String,
    pub ip_version: u16,
    pub node_count: u32,
    pub record_size: u16,
    pub shape: RecordShape,
}

#[derive(Clone, Copy, Debug)]
struct Country {
    lat: f64,
    lon: f64,
    radius_m: f64,
}

/// Countries indexed by their two letters, A..Z x A..Z.
struct CountryTable {
    entries: Vec<Option<Country>>,
}

fn alpha2_index(code: &[u8]) -> Option<usize> {
    match code {
        [a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            let a = (a.to_ascii_uppercase() - b'A') as usize;
            let b = (b.to_ascii_uppercase() - b'A') as usize;
            Some(a * 26 + b)
        }
        _ => None,
    }
}

impl CountryTable {
    fn get(&self, code: &str) -> Option<Country> {
        alpha2_index(code.as_bytes()).and_then(|i| self.entries[i])
    }

    fn open(path: &Path) -> Result<CountryTable, IpError> {
        let text = std::fs::read_to_string(path).map_err(|e| io_err(path, e))?;
        Self::parse(&text).map_err(|m| IpError::Countries(format!("{}: {m}", path.display())))
    }

    fn parse(text: &str) -> Result<CountryTable, String> {
        let mut lines = text.lines().enumerate();
        let header = loop {
            match lines.next() {
                Some((_, l)) if l.trim().is_empty() => continue,
                Some((_, l)) => break split_csv(l.trim_start_matches('\u{feff}')),
                None => return Err("empty file".into()),
            }
        };
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case(name))
                .ok_or_else(|| format!("header lacks column `{name}`"))
        };
        let (ca, clat, clon, crad) = (col("alpha2")?, col("lat")?, col("lon")?, col("radius_m")?);
        let mut entries = vec![None; 26 * 26];
        let mut count = 0usize;
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let n = i + 1;
            let f = split_csv(line);
            let field = |c: usize| {
                f.get(c)
                    .map(|s| s.trim())
                    .ok_or_else(|| format!("line {n}: too few fields"))
            };
            let code = field(ca)?;
            let idx = alpha2_index(code.as_bytes())
                .ok_or_else(|| format!("line {n}: `{code}` is not an alpha-2 code"))?;
            let num = |c: usize, what: &str| -> Result<f64, String> {
                let s = field(c)?;
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("line {n}: {what} `{s}` is not a number"))
            };
            let (lat, lon, radius_m) =
                (num(clat, "lat")?, num(clon, "lon")?, num(crad, "radius_m")?);
            if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
                return Err(format!("line {n}: ({lat}, {lon}) is not a position"));
            }
            if radius_m <= 0.0 {
                return Err(format!("line {n}: radius_m must be positive"));
            }
            // A repeated code means the table was built wrongly; guessing which row
            // is meant would hide that.
            if entries[idx].is_some() {
                return Err(format!("line {n}: {code} appears twice"));
            }
            entries[idx] = Some(Country { lat, lon, radius_m });
            count += 1;
        }
        if count == 0 {
            return Err("no countries".into());
        }
        Ok(CountryTable { entries })
    }
}

/// Splits one CSV line with RFC 4180 quoting; names such as "Korea, Republic of"
/// carry commas.
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The address to look up, or None when the address can never be located: private,
/// loopback, link-local, CGNAT, documentation, benchmarking, multicast, reserved and
/// other ranges that the IANA special-purpose registries mark as not globally
/// reachable. Addresses that embed an IPv4 address (IPv4-mapped, 6to4, the NAT64
/// well-known prefix) are returned as that IPv4 address, since databases index the
/// IPv4 space once and that is where the location lives.
pub fn lookup_address(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(v4) => global_v4(v4).map(IpAddr::V4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let o = v6.octets();
            let embedded = || Ipv4Addr::new(o[12], o[13], o[14], o[15]);
            if let Some(v4) = v6.to_ipv4_mapped() {
                return global_v4(v4).map(IpAddr::V4);
            }
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return global_v4(embedded()).map(IpAddr::V4);
            }
            if s[0] == 0x2002 {
                let v4 = Ipv4Addr::new(o[2], o[3], o[4], o[5]);
                return global_v4(v4).map(IpAddr::V4);
            }
            // Only 2000::/3 is allocated as global unicast; everything outside it
            // (::1, ::/96, fc00::/7, fe80::/10, ff00::/8, 100::/64, 5f00::/16...) is not.
            if s[0] & 0xe000 != 0x2000 {
                return None;
            }
            // 2001::/23 holds IETF protocol assignments (Teredo among them) and
            // 2001:db8::/32 and 3fff::/20 are for documentation.
            let non_global =
                (s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8)) || (s[0] & 0xfff0 == 0x3ff0);
            (!non_global).then_some(IpAddr::V6(v6))
        }
    }
}

fn global_v4(ip: Ipv4Addr) -> Option<Ipv4Addr> {
    let [a, b, c, _] = ip.octets();
    let non_global = a == 0 // this network
        || a == 10
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224; // multicast, reserved, broadcast
    (!non_global).then_some(ip)
}

/// The file's bytes: mapped when possible so that opening costs nothing
/// proportional to the file and processes share the page cache.
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn open(path: &Path) -> Result<Bytes, IpError> {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        // SAFETY: the mapping is read-only and never handed out beyond `&[u8]`
        // borrows of this struct. Like every mmap user we rely on the file not
        // being truncated in place while open; databases are updated by writing a
        // new file and renaming it over the old one, which leaves this mapping intact.
        match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) => Ok(Bytes::Mapped(m)),
            // Some filesystems cannot map; reading costs memory, not correctness.
            Err(_) => std::fs::read(path)
                .map(Bytes::Owned)
                .map_err(|e| io_err(path, e)),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A structurally bad spot in a file. Lookups turn it into "unknown"; open turns
/// it into an error.
#[derive(Debug)]
struct Corrupt(&'static str);

type R<T> = Result<T, Corrupt>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Pointer,
    Str,
    Double,
    Bytes,
    U16,
    U32,
    Map,
    I32,
    U64,
    U128,
    Array,
    Bool,
    Float,
}

/// A decoded control byte: for pointers `size` is the target offset and `at` the
/// byte after the pointer; otherwise `at` is where the payload starts.
#[derive(Clone, Copy, Debug)]
struct Head {
    ty: Ty,
    size: usize,
    at: usize,
}

/// A bounds-checked view of an MMDB data (or metadata) section. Offsets and
/// pointers are relative to the start of `buf`.
#[derive(Clone, Copy)]
struct Section<'a> {
    buf: &'a [u8],
}

impl<'a> Section<'a> {
    fn byte(&self, at: usize) -> R<u8> {
        self.buf
            .get(at)
            .copied()
            .ok_or(Corrupt("read past the end of the section"))
    }

    fn slice(&self, at: usize, len: usize) -> R<&'a [u8]> {
        at.checked_add(len)
            .and_then(|end| self.buf.get(at..end))
            .ok_or(Corrupt("value runs past the end of the section"))
    }

    fn be(bytes: &[u8]) -> usize {
        bytes.iter().fold(0usize, |acc, &b| (acc << 8) | b as usize)
    }

    fn head(&self, at: usize) -> R<Head> {
        let ctrl = self.byte(at)?;
        let mut p = at + 1;
        let mut t = (ctrl >> 5) as u16;
        if t == 0 {
            t = 7 + self.byte(p)? as u16;
            p += 1;
        }
        if t == 1 {
            let len = ((ctrl >> 3) & 3) as usize + 1;
            let b = self.slice(p, len)?;
            let v = (ctrl & 7) as usize;
            let target = match len {
                1 => (v << 8) | Self::be(b),
                2 => ((v << 16) | Self::be(b)) + 2048,
                3 => ((v << 24) | Self::be(b)) + 526_336,
                _ => Self::be(b),
            };
            return Ok(Head {
                ty: Ty::Pointer,
                size: target,
                at: p + len,
            });
        }
        let ty = match t {
            2 => Ty::Str,
            3 => Ty::Double,
            4 => Ty::Bytes,
            5 => Ty::U16,
            6 => Ty::U32,
            7 => Ty::Map,
            8 => Ty::I32,
            9 => Ty::U64,
            10 => Ty::U128,
            11 => Ty::Array,
            14 => Ty::Bool,
            15 => Ty::Float,
            _ => return Err(Corrupt("unknown data type")),
        };
        let s = (ctrl & 0x1f) as usize;
        let (size, ext) = match s {
            0..=28 => (s, 0),
            29 => (29 + Self::be(self.slice(p, 1)?), 1),
            30 => (285 + Self::be(self.slice(p, 2)?), 2),
            _ => (65_821 + Self::be(self.slice(p, 3)?), 3),
        };
        let ok = match ty {
            Ty::Double => size == 8,
            Ty::Float => size == 4,
            Ty::U16 => size <= 2,
            Ty::U32 | Ty::I32 => size <= 4,
            Ty::U64 => size <= 8,
            Ty::U128 => size <= 16,
            Ty::Bool => size <= 1,
            _ => true,
        };
        if !ok {
            return Err(Corrupt("value has an impossible size"));
        }
        Ok(Head {
            ty,
            size,
            at: p + ext,
        })
    }

    /// The head of the value at `at`, through one pointer if it is one. The format
    /// forbids pointers to pointers, which also rules out pointer cycles.
    fn resolve(&self, at: usize) -> R<Head> {
        let h = self.head(at)?;
        if h.ty != Ty::Pointer {
            return Ok(h);
        }
        let target = self.head(h.size)?;
        if target.ty == Ty::Pointer {
            return Err(Corrupt("pointer to a pointer"));
        }
        Ok(target)
    }

    /// The offset just past the value at `at` (a pointer counts as its own bytes).
    fn skip(&self, at: usize, depth: u32) -> R<usize> {
        if depth > MAX_DEPTH {
            return Err(Corrupt("values nested too deeply"));
        }
        let h = self.head(at)?;
        let end = match h.ty {
            Ty::Pointer | Ty::Bool => h.at,
            Ty::Map | Ty::Array => {
                let n = if h.ty == Ty::Map { h.size * 2 } else { h.size };
                let mut p = h.at;
                // Each value takes at least one byte, so a lying count fails at
                // the end of the section instead of looping long.
                for _ in 0..n {
                    p = self.skip(p, depth + 1)?;
                }
                p
            }
            _ => h.at + h.size,
        };
        if end > self.buf.len() {
            return Err(Corrupt("value runs past the end of the section"));
        }
        Ok(end)
    }

    /// The offset of `key`'s value in the map at `at`; None if `at` is not a map or
    /// lacks the key.
    fn map_get(&self, at: usize, key: &str) -> R<Option<usize>> {
        let h = self.resolve(at)?;
        if h.ty != Ty::Map {
            return Ok(None);
        }
        let mut p = h.at;
        for _ in 0..h.size {
            let k = self.resolve(p)?;
            if k.ty != Ty::Str {
                return Err(Corrupt("map key is not a string"));
            }
            let name = self.slice(k.at, k.size)?;
            let v = self.skip(p, 0)?;
            if name == key.as_bytes() {
                return Ok(Some(v));
            }
            p = self.skip(v, 0)?;
        }
        Ok(None)
    }

    fn path(&self, at: usize, keys: &[&str]) -> R<Option<usize>> {
        let mut p = at;
        for k in keys {
            match self.map_get(p, k)? {
                Some(v) => p = v,
                None => return Ok(None),
            }
        }
        Ok(Some(p))
    }

    fn str_at(&self, at: usize) -> R<Option<&'a str>> {
        let h = self.resolve(at)?;
        if h.ty != Ty::Str {
            return Ok(None);
        }
        std::str::from_utf8(self.slice(h.at, h.size)?)
            .map(Some)
            .map_err(|_| Corrupt("string is not UTF-8"))
    }

    fn uint_at(&self, at: usize) -> R<Option<u64>> {
        let h = self.resolve(at)?;
        Ok(match h.ty {
            Ty::U16 | Ty::U32 | Ty::U64 => Some(Self::be(self.slice(h.at, h.size)?) as u64),
            Ty::U128 if h.size <= 8 => Some(Self::be(self.slice(h.at, h.size)?) as u64),
            _ => None,
        })
    }

    /// Coordinates are doubles in GeoIP2 but writers differ, so floats and integers
    /// are accepted too.
    fn num_at(&self, at: usize) -> R<Option<f64>> {
        let h = self.resolve(at)?;
        let b = || self.slice(h.at, h.size);
        Ok(match h.ty {
            Ty::Double => Some(f64::from_be_bytes(
                b()?.try_into().map_err(|_| Corrupt("double"))?,
            )),
            Ty::Float => {
                Some(f32::from_be_bytes(b()?.try_into().map_err(|_| Corrupt("float"))?) as f64)
            }
            Ty::U16 | Ty::U32 | Ty::U64 => Some(Self::be(b()?) as f64),
            Ty::I32 => {
                let raw = Self::be(b()?) as u32;
                // int32 payloads shorter than 4 bytes are positive by the spec.
                Some(raw as i32 as f64)
            }
            _ => None,
        }
        .filter(|v| v.is_finite()))
    }

    fn get_str(&self, at: usize, keys: &[&str]) -> R<Option<&'a str>> {
        match self.path(at, keys)? {
            Some(p) => self.str_at(p),
            None => Ok(None),
        }
    }

    fn get_num(&self, at: usize, keys: &[&str]) -> R<Option<f64>> {
        match self.path(at, keys)? {
            Some(p) => self.num_at(p),
            None => Ok(None),
        }
    }
}

/// What one record says, before the country table is consulted.
#[derive(Debug, Default)]
struct Fields<'a> {
    country: Option<&'a str>,
    lat: Option<f64>,
    lon: Option<f64>,
    accuracy_km: Option<f64>,
    has_city: bool,
    geoip2: bool,
}

impl Fields<'_> {
    fn shape(&self) -> Option<RecordShape> {
        match (
            self.lat.is_some() && self.lon.is_some(),
            self.geoip2,
            self.country,
        ) {
            (true, true, _) => Some(RecordShape::GeoIp2City),
            (true, false, _) => Some(RecordShape::FlatCity),
            (false, true, Some(_)) => Some(RecordShape::GeoIp2Country),
            (false, false, Some(_)) => Some(RecordShape::CountryCode),
            (false, _, None) => None,
        }
    }
}

fn read_fields<'a>(d: &Section<'a>, at: usize) -> R<Fields<'a>> {
    let mut f = Fields::default();
    if let Some(c) = d.get_str(at, &["country_code"])? {
        f.country = Some(c);
    } else if let Some(c) = d.get_str(at, &["country", "iso_code"])? {
        f.country = Some(c);
        f.geoip2 = true;
    } else if let Some(c) = d.get_str(at, &["registered_country", "iso_code"])? {
        // MaxMind leaves `country` out for some networks (satellite, anycast);
        // where the block is registered is then the best country we have.
        f.country = Some(c);
        f.geoip2 = true;
    }
    if let Some(loc) = d.map_get(at, "location")? {
        f.geoip2 = true;
        f.lat = d.get_num(loc, &["latitude"])?;
        f.lon = d.get_num(loc, &["longitude"])?;
        f.accuracy_km = d.get_num(loc, &["accuracy_radius"])?;
    } else {
        f.lat = d.get_num(at, &["latitude"])?;
        f.lon = d.get_num(at, &["longitude"])?;
    }
    f.has_city = match d.map_get(at, "city")? {
        // GeoIP2 `city` is a map of names; the flat shape has a plain string.
        Some(c) => match d.resolve(c)?.ty {
            Ty::Map => d.resolve(c)?.size > 0,
            Ty::Str => d.str_at(c)?.is_some_and(|s| !s.trim().is_empty()),
            _ => false,
        },
        None => false,
    };
    Ok(f)
}

struct Mmdb {
    bytes: Bytes,
    info: DatabaseInfo,
    node_count: usize,
    record_size: usize,
    data_start: usize,
    data_end: usize,
    /// The node (or terminal record) reached after the 96 zero bits of `::a.b.c.d`
    /// in an IPv6 tree; the root in an IPv4 tree.
    ipv4_start: usize,
}

/// The metadata fields we rely on.
struct Meta {
    node_count: usize,
    record_size: usize,
    ip_version: u16,
    database_type: String,
}

impl Mmdb {
    fn open(path: &Path) -> Result<Mmdb, IpError> {
        let bytes = Bytes::open(path)?;
        let bad = |m: &str| IpError::Mmdb(format!("{}: {m}", path.display()));
        let buf = bytes.as_slice();
        if buf.is_empty() {
            return Err(bad("empty file"));
        }
        let tail_from = buf.len().saturating_sub(METADATA_MAX_SIZE);
        let marker = buf[tail_from..]
            .windows(METADATA_MARKER.len())
            .rposition(|w| w == METADATA_MARKER)
            .map(|i| tail_from + i)
            .ok_or_else(|| bad("not an MMDB file (no metadata marker)"))?;
        let meta = Section {
            buf: &buf[marker + METADATA_MARKER.len()..],
        };
        let m = read_meta(&meta).map_err(|Corrupt(m)| bad(&format!("bad metadata: {m}")))?;

        let tree_size = m
            .node_count
            .checked_mul(m.record_size / 4)
            .ok_or_else(|| bad("node count overflows"))?;
        let data_start = tree_size
            .checked_add(DATA_SEPARATOR)
            .filter(|&s| s <= marker)
            .ok_or_else(|| bad("search tree larger than the file"))?;
        if buf[tree_size..data_start].iter().any(|&b| b != 0) {
            return Err(bad("no zero separator after the search tree"));
        }
        let mut db = Mmdb {
            info: DatabaseInfo {
                path: path.to_path_buf(),
                database_type: m.database_type,
                ip_version: m.ip_version,
                node_count: m.node_count as u32,
                record_size: m.record_size as u16,
                // Replaced below once records have been sampled.
                shape: RecordShape::CountryCode,
            },
            node_count: m.node_count,
            record_size: m.record_size,
            data_start,
            data_end: marker,
            ipv4_start: 0,
            bytes,
        };
        if m.ip_version == 6 {
            let mut node = 0;
            for _ in 0..96 {
                if node >= db.node_count {
                    break;
                }
                node = db.read_node(node, false);
            }
            db.ipv4_start = node;
        }
        db.info.shape = db.sample_shape().map_err(|m| bad(&m))?;
        Ok(db)
    }

    fn data(&self) -> Section<'_> {
        Section {
            buf: &self.bytes.as_slice()[self.data_start..self.data_end],
        }
    }

    /// One child record of a node. Callers keep `node < node_count`, which open
    /// checked lies inside the file; out-of-range reads still yield the "empty"
    /// record rather than a panic.
    fn read_node(&self, node: usize, right: bool) -> usize {
        let buf = self.bytes.as_slice();
        let bytes_per_node = self.record_size / 4;
        let base = node * bytes_per_node;
        let Some(n) = buf.get(base..base + bytes_per_node) else {
            return self.node_count;
        };
        let be = |b: &[u8]| b.iter().fold(0usize, |acc, &x| (acc << 8) | x as usize);
        match (self.record_size, right) {
            (24, false) => be(&n[0..3]),
            (24, true) => be(&n[3..6]),
            (28, false) => ((n[3] as usize >> 4) << 24) | be(&n[0..3]),
            (28, true) => ((n[3] as usize & 0x0f) << 24) | be(&n[4..7]),
            (_, false) => be(&n[0..4]),
            (_, true) => be(&n[4..8]),
        }
    }

    /// The data-section offset of the record for `ip`, Ok(None) when the database
    /// has none.
    fn find(&self, ip: IpAddr) -> R<Option<usize>> {
        let (bits, len, mut node) = match ip {
            IpAddr::V4(v4) => (u32::from(v4) as u128, 32u32, self.ipv4_start),
            // An IPv4-only tree would read the first 32 bits of an IPv6 address as
            // an IPv4 one and answer nonsense.
            IpAddr::V6(_) if self.info.ip_version != 6 => return Ok(None),
            IpAddr::V6(v6) => (u128::from(v6), 128u32, 0),
        };
        for i in 0..len {
            if node >= self.node_count {
                break;
            }
            let bit = (bits >> (len - 1 - i)) & 1 == 1;
            node = self.read_node(node, bit);
        }
        if node == self.node_count {
            return Ok(None);
        }
        if node < self.node_count {
            return Err(Corrupt("search tree deeper than the address"));
        }
        let off = node - self.node_count;
        match off.checked_sub(DATA_SEPARATOR) {
            Some(o) if o < self.data_end - self.data_start => Ok(Some(o)),
            _ => Err(Corrupt("record points outside the data section")),
        }
    }

    /// Walks the tree from the root, collecting the first records met, to learn
    /// which layout the file uses: an ASN or anonymous-IP database given by
    /// mistake is rejected here rather than silently answering nothing.
    fn sample_shape(&self) -> Result<RecordShape, String> {
        let mut stack = vec![0usize];
        let mut records = Vec::new();
        let mut visited = 0usize;
        while let Some(node) = stack.pop() {
            visited += 1;
            if records.len() >= SHAPE_SAMPLES || visited > 100_000 {
                break;
            }
            for right in [true, false] {
                let child = self.read_node(node, right);
                if child < self.node_count {
                    stack.push(child);
                } else if child > self.node_count {
                    let off = (child - self.node_count)
                        .checked_sub(DATA_SEPARATOR)
                        .filter(|&o| o < self.data_end - self.data_start)
                        .ok_or("record points outside the data section")?;
                    if !records.contains(&off) {
                        records.push(off);
                    }
                }
            }
        }
        if records.is_empty() {
            return Err("database holds no records".into());
        }
        let d = self.data();
        let mut seen = None;
        for &off in &records {
            let f = read_fields(&d, off).map_err(|Corrupt(m)| format!("bad record: {m}"))?;
            // A city database's first records may be country-only; any located
            // record shows the richer shape.
            seen = match (seen, f.shape()) {
                (_, Some(s @ (RecordShape::GeoIp2City | RecordShape::FlatCity))) => Some(s),
                (None, s) => s,
                (s, _) => s,
            };
        }
        seen.ok_or_else(|| {
            format!(
                "database type `{}` has records without a country or a location \
                 (is it an ASN or other non-location database?)",
                self.info.database_type
            )
        })
    }

    /// What this database says about an already canonical address.
    fn fields(&self, ip: IpAddr) -> Option<Fields<'_>> {
        let off = self.find(ip).ok()??;
        read_fields(&self.data(), off).ok()
    }
}

fn read_meta(meta: &Section<'_>) -> R<Meta> {
    let uint = |key: &str| -> R<u64> {
        meta.path(0, &[key])?
            .map(|p| meta.uint_at(p))
            .transpose()?
            .flatten()
            .ok_or(Corrupt("missing a required unsigned field"))
    };
    if uint("binary_format_major_version")? != 2 {
        return Err(Corrupt("unsupported binary format version"));
    }
    let record_size = uint("record_size")?;
    if !matches!(record_size, 24 | 28 | 32) {
        return Err(Corrupt("record size is not 24, 28 or 32"));
    }
    let ip_version = uint("ip_version")?;
    if !matches!(ip_version, 4 | 6) {
        return Err(Corrupt("ip_version is not 4 or 6"));
    }
    let node_count = uint("node_count")?;
    if node_count == 0 || node_count > u32::MAX as u64 {
        return Err(Corrupt("node count out of range"));
    }
    let database_type = meta
        .get_str(0, &["database_type"])?
        .unwrap_or("")
        .to_string();
    Ok(Meta {
        node_count: node_count as usize,
        record_size: record_size as usize,
        ip_version: ip_version as u16,
        database_type,
    })
}

/// Locates IP addresses with one or more MMDB files; the first file that can
/// place an address answers.
pub struct IpLocator {
    dbs: Vec<Mmdb>,
    countries: CountryTable,
}

impl IpLocator {
    /// Opens every file now so that configuration mistakes surface at start-up,
    /// each error naming its file.
    pub fn open(mmdb_paths: &[PathBuf], countries_csv: &Path) -> Result<IpLocator, IpError> {
        if mmdb_paths.is_empty() {
            return Err(IpError::Mmdb("no MMDB file given".into()));
        }
        let countries = CountryTable::open(countries_csv)?;
        let dbs = mmdb_paths
            .iter()
            .map(|p| Mmdb::open(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(IpLocator { dbs, countries })
    }

    pub fn databases(&self) -> impl Iterator<Item = &DatabaseInfo> {
        self.dbs.iter().map(|d| &d.info)
    }

    /// Parses `ip` (surrounding whitespace allowed); text that is not an address gives None.
    pub fn locate_str(&self, ip: &str) -> Option<IpLocation> {
        self.locate(ip.trim().parse().ok()?)
    }

    pub fn locate(&self, ip: IpAddr) -> Option<IpLocation> {
        let ip = lookup_address(ip)?;
        self.dbs.iter().find_map(|db| self.place(db.fields(ip)?))
    }

    fn place(&self, f: Fields<'_>) -> Option<IpLocation> {
        let code = f
            .country
            .filter(|c| alpha2_index(c.as_bytes()).is_some())
            .map(|c| c.to_ascii_uppercase());
        let country = code.as_deref().and_then(|c| self.countries.get(c));
        let point = match (f.lat, f.lon) {
            // Some writers fill unknown coordinates with zeros; no network is
            // placed at Null Island, in the Gulf of Guinea.
            (Some(lat), Some(lon))
                if (-90.0..=90.0).contains(&lat)
                    && (-180.0..=180.0).contains(&lon)
                    && (lat, lon) != (0.0, 0.0) =>
            {
                Some((lat, lon))
            }
            _ => None,
        };
        let radius = f.accuracy_km.filter(|&r| r > 0.0).map(|km| km * 1000.0);
        let (lat, lon, accuracy_m, city_level) = match (point, radius, country) {
            (Some((lat, lon)), Some(r), _) => (lat, lon, r, f.has_city),
            (Some((lat, lon)), None, c) if f.has_city => {
                let cap = c.map_or(f64::INFINITY, |c| c.radius_m);
                (lat, lon, DEFAULT_CITY_ACCURACY_M.min(cap), true)
            }
            // Coordinates with neither a city nor a radius are a region or country
            // centroid: only the country's radius is honest for them.
            (Some((lat, lon)), None, Some(c)) => (lat, lon, c.radius_m, false),
            (Some((lat, lon)), None, None) => (lat, lon, DEFAULT_CITY_ACCURACY_M, false),
            (None, _, Some(c)) => (c.lat, c.lon, c.radius_m, false),
            (None, _, None) => return None,
        };
        Some(IpLocation {
            lat,
            lon,
            accuracy_m: accuracy_m.min(MAX_ACCURACY_M),
            country: code,
            city_level,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> Option<String> {
        lookup_address(s.parse().unwrap()).map(|a| a.to_string())
    }

    #[test]
    fn ip_non_global_addresses_are_never_looked_up() {
        for s in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "169.254.1.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::10.1.2.3",
            "::ffff:10.1.2.3",
            "::ffff:127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:c0a8:0101::1",
            "3fff::1",
            "5f00::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert_eq!(public(s), None, "{s}");
        }
    }

    #[test]
    fn ip_global_addresses_are_canonicalised() {
        assert_eq!(public("8.8.8.8").as_deref(), Some("8.8.8.8"));
        assert_eq!(public("100.63.255.255").as_deref(), Some("100.63.255.255"));
        assert_eq!(public("100.128.0.0").as_deref(), Some("100.128.0.0"));
        assert_eq!(public("172.32.0.1").as_deref(), Some("172.32.0.1"));
        assert_eq!(public("::ffff:8.8.4.4").as_deref(), Some("8.8.4.4"));
        assert_eq!(public("64:ff9b::1.1.1.1").as_deref(), Some("1.1.1.1"));
        assert_eq!(public("2002:0808:0808::1").as_deref(), Some("8.8.8.8"));
        assert_eq!(
            public("2001:4860:4860::8888").as_deref(),
            Some("2001:4860:4860::8888")
        );
        assert_eq!(public("2a00:1450::1").as_deref(), Some("2a00:1450::1"));
    }

    #[test]
    fn ip_country_table_parses_quotes_and_rejects_bad_rows() {
        let t = CountryTable::parse(
            "alpha2,lat,lon,radius_m,name\nKR,36.5,127.9,300000,\"Korea, Republic of\"\nus,39.8,-98.6,2500000,United States\n",
        )
        .unwrap();
        assert_eq!(t.get("KR").unwrap().radius_m, 300000.0);
        assert_eq!(t.get("us").unwrap().lat, 39.8);
        assert!(t.get("DE").is_none());
        assert!(t.get("").is_none());
        assert!(t.get("USA").is_none());
        for bad in [
            "",
            "alpha2,lat,lon\nUS,1,2\n",
            "alpha2,lat,lon,radius_m,name\n",
            "alpha2,lat,lon,radius_m,name\nUSA,1,2,3,x\n",
            "alpha2,lat,lon,radius_m,name\nUS,x,2,3,x\n",
            "alpha2,lat,lon,radius_m,name\nUS,91,2,3,x\n",
            "alpha2,lat,lon,radius_m,name\nUS,1,2,0,x\n",
            "alpha2,lat,lon,radius_m,name\nUS,1,2,NaN,x\n",
            "alpha2,lat,lon,radius_m,name\nUS,1,2\n",
            "alpha2,lat,lon,radius_m,name\nUS,1,2,3,x\nUS,1,2,3,x\n",
        ] {
            assert!(CountryTable::parse(bad).is_err(), "{bad:?}");
        }
        let e = CountryTable::parse("alpha2,lat,lon,radius_m,name\nUS,1,2,3,x\nZZZ,1,2,3,y\n")
            .err()
            .unwrap();
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn ip_section_rejects_pointer_chains_and_deep_nesting() {
        // A pointer at 0 to offset 2, where another pointer waits.
        let chain = Section {
            buf: &[0x20, 0x02, 0x20, 0x00],
        };
        assert!(chain.resolve(0).is_err());
        // Arrays nested deeper than any real record.
        let mut buf = Vec::new();
        for _ in 0..100 {
            buf.extend([0x01, 0x04]); // extended type 11 (array) of one element
        }
        buf.push(0x40 | 1); // string of length one
        buf.push(b'x');
        assert!(Section { buf: &buf }.skip(0, 0).is_err());
    }

    #[test]
    fn ip_locator_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<IpLocator>();
    }
}
