/**
 * WiFi in the second generator's worlds (`bench/other-worlds.ts`), modelled apart from the
 * project's simulator (docs/simulator.md, "WiFi"), which strings its APs along streets with a
 * log-distance law:
 *   - APs in buildings whose density falls off from the town's centre, one to many APs a
 *     building (offices and blocks of flats), some routers with a second BSSID on 5 GHz at
 *     the same spot, some outdoors;
 *   - path loss by a multi-wall model: free space at a metre, an exponent of 2 to 3, a loss for
 *     every wall the path crosses (one per few metres, capped), an outer wall for indoor APs;
 *     transmit power drawn per AP; shadowing as plane waves per AP;
 *   - the crowd: wardriving cars on a street grid (good GPS) and phones indoors (poor GPS),
 *     logging every AP they hear; the export's position is the mean, the level-weighted mean
 *     or the strongest sighting, its range the farthest sighting, twice the mean distance or
 *     the 90% distance (0 where one sighting: no range);
 *   - APs installed after the export (absent from it), APs moved after it (nearby: a flat
 *     moved within the town; or far), and stale rows;
 *   - scans: an AP heard from the world's threshold (-95 to -85 dBm), some missed, the
 *     strongest 6 to 15 listed, levels within the spec's range.
 * Scenarios: `wifi-dense` (6 APs or more listed), `wifi-sparse` (2 to 5), `wifi-moved` (a
 * device standing by an AP that moved since the export, naming it): WiFi alone, as a WiFi-only
 * tracker sends it, so the baseline, the level-weighted mean of the known APs, is a WiFi
 * answer too; `wifi-cells` and `wifi-moved-cells`: the same with the cells a phone names
 * beside its scan (as the families' `wifi-urban` has them), where the engine chooses between
 * the two and the baseline weighs them together.
 * Everything is drawn from streams of its own, so the worlds' cells are as they were.
 */
import { planeWaves, type Seeded, seeded, waveField } from './random.js';

/** A world's WiFi parameters, drawn per seed (`drawWifi`). */
export interface WifiParams {
  /** APs a square kilometre at the centre, falling off as exp(-r / falloffM). */
  apsPerKm2: number;
  falloffM: number;
  zoneHalfM: number;
  /** The mean of APs a building; its footprint's half side. */
  perBuilding: number;
  buildingHalfM: number;
  streetSpacingM: number;
  streetAngle: number;
  txLoDbm: number;
  txHiDbm: number;
  share5Ghz: number;
  dualBandShare: number;
  outdoorShare: number;
  exponent: number;
  wallEveryM: number;
  wallDb: number;
  wallCapDb: number;
  outerWallDb: number;
  shadowDb: number;
  shadowCorrM: number;
  fastDb: number;
  deviceDb: number;
  thresholdDbm: number;
  scanMiss: number;
  listMax: number;
  scans: number;
  wardriveShare: number;
  carGpsM: number;
  phoneGpsM: number;
  estimate: 'mean' | 'level-weighted' | 'strongest';
  range: 'farthest' | 'twice-mean' | 'p90';
  missingShare: number;
  movedShare: number;
  movedNearShare: number;
  staleShare: number;
}

interface Ap {
  mac: number;
  x: number;
  y: number;
  /** Where the crowd heard it (differs from x, y for a moved AP). */
  ox: number;
  oy: number;
  building: number;
  tx: number;
  mhz: number;
  indoor: boolean;
  waves: number[];
  /** The crowd's sightings: x, y, level triples. */
  seen: number[];
  inExport: boolean;
  moved: boolean;
}

/** A world's WiFi: its APs on a grid of 100 m squares, for the APs in reach of a point. */
interface WifiWorld {
  p: WifiParams;
  aps: Ap[];
  grid: Map<number, Ap[]>;
  reachM: number;
  buildings: { x: number; y: number }[];
}

const GRID_M = 100;

