//! Forward geocoding over GeoNames places: free text ("münchen", "paris, texas",
//! "londn") to ranked places, built by `scripts/build-search.mjs` into `data/search.bin`
//! (format in [`file`]).
//!
//! # Matching
//! - Text is folded the same way on both sides ([`normalize`]): case, accents, punctuation
//!   and white space do not matter.
//! - Every name and alternate name of a place is indexed by its words ([`vocab`]); a query
//!   word matches a name word exactly or with a typo (1 edit from 4 characters, 2 from 8).
//! - A place's name matches when query words cover its words, in any order
//!   ("baviera monaco di" finds Munich, at a small cost); name words left uncovered cost more
//!   ("frankfurt" still finds "Frankfurt (Oder)", below a place called "Frankfurt").
//! - The query words the name does not use are qualifiers: they are matched against the
//!   place's state (admin1 name, and its code where it is letters: "TX"), county (admin2)
//!   and country (every name in every language i18n-iso-countries has, the alpha-3 and the
//!   alpha-2 code). Each qualifier word that matches none of them costs a lot, so
//!   "paris texas" ranks Paris, Texas over Paris, France. With commas the name is taken from
//!   the first part only and later parts are qualifiers ("city, region, country").
//! - A query word that is itself an indexed word is read as a typo of another word only to
//!   complete a name other words found; of the names a query meets, at most
//!   [`MAX_CANDIDATES`] (those using the most query words) are weighed: both keep queries of
//!   common words ("san josé de ...") fast. A name set aside uses fewer query words (or
//!   has more edits) than 2,000 others; it could only have won through qualifiers.
//! - `countries` restricts to ISO 3166-1 alpha-2 codes; a `viewbox` prefers places inside it
//!   without excluding any other.
//!
//! # States and countries named alone
//! A query that is all of a state's (admin1) name or one of a country's names ("Bavaria",
//! "Texas", "Deutschland"), word for word in order, each word within its typo allowance, also
//! answers that state or country ([`Level`]): at its seat's point (a state's PPLA, or the
//! capital when that is the seat, else its largest place; a country's capital, else its
//! largest place), with the seat's importance for a state and full importance for a
//! country. Its quality is as for a name (edits, an alternate name), so "Bavaria" (exact) is
//! the state before "Savaria" (one edit), "France" the country before any town named France,
//! and "Paris" the city, which ties with no area. At an equal score a place comes before an
//! area of the same name. States are matched by their GeoNames English name only (not
//! "Bayern"), and not with qualifiers ("Bavaria, Germany" is read as a place name).
//!
//! # Scores
//! Each hit carries `score` in [0, 1], documented so that candidates from another source
//! (street addresses) can be merged into one ranking:
//! `score = 0.9 * quality + 0.05 * importance + 0.05 * (1 inside the viewbox, else 0)`.
//! - `quality` in [0, 1] is how well the text matches, 1 for a name matched exactly with
//!   every other word matched as a qualifier. It loses [`EDIT_COST`] per edit in the name,
//!   [`MISSING_WORD_COST`] per name word not in the query, [`UNMATCHED_WORD_COST`] per query
//!   word matched nowhere, [`QUALIFIER_EDIT_COST`] per edit in a qualifier, [`ORDER_COST`]
//!   when the name's words came in another order and [`ALTERNATE_COST`] when an alternate
//!   name matched rather than the main one. Hits under [`MIN_QUALITY`] are dropped.
//! - `importance` in [0, 1]: `0.8 * min(1, log10(population + 1) / 7.5)` plus 0.2 for a
//!   capital, 0.12 for the seat of a first-level division, 0.05 for a lower seat.
//!
//! One edit costs 0.09 of score, more than importance and viewbox together can give, so the
//! match decides first and importance orders equal matches, as users expect ("londn" is
//! London, GB; "paris" is Paris, France; "springfield" is the largest Springfield).

pub(crate) mod file;
pub mod normalize;
pub mod vocab;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::lazy_file::DataFile;

use file::{Record, SearchFile, NONE};
use normalize::tokens;
use vocab::{distance, max_edits, Vocab};

