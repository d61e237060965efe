//! The simulated world: towers, sector cells and WiFi access points at their true
//! positions, and the crowdsourced database estimated from simulated sightings.

use std::collections::{BTreeMap, BTreeSet};

use crate::family::{Layout, Params};
use crate::geo::{self, dist, env_at, Env, Land, HALF};
use crate::model::{self, Radio};
use crate::rng::{hash3, hash_str, Rng};

/// The ITU test network: nobody can mistake a simulated station for a real one.
pub const MCC: u16 = 1;
/// The operators whose database rows the crowd estimated (family worlds add a third,
/// [`crate::family::KNOWN_MNC`], whose rows are its true tower positions).
pub const MNCS: [u16; 2] = [1, 2];

/// Default moment the scenarios are observed: 2026-06-01T00:00:00Z. Database
/// ages ("stale", "updated > 90 days ago") are relative to it; `--now` moves it
/// (an engine judging age by its wall clock needs a database made for "now").
pub const DEFAULT_NOW: i64 = 1_780_272_000;
pub const DAY: i64 = 86_400;

#[derive(Clone, Debug)]
pub struct Tower {
    pub mnc: u16,
    pub x: f64,
    pub y: f64,
    pub env: Env,
    pub omni: bool,
    /// Sectors of a sectored site: 3, or 6 in some family worlds.
    pub sectors: u8,
    /// Azimuth of sector 0; the others follow evenly spaced (+120 and +240 degrees for 3).
    pub az0: f64,
    /// EIRP of this site against the radio's nominal one, dB (0 in the reference world).
    pub eirp_offset_db: f64,
    /// The site moved by this much (metres east, north) since the crowd reported it: its
    /// database rows lie that far off (0 in the reference world).
    pub moved_by: (f64, f64),
    pub area: u32,
    pub site_no: u32,
    /// A new site that no crowd has reported yet: none of its cells are in the DB.
    pub missing: bool,
    pub shadow_key: u64,
    pub cells: std::ops::Range<usize>,
    /// The radios the mast carries: GSM and UMTS (`legacy`), LTE and NR (`broadband`). Both
    /// unless the world separates some operators' masts by radio ([`World::generate`]).
    pub legacy: bool,
    pub broadband: bool,
}

#[derive(Clone, Debug)]
pub struct DbRecord {
    pub x: f64,
    pub y: f64,
    pub range: u32,
    pub samples: u32,
    pub created: i64,
    pub updated: i64,
}

impl DbRecord {
    pub fn stale(&self, now: i64) -> bool {
        self.updated < now - 90 * DAY
    }
}

#[derive(Clone, Debug)]
pub struct Cell {
    pub tower: usize,
    pub sector: u8,
    pub radio: Radio,
    pub mnc: u16,
    pub lac: u32,
    pub cid: u64,
    /// PSC for UMTS, PCI for LTE/NR, none for GSM.
    pub unit: Option<u16>,
    pub azimuth: Option<f64>,
    pub db: Option<DbRecord>,
}

#[derive(Clone, Debug)]
pub struct Ap {
    pub bssid: u64,
    /// Where the AP is now (what devices hear).
    pub x: f64,
    pub y: f64,
    /// Where it was while the crowd reported it; differs only for moved APs.
    pub old_x: f64,
    pub old_y: f64,
    pub env: Env,
    pub eirp_dbm: f64,
    pub freq_mhz: u32,
    pub indoor: bool,
    pub moved: bool,
    pub shadow_key: u64,
    pub db: Option<DbRecord>,
}

pub struct World {
    pub seed: u64,
    pub params: Params,
    /// The scenario time, unix seconds.
    pub now: i64,
    pub land: Land,
    pub towers: Vec<Tower>,
    pub cells: Vec<Cell>,
    pub aps: Vec<Ap>,
    ap_grid: Grid,
    /// (radio, mnc, lac) -> indexes of cells present in the DB.
    pub db_cells_by_lac: BTreeMap<(Radio, u16, u32), Vec<usize>>,
}

/// A bucket index over AP positions so that a scan looks at a few hundred APs.
struct Grid {
    cell: f64,
    n: i64,
    buckets: Vec<Vec<u32>>,
}

