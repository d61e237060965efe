/**
 * What an evaluation reads: labelled requests (JSON lines of `{request, truth, scenario}`),
 * GPS-tagged observation files (read by the core, as `learn` reads them) grouped into requests
 * whose truth is the GPS fix, and directories of either. Malformed lines are counted and
 * reported with their line numbers, never fatal.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { formatBssid, LIMITS, parseRadio } from '../locating/request/index.js';
import { type NativeObservationColumns, native } from '../native/binding.js';

/** One labelled row: a `/process` request and where the device truly was. */
export interface EvalRow {
  request: unknown;
  truth: { lat: number; lon: number };
  scenario: string;
}

/** The largest cell level offset, either way, an evaluation takes (dB). */
export const MAX_LEVEL_OFFSET_DB = 60;

/**
 * `text` as a cell level offset in dB ({@link withCellLevelOffset}), or undefined when it is
 * not a number within {@link MAX_LEVEL_OFFSET_DB} either way.
 */
export function parseLevelOffset(text: string): number | undefined {
  const db = Number(text);
  return text.trim() !== '' && Number.isFinite(db) && Math.abs(db) <= MAX_LEVEL_OFFSET_DB ? db : undefined;
}

/**
 * `row` as a device that reads its cells `db` dB stronger (negative: weaker) would have sent
 * it: every cell's `signal` moved by `db` and held within its radio's range of spec table 2.3
 * (a modem reports its limit, not a value past it). Cells without a level, of an unknown
 * radio or of one whose level the spec ignores, and access points, are left as they are. The
 * weighted mean's weights all scale alike, so it answers the same; what moves is what an
 * algorithm reads from the level itself.
 */
export function withCellLevelOffset(row: EvalRow, db: number): EvalRow {
  const request = row.request as { radio?: unknown; cells?: unknown } | null;
  if (db === 0 || typeof request !== 'object' || request === null || !Array.isArray(request.cells))
    return row;
  const cells = request.cells.map((c: unknown) => {
    if (typeof c !== 'object' || c === null) return c;
    const cell = c as { radio?: unknown; signal?: unknown };
    const name = cell.radio ?? request.radio;
    const code = typeof name === 'string' ? parseRadio(name) : undefined;
    const range = code === undefined ? undefined : LIMITS[code]?.signal;
    if (typeof cell.signal !== 'number' || range === undefined) return c;
    const moved = Math.round(cell.signal + db);
    return { ...cell, signal: Math.min(range.max, Math.max(range.min, moved)) };
  });
  return { ...row, request: { ...request, cells } };
}

/** Which levels {@link withoutLevels} drops: every cell's, every cell's but the first's, or
 * every access point's. */
export type DroppedLevels = 'cells' | 'neighbours' | 'wifi';

/** What `--drop-levels` takes, for the refusal of anything else (the CLI's and the benches'). */
export const DROPPED_LEVELS_USAGE =
  "takes `cells` (every cell's level), `neighbours` (all but the first cell's) or `wifi` (every access point's)";

/** How a report's title says which levels were taken off: '' for none. */
export function droppedLevelsNote(which: DroppedLevels | undefined): string {
  if (which === undefined) return '';
  const off = { cells: 'the cells', neighbours: 'the cells after the first', wifi: 'the access points' };
  return `, levels taken off ${off[which]}`;
}

/** `text` as {@link DroppedLevels}, or undefined when it is none of them. */
export function parseDroppedLevels(text: string): DroppedLevels | undefined {
  return text === 'cells' || text === 'neighbours' || text === 'wifi' ? text : undefined;
}

/**
 * `row` as a device that reports its stations without their levels would have sent it:
 * `signal` taken off every cell (`cells`), off every cell after the first listed, the serving
 * one (`neighbours`; modems that list neighbours by their ids alone), or off every access point
 * (`wifi`). Everything else stays as it is. The weighted mean then weighs those alike.
 */