pub const EDIT_COST: f64 = 0.1;
pub const MISSING_WORD_COST: f64 = 0.12;
pub const UNMATCHED_WORD_COST: f64 = 0.3;
pub const QUALIFIER_EDIT_COST: f64 = 0.05;
pub const ORDER_COST: f64 = 0.02;
pub const ALTERNATE_COST: f64 = 0.01;
pub const MIN_QUALITY: f64 = 0.5;
/// Names whose qualifiers are weighed, at most: a query of common words ("san", "de", "la")
/// meets tens of thousands of names; those using the most query words, with the fewest
/// edits, of the largest places are kept.
pub const MAX_CANDIDATES: usize = 2000;
/// Query words beyond this many are ignored (they fit a 16-bit mask).
pub const MAX_QUERY_WORDS: usize = 16;

/// A preferred area: longitudes `left` (west) to `right` (east), latitudes `bottom` to `top`.
/// `left > right` is a box across the antimeridian; top and bottom may come in either order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewBox {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl ViewBox {
    /// True when the point lies in the box (edges included).
    pub fn contains(&self, lat: f64, lon: f64) -> bool {
        let (s, n) = (self.top.min(self.bottom), self.top.max(self.bottom));
        let in_lon = if self.left <= self.right {
            (self.left..=self.right).contains(&lon)
        } else {
            lon >= self.left || lon <= self.right
        };
        (s..=n).contains(&lat) && in_lon
    }
}

/// What a search may return.
#[derive(Clone, Debug, Default)]
pub struct SearchOptions {
    /// Most hits answered.
    pub limit: usize,
    /// ISO 3166-1 alpha-2 codes (upper case); empty: anywhere.
    pub countries: Vec<[u8; 2]>,
    pub viewbox: Option<ViewBox>,
}

/// A place found by [`SearchIndex::search`].
#[derive(Clone, Debug, PartialEq)]
pub struct SearchHit<'a> {
    pub lat: f64,
    pub lon: f64,
    /// The place's GeoNames name (whichever of its names matched).
    pub name: &'a str,
    pub state: Option<&'a str>,
    pub county: Option<&'a str>,
    /// ISO 3166-1 alpha-2, upper case.
    pub country_code: &'a str,
    pub population: u32,
    /// 0 place, 1 lower admin seat, 2 first-level admin seat, 3 capital (for a state or
    /// country: its seat's).
    pub kind: u8,
    /// A place, or a state or country the query named alone.
    pub level: Level,
    /// In [0, 1], as the module documents.
    pub score: f64,
}

/// The places of a search file. The word index is built by [`SearchIndex::prepare`], by
/// [`SearchIndex::prepare_in_background`] or else by the first search (about half a second
/// of one core); opening alone costs only reading the file.
pub struct SearchIndex {
    file: SearchFile,
    index: OnceLock<Index>,
}

/// Folded word lists: one per name variant of an admin area or country.
type Phrases = Vec<Vec<Vec<char>>>;

struct Index {
    vocab: Vocab,
    /// Phrases of each country (its names, alpha-3 and alpha-2 codes), by alpha-2.
    countries: FxHashMap<[u8; 2], Phrases>,
    /// States and countries, found when a query is nothing but one's name.
    areas: Vec<Area>,
    /// The words of their names (postings name areas, not places).
    area_words: Vocab,
}

/// What a hit stands for: a populated place, or a state or country named alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Place,
    /// A first-level division (admin1): the hit's `name` and `state` are its name.
    State,
    /// A country: the hit's `name` is its English name, `state` and `county` are none.
    Country,
}

/// A state or country that a query naming it alone answers.
struct Area {
    level: Level,
    /// The place whose point, importance and country the hit takes.
    seat: u32,
    /// The string of its names: a state's first line (the rest is its code), every line
    /// of a country's (English first, then the other languages and the alpha-3 code).
    name: u32,
}

struct Word {
    chars: Vec<char>,
    edits: u8,
}

/// A query word met in a name: (query word, position in the name, edits, name length).
type Hit = (u8, u8, u8, u8);

/// A search file's error: `m` says what is wrong.
fn corrupt(m: String) -> String {
    format!("search file is corrupt: {m}")
}

impl DataFile for SearchIndex {
    type Error = String;
    const HEADER: usize = file::HEADER;

    fn io_error(_path: &Path, e: std::io::Error) -> String {
        format!("search: {e}")
    }

