/**
 * Readers of JSON values shared by the request rules (numbers, choices, strings, arrays,
 * ranges), and the rejection that carries a spec 7.1 message.
 */
import { GeoMessage, type GeoMessageText } from '../../errors.js';

/** A row value as an optional field: NaN marks an absent one. */
export function present(n: number): number | undefined {
  return Number.isNaN(n) ? undefined : n;
}

export interface Range {
  readonly min: number;
  readonly max: number;
}

export const r = (min: number, max: number): Range => ({ min, max });

/** Carries a spec message out of nested validation to {@link parseRequest}. */
export class Rejection extends Error {}

// One instance per message, made once: invalid requests are common under load, and
// constructing an Error captures a stack trace each time.
export const REJECTIONS = new Map<string, Rejection>(
  Object.values(GeoMessage).map((m) => [m, new Rejection(m)]),
);

export function reject(message: GeoMessageText): never {
  throw REJECTIONS.get(message) ?? new Rejection(message);
}

export type Obj = Record<string, unknown>;

/**
 * The fields of a request, cell or access point object, or `Invalid request` when the value
 * is not an object: the object itself when it is a plain object (what JSON.parse and object
 * literals make), else a null-prototype copy of its own enumerable properties, so that
 * nothing a class or `Object.create` prototype supplies is seen. (A globally polluted
 * `Object.prototype` is outside what validation can defend.) One function for the test and
 * the prototype check: it runs for every cell and access point.
 */
export function fieldsOf(v: unknown): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) reject(GeoMessage.invalidRequest);
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null ? (v as Obj) : ownCopy(v as Obj);
}

export function ownCopy(o: Obj): Obj {
  return Object.assign(Object.create(null) as Obj, o);
}

export function inRange(n: number, range: Range): boolean {
  return n >= range.min && n <= range.max;
}

export const INT_TEXT = /^-?\d{1,16}$/;
export const NUM_TEXT = /^-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/**
 * Reads an integer field: undefined when absent (missing, null or ""), NaN when present but
 * not an integer. Quoted integers are accepted: leading zeros are only invalid unquoted.
 */
export function readInt(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  let n: number;
  if (typeof v === 'number') {
    n = v;
  } else if (typeof v === 'string') {
    const t = v.trim();
    if (t === '') return undefined;
    if (!INT_TEXT.test(t)) return Number.NaN;
    n = Number(t);
  } else {
    return Number.NaN;
  }
  // `+ 0` turns -0 into 0 so that "-0" and 0 are the same key.
  return Number.isSafeInteger(n) ? n + 0 : Number.NaN;
}

/** Reads a real-valued field like {@link readInt}, accepting decimals and quoted decimals. */
export function readNumber(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  let n: number;
  if (typeof v === 'number') {
    n = v;
  } else if (typeof v === 'string') {
    const t = v.trim();
    if (t === '') return undefined;
    if (t.length > 64 || !NUM_TEXT.test(t)) return Number.NaN;
    n = Number(t);
  } else {
    return Number.NaN;
  }
  return Number.isFinite(n) ? n + 0 : Number.NaN;
}

/** An optional integer measurement: kept when it is an integer inside `range`, else dropped. */
export function optionalInt(v: unknown, range: Range | undefined): number | undefined {
  if (range === undefined) return undefined;
  const n = readInt(v);
  return n !== undefined && inRange(n, range) ? n : undefined;
}

/** An optional signal-like measurement: decimals are rounded (they are readings, not ids). */
export function optionalMeasure(v: unknown, range: Range | undefined): number | undefined {
  if (range === undefined) return undefined;
  const n = readNumber(v);
  if (n === undefined || Number.isNaN(n)) return undefined;
  const rounded = Math.round(n) + 0;
  return inRange(rounded, range) ? rounded : undefined;
}

/**
 * Reads a small enumerated integer such as `bt` (0..max). Booleans are accepted where the
 * field is a 0/1 switch, because JSON encoders of many languages turn flags into true/false.
 */
export function readChoice<T extends number>(v: unknown, max: T, fallback: T): T {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'boolean' && max === 1) return (v ? 1 : 0) as T;
  const n = readInt(v);
  if (n === undefined) return fallback;
  if (Number.isNaN(n) || n < 0 || n > max) reject(GeoMessage.invalidRequest);
  return n as T;
}

/** Reads an optional string; empty or blank means absent, a non-string is a malformed request. */
export function readString(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') reject(GeoMessage.invalidRequest);
  const t = v.trim();
  return t === '' ? undefined : t;
}

/** Reads an optional array; a non-array is a malformed request, an empty array means absent. */
export function readArray(v: unknown, max: number): readonly unknown[] {
  if (v === undefined || v === null) return NONE;
  if (!Array.isArray(v) || v.length > max) reject(GeoMessage.invalidRequest);
  return v;
}

export const NONE: readonly unknown[] = [];
