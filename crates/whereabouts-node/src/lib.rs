//! Node binding of whereabouts-core: a thin skin that converts numbers, maps
//! errors to JS exceptions and never lets a panic cross into Node. The formats both
//! languages share are whereabouts-core's (`wire`); `contracts.rs` exports them.
//!
//! Raw N-API (`napi::sys` calls) remains in one place: `function.rs` with its one user,
//! `reverse.rs`'s callback (`reverseKeyFunction`, the reverse geocoder's per-lookup call:
//! `napi_get_cb_info`, three number reads, one number back). Against the same function made
//! with napi-rs's safe `create_function_from_closure`, whose trampoline allocates the argument
//! list on every call, it saves 13 ns a call: 37-39 against 50-53 ns of CPU for a call that
//! answers at once, 1068-1130 against 1084-1134 ns for a lookup at Paris (about 1%; medians of
//! 15 rounds of 200,000 calls, 8 runs with the builds in alternating order,
//! `npx tsx bench/napi-calls.ts A.node B.node`). The locate function gained nothing measurable
//! from raw N-API (127-132 ns of CPU for an empty call either way, 1535-1598 against 1548-1616
//! for one request), so it uses the safe API (`locate.rs`). The other `unsafe` left is
//! napi-rs's own typed-array `as_mut` (`locate.rs`, `locate_join`): a view written during a
//! synchronous call, while no JavaScript runs.

// napi-derive registers exports only outside `cfg(test)`, so in the test build (which
// clippy --all-targets checks) the exported types look unused.
#![cfg_attr(test, allow(dead_code))]

mod addresses;
mod calibrate;
mod contracts;
mod function;
mod import;
mod install;
mod learn;
mod live;
mod locate;
mod maps;
mod progress;
mod reverse;
mod sync;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::{AsyncTask, Float64ArraySlice, Uint32Array};
use napi::{Error, Result, Status};
use napi_derive::napi;
use whereabouts_core::lazy_file::{DataFile, LazyFile};
use whereabouts_core::learn::compact::{Compactor, Thresholds};
use whereabouts_core::learn::overlay::Overlay;
use whereabouts_core::solve::Locator;
use whereabouts_core::store::Database;

/// Runs `f`, turning a panic into a JS error instead of aborting Node.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::new(
                Status::GenericFailure,
                format!("internal error in {what}: {msg}"),
            ))
        }
    }
}

/// Opens an optional geocoding file when a path is given: its header is checked now, the
/// rest on first use (whereabouts-core's `lazy_file`).
fn open_optional<T: DataFile>(path: &Option<String>) -> Result<Option<LazyFile<T>>> {
    path.as_deref()
        .map(|p| LazyFile::open(std::path::Path::new(p)).map_err(err))
        .transpose()
}

/// Optional data an engine was opened with, read on the first call; `missing` as the error
/// when it was not opened, the file's own when it is not sound.
pub(crate) fn loaded<'a, T: DataFile>(
    data: &'a Option<LazyFile<T>>,
    missing: &str,
) -> Result<&'a Arc<T>> {
    data.as_ref()
        .ok_or_else(|| err(missing))?
        .get()
        .map_err(err)
}

/// Optional data that a call can do without (the country polygons), read on the first call.
fn loaded_if_opened<T: DataFile>(data: &Option<LazyFile<T>>) -> Result<Option<&Arc<T>>> {
    data.as_ref().map(|f| f.get().map_err(err)).transpose()
}