export function withoutLevels(row: EvalRow, which: DroppedLevels | undefined): EvalRow {
  const request = row.request as { cells?: unknown; wifi?: unknown } | null;
  const key = which === 'wifi' ? 'wifi' : 'cells';
  const list = request?.[key];
  if (which === undefined || typeof request !== 'object' || request === null || !Array.isArray(list))
    return row;
  const stations = list.map((c: unknown, i) => {
    if (typeof c !== 'object' || c === null || (which === 'neighbours' && i === 0)) return c;
    const { signal: _, ...rest } = c as { signal?: unknown };
    return rest;
  });
  return { ...row, request: { ...request, [key]: stations } };
}

/** A line that could not be a row, with why. */
export interface BadLine {
  file: string;
  line: number;
  reason: string;
}

/** The most cells and access points a built request carries (the spec's limits, spec 8 and 2.4). */
const MAX_CELLS = 7;
const MAX_WIFI = 15;

/** Input files named on the command line, directories expanded (sorted, hidden entries skipped). */
export function expandInputs(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (p !== '-' && statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const entries = readdirSync(dir, { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.') && e.name !== '__MACOSX')
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

/** Whether a file holds labelled requests (JSON lines) rather than observations: by its first byte. */
export function isLabelled(file: string): boolean {
  if (file.endsWith('.jsonl') || file.endsWith('.ndjson')) return true;
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(256);
    const n = readSync(fd, b, 0, b.length, 0);
    const text = b.subarray(0, n).toString('utf8').trimStart();
    return text.startsWith('{');
  } finally {
    closeSync(fd);
  }
}

const CHUNK = 4 << 20;

/**
 * Reads a labelled JSON-lines file in batches of rows, calling `onBatch` with each and the bytes
 * read so far. Lines are 1-based; blank lines are passed over; a line that is not JSON or lacks
 * a request object or a valid truth goes to `bad`.
 */
export function readLabelled(
  file: string,
  batchSize: number,
  onBatch: (rows: EvalRow[], bytesDone: number) => void,
  bad: (b: BadLine) => void,
): void {
  const fd = openSync(file, 'r');
  const buf = Buffer.alloc(CHUNK);
  let carry = '';
  let lineNo = 0;
  let bytes = 0;
  let batch: EvalRow[] = [];
  const take = (line: string) => {
    lineNo++;
    if (line.trim() === '') return;
    const row = labelledRow(line);
    if (typeof row === 'string') bad({ file, line: lineNo, reason: row });
    else {
      batch.push(row);
      if (batch.length >= batchSize) {
        onBatch(batch, bytes);
        batch = [];
      }
    }
  };
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      bytes += n;
      // Cut at the last newline so that a multi-byte character is never split.
      const end = buf.lastIndexOf(10, n - 1);
      if (end < 0) {
        carry += buf.toString('utf8', 0, n);
        continue;
      }
      const text = carry + buf.toString('utf8', 0, end);
      carry = buf.toString('utf8', end + 1, n);
      let start = 0;
      for (;;) {
        const nl = text.indexOf('\n', start);
        if (nl < 0) {
          take(text.slice(start));
          break;
        }
        take(text.slice(start, nl));
        start = nl + 1;
      }
    }
    if (carry !== '') take(carry);
    if (batch.length > 0) onBatch(batch, bytes);
  } finally {
    closeSync(fd);
  }
}

/** A labelled row, or why the line is not one. */
export function labelledRow(line: string): EvalRow | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    return `not JSON (${(e as Error).message})`;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'not a JSON object';
  const o = v as { request?: unknown; truth?: { lat?: unknown; lon?: unknown }; scenario?: unknown };
  if (typeof o.request !== 'object' || o.request === null) return 'no "request" object';
  const t = o.truth;
  if (typeof t !== 'object' || t === null) return 'no "truth" object';
  const { lat, lon } = t;
  if (typeof lat !== 'number' || typeof lon !== 'number' || Math.abs(lat) > 90 || Math.abs(lon) > 180)
    return '"truth" needs numeric lat (-90..90) and lon (-180..180)';
  if (o.scenario !== undefined && typeof o.scenario !== 'string') return '"scenario" must be a string';
  return { request: o.request, truth: { lat, lon }, scenario: o.scenario ?? 'labelled' };
}

