/**
 * The engine on worlds from a second generator, written apart from the project's simulator
 * (crates/whereabouts-sim) with other models of every part: a check that what the world
 * families taught the engine holds in worlds built otherwise. Seeds 1..16 are fit worlds (the
 * multi-cell radius's shape and the WiFi radius's shared-error floor were fitted on them
 * beside the families' 101..130, `solve/params.rs`); the default seeds, 101..116, no constant
 * was fitted on.
 *
 *   npx tsx bench/other-worlds.ts [--seeds 101..116] [--requests 500] [--worlds] [--json]
 *                                 [--drop-levels cells|neighbours|wifi]
 *
 * How these worlds differ from the simulator's (docs/simulator.md):
 *   - site density falls off continuously from a dense centre (no urban, suburban and rural
 *     zones), sites placed by dart throwing at the local spacing, some strung along corridors;
 *   - path loss from the COST-231 and Okumura-Hata formulas (frequency, mast height, a
 *     clutter correction by the local spacing), not a log-distance law;
 *   - the 3GPP horizontal antenna pattern, 1 to 4 sectors, shared masts between operators;
 *   - shadowing as a sum of plane waves per site, shared by its radios and sectors;
 *   - crowd estimates from phones along roads and at random places that mostly log only their
 *     serving cell: the mean or the coordinate median of the sightings, with the farthest
 *     sighting or twice the mean distance as range;
 *   - timing advance counted on the radio path, which exceeds the straight line.
 * Requests are drawn where devices are (near sites, more where sites are dense), labelled by
 * the spacing of the sites around the device: `cells-dense` (under 900 m), `cells-medium`,
 * `cells-sparse` (over 2,500 m), and `single-cell` (the serving cell alone, anywhere); and
 * `cells-known-towers`: the first operator's cells heard anywhere, located on a published
 * table of its cells at their true masts (mnc 3, every row the same 1,000 m range, as a
 * publisher writes whatever it likes), where the baseline is the power-weighted centroid of
 * the towers heard; and the fallbacks: `lacf` (a device on a site the crowd missed, located on
 * an export without those sites, `db-missed/`) and `scf` (a serving cell reported by a 16-bit
 * id); and WiFi (`bench/other-wifi.ts`): `wifi-dense`, `wifi-sparse` and `wifi-moved`, scans of
 * APs in buildings whose export the same crowd's passes made, and `wifi-cells` and
 * `wifi-moved-cells`, such scans with the phone's cells beside them.
 * Each world is written under `.eval/other-SEED-N/` (`world/cells.csv`, `world/wifi.csv`,
 * `world/scenarios/`, `db/`), its stations imported with the project's importer, and evaluated
 * as `whereabouts eval` evaluates labelled requests: the baseline is the signal-weighted mean
 * of the known stations, in the same run. Prints per scenario the median world and the worst
 * world of the baseline's median error over ours and of the share inside the 68% radius.
 * `--drop-levels` evaluates every request as a device that reports no cell levels, the serving
 * cell's alone, or no AP levels would send it (`whereabouts eval --drop-levels`).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DROPPED_LEVELS_USAGE, droppedLevelsNote, parseDroppedLevels } from '../src/eval/inputs.js';
import { insideBadness, ratioBadness, worldSpread } from '../src/eval/metrics.js';
import { runEval } from '../src/eval/run.js';
import { importerVersion } from '../src/eval/sim.js';
import { renderColumns } from '../src/eval/table.js';
import { native } from '../src/native/binding.js';
import { WIFI_SCENARIOS, wifiOf } from './other-wifi.js';
import { planeWaves, type Seeded, seeded, waveField } from './random.js';
import { seedRange } from './seeds.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '101..116' },
    requests: { type: 'string', default: '500' },
    worlds: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'drop-levels': { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`bench/other-worlds.ts: ${message}\n`);
  process.exit(2);
}

const dropText = values['drop-levels'];
const dropLevels =
  dropText === undefined
    ? undefined
    : (parseDroppedLevels(dropText) ?? fail(`--drop-levels ${DROPPED_LEVELS_USAGE}`));
const seeds = seedRange('--seeds', values.seeds, 200);
const firstSeed = seeds[0] as number;
const lastSeed = seeds.at(-1) as number;
const requests = Number(values.requests);
if (!Number.isInteger(requests) || requests < 1 || requests > 100_000)
  fail(`--requests: \`${values.requests}\` is not an integer from 1 to 100000`);

/** Clock of every world: station ages are relative to it. */
const NOW = Date.UTC(2026, 5, 1) / 1000;
const M_PER_DEG = 111_195;