impl Grid {
    fn new(cell: f64) -> Grid {
        let n = (2.0 * HALF / cell).ceil() as i64 + 1;
        Grid {
            cell,
            n,
            buckets: vec![Vec::new(); (n * n) as usize],
        }
    }
    fn key(&self, x: f64, y: f64) -> (i64, i64) {
        (
            ((x + HALF) / self.cell).floor() as i64,
            ((y + HALF) / self.cell).floor() as i64,
        )
    }
    fn insert(&mut self, x: f64, y: f64, id: u32) {
        let (i, j) = self.key(x, y);
        let (i, j) = (i.clamp(0, self.n - 1), j.clamp(0, self.n - 1));
        self.buckets[(j * self.n + i) as usize].push(id);
    }
    fn near(&self, x: f64, y: f64, r: f64, out: &mut Vec<u32>) {
        out.clear();
        let (i0, j0) = self.key(x - r, y - r);
        let (i1, j1) = self.key(x + r, y + r);
        for j in j0.max(0)..=j1.min(self.n - 1) {
            for i in i0.max(0)..=i1.min(self.n - 1) {
                out.extend_from_slice(&self.buckets[(j * self.n + i) as usize]);
            }
        }
    }
}

/// LAC/TAC tiles: sized so that a tile holds roughly 10-30 sites of its zone.
fn lac_tile_m(p: &Params, env: Env) -> f64 {
    if p.family {
        return 4.0 * p.isd_m[env as usize];
    }
    match env {
        Env::Urban => 2_000.0,
        Env::Suburban => 6_000.0,
        Env::Rural => 20_000.0,
    }
}

const MIN_AREA_SITES: usize = 6;

impl World {
    /// The world of `seed` under `params`. `params.separate_masts` (0 to 1) is the share of
    /// masts whose LTE and NR sectors stand on a mast of their own, 0.15 to 0.4 of the zone's
    /// inter-site distance away (urban 75-200 m, rural 0.8-2.2 km), the GSM and UMTS ones
    /// staying: real operators often co-locate their radios, not always. 0 puts every radio on
    /// every mast and draws nothing, so the reference worlds of earlier builds are unchanged.
    pub fn generate(seed: u64, now: i64, params: &Params) -> World {
        let land = Land::new();
        let mut towers = if params.family {
            place_towers_family(seed, &land, params)
        } else {
            place_towers(seed, &land, params)
        };
        if params.separate_masts > 0.0 {
            separate_broadband(seed, &land, &mut towers, params);
        }
        assign_areas(&mut towers, params);
        let cells = make_cells(seed, &mut towers, params);
        let aps = place_aps(seed, &land, params);
        let mut w = World {
            seed,
            params: params.clone(),
            now,
            land,
            towers,
            cells,
            aps,
            ap_grid: Grid::new(100.0),
            db_cells_by_lac: BTreeMap::new(),
        };
        for (i, ap) in w.aps.iter().enumerate() {
            w.ap_grid.insert(ap.x, ap.y, i as u32);
        }
        crate::crowd::build_database(&mut w);
        for (i, c) in w.cells.iter().enumerate() {
            if c.db.is_some() {
                w.db_cells_by_lac
                    .entry((c.radio, c.mnc, c.lac))
                    .or_default()
                    .push(i);
            }
        }
        w
    }

    /// Mean received level of a cell at (x, y): path loss, antenna pattern and
    /// shadowing, without the per-measurement fast fading.
    pub fn cell_level(&self, ci: usize, x: f64, y: f64) -> f64 {
        let p = &self.params;
        let c = &self.cells[ci];
        let t = &self.towers[c.tower];
        let d = dist(x, y, t.x, t.y).max(10.0);
        let rx_env = env_at(x, y);
        let mut gain = match c.azimuth {
            Some(az) => p.horizontal_gain_db(model::bearing_deg(t.x, t.y, x, y) - az),
            None => model::OMNI_GAIN_DB,
        };
        if p.tilt.is_some() {
            gain = (gain + p.vertical_gain_db(d)).max(-p.front_to_back_db.max(20.0));
        }
        // Family worlds take the steeper of the tower's and the receiver's zone: a path into
        // a town crosses its clutter, so a far country mast with a shallow exponent does not
        // outshine the town's own masts. The reference world uses the tower's zone.
        let n = if p.family {
            p.exponent(c.radio, t.env).max(p.exponent(c.radio, rx_env))
        } else {
            p.exponent(c.radio, t.env)
        };
        let pl = model::fspl_1m(c.radio.freq_mhz()) + 10.0 * n * libm::log10(d);
        let shadow =
            p.shadow_sigma(t.env) * model::value_noise(t.shadow_key, x, y, p.shadow_grid_m);
        c.radio.eirp_dbm() + t.eirp_offset_db + gain - pl - model::clutter_loss_db(rx_env) + shadow
    }