pub(crate) fn err(e: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

#[napi(object)]
pub struct OpenOptions {
    /// Station database directory (holds manifest.json).
    pub db: String,
    /// Land polygons for border strictness (data/land.bin).
    pub land: Option<String>,
    /// MMDB files for the IP fallback, tried in order.
    pub ip_databases: Option<Vec<String>>,
    /// Country table used with country-level MMDBs (data/countries.csv).
    pub countries: Option<String>,
    /// Fixed clock (unix seconds) for the `aged` rule; the system clock when absent.
    pub now: Option<f64>,
    /// Timezone polygons (data/timezones.bin).
    pub timezones: Option<String>,
    /// Places for reverse geocoding (data/places.bin).
    pub places: Option<String>,
    /// Keep learned stations in `db/learned.sqlite` (the directory must be writable to learn).
    pub learned: Option<bool>,
    /// Compact in the background once this many learned stations wait (0: never by itself).
    pub compact_stations: Option<f64>,
    /// ... or once the oldest has waited this many seconds (0: never by itself).
    pub compact_age_seconds: Option<f64>,
    /// Places for forward geocoding (data/search.bin).
    pub search: Option<String>,
    /// Street-level addresses and roads (an `addresses.bin` from the address importer).
    pub addresses: Option<String>,
    /// Country polygons for reverse geocoding (data/countries.bin); without them the
    /// nearest place decides the country.
    pub country_polygons: Option<String>,
}

/// whereabouts-core's `CellTree` of the timezones: see `NativeEngine::timezone_cells`.
#[napi(object)]
pub struct TimezoneCells {
    /// Depth of the grid `entries` starts with (`2^topDepth` cells a row).
    pub top_depth: u32,
    /// Depth of the smallest cells.
    pub max_depth: u32,
    /// Degrees from a cell's side within which a point must ask `timezoneIndexAt`.
    pub guard: f64,
    /// The grid, then the blocks of four children; low 2 bits a tag (0 zone, 1 outside every
    /// polygon: the nautical zone, 2 split, 3 ask the core), the rest a zone or block index.
    pub entries: Uint32Array,
}

/// A place answered by `searchPlaces`, with its score in [0, 1] (whereabouts-core's `search`).
#[napi(object)]
pub struct SearchPlace {
    pub lat: f64,
    pub lon: f64,
    pub name: String,
    pub state: Option<String>,
    pub county: Option<String>,
    pub country_code: String,
    pub population: f64,
    pub score: f64,
    /// "place", or "state" / "country" for a query naming a state or country alone (then
    /// `name` is its name and the point its seat's).
    #[napi(ts_type = "'place' | 'state' | 'country'")]
    pub level: String,
}

/// A place as `place(id)` answers it; admin names only when the data has them.
#[napi(object)]
pub struct ReversePlace {
    pub lat: f64,
    pub lon: f64,
    pub name: String,
    pub state: Option<String>,
    pub county: Option<String>,
    pub country_code: String,
    pub population: f64,
}

impl From<whereabouts_core::places::Place<'_>> for ReversePlace {
    fn from(p: whereabouts_core::places::Place<'_>) -> Self {
        ReversePlace {
            lat: p.lat,
            lon: p.lon,
            name: p.name.to_owned(),
            state: p.state.map(str::to_owned),
            county: p.county.map(str::to_owned),
            country_code: p.country_code.to_owned(),
            population: p.population as f64,
        }
    }
}

#[napi(object)]
pub struct DbStats {
    pub cells: f64,
    pub wifi: f64,
    pub areas: f64,
    pub networks: f64,
    pub shards: f64,
    pub bytes: f64,
    pub generation: f64,
    pub simulated: bool,
    pub has_land: bool,
    pub has_ip: bool,
    /// Learned cells and access points waiting to be folded into the database.
    pub overlay_cells: f64,
    pub overlay_wifi: f64,
    /// Stations withdrawn as moved.
    pub overlay_blocked: f64,
    pub compacting: bool,
    /// Unix seconds of this engine's last compaction.
    pub last_compaction: Option<f64>,
    pub last_compaction_error: Option<String>,
}

