/**
 * Validation of the `lat`/`lon` inputs shared by `/reverse` and `/timezone`: numbers, or
 * decimal strings as they arrive in a query string.
 */

/** A decimal number as query strings write it: optional sign, digits, optional fraction. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/** A coordinate value from a number or a decimal string; undefined when it is neither. */
export function numberOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') {
    const t = value.trim();
    return DECIMAL.test(t) ? Number(t) : undefined;
  }
  return undefined;
}

/**
 * Latitude -90..90 and longitude -180..180, or undefined (the caller answers
 * `INVALID_REQUEST`). A longitude outside the range is refused rather than wrapped: a client
 * that sends 190 has swapped or mangled something, and a silent answer would hide it.
 */
export function parseLatLon(lat: unknown, lon: unknown): { lat: number; lon: number } | undefined {
  const la = numberOf(lat);
  const lo = numberOf(lon);
  if (la === undefined || lo === undefined) return undefined;
  if (la < -90 || la > 90 || lo < -180 || lo > 180) return undefined;
  return { lat: la, lon: lo };
}