/** The scenarios `wifiOf` draws. */
export const WIFI_SCENARIOS = [
  'wifi-dense',
  'wifi-sparse',
  'wifi-moved',
  'wifi-cells',
  'wifi-moved-cells',
] as const;

export function drawWifi(seed: number): WifiParams {
  const r = seeded(seed * 122949829 + 23);
  const apsPerKm2 = Math.exp(r.uniform(Math.log(300), Math.log(2500)));
  // At most about 60,000 APs in a world: 2 pi density falloff^2.
  const falloffM = Math.min(r.uniform(800, 3000), 1000 * Math.sqrt(60_000 / (2 * Math.PI * apsPerKm2)));
  const txLoDbm = r.uniform(8, 16);
  return {
    apsPerKm2,
    falloffM,
    zoneHalfM: Math.min(6000, 4 * falloffM),
    perBuilding: r.uniform(1.2, 5),
    buildingHalfM: r.uniform(5, 20),
    streetSpacingM: r.uniform(60, 200),
    streetAngle: r.uniform(0, Math.PI / 2),
    txLoDbm,
    txHiDbm: txLoDbm + r.uniform(3, 10),
    share5Ghz: r.uniform(0.1, 0.7),
    dualBandShare: r.uniform(0, 0.6),
    outdoorShare: r.uniform(0, 0.2),
    exponent: r.uniform(2, 3),
    wallEveryM: r.uniform(6, 25),
    wallDb: r.uniform(2, 5),
    wallCapDb: r.uniform(20, 40),
    outerWallDb: r.uniform(5, 12),
    shadowDb: r.uniform(3, 8),
    shadowCorrM: r.uniform(8, 40),
    fastDb: r.uniform(2, 5),
    deviceDb: r.uniform(0, 4),
    thresholdDbm: r.uniform(-95, -85),
    scanMiss: r.uniform(0, 0.3),
    listMax: Math.floor(r.uniform(6, 16)),
    scans: Math.round(r.uniform(20_000, 50_000)),
    wardriveShare: r.uniform(0.3, 0.9),
    carGpsM: r.uniform(3, 8),
    phoneGpsM: r.uniform(8, 30),
    estimate: r.pick(['mean', 'level-weighted', 'strongest'] as const),
    range: r.pick(['farthest', 'twice-mean', 'p90'] as const),
    missingShare: r.uniform(0.05, 0.25),
    movedShare: r.uniform(0.005, 0.05),
    movedNearShare: r.uniform(0, 0.7),
    staleShare: r.uniform(0, 0.3),
  };
}

/** The key of the grid's square (gx, gy), in units of `GRID_M`. */
function squareKey(gx: number, gy: number): number {
  return (gx + 1000) * 4096 + (gy + 1000);
}

function gridKey(x: number, y: number): number {
  return squareKey(Math.floor(x / GRID_M), Math.floor(y / GRID_M));
}

function addToGrid(grid: Map<number, Ap[]>, a: Ap): void {
  const k = gridKey(a.x, a.y);
  const list = grid.get(k);
  if (list) list.push(a);
  else grid.set(k, [a]);
}

/** A unicast, globally administered MAC (the first octet's two low bits clear). */
function drawMac(r: Seeded, used: Set<number>): number {
  for (;;) {
    const hi = Math.floor(r.next() * 256) & 0xfc;
    const mac =
      hi * 2 ** 40 + Math.floor(r.next() * 2 ** 24) * 2 ** 16 + (Math.floor(r.next() * 2 ** 12) << 4);
    if (!used.has(mac)) {
      used.add(mac);
      return mac;
    }
  }
}

/** Path loss at `d` metres from an AP on `mhz`, indoors or out. */
function lossDb(p: WifiParams, mhz: number, indoor: boolean, d: number): number {
  const fspl1 = 20 * Math.log10(mhz) - 27.55;
  const walls = Math.min(Math.floor(d / p.wallEveryM) * p.wallDb, p.wallCapDb);
  // Within its own building a device is behind no outer wall.
  const outer = indoor && d > p.buildingHalfM * 1.5 ? p.outerWallDb : 0;
  return fspl1 + 10 * p.exponent * Math.log10(Math.max(d, 1)) + walls + outer;
}