    fn check_header(head: &[u8], len: usize) -> Result<(), String> {
        file::check_header(head, len).map_err(corrupt)
    }

    fn from_file_bytes(bytes: Vec<u8>) -> Result<SearchIndex, String> {
        SearchIndex::from_bytes(&bytes)
    }
}

impl SearchIndex {
    /// Reads and validates a search file.
    pub fn open(path: &Path) -> Result<SearchIndex, String> {
        let bytes = std::fs::read(path).map_err(|e| SearchIndex::io_error(path, e))?;
        SearchIndex::from_bytes(&bytes)
    }

    /// Validates the bytes of a search file; any inconsistency is an error.
    pub fn from_bytes(b: &[u8]) -> Result<SearchIndex, String> {
        let file = file::read(b).map_err(corrupt)?;
        Ok(SearchIndex {
            file,
            index: OnceLock::new(),
        })
    }

    /// Number of places.
    pub fn len(&self) -> usize {
        self.file.places.len()
    }

    /// True when the file holds no places.
    pub fn is_empty(&self) -> bool {
        self.file.places.is_empty()
    }

    /// String `i` of the file; "" for none (indexes were validated at load).
    fn string(&self, i: u32) -> &str {
        self.file.strings.get(i).unwrap_or_default()
    }

    fn phrases(&self, s: u32) -> Phrases {
        self.string(s)
            .split('\n')
            .map(|p| tokens(p).iter().map(|w| w.chars().collect()).collect())
            .filter(|p: &Vec<Vec<char>>| !p.is_empty())
            .collect()
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let vocab = Vocab::build(self.file.places.iter().enumerate().flat_map(|(p, r)| {
                self.string(r.names)
                    .split('\n')
                    .enumerate()
                    .take(u16::MAX as usize)
                    .map(move |(n, name)| (name, p as u32, n as u16))
            }));
            let countries = self
                .file
                .countries
                .iter()
                .map(|&(code, names)| {
                    let mut p = self.phrases(names);
                    p.push(vec![code
                        .iter()
                        .map(|c| c.to_ascii_lowercase() as char)
                        .collect()]);
                    (code, p)
                })
                .collect();
            let areas = self.areas();
            let area_words = Vocab::build(areas.iter().enumerate().flat_map(|(a, area)| {
                let names = self.string(area.name);
                let names = match area.level {
                    Level::Country => names,
                    _ => first_line(names),
                };
                names
                    .split('\n')
                    .enumerate()
                    .take(u16::MAX as usize)
                    .map(move |(n, name)| (name, a as u32, n as u16))
            }));
            Index {
                vocab,
                countries,
                areas,
                area_words,
            }
        })
    }

    /// Builds the word index now rather than at the first search.
    pub fn prepare(&self) {
        self.index();
    }

    /// Builds the word index on a background thread, so that the first search finds it
    /// ready (or waits only for the rest of the build: [`OnceLock`] makes a search that
    /// comes meanwhile wait for the build under way rather than start another). When no
    /// thread can be started, the first search builds it as before.
    pub fn prepare_in_background(index: &Arc<SearchIndex>) {
        let index = Arc::clone(index);
        let _ = std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || {
                index.prepare();
                release_freed_memory();
            });
    }

    /// Every state (admin1) and country with the place that stands for it: a state's seat
    /// (PPLA, or the capital when it is one), else its largest place; a country's capital
    /// (PPLC), else its largest place.
    fn areas(&self) -> Vec<Area> {
        // (country, state name) -> (state string, best place so far)
        let mut states: FxHashMap<([u8; 2], &str), (u32, u32)> = FxHashMap::default();
        let mut capitals: FxHashMap<[u8; 2], u32> = FxHashMap::default();
        let rank = |p: u32, seat: u8| {
            let r = &self.file.places[p as usize];
            (r.kind >= seat, r.population)
        };
        for (p, r) in self.file.places.iter().enumerate() {
            let p = p as u32;
            if r.state != NONE {
                let name = first_line(self.string(r.state));
                let (_, best) = states.entry((r.country, name)).or_insert((r.state, p));
                if rank(p, 2) > rank(*best, 2) {
                    *best = p;
                }
            }
            let best = capitals.entry(r.country).or_insert(p);
            if rank(p, 3) > rank(*best, 3) {
                *best = p;
            }
        }
        let mut areas: Vec<Area> = states
            .into_iter()
            .map(|(_, (string, seat))| Area {
                level: Level::State,
                seat,
                name: string,
            })
            .collect();
        for &(code, names) in &self.file.countries {
            if let Some(&seat) = capitals.get(&code) {
                areas.push(Area {
                    level: Level::Country,
                    seat,
                    name: names,
                });
            }
        }
        // a stable order, so equal hits come out the same in every process
        areas.sort_unstable_by_key(|a| (a.level, a.seat));
        areas
    }

    /// The places matching `query`, best first (module docs); empty when nothing matches.
    pub fn search(&self, query: &str, options: &SearchOptions) -> Vec<SearchHit<'_>> {
        let index = self.index();
        // words with the comma-separated part they came from
        let mut words: Vec<Word> = Vec::new();
        let mut parts: Vec<usize> = Vec::new();
        for (part, text) in query.split(',').enumerate() {
            for w in tokens(text) {
                if words.len() < MAX_QUERY_WORDS {
                    words.push(Word {
                        edits: max_edits(&w),
                        chars: w.chars().collect(),
                    });
                    parts.push(part);
                }
            }
        }
        if words.is_empty() || options.limit == 0 {
            return Vec::new();
        }
        let all: u16 = ((1u32 << words.len()) - 1) as u16;
        // with commas, the name comes from the first part and the rest qualifies it
        let name_words: u16 = (0..words.len())
            .filter(|&i| parts[i] == parts[0])
            .fold(0, |m, i| m | 1 << i);
        let allowed =
            |r: &Record| options.countries.is_empty() || options.countries.contains(&r.country);

        // A word that is itself an indexed word is not also read as a typo of another word
        // except to complete a name other words found: an exact match outranks any typo
        // anyway, and the typo neighbours of a common word ("santa": santo, sant, sante,
        // ...) would otherwise bring thousands of names that could only rank below it.
        let mut found: FxHashMap<(u32, u16), SmallVec<[Hit; 4]>> = FxHashMap::default();
        let mut completing: Vec<(u8, u32, u8)> = Vec::new();
        for (qi, w) in words.iter().enumerate() {
            if name_words & (1 << qi) == 0 {
                continue;
            }
            let text: String = w.chars.iter().collect();
            let matches = index.vocab.lookup(&text, w.edits);
            let exact = matches.iter().any(|&(_, d)| d == 0);
            for (v, d) in matches {
                if exact && d > 0 {
                    completing.push((qi as u8, v, d));
                    continue;
                }
                for p in index.vocab.postings(v) {
                    if allowed(&self.file.places[p.place as usize]) {
                        found
                            .entry((p.place, p.name))
                            .or_default()
                            .push((qi as u8, p.pos, d, p.len));
                    }
                }
            }
        }
        for (qi, v, d) in completing {
            for p in index.vocab.postings(v) {
                if let Some(hits) = found.get_mut(&(p.place, p.name)) {
                    hits.push((qi, p.pos, d, p.len));
                }
            }
        }

        let mut qualifiers = Qualifiers {
            words: &words,
            search: self,
            countries: &index.countries,
            cache: FxHashMap::default(),
        };
        let mut named: Vec<(u32, u16, u16, f64)> = found
            .iter()
            .map(|(&(place, name), hits)| {
                let (used, cost) = name_match(hits);
                (place, name, used, cost)
            })
            .filter(|c| c.2 != 0)
            .collect();
        if named.len() > MAX_CANDIDATES {
            // names made of the most query words, then the closest, then the biggest places
            let key = |c: &(u32, u16, u16, f64)| {
                (
                    std::cmp::Reverse(c.2.count_ones()),
                    (c.3 * 1000.0) as u32,
                    std::cmp::Reverse(self.file.places[c.0 as usize].population),
                )
            };
            named.select_nth_unstable_by_key(MAX_CANDIDATES, key);
            named.truncate(MAX_CANDIDATES);
        }
        let mut best: FxHashMap<u32, f64> = FxHashMap::default();
        for (place, name, used, cost) in named {
            let r = &self.file.places[place as usize];
            let mut quality = 1.0 - cost - if name > 0 { ALTERNATE_COST } else { 0.0 };
            let leftover = all & !used;
            if leftover != 0 {
                let (matched, edits) = qualifiers.matched(r, leftover);
                quality -= UNMATCHED_WORD_COST * (leftover & !matched).count_ones() as f64
                    + QUALIFIER_EDIT_COST * edits as f64;
            }
            if quality >= MIN_QUALITY {
                let b = best.entry(place).or_insert(0.0);
                *b = b.max(quality);
            }
        }

        let mut hits: Vec<SearchHit<'_>> = best
            .into_iter()
            .map(|(place, quality)| self.hit(place, quality, options.viewbox))
            .collect();
        hits.extend(self.lone_areas(index, &words, options));
        // a place before the state or country of the same score ("Panamá" the city, then
        // the province): the place carries more of the address
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.level.cmp(&b.level))
                .then(b.population.cmp(&a.population))
                .then(a.name.cmp(b.name))
                .then(a.lat.total_cmp(&b.lat))
        });
        hits.truncate(options.limit);
        hits
    }

    /// The states and countries whose whole name the query is (each word within its edits,
    /// in order): quality 1 less [`EDIT_COST`] per edit and [`ALTERNATE_COST`] for a name
    /// other than the first. A state is as important as its seat; a country counts as the
    /// most important of all, so "France" is the country before any town called France.
    fn lone_areas<'s>(
        &'s self,
        index: &Index,
        words: &[Word],
        options: &SearchOptions,
    ) -> Vec<SearchHit<'s>> {
        // (area, name) -> (query words met at their own position, edits)
        let mut met: FxHashMap<(u32, u16), (usize, u32)> = FxHashMap::default();
        for (qi, w) in words.iter().enumerate() {
            let text: String = w.chars.iter().collect();
            for (v, d) in index.area_words.lookup(&text, w.edits) {
                for p in index.area_words.postings(v) {
                    if p.pos as usize == qi && p.len as usize == words.len() {
                        let m = met.entry((p.place, p.name)).or_default();
                        m.0 += 1;
                        m.1 += d as u32;
                    }
                }
            }
        }
        let mut best: FxHashMap<u32, f64> = FxHashMap::default();
        for ((area, name), (count, edits)) in met {
            if count == words.len() {
                let quality =
                    1.0 - EDIT_COST * edits as f64 - if name > 0 { ALTERNATE_COST } else { 0.0 };
                let b = best.entry(area).or_insert(f64::MIN);
                *b = b.max(quality);
            }
        }
        let mut hits = Vec::new();
        for (area, quality) in best {
            let area = &index.areas[area as usize];
            let seat = &self.file.places[area.seat as usize];
            if !options.countries.is_empty() && !options.countries.contains(&seat.country) {
                continue;
            }
            if quality >= MIN_QUALITY {
                let mut hit = self.hit(area.seat, quality, options.viewbox);
                let name = first_line(self.string(area.name));
                hit.level = area.level;
                hit.name = name;
                hit.county = None;
                if area.level == Level::Country {
                    hit.state = None;
                    hit.score = score(quality, 1.0, hit.lat, hit.lon, options.viewbox);
                }
                hits.push(hit);
            }
        }
        hits
    }

    fn hit(&self, place: u32, quality: f64, viewbox: Option<ViewBox>) -> SearchHit<'_> {
        let r = &self.file.places[place as usize];
        let (lat, lon) = (r.lat as f64 * 1e-5, r.lon as f64 * 1e-5);
        SearchHit {
            lat,
            lon,
            name: first_line(self.string(r.names)),
            state: (r.state != NONE).then(|| first_line(self.string(r.state))),
            county: (r.county != NONE).then(|| self.string(r.county)),
            // validated as two ASCII upper-case letters at load
            country_code: std::str::from_utf8(&r.country).unwrap_or("??"),
            population: r.population,
            kind: r.kind,
            level: Level::Place,
            score: score(quality, importance(r.population, r.kind), lat, lon, viewbox),
        }
    }
}