#[napi]
pub struct NativeEngine {
    inner: Option<Arc<Locator>>,
    compactor: Arc<Compactor>,
    /// Whether learning starts compactions by itself (thresholds not disabled).
    auto_compact: bool,
    /// The geocoding files: headers checked at open, read on first use.
    timezones: Option<LazyFile<whereabouts_core::timezone::TimezoneIndex>>,
    places: Option<LazyFile<whereabouts_core::places::PlaceIndex>>,
    search: Option<LazyFile<whereabouts_core::search::SearchIndex>>,
    addresses: Option<LazyFile<whereabouts_core::addresses::AddressIndex>>,
    countries: Option<LazyFile<whereabouts_core::countries::CountryIndex>>,
    /// Batches started by `locate_start`, by ticket, until `locate_join`.
    pending: Mutex<PendingBatches>,
    /// Set by `close`: what `locate_function`'s functions check first, since a batch's pool
    /// threads may hold the locator a moment after their batch was joined or dropped.
    closed: Arc<AtomicBool>,
}

#[derive(Default)]
struct PendingBatches {
    next: u32,
    batches: HashMap<u32, whereabouts_core::wire::Pending>,
}

#[napi]
impl NativeEngine {
    /// Opens a database directory and the optional land and IP data; of the geocoding files
    /// only the headers are checked (a missing, truncated or foreign file fails here), the
    /// rest is read and validated by the first call that needs it.
    #[napi(factory)]
    pub fn open(options: OpenOptions) -> Result<NativeEngine> {
        guarded("open", || {
            let dir = PathBuf::from(&options.db);
            let db = Database::open(&dir).map_err(err)?;
            let mut locator = Locator::new(db);
            if options.learned == Some(true) {
                locator = locator.with_overlay(Overlay::open(&dir).map_err(err)?);
            }
            let defaults = Thresholds::default();
            let count = |v: Option<f64>, d: u64| v.map_or(d, |n| n.max(0.0) as u64);
            let thresholds = Thresholds {
                stations: count(options.compact_stations, defaults.stations),
                age_s: count(options.compact_age_seconds, defaults.age_s as u64) as i64,
            };
            let auto_compact = thresholds.stations > 0 && thresholds.age_s > 0;
            if let Some(land) = &options.land {
                let index =
                    whereabouts_core::land::LandIndex::open(&PathBuf::from(land)).map_err(err)?;
                locator = locator.with_border(Box::new(index));
            }
            if let Some(paths) = options.ip_databases.as_ref().filter(|p| !p.is_empty()) {
                let countries = options.countries.clone().unwrap_or_default();
                let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
                let ip = whereabouts_core::ip::IpLocator::open(&paths, &PathBuf::from(countries))
                    .map_err(err)?;
                locator = locator.with_ip(Box::new(ip));
            }
            if let Some(now) = options.now {
                locator = locator.with_now(now as i64);
            }
            let timezones = open_optional(&options.timezones)?;
            let places = open_optional(&options.places)?;
            let search = open_optional(&options.search)?;
            let countries = open_optional(&options.country_polygons)?;
            let addresses = open_optional(&options.addresses)?;
            Ok(NativeEngine {
                inner: Some(Arc::new(locator)),
                compactor: Arc::new(Compactor::new(thresholds)),
                auto_compact,
                timezones,
                places,
                search,
                addresses,
                countries,
                pending: Mutex::default(),
                closed: Arc::default(),
            })
        })
    }

    /// One page of the stations changed in a window (`GET /v2/sync`), built on a worker
    /// thread over the generation open when the call was made.
    #[napi(ts_return_type = "Promise<ChangesPage>")]
    pub fn changes_page(&self, query: sync::ChangesQuery) -> Result<AsyncTask<sync::ChangesTask>> {
        guarded("changesPage", || {
            sync::task(self.locator()?.clone(), &query)
        })
    }

    pub(crate) fn locator(&self) -> Result<&Arc<Locator>> {
        self.inner
            .as_ref()
            .ok_or_else(|| err("the engine is closed"))
    }

    /// Learns a batch of GPS submissions into the overlay on a worker thread; resolves
    /// once the batch is committed and visible to lookups. May start a background
    /// compaction when the overlay passes its thresholds.
    #[napi(ts_return_type = "Promise<LearnCounts>")]
    pub fn learn(
        &self,
        submissions: Vec<live::Submission>,
    ) -> Result<AsyncTask<live::LiveLearnTask>> {
        guarded("learn", || {
            Ok(AsyncTask::new(live::LiveLearnTask {
                locator: Arc::clone(self.locator()?),
                compactor: self.auto_compact.then(|| Arc::clone(&self.compactor)),
                submissions,
            }))
        })
    }