/** Builds a world's APs and buildings. */
function build(seed: number, p: WifiParams): WifiWorld {
  const r = seeded(seed * 179424673 + 29);
  const buildings: { x: number; y: number }[] = [];
  const perKm2 = p.apsPerKm2 / p.perBuilding;
  const area = (2 * p.zoneHalfM) ** 2 / 1e6;
  const trials = Math.round(perKm2 * area);
  for (let i = 0; i < trials; i++) {
    const x = r.uniform(-p.zoneHalfM, p.zoneHalfM);
    const y = r.uniform(-p.zoneHalfM, p.zoneHalfM);
    if (r.next() < Math.exp(-Math.hypot(x, y) / p.falloffM)) buildings.push({ x, y });
  }
  const aps: Ap[] = [];
  const used = new Set<number>();
  const grid = new Map<number, Ap[]>();
  buildings.forEach((b, bi) => {
    // 1 + geometric: the mean is perBuilding.
    let n = 1;
    while (r.next() < 1 - 1 / p.perBuilding) n++;
    for (let k = 0; k < n; k++) {
      const x = b.x + r.uniform(-p.buildingHalfM, p.buildingHalfM);
      const y = b.y + r.uniform(-p.buildingHalfM, p.buildingHalfM);
      const tx = r.uniform(p.txLoDbm, p.txHiDbm);
      const indoor = r.next() >= p.outdoorShare;
      const dual = r.next() < p.dualBandShare;
      const mac = drawMac(r, used);
      const bands = dual ? [2437, 5220] : [r.next() < p.share5Ghz ? 5220 : 2437];
      bands.forEach((mhz, j) => {
        const a: Ap = {
          mac: mac + j,
          x,
          y,
          ox: x,
          oy: y,
          building: bi,
          tx,
          mhz,
          indoor,
          waves: planeWaves(3, p.shadowCorrM, r),
          seen: [],
          inExport: true,
          moved: false,
        };
        used.add(a.mac);
        aps.push(a);
        addToGrid(grid, a);
      });
    }
  });
  // How far the loudest AP is heard (the highest power, on 2.4 GHz, outdoors): the distance
  // where its loss meets the threshold with three sigmas of shadowing and fading to spare (at
  // most 600 m).
  const budget = p.txHiDbm + 3 * Math.hypot(p.shadowDb, p.fastDb) + 3 * p.deviceDb - p.thresholdDbm;
  let reachM = 10;
  while (reachM < 600 && lossDb(p, 2437, false, reachM + 5) <= budget) reachM += 5;
  return { p, aps, grid, reachM, buildings };
}

interface HeardAp {
  ap: Ap;
  level: number;
}

/** The APs a device at (x, y) hears, strongest first. */
function hearAps(w: WifiWorld, x: number, y: number, offset: number, r: Seeded): HeardAp[] {
  const out: HeardAp[] = [];
  const span = Math.ceil(w.reachM / GRID_M);
  const gx = Math.floor(x / GRID_M);
  const gy = Math.floor(y / GRID_M);
  for (let i = gx - span; i <= gx + span; i++)
    for (let j = gy - span; j <= gy + span; j++) {
      const list = w.grid.get(squareKey(i, j));
      if (!list) continue;
      for (const a of list) {
        const d = Math.hypot(a.x - x, a.y - y);
        if (d > w.reachM) continue;
        const level =
          a.tx -
          lossDb(w.p, a.mhz, a.indoor, d) +
          w.p.shadowDb * waveField(a.waves, x, y) +
          r.normal() * w.p.fastDb +
          offset;
        if (level >= w.p.thresholdDbm) out.push({ ap: a, level });
      }
    }
  return out.sort((a, b) => b.level - a.level);
}