    /// Distance beyond which a cell cannot be heard even with +3 sigma shadowing
    /// on boresight: lets a scan skip far towers without changing any result.
    pub fn max_hear_range_m(&self, radio: Radio, tower_env: Env) -> f64 {
        let p = &self.params;
        let budget = radio.eirp_dbm() + p.eirp_spread_db
            - model::fspl_1m(radio.freq_mhz())
            - radio.sensitivity_dbm()
            + 3.0 * p.shadow_sigma(tower_env)
            + 4.0 * p.cell_level_noise_db
            - model::clutter_loss_db(Env::Rural);
        libm::pow(10.0, budget / (10.0 * p.exponent(radio, tower_env)))
    }

    pub fn ap_level(&self, ai: usize, x: f64, y: f64, use_old_position: bool) -> f64 {
        let a = &self.aps[ai];
        let (ax, ay) = if use_old_position {
            (a.old_x, a.old_y)
        } else {
            (a.x, a.y)
        };
        let d = dist(x, y, ax, ay).max(1.0);
        let env = env_at(ax, ay);
        let pl = model::fspl_1m(a.freq_mhz as f64)
            + 10.0 * self.params.wifi_exponent[env as usize] * libm::log10(d);
        let wall = if a.indoor {
            model::WIFI_WALL_LOSS_DB
        } else {
            0.0
        };
        // A relocated AP stands in a different building: its shadowing field moves too.
        let key = if use_old_position {
            a.shadow_key ^ 0x5a5a
        } else {
            a.shadow_key
        };
        let shadow =
            model::WIFI_SHADOW_SIGMA_DB * model::value_noise(key, x, y, model::WIFI_SHADOW_GRID_M);
        a.eirp_dbm - wall - pl + shadow
    }

    pub const WIFI_SCAN_RADIUS_M: f64 = 400.0;

    pub fn aps_near(&self, x: f64, y: f64, r: f64, out: &mut Vec<u32>) {
        self.ap_grid.near(x, y, r, out);
        out.retain(|&i| {
            let a = &self.aps[i as usize];
            dist(x, y, a.x, a.y) <= r
        });
        out.sort_unstable();
    }
}

/// The reference world's sites: a jittered hex grid per operator and zone.
fn place_towers(seed: u64, land: &Land, p: &Params) -> Vec<Tower> {
    let mut towers = Vec::new();
    for &mnc in &MNCS {
        for env in Env::ALL {
            let mut rng = Rng::stream(seed, &format!("towers/{mnc}/{}", env.name()));
            let s = p.isd(env, mnc);
            let row = s * libm::sqrt(3.0) / 2.0;
            let (ox, oy) = (rng.range(0.0, s), rng.range(0.0, row));
            let jitter = if env == Env::Rural { 0.25 } else { 0.15 };
            let nrows = (2.0 * HALF / row).ceil() as i64 + 2;
            let ncols = (2.0 * HALF / s).ceil() as i64 + 2;
            for r in 0..nrows {
                for q in 0..ncols {
                    let shift = if r % 2 == 1 { s / 2.0 } else { 0.0 };
                    let x = -HALF - s + ox + q as f64 * s + shift + rng.range(-jitter, jitter) * s;
                    let y = -HALF - row + oy + r as f64 * row + rng.range(-jitter, jitter) * s;
                    let az0 = rng.range(0.0, 120.0);
                    let omni_draw = rng.f64();
                    let missing_draw = rng.f64();
                    if !land.is_land(x, y) || env_at(x, y) != env {
                        continue;
                    }
                    towers.push(Tower {
                        mnc,
                        x,
                        y,
                        env,
                        omni: omni_draw < p.omni_share[env as usize],
                        sectors: 3,
                        az0,
                        eirp_offset_db: 0.0,
                        moved_by: (0.0, 0.0),
                        area: 0,
                        site_no: 0,
                        missing: missing_draw < p.tower_missing,
                        shadow_key: 0,
                        cells: 0..0,
                        legacy: true,
                        broadband: true,
                    });
                }
            }
        }
    }
    towers
}