type Radio = 'gsm' | 'umts' | 'lte';
const RADIOS: readonly Radio[] = ['gsm', 'umts', 'lte'];
/** Carrier frequency (MHz), the level's transmit power before antenna gain (dBm: GSM's
 * carrier, UMTS's pilot, LTE's reference signal) and the weakest level a phone reports. */
const RADIO: Record<Radio, { mhz: number; txDbm: number; floorDbm: number; taStepM?: number }> = {
  gsm: { mhz: 900, txDbm: 43, floorDbm: -105, taStepM: 553.5 },
  umts: { mhz: 2100, txDbm: 33, floorDbm: -115 },
  lte: { mhz: 1800, txDbm: 18, floorDbm: -124, taStepM: 78.12 },
};
/** The network id of the published table of the first operator's masts. */
const PUBLISHED_MNC = 3;
const KNOWN = 'cells-known-towers';
const SPEC_LEVEL: Record<Radio, [number, number]> = { gsm: [-113, -51], umts: [-121, -25], lte: [-137, -45] };

interface World {
  seed: number;
  lat0: number;
  lon0: number;
  half: number;
  isd0: number;
  isdMax: number;
  falloffM: number;
  beamwidth: number;
  backDb: number;
  shadowDb: number;
  shadowCorrM: number;
  fastDb: number;
  deviceDb: number;
  eirpDb: number;
  taShare: number;
  neighbourShare: number;
  estimate: 'mean' | 'median';
  range: 'farthest' | 'twice-mean';
  sequentialIds: boolean;
}

interface Cell {
  radio: Radio;
  mnc: number;
  lac: number;
  cid: number;
  azimuth: number | null;
  sightings: number[];
}

interface Site {
  x: number;
  y: number;
  mnc: number;
  index: number;
  heightM: number;
  eirp: number;
  waves: number[];
  cells: Cell[];
}

/** The local site spacing the world's density asks for at (x, y). */
function spacingAt(w: World, x: number, y: number): number {
  return Math.min(w.isdMax, w.isd0 * Math.exp(Math.hypot(x, y) / w.falloffM));
}

/** Inland places (so that no answer is moved off the sea by the border strictness). */
const CENTRES = [
  { lat0: 40.42, lon0: -3.7 },
  { lat0: 48.14, lon0: 11.58 },
  { lat0: 52.23, lon0: 21.01 },
  { lat0: 45.76, lon0: 4.84 },
  { lat0: 50.08, lon0: 14.44 },
  { lat0: 45.46, lon0: 9.19 },
  { lat0: 47.5, lon0: 19.04 },
  { lat0: 59.33, lon0: 18.07 },
] as const;

function drawWorld(seed: number): World {
  const r = seeded(seed * 7919 + 17);
  const isd0 = r.uniform(300, 700);
  const isdMax = r.uniform(3000, 8000);
  const half = 12_000;
  return {
    seed,
    ...r.pick(CENTRES),
    half,
    isd0,
    isdMax,
    falloffM: r.uniform(6000, 12000) / Math.log(isdMax / isd0),
    beamwidth: r.uniform(55, 95),
    backDb: r.uniform(15, 25),
    shadowDb: r.uniform(5, 10),
    shadowCorrM: r.uniform(50, 300),
    fastDb: r.uniform(2, 4),
    deviceDb: r.uniform(0, 4),
    eirpDb: r.uniform(0, 3),
    taShare: r.uniform(0.3, 0.6),
    neighbourShare: r.uniform(0, 0.5),
    estimate: r.next() < 0.6 ? 'mean' : 'median',
    range: r.next() < 0.6 ? 'farthest' : 'twice-mean',
    sequentialIds: r.next() < 0.3,
  };
}

/** COST-231 Hata (above 1.5 GHz) or Okumura-Hata path loss, dB, with the clutter of the local spacing. */
function pathLossDb(mhz: number, heightM: number, dM: number, spacing: number): number {
  const lf = Math.log10(mhz);
  const lh = Math.log10(heightM);
  const ahm = (1.1 * lf - 0.7) * 1.5 - (1.56 * lf - 0.8);
  const ld = Math.log10(Math.max(dM, 30) / 1000);
  const base = mhz > 1500 ? 46.3 + 33.9 * lf : 69.55 + 26.16 * lf;
  const urban = base - 13.82 * lh - ahm + (44.9 - 6.55 * lh) * ld + (spacing < 450 ? 3 : 0);
  if (spacing < 900) return urban;
  if (spacing < 2500) return urban - 2 * Math.log10(mhz / 28) ** 2 - 5.4;
  // Quasi-open country: half the open-area correction.
  return urban - 0.5 * (4.78 * lf * lf - 18.33 * lf + 40.94);
}