/** A place by a building (density-weighted: buildings are), indoors or on the street outside. */
function placeOfDevice(w: WifiWorld, r: Seeded): { x: number; y: number; indoor: boolean } {
  const b = r.pick(w.buildings);
  const h = w.p.buildingHalfM;
  if (r.next() < 0.7) return { x: b.x + r.uniform(-h, h), y: b.y + r.uniform(-h, h), indoor: true };
  const [sx, sy] = onStreet(w.p, b.x, b.y);
  return { x: sx + r.normal() * 3, y: sy + r.normal() * 3, indoor: false };
}

/** The nearest point of the street grid to (x, y). */
function onStreet(p: WifiParams, x: number, y: number): [number, number] {
  const c = Math.cos(p.streetAngle);
  const s = Math.sin(p.streetAngle);
  let u = c * x + s * y;
  let v = -s * x + c * y;
  const su = Math.round(u / p.streetSpacingM) * p.streetSpacingM;
  const sv = Math.round(v / p.streetSpacingM) * p.streetSpacingM;
  if (Math.abs(su - u) < Math.abs(sv - v)) u = su;
  else v = sv;
  return [c * u - s * v, s * u + c * v];
}

/** The crowd's scans: cars along streets and phones indoors, each logging every AP it hears. */
function crowd(w: WifiWorld, seed: number): void {
  const r = seeded(seed * 373587883 + 31);
  for (let i = 0; i < w.p.scans; i++) {
    const car = r.next() < w.p.wardriveShare;
    let x: number;
    let y: number;
    const b = r.pick(w.buildings);
    if (car) {
      [x, y] = onStreet(w.p, b.x + r.uniform(-w.p.streetSpacingM, w.p.streetSpacingM), b.y);
    } else {
      x = b.x + r.uniform(-w.p.buildingHalfM, w.p.buildingHalfM);
      y = b.y + r.uniform(-w.p.buildingHalfM, w.p.buildingHalfM);
    }
    const gps = car ? w.p.carGpsM : w.p.phoneGpsM;
    const fx = x + r.normal() * gps;
    const fy = y + r.normal() * gps;
    for (const h of hearAps(w, x, y, r.normal() * w.p.deviceDb, r).slice(0, 40))
      h.ap.seen.push(fx, fy, h.level);
  }
}

/** After the export: some APs are new (not in it), some moved, nearby or far. */
function afterExport(w: WifiWorld, seed: number): void {
  const r = seeded(seed * 694847539 + 37);
  const byMac = new Map<number, Ap>();
  for (const a of w.aps) {
    a.inExport = r.next() >= w.p.missingShare;
    byMac.set(a.mac, a);
  }
  for (const a of w.aps) {
    // A dual-band router's second BSSID moves with its first.
    if (a.mhz === 5220 && byMac.get(a.mac - 1)?.building === a.building) continue;
    if (r.next() >= w.p.movedShare || a.seen.length === 0) continue;
    const far = r.next() >= w.p.movedNearShare;
    const dist = far ? r.uniform(2000, 15000) : Math.exp(r.uniform(Math.log(50), Math.log(1000)));
    // Into another building about that far off (where people live, so the busier parts of
    // town as often as they hold buildings): of up to 200 drawn, the first within a quarter of
    // the distance, or the nearest to it.
    let to = { x: a.x, y: a.y };
    let gap = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 200 && gap > 0.25 * dist; k++) {
      const b = r.pick(w.buildings);
      const g = Math.abs(Math.hypot(b.x - a.x, b.y - a.y) - dist);
      if (g < gap) [to, gap] = [b, g];
    }
    const nx = to.x + r.uniform(-w.p.buildingHalfM, w.p.buildingHalfM);
    const ny = to.y + r.uniform(-w.p.buildingHalfM, w.p.buildingHalfM);
    const twin = byMac.get(a.mac + 1);
    for (const m of twin?.building === a.building && twin.mhz === 5220 ? [a, twin] : [a]) {
      const old = w.grid.get(gridKey(m.x, m.y)) as Ap[];
      old.splice(old.indexOf(m), 1);
      m.x = nx;
      m.y = ny;
      m.moved = true;
      addToGrid(w.grid, m);
    }
  }
}