/// Candidate site positions of one operator and zone under a family's layout, with the
/// density of a hex grid of spacing `s`.
fn layout_points(rng: &mut Rng, p: &Params, s: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::new();
    let row = s * libm::sqrt(3.0) / 2.0;
    match p.layout {
        Layout::Hex => {
            let (ox, oy) = (rng.range(0.0, s), rng.range(0.0, row));
            let nrows = (2.0 * HALF / row).ceil() as i64 + 2;
            let ncols = (2.0 * HALF / s).ceil() as i64 + 2;
            for r in 0..nrows {
                for q in 0..ncols {
                    let shift = if r % 2 == 1 { s / 2.0 } else { 0.0 };
                    let x = -HALF - s + ox + q as f64 * s + shift + rng.range(-0.2, 0.2) * s;
                    let y = -HALF - row + oy + r as f64 * row + rng.range(-0.2, 0.2) * s;
                    pts.push((x, y));
                }
            }
        }
        Layout::Random | Layout::Roads => {
            // A hex cell covers s * row square metres: the same number of sites at random.
            let n = (4.0 * HALF * HALF / (s * row)).round() as usize;
            // Major roads: every street line at about the spacing (at least 1 km apart).
            let road = (s.max(1_000.0) / geo::STREET_SPACING_M).round() * geo::STREET_SPACING_M;
            for _ in 0..n {
                let (x, y) = (rng.range(-HALF, HALF), rng.range(-HALF, HALF));
                if p.layout == Layout::Random {
                    pts.push((x, y));
                    continue;
                }
                let (u, v) = geo::to_uv(x, y);
                let off = rng.range(-40.0, 40.0);
                let (u, v) = if rng.chance(0.5) {
                    (u, (v / road).round() * road + off)
                } else {
                    ((u / road).round() * road + off, v)
                };
                pts.push(geo::from_uv(u, v));
            }
        }
    }
    pts
}

/// A family world's sites: its layout and spacing per operator and zone, its sector
/// counts, per-site EIRP offsets and moved sites; operator 2 shares some of operator 1's
/// masts.
fn place_towers_family(seed: u64, land: &Land, p: &Params) -> Vec<Tower> {
    let mut towers: Vec<Tower> = Vec::new();
    // The tower nearest to being missing, so that a world whose draw left none missing
    // still has one for the lacf scenario (a device on a site the database lacks).
    let mut likeliest_missing: Option<(f64, usize)> = None;
    for &mnc in p.operators() {
        for env in Env::ALL {
            let mut rng = Rng::stream(seed, &format!("family-towers/{mnc}/{}", env.name()));
            let s = p.isd(env, mnc);
            for (mut x, mut y) in layout_points(&mut rng, p, s) {
                let share_draw = rng.f64();
                let az0 = rng.range(0.0, 360.0);
                let omni_draw = rng.f64();
                let six_draw = rng.f64();
                let missing_draw = rng.f64();
                let eirp_offset_db = rng.range(-p.eirp_spread_db, p.eirp_spread_db);
                let moved_draw = rng.f64();
                let (move_d, move_b) = (rng.range(1_000.0, 8_000.0), rng.range(0.0, 360.0));
                if !land.is_land(x, y) || env_at(x, y) != env {
                    continue;
                }
                if mnc == 2 && share_draw < p.shared_masts {
                    // On operator 1's nearest mast of the zone, when one is within half the spacing.
                    let near = towers
                        .iter()
                        .filter(|t| t.mnc == 1 && t.env == env)
                        .map(|t| (dist(x, y, t.x, t.y), t.x, t.y))
                        .min_by(|a, b| a.0.total_cmp(&b.0));
                    if let Some((d, tx, ty)) = near {
                        if d < s / 2.0 {
                            (x, y) = (tx, ty);
                        }
                    }
                }
                let known = mnc == crate::family::KNOWN_MNC;
                if !known && likeliest_missing.is_none_or(|(d, _)| missing_draw < d) {
                    likeliest_missing = Some((missing_draw, towers.len()));
                }
                let moved_by = if !known && moved_draw < p.tower_moved {
                    (
                        move_d * libm::sin(move_b.to_radians()),
                        move_d * libm::cos(move_b.to_radians()),
                    )
                } else {
                    (0.0, 0.0)
                };
                towers.push(Tower {
                    mnc,
                    x,
                    y,
                    env,
                    omni: omni_draw < p.omni_share[env as usize],
                    sectors: if six_draw < p.six_sector_share { 6 } else { 3 },
                    az0,
                    eirp_offset_db,
                    moved_by,
                    area: 0,
                    site_no: 0,
                    missing: !known && missing_draw < p.tower_missing,
                    shadow_key: 0,
                    cells: 0..0,
                    legacy: true,
                    broadband: true,
                });
            }
        }
    }
    if !towers.iter().any(|t| t.missing) {
        if let Some((_, i)) = likeliest_missing {
            towers[i].missing = true;
        }
    }
    towers
}