function build(w: World): Site[] {
  const r = seeded(w.seed * 104729 + 3);
  const sites: Site[] = [];
  const corridors =
    r.next() < 0.5 ? Array.from({ length: 5 }, () => [r.uniform(0, Math.PI), r.uniform(-6000, 6000)]) : [];
  for (const mnc of [1, 2]) {
    const own: Site[] = [];
    const shared = mnc === 2 ? r.uniform(0, 0.4) : 0;
    let misses = 0;
    while (misses < 3000) {
      let x = r.uniform(-w.half, w.half);
      let y = r.uniform(-w.half, w.half);
      if (corridors.length > 0 && r.next() < 0.3) {
        const [angle, offset] = r.pick(corridors) as number[];
        const t = r.uniform(-w.half * 1.4, w.half * 1.4);
        x = Math.cos(angle as number) * t - Math.sin(angle as number) * (offset as number);
        y = Math.sin(angle as number) * t + Math.cos(angle as number) * (offset as number);
        if (Math.abs(x) > w.half || Math.abs(y) > w.half) continue;
      }
      const isd = spacingAt(w, x, y);
      if (r.next() > (w.isd0 / isd) ** 2 * 4) {
        misses++;
        continue;
      }
      if (own.some((s) => Math.hypot(s.x - x, s.y - y) < 0.6 * isd)) {
        misses++;
        continue;
      }
      misses = 0;
      // Some of the second operator's sites stand on the first's masts.
      if (shared > 0 && r.next() < shared) {
        const near = sites.filter((s) => s.mnc === 1 && Math.hypot(s.x - x, s.y - y) < isd);
        if (near.length > 0) {
          const m = r.pick(near);
          x = m.x;
          y = m.y;
        }
      }
      own.push({
        x,
        y,
        mnc,
        index: own.length + 1,
        heightM: Math.min(50, 15 + isd / 200) + r.uniform(-5, 5),
        eirp: r.normal() * w.eirpDb,
        waves: planeWaves(10, w.shadowCorrM, r),
        cells: [],
      });
    }
    sites.push(...own);
  }
  let sequential = 0;
  for (const s of sites) {
    const isd = spacingAt(w, s.x, s.y);
    const omni = r.next() < (isd > 2500 ? 0.3 : 0.08);
    const sectors = omni ? 1 : r.next() < 0.08 ? 2 : r.next() < 0.1 ? 4 : 3;
    const base = r.uniform(0, 360);
    const lac = 100 + Math.floor((s.x + w.half) / 6000) * 10 + Math.floor((s.y + w.half) / 6000);
    for (const radio of RADIOS) {
      if (radio === 'gsm' && r.next() > 0.75) continue;
      if (radio === 'umts' && r.next() > 0.6) continue;
      for (let k = 0; k < sectors; k++) {
        const azimuth = omni ? null : (base + (k * 360) / sectors + r.normal() * 8 + 360) % 360;
        let cid: number;
        if (radio === 'lte') cid = (s.mnc * 100_000 + s.index) * 256 + k + 1;
        else if (w.sequentialIds) cid = ++sequential;
        else cid = s.index * 10 + k + 1;
        if (radio === 'umts') cid += 5 * 65_536;
        s.cells.push({ radio, mnc: s.mnc, lac, cid, azimuth, sightings: [] });
      }
    }
  }
  return sites;
}

interface Heard {
  site: Site;
  cell: Cell;
  level: number;
  d: number;
}

