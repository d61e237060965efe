/**
 * The timezone object of spec 2.10 for a zone name the core found: tzdb data from the
 * runtime.
 *
 * - `offset_sec`: the zone's UTC offset now, DST included, from ICU (`Intl`).
 * - `now_in_dst`: 1 when that offset is above the year's standard offset (the smaller of
 *   the offsets on 1 January and 1 July: this works on both hemispheres).
 * - `short_name`: tzdb's own abbreviation. The system's tzdb files (`/usr/share/zoneinfo`, or
 *   `$TZDIR`) end with the zone's current rule as a POSIX TZ string (`CET-1CEST,...`,
 *   `<-03>3`), which names the standard and daylight abbreviations; we pick the one whose
 *   offset is the current one. Without those files (Windows, slim containers) ICU's short
 *   name serves when it is letters (PST, PDT, HST) and otherwise the numeric form tzdb uses
 *   for zones without letters (`+03`, `-03`, `+0530`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLatLon } from './coordinates.js';

/** Spec 2.10. */
export interface TimezoneObject {
  name: string;
  short_name: string;
  offset_sec: number;
  now_in_dst: 0 | 1;
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The UTC offset of `zone` at `at`, in seconds, from ICU's `longOffset` name (`GMT+05:30`). */
export function offsetSeconds(zone: string, at: Date): number {
  let f = offsetFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    offsetFormats.set(zone, f);
  }
  const name = f.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /^GMT([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(name);
  if (!m) return 0;
  const s = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
  return m[1] === '-' ? -s : s;
}

/** tzdb's numeric abbreviation for an offset: `+03`, `-03`, `+0530`. */
export function numericAbbreviation(offsetSec: number): string {
  const sign = offsetSec < 0 ? '-' : '+';
  const a = Math.abs(offsetSec);
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  return `${sign}${String(h).padStart(2, '0')}${m ? String(m).padStart(2, '0') : ''}`;
}

/** Standard and daylight abbreviations with their offsets, from a POSIX TZ string. */
interface PosixRule {
  std: { name: string; offset: number };
  dst?: { name: string; offset: number };
}

/** Parses the head of a POSIX TZ string (`CET-1CEST,M3.5.0,...`); the transition rules are not needed. */
export function parsePosixTz(tz: string): PosixRule | undefined {
  let i = 0;
  const name = (): string | undefined => {
    if (tz[i] === '<') {
      const end = tz.indexOf('>', i);
      if (end < 0) return undefined;
      const n = tz.slice(i + 1, end);
      i = end + 1;
      return n;
    }
    const m = /^[A-Za-z]{3,}/.exec(tz.slice(i));
    if (!m) return undefined;
    i += m[0].length;
    return m[0];
  };
  // POSIX offsets are west-positive: "CET-1" is UTC+1.
  const offset = (): number | undefined => {
    const m = /^([+-]?)(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?/.exec(tz.slice(i));
    if (!m) return undefined;
    i += m[0].length;
    const s = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
    return m[1] === '-' ? s : 0 - s;
  };
  const stdName = name();
  const stdOffset = offset();
  if (stdName === undefined || stdOffset === undefined) return undefined;
  const rule: PosixRule = { std: { name: stdName, offset: stdOffset } };
  if (i < tz.length && tz[i] !== ',') {
    const dstName = name();
    if (dstName !== undefined) {
      const save = i < tz.length && tz[i] !== ',' ? offset() : undefined;
      rule.dst = { name: dstName, offset: save ?? stdOffset + 3600 };
    }
  }
  return rule;
}

const rules = new Map<string, PosixRule | null>();

/** The zone's current rule from the system tzdb (TZif version 2+ footer), cached; null when unreadable. */
function systemRule(zone: string): PosixRule | null {
  let r = rules.get(zone);
  if (r !== undefined) return r;
  r = null;
  // zone names come from our own data, but never let one climb out of the directory
  if (/^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+)*$/.test(zone)) {
    try {
      const bytes = readFileSync(join(process.env.TZDIR ?? '/usr/share/zoneinfo', zone));
      const text = bytes.toString('latin1');
      if (text.startsWith('TZif') && text.endsWith('\n')) {
        const start = text.lastIndexOf('\n', text.length - 2);
        r = parsePosixTz(text.slice(start + 1, -1)) ?? null;
      }
    } catch {
      r = null;
    }
  }
  rules.set(zone, r);
  return r;
}

const shortFormats = new Map<string, Intl.DateTimeFormat>();

function shortName(zone: string, at: Date, offset: number): string {
  const rule = systemRule(zone);
  if (rule) {
    if (rule.dst && rule.dst.offset === offset) return rule.dst.name;
    if (rule.std.offset === offset) return rule.std.name;
  }
  let f = shortFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'short' });
    shortFormats.set(zone, f);
  }
  const icu = f.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? '';
  if (/^[A-Z]{2,5}$/.test(icu) && icu !== 'GMT') return icu;
  if (icu === 'GMT' && offset === 0) return 'GMT';
  return numericAbbreviation(offset);
}