function macText(mac: number): string {
  return mac
    .toString(16)
    .padStart(12, '0')
    .replace(/(..)(?!$)/g, '$1:');
}

/** The export: `bssid,lat,lon,range,samples,created,updated`, as the importer reads it. */
function exportCsv(
  w: WifiWorld,
  seed: number,
  toLatLon: (x: number, y: number) => [number, number],
  now: number,
): string {
  const r = seeded(seed * 899809363 + 41);
  const rows: string[] = [];
  for (const a of w.aps) {
    const n = a.seen.length / 3;
    const updated = Math.round(
      now - (r.next() < w.p.staleShare ? r.uniform(91, 900) : r.uniform(1, 90)) * 86400,
    );
    const created = updated - Math.round(r.uniform(0, 1500) * 86400);
    if (n === 0 || !a.inExport) continue;
    const s = a.seen;
    let ex = 0;
    let ey = 0;
    if (w.p.estimate === 'strongest') {
      let best = 2;
      for (let i = 5; i < s.length; i += 3) if ((s[i] as number) > (s[best] as number)) best = i;
      ex = s[best - 2] as number;
      ey = s[best - 1] as number;
    } else {
      let sw = 0;
      for (let i = 0; i < s.length; i += 3) {
        const wt = w.p.estimate === 'mean' ? 1 : 10 ** ((s[i + 2] as number) / 10);
        sw += wt;
        ex += wt * (s[i] as number);
        ey += wt * (s[i + 1] as number);
      }
      ex /= sw;
      ey /= sw;
    }
    const ds: number[] = [];
    for (let i = 0; i < s.length; i += 3)
      ds.push(Math.hypot((s[i] as number) - ex, (s[i + 1] as number) - ey));
    ds.sort((p, q) => p - q);
    const range =
      w.p.range === 'farthest'
        ? (ds.at(-1) as number)
        : w.p.range === 'twice-mean'
          ? (2 * ds.reduce((p, q) => p + q, 0)) / n
          : (ds[Math.min(n - 1, Math.floor(0.9 * n))] as number);
    const [lat, lon] = toLatLon(ex, ey);
    rows.push(
      [macText(a.mac), lat.toFixed(7), lon.toFixed(7), Math.round(range), n, created, updated].join(','),
    );
  }
  rows.sort();
  return `bssid,lat,lon,range,samples,created,updated\n${rows.join('\n')}\n`;
}

/** Every AP's true place and where the crowd heard it (for diagnosis; not imported). */
function truthCsv(w: WifiWorld, toLatLon: (x: number, y: number) => [number, number]): string {
  const rows = ['bssid,lat,lon,old_lat,old_lon,mhz,indoor,sightings,in_export,moved'];
  for (const a of w.aps) {
    const [lat, lon] = toLatLon(a.x, a.y);
    const [olat, olon] = toLatLon(a.ox, a.oy);
    rows.push(
      [
        macText(a.mac),
        lat.toFixed(7),
        lon.toFixed(7),
        olat.toFixed(7),
        olon.toFixed(7),
        a.mhz,
        a.indoor ? 1 : 0,
        a.seen.length / 3,
        a.inExport ? 1 : 0,
        a.moved ? 1 : 0,
      ].join(','),
    );
  }
  return `${rows.join('\n')}\n`;
}

/** A scan as the device lists it: heard APs less those it missed, the strongest first, at
 * most the world's list length, levels rounded into the spec's range, the frequency on most. */
function scanOf(w: WifiWorld, heard: HeardAp[], r: Seeded): Record<string, unknown>[] {
  return heard
    .filter(() => r.next() >= w.p.scanMiss)
    .slice(0, w.p.listMax)
    .map((h) => {
      const o: Record<string, unknown> = {
        bssid: macText(h.ap.mac),
        signal: Math.round(Math.min(-51, Math.max(-113, h.level))),
      };
      if (r.next() < 0.7) o.frequency = h.ap.mhz;
      return o;
    });
}