/** Every cell of `radio` and `mnc` a phone at (x, y) hears, strongest first. */
function hear(
  w: World,
  sites: Site[],
  x: number,
  y: number,
  radio: Radio,
  mnc: number,
  r: Seeded,
  offset: number,
): Heard[] {
  const spec = RADIO[radio];
  const spacing = spacingAt(w, x, y);
  const out: Heard[] = [];
  for (const s of sites) {
    if (s.mnc !== mnc) continue;
    const d = Math.hypot(s.x - x, s.y - y);
    if (d > 25_000) continue;
    const loss = pathLossDb(spec.mhz, s.heightM, d, spacing) - w.shadowDb * waveField(s.waves, x, y);
    const bearing = ((Math.atan2(x - s.x, y - s.y) * 180) / Math.PI + 360) % 360;
    for (const c of s.cells) {
      if (c.radio !== radio) continue;
      let gain = 8;
      if (c.azimuth !== null) {
        const off = Math.abs(((bearing - c.azimuth + 540) % 360) - 180);
        gain = 16 - Math.min(12 * (off / w.beamwidth) ** 2, w.backDb);
      }
      const level = spec.txDbm + gain + s.eirp - loss + r.normal() * w.fastDb + offset;
      if (level >= spec.floorDbm) out.push({ site: s, cell: c, level, d });
    }
  }
  return out.sort((a, b) => b.level - a.level);
}

/** A place where phones are: near a site, more often where sites are dense; some anywhere. */
function placeOfPhone(w: World, sites: Site[], r: Seeded): [number, number] {
  if (r.next() < 0.2) return [r.uniform(-w.half, w.half), r.uniform(-w.half, w.half)];
  return nearSite(w, r.pick(sites), r);
}

/** A place within the local spacing of site `s`, evenly over the disc. */
function nearSite(w: World, s: Site, r: Seeded): [number, number] {
  const rad = spacingAt(w, s.x, s.y) * Math.sqrt(r.next());
  const a = r.uniform(0, 2 * Math.PI);
  return [s.x + rad * Math.cos(a), s.y + rad * Math.sin(a)];
}

/** The serving cell among `heard`: the strongest, within the handover hysteresis. */
function servingOf(heard: Heard[], r: Seeded): Heard | undefined {
  const best = heard.map((h, i) => [h.level + r.normal() * 3, i] as const).sort((a, b) => b[0] - a[0])[0];
  return best && heard[best[1]];
}

function toLatLon(w: World, x: number, y: number): [number, number] {
  return [w.lat0 + y / M_PER_DEG, w.lon0 + x / (M_PER_DEG * Math.cos((w.lat0 * Math.PI) / 180))];
}

function radioOfPhone(r: Seeded): Radio {
  const u = r.next();
  return u < 0.55 ? 'lte' : u < 0.8 ? 'gsm' : 'umts';
}

/** The crowd's sightings: phones along roads and at random places, each logging its serving
 * cell and, on some phones, its neighbours, with a GPS error. */
