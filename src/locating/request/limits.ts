/**
 * The shape limits of a request body's JSON text, checked before `JSON.parse`: how deep arrays
 * and objects nest and how many elements they hold. Parsing a 512 KB body of nested arrays
 * builds hundreds of thousands of objects (tens of milliseconds of a worker, and garbage);
 * a body over these limits is `Invalid request` after one pass over its characters.
 */

/** Deepest nesting of arrays and objects: the spec's deepest is 3 (body, `gps`, a fix). */
export const MAX_JSON_DEPTH = 10;

/**
 * Most elements, counted as arrays and objects opened plus commas (one per member after the
 * first): 1000 GPS fixes of 9 fields count about 10 000, so the largest valid request fits
 * several times over, while 500 KB of `[],` would count 340 000.
 */
export const MAX_JSON_ELEMENTS = 50_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/**
 * Whether `text`, read as JSON, stays within {@link MAX_JSON_DEPTH} and {@link MAX_JSON_ELEMENTS}.
 * Counts brackets and commas outside strings; it does not validate (JSON.parse does, after).
 */
export function jsonWithinLimits(
  text: string,
  maxDepth = MAX_JSON_DEPTH,
  maxElements = MAX_JSON_ELEMENTS,
): boolean {
  let depth = 0;
  let elements = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string, escapes included.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth || ++elements > maxElements) return false;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    } else if (c === COMMA) {
      if (++elements > maxElements) return false;
    }
  }
  return true;
}