/**
 * The longest span that one probe at its end checks for a change: shorter than every period
 * between two changes of UTC offset or abbreviation in tzdb (the shortest lasted 96 hours:
 * Africa/Freetown, September 1939; since 1970 none lasted less than 166 hours). So an
 * answer that is the same at both ends of such a span is the same all across it, and where
 * it differs there was exactly one change in between, which a binary search finds.
 */
const PROBE_MS = 86_400_000;
/** The last moment a `Date` can hold. */
const MAX_TIME = 8.64e15;

/**
 * A zone's answer and the moments it holds for, [from, until) in ms since the epoch: from the
 * moment it was computed for to the zone's next change of offset or abbreviation, at most to
 * the end of that UTC year (`now_in_dst` compares with the year's standard offset) and at most
 * `PROBE_MS` long.
 */
interface ZoneWindow {
  from: number;
  until: number;
  short_name: string;
  offset_sec: number;
  now_in_dst: 0 | 1;
  /** The UTC year of `from` and its standard offset, kept for the next window in that year. */
  year: number;
  standard: number;
}

/**
 * One window per zone, the last computed: a zone's tzdb shaping costs a few ICU calls (several
 * microseconds), and between transitions its answer does not change.
 */
const windows = new Map<string, ZoneWindow>();

/**
 * The spec 2.10 object for an IANA zone name at `at` (default now, read with `Date.now()`).
 * The zone's answer is computed once per window between its transitions (see `ZoneWindow`)
 * and served to any moment inside it; a moment outside, earlier or later, gets a new window.
 *
 * @example
 * ```ts
 * import { describeZone } from 'whereabouts/geocoding';
 * console.log(describeZone('Europe/Berlin', new Date('2026-07-01T12:00:00Z'))); // prints: { name: 'Europe/Berlin', short_name: 'CEST', offset_sec: 7200, now_in_dst: 1 }
 * ```
 */
export function describeZone(name: string, at?: Date): TimezoneObject {
  const ms = at === undefined ? Date.now() : at.getTime();
  let w = windows.get(name);
  // false for NaN (an invalid Date) too, which the computation refuses as ICU does
  if (w === undefined || !(ms >= w.from && ms < w.until)) {
    w = zoneWindow(name, ms, w);
    windows.set(name, w);
  }
  return { name, short_name: w.short_name, offset_sec: w.offset_sec, now_in_dst: w.now_in_dst };
}

/** A window that holds no moment: the start of every zone's slot in `ZoneAnswers`. */
const NO_WINDOW: ZoneWindow = {
  from: 0,
  until: 0,
  short_name: '',
  offset_sec: 0,
  now_in_dst: 0,
  year: Number.NaN,
  standard: 0,
};

/**
 * Answers for the zones of one list of names (an engine's `timezoneNames()`), by index: the
 * same windows as {@link describeZone} keeps, in an array the zone lookup's index reads
 * directly instead of a Map keyed by the name.
 */
export class ZoneAnswers {
  readonly #names: readonly string[];
  readonly #windows: ZoneWindow[];

  constructor(names: readonly string[]) {
    this.#names = names;
    this.#windows = names.map(() => NO_WINDOW);
  }