function crowd(w: World, sites: Site[]): void {
  const r = seeded(w.seed * 15485863 + 11);
  const roads = Array.from({ length: 40 }, () => {
    const [x, y] = placeOfPhone(w, sites, r);
    return { x, y, a: r.uniform(0, Math.PI), len: r.uniform(2000, 15000) };
  });
  const total = Math.round(r.uniform(15_000, 40_000));
  for (let i = 0; i < total; i++) {
    let x: number;
    let y: number;
    if (r.next() < 0.7) {
      const road = r.pick(roads);
      const t = r.uniform(-road.len / 2, road.len / 2);
      x = road.x + Math.cos(road.a) * t;
      y = road.y + Math.sin(road.a) * t;
    } else [x, y] = placeOfPhone(w, sites, r);
    if (Math.abs(x) > w.half || Math.abs(y) > w.half) continue;
    const heard = hear(w, sites, x, y, radioOfPhone(r), r.next() < 0.5 ? 1 : 2, r, r.normal() * w.deviceDb);
    const logs = r.next() < w.neighbourShare ? 7 : 1;
    for (const h of heard.slice(0, logs)) h.cell.sightings.push(x + r.normal() * 8, y + r.normal() * 8);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** One row of an OpenCelliD export (averaged: `changeable` 1; no average signal). */
function ocidRow(
  c: Cell,
  mnc: number,
  lat: number,
  lon: number,
  range: number,
  samples: number,
  created: number,
  updated: number,
): string {
  const unit = 0;
  return [
    c.radio.toUpperCase(),
    1,
    mnc,
    c.lac,
    c.cid,
    unit,
    lon.toFixed(6),
    lat.toFixed(6),
    range,
    samples,
    1,
    created,
    updated,
    0,
  ].join(',');
}

function cellsCsv(w: World, sites: Site[], hidden: Set<Site> = new Set()): string {
  const rows = [
    'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
  ];
  const r = seeded(w.seed * 32452843 + 5);
  for (const s of sites)
    for (const c of s.cells) {
      const n = c.sightings.length / 2;
      if (n === 0) continue;
      const xs = c.sightings.filter((_, i) => i % 2 === 0);
      const ys = c.sightings.filter((_, i) => i % 2 === 1);
      const [ex, ey] =
        w.estimate === 'mean'
          ? [xs.reduce((a, b) => a + b, 0) / n, ys.reduce((a, b) => a + b, 0) / n]
          : [median(xs), median(ys)];
      const ds = xs.map((x, i) => Math.hypot(x - ex, (ys[i] as number) - ey));
      const range = w.range === 'farthest' ? Math.max(...ds) : (2 * ds.reduce((a, b) => a + b, 0)) / n;
      const [lat, lon] = toLatLon(w, ex, ey);
      const updated = Math.round(NOW - r.uniform(1, 300) * 86400);
      const created = updated - Math.round(r.uniform(30, 900) * 86400);
      // Dates drawn first: every other row is as the full export has it.
      if (hidden.has(s)) continue;
      rows.push(ocidRow(c, c.mnc, lat, lon, Math.max(1, Math.round(range)), n, created, updated));
    }
  // The published table: the first operator's cells at their masts.
  for (const s of sites) {
    if (s.mnc !== 1 || hidden.has(s)) continue;
    const [lat, lon] = toLatLon(w, s.x, s.y);
    for (const c of s.cells)
      rows.push(ocidRow(c, PUBLISHED_MNC, lat, lon, 1000, 1, NOW - 86400 * 30, NOW - 86400));
  }
  return `${rows.join('\n')}\n`;
}

/** Every cell's true mast and azimuth, with its sightings' count (for diagnosis; not imported). */
function truthCsv(w: World, sites: Site[]): string {
  const rows = ['radio,net,area,cell,lon,lat,azimuth,omni,spacing_m,sightings'];
  for (const s of sites) {
    const [lat, lon] = toLatLon(w, s.x, s.y);
    for (const c of s.cells)
      rows.push(
        [
          c.radio.toUpperCase(),
          c.mnc,
          c.lac,
          c.cid,
          lon.toFixed(6),
          lat.toFixed(6),
          c.azimuth === null ? '' : c.azimuth.toFixed(1),
          c.azimuth === null ? 1 : 0,
          spacingAt(w, s.x, s.y).toFixed(0),
          c.sightings.length / 2,
        ].join(','),
      );
  }
  return `${rows.join('\n')}\n`;
}

/** Labelled requests by scenario: devices where phones are, each hearing one operator's cells of one radio. */
function scenarios(w: World, sites: Site[], perScenario: number, published = false): Map<string, string[]> {
  const r = seeded(w.seed * 49979687 + (published ? 13 : 7));
  const names = published ? [KNOWN] : ['cells-dense', 'cells-medium', 'cells-sparse', 'single-cell'];
  const out = new Map<string, string[]>(names.map((s) => [s, []]));
  let tries = 0;
  while ([...out.values()].some((v) => v.length < perScenario) && tries++ < perScenario * 200) {
    const [x, y] = placeOfPhone(w, sites, r);
    if (Math.abs(x) > w.half || Math.abs(y) > w.half) continue;
    const radio = radioOfPhone(r);
    // On the published table: the first operator's cells, under the table's network id.
    const pick = r.next();
    const mnc = published || pick < 0.5 ? 1 : 2;
    const heard = hear(w, sites, x, y, radio, mnc, r, r.normal() * w.deviceDb);
    const first = servingOf(heard, r);
    if (!first) continue;
    const rest = heard.filter((h) => h !== first).slice(0, 6);
    const single = r.next() < 0.25 && !published;
    const spacing = spacingAt(w, x, y);
    const scenario = published
      ? KNOWN
      : single
        ? 'single-cell'
        : spacing < 900
          ? 'cells-dense'
          : spacing > 2500
            ? 'cells-sparse'
            : 'cells-medium';
    const list = out.get(scenario) as string[];
    if (list.length >= perScenario || (!single && rest.length === 0)) continue;
    const cell = (h: Heard, serving: boolean) =>
      requestCell(w, r, h, serving, published ? PUBLISHED_MNC : mnc);
    list.push(
      labelled(w, scenario, x, y, [cell(first, true), ...(single ? [] : rest.map((h) => cell(h, false)))]),
    );
  }
  return out;
}

/** A request's cell object for `h` as a phone reports it: its level within the spec's range and,
 * on a serving cell of a radio with one, on some phones, its timing advance. */
function requestCell(w: World, r: Seeded, h: Heard, serving: boolean, mnc: number): Record<string, unknown> {
  const radio = h.cell.radio;
  const [lo, hi] = SPEC_LEVEL[radio];
  const o: Record<string, unknown> = {
    radio,
    mcc: 1,
    mnc,
    lac: h.cell.lac,
    cid: h.cell.cid,
    signal: Math.round(Math.min(hi, Math.max(lo, h.level))),
  };
  const step = RADIO[radio].taStepM;
  if (serving && step && r.next() < w.taShare) {
    // The radio path: the straight line and what reflections add.
    const path = h.d * (1 + Math.abs(r.normal()) * 0.1);
    o.ta = Math.min(63, Math.floor(path / step));
  }
  return o;
}

function labelled(w: World, scenario: string, x: number, y: number, cells: unknown[]): string {
  const [lat, lon] = toLatLon(w, x, y);
  return JSON.stringify({ scenario, truth: { lat, lon }, request: { token: 'x', cells } });
}

/** `cells-mixed-radio`: an LTE or UMTS phone naming its serving cell, up to three neighbours of
 * its own radio and up to three GSM cells it measures too (inter-radio neighbours), each radio
 * at its own level scale (drawn with a stream of its own). */
function mixedRadios(w: World, sites: Site[], perScenario: number): string[] {
  const r = seeded(w.seed * 67867967 + 19);
  const out: string[] = [];
  let tries = 0;
  while (out.length < perScenario && tries++ < perScenario * 50) {
    const [x, y] = placeOfPhone(w, sites, r);
    if (Math.abs(x) > w.half || Math.abs(y) > w.half) continue;
    const radio: Radio = r.next() < 0.7 ? 'lte' : 'umts';
    const mnc = r.next() < 0.5 ? 1 : 2;
    const offset = r.normal() * w.deviceDb;
    const heard = hear(w, sites, x, y, radio, mnc, r, offset);
    const first = servingOf(heard, r);
    const gsm = hear(w, sites, x, y, 'gsm', mnc, r, offset).slice(0, 3);
    if (!first || gsm.length === 0) continue;
    const own = heard.filter((h) => h !== first).slice(0, 3);
    const cells = [first, ...own, ...gsm].map((h, i) => requestCell(w, r, h, i === 0, mnc));
    out.push(labelled(w, 'cells-mixed-radio', x, y, cells));
  }
  return out;
}

/** The cells a phone at (x, y) names beside its WiFi scan: its serving cell and up to three
 * neighbours of its radio and operator (none where it hears no cell). */
function phoneCells(w: World, sites: Site[], x: number, y: number, r: Seeded): Record<string, unknown>[] {
  const radio = radioOfPhone(r);
  const mnc = r.next() < 0.5 ? 1 : 2;
  const heard = hear(w, sites, x, y, radio, mnc, r, r.normal() * w.deviceDb);
  const first = servingOf(heard, r);
  if (!first) return [];
  const rest = heard.filter((h) => h !== first).slice(0, 3);
  return [first, ...rest].map((h, i) => requestCell(w, r, h, i === 0, mnc));
}

/** The fallbacks' requests, drawn as [`scenarios`] draws its own (with a stream of their own,
 * which leaves those as they were):
 *   - `lacf`: a phone served by a cell of a site the crowd missed (one site in 20 of each
 *     operator, `hidden`: left out of a second database, `cellsCsv`), naming the cells of
 *     such sites it hears (a request naming a known cell is answered by it): the engine's
 *     answer is the LAC area's, where its area has known cells;
 *   - `scf`: a UMTS or LTE phone whose modem reports its serving cell's id in 16 bits (the
 *     UMTS C-ID or the LTE id's low bits), among its neighbours' full ids.
 */
function fallbacks(
  w: World,
  sites: Site[],
  perScenario: number,
): { requests: Map<string, string[]>; hidden: Set<Site> } {
  const r = seeded(w.seed * 86028121 + 17);
  const hidden = new Set(sites.filter(() => r.next() < 0.05));
  const missed = [...hidden];
  const out = new Map<string, string[]>([
    ['lacf', []],
    ['scf', []],
  ]);
  let tries = 0;
  while ([...out.values()].some((v) => v.length < perScenario) && tries++ < perScenario * 200) {
    const lacf = (out.get('lacf') as string[]).length < perScenario && missed.length > 0 && r.next() < 0.5;
    let x: number;
    let y: number;
    if (lacf) [x, y] = nearSite(w, r.pick(missed), r);
    else [x, y] = placeOfPhone(w, sites, r);
    if (Math.abs(x) > w.half || Math.abs(y) > w.half) continue;
    const radio = radioOfPhone(r);
    const mnc = r.next() < 0.5 ? 1 : 2;
    const heard = hear(w, sites, x, y, radio, mnc, r, r.normal() * w.deviceDb);
    const first = servingOf(heard, r);
    if (!first) continue;
    const scenario = lacf ? 'lacf' : 'scf';
    if (lacf ? !hidden.has(first.site) : radio === 'gsm' || hidden.has(first.site)) continue;
    const list = out.get(scenario) as string[];
    if (list.length >= perScenario) continue;
    const rest = heard.filter((h) => h !== first && (!lacf || hidden.has(h.site))).slice(0, 6);
    const cells = [requestCell(w, r, first, true, mnc), ...rest.map((h) => requestCell(w, r, h, false, mnc))];
    if (!lacf) (cells[0] as { cid: number }).cid = first.cell.cid & 0xffff;
    list.push(labelled(w, scenario, x, y, cells));
  }
  return { requests: out, hidden };
}

interface Line {
  seed: number;
  scenario: string;
  n: number;
  ratio: number;
  inside: number;
  median: number;
  baseMedian: number;
  ratioWithAdvance: number;
  ratioWithoutAdvance: number;
}

async function evaluate(seed: number): Promise<{ world: World; lines: Line[]; cells: number }> {
  const w = drawWorld(seed);
  const work = join(import.meta.dirname, '..', '.eval', `other-${seed}-${requests}`);
  const dir = join(work, 'world');
  const db = join(work, 'db');
  // `lacf` is located on the export without the sites the crowd missed (`fallbacks`).
  const missedDb = join(work, 'db-missed');
  const scenario = (s: string) => join(dir, 'scenarios', `${s}.jsonl`);
  const files = [
    'cells-dense',
    'cells-medium',
    'cells-sparse',
    'single-cell',
    KNOWN,
    'scf',
    'cells-mixed-radio',
    ...WIFI_SCENARIOS,
  ].map(scenario);
  // Written afresh whenever this generator or the core that imports it changes.
  const stamp = join(work, 'generator.txt');
  const source = [
    readFileSync(import.meta.filename, 'utf8'),
    readFileSync(join(import.meta.dirname, 'other-wifi.ts'), 'utf8'),
    importerVersion(),
  ].join('\n');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== source) {
    rmSync(work, { recursive: true, force: true });
    mkdirSync(join(dir, 'scenarios'), { recursive: true });
    const sites = build(w);
    crowd(w, sites);
    writeFileSync(join(dir, 'cells.csv'), cellsCsv(w, sites));
    writeFileSync(join(dir, 'truth-cells.csv'), truthCsv(w, sites));
    const sc = scenarios(w, sites, requests);
    for (const [name, lines] of scenarios(w, sites, requests, true)) sc.set(name, lines);
    sc.set('cells-mixed-radio', mixedRadios(w, sites, requests));
    const missed = fallbacks(w, sites, requests);
    for (const [name, lines] of missed.requests) sc.set(name, lines);
    const wifi = wifiOf(
      seed,
      (x, y) => toLatLon(w, x, y),
      NOW,
      requests,
      (x, y, r) => phoneCells(w, sites, x, y, r),
    );
    for (const [name, lines] of wifi.scenarios) sc.set(name, lines);
    writeFileSync(join(dir, 'wifi.csv'), wifi.csv);
    writeFileSync(join(dir, 'truth-wifi.csv'), wifi.truth);
    writeFileSync(join(dir, 'wifi-params.json'), `${JSON.stringify(wifi.params, null, 1)}\n`);
    writeFileSync(join(dir, 'cells-missed.csv'), cellsCsv(w, sites, missed.hidden));
    for (const [name, lines] of sc)
      writeFileSync(join(dir, 'scenarios', `${name}.jsonl`), `${lines.join('\n')}\n`);
    writeFileSync(join(dir, 'params.json'), `${JSON.stringify(w, null, 1)}\n`);
    const importFiles = native().importFiles;
    if (!importFiles) fail('this build of the native addon has no importer; run `npm run build:native`');
    await importFiles(
      db,
      [join(dir, 'cells.csv'), join(dir, 'wifi.csv')],
      { replace: true, simulated: true },
      () => {},
    );
    await importFiles(
      missedDb,
      [join(dir, 'cells-missed.csv')],
      { replace: true, simulated: true },
      () => {},
    );
    writeFileSync(stamp, source);
  }
  const cells = readFileSync(join(dir, 'cells.csv'), 'utf8').split('\n').length - 2;
  const { json } = await runEval({ db, inputs: files, now: NOW, dropLevels });
  const lacf = await runEval({ db: missedDb, inputs: [scenario('lacf')], now: NOW, dropLevels });
  json.table.push(...lacf.json.table);
  const ratioOf = (scenario: string, by: string, value: string) =>
    json.table.find((l) => l.scenario === scenario && l.by === by && l.value === value)?.baselines.wmean
      ?.ratio ?? Number.NaN;
  const lines = json.table
    .filter((l) => l.by === 'all')
    .map((l) => ({
      seed,
      scenario: l.scenario,
      n: l.ours.count,
      ratio: l.baselines.wmean?.ratio ?? Number.NaN,
      inside: l.ours.inside,
      median: l.ours.median,
      baseMedian: l.baselines.wmean?.median ?? Number.NaN,
      ratioWithAdvance: ratioOf(l.scenario, 'advance', 'reported'),
      ratioWithoutAdvance: ratioOf(l.scenario, 'advance', 'none'),
    }));
  return { world: w, lines, cells };
}

const started = performance.now();
const all: Line[] = [];
const worlds: World[] = [];
for (let seed = firstSeed; seed <= lastSeed; seed++) {
  const t = performance.now();
  const { world, lines, cells } = await evaluate(seed);
  worlds.push(world);
  all.push(...lines);
  process.stderr.write(
    `other world ${seed}: ${cells} cells, ${((performance.now() - t) / 1000).toFixed(1)} s\n`,
  );
}
const seconds = (performance.now() - started) / 1000;
const summary = [...new Set(all.map((l) => l.scenario))].sort().map((scenario) => {
  const ls = all.filter((l) => l.scenario === scenario);
  return {
    scenario,
    worlds: ls.length,
    ratio: worldSpread(ls, (l) => l.ratio, ratioBadness),
    inside: worldSpread(ls, (l) => l.inside, insideBadness),
    ratioWithAdvance: worldSpread(ls, (l) => l.ratioWithAdvance, ratioBadness),
    ratioWithoutAdvance: worldSpread(ls, (l) => l.ratioWithoutAdvance, ratioBadness),
  };
});
if (values.json) {
  process.stdout.write(
    `${JSON.stringify({ format: 'whereabouts-other-worlds/1', requests, dropLevels: dropLevels ?? null, seconds, summary, worlds: all, params: worlds }, null, 1)}\n`,
  );
} else {
  const f3 = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(3));
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  process.stdout.write(
    `Other worlds (a second generator; seeds 1..16 fit, others held out): seeds ${firstSeed}..${lastSeed}, ${requests} requests a scenario${droppedLevelsNote(dropLevels)}, ${seconds.toFixed(0)} s.\n` +
      '"base/ours": the signal-weighted mean of the known stations, its median error over ours; "inside": truths within the 68% radius.\n\n',
  );
  process.stdout.write(
    `${renderColumns(
      [
        'scenario',
        'worlds',
        'base/ours median world',
        'worst (seed)',
        'with advance',
        'without',
        'inside median world',
        'worst (seed)',
        'range',
      ],
      summary.map((s) => [
        s.scenario,
        String(s.worlds),
        f3(s.ratio.median),
        Number.isNaN(s.ratio.worst) ? '-' : `${f3(s.ratio.worst)} (${s.ratio.worstSeed})`,
        `${f3(s.ratioWithAdvance.median)} / ${f3(s.ratioWithAdvance.worst)}`,
        `${f3(s.ratioWithoutAdvance.median)} / ${f3(s.ratioWithoutAdvance.worst)}`,
        pct(s.inside.median),
        `${pct(s.inside.worst)} (${s.inside.worstSeed})`,
        `${pct(s.inside.min)}-${pct(s.inside.max)}`,
      ]),
      1,
    )}\n`,
  );
  if (values.worlds)
    for (const l of all)
      process.stdout.write(
        `${l.seed}\t${l.scenario}\tn ${l.n}\tours ${l.median.toFixed(0)} m\tbase ${l.baseMedian.toFixed(0)} m\tratio ${f3(l.ratio)}\tinside ${pct(l.inside)}\n`,
      );
}