/** One observation file read by the core. */
export type ObservationFile = NativeObservationColumns & { path: string };

/** Reads GPS-tagged observation files with the core's readers (formats of `whereabouts learn`). */
export async function readObservationFiles(
  files: readonly string[],
  net: { mcc?: number; mnc?: number },
): Promise<ObservationFile[]> {
  const read = native().readObservationFiles;
  if (!read)
    throw new Error('this build of the native addon cannot read observations; run `npm run build:native`');
  const out = await read([...files], net);
  return out.map((c, i) => ({ ...c, path: files[i] as string }));
}

/**
 * Observations taken at one moment: rows of one file in a run with the same time and the same
 * GPS fix. The request names each station once (its strongest reading), cells strongest
 * first, so the serving cell is the strongest one heard.
 */
export interface ObservationGroup {
  /** Index of the file in the list read. */
  file: number;
  /** Indices of the group's rows in the file's columns. */
  first: number;
  end: number;
  /** Unix seconds; NaN when the rows carry no time. */
  time: number;
  row: EvalRow;
}

/**
 * Groups each file's rows into requests. A row without a time is a group of its own. The
 * scenario of a group is the name of the folder holding its file (Cork's `Driving`, `Static`).
 */
export function groupObservations(files: readonly ObservationFile[]): ObservationGroup[] {
  const groups: ObservationGroup[] = [];
  files.forEach((f, fi) => {
    const scenario = basename(dirname(f.path)) || 'observations';
    const n = f.lat.length;
    let i = 0;
    while (i < n) {
      let j = i + 1;
      const t = f.time[i] as number;
      if (!Number.isNaN(t))
        while (j < n && f.time[j] === t && f.lat[j] === f.lat[i] && f.lon[j] === f.lon[i]) j++;
      groups.push({ file: fi, first: i, end: j, time: t, row: requestOf(f, i, j, scenario) });
      i = j;
    }
  });
  return groups;
}

function requestOf(f: ObservationFile, first: number, end: number, scenario: string): EvalRow {
  const wifiKind = f.kinds.indexOf('wifi');
  const cells = new Map<string, { i: number; signal: number }>();
  const aps = new Map<number, { i: number; signal: number }>();
  for (let i = first; i < end; i++) {
    const signal = Number.isNaN(f.signal[i] as number) ? -200 : (f.signal[i] as number);
    if (f.kind[i] === wifiKind) {
      const id = f.id[i] as number;
      if ((aps.get(id)?.signal ?? -Infinity) < signal) aps.set(id, { i, signal });
    } else {
      const key = `${f.kind[i]}:${f.mcc[i]}:${f.mnc[i]}:${f.lac[i]}:${f.id[i]}`;
      if ((cells.get(key)?.signal ?? -Infinity) < signal) cells.set(key, { i, signal });
    }
  }
  const strongest = (a: { i: number; signal: number }, b: { i: number; signal: number }) =>
    b.signal - a.signal || a.i - b.i;
  const num = (x: number) => (Number.isNaN(x) ? undefined : x);
  const request: Record<string, unknown> = {};
  if (cells.size > 0)
    request.cells = [...cells.values()]
      .sort(strongest)
      .slice(0, MAX_CELLS)
      .map(({ i }) => ({
        radio: f.kinds[f.kind[i] as number],
        mcc: f.mcc[i],
        mnc: f.mnc[i],
        lac: f.lac[i],
        cid: f.id[i],
        signal: num(f.signal[i] as number),
        ta: num(f.ta[i] as number),
      }));
  if (aps.size > 0)
    request.wifi = [...aps.values()]
      .sort(strongest)
      .slice(0, MAX_WIFI)
      .map(({ i }) => ({ bssid: formatBssid(f.id[i] as number), signal: num(f.signal[i] as number) }));
  return { request, truth: { lat: f.lat[first] as number, lon: f.lon[first] as number }, scenario };
}