/// Moves the LTE and NR sectors of a share of the masts onto masts of their own nearby.
fn separate_broadband(seed: u64, land: &Land, towers: &mut Vec<Tower>, p: &Params) {
    let share = p.separate_masts;
    let mut rng = Rng::stream(seed, "separate-masts");
    for i in 0..towers.len() {
        let (draw, d, bearing, az0) = (
            rng.f64(),
            rng.range(0.15, 0.4),
            rng.range(0.0, 360.0),
            rng.range(0.0, 120.0),
        );
        let t = &towers[i];
        let dist = d * p.isd(t.env, t.mnc);
        let (x, y) = (
            t.x + dist * libm::sin(bearing.to_radians()),
            t.y + dist * libm::cos(bearing.to_radians()),
        );
        if draw >= share || !land.is_land(x, y) {
            continue;
        }
        let clone = Tower {
            x,
            y,
            az0,
            legacy: false,
            ..t.clone()
        };
        towers[i].broadband = false;
        towers.push(clone);
    }
}

/// Groups each operator's towers into LAC/TAC areas by zone-sized tiles, folds
/// tiles with too few sites into the area of their nearest large neighbour, and
/// numbers the sites area by area (so the low byte of an eNB id is unique
/// within a TAC, which the short-CID fallback relies on).
fn assign_areas(towers: &mut [Tower], p: &Params) {
    for &mnc in p.operators() {
        let idx: Vec<usize> = (0..towers.len())
            .filter(|&i| towers[i].mnc == mnc)
            .collect();
        let mut tiles: BTreeMap<(Env, i64, i64), Vec<usize>> = BTreeMap::new();
        for &i in &idx {
            let t = &towers[i];
            let s = lac_tile_m(p, t.env);
            tiles
                .entry((
                    t.env,
                    ((t.x + HALF) / s).floor() as i64,
                    ((t.y + HALF) / s).floor() as i64,
                ))
                .or_default()
                .push(i);
        }
        let mut area_of: BTreeMap<usize, usize> = BTreeMap::new();
        let keys: Vec<_> = tiles.keys().cloned().collect();
        for (a, k) in keys.iter().enumerate() {
            for &i in &tiles[k] {
                area_of.insert(i, a);
            }
        }
        let big: BTreeSet<usize> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| tiles[*k].len() >= MIN_AREA_SITES)
            .map(|(a, _)| a)
            .collect();
        if !big.is_empty() {
            for (a, k) in keys.iter().enumerate() {
                if big.contains(&a) {
                    continue;
                }
                for &i in &tiles[k] {
                    let (x, y) = (towers[i].x, towers[i].y);
                    let mut best = (f64::INFINITY, a);
                    for &j in &idx {
                        let aj = area_of[&j];
                        if big.contains(&aj) {
                            let d = dist(x, y, towers[j].x, towers[j].y);
                            if d < best.0 {
                                best = (d, aj);
                            }
                        }
                    }
                    area_of.insert(i, best.1);
                }
            }
        }
        // Renumber the surviving areas densely, then sites within them.
        let used: BTreeSet<usize> = area_of.values().copied().collect();
        let dense: BTreeMap<usize, u32> = used
            .iter()
            .enumerate()
            .map(|(n, &a)| (a, n as u32))
            .collect();
        let mut order: Vec<usize> = idx.clone();
        order.sort_by_key(|i| (dense[&area_of[i]], *i));
        for (site_no, &i) in order.iter().enumerate() {
            towers[i].area = dense[&area_of[&i]];
            towers[i].site_no = site_no as u32 + 1;
        }
    }
}