    /// Folds the overlay into a new generation on a worker thread and switches to it.
    #[napi(ts_return_type = "Promise<CompactSummary>")]
    pub fn compact(&self) -> Result<AsyncTask<live::CompactTask>> {
        guarded("compact", || {
            Ok(AsyncTask::new(live::CompactTask {
                locator: Arc::clone(self.locator()?),
                compactor: Arc::clone(&self.compactor),
            }))
        })
    }

    /// Switches to the newest generation of manifest.json (requests in flight keep the
    /// old one) and reads what other processes learned; true when the generation changed.
    /// Starts a background compaction when the overlay is due for one.
    #[napi]
    pub fn reload(&self) -> Result<bool> {
        guarded("reload", || {
            let l = self.locator()?;
            let switched = l.reload().map_err(err)?;
            if switched {
                l.overlay().reload().map_err(err)?;
            } else {
                l.overlay().refresh().map_err(err)?;
            }
            // The server reloads every second: the age threshold is checked here too.
            if self.auto_compact {
                self.compactor.spawn_if_due(l);
            }
            Ok(switched)
        })
    }

    /// The locate call as a plain function `(buffer, length, ips, threads) => count` (see
    /// `locate.rs` for why not a method): locates the batch of encoded requests in
    /// `buffer[..length]` (layout in whereabouts-core's `wire`) and writes six numbers per request into
    /// `buffer[length..]`; returns the number of requests. `ips` holds the requests' IP
    /// addresses (undefined when none has one). One buffer for both directions and no
    /// per-call allocation. `threads` (undefined: 1; 0: the machine's parallelism) spreads a
    /// batch over threads of at least 256 requests each. After `close` a call throws "the
    /// engine is closed".
    #[napi(
        ts_return_type = "(buffer: Float64Array, length: number, ips: string[] | undefined, threads?: number) => number"
    )]
    pub fn locate_function<'env>(
        &self,
        env: &'env napi::Env,
    ) -> Result<napi::bindgen_prelude::Function<'env, (), u32>> {
        guarded("locate", || {
            locate::locate_function(env, self.locator()?, Arc::clone(&self.closed))
        })
    }

    /// Starts locating the batch of encoded requests in `buffer[..length]` (the layout of
    /// `locateFunction`'s) on up to `threads - 1` of the process's batch threads (0: the
    /// machine's parallelism) and returns at once with a ticket for `locateJoin`. The batch
    /// is copied: the caller may write its next batch into the same buffer meanwhile. A
    /// malformed batch throws here.
    #[napi]
    pub fn locate_start(
        &self,
        buffer: Float64ArraySlice,
        length: u32,
        ips: Option<Vec<String>>,
        threads: u32,
    ) -> Result<u32> {
        guarded("locateStart", || {
            let locator = Arc::clone(self.locator()?);
            let pending = whereabouts_core::wire::start_locate(
                locator,
                &buffer,
                length as usize,
                ips.unwrap_or_default(),
                threads as usize,
            )
            .map_err(err)?;
            let mut all = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let ticket = all.next;
            all.next = all.next.wrapping_add(1);
            all.batches.insert(ticket, pending);
            Ok(ticket)
        })
    }

    /// Waits for the batch `ticket` of `locateStart` (solving what no thread has taken yet
    /// on this one) and writes its answers, six numbers a request, at the start of
    /// `answers`; returns the number of requests. An unknown ticket throws.
    #[napi]
    pub fn locate_join(&self, ticket: u32, mut answers: Float64ArraySlice) -> Result<u32> {
        guarded("locateJoin", || {
            // Closed meanwhile (a request's getter may close the engine): `close` dropped the
            // pending batches, and this says why rather than that the ticket is unknown.
            self.locator()?;
            let pending = self
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .batches
                .remove(&ticket)
                .ok_or_else(|| err(format!("no batch is pending under ticket {ticket}")))?;
            // SAFETY: the view is borrowed for this synchronous call, during which no
            // JavaScript runs; no other reference to its memory is alive.
            let out = unsafe { answers.as_mut() };
            pending.join(out).map(|n| n as u32).map_err(err)
        })
    }

    /// The database's per-network statistics (`store::netstats`) as the JSON of their file,
    /// each network with the solver's reading of it (`read_as`); None for a database written
    /// before they existed.
    #[napi]
    pub fn network_stats(&self) -> Result<Option<String>> {
        guarded("networkStats", || {
            let db = self.locator()?.database();
            db.network_stats()
                .map(|f| f.to_json_read())
                .transpose()
                .map_err(|e| err(e.to_string()))
        })
    }

    /// The calibration rows of the encoded requests in `buffer[..length]` (the layout of
    /// `locateFunction`'s), request i's device having been at `(truthLat[i], truthLon[i])`.
    #[napi]
    pub fn radius_samples(
        &self,
        buffer: Float64ArraySlice,
        length: u32,
        ips: Option<Vec<String>>,
        truth_lat: Float64ArraySlice,
        truth_lon: Float64ArraySlice,
    ) -> Result<calibrate::RadiusSamples> {
        guarded("radiusSamples", || {
            calibrate::samples(
                self.locator()?,
                &buffer,
                length,
                &ips.unwrap_or_default(),
                &truth_lat,
                &truth_lon,
            )
        })
    }

    #[napi]
    pub fn stats(&self) -> Result<DbStats> {
        guarded("stats", || {
            let l = self.locator()?;
            let db = l.database();
            let s = db.stats();
            let m = db.manifest();
            let o = l.overlay().stats();
            let last = self.compactor.last();
            Ok(DbStats {
                overlay_cells: o.cells as f64,
                overlay_wifi: o.wifi as f64,
                overlay_blocked: o.blocked as f64,
                compacting: self.compactor.is_running(),
                last_compaction: last
                    .as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .map(|r| r.finished as f64),
                last_compaction_error: last.and_then(|r| r.err()),
                cells: s.cells as f64,
                wifi: s.wifi as f64,
                areas: s.areas as f64,
                networks: s.networks as f64,
                shards: s.shards as f64,
                bytes: s.bytes as f64,
                generation: m.generation as f64,
                simulated: m.simulated,
                has_land: l.has_border(),
                has_ip: l.has_ip(),
            })
        })
    }

    fn timezones(&self) -> Result<&whereabouts_core::timezone::TimezoneIndex> {
        self.locator()?;
        loaded(&self.timezones, "no timezone data is loaded").map(Arc::as_ref)
    }

    /// Every zone name `timezoneIndexAt` can answer, by index.
    #[napi]
    pub fn timezone_names(&self) -> Result<Vec<String>> {
        guarded("timezone", || {
            Ok(self
                .timezones()?
                .all_names()
                .into_iter()
                .map(str::to_owned)
                .collect())
        })
    }

    /// The cell tree JavaScript answers most timezone lookups from (whereabouts-core's
    /// `TimezoneIndex::zone_cells` and `CellTree`: the layout and the rules): a grid at
    /// `topDepth` whose cells are split down to `maxDepth`. Built on each call.
    #[napi]
    pub fn timezone_cells(&self, top_depth: u32, max_depth: u32) -> Result<TimezoneCells> {
        guarded("timezone", || {
            let tree = self.timezones()?.zone_cells(top_depth, max_depth);
            Ok(TimezoneCells {
                top_depth: tree.top_depth,
                max_depth: tree.max_depth,
                guard: tree.guard,
                entries: Uint32Array::new(tree.entries),
            })
        })
    }

    /// The timezone at a point as an index into `timezoneNames()` (the nautical `Etc/GMT`
    /// zones at sea); -1 for an invalid coordinate. A number, not a string: a lookup then
    /// allocates nothing. Fails when no timezone data was opened.
    #[napi]
    pub fn timezone_index_at(&self, lat: f64, lon: f64) -> Result<i32> {
        guarded("timezone", || {
            Ok(self
                .timezones()?
                .zone_index_at(lat, lon)
                .map_or(-1, |i| i as i32))
        })
    }

    fn places(&self) -> Result<&whereabouts_core::places::PlaceIndex> {
        self.locator()?;
        loaded(&self.places, "no places are loaded").map(Arc::as_ref)
    }

    /// The country and place a reverse lookup at `zoom` answers (rules in whereabouts-core's
    /// `places` and `countries`) as one number, the reverse key: `code * 2^24 + id + 1`, where
    /// `code` is the country code's two ASCII bytes as `256 * first + second` and `id` the
    /// place's id (for `place(id)`), or `code * 2^24` when the country has no place within
    /// 50 km; -1 for an invalid coordinate or no country (at sea beyond 5 km of every coast;
    /// without country polygons, 50 km or more from every place). One number, not an object:
    /// building a JS object per lookup costs more than the lookup. Fails when no places were
    /// opened. The hot path calls this through [`NativeEngine::reverse_key_function`].
    #[napi]
    pub fn reverse_key(&self, lat: f64, lon: f64, zoom: u32) -> Result<f64> {
        guarded("reverse", || {
            let countries = loaded_if_opened(&self.countries)?;
            reverse::key(self.places()?, countries.map(|c| &**c), lat, lon, zoom)
        })
    }

    /// [`NativeEngine::reverse_key`] as a plain function `(lat, lon, zoom) => key` over this
    /// engine's places, without the cost of a class method call (see `reverse.rs`). Reads the
    /// places and country polygons if no call has yet, so that the function holds them read
    /// and its calls check nothing. Fails when no places were opened or a file is not sound.
    #[napi(ts_return_type = "(lat: number, lon: number, zoom: number) => number")]
    pub fn reverse_key_function(&self, env: napi::Env) -> Result<napi::sys::napi_value> {
        guarded("reverse", || {
            reverse::key_function(env.raw(), self.reverse_data()?)
        })
    }

    fn reverse_data(&self) -> Result<reverse::ReverseData> {
        self.locator()?;
        Ok(reverse::ReverseData {
            places: Arc::clone(loaded(&self.places, "no places are loaded")?),
            countries: loaded_if_opened(&self.countries)?.cloned(),
        })
    }

    /// The place with this id (from `reverseKey` or `nearestPlaceId`). Fails for an id
    /// that is not one.
    #[napi]
    pub fn place(&self, id: u32) -> Result<ReversePlace> {
        guarded("reverse", || {
            self.places()?
                .get(id as usize)
                .map(ReversePlace::from)
                .ok_or_else(|| err(format!("no place has id {id}")))
        })
    }

    /// The id of the nearest place within 50 km by distance alone, or -1: the baseline the
    /// reverse bench compares the ranking with, not an answer to users.
    #[napi]
    pub fn nearest_place_id(&self, lat: f64, lon: f64) -> Result<f64> {
        guarded("reverse", || {
            Ok(self
                .places()?
                .nearest(lat, lon)
                .map_or(-1.0, |p| p.id as f64))
        })
    }

    /// The places matching free text `query`, best first, at most `limit`; `countries`
    /// (alpha-2, upper case) restrict, `viewbox` ([left, right, top, bottom] in degrees)
    /// prefers. The word index is built on a background thread from `open`; a call before it
    /// is ready waits for the rest of the build. Fails when no search file was opened.
    #[napi]
    pub fn search_places(
        &self,
        query: String,
        limit: u32,
        countries: Vec<String>,
        viewbox: Option<Vec<f64>>,
    ) -> Result<Vec<SearchPlace>> {
        guarded("search", || {
            self.locator()?;
            let index = loaded(&self.search, "no search data is loaded")?;
            let countries = countries
                .iter()
                .map(|c| match c.as_bytes() {
                    &[a, b] if a.is_ascii_uppercase() && b.is_ascii_uppercase() => Ok([a, b]),
                    _ => Err(err(format!(
                        "not an upper-case alpha-2 country code: {c:?}"
                    ))),
                })
                .collect::<Result<Vec<_>>>()?;
            let viewbox = match viewbox.as_deref() {
                None => None,
                Some(&[left, right, top, bottom]) => Some(whereabouts_core::search::ViewBox {
                    left,
                    right,
                    top,
                    bottom,
                }),
                Some(_) => return Err(err("a viewbox is four numbers")),
            };
            let options = whereabouts_core::search::SearchOptions {
                limit: limit as usize,
                countries,
                viewbox,
            };
            Ok(index
                .search(&query, &options)
                .into_iter()
                .map(|h| SearchPlace {
                    lat: h.lat,
                    lon: h.lon,
                    name: h.name.to_owned(),
                    state: h.state.map(str::to_owned),
                    county: h.county.map(str::to_owned),
                    country_code: h.country_code.to_owned(),
                    population: h.population as f64,
                    score: h.score,
                    level: match h.level {
                        whereabouts_core::search::Level::Place => "place",
                        whereabouts_core::search::Level::State => "state",
                        whereabouts_core::search::Level::Country => "country",
                    }
                    .to_owned(),
                })
                .collect())
        })
    }

    /// Reads and validates the search file now (failing when it is not sound), then starts
    /// building the forward-search word index on a background thread, so that the first
    /// search waits for neither (the index takes about half a second of one core). Not done
    /// by `open`: a one-shot command or a process that never searches should not pay for it.
    #[napi]
    pub fn prepare_search(&self) -> Result<()> {
        guarded("prepareSearch", || {
            self.locator()?;
            if self.search.is_some() {
                let index = loaded(&self.search, "no search data is loaded")?;
                whereabouts_core::search::SearchIndex::prepare_in_background(index);
            }
            Ok(())
        })
    }

    /// Reads and validates the places, country polygons and address file now (failing when
    /// one is not sound) and builds the countries' cell tree, all of which the first reverse
    /// lookup would otherwise pay for. Does nothing without places.
    #[napi]
    pub fn prepare_reverse(&self) -> Result<()> {
        guarded("prepareReverse", || {
            self.locator()?;
            if self.places.is_some() {
                self.places()?;
                if let Some(countries) = loaded_if_opened(&self.countries)? {
                    countries.prepare();
                }
                loaded_if_opened(&self.addresses)?;
            }
            Ok(())
        })
    }

    /// Releases the maps and files; later calls fail with "the engine is closed".

    #[napi]
    pub fn close(&mut self) {
        self.closed.store(true, Ordering::Release);
        self.inner = None;
        // A batch never joined runs to its end on the pool and then lets the database go.
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .batches
            .clear();
        self.timezones = None;
        self.places = None;
        self.search = None;
        self.addresses = None;
        self.countries = None;
    }
}

/// The coastline of a land file (`data/land.bin`) in a lat/lon box: every coast edge of
/// the land pieces meeting the box, four numbers each (`lat_a, lon_a, lat_b, lon_b`), the
/// cut edges along quad sides left out. What the evaluation report's map draws.
#[napi]
pub fn land_coast(
    land: String,
    lat0: f64,
    lon0: f64,
    lat1: f64,
    lon1: f64,
) -> Result<napi::bindgen_prelude::Float64Array> {
    guarded("landCoast", || {
        let index = whereabouts_core::land::LandIndex::open(&PathBuf::from(land)).map_err(err)?;
        let edges: Vec<f64> = index
            .polygons()
            .pieces_in_box(lat0, lon0, lat1, lon1)
            .into_iter()
            .filter(|(_, coast)| *coast)
            .flat_map(|(e, _)| e)
            .collect();
        Ok(edges.into())
    })
}