  /** The answer for the zone at `index` at `at` (default now); undefined for an index out of the list. */
  describe(index: number, at?: Date): TimezoneObject | undefined {
    let w = this.#windows[index];
    if (w === undefined) return undefined;
    const name = this.#names[index] as string;
    const ms = at === undefined ? Date.now() : at.getTime();
    if (!(ms >= w.from && ms < w.until)) {
      w = zoneWindow(name, ms, w);
      this.#windows[index] = w;
    }
    return { name, short_name: w.short_name, offset_sec: w.offset_sec, now_in_dst: w.now_in_dst };
  }
}

/** The answer for `name` at `at` without the cache: what every cached answer must equal. */
export function describeZoneUncached(name: string, at: Date): TimezoneObject {
  const offset = offsetSeconds(name, at);
  const standard = standardOffset(name, at.getUTCFullYear());
  return {
    name,
    short_name: shortName(name, at, offset),
    offset_sec: offset,
    now_in_dst: offset > standard ? 1 : 0,
  };
}

/** The smaller of the offsets on 1 January and 1 July of a UTC year: both hemispheres. */
function standardOffset(name: string, year: number): number {
  return Math.min(offsetSeconds(name, utcDate(year, 0)), offsetSeconds(name, utcDate(year, 6)));
}

/** The first moment of a month of a UTC year; `Date.UTC` would read years 0-99 as 1900-1999. */
function utcDate(year: number, month: number): Date {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 1);
  return d;
}

/** Whether the zone has `offset` and `short` at `ms`. */
function sameAt(name: string, ms: number, offset: number, short: string): boolean {
  const at = new Date(ms);
  const o = offsetSeconds(name, at);
  return o === offset && shortName(name, at, o) === short;
}

/** The window of `name` that holds `ms`, from `ms` to the next change; `last` lends its year's standard offset. */
function zoneWindow(name: string, ms: number, last: ZoneWindow | undefined): ZoneWindow {
  const at = new Date(ms);
  const offset = offsetSeconds(name, at);
  const short = shortName(name, at, offset);
  const year = at.getUTCFullYear();
  const standard = last?.year === year ? last.standard : standardOffset(name, year);
  let end = Math.min(ms + PROBE_MS, MAX_TIME);
  const yearEnd = utcDate(year + 1, 0).getTime();
  if (yearEnd < end) end = yearEnd;
  let until = end;
  if (!sameAt(name, end, offset, short)) {
    // one change in (ms, end]: the first moment with the new answer, to the millisecond
    let lo = ms;
    let hi = end;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (sameAt(name, mid, offset, short)) lo = mid;
      else hi = mid;
    }
    until = hi;
  }
  return {
    from: ms,
    until,
    short_name: short,
    offset_sec: offset,
    now_in_dst: offset > standard ? 1 : 0,
    year,
    standard,
  };
}

/** Input of `engine.timezone`: numbers or decimal strings. */
export interface TimezoneQuery {
  lat: number | string;
  lon: number | string;
  /** The moment for `offset_sec`, `short_name` and `now_in_dst`; default now. */
  at?: Date;
}

/** The `/timezone` body without `balance`. */
export type TimezoneResponse =
  | { status: 'ok'; timezone: TimezoneObject }
  | { status: 'error'; message: string };

/**
 * Validates the query, asks `zones` (the core's cell tree) for the zone's index in the names
 * of `answers` and describes it.
 */
export function answerTimezone(
  query: TimezoneQuery,
  zones: { indexAt(lat: number, lon: number): number },
  answers: ZoneAnswers,
): TimezoneResponse {
  let lat = query?.lat;
  let lon = query?.lon;
  // numbers in range need no parsing (and no object for them); NaN fails the test
  if (
    !(
      typeof lat === 'number' &&
      typeof lon === 'number' &&
      lat >= -90 &&
      lat <= 90 &&
      lon >= -180 &&
      lon <= 180
    )
  ) {
    const p = parseLatLon(lat, lon);
    if (!p) return { status: 'error', message: 'INVALID_REQUEST' };
    lat = p.lat;
    lon = p.lon;
  }
  // one call site: the optimizer inlines the cell tree's walk once
  const index = zones.indexAt(lat as number, lon as number);
  const timezone = answers.describe(index, query.at);
  if (timezone === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
  return { status: 'ok', timezone };
}