fn make_cells(seed: u64, towers: &mut [Tower], p: &Params) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (ti, t) in towers.iter_mut().enumerate() {
        let mut rng = Rng::new(hash3(
            seed,
            hash_str("cells"),
            ((t.mnc as u64) << 32) | t.site_no as u64,
        ));
        t.shadow_key = rng.next_u64();
        let has_umts = rng.chance(if t.env == Env::Rural { 0.7 } else { 0.85 });
        let has_nr = rng.chance(match t.env {
            Env::Urban => 0.5,
            Env::Suburban => 0.2,
            Env::Rural => 0.0,
        });
        let sectors: u8 = if t.omni { 1 } else { t.sectors };
        // Family worlds turn each sector off its even spacing (from a stream of their own).
        let mut jitter = Rng::new(hash3(
            seed,
            hash_str("family-azimuths"),
            ((t.mnc as u64) << 32) | t.site_no as u64,
        ));
        let start = cells.len();
        let s = t.site_no as u64;
        let a = t.area as u64;
        for radio in Radio::ALL {
            let present = match radio {
                Radio::Gsm => t.legacy,
                Radio::Umts => t.legacy && has_umts,
                Radio::Lte => t.broadband,
                Radio::Nr => t.broadband && has_nr,
            };
            if !present {
                continue;
            }
            for sec in 0..sectors {
                let k = sec as u64;
                let (lac, cid, unit) = match radio {
                    Radio::Gsm => (1_000 + a, 10 * s + k + 1, None),
                    // RNC << 16 | cell id; an RNC serves three location areas.
                    Radio::Umts => (
                        2_000 + a,
                        ((1 + a / 3) << 16) | (10 * s + k + 5),
                        Some(((s * sectors.max(3) as u64 + k) % 512) as u16),
                    ),
                    // eNB << 8 | sector.
                    Radio::Lte => (
                        3_000 + a,
                        ((t.mnc as u64 * 100_000 + s) << 8) | (k + 1),
                        Some(pci(s, k, sectors, 504)),
                    ),
                    // gNB (24-bit id) << 12 | cell.
                    Radio::Nr => (
                        3_000 + a,
                        ((t.mnc as u64 * 1_000_000 + s) << 12) | (k + 1),
                        Some(pci(s, k, sectors, 1_008)),
                    ),
                };
                let azimuth = if t.omni {
                    None
                } else if sectors == 3 && p.azimuth_jitter_deg == 0.0 {
                    Some((t.az0 + 120.0 * sec as f64) % 360.0)
                } else {
                    let even = 360.0 / sectors as f64 * sec as f64;
                    let off = jitter.range(-p.azimuth_jitter_deg, p.azimuth_jitter_deg);
                    Some((t.az0 + even + off).rem_euclid(360.0))
                };
                cells.push(Cell {
                    tower: ti,
                    sector: sec,
                    radio,
                    mnc: t.mnc,
                    lac: lac as u32,
                    cid,
                    unit,
                    azimuth,
                    db: None,
                });
            }
        }
        t.cells = start..cells.len();
    }
    cells
}

/// Physical cell id of sector `k` of site `s` among `ids` (LTE 504, NR 1008), a block of
/// 3 (or 6) per site.
fn pci(s: u64, k: u64, sectors: u8, ids: u64) -> u16 {
    let block = sectors.max(3) as u64;
    ((s % (ids / block)) * block + k) as u16
}

/// Random vendor prefixes: globally administered (bit 1 clear), unicast (bit 0 clear).
fn ouis(seed: u64) -> Vec<u64> {
    let mut rng = Rng::stream(seed, "ouis");
    (0..48)
        .map(|_| {
            let o = rng.next_u64() & 0x00ff_ffff;
            o & !(0x03 << 16)
        })
        .collect()
}

fn new_bssid(rng: &mut Rng, ouis: &[u64], used: &mut BTreeSet<u64>) -> u64 {
    loop {
        let b = (rng.pick(ouis) << 24) | (rng.next_u64() & 0x00ff_ffff);
        if used.insert(b) {
            return b;
        }
    }
}

/// Mean gap between APs along a street, by zone.
fn ap_gap_m(env: Env, p: &Params) -> f64 {
    let gap = match env {
        Env::Urban => 50.0,
        Env::Suburban => 250.0,
        Env::Rural => 1_500.0,
    };
    gap * p.ap_gap_factor
}

const WIFI_CHANNELS_24: [u32; 3] = [2412, 2437, 2462];
const WIFI_CHANNELS_5: [u32; 8] = [5180, 5200, 5220, 5240, 5500, 5580, 5660, 5745];