/**
 * A world's WiFi: its export (`csv`), its APs' truth, and labelled requests of the scenarios
 * `wifi-dense`, `wifi-sparse` and `wifi-moved` (WiFi alone), and `wifi-cells` and
 * `wifi-moved-cells` (the same draws with the cells `cellsAt` says a phone there names beside
 * its scan, from a stream of their own), `perScenario` each where the world has them.
 */
export function wifiOf(
  seed: number,
  toLatLon: (x: number, y: number) => [number, number],
  now: number,
  perScenario: number,
  cellsAt: (x: number, y: number, r: Seeded) => unknown[],
): { params: WifiParams; csv: string; truth: string; scenarios: Map<string, string[]> } {
  const p = drawWifi(seed);
  const w = build(seed, p);
  crowd(w, seed);
  afterExport(w, seed);
  const csv = exportCsv(w, seed, toLatLon, now);
  const out = new Map<string, string[]>(WIFI_SCENARIOS.map((s) => [s, []]));
  const list = (scenario: string) => out.get(scenario) as string[];
  const labelled = (scenario: string, x: number, y: number, wifi: unknown[], cells?: unknown[]) => {
    const [lat, lon] = toLatLon(x, y);
    const request = cells ? { token: 'x', cells, wifi } : { token: 'x', wifi };
    return JSON.stringify({ scenario, truth: { lat, lon }, request });
  };
  /** A device by a building and its scan (of 2 APs or more). */
  const anyDevice = (r: Seeded) => {
    const d = placeOfDevice(w, r);
    const scan = scanOf(w, hearAps(w, d.x, d.y, r.normal() * p.deviceDb, r), r);
    return scan.length < 2 ? undefined : { x: d.x, y: d.y, scan };
  };
  // Devices by a moved AP that the export still places where it was, naming it.
  const moved = w.aps.filter((a) => a.moved && a.inExport && a.seen.length > 0);
  const byMovedAp = (r: Seeded) => {
    const a = r.pick(moved);
    const t = r.uniform(0, 2 * Math.PI);
    const rad = 30 * Math.sqrt(r.next());
    const x = a.x + rad * Math.cos(t);
    const y = a.y + rad * Math.sin(t);
    const scan = scanOf(w, hearAps(w, x, y, r.normal() * p.deviceDb, r), r);
    return scan.length < 2 || !scan.some((o) => o.bssid === macText(a.mac)) ? undefined : { x, y, scan };
  };
  const r = seeded(seed * 961748941 + 43);
  let tries = 0;
  while (
    (list('wifi-dense').length < perScenario || list('wifi-sparse').length < perScenario) &&
    tries++ < perScenario * 100
  ) {
    const d = anyDevice(r);
    if (!d) continue;
    const scenario = d.scan.length >= 6 ? 'wifi-dense' : 'wifi-sparse';
    if (list(scenario).length < perScenario) list(scenario).push(labelled(scenario, d.x, d.y, d.scan));
  }
  tries = 0;
  while (moved.length > 0 && list('wifi-moved').length < perScenario && tries++ < perScenario * 20) {
    const d = byMovedAp(r);
    if (d) list('wifi-moved').push(labelled('wifi-moved', d.x, d.y, d.scan));
  }
  const rc = seeded(seed * 982451653 + 47);
  for (const [scenario, draw] of [
    ['wifi-cells', anyDevice],
    ['wifi-moved-cells', byMovedAp],
  ] as const) {
    tries = 0;
    while (
      (scenario === 'wifi-cells' || moved.length > 0) &&
      list(scenario).length < perScenario &&
      tries++ < perScenario * 20
    ) {
      const d = draw(rc);
      const cells = d && cellsAt(d.x, d.y, rc);
      if (d && cells && cells.length > 0) list(scenario).push(labelled(scenario, d.x, d.y, d.scan, cells));
    }
  }
  return { params: p, csv, truth: truthCsv(w, toLatLon), scenarios: out };
}