/// The display form of a names string: its first line.
fn first_line(s: &str) -> &str {
    s.split('\n').next().unwrap_or(s)
}

/// Hands the memory the index build freed (its word map and sort buffers: some 40 MB in
/// small blocks) back to the system: glibc keeps it in the building thread's arena
/// otherwise, and every process that searches would carry it as resident memory.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only returns free pages of glibc's heaps to the kernel; it
        // takes no pointer and is safe to call from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// A hit's score in [0, 1] (module docs).
fn score(quality: f64, importance: f64, lat: f64, lon: f64, viewbox: Option<ViewBox>) -> f64 {
    let inside = viewbox.is_some_and(|v| v.contains(lat, lon));
    (0.9 * quality + 0.05 * importance + if inside { 0.05 } else { 0.0 }).clamp(0.0, 1.0)
}

/// How important a place is, in [0, 1] (module docs).
pub fn importance(population: u32, kind: u8) -> f64 {
    let size = ((population as f64 + 1.0).log10() / 7.5).min(1.0);
    let seat = match kind {
        3 => 0.2,
        2 => 0.12,
        1 => 0.05,
        _ => 0.0,
    };
    (0.8 * size + seat).min(1.0)
}

/// Assigns query words to the words of one name: each name position takes the unused query
/// word that met it with the fewest edits. Returns the query words used and the cost.
fn name_match(hits: &[Hit]) -> (u16, f64) {
    let len = hits.first().map_or(0, |h| h.3);
    let (mut used, mut edits, mut covered, mut ordered, mut last) = (0u16, 0u32, 0u32, true, -1i32);
    for pos in 0..len {
        let pick = hits
            .iter()
            .filter(|h| h.1 == pos && used & (1 << h.0) == 0)
            .min_by_key(|h| (h.2, h.0));
        if let Some(&(qi, _, d, _)) = pick {
            used |= 1 << qi;
            edits += d as u32;
            covered += 1;
            ordered &= qi as i32 > last;
            last = qi as i32;
        }
    }
    let cost = EDIT_COST * edits as f64
        + MISSING_WORD_COST * (len as u32 - covered) as f64
        + if ordered { 0.0 } else { ORDER_COST };
    (used, cost)
}