fn place_aps(seed: u64, land: &Land, p: &Params) -> Vec<Ap> {
    let mut rng = Rng::stream(seed, "aps");
    let ouis = ouis(seed);
    let mut used = BTreeSet::new();
    let mut aps = Vec::new();
    let mut add = |rng: &mut Rng, x: f64, y: f64, aps: &mut Vec<Ap>| {
        let env = env_at(x, y);
        let five = rng.chance(p.wifi_5ghz_share);
        let freq = if five {
            *rng.pick(&WIFI_CHANNELS_5)
        } else {
            *rng.pick(&WIFI_CHANNELS_24)
        };
        let bssid = new_bssid(rng, &ouis, &mut used);
        aps.push(Ap {
            bssid,
            x,
            y,
            old_x: x,
            old_y: y,
            env,
            eirp_dbm: rng.range(15.0, 20.0),
            freq_mhz: freq,
            indoor: rng.chance(0.9),
            moved: false,
            shadow_key: rng.next_u64(),
            db: None,
        });
    };
    // Walk every street of the grid; APs stand in the buildings either side.
    let reach = HALF * std::f64::consts::SQRT_2;
    let nlines = (reach / geo::STREET_SPACING_M).ceil() as i64;
    for family in 0..2 {
        for k in -nlines..=nlines {
            let c = k as f64 * geo::STREET_SPACING_M;
            let mut t = -reach;
            while t < reach {
                let (u, v) = if family == 0 { (t, c) } else { (c, t) };
                let (x, y) = geo::from_uv(u, v);
                let env = env_at(x, y);
                if k % geo::street_every(env) != 0 || x.abs() > HALF || y.abs() > HALF {
                    t += 50.0;
                    continue;
                }
                let step = ap_gap_m(env, p) * rng.range(0.4, 1.6);
                let side = if rng.chance(0.5) { 1.0 } else { -1.0 };
                let off = side * rng.range(6.0, 25.0);
                let along = rng.range(0.0, step);
                let (u2, v2) = if family == 0 {
                    (t + along, c + off)
                } else {
                    (c + off, t + along)
                };
                let (ax, ay) = geo::from_uv(u2, v2);
                if land.is_land(ax, ay) {
                    add(&mut rng, ax, ay, &mut aps);
                }
                t += step;
            }
        }
    }
    // Rural villages: a handful of small AP clusters.
    let mut vrng = Rng::stream(seed, "villages");
    for _ in 0..40 {
        let (vx, vy) = land.sample(&mut vrng, Some(Env::Rural));
        let n = vrng.int(5, 25);
        for _ in 0..n {
            let (x, y) = (vx + vrng.gauss() * 120.0, vy + vrng.gauss() * 120.0);
            if land.is_land(x, y) {
                add(&mut vrng, x, y, &mut aps);
            }
        }
    }
    // Moved APs: taken along when their owners relocated, after the crowd had reported
    // them; in family worlds a share stays within the neighbourhood, the rest goes several
    // km away.
    let mut mrng = Rng::stream(seed, "moved");
    let (ux, uy) = geo::urban_centre_xy();
    for ap in aps.iter_mut() {
        if !mrng.chance(p.ap_moved) {
            continue;
        }
        // A share of the moves stays within the neighbourhood, at a distance drawn on a log
        // scale, any bearing.
        if p.ap_short_move_share > 0.0 && mrng.chance(p.ap_short_move_share) {
            let d = mrng.log_uniform(100.0, 3_000.0);
            for _ in 0..200 {
                let a = mrng.range(0.0, std::f64::consts::TAU);
                let (nx, ny) = (ap.x + d * a.cos(), ap.y + d * a.sin());
                if land.is_land(nx, ny) {
                    ap.x = nx;
                    ap.y = ny;
                    ap.env = env_at(nx, ny);
                    ap.moved = true;
                    break;
                }
            }
            continue;
        }
        // Most moves land in the city so that urban scans meet them.
        for _ in 0..200 {
            let (nx, ny) = if mrng.chance(0.7) {
                (
                    ux + mrng.range(-4_000.0, 4_000.0),
                    uy + mrng.range(-4_000.0, 4_000.0),
                )
            } else {
                (mrng.range(-HALF, HALF), mrng.range(-HALF, HALF))
            };
            let d = dist(nx, ny, ap.x, ap.y);
            if (3_000.0..=12_000.0).contains(&d) && land.is_land(nx, ny) {
                ap.x = nx;
                ap.y = ny;
                ap.env = env_at(nx, ny);
                ap.moved = true;
                break;
            }
        }
    }
    aps
}