/// Matches leftover query words against states, counties and countries, remembering the
/// answers for the query (many candidates share a state or a country).
struct Qualifiers<'a> {
    words: &'a [Word],
    /// States and counties are folded when a candidate first needs them.
    search: &'a SearchIndex,
    countries: &'a FxHashMap<[u8; 2], Phrases>,
    cache: FxHashMap<(u8, u32, u16), (u16, u32)>,
}

impl Qualifiers<'_> {
    /// The query words among `free` that the place's state, country and county account
    /// for, and the edits that took.
    fn matched(&mut self, r: &Record, free: u16) -> (u16, u32) {
        let (mut mask, mut edits) = (0u16, 0u32);
        let country = u32::from(r.country[0]) << 8 | u32::from(r.country[1]);
        for (kind, key) in [(0u8, r.state), (1, country), (2, r.county)] {
            let left = free & !mask;
            if left == 0 || key == NONE {
                continue;
            }
            let (m, e) = match self.cache.get(&(kind, key, left)) {
                Some(&v) => v,
                None => {
                    let v = if kind == 1 {
                        self.countries
                            .get(&r.country)
                            .map_or((0, 0), |p| best_phrase(self.words, p, left))
                    } else {
                        best_phrase(self.words, &self.search.phrases(key), left)
                    };
                    self.cache.insert((kind, key, left), v);
                    v
                }
            };
            mask |= m;
            edits += e;
        }
        (mask, edits)
    }
}

/// The phrase that accounts for the most `free` query words (then the fewest edits): every
/// word of a phrase must meet a distinct free query word within that word's edits.
fn best_phrase(words: &[Word], phrases: &Phrases, free: u16) -> (u16, u32) {
    let mut best = (0u16, 0u32);
    for phrase in phrases {
        let (mut used, mut edits, mut ok) = (0u16, 0u32, true);
        for pw in phrase {
            let pick = (0..words.len())
                .filter(|&i| free & !used & (1 << i) != 0)
                .filter_map(|i| distance(&words[i].chars, pw, words[i].edits).map(|d| (d, i)))
                .min();
            match pick {
                Some((d, i)) => {
                    used |= 1 << i;
                    edits += d as u32;
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        let better = used.count_ones() > best.0.count_ones()
            || (used.count_ones() == best.0.count_ones() && edits < best.1);
        if ok && better {
            best = (used, edits);
        }
    }
    best
}
